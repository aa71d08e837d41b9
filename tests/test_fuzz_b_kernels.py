"""Property-based reliability suite (issue 49) for the kernels patch_score, pointmass, rng, sketchann, softvi, springs,
tanimoto, vmf, wl and pareto, and for `graphdata.wl_colors`.

Every public entry point: random valid inputs (shapes, float32 / int / non-contiguous / list) give the NumPy
reference's answer (or the float64 call's answer for an equivalent input); hostile inputs (NaN / inf, mismatched
shapes, out-of-range ids, empty, huge sizes, wrong types) give a one-line ValueError/TypeError naming the argument,
never a crash, a hang or a NaN. The CUDA wrappers run under the simulator at tiny sizes. `make test` runs this file
a second time under NUMBA_BOUNDSCHECK=1, where a read past an array raises instead of returning garbage.
"""
import math
import warnings

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from fuzzutil import BAD_NUMBERS, HUGE_SIZES, assert_refused, non_contiguous, outcome, refuses_each, same
from icml25nb import graphdata as gd
from icml25nb.kernels import pareto as PA
from icml25nb.kernels import patch_score as PS
from icml25nb.kernels import pointmass as PM
from icml25nb.kernels import rng as RG
from icml25nb.kernels import sketchann as SA
from icml25nb.kernels import softvi as SV
from icml25nb.kernels import springs as SP
from icml25nb.kernels import tanimoto as TA
from icml25nb.kernels import vmf as VM
from icml25nb.kernels import wl as WL

FEW = settings(max_examples=10)  # the slower properties (CUDA simulator, Python reference loops)


def _floats(lo, hi):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)


def _arr(shape, lo=-3.0, hi=3.0):
    return hnp.arrays(np.float64, shape, elements=_floats(lo, hi))


def _int_valued(shape, lo=-3, hi=3):
    "Small integers as floats: every order of summation is exact, so argmins and ties agree bit for bit."
    return hnp.arrays(np.int64, shape, elements=st.integers(lo, hi)).map(lambda a: a.astype(np.float64))


def _with_nan(a, where=0, value=np.nan):
    b = np.array(a, dtype=np.float64, copy=True)
    b.flat[where] = value
    return b


def _sim(fn, *args, **kwargs):
    "A CUDA wrapper under the simulator (its xoroshiro/overflow warnings filtered, as in the kernels' own tests)."
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kwargs)


# ------------------------------------------------------------------------------------------------------ pointmass
@st.composite
def _pointmass(draw):
    n, D = draw(st.integers(1, 6)), draw(st.integers(1, 3))
    arrs = [draw(_arr((n, D), -2, 2)) for _ in range(4)]
    params = (draw(_floats(1e-3, 0.5)), draw(_floats(0, 5)), draw(_floats(0, 3)), draw(_floats(0, 1)))
    return arrs, params


@given(_pointmass())
def test_pointmass_njit_equals_reference_on_any_layout(case):
    (pos, vel, goal, act), params = case
    want = PM.step_ref(pos, vel, goal, act, *params)
    assert same(PM.step_njit(pos, vel, goal, act, *params), want, rtol=1e-14, atol=1e-14)
    nc = [non_contiguous(a) for a in (pos, vel, goal, act)]
    assert same(PM.step_njit(*nc, *params), want, rtol=1e-14, atol=1e-14)
    lists = [a.tolist() for a in (pos, vel, goal, act)]
    assert same(PM.step_njit(*lists, *params), want, rtol=1e-14, atol=1e-14)
    f32 = [a.astype(np.float32) for a in (pos, vel, goal, act)]
    assert same(PM.step_njit(*f32, *params), PM.step_ref(*[a.astype(np.float64) for a in f32], *params),
                rtol=1e-14, atol=1e-14)


def test_pointmass_cuda_equals_reference():
    rng = np.random.default_rng(0)
    pos, vel, goal, act = (rng.uniform(-2, 2, (5, 2)) for _ in range(4))
    assert same(_sim(PM.step_cuda, pos, vel, goal, act, 0.2, 3.0, 0.5, 0.1),
                PM.step_ref(pos, vel, goal, act, 0.2, 3.0, 0.5, 0.1), rtol=1e-14, atol=1e-14)


def test_pointmass_mismatched_shapes_are_refused_not_read_past():
    """The issue's defect: step_njit with pos (4, 2) and goal (1, 2) or action (2, 2) read past the arrays (rewards
    differed from step_ref; SIGSEGV at n = 1e6) because it skipped `check_step_inputs`. Before the fix these calls
    returned an answer; now each is refused naming the argument (and under NUMBA_BOUNDSCHECK=1 a read past the
    arrays would raise IndexError, which `outcome` counts as a defect)."""
    pos = np.zeros((4, 2))
    for fn in (PM.step_njit, PM.step_ref, PM.step_cuda):
        assert_refused(fn, pos, pos, np.zeros((1, 2)), pos, name="goal")
        assert_refused(fn, pos, pos, pos, np.zeros((2, 2)), name="action")
        assert_refused(fn, pos, np.zeros((4, 3)), pos, pos, name="vel")
    big = np.zeros((10**6, 2))
    assert_refused(PM.step_njit, big, big, np.zeros((1, 2)), big, name="goal")


