"""kernels/kcenter.py: k-center greedy (farthest-point) selection, NumPy reference vs @njit vs CUDA (simulator), against
a brute-force loop written from the definition."""
import warnings

import numpy as np
import pytest

from icml25nb.kernels import kcenter as K


def _brute(X, budget, first):
    "The definition, with full distance matrices: pick the free point farthest from its nearest chosen centre."
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    chosen = [first]
    while len(chosen) < budget:
        m = D[:, chosen].min(1)
        m[chosen] = -1
        chosen.append(int(np.argmax(m)))
    return np.array(chosen), D[:, chosen].min(1)


def _sim(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


@pytest.mark.parametrize("n,d,budget,first", [(60, 3, 12, 0), (257, 2, 30, 256), (40, 7, 40, 5), (1, 4, 1, 0)])
def test_reference_and_njit_follow_the_definition(n, d, budget, first):
    X = K._clustered_points(n, d, seed=n + d)
    want_order, want_mins = _brute(X, budget, first)
    for f in (K.kcenter_greedy_ref, K.kcenter_greedy):
        order, mins = f(X, budget, first)
        np.testing.assert_array_equal(order, want_order)
        np.testing.assert_allclose(mins, want_mins, rtol=1e-12, atol=1e-12)
        assert order.dtype == np.int64 and mins.shape == (n,)
        assert np.all(mins[order] == 0) and len(set(order.tolist())) == budget


def test_cuda_simulator_agrees():
    "More points than one block of 256 threads (the block and final argmax reductions) and a last, partial block."
    X = K._clustered_points(260, 3, seed=4)
    ref = K.kcenter_greedy(X, 4, 259)
    got = _sim(K.kcenter_greedy_cuda, X, 4, 259)
    np.testing.assert_array_equal(got[0], ref[0])
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-12, atol=1e-15)


def test_duplicates_and_ties():
    "Duplicates of a centre (distance 0) are picked once everything else is covered; equal maxima: the first index."
    X = np.repeat(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 3.0]]), 3, axis=0)
    outs = [K.kcenter_greedy_ref(X, 9, 0), K.kcenter_greedy(X, 9, 0), _sim(K.kcenter_greedy_cuda, X, 9, 0)]
    for order, mins in outs:
        np.testing.assert_array_equal(order, [0, 6, 3, 1, 2, 4, 5, 7, 8])
        assert np.all(mins == 0)
    S = np.array([[0.0], [1.0], [-1.0], [2.0], [-2.0]])  # from 0: 3 and 4 are equally far; the first (3) wins
    for f in (K.kcenter_greedy_ref, K.kcenter_greedy):
        np.testing.assert_array_equal(f(S, 3, 0)[0], [0, 3, 4])
    np.testing.assert_array_equal(_sim(K.kcenter_greedy_cuda, S, 3, 0)[0], [0, 3, 4])


def test_covering_radius_decreases_and_beats_random():
    X = K._clustered_points(500, 4, seed=9)
    order, _ = K.kcenter_greedy(X, 40, 0)
    radii = [K.kcenter_greedy(X, b, 0)[1].max() for b in (5, 10, 20, 40)]
    assert all(a >= b for a, b in zip(radii, radii[1:]))
    rnd = np.random.default_rng(0).choice(500, 40, replace=False)
    rnd_radius = ((X[:, None] - X[rnd][None]) ** 2).sum(-1).min(1).max()
    assert radii[-1] <= rnd_radius  # Gonzalez: at most twice the optimum; random covers worse here
    np.testing.assert_allclose(radii[-1], ((X[:, None] - X[order][None]) ** 2).sum(-1).min(1).max(), rtol=1e-12)


def test_accepts_integer_and_non_contiguous_input():
    X = K._clustered_points(50, 4, seed=2)
    Xi = np.round(X * 10).astype(np.int32)
    np.testing.assert_array_equal(K.kcenter_greedy(Xi, 7, 3)[0], K.kcenter_greedy_ref(Xi.astype(float), 7, 3)[0])
    big = np.empty((50, 8))
    big[:, ::2] = X
    np.testing.assert_array_equal(K.kcenter_greedy(big[:, ::2], 7, 3)[0], K.kcenter_greedy(X, 7, 3)[0])


@pytest.mark.parametrize("f", [K.kcenter_greedy_ref, K.kcenter_greedy, K.kcenter_greedy_cuda])
def test_bad_input(f):
    X = np.zeros((5, 2))
    with pytest.raises(ValueError, match="budget"):
        f(X, 6)
    with pytest.raises(ValueError, match="budget"):
        f(X, 0)
    with pytest.raises(ValueError, match="first"):
        f(X, 2, 5)
    with pytest.raises(ValueError, match="X must be 2-D"):
        f(np.zeros(5), 2)
    with pytest.raises(ValueError, match="X must be finite"):
        f(np.array([[0.0], [np.nan]]), 1)
    with pytest.raises(TypeError, match="X must be"):
        f("abc", 1)
    with pytest.raises(TypeError, match="budget"):
        f(X, 2.5)


def test_benchmark_small_runs():
    out = K.benchmark("small", repeat=1)
    assert out["kernel"] == "kcenter" and out["same picks (numpy, njit, sklearn, torch)"]
    assert set(out["ratios"]) == {"numpy / njit", "sklearn / njit", "torch / njit"}
    assert all(v > 0 for v in out["seconds"].values())
