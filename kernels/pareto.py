"""Pareto dominance: the non-dominated mask and non-dominated sorting (front ranks): NumPy reference, @njit, @cuda.jit.

Convention: **minimisation**, rows are points. ``a`` dominates ``b`` when ``a <= b`` in every objective and
``a < b`` in at least one. Identical rows (duplicates) do not dominate each other: every copy of a non-dominated
point is non-dominated and all copies share one rank. ``keep_duplicates=False`` marks only the first copy (lowest row
index) of each group of identical non-dominated rows, like ``moocore.is_nondominated(..., keep_weakly=False)``.
Ranks start at 0 (the non-dominated front), as ``moocore.pareto_rank``. Rows may hold +-inf; NaN is rejected.

Three implementations with one meaning:

- ``nondominated_mask_ref`` / ``pareto_rank_ref``: NumPy. The mask compares every pair of rows (chunked
  broadcasting, O(n^2 m)); the ranks are Deb's fast non-dominated sort on the dominance matrix (``D[j, i]``: row
  ``j`` dominates row ``i``): each row counts its dominators, and peeling front ``r`` subtracts its rows' columns.
- ``nondominated_mask`` / ``pareto_rank``: ``@njit`` on the rows sorted lexicographically (done once outside the
  kernel: NumPy's quicksort of the first objective, or a stable ``lexsort`` when it has ties). Only an earlier row
  can dominate a later one, and identical rows are adjacent, so a copy takes its predecessor's result and is
  otherwise skipped. The ranks are the *efficient non-dominated sort* (ENS, Zhang, Tian, Cheng, Jin, IEEE TEVC
  2015): a row goes to the first front with no member that dominates it. "Front k dominates the row" is monotone in
  k (every member of front k+1 is dominated by a member of front k), so for m <= 3 a binary search over the fronts
  finds it (ENS-BS), each front answering in O(1) for m = 2 (its newest member has its least second objective) and
  in O(log) for m = 3 (a staircase of its members' last two objectives, see below): O(n log n) plus the staircase
  updates. For m >= 4 a front scans its members, and a sequential search over the fronts (ENS-SS) is faster: checks
  of fronts that dominate the row usually stop early. The mask is the same pass with one front.
- ``nondominated_mask_cuda`` / ``pareto_rank_cuda``: one GPU thread per row. The mask counts each row's dominators
  (O(n^2 m) work, fully parallel). The ranks are Deb's sort again: one launch counts dominators, then one launch
  per front, in which each unranked row subtracts the members of the last front that dominate it and joins the next
  front when its count reaches 0 (appended through an atomic counter): O(n^2 m) work in all, one launch per front.
  ENS is sequential by nature (each row depends on the fronts built by the rows before it) and has no GPU form.
  Tested under the CUDA simulator at tiny sizes.

``benchmark(size, repeat)`` times the three CPU implementations and ``moocore.pareto_rank`` (the maintained C
implementation: Jensen's O(n log n) sweep for 2 objectives, front by front beyond) on the same points: the @njit
kernel is faster in 2 and 3 objectives and slower in 4 (see the bench/ output).
"""
from __future__ import annotations

import time

import numpy as np
from numba import cuda, njit

from icml25nb.core import check_array, check_choice, check_int, check_memory
from icml25nb.kernels._bench import race as _race

__all__ = ["check_points", "nondominated_mask_ref", "pareto_rank_ref", "nondominated_mask", "pareto_rank",
           "nondominated_mask_cuda", "pareto_rank_cuda", "benchmark"]


# ----------------------------------------------------------------------------------------------------------- inputs
def _check_exact_ints(name: str, a: np.ndarray) -> None:
    "An integer array whose entries float64 holds exactly (|a| <= 2**53), or a one-line ValueError naming `name`."
    lo, hi = int(a.min()), int(a.max())
    if lo < -2**53 or hi > 2**53:
        raise ValueError(f"{name} holds integers beyond 2**53 in magnitude ([{lo}, {hi}]), which float64 cannot hold "
                         f"exactly (comparisons would be wrong); rescale or shift them first")


