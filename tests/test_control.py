"""icml25nb.control: the update rules of TD3, TD3+BC and SAC against hand formulas (NumPy, float64), the replay
buffer, save/load, rollouts with every autoreset mode, a short training run that must learn, bad input."""
import copy

import gymnasium as gym
import numpy as np
import pytest
import torch
from scipy import integrate, stats

from icml25nb import control as C
from icml25nb.kernels import pointmass as PM


def _batch(B=6, obs_dim=3, act_dim=1, seed=0, done=None):
    rng = np.random.default_rng(seed)
    d = np.zeros(B, np.float32) if done is None else np.asarray(done, np.float32)
    return C.Batch(rng.normal(size=(B, obs_dim)).astype(np.float32),
                   rng.uniform(-1, 1, (B, act_dim)).astype(np.float32), rng.normal(size=B).astype(np.float32),
                   rng.normal(size=(B, obs_dim)).astype(np.float32), d)


def _gen_copy(agent):
    g = torch.Generator()
    g.set_state(agent.gen.get_state())
    return g


def _sac_numpy(agent, obs, eps):
    "SAC's squashed sample and its log-density by the change of variables, float64 NumPy, for given noise eps."
    out = C._mlp_numpy(agent.actor, obs)
    m = agent.act_dim
    mean, log_std = out[:, :m], np.clip(out[:, m:], C.LOG_STD_MIN, C.LOG_STD_MAX)
    u = mean + np.exp(log_std) * eps
    a = np.tanh(u)
    logp = (stats.norm.logpdf(u, mean, np.exp(log_std)) - np.log(1 - np.tanh(u) ** 2)).sum(1)
    return a, logp


# --- SAC -----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("act_dim", [1, 3])
def test_sac_log_prob_equals_the_density_of_the_squashed_sample(act_dim):
    agent = C.SAC(4, act_dim, hidden=(16, 16), seed=act_dim)
    with torch.no_grad():
        agent.actor[-1].bias[act_dim:] += 0.3  # wider Gaussians: samples in the tanh tails too
    obs = np.random.default_rng(1).normal(size=(200, 4)).astype(np.float32)
    g = _gen_copy(agent)
    with torch.no_grad():
        a, logp = agent.sample(obs)
    eps = torch.randn((200, act_dim), generator=g).double().numpy()
    a_np, logp_np = _sac_numpy(agent, obs, eps)
    np.testing.assert_allclose(a.numpy(), a_np, atol=1e-5)
    np.testing.assert_allclose(logp.numpy(), logp_np, rtol=1e-4, atol=1e-3)
    # and the density of a itself, from a alone: log N(artanh a) - log(1 - a^2), where float32 keeps artanh exact
    a64 = a.double().numpy()
    out = C._mlp_numpy(agent.actor, obs)
    direct = (stats.norm.logpdf(np.arctanh(np.clip(a64, -1 + 1e-12, 1 - 1e-12)), out[:, :act_dim],
                                np.exp(np.clip(out[:, act_dim:], -20, 2))) - np.log1p(-a64 ** 2)).sum(1)
    keep = np.abs(a64).max(1) < 0.99
    assert keep.sum() > 50
    np.testing.assert_allclose(logp.numpy()[keep], direct[keep], atol=5e-3)


def test_sac_density_integrates_to_one():
    agent = C.SAC(2, 1, hidden=(8,), seed=0)
    for obs in ([0.0, 0.0], [2.0, -3.0]):
        with torch.no_grad():
            mean, log_std = (x.item() for x in agent._mean_log_std(torch.tensor([obs])))
        dens = lambda x: stats.norm.pdf(np.arctanh(x), mean, np.exp(log_std)) / (1 - x * x)
        assert abs(integrate.quad(dens, -1, 1, limit=200)[0] - 1) < 1e-6
        with torch.no_grad():
            a, logp = agent.sample(np.tile(obs, (20, 1)))
        np.testing.assert_allclose(np.exp(logp.double().numpy()), dens(a.double().numpy()[:, 0]), rtol=1e-3)


