"""Reliability (fuzz) suite for the chapters mincut, mnl, vmf, crl_sanity, gim, mec, lowra and combimots (issue 49).

Every public function a reader would call on their own data is tried as a hostile but fair user would: NaN/inf,
strings, None, bools and floats where ints are needed, wrong shapes and lengths, ids out of range, empty inputs,
probabilities outside [0, 1], sizes that cannot fit. Each must give a one-line ValueError/TypeError that names the
argument (`fuzzutil.refuses_each`), never a wrong answer, a NaN, a crash or a hang. Each defect found and fixed has
its own test (`test_defect_*`, named after the function); its docstring says what happened before the fix.
Property-based cases (hypothesis) check that float32, non-contiguous and list inputs give the float64 answer.
"""
from __future__ import annotations

import math

import networkx as nx
import torch.nn as nn
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from fuzzutil import BAD_NUMBERS, HUGE_SIZES, assert_refused, non_contiguous, outcome, refuses_each, same

NAN, INF = float("nan"), float("inf")
BAD_INT = ("3", None, True, 2.0, 2.5, NAN, INF)  # not ints: never truncated or cast
BAD_REAL = (NAN, INF, -INF, "3", None, True, 1j)
BAD_PROB = (-0.1, 1.1, NAN, INF, "0.5", None)
BAD_INT_OPT = tuple(v for v in BAD_INT if v is not None)  # for arguments where None means "the default"

# ---------------------------------------------------------------------------------------------------------- mincut
from icml25nb.algorithms import mincut as MC  # noqa: E402


@pytest.fixture(scope="module")
def ring():
    G = MC.ring_of_cliques(4, 3, 2, 1, seed=0)
    side = MC._true_side(G)[1]
    return G, MC.as_edge_list(G), side


def test_defect_planted_cut_graph_hang():
    """planted_cut_graph(n=10) at its default avg_degree=10 (more edges than a half of 5 nodes holds), a huge
    avg_degree or crossing: looped forever. Now: refused naming avg_degree / crossing / n."""
    for kw, name in ((dict(n=10), "avg_degree"), (dict(n=10, avg_degree=1e9), "avg_degree"),
                     (dict(n=10, avg_degree=2.0, crossing=10**6), "crossing"), (dict(n=10**12, avg_degree=2.0), "n"),
                     (dict(n=10, avg_degree=NAN), "avg_degree"), (dict(n=10, avg_degree="3"), "avg_degree")):
        assert_refused(MC.planted_cut_graph, name=name, timeout=5, **kw)
    G = MC.planted_cut_graph(10, 4.0, 25)  # the bounds are attainable: complete halves, every crossing pair
    assert G.number_of_edges() == 2 * 10 + 25


def test_defect_mincut_huge_sizes(ring):
    """min_cut / success_rate with trials=1e12, bootstrap_band(n_boot=1e12), matching_graph(n=1e7),
    boosted_success_bound(n=1e12), as_edge_list((1e12, [], [], [])): MemoryError; ring_of_cliques(k=1e9),
    related_ring_instances(count=1e12), matching_graph(k=1e12), repetitions_until_success(target=-1, cap=1e12) (a
    target no cut reaches: reps * cap trials): ran for minutes. Now refused up front."""
    G, el, _ = ring
    assert_refused(MC.min_cut, G, trials=10**12, name="trials", timeout=5)
    assert_refused(MC.success_rate, G, 2.0, trials=10**12, name="trials", timeout=5)
    assert_refused(MC.bootstrap_band, [1.0, 2.0], n_boot=10**12, name="n_boot", timeout=5)
    assert_refused(MC.matching_graph, 10**7, 2, 1, name="n", timeout=5)
    assert_refused(MC.matching_graph, 8, 10**12, 1, name="k", timeout=5)
    assert_refused(MC.boosted_success_bound, 10**12, 2, 0.5, 0.0, name="n", timeout=5)
    assert_refused(MC.as_edge_list, (10**12, np.zeros(0, int), np.zeros(0, int), []), name="n", timeout=5)
    assert_refused(MC.ring_of_cliques, 10**9, 3, 2, 1, name="k", timeout=5)
    assert_refused(MC.related_ring_instances, 10**12, 4, 3, name="count", timeout=5)
    assert_refused(MC.repetitions_until_success, el, None, 1.0, -1.0, 2, 10**12, 0, name="target", timeout=5)


def test_defect_mincut_wrong_answers(ring):
    """Accepted and answered wrongly before: cut_mask with a side mask of the wrong length (IndexError, or a longer
    one silently cut) or 0.5 entries (cast to True); prediction_errors / noisy_predictions with true_side 2 (cast to
    True); ring_of_cliques(drop=nan or 2) (a graph without cliques); success_rate(side_value=nan) (0.0),
    boost=0.5 or t=1 (ran); boost_factor(1, 'log n') (a boost 0 < 1) and boost_factor('5', 'n') (5.0);
    bootstrap_band([]) and of NaN (nan, nan), n_boot=0 (IndexError); as_edge_list weights ['1', '2'] (parsed);
    karger_values with trial id -1 (wrapped to 2**64-1); boosted_success_bound(eta=nan) (nan)."""
    G, el, side = ring
    mask = np.zeros(len(G.edges), bool)
    assert_refused(MC.cut_mask, el, side[:3], name="side")
    assert_refused(MC.cut_mask, el, np.r_[side, side], name="side")
    assert_refused(MC.cut_mask, el, side * 0.5, name="side")
    assert_refused(MC.prediction_errors, G, mask, side * 2, name="true_side")
    assert_refused(MC.noisy_predictions, G, side * 2, 0.5, 1.0, name="true_side")
    assert_refused(MC.ring_of_cliques, 4, 3, 2, 1, drop=NAN, name="drop")
    assert_refused(MC.ring_of_cliques, 4, 3, 2, 1, drop=2.0, name="drop")
    assert_refused(MC.success_rate, G, NAN, name="side_value")
    assert_refused(MC.success_rate, G, 2.0, mask, boost=0.5, trials=3, name="boost")
    assert_refused(MC.success_rate, G, 2.0, t=1, trials=3, name="t")
    assert_refused(MC.boost_factor, 1, "log n", name="n")
    assert_refused(MC.boost_factor, "5", "n", name="n")
    assert_refused(MC.bootstrap_band, [], name="x")
    assert_refused(MC.bootstrap_band, [1.0, NAN], name="x")
    assert_refused(MC.bootstrap_band, [1.0, 2.0], n_boot=0, name="n_boot")
    assert_refused(MC.as_edge_list, (3, [0, 1], [1, 2], ["1", "2"]), name="w")
    assert_refused(MC.karger_values, el, None, 1.0, 2, 0, [-1], name="trial_ids")
    assert_refused(MC.boosted_success_bound, 10, 2, NAN, 0.0, name="eta")


