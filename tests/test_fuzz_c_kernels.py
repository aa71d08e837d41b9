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
from icml25nb.kernels import makespan as MS
from icml25nb.kernels import mec as MEC
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
