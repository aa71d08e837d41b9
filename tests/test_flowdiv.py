"""The flowdiv chapter's divergences against autograd Jacobians, the residual's formula, and bad input."""
import numpy as np
import pytest
import torch

from icml25nb.generative import flowdiv as FD


def _jacobian_trace(model, x, t):
    out = []
    for i in range(len(x)):
        J = torch.autograd.functional.jacobian(lambda z: model(z[None], t[i:i + 1])[0], x[i])
        out.append(torch.trace(J))
    return torch.stack(out)


@pytest.mark.parametrize("dim,hidden", [(2, 16), (3, 8)])
def test_exact_divergence_is_the_jacobian_trace(dim, hidden):
    torch.manual_seed(dim)
    model = FD.VelocityMLP(dim, hidden, layers=2).double()
    x, t = torch.randn(6, dim, dtype=torch.float64), torch.rand(6, dtype=torch.float64)
    torch.testing.assert_close(FD.exact_divergence(model, x, t), _jacobian_trace(model, x, t))


def test_hutchinson_converges_to_the_trace():
    torch.manual_seed(0)
    model = FD.VelocityMLP(2, 16, layers=2).double()
    x, t = torch.randn(5, 2, dtype=torch.float64), torch.rand(5, dtype=torch.float64)
    est = FD.hutchinson_divergence(model, x, t, probes=20000, generator=torch.Generator().manual_seed(1))
    exact = FD.exact_divergence(model, x, t)
    assert (est - exact).abs().max() < 0.05 * exact.abs().max() + 1e-3


def test_residual_formula_with_the_exact_divergence():
    "r = div v - div u + (v - u) . score, with div u = -d / (1 - t) and score = -x0 / (1 - t)."
    torch.manual_seed(2)
    model = FD.VelocityMLP(2, 16, layers=2)
    x0, x1, t = torch.randn(7, 2), torch.randn(7, 2), torch.rand(7) * 0.9
    ps = FD.AffinePath().sample(x0, x1, t)
    r = FD.divergence_residual(model, ps, exact=True)
    v = model(ps.x, t).detach()
    want = FD.exact_divergence(model, ps.x, t) + 2 / (1 - t) + ((v - (x1 - x0)) * (-x0 / (1 - t)[:, None])).sum(1)
    torch.testing.assert_close(r.detach(), want.detach(), rtol=1e-5, atol=1e-5)


def test_fdm_loss_has_gradients_and_reduces_to_cfm_at_zero_weight():
    torch.manual_seed(3)
    model = FD.VelocityMLP(2, 16, layers=2)
    ps = FD.AffinePath().sample(torch.randn(32, 2), torch.randn(32, 2), torch.rand(32) * 0.99)
    torch.testing.assert_close(FD.fdm_loss(model, ps, 0.0), FD.cfm_loss(model, ps))
    loss = FD.fdm_loss(model, ps, 1.0, generator=torch.Generator().manual_seed(0))
    loss.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


def test_bad_input():
    with pytest.raises(ValueError, match="method"):
        FD.train_flow("checkerboard", "sgd", steps=1)
    with pytest.raises(ValueError, match="lam"):
        FD.fdm_loss(FD.VelocityMLP(), FD.AffinePath().sample(torch.zeros(2, 2), torch.zeros(2, 2), torch.zeros(2)), -1.0)
    with pytest.raises(ValueError, match="kind"):
        FD.AffinePath("vp")
    with pytest.raises(ValueError, match="t must"):
        FD.AffinePath().sample(torch.zeros(2, 2), torch.zeros(2, 2), torch.tensor([0.5, -0.1]))
    with pytest.raises(ValueError, match="n must"):
        FD.sample_2d("two_moons", 0)
    with pytest.raises(ValueError, match="x must"):
        FD.log_likelihood(FD.VelocityMLP(), np.zeros((3, 5)))


def test_a_short_training_run_lowers_the_cfm_loss():
    model, hist = FD.train_flow("eight_gaussians", "cfm", steps=200, batch=128, hidden=32, log_every=100)
    assert hist.shape == (3, 3) and np.isfinite(hist).all()
    g = torch.Generator().manual_seed(5)
    x1 = torch.tensor(FD.sample_2d("eight_gaussians", 512, 9), dtype=torch.float32)
    ps = FD.AffinePath().sample(torch.randn(512, 2, generator=g), x1, torch.rand(512, generator=g) * 0.99)
    torch.manual_seed(0)
    fresh = FD.VelocityMLP(2, 32)
    assert float(FD.cfm_loss(model, ps)) < float(FD.cfm_loss(fresh, ps))


