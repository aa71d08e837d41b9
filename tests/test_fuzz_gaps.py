"""Reliability (fuzz) suite for the public names no other fuzz file exercised (issue 49, helper "gaps"): the gim
model and likelihood API, the mnl kernel's NumPy references, mincut's EdgeList / MinCut / prediction_mask /
warm_start, combimots' MCTS classes, and a few names of crl_sanity, mec, lowra, control and vmf.

Every argument gets hostile values (NaN/inf, strings, None, bools and floats where ints are needed, wrong shapes, ids
out of range, empty and huge sizes): each must give a one-line ValueError/TypeError naming the argument
(`fuzzutil.refuses_each`), never a wrong answer, a NaN, a crash or a hang. Each defect fixed has its own test
(`test_defect_*`); its docstring says what happened before the fix.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from fuzzutil import assert_refused, outcome, refuses_each, same

NAN, INF = float("nan"), float("inf")
BAD_INT = ("3", None, True, 2.5, NAN, INF)
BAD_REAL = (NAN, INF, -INF, "3", None, True)

# ------------------------------------------------------------------------------------------------------------- gim
from icml25nb.causal import gim as GM  # noqa: E402


@pytest.fixture(scope="module")
def gim():
    scm = GM.make_linear_scm(4, 0.5, seed=0)
    data = GM.make_perturbation_family(scm, 4, 2, n_per_context=5, n_obs=20, n_test=5, descriptor_dim=3, seed=0)
    torch.manual_seed(0)
    model = GM.GIM(4, data["feature_dim"], hidden=8)
    X, rows, G = GM._stack_contexts(data["train"])
    return scm, data, model, X, rows, G


def test_defect_gim_constructors():
    """Before: GIM(4, 4, hidden=0) and Unstructured(hidden=0) built a model with empty layers; GIM(prior_logit=nan)
    built one with NaN logits; GIM / Unstructured with d or feature_dim = 1e6 / 1e12: RuntimeError from torch's
    allocator; Unstructured(None / 1.5, 4) and GIM(hidden='3'): torch's 'argument size must be tuple of ints'."""
    assert_refused(GM.GIM, 4, 4, hidden=0, name="hidden")
    assert_refused(GM.GIM, 4, 4, prior_logit=NAN, name="prior_logit")
    assert_refused(GM.GIM, 10**6, 4, name="d", timeout=5)
    assert_refused(GM.GIM, 4, 10**12, name="feature_dim", timeout=5)
    assert_refused(GM.Unstructured, 4, 4, hidden=0, name="hidden")
    assert_refused(GM.Unstructured, 10**6, 4, name="d", timeout=5)
    assert_refused(GM.Unstructured, None, 4, name="d")
    n = refuses_each(GM.GIM, dict(d=3, feature_dim=4, hidden=4), dict(
        d=BAD_INT + (0, -1, 10**12), feature_dim=BAD_INT + (1, 10**12), hidden=BAD_INT + (0, 10**12),
        prior_logit=BAD_REAL))
    n += refuses_each(GM.Unstructured, dict(d=3, feature_dim=4, hidden=4), dict(
        d=BAD_INT + (0, 10**12), feature_dim=BAD_INT + (0, 10**12), hidden=BAD_INT + (0, 10**12)))
    assert n >= 55


