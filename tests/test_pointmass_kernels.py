"""kernels/pointmass.py: one step of many point-mass environments, NumPy reference vs @njit vs CUDA (simulator), and
the reference against the dynamics written out for one environment."""
import math

import numpy as np
import pytest

from icml25nb.kernels import pointmass as PM


def _inputs(n, D=2, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, (n, D)), rng.normal(0, 1.5, (n, D)), rng.uniform(-1, 1, (n, D)),
            rng.uniform(-2, 2, (n, D)))  # actions beyond [-1, 1] exercise the clip; big velocities hit the walls


def _one_env(p, v, g, a, dt, force, damping, ctrl_cost):
    "The dynamics of the module docstring, one environment, one coordinate at a time in plain Python."
    p2, v2, d2, a2 = [], [], 0.0, 0.0
    for k in range(len(p)):
        ak = min(1.0, max(-1.0, a[k]))
        vk = (1 - damping * dt) * v[k] + dt * force * ak
        pk = p[k] + dt * vk
        if abs(pk) > 1:
            pk, vk = math.copysign(1.0, pk), 0.0
        p2.append(pk), v2.append(vk)
        d2 += (pk - g[k]) ** 2
        a2 += ak ** 2
    return p2, v2, -math.sqrt(d2) - ctrl_cost * a2


@pytest.mark.parametrize("params", [(0.1, 2.0, 1.0, 0.0), (0.05, 1.0, 0.0, 0.1), (0.3, 5.0, 2.0, 1.0)])
def test_reference_matches_the_dynamics(params):
    pos, vel, goal, act = _inputs(40, D=3, seed=1)
    p, v, r = PM.step_ref(pos, vel, goal, act, *params)
    walls = 0
    for i in range(40):
        pw, vw, rw = _one_env(pos[i], vel[i], goal[i], act[i], *params)
        np.testing.assert_allclose(p[i], pw, rtol=0, atol=1e-15)
        np.testing.assert_allclose(v[i], vw, rtol=0, atol=1e-15)
        assert abs(r[i] - rw) < 1e-14
        walls += int(np.sum(np.abs(pw) == 1.0))
    assert walls > 0  # the wall branch was taken
    assert np.all(np.abs(p) <= 1.0)


@pytest.mark.parametrize("n,D", [(1, 1), (7, 2), (300, 2), (33, 4)])
def test_njit_equals_reference(n, D):
    pos, vel, goal, act = _inputs(n, D, seed=n)
    for params in [(), (0.2, 3.0, 0.5, 0.25)]:
        want = PM.step_ref(pos, vel, goal, act, *params)
        got = PM.step_njit(pos, vel, goal, act, *params)
        for x, y in zip(got, want):
            assert x.shape == y.shape
            np.testing.assert_allclose(x, y, rtol=1e-14, atol=1e-15)


def test_cuda_simulator_equals_reference():
    pos, vel, goal, act = _inputs(150, 2, seed=3)  # two blocks of 128 threads, the second partly idle
    want = PM.step_ref(pos, vel, goal, act, 0.1, 2.0, 1.0, 0.05)
    got = PM.step_cuda(pos, vel, goal, act, 0.1, 2.0, 1.0, 0.05)
    for x, y in zip(got, want):
        np.testing.assert_allclose(x, y, rtol=1e-14, atol=1e-15)


def test_many_steps_stay_in_the_box_and_reach_the_goal_under_a_proportional_controller():
    "A PD controller towards the goal drives the distance, hence -reward, to near 0 within 60 steps."
    pos, vel, goal, _ = _inputs(64, 2, seed=4)
    vel[:] = 0
    for _ in range(60):
        pos, vel, r = PM.step_njit(pos, vel, goal, 3.0 * (goal - pos) - 1.0 * vel)
        assert np.all(np.abs(pos) <= 1.0)
    assert np.all(-r < 0.05)


def test_bad_input():
    pos, vel, goal, act = _inputs(5)
    with pytest.raises(ValueError, match="action must have shape"):
        PM.check_step_inputs(pos, vel, goal, act[:, :1])
    with pytest.raises(ValueError, match="pos must be a 2-D"):
        PM.check_step_inputs(pos[0], vel, goal, act)
    bad = act.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="action must be finite"):
        PM.step_cuda(pos, vel, goal, bad)


def test_benchmark_small_reports_every_size():
    res = PM.benchmark("small", repeat=1)
    assert set(res) >= {"kernel", "task", "seconds", "reference", "values", "ratios"}
    assert res["reference"] in res["seconds"]
    assert len(res["ratios"]) == 4 and all(v < 1e-12 for v in res["values"].values())
    assert {"control.PointMassVecEnv.step, n=16", "control.PointMassVecEnv.step, n=1024"} <= set(res["seconds"])
