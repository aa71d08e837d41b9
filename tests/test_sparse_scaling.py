"""The sparse_scaling chapter beyond its notebook: static masks stay exactly zero under every optimiser the chapter
uses (weights and moment estimates, entry by entry), the Erdos-Renyi densities against an independent bisection
solve of RigL's rule, exact mask counts and their seeds, srank's invariances, structurally dead units in the dormant
ratio, the equal-weight-count control, SimBaSAC's masks, save and load, and bad input. Tiny networks only; the
experiment itself runs in tests/test_chapters.py and the notebook."""
import numpy as np
import pytest
import torch

from fuzzutil import BAD_NUMBERS, refuses_each
from icml25nb.control import Batch, load_agent
from icml25nb.rl import sparse_scaling as SS

SHAPES = [(64, 11), (256, 64), (64, 256), (256, 64), (64, 256), (1, 64)]


def _erk_bisection(shapes, sparsity):
    "RigL's Erdos-Renyi rule solved independently: density min(1, eps * raw), eps by bisection on the kept count."
    raw = np.array([(a + b) / (a * b) for a, b in shapes])
    n = np.array([a * b for a, b in shapes], float)
    lo, hi = 0.0, 1.0 / raw.min() * 10
    for _ in range(200):
        mid = (lo + hi) / 2
        if (np.minimum(1.0, mid * raw) * n).sum() < (1 - sparsity) * n.sum():
            lo = mid
        else:
            hi = mid
    return np.minimum(1.0, hi * raw)


@pytest.mark.parametrize("sparsity", [0.3, 0.5, 0.8, 0.9, 0.95, 0.99])
def test_erdos_renyi_matches_an_independent_solve_and_the_global_budget(sparsity):
    d = SS.layer_densities(SHAPES, sparsity, "erdos_renyi")
    np.testing.assert_allclose(d, _erk_bisection(SHAPES, sparsity), rtol=1e-9, atol=1e-12)
    n = np.array([a * b for a, b in SHAPES])
    assert abs((d * n).sum() - (1 - sparsity) * n.sum()) < 1e-6
    # wide layers are the sparsest: density falls with (fan_in fan_out) / (fan_in + fan_out)
    assert d[1] < d[0] and d[-1] == d.max() and (d[-1] == 1.0 or sparsity > 0.95)


def test_erdos_renyi_densities_equal_the_authors_kernels_only_values():
    "The authors' JaxPruner ERK run on the kernels alone (REPORT of the side-by-side run): .354180 / .088545 at S=0.9"
    shapes = [(256, 64), (1024, 256), (256, 1024), (8, 256)]
    np.testing.assert_allclose(SS.layer_densities(shapes, 0.9), [0.354180, 0.088545, 0.088545, 1.0], atol=2e-5)
    np.testing.assert_allclose(SS.layer_densities(shapes, 0.5), [1.0, 0.482422, 0.482422, 1.0], atol=1e-6)


def test_masks_have_exact_counts_and_depend_on_the_seed_only():
    def masks(seed, scheme="erdos_renyi"):
        torch.manual_seed(0)
        net = SS.SimBaMLP(11, 1, width=64, blocks=2)
        return net, SS.apply_static_sparsity(net, 0.9, scheme, seed)
    net, m0 = masks(0)
    d = SS.layer_densities([tuple(m.shape) for m in m0.values()], 0.9)
    assert [int(m.sum()) for m in m0.values()] == [round(x * m.numel()) for x, m in zip(d, m0.values())]
    assert SS.n_nonzero(net) == sum(int(m.sum()) for m in m0.values())
    _, again = masks(0)
    _, other = masks(1)
    assert all(torch.equal(a, b) for a, b in zip(m0.values(), again.values()))
    assert not all(torch.equal(a, b) for a, b in zip(m0.values(), other.values()))
    _, uni = masks(0, "uniform")
    assert [int(m.sum()) for m in uni.values()] == [round(0.1 * m.numel()) for m in uni.values()]


