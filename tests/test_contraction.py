"""Edge-contraction kernels: reference, @njit and CUDA (simulator) agree; trials are exact Karger; min_cut is exact."""
import math
import warnings

import networkx as nx
import numba
import numpy as np
import pytest
from scipy import stats

from icml25nb.algorithms.mincut import min_cut, ring_of_cliques
from icml25nb.kernels import contraction as K


def small_graph(seed, n=12, m=30, weighted=True, zero_weights=False):
    g = np.random.default_rng(seed)
    src, dst = g.integers(0, n, m), g.integers(0, n, m)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    w = g.integers(1, 6, len(src)).astype(float) if weighted else np.ones(len(src))
    if zero_weights:
        w[g.random(len(w)) < 0.2] = 0.0
    return n, src, dst, w


def simple_graph(seed, n, m):
    "small_graph merged into a simple networkx graph (parallel weights summed), and its edge arrays in G.edges order."
    n, src, dst, w = small_graph(seed, n=n, m=m)
    G = nx.Graph()
    G.add_nodes_from(range(n))
    for a, b, x in zip(src, dst, w):
        G.add_edge(int(a), int(b), weight=G.get_edge_data(a, b, {"weight": 0})["weight"] + x)
    es = np.array([e[0] for e in G.edges])
    ed = np.array([e[1] for e in G.edges])
    ew = np.array([G.edges[e]["weight"] for e in G.edges], float)
    return G, es, ed, ew


CONFIGS = [  # (predicted fraction, boost, t)
    (None, 1.0, 2), (0.3, math.inf, 2), (0.3, math.inf, 4), (0.3, 5.0, 3), (0.6, math.inf, 6),
]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("cfg", CONFIGS, ids=[f"pred{c[0]}-B{c[1]}-t{c[2]}" for c in CONFIGS])
def test_reference_and_njit_agree(seed, cfg):
    frac, boost, t = cfg
    n, src, dst, w = small_graph(seed, weighted=seed != 4, zero_weights=seed == 3)  # seed 4: unit weights
    pred = None if frac is None else np.random.default_rng(seed + 9).random(len(w)) < frac
    r1, tier1, r2 = K.phase_rates(w, pred, boost)
    ids = np.arange(40)
    ref = K.trials_ref(n, src, dst, w, r1, tier1, r2, t, seed, ids)
    fast = K.trials_njit(n, src, dst, w, r1, tier1, r2, t, seed, ids)
    assert np.array_equal(ref, fast)
    for i in (0, 7):
        v_ref, side_ref = K.trial_ref(n, src, dst, w, r1, tier1, r2, t, seed, i)
        v, side = K.trial_side_njit(n, src, dst, w, r1, tier1, r2, t, seed, i)
        assert v == v_ref and np.array_equal(side, side_ref)
        assert K.cut_value(src, dst, w, side) == v


