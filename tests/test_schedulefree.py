"""optim/schedulefree: the O2NC reduction, the optimizer (against the NumPy reference and, where installed, the
`schedulefree` package), the Goldstein estimator and the batched MLP runs, at tiny sizes. The chapter's experiment
itself runs in tests/test_chapters.py (seed 1) and in the notebook (seed 0), not here."""
import contextlib

import numpy as np
import pytest
import torch

from icml25nb.core import make_rng
from icml25nb.optim.schedulefree import (CLAIMS, SCHEDULES, DiscountedOGD, ScheduleFreeSGD, abs_ridge, abs_well,
                                         averaging_coefficient, envelope_exponent, fitted_exponent, goldstein_norm, init_mlp,
                                         min_norm_point, multiclass_hinge, noisy_digits, o2nc, schedule_free_as_o2nc,
                                         sf_sgd, stationarity_runs, train_ensemble)


@pytest.mark.parametrize("c", ["uniform", 0.03, 1.0])
def test_o2nc_with_sf_parameters_reproduces_sf_sgd(c):
    F = abs_well()
    x0 = np.array([0.4, -1.2, 0.1, 2.0])
    ref = sf_sgd(F.grad, x0, 400, lr=0.15, beta=0.8, c=c, noise=0.5, seed=7)
    learner, s = schedule_free_as_o2nc(4, lr=0.15, beta=0.8, c=c)
    conv = o2nc(F.grad, x0, learner, 400, interpolation=s, noise=0.5, seed=7)
    np.testing.assert_allclose(conv["w"], ref["y"], atol=1e-11)
    np.testing.assert_allclose(conv["x"][1:], ref["x"][:-1], atol=1e-11)


def test_o2nc_mapping_is_not_vacuous():
    # a wrong interpolation (the segment's random point) or a wrong discount changes the iterates
    F, x0 = abs_well(), np.array([0.4, -1.2])
    ref = sf_sgd(F.grad, x0, 200, lr=0.15, beta=0.8, c=0.05, noise=0.5, seed=7)
    learner, s = schedule_free_as_o2nc(2, lr=0.15, beta=0.8, c=0.05)
    assert np.abs(o2nc(F.grad, x0, learner, 200, "uniform", 0.5, 7)["w"] - ref["y"]).max() > 1e-3
    wrong = DiscountedOGD(2, lr=0.15 * 0.05, discount=1.0)
    assert np.abs(o2nc(F.grad, x0, wrong, 200, s, 0.5, 7)["w"] - ref["y"]).max() > 1e-3


def test_averaging_and_beta_limits():
    assert [averaging_coefficient(k) for k in range(4)] == [1.0, 1.0, 0.5, 1 / 3]
    assert averaging_coefficient(100, 0.05) == 0.05 and averaging_coefficient(5, 0.05) == 0.2
    run = sf_sgd(abs_well().grad, np.array([0.3, -0.2]), 40, lr=0.1, noise=0.5, seed=1)
    np.testing.assert_allclose(run["x"][-1], run["z"][1:].mean(0), atol=1e-12)  # c_k = 1/k: running mean of z


@pytest.mark.parametrize("c", ["uniform", 0.1])
def test_torch_optimizer_matches_reference(c):
    F, x0 = abs_well(), np.array([0.7, -0.2, 1.6])
    ref = sf_sgd(F.grad, x0, 150, lr=0.05, beta=0.6, c=c)
    p = torch.nn.Parameter(torch.tensor(x0))
    opt = ScheduleFreeSGD([p], lr=0.05, beta=0.6, c=c)
    for _ in range(150):
        p.grad = torch.tensor(F.grad(p.detach().numpy()))
        opt.step()
    np.testing.assert_allclose(p.detach().numpy(), 0.6 * ref["x"][-1] + 0.4 * ref["z"][-1], atol=1e-12)
    with opt.use_x():
        np.testing.assert_allclose(p.detach().numpy(), ref["x"][-1], atol=1e-12)
        with pytest.raises(RuntimeError, match="inside use_x"):
            opt.step()
    np.testing.assert_allclose(p.detach().numpy(), 0.6 * ref["x"][-1] + 0.4 * ref["z"][-1], atol=1e-12)


def test_matches_schedulefree_package_step_for_step():
    schedulefree = pytest.importorskip("schedulefree")
    torch.manual_seed(0)
    nets = [torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.ReLU(), torch.nn.Linear(12, 4)).double()
            for _ in range(2)]
    nets[1].load_state_dict(nets[0].state_dict())
    ours = ScheduleFreeSGD(nets[0].parameters(), lr=0.3, beta=0.9, warmup_steps=4)
    peer = schedulefree.SGDScheduleFree(nets[1].parameters(), lr=0.3, momentum=0.9, warmup_steps=4, foreach=False)
    peer.train()
    X, Y = torch.randn(25, 10, 6, dtype=torch.float64), torch.randint(0, 4, (25, 10))
    for t in range(25):
        for net, opt in zip(nets, (ours, peer)):
            opt.zero_grad()
            torch.nn.functional.multi_margin_loss(net(X[t]), Y[t]).backward()
            opt.step()
        for a, b in zip(nets[0].parameters(), nets[1].parameters()):  # at y
            torch.testing.assert_close(a, b, atol=1e-12, rtol=0)
    peer.eval()
    with ours.use_x():  # at x
        for a, b in zip(nets[0].parameters(), nets[1].parameters()):
            torch.testing.assert_close(a, b, atol=1e-12, rtol=0)