def test_defect_gim_model_api(gim):
    """Before: GIM.intervention of NaN features returned NaN logits, of strings a torch message naming nothing;
    acyclicity of a (2, 3) tensor: RuntimeError, of NaN: nan; context_stats with an all-padding context: NaN means,
    with rows of the wrong shape: RuntimeError; context_loglik(None, ...), with a model of another d or gamma with
    another number of contexts: AttributeError / RuntimeError; context_loglik(shared='no') ran the shared path."""
    scm, data, model, X, rows, G = gim
    assert_refused(model.intervention, np.full((1, 4), NAN), name="features")
    assert_refused(model.intervention, "a", name="features")
    assert_refused(GM.acyclicity, torch.zeros(2, 3), name="W")
    assert_refused(GM.acyclicity, torch.full((2, 2), NAN), name="W")
    assert_refused(GM.context_stats, X, torch.zeros_like(rows), name="rows")
    assert_refused(GM.context_stats, X, rows[:, :2], name="rows")
    assert_refused(GM.context_loglik, None, X, rows, G, name="model")
    assert_refused(GM.context_loglik, GM.GIM(3, 4, hidden=8), X, rows, G, name="X")
    for shared in (True, False):
        assert_refused(GM.context_loglik, model, X, rows, G[:2], shared=shared, name="gamma")
    assert_refused(GM.context_loglik, model, X, rows, G, shared="no", name="shared")
    n = refuses_each(model.intervention, dict(gamma=G), dict(
        gamma=(None, "a", G[0], G[:, :2], G * NAN, np.zeros((2, 3)))), name_in_message=False)
    n += refuses_each(GM.acyclicity, dict(W=torch.zeros(3, 3)), dict(
        W=(None, np.zeros((3, 3)), torch.zeros(3), torch.zeros(2, 3), torch.full((2, 2), INF), "W")))
    n += refuses_each(GM.context_stats, dict(X=X, rows=rows), dict(
        X=(None, X.numpy(), X[0], X * NAN), rows=(None, rows.numpy(), rows[:, :2], rows * 0.5, rows * 0, rows[0])))
    n += refuses_each(GM.context_loglik, dict(model=model, X=X, rows=rows, gamma=G), dict(
        model=(None, "GIM", GM.Unstructured(4, 4, 4)), X=(None, X[..., :3], X * NAN, X[0]),
        rows=(rows[:, :3], rows * 0), shared=("no", None, 1)))
    assert n > 25
    # valid calls unchanged: the statistics by hand, and the shared / per-sample likelihoods agree with each other
    cnt, mean, S = GM.context_stats(X, rows)
    assert torch.equal(cnt, rows.sum(1))
    x0 = X[0][rows[0] > 0]
    torch.testing.assert_close(mean[0], x0.mean(0))
    torch.testing.assert_close(S[0], (x0 - x0.mean(0)).T @ (x0 - x0.mean(0)), rtol=1e-4, atol=1e-4)
    with torch.no_grad():
        assert torch.isfinite(GM.context_loglik(model, X, rows, G)).all()
    assert float(GM.acyclicity(torch.zeros(3, 3))) == 0.0


def test_defect_gim_data_api(gim):
    """Before: shift_statistics({'train': ...}) raised KeyError, with empty or NaN observational samples returned
    NaN; shift_sparsity_order(restarts=1e12) ran for ever; training_nll(None, data) / of a model with another d:
    AttributeError / RuntimeError, training_nll(shared='x') ran; loglik_bruteforce(None, ...) / (model, None) /
    with a context of another d: AttributeError / RuntimeError; interventional_moments(None) / (scm, 'x'):
    AttributeError; supervised_targets(Cs=[-1]) and (Cs=[nan]) returned probabilities (sklearn fitted with an
    invalid C), Cs=[] gave 'need at least one array to stack', split=[1]: 'unhashable type'."""
    scm, data, model, X, rows, G = gim
    assert_refused(GM.shift_statistics, {"train": data["train"]}, name="data")
    assert_refused(GM.shift_statistics, {**data, "observational": np.zeros((0, 4))}, name="observational")
    assert_refused(GM.shift_statistics, {**data, "observational": np.full((5, 4), NAN)}, name="observational")
    assert_refused(GM.shift_sparsity_order, data, 10**12, name="restarts", timeout=5)
    assert_refused(GM.training_nll, None, data, name="model")
    assert_refused(GM.training_nll, GM.GIM(3, 4, hidden=8), data, name="model")
    assert_refused(GM.training_nll, model, data, shared="x", name="shared")
    assert_refused(GM.loglik_bruteforce, None, data["ood"][0], name="model")
    assert_refused(GM.loglik_bruteforce, model, None, name="context")
    assert_refused(GM.loglik_bruteforce, GM.GIM(3, 4, hidden=8), data["ood"][0], name="context")
    assert_refused(GM.interventional_moments, None, name="scm")
    assert_refused(GM.interventional_moments, scm, "x", name="intervention")
    for Cs in ([-1.0], [NAN], [], "1", [[1.0]]):
        assert_refused(GM.supervised_targets, data, Cs=Cs, name="Cs")
    assert_refused(GM.supervised_targets, data, split=[1], name="split")
    obs = data["observational"]
    n = refuses_each(GM.shift_statistics, dict(data=data), dict(data=(
        None, [], {**data, "observational": obs[:, :3]}, {**data, "observational": obs[0]},
        {**data, "observational": "x"}, {**data, "train": []}, {**data, "train": [1, 2]})))
    n += refuses_each(GM.shift_sparsity_order, dict(data=data, restarts=1), dict(
        restarts=BAD_INT + (0, -1, 10**12), seed=(-1, "0", None, 1.5, 2**64)))
    n += refuses_each(GM.training_nll, dict(model=model, data=data), dict(
        model=(None, "m", GM.GIM(5, 4, hidden=4), GM.GIM(4, 5, hidden=4)), shared=(None, "x", 1)), name_in_message=False)
    n += refuses_each(GM.loglik_bruteforce, dict(model=model, context=data["ood"][0]), dict(
        model=(None, "m"), context=(None, "c", data)))
    n += refuses_each(GM.supervised_targets, dict(data=data), dict(
        split=("observational", "nope", None, 1), Cs=([0.0], [INF], [], None)))
    n += refuses_each(GM.mmd_rbf, dict(X=obs, Y=obs[:10], sigma=1.0), dict(
        X=(None, obs[:, :2], obs * NAN, obs[:0], "x"), Y=(None, obs[:, :2], obs * NAN), sigma=(0.0, -1.0) + BAD_REAL[:4]),
        name_in_message=False)
    n += refuses_each(GM.notears_variant, dict(scale="fast", seed=0), dict(
        scale=("x", None, 1), seed=(-1, "0", None, 1.5, 2**64)), name_in_message=False)
    assert n > 40
    # valid calls answer as before: the moments match the sample moments, the NLL is finite
    mu, cov = GM.interventional_moments(scm)
    x = GM.sample_scm(scm, None, 20000, seed=1)
    assert np.allclose(x.mean(0), mu, atol=0.05) and np.allclose(np.cov(x.T), cov, atol=0.1)
    kind, val = outcome(GM.training_nll, model, data)
    assert kind == "ok" and np.isfinite(val)
    C, D, N = GM.shift_statistics(data)
    assert C.shape == (4, 4) and D.shape == (len(data["train"]), 4) and N == 20 + sum(len(c.x) for c in data["train"])
    order, score = GM.shift_sparsity_order(data, restarts=1)
    assert sorted(order) == [0, 1, 2, 3] and np.isfinite(score)
    assert np.isfinite(GM.loglik_bruteforce(model, data["ood"][0]))


