"""The authors' setting of the mincut chapter: samplers, the repetitions metric and the experiment's determinism."""
import math

import numpy as np
import pytest

from icml25nb.algorithms import mincut as M

TINY = dict(n=40, k=8, t=2, etas=(0.0, 0.5, 1.0), rhos=(0.0, 3.0), reps=5, boosts=M.BOOSTS)


def direct_loop(el, pred, boost, target, reps, cap, seed):
    "The authors' loop: one trial after another from the same stream of trial ids."
    out, i = [], 0
    for _ in range(reps):
        cnt, ok = 1, M.karger_values(el, pred, boost, 2, seed, [i])[0] <= target
        i += 1
        while not ok and cnt < cap:
            ok = M.karger_values(el, pred, boost, 2, seed, [i])[0] <= target
            i, cnt = i + 1, cnt + 1
        out.append(cnt)
    return np.array(out)


@pytest.mark.parametrize("boost,cap", [(1.0, 7), (1.0, 10**6), (40.0, 3), (math.inf, 10**6)])
def test_repetitions_equal_the_direct_loop(boost, cap):
    G = M.matching_graph(40, 8, 2, seed=3)
    el = M.as_edge_list(G)
    side = np.arange(40) == 0
    pred = None if boost == 1.0 else M.noisy_predictions(G, side, 0.5, 2.0, seed=1, sampler="authors")[el.keep]
    got = M.repetitions_until_success(el, pred, boost, 6.0, 30, cap, seed=11)
    assert np.array_equal(got, direct_loop(el, pred, boost, 6.0, 30, cap, 11))


def test_samplers_overshoot_and_undershoot():
    G = M.matching_graph(120, 20, 2, seed=5)
    side = np.arange(120) == 0
    for eta in (0.0, 0.2, 0.45, 1.0):
        for seed in range(4):
            ea, ra = M.prediction_errors(G, M.noisy_predictions(G, side, eta, 3.3, seed, "authors"), side)
            es, rs = M.prediction_errors(G, M.noisy_predictions(G, side, eta, 3.3, seed, "skip"), side)
            assert ea >= eta - 1e-12 and ra >= 3.3 - 1e-12
            assert es <= eta + 1e-12 and rs <= 3.3 + 1e-12
            if eta in (0.0, 1.0):
                assert ea == es == eta


def test_authors_setting_is_deterministic_and_checks_hold():
    a, b = M.authors_setting(TINY, seed=4), M.authors_setting(TINY, seed=4)
    assert np.array_equal(a["repetitions"], b["repetitions"]) and np.array_equal(a["karger"], b["karger"])
    assert a["min_cut_is_node0"] == 1.0 and a["sampler_bounds"] == 1.0 and a["uncensored"] == 1.0
    assert a["repetitions"].shape == (2, 3, 3, 5)
    c = M.authors_setting(TINY, seed=5)
    assert not np.array_equal(a["repetitions"], c["repetitions"])


def test_bad_input():
    G = M.matching_graph(40, 8, 2)
    side = np.arange(40) == 0
    with pytest.raises(ValueError, match="sampler must be one of"):
        M.noisy_predictions(G, side, 0.5, 1.0, sampler="greedy")
    with pytest.raises(ValueError, match="n must be even"):
        M.matching_graph(41, 8, 2)
    with pytest.raises(ValueError, match="reps must be"):
        M.repetitions_until_success(M.as_edge_list(G), None, 1.0, 6.0, 0, 10, 0)
    with pytest.raises(ValueError, match="weight must be finite"):
        M.uninformative_predictions(G, float("nan"))
