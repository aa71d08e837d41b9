"""kernels/vmf.py sampler: the distribution itself. The cosine w = <x, mu> against the exact density
f(w) ∝ exp(kappa w) (1 - w^2)^((d-3)/2) on [-1, 1] (one-sample KS, the CDF by quadrature in t = 1 - w, checked
against the closed form at d = 3) and against scipy.stats.vonmises_fisher's draws (two-sample KS); the tangent
direction uniform on the sphere orthogonal to mu and independent of w. Fixed seeds, level 1e-3 per case: the
outcomes are deterministic, and a wrong concentration or a biased direction is caught at these sample sizes."""
import math

import numpy as np
import pytest
from scipy import stats

from icml25nb.kernels import vmf as V

DS = (3, 16, 128, 1024)
KAPPAS = (0.1, 10.0, 1e3, 1e5)
LEVEL = 1e-3


def _unit(d, seed):
    x = np.random.default_rng(seed).standard_normal(d)
    return x / np.linalg.norm(x)


def _n(d):
    return 20_000 if d <= 128 else 4_000


def _cdf_d3(w, kappa):
    "Closed form at d = 3: P(W <= w) = (e^{kappa (w+1)} - 1) / (e^{2 kappa} - 1), written without overflow."
    w = np.asarray(w, dtype=np.float64)
    return np.exp(kappa * (w - 1.0)) * np.expm1(-kappa * (w + 1.0)) / np.expm1(-2.0 * kappa)


def _cdf(d, kappa):
    """CDF of w at d >= 3 by trapezoidal quadrature of the density in t = 1 - w (log-density shifted by its
    maximum, no overflow), on a uniform grid over [0, 2] merged with one over the bulk [0, 60 s],
    s = ((d-1)/2) / kappa (the scale of t at large kappa); returns an interpolating function."""
    m = (d - 3) / 2
    s = (m + 1) / kappa
    t = np.unique(np.concatenate([np.linspace(0.0, 2.0, 200_001), np.linspace(0.0, min(2.0, 60 * s), 200_001)]))
    with np.errstate(divide="ignore"):
        logf = -kappa * t + (m * (np.log(t) + np.log(2.0 - t)) if m > 0 else 0.0)
    f = np.exp(logf - logf.max())
    G = np.concatenate([[0.0], np.cumsum(0.5 * (f[1:] + f[:-1]) * np.diff(t))])
    G /= G[-1]  # P(T <= t)
    return lambda w: 1.0 - np.interp(1.0 - np.asarray(w), t, G)


@pytest.mark.parametrize("kappa", [0.1, 1.0, 10.0, 1e3, 1e5])
def test_the_quadrature_cdf_matches_the_closed_form_at_d3(kappa):
    w = np.concatenate([np.linspace(-1, 1, 2001), 1 - np.logspace(-9, 0, 200)])
    np.testing.assert_allclose(_cdf(3, kappa)(w), _cdf_d3(w, kappa), rtol=0, atol=1e-7)


@pytest.mark.parametrize("d", DS)
def test_the_quadrature_cdf_has_the_exact_mean(d):
    "E[w] = 1 - int F(w) dw from the tabulated CDF, against A_d(kappa) = I_{d/2} / I_{d/2-1} (the chapter's, exact)."
    from icml25nb.bandits.vmf import mean_cosine
    for kappa in KAPPAS:
        F = _cdf(d, kappa)
        bulk = 1 - np.linspace(0, min(2, 60 * (d - 1) / 2 / kappa), 400_001)
        w = np.unique(np.concatenate([np.linspace(-1, 1, 400_001), bulk]))
        mean = 1.0 - np.trapezoid(F(w), w)  # int w dF = [w F] - int F dw
        want = mean_cosine(d, kappa)
        assert mean == pytest.approx(want, abs=1e-6), (d, kappa)


@pytest.mark.parametrize("d", DS)
def test_cosine_matches_the_exact_density(d):
    "One-sample KS of w = <x, mu> against the exact CDF, at every kappa of the grid (extremes included)."
    mu = _unit(d, d)
    for j, kappa in enumerate(KAPPAS):
        w = V.wood_sample(mu, kappa, _n(d), seed=100 + j) @ mu
        p = stats.kstest(w, _cdf(d, kappa)).pvalue
        assert p > LEVEL, (d, kappa, p)


def test_the_exact_density_test_has_power():
    "A 5% error in kappa (or d one off) is rejected at the same sample size and level."
    mu = _unit(16, 0)
    w = V.wood_sample(mu, 10.0, 20_000, seed=5) @ mu
    assert stats.kstest(w, _cdf(16, 10.0)).pvalue > LEVEL
    assert stats.kstest(w, _cdf(16, 10.5)).pvalue < 1e-6
    assert stats.kstest(w, _cdf(17, 10.0)).pvalue < LEVEL


@pytest.mark.parametrize("d,kappa", [(3, 0.1), (3, 10.0), (3, 1e5), (16, 0.1), (16, 1e3), (128, 10.0), (128, 1e5),
                                     (1024, 0.1), (1024, 1e5)])
