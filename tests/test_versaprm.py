"""The versaprm chapter's pieces beyond its notebook: the labeller against an exhaustive check, the PRM's labels and
inputs, a PRM that learns one domain, the same code on a tiny random GPT-2, voting, bad input. The experiment itself
runs only in the notebook and in tests/test_chapters.py."""
import dataclasses

import numpy as np
import pytest
import torch

from icml25nb.safety import versaprm as V
from icml25nb.tinylm import TASK_CHARS, hf_causal_lm, import_transformers


def _first_wrong_by_enumeration(cot, problem):
    "First step whose text is not the one correct step, found by enumerating every (input, output) pair of the domain."
    dom, prev = V.DOMAINS[problem.domain], problem.start
    for i, step in enumerate(cot.steps):
        if i >= len(problem.ops):
            return i
        legal = {f"{s}{problem.ops[i]}={dom.apply(s, problem.ops[i])}" for s in dom.states}
        if step not in legal or step[0] != prev:
            return i
        prev = step.split("=", 1)[1]
    return -1 if len(cot.steps) == len(problem.ops) else len(cot.steps)


@pytest.mark.parametrize("domain", list(V.DOMAINS))
def test_label_first_error_agrees_with_enumeration(domain):
    solver = V.NoisySolver(0.25, (0.0, 1.0), seed=3)
    n = 0
    for q in V.sample_problems(domain, 40, seed=3):
        cots, firsts = solver.generate(q, 6)
        for c, f in zip(cots, firsts):
            assert V.label_first_error(c, q) == f == _first_wrong_by_enumeration(c, q)
            n += f >= 0
    assert n > 20  # errors were actually made and found


def test_labeller_catches_every_kind_of_error():
    q = V.Problem("cups", "a", ("ab", "cd"), "b")
    ok = V.CoT(("aab=b", "bcd=b"), "b")
    assert V.label_first_error(ok, q) == -1 and V.step_checks(ok, q) == [True, True]
    assert V.label_first_error(V.CoT(("aab=c", "ccd=d"), "d"), q) == 0          # wrong output
    assert V.label_first_error(V.CoT(("aab=b", "acd=a"), "a"), q) == 1          # input is not the last output
    assert V.label_first_error(V.CoT(("aab=b", "bdc=b"), "b"), q) == 1          # another operation
    assert V.label_first_error(V.CoT(("aab=b",), "b"), q) == 1                  # a step missing
    assert V.label_first_error(V.CoT(("aab=b", "bcd=b", "bab=a"), "a"), q) == 2  # a step too many
    assert V.label_first_error(V.CoT(("garbage", "bcd=b"), "b"), q) == 0


def test_labels_stop_at_the_first_error_and_answers_stay_out():
    q = V.sample_problems("walk", 1, seed=0)[0]
    cots = [V.CoT(tuple(f"{s}" for s in c.steps), c.answer) for c in V.NoisySolver(0.0, (0, 0)).generate(q, 1)[0]]
    ids, y = V.prm_inputs([q, q, q], cots * 3, [-1, 0, 3])
    labs = [row[row != -100].tolist() for row in y]
    assert labs == [[1] * 5, [0], [1, 1, 1, 0]]
    assert (ids[y != -100] == V.TAG_ID).all()
    moved = dataclasses.replace(q, answer="z")
    assert np.array_equal(V.encode_cot(q, cots[0]), V.encode_cot(moved, cots[0]))


def _pool(domain, n, seed, slip=0.15):
    solver = V.NoisySolver(slip, (0.0, 0.5), seed=seed)
    P, C, L = [], [], []
    for q in V.sample_problems(domain, n, seed=seed):
        cs, fs = solver.generate(q, 4)
        P += [q] * 4
        C += cs
        L += fs
    return P, C, L


