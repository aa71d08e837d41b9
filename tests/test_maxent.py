"""icml25nb.rl.maxent: closed-form soft values and alpha*, the discretised bifurcation and corridor MDPs, soft value
iteration, the gymnasium environments and bad input. Small sizes; the experiment itself runs in tests/test_chapters.py."""
import math

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from icml25nb.control import Batch
from icml25nb.rl import maxent as M


@pytest.mark.parametrize("R_H,R_M,w", [(1.0, 0.5, 0.2), (1.0, 0.4, 0.5), (3.0, 1.0, 0.05)])
def test_alpha_star_equalises_the_soft_values(R_H, R_M, w):
    s = M.alpha_star(R_H, R_M, w)
    vn, vw = M.soft_values(R_H, R_M, w, s)
    assert abs(vn - vw) < 1e-9
    assert M.alpha_star_approx(R_H, R_M, w) < s
    # the closed form by direct quadrature of alpha ln int exp(Q / alpha) da over [-1, 1]
    a = 0.7 * s
    xs = np.linspace(-1, 1, 400_001)
    q = np.where(np.abs(xs) < w / 2, R_H, 0.0)
    assert abs(M.soft_values(R_H, R_M, w, a)[0] - a * math.log(np.trapezoid(np.exp(q / a), xs))) < 1e-3 * R_H


@pytest.mark.parametrize("stages", [1, 3])
def test_exact_switch_point_of_the_discretised_mdp(stages):
    mdp = M.bifurcation_mdp(1.0, 0.4, 0.5, 200, stages=stages)
    s = M.alpha_star(1.0, 0.4, 0.5)
    assert abs(M.switch_point(mdp, s / 4, 4 * s) / s - 1) < 1e-8
    assert M.switch_point(mdp, s / 4, 4 * s, entropy=False) == 4 * s
    # the start state's soft choice is sigmoid(stages (V_W - V_N) / alpha)
    a = 1.5 * s
    vn, vw = M.soft_values(1.0, 0.4, 0.5, a)
    assert abs(M.p_wide(mdp, a) - 1 / (1 + math.exp(-stages * (vw - vn) / a))) < 1e-10


def test_soft_value_iteration_backends_agree_and_policy_normalised():
    mdp = M.bifurcation_mdp(1.0, 0.5, 0.2, 100, stages=2)
    out = [M.soft_value_iteration(mdp["nxt"], mdp["R"], 0.3, 1.0, 4, mdp["log_mu"], backend=b)
           for b in ("numpy", "njit", "cuda")]
    for V, pi in out[1:]:
        np.testing.assert_allclose(V, out[0][0], atol=1e-12)
        np.testing.assert_allclose(pi, out[0][1], atol=1e-12)
    np.testing.assert_allclose(out[0][1].sum(1), 1.0, atol=1e-12)
    V0, pi0 = M.soft_value_iteration(mdp["nxt"], mdp["R"], 0.0, 1.0, 4, mdp["log_mu"])
    assert V0[0] == pytest.approx(2.0) and pi0[0, mdp["x"] >= 0].sum() == 0  # standard RL: narrow, value 2 R_H


def test_corridor_mdp_matches_its_recursion():
    H, w, a = 3, 0.4, 0.5
    mdp = M.corridor_mdp(H, w, 0.5, 1.0, 200)
    V, _ = M.soft_value_iteration(mdp["nxt"], mdp["R"], a, 1.0, H + 1, mdp["log_mu"])
    v_in = 0.0
    for k in range(1, H + 1):  # the recursion of the derivation, k steps left
        v_out_prev = (k - 1) * a * math.log(2)
        v_in = a * math.log(w * math.exp((1 + v_in) / a) + (2 - w) * math.exp(v_out_prev / a))
    assert V[1] == pytest.approx(v_in, abs=1e-10)
    a_c = M.corridor_alpha_c(mdp)
    assert M.corridor_stay_prob(mdp, a_c) == pytest.approx(0.5, abs=1e-6)
    assert M.corridor_stay_prob(mdp, 0.5 * a_c) > 0.5 > M.corridor_stay_prob(mdp, 2 * a_c)


def test_environments_pass_check_env_and_follow_the_rules():
    check_env(M.ContinuousBifurcationEnv(), skip_render_check=True)
    check_env(M.PrecisionCorridorEnv(), skip_render_check=True)
    env = M.ContinuousBifurcationEnv(1.0, 0.5, 0.2, stages=1)
    env.reset(seed=0)
    env.step(np.array([-0.5]))
    assert env.step(np.array([0.09]))[1:3] == (1.0, True)
    env = M.PrecisionCorridorEnv(horizon=2, width=0.4, noise=0.0)
    env.reset(seed=0)
    assert env.step(np.array([0.69]))[1] == 1.0 and env.step(np.array([0.71]))[4]["failed"]
    # the failure rate of a fixed action: inside -> 0, outside -> 1
    inside, outside = (lambda o: np.array([[0.5]])), (lambda o: np.array([[0.0]]))

    class Fixed:
        def __init__(self, f): self.f = f
        def act(self, obs, deterministic=True): return self.f(obs)
    assert M.corridor_failure_rate(Fixed(inside), M.PrecisionCorridorEnv(), 10, 0) == 0.0
    assert M.corridor_failure_rate(Fixed(outside), M.PrecisionCorridorEnv(), 10, 0) == 1.0


