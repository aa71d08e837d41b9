"""The language-model block (icml25nb.tinylm): corpora with known answers, schedules, generation, the causal mask,
the Hugging Face adapter, and the unchanged behaviour the lowra chapter relies on."""
import copy
import itertools
import math
from functools import partial

import numpy as np
import pytest
import torch

import icml25nb.tinylm as L


# ---------------------------------------------------------------- unchanged behaviour (lowra's results depend on it)

def _old_schedule(steps, warmup):
    "The learning-rate multiplier train_lm used before schedules were shared (copied from the old code)."
    return lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps))


@pytest.mark.parametrize("steps,warmup", [(40, 20), (500, 20), (37, 5), (600, 1)])
def test_default_schedule_is_the_old_one_bit_for_bit(steps, warmup):
    new, old = L._schedule("cosine", steps, warmup), _old_schedule(steps, warmup)
    assert [new(s) for s in range(steps + 1)] == [old(s) for s in range(steps + 1)]


def test_train_lm_default_equals_a_run_with_the_old_scheduler():
    ids = L.markov_corpus(L.markov_chain(8, 1, 1.0), 5000, 500).train
    torch.manual_seed(0)
    m0 = L.TinyLM(16, 1, 2, 8, vocab_size=8)
    m1 = copy.deepcopy(m0)
    a = L.train_lm(m0, ids, steps=12, lr=1e-2, batch_size=4, warmup=3)
    b = L.train_lm(m1, ids, steps=12, lr=1e-2, batch_size=4, warmup=3, schedule=lambda s, h: _old_schedule(h, 3)(s))
    np.testing.assert_array_equal(a, b)
    for p, q in zip(m0.parameters(), m1.parameters()):
        assert torch.equal(p, q)


def test_stdlib_tokenizer_is_encode():
    text = "def f(x):\n\treturn x  # naïve ✓"
    np.testing.assert_array_equal(L.STDLIB_TOKENIZER.encode(text), L.encode(text))
    assert L.decode(L.encode(text)) == "def f(x):\n    return x  # na?ve ?"
    c = L.stdlib_corpus("docs", 5000)
    assert repr(c).startswith("Corpus('docs': 4,500 train / 500 held-out characters,")
    assert c.tokenizer is L.STDLIB_TOKENIZER


def test_perplexity_is_exp_eval_loss():
    c = L.stdlib_corpus("code", 20_000)
    torch.manual_seed(0)
    m = L.TinyLM(16, 1, 2, 16)
    assert L.perplexity(m, c.val, 20) == float(math.exp(L.eval_loss(m, c.val, 20)))


# ---------------------------------------------------------------- Markov corpora

def _brute_entropy_rate(chain, n):
    "H(x_{n+1} | x_1..x_n) by enumerating all sequences of length n + 1, from a stationary start found by dense powers."
    V, k = chain.vocab_size, chain.order
    S = V ** k
    T = np.zeros((S, S))
    for s in range(S):
        for y in range(V):
            T[s, (s * V) % S + y] += chain.P[s, y]
    pi = np.linalg.matrix_power(T, 4096)[0]

    def block_entropy(m):
        "Entropy of m consecutive tokens: sequences of max(m, k) tokens enumerated, marginalised to their first m."
        probs = {}
        for seq in itertools.product(range(V), repeat=max(m, k)):
            s = sum(x * V ** (k - 1 - i) for i, x in enumerate(seq[:k]))
            p = pi[s]
            for y in seq[k:]:
                p *= chain.P[s, y]
                s = (s * V) % S + y
            probs[seq[:m]] = probs.get(seq[:m], 0.0) + p
        return -sum(p * math.log(p) for p in probs.values())

    return block_entropy(n + 1) - block_entropy(n)


@pytest.mark.parametrize("V,order,tau", [(3, 1, 1.0), (3, 2, 0.6), (2, 3, 0.4)])
def test_entropy_rate_against_enumeration(V, order, tau):
    ch = L.markov_chain(V, order, tau, seed=1)
    assert ch.entropy_rate == pytest.approx(_brute_entropy_rate(ch, order + 1), abs=1e-10)
    assert ch.entropy_rate == pytest.approx(_brute_entropy_rate(ch, order), abs=1e-10)
    if order > 1:  # a shorter context is a higher floor
        assert ch.conditional_entropy(order - 1) == pytest.approx(_brute_entropy_rate(ch, order - 1), abs=1e-10)


