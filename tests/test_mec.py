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
        assert M.count_amo_clique_picking(G) == M.count_amo_super_cliques(G)


def test_operation_counts_cover_both_steps():
    G = M.random_chordal_graph(60, 5, seed=1)
    a, b = M.OpCounter(), M.OpCounter()
    assert M.count_amo_clique_picking(G, a) == M.count_amo_super_cliques(G, b)
    assert a.clique_trees == b.clique_trees > 0 and a.subproblems == b.subproblems and a.roots == b.roots
    assert a.components > b.components > 0


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
