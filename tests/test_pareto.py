"""icml25nb.pareto: the front functions (convention, fronts), hypervolume against brute force and Monte Carlo,
epsilon / IGD / IGD+ against their formulas, and the array-based Monte Carlo tree search against enumeration."""
import itertools

import moocore
import numpy as np
import pytest

from icml25nb import pareto as PA


# --- brute-force hypervolume ---------------------------------------------------------------------------------
def hv_grid(Y, ref):
    """Exact hypervolume by a grid over the coordinates: the distinct coordinates of the points (clipped to ref) and
    ref cut the box into cells; a cell counts when some point is <= its lower corner in every objective."""
    Y = np.asarray(Y, float)
    Y = Y[(Y < ref).all(1)]
    if len(Y) == 0:
        return 0.0
    axes = [np.unique(np.r_[Y[:, j], ref[j]]) for j in range(Y.shape[1])]
    lows = np.array(list(itertools.product(*[a[:-1] for a in axes])))
    widths = np.array(list(itertools.product(*[np.diff(a) for a in axes])))
    covered = np.zeros(len(lows), bool)
    for y in Y:
        covered |= (y <= lows).all(1)
    return float(widths[covered].prod(1).sum())


def hv_inclusion_exclusion(Y, ref):
    "Exact hypervolume by inclusion-exclusion over the boxes [y, ref] (their intersection is [max of y's, ref])."
    Y = np.asarray(Y, float)
    total = 0.0
    for k in range(1, len(Y) + 1):
        for S in itertools.combinations(range(len(Y)), k):
            total += (-1) ** (k + 1) * np.prod(np.clip(ref - Y[list(S)].max(0), 0, None))
    return total


@pytest.mark.parametrize("m", [2, 3])
def test_hypervolume_equals_the_grid_brute_force(m):
    rng = np.random.default_rng(m)
    for n in (1, 2, 5, 20, 40):
        Y = rng.random((n, m))
        ref = np.full(m, 1.05)
        assert abs(PA.hypervolume(Y, ref) - hv_grid(Y, ref)) < 1e-12
    # ties, duplicates, points on and beyond the reference box
    Y = rng.integers(0, 5, (30, m)).astype(float)
    ref = np.full(m, 4.0)
    assert PA.hypervolume(Y, ref) == pytest.approx(hv_grid(Y, ref), abs=1e-12)
    assert PA.hypervolume(np.vstack([Y, Y]), ref) == pytest.approx(hv_grid(Y, ref), abs=1e-12)


@pytest.mark.parametrize("m", [2, 3])
def test_hypervolume_equals_inclusion_exclusion(m):
    rng = np.random.default_rng(10 + m)
    for _ in range(10):
        Y = rng.random((8, m))
        ref = rng.uniform(0.6, 1.2, m)  # some points outside the box: their boxes are empty
        want = hv_inclusion_exclusion(Y, ref)
        assert PA.hypervolume(Y, ref) == pytest.approx(want, abs=1e-12)
        assert hv_grid(Y, ref) == pytest.approx(want, abs=1e-12)  # the two brute forces agree


@pytest.mark.parametrize("m", [4, 5])
def test_hypervolume_matches_monte_carlo(m):
    """Uniform samples of the box [min Y, ref]: the fraction dominated times the box volume estimates the hypervolume
    with standard error box * sqrt(p (1 - p) / N); with a fixed seed the exact value must lie within 4 of them (a
    two-sided 4-sigma band: a correct value falls outside with probability 6e-5)."""
    rng = np.random.default_rng(100 + m)
    Y = rng.random((60, m)) ** 0.7
    ref = np.full(m, 1.0)
    lo = Y.min(0)
    N = 200_000
    U = lo + (ref - lo) * rng.random((N, m))
    hit = np.zeros(N, bool)
    for y in Y:
        hit |= (y <= U).all(1)
    box, p = np.prod(ref - lo), hit.mean()
    est, se = box * p, box * np.sqrt(p * (1 - p) / N)
    hv = PA.hypervolume(Y, ref)
    assert abs(hv - est) < 4 * se
    # a wrong reference point is far outside the band
    assert abs(PA.hypervolume(Y, ref * 1.02) - est) > 10 * se


