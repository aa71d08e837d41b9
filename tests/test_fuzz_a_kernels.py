"""Reliability (fuzz) suite, issue 49, part A of the kernels: amo, contraction, hclust (and the hclust chapter's
`dasgupta_cost` and its input checks), ista, makespan, mec, mmd, mnl, quant.

Every public entry point (NumPy reference, @njit wrapper, CUDA wrapper, check function) is driven two ways:
* random VALID inputs (shapes, float32 / int / non-contiguous / list versions of the same values): the @njit entry
  point returns the reference's answer, and the equivalent inputs return the same answer;
* HOSTILE inputs (NaN / inf, wrong shapes and dtypes, out-of-range ids, empty and huge sizes, wrong types): a one-line
  ValueError / TypeError naming the argument (`fuzzutil.assert_refused`), never a crash, a hang, a read past an
  array or a NaN. The CUDA wrappers refuse before any launch, so they run here under the simulator at no cost.

Several cases are regressions of defects found by this suite (before the fix: a read past `packed` in
`quant.decode_rows` with shifted offsets, node ids past `n` read by `contraction.trials_njit`, an OverflowError for
a negative seed, float ids truncated silently, NaN from `mmd2_rbf` on large values or from `ista_batch` at a step
above the stability limit, a RecursionError in `makespan_objgraph` on a long chain, ...); each says so.
It also runs under NUMBA_BOUNDSCHECK=1 (`make test`), where a read past an array raises IndexError (not allowed).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.cluster.hierarchy import linkage

from fuzzutil import BAD_NUMBERS, HUGE_SIZES, assert_refused, non_contiguous, outcome, refuses_each, same
from icml25nb.algorithms import hclust as HC
from icml25nb.kernels import amo as A
from icml25nb.kernels import contraction as C
from icml25nb.kernels import hclust as HK
from icml25nb.kernels import ista as I
from icml25nb.kernels import makespan as MS
from icml25nb.kernels import mec as MEC
from icml25nb.kernels import mmd as MMD
from icml25nb.kernels import mnl as MNL
from icml25nb.kernels import quant as Q

seeds = st.integers(0, 2**32 - 1)
NOT_ARRAYS = ("abc", None, {"a": 1}, [[1, 2], [3]], [1j, 2j])


# ----------------------------------------------------------------------------------------------------------- hclust

def _tree(n, seed):
    return linkage(np.random.default_rng(seed).standard_normal((n, 3)), "average")


def _weights(n, seed, sym=True):
    W = np.random.default_rng(seed).random((n, n))
    return (W + W.T) / 2 if sym else W


@given(n=st.integers(2, 14), seed=seeds, sym=st.booleans())
def test_merge_costs_njit_equals_reference_on_any_layout(n, seed, sym):
    Z, W = _tree(n, seed), _weights(n, seed, sym)
    ref = HK.merge_costs_ref(W, Z)
    got = HK.merge_costs(W, Z)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-300)
    assert np.array_equal(HK.merge_costs(non_contiguous(W), Z), got)
    assert np.array_equal(HK.merge_costs(np.asfortranarray(W), Z), got)
    W32 = W.astype(np.float32)
    assert np.array_equal(HK.merge_costs(W32, Z), HK.merge_costs(W32.astype(np.float64), Z))
    assert np.array_equal(HK.merge_costs(W, Z.tolist()), got)


@given(n=st.integers(2, 14), seed=seeds, diag=st.floats(0, 1e3))
def test_dasgupta_cost_is_unchanged_without_the_copies(n, seed, diag):
    """The chapter's `dasgupta_cost` no longer builds a zero-diagonal copy (the kernel never reads the diagonal) nor
    the n x n temporaries of the old checks: the answer is bit for bit the old one, for any diagonal."""
    Z, W = _tree(n, seed), _weights(n, seed)
    np.fill_diagonal(W, diag)
    old = float(HK.merge_costs(W - np.diag(np.diag(W)), Z).sum())
    assert HC.dasgupta_cost(W, Z) == old
    assert HC.dasgupta_cost(non_contiguous(W), Z) == old
    assert HC.dasgupta_cost(W.tolist(), Z) == old


def _old_defect(W):
    "The chapter's checks before issue 49 (n x n temporaries), as the property to match."
    if not np.isfinite(W).all():
        return "finite"
    if (W < 0).any():
        return "non-negative"
    if not np.allclose(W, W.T, rtol=1e-12, atol=1e-12):
        return "symmetric"
    return None


@given(n=st.integers(1, 80), seed=seeds, what=st.sampled_from(["ok", "nan", "inf", "neg", "asym", "tiny-asym",
                                                                   "rel-asym"]))
def test_weights_defect_equals_the_old_numpy_checks(n, seed, what):
    g = np.random.default_rng(seed)
    W = _weights(n, seed) * g.choice([1.0, 1e-13, 1e12])
    i, j = g.integers(0, n, 2)
    if what == "nan":
        W[i, j] = np.nan
    elif what == "inf":
        W[i, j] = -np.inf
    elif what == "neg":
        W[i, j] = W[j, i] = -W[i, j] - 1e-300
    elif what == "asym":
        W[i, j] += 1.0
    elif what == "tiny-asym":  # inside or just outside atol + rtol |b|
        W[i, j] = W[j, i] + g.choice([5e-13, 2e-12])
    elif what == "rel-asym":
        W[i, j] = W[j, i] * (1 + g.choice([5e-13, 3e-12]))
    assert HK.weights_defect(W) == _old_defect(W)
    assert HK.weights_defect(non_contiguous(W)) == _old_defect(W)


@given(n=st.integers(3, 12), P=st.integers(0, 12), m=st.integers(0, 6), p=st.floats(0, 0.49), seed=seeds)
def test_count_votes_njit_equals_reference(n, P, m, p, seed):
    S = HC.lca_sizes(_tree(n, seed))
    g = np.random.default_rng(seed)
    u = g.integers(0, n, P)
    pairs = np.stack([u, (u + g.integers(1, n, P)) % n], axis=1)  # two distinct vertices (u, u) is refused
    wit = g.integers(0, n, (P, m))  # a witness equal to a vertex of its pair is skipped
    ref = HK.count_votes_ref(S, pairs, wit, p, seed)
    assert np.array_equal(HK.count_votes(S, pairs, wit, p, seed), ref)
    assert np.array_equal(HK.count_votes(S.astype(np.int32), pairs.astype(np.float64), wit, p, seed), ref)


def test_hclust_kernels_refuse_hostile_input():
    Z, W = _tree(6, 0), _weights(6, 0)
    S = HC.lca_sizes(Z)
    pairs, wit = np.array([[0, 1]]), np.array([[2, 3]])
    n = 0
    for f in (HK.count_votes_ref, HK.count_votes, HK.count_votes_cuda):
        good = dict(S=S, pairs=pairs, witnesses=wit, p=0.1, seed=0)
        n += refuses_each(f, good, {
            "S": [S[:5], S[:, :5], S[0], S.astype(float) + 0.5, "abc", None, np.full((6, 6), np.nan)],
            # before: float ids 0.5 were truncated silently; ids past n were refused only as a range
            "pairs": [[[0, 6]], [[-1, 0]], [[0.5, 1]], [0, 1], [[0, 1, 2]], [[np.nan, 1]], "abc"],
            "witnesses": [[[6, 3]], [[2.5, 3]], [[-1, 2]], [[2], [3]], "abc"],
            "p": [0.5, -0.1, float("nan"), "0.1", None, 1j],
            # before: seed=2**64 or 1.5 passed the check and np.uint64 raised OverflowError / truncated
            "seed": [-1, 2**64, 1.5, "0", None, True]})
    n += refuses_each(HK.oracle_answer_ref, dict(S=S, u=[0], v=[1], w=[2], p=0.1, seed=0), {
        # before: u = -1 wrapped around to the last vertex, u = 9 raised IndexError
        # before: a triplet (0, 1, 0) got an answer
        "u": [[-1], [9], [0.5], "a"], "v": [[6], [0]], "w": [[0, 1, 2, 3], [7]], "p": [2.0, float("nan")],
        "seed": [-1, 2**64]})
    for f in (HK.merge_costs_ref, HK.merge_costs, HK.merge_costs_cuda):
        n += refuses_each(f, dict(W=W, Z=Z), {
            # before: a NaN or an inf in W gave a NaN / inf cost
            "W": [W[:5], np.full((6, 6), np.nan), np.full((6, 6), np.inf), "abc", None, [[1j] * 6] * 6],
            "Z": [Z[:4], Z[:, :3], np.full_like(Z, np.nan), Z + 0.5, np.where(Z == Z.max(), 1e30, Z), "abc", None]})
    n += refuses_each(HK.leaf_ranges, dict(Z=Z), {"Z": [Z[:, :3], np.full_like(Z, np.nan), "abc", Z + 0.25]})
    n += refuses_each(HK.weights_defect, dict(W=W), {"W": [W[:5], W.astype(np.float32), W.tolist(), "abc"],
                                                     "rtol": [-1.0, float("nan"), "a"], "atol": [None]})
    assert n >= 100


def test_hclust_chapter_refuses_hostile_input():
    Z, W = _tree(8, 0), _weights(8, 0)
    np.fill_diagonal(W, 0)
    n = refuses_each(HC.dasgupta_cost, dict(W=W, tree=Z), {
        "W": [W[:7], W[0], np.full((8, 8), np.nan), -W, W + np.triu(W, 1), "abc", None, [[1, 2], [3]]],
        "tree": [Z[:6], np.full_like(Z, np.nan), "abc", None, Z[:, :3]]})
    n += refuses_each(HC.mw_revenue, dict(W=W, tree=Z), {"W": [np.full((8, 8), np.inf)], "tree": [Z[:3]]})
    n += refuses_each(HC.lca_sizes, dict(tree=Z), {"tree": ["abc", np.full_like(Z, np.nan), Z[:, :3], Z + 0.5]})
    n += refuses_each(HC.SplittingOracle, dict(tree=Z, p_err=0.1), {"p_err": ["a", None, 0.5, float("nan")],
                                                                    "seed": [-1, 1.5]})
    o = HC.SplittingOracle(Z, 0.1)
    # before: float vertex ids were truncated, pairs of the wrong shape raised IndexError before the check
    n += refuses_each(o.query_many, dict(u=[0], v=[1], w=[2]), {"u": [[0.5], [-1], [8]], "v": [["a"]],
                                                                 "w": [[0, 1, 2, 3, 4]]})
    n += refuses_each(o.count_votes, dict(pairs=[[0, 1]], witnesses=[[2, 3]]), {
        "pairs": [[0, 1], [[0, 8]], [[0.5, 1]]], "witnesses": [[[2.5, 3]], [[9, 3]], [2, 3]]})
    for f in (HC.oracle_hc_dasgupta, HC.oracle_hc_mw):
        # before: leaf_size='a' raised "'<' not supported", votes=10**12 tried to allocate n x 10**12 draws
        n += refuses_each(f, dict(oracle=o), {"anchors": ["a", 2, 1.5], "votes": [0, 10**12, None],
                                              "leaf_size": [2, "a", 1.5], "oracle": [Z, None]})
    n += refuses_each(HC.hsbm, dict(depth=3), {"q_min": ["a", float("nan")], "q_max": [None, 2.0],
                                               "q": [[0.5, "a", 0.1], [np.nan] * 3], "depth": [0, 40, "3"]})
    n += refuses_each(HC.DataTripletOracle, dict(W=W), {"hops": [0, 65, 1.5, "2"], "W": [np.full((8, 8), -1.0)]})
    assert n >= 60


@settings(max_examples=10)
@given(n=st.integers(2, 300), seed=seeds)
def test_hclust_chapter_checks_make_no_n_by_n_copy(n, seed):
    "check_weights returns the caller's float64 array itself (no copy), whatever its layout."
    W = _weights(n, seed)
    assert HC.check_weights(W) is W
    V = non_contiguous(W)
    assert np.shares_memory(HC.check_weights(V), V)


# ------------------------------------------------------------------------------------------------------ contraction

@st.composite
def graphs(draw, max_n=9, max_m=16):
    n = draw(st.integers(2, max_n))
    m = draw(st.integers(0, max_m))
    g = np.random.default_rng(draw(seeds))
    src, dst = g.integers(0, n, m), g.integers(0, n, m)
    w = g.choice([0.0, 0.5, 1.0, 3.0], m) if draw(st.booleans()) else g.random(m) * 10
    return n, src, dst, w, g


@settings(max_examples=20)
@given(gr=graphs(), boost=st.sampled_from([1.0, 3.0, math.inf]), t=st.integers(0, 5), seed=seeds,
       use_pred=st.booleans())
def test_contraction_njit_equals_reference(gr, boost, t, seed, use_pred):
    n, src, dst, w, g = gr
    pred = g.random(len(w)) < 0.4 if use_pred else None
    r1, tier1, r2 = C.phase_rates(w, pred, boost)
    ids = np.arange(6)
    ref = C.trials_ref(n, src, dst, w, r1, tier1, r2, t, seed, ids)
    got = C.trials_njit(n, src, dst, w, r1, tier1, r2, t, seed, ids)
    assert np.array_equal(got, ref)
    # int32 / list / non-contiguous versions of the same values
    assert np.array_equal(C.trials_njit(n, src.astype(np.int32), dst.tolist(), non_contiguous(w), r1, tier1,
                                        r2.tolist(), t, seed, list(ids)), got)
    v, side = C.trial_side_njit(n, src, dst, w, r1, tier1, r2, t, seed, 3)
    vr, sr = C.trial_ref(n, src, dst, w, r1, tier1, r2, t, seed, 3)
    assert v == vr == got[3] and np.array_equal(side, sr)
    assert C.cut_value(src, dst, w, side) == v
    best = C.karger_stein_njit(n, src, dst, w, pred, boost, max(t, 2), seed, run_ids=np.arange(3))
    bv, bside = C.karger_stein_njit(n, src, dst, w, pred, boost, max(t, 2), seed, side_of=int(np.argmin(best)))
    assert np.isfinite(best).all() and bv == best.min() and C.cut_value(src, dst, w, bside) == pytest.approx(bv)


def test_contraction_refuses_hostile_input():
    n, src, dst, w = 4, np.array([0, 1, 2]), np.array([1, 2, 3]), np.array([1.0, 2.0, 3.0])
    r1, tier1, r2 = C.phase_rates(w)
    good = dict(n=n, src=src, dst=dst, w=w, r1=r1, tier1=tier1, r2=r2, t=2, seed=0)
    bad = {
        # before: no check at all: node ids >= n or < 0 were read past the union-find arrays (step_njit's defect)
        "n": [1, 0, -3, 2.5, "4", None, True, *HUGE_SIZES],
        "src": [[0, 1, 4], [-1, 1, 2], [0.5, 1, 2], [0, 1], [[0, 1, 2]], "abc", None],
        "dst": [[1, 2, 99], [1, 2], [1.0, np.nan, 3]],
        "w": [[1.0, np.nan, 1.0], [1.0, -1.0, 1.0], [1.0, np.inf, 1.0], [1.0], "abc"],
        "r1": [[np.nan, 1, 1], [-1.0, 1, 1], [1.0, 1.0]],
        "tier1": [[0, 2, 0], [0, -1, 0], [0.5, 0, 0], [0, 0]],
        "r2": [[1.0, 1.0, np.inf], [1.0, 1.0]],
        "t": [-1, 1.5, "2", None, 2**63],
        # before: seed=-1 raised OverflowError from np.uint64 (neither ValueError nor TypeError)
        "seed": [-1, 2**64, 0.5, "0", None],
    }
    cnt = 0
    for f, extra in ((C.trials_njit, dict(trial_ids=[0, 1])), (C.trials_ref, dict(trial_ids=[0, 1])),
                     (C.trial_side_njit, dict(trial_id=0)), (C.trial_ref, dict(trial=0)),
                     (C.trials_cuda, dict(trial_ids=[0, 1])), (C.check_contraction_inputs, {})):
        cnt += refuses_each(f, {**good, **extra}, bad)
    for f, arg in ((C.trials_njit, "trial_ids"), (C.trials_ref, "trial_ids"), (C.trials_cuda, "trial_ids")):
        cnt += refuses_each(f, {**good, arg: [0]}, {arg: [[-1], [0.5], "abc", [[0]]]})
    cnt += refuses_each(C.trial_side_njit, {**good, "trial_id": 0}, {"trial_id": [-1, 0.5, [0, 1], 2**64]})
    ks = dict(n=n, src=src, dst=dst, w=w)
    cnt += refuses_each(C.karger_stein_njit, ks, {"n": [1, 10**12, "4"], "src": [[0, 1, 9]], "w": [[1, np.nan, 1]],
                                                  "predicted": [[True], [1, 0, 1]], "boost": [0.5, float("nan"), "x"],
                                                  "t": [-1], "seed": [-1], "run_ids": [[-1]], "side_of": [-1, 0.5]})
    cnt += refuses_each(C.phase_rates, dict(w=w), {"w": [[np.nan], [-1.0], "abc"], "predicted": [[True], ["a"] * 3],
                                                   "boost": [0.5, float("nan"), "x", None]})
    cnt += refuses_each(C.cut_value, dict(src=src, dst=dst, w=w, side=np.array([True, False, True, False])),
                        {"side": [[1, 0, 1, 0], np.ones(2, bool)], "src": [[0, 1, 9]], "w": [[1.0, 2.0]]})
    assert cnt >= 150


# ---------------------------------------------------------------------------------------------------------- quant

@given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=3), bs=st.sampled_from([2, 4, 6, 64]), seed=seeds,
       scale=st.sampled_from([1e-30, 1.0, 1e30]))
def test_nf4_njit_equals_reference_on_any_layout(shape, bs, seed, scale):
    W = np.random.default_rng(seed).standard_normal(shape) * scale
    ref = Q.quantize_nf4_ref(W, bs)
    got = Q.quantize_nf4(W, bs)
    assert all(np.array_equal(a, b) for a, b in zip(got, ref))
    assert all(np.array_equal(a, b) for a, b in zip(Q.quantize_nf4(non_contiguous(W.astype(np.float32)), bs), ref))
    back = Q.dequantize_nf4(*got, tuple(shape), bs)
    assert np.array_equal(back, Q.dequantize_nf4_ref(*ref, tuple(shape), bs)) and np.isfinite(back).all()


@st.composite
def row_codes(draw):
    R, bs = draw(st.integers(1, 5)), draw(st.sampled_from([1, 3, 8, 32]))
    C = bs * draw(st.integers(1, 4))
    g = np.random.default_rng(draw(seeds))
    bits = g.choice([1, 2, 4], R)
    thr = np.sort(g.uniform(-1, 1, (R, 15)), axis=1).astype(np.float32)
    lev = np.sort(g.uniform(-1, 1, (R, 16)), axis=1).astype(np.float32)
    return g.standard_normal((R, C)).astype(np.float32), bs, bits, thr, lev


@given(rc=row_codes())
def test_row_codecs_njit_equal_reference(rc):
    W, bs, bits, thr, lev = rc
    ref = Q.encode_rows_ref(W, bs, bits, thr)
    got = Q.encode_rows(non_contiguous(W), bs, bits.tolist(), thr)
    assert all(np.array_equal(a, b) for a, b in zip(got, ref))
    packed, offsets, absmax = ref
    out = Q.decode_rows(packed, offsets, absmax, bits, lev, bs)
    assert np.array_equal(out, Q.decode_rows_ref(packed, offsets, absmax, bits, lev, bs))


def test_quant_refuses_hostile_input():
    W = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    bits = np.array([1, 2, 4])
    thr = np.sort(np.random.default_rng(1).uniform(-1, 1, (3, 15)), axis=1)
    lev = np.sort(np.random.default_rng(2).uniform(-1, 1, (3, 16)), axis=1)
    packed, offsets, absmax = Q.encode_rows(W, 4, bits, thr)
    cnt = 0
    for f in (Q.decode_rows, Q.decode_rows_ref, Q.decode_rows_cuda):
        cnt += refuses_each(f, dict(packed=packed, offsets=offsets, absmax=absmax, bits=bits, levels=lev, blocksize=4), {
            # before: decode_rows took offsets as given: shifted offsets read past `packed` (garbage, or a
            # crash under bounds checks); bits=3, a short levels table or a NaN scale gave wrong values
            "offsets": [offsets + 5, offsets[::-1], offsets[:-1], offsets * 1.5, "abc"],
            "packed": [packed[:-1], packed.astype(np.int64), packed.reshape(1, -1), None],
            "bits": [[1, 2, 3], [1, 2], [1.5, 2, 4], None],
            "levels": [lev[:, :4], lev[:2], np.full((3, 16), np.nan), "abc"],
            "absmax": [np.full_like(absmax, np.nan), absmax[0], np.zeros((3, 0)), None],
            "blocksize": [0, -4, 2.5, "4", None, True]})
    for f in (Q.encode_rows, Q.encode_rows_ref, Q.encode_rows_cuda):
        cnt += refuses_each(f, dict(W=W, blocksize=4, bits=bits, thresholds=thr), {
            "W": [np.full((3, 8), np.nan), W[0], np.zeros((0, 8)), "abc", None],
            "blocksize": [0, 3, 2.5, "4", None],
            "bits": [[1, 2, 8], [1, 2], "abc"],
            # before: a short thresholds table was padded with zeros by the kernel but not by the reference
            "thresholds": [thr[:, :3], thr[:2], np.full((3, 15), np.nan), "abc", None]})
    packed1, absmax1 = Q.quantize_nf4(W, 4)
    for f in (Q.quantize_nf4, Q.quantize_nf4_ref, Q.quantize_nf4_cuda):
        cnt += refuses_each(f, dict(W=W, blocksize=4), {"W": [np.full(4, np.inf), [], "abc", None, [1j]],
                                                       "blocksize": [0, 3, 2.5, "4", None, True]})
    for f in (Q.dequantize_nf4, Q.dequantize_nf4_ref, Q.dequantize_nf4_cuda):
        cnt += refuses_each(f, dict(packed=packed1, absmax=absmax1, shape=(3, 8), blocksize=4), {
            # before: blocksize=0 raised ZeroDivisionError, shape=(-3, -8) passed as 24 values, a NaN scale gave NaN
            "blocksize": [0, 3, "4", None], "shape": [(-3, -8), (3, 9), "ab", None, (3.5, 8), 0],
            "absmax": [np.full_like(absmax1, np.nan), absmax1[:-1]], "packed": [packed1[:-1], packed1.astype(int)]})
    cnt += refuses_each(Q.row_offsets, dict(bits=bits, C=8), {"bits": [[0, 1], "a"], "C": [-1, 2.5, "8"]})
    assert cnt >= 150


# ----------------------------------------------------------------------------------------------------------- ista

@settings(max_examples=15)
@given(B=st.integers(1, 3), N=st.integers(1, 6), n=st.integers(1, 8), iters=st.integers(0, 30), seed=seeds)
def test_ista_njit_equals_reference(B, N, n, iters, seed):
    g = np.random.default_rng(seed)
    X = g.standard_normal((B, N, n))
    a_star = g.standard_normal((B, n)) + 0.1
    y = np.einsum("bij,bj->bi", X, a_star)
    b1, b2 = g.uniform(0, 0.1, B), g.uniform(0, 0.1, B)
    logs = sorted(set(g.integers(0, iters + 1, 3).tolist()))
    ref = I.ista_batch_ref(X, y, b1, b2, None, iters, a_star, logs)
    for got in (I.ista_batch(X, y, b1, b2, None, iters, a_star, logs),
                I.ista_batch(non_contiguous(X), y.tolist(), b1, b2, None, iters, a_star, np.array(logs, np.int32))):
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert all(np.isfinite(r).all() for r in ref)


def test_ista_refuses_hostile_input():
    g = np.random.default_rng(0)
    X, y = g.standard_normal((2, 4, 5)), g.standard_normal((2, 4))
    good = dict(X=X, y=y, beta1=0.01, beta2=0.0, lr=0.05, iters=10, a_star=g.standard_normal((2, 5)))
    cnt = 0
    for f in (I.ista_batch, I.ista_batch_ref, I.ista_batch_cuda):
        cnt += refuses_each(f, good, {
            "X": [np.full((2, 4, 5), np.nan), X[0], np.zeros((0, 4, 5)), "abc", None],
            "y": [y[:, :3], np.full((2, 4), np.inf), "abc"],
            # before: beta1 = NaN passed the `< 0` test and gave NaN iterates; a (3,) beta1 an unclear broadcast error
            "beta1": [float("nan"), -1.0, [0.1, 0.1, 0.1], "a", None],
            "beta2": [float("inf"), -0.5, [[0.1]]],
            # before: a step far above the stability limit gave inf / NaN iterates without an error (a step just
            # above it diverges more slowly: refused once the iterates overflow)
            "lr": [0.0, -1.0, float("nan"), 1e200, "a"],
            # before: a huge iters was started (hours); a float iters 10.5 refused only by isinstance
            "iters": [-1, 10.5, "10", None, 10**13],
            "a_star": [np.zeros((2, 5)), np.full((2, 5), np.nan), np.ones((2, 4))],
            "log_at": [[11], [-1], [2.5], "a"]})
    cnt += refuses_each(I.stable_lr, dict(X=X), {"X": [np.full((2, 4, 5), np.inf), np.ones(3), "abc", np.zeros((0, 3))],
                                                 "beta2": [float("nan"), -1.0, [0.1] * 5]})
    assert cnt >= 80


# ------------------------------------------------------------------------------------------------------- makespan

@settings(max_examples=15)
@given(S=st.integers(1, 4), micro=st.integers(1, 4), P=st.integers(0, 5), all_pairs=st.booleans(), seed=seeds)
def test_makespan_njit_equals_reference(S, micro, P, all_pairs, seed):
    ptr, pred, slot, kind, n_extra = MS.schedule_dag(S, micro, all_pairs)
    dur, extra = MS.random_plan_weights(S, n_extra, P, seed, all_pairs)
    ref = MS.makespan_ref(ptr, pred, slot, kind, dur, extra)
    assert np.array_equal(MS.makespan_njit(ptr, pred, slot, kind, dur, extra), ref)
    assert np.array_equal(MS.makespan_njit(ptr.tolist(), pred.astype(np.int32), slot, kind, non_contiguous(dur),
                                           extra), ref)
    np.testing.assert_allclose(MS.makespan_objgraph(ptr, pred, slot, kind, dur, extra), ref, rtol=1e-12)


def test_makespan_objgraph_takes_a_long_chain():
    "Before: its recursive depth-first sort raised RecursionError on a chain of a few thousand operations."
    n = 5000
    ptr = np.concatenate([[0], np.arange(n)])  # vertex v > 0 has the one predecessor v - 1
    pred = np.arange(n - 1)
    args = (ptr, pred, np.full(n - 1, -1), np.zeros(n, np.int64), np.full((1, 1), 1e-3), np.zeros((1, 0)))
    assert MS.makespan_objgraph(*args)[0] == pytest.approx(MS.makespan_njit(*args)[0], rel=1e-12)


def test_makespan_refuses_hostile_input():
    ptr, pred, slot, kind, n_extra = MS.schedule_dag(2, 2)
    dur, extra = MS.random_plan_weights(2, n_extra, 3)
    good = dict(ptr=ptr, pred=pred, slot=slot, kind=kind, dur=dur, extra=extra)
    cnt = 0
    for f in (MS.makespan_njit, MS.makespan_ref, MS.makespan_cuda, MS.makespan_objgraph, MS.check_makespan_inputs):
        cnt += refuses_each(f, good, {
            "ptr": [ptr[:-1] if len(ptr) > 2 else [0], ptr + 1, ptr[::-1], ptr + 0.5, [0], "abc", None],
            # before: float ids were truncated silently (1.5 -> 1)
            "pred": [pred + 0.5, -pred - 1, pred[:-1], np.full_like(pred, 10**6), "abc"],
            "slot": [slot + 0.5, np.full_like(slot, -2), np.full_like(slot, n_extra), slot[:-1]],
            "kind": [kind + 0.5, kind[:-1], kind + 99, -kind - 1],
            "dur": [np.full_like(dur, np.nan), -dur, dur[:, :1], dur[0], "abc"],
            "extra": [np.full_like(extra, np.nan), np.full_like(extra, np.inf), extra[:2], "abc"]})
    # before: schedule_dag(10**9, 2) ran for minutes, random_plan_weights(8, 10, 10**12) tried to allocate terabytes
    cnt += refuses_each(MS.schedule_dag, dict(n_stages=2, n_micro=2), {"n_stages": [0, 10**9, 2.5, "2"],
                                                                       "n_micro": [0, *HUGE_SIZES, None]})
    cnt += refuses_each(MS.random_plan_weights, dict(n_stages=2, n_extra=3, n_plans=2), {
        "n_plans": [-1, *HUGE_SIZES, 1.5], "n_stages": [0, "2"], "n_extra": [-1], "seed": [-1, 0.5]})
    assert cnt >= 100


# ------------------------------------------------------------------------------------------------------ amo / mec

@settings(max_examples=20)
@given(n=st.integers(0, 6), seed=seeds, p=st.floats(0, 1))
def test_amo_njit_equals_reference_and_mec_on_chordal_graphs(n, seed, p):
    g = np.random.default_rng(seed)
    edges = [(u, v) for u, v in itertools.combinations(range(n), 2) if g.random() < p]
    adj = A.adjacency_masks(n, edges)
    ref = A.amo_count_ref(adj)
    assert A.amo_count_njit(adj) == ref == A.amo_count_njit(adj.astype(np.int32).tolist())
    try:
        got = MEC.count_amo(n, np.array(edges, np.int64).reshape(-1, 2))
    except ValueError as e:  # a graph that is not chordal is refused, by the reference too
        assert "not chordal" in str(e)
        return
    assert got == ref == MEC.count_amo_ref(n, edges)


@settings(max_examples=10)
@given(n=st.integers(1, 12), k=st.integers(1, 6), seed=seeds)
def test_mec_njit_equals_reference_on_random_chordal_graphs(n, k, seed):
    e = MEC.random_chordal_edges(n, k, seed)
    assert MEC.count_amo(n, e) == MEC.count_amo_ref(n, e) == MEC.count_amo(n, non_contiguous(e.T).T)


def test_amo_and_mec_refuse_hostile_input():
    cnt = refuses_each(A.adjacency_masks, dict(n=4, edges=[(0, 1)]), {
        # before: n='4' raised "'<=' not supported", an edge (0, 1.5) "unsupported operand"
        "n": [-1, 13, "4", None, 2.5, *HUGE_SIZES], "edges": [[(0, 1.5)], [(0, 4)], [(1, 1)], [(0, 1, 2)], "ab"]})
    adj = A.adjacency_masks(4, [(0, 1), (1, 2)])
    for f in (A.amo_count_ref, A.amo_count_njit, A.amo_count_cuda):
        cnt += refuses_each(f, dict(adj=adj), {"adj": [[2, 0, 0, 0], adj + 0.5, np.zeros(13, np.int64), [[0, 1]],
                                                       [1, 0], [-1, 0], "abc", None, [np.nan, 0]]})
    e = MEC.random_chordal_edges(6, 3, 0)
    for f in (MEC.count_amo, MEC.count_amo_ref, MEC.count_amo_residues):
        # before: n = 10**6 was started (a factorial of a million, minutes)
        cnt += refuses_each(f, dict(n=6, edges=e), {"n": [-1, 2.5, "6", None, MEC.MAX_N + 1, *HUGE_SIZES],
                                                    "edges": [e + 0.5, e + 6, -e - 1, e[:, :1], [[0, 0]], "abc"]})
    cnt += refuses_each(MEC.random_chordal_edges, dict(n=6, n_cliques=3), {
        "n": [0, 2.5, "6", 10**9], "n_cliques": [0, None], "seed": [-1, 1.5], "max_subtree": [0, "a"]})
    assert_refused(MEC.count_amo_graph, [(0, 1)])
    assert cnt >= 80


# ------------------------------------------------------------------------------------------------------------ mmd

@settings(max_examples=15)
@given(m=st.integers(2, 12), k=st.integers(2, 12), d=st.integers(1, 5), sigma=st.floats(0.05, 20), seed=seeds,
       unbiased=st.booleans())
def test_mmd_njit_equals_reference(m, k, d, sigma, seed, unbiased):
    g = np.random.default_rng(seed)
    X, Y = g.standard_normal((m, d)), g.standard_normal((k, d)) + 0.3
    ref = MMD.mmd2_rbf_ref(X, Y, sigma, unbiased)
    assert MMD.mmd2_rbf(X, Y, sigma, unbiased) == pytest.approx(ref, rel=1e-9, abs=1e-12)
    assert MMD.mmd2_rbf(non_contiguous(X), Y.tolist(), np.float32(sigma), unbiased, chunk=3) == \
        pytest.approx(MMD.mmd2_rbf_ref(X, Y, float(np.float32(sigma)), unbiased), rel=1e-9, abs=1e-12)
    s = MMD.median_bandwidth(X, Y)
    assert np.isfinite(s) and s > 0


def test_mmd_refuses_hostile_input():
    g = np.random.default_rng(0)
    X, Y = g.standard_normal((5, 3)), g.standard_normal((6, 3))
    cnt = 0
    for f in (MMD.mmd2_rbf, MMD.mmd2_rbf_ref, MMD.mmd2_rbf_cuda):
        cnt += refuses_each(f, dict(X=X, Y=Y, sigma=1.0), {
            "X": [X[:, :2], X[:1], np.full((5, 3), np.nan), X[0], "abc", None],
            "Y": [np.full((6, 3), np.inf), [[1j] * 3] * 2],
            # before: sigma = 1e-200 gave 1 / (2 sigma^2) = inf and inf * 0 = NaN
            "sigma": [0.0, -1.0, float("nan"), float("inf"), "1", None, 1e-200],
            "unbiased": ["yes", None, 2]}, name_in_message=True)
        # before: values near 1e200 overflowed the squared distances of the expansion |x|^2 + |y|^2 - 2 x.y: NaN.
        # The CUDA kernel sums (x - y)^2 directly (inf, a kernel value 0): a clean answer is fine there.
        if f is MMD.mmd2_rbf_cuda:
            outcome(f, X * 1e200, Y * 1e200, 1.0)
        else:
            assert_refused(f, X * 1e200, Y * 1e200, 1.0, name="X")
    cnt += refuses_each(MMD.mmd2_rbf, dict(X=X, Y=Y, sigma=1.0), {"chunk": [0, 2.5, "4"]})
    cnt += refuses_each(MMD.median_bandwidth, dict(X=X, Y=Y), {"X": [np.full((5, 3), np.nan), X[:, :2]],
                                                               "max_points": [1, "a", 10**9], "seed": [-1, 0.5]})
    assert cnt >= 60


# ------------------------------------------------------------------------------------------------------------ mnl

def _mnl_state(R, d, seed):
    g = np.random.default_rng(seed)
    theta = g.standard_normal((R, d)) * 0.3
    M = g.standard_normal((R, d, d))
    H = np.einsum("rij,rkj->rik", M, M) + d * np.eye(d)
    return theta, H, np.linalg.inv(H)


@settings(max_examples=15)
@given(R=st.integers(1, 3), N=st.integers(1, 7), d=st.integers(1, 4), seed=seeds)
def test_mnl_njit_equals_reference(R, N, d, seed):
    g = np.random.default_rng(seed)
    theta, H, Hinv = _mnl_state(R, d, seed)
    X = g.standard_normal((R, N, d))
    ref = MNL.optimistic_scores_ref(X, theta, Hinv, 0.5)
    np.testing.assert_allclose(MNL.optimistic_scores(non_contiguous(X), theta.tolist(), Hinv, 0.5), ref, rtol=1e-10)
    K = int(g.integers(1, N + 1))
    idx = MNL.top_k(ref, K)
    assert np.array_equal(idx, np.argsort(-ref, axis=1, kind="stable")[:, :K])
    XS = np.take_along_axis(X, idx[..., None], axis=1)
    u = g.random(R)
    ch = MNL.sample_choice(XS, theta, u)
    assert np.array_equal(ch, MNL.sample_choice_ref(XS, theta, u))
    s1, s2 = (theta.copy(), H.copy(), Hinv.copy()), (theta.copy(), H.copy(), Hinv.copy())
    MNL.confidence_update(*s1, XS, K, ch, 0.5, 10.0)
    MNL.confidence_update_ref(*s2, XS, K, ch, 0.5, 10.0)
    for a, b in zip(s1, s2):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_mnl_refuses_hostile_input():
    R, N, d = 2, 5, 3
    theta, H, Hinv = _mnl_state(R, d, 0)
    X = np.random.default_rng(1).standard_normal((R, N, d))
    cnt = 0
    for f in (MNL.optimistic_scores, MNL.optimistic_scores_ref, MNL.optimistic_scores_cuda):
        cnt += refuses_each(f, dict(X=X, theta=theta, Hinv=Hinv, beta=0.5), {
            "X": [X[0], np.full((R, N, d), np.nan), X.astype(complex), "abc"],
            "theta": [theta[:, :2], theta[0]], "Hinv": [Hinv[:, :2]], "beta": [[0.5] * 3, "a"]},
            name_in_message=False)
    scores = MNL.optimistic_scores(X, theta, Hinv, 0.5)
    # before: K = 1.5 passed the range test and failed in np.empty; a 0-d scores raised IndexError
    cnt += refuses_each(MNL.top_k, dict(scores=scores, K=2), {"K": [0, N + 1, 1.5, "2", None],
                                                              "scores": [np.full((R, N), np.nan), 3.0, "abc"]})
    XS = X[:, :2]
    for f in (MNL.sample_choice, MNL.sample_choice_ref):
        # before: NaN utilities or u outside [0, 1] gave a choice without an error
        cnt += refuses_each(f, dict(XS=XS, theta_star=theta, u=0.5), {
            "XS": [np.full((R, 2, d), np.nan), XS[0], "abc"], "theta_star": [np.full((R, d), np.inf), theta[:1]],
            "u": [float("nan"), -0.1, 1.5, [0.5] * 3, "a"]})
    for f in (MNL.confidence_update, MNL.confidence_update_ref, MNL.confidence_update_cuda):
        good = dict(theta=theta.copy(), H=H.copy(), Hinv=Hinv.copy(), XS=XS, n_offered=2, choice=0, eta=0.5, B=10.0)
        cnt += refuses_each(f, good, {"n_offered": [0, 3, 1.5], "choice": [2, -2, 0.5], "eta": [0.0, float("nan")],
                                      "B": [0.0, float("nan")], "XS": [np.full((R, 2, d), np.nan), XS[:, :, :2]],
                                      "theta": [theta.astype(np.float32), theta.tolist()]})
    for f in (MNL.refactorize, MNL.refactorize_ref, MNL.refactorize_cuda):
        cnt += refuses_each(f, dict(H=H, Hinv=Hinv.copy()), {"H": [np.full_like(H, np.nan), -H, H[:, :2]],
                                                             "Hinv": [Hinv.tolist(), Hinv[:1].copy()]})
    cnt += refuses_each(MNL.bandit_round, dict(X=X, theta=theta.copy(), H=H.copy(), Hinv=Hinv.copy(), K=2, beta=0.5,
                                               eta=0.5, B=10.0, respond=lambda XS: np.zeros(R, np.int64)),
                        {"K": [0, 1.5, "2", N + 1], "respond": [None, 3], "X": [np.full((R, N, d), np.nan)]},
                        name_in_message=False)
    assert cnt >= 80


# ------------------------------------------------------------------------------------------------------ everything

@settings(max_examples=30)
@given(value=st.sampled_from(BAD_NUMBERS + HUGE_SIZES + NOT_ARRAYS),
       target=st.sampled_from(["count_votes.p", "merge_costs.W", "trials_njit.n", "trials_njit.seed",
                               "quantize_nf4.blocksize", "ista_batch.iters", "makespan_njit.dur", "count_amo.n",
                               "mmd2_rbf.sigma", "top_k.K", "decode_rows.blocksize", "dasgupta_cost.W"]))
def test_any_bad_value_anywhere_is_refused_or_answered_cleanly(value, target):
    """One bad value in one argument of a valid call: a clean answer (no NaN) or a one-line ValueError/TypeError;
    never another exception, a crash or a hang (`outcome`)."""
    Z, W = _tree(6, 0), _weights(6, 0)
    r1, tier1, r2 = C.phase_rates([1.0, 2.0])
    ptr, pred, slot, kind, ne = MS.schedule_dag(2, 2)
    dur, extra = MS.random_plan_weights(2, ne, 2)
    Wq = np.ones((2, 8), np.float32)
    pk, off, am = Q.encode_rows(Wq, 4, [1, 2], np.zeros((2, 3)))
    X3 = np.ones((1, 2, 2))
    calls = {
        "count_votes.p": lambda v: HK.count_votes(HC.lca_sizes(Z), [[0, 1]], [[2, 3]], v, 0),
        "merge_costs.W": lambda v: HK.merge_costs(v, Z),
        "trials_njit.n": lambda v: C.trials_njit(v, [0, 1], [1, 2], [1.0, 2.0], r1, tier1, r2, 2, 0, [0]),
        "trials_njit.seed": lambda v: C.trials_njit(3, [0, 1], [1, 2], [1.0, 2.0], r1, tier1, r2, 2, v, [0]),
        "quantize_nf4.blocksize": lambda v: Q.quantize_nf4(Wq, v),
        "ista_batch.iters": lambda v: I.ista_batch(X3, [[1.0, 1.0]], 0.0, 0.0, 0.1, v, [[1.0, 1.0]]),
        "makespan_njit.dur": lambda v: MS.makespan_njit(ptr, pred, slot, kind, v, extra),
        "count_amo.n": lambda v: MEC.count_amo(v, []),
        "mmd2_rbf.sigma": lambda v: MMD.mmd2_rbf(np.eye(3), np.ones((2, 3)), v),
        "top_k.K": lambda v: MNL.top_k(np.arange(5.0), v),
        "decode_rows.blocksize": lambda v: Q.decode_rows(pk, off, am, [1, 2], np.zeros((2, 4)), v),
        "dasgupta_cost.W": lambda v: HC.dasgupta_cost(v, Z),
    }
    outcome(calls[target], value, timeout=20)