def test_cosine_matches_scipy(d, kappa):
    "Two-sample KS of w against scipy.stats.vonmises_fisher's draws (fewer at d = 1024: scipy takes 0.5 ms each)."
    mu = _unit(d, d + 1)
    n = _n(d) if d <= 128 else 2_000
    w = V.wood_sample(mu, kappa, n, seed=7) @ mu
    y = stats.vonmises_fisher(mu, kappa).rvs(n, random_state=np.random.default_rng(8)) @ mu
    p = stats.ks_2samp(w, y).pvalue
    assert p > LEVEL, (d, kappa, p)


@pytest.mark.parametrize("d,kappa", [(3, 0.1), (3, 1e5), (16, 10.0), (128, 1e3), (1024, 1e5)])
def test_tangent_direction_is_uniform_and_independent_of_w(d, kappa):
    """v = (x - w mu) / |x - w mu| is a unit vector orthogonal to mu; uniform on that sphere S^{d-2}: its mean is
    near 0 (n (d-1) |mean|^2 ~ chi^2_{d-1}), its covariance (I - mu mu^T) / (d-1), and its projection on a fixed
    unit e orthogonal to mu has (1 + <v, e>) / 2 ~ Beta((d-2)/2, (d-2)/2); the same for w below and above its
    median (independence)."""
    mu = _unit(d, 3)
    n = _n(d)
    x = V.wood_sample(mu, kappa, n, seed=11)
    w = x @ mu
    u = x - w[:, None] * mu[None, :]
    nrm = np.linalg.norm(u, axis=1)
    np.testing.assert_allclose(nrm, np.sqrt(np.maximum(1 - w * w, 0)), rtol=1e-6, atol=1e-12)
    v = u / nrm[:, None]
    assert np.abs(v @ mu).max() < 1e-8
    mean = v.mean(0)
    assert stats.chi2.sf(n * (d - 1) * (mean @ mean), d - 1) > LEVEL, (d, kappa)
    e = _unit(d, 4)
    e = e - (e @ mu) * mu
    e /= np.linalg.norm(e)
    q = 0.5 * (1 + v @ e)
    beta = stats.beta((d - 2) / 2, (d - 2) / 2).cdf
    assert stats.kstest(q, beta).pvalue > LEVEL, (d, kappa)
    lo = w < np.median(w)
    assert stats.kstest(q[lo], beta).pvalue > LEVEL and stats.kstest(q[~lo], beta).pvalue > LEVEL, (d, kappa)
    if d <= 16:  # the covariance: every entry within 5 standard errors
        C = v.T @ v / n
        want = (np.eye(d) - np.outer(mu, mu)) / (d - 1)
        assert np.abs(C - want).max() < 5 * math.sqrt(2.0 / n) / (d - 1) + 5 / n, (d, kappa)


@pytest.mark.parametrize("d,kappa", [(3, 1e5), (3, 10.0), (4, 2.0), (16, 1e3)])
def test_njit_blocks_equal_the_reference(d, kappa):
    """More draws than one block of the d = 3 kernel (1024), a partial last block, several rounds of rejections at
    large kappa; the serial path (< 256 draws) and any prefix give the same draws."""
    mu = _unit(d, 9)
    ref = V.wood_sample_ref(mu, kappa, 2500, seed=3)
    got = V.wood_sample(mu, kappa, 2500, seed=3)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(V.wood_sample(mu, kappa, 1030, seed=3), ref[:1030], rtol=0, atol=1e-10)
    np.testing.assert_allclose(V.wood_sample(mu, kappa, 100, seed=3), ref[:100], rtol=0, atol=1e-10)
    np.testing.assert_allclose(V._wood_libm(mu, kappa, 2500, 3), ref, rtol=0, atol=1e-10)


def test_fast_math_functions_are_within_one_ulp():
    "The vectorised log(1 - u) and sin/cos(2 pi u) against libm (log1p) and long-double references."
    rng = np.random.default_rng(0)
    octants = ((np.arange(8) << 50)[:, None] + np.arange(-300, 300)[None, :]).ravel() % 2**53  # reduction edges
    m = np.concatenate([rng.integers(0, 2**53, 200_000), np.arange(1000), 2**53 - 1 - np.arange(1000), octants])
    lg, cs, sn = V._fast_funcs(m)
    u = m * 2.0 ** -53
    want = np.log1p(-u)
    nz = want != 0
    assert np.all(lg[~nz] == 0)
    assert np.max(np.abs(lg - want)[nz] / np.spacing(np.abs(want[nz]))) <= 1.0
    a = 2 * np.pi * (m.astype(np.longdouble) / np.longdouble(2.0 ** 53))
    assert np.abs(cs - np.cos(a).astype(np.float64)).max() <= 4.5e-16
    assert np.abs(sn - np.sin(a).astype(np.float64)).max() <= 4.5e-16
