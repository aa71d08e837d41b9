"""tools/gpu_check.py: one line and exit 0 without a GPU; every kernel PASSes at --small sizes under the simulator."""
import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "gpu_check.py"
KERNELS = ["rng", "contraction", "quant", "mnl", "vmf", "hclust", "mmd", "ista", "patch_score", "amo", "pareto",
           "pointmass", "wl", "makespan", "sketchann", "tanimoto", "springs", "softvi", "kcenter", "segpool"]


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}  # conftest sets it for this process
    env.update({"OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}, **extra)
    return env


def test_without_gpu_or_simulator_prints_one_line_and_exits_0():
    from numba import cuda
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1" and cuda.is_available():  # pragma: no cover
        import pytest
        pytest.skip("a real GPU is present: the script would run the checks")
    res = subprocess.run([sys.executable, str(SCRIPT)], env=_env(NUMBA_ENABLE_CUDASIM="0"), capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 1 and "no CUDA GPU found" in lines[0]


def test_small_sizes_pass_under_the_simulator(tmp_path):
    # every CUDA thread runs in Python under the simulator: tiny sizes, about 25 s on one core
    out = tmp_path / "rows.json"
    # no time budget here: the test must see every kernel checked, however loaded the machine is
    res = subprocess.run([sys.executable, str(SCRIPT), "--small", "--budget", "1e9", "--json", str(out)],
                         env=_env(NUMBA_ENABLE_CUDASIM="1"), capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    for k in KERNELS:
        mine = [ln for ln in lines if ln.split() and ln.split()[0] == k]
        assert mine and all(" PASS " in ln for ln in mine), (k, res.stdout)
    rows = json.loads(out.read_text())["rows"]
    assert {r["kernel"] for r in rows} == set(KERNELS) and all(r["status"] == "PASS" for r in rows)
    assert all(r["njit_s"] > 0 and r["cuda_s"] > 0 for r in rows)
