"""Per-segment pooling and broadcast: the superpixel operations of instance-wise grouped feature selection (P2P).

An image of ``H x W`` pixels is split into segments (superpixels) labelled ``0 .. S-1`` (``segments``, an integer
array ``(B, H, W)``). For per-pixel values ``x`` (``(B, H, W)``, or ``(B, C, H, W)`` for ``C`` channels)::

    pool:       p[b, (c,) s] = (1 / n[b, s]) * sum over pixels (i, j) with segments[b, i, j] = s of x[b, (c,) i, j]
                               (reduce="mean"; reduce="sum" drops the 1 / n[b, s]; a segment with no pixel gives 0)
    broadcast:  y[b, (c,) i, j] = p[b, (c,) segments[b, i, j]]

so that ``broadcast(pool(x))`` is the identity on images that are constant on every segment. P2P pools the
selector's pixel logits into one logit per superpixel and broadcasts the sampled region mask back to the pixels.

Three implementations with one meaning:

- ``pool_ref`` / ``broadcast_ref``: NumPy, one ``np.bincount`` of offset labels per channel, and fancy indexing.
- ``pool`` / ``broadcast``: ``@njit(parallel=True)``, images (and channels) over ``prange``, each accumulating its own
  sums and counts in one pass over its pixels (no atomics needed: a thread owns its image).
- ``pool_cuda`` / ``broadcast_cuda``: ``@cuda.jit``, one thread per pixel; pooling adds into the segment's sum and
  count with ``cuda.atomic.add``, then one thread per (image, channel, segment) divides. Atomic additions in float64
  arrive in any order, so CUDA sums agree with the others to rounding (rtol 1e-12), not bit for bit; counts and
  broadcasts are exact.

``benchmark`` compares them with what a user would otherwise write: ``np.bincount`` with offset labels and
``torch.Tensor.scatter_reduce`` (``reduce="mean"``), the scatter that PyTorch models (and the P2P authors' code) use.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, njit, prange

from icml25nb.core import check_choice, check_int, check_memory
from icml25nb.kernels._bench import race as _race

__all__ = ["pool_ref", "pool", "pool_cuda", "broadcast_ref", "broadcast", "broadcast_cuda", "benchmark"]


def _check_segments(segments, n_segments):
    if isinstance(segments, (str, bytes)) or segments is None:
        raise TypeError(f"segments must be an integer array (B, H, W) of segment labels, got {type(segments).__name__}")
    seg = np.asarray(segments)
    if seg.dtype.kind not in "iu":
        raise TypeError(f"segments must hold integer labels, got dtype {seg.dtype}")
    if seg.ndim != 3 or 0 in seg.shape:
        raise ValueError(f"segments must have shape (B, H, W) with B, H, W >= 1, got {seg.shape}")
    if seg.min() < 0:
        raise ValueError("segments must hold labels >= 0")
    top = int(seg.max()) + 1
    n_segments = top if n_segments is None else check_int("n_segments", n_segments, top, 2**31 - 1)
    return np.ascontiguousarray(seg, dtype=np.int64), n_segments


def _check_values(values, seg, name="values"):
    if isinstance(values, (str, bytes)) or values is None:
        raise TypeError(f"{name} must be a float array (B, H, W) or (B, C, H, W), got {type(values).__name__}")
    try:
        x = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of numbers (B, H, W) or (B, C, H, W)") from None
    if x.ndim == 3:
        x = x[:, None]
        squeeze = True
    elif x.ndim == 4:
        squeeze = False
    else:
        raise ValueError(f"{name} must have shape (B, H, W) or (B, C, H, W), got {x.shape}")
    if x.shape[0] != seg.shape[0] or x.shape[2:] != seg.shape[1:]:
        raise ValueError(f"{name} must match segments' shape {seg.shape} in B, H and W, got {x.shape if not squeeze else x.shape[:1] + x.shape[2:]}")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return np.ascontiguousarray(x), squeeze


def _prepare_pool(values, segments, n_segments, reduce):
    seg, S = _check_segments(segments, n_segments)
    x, squeeze = _check_values(values, seg)
    reduce = check_choice("reduce", reduce, ("mean", "sum"))
    check_memory("n_segments", float(x.shape[0]) * x.shape[1] * S, 8)
    return x, seg, S, reduce, squeeze


def _finish(out, squeeze):
    return out[:, 0] if squeeze else out


def pool_ref(values, segments, n_segments: int | None = None, reduce: str = "mean") -> np.ndarray:
    """NumPy reference: the mean (or sum) of `values` over each segment of each image; (B, S) or (B, C, S).
    `n_segments` (default: the largest label + 1) sets S; empty segments give 0."""
    x, seg, S, reduce, squeeze = _prepare_pool(values, segments, n_segments, reduce)
    B, C = x.shape[:2]
    flat = (seg.reshape(B, -1) + S * np.arange(B)[:, None]).ravel()
    counts = np.bincount(flat, minlength=B * S).reshape(B, S).astype(np.float64)
    out = np.empty((B, C, S))
    for c in range(C):
        out[:, c] = np.bincount(flat, weights=x[:, c].ravel(), minlength=B * S).reshape(B, S)
    if reduce == "mean":
        out = np.divide(out, counts[:, None, :], out=np.zeros_like(out), where=counts[:, None, :] > 0)
    return _finish(out, squeeze)


@njit(cache=True, parallel=True)
def _pool_njit(x, seg, S, mean, out):
    B, C, H, W = x.shape
    for bc in prange(B * C):
        b, c = bc // C, bc % C
        cnt = np.zeros(S)
        acc = np.zeros(S)
        for i in range(H):
            for j in range(W):
                s = seg[b, i, j]
                acc[s] += x[b, c, i, j]
                cnt[s] += 1.0
        for s in range(S):
            if mean:
                out[b, c, s] = acc[s] / cnt[s] if cnt[s] > 0 else 0.0
            else:
                out[b, c, s] = acc[s]


def pool(values, segments, n_segments: int | None = None, reduce: str = "mean") -> np.ndarray:
    "@njit kernel: the mean (or sum) of `values` over each segment of each image; (B, S) or (B, C, S)."
    x, seg, S, reduce, squeeze = _prepare_pool(values, segments, n_segments, reduce)
    out = np.empty((x.shape[0], x.shape[1], S))
    _pool_njit(x, seg, S, reduce == "mean", out)
    return _finish(out, squeeze)


@cuda.jit
def _pool_add_cuda(x, seg, acc, cnt):
    "One thread per pixel (of every image and channel): atomic adds into its segment's sum (and count, channel 0)."
    t = cuda.grid(1)
    B, C, H, W = x.shape
    if t < B * C * H * W:
        j = t % W
        i = (t // W) % H
        c = (t // (W * H)) % C
        b = t // (W * H * C)
        s = seg[b, i, j]
        cuda.atomic.add(acc, (b, c, s), x[b, c, i, j])
        if c == 0:
            cuda.atomic.add(cnt, (b, s), 1.0)


@cuda.jit
def _pool_div_cuda(acc, cnt, mean, out):
    "One thread per (image, channel, segment): the mean (or the sum) into out."
    t = cuda.grid(1)
    B, C, S = acc.shape
    if t < B * C * S:
        s = t % S
        c = (t // S) % C
        b = t // (S * C)
        if mean:
            n = cnt[b, s]
            out[b, c, s] = acc[b, c, s] / n if n > 0 else 0.0
        else:
            out[b, c, s] = acc[b, c, s]


def pool_cuda(values, segments, n_segments: int | None = None, reduce: str = "mean", threads: int = 256) -> np.ndarray:
    "@cuda.jit kernels (atomic adds): the mean (or sum) of `values` over each segment of each image."
    x, seg, S, reduce, squeeze = _prepare_pool(values, segments, n_segments, reduce)
    threads = check_int("threads", threads, 1, 1024)
    B, C = x.shape[:2]
    d_acc = cuda.to_device(np.zeros((B, C, S)))
    d_cnt = cuda.to_device(np.zeros((B, S)))
    d_out = cuda.device_array((B, C, S), np.float64)
    _pool_add_cuda[math.ceil(x.size / threads), threads](cuda.to_device(x), cuda.to_device(seg), d_acc, d_cnt)
    _pool_div_cuda[math.ceil(B * C * S / threads), threads](d_acc, d_cnt, reduce == "mean", d_out)
    return _finish(d_out.copy_to_host(), squeeze)


def _prepare_broadcast(pooled, segments):
    seg, _ = _check_segments(segments, None)
    if isinstance(pooled, (str, bytes)) or pooled is None:
        raise TypeError(f"pooled must be a float array (B, S) or (B, C, S), got {type(pooled).__name__}")
    try:
        p = np.asarray(pooled, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError("pooled must be an array of numbers (B, S) or (B, C, S)") from None
    squeeze = p.ndim == 2
    if squeeze:
        p = p[:, None]
    if p.ndim != 3 or p.shape[0] != seg.shape[0]:
        raise ValueError(f"pooled must have shape (B, S) or (B, C, S) with B = {seg.shape[0]}, got {np.shape(pooled)}")
    if p.shape[2] <= int(seg.max()):
        raise ValueError(f"pooled has {p.shape[2]} segments, but segments uses labels up to {int(seg.max())}")
    check_memory("segments", float(p.shape[0]) * p.shape[1] * seg.shape[1] * seg.shape[2], 8)
    return np.ascontiguousarray(p), seg, squeeze


def broadcast_ref(pooled, segments) -> np.ndarray:
    "NumPy reference: every pixel gets its segment's value; (B, H, W) from (B, S), or (B, C, H, W) from (B, C, S)."
    p, seg, squeeze = _prepare_broadcast(pooled, segments)
    out = np.take_along_axis(p, seg.reshape(seg.shape[0], 1, -1), axis=2)  # (B, C, H*W)
    out = out.reshape(p.shape[0], p.shape[1], *seg.shape[1:])
    return out[:, 0] if squeeze else out


@njit(cache=True, parallel=True)
def _broadcast_njit(p, seg, out):
    B, C, H, W = out.shape
    for bc in prange(B * C):
        b, c = bc // C, bc % C
        for i in range(H):
            for j in range(W):
                out[b, c, i, j] = p[b, c, seg[b, i, j]]


def broadcast(pooled, segments) -> np.ndarray:
    "@njit kernel: every pixel gets its segment's value; (B, H, W) from (B, S), or (B, C, H, W) from (B, C, S)."
    p, seg, squeeze = _prepare_broadcast(pooled, segments)
    out = np.empty((p.shape[0], p.shape[1]) + seg.shape[1:])
    _broadcast_njit(p, seg, out)
    return out[:, 0] if squeeze else out


@cuda.jit
def _broadcast_cuda(p, seg, out):
    t = cuda.grid(1)
    B, C, H, W = out.shape
    if t < B * C * H * W:
        j = t % W
        i = (t // W) % H
        c = (t // (W * H)) % C
        b = t // (W * H * C)
        out[b, c, i, j] = p[b, c, seg[b, i, j]]


def broadcast_cuda(pooled, segments, threads: int = 256) -> np.ndarray:
    "@cuda.jit kernel (one thread per pixel): every pixel gets its segment's value."
    p, seg, squeeze = _prepare_broadcast(pooled, segments)
    threads = check_int("threads", threads, 1, 1024)
    d_out = cuda.device_array((p.shape[0], p.shape[1]) + seg.shape[1:], np.float64)
    _broadcast_cuda[math.ceil(d_out.size / threads), threads](cuda.to_device(p), cuda.to_device(seg), d_out)
    out = d_out.copy_to_host()
    return out[:, 0] if squeeze else out


def _grid_segments(B: int, H: int, W: int, n: int, seed: int) -> np.ndarray:
    "Superpixel-like labels: a jittered grid of about n cells per image, labels 0..n-1 (some may be empty)."
    rng = np.random.default_rng(seed)
    g = max(1, int(round(math.sqrt(n))))
    out = np.empty((B, H, W), np.int64)
    for b in range(B):
        ry = np.sort(rng.integers(1, H, g - 1)) if g > 1 else np.zeros(0, int)
        rx = np.sort(rng.integers(1, W, g - 1)) if g > 1 else np.zeros(0, int)
        out[b] = np.searchsorted(ry, np.arange(H), side="right")[:, None] * g + np.searchsorted(rx, np.arange(W), side="right")[None, :]
    return out


def benchmark(size: str = "default", repeat: int = 3) -> dict:
    """Mean over every superpixel of B images and the broadcast back: NumPy reference (np.bincount), @njit, and
    torch's scatter_reduce / gather (what a PyTorch model, such as the P2P authors', uses)."""
    size = check_choice("size", size, ("small", "default", "full"))
    repeat = check_int("repeat", repeat, 1)
    import numba
    import torch
    B, H, S = {"small": (16, 64, 49), "default": (256, 224, 196), "full": (1024, 224, 196)}[size]
    seg = _grid_segments(B, H, H, S, seed=0)
    x = np.random.default_rng(1).normal(size=(B, H, H))
    segt, xt = torch.from_numpy(seg.reshape(B, -1)), torch.from_numpy(x.reshape(B, -1))

    def torch_pool():
        return torch.zeros(B, S, dtype=torch.float64).scatter_reduce_(1, segt, xt, reduce="mean", include_self=False)

    pooled = pool(x, seg, S)
    pt = torch.from_numpy(pooled)

    def torch_broadcast():
        return torch.gather(pt, 1, segt)

    pool(x[:1, :4, :4], seg[:1, :4, :4])  # compile
    broadcast(pooled[:1], seg[:1])
    from icml25nb.supervised.p2p import region_pool  # the chapter's public function (NumPy in, or torch with autograd)
    w = torch.from_numpy(np.random.default_rng(2).normal(size=(B, S)))

    def public_train_step():  # what one training step of P2P does with the pooling: forward and backward
        xg = xt.view(B, H, H).clone().requires_grad_(True)
        (region_pool(xg, seg, S) * w).sum().backward()
        return xg.grad

    def torch_train_step():
        xg = xt.clone().requires_grad_(True)
        (torch.zeros(B, S, dtype=torch.float64).scatter_reduce(1, segt, xg, reduce="mean", include_self=False) * w).sum().backward()
        return xg.grad

    secs = _race({"pool: numpy reference (np.bincount)": lambda: pool_ref(x, seg, S),
                  "pool: njit (prange over images)": lambda: pool(x, seg, S),
                  "pool: torch scatter_reduce (mean)": torch_pool,
                  "broadcast: numpy reference (take_along_axis)": lambda: broadcast_ref(pooled, seg),
                  "broadcast: njit": lambda: broadcast(pooled, seg),
                  "broadcast: torch gather": torch_broadcast,
                  "pool: supervised.p2p.region_pool (public, NumPy in)": lambda: region_pool(x, seg, S),
                  "pool + backward: supervised.p2p.region_pool (public, torch in; kernels both ways)": public_train_step,
                  "pool + backward: torch scatter_reduce (autograd)": torch_train_step}, repeat)
    agree = (np.allclose(pool_ref(x, seg, S), pooled, rtol=1e-12, atol=1e-12)
             and np.allclose(torch_pool().numpy(), pooled, rtol=1e-12, atol=1e-12)
             and np.array_equal(torch_broadcast().numpy().reshape(x.shape), broadcast(pooled, seg))
             and np.array_equal(region_pool(x, seg, S), pooled)
             and np.allclose(public_train_step().numpy().reshape(x.shape), torch_train_step().numpy().reshape(x.shape),
                             rtol=1e-12, atol=1e-15))
    pn, bn = secs["pool: njit (prange over images)"], secs["broadcast: njit"]
    return {"kernel": "segpool", "task": f"mean over {S} segments of {B} images of {H} x {H}, and the broadcast back; "
            f"{numba.get_num_threads()} numba thread(s), {torch.get_num_threads()} torch thread(s)",
            "seconds": secs, "reference": "pool: numpy reference (np.bincount)",
            "ratios": {"pool: numpy / njit": secs["pool: numpy reference (np.bincount)"] / pn,
                       "pool: torch / njit": secs["pool: torch scatter_reduce (mean)"] / pn,
                       "broadcast: numpy / njit": secs["broadcast: numpy reference (take_along_axis)"] / bn,
                       "broadcast: torch / njit": secs["broadcast: torch gather"] / bn,
                       "pool: public region_pool / njit kernel": secs["pool: supervised.p2p.region_pool (public, NumPy in)"] / pn,
                       "pool + backward: torch scatter_reduce / public region_pool":
                           secs["pool + backward: torch scatter_reduce (autograd)"]
                           / secs["pool + backward: supervised.p2p.region_pool (public, torch in; kernels both ways)"]},
            "all agree": bool(agree)}
