"""kernels/gridstep.py: one step of many cooperative grid environments, NumPy reference vs @njit vs CUDA (simulator),
against values worked out by hand."""
import warnings

import numpy as np
import pytest

from fuzzutil import BAD_NUMBERS, assert_refused, non_contiguous, refuses_each
from icml25nb.kernels import gridstep as GS


def _random_case(n, N, size, seed):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, size, (n, N, 2)), rng.integers(0, size, (n, N, 2)), rng.integers(0, 5, (n, N)))


def _brute(pos, goal, action, size, collision):
    "The definition, one environment and one agent at a time in plain Python."
    moves = {0: (0, 0), 1: (0, 1), 2: (0, -1), 3: (-1, 0), 4: (1, 0)}
    new, rew = np.empty_like(pos), np.empty(len(pos))
    for e in range(len(pos)):
        cells = []
        for i in range(pos.shape[1]):
            dx, dy = moves[int(action[e, i])]
            x, y = pos[e, i, 0] + dx, pos[e, i, 1] + dy
            if not (0 <= x < size and 0 <= y < size):  # off the grid: stays
                x, y = pos[e, i]
            cells.append((int(x), int(y)))
        new[e] = cells
        cover = sum(min(abs(x - gx) + abs(y - gy) for x, y in cells) for gx, gy in goal[e])
        pairs = sum(cells[i] == cells[j] for i in range(len(cells)) for j in range(i + 1, len(cells)))
        rew[e] = -cover / (len(cells) * 2 * (size - 1)) - collision * pairs
    return new, rew


@pytest.mark.parametrize("N,size", [(1, 2), (2, 5), (3, 4), (4, 7)])
def test_reference_and_njit_match_the_definition(N, size):
    pos, goal, act = _random_case(300, N, size, N * 10 + size)
    want = _brute(pos, goal, act, size, 0.5)
    for fn in (GS.step_ref, GS.step_njit):
        new, r = fn(pos, goal, act, size, 0.5)
        assert np.array_equal(new, want[0]) and np.allclose(r, want[1], rtol=0, atol=1e-15)


def test_cuda_simulator_agrees():
    pos, goal, act = _random_case(6, 3, 5, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        new, r = GS.step_cuda(pos, goal, act, 5, 0.25)
    want = GS.step_ref(pos, goal, act, 5, 0.25)
    assert np.array_equal(new, want[0]) and np.array_equal(r, want[1])


def test_known_values():
    "Covered landmarks without collisions give 0; walls stop moves; three agents on one cell are three pairs."
    pos = np.array([[[0, 0], [4, 4]]])
    goal = np.array([[[0, 0], [4, 4]]])
    for fn in (GS.step_ref, GS.step_njit):
        new, r = fn(pos, goal, np.array([[3, 4]]), 5, 0.5)  # left from x = 0 and right from x = 4: both stay
        assert np.array_equal(new, pos) and r[0] == 0.0
        new, r = fn(pos, goal, np.array([[1, 0]]), 5, 0.5)  # agent 0 steps up: landmark (0, 0) is 1 away
        assert np.array_equal(new[0, 0], [0, 1]) and r[0] == -1 / (2 * 2 * 4)
        three = np.array([[[2, 2], [2, 1], [1, 2]]])
        new, r = fn(three, np.zeros((1, 3, 2), np.int64), np.array([[0, 1, 4]]), 5, 0.5)
        assert (new[0] == [2, 2]).all() and r[0] == -(3 * 4) / (3 * 2 * 4) - 0.5 * 3


def test_layouts_and_read_only_inputs_give_the_same_answer():
    pos, goal, act = _random_case(40, 2, 5, 3)
    want = GS.step_ref(pos, goal, act)
    ro = pos.copy()
    ro.flags.writeable = False
    for args in ((non_contiguous(pos), goal, act), (ro, goal, act), (pos.astype(np.int32), goal, act.tolist())):
        got = GS.step_njit(*args)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_bad_input_is_refused_naming_the_argument():
    pos, goal, act = _random_case(4, 2, 5, 4)
    good = dict(pos=pos, goal=goal, action=act, size=5, collision=0.5)
    for fn in (GS.step_ref, GS.step_njit, GS.step_cuda):
        assert refuses_each(fn, good, {
            "pos": [pos[:, :, :1], pos + 5, pos - 6, pos[:0], pos.astype(float) + 0.5, "x", None],
            "goal": [goal[:2], goal + 5, goal[:, :1]],
            "action": [act + 5, act - 1, act[:, :1], act.astype(float) + 0.5],
            "size": [1, 0, 2.5, *BAD_NUMBERS],
            "collision": [-1.0, float("nan"), float("inf"), "a", None],
        }) > 20


def test_mismatched_shapes_are_refused_not_read_past():
    "A goal or action array shorter than pos would be read past its end by the compiled loops: refused first."
    pos = np.zeros((4, 2, 2), np.int64)
    for fn in (GS.step_njit, GS.step_ref, GS.step_cuda):
        assert_refused(fn, pos, np.zeros((1, 2, 2), np.int64), np.zeros((4, 2), np.int64), name="goal")
        assert_refused(fn, pos, pos, np.zeros((2, 2), np.int64), name="action")


def test_benchmark_small_agrees_and_reports_ratios():
    res = GS.benchmark("small", repeat=1)
    assert res["kernel"] == "gridstep" and all(v == 0.0 for v in res["values"].values())
    assert any("PettingZoo" in k for k in res["ratios"]) and all(v > 0 for v in res["seconds"].values())
