"""Blockwise NF4 kernels: the NumPy reference, the @njit kernels and the CUDA kernels (simulator) give the same
bytes as each other and as bitsandbytes' CPU quantize_4bit, and the same floats on the way back."""
import logging

import numpy as np
import pytest
import torch

from icml25nb.kernels import quant as Q

logging.getLogger("bitsandbytes").setLevel(logging.ERROR)  # it looks for an optional CPU gemm package
import bitsandbytes.functional as F  # noqa: E402
from bitsandbytes.backends.default.ops import _dequantize_4bit_compute  # noqa: E402
from bitsandbytes.backends.utils import _get_4bit_code  # noqa: E402


def _bnb(W, bs):
    qb, st = F.quantize_4bit(torch.from_numpy(W), blocksize=bs, quant_type="nf4")
    return qb, st


def _cases(seed, n):
    "Random shapes (tail blocks, odd counts), heavy tails, scales from 1e-30 to 1e30, all-zero blocks."
    rng = np.random.default_rng(seed)
    for i in range(n):
        bs = int(rng.choice([32, 64, 128, 256]))
        shape = (int(rng.integers(1, 20)), int(rng.integers(1, 300)))
        W = (rng.standard_t(2.5, size=shape) * 10.0 ** rng.uniform(-30, 30)).astype(np.float32)
        if i % 5 == 0:
            W[:, : shape[1] // 2] = 0
        yield W, bs


def test_levels_are_bitsandbytes_levels():
    assert np.array_equal(Q.NF4_LEVELS, _get_4bit_code("nf4", torch.device("cpu")).numpy())
    assert np.all(np.diff(Q.NF4_MIDPOINTS) > 0) and Q.NF4_MIDPOINTS.dtype == np.float32


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_quantize_is_byte_identical_to_bitsandbytes(seed):
    for W, bs in _cases(seed, 40):
        qb, st = _bnb(W, bs)
        for fn in (Q.quantize_nf4_ref, Q.quantize_nf4):
            packed, absmax = fn(W, bs)
            assert np.array_equal(packed, qb.numpy().ravel()), (fn.__name__, W.shape, bs)
            assert np.array_equal(absmax.view(np.uint32), st.absmax.numpy().view(np.uint32)), (fn.__name__, W.shape)


def test_dequantize_matches_bitsandbytes():
    for W, bs in _cases(3, 40):
        qb, st = _bnb(W, bs)
        packed, absmax = Q.quantize_nf4(W, bs)
        want = _dequantize_4bit_compute(qb.reshape(-1), st.absmax, _get_4bit_code("nf4", qb.device), bs, W.shape,
                                        torch.float32).numpy()
        for fn in (Q.dequantize_nf4_ref, Q.dequantize_nf4):
            assert np.array_equal(fn(packed, absmax, W.shape, bs), want), (fn.__name__, W.shape, bs)
    # bitsandbytes' public CPU dequantize agrees with its own reference path when rows are whole blocks
    # (it disagrees when a block straddles two rows; see the chapter), so compare there
    rng = np.random.default_rng(4)
    for bs in (32, 64, 256):
        W = rng.standard_normal((7, 2 * bs)).astype(np.float32)
        qb, st = _bnb(W, bs)
        assert np.array_equal(Q.dequantize_nf4(*Q.quantize_nf4(W, bs), W.shape, bs), F.dequantize_4bit(qb, st).numpy())


def test_known_codes_and_round_trip_error():
    W = np.array([[0.0, 1.0, -1.0, 0.5, -0.03, 0.04, 2.0, -4.0]], np.float32)
    packed, absmax = Q.quantize_nf4(W, 8)
    # scaled by 1/4: 0 -> 7, 0.25 -> 10 (0.2461), -0.25 -> 4 (-0.2844), 0.125 -> 9 (0.1609), -0.0075 -> 7, 0.01 -> 7,
    # 0.5 -> 12 (0.4407: the midpoint to 0.5626 is 0.5016), -1 -> 0
    assert packed.tolist() == [0x7A, 0x49, 0x77, 0xC0] and absmax.tolist() == [4.0]
    rng = np.random.default_rng(5)
    W = rng.standard_normal((16, 256)).astype(np.float32)
    packed, absmax = Q.quantize_nf4(W, 64)
    err = np.abs(Q.dequantize_nf4(packed, absmax, W.shape, 64) - W).reshape(-1, 64)
    half_gap = np.max(np.diff(Q.NF4_LEVELS)) / 2
    assert np.all(err <= absmax[:, None] * half_gap * (1 + 1e-6))  # nearest level: within half the widest gap


def test_cuda_kernels_under_simulator_match_reference():
    rng = np.random.default_rng(6)
    W = rng.standard_normal((64, 128)).astype(np.float32)
    W[3, :64] = 0  # an all-zero block
    packed, absmax = Q.quantize_nf4_ref(W, 64)
    p_cuda, a_cuda = Q.quantize_nf4_cuda(W, 64, threads_per_block=64)
    assert np.array_equal(p_cuda, packed) and np.array_equal(a_cuda, absmax)
    assert np.array_equal(Q.dequantize_nf4_cuda(packed, absmax, W.shape, 64, threads_per_block=64),
                          Q.dequantize_nf4_ref(packed, absmax, W.shape, 64))
    V = rng.standard_normal((3, 11)).astype(np.float32)  # a short last block and an odd count
    assert all(np.array_equal(a, b) for a, b in zip(Q.quantize_nf4_cuda(V, 32, 8), Q.quantize_nf4_ref(V, 32)))
    pv, av = Q.quantize_nf4_ref(V, 32)
    assert np.array_equal(Q.dequantize_nf4_cuda(pv, av, V.shape, 32, threads_per_block=8),
                          Q.dequantize_nf4_ref(pv, av, V.shape, 32))


def test_cuda_kernels_under_simulator_every_path():
    "Several grid blocks, whole blocks at exact midpoints and their neighbours, an all-zero and a subnormal block, "
    "a short last block with an odd count: quantize and dequantize equal the reference and the @njit kernels."
    rng = np.random.default_rng(16)
    bs = 32
    W = rng.standard_normal(9 * bs + 7).astype(np.float32)
    W[:bs] = 0
    W[bs:2 * bs] = np.resize(np.concatenate([Q.NF4_MIDPOINTS, np.nextafter(Q.NF4_MIDPOINTS, np.float32(2)),
                                             [1.0, -1.0]]), bs)
    W[2 * bs:3 * bs] = np.resize(np.nextafter(Q.NF4_MIDPOINTS, np.float32(-2)), bs)
    W[2 * bs] = -1.0
    W[3 * bs:4 * bs] *= np.float32(1e-39)
    ref = Q.quantize_nf4_ref(W, bs)
    for got in (Q.quantize_nf4_cuda(W, bs, threads_per_block=32), Q.quantize_nf4(W, bs)):
        assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1].view(np.uint32), ref[1].view(np.uint32))
    D = Q.dequantize_nf4_ref(*ref, W.shape, bs)
    assert np.array_equal(Q.dequantize_nf4_cuda(*ref, W.shape, bs, threads_per_block=32), D)
    assert np.array_equal(Q.dequantize_nf4(*ref, W.shape, bs), D)


