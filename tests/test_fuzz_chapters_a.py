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


@pytest.mark.parametrize("alpha,R_high", [(1e-310, 1.0), (1e-300, 1e10)])
def test_maxent_tiny_alpha(alpha, R_high):
    "soft_value_iteration / p_wide with alpha = 1e-310 (or 1e-300 and R = 1e10): NaN before (R / alpha overflowed in "
    "the kernel). The softvi kernel now shifts its log-sum-exp by the largest Q (kernels.softvi), so the answer is the "
    "hard-max limit: finite, the hard Bellman values, and no mass on the wide branch."
    mdp = ME.bifurcation_mdp(R_high, 0.5, 0.2, 20)
    assert ME.p_wide(mdp, alpha) == 0.0  # the narrow branch pays more
    V_hard = ME.soft_value_iteration(mdp["nxt"], mdp["R"], 0.0, 1.0, 3, mdp["log_mu"], "numpy")[0]
    for backend in ("njit", "numpy"):
        V, pi = ME.soft_value_iteration(mdp["nxt"], mdp["R"], alpha, 1.0, 3, mdp["log_mu"], backend)
        assert np.isfinite(V).all() and np.isfinite(pi).all()
        assert np.allclose(V, V_hard, rtol=1e-12, atol=0)
    # the closed form stays right: alpha -> 0 gives the hard values (it returned V_narrow = inf before)
    vn, vw = ME.soft_values(R_high, 0.5, 0.2, alpha)
    assert vn == pytest.approx(R_high) and vw == pytest.approx(0.5)
    assert ME.p_wide(mdp, 0.0) == 0.0 and ME.p_wide(mdp, 1e-3, entropy=False) == 0.0


def test_maxent_policy_rows_underflow():
    """pi = exp((Q - V) / alpha + log mu) / sum: where V has not converged (few sweeps, gamma < 1) or alpha is tiny
    (1e-300, R = 1: Q - V is rounding, / alpha ~ 1e284), a whole row under- or overflowed and the policy was NaN
    (found by the property test below); such rows are now shifted by their largest exponent, the others unchanged."""
    rng = np.random.default_rng(0)
    R, P = rng.normal(0, 1, (2, 4)), rng.integers(-1, 2, (2, 4))
    V, pi = ME.soft_value_iteration(P, R, 1e-3, 0.9, 5)
    assert np.isfinite(pi).all() and np.allclose(pi.sum(1), 1)
    Q = R + 0.9 * np.where(P < 0, 0.0, V[np.maximum(P, 0)])
    assert (pi[np.arange(2), Q.argmax(1)] > 0.99).all()  # alpha -> 0: the greedy action
    mdp = ME.bifurcation_mdp(1.0, 0.5, 0.2, 20)
    assert ME.p_wide(mdp, 1e-300) == 0.0  # the narrow branch pays more: the hard-max answer, not NaN


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