@pytest.mark.parametrize("cfg", CONFIGS[:4], ids=[f"pred{c[0]}-B{c[1]}-t{c[2]}" for c in CONFIGS[:4]])
def test_cuda_kernel_under_simulator_agrees(cfg):
    frac, boost, t = cfg
    n, src, dst, w = small_graph(5, n=8, m=16, weighted=frac is not None)  # plain config: unit weights path
    pred = None if frac is None else np.random.default_rng(1).random(len(w)) < frac
    r1, tier1, r2 = K.phase_rates(w, pred, boost)
    ids = np.arange(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = K.trials_cuda(n, src, dst, w, r1, tier1, r2, t, 3, ids, threads_per_block=2)
    assert np.array_equal(got, K.trials_ref(n, src, dst, w, r1, tier1, r2, t, 3, ids))


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs a pool of at least 2 numba threads")
def test_same_cuts_whatever_the_thread_count():
    G = ring_of_cliques(8, 6)
    src, dst = np.array([e[0] for e in G.edges]), np.array([e[1] for e in G.edges])
    w = np.ones(len(src))
    r1, tier1, r2 = K.phase_rates(w)
    old = numba.get_num_threads()
    try:
        runs = []
        for k in range(1, numba.config.NUMBA_NUM_THREADS + 1):
            numba.set_num_threads(k)
            runs.append(K.trials_njit(48, src, dst, w, r1, tier1, r2, 2, 11, np.arange(64)))
    finally:
        numba.set_num_threads(old)
    assert all(np.array_equal(runs[0], r) for r in runs)


def test_radix_sort_matches_stable_argsort():
    g = np.random.default_rng(0)
    for cnt in (0, 1, 5, 48, 49, 300):
        keys = g.integers(0, 2**63, cnt, dtype=np.int64).astype(np.uint64)
        keys[: cnt // 3] = keys[0] if cnt else keys[:0]  # ties
        k, order = keys.copy(), np.arange(cnt)
        K._radix_sort(k, order, np.empty(cnt, np.uint64), np.empty(cnt, np.int64), np.empty(2048, np.int64), cnt)
        assert np.array_equal(order, np.argsort(keys, kind="stable"))


def test_keys_preserve_the_clock_order():
    key = np.uint64(12345)
    rates = np.random.default_rng(1).uniform(0.01, 100, 2000)
    counters = np.arange(2000)
    keys = K._keys_ref(key, counters, rates, np.zeros(2000, np.uint8), False)
    u = ((K.rng.u64_ref(key, counters.astype(np.uint64)) >> np.uint64(11)).astype(np.int64) + 1) * 2.0**-53
    clocks = -np.log(u) / rates
    assert np.array_equal(np.argsort(keys, kind="stable"), np.argsort(clocks, kind="stable"))
    # equal rates: the no-logarithm keys give the same order as the clocks
    same = np.full(2000, 3.0)
    fast = K._keys_ref(key, counters, same, np.zeros(2000, np.uint8), True)
    assert np.array_equal(np.argsort(fast, kind="stable"), np.argsort(-np.log(u) / same, kind="stable"))
    for equal, r in ((False, rates), (True, same)):
        tiered = K._keys_ref(key, counters, r, (counters % 2).astype(np.uint8), equal)
        assert tiered[counters % 2 == 1].min() > tiered[counters % 2 == 0].max()  # tier 1 always after tier 0


@pytest.mark.parametrize("boost", [1.0, 4.0])
def test_trials_follow_kargers_distribution(boost):
    # triangle 0-1 (a), 1-2 (b), 0-2 (c): contracting edge e first leaves the cut isolating the third node.
    # With (0,1) predicted in the cut and the others boosted by B, edge e goes first w.p. w'_e / sum w'.
    a, b, c = 1.0, 2.0, 3.0
    src, dst, w = np.array([0, 1, 0]), np.array([1, 2, 2]), np.array([a, b, c])
    pred = np.array([True, False, False])
    r1, tier1, r2 = K.phase_rates(w, pred if boost != 1.0 else None, boost)
    vals = K.trials_njit(3, src, dst, w, r1, tier1, r2, 2, 0, np.arange(20000))
    wp = np.array([a, b * boost, c * boost]) if boost != 1.0 else w
    expected = wp / wp.sum() * len(vals)  # contracting (0,1) -> cut b+c, (1,2) -> a+c, (0,2) -> a+b
    observed = [np.sum(vals == b + c), np.sum(vals == a + c), np.sum(vals == a + b)]
    assert sum(observed) == len(vals)
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_infinite_boost_never_contracts_a_predicted_edge_first():
    src, dst, w = np.array([0, 1, 0]), np.array([1, 2, 2]), np.array([1.0, 1.0, 1.0])
    r1, tier1, r2 = K.phase_rates(w, np.array([False, True, True]), math.inf)
    vals = K.trials_njit(3, src, dst, w, r1, tier1, r2, 2, 0, np.arange(500))
    assert np.all(vals == 2.0)  # (0,1) always first: node 2 isolated


def test_long_chain_union_find_does_not_crash():
    n = 1_000_000
    src, dst, w = np.arange(n - 1), np.arange(1, n), np.ones(n - 1)
    r1, tier1, r2 = K.phase_rates(w)
    vals = K.trials_njit(n, src, dst, w, r1, tier1, r2, 2, 0, np.arange(2))
    assert np.all(vals == 1.0)


def test_karger_stein_matches_stoer_wagner_and_its_side():
    for seed in range(15):
        G, el_src, el_dst, el_w = simple_graph(seed, n=14, m=40)
        n = G.number_of_nodes()
        exact = nx.stoer_wagner(G)[0] if nx.is_connected(G) else 0.0
        vals = K.karger_stein_njit(n, el_src, el_dst, el_w, run_ids=np.arange(30))
        assert vals.min() == exact and np.all(vals >= exact)
        v, side = K.karger_stein_njit(n, el_src, el_dst, el_w, side_of=int(np.argmin(vals)))
        assert v == exact == K.cut_value(el_src, el_dst, el_w, side)


def test_min_cut_on_many_random_weighted_graphs():
    g = np.random.default_rng(3)
    checked = 0
    for i in range(60):
        n = int(g.integers(4, 18))
        H = nx.gnm_random_graph(n, int(g.integers(n, 4 * n)), seed=i)
        for u, v in H.edges:
            H[u][v]["weight"] = int(g.integers(1, 10))
        exact = nx.stoer_wagner(H)[0] if nx.is_connected(H) else 0
        for method in ("karger", "karger_stein"):
            res = min_cut(H, method=method, seed=i)
            assert res.value == exact, (i, method)
            assert nx.cut_size(H, {v for v, s in zip(H.nodes, res.side) if s}, weight="weight") == res.value
            checked += 1
    assert checked == 120


def test_tuple_input_and_bad_input():
    res = min_cut((4, np.array([0, 1, 2]), np.array([1, 2, 3]), np.array([3.0, 1.0, 2.0])), method="karger")
    assert res.value == 1.0 and list(res.side) == [True, True, False, False]
    with pytest.raises(ValueError, match="non-negative"):
        min_cut((3, np.array([0, 1]), np.array([1, 2]), np.array([1.0, -2.0])))
    with pytest.raises(ValueError, match="finite"):
        min_cut((3, np.array([0, 1]), np.array([1, 2]), np.array([1.0, np.nan])))
    with pytest.raises(ValueError, match="one entry per edge"):
        min_cut(nx.path_graph(4), predictions=np.array([True]))


@pytest.mark.parametrize("kind", ["plain", "weighted", "tiers", "boost", "two-phase"])
def test_lazy_bucket_sort_path_agrees_with_reference(kind):
    # more than 4096 edges: the trial distributes keys into buckets and sorts them lazily
    src, dst, w = K.planted_cut_edges(700, avg_degree=16, crossing=5, seed=2)
    assert len(src) > 4096
    if kind == "weighted":
        w = np.random.default_rng(0).integers(1, 9, len(w)).astype(float)
    pred = (src < 350) != (dst < 350)
    pred[::50] = True
    boost, t, p = {"plain": (1.0, 2, None), "weighted": (1.0, 2, None), "tiers": (math.inf, 2, pred),
                   "boost": (7.0, 2, pred), "two-phase": (math.inf, 40, pred)}[kind]
    r1, tier1, r2 = K.phase_rates(w, p, boost)
    ids = np.arange(6)
    assert np.array_equal(K.trials_ref(700, src, dst, w, r1, tier1, r2, t, 4, ids),
                          K.trials_njit(700, src, dst, w, r1, tier1, r2, t, 4, ids))


def test_reference_keys_are_bit_identical_to_the_kernel_keys():
    rates = np.random.default_rng(5).uniform(1e-3, 1e3, 20000)
    tiers = (np.arange(20000) % 3 == 0).astype(np.uint8)
    key = np.uint64(77)
    ref = K._keys_ref(key, np.arange(20000), rates, tiers, False)

    @numba.njit
    def kernel_keys(key, rates, tiers):
        out = np.empty(rates.shape[0], np.uint64)
        for e in range(rates.shape[0]):
            out[e] = K._edge_key(key, e, rates[e], tiers[e], False)
        return out

    assert np.array_equal(ref, kernel_keys(key, rates, tiers))


def _exact_two_phase_probs(n, edges, r1, tier1, r2, t):
    "Probability of each final 2-partition (as a frozenset of node 0's side) under the two-phase process, by recursion."
    from functools import lru_cache

    def rates_now(k, e):
        return (r1[e], tier1[e]) if k > t else (r2[e], 0)

    @lru_cache(maxsize=None)
    def go(labels):
        k = len(set(labels))
        if k <= 2:
            return {frozenset(v for v in range(n) if labels[v] == labels[0]): 1.0}
        crossing = [e for e, (a, b) in enumerate(edges) if labels[a] != labels[b]]
        live = [(e, *rates_now(k, e)) for e in crossing if rates_now(k, e)[0] > 0]
        if not live:
            return {frozenset(v for v in range(n) if labels[v] == labels[0]): 1.0}
        top = min(tier for _, _, tier in live)  # infinite boost: the lower tier always rings first
        live = [(e, r) for e, r, tier in live if tier == top]
        total = sum(r for _, r in live)
        out = {}
        for e, r in live:
            a, b = edges[e]
            la, lb = labels[a], labels[b]
            nxt = tuple(la if x == lb else x for x in labels)
            for side, p in go(nxt).items():
                out[side] = out.get(side, 0.0) + p * r / total
        return out

    return go(tuple(range(n)))


@pytest.mark.parametrize("boost,t", [(math.inf, 2), (math.inf, 3), (4.0, 3), (4.0, 4), (1.0, 2)])
def test_two_phase_trials_match_the_exactly_enumerated_process(boost, t):
    edges = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (0, 2), (1, 3), (2, 4)]
    src, dst = np.array([a for a, _ in edges]), np.array([b for _, b in edges])
    w = np.array([1.0, 2.0, 1.0, 3.0, 1.0, 2.0, 1.0, 2.0])
    pred = np.array([True, False, True, False, False, False, True, False])
    r1, tier1, r2 = K.phase_rates(w, pred if boost != 1.0 else None, boost)
    probs = _exact_two_phase_probs(5, edges, r1, tier1, r2, t)
    N = 20000
    counts = {}  # replay trials one by one for their sides (several partitions can share a cut value)
    for i in range(N):
        side = frozenset(np.nonzero(K.trial_side_njit(5, src, dst, w, r1, tier1, r2, t, 1, i)[1])[0].tolist())
        counts[side] = counts.get(side, 0) + 1
    assert set(counts) <= set(probs)
    keys = sorted(probs, key=sorted)
    expected = np.array([probs[k] for k in keys]) * N
    observed = np.array([counts.get(k, 0) for k in keys])
    keep = expected > 5
    assert stats.chisquare(observed[keep], expected[keep] * observed[keep].sum() / expected[keep].sum()).pvalue > 1e-3


def test_boosted_karger_stein_finds_the_minimum_with_predictions():
    g = np.random.default_rng(8)
    for seed in range(8):
        G, es, ed, ew = simple_graph(seed, n=12, m=36)
        n = G.number_of_nodes()
        if not nx.is_connected(G):
            continue
        exact, (sa, _) = nx.stoer_wagner(G)
        inside = np.isin(es, list(sa)) != np.isin(ed, list(sa))
        noisy = inside ^ (g.random(len(ew)) < 0.2)
        for pred, boost, t in [(inside, math.inf, 2), (noisy, math.inf, 4), (noisy, 3.0, 3)]:
            vals = K.karger_stein_njit(n, es, ed, ew, predicted=pred, boost=boost, t=t, seed=seed,
                                       run_ids=np.arange(20))
            assert vals.min() == exact and np.all(vals >= exact)
        perfect = K.karger_stein_njit(n, es, ed, ew, predicted=inside, boost=math.inf, t=2, seed=seed,
                                      run_ids=np.arange(20))
        assert np.all(perfect == exact)  # perfect predictions: every run finds it


def test_karger_stein_sparse_frames_above_the_dense_threshold():
    # n = 160 > DENSE_K: the top of the recursion runs on sparse frames, the rest on dense matrices
    assert K.DENSE_K < 160
    G = ring_of_cliques(16, 10)
    src, dst = np.array([e[0] for e in G.edges]), np.array([e[1] for e in G.edges])
    w = np.ones(len(src))
    exact = nx.stoer_wagner(G)[0]
    vals = K.karger_stein_njit(160, src, dst, w, run_ids=np.arange(12))
    assert vals.min() == exact and np.all(vals >= exact)
    v, side = K.karger_stein_njit(160, src, dst, w, side_of=int(np.argmin(vals)))
    assert v == exact == K.cut_value(src, dst, w, side) and side[0]
    _, (a, _) = nx.stoer_wagner(G)
    inside = np.isin(src, list(a)) != np.isin(dst, list(a))
    boosted = K.karger_stein_njit(160, src, dst, w, predicted=inside, boost=math.inf, t=2, run_ids=np.arange(6))
    assert np.all(boosted == exact)


def _issue_graph():
    "The graph of the out-of-bounds report: 5004 edges, whose plain trial 0 fills all 2047 lazy buckets."
    from icml25nb.algorithms.mincut import as_edge_list, planted_cut_graph
    el = as_edge_list(planted_cut_graph(n=1000, avg_degree=10, crossing=4, seed=1))
    assert len(el.src) > 4096
    pred = (el.src < 500) != (el.dst < 500)
    return el, pred


@pytest.mark.parametrize("kind", ["plain", "boost"])
def test_full_bucket_range_stays_in_bounds(kind):
    # regression: with 2047 buckets the bucket starts ran one past the scratch array (caught by NUMBA_BOUNDSCHECK=1,
    # which CI sets for a second run of the kernel tests); the cut values still equal the reference's
    el, pred = _issue_graph()
    r1, tier1, r2 = K.phase_rates(el.w, pred if kind == "boost" else None, 6.0 if kind == "boost" else 1.0)
    ids = np.arange(3)
    assert np.array_equal(K.trials_ref(el.n, el.src, el.dst, el.w, r1, tier1, r2, 2, 0, ids),
                          K.trials_njit(el.n, el.src, el.dst, el.w, r1, tier1, r2, 2, 0, ids))
    v, side = K.trial_side_njit(el.n, el.src, el.dst, el.w, r1, tier1, r2, 2, 0, 0)
    assert K.cut_value(el.src, el.dst, el.w, side) == v


@pytest.mark.parametrize("kind", ["plain", "boost"])
def test_cuda_simulator_on_more_than_4096_edges(kind):
    # every code path of the CUDA kernel, the lazy bucket sort included (the simulator checks every index)
    el, pred = _issue_graph()
    r1, tier1, r2 = K.phase_rates(el.w, pred if kind == "boost" else None, 6.0 if kind == "boost" else 1.0)
    ids = np.arange(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = K.trials_cuda(el.n, el.src, el.dst, el.w, r1, tier1, r2, 2, 0, ids, threads_per_block=1)
    assert np.array_equal(got, K.trials_njit(el.n, el.src, el.dst, el.w, r1, tier1, r2, 2, 0, ids))


def test_dense_small_cut_is_the_first_minimal_mask_by_enumeration():
    "The branch-free leaf solver: value and first minimal mask equal a direct enumeration, with and without P."
    rng_ = np.random.default_rng(5)
    V = np.empty(32)
    for trial in range(60):
        k = int(rng_.integers(2, 7))
        U = np.zeros((8, 8))
        P = np.full((8, 8), 7.0)  # stale values that must be ignored without predictions
        B = np.triu(rng_.integers(0, 3, (k, k)) * rng_.random((k, k)) ** (trial % 2), 1)  # ties on even trials
        U[:k, :k] = B + B.T
        has_p = trial % 3 == 0
        if has_p:
            C = np.triu(rng_.random((k, k)) * (rng_.random((k, k)) < 0.5), 1)
            P[:k, :k] = C + C.T
        W = U[:k, :k] + (P[:k, :k] if has_p else 0.0)
        vals = [sum(W[a, b] for a in range(k) for b in range(a + 1, k) if ((m >> a) & 1) != ((m >> b) & 1))
                for m in range(1, 1 << (k - 1))]
        best, mask = K._dense_small_cut(k, U, P, has_p, V)
        assert best == min(vals) and mask == 1 + int(np.argmin(vals))