def test_mincut_refuses_each(ring):
    G, el, side = ring
    mask = MC.noisy_predictions(G, side, 0.0, 0.0)
    n = 0
    n += refuses_each(MC.min_cut, dict(G=G, trials=3), dict(
        method=["kargerx", None, 3], trials=[0, -1, *BAD_INT_OPT, *HUGE_SIZES], t=[1, *BAD_INT],
        boost=[0.5, NAN, "3", True], seed=[-1, 2**64, "0", 1.5]))
    n += refuses_each(MC.min_cut, dict(G=G, predictions=mask, trials=3), dict(
        predictions=[mask[:-1], np.full(len(mask), 2), [(0, 99)], ["ab"]]))
    n += refuses_each(MC.as_edge_list, dict(G=(3, [0, 1], [1, 2], [1.0, 1.0])), dict(
        G=[(3, [0, 3], [1, 2], [1.0, 1.0]), (3, [0, -1], [1, 2], [1.0, 1.0]), (3, [0.0, 1.0], [1, 2], [1.0, 1.0]),
           (3, [0, 1], [1, 2], [1.0]), (3, [0, 1], [1, 2], [1.0, NAN]), (3, [0, 1], [1, 2], [1.0, -1.0]),
           (1, [], [], []), ("3", [0], [1], [1.0]), (3, [0, 1], [1, 2]), None, "G", nx.DiGraph([(0, 1)])]),
        name_in_message=False)
    n += refuses_each(MC.textbook_trials, dict(n=10, method="karger"), dict(n=[0, 1, *BAD_INT], method=["x", None]))
    n += refuses_each(MC.prediction_errors, dict(G=G, predicted=mask, true_side=side), dict(
        true_side=[side[:-1], side * 2, side * 0.5, None, "x"], predicted=[None, mask[:-1]]), name_in_message=False)
    n += refuses_each(MC.noisy_predictions, dict(G=G, true_side=side, eta=0.5, rho=1.0), dict(
        eta=list(BAD_PROB), rho=[-1.0, *BAD_REAL], sampler=["x", None], true_side=[side[:-1], side * 2],
        seed=[-1, "0"]))
    n += refuses_each(MC.uninformative_predictions, dict(G=G, weight=1.0), dict(weight=[-1.0, *BAD_REAL]))
    n += refuses_each(MC.ring_of_cliques, dict(k=4, s=3, bundle=2, weak=1), dict(
        k=[3, *BAD_INT, *HUGE_SIZES], s=[2, *BAD_INT], bundle=[1, 10, *BAD_INT], weak=[0, 4, *BAD_INT],
        drop=list(BAD_PROB)))
    n += refuses_each(MC.planted_cut_graph, dict(n=10, avg_degree=2.0, crossing=2), dict(
        n=[3, *BAD_INT, *HUGE_SIZES], avg_degree=[-1.0, 5.0, 1e9, *BAD_REAL], crossing=[0, 26, *BAD_INT]))
    n += refuses_each(MC.related_ring_instances, dict(count=1, k=4, s=3), dict(
        count=[0, *BAD_INT, *HUGE_SIZES], k=[3, *BAD_INT], s=[2, *BAD_INT]))
    n += refuses_each(MC.matching_graph, dict(n=8, k=3, t=1), dict(
        n=[2, 7, *BAD_INT, *HUGE_SIZES], k=[0, *BAD_INT, *HUGE_SIZES], t=[-1, 3, *BAD_INT]), name_in_message=False)
    n += refuses_each(MC.boosted_success_bound, dict(n=10, t=2, eta=0.5, rho=0.0), dict(
        n=[1, *BAD_INT, *HUGE_SIZES], t=[1, *BAD_INT], eta=list(BAD_PROB), rho=[-1.0, *BAD_REAL]))
    n += refuses_each(MC.success_rate, dict(G=G, side_value=2.0, trials=3), dict(
        side_value=[-1.0, *BAD_REAL], trials=[0, *BAD_INT, *HUGE_SIZES], t=[1, *BAD_INT], boost=[0.5, NAN, "3"]))
    n += refuses_each(MC.boost_factor, dict(n=10, kind="n"), dict(n=[0, 1, *BAD_INT], kind=["x", None]),
                      name_in_message=False)
    n += refuses_each(MC.repetitions_until_success, dict(el=el, pred=None, boost=1.0, target=2.0, reps=2, cap=10,
                                                        seed=0), dict(
        target=[-1.0, *BAD_REAL], reps=[0, *BAD_INT, *HUGE_SIZES], cap=[0, *BAD_INT], boost=[0.5, NAN], t=[1, *BAD_INT],
        seed=[-1, "0"]))
    n += refuses_each(MC.bootstrap_band, dict(x=[1.0, 2.0, 3.0], n_boot=10), dict(
        x=[[], [1.0, NAN], [[1.0, 2.0]], "x", None], level=[0.0, 1.0, *BAD_PROB], n_boot=[0, *BAD_INT, *HUGE_SIZES],
        seed=[-1, "0"]))
    n += refuses_each(MC.cut_mask, dict(el=el, side=side), dict(side=[side[:-1], side * 0.5, side * 2, None]))
    n += refuses_each(MC.sample_to_budget, dict(w=el.w, pool=np.arange(3), budget=2.0, g=np.random.default_rng(0)),
                      dict(pool=[[-1], [len(el.w)], [0.5]], budget=[NAN, "1", None], sampler=["x"], tol=[-1.0, NAN],
                           w=[-el.w, np.full(len(el.w), NAN)]))
    n += refuses_each(MC.karger_batch, dict(el=el, pred=None, boost=1.0, t=2, seed=0, trials=3), dict(
        trials=[0, *BAD_INT, *HUGE_SIZES], t=[1, *BAD_INT], boost=[0.5, NAN]))
    n += refuses_each(MC.karger_values, dict(el=el, pred=None, boost=1.0, t=2, seed=0, trial_ids=[0, 1]), dict(
        trial_ids=[[-1], [0.5], [[0]], "x"], t=[1], boost=[0.5]))
    n += refuses_each(MC.boosted_schedule, dict(trials=3, pred=None, robust=True), dict(trials=[-1, *BAD_INT]))
    assert n > 200


@settings(max_examples=10)
@given(x=hnp.arrays(np.float64, st.integers(1, 20), elements=st.floats(-1e6, 1e6)))
def test_bootstrap_band_float32_noncontig_list(x):
    ref = MC.bootstrap_band(x, n_boot=50)
    assert same(MC.bootstrap_band(non_contiguous(x), n_boot=50), ref)
    assert same(MC.bootstrap_band(x.tolist(), n_boot=50), ref)
    x32 = x.astype(np.float32)
    assert same(MC.bootstrap_band(x32, n_boot=50), MC.bootstrap_band(x32.astype(np.float64), n_boot=50))


@settings(max_examples=10)
@given(seed=st.integers(0, 2**31), n=st.integers(2, 9))
def test_min_cut_mask_kinds_agree(seed, n):
    """A side mask as bool, 0/1 ints, 0/1 floats or a non-contiguous view gives the same cut_mask."""
    G = nx.gnm_random_graph(n, 2 * n, seed=seed)
    el = MC.as_edge_list(G) if G.number_of_edges() else None
    if el is None:
        return
    side = np.random.default_rng(seed).random(n) < 0.5
    ref = MC.cut_mask(el, side)
    for s in (side.astype(int), side.astype(np.float32), side.tolist(), non_contiguous(side)):
        assert np.array_equal(MC.cut_mask(el, s), ref)


# ------------------------------------------------------------------------------------------------------------- mnl
from icml25nb.bandits import mnl as MN  # noqa: E402

_U, _R = np.array([0.5, -0.2, 0.1, 0.3]), np.array([1.0, 0.5, 0.8, 0.2])


def test_defect_mnl_wrong_answers():
    """Answered wrongly before: assortment_revenue with S=[-1] (the last item), S=[0, 0] (counted twice), S=[0.7]
    (item 0); top_k / optimal_assortment with K=2.7 or '2' (truncated / parsed); mnl_probs(['1', '2']) (parsed);
    ChoiceHistory.add with choice 2 of 2 items (a padded slot chosen) or -3 (recorded as no purchase);
    round_grad_hess with choice -2 (wrapped to the last item); reward_variance with p < 0; project_ball with
    B = -1 or NaN; fit_mle with lam = NaN (NaN estimate) or -1; OFUMNLpp(refresh=2.5) / UCBMNL(refit_every=1.5)
    (truncated); run_bandit(T=True)."""
    assert_refused(MN.assortment_revenue, _U, _R, [-1], name="S")
    assert_refused(MN.assortment_revenue, _U, _R, [0, 0], name="S")
    assert_refused(MN.assortment_revenue, _U, _R, [0.7], name="S")
    assert_refused(MN.top_k, _U, 2.7, name="K")
    assert_refused(MN.top_k, _U, "2", name="K")
    assert_refused(MN.optimal_assortment, _U, _R, 1.5, name="K")
    assert_refused(MN.mnl_probs, ["1", "2"], name="utilities")
    h = MN.ChoiceHistory(2, 3)
    assert_refused(h.add, np.ones((2, 2)), 2, name="choice")
    assert_refused(h.add, np.ones((2, 2)), -3, name="choice")
    assert h.n == 0
    assert_refused(MN.round_grad_hess, np.zeros(2), np.ones((3, 2)), -2, name="choice")
    assert_refused(MN.reward_variance, np.array([0.5, -0.5, 1.0]), np.array([1.0, 2.0]), name="p")
    assert_refused(MN.project_ball, np.ones(2), np.eye(2), -1.0, name="B")
    assert_refused(MN.project_ball, np.ones(2), np.eye(2), NAN, name="B")
    h.add(np.ones((2, 2)), 0)
    assert_refused(MN.fit_mle, h, NAN, np.zeros(2), name="lam")
    assert_refused(MN.fit_mle, h, -1.0, np.zeros(2), name="lam")
    assert_refused(MN.OFUMNLpp, 2, 2, refresh=2.5, name="refresh")
    assert_refused(MN.UCBMNL, 2, 2, refit_every=1.5, name="refit_every")
    env = MN.MNLEnv(10, 2, 2)
    assert_refused(MN.run_bandit, env, MN.OFUMNLpp(2, 2), True, name="T")
    assert_refused(MN.run_lockstep, [env], 2, refresh=1.5, name="refresh")


def test_defect_mnl_crashes():
    """Crashed before: beta_pp with lam=0 or delta=0, ucb_mnl_alpha(d=0), beta_m2nl(delta=0): ZeroDivisionError;
    beta_plus(B=nan) / ofu_pp_constants(B=nan): NaN; optimal_assortment([], []) and assortment_revenue with a short
    r: IndexError; round_grad_hess(choice=3 of 3): IndexError; ChoiceHistory(capacity=0).add: IndexError;
    best_assortment_bruteforce on 60 items, K=30: ran for hours; MNLEnv(N=1e9), ChoiceHistory(1e6, 1e6),
    OFUMNLpp(d=1e6), run_bandit / run_lockstep(T=1e12): MemoryError; interleaved_round_time(reps=0): NaN."""
    assert_refused(MN.beta_pp, 1, 2, 2, 1.0, 0.0, name="lam")
    assert_refused(MN.beta_pp, 1, 2, 2, 1.0, 1.0, 0.0, name="delta")
    assert_refused(MN.ucb_mnl_alpha, 1, 0, 2, name="d")
    assert_refused(MN.beta_m2nl, 1, 2, 2, 1.0, 0.0, name="delta")
    assert_refused(MN.beta_plus, 1, 2, 2, NAN, name="B")
    assert_refused(MN.ofu_pp_constants, 2, 2, NAN, name="B")
    assert MN.optimal_assortment([], [], 2).size == 0
    assert_refused(MN.assortment_revenue, _U, _R[:2], [2], name="r")
    assert_refused(MN.round_grad_hess, np.zeros(2), np.ones((3, 2)), 3, name="choice")
    assert_refused(MN.ChoiceHistory, 2, 3, capacity=0, name="capacity")
    assert_refused(MN.best_assortment_bruteforce, np.zeros(60), np.linspace(0, 1, 60), 30, name="u", timeout=5)
    assert_refused(MN.MNLEnv, 10**9, 2, 5, name="N")
    assert_refused(MN.ChoiceHistory, 10**6, 10**6, name="capacity")
    assert_refused(MN.OFUMNLpp, 10**6, 2, name="d")
    env = MN.MNLEnv(10, 2, 2)
    assert_refused(MN.run_bandit, env, MN.OFUMNLpp(2, 2), 10**12, name="T")
    assert_refused(MN.run_lockstep, [env], 10**12, name="T")
    assert_refused(MN.interleaved_round_time, {"a": MN.OFUMNLpp(2, 2)}, *env.contexts(1), reps=0, name="reps")