@pytest.mark.parametrize("bs", [32, 48, 64, 128, 256])
def test_njit_codes_exact_next_to_every_midpoint(bs):
    "The binary search against the reference's count of midpoints: values on each midpoint and 1-3 ulps either "
    "side, in blocks whose absmax is 1 (scaled exactly) and in blocks scaled by odd factors (rounding near a midpoint)."
    rng = np.random.default_rng(300 + bs)
    m = Q.NF4_MIDPOINTS
    near = [m]
    for k in (1, 2, 3):
        up, down = m.copy(), m.copy()
        for _ in range(k):
            up, down = np.nextafter(up, np.float32(2)), np.nextafter(down, np.float32(-2))
        near += [up, down]
    vals = np.concatenate(near + [Q.NF4_LEVELS, -Q.NF4_LEVELS, [0.0, -0.0]]).astype(np.float32)
    blocks = []
    for scale in [1.0, 3.0, 0.7, 1e-20, 7e25, float(rng.uniform(0.1, 10))]:
        for start in range(0, vals.size, bs - 1):
            blk = np.zeros(bs, np.float32)
            chunk = vals[start:start + bs - 1]
            blk[:chunk.size] = chunk
            blk[-1] = 1.0                                       # the absmax
            blocks.append(blk * np.float32(scale))
    W = np.concatenate(blocks + [rng.standard_normal(bs + 3).astype(np.float32)])
    ref = Q.quantize_nf4_ref(W, bs)
    got = Q.quantize_nf4(W, bs)
    assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1].view(np.uint32), ref[1].view(np.uint32))