def test_window_prm_learns_a_domain_and_does_not_transfer():
    torch.manual_seed(0)
    P, C, L = _pool("bool", 150, 0)
    m = V.WindowLM()
    V.train_prm(m, *V.prm_inputs(P, C, L), steps=150, seed=0)
    Pt, Ct, Lt = _pool("bool", 60, 1)
    s = np.concatenate(V.step_scores(m, Pt, Ct))
    truth = np.concatenate([[1] * len(c.steps) if f < 0 else [1] * f + [0] + [-1] * (len(c.steps) - f - 1)
                            for c, f in zip(Ct, Lt)])
    pos, neg = s[truth == 1], s[truth == 0]
    assert pos.mean() > 0.9 and neg.mean() < 0.3, (pos.mean(), neg.mean())  # it verifies bool steps
    # scored on cups, a domain it never saw, it separates right from wrong steps far worse
    Pc, Cc, Lc = _pool("cups", 60, 1)
    sc = np.concatenate(V.step_scores(m, Pc, Cc))
    tc = np.concatenate([[1] * len(c.steps) if f < 0 else [1] * f + [0] + [-1] * (len(c.steps) - f - 1)
                         for c, f in zip(Cc, Lc)])
    assert sc[tc == 1].mean() - sc[tc == 0].mean() < 0.5 * (pos.mean() - neg.mean())


def test_same_prm_code_runs_on_a_tiny_random_gpt2():
    GPT2Config, GPT2LMHeadModel = import_transformers("GPT2Config", "GPT2LMHeadModel")
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=len(TASK_CHARS), n_positions=48, n_embd=32, n_layer=2, n_head=4, bos_token_id=None,
                     eos_token_id=None, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    gpt2 = hf_causal_lm(GPT2LMHeadModel(cfg))
    P, C, L = _pool("arith", 8, 0, slip=0.3)
    ids, y = V.prm_inputs(P, C, L)
    losses = V.train_prm(gpt2, ids, y, steps=20, lr=3e-3, batch_size=8)
    assert losses[-5:].mean() < losses[:5].mean()
    scores = V.step_scores(gpt2, P, C)
    assert [len(s) for s in scores] == [len(c.steps) for c in C]
    # step scores are P(+) over the (-, +) logits at the tags: recompute one by hand
    with torch.no_grad():
        logits = gpt2(ids[:1])[0]
    tags = torch.nonzero(ids[0] == V.TAG_ID).ravel()
    want = torch.softmax(logits[tags][:, [V.NEG_ID, V.POS_ID]], -1)[:, 1].numpy()
    np.testing.assert_allclose(scores[0], want, rtol=1e-5)
    R = V.aggregate(scores, "min")
    assert V.weighted_majority_vote([c.answer for c in C], R) in {c.answer for c in C}


def test_voting_rules():
    answers = ["a", "b", "b", "c"]
    assert V.majority_vote(answers) == "b"
    assert V.weighted_majority_vote(answers, [0.9, 0.3, 0.3, 0.1]) == "a"
    assert V.best_of_n(answers, [0.1, 0.2, 0.2, 0.9]) == "c"
    s = [[0.9, 0.5], [0.2, 0.8, 0.7]]
    np.testing.assert_allclose(V.aggregate(s, "min"), [0.5, 0.2])
    np.testing.assert_allclose(V.aggregate(s, "last"), [0.5, 0.7])
    np.testing.assert_allclose(V.aggregate(s, "mean"), [0.7, 1.7 / 3])
    np.testing.assert_allclose(V.aggregate(s, "product"), [0.45, 0.112])
    np.testing.assert_allclose(V.aggregate(np.array([[0.9, 0.5], [0.2, 0.8]]), "min"), [0.5, 0.2])


def test_bad_input_names_the_argument():
    q = V.sample_problems("arith", 1)[0]
    with pytest.raises(ValueError, match="domain"):
        V.sample_problems("law", 2)
    with pytest.raises(ValueError, match="n"):
        V.sample_problems("arith", 0)
    with pytest.raises(ValueError, match="slip"):
        V.NoisySolver({"arith": -0.1})
    with pytest.raises(ValueError, match="trap"):
        V.NoisySolver(0.1, (0.9, 0.1))
    with pytest.raises(TypeError, match="problem"):
        V.NoisySolver(0.1).generate("7+5", 3)
    with pytest.raises(TypeError, match="cot"):
        V.label_first_error(("7+5=2",), q)
    with pytest.raises(ValueError, match="how"):
        V.aggregate([0.5], "median")
    with pytest.raises(ValueError, match="weights"):
        V.weighted_majority_vote(["a", "b"], [1.0])
    with pytest.raises(ValueError, match="answers"):
        V.best_of_n([], [])
    with pytest.raises(TypeError, match="model"):
        V.step_scores(None, [q], [V.CoT((), q.answer)])
    with pytest.raises(ValueError, match="lr"):
        V.train_prm(V.WindowLM(), torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 3, dtype=torch.long), lr=-1)
    with pytest.raises(ValueError, match="scale"):
        V.experiment("huge")
