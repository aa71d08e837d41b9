"""Reliability of every file the CLI writes, and of its argument parsing (issue 49), on a toy chapter registered here
(chapter discovery is switched off, so nothing real runs):

- two sweeps of one chapter into one `--out` at the same time (threads, and two `icml25nb sweep` processes) keep
  every seed, and the sweep file parses at every moment;
- an interrupt between the writes of `icml25nb run` (result.json written, claims.json not yet) leaves the previous
  complete run, never a mix; an interrupt inside a sweep's write keeps the file whole;
- seeds and seed ranges are checked at parse time (>= 2**63, negative, reversed, empty, huge ranges), and a run that
  fails before writing leaves no folder behind;
- a corrupt sweep file is named, with the way out (`--rerun` or delete it), in one line with exit code 2;
- other hostile input: `--out` that is a file or holds other files, `--save` that is a folder, a closed stdout pipe;
- hypothesis over the pure functions: `parse_seeds`, `_merge_runs`, `sweep_record` / `runs_from_record` /
  `sweep_problems` / `sweep_table` / `claim_status` counts, `to_jsonable`, `save_result`, `is_sweep_output`.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import icml25nb.cli as cli
import icml25nb.core as core
import icml25nb.sweep as sw
from icml25nb.core import (Chapter, Claim, check_scale, claim_status, file_lock, load_sweep, make_rng, read_json,
                           register, save_figures, save_result, to_jsonable, write_atomic)
from icml25nb.registration import is_sweep_output

from fuzzutil import assert_refused, outcome, same

SLUG = "toy_fuzz_io"
PAUSE = {"s": 0.0}  # seconds each toy seed sleeps (the concurrency tests set it so that two sweeps overlap)


def _toy_experiment(scale: str = "fast", seed: int = 0) -> dict:
    check_scale(scale)
    time.sleep(PAUSE["s"])
    u = float(make_rng(seed).random())
    return {"method": 3 + u, "baseline": 1 + u, "sum": 1.0, "seed": seed}


def _toy_plots(result: dict) -> dict:
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [result["baseline"], result["method"]])
    return {"line": fig}


def _toy_claims():
    return [Claim("beats", "method >= 2", "method", ">=", 2.0, kind="paper", control="baseline", source="derived",
                  tests="paper", control_basis="the toy's baseline"),
            Claim("sum_is_one", "an identity", "sum", "==", 1.0, kind="check")]


# the same toy in a child process: no chapter discovery and no torch import (each would cost seconds)
CHILD = f"""
import sys, time
import icml25nb.core as core
core._discover = lambda: None
core.seed_everything = lambda seed: core.make_rng(seed)  # the toy needs no torch seeding
from icml25nb.core import Chapter, Claim, register, make_rng, check_scale
def exp(scale="fast", seed=0):
    check_scale(scale)
    time.sleep(0.15)
    u = float(make_rng(seed).random())
    return {{"method": 3 + u, "baseline": 1 + u, "sum": 1.0, "seed": seed}}
register(Chapter({SLUG!r}, "optim", "A toy", "nobody", exp, [
    Claim("beats", "method >= 2", "method", ">=", 2.0, kind="paper", control="baseline", source="derived",
          tests="paper", control_basis="the toy's baseline"),
    Claim("sum_is_one", "an identity", "sum", "==", 1.0, kind="check")], level="toy analogue"))
from icml25nb.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def toy():
    mp = pytest.MonkeyPatch()
    mp.setattr(core, "_discover", lambda: None)
    ch = register(Chapter(SLUG, "optim", "A toy", "nobody", _toy_experiment, _toy_claims(), level="toy analogue",
                          plots=_toy_plots))
    yield ch
    core._REGISTRY.pop(SLUG, None)
    mp.undo()


def _main(capsys, *argv):
    "cli.main in this process: (exit code, stdout, stderr)."
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_error(code, err, needle):
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("icml25nb: error:") and needle in lines[0], err
    assert "Traceback" not in err


def _leftovers(folder: Path) -> list[str]:
    "Temporary, lock and staging files a write may have left behind."
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# --- concurrent sweeps into one file -----------------------------------------------------------------------------

def test_concurrent_sweeps_keep_every_seed_and_the_file_always_parses(toy, tmp_path):
    """Before the fix each sweep wrote only its own seeds: the last writer won and seeds 0-2 (or 3-5) were lost."""
    out = tmp_path / "out"
    path = sw.sweep_output(toy, "fast", out)
    seen, bad, stop = [], [], threading.Event()

    def reader():
        while not stop.is_set():
            if path.exists():
                try:
                    seen.append(set(json.loads(path.read_text())["seeds"]))
                except (ValueError, KeyError) as e:  # a partial file
                    bad.append(repr(e))
            time.sleep(0.002)

    PAUSE["s"] = 0.03
    results = {}
    try:
        r = threading.Thread(target=reader)
        r.start()
        workers = [threading.Thread(target=lambda s=s: results.__setitem__(s, sw.sweep(
            toy, s, engine="serial", out=out, root=tmp_path))) for s in ("0-3", "4-7")]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        stop.set()
        r.join()
    finally:
        PAUSE["s"] = 0.0
    assert not bad, bad[:3]
    final = json.loads(path.read_text())
    assert final["seeds"] == list(range(8)) and not final["errors"]
    assert all(len(c["passed"]) == 8 for c in final["claims"].values())
    assert seen and all(a <= b for a, b in zip(seen, seen[1:])), "a write dropped seeds another had written"
    assert max(len(r["seeds"]) for r in results.values()) == 8  # the last to finish reports every seed
    assert _leftovers(out) == []  # no temporary or lock file left


