"""Tests of the GALE chapter's library (icml25nb.graphs.gale) at tiny sizes; the experiment itself runs in
tests/test_chapters.py (seed 1) and in the notebook (seed 0)."""
import networkx as nx
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from icml25nb.graphdata import exact_orbits, motif_graph, node_labels, partition_purity, refines, role_graph, to_data
from icml25nb.graphs.gale import (GCNEncoder, add_random_edges, approx_equivalence_classes, attribute_classes,
                                  approx_timings, equivalence_classes, equivalence_loss, grace_loss, kmeans_classes,
                                  random_classes, random_encoder, role_features, time_exponent, train_gale,
                                  train_grace, unify_classes, wl_rounds)


def _loop_loss(z, c, tau):
    "The equivalence loss anchor by anchor, from its definition."
    h, tot, n = F.normalize(z, dim=-1).double(), 0.0, z.shape[1]
    for a, b in ((0, 1), (1, 0)):
        for i in range(n):
            cand = [h[a, i] @ h[b, k] for k in range(n)] + [h[a, i] @ h[a, k] for k in range(n) if k != i]
            pos = [h[a, i] @ h[b, k] for k in range(n) if c[k] == c[i]] + \
                  [h[a, i] @ h[a, k] for k in range(n) if k != i and c[k] == c[i]]
            tot += -torch.log(torch.exp(torch.stack(pos) / tau).sum()) + torch.log(torch.exp(torch.stack(cand) / tau).sum())
    return float(tot) / (2 * n)


def _grace_textbook(z, tau):
    "GRACE's loss, one anchor at a time (Zhu et al. 2020, Eq. 1-2)."
    u, v = F.normalize(z[0], dim=-1).double(), F.normalize(z[1], dim=-1).double()
    n, tot = z.shape[1], 0.0
    for a, b in ((u, v), (v, u)):
        for i in range(n):
            num = torch.exp(a[i] @ b[i] / tau)
            den = num + sum(torch.exp(a[i] @ b[k] / tau) + torch.exp(a[i] @ a[k] / tau) for k in range(n) if k != i)
            tot += -torch.log(num / den)
    return float(tot) / (2 * n)


@pytest.mark.parametrize("tau", [0.2, 0.5, 1.0])
def test_loss_matches_definitions_and_degenerates_to_grace(tau):
    z = torch.randn(2, 9, 4, generator=torch.Generator().manual_seed(1))
    c = np.array([0, 1, 0, 2, 2, 2, 3, 1, 4])
    assert abs(equivalence_loss(z, c, tau).item() - _loop_loss(z, c, tau)) < 1e-4
    singles = np.arange(9)
    assert abs(grace_loss(z, tau).item() - _grace_textbook(z, tau)) < 1e-4
    assert abs(equivalence_loss(z, singles, tau).item() - grace_loss(z, tau).item()) < 1e-5
    intra, inter = equivalence_loss(z, c, tau, parts=True)
    assert abs((intra + inter).item() - equivalence_loss(z, c, tau).item()) < 1e-6
    # coarser classes have more positives: the intra-class term can only decrease
    assert equivalence_loss(z, c, tau, parts=True)[0] <= equivalence_loss(z, singles, tau, parts=True)[0] + 1e-6


def test_loss_gradient_pulls_a_class_together():
    z = torch.randn(2, 6, 3, generator=torch.Generator().manual_seed(2), requires_grad=True)
    c = np.array([0, 0, 0, 1, 1, 1])
    same = torch.as_tensor(np.tile(c[:, None] == c[None, :], (2, 2)))
    off = ~torch.eye(12, dtype=torch.bool)

    def sims():
        h = F.normalize(z.detach(), dim=-1).reshape(12, 3)
        s = h @ h.T
        return s[same & off].mean().item(), s[~same].mean().item()
    within0, across0 = sims()
    opt = torch.optim.SGD([z], lr=0.5)
    for _ in range(300):
        opt.zero_grad()
        equivalence_loss(z, c, 0.5).backward()
        opt.step()
    within, across = sims()
    assert within0 < 0.5 and within > 0.9 and across < -0.9  # both views of a class together, classes opposite