def test_freeze_changes_the_gradient_not_the_value():
    "The stop-gradient of the authors' code: same residual, but v enters the product term as a constant."
    torch.manual_seed(4)
    model = FD.VelocityMLP(2, 16, layers=2)
    ps = FD.AffinePath().sample(torch.randn(16, 2), torch.randn(16, 2), torch.rand(16) * 0.9)
    r0 = FD.divergence_residual(model, ps, exact=True, create_graph=True)
    r1 = FD.divergence_residual(model, ps, exact=True, create_graph=True, freeze=True)
    torch.testing.assert_close(r0, r1)
    grads = []
    for freeze in (False, True):
        model.zero_grad()
        FD.fdm_loss(model, ps, 1.0, exact=True, freeze=freeze).backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    assert not torch.allclose(grads[0], grads[1])


def test_extra_terms_match_an_explicit_jacobian():
    "The authors' script's terms: element-wise residual from Jacobian column sums, and the d^2-weighted CFM term."
    torch.manual_seed(5)
    model = FD.VelocityMLP(2, 16, layers=2).double()
    x0, x1 = torch.randn(6, 2, dtype=torch.float64), torch.randn(6, 2, dtype=torch.float64)
    ps = FD.AffinePath().sample(x0, x1, torch.rand(6, dtype=torch.float64) * 0.9)
    cfm = FD.cfm_loss(model, ps)
    torch.testing.assert_close(FD.fdm_loss(model, ps, 0.0, exact=True, extra_terms=True), cfm / 2)
    v = model(ps.x, ps.t).detach()
    J = torch.stack([torch.autograd.functional.jacobian(lambda z: model(z[None], ps.t[i:i + 1])[0], ps.x[i])
                     for i in range(6)])                      # J[n, i, j] = dv_i / dx_j
    sig = ps.sigma[:, None]
    r = J.diagonal(dim1=1, dim2=2).sum(1) + 2 / ps.sigma + ((v - ps.u) * ps.score).sum(1)
    e = J.sum(1) + (v - ps.u) * ps.score + 1 / sig
    want = cfm / 2 + 0.7 * (((ps.sigma * r) ** 2).mean() + ((sig * e) ** 2).mean() + 2 * cfm)
    torch.testing.assert_close(FD.fdm_loss(model, ps, 0.7, exact=True, extra_terms=True), want)


def test_reduction():
    "1 - new / base."
    assert FD._reduction(2.0, 1.5) == pytest.approx(0.25)
    assert FD._reduction(2.0, 2.5) == pytest.approx(-0.25)
    assert FD._reduction(0.7, 0.7) == 0.0


def test_the_control_replicate_differs_from_cfm_and_shares_its_data():
    "The control's CFM replicate: another initialisation and batch stream, the same evaluation points."
    kw = dict(steps=5, batch=16, hidden=8, log_every=5, layers=2)
    m0, h0 = FD.train_flow("checkerboard", "cfm", seed=3, **kw)
    m1, h1 = FD.train_flow("checkerboard", "cfm", seed=3, init_seed=3, **kw)
    m2, h2 = FD.train_flow("checkerboard", "cfm", seed=3, init_seed=3 + FD.REPLICATE_OFFSET, **kw)
    p = lambda m: torch.cat([q.detach().flatten() for q in m.parameters()])
    torch.testing.assert_close(p(m0), p(m1))              # init_seed defaults to seed
    assert not torch.allclose(p(m0), p(m2))               # a different network
    # the evaluation batch follows seed, not init_seed: both runs' residuals are measured on the same points
    e = FD.eval_batch("checkerboard", 3)
    assert FD.residual_metric(m0, *e) == pytest.approx(h0[-1, 1], rel=1e-5)
    assert FD.residual_metric(m2, *e) == pytest.approx(h2[-1, 1], rel=1e-5)


def test_authors_schedule_and_options():
    "Their warm-up (10 steps) and step decay (x0.999 every 10 steps); the options' bad values."
    f = FD.authors_lr_factor
    assert f(0) == pytest.approx(0.1) and f(4) == pytest.approx(0.5) and f(9) == 1.0
    assert f(10) == pytest.approx(0.999) and f(1499) == pytest.approx(0.999 ** 149)
    for bad, match in ((dict(lr_schedule="cosine"), "lr_schedule"), (dict(t_max=0.0), "t_max"),
                       (dict(data_scale=-1.0), "data_scale"), (dict(layers=0), "layers")):
        with pytest.raises(ValueError, match=match):
            FD.train_flow("checkerboard", steps=1, **bad)
    # t_max = 1 (theirs) trains without hitting the point mass at t = 1, on scaled data
    m, h = FD.train_flow("checkerboard", "fdm", steps=3, batch=16, hidden=8, layers=4, log_every=3, t_max=1.0,
                         data_scale=FD.AUTHORS_DATA_SCALE, lr_schedule="authors", extra_terms=True)
    assert np.isfinite(h).all() and len(m.net) == 2 * 4 + 1


