"""The CPT scaling-law chapter (icml25nb.optim.cpt) at tiny sizes. The experiment itself runs in the notebook and
twice in tests/test_chapters.py (seed 1), so it is not called here."""
import math

import numpy as np
import pytest
import torch

from icml25nb.optim import cpt
from icml25nb.tinylm import TinyLM, eval_loss, markov_chain, markov_corpus


def _double_sum(eta, lam):
    "The paper's S2 = sum_i sum_{k<=i} (eta_{k-1} - eta_k) lam^(i-k), with eta_0 = eta_1."
    eta = np.concatenate([[eta[0]], eta])
    m = [sum((eta[k - 1] - eta[k]) * lam ** (i - k) for k in range(1, i + 1)) for i in range(1, len(eta))]
    return np.cumsum(m)


def test_areas_match_the_paper_formulas():
    eta = np.random.default_rng(1).uniform(0, 2e-3, 60)
    np.testing.assert_allclose(cpt.annealing_area(eta, 0.95), _double_sum(eta, 0.95), rtol=0, atol=1e-14)
    np.testing.assert_allclose(cpt.forward_area(eta), np.cumsum(eta), rtol=1e-14)
    assert np.all(cpt.annealing_area(np.full(30, 0.1), 0.999) == 0)
    # a linear decay from 1 to 0 over n steps with lam = 0: S2(t) = eta_1 - eta_t
    lin = np.linspace(1, 0, 11)
    np.testing.assert_allclose(cpt.annealing_area(lin, 0.0), 1 - lin, atol=1e-14)


def test_law_areas_split_and_warmup():
    pt = np.r_[np.linspace(0.1, 1, 5), np.ones(20), np.linspace(1, 0, 11)[1:]]
    c = np.r_[np.linspace(0.25, 1, 4), np.ones(30)]
    a = cpt.law_areas(pt, c, 0.9, pt_warmup=4)
    np.testing.assert_allclose(a["S1pt"] + a["S1cpt"], np.cumsum(np.r_[pt, c]), atol=1e-12)
    np.testing.assert_allclose(a["S2pt"] + a["S2cpt"], cpt.annealing_area(np.r_[np.ones(4), pt[4:], c], 0.9), atol=1e-12)
    assert np.all(a["S1cpt"][:len(pt)] == 0) and np.all(a["S2pt"][len(pt):] == a["S2pt"][len(pt) - 1])
    assert a["S2pt"][len(pt) - 1] > 0 and a["S2cpt"][-1] < 0  # annealed PT, re-warmed CPT
    # without excluding the warm-up its negative area stays in S2pt
    assert cpt.law_areas(pt, c, 0.9)["S2pt"][len(pt) - 1] < a["S2pt"][len(pt) - 1] - 1.0


def test_cpt_law_terms():
    th = np.array([3.057, 0.490, 0.497, 0.299, 0.298, 0.366, 28.0, 0.189])  # the paper's Fig. 3 D_pt fit
    want = 3.057 + 0.490 * 9 ** -0.497 - 0.299 * 1.0 - 0.298 * (-0.5) + 0.366 * (1 - 29 ** -0.189)
    assert cpt.cpt_law(th, 8.0, 1.0, 1.0, -0.5) == pytest.approx(want, abs=1e-12)
    no_shift = th.copy()
    no_shift[5] = 0
    assert cpt.cpt_law(th, 8.0, 0.0, 1.0, 0.0) == pytest.approx(cpt.cpt_law(no_shift, 8.0, 0.0, 1.0, 0.0))
    assert cpt.cpt_law(th, 8.0, 1e15, 0, 0) - cpt.cpt_law(no_shift, 8.0, 1e15, 0, 0) == pytest.approx(0.366, abs=1e-3)