def test_mnl_refuses_each():
    n = 0
    bad_arr = [[NAN, 1.0, 0.0, 0.0], [[0.5, 0.2, 0.1, 0.3]], "x", None, ["1", "2", "3", "4"], [1j, 0, 0, 0]]
    n += refuses_each(MN.mnl_probs, dict(utilities=_U), dict(utilities=[[NAN], [INF], [[1.0]], "x", None, ["1"]]))
    n += refuses_each(MN.top_k, dict(scores=_U, K=2), dict(K=[0, -1, *BAD_INT], scores=[[NAN, 1.0], [[1.0]], "x"]))
    for fn in (MN.assortment_revenue,):
        n += refuses_each(fn, dict(u=_U, r=_R, S=[0, 2]), dict(
            u=bad_arr, r=[_R[:2], np.r_[_R, 1.0], [NAN] * 4, "x"], S=[[-1], [4], [0, 0], [0.5], [[0]], "x", None]))
    for fn in (MN.optimal_assortment, MN.assortment_lp, MN.best_assortment_bruteforce):
        n += refuses_each(fn, dict(u=_U, r=_R, K=2), dict(u=bad_arr, r=[_R[:2], [NAN] * 4, "x"], K=[0, *BAD_INT]))
    n += refuses_each(MN.check_assortment, dict(S=[0, 1], N=4, K=2), dict(
        S=[[], [0, 0], [-1], [4], [0.0], [0, 1, 2]], N=[0, *BAD_INT], K=[0, *BAD_INT]), name_in_message=False)
    n += refuses_each(MN.MNLEnv, dict(N=10, K=2, d=2), dict(
        N=[0, *BAD_INT, *HUGE_SIZES], K=[0, 11, *BAD_INT], d=[0, *BAD_INT], B=[0.0, -1.0, *BAD_REAL],
        rewards=["x", None], seed=[-1, "0", 1.5], theta_star=[[NAN, 0.0], [0.1], [3.0, 0.0], "x"]),
        name_in_message=False)
    n += refuses_each(MN.round_grad_hess, dict(theta=np.zeros(2), X_S=np.ones((3, 2)), choice=0), dict(
        theta=[np.zeros(3), [NAN, 0.0], "x"], X_S=[np.ones(2), [[NAN, 1.0]], "x"], choice=[-2, 3, *BAD_INT]))
    n += refuses_each(MN.ChoiceHistory, dict(d=2, K=3), dict(
        d=[0, *BAD_INT], K=[0, *BAD_INT], capacity=[0, *BAD_INT, *HUGE_SIZES]))
    h = MN.ChoiceHistory(2, 3)
    n += refuses_each(h.add, dict(X_S=np.ones((2, 2)), choice=0), dict(
        X_S=[np.ones((4, 2)), np.ones((2, 3)), np.ones((0, 2)), [[NAN, 1.0]], "x"], choice=[-2, 2, *BAD_INT]),
        name_in_message=False)
    h.add(np.ones((2, 2)), 0)
    n += refuses_each(h.nll, dict(theta=np.zeros(2)), dict(theta=[np.zeros(3), [NAN, 0.0]], lam=[-1.0, *BAD_REAL]))
    n += refuses_each(MN.project_ball, dict(theta=np.ones(2), M=np.eye(2), B=1.0), dict(
        theta=[[NAN, 1.0], "x"], M=[np.eye(3), np.full((2, 2), NAN)], B=[0.0, -1.0, NAN, "1", None]))
    n += refuses_each(MN.omd_step, dict(theta=np.zeros(2), H=np.eye(2), X_S=np.ones((2, 2)), choice=0, eta=1.0,
                                        B=1.0), dict(
        H=[np.eye(3)], eta=[0.0, -1.0, *BAD_REAL], B=[0.0, NAN], choice=[-2, 2, *BAD_INT]))
    radius_bad = dict(t=[0, -1, *BAD_INT], d=[0, *BAD_INT], K=[0, *BAD_INT], B=[0.0, -1.0, *BAD_REAL])
    n += refuses_each(MN.beta_pp, dict(t=1, d=2, K=2, B=1.0, lam=1.0), dict(
        **radius_bad, lam=[0.0, -1.0, *BAD_REAL], delta=[0.0, 1.0, *BAD_REAL], eta=[0.0, NAN, "1"]))
    n += refuses_each(MN.beta_plus, dict(t=1, d=2, K=2), dict(**radius_bad, lam=[0.0, NAN], eta=[0.0, NAN]))
    n += refuses_each(MN.beta_m2nl, dict(t=1, d=2, K=2, B=1.0), dict(**radius_bad, delta=[0.0, 1.0, *BAD_REAL]))
    n += refuses_each(MN.ucb_mnl_alpha, dict(t=1, d=2, K=2), dict(t=radius_bad["t"], d=radius_bad["d"],
                                                                  K=radius_bad["K"]))
    n += refuses_each(MN.ofu_pp_constants, dict(d=2, K=2, B=1.0), dict(
        d=radius_bad["d"], K=radius_bad["K"], B=radius_bad["B"], delta=[0.0, 1.0, NAN]))
    n += refuses_each(MN.ofu_plus_constants, dict(d=2, K=2, B=1.0), dict(
        d=radius_bad["d"], K=radius_bad["K"], B=radius_bad["B"]))
    for cls in (MN.OFUMNLpp, MN.OFUMNLplus, MN.OFUMNLppBetaPlus, MN.OFUMNLppBetaPlusOwn):
        n += refuses_each(cls, dict(d=2, K=2), dict(
            d=[0, *BAD_INT, 10**6], K=[0, *BAD_INT], B=[0.0, *BAD_REAL], eta=[0.0, NAN, "1"], lam=[0.0, NAN],
            beta_scale=[0.0, NAN], delta=[0.0, NAN], refresh=[-1, *BAD_INT], backend=["gpu", None]),
            name_in_message=False)
    for cls in (MN.UCBMNL, MN.TSMNL):
        n += refuses_each(cls, dict(d=2, K=2), dict(d=[0, *BAD_INT], K=[0, *BAD_INT], lam=[0.0, *BAD_REAL],
                                                    alpha_scale=[0.0, NAN], refit_every=[0, *BAD_INT]),
                          name_in_message=False)
    n += refuses_each(MN.OFUM2NL, dict(d=2, K=2), dict(B=[0.0, *BAD_REAL], lam=[0.0, NAN], delta=[0.0, NAN],
                                                      refit_every=[0, *BAD_INT]))
    n += refuses_each(MN.fit_mle, dict(history=h, lam=1.0, theta0=np.zeros(2)), dict(
        history=[None, "h"], lam=[-1.0, *BAD_REAL], theta0=[np.zeros(3), [NAN, 0.0]], B=[0.0, NAN],
        tol=[-1.0, NAN], max_iter=[-1, *BAD_INT]))
    n += refuses_each(MN.reward_variance, dict(p=np.array([0.2, 0.3, 0.5]), r=np.array([1.0, 2.0])), dict(
        p=[[0.5, 0.5], [-0.1, 0.6, 0.5], [NAN, 0.5, 0.5], "x"], r=[[[1.0, 2.0]], [NAN, 1.0], "x"]))
    env = MN.MNLEnv(10, 2, 2)
    a = MN.OFUMNLpp(2, 2)
    n += refuses_each(MN.run_bandit, dict(env=env, agent=a, T=2), dict(T=[0, *BAD_INT, *HUGE_SIZES]))
    n += refuses_each(MN.run_lockstep, dict(envs=[env], T=2), dict(
        T=[0, *BAD_INT, *HUGE_SIZES], refresh=[-1, *BAD_INT], envs=[[], ["x"]]), name_in_message=False)
    X, r = env.contexts(1)
    n += refuses_each(a.select, dict(X=X, r=r), dict(
        X=[X[:, :1], np.full_like(X, NAN), "x"], r=[r[:-1], -r, np.full_like(r, NAN)]), name_in_message=False)
    n += refuses_each(a.update, dict(X_S=X[:2], choice=0), dict(
        X_S=[X[:3], X[:0], X[:2, :1], np.full((2, 2), NAN)], choice=[-2, 2, *BAD_INT]), name_in_message=False)
    n += refuses_each(MN.interleaved_round_time, dict(agents={"a": a}, X=X, r=r, reps=1), dict(reps=[0, *BAD_INT]))
    assert n > 300


@settings(max_examples=15)
@given(u=hnp.arrays(np.float64, st.integers(1, 8), elements=st.floats(-3, 3)),
       data=st.data(), K=st.integers(1, 5))