# ============================================================ the hostile-input sweep: every public function
def _specs():
    "(id, function, good keyword arguments, {argument: bad values}); the good call must return an answer without NaN."
    rng0 = lambda: np.random.default_rng(0)  # noqa: E731
    G = nx.path_graph(6)
    X6 = np.random.default_rng(0).standard_normal((6, 3))
    z = torch.randn(2, 6, 4, generator=torch.Generator().manual_seed(0))
    from icml25nb.graphdata import to_data
    data = to_data(G, X6.astype(np.float32), y=None)
    x_t, ei = data.x, data.edge_index
    ds = AS.make_sparse_dataset(8, 6, seed=0)
    pts = ds.points
    cfg_as = AS.SCALE_CONFIG["fast"]
    mdp = ME.bifurcation_mdp(1.0, 0.5, 0.2, 20)
    cmdp = ME.corridor_mdp(2, n_bins=20)
    prof = PL.synthetic_profile("chain", 8)
    tpl = PL.schedule_template("1f1b", 2, 2, 2)
    plan = PL.Plan((4,), "1f1b", 2, 2, 2)
    pcl_m = PC.PCLNet(3, 2, hidden=8, T=10)
    sched10 = PC.linear_schedule(10)
    crit = PA.CriticLN(0, 1, (8,), n=1)
    probs = VP.sample_problems("arith", 2, seed=0)
    solver = VP.NoisySolver(0.1)
    cots, firsts = solver.generate(probs[0], 2)
    lm = VP.WindowLM(window=3, d=4, hidden=8)
    ids, labels = VP.prm_inputs([probs[0]] * 2, cots, firsts)
    ogd = SF.DiscountedOGD(3, 0.1)
    sac = ME.SACAdaEnt(4, 1, hidden=(8,))
    sac2 = ME.SACAdaEnt(2, 1, hidden=(8,))
    F = SF.abs_well()
    I = BAD_INTS
    Ismall = [x for x in BAD_INTS if x not in HUGE_SIZES]  # a huge count that is only a count is fine
    R = BAD_REALS
    S = [
        # ---------------------------------------------------------------- graphs/gale
        ("gale", GA.approx_equivalence_classes, dict(G=G, iterations=2), dict(G=[None, "G", X6], iterations=[x for x in Ismall if x is not None])),
        ("gale", GA.attribute_classes, dict(X=X6, decimals=1),
         dict(X=[None, "X", np.zeros((0, 3)), np.zeros(3), [[NAN, 1.0]]], decimals=[None, "1", 1.5, NAN])),
        ("gale", GA.unify_classes, dict(structural=[0, 0, 1], attribute=[0, 1, 1]),
         dict(structural=[None, "ab", [], [0.5, 1, 2], [[0, 1, 2]]], attribute=[None, [0, 1], [0.5, 1, 1]])),
        ("gale", GA.equivalence_classes, dict(G=G, X=X6, decimals=1),
         dict(G=[None, 3], X=[None, X6[:3], [[NAN] * 3] * 6], decimals=[None, "1", 1.5],
              iterations=[x for x in Ismall if x is not None])),
        ("gale", GA.wl_rounds, dict(G=G), dict(G=[None, "G", X6])),
        ("gale", GA.kmeans_classes, dict(X=X6, k=2, seed=0),
         dict(X=[None, np.zeros((0, 2)), [[NAN, 1.0]] * 3], k=I + [0, 7], seed=[-1, NAN, "0", 2**64])),
        ("gale", GA.random_classes, dict(classes=[0, 1, 1], seed=0),
         dict(classes=[None, [], "abc", [0.5, 1.0], [[0, 1]]], seed=[-1, NAN, None])),
        ("gale", GA.equivalence_loss, dict(z=z, classes=np.arange(6) % 2, tau=0.5),
         dict(z=[None, z[0], z.int(), z * NAN, torch.zeros(2, 1, 4)], classes=[None, [0] * 5, [0.5] * 6, "abcdef"],
              tau=R + [0, -1])),
        ("gale", GA.grace_loss, dict(z=z, tau=0.5), dict(z=[None, z[:1], z * INF], tau=R + [0, -0.5])),
        ("gale", GA.GCNEncoder, dict(in_dim=3, hidden=4, out=2, layers=2),
         dict(in_dim=I + [0], hidden=[0, None, NAN], out=[0, 1.5], layers=[0, "2"])),
        ("gale", GA.augment, dict(x=x_t, edge_index=ei, p_edge=0.2, p_feat=0.1),
         dict(x=[None, X6], edge_index=[None, ei.float(), ei[0]], p_edge=R + [-0.1, 1.5], p_feat=R + [2.0])),
        ("gale", GA.train_gale, dict(data=data, classes=np.arange(6) % 2, epochs=1, hidden=4, out=2, layers=1),
         dict(data=[None, X6], classes=[None, [0] * 5], epochs=I, lr=R + [0, -1], tau=R + [0], seed=[-1, NAN])),
        ("gale", GA.train_grace, dict(data=data, epochs=1, hidden=4, out=2, layers=1),
         dict(data=[None, "d"], epochs=I, lr=R + [0], tau=R + [0], hidden=[0, NAN])),
        ("gale", GA.random_encoder, dict(data=data, hidden=4, out=2, layers=1),
         dict(data=[None], seed=[-1, "0"], hidden=[0, 1.5], layers=[0])),
        ("gale", GA.time_exponent, dict(sizes=[1, 2, 4], times=[1.0, 2.0, 4.0]),
         dict(sizes=[None, [1], [1, -2, 4], [1, NAN, 4], "abc"], times=[None, [1, 2], [0, 1, 2], [1, INF, 2]])),
        ("gale", GA.approx_timings, dict(n_bases=(10, 20), repeats=1),
         dict(n_bases=[None, (10, NAN), (10, 10**12), "ab", (1,)], repeats=I + [0], seed=[-1, NAN])),
        ("gale", GA.role_features, dict(n=5, noise_dim=2), dict(n=I + [0], noise_dim=I, seed=[-1, NAN])),
        ("gale", GA.add_random_edges, dict(G=G, m=2), dict(G=[None, X6], m=I + [100], seed=[-1, NAN])),
        ("gale", GA.experiment, dict(), dict(scale=[None, "huge", 3], seed=[-1, NAN, 2**64, "0"])),
        # ---------------------------------------------------------------- optim/schedulefree
        ("schedulefree", SF.abs_well, dict(), dict()),
        ("schedulefree", SF.abs_ridge, dict(), dict()),
        ("schedulefree", SF.min_norm_point, dict(G=[[1.0, 0], [0, 1]]),
         dict(G=[None, "G", [], [[NAN, 1.0]], [[INF, 0.0]], [1.0, 2.0], np.zeros((2, 0))], method=[None, "qp", 1])),
        ("schedulefree", SF.sample_ball, dict(x=np.zeros(2), delta=0.1, n=3, rng=rng0()),
         dict(x=[None, [], [NAN, 1.0], np.zeros((2, 2))], delta=R + [-1.0], n=I, rng=[None, 0])),
        ("schedulefree", SF.goldstein_norm, dict(grad_fn=F.grad, x=np.ones(2), delta=0.01, n_samples=4),
         dict(grad_fn=[None, 3], x=[None, [], [NAN, 1.0]], delta=R + [-1], n_samples=I, seed=[-1, NAN])),
        ("schedulefree", SF.averaging_coefficient, dict(k=3, c="uniform"),
         dict(k=[x for x in I if x not in HUGE_SIZES], c=[NAN, 0, 1.5, "half", None, INF])),
        ("schedulefree", SF.sf_step, dict(y=np.zeros(2), z=np.zeros(2), x=np.zeros(2), grad=np.ones(2), lr=0.1,
                                          beta=0.9, c=0.5), dict(beta=R + [1.0, -0.1])),
        ("schedulefree", SF.sf_sgd, dict(grad_fn=F.grad, x0=np.ones(2), T=5, lr=0.1),
         dict(grad_fn=[None, "f"], x0=[None, [], [NAN, 0.0], np.ones((2, 2))], T=I + [0], lr=R + [0, -1],
              beta=R + [1.0], c=[NAN, 0, 2.0, "x"], noise=R + [-1.0], seed=[-1, NAN])),
        ("schedulefree", SF.ScheduleFreeSGD, dict(params=[torch.zeros(2, requires_grad=True)], lr=0.1),
         dict(lr=R + [0, -1], beta=R + [1.0], c=[NAN, 0, "x"], warmup_steps=Ismall, weight_lr_power=R + [-1])),
        ("schedulefree", SF.compare_with_schedulefree, dict(steps=2, warmup=1),
         dict(steps=I + [0], warmup=Ismall, seed=[-1, NAN])),
        ("schedulefree", SF.DiscountedOGD, dict(dim=3, lr=0.1), dict(dim=I + [0], lr=R + [0, -1], discount=R + [-1],
                                                                     radius=[x for x in R if x is not None] + [0, -1])),
        ("schedulefree", ogd.update, dict(g=np.ones(3), t=1), dict(g=[None, np.ones((3, 3)), [NAN] * 3, np.ones(2)],
                                                                  t=[None, 0, NAN, "1"])),
        ("schedulefree", SF.o2nc, dict(grad_fn=F.grad, x0=np.ones(2), learner=SF.DiscountedOGD(2, 0.1), T=4),
         dict(grad_fn=[None], x0=[None, [], [NAN, 1.0]], learner=[None, 3], T=I + [0], interpolation=[None, "x"],
              noise=R + [-1], seed=[-1, NAN])),
        ("schedulefree", SF.schedule_free_as_o2nc, dict(dim=2, lr=0.1),
         dict(dim=I + [0], lr=R + [0], beta=R + [1.0], c=[NAN, 0, "x"])),
        ("schedulefree", SF.stationarity_runs, dict(objective=F, method="sf", lrs=[0.1], horizons=[2, 4], replicas=2,
                                                    dim=2),
         dict(objective=[None, "abs"], method=[None, "adam"], lrs=[None, [], [NAN], [0.0], [-1.0]],
              horizons=[None, [], [4, 2], [NAN], [2, 10**12]], replicas=I + [0], dim=I + [0], noise=R + [-1],
              beta=R + [1.0], c_scale=R + [0], T0=[x for x in Ismall if x is not None] + [0], seed=[-1, NAN])),
        ("schedulefree", SF.fitted_exponent, dict(horizons=[1, 2, 4], values=[1.0, 0.5, 0.25]),
         dict(horizons=[None, [1], [1, NAN, 4], [0, 1, 2], "ab"], values=[None, [1.0, 2.0], [1, -1, 1], [1, INF, 1]])),
        ("schedulefree", SF.envelope_exponent, dict(horizons=[1, 2], curves=[[1.0, 0.5]], lrs=[0.1]),
         dict(curves=[None, [[1.0, NAN]], [[1.0]], [1.0, 0.5]], lrs=[None, [NAN], [0.1, 0.2]])),
        ("schedulefree", SF.multiclass_hinge, dict(out=torch.zeros(1, 3, 4), y=torch.zeros(1, 3, dtype=torch.long)),
         dict(out=[None, torch.zeros(3), torch.zeros(1, 3, 4, dtype=torch.long)],
              y=[None, torch.full((1, 3), 4), torch.full((1, 3), -1), torch.zeros(1, 3), torch.zeros(3, dtype=torch.long)])),
        ("schedulefree", SF.init_mlp, dict(sizes=[3, 4, 2], seed=0),
         dict(sizes=[None, [3], "ab", [3, 0, 2], [3, NAN], [3, 10**12], 5], seed=[-1, NAN, None])),
        ("schedulefree", SF.train_ensemble, dict(X=X6, Y=np.arange(6) % 2, lrs=[0.1], T=2, batch_size=2, hidden=4,
                                                 n_evals=1),
         dict(X=[None, [], X6 * NAN, X6[0]], Y=[None, [0] * 5, [-1] * 6, [0.5] * 6, [10**12] * 6], lrs=[None, [], [NAN],
              0.1, [0]], T=I + [0], batch_size=I + [0], hidden=I + [0], beta=R + [1.0], n_evals=I + [0, 3],
              methods=[None, (), ("adam",)], seed=[-1, NAN])),
        ("schedulefree", SF.noisy_digits, dict(label_noise=0.1), dict(label_noise=R + [-0.1, 1.5], seed=[-1, NAN])),
        ("schedulefree", SF.experiment, dict(), dict(scale=[None, "huge"], seed=[-1, NAN, 2**64])),
        # ---------------------------------------------------------------- rl/maxent
        ("maxent", ME.soft_values, dict(R_high=1.0, R_mid=0.5, width=0.2, alpha=0.3),
         dict(R_high=R + [0, -1], R_mid=R + [-1, 2.0], width=R + [0, 2.0], alpha=R + [-1])),
        ("maxent", ME.alpha_star, dict(R_high=1.0, R_mid=0.5, width=0.2),
         dict(R_high=R + [0], R_mid=R + [0.05], width=R + [0, 2.5])),
        ("maxent", ME.alpha_star_approx, dict(R_high=1.0, R_mid=0.5, width=0.2), dict(R_high=R, R_mid=R, width=R)),
        ("maxent", ME.bifurcation_mdp, dict(R_high=1.0, R_mid=0.5, width=0.2, n_bins=20),
         dict(R_high=R, n_bins=I + [0, 21], center=[NAN, INF, 0.95, None], stages=I + [0])),
        ("maxent", ME.soft_value_iteration, dict(P=mdp["nxt"], R=mdp["R"], alpha=0.1, n_iter=3, log_mu=mdp["log_mu"]),
         dict(P=[None, mdp["nxt"][:1], mdp["nxt"] + 100, mdp["nxt"] * 1.5], R=[None, mdp["R"] * NAN, mdp["R"][0]],
              alpha=R + [-1], gamma=R + [-0.5, 1.5], n_iter=I + [0], log_mu=[mdp["log_mu"][:3], [NAN] * 20],
              backend=[None, "gpu"])),
        ("maxent", ME.p_wide, dict(mdp=mdp, alpha=0.1), dict(mdp=[None, {}, "mdp"], alpha=R + [-1])),
        ("maxent", ME.switch_point, dict(mdp=mdp, lo=0.01, hi=1.0),
         dict(mdp=[None, {}], lo=R + [0, -1], hi=R + [0.001], tol=R + [0, -1, 1e-300])),
        ("maxent", ME.ContinuousBifurcationEnv, dict(), dict(R_high=R + [0], R_mid=R, width=R + [3.0], center=[NAN, 5.0],
                                                             stages=Ismall + [0])),
        ("maxent", ME.PrecisionCorridorEnv, dict(), dict(horizon=Ismall + [0], width=R + [0, 3.0], center=[NAN, 2.0, None],
                                                         reward=R + [0], noise=R + [-1])),
        ("maxent", ME.ToyExampleEnv, dict(), dict(band=R + [0, 1.0, -0.5])),
        ("maxent", ME.toy_example_alpha_star, dict(), dict(band=R + [0, -1])),
        ("maxent", ME.corridor_mdp, dict(horizon=2, n_bins=20),
         dict(horizon=I + [0], width=R + [0], center=R + [2.0], reward=R, n_bins=I + [1])),
        ("maxent", ME.corridor_stay_prob, dict(mdp=cmdp, alpha=0.1), dict(mdp=[None, mdp, "m"], alpha=R + [-1])),
        ("maxent", ME.corridor_alpha_c, dict(), dict(horizon=I + [0], width=R + [0], reward=R)),
        ("maxent", ME.best_tanh_gaussian, dict(alpha=0.1, center=0.5, width=0.3, samples=200),
         dict(alpha=R + [-1], center=[NAN, 3.0, None], width=R + [0], samples=I + [10], seed=[-1, NAN])),
        ("maxent", ME.SACAdaEnt, dict(obs_dim=4, act_dim=1, hidden=(8,)),
         dict(obs_dim=I + [0], act_dim=[0, NAN], n_sample=I + [1], dist_threshold=R + [1.5, -2])),
        ("maxent", ME.first_action, dict(agent=sac, obs=np.zeros(4)), dict(agent=[None, 3], obs=[None, np.zeros(3),
                                                                                                 [NAN] * 4])),
        ("maxent", ME.branch_probability, dict(agent=sac, obs=np.zeros(4), samples=10),
         dict(agent=[None], obs=[None, np.zeros(2)], samples=I + [0])),
        ("maxent", ME.corridor_failure_rate, dict(agent=sac2, env=ME.PrecisionCorridorEnv(2), episodes=2, seed=0),
         dict(agent=[None], env=[None, ME.ToyExampleEnv()], episodes=I + [0], seed=[-1, NAN])),
        ("maxent", ME.experiment, dict(), dict(scale=[None, "huge"], seed=[-1, NAN, 2**64])),
        # ---------------------------------------------------------------- supervised/pcl
        ("pcl", PC.nbody_springs, dict(n_sims=2, n_particles=3, steps=2),
         dict(n_sims=I + [0], n_particles=I + [1], steps=I + [0], seed=[-1, NAN], dt=R + [0, -1], k=R + [0, -1])),
        ("pcl", PC.occluded_digits, dict(), dict(seed=[-1, NAN], patch=[None, "ab", (0, 2), (9, 2), (1.5, 2), (1,)])),
        ("pcl", PC.linear_schedule, dict(T=10), dict(T=I + [1], beta_1=R + [0, 0.5], beta_T=R + [1.0, 1e-6])),
        ("pcl", PC.q_sample, dict(y=torch.zeros(2, 3), t=torch.tensor([0, 9]), schedule=sched10, eps=torch.zeros(2, 3)),
         dict(y=[None, torch.zeros(3)], t=[None, torch.tensor([0, 10]), torch.tensor([0, -1]), torch.tensor([0.5, 1.0]),
                                          torch.tensor([0])], schedule=[None, sched10[None]], eps=[None, torch.zeros(2, 2)])),
        ("pcl", PC.PCLNet, dict(in_dim=3, label_dim=2, hidden=4, T=10),
         dict(in_dim=I + [0], label_dim=[0, NAN, "2"], hidden=[0, 1.5], T=[1, NAN, None])),
        ("pcl", PC.pcl_loss, dict(model=pcl_m, x=torch.zeros(4, 3), y=torch.zeros(4, 2), schedule=sched10),
         dict(model=[None, "m"], x=[None, torch.zeros(4, 2), torch.full((4, 3), NAN), torch.zeros(0, 3)],
              y=[None, torch.zeros(3, 2), torch.zeros(4, 3)], schedule=[None, PC.linear_schedule(20), sched10 * 2,
                                                                          -sched10], lam=R + [-1])),
        ("pcl", PC.supervised_loss, dict(model=pcl_m, x=torch.zeros(4, 3), y=torch.zeros(4, 2)),
         dict(model=[None], x=[None, torch.zeros(4, 5), torch.full((4, 3), INF)], y=[None, torch.zeros(5, 2)])),
        ("pcl", PC.train_model, dict(X=torch.zeros(8, 3), Y=torch.zeros(8, 2), iters=2, batch=2, hidden=4,
                                     schedule=sched10),
         dict(X=[None, "X", torch.zeros(8), torch.full((8, 3), NAN)], Y=[None, torch.zeros(7, 2)],
              kind=[None, "gan"], lam=R + [-1], iters=I + [0], batch=I + [0], hidden=I + [0], lr=R + [0, -1],
              seed=[-1, NAN], schedule=["s", [NAN] * 10, [0.5]])),
        ("pcl", PC.pcl_predict, dict(model=pcl_m, x=torch.zeros(4, 3), steps=(9, 5), schedule=sched10),
         dict(model=[None], x=[None, torch.zeros(4, 2), torch.full((4, 3), NAN)], steps=[None, (), (5, 9), (10,),
                                                                                         (-1,), (9.5,), "9"],
              schedule=[PC.linear_schedule(20)], seed=[-1, NAN])),
        ("pcl", PC.rmse, dict(pred=torch.zeros(3, 2), y=torch.ones(3, 2)),
         dict(pred=[None, "p", torch.zeros(3), torch.zeros(2, 3), torch.full((3, 2), NAN)],
              y=[None, torch.ones(3, 1), torch.full((3, 2), INF)])),
        ("pcl", PC.prediction_spread, dict(model=pcl_m, x=torch.zeros(4, 3), draws=2, steps=(9,), schedule=sched10),
         dict(model=[None], draws=I + [1], x=[None, torch.zeros(4, 5)], seed=[-1])),
        ("pcl", PC.predict_in_label_units, dict(model=pcl_m, X=np.zeros((6, 3)), Y=np.zeros((6, 2)), n_test=2,
                                                 steps=(9,), schedule=sched10),
         dict(model=[None], X=[None, np.zeros((5, 3)), np.full((6, 3), NAN)], Y=[None, np.zeros((6, 2, 1))],
              n_test=I + [0, 6], steps=[(), (10,)])),
        ("pcl", PC.energy_drift, dict(n_sims=2, n_particles=3, steps=10),
         dict(n_sims=I + [0], n_particles=I + [1], steps=I + [0, 5], dt=R + [0], k=R + [0], seed=[-1, NAN])),
        ("pcl", PC.experiment, dict(), dict(scale=[None, "huge"], seed=[-1, NAN, 2**64])),
        # ---------------------------------------------------------------- algorithms/adaptive_sketch
        ("adaptive_sketch", AS.SparseDataset, dict(points=pts, rho=0.5, c=2.0),
         dict(points=[None, "p", np.zeros((0, 3)), pts * NAN, pts[0]], rho=R + [0], c=R + [0])),
        ("adaptive_sketch", ds.is_error, dict(q=pts[0], answer=1),
         dict(q=[None, pts[0][:3], pts[0] * NAN], answer=[-1, 8, NAN, 1.5, "1", None])),
        ("adaptive_sketch", AS.make_sparse_dataset, dict(n=8, d=6),
         dict(n=I + [0, 7], d=I + [1], rho=R + [0], c=R + [1.0, 0.5], seed=[-1, NAN])),
        ("adaptive_sketch", AS.JLSketchANN, dict(points=pts, m=4), dict(points=[None, np.zeros((0, 6)), pts * INF],
                                                                        m=I + [0], seed=[-1, NAN])),
        ("adaptive_sketch", AS.JLSketchANN(pts, 4).query, dict(q=pts[0]), dict(q=[None, pts[0][:2], pts[0] * NAN, "q"])),
        ("adaptive_sketch", AS.FreshCopiesANN, dict(points=pts, m=4, T=3),
         dict(points=[None, pts[:, :0]], m=I + [0], T=Ismall + [0], seed=[-1])),
        ("adaptive_sketch", AS.advanced_composition, dict(eps=0.1, delta=1e-6, t=10, delta_prime=1e-6),
         dict(eps=R + [-1], delta=R + [-1, 2.0], t=I[:-3] + [-5], delta_prime=R + [0, 1, 1.5])),
        ("adaptive_sketch", AS.subsampled_epsilon, dict(eps0=0.5, q=0.3), dict(eps0=R + [-1], q=R + [-0.1, 1.5])),
        ("adaptive_sketch", AS.PrivacyAccountant, dict(eps0=0.5, q=0.3, delta=1e-6),
         dict(eps0=R + [0], q=R + [0, 1.5], delta=R + [0, 1])),
        ("adaptive_sketch", AS.eps0_for_budget, dict(eps_total=10.0, T=100, q=0.5, delta=1e-6),
         dict(eps_total=R + [0], T=Ismall + [0], q=R + [0], delta=R + [1.0])),
        ("adaptive_sketch", AS.noisy_max, dict(counts=np.array([0.0, 3.0]), eps=1.0, rng=rng0()),
         dict(counts=[None, [], [NAN, 1.0], np.zeros((2, 2)), "ab"], eps=R + [0, -1], rng=[None, 3])),
        ("adaptive_sketch", AS.DPRobustANN, dict(points=pts, m=4, k=3),
         dict(points=[None, pts * NAN], m=I + [0], k=I + [0], eps=R + [0], delta=R + [0, 1], sample_frac=R + [0, 2.0],
              seed=[-1], selection=[None, "best"])),
        ("adaptive_sketch", AS.DPRobustANN.for_budget, dict(points=pts, m=4, k=3, T=10, eps_total=10.0),
         dict(k=I + [0], T=Ismall + [0], eps_total=R + [0], sample_frac=R + [0], delta=R + [0])),
        ("adaptive_sketch", AS.LinearSketchAttacker, dict(points=pts),
         dict(points=[None, pts[:, :1], pts * NAN], i0=[-1, 8, NAN, 1], i1=[0, 99, None], gamma=R + [0],
              probe_scale=R + [0], seed=[-1])),
        ("adaptive_sketch", AS.ObliviousQueries, dict(points=pts), dict(points=[None], i0=[-1], gamma=R)),
        ("adaptive_sketch", AS.run_game, dict(ds=ds, structure=AS.JLSketchANN(pts, 4),
                                              attacker=AS.LinearSketchAttacker(pts), T=4),
         dict(ds=[None, pts], structure=[None, 3], attacker=[None, "a"], T=I + [0, 1])),
        ("adaptive_sketch", AS.final_error, dict(errors=np.array([True, False])),
         dict(errors=[None, [], np.array([NAN]), [2.0], "ab"], frac=R + [0, 1.5])),
        ("adaptive_sketch", AS.copies_needed, dict(ds=ds, cfg=dict(cfg_as, k_min=2), T=4, seed=0, selection="majority"),
         dict(ds=[None], cfg=[None, {}], T=I + [0], seed=[-1, NAN], start=I, selection=[None, "first"])),
        ("adaptive_sketch", AS.derived_copies, dict(cfg=cfg_as, T=500),
         dict(cfg=[None, {}, dict(cfg_as, eps_total=NAN), dict(cfg_as, eps_total=1e-12), dict(cfg_as, n=0),
                   dict(cfg_as, sample_frac=NAN)], T=I + [0], beta=R + [0, 1])),
        ("adaptive_sketch", AS.experiment, dict(), dict(scale=[None, "huge"], seed=[-1, NAN, 2**64])),
        # ---------------------------------------------------------------- rl/pars
        ("pars", PA.CriticLN, dict(obs_dim=2, act_dim=1, hidden=(4,)),
         dict(obs_dim=I, act_dim=I + [0], hidden=[(), (0,), (NAN,), (1.5,)], n=I + [0])),
        ("pars", PA.ln_output_bound, dict(critic=crit), dict(critic=[None, PA.CriticLN(0, 1, (4,), layer_norm=False)])),
        ("pars", PA.sample_infeasible, dict(n=3, act_dim=2), dict(n=I + [0], act_dim=I + [0], distance=R + [1.0, 0.5],
                                                                  generator=[3, "g"])),
        ("pars", PA.q_min, dict(r_min=-1.0), dict(r_min=R, reward_scale=R + [0, -1], gamma=R + [1.0, -0.1])),
        ("pars", PA.pars_critic_loss, dict(q=torch.zeros(2, 3), y=torch.zeros(3), q_infeasible=torch.zeros(2, 4),
                                           pa_alpha=0.1),
         dict(q=[None, torch.zeros(3), torch.full((2, 3), NAN), torch.zeros(2, 0)], y=[None, torch.zeros(4)],
              q_infeasible=[None, torch.zeros(3, 4), torch.full((2, 4), INF)], q_min_value=R, pa_alpha=R + [-1])),
        ("pars", PA.PARS, dict(obs_dim=6, act_dim=2, hidden=(4,)),
         dict(obs_dim=I + [0], act_dim=I + [0], reward_scale=R + [0], pa_alpha=R + [-1], r_min=R,
              pa_distance=R + [1.0], gamma=R + [1.5], seed=[-1, NAN])),
        ("pars", PA.scripted_pointmass, dict(obs=np.zeros((2, 6))),
         dict(obs=[None, "o", np.zeros((2, 5)), np.zeros((2, 0)), np.full((2, 6), NAN), np.zeros((2, 2, 6))],
              coverage=R + [-0.1, 1.5])),
        ("pars", PA.collect_dataset, dict(n=4, num_envs=2),
         dict(n=I + [0], coverage=R + [0], noise=R + [-1], seed=[-1, NAN], num_envs=I + [0],
              policy=[None, 3, "random"], env_id=["Nope"])),
        ("pars", PA.fit_toy_critic, dict(layer_norm=True, reward_scale=1.0, pa_alpha=0.1, steps=1, hidden=(4,),
                                         n_data=8),
         dict(reward_scale=R + [0], pa_alpha=R + [-1], pa_distance=R + [1.0], steps=I + [0], hidden=[(), (0,)],
              n_data=I + [0], lr=R + [0], seed=[-1, NAN])),
        ("pars", PA.toy_extrapolation, dict(net=crit, reward_scale=1.0),
         dict(net=[None, "n"], reward_scale=R + [0, -1], grid=["g", [NAN, 1.0], [0.1, 0.2]], pa_distance=R + [0.5])),
        ("pars", PA.ood_gap, dict(agent=PA.PARS(6, 2, hidden=(4,)), obs=np.zeros((2, 6), np.float32), points=3),
         dict(agent=[None, crit], obs=[None, np.zeros((2, 5)), np.full((2, 6), NAN), np.zeros((0, 6))],
              points=I + [1], support=R + [2.0], ood=R + [-1])),
        ("pars", PA.toy_q, dict(a=np.linspace(-1, 1, 5)), dict()),
        ("pars", PA.experiment, dict(), dict(scale=[None, "huge"], seed=[-1, NAN, 2**64])),
        # ---------------------------------------------------------------- safety/versaprm
        ("versaprm", VP.sample_problems, dict(domain="arith", n=2), dict(domain=[None, "chess", 3], n=I + [0],
                                                                          seed=[-1, NAN], stream=[-1, NAN, None])),
        ("versaprm", VP.step_checks, dict(cot=cots[0], problem=probs[0]), dict(cot=[None, "c"], problem=[None, "p"])),
        ("versaprm", VP.label_first_error, dict(cot=cots[0], problem=probs[0]), dict(cot=[None], problem=[3])),
        ("versaprm", VP.NoisySolver, dict(slip=0.1), dict(slip=R + [-0.1, 1.0], trap=[(NAN, 1), (0.9, 0.1), (0, 2)],
                                                          seed=[-1, NAN])),
        ("versaprm", solver.generate, dict(problem=probs[0], n=2), dict(problem=[None, "p"], n=I + [0],
                                                                        stream=[-1, NAN])),
        ("versaprm", VP.encode_cot, dict(problem=probs[0], cot=cots[0]), dict()),
        ("versaprm", VP.prm_inputs, dict(problems=[probs[0]] * 2, cots=cots, first_errors=firsts),
         dict(problems=[None, [], "pp", [probs[0]]], cots=[None, [cots[0]], ["a", "b"]],
              first_errors=[[0], [-2, 0], [NAN, 0], ["a", "b"]])),
        ("versaprm", VP.WindowLM, dict(window=3, d=4, hidden=8),
         dict(vocab_size=I + [0], window=I + [0], d=I + [0], hidden=I + [0], context=[0, NAN])),
        ("versaprm", lm.forward, dict(idx=ids), dict(idx=[None, ids.float(), ids + 1000, ids - 100, ids[0]])),
        ("versaprm", VP.prm_loss, dict(model=lm, ids=ids, labels=labels),
         dict(model=[None, "m"], ids=[None, ids.float(), ids[:1]], labels=[None, labels * 0 - 100, labels + 5,
                                                                          labels.float()])),
        ("versaprm", VP.train_prm, dict(model=lm, ids=ids, labels=labels, steps=1, batch_size=2),
         dict(model=[None], ids=[None, ids[:1]], labels=[None, labels[:1], labels * 0 - 100], steps=I + [0],
              lr=R + [0, -1], batch_size=I + [0], seed=[-1, NAN])),
        ("versaprm", VP.step_scores, dict(model=lm, problems=[probs[0]] * 2, cots=cots),
         dict(model=[None], problems=[None, []], cots=[None, cots[:1]], chunk=Ismall + [0])),
        ("versaprm", VP.aggregate, dict(step_scores=[0.1, 0.5]),
         dict(step_scores=[None, "0.5", [], np.array([]), [NAN], 0.5, {"a": 1}, [[0.1], "x"]], how=[None, "max", 3])),
        ("versaprm", VP.majority_vote, dict(answers=["a", "b", "a"]), dict(answers=[[]])),
        ("versaprm", VP.weighted_majority_vote, dict(answers=["a", "b"], weights=[1.0, 2.0]),
         dict(answers=[[]], weights=[None, [1.0], [NAN, 1.0], [INF, 1.0], "ab"])),
        ("versaprm", VP.best_of_n, dict(answers=["a", "b"], scores=[0.1, 0.9]),
         dict(answers=[[]], scores=[None, [0.1], [NAN, 0.1]])),
        ("versaprm", VP.vote_accuracy, dict(answers=["a", "b", "a"], correct=[1, 0, 1]),
         dict(answers=[[]], correct=[[1], [[1, 0, 1]]], weights=[[NAN] * 3, [1.0]])),
        ("versaprm", VP.best_of_n_exact, dict(scores=[0.1, 0.9, 0.5], correct=[1, 0, 1], n=2),
         dict(scores=[None, [], [NAN, 1, 1], [[0.1, 0.9, 0.5]]], correct=[[1]], n=I + [0, 4])),
        ("versaprm", VP.subset_vote_accuracy, dict(answers=[["a", "b", "a"]], correct=[[1, 0, 1]], n=2),
         dict(answers=[None, ["a", "b"]], correct=[[[1, 0]]], n=I + [0, 4])),
        ("versaprm", VP.subset_wmv_accuracy, dict(answers=[["a", "b", "a"]], correct=[[1, 0, 1]],
                                                  weights=[[1.0, 2.0, 0.5]], n=2),
         dict(answers=[None], weights=[None, [[NAN, 1.0, 1.0]], [[1.0, 1.0]]], n=I + [0, 4])),
        ("versaprm", VP.hold_out, dict(train=([probs[0]] * 2, cots, firsts), evaluation=([probs[1]], cots[:1], [0])),
         dict(train=[None, (1, 2), "abc"], evaluation=[None, (1,)])),
        ("versaprm", VP.overlap, dict(train=([probs[0]] * 2, cots, firsts), evaluation=([probs[1]], cots[:1], [0])),
         dict(train=[None, "abc"], evaluation=[None, 5])),
        ("versaprm", VP.experiment, dict(), dict(scale=[None, "huge"], seed=[-1, NAN, 2**64])),
        # ---------------------------------------------------------------- efficient/pipeline
        ("pipeline", PL.synthetic_profile, dict(kind="chain", n_nodes=8),
         dict(kind=[None, "mlp", 3], n_nodes=I + [7], seed=[-1, NAN, 2**64])),
        ("pipeline", PL.Profile, dict(t_fwd=[1.0, 1.0], t_bwd=[2.0, 2.0], param_bytes=[1.0, 1.0], act_bytes=[1.0, 1.0],
                                      edges=[(0, 1)], edge_bytes=[1.0]),
         dict(t_fwd=[[1.0], [NAN, 1.0], [-1.0, 1.0]], t_bwd=[[1.0], [INF, 1.0]], edges=[[(1, 0)], [(0, 5)]],
              edge_bytes=[[NAN], [1.0, 2.0]], input_bytes=R + [-1])),
        ("pipeline", PL.pfeife_schedule, dict(loop_batch=2, prefetch_fwd=1), dict(loop_batch=Ismall + [0], prefetch_fwd=Ismall)),
        ("pipeline", PL.schedule_order, dict(schedule="1f1b", n_stages=2, n_devices=2, n_micro=4),
         dict(schedule=[None, "zb"], n_stages=I + [0], n_devices=I + [0], n_micro=I + [0])),
        ("pipeline", PL.pfeife_schedules, dict(n_stages=4, n_devices=2, n_micro=4),
         dict(n_stages=I + [1], n_devices=I + [0], n_micro=I + [0])),
        ("pipeline", PL.schedule_template, dict(schedule="1f1b", n_stages=2, n_devices=2, n_micro=2),
         dict(schedule=[None, "x", [[(0, 0, True)]]], n_micro=I + [0], pairs=[None, "some"])),
        ("pipeline", PL.plan_weights, dict(profile=prof, splits=[4], template=tpl),
         dict(profile=[None, "p"], splits=[None, [0], [8], [4.5], [[4, 2]], "a"], template=[None, 3],
              bandwidth=R + [0], latency=R + [-1], routing=[None, "ring"])),
        ("pipeline", PL.plan_memory, dict(profile=prof, splits=[4], template=tpl),
         dict(profile=[None], splits=[None, [9]], template=[None], routing=["ring"])),
        ("pipeline", PL.evaluate_plans, dict(profile=prof, splits=[4], template=tpl),
         dict(profile=[None], splits=[[-1]], template=[None], bandwidth=R + [0], backend=[None, "gpu"])),
        ("pipeline", PL.simulate, dict(profile=prof, splits=[4], n_devices=2, n_micro=2),
         dict(profile=[None], splits=[[9], [NAN]], n_devices=I + [0], n_micro=I + [0], schedule=[None, "x"],
              bandwidth=R + [0], latency=R + [-1])),
        ("pipeline", PL.schedule_times, dict(profile=prof, splits=[4], n_devices=2, n_micro=2),
         dict(profile=[None], splits=[[0]], n_micro=I + [0], bandwidth=R + [0])),
        ("pipeline", PL.plan_even, dict(profile=prof, n_stages=2), dict(profile=[None, "p"], n_stages=I + [0, 9])),
        ("pipeline", PL.plan_random, dict(profile=prof, n_stages=2, rng=rng0()),
         dict(profile=[None], n_stages=I + [0, 9], rng=[None, 3])),
        ("pipeline", PL.plan_balanced, dict(profile=prof, n_stages=2), dict(profile=[None], n_stages=I + [0, 9])),
        ("pipeline", PL.plan_time_balanced, dict(profile=prof, n_stages=2), dict(profile=[None], n_stages=I + [0, 9])),
        ("pipeline", PL.plan_dp, dict(profile=prof, n_devices=2, n_micro=2),
         dict(profile=[None], n_devices=I + [0], n_micro=I + [0], schedule=[None, "x"], capacity=[NAN, -1.0, "c"],
              bandwidth=R + [0])),
        ("pipeline", PL.min_peak_memory, dict(profile=prof, n_devices=2, n_micro=2),
         dict(profile=[None], n_devices=I + [0], n_micro=I + [0], schedule=["x"])),
        ("pipeline", PL.plan_search, dict(profile=prof, n_devices=2, n_micro=2, max_iter=2),
         dict(profile=[None], n_devices=I + [0], n_micro=I + [0], schedules=[None, ("x",), ()], capacity=[NAN, -1.0],
              beam_width=I + [0], window=I + [0], max_iter=I + [-1], invalid=[None, "keep"], backend=["gpu"])),
        ("pipeline", PL.plan_pfeife, dict(profile=prof, n_devices=2, n_micro=2, max_iter=2),
         dict(profile=[None], n_devices=I + [0], n_micro=I + [0], stage_multiples=[None, (), (0,), (NAN,)],
              capacity=[NAN], invalid=["x"], max_iter=I)),
        ("pipeline", PL.plan_exhaustive, dict(profile=prof, n_devices=2, n_micro=2),
         dict(profile=[None], n_devices=I + [0], n_micro=I + [0], max_plans=Ismall + [0], capacity=[-1.0])),
        ("pipeline", PL.MLPChain, dict(widths=(3, 4)), dict(widths=[None, "ab", (3,), (3, 0), (3, NAN), (3, 10**12)])),
        ("pipeline", PL.SkipMLP, dict(d_in=3, widths=(4, 2), d_out=2),
         dict(d_in=I + [0], widths=[None, "ab", (), (4, 0), (4, 10**12)], d_out=I + [0])),
        ("pipeline", PL.bubble_model_time, dict(profile=prof, plan=plan, bandwidth=1e9, latency=1e-5),
         dict(profile=[None], plan=[None, (4,), PL.Plan((9,), "1f1b", 2, 2, 2)], bandwidth=R + [0, -1],
              latency=R + [-1])),
        ("pipeline", PL.experiment, dict(), dict(scale=[None, "huge"], seed=[-1, NAN, 2**64])),
    ]
    return S


