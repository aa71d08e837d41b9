"""Tests of the AutoGFM chapter's library (icml25nb.graphs.autogfm) at tiny sizes; the experiment itself runs in
tests/test_chapters.py (seed 1) and in the notebook (seed 0)."""
import inspect

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from icml25nb.graphs.autogfm import (DOMAIN_KINDS, OPS, ArchitecturePredictor, AutoGFM, GraphPatternEncoder,
                                     MixedGNNLayer, SuperNet, best_fixed_operator, curriculum_loss, curriculum_weight,
                                     disentangled_contrastive_loss, experiment, family_means, graph_accuracy,
                                     inconsistency_gap, invariance_loss, make_domains, make_graph_domain, noi_subgraph,
                                     one_hot_alphas, split_nodes, top_operator, train_autogfm, train_fixed,
                                     train_shared_search, train_uniform, train_with_mixture)


def _tiny():
    graphs = [split_nodes(make_graph_domain(k, 36, s), 0.5, s) for k in ("heterophilous_sbm", "role_structural")
              for s in (0, 1)]
    return graphs, [0, 0, 1, 1]


@pytest.mark.parametrize("kind", DOMAIN_KINDS)
def test_domains_shapes_and_reproducible(kind):
    g = make_graph_domain(kind, 60, seed=4)
    assert g.x.shape[1] == 16 and g.x.dtype == torch.float32 and torch.isfinite(g.x).all()
    assert g.edge_index.shape[0] == 2 and int(g.edge_index.max()) < g.num_nodes
    # undirected, no self-loops
    e = set(map(tuple, g.edge_index.T.tolist()))
    assert all((v, u) in e for u, v in e) and all(u != v for u, v in e)
    h = make_graph_domain(kind, 60, seed=4)
    assert torch.equal(g.x, h.x) and torch.equal(g.edge_index, h.edge_index) and torch.equal(g.y, h.y)
    assert set(g.keys()) == {"x", "edge_index", "y"}


def test_families_share_means_and_seeds_differ():
    a, b = family_means("feature_only", 3, 0), family_means("feature_only", 3, 1)
    np.testing.assert_allclose(a @ a.T, np.eye(3), atol=1e-12)
    assert not np.allclose(a, b)
    assert not np.allclose(family_means("homophilous_sbm", 3, 0), a)  # families differ by kind


def test_feature_only_signal_is_in_features_role_signal_is_in_structure():
    g = make_graph_domain("feature_only", 900, seed=0)
    means = torch.stack([g.x[g.y == c].mean(0) for c in range(3)])
    assert (means.norm(dim=1) > 1.2).all()  # class means of norm 1.5
    r = make_graph_domain("role_structural", 150, seed=0)
    assert r.x[:, 1:].abs().max() < 0.6 and torch.equal(r.x[:, 0], torch.ones(r.num_nodes))


def test_mixed_layer_is_the_weighted_sum_and_skips_zero_ops():
    torch.manual_seed(0)
    g = make_graph_domain("homophilous_sbm", 40, seed=0)
    layer = MixedGNNLayer(16, 4)
    outs = [(l(g.x) if o == "mlp" else l(g.x, g.edge_index)) for o, l in zip(OPS, layer.layers)]
    w = torch.softmax(torch.randn(len(OPS)), 0)
    torch.testing.assert_close(layer(g.x, g.edge_index, w), sum(wi * oi for wi, oi in zip(w, outs)))
    called = []
    hooks = [l.register_forward_hook(lambda m, i, o, n=n: called.append(n)) for n, l in zip(OPS, layer.layers)]
    layer(g.x, g.edge_index, torch.eye(len(OPS))[2])
    for h in hooks:
        h.remove()
    assert called == ["gat"]  # a one-hot mixture computes one operator


def test_supernet_per_node_alphas_equal_per_graph_runs():
    torch.manual_seed(1)
    net = SuperNet([3])
    g = make_graph_domain("homophilous_sbm", 30, seed=0)
    a = torch.softmax(torch.randn(2, len(OPS)), -1)
    torch.testing.assert_close(net(g.x, g.edge_index, a.expand(g.num_nodes, 2, len(OPS))), net(g.x, g.edge_index, a))