def test_mnl_assortment_dtypes_agree(u, data, K):
    """The optimum (Dinkelbach) equals brute force and the LP; float32 / non-contiguous / list inputs give the
    float64 answer."""
    r = data.draw(hnp.arrays(np.float64, u.shape, elements=st.floats(0, 1)))
    S = MN.optimal_assortment(u, r, K)
    best = MN.assortment_revenue(u, r, MN.best_assortment_bruteforce(u, r, K))
    assert MN.assortment_revenue(u, r, S) >= best * (1 - 1e-9) - 1e-12
    assert np.array_equal(MN.optimal_assortment(non_contiguous(u), non_contiguous(r), K), S)
    assert np.array_equal(MN.optimal_assortment(u.tolist(), r.tolist(), K), S)
    u32, r32 = u.astype(np.float32), r.astype(np.float32)
    assert np.array_equal(MN.optimal_assortment(u32, r32, np.int64(K)),
                          MN.optimal_assortment(u32.astype(float), r32.astype(float), K))
    p = MN.mnl_probs(u)
    assert same(MN.mnl_probs(non_contiguous(u)), p) and same(MN.mnl_probs(u.tolist()), p)


# ------------------------------------------------------------------------------------------------------------- vmf
from icml25nb.bandits import vmf as VM  # noqa: E402


@pytest.fixture(scope="module")
def cat():
    A = VM.uniform_catalogue(40, 3, seed=0)
    return A, A[0], VM.build_index(A)


def test_defect_vmf_wrong_answers(cat):
    """Answered wrongly before: sample_vmf(kappa='5' or True) (parsed as 5.0 / 1.0); normalize_rows(['1', '2']);
    nucleus_k(mass='0.5'); cosine_density(kappa=nan) (NaN), of a = NaN (0.0), d=1 (a density for a law that
    does not exist); truncated_boltzmann_sample / subsample_boltzmann_sample(size=2.5) (truncated to 2);
    subsample_boltzmann_sample of non-unit actions (answered); subsample_boltzmann_probs(reps=0) (all NaN),
    reps=2.5 (truncated); similarity_histogram with a NaN similarity (put in bin 0); action_tv(['0.5', '0.5']);
    digits_catalogue(dim=100) (64 columns, silently); g_quantile_edges(bins=0) ([1.0])."""
    A, V, idx = cat
    assert_refused(VM.sample_vmf, V, "5", name="kappa")
    assert_refused(VM.sample_vmf, V, True, name="kappa")
    assert_refused(VM.normalize_rows, ["1", "2"], name="X")
    assert_refused(VM.nucleus_k, V, A, 5.0, "0.5", name="mass")
    assert_refused(VM.cosine_density, [0.5], 3, NAN, name="kappa")
    assert_refused(VM.cosine_density, [NAN], 3, 5.0, name="a")
    assert_refused(VM.cosine_density, [0.5], 1, 5.0, name="d")
    assert_refused(VM.truncated_boltzmann_sample, V, idx, 5.0, 3, 2.5, name="size")
    assert_refused(VM.subsample_boltzmann_sample, V, A, 5.0, 3, 2.5, name="size")
    assert_refused(VM.subsample_boltzmann_sample, V, 2 * A, 5.0, 3, name="A")
    assert_refused(VM.subsample_boltzmann_probs, V, A, 5.0, 3, 0, name="reps")
    assert_refused(VM.subsample_boltzmann_probs, V, A, 5.0, 3, 2.5, name="reps")
    assert_refused(VM.similarity_histogram, [NAN, 0.5], [0.5, 0.5], name="sims")
    assert_refused(VM.action_tv, ["0.5", "0.5"], [0.5, 0.5], name="p")
    assert_refused(VM.digits_catalogue, 100, name="dim")
    assert_refused(VM.g_quantile_edges, 3, 5.0, 0, name="bins")


def test_defect_vmf_crashes(cat):
    """Crashed before: sample_vmf / boltzmann_sample / subsample_boltzmann_sample(size=1e12),
    subsample_boltzmann_probs(k=1e12), uniform_catalogue(n=1e12): MemoryError; mean_cosine(tol=nan or
    max_terms=0): RuntimeError; truncated_boltzmann_sample(index=None) / vmf_explore(index='x'): AttributeError."""
    A, V, idx = cat
    assert_refused(VM.sample_vmf, V, 5.0, 10**12, name="size")
    assert_refused(VM.boltzmann_sample, V, A, 5.0, 10**12, name="size")
    assert_refused(VM.subsample_boltzmann_sample, V, A, 5.0, 3, 10**12, name="size")
    assert_refused(VM.subsample_boltzmann_probs, V, A, 5.0, 10**12, 2, name="k")
    assert_refused(VM.uniform_catalogue, 10**12, 3, name="n")
    assert_refused(VM.mean_cosine, 3, 5.0, NAN, name="tol")
    assert_refused(VM.mean_cosine, 3, 5.0, 1e-15, 0, name="max_terms")
    assert_refused(VM.truncated_boltzmann_sample, V, None, 5.0, 3, name="index")
    assert_refused(VM.vmf_explore, V, "x", 5.0, name="index")


def test_vmf_refuses_each(cat):
    A, V, idx = cat
    n = 0
    bad_V = [V[:2], 2 * V, np.full(3, NAN), [[*V]], "x", None, ["1", "0", "0"]]
    bad_A = [2 * A, A[:, :2], A[0], np.full((3, 3), NAN), np.zeros((0, 3)), "x", None]
    kap = [0.0, -1.0, *BAD_REAL]
    n += refuses_each(VM.normalize_rows, dict(X=A), dict(X=[np.zeros((2, 3)), [[NAN, 1.0]], [], "x", None,
                                                            np.ones((2, 2, 2))]))
    n += refuses_each(VM.sample_vmf, dict(mu=V, kappa=5.0), dict(
        mu=bad_V, kappa=kap, size=[-1, *BAD_INT, *HUGE_SIZES], seed=[-1, "0", 1.5], backend=["gpu", None]))
    n += refuses_each(VM.mean_cosine, dict(d=3, kappa=5.0), dict(d=[1, *BAD_INT], kappa=kap,
                                                                 tol=[0.0, -1.0, *BAD_REAL], max_terms=[0, *BAD_INT]))
    n += refuses_each(VM.cosine_density, dict(a=[0.5], d=3, kappa=5.0), dict(
        a=[[NAN], "x", None], d=[1, *BAD_INT], kappa=kap))
    for fn in (VM.boltzmann_probs, VM.BoltzmannSampler):
        n += refuses_each(fn, dict(V=V, A=A, kappa=5.0) if fn is VM.boltzmann_probs else dict(A=A, kappa=5.0),
                          dict(A=bad_A, kappa=kap), name_in_message=False)
    n += refuses_each(VM.boltzmann_probs, dict(V=V, A=A, kappa=5.0), dict(V=bad_V), name_in_message=False)
    n += refuses_each(VM.truncated_boltzmann_probs, dict(V=V, A=A, kappa=5.0, k=3), dict(
        V=bad_V, A=bad_A, kappa=kap, k=[0, 41, *BAD_INT]), name_in_message=False)
    n += refuses_each(VM.nucleus_k, dict(V=V, A=A, kappa=5.0, mass=0.5), dict(mass=[0.0, 1.5, *BAD_REAL]))
    n += refuses_each(VM.boltzmann_sample, dict(V=V, A=A, kappa=5.0), dict(
        size=[-1, *BAD_INT, *HUGE_SIZES], seed=[-1, "0"], kappa=kap), name_in_message=False)
    n += refuses_each(VM.build_index, dict(A=A), dict(A=bad_A, kind=["x", None]), name_in_message=False)
    for kind in ("kdtree", "brute"):
        ix = VM.build_index(A, kind)
        n += refuses_each(ix.query, dict(Q=A[:2]), dict(Q=[A[:2, :2], np.full((2, 3), NAN), "x", None]),
                          name_in_message=False)
        n += refuses_each(ix.topk, dict(q=V, k=3), dict(q=[V[:2], [NAN] * 3, "x"], k=[0, 41, *BAD_INT]))
    n += refuses_each(VM.truncated_boltzmann_sample, dict(V=V, index=idx, kappa=5.0, k=3), dict(
        V=bad_V, index=[None, A, "x"], kappa=kap, k=[0, 41, *BAD_INT], size=[-1, *BAD_INT, *HUGE_SIZES]),
        name_in_message=False)
    n += refuses_each(VM.subsample_boltzmann_sample, dict(V=V, A=A, kappa=5.0, k=3), dict(
        V=bad_V, A=bad_A, kappa=kap, k=[0, *BAD_INT], size=[-1, *BAD_INT, *HUGE_SIZES]), name_in_message=False)
    n += refuses_each(VM.subsample_boltzmann_probs, dict(V=V, A=A, kappa=5.0, k=3, reps=2), dict(
        V=bad_V, A=bad_A, kappa=kap, k=[0, *BAD_INT, 10**12], reps=[0, *BAD_INT]), name_in_message=False)
    n += refuses_each(VM.vmf_explore, dict(V=V, index=idx, kappa=5.0), dict(
        V=bad_V, index=[None, A], kappa=kap, size=[-1, *BAD_INT, *HUGE_SIZES]), name_in_message=False)
    sims, p = A @ V, np.full(40, 1 / 40)
    n += refuses_each(VM.similarity_histogram, dict(sims=sims, p=p), dict(
        sims=[[NAN] * 40, "x", None, sims[None]], p=[p[:-1], -p, np.zeros(40), [NAN] * 40, "x"],
        bins=[0, *BAD_INT, *HUGE_SIZES]), name_in_message=False)
    n += refuses_each(VM.similarity_binned_tv, dict(sims=sims, p=p, q=p), dict(q=[p[:-1], -p, "x"]))
    n += refuses_each(VM.action_tv, dict(p=p, q=p), dict(p=[-p, [[0.5, 0.5]], "x", None], q=[p[:-1], -p, "x"]))
    n += refuses_each(VM.uniform_catalogue, dict(n=5, d=3), dict(n=[0, *BAD_INT, *HUGE_SIZES], d=[0, *BAD_INT],
                                                                 seed=[-1, "0"]), name_in_message=False)
    n += refuses_each(VM.clustered_catalogue, dict(n=5, d=3, clusters=2), dict(
        n=[0, *BAD_INT, *HUGE_SIZES], d=[1, *BAD_INT], clusters=[0, *BAD_INT, *HUGE_SIZES], kappa_c=kap,
        seed=[-1, "0", 1.5]))
    n += refuses_each(VM.digits_catalogue, dict(dim=3), dict(dim=[0, 1, 65, *BAD_INT]))
    n += refuses_each(VM.g_quantile_edges, dict(d=3, kappa=5.0, bins=4), dict(
        d=[1, *BAD_INT], kappa=kap, bins=[0, *BAD_INT, *HUGE_SIZES]))
    assert n > 300


