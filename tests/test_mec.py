"""The mec chapter's pieces beyond its notebook: deeper trees for the transfer, operation counts, sampling of
mixed CPDAGs, the full-scale path, bad input."""
import collections
import copy

import networkx as nx
import numpy as np
import pytest

from icml25nb.causal import mec as M


def test_transfer_matches_bfs_on_larger_graphs():
    "Every root of larger random chordal graphs (deeper clique trees): transfer = BFS = flower rule, counts equal."
    for seed in range(12):
        G = M.random_chordal_graph(40, 12, seed=seed, max_subtree=1 + seed % 4)
        g = M._Graph(G)
        tree = M._clique_tree(g, g.all)
        sct = M._sct_subproblems(tree)
        for p, K in enumerate(tree.cliques):
            want = sorted(M.components_lbfs(g, g.all, K))
            assert sorted(sct[p]) == want == sorted(M.components_flower(tree, p))
        assert sorted(map(sorted, M._tree_subproblems(tree))) == sorted(map(sorted, sct))
        assert M.count_amo_clique_picking(G) == M.count_amo_super_cliques(G) == M.count_amo_tree_per_root(G)


def test_operation_counts_cover_both_steps():
    G = M.random_chordal_graph(60, 5, seed=1)
    a, b, t = M.OpCounter(), M.OpCounter(), M.OpCounter()
    assert M.count_amo_clique_picking(G, a) == M.count_amo_super_cliques(G, b) == M.count_amo_tree_per_root(G, t)
    assert a.clique_trees == b.clique_trees == t.clique_trees > 0 and a.subproblems == b.subproblems == t.subproblems
    assert a.roots == b.roots == t.roots and a.counting == b.counting == t.counting > 0  # Steps 1 and 3 are shared
    assert a.components > t.components > 0 and a.components > b.components > 0
    assert a.total == a.clique_trees + a.components + a.counting


def test_bucket_mcs_is_the_old_order():
    "The bucket maximum cardinality search visits vertices in the order of the plain one (largest weight, ties to the "
    "smallest vertex), so clique trees and operation counts are those of the registered chapter before issue 48."
    def plain(g, V):
        verts, weight, numbered, order = list(M._bits(V)), {}, 0, []
        weight = {v: 0 for v in verts}
        for _ in verts:
            v = max((u for u in verts if not (numbered >> u) & 1), key=lambda u: (weight[u], -u))
            order.append(v)
            numbered |= 1 << v
            for u in M._bits(g.adj[v] & V & ~numbered):
                weight[u] += 1
        return order
    for seed in range(6):
        G = M.random_chordal_graph(50, 2 + 3 * seed, seed=seed)
        g = M._Graph(G)
        tree = M._clique_tree(g, g.all)
        order = plain(g, g.all)
        ends = [v for i, v in enumerate(order) if i + 1 == len(order)
                or (g.adj[order[i + 1]] & sum(1 << u for u in order[:i + 1])).bit_count()
                <= (g.adj[v] & sum(1 << u for u in order[:i])).bit_count()]
        assert [K.bit_length() - 1 for K in tree.cliques] != [] and len(ends) == tree.m
        assert all((K >> v) & 1 for K, v in zip(tree.cliques, ends))


def test_sampling_a_mixed_cpdag():
    "A DAG whose class has directed and undirected edges: samples keep the directed part and stay in the class."
    dag = nx.DiGraph([(0, 2), (1, 2), (2, 3), (3, 4), (3, 5), (4, 5), (5, 6)])
    target = set(M.dag_to_cpdag(dag).edges())
    draws = M.sample_dag_in_mec(dag, seed=3, size=300)
    assert all(set(M.dag_to_cpdag(D).edges()) == target for D in draws)
    freq = collections.Counter(frozenset(D.edges()) for D in draws)
    assert len(freq) == M.mec_size(dag)
    one = M.sample_dag_in_mec(M.dag_to_cpdag(dag), seed=3)
    assert isinstance(one, nx.DiGraph) and nx.is_directed_acyclic_graph(one)


def test_mec_bruteforce_agrees_on_a_chain_and_a_collider():
    assert len(M._mec_bruteforce(nx.DiGraph([(0, 1), (1, 2)]))) == 3 == M.mec_size(nx.DiGraph([(0, 1), (1, 2)]))
    assert len(M._mec_bruteforce(nx.DiGraph([(0, 2), (1, 2)]))) == 1 == M.mec_size(nx.DiGraph([(0, 2), (1, 2)]))


def test_bad_input():
    with pytest.raises(ValueError, match="not chordal"):
        M.count_amo_super_cliques(nx.cycle_graph(5))
    with pytest.raises(ValueError, match="cycle"):
        M.dag_to_cpdag(nx.DiGraph([(0, 1), (1, 0)]))
    with pytest.raises(ValueError, match="Graph"):
        M.mec_size([(0, 1)])
    with pytest.raises(ValueError, match="n_cliques"):
        M.random_chordal_graph(5, 0)
    with pytest.raises(ValueError, match="max_subtree"):
        M.random_chordal_graph(5, 2, max_subtree=0)
    with pytest.raises(ValueError, match="strictly"):
        M.phi(4, [2, 2])
    with pytest.raises(ValueError, match="child"):
        st = M.SuperCliques.initial(M._clique_tree(M._Graph(nx.path_graph(4)), 15))
        st.transfer(2)
    with pytest.raises(ValueError, match="scale"):
        M.experiment("huge")


def test_full_scale_branch_runs_and_plots(monkeypatch):
    small = copy.deepcopy(M.SCALE_CONFIG["full"])
    small.update(small_graphs=10, closed_n=6, trees=3, dags=10, ops_n=40, ops_cliques=(2, 5), ops_graphs=1,
                 sweep_n=(20, 40), sweep_cliques=5, sample_n=5, samples=300)
    monkeypatch.setitem(M.SCALE_CONFIG, "full", small)
    r = M.experiment("full", seed=2)
    assert r["agree_mismatches"] == r["root_mismatches"] == r["closed_mismatches"] == r["mec_mismatches"] == 0
    assert {(x["n"], x["host_nodes"]) for x in r["ops"]} == {(40, 2), (40, 5), (20, 5)}
    assert set(M.plots(r)) == {"operations"}


def test_repeated_absorption_on_chordal_completions():
    "Chordal completions of random graphs need the repeated absorption; with it every root matches the BFS."
    rng = np.random.default_rng(7)
    cascades = 0
    for _ in range(40):
        H = nx.complete_to_chordal_graph(nx.gnp_random_graph(int(rng.integers(8, 25)), 0.15,
                                                             seed=int(rng.integers(1 << 30))))[0]
        for comp in nx.connected_components(H):
            g = M._Graph(H.subgraph(comp).copy())
            tree = M._clique_tree(g, g.all)
            c = M.OpCounter()
            for p, subs in enumerate(M._sct_subproblems(tree, c)):
                assert sorted(subs) == sorted(M.components_lbfs(g, g.all, tree.cliques[p]))
            cascades += c.cascades
    assert cascades > 0
