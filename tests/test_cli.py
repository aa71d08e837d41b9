"""The installed `icml25nb` console script, called as a user would (subprocesses)."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = shutil.which("icml25nb", path=str(Path(sys.executable).parent)) or shutil.which("icml25nb")


def cli(*args, cwd=None, progress="0"):
    assert SCRIPT, "the icml25nb console script is not installed"
    return subprocess.run([SCRIPT, *args], capture_output=True, text=True, cwd=cwd, timeout=600,
                          env={**os.environ, "ICML25NB_PROGRESS": progress})


def test_list_shows_registered_chapters():
    r = cli("list")
    assert r.returncode == 0, r.stderr
    assert "precond" in r.stdout and "optim" in r.stdout
    rows = json.loads(cli("list", "--json").stdout)
    assert {"part": "optim", "slug": "precond"}.items() <= next(x for x in rows if x["slug"] == "precond").items()


from test_chapters import CLI_CHAPTER  # its seed-1 contract and determinism are tested here, not in test_chapters


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    "`icml25nb run precond --seed 1` twice, as a user would: (completed processes, output folders)."
    outs = [tmp_path_factory.mktemp("run") / "out" for _ in range(2)]
    # progress on: stderr is a pipe here, as in a CI log, so the bars must be plain lines
    return [cli("run", CLI_CHAPTER, "--seed", "1", "--out", str(o), progress="1") for o in outs], outs


def test_run_writes_result_claims_and_figures(two_runs):
    (r, _), (out, _) = two_runs
    assert r.returncode == 0, r.stdout + r.stderr
    result = json.loads((out / "result.json").read_text())
    claims = json.loads((out / "claims.json").read_text())
    assert result["seed"] == 1 and result["scale"] == "fast"
    assert claims["contract_holds"] is True and claims["problems"] == [], claims["problems"]
    assert (out / "convergence.png").read_bytes()[:4] == b"\x89PNG"
    assert "paper claims" in r.stdout and "checks" in r.stdout and "discriminating" in r.stdout


def test_progress_in_a_pipe_is_a_few_plain_lines(two_runs):
    (r, _), _ = two_runs
    assert "\r" not in r.stderr  # no carriage-return bar updates in a log
    bars = [line for line in r.stderr.splitlines() if "%)" in line]
    assert len(bars) <= 11 * 4, r.stderr  # at most one line per tenth of each of the chapter's bars


def test_the_same_seed_gives_the_same_result(two_runs):
    procs, outs = two_runs
    assert all(p.returncode == 0 for p in procs)
    a, b = (json.loads((o / "result.json").read_text()) for o in outs)
    a.pop("timings", None), b.pop("timings", None)
    assert a == b
    ca, cb = (json.loads((o / "claims.json").read_text()) for o in outs)
    assert ca["claims"] == cb["claims"]


def test_claims_json_rows(two_runs, monkeypatch, capsys):
    # the JSON report of `icml25nb claims`, in process, on the result the CLI run wrote (no third run)
    import icml25nb.cli as cli_mod
    from icml25nb.core import evaluate_claims, get_chapter
    _, (out, _) = two_runs
    result = json.loads((out / "result.json").read_text())
    chapter = get_chapter(CLI_CHAPTER)
    monkeypatch.setattr(cli_mod, "run_chapter", lambda ch, scale, seed: (result, evaluate_claims(ch.claims, result)))
    assert cli_mod.main(["claims", CLI_CHAPTER, "--seed", "1", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)[CLI_CHAPTER]
    assert rep["seed"] == 1 and rep["contract_holds"] is True
    keys = {"id", "kind", "measured", "control_measured", "op", "threshold", "source", "passed", "control_passed",
            "discriminating", "tests", "control_basis", "status", "error"}
    assert all(keys <= set(row) for row in rep["claims"])
    assert [row["id"] for row in rep["claims"]] == [c.id for c in chapter.claims]
    paper = [row for row in rep["claims"] if row["kind"] == "paper"]
    assert len(paper) >= 2
    for row in paper:  # discriminating is a finding, computed the same way for every row: the control measured and failing
        finite = row["control_measured"] is not None and row["control_measured"] not in ("inf", "-inf")
        assert row["discriminating"] == (row["control_passed"] is False and finite), row
        assert row["tests"] in ("paper", "proxy") and row["control_basis"], row
    # text output: both tables, where the controls come from, and the one decision (nothing broken)
    assert cli_mod.main(["claims", CLI_CHAPTER]) == 0
    text = capsys.readouterr().out
    assert "paper claims" in text and "checks" in text and "controls:" in text and "nothing broken in 1 of 1" in text


@pytest.mark.parametrize("args,needle", [
    (("run", "no_such_chapter"), "unknown chapter 'no_such_chapter'"),
    (("run", "precond", "--scale", "enormous"), "invalid choice: 'enormous'"),
    (("run", "precond", "--seed", "-1"), "argument --seed: must be a non-negative integer"),
    (("claims", "precond", "--seed", "abc"), "argument --seed: must be a non-negative integer"),
    (("run", "precond", "--seed", str(2**64)), "argument --seed: must be a non-negative integer below 2**63"),
    (("sweep", "precond", "--seeds", f"0-{2**64}"), "argument --seeds: seeds must be below 2**63"),
    (("claims", "precond", "--all"), "not both"),
    (("bench", "nope"), "unknown kernel 'nope'"),
    (("register", "no_such_chapter"), "unknown chapter 'no_such_chapter'"),
    (("register", "precond"), "already registered"),
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


def test_a_seed_that_does_not_fit_leaves_no_folder_behind(tmp_path):
    """Issue 49: `--seed 2**64` was accepted, the chapter started, failed with 'Overflow when unpacking long long' and
    left an empty --out behind; now it is refused at parse time and nothing is created."""
    r = cli("run", "precond", "--seed", str(2**64), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "below 2**63" in r.stderr and "Traceback" not in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_bench_prints_ratios():
    r = cli("bench", "rng", "--size", "small", "--repeat", "1", "--json")
    assert r.returncode == 0, r.stderr
    (res,) = json.loads(r.stdout)
    assert res["kernel"] == "rng" and res["reference"] in res["seconds"]
    text = cli("bench", "rng", "--size", "small", "--repeat", "1").stdout
    assert "x ref" in text


def test_sweep_refuses_the_committed_file_without_a_registration(tmp_path):
    """The committed sweep file is written only under a registration (issue 45). Since issue 48 every chapter is
    registered, so the refusal is exercised on a root with no git history (the gate runs before any seed)."""
    from icml25nb.sweep import sweep
    with pytest.raises(ValueError, match="will not write the committed sweep file"):
        sweep("mnl", seeds=[0], root=tmp_path)
    assert not any(tmp_path.rglob("*.sweep.json"))