def test_contrastive_loss_is_minimal_for_aligned_distinct_samples():
    gen = torch.Generator().manual_seed(0)
    z = torch.randn(5, 2, 8, generator=gen)
    c = torch.randn(2, 8, generator=gen)
    aligned = disentangled_contrastive_loss(z, z, c, 0.1).item()
    shuffled = disentangled_contrastive_loss(z, z[torch.tensor([1, 2, 3, 4, 0])], c, 0.1).item()
    assert aligned < 0.1 < shuffled  # each dataset finds its own positive, not another's
    # identical samples for every dataset: chance level log N whatever the channel weights
    same = torch.randn(1, 2, 8, generator=gen).expand(5, 2, 8)
    assert abs(disentangled_contrastive_loss(same, same, c).item() - np.log(5)) < 1e-5


def test_predictor_reads_only_the_pattern_vector():
    assert list(inspect.signature(ArchitecturePredictor.forward).parameters) == ["self", "z"]
    assert list(inspect.signature(AutoGFM.alphas).parameters) == ["self", "x", "edge_index", "batch"]
    graphs, tasks = _tiny()
    m = train_autogfm(graphs, tasks, steps=3, seed=0)
    g = make_graph_domain("role_structural", 40, seed=9)
    # the same graph gets the same architecture whatever is attached to it, and whichever head reads it
    g2 = g.clone()
    g2.task, g2.name = 1, "role_structural"
    torch.testing.assert_close(m.architecture(g), m.architecture(g2))
    # in a batch, each graph's architecture is its own: a graph's mixture does not depend on its batch neighbours
    from torch_geometric.data import Batch
    b = Batch.from_data_list([g, graphs[0], graphs[2]])
    torch.testing.assert_close(m.alphas(b.x, b.edge_index, b.batch)[0], m.architecture(g))


def test_curriculum_loss_and_weight():
    assert curriculum_loss(torch.full((2, 2, 5), 0.2)).item() == 0.0
    one = torch.zeros(2, 2, 5)
    one[..., 1] = 1.0
    assert abs(curriculum_loss(one).item() - 4.0) < 1e-6
    assert [curriculum_weight(t, 10) for t in (0, 5, 10, 20)] == [1.0, 0.5, 0.0, 0.0]
    al = torch.softmax(torch.randn(3, 2, 5), -1)
    assert invariance_loss(al, al[:, None].expand(3, 3, 2, 5)).item() == 0.0
    assert invariance_loss(al, al.flip(0)[None].expand(3, 3, 2, 5)).item() > 0


def test_training_is_reproducible_and_learns():
    graphs, tasks = _tiny()
    n1, a1 = train_shared_search(graphs, tasks, steps=5, seed=3)
    n2, a2 = train_shared_search(graphs, tasks, steps=5, seed=3)
    assert torch.equal(a1, a2)
    torch.testing.assert_close(a1.sum(1), torch.ones(2))
    m = train_autogfm(graphs, tasks, steps=40, seed=0, curriculum=False)
    assert m.history["task"][-1] < 0.8 * m.history["task"][0]  # the supernet trains through predicted mixtures
    net = train_fixed(graphs, tasks, "gin", steps=60, seed=0)
    acc = graph_accuracy(net, graphs[2], 1, one_hot_alphas("gin"), graphs[2].train_mask)
    assert acc > 0.5  # GIN fits the role graph's training nodes


def test_best_fixed_operator_picks_the_validation_best():
    graphs, _ = _tiny()
    r = best_fixed_operator(graphs[2:], ops=("gin", "mlp"), steps=60)
    assert r["best"] == max(r["val"], key=r["val"].get) and r["test"] == {}
    assert r["val"]["gin"] > r["val"]["mlp"]  # roles need the structure; the features are constant


def test_make_domains_sizes():
    train, tasks, new = make_domains("fast", seed=2)
    assert len(train) == 14 and tasks.count(0) == 8 and all(tasks.count(t) == 2 for t in (1, 2, 3))
    assert all(len(v) == 3 for v in new.values())
    assert all(bool((g.train_mask ^ g.val_mask).all()) for g in train)


