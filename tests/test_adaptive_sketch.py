"""icml25nb.algorithms.adaptive_sketch: data, sketches, accountant, private selection, attacker and game at small
sizes (the experiment itself runs in the notebook and once in tests/test_chapters.py)."""
import math

import numpy as np
import pytest
from scipy import stats

from icml25nb.algorithms import adaptive_sketch as A


@pytest.fixture(scope="module")
def ds():
    return A.make_sparse_dataset(40, 128, seed=0)


def test_dataset_pairs_and_c_ann_verdict(ds):
    D = np.linalg.norm(ds.points[:, None] - ds.points[None], axis=-1)
    iu = np.triu_indices(ds.n, 1)
    close = D[iu] < 0.6
    assert close.sum() == ds.n // 2 and np.allclose(D[iu][close], 0.5)
    q = ds.points[2] + 0.3 * (ds.points[3] - ds.points[2])  # 0.15 from p2, 0.35 from p3: ratio 2.33 > c = 2
    assert not ds.is_error(q, 2) and ds.is_error(q, 3)
    assert not A.make_sparse_dataset(40, 128, c=3.0, seed=0).is_error(q, 3)
    # the verdict equals the brute-force definition on random queries and answers
    rng = np.random.default_rng(0)
    for _ in range(50):
        q = ds.points[rng.integers(ds.n)] + 0.2 * rng.standard_normal(ds.d) / math.sqrt(ds.d)
        a = int(rng.integers(ds.n))
        dist = np.linalg.norm(ds.points - q, axis=1)
        assert ds.is_error(q, a) == (dist[a] > ds.c * dist.min())


def test_dataset_bad_input():
    for kwargs, msg in [(dict(n=41), "n must be even"), (dict(n=1), "n"), (dict(d=1), "d"), (dict(rho=0.0), "rho"),
                        (dict(c=1.0), "c must be > 1"), (dict(seed=-1), "seed")]:
        with pytest.raises(ValueError, match=msg):
            A.make_sparse_dataset(**kwargs)


def test_same_seed_same_numbers(ds):
    assert np.array_equal(ds.points, A.make_sparse_dataset(40, 128, seed=0).points)
    assert not np.array_equal(ds.points, A.make_sparse_dataset(40, 128, seed=1).points)
    s1, s2 = A.JLSketchANN(ds.points, 8, seed=3), A.JLSketchANN(ds.points, 8, seed=3)
    assert np.array_equal(s1._S, s2._S)


def test_jl_and_fresh_answers_are_the_sketched_argmin(ds):
    rng = np.random.default_rng(1)
    s = A.JLSketchANN(ds.points, 8, seed=2)
    f = A.FreshCopiesANN(ds.points, 8, T=20, seed=2)
    for t in range(20):
        q = ds.points[rng.integers(ds.n)] + 0.3 * rng.standard_normal(ds.d) / math.sqrt(ds.d)
        assert s.query(q) == int(np.argmin(np.linalg.norm((ds.points - q) @ s._S[0].T, axis=1)))
        S_t = A._sketches(1, 8, ds.d, 2, 3, t)[0]  # the sketch fresh copy t draws
        assert f.query(q) == int(np.argmin(np.linalg.norm((ds.points - q) @ S_t.T, axis=1)))
    assert f.copies_used == 20
    with pytest.raises(RuntimeError, match="used up"):
        f.query(ds.points[0])
    with pytest.raises(ValueError, match="q must"):
        s.query(np.zeros(3))
    with pytest.raises(ValueError, match="q must"):
        s.query(np.full(ds.d, np.nan))


def test_accountant_is_advanced_composition_of_the_subsampled_epsilon():
    for eps0, f, T, delta in [(0.3, 0.5, 100, 1e-6), (1.2, 0.1, 5000, 1e-9), (0.05, 1.0, 10, 0.01)]:
        eq = math.log(1 + f * (math.exp(eps0) - 1))
        want = math.sqrt(2 * T * math.log(1 / delta)) * eq + T * eq * (math.exp(eq) - 1)
        acc = A.PrivacyAccountant(eps0, f, delta)
        assert acc.eps_per_query == pytest.approx(eq, rel=1e-14)
        assert acc.epsilon(T) == pytest.approx(want, rel=1e-12)
        for _ in range(T):
            acc.spend()
        assert acc.epsilon() == pytest.approx(want, rel=1e-12)
    # amplification only helps, and is exact at f = 1
    assert A.subsampled_epsilon(1.0, 0.3) < 1.0 and A.subsampled_epsilon(1.0, 1.0) == pytest.approx(1.0)


def test_eps0_for_budget_inverts_the_accountant():
    for B, T, f in [(200.0, 2000, 0.5), (10.0, 500, 0.2), (1.0, 8000, 0.5)]:
        e = A.eps0_for_budget(B, T, f, 1e-6)
        assert A.PrivacyAccountant(e, f, 1e-6).epsilon(T) == pytest.approx(B, rel=1e-9)
    assert A.eps0_for_budget(200.0, 8000, 0.5, 1e-6) < A.eps0_for_budget(200.0, 2000, 0.5, 1e-6)