def test_two_cli_sweeps_in_two_processes_keep_every_seed(tmp_path):
    """`icml25nb sweep SLUG --seeds 0-2` and `--seeds 3-5` into one --out at once: both exit 0 and all six seeds are
    in the file (before: both exited 0 and one half was lost)."""
    script = tmp_path / "toy_cli.py"
    script.write_text(CHILD)
    out = tmp_path / "out"
    env = {**os.environ, "ICML25NB_PROGRESS": "0", "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, str(script), "sweep", SLUG, "--seeds", seeds, "--out", str(out),
                               "--engine", "serial"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env, cwd=tmp_path)
             for seeds in ("0-2", "3-5")]
    for p in procs:
        stdout, stderr = p.communicate(timeout=120)
        assert p.returncode == 0, stderr
    rec = json.loads((out / f"{SLUG}.sweep.json").read_text())
    assert rec["seeds"] == [0, 1, 2, 3, 4, 5] and not rec["errors"]
    assert _leftovers(out) == []


def test_rerun_keeps_the_seeds_it_does_not_rerun(toy, tmp_path):
    """`--rerun --seeds 1` on a file with seeds 0-3 reruns seed 1 and keeps 0, 2, 3 (before: the file kept seed 1 only)."""
    first = sw.sweep(toy, "0-3", engine="serial", out=tmp_path, root=tmp_path)
    again = sw.sweep(toy, "1", engine="serial", out=tmp_path, root=tmp_path, resume=False)
    assert again["seeds"] == [0, 1, 2, 3] and again["claims"] == first["claims"]


