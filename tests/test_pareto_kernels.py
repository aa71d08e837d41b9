"""kernels/pareto.py: non-dominated mask and front ranks, NumPy reference vs @njit vs CUDA (simulator) vs moocore."""
import warnings

import moocore
import numpy as np
import pytest

from icml25nb.kernels import pareto as P


def _points(rng, n, m, kind):
    "Test clouds: continuous, on a coarse integer grid (ties and duplicates), on a plane (one big front), with inf."
    if kind == "uniform":
        return rng.random((n, m))
    if kind == "grid":
        return rng.integers(0, 4, (n, m)).astype(float)
    if kind == "plane":  # every point on the simplex plane: all mutually non-dominated
        Y = rng.random((n, m))
        Y[:, -1] = m - Y[:, :-1].sum(1) if m > 1 else Y[:, -1]
        return Y
    if kind == "inf":
        Y = rng.integers(0, 3, (n, m)).astype(float)
        Y[rng.random((n, m)) < 0.1] = np.inf
        Y[rng.random((n, m)) < 0.05] = -np.inf
        return Y
    raise ValueError(kind)


def _brute_rank(Y):
    "Front ranks by peeling the definition: rank r = not dominated by any row still unranked."
    n = len(Y)
    rank = np.full(n, -1)
    r = 0
    while (rank < 0).any():
        alive = np.flatnonzero(rank < 0)
        front = [i for i in alive
                 if not any((Y[j] <= Y[i]).all() and (Y[j] < Y[i]).any() for j in alive)]
        rank[front] = r
        r += 1
    return rank


KINDS = ["uniform", "grid", "plane", "inf"]


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("kind", KINDS)
def test_njit_reference_and_moocore_agree(m, kind):
    rng = np.random.default_rng(10 * m + KINDS.index(kind))
    for n in (1, 2, 3, 9, 60, 400):
        Y = _points(rng, n, m, kind)
        # moocore 0.3.2 mis-ranks rows with infinite objectives in 3-D; +-1e300 keeps the order of these rows
        Yf = np.clip(Y, -1e300, 1e300)
        want = np.asarray(moocore.pareto_rank(Yf), np.int64)
        if n <= 60:
            np.testing.assert_array_equal(_brute_rank(Y), want)
        np.testing.assert_array_equal(P.pareto_rank(Y), want)
        np.testing.assert_array_equal(P.pareto_rank_ref(Y), want)
        np.testing.assert_array_equal(P._ranks(Y, wide=False), want)  # ENS-BS also for m >= 4
        for keep in (True, False):
            want_mask = moocore.is_nondominated(Yf, keep_weakly=keep)
            np.testing.assert_array_equal(P.nondominated_mask(Y, keep), want_mask)
            np.testing.assert_array_equal(P.nondominated_mask_ref(Y, keep), want_mask)


@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_ranks_match_the_definition(m):
    "Against the definition by peeling, independent of moocore: small grids with many duplicates."
    rng = np.random.default_rng(m)
    for _ in range(5):
        Y = rng.integers(0, 3, (25, m)).astype(float)
        want = _brute_rank(Y)
        np.testing.assert_array_equal(P.pareto_rank(Y), want)
        np.testing.assert_array_equal(P._ranks(Y, wide=False), want)
        np.testing.assert_array_equal(P.nondominated_mask(Y), want == 0)


def test_duplicates_share_rank_and_first_copy_is_kept():
    Y = np.array([[1.0, 1.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 2.0]])
    np.testing.assert_array_equal(P.pareto_rank(Y), [1, 0, 0, 0, 0, 1, 2])
    np.testing.assert_array_equal(P.nondominated_mask(Y), [False, True, True, True, True, False, False])
    np.testing.assert_array_equal(P.nondominated_mask(Y, keep_duplicates=False),
                                  [False, True, True, False, False, False, False])
    np.testing.assert_array_equal(P.nondominated_mask_cuda(Y, keep_duplicates=False),
                                  [False, True, True, False, False, False, False])


def test_all_equal_and_chain():
    np.testing.assert_array_equal(P.pareto_rank(np.ones((5, 3))), np.zeros(5))
    chain = np.arange(6.0)[::-1, None] * np.ones((1, 3))  # row i dominated by every later row
    np.testing.assert_array_equal(P.pareto_rank(chain), np.arange(6)[::-1])
    np.testing.assert_array_equal(P.pareto_rank_ref(chain), np.arange(6)[::-1])


