"""Property-based reliability suite, third round (issue 49, re-probe): regressions for the defects an outside
re-probe found in the kernels pointmass, makespan, mec, pareto, hclust and ista and in the `icml25nb.pareto` block.

Each test names the input that misbehaved before the fix (a numba TypingError, an IndexError, a hang, a silently
wrong answer, an inf or a NaN from finite inputs, a LinAlgError) and checks that it now gives the reference's answer
or a one-line ValueError/TypeError naming the argument. `make test` runs this file a second time under
NUMBA_BOUNDSCHECK=1.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fuzzutil import assert_refused, has_nan, outcome, same
from icml25nb import pareto as PB
from icml25nb.algorithms import hclust as HC
from icml25nb.kernels import contraction as CT
from icml25nb.kernels import hclust as HK
from icml25nb.kernels import ista as IS
from icml25nb.kernels import makespan as MS
from icml25nb.kernels import mec as MEC
from icml25nb.kernels import pareto as PK
from icml25nb.kernels import pointmass as PM


# --- pointmass (re-probe items 3 and 30) ---------------------------------------------------------------------------

def _readonly(a):
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


@pytest.mark.parametrize("which", range(4))
def test_pointmass_accepts_read_only_arrays(which):
    "Before: one read-only array among writeable ones made `_first_nonfinite` a numba TypingError (mixed tuple)."
    rng = np.random.default_rng(which)
    args = [rng.uniform(-1, 1, (4, 2)) for _ in range(4)]
    want = PM.step_ref(*args)
    ro = list(args)
    ro[which] = _readonly(ro[which])
    for fn in (PM.step_njit, PM.step_ref):
        assert same(fn(*ro), want)
    assert same(PM.step_njit(*[_readonly(a) for a in args]), want)  # all four read-only


@pytest.mark.parametrize("kw, name", [(dict(dt=1e10, damping=1e308), "damping"), (dict(dt=3.0, damping=1.0), "damping"),
                                      (dict(dt=1e200, force=1e200, damping=0.0), "force")])
def test_pointmass_refuses_an_unstable_or_overflowing_step(kw, name):
    "Before: dt = 1e10, damping = 1e308 gave all-NaN (1 - inf = -inf, times a zero velocity); dt * force = inf too."
    x = np.zeros((1, 2))
    for fn in (PM.step_njit, PM.step_ref, PM.check_step_params):
        args = (x, x, np.ones((1, 2)), x) if fn is not PM.check_step_params else ()
        full = dict(dt=0.1, force=2.0, damping=1.0, ctrl_cost=0.0) if fn is PM.check_step_params else {}
        assert_refused(fn, *args, **{**full, **kw}, name=name)


@settings(max_examples=40, deadline=None)
@given(dt=st.floats(1e-300, 1e300), damping=st.floats(0, 1e308), force=st.floats(0, 1e308),
       vel=st.floats(-1.7e308, 1.7e308), act=st.floats(-2, 2), goal=st.floats(-1e10, 1e10))
def test_pointmass_never_nan(dt, damping, force, vel, act, goal):
    "Any finite input: the step equals the reference, or the parameters are refused; never a NaN."
    args = (np.zeros((1, 2)), np.full((1, 2), vel), np.full((1, 2), goal), np.full((1, 2), act))
    kind, val = outcome(PM.step_njit, *args, dt=dt, force=force, damping=damping)
    if kind == "refused":
        assert "damping" in str(val) or "force" in str(val)
        return
    assert kind == "ok", val
    assert not has_nan(val)
    assert same(val, PM.step_ref(*args, dt=dt, force=force, damping=damping))


# --- makespan (re-probe items 8 and 29) ----------------------------------------------------------------------------

@settings(max_examples=15, deadline=None)
@given(S=st.integers(1, 5), all_pairs=st.booleans(), n_extra=st.integers(0, 30))
def test_random_plan_weights_fits_schedule_dag_or_names_n_extra(S, all_pairs, n_extra):
    "Before: random_plan_weights(2, 0, 0) was an IndexError; an n_extra that is not schedule_dag's is now refused."
    want = MS.schedule_dag(S, 2, all_pairs)[4]
    if n_extra != want:
        assert_refused(MS.random_plan_weights, S, n_extra, 2, all_pairs=all_pairs, name="n_extra")
    else:
        dur, extra = MS.random_plan_weights(S, n_extra, 2, all_pairs=all_pairs)
        assert dur.shape == (2, 2 * S + 1) and extra.shape == (2, want)


def test_random_plan_weights_2_0_0():
    assert_refused(MS.random_plan_weights, 2, 0, 0, name="n_extra")


@pytest.mark.parametrize("big", ["extra", "dur", "both"])
def test_makespan_refuses_inputs_whose_makespan_overflows(big):
    "Before: extra = 1e308 (finite) gave a makespan of inf in every implementation."
    ptr, pred, slot, kind, n_extra = MS.schedule_dag(2, 2)
    dur, extra = MS.random_plan_weights(2, n_extra, 2)
    extra = np.where(np.isfinite(extra), 1e308 if big != "dur" else extra, extra)
    dur = np.full_like(dur, 1e308) if big != "extra" else dur
    for fn in (MS.makespan_njit, MS.makespan_ref, MS.makespan_objgraph, MS.check_makespan_inputs):
        assert_refused(fn, ptr, pred, slot, kind, dur, extra, name=big if big != "both" else "dur")


@settings(max_examples=20, deadline=None)
@given(scale=st.floats(1e-300, 1e300), seed=st.integers(0, 100))
def test_makespan_scaled_is_finite_or_refused(scale, seed):
    "Scaled plan weights: the makespan scales with them (relative 1e-12) or the inputs are refused; never inf."
    ptr, pred, slot, kind, n_extra = MS.schedule_dag(3, 2)
    dur, extra = MS.random_plan_weights(3, n_extra, 2, seed=seed)
    base = MS.makespan_ref(ptr, pred, slot, kind, dur, extra)
    kind_, val = outcome(MS.makespan_njit, ptr, pred, slot, kind, dur * scale, extra * scale)
    if kind_ == "refused":
        assert "dur" in str(val) and scale > 1e290
        return
    assert kind_ == "ok", val
    assert np.all(np.isfinite(val))
    np.testing.assert_allclose(val, base * scale, rtol=1e-12)


# --- mec (re-probe item 19) ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [-1, -10**9, MEC.MAX_N + 1, 10**6, 10**400, 2.5, "3", None])
def test_primes_for_refuses_negative_huge_and_non_integer_n(n):
    "Before: primes_for(10**6) searched primes for minutes (a hang); primes_for(-1) returned a list."
    assert_refused(MEC.primes_for, n, name="n", timeout=5)


@settings(max_examples=10, deadline=None)
@given(n=st.integers(0, 200))
def test_primes_for_covers_n_factorial(n):
    ps = MEC.primes_for(n)
    assert ps == sorted(ps, reverse=True) and all(p < 2**50 for p in ps)
    assert math.prod(ps) > math.factorial(max(n, 1)) >= math.prod(ps[:-1])


# --- pareto: exactness of integers (re-probe item 24) and overflow of the indicators (item 29) ----------------------

BIG = 2**53


@pytest.mark.parametrize("fn, args, name", [
    (PK.nondominated_mask, (np.array([[BIG, 0], [BIG + 1, 0]]),), "Y"),  # before: [True, True] (both one float)
    (PK.pareto_rank, (np.array([[BIG, 0], [BIG + 1, 0]]),), "Y"),
    (PK.nondominated_mask_ref, (np.array([[-BIG - 1, 0], [0, 0]]),), "Y"),
    (PK.check_points, ([[9007199254740993, 0]],), "Y"),
    (PK.nondominated_mask, (np.array([[2**63]], dtype=np.uint64),), "Y"),
    (PB.hypervolume, ([[9007199254740993, 0]], [9007199254740994, 1]), "Y"),  # before: 2.0, true 1
    (PB.hypervolume, ([[BIG, 0]], [BIG + 1, 1]), "ref"),  # before: 0.0, true 1
    (PB.nondominated_mask, (np.array([[BIG + 1, 0], [BIG, 0]]),), "Y"),
    (PB.pareto_rank, ([[BIG + 3, 1], [BIG + 2, 1]],), "Y"),
    (PB.epsilon_additive, (np.array([[BIG + 1]]), [[0]]), "A"),
    (PB.igd, ([[0]], np.array([[BIG + 1]])), "R"),
    (PB.igd_plus, ([[0]], np.array([[-BIG - 1]])), "R"),
])
def test_pareto_refuses_integers_float64_cannot_hold(fn, args, name):
    assert_refused(fn, *args, name=name)


@settings(max_examples=25, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(-BIG, BIG), st.integers(-BIG, BIG)), min_size=1, max_size=6))
def test_pareto_exact_on_integers_up_to_2_53(rows):
    "Integers of magnitude <= 2**53 are exact in float64: the int64 answer equals the float64 one and brute force."
    Y = np.array(rows, dtype=np.int64)
    mask = PK.nondominated_mask(Y)
    assert np.array_equal(mask, PK.nondominated_mask(Y.astype(float)))
    brute = [not any(all(int(b) <= int(a) for a, b in zip(r, q)) and tuple(q) != tuple(r) for q in rows)
             for r in rows]
    assert mask.tolist() == brute


@pytest.mark.parametrize("fn, A, R", [
    (PB.hypervolume, [[0.0, 0.0]], [1e308, 1e308]),  # before: inf (true 1e616)
    (PB.hypervolume, [[-1e308, -1e308]], [1e308, 1e308]),
    (PB.epsilon_additive, [[1e308]], [[-1e308]]),  # true 2e308
    (PB.igd, [[1e308, 0.0]], [[-1e308, 1e308]]),
    (PB.igd_plus, [[1e308, 1e308]], [[-1e308, -1e308]]),
])
def test_pareto_indicators_beyond_float64_are_refused(fn, A, R):
    "Before: inf from finite inputs; now one line naming the arguments (the true value exceeds float64's range)."
    assert_refused(fn, A, R, name="ref" if fn is PB.hypervolume else "A and R")


@pytest.mark.parametrize("fn, A, R, want", [
    (PB.igd, [[1e200, 0.0]], [[0.0, 1e200]], math.sqrt(2) * 1e200),  # before: inf (the squares overflowed)
    (PB.igd_plus, [[1e200, 0.0]], [[0.0, -1e200]], math.sqrt(2) * 1e200),
    (PB.epsilon_additive, [[1e308, 0.0]], [[-1e307, 1.0]], 1.1e308),
    (PB.hypervolume, [[-1e308, 0.0]], [1e308, 1e-300], 2e8),  # before: inf (1e308 - -1e308 overflowed)
    (PB.hypervolume, [[0.0, 0.0]], [1e200, 1e-200], 1.0),
])
def test_pareto_indicators_with_huge_finite_values_are_computed(fn, A, R, want):
    assert fn(A, R) == pytest.approx(want, rel=1e-12)


@settings(max_examples=20, deadline=None)
@given(k=st.integers(-900, 900), seed=st.integers(0, 50))
def test_pareto_indicators_scale_by_powers_of_two(k, seed):
    "f(2^k A, 2^k R) = 2^k f(A, R) (2^(mk) for the hypervolume): exactly, or a refusal where it is beyond float64."
    rng = np.random.default_rng(seed)
    A, R = rng.uniform(0, 1, (4, 2)), rng.uniform(0, 1, (3, 2))
    ref = np.array([1.5, 1.5])
    for fn, a, r, deg in ((PB.hypervolume, A, ref, 2), (PB.igd, A, R, 1), (PB.igd_plus, A, R, 1),
                          (PB.epsilon_additive, A, R, 1)):
        base = fn(a, r)
        kind, val = outcome(fn, np.ldexp(a, k), np.ldexp(r, k))
        try:
            want = math.ldexp(base, deg * k)
        except OverflowError:
            want = math.inf
        if not math.isfinite(want):
            assert kind == "refused", val
            continue
        assert kind == "ok", val
        if abs(want) > 1e-290:  # far from the subnormals, where scaling loses bits
            assert val == pytest.approx(want, rel=1e-12), fn.__name__


# --- hclust votes (re-probe item 27) -------------------------------------------------------------------------------

def _S():
    return HC.lca_sizes(np.array([[0, 1, 1.0, 2], [2, 3, 2.0, 3]]))


@pytest.mark.parametrize("fn", [HK.count_votes, HK.count_votes_ref, HK.count_votes_cuda])
@pytest.mark.parametrize("pairs", [[[0, 0]], [[1, 2], [0, 0]], np.array([[2.0, 2.0]])])
def test_count_votes_refuses_a_pair_of_one_vertex(fn, pairs):
    "Before: count_votes(S, [[0, 0]], [[2]], .1, 0) -> [1] (a vote for a 'pair' of one vertex); now one line."
    wit = np.full((len(pairs), 1), 1)
    assert_refused(fn, _S(), pairs, wit, 0.1, 0, name="pairs")


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**64 - 1), p=st.floats(0, 0.49), m=st.integers(0, 6))
def test_count_votes_skips_witnesses_of_their_own_pair(seed, p, m):
    """A witness equal to a vertex of its pair is skipped, as documented (the chapter passes every member of a
    cluster); the other witnesses get `oracle_answer_ref`'s answer, which refuses such triplets."""
    S = HC.lca_sizes(np.array([[0, 1, 1.0, 2], [2, 3, 2.0, 3], [4, 5, 3.0, 4]]))
    g = np.random.default_rng(seed % 1000)
    pairs = np.array([[0, 1], [2, 3], [1, 3]])
    wit = g.integers(0, 4, (3, m))
    got = HK.count_votes(S, pairs, wit, p, seed)
    assert np.array_equal(got, HK.count_votes_ref(S, pairs, wit, p, seed))
    want = [sum(int(HK.oracle_answer_ref(S, [u], [v], [w], p, seed)[0]) == w for w in row if w not in (u, v))
            for (u, v), row in zip(pairs.tolist(), wit.tolist())]
    assert got.tolist() == want


