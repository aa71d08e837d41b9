"""kernels/mec.py: exact #AMO (MEC size) by super-clique transfer, @njit kernel vs its own Python reference vs the
chapter's counters vs brute force (kernels/amo) vs cliquepicking. The kernel module imports no chapter (a leaf); the
chapter is imported here, in the test, to check the kernel's reference and generator against it. No @cuda.jit version (the module docstring says why). `make test` runs this file
again under NUMBA_BOUNDSCHECK=1; the graphs below take every path of the kernel there: several bit words per vertex
set (n > 64, n > 128), memo tables that grow and rehash (paths: hundreds of subproblems), cascading absorptions
(chordal completions of random graphs), disconnected graphs and isolated vertices, the non-chordal exit."""
import math

import networkx as nx
import numpy as np
import pytest

from icml25nb.causal import mec as M
from icml25nb.kernels import amo as AK
from icml25nb.kernels import mec as K


def _edges(G):
    return np.array(G.edges(), dtype=np.int64).reshape(-1, 2)


def _brute(G):
    return AK.amo_count_njit(AK.adjacency_masks(G.number_of_nodes(), G.edges()))


@pytest.mark.parametrize("seed", range(4))
def test_njit_equals_python_and_bruteforce_on_small_graphs(seed):
    rng = np.random.default_rng(seed)
    for i in range(40):
        n = int(rng.integers(1, 10))
        G = M.random_chordal_graph(n, int(rng.integers(1, n + 1)), seed=1000 * seed + i,
                                   max_subtree=int(rng.integers(1, 4)))
        e = _edges(G)
        got = K.count_amo(n, e)
        assert got == K.count_amo_ref(n, e) == M.count_amo_super_cliques(G) == _brute(G)
        assert type(got) is int


@pytest.mark.parametrize("seed", range(3))
def test_njit_equals_python_on_chordal_completions(seed):
    "Deep, irregular clique trees where the transfer absorbs super cliques below K_t's children (cascades)."
    rng = np.random.default_rng(100 + seed)
    cascades = 0
    for i in range(25):
        n = int(rng.integers(6, 45))
        H = nx.complete_to_chordal_graph(nx.gnp_random_graph(n, float(rng.uniform(0.03, 0.3)),
                                                             seed=int(rng.integers(2**31))))[0]
        c = M.OpCounter()
        want = M.count_amo_super_cliques(H, c)  # disconnected graphs too: product over components
        cascades += c.cascades
        assert K.count_amo(n, _edges(H)) == want == K.count_amo_graph(H)
    assert cascades > 0  # the cascade path of the transfer was taken


def test_kernel_module_imports_no_chapter():
    """kernels/ is the leaf package: kernels/mec.py imports nothing from icml25nb but the kernels themselves and the
    shared argument checks of icml25nb.core (issue 49: every entry point validates with them)."""
    import ast
    import inspect
    tree = ast.parse(inspect.getsource(K))
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not [m for m in names if m.startswith("icml25nb") and not m.startswith("icml25nb.kernels")
                and m != "icml25nb.core"]


@pytest.mark.parametrize("n,k,seed,top", [(1, 1, 0, 3), (9, 4, 1, 1), (40, 40, 7, 3), (60, 10, 5, 2), (150, 3, 2, 3)])
def test_generator_is_the_chapters(n, k, seed, top):
    G = M.random_chordal_graph(n, k, seed=seed, max_subtree=top)
    e = K.random_chordal_edges(n, k, seed=seed, max_subtree=top)
    assert {tuple(sorted(x)) for x in G.edges()} == {tuple(x) for x in e.tolist()} and len(e) == G.number_of_edges()


