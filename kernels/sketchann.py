"""Hot loop of the adaptive-sketch chapter: sketched nearest-neighbour search over many copies of a JL sketch.

A copy ``j`` of the structure holds a Gaussian sketch ``S[j]`` (``m x d``) and the sketched data points
``SP[j] = P S[j]^T`` (``n x m``). A query ``q`` sent to copy ``j`` is answered by the point whose sketched distance
is least: ``argmin_i ||S[j] q - SP[j, i]||^2``. Per query the robust structure asks a subsample of its ``k``
copies, so the unit of work is a batch of queries ``Q`` (``b x d``) and, per query, the copies it asks
(``copies``, ``b x r`` indices into the ``k`` copies). ``sketch_argmin(S, SP, Q, copies)`` returns, per (query,
copy) pair, the index of the nearest sketched point (the lowest index among exact ties) and its sketched squared
distance.

Cost per pair: ``m d`` for sketching the query and ``n m`` for the distances. The NumPy reference gathers the asked
sketches and uses ``einsum`` (BLAS-like order of summation); the ``@njit`` kernel loops over the pairs (``prange``)
with the sums in index order; the ``@cuda.jit`` version runs one thread per (query, copy, sketch row) to sketch the
query, then one thread per (query, copy) for the distances and the argmin, with the same order of summation as the
``@njit`` kernel (so the two agree bit for bit; the reference agrees to rounding).
"""
from __future__ import annotations

import numpy as np
from numba import cuda, njit, prange

from icml25nb.core import ArgumentTypeError, check_array, check_choice
from icml25nb.kernels._bench import best_time as _best_time, race as _race

__all__ = ["sketch_argmin_ref", "sketch_argmin", "sketch_argmin_cuda", "benchmark"]


def _check_shapes(S, SP, Q, copies):
    "Shapes, and copy indices in range: what the compiled loops need to stay inside the arrays."
    if S.ndim != 3 or S.shape[1] < 1 or S.shape[2] < 1:
        raise ValueError(f"S must be (k, m, d) sketch matrices, got shape {S.shape}")
    k, m, d = S.shape
    if SP.ndim != 3 or SP.shape[0] != k or SP.shape[2] != m or SP.shape[1] < 1:
        raise ValueError(f"SP must be (k, n, m) = ({k}, n, {m}) sketched points, got shape {SP.shape}")
    if Q.ndim != 2 or Q.shape[1] != d:
        raise ValueError(f"Q must be (b, {d}) queries, got shape {Q.shape}")
    if copies.ndim != 2 or copies.shape[0] != Q.shape[0]:
        raise ValueError(f"copies must be (b, r) with b = {Q.shape[0]} queries, got shape {copies.shape}")
    if copies.size and (copies.min() < 0 or copies.max() >= k):
        raise ValueError(f"copies must hold indices in [0, {k})")


def _check(S, SP, Q, copies):
    S, SP, Q = check_array("S", S), check_array("SP", SP), check_array("Q", Q)
    raw = None if isinstance(copies, (str, bytes)) or copies is None else np.asarray(copies)
    if raw is None or raw.dtype.kind not in "iu":
        raise ArgumentTypeError(f"copies must hold integer copy indices, got "
                                f"{type(copies).__name__ if raw is None else 'dtype ' + str(raw.dtype)}")
    copies = check_array("copies", raw, dtype=np.int64)
    _check_shapes(S, SP, Q, copies)
    return S, SP, Q, copies


def _check_light(S, SP, Q, copies):
    """`check=False`: arrays already float64 / int64 and C-contiguous pass after the shape and index checks alone (no
    scan of the k sketches for NaN, O(b r)); anything else gets the full check."""
    nd = np.ndarray
    if (type(S) is nd and type(SP) is nd and type(Q) is nd and type(copies) is nd and S.dtype == np.float64
            and SP.dtype == np.float64 and Q.dtype == np.float64 and copies.dtype == np.int64
            and S.flags.c_contiguous and SP.flags.c_contiguous and Q.flags.c_contiguous and copies.flags.c_contiguous):
        _check_shapes(S, SP, Q, copies)
        return S, SP, Q, copies
    return _check(S, SP, Q, copies)