# ------------------------------------------------------------------------------------------ kernels.mnl references
from icml25nb.kernels import mnl as MK  # noqa: E402


@pytest.fixture(scope="module")
def mnlref():
    rng = np.random.default_rng(0)
    XS, theta = rng.normal(size=(3, 2)), rng.normal(size=2)
    A = rng.normal(size=(2, 2))
    H = A @ A.T + np.eye(2)
    return XS, theta, H, np.linalg.inv(H)


def test_defect_mnl_refs(mnlref):
    """Before: probs_ref / hessian_factor_ref with theta (d, 1) broadcast into (k, 1) utilities and answered with
    arrays of the wrong shape; grad_hessian_ref(choice=-2) took the second-to-last row as the choice (negative
    wrap-around), choice=3 / 1.5: IndexError; probs_ref of an empty XS: numpy's 'zero-size array' message;
    woodbury_ref(c=0): ZeroDivisionError-like inf, c=nan: NaN; woodbury_ref with U of the wrong row count: numpy's
    matmul message; project_ref(B=nan) returned theta_p unchanged (outside any ball), B=0: division by zero,
    a non-symmetric Htilde: eigh read one triangle and answered for another matrix, a singular Htilde: NaN."""
    XS, theta, H, Hinv = mnlref
    for fn in (MK.probs_ref, MK.hessian_factor_ref):
        assert_refused(fn, XS, theta[:, None], name="theta")
        assert_refused(fn, XS[:0], theta, name="XS")
    for choice in (-2, 3, 1.5, True, "0"):
        assert_refused(MK.grad_hessian_ref, XS, theta, choice, name="choice")
    U = MK.hessian_factor_ref(XS, theta)
    for c in (0.0, NAN, -1.0, "1"):
        assert_refused(MK.woodbury_ref, Hinv, U, c, name="c")
    assert_refused(MK.woodbury_ref, Hinv, U[:1], 1.0, name="U")
    far = 10 * theta / np.linalg.norm(theta)
    for B in (NAN, 0.0, -1.0, "1", None):
        assert_refused(MK.project_ref, H, far, B, name="B")
    assert_refused(MK.project_ref, H + np.triu(np.ones((2, 2)), 1), far, 1.0, name="Htilde")
    assert_refused(MK.project_ref, np.zeros((2, 2)), far, 1.0, name="Htilde")
    assert_refused(MK.project_ref, H, far[:, None], 1.0, name="theta_p")


