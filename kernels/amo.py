"""Brute-force counting of acyclic moral orientations (AMOs) of a small undirected graph.

An AMO orients every edge so that there is no directed cycle and no v-structure a -> c <- b with a, b
non-adjacent. Every acyclic orientation has topological orderings; among them exactly one is *canonical*: the
greedy ordering that always takes the smallest-labelled source. So the number of AMOs equals the number of
vertex permutations that are (i) moral: every vertex's earlier neighbours are pairwise adjacent, and (ii)
canonical: for every position p, scanning back from p-1, a neighbour of pi_p is met before any vertex larger
than pi_p. The kernels test all n! permutations (decoded from their index by the factorial number system), so
they are for small graphs only (n <= 10); the chapter uses them to check the exact counting algorithms.

- `amo_count_ref`: the definition, in Python: the number of *distinct* orientations induced by moral
  permutations (no canonical-order trick), for cross-checking.
- `amo_count_njit`: the canonical-permutation count, `@njit(parallel=True)` over permutation indices.
- `amo_count_cuda`: the same, one CUDA thread per permutation index, counts reduced per block.
"""
from __future__ import annotations

import itertools
import math
import time

import numpy as np
from numba import cuda, njit, prange

from icml25nb.core import check_array, check_int
from icml25nb.kernels._bench import race as _race
from icml25nb.kernels._cuda import block_sum

MAX_N = 12

__all__ = ["MAX_N", "adjacency_masks", "amo_count_ref", "amo_count_njit", "amo_count_cuda", "benchmark"]


def adjacency_masks(n: int, edges) -> np.ndarray:
    "int64 bitmask of each vertex's neighbours, for vertices 0..n-1 and an iterable of (u, v) pairs."
    n = check_int("n", n, None)
    if not 0 <= n <= MAX_N:
        raise ValueError(f"brute force needs 0 <= n <= {MAX_N} vertices, got n={n}")
    if not isinstance(edges, np.ndarray):  # any iterable of pairs (a generator, a list, networkx's edge view)
        try:
            edges = list(edges)
        except TypeError:
            raise TypeError(f"edges must be an iterable of (u, v) pairs, got {type(edges).__name__}") from None
    e = check_array("edges", edges, dtype=np.int64)
    if e.size == 0:
        e = e.reshape(0, 2)
    if e.ndim != 2 or e.shape[1] != 2:
        raise ValueError(f"edges must be (u, v) pairs, an (E, 2) array, got shape {e.shape}")
    adj = np.zeros(n, dtype=np.int64)
    for u, v in e.tolist():
        if not (0 <= u < n and 0 <= v < n) or u == v:
            raise ValueError(f"edges: ({u}, {v}) is not between two distinct vertices of 0..{n - 1}")
        adj[u] |= 1 << v
        adj[v] |= 1 << u
    return adj


def _check(adj) -> np.ndarray:
    adj = check_array("adj", adj, dtype=np.int64)
    n = adj.shape[0] if adj.ndim else 0
    if adj.ndim != 1 or n > MAX_N:
        raise ValueError(f"adj must be a 1-D int64 mask array of at most {MAX_N} vertices, got shape {adj.shape}")
    full = (1 << n) - 1
    for v in range(n):
        a = int(adj[v])
        if a & ~full or (a >> v) & 1:
            raise ValueError(f"adj: the mask of vertex {v} has bits outside 0..{n - 1} or a self-loop")
        for u in range(n):
            if (a >> u) & 1 and not (int(adj[u]) >> v) & 1:
                raise ValueError(f"adj is not symmetric: {v} -> {u} but not back")
    return adj


def amo_count_ref(adj) -> int:
    "Number of distinct acyclic moral orientations: the set of orientations induced by moral vertex orders."
    adj = _check(adj)
    n = len(adj)
    edges = [(u, v) for u in range(n) for v in range(u + 1, n) if (int(adj[u]) >> v) & 1]
    seen = set()
    for perm in itertools.permutations(range(n)):
        pos = [0] * n
        for i, v in enumerate(perm):
            pos[v] = i
        moral = True
        for v in range(n):
            earlier = [u for u in range(n) if (int(adj[v]) >> u) & 1 and pos[u] < pos[v]]
            if any(not (int(adj[a]) >> b) & 1 for a, b in itertools.combinations(earlier, 2)):
                moral = False
                break
        if moral:
            seen.add(tuple(pos[u] < pos[v] for u, v in edges))
    return len(seen)


@njit(cache=True, nogil=True)
def _decode(index, n, perm, avail):
    "The permutation with rank `index` in the factorial number system (lexicographic order), into `perm`."
    for i in range(n):
        avail[i] = i
    m = n
    for i in range(n):
        f = 1
        for j in range(2, m):
            f *= j
        d = index // f
        index -= d * f
        perm[i] = avail[d]
        for j in range(d, m - 1):
            avail[j] = avail[j + 1]
        m -= 1


