"""Shared pieces of the reliability (fuzz) suites: hostile values, a bounded call, and the one rule every public
entry point obeys: on any input it returns a clean answer (no NaN) or raises a one-line ValueError/TypeError that
names the argument; it never crashes, hangs, or raises anything else.

`hypothesis` runs with the `ci` profile (tests/conftest.py): a bounded number of examples, no deadline (numba
compiles on first call), derandomised so that CI is repeatable. Set `HYPOTHESIS_PROFILE=deep` for a longer hunt.
"""
from __future__ import annotations

import dataclasses
import math
import signal
import threading
from contextlib import contextmanager
from typing import Any, Callable

import numpy as np

#: numbers a hostile but fair user passes where a size, a rate or a scale is expected
BAD_NUMBERS: tuple = (float("nan"), float("inf"), -float("inf"), "3", None, True, 1j)
#: sizes that cannot fit in memory or time (must be refused up front, not attempted)
HUGE_SIZES: tuple = (10**12, 2**63, 10**30)


class Hang(AssertionError):
    "A call ran past its time limit."


@contextmanager
def time_limit(seconds: float):
    """Raise `Hang` if the body runs longer than `seconds` (SIGALRM; main thread only, where it is a no-op guard
    elsewhere). A compiled loop is interrupted when it returns to Python; a true hang in a kernel is caught by
    pytest's faulthandler timeout instead."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def _raise(signum, frame):
        raise Hang(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def has_nan(obj: Any) -> bool:
    "Whether `obj` (numbers, arrays, tensors, dicts, lists, tuples, dataclasses) holds a NaN anywhere."
    if isinstance(obj, (bool, int, str, bytes)) or obj is None:
        return False
    if isinstance(obj, float):
        return math.isnan(obj)
    if isinstance(obj, np.ndarray):
        return obj.dtype.kind in "fc" and bool(np.isnan(obj).any())
    if isinstance(obj, np.generic):
        return bool(np.isnan(obj)) if obj.dtype.kind in "fc" else False
    if type(obj).__module__.startswith("torch") and hasattr(obj, "isnan"):
        try:
            return bool(obj.isnan().any())
        except Exception:
            return False
    if isinstance(obj, dict):
        return any(has_nan(v) for v in obj.values())
    if isinstance(obj, (list, tuple, set, frozenset)):
        return any(has_nan(v) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return any(has_nan(getattr(obj, f.name)) for f in dataclasses.fields(obj))
    return False


def outcome(fn: Callable, *args, timeout: float = 30.0, **kwargs):
    """Call `fn` under the rule: returns ("ok", value) for a result without NaN, ("refused", exc) for a
    ValueError/TypeError; fails the test (AssertionError) for a NaN result, another exception, or a hang."""
    try:
        with time_limit(timeout):
            value = fn(*args, **kwargs)
    except Hang:
        raise
    except (ValueError, TypeError) as e:
        msg = str(e)
        assert msg and "\n" not in msg.strip(), f"{getattr(fn, '__name__', fn)}: error is not one line: {msg!r}"
        return "refused", e
    except Exception as e:  # noqa: BLE001 - anything else is a defect
        raise AssertionError(f"{getattr(fn, '__name__', fn)} raised {type(e).__name__}: {e}") from e
    assert not has_nan(value), f"{getattr(fn, '__name__', fn)} returned NaN"
    return "ok", value


def assert_refused(fn: Callable, *args, name: str | None = None, timeout: float = 30.0, **kwargs):
    """`fn(*args, **kwargs)` must raise a one-line ValueError/TypeError (naming `name` when given), quickly."""
    kind, val = outcome(fn, *args, timeout=timeout, **kwargs)
    assert kind == "refused", f"{getattr(fn, '__name__', fn)} accepted a bad input and returned {val!r:.200}"
    if name is not None:
        assert name in str(val), f"{getattr(fn, '__name__', fn)}: the error does not name {name!r}: {val}"
    return val


def refuses_each(fn: Callable, good: dict, bad: dict[str, Any], timeout: float = 30.0, name_in_message: bool = True):
    """For every argument in `bad` and every value in its list: `fn(**good)` with that one argument replaced must be
    refused (ValueError/TypeError naming the argument). Returns the number of cases tried."""
    n = 0
    for arg, values in bad.items():
        for v in values:
            kw = {**good, arg: v}
            assert_refused(fn, name=arg if name_in_message else None, timeout=timeout, **kw)
            n += 1
    return n


def non_contiguous(a: np.ndarray) -> np.ndarray:
    "The same values as `a` in a non-contiguous view (every other element of a twice-as-large array, last axis)."
    a = np.asarray(a)
    if a.ndim == 0 or a.size == 0:
        return a
    big = np.empty(a.shape[:-1] + (2 * a.shape[-1],), dtype=a.dtype)
    big[..., ::2] = a
    view = big[..., ::2]
    assert not view.flags.c_contiguous or a.shape[-1] <= 1
    return view


def same(a: Any, b: Any, rtol: float = 1e-9, atol: float = 1e-12) -> bool:
    "Equal results, recursively (arrays and floats within tolerance, NaN equal to NaN)."
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], rtol, atol) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y, rtol, atol) for x, y in zip(a, b))
    try:
        return bool(np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=rtol, atol=atol,
                                equal_nan=True)) and np.shape(a) == np.shape(b)
    except (TypeError, ValueError):
        return a == b