def test_mnl_refs_refuse_each_and_answer_as_before(mnlref):
    XS, theta, H, Hinv = mnlref
    bad_rows = (None, "x", XS[0], XS * NAN, XS[:0], XS[:, :1], np.zeros((3, 2, 1)))
    bad_theta = (None, "x", theta[:1], theta[:, None], theta * INF, np.r_[theta, 0.0])
    n = refuses_each(MK.probs_ref, dict(XS=XS, theta=theta), dict(theta=bad_theta))
    n += refuses_each(MK.hessian_factor_ref, dict(XS=XS, theta=theta), dict(theta=bad_theta))
    n += refuses_each(MK.grad_hessian_ref, dict(XS=XS, theta=theta, choice=0), dict(
        theta=bad_theta, choice=(-2, 3, 10**12, 1.5, True, None, NAN, "0")))
    for fn, kw in ((MK.probs_ref, {}), (MK.hessian_factor_ref, {}), (MK.grad_hessian_ref, dict(choice=0))):
        for v in bad_rows:  # a wrong XS may be named as XS or, where XS fixes d, theta
            err = assert_refused(fn, v, theta, **kw)
            assert "XS" in str(err) or "theta" in str(err), err
            n += 1
    U = MK.hessian_factor_ref(XS, theta)
    n += refuses_each(MK.woodbury_ref, dict(Hinv=Hinv, U=U, c=1.0), dict(
        Hinv=(None, Hinv[0], Hinv[:1], Hinv * NAN, np.zeros((0, 0))), U=(None, U[:1], U[0], U * NAN),
        c=(0.0, -1.0) + BAD_REAL))
    far = 10 * theta / np.linalg.norm(theta)
    n += refuses_each(MK.project_ref, dict(Htilde=H, theta_p=far, B=1.0), dict(
        Htilde=(None, H[0], H[:1], H * NAN, -H, H + np.triu(np.ones((2, 2)), 1)),
        theta_p=(None, far[:1], far[:, None], far * NAN, far[:0]), B=(0.0, -1.0, NAN, -INF, "3", None, True)))
    assert n > 60
    # valid calls: the same answers as the formulas (and as before the checks)
    u = XS @ theta
    z = 1.0 + np.exp(u).sum()
    p, p0 = MK.probs_ref(XS, theta)
    assert np.allclose(p, np.exp(u) / z) and np.isclose(p0, 1 / z)
    g, G = MK.grad_hessian_ref(XS, theta, -1)
    assert np.allclose(g, p @ XS) and np.allclose(G, U @ U.T)
    assert np.allclose(MK.woodbury_ref(Hinv, U, 0.5), np.linalg.inv(H + 0.5 * U @ U.T))
    v = MK.project_ref(H, far, 1.0)
    assert np.isclose(np.linalg.norm(v), 1.0) and np.array_equal(MK.project_ref(H, far, INF), far)
    # equivalent inputs: lists, float32, non-contiguous, int give the float64 answer
    from fuzzutil import non_contiguous
    for XS2 in (XS.tolist(), non_contiguous(XS)):
        assert same(MK.probs_ref(XS2, theta), (p, p0))
    assert same(MK.project_ref(non_contiguous(H), far.tolist(), 1), v)


# ---------------------------------------------------------------------------------------------------------- mincut
import networkx as nx  # noqa: E402

from icml25nb.algorithms import mincut as MC  # noqa: E402


@pytest.fixture(scope="module")
def ring():
    G = MC.ring_of_cliques(4, 3, 2, 1, seed=0)
    return G, MC.as_edge_list(G)


def test_defect_mincut_records_and_masks(ring):
    """Before: EdgeList(n='3', ...) and EdgeList with ids >= n were accepted (the kernels then read out of range);
    MinCut(nan, ...) held a NaN value; prediction_mask(None, ...): AttributeError; prediction_mask with the G of
    another graph (a 3-node path for a 18-edge ring) answered a mask built from the wrong edge list;
    prediction_mask(el, G, 5): 'int object is not iterable' naming nothing; warm_start([]) / warm_start([G]):
    NaN ratios; warm_start([1, 2]): AttributeError."""
    G, el = ring
    a = dict(n=el.n, src=el.src, dst=el.dst, w=el.w, nodes=el.nodes, keep=el.keep, m_input=el.m_input)
    assert_refused(MC.EdgeList, **{**a, "n": "3"}, name="n")
    assert_refused(MC.EdgeList, **{**a, "src": el.src + el.n}, name="src")
    assert_refused(MC.MinCut, NAN, np.zeros(3, bool), 1, name="value")
    assert_refused(MC.prediction_mask, None, G, [(0, 1)], name="el")
    assert_refused(MC.prediction_mask, el, nx.path_graph(3), [(0, 1)], name="G")
    assert_refused(MC.prediction_mask, el, G, 5, name="predictions")
    assert_refused(MC.warm_start, [], 10, 0, name="instances")
    assert_refused(MC.warm_start, [G], 10, 0, name="instances")
    assert_refused(MC.warm_start, [1, 2], 10, 0, name="instances")