def test_sac_critic_loss_and_target_match_the_formula():
    "The update's critic loss: 1/2 sum_i mean (Q_i(s,a) - y)^2, y with a' ~ pi(s') and alpha from before its step."
    agent = C.SAC(3, 2, hidden=(16, 16), gamma=0.97, init_alpha=0.5, seed=7)
    b = _batch(8, 3, 2, seed=3, done=[0, 0, 1, 0, 0, 1, 0, 0])
    agent.update(b)  # critics differ from their targets from here on
    g = _gen_copy(agent)
    _ = torch.randn((8, 2), generator=g)  # the update first samples a_pi on s
    eps2 = torch.randn((8, 2), generator=g).double().numpy()
    alpha = agent.alpha
    a2, logp2 = _sac_numpy(agent, b.next_obs, eps2)
    y = b.rew + 0.97 * (1 - b.done) * (C._twinq_numpy(agent.critic_target, b.next_obs, a2).min(0) - alpha * logp2)
    q = C._twinq_numpy(agent.critic, b.obs, b.act)
    want = 0.5 * ((q - y) ** 2).mean(1).sum()
    got = agent.update(b)
    assert abs(got["critic_loss"] - want) < 1e-4 * max(1, abs(want))
    assert got["alpha"] == pytest.approx(alpha, rel=1e-6)  # the temperature used is the one before its step
    # td_target, public, on the same footing
    g = _gen_copy(agent)
    eps2 = torch.randn((8, 2), generator=g).double().numpy()
    a2, logp2 = _sac_numpy(agent, b.next_obs, eps2)
    y = b.rew + 0.97 * (1 - b.done) * (C._twinq_numpy(agent.critic_target, b.next_obs, a2).min(0) - agent.alpha * logp2)
    np.testing.assert_allclose(agent.td_target(b).numpy(), y, rtol=1e-4, atol=1e-4)


def test_sac_temperature_and_targets():
    b = _batch(16, 3, 1, seed=4)
    up = C.SAC(3, 1, hidden=(16, 16), target_entropy=5.0, seed=0)
    down = C.SAC(3, 1, hidden=(16, 16), target_entropy=-5.0, seed=0)
    fixed = C.SAC(3, 1, hidden=(16, 16), alpha=0.1, seed=0)
    for _ in range(4):
        up.update(b), down.update(b), fixed.update(b)
    assert up.alpha > 1.0 > down.alpha
    assert fixed.alpha == pytest.approx(0.1) and not fixed.tune_alpha
    # Polyak: target <- 0.995 target + 0.005 critic after the critic step
    before = [p.detach().clone() for p in fixed.critic_target.parameters()]
    fixed.update(b)
    for t, t0, c in zip(fixed.critic_target.parameters(), before, fixed.critic.parameters()):
        torch.testing.assert_close(t, 0.995 * t0 + 0.005 * c.detach())


def test_sac_deterministic_action_is_tanh_of_the_mean():
    agent = C.SAC(3, 2, action_low=[-2, 0], action_high=[2, 1], hidden=(8,), seed=1)
    obs = np.random.default_rng(0).normal(size=(5, 3))
    out = C._mlp_numpy(agent.actor, obs)
    want = np.tanh(out[:, :2]) * [2, 0.5] + [0, 0.5]
    np.testing.assert_allclose(agent.act(obs, deterministic=True), want, atol=1e-5)
    a = agent.act(obs)
    assert np.all(a[:, 0] >= -2) and np.all(a[:, 0] <= 2) and np.all(a[:, 1] >= 0) and np.all(a[:, 1] <= 1)
    np.testing.assert_allclose(agent.normalize_action(agent.scale_action(np.tanh(out[:, :2]))), np.tanh(out[:, :2]),
                               atol=1e-6)


# --- TD3 and TD3+BC ------------------------------------------------------------------------------------------------

