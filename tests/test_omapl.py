"""icml25nb.rl.omapl (O-MAPL chapter): environment, data, learners and checks; bad input refused naming the argument."""
import numpy as np
import pytest
import torch

from fuzzutil import BAD_NUMBERS, assert_refused, refuses_each
from icml25nb.kernels import gridstep as GS
from icml25nb.rl import omapl as O


@pytest.fixture(scope="module")
def small():
    env = O.CoopGridEnv()
    data = O.collect_dataset(env, "mixed", 60, seed=0)
    prefs = O.make_preference_pairs(data, "tier", 120, seed=0)
    return env, data, prefs


def test_vec_env_uses_the_kernel_and_matches_the_reference():
    vec = O.CoopGridVec(50, n_agents=3, size=6, horizon=5)
    rng = np.random.default_rng(0)
    vec.reset(rng)
    for _ in range(5):
        a = rng.integers(0, 5, (50, 3))
        want = GS.step_ref(vec.pos, vec.goal, a, 6, 0.5)
        _, _, r, _ = vec.step(a)
        assert np.array_equal(vec.pos, want[0]) and np.array_equal(r, want[1])


def test_episodes_are_reproducible_and_seeds_differ(small):
    env, data, _ = small
    again = O.collect_dataset(env, "mixed", 60, seed=0)
    assert all(np.array_equal(data[k], again[k]) for k in data)
    other = O.collect_dataset(env, "mixed", 60, seed=1)
    assert not np.array_equal(data["actions"], other["actions"])


def test_scripted_teams_are_ordered_and_expert_coordinates():
    env = O.CoopGridEnv(n_agents=3, size=6, horizon=14)
    ret = {q: env.episodes(300, env.scripted_policy(q), seed=4)["rewards"].sum(1).mean() for q in O.TIERS}
    assert ret["expert"] > ret["medium"] > ret["random"]


def test_tier_pairs_never_pair_a_tier_with_itself_and_bt_labels_follow_returns(small):
    _, data, _ = small
    p = O.make_preference_pairs(data, "tier", 500, seed=3)
    t = data["tier"][p["pairs"]]
    assert (t[:, 0] != t[:, 1]).all() and np.array_equal(p["labels"], (t[:, 0] > t[:, 1]).astype(np.float32))
    hot = O.make_preference_pairs(data, "bt", 4000, seed=3, temperature=100.0)  # near coin flips
    assert 0.45 < hot["labels"].mean() < 0.55
    r = data["returns"][hot["pairs"]]
    assert (r[:, 0] != r[:, 1]).any()


def test_one_update_is_deterministic_for_a_seed(small):
    env, data, prefs = small
    batch = O.pair_batch(data, prefs, np.arange(16))
    out = []
    for _ in range(2):
        ag = O.OMAPL(env.obs_dim, env.state_dim, 2, 5, seed=7)
        ag.update(batch)
        out.append(torch.cat([p.flatten() for p in ag.pi.parameters()]))
    assert torch.equal(out[0], out[1])


def test_weighted_bc_with_equal_weights_is_bc(small):
    "With beta huge, exp(z) = 1: O-MAPL's policy step is plain BC on both trajectories of each pair."
    env, data, prefs = small
    batch = O.pair_batch(data, prefs, np.arange(8))
    ag = O.OMAPL(env.obs_dim, env.state_dim, 2, 5, beta=1e9, seed=2)
    bc = O.BC(env.obs_dim, env.state_dim, 2, 5, preferred_only=False, seed=2)
    bc.pi.load_state_dict(ag.pi.state_dict())
    o, a = batch["obs"][:, :-1], batch["actions"]
    logp = torch.log_softmax(ag.pi(o), -1).gather(-1, a.unsqueeze(-1)).squeeze(-1)
    want = -logp.sum(-1).mean()
    assert abs(float(want) - bc.update(batch)["policy"]) < 1e-5  # both: sum over agents, mean over steps
    assert abs(ag.update(batch)["policy"] - float(want)) < 1e-5


def test_code_variant_and_two_stage_run(small):
    env, data, prefs = small
    for ag in (O.OMAPL(env.obs_dim, env.state_dim, 2, 5, reg="code", weights="local", seed=0),
               O.TwoStage(env.obs_dim, env.state_dim, 2, 5, reward_steps=3, seed=0),
               O.OMAPL(env.obs_dim, env.state_dim, 2, 5, mixer="two_layer", seed=0)):
        losses = O.train(ag, data, prefs, 6, 8, seed=0)
        assert all(np.isfinite(v) for d in losses for v in d.values())
        assert 0.0 <= O.preference_accuracy(ag, data, prefs) <= 1.0
    assert O.evaluate(ag, env, 20, seed=0)["returns"].shape == (20,)


