"""Reliability (issue 49) of eight chapter modules: gale, schedulefree, maxent, pcl, adaptive_sketch, pars, versaprm,
pipeline. First one test per defect the issue names (each failed before its fix), then a hostile-input sweep over the
public functions of the eight modules: every bad value is refused with a one-line ValueError/TypeError naming the
argument (`fuzzutil.refuses_each`), and the good call returns an answer without NaN; property-based cases
(hypothesis) check that equivalent inputs (float32, non-contiguous, lists) give the same answers."""
from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
import torch
from fuzzutil import BAD_NUMBERS, HUGE_SIZES, assert_refused, non_contiguous, outcome, refuses_each, same, time_limit
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.optimize import minimize

from icml25nb.algorithms import adaptive_sketch as AS
from icml25nb.efficient import pipeline as PL
from icml25nb.graphs import gale as GA
from icml25nb.optim import schedulefree as SF
from icml25nb.rl import maxent as ME
from icml25nb.rl import pars as PA
from icml25nb.safety import versaprm as VP
from icml25nb.supervised import pcl as PC

NAN, INF = float("nan"), float("inf")
#: bad values for a count / size argument, and for a positive real
BAD_INTS = [x for x in BAD_NUMBERS if x is not True] + [1.5, -1] + list(HUGE_SIZES)
BAD_REALS = list(BAD_NUMBERS)
#: the public functions each sweep below calls, per module (counted at the end)
COVERED: dict[str, set] = {}


def cover(mod: str, *names: str) -> None:
    COVERED.setdefault(mod, set()).update(names)


# ============================================================ the defects the issue names (each failed before its fix)

@pytest.mark.parametrize("dtype,tau", [(torch.float32, 0.0112), (torch.float32, 1e-4), (torch.float64, 1e-3),
                                       (torch.float64, 1e-6)])
def test_gale_losses_small_tau(dtype, tau):
    "equivalence_loss / grace_loss with a small tau: NaN or -inf before (exp(1/tau) overflows); now finite and equal to "
    "a float64 log-sum-exp reference computed from the definition."
    torch.manual_seed(0)
    z = torch.randn(2, 12, 5, dtype=dtype)
    c = np.arange(12) % 3
    for fn, args in ((GA.equivalence_loss, (c,)), (GA.grace_loss, ())):
        v = fn(z, *args, tau=tau)
        assert torch.isfinite(v), (fn.__name__, tau, v)
        ref = fn(z.double(), *args, tau=tau)
        assert abs(float(v) - float(ref)) <= 1e-3 * abs(float(ref)) + 1e-3
    # the reference: GRACE's semi-loss from its definition, in exact-ish arithmetic (mpmath-free: shift by the max)
    h = torch.nn.functional.normalize(z.double(), dim=-1)
    u, w = h[0], h[1]
    refl, btw = (u @ u.T / tau).numpy(), (u @ w.T / tau).numpy()
    n = len(u)
    terms = [np.concatenate([np.delete(refl[i], i), btw[i]]) for i in range(n)]
    semi = np.array([np.log(np.exp(t - t.max()).sum()) + t.max() - btw[i, i] for i, t in enumerate(terms)])
    refl2, btw2 = (w @ w.T / tau).numpy(), (w @ u.T / tau).numpy()
    terms2 = [np.concatenate([np.delete(refl2[i], i), btw2[i]]) for i in range(n)]
    semi2 = np.array([np.log(np.exp(t - t.max()).sum()) + t.max() - btw2[i, i] for i, t in enumerate(terms2)])
    assert abs(float(GA.grace_loss(z.double(), tau)) - 0.5 * (semi + semi2).mean()) <= 1e-9 * (1 + abs(semi.mean()))