@pytest.mark.parametrize("fn,args,name", [
    (M.alpha_star, (1.0, 0.05, 0.2), "R_mid"), (M.alpha_star, (-1.0, 0.5, 0.2), "R_high"),
    (M.alpha_star, (1.0, 0.5, 0.0), "width"), (M.soft_values, (1.0, 0.5, 0.2, float("nan")), "alpha"),
    (M.bifurcation_mdp, (1.0, 0.5, 0.2, 7), "n_bins"), (M.bifurcation_mdp, (1.0, 0.5, 0.2, 100, 0.95), "center"),
    (M.ContinuousBifurcationEnv, (1.0, 0.5, 0.2, 0.0, 0), "stages"), (M.PrecisionCorridorEnv, (4, 2.5), "width"),
    (M.experiment, ("huge",), "scale"), (M.experiment, ("fast", -1), "seed"),
])
def test_bad_input_names_the_argument(fn, args, name):
    with pytest.raises(ValueError, match=name):
        fn(*args)


def test_sac_adaent_chooses_the_plain_critic_by_cosine_threshold():
    "threshold -1: cos < -1 never holds (always the soft Q, SAC's step); threshold 1: two independently initialised "
    "critics never agree exactly (always the plain Q)."
    b = Batch(*(np.asarray(x, np.float32) for x in (np.random.default_rng(0).random((8, 2)), np.zeros((8, 1)),
                                                       np.ones(8), np.zeros((8, 2)), np.zeros(8))))
    rates = {}
    for thr in (-1.0, 1.0):
        ag = M.SACAdaEnt.for_env(M.PrecisionCorridorEnv(), alpha=0.3, hidden=(8, 8), n_sample=16, dist_threshold=thr,
                                 seed=0)
        rates[thr] = ag.update(b)["surrogate_rate"]
    assert rates[-1.0] == 0.0 and rates[1.0] == 1.0
    with pytest.raises(ValueError, match="dist_threshold"):
        M.SACAdaEnt.for_env(M.PrecisionCorridorEnv(), dist_threshold=1.5)
    with pytest.raises(ValueError, match="n_sample"):
        M.SACAdaEnt.for_env(M.PrecisionCorridorEnv(), n_sample=0)


def test_best_tanh_gaussian_moves_out_of_the_band_as_alpha_grows():
    "alpha = 0: the band's mass alone, so the mean action sits in the band with nearly all the mass; large alpha: the "
    "entropy alone, whose best tanh-Gaussian is the near-uniform one centred at 0, outside the band [0.3, 0.7]."
    cold = M.best_tanh_gaussian(0.0, 0.5, 0.4, samples=4000)
    assert cold["mean_in_band"] == 1.0 and cold["band_mass"] > 0.99 and abs(cold["mean_action"] - 0.5) < 0.1
    hot = M.best_tanh_gaussian(5.0, 0.5, 0.4, samples=4000)
    assert hot["mean_in_band"] == 0.0 and abs(hot["mean_action"]) < 0.1 and hot["band_mass"] < 0.3
    # the corridor's alpha_c lies between them: 0.2 stays in the band, 2 alpha_c leaves it
    a_c = M.corridor_alpha_c(M.corridor_mdp(4, 0.4, 0.5, 1.0, 2000))
    assert 0.2 < a_c and M.best_tanh_gaussian(0.2, 0.5, 0.4)["mean_in_band"] == 1.0
    assert M.best_tanh_gaussian(2 * a_c, 0.5, 0.4)["mean_in_band"] == 0.0
    for args, name in (((-0.1, 0.5, 0.4), "alpha"), ((0.2, 0.9, 0.4), "center"), ((0.2, 0.5, 0.4, 10), "samples")):
        with pytest.raises(ValueError, match=name):
            M.best_tanh_gaussian(*args)


def test_claims_follow_issue_47():
    "The reclassified and withdrawn claims, and that every active paper claim says what it tests and its control."
    by_id = {c.id: c for c in M.CLAIMS}
    assert by_id["switch_point_matches_alpha_star"].kind == "check"
    assert by_id["standard_optimum_goes_narrow"].withdrawn
    for cid, control in (("sac_picks_wide_at_2alpha_star", "p_wide_sac_half"), ("sac_picks_wide_vs_td3", "p_wide_td3"),
                         ("maxent_fails_corridor_at_alpha_0_2", "fail_td3"),
                         ("maxent_fails_corridor_auto_tuned", "fail_td3")):
        c = by_id[cid]
        assert c.kind == "paper" and c.control == control and not c.withdrawn
    for c in M.CLAIMS:
        if c.kind == "paper":
            assert c.tests in ("paper", "proxy") and c.control_basis


def test_toy_example_env_follows_the_authors_rules_and_its_switch_point():
    check_env(M.ToyExampleEnv(), skip_render_check=True)
    env = M.ToyExampleEnv()
    o, _ = env.reset(seed=0)
    assert o.tolist() == [1, 0, 0, 0, 0, 0]
    o, r, done, _, _ = env.step(np.array([0.0]))  # a <= 0: the precise branch
    assert (o[1], r, done) == (1.0, 0.0, False)
    assert env.step(np.array([0.05]))[1:3] == (1.0, True)
    env.reset()
    env.step(np.array([-0.5]))
    assert env.step(np.array([0.1]))[1] == -20.0  # |a| < 0.1 is strict
    env.reset()
    assert env.step(np.array([0.3]))[0][2] == 1.0
    assert env.step(np.array([0.0]))[1:3] == (-1.0, True)
    # at alpha* the soft values of the two branches agree; alpha = 1 is above it (the authors' temperature)
    s = M.toy_example_alpha_star(0.1)
    v1 = s * math.log(0.2 * math.exp(1 / s) + 1.8 * math.exp(-20 / s))
    assert abs(v1 - (-1 + s * math.log(2))) < 1e-9 and 0.8 < s < 1.0
    with pytest.raises(ValueError, match="band"):
        M.ToyExampleEnv(band=1.5)