def test_bad_input_names_the_argument():
    graphs, tasks = _tiny()
    with pytest.raises(ValueError, match="kind"):
        make_graph_domain("cora", 50, 0)
    with pytest.raises((TypeError, ValueError), match="seed"):
        make_graph_domain("feature_only", 50, 1.5)
    with pytest.raises(ValueError, match="tasks"):
        train_autogfm(graphs, [0, 1], steps=1)
    with pytest.raises(ValueError, match="steps"):
        train_shared_search(graphs, tasks, steps=0)
    with pytest.raises(ValueError, match="lr"):
        train_fixed(graphs, tasks, "gcn", lr=-1.0)
    with pytest.raises(ValueError, match="op"):
        train_fixed(graphs, tasks, "transformer")
    with pytest.raises(TypeError, match="graphs"):
        train_fixed(graphs[0], [0], "gcn")
    bad = graphs[0].clone()
    bad.x = bad.x.clone()
    bad.x[0, 0] = float("nan")
    with pytest.raises(ValueError, match="finite"):
        train_fixed([bad] + graphs[1:], tasks, "gcn")
    with pytest.raises(ValueError, match="z must have shape"):
        ArchitecturePredictor(8)(torch.ones(2, 3))
    with pytest.raises(ValueError, match="n_centers"):
        noi_subgraph(graphs[0], 0)
    with pytest.raises(ValueError, match="hidden"):
        GraphPatternEncoder(hidden=0)
    with pytest.raises(ValueError, match="scale"):
        make_domains("huge", 0)


def test_one_architecture_ablation_shares_its_mixture_and_still_trains():
    graphs, tasks = _tiny()
    m = train_autogfm(graphs, tasks, steps=30, seed=1, customise=False)
    archs = torch.stack([m.architecture(g) for g in graphs])
    torch.testing.assert_close(archs, archs[:1].expand_as(archs))  # one architecture for every graph
    assert not torch.allclose(archs[0], torch.full_like(archs[0], 0.2), atol=1e-3)  # and it was learned
    assert m.history["task"][-1] < m.history["task"][0]


def test_uniform_and_fixed_are_mixtures():
    graphs, tasks = _tiny()
    f1 = train_fixed(graphs, tasks, "sage", steps=3, seed=2)
    f2 = train_with_mixture(graphs, tasks, one_hot_alphas("sage"), steps=3, seed=2)
    for a, b in zip(f1.parameters(), f2.parameters()):
        assert torch.equal(a, b)
    u = train_uniform(graphs, tasks, steps=3, seed=2)
    assert all(p.grad is not None for p in u.layers.parameters())  # every operator trains under the uniform mixture
    assert any(p.grad is None or not p.grad.any() for n, p in f1.layers.named_parameters() if ".layers.0." in n)


def test_top_operator_and_inconsistency_gap():
    assert top_operator(torch.tensor([[0.0, 0.0, 0.0, 0.0, 1.0], [0.3, 0.0, 0.0, 0.0, 0.7]])) == "mlp"
    test = {"h": {"gcn": 0.9, "sage": 0.88, "gin": 0.6}, "r": {"gcn": 0.5, "sage": 0.3, "gin": 0.95}}
    assert inconsistency_gap(test, {"h": "gcn", "r": "gin"}, "h", "r") == pytest.approx(0.3)
    assert inconsistency_gap(test, {"h": "gcn", "r": "gin"}, "r", "h") == pytest.approx(0.3)  # symmetric
    assert inconsistency_gap(test, {"h": "gcn", "r": "gcn"}, "h", "r") == 0.0
    assert inconsistency_gap(test, {"h": "sage", "r": "gin"}, "h", "r") == pytest.approx(0.28)


def test_experiment_restores_thread_count(monkeypatch):
    import icml25nb.graphs.autogfm as A
    seen = []
    monkeypatch.setattr(A, "_experiment", lambda cfg, scale, seed: seen.append(torch.get_num_threads()) or {})
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        experiment("fast", 0)
        assert seen == [1] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_plots_headless_from_the_module_alone():
    import subprocess
    import sys
    code = (
        "import matplotlib; matplotlib.use('Agg'); import numpy as np\n"
        "from icml25nb.graphs.autogfm import plots, OPS, DOMAIN_KINDS\n"
        "ms = ['best_fixed', 'uniform', 'shared', 'autogfm', 'no_curriculum', 'balanced', 'one_architecture', 'oracle_per_domain']\n"
        "r = dict(ops=list(OPS), domains=list(DOMAIN_KINDS),\n"
        "         per_domain={d: dict(best='gcn', test={o: 0.5 for o in OPS}) for d in DOMAIN_KINDS},\n"
        "         acc={m: {d: 0.6 for d in DOMAIN_KINDS} for m in ms}, mean={m: 0.6 for m in ms},\n"
        "         shared_alpha=np.full((2, 5), 0.2),\n"
        "         alphas={n: {d: np.full((2, 5), 0.2) for d in DOMAIN_KINDS} for n in ('autogfm', 'no_curriculum')})\n"
        "figs = plots(r); assert list(figs) == ['autogfm'] and len(figs['autogfm'].axes) == 4\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
