"""icml25nb.graphdata: synthetic graphs with known structure (homophily, planted orbits, planted motifs), exact
orbits against full automorphism enumeration, WL colours against orbits and networkx, the linear probe, and the
PyTorch Geometric pieces (layers, from_networkx, negative sampling, a GCN) on the generated data."""
import importlib.util
import itertools
import math
import warnings

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms.isomorphism import GraphMatcher

from icml25nb import graphdata as gd

# bliss comes with python-igraph (the `bench` extra, which `make setup` and CI install); without it, the rest still runs
METHODS = ("vf2pp", "vf2pp-degree") + (("bliss",) if importlib.util.find_spec("igraph") else ())


def _brute_orbits(G):
    "Orbits from every automorphism networkx's GraphMatcher(G, G) enumerates (small groups only)."
    nodes = list(G)
    idx = {v: i for i, v in enumerate(nodes)}
    parent = list(range(len(nodes)))

    def find(a):
        while parent[a] != a:
            a = parent[a]
        return a
    for phi in GraphMatcher(G, G).isomorphisms_iter():
        for a, b in phi.items():
            ra, rb = find(idx[a]), find(idx[b])
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    return gd.first_occurrence([find(i) for i in range(len(nodes))])


# ------------------------------------------------------------------------------------------------------------ SBM
def test_sbm_probabilities_give_the_targets_in_expectation():
    for n, k, d, h in [(600, 3, 8.0, 0.8), (101, 4, 5.0, 0.1), (50, 2, 3.0, 0.5)]:
        p_in, p_out = gd.sbm_probabilities(n, k, d, h)
        sizes = gd._block_sizes(n, k)
        inside = sum(s * (s - 1) / 2 for s in sizes)
        across = n * (n - 1) / 2 - inside
        assert sum(sizes) == n and max(sizes) - min(sizes) <= 1
        assert abs(p_in * inside + p_out * across - n * d / 2) < 1e-9  # expected edges: mean degree d
        assert abs(p_in * inside / (n * d / 2) - h) < 1e-12  # expected share of edges inside blocks: h


def test_sbm_homophily_tracks_the_knob():
    targets = [0.05, 0.25, 0.5, 0.75, 0.95]
    means = []
    for h in targets:
        vals = [gd.edge_homophily(gd.sbm_graph(800, 4, avg_degree=8, homophily=h, seed=s)) for s in range(4)]
        means.append(np.mean(vals))
        assert abs(np.mean(vals) - h) < 4 * np.sqrt(h * (1 - h) / (4 * 3200)) + 0.005, (h, vals)
    assert np.all(np.diff(means) > 0.15)


def test_sbm_graph_labels_seeds_and_pyg_homophily():
    from torch_geometric.utils import homophily
    G = gd.sbm_graph(400, 4, avg_degree=6, homophily=0.6, seed=3)
    assert list(G) == list(range(400))
    assert np.bincount(gd.node_labels(G)).tolist() == [100] * 4
    data = gd.to_data(G)
    assert abs(homophily(data.edge_index, data.y, method="edge") - gd.edge_homophily(G)) < 1e-6
    assert nx.utils.graphs_equal(G, gd.sbm_graph(400, 4, avg_degree=6, homophily=0.6, seed=3))
    assert set(G.edges()) != set(gd.sbm_graph(400, 4, avg_degree=6, homophily=0.6, seed=4).edges())
    assert gd.edge_homophily(G, gd.node_labels(G)) == gd.edge_homophily(G)


def test_sbm_bad_input():
    for kw, word in [({"homophily": -0.1}, "homophily"), ({"avg_degree": 0}, "avg_degree"),
                     ({"avg_degree": float("nan")}, "avg_degree"), ({"n_classes": 1}, "n_classes"),
                     ({"n": 3, "n_classes": 4}, "n_classes"), ({"n": 20, "avg_degree": 25}, "avg_degree"),
                     ({"seed": -1}, "seed")]:
        with pytest.raises(ValueError, match=word):
            gd.sbm_graph(**kw)
    with pytest.raises(ValueError, match="homophily must be 0"):
        gd.sbm_graph(4, 4, avg_degree=1, homophily=0.5)
    with pytest.raises(TypeError, match="G must"):
        gd.edge_homophily([(0, 1)])
    with pytest.raises(ValueError, match="edge"):
        gd.edge_homophily(nx.empty_graph(3), [0, 1, 2])
    with pytest.raises(ValueError, match="y"):
        gd.edge_homophily(nx.path_graph(3), "missing")