def test_min_norm_point_solvers_agree_and_are_optimal():
    rng = np.random.default_rng(3)
    for _ in range(40):
        G = rng.standard_normal((int(rng.integers(2, 12)), int(rng.integers(1, 5)))) + rng.standard_normal() * 2
        p = min_norm_point(G)
        assert (G @ p).min() >= p @ p - 1e-9  # optimality: every g_i is on the far side of the plane through p
        assert abs(np.linalg.norm(p) - np.linalg.norm(min_norm_point(G, "slsqp"))) < 1e-6
    np.testing.assert_allclose(min_norm_point([[1.0, 1.0], [1.0, -1.0]]), [1.0, 0.0], atol=1e-9)
    np.testing.assert_allclose(min_norm_point([[1.0, 0.0], [-1.0, 0.0]]), [0.0, 0.0], atol=1e-9)


def test_goldstein_norm_at_known_points():
    R = abs_ridge()
    assert goldstein_norm(R.grad, np.array([0.0, 1.0, -1.0]), 0.01, 32) < 1e-4  # stationary kink
    assert goldstein_norm(R.grad, np.array([0.05, 1.0, -1.0]), 0.01, 32) > 0.9  # the ball misses the kink
    p = np.array([1.0, 2.0, 2.0])
    assert abs(goldstein_norm(R.grad, p, 1e-6, 8) - np.linalg.norm(R.grad(p))) < 1e-4
    assert goldstein_norm(R.grad, p, 0.1, 8, seed=3) == goldstein_norm(R.grad, p, 0.1, 8, seed=3)


def test_stationarity_runs_match_reference():
    F = abs_well()
    pts = stationarity_runs(F, "sf", [0.2], [30, 120], replicas=2, dim=3, noise=0.0, seed=9)
    x0 = make_rng(9).uniform(-0.5, 0.5, (2, 3))
    for j, T in enumerate([30, 120]):
        gam = 0.2 * (T / 30) ** (-1 / 3)
        ref = sf_sgd(F.grad, x0[0], T, lr=gam, beta=0.9, c=min(1.0, gam ** 2))
        np.testing.assert_allclose(pts[0, j, 0], ref["x"][-1], atol=1e-12)
    assert abs(fitted_exponent([1, 8, 64], [1.0, 0.5, 0.25]) + 1 / 3) < 1e-12


def test_envelope_tunes_each_horizon_separately():
    curves = np.array([[1.0, 0.5, 0.4], [2.0, 0.4, 0.1], [3.0, 3.0, 3.0]])
    env, at, e = envelope_exponent([10, 100, 1000], curves, [0.1, 0.01, 0.001])
    assert env == [1.0, 0.4, 0.1] and at == [0.1, 0.01, 0.01]
    assert abs(e - fitted_exponent([10, 100, 1000], env)) < 1e-12
    assert all(abs(e - fitted_exponent([10, 100, 1000], row)) > 0.1 for row in curves)  # not any one row's rate
    with pytest.raises(ValueError, match="curves must have shape"):
        envelope_exponent([10, 100, 1000], curves[:, :2], [0.1, 0.01, 0.001])


def test_horizon_tuned_sgd_reruns_with_step_over_sqrt_T():
    F = abs_well()
    pts = stationarity_runs(F, "sgd_tuned", [0.2, 0.05], [30, 120], replicas=2, dim=3, noise=0.0, seed=9)
    x0 = make_rng(9).uniform(-0.5, 0.5, (2, 3))
    for i, g in enumerate([0.2, 0.05]):
        for j, T in enumerate([30, 120]):
            x = x0.copy()
            for _ in range(T):
                x = x - g * (T / 30) ** -0.5 * F.grad(x)
            np.testing.assert_allclose(pts[i, j], x, atol=1e-12)
    # not the constant-step run read at each horizon
    const = stationarity_runs(F, "sgd", [0.2, 0.05], [30, 120], replicas=2, dim=3, noise=0.0, seed=9)
    assert np.abs(const[1, 1] - pts[1, 1]).max() > 1e-3