def sketch_argmin_ref(S, SP, Q, copies) -> tuple[np.ndarray, np.ndarray]:
    "NumPy reference: per (query, asked copy), the nearest point in that copy's sketch and its sketched squared distance."
    S, SP, Q, copies = _check(S, SP, Q, copies)
    SQ = np.einsum("brmd,bd->brm", S[copies], Q)  # S[j] q for every asked copy j
    D = ((SQ[:, :, None, :] - SP[copies]) ** 2).sum(-1)  # (b, r, n)
    idx = D.argmin(-1)
    return idx.astype(np.int64), np.take_along_axis(D, idx[..., None], -1)[..., 0]


@njit(cache=True, parallel=True, nogil=True)
def _sketch_argmin_njit(S, SP, Q, copies, idx, dist):
    b, r = copies.shape
    m, d = S.shape[1], S.shape[2]
    n = SP.shape[1]
    for t in prange(b * r):
        a = t // r
        j = copies[a, t % r]
        sq = np.empty(m)
        for l in range(m):
            s = 0.0
            for e in range(d):
                s += S[j, l, e] * Q[a, e]
            sq[l] = s
        best, bi = np.inf, 0
        for i in range(n):
            s = 0.0
            for l in range(m):
                z = sq[l] - SP[j, i, l]
                s += z * z
            if s < best:
                best, bi = s, i
        idx[a, t % r] = bi
        dist[a, t % r] = best