def test_class_features():
    y = np.repeat(np.arange(3), 400)
    X = gd.class_features(y, dim=6, signal=2.0, seed=1)
    assert X.dtype == np.float32 and X.shape == (1200, 6)
    mu = np.stack([X[y == c].mean(0) for c in range(3)])
    assert np.allclose(np.linalg.norm(mu, axis=1), 2.0, atol=0.15)  # class means of norm `signal`
    assert np.allclose(mu @ mu.T - np.diag(np.diag(mu @ mu.T)), 0, atol=0.3)  # orthogonal directions
    assert abs(np.std(X - mu[y]) - 1) < 0.05  # unit Gaussian noise around the means
    np.testing.assert_array_equal(X, gd.class_features(y, dim=6, signal=2.0, seed=1))
    with pytest.raises(ValueError, match="dim"):
        gd.class_features(y, dim=2)
    with pytest.raises(ValueError, match="signal"):
        gd.class_features(y, signal=-1)


# ----------------------------------------------------------------------------------------------- role graphs, orbits
ROLE_CONFIGS = [(("house",), 3, 1), (("house",), 2, 2), (("house",), 3, 2), (("house",), 4, 3), (("cycle5",), 3, 2), (("cycle6",), 2, 4),
                (("clique4",), 3, 1), (("star3",), 3, 2), (("triangle",), 4, 2), (("house", "cycle6"), 2, 2),
                (("house", "star3", "cycle5"), 2, 2), (("house", "house", "cycle4"), 2, 1),
                (("clique4", "star2"), 3, 3), (("cycle5", "clique3", "cycle5"), 1, 2)]


@pytest.mark.parametrize("motifs,repeats,spacing", ROLE_CONFIGS)
def test_role_graph_planted_roles_are_the_exact_orbits(motifs, repeats, spacing):
    G = gd.role_graph(motifs, repeats=repeats, spacing=spacing, seed=repeats + spacing)
    roles = gd.first_occurrence(gd.node_labels(G, "role"))
    for method in METHODS:
        np.testing.assert_array_equal(gd.exact_orbits(G, method=method), roles)
    assert gd.refines(roles, gd.wl_colors(G, None))
    assert len(G.graph["role_names"]) == roles.max() + 1
    motif_idx = gd.node_labels(G, "motif")
    assert (motif_idx == -1).sum() == len(motifs) * repeats * spacing


def test_role_orbits_against_full_automorphism_enumeration():
    for motifs, repeats, spacing in [(("house",), 3, 2), (("house", "cycle5"), 2, 1), (("cycle6",), 2, 3),
                                     (("house", "star2", "cycle5"), 2, 1)]:
        G = gd.role_graph(motifs, repeats, spacing, seed=0)
        np.testing.assert_array_equal(_brute_orbits(G), gd.first_occurrence(gd.node_labels(G, "role")))


def test_role_graph_structure_and_seeds():
    G = gd.role_graph(("house", "cycle5"), repeats=3, spacing=2, seed=0)
    assert G.number_of_nodes() == 12 + 3 * (5 + 5) and list(G) == list(range(G.number_of_nodes()))
    assert G.number_of_edges() == 12 + 3 * (7 + 6)
    assert nx.is_connected(G)
    H = gd.role_graph(("house", "cycle5"), repeats=3, spacing=2, seed=1)
    assert nx.is_isomorphic(G, H) and set(G.edges()) != set(H.edges())
    assert nx.utils.graphs_equal(G, gd.role_graph(("house", "cycle5"), repeats=3, spacing=2, seed=0))
    # the role distribution does not depend on the seed
    assert sorted(np.bincount(gd.node_labels(G, "role"))) == sorted(np.bincount(gd.node_labels(H, "role")))
    for bad, word in [("hexagon", "motif"), ("cycle2", "motif"), ("star1", "motif"), ("clique", "motif")]:
        with pytest.raises(ValueError, match=word):
            gd.role_graph(bad)
    with pytest.raises(ValueError, match="at least 2"):
        gd.role_graph("house", repeats=1)
    with pytest.raises(ValueError, match="motifs"):
        gd.role_graph([])
    with pytest.raises(ValueError, match="repeats"):
        gd.role_graph("house", repeats=0)