def test_gale_losses_unchanged_at_usual_tau():
    "The log-sum-exp form gives the old exp/log values at the chapter's tau (0.5) to rounding."
    torch.manual_seed(1)
    z = torch.randn(2, 20, 6, dtype=torch.float64)
    c = np.arange(20) % 4
    h = torch.nn.functional.normalize(z, dim=-1)
    same_c = torch.as_tensor(c[:, None] == c[None, :])
    eye = torch.eye(20, dtype=torch.bool)
    intra = inter = 0.0
    for a, b in ((h[0], h[1]), (h[1], h[0])):
        E = torch.exp(torch.cat([a @ b.T, a @ a.T], 1) / 0.5) * torch.cat([torch.ones(20, 20), (~eye).double()], 1)
        pos = torch.cat([same_c, same_c & ~eye], 1).double()
        intra = intra - torch.log((E * pos).sum(1)).mean() / 2
        inter = inter + torch.log(E.sum(1)).mean() / 2
    assert abs(float(GA.equivalence_loss(z, c, 0.5)) - float(intra + inter)) < 1e-12


def _min_norm_qp(G):
    "The min-norm point of the hull of G's rows by SLSQP on the simplex, in coordinates scaled to the answer."
    m = len(G)
    Q = G @ G.T
    res = minimize(lambda l: l @ Q @ l, np.full(m, 1 / m), jac=lambda l: 2 * Q @ l, method="SLSQP",
                   bounds=[(0, 1)] * m, constraints=[{"type": "eq", "fun": lambda l: l.sum() - 1}],
                   options={"ftol": 1e-30, "maxiter": 1000})
    return np.clip(res.x, 0, None) / np.clip(res.x, 0, None).sum() @ G


@pytest.mark.parametrize("s", [1e-3, 1e-6, 1e-8, 1e-10, 1e-12])
def test_min_norm_point_tiny_norms(s):
    """min_norm_point (nnls) returned 0 for any true norm below ~1e-6 max|G| (an absolute 1e-12 test on r[-1] =
    -|p|^2 / (1 + |p|^2)); now p = G'lam / sum(lam). Exact answer: two points whose segment passes at distance s
    from 0 (closed form), and m points p* + v_i with the v_i orthogonal to p* around 0 (the answer is p*)."""
    rng = np.random.default_rng(int(-math.log10(s)))
    a = rng.standard_normal(4)
    u = rng.standard_normal(4)
    u -= (u @ a) / (a @ a) * a
    u /= np.linalg.norm(u)
    A, B = a + s * u, -3 * a + s * u
    v = B - A
    exact = A + np.clip(-(A @ v) / (v @ v), 0, 1) * v
    got = SF.min_norm_point(np.stack([A, B]))
    assert np.linalg.norm(got - exact) <= 1e-3 * s + 1e-15, (s, np.linalg.norm(got), np.linalg.norm(exact))
    # m points: p* + v_i, v_i in p*'s orthogonal complement, 0 inside their hull, and a few points farther along p*
    p_star = s * u
    V = rng.standard_normal((6, 4))
    V -= np.outer(V @ u, u)
    V -= V.mean(0)  # the v_i average to 0: p* is in the hull
    N = rng.standard_normal((3, 4)) * 0.1
    extra = p_star + rng.random((3, 1)) * u + N - np.outer(N @ u, u)
    G = np.vstack([p_star + V, extra])
    got = SF.min_norm_point(G)
    assert np.linalg.norm(got - p_star) <= 1e-3 * s + 1e-14, (s, np.linalg.norm(got))
    # a large scale too (the hull is scaled with G)
    assert np.linalg.norm(SF.min_norm_point(1e8 * G) - 1e8 * p_star) <= 1e-3 * 1e8 * s + 1e-6
    # goldstein_norm of a gradient field whose hull is that of G: the estimate is no longer 0
    gn = SF.goldstein_norm(lambda p: G[int(abs(p).sum() * 1e6) % len(G)], np.zeros(4), 0.0, 0)
    assert gn >= 0 and (gn > 0 or np.linalg.norm(G[0]) == 0)


def test_min_norm_point_random_against_qp():
    "Random hulls at moderate scales: the nnls answer is no farther from 0 than the QP's and lies in the hull."
    rng = np.random.default_rng(3)
    for _ in range(20):
        G = rng.standard_normal((rng.integers(2, 6), 3)) + rng.standard_normal(3) * rng.random() * 3
        p, q = SF.min_norm_point(G), _min_norm_qp(G)
        assert np.linalg.norm(p) <= np.linalg.norm(q) + 1e-9
        assert np.linalg.norm(p - q) <= 1e-5 * (1 + np.abs(G).max())


