"""icml25nb.efficient.pipeline: bad input of every part gives a one-line error naming the argument. The parts have
their own files: tests/test_pipeline_simulator.py, _planner.py, _runner.py (profiler and runner). The chapter's
experiment itself runs in tests/test_chapters.py."""
import pytest
import torch

from icml25nb.efficient import pipeline as PL


def test_bad_input():
    prof = PL.synthetic_profile("transformer", 16)
    with pytest.raises(ValueError, match="n_nodes must be at least 48"):
        PL.synthetic_profile("unet", 20)
    with pytest.raises(ValueError, match="splits must increase"):
        PL.simulate(prof, [5, 5, 9], 4, 8)
    with pytest.raises(ValueError, match="splits must have n_stages - 1"):
        PL.evaluate_plans(prof, [[3, 5]], PL.schedule_template("1f1b", 4, 4, 8))
    with pytest.raises(ValueError, match="n_micro must be an integer"):
        PL.simulate(prof, [4, 8, 12], 4, 0)
    with pytest.raises(ValueError, match="routing must be one of"):
        PL.simulate(prof, [4, 8, 12], 4, 8, routing="ring")
    with pytest.raises(ValueError, match="capacity must be positive"):
        PL.plan_search(prof, 4, 8, capacity=-1.0)
    with pytest.raises(ValueError, match="invalid must be"):
        PL.plan_search(prof, 4, 8, invalid="keep")
    with pytest.raises(ValueError, match="start must have"):
        PL.plan_search(prof, 4, 8, start=[3, 9])
    with pytest.raises(ValueError, match="schedule must be one of"):
        PL.simulate(prof, [4, 8, 12], 4, 8, "pfeife-lb4")
    with pytest.raises(ValueError, match="loop_batch must be between"):
        PL.simulate(prof, [4, 8, 12], 4, 8, "pfeife-lb9-pf0")
    with pytest.raises(ValueError, match="n_stages must be at least n_devices"):
        PL.pfeife_schedules(2, 4, 8)
    with pytest.raises(ValueError, match="max_plans"):
        PL.plan_exhaustive(PL.synthetic_profile("transformer", 96), 8, 8)
    with pytest.raises(TypeError, match="profile must be a Profile"):
        PL.simulate({"t_fwd": [1]}, [1], 2, 2)
    with pytest.raises(ValueError, match="schedule must list the operations of each"):
        PL.schedule_template([[(0, 0, True)]], 2, 2, 1)
    with pytest.raises(ValueError, match="every \\(stage, micro-batch\\)"):
        PL.schedule_template([[(0, 0, True), (0, 0, False)], [(1, 0, True)]], 2, 2, 1)
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        PL.profile_graph("net", torch.zeros(1))
    with pytest.raises(TypeError, match="plan must be a Plan"):
        PL.run_pipeline(PL.MLPChain([2, 2]), [(1,)], (torch.zeros(2, 2), torch.zeros(2, 2)))
    with pytest.raises(ValueError, match="'gpipe' or '1f1b' for plan_dp"):
        PL.plan_dp(prof, 4, 8, "pfeife-lb8-pf1")
    with pytest.raises(ValueError, match="'gpipe' or '1f1b' for min_peak_memory"):
        PL.min_peak_memory(prof, 4, 8, "pfeife-lb8-pf1")
    with pytest.raises(ValueError, match="plan schedule must be one of"):
        PL.run_pipeline(PL.MLPChain([2, 2, 2]), PL.Plan((1,), "pfeife-lb2-pf1", 2, 2, 2), (torch.zeros(2, 2),) * 2)
    with pytest.raises(ValueError, match="world_size"):
        PL.run_pipeline(PL.MLPChain([2, 2, 2]), PL.Plan((1,), "1f1b", 2, 2, 2), (torch.zeros(2, 2),) * 2,
                        world_size=1)
