"""Reliability (fuzz) suite over the public API of the blocks tinylm, pareto, control and graphdata (issue 49).

Every public entry point, on any input, returns the reference's answer (brute-force dominance and moocore for pareto,
networkx for graphdata, direct formulas for tinylm and control; the valid call's answer for equivalent inputs:
float32, int, non-contiguous, lists) or raises a one-line ValueError/TypeError that names the argument; it never
crashes, hangs, starts a run that cannot fit, or returns NaN. The first part replays each defect of the issue (each
test failed before its fix); the table below sends hostile values (`BAD_NUMBERS`, `HUGE_SIZES`, wrong types and
shapes) to every argument; the hypothesis properties draw random shapes, dtypes and values. Small sizes throughout:
the file runs in well under a minute on one core.
"""
from __future__ import annotations

import itertools
import warnings

import moocore
import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings, strategies as st
from hypothesis.extra import numpy as hnp
from networkx.algorithms.isomorphism import GraphMatcher

from fuzzutil import BAD_NUMBERS, HUGE_SIZES, assert_refused, non_contiguous, outcome, refuses_each, same
from icml25nb import control as C
from icml25nb import graphdata as gd
from icml25nb import pareto as PA
from icml25nb import tinylm as tl

NAN, INF = float("nan"), float("inf")
BAD_INT = BAD_NUMBERS + (1.5, -1)
BAD_FLOAT = BAD_NUMBERS  # nan, +-inf, "3", None, True, 1j


# ----------------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def chain():
    return tl.markov_chain(4, 1, 1.0, seed=0)


@pytest.fixture(scope="module")
def lm():
    torch.manual_seed(0)
    return tl.TinyLM(8, 1, 2, 8, vocab_size=4)


@pytest.fixture(scope="module")
def ids(chain):
    return chain.sample(200, seed=1)


@pytest.fixture(scope="module")
def dataset():
    buf = C.ReplayBuffer(3, 1, 64)
    rng = np.random.default_rng(0)
    buf.add(rng.standard_normal((64, 3)), rng.uniform(-1, 1, (64, 1)), rng.standard_normal(64),
            rng.standard_normal((64, 3)), np.zeros(64))
    return buf


def _agent(cls=None, **kw):
    return (cls or C.TD3)(3, 1, hidden=(8,), seed=0, **kw)


# ------------------------------------------------------------------------------------- the issue's defects, replayed
def test_markov_ids_outside_the_vocabulary_are_refused(chain):
    "Before: nll([0, 1, -1, 2]) wrapped -1 to the last row (a wrong loss) and 7 raised IndexError; states aliased."
    for bad in ([0, 1, -1, 2], [0, 1, 7, 2], [0, 1.5, 2]):
        assert_refused(chain.nll, bad, name="ids")
        assert_refused(chain.states, bad, name="ids")
    assert chain.states([1, 2]).tolist() == [1]
    assert np.isfinite(chain.nll([0, 1, 2, 3]))


def test_batch_size_zero_is_refused(lm, ids, dataset):
    "Before: train_lm and train_offline with batch_size=0 gave NaN losses and trained nothing; eval_loss a range() error."
    before = [p.detach().clone() for p in lm.parameters()]
    assert_refused(tl.train_lm, lm, ids, steps=2, batch_size=0, name="batch_size")
    assert all(torch.equal(a, b) for a, b in zip(before, lm.parameters()))
    assert_refused(tl.eval_loss, lm, ids, batch_size=0, name="batch_size")
    assert_refused(C.train_offline, _agent(), dataset, 2, batch_size=0, name="batch_size")
    assert_refused(dataset.sample, 0, np.random.default_rng(0), name="batch_size")


def test_wsd_without_a_decay_phase(lm, ids):
    "Before: decay_frac=0 (allowed by its own check) raised ZeroDivisionError at the last step of train_lm."
    assert tl.wsd_lr(10, 10, decay_frac=0) == 0.0 and tl.wsd_lr(9, 10, decay_frac=0) == 1.0
    assert tl.wsd_lr(99, 100, decay_frac=0.001, final=0.1) == 1.0  # 0.1 decay steps round to none
    sched = lambda s, h: tl.wsd_lr(s, h, warmup=1, decay_frac=0)
    losses = tl.train_lm(lm, ids, steps=3, batch_size=2, schedule=sched)
    assert np.isfinite(losses).all()
    for s in range(12):  # with a decay phase the values are as before
        assert tl.wsd_lr(s, 10, decay_frac=0.3) == (1.0 if s < 7 else 1.0 - min(s - 7, 3) / 3)


def test_reducible_chain_is_a_value_error():
    "Before: MarkovChain(eye(3)) raised SuperLU's RuntimeError instead of the intended 'irreducible chain' ValueError."
    assert_refused(tl.MarkovChain, np.eye(3), 1, name="P")
    with pytest.raises(ValueError, match="irreducible"):
        tl.MarkovChain(np.eye(3), 1)


def test_one_line_errors_of_the_issue():
    "Before: a range() error, 'high is out of bounds for int64', 'could not convert string to float', a 1e12-node tree."
    lm = tl.TinyLM(8, 1, 2, 8, vocab_size=4)
    assert_refused(tl.eval_loss, lm, np.arange(40) % 4, batch_size=0, name="batch_size")
    assert_refused(tl.arithmetic_problems, 3, max_operand=2**63, name="max_operand")
    assert_refused(C.PointMassEnv, force="x", name="force")
    assert_refused(C.PointMassEnv, force="3", name="force")  # before: accepted as 3.0
    assert_refused(PA.SyntheticTree, depth=40, branching=10, name="depth")
    assert_refused(PA.SyntheticTree, depth=40, branching=10, name="branching")


@pytest.mark.parametrize("call,name", [
    (lambda: gd.sbm_graph(n=10**12), "n"), (lambda: gd.sbm_graph(n=1e12), "n"),
    (lambda: gd.sbm_graph(n=20000, n_classes=20000), "n"), (lambda: gd.sbm_graph(n=4000, n_classes=2000, avg_degree=1.0, homophily=0.0), "n_classes"),
    (lambda: gd.sbm_probabilities(10**12, 10**12, 1.0, 0.0), None),  # O(1) arithmetic now (was a 1e12 list)
    (lambda: gd.motif("clique100000"), "motif"), (lambda: gd.motif("cycle" + "9" * 5000), "motif"),
    (lambda: gd.role_graph("house", repeats=10**5), "repeats"), (lambda: gd.role_graph("house", 3, 10**6), "spacing"),
    (lambda: gd.motif_graph(10**9), "n_base"), (lambda: gd.motif_graph(10, {"house": 10**9}), "motifs"),
    (lambda: gd.class_features([0, 1], dim=10**12), "dim"),
    (lambda: tl.markov_chain(2, 10**12), "order"), (lambda: tl.MarkovChain(np.full((2, 2), 0.5), 10**12), "P"),
    (lambda: PA.SyntheticTree(depth=10**9), "depth"), (lambda: PA.MCTree(2, 10**12), "capacity"),
    (lambda: C.ReplayBuffer(3, 1, 10**12), "capacity"), (lambda: C.PointMassVecEnv(10**12), "num_envs"),
    (lambda: tl.TinyLM(vocab_size=10**12), "vocab_size"), (lambda: tl.arithmetic_problems(10**12), "n"),
])
def test_sizes_that_cannot_fit_are_refused_up_front(call, name):
    "Before: each of these ran for minutes (or until killed); now a one-line error within a second."
    kind, val = outcome(call, timeout=30)
    if name is None:
        assert kind == "ok"
    else:
        assert kind == "refused" and name in str(val), val