@settings(max_examples=15)
@given(X=hnp.arrays(np.float64, st.tuples(st.integers(2, 12), st.integers(2, 5)), elements=st.floats(-5, 5)),
       kappa=st.floats(0.1, 50))
def test_vmf_dtypes_agree(X, kappa):
    """B-exp's probabilities and the similarity histogram: float32 / non-contiguous / list inputs give the float64
    answer (on the same float32-rounded values); never NaN."""
    if (np.linalg.norm(X, axis=1) < 1e-3).any():
        return
    A = VM.normalize_rows(X)
    V = A[0]
    p = VM.boltzmann_probs(V, A, kappa)
    assert np.isfinite(p).all() and abs(p.sum() - 1) < 1e-9
    assert same(VM.boltzmann_probs(non_contiguous(V), non_contiguous(A), kappa), p)
    assert same(VM.boltzmann_probs(V.tolist(), A.tolist(), np.float32(kappa)),
                VM.boltzmann_probs(V, A, float(np.float32(kappa))))
    A32 = VM.normalize_rows(X.astype(np.float32))
    assert same(VM.boltzmann_probs(A32[0], A32, kappa),
                VM.boltzmann_probs(A32[0].astype(float), A32.astype(float), kappa))
    h = VM.similarity_histogram(A @ V, p, 7)
    assert same(VM.similarity_histogram((A @ V).tolist(), non_contiguous(p), np.int64(7)), h)


# ------------------------------------------------------------------------------------------------------------- gim
from icml25nb.causal import gim as GM  # noqa: E402


@pytest.fixture(scope="module")
def gimdata():
    scm = GM.make_linear_scm(4, 0.5, seed=0)
    data = GM.make_perturbation_family(scm, 4, 2, n_per_context=5, n_obs=20, n_test=5, descriptor_dim=3, seed=0)
    return scm, data


def test_defect_gim(gimdata):
    """Before: topological_order of a (2, 3) matrix returned [1, 0]; order_violations with a repeated or negative
    order counted garbage (1); fit_gim(order=[0, 0, 1, 2]) trained with an uninitialised mask; target_auroc with a
    NaN score returned nan, with scores (1, 2) vs truth (2,) answered 1.0; hill of a NaN dose gave nan;
    meanshift_scores with a constant observational node gave inf; fit_gim(rho_every=0 / log_every=0):
    ZeroDivisionError; make_linear_scm(d=1e6), sample_scm(n=1e12), make_perturbation_family(n_test=1e10):
    MemoryError; sample_scm(None): AttributeError; make_linear_scm(edge_prob='0.5'), hill(K='1'),
    make_perturbation_family(max_targets='2'): TypeError naming nothing."""
    scm, data = gimdata
    assert_refused(GM.topological_order, np.zeros((2, 3)), name="W")
    assert_refused(GM.order_violations, [0, 0, 1, 2], scm.W, name="order")
    assert_refused(GM.order_violations, [-1, 0, 1, 2], scm.W, name="order")
    assert_refused(GM.fit_gim, data, steps=1, order=[0, 0, 1, 2], name="order")
    assert_refused(GM.target_auroc, [NAN, 1.0], [0, 1], name="scores")
    assert_refused(GM.target_auroc, [[0.5, 1.0]], [0, 1], name="scores")
    assert_refused(GM.hill, [NAN], 1.0, 2.0, name="c")
    assert_refused(GM.meanshift_scores, data["ood"], np.ones((5, 4)), name="observational")
    assert_refused(GM.fit_gim, data, steps=1, rho_every=0, name="rho_every")
    assert_refused(GM.fit_gim, data, steps=1, log_every=0, name="log_every")
    assert_refused(GM.make_linear_scm, 10**6, name="d", timeout=5)
    assert_refused(GM.sample_scm, scm, None, 10**12, name="n")
    assert_refused(GM.make_perturbation_family, scm, n_test=10**10, name="n_test")
    assert_refused(GM.sample_scm, None, name="scm")
    assert_refused(GM.make_linear_scm, 4, "0.5", name="edge_prob")
    assert_refused(GM.hill, [1.0], "1", 2.0, name="K")
    assert_refused(GM.make_perturbation_family, scm, max_targets="2", name="max_targets")


def test_gim_refuses_each(gimdata):
    scm, data = gimdata
    n = 0
    n += refuses_each(GM.topological_order, dict(W=scm.W), dict(W=[np.zeros((2, 3)), np.full((2, 2), NAN), "x",
                                                                   None, np.zeros(3)]))
    n += refuses_each(GM.make_linear_scm, dict(d=4), dict(
        d=[0, *BAD_INT, *HUGE_SIZES], edge_prob=list(BAD_PROB), seed=[-1, "0"],
        weight_range=[(1.5, 0.5), (NAN, 1.0), (-1.0, 1.0)], noise_range=[(0.0, 1.0), (1.0, 0.5), (0.5, INF)]))
    n += refuses_each(GM.sample_scm, dict(scm=scm, n=3), dict(scm=[None, "x"], n=[0, *BAD_INT, *HUGE_SIZES],
                                                             seed=[-1, "0"]))
    n += refuses_each(GM.hill, dict(c=[0.5, 1.0], K=1.0, n=2.0), dict(
        c=[[NAN], "x", None], K=[*BAD_REAL], n=[*BAD_REAL]))
    n += refuses_each(GM.hill, dict(c=[0.5, 1.0], K=1.0, n=2.0), dict(c=[[-1.0]], K=[0.0, -1.0], n=[0.0]),
                      name_in_message=False)
    n += refuses_each(GM.make_perturbation_family, dict(scm=scm, n_train_drugs=2, n_new_drugs=1, n_per_context=3,
                                                        n_obs=5, n_test=3, descriptor_dim=2), dict(
        n_train_drugs=[0, *BAD_INT], n_new_drugs=[0, *BAD_INT], n_per_context=[0, *BAD_INT, *HUGE_SIZES],
        n_obs=[0, *BAD_INT, *HUGE_SIZES], n_test=[0, *BAD_INT, *HUGE_SIZES], descriptor_dim=[0, *BAD_INT],
        max_targets=[0, 5, *BAD_INT], train_doses=[(), (-1.0,), (NAN,), "x"], partial_doses=[(-1.0,), "x"],
        seed=[-1, "0"]))
    n += refuses_each(GM.order_violations, dict(order=[0, 1, 2, 3], W=scm.W), dict(
        order=[[0, 0, 1, 2], [-1, 0, 1, 2], [0, 1, 2], [0, 1, 2, 4], [0.5, 1, 2, 3], "x"],
        W=[np.zeros((4, 3)), np.full((4, 4), NAN)]))
    n += refuses_each(GM.fit_gim, dict(data=data, steps=1), dict(
        steps=[0, *BAD_INT, -1], lr=[0.0, -1.0, *BAD_REAL], lam_targets=[-1.0, NAN], lam_l1=[-1.0, NAN],
        hidden=[0, *BAD_INT], rho_every=[0, *BAD_INT], threshold=[-1.0, NAN], log_every=[0, *BAD_INT],
        order=[[0, 0, 1, 2], [0, 1, 2], [0, 1, 2, 9]], seed=[-1, "0"]))
    n += refuses_each(GM.fit_unstructured, dict(data=data, steps=1), dict(
        steps=[0, *BAD_INT], lr=[0.0, *BAD_REAL], hidden=[0, *BAD_INT], seed=[-1, "0"]))
    n += refuses_each(GM.target_auroc, dict(scores=[0.1, 0.9], truth=[0, 1]), dict(
        scores=[[NAN, 1.0], [[0.1, 0.9]], [0.1], "x", None], truth=[[0, 2], [1, 1], [0.5, 1.0], "x"]),
        name_in_message=False)
    n += refuses_each(GM.structural_hamming, dict(W_est=scm.W, W_true=scm.W), dict(
        W_est=[np.zeros((3, 3)), np.zeros((4, 3)), np.full((4, 4), NAN), "x"], W_true=[np.zeros((4, 3)), None]),
        name_in_message=False)
    n += refuses_each(GM.meanshift_scores, dict(contexts=data["ood"], observational=data["observational"]), dict(
        observational=[np.ones((5, 4)), np.zeros((1, 4)), np.full((5, 4), NAN), "x"], contexts=[[]]),
        name_in_message=False)
    assert n > 150


