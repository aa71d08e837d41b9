"""Counter-based random streams (splitmix64) for CPU and CUDA kernels.

A draw is a pure function of ``(seed, stream, counter)``: stream ``s`` of seed
``seed`` has the key ``stream_key(seed, s)``, and its ``i``-th draw is
``mix64(key + (i + 1) * GOLDEN)`` (splitmix64's output for state ``i + 1``).
There is no generator state to share, so every trial (or thread) gets its own
stream, the draws do not depend on how a parallel loop is scheduled, and a
CUDA thread computes exactly the bits that the CPU kernel computes.

Three implementations with one meaning:

* NumPy reference: ``mix64_ref``, ``stream_key_ref``, ``u64_ref``, ``uniform_ref``,
  ``uniform_fill_ref`` (vectorised over arrays, uint64 arithmetic wraps);
* Numba CPU: ``mix64``, ``stream_key``, ``u64``, ``uniform``, ``randbelow``
  (``@njit``, callable from other ``@njit`` code) and ``uniform_fill``;
* Numba CUDA: ``cuda_mix64``, ``cuda_stream_key``, ``cuda_u64``, ``cuda_uniform``,
  ``cuda_randbelow`` (device functions for other ``@cuda.jit`` kernels) and
  ``uniform_fill_cuda`` (a kernel launch over streams).
"""
from __future__ import annotations


import numpy as np
from icml25nb.core import check_choice, check_int, check_memory
from icml25nb.kernels._bench import best_time as _best_time
from numba import cuda, njit, prange
from numba.extending import overload

__all__ = [
    "GOLDEN", "mix64_ref", "stream_key_ref", "u64_ref", "uniform_ref", "uniform_fill_ref",
    "mix64", "stream_key", "u64", "uniform", "randbelow", "uniform_fill",
    "cuda_mix64", "cuda_stream_key", "cuda_u64", "cuda_uniform", "cuda_randbelow", "uniform_fill_cuda",
    "benchmark",
]

GOLDEN = 0x9E3779B97F4A7C15  # 2^64 / golden ratio, splitmix64's state increment
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
_STREAM_SALT = 0xD1B54A32D192ED03  # separates the stream index from the seed before mixing
_TWO_M53 = 1.0 / 9007199254740992.0  # 2^-53


# --- NumPy reference -------------------------------------------------------

def _as_u64(x, name: str = "x") -> np.ndarray:
    "`x` as a uint64 array; negative, non-integer or too-large input is an error naming `name`."
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must be integers, got {type(x).__name__}")
    a = np.asarray(x)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integers in [0, 2**64), got dtype {a.dtype}")
    if a.dtype.kind == "i" and np.any(a < 0):
        raise ValueError(f"{name} must be non-negative (seeds, streams and counters are uint64 words)")
    return a.astype(np.uint64)