def check_points(Y, name: str = "Y") -> np.ndarray:
    """`Y` as a C-contiguous float64 (n, m) array with m >= 1 and no NaN, or a one-line TypeError/ValueError.
    Integer entries must have |y| <= 2**53 (float64 holds them exactly): above, two distinct integers can become one
    float and a dominance or a hypervolume would be silently wrong."""
    raw = Y
    if not isinstance(Y, (np.ndarray, str, bytes)) and Y is not None:
        try:
            raw = np.asarray(Y)
        except (TypeError, ValueError):  # ragged: check_array refuses it, naming `name`
            raw = Y
    if isinstance(raw, np.ndarray) and raw.dtype.kind in "iu" and raw.size:
        _check_exact_ints(name, raw)
    a = check_array(name, raw, finite=False, contiguous=False)  # real numbers: no strings, objects, complex
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (points, objectives), got shape {a.shape}")
    if a.shape[1] == 0 and a.shape[0] > 0:
        raise ValueError(f"{name} must have at least one objective (column), got shape {a.shape}")
    a = np.ascontiguousarray(a, dtype=np.float64)
    if np.isnan(a).any():
        raise ValueError(f"{name} must not contain NaN (row {int(np.isnan(a).any(1).argmax())})")
    return a


def _first_copies(Y: np.ndarray) -> np.ndarray:
    "True for the first (lowest-index) row of each group of identical rows."
    first = np.zeros(len(Y), bool)
    if len(Y):
        first[np.unique(Y, axis=0, return_index=True)[1]] = True
    return first


# -------------------------------------------------------------------------------------------------- NumPy reference
def _dominated_by_any(Y: np.ndarray, rows: np.ndarray) -> np.ndarray:
    "For each row of Y[rows]: is it dominated by some row of Y (broadcast over all rows)?"
    P = Y[rows]
    le = (Y[None, :, :] <= P[:, None, :]).all(-1)
    lt = (Y[None, :, :] < P[:, None, :]).any(-1)
    return (le & lt).any(1)


def nondominated_mask_ref(Y, keep_duplicates: bool = True, chunk: int = 512) -> np.ndarray:
    "NumPy reference: True for the rows that no other row dominates (pairwise comparison in row chunks)."
    Y = check_points(Y)
    chunk = check_int("chunk", chunk, 1)
    n = len(Y)
    check_memory("Y", float(min(chunk, n)) * n * Y.shape[1], 2)  # the broadcast comparisons of one chunk
    mask = np.ones(n, bool)
    for i0 in range(0, n, chunk):
        mask[i0:i0 + chunk] = ~_dominated_by_any(Y, np.arange(i0, min(n, i0 + chunk)))
    if not keep_duplicates:
        mask &= _first_copies(Y)
    return mask


def pareto_rank_ref(Y, chunk: int = 512) -> np.ndarray:
    "NumPy reference: front rank of every row (0: non-dominated), Deb's fast non-dominated sort."
    Y = check_points(Y)
    chunk = check_int("chunk", chunk, 1)
    n = len(Y)
    if n == 0:
        return np.zeros(0, np.int64)
    check_memory("Y", float(n) * n + 2.0 * min(chunk, n) * n * Y.shape[1], 1)  # the dominance matrix
    D = np.empty((n, n), bool)  # D[j, i]: row j dominates row i
    for j0 in range(0, n, chunk):
        P = Y[j0:j0 + chunk]
        D[j0:j0 + chunk] = (P[:, None, :] <= Y[None, :, :]).all(-1) & (P[:, None, :] < Y[None, :, :]).any(-1)
    count = D.sum(0).astype(np.int64)  # number of dominators of each row
    rank = np.full(n, -1, np.int64)
    front, r = np.flatnonzero(count == 0), 0
    while len(front):
        rank[front] = r
        count -= D[front].sum(0)
        count[rank >= 0] = -1  # ranked rows never join a later front
        front, r = np.flatnonzero(count == 0), r + 1
    return rank


# ------------------------------------------------------------------------------------------------------ @njit (CPU)
def _sorted(Y: np.ndarray):
    """Lexicographic order of the rows (first objective first, ties by the next, then by row index) and the rows in
    that order. Without ties in the first objective NumPy's (SIMD) quicksort of that column is the order; with ties,
    a stable lexsort (several times slower)."""
    order = np.argsort(Y[:, 0])
    Ys = Y[order]
    if len(Y) > 1 and not (Ys[1:, 0] != Ys[:-1, 0]).all():
        order = np.lexsort(np.ascontiguousarray(Y.T[::-1])) if Y.shape[1] > 1 else np.argsort(Y[:, 0], kind="stable")
        Ys = Y[order]
    return order, np.ascontiguousarray(Ys)


@njit(cache=True, inline="always")
def _same_row(Y, a, b):
    for j in range(Y.shape[1]):
        if Y[a, j] != Y[b, j]:
            return False
    return True