@pytest.mark.parametrize("Y,name", [([0, 1, -1, 0], "Y"), ([0.0, 1.7, 1.0, 0.0], "Y"), ([0, 1, 1], "Y"),
                                    ([[0], [1], [1], [0]], "Y")])
def test_train_ensemble_labels(Y, name):
    "Labels -1 (a torch index error) and 1.7 (silently truncated) are refused, naming Y."
    X = np.random.default_rng(0).standard_normal((4, 3))
    assert_refused(SF.train_ensemble, X, Y, [0.1], 2, batch_size=2, hidden=4, n_evals=1, name=name)
    out = SF.train_ensemble(X, [0, 1, 1, 0], [0.1], 2, batch_size=2, hidden=4, n_evals=1)
    assert np.isfinite(out["loss"]).all()


def test_sample_ball_empty():
    "sample_ball of an empty x: ZeroDivisionError (1 / d) before."
    assert_refused(SF.sample_ball, np.zeros(0), 0.1, 3, np.random.default_rng(0), name="x")
    pts = SF.sample_ball(np.zeros(3), 0.5, 50, np.random.default_rng(0))
    assert pts.shape == (50, 3) and (np.linalg.norm(pts, axis=1) <= 0.5 + 1e-12).all()


@pytest.mark.parametrize("alpha,R_high", [(1e-310, 1.0), (1e-300, 1e10), (1e-300, 1.0)])
def test_maxent_tiny_alpha(alpha, R_high):
    "soft_value_iteration / p_wide with alpha = 1e-310 (or 1e-300 and R = 1e10): NaN before; refused naming alpha."
    mdp = ME.bifurcation_mdp(R_high, 0.5, 0.2, 20)
    assert_refused(ME.p_wide, mdp, alpha, name="alpha")
    for backend in ("njit", "numpy"):
        assert_refused(ME.soft_value_iteration, mdp["nxt"], mdp["R"], alpha, 1.0, 3, mdp["log_mu"], backend,
                       name="alpha")
    # the closed form stays right: alpha -> 0 gives the hard values
    vn, vw = ME.soft_values(R_high, 0.5, 0.2, alpha)
    assert vn == pytest.approx(R_high) and vw == pytest.approx(0.5)
    assert ME.p_wide(mdp, 0.0) == 0.0 and ME.p_wide(mdp, 1e-3, entropy=False) == 0.0


def test_maxent_huge_bins_refused_quickly():
    "bifurcation_mdp(n_bins=1e9) ran for 30-40 s and more; refused up front (MAX_BINS), naming n_bins."
    with time_limit(5):
        for n in (10**9, 10**8 + 2, 2**62):
            assert_refused(ME.bifurcation_mdp, 1.0, 0.5, 0.2, n, name="n_bins")
            assert_refused(ME.corridor_mdp, n_bins=n, name="n_bins")
        assert_refused(ME.bifurcation_mdp, 1.0, 0.5, 0.2, 20, stages=10**12, name="stages")


def test_pcl_rmse_shapes():
    "rmse of pred (3, 1) and y (3,) broadcast to (3, 3) (answer sqrt(2/3) instead of 1)."
    assert_refused(PC.rmse, torch.zeros(3, 1), torch.ones(3), name="pred")
    assert PC.rmse(torch.zeros(3, 1), torch.ones(3, 1)) == 1.0
    assert PC.rmse(np.zeros(3), np.ones(3)) == 1.0


def test_pcl_schedule_longer_than_T():
    "pcl_loss accepted a schedule longer than the model's T (the model saw t / T > 1)."
    m = PC.PCLNet(4, 2, hidden=8, T=10)
    x, y = torch.zeros(5, 4), torch.zeros(5, 2)
    assert_refused(PC.pcl_loss, m, x, y, PC.linear_schedule(20), name="schedule")
    assert_refused(PC.pcl_predict, m, x, (5,), PC.linear_schedule(20), name="schedule")
    assert torch.isfinite(PC.pcl_loss(m, x, y, PC.linear_schedule(10)))