@pytest.mark.parametrize("method", ("auto",) + METHODS)
def test_exact_orbits_known_graphs(method):
    orbits = lambda G: gd.exact_orbits(G, method=method)
    np.testing.assert_array_equal(orbits(nx.cycle_graph(9)), np.zeros(9, int))
    np.testing.assert_array_equal(orbits(nx.path_graph(7)), [0, 1, 2, 3, 2, 1, 0])
    np.testing.assert_array_equal(orbits(nx.star_graph(6)), [0] + [1] * 6)
    np.testing.assert_array_equal(orbits(nx.petersen_graph()), np.zeros(10, int))  # vertex-transitive
    np.testing.assert_array_equal(orbits(nx.complete_bipartite_graph(2, 3)), [0, 0, 1, 1, 1])
    assert len(set(orbits(nx.frucht_graph()))) == 12  # asymmetric, 3-regular
    np.testing.assert_array_equal(orbits(nx.empty_graph(3)), [0, 0, 0])
    assert orbits(nx.Graph()).shape == (0,)
    # disconnected: two copies of a path swap with each other
    np.testing.assert_array_equal(orbits(nx.disjoint_union(nx.path_graph(3), nx.path_graph(3))), [0, 1, 0, 0, 1, 0])
    # a self-loop at one end of a path breaks its mirror symmetry; at both ends it keeps it
    P = nx.path_graph(5)
    P.add_edge(0, 0)
    np.testing.assert_array_equal(orbits(P), [0, 1, 2, 3, 4])
    P.add_edge(4, 4)
    np.testing.assert_array_equal(orbits(P), [0, 1, 2, 1, 0])
    np.testing.assert_array_equal(orbits(P), _brute_orbits(P))


def test_exact_orbits_without_igraph(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "igraph", None)  # import igraph now raises ImportError
    np.testing.assert_array_equal(gd.exact_orbits(nx.path_graph(4)), [0, 1, 1, 0])  # auto falls back to vf2pp
    with pytest.raises(ImportError, match="python-igraph"):
        gd.exact_orbits(nx.path_graph(4), method="bliss")


def test_exact_orbits_bad_input():
    with pytest.raises(ValueError, match="max_nodes"):
        gd.exact_orbits(nx.path_graph(50), max_nodes=20)
    with pytest.raises(ValueError, match="method"):
        gd.exact_orbits(nx.path_graph(5), method="pagerank")
    with pytest.raises(TypeError, match="undirected"):
        gd.exact_orbits(nx.DiGraph([(0, 1)]))


@pytest.mark.parametrize("seed", range(3))
def test_exact_orbits_against_enumeration_on_random_graphs(seed):
    "Sparse random graphs (trees with a few extra edges: symmetric leaves, small groups) and WL coarsening."
    rng = np.random.default_rng(seed)
    for i in range(10):
        n = int(rng.integers(3, 16))
        G = nx.random_labeled_tree(n, seed=int(rng.integers(2**31)))
        for _ in range(int(rng.integers(0, 3))):
            a, b = rng.choice(n, 2, replace=False).tolist()
            G.add_edge(a, b)
        if np.prod([math.factorial(d) for _, d in G.degree()]) > 5e4:  # enumeration too long
            continue
        brute = _brute_orbits(G)
        for method in ("auto",) + METHODS:
            np.testing.assert_array_equal(gd.exact_orbits(G, method=method), brute)
        assert gd.refines(brute, gd.wl_colors(G, None))
        assert gd.refines(brute, gd.wl_colors(G, 2))  # any number of rounds: orbits never split a colour


def test_refines_and_purity():
    assert gd.refines([0, 1, 2, 3], [0, 0, 1, 1]) and gd.refines([5, 5, 7], [1, 1, 1])
    assert not gd.refines([0, 0, 1], [0, 1, 1])
    assert gd.partition_purity([0, 0, 1, 1], [0, 0, 1, 1]) == 1.0
    assert gd.partition_purity([0, 0, 0, 0], [0, 0, 1, 2]) == 0.5
    assert gd.partition_purity([0, 1, 2, 3], [0, 0, 1, 2]) == 1.0  # finer than the reference: pure
    with pytest.raises(ValueError, match="fine"):
        gd.refines([0, 1], [0, 1, 2])
    with pytest.raises(ValueError, match="classes"):
        gd.partition_purity([], [])


