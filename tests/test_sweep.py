"""`icml25nb sweep` on a real chapter: a 2-seed sweep with the local engine and one on a two-node Ray cluster started
here (a head and a worker, one CPU each, token authentication on, joined through `--address` from the command line,
as a user would) write identical verdicts and values, and each seed records the node it ran on; a driver without the
token gets one line naming the fix; resuming runs nothing; the CLI prints rates and `--check` compares seed 0 with the
committed file. Where Ray cannot start a cluster here, the Ray records come from a local Ray cluster in this process
and the two-node tests are skipped, saying why. The swept chapter (tests/test_chapters.py: SWEPT) gets its seed-1
contract check here, from the sweep records."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from icml25nb.core import get_chapter
from icml25nb.sweep import code_version, sweep, sweep_problems

from raycluster import two_node_cluster
from test_chapters import SWEPT


_CLI = "import sys; from icml25nb.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    "A two-node Ray cluster (head + worker, 1 CPU each, token authentication), or the reason it could not start."
    with two_node_cluster(tmp_path_factory.mktemp("ray")) as c:
        yield c


@pytest.fixture(scope="module")
def records(tmp_path_factory, cluster):
    out = tmp_path_factory.mktemp("sweeps")
    local = sweep(SWEPT, "1-2", engine="local", workers=2, out=out / "local")
    if cluster.address:  # the user's way: the CLI, with the token in its environment, joins the cluster
        run = subprocess.run([sys.executable, "-c", _CLI, "sweep", SWEPT, "--seeds", "1-2", "--engine", "ray",
                              "--address", cluster.address, "--out", str(out / "ray")], env=cluster.env,
                             capture_output=True, text=True, timeout=900)
        assert run.returncode == 0, run.stderr[-3000:]
        path = next((out / "ray").glob("*.sweep.json"))
        ray = dict(json.loads(path.read_text()), path=str(path))
    else:
        ray = sweep(SWEPT, "1-2", engine="ray", workers=2, out=out / "ray")
    return local, ray, out


def test_two_node_cluster_ran_seeds_on_both_nodes(records, cluster):
    if not cluster.address:
        pytest.skip(f"no two-node Ray cluster here: {cluster.reason}")
    local, ray, _ = records
    runs = ray["runs"]
    assert sorted(runs) == ["1", "2"]
    assert {r["node"] for r in runs.values()} == set(cluster.nodes)  # one seed on each node (1 CPU each)
    assert all(r["code"] == code_version() for r in runs.values())  # the same code on both nodes as here
    assert all(r["code"] == code_version() and r["node"] == r["host"] for r in local["runs"].values())


def test_a_driver_without_the_token_gets_one_line(cluster, tmp_path):
    if not cluster.address:
        pytest.skip(f"no two-node Ray cluster here: {cluster.reason}")
    env = {k: v for k, v in cluster.env.items() if not k.startswith("RAY_AUTH")}
    run = subprocess.run([sys.executable, "-c", _CLI, "sweep", SWEPT, "--seeds", "1", "--engine", "ray",
                          "--address", cluster.address, "--out", str(tmp_path)], env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "RAY_AUTH_MODE=token" in lines[0] and "refused" in lines[0], run.stderr[-2000:]
    assert not list(tmp_path.glob("*.sweep.json"))  # nothing was written


def test_local_and_ray_engines_agree(records):
    local, ray, _ = records
    assert local["seeds"] == ray["seeds"] == [1, 2] and not local["errors"] and not ray["errors"]
    assert local["claims"] == ray["claims"]  # verdicts, measured and control values, rates, status
    assert all(len(c["passed"]) == 2 for c in local["claims"].values())


def test_swept_chapter_keeps_its_contract_on_seed_1(records):
    # nothing broken on seeds 1 and 2, and their verdicts equal the committed sweep's (as `run_problems` asks of a
    # single run); seed independence needs more than two seeds to say anything, so it is not judged here
    from icml25nb.core import load_sweep, record_verdicts
    local, ray, _ = records
    problems = [p for p in sweep_problems(local) if "seed-independent" not in p]
    assert not problems, problems
    committed = load_sweep(SWEPT)
    for cid, c in local["claims"].items():
        ref = committed["claims"][cid]
        idx = [committed["seeds"].index(s) for s in local["seeds"]]
        for mine, theirs in zip(record_verdicts(c), record_verdicts(ref)):
            assert list(mine) == [theirs[i] for i in idx], (cid, mine, theirs)
    # the same seed gave the same numbers in two processes (the local pool and a Ray worker): determinism
    for cid, c in local["claims"].items():
        assert c["measured"][0] == ray["claims"][cid]["measured"][0], cid


def test_resume_runs_no_seed_again(records):
    local, _, out = records
    path = Path(local["path"])
    before = path.read_text()
    again = sweep(SWEPT, "1-2", engine="local", workers=2, out=out / "local")
    assert again["claims"] == local["claims"]
    assert json.loads(path.read_text())["wall_s"] == json.loads(before)["wall_s"]  # nothing was rerun


def test_sweep_output_has_the_documented_shape(records):
    local, _, _ = records
    rec = json.loads(Path(local["path"]).read_text())
    assert {"chapter", "scale", "seeds", "version", "claims", "wall_s", "errors"} <= set(rec)
    ch = get_chapter(SWEPT)
    assert list(rec["claims"]) == [c.id for c in ch.claims]
    for c in rec["claims"].values():
        assert {"kind", "status", "passed", "measured"} <= set(c)
        if c["kind"] == "paper":
            assert {"control_passed", "control"} <= set(c)


def test_check_compares_seed_0_with_the_committed_file(records, tmp_path, monkeypatch, capsys):
    # no extra run: seed 0 is "run" by replaying the local sweep's seed-1 rows, and the "committed" file is a copy of
    # that sweep relabelled as seeds 0 and 2; then one verdict in the file is flipped
    import icml25nb.sweep as sw
    from icml25nb.cli import main
    local, _, _ = records
    committed = json.loads(Path(local["path"]).read_text())
    committed["seeds"] = [0, 2]
    path = tmp_path / "committed.sweep.json"
    path.write_text(json.dumps(committed))
    replay = sw.runs_from_record(json.loads(Path(local["path"]).read_text()))[1]
    monkeypatch.setattr(sw, "sweep_path", lambda chapter, scale="fast", root=None: path)
    monkeypatch.setattr(sw, "run_seed", lambda slug, scale, seed: {**replay, "seed": seed})
    assert sw.check_against_sweep(SWEPT, seed=0) == []
    assert main(["sweep", SWEPT, "--check"]) == 0
    assert "seed 0 agrees with the committed sweep" in capsys.readouterr().out
    # flip one verdict in the file: verdicts are recomputed from the stored values, so the value is moved across
    # the threshold (to one that passes, or to NaN, which fails)
    from icml25nb.core import record_verdicts
    cid = next(iter(committed["claims"]))
    rec = committed["claims"][cid]
    t = rec["threshold"]
    passing = {">=": t, "<=": t, "==": t, ">": t + 1, "<": t - 1, "!=": t + 1}[rec["op"]]
    rec["measured"][0] = None if record_verdicts(rec)[0][0] else passing
    path.write_text(json.dumps(committed))
    problems = sw.check_against_sweep(SWEPT, seed=0)
    assert len(problems) == 1 and problems[0].startswith(cid), problems
    assert main(["sweep", SWEPT, "--check"]) == 1
    assert "STALE" in capsys.readouterr().out


def test_cli_sweep_prints_rates(records, tmp_path, capsys):
    # resumes the local sweep's results (copied), so nothing runs again
    from icml25nb.cli import main
    local, _, _ = records
    shutil.copy(local["path"], tmp_path / Path(local["path"]).name)
    code = main(["sweep", SWEPT, "--seeds", "1-2", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "2 seeds at scale fast" in out and "holds" in out and f"wrote {tmp_path}" in out


def test_withdrawn_checks_are_left_out_of_the_checks_count():
    "A withdrawn check is shown apart, never as a check that does not hold (adaptive_sketch has two)."
    from icml25nb.sweep import chapter_status, status_cells
    st = chapter_status("adaptive_sketch")
    assert st["checks_withdrawn"] >= 1 and st["checks_holding"] == st["checks"]
    assert status_cells(st)[1].endswith(f"({st['checks_withdrawn']} withdrawn)")
    fake = {**st, "checks": 3, "checks_withdrawn": 0, "checks_holding": 2}
    assert status_cells(fake)[1] == f"2 of 3 hold on all {st['seeds']} seeds"
