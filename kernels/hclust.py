"""Hot loops of learning-augmented hierarchical clustering: triplet-oracle vote counting and Dasgupta's cost.

**Votes.** A splitting oracle answers a triplet ``(u, v, w)`` with the vertex that splits away first in a reference
tree, that is the one not in the triplet's deepest pair. With ``S[a, b]`` the number of leaves under the lowest
common ancestor of ``a`` and ``b`` in a binary reference tree, the true answer is the vertex ``x`` whose two pairs
are not the strict minimum of ``S`` over the triplet's three pairs. The oracle errs with probability ``p``: the
answer is then one of the two other vertices, with equal probability. Noise is **persistent**: the error and the
wrong answer are a function of the unordered triplet and the seed alone (a counter-based hash, ``icml25nb.kernels.rng``,
stream ``a n^2 + b n + c`` for ``a < b < c``), so asking the same triplet again returns the same answer.
``count_votes(S, pairs, witnesses, p, seed)`` returns, for each pair ``(u, v)``, how many of its witnesses ``w``
the oracle names as splitting away from ``u`` and ``v``.

**Cost.** Dasgupta's cost of a tree given as a scipy linkage ``Z`` is the sum over merges of
``(|A| + |B|) * W(A, B)``, where ``W(A, B)`` is the total weight between the merged clusters. With the leaves in
dendrogram order every cluster is a contiguous range, so ``W(A, B)`` is the sum of a contiguous block of the
permuted weight matrix; ``merge_costs`` returns one term per merge.

Reference (NumPy), ``@njit`` (parallel over pairs / merges) and ``@cuda.jit`` (a thread per pair; a block per
merge with a shared-memory reduction) with one meaning.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, njit, prange

from icml25nb.kernels import rng as R
from icml25nb.kernels._bench import best_time as _best_time
from icml25nb.kernels._cuda import block_sum

__all__ = ["oracle_answer_ref", "count_votes_ref", "count_votes", "count_votes_cuda", "leaf_ranges",
           "merge_costs_ref", "merge_costs", "merge_costs_cuda", "benchmark"]


def _check_votes(S, pairs, witnesses, p, seed):
    S = np.ascontiguousarray(S, dtype=np.int64)
    n = S.shape[0]
    if S.ndim != 2 or S.shape != (n, n) or n < 3:
        raise ValueError(f"S must be a square matrix of LCA sizes with n >= 3, got shape {S.shape}")
    pairs = np.ascontiguousarray(pairs, dtype=np.int64)
    witnesses = np.ascontiguousarray(witnesses, dtype=np.int64)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or witnesses.ndim != 2 or witnesses.shape[0] != pairs.shape[0]:
        raise ValueError("pairs must be (P, 2) and witnesses (P, m)")
    for name, a in (("pairs", pairs), ("witnesses", witnesses)):
        if a.size and (a.min() < 0 or a.max() >= n):
            raise ValueError(f"{name} must hold vertices in [0, {n})")
    if not 0 <= p < 0.5:
        raise ValueError(f"p must lie in [0, 0.5), got {p!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return S, pairs, witnesses, float(p), int(seed)


def oracle_answer_ref(S, u, v, w, p: float, seed: int) -> np.ndarray:
    "The oracle's answers (vectorised over arrays u, v, w): the vertex of each triplet that splits away first."
    S = np.asarray(S)
    u, v, w = (np.asarray(x, dtype=np.int64) for x in (u, v, w))
    n = S.shape[0]
    suv, suw, svw = S[u, v], S[u, w], S[v, w]
    truth = np.where(suv < np.minimum(suw, svw), w, np.where(suw < svw, v, u))
    a, c = np.minimum(np.minimum(u, v), w), np.maximum(np.maximum(u, v), w)
    b = u + v + w - a - c
    keys = R.stream_key_ref(np.full(a.shape, seed, dtype=np.uint64), (a * n * n + b * n + c).astype(np.uint64))
    err = R.uniform_ref(keys, np.zeros(a.shape, dtype=np.uint64)) < p
    flip = R.uniform_ref(keys, np.ones(a.shape, dtype=np.uint64)) < 0.5
    # the wrong answer: the first or second of the other two vertices in the order (a, b, c)
    o1 = np.where(truth == a, b, a)
    o2 = np.where(truth == c, b, c)
    return np.where(err, np.where(flip, o2, o1), truth)


def count_votes_ref(S, pairs, witnesses, p: float, seed: int) -> np.ndarray:
    "NumPy reference: per pair, the number of its witnesses the oracle names as splitting away."
    S, pairs, witnesses, p, seed = _check_votes(S, pairs, witnesses, p, seed)
    u = np.broadcast_to(pairs[:, :1], witnesses.shape)
    v = np.broadcast_to(pairs[:, 1:], witnesses.shape)
    ans = oracle_answer_ref(S, u, v, witnesses, p, seed)
    valid = (witnesses != u) & (witnesses != v)
    return ((ans == witnesses) & valid).sum(axis=1).astype(np.int64)


def _build_votes(jit, stream_key, uniform):
    "The oracle's answer to one triplet and the vote count of one pair, compiled with `jit` (CPU or CUDA)."

    @jit
    def answer(S, u, v, w, p, seed):
        n = S.shape[0]
        suv, suw, svw = S[u, v], S[u, w], S[v, w]
        if suv < min(suw, svw):
            truth = w
        elif suw < svw:
            truth = v
        else:
            truth = u
        a = min(u, min(v, w))
        c = max(u, max(v, w))
        b = u + v + w - a - c
        key = stream_key(seed, a * n * n + b * n + c)
        if uniform(key, 0) < p:
            o1 = b if truth == a else a
            o2 = b if truth == c else c
            return o2 if uniform(key, 1) < 0.5 else o1
        return truth

    @jit
    def votes(S, pairs, witnesses, i, p, seed):
        "How many witnesses of pair i the oracle names as splitting away."
        u, v = pairs[i, 0], pairs[i, 1]
        c = 0
        for j in range(witnesses.shape[1]):
            w = witnesses[i, j]
            if w != u and w != v and answer(S, u, v, w, p, seed) == w:
                c += 1
        return c

    return votes


_votes = _build_votes(njit(inline="always"), R.stream_key, R.uniform)
_cuda_votes = _build_votes(lambda f: cuda.jit(device=True)(f), R.cuda_stream_key, R.cuda_uniform)


@njit(parallel=True, cache=True)
def _votes_njit(S, pairs, witnesses, p, seed, out):
    for i in prange(pairs.shape[0]):
        out[i] = _votes(S, pairs, witnesses, i, p, seed)


def count_votes(S, pairs, witnesses, p: float, seed: int) -> np.ndarray:
    "CPU kernel (parallel over pairs) for `count_votes_ref`."
    S, pairs, witnesses, p, seed = _check_votes(S, pairs, witnesses, p, seed)
    out = np.empty(len(pairs), dtype=np.int64)
    if len(pairs):
        _votes_njit(S, pairs, witnesses, p, np.uint64(seed), out)
    return out


@cuda.jit
def _votes_cuda_kernel(S, pairs, witnesses, p, seed, out):
    i = cuda.grid(1)
    if i < pairs.shape[0]:
        out[i] = _cuda_votes(S, pairs, witnesses, i, p, seed)


def count_votes_cuda(S, pairs, witnesses, p: float, seed: int, threads_per_block: int = 128) -> np.ndarray:
    "CUDA kernel (one thread per pair) for `count_votes_ref`; runs under NUMBA_ENABLE_CUDASIM=1 too."
    S, pairs, witnesses, p, seed = _check_votes(S, pairs, witnesses, p, seed)
    out = cuda.device_array(len(pairs), dtype=np.int64)
    if len(pairs):
        blocks = (len(pairs) + threads_per_block - 1) // threads_per_block
        _votes_cuda_kernel[blocks, threads_per_block](cuda.to_device(S), cuda.to_device(pairs),
                                                      cuda.to_device(witnesses), p, np.uint64(seed), out)
    return out.copy_to_host()


# --- Dasgupta's cost along a linkage ---------------------------------------------------------------------------------

def leaf_ranges(Z) -> tuple[np.ndarray, np.ndarray]:
    "Leaf order of a linkage and, per merge, the ranges [a0, a1) and [a1, b1) of the two merged clusters."
    Z = np.asarray(Z, dtype=np.float64)
    n = Z.shape[0] + 1
    kids = Z[:, :2].astype(np.int64)
    size = np.ones(2 * n - 1, dtype=np.int64)
    for i, (a, b) in enumerate(kids):
        size[n + i] = size[a] + size[b]
    start = np.zeros(2 * n - 1, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    for i in range(n - 2, -1, -1):  # top-down: the left child starts where its parent does
        a, b = kids[i]
        start[a] = start[n + i]
        start[b] = start[n + i] + size[a]
    order[start[:n]] = np.arange(n)
    ranges = np.stack([start[kids[:, 0]], start[kids[:, 1]], start[kids[:, 1]] + size[kids[:, 1]]], axis=1)
    return order, ranges


def merge_costs_ref(W, Z) -> np.ndarray:
    "NumPy reference: (|A| + |B|) * W(A, B) for every merge of the linkage Z (Dasgupta's cost is their sum)."
    W = np.asarray(W, dtype=np.float64)
    order, rg = leaf_ranges(Z)
    Wp = W[np.ix_(order, order)]
    return np.array([(c - a) * Wp[a:b, b:c].sum() for a, b, c in rg])


@njit(parallel=True, cache=True)
def _merge_costs_njit(Wp, rg, out):
    for i in prange(rg.shape[0]):
        a, b, c = rg[i, 0], rg[i, 1], rg[i, 2]
        s = 0.0
        for x in range(a, b):
            for y in range(b, c):
                s += Wp[x, y]
        out[i] = (c - a) * s


def merge_costs(W, Z) -> np.ndarray:
    "CPU kernel (parallel over merges) for `merge_costs_ref`."
    order, rg = leaf_ranges(Z)
    Wp = np.ascontiguousarray(np.asarray(W, dtype=np.float64)[np.ix_(order, order)])
    out = np.empty(len(rg))
    _merge_costs_njit(Wp, rg, out)
    return out


_BLOCK = 128


@cuda.jit
def _merge_costs_cuda_kernel(Wp, rg, out):
    i = cuda.blockIdx.x
    t = cuda.threadIdx.x
    buf = cuda.shared.array(_BLOCK, dtype=np.float64)
    a, b, c = rg[i, 0], rg[i, 1], rg[i, 2]
    na, nb = b - a, c - b
    s = 0.0
    for k in range(t, na * nb, _BLOCK):
        s += Wp[a + k // nb, b + k % nb]
    buf[t] = s
    cuda.syncthreads()
    block_sum(buf, t, _BLOCK)
    if t == 0:
        out[i] = (c - a) * buf[0]


def merge_costs_cuda(W, Z) -> np.ndarray:
    "CUDA kernel (one block per merge, shared-memory sum) for `merge_costs_ref`; simulator-tested."
    order, rg = leaf_ranges(Z)
    Wp = np.ascontiguousarray(np.asarray(W, dtype=np.float64)[np.ix_(order, order)])
    out = cuda.device_array(len(rg), dtype=np.float64)
    _merge_costs_cuda_kernel[len(rg), _BLOCK](cuda.to_device(Wp), cuda.to_device(rg), out)
    return out.copy_to_host()


# --- Benchmark -------------------------------------------------------------------------------------------------------

def benchmark(size: str = "default", repeat: int = 3) -> dict:
    "Vote counting (all pairs, m witnesses each) and Dasgupta's cost: NumPy, @njit, scipy's linkage for scale."
    from scipy.cluster.hierarchy import linkage
    from scipy.spatial.distance import squareform
    n, m = {"small": (96, 16), "default": (512, 64), "full": (1024, 64)}[size]
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 8))
    Z = linkage(X, "average")
    order, rg = leaf_ranges(Z)
    S = np.zeros((n, n), dtype=np.int64)
    for a, b, c in rg:
        S[np.ix_(order[a:b], order[b:c])] = c - a
    S = S + S.T
    iu = np.triu_indices(n, 1)
    pairs = np.stack(iu, axis=1)
    wit = rng.integers(0, n, (len(pairs), m))
    W = rng.random((n, n))
    W = (W + W.T) / 2
    np.fill_diagonal(W, 0)
    count_votes(S, pairs[:10], wit[:10], 0.2, 1)
    merge_costs(W, Z)
    secs = {"numpy reference, votes": _best_time(lambda: count_votes_ref(S, pairs, wit, 0.2, 1), min(repeat, 2)),
            "njit, votes": _best_time(lambda: count_votes(S, pairs, wit, 0.2, 1), repeat),
            "numpy reference, Dasgupta cost": _best_time(lambda: merge_costs_ref(W, Z), repeat),
            "njit, Dasgupta cost": _best_time(lambda: merge_costs(W, Z), repeat),
            "scipy linkage (average), for scale": _best_time(lambda: linkage(squareform(1 - W, checks=False),
                                                                              "average"), repeat)}
    same = bool(np.array_equal(count_votes(S, pairs, wit, 0.2, 1), count_votes_ref(S, pairs, wit, 0.2, 1)))
    import numba
    return {"kernel": "hclust", "task": f"votes: all {len(pairs)} pairs of n={n}, m={m} witnesses "
            f"({len(pairs) * m / 1e6:.1f} M oracle calls); cost along an average-linkage tree; "
            f"{numba.get_num_threads()} numba thread(s)", "seconds": secs, "reference": "numpy reference, votes",
            "ratios": {"votes: reference / njit": secs["numpy reference, votes"] / secs["njit, votes"],
                       "cost: reference / njit": secs["numpy reference, Dasgupta cost"] / secs["njit, Dasgupta cost"]},
            "njit votes equal the reference": same}
