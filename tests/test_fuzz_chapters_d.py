"""Reliability of chapter entry points, third round (issue 49, the outside re-probe's items 10, 15, 17-18, 21-22, 25-26,
28, 35, 38-41, 44, 46 and huge integers that reached `float()`): each input either gives the right answer or is
refused with one line naming the argument; valid inputs keep their answers. Before the fixes every `assert_refused`
here saw a RuntimeError, OverflowError, LinAlgError, a NaN, a hang or an unclear message, and every value test a
wrong answer (noted per test)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from fuzzutil import assert_refused, outcome

HUGE_INT = 10**400


# ---------------------------------------------------------------- bandits.vmf
from icml25nb.bandits import vmf as VM


def test_mean_cosine_huge_kappa_and_d():
    "Before: mean_cosine(3, 1e308) RuntimeError (Perron's fraction overflowed), (2, 1e303) gave 1.0000000000000002."
    for d in (2, 3, 1000, 10**6, 2**53):
        for k in (1e200, 1e303, 1e307, 1e308, 1.7e308):
            assert VM.mean_cosine(d, k) == 1.0
    assert VM.mean_cosine(2**53, 1e6) == pytest.approx(1e6 / 2**53, rel=1e-6)  # A_d ~ kappa / d for d >> kappa
    assert_refused(VM.mean_cosine, HUGE_INT, 1.0, name="d")
    assert_refused(VM.mean_cosine, 3, 1.0, max_terms=HUGE_INT, name="max_terms")


@settings(max_examples=25)
@given(st.integers(2, 200), st.floats(1e-3, 1e6))
def test_mean_cosine_unchanged_on_ordinary_input(d, kappa):
    "The rescaled fraction is used only past 1e250: ordinary inputs keep the registered arithmetic (A_d in (0, 1))."
    a = VM.mean_cosine(d, kappa)
    assert 0 < a < 1


def test_cosine_density_end_points_are_the_limits():
    "Before: cosine_density([1, -1], 3, 1) gave [0, 0] (the true density is exp(kappa (w - 1)) / Z: 1.157, 0.157)."
    a = np.array([1.0, -1.0])
    got = VM.cosine_density(a, 3, 1.0)
    true = np.exp(a) / (2 * math.sinh(1.0))
    assert np.allclose(got, true, rtol=1e-3)  # the grid drops its end panels: Z is 1e-4 short
    inside = np.array([1 - 1e-9, -1 + 1e-9])
    assert np.allclose(VM.cosine_density(inside, 3, 1.0), got, rtol=1e-6)  # continuous at the ends
    assert np.isinf(VM.cosine_density(a, 2, 1.0)).all()  # d = 2: (1 - w^2)^(-1/2) diverges at the ends
    assert (VM.cosine_density(a, 5, 1.0) == 0).all()  # d > 3: the density vanishes there


@settings(max_examples=25)
@given(hnp.arrays(np.float64, st.integers(1, 20), elements=st.floats(-0.999999, 0.999999)), st.integers(2, 12),
       st.floats(0.01, 100.0))
def test_cosine_density_inside_unchanged(a, d, kappa):
    "Inside (-1, 1) the density is the registered one (the private open form the chapter's studies use)."
    assert np.array_equal(VM.cosine_density(a, d, kappa), VM._cosine_density(a, d, kappa, False))


def test_cosine_density_and_quantile_edges_refuse_a_law_the_grid_cannot_resolve():
    "Before: g_quantile_edges(3, 1e308, 5) -> [-1, nan, nan, nan, nan, 1]; cosine_density(., 3, 1e7) NaN."
    for k in (1e3, 1e7, 1e308):
        assert_refused(VM.g_quantile_edges, 3, k, 5, name="kappa")
        assert_refused(VM.cosine_density, [0.5], 3, k, name="kappa")
    assert_refused(VM.cosine_density, [0.5], 10**9, 1.0, name="d")
    assert_refused(VM.cosine_density, [0.5], HUGE_INT, 1.0, name="d")
    e = VM.g_quantile_edges(3, 100.0, 5)
    assert np.isfinite(e).all() and (np.diff(e) > 0).all()


def test_normalize_rows_huge_and_tiny_rows():
    "Before: [[1e200, 1e200]] -> [[0, 0]] (the squares overflowed); [[3e-170, 4e-170]] 'zero row' (they underflowed)."
    got = VM.normalize_rows(np.array([[1e200, 1e200], [3e-170, 4e-170], [3.0, 4.0], [-1e308, 1e308]]))
    s = 1 / math.sqrt(2)
    assert np.allclose(got, [[s, s], [0.6, 0.8], [0.6, 0.8], [-s, s]], rtol=1e-15)
    assert_refused(VM.normalize_rows, [[0.0, 0.0]], name="X")
    assert_refused(VM.normalize_rows, [[5e-324, 0.0], [0.0, 0.0]], name="X")


@settings(max_examples=25)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=6),
                  elements=st.floats(-1e6, 1e6).filter(lambda v: abs(v) > 1e-3)))
def test_normalize_rows_ordinary_rows_bit_for_bit(X):
    "Rows of ordinary size take the plain division, as registered."
    assert np.array_equal(VM.normalize_rows(X), X / np.linalg.norm(X, axis=-1, keepdims=True))


# ---------------------------------------------------------------- supervised.pcl
from icml25nb.supervised import pcl as PCL


def test_pcl_rmse_integers_and_float32_range():
    "Before: rmse of int64 tensors RuntimeError (mean() of Long); float32 1e30 errors gave inf and 1e-30 gave 0."
    assert PCL.rmse(torch.tensor([1, 2]), torch.tensor([1, 3])) == pytest.approx(math.sqrt(0.5), rel=1e-15)
    assert PCL.rmse(torch.tensor([1, 2], dtype=torch.int32), torch.tensor([1.0, 3.0])) == pytest.approx(math.sqrt(0.5))
    assert PCL.rmse(torch.full((3,), 1e30), torch.zeros(3)) == pytest.approx(1e30, rel=1e-6)
    assert PCL.rmse(torch.full((3,), 1e-30), torch.zeros(3)) == pytest.approx(1e-30, rel=1e-6)
    assert PCL.rmse(torch.tensor([3e38, -3e38]), torch.tensor([-3e38, 3e38])) == pytest.approx(6e38, rel=1e-6)
    assert PCL.rmse(np.array([2**62, 0]), np.array([0, 0])) == pytest.approx(2**62 / math.sqrt(2))


@settings(max_examples=25)
@given(hnp.arrays(np.float32, st.integers(1, 30), elements=st.floats(-1e3, 1e3, width=32)),
       hnp.arrays(np.float32, st.integers(1, 30), elements=st.floats(-1e3, 1e3, width=32)))
def test_pcl_rmse_float32_unchanged(a, b):
    "Ordinary float32 errors keep the registered float32 arithmetic (bit for bit)."
    n = min(len(a), len(b))
    p, y = torch.from_numpy(a[:n].copy()), torch.from_numpy(b[:n].copy())
    assert PCL.rmse(p, y) == float(((p - y) ** 2).mean().sqrt()) or float(((p - y) ** 2).mean().sqrt()) < 1e-15


def test_pcl_energy_drift_huge_ints_refused():
    "Before: n_sims / steps / n_particles = 10**400 OverflowError in float() of the work check."
    for arg in ("n_sims", "steps", "n_particles"):
        assert_refused(PCL.energy_drift, name=arg, **{arg: HUGE_INT})


# ---------------------------------------------------------------- generative.creativity
from icml25nb.generative import creativity as CR


@pytest.mark.parametrize("arg,value", [("channels", 2**31), ("channels", 2**63 - 1), ("channels", HUGE_INT),
                                       ("emb", 2**31), ("emb", 2**62), ("emb", HUGE_INT), ("n3x3", 2**31),
                                       ("n1x1", 2**31), ("n3x3", 10**6), ("dilation", HUGE_INT)])
def test_conv_denoiser_sizes_refused_up_front(arg, value):
    "Before: channels / emb = 2**31 allocator RuntimeError, 2**63 - 1 'Storage size calculation overflowed'; n3x3 / n1x1 = 2**31 hung."
    assert_refused(CR.ConvDenoiser, name=arg, timeout=10, **{arg: value})


def test_conv_denoiser_ordinary_sizes_still_built():
    m = CR.ConvDenoiser(channels=8, n3x3=4, n1x1=1, emb=8, dilation=2)
    out = m(torch.zeros(2, 8, 8), torch.zeros(2))
    assert out.shape == (2, 8, 8)


# ---------------------------------------------------------------- optim.precond
from icml25nb.optim import precond as PRE


def test_precond_huge_steps_refused():
    "Before: mlp_digits_demo(lr=1e308) and npgd_torch_step(gamma=1e308) RuntimeError from torch's add_ (alpha overflow)."
    assert_refused(PRE.mlp_digits_demo, lr=1e308, steps=2, name="lr")
    assert_refused(PRE.mlp_digits_demo, lr=1e30, lam=1e-300, steps=2, name="lr")
    net = torch.nn.Linear(3, 2)
    net(torch.ones(1, 3)).sum().backward()
    before = [p.detach().clone() for p in net.parameters()]
    assert_refused(PRE.npgd_torch_step, list(net.parameters()), gamma=1e308, lam=1.0, kind="identity", name="gamma")
    assert all(torch.equal(a, b) for a, b in zip(before, net.parameters()))  # refused before any parameter moved
    PRE.npgd_torch_step(list(net.parameters()), gamma=0.1, lam=1.0, kind="hard_clip")  # ordinary steps still run


def test_precond_clip_equivalence_bounded():
    "Before: clip_equivalence(n_cases=2**31) ran for hours."
    for n in (2**31, 10**12, HUGE_INT):
        assert_refused(PRE.clip_equivalence, n_cases=n, name="n_cases", timeout=5)


# ---------------------------------------------------------------- optim.schedulefree, graphs.gale
from icml25nb.graphs import gale as GA
from icml25nb.optim import schedulefree as SF


def test_sf_sgd_overflowing_iterates_refused_naming_lr():
    "Before: sf_sgd(lambda x: x, ones(2), 3, 1e308)['x'] was NaN."
    assert_refused(SF.sf_sgd, lambda x: x, np.ones(2), 3, 1e308, name="lr")
    assert_refused(SF.sf_sgd, lambda x: np.full(2, np.nan), np.ones(2), 3, 0.1, name="grad_fn")
    assert_refused(SF.sf_sgd, lambda x: np.ones(3), np.ones(2), 3, 0.1, name="grad_fn")
    kind, r = outcome(SF.sf_sgd, lambda x: x, np.ones(2), 5, 0.1)
    assert kind == "ok" and np.isfinite(r["x"]).all() and (np.abs(r["x"][-1]) < 1).all()


@pytest.mark.parametrize("fn,sizes,other,name", [
    (GA.time_exponent, [1, 1, 1], [1, 2, 3], "sizes"),
    (GA.time_exponent, [2.5, 2.5], [1, 1], "sizes"),
    (SF.fitted_exponent, [1, 1], [1, 2], "horizons"),
    (SF.fitted_exponent, [7, 7, 7], [1, 2, 3], "horizons"),
])
def test_exponent_fits_refuse_equal_sizes(fn, sizes, other, name, capfd):
    "Before: LinAlgError 'SVD did not converge in Linear Least Squares' and LAPACK's 'DLASCL' line on stderr."
    assert_refused(fn, sizes, other, name=name)
    assert "LAPACK" not in capfd.readouterr().err


def test_exponent_fits_unchanged():
    assert GA.time_exponent([1, 2, 4], [3, 12, 48]) == pytest.approx(2.0)
    assert SF.fitted_exponent([10, 100], [1.0, 0.1]) == pytest.approx(-1.0)


# ---------------------------------------------------------------- optim.grokking, rl.pars, efficient.lowra, safety.versaprm
from icml25nb.efficient import lowra as LO
from icml25nb.optim import grokking as GR
from icml25nb.rl import pars as PA
from icml25nb.safety import versaprm as VP


def test_band_excess_empty_refused_nan_claim_kept():
    "Before: band_excess([]) NaN. A non-positive factor stays NaN: the claim delay_1_over_beta reads it (and fails)."
    assert_refused(GR.band_excess, [], name="factors")
    assert_refused(GR.band_excess, ["a"], name="factors")
    assert_refused(GR.band_excess, [0.5], lo=float("nan"), name="lo")
    assert math.isnan(GR.band_excess([0.5, -1.0]))
    assert GR.band_excess([0.5, 0.6]) == pytest.approx(0.6 / 0.65)


def test_toy_q_overflow_refused():
    "Before: toy_q(array([1e308])) -> [nan] (4 pi a overflowed); toy_q([0.1]) TypeError from torch."
    for a in (np.array([1e308]), np.array([np.inf]), np.array([np.nan]), torch.tensor([1e38]), [1e308]):
        assert_refused(PA.toy_q, a, name="a")
    a = np.array([0.1, -0.3])
    assert np.array_equal(PA.toy_q(a), a + 0.3 * np.sin(4 * np.pi * a))
    assert np.array_equal(PA.toy_q([0.1, -0.3]), PA.toy_q(a))
    t = torch.tensor([0.1, -0.3])
    assert torch.equal(PA.toy_q(t), t + 0.3 * torch.sin(4 * math.pi * t))
    assert np.isfinite(PA.toy_q(np.array([1e307]))).all()


def test_lowra_relative_error_scaled():
    "Before: relative_error(ones * 1e200, zeros) nan (inf / inf); ones * 3e-170 gave 0 / 1e-300 = 0 (true 1)."
    for s in (1e200, 1e300, 1.7e308, 3e-170, 5e-324):
        assert LO.relative_error(np.ones((2, 2)) * s, np.zeros((2, 2))) == pytest.approx(1.0)
    assert LO.relative_error(np.full((2, 2), 1e200), np.full((2, 2), 2e200)) == pytest.approx(1.0)
    assert LO.relative_error(np.full((2, 2), 1e308), np.full((2, 2), -1e308)) == pytest.approx(4.0)
    assert LO.relative_error(np.zeros((2, 2)), np.zeros((2, 2))) == 0.0


@settings(max_examples=25)
@given(hnp.arrays(np.float64, (3, 4), elements=st.floats(-1e3, 1e3)), hnp.arrays(np.float64, (3, 4), elements=st.floats(-1e3, 1e3)))
def test_lowra_relative_error_unchanged(W, What):
    "Ordinary matrices keep the registered arithmetic, bit for bit."
    want = float(((W - What) ** 2).sum() / max((W ** 2).sum(), 1e-300))
    assert LO.relative_error(W, What) == want or (W ** 2).sum() < 1e-200


def test_vote_accuracy_empty_refused():
    "Before: vote_accuracy([], []) 'max() arg is an empty sequence'; vote_accuracy(3, [1]) 'object of type int has no len()'."
    assert_refused(VP.vote_accuracy, [], [], name="answers")
    assert_refused(VP.vote_accuracy, 3, [1], name="answers")
    assert_refused(VP.majority_vote, 5, name="answers")
    assert VP.vote_accuracy(["a", "b", "a"], [1, 0, 1]) == 1


# ---------------------------------------------------------------- huge Python ints that reached float() in chapters
from icml25nb.efficient import pipeline as PIP
from icml25nb.rl import maxent as ME

_HUGE_INT_CASES = [
    (GR.modular_data, {}, "p"), (GR.cs_problem, {}, "n"), (GR.cs_problem, {}, "N"), (GR.mc_problem, {}, "n"),
    (lambda **k: GR.ModMLP(**{"p": 7, **k}), {}, "hidden"), (lambda **k: GR.ModMLP(**{"p": 7, **k}), {}, "d"),
    (GR.ModMLP, {}, "p"),
    (ME.corridor_mdp, {"n_bins": 20}, "horizon"),
    (lambda **k: ME.soft_value_iteration(np.zeros((2, 2), np.int64) - 1, np.zeros((2, 2)), 1.0, **k), {}, "n_iter"),
    (PIP.SkipMLP, {}, "d_in"), (PIP.SkipMLP, {}, "d_out"), (lambda **k: PIP.SkipMLP(widths=(k["widths"],)), {}, "widths"),
    (lambda **k: SF.sample_ball(np.zeros(2), 1.0, rng=np.random.default_rng(0), **k), {}, "n"),
    (lambda **k: PRE._check_steps(k["max_steps"], "max_steps"), {}, "max_steps"),
]


@pytest.mark.parametrize("fn,good,arg", _HUGE_INT_CASES)
def test_huge_ints_refused_naming_the_argument(fn, good, arg):
    "Before: 10**400 gave OverflowError ('int too large to convert to float') in a float() of a size check."
    for v in (HUGE_INT, 2**64):
        assert_refused(fn, name=arg, timeout=10, **{**good, arg: v})