# ------------------------------------------------------------------------------- defects found beyond the issue
def test_beyond_the_list():
    "Each of these failed before (see the comment): a NaN, a hang, a crash or an unnamed error."
    lm = tl.TinyLM(8, 1, 2, 8, vocab_size=4)
    # NaN loss: min_context beyond the window selected no prediction
    assert_refused(tl.lm_loss, lm, torch.zeros(2, 5, dtype=torch.long), 9, name="min_context")
    # IndexError deep in the embedding: ids >= the model's vocabulary
    assert_refused(tl.train_lm, lm, np.arange(40) % 7, steps=1, name="ids")
    assert_refused(lm, torch.tensor([[0, 5]]), name="idx")
    assert_refused(tl.generate, lm, [[0, 9]], 2, name="prompts")
    # RuntimeError 'probability tensor contains inf/nan': a tiny temperature overflowed the logits
    g = tl.generate(lm, [[1, 2]], 3, temperature=1e-300)
    assert g.tokens.shape == (1, 3) and torch.isfinite(g.logprobs).all()
    assert torch.equal(g.tokens, tl.generate(lm, [[1, 2]], 3).tokens)  # the limit is greedy decoding
    # a hang: V ** order with order = 1e12; a NaN matrix reported as a bad P instead of the temperature
    assert_refused(tl.markov_chain, 4, 1, 1e-310, name="temperature")
    # ValueError 'Exceeds the limit (4300 digits)' without the argument's name
    assert_refused(tl.check_arithmetic, "1" * 5000 + "+1=2", name="line")
    assert_refused(tl.check_steps, "1" * 5000 + "+1|1+1=2#2", name="trace")
    # Block(8, 0): built, then ZeroDivisionError in forward; TinyLM(vocab_size=0): an index_select RuntimeError
    assert_refused(tl.Block, 8, 0, name="n_heads")
    assert_refused(tl.TinyLM, 8, 1, 2, 8, vocab_size=0, name="vocab_size")
    # OverflowError: math.exp of a loss above 709 nats
    big = tl.TinyLM(8, 1, 2, 8, vocab_size=4)
    with torch.no_grad():
        big.head.bias.copy_(torch.tensor([0.0, 0.0, 0.0, 2000.0]))
    assert tl.perplexity(big, np.zeros(40, np.int64)) == float("inf")
    # NaN: a custom schedule returning NaN trained the model to NaN
    assert_refused(tl.train_lm, lm, np.arange(40) % 4, steps=2, schedule=lambda s, h: NAN, name="schedule")
    # pareto: children(-1) read the last slot (wrap-around), path(5) of a 3-node tree returned [5]
    t = PA.MCTree(2)
    t.add_root(0)
    t.expand(0, [1, 2], [False, False])
    assert_refused(t.children, -1, name="node")
    assert_refused(t.path, 5, name="node")
    # NaN scores: uct_scores / pareto_ucb_vectors with an unvisited child (0 / 0)
    t.backprop(1, np.ones(2))
    assert_refused(PA.uct_scores, t, 0, [1, 1], 1.0, name="node")
    assert_refused(PA.pareto_ucb_vectors, t, 0, 1.0, name="node")
    # SyntheticTree.reward of an internal state wrapped to another leaf's reward
    env = PA.SyntheticTree(2, 2)
    assert_refused(env.reward, 0, name="state")
    assert_refused(env.step, 0, 2, name="action")
    # keep_duplicates="no" was truthy
    assert_refused(PA.nondominated_mask, [[1.0, 2.0]], "no", name="keep_duplicates")
    # control: NaN observations gave NaN actions; a NaN transition in the buffer made every update NaN
    a = _agent()
    assert_refused(a.act, [NAN, 0.0, 0.0], name="obs")
    assert_refused(C.ReplayBuffer(3, 1, 4).add, [NAN, 0, 0], [0.0], 1.0, [0, 0, 0], 0.0, name="obs")
    # an empty batch gave NaN losses
    empty = C.Batch(np.zeros((0, 3)), np.zeros((0, 1)), np.zeros(0), np.zeros((0, 3)), np.zeros(0))
    assert_refused(a.update, empty, name="batch")
    # a policy returning NaN actions gave NaN returns (non-PointMass envs) instead of an error
    env = C.make_env("Pendulum-v1")
    assert_refused(C.evaluate, lambda obs: np.full(1, NAN), env, 1, name="policy")
    # train(buffer_size=0) named 'capacity', an argument the caller never passed
    assert_refused(C.train, a, C.PointMassEnv(dim=1), 5, buffer_size=0, name="buffer_size")
    # graphdata: a string homophily / avg_degree gave "could not convert string to float"
    assert_refused(gd.sbm_probabilities, 10, 2, "8", 0.5, name="avg_degree")
    assert_refused(gd.sbm_probabilities, 10, 2, 2.0, "x", name="homophily")
    # linear_probe(C=0): sklearn's multi-line InvalidParameterError
    assert_refused(gd.linear_probe, np.eye(8), [0, 1] * 4, C=0, name="C")