def test_mincut_refuses_each_and_answers_as_before(ring):
    G, el = ring
    a = dict(n=el.n, src=el.src, dst=el.dst, w=el.w, nodes=el.nodes, keep=el.keep, m_input=el.m_input)
    n = refuses_each(MC.EdgeList, a, dict(
        n=BAD_INT + (1, 0, -1, el.n + 1), src=(None, "x", el.src[:-1], el.src - 1, el.src + 0.5, el.src[:, None]),
        dst=(None, el.dst[:-1], el.dst + el.n), w=(None, el.w[:-1], el.w * NAN, -el.w, el.w[:, None]),
        keep=(None, el.keep[:-1], el.keep + el.m_input), m_input=BAD_INT + (-1, len(el.keep) - 1),
        nodes=(None, el.nodes[:-1], 5)))
    good = dict(value=2.0, side=np.array([True, False, True]), trials=3)
    n += refuses_each(MC.MinCut, good, dict(
        value=BAD_REAL + (-1.0,), side=(None, "x", np.array([0.5, 1.0]), np.array([2, 0]), np.zeros((2, 2))),
        trials=BAD_INT + (-1,), method=("nope", None, 1)))
    mask = np.zeros(G.number_of_edges(), bool)
    n += refuses_each(MC.prediction_mask, dict(el=el, G=G, predictions=mask), dict(
        el=(None, G, "el"), G=(None, "G", nx.path_graph(3), nx.DiGraph(G)),
        predictions=(5, 1.5, mask[:-1], np.r_[mask, mask], [(0, 99)], [0.5], [(0,)], "ab")), name_in_message=False)
    n += refuses_each(MC.warm_start, dict(instances=[G, G], trials=5, seed=0), dict(
        instances=(None, [], [G], [G, 1], "GG", [G, nx.DiGraph(G)]), trials=BAD_INT + (0, -1, 10**12),
        seed=(-1, "0", None, 1.5, 2**64)), name_in_message=False)
    assert n > 60
    # valid calls: as before the checks
    assert np.array_equal(MC.prediction_mask(el, G, mask), mask[el.keep])
    edges = list(G.edges)[:2]
    m2 = MC.prediction_mask(el, G, edges)
    assert m2.sum() == 2 and np.array_equal(MC.prediction_mask(el, G, mask.astype(int)), mask[el.keep])
    b = MC.EdgeList(**a)
    assert b.n == el.n and b.src is el.src
    cut = MC.min_cut(G, trials=20, seed=0)
    assert cut == MC.MinCut(cut.value, cut.side, cut.trials, cut.method)
    out = MC.warm_start([G, G, G], 20, 0)
    assert np.isfinite(out["ratio"]) and len(out["plain"]) == 3


# ------------------------------------------------------------------------------------------------------- combimots
from icml25nb.generative import combimots as CM  # noqa: E402


@pytest.fixture(scope="module")
def cmspace():
    return CM.library_space(CM.draw_library(6, 0))


def test_defect_combimots_diversity_penalty(cmspace):
    """Before: ParetoMCTS / ScalarMCTS / MeanObjectiveMCTS(diversity_penalty='no') searched *with* the penalty
    (bool('no') is True), diversity_penalty=nan likewise. Now refused, naming it."""
    for cls in (CM.ParetoMCTS, CM.ScalarMCTS, CM.MeanObjectiveMCTS):
        for v in ("no", NAN, None, 0.5):
            assert_refused(cls, cmspace, diversity_penalty=v, name="diversity_penalty")