def test_an_interrupted_sweep_write_keeps_the_file_whole(toy, tmp_path, monkeypatch):
    """Ctrl-C inside the write of seed 2: the file still parses, with the seeds done, and no temporary is left (a guard:
    the unique temporary name was already there; the lock and merge around it are new)."""
    sw.sweep(toy, "0", engine="serial", out=tmp_path, root=tmp_path)
    real, calls = sw._write_json, []

    def interrupted(path, record):
        calls.append(1)
        if len(calls) == 2:
            write_atomic(path, lambda f: (f.write(b'{"chapter": "half'), (_ for _ in ()).throw(KeyboardInterrupt)))
        real(path, record)

    monkeypatch.setattr(sw, "_write_json", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sw.sweep(toy, "0-3", engine="serial", out=tmp_path, root=tmp_path)
    rec = json.loads(sw.sweep_output(toy, "fast", tmp_path).read_text())
    assert {0, 1} <= set(rec["seeds"]) and 3 not in rec["seeds"]  # seed 2 is kept too: it is written once more
    assert _leftovers(tmp_path) == []


# --- icml25nb run: never a mix -----------------------------------------------------------------------------------

def _run_files(out: Path) -> tuple[int, int]:
    "The seeds that result.json and claims.json of a run folder come from."
    return json.loads((out / "result.json").read_text())["seed"], json.loads((out / "claims.json").read_text())["seed"]


@pytest.mark.parametrize("where", ["claims.json", "figures", "rename"])
def test_an_interrupt_between_run_writes_leaves_the_previous_run_whole(toy, tmp_path, monkeypatch, capsys, where):
    """Before the fix, `run --seed 2` interrupted after result.json left result.json of seed 2 beside claims.json of
    seed 1, with nothing to say so. Now the old run stays, whole, and no partial folder is left behind."""
    out = tmp_path / "run"
    code, _, err = _main(capsys, "run", SLUG, "--seed", 1, "--out", out)
    assert code == 0, err
    assert _run_files(out) == (1, 1) and (out / "line.png").exists()
    if where == "claims.json":
        real = cli.save_result
        monkeypatch.setattr(cli, "save_result", lambda obj, path: (
            (_ for _ in ()).throw(KeyboardInterrupt) if Path(path).name == "claims.json" else real(obj, path)))
    elif where == "figures":
        monkeypatch.setattr(cli, "save_figures", lambda figs, folder: (_ for _ in ()).throw(KeyboardInterrupt))
    else:  # the moment the new folder is moved into place: the interrupt waits for both renames
        real_rename = os.rename

        def rename(a, b):
            if Path(a) == out.resolve():
                import signal
                os.kill(os.getpid(), signal.SIGINT)
            return real_rename(a, b)

        monkeypatch.setattr(cli.os, "rename", rename)
    code, _, err = _main(capsys, "run", SLUG, "--seed", 2, "--out", out)
    assert code == 130, err
    if where == "rename":  # the new run was moved in whole before the interrupt took effect
        assert _run_files(out) == (2, 2)
    else:
        assert _run_files(out) == (1, 1) and (out / "line.png").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no staging, old or lock folder left


def _read_at(dir_fd: int, name: str) -> bytes:
    "The bytes of file `name` in the open folder `dir_fd`."
    fd = os.open(name, os.O_RDONLY, dir_fd=dir_fd)
    try:
        return os.read(fd, 1 << 20)
    finally:
        os.close(fd)


def test_a_reader_never_sees_a_mix_while_runs_replace_each_other(toy, tmp_path, capsys):
    """A reader that pins the folder (one directory handle for both files) while runs of seeds 1 and 2 replace each
    other never finds result.json of one seed beside claims.json of the other (a guard on the folder swap; the
    interrupt test above is the one that fails on files rewritten in place)."""
    out = tmp_path / "run"
    mixes, stop = [], threading.Event()

    def reader():
        while not stop.is_set():
            try:  # pin one folder: both files are read from the same directory handle
                fd = os.open(out, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                a, b = (json.loads(_read_at(fd, name))["seed"] for name in ("result.json", "claims.json"))
                if a != b:
                    mixes.append((a, b))
            except (FileNotFoundError, ValueError):
                pass  # the folder was replaced and removed while we read: a retry, never a mix
            finally:
                os.close(fd)

    r = threading.Thread(target=reader)
    r.start()
    try:
        for seed in (1, 2, 1, 2):
            assert cli.main(["run", SLUG, "--seed", str(seed), "--out", str(out)]) == 0
    finally:
        stop.set()
        r.join()
    capsys.readouterr()
    assert not mixes, mixes[:3]
    assert _run_files(out) == (2, 2)


def test_a_failed_run_leaves_no_folder_behind(toy, tmp_path, capsys, monkeypatch):
    out = tmp_path / "deep" / "run"
    monkeypatch.setattr(toy, "experiment", lambda scale="fast", seed=0: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        cli.main(["run", SLUG, "--out", str(out)])
    assert list(tmp_path.iterdir()) == []


def test_run_refuses_folders_it_would_clobber(toy, tmp_path, capsys):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    code, _, err = _main(capsys, "run", SLUG, "--out", tmp_path / "mine")
    _one_line_error(code, err, "holds files that are not a run's (notes.txt)")
    (tmp_path / "pics").mkdir()
    (tmp_path / "pics" / "holiday.png").write_bytes(b"\x89PNG")
    _one_line_error(*_main(capsys, "run", SLUG, "--out", tmp_path / "pics")[::2], "holds PNG files but no run")
    (tmp_path / "file").write_text("x")
    _one_line_error(*_main(capsys, "run", SLUG, "--out", tmp_path / "file")[::2], "is a file, not a folder")
    _one_line_error(*_main(capsys, "run", SLUG, "--out", tmp_path / "file" / "sub")[::2], "is not writable")
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path / "mine")
        _one_line_error(*_main(capsys, "run", SLUG, "--out", ".")[::2], "is the current folder")
        _one_line_error(*_main(capsys, "run", SLUG, "--out", "..")[::2], "is the current folder or one above it")
    finally:
        os.chdir(cwd)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "mine", "pics"]


def test_a_failing_plot_costs_the_figures_not_the_results(toy, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(toy, "plots", lambda result: 1 / 0)
    code, out, _ = _main(capsys, "run", SLUG, "--out", tmp_path / "run")
    assert code == 1 and "broken: figures: ZeroDivisionError" in out
    assert _run_files(tmp_path / "run") == (0, 0)


# --- parse-time checks -------------------------------------------------------------------------------------------

BAD_SEEDS = [str(2**64), str(2**63), "-1", "1e3", "0x10", "", " ", "1.5", "nan", "9" * 5000, "3-4"]
BAD_SEED_RANGES = ["0-2**64", f"0-{2**64}", f"{2**63}", "-1", "-1-3", "3-1", "", ",", "1,,2", "0--1", "a-b", "1.5",
                   "0-99999999999", "0-4,0-99999", "٣", "+3", "9" * 5000, "0-" + "9" * 30]


@pytest.mark.parametrize("value", BAD_SEEDS, ids=lambda v: v[:24] or "empty")
def test_bad_seed_is_refused_at_parse_time_and_leaves_nothing(toy, tmp_path, capsys, monkeypatch, value):
    """Before the fix `--seed 2**64` was accepted, the chapter started, failed with 'Overflow when unpacking long long',
    and an empty --out was left behind."""
    monkeypatch.setattr(toy, "experiment", lambda *a, **k: pytest.fail("the chapter must not start"))
    out = tmp_path / "run"
    code, _, err = _main(capsys, "run", SLUG, "--seed", value, "--out", out)
    _one_line_error(code, err, "argument --seed: must be a non-negative integer")
    assert len(err) < 300
    code, _, err = _main(capsys, "claims", SLUG, "--seed", value)
    _one_line_error(code, err, "argument --seed:")
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", BAD_SEED_RANGES, ids=lambda v: v[:24] or "empty")
def test_bad_seed_range_is_refused_at_parse_time(toy, tmp_path, capsys, monkeypatch, value):
    """Before the fix `--seeds 0-10000000000000` built the list first: MemoryError and a traceback."""
    monkeypatch.setattr(toy, "experiment", lambda *a, **k: pytest.fail("the chapter must not start"))
    code, _, err = _main(capsys, "sweep", SLUG, "--seeds", value, "--out", tmp_path / "out")
    _one_line_error(code, err, "argument --seeds")
    assert len(err) < 300 and list(tmp_path.iterdir()) == []


def test_the_largest_seed_is_accepted():
    args = cli.build_parser().parse_args(["run", SLUG, "--seed", str(2**63 - 1)])
    assert args.seed == 2**63 - 1
    assert cli.build_parser().parse_args(["sweep", SLUG, "--seeds", f"{2**63 - 2}-{2**63 - 1}"]).seeds == \
        [2**63 - 2, 2**63 - 1]


@pytest.mark.parametrize("argv,needle", [
    (["run", SLUG, "--out", ""], "argument --out: must name a folder"),
    (["claims", SLUG, "--save", " "], "argument --save: must name a file"),
    (["sweep", SLUG, "--out", ""], "argument --out: must name a folder"),
    (["bench", "--repeat", "1000000000"], "argument --repeat: must be an integer in [1, 1000]"),
    (["bench", "--repeat", "0"], "argument --repeat"),
    (["sweep", SLUG, "--workers", "-2"], "argument --workers: must be a positive integer"),
    (["run", SLUG, "--scale", "../x"], "invalid choice"),
    (["run", "../../etc"], "unknown chapter '../../etc'"),
    (["run", ""], "unknown chapter ''"),
])
def test_other_bad_arguments_are_one_line(toy, tmp_path, capsys, argv, needle):
    _one_line_error(*_main(capsys, *argv)[::2], needle)


def test_save_that_is_a_folder_is_refused_before_running(toy, tmp_path, capsys, monkeypatch):
    """Before the fix: IsADirectoryError and a traceback after every chapter had run."""
    monkeypatch.setattr(toy, "experiment", lambda *a, **k: pytest.fail("the chapter must not start"))
    _one_line_error(*_main(capsys, "claims", SLUG, "--save", tmp_path)[::2], "is a folder; give a file name")
    (tmp_path / "f").write_text("x")
    _one_line_error(*_main(capsys, "claims", SLUG, "--save", tmp_path / "f" / "r.json")[::2], "is not writable")


def test_claims_save_writes_atomically_and_creates_its_folder(toy, tmp_path, capsys):
    target = tmp_path / "book" / "claims.json"
    code, _, err = _main(capsys, "claims", SLUG, "--save", target)
    assert code == 0, err
    assert json.loads(target.read_text())[SLUG]["contract_holds"] is True
    assert _leftovers(target.parent) == []


def test_sweep_out_that_is_a_file_and_sweep_file_that_is_a_folder(toy, tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    _one_line_error(*_main(capsys, "sweep", SLUG, "--seeds", "0", "--out", tmp_path / "f")[::2], "is a file, not a folder")
    (tmp_path / "o" / f"{SLUG}.sweep.json").mkdir(parents=True)
    _one_line_error(*_main(capsys, "sweep", SLUG, "--seeds", "0", "--out", tmp_path / "o", "--engine", "serial")[::2],
                    "is a folder, not a file")


def test_a_closed_stdout_pipe_is_quiet(toy, capsys, monkeypatch):
    """Before the fix `icml25nb list --json | head -c1` (a reader that goes away) ended in a BrokenPipeError traceback."""
    class Closed:
        def write(self, s):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

        def fileno(self):
            raise ValueError("no file")

    monkeypatch.setattr(sys, "stdout", Closed())
    assert cli.main(["list", "--json"]) == 141
    monkeypatch.undo()
    assert "Traceback" not in capsys.readouterr().err


def test_a_disk_error_is_one_line_exit_1(toy, tmp_path, capsys, monkeypatch):
    def full(*a, **k):
        raise OSError(28, "No space left on device", str(tmp_path / "x"))
    monkeypatch.setattr(cli, "save_result", full)
    code, _, err = _main(capsys, "run", SLUG, "--out", tmp_path / "run")
    assert code == 1 and err.strip().splitlines()[-1] == f"icml25nb: error: No space left on device: {tmp_path / 'x'}"
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# --- corrupt files -----------------------------------------------------------------------------------------------

CORRUPT = {"truncated": '{"chapter": "x", "seeds": [0, 1', "unterminated": '{"a": "x', "binary": b"\xff\xfe\x00",
           "a list": "[]", "claims not a dict": '{"chapter": "toy_fuzz_io", "scale": "fast", "claims": 3, "seeds": []}',
           "wrong shapes": json.dumps({"chapter": SLUG, "scale": "fast", "seeds": [0, 1], "claims": {
               "beats": {"kind": "paper", "op": ">=", "threshold": 2.0, "measured": [1.0]}, "sum_is_one": {}},
               "spec_sha256": None, "commit": None, "dirty": None})}


@pytest.mark.parametrize("content", list(CORRUPT.values()), ids=list(CORRUPT))
def test_a_corrupt_sweep_file_is_named_with_a_way_out(toy, tmp_path, capsys, content):
    """Before the fix: 'Unterminated string starting at ...' without the file's name or a way out."""
    path = tmp_path / f"{SLUG}.sweep.json"
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    code, _, err = _main(capsys, "sweep", SLUG, "--seeds", "0", "--out", tmp_path, "--engine", "serial")
    _one_line_error(code, err, str(path))
    assert "--rerun" in err and "delete it" in err
    code, _, err = _main(capsys, "sweep", SLUG, "--seeds", "0", "--out", tmp_path, "--engine", "serial", "--rerun")
    assert code == 0, err
    assert json.loads(path.read_text())["seeds"] == [0]


@pytest.fixture(scope="module")
def stored(toy, tmp_path_factory):
    "A real sweep file of the toy (seeds 0-2, one crashed seed added), its folder and its provenance."
    d = tmp_path_factory.mktemp("stored")
    rec = json.loads(Path(sw.sweep(toy, "0-2", engine="serial", out=d, root=d)["path"]).read_text())
    rec["errors"] = {"5": "RuntimeError: boom"}
    return rec, d, sw.sweep_provenance(toy, d)


def _paths(x, prefix=()):
    "Every place in a JSON value, as a tuple of keys."
    yield prefix
    items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
    for k, v in items:
        yield from _paths(v, prefix + (k,))


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 2**64), st.floats(allow_nan=False), st.text(max_size=3),
              st.sampled_from(["inf", "-inf", "0", "paper", ">=", "fast"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=6)


@given(st.data())
def test_a_damaged_sweep_file_is_kept_or_refused_by_name(toy, stored, data):
    """Any one value of a real sweep file replaced or removed: reading it back for a resume gives runs that make a
    valid record, or a one-line refusal that names the file and the way out; a write merges or overwrites, never crashes."""
    rec, d, prov = stored
    rec = json.loads(json.dumps(rec))
    where = data.draw(st.sampled_from(list(_paths(rec))[1:]))
    node = rec
    for k in where[:-1]:
        node = node[k]
    if data.draw(st.booleans()) and isinstance(node, dict):
        del node[where[-1]]
    else:
        node[where[-1]] = data.draw(json_values)
    path = d / f"{SLUG}.sweep.json"
    write_atomic(path, json.dumps(rec))
    kind, runs = outcome(sw._stored_runs, path, toy, "fast", prov, strict=True)
    if kind == "refused":
        assert str(path) in str(runs) and "--rerun" in str(runs)
        runs = {}
    assert same(sw._stored_runs(path, toy, "fast", prov, strict=False), runs)
    merged = sw._merge_runs(runs, {9: {"seed": 9, "wall_s": 0.1, "error": "x"}})
    json.dumps(sw.sweep_record(toy, "fast", merged, version="t", provenance=prov), allow_nan=False)


def test_a_corrupt_committed_sweep_file_is_named(tmp_path):
    ch = Chapter("toy_fuzz_io_nb", "optim", "A toy", "nobody", _toy_experiment, _toy_claims(),
                 notebook="optim/99_toy.ipynb")
    path = tmp_path / "nbs" / "optim" / "99_toy.sweep.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"seeds": [0, 1], "claims": {"a": ')
    err = assert_refused(load_sweep, ch, root=tmp_path)
    assert str(path) in str(err) and "--rerun" in str(err) and "git checkout" in str(err)
    path.write_text("[1, 2]")
    assert "is not a sweep record" in str(assert_refused(load_sweep, ch, root=tmp_path))


def test_read_json_names_the_file(tmp_path):
    p = tmp_path / "x.json"
    assert "cannot read thing" in str(assert_refused(read_json, p, "thing"))
    p.write_bytes(b"\x80abc")
    assert "not UTF-8" in str(assert_refused(read_json, p, "thing", "delete it"))
    p.write_text("{")
    err = str(assert_refused(read_json, p, "thing", "delete it"))
    assert err.startswith(f"thing {p} is corrupt") and err.endswith("; delete it")


# --- the write primitives ----------------------------------------------------------------------------------------

def test_write_atomic_under_many_threads_always_parses(tmp_path):
    path = tmp_path / "x.json"
    bad, stop = [], threading.Event()

    def writer(k):
        for i in range(30):
            write_atomic(path, json.dumps({"k": k, "i": i, "pad": "x" * 5000}))

    def reader():
        while not stop.is_set():
            try:
                json.loads(path.read_text())
            except FileNotFoundError:
                pass
            except ValueError as e:
                bad.append(e)

    r = threading.Thread(target=reader)
    r.start()
    ws = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for w in ws:
        w.start()
    for w in ws:
        w.join()
    stop.set()
    r.join()
    assert not bad and _leftovers(tmp_path) == []
    assert (path.stat().st_mode & 0o777) == 0o666 & ~core._umask()  # not mkstemp's 0600


def test_write_atomic_keeps_links_devices_and_long_names(tmp_path):
    """A link stays a link (the file it points to is replaced); /dev/null stays a device (as root, a rename onto it
    would have replaced the device node: `claims --save /dev/stdout` must print, not clobber); a name near the
    255-byte limit still gets its temporary and lock files beside it."""
    import stat
    real = tmp_path / "real.json"
    real.write_text("0")
    (tmp_path / "link.json").symlink_to(real)
    write_atomic(tmp_path / "link.json", "1")
    assert (tmp_path / "link.json").is_symlink() and real.read_text() == "1"
    write_atomic(Path(os.devnull), "ignored")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    assert "Is a directory" in str(outcome_of(lambda: write_atomic(tmp_path, "x")))
    long = tmp_path / ("é" * 120 + ".json")  # 241 bytes
    with file_lock(long):
        write_atomic(long, "2")
    assert long.read_text() == "2" and sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["real.json", "link.json", long.name])


def test_claims_save_to_dev_stdout_prints(toy, tmp_path, capsys):
    """`--save /dev/stdout` with stdout sent to a file: the JSON goes into that stream (a rename onto the file behind
    /proc/self/fd/1 would have left the rest of the output in an unlinked file)."""
    log = tmp_path / "log.txt"
    r = subprocess.run([sys.executable, "-c", CHILD, "claims", SLUG, "--save", "/dev/stdout"],
                       stdout=open(log, "w"), stderr=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    text = log.read_text()
    assert "paper claims" in text and sorted(p.name for p in tmp_path.iterdir()) == ["log.txt"]
    assert os.path.islink("/dev/stdout") or not os.path.isfile("/dev/stdout")  # the link was not replaced


def test_run_into_a_folder_with_a_long_name(toy, tmp_path, capsys):
    out = tmp_path / ("r" * 250)
    for seed in (1, 2):
        code, _, err = _main(capsys, "run", SLUG, "--seed", seed, "--out", out)
        assert code == 0, err
    assert _run_files(out) == (2, 2) and sorted(p.name for p in tmp_path.iterdir()) == [out.name]


def test_file_lock_serialises_read_modify_write(tmp_path):
    path = tmp_path / "counter.json"
    write_atomic(path, "0")

    def bump():
        for _ in range(25):
            with file_lock(path):
                n = json.loads(path.read_text())
                write_atomic(path, str(n + 1))

    ts = [threading.Thread(target=bump) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert json.loads(path.read_text()) == 100 and _leftovers(tmp_path) == []


def test_file_lock_times_out_with_the_files_name(tmp_path):
    path = tmp_path / "x.json"
    with file_lock(path):
        done = []
        t = threading.Thread(target=lambda: done.append(outcome_of(lambda: file_lock(path, timeout=0.2).__enter__())))
        t.start()
        t.join()
    assert isinstance(done[0], TimeoutError) and "x.json" in str(done[0])


def outcome_of(fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001
        return e


def test_save_figures_checks_names_and_closes_every_figure(tmp_path):
    import matplotlib.pyplot as plt
    plt.close("all")
    for name in ("../up", "", ".hidden", "a/b", "nul\0"):
        assert "figures" in str(assert_refused(save_figures, {"ok": plt.figure(), name: plt.figure()}, tmp_path))
    assert "figures" in str(assert_refused(save_figures, {3: plt.figure()}, tmp_path))
    assert "figures['x'] must be a matplotlib Figure" in str(assert_refused(save_figures, {"x": "fig"}, tmp_path))
    assert "figures must be a dict" in str(assert_refused(save_figures, [plt.figure()], tmp_path))
    plt.close("all")
    assert "dpi" in str(assert_refused(save_figures, {"x": plt.figure()}, tmp_path, dpi=float("nan")))
    assert plt.get_fignums() == [] and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name,is_output", [
    ("nbs/optim/01_precond.sweep.json", True), ("01_precond.sweep-full.json", True),
    (".01_precond.sweep.json.lock", True), (".01_precond.sweep.json.k2j3_x.tmp", True),
    (".01_precond.sweep-full.json.abc.tmp", True), ("01_precond.ipynb", False), (".01_precond.ipynb.lock", False),
    (".01_precond.register.json.abc.tmp", False), ("01_precond.sweep.json.bak", False), (".lock", False),
    (".tmp", False)])
def test_sweep_temporaries_are_sweep_outputs(name, is_output):
    "The write's temporary and lock files beside a committed sweep file do not make the tree dirty."
    assert is_sweep_output(name) is is_output


# --- hypothesis: the pure functions ------------------------------------------------------------------------------

spans = st.lists(st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 40)), min_size=1, max_size=5)
space = st.sampled_from(["", " ", "  "])


@given(spans, space, space)
def test_parse_seeds_of_written_ranges(parts, a, b):
    parts = [(lo, min(lo + width, 2**63 - 1)) for lo, width in parts]
    text = ",".join(f"{a}{lo}{a}-{b}{hi}{b}" if lo != hi or not a else f"{b}{lo}{a}" for lo, hi in parts)
    want = sorted({s for lo, hi in parts for s in range(lo, hi + 1)})
    assert sw.parse_seeds(text) == want


@given(st.text(alphabet="0123456789-, +e.x\t٣", max_size=30))
def test_parse_seeds_of_any_text_is_a_clean_answer_or_refused(text):
    kind, val = outcome(sw.parse_seeds, text)
    if kind == "ok":
        assert val == sorted(set(val)) and val and all(0 <= s < 2**63 for s in val) and len(val) <= sw.MAX_SEEDS
        assert sw.parse_seeds(",".join(map(str, val))) == val  # the canonical form reads back the same
        assert all(ch in "0123456789-, \t" for ch in text)
    else:
        assert "seeds" in str(val)


@given(st.lists(st.one_of(st.integers(-3, 2**64), st.booleans(), st.floats(), st.none(), st.text(max_size=3),
                          st.integers(0, 50).map(np.int64)), max_size=6))
def test_parse_seeds_of_lists(items):
    valid = all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) and 0 <= x < 2**63 for x in items)
    kind, val = outcome(sw.parse_seeds, items)
    if valid and items:
        assert kind == "ok" and val == sorted({int(x) for x in items})
        assert all(type(s) is int for s in val)
    else:
        assert kind == "refused" and "seeds" in str(val)
    assert outcome(sw.parse_seeds, tuple(items))[0] == kind