def test_recycled_outputs_never_alias_a_live_result():
    "Outputs come from recycled buffers only once nothing refers to them: held results, views and tensors stay intact."
    rng = np.random.default_rng(11)
    W1 = rng.standard_normal((1024, 512)).astype(np.float32)    # 2 MiB of float32, 256 KiB of codes: pooled sizes
    W2 = rng.standard_normal((1024, 512)).astype(np.float32)
    p1, a1 = Q.quantize_nf4(W1)
    d1 = Q.dequantize_nf4(p1, a1, W1.shape)
    keep = (p1.copy(), d1.copy())
    view, tensor = d1[3::5, 7:], torch.from_numpy(d1)
    del d1
    p2, a2 = Q.quantize_nf4(W2)
    d2 = Q.dequantize_nf4(p2, a2, W2.shape)
    d3 = Q.dequantize_nf4(p1, a1, W1.shape)
    assert np.array_equal(p1, keep[0]) and np.array_equal(tensor.numpy(), keep[1])
    assert np.array_equal(view, keep[1][3::5, 7:])
    assert np.array_equal(d2, Q.dequantize_nf4_ref(*Q.quantize_nf4_ref(W2), W2.shape))
    assert np.array_equal(d3, keep[1]) and not np.shares_memory(d3, tensor.numpy())
    assert not np.shares_memory(d2, d3) and not np.shares_memory(p1, p2)
    del view, tensor, d3
    d4 = Q.dequantize_nf4(p2, a2, W2.shape)                      # a buffer freed above is handed out again
    assert np.array_equal(d4, d2) and not np.shares_memory(d4, d2)
    Q.release_buffers()
    assert np.array_equal(d4, d2) and np.array_equal(p1, keep[0])  # held results survive a release


def test_buffer_pool_cap(monkeypatch):
    "Beyond the cap, outputs come from np.empty; idle buffers are dropped first; release_buffers frees idle ones."
    pool = Q._BufferPool(8 << 20)
    a = pool.empty((1 << 20,), np.float32)                       # 4 MiB
    b = pool.empty((1 << 20,), np.float32)                       # 8 MiB held
    c = pool.empty((1 << 20,), np.float32)                       # over the cap, all in use: not pooled
    assert len(pool._bufs) == 2 and c.base is None and not np.shares_memory(a, b)
    del a
    d = pool.empty((1 << 20,), np.float32)                       # a's buffer again
    assert len(pool._bufs) == 2 and not np.shares_memory(b, d)
    del d
    e = pool.empty((1 << 19,), np.float64)                       # same bytes, other dtype and shape: recycled too
    assert e.shape == (1 << 19,) and e.dtype == np.float64 and len(pool._bufs) == 2
    del e
    g = pool.empty((3 << 19,), np.float32)                       # 6 MiB with 4 MiB in use: the idle one goes, and
    assert len(pool._bufs) == 1 and g.base is None               # 6 more would pass the cap: not pooled
    bb = pool.empty((1 << 20,), np.float32)                      # 4 MiB again (a new buffer: the idle one is gone)
    del b, bb
    f = pool.empty((3 << 19,), np.float32)                       # 6 MiB: the idle 4 MiB ones are dropped for it
    assert len(pool._bufs) == 1 and pool._bufs[0].nbytes == 6 << 20 and f.base is pool._bufs[0]
    small = pool.empty(100, np.float32)
    assert small.base is None and len(pool._bufs) == 1
    del f
    pool.release()
    assert pool._bufs == []


