"""The pcl chapter's pieces beyond its notebook: data generators, the loss's terms, inference, the leakage path and
bad input. tests/test_chapters.py runs the experiment itself (seed 1); nothing here calls experiment() at fast."""
import numpy as np
import pytest
import torch

from icml25nb.kernels import springs as SK
from icml25nb.supervised import pcl as P


def test_springs_labels_are_the_integrated_positions():
    X, Y = P.nbody_springs(5, 3, steps=15, seed=2)
    x0, v0, A = SK.random_springs(5, 3, seed=2)
    np.testing.assert_allclose(X[:, :6], x0.reshape(5, -1), rtol=1e-6)
    np.testing.assert_allclose(X[:, 12:], A[:, [0, 0, 1], [1, 2, 2]])
    np.testing.assert_allclose(Y, SK.simulate_ref(x0, v0, A, 1.0, 0.01, 15)[0].reshape(5, -1), rtol=1e-5, atol=1e-6)


def test_digits_occlusion_and_shuffle_depend_on_seed():
    (X0, Y0), (X1, Y1) = P.occluded_digits(0), P.occluded_digits(1)
    assert not np.array_equal(Y0, Y1) and sorted(map(tuple, Y0)) == sorted(map(tuple, Y1))
    masked = X0[:, 64:] == 0
    assert (masked.sum(1) == 20).all() and np.all(X0[:, :64][masked] == 0)


def test_loss_is_the_sum_of_its_three_terms():
    "pcl_loss with a network that returns y_t unchanged: the terms are computable by hand from the same draws."
    class Echo(torch.nn.Module):
        T = 1000
        def forward(self, x, y_t, t):
            return y_t
    sched = P.linear_schedule(1000)
    y = torch.randn(32, 3)
    got = P.pcl_loss(Echo(), torch.zeros(32, 1), y, sched, 0.5, generator=torch.Generator().manual_seed(7))
    g = torch.Generator().manual_seed(7)
    a, b = torch.randint(0, 1000, (32,), generator=g), torch.randint(0, 1000, (32,), generator=g)
    e1, e2 = torch.randn(y.shape, generator=g), torch.randn(y.shape, generator=g)
    hi = P.q_sample(y, torch.maximum(a, b), sched, e1)
    lo = P.q_sample(y, torch.minimum(a, b), sched, e2)
    want = ((hi - y) ** 2).mean() + ((lo - y) ** 2).mean() + 0.5 * ((hi - lo) ** 2).mean()
    assert torch.allclose(got, want, atol=1e-6)


def test_multistep_renoises_the_previous_prediction():
    "With an echo network each step returns its noisy input, so step k equals the q_sample of step k-1's output."
    class Echo(torch.nn.Module):
        T, in_dim, label_dim = 1000, 2, 3
        def forward(self, x, y_t, t):
            return y_t
    sched = P.linear_schedule(1000)
    x = torch.zeros(4, 2)
    got = P.pcl_predict(Echo(), x, (999, 300), sched, seed=5)
    g = torch.Generator().manual_seed(5)
    y1 = P.q_sample(torch.zeros(4, 3), torch.full((4,), 999), sched, torch.randn(4, 3, generator=g))
    want = P.q_sample(y1, torch.full((4,), 300), sched, torch.randn(4, 3, generator=g))
    assert torch.allclose(got, want)


def test_leak_path_sees_a_label_leak():
    "predict_in_label_units is unchanged by poisoned test labels, but a version scaling with all rows would change."
    X, Y = P.nbody_springs(60, 3, steps=10, seed=0)
    sched = P.linear_schedule(1000)
    m = P.PCLNet(X.shape[1], Y.shape[1], hidden=8)
    bad = Y.copy()
    bad[-20:] *= -1000
    a = P.predict_in_label_units(m, X, Y, 20, (999, 500), sched, seed=1)
    b = P.predict_in_label_units(m, X, bad, 20, (999, 500), sched, seed=1)
    assert np.array_equal(a, b)
    c = P.predict_in_label_units(m, X, bad, 10, (999, 500), sched, seed=1)  # 10 poisoned rows now in training stats
    assert not np.allclose(a[-10:], c)


def test_twin_and_pcl_train_deterministically():
    g = torch.Generator().manual_seed(0)
    X, Y = torch.randn(50, 3, generator=g), torch.randn(50, 2, generator=g)
    for kind in ("pcl", "supervised"):
        m1 = P.train_model(X, Y, kind, iters=5, batch=8, hidden=8, seed=3)
        m2 = P.train_model(X, Y, kind, iters=5, batch=8, hidden=8, seed=3)
        assert all(torch.equal(p, q) for p, q in zip(m1.parameters(), m2.parameters()))


def test_energy_drift_is_inside_the_band_and_scales_with_dt():
    small, large = P.energy_drift(50, 5, 100, 0.01, seed=1), P.energy_drift(50, 5, 100, 0.02, seed=1)
    assert 0 < small["max_rel_drift"] <= small["band"]
    assert 2.5 < large["max_rel_drift"] / small["max_rel_drift"] < 5.5  # second order in dt


def test_bad_input():
    with pytest.raises(ValueError, match="n_particles"):
        P.nbody_springs(3, 1)
    with pytest.raises(ValueError, match="patch"):
        P.occluded_digits(0, patch=(0, 3))
    with pytest.raises(ValueError, match="T"):
        P.linear_schedule(1)
    with pytest.raises(ValueError, match="x and y"):
        P.pcl_loss(P.PCLNet(2, 2), torch.zeros(3, 2), torch.zeros(4, 2), P.linear_schedule())
    with pytest.raises(ValueError, match="steps"):
        P.pcl_predict(P.PCLNet(2, 2), torch.zeros(3, 2), (999, 999))
    with pytest.raises(ValueError, match="draws"):
        P.prediction_spread(P.PCLNet(2, 2), torch.zeros(3, 2), draws=1)
    with pytest.raises(ValueError, match="scale"):
        P.experiment("huge")


def test_multistep_control_uses_its_hint():
    """multistep_improves' control (PCL with lam = 0, the same five steps) is not 1 by construction, unlike the twin
    it replaced (issue 47): a lam = 0 network's five-step prediction differs from its one-step one, the twin's not."""
    g = torch.Generator().manual_seed(0)
    X = torch.randn(200, 4, generator=g)
    Y = X @ torch.randn(4, 3, generator=g) + 0.3 * torch.randn(200, 3, generator=g)
    steps = (999, 800, 600, 400, 200)
    lam0 = P.train_model(X, Y, "pcl", 0.0, iters=60, batch=32, hidden=16, seed=1)
    twin = P.train_model(X, Y, "supervised", 0.0, iters=60, batch=32, hidden=16, seed=1)
    one, five = P.pcl_predict(lam0, X, steps[:1], seed=2), P.pcl_predict(lam0, X, steps, seed=2)
    assert not torch.allclose(one, five, atol=1e-4)
    assert P.rmse(five, Y) / P.rmse(one, Y) != 1.0
    assert torch.equal(P.pcl_predict(twin, X, steps[:1], seed=2), P.pcl_predict(twin, X, steps, seed=2))
    assert {c.id: c.control for c in P.CLAIMS}["multistep_improves"] == "springs.pcl_lam0.multi_over_single"
