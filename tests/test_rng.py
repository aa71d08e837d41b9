"""The counter-based random streams: the same bits from the NumPy reference, the @njit kernel and the CUDA kernel
(under the simulator), reproducible, independent of scheduling, and uniform."""
import os
import warnings

import numba
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numba import cuda, njit, prange
from scipy import stats

from icml25nb.kernels import rng

U64 = st.integers(min_value=0, max_value=2**64 - 1)


def test_known_answer_splitmix64():
    # Vigna's splitmix64 seeded with 0 (state += golden, then mix) starts with these outputs.
    got = [int(v) for v in rng.u64_ref(0, np.arange(3))]
    assert got == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]


@settings(max_examples=200, deadline=None)
@given(U64, U64)
def test_njit_scalar_functions_match_reference(key, counter):
    counter = counter % 2**40
    assert int(rng.mix64(np.uint64(key))) == int(rng.mix64_ref(np.uint64(key)))
    assert int(rng.u64(np.uint64(key), np.uint64(counter))) == int(rng.u64_ref(np.uint64(key), np.uint64(counter)))
    assert float(rng.uniform(np.uint64(key), np.uint64(counter))) == float(rng.uniform_ref(np.uint64(key), np.uint64(counter)))
    seed, stream = key % 2**63, counter
    assert int(rng.stream_key(np.uint64(seed), np.uint64(stream))) == int(rng.stream_key_ref(np.uint64(seed), np.uint64(stream)))


def test_mix64_is_injective_on_a_sample():
    x = np.random.default_rng(0).integers(0, 2**63, size=100_000, dtype=np.int64).astype(np.uint64)
    x = np.unique(x)
    assert len(np.unique(rng.mix64_ref(x))) == len(x)


@pytest.mark.parametrize("seed,n_streams,n_draws", [(0, 1, 1), (7, 33, 17), (2**40 + 3, 257, 64)])
def test_cpu_kernel_is_bit_identical_to_reference(seed, n_streams, n_draws):
    a = rng.uniform_fill_ref(seed, n_streams, n_draws)
    b = rng.uniform_fill(seed, n_streams, n_draws)
    assert a.shape == (n_streams, n_draws)
    assert np.array_equal(a, b)
    assert np.all((a >= 0) & (a < 1))


def test_cuda_kernel_under_simulator_is_bit_identical():
    assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"  # set by conftest before numba was imported
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # uint64 scalar wrap-around warns under the simulator
        got = rng.uniform_fill_cuda(11, 5, 3, threads_per_block=4)  # 2 blocks, last one partly idle
    assert np.array_equal(got, rng.uniform_fill_ref(11, 5, 3))


@njit
def _randbelow_cpu(key, n, m):
    out = np.empty(m, dtype=np.int64)
    for i in range(m):
        out[i] = rng.randbelow(key, i, n)
    return out


@cuda.jit
def _randbelow_cuda_kernel(key, n, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = rng.cuda_randbelow(key, i, n)


def test_device_functions_compose_in_user_kernels():
    key = np.uint64(rng.stream_key_ref(3, 4))
    expect = np.minimum(np.floor(rng.uniform_ref(key, np.arange(6)) * 10).astype(np.int64), 9)
    assert np.array_equal(_randbelow_cpu(key, 10, 6), expect)
    out = np.zeros(6, dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _randbelow_cuda_kernel[2, 4](key, 10, out)
    assert np.array_equal(out, expect)


def test_reproducible_and_seed_dependent():
    assert np.array_equal(rng.uniform_fill(5, 8, 8), rng.uniform_fill(5, 8, 8))
    assert not np.allclose(rng.uniform_fill(5, 8, 8), rng.uniform_fill(6, 8, 8))
    # stream s does not depend on how many streams are drawn
    assert np.array_equal(rng.uniform_fill(5, 3, 8), rng.uniform_fill(5, 10, 8)[:3])


@njit(parallel=True)
def _fill_in_order(seed, order, n_draws):
    out = np.empty((len(order), n_draws))
    for j in prange(len(order)):
        s = order[j]
        key = rng.stream_key(seed, s)
        for i in range(n_draws):
            out[s, i] = rng.uniform(key, i)
    return out


def test_independent_of_thread_scheduling():
    n_streams, n_draws = 200, 50
    expect = rng.uniform_fill_ref(9, n_streams, n_draws)
    order = np.random.default_rng(1).permutation(n_streams)
    old = numba.get_num_threads()
    try:
        for threads in range(1, numba.config.NUMBA_NUM_THREADS + 1):
            numba.set_num_threads(threads)
            assert np.array_equal(rng.uniform_fill(9, n_streams, n_draws), expect)
            assert np.array_equal(_fill_in_order(np.uint64(9), order, n_draws), expect)
    finally:
        numba.set_num_threads(old)


def test_uniformity_ks_and_chi_square():
    u = rng.uniform_fill(2024, 64, 1024).ravel()
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    counts = np.bincount(np.minimum((u * 16).astype(int), 15), minlength=16)
    assert stats.chisquare(counts).pvalue > 1e-3
    # the same tests reject a visibly non-uniform stream, so they can fail
    assert stats.kstest(u**1.05, "uniform").pvalue < 1e-3
    assert stats.chisquare(np.bincount(np.minimum((u**1.05 * 16).astype(int), 15), minlength=16)).pvalue < 1e-3


def test_streams_and_counters_are_uncorrelated():
    m = rng.uniform_fill(77, 256, 2048)
    for a, b in [(m[:-1], m[1:]), (m[:, :-1].T, m[:, 1:].T)]:  # neighbouring streams, neighbouring draws
        r = np.mean([np.corrcoef(x, y)[0, 1] for x, y in zip(a[:50], b[:50])])
        # each sample correlation has standard deviation ~ 1/sqrt(len); the mean of 50 is 4 sigma from 0 at most
        assert abs(r) < 4 / np.sqrt(50 * a.shape[1])


def test_low_bits_of_consecutive_seeds_are_balanced():
    # consecutive seeds, stream 0, draw 0: the lowest bit should be a fair coin
    bits = rng.u64_ref(rng.stream_key_ref(np.arange(20_000), 0), 0) & np.uint64(1)
    assert stats.binomtest(int(bits.sum()), 20_000).pvalue > 1e-3


@pytest.mark.parametrize("args,exc,msg", [((-1, 2, 2), ValueError, "seed"), ((1, -2, 2), ValueError, "n_streams"),
                                          ((1.5, 2, 2), TypeError, "seed"), ((1, 2, "3"), TypeError, "n_draws")])
def test_bad_input(args, exc, msg):
    for fill in (rng.uniform_fill_ref, rng.uniform_fill):
        with pytest.raises(exc, match=msg):
            fill(*args)
    with pytest.raises(ValueError, match="non-negative"):
        rng.u64_ref(np.array([-1]), 0)


def test_benchmark_reports_each_implementation():
    res = rng.benchmark("small", repeat=1)
    assert res["reference"] in res["seconds"] and len(res["seconds"]) == 3
    assert all(s > 0 for s in res["seconds"].values())
