"""MNL bandit confidence updates: the algebra (probabilities, Hessian factor, Woodbury, the mirror-descent step and its
projection) against direct formulas and scipy.optimize, and the @njit and CUDA (simulator) kernels against the
NumPy reference."""
import math
import os
import warnings

import numpy as np
import pytest
from scipy import optimize
from scipy.special import logsumexp

from icml25nb.kernels import mnl


def _contexts(rng, shape, d):
    "Rows with norms uniform in [0, 1]."
    x = rng.standard_normal(shape + (d,))
    return x * (rng.random(shape + (1,)) / np.linalg.norm(x, axis=-1, keepdims=True))


def _spd_state(rng, R, d, scale=1.0):
    "theta (R, d), an SPD H (R, d, d) and its inverse."
    theta = scale * rng.standard_normal((R, d))
    A = rng.standard_normal((R, d, d)) / np.sqrt(d)
    H = A @ A.transpose(0, 2, 1) + np.eye(d)
    return theta, H, np.linalg.inv(H)


def _nll(theta, XS, choice):
    "Negative log-likelihood of `choice` (-1: outside option) among the rows XS, by log-sum-exp."
    u = XS @ theta
    return -(u[choice] if choice >= 0 else 0.0) + logsumexp(np.concatenate([[0.0], u]))


def _copies(*arrays):
    return [a.copy() for a in arrays]


# --- the algebra ---------------------------------------------------------------------------------------------