@pytest.mark.parametrize("make_opt", [
    lambda p: torch.optim.Adam(p, lr=1e-2),
    lambda p: torch.optim.Adam(p, lr=1e-2, weight_decay=1e-2),
    lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=1e-1),
    lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=1e-1, fused=True),
    lambda p: torch.optim.SGD(p, lr=1e-2, momentum=0.9),
], ids=["adam", "adam_l2", "adamw", "adamw_fused", "sgd_momentum"])
def test_pruned_weights_and_moments_stay_exactly_zero(make_opt):
    torch.manual_seed(1)
    net = SS.SimBaMLP(5, 3, width=16, blocks=2)
    masks = SS.apply_static_sparsity(net, 0.85, "erdos_renyi", seed=2)
    kept_before = {n: m.weight.detach().clone() for n, m in net.named_modules() if n in masks}
    opt = make_opt(net.parameters())
    for _ in range(40):
        x = torch.randn(64, 5)
        loss = (net(x) - torch.tanh(x[:, :3] * 3)).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    for name, m in net.named_modules():
        if name not in masks:
            continue
        pruned = ~masks[name]
        assert (m.weight[pruned] == 0).all()
        for buf in opt.state[m.weight].values():
            if torch.is_tensor(buf) and buf.shape == m.weight.shape:
                assert (buf[pruned] == 0).all()
        assert not torch.equal(m.weight[masks[name]], kept_before[name][masks[name]])  # the kept weights trained


def test_without_the_gradient_hook_adam_would_revive_pruned_weights():
    "The premise of the hook: zeroing a weight once is not enough under Adam (its gradient is not zero)."
    torch.manual_seed(1)
    net = SS.SimBaMLP(5, 3, width=16, blocks=1)
    with torch.no_grad():
        net.up[0].weight[:, ::2] = 0
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    x = torch.randn(64, 5)
    loss = net(x).square().mean()
    loss.backward()
    opt.step()
    assert (net.up[0].weight[:, ::2] != 0).any()


def test_srank_invariances_and_low_rank():
    rng = np.random.default_rng(0)
    F = rng.normal(size=(300, 5)) @ rng.normal(size=(5, 40))  # rank 5
    assert SS.srank(F, delta=1e-9) == 5
    k = SS.srank(F)
    assert SS.srank(F[rng.permutation(300)]) == k and SS.srank(7.5 * F) == k
    assert SS.srank(F @ np.linalg.qr(rng.normal(size=(40, 40)))[0]) == k  # rotation of the feature space
    assert SS.srank(np.zeros((4, 3))) == 0
    assert 1 <= SS.srank(rng.normal(size=(500, 64))) <= 64


def test_dormant_ratio_counts_structurally_dead_units():
    torch.manual_seed(0)
    net = SS.SimBaMLP(4, 1, width=8, blocks=2)
    x = torch.randn(512, 4)
    with torch.no_grad():  # every input weight and the bias of 5 of block 1's 32 units pruned: they output relu(0)
        net.up[1].weight[:5] = 0
        net.up[1].bias[:5] = 0
    assert SS.dormant_ratio(net, x, tau=0.0) >= 5 / 64
    assert SS.dormant_ratio(net, x, tau=1e6) == 1.0


def test_equal_nnz_width_is_the_closest_dense_width():
    for width in (32, 64, 256):
        w = SS.equal_nnz_width(width, 0.9, 64, 8)
        sparse = SS.SimBaMLP(64, 8, width, 1)
        SS.apply_static_sparsity(sparse, 0.9)
        target = SS.n_nonzero(sparse)
        count = lambda v: SS.n_nonzero(SS.SimBaMLP(64, 8, v, 1))
        assert all(abs(count(w) - target) <= abs(count(v) - target) for v in (w - 1, w + 1) if v >= 1)


def test_simba_sac_prunes_both_networks_trains_and_round_trips(tmp_path):
    agent = SS.SimBaSAC(4, 2, width=16, blocks=1, sparsity=0.8, actor_width=8, seed=3)
    assert agent.target_entropy == -1.0 and abs(agent.alpha - 0.01) < 1e-9
    assert isinstance(agent.critic_opt, torch.optim.AdamW) and agent.critic_opt.defaults["weight_decay"] == 1e-2
    assert agent.actor._static_masks and all(q._static_masks for q in agent.critic.q)
    rng = np.random.default_rng(0)
    batch = lambda: Batch(rng.normal(size=(16, 4)) * 3 + 1, rng.uniform(-1, 1, (16, 2)), rng.normal(size=16),
                          rng.normal(size=(16, 4)), np.zeros(16))
    for _ in range(5):
        agent.update(batch())
    assert torch.allclose(agent.obs_mean, torch.full((4,), 1.0), atol=0.6)
    path = agent.save(tmp_path / "a.pt")
    clone = SS.SimBaSAC(4, 2, width=16, blocks=1, sparsity=0.8, actor_width=8, seed=3).load(path)
    b = batch()
    out_a, out_b = agent.update(b), clone.update(b)
    assert out_a == out_b  # the same state: the same update, running statistics included
    loaded = load_agent(path)
    assert type(loaded) is SS.SimBaSAC and loaded.config == {**agent.config}
    dense = SS.SimBaSAC(4, 2, width=16, blocks=1, sparsity=0.8, actor_sparsity=0.0, actor_width=8, seed=3)
    assert not getattr(dense.actor, "_static_masks", None)