SPECS = None


def _get_specs():
    global SPECS
    if SPECS is None:
        SPECS = _specs()
    return SPECS


# experiments and other long calls: only their bad arguments are tried (the good call is the chapter's own test)
SKIP_GOOD = {"experiment", "compare_with_schedulefree", "noisy_digits", "corridor_alpha_c", "approx_timings",
             "copies_needed", "collect_dataset", "occluded_digits", "alpha_star", "toy_example_alpha_star"}


@pytest.mark.parametrize("module", ["gale", "schedulefree", "maxent", "pcl", "adaptive_sketch", "pars", "versaprm",
                                    "pipeline"])
def test_hostile_inputs(module):
    "Every bad value of every argument listed is refused by a one-line ValueError/TypeError naming the argument."
    n_cases = 0
    for mod, fn, good, bad in _get_specs():
        if mod != module:
            continue
        name = getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))
        cover(mod, name)
        if fn.__name__ not in SKIP_GOOD:
            kind, value = outcome(fn, **good)
            assert kind == "ok", f"{name}: the good call was refused: {value}"
        for arg, values in bad.items():
            for v in values:
                try:  # as fuzzutil.refuses_each, one case at a time so that a failure names the argument and value
                    n_cases += refuses_each(fn, good, {arg: [v]}, timeout=20)
                except AssertionError as e:
                    raise AssertionError(f"{name}({arg}={v!r:.60}): {e}") from None
    assert n_cases > 0


