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

from icml25nb.core import check_array, check_float, check_int, check_memory, check_prob, check_seed
from icml25nb.kernels._bench import race as _race

__all__ = ["check_springs_inputs", "spring_forces", "springs_energy", "simulate_ref", "simulate_njit",
           "simulate_cuda", "random_springs", "benchmark"]


#: refuse runs of more than this many pair updates (steps x S x n^2 x d): minutes of compute, not a call
MAX_WORK = 10**10


def _check_states(x, v, A, xname="x0", vname="v0"):
    "x, v (S, n, d) and A (S, n, n): float64 C-contiguous, non-empty, finite, A symmetric with a zero diagonal."
    x = check_array(xname, x, ndim=3)
    if min(x.shape) < 1:
        raise ValueError(f"{xname} must be a 3-D array (n_sims, n_particles, dim) with no empty axis, got shape "
                         f"{x.shape}")
    v = check_array(vname, v, ndim=3)
    if v.shape != x.shape:
        raise ValueError(f"{vname} must have shape {x.shape} like {xname}, got {v.shape}")
    S, n, _ = x.shape
    A = check_array("A", A, shape=(S, n, n))
    if not np.array_equal(A, A.transpose(0, 2, 1)) or np.any(np.einsum("sii->si", A) != 0):
        raise ValueError("A must be symmetric with a zero diagonal")
    return x, v, A


def check_springs_inputs(x0, v0, A, k, dt, steps):
    """Validated (x0, v0, A, k, dt, steps): float64 C-contiguous arrays x0, v0 (S, n, d) and A (S, n, n) with S, n,
    d >= 1, finite, A symmetric with a zero diagonal; k a finite number >= 0, dt a finite number > 0, steps an integer
    >= 0 with steps S n^2 d <= 1e10 (longer runs take minutes); a one-line ValueError/TypeError naming the argument."""
    x0, v0, A = _check_states(x0, v0, A)
    k = check_float("k", k, 0.0)
    dt = check_float("dt", dt, 0.0, open_min=True)
    steps = check_int("steps", steps, 0)
    S, n, d = x0.shape
    if steps * S * n * n * d > MAX_WORK:
        raise ValueError(f"steps must be at most {MAX_WORK:.0e} / (S n^2 d) = {MAX_WORK // (S * n * n * d)} for "
                         f"x0 of shape {x0.shape}, got {steps}")
    return x0, v0, A, k, dt, steps


def _finite_run(x, v, k, dt):
    "(x, v), or a one-line ValueError if the integration diverged (an unstable step: the values overflowed)."
    if not (np.isfinite(x).all() and np.isfinite(v).all()):
        raise ValueError(f"k and dt are too large for these springs: the integration diverged to inf (velocity "
                         f"Verlet is stable for k dt^2 lambda_max < 4, lambda_max <= 2 max_i sum_j A_ij; got k = {k:g},"
                         f" dt = {dt:g})")
    return x, v


def spring_forces(x, A, k):
    "Hooke forces f_i = -k sum_j A_ij (x_i - x_j) for all simulations at once, shape (S, n, d)."
    x, _, A = _check_states(x, x, A, "x", "x")
    return _forces(x, A, check_float("k", k, 0.0))


def _forces(x, A, k):
    deg = A.sum(axis=2)
    return -k * (deg[:, :, None] * x - np.einsum("sij,sjd->sid", A, x))


def springs_energy(x, v, A, k):
    "Total energy per simulation: kinetic 1/2 sum |v|^2 plus spring 1/2 k sum_{i<j} A_ij |x_i - x_j|^2, shape (S,)."
    x, v, A = _check_states(x, v, A, "x", "v")
    k = check_float("k", k, 0.0)
    S, n, d = x.shape
    check_memory("x", float(S) * n * n * d, 8)
    diff = x[:, :, None, :] - x[:, None, :, :]
    with np.errstate(over="ignore", invalid="ignore"):
        pot = 0.25 * k * np.einsum("sij,sijd->s", A, diff ** 2)  # each pair counted twice
        e = 0.5 * (v ** 2).sum(axis=(1, 2)) + pot
    if not np.isfinite(e).all():
        raise ValueError("x, v and k are too large: the energy overflows float64")
    return e