def test_combimots_searches_refuse_each(cmspace):
    def obj1(s):
        return np.array([1.0])
    n = 0
    for cls in (CM.ScalarMCTS, CM.MeanObjectiveMCTS):
        n += refuses_each(cls, dict(space=cmspace), dict(
            space=(None, "x", CM.draw_library(6, 0)), objectives=(None, 3, "f"), c=(-1.0,) + BAD_REAL,
            max_reactions=(0, -1) + BAD_INT, diversity_penalty=("yes", None, 1.5),
            seed=(-1, "0", None, 1.5, 2**64)), name_in_message=False)
        search = cls(cmspace, seed=0)
        n += refuses_each(search.run, dict(n_rollouts=1), dict(n_rollouts=(-1,) + BAD_INT))
        # objectives that return NaN, an empty vector or a matrix are refused when first called
        for bad in (lambda s: np.array([NAN]), lambda s: np.zeros(0), lambda s: np.zeros((2, 2)), lambda s: "x"):
            assert_refused(cls, cmspace, objectives=bad, name="objectives")
            n += 1
        assert cls(cmspace, objectives=obj1, seed=0).run(2) is not None
    n += refuses_each(CM.random_rollouts, dict(space=cmspace, n_rollouts=1), dict(
        space=(None, "x"), objectives=(None, 3), n_rollouts=(-1,) + BAD_INT, max_reactions=(0,) + BAD_INT,
        seed=(-1, "0", None, 1.5)), name_in_message=False)
    assert n > 60
    # valid calls: deterministic for a seed, the same as the class they wrap, products finite
    a = CM.random_rollouts(cmspace, n_rollouts=3, seed=1)
    b = CM.RandomRollouts(cmspace, seed=1).run(3)
    assert [p.smiles for p in a] == [p.smiles for p in b]
    assert all(np.isfinite(p.scores).all() for p in a)
    for cls in (CM.ScalarMCTS, CM.MeanObjectiveMCTS):
        x, y = cls(cmspace, seed=2).run(3), cls(cmspace, seed=2, diversity_penalty=np.bool_(True)).run(3)
        assert [p.smiles for p in x] == [p.smiles for p in y]
    blocks = CM.all_building_blocks()
    assert len(blocks) == 60 and len(set(blocks)) == 60
    assert all(CM.canonical_smiles(s) == s for s in blocks)


# ------------------------------------------------------------------------------------------------------ crl_sanity
from icml25nb.causal import crl_sanity as CR  # noqa: E402


def test_defect_crl_sanity():
    """Before: MLPEncoder(groups=0) built an empty encoder, groups=-1 / 1e9 and hidden=1e7: RuntimeError from torch,
    groups='3' / 1.5 / None: 'repeat() takes 1 positional argument'; its forward of an (n, d) or wrong-width input:
    RuntimeError from baddbmm, of NaN: NaN; matched_order with fewer z_hat columns than z: IndexError at an index
    read from np.empty (garbage); ica_baseline(d=1e6) answered with fewer components than asked, X_test of another
    image size: sklearn's message, an empty X_train: 'cannot reshape array of size 0'."""
    for g in (0, -1, "3", 1.5, None, True, 10**9):
        assert_refused(CR.MLPEncoder, 4, 2, 8, g, name="groups", timeout=5)
    assert_refused(CR.MLPEncoder, 4, 2, 10**7, name="hidden", timeout=5)
    enc = CR.MLPEncoder(4, 2, 8, 1)
    for x in (torch.zeros(3, 4), torch.zeros(1, 3, 5), torch.full((1, 3, 4), NAN), np.zeros((1, 3, 4))):
        assert_refused(enc, x, name="x")
    rng = np.random.default_rng(0)
    z, zh = rng.normal(size=(20, 5)), rng.normal(size=(20, 3))
    assert_refused(CR.matched_order, zh, z, name="z_hat")
    X = rng.normal(size=(20, 4, 4, 3))
    assert_refused(CR.ica_baseline, X, X, 10**6, name="d")
    assert_refused(CR.ica_baseline, X, X[:, :2], name="X_test")
    assert_refused(CR.ica_baseline, X[:0], X, name="X_train")


