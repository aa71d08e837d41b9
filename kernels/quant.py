"""Blockwise NF4 quantisation (QLoRA's 4-bit NormalFloat), byte for byte the same as bitsandbytes on the CPU.

A weight tensor is flattened (row-major) and cut into blocks of ``blocksize`` values (the last block may be
shorter). Each block keeps its absolute maximum ``absmax`` (float32); its values are scaled into [-1, 1] and each
gets the index of the nearest of the 16 NF4 levels, written as the number of level midpoints strictly below the
scaled value. Two 4-bit codes share a byte, the first in the high nibble. The arithmetic follows bitsandbytes'
CPU path exactly (float32 throughout): full blocks multiply by the float32 reciprocal ``1 / max(absmax, 1e-38)``,
the short last block divides by ``max(absmax, 1e-38)``, scaled values are clamped to [-1, 1], an odd count is
padded with a zero. Dequantisation is ``level[code] * absmax[block]``.

Three implementations with one meaning, as in the other kernel modules:

* NumPy reference: ``quantize_nf4_ref``, ``dequantize_nf4_ref``;
* Numba CPU: ``quantize_nf4``, ``dequantize_nf4`` (``@njit(parallel=True)`` over blocks);
* Numba CUDA: ``quantize_nf4_cuda`` (one thread per block for the absmax, then one thread per packed byte) and
  ``dequantize_nf4_cuda`` (one thread per packed byte); host arrays in and out.

``benchmark`` times them against bitsandbytes' own ``quantize_4bit`` / ``dequantize_4bit`` (CPU) and a same-run
memory copy of the weights (the bandwidth a dequantisation that reads codes and writes floats can approach).
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, njit, prange

from icml25nb.kernels._bench import best_time as _best_time

__all__ = ["NF4_LEVELS", "NF4_MIDPOINTS", "quantize_nf4_ref", "dequantize_nf4_ref", "quantize_nf4",
           "dequantize_nf4", "quantize_nf4_cuda", "dequantize_nf4_cuda", "benchmark"]

# QLoRA's NF4 levels as bitsandbytes stores them (float32), sorted; the midpoints are computed in float32 too.
NF4_LEVELS = np.array([
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
    -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
    0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
], dtype=np.float32)
NF4_MIDPOINTS = ((NF4_LEVELS[:-1] + NF4_LEVELS[1:]) / np.float32(2)).astype(np.float32)
_TINY = np.float32(1e-38)  # bitsandbytes' guard for an all-zero block


def _check(W, blocksize: int) -> np.ndarray:
    "W as a flat float32 array; ValueError naming the argument for non-finite values or a bad blocksize."
    if isinstance(blocksize, bool) or not isinstance(blocksize, (int, np.integer)) or blocksize < 2 or blocksize % 2:
        raise ValueError(f"blocksize must be an even integer >= 2, got {blocksize!r}")
    x = np.ascontiguousarray(np.asarray(W, dtype=np.float32)).ravel()
    if x.size == 0:
        raise ValueError("W must not be empty")
    if not np.isfinite(x).all():
        raise ValueError("W must be finite")
    return x


def _check_packed(packed, absmax, n: int, blocksize: int) -> tuple[np.ndarray, np.ndarray]:
    packed = np.ascontiguousarray(np.asarray(packed)).ravel()
    absmax = np.ascontiguousarray(np.asarray(absmax, dtype=np.float32)).ravel()
    if packed.dtype != np.uint8 or packed.size != (n + 1) // 2:
        raise ValueError(f"packed must hold {(n + 1) // 2} uint8 codes for n={n}, got {packed.size} {packed.dtype}")
    if absmax.size != -(-n // blocksize):
        raise ValueError(f"absmax must hold {-(-n // blocksize)} block scales, got {absmax.size}")
    return packed, absmax


# --- NumPy reference -------------------------------------------------------------------------------------------

def quantize_nf4_ref(W, blocksize: int = 64) -> tuple[np.ndarray, np.ndarray]:
    "Blockwise NF4: (packed uint8 codes, two per byte, high nibble first; absmax float32 per block)."
    x = _check(W, blocksize)
    n = x.size
    rem = n % blocksize
    full = n - rem
    A = x[:full].reshape(-1, blocksize)
    absmax = np.abs(A).max(axis=1) if full else np.zeros(0, np.float32)
    inv = np.float32(1.0) / np.maximum(absmax, _TINY)              # the float32 reciprocal, then a product
    scaled = np.clip(A * inv[:, None], -1, 1).ravel()
    if rem:
        am = np.maximum(np.abs(x[full:]).max(), _TINY)             # the short block divides
        absmax = np.concatenate([absmax, [am]]).astype(np.float32)
        scaled = np.concatenate([scaled, np.clip(x[full:] / am, -1, 1)])
    if scaled.size % 2:
        scaled = np.concatenate([scaled, np.zeros(1, np.float32)])
    q = np.searchsorted(NF4_MIDPOINTS, scaled, side="left").astype(np.uint8)   # midpoints strictly below
    return (q[0::2] << 4) | q[1::2], absmax.astype(np.float32)


def dequantize_nf4_ref(packed, absmax, shape, blocksize: int = 64) -> np.ndarray:
    "Float32 weights of `shape` from NF4 codes and block scales: level[code] * absmax[block]."
    n = int(np.prod(shape))
    packed, absmax = _check_packed(packed, absmax, n, blocksize)
    q = np.empty(2 * packed.size, np.uint8)
    q[0::2], q[1::2] = packed >> 4, packed & 15
    vals = NF4_LEVELS[q[:n]]
    return (vals * np.repeat(absmax, blocksize)[:n]).reshape(shape)


# --- Numba CPU ---------------------------------------------------------------------------------------------------

@njit(inline="always")
def _code(v, mid):
    # number of midpoints strictly below v (15 sorted midpoints): a branch-free count
    c = 0
    for j in range(15):
        c += mid[j] < v
    return c


@njit(parallel=True, cache=True)
def _quantize_core(x, blocksize, mid, packed, absmax):
    n = x.size
    nb = absmax.size
    full_blocks = n // blocksize
    one, lo, hi, tiny = np.float32(1.0), np.float32(-1.0), np.float32(1.0), np.float32(1e-38)
    chunk = 256  # blocks per task: the scratch below is allocated once per chunk, not once per block
    for ch in prange((full_blocks + chunk - 1) // chunk):
        c = np.empty(blocksize, np.uint8)
        v = np.empty(blocksize, np.float32)
        for b in range(ch * chunk, min((ch + 1) * chunk, full_blocks)):
            start = b * blocksize
            m = np.float32(0.0)
            for i in range(start, start + blocksize):
                m = max(m, abs(x[i]))
            absmax[b] = m
            inv = one / max(m, tiny)
            # codes of the block, midpoint by midpoint: the inner loop over values vectorises
            for i in range(blocksize):
                v[i] = min(max(x[start + i] * inv, lo), hi)
                c[i] = 0
            for j in range(15):
                mj = mid[j]
                for i in range(blocksize):
                    c[i] += mj < v[i]
            for i in range(0, blocksize, 2):
                packed[(start + i) // 2] = (c[i] << 4) | c[i + 1]
    if nb > full_blocks:  # the short last block divides, as bitsandbytes' does
        start = full_blocks * blocksize
        m = np.float32(0.0)
        for i in range(start, n):
            m = max(m, abs(x[i]))
        g = max(m, tiny)
        absmax[nb - 1] = g
        for i in range(start, n, 2):
            c0 = _code(min(max(x[i] / g, lo), hi), mid)
            c1 = _code(min(max(x[i + 1] / g, lo), hi), mid) if i + 1 < n else 7  # odd count: a padded 0.0
            packed[i // 2] = np.uint8((c0 << 4) | c1)


def quantize_nf4(W, blocksize: int = 64) -> tuple[np.ndarray, np.ndarray]:
    "CPU kernel (parallel over blocks) for `quantize_nf4_ref`: the same bytes."
    x = _check(W, blocksize)
    packed = np.empty((x.size + 1) // 2, np.uint8)
    absmax = np.empty(-(-x.size // blocksize), np.float32)
    _quantize_core(x, blocksize, NF4_MIDPOINTS, packed, absmax)
    return packed, absmax


@njit(parallel=True, cache=True)
def _dequantize_core(packed, absmax, blocksize, levels, out):
    n = out.size
    half = blocksize // 2
    for b in prange(absmax.size):
        s = absmax[b]
        stop = min((b + 1) * half, packed.size)
        if 2 * stop <= n:          # whole bytes (every block but possibly the last)
            tab = levels * s       # the block's 16 scaled levels: one product per level, not per value
            for k in range(b * half, stop):
                byte = packed[k]
                out[2 * k] = tab[byte >> 4]
                out[2 * k + 1] = tab[byte & 15]
        else:
            for k in range(b * half, stop):
                byte = packed[k]
                out[2 * k] = levels[byte >> 4] * s
                if 2 * k + 1 < n:
                    out[2 * k + 1] = levels[byte & 15] * s


def dequantize_nf4(packed, absmax, shape, blocksize: int = 64) -> np.ndarray:
    "CPU kernel (parallel over blocks) for `dequantize_nf4_ref`."
    n = int(np.prod(shape))
    packed, absmax = _check_packed(packed, absmax, n, blocksize)
    out = np.empty(n, np.float32)
    _dequantize_core(packed, absmax, blocksize, NF4_LEVELS, out)
    return out.reshape(shape)


# --- Numba CUDA --------------------------------------------------------------------------------------------------

@cuda.jit
def _absmax_kernel(x, blocksize, absmax):
    b = cuda.grid(1)
    if b < absmax.size:
        start = b * blocksize
        stop = min(start + blocksize, x.size)
        m = np.float32(0.0)
        for i in range(start, stop):
            a = abs(x[i])
            if a > m:
                m = a
        absmax[b] = m


@cuda.jit
def _quantize_kernel(x, blocksize, mid, absmax, packed):
    k = cuda.grid(1)  # one thread per packed byte
    if k < packed.size:
        n = x.size
        b = (2 * k) // blocksize
        full = b < n // blocksize
        g = max(absmax[b], np.float32(1e-38))
        inv = np.float32(1.0) / g
        c = cuda.local.array(2, np.int32)
        for h in range(2):
            c[h] = 7
            i = 2 * k + h
            if i < n:
                v = x[i] * inv if full else x[i] / g
                v = min(max(v, np.float32(-1.0)), np.float32(1.0))
                cnt = 0
                for j in range(15):
                    if mid[j] < v:
                        cnt += 1
                c[h] = cnt
        packed[k] = np.uint8((c[0] << 4) | c[1])


@cuda.jit
def _dequantize_kernel(packed, absmax, blocksize, levels, out):
    k = cuda.grid(1)
    if k < packed.size:
        s = absmax[(2 * k) // blocksize]
        byte = packed[k]
        out[2 * k] = levels[byte >> 4] * s
        if 2 * k + 1 < out.size:
            out[2 * k + 1] = levels[byte & 15] * s


def quantize_nf4_cuda(W, blocksize: int = 64, threads_per_block: int = 128) -> tuple[np.ndarray, np.ndarray]:
    "CUDA kernels for `quantize_nf4_ref` (absmax per block, then one thread per packed byte); host arrays."
    x = _check(W, blocksize)
    nb = -(-x.size // blocksize)
    d_x = cuda.to_device(x)
    d_abs = cuda.device_array(nb, np.float32)
    d_packed = cuda.device_array((x.size + 1) // 2, np.uint8)
    _absmax_kernel[max(1, math.ceil(nb / threads_per_block)), threads_per_block](d_x, blocksize, d_abs)
    _quantize_kernel[max(1, math.ceil(d_packed.size / threads_per_block)), threads_per_block](
        d_x, blocksize, cuda.to_device(NF4_MIDPOINTS), d_abs, d_packed)
    absmax = d_abs.copy_to_host()
    if x.size % blocksize:  # the short last block stores its guarded scale, as bitsandbytes does
        absmax[-1] = max(absmax[-1], _TINY)
    return d_packed.copy_to_host(), absmax


def dequantize_nf4_cuda(packed, absmax, shape, blocksize: int = 64, threads_per_block: int = 128) -> np.ndarray:
    "CUDA kernel (one thread per packed byte) for `dequantize_nf4_ref`; host arrays."
    n = int(np.prod(shape))
    packed, absmax = _check_packed(packed, absmax, n, blocksize)
    d_out = cuda.device_array(n, np.float32)
    _dequantize_kernel[max(1, math.ceil(packed.size / threads_per_block)), threads_per_block](
        cuda.to_device(packed), cuda.to_device(absmax), blocksize, cuda.to_device(NF4_LEVELS), d_out)
    return d_out.copy_to_host().reshape(shape)


# --- Benchmark -----------------------------------------------------------------------------------------------------

def benchmark(size: str = "default", repeat: int = 3) -> dict:
    "NF4 quantize/dequantize: NumPy reference, @njit, bitsandbytes (CPU) and a same-run copy of the weights."
    rows, cols = {"small": (512, 512), "default": (4096, 4096), "full": (8192, 8192)}[size]
    W = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
    n, bs = W.size, 64
    secs, values, ratios = {}, {}, {}
    packed, absmax = quantize_nf4(W, bs)              # compiles (or loads) the kernels
    dequantize_nf4(packed, absmax, W.shape, bs)
    secs["numpy reference, quantize"] = _best_time(lambda: quantize_nf4_ref(W, bs), min(repeat, 1))
    secs["njit, quantize"] = _best_time(lambda: quantize_nf4(W, bs), repeat)
    secs["numpy reference, dequantize"] = _best_time(lambda: dequantize_nf4_ref(packed, absmax, W.shape, bs),
                                                     min(repeat, 1))
    secs["njit, dequantize"] = _best_time(lambda: dequantize_nf4(packed, absmax, W.shape, bs), repeat)
    out = np.empty_like(W)
    secs["memory copy of W (np.copyto)"] = _best_time(lambda: np.copyto(out, W), repeat)
    identical = None
    try:
        import logging

        import torch
        logging.getLogger("bitsandbytes").setLevel(logging.ERROR)
        import bitsandbytes.functional as F
        T = torch.from_numpy(W)
        secs["bitsandbytes quantize_4bit (CPU)"] = _best_time(
            lambda: F.quantize_4bit(T, blocksize=bs, quant_type="nf4"), repeat)
        qb, st = F.quantize_4bit(T, blocksize=bs, quant_type="nf4")
        secs["bitsandbytes dequantize_4bit (CPU)"] = _best_time(lambda: F.dequantize_4bit(qb, st), repeat)
        identical = bool(np.array_equal(qb.numpy().ravel(), packed)
                         and np.array_equal(st.absmax.numpy().view(np.uint32), absmax.view(np.uint32)))
        ratios["quantize: bitsandbytes / njit"] = secs["bitsandbytes quantize_4bit (CPU)"] / secs["njit, quantize"]
        ratios["dequantize: bitsandbytes / njit"] = (secs["bitsandbytes dequantize_4bit (CPU)"]
                                                     / secs["njit, dequantize"])
    except ImportError:  # bitsandbytes is in the dev and bench extras
        pass
    ratios["quantize: reference / njit"] = secs["numpy reference, quantize"] / secs["njit, quantize"]
    ratios["dequantize: reference / njit"] = secs["numpy reference, dequantize"] / secs["njit, dequantize"]
    # bandwidth: dequantize reads n/2 code bytes (+ scales) and writes 4n bytes; the copy reads and writes 4n
    deq_bw = (n / 2 + 4 * absmax.size + 4 * n) / secs["njit, dequantize"]
    copy_bw = 8 * n / secs["memory copy of W (np.copyto)"]
    values["njit dequantize GB/s"] = deq_bw / 1e9
    values["copy GB/s"] = copy_bw / 1e9
    import numba
    return {"kernel": "quant", "task": f"NF4, {rows}x{cols} float32, blocksize {bs}, {numba.get_num_threads()} "
            "numba thread(s)", "seconds": secs, "reference": "numpy reference, quantize", "values": values,
            "ratios": ratios, "identical_to_bitsandbytes": identical,
            "dequantize bandwidth / copy bandwidth": round(deq_bw / copy_bw, 3)}
