"""kernels/segpool.py: per-segment pooling and broadcast (the superpixel operations of P2P), NumPy reference vs
@njit vs CUDA (simulator, atomic adds), against loops written from the definition and against torch's scatter."""
import warnings

import numpy as np
import pytest
import torch

from icml25nb.kernels import segpool as P


def _sim(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def _loops(x, seg, S, reduce):
    "The definition, pixel by pixel."
    B, C = x.shape[:2]
    out = np.zeros((B, C, S))
    cnt = np.zeros((B, S))
    for b in range(B):
        for i in range(seg.shape[1]):
            for j in range(seg.shape[2]):
                cnt[b, seg[b, i, j]] += 1
                out[b, :, seg[b, i, j]] += x[b, :, i, j]
    if reduce == "mean":
        out = np.where(cnt[:, None] > 0, out / np.maximum(cnt[:, None], 1), 0.0)
    return out


@pytest.mark.parametrize("reduce", ["mean", "sum"])
@pytest.mark.parametrize("B,C,H,W,S", [(3, 2, 9, 11, 9), (1, 1, 1, 1, 1), (2, 3, 5, 4, 25)])
def test_pool_follows_the_definition(reduce, B, C, H, W, S):
    seg = P._grid_segments(B, H, W, S, seed=B + H)
    x = np.random.default_rng(C).normal(size=(B, C, H, W))
    n = max(S, int(seg.max()) + 1) + 2  # two labels no pixel has: empty segments give 0
    want = _loops(x, seg, n, reduce)
    for got in (P.pool_ref(x, seg, n, reduce), P.pool(x, seg, n, reduce)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_sim(P.pool_cuda, x, seg, n, reduce, threads=32), want, rtol=1e-12, atol=1e-12)
    assert np.all(P.pool(x, seg, n, reduce)[:, :, -2:] == 0)


def test_single_channel_shapes_and_default_segment_count():
    seg = P._grid_segments(2, 6, 7, 4, seed=1)
    x = np.random.default_rng(0).normal(size=(2, 6, 7))
    S = int(seg.max()) + 1
    for f in (P.pool_ref, P.pool):
        assert f(x, seg).shape == (2, S)
    assert _sim(P.pool_cuda, x, seg).shape == (2, S)
    for f in (P.broadcast_ref, P.broadcast):
        assert f(P.pool(x, seg), seg).shape == (2, 6, 7)


def test_broadcast_is_a_gather_and_pool_then_broadcast_is_the_identity_on_piecewise_constant_images():
    seg = P._grid_segments(4, 10, 12, 16, seed=3)
    vals = np.random.default_rng(5).normal(size=(4, 2, int(seg.max()) + 1))
    want = np.stack([np.stack([vals[b, c][seg[b]] for c in range(2)]) for b in range(4)])
    for f in (P.broadcast_ref, P.broadcast):
        np.testing.assert_array_equal(f(vals, seg), want)
    np.testing.assert_array_equal(_sim(P.broadcast_cuda, vals, seg, threads=64), want)
    img = P.broadcast(vals, seg)  # constant on every segment
    np.testing.assert_allclose(P.broadcast(P.pool(img, seg), seg), img, rtol=1e-14)
    np.testing.assert_allclose(P.broadcast_ref(P.pool_ref(img, seg), seg), img, rtol=1e-14)


def test_agrees_with_torch_scatter_reduce_and_gather():
    seg = P._grid_segments(3, 16, 16, 9, seed=7)
    x = np.random.default_rng(2).normal(size=(3, 16, 16))
    S = int(seg.max()) + 1
    st, xt = torch.from_numpy(seg.reshape(3, -1)), torch.from_numpy(x.reshape(3, -1))
    want = torch.zeros(3, S, dtype=torch.float64).scatter_reduce_(1, st, xt, reduce="mean", include_self=False)
    np.testing.assert_allclose(P.pool(x, seg), want.numpy(), rtol=1e-12)
    np.testing.assert_array_equal(P.broadcast(want.numpy(), seg).reshape(3, -1), torch.gather(want, 1, st).numpy())


def test_accepts_float32_and_non_contiguous_input():
    seg = P._grid_segments(2, 8, 8, 4, seed=0)
    x = np.random.default_rng(1).normal(size=(2, 8, 16))[:, :, ::2]
    np.testing.assert_allclose(P.pool(x.astype(np.float32), seg), P.pool_ref(x.astype(np.float32), seg), rtol=1e-12)
    np.testing.assert_allclose(P.pool(x, seg.astype(np.int32)), P.pool_ref(np.ascontiguousarray(x), seg), rtol=1e-12)


@pytest.mark.parametrize("f", [P.pool_ref, P.pool, P.pool_cuda])
def test_pool_bad_input(f):
    seg = np.zeros((2, 3, 3), int)
    x = np.zeros((2, 3, 3))
    with pytest.raises(TypeError, match="segments must hold integer"):
        f(x, seg.astype(float))
    with pytest.raises(ValueError, match="segments must hold labels >= 0"):
        f(x, seg - 1)
    with pytest.raises(ValueError, match="segments must have shape"):
        f(x, seg[0])
    with pytest.raises(ValueError, match="values must match"):
        f(x[:, :2], seg)
    with pytest.raises(ValueError, match="values must be finite"):
        f(np.full_like(x, np.nan), seg)
    with pytest.raises(ValueError, match="reduce"):
        f(x, seg, reduce="max")
    with pytest.raises(ValueError, match="n_segments"):
        f(x, seg + 2, n_segments=2)
    with pytest.raises(TypeError, match="values must be"):
        f("abc", seg)


@pytest.mark.parametrize("f", [P.broadcast_ref, P.broadcast, P.broadcast_cuda])
def test_broadcast_bad_input(f):
    seg = np.array([[[0, 1], [2, 2]]])
    with pytest.raises(ValueError, match="pooled has 2 segments"):
        f(np.zeros((1, 2)), seg)
    with pytest.raises(ValueError, match="pooled must have shape"):
        f(np.zeros((2, 3)), seg)
    with pytest.raises(TypeError, match="pooled must be"):
        f(None, seg)


def test_benchmark_small_runs():
    out = P.benchmark("small", repeat=1)
    assert out["kernel"] == "segpool" and out["all agree"]
    assert set(out["ratios"]) == {"pool: numpy / njit", "pool: torch / njit", "broadcast: numpy / njit",
                                  "broadcast: torch / njit", "pool: public region_pool / njit kernel",
                                  "pool + backward: torch scatter_reduce / public region_pool"}
