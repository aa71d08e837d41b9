"""kernels/makespan.py: the longest path of one DAG template under many plans. NumPy reference vs @njit vs CUDA
(simulator) vs the Python object graph vs networkx, on random DAGs and on pipeline schedules; hand-checked cases."""
import warnings

import numpy as np
import pytest

from icml25nb.kernels import makespan as MK


def _random_dag(n, plans, kinds=4, extras=3, seed=0, off=0.2):
    "A random DAG in topological order with random durations and edge extras; `off` of the extras are -inf."
    rng = np.random.default_rng(seed)
    ptr, pred, slot = [0], [], []
    for v in range(n):
        k = rng.integers(0, min(v, 4) + 1)
        us = rng.choice(v, size=k, replace=False) if k else []
        for u in us:
            pred.append(int(u))
            slot.append(int(rng.integers(-1, extras)))
        ptr.append(len(pred))
    kind = rng.integers(0, kinds, n)
    dur = rng.uniform(0, 2, (plans, kinds))
    extra = rng.uniform(0, 1, (plans, extras))
    extra[rng.random((plans, extras)) < off] = -np.inf
    return np.array(ptr), np.array(pred, np.int64), np.array(slot, np.int64), kind, dur, extra


def _by_hand(ptr, pred, slot, kind, dur, extra):
    "The definition, one plan and one vertex at a time in plain Python."
    out = []
    for p in range(dur.shape[0]):
        fin = []
        for v in range(len(ptr) - 1):
            start = 0.0
            for e in range(ptr[v], ptr[v + 1]):
                start = max(start, fin[pred[e]] + (extra[p, slot[e]] if slot[e] >= 0 else 0.0))
            fin.append(start + dur[p, kind[v]])
        out.append(max(fin))
    return np.array(out)


def test_three_vertex_example():
    # 0 -> 2 with extra column 0, 1 -> 2 without; durations 1, 3, 0.5 (kinds 0, 1, 2)
    args = ([0, 0, 0, 2], [0, 1], [0, -1], [0, 1, 2], [[1.0, 3.0, 0.5], [1.0, 3.0, 0.5]], [[5.0], [-np.inf]])
    for f in (MK.makespan_ref, MK.makespan_njit, MK.makespan_objgraph):
        np.testing.assert_allclose(f(*args), [6.5, 3.5])  # max(1 + 5, 3) + 0.5; the edge switched off: 3 + 0.5


