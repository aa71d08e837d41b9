"""One step of many point-mass reaching environments at once (the environment of the `icml25nb.control` block).

Each environment is a point of unit mass in the box [-1, 1]^D with position p, velocity v and a goal g. An action
a in [-1, 1]^D (clipped) is a force; with time step dt, force scale F and linear damping c (semi-implicit Euler)::

    v' = (1 - c dt) v + dt F clip(a, -1, 1)
    p' = p + dt v'            then, per coordinate, p' outside [-1, 1] is put on the wall and that v' set to 0
    r  = -|p' - g|_2 - ctrl_cost |clip(a, -1, 1)|^2

Three implementations with one signature ``(pos, vel, goal, action, dt, force, damping, ctrl_cost) -> (pos', vel',
reward)`` on float64 arrays of shape (n, D) (reward (n,)): ``step_ref`` (NumPy, whole arrays), ``step_njit``
(``@njit``, one fused pass over the environments, no temporaries) and ``step_cuda`` (one CUDA thread per
environment; simulator-tested). ``check_step_inputs`` validates arguments once for the wrappers that call the
kernels directly. ``benchmark`` times the reference against ``@njit`` for 16 to 65 536 environments.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, njit

from icml25nb.core import check_array, check_float
from icml25nb.kernels._bench import race as _race

__all__ = ["check_step_inputs", "check_step_params", "step_ref", "step_njit", "step_cuda", "benchmark"]


@njit(cache=True)
def _first_nonfinite(pos, vel, goal, action):
    "Index (0-3) of the first of the four (n, D) arrays holding a NaN or an infinity, -1 if none."
    for k, x in enumerate((pos, vel, goal, action)):
        for v in x.ravel():
            if not math.isfinite(v):
                return k
    return -1


def check_step_inputs(pos, vel, goal, action):
    """The four arrays as C-contiguous, writeable float64 (n, D) (read-only ones are copied), n >= 1, D >= 1, all of
    `pos`'s shape and finite; a one-line ValueError/TypeError naming the argument otherwise."""
    nd = np.ndarray
    if (type(pos) is nd and type(vel) is nd and type(goal) is nd and type(action) is nd  # the common case, fast
            and pos.dtype == vel.dtype == goal.dtype == action.dtype == np.float64 and pos.ndim == 2
            and pos.shape == vel.shape == goal.shape == action.shape and pos.shape[0] >= 1 and pos.shape[1] >= 1
            and pos.flags.c_contiguous and vel.flags.c_contiguous and goal.flags.c_contiguous
            and action.flags.c_contiguous and pos.flags.writeable and vel.flags.writeable
            and goal.flags.writeable and action.flags.writeable and _first_nonfinite(pos, vel, goal, action) < 0):
        return [pos, vel, goal, action]
    out = []
    shape = None
    for name, x in (("pos", pos), ("vel", vel), ("goal", goal), ("action", action)):
        x = check_array(name, x, ndim=2)
        if x.shape[0] < 1 or x.shape[1] < 1:
            raise ValueError(f"{name} must be a non-empty 2-D array (n_envs, dim), got shape {x.shape}")
        if shape is None:
            shape = x.shape
        elif x.shape != shape:
            raise ValueError(f"{name} must have shape {shape} like pos, got {x.shape}")
        if not x.flags.writeable:  # a read-only array (a view of a buffer, np.broadcast_to): one writeable copy, so
            x = x.copy()           # that the compiled passes see one array type (numba types read-only apart)
        out.append(x)
    return out


def check_step_params(dt, force, damping, ctrl_cost):
    """The four scalars as floats: dt > 0, force, damping and ctrl_cost >= 0, all finite, and a stable step:
    dt * damping <= 2 (so |1 - damping dt| <= 1: the velocity never grows by damping) and dt * force finite (no
    inf * 0 = NaN for a zero action); a one-line error naming the argument otherwise. Within these bounds the step
    never gives NaN: a position that overflows is put on the wall."""
    if type(dt) is float and type(force) is float and type(damping) is float and type(ctrl_cost) is float \
            and 0.0 < dt < math.inf and 0.0 <= force < math.inf and 0.0 <= damping < math.inf \
            and 0.0 <= ctrl_cost < math.inf and dt * damping <= 2.0 and dt * force < math.inf:  # the common case
        return dt, force, damping, ctrl_cost
    dt, force, damping, ctrl_cost = (
        check_float("dt", dt, 0.0, open_min=True), check_float("force", force, 0.0),
        check_float("damping", damping, 0.0), check_float("ctrl_cost", ctrl_cost, 0.0))
    if not dt * damping <= 2.0:
        raise ValueError(f"damping must satisfy dt * damping <= 2 (a stable step, |1 - damping dt| <= 1), got "
                         f"dt = {dt!r}, damping = {damping!r}")
    if not dt * force < math.inf:
        raise ValueError(f"force must satisfy dt * force < inf (the velocity update overflows), got dt = {dt!r}, "
                         f"force = {force!r}")
    return dt, force, damping, ctrl_cost


def step_ref(pos, vel, goal, action, dt: float = 0.1, force: float = 2.0, damping: float = 1.0,
             ctrl_cost: float = 0.0):
    "NumPy reference: the step of every environment on whole arrays."
    pos, vel, goal, action = check_step_inputs(pos, vel, goal, action)
    dt, force, damping, ctrl_cost = check_step_params(dt, force, damping, ctrl_cost)
    a = np.clip(action, -1.0, 1.0)
    v = (1.0 - damping * dt) * vel + dt * force * a
    p = pos + dt * v
    wall = np.abs(p) > 1.0
    p = np.clip(p, -1.0, 1.0)
    v = np.where(wall, 0.0, v)
    r = -np.sqrt(((p - goal) ** 2).sum(axis=1)) - ctrl_cost * (a ** 2).sum(axis=1)
    return p, v, r