def simulate_ref(x0, v0, A, k: float = 1.0, dt: float = 0.01, steps: int = 100):
    "NumPy reference: velocity Verlet for every simulation at once; returns (x, v) after `steps` steps."
    x0, v0, A, k, dt, steps = check_springs_inputs(x0, v0, A, k, dt, steps)
    x, v = x0.copy(), v0.copy()
    with np.errstate(over="ignore", invalid="ignore"):  # a divergent run is reported below, not as a warning
        f = _forces(x, A, k)
        for _ in range(steps):
            v += 0.5 * dt * f
            x += dt * v
            f = _forces(x, A, k)
            v += 0.5 * dt * f
    return _finite_run(x, v, k, dt)


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
    x0, v0, A, k, dt, steps = check_springs_inputs(x0, v0, A, k, dt, steps)
    return _finite_run(*_simulate_njit(x0, v0, A, k, dt, steps), k, dt)


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
    return _finite_run(x.copy_to_host(), v.copy_to_host(), k, dt)


def random_springs(n_sims: int, n_particles: int, dim: int = 2, p: float = 0.5, seed: int = 0):
    "Random initial states and spring graphs (each pair joined with probability p): (x0, v0, A)."
    n_sims, n_particles = check_int("n_sims", n_sims, 1), check_int("n_particles", n_particles, 1)
    dim, p, seed = check_int("dim", dim, 1), check_prob("p", p), check_seed(seed)
    check_memory("n_sims x n_particles", float(n_sims) * n_particles * (n_particles + 2 * dim), 8)
    rng = np.random.default_rng(seed)
    A = np.triu((rng.random((n_sims, n_particles, n_particles)) < p).astype(np.float64), 1)
    A = A + A.transpose(0, 2, 1)
    x0 = rng.normal(0.0, 0.5, (n_sims, n_particles, dim))
    v0 = rng.normal(0.0, 0.5, (n_sims, n_particles, dim))
    return x0, v0, A


def benchmark(size: str = "default", repeat: int = 3) -> dict:
    """S spring systems of 5 particles for 100 steps: vectorised NumPy reference vs @njit vs the public function a user
    calls (`icml25nb.supervised.pcl.nbody_springs`, the same systems drawn, simulated and flattened), alternating."""
    if size not in ("small", "default", "full"):
        raise ValueError(f"size must be 'small', 'default' or 'full', got {size!r}")
    from icml25nb.supervised.pcl import nbody_springs
    Ss = {"small": (16, 256), "default": (16, 256, 4096), "full": (16, 256, 4096, 65536)}[size]
    rows, ratios, values = {}, {}, {}
    for S in Ss:
        x0, v0, A = random_springs(S, 5, seed=S)
        best = _race({"ref": lambda: simulate_ref(x0, v0, A, 1.0, 0.01, 100),
                      "njit": lambda: simulate_njit(x0, v0, A, 1.0, 0.01, 100),
                      "pcl": lambda: nbody_springs(S, 5, 100, seed=S)}, max(1, repeat))
        rows[f"numpy (vectorised), S={S}"], rows[f"njit, S={S}"] = best["ref"], best["njit"]
        rows[f"pcl.nbody_springs (data set: draw, simulate, flatten), S={S}"] = best["pcl"]
        ratios[f"njit vs numpy, S={S}"] = best["ref"] / best["njit"]
        ratios[f"pcl.nbody_springs / njit, S={S}"] = best["pcl"] / best["njit"]
        values[f"max |x njit - numpy|, S={S}"] = float(
            np.abs(simulate_njit(x0, v0, A)[0] - simulate_ref(x0, v0, A)[0]).max())
    return {"kernel": "springs", "task": "S undamped 5-particle spring systems, 100 velocity-Verlet steps",
            "seconds": rows, "reference": f"numpy (vectorised), S={Ss[-1]}", "values": values, "ratios": ratios}
