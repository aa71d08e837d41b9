"""Run every hand-written ``@cuda.jit`` kernel of ``icml25nb.kernels`` on a GPU against its ``@njit`` twin.

For each kernel module (amo, contraction, hclust, ista, makespan, mmd, mnl, pareto, patch_score, pointmass, quant, rng,
sketchann, softvi, springs, tanimoto, vmf, wl, kcenter, segpool) the script builds
one realistic input, runs the ``@njit`` CPU kernel and the ``@cuda.jit`` kernel on it and prints one line per check:

    kernel  check  size  agreement (exact, or max abs / rel difference and the tolerance)  PASS/FAIL
    njit seconds  cuda seconds  cuda/njit ratio

What "agree" means (the kernels' own tests use the same criteria under the CUDA simulator):

* exact (bit for bit): rng.uniform_fill, quant (NF4 and mixed 1/2/4-bit rows: integer codes and float32 scales),
  hclust.count_votes (integer votes from counter-based streams), amo (an integer count), pareto (masks and ranks),
  wl (colour ids), tanimoto (popcount ratios computed the same way), contraction with unit
  weights and with an infinite boost (all rates of a phase equal: the keys need no logarithm);
* contraction with a finite boost: the keys use ``log``, and a GPU's ``log`` may differ from the C library's in the
  last place, which changes a trial only if two clocks are within one ulp: at most 0.5% of the trials may differ;
* vmf.wood_sample: |diff| <= 1e-9 per coordinate, except that up to 1e-5 of the draws may differ entirely (a
  rejection test decided the other way by a last-place difference of ``log``/``exp``);
* vmf.top1 (float32): the same index, or a near tie (float64 scores within 1e-5), on at most 1% of the queries;
* floating-point sums in another order: hclust.merge_costs rtol 1e-10; mmd atol 1e-10; patch_score atol 1e-9;
  mnl scores rtol 1e-10 + atol 1e-12, update and refactorize rtol 1e-9 + atol 1e-12; ista (2000 iterations)
  rtol 1e-8 + atol 1e-10; pointmass rtol 1e-14 + atol 1e-15; makespan rtol 1e-12 + atol 1e-12;
  springs (leapfrog steps of a linear system) rtol 1e-10 + atol 1e-12; softvi (20 sweeps of log-sum-exp) rtol 1e-11 +
  atol 1e-12; kcenter: the same picks in the same order (a pick could differ only if two candidates' squared
  distances were within rounding, which the clustered test points make unlikely), squared distances rtol 1e-12;
  segpool: pooled means rtol 1e-12 + atol 1e-12 (float64 atomic adds arrive in any order), broadcast exact;
* sketchann: the same nearest point per (query, copy), or a tie in the sketched distance (rtol 1e-9).

Full sizes: rng 16384 x 1024 uniforms; contraction 4096 trials on a planted-cut graph (n = 1000, m = 5004 > 4096
edges: the lazy bucket sort's full range), plain / infinite boost / boost 6 with t = 4; quant 4096 x 4096 float32
(NF4 and mixed 1/2/4-bit rows); mnl R = 1000 replicas (scores over N = 1000 items at d = 20, updates at d = 20 with
up to 10 offered, refactorize at d = MAX_D = 32); vmf 1e6 draws at d = 32 and top-1 of 4096 queries over 200000
actions at d = 32; hclust merge costs at n = 2000 and votes for all pairs of n = 1024 with 64 witnesses; mmd
4000 x 4000 points at d = 50; ista 256 configurations (N = 80, n = 200, 2000 iterations); patch_score 2048 queries
x 64000 patches (D = 25); amo a chordal graph on 11 vertices (11! permutations); pareto 20000 points (m = 2, 3);
pointmass 1e6 environments; wl G(n = 100000, m = 300000), 3 rounds; makespan 20000 plans (8 stages, 1F1B, 32
micro-batches); sketchann 512 queries x 45 of 90 copies over 20000 points (m = 64, d = 256); tanimoto 4000 x 4000
fingerprints of 2048 bits; springs 20000 systems of 8 particles, 300 steps; softvi a
random MDP of 10000 states x 1000 actions, 20 sweeps; kcenter 200 picks from 100000 points at d = 64; segpool 256 images of 224 x 224 (3 channels), 196 segments. On one CPU core the njit
references take about 30 s together (ista 10 s, amo 4.4 s, top-1 3.7 s, wood 2.1 s, the rest under 1.2 s each).

Timings: the njit kernel is called once on a tiny input (loads or compiles it), then timed once at the full size;
the CUDA kernel is called once at the full size (compiles it, starts the context), then timed once, followed by
``cuda.synchronize()``. The CUDA time includes the host <-> device copies, as the kernels' wrappers take and return
host arrays. The ratio is cuda seconds / njit seconds (below 1: the GPU is faster).

Sizes are chosen so that each njit reference takes a few seconds at most on a 16-core machine and the whole run
stays within 5 minutes; a global time budget (``--budget``, default 270 s) skips the checks not yet started
when it runs out (reported as SKIP).

Run on a GPU machine, from the repository root:

    .venv/bin/python tools/gpu_check.py                              # full sizes (a few minutes)
    .venv/bin/python tools/gpu_check.py --json gpu_check.json        # also write the rows as JSON
    .venv/bin/python tools/gpu_check.py --only quant vmf             # some kernels only

On a CPU machine, under the CUDA simulator (every CUDA thread runs in Python, so tiny sizes only):

    NUMBA_ENABLE_CUDASIM=1 .venv/bin/python tools/gpu_check.py --small

Without a GPU and without the simulator it prints one line saying so and exits 0.

Exit status: 0 if every check ran and agreed, 1 if any check disagreed (or raised), 2 if none disagreed but some
were skipped for the time budget.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback
import warnings
from dataclasses import asdict, dataclass
from typing import Any, Callable

import numpy as np

KERNELS = ["rng", "contraction", "quant", "mnl", "vmf", "hclust", "mmd", "ista", "patch_score", "amo", "pareto",
           "pointmass", "wl", "makespan", "sketchann", "tanimoto", "springs", "softvi", "kcenter", "segpool"]


@dataclass
class Row:
    kernel: str
    check: str
    size: str
    agreement: str
    tolerance: str
    status: str  # PASS, FAIL, SKIP
    njit_s: float | None = None
    cuda_s: float | None = None

    @property
    def ratio(self) -> float | None:
        if self.njit_s and self.cuda_s is not None:
            return self.cuda_s / self.njit_s
        return None

    def line(self) -> str:
        f = lambda s: "-" if s is None else f"{s:.4g}s"
        r = "-" if self.ratio is None else f"{self.ratio:.3g}"
        return (f"{self.kernel:<12} {self.check:<22} {self.size:<44} {self.agreement} [{self.tolerance}] "
                f"{self.status}  njit {f(self.njit_s)}  cuda {f(self.cuda_s)}  cuda/njit {r}")

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ratio"] = self.ratio
        return d


# --- timing and comparison helpers --------------------------------------------------------------------------------

def time_njit(fn: Callable[[], Any]) -> tuple[Any, float]:
    "One timed call (the caller has already compiled / loaded the kernel on a tiny input)."
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def time_cuda(fn: Callable[[], Any]) -> tuple[Any, float]:
    "A warm-up call at the full size (compilation, context), then one timed call ended by cuda.synchronize()."
    from numba import cuda
    fn()
    cuda.synchronize()
    t0 = time.perf_counter()
    out = fn()
    cuda.synchronize()
    return out, time.perf_counter() - t0


def exact(a: Any, b: Any) -> tuple[str, bool]:
    "Bit-for-bit equality of arrays (floats compared by their bits) or of scalars."
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"shape/dtype {a.shape} {a.dtype} vs {b.shape} {b.dtype}", False
    if a.dtype.kind == "f":
        a, b = a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}")
    bad = int(np.count_nonzero(a != b))
    return ("exact" if bad == 0 else f"{bad} of {a.size} differ"), bad == 0


def close(a: Any, b: Any, rtol: float, atol: float) -> tuple[str, bool]:
    "|a - b| <= atol + rtol |b| everywhere (b: the njit result); reports the max abs and max rel differences."
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return f"shape {a.shape} vs {b.shape}", False
    diff = np.abs(a - b)
    ok = bool(np.all(diff <= atol + rtol * np.abs(b))) and bool(np.array_equal(np.isnan(a), np.isnan(b)))
    diff = np.where(np.isnan(diff), 0.0, diff)
    mx = float(diff.max()) if diff.size else 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(b != 0, diff / np.abs(b), np.where(diff == 0, 0.0, np.inf))
    mr = float(rel.max()) if rel.size else 0.0
    return f"max abs {mx:.2e} max rel {mr:.2e}", ok


def row(kernel: str, check: str, size: str, cmp: tuple[str, bool], tol: str, njit_s: float, cuda_s: float) -> Row:
    return Row(kernel, check, size, cmp[0], tol, "PASS" if cmp[1] else "FAIL", njit_s, cuda_s)


# --- the checks -------------------------------------------------------------------------------------------------------

def check_rng(small: bool) -> list[Row]:
    from icml25nb.kernels import rng
    S, D = (64, 16) if small else (16384, 1024)
    rng.uniform_fill(0, 2, 2)
    ref, tn = time_njit(lambda: rng.uniform_fill(7, S, D))
    got, tc = time_cuda(lambda: rng.uniform_fill_cuda(7, S, D))
    return [row("rng", "uniform_fill", f"{S} streams x {D} draws", exact(got, ref), "bit-exact", tn, tc)]


def _planted_graph(small: bool) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from icml25nb.kernels import contraction as K
    n = 12 if small else 1000
    src, dst, w = K.planted_cut_edges(n, avg_degree=4.0 if small else 10.0, crossing=1 if small else 4, seed=1)
    pred = (src < n // 2) != (dst < n // 2)  # the planted cut, predicted exactly
    return n, src, dst, w, pred


def check_contraction(small: bool) -> list[Row]:
    from icml25nb.kernels import contraction as K
    n, src, dst, w, pred = _planted_graph(small)
    trials = 4 if small else 4096
    tpb = 2 if small else 64
    ids = np.arange(trials)
    K.trials_njit(4, np.array([0, 1, 2]), np.array([1, 2, 3]), np.ones(3), np.ones(3), np.zeros(3, np.uint8),
                  np.ones(3), 2, 0, np.arange(2))
    rows = []
    for name, predicted, boost, t in (("plain", None, 1.0, 2), ("boost inf, t=2", pred, math.inf, 2),
                                      ("boost 6, t=4", pred, 6.0, 4)):
        r1, tier1, r2 = K.phase_rates(w, predicted, boost)
        args = (n, src, dst, w, r1, tier1, r2, t, 3)
        ref, tn = time_njit(lambda: K.trials_njit(*args, ids))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the simulator's / low-occupancy warnings
            got, tc = time_cuda(lambda: K.trials_cuda(*args, ids, threads_per_block=tpb))
        size = f"n={n}, m={len(src)} edges, {trials} trials"
        if math.isinf(boost) or predicted is None:
            rows.append(row("contraction", name, size, exact(got, ref), "bit-exact", tn, tc))
        else:
            bad = int(np.count_nonzero(got != ref))
            desc = "exact" if bad == 0 else f"{bad} of {trials} trials differ"
            rows.append(row("contraction", name, size, (desc, bad <= 0.005 * trials), "<= 0.5% trials differ (log ulp)",
                            tn, tc))
    return rows


def check_quant(small: bool) -> list[Row]:
    from icml25nb.kernels import quant as Q
    R, C = (8, 128) if small else (4096, 4096)
    bs = 64
    tpb = 32 if small else 128
    W = np.random.default_rng(0).standard_normal((R, C)).astype(np.float32)
    Q.quantize_nf4(W[:1, :bs], bs)
    Q.dequantize_nf4(*Q.quantize_nf4(W[:1, :bs], bs), (1, bs), bs)
    size = f"{R}x{C} float32, blocksize {bs}"
    (p_ref, a_ref), tn = time_njit(lambda: Q.quantize_nf4(W, bs))
    (p, a), tc = time_cuda(lambda: Q.quantize_nf4_cuda(W, bs, threads_per_block=tpb))
    cmp = exact(np.concatenate([p.view(np.uint8), a.view(np.uint8)]),
                np.concatenate([p_ref.view(np.uint8), a_ref.view(np.uint8)]))
    rows = [row("quant", "quantize_nf4", size, cmp, "bit-exact", tn, tc)]
    d_ref, tn = time_njit(lambda: Q.dequantize_nf4(p_ref, a_ref, W.shape, bs))
    d, tc = time_cuda(lambda: Q.dequantize_nf4_cuda(p_ref, a_ref, W.shape, bs, threads_per_block=tpb))
    rows.append(row("quant", "dequantize_nf4", size, exact(d, d_ref), "bit-exact", tn, tc))
    # mixed precision: rows at 1, 2 and 4 bits, random sorted levels per row
    rng = np.random.default_rng(1)
    bits = np.resize(np.array([1, 2, 4]), R)
    lev = np.sort(rng.uniform(-1, 1, (R, 16)), axis=1).astype(np.float32)
    thr = ((lev[:, :-1] + lev[:, 1:]) / 2).astype(np.float32)
    Q.encode_rows(W[:3, :bs], bs, bits[:3], thr[:3])
    Q.decode_rows(*Q.encode_rows(W[:3, :bs], bs, bits[:3], thr[:3]), bits[:3], lev[:3], bs)
    size = f"{R}x{C} float32, rows at 1/2/4 bits, blocksize {bs}"
    tpb = 16 if small else 64  # at least 16 (one thread per threshold loads the table)
    enc_ref, tn = time_njit(lambda: Q.encode_rows(W, bs, bits, thr))
    enc, tc = time_cuda(lambda: Q.encode_rows_cuda(W, bs, bits, thr, threads_per_block=tpb))
    oks = [exact(x, y) for x, y in zip(enc, enc_ref)]
    cmp = ("exact" if all(o[1] for o in oks) else "; ".join(o[0] for o in oks), all(o[1] for o in oks))
    rows.append(row("quant", "encode_rows", size, cmp, "bit-exact", tn, tc))
    dec_ref, tn = time_njit(lambda: Q.decode_rows(*enc_ref, bits, lev, bs))
    dec, tc = time_cuda(lambda: Q.decode_rows_cuda(*enc_ref, bits, lev, bs, threads_per_block=tpb))
    rows.append(row("quant", "decode_rows", size, exact(dec, dec_ref), "bit-exact", tn, tc))
    return rows


def _contexts(gen: np.random.Generator, shape: tuple[int, ...], d: int) -> np.ndarray:
    x = gen.standard_normal(shape + (d,))
    return x * (gen.random(shape + (1,)) / np.linalg.norm(x, axis=-1, keepdims=True))


def _spd_state(gen: np.random.Generator, R: int, d: int, scale: float) -> tuple[np.ndarray, ...]:
    theta = scale * gen.standard_normal((R, d))
    A = gen.standard_normal((R, d, d)) / np.sqrt(d)
    H = A @ A.transpose(0, 2, 1) + np.eye(d)
    return theta, H, np.linalg.inv(H)


def check_mnl(small: bool) -> list[Row]:
    from icml25nb.kernels import mnl
    gen = np.random.default_rng(2)
    R, N, d, Kof = (3, 6, 4, 3) if small else (1000, 1000, 20, 10)
    tpb = 4 if small else (128, 32)
    theta, H, Hinv = _spd_state(gen, R, d, 0.5)
    X, beta = _contexts(gen, (R, N), d), gen.random(R) + 0.5
    mnl.optimistic_scores(X[:1, :2], theta[:1], Hinv[:1], beta[:1])
    ref, tn = time_njit(lambda: mnl.optimistic_scores(X, theta, Hinv, beta))
    got, tc = time_cuda(lambda: mnl.optimistic_scores_cuda(X, theta, Hinv, beta,
                                                          threads_per_block=tpb if small else tpb[0]))
    rows = [row("mnl", "optimistic_scores", f"R={R} replicas x N={N} items, d={d}", close(got, ref, 1e-10, 1e-12),
                "rtol 1e-10 + atol 1e-12", tn, tc)]
    # one confidence update per replica: K offered items, varied choices (-1: outside option), B small or infinite
    XS = _contexts(gen, (R, Kof), d)
    n_off = gen.integers(1, Kof + 1, R)
    for r in range(R):
        XS[r, n_off[r]:] = np.nan
    choice = np.array([int(gen.integers(-1, k)) for k in n_off])
    eta = gen.uniform(0.5, 3.0, R)
    B = np.where(gen.random(R) < 0.5, 0.3, np.inf)  # about half the replicas project onto the ball
    args = (XS, n_off, choice, eta, B)
    small_state = [a[:1].copy() for a in (theta, H, Hinv)]
    mnl.confidence_update(*small_state, *(a[:1] for a in args))
    ref_state = [a.copy() for a in (theta, H, Hinv)]
    _, tn = time_njit(lambda: mnl.confidence_update(*ref_state, *args))
    tries: list[list[np.ndarray]] = []

    def cuda_update() -> None:
        st = [a.copy() for a in (theta, H, Hinv)]
        mnl.confidence_update_cuda(*st, *args, threads_per_block=tpb if small else tpb[1])
        tries.append(st)

    _, tc = time_cuda(cuda_update)
    oks = [close(x, y, 1e-9, 1e-12) for x, y in zip(tries[-1], ref_state)]
    worst = max(oks, key=lambda o: float(o[0].split()[2]))
    rows.append(row("mnl", "confidence_update", f"R={R} replicas, d={d}, up to {Kof} offered",
                    (worst[0], all(o[1] for o in oks)), "rtol 1e-9 + atol 1e-12 (theta, H, Hinv)", tn, tc))
    dr = 6 if small else mnl.MAX_D
    _, H2, _ = _spd_state(gen, R, dr, 1.0)
    mnl.refactorize(H2[:1].copy(), np.zeros((1, dr, dr)))
    inv_ref = np.zeros_like(H2)
    _, tn = time_njit(lambda: mnl.refactorize(H2, inv_ref))
    inv = np.zeros_like(H2)
    _, tc = time_cuda(lambda: mnl.refactorize_cuda(H2, inv, threads_per_block=tpb if small else tpb[1]))
    rows.append(row("mnl", "refactorize", f"R={R} replicas, d={dr}", close(inv, inv_ref, 1e-9, 1e-12),
                    "rtol 1e-9 + atol 1e-12", tn, tc))
    return rows


def check_vmf(small: bool) -> list[Row]:
    from icml25nb.kernels import vmf as V
    gen = np.random.default_rng(3)
    d, kappa = 32, 50.0
    mu = gen.standard_normal(d)
    mu /= np.linalg.norm(mu)
    n_samp = 40 if small else 1_000_000
    V.wood_sample(mu, kappa, 4, 0)
    ref, tn = time_njit(lambda: V.wood_sample(mu, kappa, n_samp, 1))
    got, tc = time_cuda(lambda: V.wood_sample_cuda(mu, kappa, n_samp, 1, threads_per_block=8 if small else 128))
    per = np.abs(got - ref).max(axis=1)
    far = int(np.count_nonzero(~(per <= 1e-9)))
    near = float(per[per <= 1e-9].max()) if far < n_samp else float("nan")
    desc = f"max abs {near:.2e} on {n_samp - far} draws, {far} draws differ"
    rows = [row("vmf", "wood_sample", f"{n_samp} draws, d={d}, kappa={kappa:g}", (desc, far <= 1e-5 * n_samp),
                "atol 1e-9; <= 1e-5 of draws differ", tn, tc)]
    nq, n = (6, 300) if small else (4096, 200_000)
    A = gen.standard_normal((n, d)).astype(np.float32)
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    Q = V.wood_sample(mu, kappa, nq, 2).astype(np.float32)
    V.top1(Q[:2], A[:10])
    ref, tn = time_njit(lambda: V.top1(Q, A))
    got, tc = time_cuda(lambda: V.top1_cuda(Q, A))
    diff = np.nonzero(got != ref)[0]
    Q64, A64 = Q.astype(np.float64), A.astype(np.float64)
    gap = float(np.abs(np.einsum("qd,qd->q", Q64[diff], A64[got[diff]])
                       - np.einsum("qd,qd->q", Q64[diff], A64[ref[diff]])).max()) if len(diff) else 0.0
    ok = gap <= 1e-5 and len(diff) <= 0.01 * nq
    desc = "exact" if not len(diff) else f"{len(diff)} of {nq} indices differ, max score gap {gap:.2e}"
    rows.append(row("vmf", "top1", f"{nq} queries x {n} actions, d={d}, float32", (desc, ok),
                    "same index or tie within 1e-5, <= 1%", tn, tc))
    return rows


def check_hclust(small: bool) -> list[Row]:
    from scipy.cluster.hierarchy import linkage

    from icml25nb.kernels import hclust as Hc
    gen = np.random.default_rng(4)
    n = 12 if small else 2000
    X = gen.standard_normal((n, 8))
    Z = linkage(X, "average")
    W = gen.random((n, n))
    W = (W + W.T) / 2
    np.fill_diagonal(W, 0)
    Hc.merge_costs(W[:3, :3], linkage(X[:3], "average"))
    ref, tn = time_njit(lambda: Hc.merge_costs(W, Z))
    got, tc = time_cuda(lambda: Hc.merge_costs_cuda(W, Z))
    rows = [row("hclust", "merge_costs", f"n={n} leaves, average linkage", close(got, ref, 1e-10, 0.0), "rtol 1e-10",
                tn, tc)]
    nv, m = (10, 4) if small else (1024, 64)
    Zv = linkage(X[:nv], "average")
    order, rg = Hc.leaf_ranges(Zv)
    S = np.zeros((nv, nv), dtype=np.int64)
    for a, b, c in rg:
        S[np.ix_(order[a:b], order[b:c])] = c - a
    S = S + S.T
    pairs = np.stack(np.triu_indices(nv, 1), axis=1)
    wit = gen.integers(0, nv, (len(pairs), m))
    Hc.count_votes(S, pairs[:2], wit[:2], 0.2, 1)
    ref, tn = time_njit(lambda: Hc.count_votes(S, pairs, wit, 0.2, 1))
    got, tc = time_cuda(lambda: Hc.count_votes_cuda(S, pairs, wit, 0.2, 1, threads_per_block=8 if small else 128))
    rows.append(row("hclust", "count_votes", f"all {len(pairs)} pairs of n={nv}, m={m} witnesses, p=0.2",
                    exact(got, ref), "bit-exact", tn, tc))
    return rows


def check_mmd(small: bool) -> list[Row]:
    from icml25nb.kernels import mmd as M
    gen = np.random.default_rng(5)
    m, d = (20, 3) if small else (4000, 50)
    X, Y = gen.standard_normal((m, d)), gen.standard_normal((m, d)) + 0.1
    sigma = M.median_bandwidth(X, Y)
    M.mmd2_rbf(X[:3], Y[:3], sigma)
    ref, tn = time_njit(lambda: M.mmd2_rbf(X, Y, sigma))
    got, tc = time_cuda(lambda: M.mmd2_rbf_cuda(X, Y, sigma))
    return [row("mmd", "mmd2_rbf (unbiased)", f"{m} x {m} points, d={d}", close(got, ref, 0.0, 1e-10), "atol 1e-10",
                tn, tc)]


def check_ista(small: bool) -> list[Row]:
    from icml25nb.kernels import ista as I
    gen = np.random.default_rng(6)
    B, N, n, iters = (2, 6, 10, 5) if small else (256, 80, 200, 2000)
    X = gen.standard_normal((B, N, n)) / np.sqrt(n)
    a_star = np.zeros((B, n))
    for b in range(B):
        a_star[b, gen.choice(n, min(5, n), replace=False)] = gen.standard_normal(min(5, n))
    y = np.einsum("bij,bj->bi", X, a_star)
    beta1 = np.geomspace(1e-4, 1e-2, B)
    beta2 = np.where(np.arange(B) % 2 == 0, 0.0, 0.1)
    lr = I.stable_lr(X, beta2) / 2
    log_at = sorted({0, 1, iters // 2, iters})
    I.ista_batch(X[:1], y[:1], beta1[:1], beta2[:1], lr[:1], 2)
    args = (X, y, beta1, beta2, lr, iters, a_star, log_at)
    ref, tn = time_njit(lambda: I.ista_batch(*args))
    got, tc = time_cuda(lambda: I.ista_batch_cuda(*args))
    oks = [close(g, r, 1e-8, 1e-10) for g, r in zip(got, ref)]
    worst = max(oks, key=lambda o: float(o[0].split()[2]))
    return [row("ista", "ista_batch", f"B={B} configs, N={N}, n={n}, {iters} iterations",
                (worst[0], all(o[1] for o in oks)), "rtol 1e-8 + atol 1e-10 (A, train, test)", tn, tc)]


def check_patch_score(small: bool) -> list[Row]:
    from icml25nb.kernels import patch_score as P
    gen = np.random.default_rng(7)
    n_img, n_train, k, Hs = (1, 2, 3, 4) if small else (32, 1000, 5, 8)
    x = gen.standard_normal((n_img, Hs, Hs))
    train = gen.uniform(-1, 1, (n_train, Hs, Hs))

    def patches(z: np.ndarray) -> np.ndarray:  # every k x k patch (circular padding), one row per position
        r = k // 2
        zp = np.pad(z, ((0, 0), (r, r), (r, r)), mode="wrap")
        win = np.lib.stride_tricks.sliding_window_view(zp, (k, k), axis=(1, 2))
        return np.ascontiguousarray(win.reshape(-1, k * k))

    Q, K = patches(x), 0.7 * patches(train)
    V = np.stack([train.reshape(-1), -train.reshape(-1)], axis=1)  # two value channels: centre pixel and minus it
    scale = 1.0
    P.patch_softmax_mean(Q[:2], K[:3], V[:3], scale)
    ref, tn = time_njit(lambda: P.patch_softmax_mean(Q, K, V, scale))
    got, tc = time_cuda(lambda: P.patch_softmax_mean_cuda(Q, K, V, scale))
    return [row("patch_score", "patch_softmax_mean", f"{len(Q)} queries x {len(K)} patches, D={k * k}, c=2",
                close(got, ref, 0.0, 1e-9), "atol 1e-9", tn, tc)]


def _chordal_graph(n: int, gen: np.random.Generator) -> list[tuple[int, int]]:
    "A random chordal graph: each new vertex joins a random subset of an existing clique (a perfect elimination order)."
    cliques = [[0]]
    edges = []
    for v in range(1, n):
        base = cliques[int(gen.integers(len(cliques)))]
        keep = [u for u in base if gen.random() < 0.8]
        if len(keep) < min(2, len(base)):
            keep = base[:2]
        edges += [(u, v) for u in keep]
        cliques.append(keep + [v])
    return edges


def check_amo(small: bool) -> list[Row]:
    from icml25nb.kernels import amo as Am
    n = 6 if small else 11
    edges = _chordal_graph(n, np.random.default_rng(8))
    adj = Am.adjacency_masks(n, edges)
    Am.amo_count_njit(Am.adjacency_masks(3, [(0, 1), (1, 2)]))
    ref, tn = time_njit(lambda: Am.amo_count_njit(adj))
    got, tc = time_cuda(lambda: Am.amo_count_cuda(adj))
    return [row("amo", "amo_count", f"chordal graph n={n}, {len(edges)} edges ({math.factorial(n)} perms), "
                f"count {ref}", exact(got, ref), "exact", tn, tc)]


def check_pareto(small: bool) -> list[Row]:
    from icml25nb.kernels import pareto as Pa
    gen = np.random.default_rng(9)
    n = 24 if small else 20000
    rows = []
    for m in (2, 3):
        Y = np.round(gen.random((n, m)), 2)  # rounded: ties and duplicate points take their code paths
        Pa.pareto_rank(Y[:3])
        ref, tn = time_njit(lambda: Pa.nondominated_mask(Y))
        got, tc = time_cuda(lambda: Pa.nondominated_mask_cuda(Y))
        rows.append(row("pareto", "nondominated_mask", f"n={n} points, m={m}", exact(got, ref), "exact", tn, tc))
        ref, tn = time_njit(lambda: Pa.pareto_rank(Y))
        got, tc = time_cuda(lambda: Pa.pareto_rank_cuda(Y))
        rows.append(row("pareto", "pareto_rank", f"n={n} points, m={m}, {int(ref.max()) + 1} fronts",
                        exact(got, ref), "exact", tn, tc))
    return rows


def check_pointmass(small: bool) -> list[Row]:
    from icml25nb.kernels import pointmass as PM
    n = 150 if small else 1_000_000  # small: two blocks of 128 threads, the second partly idle
    gen = np.random.default_rng(10)
    pos, vel, goal = gen.uniform(-1, 1, (n, 2)), gen.normal(0, 1.5, (n, 2)), gen.uniform(-1, 1, (n, 2))
    act = gen.uniform(-2, 2, (n, 2))  # beyond [-1, 1]: the clip; large velocities: the walls
    PM.step_njit(pos[:2], vel[:2], goal[:2], act[:2])
    ref, tn = time_njit(lambda: PM.step_njit(pos, vel, goal, act, 0.1, 2.0, 1.0, 0.05))
    got, tc = time_cuda(lambda: PM.step_cuda(pos, vel, goal, act, 0.1, 2.0, 1.0, 0.05))
    agree, ok = (close(np.concatenate([np.ravel(x) for x in got]), np.concatenate([np.ravel(x) for x in ref]),
                       1e-14, 1e-15))
    return [row("pointmass", "step", f"{n} environments, 2-D", (agree, ok), "rtol 1e-14 + atol 1e-15", tn, tc)]


def check_wl(small: bool) -> list[Row]:
    import networkx as nx
    from icml25nb.kernels import wl as W
    n = 40 if small else 100_000
    G = nx.gnm_random_graph(n, 3 * n, seed=11)
    A = nx.to_scipy_sparse_array(G, nodelist=range(n), format="csr")
    ip, ix = A.indptr.astype(np.int64), A.indices.astype(np.int64)
    W.wl_colors_njit(np.array([0, 1, 2]), np.array([1, 0]), iterations=1)
    ref, tn = time_njit(lambda: W.wl_colors_njit(ip, ix, iterations=3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # uint64 wrap-around warns under the simulator
        got, tc = time_cuda(lambda: W.wl_colors_cuda(ip, ix, iterations=3))
    return [row("wl", "wl_colors", f"G(n={n}, m={3 * n}), 3 rounds", exact(got, ref), "exact", tn, tc)]


def check_makespan(small: bool) -> list[Row]:
    from icml25nb.efficient import pipeline as PL
    from icml25nb.kernels import makespan as MK
    n_plans, S, B = (130, 4, 4) if small else (20_000, 8, 32)  # small: two blocks, the second mostly idle
    prof = PL.synthetic_profile("transformer", n_nodes=24 if small else 96, seed=0)
    gen = np.random.default_rng(12)
    splits = np.sort(np.stack([gen.choice(np.arange(1, prof.n), S - 1, replace=False) for _ in range(n_plans)]), 1)
    tpl = PL.schedule_template("1f1b", S, S, B)
    dur, extra = PL.plan_weights(prof, splits, tpl, bandwidth=PL.DEFAULT_BANDWIDTH, latency=PL.DEFAULT_LATENCY)
    args = (tpl.ptr, tpl.pred, tpl.slot, tpl.kind)
    MK.makespan_njit(*args, dur[:1], extra[:1])
    ref, tn = time_njit(lambda: MK.makespan_njit(*args, dur, extra))
    got, tc = time_cuda(lambda: MK.makespan_cuda(*args, dur, extra))
    return [row("makespan", "makespan", f"{n_plans} plans, {S} stages, 1F1B, {B} micro-batches",
                close(got, ref, 1e-12, 1e-12), "rtol 1e-12 + atol 1e-12", tn, tc)]


def check_sketchann(small: bool) -> list[Row]:
    from icml25nb.kernels import sketchann as SK
    k, m, d, n, b, r = (6, 4, 9, 13, 5, 3) if small else (90, 64, 256, 20_000, 512, 45)
    gen = np.random.default_rng(13)
    P = gen.standard_normal((n, d))
    S = gen.standard_normal((k, m, d)) / np.sqrt(m)
    SP = np.einsum("jmd,nd->jnm", S, P)
    Q = P[gen.integers(0, n, b)] + 0.5 * gen.standard_normal((b, d))
    copies = np.stack([gen.choice(k, r, replace=False) for _ in range(b)])
    SK.sketch_argmin(S, SP[:, :2], Q[:1], copies[:1])
    (ri, rd), tn = time_njit(lambda: SK.sketch_argmin(S, SP, Q, copies))
    (ci, cd), tc = time_cuda(lambda: SK.sketch_argmin_cuda(S, SP, Q, copies))
    same = ri == ci  # a different index is allowed only at a tie in the sketched distance
    tie = np.abs(cd - rd) <= 1e-9 * np.maximum(1.0, np.abs(rd))
    ok = bool(np.all(same | tie)) and bool(np.allclose(cd, rd, rtol=1e-9, atol=1e-12))
    return [row("sketchann", "sketch_argmin", f"{b} queries x {r} of {k} copies, n={n}, m={m}, d={d}",
                (f"{int((~same).sum())} indices differ, max |dist diff| {np.abs(cd - rd).max():.2e}", ok),
                "same index or tie; dist rtol 1e-9", tn, tc)]


def check_tanimoto(small: bool) -> list[Row]:
    from icml25nb.kernels import tanimoto as T
    na, nb, bits = (9, 5, 128) if small else (4000, 4000, 2048)
    A = T.pack_bits(T._molecule_like_bits(na, bits, 14))
    B = T.pack_bits(T._molecule_like_bits(nb, bits, 15))
    A[1] = 0  # an empty fingerprint: the zero-union branch
    T.tanimoto_matrix(A[:2], B[:2])
    ref, tn = time_njit(lambda: T.tanimoto_matrix(A, B))
    got, tc = time_cuda(lambda: T.tanimoto_matrix_cuda(A, B, threads=4 if small else 16))
    return [row("tanimoto", "tanimoto_matrix", f"{na} x {nb} fingerprints, {bits} bits", exact(got, ref), "exact",
                tn, tc)]


def check_springs(small: bool) -> list[Row]:
    from icml25nb.kernels import springs as SP
    n_sims, n_particles, steps = (70, 4, 20) if small else (20_000, 8, 300)  # small: two blocks of 64 threads
    x0, v0, A = SP.random_springs(n_sims, n_particles, 2, seed=16)
    SP.simulate_njit(x0[:1], v0[:1], A[:1], 1.0, 0.01, 1)
    ref, tn = time_njit(lambda: SP.simulate_njit(x0, v0, A, 1.0, 0.01, steps))
    got, tc = time_cuda(lambda: SP.simulate_cuda(x0, v0, A, 1.0, 0.01, steps))
    flat = lambda xv: np.concatenate([np.ravel(a) for a in xv])
    return [row("springs", "simulate", f"{n_sims} systems x {n_particles} particles, {steps} leapfrog steps",
                close(flat(got), flat(ref), 1e-10, 1e-12), "rtol 1e-10 + atol 1e-12", tn, tc)]


def check_softvi(small: bool) -> list[Row]:
    from icml25nb.kernels import softvi as SV
    S, A = (130, 7) if small else (10_000, 1000)  # small: two blocks of 128 threads, the second mostly idle
    R, nxt, log_mu = SV._random_mdp(S, A, 17)
    SV.soft_vi_njit(R[:2], np.minimum(nxt[:2], 1), log_mu, 0.5, 0.95, 1)
    rows = []
    for alpha in (0.0, 0.5):  # the standard backup (exact: a max of the same sums) and the soft one
        ref, tn = time_njit(lambda: SV.soft_vi_njit(R, nxt, log_mu, alpha, 0.95, 20))
        got, tc = time_cuda(lambda: SV.soft_vi_cuda(R, nxt, log_mu, alpha, 0.95, 20))
        rows.append(row("softvi", f"soft_vi alpha={alpha}", f"S={S}, A={A}, 20 sweeps",
                        close(got, ref, 1e-11, 1e-12), "rtol 1e-11 + atol 1e-12", tn, tc))
    return rows


def check_kcenter(small: bool) -> list[Row]:
    from icml25nb.kernels import kcenter as KC
    n, d, budget = (260, 2, 3) if small else (100_000, 64, 200)  # small: a second, partial block of 256 threads
    X = KC._clustered_points(n, d, 18)
    KC.kcenter_greedy(X[:4], 2)
    (o_ref, m_ref), tn = time_njit(lambda: KC.kcenter_greedy(X, budget, 7))
    (o_got, m_got), tc = time_cuda(lambda: KC.kcenter_greedy_cuda(X, budget, 7))
    same, ok = exact(o_got, o_ref)
    agree, ok2 = close(m_got, m_ref, 1e-12, 0.0)
    return [row("kcenter", "kcenter_greedy", f"{budget} picks from {n} points, d={d}",
                (f"order {same}; mins {agree}", ok and ok2), "same order; mins rtol 1e-12", tn, tc)]


def check_segpool(small: bool) -> list[Row]:
    from icml25nb.kernels import segpool as SG
    B, C, H, S = (3, 2, 9, 9) if small else (256, 3, 224, 196)
    seg = SG._grid_segments(B, H, H, S, 19)
    x = np.random.default_rng(20).normal(size=(B, C, H, H))
    SG.pool(x[:1, :1, :2, :2], seg[:1, :2, :2])
    ref, tn = time_njit(lambda: SG.pool(x, seg, S + 1))
    got, tc = time_cuda(lambda: SG.pool_cuda(x, seg, S + 1, threads=64 if small else 256))
    rows = [row("segpool", "pool (mean)", f"{B} images x {C} channels, {H} x {H}, {S} segments",
                close(got, ref, 1e-12, 1e-12), "rtol 1e-12 + atol 1e-12", tn, tc)]
    SG.broadcast(ref[:1, :1, :], seg[:1])
    bref, tn = time_njit(lambda: SG.broadcast(ref, seg))
    bgot, tc = time_cuda(lambda: SG.broadcast_cuda(ref, seg, threads=64 if small else 256))
    rows.append(row("segpool", "broadcast", f"{B} images x {C} channels, {H} x {H}, {S} segments", exact(bgot, bref),
                    "exact", tn, tc))
    return rows


CHECKS: dict[str, Callable[[bool], list[Row]]] = {name: globals()[f"check_{name}"] for name in KERNELS}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", action="store_true", help="tiny sizes (for the CUDA simulator)")
    ap.add_argument("--json", metavar="PATH", help="also write the rows to PATH as JSON")
    ap.add_argument("--only", nargs="+", choices=KERNELS, metavar="KERNEL", help=f"a subset of {KERNELS}")
    ap.add_argument("--budget", type=float, default=270.0,
                    help="seconds; checks not started when it runs out are skipped (default 270)")
    args = ap.parse_args(argv)

    import numba
    from numba import cuda
    simulator = bool(numba.config.ENABLE_CUDASIM)
    if not simulator and not cuda.is_available():
        print("gpu_check: no CUDA GPU found (numba.cuda.is_available() is False) and NUMBA_ENABLE_CUDASIM is not "
              "set: nothing checked")
        return 0
    if simulator:
        where = "CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"
    else:
        dev = cuda.get_current_device()
        name = dev.name.decode() if isinstance(dev.name, bytes) else dev.name
        where = f"GPU {name} (compute capability {dev.compute_capability})"
    print(f"gpu_check: {where}; {numba.get_num_threads()} numba thread(s); "
          f"{'small' if args.small else 'full'} sizes; budget {args.budget:g} s", flush=True)
    from numba.core.errors import NumbaPerformanceWarning
    warnings.simplefilter("ignore", NumbaPerformanceWarning)  # small grids: low occupancy is expected
    if simulator:  # the simulator runs the uint64 hashing in NumPy scalars, which warn on the intended wrap-around
        warnings.simplefilter("ignore", RuntimeWarning)
    start = time.perf_counter()
    rows: list[Row] = []
    for name in args.only or KERNELS:
        if time.perf_counter() - start > args.budget:
            rows.append(Row(name, "-", "-", "not run", "-", "SKIP"))
            print(rows[-1].line(), flush=True)
            continue
        try:
            new = CHECKS[name](args.small)
        except Exception as exc:  # a crash is a disagreement: report it and go on with the other kernels
            traceback.print_exc()
            new = [Row(name, "-", "-", f"raised {type(exc).__name__}: {exc}", "-", "FAIL")]
        for r in new:
            print(r.line(), flush=True)
        rows.extend(new)
    total = time.perf_counter() - start
    fails = sum(r.status == "FAIL" for r in rows)
    skips = sum(r.status == "SKIP" for r in rows)
    print(f"gpu_check: {len(rows) - fails - skips} PASS, {fails} FAIL, {skips} SKIP in {total:.1f} s", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": where, "small": args.small, "numba_threads": numba.get_num_threads(),
                       "seconds": total, "rows": [r.as_dict() for r in rows]}, fh, indent=1)
    return 1 if fails else (2 if skips else 0)


if __name__ == "__main__":
    sys.exit(main())
