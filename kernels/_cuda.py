"""Device helpers shared by the ``@cuda.jit`` kernels."""
from __future__ import annotations

from numba import cuda


@cuda.jit(device=True)
def block_sum(buf, t, width):
    """Tree-sum buf[0:width] across the threads of a block, in place; the total ends in buf[0].

    `width` is a power of two and at most the block size, `t` the calling thread's index. Every thread of the block
    must call it after the values are written and synchronised (it synchronises between levels)."""
    step = width // 2
    while step > 0:
        if t < step:
            buf[t] += buf[t + step]
        cuda.syncthreads()
        step //= 2