# --------------------------------------------------------------------------------------------------- motif graphs
@pytest.mark.parametrize("seed", range(3))
def test_motif_graph_labels_are_exact(seed):
    motifs = {"house": 3, "cycle5": 2, "clique4": 2, "triangle": 3, "star3": 2, "cycle6": 1}
    G = gd.motif_graph(50, motifs, seed=seed)
    names = G.graph["motif_names"]
    assert names == ["base", "house", "cycle5", "clique4", "clique3", "star3", "cycle6"]
    mot, inst = gd.node_labels(G, "motif"), gd.node_labels(G, "instance")
    assert G.number_of_nodes() == 50 + 15 + 10 + 8 + 9 + 8 + 6 and nx.is_connected(G)
    assert np.bincount(mot).tolist() == [50, 15, 10, 8, 9, 8, 6]
    assert ((mot == 0) == (inst == -1)).all()
    # every cycle of the graph lies inside one planted instance, and each cyclic instance is one block
    cyclic = [i for i in range(inst.max() + 1) if names[mot[inst == i][0]] != "star3"]
    blocks = sorted(sorted(b) for b in nx.biconnected_components(G) if len(b) > 2)
    assert blocks == sorted(sorted(np.flatnonzero(inst == i).tolist()) for i in cyclic)
    for cyc in nx.cycle_basis(G):
        assert len(set(inst[cyc].tolist())) == 1 and inst[cyc[0]] >= 0
    # nodes in a triangle: all of a triangle's or a 4-clique's, a house's roof and middle pair, nobody else
    tri = np.array([nx.triangles(G)[v] > 0 for v in G])
    for i in range(inst.max() + 1):
        members = inst == i
        assert tri[members].sum() == {"house": 3, "clique3": 3, "clique4": 4}.get(names[mot[members][0]], 0)
    assert not tri[mot == 0].any()
    # orbits are a refinement of the stable WL colours
    assert gd.refines(gd.exact_orbits(G), gd.wl_colors(G, None))


def test_motif_graph_seeds_and_bad_input():
    a, b = gd.motif_graph(30, seed=1), gd.motif_graph(30, seed=1)
    assert nx.utils.graphs_equal(a, b)
    assert set(a.edges()) != set(gd.motif_graph(30, seed=2).edges())
    assert gd.motif_graph(1, [("triangle", 2)]).number_of_nodes() == 7
    with pytest.raises(ValueError, match="motif"):
        gd.motif_graph(10, {"pentagon": 1})
    with pytest.raises(ValueError, match="motifs"):
        gd.motif_graph(10, {"house": -2})
    with pytest.raises(ValueError, match="motifs"):
        gd.motif_graph(10, {})
    with pytest.raises(ValueError, match="n_base"):
        gd.motif_graph(0)