@given(st.one_of(st.floats(), st.none(), st.booleans(), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2)))
def test_parse_seeds_of_other_types_is_refused(x):
    assert "seeds" in str(assert_refused(sw.parse_seeds, x))


run_of = st.one_of(st.just("rows"), st.just("error"))


@given(st.dictionaries(st.integers(0, 20), run_of, max_size=10), st.dictionaries(st.integers(0, 20), run_of, max_size=10))
def test_merge_runs(stored_kinds, our_kinds):
    mk = lambda who, s, kind: {"seed": s, "who": who, **({"rows": []} if kind == "rows" else {"error": "boom"})}
    stored = {s: mk("file", s, k) for s, k in stored_kinds.items()}
    ours = {s: mk("ours", s, k) for s, k in our_kinds.items()}
    merged = sw._merge_runs(stored, ours)
    assert set(merged) == set(stored) | set(ours)
    for s, run in merged.items():
        if s in ours and ("rows" in ours[s] or "rows" not in stored.get(s, {})):
            assert run is ours[s]
        else:
            assert run is stored[s]
        assert ("rows" in run) == ("rows" in ours.get(s, {}) or "rows" in stored.get(s, {}))
    assert stored == {s: mk("file", s, k) for s, k in stored_kinds.items()}  # the inputs are not changed