# --- contraction.phase_rates (re-probe item 29) --------------------------------------------------------------------

def test_phase_rates_refuses_an_overflowing_boost():
    "Before: phase_rates(w * 1e300, predicted, 1e100) returned inf rates from finite inputs."
    w = np.array([1.0, 2.0, 3.0]) * 1e300
    assert_refused(CT.phase_rates, w, np.array([False, True, False]), 1e100, name="boost")
    r1, tier1, r2 = CT.phase_rates(w, np.array([False, True, False]), 5e7)  # near the edge but finite: computed
    np.testing.assert_allclose(r1, [5e307, 2e300, 1.5e308], rtol=1e-15)
    r1, tier1, r2 = CT.phase_rates(w, np.array([False, True, False]), 1e201)  # counts as infinite: tiers, no product
    assert r1.tolist() == w.tolist() and tier1.tolist() == [0, 1, 0]


@settings(max_examples=20, deadline=None)
@given(scale=st.floats(0, 1e308), boost=st.floats(1, 1e200))
def test_phase_rates_finite_or_refused(scale, boost):
    w = np.array([0.5, 1.0, 0.25]) * scale
    kind, val = outcome(CT.phase_rates, w, np.array([True, False, False]), boost)
    if kind == "refused":
        assert "boost" in str(val) and boost * float(w.max()) == math.inf
    else:
        assert kind == "ok" and all(np.all(np.isfinite(a)) for a in val)


