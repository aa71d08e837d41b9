"""kernels/hclust.py: oracle vote counting and Dasgupta's cost, NumPy reference vs @njit vs CUDA (simulator)."""
import itertools

import numpy as np
import pytest
from scipy.cluster.hierarchy import linkage

from icml25nb.kernels import hclust as H


def _tree(n, seed, method="average"):
    return linkage(np.random.default_rng(seed).standard_normal((n, 3)), method)


def _brute_S(Z):
    n = len(Z) + 1
    members = {i: {i} for i in range(n)}
    for i, (a, b, _, _) in enumerate(Z):
        members[n + i] = members[int(a)] | members[int(b)]
    S = np.zeros((n, n), dtype=np.int64)
    for u, v in itertools.permutations(range(n), 2):
        S[u, v] = min(len(m) for m in members.values() if u in m and v in m)
    return S


def _S(Z):
    order, rg = H.leaf_ranges(Z)
    n = len(Z) + 1
    S = np.zeros((n, n), dtype=np.int64)
    for a, b, c in rg:
        S[np.ix_(order[a:b], order[b:c])] = c - a
    return S + S.T


@pytest.mark.parametrize("n,method", [(2, "single"), (9, "average"), (17, "ward"), (30, "complete")])
def test_leaf_ranges_give_lca_sizes(n, method):
    Z = _tree(n, n, method)
    np.testing.assert_array_equal(_S(Z), _brute_S(Z))


@pytest.mark.parametrize("n", [3, 10, 40])
def test_merge_costs_reference_njit_cuda_and_brute_force(n):
    rng = np.random.default_rng(n)
    Z = _tree(n, n + 1)
    W = rng.random((n, n))
    W = (W + W.T) / 2
    np.fill_diagonal(W, 0)
    S = _brute_S(Z)
    brute = sum(W[u, v] * S[u, v] for u in range(n) for v in range(u + 1, n))
    ref = H.merge_costs_ref(W, Z)
    assert ref.sum() == pytest.approx(brute, rel=1e-12)
    np.testing.assert_allclose(H.merge_costs(W, Z), ref, rtol=1e-12)
    np.testing.assert_allclose(H.merge_costs_cuda(W, Z), ref, rtol=1e-12)


def _caterpillar(n):
    "A linkage of depth n - 1: leaf k joins the cluster of leaves 0..k-1, alternately on the left and the right."
    Z = np.zeros((n - 1, 4))
    Z[0] = 0, 1, 1, 2
    for k in range(2, n):
        Z[k - 1] = (k, n + k - 2, k, k + 1) if k % 2 else (n + k - 2, k, k, k + 1)
    return Z


@pytest.mark.parametrize("n,method", [(2, "single"), (3, "ward"), (64, "single"), (150, "average"),
                                      (301, "complete"), (257, "caterpillar")])
def test_merge_costs_njit_asymmetric_w_and_deep_trees(n, method):
    # the njit pass reads W[u, v] for u left of v in dendrogram order, as the reference's blocks Wp[a:b, b:c] do
    rng = np.random.default_rng(n)
    Z = _caterpillar(n) if method == "caterpillar" else _tree(n, n, method)
    W = rng.random((n, n)) * (rng.random((n, n)) < 0.7)  # not symmetric, some zeros, non-zero diagonal
    ref = H.merge_costs_ref(W, Z)
    got = H.merge_costs(W, Z)
    assert got.shape == (n - 1,)
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    if n <= 64:
        S = _brute_S(Z)
        order, _ = H.leaf_ranges(Z)
        pos = np.argsort(order)
        brute = sum(W[u, v] * S[u, v] for u in range(n) for v in range(n) if pos[u] < pos[v])
        assert got.sum() == pytest.approx(brute, rel=1e-12)
        # the same floating-point sums as a plain double loop over each block of the permuted W, bit for bit
        Wp = W[np.ix_(order, order)]
        loop = []
        for a, b, c in H.leaf_ranges(Z)[1]:
            t = 0.0
            for x in range(a, b):
                for y in range(b, c):
                    t += Wp[x, y]
            loop.append((c - a) * t)
        np.testing.assert_array_equal(got, loop)
        np.testing.assert_allclose(H.merge_costs_cuda(W, Z), ref, rtol=1e-12)