def mix64_ref(z) -> np.ndarray:
    "splitmix64's finaliser: a bijection of uint64 that mixes every input bit into every output bit."
    z = _as_u64(z, "z")
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(_M1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(_M2)
    return z ^ (z >> np.uint64(31))


def stream_key_ref(seed, stream) -> np.ndarray:
    "Key of stream `stream` under `seed`: two rounds of mixing so nearby (seed, stream) pairs give unrelated keys."
    seed, stream = _as_u64(seed, "seed"), _as_u64(stream, "stream")
    with np.errstate(over="ignore"):
        return mix64_ref(mix64_ref(seed) ^ (stream * np.uint64(_STREAM_SALT) + np.uint64(GOLDEN)))


def u64_ref(key, counter) -> np.ndarray:
    "Draw number `counter` (0, 1, ...) of the stream with key `key`, as uint64."
    key, counter = _as_u64(key, "key"), _as_u64(counter, "counter")
    with np.errstate(over="ignore"):
        return mix64_ref(key + (counter + np.uint64(1)) * np.uint64(GOLDEN))


def uniform_ref(key, counter) -> np.ndarray:
    "Draw number `counter` of stream `key` as a float64 in [0, 1) (the top 53 bits)."
    return (u64_ref(key, counter) >> np.uint64(11)).astype(np.float64) * _TWO_M53


def _check_fill_args(seed: int, n_streams: int, n_draws: int) -> None:
    for name, v in (("seed", seed), ("n_streams", n_streams), ("n_draws", n_draws)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must be an integer, got {type(v).__name__}")
        if v < 0:
            raise ValueError(f"{name} must be non-negative, got {v}")
    if seed >= 2**64:
        raise ValueError(f"seed must be below 2**64, got {seed}")
    check_memory("n_streams x n_draws", int(n_streams) * int(n_draws), 8)  # exact: float(10**400) overflows


def uniform_fill_ref(seed: int, n_streams: int, n_draws: int) -> np.ndarray:
    "Matrix (n_streams, n_draws) whose row s holds the first n_draws uniforms of stream s."
    _check_fill_args(seed, n_streams, n_draws)
    keys = stream_key_ref(np.full(n_streams, seed, dtype=np.uint64), np.arange(n_streams, dtype=np.uint64))
    return uniform_ref(keys[:, None], np.arange(n_draws, dtype=np.uint64)[None, :])


# --- One source for both Numba targets ---------------------------------------

def _build(jit):
    "Compile the stream functions with `jit` (njit for the CPU, cuda.jit(device=True) for CUDA)."
    m1, m2, golden, salt = np.uint64(_M1), np.uint64(_M2), np.uint64(GOLDEN), np.uint64(_STREAM_SALT)
    s30, s27, s31, s11, one = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11), np.uint64(1)

    @jit
    def mix64(z):
        z = np.uint64(z)
        z = (z ^ (z >> s30)) * m1
        z = (z ^ (z >> s27)) * m2
        return z ^ (z >> s31)

    @jit
    def stream_key(seed, stream):
        return mix64(mix64(np.uint64(seed)) ^ (np.uint64(stream) * salt + golden))

    @jit
    def u64(key, counter):
        return mix64(np.uint64(key) + (np.uint64(counter) + one) * golden)

    @jit
    def uniform(key, counter):
        # (u >> 11) < 2^53 fits in int64; the signed conversion is much faster than uint64 -> float64
        return np.float64(np.int64(u64(key, counter) >> s11)) * _TWO_M53

    @jit
    def randbelow(key, counter, n):
        # floor(u * n) with u in [0, 1): bias below 2^-53 * n, far under any test's resolution.
        k = np.int64(uniform(key, counter) * n)
        return k if k < n else n - 1

    return mix64, stream_key, u64, uniform, randbelow


# the compiled functions, for this package's kernels (no checks: their callers pass valid uint64 words)
_mix64, _stream_key, _u64, _uniform, _randbelow = _build(njit(cache=False, inline="always"))
(cuda_mix64, cuda_stream_key, cuda_u64, cuda_uniform,
 cuda_randbelow) = _build(lambda f: cuda.jit(device=True)(f))


# The public names check their arguments when called from Python (a negative or fractional word would wrap or be
# truncated by the compiled code, n <= 0 would give a draw outside [0, n)); inside @njit code they compile to the
# unchecked functions above (numba `overload`), so user kernels still call them at full speed.
def _word(name: str, x) -> np.uint64:
    "`x` as a uint64 word; a one-line error naming `name` unless it is an integer (not a bool) in [0, 2^64)."
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"{name} must be an integer in [0, 2**64), got {type(x).__name__}")
    if not 0 <= int(x) < 2**64:
        raise ValueError(f"{name} must be an integer in [0, 2**64), got {x}")
    return np.uint64(x)


def mix64(z):
    "splitmix64 finaliser (@njit; checked when called from Python)."
    return _mix64(_word("z", z))


def stream_key(seed, stream):
    "Key of stream `stream` under `seed` (@njit; checked when called from Python)."
    return _stream_key(_word("seed", seed), _word("stream", stream))


def u64(key, counter):
    "Draw `counter` of stream `key` as uint64 (@njit; checked when called from Python)."
    return _u64(_word("key", key), _word("counter", counter))