def test_sample_is_stationary_and_its_loss_is_the_entropy_rate():
    ch = L.markov_chain(6, 2, 0.8, seed=2)
    x = ch.sample(100_000, seed=3)
    assert x.dtype == np.int64 and x.min() >= 0 and x.max() < 6
    st = ch.states(x)
    np.testing.assert_allclose(np.bincount(st, minlength=36) / len(st), ch.pi, atol=0.006)
    terms = -np.log(ch.P[st, x[2:]])
    assert abs(terms.mean() - ch.entropy_rate) < 4 * terms.std() / math.sqrt(len(terms))
    # transition counts match P
    counts = np.zeros((36, 6))
    np.add.at(counts, (st, x[2:]), 1)
    np.testing.assert_allclose(counts / counts.sum(1, keepdims=True), ch.P, atol=0.05)
    np.testing.assert_array_equal(ch.sample(100, seed=3), x[:100])


def test_markov_corpus_and_bad_input():
    ch = L.markov_chain(16, 2, 0.5)
    c = L.markov_corpus(ch, 2000, 500, seed=1)
    assert len(c.train) == 2000 and len(c.val) == 500 and c.tokenizer.vocab_size == 16
    assert c.info["floors"][2] == ch.entropy_rate < c.info["floors"][1] < c.info["floors"][0] <= math.log(16)
    assert not np.array_equal(c.train[:500], c.val)
    with pytest.raises(ValueError, match="temperature"):
        L.markov_chain(temperature=-1)
    with pytest.raises(ValueError, match="vocab_size"):
        L.markov_chain(vocab_size=1)
    with pytest.raises(ValueError, match="irreducible"):
        L.MarkovChain(np.array([[1.0, 0.0], [0.0, 1.0]]), 1)
    with pytest.raises(ValueError, match="rows"):
        L.MarkovChain(np.array([[0.5, 0.6], [0.5, 0.5]]), 1)
    with pytest.raises(TypeError, match="chain"):
        L.markov_corpus("chain")


# ---------------------------------------------------------------- task languages

def test_arithmetic_and_lookup_checkers():
    lines = L.arithmetic_problems(500, max_operand=50, ops="+-*", seed=4)
    assert all(L.check_arithmetic(s) for s in lines)
    for s in lines[:100]:  # any change of the answer is caught
        a, ans = s.rsplit("=", 1)
        assert not L.check_arithmetic(f"{a}={int(ans) + 1}")
    assert L.check_arithmetic("5-7=-2") and not L.check_arithmetic("5-7=2") and not L.check_arithmetic("5-7=")
    lk = L.lookup_problems(300, n_pairs=5, n_keys=8, seed=1)
    assert all(L.check_lookup(s) for s in lk)
    for s in lk[:100]:
        head, v = s.rsplit("=", 1)
        assert not L.check_lookup(f"{head}={(int(v) + 1) % 10}")
    with pytest.raises(ValueError, match="n_pairs"):
        L.lookup_problems(3, n_pairs=5, n_keys=4)
    with pytest.raises(ValueError, match="ops"):
        L.arithmetic_problems(3, ops="/")


def test_step_checker_recovers_injected_errors():
    traces, labels = L.reasoning_traces(1000, n_steps=5, max_operand=20, error_rate=0.15, seed=7)
    assert [L.check_steps(t) for t in traces] == labels
    assert [L.trace_correct(t) for t in traces] == [all(lab) for lab in labels]
    assert 0.3 < np.mean([all(lab) for lab in labels]) < 0.6
    clean, lab = L.reasoning_traces(100, error_rate=0.0)
    assert all(all(x) for x in lab) and all(L.trace_correct(t) for t in clean)
    # a wrong answer after correct steps, a missing step, a step with a wrong operand
    assert not L.trace_correct("1+2+3|1+2=3|3+3=6#7")
    assert L.check_steps("1+2+3|1+2=3") == [True] and not L.trace_correct("1+2+3|1+2=3#3")
    assert L.check_steps("1+2+3|1+2=3|3+4=7#7") == [True, False]
    assert L.check_steps("1+2+3|2+2=4|4+3=7#7") == [False, True]
    with pytest.raises(ValueError, match="trace"):
        L.check_steps("x|1+1=2")