def test_hypervolume_convention_and_errors():
    Y = np.array([[1.0, 3.0], [2.0, 2.0], [3.0, 1.0]])
    assert PA.hypervolume(Y, [4, 4]) == 6.0
    assert PA.hypervolume(-Y, [-4, -4], maximise=True) == 6.0
    assert PA.hypervolume(Y * [1, -1], [4, -4], maximise=[False, True]) == 6.0
    assert PA.hypervolume(Y, 4) == 6.0  # a scalar reference is repeated
    assert PA.hypervolume(np.zeros((0, 3)), [1, 1, 1]) == 0.0
    assert PA.hypervolume([[2.0]], [5.0]) == 3.0
    for args, exc, msg in [((Y, [4, 4, 4]), ValueError, "ref must have 2 coordinates"),
                           ((Y, [4, np.nan]), ValueError, "ref must be finite"),
                           ((Y, "ab"), TypeError, "ref must be a point"),
                           (([[0, -np.inf]], [1, 1]), ValueError, "Y must be finite"),
                           (([[0, np.nan]], [1, 1]), ValueError, "Y must not contain NaN"),
                           (([1.0, 2.0], [1, 1]), ValueError, "Y must be a 2-D array")]:
        with pytest.raises(exc, match=msg.replace("(", r"\(")):
            PA.hypervolume(*args)


# --- epsilon, IGD, IGD+ --------------------------------------------------------------------------------------
def _eps_formula(A, R):
    return max(min(np.max(a - r) for a in A) for r in R)


def _igd_formula(A, R):
    return np.mean([min(np.linalg.norm(a - r) for a in A) for r in R])


def _igd_plus_formula(A, R):
    return np.mean([min(np.linalg.norm(np.maximum(a - r, 0)) for a in A) for r in R])


@pytest.mark.parametrize("m", [2, 3, 4])
def test_indicators_match_their_formulas(m):
    rng = np.random.default_rng(20 + m)
    for _ in range(5):
        A, R = rng.random((7, m)), rng.random((11, m))
        assert PA.epsilon_additive(A, R) == pytest.approx(_eps_formula(A, R), abs=1e-12)
        assert PA.igd(A, R) == pytest.approx(_igd_formula(A, R), abs=1e-12)
        assert PA.igd_plus(A, R) == pytest.approx(_igd_plus_formula(A, R), abs=1e-12)
        # maximisation: the same numbers on the negated sets
        assert PA.igd_plus(-A, -R, maximise=True) == pytest.approx(_igd_plus_formula(A, R), abs=1e-12)
        assert PA.epsilon_additive(-A, -R, maximise=True) == pytest.approx(_eps_formula(A, R), abs=1e-12)


def test_indicator_properties_and_errors():
    R = np.array([[0.0, 1.0], [0.5, 0.5], [1.0, 0.0]])
    assert PA.igd(R, R) == 0 and PA.igd_plus(R, R) == 0 and PA.epsilon_additive(R, R) == 0
    assert PA.epsilon_additive(R + 0.1, R) == pytest.approx(0.1)
    assert PA.igd_plus(R - 0.1, R) == 0  # A dominates R: no shortfall
    with pytest.raises(ValueError, match="same number of objectives"):
        PA.igd(R, R[:, :1])
    with pytest.raises(ValueError, match="at least one point"):
        PA.epsilon_additive(R[:0], R)
    with pytest.raises(ValueError, match="A and R must be finite"):
        PA.igd_plus(R, R + np.inf)
    with pytest.raises(ValueError, match="R must be a 2-D array"):
        PA.igd(R, [1.0, 2.0])


# --- fronts and the convention -------------------------------------------------------------------------------
def test_front_functions_against_moocore_with_maximise():
    rng = np.random.default_rng(30)
    Y = rng.integers(0, 5, (200, 3)).astype(float)
    mx = [True, False, True]
    np.testing.assert_array_equal(PA.pareto_rank(Y, maximise=mx), moocore.pareto_rank(Y, maximise=mx))
    np.testing.assert_array_equal(PA.nondominated_mask(Y, maximise=mx), moocore.is_nondominated(Y, maximise=mx,
                                                                                                  keep_weakly=True))
    np.testing.assert_array_equal(PA.nondominated_mask(Y, False, True),
                                  moocore.is_nondominated(Y, maximise=True))
    fronts = PA.pareto_fronts(Y, maximise=mx)
    rank = PA.pareto_rank(Y, maximise=mx)
    assert sorted(np.concatenate(fronts).tolist()) == list(range(len(Y)))
    for r, F in enumerate(fronts):
        assert (rank[F] == r).all() and (np.diff(F) > 0).all()


def test_maximise_argument_errors():
    with pytest.raises(ValueError, match="one per objective"):
        PA.pareto_rank([[1, 2]], maximise=[True, False, True])
    with pytest.raises(TypeError, match="maximise must be a bool"):
        PA.nondominated_mask([[1, 2]], maximise=[0.5, 1])


