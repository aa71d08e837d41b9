"""icml25nb.efficient.pipeline, the distributed runner: stages with torch.fx (split_graph), one small 2-process
session against one process. The profiler's tests are in tests/test_pipeline_profiler.py."""
import copy

import numpy as np
import pytest
import torch

from icml25nb.efficient import pipeline as PL


def test_split_graph_reproduces_the_model():
    torch.manual_seed(0)
    net = PL.SkipMLP(12, (24, 16, 8), 3).double()
    x = torch.randn(5, 12, dtype=torch.float64)
    for splits in ([2], [4, 9], [1, 5, 9, 12]):
        mods = PL.split_graph(net, splits)
        h = (x,)
        for m in mods[:-1]:
            h = m(*h)
        torch.testing.assert_close(mods[-1](*h), net(x), rtol=0, atol=1e-14)
    with pytest.raises(ValueError, match="single tensor"):
        PL.split_graph(PL._trace(_TwoOutputs()), [1])


class _TwoOutputs(torch.nn.Module):
    def forward(self, x):
        return x + 1, x * 2


def test_two_processes_match_one_process():
    torch.manual_seed(1)
    net = PL.SkipMLP(8, (16, 12, 6), 3)
    chain = PL.MLPChain([8, 16, 16, 3])
    xy = (torch.randn(8, 8, dtype=torch.float64), torch.randn(8, 3, dtype=torch.float64))
    plans = [PL.Plan((6,), "gpipe", 2, 2, 4), PL.Plan((3, 6, 9), "interleaved", 4, 2, 2),
             PL.Plan((3,), "1f1b", 2, 2, 2)]
    out = PL.run_pipeline([net, net, chain], plans, [xy, xy, xy], dtype=torch.float64, steps=[1, 1, 2],
                          profile=True, comm_sizes=[1024], comm_reps=2, timeout=180)
    for model, run in zip([net, net, chain], out["runs"]):
        ref = PL._trace(copy.deepcopy(model)).double()
        PL._mse(ref(xy[0]), xy[1]).backward()
        assert set(run["grads"]) == {k for k, _ in ref.named_parameters()}
        for k, p in ref.named_parameters():
            np.testing.assert_allclose(run["grads"][k], p.grad.numpy(), rtol=0, atol=1e-12)
    assert len(out["runs"][2]["times"]) == 2 and out["profile"].n == 13 and set(out["comm"]) == {1024}