def test_batched_mlp_members_equal_ordinary_optimizers():
    X, Y = noisy_digits(0.2, seed=1)
    X, Y = X[:48], Y[:48]
    ens = train_ensemble(X, Y, [0.2, 0.5], T=10, batch_size=6, hidden=6, seed=1, n_evals=2,
                         methods=("wsd", "schedulefree"))
    idx = make_rng(1, 1).integers(0, 48, (10, 6))
    Xt, Yt = torch.tensor(X), torch.tensor(Y)
    for row, m in enumerate(("wsd", "schedulefree")):
        for col, lr in enumerate((0.2, 0.5)):
            w = init_mlp([64, 6, 6, 10], 1)
            net = torch.nn.Sequential(torch.nn.Linear(64, 6), torch.nn.ReLU(), torch.nn.Linear(6, 6), torch.nn.ReLU(),
                                      torch.nn.Linear(6, 10))
            with torch.no_grad():
                for lin, W, b in zip(net[::2], w[::2], w[1::2]):
                    lin.weight.copy_(W.T)
                    lin.bias.copy_(b)
            opt = ScheduleFreeSGD(net.parameters(), lr=lr) if m == "schedulefree" else torch.optim.SGD(net.parameters(), lr=lr)
            for t in range(10):
                if m == "wsd":
                    opt.param_groups[0]["lr"] = SCHEDULES["wsd"](t, 10, peak=lr)
                opt.zero_grad()
                multiclass_hinge(net(Xt[idx[t]]), Yt[idx[t]]).backward()
                opt.step()
            with torch.no_grad(), (opt.use_x() if m == "schedulefree" else contextlib.nullcontext()):
                assert abs(multiclass_hinge(net(Xt), Yt).item() - ens["loss"][row, col, -1]) < 1e-5


def test_bad_input_names_the_argument():
    F = abs_well()
    cases = [
        (lambda: sf_sgd(F.grad, np.zeros(2), 10, lr=0.1, beta=1.0), "beta"),
        (lambda: sf_sgd(F.grad, np.zeros(2), 10, lr=0.1, c=0.0), "c must be"),
        (lambda: sf_sgd(F.grad, np.array([np.nan, 0.0]), 10, lr=0.1), "x0"),
        (lambda: sf_sgd(F.grad, np.zeros(2), 10, lr=0.1, noise=-1.0), "noise"),
        (lambda: ScheduleFreeSGD([torch.nn.Parameter(torch.zeros(2))], lr=-1.0), "lr"),
        (lambda: ScheduleFreeSGD([torch.nn.Parameter(torch.zeros(2))], lr=1.0, warmup_steps=-1), "warmup_steps"),
        (lambda: goldstein_norm(F.grad, np.zeros(2), -1.0), "delta"),
        (lambda: goldstein_norm(F.grad, np.zeros((2, 2)), 0.1), "x must be"),
        (lambda: goldstein_norm("grad", np.zeros(2), 0.1), "grad_fn"),
        (lambda: min_norm_point(np.ones((2, 2)), method="qp"), "method"),
        (lambda: o2nc(F.grad, np.zeros(2), DiscountedOGD(2, 0.1), 0), "T must be"),
        (lambda: o2nc(F.grad, np.zeros(2), DiscountedOGD(2, 0.1), 5, interpolation="beta"), "interpolation"),
        (lambda: DiscountedOGD(2, lr=0.1, radius=0.0), "radius"),
        (lambda: stationarity_runs(F, "sf", [0.0], [10]), "lrs"),
        (lambda: stationarity_runs(F, "adam", [0.1], [10]), "method must be"),
        (lambda: stationarity_runs(F, "sf", [0.1], [10], replicas=0), "replicas"),
        (lambda: train_ensemble(np.zeros((4, 3)), np.zeros(3), [0.1], T=2, n_evals=1), "X must be"),
        (lambda: noisy_digits(1.5), "label_noise"),
    ]
    for fn, word in cases:
        with pytest.raises((ValueError, TypeError), match=word):
            fn()


def test_claims_declared():
    paper = {c.id: c for c in CLAIMS if c.kind == "paper"}
    assert set(paper) == {"goldstein_rate", "goldstein_rate_band", "goldstein_rate_one_sided", "goldstein_rate_envelope",
                          "anytime", "final_within_5pct"}
    assert all(c.control and c.basis and c.tests and c.control_basis for c in paper.values())
    assert [c.id for c in paper.values() if c.withdrawn] == ["goldstein_rate"] and paper["goldstein_rate"].reason
    # issue 46: the two-sided band as written, the one-sided version beside it, both against horizon-tuned SGD
    band, one = paper["goldstein_rate_band"], paper["goldstein_rate_one_sided"]
    assert (band.metric, band.op, band.threshold, band.control) == ("sf_exponent_gap", "<=", 0.1, "sgd_tuned_exponent_gap")
    assert (one.metric, one.op, one.control) == ("sf_exponent", "<=", "sgd_tuned_exponent")
    assert abs(one.threshold - (-1 / 3 + 0.1)) < 1e-12 and band.source == one.source == "issue 46"
    # issue 46, second review: the band at each horizon's own best grid value, against the same envelope of the control
    env = paper["goldstein_rate_envelope"]
    assert (env.metric, env.op, env.threshold, env.control, env.source) == (
        "sf_envelope_exponent_gap", "<=", 0.1, "sgd_tuned_envelope_exponent_gap", "issue 46")
    assert paper["anytime"].source == paper["final_within_5pct"].source == "issue 27"  # the numbers
    assert {c.id for c in CLAIMS if c.kind == "check"} == {"o2nc_reproduces_sf", "torch_matches_reference",
                                                          "goldstein_estimator"}