def test_bad_input():
    with pytest.raises(ValueError, match="W must be finite"):
        Q.quantize_nf4(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="blocksize"):
        Q.quantize_nf4(np.ones(8), blocksize=7)
    with pytest.raises(ValueError, match="blocksize"):
        Q.quantize_nf4_ref(np.ones(8), blocksize=0)
    with pytest.raises(ValueError, match="W must not be empty"):
        Q.quantize_nf4(np.zeros(0))
    packed, absmax = Q.quantize_nf4(np.ones(10), 4)
    with pytest.raises(ValueError, match="packed"):
        Q.dequantize_nf4(packed[:-1], absmax, (10,), 4)
    with pytest.raises(ValueError, match="absmax"):
        Q.dequantize_nf4(packed, absmax[:-1], (10,), 4)


def test_benchmark_small_runs():
    res = Q.benchmark("small", repeat=1)
    assert res["identical_to_bitsandbytes"] is True
    assert {"seconds", "reference", "ratios"} <= set(res)
    assert "quantize: bitsandbytes / njit" in res["ratios"] and "torch thread" in res["task"]
    assert all(v > 0 for k, v in res.items() if k.startswith("bandwidth / copy bandwidth"))


def _row_tables(rng, R, bits):
    "Random sorted per-row levels and their midpoints as thresholds."
    thr, lev = np.zeros((R, 15), np.float32), np.zeros((R, 16), np.float32)
    for r in range(R):
        L = 1 << int(bits[r])
        lv = np.sort(rng.uniform(-1, 1, L)).astype(np.float32)
        lev[r, :L], thr[r, :L - 1] = lv, (lv[:-1] + lv[1:]) / 2
    return thr, lev


