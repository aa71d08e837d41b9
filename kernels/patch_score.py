"""Softmax-weighted patch averages: the hot loop of the ideal, local and equivariant local score machines.

For queries ``Q`` (M, D), keys ``K`` (P, D) and values ``V`` (P,) or (P, c)::

    out[m] = sum_p w[m, p] V[p],    w[m, :] = softmax_p(-scale * |Q[m] - K[p]|^2)

In the equivariant local score (ELS) machine a query is the k x k patch of the noisy image around one pixel, the
keys are a_t times every k x k patch of every training image at every position, the value is the patch's centre
pixel and ``scale = 1 / (2 b_t^2)``. With thousands of training images the (M, P) weight matrix does not fit in
memory at once, and at low noise the softmax is extremely peaked, so every implementation streams over the keys
with a running maximum (the log-sum-exp trick): nothing of size M x P is held.

Three implementations with one meaning: ``patch_softmax_mean_ref`` (NumPy, keys in chunks), ``patch_softmax_mean``
(queries split over worker threads; in each, the inner products with a chunk of keys come from one BLAS product and
an ``@njit`` pass turns them into logits and folds them into the running sums, skipping the exponentials that
underflow) and ``patch_softmax_mean_cuda`` (one thread per query, keys staged through
shared memory in tiles). ``benchmark`` compares them with a torch implementation (unfold + matmul + softmax).
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, njit

from icml25nb.core import check_choice, check_array, check_float, check_int
from icml25nb.kernels._bench import best_time as _best_time
from icml25nb.kernels._threads import map_row_blocks, row_blocks

__all__ = ["patch_softmax_mean_ref", "patch_softmax_mean", "patch_softmax_mean_cuda", "benchmark"]


#: refuse inputs whose logits or weighted sums could pass this magnitude (overflow to inf, then inf - inf = NaN)
_MAX_VALUE = 1e300


def _check(Q, K, V, scale):
    """Q (M, D), K (P, D), V (P,) or (P, c): non-empty, finite, float64 C-contiguous; scale finite > 0; and small
    enough that nothing overflows: scale (max|Q| + max|K|)^2 D (a bound on every logit) and P max|V| (on every
    weighted sum) at most 1e300. A one-line ValueError/TypeError naming the argument otherwise."""
    Q = check_array("Q", Q, ndim=2)
    K = check_array("K", K, ndim=2)
    if 0 in Q.shape or 0 in K.shape:
        raise ValueError(f"Q and K must be non-empty 2-D arrays (rows, D), got {Q.shape} and {K.shape}")
    if Q.shape[1] != K.shape[1]:
        raise ValueError(f"Q and K must have the same patch length D, got {Q.shape[1]} and {K.shape[1]}")
    V = check_array("V", V, ndim=(1, 2), contiguous=False)
    vector = V.ndim == 1
    V = np.ascontiguousarray(V[:, None] if vector else V)
    if V.shape[0] != K.shape[0] or V.shape[1] < 1:
        raise ValueError(f"V must have shape ({K.shape[0]},) or ({K.shape[0]}, c), got {V.shape[:1] if vector else V.shape}")
    scale = check_float("scale", scale, 0.0, open_min=True)
    reach = float(np.abs(Q).max()) + float(np.abs(K).max())
    if not scale * reach * reach * Q.shape[1] <= _MAX_VALUE:
        raise ValueError(f"scale is too large for these Q and K: scale (max|Q| + max|K|)^2 D = "
                         f"{scale * reach * reach * Q.shape[1]:.3g} overflows float64 (at most {_MAX_VALUE:g})")
    if not K.shape[0] * float(np.abs(V).max()) <= _MAX_VALUE:
        raise ValueError(f"V is too large: P max|V| must be at most {_MAX_VALUE:g} (the weighted sums overflow)")
    return Q, K, V, scale, vector


def _check_chunk(chunk) -> int:
    return check_int("chunk", chunk, 1)


def patch_softmax_mean_ref(Q, K, V, scale: float, chunk: int = 4096) -> np.ndarray:
    "NumPy reference: softmax over keys of -scale |Q - K|^2, applied to V; keys streamed in chunks of `chunk`."
    Q, K, V, scale, vector = _check(Q, K, V, scale)
    chunk = _check_chunk(chunk)
    M = Q.shape[0]
    qn = np.einsum("md,md->m", Q, Q)
    mx = np.full(M, -np.inf)
    s = np.zeros(M)
    w = np.zeros((M, V.shape[1]))
    for p0 in range(0, K.shape[0], chunk):
        Kc, Vc = K[p0:p0 + chunk], V[p0:p0 + chunk]
        d = np.maximum(qn[:, None] + np.einsum("pd,pd->p", Kc, Kc)[None] - 2 * Q @ Kc.T, 0.0)
        logits = -scale * d
        new = np.maximum(mx, logits.max(1))
        e = np.exp(logits - new[:, None])
        shrink = np.exp(mx - new)
        s = s * shrink + e.sum(1)
        w = w * shrink[:, None] + e @ Vc
        mx = new
    out = w / s[:, None]
    return out[:, 0] if vector else out


_CHUNK = 2048  # keys per BLAS product


@njit(nogil=True, cache=True)
def _update_njit(G, qn, kn, V, scale, mx, s, w):
    "Fold one chunk of keys into the running (max, sum, weighted sum) of every query; G holds Q @ K_chunk^T."
    M, nk = G.shape
    c = V.shape[1]
    for i in range(M):
        row = G[i]
        bmax = -np.inf
        for j in range(nk):
            d = qn[i] + kn[j] - 2.0 * row[j]
            g = -scale * (d if d > 0.0 else 0.0)
            row[j] = g
            if g > bmax:
                bmax = g
        if bmax > mx[i]:  # rescale the running sums once per chunk, not once per key
            shrink = math.exp(mx[i] - bmax)
            s[i] *= shrink
            for q in range(c):
                w[i, q] *= shrink
            mx[i] = bmax
        m = mx[i]
        if c == 1:  # one value per key (the ELS and LS machines): scalar accumulators
            si, wi = 0.0, 0.0
            for j in range(nk):
                z = row[j] - m
                if z > -745.0:  # exp(z) is exactly 0.0 in float64 below this: skipping it changes nothing
                    e = math.exp(z)
                    si += e
                    wi += e * V[j, 0]
            s[i] += si
            w[i, 0] += wi
            continue
        for j in range(nk):
            z = row[j] - m
            if z > -745.0:
                e = math.exp(z)
                s[i] += e
                for q in range(c):
                    w[i, q] += e * V[j, q]


def _stream_block(Q, K, V, kn, scale, chunk):
    "All keys, chunk by chunk, for one block of queries (one worker thread; BLAS and the @njit pass release the GIL)."
    qn = np.einsum("md,md->m", Q, Q)
    mx, s, w = np.full(len(Q), -np.inf), np.zeros(len(Q)), np.zeros((len(Q), V.shape[1]))
    for p0 in range(0, K.shape[0], chunk):
        _update_njit(Q @ K[p0:p0 + chunk].T, qn, kn[p0:p0 + chunk], V[p0:p0 + chunk], scale, mx, s, w)
    return w / s[:, None]


def patch_softmax_mean(Q, K, V, scale: float, chunk: int = _CHUNK) -> np.ndarray:
    """CPU kernel for `patch_softmax_mean_ref`: queries split over worker threads (as many as numba's); in each, the
    inner products with a chunk of keys come from single-threaded BLAS and an @njit pass folds them into the softmax."""
    Q, K, V, scale, vector = _check(Q, K, V, scale)
    chunk = _check_chunk(chunk)
    kn = np.einsum("pd,pd->p", K, K)
    parts = map_row_blocks(lambda a, b: _stream_block(Q[a:b], K, V, kn, scale, chunk), row_blocks(len(Q)))
    out = np.concatenate(parts)
    return out[:, 0] if vector else out


_TILE, _MAX_D, _MAX_C, _THREADS = 64, 64, 8, 128


@cuda.jit
def _softmax_mean_cuda_kernel(Q, K, V, scale, out):
    m = cuda.grid(1)
    t0 = cuda.threadIdx.x
    M, D = Q.shape
    P, c = V.shape
    Ks = cuda.shared.array((_TILE, _MAX_D), dtype=np.float64)
    Vs = cuda.shared.array((_TILE, _MAX_C), dtype=np.float64)
    w = cuda.local.array(_MAX_C, dtype=np.float64)
    for q in range(c):
        w[q] = 0.0
    mx = -math.inf
    s = 0.0
    for p0 in range(0, P, _TILE):
        n_tile = min(_TILE, P - p0)
        for idx in range(t0, n_tile * D, _THREADS):  # the block stages one tile of keys and values
            Ks[idx // D, idx % D] = K[p0 + idx // D, idx % D]
        for idx in range(t0, n_tile * c, _THREADS):
            Vs[idx // c, idx % c] = V[p0 + idx // c, idx % c]
        cuda.syncthreads()
        if m < M:
            for j in range(n_tile):
                dist = 0.0
                for d in range(D):
                    diff = Q[m, d] - Ks[j, d]
                    dist += diff * diff
                logit = -scale * dist
                if logit > mx:
                    shrink = math.exp(mx - logit)
                    s = s * shrink + 1.0
                    for q in range(c):
                        w[q] = w[q] * shrink + Vs[j, q]
                    mx = logit
                else:
                    e = math.exp(logit - mx)
                    s += e
                    for q in range(c):
                        w[q] += e * Vs[j, q]
        cuda.syncthreads()
    if m < M:
        for q in range(c):
            out[m, q] = w[q] / s


def patch_softmax_mean_cuda(Q, K, V, scale: float) -> np.ndarray:
    "CUDA kernel (one thread per query, D <= 64, c <= 8) for `patch_softmax_mean_ref`; simulator-tested."
    Q, K, V, scale, vector = _check(Q, K, V, scale)
    if Q.shape[1] > _MAX_D or V.shape[1] > _MAX_C:
        raise ValueError(f"the CUDA kernel takes D <= {_MAX_D} and c <= {_MAX_C}")
    out = cuda.device_array((Q.shape[0], V.shape[1]))
    blocks = (Q.shape[0] + _THREADS - 1) // _THREADS
    _softmax_mean_cuda_kernel[blocks, _THREADS](cuda.to_device(Q), cuda.to_device(K), cuda.to_device(V), scale, out)
    out = out.copy_to_host()
    return out[:, 0] if vector else out


def benchmark(size: str = "default", repeat: int = 2) -> dict:
    "ELS weights for a batch of noisy 8x8 images against every 5x5 patch of a training set: NumPy, @njit, torch."
    size = check_choice("size", size, ("small", "default", "full"))
    import torch
    import torch.nn.functional as F
    n_img, n_train, k = {"small": (4, 50, 5), "default": (32, 1000, 5), "full": (64, 1797, 5)}[size]
    H = 8
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n_img, 1, H, H))
    train = rng.uniform(-1, 1, (n_train, 1, H, H))
    a, b2 = 0.7, 0.5
    tx, tt = torch.from_numpy(x), torch.from_numpy(train)
    unfold = lambda z: F.unfold(F.pad(z, (k // 2,) * 4, mode="circular"), k).transpose(1, 2).reshape(-1, k * k)
    Q, K = unfold(tx).numpy(), a * unfold(tt).numpy()
    V = train.reshape(n_train, H * H).reshape(-1)  # centre pixel of the patch at each position
    scale = 1 / (2 * b2)

    def torch_run():  # what one would write with torch: unfold, one big distance matrix, softmax, matmul
        q, key = unfold(tx), a * unfold(tt)
        logits = -scale * torch.cdist(q, key).square()
        return (torch.softmax(logits, dim=1) @ torch.from_numpy(V)).numpy()

    patch_softmax_mean(Q[:2], K[:3], V[:3], scale)
    secs = {"numpy reference (chunked)": _best_time(lambda: patch_softmax_mean_ref(Q, K, V, scale), 1),
            "njit streaming softmax over BLAS chunks": _best_time(lambda: patch_softmax_mean(Q, K, V, scale), repeat),
            "torch unfold + cdist + softmax (CPU)": _best_time(torch_run, repeat)}
    from icml25nb.generative.creativity import els_denoiser  # the public function: images in, patches, the kernel
    secs["creativity.els_denoiser (images in, same sizes)"] = _best_time(
        lambda: els_denoiser(x[:, 0], 0.5, train[:, 0], k), repeat)
    same = bool(np.allclose(patch_softmax_mean(Q, K, V, scale), torch_run(), atol=1e-8))
    import numba
    return {"kernel": "patch_score", "task": f"{n_img} noisy {H}x{H} images x {n_train} training images, {k}x{k} "
            f"patches at all positions ({Q.shape[0]} x {K.shape[0]} pairs, float64); "
            f"{numba.get_num_threads()} numba thread(s)", "seconds": secs, "reference": "numpy reference (chunked)",
            "ratios": {"torch / njit": secs["torch unfold + cdist + softmax (CPU)"]
                       / secs["njit streaming softmax over BLAS chunks"],
                       "creativity.els_denoiser / njit": secs["creativity.els_denoiser (images in, same sizes)"]
                       / secs["njit streaming softmax over BLAS chunks"]},
            "njit equals torch": same}