def test_task_corpus_roundtrip():
    for kind in ("arithmetic", "lookup", "reasoning"):
        c = L.task_corpus(kind, 50, 10, seed=3)
        lines = c.tokenizer.decode(c.val).strip("\n").split("\n")
        assert lines == c.info["val_lines"] and len(lines) == 10
    assert L.task_corpus("reasoning", 50, 10, seed=3, n_steps=2).info["val_lines"][0].count("|") == 2


# ---------------------------------------------------------------- schedules

def _wsd_reference(s, H, peak, W, f, final):
    D = round(f * H)
    if s < W:
        return peak * (s + 1) / W
    if s < H - D:
        return peak
    return final + (peak - final) * (1 - (min(s, H) - (H - D)) / D)


@pytest.mark.parametrize("H,W,f,peak,final", [(100, 10, 0.2, 1.0, 0.0), (37, 0, 0.5, 3e-3, 1e-4), (10, 3, 0.7, 2.0, 0.5),
                                              (1000, 50, 0.1, 1.0, 0.0)])
def test_wsd_against_its_definition(H, W, f, peak, final):
    D = round(f * H)
    got = [L.wsd_lr(s, H, peak, W, f, final) for s in range(H + 1)]
    assert got == pytest.approx([_wsd_reference(s, H, peak, W, f, final) for s in range(H + 1)], rel=1e-12, abs=1e-15)
    assert got[H] == pytest.approx(final) and got[H - D] == peak and max(got) == peak
    if W:
        assert got[W - 1] == peak and got[0] == pytest.approx(peak / W)
    assert all(a <= b for a, b in zip(got[:W], got[1:W]))