def test_checks_change_no_result_on_valid_input(chain, ids):
    "The same answers as the formulas (and, for SyntheticTree, as the node-by-node loop it replaced)."
    s = chain.states(ids)
    assert s.tolist() == ids[:-1].tolist()
    assert chain.nll(ids) == pytest.approx(float(-np.log(chain.P[ids[:-1], ids[1:]]).mean()), rel=1e-15)
    env = PA.SyntheticTree(depth=4, branching=3, n_obj=2, seed=5)
    rng = np.random.default_rng(np.random.SeedSequence(5))
    b, n = 3, env.n_internal + len(env.leaf_rewards)
    g = np.abs(rng.standard_normal((n, 2)))
    edge = g / np.linalg.norm(g, axis=1, keepdims=True) * rng.uniform(0.6, 1.0, (n, 1))
    acc = np.zeros((n, 2))
    for i in range(1, n):
        acc[i] = acc[(i - 1) // b] + edge[i]
    np.testing.assert_array_equal(env.leaf_rewards, acc[env.n_internal:] / 4)


# -------------------------------------------------------------------------------- hostile values, argument by argument
def _rooted():
    t = PA.MCTree(2)
    t.add_root(0)
    return t


def _tables(chain, lm, ids, dataset):
    "(function, good kwargs, {argument: bad values}) for every public function and method of the four blocks."
    G = nx.path_graph(4)
    t = PA.MCTree(2)
    t.add_root(0)
    t.expand(0, [1, 2], [False, False])
    for v in (1, 2):
        t.backprop(v, np.ones(2))
    env1, venv = C.PointMassEnv(dim=2), C.PointMassVecEnv(2, dim=2)
    env1.reset(seed=0)
    venv.reset(seed=0)
    agent, sac, td3bc = _agent(), _agent(C.SAC), _agent(C.TD3BC)
    rng = np.random.default_rng(0)
    batch = dataset.sample(4, rng)
    Y = [[1.0, 2.0], [2.0, 1.0]]
    tiny_env = C.PointMassEnv(dim=1, horizon=3)
    bad_ids = [[-1, 0, 1], [0, 1, 9], [0.5, 1, 2], "abc", [[0, 1], [1, 2]]]
    return [
        # ------------------------------------------------------------------------------------------------ tinylm
        (tl.markov_chain, dict(vocab_size=3, order=1), dict(vocab_size=BAD_INT + HUGE_SIZES + (1,),
                                                            order=BAD_INT + HUGE_SIZES + (0, 19),
                                                            temperature=BAD_FLOAT + (0, -1.0, 1e-320),
                                                            seed=BAD_INT + (2**64,))),
        (tl.MarkovChain, dict(P=np.full((2, 2), 0.5), order=1),
         dict(P=[np.eye(3), [[NAN, 1.0], [0.5, 0.5]], "ab", [[0.5, 0.6], [0.5, 0.5]], np.zeros((0, 0)), [[1j, 1]],
                 np.full((3, 2), 0.5)], order=BAD_INT + HUGE_SIZES + (0,))),
        (chain.sample, dict(n=10), dict(n=BAD_INT + HUGE_SIZES + (0,), seed=(-1, "a"), stream=(-1, "a", 1.5))),
        (chain.conditional_entropy, dict(j=1), dict(j=BAD_INT + (2,))),
        (tl.markov_corpus, dict(chain=chain, n_train=10, n_val=10),
         dict(chain=("x", None), n_train=BAD_INT + HUGE_SIZES + (0,), n_val=BAD_INT + HUGE_SIZES, seed=(-1,))),
        (tl.arithmetic_problems, dict(n=3), dict(n=BAD_INT + HUGE_SIZES + (0,), max_operand=BAD_INT + (2**63, 10**30, 0),
                                                  ops=("", "/", 5, None, ["+"]), seed=(-1, "1"))),
        (tl.lookup_problems, dict(n=3), dict(n=BAD_INT + HUGE_SIZES + (0,), n_pairs=BAD_INT + (0, 11),
                                              n_keys=BAD_INT + (27, 0, 3))),
        (tl.reasoning_traces, dict(n=3), dict(n=BAD_INT + HUGE_SIZES, n_steps=BAD_INT + HUGE_SIZES + (0,),
                                               max_operand=BAD_INT + (2**63,), error_rate=BAD_FLOAT + (-0.1, 1.5))),
        (tl.task_corpus, dict(kind="arithmetic", n_train=5, n_val=5),
         dict(kind=("x", ["arithmetic"], None), n_train=BAD_INT + HUGE_SIZES + (0,), n_val=BAD_INT + HUGE_SIZES)),
        (tl.stdlib_corpus, dict(), dict(kind=("x", None, ["code"]), max_chars=BAD_INT + (999,),
                                        val_frac=BAD_FLOAT + (0, 0.5, -1))),
        (tl.check_arithmetic, dict(line="1+1=2"), dict(line=(5, None, b"1+1=2", "9" * 4500 + "+1=1"))),
        (tl.check_lookup, dict(line="a=1?a=1"), dict(line=(5, None))),
        (tl.check_steps, dict(trace="1+1|1+1=2#2"), dict(trace=(5, None, "9" * 4500 + "+1|1+1=2#2"))),
        (tl.trace_correct, dict(trace="1+1|1+1=2#2"), dict(trace=(5, None))),
        (tl.encode, dict(text="ab"), dict(text=(5, None, b"ab"))),
        (tl.decode, dict(ids=[1, 2]), dict(ids=([-1], [10**6], [1.5], "ab", [NAN], None))),
        (tl.TASK_TOKENIZER.decode, dict(ids=[1, 2]), dict(ids=([-1], [99], [1.5]))),
        (tl.CharTokenizer, dict(chars="ab"), dict(chars=("", "aa", 5, None), unknown=("z",))),
        (tl.Block, dict(d_model=8, n_heads=2), dict(d_model=BAD_INT + HUGE_SIZES + (0,), n_heads=BAD_INT + (0, 3),
                                                     mlp_ratio=BAD_INT + HUGE_SIZES + (0,))),
        (tl.TinyLM, dict(d_model=8, n_layers=1, n_heads=2, context=8, vocab_size=4),
         dict(d_model=BAD_INT + HUGE_SIZES, n_layers=BAD_INT + HUGE_SIZES + (0,), n_heads=BAD_INT + (3, 0),
              context=BAD_INT + HUGE_SIZES + (0,), vocab_size=BAD_INT + HUGE_SIZES + (0,))),
        (tl.constant_lr, dict(step=1, horizon=10), dict(step=BAD_INT, horizon=BAD_INT + (0,), warmup=BAD_INT,
                                                        peak=BAD_FLOAT)),
        (tl.cosine_lr, dict(step=1, horizon=10), dict(step=BAD_INT, horizon=BAD_INT + (0,), warmup=BAD_INT,
                                                      peak=BAD_FLOAT, final=BAD_FLOAT)),
        (tl.wsd_lr, dict(step=1, horizon=10), dict(step=BAD_INT, horizon=BAD_INT + (0,), warmup=BAD_INT + (11,),
                                                   peak=BAD_FLOAT, final=BAD_FLOAT,
                                                   decay_frac=BAD_FLOAT + (-0.1, 1.1), decay=("x", None, ["linear"]))),
        (tl.lm_loss, dict(model=lm, batch=torch.zeros(2, 5, dtype=torch.long)),
         dict(batch=(torch.zeros(2, 5), torch.zeros(0, 5, dtype=torch.long), torch.zeros(2, 1, dtype=torch.long),
                     np.zeros((2, 5), np.int64), torch.full((2, 5), 7)), min_context=BAD_INT + (0, 5))),
        (tl.train_lm, dict(model=lm, ids=ids, steps=1, batch_size=2),
         dict(model=(None, "m"), ids=bad_ids + [ids[:5]], steps=BAD_INT + HUGE_SIZES + (0,),
              lr=BAD_FLOAT + (0, -1.0), batch_size=BAD_INT + HUGE_SIZES + (0,), weight_decay=BAD_FLOAT + (-1.0,),
              warmup=BAD_INT, seed=(-1, 2**64), schedule=("x", 5, lambda s, h: -1.0), context=(0, -1, 1.5, "3", NAN, 9))),
        (tl.eval_loss, dict(model=lm, ids=ids), dict(ids=bad_ids + [ids[:5]], max_windows=BAD_INT + (0,),
                                                     batch_size=BAD_INT + (0,), min_context=BAD_INT + (0, 9),
                                                     context=(0, -1, 1.5, "3", NAN, 9))),
        (tl.perplexity, dict(model=lm, ids=ids), dict(ids=bad_ids, max_windows=(0, NAN), batch_size=(0, "3"))),
        (tl.token_logprobs, dict(model=lm, ids=[[0, 1, 2]]), dict(ids=([[0, 9]], [[-1, 0]], [[0.5, 1.0]], [[1]],
                                                                      "ab"), context=(0, NAN))),
        (tl.causal_leak, dict(model=lm, ids=[[0, 1, 2]]), dict(ids=([[0, 9]], [[-1, 0]], [[1]]), seed=(-1, "a"))),
        (tl.generate, dict(model=lm, prompts=[[0, 1]], max_new_tokens=2),
         dict(prompts=([[0, 9]], [[-1, 0]], [[0.5]], np.zeros((1, 0), np.int64), "ab"),
              max_new_tokens=BAD_INT + HUGE_SIZES + (0,), temperature=BAD_FLOAT + (-1.0,),
              stop_tokens=("a", [-1], [99], [1.5], 5), pad_id=(NAN, "3", None, True, 1.5, 2**63), seed=(-1,), context=(0,))),
        (tl.benchmark, dict(size="small"), dict(size=("x", None, ["small"]), repeat=BAD_INT + (10**6,))),
        # ------------------------------------------------------------------------------------------------ pareto
        (PA.as_minimised, dict(Y=Y), dict(Y=("abc", [[NAN, 1.0]], [1.0, 2.0], [[1j, 1]], np.zeros((2, 0)), None,
                                              [[1, 2], [3]]), maximise=("yes", [True] * 3, 2, None))),
        (PA.nondominated_mask, dict(Y=Y), dict(Y=([[NAN, 1.0]], "ab", [1.0]), keep_duplicates=("no", 2, None, 0.5),
                                               maximise=("yes", [True] * 3))),
        (PA.pareto_rank, dict(Y=Y), dict(Y=([[NAN, 1.0]], "ab", [1.0], None), maximise=("yes", 2))),
        (PA.pareto_fronts, dict(Y=Y), dict(Y=([[NAN, 1.0]], "ab"), maximise=("yes",))),
        (PA.hypervolume, dict(Y=Y, ref=[3.0, 3.0]), dict(Y=([[NAN, 1.0]], [[INF, 1.0]], "ab", [1.0]),
                                                         ref=(NAN, INF, "3", [1.0, 2.0, 3.0], None, [NAN, 1.0]),
                                                         maximise=("yes",))),
        *[(f, dict(A=Y, R=Y), dict(A=([[NAN, 1.0]], [[INF, 1.0]], np.zeros((0, 2)), [[1.0, 2.0, 3.0]], "ab"),
                                   R=([[NAN, 1.0]], [[1.0, -INF]], np.zeros((0, 2)), [1.0, 2.0]), maximise=("x",)))
          for f in (PA.epsilon_additive, PA.igd, PA.igd_plus)],
        (PA.MCTree, dict(n_obj=2), dict(n_obj=BAD_INT + HUGE_SIZES + (0,), capacity=BAD_INT + HUGE_SIZES + (0,))),
        (t.children, dict(node=0), dict(node=BAD_INT + (3, 10**6))),
        (t.path, dict(node=1), dict(node=BAD_INT + (3,))),
        (t.mean, dict(nodes=[0, 1]), dict(nodes=([-1], [3], [0.5], "a", -1, 3))),
        (_rooted().backprop, dict(node=0, reward=[1.0, 1.0]), dict(node=(-1, 1, 0.5), reward=([NAN, 1.0], [1.0], "ab"))),
        (t.expand, dict(node=1, states=[5], terminal=[True]),
         dict(node=BAD_INT + (0, 3), states=("ab", 5, []), terminal=([True, False], 5))),
        (PA.uct_scores, dict(tree=t, node=0, weights=[1.0, 1.0], c=1.0),
         dict(tree=(None,), node=BAD_INT + (3,), weights=([1.0], "ab", [NAN, 1.0]), c=BAD_FLOAT + (-1.0,))),
        (PA.uct_select, dict(tree=t, node=0, weights=[1.0, 1.0], c=1.0, rng=rng),
         dict(tree=(None,), node=(-1, 3, 1), rng=(None, 0, "x"))),
        (PA.pareto_ucb_vectors, dict(tree=t, node=0, c=1.0), dict(tree=(None,), node=(-1, 3), c=BAD_FLOAT + (-1.0,))),
        (PA.pareto_ucb_select, dict(tree=t, node=0, c=1.0, rng=rng), dict(tree=(None,), node=(-1, 3, 1),
                                                                          rng=(None, 0), c=(NAN, -1.0))),
        (PA.choose_pareto, dict(U=Y, rng=rng), dict(U=(np.zeros((0, 2)), [[NAN, 1.0]], "ab"), rng=(None, 0))),
        (PA.MCTS, dict(env=PA.SyntheticTree(2, 2), n_obj=2),
         dict(env=(object(), None), n_obj=BAD_INT + HUGE_SIZES + (0,), rule=("x", None, ["pareto"]),
              c=BAD_FLOAT + (-1.0,), seed=(-1, 2**64), capacity=BAD_INT + HUGE_SIZES + (0,))),
        (PA.MCTS(PA.SyntheticTree(2, 2), 2, "scalar", weights=[1, 1]).run, dict(n_iter=1), dict(n_iter=BAD_INT)),
        (PA.MCTS, dict(env=PA.SyntheticTree(2, 2), n_obj=2, rule="scalar", weights=[1.0, 1.0]),
         dict(weights=(None, [1.0], [NAN, 1.0], [-1.0, 1.0], "ab", [1j, 1]))),
        (PA.SyntheticTree, dict(), dict(depth=BAD_INT + HUGE_SIZES + (0,), branching=BAD_INT + HUGE_SIZES + (1,),
                                        n_obj=BAD_INT + HUGE_SIZES + (0,), seed=(-1,))),
        (PA.SyntheticTree(2, 2).reward, dict(state=3), dict(state=BAD_INT + (0, 7))),
        (PA.SyntheticTree(2, 2).step, dict(state=0, action=1), dict(state=BAD_INT + (3, 7), action=BAD_INT + (2,))),
        (PA.SyntheticTree(2, 2).n_actions, dict(state=0), dict(state=BAD_INT + (7,))),
        (PA.plot_fronts, dict(Y=Y), dict(Y=([[1.0, 2.0, 3.0]], np.zeros((0, 2)), [[NAN, 1.0]]),
                                         max_fronts=BAD_INT + (0,), ref=(NAN, [1.0]))),
        # ----------------------------------------------------------------------------------------------- control
        (C.PointMassEnv, dict(), dict(dim=BAD_INT + HUGE_SIZES + (0,), horizon=BAD_INT + (0,),
                                      dt=BAD_FLOAT + (0, -1.0, 2.0), force=BAD_FLOAT + (0, -1.0, "x"),
                                      damping=BAD_FLOAT + (-1.0, 20.0), ctrl_cost=BAD_FLOAT + (-1.0,))),
        (C.PointMassVecEnv, dict(num_envs=2), dict(num_envs=BAD_INT + HUGE_SIZES + (0,), dim=BAD_INT + HUGE_SIZES,
                                                   force=BAD_FLOAT)),
        (env1.step, dict(action=[0.0, 0.0]), dict(action=("a", [NAN, 0.0], [1.0, 2.0, 3.0], None, [INF, 0.0]))),
        (venv.step, dict(actions=np.zeros((2, 2))), dict(actions=(np.zeros((2, 3)), np.full((2, 2), NAN), "a",
                                                                  np.zeros(4)))),
        (C.make_env, dict(name="PointMass"), dict(name=(5, "NoSuchEnv-v9", None), num_envs=(0, -1, 1.5, "3", NAN, True))),
        (C.ReplayBuffer, dict(obs_dim=3, act_dim=1), dict(obs_dim=BAD_INT + HUGE_SIZES + (0,),
                                                          act_dim=BAD_INT + HUGE_SIZES + (0,),
                                                          capacity=BAD_INT + HUGE_SIZES + (0,))),
        (C.ReplayBuffer(3, 1, 8).add, dict(obs=[0.0] * 3, act=[0.0], rew=0.0, next_obs=[0.0] * 3, done=0.0),
         dict(obs=([NAN, 0, 0], "abc", [0.0] * 4, 1.0), act=([NAN], [0.0, 0.0], "a"), rew=(NAN, [0.0, 1.0], "a"),
              next_obs=([INF, 0, 0], [0.0] * 2), done=([0, 1], NAN))),
        (dataset.sample, dict(batch_size=2, rng=rng), dict(batch_size=BAD_INT + HUGE_SIZES + (0,), rng=(None, 0, "x"))),
        (C.mlp, dict(sizes=[3, 4]), dict(sizes=("ab", 5, [3, 0], [3, 1.5], [10**7, 10**7], None))),
        (C.TwinQ, dict(obs_dim=3, act_dim=1, hidden=(4,)), dict(obs_dim=BAD_INT + (0,), act_dim=BAD_INT + (0,),
                                                               hidden=(5, "ab", [], [0], [10**7, 10**7]),
                                                               n=BAD_INT + (0,))),
        *[(cls, dict(obs_dim=3, act_dim=1, hidden=(8,)),
           dict(obs_dim=BAD_INT + HUGE_SIZES + (0,), act_dim=BAD_INT + (0,), hidden=(5, "ab", [], [0], [10**7, 10**7]),
                lr=BAD_FLOAT + (0, -1.0), gamma=BAD_FLOAT + (1.5, -0.1), tau=BAD_FLOAT + (0, 2.0), seed=(-1, 2**64),
                action_low=("a", [0, 0], 2.0), action_high=(NAN, -2.0)))
          for cls in (C.TD3, C.TD3BC, C.SAC)],
        (C.TD3, dict(obs_dim=3, act_dim=1, hidden=(8,)), dict(policy_noise=BAD_FLOAT + (-1.0,),
                                                              noise_clip=BAD_FLOAT, policy_delay=BAD_INT + (0,),
                                                              expl_noise=BAD_FLOAT + (-1.0,))),
        (C.TD3BC, dict(obs_dim=3, act_dim=1, hidden=(8,)), dict(alpha=BAD_FLOAT + (-1.0,))),
        (C.SAC, dict(obs_dim=3, act_dim=1, hidden=(8,)), dict(alpha=("x", -1.0, NAN, None), init_alpha=(0, NAN),
                                                              target_entropy=(NAN, "a"))),
        (agent.act, dict(obs=[0.0] * 3), dict(obs=([NAN, 0, 0], [0.0] * 4, "abc", None, np.zeros((2, 2))))),
        (agent.act_normalized, dict(obs=[0.0] * 3), dict(obs=([INF, 0, 0], [0.0] * 2))),
        (sac.sample, dict(obs=[0.0] * 3), dict(obs=([NAN, 0, 0], [0.0] * 2))),
        (agent.scale_action, dict(a=[0.5]), dict(a=([NAN], [0.5, 0.5], "a", None))),
        (agent.normalize_action, dict(a=[0.5]), dict(a=([INF], [0.5, 0.5]))),
        (agent.update, dict(batch=batch), dict(batch=(None, batch[:4], batch._replace(rew=np.full(4, NAN)),
                                                      batch._replace(obs=np.zeros((4, 2))),
                                                      C.Batch(*(x[:0] for x in batch))))),
        (agent.td_target, dict(batch=batch), dict(batch=(batch._replace(next_obs=np.full((4, 3), INF)),))),
        (agent.actor_loss, dict(batch=batch), dict(batch=(batch._replace(obs=np.full((4, 3), NAN)),))),
        (sac.td_target, dict(batch=batch), dict(batch=(batch._replace(done=np.full(4, NAN)),))),
        (td3bc.fit_normalizer, dict(data=batch), dict(data=(batch._replace(obs=np.full((4, 3), NAN)),
                                                            batch._replace(obs=np.zeros((1, 3)))))),
        (agent.load_state, dict(s=agent.state()), dict(s=(None, {}, sac.state()))),
        (C.make_agent, dict(algo="TD3", env=tiny_env, hidden=(4,)), dict(algo=("DDPG", ["TD3"], None),
                                                                         env=(None, "x"))),
        (C.evaluate, dict(policy=lambda o: np.zeros(1), env=tiny_env, episodes=1),
         dict(policy=(5, lambda o: np.full(1, NAN), lambda o: np.zeros(3), lambda o: "a"),
              episodes=BAD_INT + (0,), seed=(-1, 2**64))),
        (C.collect_dataset, dict(env=tiny_env, steps=4), dict(steps=BAD_INT + HUGE_SIZES + (0,),
                                                              noise=BAD_FLOAT + (-1.0,), seed=(-1,),
                                                              policy=(5, lambda o: np.full(1, INF)))),
        (C.train, dict(agent=_agent(), env=C.PointMassEnv(dim=1), steps=4, learning_starts=2, batch_size=2),
         dict(agent=(None,), steps=BAD_INT + (0,), batch_size=BAD_INT + (0,), buffer_size=BAD_INT + (0,),
              learning_starts=BAD_INT, gradient_steps=BAD_INT, eval_every=BAD_INT + (1,),
              eval_episodes=BAD_INT + (0,), seed=(-1,))),
        (C.train_offline, dict(agent=_agent(), dataset=dataset, steps=1, batch_size=2),
         dict(agent=(None,), dataset=(None, C.ReplayBuffer(3, 1, 2), C.ReplayBuffer(4, 1, 2)),
              steps=BAD_INT + (0,), batch_size=BAD_INT + (0,), eval_every=BAD_INT + (1,),
              eval_episodes=BAD_INT + (0,), seed=(-1,))),
        (C.compare_with_sb3, dict(env_id="Pendulum-v1", algo="SAC", steps=10, seed=0, hidden=(4,)),
         dict(algo=("DDPG", None, ["SAC"]), steps=BAD_INT + (0,), seed=(-1,), eval_episodes=BAD_INT + (0,))),
        (C.benchmark, dict(size="small"), dict(size=("x", None, ["small"]), repeat=BAD_INT + (0, 10**6))),
        # --------------------------------------------------------------------------------------------- graphdata
        (gd.sbm_probabilities, dict(n=10, n_classes=2, avg_degree=2.0, homophily=0.5),
         dict(n=BAD_INT + (1,), n_classes=BAD_INT + (1, 11), avg_degree=BAD_FLOAT + (0, -1.0, 100.0),
              homophily=BAD_FLOAT + (-0.1, 1.1))),
        (gd.sbm_graph, dict(n=10, n_classes=2, avg_degree=2.0, homophily=0.5),
         dict(n=BAD_INT + HUGE_SIZES + (1,), n_classes=BAD_INT + HUGE_SIZES + (1,), avg_degree=BAD_FLOAT + (0,),
              homophily=BAD_FLOAT, seed=(-1, 2**64))),
        (gd.edge_homophily, dict(G=gd.sbm_graph(10, 2, 2.0, 0.5)), dict(G=(5, None, nx.empty_graph(3)),
                                                                          y=("nope", [1, 2], None, 5))),
        (gd.node_labels, dict(G=G, y=[0, 1, 0, 1]), dict(G=(5, None), y=("nope", [1, 2], None))),
        (gd.class_features, dict(y=[0, 1, 0]), dict(y=([[0, 1]], None), dim=BAD_INT + HUGE_SIZES + (0, 1),
                                                    signal=BAD_FLOAT + (-1.0,), seed=(-1,))),
        (gd.to_data, dict(G=G, x=np.zeros((4, 2)), y=None), dict(G=(5, nx.DiGraph(G), nx.MultiGraph(G)),
                                                                  x=([[NAN, 0]] * 4, np.zeros((3, 2)), "a", np.zeros(4)),
                                                                  y=("nope", [1]))),
        (gd.motif, dict(name="house"), dict(name=("pentagon", "clique100000", "cycle2", "star", "house2", 5, None,
                                                  "clique" + "9" * 5000, "star1"))),
        (gd.role_graph, dict(motifs="house", repeats=2, spacing=2),
         dict(motifs=([], "nope", [5], ["house", "x"]), repeats=BAD_INT + HUGE_SIZES + (0,),
              spacing=BAD_INT + HUGE_SIZES + (0,), seed=(-1,))),
        (gd.motif_graph, dict(n_base=5, motifs={"house": 1}),
         dict(n_base=BAD_INT + HUGE_SIZES + (0,), motifs=({"house": 10**9}, {"house": -1}, {}, {"x": 1}, [("house",)],
                                                           {"house": NAN}), seed=(-1,))),
        (gd.graph_csr, dict(G=G), dict(G=(5, None, nx.DiGraph(G), nx.MultiGraph(G)))),
        (gd.wl_graph_classes, dict(graphs=[G, G]), dict(graphs=([], G, [5], [nx.DiGraph(G)], None, "ab"),
                                                        iterations=BAD_INT)),
        (gd.wl_equivalent, dict(G1=G, G2=G), dict(G1=(5, nx.DiGraph(G)), G2=(None, nx.MultiGraph(G)),
                                                  iterations=BAD_INT)),
        (gd.exact_orbits, dict(G=G), dict(G=(5, nx.DiGraph(G)), max_nodes=BAD_INT + (2,), method=("x", None))),
        (gd.refines, dict(fine=[0, 1], coarse=[0, 0]), dict(fine=([0], [[0, 1]]), coarse=([0, 0, 0], None))),
        (gd.partition_purity, dict(classes=[0, 1], reference=[0, 0]), dict(classes=([], [0], [[0, 1]]),
                                                                             reference=([0, 0, 0], None))),
        (gd.linear_probe, dict(Z=np.eye(8), y=[0, 1] * 4),
         dict(Z=(np.full((8, 2), NAN), np.zeros(8), "a", None), y=([0] * 8, [0, 1], None),
              test_size=BAD_FLOAT + (0, 1, 1.5), C=BAD_FLOAT + (0, -1.0), seed=(-1,))),
        (gd.plot_orbits_vs_wl, dict(graphs={"p": G}), dict(graphs=({}, [G], {"a": 5}, None))),
    ]


def test_every_argument_refuses_hostile_values(chain, lm, ids, dataset):
    "Each bad value of each argument: a one-line ValueError/TypeError naming the argument, within seconds."
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    n_cases, names, failures = 0, set(), []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fn, good, bad in _tables(chain, lm, ids, dataset):
            # names in messages: a few arguments are reported under their role ("policy", "P", "motif", ...)
            alias = {"name": "motif", "motifs": "motif", "batch": "idx", "s": "state"}
            for arg, values in bad.items():
                for v in values:
                    where = f"{getattr(fn, '__qualname__', fn)}({arg}={v!r:.60})"
                    try:  # outcome, not assert_refused: some functions have an argument called `name`
                        kind, val = outcome(fn, timeout=30, **{**good, arg: v})
                    except AssertionError as e:
                        failures.append(f"{where}: {e}")
                        continue
                    msg = str(val)
                    if kind != "refused":
                        failures.append(f"{where}: accepted, returned {msg:.100}")
                        continue
                    if not (arg in msg or alias.get(arg, arg) in msg or _names_role(arg, msg)):
                        failures.append(f"{where}: the error does not name it: {msg}")
                    n_cases += 1
            names.add(getattr(fn, "__qualname__", repr(fn)))
    plt.close("all")
    assert not failures, "\n".join(failures)
    assert n_cases >= 2000 and len(names) >= 100, (n_cases, len(names))


def _names_role(arg: str, msg: str) -> bool:
    "Errors that name the argument by its role: an agent's state, a batch's field, a policy's output, an env's size."
    roles = {"s": ("state", "saved agent"), "batch": ("batch",), "env": ("env",), "policy": ("policy",),
             "dataset": ("dataset",), "env_id": ("environment",), "chain": ("chain",), "tree": ("tree",),
             "graphs": ("graphs",), "model": ("model",), "P": ("P",)}
    return any(r in msg for r in roles.get(arg, ()))


def test_the_good_calls_of_the_table_succeed(chain, lm, ids, dataset):
    "The tables' good calls answer (so every refusal above is caused by the one bad argument)."
    skip = {"benchmark", "compare_with_sb3", "stdlib_corpus"}  # minutes or a package download; refused cheaply above
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fn, good, _ in _tables(chain, lm, ids, dataset):
            if getattr(fn, "__name__", "") in skip:
                continue
            kind, val = outcome(fn, timeout=20, **good)
            assert kind == "ok", f"{getattr(fn, '__qualname__', fn)}({good}): {val}"
    import matplotlib.pyplot as plt
    plt.close("all")


# -------------------------------------------------------------------------------------------- pareto, properties
def _dominates(a, b):
    return bool((a <= b).all() and (a < b).any())


def _brute_rank(Y):
    rank, left, r = np.full(len(Y), -1), set(range(len(Y))), 0
    while left:
        front = {i for i in left if not any(_dominates(Y[j], Y[i]) for j in left)}
        for i in front:
            rank[i] = r
        left -= front
        r += 1
    return rank


def _variants(Y):
    "Equivalent inputs of a valid float64 array: float32 (when exact), int (when integral), non-contiguous, lists."
    out = [non_contiguous(Y)] + ([Y.tolist()] if len(Y) else [])
    if np.array_equal(Y.astype(np.float32), Y):
        out.append(Y.astype(np.float32))
    if np.array_equal(np.round(Y), Y) and np.abs(Y).max(initial=0) < 2**31:
        out.append(Y.astype(np.int32))
    return out


points = st.tuples(st.integers(0, 12), st.integers(1, 4)).flatmap(
    lambda s: hnp.arrays(np.float64, s, elements=st.sampled_from([-INF, -2.0, 0.0, 0.5, 1.0, 3.0, INF, NAN]),
                         fill=st.nothing()))


@given(Y=points, mx=st.booleans(), keep=st.booleans())
def test_fronts_equal_brute_force(Y, mx, keep):
    if np.isnan(Y).any():
        for f in (PA.nondominated_mask, PA.pareto_rank, PA.pareto_fronts):
            assert_refused(f, Y, name="Y")
        return
    Z = -Y if mx else Y
    rank = _brute_rank(Z)
    for v in [Y] + _variants(Y):
        np.testing.assert_array_equal(PA.pareto_rank(v, maximise=mx), rank)
        mask = PA.nondominated_mask(v, keep, mx)
        first = np.array([not any((Z[j] == Z[i]).all() for j in range(i)) for i in range(len(Z))], bool)
        np.testing.assert_array_equal(mask, (rank == 0) & (first | keep))
    if len(Y) and np.isfinite(Y).all():  # moocore.pareto_rank itself segfaulted on a drawn array with infinities
        np.testing.assert_array_equal(PA.pareto_rank(Y, mx), moocore.pareto_rank(Y, maximise=mx))
        fronts = PA.pareto_fronts(Y, mx)
        assert sorted(np.concatenate(fronts).tolist()) == list(range(len(Y)))


@given(Y=points, ref=st.floats(-1.0, 4.0) | st.sampled_from([NAN, INF]), mx=st.booleans())
def test_hypervolume_equals_moocore(Y, ref, mx):
    kind, val = outcome(PA.hypervolume, Y, ref, mx)
    if np.isnan(Y).any() or not np.isfinite(Y).all() or not np.isfinite(ref):  # NaN in Y is reported first, then ref
        assert kind == "refused"
        assert ("Y" in str(val)) if np.isnan(Y).any() or np.isfinite(ref) else ("ref" in str(val))
        return
    assert kind == "ok" and val >= 0
    s = -1.0 if mx else 1.0
    want = 0.0 if len(Y) == 0 else float(moocore.hypervolume(Y * s, ref=np.full(Y.shape[1], ref * s)))
    assert val == pytest.approx(want, rel=1e-12, abs=1e-12)
    for v in _variants(Y):
        assert PA.hypervolume(v, ref, mx) == pytest.approx(val, rel=1e-12, abs=1e-12)


@given(A=points, R=points)
def test_indicators_equal_moocore(A, R):
    for f, ref in ((PA.epsilon_additive, moocore.epsilon_additive), (PA.igd, moocore.igd),
                   (PA.igd_plus, moocore.igd_plus)):
        kind, val = outcome(f, A, R)
        ok = (len(A) and len(R) and A.shape[1] == R.shape[1] and np.isfinite(A).all() and np.isfinite(R).all())
        if not ok:
            assert kind == "refused" and ("A" in str(val) or "R" in str(val))
            continue
        assert kind == "ok" and val == pytest.approx(float(ref(A, ref=R)), rel=1e-12, abs=1e-12)
        assert f(non_contiguous(A), R.tolist()) == pytest.approx(val, rel=1e-12, abs=1e-12)


@settings(max_examples=10)
@given(depth=st.integers(1, 3), b=st.integers(2, 3), n_iter=st.integers(0, 30), rule=st.sampled_from(["pareto", "scalar"]),
       seed=st.integers(0, 2**63 - 1))
def test_mcts_front_is_nondominated_among_the_leaves(depth, b, n_iter, rule, seed):
    env = PA.SyntheticTree(depth, b, 2, seed=seed % 7)
    s = PA.MCTS(env, 2, rule, weights=[0.5, 0.5] if rule == "scalar" else None, seed=seed).run(n_iter)
    states, R = s.front()
    assert len(states) == len(R) and not np.isnan(R).any()
    for st_, r in zip(states, R):
        np.testing.assert_array_equal(env.reward(st_), r)
        assert not any(_dominates(-env.reward(x), -r) for x in s.leaves)
    assert s.tree.visits[0] == n_iter


# ------------------------------------------------------------------------------------------- tinylm, properties
id_arrays = hnp.arrays(st.sampled_from([np.int64, np.int32, np.float64, np.int16]), st.integers(0, 12),
                       elements=st.integers(-2, 6))


@given(a=id_arrays)
def test_markov_nll_and_states_against_the_formula(chain, a):
    V = chain.vocab_size
    kind, val = outcome(chain.nll, a)
    if len(a) and (a.min() < 0 or a.max() >= V):
        assert kind == "refused" and "ids" in str(val)
        assert_refused(chain.states, a, name="ids")
        return
    if len(a) <= chain.order:
        assert kind == "refused"
        return
    x = a.astype(np.int64)
    assert kind == "ok" and val == pytest.approx(float(-np.log(chain.P[x[:-1], x[1:]]).mean()), rel=1e-12)
    assert chain.nll(non_contiguous(a)) == val and chain.nll(a.tolist()) == val
    np.testing.assert_array_equal(chain.states(a), x[:-1])


@given(text=st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=300), max_size=40))
def test_tokenizer_round_trip(text):
    ids = tl.encode(text)
    assert ids.dtype == np.int64 and len(ids) == len(text.replace("\t", "    "))
    out = tl.decode(ids)
    assert all(c == o or o == "?" for c, o in zip(text.replace("\t", "    "), out))
    assert tl.decode(non_contiguous(ids)) == out == tl.decode(torch.from_numpy(ids)) == tl.decode(ids.astype(np.int16))
    kind, val = outcome(tl.TASK_TOKENIZER.encode, text)
    assert kind == "ok" or "alphabet" in str(val)