@pytest.mark.parametrize("n,plans,seed", [(1, 3, 0), (12, 5, 1), (60, 40, 2), (200, 7, 3)])
def test_random_dags_all_implementations_agree(n, plans, seed):
    args = _random_dag(n, plans, seed=seed)
    want = _by_hand(*args)
    np.testing.assert_allclose(MK.makespan_ref(*args), want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(MK.makespan_njit(*args), want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(MK.makespan_objgraph(*args), want, rtol=0, atol=1e-12)
    if n <= 60:
        np.testing.assert_allclose(MK._networkx_makespan(*args), want, rtol=0, atol=1e-12)


def test_pipeline_templates_agree_with_the_definition():
    from icml25nb.efficient import pipeline as PL
    prof = PL.synthetic_profile("unet", 48, seed=0)
    rng = np.random.default_rng(0)
    for sched, S, D, B in [("1f1b", 4, 4, 8), ("gpipe", 3, 3, 5), ("interleaved", 4, 2, 4)]:
        tpl = PL.schedule_template(sched, S, D, B)
        sp = np.sort(np.stack([rng.choice(np.arange(1, prof.n), S - 1, replace=False) for _ in range(6)]), axis=1)
        dur, extra = PL.plan_weights(prof, sp, tpl)
        args = (tpl.ptr, tpl.pred, tpl.slot, tpl.kind, dur, extra)
        want = _by_hand(*args)
        for f in (MK.makespan_ref, MK.makespan_njit, MK.makespan_objgraph):
            np.testing.assert_allclose(f(*args), want, rtol=1e-13)


def test_closed_form_uniform_stages():
    from icml25nb.efficient import pipeline as PL
    for sched, p, m in [("gpipe", 4, 8), ("1f1b", 4, 8), ("1f1b", 2, 1)]:
        tpl = PL.schedule_template(sched, p, p, m)
        dur = np.array([[1.0] * p + [2.5] * p + [0.0]])
        extra = np.where(np.arange(tpl.n_extra) < tpl.n_pairs, 0.0, 0.0)[None, :]
        got = MK.makespan_njit(tpl.ptr, tpl.pred, tpl.slot, tpl.kind, dur, extra)
        np.testing.assert_allclose(got, [(m + p - 1) * 3.5], rtol=1e-14)


def test_cuda_simulator_equals_reference():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        args = _random_dag(9, 130, seed=5)  # two blocks of 128 threads, the second mostly idle; -inf edges included
        np.testing.assert_allclose(MK.makespan_cuda(*args), MK.makespan_ref(*args), rtol=0, atol=1e-12)
        args = _random_dag(1, 2, seed=6)  # a vertex without predecessors
        np.testing.assert_allclose(MK.makespan_cuda(*args), MK.makespan_ref(*args))


def test_bad_input():
    ptr, pred, slot, kind, dur, extra = _random_dag(6, 2, seed=7)
    with pytest.raises(ValueError, match="pred must list"):
        bad = pred.copy()
        bad[-1] = len(ptr)  # a predecessor after its vertex
        MK.makespan_njit(ptr, bad, slot, kind, dur, extra)
    with pytest.raises(ValueError, match="slot must be -1 or a column"):
        MK.makespan_ref(ptr, pred, np.full_like(slot, 9), kind, dur, extra)
    with pytest.raises(ValueError, match="kind must index"):
        MK.makespan_njit(ptr, pred, slot, kind + 10, dur, extra)
    with pytest.raises(ValueError, match="dur must be finite"):
        MK.makespan_njit(ptr, pred, slot, kind, -dur, extra)
    with pytest.raises(ValueError, match="extra must be 2-D"):
        MK.makespan_cuda(ptr, pred, slot, kind, dur, extra[:1])
    with pytest.raises(ValueError, match="ptr must be"):
        MK.makespan_njit(ptr[::-1], pred, slot, kind, dur, extra)
    with pytest.raises(ValueError, match="extra must be finite or -inf"):
        MK.makespan_njit(ptr, pred, slot, kind, dur, np.full_like(extra, np.nan))


@pytest.mark.parametrize("S,B,all_pairs", [(1, 3, True), (4, 8, True), (3, 5, False), (8, 32, True)])
def test_schedule_dag_is_the_chapters_1f1b_template(S, B, all_pairs):
    from icml25nb.efficient import pipeline as PL
    ptr, pred, slot, kind, n_extra = MK.schedule_dag(S, B, all_pairs)
    tpl = PL.schedule_template("1f1b", S, S, B, "all" if all_pairs else "adjacent")
    assert (len(ptr), len(pred), n_extra) == (len(tpl.ptr), len(tpl.pred), tpl.n_extra)
    dur, extra = MK.random_plan_weights(S, n_extra, 30, seed=S, all_pairs=all_pairs)
    extra[5:10] = np.random.default_rng(0).uniform(0, 1e-3, extra[5:10].shape)  # every transfer edge switched on
    np.testing.assert_allclose(MK.makespan_ref(ptr, pred, slot, kind, dur, extra),
                               MK.makespan_ref(tpl.ptr, tpl.pred, tpl.slot, tpl.kind, dur, extra), rtol=0, atol=1e-15)


def test_kernel_package_imports_no_chapter():
    import ast
    import inspect
    tree = ast.parse(inspect.getsource(MK))
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert names and not [m for m in names if m.startswith("icml25nb") and not m.startswith("icml25nb.kernels")
                          and m != "icml25nb.core"]


def test_benchmark_small_reports_rows_and_agreement():
    res = MK.benchmark("small", repeat=1)
    assert set(res) >= {"kernel", "task", "seconds", "reference", "values", "ratios"}
    assert res["reference"] in res["seconds"]
    assert all(v < 1e-9 for k, v in res["values"].items() if k.startswith("max"))
    assert "njit vs Python object graph, per plan (20 plans, scaled)" in res["ratios"]
    assert res["values"]["vertices, edges of the DAG"] == "513, 2560"
