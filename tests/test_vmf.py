"""vmf chapter: A_d(kappa) = I_{d/2}(kappa) / I_{d/2-1}(kappa) (mean_cosine) against 30-digit references, and the
truncated B-exp control. References: mpmath's Bessel functions where their series converges quickly, otherwise the
definition itself, E[w] under the density exp(kappa w) (1 - w^2)^((d-3)/2) on [-1, 1], by mpmath quadrature."""
import math

import numpy as np
import pytest

from icml25nb.bandits import vmf as M

mpmath = pytest.importorskip("mpmath")
DS = (2, 3, 10, 100, 1024, 10**5)
KAPPAS = (1e-8, 1e-3, 0.1, 1.0, 10.0, 100.0, 1e4, 1e6)


def _quad_ref(d: int, kappa: float):
    "E[w] by quadrature of the cosine density, split around its mode (d > 3) or the end w = 1 (d <= 3)."
    m, k = mpmath.mpf(d - 3) / 2, mpmath.mpf(kappa)
    if d > 3:
        ws = k / (m + mpmath.sqrt(m * m + k * k))  # the mode: kappa (1 - w^2) = 2 m w
        s = 1 / mpmath.sqrt(2 * m * (1 + ws * ws) / (1 - ws * ws) ** 2)
        logf = lambda w: k * (w - ws) + m * (mpmath.log1p(-w * w) - mpmath.log1p(-ws * ws))
    else:
        ws, s = mpmath.mpf(1), 1 / (k + 1)
        logf = lambda w: k * (w - 1) + m * mpmath.log1p(-w * w)
    pts = sorted({mpmath.mpf(-1), mpmath.mpf(1)} | {p for p in (ws + j * s for j in (-40, -10, -3, 0, 3, 10, 40))
                                                    if -1 < p < 1})
    f = lambda w: mpmath.exp(logf(w))
    return mpmath.quad(lambda w: w * f(w), pts) / mpmath.quad(f, pts)


def _reference(d: int, kappa: float):
    with mpmath.workdps(30):
        nu, x = mpmath.mpf(d) / 2, mpmath.mpf(kappa)
        try:
            return mpmath.besseli(nu, x, maxterms=5_000) / mpmath.besseli(nu - 1, x, maxterms=5_000)
        except mpmath.libmp.NoConvergence:  # d = 10^5, kappa = 10^6: the series needs ~kappa/2 terms
            return _quad_ref(d, kappa)


@pytest.mark.parametrize("d", DS)
def test_mean_cosine_is_exact_on_the_grid(d):
    for kappa in KAPPAS:
        got, want = M.mean_cosine(d, kappa), _reference(d, kappa)
        assert math.isfinite(got), (d, kappa)
        assert abs(got / float(want) - 1) < 1e-6 * 1e-6, (d, kappa, got, float(want))  # 1e-12 relative


def test_the_defect_case_and_the_two_references_agree():
    assert M.mean_cosine(1024, 10.0) == pytest.approx(0.00976470, rel=1e-6)
    for d, kappa in [(10, 1.0), (1024, 100.0)]:  # the quadrature reference against the Bessel one
        with mpmath.workdps(30):
            b = mpmath.besseli(mpmath.mpf(d) / 2, kappa) / mpmath.besseli(mpmath.mpf(d) / 2 - 1, kappa)
            assert abs(_quad_ref(d, kappa) / b - 1) < 1e-20


@pytest.mark.parametrize("d", [2, 7, 64])
def test_mean_cosine_is_monotone_and_bounded(d):
    ks = np.logspace(-6, 7, 60)
    a = np.array([M.mean_cosine(d, k) for k in ks])
    assert (a > 0).all() and (a < 1).all() and (np.diff(a) > 0).all()


@pytest.mark.parametrize("d, kappa", [(1, 1.0), (2.5, 1.0), (True, 1.0), (3, 0.0), (3, -1.0), (3, math.inf),
                                      (3, math.nan)])
def test_mean_cosine_rejects_bad_input(d, kappa):
    with pytest.raises(ValueError):
        M.mean_cosine(d, kappa)


def test_truncated_boltzmann_is_the_tail_cut_softmax():
    A = M.uniform_catalogue(300, 4, seed=3)
    V = A[7]
    p, q = M.boltzmann_probs(V, A, 5.0), M.truncated_boltzmann_probs(V, A, 5.0, 20)
    top = np.argsort(-(A @ V))[:20]
    np.testing.assert_allclose(q[top], p[top] / p[top].sum(), rtol=1e-13)
    assert q.sum() == pytest.approx(1.0) and np.count_nonzero(q) == 20
    # the truncation is what the chapter's control measures: its similarity profile is far from full B-exp's
    assert M.similarity_binned_tv(A @ V, p, q) > 0.3


def test_boltzmann_sample_is_the_softmax_by_inverse_cdf():
    A = M.uniform_catalogue(50, 3, seed=4)
    V = A[0]
    p = M.boltzmann_probs(V, A, 3.0)
    draws = M.boltzmann_sample(V, A, 3.0, 200_000, seed=5)
    assert draws.min() >= 0 and draws.max() < 50
    freq = np.bincount(draws, minlength=50) / len(draws)
    # every action's frequency within 5 binomial standard errors of its probability
    assert (np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / len(draws)) + 1e-12).all()
    # the extreme case: one action holding almost all the mass is drawn, the others (almost) never
    A2 = np.array([[1.0, 0, 0], [-1.0, 0, 0], [0, -1.0, 0]])
    assert (M.boltzmann_sample(A2[0], A2, 200.0, 1000, seed=1) == 0).all()
    with pytest.raises(ValueError):
        M.boltzmann_sample(V, A, 3.0, -1)


