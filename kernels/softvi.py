"""Soft (maximum-entropy) value iteration on a deterministic tabular MDP: log-sum-exp over actions, one state at a time.

The MDP has S states and A actions. ``nxt[s, a]`` is the successor state (-1: the episode ends), ``R[s, a]`` the
reward and ``log_mu[a]`` the log-measure of action ``a`` (``log(2 / A)`` for A bins of the interval [-1, 1], so that
the entropy is the differential entropy of the continuous action). One Jacobi sweep, from V to V'::

    Q(s, a) = R(s, a) + gamma V(nxt(s, a))            (the V term is 0 where nxt = -1)
    V'(s)   = alpha log sum_a mu_a exp(Q(s, a) / alpha)      alpha > 0
    V'(s)   = max_a Q(s, a)                                   alpha = 0 (the standard Bellman backup)

The soft backup is computed as ``max_a Q + alpha log sum_a mu_a exp((Q(s, a) - max_a Q) / alpha)``: every exponent is
<= log mu_a, so nothing overflows at any alpha > 0, subnormal ones included (alpha = 1e-310 gives the hard backup to
rounding). ``check_softvi_inputs`` states the valid range (finite R; n_iter S A <= 1e10; and
n_iter (max|R| + alpha (max|log mu| + log A)) <= 1e300, a bound on |V| that keeps every value finite).

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

from icml25nb.core import ArgumentTypeError, check_array, check_float, check_int
from icml25nb.kernels._bench import race as _race

__all__ = ["check_softvi_inputs", "soft_vi_ref", "soft_vi_njit", "soft_vi_cuda", "benchmark"]


#: refuse runs whose values could pass this magnitude (overflow to inf, then inf - inf = NaN)
MAX_VALUE = 1e300
#: refuse runs of more than this many backups (n_iter x S x A): minutes of compute, not a call
MAX_WORK = 10**10


def check_softvi_inputs(R, nxt, log_mu, alpha, gamma, n_iter):
    """The arguments as contiguous float64 / int64 arrays and plain numbers; a one-line ValueError/TypeError naming
    the argument. Valid range: R finite (S, A) with S, A >= 1; nxt integers in [-1, S); log_mu finite (A,); alpha a
    finite number >= 0 (any, down to the subnormals: the backup is computed as max_a Q + alpha log-sum-exp of
    (Q - max Q) / alpha, which cannot overflow); gamma in [0, 1]; n_iter an integer >= 1 with n_iter S A <= 1e10;
    and n_iter (max|R| + alpha (max|log_mu| + log A)) <= 1e300, a bound on |V| that keeps every value finite."""
    R = check_array("R", R, ndim=2)
    if R.shape[0] < 1 or R.shape[1] < 1:
        raise ValueError(f"R must be a 2-D array (states, actions) with at least one of each, got shape {R.shape}")
    S, A = R.shape
    raw = np.asarray(nxt) if not isinstance(nxt, (str, bytes)) else nxt
    if not isinstance(raw, np.ndarray) or raw.dtype.kind not in "iu":
        raise ArgumentTypeError(f"nxt must be an integer array of shape {R.shape}, got "
                                f"{getattr(raw, 'dtype', type(raw).__name__)}")
    if raw.shape != R.shape:
        raise ValueError(f"nxt must be an integer array of shape {R.shape}, got shape {raw.shape}")
    nxt = check_array("nxt", raw, dtype=np.int64)
    if (nxt < -1).any() or (nxt >= S).any():
        raise ValueError(f"nxt must hold states in [0, {S}) or -1 (episode ends)")
    log_mu = check_array("log_mu", log_mu, shape=(A,))
    alpha = check_float("alpha", alpha, 0.0)
    gamma = check_float("gamma", gamma, 0.0, 1.0)
    n_iter = check_int("n_iter", n_iter, 1)
    if n_iter * S * A > MAX_WORK:
        raise ValueError(f"n_iter must be at most {MAX_WORK:.0e} / (S A) = {MAX_WORK // (S * A)} for S = {S}, "
                         f"A = {A}, got {n_iter}")
    bound = n_iter * (float(np.abs(R).max()) + alpha * (float(np.abs(log_mu).max()) + math.log(A)))
    if not bound <= MAX_VALUE:
        raise ValueError(f"R, alpha, log_mu and n_iter are too large: values could reach {bound:.3g}, beyond "
                         f"{MAX_VALUE:g} (overflow); scale the rewards down")
    return R, nxt, log_mu, alpha, gamma, n_iter


def soft_vi_ref(R, nxt, log_mu, alpha: float, gamma: float = 1.0, n_iter: int = 100):
    """NumPy reference: `n_iter` Jacobi sweeps of soft value iteration from V = 0 (hard max when alpha = 0). The soft
    backup is max_a Q + alpha logsumexp((Q - max_a Q) / alpha + log mu): no Q / alpha that overflows at tiny alpha."""
    R, nxt, log_mu, alpha, gamma, n_iter = check_softvi_inputs(R, nxt, log_mu, alpha, gamma, n_iter)
    V = np.zeros(R.shape[0])
    ends = nxt < 0
    for _ in range(n_iter):
        Q = R + gamma * np.where(ends, 0.0, V[np.where(ends, 0, nxt)])
        m = Q.max(axis=1)
        if alpha == 0:
            V = m
        else:
            with np.errstate(over="ignore"):  # (Q - m) / alpha may be -inf at tiny alpha: exp gives 0, as it should
                V = m + alpha * logsumexp((Q - m[:, None]) / alpha + log_mu, axis=1)
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
                q[a] = v
                if v > m:
                    m = v
            if alpha > 0:  # m + alpha log sum_a mu_a exp((Q_a - m) / alpha): (Q_a - m) / alpha <= 0 never overflows
                mz = -np.inf
                for a in range(A):
                    z = (q[a] - m) / alpha + log_mu[a]
                    q[a] = z
                    if z > mz:
                        mz = z
                acc = 0.0
                for a in range(A):
                    acc += math.exp(q[a] - mz)
                V2[s] = m + alpha * (mz + math.log(acc))
            else:
                V2[s] = m
        V, V2 = V2, V
    return V


def soft_vi_njit(R, nxt, log_mu, alpha: float, gamma: float = 1.0, n_iter: int = 100):
    "CPU kernel for `soft_vi_ref`: per state a running max, then one pass of exponentials (no (S, A) temporaries)."
    return _soft_vi_njit(*check_softvi_inputs(R, nxt, log_mu, alpha, gamma, n_iter))


@cuda.jit(device=True)
def _q_cuda(R, nxt, gamma, V, s, a):
    j = nxt[s, a]
    v = R[s, a]
    if j >= 0:
        v += gamma * V[j]
    return v


@cuda.jit
def _soft_vi_sweep(R, nxt, log_mu, alpha, gamma, V, V2):
    s = cuda.grid(1)
    S, A = R.shape
    if s >= S:
        return
    m = -math.inf
    for a in range(A):  # first pass: max_a Q (recomputed in each pass instead of a per-thread (A,) buffer)
        v = _q_cuda(R, nxt, gamma, V, s, a)
        if v > m:
            m = v
    if alpha > 0:
        mz = -math.inf
        for a in range(A):  # second pass: the max of the shifted, scaled logits
            z = (_q_cuda(R, nxt, gamma, V, s, a) - m) / alpha + log_mu[a]
            if z > mz:
                mz = z
        acc = 0.0
        for a in range(A):  # third pass: the exponentials
            acc += math.exp((_q_cuda(R, nxt, gamma, V, s, a) - m) / alpha + log_mu[a] - mz)
        V2[s] = m + alpha * (mz + math.log(acc))
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
    """Soft value iteration (20 sweeps, gamma 0.95) on random MDPs: NumPy + scipy logsumexp vs @njit vs the public
    function a user calls (`icml25nb.rl.maxent.soft_value_iteration`: checks, the kernel, then the policy), alternating."""
    if size not in ("small", "default", "full"):
        raise ValueError(f"size must be 'small', 'default' or 'full', got {size!r}")
    from icml25nb.rl.maxent import soft_value_iteration
    shapes = {"small": ((256, 64),), "default": ((256, 64), (4096, 256)),
              "full": ((256, 64), (4096, 256), (10_000, 1000))}[size]
    rows, ratios, values = {}, {}, {}
    for S, A in shapes:
        R, nxt, log_mu = _random_mdp(S, A, S + A)
        args = (R, nxt, log_mu, 0.5, 0.95, 20)
        best = _race({"ref": lambda: soft_vi_ref(*args), "njit": lambda: soft_vi_njit(*args),
                      "chapter": lambda: soft_value_iteration(nxt, R, 0.5, 0.95, 20, log_mu)},
                     max(1, repeat) * (10 if S * A <= 65536 else 1))  # ms calls: more rounds, a load spike averages out
        key = f"S={S}, A={A}"
        rows[f"numpy + scipy logsumexp, {key}"], rows[f"njit, {key}"] = best["ref"], best["njit"]
        rows[f"maxent.soft_value_iteration (V and policy), {key}"] = best["chapter"]
        ratios[f"njit vs numpy + scipy logsumexp, {key}"] = best["ref"] / best["njit"]
        ratios[f"maxent.soft_value_iteration / njit, {key}"] = best["chapter"] / best["njit"]
        values[f"max |V njit - reference|, {key}"] = float(np.abs(soft_vi_njit(*args) - soft_vi_ref(*args)).max())
    last = f"S={shapes[-1][0]}, A={shapes[-1][1]}"
    return {"kernel": "softvi", "task": "20 sweeps of soft value iteration on a random deterministic MDP",
            "seconds": rows, "reference": f"numpy + scipy logsumexp, {last}", "values": values, "ratios": ratios}
