"""kernels/springs.py: velocity Verlet for many spring systems, NumPy reference vs @njit vs CUDA (simulator), the
reference against one system written out in plain Python, and the energy band of the chapter."""
import math

import numpy as np
import pytest

from icml25nb.kernels import springs as K


def _one_system(x, v, A, k, dt, steps):
    "Velocity Verlet for one system, particle by particle in plain Python lists."
    n, d = len(x), len(x[0])
    x = [list(r) for r in x]
    v = [list(r) for r in v]
    force = lambda: [[-k * sum(A[i][j] * (x[i][c] - x[j][c]) for j in range(n)) for c in range(d)] for i in range(n)]
    for _ in range(steps):
        f = force()
        v = [[v[i][c] + 0.5 * dt * f[i][c] for c in range(d)] for i in range(n)]
        x = [[x[i][c] + dt * v[i][c] for c in range(d)] for i in range(n)]
        f = force()
        v = [[v[i][c] + 0.5 * dt * f[i][c] for c in range(d)] for i in range(n)]
    return np.array(x), np.array(v)


def test_reference_matches_the_written_out_integrator():
    x0, v0, A = K.random_springs(4, 4, dim=3, seed=1)
    x, v = K.simulate_ref(x0, v0, A, 1.5, 0.02, 30)
    for s in range(4):
        xw, vw = _one_system(x0[s], v0[s], A[s], 1.5, 0.02, 30)
        np.testing.assert_allclose(x[s], xw, rtol=0, atol=1e-12)
        np.testing.assert_allclose(v[s], vw, rtol=0, atol=1e-12)


def test_one_spring_is_a_harmonic_oscillator():
    "Two particles on one spring: the separation oscillates at w = sqrt(2k); small dt follows cos(w t) closely."
    x0 = np.array([[[-0.5, 0.0], [0.5, 0.0]]])
    A = np.array([[[0.0, 1.0], [1.0, 0.0]]])
    x, _ = K.simulate_ref(x0, np.zeros_like(x0), A, 2.0, 1e-3, 1000)
    sep = x[0, 1, 0] - x[0, 0, 0]
    assert abs(sep - math.cos(2.0 * 1.0)) < 1e-5


@pytest.mark.parametrize("S,n,d", [(1, 1, 1), (3, 5, 2), (7, 3, 3)])
def test_njit_equals_reference(S, n, d):
    x0, v0, A = K.random_springs(S, n, dim=d, seed=S + n)
    want = K.simulate_ref(x0, v0, A, 1.0, 0.01, 50)
    got = K.simulate_njit(x0, v0, A, 1.0, 0.01, 50)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    zero = K.simulate_njit(x0, v0, A, 1.0, 0.01, 0)
    np.testing.assert_array_equal(zero[0], x0)


def test_cuda_simulator_equals_reference():
    x0, v0, A = K.random_springs(70, 3, seed=3)  # two blocks of 64 threads, the second partly idle
    want = K.simulate_ref(x0, v0, A, 1.0, 0.05, 4)
    got = K.simulate_cuda(x0, v0, A, 1.0, 0.05, 4)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_energy_stays_in_the_derived_band():
    "Relative energy error <= (w dt)^2 / (4 - (w dt)^2) with w^2 = k n; a 10x larger step leaves the band."
    x0, v0, A = K.random_springs(50, 5, seed=2)
    k, dt, n = 1.0, 0.01, 5
    band = k * n * dt ** 2 / (4 - k * n * dt ** 2)
    e0 = K.springs_energy(x0, v0, A, k)
    x, v = x0, v0
    worst = 0.0
    for _ in range(20):
        x, v = K.simulate_njit(x, v, A, k, dt, 25)
        worst = max(worst, float(np.max(np.abs(K.springs_energy(x, v, A, k) / e0 - 1))))
    assert 0 < worst <= band
    xb, vb = K.simulate_njit(x0, v0, A, k, 0.3, 7)
    assert np.max(np.abs(K.springs_energy(xb, vb, A, k) / e0 - 1)) > band


def test_bad_input():
    x0, v0, A = K.random_springs(2, 3, seed=0)
    with pytest.raises(ValueError, match="x0 must be a 3-D"):
        K.simulate_njit(x0[0], v0, A)
    with pytest.raises(ValueError, match="v0 must have shape"):
        K.simulate_ref(x0, v0[:1], A)
    with pytest.raises(ValueError, match="A must have shape"):
        K.simulate_cuda(x0, v0, A[:, :2, :2])
    bad = A.copy()
    bad[0, 0, 1] = 1 - bad[0, 1, 0]
    with pytest.raises(ValueError, match="A must be symmetric"):
        K.simulate_njit(x0, v0, bad)
    with pytest.raises(ValueError, match="dt must"):
        K.simulate_njit(x0, v0, A, dt=0.0)
    with pytest.raises(ValueError, match="steps must be"):
        K.simulate_njit(x0, v0, A, steps=-1)
    nan = x0.copy()
    nan[1, 1, 1] = np.nan
    with pytest.raises(ValueError, match="x0 must be finite"):
        K.simulate_ref(nan, v0, A)


def test_benchmark_small_reports_every_size():
    res = K.benchmark("small", repeat=1)
    assert set(res) >= {"kernel", "task", "seconds", "reference", "values", "ratios"}
    assert res["reference"] in res["seconds"] and len(res["ratios"]) == 4
    assert "pcl.nbody_springs (data set: draw, simulate, flatten), S=16" in res["seconds"]
    assert all(v < 1e-10 for v in res["values"].values())