@given(step=st.integers(0, 60), horizon=st.integers(1, 50), warmup=st.integers(0, 10),
       frac=st.floats(0, 1) | st.sampled_from([NAN, -0.5, 0.0, 1.0]), peak=st.floats(-2, 2), final=st.floats(-2, 2),
       decay=st.sampled_from(["linear", "cosine", "sqrt"]))
def test_schedules_are_finite_and_between_final_and_peak(step, horizon, warmup, frac, peak, final, decay):
    lo, hi = min(0.0, peak, final), max(0.0, peak, final)
    for f, kw in ((tl.constant_lr, dict(peak=peak)), (tl.cosine_lr, dict(peak=peak, final=final)),
                  (tl.wsd_lr, dict(peak=peak, final=final, decay_frac=frac, decay=decay))):
        kind, val = outcome(f, step, horizon, warmup=warmup, **kw)
        if kind == "refused":
            assert f is tl.wsd_lr and (not 0 <= frac <= 1 or "warmup" in str(val)), val
            continue
        assert lo - 1e-12 <= val <= hi + 1e-12


@settings(max_examples=15)
@given(n=st.integers(1, 20), mo=st.sampled_from([1, 9, 99, 10**6, 2**62]), ops=st.sampled_from(["+", "-*", "+-*"]),
       seed=st.integers(0, 2**63 - 1))
