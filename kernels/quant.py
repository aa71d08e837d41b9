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
* Numba CPU: ``quantize_nf4``, ``dequantize_nf4`` (``@njit(parallel=True)`` over chunks of blocks, loops built per
  block length; their outputs of 1 MiB or more come from recycled buffers, see ``release_buffers``);
* Numba CUDA: ``quantize_nf4_cuda`` (one thread per block for the absmax, then one thread per packed byte) and
  ``dequantize_nf4_cuda`` (one thread per packed byte); host arrays in and out.

Per-channel codebooks at 1, 2 or 4 bits per row (LowRA's mixed precision): ``encode_rows_ref`` / ``encode_rows``
and ``decode_rows_ref`` / ``decode_rows``, and ``encode_rows_cuda`` / ``decode_rows_cuda`` (a block per row, a thread
per packed byte, the row's thresholds or levels in shared memory). The @njit loops are specialised per bit width
(level count and codes per byte are compile-time constants); the per-row thresholds and levels are data.

``benchmark`` times them against bitsandbytes' own ``quantize_4bit`` / ``dequantize_4bit`` (CPU, at the same thread
count) and a same-run memory copy of the weights (the bandwidth a kernel that reads floats or writes them can
approach), alternating the contenders, and reports each one's bandwidth as a fraction of the copy's.
"""
from __future__ import annotations

import math
import sys
import threading

import numpy as np
from numba import cuda, njit, prange

from icml25nb.core import check_array, check_int
from icml25nb.kernels._bench import best_time as _best_time, race as _bench_race

__all__ = ["NF4_LEVELS", "NF4_MIDPOINTS", "quantize_nf4_ref", "dequantize_nf4_ref", "quantize_nf4",
           "dequantize_nf4", "quantize_nf4_cuda", "dequantize_nf4_cuda", "row_offsets", "encode_rows_ref",
           "decode_rows_ref", "encode_rows", "decode_rows", "encode_rows_cuda", "decode_rows_cuda",
           "release_buffers", "benchmark"]

# QLoRA's NF4 levels as bitsandbytes stores them (float32), sorted; the midpoints are computed in float32 too.
NF4_LEVELS = np.array([
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
    -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
    0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
], dtype=np.float32)
NF4_MIDPOINTS = ((NF4_LEVELS[:-1] + NF4_LEVELS[1:]) / np.float32(2)).astype(np.float32)
_TINY = np.float32(1e-38)  # bitsandbytes' guard for an all-zero block


def _flat(W, blocksize: int) -> np.ndarray:
    "W as a flat float32 array; ValueError for an empty W or a bad blocksize (finiteness is not checked here)."
    _check_blocksize(blocksize)
    x = check_array("W", W, dtype=np.float32, finite=False).ravel()
    if x.size == 0:
        raise ValueError("W must not be empty")
    return x


def _check_blocksize(blocksize) -> int:
    blocksize = check_int("blocksize", blocksize, 2)
    if blocksize % 2:
        raise ValueError(f"blocksize must be an even integer >= 2, got {blocksize!r}")
    return blocksize


def _check_shape(shape) -> tuple:
    "`shape` (an int or a tuple of ints >= 0) as a tuple and its number of values."
    dims = (shape,) if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool) else shape
    if not isinstance(dims, (tuple, list)):
        raise TypeError(f"shape must be an int or a tuple of ints, got {type(shape).__name__}")
    dims = tuple(check_int("shape", d, 0) for d in dims)
    return dims, math.prod(dims)


def _check(W, blocksize: int) -> np.ndarray:
    "W as a flat float32 array; ValueError naming the argument for non-finite values or a bad blocksize."
    x = _flat(W, blocksize)
    if not np.isfinite(x).all():
        raise ValueError("W must be finite")
    return x


def _check_packed(packed, absmax, n: int, blocksize: int) -> tuple[np.ndarray, np.ndarray]:
    _check_blocksize(blocksize)
    if n == 0:
        raise ValueError("shape must hold at least one value")
    packed = np.ascontiguousarray(np.asarray(packed)).ravel()
    absmax = check_array("absmax", absmax, dtype=np.float32).ravel()
    if packed.dtype != np.uint8 or packed.size != (n + 1) // 2:
        raise ValueError(f"packed must hold {(n + 1) // 2} uint8 codes for shape's n={n} values, got {packed.size} "
                         f"{packed.dtype}")
    if absmax.size != -(-n // blocksize):
        raise ValueError(f"absmax must hold {-(-n // blocksize)} block scales for shape's n={n} values and blocksize "
                         f"{blocksize}, got {absmax.size}")
    return packed, absmax


# --- Recycled output buffers -----------------------------------------------------------------------------------------
#
# A fresh multi-megabyte array costs the kernel a page fault per page (per 2 MiB huge page where NumPy's madvise
# gets them) and the zeroing of every page the first time it is written; on the 2-core VM of the benchmarks that
# is 10 ms for 64 MiB, twice the whole dequantisation into an existing buffer, even with the first touch spread over
# the kernel's threads. quantize_nf4 and dequantize_nf4 therefore take their outputs (of 1 MiB or more) from a small
# pool: a buffer is handed out again only once nothing refers to it any more (every NumPy view, and everything built
# on one, torch.from_numpy included, holds a reference to the buffer that owns the memory), and the pool keeps at
# most `_POOL_BYTES` in all, dropping the least recently used idle buffers first. `release_buffers()` frees the
# idle ones. A caller who holds a result keeps it: the pool never hands out a buffer that is still referenced.

_POOL_BYTES = 512 << 20      # the most the pool holds, idle and handed out together
_POOL_MIN_BYTES = 1 << 20    # smaller arrays come from np.empty (NumPy's allocator is cheap there)


class _BufferPool:
    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._bufs: list[np.ndarray] = []  # raw uint8 owners, least recently used first
        self._lock = threading.Lock()

    def _idle(self, i: int) -> bool:
        # references: the list's and getrefcount's argument; any view handed out adds one
        return sys.getrefcount(self._bufs[i]) == 2

    def empty(self, shape, dtype) -> np.ndarray:
        "An uninitialised array, from an idle recycled buffer of the same size where there is one."
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape)) * dtype.itemsize
        if nbytes < _POOL_MIN_BYTES or nbytes > self.max_bytes:
            return np.empty(shape, dtype)
        with self._lock:
            raw = None
            for i in range(len(self._bufs)):
                if self._bufs[i].nbytes == nbytes and self._idle(i):
                    raw = self._bufs.pop(i)
                    break
            if raw is None:
                held = sum(b.nbytes for b in self._bufs)
                i = 0
                while held + nbytes > self.max_bytes and i < len(self._bufs):
                    if self._idle(i):
                        held -= self._bufs.pop(i).nbytes
                    else:
                        i += 1
                if held + nbytes > self.max_bytes:
                    return np.empty(shape, dtype)
                raw = np.empty(nbytes, np.uint8)
            self._bufs.append(raw)
        return raw.view(dtype).reshape(shape)

    def release(self) -> None:
        with self._lock:
            self._bufs = [self._bufs[i] for i in range(len(self._bufs)) if not self._idle(i)]


_POOL = _BufferPool(_POOL_BYTES)


def release_buffers() -> None:
    "Free the idle output buffers that quantize_nf4 / dequantize_nf4 keep for reuse (results still held stay valid)."
    _POOL.release()


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
    shape, n = _check_shape(shape)
    packed, absmax = _check_packed(packed, absmax, n, blocksize)
    q = np.empty(2 * packed.size, np.uint8)
    q[0::2], q[1::2] = packed >> 4, packed & 15
    vals = NF4_LEVELS[q[:n]]
    return (vals * np.repeat(absmax, blocksize)[:n]).reshape(shape)


# --- Numba CPU ---------------------------------------------------------------------------------------------------
#
# Whole blocks go through loops built once per block length (32, 64, 128 and 256 values: a compile-time trip count,
# which LLVM unrolls and vectorises; any other even length takes the same loops with a run-time length), called once
# per chunk of blocks from the prange, so a task covers many blocks and the call costs nothing per block. Three
# details keep the loops vectorised without fastmath (not one result bit may change):
# * a block is indexed through slices (x[s:s + bs][i], i in range(bs)): an index that LLVM cannot prove
#   non-negative keeps Numba's negative-index wraparound, and the loads become gathers (several times slower);
# * the absmax is an integer max of the float32 bit patterns with the sign bit cleared (non-negative floats order
#   as their bits do), which vectorises where a float max reduction would need fastmath;
# * the code is a branch-free binary search over the 15 midpoints (NF4_MIDPOINTS, compile-time constants): four
#   comparisons, each level's threshold picked by selects (vector blends), 1.5x faster than the sum of 15
#   comparisons it replaced; two values (one output byte) per iteration, so the codes never go through memory; no
#   clamp to [-1, 1] (every midpoint lies inside, so the clamp changes no code).
# quantize_nf4 skips the separate finiteness pass over W: a whole block's absmax is inf or NaN exactly when the
# block holds one, so the ValueError comes from the absmax (and a direct check of the short last block).
# Dequantisation reads one byte and writes its two values from a 256-entry table of level pairs times the block's
# absmax (the same float32 product level * absmax as the reference).

_CHUNK_VALUES = 1 << 16  # values per prange task (256 KiB of float32)


def _build_nf4_blocks(bs: int):
    "@njit loops over whole blocks [b0, b1) of bs values (bs=0: the block length is the run-time `blocksize`)."
    m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14 = (np.float32(m) for m in NF4_MIDPOINTS)
    one, tiny, magnitude = np.float32(1.0), _TINY, np.uint32(0x7FFFFFFF)

    @njit(inline="always")
    def code(v):
        # number of midpoints strictly below v: a branch-free binary search (4 comparisons, the thresholds of the
        # next level picked by selects among compile-time constants), the bits of the code from the top down
        a = m7 < v
        t = m11 if a else m3
        b = t < v
        t1 = m13 if b else m9
        t0 = m5 if b else m1
        t = t1 if a else t0
        c = t < v
        u11 = m14 if c else m12
        u10 = m10 if c else m8
        u01 = m6 if c else m4
        u00 = m2 if c else m0
        u1 = u11 if b else u10
        u0 = u01 if b else u00
        t = u1 if a else u0
        d = t < v
        return (np.int32(a) << 3) | (np.int32(b) << 2) | (np.int32(c) << 1) | np.int32(d)

    @njit
    def quantize_blocks(x, xbits, blocksize, packed, absmax, absbits, b0, b1):
        B = bs if bs else blocksize
        H = B // 2
        for b in range(b0, b1):
            xs = x[b * B:(b + 1) * B]
            xbs = xbits[b * B:(b + 1) * B]
            ps = packed[b * H:(b + 1) * H]
            m = np.uint32(0)
            for i in range(B):
                m = max(m, xbs[i] & magnitude)
            absbits[b] = m
            inv = one / max(absmax[b], tiny)  # the float32 reciprocal; full blocks multiply by it
            for k in range(H):  # no clamp to [-1, 1]: every midpoint lies inside, so it changes no code
                ps[k] = (code(xs[2 * k] * inv) << 4) | code(xs[2 * k + 1] * inv)

    @njit
    def dequantize_blocks(packed, absmax, blocksize, pairs, out, b0, b1):
        B = bs if bs else blocksize
        H = B // 2
        for b in range(b0, b1):
            ps = packed[b * H:(b + 1) * H]
            os = out[b * B:(b + 1) * B]
            s = absmax[b]
            for k in range(H):
                j = 2 * ps[k]
                os[2 * k] = pairs[j] * s
                os[2 * k + 1] = pairs[j + 1] * s

    return quantize_blocks, dequantize_blocks


(_q32, _d32), (_q64, _d64), (_q128, _d128), (_q256, _d256), (_qany, _dany) = (
    _build_nf4_blocks(bs) for bs in (32, 64, 128, 256, 0))


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
    xbits, absbits = x.view(np.uint32), absmax.view(np.uint32)
    per = max(1, _CHUNK_VALUES // blocksize)  # blocks per task
    for ch in prange((full_blocks + per - 1) // per):
        b0 = ch * per
        b1 = min(b0 + per, full_blocks)
        if blocksize == 64:
            _q64(x, xbits, blocksize, packed, absmax, absbits, b0, b1)
        elif blocksize == 32:
            _q32(x, xbits, blocksize, packed, absmax, absbits, b0, b1)
        elif blocksize == 128:
            _q128(x, xbits, blocksize, packed, absmax, absbits, b0, b1)
        elif blocksize == 256:
            _q256(x, xbits, blocksize, packed, absmax, absbits, b0, b1)
        else:
            _qany(x, xbits, blocksize, packed, absmax, absbits, b0, b1)
    if nb > full_blocks:  # the short last block divides, as bitsandbytes' does
        lo, hi = np.float32(-1.0), np.float32(1.0)
        start = full_blocks * blocksize
        m = np.float32(0.0)
        for i in range(start, n):
            m = max(m, abs(x[i]))
        g = max(m, np.float32(1e-38))
        absmax[nb - 1] = g
        for i in range(start, n, 2):
            c0 = _code(min(max(x[i] / g, lo), hi), mid)
            c1 = _code(min(max(x[i + 1] / g, lo), hi), mid) if i + 1 < n else 7  # odd count: a padded 0.0
            packed[i // 2] = np.uint8((c0 << 4) | c1)


def quantize_nf4(W, blocksize: int = 64) -> tuple[np.ndarray, np.ndarray]:
    "CPU kernel (parallel over chunks of blocks) for `quantize_nf4_ref`: the same bytes."
    x = _flat(W, blocksize)
    packed = _POOL.empty((x.size + 1) // 2, np.uint8)
    absmax = _POOL.empty(-(-x.size // blocksize), np.float32)
    _quantize_core(x, blocksize, NF4_MIDPOINTS, packed, absmax)
    # finiteness without a pass of its own: a whole block's absmax (the max of its |x| bit patterns) is inf or NaN
    # exactly when the block holds an inf or a NaN; the short last block is checked directly
    full = x.size // blocksize
    if not (np.isfinite(absmax[:full]).all() and np.isfinite(x[full * blocksize:]).all()):
        raise ValueError("W must be finite")
    return packed, absmax


@njit(parallel=True, cache=True)
def _dequantize_core(packed, absmax, blocksize, levels, out):
    n = out.size
    pairs = np.empty(512, np.float32)  # byte value -> (level of the high nibble, level of the low nibble)
    for j in range(256):
        pairs[2 * j] = levels[j >> 4]
        pairs[2 * j + 1] = levels[j & 15]
    full_blocks = n // blocksize
    per = max(1, _CHUNK_VALUES // blocksize)
    for ch in prange((full_blocks + per - 1) // per):
        b0 = ch * per
        b1 = min(b0 + per, full_blocks)
        if blocksize == 64:
            _d64(packed, absmax, blocksize, pairs, out, b0, b1)
        elif blocksize == 32:
            _d32(packed, absmax, blocksize, pairs, out, b0, b1)
        elif blocksize == 128:
            _d128(packed, absmax, blocksize, pairs, out, b0, b1)
        elif blocksize == 256:
            _d256(packed, absmax, blocksize, pairs, out, b0, b1)
        else:
            _dany(packed, absmax, blocksize, pairs, out, b0, b1)
    if absmax.size > full_blocks:  # the short last block, value by value
        s = absmax[absmax.size - 1]
        for k in range(full_blocks * blocksize // 2, packed.size):
            byte = packed[k]
            out[2 * k] = levels[byte >> 4] * s
            if 2 * k + 1 < n:
                out[2 * k + 1] = levels[byte & 15] * s


def dequantize_nf4(packed, absmax, shape, blocksize: int = 64, out: np.ndarray | None = None) -> np.ndarray:
    """CPU kernel (parallel over chunks of blocks) for `dequantize_nf4_ref`.

    `out`, a C-contiguous float32 array of `shape`, receives the result if given; otherwise a new array, from the
    recycled buffers where one is idle (a fresh 4n-byte array costs about twice the decoding itself in page faults
    and page zeroing the first time it is written; see `release_buffers`)."""
    shape, n = _check_shape(shape)
    packed, absmax = _check_packed(packed, absmax, n, blocksize)
    if out is None:
        out = _POOL.empty(shape, np.float32)
    elif not (isinstance(out, np.ndarray) and out.dtype == np.float32 and out.flags.c_contiguous
              and out.size == n and out.flags.writeable):
        raise ValueError(f"out must be a writeable C-contiguous float32 array of {n} values")
    _dequantize_core(packed, absmax, blocksize, NF4_LEVELS, out.reshape(-1))
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
    shape, n = _check_shape(shape)
    packed, absmax = _check_packed(packed, absmax, n, blocksize)
    d_out = cuda.device_array(n, np.float32)
    _dequantize_kernel[max(1, math.ceil(packed.size / threads_per_block)), threads_per_block](
        cuda.to_device(packed), cuda.to_device(absmax), blocksize, cuda.to_device(NF4_LEVELS), d_out)
    return d_out.copy_to_host().reshape(shape)


# --- Per-channel codebooks at 1, 2 or 4 bits (LowRA's mixed precision) ----------------------------------------------
#
# W (R, C) with blocksize dividing C. Row r (an output channel) is normalised blockwise by its absmax like NF4, then
# coded with its own sorted thresholds (the encoder, 2^b - 1 of them) at b = bits[r] in {1, 2, 4}: the code is the
# number of thresholds strictly below the value. Row r's codes are packed at b bits, the first code in the most
# significant bits of a byte, from byte offsets[r] on (rows start on a byte). Decoding is levels[r, code] * absmax.

def _check_rows(W, blocksize: int, bits, finite: bool = True) -> tuple[np.ndarray, np.ndarray]:
    "W as a C-contiguous float32 2-d array and bits as int64; finite=False skips the finiteness pass (the caller checks)."
    W = check_array("W", W, dtype=np.float32, finite=finite)
    if W.ndim != 2 or W.size == 0:
        raise ValueError(f"W must be a non-empty 2-d array, got shape {W.shape}")
    blocksize = check_int("blocksize", blocksize, 1)
    if W.shape[1] % blocksize:
        raise ValueError(f"blocksize must divide the row length {W.shape[1]}, got {blocksize!r}")
    return W, _check_bits(bits, W.shape[0])


def _check_bits(bits, R: int) -> np.ndarray:
    bits = check_array("bits", bits, dtype=np.int64)
    if bits.shape != (R,) or not np.isin(bits, (1, 2, 4)).all():
        raise ValueError(f"bits must hold one of 1, 2, 4 per row ({R} rows), got shape {bits.shape}")
    return bits


def _check_table(name: str, a, R: int, need: int) -> np.ndarray:
    "A per-row table (thresholds or levels) as finite float32 (R, L) with need <= L <= 16."
    a = check_array(name, a, ndim=2, dtype=np.float32)
    if a.shape[0] != R or not need <= a.shape[1] <= 16:
        raise ValueError(f"{name} must have shape ({R}, L) with {need} <= L <= 16 for these bits, got {a.shape}")
    return a


def _check_decode_args(packed, offsets, absmax, bits, levels, blocksize):
    """The arguments of decode_rows validated: absmax finite (R, C / blocksize), bits (R,) in {1, 2, 4}, offsets
    exactly `row_offsets(bits, C)` (so that no row reads past `packed`), packed 1-D uint8 with offsets[-1] bytes at
    least, levels finite (R, L) with 2^max(bits) <= L <= 16."""
    absmax = check_array("absmax", absmax, ndim=2, dtype=np.float32)
    R, nb = absmax.shape
    if R == 0 or nb == 0:
        raise ValueError(f"absmax must be a non-empty 2-d array (rows, blocks), got shape {absmax.shape}")
    blocksize = check_int("blocksize", blocksize, 1)
    C = nb * blocksize
    bits = _check_bits(bits, R)
    offsets = check_array("offsets", offsets, shape=(R + 1,), dtype=np.int64)
    if not np.array_equal(offsets, row_offsets(bits, C)):
        raise ValueError(f"offsets must be row_offsets(bits, {C}) for rows of {C} codes")
    packed = np.asarray(packed)
    if packed.dtype != np.uint8 or packed.ndim != 1 or packed.size < offsets[-1]:
        raise ValueError(f"packed must be a 1-D uint8 array of at least {offsets[-1]} bytes, got shape "
                         f"{packed.shape} dtype {packed.dtype}")
    levels = _check_table("levels", levels, R, 1 << int(bits.max()))
    return np.ascontiguousarray(packed), offsets, absmax, bits, levels, blocksize


def row_offsets(bits, C: int) -> np.ndarray:
    "Byte offset of every row's packed codes (and the total at the end) for row length C."
    bits = check_array("bits", bits, ndim=1, dtype=np.int64, minimum=1, maximum=8)
    C = check_int("C", C, 0, 2**40)
    return np.concatenate([[0], np.cumsum((C * bits + 7) // 8)]).astype(np.int64)


def _row_absmax(W, blocksize):
    R, C = W.shape
    return np.abs(W.reshape(R, C // blocksize, blocksize)).max(axis=2).astype(np.float32)


def encode_rows_ref(W, blocksize: int, bits, thresholds) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    "Per-row codes at 1/2/4 bits with per-row thresholds: (packed uint8, byte offsets (R+1,), absmax (R, C/bs))."
    W, bits = _check_rows(W, blocksize, bits)
    R, C = W.shape
    thresholds = _check_table("thresholds", thresholds, R, (1 << int(bits.max())) - 1)
    absmax = _row_absmax(W, blocksize)
    inv = np.float32(1.0) / np.maximum(absmax, _TINY)
    X = np.clip(W * np.repeat(inv, blocksize, axis=1), -1, 1)
    offsets = row_offsets(bits, C)
    packed = np.zeros(offsets[-1], np.uint8)
    for r in range(R):
        b = int(bits[r])
        t = thresholds[r, : (1 << b) - 1]
        codes = (X[r][:, None] > t[None, :]).sum(axis=1).astype(np.uint8)
        per = 8 // b
        codes = np.concatenate([codes, np.zeros((-C) % per, np.uint8)]).reshape(-1, per)
        shifts = (8 - b * (np.arange(per) + 1)).astype(np.uint8)
        packed[offsets[r]:offsets[r + 1]] = np.bitwise_or.reduce(codes << shifts, axis=1)
    return packed, offsets, absmax


def decode_rows_ref(packed, offsets, absmax, bits, levels, blocksize: int) -> np.ndarray:
    "Float32 (R, C) from per-row codes: levels[r, code] * absmax[r, block]."
    packed, offsets, absmax, bits, levels, blocksize = _check_decode_args(packed, offsets, absmax, bits, levels,
                                                                          blocksize)
    R, nb = absmax.shape
    C = nb * blocksize
    out = np.empty((R, C), np.float32)
    for r in range(R):
        b = int(bits[r])
        per = 8 // b
        row = packed[offsets[r]:offsets[r + 1]]
        shifts = (8 - b * (np.arange(per) + 1)).astype(np.uint8)
        codes = ((row[:, None] >> shifts[None, :]) & ((1 << b) - 1)).ravel()[:C]
        out[r] = levels[r, codes] * np.repeat(absmax[r], blocksize)
    return out


# The @njit row codecs are built per (bit width b, block length bs): bs in 32, 64, 128, 256 is a compile-time
# constant, bs=0 takes the run-time `blocksize`. When a block fills whole bytes (blocksize * b a multiple of 8, so
# every block and row starts on a byte), a block is cut into units of `ub` bytes (ub = gcd(8, bytes per block)), and
# a unit's codes are held in one uint64, most significant bits first (the byte order of the packing):
# * encode: the block's absmax is the integer max of the float32 bit patterns with the sign bit cleared (as for NF4),
#   each value's code is a branch-free sum of its 2^b - 1 comparisons with the row's thresholds; at 1 bit the codes
#   are OR-ed into the unit's word at their shifts (a vectorised reduction) and the word is stored byte by byte, at
#   2 and 4 bits a byte's 4 or 2 codes are combined in registers, vectorised over the bytes (as NF4's quantize);
# * decode: the block's 2^b levels are scaled once (level * absmax, the reference's float32 product), then each
#   value is chosen from them by its code, taken from the word with a per-lane shift: selects at 1 and 2 bits (a
#   vectorised loop without loads); at 4 bits a scalar look-up of the scaled 16-entry table per nibble.
# Other block lengths (a block that ends inside a byte) take a value-by-value loop. Rows are processed in chunks of
# about _CHUNK_VALUES values per prange task.

def _build_row_codec(b: int, bs: int = 0):
    "@njit encode/decode of one row at b bits per code, block length bs (0: the run-time `blocksize`)."
    n_thr, per, mask, L = (1 << b) - 1, 8 // b, (1 << b) - 1, 1 << b
    lo, hi, one, tiny = np.float32(-1.0), np.float32(1.0), np.float32(1.0), _TINY
    magnitude = np.uint32(0x7FFFFFFF)
    UB = math.gcd(8, bs * b // 8) if bs and (bs * b) % 8 == 0 else 0   # unit bytes, compile-time when bs is
    BYTE_BLOCKS = bs == 0 or (bs * b) % 8 == 0
    mask64 = np.uint64(mask)

    @njit(inline="always")
    def count(v, t):
        c = 0
        for j in range(n_thr):
            c += t[j] < v
        return c

    @njit
    def encode(x, xbits, blocksize, thr, absmax, absbits, out):
        B = bs if bs else blocksize
        C = x.size
        nb = C // B
        t = thr[:n_thr].copy()          # a local copy: the loads do not alias the stores
        if BYTE_BLOCKS and (B * b) % 8 == 0:
            BB = B * b // 8
            ub = UB if bs else (8 if BB % 8 == 0 else (4 if BB % 4 == 0 else (2 if BB % 2 == 0 else 1)))
            uc = ub * per
            for q in range(nb):
                xs = x[q * B:(q + 1) * B]
                xbs = xbits[q * B:(q + 1) * B]
                m = np.uint32(0)
                for i in range(B):
                    m = max(m, xbs[i] & magnitude)
                absbits[q] = m
                inv = one / max(absmax[q], tiny)
                os = out[q * BB:(q + 1) * BB]
                if b == 1:   # a unit's codes OR-ed into a word (a vectorised reduction over the values)
                    for u in range(BB // ub):
                        us = xs[u * uc:(u + 1) * uc]
                        w = np.uint64(0)
                        for i in range(uc):
                            v = min(max(us[i] * inv, lo), hi)
                            w |= np.uint64(count(v, t)) << np.uint64(64 - b * (i + 1))
                        o = os[u * ub:(u + 1) * ub]
                        for j in range(ub):
                            o[j] = np.uint8((w >> np.uint64(56 - 8 * j)) & np.uint64(255))
                    continue
                for k in range(BB):   # 2 and 4 bits: a byte's codes at once, vectorised over the bytes
                    byte = 0
                    for h in range(per):
                        byte |= count(min(max(xs[per * k + h] * inv, lo), hi), t) << (8 - b * (h + 1))
                    os[k] = byte
            return
        inv = np.empty(nb, np.float32)
        for q in range(nb):
            m = np.uint32(0)
            for i in range(q * B, (q + 1) * B):
                m = max(m, xbits[i] & magnitude)
            absbits[q] = m
            inv[q] = one / max(absmax[q], tiny)
        for k in range(out.size):
            byte = 0
            for h in range(per):
                i = k * per + h
                c = 0
                if i < C:
                    c = count(min(max(x[i] * inv[i // B], lo), hi), t)
                byte |= c << (8 - b * (h + 1))
            out[k] = byte

    @njit
    def decode(row, scale, blocksize, lev, tab, out):
        B = bs if bs else blocksize
        C = out.size
        if BYTE_BLOCKS and (B * b) % 8 == 0:
            BB = B * b // 8
            ub = UB if bs else (8 if BB % 8 == 0 else (4 if BB % 4 == 0 else (2 if BB % 2 == 0 else 1)))
            uc = ub * per
            for q in range(scale.size):
                s = scale[q]
                rs = row[q * BB:(q + 1) * BB]
                os = out[q * B:(q + 1) * B]
                if b == 4:
                    for j in range(16):
                        tab[j] = lev[j] * s
                    for k in range(BB):
                        byte = rs[k]
                        os[2 * k] = tab[byte >> 4]
                        os[2 * k + 1] = tab[byte & 15]
                    continue
                a0 = lev[0] * s
                a1 = lev[1] * s
                a2 = lev[2 % L] * s
                a3 = lev[3 % L] * s
                for u in range(BB // ub):
                    us = rs[u * ub:(u + 1) * ub]
                    w = np.uint64(0)
                    for j in range(ub):
                        w |= np.uint64(us[j]) << np.uint64(56 - 8 * j)
                    o = os[u * uc:(u + 1) * uc]
                    for i in range(uc):
                        c = (w >> np.uint64(64 - b * (i + 1))) & mask64
                        if b == 1:
                            o[i] = a1 if c else a0
                        else:
                            o[i] = (a3 if c & 1 else a2) if c & 2 else (a1 if c & 1 else a0)
            return
        for i in range(C):   # a block that ends inside a byte: value by value
            c = (row[(i * b) >> 3] >> (8 - b - ((i * b) & 7))) & mask
            out[i] = lev[c] * scale[i // B]

    return encode, decode


def _build_row_dispatch(b: int):
    "encode/decode of one row at b bits, choosing the loops specialised for the block length."
    (e32, d32), (e64, d64), (e128, d128), (e256, d256), (eany, dany) = (
        _build_row_codec(b, bs) for bs in (32, 64, 128, 256, 0))

    @njit(inline="always")
    def encode(x, xbits, blocksize, thr, absmax, absbits, out):
        if blocksize == 64:
            e64(x, xbits, blocksize, thr, absmax, absbits, out)
        elif blocksize == 32:
            e32(x, xbits, blocksize, thr, absmax, absbits, out)
        elif blocksize == 128:
            e128(x, xbits, blocksize, thr, absmax, absbits, out)
        elif blocksize == 256:
            e256(x, xbits, blocksize, thr, absmax, absbits, out)
        else:
            eany(x, xbits, blocksize, thr, absmax, absbits, out)

    @njit(inline="always")
    def decode(row, scale, blocksize, lev, tab, out):
        if blocksize == 64:
            d64(row, scale, blocksize, lev, tab, out)
        elif blocksize == 32:
            d32(row, scale, blocksize, lev, tab, out)
        elif blocksize == 128:
            d128(row, scale, blocksize, lev, tab, out)
        elif blocksize == 256:
            d256(row, scale, blocksize, lev, tab, out)
        else:
            dany(row, scale, blocksize, lev, tab, out)

    return encode, decode


(_enc1, _dec1), (_enc2, _dec2), (_enc4, _dec4) = (_build_row_dispatch(b) for b in (1, 2, 4))


@njit(parallel=True, cache=True)
def _encode_rows_core(W, blocksize, bits, thr, offsets, packed, absmax):
    R, C = W.shape
    Wbits = W.view(np.uint32)
    absbits = absmax.view(np.uint32)
    per = max(1, _CHUNK_VALUES // C)   # rows per task
    for ch in prange((R + per - 1) // per):
        for r in range(ch * per, min(R, (ch + 1) * per)):
            out = packed[offsets[r]:offsets[r + 1]]
            if bits[r] == 1:
                _enc1(W[r], Wbits[r], blocksize, thr[r], absmax[r], absbits[r], out)
            elif bits[r] == 2:
                _enc2(W[r], Wbits[r], blocksize, thr[r], absmax[r], absbits[r], out)
            else:
                _enc4(W[r], Wbits[r], blocksize, thr[r], absmax[r], absbits[r], out)


@njit(parallel=True, cache=True)
def _decode_rows_core(packed, offsets, absmax, bits, levels, blocksize, out):
    R, C = out.shape
    per = max(1, _CHUNK_VALUES // C)   # rows per task
    for ch in prange((R + per - 1) // per):
        tab = np.empty(16, np.float32)
        for r in range(ch * per, min(R, (ch + 1) * per)):
            row = packed[offsets[r]:offsets[r + 1]]
            if bits[r] == 1:
                _dec1(row, absmax[r], blocksize, levels[r], tab, out[r])
            elif bits[r] == 2:
                _dec2(row, absmax[r], blocksize, levels[r], tab, out[r])
            else:
                _dec4(row, absmax[r], blocksize, levels[r], tab, out[r])


def _pad16(a, R) -> np.ndarray:
    a = np.asarray(a, dtype=np.float32)
    if a.ndim != 2 or a.shape[0] != R or a.shape[1] > 16:
        raise ValueError(f"per-row tables must have shape ({R}, <= 16), got {a.shape}")
    out = np.zeros((R, 16), np.float32)
    out[:, : a.shape[1]] = a
    return out


def encode_rows(W, blocksize: int, bits, thresholds) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CPU kernel (parallel over chunks of rows, loops specialised per bit width and block length) for
    `encode_rows_ref`. Finiteness is checked without a pass of its own: a block's absmax (the max of its |x| bit
    patterns) is inf or NaN exactly when the block holds an inf or a NaN."""
    W, bits = _check_rows(W, blocksize, bits, finite=False)
    R, C = W.shape
    thresholds = _check_table("thresholds", thresholds, R, (1 << int(bits.max())) - 1)
    offsets = row_offsets(bits, C)
    packed = np.empty(offsets[-1], np.uint8)
    absmax = np.empty((R, C // blocksize), np.float32)
    _encode_rows_core(W, blocksize, bits, _pad16(thresholds, R), offsets, packed, absmax)
    if not np.isfinite(absmax).all():
        raise ValueError("W must be finite")
    return packed, offsets, absmax


def decode_rows(packed, offsets, absmax, bits, levels, blocksize: int, out: np.ndarray | None = None) -> np.ndarray:
    """CPU kernel (parallel over chunks of rows) for `decode_rows_ref`.

    `out`, a C-contiguous float32 array of shape (R, C), receives the result if given (no new array)."""
    packed, offsets, absmax, bits, levels, blocksize = _check_decode_args(packed, offsets, absmax, bits, levels,
                                                                          blocksize)
    R, nb = absmax.shape
    if out is None:
        out = np.empty((R, nb * blocksize), np.float32)
    elif not (isinstance(out, np.ndarray) and out.dtype == np.float32 and out.flags.c_contiguous
              and out.shape == (R, nb * blocksize) and out.flags.writeable):
        raise ValueError(f"out must be a writeable C-contiguous float32 array of shape {(R, nb * blocksize)}")
    _decode_rows_core(packed, offsets, absmax, bits, _pad16(levels, R), blocksize, out)
    return out


@cuda.jit
def _encode_rows_kernel(W, blocksize, bits, thr, offsets, packed, absmax):
    r = cuda.blockIdx.x            # a block per row: its absmax per block, its thresholds in shared memory
    tid, nt = cuda.threadIdx.x, cuda.blockDim.x
    C = W.shape[1]
    for q in range(tid, C // blocksize, nt):
        m = np.float32(0.0)
        for i in range(q * blocksize, (q + 1) * blocksize):
            m = max(m, abs(W[r, i]))
        absmax[r, q] = m
    t = cuda.shared.array(16, np.float32)
    if tid < 16:
        t[tid] = thr[r, tid]
    cuda.syncthreads()
    b = bits[r]
    per = 8 // b
    n_thr = (1 << b) - 1
    start = offsets[r]
    for k in range(tid, offsets[r + 1] - start, nt):   # a thread per packed byte
        byte = 0
        for h in range(per):
            i = k * per + h
            c = 0
            if i < C:
                inv = np.float32(1.0) / max(absmax[r, i // blocksize], np.float32(1e-38))
                v = min(max(W[r, i] * inv, np.float32(-1.0)), np.float32(1.0))
                for j in range(n_thr):
                    if t[j] < v:
                        c += 1
            byte |= c << (8 - b * (h + 1))
        packed[start + k] = byte


def encode_rows_cuda(W, blocksize: int, bits, thresholds, threads_per_block: int = 64):
    "CUDA kernel for `encode_rows_ref` (a block per row, a thread per packed byte, thresholds in shared memory)."
    W, bits = _check_rows(W, blocksize, bits)
    if check_int("threads_per_block", threads_per_block, 1, 1024) < 16:
        raise ValueError("threads_per_block must be >= 16 (one thread per threshold loads the table)")
    R, C = W.shape
    thresholds = _check_table("thresholds", thresholds, R, (1 << int(bits.max())) - 1)
    offsets = row_offsets(bits, C)
    d_packed = cuda.device_array(int(offsets[-1]), np.uint8)
    d_abs = cuda.device_array((R, C // blocksize), np.float32)
    _encode_rows_kernel[R, threads_per_block](cuda.to_device(W), blocksize, cuda.to_device(bits),
                                              cuda.to_device(_pad16(thresholds, R)), cuda.to_device(offsets),
                                              d_packed, d_abs)
    return d_packed.copy_to_host(), offsets, d_abs.copy_to_host()


@cuda.jit
def _decode_rows_kernel(packed, offsets, absmax, bits, levels, blocksize, out):
    r = cuda.blockIdx.x            # a block per row; its 16 levels in shared memory
    lev = cuda.shared.array(16, np.float32)
    if cuda.threadIdx.x < 16:
        lev[cuda.threadIdx.x] = levels[r, cuda.threadIdx.x]
    cuda.syncthreads()
    b = bits[r]
    per = 8 // b
    mask = (1 << b) - 1
    C = out.shape[1]
    start = offsets[r]
    for k in range(cuda.threadIdx.x, offsets[r + 1] - start, cuda.blockDim.x):   # a thread per packed byte
        byte = packed[start + k]
        for h in range(per):
            i = k * per + h
            if i < C:
                out[r, i] = lev[(byte >> (8 - b * (h + 1))) & mask] * absmax[r, i // blocksize]


def decode_rows_cuda(packed, offsets, absmax, bits, levels, blocksize: int, threads_per_block: int = 64):
    "CUDA kernel (a block per row, a thread per packed byte, the row's levels in shared memory)."
    packed, offsets, absmax, bits, levels, blocksize = _check_decode_args(packed, offsets, absmax, bits, levels,
                                                                          blocksize)
    R, nb = absmax.shape
    if check_int("threads_per_block", threads_per_block, 1, 1024) < 16:
        raise ValueError("threads_per_block must be >= 16 (one thread per level loads the table)")
    d_out = cuda.device_array((R, nb * blocksize), np.float32)
    _decode_rows_kernel[R, threads_per_block](cuda.to_device(np.ascontiguousarray(packed)),
                                              cuda.to_device(np.asarray(offsets, np.int64)), cuda.to_device(absmax),
                                              cuda.to_device(np.asarray(bits, np.int64)),
                                              cuda.to_device(_pad16(levels, R)), blocksize, d_out)
    return d_out.copy_to_host()


# --- Benchmark -----------------------------------------------------------------------------------------------------

def benchmark(size: str = "default", repeat: int = 3) -> dict:
    """NF4 quantize/dequantize: NumPy reference, @njit, bitsandbytes' CPU quantize_4bit / dequantize_4bit and a memory
    copy of the weights, timed alternating in one run (best of max(repeat, 5) rounds), with the bandwidth fractions.

    Bytes moved: quantize reads 4 B and writes 0.5 B per weight plus 4 B per block scale; dequantize reads 0.5 B plus
    the scales and writes 4 B per weight; the copy (np.copyto into an existing array, one thread) reads and writes
    4 B per weight. The default calls return new arrays (recycled buffers, see `release_buffers`); the same calls
    with fresh pages (the pool off) and dequantize into a caller's buffer are timed too."""
    import os

    import numba
    rows, cols = {"small": (512, 512), "default": (4096, 4096), "full": (8192, 8192)}[size]
    W = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
    n, bs = W.size, 64
    threads = numba.get_num_threads()
    secs, values, ratios = {}, {}, {}
    packed, absmax = quantize_nf4(W, bs)              # compiles (or loads) the kernels
    dequantize_nf4(packed, absmax, W.shape, bs)
    secs["numpy reference, quantize"] = _best_time(lambda: quantize_nf4_ref(W, bs), min(repeat, 1))
    secs["numpy reference, dequantize"] = _best_time(lambda: dequantize_nf4_ref(packed, absmax, W.shape, bs),
                                                     min(repeat, 1))
    reps = max(repeat, 5)
    buf, out = np.empty_like(W), np.empty_like(W)
    names = {"copy": "memory copy of W (np.copyto into an array, 1 thread)", "q": "njit, quantize",
             "d": "njit, dequantize (new array: the default)", "d_out": "njit, dequantize into a buffer (out=)",
             "q_fresh": "njit, quantize, fresh output pages (no recycled buffer)",
             "d_fresh": "njit, dequantize, fresh output pages (no recycled buffer)",
             "bnb_q": "bitsandbytes quantize_4bit (CPU)", "bnb_d": "bitsandbytes dequantize_4bit (CPU)"}
    fns = {names["copy"]: lambda: np.copyto(out, W), names["q"]: lambda: quantize_nf4(W, bs),
           names["d"]: lambda: dequantize_nf4(packed, absmax, W.shape, bs),
           names["d_out"]: lambda: dequantize_nf4(packed, absmax, W.shape, bs, out=buf)}
    identical, torch_threads, bnb_version = None, None, None
    try:
        import logging

        import torch
        logging.getLogger("bitsandbytes").setLevel(logging.ERROR)
        import bitsandbytes
        import bitsandbytes.functional as F
        bnb_version = bitsandbytes.__version__
        T = torch.from_numpy(W)
        qb, st = F.quantize_4bit(T, blocksize=bs, quant_type="nf4")
        identical = bool(np.array_equal(qb.numpy().ravel(), packed)
                         and np.array_equal(st.absmax.numpy().view(np.uint32), absmax.view(np.uint32)))
        fns[names["bnb_q"]] = lambda: F.quantize_4bit(T, blocksize=bs, quant_type="nf4")
        fns[names["bnb_d"]] = lambda: F.dequantize_4bit(qb, st)
        saved = torch.get_num_threads()
        torch.set_num_threads(threads)                # the peer gets the kernel's thread count
        torch_threads = torch.get_num_threads()
        try:
            secs.update(_bench_race(fns, reps))
        finally:
            torch.set_num_threads(saved)
    except ImportError:  # bitsandbytes is in the dev and bench extras
        secs.update(_bench_race(fns, reps))
    saved_cap = _POOL.max_bytes
    _POOL.max_bytes = 0                               # every output from np.empty: first-touch page faults
    try:
        secs.update(_bench_race({names["q_fresh"]: lambda: quantize_nf4(W, bs),
                           names["d_fresh"]: lambda: dequantize_nf4(packed, absmax, W.shape, bs)}, min(reps, 5)))
    finally:
        _POOL.max_bytes = saved_cap
    # mixed precision: a third of the rows at each of 1, 2, 4 bits, random sorted levels per row
    rng = np.random.default_rng(1)
    bits = np.resize(np.array([1, 2, 4]), rows)
    lev = np.sort(rng.uniform(-1, 1, (rows, 16)), axis=1).astype(np.float32)
    thr = ((lev[:, :-1] + lev[:, 1:]) / 2).astype(np.float32)
    enc = encode_rows(W, bs, bits, thr)
    decode_rows(*enc, bits, lev, bs)
    secs["njit, mixed 1/2/4-bit rows, encode"] = _best_time(lambda: encode_rows(W, bs, bits, thr), repeat)
    # the public function a user calls: the LowRA chapter's dequantize(QuantizedTensor) (checks, then this
    # kernel), raced with the kernel on the same codes
    from icml25nb.efficient.lowra import QuantizedTensor, dequantize
    qt = QuantizedTensor(tuple(W.shape), bs, bits.astype(np.int64), lev, *enc, "greedy", 7 / 3)
    best = _bench_race({"njit": lambda: decode_rows(*enc, bits, lev, bs), "public": lambda: dequantize(qt)},
                       max(repeat, 1))
    secs["njit, mixed 1/2/4-bit rows, decode"] = best["njit"]
    secs["public: icml25nb.efficient.lowra.dequantize, mixed 1/2/4-bit rows"] = best["public"]
    ratios["public lowra.dequantize / njit decode_rows"] = best["public"] / best["njit"]
    values["public lowra.dequantize equals decode_rows"] = bool(np.array_equal(dequantize(qt),
                                                                               decode_rows(*enc, bits, lev, bs)))
    ratios["mixed-width decode time / NF4 dequantize time"] = (secs["njit, mixed 1/2/4-bit rows, decode"]
                                                               / secs[names["d"]])
    if identical is not None:
        ratios["quantize: bitsandbytes / njit"] = secs[names["bnb_q"]] / secs[names["q"]]
        ratios["dequantize: bitsandbytes / njit (new array)"] = secs[names["bnb_d"]] / secs[names["d"]]
    ratios["quantize: reference / njit"] = secs["numpy reference, quantize"] / secs[names["q"]]
    ratios["dequantize: reference / njit (new array)"] = secs["numpy reference, dequantize"] / secs[names["d"]]
    q_bytes = 4 * n + n / 2 + 4 * absmax.size
    d_bytes = n / 2 + 4 * absmax.size + 4 * n
    copy_bw = 8 * n / secs[names["copy"]]
    fractions = {}
    for key, moved in (("q", q_bytes), ("q_fresh", q_bytes), ("d", d_bytes), ("d_out", d_bytes),
                       ("d_fresh", d_bytes)):
        bw = moved / secs[names[key]]
        values[names[key]] = bw / 1e9
        fractions[names[key]] = round(bw / copy_bw, 3)
    values[names["copy"]] = copy_bw / 1e9
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    peer = (f"bitsandbytes {bnb_version} at {torch_threads} torch thread(s)" if bnb_version
            else "bitsandbytes not installed")
    return {"kernel": "quant", "task": f"NF4, {rows}x{cols} float32, blocksize {bs}; {threads} numba thread(s); peer "
            f"{peer}; contenders alternating, best of {reps}; load average {load}", "seconds": secs,
            "reference": "numpy reference, quantize", "values": values, "ratios": ratios,
            "values are": "GB/s (bytes moved / time); quantize 4.5 B + scales, dequantize 4.5 B + scales, copy 8 B "
                          "per weight",
            "identical_to_bitsandbytes": identical,
            **{f"bandwidth / copy bandwidth, {k}": v for k, v in fractions.items()}}
