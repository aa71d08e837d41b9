"""Squared maximum mean discrepancy with a Gaussian (RBF) kernel between two sample sets.

For X (m, d), Y (n, d) and k(x, y) = exp(-|x - y|^2 / (2 sigma^2))::

    unbiased:  MMD^2 = S_xx / (m (m-1)) + S_yy / (n (n-1)) - 2 S_xy / (m n)
    biased:    MMD^2 = (S_xx + m) / m^2 + (S_yy + n) / n^2 - 2 S_xy / (m n)

where S_xx and S_yy sum k over the off-diagonal pairs of one set and S_xy over all pairs across the sets. The work
is three kernel sums over m^2/2 + n^2/2 + m n pairs; nothing of size m x n is held at once.

Three implementations with one meaning: ``mmd2_rbf_ref`` (NumPy, row chunks, the full matrices of each chunk),
``mmd2_rbf`` (rows split over worker threads; in each, the inner products with a chunk of columns come from one
single-threaded BLAS product and an ``@njit(nogil)`` pass turns them into kernel values and sums them, visiting only
the upper triangle for S_xx and S_yy) and ``mmd2_rbf_cuda`` (one thread per row, the other set staged through shared
memory in tiles, a block reduction per tile). ``benchmark`` compares them with the torch.cdist formulation.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, njit

from icml25nb.core import check_array, check_float, check_int
from icml25nb.kernels._bench import best_time as _best_time, race as _race
from icml25nb.kernels._cuda import block_sum
from icml25nb.kernels._threads import map_row_blocks, row_blocks

__all__ = ["mmd2_rbf_ref", "mmd2_rbf", "mmd2_rbf_cuda", "median_bandwidth", "benchmark"]


def _check(X, Y, sigma, unbiased):
    X = check_array("X", X, ndim=2, finite=False)
    Y = check_array("Y", Y, ndim=2, finite=False)
    if not isinstance(unbiased, (bool, np.bool_)):
        raise TypeError(f"unbiased must be True or False, got {unbiased!r}")
    if X.shape[1] != Y.shape[1] or X.shape[1] == 0:
        raise ValueError(f"X and Y must be 2-D arrays (rows, d) with the same d >= 1, got {X.shape} and {Y.shape}")
    least = 2 if unbiased else 1
    if len(X) < least or len(Y) < least:
        raise ValueError(f"the {'unbiased' if unbiased else 'biased'} MMD needs at least {least} rows in X and Y, "
                         f"got {len(X)} and {len(Y)}")
    if not (np.isfinite(X).all() and np.isfinite(Y).all()):
        raise ValueError("X and Y must be finite")
    sigma = check_float("sigma", sigma, 0.0, open_min=True)
    g = 1.0 / (2.0 * sigma * sigma) if sigma > 1e-150 else math.inf
    if not math.isfinite(g) or g == 0.0:
        raise ValueError(f"sigma must lie in [1e-150, 1e150] (1 / (2 sigma^2) must be a positive float), got {sigma!r}")
    return X, Y, g


def _finite_result(v: float) -> float:
    "`v`, or a ValueError naming X and Y: a squared distance overflowed float64 (inf - inf in the expansion)."
    if not math.isfinite(v):
        raise ValueError("X and Y are too large: their squared distances overflow float64 (rescale them)")
    return v


def _combine(sxx, syy, sxy, m, n, unbiased):
    if unbiased:
        return sxx / (m * (m - 1)) + syy / (n * (n - 1)) - 2.0 * sxy / (m * n)
    return (sxx + m) / m ** 2 + (syy + n) / n ** 2 - 2.0 * sxy / (m * n)


def median_bandwidth(X, Y, max_points: int = 1000, seed: int = 0) -> float:
    "The median heuristic: sigma = median pairwise distance of the pooled sample (at most `max_points` of it)."
    X, Y = check_array("X", X, ndim=2), check_array("Y", Y, ndim=2)
    if X.shape[1] != Y.shape[1] or X.shape[1] == 0 or len(X) + len(Y) < 2:
        raise ValueError(f"X and Y must be 2-D arrays (rows, d) with the same d >= 1 and 2 rows in all, got {X.shape} "
                         f"and {Y.shape}")
    max_points = check_int("max_points", max_points, 2, 100_000)
    seed = check_int("seed", seed, 0, 2**63 - 1)
    Z = np.concatenate([X, Y])
    if len(Z) > max_points:
        Z = Z[np.random.default_rng(seed).choice(len(Z), max_points, replace=False)]
    sq = np.einsum("id,id->i", Z, Z)
    D2 = np.maximum(sq[:, None] + sq[None] - 2 * Z @ Z.T, 0.0)
    med = float(np.sqrt(np.median(D2[np.triu_indices(len(Z), 1)])))
    if not math.isfinite(med):
        raise ValueError("X and Y are too large: their squared distances overflow float64 (rescale them)")
    return med if med > 0 else 1.0


def mmd2_rbf_ref(X, Y, sigma: float, unbiased: bool = True, chunk: int = 1024) -> float:
    "NumPy reference: kernel matrices chunk by chunk of rows, diagonals removed from the within-set sums."
    X, Y, g = _check(X, Y, sigma, unbiased)
    chunk = check_int("chunk", chunk, 1)

    def ksum(A, B):
        bn = np.einsum("id,id->i", B, B)
        total = 0.0
        for i0 in range(0, len(A), chunk):
            Ac = A[i0:i0 + chunk]
            D2 = np.maximum(np.einsum("id,id->i", Ac, Ac)[:, None] + bn[None] - 2 * Ac @ B.T, 0.0)
            total += float(np.exp(-g * D2).sum())
        return total

    m, n = len(X), len(Y)
    return _finite_result(float(_combine(ksum(X, X) - m, ksum(Y, Y) - n, ksum(X, Y), m, n, unbiased)))


_CHUNK = 2048  # columns per BLAS product


@njit(nogil=True, cache=True)
def _rbf_sum_njit(G, an, bn, g, tri, r0, c0):
    "Sum of exp(-g |a_i - b_j|^2) over a block, G = A_block @ B_chunk^T; with `tri` only global column > global row."
    total = 0.0
    R, C = G.shape
    for i in range(R):
        j0 = 0
        if tri:
            j0 = r0 + i + 1 - c0
            if j0 < 0:
                j0 = 0
        ai = an[i]
        s = 0.0
        for j in range(j0, C):
            d = ai + bn[j] - 2.0 * G[i, j]
            if d < 0.0:
                d = 0.0
            s += math.exp(-g * d)
        total += s
    return total


def _block_sum(A, B, an, bn, g, tri, r0, r1, chunk):
    "One worker: rows r0:r1 of A against the columns of B (from r0 on when `tri`), chunk by chunk."
    Ab, total = A[r0:r1], 0.0
    for c0 in range(r0 if tri else 0, len(B), chunk):
        total += _rbf_sum_njit(Ab @ B[c0:c0 + chunk].T, an[r0:r1], bn[c0:c0 + chunk], g, tri, r0, c0)
    return total


def _kernel_sum(A, B, g, tri, chunk):
    an, bn = np.einsum("id,id->i", A, A), np.einsum("id,id->i", B, B)
    bounds = row_blocks(len(A), min_rows=1024, triangular=tri)  # below ~1000 rows a thread costs more than it saves
    return sum(map_row_blocks(lambda a, b: _block_sum(A, B, an, bn, g, tri, a, b, chunk), bounds))


def mmd2_rbf(X, Y, sigma: float, unbiased: bool = True, chunk: int = _CHUNK) -> float:
    """CPU kernel for `mmd2_rbf_ref`: rows over worker threads, BLAS inner products per column chunk, an @njit pass
    for the kernel values; the within-set sums visit the upper triangle only."""
    X, Y, g = _check(X, Y, sigma, unbiased)
    chunk = check_int("chunk", chunk, 1)
    sxx = 2.0 * _kernel_sum(X, X, g, True, chunk)
    syy = 2.0 * _kernel_sum(Y, Y, g, True, chunk)
    return _finite_result(float(_combine(sxx, syy, _kernel_sum(X, Y, g, False, chunk), len(X), len(Y), unbiased)))


_TILE, _MAX_D, _THREADS = 64, 64, 128


@cuda.jit
def _rbf_sum_cuda_kernel(A, B, g, tri, partial):
    i = cuda.grid(1)
    t0 = cuda.threadIdx.x
    M, D = A.shape
    N = B.shape[0]
    Bs = cuda.shared.array((_TILE, _MAX_D), dtype=np.float64)
    red = cuda.shared.array(_THREADS, dtype=np.float64)
    s = 0.0
    for j0 in range(0, N, _TILE):
        n_tile = min(_TILE, N - j0)
        for idx in range(t0, n_tile * D, _THREADS):  # the block stages one tile of B
            Bs[idx // D, idx % D] = B[j0 + idx // D, idx % D]
        cuda.syncthreads()
        if i < M:
            for j in range(n_tile):
                if tri and j0 + j <= i:
                    continue
                dist = 0.0
                for d in range(D):
                    diff = A[i, d] - Bs[j, d]
                    dist += diff * diff
                s += math.exp(-g * dist)
        cuda.syncthreads()
    red[t0] = s
    cuda.syncthreads()
    block_sum(red, t0, _THREADS)  # the block's row sums
    if t0 == 0:
        partial[cuda.blockIdx.x] = red[0]


def _kernel_sum_cuda(A, B, g, tri):
    blocks = (A.shape[0] + _THREADS - 1) // _THREADS
    partial = cuda.device_array(blocks)
    _rbf_sum_cuda_kernel[blocks, _THREADS](cuda.to_device(A), cuda.to_device(B), g, tri, partial)
    return float(partial.copy_to_host().sum())


def mmd2_rbf_cuda(X, Y, sigma: float, unbiased: bool = True) -> float:
    "CUDA kernel (one thread per row, d <= 64) for `mmd2_rbf_ref`; simulator-tested."
    X, Y, g = _check(X, Y, sigma, unbiased)
    if X.shape[1] > _MAX_D:
        raise ValueError(f"the CUDA kernel takes d <= {_MAX_D}, got {X.shape[1]}")
    sxx = 2.0 * _kernel_sum_cuda(X, X, g, True)
    syy = 2.0 * _kernel_sum_cuda(Y, Y, g, True)
    return _finite_result(float(_combine(sxx, syy, _kernel_sum_cuda(X, Y, g, False), len(X), len(Y), unbiased)))


def benchmark(size: str = "default", repeat: int = 2) -> dict:
    "Unbiased RBF MMD^2 between two sample sets: NumPy chunks, @njit over BLAS chunks, torch.cdist."
    import torch
    m, d = {"small": (500, 10), "default": (5000, 50), "full": (10000, 50)}[size]
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((m, d)), rng.standard_normal((m, d)) + 0.1
    sigma = median_bandwidth(X, Y)
    g = 1.0 / (2 * sigma * sigma)

    def torch_run():  # the usual torch formulation: three distance matrices, exp, sums
        tx, ty = torch.from_numpy(X), torch.from_numpy(Y)
        kxx = torch.exp(-g * torch.cdist(tx, tx).square())
        kyy = torch.exp(-g * torch.cdist(ty, ty).square())
        kxy = torch.exp(-g * torch.cdist(tx, ty).square())
        return float((kxx.sum() - m) / (m * (m - 1)) + (kyy.sum() - m) / (m * (m - 1)) - 2 * kxy.mean())

    mmd2_rbf(X[:3], Y[:3], sigma)
    secs = {"numpy reference (chunked)": _best_time(lambda: mmd2_rbf_ref(X, Y, sigma), 1),
            "njit over BLAS chunks (upper triangles)": _best_time(lambda: mmd2_rbf(X, Y, sigma), repeat),
            "torch cdist + exp (CPU)": _best_time(torch_run, repeat)}
    # the public function a user calls: the GIM chapter's mmd_rbf (median-heuristic width, then the kernel), raced
    # with the kernel given the width
    from icml25nb.causal.gim import mmd_rbf
    best = _race({"njit": lambda: mmd2_rbf(X, Y, sigma), "public": lambda: mmd_rbf(X, Y)}, max(repeat, 1))
    secs["njit over BLAS chunks (upper triangles)"] = best["njit"]
    secs["public: icml25nb.causal.gim.mmd_rbf (median width + kernel)"] = best["public"]
    ours, theirs = mmd2_rbf(X, Y, sigma), torch_run()
    import numba
    return {"kernel": "mmd", "task": f"unbiased RBF MMD^2, {m} x {m} samples, d = {d}, float64; "
            f"{numba.get_num_threads()} numba thread(s)", "seconds": secs, "reference": "numpy reference (chunked)",
            "ratios": {"torch / njit": secs["torch cdist + exp (CPU)"]
                       / secs["njit over BLAS chunks (upper triangles)"],
                       "public mmd_rbf / njit": best["public"] / best["njit"]},
            "njit equals torch": bool(abs(ours - theirs) <= 1e-9 * max(1.0, abs(theirs)))}