@pytest.mark.parametrize("R,C,bs", [(64, 128, 64), (5, 24, 8), (3, 7, 7)])
def test_mixed_width_rows_reference_njit_cuda_agree(R, C, bs):
    rng = np.random.default_rng(R + C)
    W = (rng.standard_t(3, size=(R, C)) * rng.uniform(0.01, 10, (R, 1))).astype(np.float32)
    bits = rng.choice([1, 2, 4], R)
    thr, lev = _row_tables(rng, R, bits)
    ref = Q.encode_rows_ref(W, bs, bits, thr)
    got = Q.encode_rows(W, bs, bits, thr)
    assert all(np.array_equal(a, b) for a, b in zip(ref, got))
    got_cuda = Q.encode_rows_cuda(W, bs, bits, thr, threads_per_block=16 if R > 8 else 32)
    assert all(np.array_equal(a, b) for a, b in zip(ref, got_cuda))
    assert ref[1][-1] == sum((C * int(b) + 7) // 8 for b in bits)          # packed at each row's width
    D = Q.decode_rows_ref(*ref, bits, lev, bs)
    assert np.array_equal(Q.decode_rows(*got, bits, lev, bs), D)
    assert np.array_equal(Q.decode_rows_cuda(*got, bits, lev, bs, threads_per_block=16 if R > 8 else 32), D)
    # each value decodes to the level whose cell holds it (codes are cells of the thresholds)
    X = np.clip(W / np.repeat(np.maximum(ref[2], 1e-38), bs, axis=1), -1, 1)
    for r in range(R):
        L = 1 << int(bits[r])
        cell = np.searchsorted(thr[r, :L - 1], X[r], side="left")
        assert np.allclose(D[r], lev[r, cell] * np.repeat(ref[2][r], bs), rtol=1e-6, atol=0)


def test_all_4bit_nf4_rows_are_nf4():
    rng = np.random.default_rng(9)
    W = rng.standard_normal((16, 128)).astype(np.float32)
    b4 = np.full(16, 4)
    packed, offsets, absmax = Q.encode_rows(W, 64, b4, np.tile(Q.NF4_MIDPOINTS, (16, 1)))
    p_nf4, a_nf4 = Q.quantize_nf4(W, 64)
    assert np.array_equal(packed, p_nf4) and np.array_equal(absmax.ravel(), a_nf4)


def test_mixed_width_bad_input():
    W = np.ones((2, 8), np.float32)
    with pytest.raises(ValueError, match="blocksize must divide"):
        Q.encode_rows(W, 3, [1, 2], np.zeros((2, 3)))
    with pytest.raises(ValueError, match="bits"):
        Q.encode_rows(W, 4, [1, 3], np.zeros((2, 3)))
    with pytest.raises(ValueError, match="W must be finite"):
        Q.encode_rows(np.full((2, 8), np.inf), 4, [1, 2], np.zeros((2, 3)))


@pytest.mark.parametrize("bs", [2, 4, 8, 32, 48, 64, 128, 256, 512])
def test_njit_matches_reference_at_odd_sizes_and_blocksizes(bs):
    "Every block length (the specialised loops and the run-time one), tail blocks, odd counts, several prange tasks."
    rng = np.random.default_rng(bs)
    sizes = {1, 2, 3, bs - 1, bs, bs + 1, 3 * bs + 2, 2 * 65536 + 3 * bs, 2 * 65536 + 3 * bs + 7, 65536 * 3 + 1}
    for n in sorted(s for s in sizes if s > 0):
        W = (rng.standard_t(3, n) * 10.0 ** rng.uniform(-5, 5)).astype(np.float32)
        W[: min(n, bs)] = 0                                   # an all-zero block (or the whole of a short input)
        if n > 3 * bs:
            W[bs:2 * bs] = np.resize(np.concatenate([Q.NF4_MIDPOINTS, -Q.NF4_MIDPOINTS, [1.0, -1.0, -0.0]]), bs)
            W[2 * bs:3 * bs] *= np.float32(1e-39)           # subnormal values: the 1e-38 guard
        ref = Q.quantize_nf4_ref(W, bs)
        got = Q.quantize_nf4(W, bs)
        assert np.array_equal(got[0], ref[0]), (n, bs)
        assert np.array_equal(got[1].view(np.uint32), ref[1].view(np.uint32)), (n, bs)
        assert np.array_equal(Q.dequantize_nf4(*ref, (n,), bs), Q.dequantize_nf4_ref(*ref, (n,), bs)), (n, bs)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan, -np.nan])
def test_njit_quantize_rejects_non_finite_anywhere(bad):
    "The @njit path finds non-finite values through the blocks' absmax (whole blocks) or directly (the short tail)."
    for bs, n, where in [(64, 64 * 1000, 0), (64, 64 * 1000, 64 * 1000 - 1), (64, 64 * 1000 + 5, 64 * 1000 + 4),
                         (32, 200003, 123457), (48, 48 * 3000, 77777), (2, 10, 9)]:
        W = np.ones(n, np.float32)
        W[where] = bad
        with pytest.raises(ValueError, match="W must be finite"):
            Q.quantize_nf4(W, bs)


