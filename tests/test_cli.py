"""The installed `icml25nb` console script, called as a user would (subprocesses)."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = shutil.which("icml25nb", path=str(Path(sys.executable).parent)) or shutil.which("icml25nb")


def cli(*args, cwd=None):
    assert SCRIPT, "the icml25nb console script is not installed"
    return subprocess.run([SCRIPT, *args], capture_output=True, text=True, cwd=cwd, timeout=600,
                          env={**os.environ, "ICML25NB_PROGRESS": "0"})


def test_list_shows_registered_chapters():
    r = cli("list")
    assert r.returncode == 0, r.stderr
    assert "precond" in r.stdout and "optim" in r.stdout
    rows = json.loads(cli("list", "--json").stdout)
    assert {"part": "optim", "slug": "precond"}.items() <= next(x for x in rows if x["slug"] == "precond").items()


def test_run_writes_result_claims_and_figures(tmp_path):
    out = tmp_path / "run"
    r = cli("run", "precond", "--seed", "3", "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    result = json.loads((out / "result.json").read_text())
    claims = json.loads((out / "claims.json").read_text())
    assert result["seed"] == 3 and result["scale"] == "fast"
    assert claims["passed"] is True and len(claims["claims"]) >= 3
    assert (out / "convergence.png").read_bytes()[:4] == b"\x89PNG"
    assert "PASS" in r.stdout and "claims pass" in r.stdout


def test_claims_json_for_one_chapter_with_another_seed():
    r = cli("claims", "precond", "--seed", "7", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)["precond"]
    assert rep["seed"] == 7 and rep["passed"] is True
    assert all(row["passed"] for row in rep["claims"])


@pytest.mark.parametrize("args,needle", [
    (("run", "no_such_chapter"), "unknown chapter 'no_such_chapter'"),
    (("run", "precond", "--scale", "enormous"), "invalid choice: 'enormous'"),
    (("run", "precond", "--seed", "-1"), "argument --seed: must be a non-negative integer"),
    (("claims", "precond", "--seed", "abc"), "argument --seed: must be a non-negative integer"),
    (("claims", "precond", "--all"), "not both"),
    (("bench", "nope"), "unknown kernel 'nope'"),
    (("launch",), "invalid choice"),
    ((), "required"),
])
def test_bad_input_is_one_line_and_exit_2(args, needle):
    r = cli(*args)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("icml25nb: error:") and needle in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_unwritable_out_is_reported_before_running(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    r = cli("run", "precond", "--out", str(blocker / "sub"))
    assert r.returncode == 2 and "is not writable" in r.stderr and "Traceback" not in r.stderr
    assert not (blocker.parent / "sub").exists()


def test_bench_prints_ratios():
    r = cli("bench", "rng", "--size", "small", "--repeat", "1", "--json")
    assert r.returncode == 0, r.stderr
    (res,) = json.loads(r.stdout)
    assert res["kernel"] == "rng" and res["reference"] in res["seconds"]
    text = cli("bench", "rng", "--size", "small", "--repeat", "1").stdout
    assert "x ref" in text