@pytest.mark.parametrize("scale", [1.0, 1 / 0.45])
def test_scaled_checkerboard_closed_forms(scale):
    "p_t of the scaled checkerboard is a density, p_1 is the scaled data's, and the exact field matches Monte Carlo."
    g = torch.linspace(-4.5 * scale, 4.5 * scale, 241, dtype=torch.float64)
    X = torch.stack(torch.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    dA = float(g[1] - g[0]) ** 2
    for t in (0.3, 0.8):
        assert float(FD.checkerboard_path_density(X, torch.full((len(X),), t), scale).sum()) * dA == pytest.approx(1, abs=1e-3)
    pts = torch.tensor([[0.5, 0.5], [0.5, 1.5]], dtype=torch.float64) * scale
    torch.testing.assert_close(FD.checkerboard_path_density(pts, torch.full((2,), 0.9999), scale),
                               torch.tensor([1 / 8, 0.0], dtype=torch.float64) / scale ** 2, atol=1e-3 / scale ** 2, rtol=0)
    np.testing.assert_allclose(FD.checkerboard_density(pts.numpy(), scale), [1 / 8 / scale ** 2, 0.0])
    field = FD.CheckerboardField(scale=scale)
    x1s = torch.tensor(FD.sample_2d("checkerboard", 200_000, seed=3) * scale, dtype=torch.float64)
    for t_, x_ in ((0.3, [0.4, -0.9]), (0.8, [1.1, 0.2])):
        x_ = torch.tensor([x_], dtype=torch.float64) * scale
        w = torch.softmax(-((x_ - t_ * x1s) ** 2).sum(1) / (2 * (1 - t_) ** 2), 0)
        mc = ((w[:, None] * x1s).sum(0) - x_[0]) / (1 - t_)
        torch.testing.assert_close(field(x_, torch.tensor([t_], dtype=torch.float64))[0], mc, atol=3e-2 * scale, rtol=0)
    assert FD.marginal_bound(field, t_points=4, lim=3.5 * scale, n_grid=31, scale=scale)[0] <= 1e-3
    # a wrong scale is caught: the unscaled field does not solve the scaled path's continuity equation
    if scale != 1.0:
        assert FD.marginal_bound(FD.CheckerboardField(), t_points=4, lim=3.5 * scale, n_grid=31, scale=scale)[0] > 0.1


def test_fdm_gain_runs_a_setting():
    "The factor study's measurement: an override of the configuration reaches the training."
    out = FD.fdm_gain("fast", 0, steps=3, n_test=40, ll_steps=4, hidden=8, **FD.FACTORS["depth"])
    assert set(out) == {"kl_cfm", "kl_fdm", "gain"} and np.isfinite(list(out.values())).all()
    assert out["gain"] == pytest.approx(1 - out["kl_fdm"] / out["kl_cfm"])


def test_the_checks_can_fail_on_an_untrained_network():
    "The bound's non-vacuity and the residual floor separate a trained field from an untrained one."
    torch.manual_seed(0)
    cfg = FD.SCALE_CONFIG["fast"]
    sc = cfg["data_scale"]
    model = FD.VelocityMLP(2, cfg["hidden"], cfg["layers"])
    ev = FD.eval_batch("checkerboard", 0, data_scale=sc)
    floor = FD.residual_metric(FD.CheckerboardField(scale=sc), *ev)
    assert floor / FD.residual_metric(model, *ev) < 0.9                                            # residual floor
    assert FD.marginal_bound(model, t_points=8, lim=3.5 * sc, n_grid=41, scale=sc)[0] >= 1.0      # nonvacuous
    assert FD.marginal_bound(FD.CheckerboardField(), t_points=8, n_grid=41)[0] <= 1e-3             # exact field


def test_both_arms_against_the_replicate(monkeypatch):
    "The `_vs_replicate` pairs: FDM and CFM each against the same CFM replicate; they follow from the paired numbers."
    tiny = {**FD.SCALE_CONFIG["fast"], "steps": 4, "batch": 16, "hidden": 8, "layers": 2, "n_test": 64,
            "probes": 1000, "ll_steps": 4}
    monkeypatch.setitem(FD.SCALE_CONFIG, "fast", tiny)
    r = FD.experiment("fast", 1)
    for name in ("kl", "tv", "bound", "residual"):
        t, c = r[f"{name}_reduction"], r[f"control_{name}_reduction"]
        ft, fc = r[f"{name}_reduction_vs_replicate"], r[f"control_{name}_reduction_vs_replicate"]
        assert ft == pytest.approx(1 - (1 - t) / (1 - c), rel=1e-9, abs=1e-12), name
        assert fc == pytest.approx(1 - 1 / (1 - c), rel=1e-9, abs=1e-12), name
        runs = r["runs"]
        assert ft == pytest.approx(FD._reduction(runs["cfm_replicate"][name], runs["fdm"][name]), abs=1e-12)
