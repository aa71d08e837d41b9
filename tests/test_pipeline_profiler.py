"""icml25nb.efficient.pipeline, the profiler: torch.fx capture and per-node times and bytes (profile_graph), and the
synthetic profiles."""
import numpy as np
import torch

from icml25nb.efficient import pipeline as PL


def test_profile_graph_captures_nodes_edges_and_bytes():
    torch.manual_seed(0)
    net = PL.SkipMLP(12, (24, 16, 8), 3).double()
    x = torch.randn(5, 12, dtype=torch.float64)
    prof = PL.profile_graph(net, x, reps=2)
    nodes = PL._compute_nodes(PL._trace(net))
    assert prof.n == len(nodes) and not prof.is_chain
    assert prof.param_bytes.sum() == sum(p.numel() * 8 for p in net.parameters())
    lin = [i for i, n in enumerate(nodes) if n.op == "call_module"]
    assert all(prof.t_bwd[i] > 0 for i in lin) and prof.input_bytes == 5 * 12 * 8
    out_bytes = {i: 5 * 8 * m.out_features for i, m in zip(lin, [*net.enc, *net.dec, net.head])}
    for (i, j), b in zip(prof.edges, prof.edge_bytes):
        if i in out_bytes:
            assert b == out_bytes[i]


def test_synthetic_profiles_vary_with_the_seed():
    for kind in ("transformer", "unet", "chain"):
        a, b = PL.synthetic_profile(kind, 48, seed=0), PL.synthetic_profile(kind, 48, seed=1)
        assert a.n == b.n == 48 and (kind == "unet") != a.is_chain
        assert not np.allclose(a.t_fwd, b.t_fwd) and not np.allclose(a.param_bytes, b.param_bytes)
        np.testing.assert_array_equal(a.t_fwd, PL.synthetic_profile(kind, 48, seed=0).t_fwd)