def test_ties_in_the_first_objective_take_the_lexsort_path():
    "Equal first objectives (the stable lexsort branch) with the rows in scrambled order."
    rng = np.random.default_rng(5)
    Y = np.column_stack([rng.integers(0, 3, 200), rng.random(200), rng.random(200)])
    np.testing.assert_array_equal(P.pareto_rank(Y), moocore.pareto_rank(Y))
    np.testing.assert_array_equal(P.nondominated_mask(Y, False), moocore.is_nondominated(Y, keep_weakly=False))


def test_wide_blocks_grow():
    "4 and 5 objectives: fronts of 2000 points and 30 shifted copies of a 50-point front (block and pool growth)."
    rng = np.random.default_rng(7)
    for m in (4, 5):
        Y = _points(rng, 2000, m, "plane")
        base = _points(rng, 50, m, "plane")
        Y2 = np.concatenate([base + 0.01 * k for k in range(30)])
        for Z in (Y, Y2, np.concatenate([Y, Y2])):
            np.testing.assert_array_equal(P.pareto_rank(Z), moocore.pareto_rank(Z))
        np.testing.assert_array_equal(P.pareto_rank(Y2), np.repeat(np.arange(30), 50))


def test_large_front_staircases_grow():
    "3 objectives, one front of 3000 points and 40 shifted copies of a 60-point front: the pool must grow."
    rng = np.random.default_rng(6)
    Y = _points(rng, 3000, 3, "plane")
    base = _points(rng, 60, 3, "plane")
    Y2 = np.concatenate([base + 0.01 * k for k in range(40)])
    for Z in (Y, Y2, np.concatenate([Y, Y2])):
        np.testing.assert_array_equal(P.pareto_rank(Z), moocore.pareto_rank(Z))
    np.testing.assert_array_equal(P.pareto_rank(Y2), np.repeat(np.arange(40), 60))


def test_empty_and_single_point():
    for f in (P.pareto_rank, P.pareto_rank_ref, P.pareto_rank_cuda):
        assert f(np.zeros((0, 3))).shape == (0,)
        np.testing.assert_array_equal(f(np.array([[1.0, 2.0]])), [0])
    for f in (P.nondominated_mask, P.nondominated_mask_ref, P.nondominated_mask_cuda):
        assert f(np.zeros((0, 2))).shape == (0,)
        np.testing.assert_array_equal(f(np.array([[1.0, 2.0, 3.0]])), [True])


def test_integer_input_is_accepted():
    Y = np.array([[1, 2], [2, 1], [2, 2]])
    np.testing.assert_array_equal(P.pareto_rank(Y), [0, 0, 1])


@pytest.mark.parametrize("f", [P.nondominated_mask, P.nondominated_mask_ref, P.pareto_rank, P.pareto_rank_ref,
                               P.nondominated_mask_cuda, P.pareto_rank_cuda])
def test_bad_input_one_line_errors(f):
    cases = [(np.array([[0.0, np.nan], [1.0, 1.0]]), ValueError, "must not contain NaN (row 0)"),
             (np.zeros(4), ValueError, "must be a 2-D array"),
             (np.zeros((2, 2, 2)), ValueError, "must be a 2-D array"),
             (np.zeros((3, 0)), ValueError, "at least one objective"),
             (np.array([["a", "b"]]), TypeError, "real numbers"),
             (np.array([[1 + 1j, 0]]), TypeError, "real numbers")]
    for Y, exc, msg in cases:
        with pytest.raises(exc) as e:
            f(Y)
        assert msg in str(e.value) and "\n" not in str(e.value) and str(e.value).startswith("Y ")


# --- CUDA simulator: tiny sizes ----------------------------------------------------------------------------
@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_cuda_simulator_agrees(m):
    rng = np.random.default_rng(40 + m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the simulator's own warnings
        for kind in ("grid", "uniform"):
            Y = _points(rng, 30, m, kind)
            np.testing.assert_array_equal(P.pareto_rank_cuda(Y), P.pareto_rank(Y))
            for keep in (True, False):
                np.testing.assert_array_equal(P.nondominated_mask_cuda(Y, keep), P.nondominated_mask(Y, keep))


def test_cuda_simulator_more_than_one_block():
    "130 rows: two thread blocks, and a chain of fronts (one launch per front)."
    rng = np.random.default_rng(9)
    Y = rng.integers(0, 5, (130, 2)).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(P.pareto_rank_cuda(Y), moocore.pareto_rank(Y))


def test_benchmark_small_runs_and_agrees():
    res = P.benchmark("small", repeat=1)
    assert set(res) >= {"kernel", "task", "seconds", "reference", "ratios"}
    assert res["reference"] in res["seconds"]
    assert all(res["ranks equal (njit, moocore, reference)"].values())
    assert "pareto.pareto_rank (block), m=2" in res["seconds"] and "m=3: block nondominated_mask / njit" in res["ratios"]