values = st.one_of(st.floats(-10, 10), st.just(float("nan")), st.just(float("inf")), st.just(-float("inf")))


@settings(max_examples=15)
@given(st.lists(st.one_of(st.tuples(values, values, st.sampled_from([1.0, 0.0, float("nan")])), st.none()),
                min_size=1, max_size=16))
def test_sweep_record_rates_statuses_and_round_trip(toy, per_seed):
    """Random per-seed values (None: the seed crashed): rates and statuses follow the rules, the record is strict JSON,
    and runs_from_record gives back the same record."""
    runs = {}
    for s, v in enumerate(per_seed):
        if v is None:
            runs[s] = {"seed": s, "wall_s": 0.1, "error": "RuntimeError: boom"}
            continue
        res = {"method": v[0], "baseline": v[1], "sum": v[2]}
        rows = core.evaluate_claims(toy.claims, res)
        runs[s] = {"seed": s, "wall_s": 0.1, "rows": to_jsonable([r.to_dict() for r in rows])}
    rec = sw.sweep_record(toy, "fast", runs, version="test", provenance={"commit": None, "dirty": None})
    text = json.dumps(rec, allow_nan=False)  # strictly valid JSON: NaN is null, infinities are strings
    ok = [s for s, v in enumerate(per_seed) if v is not None]
    assert rec["seeds"] == ok and sorted(map(int, rec["errors"])) == [s for s in runs if s not in ok]
    for cid, c in rec["claims"].items():
        passed, cpassed = core.record_verdicts(c)
        assert len(passed) == len(ok)
        assert c["rate"] == (sum(passed) / len(passed) if passed else None)
        claim = next(x for x in toy.claims if x.id == cid)
        assert c["status"] == core.record_claim_status(c, claim)
        if claim.kind == "check":
            assert c["status"] == ("not run" if not ok else "passes" if all(passed) else "fails")
    problems = sw.sweep_problems(rec)
    assert sum(p.startswith("seed ") for p in problems) == len(rec["errors"])
    assert any(p.startswith("sum_is_one") for p in problems) == (rec["claims"]["sum_is_one"]["status"] == "fails")
    assert sw.sweep_table(rec).startswith(f"{SLUG}: {len(ok)} seeds")
    back = sw.sweep_record(toy, "fast", {**sw.runs_from_record(json.loads(text)),
                                         **{int(s): {"error": e} for s, e in rec["errors"].items()}},
                           version="test", provenance={"commit": None, "dirty": None})
    assert json.dumps(back, allow_nan=False) == text