def test_merge_costs_scipy_cophenet_formula():
    # the benchmark's peer: cophenet of the linkage with heights replaced by cluster sizes, dotted with condensed W
    from scipy.cluster.hierarchy import cophenet
    from scipy.spatial.distance import squareform
    n = 500
    rng = np.random.default_rng(2)
    Z = _tree(n, 4)
    W = rng.random((n, n))
    W = (W + W.T) / 2
    np.fill_diagonal(W, 0)
    Zs = Z.copy()
    Zs[:, 2] = Zs[:, 3]
    assert H.merge_costs(W, Z).sum() == pytest.approx(squareform(W, checks=False) @ cophenet(Zs), rel=1e-12)
    np.testing.assert_allclose(H.merge_costs(W, Z), H.merge_costs_ref(W, Z), rtol=1e-12)


def test_merge_costs_bad_input():
    Z = _tree(6, 0)
    for f in (H.merge_costs_ref, H.merge_costs, H.merge_costs_cuda):
        with pytest.raises(ValueError, match="W must be"):
            f(np.zeros((7, 7)), Z)
    bad = Z.copy()
    bad[2, 0] = bad[1, 0]  # a cluster merged twice
    with pytest.raises(ValueError, match="not a valid linkage"):
        H.merge_costs(np.zeros((6, 6)), bad)
    bad = Z.copy()
    bad[0, 1] = 10  # a cluster used before it is formed
    with pytest.raises(ValueError, match="not a valid linkage"):
        H.leaf_ranges(bad)


@pytest.mark.parametrize("p", [0.0, 0.2, 0.45])
def test_votes_reference_njit_cuda_agree(p):
    n = 24
    S = _S(_tree(n, 3))
    rng = np.random.default_rng(1)
    pairs = np.array(list(itertools.combinations(range(n), 2)))
    wit = rng.integers(0, n, (len(pairs), 11))
    ref = H.count_votes_ref(S, pairs, wit, p, seed=5)
    np.testing.assert_array_equal(H.count_votes(S, pairs, wit, p, seed=5), ref)
    np.testing.assert_array_equal(H.count_votes_cuda(S, pairs[:60], wit[:60], p, seed=5), ref[:60])


def test_votes_truthful_and_persistent():
    n = 20
    Z = _tree(n, 7)
    S = _brute_S(Z)
    pairs = np.array(list(itertools.combinations(range(n), 2)))
    wit = np.tile(np.arange(n), (len(pairs), 1))
    # perfect oracle: the witnesses outside the pair's LCA are exactly those that split away
    np.testing.assert_array_equal(H.count_votes(S, pairs, wit, 0.0, 1), n - S[pairs[:, 0], pairs[:, 1]])
    T = np.array(list(itertools.combinations(range(n), 3)))
    a = H.oracle_answer_ref(S, T[:, 0], T[:, 1], T[:, 2], 0.3, 9)
    for perm in itertools.permutations(range(3)):  # the same answer in any order
        np.testing.assert_array_equal(H.oracle_answer_ref(S, *T[:, perm].T, 0.3, 9), a)
    truth = H.oracle_answer_ref(S, *T.T, 0.0, 9)
    assert abs(np.mean(a != truth) - 0.3) < 0.03
    assert np.isin(a, T).all() and (a[:, None] == T).any(axis=1).all()


def test_votes_bad_input():
    S = _S(_tree(6, 0))
    pairs, wit = np.array([[0, 1]]), np.array([[2, 3]])
    with pytest.raises(ValueError, match="p must"):
        H.count_votes(S, pairs, wit, 0.5, 0)
    with pytest.raises(ValueError, match="witnesses"):
        H.count_votes(S, pairs, np.array([[9, 3]]), 0.1, 0)
    with pytest.raises(ValueError, match="pairs must be"):
        H.count_votes(S, np.array([0, 1]), wit, 0.1, 0)


def test_benchmark_small_runs():
    out = H.benchmark("small", repeat=1)
    assert out["njit votes equal the reference"]
    assert all(s > 0 for s in out["seconds"].values())
    assert all(r < 1e-12 for r in out["njit cost terms vs the reference, max relative difference"].values())
    assert sum("scipy cophenet" in k for k in out["ratios"]) == 2
    assert all(np.isfinite(v) and v > 0 for v in out["values"].values())