def test_scaling_curve_shapes_reproducibility_and_masks():
    kw = dict(widths=(8, 16), sparsity=0.5, steps=120, seeds=(0, 1), learning_starts=60, batch_size=16,
              actor_width=8, eval_episodes=2)
    a, b = SS.scaling_curve("PointMass", **kw), SS.scaling_curve("PointMass", **kw)
    assert a["returns"].shape == (2, 2) and np.array_equal(a["returns"], b["returns"])
    assert np.isfinite(a["returns"]).all() and a["masked_nonzero"] == 0


def test_masked_nonzero_counter_sees_a_revived_weight():
    "The SAC check's counter is not blind: writing into one pruned critic weight is counted."
    agent = SS.SimBaSAC(4, 2, width=16, blocks=1, sparsity=0.8, actor_width=8, seed=0)
    assert SS._masked_nonzero(agent) == 0
    name, mask = next(iter(agent.critic_target.q[1]._static_masks.items())) if getattr(
        agent.critic_target.q[1], "_static_masks", None) else next(iter(agent.critic.q[1]._static_masks.items()))
    layer = dict(agent.critic_target.q[1].named_modules())[name]
    with torch.no_grad():
        layer.weight[~mask] = 0.5
    assert SS._masked_nonzero(agent) == int((~mask).sum())


def test_bad_input_is_refused_naming_the_argument():
    net = SS.SimBaMLP(4, 1, 8, 1)
    refuses_each(SS.layer_densities, dict(shapes=SHAPES, sparsity=0.5),
                 dict(sparsity=[*BAD_NUMBERS, -0.1, 1.0, 2], scheme=["ER", None, 3]))
    refuses_each(lambda **k: SS.apply_static_sparsity(SS.SimBaMLP(4, 1, 8, 1), **k), dict(sparsity=0.5),
                 dict(sparsity=[*BAD_NUMBERS, 1.0], seed=[-1, 1.5, "a"], scheme=["x"]))
    refuses_each(SS.srank, dict(features=np.eye(3)), dict(features=[np.ones(3), np.full((2, 2), np.nan)],
                                                         delta=[*BAD_NUMBERS, 1.0, -0.5]))
    refuses_each(SS.dormant_ratio, dict(model=net, batch=np.ones((3, 4))),
                 dict(tau=[*BAD_NUMBERS, -1], batch=[np.ones(4), np.full((2, 4), np.inf)], model=[torch.nn.ReLU()]))
    refuses_each(SS.plasticity_probe, dict(width=8, sparsity=0.5, n_tasks=1, steps=1),
                 dict(width=[0, -3, 1.5, None], sparsity=[*BAD_NUMBERS, 1.0], n_tasks=[0], steps=[0], seed=[-1],
                      lr=[0, -1], batch_size=[0], weight_decay=[-1], shrink_perturb=[(2.0, 0.1), (0.5,), 0.5]))
    refuses_each(SS.SimBaMLP, dict(in_dim=3, out_dim=1), dict(in_dim=[0], out_dim=[0, None], width=[0, 2.5],
                                                              blocks=[-1], expansion=[0]))
    refuses_each(SS.SimBaSAC, dict(obs_dim=3, act_dim=1, width=8),
                 dict(sparsity=[*BAD_NUMBERS, 1.0], actor_sparsity=[1.0, -0.1], scheme=["x"], width=[0],
                      weight_decay=[-1]))
    refuses_each(SS.scaling_curve, dict(env_id="PointMass", widths=(8,), steps=1),
                 dict(widths=[(), (0,)], seeds=[(), (-1,)], steps=[0]), name_in_message=False)
    with pytest.raises(ValueError, match="scale"):
        SS.experiment("huge")
    with pytest.raises(ValueError, match="batch must have 4 columns"):
        SS.dormant_ratio(net, np.ones((3, 5)))
    with pytest.raises(TypeError, match="widths"):
        SS.scaling_curve("PointMass", 64)
    with pytest.raises(ValueError, match="batches: each target"):
        SS.grad_interference(net, [(np.ones((3, 4)), np.ones((3, 2)))] * 2)
    with pytest.raises(ValueError, match="num_envs"):
        SS.scaling_curve("PointMass", (8,), steps=1, num_envs=0)
