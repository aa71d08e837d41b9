"""Defects the outside re-probe of issue 49 found in the MNL kernel and chapter after the first round of fixes
(named *_kernels.py so that `make test` runs it under NUMBA_BOUNDSCHECK=1 too)."""
import numpy as np
import pytest

from fuzzutil import assert_refused
import icml25nb.bandits.mnl as M
from icml25nb.kernels import mnl as K


def _state(R=2, d=3, N=5, seed=0):
    g = np.random.default_rng(seed)
    theta = g.standard_normal((R, d)) * 0.1
    H = np.broadcast_to(np.eye(d), (R, d, d)).copy()
    return theta, H, H.copy(), g.standard_normal((R, N, d))


@pytest.mark.parametrize("B", [5e-324, 1e-310, 0.0, -1.0, float("nan")])
def test_confidence_update_refuses_radii_that_underflow(B):
    "B = 5e-324 raised SystemError from the compiled update (B**2 underflows to 0, then 1 / 0)."
    theta, H, Hinv, X = _state()
    XS = X[:, :2]
    for fn in (K.confidence_update, K.confidence_update_ref):
        assert_refused(fn, theta.copy(), H.copy(), Hinv.copy(), XS, 2, np.array([0, -1]), 0.5, B, name="B")


@pytest.mark.parametrize("B", [5e-324, 1e-200, 0.0])
def test_projection_refuses_radii_that_underflow(B):
    "project_ref / project_ball with B = 5e-324: ZeroDivisionError."
    assert_refused(K.project_ref, np.eye(3), np.ones(3), B, name="B")
    assert_refused(M.project_ball, np.ones(3), np.eye(3), B, name="B")
    assert np.allclose(K.project_ref(np.eye(3), np.ones(3) * 5, 1.0), np.ones(3) / np.sqrt(3))


@pytest.mark.parametrize("scale", [1e151, 1e200, 1e300])
def test_hessians_of_features_whose_squares_overflow_are_refused(scale):
    "round_grad_hess with X_S = 1e200: a NaN Hessian (x x^T overflows)."
    assert_refused(M.round_grad_hess, np.zeros(3), np.ones((2, 3)) * scale, 0, name="XS")
    assert_refused(K.grad_hessian_ref, np.ones((2, 3)) * scale, np.zeros(3), 0, name="XS")
    _, g, G = M.round_grad_hess(np.zeros(3), np.ones((2, 3)) * 1e100, 0)
    assert np.isfinite(g).all() and np.isfinite(G).all()


@pytest.mark.parametrize("B", [1e101, 1e308])
def test_radii_with_B_whose_square_overflows_are_refused(B):
    "beta_plus(10, 3, 2, B=1e308) returned NaN."
    assert_refused(M.beta_plus, 10, 3, 2, B=B, name="B")
    assert np.isfinite(M.beta_plus(10, 3, 2, B=1e100))


@pytest.mark.parametrize("bad", [np.array([5, 0]), np.array([0.7, 0]), np.array([0]), np.array([-2, 0]), "x"])
@pytest.mark.parametrize("fn", [K.straightforward_round_numpy, K.lean_round_numpy, K.bandit_round])
def test_round_peers_check_what_respond_returns(fn, bad):
    "straightforward_round_numpy / lean_round_numpy indexed with respond's answer: IndexError on [5, 0] or [0.7, 0]."
    theta, H, Hinv, X = _state()
    assert_refused(fn, X, theta, H, Hinv, 2, 1.0, 2.0, 0.5, lambda XS: bad, timeout=600)  # a cold compile is slow