# --- the Monte Carlo tree ------------------------------------------------------------------------------------
def _check_bookkeeping(search, n_iter):
    "Visits and value sums recomputed from the history (rollout node and value of each iteration) and the parents."
    t = search.tree
    n = t.size
    visits = np.zeros(n, np.int64)
    W = np.zeros((n, t.n_obj))
    for node, v in zip(search.starts, search.values):
        for u in t.path(node):
            visits[u] += 1
            W[u] += v
    np.testing.assert_array_equal(t.visits[:n], visits)
    np.testing.assert_allclose(t.value_sum[:n], W, rtol=0, atol=1e-9)
    assert t.visits[0] == n_iter == len(search.starts)
    # each non-terminal node is rolled out once (when first reached) and expanded on its next visit
    starts = np.bincount(search.starts, minlength=n)
    child = np.bincount(t.parent[1:n], weights=t.visits[1:n], minlength=n).astype(np.int64)
    nonterm = ~t.terminal[:n] & (t.visits[:n] > 0)
    assert (starts[nonterm] == 1).all()
    np.testing.assert_array_equal(t.visits[:n], starts + child)
    assert (t.visits[:n][t.n_children[:n] > 0] >= 2).all()
    for v in range(n):  # children contiguous, with consistent parent, action and depth
        ch = t.children(v)
        assert (t.parent[ch] == v).all() and (t.action[ch] == np.arange(len(ch))).all()
        assert (t.depth[ch] == t.depth[v] + 1).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pareto_ucb_finds_the_enumerated_pareto_set(seed):
    env = PA.SyntheticTree(depth=5, branching=3, seed=seed)
    s = PA.MCTS(env, n_obj=2, rule="pareto", c=0.2, seed=seed).run(1000)
    found, R = s.front()
    assert set(found) == env.pareto_leaves()
    np.testing.assert_array_equal(R, np.array([env.reward(x) for x in found]))
    _check_bookkeeping(s, 1000)


def test_pareto_set_by_brute_enumeration_matches_the_helper():
    "SyntheticTree.pareto_leaves against a walk of the tree through the environment methods and a pairwise check."
    env = PA.SyntheticTree(depth=4, branching=3, n_obj=3, seed=4)
    leaves, stack = [], [env.root()]
    while stack:
        s = stack.pop()
        k = env.n_actions(s)
        if k == 0:
            leaves.append(s)
        stack.extend(env.step(s, a) for a in range(k))
    assert len(leaves) == 81
    R = np.array([env.reward(s) for s in leaves])
    dominated = [any((R[j] >= R[i]).all() and (R[j] > R[i]).any() for j in range(len(R))) for i in range(len(R))]
    assert {s for s, d in zip(leaves, dominated) if not d} == env.pareto_leaves()


def test_three_objectives_and_growing_capacity_give_the_same_search():
    env = PA.SyntheticTree(depth=4, branching=3, n_obj=3, seed=4)
    a = PA.MCTS(env, 3, "pareto", c=0.2, seed=5, capacity=1).run(700)  # grows by doubling from 1 node
    b = PA.MCTS(env, 3, "pareto", c=0.2, seed=5, capacity=4096).run(700)
    assert a.starts == b.starts and a.tree.size == b.tree.size
    np.testing.assert_array_equal(a.tree.visits[:a.tree.size], b.tree.visits[:b.tree.size])
    assert set(a.front()[0]) == env.pareto_leaves()
    _check_bookkeeping(a, 700)


@pytest.mark.parametrize("w", [(0.5, 0.5), (0.9, 0.1), (0.2, 0.8)])
def test_uct_on_a_scalarisation_finds_its_optimum(w):
    "The most visited path of UCT on w ends at the leaf maximising w . r."
    env = PA.SyntheticTree(depth=5, branching=3, seed=7)
    s = PA.MCTS(env, 2, "scalar", c=0.2, weights=w, seed=0).run(1500)
    node = 0
    while s.tree.n_children[node] > 0:
        ch = s.tree.children(node)
        node = ch[np.argmax(s.tree.visits[ch])]
    assert s.tree.states[node] == int(env.leaves[np.argmax(env.leaf_rewards @ np.asarray(w))])
    _check_bookkeeping(s, 1500)


class _Irregular:
    """A tree whose branching depends on the state (0 to 4 children, leaves at depths 2 to 5; 62 leaves), states as
    tuples of actions, and rewards with no structure (a generator seeded by the path's hash; tuples of ints hash
    the same in every process)."""

    def root(self):
        return ()

    def n_actions(self, s):
        if len(s) == 5:
            return 0
        return (3 * sum(s) + 2 * len(s) + 1) % 5 if len(s) > 0 else 3

    def step(self, s, a):
        return s + (a,)

    def reward(self, s):
        return np.random.default_rng(abs(hash(s)) % 2**32).random(2)