# ------------------------------------------------------------------------------------------------------ WL wrappers
def test_wl_colors_wrapper_and_graph_classes_against_networkx_hash():
    graphs = [nx.random_regular_graph(3, 10, seed=s) for s in range(4)] + \
             [nx.gnm_random_graph(10, 15, seed=s) for s in range(4)] + \
             [nx.cycle_graph(6), nx.disjoint_union(nx.cycle_graph(3), nx.cycle_graph(3))]
    graphs.append(nx.relabel_nodes(graphs[5], {v: 9 - v for v in graphs[5]}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for it in (2, 3):  # networkx's hash with iterations=1 hashes no round on attribute-free graphs
            cls = gd.wl_graph_classes(graphs, it)
            hashes = [nx.weisfeiler_lehman_graph_hash(G, iterations=it) for G in graphs]
            for i, j in itertools.combinations(range(len(graphs)), 2):
                assert (cls[i] == cls[j]) == (hashes[i] == hashes[j])
                if i < 2 and j < 4:
                    assert gd.wl_equivalent(graphs[i], graphs[j], it) == (hashes[i] == hashes[j])
    assert cls[0] == cls[1] and cls[5] == cls[-1] and cls[8] == cls[9]
    G = nx.path_graph(5)
    nx.set_node_attributes(G, {0: "a", 1: "b", 2: "a", 3: "b", 4: "b"}, "kind")
    np.testing.assert_array_equal(gd.wl_colors(G, 0, init="kind"), [0, 1, 0, 1, 1])
    np.testing.assert_array_equal(gd.wl_colors(G, 2, history=True)[1], [0, 1, 1, 1, 0])
    np.testing.assert_array_equal(gd.wl_colors(nx.relabel_nodes(G, {0: "x"}), None), [0, 1, 2, 1, 0])
    with pytest.raises(ValueError, match="history"):
        gd.wl_colors(G, None, history=True)
    with pytest.raises(ValueError, match="iterations"):
        gd.wl_colors(G, 1.5)
    with pytest.raises(TypeError, match="undirected"):
        gd.wl_colors(nx.MultiGraph([(0, 1), (0, 1)]))
    with pytest.raises(ValueError, match="graphs"):
        gd.wl_graph_classes([])


# ---------------------------------------------------------------------------------------------------- linear probe
def test_linear_probe_informative_vs_noise():
    import torch
    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, 1500)
    informative = np.eye(5)[y] + 0.3 * rng.standard_normal((1500, 5))
    noisy = rng.standard_normal((1500, 20))
    assert gd.linear_probe(informative, y) > 0.95
    accs = [gd.linear_probe(noisy, y, seed=s) for s in range(3)]
    assert abs(np.mean(accs) - np.bincount(y).max() / len(y)) < 0.06  # near chance
    assert gd.linear_probe(torch.from_numpy(informative).float().requires_grad_(), y) > 0.95
    assert gd.linear_probe(informative, y, seed=4) == gd.linear_probe(informative, y, seed=4)
    with pytest.raises(ValueError, match="Z"):
        gd.linear_probe(np.zeros(10), np.arange(10) % 2)
    with pytest.raises(ValueError, match="Z"):
        gd.linear_probe(np.full((10, 2), np.nan), np.arange(10) % 2)
    with pytest.raises(ValueError, match="y must have"):
        gd.linear_probe(informative, y[:-1])
    with pytest.raises(ValueError, match="test_size"):
        gd.linear_probe(informative, y, test_size=1.0)
    with pytest.raises(ValueError, match="two classes"):
        gd.linear_probe(informative, np.zeros(1500))


# ----------------------------------------------------------------------------------------------- PyTorch Geometric
def test_to_data_and_pyg_layers():
    import torch
    from torch_geometric.nn import GATConv, GCNConv, GINConv, SAGEConv
    from torch_geometric.utils import negative_sampling
    G = gd.role_graph(("house", "cycle5"), repeats=3, spacing=2, seed=0)
    data = gd.to_data(G, x=np.ones((G.number_of_nodes(), 3)), y="role")
    assert data.num_nodes == G.number_of_nodes() and data.x.shape == (G.number_of_nodes(), 3)
    edges = {tuple(e) for e in data.edge_index.t().tolist()}
    assert edges == {(u, v) for u, v in G.edges()} | {(v, u) for u, v in G.edges()}
    assert data.y.dtype == torch.long and data.y.tolist() == gd.node_labels(G, "role").tolist()
    assert data.motif.tolist() == gd.node_labels(G, "motif").tolist()  # other node attributes come along
    torch.manual_seed(0)
    for layer in (GCNConv(3, 4), SAGEConv(3, 4), GINConv(torch.nn.Sequential(torch.nn.Linear(3, 4))),
                  GATConv(3, 4, heads=2)):
        out = layer(data.x, data.edge_index)
        out.pow(2).sum().backward()
        assert out.shape[0] == data.num_nodes and torch.isfinite(out).all()
        assert all(p.grad is not None for p in layer.parameters())
    neg = negative_sampling(data.edge_index, num_nodes=data.num_nodes, num_neg_samples=100)
    assert neg.shape[0] == 2 and neg.shape[1] > 50
    assert not any(G.has_edge(a, b) for a, b in neg.t().tolist())
    assert gd.to_data(G, y=None).y is None
    with pytest.raises(ValueError, match="x must"):
        gd.to_data(G, x=np.ones((3, 2)), y="role")
    with pytest.raises(ValueError, match="y"):
        gd.to_data(G)  # a role graph has no attribute y
    with pytest.raises(TypeError, match="G must"):
        gd.to_data(nx.DiGraph([(0, 1)]))


def test_gcn_uses_the_graph_on_a_homophilous_sbm():
    """A 2-layer PyG GCN beats the linear probe on the features alone where the graph is homophilous, and not on a
    heterophilous graph of the same degree (neighbour averaging mixes classes there)."""
    import torch
    import torch.nn.functional as F
    from torch_geometric.nn import GCNConv
    from torch_geometric.transforms import RandomNodeSplit

    def run(h):
        G = gd.sbm_graph(600, 3, avg_degree=8, homophily=h, seed=0)
        x = gd.class_features(gd.node_labels(G), dim=8, signal=1.0, seed=0)
        torch.manual_seed(0)
        d = RandomNodeSplit(split="train_rest", num_val=0, num_test=0.5)(gd.to_data(G, x=x))
        c1, c2 = GCNConv(8, 16), GCNConv(16, 3)
        opt = torch.optim.Adam([*c1.parameters(), *c2.parameters()], lr=0.02, weight_decay=5e-4)
        f = lambda: c2(F.relu(c1(d.x, d.edge_index)), d.edge_index)
        for _ in range(100):
            opt.zero_grad()
            F.cross_entropy(f()[d.train_mask], d.y[d.train_mask]).backward()
            opt.step()
        return (f().argmax(1)[d.test_mask] == d.y[d.test_mask]).float().mean().item(), gd.linear_probe(x, d.y.numpy())

    gcn_h, probe_h = run(0.9)
    gcn_l, probe_l = run(0.1)
    assert gcn_h > probe_h + 0.15 and gcn_h > 0.9
    assert gcn_l < probe_l + 0.05
