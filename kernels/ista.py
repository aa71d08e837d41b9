"""Batched ISTA: many (problem, beta) configurations of the l1/l2-regularised least squares at once.

Configuration ``b`` minimises ``1/2 |X_b a - y_b|^2 + beta2_b/2 |a|^2 + beta1_b |a|_1`` by proximal gradient steps
from ``a = 0``::

    r = X a - y;   g = X^T r + beta2 a;   a <- soft(a - lr g, lr beta1),   soft(z, k) = sign(z) max(|z| - k, 0)

(exact zeros, unlike subgradient descent). Along the way the kernels record, at the iteration counts in
``log_at`` (0 = the starting point), the training error ``mean(r^2)`` and, if ``a_star`` is given, the recovery
error ``|a - a_star| / |a_star|``: the two curves whose gap is grokking. Without ``a_star`` the recovery error
(the third output) is an array of NaN of the same shape, a placeholder that says "not measured" (callers, such as
the grokking chapter, read that array whether or not a_star was given).

Three implementations with one meaning: ``ista_batch_ref`` (NumPy, vectorised over configurations with einsum),
``ista_batch`` (``@njit``, parallel over configurations) and ``ista_batch_cuda`` (one block per configuration, the
iterate and the residual in shared memory, threads over coordinates). ``benchmark`` compares them with a batched
``torch.bmm`` loop.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, njit, prange

from icml25nb.core import check_array, check_int
from icml25nb.kernels._bench import best_time as _best_time, race as _race

__all__ = ["ista_batch_ref", "ista_batch", "ista_batch_cuda", "stable_lr", "benchmark"]


def stable_lr(X, beta2=0.0) -> np.ndarray:
    """Step-size limit 2 / lambda_max(X^T X + beta2 I) for each configuration of X (B, N, n) (or one matrix); an X
    whose X^T X overflows float64 is refused (a one-line ValueError naming X)."""
    X = check_array("X", X, ndim=(2, 3), min_size=1)
    if 0 in X.shape:
        raise ValueError(f"X must have no empty axis, got shape {X.shape}")
    single = X.ndim == 2
    X = X[None] if single else X
    b2 = _per_config("beta2", beta2, len(X))
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused below, not warned about
        grams = [x.T @ x for x in X]
    if not all(np.isfinite(g).all() for g in grams):  # X * 1e160: inf entries made eigvalsh a LinAlgError
        raise ValueError(f"X is too large: X^T X overflows float64 (max |X| = {float(np.abs(X).max()):g}); rescale X "
                         f"(and y)")
    lam = np.array([np.linalg.eigvalsh(g)[-1] for g in grams]) + b2
    if not np.isfinite(lam).all():
        raise ValueError("X and beta2 are too large: lambda_max(X^T X) + beta2 overflows float64; rescale them")
    with np.errstate(divide="ignore"):  # X = 0 and beta2 = 0: no limit (inf)
        out = 2.0 / lam
    return out[0] if single else out


#: the most multiply-adds one call may cost, (iters + 1) x B x N x n x 2 (about an hour on one core): a larger
#: request is refused up front, naming `iters`
MAX_WORK = 2 * 10**12


def _per_config(name: str, v, B: int, positive: bool = False) -> np.ndarray:
    "`v` (a scalar or one value per configuration) as a contiguous float64 (B,) array, finite and >= 0 (> 0)."
    a = check_array(name, v, ndim=(0, 1), contiguous=False)
    if a.ndim == 1 and a.shape != (B,):
        raise ValueError(f"{name} must be a scalar or have shape ({B},), one per configuration, got {a.shape}")
    a = np.ascontiguousarray(np.broadcast_to(a, (B,)))
    if (a < 0).any() or (positive and (a == 0).any()):
        raise ValueError(f"{name} must be {'positive' if positive else 'non-negative'}, got min {a.min()}")
    return a


def _check(X, y, beta1, beta2, lr, iters, a_star, log_at):
    X = check_array("X", X, ndim=3)
    if 0 in X.shape:
        raise ValueError(f"X must have shape (configurations, N, n), got {X.shape}")
    B, N, n = X.shape
    y = check_array("y", y, shape=(B, N))
    beta1, beta2, lr = _per_config("beta1", beta1, B), _per_config("beta2", beta2, B), _per_config("lr", lr, B, True)
    iters = check_int("iters", iters, 0)
    if (iters + 1) * 2.0 * B * N * n > MAX_WORK:
        raise ValueError(f"iters is too large: {iters} iterations of {B} x {N} x {n} cost more than {MAX_WORK:.0e} "
                         f"multiply-adds")
    has_star = a_star is not None
    a_star = np.zeros((B, n)) if a_star is None else check_array("a_star", a_star, shape=(B, n))
    if has_star and not (np.abs(a_star).max(axis=1) > 0).all():
        raise ValueError("a_star must have a non-zero row per configuration (the recovery error divides by its norm)")
    log_at = np.unique(check_array("log_at", [iters] if log_at is None else log_at, ndim=(0, 1), dtype=np.int64,
                                   minimum=0, maximum=iters))
    return X, y, beta1, beta2, lr, iters, a_star, has_star, log_at


def _check_converged(A, train, lr):
    "The outputs, or a ValueError naming lr: iterates that overflowed (a step above the stability limit diverges)."
    if not (np.isfinite(A).all() and np.isfinite(train).all()):
        raise ValueError("lr is too large: the iterates diverged (keep lr below stable_lr(X, beta2) = "
                         "2 / lambda_max(X^T X + beta2 I))")


def ista_batch_ref(X, y, beta1, beta2=0.0, lr=None, iters: int = 1000, a_star=None, log_at=None):
    """NumPy reference: (final iterates (B, n), training error (B, L), recovery error (B, L)) at `log_at`; the
    recovery error is all NaN (not measured) when `a_star` is None.

    `lr` defaults to half the stability limit, 1 / lambda_max(X^T X + beta2 I), per configuration."""
    lr = stable_lr(X, beta2) / 2 if lr is None else lr
    X, y, beta1, beta2, lr, iters, a_star, has_star, log_at = _check(X, y, beta1, beta2, lr, iters, a_star, log_at)
    B, N, n = X.shape
    a = np.zeros((B, n))
    train = np.empty((B, len(log_at)))
    test = np.full((B, len(log_at)), np.nan)
    nrm = np.linalg.norm(a_star, axis=1)
    k = 0
    for t in range(iters + 1):
        r = np.einsum("bij,bj->bi", X, a) - y
        if k < len(log_at) and log_at[k] == t:
            train[:, k] = (r * r).mean(axis=1)
            if has_star:
                test[:, k] = np.linalg.norm(a - a_star, axis=1) / nrm
            k += 1
        if t == iters:
            break
        z = a - lr[:, None] * (np.einsum("bij,bi->bj", X, r) + beta2[:, None] * a)
        a = np.sign(z) * np.maximum(np.abs(z) - (lr * beta1)[:, None], 0.0)
    _check_converged(a, train, lr)
    return a, train, test


def _build_steps(jit):
    "The residual of one row and the proximal update of one coordinate, compiled with `jit` (CPU or CUDA)."

    @jit
    def residual(X, y, b, a, i):
        s = 0.0
        for j in range(X.shape[2]):
            s += X[b, i, j] * a[j]
        return s - y[b, i]

    @jit
    def prox_update(X, b, r, a, j, step, thr, beta2):
        g = beta2 * a[j]
        for i in range(X.shape[1]):
            g += X[b, i, j] * r[i]
        z = a[j] - step * g
        if z > thr:
            return z - thr
        if z < -thr:
            return z + thr
        return 0.0

    return residual, prox_update


_residual, _prox_update = _build_steps(njit(inline="always"))
_cuda_residual, _cuda_prox_update = _build_steps(lambda f: cuda.jit(device=True)(f))


@njit(parallel=True, cache=True, fastmath=False)
def _ista_njit(X, y, beta1, beta2, lr, iters, a_star, has_star, log_at, A, train, test):
    B, N, n = X.shape
    for b in prange(B):
        a = np.zeros(n)
        r = np.empty(N)
        nrm = 0.0
        for j in range(n):
            nrm += a_star[b, j] * a_star[b, j]
        nrm = math.sqrt(nrm)
        k = 0
        for t in range(iters + 1):
            for i in range(N):
                r[i] = _residual(X, y, b, a, i)
            if k < log_at.size and log_at[k] == t:
                s = 0.0
                for i in range(N):
                    s += r[i] * r[i]
                train[b, k] = s / N
                if has_star:
                    s = 0.0
                    for j in range(n):
                        d = a[j] - a_star[b, j]
                        s += d * d
                    test[b, k] = math.sqrt(s) / nrm
                k += 1
            if t == iters:
                break
            for j in range(n):  # r holds the residual of the old iterate, so a[j] can be overwritten in place
                a[j] = _prox_update(X, b, r, a, j, lr[b], lr[b] * beta1[b], beta2[b])
        for j in range(n):
            A[b, j] = a[j]


def ista_batch(X, y, beta1, beta2=0.0, lr=None, iters: int = 1000, a_star=None, log_at=None):
    "CPU kernel (parallel over configurations) for `ista_batch_ref` (recovery error all NaN when `a_star` is None)."
    lr = stable_lr(X, beta2) / 2 if lr is None else lr
    X, y, beta1, beta2, lr, iters, a_star, has_star, log_at = _check(X, y, beta1, beta2, lr, iters, a_star, log_at)
    B, N, n = X.shape
    A = np.empty((B, n))
    train = np.empty((B, len(log_at)))
    test = np.full((B, len(log_at)), np.nan)
    _ista_njit(X, y, beta1, beta2, lr, iters, a_star, has_star, log_at, A, train, test)
    _check_converged(A, train, lr)
    return A, train, test


_MAX_N, _MAX_ROWS, _THREADS = 512, 256, 128


@cuda.jit
def _ista_cuda_kernel(X, y, beta1, beta2, lr, iters, a_star, has_star, log_at, A, train, test):
    b = cuda.blockIdx.x
    t0 = cuda.threadIdx.x
    N, n = X.shape[1], X.shape[2]
    a = cuda.shared.array(_MAX_N, dtype=np.float64)
    r = cuda.shared.array(_MAX_ROWS, dtype=np.float64)
    for j in range(t0, n, _THREADS):
        a[j] = 0.0
    cuda.syncthreads()
    k = 0
    for t in range(iters + 1):
        for i in range(t0, N, _THREADS):
            r[i] = _cuda_residual(X, y, b, a, i)
        cuda.syncthreads()
        if k < log_at.size and log_at[k] == t:
            if t0 == 0:
                s = 0.0
                for i in range(N):
                    s += r[i] * r[i]
                train[b, k] = s / N
                if has_star:
                    s, nrm = 0.0, 0.0
                    for j in range(n):
                        d = a[j] - a_star[b, j]
                        s += d * d
                        nrm += a_star[b, j] * a_star[b, j]
                    test[b, k] = math.sqrt(s) / math.sqrt(nrm)
            k += 1
        cuda.syncthreads()
        if t == iters:
            break
        for j in range(t0, n, _THREADS):  # each thread owns its coordinates: reads of a[j] and writes do not race
            a[j] = _cuda_prox_update(X, b, r, a, j, lr[b], lr[b] * beta1[b], beta2[b])
        cuda.syncthreads()
    for j in range(t0, n, _THREADS):
        A[b, j] = a[j]


def ista_batch_cuda(X, y, beta1, beta2=0.0, lr=None, iters: int = 1000, a_star=None, log_at=None):
    "CUDA kernel (one block per configuration, n <= 512, N <= 256) for `ista_batch_ref`; simulator-tested."
    lr = stable_lr(X, beta2) / 2 if lr is None else lr
    X, y, beta1, beta2, lr, iters, a_star, has_star, log_at = _check(X, y, beta1, beta2, lr, iters, a_star, log_at)
    B, N, n = X.shape
    if n > _MAX_N or N > _MAX_ROWS:
        raise ValueError(f"the CUDA kernel takes n <= {_MAX_N} and N <= {_MAX_ROWS}")
    A = cuda.device_array((B, n))
    train = cuda.to_device(np.empty((B, len(log_at))))
    test = cuda.to_device(np.full((B, len(log_at)), np.nan))
    _ista_cuda_kernel[B, _THREADS](cuda.to_device(X), cuda.to_device(y), cuda.to_device(beta1), cuda.to_device(beta2),
                                   cuda.to_device(lr), iters, cuda.to_device(a_star), has_star,
                                   cuda.to_device(log_at), A, train, test)
    A, train, test = A.copy_to_host(), train.copy_to_host(), test.copy_to_host()
    _check_converged(A, train, lr)
    return A, train, test


def benchmark(size: str = "default", repeat: int = 2) -> dict:
    "Batched ISTA: NumPy einsum reference, @njit, and a torch.bmm loop (CPU), same problems and steps."
    import torch
    B, N, n, iters = {"small": (32, 40, 100, 500), "default": (256, 80, 200, 2_000),
                      "full": (1024, 80, 200, 10_000)}[size]
    rng = np.random.default_rng(0)
    X = rng.standard_normal((B, N, n)) / np.sqrt(n)
    a_star = np.zeros((B, n))
    for b in range(B):
        a_star[b, rng.choice(n, 5, replace=False)] = rng.standard_normal(5)
    y = np.einsum("bij,bj->bi", X, a_star)
    beta1 = np.geomspace(1e-4, 1e-2, B)
    lr = stable_lr(X) / 2
    ista_batch(X[:2], y[:2], beta1[:2], 0.0, lr[:2], 2)

    def torch_run():
        Xt, yt = torch.from_numpy(X), torch.from_numpy(y)[:, :, None]
        lt, kt = torch.from_numpy(lr)[:, None, None], torch.from_numpy(lr * beta1)[:, None, None]
        a = torch.zeros(B, n, 1, dtype=torch.float64)
        XT = Xt.transpose(1, 2)
        for _ in range(iters):
            z = a - lt * torch.bmm(XT, torch.bmm(Xt, a) - yt)
            a = torch.sign(z) * torch.clamp(z.abs() - kt, min=0.0)
        return a[:, :, 0].numpy()

    secs = {"numpy einsum reference": _best_time(lambda: ista_batch_ref(X, y, beta1, 0.0, lr, iters), 1),
            "njit, parallel over configurations": _best_time(lambda: ista_batch(X, y, beta1, 0.0, lr, iters), repeat),
            "torch.bmm loop (CPU)": _best_time(torch_run, repeat)}
    same = bool(np.allclose(ista_batch(X, y, beta1, 0.0, lr, iters)[0], torch_run(), atol=1e-9))
    # the public function a user calls: the grokking chapter's `ista` (one configuration per call, as the chapter
    # runs it) against the kernel on the same single configuration, raced
    from icml25nb.optim.grokking import ista
    X0, y0, l0 = X[0], y[0], float(lr[0])
    best = _race({"njit": lambda: ista_batch(X0[None], y0[None], beta1[0], 0.0, l0, iters),
                  "public": lambda: ista(X0, y0, float(beta1[0]), 0.0, l0, iters)}, max(repeat, 1))
    secs["njit, 1 configuration"] = best["njit"]
    secs["public: icml25nb.optim.grokking.ista, 1 configuration"] = best["public"]
    import numba
    return {"kernel": "ista", "task": f"{B} configurations, N={N}, n={n}, {iters} iterations (float64); "
            f"{numba.get_num_threads()} numba thread(s)", "seconds": secs, "reference": "numpy einsum reference",
            "ratios": {"torch.bmm / njit": secs["torch.bmm loop (CPU)"] / secs["njit, parallel over configurations"],
                       "public ista / njit, 1 configuration": best["public"] / best["njit"]},
            "njit equals torch": same}