def test_td3_target_against_the_hand_formula():
    agent = C.TD3(3, 2, hidden=(16, 16), gamma=0.9, policy_noise=0.3, noise_clip=0.2, seed=0)
    b = _batch(5, 3, 2, seed=1, done=[0, 1, 0, 0, 1])
    agent.update(b)
    g = _gen_copy(agent)
    eps = np.clip(torch.randn((5, 2), generator=g).double().numpy() * 0.3, -0.2, 0.2)
    assert np.abs(eps).max() == pytest.approx(0.2)  # the noise clip acts in this draw
    a2 = np.clip(C._mlp_numpy(agent.actor_target, b.next_obs, out_tanh=True) + eps, -1, 1)
    y = b.rew + 0.9 * (1 - b.done) * C._twinq_numpy(agent.critic_target, b.next_obs, a2).min(0)
    np.testing.assert_allclose(agent.td_target(b).numpy(), y, rtol=1e-5, atol=1e-5)
    # without smoothing the target is deterministic; terminal rows give y = r
    plain = C.TD3(3, 2, hidden=(16, 16), gamma=0.9, policy_noise=0.0, seed=0)
    y0 = plain.td_target(b).numpy()
    np.testing.assert_array_equal(y0, plain.td_target(b).numpy())
    np.testing.assert_allclose(y0[b.done == 1], b.rew[b.done == 1])


def test_td3_critic_loss_delayed_actor_and_polyak():
    agent = C.TD3(3, 1, hidden=(16, 16), policy_noise=0.0, policy_delay=3, tau=0.1, seed=2)
    b = _batch(8, seed=5)
    y = agent.td_target(b).numpy()
    q = C._twinq_numpy(agent.critic, b.obs, b.act)
    out = agent.update(b)
    assert out["critic_loss"] == pytest.approx(((q - y) ** 2).mean(1).sum(), rel=1e-5)
    actor0 = [p.detach().clone() for p in agent.actor.parameters()]
    targets0 = [p.detach().clone() for p in agent.actor_target.parameters()]
    assert "actor_loss" not in agent.update(b)
    for p, p0 in zip(agent.actor.parameters(), actor0):
        torch.testing.assert_close(p.detach(), p0)  # the actor waits for the third update
    ct0 = [p.detach().clone() for p in agent.critic_target.parameters()]
    actor_before = copy.deepcopy(agent.actor)
    out = agent.update(b)
    assert "actor_loss" in out
    # the actor loss is -mean Q_1 at the actor's action (before its step), with the critic after this update's step
    want = -C._twinq_numpy(agent.critic, b.obs, C._mlp_numpy(actor_before, b.obs, True))[0].mean()
    assert out["actor_loss"] == pytest.approx(want, rel=1e-5)
    for t, t0, c in zip(agent.critic_target.parameters(), ct0, agent.critic.parameters()):
        torch.testing.assert_close(t, 0.9 * t0 + 0.1 * c.detach())
    for t, t0, a in zip(agent.actor_target.parameters(), targets0, agent.actor.parameters()):
        torch.testing.assert_close(t, 0.9 * t0 + 0.1 * a.detach())


def test_td3_actor_loss_is_minus_q1_and_the_step_follows_its_gradient():
    agent = C.TD3(3, 1, hidden=(16, 16), seed=3)
    b = _batch(32, seed=6)
    pi = C._mlp_numpy(agent.actor, b.obs, True)
    want = -C._twinq_numpy(agent.critic, b.obs, pi)[0].mean()
    assert agent.actor_loss(b).item() == pytest.approx(want, rel=1e-5)
    # a small actor step lowers the loss (the gradient does not reach or move the critic)
    agent.actor_opt.param_groups[0]["lr"] = 1e-4
    crit0 = [p.detach().clone() for p in agent.critic.parameters()]
    agent.update(b)
    agent.update(b)
    for p, p0 in zip(agent.critic.parameters(), crit0):
        assert not torch.equal(p.detach(), p0)  # two critic steps
    assert all(p.requires_grad for p in agent.critic.parameters())
    fresh = C.TD3(3, 1, hidden=(16, 16), seed=3)
    fresh.critic.load_state_dict(agent.critic.state_dict())
    assert agent.actor_loss(b).item() < fresh.actor_loss(b).item()


