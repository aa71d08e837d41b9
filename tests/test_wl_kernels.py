"""kernels/wl.py: 1-WL colour refinement. The @njit kernel and the CUDA hashing kernel (simulator) against the Python
reference, all against networkx's Weisfeiler-Lehman hashes. `make test` runs this file again under
NUMBA_BOUNDSCHECK=1; the graphs below take every path of the kernels there: forced hash collisions (hash_bits 1-3),
exact-signature mismatches on colour, degree and neighbour multiset, early stop on a stable partition, the empty
graph, isolated nodes and self-loops."""
import warnings

import networkx as nx
import numpy as np
import pytest

from icml25nb.kernels import wl as K


def _csr(G):
    A = nx.to_scipy_sparse_array(G, nodelist=list(G), weight=None, format="csr")
    return A.indptr.astype(np.int64), A.indices.astype(np.int64)


def _random_graphs(seed, count=12, max_n=40):
    rng = np.random.default_rng(seed)
    for i in range(count):
        n = int(rng.integers(1, max_n))
        m = int(rng.integers(0, 2 * n + 1))
        G = nx.gnm_random_graph(n, min(m, n * (n - 1) // 2), seed=int(rng.integers(2**31)))
        if i % 4 == 3 and n > 1:  # a few self-loops
            G.add_edges_from((v, v) for v in rng.choice(n, size=2).tolist())
        yield G


def _nx_depths(G, iterations, node_attr=None):
    "networkx's subgraph hashes as first-occurrence colours, one row per depth (row i: round i + 1 of ours)."
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # networkx >= 3.5: attribute-free hashes changed (documented)
        h = nx.weisfeiler_lehman_subgraph_hashes(G, iterations=iterations, node_attr=node_attr)
    return np.array([K.first_occurrence([h[v][i] for v in G]) for i in range(iterations)]).reshape(iterations, -1)


def _nx_graph_hash(G, iterations):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return nx.weisfeiler_lehman_graph_hash(G, iterations=iterations)


@pytest.mark.parametrize("seed", range(3))
def test_njit_equals_reference(seed):
    for G in _random_graphs(seed):
        ip, ix = _csr(G)
        for it in (0, 1, 4):
            ref = K.wl_colors_ref(ip, ix, iterations=it)
            np.testing.assert_array_equal(K.wl_colors_njit(ip, ix, iterations=it), ref)
        init = np.random.default_rng(seed).integers(-3, 3, G.number_of_nodes())  # any integers, negative too
        np.testing.assert_array_equal(K.wl_colors_njit(ip, ix, init, 5), K.wl_colors_ref(ip, ix, init, 5))
        c, r = K.wl_stable_njit(ip, ix, init)
        cr, rr = K.wl_stable_ref(ip, ix, init)
        np.testing.assert_array_equal(c, cr)
        assert r == rr


@pytest.mark.parametrize("bits", [1, 2, 3])
def test_forced_hash_collisions_give_exact_colours(bits):
    "With 1-3 hash bits most lookups collide; the exact signature check must still separate the classes."
    for G in _random_graphs(10 + bits, count=8, max_n=60):
        ip, ix = _csr(G)
        ref = K.wl_colors_ref(ip, ix, iterations=4)
        np.testing.assert_array_equal(K.wl_colors_njit(ip, ix, iterations=4, hash_bits=bits), ref)
        np.testing.assert_array_equal(K.wl_stable_njit(ip, ix, hash_bits=bits)[0], K.wl_stable_ref(ip, ix)[0])
    G = nx.barabasi_albert_graph(80, 2, seed=bits)
    ip, ix = _csr(G)
    got = K.wl_colors_njit(ip, ix, iterations=3, hash_bits=bits)
    assert got[-1].max() + 1 > 2 ** bits  # more classes than hash values: collisions were certain
    np.testing.assert_array_equal(got, K.wl_colors_ref(ip, ix, iterations=3))


def test_signature_mismatch_paths():
    "Same hash slot, different signature: by own colour, by degree, by neighbour multiset (equal degree)."
    # star with a pendant path: centre, leaves and path nodes differ by degree and by neighbour colours
    G = nx.Graph([(0, 1), (0, 2), (0, 3), (3, 4), (4, 5), (5, 6), (6, 7)])
    ip, ix = _csr(G)
    init = np.array([0, 1, 1, 0, 1, 0, 1, 0])  # equal degrees but different own colours
    for bits in (1, 64):
        np.testing.assert_array_equal(K.wl_colors_njit(ip, ix, init, 6, hash_bits=bits),
                                      K.wl_colors_ref(ip, ix, init, 6))


def test_small_known_colourings():
    ip, ix = _csr(nx.path_graph(5))
    np.testing.assert_array_equal(K.wl_colors_njit(ip, ix, iterations=3),
                                  [[0] * 5, [0, 1, 1, 1, 0], [0, 1, 2, 1, 0], [0, 1, 2, 1, 0]])
    c, r = K.wl_stable_njit(ip, ix)
    np.testing.assert_array_equal(c, [0, 1, 2, 1, 0])
    assert r == 2
    ip, ix = _csr(nx.cycle_graph(6))  # regular: stable after no split at all
    np.testing.assert_array_equal(K.wl_colors_njit(ip, ix, iterations=2), np.zeros((3, 6), int))
    assert K.wl_stable_njit(ip, ix)[1] == 0
    empty = K.wl_colors_njit(np.zeros(1, np.int64), np.zeros(0, np.int64), iterations=2)
    assert empty.shape == (3, 0)
    assert K.wl_stable_njit(np.zeros(1, np.int64), np.zeros(0, np.int64))[1] == 0
    ip, ix = _csr(nx.empty_graph(4))  # isolated nodes only
    np.testing.assert_array_equal(K.wl_colors_njit(ip, ix, [3, 3, 1, 3], 2), [[0, 0, 1, 0]] * 3)
    np.testing.assert_array_equal(K.first_occurrence([7, 7, 2, 9, 2]), [0, 0, 1, 2, 1])


@pytest.mark.parametrize("seed", range(3))
def test_partitions_equal_networkx_subgraph_hashes(seed):
    """networkx starts from degrees, so its depth i is our round i + 1. Max degree below 10: networkx concatenates
    degree strings without a separator, which merges some signatures once degrees reach 10 (see the next test)."""
    rng = np.random.default_rng(100 + seed)
    checked = 0
    for i in range(15):
        n = int(rng.integers(2, 60))
        G = nx.gnm_random_graph(n, int(rng.integers(1, 2 * n)), seed=int(rng.integers(2**31)))
        if max(d for _, d in G.degree()) >= 10:
            continue
        ip, ix = _csr(G)
        np.testing.assert_array_equal(K.wl_colors_njit(ip, ix, iterations=5)[1:], _nx_depths(G, 5))
        lab = rng.integers(0, 3, n)  # with initial labels networkx's depth i is our round i + 1 from those labels
        nx.set_node_attributes(G, dict(enumerate(lab.tolist())), "lab")
        np.testing.assert_array_equal(K.wl_colors_njit(ip, ix, lab, 4)[1:], _nx_depths(G, 4, node_attr="lab"))
        checked += 1
    assert checked >= 10
    G = nx.barabasi_albert_graph(300, 3, seed=seed)  # hubs of high degree (no concatenation clash on these seeds)
    ip, ix = _csr(G)
    np.testing.assert_array_equal(K.wl_colors_njit(ip, ix, iterations=4)[1:], _nx_depths(G, 4))


def test_networkx_string_concatenation_merges_distinct_signatures():
    "Node a (degree 2, neighbours of degree 11 and 3) and b (degree 2, neighbours of degree 1 and 13) both read '2113'."
    G = nx.Graph()
    G.add_edges_from([("a", "p"), ("a", "q"), ("b", "r"), ("b", "s")])
    G.add_edges_from(("p", f"p{i}") for i in range(10))  # p: degree 11
    G.add_edges_from(("q", f"q{i}") for i in range(2))   # q: degree 3
    G.add_edges_from(("s", f"s{i}") for i in range(12))  # s: degree 13, r: degree 1
    nodes = list(G)
    theirs, ours = _nx_depths(G, 2)[1], K.wl_colors_njit(*_csr(G), iterations=2)[2]
    a, b = nodes.index("a"), nodes.index("b")
    assert theirs[a] == theirs[b] and ours[a] != ours[b]
    np.testing.assert_array_equal(ours, K.wl_colors_ref(*_csr(G), iterations=2)[2])


def _equivalent(G1, G2, it):
    "WL-equivalence from our colours on the disjoint union: equal colour histograms after `it` rounds."
    U = nx.disjoint_union(G1, G2)
    c = K.wl_colors_njit(*_csr(U), iterations=it)[-1]
    n1 = G1.number_of_nodes()
    return np.array_equal(np.sort(c[:n1]), np.sort(c[n1:]))


def test_graph_hash_equal_iff_wl_equivalent():
    rng = np.random.default_rng(7)
    pairs = []
    for i in range(12):  # random 3-regular pairs: all WL-equivalent, mostly not isomorphic
        pairs.append((nx.random_regular_graph(3, 12, seed=i), nx.random_regular_graph(3, 12, seed=100 + i)))
    for i in range(12):  # same degree sequence (double-edge swaps): some equal at depth 1, most differ later
        G = nx.gnm_random_graph(14, 20, seed=i)
        H = nx.double_edge_swap(G.copy(), nswap=2, max_tries=1000, seed=i)
        pairs.append((G, H))
    for i in range(12):  # isomorphic copies under a random relabelling
        G = nx.gnm_random_graph(12, 18, seed=50 + i)
        perm = rng.permutation(12)
        pairs.append((G, nx.relabel_nodes(G, {v: int(perm[v]) for v in G})))
    for i in range(8):  # different degree sequences
        pairs.append((nx.gnm_random_graph(12, 18, seed=200 + i), nx.gnm_random_graph(12, 18, seed=300 + i)))
    pairs.append((nx.cycle_graph(6), nx.disjoint_union(nx.cycle_graph(3), nx.cycle_graph(3))))
    outcomes = set()
    for G1, G2 in pairs:
        if max(max(d for _, d in G.degree()) for G in (G1, G2)) >= 10:
            continue
        # networkx's graph hash with `it` iterations histograms its depths 1..it-1, our rounds 2..it (round 1, the
        # degrees, is implied by round 2); with iterations=1 it hashes no round at all (next test)
        for it in (2, 3, 5):
            same = _nx_graph_hash(G1, it) == _nx_graph_hash(G2, it)
            assert _equivalent(G1, G2, it) == same
            outcomes.add(same)
    assert outcomes == {True, False}  # both answers occurred


def test_networkx_graph_hash_with_one_iteration_ignores_the_graph():
    "A quirk worth knowing (networkx >= 3.5): attribute-free graphs all get one hash at iterations=1."
    G1, G2 = nx.path_graph(4), nx.star_graph(3)
    assert _nx_graph_hash(G1, 1) == _nx_graph_hash(G2, 1)
    assert not _equivalent(G1, G2, 1) and _nx_graph_hash(G1, 2) != _nx_graph_hash(G2, 2)


def test_cuda_simulator_agrees_with_njit():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # uint64 wrap-around warns under the simulator
        for G in list(_random_graphs(3, count=4, max_n=14)) + [nx.cycle_graph(5), nx.path_graph(4)]:
            ip, ix = _csr(G)
            for bits in (2, 64):
                np.testing.assert_array_equal(K.wl_colors_cuda(ip, ix, iterations=3, hash_bits=bits,
                                                               threads_per_block=8),
                                              K.wl_colors_njit(ip, ix, iterations=3))
        init = np.array([1, 0, 1, 0, 1])
        ip, ix = _csr(nx.path_graph(5))
        np.testing.assert_array_equal(K.wl_colors_cuda(ip, ix, init, 2), K.wl_colors_ref(ip, ix, init, 2))
        assert K.wl_colors_cuda(np.zeros(1, np.int64), np.zeros(0, np.int64), iterations=2).shape == (3, 0)


def test_bad_input_names_the_argument():
    ip, ix = _csr(nx.path_graph(4))
    for f in (K.wl_colors_ref, K.wl_colors_njit, K.wl_colors_cuda):
        with pytest.raises(ValueError, match="indptr"):
            f(np.array([0, 2, 1]), np.array([1, 0]))
        with pytest.raises(ValueError, match="indptr"):
            f(np.array([[0, 1]]), ix)
        with pytest.raises(ValueError, match="indices"):
            f(ip, ix + 10)
        with pytest.raises(ValueError, match="indices"):
            f(ip, ix.astype(float))
        with pytest.raises(ValueError, match="init"):
            f(ip, ix, np.zeros(3, int))
        with pytest.raises(TypeError, match="init"):
            f(ip, ix, np.zeros(4))
        with pytest.raises(ValueError, match="iterations"):
            f(ip, ix, None, -1)
        with pytest.raises(ValueError, match="iterations"):
            f(ip, ix, None, True)
    with pytest.raises(ValueError, match="hash_bits"):
        K.wl_colors_njit(ip, ix, hash_bits=0)
    with pytest.raises(ValueError, match="hash_bits"):
        K.wl_stable_njit(ip, ix, hash_bits=65)
    with pytest.raises(ValueError, match="labels"):
        K.first_occurrence(np.zeros((2, 2)))


def test_benchmark_small_runs_and_agrees():
    out = K.benchmark("small", repeat=1)
    assert out["kernel"] == "wl" and out["reference"] in out["seconds"]
    assert set(out["ratios"]) == {"njit vs reference (Python tuples)", "njit vs networkx weisfeiler_lehman_subgraph_hashes",
                                  "graphdata.wl_colors / wl_final_njit"}
    assert all(v > 0 for v in out["seconds"].values())
    assert out["values"]["colours after 3 rounds"] <= out["values"]["stable colours"]
    assert K._refines(np.array([0, 1, 2, 2]), np.array([0, 0, 1, 1]))
    assert not K._refines(np.array([0, 0, 1]), np.array([0, 1, 1]))
