"""kernels/sketchann.py: sketched distances + argmin over (query, copy) pairs, NumPy reference vs @njit vs CUDA
(simulator), and against brute force."""
import numpy as np
import pytest

from icml25nb.kernels import sketchann as K


def _problem(k, m, d, n, b, r, seed):
    rng = np.random.default_rng(seed)
    P = rng.standard_normal((n, d))
    S = rng.standard_normal((k, m, d)) / np.sqrt(m)
    SP = np.einsum("jmd,nd->jnm", S, P)
    Q = P[rng.integers(0, n, b)] + 0.5 * rng.standard_normal((b, d))
    copies = np.stack([rng.choice(k, r, replace=False) for _ in range(b)])
    return S, SP, Q, copies


def _brute(S, SP, Q, copies):
    idx = np.zeros(copies.shape, dtype=np.int64)
    dist = np.zeros(copies.shape)
    for a in range(copies.shape[0]):
        for c in range(copies.shape[1]):
            j = copies[a, c]
            sq = S[j] @ Q[a]
            ds = [float(np.sum((sq - SP[j, i]) ** 2)) for i in range(SP.shape[1])]
            idx[a, c], dist[a, c] = int(np.argmin(ds)), min(ds)
    return idx, dist


@pytest.mark.parametrize("k,m,d,n,b,r", [(1, 1, 1, 1, 1, 1), (3, 2, 5, 7, 4, 2), (6, 4, 9, 13, 5, 3)])
def test_reference_njit_cuda_and_brute_force_agree(k, m, d, n, b, r):
    S, SP, Q, copies = _problem(k, m, d, n, b, r, seed=k + d)
    bi, bd = _brute(S, SP, Q, copies)
    ri, rd = K.sketch_argmin_ref(S, SP, Q, copies)
    ni, nd = K.sketch_argmin(S, SP, Q, copies)
    ci, cd = K.sketch_argmin_cuda(S, SP, Q, copies)
    np.testing.assert_array_equal(ri, bi)
    np.testing.assert_allclose(rd, bd, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(ni, bi)
    np.testing.assert_array_equal(ci, ni)
    np.testing.assert_array_equal(cd, nd)  # same order of summation: bit for bit
    np.testing.assert_allclose(nd, bd, rtol=1e-12, atol=1e-12)


def test_ties_go_to_the_lowest_index_and_copies_repeat():
    # two identical points: every implementation returns the first; a copy asked twice gives the same answer twice
    rng = np.random.default_rng(1)
    P = rng.standard_normal((4, 6))
    P[2] = P[0]
    S = rng.standard_normal((2, 3, 6))
    SP = np.einsum("jmd,nd->jnm", S, P)
    Q = np.stack([P[0], P[2] + 0.01])
    copies = np.array([[0, 0, 1], [1, 1, 0]])
    for f in (K.sketch_argmin_ref, K.sketch_argmin, K.sketch_argmin_cuda):
        idx, dist = f(S, SP, Q, copies)
        assert (idx[0] == 0).all() and (idx[1] == 0).all(), f.__name__
        assert idx[1, 0] == idx[1, 1] and dist[1, 0] == dist[1, 1]


def test_large_batch_njit_matches_reference():
    S, SP, Q, copies = _problem(20, 8, 40, 60, 30, 5, seed=3)
    ri, rd = K.sketch_argmin_ref(S, SP, Q, copies)
    ni, nd = K.sketch_argmin(S, SP, Q, copies)
    np.testing.assert_array_equal(ri, ni)
    np.testing.assert_allclose(nd, rd, rtol=1e-12)


def test_empty_batch():
    S, SP, Q, copies = _problem(3, 2, 4, 5, 2, 1, seed=0)
    for f in (K.sketch_argmin_ref, K.sketch_argmin, K.sketch_argmin_cuda):
        idx, dist = f(S, SP, Q[:0], copies[:0])
        assert idx.shape == (0, 1) and dist.shape == (0, 1)


def test_bad_input_names_the_argument():
    S, SP, Q, copies = _problem(3, 2, 4, 5, 2, 1, seed=0)
    cases = [((S[0], SP, Q, copies), "S must"), ((S, SP[:, :, :1], Q, copies), "SP must"),
             ((S, SP, Q[:, :3], copies), "Q must"), ((S, SP, Q, copies[:1]), "copies must"),
             ((S, SP, Q, copies + 3), "copies must"), ((S, SP, Q, copies.astype(float)), "copies must"),
             ((S, SP, np.full_like(Q, np.nan), copies), "finite")]
    for args, msg in cases:
        for f in (K.sketch_argmin_ref, K.sketch_argmin, K.sketch_argmin_cuda):
            with pytest.raises(ValueError, match=msg):
                f(*args)


def test_benchmark_small_runs():
    out = K.benchmark("small", repeat=1)
    assert out["njit argmins equal the reference"] and out["matmul argmins equal the reference"]
    assert set(out["ratios"]) == {"reference / njit", "numpy matmul + argmin / njit", "cKDTree exact NN (unsketched) / njit",
                                  "DPRobustANN.candidates per query / njit batch"}