@settings(max_examples=10)
@given(scores=hnp.arrays(np.float64, st.integers(2, 30), elements=st.floats(-10, 10)), data=st.data())
def test_target_auroc_dtypes_agree(scores, data):
    truth = data.draw(hnp.arrays(np.int64, scores.shape, elements=st.integers(0, 1)))
    if truth.min() == truth.max():
        return
    ref = GM.target_auroc(scores, truth)
    assert 0 <= ref <= 1
    assert ref == GM.target_auroc(non_contiguous(scores), truth.astype(bool))
    assert ref == GM.target_auroc(scores.tolist(), truth.tolist())
    s32 = scores.astype(np.float32)
    assert GM.target_auroc(s32, truth) == GM.target_auroc(s32.astype(float), truth)


# ------------------------------------------------------------------------------------------------------------- mec
from icml25nb.causal import mec as ME  # noqa: E402


@pytest.fixture(scope="module")
def cliquetree():
    G = ME.random_chordal_graph(8, 3, seed=0)
    g = ME._Graph(G)
    return G, ME._clique_tree(g, (1 << g.n) - 1)


def test_defect_mec(cliquetree):
    """Before: forbidden_prefixes(tree, -1) and components_flower(tree, -1) answered for the last clique (negative
    wrap-around), p = m gave IndexError; phi(10**7, [1]) and random_chordal_graph(10**6, 1) (a complete graph of
    5e11 edges) ran for minutes; phi('3', ...), phi(5, [1.5]), phi(-1, []) failed with unnamed TypeError/ValueError;
    sample_dag_in_mec(size=1e12) ran until memory ran out."""
    G, tree = cliquetree
    assert_refused(ME.forbidden_prefixes, tree, -1, name="p")
    assert_refused(ME.forbidden_prefixes, tree, tree.m, name="p")
    assert_refused(ME.components_flower, tree, -1, name="root")
    assert_refused(ME.SuperCliques.initial(tree).transfer, -1, name="i")
    assert_refused(ME.phi, 10**7, [1], name="size", timeout=5)
    assert_refused(ME.random_chordal_graph, 10**6, 1, name="n", timeout=5)
    assert_refused(ME.phi, "3", [1], name="size")
    assert_refused(ME.phi, 5, [1.5], name="chain")
    assert_refused(ME.phi, -1, [], name="size")
    assert_refused(ME.sample_dag_in_mec, G, size=10**12, name="size", timeout=5)


def test_mec_refuses_each(cliquetree):
    G, tree = cliquetree
    n = 0
    n += refuses_each(ME.phi, dict(size=5, chain=[1, 3]), dict(
        size=[-1, 10**7, *BAD_INT], chain=[[1.5], "ab", None, 3, [0], ["1"]]))
    n += refuses_each(ME.phi, dict(size=5, chain=[1, 3]), dict(chain=[[3, 1], [1, 5], [2, 2]]),
                      name_in_message=False)
    n += refuses_each(ME.forbidden_prefixes, dict(tree=tree, p=0), dict(p=[-1, tree.m, *BAD_INT], tree=[None, G]),
                      name_in_message=False)
    n += refuses_each(ME.components_flower, dict(tree=tree, root=0), dict(root=[-1, tree.m, *BAD_INT],
                                                                         tree=[None]), name_in_message=False)
    n += refuses_each(ME.random_chordal_graph, dict(n=6, n_cliques=2), dict(
        n=[0, *BAD_INT, *HUGE_SIZES], n_cliques=[0, *BAD_INT], max_subtree=[0, *BAD_INT], seed=[-1, "0"]),
        name_in_message=False)
    for fn in (ME.count_amo_clique_picking, ME.count_amo_super_cliques, ME.count_amo_tree_per_root,
               ME.count_amo_bruteforce, ME.n_maximal_cliques, ME.mec_size, ME.sample_dag_in_mec):
        bad = [None, "x", nx.cycle_graph(5) if fn not in (ME.n_maximal_cliques, ME.count_amo_bruteforce) else None,
               nx.MultiGraph([(0, 1), (0, 1)])]
        n += refuses_each(fn, dict(G=G) if "G" in fn.__code__.co_varnames[:1] else {fn.__code__.co_varnames[0]: G},
                          {fn.__code__.co_varnames[0]: bad}, name_in_message=False)
    n += refuses_each(ME.sample_dag_in_mec, dict(dag_or_cpdag=G), dict(size=[0, *BAD_INT_OPT, *HUGE_SIZES],
                                                                       seed=[-1, "0", 1.5]))
    n += refuses_each(ME.dag_to_cpdag, dict(dag=nx.DiGraph([(0, 1)])), dict(
        dag=[nx.DiGraph([(0, 1), (1, 0)]), nx.Graph([(0, 1)]), None, nx.DiGraph([(0, 0)])]), name_in_message=False)
    assert n > 80


@settings(max_examples=10)
@given(n=st.integers(2, 7), k=st.integers(1, 4), seed=st.integers(0, 10**6))
def test_mec_counts_agree(n, k, seed):
    """The three counting algorithms equal brute force on small random chordal graphs; numpy-int arguments give the
    same graph as Python ints."""
    G = ME.random_chordal_graph(n, k, seed=seed)
    assert nx.is_isomorphic(G, ME.random_chordal_graph(np.int64(n), np.int32(k), seed=np.int64(seed)))
    ref = ME.count_amo_bruteforce(G)
    assert ME.count_amo_clique_picking(G) == ME.count_amo_super_cliques(G) == ME.count_amo_tree_per_root(G) == ref


# ----------------------------------------------------------------------------------------------------------- lowra
from icml25nb.efficient import lowra as LR  # noqa: E402


@pytest.fixture(scope="module")
def lowra_w():
    W = LR.heavy_tailed_matrix(8, 64, 0)
    return W, LR.quantize(W, 2.0), LR.fit_codebooks(W)


def test_defect_lowra(lowra_w):
    """Before: nf_levels(4.0) / nf_levels(True) (NF4 / NF1 tables); normalize_blocks of a complex W (imaginary part
    dropped) or of values beyond float32 (NaN output); fit_codebooks(bits=(1.5, 2)) / bits='124' (truncated /
    parsed); quantize(target_bits='2' or True); weighted_lloyd_max(['1', '2'], ...); relative_error of (3, 1) vs (3,)
    (broadcast to 0.0) or with NaN (nan); QuantLoRALinear(alpha=nan) (NaN outputs); shuffle_widths(key=1.5) and
    shared_lloyd_error(bits=2.5) (truncated); stored_bytes_for(cols=0) (9 bytes); bit_accounting([]) /
    bits_over_target([], 2) / shared_lloyd_error([]): ZeroDivisionError; quantize(row_bits=[3]*8 or a short list):
    KeyError / IndexError; QuantLoRALinear(None) / effective_bits(None): AttributeError;
    heavy_tailed_matrix(1e7, 1e6): MemoryError."""
    W, qt, cb = lowra_w
    assert_refused(LR.nf_levels, 4.0, name="bits")
    assert_refused(LR.nf_levels, True, name="bits")
    assert_refused(LR.normalize_blocks, W + 1j, name="W")
    assert_refused(LR.normalize_blocks, W.astype(float) * 1e40, name="W")
    assert_refused(LR.fit_codebooks, W, (1.5, 2), name="bits")
    assert_refused(LR.fit_codebooks, W, "124", name="bits")
    assert_refused(LR.quantize, W, "2", name="target_bits")
    assert_refused(LR.quantize, W, True, name="target_bits")
    assert_refused(LR.weighted_lloyd_max, ["1", "2"], [1, 1], 2, name="x")
    assert_refused(LR.relative_error, np.ones((3, 1)), np.ones(3), name="W")
    assert_refused(LR.relative_error, np.ones(3), [NAN, 1, 1], name="What")
    assert_refused(LR.QuantLoRALinear, qt, alpha=NAN, name="alpha")
    assert_refused(LR.shuffle_widths, [1, 2, 4], 0, 1.5, name="key")
    assert_refused(LR.shared_lloyd_error, [W], 2.5, name="bits")
    assert_refused(LR.stored_bytes_for, [2], 0, name="cols")
    assert_refused(LR.bit_accounting, [], name="qts")
    assert_refused(LR.bits_over_target, [], 2.0, name="qts")
    assert_refused(LR.shared_lloyd_error, [], name="Ws")
    assert_refused(LR.quantize, W, 2.0, row_bits=[3] * 8, name="row_bits")
    assert_refused(LR.quantize, W, 2.0, row_bits=[2] * 7, name="row_bits")
    assert_refused(LR.QuantLoRALinear, None, name="qt")
    assert_refused(LR.effective_bits, None, name="qt")
    assert_refused(LR.heavy_tailed_matrix, 10**7, 10**6, name="rows")


