"""von Mises-Fisher sampling (Wood, 1994) and brute-force top-1 inner-product search, the two hot loops of vMF-exp.

**Sampler.** ``x ~ vMF(mu, kappa)`` on the sphere S^{d-1}: draw the cosine ``W = <x, mu>`` by Wood's rejection
step, then a direction ``v`` uniform on the sphere orthogonal to ``mu``; ``x = W mu + sqrt(1 - W^2) v``. With
``b = (d-1) / (2 kappa + sqrt(4 kappa^2 + (d-1)^2))`` (the form that does not cancel at large kappa),
``x0 = (1-b)/(1+b)`` and ``c = kappa x0 + (d-1) log(1 - x0^2)``, an attempt draws ``Z ~ Beta((d-1)/2, (d-1)/2)``,
``W = (1 - (1+b) Z) / (1 - (1-b) Z)`` and ``U ~ U(0, 1)`` and accepts when
``kappa W + (d-1) log(1 - x0 W) - c >= log U``.

Randomness comes from ``icml25nb.kernels.rng``: sample ``i`` uses its own counter-based stream ``(seed, i)``, so
the NumPy reference, the ``@njit`` kernel (parallel over samples) and the ``@cuda.jit`` kernel (one thread per
sample) produce the same samples. Within a stream, attempt ``j`` uses the ``P = 2 ceil(d/2) + 1`` draws from
counter ``j P``: ``d`` standard normals by Box-Muller (pairs of uniforms; ``Z = (1 + g_1/|g|)/2`` is the Beta draw,
since the first coordinate of a uniform point on S^{d-1} has density proportional to ``(1-t^2)^{(d-3)/2}``), then
``U``. After the accepted attempt ``j``, the ``d`` normals from counter ``(j+1) P`` give the direction:
``v = (g - <g, mu> mu) / |g - <g, mu> mu|`` (O(d) per draw: no rotation matrix). The kernels keep the normals in
the sample's own output row while they need them, so a CUDA thread needs no local array. The CPU kernel computes
the same draws faster (see `_sample_fast`): an attempt needs only the pairs' radii (one log each) and g_1's cosine,
and log, sin and cos are branch-free polynomials vectorised over the pairs (within 1 ulp of libm); at d = 3 it is
vectorised over samples instead (`_wood3_block`). It agrees with the reference and the CUDA kernel to rounding.

**Search.** ``top1(Q, A)``: for each query row of ``Q`` the index of the row of ``A`` with the largest inner product
(the first one on ties). Reference: NumPy matrix products in chunks and ``argmax``. CPU kernel: BLAS products in
blocks of 256 queries x 1024 actions, each followed by a fused ``@njit`` pass that rescores, with the tiled kernel's
own dot product, only the actions whose BLAS score is within a rounding-error bound of the query's best so far, so
its answer is bit for bit that of the tiled ``@njit`` kernel (tiles of queries against the whole of ``A``, float64
accumulator), whatever order BLAS sums in; query blocks run in numba's thread count of threads. The tiled kernel
still serves fewer than 32 queries and inputs with NaN, inf or products near overflow. ``@cuda.jit``: one block per
query, threads stride over the actions, shared-memory argmax reduction.
"""
from __future__ import annotations

import math
import time

import numpy as np
from numba import cuda, njit, prange

from icml25nb.kernels import rng as R
from icml25nb.core import ArgumentTypeError, check_array, check_choice, check_float, check_int, check_memory, check_seed
from icml25nb.kernels._bench import best_time as _best_time, race as _race
from icml25nb.kernels._threads import map_row_blocks, row_blocks

__all__ = ["wood_b", "wood_sample_ref", "wood_sample", "wood_sample_cuda", "top1_ref", "top1", "top1_cuda",
           "benchmark"]

_TWO_PI = 2.0 * math.pi


def wood_b(kappa: float, d: int) -> float:
    "Wood's b = (d-1) / (2 kappa + sqrt(4 kappa^2 + (d-1)^2)), free of cancellation at large kappa."
    kappa, d = check_float("kappa", kappa, 0.0, open_min=True), check_int("d", d, 2)
    return (d - 1) / (2.0 * kappa + math.sqrt(4.0 * kappa * kappa + (d - 1) ** 2))


#: the largest concentration the samplers take: beyond it 1 - w falls below float64's resolution near 1 (every draw
#: would be mu), and 1 - x0^2 in Wood's constant rounds to 0 (log 0: the rejection loop would never accept)
MAX_KAPPA = 1e15


def _check_sampler(mu, kappa, size, seed) -> tuple[np.ndarray, float, int, int]:
    mu = check_array("mu", mu)
    if mu.ndim != 1 or mu.size < 2:
        raise ValueError(f"mu must be a vector of dimension >= 2, got shape {mu.shape}")
    if abs(np.linalg.norm(mu) - 1.0) > 1e-6:
        raise ValueError("mu must be a finite unit vector (normalise it first)")
    kappa = check_float("kappa", kappa, 0.0, MAX_KAPPA, open_min=True)
    size = check_int("size", size, 0)
    seed = check_seed(seed)
    check_memory("size", float(size) * mu.size, 8 * 3)  # the draws and the reference's per-sample temporaries
    return mu, kappa, size, seed


# --- NumPy reference -------------------------------------------------------------------------------------------------