def test_irregular_tree_against_enumeration():
    env = _Irregular()
    leaves, stack = [], [env.root()]
    while stack:
        s = stack.pop()
        k = env.n_actions(s)
        if k == 0:
            leaves.append(s)
        stack.extend(env.step(s, a) for a in range(k))
    assert len(leaves) == 62 and {len(s) for s in leaves} == {2, 3, 4, 5}
    R = np.array([env.reward(s) for s in leaves])
    pareto = {s for s, k in zip(leaves, PA.nondominated_mask(R, maximise=True)) if k}
    # rewards without structure need more exploration than the synthetic tree's (c = 0.3 stalls on 31 leaves)
    s = PA.MCTS(env, 2, "pareto", c=1.0, seed=0).run(1000)
    assert set(s.front()[0]) == pareto
    _check_bookkeeping(s, 1000)


def test_same_seed_same_search_and_terminal_root():
    env = PA.SyntheticTree(depth=4, branching=2, seed=0)
    a, b = (PA.MCTS(env, 2, seed=3).run(100) for _ in range(2))
    assert a.starts == b.starts
    np.testing.assert_array_equal(a.tree.value_sum[:a.tree.size], b.tree.value_sum[:b.tree.size])
    assert PA.MCTS(env, 2, seed=4).run(100).starts != a.starts

    class OneLeaf:
        root = staticmethod(lambda: "only")
        n_actions = staticmethod(lambda s: 0)
        step = None
        reward = staticmethod(lambda s: [1.0, 2.0])

    s = PA.MCTS(OneLeaf(), 2).run(3)
    assert s.tree.size == 1 and s.tree.visits[0] == 3 and s.front()[0] == ["only"]
    np.testing.assert_array_equal(s.tree.value_sum[0], [3.0, 6.0])


def test_choose_pareto_is_uniform_over_the_nondominated_rows():
    U = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.4, 0.4], [1.0, 0.0]])  # row 3 dominated, 0 and 4 copies
    rng = np.random.default_rng(0)
    counts = np.bincount([PA.choose_pareto(U, rng) for _ in range(4000)], minlength=5)
    assert counts[3] == 0
    assert (np.abs(counts[[0, 1, 2, 4]] / 4000 - 0.25) < 0.03).all()


def test_uct_scores_formula():
    t = PA.MCTree(2)
    t.add_root(None)
    t.expand(0, [None, None], [True, True])
    for _ in range(3):
        t.backprop(1, np.array([1.0, 0.0]))
    t.backprop(2, np.array([0.0, 2.0]))
    w = np.array([0.25, 0.75])
    want = np.array([0.25 + 0.7 * np.sqrt(np.log(4) / 3), 1.5 + 0.7 * np.sqrt(np.log(4) / 1)])
    np.testing.assert_allclose(PA.uct_scores(t, 0, w, 0.7), want)
    U = PA.pareto_ucb_vectors(t, 0, 0.7)
    np.testing.assert_allclose(U[1], [0.0, 2.0] + 0.7 * np.sqrt((4 * np.log(4) + np.log(2)) / 2))


def test_mcts_bad_input():
    env = PA.SyntheticTree(depth=2, branching=2)
    for kwargs, msg in [(dict(rule="greedy"), "rule must be"), (dict(rule="scalar"), "weights must be given"),
                        (dict(rule="scalar", weights=[1.0]), "weights must be 2"),
                        (dict(rule="scalar", weights=[1.0, -1.0]), "weights must be 2"),
                        (dict(c=-1.0), "c must be non-negative"), (dict(capacity=0), "capacity must be")]:
        with pytest.raises(ValueError, match=msg):
            PA.MCTS(env, 2, **kwargs)
    with pytest.raises(ValueError, match="n_obj must be"):
        PA.MCTS(env, 0)
    with pytest.raises(ValueError, match="n_iter must be"):
        PA.MCTS(env, 2).run(-1)
    with pytest.raises(ValueError, match="env.reward must return 3 finite numbers"):
        PA.MCTS(env, 3).run(2)
    with pytest.raises(ValueError, match="depth must be"):
        PA.SyntheticTree(depth=0)
    with pytest.raises(ValueError, match="branching must be"):
        PA.SyntheticTree(branching=1)
    t = PA.MCTree(2)
    t.add_root(0)
    with pytest.raises(ValueError, match="already has a root"):
        t.add_root(0)
    with pytest.raises(ValueError, match="same positive length"):
        t.expand(0, [1, 2], [True])


def test_plot_fronts_runs_and_checks_input():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rng = np.random.default_rng(0)
    ax = PA.plot_fronts(rng.random((50, 2)), ref=[1.1, 1.1])
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(lab.startswith("hypervolume") for lab in labels)
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="2 objectives"):
        PA.plot_fronts(rng.random((5, 3)))