def test_crl_sanity_refuses_each_and_answers_as_before():
    rng = np.random.default_rng(1)
    z = rng.normal(size=(12, 5))
    X = rng.normal(size=(12, 3, 3, 3))
    n = refuses_each(CR.MLPEncoder, dict(d_in=4, d_out=2, hidden=4), dict(
        d_in=BAD_INT + (0, 10**12), d_out=BAD_INT + (0,), hidden=BAD_INT + (0, 10**7), groups=BAD_INT + (0, 10**9),
        seed=(-1, "0", 1.5, 2**64)), timeout=5)
    n += refuses_each(CR.sensor_views, dict(z=z), dict(z=(None, "z", z[:, :4], z * NAN, z[0])))
    n += refuses_each(CR.chance_mcc, dict(X=X, z=z), dict(
        X=(None, "X", X * NAN, X[:5], X[None].repeat(2, 0)), z=(None, z[:5], z * INF),
        hidden=BAD_INT + (0,), seed=(-1, "0")), name_in_message=False)
    n += refuses_each(CR.ica_baseline, dict(X_train=X, X_test=X[:4], d=2), dict(
        X_train=(None, X * NAN, X[:0]), X_test=(None, X[:, :2], X * INF), d=BAD_INT + (0, 10**6), seed=(-1, "0")),
        name_in_message=False)
    n += refuses_each(CR.matched_order, dict(z_hat=z, z=z), dict(
        z_hat=(None, z[:, :2], z * NAN, z[:5], z[0])), name_in_message=False)
    assert n > 50
    # valid calls: unchanged answers (an encoder's output, a permutation recovered, ICA's shape)
    enc = CR.MLPEncoder(4, 2, 8, 2, seed=3)
    x = torch.as_tensor(rng.normal(size=(2, 5, 4)), dtype=torch.float32)
    y = enc(x)
    assert y.shape == (2, 5, 2) and torch.equal(y, CR.MLPEncoder(4, 2, 8, 2, seed=3)(x))
    perm = z[:, [2, 0, 4, 1, 3]]
    assert np.array_equal(CR.matched_order(perm, z), z)
    assert CR.ica_baseline(X, X[:4], 2).shape == (4, 2)
    assert 0.0 <= CR.chance_mcc(X, z) <= 1.0
    views = CR.sensor_views(z)
    assert [v.shape for v in views] == [(12, 3), (12, 1), (12, 1)]


# ------------------------------------------------------------------------------------------------ vmf and control
from icml25nb import control as CT  # noqa: E402
from icml25nb.bandits import vmf as VM  # noqa: E402

_REC = dict(n=30, d=3, T=2, kappa=5.0, users=1, seed=0, trunc_k=5)


def test_defect_vmf_recommender():
    """Before: recommender(T=0): ZeroDivisionError; users=0: NaN mean rewards; trunc_k=0 and users=1e12: still
    running after 10 s; T=1.5: numpy's 'expected a sequence of integers'; seed=-1: an error about seed -992."""
    for kw, name in ((dict(T=0), "T"), (dict(users=0), "users"), (dict(trunc_k=0), "trunc_k"),
                     (dict(users=10**12), "users"), (dict(T=1.5), "T"), (dict(seed=-1), "got -1")):
        assert_refused(VM.recommender, **{**_REC, **kw}, name=name, timeout=5)


def test_defect_load_agent(tmp_path):
    """Before: load_agent(None) / load_agent(5): AttributeError ('no attribute seek'); a missing file:
    FileNotFoundError; a folder: IsADirectoryError; a non-torch file: struct.error; a saved dict without the
    agent's state: KeyError 'hidden'. Now: one-line errors naming path."""
    junk, cfg_only = tmp_path / "junk.pt", tmp_path / "cfg.pt"
    junk.write_text("junk")
    torch.save({"algo": "TD3", "config": {"obs_dim": 3, "act_dim": 2}}, cfg_only)
    for p in (None, 5, tmp_path / "missing.pt", tmp_path, junk, cfg_only):
        assert_refused(CT.load_agent, p, name="path")


