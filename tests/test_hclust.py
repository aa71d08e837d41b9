"""hclust chapter: the exact optimum, the population graph and the instance families at tiny sizes."""
import itertools

import numpy as np
import pytest

from icml25nb.algorithms import hclust as H


def _all_trees(leaves):
    if len(leaves) == 1:
        yield leaves[0]
        return
    first, rest = leaves[0], leaves[1:]
    for mask in range(2 ** len(rest)):
        A = [first] + [x for j, x in enumerate(rest) if mask >> j & 1]
        B = [x for j, x in enumerate(rest) if not mask >> j & 1]
        if B:
            for ta in _all_trees(A):
                for tb in _all_trees(B):
                    yield (ta, tb)


@pytest.mark.parametrize("n", [2, 3, 5])
def test_optimal_dasgupta_cost_is_the_brute_force_minimum(n):
    rng = np.random.default_rng(n)
    W = rng.random((n, n)); W = (W + W.T) / 2
    brute = min(H.dasgupta_cost(W, H._tree_from_groups(t)) for t in _all_trees(list(range(n))))
    assert H.optimal_dasgupta_cost(W) == pytest.approx(brute, rel=1e-12)


def test_optimum_is_below_a_planted_tree_on_a_sample():
    W, Z = H.hsbm(depth=3, seed=0, q=H.weak_top_probabilities(3))
    assert H.optimal_dasgupta_cost(W) <= H.dasgupta_cost(W, Z) + 1e-12


@pytest.mark.parametrize("family", ["hier", "weak"])
def test_planted_tree_is_optimal_on_the_population_graph(family):
    q = H._family_q(family, 3, H.SCALE_CONFIG["fast"])
    for seed in range(3):
        _, Z = H.hsbm(depth=3, seed=seed, q=q)
        Q = H.expected_weights(Z, q)
        assert H.optimal_dasgupta_cost(Q) == pytest.approx(H.dasgupta_cost(Q, Z), rel=1e-12)


def test_a_wrong_tree_is_not_optimal_on_the_population_graph():
    q = H.level_probabilities(3)
    _, Z = H.hsbm(depth=3, seed=0, q=q)
    Q = H.expected_weights(Z, q)
    _, other = H.hsbm(depth=3, seed=1, q=q)
    assert H.dasgupta_cost(Q, other) > H.optimal_dasgupta_cost(Q) + 1e-9


def test_expected_weights_follow_the_lca_height():
    q = H.weak_top_probabilities(4)
    _, Z = H.hsbm(depth=4, seed=2, q=q)
    S, Q = H.lca_sizes(Z), H.expected_weights(Z, q)
    for h, size in enumerate([2, 4, 8, 16]):
        assert np.allclose(Q[S == size], q[h])
    assert (np.diag(Q) == 0).all()


def test_bad_inputs():
    with pytest.raises(ValueError, match="non-increasing"):
        H.hsbm(depth=3, q=[0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="3 probabilities"):
        H.hsbm(depth=3, q=[0.3, 0.2])
    with pytest.raises(ValueError, match="n must be <= 12"):
        H.optimal_dasgupta_cost(np.zeros((13, 13)))
    with pytest.raises(ValueError, match="depth >= 2"):
        H.weak_top_probabilities(1)


def _data_answer(sim, u, v, w):
    "Brute force: the vertex outside the most similar pair (no ties in `sim`)."
    pairs = {(u, v): w, (u, w): v, (v, w): u}
    return pairs[max(pairs, key=lambda p: sim[p])]


@pytest.mark.parametrize("similarity", ["edges", "neighbours"])
def test_data_triplet_oracle_names_the_vertex_outside_the_most_similar_pair(similarity):
    rng = np.random.default_rng(7)
    W = rng.random((9, 9)); W = (W + W.T) / 2; np.fill_diagonal(W, 0)
    if similarity == "edges":
        sim = W
    else:
        nrm = np.sqrt((W * W).sum(1))
        sim = (W @ W) / np.outer(nrm, nrm)
    o = H.DataTripletOracle(W, similarity, seed=3)
    T = np.array(list(itertools.combinations(range(9), 3)))
    got = o.query_many(*T.T)
    want = [_data_answer(sim, *t) for t in T]
    np.testing.assert_array_equal(got, want)
    assert o.queries == len(T)
    # the kernel's vote counts agree with the answers
    pairs = np.array([[0, 1], [2, 5]]); wit = np.array([[2, 3, 4], [0, 1, 8]])
    votes = o.count_votes(pairs, wit)
    np.testing.assert_array_equal(votes, [sum(_data_answer(sim, *p, x) == x for x in ws) for p, ws in zip(pairs, wit)])


def test_data_triplet_oracle_breaks_ties_by_seed_and_persistently():
    W = np.zeros((6, 6))  # every pair ties: the answers come from the seeded order alone
    a = H.DataTripletOracle(W, "edges", seed=1)
    T = np.array(list(itertools.combinations(range(6), 3)))
    x = a.query_many(*T.T)
    np.testing.assert_array_equal(x, a.query_many(*T.T))  # persistent
    np.testing.assert_array_equal(x, H.DataTripletOracle(W, "edges", seed=1).query_many(*T.T))
    assert not np.array_equal(x, H.DataTripletOracle(W, "edges", seed=2).query_many(*T.T))
    assert len(set(x.tolist())) > 1  # not always the same vertex


def test_data_triplet_oracle_runs_the_oracle_algorithms():
    W, Z = H.hsbm(depth=5, seed=4)
    o = H.DataTripletOracle(W, seed=0)
    for alg in (H.oracle_hc_dasgupta, H.oracle_hc_mw):
        z = alg(o, seed=0)
        assert H.dasgupta_cost(W, z) > 0 and z.shape == (31, 4)
    with pytest.raises(ValueError, match="similarity"):
        H.DataTripletOracle(W, "cosine")
    with pytest.raises(ValueError, match="at least 3"):
        H.DataTripletOracle(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="symmetric"):
        H.DataTripletOracle(np.triu(np.ones((4, 4)), 1))


def test_data_triplet_oracle_k_hop_similarity():
    rng = np.random.default_rng(2)
    W = (rng.random((8, 8)) < 0.4).astype(float); W = np.triu(W, 1); W = W + W.T
    A = W + np.eye(8); M = np.linalg.matrix_power(A, 3)
    nrm = np.sqrt((M * M).sum(1)); sim = (M @ M.T) / np.outer(nrm, nrm)
    o = H.DataTripletOracle(W, hops=3, seed=0)
    T = np.array(list(itertools.combinations(range(8), 3)))
    got = o.query_many(*T.T)
    # wherever the most similar pair is unique (beyond float noise) the answer is the vertex outside it
    for t, g in zip(T, got):
        s = sorted([(sim[t[0], t[1]], t[2]), (sim[t[0], t[2]], t[1]), (sim[t[1], t[2]], t[0])])
        if s[2][0] - s[1][0] > 1e-9:
            assert g == s[2][1]
    with pytest.raises(ValueError, match="hops"):
        H.DataTripletOracle(W, hops=0)
    with pytest.raises(ValueError, match="hops"):
        H.DataTripletOracle(W, "edges", hops=2)