@njit(cache=True, inline="always")
def _leq_tail(Y, a, b):
    "Y[a, 1:] <= Y[b, 1:] (row a sorts before b, so also Y[a, 0] <= Y[b, 0]: a dominates b unless equal)."
    for j in range(1, Y.shape[1]):
        if Y[a, j] > Y[b, j]:
            return False
    return True


@njit(cache=True)
def _front_dominates(Y, p, last, prev):
    "Does a member of the front whose newest member is `last` (linked through `prev`) dominate row p? (m >= 4)"
    q = last
    while q >= 0:
        if _leq_tail(Y, q, p):
            return True
        q = prev[q]
    return False


# With 3 objectives a front is queried through its *staircase*: the projections (y1, y2) of its members (all sorted
# before the query row, so y0 is already <= the row's), keeping only those not dominated in the projection, sorted by
# y1 ascending and so by y2 descending. Some member dominates row p iff the last entry with y1 <= p's y1 has
# y2 <= p's y2 (a pruned projection is dominated by a kept one, which then dominates p too): a binary search.
# Staircases live in one pool: front k at pool[start[k] : start[k] + size[k]], capacity cap[k], moved to the end of
# the pool with twice the capacity when full.

@njit(cache=True)
def _stair_dominates(S1, S2, s0, ln, a, b):
    "Does the staircase S1/S2[s0:s0+ln] have an entry <= (a, b) in both coordinates?"
    lo, hi = 0, ln
    while lo < hi:
        mid = (lo + hi) // 2
        if S1[s0 + mid] <= a:
            lo = mid + 1
        else:
            hi = mid
    return lo > 0 and S2[s0 + lo - 1] <= b


@njit(cache=True)
def _stair_insert(S1, S2, s0, ln, a, b):
    "Insert (a, b), which no entry dominates, dropping the entries it dominates; returns the new length."
    lo, hi = 0, ln
    while lo < hi:  # first entry with S1 >= a
        mid = (lo + hi) // 2
        if S1[s0 + mid] < a:
            lo = mid + 1
        else:
            hi = mid
    pos = lo
    end = pos
    while end < ln and S2[s0 + end] >= b:  # entries with S1 >= a and S2 >= b: dominated by (a, b)
        end += 1
    gone = end - pos
    if gone == 0:
        for i in range(ln, pos, -1):
            S1[s0 + i] = S1[s0 + i - 1]
            S2[s0 + i] = S2[s0 + i - 1]
    elif gone > 1:
        for i in range(end, ln):
            S1[s0 + i - gone + 1] = S1[s0 + i]
            S2[s0 + i - gone + 1] = S2[s0 + i]
    S1[s0 + pos] = a
    S2[s0 + pos] = b
    return ln + 1 - gone


@njit(cache=True)
def _rank_sorted_njit(Y, rank):
    """ENS-BS on lexicographically sorted rows Y (n, m): rank[i] of sorted row i. m = 2: one number per front;
    m = 3: one staircase per front; m >= 4: fronts are linked lists of sorted row indices (`last[k]` the newest
    member of front k, `prev[i]` the member added before row i), scanned newest first. `pareto_rank` calls it for
    m <= 3 and `_rank_sorted_wide_njit` (ENS-SS) for m >= 4; the benchmark times both at m = 4."""
    n, m = Y.shape
    last = np.empty(n, np.int64)
    prev = np.empty(n, np.int64)
    # staircases (m == 3)
    ps = 2 * n + 16 if m == 3 else 1  # grows when needed (at most about 4 n in all)
    S1 = np.empty(ps, np.float64)
    S2 = np.empty(ps, np.float64)
    start = np.empty(n, np.int64)
    size = np.empty(n, np.int64)
    cap = np.empty(n, np.int64)
    top = 0  # first free slot of the pool
    n_fronts = 0
    for p in range(n):
        if p > 0 and _same_row(Y, p - 1, p):  # a duplicate: same rank, nothing new in the front
            rank[p] = rank[p - 1]
            continue
        lo, hi = 0, n_fronts  # first front that does not dominate p
        while lo < hi:
            mid = (lo + hi) // 2
            if m == 2:  # the newest member has its front's least second objective
                dom = Y[last[mid], 1] <= Y[p, 1]
            elif m == 3:
                dom = _stair_dominates(S1, S2, start[mid], size[mid], Y[p, 1], Y[p, 2])
            elif m == 1:  # every earlier, different row dominates
                dom = True
            else:
                dom = _front_dominates(Y, p, last[mid], prev)
            if dom:
                lo = mid + 1
            else:
                hi = mid
        if lo == n_fronts:
            n_fronts += 1
            prev[p] = -1
            if m == 3:
                start[lo], size[lo], cap[lo] = top, 0, 0
        else:
            prev[p] = last[lo]
        last[lo] = p
        rank[p] = lo
        if m == 3:
            if size[lo] == cap[lo]:  # move the staircase to the end of the pool, twice as large (4 at first)
                want = max(4, 2 * cap[lo])
                if top + want > S1.shape[0]:
                    grow = max(2 * S1.shape[0], top + want)
                    T1 = np.empty(grow, np.float64)
                    T2 = np.empty(grow, np.float64)
                    T1[:top] = S1[:top]
                    T2[:top] = S2[:top]
                    S1, S2 = T1, T2
                for i in range(size[lo]):
                    S1[top + i] = S1[start[lo] + i]
                    S2[top + i] = S2[start[lo] + i]
                start[lo] = top
                cap[lo] = want
                top += want
            size[lo] = _stair_insert(S1, S2, start[lo], size[lo], Y[p, 1], Y[p, 2])
    return n_fronts