def _law_curves(theta, lam=0.9):
    pt = 0.01 * np.r_[np.linspace(0.05, 1, 10), np.ones(150), np.linspace(1, 0, 41)[1:]]
    runs = {"constant": np.full(100, 0.01), "cosine": 0.005 * (1 + np.cos(np.pi * np.arange(100) / 100)),
            "wsd": 0.01 * np.r_[np.ones(80), np.linspace(1, 0, 21)[1:]]}
    out = {}
    a = cpt.law_areas(pt, None, lam, 10)
    i = np.arange(20, 201, 5) - 1
    out["pt"] = dict({k: v[i] for k, v in a.items()}, loss=cpt.cpt_law(theta, a["S1pt"][i], a["S1cpt"][i], a["S2pt"][i], a["S2cpt"][i]))
    for name, lrs in runs.items():
        a = cpt.law_areas(pt, lrs, lam, 10)
        i = 200 + np.arange(5, 101, 5) - 1
        out[name] = dict({k: v[i] for k, v in a.items()},
                         loss=cpt.cpt_law(theta, a["S1pt"][i], a["S1cpt"][i], a["S2pt"][i], a["S2cpt"][i]))
    return out


@pytest.mark.parametrize("B", [0.4, -0.6])
def test_fit_recovers_held_out_curve(B):
    theta = np.array([1.8, 0.4, 0.6, 0.5, 0.4, B, 20.0, 0.5])
    curves = _law_curves(theta)
    fit = cpt.fit_cpt_law(curves, holdout="wsd")
    assert fit["fitted"] == ["pt", "constant", "cosine"] and fit["holdout"] == ["wsd"]
    assert fit["mape"]["wsd"] < 1e-3
    assert fit["asymptote"] == pytest.approx(fit["params"]["L0"] + min(fit["params"]["B"], 0.0))
    no_shift = cpt.fit_cpt_law(curves, holdout="wsd", shift=False)
    assert no_shift["params"]["B"] == 0.0 and no_shift["mape"]["wsd"] > 10 * fit["mape"]["wsd"]
    bounded = cpt.fit_cpt_law(curves, holdout="wsd", floor=1.9)
    assert bounded["params"]["L0"] >= 1.9 - 1e-12


def test_shifted_chain():
    ch = markov_chain(8, 2, 0.5, seed=2)
    new = cpt.shifted_chain(ch, 0.25, seed=5)
    changed = np.abs(new.P - ch.P).max(1) > 0
    assert changed.sum() == 16 and np.all(new.P[~changed] == ch.P[~changed])
    assert np.allclose(new.P.sum(1), 1) and new.entropy_rate > 0
    assert np.all(cpt.shifted_chain(ch, 0.25, seed=5).P == new.P)
    assert np.all(cpt.shifted_chain(ch, 1.0, seed=5).P != ch.P)


def test_chain_loss_positions():
    ch = markov_chain(8, 2, 0.5, seed=1)
    ids = ch.sample(2000, seed=0)
    T, m = 8, 2
    got = cpt._chain_loss(ch, ids, T, m, max_windows=50)
    want = []
    for w in range(50):
        for j in range(m, T + 1):
            p = w * T + j
            want.append(-math.log(ch.P[ids[p - 2] * 8 + ids[p - 1], ids[p]]))
    assert got == pytest.approx(float(np.mean(want)), rel=1e-12)


def _tiny(seed=0):
    ch = markov_chain(8, 1, 0.5, seed=3)
    c1 = markov_corpus(ch, 20_000, 600, seed=0)
    c2 = markov_corpus(cpt.shifted_chain(ch, 0.5, seed=3), 20_000, 600, seed=1)
    torch.manual_seed(seed)
    m = TinyLM(16, 1, 2, 8, 8)
    lr = lambda n: cpt.schedule_lrs("constant", n, 3e-2)
    r = cpt.train_pt_cpt(m, c1.train, c2.train, {"pt": c1.val, "cpt": c2.val}, cpt.schedule_lrs("constant", 60, 3e-2, 5),
                         {"new": (lr(40), 0.0), "half": (lr(40), 0.5), "old": (lr(40), 1.0)}, batch_size=32,
                         eval_every=20, min_context=1, seed=seed)
    return m, r, c1