def _normals_ref(keys, start, d) -> np.ndarray:
    "d Box-Muller normals (n, d) of the streams `keys` from counters `start` (n,)."
    pairs = (d + 1) // 2
    c = start[:, None].astype(np.uint64) + np.arange(2 * pairs, dtype=np.uint64)[None, :]
    u = R.uniform_ref(keys[:, None], c)
    r = np.sqrt(-2.0 * np.log1p(-u[:, 0::2]))
    ang = _TWO_PI * u[:, 1::2]
    g = np.empty((len(keys), 2 * pairs))
    g[:, 0::2], g[:, 1::2] = r * np.cos(ang), r * np.sin(ang)
    return g[:, :d]


def wood_sample_ref(mu, kappa: float, size: int, seed: int = 0) -> np.ndarray:
    "NumPy reference: `size` draws (size, d) from vMF(mu, kappa), vectorised over samples and attempts."
    mu, kappa, size, seed = _check_sampler(mu, kappa, size, seed)
    d = mu.size
    P = 2 * ((d + 1) // 2) + 1
    b = wood_b(kappa, d)
    x0 = (1.0 - b) / (1.0 + b)
    c = kappa * x0 + (d - 1) * math.log(1.0 - x0 * x0)
    keys = R.stream_key_ref(np.full(size, seed, dtype=np.uint64), np.arange(size, dtype=np.uint64))
    W = np.empty(size)
    attempt = np.zeros(size, dtype=np.int64)
    todo = np.arange(size)
    while todo.size:
        start = attempt[todo] * P
        g = _normals_ref(keys[todo], start, d)
        Z = 0.5 * (1.0 + g[:, 0] / np.sqrt((g * g).sum(1)))
        w = (1.0 - (1.0 + b) * Z) / (1.0 - (1.0 - b) * Z)
        U = R.uniform_ref(keys[todo], (start + P - 1).astype(np.uint64))
        with np.errstate(divide="ignore"):
            ok = kappa * w + (d - 1) * np.log(1.0 - x0 * w) - c >= np.log(U)
        W[todo[ok]] = w[ok]
        attempt[todo[~ok]] += 1
        todo = todo[~ok]
    g = _normals_ref(keys, (attempt + 1) * P, d)
    gm = g @ mu
    v = g - gm[:, None] * mu[None, :]
    v /= np.sqrt((v * v).sum(1))[:, None]
    return W[:, None] * mu[None, :] + np.sqrt(np.maximum(1.0 - W * W, 0.0))[:, None] * v


# --- Numba CPU and CUDA: one source ----------------------------------------------------------------------------------

def _build_sampler(jit, uniform):
    "Per-sample Wood sampler compiled with `jit` (njit or cuda.jit(device=True)) over the rng's `uniform`."

    @jit
    def normal(key, base, k):
        p = k // 2
        u1 = uniform(key, base + 2 * p)
        u2 = uniform(key, base + 2 * p + 1)
        r = math.sqrt(-2.0 * math.log1p(-u1))
        if k % 2 == 0:
            return r * math.cos(_TWO_PI * u2)
        return r * math.sin(_TWO_PI * u2)

    @jit
    def normals(key, base, out_row):
        "The d Box-Muller normals from counter `base` into out_row (both values of each pair are used)."
        d = out_row.shape[0]
        for p in range((d + 1) // 2):
            u1 = uniform(key, base + 2 * p)
            u2 = uniform(key, base + 2 * p + 1)
            r = math.sqrt(-2.0 * math.log1p(-u1))
            out_row[2 * p] = r * math.cos(_TWO_PI * u2)
            if 2 * p + 1 < d:
                out_row[2 * p + 1] = r * math.sin(_TWO_PI * u2)

    @jit
    def sample_one(mu, kappa, b, x0, c, key, out_row):
        "One vMF draw into out_row, which also holds the normals while they are needed (no other scratch)."
        d = mu.shape[0]
        P = 2 * ((d + 1) // 2) + 1
        attempt = 0
        w = 0.0
        while True:
            base = attempt * P
            normals(key, base, out_row)
            ss = 0.0
            for k in range(d):
                ss += out_row[k] * out_row[k]
            Z = 0.5 * (1.0 + out_row[0] / math.sqrt(ss))
            w = (1.0 - (1.0 + b) * Z) / (1.0 - (1.0 - b) * Z)
            U = uniform(key, base + P - 1)
            lhs = kappa * w + (d - 1) * math.log(1.0 - x0 * w) - c
            if U == 0.0 or lhs >= math.log(U):
                break
            attempt += 1
        normals(key, (attempt + 1) * P, out_row)
        gm = 0.0
        for k in range(d):
            gm += out_row[k] * mu[k]
        vv = 0.0  # |g - <g, mu> mu|^2 summed directly: |g|^2 - <g, mu>^2 would cancel when g is near mu
        for k in range(d):
            out_row[k] -= gm * mu[k]
            vv += out_row[k] * out_row[k]
        scale = math.sqrt(max(1.0 - w * w, 0.0)) / math.sqrt(vv)
        for k in range(d):
            out_row[k] = w * mu[k] + scale * out_row[k]

    return sample_one


_sample_one = _build_sampler(njit(cache=False, inline="always"), R._uniform)
_cuda_sample_one = _build_sampler(lambda f: cuda.jit(device=True)(f), R.cuda_uniform)


@njit(parallel=True, cache=True)
def _wood_njit_libm(mu, kappa, b, x0, c, seed, out):
    "The previous CPU kernel (libm log, sqrt, cos, sin for every normal of every attempt), kept for the benchmark."
    for i in prange(out.shape[0]):
        _sample_one(mu, kappa, b, x0, c, R._stream_key(seed, i), out[i])


# --- The CPU kernel: the same draws, vectorised ----------------------------------------------------------------------
# The draws are those of `_sample_one` (the same counters, the same formulas up to rounding), computed faster:
# * an attempt needs only g_1 and |g|^2 = sum_p r_p^2 (the squared radii of the Box-Muller pairs, r_p^2 =
#   -2 log(1 - u_p), with the odd coordinate's r^2 cos^2 when d is odd): no sqrt, no sine, no cosine except g_1's,
#   and the second uniform of every other pair is never computed (the streams are counter-based);
# * log(1 - u) and the sine and cosine of 2 pi u come from branch-free polynomials (fdlibm's e_log.c, k_sin.c and
#   k_cos.c coefficients, within 1 ulp of libm's) that LLVM vectorises over the pairs (8 doubles per AVX-512
#   instruction). 1 - u = (2^53 - m) 2^-53 is exact for u = m 2^-53, so log(1 - u) keeps full relative accuracy
#   near u = 0 like log1p(-u); the angle is reduced to [-pi/4, pi/4] exactly on the integer m (quarter turns).
# * the per-sample reductions (<g, mu>, |g - <g, mu> mu|^2, sum of the logs) are fastmath loops (vectorised sums).
# Results agree with `wood_sample_ref` to rounding (about 1e-15 per coordinate; an acceptance test decided within
# rounding could in principle go the other way, with probability about 1e-16 per attempt).

_LN2_HI, _LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10
_LG1, _LG2, _LG3 = 6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01
_LG4, _LG5, _LG6, _LG7 = 2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01, 1.479819860511658591e-01
_S1, _S2, _S3 = -1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04
_S4, _S5, _S6 = 2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10
_C1, _C2, _C3 = 4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05
_C4, _C5, _C6 = -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11
_MANT, _ONE_BITS = 0x000FFFFFFFFFFFFF, 0x3FF0000000000000
_TWO_M53 = 1.0 / 9007199254740992.0
_TWO_53 = 9007199254740992
_PI_M52 = math.pi / 4503599627370496.0  # 2 pi / 2^53: radians per unit of m


@njit(inline="always", error_model="numpy")
def _fast_log(x):
    "log(x) for a positive normal float64, fdlibm's e_log.c without its branches (within 1 ulp of libm)."
    hx = np.float64(x).view(np.int64)
    m = hx & _MANT
    i = (m + 0x95F6400000000) & 0x10000000000000  # the mantissa is >= sqrt(2): take it halved, and k + 1
    f = np.int64(m | (i ^ _ONE_BITS)).view(np.float64) - 1.0
    dk = np.float64((hx >> 52) - 1023 + (i >> 52))
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    R_ = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7))) + w * (_LG2 + w * (_LG4 + w * _LG6))
    hfsq = 0.5 * f * f
    return dk * _LN2_HI - ((hfsq - (s * (hfsq + R_) + dk * _LN2_LO)) - f)