@pytest.mark.parametrize("fn", [PM.step_ref, PM.step_njit, PM.step_cuda])
def test_pointmass_hostile_inputs(fn):
    x = np.zeros((3, 2))
    good = dict(pos=x, vel=x, goal=x, action=x, dt=0.1, force=2.0, damping=1.0, ctrl_cost=0.0)
    bad_arrays = [_with_nan(x), _with_nan(x, 1, np.inf), np.zeros((0, 2)), np.zeros(3), np.zeros((3, 2, 1)),
                  "abc", None, [[1, 2], [3]], np.array([["a", "b"]] * 3), x.astype(complex)]
    n = refuses_each(fn, good, {k: bad_arrays for k in ("pos", "vel", "goal", "action")})
    n += refuses_each(fn, good, {"dt": [0.0, -0.1, *BAD_NUMBERS], "force": [-1.0, *BAD_NUMBERS],
                                 "damping": [-1.0, *BAD_NUMBERS], "ctrl_cost": [-1.0, *BAD_NUMBERS]})
    assert n == 4 * len(bad_arrays) + 4 * len(BAD_NUMBERS) + 5
    assert_refused(PM.check_step_inputs, x, x, x, np.zeros((3, 1)), name="action")
    assert_refused(PM.check_step_params, 0.1, "2", 1.0, 0.0, name="force")


# --------------------------------------------------------------------------------------------------------- softvi
@st.composite
def _mdp(draw, big_rewards=False):
    S, A = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    R = draw(_arr((S, A), -1e10, 1e10) if big_rewards else _arr((S, A), -5, 5))
    nxt = draw(hnp.arrays(np.int64, (S, A), elements=st.integers(-1, S - 1)))
    log_mu = draw(_arr((A,), -3, 3))
    alpha = draw(st.one_of(st.sampled_from([0.0, 1e-310, 5e-324, 1e-300, 1e-3, 0.5, 10.0]), _floats(0, 20)))
    return R, nxt, log_mu, alpha, draw(_floats(0, 1)), draw(st.integers(1, 5))


@given(_mdp())
def test_softvi_njit_equals_reference(case):
    R, nxt, log_mu, alpha, gamma, n_iter = case
    want = SV.soft_vi_ref(R, nxt, log_mu, alpha, gamma, n_iter)
    got = SV.soft_vi_njit(R, nxt, log_mu, alpha, gamma, n_iter)
    assert np.isfinite(want).all() and np.isfinite(got).all()
    assert same(got, want, rtol=1e-9, atol=1e-9 * (1 + alpha))
    assert same(SV.soft_vi_njit(non_contiguous(R), non_contiguous(nxt), log_mu.tolist(), alpha, gamma, n_iter), got)


@given(_mdp(big_rewards=True))
def test_softvi_tiny_temperature_with_big_rewards_stays_finite(case):
    """The issue's defect: alpha = 1e-310 (or 1e-300 with R = 1e10) gave NaN (njit) and inf (reference), because Q /
    alpha overflowed. Now the backup is max Q + alpha logsumexp((Q - max Q) / alpha + log mu): finite, and at tiny
    alpha equal to the hard backup (alpha = 0) up to alpha (log A + max|log mu|) per sweep."""
    R, nxt, log_mu, _, gamma, n_iter = case
    for alpha in (1e-310, 1e-300):
        want = SV.soft_vi_ref(R, nxt, log_mu, alpha, gamma, n_iter)
        got = SV.soft_vi_njit(R, nxt, log_mu, alpha, gamma, n_iter)
        hard = SV.soft_vi_njit(R, nxt, log_mu, 0.0, gamma, n_iter)
        assert np.isfinite(got).all() and same(got, want, rtol=1e-12, atol=0)
        assert same(got, hard, rtol=1e-12, atol=1e-290)


