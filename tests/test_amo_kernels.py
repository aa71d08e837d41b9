"""kernels/amo.py: brute-force AMO counts, Python reference (distinct orientations) vs @njit vs CUDA (simulator)."""
import math

import networkx as nx
import numpy as np
import pytest

from icml25nb.kernels import amo as AK


def masks(G):
    G = nx.convert_node_labels_to_integers(G)
    return AK.adjacency_masks(G.number_of_nodes(), G.edges())


@pytest.mark.parametrize("seed", range(6))
def test_njit_matches_reference_on_random_graphs(seed):
    "Any graph, chordal or not: the canonical-order count equals the number of distinct AMOs."
    rng = np.random.default_rng(seed)
    for _ in range(15):
        n = int(rng.integers(1, 8))
        G = nx.gnp_random_graph(n, rng.uniform(0.1, 0.9), seed=int(rng.integers(1 << 30)))
        adj = masks(G)
        assert AK.amo_count_njit(adj) == AK.amo_count_ref(adj)


def test_known_values():
    for n in range(1, 9):
        assert AK.amo_count_njit(masks(nx.complete_graph(n))) == math.factorial(n)
        assert AK.amo_count_njit(masks(nx.path_graph(n))) == n
    assert AK.amo_count_njit(masks(nx.cycle_graph(4))) == 0           # every orientation of C4 is cyclic or immoral
    assert AK.amo_count_njit(masks(nx.star_graph(5))) == 6
    assert AK.amo_count_njit(masks(nx.empty_graph(4))) == 1


@pytest.mark.parametrize("G", [nx.complete_graph(4), nx.path_graph(5), nx.star_graph(3),
                               nx.Graph([(0, 1), (1, 2), (0, 2), (2, 3), (3, 4), (2, 4)])])
def test_cuda_simulator_matches(G):
    adj = masks(G)
    assert AK.amo_count_cuda(adj) == AK.amo_count_ref(adj)


def test_bad_input():
    with pytest.raises(ValueError, match="brute force needs"):
        AK.adjacency_masks(13, [])
    with pytest.raises(ValueError, match="distinct"):
        AK.adjacency_masks(3, [(0, 0)])
    with pytest.raises(ValueError, match="symmetric"):
        AK.amo_count_njit(np.array([2, 0], dtype=np.int64))
    with pytest.raises(ValueError, match="outside"):
        AK.amo_count_njit(np.array([4, 0], dtype=np.int64))


def test_benchmark_small():
    res = AK.benchmark("small", repeat=1)
    assert res["both equal n!"] and set(res["seconds"]) == set(res["values"])