@njit(inline="always", error_model="numpy")
def _u53(key, counter):
    "Draw `counter` of stream `key` as the integer m in [0, 2^53) of R.uniform's m 2^-53."
    return np.int64(R._u64(key, counter) >> np.uint64(11))


@njit(inline="always", error_model="numpy")
def _log1m(m):
    "log(1 - m 2^-53), i.e. log1p(-u) of the uniform u = m 2^-53 (1 - u is exact)."
    return _fast_log(np.float64(_TWO_53 - m) * _TWO_M53)


@njit(inline="always", error_model="numpy")
def _quarter(m):
    "Angle 2 pi m 2^-53 = j pi/2 + x, |x| <= pi/4: (j mod 4, cos x, sin x) by fdlibm's kernels."
    j = (m + (1 << 50)) >> 51
    x = np.float64(m - (j << 51)) * _PI_M52
    z = x * x
    s = x + z * x * (_S1 + z * (_S2 + z * (_S3 + z * (_S4 + z * (_S5 + z * _S6)))))
    r = z * (_C1 + z * (_C2 + z * (_C3 + z * (_C4 + z * (_C5 + z * _C6)))))
    hz = 0.5 * z
    w = 1.0 - hz
    return j & 3, w + (((1.0 - w) - hz) + z * r), s


@njit(inline="always", error_model="numpy")
def _cos_turns(m):
    "cos(2 pi m 2^-53)."
    q, c, s = _quarter(m)
    a = s if (q & 1) == 1 else c
    return -a if ((q + 1) & 2) != 0 else a


@njit(inline="always", error_model="numpy")
def _sincos_turns(m):
    "(cos, sin)(2 pi m 2^-53), branch-free (selects)."
    q, c, s = _quarter(m)
    odd = (q & 1) == 1
    a = s if odd else c
    b = c if odd else s
    return (-a if ((q + 1) & 2) != 0 else a), (-b if (q & 2) != 0 else b)


@njit(fastmath=True, error_model="numpy")
def _fsum(x, n):
    s = 0.0
    for k in range(n):
        s += x[k]
    return s


