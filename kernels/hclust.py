"""Hot loops of learning-augmented hierarchical clustering: triplet-oracle vote counting and Dasgupta's cost.

**Votes.** A splitting oracle answers a triplet ``(u, v, w)`` with the vertex that splits away first in a reference
tree, that is the one not in the triplet's deepest pair. With ``S[a, b]`` the number of leaves under the lowest
common ancestor of ``a`` and ``b`` in a binary reference tree, the true answer is the vertex ``x`` whose two pairs
are not the strict minimum of ``S`` over the triplet's three pairs. The oracle errs with probability ``p``: the
answer is then one of the two other vertices, with equal probability. Noise is **persistent**: the error and the
wrong answer are a function of the unordered triplet and the seed alone (a counter-based hash, ``icml25nb.kernels.rng``,
stream ``a n^2 + b n + c`` for ``a < b < c``), so asking the same triplet again returns the same answer.
``count_votes(S, pairs, witnesses, p, seed)`` returns, for each pair ``(u, v)`` (``u != v``, refused otherwise), how
many of its witnesses ``w`` the oracle names as splitting away from ``u`` and ``v``; a witness equal to ``u`` or ``v``
is skipped (not counted), so that a caller may pass every member of a cluster as the witnesses of each of its pairs
(the hclust chapter does).

**Cost.** Dasgupta's cost of a tree given as a scipy linkage ``Z`` is the sum over merges of
``(|A| + |B|) * W(A, B)``, where ``W(A, B)`` is the total weight between the merged clusters. With the leaves in
dendrogram order every cluster is a contiguous range, so ``W(A, B)`` is the sum of a contiguous block of the
permuted weight matrix; ``merge_costs`` returns one term per merge. The ``@njit`` kernel needs no permuted copy: it
makes one pass over the rows of ``W``, and row ``u`` adds, at each merge on its way to the root where ``u`` is in the
left cluster, its entries in the right cluster (the pair's LCA is that merge). That is one memory-bound O(n^2) pass,
faster at n = 1000 and 2000 than the same cost through scipy (``cophenet`` of the linkage with the heights
replaced by the cluster sizes, dotted with the condensed ``W``; ``benchmark`` times both).

Reference (NumPy), ``@njit`` (parallel over pairs for the votes; one thread for the cost) and ``@cuda.jit`` (a thread
per pair; a block per merge with a shared-memory reduction) with one meaning.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, njit, prange

from icml25nb.core import check_array, check_float, check_ids, check_int
from icml25nb.kernels import rng as R
from icml25nb.kernels._bench import best_time as _best_time, race as _race
from icml25nb.kernels._cuda import block_sum

__all__ = ["oracle_answer_ref", "count_votes_ref", "count_votes", "count_votes_cuda", "leaf_ranges",
           "merge_costs_ref", "merge_costs", "merge_costs_cuda", "weights_defect", "benchmark"]


def _check_S(S) -> np.ndarray:
    """S as a C-contiguous int64 square matrix (n >= 3). An int64 array is taken as it is (no pass over its n^2
    entries: the callers query it many times; any int64 value is a valid size to compare)."""
    if isinstance(S, np.ndarray) and S.dtype == np.int64:
        S = np.ascontiguousarray(S)
    else:
        S = check_array("S", S, dtype=np.int64)
    if S.ndim != 2 or S.shape[0] != S.shape[1] or S.shape[0] < 3:
        raise ValueError(f"S must be a square matrix of LCA sizes with n >= 3, got shape {S.shape}")
    return S


def _check_votes(S, pairs, witnesses, p, seed):
    S = _check_S(S)
    n = S.shape[0]
    pairs = check_ids("pairs", pairs, n, ndim=2)
    if pairs.shape[1] != 2:
        raise ValueError(f"pairs must have shape (P, 2), got {pairs.shape}")
    same = pairs[:, 0] == pairs[:, 1]
    if same.any():  # (u, u) is no pair: its triplets are not three vertices (it got votes before)
        i = int(same.argmax())
        raise ValueError(f"pairs must hold two distinct vertices in every row, got row {i} = {pairs[i].tolist()}")
    witnesses = check_ids("witnesses", witnesses, n, ndim=2)
    if witnesses.shape[0] != pairs.shape[0]:
        raise ValueError(f"witnesses must have shape ({pairs.shape[0]}, m), one row per pair, got {witnesses.shape}")
    p = check_float("p", p, 0.0, 0.5, open_max=True)
    seed = check_int("seed", seed, 0, 2**64 - 1)
    return S, pairs, witnesses, p, seed


def oracle_answer_ref(S, u, v, w, p: float, seed: int) -> np.ndarray:
    "The oracle's answers (vectorised over arrays u, v, w): the vertex of each triplet that splits away first."
    S = _check_S(S)
    n = S.shape[0]
    u, v, w = (check_ids(name, x, n) for name, x in (("u", u), ("v", v), ("w", w)))
    try:
        u, v, w = np.broadcast_arrays(u, v, w)
    except ValueError:
        raise ValueError(f"u, v and w must have broadcastable shapes, got {u.shape}, {v.shape}, {w.shape}") from None
    if ((u == v) | (u == w) | (v == w)).any():
        raise ValueError("u, v and w must be three distinct vertices in every triplet")
    return _answers(S, u, v, w, check_float("p", p, 0.0, 1.0), check_int("seed", seed, 0, 2**64 - 1))


def _answers(S, u, v, w, p, seed):
    """`oracle_answer_ref` on checked arguments (int64 ids in range, broadcast; a triplet that is not distinct gets
    an answer that `count_votes_ref` masks)."""
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
    """NumPy reference: per pair (two distinct vertices), the number of its witnesses the oracle names as splitting
    away; witnesses equal to a vertex of their pair are skipped."""
    S, pairs, witnesses, p, seed = _check_votes(S, pairs, witnesses, p, seed)
    u = np.broadcast_to(pairs[:, :1], witnesses.shape)
    v = np.broadcast_to(pairs[:, 1:], witnesses.shape)
    ans = _answers(S, u, v, witnesses, p, seed)
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

@njit(cache=True)
def _leaf_ranges_njit(kids, n, order, ranges, parent):
    "Sizes, dendrogram starts and parents of all 2n - 1 nodes; fills order, ranges and parent (-1 at the root)."
    size = np.ones(2 * n - 1, dtype=np.int64)
    start = np.zeros(2 * n - 1, dtype=np.int64)
    for i in range(n - 1):
        size[n + i] = size[kids[i, 0]] + size[kids[i, 1]]
        parent[kids[i, 0]] = n + i
        parent[kids[i, 1]] = n + i
    parent[2 * n - 2] = -1
    for i in range(n - 2, -1, -1):  # top-down: the left child starts where its parent does
        a, b = kids[i, 0], kids[i, 1]
        start[a] = start[n + i]
        start[b] = start[n + i] + size[a]
    for u in range(n):
        order[start[u]] = u
    for i in range(n - 1):
        b = kids[i, 1]
        ranges[i, 0] = start[kids[i, 0]]
        ranges[i, 1] = start[b]
        ranges[i, 2] = start[b] + size[b]


def _linkage_tree(Z):
    "(order, ranges, kids, parent) of a linkage: the leaf order, the merged ranges and the tree's child/parent links."
    Z = check_array("Z", Z, contiguous=False)
    if Z.ndim != 2 or Z.shape[1] != 4:
        raise ValueError(f"Z must be a linkage matrix of shape (n - 1, 4), got shape {Z.shape}")
    if Z.size and not (Z[:, :2] == np.round(Z[:, :2])).all():
        raise ValueError("Z is not a valid linkage: its first two columns must hold integer cluster ids")
    n = Z.shape[0] + 1
    kids = np.ascontiguousarray(Z[:, :2].astype(np.int64)).reshape(n - 1, 2)
    # every node but the root is merged exactly once, into a later cluster (the walks up the tree then end)
    if n > 1 and ((kids < 0).any() or (kids >= n + np.arange(n - 1)[:, None]).any()
                  or not (np.bincount(kids.ravel(), minlength=2 * n - 2) == 1).all()):
        raise ValueError("Z is not a valid linkage: each cluster must be merged once, after it is formed")
    order = np.empty(n, dtype=np.int64)
    ranges = np.empty((n - 1, 3), dtype=np.int64)
    parent = np.empty(2 * n - 1, dtype=np.int64)
    _leaf_ranges_njit(kids, n, order, ranges, parent)
    return order, ranges, kids, parent


def leaf_ranges(Z) -> tuple[np.ndarray, np.ndarray]:
    "Leaf order of a linkage and, per merge, the ranges [a0, a1) and [a1, b1) of the two merged clusters."
    order, ranges, _, _ = _linkage_tree(Z)
    return order, ranges


def _check_cost_weights(W, n: int) -> np.ndarray:
    "W as C-contiguous float64 (n, n); finiteness is checked on the cost terms (no pass of its own, see merge_costs)."
    W = check_array("W", W, ndim=2, finite=False)
    if W.shape != (n, n):
        raise ValueError(f"W must be ({n}, {n}) for a linkage of {n} leaves, got shape {W.shape}")
    return W


def _finite_costs(out: np.ndarray) -> np.ndarray:
    """`out`, or a ValueError naming W: every entry of W that the cost reads enters one term, and a NaN or an inf
    propagates into it (the diagonal is never read), so the finiteness of W needs no pass of its own."""
    if not np.isfinite(out).all():
        raise ValueError("W must be finite (a cost term is NaN or inf: W holds NaN or inf, or its sums overflow)")
    return out


@njit(cache=True, nogil=True)
def _weights_defect_njit(W, rtol, atol):
    """Bit flags over all entries of the square W, read in 32 x 32 tiles (W[i, j] and W[j, i] together, no temporary):
    1 = a NaN or inf, 2 = a negative entry, 4 = |W[i, j] - W[j, i]| > atol + rtol |W[j, i]| for some (i, j) (the
    test of np.allclose(W, W.T, rtol, atol); taken both ways it is atol + rtol min(|a|, |b|)). Branch-free inner loop:
    a - a is 0 for a finite a and NaN otherwise."""
    n = W.shape[0]
    T = 32
    fin = 0.0
    low = 0.0
    asym = False
    for I in range(0, n, T):
        for J in range(I, n, T):
            for i in range(I, min(I + T, n)):
                for j in range(max(J, i), min(J + T, n)):
                    a = W[i, j]
                    b = W[j, i]
                    fin += (a - a) + (b - b)
                    low = min(low, min(a, b))
                    asym |= abs(a - b) > atol + rtol * min(abs(a), abs(b))
    if fin != 0.0:  # NaN
        return 1
    return (2 if low < 0.0 else 0) | (4 if asym else 0)


def weights_defect(W, rtol: float = 1e-12, atol: float = 1e-12) -> str | None:
    """None if the square float64 matrix W is finite, non-negative and symmetric (np.allclose(W, W.T, rtol, atol)),
    else the first property it lacks ("finite", "non-negative", "symmetric"), in one tiled pass without an n x n
    temporary (np.allclose(W, W.T) and the isfinite / < 0 tests allocate several)."""
    if not isinstance(W, np.ndarray) or W.dtype != np.float64 or W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"W must be a square float64 numpy array, got "
                         f"{type(W).__name__}{getattr(W, 'shape', '')} {getattr(W, 'dtype', '')}".rstrip())
    rtol = check_float("rtol", rtol, 0.0)
    atol = check_float("atol", atol, 0.0)
    bad = _weights_defect_njit(W, rtol, atol)
    for bit, what in ((1, "finite"), (2, "non-negative"), (4, "symmetric")):
        if bad & bit:
            return what
    return None


def merge_costs_ref(W, Z) -> np.ndarray:
    "NumPy reference: (|A| + |B|) * W(A, B) for every merge of the linkage Z (Dasgupta's cost is their sum)."
    order, rg = leaf_ranges(Z)
    W = _check_cost_weights(W, len(order))
    Wp = W[np.ix_(order, order)]
    return _finite_costs(np.array([(c - a) * Wp[a:b, b:c].sum() for a, b, c in rg]).reshape(len(rg)))


@njit(cache=True)
def _merge_costs_njit(W, order, rg, kids, parent, lines, out):
    """One pass over the rows of W, no permuted copy. Row u meets every v to its right in dendrogram order exactly
    once, at their LCA merge i, where u lies in the left cluster and v in the right one: walking up from leaf u, each
    merge with u on the left adds W[u, order[k]] for k in its right range [b, c) to W(A, B) of that merge. The right
    ranges met on the way up tile (pos(u), n), so a row costs one sweep of its entries. Rows are taken in dendrogram
    order and every merge keeps one running sum, so each W(A, B) adds the entries of the block Wp[a:b, b:c] row by
    row, left to right: the same floating-point sum as a plain double loop over the block. A sequential read of one
    entry per cache line first (stored in `lines`, unused) streams the row into cache, so the reads in dendrogram
    order that follow hit it instead of waiting on memory one line at a time."""
    n = order.shape[0]
    acc = np.zeros(n - 1)
    for x0 in range(n):
        u = order[x0]
        t = 0.0
        for v in range(0, n, 8):
            t += W[u, v]
        lines[u] = t
        x = u
        p = parent[x]
        while p >= 0:
            i = p - n
            if kids[i, 0] == x:
                s = acc[i]
                for k in range(rg[i, 1], rg[i, 2]):
                    s += W[u, order[k]]
                acc[i] = s
            x = p
            p = parent[x]
    for i in range(n - 1):
        out[i] = (rg[i, 2] - rg[i, 0]) * acc[i]


def merge_costs(W, Z) -> np.ndarray:
    "CPU kernel (one sequential pass over the rows of W, no permuted copy) for `merge_costs_ref`."
    order, rg, kids, parent = _linkage_tree(Z)
    W = _check_cost_weights(W, len(order))
    out = np.empty(len(rg))
    if len(rg):
        _merge_costs_njit(W, order, rg, kids, parent, np.empty(len(order)), out)
    return _finite_costs(out)


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
    W = _check_cost_weights(W, len(order))
    Wp = np.ascontiguousarray(W[np.ix_(order, order)])
    if not len(rg):
        return np.empty(0)
    out = cuda.device_array(len(rg), dtype=np.float64)
    _merge_costs_cuda_kernel[len(rg), _BLOCK](cuda.to_device(Wp), cuda.to_device(rg), out)
    return _finite_costs(out.copy_to_host())


# --- Benchmark -------------------------------------------------------------------------------------------------------

def benchmark(size: str = "default", repeat: int = 3) -> dict:
    """Vote counting (all pairs, m witnesses each): NumPy vs @njit, scipy's linkage for scale. Dasgupta's cost at
    two sizes: NumPy reference, @njit and its scipy peer, the same sum as one vectorised formula: ``cophenet`` of the
    linkage with each merge height replaced by the merged cluster's size gives the LCA size of every pair, dotted
    with the condensed W. Each timing is the best of its repeats after a warm-up; the peer and the kernel alternate."""
    from scipy.cluster.hierarchy import cophenet, linkage
    from scipy.spatial.distance import squareform

    from icml25nb.algorithms.hclust import dasgupta_cost
    n, m = {"small": (96, 16), "default": (512, 64), "full": (1024, 64)}[size]
    cost_ns = {"small": (200, 400), "default": (1000, 2000), "full": (1000, 2000)}[size]
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
    secs = {"numpy reference, votes": _best_time(lambda: count_votes_ref(S, pairs, wit, 0.2, 1), min(repeat, 2)),
            "njit, votes": _best_time(lambda: count_votes(S, pairs, wit, 0.2, 1), repeat),
            "scipy linkage (average), for scale": _best_time(lambda: linkage(squareform(1 - W, checks=False),
                                                                              "average"), repeat)}
    same = bool(np.array_equal(count_votes(S, pairs, wit, 0.2, 1), count_votes_ref(S, pairs, wit, 0.2, 1)))
    ratios = {"votes: reference / njit": secs["numpy reference, votes"] / secs["njit, votes"]}
    values, rel = {}, {}
    for nc in cost_ns:
        g = np.random.default_rng(nc)
        Zc = linkage(g.standard_normal((nc, 8)), "average")
        Wc = g.random((nc, nc))
        Wc = (Wc + Wc.T) / 2
        np.fill_diagonal(Wc, 0)

        def peer():  # the same cost through scipy: LCA sizes of all pairs (condensed) . W (condensed)
            Zs = Zc.copy()
            Zs[:, 2] = Zs[:, 3]
            return float(squareform(Wc, checks=False) @ cophenet(Zs))

        ref = merge_costs_ref(Wc, Zc)
        names = {"ref": f"n={nc}: numpy reference, Dasgupta cost", "njit": f"n={nc}: njit, Dasgupta cost",
                 "peer": f"n={nc}: scipy cophenet(sizes) . W, Dasgupta cost"}
        secs[names["ref"]] = _best_time(lambda: merge_costs_ref(Wc, Zc), repeat)
        # alternate, so that all see the same load on a shared machine; the public function a user calls is the
        # chapter's dasgupta_cost (checks W: finite, >= 0, symmetric, then the kernel)
        names["public"] = f"n={nc}: public icml25nb.algorithms.hclust.dasgupta_cost (checks + kernel)"
        best = _race({"njit": lambda: merge_costs(Wc, Zc), "peer": peer, "public": lambda: dasgupta_cost(Wc, Zc)},
                     max(repeat, 5))
        secs[names["njit"]], secs[names["peer"]], secs[names["public"]] = best["njit"], best["peer"], best["public"]
        values[names["public"]] = dasgupta_cost(Wc, Zc)
        ratios[f"cost n={nc}: public dasgupta_cost / njit"] = best["public"] / best["njit"]
        got = merge_costs(Wc, Zc)
        values[names["ref"]], values[names["njit"]], values[names["peer"]] = float(ref.sum()), float(got.sum()), peer()
        rel[f"n={nc}"] = float(np.max(np.abs(got - ref) / np.abs(ref)))
        ratios[f"cost n={nc}: scipy cophenet formula / njit"] = secs[names["peer"]] / secs[names["njit"]]
        ratios[f"cost n={nc}: reference / njit"] = secs[names["ref"]] / secs[names["njit"]]
    import numba
    return {"kernel": "hclust", "task": f"votes: all {len(pairs)} pairs of n={n}, m={m} witnesses "
            f"({len(pairs) * m / 1e6:.1f} M oracle calls); Dasgupta's cost along an average-linkage tree of "
            f"n = {' and '.join(map(str, cost_ns))} leaves; {numba.get_num_threads()} numba thread(s)",
            "seconds": secs, "reference": "numpy reference, votes", "values": values, "ratios": ratios,
            "njit votes equal the reference": same,
            "njit cost terms vs the reference, max relative difference": rel}