@given(st.lists(st.booleans(), max_size=20), st.lists(st.booleans(), max_size=20), st.booleans(), st.booleans())
def test_claim_status_follows_the_documented_rules(passed, cpassed, withdrawn, constant):
    cpassed = (cpassed + [False] * len(passed))[:len(passed)]
    n, k, kc = len(passed), sum(passed), sum(cpassed)
    status = claim_status("paper", passed, cpassed, [0.0] * n, withdrawn, constant)
    if n == 0:
        assert status == "not run"
    elif withdrawn:
        assert status == "withdrawn"
    elif constant:
        assert status == "seed-independent"
    elif k == 0:
        assert status == "not reproduced"
    elif 16 * kc > 2 * n:
        assert status == "not discriminating"
    else:
        assert status == ("reproduced" if 16 * k >= 14 * n else "partly")
    check = claim_status("check", passed, withdrawn=withdrawn)
    assert check == ("not run" if n == 0 else "withdrawn" if withdrawn else "passes" if k == n else "fails")


scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(), st.text(max_size=5),
                    st.floats(width=32).map(np.float32), st.integers(-5, 5).map(np.int64), st.booleans().map(np.bool_))
nested = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.lists(inner, max_size=3).map(tuple),
    st.dictionaries(st.one_of(st.text(alphabet="abc", max_size=3), st.integers(0, 9)), inner, max_size=4),
    st.lists(st.floats(), max_size=4).map(np.array), st.frozensets(st.integers(0, 9), max_size=4)), max_leaves=20)


