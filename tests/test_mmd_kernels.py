"""kernels/mmd.py: RBF MMD^2, NumPy reference vs @njit over BLAS chunks vs CUDA (simulator), against the definition."""
import numba
import numpy as np
import pytest

from icml25nb.kernels import _threads
from icml25nb.kernels import mmd as MMD


def _brute(X, Y, sigma, unbiased=True):
    "The definition, with every kernel matrix at once."
    k = lambda A, B: np.exp(-((A[:, None] - B[None]) ** 2).sum(-1) / (2 * sigma ** 2))
    Kxx, Kyy, Kxy = k(X, X), k(Y, Y), k(X, Y)
    m, n = len(X), len(Y)
    if unbiased:
        return ((Kxx.sum() - np.trace(Kxx)) / (m * (m - 1)) + (Kyy.sum() - np.trace(Kyy)) / (n * (n - 1))
                - 2 * Kxy.mean())
    return Kxx.mean() + Kyy.mean() - 2 * Kxy.mean()


@pytest.mark.parametrize("unbiased", [True, False])
@pytest.mark.parametrize("sigma", [0.3, 1.5, 20.0])
def test_reference_and_njit_match_the_definition(unbiased, sigma):
    rng = np.random.default_rng(int(sigma * 10))
    X, Y = rng.standard_normal((130, 4)), rng.standard_normal((97, 4)) + 0.4
    want = _brute(X, Y, sigma, unbiased)
    for got in (MMD.mmd2_rbf_ref(X, Y, sigma, unbiased, chunk=50), MMD.mmd2_rbf(X, Y, sigma, unbiased),
                MMD.mmd2_rbf(X, Y, sigma, unbiased, chunk=33)):  # several column chunks, triangle cut inside them
        assert abs(got - want) < 1e-12


def test_cuda_simulator_agrees():
    rng = np.random.default_rng(1)
    X, Y = rng.standard_normal((70, 3)), rng.standard_normal((45, 3)) * 1.3
    for unbiased in (True, False):
        assert abs(MMD.mmd2_rbf_cuda(X, Y, 0.8, unbiased) - _brute(X, Y, 0.8, unbiased)) < 1e-12


def test_known_values():
    "Identical sets: the biased MMD is 0; the unbiased one of two draws of one law is near 0 and can be negative."
    rng = np.random.default_rng(2)
    X = rng.standard_normal((200, 2))
    assert abs(MMD.mmd2_rbf(X, X, 1.0, unbiased=False)) < 1e-12
    same = MMD.mmd2_rbf(X, rng.standard_normal((200, 2)), 1.0)
    shifted = MMD.mmd2_rbf(X, rng.standard_normal((200, 2)) + 1.0, 1.0)
    assert abs(same) < 0.02 and shifted > 0.1


def test_two_worker_threads_give_the_same_answer():
    "Rows are split over as many threads as numba has (triangle-balanced for the within-set sums)."
    rng = np.random.default_rng(3)
    X, Y = rng.standard_normal((300, 5)), rng.standard_normal((260, 5))
    one = MMD.mmd2_rbf(np.tile(X, (8, 1)), np.tile(Y, (8, 1)), 1.1)  # 2400 rows: two workers
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(2)
        two = MMD.mmd2_rbf(np.tile(X, (8, 1)), np.tile(Y, (8, 1)), 1.1, chunk=64)
    finally:
        numba.set_num_threads(before)
    assert abs(one - two) < 1e-12


def test_row_blocks():
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(2)
        np.testing.assert_array_equal(_threads.row_blocks(1000), [0, 500, 1000])
        tri = _threads.row_blocks(1000, triangular=True)
        assert tri[0] == 0 and tri[-1] == 1000
        work = [sum(1000 - i for i in range(a, b)) for a, b in zip(tri[:-1], tri[1:])]
        assert abs(work[0] - work[1]) < 0.01 * sum(work)  # equal shares of the triangle
        np.testing.assert_array_equal(_threads.row_blocks(100), [0, 100])  # too few rows for two workers
    finally:
        numba.set_num_threads(before)


def test_median_bandwidth():
    X = np.array([[0.0], [1.0]])
    Y = np.array([[3.0]])
    assert MMD.median_bandwidth(X, Y) == 2.0  # pairwise distances 1, 2, 3


@pytest.mark.parametrize("args, match", [
    ((np.zeros((3, 2)), np.zeros((3, 3)), 1.0), "same d"),
    ((np.zeros((1, 2)), np.zeros((3, 2)), 1.0), "at least 2"),
    ((np.zeros((3, 2)), np.zeros((3, 2)), 0.0), "sigma"),
    ((np.zeros((3, 2)), np.zeros((3, 2)), np.nan), "sigma"),
    ((np.full((3, 2), np.inf), np.zeros((3, 2)), 1.0), "finite"),
    ((np.zeros(3), np.zeros(3), 1.0), "2-D"),
])
def test_bad_input(args, match):
    for f in (MMD.mmd2_rbf_ref, MMD.mmd2_rbf, MMD.mmd2_rbf_cuda):
        with pytest.raises(ValueError, match=match):
            f(*args)


def test_cuda_dimension_limit():
    with pytest.raises(ValueError, match="d <= 64"):
        MMD.mmd2_rbf_cuda(np.zeros((3, 65)), np.zeros((3, 65)), 1.0)
