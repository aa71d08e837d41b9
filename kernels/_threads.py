"""Row-block threading shared by the CPU kernels that pair BLAS products with an ``@njit(nogil)`` pass."""
from __future__ import annotations

import numpy as np


def row_blocks(n_rows: int, min_rows: int = 64, triangular: bool = False) -> np.ndarray:
    """Bounds splitting `n_rows` rows over as many workers as numba has threads (fewer for small inputs).

    With `triangular`, row i carries n_rows - i units of work (an upper triangle), and the bounds give every block
    the same share of the triangle instead of the same number of rows."""
    import numba
    workers = max(1, min(numba.get_num_threads(), n_rows // min_rows))
    if not triangular:
        return np.linspace(0, n_rows, workers + 1).astype(int)
    k = np.arange(workers + 1) / workers
    return np.round(n_rows * (1 - np.sqrt(1 - k))).astype(int)


_CONTROLLER = None


def _blas_controller():
    "One threadpoolctl controller for the process (building one scans the loaded libraries: milliseconds)."
    global _CONTROLLER
    if _CONTROLLER is None:
        from threadpoolctl import ThreadpoolController
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


def map_row_blocks(fn, bounds) -> list:
    """[fn(start, stop) for each block], the blocks run in worker threads with single-threaded BLAS (no
    oversubscription; BLAS and @njit(nogil) release the GIL, so the threads run in parallel). A single block runs
    in the calling thread, BLAS as configured."""
    from concurrent.futures import ThreadPoolExecutor
    pairs = list(zip(bounds[:-1], bounds[1:]))
    if len(pairs) == 1:
        return [fn(*pairs[0])]
    with _blas_controller().limit(limits=1, user_api="blas"):
        with ThreadPoolExecutor(len(pairs)) as ex:
            return list(ex.map(lambda ab: fn(*ab), pairs))
