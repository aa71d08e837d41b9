"""k-center greedy (farthest-point) selection: the distance updates of coreset selection's classic baseline.

Given points ``X`` (n, d), a first centre and a budget ``b``, the greedy rule (Gonzalez 1985; Sener & Savarese 2018's
coreset baseline) repeats ``b - 1`` times::

    m_i  = min over chosen centres c of ||x_i - x_c||^2      (kept up to date after each pick)
    pick   argmax_i m_i over the points not yet chosen        (the first index among equal maxima)

so every step is one pass of distance updates over all ``n`` points (``O(n d)``) and an argmax. The points already
chosen are marked with ``m_i = -1`` (as in DeepCore's ``k_center_greedy``), so that duplicates of a centre, whose
distance is 0, can still be picked once every other point is covered, and no point is picked twice.

Three implementations with one meaning:

- ``kcenter_greedy_ref``: NumPy, one broadcast ``((X - x_p) ** 2).sum(1)`` and ``np.minimum`` per step.
- ``kcenter_greedy``: ``@njit(parallel=True)``, the whole loop compiled; each step's update runs over ``prange``
  (each thread owns its points' ``m_i``), the argmax is a serial pass.
- ``kcenter_greedy_cuda``: ``@cuda.jit``; three kernels per step and no host round trip inside the loop: a
  block-wise argmax in shared memory, a one-block final argmax that writes the pick to device memory, and the
  update (one thread per point) that reads it.

Squared distances are summed over the coordinates in order in the ``@njit`` and CUDA kernels; NumPy's reduction may
sum in another order, so the three agree on the picks (unless two candidates are within rounding of each other) and
on the distances to rounding (``rtol 1e-12``). All return ``(order, mins)``: the ``budget`` chosen indices in the
order chosen, and every point's squared distance to its nearest chosen centre (0 for the centres).

``benchmark`` compares them with what a user would otherwise write: the same loop with scikit-learn's
``pairwise_distances`` or with ``torch.cdist`` for each step's distances, and the chapter's public
``supervised.subset.kcenter_greedy_select``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, njit, prange

from icml25nb.core import check_choice, check_int
from icml25nb.kernels._bench import race as _race

__all__ = ["kcenter_greedy_ref", "kcenter_greedy", "kcenter_greedy_cuda", "benchmark"]

_TPB = 256  # threads per block of the CUDA argmax (shared arrays are sized at compile time)


def _check(X, budget, first):
    if isinstance(X, (str, bytes)) or X is None:
        raise TypeError(f"X must be a 2-D array of points (n, d), got {type(X).__name__}")
    try:
        X = np.asarray(X)
    except (ValueError, TypeError):
        raise TypeError("X must be a rectangular 2-D array of points (n, d)") from None
    if X.dtype.kind not in "biuf":
        raise TypeError(f"X must be a 2-D array of real numbers, got dtype {X.dtype}")
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X must be 2-D (n, d) with n >= 1 and d >= 1, got shape {X.shape}")
    X = np.ascontiguousarray(X, dtype=np.float64)
    if not np.isfinite(X).all():
        raise ValueError("X must be finite (no NaN or inf)")
    n = X.shape[0]
    budget = check_int("budget", budget, 1, n)
    first = check_int("first", first, 0, n - 1)
    return X, budget, first


def _finish(order, mins):
    mins = np.where(mins < 0, 0.0, mins)  # the chosen centres: distance 0 to themselves
    return order, mins


def kcenter_greedy_ref(X, budget: int, first: int = 0) -> tuple[np.ndarray, np.ndarray]:
    "NumPy reference: `budget` k-center greedy picks from `X` starting at `first`; returns (order, squared mins)."
    X, budget, first = _check(X, budget, first)
    mins = np.full(len(X), np.inf)
    order = np.empty(budget, np.int64)
    p = first
    for step in range(budget):
        if step:
            p = int(np.argmax(mins))
        order[step] = p
        mins[p] = -1.0
        free = mins >= 0
        d2 = ((X - X[p]) ** 2).sum(1)
        mins = np.where(free, np.minimum(mins, d2), mins)
    return _finish(order, mins)


@njit(cache=True, parallel=True)
def _greedy_njit(X, budget, first, order, mins):
    n, d = X.shape
    for i in range(n):
        mins[i] = np.inf
    p = first
    for step in range(budget):
        if step > 0:
            best, p = -2.0, 0
            for i in range(n):
                if mins[i] > best:
                    best, p = mins[i], i
        order[step] = p
        mins[p] = -1.0
        for i in prange(n):
            m = mins[i]
            if m >= 0.0:
                s = 0.0
                for k in range(d):
                    t = X[i, k] - X[p, k]
                    s += t * t
                if s < m:
                    mins[i] = s


def kcenter_greedy(X, budget: int, first: int = 0) -> tuple[np.ndarray, np.ndarray]:
    "@njit kernel: `budget` k-center greedy picks from `X` starting at `first`; returns (order, squared mins)."
    X, budget, first = _check(X, budget, first)
    order, mins = np.empty(budget, np.int64), np.empty(len(X))
    _greedy_njit(X, budget, first, order, mins)
    return _finish(order, mins)


@cuda.jit(device=True)
def _tree_argmax(sval, sidx, t):
    "Shared-memory tree reduction of (value, index) pairs into slot 0: the largest value, the smallest index on ties."
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if t < s:
            v, j = sval[t + s], sidx[t + s]
            if v > sval[t] or (v == sval[t] and j >= 0 and (sidx[t] < 0 or j < sidx[t])):
                sval[t] = v
                sidx[t] = j
        cuda.syncthreads()
        s //= 2


@cuda.jit
def _argmax_blocks(mins, bval, bidx):
    "Each block: the largest m_i of its points (the first index among equal values) into bval/bidx[block]."
    sval = cuda.shared.array(_TPB, np.float64)
    sidx = cuda.shared.array(_TPB, np.int64)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    if i < mins.shape[0]:
        sval[t] = mins[i]
        sidx[t] = i
    else:
        sval[t] = -2.0
        sidx[t] = -1
    _tree_argmax(sval, sidx, t)
    if t == 0:
        bval[cuda.blockIdx.x] = sval[0]
        bidx[cuda.blockIdx.x] = sidx[0]


@cuda.jit
def _argmax_final(bval, bidx, pick, order, step):
    "One block: the argmax over the block results; writes the pick to pick[0] and order[step]."
    sval = cuda.shared.array(_TPB, np.float64)
    sidx = cuda.shared.array(_TPB, np.int64)
    t = cuda.threadIdx.x
    best, bi = -2.0, -1
    for b in range(t, bval.shape[0], cuda.blockDim.x):  # blocks in increasing order: a strict > keeps the first
        if bval[b] > best:
            best, bi = bval[b], bidx[b]
    sval[t] = best
    sidx[t] = bi
    _tree_argmax(sval, sidx, t)
    if t == 0:
        pick[0] = sidx[0]
        order[step] = sidx[0]


@cuda.jit
def _update(X, pick, mins):
    "One thread per point: mark the pick as chosen, lower every free point's m_i by its distance to the pick."
    i = cuda.grid(1)
    if i < X.shape[0]:
        p = pick[0]
        if i == p:
            mins[i] = -1.0
        else:
            m = mins[i]
            if m >= 0.0:
                s = 0.0
                for k in range(X.shape[1]):
                    t = X[i, k] - X[p, k]
                    s += t * t
                if s < m:
                    mins[i] = s


def kcenter_greedy_cuda(X, budget: int, first: int = 0) -> tuple[np.ndarray, np.ndarray]:
    "@cuda.jit kernels: `budget` k-center greedy picks from `X` starting at `first`; returns (order, squared mins)."
    X, budget, first = _check(X, budget, first)
    n = len(X)
    blocks = math.ceil(n / _TPB)
    d_X = cuda.to_device(X)
    d_mins = cuda.to_device(np.full(n, np.inf))
    order = np.zeros(budget, np.int64)
    order[0] = first
    d_order = cuda.to_device(order)
    d_pick = cuda.to_device(np.array([first], np.int64))
    d_bval, d_bidx = cuda.device_array(blocks, np.float64), cuda.device_array(blocks, np.int64)
    for step in range(budget):
        if step:
            _argmax_blocks[blocks, _TPB](d_mins, d_bval, d_bidx)
            _argmax_final[1, _TPB](d_bval, d_bidx, d_pick, d_order, step)
        _update[blocks, _TPB](d_X, d_pick, d_mins)
    return _finish(d_order.copy_to_host(), d_mins.copy_to_host())


def _clustered_points(n: int, d: int, seed: int) -> np.ndarray:
    "Points around 20 Gaussian clusters of different spreads (the shape of embedded images)."
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, d)) * 3
    lab = rng.integers(0, 20, n)
    return centres[lab] + rng.normal(size=(n, d)) * rng.uniform(0.3, 1.5, 20)[lab, None]


def benchmark(size: str = "default", repeat: int = 3) -> dict:
    """k-center greedy of `budget` picks from n points: NumPy reference, @njit, the same loop over scikit-learn's
    `pairwise_distances` and over `torch.cdist`, and the chapter's public class-balanced selection."""
    size = check_choice("size", size, ("small", "default", "full"))
    repeat = check_int("repeat", repeat, 1)
    import numba
    import torch
    from sklearn.metrics import pairwise_distances

    from icml25nb.supervised.subset import kcenter_greedy_select
    n, d, budget = {"small": (2000, 64, 50), "default": (20000, 64, 200), "full": (100000, 128, 500)}[size]
    X = _clustered_points(n, d, seed=0)
    Xt = torch.from_numpy(X)

    def sklearn_run():
        mins = np.full(n, np.inf)
        order, p = [0], 0
        for _ in range(budget - 1):
            mins = np.minimum(mins, pairwise_distances(X, X[p:p + 1]).ravel())
            mins[order] = -1
            p = int(np.argmax(mins))
            order.append(p)
        return np.array(order)

    def torch_run():
        mins = torch.full((n,), float("inf"), dtype=torch.float64)
        order, p = [0], 0
        for _ in range(budget - 1):
            mins = torch.minimum(mins, torch.cdist(Xt, Xt[p:p + 1]).ravel())
            mins[order] = -1
            p = int(torch.argmax(mins))
            order.append(p)
        return np.array(order)

    kcenter_greedy(X[:5], 2)  # compile
    y = np.arange(n) % 10  # ten classes of n / 10 points: the chapter's class-balanced use
    rate = budget / n
    secs = _race({"numpy reference": lambda: kcenter_greedy_ref(X, budget),
                  "njit (prange updates)": lambda: kcenter_greedy(X, budget),
                  "sklearn pairwise_distances per step": sklearn_run,
                  "torch.cdist per step": torch_run}, repeat)
    secs["subset.kcenter_greedy_select (10 classes, same budget)"] = _race(
        {"k": lambda: kcenter_greedy_select([X], y, rate, seed=0)}, repeat)["k"]
    ours = kcenter_greedy(X, budget)[0]
    same = (np.array_equal(ours, kcenter_greedy_ref(X, budget)[0]) and np.array_equal(ours, sklearn_run())
            and np.array_equal(ours, torch_run()))
    nj = secs["njit (prange updates)"]
    return {"kernel": "kcenter", "task": f"k-center greedy, {budget} picks from {n} points in d = {d}; "
            f"{numba.get_num_threads()} numba thread(s), {torch.get_num_threads()} torch thread(s)",
            "seconds": secs, "reference": "numpy reference",
            "ratios": {"numpy / njit": secs["numpy reference"] / nj,
                       "sklearn / njit": secs["sklearn pairwise_distances per step"] / nj,
                       "torch / njit": secs["torch.cdist per step"] / nj},
            "same picks (numpy, njit, sklearn, torch)": bool(same)}
