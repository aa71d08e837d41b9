"""The coopetition chapter's pieces beyond its notebook: the minimal model's closed forms, gradient and training loop
against explicit tensors and autograd, the transience and emergence measures, the exemplar task and its
evaluators, the transformer's training loop, and bad input. Small sizes only (the experiment runs in
tests/test_chapters.py)."""
import math

import numpy as np
import pytest
import torch

from icml25nb.optim import coopetition as C


def _explicit_loss_torch(P, T, mu1, mu2, alpha):
    op = lambda *v: torch.einsum("i,j,k->ijk", *v)
    L1 = 0.5 * ((op(T["a"], T["b"], T["c"]) - op(P["a"], P["b"], P["c"])) ** 2).mean()
    L2 = 0.5 * ((op(T["d"], T["b"], T["c"]) - op(P["d"], P["b"], P["c"])) ** 2).mean()
    return (L1 + mu1) * (L2 + mu2) + alpha * 0.5 * (torch.outer(P["a"], P["d"]) ** 2).mean()


@pytest.mark.parametrize("dims", [(2, 3, 4, 5), (20, 20, 20, 160), (7, 1, 3, 2)])
def test_loss_and_gradient_match_explicit_tensors(dims):
    t, p = C.init_rank1(dims, seed=11)
    for mu1, mu2, alpha in ((0.1, 0.0, 0.1), (0.0, 0.5, 3.0)):
        P = {k: torch.tensor(p[k], requires_grad=True) for k in C.NAMES}
        T = {k: torch.tensor(t[k]) for k in C.NAMES}
        loss = _explicit_loss_torch(P, T, mu1, mu2, alpha)
        loss.backward()
        assert C.coopetition_loss(p, t, mu1, mu2, alpha)["total"] == pytest.approx(loss.item(), rel=1e-12)
        g = C.coopetition_grad(p, t, mu1, mu2, alpha)
        for k in C.NAMES:
            np.testing.assert_allclose(g[k], P[k].grad.numpy(), rtol=1e-9, atol=1e-13)


def test_training_follows_autograd_gradient_descent():
    "The compiled loop equals torch gradient descent on the explicit-tensor loss, with a clamp, step by step."
    dims = (4, 3, 5, 8)
    t, p = C.init_rank1(dims, seed=2)
    out = C.train_coopetition(0.2, 0.1, 0.5, lr=0.7, steps=40, freeze=[("c", 2)], dims=dims, seed=2, thresh=0.0)
    P = {k: torch.tensor(p[k], requires_grad=True) for k in C.NAMES}
    T = {k: torch.tensor(t[k]) for k in C.NAMES}
    with torch.no_grad():
        P["c"][:2] = T["c"][:2]
    for s in range(40):
        loss = _explicit_loss_torch(P, T, 0.2, 0.1, 0.5)
        assert out["total"][s] == pytest.approx(loss.item(), rel=1e-9)
        loss.backward()
        with torch.no_grad():
            for k in C.NAMES:
                P[k] -= 0.7 * P[k].grad
                P[k].grad = None
            P["c"][:2] = T["c"][:2]
    for k in C.NAMES:
        np.testing.assert_allclose(out["params"][k], P[k].detach().numpy(), rtol=1e-8, atol=1e-12)


def test_icl_alone_trains_l1_only_and_leaves_d():
    dims = (5, 5, 5, 9)
    t, p = C.init_rank1(dims, seed=3)
    out = C.train_coopetition(0.1, 0.0, 0.1, steps=200, dims=dims, seed=3, ciwl=False, thresh=0.0)
    np.testing.assert_array_equal(out["params"]["d"], p["d"])
    P = {k: torch.tensor(p[k], requires_grad=True) for k in "abc"}
    T = {k: torch.tensor(t[k]) for k in "abc"}
    op = lambda *v: torch.einsum("i,j,k->ijk", *v)
    L1 = 0.5 * ((op(T["a"], T["b"], T["c"]) - op(P["a"], P["b"], P["c"])) ** 2).mean()
    assert out["total"][0] == pytest.approx(L1.item(), rel=1e-12) == pytest.approx(out["L1"][0], rel=1e-12)


