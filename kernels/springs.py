"""Many undamped spring systems integrated at once (the N-body springs data of the `supervised.pcl` chapter).

Each simulation s has n particles in d dimensions, positions x, velocities v (unit masses) and a symmetric 0/1
spring matrix A with zero diagonal. Hooke's law with stiffness k gives the force on particle i::

    f_i(x) = -k sum_j A_ij (x_i - x_j)

and velocity Verlet (leapfrog, kick-drift-kick) with time step dt advances it ``steps`` times::

    v <- v + dt/2 f(x);   x <- x + dt v;   v <- v + dt/2 f(x)

The energy ``H = 1/2 sum_i |v_i|^2 + k/2 sum_{i<j} A_ij |x_i - x_j|^2`` is conserved by the flow; velocity Verlet keeps
it within a relative band ``(w dt)^2 / (4 - (w dt)^2)`` with ``w^2 <= k n`` the largest eigenvalue of k times the
graph Laplacian (derived in the chapter).

Three implementations with one signature ``(x0, v0, A, k, dt, steps) -> (x, v)`` on float64 arrays x0, v0 of shape
(S, n, d) and A of shape (S, n, n): ``simulate_ref`` (NumPy, all simulations at once, what a user would write),
``simulate_njit`` (``@njit``, one simulation at a time, forces recomputed in each half kick, no temporaries) and
``simulate_cuda`` (one CUDA thread per simulation, the same loop; simulator-tested). ``benchmark`` times the
NumPy reference against ``@njit``.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, njit

from icml25nb.kernels._bench import race as _race

__all__ = ["check_springs_inputs", "spring_forces", "springs_energy", "simulate_ref", "simulate_njit",
           "simulate_cuda", "benchmark"]


def check_springs_inputs(x0, v0, A, k, dt, steps):
    "Validated (x0, v0, A, k, dt, steps): float64 C-contiguous arrays; a one-line ValueError naming the argument."
    x0 = np.ascontiguousarray(x0, dtype=np.float64)
    v0 = np.ascontiguousarray(v0, dtype=np.float64)
    A = np.ascontiguousarray(A, dtype=np.float64)
    if x0.ndim != 3 or min(x0.shape) < 1:
        raise ValueError(f"x0 must be a 3-D array (n_sims, n_particles, dim), got shape {x0.shape}")
    if v0.shape != x0.shape:
        raise ValueError(f"v0 must have shape {x0.shape} like x0, got {v0.shape}")
    S, n, _ = x0.shape
    if A.shape != (S, n, n):
        raise ValueError(f"A must have shape {(S, n, n)}, got {A.shape}")
    for name, a in (("x0", x0), ("v0", v0), ("A", A)):
        if not np.isfinite(a).all():
            raise ValueError(f"{name} must be finite")
    if not np.array_equal(A, A.transpose(0, 2, 1)) or np.any(np.einsum("sii->si", A) != 0):
        raise ValueError("A must be symmetric with a zero diagonal")
    if not (np.isfinite(k) and k >= 0):
        raise ValueError(f"k must be a finite number >= 0, got {k}")
    if not (np.isfinite(dt) and dt > 0):
        raise ValueError(f"dt must be a finite number > 0, got {dt}")
    if int(steps) != steps or steps < 0:
        raise ValueError(f"steps must be an integer >= 0, got {steps}")
    return x0, v0, A, float(k), float(dt), int(steps)


def spring_forces(x, A, k):
    "Hooke forces f_i = -k sum_j A_ij (x_i - x_j) for all simulations at once, shape (S, n, d)."
    deg = A.sum(axis=2)
    return -k * (deg[:, :, None] * x - np.einsum("sij,sjd->sid", A, x))


def springs_energy(x, v, A, k):
    "Total energy per simulation: kinetic 1/2 sum |v|^2 plus spring 1/2 k sum_{i<j} A_ij |x_i - x_j|^2, shape (S,)."
    x = np.asarray(x, dtype=np.float64)
    diff = x[:, :, None, :] - x[:, None, :, :]
    pot = 0.25 * k * np.einsum("sij,sijd->s", A, diff ** 2)  # each pair counted twice
    return 0.5 * (np.asarray(v) ** 2).sum(axis=(1, 2)) + pot


def simulate_ref(x0, v0, A, k: float = 1.0, dt: float = 0.01, steps: int = 100):
    "NumPy reference: velocity Verlet for every simulation at once; returns (x, v) after `steps` steps."
    x0, v0, A, k, dt, steps = check_springs_inputs(x0, v0, A, k, dt, steps)
    x, v = x0.copy(), v0.copy()
    f = spring_forces(x, A, k)
    for _ in range(steps):
        v += 0.5 * dt * f
        x += dt * v
        f = spring_forces(x, A, k)
        v += 0.5 * dt * f
    return x, v


@njit(cache=True)
def _kick(x, v, A, k, h, s):
    "v[s] += h f(x[s]) with the force of each particle computed on the fly (x is not changed by a kick)."
    n, d = x.shape[1], x.shape[2]
    for i in range(n):
        for c in range(d):
            acc = 0.0
            for j in range(n):
                acc += A[s, i, j] * (x[s, j, c] - x[s, i, c])
            v[s, i, c] += h * k * acc


@njit(cache=True)
def _simulate_njit(x0, v0, A, k, dt, steps):
    S, n, d = x0.shape
    x = x0.copy()
    v = v0.copy()
    for s in range(S):
        for _ in range(steps):
            _kick(x, v, A, k, 0.5 * dt, s)
            for i in range(n):
                for c in range(d):
                    x[s, i, c] += dt * v[s, i, c]
            _kick(x, v, A, k, 0.5 * dt, s)
    return x, v


def simulate_njit(x0, v0, A, k: float = 1.0, dt: float = 0.01, steps: int = 100):
    "CPU kernel for `simulate_ref`: one simulation at a time, fused loops, no temporaries."
    return _simulate_njit(*check_springs_inputs(x0, v0, A, k, dt, steps))


@cuda.jit(device=True)
def _kick_cuda(x, v, A, k, h, s):
    n, d = x.shape[1], x.shape[2]
    for i in range(n):
        for c in range(d):
            acc = 0.0
            for j in range(n):
                acc += A[s, i, j] * (x[s, j, c] - x[s, i, c])
            v[s, i, c] += h * k * acc


@cuda.jit
def _simulate_cuda_kernel(x, v, A, k, dt, steps):
    s = cuda.grid(1)
    if s >= x.shape[0]:
        return
    n, d = x.shape[1], x.shape[2]
    for _ in range(steps):
        _kick_cuda(x, v, A, k, 0.5 * dt, s)
        for i in range(n):
            for c in range(d):
                x[s, i, c] += dt * v[s, i, c]
        _kick_cuda(x, v, A, k, 0.5 * dt, s)


_THREADS = 64


def simulate_cuda(x0, v0, A, k: float = 1.0, dt: float = 0.01, steps: int = 100):
    "CUDA kernel for `simulate_ref` (one thread per simulation, in place on device copies); host arrays in and out."
    x0, v0, A, k, dt, steps = check_springs_inputs(x0, v0, A, k, dt, steps)
    x, v = cuda.to_device(x0), cuda.to_device(v0)
    blocks = (x0.shape[0] + _THREADS - 1) // _THREADS
    _simulate_cuda_kernel[blocks, _THREADS](x, v, cuda.to_device(A), k, dt, steps)
    return x.copy_to_host(), v.copy_to_host()


def random_springs(n_sims: int, n_particles: int, dim: int = 2, p: float = 0.5, seed: int = 0):
    "Random initial states and spring graphs (each pair joined with probability p): (x0, v0, A)."
    rng = np.random.default_rng(seed)
    A = np.triu((rng.random((n_sims, n_particles, n_particles)) < p).astype(np.float64), 1)
    A = A + A.transpose(0, 2, 1)
    x0 = rng.normal(0.0, 0.5, (n_sims, n_particles, dim))
    v0 = rng.normal(0.0, 0.5, (n_sims, n_particles, dim))
    return x0, v0, A


def benchmark(size: str = "default", repeat: int = 3) -> dict:
    "S spring systems of 5 particles for 100 steps: vectorised NumPy reference vs @njit (alternating, best of)."
    if size not in ("small", "default", "full"):
        raise ValueError(f"size must be 'small', 'default' or 'full', got {size!r}")
    Ss = {"small": (16, 256), "default": (16, 256, 4096), "full": (16, 256, 4096, 65536)}[size]
    rows, ratios, values = {}, {}, {}
    for S in Ss:
        x0, v0, A = random_springs(S, 5, seed=S)
        best = _race({"ref": lambda: simulate_ref(x0, v0, A, 1.0, 0.01, 100),
                      "njit": lambda: simulate_njit(x0, v0, A, 1.0, 0.01, 100)}, max(1, repeat))
        rows[f"numpy (vectorised), S={S}"], rows[f"njit, S={S}"] = best["ref"], best["njit"]
        ratios[f"njit vs numpy, S={S}"] = best["ref"] / best["njit"]
        values[f"max |x njit - numpy|, S={S}"] = float(
            np.abs(simulate_njit(x0, v0, A)[0] - simulate_ref(x0, v0, A)[0]).max())
    return {"kernel": "springs", "task": "S undamped 5-particle spring systems, 100 velocity-Verlet steps",
            "seconds": rows, "reference": f"numpy (vectorised), S={Ss[-1]}", "values": values, "ratios": ratios}
