"""icml25nb.efficient.pipeline, the planners: the DP and the parameter-balanced split against brute force, the beam
search against the exhaustive optimum and under memory limits (the authors' drop rule and the repair rule), the
authors' moves, their whole planner (stage counts and schedule family)."""
import itertools

import numpy as np
import pytest

from icml25nb.efficient import pipeline as PL


def test_plan_dp_is_the_exact_bottleneck_optimum_and_respects_memory():
    prof = PL.synthetic_profile("chain", 16, seed=4)
    D, B = 3, 4
    tt, mt = PL._stage_table(prof, B, D, "1f1b", PL.DEFAULT_BANDWIDTH, PL.DEFAULT_LATENCY)
    splits = list(itertools.combinations(range(1, 16), 2))
    cost = lambda sp: max(tt[s, a, b] for s, (a, b) in enumerate(zip((0, *sp), (*sp, 16))))
    mem = lambda sp: max(mt[s, a, b] for s, (a, b) in enumerate(zip((0, *sp), (*sp, 16))))
    dp = PL.plan_dp(prof, D, B)
    assert cost(dp.splits) == pytest.approx(min(cost(sp) for sp in splits), rel=1e-15)
    lim = np.median([mem(sp) for sp in splits])
    dpm = PL.plan_dp(prof, D, B, capacity=lim / PL.RESERVE)
    assert dpm.valid and mem(dpm.splits) < lim
    assert cost(dpm.splits) == pytest.approx(min(cost(sp) for sp in splits if mem(sp) < lim), rel=1e-15)
    # the DP's memory table is the simulator's memory model
    tpl = PL.schedule_template("1f1b", D, D, B)
    assert PL.plan_memory(prof, [dpm.splits], tpl)[0].max() == pytest.approx(mem(dpm.splits), rel=1e-12)
    assert not PL.plan_dp(prof, D, B, capacity=1.0).valid


def test_search_reaches_the_exhaustive_optimum_and_keeps_limits():
    prof = PL.synthetic_profile("unet", 48, seed=5)
    D, B = 4, 8
    ex, s = PL.plan_exhaustive(prof, D, B), PL.plan_search(prof, D, B)
    assert ex.evaluated == 16215 and ex.time <= s.time <= 1.02 * ex.time
    cap = 1.1 * PL.min_peak_memory(prof, D, B) / PL.RESERVE
    sc = PL.plan_search(prof, D, B, capacity=cap)
    assert sc.valid and max(sc.peak_mem) < PL.RESERVE * cap and sc.time >= s.time
    assert sc.time >= PL.plan_exhaustive(prof, D, B, capacity=cap).time - 1e-12
    # Algorithm 1's outer loop returns the best of its schedules
    multi = PL.plan_search(prof, D, B, schedules=("gpipe", "1f1b", "interleaved"))
    assert multi.time <= s.time and multi.schedule in PL.SCHEDULES


def test_authors_rule_stays_on_an_invalid_start():
    prof = PL.synthetic_profile("transformer", 48, seed=1)
    cap = 1.1 * PL.min_peak_memory(prof, 4, 8) / PL.RESERVE
    drop = PL.plan_search(prof, 4, 8, capacity=cap, invalid="drop")
    repair = PL.plan_search(prof, 4, 8, capacity=cap)
    assert not drop.valid and repair.valid and drop.time < repair.time


def test_plan_balanced_is_the_min_max_parameter_split():
    prof = PL.synthetic_profile("chain", 14, seed=3)
    cp = np.concatenate([[0.0], np.cumsum(prof.param_bytes)])
    worst = lambda sp: max(cp[b] - cp[a] for a, b in zip((0, *sp), (*sp, 14)))
    best = min(itertools.combinations(range(1, 14), 2), key=worst)
    got = PL.plan_balanced(prof, 3)
    assert worst(got) == pytest.approx(worst(best), rel=1e-12) and len(got) == 2


def test_plan_time_balanced_is_the_min_max_compute_split():
    prof = PL.synthetic_profile("transformer", 14, seed=2)
    w = prof.t_fwd + prof.t_bwd
    cost = lambda sp: max(w[a:b].sum() for a, b in zip((0, *sp), (*sp, prof.n)))
    best = min(cost(sp) for sp in itertools.combinations(range(1, prof.n), 3))
    tb = PL.plan_time_balanced(prof, 4)
    assert len(tb) == 3 and list(tb) == sorted(set(tb)) and cost(tb) == pytest.approx(best, rel=1e-12)
    assert PL.plan_time_balanced(prof, 1) == ()
    with pytest.raises(ValueError, match="n_stages"):
        PL.plan_time_balanced(prof, prof.n + 1)


def test_plan_pfeife_starts_with_1f1b_and_keeps_limits():
    prof = PL.synthetic_profile("unet", 48, seed=5)
    D, B = 4, 8
    pf, s = PL.plan_pfeife(prof, D, B), PL.plan_search(prof, D, B)
    # its first run is the 1F1B member from the same start, so it is never slower than the 1F1B-only search
    assert pf.time <= s.time and pf.valid and pf.evaluated > s.evaluated
    cap = 1.1 * PL.min_peak_memory(prof, D, B) / PL.RESERVE
    fit = PL.plan_pfeife(prof, D, B, capacity=cap)
    if fit.valid:
        assert max(fit.peak_mem) < PL.RESERVE * cap
    none = PL.plan_pfeife(prof, D, B, capacity=1.0)
    assert not none.valid and np.isfinite(none.time)
    with pytest.raises(ValueError, match="too few nodes"):
        PL.plan_pfeife(prof, prof.n - 3, 8)


def test_neighbours_follow_the_authors_moves():
    nb = PL._neighbours((10, 20, 30), 48, window=10, min_gap=1)
    assert (11, 20, 30) in nb and (10, 20, 31) in nb and (21, 20, 30) not in nb
    assert all(len(c) == 3 and all(b > a for a, b in zip((0,) + c, c + (48,))) for c in nb)
    assert max(c[0] for c in nb if c[1:] == (20, 30)) == 19  # keeps min_gap to the next point
    assert any(c[0] != 10 and c[1] != 20 and c[2] != 30 for c in nb)  # proportional moves shift every point