def test_pcl_train_model_numpy():
    "train_model with a NumPy X failed deep inside torch indexing; now NumPy is taken and gives the tensor's model."
    rng = np.random.default_rng(0)
    X = rng.standard_normal((16, 3)).astype(np.float32)
    Y = (X[:, :2] * 2).astype(np.float32)
    kw = dict(iters=3, batch=4, hidden=8, schedule=PC.linear_schedule(10))
    a, b = PC.train_model(X, Y, **kw), PC.train_model(torch.from_numpy(X), torch.from_numpy(Y), **kw)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert_refused(PC.train_model, "X", Y, **kw, name="X")
    assert_refused(PC.train_model, X, Y[:5], **kw, name="X")


def test_adaptive_sketch_named():
    "run_game(T=1) / final_error([]): NaN; is_error(answer=-1) read the last point; noisy_max of NaN counts gave 0; "
    "noisy_max(eps=0): ZeroDivisionError; derived_copies(eps_total=1e-9) hung."
    ds = AS.make_sparse_dataset(8, 6, seed=0)
    s = AS.JLSketchANN(ds.points, 4, 0)
    assert_refused(AS.run_game, ds, s, AS.LinearSketchAttacker(ds.points), 1, name="T")
    assert_refused(AS.final_error, [], name="errors")
    assert_refused(AS.final_error, np.array([]), name="errors")
    assert AS.final_error(AS.run_game(ds, s, AS.LinearSketchAttacker(ds.points), 2)["errors"]) in (0.0, 1.0)
    q = ds.points[0]
    assert_refused(ds.is_error, q, -1, name="answer")
    assert_refused(ds.is_error, q, ds.n, name="answer")
    assert ds.is_error(q, 0) is False
    rng = np.random.default_rng(0)
    assert_refused(AS.noisy_max, np.array([NAN, 1.0, 2.0]), 1.0, rng, name="counts")
    assert_refused(AS.noisy_max, np.array([0.0, 1.0]), 0, rng, name="eps")
    assert AS.noisy_max(np.array([0.0, 1e6, 0.0]), 1.0, rng) == 1
    cfg = AS.SCALE_CONFIG["fast"]
    with time_limit(5):
        assert_refused(AS.derived_copies, dict(cfg, eps_total=1e-9), 500, name="eps_total")
    assert AS.derived_copies(cfg, 500) == 34  # the chapter's value is unchanged


def test_pars_named():
    "scripted_pointmass with an observation width that is not 3d; toy_extrapolation with reward_scale=0 (NaN); "
    "q_min(r_min=-inf): 'must lie in [-inf, inf], got -inf'."
    assert_refused(PA.scripted_pointmass, np.zeros((2, 5)), name="obs")
    assert_refused(PA.scripted_pointmass, np.zeros((2, 0)), name="obs")
    a = PA.scripted_pointmass(np.array([[0.0, 0, 0, 0, 1, 1]]))
    assert a.shape == (1, 2) and np.allclose(a, 0.5)
    net = PA.CriticLN(0, 1, (8,), n=1)
    assert_refused(PA.toy_extrapolation, net, 0.0, name="reward_scale")
    assert not np.isnan(PA.toy_extrapolation(net, 1.0)["excess"])
    e = assert_refused(PA.q_min, -INF, name="r_min")
    assert "[-inf, inf]" not in str(e)
    assert_refused(PA.PARS, 6, 2, r_min=-INF, name="r_min")


def test_versaprm_aggregate_named():
    "aggregate('0.5'): RecursionError; aggregate([]) returned an empty array where np.array([]) raised."
    assert_refused(VP.aggregate, "0.5", name="step_scores")
    assert_refused(VP.aggregate, [], name="step_scores")
    assert_refused(VP.aggregate, np.array([]), name="step_scores")
    assert_refused(VP.aggregate, [np.array([0.5]), "0.5"], name="step_scores")
    assert VP.aggregate([0.2, 0.9]) == 0.2
    assert same(VP.aggregate([np.array([0.2, 0.9]), np.array([0.7])], "last"), np.array([0.9, 0.7]))


def test_pipeline_huge_profile_refused():
    "synthetic_profile('chain', 1e9) ran for minutes; refused up front (MAX_NODES), naming n_nodes."
    with time_limit(5):
        for n in (10**9, PL.MAX_NODES + 1) + HUGE_SIZES:
            assert_refused(PL.synthetic_profile, "chain", n, name="n_nodes")
    assert PL.synthetic_profile("chain", 8).n == 8