def test_classes():
    G = role_graph(("house", "star3"), repeats=3, spacing=2, seed=4)
    orb, c = exact_orbits(G), approx_equivalence_classes(G)
    assert refines(orb, c) and partition_purity(c, node_labels(G, "role")) == 1.0
    M = motif_graph(n_base=20, seed=5)
    assert refines(exact_orbits(M), approx_equivalence_classes(M))
    assert refines(exact_orbits(M), approx_equivalence_classes(M, 1))
    # a cycle: one orbit, one WL class; a path: orbits pair ends, WL agrees
    assert len(set(approx_equivalence_classes(nx.cycle_graph(7)))) == 1
    assert approx_equivalence_classes(nx.path_graph(5)).tolist() == [0, 1, 2, 1, 0]
    X = np.array([[0.04, 1.0], [0.0, 1.0], [0.3, 1.0], [-0.04, 1.0]])
    assert attribute_classes(X, decimals=1).tolist() == [0, 0, 1, 0]
    assert attribute_classes(X, decimals=2).tolist() == [0, 1, 2, 3]
    assert unify_classes([0, 0, 1, 2, 3, 4], [0, 1, 1, 2, 3, 3]).tolist() == [0, 0, 0, 1, 2, 2]
    F_ = role_features(50, 3, seed=1)
    assert F_.shape == (50, 4) and (F_[:, 0] == 1).all() and len(set(attribute_classes(F_, 1))) == 50


def test_attribute_branch_joins_structural_classes():
    "The attribute branch of GALE's classes: ties inside a structural class change nothing, ties across classes join them."
    P = nx.path_graph(6)  # structural classes {0, 5}, {1, 4}, {2, 3}
    assert equivalence_classes(P, np.eye(6)).tolist() == [0, 1, 2, 2, 1, 0]
    X = np.arange(6, dtype=float)[:, None]
    X[4] = X[1]  # a tie inside the class {1, 4}
    assert equivalence_classes(P, X).tolist() == [0, 1, 2, 2, 1, 0]
    X[2] = X[0] + 0.03  # a tie, to one decimal, between {0, 5} and {2, 3}
    assert equivalence_classes(P, X, decimals=1).tolist() == [0, 1, 0, 0, 1, 0]
    assert equivalence_classes(P, X, decimals=2).tolist() == [0, 1, 2, 2, 1, 0]
    # constant features make every node attribute-equivalent: one class
    assert len(set(equivalence_classes(P, np.ones((6, 2))))) == 1
    # on the chapter's role graph the noise features are all distinct: the branch leaves the structural classes alone
    G = role_graph(("house", "star3"), repeats=3, spacing=2, seed=4)
    X = role_features(G.number_of_nodes(), 7, seed=4)
    assert np.array_equal(equivalence_classes(G, X, 1), approx_equivalence_classes(G))
    with pytest.raises(ValueError, match="one row per node"):
        equivalence_classes(P, np.eye(5))


def test_random_classes_keep_sizes_and_break_membership():
    c = np.repeat(np.arange(6), [1, 1, 2, 3, 5, 8])
    r = random_classes(c, seed=0)
    assert sorted(np.bincount(r)) == sorted(np.bincount(c))
    assert np.array_equal(r, random_classes(c, seed=0)) and not np.array_equal(r, random_classes(c, seed=1))
    assert partition_purity(r, c) < 1.0
    assert random_classes(np.arange(5), seed=2).tolist() == [0, 1, 2, 3, 4]  # singletons stay singletons
    with pytest.raises(ValueError, match="classes must be"):
        random_classes([])


def test_add_random_edges():
    G = role_graph(("house", "star3"), repeats=4, spacing=2, seed=1)
    H = add_random_edges(G, 10, seed=3)
    assert list(H.nodes()) == list(G.nodes()) and H.number_of_edges() == G.number_of_edges() + 10
    assert set(G.edges()) <= set(H.edges()) and nx.number_of_selfloops(H) == 0
    assert np.array_equal(node_labels(H, "role"), node_labels(G, "role"))
    assert set(H.edges()) == set(add_random_edges(G, 10, seed=3).edges())
    assert G.number_of_edges() == H.number_of_edges() - 10  # G itself untouched
    # the noise breaks the planted symmetries: the classes of the observed graph are no longer the roles
    y = node_labels(G, "role")
    c = approx_equivalence_classes(H)
    assert partition_purity(y, c) < 1.0
    K = nx.complete_graph(4)
    K.remove_edge(0, 1)
    assert add_random_edges(K, 1).has_edge(0, 1)
    with pytest.raises(ValueError, match="missing edges"):
        add_random_edges(K, 2)
    with pytest.raises(TypeError, match="G must be"):
        add_random_edges("graph", 1)


