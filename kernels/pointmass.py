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

from icml25nb.kernels._bench import race as _race

__all__ = ["check_step_inputs", "step_ref", "step_njit", "step_cuda", "benchmark"]


def check_step_inputs(pos, vel, goal, action):
    "The four arrays as C-contiguous float64 (n, D); a one-line ValueError naming the argument otherwise."
    out = []
    shape = None
    for name, x in (("pos", pos), ("vel", vel), ("goal", goal), ("action", action)):
        x = np.ascontiguousarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] < 1:
            raise ValueError(f"{name} must be a 2-D array (n_envs, dim), got shape {x.shape}")
        if shape is None:
            shape = x.shape
        elif x.shape != shape:
            raise ValueError(f"{name} must have shape {shape} like pos, got {x.shape}")
        if not np.isfinite(x).all():
            raise ValueError(f"{name} must be finite")
        out.append(x)
    return out


def step_ref(pos, vel, goal, action, dt: float = 0.1, force: float = 2.0, damping: float = 1.0,
             ctrl_cost: float = 0.0):
    "NumPy reference: the step of every environment on whole arrays."
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
    "CPU kernel for `step_ref`: one fused pass over the environments (inputs float64 (n, D), C-contiguous)."
    return _step_njit(pos, vel, goal, action, float(dt), float(force), float(damping), float(ctrl_cost))


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
    n, D = pos.shape
    p_out, v_out, r_out = cuda.device_array((n, D)), cuda.device_array((n, D)), cuda.device_array(n)
    blocks = (n + _THREADS - 1) // _THREADS
    _step_cuda_kernel[blocks, _THREADS](cuda.to_device(pos), cuda.to_device(vel), cuda.to_device(goal),
                                        cuda.to_device(action), float(dt), float(force), float(damping),
                                        float(ctrl_cost), p_out, v_out, r_out)
    return p_out.copy_to_host(), v_out.copy_to_host(), r_out.copy_to_host()


def benchmark(size: str = "default", repeat: int = 3) -> dict:
    "One step of n point-mass environments: NumPy reference vs @njit, n from 16 to 65 536 (alternating, best of)."
    if size not in ("small", "default", "full"):
        raise ValueError(f"size must be 'small', 'default' or 'full', got {size!r}")
    ns = {"small": (16, 1024), "default": (16, 1024, 65536), "full": (16, 1024, 65536, 1048576)}[size]
    reps = max(1, repeat) * 20
    rows, ratios, values = {}, {}, {}
    for n in ns:
        rng = np.random.default_rng(n)
        pos, vel, goal = rng.uniform(-1, 1, (n, 2)), rng.normal(0, 1, (n, 2)), rng.uniform(-1, 1, (n, 2))
        act = rng.uniform(-1.5, 1.5, (n, 2))
        best = _race({"ref": lambda: step_ref(pos, vel, goal, act), "njit": lambda: step_njit(pos, vel, goal, act)},
                     reps if n < 100_000 else max(1, repeat))
        rows[f"reference, n={n}"], rows[f"njit, n={n}"] = best["ref"], best["njit"]
        ratios[f"njit vs reference, n={n}"] = best["ref"] / best["njit"]
        values[f"max |reward njit - reference|, n={n}"] = float(
            np.abs(step_njit(pos, vel, goal, act)[2] - step_ref(pos, vel, goal, act)[2]).max())
    return {"kernel": "pointmass", "task": "one step of n 2-D point-mass environments", "seconds": rows,
            "reference": f"reference, n={ns[-1]}", "values": values, "ratios": ratios}