def test_curvature_is_nonnegative_for_the_linear_mixer(small):
    env, data, prefs = small
    ag = O.OMAPL(env.obs_dim, env.state_dim, 2, 5, seed=5)
    O.train(ag, data, prefs, 20, 8, seed=0)
    assert O.preference_loss_curvature(ag, O.pair_batch(data, prefs, np.arange(16)), directions=8) >= -1e-9


def test_bad_input_is_refused_naming_the_argument(small):
    env, data, prefs = small
    assert refuses_each(O.CoopGridVec, dict(n_envs=2), {
        "n_envs": [0, -1, 2.5, *BAD_NUMBERS], "n_agents": [0, 9, "2"], "size": [1, 0, None],
        "horizon": [0, 1.5], "collision": [-1.0, float("nan")]}) > 10
    assert refuses_each(O.collect_dataset, dict(env=env, quality="mixed", n_episodes=10, seed=0), {
        "quality": ["great", {"expert": -1.0}, {"best": 1.0}, {}, {"expert": float("nan")}, 3],
        "n_episodes": [1, 0, 2.5, *BAD_NUMBERS], "seed": [-1, 1.5, "0", None]}, name_in_message=False) > 10
    assert refuses_each(O.make_preference_pairs, dict(dataset=data, rule="tier", n_pairs=10, seed=0), {
        "rule": ["votes", None], "n_pairs": [0, 2.5, *BAD_NUMBERS], "temperature": [0.0, -1.0, float("nan")]}) > 8
    d = (env.obs_dim, env.state_dim, 2, 5)
    assert refuses_each(lambda **kw: O.OMAPL(*d, **kw), {}, {
        "mixer": ["qmix", None], "beta": [0.0, -1.0, *BAD_NUMBERS], "gamma": [1.5, -0.1], "tau": [0.0, 2.0],
        "lr": [0.0, float("inf")], "reg": ["l2"], "weights": ["agent"], "clip": [0.0], "grad_clip": [-1.0],
        "hidden": [0, 2.5], "seed": [-1, "x"]}) > 15
    assert_refused(O.OMAPL, 0, 9, 2, 5, name="obs_dim")
    assert_refused(O.BC, 11, 9, 2, 1, name="n_actions")
    assert_refused(O.TwoStage, 11, 9, 2, 5, reward_steps=0, name="reward_steps")
    assert_refused(O.evaluate, O.BC(*d), env, 0, name="episodes")
    assert_refused(O.train, O.BC(*d), data, prefs, -1, name="steps")
    assert_refused(O.extreme_v_fixed_point, np.zeros((2, 3)), np.full((2, 3), 0.5), name="mu")
    assert_refused(O.extreme_v_fixed_point, np.full((2, 3), np.nan), np.full((2, 3), 1 / 3), name="q")
    assert_refused(O.SpreadTask, 1, name="n_agents")
    ag = O.OMAPL(*d)
    b = O.pair_batch(data, prefs, np.arange(4))
    for key, bad in (("obs", b["obs"][:, :, :1]), ("state", b["state"][:, :-1]), ("actions", b["actions"] + 5),
                     ("labels", b["labels"][:2]), ("obs", b["obs"] * np.nan)):
        assert_refused(ag.update, {**b, key: bad}, name="batch")


def test_the_checks_can_fail(small):
    "The convexity and monotonicity measurements fail where they should: a non-convex mixer, a signed one."
    env, data, prefs = small
    batch = O.pair_batch(data, prefs, np.arange(16))

    class Bumpy(torch.nn.Module):  # Q_tot = sum_i sin(3 q_i): neither convex nor concave in q
        def forward(self, x, state):
            return torch.sin(3 * x).sum(-1)
    ag = O.OMAPL(env.obs_dim, env.state_dim, 2, 5, seed=0)
    ag.mix, ag.mix_t = Bumpy(), Bumpy()
    assert O.preference_loss_curvature(ag, batch, directions=16, scale=0.3) < -1e-3
    signed = O.OMAPL(env.obs_dim, env.state_dim, 2, 5, mixer="linear_signed", seed=3)
    assert O.mixer_slopes(signed, batch).min() < 0


def test_extreme_v_fixed_point_converges_on_the_sweep_seeds():
    "The check's solver reaches the closed form on every seed's tabular problem (Adam stalled on seeds 5, 7, 12)."
    from icml25nb.core import make_rng
    for seed in range(16):
        rng = make_rng(seed, 8)
        q, mu = rng.normal(0, 2, (8, 5)), rng.dirichlet(np.ones(5), 8)
        assert O.extreme_v_fixed_point(q, mu, float(rng.uniform(0.2, 2.0)))["max_gap"] < 1e-6, seed
