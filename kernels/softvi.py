"""Soft (maximum-entropy) value iteration on a deterministic tabular MDP: log-sum-exp over actions, one state at a time.

The MDP has S states and A actions. ``nxt[s, a]`` is the successor state (-1: the episode ends), ``R[s, a]`` the
reward and ``log_mu[a]`` the log-measure of action ``a`` (``log(2 / A)`` for A bins of the interval [-1, 1], so that
the entropy is the differential entropy of the continuous action). One Jacobi sweep, from V to V'::

    Q(s, a) = R(s, a) + gamma V(nxt(s, a))            (the V term is 0 where nxt = -1)
    V'(s)   = alpha log sum_a mu_a exp(Q(s, a) / alpha)      alpha > 0
    V'(s)   = max_a Q(s, a)                                   alpha = 0 (the standard Bellman backup)

``n_iter`` sweeps from V = 0 (exact after horizon + 1 sweeps on an MDP whose episodes end within the horizon).
Three implementations with one signature ``(R, nxt, log_mu, alpha, gamma, n_iter) -> V`` on float64/int64 arrays:
``soft_vi_ref`` (NumPy, ``scipy.special.logsumexp`` over the action axis), ``soft_vi_njit`` (``@njit``, one fused
pass per state with a running max) and ``soft_vi_cuda`` (one CUDA thread per state and one launch per sweep;
simulator-tested). ``benchmark`` times the reference against ``@njit`` side by side.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, njit
from scipy.special import logsumexp

from icml25nb.kernels._bench import race as _race

__all__ = ["check_softvi_inputs", "soft_vi_ref", "soft_vi_njit", "soft_vi_cuda", "benchmark"]


def check_softvi_inputs(R, nxt, log_mu, alpha, gamma, n_iter):
    "The arguments as contiguous float64 / int64 arrays and plain numbers; a one-line ValueError naming the argument."
    R = np.ascontiguousarray(R, dtype=np.float64)
    if R.ndim != 2 or R.shape[0] < 1 or R.shape[1] < 1:
        raise ValueError(f"R must be a 2-D array (states, actions), got shape {R.shape}")
    if not np.isfinite(R).all():
        raise ValueError("R must be finite")
    nxt = np.asarray(nxt)
    if nxt.shape != R.shape or not np.issubdtype(nxt.dtype, np.integer):
        raise ValueError(f"nxt must be an integer array of shape {R.shape}, got {nxt.dtype} {nxt.shape}")
    nxt = np.ascontiguousarray(nxt, dtype=np.int64)
    if (nxt < -1).any() or (nxt >= R.shape[0]).any():
        raise ValueError(f"nxt must hold states in [0, {R.shape[0]}) or -1 (episode ends)")
    log_mu = np.ascontiguousarray(log_mu, dtype=np.float64)
    if log_mu.shape != (R.shape[1],) or not np.isfinite(log_mu).all():
        raise ValueError(f"log_mu must be a finite array of shape ({R.shape[1]},)")
    if not (isinstance(alpha, (int, float, np.floating, np.integer)) and math.isfinite(alpha) and alpha >= 0):
        raise ValueError(f"alpha must be a finite number >= 0, got {alpha!r}")
    if not (isinstance(gamma, (int, float, np.floating, np.integer)) and 0 <= gamma <= 1):
        raise ValueError(f"gamma must be a number in [0, 1], got {gamma!r}")
    if isinstance(n_iter, bool) or not isinstance(n_iter, (int, np.integer)) or n_iter < 1:
        raise ValueError(f"n_iter must be an integer >= 1, got {n_iter!r}")
    return R, nxt, log_mu, float(alpha), float(gamma), int(n_iter)


def soft_vi_ref(R, nxt, log_mu, alpha: float, gamma: float = 1.0, n_iter: int = 100):
    "NumPy reference: `n_iter` Jacobi sweeps of soft value iteration from V = 0 (hard max when alpha = 0)."
    R, nxt, log_mu, alpha, gamma, n_iter = check_softvi_inputs(R, nxt, log_mu, alpha, gamma, n_iter)
    V = np.zeros(R.shape[0])
    ends = nxt < 0
    for _ in range(n_iter):
        Q = R + gamma * np.where(ends, 0.0, V[np.where(ends, 0, nxt)])
        V = Q.max(axis=1) if alpha == 0 else alpha * logsumexp(Q / alpha + log_mu, axis=1)
    return V


@njit(cache=True)
def _soft_vi_njit(R, nxt, log_mu, alpha, gamma, n_iter):
    S, A = R.shape
    V = np.zeros(S)
    V2 = np.empty(S)
    q = np.empty(A)
    for _ in range(n_iter):
        for s in range(S):
            m = -np.inf
            for a in range(A):
                j = nxt[s, a]
                v = R[s, a] + (gamma * V[j] if j >= 0 else 0.0)
                if alpha > 0:
                    v = v / alpha + log_mu[a]
                q[a] = v
                if v > m:
                    m = v
            if alpha > 0:
                acc = 0.0
                for a in range(A):
                    acc += math.exp(q[a] - m)
                V2[s] = alpha * (m + math.log(acc))
            else:
                V2[s] = m
        V, V2 = V2, V
    return V


def soft_vi_njit(R, nxt, log_mu, alpha: float, gamma: float = 1.0, n_iter: int = 100):
    "CPU kernel for `soft_vi_ref`: per state a running max, then one pass of exponentials (no (S, A) temporaries)."
    return _soft_vi_njit(*check_softvi_inputs(R, nxt, log_mu, alpha, gamma, n_iter))


@cuda.jit
def _soft_vi_sweep(R, nxt, log_mu, alpha, gamma, V, V2):
    s = cuda.grid(1)
    S, A = R.shape
    if s >= S:
        return
    m = -math.inf
    for a in range(A):  # first pass: the max of the scaled Q-values
        j = nxt[s, a]
        v = R[s, a]
        if j >= 0:
            v += gamma * V[j]
        if alpha > 0:
            v = v / alpha + log_mu[a]
        if v > m:
            m = v
    if alpha > 0:
        acc = 0.0
        for a in range(A):  # second pass: recompute instead of a per-thread (A,) buffer
            j = nxt[s, a]
            v = R[s, a]
            if j >= 0:
                v += gamma * V[j]
            acc += math.exp(v / alpha + log_mu[a] - m)
        V2[s] = alpha * (m + math.log(acc))
    else:
        V2[s] = m


_THREADS = 128


def soft_vi_cuda(R, nxt, log_mu, alpha: float, gamma: float = 1.0, n_iter: int = 100):
    "CUDA kernel for `soft_vi_ref` (one thread per state, one launch per sweep); host arrays in, host array out."
    R, nxt, log_mu, alpha, gamma, n_iter = check_softvi_inputs(R, nxt, log_mu, alpha, gamma, n_iter)
    S = R.shape[0]
    dR, dn, dm = cuda.to_device(R), cuda.to_device(nxt), cuda.to_device(log_mu)
    V, V2 = cuda.to_device(np.zeros(S)), cuda.device_array(S)
    blocks = (S + _THREADS - 1) // _THREADS
    for _ in range(n_iter):
        _soft_vi_sweep[blocks, _THREADS](dR, dn, dm, alpha, gamma, V, V2)
        V, V2 = V2, V
    return V.copy_to_host()


def _random_mdp(S: int, A: int, seed: int):
    "A random deterministic MDP (successors uniform, 5% of actions end the episode), rewards in [0, 1)."
    rng = np.random.default_rng(seed)
    nxt = rng.integers(0, S, (S, A))
    nxt[rng.random((S, A)) < 0.05] = -1
    return rng.random((S, A)), nxt, np.full(A, math.log(2.0 / A))


def benchmark(size: str = "default", repeat: int = 3) -> dict:
    "Soft value iteration (20 sweeps, gamma 0.95) on random MDPs: NumPy + scipy logsumexp vs @njit (alternating)."
    if size not in ("small", "default", "full"):
        raise ValueError(f"size must be 'small', 'default' or 'full', got {size!r}")
    shapes = {"small": ((256, 64),), "default": ((256, 64), (4096, 256)),
              "full": ((256, 64), (4096, 256), (10_000, 1000))}[size]
    rows, ratios, values = {}, {}, {}
    for S, A in shapes:
        R, nxt, log_mu = _random_mdp(S, A, S + A)
        args = (R, nxt, log_mu, 0.5, 0.95, 20)
        best = _race({"ref": lambda: soft_vi_ref(*args), "njit": lambda: soft_vi_njit(*args)}, max(1, repeat))
        key = f"S={S}, A={A}"
        rows[f"numpy + scipy logsumexp, {key}"], rows[f"njit, {key}"] = best["ref"], best["njit"]
        ratios[f"njit vs numpy + scipy logsumexp, {key}"] = best["ref"] / best["njit"]
        values[f"max |V njit - reference|, {key}"] = float(np.abs(soft_vi_njit(*args) - soft_vi_ref(*args)).max())
    last = f"S={shapes[-1][0]}, A={shapes[-1][1]}"
    return {"kernel": "softvi", "task": "20 sweeps of soft value iteration on a random deterministic MDP",
            "seconds": rows, "reference": f"numpy + scipy logsumexp, {last}", "values": values, "ratios": ratios}