def test_strength_is_zero_when_switched_off_and_one_at_target():
    dims = (4, 4, 4, 6)
    t, _ = C.init_rank1(dims, seed=4)
    z = {k: np.zeros_like(v) for k, v in t.items()}
    out = C.train_coopetition_batch([dict(mu1=0.1, alpha=0.1)], steps=3, lr=1.0, targets=t, init=z, thresh=0.0)
    np.testing.assert_allclose(out["s1"][0], 0.0, atol=1e-15)  # the origin is a critical point: it stays there
    np.testing.assert_allclose(out["s2"][0], 0.0, atol=1e-15)
    out = C.train_coopetition_batch([dict(mu1=0.1, alpha=0.0)], steps=3, targets=t, init=t, thresh=0.0)
    np.testing.assert_allclose(out["s1"][0], 1.0, atol=1e-12)


def test_competition_switches_icl_off_once_ciwl_is_learnt():
    "With b, c, d at their targets (clamped) and mu2 = 0, only alpha C acts on a: a decays to 0, ICL strength to 0."
    dims = (4, 4, 4, 6)
    t, p = C.init_rank1(dims, seed=5)
    init = dict(t, a=p["a"])
    out = C.train_coopetition_batch([dict(mu1=0.1, mu2=0.0, alpha=1.0, freeze=("b", "c", "d")),
                                     dict(mu1=0.1, mu2=0.0, alpha=0.0, freeze=("b", "c", "d"))],
                                    steps=3000, targets=t, init=init, thresh=0.0)
    # closed form: a_{t+1} = (1 - alpha |d|^2 / (n_a n_d)) a_t
    rate = 1 - 1.0 * float(t["d"] @ t["d"]) / (dims[0] * dims[3])
    np.testing.assert_allclose(out["params"]["a"][0], p["a"] * rate ** 3000, atol=1e-12)
    assert abs(out["s1"][0, -1]) < 1e-6
    np.testing.assert_allclose(out["params"]["a"][1], p["a"])  # alpha = 0: nothing moves a


def test_batch_rows_are_independent():
    runs = [dict(mu1=0.1, alpha=0.1), dict(mu1=0.0, alpha=0.3, freeze=["b"]), dict(mu1=0.2, ciwl=False)]
    dims = (3, 4, 5, 6)
    both = C.train_coopetition_batch(runs, steps=100, dims=dims, seed=6)
    for i, r in enumerate(runs):
        one = C.train_coopetition_batch([r], steps=100, dims=dims, seed=6)
        np.testing.assert_array_equal(both["L1"][i], one["L1"][0])
        np.testing.assert_array_equal(both["stop"][i], one["stop"][0])


def test_measures():
    assert C.emergence_step([0.1, 0.49, 0.5, 0.9]) == 2
    assert math.isinf(C.emergence_step([0.1, 0.2]))
    tr = C.transience(np.r_[0.0, 0.8, 0.4], np.r_[0.0, 0.5, 0.95])
    assert tr["transient"] and tr["margin"] == pytest.approx(1.0)
    assert not C.transience(np.r_[0.0, -0.1], np.r_[0.0, 1.0])["transient"]  # never positive: margin inf
    assert C._speedup(100.0, 10.0) == 10.0 and C._speedup(math.inf, 5.0) == math.inf and C._speedup(5.0, math.inf) == 0.0
    assert C._times_sooner(400.0, 100.0, 1000) == 4.0 and C._times_sooner(100.0, 400.0, 1000) == 0.25
    assert C._times_sooner(100.0, math.inf, 1000) == 0.0  # never emerges inside the model: no speed-up
    assert C._times_sooner(math.inf, 100.0, 1000) == 10.0  # never alone: the run's length, a finite lower bound