@njit(cache=True)
def _rank_sorted_wide_njit(Y, rank):
    """ENS-SS for m >= 4 on lexicographically sorted rows: each front keeps its members' (y1, .., y_{m-1}) in a block
    of one pool C, scanned newest first; the fronts are searched in order (checks of fronts that dominate the row
    usually stop early, so only the last check scans a whole front: about 2x faster than binary search here). Front
    k's block is C[start[k] : start[k] + size[k]]; when full it moves to the end of the pool with twice the capacity."""
    n, m = Y.shape
    w = m - 1
    C = np.empty((n + 16, w), np.float64)
    start = np.zeros(n, np.int64)
    size = np.zeros(n, np.int64)
    cap = np.zeros(n, np.int64)
    top = 0
    n_fronts = 0
    for p in range(n):
        if p > 0 and _same_row(Y, p - 1, p):
            rank[p] = rank[p - 1]
            continue
        k = 0
        y1, y2, y3 = Y[p, 1], Y[p, 2], Y[p, 3]
        while k < n_fronts:
            dom = False
            for i in range(start[k] + size[k] - 1, start[k] - 1, -1):
                if C[i, 0] <= y1 and C[i, 1] <= y2 and C[i, 2] <= y3:  # then the rest, if any
                    ok = True
                    for j in range(3, w):
                        if C[i, j] > Y[p, j + 1]:
                            ok = False
                            break
                    if ok:
                        dom = True
                        break
            if not dom:
                break
            k += 1
        if k == n_fronts:
            start[k], size[k], cap[k] = top, 0, 0
            n_fronts += 1
        rank[p] = k
        if size[k] == cap[k]:  # move the block to the end of the pool, twice as large (8 at first)
            want = max(8, 2 * cap[k])
            if top + want > C.shape[0]:
                T = np.empty((max(2 * C.shape[0], top + want), w), np.float64)
                T[:top] = C[:top]
                C = T
            for i in range(size[k]):
                for j in range(w):
                    C[top + i, j] = C[start[k] + i, j]
            start[k] = top
            cap[k] = want
            top += want
        for j in range(w):
            C[start[k] + size[k], j] = Y[p, j + 1]
        size[k] += 1
    return n_fronts


@njit(cache=True)
def _mask_sorted_njit(Y, keep_duplicates, mask):
    "Non-dominated rows of lexicographically sorted Y: ENS with one front."
    n, m = Y.shape
    last = -1
    prev = np.empty(n, np.int64)
    S1 = np.empty(n if m == 3 else 1, np.float64)
    S2 = np.empty(n if m == 3 else 1, np.float64)
    ln = 0
    for p in range(n):
        if p > 0 and _same_row(Y, p - 1, p):
            mask[p] = mask[p - 1] and keep_duplicates  # the first copy is the lowest row index (stable lexsort)
            continue
        if m == 2:
            dom = last >= 0 and Y[last, 1] <= Y[p, 1]
        elif m == 3:
            dom = _stair_dominates(S1, S2, 0, ln, Y[p, 1], Y[p, 2])
        elif m == 1:
            dom = last >= 0
        else:
            dom = _front_dominates(Y, p, last, prev)
        mask[p] = not dom
        if not dom:
            prev[p] = last
            last = p
            if m == 3:
                ln = _stair_insert(S1, S2, 0, ln, Y[p, 1], Y[p, 2])