def test_softvi_issue_case_and_cuda():
    R, nxt, log_mu = np.array([[1.0, 1e10]]), np.array([[-1, -1]]), np.zeros(2)
    for fn in (SV.soft_vi_ref, SV.soft_vi_njit, SV.soft_vi_cuda):
        for alpha in (1e-310, 1e-300):
            v = _sim(fn, R, nxt, log_mu, alpha, 1.0, 3)
            assert np.isfinite(v).all() and v[0] == 1e10
    rng = np.random.default_rng(1)
    R, nxt = rng.normal(0, 1, (6, 3)), rng.integers(-1, 6, (6, 3))
    assert same(_sim(SV.soft_vi_cuda, R, nxt, np.log(np.full(3, 2 / 3)), 0.3, 0.9, 4),
                SV.soft_vi_ref(R, nxt, np.log(np.full(3, 2 / 3)), 0.3, 0.9, 4), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn", [SV.soft_vi_ref, SV.soft_vi_njit, SV.soft_vi_cuda, SV.check_softvi_inputs])
def test_softvi_hostile_inputs(fn):
    R, nxt, log_mu = np.zeros((3, 2)), np.array([[1, -1], [2, 0], [-1, -1]]), np.zeros(2)
    good = dict(R=R, nxt=nxt, log_mu=log_mu, alpha=0.5, gamma=0.9, n_iter=3)
    refuses_each(fn, good, {
        "R": [_with_nan(R), _with_nan(R, 2, -np.inf), np.zeros((0, 2)), np.zeros(3), "R", None, [[1, 2], [3]],
              np.full((3, 2), 1e300)],
        "nxt": [nxt + 5, nxt - 2, nxt.astype(float), nxt[:2], np.zeros((3, 3), int), "x", None],
        "log_mu": [_with_nan(log_mu), np.zeros(3), np.zeros((2, 1)), "m", None],
        "alpha": [-1.0, *BAD_NUMBERS, 1e300],
        "gamma": [-0.1, 1.5, *BAD_NUMBERS],
        "n_iter": [0, -1, 2.5, *BAD_NUMBERS, *HUGE_SIZES]})


# -------------------------------------------------------------------------------------------------------- springs
@st.composite
def _springs(draw):
    S, n, d = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 3))
    up = draw(hnp.arrays(np.bool_, (S, n, n)))
    A = np.triu(up.astype(np.float64), 1)
    A = A + A.transpose(0, 2, 1)
    return (draw(_arr((S, n, d), -2, 2)), draw(_arr((S, n, d), -2, 2)), A, draw(_floats(0, 3)),
            draw(_floats(1e-3, 0.1)), draw(st.integers(0, 20)))


@given(_springs())
def test_springs_njit_equals_reference(case):
    x0, v0, A, k, dt, steps = case
    want = SP.simulate_ref(x0, v0, A, k, dt, steps)
    assert same(SP.simulate_njit(x0, v0, A, k, dt, steps), want, rtol=1e-9, atol=1e-11)
    assert same(SP.simulate_njit(non_contiguous(x0), v0.tolist(), A.astype(np.int64), k, dt, steps), want,
                rtol=1e-9, atol=1e-11)
    assert same(SP.spring_forces(x0, A, k), SP._forces(x0, A, k))
    e = SP.springs_energy(x0, v0, A, k)
    assert e.shape == (x0.shape[0],) and np.all(e >= 0)