@njit(cache=True)
def _step_njit(pos, vel, goal, action, dt, force, damping, ctrl_cost):
    "The compiled pass; every argument given (numba fills omitted defaults slowly: ~100 us a call)."
    n, D = pos.shape
    p_out = np.empty((n, D))
    v_out = np.empty((n, D))
    r_out = np.empty(n)
    keep = 1.0 - damping * dt
    for i in range(n):
        d2 = 0.0
        a2 = 0.0
        for k in range(D):
            a = min(max(action[i, k], -1.0), 1.0)
            v = keep * vel[i, k] + dt * force * a
            p = pos[i, k] + dt * v
            if p > 1.0:
                p = 1.0
                v = 0.0
            elif p < -1.0:
                p = -1.0
                v = 0.0
            p_out[i, k] = p
            v_out[i, k] = v
            e = p - goal[i, k]
            d2 += e * e
            a2 += a * a
        r_out[i] = -math.sqrt(d2) - ctrl_cost * a2
    return p_out, v_out, r_out


def step_njit(pos, vel, goal, action, dt: float = 0.1, force: float = 2.0, damping: float = 1.0,
              ctrl_cost: float = 0.0):
    """CPU kernel for `step_ref`: one fused pass over the environments; the arrays are checked (`check_step_inputs`:
    one shape (n, D), finite) and the scalars too (`check_step_params`) before the compiled pass reads them."""
    pos, vel, goal, action = check_step_inputs(pos, vel, goal, action)
    return _step_njit(pos, vel, goal, action, *check_step_params(dt, force, damping, ctrl_cost))


@cuda.jit
def _step_cuda_kernel(pos, vel, goal, action, dt, force, damping, ctrl_cost, p_out, v_out, r_out):
    i = cuda.grid(1)
    n, D = pos.shape
    if i >= n:
        return
    keep = 1.0 - damping * dt
    d2 = 0.0
    a2 = 0.0
    for k in range(D):
        a = min(max(action[i, k], -1.0), 1.0)
        v = keep * vel[i, k] + dt * force * a
        p = pos[i, k] + dt * v
        if p > 1.0:
            p = 1.0
            v = 0.0
        elif p < -1.0:
            p = -1.0
            v = 0.0
        p_out[i, k] = p
        v_out[i, k] = v
        e = p - goal[i, k]
        d2 += e * e
        a2 += a * a
    r_out[i] = -math.sqrt(d2) - ctrl_cost * a2


_THREADS = 128


def step_cuda(pos, vel, goal, action, dt: float = 0.1, force: float = 2.0, damping: float = 1.0,
              ctrl_cost: float = 0.0):
    "CUDA kernel for `step_ref` (one thread per environment); host arrays in, host arrays out."
    pos, vel, goal, action = check_step_inputs(pos, vel, goal, action)
    dt, force, damping, ctrl_cost = check_step_params(dt, force, damping, ctrl_cost)
    n, D = pos.shape
    p_out, v_out, r_out = cuda.device_array((n, D)), cuda.device_array((n, D)), cuda.device_array(n)
    blocks = (n + _THREADS - 1) // _THREADS
    _step_cuda_kernel[blocks, _THREADS](cuda.to_device(pos), cuda.to_device(vel), cuda.to_device(goal),
                                        cuda.to_device(action), float(dt), float(force), float(damping),
                                        float(ctrl_cost), p_out, v_out, r_out)
    return p_out.copy_to_host(), v_out.copy_to_host(), r_out.copy_to_host()


def benchmark(size: str = "default", repeat: int = 3) -> dict:
    """One step of n point-mass environments: NumPy reference vs @njit vs the public entry point a user calls
    (`icml25nb.control.PointMassVecEnv.step`: action checks, the kernel, observations), n from 16 to 65 536
    (alternating, best of)."""
    if size not in ("small", "default", "full"):
        raise ValueError(f"size must be 'small', 'default' or 'full', got {size!r}")
    from icml25nb.control import PointMassVecEnv
    ns = {"small": (16, 1024), "default": (16, 1024, 65536), "full": (16, 1024, 65536, 1048576)}[size]
    reps = max(1, repeat) * 20
    rows, ratios, values = {}, {}, {}
    for n in ns:
        rng = np.random.default_rng(n)
        pos, vel, goal = rng.uniform(-1, 1, (n, 2)), rng.normal(0, 1, (n, 2)), rng.uniform(-1, 1, (n, 2))
        act = rng.uniform(-1.5, 1.5, (n, 2))
        env = PointMassVecEnv(num_envs=n, horizon=10**6)
        env.reset(seed=0)
        best = _race({"ref": lambda: step_ref(pos, vel, goal, act), "njit": lambda: step_njit(pos, vel, goal, act),
                      "env": lambda: env.step(act)}, reps if n < 100_000 else max(1, repeat))
        rows[f"reference, n={n}"], rows[f"njit, n={n}"] = best["ref"], best["njit"]
        rows[f"control.PointMassVecEnv.step, n={n}"] = best["env"]
        ratios[f"njit vs reference, n={n}"] = best["ref"] / best["njit"]
        ratios[f"PointMassVecEnv.step / njit, n={n}"] = best["env"] / best["njit"]
        values[f"max |reward njit - reference|, n={n}"] = float(
            np.abs(step_njit(pos, vel, goal, act)[2] - step_ref(pos, vel, goal, act)[2]).max())
    return {"kernel": "pointmass", "task": "one step of n 2-D point-mass environments", "seconds": rows,
            "reference": f"reference, n={ns[-1]}", "values": values, "ratios": ratios}