def test_task_languages_check_their_own_lines(n, mo, ops, seed):
    lines = tl.arithmetic_problems(n, mo, ops, seed)
    assert len(lines) == n and all(tl.check_arithmetic(l) for l in lines)
    assert not any(tl.check_arithmetic(l + "1") for l in lines if not l.endswith("=0"))
    look = tl.lookup_problems(n, 3, 5, seed)
    assert all(tl.check_lookup(l) for l in look)
    traces, labels = tl.reasoning_traces(n, 2, min(mo, 99), 0.0, seed)
    assert all(tl.trace_correct(t) and tl.check_steps(t) == [True, True] for t in traces)


@settings(max_examples=8)
@given(a=hnp.arrays(np.int64, st.integers(0, 40), elements=st.integers(-1, 4)), bs=st.integers(0, 3),
       ctx=st.sampled_from([None, 4, 8, 9]))
def test_training_and_evaluation_answer_or_refuse(lm, a, bs, ctx):
    model = tl.TinyLM(8, 1, 2, 8, vocab_size=4)
    kind, val = outcome(tl.train_lm, model, a, steps=1, batch_size=bs, context=ctx)
    T = 8 if ctx is None else ctx
    valid = len(a) == 0 or (a.min() >= 0 and a.max() < 4)
    if not valid or bs == 0 or len(a) < T + 2 or T > 8:
        assert kind == "refused"
    else:
        assert kind == "ok" and np.isfinite(val).all()
    kind, val = outcome(tl.eval_loss, lm, a, batch_size=max(bs, 1), context=ctx)
    if valid and len(a) > T and T <= 8:
        assert kind == "ok" and np.isfinite(val)
        assert tl.eval_loss(lm, non_contiguous(a), batch_size=max(bs, 1), context=ctx) == val
    else:
        assert kind == "refused"