def test_springs_cuda_equals_reference():
    x0, v0, A = SP.random_springs(2, 3, seed=4)
    assert same(_sim(SP.simulate_cuda, x0, v0, A, 1.5, 0.05, 5), SP.simulate_ref(x0, v0, A, 1.5, 0.05, 5),
                rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn", [SP.simulate_ref, SP.simulate_njit, SP.simulate_cuda, SP.check_springs_inputs])
def test_springs_hostile_inputs(fn):
    """The issue's defect: check_springs_inputs took steps = inf / nan / '3', k = 'a' / None and 0 systems with an
    unclear message (or none); each is now one line naming the argument."""
    x0, v0, A = SP.random_springs(2, 3, seed=0)
    good = dict(x0=x0, v0=v0, A=A, k=1.0, dt=0.01, steps=5)
    asym = A.copy()
    asym[0, 0, 1] = 1 - asym[0, 1, 0]
    refuses_each(fn, good, {
        "x0": [_with_nan(x0), x0[:0], x0[0], "x", None],
        "v0": [_with_nan(v0, 3, np.inf), v0[:1], "v", None],
        "A": [asym, A[:, :2, :2], _with_nan(A), A + np.eye(3), "A", None],
        "k": [-1.0, *BAD_NUMBERS],
        "dt": [0.0, -0.01, *BAD_NUMBERS],
        "steps": [-1, 2.5, *BAD_NUMBERS, *HUGE_SIZES]})


def test_springs_divergent_run_is_refused_not_inf():
    "A stable-looking call whose integration blows up (k dt^2 far past the stability limit) gave inf/NaN; now refused."
    x0, v0, A = SP.random_springs(2, 3, seed=0)
    for fn in (SP.simulate_ref, SP.simulate_njit):
        assert_refused(fn, x0, v0, A, 1e8, 1.0, 2000, name="dt")
    assert_refused(SP.springs_energy, np.full((1, 2, 1), 1e200) * [[[1], [-1]]], np.zeros((1, 2, 1)),
                   np.array([[[0.0, 1.0], [1.0, 0.0]]]), 1.0, name="x")
    refuses_each(SP.random_springs, dict(n_sims=2, n_particles=3), {
        "n_sims": [0, *BAD_NUMBERS, *HUGE_SIZES], "n_particles": [0, 2.5, *HUGE_SIZES], "dim": [0, "2"],
        "p": [1.5, np.nan], "seed": [-1, 2**64]})


# ------------------------------------------------------------------------------------------------------------- wl
@st.composite
def _graph(draw):
    n = draw(st.integers(0, 9))
    edges = draw(st.lists(st.tuples(st.integers(0, max(n - 1, 0)), st.integers(0, max(n - 1, 0))), max_size=14)) \
        if n else []
    G = nx.Graph()
    G.add_nodes_from(range(n))
    G.add_edges_from(edges)
    init = draw(st.one_of(st.none(), hnp.arrays(np.int64, (n,), elements=st.integers(-5, 5))))
    return G, init


@given(_graph(), st.integers(0, 6), st.sampled_from([64, 3, 1]))
def test_wl_kernels_equal_the_reference(case, it, bits):
    G, init = case
    ip, ix = gd.graph_csr(G)
    want = WL.wl_colors_ref(ip, ix, init, it)
    assert np.array_equal(WL.wl_colors_njit(ip, ix, init, it, hash_bits=bits), want)
    assert np.array_equal(WL.wl_final_njit(ip, ix, init, it, hash_bits=bits), want[-1])
    assert np.array_equal(WL.wl_final_ref(ip, ix, init, it), want[-1])
    assert np.array_equal(WL.wl_colors_njit(non_contiguous(ip), ix.tolist(), None if init is None else
                                            init.astype(np.int32), it), want)
    stable, rounds = WL.wl_stable_ref(ip, ix, init)
    assert rounds <= len(init if init is not None else ip[1:]) and np.array_equal(WL.wl_stable_njit(ip, ix, init)[0],
                                                                                   stable)
    # any number of rounds past stability: the same colours, one row of memory, no (iterations + 1) x n history
    for huge in (10**9, 2**62):
        assert np.array_equal(WL.wl_final_njit(ip, ix, init, huge), stable)
        assert np.array_equal(WL.wl_final_ref(ip, ix, init, huge), stable)
    if init is None:
        assert np.array_equal(gd.wl_colors(G, it), want[-1])
        assert np.array_equal(gd.wl_colors(G, it, history=True), want)
        assert np.array_equal(gd.wl_colors(G, 10**9), stable)
    assert np.array_equal(WL.first_occurrence(want[-1]), want[-1])


@FEW
@given(_graph(), st.integers(0, 3))
def test_wl_cuda_equals_the_reference(case, it):
    G, init = case
    ip, ix = gd.graph_csr(G)
    assert np.array_equal(_sim(WL.wl_colors_cuda, ip, ix, init, it, 3), WL.wl_colors_ref(ip, ix, init, it))


def test_wl_colors_with_a_billion_rounds_keeps_one_row():
    """The issue's defect: graphdata.wl_colors / wl_colors_njit with iterations = 1e8 allocated (iterations + 1) x n
    even with history=False (1.8 GB for a 2-node path; 1e9 was killed). Now history=False keeps one row and stops at
    stability, and a history that cannot fit is refused up front naming `iterations`."""
    import resource
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for n in (2, 7):
        G = nx.path_graph(n)
        assert np.array_equal(gd.wl_colors(G, 10**9), gd.wl_colors(G, None))
        assert np.array_equal(gd.wl_colors(G, 10**9), gd.wl_colors(G, n, history=True)[-1])
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB: no 1.8 GB (or 16 GB) rows
    ip, ix = gd.graph_csr(nx.path_graph(2))
    for fn in (WL.wl_colors_njit, WL.wl_colors_ref, WL.wl_colors_cuda):
        assert_refused(fn, ip, ix, None, 10**12, name="iterations")
    assert_refused(gd.wl_colors, nx.path_graph(2), 10**12, history=True, name="iterations")


@pytest.mark.parametrize("fn", [WL.wl_colors_ref, WL.wl_colors_njit, WL.wl_colors_cuda, WL.wl_final_ref,
                                WL.wl_final_njit])
def test_wl_hostile_inputs(fn):
    ip, ix = gd.graph_csr(nx.path_graph(4))
    good = dict(indptr=ip, indices=ix, init=None, iterations=2)
    refuses_each(fn, good, {
        "indptr": [np.array([0, 2, 1]), ip[None], ip.astype(float), np.array([], np.int64), ip - 1,
                   np.array([0, 1, 2, 3, 2**40]), ip.astype(np.uint64) + np.uint64(2**63), "ip", None],
        "indices": [ix + 10, ix - 5, ix.astype(float), ix[None], ix[:-1], "ix", None],
        "init": [np.zeros(3, int), np.zeros(4), np.zeros((4, 1), int), "abcd"],
        "iterations": [-1, 2.5, *BAD_NUMBERS]})
    if fn in (WL.wl_colors_njit, WL.wl_final_njit, WL.wl_colors_cuda):
        refuses_each(fn, good, {"hash_bits": [0, 65, 2.0, None, True]})


def test_wl_stable_and_first_occurrence_hostile_inputs():
    ip, ix = gd.graph_csr(nx.path_graph(3))
    for fn in (WL.wl_stable_ref, WL.wl_stable_njit):
        refuses_each(fn, dict(indptr=ip, indices=ix), {"indices": [ix + 9, ix.astype(float)],
                                                        "indptr": [ip[::-1], None]})
    assert_refused(WL.first_occurrence, np.zeros((2, 2)), name="labels")
    refuses_each(gd.wl_colors, dict(G=nx.path_graph(3), iterations=2), {
        "iterations": [-1, 2.5, *[v for v in BAD_NUMBERS if v is not None]],  # None: until stable
        "history": ["yes", None, 2]})
    assert_refused(gd.wl_colors, nx.path_graph(3), 2, init=np.zeros(2, int), name="init")


# ------------------------------------------------------------------------------------------------------------ rng
_WORDS = st.integers(0, 2**64 - 1)


@given(_WORDS, _WORDS, st.integers(1, 2**63 - 1))
def test_rng_scalar_functions_equal_the_reference(key, counter, n):
    k, c = np.uint64(key), np.uint64(counter)
    assert RG.mix64(key) == RG.mix64_ref(k)
    assert RG.stream_key(key, counter) == RG.stream_key_ref(k, c)
    assert RG.u64(key, counter) == RG.u64_ref(k, c)
    assert RG.uniform(key, counter) == RG.uniform_ref(k, c)
    u = RG.uniform(np.uint64(key), np.int64(counter % 2**63))
    assert 0.0 <= u < 1.0
    r = RG.randbelow(key, counter, n)
    assert 0 <= r < n and r == min(int(RG.uniform_ref(k, c) * n), n - 1)


@given(st.integers(0, 2**64 - 1), st.integers(0, 6), st.integers(0, 6))
def test_rng_fill_equals_the_reference(seed, n_streams, n_draws):
    want = RG.uniform_fill_ref(seed, n_streams, n_draws)
    assert np.array_equal(RG.uniform_fill(seed, n_streams, n_draws), want)
    assert want.shape == (n_streams, n_draws)


def test_rng_cuda_fill_and_hostile_inputs():
    assert np.array_equal(_sim(RG.uniform_fill_cuda, 3, 3, 2), RG.uniform_fill_ref(3, 3, 2))
    refuses_each(RG.uniform_fill_cuda, dict(seed=1, n_streams=2, n_draws=2), {"threads_per_block": [0, 2048, 1.5]})
    for fn in (RG.uniform_fill_ref, RG.uniform_fill, RG.uniform_fill_cuda):
        refuses_each(fn, dict(seed=1, n_streams=2, n_draws=2), {
            "seed": [-1, 2**64, *BAD_NUMBERS], "n_streams": [-1, *BAD_NUMBERS, *HUGE_SIZES],
            "n_draws": [-1, 2.5, *HUGE_SIZES]})
    # the compiled scalar functions wrapped negative / fractional words, and randbelow(n <= 0) returned n - 1 < 0
    refuses_each(RG.mix64, dict(z=1), {"z": [-1, 2**64, 1.5, True, None, "1", np.float64(3)]})
    refuses_each(RG.stream_key, dict(seed=1, stream=2), {"seed": [-1, 2.0], "stream": [2**64, None]})
    refuses_each(RG.u64, dict(key=1, counter=2), {"key": [-3, "k"], "counter": [1.5, -1]})
    refuses_each(RG.uniform, dict(key=1, counter=2), {"key": [np.int64(-1)], "counter": [True, None]})
    refuses_each(RG.randbelow, dict(key=1, counter=2, n=5), {"n": [0, -5, 2.0, None, 2**63], "key": [-1]})
    for fn, args in ((RG.mix64_ref, ("z",)), (RG.stream_key_ref, ("seed", "stream")), (RG.u64_ref, ("key", "counter")),
                     (RG.uniform_ref, ("key", "counter"))):
        good = {a: np.arange(3) for a in args}
        refuses_each(fn, good, {a: [np.array([-1, 2]), np.array([0.5]), "x", None] for a in args})


# ------------------------------------------------------------------------------------------------------ sketchann
@st.composite
def _sketch(draw):
    k, m, d, n = (draw(st.integers(1, 3)) for _ in range(4))
    b, r = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    return (draw(_int_valued((k, m, d))), draw(_int_valued((k, n, m), -6, 6)), draw(_int_valued((b, d))),
            draw(hnp.arrays(np.int64, (b, r), elements=st.integers(0, k - 1))))


@given(_sketch())
def test_sketchann_njit_equals_reference(case):
    S, SPt, Q, copies = case
    want = SA.sketch_argmin_ref(S, SPt, Q, copies)
    assert same(SA.sketch_argmin(S, SPt, Q, copies), want)
    assert same(SA.sketch_argmin(S, SPt, Q, copies, check=False), want)
    Ql = Q.tolist() if len(Q) else Q  # an empty list has no (0, d) shape
    assert same(SA.sketch_argmin(non_contiguous(S), SPt.astype(np.float32), Ql, copies.astype(np.int32)), want)
    assert same(SA.sketch_argmin(S, SPt, non_contiguous(Q), copies, check=False), want)


def test_sketchann_cuda_equals_reference():
    rng = np.random.default_rng(3)
    S, SPt, Q = rng.integers(-3, 4, (3, 2, 4)) * 1.0, rng.integers(-6, 7, (3, 5, 2)) * 1.0, rng.integers(-3, 4, (2, 4)) * 1.0
    copies = rng.integers(0, 3, (2, 2))
    assert same(_sim(SA.sketch_argmin_cuda, S, SPt, Q, copies), SA.sketch_argmin_ref(S, SPt, Q, copies))


@pytest.mark.parametrize("fn", [SA.sketch_argmin_ref, SA.sketch_argmin, SA.sketch_argmin_cuda,
                                lambda S, SP, Q, copies: SA.sketch_argmin(S, SP, Q, copies, check=False)])
def test_sketchann_hostile_inputs(fn):
    rng = np.random.default_rng(0)
    S, SPt, Q, copies = rng.normal(size=(3, 2, 4)), rng.normal(size=(3, 5, 2)), rng.normal(size=(2, 4)), np.zeros((2, 1), int)
    bad = {"S": [S[0], S[:, :0], "S", None], "SP": [SPt[:2], SPt[:, :, :1], None], "Q": [Q[:, :3], Q[0], "Q"],
           "copies": [copies + 3, copies - 1, copies.astype(float), copies[:1], "c", None]}
    if fn is not SA.sketch_argmin_cuda and getattr(fn, "__name__", "") != "<lambda>":
        bad["Q"].append(_with_nan(Q))
        bad["S"].append(_with_nan(S, 1, np.inf))
    refuses_each(fn, dict(S=S, SP=SPt, Q=Q, copies=copies), bad)


# ---------------------------------------------------------------------------------------------------- patch_score
@st.composite
def _patches(draw):
    M, P, D = draw(st.integers(1, 4)), draw(st.integers(1, 6)), draw(st.integers(1, 3))
    V = draw(st.one_of(_arr((P,), -2, 2), _arr((P, draw(st.integers(1, 3))), -2, 2)))
    return draw(_arr((M, D))), draw(_arr((P, D))), V, draw(st.one_of(_floats(1e-2, 10), st.sampled_from([1e3, 1e6])))


@given(_patches(), st.integers(1, 7))
def test_patch_score_njit_equals_reference(case, chunk):
    Q, K, V, scale = case
    want = PS.patch_softmax_mean_ref(Q, K, V, scale, chunk)
    assert np.isfinite(want).all()
    assert same(PS.patch_softmax_mean(Q, K, V, scale, chunk), want, rtol=1e-9, atol=1e-12)
    assert same(PS.patch_softmax_mean(non_contiguous(Q), K.astype(np.float32).astype(np.float64), V.tolist(), scale),
                PS.patch_softmax_mean_ref(Q, K.astype(np.float32), V, scale), rtol=1e-9, atol=1e-12)


def test_patch_score_cuda_equals_reference():
    rng = np.random.default_rng(2)
    Q, K, V = rng.normal(size=(3, 2)), rng.normal(size=(5, 2)), rng.normal(size=(5, 2))
    assert same(_sim(PS.patch_softmax_mean_cuda, Q, K, V, 0.7), PS.patch_softmax_mean_ref(Q, K, V, 0.7), rtol=1e-9,
                atol=1e-12)


@pytest.mark.parametrize("fn", [PS.patch_softmax_mean_ref, PS.patch_softmax_mean, PS.patch_softmax_mean_cuda])
def test_patch_score_hostile_inputs(fn):
    """Beyond the issue's list: a huge scale (or huge Q, K) made every logit -inf: 0/0 = NaN out; chunk <= 0 gave NaN
    (reference, an empty loop) or a ZeroDivision-like error. Now refused naming scale / chunk."""
    Q, K, V = np.zeros((2, 3)), np.ones((4, 3)), np.ones(4)
    refuses_each(fn, dict(Q=Q, K=K, V=V, scale=1.0), {
        "Q": [_with_nan(Q), np.zeros((0, 3)), np.zeros((2, 2)), np.full((2, 3), 1e200), "Q", None],
        "K": [_with_nan(K, 2, np.inf), np.zeros((4,)), "K"],
        "V": [np.zeros(5), np.zeros((4, 0)), _with_nan(V), np.full(4, 1e300), "V", None],
        "scale": [0.0, -1.0, 1e308, *BAD_NUMBERS]})
    if fn is not PS.patch_softmax_mean_cuda:
        refuses_each(fn, dict(Q=Q, K=K, V=V, scale=1.0), {"chunk": [0, -1, 2.5, None]})


# ------------------------------------------------------------------------------------------------------- tanimoto
@given(hnp.arrays(np.bool_, st.tuples(st.integers(0, 5), st.sampled_from([64, 128]))),
       hnp.arrays(np.bool_, st.tuples(st.integers(0, 5), st.just(64))), st.integers(1, 4))
def test_tanimoto_njit_equals_reference_and_sets(a, b, chunk):
    A = TA.pack_bits(a) if len(a) else np.zeros((0, a.shape[1] // 64), np.uint64)
    B = TA.pack_bits(np.concatenate([b] * (a.shape[1] // 64), axis=1)) if len(b) else np.zeros((0, A.shape[1]), np.uint64)
    bb = np.concatenate([b] * (a.shape[1] // 64), axis=1)
    want = TA.tanimoto_matrix_ref(A, B, chunk)
    assert np.array_equal(TA.tanimoto_matrix(A, B), want) and np.array_equal(TA.tanimoto_matrix(non_contiguous(A), B),
                                                                              want)
    for i in range(len(a)):
        for j in range(len(bb)):
            union = np.sum(a[i] | bb[j])
            assert want[i, j] == (np.sum(a[i] & bb[j]) / union if union else 0.0)


def test_tanimoto_cuda_and_hostile_inputs():
    bits = np.random.default_rng(0).random((3, 128)) < 0.3
    A = TA.pack_bits(bits)
    assert np.array_equal(_sim(TA.tanimoto_matrix_cuda, A), TA.tanimoto_matrix_ref(A))
    for fn in (TA.tanimoto_matrix_ref, TA.tanimoto_matrix, TA.tanimoto_matrix_cuda):
        refuses_each(fn, dict(A=A, B=A), {"A": [A.astype(np.int64), A[:, :1], A[0], "A", None, [[1], [2, 3]],
                                                A.astype(float)],
                                          "B": [A[:, :1], A.view(np.int64)]})
    refuses_each(TA.tanimoto_matrix_ref, dict(A=A), {"chunk": [0, -2, 1.5, None]})
    refuses_each(TA.tanimoto_matrix_cuda, dict(A=A), {"threads": [0, 33, 2.5]})
    refuses_each(TA.pack_bits, dict(bits=bits), {"bits": [bits[:, :100], np.full((1, 64), 2), np.full((1, 64), np.nan),
                                                           bits[0], "bits", None, [[0] * 64, [1]],
                                                           np.array([["a"] * 64])]})


# ------------------------------------------------------------------------------------------------------------ vmf
def _unit(v):
    v = np.asarray(v, np.float64)
    return v / np.linalg.norm(v)


@given(hnp.arrays(np.float64, st.integers(2, 6), elements=_floats(-1, 1)).filter(lambda v: np.linalg.norm(v) > 0.1),
       st.one_of(_floats(1e-3, 1e4), st.sampled_from([1e-300, 1e12, VM.MAX_KAPPA])), st.integers(0, 12),
       st.integers(0, 2**63 - 1))
def test_vmf_sampler_njit_equals_reference(mu, kappa, size, seed):
    mu = _unit(mu)
    want = VM.wood_sample_ref(mu, kappa, size, seed)
    got = VM.wood_sample(mu, kappa, size, seed)
    assert got.shape == (size, mu.size) and np.isfinite(got).all()
    assert same(got, want, rtol=0, atol=1e-6)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-12)
    assert same(VM.wood_sample(mu.tolist(), np.float64(kappa), np.int32(size), np.uint64(seed)), got)


@given(st.integers(0, 40), st.integers(1, 50), st.integers(1, 5), st.data())
def test_vmf_top1_equals_reference(nq, n, d, data):
    Q = data.draw(_int_valued((nq, d)))
    A = data.draw(_int_valued((n, d)))
    want = VM.top1_ref(Q, A)
    assert np.array_equal(VM.top1(Q, A), want)
    assert np.array_equal(VM.top1(non_contiguous(Q), A.tolist()), want)
    assert np.array_equal(VM.top1(Q.astype(np.float32), A.astype(np.float32)), want)
    assert np.array_equal(VM.top1(Q.astype(np.int64), A.astype(np.int8)), want)


def test_vmf_cuda_and_hostile_inputs():
    mu = _unit([1.0, 2.0, 2.0])
    assert same(_sim(VM.wood_sample_cuda, mu, 3.0, 4, 1), VM.wood_sample_ref(mu, 3.0, 4, 1), rtol=0, atol=1e-9)
    Q, A = np.eye(3)[:2], np.eye(3)
    assert np.array_equal(_sim(VM.top1_cuda, Q, A), VM.top1_ref(Q, A))
    for fn in (VM.wood_sample_ref, VM.wood_sample, VM.wood_sample_cuda):
        refuses_each(fn, dict(mu=mu, kappa=1.0, size=3, seed=0), {
            "mu": [2 * mu, _with_nan(mu), np.array([1.0]), mu[None], "mu", None],
            "kappa": [0.0, -1.0, 1e16, 1e300, *BAD_NUMBERS],  # > MAX_KAPPA: log(1 - x0^2) = log 0 before
            "size": [-1, 2.5, *BAD_NUMBERS, *HUGE_SIZES],
            "seed": [-1, 2**64, 1.5, None]})
    refuses_each(VM.wood_b, dict(kappa=1.0, d=3), {"kappa": [0.0, -1.0, *BAD_NUMBERS], "d": [1, 2.5, None]})
    for fn in (VM.top1_ref, VM.top1, VM.top1_cuda):
        refuses_each(fn, dict(Q=Q, A=A), {"A": [np.zeros((0, 3)), A[0], "A", None, [[1, 2], [3]], A.astype(complex)],
                                          "Q": [Q[:, :2], Q[0], "Q", None, np.array([["a"] * 3])]})
    refuses_each(VM.top1_ref, dict(Q=Q, A=A), {"chunk": [0, -1, 1.5]})


# --------------------------------------------------------------------------------------------------------- pareto
@st.composite
def _points(draw):
    n, m = draw(st.integers(0, 25)), draw(st.integers(1, 5))
    Y = draw(hnp.arrays(np.float64, (n, m), elements=st.one_of(st.integers(-3, 3).map(float),
                                                               st.sampled_from([np.inf, -np.inf]))))
    return Y


@given(_points(), st.booleans())
def test_pareto_njit_equals_reference(Y, keep):
    mask, rank = PA.nondominated_mask_ref(Y, keep), PA.pareto_rank_ref(Y)
    assert np.array_equal(PA.nondominated_mask(Y, keep), mask) and np.array_equal(PA.pareto_rank(Y), rank)
    assert np.array_equal(PA.pareto_rank(non_contiguous(Y)), rank)
    assert np.array_equal(PA.nondominated_mask(Y.tolist() if len(Y) else Y, keep), mask)
    assert np.array_equal(PA._ranks(Y, wide=False), rank)
    assert np.array_equal(mask if keep else PA.nondominated_mask(Y), rank == 0)


@FEW
@given(_points().filter(lambda Y: len(Y) <= 8))
def test_pareto_cuda_equals_reference(Y):
    assert np.array_equal(_sim(PA.pareto_rank_cuda, Y), PA.pareto_rank_ref(Y))
    assert np.array_equal(_sim(PA.nondominated_mask_cuda, Y, False), PA.nondominated_mask_ref(Y, False))


@pytest.mark.parametrize("fn", [PA.check_points, PA.nondominated_mask_ref, PA.pareto_rank_ref, PA.nondominated_mask,
                                PA.pareto_rank, PA.nondominated_mask_cuda, PA.pareto_rank_cuda])
def test_pareto_hostile_inputs(fn):
    Y = np.array([[1.0, 2.0], [2.0, 1.0]])
    refuses_each(fn, dict(Y=Y), {"Y": [_with_nan(Y), np.zeros(3), np.zeros((2, 0)), np.zeros((2, 2, 2)), "Y", None,
                                       [[1, 2], [3]], Y.astype(complex), np.array([["a", "b"]])]})
    if fn in (PA.nondominated_mask_ref, PA.pareto_rank_ref):
        refuses_each(fn, dict(Y=Y), {"chunk": [0, -1, 2.5, None]})


# ------------------------------------------------------------------------------------------------------ benchmarks
@pytest.mark.parametrize("mod", [PM, SV, SP, WL, RG, SA, PS, TA, VM, PA])
def test_benchmark_size_is_checked(mod):
    assert_refused(mod.benchmark, "huge", name="size")


def test_every_public_entry_point_is_covered():
    "The suite's census: every name in each kernel's __all__ (less the benchmarks, timed elsewhere) appears above."
    import inspect
    import sys
    src = inspect.getsource(sys.modules[__name__])
    alias = {PM: "PM", SV: "SV", SP: "SP", WL: "WL", RG: "RG", SA: "SA", PS: "PS", TA: "TA", VM: "VM", PA: "PA"}
    missing = [f"{m.__name__}.{name}" for m, a in alias.items() for name in m.__all__
               if name not in ("benchmark", "GOLDEN") and not name.startswith("cuda_") and f"{a}.{name}" not in src]
    assert not missing, missing
    assert sum(len(m.__all__) for m in alias) >= 60
