"""kernels/ista.py: batched ISTA, NumPy reference vs @njit vs CUDA (simulator), and against a generic solver."""
import numpy as np
import pytest
from scipy.optimize import minimize

from icml25nb.kernels import ista as I


def _problems(B, N=30, n=60, s=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((B, N, n)) / np.sqrt(n)
    a_star = np.zeros((B, n))
    for b in range(B):
        a_star[b, rng.choice(n, s, replace=False)] = rng.standard_normal(s)
    return X, np.einsum("bij,bj->bi", X, a_star), a_star


def test_reference_njit_cuda_agree():
    X, y, a_star = _problems(5)
    beta1, beta2 = [0.0, 1e-3, 5e-3, 1e-2, 0.0], [0.0, 0.0, 0.1, 0.0, 0.2]
    logs = [0, 1, 7, 50, 200]
    ref = I.ista_batch_ref(X, y, beta1, beta2, None, 200, a_star, logs)
    for g, r in zip(I.ista_batch(X, y, beta1, beta2, None, 200, a_star, logs), ref):
        np.testing.assert_allclose(g, r, rtol=1e-10, atol=1e-12)
    # the simulator runs every CUDA thread in Python: two configurations, a few iterations
    small = (X[1:3, :, :24], y[1:3], beta1[1:3], beta2[1:3], None, 6, a_star[1:3, :24], [0, 2, 6])
    for g, r in zip(I.ista_batch_cuda(*small), I.ista_batch_ref(*small)):
        np.testing.assert_allclose(g, r, rtol=1e-10, atol=1e-12)
    _, train, test = ref
    np.testing.assert_allclose(train[:, 0], (y ** 2).mean(1))  # a = 0 at iteration 0
    np.testing.assert_allclose(test[:, 0], 1.0)


@pytest.mark.parametrize("beta1,beta2", [(0.05, 0.0), (0.02, 0.1)])
def test_converges_to_the_regularised_least_squares_optimum(beta1, beta2):
    X, y, _ = _problems(1, seed=3)
    x, yy = X[0], y[0]
    n = x.shape[1]
    a = I.ista_batch(X, y, beta1, beta2, None, 30_000)[0][0]

    def fun(z):  # a = p - q with p, q >= 0 makes the objective smooth
        d = z[:n] - z[n:]
        r = x @ d - yy
        return 0.5 * r @ r + 0.5 * beta2 * d @ d + beta1 * z.sum()

    def jac(z):
        d = z[:n] - z[n:]
        g = x.T @ (x @ d - yy) + beta2 * d
        return np.concatenate([g + beta1, -g + beta1])

    res = minimize(fun, np.zeros(2 * n), jac=jac, bounds=[(0, None)] * (2 * n), method="L-BFGS-B",
                   options=dict(maxiter=50_000, ftol=1e-15, gtol=1e-12))
    np.testing.assert_allclose(a, res.x[:n] - res.x[n:], atol=1e-5)
    assert (a == 0).sum() > 0  # exact zeros from the proximal step


def test_stable_lr_and_bad_input():
    X, y, a_star = _problems(2)
    lim = I.stable_lr(X, 0.3)
    np.testing.assert_allclose(lim, [2 / (np.linalg.eigvalsh(x.T @ x)[-1] + 0.3) for x in X])
    for kw, msg in [(dict(beta1=-1.0), "non-negative"), (dict(lr=0.0), "lr"), (dict(iters=-1), "iters"),
                    (dict(log_at=[5000]), "log_at")]:
        args = dict(X=X, y=y, beta1=0.0, beta2=0.0, lr=None, iters=10)
        args.update(kw)
        with pytest.raises(ValueError, match=msg):
            I.ista_batch(**args)
    with pytest.raises(ValueError, match="y must"):
        I.ista_batch(X, y[:, :3], 0.0)
    with pytest.raises(ValueError, match="finite"):
        I.ista_batch(np.where(X > 0.2, np.nan, X), y, 0.0, lr=0.1)
    with pytest.raises(ValueError, match="finite"):
        I.stable_lr(np.where(X > 0.2, np.inf, X))


def test_benchmark_small_runs():
    out = I.benchmark("small", repeat=1)
    assert out["njit equals torch"]
    assert all(s > 0 for s in out["seconds"].values())