# ------------------------------------------------------------------------------------------ control, properties
@settings(max_examples=15)
@given(k=st.integers(0, 5), bad=st.sampled_from([None, "obs", "act", "rew", "next_obs", "done"]),
       val=st.sampled_from([NAN, INF, -INF]), dtype=st.sampled_from([np.float64, np.float32, np.int32]))
def test_replay_buffer_stores_exactly_or_refuses(k, bad, val, dtype):
    rng = np.random.default_rng(k)
    data = dict(obs=rng.integers(-3, 3, (k, 3)), act=rng.integers(-1, 2, (k, 1)), rew=rng.integers(-3, 3, k),
                next_obs=rng.integers(-3, 3, (k, 3)), done=rng.integers(0, 2, k))
    data = {n: x.astype(dtype) for n, x in data.items()}
    buf = C.ReplayBuffer(3, 1, 4)
    if bad is not None and k and dtype != np.int32:
        data[bad] = data[bad].copy()
        data[bad].flat[0] = val
        assert_refused(buf.add, **data, name=bad)
        assert len(buf) == 0
        return
    buf.add(**{n: non_contiguous(x) if x.ndim == 2 else x for n, x in data.items()})
    keep = max(0, k - 4)
    assert len(buf) == min(k, 4)
    for n, x in zip(C.Batch._fields, buf.all()):
        np.testing.assert_array_equal(np.sort(x, axis=0), np.sort(data[n][keep:].astype(np.float32), axis=0))
    if k:
        b = buf.sample(3, np.random.default_rng(0))
        assert b.obs.shape == (3, 3) and not np.isnan(b.rew).any()


