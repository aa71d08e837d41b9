"""kernels/ is installed as icml25nb.kernels, from the editable install and from a wheel, and never as `kernels`."""
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _py(code, cwd, pythonpath=None):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_every_package_folder_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "icml25nb").rglob("__init__.py")}
    missing = on_disk - listed
    assert not missing, f"add these packages to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"
    assert "icml25nb.kernels" in listed


def test_editable_install_maps_kernels(tmp_path):
    # transformers 5 depends on Hugging Face's PyPI package `kernels`, so a top-level `kernels` may exist;
    # it must never be this repository's kernels/ folder
    r = _py("import icml25nb.kernels.rng as r, importlib.util as u; print(r.__file__); "
            "s = u.find_spec('kernels'); print(s.origin if s else None)", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    path, origin = r.stdout.split()[:2]
    assert Path(path).resolve() == (ROOT / "kernels" / "rng.py").resolve()
    if origin != "None":
        assert not Path(origin).resolve().is_relative_to((ROOT / "kernels").resolve()), \
            f"this repository's kernels/ is importable as a top-level `kernels` package: {origin}"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    src = tmp_path_factory.mktemp("src")
    shutil.copytree(ROOT, src / "repo", ignore=shutil.ignore_patterns(
        ".venv", ".git", "_docs", "_proc", "_book", "runs", ".cache", "build", "*.egg-info", "__pycache__", "docs"))
    dist = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                        str(dist), str(src / "repo")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    (whl,) = dist.glob("icml25nb-*.whl")
    return whl


def test_wheel_contains_kernels_inside_the_library(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "icml25nb/kernels/rng.py" in names and "icml25nb/kernels/__init__.py" in names
    assert "icml25nb/optim/precond.py" in names
    assert not any(n.startswith("kernels/") for n in names)


def test_wheel_install_imports(wheel, tmp_path):
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
                        str(wheel)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    # PYTHONPATH comes before the editable install's finder, so the wheel's files are the ones imported
    code = "import icml25nb.kernels.rng as r, icml25nb.core as c; print(r.__file__); print(c.__file__)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(target)
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    for line in r.stdout.split():
        assert Path(line).resolve().is_relative_to(target.resolve()), line