def _same_json(a, b) -> bool:
    "`to_jsonable`'s contract, checked independently: floats become numbers, null (NaN) or 'inf'/'-inf'."
    if isinstance(b, (np.ndarray,)):
        b = b.tolist()
    if isinstance(b, dict):
        return isinstance(a, dict) and list(a) == [str(k) for k in b] and all(_same_json(a[str(k)], v) for k, v in b.items())
    if isinstance(b, (frozenset, set)):
        return a == sorted(b)
    if isinstance(b, (list, tuple)):
        return isinstance(a, list) and len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b))
    if isinstance(b, (bool, np.bool_)):
        return a is bool(b)
    if isinstance(b, (float, np.floating)):
        f = float(b)
        return a is None if math.isnan(f) else a == ("inf" if f > 0 else "-inf") if math.isinf(f) else a == f
    if isinstance(b, (int, np.integer)):
        return type(a) is int and a == int(b)
    return a == b


@given(nested)
def test_to_jsonable_gives_strict_json(obj):
    j = to_jsonable(obj)
    json.dumps(j, allow_nan=False)
    assert _same_json(j, obj)


@settings(max_examples=10)
@given(nested)
def test_save_result_reads_back(tmp_path_factory, obj):
    path = tmp_path_factory.mktemp("save") / "r.json"
    save_result({"x": obj}, path)
    assert json.loads(path.read_text()) == {"x": to_jsonable(obj)}
    assert _leftovers(path.parent) == []