def test_td3bc_actor_loss_and_normalisation(tmp_path):
    b = _batch(64, 4, 2, seed=7)
    buf = C.ReplayBuffer(4, 2, 64)
    buf.add(*b)
    data = C.ReplayBuffer.load(buf.save(tmp_path / "d"))
    agent = C.TD3BC(4, 2, hidden=(16, 16), alpha=1.7, seed=0).fit_normalizer(data)
    mean, std = b.obs.mean(0), b.obs.std(0) + 1e-3
    np.testing.assert_allclose(agent.obs_mean.numpy(), mean, rtol=1e-5)
    s = (b.obs - mean) / std
    pi = C._mlp_numpy(agent.actor, s, True)
    Q = C._twinq_numpy(agent.critic, s, pi)[0]
    want = -1.7 / np.abs(Q).mean() * Q.mean() + ((pi - b.act) ** 2).mean()
    assert agent.actor_loss(b).item() == pytest.approx(want, rel=1e-5)
    # act normalises the raw observation the same way
    np.testing.assert_allclose(agent.act(b.obs, deterministic=True), pi, atol=1e-5)
    # the target uses normalised next states
    plain = C.TD3BC(4, 2, hidden=(16, 16), policy_noise=0.0, seed=0).fit_normalizer(b)
    s2 = (b.next_obs - mean) / std
    y = b.rew + 0.99 * C._twinq_numpy(plain.critic_target, s2, C._mlp_numpy(plain.actor_target, s2, True)).min(0)
    np.testing.assert_allclose(plain.td_target(b).numpy(), y, rtol=1e-5, atol=1e-5)
    # and without normalisation the statistics stay unset
    raw = C.TD3BC(4, 2, normalize_obs=False).fit_normalizer(b)
    assert raw.obs_mean is None
    raw.update(b)


def test_td3bc_on_a_dataset_beats_random():
    "Offline on 4 000 transitions of a noisy proportional controller: TD3+BC's policy scores far above standing still."
    env = C.make_env("PointMass", num_envs=20)
    pd = lambda o: np.clip(3.0 * (o[:, 4:6] - o[:, 0:2]) - o[:, 2:4], -1, 1)
    data = C.collect_dataset(env, pd, steps=4000, noise=0.5, seed=0)
    agent = C.TD3BC.for_env(env, hidden=(64, 64), lr=1e-3, seed=0)  # the paper's 3e-4 needs ~3000 updates here
    C.train_offline(agent, data, 1500, batch_size=128, seed=0)
    zero = C.evaluate(lambda o: np.zeros((len(o), 2)), env, episodes=40, seed=9)["mean"]
    got = C.evaluate(agent, env, episodes=40, seed=9)["mean"]
    assert got > zero + 25, (got, zero)  # about -8 against -45 (the noiseless controller scores -7)


# --- buffer --------------------------------------------------------------------------------------------------------

