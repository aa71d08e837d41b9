"""LowRA chapter library: precision assignment against brute force, the quantised-tensor format, LoRA layers."""
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import torch

from icml25nb.efficient import lowra as L
from icml25nb.kernels import quant as QK


def _cost(E, bits, a):
    return sum(E[c, bits.index(a[c])] for c in range(len(a)))


@pytest.mark.parametrize("bits", [(1, 2, 4), (2, 4), (1, 4)])
def test_assign_precision_matches_brute_force(bits):
    rng = np.random.default_rng(len(bits) * 10 + bits[0])
    for _ in range(60):
        C = int(rng.integers(1, 7))
        E = np.sort(rng.exponential(1.0, (C, len(bits))), axis=1)[:, ::-1] * rng.uniform(0.1, 10, (C, 1))
        n = rng.integers(1, 9, C)
        tb = float(rng.uniform(min(bits), 4))
        budget = math.floor(tb * n.sum() + 1e-9)
        feas = [a for a in itertools.product(bits, repeat=C) if np.dot(n, a) <= budget]
        best = min(_cost(E, bits, a) for a in feas)
        a = L.assign_precision(E, n, tb, "milp", bits)
        assert np.dot(n, a) <= budget
        assert _cost(E, bits, a) == pytest.approx(best, rel=1e-9, abs=1e-12)
        g = L.assign_precision(E, n, tb, "greedy", bits)
        assert np.dot(n, g) <= budget and _cost(E, bits, g) >= best - 1e-9


def test_greedy_is_within_one_upgrade_of_the_ilp_on_many_channels():
    # the hull greedy is optimal for the LP relaxation up to one split upgrade, so its excess over the ILP is at most
    # the largest single-channel error range
    rng = np.random.default_rng(5)
    for target in (1.15, 1.5, 2.0, 3.0):
        E = np.sort(rng.lognormal(0, 1, (400, 3)), axis=1)[:, ::-1]
        n = np.full(400, 256)
        a, g = (L.assign_precision(E, n, target, m) for m in ("milp", "greedy"))
        cm, cg = _cost(E, (1, 2, 4), a), _cost(E, (1, 2, 4), g)
        assert cm <= cg + 1e-9
        assert cg - cm <= (E[:, 0] - E[:, -1]).max()
        assert Fraction(int((n * g).sum()), int(n.sum())) <= Fraction(str(target))


def test_assign_precision_bad_input():
    E, n = np.ones((3, 3)), np.ones(3)
    for kw, msg in [(dict(target_bits=0.9), "target_bits"), (dict(target_bits=4.01), "target_bits"),
                    (dict(target_bits="two"), "target_bits"), (dict(target_bits=2, method="lp"), "method")]:
        with pytest.raises(ValueError, match=msg):
            L.assign_precision(E, n, **kw)
    with pytest.raises(ValueError, match="target_bits"):  # 1.5 bits cannot be met with widths (2, 4)
        L.assign_precision(np.ones((3, 2)), n, 1.5, bits=(2, 4))
    with pytest.raises(ValueError, match="sizes"):
        L.assign_precision(E, [1, 0, 1], 2)
    with pytest.raises(ValueError, match="errors"):
        L.assign_precision(np.full((3, 3), np.nan), n, 2)