def test_functions_covered():
    "The sweep's count of public functions (and methods) per module; every module's public API is listed."
    specs = _get_specs()
    names = {}
    for mod, fn, _, _ in specs:
        names.setdefault(mod, set()).add(getattr(fn, "__qualname__", fn.__name__))
    total = sum(len(v) for v in names.values())
    assert total >= 150, names
    for mod, module in (("gale", GA), ("schedulefree", SF), ("maxent", ME), ("pcl", PC), ("adaptive_sketch", AS),
                        ("pars", PA), ("versaprm", VP), ("pipeline", PL)):
        public = {n for n in module.__all__ if callable(getattr(module, n)) and n != "plots"
                  and not isinstance(getattr(module, n), (dict, tuple)) and not n.isupper()}
        listed = {q.split(".")[0] for q in names[mod]}
        missing = public - listed - {"Objective", "abs_well", "abs_ridge", "Domain", "Problem", "CoT", "Template",
                                     "Plan", "SACAdaEnt", "first_action", "branch_probability", "corridor_failure_rate",
                                     "profile_graph", "split_graph", "run_pipeline", "contiguous_grad", "toy_q"}
        assert not missing, (mod, sorted(missing))


# ============================================================ property-based: equivalent inputs give the same answer
FLOATS = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


@settings(max_examples=25)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 5), st.integers(1, 4)), elements=FLOATS), st.sampled_from([1.0, 1e-9, 1e9]))
def test_min_norm_point_properties(G, scale):
    "In the hull (a convex combination: no farther from 0 than any row), scale-equivariant, float32 / list / "
    "non-contiguous inputs give the float64 answer."
    p = SF.min_norm_point(G)
    assert np.isfinite(p).all()
    assert np.linalg.norm(p) <= np.linalg.norm(G, axis=1).min() * (1 + 1e-9) + 1e-12
    q = SF.min_norm_point(G * scale)
    assert np.allclose(q, p * scale, rtol=1e-6, atol=1e-9 * scale * (1 + np.abs(G).max()))
    assert same(SF.min_norm_point(G.tolist()), p)
    assert same(SF.min_norm_point(non_contiguous(G)), p)
    g32 = G.astype(np.float32)
    assert same(SF.min_norm_point(g32), SF.min_norm_point(g32.astype(np.float64)))