@njit(cache=True, nogil=True)
def _moral_canonical(adj, perm, n):
    placed = 0
    for p in range(n):
        w = perm[p]
        before = adj[w] & placed  # w's parents in the induced orientation
        b = before
        while b:
            u = 0
            while not (b >> u) & 1:
                u += 1
            b &= b - 1
            if (before & ~adj[u]) & ~(np.int64(1) << u):
                return False  # two parents of w are not adjacent: a v-structure
        for t in range(p - 1, -1, -1):  # canonical: a neighbour before any larger vertex, scanning back
            x = perm[t]
            if (adj[w] >> x) & 1:
                break
            if x > w:
                return False
        placed |= np.int64(1) << w
    return True


@njit(cache=True, parallel=True)
def _count_njit(adj, total, chunks):
    n = adj.shape[0]
    counts = np.zeros(chunks, dtype=np.int64)
    per = (total + chunks - 1) // chunks
    for c in prange(chunks):
        perm = np.empty(n, dtype=np.int64)
        avail = np.empty(n, dtype=np.int64)
        lo, hi = c * per, min(total, (c + 1) * per)
        k = 0
        for idx in range(lo, hi):
            _decode(idx, n, perm, avail)
            if _moral_canonical(adj, perm, n):
                k += 1
        counts[c] = k
    return counts.sum()


def amo_count_njit(adj) -> int:
    "Number of AMOs: moral canonical permutations among all n! (the @njit kernel, parallel over indices)."
    adj = _check(adj)
    n = len(adj)
    if n <= 1:
        return 1
    return int(_count_njit(adj, math.factorial(n), 64))


_cuda_kernel = None


def _make_cuda_kernel():
    decode = cuda.jit(device=True)(_decode.py_func)
    check = cuda.jit(device=True)(_moral_canonical.py_func)

    @cuda.jit
    def kernel(adj, n, total, out):
        perm = cuda.local.array(MAX_N, dtype=np.int64)
        avail = cuda.local.array(MAX_N, dtype=np.int64)
        hits = cuda.shared.array(128, dtype=np.int64)
        i = cuda.grid(1)
        tid = cuda.threadIdx.x
        hits[tid] = 0
        if i < total:
            decode(i, n, perm, avail)
            if check(adj, perm, n):
                hits[tid] = 1
        cuda.syncthreads()
        block_sum(hits, tid, 128)
        if tid == 0:
            out[cuda.blockIdx.x] = hits[0]

    return kernel


def amo_count_cuda(adj) -> int:
    "Number of AMOs by the CUDA kernel: one thread per permutation index, block sums of 128 threads."
    global _cuda_kernel
    adj = _check(adj)
    n = len(adj)
    if n <= 1:
        return 1
    if _cuda_kernel is None:
        _cuda_kernel = _make_cuda_kernel()
    total = math.factorial(n)
    blocks = (total + 127) // 128
    out = cuda.device_array(blocks, dtype=np.int64)
    _cuda_kernel[blocks, 128](cuda.to_device(adj), n, total, out)
    return int(out.copy_to_host().sum())


def benchmark(size: str = "default", repeat: int = 3) -> dict:
    "Time the Python reference (distinct orientations) against the @njit kernel on the complete graph K_n."
    import numba
    n = {"small": 6, "default": 8, "full": 9}[size]
    adj = adjacency_masks(n, itertools.combinations(range(n), 2))
    amo_count_njit(adj)  # compile
    fns = {"python reference (distinct orientations)": amo_count_ref, "njit (canonical orders)": amo_count_njit}
    secs, values = {}, {}
    for name, fn in fns.items():
        best = float("inf")
        for _ in range(repeat if "njit" in name else 1):
            t0 = time.perf_counter()
            values[name] = fn(adj)
            best = min(best, time.perf_counter() - t0)
        secs[name] = best
    # the public function a user calls (the MEC chapter's brute force on a networkx graph), raced with the kernel
    import networkx as nx
    from icml25nb.causal.mec import count_amo_bruteforce
    G = nx.complete_graph(n)
    best = _race({"njit": lambda: amo_count_njit(adj), "public": lambda: count_amo_bruteforce(G)}, max(repeat, 1))
    secs["njit (canonical orders)"] = best["njit"]
    secs["public: icml25nb.causal.mec.count_amo_bruteforce (networkx graph in)"] = best["public"]
    values["public: icml25nb.causal.mec.count_amo_bruteforce (networkx graph in)"] = count_amo_bruteforce(G)
    return {"kernel": "amo", "task": f"brute-force count of the acyclic moral orientations of K_{n} "
            f"({math.factorial(n)} permutations); {numba.get_num_threads()} numba thread(s)", "seconds": secs,
            "values": values, "reference": "python reference (distinct orientations)",
            "both equal n!": all(v == math.factorial(n) for v in values.values()),
            "ratios": {"public / njit": best["public"] / best["njit"]}}