@pytest.mark.parametrize("seed", range(2))
def test_reference_equals_the_chapters_three_counters(seed):
    "The kernel's own Python reference against the chapter's Clique-Picking, transfer and per-root tree counters."
    rng = np.random.default_rng(200 + seed)
    for i in range(15):
        n = int(rng.integers(6, 40))
        H = nx.complete_to_chordal_graph(nx.gnp_random_graph(n, float(rng.uniform(0.03, 0.3)),
                                                             seed=int(rng.integers(2**31))))[0]
        want = M.count_amo_clique_picking(H)
        assert K.count_amo_ref(n, _edges(H)) == want == M.count_amo_super_cliques(H) == M.count_amo_tree_per_root(H)
    for n, k in ((60, 3), (80, 12), (70, 70)):
        G = M.random_chordal_graph(n, k, seed=seed)
        assert K.count_amo_ref(n, _edges(G)) == M.count_amo_clique_picking(G)


def test_reference_bad_input():
    with pytest.raises(ValueError, match="not chordal"):
        K.count_amo_ref(4, [(0, 1), (1, 2), (2, 3), (3, 0)])
    with pytest.raises(ValueError, match="join vertices"):
        K.count_amo_ref(3, [(0, 3)])
    with pytest.raises(ValueError, match="self-loop"):
        K.count_amo_ref(3, [(1, 1)])
    assert K.count_amo_ref(0, []) == 1 and K.count_amo_ref(4, []) == 1


def test_small_graphs_with_isolated_vertices_and_components():
    G = nx.disjoint_union_all([nx.complete_graph(4), nx.path_graph(3), nx.empty_graph(2),
                               nx.Graph([(0, 1), (1, 2), (0, 2), (2, 3)])])
    want = 24 * 3 * 1 * _brute(nx.Graph([(0, 1), (1, 2), (0, 2), (2, 3)]))
    assert K.count_amo_graph(G) == want == M.count_amo_super_cliques(G)
    assert K.count_amo(0, []) == 1 and K.count_amo(5, []) == 1 and K.count_amo(2, [(0, 1), (1, 0)]) == 2


def test_closed_forms_and_big_counts():
    "K_n has n! AMOs (beyond int64 from n = 21; 2 bit words at n = 65-70), a tree on n vertices has n."
    for n in list(range(1, 30)) + [63, 64, 65, 70, 130]:
        assert K.count_amo_graph(nx.complete_graph(n)) == math.factorial(n)
    rng = np.random.default_rng(7)
    for n in (2, 10, 64, 65, 129, 200):
        T = nx.Graph((j, int(rng.integers(0, j))) for j in range(1, n))
        T = nx.relabel_nodes(T, dict(enumerate(rng.permutation(n).tolist())))
        assert K.count_amo_graph(T) == n
    # paths: hundreds of memoised subproblems (the memo grows and rehashes), with 1, 2 and 3 bit words
    for n in (100, 150, 190):
        assert K.count_amo_graph(nx.path_graph(n)) == n


@pytest.mark.parametrize("n", [70, 130])
def test_several_bit_words_equal_python(n):
    for k in (3, 12, n):
        G = M.random_chordal_graph(n, k, seed=n + k)
        assert K.count_amo(n, _edges(G)) == M.count_amo_super_cliques(G)


def test_residues_and_crt():
    "The residues are the exact count modulo each prime; the primes' product exceeds n!, plus one check prime."
    G = M.random_chordal_graph(60, 4, seed=3)
    want = M.count_amo_super_cliques(G)
    res, primes = K.count_amo_residues(60, _edges(G))
    assert math.prod(int(p) for p in primes[:-1]) > math.factorial(60)
    assert want > 2**64 and [want % int(p) for p in primes] == res.tolist()


def test_equals_cliquepicking_on_larger_graphs():
    cp = pytest.importorskip("cliquepicking")
    for n in (60, 150, 300):
        for k in (3, 10, 40, n):
            G = M.random_chordal_graph(n, k, seed=n * 7 + k)
            pairs = [(u, v) for u, v in G.edges()] + [(v, u) for u, v in G.edges()]
            assert K.count_amo(n, pairs) == cp.mec_size(pairs) == K.count_amo(n, _edges(G))