def test_vmf_control_refuse_each_and_answer_as_before(tmp_path):
    n = refuses_each(VM.recommender, _REC, dict(
        n=BAD_INT + (0,), d=BAD_INT + (0,), T=BAD_INT + (0, 10**12), kappa=(0.0, -1.0) + BAD_REAL,
        users=BAD_INT + (0, 10**12), seed=(-1, "0", None, 1.5, 2**64), trunc_k=BAD_INT + (0, 31)), timeout=5,
        name_in_message=False)
    A = VM.uniform_catalogue(20, 3, seed=1)
    n += refuses_each(VM.ActionIndex, dict(A=A), dict(
        A=(None, "A", A * NAN, A[:0], 2 * A, A[0]), kind=(None, "ball", 1)), name_in_message=False)
    for kind in ("kdtree", "brute"):
        idx = VM.ActionIndex(A, kind)
        n += refuses_each(idx.query, dict(Q=A[:2]), dict(Q=(None, "Q", A[:, :2], A * NAN, np.zeros((2, 2, 3)))),
                          name_in_message=False)
        n += refuses_each(idx.topk, dict(q=A[0], k=2), dict(
            q=(None, "q", A[:2], A[0, :2], A[0] * NAN), k=BAD_INT + (0, -1, 21)))
        # valid: the nearest neighbour of each action is itself, topk agrees with a sort
        assert np.array_equal(idx.query(A), np.arange(20))
        assert set(idx.topk(A[0], 3)) == set(np.argsort(-(A @ A[0]))[:3])
    n += refuses_each(CT.Agent, dict(obs_dim=3, act_dim=2), dict(
        obs_dim=BAD_INT + (0, 10**12), act_dim=BAD_INT + (0, 10**12), action_low=(NAN, "x", [0, 0, 0], 2.0),
        action_high=(INF, None, -2.0), seed=(-1, "0", 1.5)), name_in_message=False)
    assert n > 80
    out, secs = VM.recommender(**_REC)
    assert set(out) == set(secs) and all(0.0 <= v["mean_reward"] <= 1.0 for v in out.values())
    agent = CT.TD3(3, 2, seed=0)
    path = agent.save(tmp_path / "a.pt")
    back = CT.load_agent(path)
    obs = np.zeros(3, np.float32)
    assert type(back) is CT.TD3 and np.array_equal(back.act(obs, True), agent.act(obs, True))


def test_defect_agent_huge_dims():
    """Before: Agent(3, act_dim=1e12): MemoryError from broadcasting the action bounds (3.6 TiB) before any size
    check. Now refused up front, naming act_dim (obs_dim likewise)."""
    assert_refused(CT.Agent, 3, 10**12, name="act_dim", timeout=5)
    assert_refused(CT.Agent, 10**12, 2, name="obs_dim", timeout=5)


# ------------------------------------------------------------------------------------------------------------- mec
from icml25nb.causal import mec as ME  # noqa: E402


def test_defect_mec_components_and_trees():
    """Before: components_lbfs with a negative V looped for ever (the bit iteration of a negative int never ends),
    with V or K holding bits beyond n: IndexError, with K not inside V: components that contain vertices outside V
    (a wrong answer), with g an nx.Graph: AttributeError; CliqueTree with parent[1] = 5 or lists of different
    lengths: IndexError from neighbours()."""
    G = nx.path_graph(4)
    g = ME._Graph(G)
    assert_refused(ME.components_lbfs, g, -1, 1, name="V", timeout=5)
    assert_refused(ME.components_lbfs, g, 1 << 6, 0, name="V")
    assert_refused(ME.components_lbfs, g, 0b0011, 0b0100, name="K")
    assert_refused(ME.components_lbfs, G, g.all, 1, name="g")
    assert_refused(ME.CliqueTree, [3, 6], [-1, 5], [0, 2], name="parent")
    assert_refused(ME.CliqueTree, [3, 6], [-1], [0, 2], name="parent")


def test_mec_refuses_each_and_answers_as_before():
    G = nx.path_graph(5)
    g = ME._Graph(G)
    n = refuses_each(ME.components_lbfs, dict(g=g, V=g.all, K=0b11), dict(
        g=(None, G, "g"), V=(-1, 1 << 5, "3", None, 1.5, True, 0b1), K=(-1, 1 << 9, "3", None, 2.5, 0b100000),
        counter=("c", 1)), name_in_message=False)
    tree = ME._clique_tree(g, g.all)
    n += refuses_each(ME.CliqueTree, dict(cliques=tree.cliques, parent=tree.parent, sep=tree.sep), dict(
        cliques=(None, "x", tree.cliques[:-1], [0] + tree.cliques[1:], [1.5] * tree.m),
        parent=(None, [0] + tree.parent[1:], tree.parent[:-1], [-1] + [tree.m] * (tree.m - 1), [True] * tree.m),
        sep=(None, tree.sep[:-1], [-1] * tree.m)), name_in_message=False)
    assert n > 25
    # valid calls: the same tree rebuilt, components of a path with its middle edge first: a partition of the rest
    assert ME.CliqueTree(tree.cliques, tree.parent, tree.sep) == tree and len(tree.neighbours()) == tree.m
    comps = ME.components_lbfs(g, g.all, 0b00110)
    union = 0
    for c in comps:  # disjoint vertex sets covering V - K
        assert c and not c & union
        union |= c
    assert union == g.all & ~0b00110 and 0b00001 in comps
    cnt = ME.OpCounter()
    assert ME.components_lbfs(g, g.all, 0b00110, cnt) == comps and cnt.components > 0
