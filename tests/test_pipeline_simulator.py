"""icml25nb.efficient.pipeline, the cost model and simulator: schedule orders against torch.distributed.pipelining's
and the authors' family's rules, the schedule DAG against an independent event replay and closed forms, the memory
model by hand, routing of skip tensors."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from icml25nb.efficient import pipeline as PL


def _actions(order_by_rank):
    "torch's pipeline_order as (stage, micro-batch, is_forward), compute actions only."
    from torch.distributed.pipelining.schedules import _ComputationType as C
    out = []
    for rank in sorted(order_by_rank):
        acts = [a for a in order_by_rank[rank] if a is not None and a.computation_type in (C.FORWARD, C.FULL_BACKWARD)]
        out.append([(a.stage_index, a.microbatch_index, a.computation_type == C.FORWARD) for a in acts])
    return out


def _executed(cls, p, m):
    """The order in which torch's single-stage schedule `cls` runs each rank's forwards and backwards: its
    `_step_microbatches` driven with a recording stand-in for the stage (no communication). (Its `_get_pipeline_order`,
    used for visualisation, numbers the last rank's 1F1B micro-batches from 1: not what runs.)"""
    out = []
    for r in range(p):
        log = []
        stage = SimpleNamespace(
            stage_index=r, is_first=r == 0, is_last=r == p - 1,
            get_fwd_recv_ops=lambda i: [], get_fwd_send_ops=lambda i: [], get_bwd_recv_ops=lambda i: [],
            get_bwd_send_ops=lambda i: [], perform_reduce_grad=lambda *a, **k: None,
            forward_one_chunk=lambda i, *a, **k: log.append((r, i, True)),
            backward_one_chunk=lambda i, **k: log.append((r, i, False)))
        sched = SimpleNamespace(_n_microbatches=m, _num_stages=p, _stage=stage, scale_grads=True,
                                _check_inputs=lambda a, k, t, l: (a, k), _initialize_stage=lambda *a: None,
                                _maybe_compute_loss=lambda *a: None, _maybe_get_loss=lambda *a: None,
                                _update_losses=lambda *a: None)
        cls._step_microbatches(sched, [()] * m, [{}] * m)
        out.append(log)
    return out


@pytest.mark.parametrize("p,m", [(2, 2), (2, 5), (4, 4), (4, 9), (3, 7)])
def test_gpipe_and_1f1b_orders_are_torchs(p, m):
    from torch.distributed.pipelining.schedules import Schedule1F1B, ScheduleGPipe
    assert PL.schedule_order("gpipe", p, p, m) == _executed(ScheduleGPipe, p, m)
    assert PL.schedule_order("1f1b", p, p, m) == _executed(Schedule1F1B, p, m)


@pytest.mark.parametrize("S,D,m", [(4, 2, 4), (4, 2, 8), (6, 2, 6), (8, 4, 8), (8, 2, 4), (8, 4, 3), (12, 4, 12)])
def test_interleaved_order_is_torchs(S, D, m):
    from torch.distributed.pipelining.schedules import ScheduleInterleaved1F1B
    rounds = max(1, m // D)
    stub = SimpleNamespace(n_local_stages=S // D, pp_group_size=D, _n_microbatches=m, number_of_rounds=rounds,
                           microbatches_per_round=m // rounds)
    want = _actions({r: ScheduleInterleaved1F1B._calculate_single_rank_operations(stub, r) for r in range(D)})
    assert PL.schedule_order("interleaved", S, D, m) == want


def _replay(profile, splits, D, B, schedule, bw, lat, routing="direct"):
    """An independent discrete-event replay: devices run their orders; an operation starts when its device is free
    and its inputs (activations forward, gradients backward) have arrived."""
    bounds = [0, *splits, profile.n]
    S = len(bounds) - 1
    F = [profile.t_fwd[a:b].sum() for a, b in zip(bounds, bounds[1:])]
    G = [profile.t_bwd[a:b].sum() for a, b in zip(bounds, bounds[1:])]
    opt = [profile.t_opt[a:b].sum() for a, b in zip(bounds, bounds[1:])]
    stage = lambda i: int(np.searchsorted(splits, i, side="right"))
    nbytes = np.zeros((S, S))
    for (i, j), w in zip(profile.edges, profile.edge_bytes):
        a, b = stage(i), stage(j)
        if a != b:
            if routing == "direct":
                nbytes[a, b] += w
            else:
                for k in range(a, b):
                    nbytes[k, k + 1] += w
    tau = lambda a, b: 0.0 if (a % D == b % D or nbytes[a, b] == 0) else lat + nbytes[a, b] / bw
    order = PL.schedule_order(schedule, S, D, B) if isinstance(schedule, str) else schedule
    done, pos, free = {}, [0] * D, [0.0] * D
    while any(pos[d] < len(order[d]) for d in range(D)):
        progressed = False
        for d in range(D):
            while pos[d] < len(order[d]):
                s, m, f = order[d][pos[d]]
                if f:
                    deps = [("F", a, m, F[a] + tau(a, s)) for a in range(s) if nbytes[a, s] > 0 or a == s - 1]
                else:
                    deps = [("F", s, m, F[s])] + [("B", b, m, G[b] + tau(s, b)) for b in range(s + 1, S)
                                                  if nbytes[s, b] > 0 or b == s + 1]
                if not all((k, a, mm) in done for k, a, mm, _ in deps):
                    break
                ready = max([free[d]] + [done[(k, a, mm)] - (F[a] if k == "F" else G[a]) + w for k, a, mm, w in deps])
                free[d] = ready + (F[s] if f else G[s])
                done[("F" if f else "B", s, m)] = free[d]
                pos[d] += 1
                progressed = True
        assert progressed, "replay deadlocked"
    return max(free[d] + sum(opt[s] for s in range(S) if s % D == d) for d in range(D))


@pytest.mark.parametrize("kind,sched,S,D,B", [("transformer", "1f1b", 4, 4, 8), ("unet", "1f1b", 4, 4, 8),
                                              ("unet", "gpipe", 3, 3, 5), ("unet", "interleaved", 8, 4, 8),
                                              ("chain", "interleaved", 6, 2, 4),
                                              ("unet", "pfeife-lb4-pf2", 8, 4, 8), ("transformer", "pfeife-lb8-pf1", 4, 4, 8),
                                              ("unet", "pfeife-lb8-pf3", 12, 4, 8), ("chain", "pfeife-lb2-pf0", 6, 2, 4)])
def test_simulator_equals_an_event_replay(kind, sched, S, D, B):
    prof = PL.synthetic_profile(kind, 48, seed=2)
    rng = np.random.default_rng(0)
    for routing in ("direct", "chain"):
        for _ in range(5):
            sp = sorted(rng.choice(np.arange(1, prof.n), S - 1, replace=False).tolist())
            got = PL.simulate(prof, sp, D, B, sched, 5e9, 1e-4, routing)[0]
            assert got == pytest.approx(_replay(prof, sp, D, B, sched, 5e9, 1e-4, routing), rel=1e-12)


@pytest.mark.parametrize("p,m,tf,tb", [(2, 1, 1.0, 1.0), (4, 8, 1.0, 2.0), (3, 5, 0.7, 0.4), (6, 3, 1.0, 3.0)])
def test_closed_form(p, m, tf, tb):
    prof = PL.Profile(np.full(p, tf), np.full(p, tb), np.zeros(p), np.zeros(p), [(i, i + 1) for i in range(p - 1)],
                      np.full(p - 1, 1e6))
    for sched in ("gpipe", "1f1b"):
        t, _ = PL.simulate(prof, list(range(1, p)), p, m, sched, comm=False)
        assert t == pytest.approx((m + p - 1) * (tf + tb), rel=1e-14)
        assert PL.simulate(prof, list(range(1, p)), p, m, sched, bandwidth=1e9)[0] > t  # transfers cost time


def test_memory_by_hand():
    # 4 nodes, 2 stages on 2 devices, B = 3: params 10, 20, 30, 40; activations 1, 2, 3, 4; edges of 5 bytes; input 7
    prof = PL.Profile(np.ones(4), np.ones(4), [10, 20, 30, 40], [1, 2, 3, 4], [(0, 1), (1, 2), (2, 3), (0, 3)],
                      [5, 5, 5, 6], input_bytes=7)
    tpl = PL.schedule_template("gpipe", 2, 2, 3)
    got = PL.plan_memory(prof, [[2]], tpl)[0]
    # device 0: 4 x 30 params, sends 5 + 6 bytes (x 2 x 3), input 7 x 3, 3 micro-batches of 1 + 2 alive at once
    # device 1: 4 x 70 params, receives 11 bytes (x 3 x 3), 3 x (3 + 4) alive
    np.testing.assert_allclose(got, [120 + 2 * 3 * 11 + 21 + 9, 280 + 3 * 3 * 11 + 21])
    one = PL.plan_memory(prof, [[2]], PL.schedule_template("1f1b", 2, 2, 3))[0]
    np.testing.assert_allclose(got - one, [(3 - 2) * 3, (3 - 1) * 7])  # 1F1B keeps p - s micro-batches


def test_routing_chain_passes_skips_through():
    prof = PL.synthetic_profile("unet", 48, seed=0)
    sp = np.array([[10, 20, 30]])
    d, c = PL._stage_bytes(prof, sp, 4, "direct")[0], PL._stage_bytes(prof, sp, 4, "chain")[0]
    assert d[0, 3] > 0 and c[0, 3] == 0
    for k in range(3):  # every tensor crossing boundary k is counted there
        assert c[k, k + 1] == pytest.approx(d[:k + 1, k + 1:].sum())


def test_pfeife_family_contains_1f1b_and_our_interleaved_order():
    for D, B in [(4, 8), (3, 5), (2, 4)]:
        assert PL.schedule_order(PL.pfeife_schedule(B, 0), D, D, B) == PL.schedule_order("1f1b", D, D, B)
    for S, D, B in [(8, 4, 8), (4, 2, 4), (12, 4, 12), (8, 2, 4)]:
        assert PL.schedule_order(PL.pfeife_schedule(D, D - 1), S, D, B) == PL.schedule_order("interleaved", S, D, B)
        assert PL.pfeife_schedule(D, D - 1) in PL.pfeife_schedules(S, D, B)
    assert PL.schedule_order(PL.pfeife_schedule(4, 1), 4, 4, 4) != PL.schedule_order("1f1b", 4, 4, 4)


def test_pfeife_warm_up_by_hand():
    # 8 stages on 4 devices, loop_batch 4, prefetch 0: device 3 runs stages 3 and 7; 7 is the last stage (distance
    # 1), so its warm-up is 7 // 4 * 4 + 1 = 5 forwards: micro-batches 0-3 of stage 3, then 0 of stage 7
    o = PL.schedule_order(PL.pfeife_schedule(4, 0), 8, 4, 8)
    assert o[3][:7] == [(3, 0, True), (3, 1, True), (3, 2, True), (3, 3, True), (7, 0, True), (7, 0, False),
                        (7, 1, True)]
    # device 0 (stages 0 and 4, distance 4): 4 + 4 = 8 forwards; prefetch 2 adds min(3, 2) = 2 more
    assert [f for _, _, f in o[0][:9]] == [True] * 8 + [False]
    o2 = PL.schedule_order(PL.pfeife_schedule(4, 2), 8, 4, 8)
    assert [f for _, _, f in o2[0][:11]] == [True] * 10 + [False]


def test_pfeife_family_is_the_authors_set_and_runs():
    assert PL.pfeife_schedules(4, 4, 8) == [f"pfeife-lb8-pf{p}" for p in range(4)]
    # looped: loop_batch 4..8, above 4 only divisors of 8 -> {4, 8}, times prefetch 0..3
    assert PL.pfeife_schedules(8, 4, 8) == [f"pfeife-lb{lb}-pf{p}" for lb in (4, 8) for p in range(4)]
    assert len(PL.pfeife_schedules(12, 4, 12)) == 4 * 3  # 4, 6, 12
    prof = PL.synthetic_profile("unet", 48, seed=2)
    for S in (4, 8, 12):
        for name in PL.pfeife_schedules(S, 4, 8):  # every member is a deadlock-free schedule of every op
            t, mem = PL.simulate(prof, PL.plan_even(prof, S), 4, 8, name)
            assert np.isfinite(t) and t > 0 and mem.shape == (4,)


def test_bubble_model_by_hand():
    # uniform stages, no transfers: (M + D - 1)(t_f + t_b) for 1F1B, (M v + D - 1) t for v stages per device
    prof = PL.Profile(np.full(8, 1.0), np.full(8, 2.0), np.zeros(8), np.zeros(8), [(i, i + 1) for i in range(7)],
                      np.zeros(7))
    assert PL.bubble_model_time(prof, PL.Plan((4,), "1f1b", 2, 2, 8), 1e9, 0.0) == pytest.approx(9 * 12)
    assert PL.bubble_model_time(prof, PL.Plan((2, 4, 6), "interleaved", 4, 2, 8), 1e9, 0.0) == pytest.approx(
        (8 * 2 + 1) * 6)
    # a boundary's bytes cost 2 x (latency + bytes / bandwidth) on the stage that sends them
    prof.edge_bytes[3] = 1e6
    t = PL.bubble_model_time(prof, PL.Plan((4,), "1f1b", 2, 2, 8), 1e9, 1e-3)
    assert t == pytest.approx(9 * (12 + 2 * (1e-3 + 1e-3)))
