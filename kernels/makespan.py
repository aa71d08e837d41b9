"""Makespan (longest path) of one pipeline schedule DAG under many candidate plans at once.

A pipeline plan (split points, a schedule) is simulated as a DAG whose vertices are the operations of the step:
the forward and the backward of every (stage, micro-batch), plus a sink. For a fixed schedule, number of stages and
of micro-batches, the DAG's *shape* is the same for every candidate split; only the weights change (how long each
stage's forward and backward take, how long each transfer between two stages takes). The planner therefore
evaluates thousands of candidate splits against one DAG template, and that evaluation is this kernel.

The template, in topological order (vertex ``v`` only has predecessors ``u < v``):

* ``ptr`` (N + 1,) int64 and ``pred`` (E,) int64: CSR lists of predecessors, ``pred[ptr[v]:ptr[v + 1]]``;
* ``slot`` (E,) int64: the weight added on that edge, ``-1`` for none, else a column of ``extra`` (a transfer time,
  or the optimizer step before the sink); ``-inf`` in ``extra`` switches the edge off for that plan (two stages that
  exchange nothing under this split);
* ``kind`` (N,) int64: the column of ``dur`` that holds the vertex's duration (forward of stage s, backward of
  stage s, zero for the sink).

Per plan p (rows of float64 ``dur`` (P, K) and ``extra`` (P, X)) the vertices start as early as their
predecessors allow::

    start[v]  = max(0, max_{e = (u -> v)} finish[u] + extra[p, slot[e]])     (extra taken as 0 for slot -1)
    finish[v] = start[v] + dur[p, kind[v]]
    makespan[p] = max_v finish[v]

Three implementations with one signature ``(ptr, pred, slot, kind, dur, extra) -> makespan (P,)``:

* ``makespan_ref``: NumPy, one vectorised step over all plans per vertex (the definition, and fast enough for a
  few hundred plans);
* ``makespan_njit``: ``@njit``, plan by plan, one finish-time buffer reused;
* ``makespan_cuda``: ``@cuda.jit``, one thread per plan, each with its own row of a finish-time scratch array in
  global memory (tested under the CUDA simulator; no GPU was lent when it was written, so ``benchmark`` has no
  CUDA row unless a GPU is present).

``makespan_objgraph`` is what the authors' planner does for one plan (and what a user would write): a Python dict
from vertex to (successor, weight) lists, a depth-first topological sort and a relaxation pass. ``benchmark`` times
it and ``networkx.dag_longest_path_length`` against the kernels on 1F1B with 8 stages and 32 micro-batches, on a DAG
built here (``schedule_dag``: the kernel package imports no chapter); ``bench/makespan_pipeline.py`` runs the same
benchmark on real splits of the pipeline chapter's transformer. An outside side-by-side run timed the authors' own
``_valuate_points`` (MerHS/pfeife) about 1.4x faster per plan than ``makespan_objgraph``: read the njit / object
graph ratio as about 1.4x larger than njit / the authors' code.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, njit

from icml25nb.core import check_array, check_int, check_memory
from icml25nb.kernels._bench import best_time as _best_time, race as _race

__all__ = ["check_makespan_inputs", "makespan_ref", "makespan_njit", "makespan_cuda", "makespan_objgraph",
           "schedule_dag", "random_plan_weights", "benchmark"]


def check_makespan_inputs(ptr, pred, slot, kind, dur, extra):
    "The six arrays validated and made contiguous (int64 / float64); a one-line ValueError naming the argument."
    ptr, pred, slot, kind = (check_array(name, x, dtype=np.int64) for name, x in
                             (("ptr", ptr), ("pred", pred), ("slot", slot), ("kind", kind)))
    dur = check_array("dur", dur, finite=False)
    extra = check_array("extra", extra, finite=False)
    if ptr.ndim != 1 or len(ptr) < 2 or ptr[0] != 0 or np.any(np.diff(ptr) < 0):
        raise ValueError("ptr must be a 1-D non-decreasing CSR pointer starting at 0 with at least one vertex")
    n = len(ptr) - 1
    if pred.ndim != 1 or len(pred) != ptr[-1]:
        raise ValueError(f"pred must be 1-D with ptr[-1] = {ptr[-1]} entries, got shape {pred.shape}")
    if slot.shape != pred.shape:
        raise ValueError(f"slot must have the shape of pred {pred.shape}, got {slot.shape}")
    if kind.shape != (n,):
        raise ValueError(f"kind must have shape ({n},), one entry per vertex, got {kind.shape}")
    if dur.ndim != 2 or dur.shape[1] < 1:
        raise ValueError(f"dur must be 2-D (plans, kinds), got shape {dur.shape}")
    if extra.ndim != 2 or extra.shape[0] != dur.shape[0]:
        raise ValueError(f"extra must be 2-D with {dur.shape[0]} rows like dur, got shape {extra.shape}")
    v_of_edge = np.repeat(np.arange(n), np.diff(ptr))
    if len(pred) and (pred.min() < 0 or np.any(pred >= v_of_edge)):
        raise ValueError("pred must list, for every vertex v, predecessors u with 0 <= u < v (topological order)")
    if len(slot) and (slot.min() < -1 or slot.max() >= extra.shape[1]):
        raise ValueError(f"slot must be -1 or a column of extra (< {extra.shape[1]})")
    if kind.min() < 0 or kind.max() >= dur.shape[1]:
        raise ValueError(f"kind must index a column of dur (< {dur.shape[1]})")
    if not np.isfinite(dur).all() or (dur < 0).any():
        raise ValueError("dur must be finite and non-negative")
    if np.isnan(extra).any() or np.isposinf(extra).any():
        raise ValueError("extra must be finite or -inf (an edge switched off)")
    # a longest path has at most n vertices and n - 1 edges: if n (max dur + max extra) is finite no sum overflows
    # (extra = 1e308 gave a makespan of inf from finite inputs)
    top = (float(dur.max()) if dur.size else 0.0) + max(0.0, float(extra.max()) if extra.size else 0.0)
    if not n * top < math.inf:
        raise ValueError(f"dur and extra are too large: a makespan could overflow float64 (n_vertices x (max dur + "
                         f"max extra) = {n} x {top:g}); rescale dur and extra (e.g. to other time units)")
    return ptr, pred, slot, kind, dur, extra


def makespan_ref(ptr, pred, slot, kind, dur, extra):
    "NumPy reference: vertex by vertex in topological order, all plans at once."
    ptr, pred, slot, kind, dur, extra = check_makespan_inputs(ptr, pred, slot, kind, dur, extra)
    P, n = dur.shape[0], len(ptr) - 1
    ext = np.concatenate([extra, np.zeros((P, 1))], axis=1)  # slot -1 reads the last column, 0
    finish = np.empty((P, n))
    for v in range(n):
        a, b = ptr[v], ptr[v + 1]
        start = np.zeros(P)
        if b > a:
            cand = finish[:, pred[a:b]] + ext[:, slot[a:b]]
            start = np.maximum(start, cand.max(axis=1))
        finish[:, v] = start + dur[:, kind[v]]
    return finish.max(axis=1)


@njit(cache=True)
def _makespan_njit(ptr, pred, slot, kind, dur, extra, out):
    P = dur.shape[0]
    n = ptr.shape[0] - 1
    finish = np.empty(n)
    for p in range(P):
        best = 0.0
        for v in range(n):
            start = 0.0
            for e in range(ptr[v], ptr[v + 1]):
                t = finish[pred[e]]
                s = slot[e]
                if s >= 0:
                    t += extra[p, s]
                if t > start:
                    start = t
            f = start + dur[p, kind[v]]
            finish[v] = f
            if f > best:
                best = f
        out[p] = best


def makespan_njit(ptr, pred, slot, kind, dur, extra):
    "CPU kernel for `makespan_ref`: plan by plan, one finish-time buffer."
    ptr, pred, slot, kind, dur, extra = check_makespan_inputs(ptr, pred, slot, kind, dur, extra)
    out = np.empty(dur.shape[0])
    _makespan_njit(ptr, pred, slot, kind, dur, extra, out)
    return out


@cuda.jit
def _makespan_cuda_kernel(ptr, pred, slot, kind, dur, extra, finish, out):
    p = cuda.grid(1)
    if p >= dur.shape[0]:
        return
    n = ptr.shape[0] - 1
    best = 0.0
    for v in range(n):
        start = 0.0
        for e in range(ptr[v], ptr[v + 1]):
            t = finish[p, pred[e]]
            s = slot[e]
            if s >= 0:
                t += extra[p, s]
            if t > start:
                start = t
        f = start + dur[p, kind[v]]
        finish[p, v] = f
        if f > best:
            best = f
    out[p] = best


_THREADS = 128


def makespan_cuda(ptr, pred, slot, kind, dur, extra):
    "CUDA kernel for `makespan_ref`: one thread per plan, finish times in a (plans, vertices) scratch array."
    ptr, pred, slot, kind, dur, extra = check_makespan_inputs(ptr, pred, slot, kind, dur, extra)
    P, n = dur.shape[0], len(ptr) - 1
    out = cuda.device_array(P)
    finish = cuda.device_array((P, n))
    blocks = (P + _THREADS - 1) // _THREADS
    _makespan_cuda_kernel[blocks, _THREADS](cuda.to_device(ptr), cuda.to_device(pred), cuda.to_device(slot),
                                            cuda.to_device(kind), cuda.to_device(dur), cuda.to_device(extra),
                                            finish, out)
    return out.copy_to_host()


def makespan_objgraph(ptr, pred, slot, kind, dur, extra):
    """The same numbers the way a planner written in plain Python computes them, one plan at a time: a dict from
    vertex to its (successor, weight) list, weight = the vertex's duration plus the edge's extra, a recursive
    depth-first topological sort and one relaxation pass from every source (the style of the authors' planner)."""
    ptr, pred, slot, kind, dur, extra = check_makespan_inputs(ptr, pred, slot, kind, dur, extra)
    n = len(ptr) - 1
    edges = [(int(pred[e]), v, int(slot[e])) for v in range(n) for e in range(ptr[v], ptr[v + 1])]
    out = np.empty(dur.shape[0])
    for p in range(dur.shape[0]):
        d = dur[p]
        x = extra[p]
        graph = {("op", v): [] for v in range(n)}
        graph["sink"] = []
        for u, v, s in edges:
            w = d[kind[u]] + (x[s] if s >= 0 else 0.0)
            if w != -math.inf:
                graph[("op", u)].append((("op", v), w))
        for v in range(n):
            graph[("op", v)].append(("sink", d[kind[v]]))
        order, seen = [], set()

        def visit(node):  # depth-first post-order, on an explicit stack (a recursion fails on a long chain)
            seen.add(node)
            stack = [(node, iter(graph[node]))]
            while stack:
                cur, it = stack[-1]
                for nxt, _ in it:
                    if nxt not in seen:
                        seen.add(nxt)
                        stack.append((nxt, iter(graph[nxt])))
                        break
                else:
                    stack.pop()
                    order.append(cur)

        for node in graph:
            if node not in seen:
                visit(node)
        dist = {node: 0.0 for node in graph}
        for node in reversed(order):
            for nxt, w in graph[node]:
                if dist[node] + w > dist[nxt]:
                    dist[nxt] = dist[node] + w
        out[p] = dist["sink"]
    return out


def _networkx_makespan(ptr, pred, slot, kind, dur, extra) -> np.ndarray:
    "networkx.dag_longest_path_length on one DiGraph per plan (edge weight = tail duration + extra, plus a sink)."
    import networkx as nx
    n = len(ptr) - 1
    out = np.empty(dur.shape[0])
    for p in range(dur.shape[0]):
        G = nx.DiGraph()
        for v in range(n):
            for e in range(ptr[v], ptr[v + 1]):
                w = dur[p, kind[pred[e]]] + (extra[p, slot[e]] if slot[e] >= 0 else 0.0)
                if w != -math.inf:
                    G.add_edge(int(pred[e]), v, weight=w)
            G.add_edge(v, n, weight=dur[p, kind[v]])
        out[p] = nx.dag_longest_path_length(G, weight="weight")
    return out


def schedule_dag(n_stages: int, n_micro: int, all_pairs: bool = True) -> tuple:
    """The benchmark's DAG template, built here so that the kernel package needs no chapter: 1F1B with one stage per
    device (device s runs n_stages - s forwards, then alternates backward and forward), a transfer edge between every
    two stages (`all_pairs`, as a model with skip connections needs; columns of `extra` 0.. in (a, b) order) or only
    between neighbours, and the optimizer step of each device before the sink (the last columns). Returns
    (ptr, pred, slot, kind, n_extra); `kind`: forward of stage s is column s, its backward S + s, the sink 2S. The
    pipeline chapter builds the same DAG for any schedule (`icml25nb.efficient.pipeline.schedule_template`)."""
    n_stages, n_micro = check_int("n_stages", n_stages, 1, 1024), check_int("n_micro", n_micro, 1, 1 << 16)
    check_memory("n_micro", 2.0 * n_stages * n_micro * (n_stages + 4), 8)  # vertices x (transfer) edges
    S, B = int(n_stages), int(n_micro)
    if S < 1 or B < 1:
        raise ValueError(f"n_stages and n_micro must be at least 1, got {n_stages}, {n_micro}")
    pairs = [(a, b) for a in range(S) for b in range(a + 1, S) if all_pairs or b == a + 1]
    col = {ab: i for i, ab in enumerate(pairs)}
    vid = lambda s, m, f: (s * B + m) * 2 + (0 if f else 1)
    n = 2 * S * B + 1
    preds = [[] for _ in range(n)]
    for s in range(S):
        warm = min(B, S - s)
        order = [(m, True) for m in range(warm)]
        for m in range(B):
            order.append((m, False))
            if warm + m < B:
                order.append((warm + m, True))
        for (m0, f0), (m1, f1) in zip(order, order[1:]):
            preds[vid(s, m1, f1)].append((vid(s, m0, f0), -1))
        preds[n - 1].append((vid(s, *order[-1]), len(pairs) + s))
        for m in range(B):
            for a in range(s):
                if (a, s) in col:
                    preds[vid(s, m, True)].append((vid(a, m, True), col[a, s]))
            preds[vid(s, m, False)].append((vid(s, m, True), -1))
            for b in range(s + 1, S):
                if (s, b) in col:
                    preds[vid(s, m, False)].append((vid(b, m, False), col[s, b]))
    indeg = [len(p) for p in preds]
    succ = [[] for _ in range(n)]
    for v, p in enumerate(preds):
        for u, _ in p:
            succ[u].append(v)
    ready, topo = [v for v in range(n) if indeg[v] == 0], []
    while ready:  # Kahn's algorithm (1F1B never deadlocks)
        u = ready.pop()
        topo.append(u)
        for v in succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    topo.sort(key=lambda v: v == n - 1)  # the sink last
    new = np.empty(n, np.int64)
    new[topo] = np.arange(n)
    ptr, pred, slot, kind = [0], [], [], []
    for v in topo:
        for u, sl in sorted(preds[v], key=lambda x: new[x[0]]):
            pred.append(new[u])
            slot.append(sl)
        ptr.append(len(pred))
        s, f = v // 2 // B, v % 2 == 0
        kind.append(2 * S if v == n - 1 else (s if f else S + s))
    return (np.asarray(ptr, np.int64), np.asarray(pred, np.int64), np.asarray(slot, np.int64),
            np.asarray(kind, np.int64), len(pairs) + S)


def random_plan_weights(n_stages: int, n_extra: int, n_plans: int, seed: int = 0, all_pairs: bool = True) -> tuple:
    """`dur` and `extra` of `n_plans` random plans for `schedule_dag`: lognormal stage times (backward 2x forward),
    transfers between neighbouring stages, the other pairs switched off (-inf) as a chain's split leaves them.
    `n_extra` must be the one `schedule_dag(n_stages, ., all_pairs)` returns (a ValueError naming it otherwise)."""
    n_stages, n_extra = check_int("n_stages", n_stages, 1, 1024), check_int("n_extra", n_extra, 0)
    n_plans, seed = check_int("n_plans", n_plans, 0), check_int("seed", seed, 0, 2**63 - 1)
    S = int(n_stages)
    want = (S * (S - 1) // 2 if all_pairs else S - 1) + S  # what schedule_dag returns: one column a pair, one a stage
    if n_extra != want:  # n_extra = 0 for 2 stages was an IndexError
        raise ValueError(f"n_extra must be {want} for n_stages = {S} (all_pairs = {bool(all_pairs)}), the n_extra "
                         f"that schedule_dag returns, got {n_extra}")
    check_memory("n_plans", float(n_plans) * (3 * n_stages + 1 + n_extra), 8)
    rng = np.random.default_rng(seed)
    S, P = int(n_stages), int(n_plans)
    fwd = rng.lognormal(np.log(4e-3), 0.5, (P, S))
    dur = np.concatenate([fwd, 2 * fwd * rng.lognormal(0, 0.05, (P, S)), np.zeros((P, 1))], axis=1)
    extra = np.full((P, n_extra), -np.inf)
    pairs = [(a, b) for a in range(S) for b in range(a + 1, S) if all_pairs or b == a + 1]
    for i, (a, b) in enumerate(pairs):
        if b == a + 1:
            extra[:, i] = 2e-5 + rng.uniform(0.5, 1.5, P) * 8e6 / 12e9
    extra[:, len(pairs):] = rng.uniform(0, 1e-4, (P, S))
    return dur, extra


def benchmark(size: str = "default", repeat: int = 3, inputs: tuple | None = None, label: str = "",
              public: tuple | None = None) -> dict:
    """Makespans of many random plans of one 8-stage 1F1B DAG with 32 micro-batches (`schedule_dag`, random stage
    times: the shape, not the numbers, sets the cost): the Python object graph (authors' style) and networkx per
    plan, the NumPy reference, @njit (and CUDA on a GPU). `inputs` = (ptr, pred, slot, kind, dur, extra) replaces
    them (bench/makespan_pipeline.py passes real splits of the pipeline chapter's transformer). `public` = (label,
    zero-argument callable): the public function a user calls on the same plans, raced with the kernel (the script
    passes the chapter's `evaluate_plans`; this package imports no chapter, so `icml25nb bench makespan` has no
    such row)."""
    if size not in ("small", "default", "full"):
        raise ValueError(f"size must be 'small', 'default' or 'full', got {size!r}")
    n_plans, n_slow = {"small": (500, 20), "default": (10_000, 100), "full": (100_000, 200)}[size]
    S, B = 8, 32
    if inputs is None:
        ptr, pred, slot, kind, n_extra = schedule_dag(S, B)
        dur, extra = random_plan_weights(S, n_extra, n_plans, seed=1)
        label = label or "random stage times"
    else:
        ptr, pred, slot, kind, dur, extra = check_makespan_inputs(*inputs)
        n_plans = dur.shape[0]
        n_slow = min(n_slow, n_plans)
    args = (ptr, pred, slot, kind)
    few = (dur[:n_slow], extra[:n_slow])
    rows, values = {}, {}
    ref_few = makespan_ref(*args, *few)
    rows[f"Python object graph, per plan ({n_slow} plans, scaled)"] = _best_time(
        lambda: makespan_objgraph(*args, *few), min(repeat, 1)) * n_plans / n_slow
    rows[f"networkx dag_longest_path_length, per plan ({n_slow} plans, scaled)"] = _best_time(
        lambda: _networkx_makespan(*args, *few), min(repeat, 1)) * n_plans / n_slow
    rows["NumPy reference (vectorised over plans)"] = _best_time(lambda: makespan_ref(*args, dur, extra),
                                                                 min(repeat, 1))
    rows["njit"] = _best_time(lambda: makespan_njit(*args, dur, extra), repeat)
    if public is not None:
        # the public function a user calls (bench/makespan_pipeline.py passes the pipeline chapter's evaluate_plans on
        # the same plans: this package imports no chapter), raced with the kernel
        pub_label, pub_fn = public
        best = _race({"njit": lambda: makespan_njit(*args, dur, extra), "public": pub_fn}, max(repeat, 1))
        rows["njit"] = best["njit"]
        rows[f"public: {pub_label}"] = best["public"]
    got = makespan_njit(*args, dur, extra)
    values["max |njit - reference|, all plans"] = float(np.abs(got - makespan_ref(*args, dur, extra)).max())
    values["max |object graph - reference|"] = float(np.abs(makespan_objgraph(*args, *few) - ref_few).max())
    values["max |networkx - reference|"] = float(np.abs(_networkx_makespan(*args, *few) - ref_few).max())
    values["vertices, edges of the DAG"] = f"{len(ptr) - 1}, {len(pred)}"
    import os
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1" and cuda.is_available():
        rows["cuda (one thread per plan, with transfers)"] = _best_time(lambda: makespan_cuda(*args, dur, extra),
                                                                        repeat)
        values["max |cuda - reference|"] = float(np.abs(makespan_cuda(*args, dur, extra) - got).max())
    ratios = {f"njit vs {k}": rows[k] / rows["njit"] for k in rows if k != "njit" and not k.startswith("public")}
    if public is not None:
        ratios[f"public {pub_label} / njit"] = best["public"] / best["njit"]
    return {"kernel": "makespan", "task": f"{n_plans} candidate plans of 8 stages, 1F1B, 32 micro-batches ({label})",
            "seconds": rows, "reference": "NumPy reference (vectorised over plans)", "values": values,
            "ratios": ratios}