def test_kept_is_the_fraction_of_an_emerged_peak():
    "`kept` (the claim `icl_fades`): final / peak where ICL emerged (peak >= 0.5), inf where it never did."
    tr = C.transience(np.r_[0.0, 0.9, 0.3], np.r_[0.0, 0.5, 1.0])
    assert tr["kept"] == pytest.approx(0.3 / 0.9) == tr["retained"]
    stuck = C.transience(np.r_[-1.0, 1e-4, 1e-6], np.r_[-1.0, 1e-5, 1e-7])  # at the origin: a ratio of two tiny numbers
    assert stuck["retained"] == pytest.approx(0.01) and math.isinf(stuck["kept"])
    assert C.transience(np.r_[0.0, 0.5, 0.5], np.r_[0.0, 0.5, 0.5])["kept"] == 1.0  # emerged at 0.5 exactly, kept it
    assert C.transience(np.r_[0.0, 0.5, 0.5], np.r_[0.0, 0.5, 0.5], emerge=0.6)["kept"] == math.inf
    assert tr["drop"] == pytest.approx(0.6) and stuck["drop"] == pytest.approx(0.99e-4)  # `drop`: finite on a stuck run


def test_toy_runs_hold_the_papers_mu1_ablation():
    "The control of `icl_fades` is the authors' Appendix C ablation: mu1 = 0 with alpha = 0.1, else as the main run."
    runs = C._toy_runs()
    assert runs["no_mu1"] == dict(runs["coopetition"], mu1=0.0)
    assert runs["coopetition"]["alpha"] == 0.1 and runs["no_competition"]["alpha"] == 0.0


def test_unshared_model_follows_autograd_and_cuts_cooperation():
    "shared=False: mechanism 2 on its own b2, c2 equals autograd descent on that loss; b, c then get only L1's gradient."
    dims = (4, 3, 5, 8)
    t, p = C.init_rank1(dims, seed=7)
    out = C.train_coopetition_batch([dict(mu1=0.2, mu2=0.1, alpha=0.5, shared=False)], steps=50, lr=0.6, targets=t,
                                    init=p, thresh=0.0)
    ref, P = C._unshared_autograd(p, t, 0.2, 0.1, 0.5, 0.6, 50)
    np.testing.assert_allclose(out["total"][0], ref, rtol=1e-10)
    for k in ("a", "b", "c", "d", "b2", "c2"):
        np.testing.assert_allclose(out["params"][k][0], P[k], rtol=1e-8, atol=1e-12)
    # with a at 0 mechanism 1 has no gradient on b, c: in one step only a shared run moves them (through L2)
    z = dict(p, a=np.zeros(dims[0]))
    both = C.train_coopetition_batch([dict(mu1=0.1, alpha=0.0, shared=False), dict(mu1=0.1, alpha=0.0)], steps=1,
                                     targets=t, init=z, thresh=0.0)
    np.testing.assert_array_equal(both["params"]["b"][0], p["b"])
    assert not np.allclose(both["params"]["b"][1], p["b"])
    assert not np.allclose(both["params"]["b2"][0], p["b"])  # mechanism 2's own copy learns


def test_bursty_sequences_and_task():
    task = C.make_exemplar_task(n_classes=40, n_labels=6, dim=5, sigma=0.1, n_novel=10, seed=1)
    x, yc, yq = C.make_bursty_sequences(task, 500, p_bursty=1.0, n_ctx=3, rng=0)
    assert x.shape == (500, 4, 5) and x.dtype == np.float32 and yc.shape == (500, 3)
    assert (yc == yq[:, None]).any(1).all()
    # the query's exemplar is near its class mean (noise 0.1, normalised)
    d = ((x[:, -1, None, :] - task.means[None] / math.sqrt(1.01)) ** 2).sum(-1)
    np.testing.assert_array_equal(task.labels[d.argmin(1)], yq)
    _, yc2, yq2 = C.make_bursty_sequences(task, 4000, p_bursty=0.5, n_ctx=1, rng=1)
    assert 0.5 < np.mean(yc2[:, 0] == yq2) < 0.65  # half bursty + 1/6 by chance of the rest
    x, yc, yq = C.make_ciwl_only_sequences(task, 500, rng=3)
    assert x.shape == (500, 3, 5) and ((yc == yq[:, None]).sum(1) == 1).all()  # the query's label once in context
    d = ((x[:, :, None, :] - task.means[None, None] / math.sqrt(1.01)) ** 2).sum(-1).argmin(-1)
    assert (d[:, :2] != d[:, 2:]).all()  # never the query's class in the context
    assert (task.labels[d[:, -1]] == yq).all()


