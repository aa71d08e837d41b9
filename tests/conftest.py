"""Test session setup: CUDA simulator and one thread per worker, set before numba or torch is imported."""
import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")  # CUDA kernels run on the CPU simulator
os.environ.setdefault("IN_TEST", "1")  # progress bars silent, as under nbdev's runner
# pytest-xdist runs 2 workers on 2 cores: one BLAS / OpenMP / numba / torch thread each.
for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(var, "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "2")  # the pool may use 2 (the scheduling test does), default 1 below
os.environ.setdefault("MPLBACKEND", "Agg")

import numba  # noqa: E402

numba.set_num_threads(1)
try:
    import torch  # noqa: E402

    torch.set_num_threads(1)
except ImportError:
    pass

# property-based (fuzz) suites: a bounded number of examples in CI (they also run under NUMBA_BOUNDSCHECK=1),
# derandomised so that a CI run is repeatable; HYPOTHESIS_PROFILE=deep for a longer hunt by hand.
try:
    from hypothesis import HealthCheck, settings  # noqa: E402

    settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True, print_blob=True,
                              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    settings.register_profile("deep", max_examples=2000, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
except ImportError:  # hypothesis is in the dev extra
    pass