def test_quantized_tensor_accounting_and_backends():
    W = L.heavy_tailed_matrix(40, 256, seed=3)
    for method, t in [("nf", 2), ("uniform", 2), ("milp", 1.5), ("greedy", 1.15)]:
        qt = L.quantize(W, t, 64, method)
        code_bytes = int(sum((256 * b + 7) // 8 for b in qt.bits))
        assert qt.packed.nbytes == code_bytes
        table = 4 * 2 ** t if method == "nf" else 2 * int((2 ** qt.bits).sum())
        widths = (2 * 40 + 7) // 8 if method in ("milp", "greedy") else 0
        assert qt.nbytes == code_bytes + 4 * 40 * 4 + table + widths
        assert L.effective_bits(qt, False) <= t + 1e-12
        assert L.effective_bits(qt) == pytest.approx(8 * qt.nbytes / W.size)
        ref = qt.dequantize("numpy")
        np.testing.assert_array_equal(qt.dequantize("njit"), ref)
        np.testing.assert_array_equal(qt.dequantize("cuda"), ref)  # the CUDA simulator under the test suite
        # every dequantised value is a level of its row times its block scale
        row = int(np.argmax(qt.bits))
        vals = ref[row] / np.repeat(qt.absmax[row], 64)
        assert np.isin(np.round(vals, 5), np.round(qt.levels[row, : 2 ** qt.bits[row]], 5)).all()


def test_learned_levels_reduce_the_weighted_error_and_match_reconstruction():
    W = L.heavy_tailed_matrix(64, 512, seed=4)
    cb = L.fit_codebooks(W)
    for k, b in enumerate(cb.bits):
        qt = L.quantize(W, b, method="uniform", codebooks=cb)
        err = ((W.astype(np.float64) - qt.dequantize()) ** 2).sum()
        assert err == pytest.approx(cb.errors[:, k].sum(), rel=1e-4)
    nf, ll = (L.relative_error(W, L.quantize(W, 2, method=m).dequantize()) for m in ("nf", "uniform"))
    assert ll < 0.7 * nf


def test_quantize_bad_input_names_the_argument():
    W = np.ones((4, 128), np.float32)
    with pytest.raises(ValueError, match="W must be finite"):
        L.quantize(np.where(W > 0, np.inf, W))
    with pytest.raises(ValueError, match="blocksize"):
        L.quantize(W, blocksize=96)
    with pytest.raises(ValueError, match="target_bits"):
        L.quantize(W, 0.5)
    with pytest.raises(ValueError, match="W must be a non-empty 2-d"):
        L.quantize(np.ones(128))


def test_quant_lora_linear_trains_only_adapters_and_matches_formula():
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 16)
    layer = L.QuantLoRALinear.from_linear(lin, 1.5, rank=4, alpha=8)
    x = torch.randn(3, 64)
    y = layer(x)
    y.sum().backward()
    assert layer.lora_B.grad is not None and layer.lora_B.grad.abs().sum() > 0
    assert layer.lora_A.grad is not None and layer.lora_A.grad.abs().sum() == 0  # B = 0 at the start
    W = torch.from_numpy(layer.qt.dequantize())
    torch.testing.assert_close(y, x @ W.T + lin.bias)
    ctl = L.QuantLoRALinear(layer.qt, lin.bias.detach(), rank=0)
    assert list(ctl.parameters()) == []
    torch.testing.assert_close(ctl(x), y)


def test_quantize_model_scopes_respect_the_budget():
    from icml25nb.tinylm import TinyLM
    torch.manual_seed(1)
    m = TinyLM(d_model=64, n_layers=1)
    for scope in ("model", "layer"):
        qm = L.quantize_model(m, 1.15, scope=scope)
        assert L.model_bits(qm, False) <= 1.15 + 1e-12
        if scope == "layer":
            assert all(L.effective_bits(q.qt, False) <= 1.15 + 1e-12 for _, q in L.quantized_layers(qm))
        trainable = {n for n, p in qm.named_parameters() if p.requires_grad}
        assert trainable and all("lora_" in n for n in trainable)
        assert isinstance(qm.head, torch.nn.Linear)  # the head is skipped
    with pytest.raises(ValueError, match="no nn.Linear"):
        L.quantize_model(torch.nn.Sequential(torch.nn.ReLU()))


def test_stored_arrays_are_what_is_counted_and_decode_alone():
    W = L.heavy_tailed_matrix(24, 128, seed=5)
    for method, t in [("nf", 1), ("nf", 4), ("uniform", 2), ("milp", 1.5), ("greedy", 2.3)]:
        qt = L.quantize(W, t, 64, method)
        st = qt.stored()
        assert qt.nbytes == sum(a.nbytes for a in st.values())
        np.testing.assert_array_equal(qt.decode_stored(), qt.dequantize())
        assert st["tables"].dtype == (np.float32 if method == "nf" else np.float16)
        if method in ("milp", "greedy"):
            assert qt.nbytes == L.stored_bytes_for(qt.bits, 128)
            assert st["widths"].nbytes == (2 * 24 + 7) // 8
        acct = L.bit_accounting([qt])
        assert acct["total"] == pytest.approx(sum(v for k, v in acct.items() if k != "total"))
        assert acct["scales"] == pytest.approx(0.5)
    # a table that is not stored would not decode: dropping a row's levels breaks decode_stored
    qt = L.quantize(W, 2, 64, "milp")
    qt.levels = qt.levels.copy()
    qt.levels[0, 1] = np.float32(1 / 3)  # not a float16 value: the stored (float16) table rounds it
    assert not np.array_equal(qt.decode_stored(), qt.dequantize())


def test_width_packing_roundtrip():
    rng = np.random.default_rng(0)
    for R in (1, 3, 4, 9):
        b = rng.choice([1, 2, 4], R)
        p = L._pack_widths(b)
        assert p.nbytes == (2 * R + 7) // 8
        np.testing.assert_array_equal(L._unpack_widths(p, R), b)


def test_code_target_for_total_fits_and_is_nearly_the_largest():
    Ws = [L.heavy_tailed_matrix(32, 256, seed=6), L.heavy_tailed_matrix(16, 64, seed=7)]
    cbs = [L.fit_codebooks(W) for W in Ws]
    n = sum(W.size for W in Ws)
    for total in (2.2, 2.6, 3.5):
        t, rbs = L.code_target_for_total(cbs, total)
        qts = [L.quantize(W, t, codebooks=cb, row_bits=rb) for W, cb, rb in zip(Ws, cbs, rbs)]
        assert 8 * sum(q.nbytes for q in qts) <= total * n
        assert L.bits_over_target(qts, total, total=True) <= 0
        # 0.01 more code bits no longer fits (bisection resolution 3/4096)
        E = np.concatenate([cb.errors for cb in cbs]); sizes = np.concatenate([cb.sizes for cb in cbs])
        more = np.split(L.assign_precision(E, sizes, t + 0.01), [32])
        assert 8 * sum(L.stored_bytes_for(b, W.shape[1]) for b, W in zip(more, Ws)) > total * n
    with pytest.raises(ValueError, match="total_bits"):
        L.code_target_for_total(cbs, 1.5)


def test_quantize_model_total_budget():
    from icml25nb.tinylm import TinyLM
    torch.manual_seed(2)
    m = TinyLM(d_model=64, n_layers=1)
    nf2 = L.model_bits(L.quantize_model(m, 2, "nf"))
    qm = L.quantize_model(m, method="milp", total_bits=nf2)
    assert L.model_bits(qm) <= nf2 and L.model_bits(qm, False) > 1
    assert L.bits_over_target(L._model_qts(qm), nf2, total=True) <= 0
    with pytest.raises(ValueError, match="total_bits"):
        L.quantize_model(m, method="nf", total_bits=nf2)


def test_shuffle_widths_keeps_the_bytes_and_only_moves_widths():
    rb = np.array([1] * 20 + [2] * 9 + [4] * 3)
    s = L.shuffle_widths(rb, seed=3, key=1)
    np.testing.assert_array_equal(np.sort(s), np.sort(rb))  # a permutation
    assert not np.array_equal(s, rb)
    np.testing.assert_array_equal(s, L.shuffle_widths(rb, seed=3, key=1))  # seeded
    assert not np.array_equal(s, L.shuffle_widths(rb, seed=4, key=1))
    assert L.stored_bytes_for(s, 128) == L.stored_bytes_for(rb, 128)


def test_quantize_model_shuffled_widths_same_bytes_more_error():
    from icml25nb.tinylm import TinyLM
    torch.manual_seed(3)
    m = TinyLM(d_model=64, n_layers=1)
    for kw in (dict(target_bits=1.15), dict(total_bits=L.model_bits(L.quantize_model(m, 2, "nf")))):
        a = L.quantize_model(m, method="milp", **kw)
        b = L.quantize_model(m, method="milp", shuffle_seed=0, **kw)
        qa, qb = L._model_qts(a), L._model_qts(b)
        assert [q.nbytes for q in qa] == [q.nbytes for q in qb]
        assert any(not np.array_equal(x.bits, y.bits) for x, y in zip(qa, qb))
        for x, y in zip(qa, qb):
            np.testing.assert_array_equal(np.sort(x.bits), np.sort(y.bits))
    with pytest.raises(ValueError, match="shuffle_seed"):
        L.quantize_model(m, 2, "nf", shuffle_seed=0)


def test_shared_lloyd_error_is_between_per_channel_lloyd_and_never_below_it():
    W = L.heavy_tailed_matrix(64, 256, seed=8)
    per_channel = L.relative_error(W, L.quantize(W, 2, method="uniform").dequantize())
    shared = L.shared_lloyd_error([W], 2)
    nf2 = L.relative_error(W, L.quantize(W, 2, method="nf").dequantize())
    # one codebook for all rows cannot beat the per-row optimum (up to Lloyd's local optima and float16 rounding)
    assert per_channel <= shared * (1 + 1e-3)
    assert shared < nf2
    # summed over matrices: error over total energy
    W2 = L.heavy_tailed_matrix(16, 64, seed=9)
    e1, e2 = L.shared_lloyd_error([W], 2), L.shared_lloyd_error([W2], 2)
    n1, n2 = (W.astype(np.float64) ** 2).sum(), (W2.astype(np.float64) ** 2).sum()
    assert L.shared_lloyd_error([W, W2], 2) == pytest.approx((e1 * n1 + e2 * n2) / (n1 + n2), rel=1e-9)