@given(st.one_of(st.complex_numbers(allow_nan=False, min_magnitude=1), st.binary(max_size=3),
                 st.builds(object), st.just(np.array([1 + 2j]))))
def test_to_jsonable_refuses_what_json_cannot_hold_and_says_where(bad):
    err = assert_refused(to_jsonable, {"run": [1, {"x": bad}]})
    assert "value['run'][1]['x']" in str(err) and "cannot be written as JSON" in str(err)


@pytest.mark.parametrize("address", ["127.0.0.1:1", "ray://127.0.0.1:1", "nohost", "host:99999", "", 5])
def test_sweep_refuses_a_ray_address_where_nothing_listens(toy, address):
    "`sweep --engine ray --address bogus:1` hung (Ray retries for minutes): refused in seconds, naming address."
    import time
    from icml25nb.sweep import sweep as _sweep
    t0 = time.monotonic()
    assert_refused(_sweep, toy, seeds=[0], engine="ray", address=address, out="/nonexistent/never-written",
                   name="address", timeout=30)
    assert time.monotonic() - t0 < 20


@pytest.mark.parametrize("record", [{}, [], {"seeds": [0], "claims": {}, "errors": {}, "wall_s": []},
                                    {"seeds": [0], "claims": {"c": {"kind": "paper", "op": ">", "threshold": 1,
                                                                    "measured": [1.0]}}, "errors": {}, "wall_s": [1.0]},
                                    {"seeds": [0, 1], "claims": {"c": {"kind": "check", "op": ">", "threshold": 1,
                                                                       "measured": [1.0]}}, "errors": {},
                                     "wall_s": [1.0, 1.0]}])
def test_sweep_record_readers_refuse_malformed_records(record):
    "runs_from_record({}), sweep_table({}), sweep_problems({}) raised KeyError (outside re-probe, issue 49)."
    from icml25nb.sweep import runs_from_record, sweep_problems, sweep_table
    for fn in (runs_from_record, sweep_table, sweep_problems):
        assert_refused(fn, record, name="record")


@pytest.mark.parametrize("st", [{}, {"slug": "x"}, [], None])
def test_status_readers_refuse_what_is_not_a_status(st):
    "status_cells({}) and book_headline([{}]) raised KeyError."
    from icml25nb.sweep import book_headline, status_cells
    assert_refused(status_cells, st, name="st")
    assert_refused(book_headline, [st], name="statuses[0]")