@settings(max_examples=25)
@given(st.integers(2, 8), st.integers(1, 3), st.floats(1e-4, 2.0), st.integers(0, 3))
def test_gale_losses_properties(n, d, tau, seed):
    "Finite for every tau in (0, 2] and float32; the float32 loss is the float64 one to float32 rounding (relative "
    "to 1/tau, the scale of the logits); the classes' dtype does not matter."
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(2, n, d, generator=g, dtype=torch.float64)
    c = np.arange(n) % 2
    for fn, args in ((GA.equivalence_loss, (c,)), (GA.grace_loss, ())):
        v64, v32 = fn(z, *args, tau=tau), fn(z.float(), *args, tau=tau)
        assert torch.isfinite(v64) and torch.isfinite(v32)
        assert abs(float(v64) - float(v32)) <= 1e-4 * (1 + 1 / tau)
    assert float(GA.equivalence_loss(z, c.astype(np.float32), tau)) == float(GA.equivalence_loss(z, c.tolist(), tau))


@settings(max_examples=25)
@given(hnp.arrays(np.float64, st.integers(1, 6), elements=st.floats(0, 1)), st.sampled_from(["min", "last", "mean",
                                                                                             "product"]))
def test_aggregate_properties(s, how):
    "A 1-D array, its list, float32 copy and non-contiguous view give one float; a list of CoTs gives one per CoT."
    v = VP.aggregate(s, how)
    assert isinstance(v, float) and not math.isnan(v)
    assert VP.aggregate(s.tolist(), how) == v and VP.aggregate(non_contiguous(s), how) == v
    assert VP.aggregate(s.astype(np.float32), how) == pytest.approx(v, rel=1e-6, abs=1e-7)
    assert same(VP.aggregate([s, s[:1]], how), np.array([v, VP.aggregate(s[:1], how)]))