def test_noisy_max_samples_the_exponential_mechanism():
    h = np.array([4.0, 2.0, 2.0, 0.0])
    eps = 1.1
    law = np.exp(eps * h / 2) / np.exp(eps * h / 2).sum()
    rng = np.random.default_rng(7)
    counts = np.bincount([A.noisy_max(h, eps, rng) for _ in range(20000)], minlength=4)
    assert stats.chisquare(counts, 20000 * law).pvalue > 1e-3
    # a mechanism without noise (plain argmax) would fail the same test
    assert stats.chisquare(np.array([20000, 0, 0, 0]), 20000 * law).pvalue < 1e-6


def test_dp_wrapper_candidates_subsets_and_accounting(ds):
    dp = A.DPRobustANN(ds.points, m=8, k=20, eps=2.0, sample_frac=0.25, seed=0)
    assert dp.r == 5
    freq = np.zeros(20)
    rng = np.random.default_rng(2)
    for _ in range(400):
        q = ds.points[rng.integers(ds.n)] + 0.3 * rng.standard_normal(ds.d) / math.sqrt(ds.d)
        copies, cand = dp.candidates(q)
        assert len(set(copies.tolist())) == 5
        freq[copies] += 1
        for j, a in zip(copies, cand):
            assert a == int(np.argmin(np.linalg.norm((ds.points - q) @ dp._S[j].T, axis=1)))
    # every copy is asked with probability r / k = 1/4 (400 queries: 100 expected each)
    assert stats.chisquare(freq).pvalue > 1e-3
    assert dp.accountant.queries == 0
    for i in range(10):
        dp.query(ds.points[i])
    assert dp.accountant.queries == 10


def test_dp_wrapper_bad_input(ds):
    P = ds.points
    for kwargs, msg in [(dict(k=0), "k"), (dict(m=0), "m"), (dict(eps=0.0), "eps0"), (dict(delta=0.0), "delta"),
                        (dict(sample_frac=1.5), "sample_frac"), (dict(selection="median"), "selection"),
                        (dict(seed=-3), "seed")]:
        with pytest.raises(ValueError, match=msg):
            A.DPRobustANN(P, **kwargs)
    with pytest.raises(ValueError, match="points must"):
        A.DPRobustANN(np.zeros(5))


class _QueryOnly:
    "Exposes query() and nothing else."

    def __init__(self, inner):
        object.__setattr__(self, "_q", inner.query)

    def __getattribute__(self, name):
        if name == "query":
            return object.__getattribute__(self, "_q")
        raise AttributeError(f"the attacker tried to read {name!r}")


def test_attacker_never_reads_the_sketch(ds):
    # the same game through a structure that exposes only query() gives the same answers and errors
    a1, a2 = A.LinearSketchAttacker(ds.points, seed=5), A.LinearSketchAttacker(ds.points, seed=5)
    o1 = A.run_game(ds, A.JLSketchANN(ds.points, 8, seed=6), a1, 200)
    o2 = A.run_game(ds, _QueryOnly(A.JLSketchANN(ds.points, 8, seed=6)), a2, 200)
    assert np.array_equal(o1["errors"], o2["errors"]) and np.array_equal(o1["probe_answers"], o2["probe_answers"])
    # the attacker holds only the public points, its own estimate and its own random stream
    s = A.JLSketchANN(ds.points, 8, seed=6)
    held = [v for v in vars(a1).values() if isinstance(v, np.ndarray)]
    assert all(not np.shares_memory(v, s._S) and v.shape[-1] == ds.d for v in held)
    assert not any(isinstance(v, (A.JLSketchANN, A.DPRobustANN, A.FreshCopiesANN)) for v in vars(a1).values())


def test_attack_learns_the_secret_direction_and_breaks_one_sketch(ds):
    s = A.JLSketchANN(ds.points, 8, seed=3)
    att = A.LinearSketchAttacker(ds.points, seed=4)
    out = A.run_game(ds, s, att, 400)
    w = s._S[0].T @ (s._S[0] @ att.v)
    w_perp = att._perp(w)
    assert att.direction() @ w_perp / np.linalg.norm(w_perp) > 0.5
    assert out["errors"][-40:].mean() > 0.9
    # oblivious queries of the same kind: no error; fresh copies under the same attack: no error
    assert A.run_game(ds, s, A.ObliviousQueries(ds.points, seed=4), 400)["errors"].mean() == 0.0
    assert A.run_game(ds, A.FreshCopiesANN(ds.points, 8, 400, seed=3), A.LinearSketchAttacker(ds.points, seed=4),
                      400)["errors"].mean() < 0.05


def test_dp_wrapper_holds_and_first_copy_breaks_in_a_short_game(ds):
    T = 400
    dp = A.DPRobustANN.for_budget(ds.points, 8, 40, T, 200.0, 1e-6, 0.5, seed=1)
    out = A.run_game(ds, dp, A.LinearSketchAttacker(ds.points, seed=2), T)
    assert A.final_error(out["errors"]) <= 0.1 and dp.accountant.queries == T
    first = A.DPRobustANN(ds.points, 8, 40, 1.0, selection="first", seed=1)
    assert A.final_error(A.run_game(ds, first, A.LinearSketchAttacker(ds.points, seed=2), T)["errors"]) >= 0.5