def test_lowra_refuses_each(lowra_w):
    W, qt, cb = lowra_w
    n = 0
    bad_W = [W[0], np.zeros((0, 64)), np.full((2, 64), NAN), W + 1j, "x", None, W * np.float64(1e40)]
    n += refuses_each(LR.nf_levels, dict(bits=2), dict(bits=[0, 3, 5, *BAD_INT]))
    n += refuses_each(LR.normalize_blocks, dict(W=W), dict(W=bad_W, blocksize=[0, 7, -1, *BAD_INT]))
    n += refuses_each(LR.weighted_lloyd_max, dict(x=[0.1, 0.5, 0.9], w=[1, 1, 1], n_levels=2), dict(
        x=[[], [NAN, 1, 1], ["1", "2", "3"], [0.1, 0.5]], w=[[-1, 1, 1], [NAN, 1, 1]],
        n_levels=[1, *BAD_INT], iters=[-1, *BAD_INT]), name_in_message=False)
    n += refuses_each(LR.fit_codebooks, dict(W=W), dict(W=bad_W, bits=[(), (3,), (1, 1), (1.5,), "124", 4, None],
                                                        blocksize=[0, 7, *BAD_INT], iters=[-1, *BAD_INT]))
    n += refuses_each(LR.assign_precision, dict(errors=cb.errors, sizes=cb.sizes, target_bits=2.0), dict(
        errors=[cb.errors[:, :2], np.full_like(cb.errors, NAN), "x"], sizes=[cb.sizes[:-1], -cb.sizes, cb.sizes + 0.5],
        target_bits=[0.5, 5.0, *BAD_REAL], method=["x", None], bits=[(3,), "124"]), name_in_message=False)
    n += refuses_each(LR.quantize, dict(W=W), dict(
        W=bad_W, target_bits=[0.5, 5.0, *BAD_REAL], blocksize=[0, 7, *BAD_INT], method=["x", None],
        bits=[(3,), "124", (1.5,)], iters=[-1, *BAD_INT], row_bits=[[3] * 8, [2] * 7, [-1] * 8, "x"],
        codebooks=["x", LR.fit_codebooks(W[:4])]), name_in_message=False)
    n += refuses_each(LR.stored_bytes_for, dict(row_bits=[1, 2, 4], cols=64), dict(
        row_bits=[[3], [0], [1.5], "x", [[1]]], cols=[0, *BAD_INT], blocksize=[0, 7, *BAD_INT]),
        name_in_message=False)
    n += refuses_each(LR.bit_accounting, dict(qts=[qt]), dict(qts=[[], None, "x", [W]]))
    n += refuses_each(LR.bits_over_target, dict(qts=[qt], target_bits=2.0), dict(
        qts=[[], None, [W]], target_bits=[-1.0, *BAD_REAL]))
    n += refuses_each(LR.effective_bits, dict(qt=qt), dict(qt=[None, W, "x"]))
    n += refuses_each(LR.code_target_for_total, dict(cbs=[cb], total_bits=3.0), dict(
        cbs=[[], None, [W]], total_bits=[-1.0, *BAD_REAL], steps=[-1, *BAD_INT]))
    n += refuses_each(LR.relative_error, dict(W=W, What=W), dict(W=[W[0], "x", None, np.full_like(W, NAN)],
                                                                 What=[W[:2], np.full_like(W, INF)]))
    n += refuses_each(LR.QuantLoRALinear, dict(qt=qt), dict(
        qt=[None, W], rank=[-1, *BAD_INT], alpha=list(BAD_REAL), seed=[-1, "0"], bias=[np.zeros(3)]))
    n += refuses_each(LR.shuffle_widths, dict(row_bits=[1, 2, 4], seed=0), dict(
        row_bits=[[0], [1.5], "x"], seed=[-1, "0", 1.5], key=[-1, *BAD_INT]))
    n += refuses_each(LR.shared_lloyd_error, dict(Ws=[W]), dict(
        Ws=[[], None, W, [W[0]]], bits=[0, 5, *BAD_INT], iters=[-1, *BAD_INT]), name_in_message=False)
    n += refuses_each(LR.heavy_tailed_matrix, dict(rows=4, cols=8), dict(
        rows=[0, *BAD_INT, *HUGE_SIZES], cols=[0, *BAD_INT], seed=[-1, "0"]))
    model = nn.Sequential(nn.Linear(64, 8))
    n += refuses_each(LR.quantize_model, dict(model=model, skip=()), dict(
        model=[None, W], target_bits=[0.5, *BAD_REAL[:-1]], rank=[-1, *BAD_INT], alpha=list(BAD_REAL),
        total_bits=[-1.0, NAN, "3"], scope=["x"], method=["x"], iters=[-1, 2.5], seed=[-1, "0"]),
        name_in_message=False)
    assert n > 250


@settings(max_examples=8)
@given(W=hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.sampled_from([8, 16])),
                    elements=st.floats(-10, 10, width=32)))
def test_lowra_dtypes_agree(W):
    """quantize / normalize_blocks give the same answer for float64, float32, non-contiguous and list inputs
    holding the same (float32-representable) values; the decoded matrix is finite."""
    ref = LR.quantize(W, 2.0, blocksize=8, method="greedy")
    for v in (W.astype(np.float32), non_contiguous(W), W.tolist()):
        q = LR.quantize(v, 2.0, blocksize=8, method="greedy")
        assert np.array_equal(q.packed, ref.packed) and np.array_equal(q.bits, ref.bits)
    assert np.isfinite(LR.dequantize(ref)).all()
    assert same(LR.normalize_blocks(non_contiguous(W), 8), LR.normalize_blocks(W, 8))


# ------------------------------------------------------------------------------------------------------- combimots
from icml25nb.generative import combimots as CM  # noqa: E402

_UW, _UN, _UP = np.ones((3, 2)), np.array([1.0, 2.0, 0.0]), np.full((3, 2), 0.5)


def test_defect_combimots():
    """Before: fingerprints('CCO') fingerprinted the characters C, C, O as three molecules; diversity('CCO') ran
    for minutes; combimots_ucb / scalarised_ucb with c=nan or W=nan returned NaN, with P (3, 1) or N (1,) for 3
    siblings broadcast into an answer, with N < 0: 'math domain error'; dominated_pairs of a NaN row counted 0,
    of a 1-D F: IndexError; fingerprints(n_bits=6.4e12) / dominated_pairs of 1e6 rows: OverflowError /
    MemoryError."""
    assert_refused(CM.fingerprints, "CCO", name="smiles")
    assert_refused(CM.diversity, "CCO", name="smiles", timeout=5)
    assert_refused(CM.combimots_ucb, _UW, _UN, _UP, NAN, name="c")
    assert_refused(CM.scalarised_ucb, _UW * NAN, _UN, _UP, 1.0, name="W")
    assert_refused(CM.combimots_ucb, _UW, _UN, _UP[:, :1], 1.0, name="P")
    assert_refused(CM.combimots_ucb, _UW, _UN[:1], _UP, 1.0, name="N")
    assert_refused(CM.combimots_ucb, _UW, -_UN, _UP, 1.0, name="N")
    assert_refused(CM.dominated_pairs, [[NAN, 1.0], [0.0, 0.0]], name="F")
    assert_refused(CM.dominated_pairs, np.ones(3), name="F")
    assert_refused(CM.fingerprints, ["CCO"], n_bits=64 * 10**11, name="n_bits")
    assert_refused(CM.dominated_pairs, np.zeros((10**6, 2)), name="F")


def test_combimots_refuses_each():
    n = 0
    for fn in (CM.combimots_ucb, CM.scalarised_ucb):
        n += refuses_each(fn, dict(W=_UW, N=_UN, P=_UP, c=1.0), dict(
            W=[_UW[0], np.zeros((0, 2)), _UW * NAN, "x", None], N=[-_UN, _UN[:1], [NAN] * 3, "x"],
            P=[_UP[:, :1], _UP * INF, "x"], c=[-1.0, *BAD_REAL]))
    n += refuses_each(CM.fingerprints, dict(smiles=["CCO", "c1ccccc1"]), dict(
        smiles=["CCO", None, 3, ["CCO", "not a smiles"], [None]], radius=[-1, 2.5, "3", None],
        n_bits=[0, 100, 2.5, "64", 64 * 10**11]), name_in_message=False)
    n += refuses_each(CM.diversity, dict(smiles=["CCO", "c1ccccc1"]), dict(smiles=["CCO", None, ["CCO", "xx("]]))
    n += refuses_each(CM.dominated_pairs, dict(F=[[1.0, 0.0], [0.0, 1.0]]), dict(
        F=[np.ones(3), [[NAN, 1.0]], "x", None, np.zeros((10**6, 2))]))
    n += refuses_each(CM.canonical_smiles, dict(smiles="CCO"), dict(smiles=["", None, 3, "not a smiles("]))
    n += refuses_each(CM.draw_library, dict(n_blocks=4, seed=0), dict(n_blocks=[1, 61, *BAD_INT],
                                                                       seed=[-1, "0", 1.5]), name_in_message=False)
    space = CM.library_space(CM.draw_library(6, 0))
    n += refuses_each(CM.library_space, dict(blocks=CM.draw_library(6, 0)), dict(order=["x", None]))
    n += refuses_each(CM.ParetoMCTS, dict(space=space), dict(
        space=[None, "x"], c=[-1.0, *BAD_REAL], max_reactions=[0, *BAD_INT], seed=[-1, "0"], objectives=[None, 3]),
        name_in_message=False)
    search = CM.RandomRollouts(space, seed=0)
    n += refuses_each(search.run, dict(n_rollouts=1), dict(n_rollouts=[-1, *BAD_INT]))
    prods = search.run(2)
    if prods:
        D = len(prods[0].scores)
        n += refuses_each(CM.front_metrics, dict(products=prods), dict(
            products=[[], "x", [1, 2]], ref=[[0.0] * (D + 1), [NAN] * D, "x"]), name_in_message=False)
    assert n > 80


@settings(max_examples=15)
@given(W=hnp.arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 4)), elements=st.floats(0, 5)),
       data=st.data(), c=st.floats(0, 20))
def test_ucb_dtypes_agree(W, data, c):
    """Both UCB rules: finite, and the same for float32 / non-contiguous / list inputs as for float64 arrays."""
    N = data.draw(hnp.arrays(np.float64, W.shape[:1], elements=st.integers(0, 50).map(float)))
    P = data.draw(hnp.arrays(np.float64, W.shape, elements=st.floats(0, 1)))
    for fn in (CM.combimots_ucb, CM.scalarised_ucb):
        ref = fn(W, N, P, c)
        assert np.isfinite(ref).all()
        assert same(fn(non_contiguous(W), non_contiguous(N), non_contiguous(P), c), ref)
        assert same(fn(W.tolist(), N.astype(np.int64).tolist(), P.tolist(), c), ref)
        W32, P32 = W.astype(np.float32), P.astype(np.float32)
        assert same(fn(W32, N.astype(np.int32), P32, np.float32(c)),
                    fn(W32.astype(float), N, P32.astype(float), float(np.float32(c))))


