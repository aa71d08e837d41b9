"""kernels/softvi.py: soft value iteration on a deterministic MDP, NumPy reference vs @njit vs CUDA (simulator), and the
reference against the Bellman backup written out in plain Python."""
import math

import numpy as np
import pytest

from icml25nb.kernels import softvi as SV


def _mdp(S, A, seed, end=0.2):
    rng = np.random.default_rng(seed)
    nxt = rng.integers(0, S, (S, A))
    nxt[rng.random((S, A)) < end] = -1  # some actions end the episode: the "no successor" branch
    return rng.normal(0, 1, (S, A)), nxt, np.log(rng.dirichlet(np.ones(A)) * 2)


def _backup(R, nxt, log_mu, alpha, gamma, n_iter):
    "The sweep of the module docstring, one state and one action at a time in plain Python."
    S, A = R.shape
    V = [0.0] * S
    for _ in range(n_iter):
        W = []
        for s in range(S):
            q = [R[s, a] + (gamma * V[nxt[s, a]] if nxt[s, a] >= 0 else 0.0) for a in range(A)]
            W.append(max(q) if alpha == 0 else alpha * math.log(sum(math.exp(q[a] / alpha + log_mu[a])
                                                                    for a in range(A))))
        V = W
    return np.array(V)


@pytest.mark.parametrize("alpha", [0.0, 0.05, 1.0, 7.5])
def test_reference_matches_the_backup(alpha):
    R, nxt, log_mu = _mdp(9, 4, 1)
    np.testing.assert_allclose(SV.soft_vi_ref(R, nxt, log_mu, alpha, 0.9, 6), _backup(R, nxt, log_mu, alpha, 0.9, 6),
                               rtol=1e-12, atol=1e-12)


def test_soft_value_tends_to_hard_value_and_one_action_is_exact():
    R, nxt, log_mu = _mdp(12, 5, 2)
    hard = SV.soft_vi_ref(R, nxt, log_mu, 0.0, 0.8, 10)
    soft = SV.soft_vi_ref(R, nxt, log_mu, 1e-4, 0.8, 10)
    assert np.abs(soft - hard).max() < 1e-2  # alpha log mu terms vanish with alpha
    # a single action of measure 1: the soft backup is the plain backup for every alpha
    R1, n1 = R[:, :1], nxt[:, :1]
    np.testing.assert_allclose(SV.soft_vi_ref(R1, n1, np.zeros(1), 0.7, 0.8, 10),
                               SV.soft_vi_ref(R1, n1, np.zeros(1), 0.0, 0.8, 10), atol=1e-12)


@pytest.mark.parametrize("S,A", [(1, 1), (5, 3), (64, 17), (200, 2)])
def test_njit_equals_reference(S, A):
    R, nxt, log_mu = _mdp(S, A, S * A)
    for alpha, gamma in [(0.0, 0.9), (0.3, 0.95), (50.0, 1.0)]:
        want = SV.soft_vi_ref(R, nxt, log_mu, alpha, gamma, 8)
        got = SV.soft_vi_njit(R, nxt, log_mu, alpha, gamma, 8)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_cuda_simulator_equals_reference():
    R, nxt, log_mu = _mdp(130, 3, 5)  # two blocks of 128 threads, the second mostly idle
    for alpha in (0.0, 0.4):
        np.testing.assert_allclose(SV.soft_vi_cuda(R, nxt, log_mu, alpha, 0.9, 3),
                                   SV.soft_vi_ref(R, nxt, log_mu, alpha, 0.9, 3), rtol=1e-12, atol=1e-12)


def test_bad_input_names_the_argument():
    R, nxt, log_mu = _mdp(4, 3, 0)
    cases = [((R[0], nxt, log_mu, 0.1, 0.9, 2), "R"), ((R, nxt[:, :2], log_mu, 0.1, 0.9, 2), "nxt"),
             ((R, nxt.astype(float), log_mu, 0.1, 0.9, 2), "nxt"), ((R, nxt + 10, log_mu, 0.1, 0.9, 2), "nxt"),
             ((R, nxt, log_mu[:2], 0.1, 0.9, 2), "log_mu"), ((R, nxt, log_mu, -1.0, 0.9, 2), "alpha"),
             ((R, nxt, log_mu, 0.1, 1.5, 2), "gamma"), ((R, nxt, log_mu, 0.1, 0.9, 0), "n_iter"),
             ((np.where(R > 0, np.nan, R), nxt, log_mu, 0.1, 0.9, 2), "R")]
    for fn in (SV.soft_vi_ref, SV.soft_vi_njit, SV.soft_vi_cuda):
        for args, name in cases:
            with pytest.raises(ValueError, match=name):
                fn(*args)


def test_benchmark_small_reports_ratios():
    out = SV.benchmark("small", repeat=1)
    assert out["kernel"] == "softvi" and out["ratios"] and out["reference"] in out["seconds"]
    assert max(out["values"].values()) < 1e-10
    with pytest.raises(ValueError, match="size"):
        SV.benchmark("huge")