def test_cosine_and_constant():
    H = 200
    c = [L.cosine_lr(s, H, 2.0, 0, 0.2) for s in range(H + 1)]
    assert c[0] == 2.0 and c[H] == pytest.approx(0.2) and c[H // 2] == pytest.approx(1.1)
    assert all(a >= b for a, b in zip(c, c[1:]))
    assert L.constant_lr(3, H, 0.5, 8) == 0.5 * 4 / 8 and L.constant_lr(150, H, 0.5, 8) == 0.5
    for bad in (dict(step=-1, horizon=H), dict(step=0, horizon=0), dict(step=0, horizon=H, warmup=-1)):
        with pytest.raises(ValueError):
            L.cosine_lr(**bad)
    with pytest.raises(ValueError, match="schedule"):
        L._schedule("step", 10, 0)


def test_train_lm_follows_the_schedule():
    "The optimiser's learning rate at each step is lr times the schedule."
    seen = []

    def sched(s, h):
        seen.append(s)
        return L.wsd_lr(s, h, warmup=2, decay_frac=0.5)

    ids = L.markov_corpus(L.markov_chain(4, 1, 1.0), 2000, 200).train
    L.train_lm(L.TinyLM(8, 1, 2, 4, vocab_size=4), ids, steps=6, lr=0.1, batch_size=2, schedule=sched)
    assert seen == list(range(7))


# ---------------------------------------------------------------- generation

@pytest.fixture(scope="module")
def trained():
    ch = L.markov_chain(8, 2, 0.5, seed=5)
    c = L.markov_corpus(ch, 30_000, 4000)
    torch.manual_seed(0)
    m = L.TinyLM(32, 2, 4, 12, vocab_size=8)
    L.train_lm(m, c.train, steps=60, lr=1e-2, batch_size=32, schedule="wsd")
    return m, c


def test_generate_logprobs_greedy_and_seed(trained):
    m, c = trained
    prompts = torch.as_tensor(np.stack([c.val[i:i + 4] for i in range(0, 400, 50)]))
    for temp in (0.0, 0.7, 1.0, 2.0):
        g = L.generate(m, prompts, 20, temperature=temp, seed=1)  # 4 + 20 > context 12: a sliding window
        full = torch.cat([prompts, g.tokens], 1)
        ref = []
        with torch.no_grad():
            for t in range(4, full.shape[1]):
                ref.append(torch.log_softmax(m(full[:, max(0, t - 12):t])[:, -1], -1))
        ref = torch.stack(ref, 1)
        torch.testing.assert_close(g.logprobs, ref.gather(-1, g.tokens[..., None]).squeeze(-1), rtol=0, atol=1e-5)
        torch.testing.assert_close(L.token_logprobs(m, full)[:, 3:], g.logprobs, rtol=0, atol=1e-5)
        if temp == 0:
            assert torch.equal(g.tokens, ref.argmax(-1))
        else:
            assert torch.equal(g.tokens, L.generate(m, prompts, 20, temperature=temp, seed=1).tokens)
            assert not torch.equal(g.tokens, L.generate(m, prompts, 20, temperature=temp, seed=2).tokens)
    # sampling at temperature 1 follows the model: the empirical next-token law after one prompt matches softmax
    p1 = prompts[:1].expand(4000, -1)
    first = L.generate(m, p1, 1, temperature=1.0, seed=3).tokens[:, 0]
    with torch.no_grad():
        probs = torch.softmax(m(prompts[:1])[0, -1], -1)
    np.testing.assert_allclose(np.bincount(first.numpy(), minlength=8) / 4000, probs.numpy(), atol=0.03)


def test_generate_stop_tokens_and_bad_input(trained):
    m, c = trained
    prompts = [c.val[i:i + 3].tolist() for i in range(0, 60, 10)]
    free = L.generate(m, prompts, 15, temperature=1.0, seed=0)
    stop = {1, 2}
    g = L.generate(m, prompts, 15, temperature=1.0, seed=0, stop_tokens=stop, pad_id=7)
    for r, row in enumerate(free.tokens.tolist()):
        n = next((i + 1 for i, t in enumerate(row) if t in stop), 15)
        assert int(g.lengths[r]) == n and g.tokens[r, :n].tolist() == row[:n]
        assert (g.tokens[r, n:] == 7).all() and (g.logprobs[r, n:] == 0).all()
        assert g.mask[r].sum() == n
    assert g.tokens.shape[1] == int(g.lengths.max())  # stops early once every row is done
    with pytest.raises(ValueError, match="equal length"):
        L.generate(m, [[1, 2, 3], [1]])
    with pytest.raises(ValueError, match="max_new_tokens"):
        L.generate(m, prompts, 0)
    with pytest.raises(ValueError, match="prompts"):
        L.generate(m, torch.zeros(2, 3))


# ---------------------------------------------------------------- the causal mask

class _Leaky(torch.nn.Module):
    "Causal except that position t also sees token t + 1."
    context = 16

    def __init__(self):
        super().__init__()
        self.lm = L.TinyLM(16, 1, 2, 16, vocab_size=8)
        self.emb = torch.nn.Embedding(8, 8)

    def forward(self, idx):
        nxt = torch.cat([idx[:, 1:], idx[:, -1:]], 1)
        return self.lm(idx) + self.emb(nxt)


def test_causal_leak():
    torch.manual_seed(0)
    ids = torch.randint(0, 8, (4, 10))
    assert L.causal_leak(L.TinyLM(16, 2, 2, 16, vocab_size=8), ids) < 1e-5
    assert L.causal_leak(_Leaky(), ids) > 1e-2


# ---------------------------------------------------------------- the Hugging Face adapter

@pytest.fixture(scope="module")
def gpt2():
    GPT2Config, GPT2LMHeadModel = L.import_transformers("GPT2Config", "GPT2LMHeadModel")
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=8, n_positions=12, n_embd=32, n_layer=2, n_head=4, bos_token_id=None,
                     eos_token_id=None, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return L.hf_causal_lm(GPT2LMHeadModel(cfg))


def test_adapter_runs_the_block(gpt2):
    m = copy.deepcopy(gpt2)
    assert m.context == 12 and m.vocab_size == 8
    c = L.markov_corpus(L.markov_chain(8, 2, 0.5, seed=5), 30_000, 3000)
    ids = torch.as_tensor(c.val[:24].reshape(2, 12))
    torch.testing.assert_close(m(ids), m.model(input_ids=ids).logits)
    before = L.eval_loss(m, c.val)
    losses = L.train_lm(m, c.train, steps=40, lr=1e-2, batch_size=16, schedule="wsd")
    after = L.eval_loss(m, c.val)
    assert np.isfinite(losses).all() and after < before - 0.1
    assert L.perplexity(m, c.val) == pytest.approx(math.exp(after))
    assert any(not torch.equal(p, q) for p, q in zip(m.parameters(), gpt2.parameters()))
    prompts = ids[:, :5]
    g = L.generate(m, prompts, 7, temperature=1.0, seed=0)
    full = torch.cat([prompts, g.tokens], 1)
    torch.testing.assert_close(g.logprobs, L.token_logprobs(m, full)[:, 4:], rtol=0, atol=1e-5)
    with torch.no_grad():
        lp = torch.log_softmax(m(full[:, :-1]), -1)[:, 4:]
    torch.testing.assert_close(g.logprobs, lp.gather(-1, g.tokens[..., None]).squeeze(-1), rtol=0, atol=1e-5)
    gg = L.generate(m, prompts, 6)
    with torch.no_grad():
        assert torch.equal(gg.tokens, m(torch.cat([prompts, gg.tokens], 1)[:, :-1])[:, 4:].argmax(-1))
    with pytest.raises(ValueError, match="context"):
        m(torch.zeros(1, 13, dtype=torch.long))


def test_adapter_is_causal(gpt2):
    torch.manual_seed(1)
    assert L.causal_leak(gpt2, torch.randint(0, 8, (3, 12))) < 1e-5


def test_adapter_rejects_other_models():
    with pytest.raises(TypeError, match="PreTrainedModel"):
        L.hf_causal_lm(L.TinyLM())


def test_context_is_required():
    class NoContext(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.e = torch.nn.Embedding(4, 4)

        def forward(self, idx):
            return self.e(idx)

    ids = np.arange(100) % 4
    with pytest.raises(TypeError, match="context="):
        L.eval_loss(NoContext(), ids)
    assert L.eval_loss(NoContext(), ids, context=8) > 0  # an explicit window works
    L.train_lm(NoContext(), ids, steps=2, context=8)


# ---------------------------------------------------------------- benchmark format

def test_benchmark_small():
    res = L.benchmark("small", repeat=1)
    assert {"kernel", "task", "seconds", "reference", "values", "ratios"} <= res.keys()
    assert res["reference"] in res["seconds"] and res["kernel"] == "tinylm"
    assert res["floor_nats"] == pytest.approx(L.markov_chain(16, 2, 0.5).entropy_rate)
    assert res["gap_per_seed"][0] == pytest.approx(res["val_loss_per_seed"][0] - res["floor_nats"])
    assert res["floor_nats"] < res["val_loss_per_seed"][0] < res["one_token_floor_nats"]
    with pytest.raises(ValueError, match="size"):
        L.benchmark("huge")


class _Oracle(torch.nn.Module):
    "The order-2 chain itself as a model: logits log P(. | x_{t-1}, x_t) (uniform at t = 0)."

    def __init__(self, chain, context):
        super().__init__()
        self.chain, self.context = chain, context
        self.dummy = torch.nn.Parameter(torch.zeros(1))

    def forward(self, idx):
        V = self.chain.vocab_size
        logP = torch.as_tensor(np.log(self.chain.P), dtype=torch.float64)
        s = idx[:, :-1] * V + idx[:, 1:]
        out = torch.zeros(*idx.shape, V, dtype=torch.float64)
        out[:, 1:] = logP[s]
        return out


def test_eval_loss_of_the_chain_itself_is_its_loss_on_those_tokens():
    ch = L.markov_chain(6, 2, 0.6, seed=8)
    val = ch.sample(5000, seed=1)
    oracle = _Oracle(ch, 16)
    assert L.eval_loss(oracle, val, 10_000, min_context=2) == pytest.approx(L._chain_loss(ch, val, 16), abs=1e-12)
    assert L.eval_loss(oracle, val, 10_000, min_context=2) == pytest.approx(ch.entropy_rate, abs=0.05)
    # counting the first prediction of each window (one token of context) costs more
    assert L.eval_loss(oracle, val, 10_000) > L.eval_loss(oracle, val, 10_000, min_context=2)