def test_train_pt_cpt_forgetting_and_replay():
    m, r, c1 = _tiny()
    pt_end = r["pt"]["val"]
    assert pt_end["pt"][-1] < math.log(8) - 0.5
    rise = {k: r["cpt"][k]["val"]["pt"][-1] - pt_end["pt"][-1] for k in ("new", "half", "old")}
    assert rise["new"] > rise["half"] > rise["old"] and rise["new"] > 0.5 and abs(rise["old"]) < 0.05
    assert r["cpt"]["new"]["val"]["cpt"][-1] < pt_end["cpt"][-1] - 0.5
    assert [r["cpt"][k]["replay"] for k in ("new", "half", "old")] == [0.0, 0.5, 1.0]
    # the model is left at the PT checkpoint; the same seed gives the same curves
    assert eval_loss(m, c1.val, max_windows=128, batch_size=128) == pytest.approx(pt_end["pt"][-1], abs=1e-6)
    assert np.array_equal(_tiny()[1]["cpt"]["half"]["val"]["cpt"], r["cpt"]["half"]["val"]["cpt"])
    curves = cpt.law_curves(r, "pt", 0.9, names=("new", "old"))
    assert list(curves) == ["pt", "new", "old"]
    np.testing.assert_allclose(curves["new"]["S1cpt"], [0.6, 1.2], atol=1e-12)


def test_branches_with_the_same_schedule_give_the_same_losses():
    # issue 46: Optimizer.load_state_dict keeps the checkpoint's moment tensors, which opt.step() then updates in place;
    # without a copy, run "b" started from run "x"'s final Adam moments and step count and differed from run "a"
    ch = markov_chain(8, 1, 0.5, seed=3)
    c1 = markov_corpus(ch, 20_000, 600, seed=0)
    c2 = markov_corpus(cpt.shifted_chain(ch, 0.5, seed=3), 20_000, 600, seed=1)
    torch.manual_seed(0)
    m = TinyLM(16, 1, 2, 8, 8)
    lr = cpt.schedule_lrs("wsd", 40, 3e-2, 4)
    r = cpt.train_pt_cpt(m, c1.train, c2.train, {"pt": c1.val, "cpt": c2.val}, cpt.schedule_lrs("wsd", 60, 3e-2, 5),
                         {"a": (lr, 0.25), "x": (cpt.schedule_lrs("cosine", 40, 5e-2, 4), 0.0), "b": (lr, 0.25)},
                         batch_size=32, eval_every=10, seed=0)
    for d in ("pt", "cpt"):
        assert np.array_equal(r["cpt"]["a"]["val"][d], r["cpt"]["b"]["val"][d])
        assert not np.array_equal(r["cpt"]["a"]["val"][d], r["cpt"]["x"]["val"][d])


def test_shared_prefix_is_where_the_held_out_run_leaves_the_fitted_runs():
    # issue 46 review: the WSD run equals the constant run up to its decay, so only its later evaluations are held out
    peak, C, w = 1e-2, 160, 16
    wsd = cpt.schedule_lrs("wsd", C, peak, w, decay_frac=0.2)
    const, cos = cpt.schedule_lrs("constant", C, peak, w), cpt.schedule_lrs("cosine", C, peak, w)
    n = cpt._shared_prefix(wsd, [const, cos])
    assert np.array_equal(wsd[:n], const[:n]) and wsd[n] != const[n]
    assert 0.7 * C <= n <= 0.85 * C  # the decay starts at 80% of the run
    assert cpt._shared_prefix(wsd, [cos]) < n  # the cosine run leaves the plateau right after warm-up
    assert cpt._shared_prefix(wsd, [wsd]) == C and cpt._shared_prefix(wsd, [wsd[:10]]) == 10
    assert cpt._shared_prefix([1.0, 2.0], [[0.5, 2.0]]) == 0


