"""The repository's `kernels/` folder (installed as `icml25nb.kernels`) must not break the `kernels` package on PyPI
that transformers and bitsandbytes import, for a Python started in the repository root (issue 49)."""
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": "", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=ENV, capture_output=True, text=True,
                          timeout=300)


def test_top_level_kernels_from_repo_root_is_the_installed_package():
    try:
        importlib.metadata.distribution("kernels")  # the PyPI package (transformers' and bitsandbytes' dependency)
        installed = True
    except importlib.metadata.PackageNotFoundError:
        installed = False
    r = _run("import kernels, icml25nb.kernels as ik, icml25nb.kernels.pointmass as pm; "
             "print(kernels.__file__); print(ik.__file__); print(pm.step_ref.__module__)")
    assert r.returncode == 0, r.stderr
    top, ours, mod = r.stdout.split()
    assert Path(ours).resolve() == ROOT / "kernels" / "__init__.py"
    assert mod == "icml25nb.kernels.pointmass"
    if installed:
        assert Path(top).resolve() != ROOT / "kernels" / "__init__.py", top
        assert "site-packages" in top


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers is in the dev extra")
def test_transformers_and_bitsandbytes_import_from_repo_root():
    r = _run("import transformers, kernels\n"
             "from transformers import GPT2Config, GPT2LMHeadModel\n"
             "import icml25nb.tinylm as t\n"
             "m = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=10, n_positions=8,"
             " eos_token_id=0, bos_token_id=0))\n"
             "print(type(t.HFCausalLM(m)).__name__)\n"
             "import bitsandbytes\n")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "HFCausalLM" in r.stdout
    assert "cannot import name" not in r.stderr, r.stderr[-2000:]
    assert str(ROOT / "kernels") not in r.stderr, r.stderr[-2000:]