def test_evaluators_construct_what_they_claim():
    task = C.make_exemplar_task(n_classes=50, n_labels=8, dim=4, seed=2)
    rng = np.random.default_rng(0)
    x, lab, j = C._ciwl_eval(task, 300, rng)
    # the query's class is absent from the context, its label is at position j, the other label differs
    q_label = lab[np.arange(300), j]
    assert (lab[np.arange(300), 1 - j] != q_label).all()
    x, lab, y = C._iwl_eval(task, 300, rng)
    assert not (lab == y[:, None]).any()
    x, lab, j = C._icl_eval(task, 300, rng)
    assert sorted(map(tuple, np.unique(np.sort(lab, 1), axis=0))) == [(0, 1)]


def test_transformer_shapes_and_training_loop():
    task = C.make_exemplar_task(n_classes=16, n_labels=4, dim=6, seed=3)
    m = C.ExemplarTransformer(6, 4, d_model=16, n_layers=1, n_heads=2)
    x, yc, _ = C.make_bursty_sequences(task, 7, rng=2)
    assert m(torch.from_numpy(x), torch.from_numpy(yc)).shape == (7, 4)
    with pytest.raises(ValueError, match="x must be"):
        m(torch.from_numpy(x[:, :2]), torch.from_numpy(yc))
    r = C.train_icl_transformer(task, steps=60, lr=3e-3, d_model=16, n_layers=1, n_heads=2, eval_every=30, n_eval=40, seed=0)
    assert list(r["step"]) == [0, 30, 60] and len(r["icl"]) == 3 and np.isfinite(r["loss"]).all()
    # CIWL-only data: copying one of the two context labels is learnable, so the loss falls towards ln 2
    r = C.train_icl_transformer(task, steps=150, lr=5e-3, d_model=16, n_layers=1, n_heads=2, eval_every=150, n_eval=40,
                                seed=0, ciwl_only=True)
    assert r["loss"][-20:].mean() < 0.5 * r["loss"][:5].mean()
    assert 0 <= min(r["icl"].min(), r["ciwl"].min(), r["iwl"].min()) <= max(r["icl"].max(), r["ciwl"].max()) <= 1


@pytest.mark.parametrize("call, arg", [
    (lambda: C.train_coopetition(float("nan"), 0, 0), "mu1"),
    (lambda: C.train_coopetition(0.1, -1, 0), "mu2"),
    (lambda: C.train_coopetition(0.1, 0, "x"), "alpha"),
    (lambda: C.train_coopetition(0.1, 0, 0.1, steps=2.5), "steps"),
    (lambda: C.train_coopetition(0.1, 0, 0.1, freeze=[("b", -1)]), "freeze"),
    (lambda: C.train_coopetition(0.1, 0, 0.1, dims=(2, 2)), "dims"),
    (lambda: C.train_coopetition_batch([], steps=5), "runs"),
    (lambda: C.train_coopetition_batch([dict(mu1=0.1, shared=1)], steps=5), "shared"),
    (lambda: C.coopetition_loss({"a": np.ones(2)}, {"a": np.ones(2)}), "params"),
    (lambda: C.init_rank1((2, 2, 2, 0)), "dims"),
    (lambda: C.init_rank1((2, 2, 2, 2), seed=-1), "seed"),
    (lambda: C.make_exemplar_task(sigma=-1.0), "sigma"),
    (lambda: C.make_exemplar_task(n_labels=1), "n_labels"),
    (lambda: C.make_bursty_sequences(C.make_exemplar_task(n_classes=4, n_novel=2), 0), "n"),
    (lambda: C.train_icl_transformer(C.make_exemplar_task(n_classes=4, n_novel=2), lr=0.0), "lr"),
    (lambda: C.emergence_step([]), "s must"),
    (lambda: C.experiment("huge"), "scale"),
])
def test_bad_input_names_the_argument(call, arg):
    with pytest.raises((ValueError, TypeError), match=arg):
        call()