def test_runs_without_the_replayed_windows(monkeypatch):
    "old=False trains on the replay run's own new-domain windows, and on nothing in place of the old ones."
    seen = []
    real = cpt.lm_loss
    monkeypatch.setattr(cpt, "lm_loss", lambda model, batch: (seen.append(batch.clone()), real(model, batch))[1])
    ch = markov_chain(8, 1, 0.5, seed=3)
    c1 = markov_corpus(ch, 5_000, 200, seed=0)
    c2 = markov_corpus(cpt.shifted_chain(ch, 0.5, seed=3), 5_000, 200, seed=1)
    m = TinyLM(8, 1, 1, 4, 8)
    lr = cpt.schedule_lrs("constant", 3, 1e-2)
    r = cpt.train_pt_cpt(m, c1.train, c2.train, {"pt": c1.val}, lr, {"replay": (lr, 0.25), "none": (lr, 0.25, False)},
                         batch_size=8, eval_every=3, seed=0)
    pt, rep, no_old = seen[:3], seen[3:6], seen[6:]
    assert [b.shape[0] for b in rep] == [8] * 3 and [b.shape[0] for b in no_old] == [6] * 3
    for a, b in zip(rep, no_old):
        assert torch.equal(a[:6], b)
    starts = lambda batch, ids: all(any(np.array_equal(ids[s:s + 5], w) for s in range(len(ids) - 4)) for w in batch.numpy())
    assert starts(rep[0][6:], c1.train) and starts(no_old[0], c2.train)  # the replayed rows are old-domain windows
    assert r["cpt"]["none"]["old"] is False and r["cpt"]["replay"]["old"] is True
    with pytest.raises(ValueError, match="old"):
        cpt.train_pt_cpt(m, c1.train, c2.train, {"pt": c1.val}, lr, {"all": (lr, 1.0, False)}, batch_size=8)
    with pytest.raises(ValueError, match="old"):
        cpt.train_pt_cpt(m, c1.train, c2.train, {"pt": c1.val}, lr, {"x": (lr, 0.5, "no")}, batch_size=8)


def test_bad_input_names_the_argument():
    eta = np.full(10, 0.1)
    cases = [
        (lambda: cpt.forward_area([]), "lrs"),
        (lambda: cpt.annealing_area([0.1, np.nan], 0.9), "lrs"),
        (lambda: cpt.annealing_area(eta, 1.0), "lam"),
        (lambda: cpt.law_areas(eta, eta, 0.9, pt_warmup=10), "pt_warmup"),
        (lambda: cpt.law_areas(eta, [-1.0], 0.9), "cpt_lrs"),
        (lambda: cpt.cpt_law([1, 2, 3], 1, 0, 0, 0), "theta"),
        (lambda: cpt.cpt_law(np.ones(8), 0, 0, 0, 0), "S1pt"),
        (lambda: cpt.fit_cpt_law({}), "curves"),
        (lambda: cpt.fit_cpt_law({"a": {"S1pt": [1.0]}}), "curves['a']"),
        (lambda: cpt.fit_cpt_law(_law_curves(np.r_[1.8, 0.4, 0.6, 0.5, 0.4, 0.3, 20, 0.5]), holdout="x"), "holdout"),
        (lambda: cpt.fit_cpt_law(_law_curves(np.r_[1.8, 0.4, 0.6, 0.5, 0.4, 0.3, 20, 0.5]), floor=float("nan")), "floor"),
        (lambda: cpt.shifted_chain(markov_chain(4, 1), frac=-0.1), "frac"),
        (lambda: cpt.shifted_chain("chain"), "chain"),
        (lambda: cpt.schedule_lrs("step", 10, 0.1), "kind"),
        (lambda: cpt.schedule_lrs("wsd", 0, 0.1), "steps"),
        (lambda: cpt.schedule_lrs("wsd", 10, -0.1), "peak"),
        (lambda: cpt.experiment("huge"), "scale"),
    ]
    for call, name in cases:
        with pytest.raises((ValueError, TypeError)) as e:
            call()
        assert name in str(e.value), (name, str(e.value))
        assert "\n" not in str(e.value)
    m = TinyLM(8, 1, 1, 4, 4)
    ids = np.zeros(100, dtype=np.int64)
    for kwargs, name in [(dict(cpt_runs={"a": ([0.1], 2.0)}), "replay"), (dict(cpt_runs={"a": [0.1]}), "cpt_runs"),
                         (dict(val={}), "val"), (dict(pt_ids=ids[:3]), "pt_ids"), (dict(batch_size=0), "batch_size")]:
        args = dict(model=m, pt_ids=ids, cpt_ids=ids, val={"v": ids}, pt_lrs=[0.1], cpt_runs={})
        args.update(kwargs)
        with pytest.raises((ValueError, TypeError)) as e:
            cpt.train_pt_cpt(**args)
        assert name in str(e.value)