def test_final_error_and_run_game_bad_input(ds):
    assert A.final_error(np.array([1, 1, 1, 1, 1, 0, 0, 0, 0, 0], dtype=bool)) == 0.0
    assert A.final_error(np.array([0, 0, 0, 0, 1], dtype=bool), frac=0.4) == 0.5
    with pytest.raises(ValueError, match="T"):
        A.run_game(ds, A.JLSketchANN(ds.points), A.LinearSketchAttacker(ds.points), 0)
    with pytest.raises(ValueError, match="gamma"):
        A.LinearSketchAttacker(ds.points, gamma=0.0)


def test_derived_copies_grow_like_a_root_of_T():
    cfg = A.SCALE_CONFIG["fast"]
    ks = [A.derived_copies(cfg, T) for T in cfg["Ts"]]
    slope = np.polyfit(np.log(cfg["Ts"]), np.log(ks), 1)[0]
    assert all(a < b for a, b in zip(ks, ks[1:])) and 0.35 < slope < 0.55
    # the bound itself: at k the selection margin holds, at k - 1 it does not
    T = 2000
    k = A.derived_copies(cfg, T)
    margin = lambda k_: (lambda r: r * A.eps0_for_budget(cfg["eps_total"], T, r / k_, cfg["delta"]) / 2)(
        min(k_, max(1, math.ceil(cfg["sample_frac"] * k_))))
    assert margin(k) >= math.log(cfg["n"] / 0.05) > margin(k - 1)


def test_copies_needed_bisection_finds_the_first_passing_grid_point(ds):
    cfg = dict(A.SCALE_CONFIG["fast"], k_min=4, k_steps=2)
    T = 200
    k, i, tried = A.copies_needed(ds, cfg, T, seed=0, start=0)
    assert k == A._grid_k(cfg, i) and tried[k] <= cfg["target"]
    below = A._grid_k(cfg, i - 1)
    assert below in tried and tried[below] > cfg["target"]


def test_experiment_rejects_bad_arguments():
    with pytest.raises(ValueError, match="scale"):
        A.experiment("huge")
    with pytest.raises(ValueError, match="seed"):
        A.experiment("fast", seed=-1)


def test_majority_breaks_ties_at_random(ds):
    # two copies that disagree on a query: a plain majority of 2 is a tie, which must go either way about half the
    # time (a tie broken towards the lower index would favour p0, the attacker's correct answer)
    maj = A.DPRobustANN(ds.points, m=8, k=2, seed=0, selection="majority")
    rng = np.random.default_rng(3)
    v = ds.points[1] - ds.points[0]
    for _ in range(2000):
        q = ds.points[0] + v / 2 + 0.3 * rng.standard_normal(ds.d) / math.sqrt(ds.d)
        idx = [int(np.argmin(np.linalg.norm((ds.points - q) @ maj._S[j].T, axis=1))) for j in range(2)]
        if idx[0] != idx[1]:
            break
    else:
        pytest.fail("no query on which the two copies disagree")
    answers = [maj.query(q) for _ in range(400)]
    assert set(answers) == set(idx)
    assert 0.4 < answers.count(min(idx)) / 400 < 0.6
    # without a tie the majority is the vote: three copies, all asked
    maj3 = A.DPRobustANN(ds.points, m=8, k=3, seed=0, selection="majority")
    votes = [int(np.argmin(np.linalg.norm((ds.points - q) @ maj3._S[j].T, axis=1))) for j in range(3)]
    assert maj3.query(q) == max(set(votes), key=votes.count)


def test_copies_needed_for_the_majority_searches_odd_counts(ds):
    cfg = A.SCALE_CONFIG["fast"]
    assert [A._grid_k(cfg, i, "majority") for i in range(4)] == [1, 3, 5, 7]
    k, i, tried = A.copies_needed(ds, cfg, 200, seed=0, start=0, selection="majority")
    assert k % 2 == 1 and k == A._grid_k(cfg, i, "majority") and tried[k] <= cfg["target"]
    if k > 1:  # the count below was tried and failed
        assert tried[k - 2] > cfg["target"]
    with pytest.raises(ValueError, match="selection"):
        A.copies_needed(ds, cfg, 200, seed=0, selection="first")


def test_accountant_charges_each_answered_query_once(ds):
    dp = A.DPRobustANN.for_budget(ds.points, 8, 20, 50, 200.0, 1e-6, 0.5, seed=4)
    out = A.run_game(ds, dp, A.LinearSketchAttacker(ds.points, seed=5), 50)
    assert dp.accountant.queries == 50 and len(out["errors"]) + len(out["probe_answers"]) == 50
    assert dp.accountant.epsilon() == pytest.approx(200.0, rel=1e-9)  # the budget is spent exactly over T queries
    # the controls run no private selection and charge nothing
    maj = A.DPRobustANN(ds.points, 8, 20, seed=4, selection="majority")
    A.run_game(ds, maj, A.LinearSketchAttacker(ds.points, seed=5), 10)
    assert maj.accountant.queries == 0