def sketch_argmin(S, SP, Q, copies, check: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """CPU kernel (@njit, parallel over the (query, copy) pairs) for `sketch_argmin_ref`. `check=False` skips the scan
    for NaN and inf (for a caller that built finite contiguous float64/int64 arrays itself: the chapter's structures
    answer one query per call, where scanning all k sketches would cost more than the search); shapes, dtypes and
    copy indices are checked either way, so the compiled loops never read outside the arrays."""
    S, SP, Q, copies = _check(S, SP, Q, copies) if check else _check_light(S, SP, Q, copies)
    idx = np.zeros(copies.shape, dtype=np.int64)
    dist = np.zeros(copies.shape)
    if copies.size:
        _sketch_argmin_njit(S, SP, Q, copies, idx, dist)
    return idx, dist


@cuda.jit
def _sketch_queries_cuda(S, Q, copies, SQ):
    "One thread per (query, copy, sketch row): SQ[a, c, l] = S[copies[a, c], l] . Q[a] in index order."
    t = cuda.grid(1)
    b, r = copies.shape
    m, d = S.shape[1], S.shape[2]
    if t < b * r * m:
        l = t % m
        c = (t // m) % r
        a = t // (m * r)
        j = copies[a, c]
        s = 0.0
        for e in range(d):
            s += S[j, l, e] * Q[a, e]
        SQ[a, c, l] = s


@cuda.jit
def _argmin_cuda(SP, SQ, copies, idx, dist):
    "One thread per (query, copy): the nearest sketched point, first index among ties."
    t = cuda.grid(1)
    b, r = copies.shape
    n, m = SP.shape[1], SP.shape[2]
    if t < b * r:
        a = t // r
        c = t % r
        j = copies[a, c]
        best = np.inf
        bi = 0
        for i in range(n):
            s = 0.0
            for l in range(m):
                z = SQ[a, c, l] - SP[j, i, l]
                s += z * z
            if s < best:
                best = s
                bi = i
        idx[a, c] = bi
        dist[a, c] = best


_THREADS = 128


def sketch_argmin_cuda(S, SP, Q, copies) -> tuple[np.ndarray, np.ndarray]:
    "CUDA kernels (sketch the queries, then a thread per (query, copy) pair) for `sketch_argmin_ref`; simulator-tested."
    S, SP, Q, copies = _check(S, SP, Q, copies)
    b, r = copies.shape
    m = S.shape[1]
    if copies.size == 0:
        return np.zeros(copies.shape, dtype=np.int64), np.zeros(copies.shape)
    dS, dSP, dQ, dc = (cuda.to_device(x) for x in (S, SP, Q, copies))
    SQ = cuda.device_array((b, r, m), dtype=np.float64)
    idx = cuda.device_array((b, r), dtype=np.int64)
    dist = cuda.device_array((b, r), dtype=np.float64)
    _sketch_queries_cuda[(b * r * m + _THREADS - 1) // _THREADS, _THREADS](dS, dQ, dc, SQ)
    _argmin_cuda[(b * r + _THREADS - 1) // _THREADS, _THREADS](dSP, SQ, dc, idx, dist)
    return idx.copy_to_host(), dist.copy_to_host()


# --- Benchmark -------------------------------------------------------------------------------------------------------

def benchmark(size: str = "default", repeat: int = 3) -> dict:
    """A batch of b queries, each asking r of k sketch copies (m x d) over n points: NumPy reference (gather + einsum),
    the same through one NumPy matmul per copy and argmin, @njit, and scipy's cKDTree on the unsketched points (the
    exact nearest neighbour a user would otherwise compute, tree built once, outside the timing). Best of the repeats
    after a warm-up; the njit kernel and its peers alternate."""
    from scipy.spatial import cKDTree
    size = check_choice("size", size, ("small", "default", "full"))
    k, m, d, n, b, r = {"small": (40, 8, 64, 100, 50, 8), "default": (200, 16, 256, 500, 200, 20),
                        "full": (400, 16, 512, 2000, 500, 40)}[size]
    rng = np.random.default_rng(0)
    P = rng.standard_normal((n, d))
    S = rng.standard_normal((k, m, d)) / np.sqrt(m)
    SP = np.einsum("jmd,nd->jnm", S, P)
    Q = P[rng.integers(0, n, b)] + 0.3 * rng.standard_normal((b, d))
    copies = np.stack([rng.choice(k, r, replace=False) for _ in range(b)])
    tree = cKDTree(P)

    def matmul_argmin():  # per asked copy: one matmul for the sketched query, distances by the expansion, argmin
        out = np.empty(copies.shape, dtype=np.int64)
        SPn = (SP ** 2).sum(-1)
        for a in range(b):
            SQ = S[copies[a]] @ Q[a]  # (r, m)
            D = SPn[copies[a]] - 2 * np.einsum("rnm,rm->rn", SP[copies[a]], SQ)
            out[a] = D.argmin(-1)
        return out

    names = {"ref": "numpy reference (gather + einsum)", "njit": "njit sketch_argmin",
             "mm": "numpy matmul + argmin per query", "kd": "scipy cKDTree on unsketched points (exact NN)"}
    secs = {names["ref"]: _best_time(lambda: sketch_argmin_ref(S, SP, Q, copies), repeat)}
    from icml25nb.algorithms.adaptive_sketch import DPRobustANN  # the public structure: one query per call
    ann = DPRobustANN(P, m, k, eps=1.0, sample_frac=r / k, seed=0, selection="first")
    ann.r = r
    names["ann"] = "adaptive_sketch.DPRobustANN.candidates, one call per query"
    best = _race({"njit": lambda: sketch_argmin(S, SP, Q, copies), "mm": matmul_argmin,
                  "kd": lambda: tree.query(Q, k=1), "ann": lambda: [ann.candidates(q) for q in Q]}, max(repeat, 3))
    for key in ("njit", "mm", "kd", "ann"):
        secs[names[key]] = best[key]
    ref_idx, ref_d = sketch_argmin_ref(S, SP, Q, copies)
    got_idx, got_d = sketch_argmin(S, SP, Q, copies)
    import numba
    return {"kernel": "sketchann",
            "task": f"{b} queries x {r} of k={k} JL sketch copies (m={m}, d={d}) over n={n} points: sketched distances "
                    f"and argmin ({b * r} (query, copy) pairs); {numba.get_num_threads()} numba thread(s)",
            "seconds": secs, "reference": names["ref"],
            "ratios": {"reference / njit": secs[names["ref"]] / secs[names["njit"]],
                       "numpy matmul + argmin / njit": secs[names["mm"]] / secs[names["njit"]],
                       "cKDTree exact NN (unsketched) / njit": secs[names["kd"]] / secs[names["njit"]],
                       "DPRobustANN.candidates per query / njit batch": secs[names["ann"]] / secs[names["njit"]]},
            "njit argmins equal the reference": bool(np.array_equal(ref_idx, got_idx)),
            "matmul argmins equal the reference": bool(np.array_equal(ref_idx, matmul_argmin())),
            "njit distances vs the reference, max relative difference":
                float(np.max(np.abs(got_d - ref_d) / np.maximum(ref_d, 1e-300)))}