def test_nucleus_k_is_the_smallest_top_set_holding_the_mass():
    A = M.uniform_catalogue(2_000, 3, seed=6)
    V = A[3]
    ps = np.sort(M.boltzmann_probs(V, A, 5.0))[::-1]
    for mass in (0.5, 0.9, 0.95):
        k = M.nucleus_k(V, A, 5.0, mass)
        assert ps[:k].sum() >= mass > ps[:k - 1].sum()
        # top-p truncation's similarity TV to B-exp is at most the mass it drops
        tv = M.similarity_binned_tv(A @ V, M.boltzmann_probs(V, A, 5.0), M.truncated_boltzmann_probs(V, A, 5.0, k))
        assert tv <= 1 - ps[:k].sum() + 1e-12
    assert M.nucleus_k(V, A, 5.0, 1.0) == len(A)
    with pytest.raises(ValueError):
        M.nucleus_k(V, A, 5.0, 0.0)


def test_truncated_sampler_draws_only_from_the_k_nearest():
    A = M.uniform_catalogue(1_000, 8, seed=7)
    V = A[11]
    idx = M.build_index(A)
    draws = M.truncated_boltzmann_sample(V, idx, 5.0, 30, 20_000, seed=2)
    top = set(np.argsort(-(A @ V))[:30].tolist())
    assert set(draws.tolist()) <= top and len(set(draws.tolist())) > 20
    q = M.truncated_boltzmann_probs(V, A, 5.0, 30)
    assert 0.5 * np.abs(np.bincount(draws, minlength=len(A)) / len(draws) - q).sum() < 0.05
    with pytest.raises(ValueError):
        idx.topk(V, 0)


def test_clustered_catalogue_is_clustered_and_fixed_by_seed():
    A = M.clustered_catalogue(4_000, 8, clusters=16, kappa_c=30.0, seed=3)
    B = M.clustered_catalogue(500, 8, clusters=16, kappa_c=30.0, seed=3)
    np.testing.assert_allclose(np.linalg.norm(A, axis=1), 1.0, atol=1e-12)
    U = M.uniform_catalogue(4_000, 8, seed=3)
    # clustered: an item's nearest neighbour is much closer than in a uniform catalogue of the same size
    nn = lambda X: np.sort(X @ X.T, axis=1)[:, -2].mean()
    assert nn(A) > nn(U) + 0.02  # measured 0.966 against 0.926
    # 16 directions explain the catalogue: the mean |cos| to the nearest of 16 items of B is far above uniform's
    near = lambda X, Y: np.abs(X @ Y[:16].T).max(axis=1).mean()
    assert near(A, B) > near(U, M.uniform_catalogue(500, 8, seed=4)) + 0.05  # 0.78 against 0.68
    # the cluster centres depend on the seed only: the catalogue of 500 lies on the clusters of the one of 4,000
    assert (B @ A.T).max(axis=1).mean() > (M.uniform_catalogue(500, 8, seed=5) @ A.T).max(axis=1).mean() + 0.05


def test_speed_study_reports_cpu_and_wall_minima():
    out = M.speed_study([2_000], 3, 5.0, rounds=2, seed=0)["rows"][0]
    for k in ("bexp", "vmf", "vmf_scan", "bexp_wall", "vmf_wall", "vmf_scan_wall", "build"):
        assert out[k] > 0 and math.isfinite(out[k]), k


def test_boltzmann_sampler_checks_once_and_draws_the_same():
    A = M.uniform_catalogue(200, 4, seed=8)
    V = A[5]
    s = M.BoltzmannSampler(A, 2.0)
    np.testing.assert_array_equal(s.sample(V, 500, seed=3), M.boltzmann_sample(V, A, 2.0, 500, seed=3))
    with pytest.raises(ValueError):
        M.BoltzmannSampler(A * 2, 2.0)
    with pytest.raises(ValueError):
        s.sample(V[:3] / np.linalg.norm(V[:3]), 1)


def test_subsample_boltzmann_draws_match_its_marginal_and_approach_bexp_with_k():
    A = M.uniform_catalogue(300, 3, seed=1)
    V = A[0]
    p = M.subsample_boltzmann_probs(V, A, 5.0, 10, 200_000, seed=2)
    draws = M.subsample_boltzmann_sample(V, A, 5.0, 10, 200_000, seed=3)
    f = np.bincount(draws, minlength=300) / len(draws)
    assert 0.5 * np.abs(f - p).sum() < 0.03  # the sampler draws from the marginal the estimator computes
    b = M.boltzmann_probs(V, A, 5.0)
    tv = lambda k: 0.5 * np.abs(M.subsample_boltzmann_probs(V, A, 5.0, k, 50_000, seed=4) - b).sum()
    assert tv(300) < tv(30) < tv(3)  # more random candidates, closer to B-exp
    with pytest.raises(ValueError):
        M.subsample_boltzmann_probs(V, A, 5.0, 0, 10)


def test_g_quantile_edges_split_g_into_equal_masses():
    e = M.g_quantile_edges(3, 20.0, 20)
    assert e[0] == -1 and e[-1] == 1 and (np.diff(e) > 0).all()
    x = M.sample_vmf(np.array([0.0, 0.0, 1.0]), 20.0, 200_000, seed=9)[:, 2]
    share = np.bincount(np.clip(np.searchsorted(e, x, side="right") - 1, 0, 19), minlength=20) / len(x)
    assert np.abs(share - 0.05).max() < 0.004  # 0.05 each, 0.0005 standard error


def test_speed_study_restores_the_numba_thread_count():
    import numba
    before = numba.get_num_threads()
    M.speed_study([1_000], 3, 5.0, rounds=1, seed=0)
    assert numba.get_num_threads() == before
