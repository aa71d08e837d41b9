"""Property-based checks of the validation layer in `icml25nb.core` (issue 49): every check either returns the value
it was given (converted, never truncated or wrapped) or refuses it with a one-line error naming the argument."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from fuzzutil import BAD_NUMBERS, assert_refused, non_contiguous, outcome
from icml25nb.core import (ArgumentTypeError, Claim, check_array, check_choice, check_float, check_ids, check_int,
                           check_memory, check_positive, check_prob, check_seed, claim_status, make_rng)

INTS = st.one_of(st.integers(-2**70, 2**70), st.integers(-5, 5))


@given(INTS, st.integers(-3, 3), st.one_of(st.none(), st.integers(-3, 10)))
def test_check_int_returns_the_integer_or_refuses(x, lo, hi):
    kind, v = outcome(check_int, "n", x, lo, hi)
    inside = x >= lo and (hi is None or x <= hi)
    assert (kind == "ok") == inside
    if inside:
        assert v == x and type(v) is int
    else:
        assert "n must be an integer" in str(v)


@pytest.mark.parametrize("bad", [1.0, 2.5, "3", None, True, np.float64(1.0), [1], np.array([1])])
def test_check_int_never_truncates_or_parses(bad):
    e = assert_refused(check_int, "steps", bad, name="steps")
    assert isinstance(e, TypeError) and isinstance(e, ValueError)


@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**6, 10**6)),
       st.one_of(st.none(), st.floats(-10, 10)), st.booleans())
def test_check_float_range_and_finiteness(x, lo, open_min):
    kind, v = outcome(check_float, "lr", x, lo, None, open_min=open_min)
    ok = math.isfinite(float(x)) and (lo is None or (x > lo if open_min else x >= lo))
    assert (kind == "ok") == ok, (x, lo, open_min, v)
    if ok:
        assert v == float(x)
    else:
        assert str(v).startswith("lr must")


@pytest.mark.parametrize("bad", BAD_NUMBERS + (np.ones(2), b"1", np.bool_(True)))
def test_number_checks_refuse_non_numbers(bad):
    for fn in (lambda v: check_float("x", v), lambda v: check_positive("x", v), lambda v: check_prob("x", v)):
        assert_refused(fn, bad, name="x")


@given(st.floats(-1, 2, allow_nan=False))
def test_check_prob(p):
    kind, v = outcome(check_prob, "p", p)
    assert (kind == "ok") == (0 <= p <= 1)


@given(hnp.arrays(st.sampled_from([np.float64, np.float32, np.int64, np.int8, np.bool_]),
                  hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
                  elements=dict(allow_nan=True, allow_infinity=True) if False else None))
def test_check_array_keeps_values_and_layout(a):
    kind, v = outcome(check_array, "X", a, contiguous=a.ndim > 0)
    finite = a.dtype.kind != "f" or bool(np.all(np.isfinite(a)))
    assert (kind == "ok") == finite
    if kind == "ok":
        assert v.dtype == np.float64 and v.shape == a.shape
        assert np.array_equal(v, a.astype(np.float64))
        if a.ndim:
            w = check_array("X", non_contiguous(a))
            assert w.flags.c_contiguous and np.array_equal(w, v)


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=2, max_side=5),
                  elements=st.floats(allow_nan=True, allow_infinity=True, width=64)))
def test_check_array_refuses_non_finite(a):
    kind, v = outcome(check_array, "X", a)
    assert (kind == "ok") == bool(np.all(np.isfinite(a)))
    if kind == "refused":
        assert "X must be finite" in str(v)


@given(hnp.arrays(np.int64, hnp.array_shapes(min_dims=1, max_dims=2, max_side=6), elements=st.integers(-3, 8)),
       st.integers(1, 6))
def test_check_ids_has_no_wraparound_or_aliasing(ids, n):
    kind, v = outcome(check_ids, "ids", ids, n)
    assert (kind == "ok") == bool(ids.size == 0 or (ids.min() >= 0 and ids.max() < n))
    if kind == "ok":
        assert np.array_equal(v, ids)
    else:
        assert "ids entries must lie in" in str(v)


@given(hnp.arrays(np.float64, st.integers(1, 5), elements=st.floats(-3, 3)))
def test_check_ids_refuses_fractional_ids(x):
    kind, v = outcome(check_ids, "ids", x, 10)
    integral = bool(np.all(x == np.round(x))) and x.min() >= 0
    assert (kind == "ok") == integral


@pytest.mark.parametrize("bad, what", [(["a"], "real numbers"), ([1j], "complex"), ([[1, 2], [3]], "rectangular"),
                                       (None, "array of numbers"), ("12", "array of numbers")])
def test_check_array_refuses_non_numeric(bad, what):
    assert what in str(assert_refused(check_array, "X", bad, name="X"))


@given(st.floats(0, 1e20))
def test_check_memory_refuses_what_cannot_fit(n):
    from icml25nb.core import memory_bytes
    kind, v = outcome(check_memory, "n", n, 8)
    assert (kind == "ok") == (8 * n <= 0.5 * memory_bytes())


@given(st.integers(0, 2**64 + 5))
def test_check_seed_fits_every_rng(seed):
    kind, v = outcome(check_seed, seed)
    assert (kind == "ok") == (seed < 2**63)
    if kind == "ok":
        make_rng(seed).random()  # numpy takes it


@given(st.lists(st.one_of(st.integers(-2, 5), st.floats(-1, 3)), max_size=3))
def test_make_rng_keys_are_integers(keys):
    kind, v = outcome(make_rng, 0, *keys)
    ok = all(isinstance(k, int) and k >= 0 for k in keys)
    assert (kind == "ok") == ok


@given(st.lists(st.booleans(), min_size=1, max_size=16), st.lists(st.booleans(), max_size=16))
def test_claim_status_needs_one_control_verdict_per_seed(passed, control):
    kind, v = outcome(claim_status, "paper", passed, control)
    assert (kind == "ok") == (len(control) in (0, len(passed)))


@pytest.mark.parametrize("thr", ["1", None, float("nan"), float("inf"), True])
def test_claim_threshold_is_a_finite_number(thr):
    assert_refused(Claim, "c", "statement", "m", ">", thr, name="threshold")


def test_check_choice_names_the_choices():
    assert check_choice("kind", "b", "abc") == "b"
    assert "kind must be one of 'a', 'b'" in str(assert_refused(check_choice, "kind", "z", ("a", "b")))
    assert_refused(check_choice, "kind", np.array(["a"]), ("a",), name="kind")
    assert isinstance(ArgumentTypeError("x"), ValueError)


# --------------------------------------------------------------------------- found by the outside re-probe (issue 49)
@pytest.mark.parametrize("fn", [lambda v: check_float("x", v), lambda v: check_positive("x", v),
                                lambda v: check_prob("x", v), lambda v: check_memory("x", v)])
@pytest.mark.parametrize("huge", [10**400, -10**400])
def test_huge_python_ints_are_refused_not_overflow_errors(fn, huge):
    "float(10**400) raises OverflowError: every public float argument of the book crashed with it."
    assert_refused(fn, huge, name="x")


def test_tensors_that_require_grad_are_read_as_arrays():
    "np.asarray of a tensor that requires grad raised RuntimeError in every kernel and block taking arrays."
    torch = pytest.importorskip("torch")
    t = torch.arange(6.0).reshape(3, 2).requires_grad_()
    assert np.array_equal(check_array("X", t), np.arange(6.0).reshape(3, 2))
    assert np.array_equal(check_array("X", t.to(torch.bfloat16)), np.arange(6.0).reshape(3, 2))


@given(st.sampled_from([2.0**63, 2.0**64, 1e19, -2.0**63 - 2**11, 1e300]))
def test_float_ids_beyond_int64_never_wrap(x):
    "2.0**64 became uint64 0 and 2.0**63 int64 min: a kernel then ran trial 0 instead (wrong answer)."
    assert_refused(check_array, "ids", [0.0, x], dtype=np.int64, name="ids")
    if abs(x) >= 2.0**64:
        assert_refused(check_array, "ids", [0.0, abs(x)], dtype=np.uint64, name="ids")


@pytest.mark.parametrize("values", [[1, "a", 1, 1], [1, [1], 1, 1], [1, True, 1, 1]])
def test_seed_independent_names_a_bad_stored_value(values):
    from icml25nb.core import seed_independent
    assert "stored claim value must be a number" in str(assert_refused(seed_independent, values))


def test_rng_fill_with_a_huge_int_size_is_refused():
    "uniform_fill(0, 1, 10**400): float(10**400) raised OverflowError in its memory check."
    from icml25nb.kernels import rng
    assert_refused(rng.uniform_fill, 0, 1, 10**400, name="n_draws")
    assert_refused(rng.uniform_fill_ref, 0, 10**200, 10**200, name="n_draws")
