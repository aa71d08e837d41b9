"""kernels/vmf.py: Wood's sampler and top-1 inner-product search, NumPy reference vs @njit vs CUDA (simulator)."""
import math

import numpy as np
import pytest
from scipy.special import ive

from icml25nb.kernels import vmf as V


def _unit(d, seed):
    x = np.random.default_rng(seed).standard_normal(d)
    return x / np.linalg.norm(x)


@pytest.mark.parametrize("d,kappa", [(2, 0.3), (3, 5.0), (8, 5.0), (33, 10.0), (3, 1e6)])
def test_sampler_reference_njit_cuda_agree(d, kappa):
    mu = _unit(d, d)
    ref = V.wood_sample_ref(mu, kappa, 600, seed=4)
    njit = V.wood_sample(mu, kappa, 600, seed=4)  # the parallel path
    np.testing.assert_allclose(njit, ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(V.wood_sample(mu, kappa, 7, seed=4), ref[:7], rtol=0, atol=1e-10)  # serial path
    np.testing.assert_allclose(V.wood_sample_cuda(mu, kappa, 40, seed=4), ref[:40], rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.linalg.norm(njit, axis=1), 1.0, atol=1e-9)
    assert V.wood_sample(mu, kappa, 0, seed=1).shape == (0, d)


@pytest.mark.parametrize("d,kappa", [(3, 1.0), (10, 20.0), (64, 200.0)])
def test_sampler_mean_cosine_matches_bessel_ratio(d, kappa):
    mu = _unit(d, 1)
    c = V.wood_sample(mu, kappa, 40_000, seed=d) @ mu
    A = ive(d / 2, kappa) / ive(d / 2 - 1, kappa)
    assert abs(c.mean() - A) <= 4 * c.std() / math.sqrt(len(c))
    # a wrong concentration is caught at this sample size
    c2 = V.wood_sample(mu, kappa * 1.1, 40_000, seed=d) @ mu
    assert abs(c2.mean() - A) > 4 * c2.std() / math.sqrt(len(c2))


def test_stable_b():
    assert V.wood_b(1e8, 3) == pytest.approx(5e-9, rel=1e-12)
    for kappa, d in [(0.5, 3), (7.0, 10), (100.0, 50)]:
        naive = (-2 * kappa + math.sqrt(4 * kappa ** 2 + (d - 1) ** 2)) / (d - 1)
        assert V.wood_b(kappa, d) == pytest.approx(naive, rel=1e-10)


def test_sampler_bad_input():
    mu = _unit(3, 0)
    for args, msg in [((mu, 0.0, 3), "kappa"), ((mu, -1.0, 3), "kappa"), ((mu, np.nan, 3), "kappa"),
                      ((2 * mu, 1.0, 3), "unit"), ((np.array([1.0]), 1.0, 3), "dimension"),
                      ((mu, 1.0, -1), "size"), ((mu, 1.0, 2.5), "size")]:
        with pytest.raises(ValueError, match=msg):
            V.wood_sample(*args)
    with pytest.raises(ValueError, match="seed"):
        V.wood_sample_ref(mu, 1.0, 3, seed=-1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nq,n,d", [(1, 1, 3), (37, 500, 16), (40, 1000, 3), (17, 64, 33)])
def test_top1_reference_njit_cuda_agree(dtype, nq, n, d):
    rng = np.random.default_rng(n + d)
    A = rng.standard_normal((n, d)).astype(dtype)
    Q = rng.standard_normal((nq, d)).astype(dtype)
    ref = V.top1_ref(Q, A)
    got = V.top1(Q, A)
    scores = (Q.astype(np.float64) @ A.astype(np.float64).T)
    # equal, or a near-tie broken the other way by rounding
    diff = got != ref
    assert np.all(np.abs(scores[np.arange(nq), got] - scores[np.arange(nq), ref])[diff] < 1e-5)
    assert diff.mean() <= 0.05
    np.testing.assert_array_equal(V.top1_cuda(Q[:8], A), V.top1_ref(Q[:8], A))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("d", [5, 32, 33])
def test_top1_blocked_equals_the_tiled_kernel_on_rounding_ties(dtype, d):
    """`top1` (BLAS blocks + exact rescoring) returns exactly the tiled kernel's answer even where only rounding
    decides: rows that are coordinate permutations of one vector (equal in exact arithmetic), duplicates across
    action blocks, more queries and actions than one block (several query blocks, several threads)."""
    rng = np.random.default_rng(d)
    base = rng.standard_normal(d)
    perms = np.stack([rng.permutation(base) for _ in range(2500)])
    A = np.concatenate([0.1 * rng.standard_normal((1500, d)), perms, perms[:700]]).astype(dtype)
    Q = np.concatenate([np.ones((5, d)), 1 + 1e-3 * rng.standard_normal((400, d)),
                        rng.standard_normal((200, d))]).astype(dtype)
    assert len(A) > 2 * V._AB and len(Q) > 2 * V._QB
    got = V.top1(Q, A)
    np.testing.assert_array_equal(got, V._top1_tiled(Q, A))
    # BLAS alone (the reference) may break these rounding ties the other way, only ever between near-equal scores
    ref = V.top1_ref(Q, A)
    scores = Q.astype(np.float64) @ A.astype(np.float64).T
    rows = np.arange(len(Q))
    assert np.all(np.abs(scores[rows, got] - scores[rows, ref]) <= 1e-5 * np.abs(scores[rows, ref]) + 1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rescore_is_immune_to_any_blas_rounding(dtype):
    "The fused pass returns the tiled kernel's answer from any block of scores within the error bound of exact."
    rng = np.random.default_rng(3)
    d = 32
    base = np.abs(rng.standard_normal(d)) + 0.1  # permutations of it are the best actions for queries near 1
    A = np.concatenate([np.stack([rng.permutation(base) for _ in range(600)]),
                        0.3 * rng.standard_normal((400, d))]).astype(dtype)
    Q = np.concatenate([np.ones((4, d)), 1 + 1e-6 * rng.standard_normal((100, d)),
                        rng.standard_normal((50, d))]).astype(dtype)
    want = V._top1_tiled(Q, A)
    margin = V._margin(Q, A)
    exact = Q.astype(np.float64) @ A.astype(np.float64).T
    bound = margin[:, None] / 4  # the bound on |BLAS - exact| alone
    for trial in range(4):
        S = (exact + bound * rng.uniform(-1, 1, exact.shape)).astype(dtype)  # any admissible BLAS rounding
        assert (S.argmax(1) != want).any()  # a plain argmax of these scores would break ties the other way
        best, arg = np.empty(len(Q)), np.zeros(len(Q), dtype=np.int64)  # set by the first block
        for j0 in range(0, len(A), 300):  # uneven blocks of actions, in order
            V._rescore(np.ascontiguousarray(S[:, j0:j0 + 300]), Q, A, j0, margin, best, arg)
        np.testing.assert_array_equal(arg, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_top1_blocked_equals_the_tiled_kernel(dtype):
    rng = np.random.default_rng(7)
    for nq, n, d in [(1, 1, 3), (300, 3000, 32), (600, 2500, 7), (70, 2049, 64), (32, 5000, 3)]:
        A = rng.standard_normal((n, d)).astype(dtype)
        Q = rng.standard_normal((nq, d)).astype(dtype)
        np.testing.assert_array_equal(V.top1(Q, A), V._top1_tiled(Q, A))
    A = rng.integers(-2, 3, (4000, 8)).astype(dtype)  # many exact ties, across blocks: the first index
    Q = rng.integers(-2, 3, (700, 8)).astype(dtype)
    np.testing.assert_array_equal(V.top1(Q, A), V._top1_tiled(Q, A))
    np.testing.assert_array_equal(V.top1(Q, A), V.top1_ref(Q, A))  # small integers: every order sums exactly
    for scale in (1e-20, 1e15):
        A = (scale * rng.standard_normal((3000, 16))).astype(dtype)
        Q = rng.standard_normal((300, 16)).astype(dtype)
        np.testing.assert_array_equal(V.top1(Q, A), V._top1_tiled(Q, A))
    A = rng.standard_normal((2000, 8)).astype(dtype)  # NaN and inf: the tiled kernel answers
    A[5, 2], A[7, 1] = np.nan, np.inf
    Q = rng.standard_normal((300, 8)).astype(dtype)
    np.testing.assert_array_equal(V.top1(Q, A), V._top1_tiled(Q, A))
    assert V.top1(Q[:0], A).shape == (0,)


def test_top1_ties_take_the_first_index():
    A = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    Q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    np.testing.assert_array_equal(V.top1_ref(Q, A), [0, 1, 0])
    np.testing.assert_array_equal(V.top1(Q, A), [0, 1, 0])
    np.testing.assert_array_equal(V.top1_cuda(Q, A), [0, 1, 0])


def test_top1_bad_input():
    with pytest.raises(ValueError, match="columns"):
        V.top1(np.ones((2, 3)), np.ones((5, 4)))
    with pytest.raises(ValueError, match="non-empty"):
        V.top1(np.ones((2, 3)), np.ones((0, 3)))


def test_benchmark_small_runs():
    out = V.benchmark("small", repeat=1)
    assert out["njit top-1 equals numpy argmax"]
    assert set(out["ratios"]) >= {"sampler: smallest scipy / njit over the grid", "search: numpy matmul / njit",
                                  "sampler d=16 kappa=10: vmf.sample_vmf / njit", "search: ActionIndex.query / njit (float64)"}
    for d in (3, 16, 128, 1024):  # every case of the sampler grid, side by side with scipy
        for kappa in ("0.1", "10", "1000", "100000"):
            assert f"sampler d={d} kappa={kappa}: scipy / njit" in out["ratios"]
    assert all(s > 0 for s in out["seconds"].values())