def test_mec_size_of_a_cpdag_undirected_part():
    "The kernel counts the undirected part of a CPDAG as the chapter's mec_size does."
    rng = np.random.default_rng(5)
    order = rng.permutation(12)
    dag = nx.DiGraph()
    dag.add_nodes_from(range(12))
    dag.add_edges_from((int(order[i]), int(order[j])) for i in range(12) for j in range(i + 1, 12) if rng.random() < 0.4)
    und = M._class_parts(dag)[1]
    assert K.count_amo_graph(und) == M.mec_size(dag)


def test_bad_input():
    with pytest.raises(ValueError, match="not chordal"):
        K.count_amo(4, [(0, 1), (1, 2), (2, 3), (3, 0)])
    with pytest.raises(ValueError, match="not chordal"):  # a chordless cycle inside a larger component
        K.count_amo_graph(nx.disjoint_union(nx.complete_graph(3), nx.cycle_graph(6)))
    with pytest.raises(ValueError, match="not chordal"):  # and in a component above the first bit word
        K.count_amo_graph(nx.disjoint_union(nx.complete_graph(70), nx.cycle_graph(5)))
    with pytest.raises(ValueError, match="join vertices"):
        K.count_amo(3, [(0, 3)])
    with pytest.raises(ValueError, match="join vertices"):
        K.count_amo(3, np.array([[0, -1]]))
    with pytest.raises(ValueError, match="integer vertex pairs"):
        K.count_amo(3, [(0, 2**70)])
    with pytest.raises(ValueError, match="join vertices"):  # wraps to a negative int64
        K.count_amo(3, np.array([[0, 2**63]], dtype=np.uint64))
    with pytest.raises(ValueError, match="self-loop"):
        K.count_amo(3, [(1, 1)])
    with pytest.raises(ValueError, match=r"\(E, 2\)"):
        K.count_amo(3, [(0, 1, 2)])
    with pytest.raises(ValueError, match=r"\(E, 2\)"):
        K.count_amo(3, [(0.0, 1.0)])
    with pytest.raises(ValueError, match=r"\(E, 2\)"):
        K.count_amo(3, [(True, False)])
    with pytest.raises(ValueError, match="non-negative"):
        K.count_amo(-1, [])
    with pytest.raises(ValueError, match="undirected"):
        K.count_amo_graph(nx.DiGraph([(0, 1)]))


def test_benchmark_small():
    res = K.benchmark("small", repeat=1)
    assert res["counts identical (all contenders)"]
    assert set(res["seconds"]) >= {"python reference (per-root clique-tree subproblems)", "njit kernel (edge array)"}
    assert all(s > 0 for s in res["seconds"].values())


def test_mulmod_matches_python_near_the_largest_primes():
    "The float-quotient product modulo primes just below 2^50, at random and at the extremes of [0, p)."
    from numba import njit

    mm = njit(K._mulmod.py_func)
    rng = np.random.default_rng(11)
    for p in K.primes_for(60)[:3] + [int(K.primes_for(300)[-1])]:
        pinv = 1.0 / p
        vals = [0, 1, 2, p - 1, p - 2, p // 2, (p + 1) // 2] + [int(x) for x in rng.integers(0, p, 200)]
        for a in vals:
            for b in vals[:20]:
                assert mm(np.int64(a), np.int64(b), np.int64(p), pinv) == a * b % p


def test_many_components():
    "Hundreds of components (the memo grows while the components are entered): 2^k for k disjoint edges."
    for k in (3, 200, 700):
        e = np.array([(2 * i, 2 * i + 1) for i in range(k)], dtype=np.int64)
        assert K.count_amo(2 * k + 5, e) == 2**k
    G = nx.disjoint_union_all([nx.complete_graph(3)] * 150 + [nx.path_graph(4)] * 50)
    assert K.count_amo_graph(G) == 6**150 * 4**50