def test_buffer_ring_batches_and_sampling(tmp_path):
    buf = C.ReplayBuffer(1, 1, capacity=7)
    buf.add(np.arange(5.0)[:, None], np.zeros((5, 1)), np.arange(5.0), np.arange(5.0)[:, None] + 1, np.zeros(5))
    buf.add(np.arange(5.0, 9.0)[:, None], np.zeros((4, 1)), np.arange(5.0, 9.0), np.arange(6.0, 10.0)[:, None],
            np.ones(4))  # wraps: slots 5, 6, 0, 1
    assert len(buf) == 7 and buf.ptr == 2
    np.testing.assert_array_equal(buf.rew, [7, 8, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(buf.next_obs[:, 0], buf.obs[:, 0] + 1)
    b1, b2 = buf.sample(50_000, np.random.default_rng(3)), buf.sample(50_000, np.random.default_rng(3))
    np.testing.assert_array_equal(b1.rew, b2.rew)
    np.testing.assert_array_equal(b1.obs[:, 0], b1.rew)
    counts = np.bincount(b1.rew.astype(int), minlength=9)[2:]
    assert stats.chisquare(counts).pvalue > 1e-3 and counts.min() > 0
    big = C.ReplayBuffer(1, 1, capacity=3)
    big.add(np.arange(10.0)[:, None], np.zeros((10, 1)), np.arange(10.0), np.zeros((10, 1)), np.zeros(10))
    assert sorted(big.rew.tolist()) == [7, 8, 9]
    back = C.ReplayBuffer.load(buf.save(tmp_path / "d.npz"))
    for x, y in zip(back.all(), buf.all()):
        np.testing.assert_array_equal(x, y)


def test_buffer_bad_input():
    buf = C.ReplayBuffer(3, 2, 10)
    with pytest.raises(ValueError, match="act must have 2 entries"):
        buf.add(np.zeros(3), np.zeros(3), 0.0, np.zeros(3), 0.0)
    buf.add(np.zeros(3), np.zeros(2), 0.0, np.zeros(3), 0.0)
    with pytest.raises(TypeError, match="numpy Generator"):
        buf.sample(2, 0)
    with pytest.raises(ValueError, match="capacity must be an integer >= 1"):
        C.ReplayBuffer(3, 2, 0)


# --- save / load ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("algo", ["TD3", "TD3BC", "SAC"])
def test_save_load_round_trip(tmp_path, algo):
    env = C.make_env("Pendulum-v1")
    agent = C.make_agent(algo, env, hidden=(16, 16), seed=4)
    b = _batch(32, 3, 1, seed=8)
    b = b._replace(act=np.clip(b.act, -1, 1))
    if algo == "TD3BC":
        agent.fit_normalizer(b)
    for _ in range(3):
        agent.update(b)
    path = agent.save(tmp_path / "a.pt")
    same = C.load_agent(path)
    into = C.make_agent(algo, env, hidden=(16, 16), seed=99).load(path)
    obs = np.random.default_rng(0).normal(size=(10, 3))
    for other in (same, into):
        np.testing.assert_array_equal(other.act(obs, deterministic=True), agent.act(obs, deterministic=True))
        assert other.n_updates == agent.n_updates == 3
    np.testing.assert_array_equal(agent.act(obs), same.act(obs))  # the generator travels: same exploration noise
    agent, same = C.load_agent(path), C.load_agent(path)  # training continues identically
    for _ in range(3):
        la, lb = agent.update(b), same.update(b)
        assert la == lb
    for p, q in zip(agent.actor.parameters(), same.actor.parameters()):
        assert torch.equal(p, q)
    with pytest.raises(ValueError, match="hidden"):
        C.make_agent(algo, env, hidden=(8, 8)).load(path)
    other = "SAC" if algo != "SAC" else "TD3"
    with pytest.raises(ValueError, match=f"{algo} agent, not {other}"):
        C.make_agent(other, env, hidden=(16, 16)).load(path)


@pytest.mark.parametrize("algo", ["TD3", "SAC"])
def test_in_memory_state_is_a_snapshot_and_loads_share_nothing(algo):
    # torch's Optimizer.load_state_dict keeps the moment tensors it is given, and state_dict() returns views of the
    # live parameters: without copies, two agents loaded from one state() would share their Adam moments and step
    # counts, and a state() would follow the agent's later updates (issue 46)
    env = C.make_env("Pendulum-v1")
    b = _batch(32, 3, 1, seed=8)
    b = b._replace(act=np.clip(b.act, -1, 1))
    agent = C.make_agent(algo, env, hidden=(16, 16), seed=4)
    for _ in range(3):
        agent.update(b)
    s = agent.state()
    first = [p.detach().clone() for p in agent.actor.parameters()]
    a2 = C.make_agent(algo, env, hidden=(16, 16), seed=99).load_state(s)
    a3 = C.make_agent(algo, env, hidden=(16, 16), seed=99).load_state(s)
    l2 = [a2.update(b) for _ in range(3)]  # a2 trains first, then a3 from the same state
    l3 = [a3.update(b) for _ in range(3)]
    assert l2 == l3
    for p, q in zip(a2.actor.parameters(), a3.actor.parameters()):
        assert torch.equal(p, q)
    for k in s["optims"]:  # the loaded agents' moments are their own
        for st2, st in zip(getattr(a2, k).state.values(), s["optims"][k]["state"].values()):
            assert all(v.data_ptr() != st[n].data_ptr() for n, v in st2.items() if torch.is_tensor(v))
    agent.update(b)  # the snapshot does not follow the agent
    for w, v in zip(first, s["modules"]["actor"].values()):
        assert torch.equal(w, v)
    back = C.make_agent(algo, env, hidden=(16, 16), seed=99).load_state(s)
    for p, w in zip(back.actor.parameters(), first):
        assert torch.equal(p, w)


# --- environments and rollouts -------------------------------------------------------------------------------------

def test_vector_pointmass_is_the_kernel_and_autoresets_in_the_same_step():
    env = C.PointMassVecEnv(6, horizon=5, ctrl_cost=0.1)
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(1)
    for t in range(5):
        pos, vel, goal = env._pos.copy(), env._vel.copy(), env._goal.copy()
        a = rng.uniform(-2, 2, (6, 2))
        p2, v2, r2 = PM.step_ref(pos, vel, goal, a, 0.1, 2.0, 1.0, 0.1)
        obs, r, term, trunc, info = env.step(a)
        np.testing.assert_allclose(r, r2, rtol=1e-14)
        if t < 4:
            np.testing.assert_allclose(obs[:, :2], p2, rtol=1e-6)
    assert trunc.all() and not term.any()
    np.testing.assert_allclose(info["final_obs"][:, :2], p2, rtol=1e-6)  # the last observation, before the reset
    np.testing.assert_allclose(info["final_obs"][:, 4:], goal, rtol=1e-6)
    assert not np.allclose(obs[:, 4:], goal)  # new goals: the environments were reset in this step
    np.testing.assert_array_equal(obs[:, 2:4], 0)


def test_stored_transitions_never_cross_an_episode_boundary():
    "PointMass keeps its goal within an episode: every stored (s, s') pair shares it, with any autoreset mode."
    data = C.collect_dataset(C.make_env("PointMass", num_envs=4), None, steps=1000, seed=0)
    np.testing.assert_array_equal(data.obs[:, 4:], data.next_obs[:, 4:])
    single = C.collect_dataset(C.make_env("PointMass"), None, steps=300, seed=0)
    np.testing.assert_array_equal(single.obs[:, 4:], single.next_obs[:, 4:])
    gym_vec = gym.make_vec("icml25nb/PointMass-v0", 3, vectorization_mode="sync")  # next-step autoreset
    assert C._Stepper(gym_vec).mode == gym.vector.AutoresetMode.NEXT_STEP
    nxt = C.collect_dataset(gym_vec, None, steps=3 * 120, seed=0)
    np.testing.assert_array_equal(nxt.obs[:, 4:], nxt.next_obs[:, 4:])


def test_evaluate_agrees_across_env_kinds():
    "One deterministic policy: a same-step and a next-step vector env and single envs give the same returns."
    pd = lambda o: np.clip(3.0 * (o[:, 4:6] - o[:, 0:2]) - o[:, 2:4], -1, 1)
    same = C.evaluate(pd, gym.make_vec("icml25nb/PointMass-v0", 3, vectorization_mode="sync",
                                       vector_kwargs={"autoreset_mode": "SameStep"}), episodes=6, seed=4)
    nextstep = C.evaluate(pd, gym.make_vec("icml25nb/PointMass-v0", 3, vectorization_mode="sync"), episodes=6, seed=4)
    np.testing.assert_allclose(same["returns"], nextstep["returns"])
    singles = [C.evaluate(pd, C.make_env("PointMass"), episodes=1, seed=4 + i)["mean"] for i in range(3)]
    np.testing.assert_allclose(same["returns"][:3], singles)


def test_pendulum_and_dataset_noise():
    env = C.make_env("Pendulum-v1")
    rand = C.evaluate(lambda o: np.random.default_rng(0).uniform(-2, 2, (len(o), 1)), env, episodes=3, seed=0)
    assert -1900 < rand["mean"] < -500
    zero = lambda o: np.zeros((len(o), 1))
    data = C.collect_dataset(env, zero, steps=400, noise=0.2, seed=1)
    assert len(data) == 400 and abs(data.act.std() - 0.2) < 0.03 and data.done.sum() == 0
    np.testing.assert_array_equal(C.collect_dataset(env, zero, steps=400, noise=0.0, seed=1).act, 0)


def test_mujoco_tasks_construct_and_step():
    pytest.importorskip("mujoco")
    pytest.importorskip("imageio")
    for name, shapes in (("Hopper-v5", (11, 3)), ("HalfCheetah-v5", (17, 6))):
        env = C.make_env(name)
        assert (env.observation_space.shape[0], env.action_space.shape[0]) == shapes
        agent = C.SAC.for_env(env, hidden=(16,), seed=0)
        res = C.evaluate(agent, env, episodes=1, seed=0)
        assert np.isfinite(res["mean"])


# --- learning ------------------------------------------------------------------------------------------------------

def test_short_training_on_pointmass_improves_the_return():
    env, ev = C.make_env("PointMass", num_envs=8), C.make_env("PointMass", num_envs=20)
    agent = C.TD3.for_env(env, hidden=(64, 64), lr=1e-3, seed=0)
    before = C.evaluate(agent, ev, episodes=40, seed=5)["mean"]
    out = C.train(agent, env, 6000, seed=0, learning_starts=400, batch_size=64, gradient_steps=1)
    after = C.evaluate(agent, ev, episodes=40, seed=5)["mean"]
    assert out["env_steps"] == 6000 and out["updates"] == (6000 - 400) // 8 + 1
    assert after > before + 15, (before, after)


def test_same_seed_same_run_and_the_global_generator_is_untouched():
    def run(seed):
        torch.manual_seed(1234)
        agent = C.SAC.for_env(C.make_env("PointMass"), hidden=(16, 16), seed=seed)
        out = C.train(agent, C.make_env("PointMass", num_envs=2), 300, seed=seed, learning_starts=50, batch_size=16)
        return out["episode_returns"], agent.act(np.ones(6)), torch.rand(1)
    r1, a1, g1 = run(3)
    r2, a2, g2 = run(3)
    np.testing.assert_array_equal(r1, r2)
    np.testing.assert_array_equal(a1, a2)
    assert torch.equal(g1, g2)  # building and training agents does not draw from torch's global generator
    assert not np.array_equal(run(4)[1], a1)


def test_compare_with_sb3_runs_both():
    pytest.importorskip("stable_baselines3")
    out = C.compare_with_sb3("Pendulum-v1", "TD3", 250, 0, (16, 16), eval_episodes=1)
    assert set(out) == {"ours", "SB3"}
    for r in out.values():
        assert -2000 < r["return"] < 0 and r["seconds_per_step"] > 0


# --- bad input -----------------------------------------------------------------------------------------------------

def test_bad_input_gives_one_line_errors():
    agent = C.SAC(3, 1, hidden=(8,))
    cases = [
        (lambda: agent.act(np.zeros(4)), ValueError, r"obs must have shape \(3,\) or \(n, 3\), got \(4,\)"),
        (lambda: agent.act(np.zeros((2, 2))), ValueError, "obs must have shape"),
        (lambda: C.make_env("NoSuchEnv-v0"), ValueError, "unknown environment 'NoSuchEnv-v0'"),
        (lambda: C.make_env(3), TypeError, "name must be a str"),
        (lambda: C.make_agent("DDPG", C.make_env("Pendulum-v1")), ValueError, "unknown algo 'DDPG'"),
        (lambda: C.TD3(3, 1, gamma=1.5), ValueError, r"gamma must lie in \[0, 1\]"),
        (lambda: C.SAC(3, 1, hidden=(0,)), ValueError, "hidden must be"),
        (lambda: C.SAC(3, 1, action_low=1, action_high=-1), ValueError, "action bounds"),
        (lambda: C.train(agent, C.make_env("PointMass"), 10), ValueError, "env has obs_dim=6"),
        (lambda: C.train(agent, C.make_env("Pendulum-v1"), 10, eval_every=5), ValueError, "eval_env"),
        (lambda: agent.update(_batch(4, 3, 2)), ValueError, "batch act, rew, done"),
        (lambda: C.PointMassEnv().step([0, 0]), RuntimeError, "reset"),
        (lambda: C.evaluate(agent, C.make_env("Pendulum-v1"), episodes=0), ValueError, "episodes"),
        (lambda: C.benchmark("huge"), ValueError, "size must be one of"),
        (lambda: C.compare_with_sb3("Pendulum-v1", "PPO", 10, 0, (8,)), ValueError, "algo must be"),
        (lambda: C.train_offline(agent, C.ReplayBuffer(3, 1, 5), 10), ValueError, "non-empty"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg) as info:
            fn()
        assert "\n" not in str(info.value)
    env = C.PointMassEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action must be finite"):
        env.step([np.nan, 0])
    with pytest.raises(ValueError, match=r"action must have shape \(2,\)"):
        env.step([0, 0, 0])