def test_probabilities_sum_to_one_with_outside_option_and_do_not_overflow():
    rng = np.random.default_rng(0)
    XS, theta = _contexts(rng, (5,), 4), rng.standard_normal(4)
    p, p0 = mnl.probs_ref(XS, theta)
    assert math.isclose(p.sum() + p0, 1.0, rel_tol=1e-15)
    u = XS @ theta
    np.testing.assert_allclose(p, np.exp(u) / (1 + np.exp(u).sum()), rtol=1e-14)
    # utilities of 1000: exp would overflow without the shift
    XS_big = np.array([[1000.0, 0.0], [999.0, 0.0], [-5.0, 0.0]])
    p, p0 = mnl.probs_ref(XS_big, np.array([1.0, 0.0]))
    assert np.all(np.isfinite(p)) and p0 == 0.0
    np.testing.assert_allclose(p[:2], [1 / (1 + math.exp(-1)), math.exp(-1) / (1 + math.exp(-1))], rtol=1e-14)
    # and the kernels stay finite and agree with the reference at such utilities
    theta, H, Hinv = np.array([[1.0, 0.0]]), np.eye(2)[None].copy(), np.eye(2)[None].copy()
    a, b = _copies(theta, H, Hinv), _copies(theta, H, Hinv)
    mnl.confidence_update_ref(*a, XS_big[None], [3], [1], [1.0], [np.inf])
    mnl.confidence_update(*b, XS_big[None], [3], [1], [1.0], [np.inf])
    for x, y in zip(a, b):
        assert np.all(np.isfinite(y))
        np.testing.assert_allclose(y, x, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("choice", [-1, 0, 3])
def test_hessian_factor_gradient_and_hessian(choice):
    rng = np.random.default_rng(1 + choice)
    k, d = 4, 5
    XS, theta = _contexts(rng, (k,), d), rng.standard_normal(d)
    g, G = mnl.grad_hessian_ref(XS, theta, choice)
    U = mnl.hessian_factor_ref(XS, theta)
    assert U.shape == (d, k + 1)
    # G = U U^T exactly (the identity uses sum_i p_i = 1 - p_0)
    np.testing.assert_allclose(U @ U.T, G, rtol=1e-12, atol=1e-15)
    p, p0 = mnl.probs_ref(XS, theta)
    xbar = p @ XS
    direct = sum(p[i] * np.outer(XS[i], XS[i]) for i in range(k)) - np.outer(xbar, xbar)
    np.testing.assert_allclose(G, direct, rtol=1e-12, atol=1e-15)
    # g and G are the gradient and Hessian of the negative log-likelihood (central differences)
    h = 1e-5
    E = np.eye(d)
    num_g = np.array([(_nll(theta + h * e, XS, choice) - _nll(theta - h * e, XS, choice)) / (2 * h) for e in E])
    np.testing.assert_allclose(g, num_g, atol=1e-8)
    h = 1e-4
    num_G = np.array([[(_nll(theta + h * (a + b), XS, choice) - _nll(theta + h * (a - b), XS, choice)
                        - _nll(theta - h * (a - b), XS, choice) + _nll(theta - h * (a + b), XS, choice)) / (4 * h * h)
                       for b in E] for a in E])
    np.testing.assert_allclose(G, num_G, atol=1e-6)


def _one_replica(seed, d=4, k=3, choice=1, scale=0.3):
    rng = np.random.default_rng(seed)
    theta, H, Hinv = _spd_state(rng, 1, d, scale)
    XS = _contexts(rng, (1, k), d)
    return theta, H, Hinv, XS, choice


def test_woodbury_inverse_matches_dense_inverse():
    theta, H, Hinv, XS, choice = _one_replica(2)
    eta = 2.7
    U = mnl.hessian_factor_ref(XS[0], theta[0])
    _, G = mnl.grad_hessian_ref(XS[0], theta[0], choice)
    np.testing.assert_allclose(mnl.woodbury_ref(Hinv[0], U, eta), np.linalg.inv(H[0] + eta * G), rtol=1e-12, atol=1e-14)


def _objective(theta0, g, Ht, eta):
    def f(v):
        dv = v - theta0
        return g @ v + dv @ Ht @ dv / (2 * eta)

    def jac(v):
        return g + Ht @ (v - theta0) / eta

    return f, jac


def test_unprojected_step_minimises_the_mirror_descent_objective():
    theta, H, Hinv, XS, choice = _one_replica(3)
    eta = 1.7
    g, G = mnl.grad_hessian_ref(XS[0], theta[0], choice)
    Ht = H[0] + eta * G
    f, jac = _objective(theta[0], g, Ht, eta)
    best = optimize.minimize(f, theta[0], jac=jac, method="BFGS", options={"gtol": 1e-12}).x
    state = _copies(theta, H, Hinv)
    mnl.confidence_update_ref(*state, XS, [XS.shape[1]], [choice], [eta], [np.inf])
    np.testing.assert_allclose(state[0][0], best, atol=1e-6)
    assert np.linalg.norm(best - theta[0]) > 1e-2  # a real step


def test_projected_step_minimises_over_the_ball():
    theta, H, Hinv, XS, choice = _one_replica(4, scale=1.0)
    eta, B = 1.7, 0.4
    g, G = mnl.grad_hessian_ref(XS[0], theta[0], choice)
    Ht = H[0] + eta * G
    theta_p = theta[0] - eta * np.linalg.solve(Ht, g)
    assert np.linalg.norm(theta_p) > 2 * B  # the constraint is active
    f, jac = _objective(theta[0], g, Ht, eta)
    ball = {"type": "ineq", "fun": lambda v: B * B - v @ v, "jac": lambda v: -2 * v}
    best = optimize.minimize(f, np.zeros_like(theta_p), jac=jac, constraints=[ball], method="SLSQP",
                             options={"ftol": 1e-14, "maxiter": 500}).x
    state = _copies(theta, H, Hinv)
    mnl.confidence_update_ref(*state, XS, [XS.shape[1]], [choice], [eta], [B])
    np.testing.assert_allclose(state[0][0], best, atol=1e-6)
    assert math.isclose(np.linalg.norm(state[0][0]), B, rel_tol=1e-12)
    # project_ref on its own: the same point, and a no-op inside the ball
    np.testing.assert_allclose(mnl.project_ref(Ht, theta_p, B), state[0][0], rtol=1e-13)
    inside = 0.5 * B * theta_p / np.linalg.norm(theta_p)
    assert np.array_equal(mnl.project_ref(Ht, inside, B), inside)


def test_reference_update_keeps_Hinv_the_inverse_of_H_at_the_new_parameter():
    theta, H, Hinv, XS, choice = _one_replica(5)
    H0 = H.copy()
    mnl.confidence_update_ref(theta, H, Hinv, XS, [XS.shape[1]], [choice], [2.0], [np.inf])
    _, G_new = mnl.grad_hessian_ref(XS[0], theta[0], choice)  # the Hessian at theta_{t+1}
    np.testing.assert_allclose(H[0], H0[0] + G_new, rtol=1e-13)
    np.testing.assert_allclose(Hinv[0], np.linalg.inv(H[0]), rtol=1e-11, atol=1e-14)


# --- the kernels against the reference -------------------------------------------------------------------------

def _replica_batch(seed, R=5, d=6, Kmax=4):
    "Varied n_offered (1 included), choice (-1 included), B: small (projection active), large, inf; NaN padding."
    rng = np.random.default_rng(seed)
    theta, H, Hinv = _spd_state(rng, R, d, 0.5)
    XS = _contexts(rng, (R, Kmax), d)
    n_offered = np.array([1, Kmax, 3, 2, Kmax])[:R]
    choice = np.array([-1, Kmax - 1, 0, -1, 1])[:R]
    for r in range(R):
        XS[r, n_offered[r]:] = np.nan  # rows beyond n_offered are ignored
    eta = np.array([1.0, 2.5, 3.2, 0.7, 1.5])[:R]
    B = np.array([0.2, 0.3, np.inf, 50.0, 0.25])[:R]
    return [theta, H, Hinv], (XS, n_offered, choice, eta, B)


def test_njit_update_matches_reference_over_several_rounds():
    state, args = _replica_batch(6)
    XS, n_offered, choice, eta, B = args
    ref, ker = _copies(*state), _copies(*state)
    rng = np.random.default_rng(7)
    for t in range(4):
        mnl.confidence_update_ref(*ref, *args)
        mnl.confidence_update(*ker, *args)
        for name, x, y in zip(("theta", "H", "Hinv"), ref, ker):
            np.testing.assert_allclose(y, x, rtol=1e-10, atol=1e-13, err_msg=f"{name} after round {t}")
        XS = XS.copy()
        XS[np.isfinite(XS)] = _contexts(rng, (int(np.isfinite(XS[..., 0]).sum()),), XS.shape[2]).ravel()
        args = (XS, n_offered, choice, eta, B)
    norms = np.linalg.norm(ker[0], axis=1)
    assert np.allclose(norms[[0, 1, 4]], B[[0, 1, 4]], rtol=1e-12)  # the projection was active there
    assert np.all(np.isfinite(ker[2]))


def test_njit_update_writes_through_non_contiguous_views():
    state, args = _replica_batch(8)
    ref = _copies(*state)
    mnl.confidence_update_ref(*ref, *args)
    theta_f = np.asfortranarray(state[0])
    H_big = np.zeros(state[1].shape[:2] + (2 * state[1].shape[2],))
    H_big[..., ::2] = state[1]
    H_view = H_big[..., ::2]
    assert not (theta_f.flags.c_contiguous or H_view.flags.c_contiguous)
    mnl.confidence_update(theta_f, H_view, state[2], *args)
    np.testing.assert_allclose(theta_f, ref[0], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(H_big[..., ::2], ref[1], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(state[2], ref[2], rtol=1e-10, atol=1e-13)


def test_njit_scores_and_refactorize_match_reference():
    rng = np.random.default_rng(9)
    R, N, d = 5, 7, 6
    theta, H, Hinv = _spd_state(rng, R, d)
    X, beta = _contexts(rng, (R, N), d), rng.random(R) * 2
    expect = mnl.optimistic_scores_ref(X, theta, Hinv, beta)
    direct = np.einsum("rnd,rd->rn", X, theta) + beta[:, None] * np.sqrt(np.einsum("rna,rab,rnb->rn", X, Hinv, X))
    np.testing.assert_allclose(expect, direct, rtol=1e-13)
    np.testing.assert_allclose(mnl.optimistic_scores(X, theta, Hinv, beta), expect, rtol=1e-12)
    out = np.empty((R, N))
    assert mnl.optimistic_scores(X, theta, Hinv, beta, out=out) is out
    a, b = np.zeros_like(H), np.zeros_like(H)
    mnl.refactorize_ref(H, a)
    mnl.refactorize(H, b)
    np.testing.assert_allclose(b, np.linalg.inv(H), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
    assert np.array_equal(b, b.transpose(0, 2, 1))


def test_cuda_kernels_under_simulator_match_reference():
    assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"  # set by conftest before numba was imported
    rng = np.random.default_rng(10)
    R, d, Kmax, N = 2, 3, 2, 4
    theta, H, Hinv = _spd_state(rng, R, d, 0.5)
    XS = _contexts(rng, (R, Kmax), d)
    XS[0, 1] = np.nan  # replica 0 offers one item
    args = (XS, [1, 2], [-1, 1], [1.5, 2.5], [0.1, np.inf])  # replica 0 projects, replica 1 never
    ref, ker = _copies(theta, H, Hinv), _copies(theta, H, Hinv)
    X, beta = _contexts(rng, (R, N), d), np.array([1.0, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mnl.confidence_update_cuda(*ker, *args, threads_per_block=4)
        scores = mnl.optimistic_scores_cuda(X, theta, Hinv, beta, threads_per_block=4)
        inv = np.zeros_like(H)
        mnl.refactorize_cuda(H, inv, threads_per_block=4)
    mnl.confidence_update_ref(*ref, *args)
    for name, x, y in zip(("theta", "H", "Hinv"), ref, ker):
        np.testing.assert_allclose(y, x, rtol=1e-10, atol=1e-13, err_msg=name)
    assert math.isclose(np.linalg.norm(ker[0][0]), 0.1, rel_tol=1e-12)
    np.testing.assert_allclose(scores, mnl.optimistic_scores_ref(X, theta, Hinv, beta), rtol=1e-12)
    np.testing.assert_allclose(inv, np.linalg.inv(H), rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="MAX_D"):
        mnl.refactorize_cuda(np.eye(mnl.MAX_D + 1)[None].copy(), np.zeros((1, mnl.MAX_D + 1, mnl.MAX_D + 1)))


def test_woodbury_drift_over_ten_thousand_rounds_and_refactorize():
    rng = np.random.default_rng(11)
    d, K, T = 5, 5, 10_000
    eta, B, lam = 0.5 * math.log(K + 1) + 2.0, 2.0, 1.0
    theta_star = rng.standard_normal((1, d))
    theta_star /= np.linalg.norm(theta_star)
    theta, H, Hinv = np.zeros((1, d)), lam * np.eye(d)[None], np.eye(d)[None] / lam
    XS_all, u = _contexts(rng, (T, 1, K), d), rng.random((T, 1))
    n_offered = np.array([K])
    for t in range(T):
        choice = mnl.sample_choice(XS_all[t], theta_star, u[t])
        mnl.confidence_update(theta, H, Hinv, XS_all[t], n_offered, choice, eta, B)
    exact = np.linalg.inv(H[0])
    drift = np.linalg.norm(Hinv[0] - exact) / np.linalg.norm(exact)
    assert drift < 1e-8, f"relative Woodbury drift after {T} rounds: {drift:.3g}"
    mnl.refactorize(H, Hinv)
    fresh = np.linalg.norm(Hinv[0] - exact) / np.linalg.norm(exact)
    assert fresh < 1e-13, f"relative error after refactorize: {fresh:.3g} (drift before: {drift:.3g})"
    assert np.linalg.norm(theta[0] - theta_star[0]) < 0.5  # and the estimate learned something


# --- rounds, selection, environment ----------------------------------------------------------------------------

def test_top_k_orders_by_score_and_breaks_ties_by_index():
    s = np.array([[3.0, 1.0, 3.0, 2.0, 3.0, 0.0], [0.0, 5.0, 1.0, 1.0, 1.0, 4.0]])
    assert mnl.top_k(s, 2).tolist() == [[0, 2], [1, 5]]
    assert mnl.top_k(s, 4).tolist() == [[0, 2, 4, 3], [1, 5, 2, 3]]
    assert mnl.top_k(s[1], 3).tolist() == [1, 5, 2]
    assert mnl.top_k(s, 6).tolist() == [[0, 2, 4, 3, 1, 5], [1, 5, 2, 3, 4, 0]]
    rng = np.random.default_rng(12)
    ints = rng.integers(0, 5, size=(20, 30)).astype(float)  # many ties
    expect = np.argsort(-ints, axis=1, kind="stable")[:, :7]
    assert np.array_equal(mnl.top_k(ints, 7), expect)
    with pytest.raises(ValueError, match="K"):
        mnl.top_k(ints, 0)
    with pytest.raises(ValueError, match="finite"):
        mnl.top_k(np.array([1.0, np.nan, 0.0]), 2)
    cont = rng.standard_normal((5, 100))
    assert np.array_equal(mnl.top_k(cont, 10), np.argsort(-cont, axis=1)[:, :10])


def test_sample_choice_is_the_inverse_cdf():
    rng = np.random.default_rng(13)
    XS, theta = _contexts(rng, (1, 3), 4), rng.standard_normal((1, 4))
    p, p0 = mnl.probs_ref(XS[0], theta[0])
    n = 100_000
    u = (np.arange(n) + 0.5) / n  # a uniform grid: the frequencies are the probabilities up to 1/n
    freq = np.bincount(mnl.sample_choice(np.repeat(XS, n, 0), np.repeat(theta, n, 0), u) + 1, minlength=4) / n
    np.testing.assert_allclose(freq, np.concatenate([[p0], p]), atol=2 / n)
    assert mnl.sample_choice(XS, theta, [0.0])[0] == -1 and mnl.sample_choice(XS, theta, [1 - 1e-16])[0] == 2


def test_sample_choice_matches_its_reference():
    rng = np.random.default_rng(16)
    for R, k, d in ((50, 1, 3), (200, 4, 5), (100, 10, 20)):
        XS, theta = _contexts(rng, (R, k), d) * 3.0, rng.standard_normal((R, d))
        u = rng.random(R)
        assert np.array_equal(mnl.sample_choice(XS, theta, u), mnl.sample_choice_ref(XS, theta, u))
    with pytest.raises(ValueError, match="XS must be"):
        mnl.sample_choice(np.zeros((2, 3)), np.zeros((2, 3)), [0.5, 0.5])


def test_bandit_round_is_the_kernels_in_turn():
    # the fused round does the arithmetic of optimistic_scores, top_k and confidence_update bit for bit
    rng = np.random.default_rng(17)
    for R, N, d, K, B in ((3, 12, 4, 3, 0.5), (5, 150, 7, 10, np.inf), (2, 300, 20, 16, 1.0)):
        theta_star = rng.standard_normal((R, d))
        state = [np.zeros((R, d)), np.broadcast_to(2 * np.eye(d), (R, d, d)).copy(),
                 np.broadcast_to(0.5 * np.eye(d), (R, d, d)).copy()]
        fused = [a.copy() for a in state]
        beta = rng.random(R) + 0.5
        for t in range(8):
            X, u = _contexts(rng, (R, N), d), rng.random(R)
            th, H, Hinv = state
            idx = mnl.top_k(mnl.optimistic_scores(X, th, Hinv, beta), K)
            XS = np.take_along_axis(X, idx[..., None], axis=1)
            choice = mnl.sample_choice(XS, theta_star, u)
            mnl.confidence_update(th, H, Hinv, XS, K, choice, 2.0, B)
            idx2, choice2 = mnl.bandit_round(X, *fused, K, beta, 2.0, B,
                                             lambda XS: mnl.sample_choice(XS, theta_star, u))
            assert np.array_equal(idx2, idx) and np.array_equal(choice2, choice)
            for a, b in zip(fused, state):
                assert np.array_equal(a, b)


def test_bandit_round_bad_input():
    rng = np.random.default_rng(18)
    R, N, d = 2, 6, 3
    X, th = _contexts(rng, (R, N), d), np.zeros((R, d))
    H, Hinv = np.broadcast_to(np.eye(d), (R, d, d)).copy(), np.broadcast_to(np.eye(d), (R, d, d)).copy()
    ok = lambda XS: np.zeros(R, np.int64)  # noqa: E731
    with pytest.raises(ValueError, match="K must lie"):
        mnl.bandit_round(X, th, H, Hinv, N + 1, 1.0, 1.0, 1.0, ok)
    with pytest.raises(ValueError, match="choice must be -1"):
        mnl.bandit_round(X, th, H, Hinv, 2, 1.0, 1.0, 1.0, lambda XS: np.array([0, 2]))
    assert (th == 0.0).all() and np.array_equal(H, np.broadcast_to(np.eye(d), (R, d, d)))  # untouched
    with pytest.raises(ValueError, match="eta must be finite"):
        mnl.bandit_round(X, th, H, Hinv, 2, 1.0, 0.0, 1.0, ok)
    bad = H.copy()
    bad[1, 0, 0] = np.nan
    with pytest.raises(ValueError, match="H must be finite"):
        mnl.bandit_round(X, th, bad, Hinv, 2, 1.0, 1.0, 1.0, ok)
    Xn = X.copy()
    Xn[0, 3, 1] = np.inf
    with pytest.raises(ValueError, match="must be finite"):
        mnl.bandit_round(Xn, th, H, Hinv, 2, 1.0, 1.0, 1.0, ok)
    with pytest.raises(ValueError, match="theta must be a float64"):
        mnl.bandit_round(X, th.astype(np.float32), H, Hinv, 2, 1.0, 1.0, 1.0, ok)


def test_three_round_implementations_agree():
    rng = np.random.default_rng(14)
    R, N, d, K, T = 3, 12, 4, 3, 6
    theta_star = rng.standard_normal((R, d))
    Xs, u = _contexts(rng, (T, R, N), d), rng.random((T, R))
    results = []
    for fn in (mnl.straightforward_round_numpy, mnl.lean_round_numpy, mnl.bandit_round):
        theta, H, Hinv = np.zeros((R, d)), np.broadcast_to(np.eye(d), (R, d, d)).copy(), np.eye(d)[None].repeat(R, 0)
        picks = []
        for t in range(T):
            respond = lambda XS, t=t: mnl.sample_choice(XS, theta_star, u[t])  # noqa: E731
            picks.append(fn(Xs[t], theta, H, Hinv, K, 1.0, 2.0, 0.5, respond)[0])
        results.append((np.array(picks), theta, H, Hinv))
    for other in results[1:]:
        assert np.array_equal(other[0], results[0][0])
        for x, y in zip(results[0][1:], other[1:]):
            np.testing.assert_allclose(y, x, rtol=1e-9, atol=1e-12)


# --- bad input -------------------------------------------------------------------------------------------------

def _valid_args():
    rng = np.random.default_rng(15)
    theta, H, Hinv = _spd_state(rng, 3, 3)
    XS = _contexts(rng, (3, 2), 3)
    XS[0, 1] = np.nan  # ignored: replica 0 offers one item
    return dict(theta=theta, H=H, Hinv=Hinv, XS=XS, n_offered=np.array([1, 2, 2]), choice=np.array([-1, 1, 0]),
                eta=np.array([1.0, 2.0, 3.0]), B=np.array([0.1, np.inf, 5.0]))


@pytest.mark.parametrize("change,match", [
    (dict(H=np.zeros((3, 3, 2))), "H must have shape"),
    (dict(Hinv=np.zeros((2, 3, 3))), "Hinv must have shape"),
    (dict(XS=np.zeros((3, 2, 4))), "XS must have shape"),
    (dict(theta=np.zeros((3, 3), np.int64)), "theta must be a float64"),
    (dict(n_offered=np.array([1, 3, 2])), "n_offered must lie in"),
    (dict(n_offered=np.array([0, 2, 2])), "n_offered must lie in"),
    (dict(n_offered=np.array([1.0, 2.0, 2.0])), "n_offered must hold integers"),
    (dict(n_offered=np.array([1, 2])), "n_offered must have shape"),
    (dict(choice=np.array([-1, 2, 0])), "choice must be -1"),
    (dict(choice=np.array([-2, 1, 0])), "choice must be -1"),
    (dict(eta=np.array([1.0, 0.0, 1.0])), "eta must be finite and > 0"),
    (dict(eta=-1.0), "eta must be finite and > 0"),
    (dict(B=np.array([1.0, -1.0, 1.0])), "B must be > 0"),
    (dict(B=np.nan), "B must be > 0"),
    (dict(XS=np.full((3, 2, 3), np.inf)), "XS must be finite"),
    (dict(theta=np.full((3, 3), np.nan)), "theta must be finite"),
    (dict(H=np.full((3, 3, 3), np.inf)), "H must be finite"),
    (dict(Hinv=np.full((3, 3, 3), np.nan)), "Hinv must be finite"),
])
def test_bad_update_input(change, match):
    for fn in (mnl.confidence_update_ref, mnl.confidence_update, mnl.confidence_update_cuda):
        args = _valid_args()
        args.update(change)
        before = args["theta"].copy()
        with pytest.raises(ValueError, match=match):
            fn(**args)
        assert np.array_equal(args["theta"], before, equal_nan=True) or args["theta"].dtype != np.float64  # unchanged


def test_bad_score_and_refactorize_input():
    X, theta, Hinv = np.zeros((2, 4, 3)), np.zeros((2, 3)), np.eye(3)[None].repeat(2, 0)
    for fn in (mnl.optimistic_scores_ref, mnl.optimistic_scores, mnl.optimistic_scores_cuda):
        with pytest.raises(ValueError, match="theta must have shape"):
            fn(X, theta[:1], Hinv, 1.0)
        with pytest.raises(ValueError, match="Hinv must have shape"):
            fn(X, theta, Hinv[:, :2], 1.0)
        with pytest.raises(ValueError, match="beta must have shape"):
            fn(X, theta, Hinv, np.ones(3))
        with pytest.raises(ValueError, match="out must be"):
            fn(X, theta, Hinv, 1.0, out=np.empty((2, 3)))
        for bad in ((np.where(np.arange(3) == 1, np.nan, X), theta, Hinv, 1.0),  # NaN in X's column 1
                    (X, theta, np.full_like(Hinv, np.nan), 1.0), (X, theta + np.inf, Hinv, 1.0),
                    (X, theta, Hinv, np.inf)):
            with pytest.raises(ValueError, match="must be finite"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                fn(*bad)
    not_pd = np.array([[[2.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]])  # replica 1 is not PD
    for fn in (mnl.refactorize_ref, mnl.refactorize, mnl.refactorize_cuda):
        Hinv = np.zeros((2, 2, 2))
        with pytest.raises(ValueError, match=r"H\[1\] is not positive definite"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                fn(not_pd, Hinv)
        assert not Hinv.any()  # no replica written
        with pytest.raises(ValueError, match="Hinv must have the shape"):
            fn(np.eye(2)[None], np.zeros((1, 3, 3)))


# --- benchmark -------------------------------------------------------------------------------------------------

def test_benchmark_small_runs_and_implementations_agree():
    res = mnl.benchmark("small", repeat=1)
    for key in ("kernel", "task", "seconds", "reference", "values", "ratios"):
        assert key in res
    assert res["reference"] in res["seconds"]
    assert all(s > 0 for s in res["seconds"].values())
    assert res["assortments agree"] is True
    assert res["max |theta difference| after T rounds"] < 1e-9


def test_cuda_kernels_under_simulator_at_the_largest_sizes():
    # d = MAX_D and n_offered = MAX_K: the shared-memory scratch of the update and refactorize kernels is used to its
    # last slot (the simulator checks every index; a real GPU would not)
    rng = np.random.default_rng(11)
    R, d, K = 1, mnl.MAX_D, mnl.MAX_K
    theta, H, Hinv = _spd_state(rng, R, d, 0.5)
    XS = _contexts(rng, (R, K), d)
    args = (XS, [K], [K - 1], [1.5], [np.inf])
    ref, ker = _copies(theta, H, Hinv), _copies(theta, H, Hinv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mnl.confidence_update_cuda(*ker, *args)
        inv = np.zeros_like(H)
        mnl.refactorize_cuda(H, inv)
    mnl.confidence_update_ref(*ref, *args)
    for name, x, y in zip(("theta", "H", "Hinv"), ref, ker):
        np.testing.assert_allclose(y, x, rtol=1e-9, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(inv, np.linalg.inv(H), rtol=1e-9, atol=1e-12)