@settings(max_examples=15)
@given(dt=st.floats(-1, 1) | st.sampled_from(BAD_NUMBERS), force=st.floats(-1, 5) | st.sampled_from(BAD_NUMBERS),
       damping=st.floats(-1, 5), a=hnp.arrays(np.float64, 2, elements=st.floats(-2, 2) | st.sampled_from([NAN, INF])))
def test_pointmass_steps_are_finite_or_refused(dt, force, damping, a):
    kind, env = outcome(C.PointMassEnv, dim=2, dt=dt, force=force, damping=damping)
    if kind == "refused":
        return
    obs, _ = env.reset(seed=0)
    kind, out = outcome(env.step, a)
    if not np.isfinite(a).all():
        assert kind == "refused" and "action" in str(out)
    else:
        assert kind == "ok" and np.isfinite(out[0]).all() and np.isfinite(out[1])
        env2 = C.PointMassEnv(dim=2, dt=dt, force=force, damping=damping)
        env2.reset(seed=0)
        assert same(env2.step(non_contiguous(a))[:2], out[:2])  # a non-contiguous action: the same step


@settings(max_examples=8)
@given(n=st.integers(0, 4), bad=st.sampled_from([None, "rew", "obs", "empty"]))
def test_agent_updates_are_finite_or_refused(dataset, n, bad):
    b = dataset.sample(max(n, 1), np.random.default_rng(n))
    if bad == "empty":
        b = C.Batch(*(x[:0] for x in b))
    elif bad is not None:
        b = b._replace(**{bad: np.where(np.ones_like(getattr(b, bad), bool), NAN, getattr(b, bad))})
    for agent in (_agent(), _agent(C.SAC)):
        kind, val = outcome(agent.update, b)
        if bad is None:
            assert kind == "ok" and all(np.isfinite(v) for v in val.values())
        else:
            assert kind == "refused" and "batch" in str(val) and agent.n_updates == 0


