"""The versaprm chapter's pieces beyond its notebook: the labeller against an exhaustive check, the PRM's labels and
inputs, a PRM that learns one domain, the same code on a tiny random GPT-2, voting, bad input. The experiment itself
runs only in the notebook and in tests/test_chapters.py."""
import dataclasses
import itertools
import random
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
import torch

from icml25nb.safety import versaprm as V
from icml25nb.tinylm import TASK_CHARS, hf_causal_lm, import_transformers


def _first_wrong_by_enumeration(cot, problem):
    "First step whose text is not the one correct step, found by enumerating every (input, output) pair of the domain."
    dom, prev = V.DOMAINS[problem.domain], problem.start
    states = ["".join(t) for t in itertools.product(dom.symbols, repeat=dom.width)]
    for i, step in enumerate(cot.steps):
        if i >= len(problem.ops):
            return i
        legal = {f"{s}{problem.ops[i]}={dom.apply(s, problem.ops[i])}" for s in states}
        if step not in legal or step[:dom.width] != prev:
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
    q = V.Problem("cups", "abc", ("ab", "cd"), "bad")
    ok = V.CoT(("abcab=bac", "baccd=bad"), "bad")
    assert V.label_first_error(ok, q) == -1 and V.step_checks(ok, q) == [True, True]
    assert V.label_first_error(V.CoT(("abcab=bbc", "bbccd=bbd"), "bbd"), q) == 0          # wrong output
    assert V.label_first_error(V.CoT(("abcab=bac", "abccd=abd"), "abd"), q) == 1          # input is not the last output
    assert V.label_first_error(V.CoT(("abcab=bac", "bacdc=bad"), "bad"), q) == 1          # another operation
    assert V.label_first_error(V.CoT(("abcab=bac",), "bac"), q) == 1                      # a step missing
    assert V.label_first_error(V.CoT(("abcab=bac", "baccd=bad", "badab=abd"), "abd"), q) == 2  # a step too many
    assert V.label_first_error(V.CoT(("garbage", "baccd=bad"), "bad"), q) == 0
    assert V.label_first_error(V.CoT(("abcab=bag", "bagcd=bad"), "bad"), q) == 0          # not a state of the domain


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


def _truth(C, L):
    return np.concatenate([[1] * len(c.steps) if f < 0 else [1] * f + [0] + [-1] * (len(c.steps) - f - 1)
                           for c, f in zip(C, L)])


def test_window_prm_verifies_held_out_steps_and_does_not_transfer():
    torch.manual_seed(0)
    Pt, Ct, Lt = _pool("walk", 60, 1)
    (P, C, L), kept = V.hold_out(_pool("walk", 400, 0), (Pt, Ct, Lt))
    assert V.overlap((P, C, L), (Pt, Ct, Lt))["steps"] == 0 and kept["steps_kept"] > 0.5
    m = V.WindowLM()
    V.train_prm(m, *V.prm_inputs(P, C, L), steps=400, seed=0)
    s, truth = np.concatenate(V.step_scores(m, Pt, Ct)), _truth(Ct, Lt)
    pos, neg = s[truth == 1], s[truth == 0]
    assert pos.mean() > 0.8 and neg.mean() < 0.3, (pos.mean(), neg.mean())  # it verifies walk steps it never saw
    # scored on cups, a domain it never saw, it separates right from wrong steps far worse
    Pc, Cc, Lc = _pool("cups", 60, 1)
    sc, tc = np.concatenate(V.step_scores(m, Pc, Cc)), _truth(Cc, Lc)
    assert sc[tc == 1].mean() - sc[tc == 0].mean() < 0.5 * (pos.mean() - neg.mean())


def test_hold_out_leaves_nothing_of_the_evaluation_in_training():
    solver = V.NoisySolver(0.2, (0.2, 0.8), seed=5)
    ev = V._data(V.DOMAINS, 30, 16, solver, 5, 2)
    raw = V._data(V.DOMAINS, 200, 4, solver, 5, 1)
    before = V.overlap(raw, ev)
    assert before["steps"] > 0  # drawn apart, problems still share step strings: the counter sees them
    (P, C, L), kept = V.hold_out(raw, ev)
    ev_steps = {s for c in ev[1] for s in c.steps}
    assert not any(s in ev_steps for c in C for s in c.steps)  # recounted here, step by step
    assert not {q.text for q in P} & {q.text for q in ev[0]}
    assert V.overlap((P, C, L), ev) == dict(problems=0, steps=0, labelled_steps=0, eval_steps=len(ev_steps))
    for q, c, f in zip(P, C, L):  # each kept CoT is a prefix of a training CoT, labelled at its own first error
        chk = V.step_checks(c, q)
        assert f == (chk.index(False) if False in chk else -1)
    assert 0.3 < kept["steps_kept"] < 1