# ------------------------------------------------------------------------------------------------------ crl_sanity
import torch  # noqa: E402

from icml25nb.causal import crl_sanity as CR  # noqa: E402


def test_defect_crl_sanity():
    """Before: info_nce / nt_xent_cosine / nt_xent_sqdist with tau=0 returned NaN (nt_xent_cosine also at
    tau=1e-40), with tau=-1 a loss of the wrong sign, with a NumPy a: TypeError from torch.bmm, with a (1, 8, 3)
    vs b (1, 4, 3): a shape error naming nothing; ContrastiveCRL(lr=inf) / MultiviewCRL(lr=inf) trained to NaN,
    lr='3': TypeError comparing str and int; supervised_oracle(lr=inf / z_train with NaN): NaN predictions;
    mcc / correlation_matrix of string arrays (parsed); sample_interventional_data(n_per_env=1e10): MemoryError."""
    a = torch.randn(1, 8, 3)
    for fn in (CR.info_nce, CR.nt_xent_cosine, CR.nt_xent_sqdist):
        assert_refused(fn, a, a + 0.01, 0.0, name="tau")
        assert_refused(fn, a, a + 0.01, 1e-40, name="tau")
        assert_refused(fn, a, a + 0.01, -1.0, name="tau")
        assert_refused(fn, a.numpy(), a, name="a")
        assert_refused(fn, a, a[:, :4], name="b")
    assert_refused(CR.ContrastiveCRL, lr=INF, name="lr")
    assert_refused(CR.MultiviewCRL, lr=INF, name="lr")
    assert_refused(CR.ContrastiveCRL, lr="3", name="lr")
    X, z = np.random.default_rng(0).random((6, 4)), np.random.default_rng(1).random((6, 5))
    assert_refused(CR.supervised_oracle, X, z, X, z, lr=INF, name="lr")
    assert_refused(CR.supervised_oracle, X, np.where(z > 0.5, NAN, z), X, z, name="z_train")
    assert_refused(CR.mcc, [["1", "2"]] * 3, [["1"]] * 3, name="z_hat")
    assert_refused(CR.sample_interventional_data, 10**10, name="n_per_env")


def test_crl_sanity_refuses_each():
    n = 0
    a = torch.randn(2, 6, 3)
    for fn in (CR.info_nce, CR.nt_xent_cosine, CR.nt_xent_sqdist):
        n += refuses_each(fn, dict(a=a, b=a + 0.1), dict(
            a=[a.numpy(), a[0], a * NAN, a[:, :0], "x", None], b=[a[:, :3], a * INF, None],
            tau=[0.0, -1.0, 1e-40, *BAD_REAL]))
    z = np.random.default_rng(0).random((10, 5))
    n += refuses_each(CR.correlation_matrix, dict(a=z, b=z), dict(a=[z[:, 0], z[:2], z * NAN, "x", None],
                                                                  b=[z[:5], "x"]), name_in_message=False)
    n += refuses_each(CR.mcc, dict(z_hat=z, z=z), dict(z_hat=[z[:, :2], z * NAN, "x"], z=[z[:4], None]),
                      name_in_message=False)
    n += refuses_each(CR.block_r2, dict(h=z, z=z), dict(h=[z[:, :4], "x"], z=[z * INF]), name_in_message=False)
    n += refuses_each(CR.to_physical, dict(z=z), dict(z=[z[:, :4], z * NAN, "x", None]))
    n += refuses_each(CR.sample_interventional_data, dict(n_per_env=5), dict(
        n_per_env=[1, *BAD_INT, *HUGE_SIZES], seed=[-1, "0"], W=[np.ones((2, 3)), np.full((2, 2), NAN), "x",
                                                               np.ones((2, 2))]), name_in_message=False)
    n += refuses_each(CR.linear_ica_mcc, dict(n=20, d=2, dim=3), dict(
        n=[9, *BAD_INT, *HUGE_SIZES], d=[0, *BAD_INT], dim=[1, *BAD_INT], seed=[-1, "0"]), name_in_message=False)
    n += refuses_each(CR.ContrastiveCRL, {}, dict(
        d=[0, *BAD_INT], hidden=[0, *BAD_INT], steps=[-1, *BAD_INT], batch=[1, *BAD_INT], lr=[0.0, *BAD_REAL],
        kappa=[-1.0, *BAD_REAL], eta=[-1.0, *BAD_REAL], seed=[-1, "0"]), name_in_message=False)
    n += refuses_each(CR.MultiviewCRL, {}, dict(
        hidden=[0, *BAD_INT], steps=[-1, *BAD_INT], batch=[1, *BAD_INT], lr=[0.0, *BAD_REAL],
        tau=[0.0, 1e-40, *BAD_REAL], clip=[0.0, *BAD_REAL], loss=["x", None], seed=[-1, "0"]),
        name_in_message=False)
    X = np.random.default_rng(0).random((6, 4))
    n += refuses_each(CR.supervised_oracle, dict(X_train=X, z_train=z[:6], X_test=X, z_test=z[:6], steps=1), dict(
        X_train=[X * NAN, "x", X[0]], z_train=[z[:5], z[:6] * NAN, "x"], z_test=[z[:5], "x"],
        hidden=[0, *BAD_INT], steps=[0, *BAD_INT], batch=[0, *BAD_INT], lr=[0.0, *BAD_REAL], seed=[-1, "0"]),
        name_in_message=False)
    n += refuses_each(CR.simulate_light_tunnel, dict(z=z[:2], renderer="own"), dict(
        z=[z[:, :4], z * NAN, "x"], res=[7, *BAD_INT], mode=["x", None], renderer=["x"], seed=[-1, "0"]),
        name_in_message=False)
    assert n > 200


@settings(max_examples=10)
@given(a=hnp.arrays(np.float64, st.tuples(st.integers(3, 20), st.integers(1, 4)), elements=st.floats(-5, 5)),
       data=st.data())
def test_correlation_dtypes_agree(a, data):
    """correlation_matrix / mcc: float32, non-contiguous and list inputs give the float64 answer; never NaN."""
    b = data.draw(hnp.arrays(np.float64, (a.shape[0], data.draw(st.integers(1, a.shape[1]))),
                             elements=st.floats(-5, 5)))
    C = CR.correlation_matrix(a, b)
    assert np.isfinite(C).all()
    assert same(CR.correlation_matrix(non_contiguous(a), b.tolist()), C)
    a32 = a.astype(np.float32)
    assert same(CR.correlation_matrix(a32, b), CR.correlation_matrix(a32.astype(float), b))
    m = CR.mcc(a, b)
    assert np.isfinite(m) and same(CR.mcc(a.tolist(), non_contiguous(b)), m)


def test_defect_gim_models(gimdata):
    """Before: sample_gim / sample_unstructured of NaN features returned NaN samples, of n=1e12: MemoryError;
    sample_unstructured of a short feature vector: a torch RuntimeError; LinearSCM / Intervention of string arrays
    parsed them; predict_targets(model, []): 'need at least one array to stack'."""
    scm, data = gimdata
    model, _ = GM.fit_gim(data, steps=1)
    um = GM.fit_unstructured(data, steps=1)
    f = data["ood"][0].features
    n = 0
    for fn, m in ((GM.sample_gim, model), (GM.sample_unstructured, um)):
        n += refuses_each(fn, dict(model=m, features=f, n=2), dict(
            features=[f * NAN, f[:2], "x", None], n=[0, *BAD_INT, *HUGE_SIZES], model=[None, scm], seed=[-1, "0"]),
            name_in_message=False)
        assert_refused(fn, m, f * NAN, 2, name="features")
        assert_refused(fn, m, f, 10**12, name="n")
    assert_refused(GM.sample_unstructured, um, f[:2], 2, name="features")
    assert_refused(GM.LinearSCM, [["0", "1"], ["0", "0"]], [1.0, 1.0], name="W")
    assert_refused(GM.Intervention, ["1", "0"], [1.0, 1.0], name="mask")
    assert_refused(GM.predict_targets, model, [], name="contexts")
    assert n > 20


def test_defect_combimots_space():
    """Before: ReactionSpace.react with an invalid SMILES and ReactionSpace.replay of a string log: AttributeError
    ('NoneType' object has no attribute 'HasSubstructMatch' / 'str' object has no attribute 'template')."""
    space = CM.library_space(CM.draw_library(6, 0))
    assert_refused(space.react, "CCO", "xx(", name="smiles")
    assert_refused(space.replay, "x", name="log")
    n = refuses_each(CM.ReactionSpace, dict(blocks=CM.draw_library(4, 0)), dict(
        blocks=["CCO", ["CCO", "CCO"], [], None, ["xx("]], root_order=["x", None]), name_in_message=False)
    n += refuses_each(CM.ProxyObjectives, {}, dict(references=["CCO", {}, {"a": "xx("}, None]))
    assert n > 8


def test_defect_lowra_model():
    """Before: quantized_layers('x') / model_bits('x'): AttributeError ('str' object has no attribute
    'named_modules')."""
    assert_refused(LR.quantized_layers, "x", name="model")
    assert_refused(LR.model_bits, None, name="model")
    assert_refused(LR.model_bits, nn.Linear(3, 3), name="quantised")