@pytest.mark.parametrize("bs", [1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128, 256])
def test_mixed_width_njit_edge_cases_match_reference(bs):
    "Every width mixed, specialised and run-time block lengths, blocks ending inside a byte, zero blocks, exact ties."
    rng = np.random.default_rng(100 + bs)
    for C in sorted({bs, 2 * bs, 3 * bs, bs * (-(-12 // bs)), 4 * bs, 256 // bs * bs or bs, 1024 // bs * bs}):
        R = 13
        bits = np.resize(np.array([1, 2, 4, 4, 2, 1]), R)
        thr, lev = _row_tables(rng, R, bits)
        W = (rng.standard_t(3, size=(R, C)) * 10.0 ** rng.uniform(-20, 20, (R, 1))).astype(np.float32)
        W[0, :bs] = 0                                          # all-zero blocks
        W[R - 1] = 0                                           # an all-zero row
        W[2, :bs] = -0.0
        W[1, :bs] *= np.float32(1e-39)                         # subnormal values: the 1e-38 guard
        # values that normalise exactly onto the row's thresholds (a block whose absmax is 1) and onto +-1
        for r in range(3, R - 1):
            n_thr = (1 << int(bits[r])) - 1
            vals = np.concatenate([thr[r, :n_thr], [1.0, -1.0, 0.0, np.nextafter(thr[r, 0], np.float32(2))]])
            blk = np.resize(vals, bs).astype(np.float32)
            blk[0] = 1.0
            W[r, :bs] = blk
        W[R - 2, -bs:] = np.float32(-3.5)                      # a constant block: every value at -1
        ref = Q.encode_rows_ref(W, bs, bits, thr)
        got = Q.encode_rows(W, bs, bits, thr)
        assert np.array_equal(got[0], ref[0]), (bs, C)
        assert np.array_equal(got[1], ref[1]), (bs, C)
        assert np.array_equal(got[2].view(np.uint32), ref[2].view(np.uint32)), (bs, C)
        D = Q.decode_rows_ref(*ref, bits, lev, bs)
        assert np.array_equal(Q.decode_rows(*ref, bits, lev, bs).view(np.uint32), D.view(np.uint32)), (bs, C)
        buf = np.full((R, C), np.nan, np.float32)
        assert Q.decode_rows(*ref, bits, lev, bs, out=buf) is buf and np.array_equal(buf, D), (bs, C)


@pytest.mark.parametrize("width", [1, 2, 4])
def test_mixed_width_njit_single_width_short_rows_and_many_tasks(width):
    "Rows whose codes do not fill the last byte (C * b not a multiple of 8) and enough rows for several tasks."
    rng = np.random.default_rng(200 + width)
    for R, C, bs in [(3, 12, 12), (4, 12, 4), (2, 3, 3), (5, 10, 5), (1, 1, 1), (40, 2048, 64), (70000 // 64, 64, 32)]:
        bits = np.full(R, width)
        thr, lev = _row_tables(rng, R, bits)
        W = rng.standard_normal((R, C)).astype(np.float32)
        ref = Q.encode_rows_ref(W, bs, bits, thr)
        got = Q.encode_rows(W, bs, bits, thr)
        assert all(np.array_equal(a, b) for a, b in zip(ref, got)), (R, C, bs)
        assert np.array_equal(Q.decode_rows(*got, bits, lev, bs), Q.decode_rows_ref(*ref, bits, lev, bs)), (R, C, bs)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_mixed_width_njit_rejects_non_finite_anywhere(bad):
    "encode_rows finds non-finite values through the blocks' absmax (no separate pass)."
    for R, C, bs, where in [(6, 128, 64, (5, 127)), (6, 128, 64, (0, 0)), (3, 12, 12, (1, 11)), (4, 21, 7, (2, 9))]:
        W = np.ones((R, C), np.float32)
        W[where] = bad
        with pytest.raises(ValueError, match="W must be finite"):
            Q.encode_rows(W, bs, np.resize([1, 2, 4], R), np.zeros((R, 15)))


def test_decode_rows_bad_out():
    W = np.ones((2, 8), np.float32)
    enc = Q.encode_rows(W, 4, [1, 2], np.zeros((2, 3)))
    for out in (np.empty((2, 8), np.float64), np.empty((2, 16), np.float32)[:, ::2], np.empty((8, 2), np.float32)):
        with pytest.raises(ValueError, match="out must be"):
            Q.decode_rows(*enc, [1, 2], np.zeros((2, 4)), 4, out=out)