# ---------------------------------------------------------------------------------------- graphdata, properties
graphs = st.integers(0, 7).flatmap(lambda n: st.lists(st.tuples(st.integers(0, max(n - 1, 0)), st.integers(0, max(n - 1, 0))),
                                                      max_size=12).map(lambda es: _graph(n, es)))


def _graph(n, edges):
    G = nx.Graph()
    G.add_nodes_from(range(n))
    G.add_edges_from((u, v) for u, v in edges if n and u != v)
    return G


from test_graphdata import _brute_orbits  # noqa: E402 (orbits from every automorphism GraphMatcher enumerates)


@settings(max_examples=30)
@given(G=graphs)
def test_csr_and_orbits_against_networkx(G):
    indptr, indices = gd.graph_csr(G)
    A = nx.to_numpy_array(G, nodelist=list(G), weight=None) if len(G) else np.zeros((0, 0))
    B = np.zeros_like(A)
    for v in range(len(G)):
        B[v, indices[indptr[v]:indptr[v + 1]]] = 1
    np.testing.assert_array_equal(A, B)
    for method in ("auto", "vf2pp", "vf2pp-degree"):
        np.testing.assert_array_equal(gd.exact_orbits(G, method=method), _brute_orbits(G))


@settings(max_examples=20)
@given(G1=graphs, G2=graphs, it=st.integers(2, 3))
def test_wl_equivalence_against_networkx_hash(G1, G2, it):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        want = nx.weisfeiler_lehman_graph_hash(G1, iterations=it) == nx.weisfeiler_lehman_graph_hash(G2, iterations=it)
    assume(len(G1) and len(G2))
    assert gd.wl_equivalent(G1, G2, it) == want


labels = hnp.arrays(st.sampled_from([np.int64, np.int8, np.float64]), st.integers(0, 10), elements=st.integers(0, 3))


@given(a=labels, b=labels)
def test_partitions_against_the_definitions(a, b):
    kind, val = outcome(gd.refines, a, b)
    if a.shape != b.shape:
        assert kind == "refused"
        assert_refused(gd.partition_purity, a, b)
        return
    want = all(len({b[j] for j in range(len(a)) if a[j] == a[i]}) == 1 for i in range(len(a)))
    assert kind == "ok" and val == want and gd.refines(non_contiguous(a), b.tolist()) == want
    kind, val = outcome(gd.partition_purity, a, b)
    if len(a) == 0:
        assert kind == "refused"
        return
    pur = sum(max(sum(1 for j in range(len(a)) if a[j] == c and b[j] == r) for r in set(b.tolist()))
              for c in set(a.tolist())) / len(a)
    assert kind == "ok" and val == pytest.approx(pur)


@settings(max_examples=15)
@given(n=st.integers(0, 40), k=st.integers(0, 5), d=st.floats(0, 50) | st.sampled_from(BAD_NUMBERS),
       h=st.floats(-0.5, 1.5) | st.sampled_from(BAD_NUMBERS))
def test_sbm_answers_the_formula_or_refuses(n, k, d, h):
    kind, val = outcome(gd.sbm_probabilities, n, k, d, h)
    if kind == "refused":
        return
    p_in, p_out = val
    sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
    inside = sum(s * (s - 1) // 2 for s in sizes)
    across = n * (n - 1) // 2 - inside
    assert 0 <= p_in <= 1 and 0 <= p_out <= 1
    assert p_in * inside + p_out * across == pytest.approx(n * d / 2)
    G = gd.sbm_graph(n, k, d, h, seed=0)
    assert G.number_of_nodes() == n and np.bincount(gd.node_labels(G)).tolist() == sizes


@settings(max_examples=10)
@given(y=hnp.arrays(np.int64, st.integers(1, 12), elements=st.integers(0, 3)), dim=st.integers(1, 6),
       signal=st.floats(0, 5))
def test_class_features_shape_or_refusal(y, dim, signal):
    kind, X = outcome(gd.class_features, y, dim, signal)
    k = len(np.unique(y))
    if dim < k:
        assert kind == "refused" and "dim" in str(X)
        return
    assert kind == "ok" and X.shape == (len(y), dim) and X.dtype == np.float32 and np.isfinite(X).all()
    np.testing.assert_array_equal(X, gd.class_features(non_contiguous(y), dim, signal))
    np.testing.assert_array_equal(X, gd.class_features(y.astype(np.int8).tolist(), dim, signal))


def test_generators_refuse_before_building():
    "A motif graph or role graph over the node limit is refused before any node is built."
    n = gd.MAX_GRAPH_NODES
    for call, name in ((lambda: gd.motif_graph(n + 1, {"house": 0}), "n_base"),
                       (lambda: gd.motif_graph(10, {"clique1000": n // 1000 + 1}), "motifs"),
                       (lambda: gd.role_graph("clique1000", repeats=250, spacing=1), "repeats")):
        assert_refused(call, name=name, timeout=30)
    for combo in itertools.product(("house", "cycle5"), (2, 3)):
        G = gd.role_graph(combo[0], repeats=combo[1], spacing=2)
        assert G.number_of_nodes() == combo[1] * 2 + combo[1] * len(gd.motif(combo[0])[2])