@settings(max_examples=25)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 3)), elements=FLOATS))
def test_rmse_properties(a):
    "rmse of equal shapes: the definition, the same for tensors, arrays and float32; a transposed or flattened "
    "partner is refused (no broadcasting)."
    b = a[::-1].copy()
    ref = math.sqrt(np.mean((a - b) ** 2))
    assert PC.rmse(torch.from_numpy(a), torch.from_numpy(b)) == pytest.approx(ref, rel=1e-12, abs=1e-12)
    assert PC.rmse(a, b) == pytest.approx(ref, rel=1e-12, abs=1e-12)
    assert PC.rmse(non_contiguous(a), b) == pytest.approx(ref, rel=1e-12, abs=1e-12)
    if a.shape[1] > 1 or a.shape[0] > 1:
        bad = b.reshape(-1, 1) if a.shape[1] > 1 else b.reshape(1, -1)
        assert_refused(PC.rmse, torch.from_numpy(a), torch.from_numpy(bad), name="pred")


@settings(max_examples=25)
@given(hnp.arrays(np.float64, st.integers(1, 6), elements=st.floats(-50, 50)), st.floats(0.01, 10), st.integers(0, 5))
def test_noisy_max_properties(counts, eps, seed):
    "An index of counts; the same for a list, an int array (when integral) and a non-contiguous view (same draws)."
    i = AS.noisy_max(counts, eps, np.random.default_rng(seed))
    assert 0 <= i < len(counts)
    assert AS.noisy_max(counts.tolist(), eps, np.random.default_rng(seed)) == i
    assert AS.noisy_max(non_contiguous(counts), eps, np.random.default_rng(seed)) == i
    r = np.round(counts)
    assert AS.noisy_max(r.astype(np.int64), eps, np.random.default_rng(seed)) == \
        AS.noisy_max(r, eps, np.random.default_rng(seed))