def uniform(key, counter):
    "Draw `counter` of stream `key` as float64 in [0, 1) (@njit; checked when called from Python)."
    return _uniform(_word("key", key), _word("counter", counter))


def randbelow(key, counter, n):
    "Draw `counter` of stream `key` as an integer in [0, n) (@njit; checked when called from Python: n >= 1)."
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be an integer in [1, 2**63), got {type(n).__name__}")
    if not 1 <= int(n) < 2**63:
        raise ValueError(f"n must be an integer in [1, 2**63), got {n}")
    return _randbelow(_word("key", key), _word("counter", counter), np.int64(n))


@overload(mix64, inline="always")
def _ov_mix64(z):
    return lambda z: _mix64(z)


@overload(stream_key, inline="always")
def _ov_stream_key(seed, stream):
    return lambda seed, stream: _stream_key(seed, stream)


@overload(u64, inline="always")
def _ov_u64(key, counter):
    return lambda key, counter: _u64(key, counter)


@overload(uniform, inline="always")
def _ov_uniform(key, counter):
    return lambda key, counter: _uniform(key, counter)


@overload(randbelow, inline="always")
def _ov_randbelow(key, counter, n):
    return lambda key, counter, n: _randbelow(key, counter, n)


@njit(parallel=True, cache=True)
def _uniform_fill_njit(seed, out):
    n_streams, n_draws = out.shape
    for s in prange(n_streams):
        key = _stream_key(seed, s)
        for i in range(n_draws):
            out[s, i] = _uniform(key, i)


def uniform_fill(seed: int, n_streams: int, n_draws: int) -> np.ndarray:
    "CPU kernel (parallel over streams) for `uniform_fill_ref`: the same matrix, bit for bit."
    _check_fill_args(seed, n_streams, n_draws)
    out = np.empty((n_streams, n_draws), dtype=np.float64)
    _uniform_fill_njit(np.uint64(seed), out)
    return out


@cuda.jit
def _uniform_fill_cuda_kernel(seed, out):
    s = cuda.grid(1)
    if s < out.shape[0]:
        key = cuda_stream_key(seed, s)
        for i in range(out.shape[1]):
            out[s, i] = cuda_uniform(key, i)


def uniform_fill_cuda(seed: int, n_streams: int, n_draws: int, threads_per_block: int = 128) -> np.ndarray:
    "CUDA kernel (one thread per stream) for `uniform_fill_ref`; runs under NUMBA_ENABLE_CUDASIM=1 too."
    _check_fill_args(seed, n_streams, n_draws)
    threads_per_block = check_int("threads_per_block", threads_per_block, 1, 1024)
    out = cuda.device_array((n_streams, n_draws), dtype=np.float64)
    blocks = max(1, (n_streams + threads_per_block - 1) // threads_per_block)
    _uniform_fill_cuda_kernel[blocks, threads_per_block](np.uint64(seed), out)
    return out.copy_to_host()


# --- Benchmark ---------------------------------------------------------------



def benchmark(size: str = "default", repeat: int = 5) -> dict:
    "Time uniform_fill: NumPy reference, @njit kernel and NumPy's own PCG64 Generator on the same matrix size."
    size = check_choice("size", size, ("small", "default", "full"))
    n_streams, n_draws = {"small": (256, 256), "default": (4096, 1024), "full": (16384, 1024)}[size]
    gen = np.random.default_rng(0)
    rows = {
        "numpy reference (splitmix64, vectorised)": _best_time(lambda: uniform_fill_ref(0, n_streams, n_draws), repeat),
        "njit kernel (splitmix64, prange)": _best_time(lambda: uniform_fill(0, n_streams, n_draws), repeat),
        "numpy Generator.random (PCG64, one shared stream)": _best_time(lambda: gen.random((n_streams, n_draws)), repeat),
    }
    import numba
    task = f"{n_streams}x{n_draws} uniforms, {numba.get_num_threads()} numba thread(s)"
    return {"kernel": "rng", "task": task, "seconds": rows,
            "reference": "numpy reference (splitmix64, vectorised)"}