def test_same_prm_code_runs_on_a_tiny_random_gpt2():
    GPT2Config, GPT2LMHeadModel = import_transformers("GPT2Config", "GPT2LMHeadModel")
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=len(TASK_CHARS), n_positions=128, n_embd=32, n_layer=2, n_head=4, bos_token_id=None,
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


def _bon_brute(s, ok, n):
    subs = list(itertools.combinations(range(len(s)), n))
    tot = Fraction(0)
    for sub in subs:
        top = max(s[i] for i in sub)
        best = [i for i in sub if s[i] == top]
        tot += Fraction(sum(ok[i] for i in best), len(best))
    return tot / len(subs)


def test_exact_best_of_n_equals_enumeration_with_ties():
    rng = np.random.default_rng(0)
    for _ in range(40):
        M = int(rng.integers(1, 10))
        s = rng.choice([0.1, 0.5, 0.9, 1.0], M) if rng.random() < 0.5 else rng.random(M)
        ok = rng.random(M) < 0.5
        for n in range(1, M + 1):
            assert V.best_of_n_exact(s, ok, n) == _bon_brute(list(s), list(ok), n)


def test_exact_votes_match_the_authors_sampling_on_average():
    "Monte Carlo of the authors' protocol (random.sample, Counter.most_common / max on the sample) -> the exact value."
    rng = np.random.default_rng(1)
    A = rng.choice(list("abc"), (6, 16), p=[0.4, 0.35, 0.25])
    ok = A == "a"
    W = rng.choice([0.25, 0.5, 1.0], (6, 16))
    r = random.Random(0)
    for n in (2, 4, 16):
        exact = float(V.subset_vote_accuracy(A, ok, n))
        hits = []
        for _ in range(3000):
            for a, o in zip(A, ok):
                idx = r.sample(range(16), n)
                win = Counter(a[i] for i in idx).most_common(1)[0][0]
                hits.append(win == "a")
        assert abs(np.mean(hits) - exact) < 0.01, (n, np.mean(hits), exact)
    exact = np.mean([float(V.vote_accuracy(list(a), o, w)) for a, o, w in zip(A, ok, W)])
    hits = []
    for _ in range(3000):
        for a, w in zip(A, W):
            t = {}
            for i in r.sample(range(16), 16):
                t[a[i]] = t.get(a[i], 0) + w[i]
            hits.append(max(t.items(), key=lambda x: x[1])[0] == "a")
    assert abs(np.mean(hits) - exact) < 0.01
    assert V.vote_accuracy(["a", "b"], [True, False]) == Fraction(1, 2)  # a tie of two: either, as often


def _wmv_brute(a, ok, w):
    "Every order of the CoTs, the answer with the largest total weight wins, ties to the first seen."
    perms = list(itertools.permutations(range(len(a))))
    hits = 0
    for p in perms:
        t = {}
        for i in p:
            t[a[i]] = t.get(a[i], 0.0) + w[i]
        hits += ok[a.index(max(t, key=t.get))]
    return Fraction(hits, len(perms))


def test_exact_weighted_vote_over_subsets_equals_enumeration_with_ties():
    "subset_wmv_accuracy: every subset and every order, dyadic weights (float sums exact) so that ties occur."
    rng = np.random.default_rng(2)
    for _ in range(25):
        M, P = int(rng.integers(1, 6)), 2
        A = rng.choice(list("xyz"), (P, M))
        ok = A == "x"
        W = rng.choice([0.0, 0.25, 0.5, 1.0], (P, M))
        for n in range(1, M + 1):
            subs = list(itertools.combinations(range(M), n))
            want = sum(_wmv_brute([A[p][i] for i in c], [ok[p][i] for i in c], [W[p][i] for i in c])
                       for p in range(P) for c in subs) / (len(subs) * P)
            assert V.subset_wmv_accuracy(A, ok, W, n) == want
        full = sum(V.vote_accuracy(list(a), o, w) for a, o, w in zip(A, ok, W)) / P
        assert V.subset_wmv_accuracy(A, ok, W, M) == full
    # near-ties decided by exactly rounded sums: 0.1 + 0.2 + 0.3 vs 0.6 in any order is a tie under math.fsum? no:
    # whatever fsum gives, the answer must equal vote_accuracy's on the full pool, which uses math.fsum too
    a, o, w = np.array([list("aaab")]), np.array([[True, True, True, False]]), np.array([[0.1, 0.2, 0.3, 0.6]])
    assert V.subset_wmv_accuracy(a, o, w, 4) == V.vote_accuracy(list(a[0]), o[0], w[0])
    with pytest.raises(ValueError, match="weights"):
        V.subset_wmv_accuracy(a, o, w[:, :3], 2)


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
    with pytest.raises(ValueError, match="n"):
        V.best_of_n_exact([0.1, 0.2], [True, False], 3)
    with pytest.raises(ValueError, match="correct"):
        V.vote_accuracy(["a", "b"], [True])
    with pytest.raises(ValueError, match="scale"):
        V.experiment("huge")