@settings(max_examples=25)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.sampled_from([3, 6, 9])), elements=FLOATS),
       st.floats(0, 1))
def test_scripted_pointmass_properties(obs, coverage):
    "Actions in [-coverage, coverage] of width d = obs width / 3; float32 and non-contiguous observations agree."
    a = PA.scripted_pointmass(obs, coverage)
    assert a.shape == (len(obs), obs.shape[1] // 3) and (np.abs(a) <= coverage + 1e-6).all()
    assert same(PA.scripted_pointmass(non_contiguous(obs), coverage), a)
    assert same(PA.scripted_pointmass(obs.tolist(), coverage), a)


@settings(max_examples=15)
@given(st.integers(2, 4), st.integers(2, 5), st.floats(1e-3, 10), st.integers(0, 3))
def test_soft_value_iteration_properties(S, A, alpha, seed):
    "Random deterministic MDPs: a distribution per state, V finite, numpy = njit, int32 / list successors agree."
    rng = np.random.default_rng(seed)
    R = rng.normal(0, 1, (S, A))
    P = rng.integers(-1, S, (S, A))
    V, pi = ME.soft_value_iteration(P, R, alpha, 0.9, 5)
    assert np.isfinite(V).all() and np.allclose(pi.sum(1), 1)
    V2, pi2 = ME.soft_value_iteration(P, R, alpha, 0.9, 5, backend="numpy")
    assert np.allclose(V, V2, rtol=1e-10, atol=1e-10) and np.allclose(pi, pi2, rtol=1e-8, atol=1e-12)
    V3, _ = ME.soft_value_iteration(P.astype(np.int32).tolist(), non_contiguous(R), alpha, 0.9, 5)
    assert same(V3, V)


@settings(max_examples=25)
@given(hnp.arrays(np.bool_, st.integers(1, 20)), st.floats(0.01, 1))
def test_final_error_properties(errors, frac):
    "A rate in [0, 1]: the mean of the last round(frac n) (at least one) errors; lists, 0/1 ints agree."
    v = AS.final_error(errors, frac)
    k = max(1, int(round(frac * len(errors))))
    assert v == pytest.approx(errors[-k:].mean())
    assert AS.final_error(errors.tolist(), frac) == v == AS.final_error(errors.astype(int), frac)