# --- ista (re-probe items 43 and 44) -------------------------------------------------------------------------------

def _ista_problem(B=2, N=6, n=4, seed=0):
    g = np.random.default_rng(seed)
    X = g.normal(size=(B, N, n))
    return X, g.normal(size=(B, N))


@pytest.mark.parametrize("scale", [1e160, 1e200, 1e300])
def test_ista_refuses_an_X_whose_gram_matrix_overflows(scale):
    "Before: stable_lr(X * 1e160) and ista_batch(X * 1e160, ...) raised numpy's LinAlgError (+ LAPACK noise)."
    X, y = _ista_problem()
    assert_refused(IS.stable_lr, X * scale, name="X")
    assert_refused(IS.stable_lr, X[0] * scale, name="X")
    for fn in (IS.ista_batch, IS.ista_batch_ref, IS.ista_batch_cuda):
        assert_refused(fn, X * scale, y, 0.1, iters=3, name="X")


@settings(max_examples=20, deadline=None)
@given(k=st.integers(-400, 600))
def test_stable_lr_scales_or_refuses(k):
    "stable_lr(2^k X) = 2^-2k stable_lr(X) wherever X^T X stays finite; a refusal naming X beyond."
    X, _ = _ista_problem(seed=1)
    base = IS.stable_lr(X)
    kind, val = outcome(IS.stable_lr, np.ldexp(X, k))
    if kind == "refused":
        assert "X" in str(val) and k > 500
        return
    assert kind == "ok", val
    if -200 < k < 500:  # X^T X neither underflows nor overflows
        np.testing.assert_allclose(val, np.ldexp(base, -2 * k), rtol=1e-10)


def test_ista_recovery_error_is_a_documented_nan_placeholder_without_a_star():
    "Re-probe item 43 (by design, now documented): without a_star the recovery error is all NaN, the rest finite."
    X, y = _ista_problem()
    for fn in (IS.ista_batch, IS.ista_batch_ref):
        A, train, test = fn(X, y, 0.1, iters=5, log_at=[0, 5])
        assert np.isfinite(A).all() and np.isfinite(train).all() and np.isnan(test).all() and test.shape == (2, 2)
        assert "NaN" in fn.__doc__ or "NaN" in IS.__doc__
    A, train, test = IS.ista_batch(X, y, 0.1, iters=5, a_star=np.ones((2, 4)), log_at=[0, 5])
    assert np.isfinite(test).all()
