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


def test_reduction_and_its_lambda_zero_control():
    "1 - new / base; the control compares CFM with itself, so it is 0 and fails every margin > 0."
    assert FD._reduction(2.0, 1.5) == pytest.approx(0.25)
    assert FD._reduction(2.0, 2.5) == pytest.approx(-0.25)
    assert FD._reduction(0.7, 0.7) == 0.0


def test_the_checks_can_fail_on_an_untrained_network():
    "The bound's non-vacuity and the residual floor separate a trained field from an untrained one."
    torch.manual_seed(0)
    model = FD.VelocityMLP(2, 128)
    floor = FD.residual_metric(FD.CheckerboardField(), *FD.eval_batch("checkerboard", 0))
    assert floor / FD.residual_metric(model, *FD.eval_batch("checkerboard", 0)) < 0.9   # conditional_residual_floor
    assert FD.marginal_bound(model, t_points=8, n_grid=41)[0] >= 1.0                  # tv_bound_nonvacuous
    assert FD.marginal_bound(FD.CheckerboardField(), t_points=8, n_grid=41)[0] <= 1e-3  # exact_field_bound_zero