@njit(fastmath=True, error_model="numpy")
def _fdot(x, y):
    s = 0.0
    for k in range(x.shape[0]):
        s += x[k] * y[k]
    return s


@njit(fastmath=True, error_model="numpy")
def _fproject(x, mu, gm):
    "x -= gm mu in place; returns |x|^2 (summed directly: |g|^2 - gm^2 would cancel when g is near mu)."
    s = 0.0
    for k in range(x.shape[0]):
        t = x[k] - gm * mu[k]
        x[k] = t
        s += t * t
    return s


@njit(inline="always", error_model="numpy")
def _sample_fast(mu, kappa, b, x0, c, key, out_row):
    "One draw of `_sample_one` (the same counters), vectorised; out_row is the scratch (d >= number of pairs)."
    d = mu.shape[0]
    half = d // 2
    P = 2 * ((d + 1) // 2) + 1
    attempt = 0
    w = 0.0
    while True:
        base = attempt * P
        for p in range(half):  # log(1 - u) of the first uniform of every full pair: vectorised
            out_row[p] = _log1m(_u53(key, base + 2 * p))
        ss = -2.0 * _fsum(out_row, half)
        g0 = math.sqrt(-2.0 * out_row[0]) * _cos_turns(_u53(key, base + 1))
        if d % 2 == 1:  # the last coordinate: r cos of the last pair
            gl = math.sqrt(-2.0 * _log1m(_u53(key, base + 2 * half))) * _cos_turns(_u53(key, base + 2 * half + 1))
            ss += gl * gl
        Z = 0.5 * (1.0 + g0 / math.sqrt(ss))
        w = (1.0 - (1.0 + b) * Z) / (1.0 - (1.0 - b) * Z)
        U = R._uniform(key, base + P - 1)
        lhs = kappa * w + (d - 1) * math.log(1.0 - x0 * w) - c
        if U == 0.0 or lhs >= math.log(U):
            break
        attempt += 1
    base = (attempt + 1) * P
    for p in range(half):  # the direction's normals: vectorised Box-Muller
        r = math.sqrt(-2.0 * _log1m(_u53(key, base + 2 * p)))
        cs, sn = _sincos_turns(_u53(key, base + 2 * p + 1))
        out_row[2 * p] = r * cs
        out_row[2 * p + 1] = r * sn
    if d % 2 == 1:
        out_row[d - 1] = math.sqrt(-2.0 * _log1m(_u53(key, base + 2 * half))) * _cos_turns(
            _u53(key, base + 2 * half + 1))
    gm = _fdot(out_row, mu)
    vv = _fproject(out_row, mu, gm)
    scale = math.sqrt(max(1.0 - w * w, 0.0)) / math.sqrt(vv)
    for k in range(d):
        out_row[k] = w * mu[k] + scale * out_row[k]


@njit(inline="always", error_model="numpy")
def _attempt3(kappa, b, x0, c, key, base):
    "Attempt at counter `base` of `_sample_one` at d = 3, straight-line: (w, accepted)."
    l0 = _log1m(_u53(key, base))
    g0 = math.sqrt(-2.0 * l0) * _cos_turns(_u53(key, base + 1))
    g2 = math.sqrt(-2.0 * _log1m(_u53(key, base + 2))) * _cos_turns(_u53(key, base + 3))
    Z = 0.5 * (1.0 + g0 / math.sqrt(-2.0 * l0 + g2 * g2))
    w = (1.0 - (1.0 + b) * Z) / (1.0 - (1.0 - b) * Z)
    m = _u53(key, base + 4)  # U = m 2^-53; U = 0 accepts (log U = -inf), the select keeps it branch-free
    lhs = kappa * w + 2.0 * _fast_log(1.0 - x0 * w) - c
    return w, (m == 0) | (lhs >= _fast_log(np.float64(m) * _TWO_M53))


_B3 = 1024  # samples per block of the d = 3 kernel


@njit(cache=True, error_model="numpy")
def _wood3_block(mu, kappa, b, x0, c, seed, i0, out):
    """Draws i0 .. i0 + len(out) - 1 at d = 3 (the draws of `_sample_one`), vectorised over samples: rounds of
    attempts (all samples, then the rejected ones, compacted, about a third of them at large kappa), then every
    direction."""
    n = out.shape[0]
    W = np.empty(n)
    A = np.empty(n, dtype=np.int64)
    J = np.arange(n)  # the samples still rejected, and their next attempt
    At = np.zeros(n, dtype=np.int64)
    Wt = np.empty(n)
    ok = np.empty(n, dtype=np.bool_)
    r = n
    while r:  # rounds: every pending sample's next attempt (vectorised), then the rejected ones compacted
        for t in range(r):
            Wt[t], ok[t] = _attempt3(kappa, b, x0, c, R._stream_key(seed, i0 + J[t]), 5 * At[t])
        r2 = 0
        for t in range(r):
            if ok[t]:
                W[J[t]] = Wt[t]
                A[J[t]] = At[t]
            else:
                J[r2] = J[t]
                At[r2] = At[t] + 1
                r2 += 1
        r = r2
    m0, m1, m2 = mu[0], mu[1], mu[2]
    o0, o1, o2 = Wt, np.empty(n), np.empty(n)
    for j in range(n):
        key = R._stream_key(seed, i0 + j)
        base = 5 * (A[j] + 1)
        r = math.sqrt(-2.0 * _log1m(_u53(key, base)))
        cs, sn = _sincos_turns(_u53(key, base + 1))
        g0, g1 = r * cs, r * sn
        g2 = math.sqrt(-2.0 * _log1m(_u53(key, base + 2))) * _cos_turns(_u53(key, base + 3))
        gm = g0 * m0 + g1 * m1 + g2 * m2
        v0, v1, v2 = g0 - gm * m0, g1 - gm * m1, g2 - gm * m2
        w = W[j]
        scale = math.sqrt(max(1.0 - w * w, 0.0)) / math.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
        o0[j] = w * m0 + scale * v0  # three contiguous columns: strided stores into `out` would not vectorise
        o1[j] = w * m1 + scale * v1
        o2[j] = w * m2 + scale * v2
    for j in range(n):
        out[j, 0] = o0[j]
        out[j, 1] = o1[j]
        out[j, 2] = o2[j]


@njit(parallel=True, cache=True, error_model="numpy")
def _wood_njit(mu, kappa, b, x0, c, seed, out):
    n = out.shape[0]
    if mu.shape[0] == 3:
        for blk in prange((n + _B3 - 1) // _B3):
            i0 = blk * _B3
            _wood3_block(mu, kappa, b, x0, c, seed, i0, out[i0:min(n, i0 + _B3)])
        return
    for i in prange(n):
        _sample_fast(mu, kappa, b, x0, c, R._stream_key(seed, i), out[i])


@njit(cache=True, error_model="numpy")
def _wood_serial(mu, kappa, b, x0, c, seed, out):
    if mu.shape[0] == 3:
        _wood3_block(mu, kappa, b, x0, c, seed, 0, out)
        return
    for i in range(out.shape[0]):
        _sample_fast(mu, kappa, b, x0, c, R._stream_key(seed, i), out[i])


@njit(parallel=True, cache=True, error_model="numpy")
def _fast_funcs_njit(m, lg, cs, sn):
    for i in prange(m.shape[0]):
        lg[i] = _log1m(m[i])
        cs[i], sn[i] = _sincos_turns(m[i])


def _fast_funcs(m):
    "(log(1 - u), cos(2 pi u), sin(2 pi u)) for u = m 2^-53, integers m in [0, 2^53): the kernel's functions (tests)."
    m = np.ascontiguousarray(m, dtype=np.int64)
    lg, cs, sn = np.empty(len(m)), np.empty(len(m)), np.empty(len(m))
    _fast_funcs_njit(m, lg, cs, sn)
    return lg, cs, sn


def _wood_libm(mu, kappa, size, seed):
    "The previous CPU kernel (libm functions, one sample per iteration), for the tests and the benchmark."
    mu, kappa, size, seed = _check_sampler(mu, kappa, size, seed)
    out = np.empty((size, mu.size))
    if size:
        _wood_njit_libm(mu, kappa, *_constants(kappa, mu.size), np.uint64(seed), out)
    return out


_PARALLEL_FROM = 256  # fewer samples than this run serially: waking the thread pool costs more than it saves


def _constants(kappa, d):
    b = wood_b(kappa, d)
    x0 = (1.0 - b) / (1.0 + b)
    return b, x0, kappa * x0 + (d - 1) * math.log(1.0 - x0 * x0)


def wood_sample(mu, kappa: float, size: int, seed: int = 0) -> np.ndarray:
    "CPU kernel (parallel over samples; serial below 256 samples) for `wood_sample_ref`: the same draws."
    mu, kappa, size, seed = _check_sampler(mu, kappa, size, seed)
    out = np.empty((size, mu.size))
    if size:
        fn = _wood_njit if size >= _PARALLEL_FROM else _wood_serial
        fn(mu, kappa, *_constants(kappa, mu.size), np.uint64(seed), out)
    return out


@cuda.jit
def _wood_cuda_kernel(mu, kappa, b, x0, c, seed, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        _cuda_sample_one(mu, kappa, b, x0, c, R.cuda_stream_key(seed, i), out[i])


def wood_sample_cuda(mu, kappa: float, size: int, seed: int = 0, threads_per_block: int = 128) -> np.ndarray:
    "CUDA kernel (one thread per sample) for `wood_sample_ref`; runs under NUMBA_ENABLE_CUDASIM=1 too."
    mu, kappa, size, seed = _check_sampler(mu, kappa, size, seed)
    threads_per_block = check_int("threads_per_block", threads_per_block, 1, 1024)
    out = cuda.device_array((size, mu.size), dtype=np.float64)
    if size:
        blocks = (size + threads_per_block - 1) // threads_per_block
        _wood_cuda_kernel[blocks, threads_per_block](cuda.to_device(mu), kappa, *_constants(kappa, mu.size),
                                                     np.uint64(seed), out)
    return out.copy_to_host()


# --- Top-1 inner-product search -------------------------------------------------------------------------------------

def _as_real(name: str, X) -> np.ndarray:
    "`X` as an array of real numbers (a float32 one stays float32), or a one-line error naming it."
    return check_array(name, X, dtype=None, finite=False, contiguous=False)


def _check_search(Q, A) -> tuple[np.ndarray, np.ndarray]:
    A = _as_real("A", A)
    Q = _as_real("Q", Q)
    if A.ndim != 2 or A.shape[0] == 0:
        raise ValueError(f"A must be a non-empty 2-d array (actions x dimension), got shape {A.shape}")
    if Q.ndim != 2 or Q.shape[1] != A.shape[1]:
        raise ValueError(f"Q must be 2-d with {A.shape[1]} columns like A, got shape {Q.shape}")
    dtype = np.float32 if A.dtype == np.float32 and Q.dtype == np.float32 else np.float64
    return np.ascontiguousarray(Q, dtype=dtype), np.ascontiguousarray(A, dtype=dtype)


def top1_ref(Q, A, chunk: int = 256) -> np.ndarray:
    "NumPy reference: argmax_j <Q_i, A_j> for every row of Q (chunks of queries, BLAS matrix products)."
    Q, A = _check_search(Q, A)
    chunk = check_int("chunk", chunk, 1)
    out = np.empty(len(Q), dtype=np.int64)
    for s in range(0, len(Q), chunk):
        out[s:s + chunk] = np.argmax(Q[s:s + chunk] @ A.T, axis=1)
    return out


_TILE = 16  # queries per tile: each action row is read once per tile, while the tile stays in L1


@njit(parallel=True, cache=True, fastmath=True)
def _top1_njit(Q, A, out):
    nq, d = Q.shape
    n = A.shape[0]
    n_tiles = (nq + _TILE - 1) // _TILE
    for t in prange(n_tiles):
        q0 = t * _TILE
        m = min(_TILE, nq - q0)
        best = np.full(_TILE, -np.inf)
        arg = np.zeros(_TILE, dtype=np.int64)
        for j in range(n):
            a = A[j]
            for r in range(m):
                q = Q[q0 + r]
                acc = 0.0
                for k in range(d):  # contiguous rows: a vectorised dot product
                    acc += q[k] * a[k]
                if acc > best[r]:
                    best[r] = acc
                    arg[r] = j
        for r in range(m):
            out[q0 + r] = arg[r]


@njit(inline="always", fastmath=True)
def _dot(q, a):
    "The score of `_top1_njit`, the same loop (float64 accumulator, fastmath): bit for bit its summation order."
    acc = 0.0
    for k in range(q.shape[0]):
        acc += q[k] * a[k]
    return acc


@njit(nogil=True, cache=True, fastmath=True)
def _rescore(S, Q, A, j0, margin, best, arg):
    """Fused argmax pass over a BLAS block S (queries x actions j0, j0+1, ...): an action whose BLAS score is within
    `margin[r]` of the query's best exact score is rescored with `_dot` and taken when it is strictly larger (the
    first index wins ties, as in `_top1_njit`). `margin` bounds |BLAS score - exact score|, so no action that
    `_top1_njit` would take is filtered out: the result is `_top1_njit`'s, whatever order BLAS sums in. The first
    block (j0 = 0) starts `best` at action 0's score, as `_top1_njit` does, so that no infinity meets fastmath."""
    m, w = S.shape
    t = np.empty(1, dtype=S.dtype)
    for r in range(m):
        row = S[r]
        q = Q[r]
        if j0 == 0:
            best[r] = _dot(q, A[0])
            arg[r] = 0
        thr = best[r] - margin[r]
        t[0] = thr  # the threshold in S's precision, rounded down: row[j] >= thr implies row[j] >= t[0]
        if t[0] > thr:
            t[0] = np.nextafter(t[0], t[0] - abs(t[0]) - 1.0)
        tr = t[0]
        hit = False
        for j in range(w):  # a vectorised test (a max reduction is 9x slower); the scan below is rarely needed
            hit |= row[j] >= tr
        if not hit:
            continue
        for j in range(w):
            if row[j] >= thr:
                e = _dot(q, A[j0 + j])
                if e > best[r]:
                    best[r] = e
                    arg[r] = j0 + j
                    thr = e - margin[r]


_QB, _AB = 256, 1024  # BLAS block: 256 queries x 1024 actions (1 MiB of float32 scores, in L2)
_MIN_ROWS = 64  # queries per thread at least
_BLOCKED_FROM = 32  # fewer queries than this go to the tiled kernel: BLAS calls on thin blocks cost more than they save


def _top1_blocked(Q, A, q0, q1, margin, out):
    "Queries q0:q1: BLAS products block by block (actions in increasing order), each followed by `_rescore`."
    n = A.shape[0]
    ab = min(n, _AB * max(1, _QB // (q1 - q0)))  # fewer queries, wider blocks: the same block area
    buf = np.empty(min(_QB, q1 - q0) * ab, dtype=Q.dtype)
    for s in range(q0, q1, _QB):
        e = min(s + _QB, q1)
        Qb = Q[s:e]
        best = np.empty(e - s)  # set from action 0 by the first `_rescore`
        arg = np.zeros(e - s, dtype=np.int64)
        for j0 in range(0, n, ab):
            Ab = A[j0:j0 + ab]
            S = buf[:(e - s) * len(Ab)].reshape(e - s, len(Ab))
            np.matmul(Qb, Ab.T, out=S)
            _rescore(S, Qb, A, j0, margin[s:e], best, arg)
        out[s:e] = arg


def _top1_tiled(Q, A) -> np.ndarray:
    "The tiled kernel alone (the previous `top1`): the answer `top1` reproduces, kept for tests and the benchmark."
    Q, A = _check_search(Q, A)
    out = np.empty(len(Q), dtype=np.int64)
    if len(Q):
        _top1_njit(Q, A, out)
    return out


def _margin(Q, A):
    """Per query, a bound on |BLAS score - `_dot` score| for every action, or None for NaN, inf or near-overflow
    inputs. Each is within gamma_{d+2} sum_k |q_k a_k| <= gamma_{d+2} |q| |a| of the exact inner product whatever
    the summation order, FMA or not (float32 products are rounded once more in `_dot`), plus underflow; the sum of
    the two, doubled."""
    qn = np.sqrt(np.einsum("ij,ij->i", Q, Q, dtype=np.float64))
    an = float(np.sqrt(np.einsum("ij,ij->i", A, A, dtype=np.float64)).max())
    big = 1e30 if Q.dtype == np.float32 else 1e300
    if not (np.isfinite(qn).all() and math.isfinite(an) and qn.max() * an < big):
        return None
    u = float(np.finfo(Q.dtype).eps) / 2
    d = Q.shape[1]
    tiny = float(np.finfo(Q.dtype).smallest_subnormal)
    return 4.0 * (d + 2) * (u / (1.0 - (d + 2) * u) * qn * an + tiny)


def top1(Q, A) -> np.ndarray:
    """CPU kernel for `top1_ref`: BLAS products in blocks with a fused `@njit` argmax pass that rescores near-best
    actions exactly (`_rescore`), queries split over numba's thread count (single-threaded BLAS in each); the
    answer is bit for bit that of the tiled kernel `_top1_njit`, which still serves fewer than 32 queries (a single
    query: vMF-exp's draws) and non-finite or huge inputs."""
    Q, A = _check_search(Q, A)
    out = np.empty(len(Q), dtype=np.int64)
    if not len(Q):
        return out
    margin = None if len(Q) < _BLOCKED_FROM else _margin(Q, A)
    if margin is None:
        _top1_njit(Q, A, out)  # few queries; or NaN, inf or near overflow, where the error bound does not hold
        return out
    bounds = row_blocks(len(Q), min_rows=_MIN_ROWS)
    map_row_blocks(lambda a, b: _top1_blocked(Q, A, a, b, margin, out), bounds)
    return out


_CUDA_THREADS = 128


@cuda.jit
def _top1_cuda_kernel(Q, A, out):
    q = cuda.blockIdx.x
    t = cuda.threadIdx.x
    best = cuda.shared.array(_CUDA_THREADS, dtype=np.float64)
    arg = cuda.shared.array(_CUDA_THREADS, dtype=np.int64)
    b, ib = -math.inf, -1
    for j in range(t, A.shape[0], _CUDA_THREADS):
        s = 0.0
        for k in range(A.shape[1]):
            s += Q[q, k] * A[j, k]
        if s > b:  # j increases within a thread: the first maximiser is kept
            b, ib = s, j
    best[t], arg[t] = b, ib
    cuda.syncthreads()
    step = _CUDA_THREADS // 2
    while step > 0:
        if t < step:
            o = t + step
            if best[o] > best[t] or (best[o] == best[t] and arg[o] != -1 and (arg[t] == -1 or arg[o] < arg[t])):
                best[t], arg[t] = best[o], arg[o]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[q] = arg[0]


def top1_cuda(Q, A) -> np.ndarray:
    "CUDA kernel (one block per query, shared-memory argmax) for `top1_ref`; runs under the simulator too."
    Q, A = _check_search(Q, A)
    out = cuda.device_array(len(Q), dtype=np.int64)
    if len(Q):
        _top1_cuda_kernel[len(Q), _CUDA_THREADS](cuda.to_device(Q), cuda.to_device(A), out)
    return out.copy_to_host()


# --- Benchmark -------------------------------------------------------------------------------------------------------

_BENCH_DS = (3, 16, 128, 1024)
_BENCH_KAPPAS = (0.1, 10.0, 1e3, 1e5)


def _bench_sampler(n_samp: int, repeat: int, secs: dict, ratios: dict) -> None:
    """The sampler against scipy.stats.vonmises_fisher(mu, kappa).rvs at every d in _BENCH_DS and kappa in
    _BENCH_KAPPAS, alternating the two (best of `repeat`; scipy once at d = 1024 and 10^5 draws, 50 s a call);
    the previous kernel (libm functions) once per case."""
    from scipy.stats import vonmises_fisher
    worst = math.inf
    for d in _BENCH_DS:
        mu = np.random.default_rng(d).standard_normal(d)
        mu /= np.linalg.norm(mu)
        for kappa in _BENCH_KAPPAS:
            wood_sample(mu, kappa, 300, 0)  # compile (or load from the cache)
            _wood_libm(mu, kappa, 300, 0)
            slow = d >= 1024 and n_samp > 20_000
            t_sp, t_nj = math.inf, math.inf
            for r in range(repeat):
                if r == 0 or not slow:
                    t0 = time.perf_counter()
                    vonmises_fisher(mu, kappa).rvs(n_samp, random_state=r)
                    t_sp = min(t_sp, time.perf_counter() - t0)
                t0 = time.perf_counter()
                wood_sample(mu, kappa, n_samp, r)
                t_nj = min(t_nj, time.perf_counter() - t0)
            t0 = time.perf_counter()
            _wood_libm(mu, kappa, n_samp, 0)
            t_old = time.perf_counter() - t0
            case = f"d={d} kappa={kappa:g}"
            secs[f"sampler {case}: scipy vonmises_fisher.rvs"] = t_sp
            secs[f"sampler {case}: njit"] = t_nj
            secs[f"sampler {case}: previous njit (libm)"] = t_old
            ratios[f"sampler {case}: scipy / njit"] = t_sp / t_nj
            ratios[f"sampler {case}: previous njit / njit"] = t_old / t_nj
            worst = min(worst, t_sp / t_nj)
    ratios["sampler: smallest scipy / njit over the grid"] = worst


def benchmark(size: str = "default", repeat: int = 3) -> dict:
    """Sampler vs scipy.stats.vonmises_fisher (10^5 draws at d in {3, 16, 128, 1024} x kappa in {0.1, 10, 1e3,
    1e5}); top-1 search vs NumPy matmul + argmax and scipy's cKDTree."""
    from scipy.spatial import cKDTree
    size = check_choice("size", size, ("small", "default", "full"))
    n, d, nq, n_samp = {"small": (20_000, 32, 256, 500), "default": (200_000, 32, 4096, 100_000),
                        "full": (1_000_000, 32, 4096, 100_000)}[size]
    rng = np.random.default_rng(0)
    mu = rng.standard_normal(d)
    mu /= np.linalg.norm(mu)
    kappa = 50.0
    secs, ratios = {}, {}
    mu16 = np.random.default_rng(16).standard_normal(16)
    mu16 /= np.linalg.norm(mu16)
    secs["numpy reference, vMF sampler d=16 kappa=10"] = _best_time(lambda: wood_sample_ref(mu16, 10.0, n_samp, 1),
                                                                    min(repeat, 2))
    _bench_sampler(n_samp, repeat, secs, ratios)
    ratios["sampler d=16 kappa=10: reference / njit"] = (secs["numpy reference, vMF sampler d=16 kappa=10"]
                                                         / secs["sampler d=16 kappa=10: njit"])
    from icml25nb.bandits.vmf import ActionIndex, sample_vmf  # the public functions a user calls
    pub = _race({"njit": lambda: wood_sample(mu16, 10.0, n_samp, 1),
                 "public": lambda: sample_vmf(mu16, 10.0, n_samp, seed=1)}, max(1, repeat))
    secs["njit wood_sample d=16 kappa=10 (beside sample_vmf)"] = pub["njit"]
    secs["vmf.sample_vmf d=16 kappa=10 (checks + njit)"] = pub["public"]
    ratios["sampler d=16 kappa=10: vmf.sample_vmf / njit"] = pub["public"] / pub["njit"]
    A = rng.standard_normal((n, d)).astype(np.float32)
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    Q = wood_sample(mu, kappa, nq, 2).astype(np.float32)
    top1(Q[:2], A[:100])  # compile both paths (or load them from the cache): the tiled kernel and the blocked one
    top1(Q[:64], A[:100])
    secs["numpy matmul + argmax (chunks of 256 queries)"] = _best_time(lambda: top1_ref(Q, A), repeat)
    secs["njit top-1 search"] = _best_time(lambda: top1(Q, A), repeat)
    secs["njit tiled top-1 (previous kernel, same answer)"] = _best_time(lambda: _top1_tiled(Q, A), min(repeat, 2))
    index = ActionIndex(A, "brute")  # float64 unit rows: what the chapter's brute-force index searches
    A64, Q64 = index.A, Q.astype(np.float64)
    pub = _race({"njit": lambda: top1(Q64, A64), "public": lambda: index.query(Q64)}, max(1, min(repeat, 2)))
    secs["njit top-1 search, float64 (beside ActionIndex)"] = pub["njit"]
    secs["vmf.ActionIndex('brute').query, float64"] = pub["public"]
    ratios["search: ActionIndex.query / njit (float64)"] = pub["public"] / pub["njit"]
    tree = cKDTree(A)
    secs["cKDTree query (exact, all cores)"] = _best_time(lambda: tree.query(Q, k=1, workers=-1), min(repeat, 2))
    got = top1(Q, A)
    same = bool(np.array_equal(got, top1_ref(Q, A)))
    same_tiled = bool(np.array_equal(got, _top1_tiled(Q, A)))
    ratios["search: numpy matmul / njit"] = secs["numpy matmul + argmax (chunks of 256 queries)"] / secs["njit top-1 search"]
    ratios["search: cKDTree / njit"] = secs["cKDTree query (exact, all cores)"] / secs["njit top-1 search"]
    ratios["search: previous tiled njit / njit"] = (secs["njit tiled top-1 (previous kernel, same answer)"]
                                                  / secs["njit top-1 search"])
    import numba
    from threadpoolctl import threadpool_info
    blas = max([i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"], default=1)
    return {"kernel": "vmf", "task": f"vMF sampler: {n_samp} draws at d in {_BENCH_DS} x kappa in "
            f"{_BENCH_KAPPAS} vs scipy (single-threaded NumPy); top-1 search: {nq} "
            f"queries over n={n} actions, d={d} (float32); {numba.get_num_threads()} numba thread(s), {blas} BLAS "
            "thread(s) (the njit search runs numba's count of threads, single-threaded BLAS in each)",
            "seconds": secs, "reference": "numpy reference, vMF sampler d=16 kappa=10", "ratios": ratios,
            "njit top-1 equals numpy argmax": same, "njit top-1 equals the tiled kernel": same_tiled}
