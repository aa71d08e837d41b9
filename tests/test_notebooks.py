"""Every notebook runs top to bottom under nbdev's test runner (cells flagged `slow` or `notest` are skipped)."""
from pathlib import Path

import pytest

import nbdev.test as nbtest  # imported as a module so that pytest does not collect `test_nb` itself
from nbdev.config import get_config

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p for p in (ROOT / "nbs").rglob("*.ipynb")
                   if not any(part.startswith((".", "_")) for part in p.relative_to(ROOT / "nbs").parts))


def test_notebooks_found():
    names = {p.name for p in NOTEBOOKS}
    assert {"00_core.ipynb", "01_cli.ipynb", "index.ipynb"} <= names


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[str(p.relative_to(ROOT / "nbs")) for p in NOTEBOOKS])
def test_notebook_runs(nb):
    flags = get_config(ROOT).tst_flags
    ok, seconds = nbtest.test_nb(nb, skip_flags=flags.split() if isinstance(flags, str) else flags,
                                 basepath=ROOT, cell_timeout=600)
    assert ok, f"{nb} failed (traceback above)"