def test_training_is_reproducible_and_singleton_gale_is_grace():
    G = role_graph(("house",), repeats=3, spacing=2, seed=0)
    d = to_data(G, x=role_features(G.number_of_nodes(), 2, seed=0), y="role")
    Z1, l1 = train_gale(d, approx_equivalence_classes(G), epochs=3, seed=7, hidden=8, out=4, layers=2)
    Z2, l2 = train_gale(d, approx_equivalence_classes(G), epochs=3, seed=7, hidden=8, out=4, layers=2)
    assert Z1.shape == (G.number_of_nodes(), 4) and np.array_equal(Z1, Z2) and np.array_equal(l1, l2)
    _, lg = train_grace(d, epochs=3, seed=7, hidden=8, out=4, layers=2)
    _, ls = train_gale(d, np.arange(G.number_of_nodes()), epochs=3, seed=7, hidden=8, out=4, layers=2)
    assert np.allclose(lg, ls, atol=1e-4)
    assert not np.array_equal(random_encoder(d, seed=7, hidden=8, out=4, layers=2),
                              random_encoder(d, seed=8, hidden=8, out=4, layers=2))
    # training lowers the loss
    _, l = train_gale(d, approx_equivalence_classes(G), epochs=40, seed=7, hidden=16, out=8, layers=2)
    assert l[-5:].mean() < l[:5].mean()


def test_wl_rounds_and_operation_count():
    assert [wl_rounds(nx.path_graph(n)) for n in (2, 3, 5, 7, 20)] == [1, 2, 3, 4, 10]
    assert wl_rounds(nx.cycle_graph(9)) == 1 and wl_rounds(nx.star_graph(4)) == 2
    t = approx_timings((20, 40), repeats=1, seed=0)
    assert len(t["wl_rounds"]) == 2 and all(r >= 1 for r in t["wl_rounds"])
    # operations = rounds x (nodes + edges); the motif graphs are trees with motifs, so nodes <= edges + 1
    assert all(o > r * m for o, r, m in zip(t["wl_ops"], t["wl_rounds"], t["edges"]))
    assert all(o <= r * (2 * m + 1) for o, r, m in zip(t["wl_ops"], t["wl_rounds"], t["edges"]))
    with pytest.raises(TypeError, match="G must be"):
        wl_rounds("graph")


def test_kmeans_classes():
    rng = np.random.default_rng(0)
    X = np.r_[np.zeros((6, 3)), np.full((6, 3), 5.0), np.full((6, 3), -5.0)] + rng.normal(0, 0.2, (18, 3))
    c = kmeans_classes(X, 3, seed=0)
    assert c.tolist() == [0] * 6 + [1] * 6 + [2] * 6  # first-occurrence ids, the planted clusters
    assert np.array_equal(kmeans_classes(X, 4, seed=2), kmeans_classes(X, 4, seed=2))
    assert len(set(kmeans_classes(X, 5, seed=0))) == 5
    assert kmeans_classes(torch.as_tensor(X), 3, seed=0).tolist() == c.tolist()
    with pytest.raises(ValueError, match="more than"):
        kmeans_classes(X, 19)
    with pytest.raises(ValueError, match="X must be"):
        kmeans_classes(np.zeros(3), 1)


def test_time_exponent():
    assert abs(time_exponent([10, 20, 40], [1, 2, 4]) - 1.0) < 1e-9
    assert abs(time_exponent([10, 20, 40], [1, 8, 64]) - 3.0) < 1e-9


def test_bad_input():
    z = torch.randn(2, 5, 3)
    with pytest.raises(ValueError, match="z must have shape"):
        equivalence_loss(z[0], np.arange(5))
    with pytest.raises(TypeError, match="z must be a torch tensor"):
        grace_loss(np.zeros((2, 5, 3)))
    with pytest.raises(ValueError, match="classes"):
        equivalence_loss(z, np.arange(4))
    with pytest.raises(ValueError, match="tau"):
        equivalence_loss(z, np.arange(5), tau=-1)
    with pytest.raises(ValueError, match="X must be"):
        attribute_classes(np.zeros(4))
    with pytest.raises(ValueError, match="X must be finite"):
        attribute_classes(np.array([[np.nan]]))
    with pytest.raises(TypeError, match="decimals"):
        attribute_classes(np.zeros((2, 2)), decimals=0.5)
    with pytest.raises(ValueError, match="attribute"):
        unify_classes([0, 1, 2], [0, 1])
    with pytest.raises(TypeError, match="G must be"):
        approx_equivalence_classes("graph")
    with pytest.raises(ValueError, match="iterations"):
        approx_equivalence_classes(nx.path_graph(3), -2)
    with pytest.raises(ValueError, match="sizes and times"):
        time_exponent([1, 2], [1])
    with pytest.raises(ValueError, match="in_dim"):
        GCNEncoder(0)
    d = to_data(nx.path_graph(4), x=np.ones((4, 1), np.float32), y=None)
    with pytest.raises(ValueError, match="classes"):
        train_gale(d, [0, 1])
    with pytest.raises(ValueError, match="lr"):
        train_grace(d, lr=0)
    with pytest.raises(TypeError, match="data must be"):
        train_grace(nx.path_graph(4))