def nondominated_mask(Y, keep_duplicates: bool = True) -> np.ndarray:
    "@njit kernel: True for the rows that no other row dominates (minimisation); see the module docstring."
    Y = check_points(Y)
    out = np.ones(len(Y), bool)
    if len(Y) == 0:
        return out
    order, Ys = _sorted(Y)
    mask = np.empty(len(Y), np.bool_)
    _mask_sorted_njit(Ys, bool(keep_duplicates), mask)
    out[order] = mask
    return out


def pareto_rank(Y) -> np.ndarray:
    "@njit kernel: front rank of every row (0: non-dominated, minimisation); ENS, see the module docstring."
    return _ranks(Y, wide=True)


def _ranks(Y, wide: bool) -> np.ndarray:
    "Front ranks by ENS-BS (`_rank_sorted_njit`), or by ENS-SS (`_rank_sorted_wide_njit`) for m >= 4 if `wide`."
    Y = check_points(Y)
    rank = np.zeros(len(Y), np.int64)
    if len(Y):
        order, Ys = _sorted(Y)
        rs = np.empty(len(Y), np.int64)
        if wide and Y.shape[1] >= 4:
            _rank_sorted_wide_njit(Ys, rs)
        else:
            _rank_sorted_njit(Ys, rs)
        rank[order] = rs
    return rank


# ------------------------------------------------------------------------------------------------------- @cuda.jit
_THREADS = 128


@cuda.jit(device=True)
def _dominates_dev(Y, a, b):
    "Row a dominates row b."
    strict = False
    for j in range(Y.shape[1]):
        if Y[a, j] > Y[b, j]:
            return False
        if Y[a, j] < Y[b, j]:
            strict = True
    return strict


@cuda.jit
def _count_dominators_kernel(Y, count, first):
    "count[i]: rows dominating row i; first[i]: no lower-index row is identical to row i."
    i = cuda.grid(1)
    n = Y.shape[0]
    if i >= n:
        return
    c = 0
    f = 1
    for j in range(n):
        if _dominates_dev(Y, j, i):
            c += 1
        elif j < i and f == 1:
            same = True
            for k in range(Y.shape[1]):
                if Y[j, k] != Y[i, k]:
                    same = False
            if same:
                f = 0
    count[i] = c
    first[i] = f


@cuda.jit
def _peel_kernel(Y, count, rank, front, n_front, nxt, n_next, r):
    """Rows still unranked lose the members of front r (front[:n_front]) that dominate them; a row whose count
    reaches 0 gets rank r + 1 and is appended to nxt."""
    i = cuda.grid(1)
    if i >= Y.shape[0] or rank[i] >= 0:
        return
    c = count[i]
    for t in range(n_front):
        if _dominates_dev(Y, front[t], i):
            c -= 1
    count[i] = c
    if c == 0:
        rank[i] = r + 1
        nxt[cuda.atomic.add(n_next, 0, 1)] = i


@cuda.jit
def _first_front_kernel(count, rank, front, n_front):
    i = cuda.grid(1)
    if i < count.shape[0] and count[i] == 0:
        rank[i] = 0
        front[cuda.atomic.add(n_front, 0, 1)] = i


