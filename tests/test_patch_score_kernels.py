"""kernels/patch_score.py: streaming softmax-weighted averages, NumPy reference vs @njit vs CUDA (simulator)."""
import numpy as np
import pytest

from icml25nb.kernels import patch_score as PS


def _brute(Q, K, V, scale):
    "The whole (M, P) weight matrix at once: the definition, for small sizes."
    L = -scale * ((Q[:, None, :] - K[None, :, :]) ** 2).sum(-1)
    W = np.exp(L - L.max(1, keepdims=True))
    return (W / W.sum(1, keepdims=True)) @ V


@pytest.mark.parametrize("scale", [1e-3, 0.7, 50.0, 5e4])
@pytest.mark.parametrize("c", [None, 3])
def test_reference_and_njit_match_the_definition(scale, c):
    rng = np.random.default_rng(int(scale * 10) + (c or 0))
    Q, K = rng.standard_normal((70, 9)), rng.standard_normal((1300, 9))
    V = rng.standard_normal(1300) if c is None else rng.standard_normal((1300, c))
    want = _brute(Q, K, V, scale)
    for got in (PS.patch_softmax_mean_ref(Q, K, V, scale, chunk=128), PS.patch_softmax_mean(Q, K, V, scale),
                PS.patch_softmax_mean(Q, K, V, scale, chunk=100)):  # several chunks: the running max is rescaled
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-11)


def test_cuda_simulator_agrees():
    rng = np.random.default_rng(3)
    Q, K, V = rng.standard_normal((5, 4)), rng.standard_normal((70, 4)), rng.standard_normal((70, 2))
    for scale in (0.2, 30.0):
        np.testing.assert_allclose(PS.patch_softmax_mean_cuda(Q, K, V, scale), _brute(Q, K, V, scale), atol=1e-11)
    np.testing.assert_allclose(PS.patch_softmax_mean_cuda(Q, K, V[:, 0], 1.0), _brute(Q, K, V[:, 0], 1.0), atol=1e-11)


def test_peaked_softmax_does_not_overflow_and_picks_the_nearest_key():
    "At low noise the logits are in the thousands: the result is the value of the nearest key, not NaN."
    rng = np.random.default_rng(0)
    K = rng.standard_normal((500, 25))
    Q = K[[7, 123, 499]] + 1e-3
    V = np.arange(500.0)
    for f in (PS.patch_softmax_mean_ref, PS.patch_softmax_mean):
        np.testing.assert_allclose(f(Q, K, V, 1e5), [7.0, 123.0, 499.0], atol=1e-9)


def test_a_single_key_and_equal_keys():
    Q = np.zeros((2, 3))
    assert np.allclose(PS.patch_softmax_mean(Q, np.ones((1, 3)), np.array([4.0]), 2.0), 4.0)
    K = np.ones((6, 3))
    assert np.allclose(PS.patch_softmax_mean(Q, K, np.arange(6.0), 2.0), 2.5)  # equal logits: the plain mean


@pytest.mark.parametrize("args, match", [
    ((np.zeros((2, 3)), np.zeros((4, 2)), np.zeros(4), 1.0), "same patch length"),
    ((np.zeros((2, 3)), np.zeros((4, 3)), np.zeros(5), 1.0), "V must have shape"),
    ((np.zeros((2, 3)), np.zeros((4, 3)), np.zeros(4), 0.0), "scale"),
    ((np.zeros((2, 3)), np.zeros((4, 3)), np.zeros(4), np.inf), "scale"),
    ((np.full((2, 3), np.nan), np.zeros((4, 3)), np.zeros(4), 1.0), "finite"),
    ((np.zeros((0, 3)), np.zeros((4, 3)), np.zeros(4), 1.0), "non-empty"),
])
def test_bad_input(args, match):
    for f in (PS.patch_softmax_mean_ref, PS.patch_softmax_mean, PS.patch_softmax_mean_cuda):
        with pytest.raises(ValueError, match=match):
            f(*args)


def test_cuda_size_limits():
    with pytest.raises(ValueError, match="CUDA kernel takes"):
        PS.patch_softmax_mean_cuda(np.zeros((2, 65)), np.zeros((3, 65)), np.zeros(3), 1.0)


def test_benchmark_small_runs():
    r = PS.benchmark("small", repeat=1)
    assert r["njit equals torch"] and set(r["seconds"]) >= {r["reference"]}
    assert r["ratios"]["torch / njit"] > 0


def test_two_worker_threads_give_the_same_answer():
    "The CPU kernel splits queries over as many threads as numba has; the split must not change the result."
    import numba
    rng = np.random.default_rng(5)
    Q, K, V = rng.standard_normal((301, 6)), rng.standard_normal((900, 6)), rng.standard_normal(900)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(2)
        two = PS.patch_softmax_mean(Q, K, V, 0.8, chunk=256)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_allclose(two, _brute(Q, K, V, 0.8), rtol=0, atol=1e-11)