def _blocks(n):
    return max(1, (n + _THREADS - 1) // _THREADS)


def nondominated_mask_cuda(Y, keep_duplicates: bool = True) -> np.ndarray:
    "CUDA kernel: one thread per row counts its dominators (and finds an identical earlier row)."
    Y = check_points(Y)
    n = len(Y)
    if n == 0:
        return np.ones(0, bool)
    dY = cuda.to_device(Y)
    count, first = cuda.device_array(n, np.int64), cuda.device_array(n, np.int8)
    _count_dominators_kernel[_blocks(n), _THREADS](dY, count, first)
    mask = count.copy_to_host() == 0
    if not keep_duplicates:
        mask &= first.copy_to_host().astype(bool)
    return mask


def pareto_rank_cuda(Y) -> np.ndarray:
    "CUDA kernel: Deb's non-dominated sort, one thread per row, one launch per front."
    Y = check_points(Y)
    n = len(Y)
    if n == 0:
        return np.zeros(0, np.int64)
    dY = cuda.to_device(Y)
    count, first = cuda.device_array(n, np.int64), cuda.device_array(n, np.int8)
    _count_dominators_kernel[_blocks(n), _THREADS](dY, count, first)
    rank = cuda.to_device(np.full(n, -1, np.int64))
    bufs = [cuda.device_array(n, np.int64), cuda.device_array(n, np.int64)]
    n_cur = cuda.to_device(np.zeros(1, np.int64))
    _first_front_kernel[_blocks(n), _THREADS](count, rank, bufs[0], n_cur)
    size, done, r = int(n_cur.copy_to_host()[0]), 0, 0
    while size > 0:
        done += size
        if done == n:
            break
        n_next = cuda.to_device(np.zeros(1, np.int64))
        _peel_kernel[_blocks(n), _THREADS](dY, count, rank, bufs[r % 2], size, bufs[(r + 1) % 2], n_next, r)
        size, r = int(n_next.copy_to_host()[0]), r + 1
    return rank.copy_to_host()


# ------------------------------------------------------------------------------------------------------- benchmark
def benchmark(size: str = "default", repeat: int = 3) -> dict:
    "Non-dominated sorting of uniform random points in 2, 3 and 4 objectives: NumPy reference, @njit, moocore."
    size = check_choice("size", size, ("small", "default", "full"))
    import moocore

    from icml25nb import pareto as block  # the public block functions a user calls (maximise, checks, the kernel)
    n = {"small": 2000, "default": 10000, "full": 20000}[size]
    rng = np.random.default_rng(0)
    secs, ratios, agree, values = {}, {}, {}, {}
    ref_key = None
    for m in (2, 3, 4):
        Y = rng.random((n, m))
        pareto_rank(Y[:10])  # compile
        fns = {f"njit ENS, m={m}": lambda Y=Y: pareto_rank(Y),
               f"moocore.pareto_rank, m={m}": lambda Y=Y: moocore.pareto_rank(Y),
               f"pareto.pareto_rank (block), m={m}": lambda Y=Y: block.pareto_rank(Y),
               f"njit nondominated_mask, m={m}": lambda Y=Y: nondominated_mask(Y),
               f"pareto.nondominated_mask (block), m={m}": lambda Y=Y: block.nondominated_mask(Y)}
        if m >= 4:  # the binary-search variant, which pareto_rank uses for m <= 3 only
            fns[f"njit ENS-BS (linked fronts), m={m}"] = lambda Y=Y: _ranks(Y, wide=False)
        secs.update(_race(fns, max(1, repeat)))
        key = f"numpy reference (Deb, dominance matrix), m={m}"
        t0 = time.perf_counter()  # one call (seconds at n = 10^4): timed once, its result kept
        refr = pareto_rank_ref(Y)
        secs[key] = time.perf_counter() - t0
        ref_key = ref_key or key
        ours, theirs = pareto_rank(Y), np.asarray(moocore.pareto_rank(Y), np.int64)
        agree[f"m={m}"] = bool(np.array_equal(ours, theirs) and np.array_equal(ours, refr))
        ratios[f"m={m}: numpy reference / njit"] = secs[key] / secs[f"njit ENS, m={m}"]
        ratios[f"m={m}: moocore / njit"] = secs[f"moocore.pareto_rank, m={m}"] / secs[f"njit ENS, m={m}"]
        ratios[f"m={m}: block pareto_rank / njit"] = secs[f"pareto.pareto_rank (block), m={m}"] / secs[f"njit ENS, m={m}"]
        ratios[f"m={m}: block nondominated_mask / njit"] = (secs[f"pareto.nondominated_mask (block), m={m}"]
                                                          / secs[f"njit nondominated_mask, m={m}"])
        agree[f"m={m}, block"] = bool(np.array_equal(block.pareto_rank(Y), pareto_rank(Y))
                                      and np.array_equal(block.nondominated_mask(Y), nondominated_mask(Y)))
        if m >= 4:
            ratios[f"m={m}: ENS-BS / ENS-SS"] = secs[f"njit ENS-BS (linked fronts), m={m}"] / secs[f"njit ENS, m={m}"]
            agree[f"m={m}"] = agree[f"m={m}"] and bool(np.array_equal(_ranks(Y, wide=False), ours))
        for k, rk in ((key, refr), (f"njit ENS, m={m}", ours), (f"moocore.pareto_rank, m={m}", theirs)):
            values[k] = int(rk.max()) + 1  # number of fronts
    return {"kernel": "pareto", "task": f"non-dominated sorting (front ranks) of {n} uniform points in [0,1]^m, "
            f"m = 2, 3, 4; 1 thread; value: number of fronts; ratios > 1: njit faster", "seconds": secs, "reference": ref_key,
            "values": values, "ratios": ratios, "ranks equal (njit, moocore, reference)": agree}
