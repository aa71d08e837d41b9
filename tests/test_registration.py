"""Claims that cannot be bent (registration, module `icml25nb.registration`):

- on the book itself: no claim id that was ever committed in a sweep or registration file has vanished from its
  chapter's `CLAIMS`; every registered chapter's committed sweep was made from a clean tree, with today's claims,
  after its registration, from a commit in HEAD's history, with no seed-independent paper claim; every chapter is
  registered or named in `AWAITING_REGISTRATION` with the issue that registers it;
- in a scratch git repository built here, with a toy chapter: `sweep` refuses a dirty tree, an unregistered
  chapter and claims that differ from their registration; `register` refuses a dirty tree, a second first
  registration and a registration that drops a claim; the history walk catches a deleted claim id; a sweep from a
  commit that does not descend from its registration is caught;
- the rules themselves: NaN and infinities fail under every operator; a withdrawn claim counts as not reproduced; the
  seed-independence flag fires on a constant metric; the README headline counts `tests="paper"` and
  `tests="proxy"` apart.

Without git history (an sdist, an installed copy, a shallow clone) the tests on the book's history skip and say why.
"""
import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from icml25nb.core import (OPS, Chapter, Claim, _REGISTRY, chapters, check_scale, evaluate_claim, load_sweep,
                           make_rng, register)
from icml25nb.registration import (AWAITING_REGISTRATION, claims_spec, git, git_head, git_history_problem,
                                   load_registration, register_claims, register_history_problems, register_path,
                                   registration_problems, spec_hash, sweep_provenance_problems, vanished_claims)
from icml25nb.sweep import book_headline, chapter_status, status_cells, sweep, sweep_record, sweep_problems, run_seed

ROOT = Path(__file__).resolve().parents[1]
# the chapters as the package defines them, taken at import (collection), before any test runs: a chapter notebook
# that tests/test_notebooks.py executes in this worker re-registers its chapter, and its CLAIMS' lambdas then belong
# to `__main__`, which reads as a changed claims spec (a stale sweep) to a test that reads the registry after it
BOOK = chapters()
NO_HISTORY = git_history_problem(ROOT)
needs_history = pytest.mark.skipif(bool(NO_HISTORY), reason=f"no git history to check: {NO_HISTORY}")


# --- the book itself -------------------------------------------------------------------------------------------

@needs_history
def test_no_committed_claim_has_vanished():
    assert vanished_claims(ROOT) == []


@needs_history
def test_register_files_only_grew():
    # every committed version of every register file keeps the entries before it and appends sound ones
    assert register_history_problems(ROOT) == []


@pytest.mark.parametrize("chapter", chapters(), ids=lambda c: c.slug)
def test_every_chapter_is_registered_or_awaiting_its_issue(chapter):
    reg = load_registration(chapter)
    if reg is None:
        assert chapter.slug in AWAITING_REGISTRATION, \
            f"{chapter.slug}: not registered; run `icml25nb register {chapter.slug}` and commit the file it writes"
        return
    assert chapter.slug not in AWAITING_REGISTRATION, \
        f"{chapter.slug} is registered: remove it from AWAITING_REGISTRATION (nbs/07_registration.ipynb)"
    assert reg["chapter"] == chapter.slug and reg["entries"], reg
    for c in chapter.claims:
        if c.kind == "paper":
            assert c.tests in ("paper", "proxy") and c.control_basis.strip(), \
                f"{chapter.slug}.{c.id}: a registered paper claim says what it tests and where its control comes from"
    last = reg["entries"][-1]
    assert last["spec_sha256"] == spec_hash(claims_spec(chapter.claims)), \
        f"{chapter.slug}: CLAIMS differ from registration {last['n']}: `icml25nb register {chapter.slug} --again REASON`"
    for e in reg["entries"][1:]:
        assert e["reason"].strip() and e["changes"], f"{chapter.slug}: re-registration {e['n']} lacks a reason or a change"


@needs_history
@pytest.mark.parametrize("chapter", [c for c in chapters() if load_registration(c) is not None], ids=lambda c: c.slug)
def test_registered_chapters_sweep_is_verifiable(chapter):
    rec = load_sweep(chapter)
    assert rec is not None, f"{chapter.slug}: registered but no committed sweep"
    assert sweep_provenance_problems(rec, chapter, ROOT) == []
    # the register file and the sweep file are both in HEAD (not just in the working tree)
    for path in (register_path(chapter), ROOT / "nbs" / chapter.notebook.replace(".ipynb", ".sweep.json")):
        rel = path.relative_to(ROOT).as_posix()
        assert git(ROOT, "ls-files", rel) == rel, f"{rel} is not committed"


def test_the_worked_examples_are_registered():
    # issue 45: precond and mincut are migrated as worked examples
    for slug in ("precond", "mincut"):
        assert slug not in AWAITING_REGISTRATION and load_registration(slug) is not None, slug


# --- the rules -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_fails_under_every_op(op, value):
    claim = Claim("x", "s", "m", op, 0.0, kind="paper", control="c", source="derived")
    row = evaluate_claim(claim, {"m": value, "c": value})
    assert not row.passed and row.control_passed is False and row.discriminating is False
    assert "not finite" in row.note and not row.error
    # and a finite control that fails still makes a finite-but-failing claim discriminate
    failing = {"<": 1.0, "<=": 1.0, "==": 1.0, ">": -1.0, ">=": -1.0, "!=": 0.0}[op]
    assert evaluate_claim(claim, {"m": value, "c": failing}).discriminating


def _toy_experiment(scale: str = "fast", seed: int = 0) -> dict:
    check_scale(scale)
    u = float(make_rng(seed).random())
    return {"method": 3 + u, "baseline": 1 + u, "sum": 1.0, "closed_form": 5.0, "proxy": 2 + u}


def _toy_claims(threshold=2.0, drop=False, withdraw=False):
    claims = [Claim("beats", "method >= threshold", "method", ">=", threshold, kind="paper", control="baseline",
                    source="derived", tests="paper", control_basis="the toy's baseline",
                    **(dict(status="withdrawn", reason="a test withdrawal") if withdraw else {})),
              Claim("proxy_beats", "proxy >= 2", "proxy", ">=", 2.0, kind="paper", control="baseline",
                    source="issue 45, claim 5", tests="proxy", control_basis="the toy's baseline")]
    return claims + ([] if drop else [Claim("sum_is_one", "an identity", "sum", "==", 1.0, kind="check")])


@pytest.fixture
def toy(tmp_path):
    "A toy chapter in a scratch git repository with one commit: (chapter, repo root)."
    repo = tmp_path / "book"
    (repo / "nbs" / "optim").mkdir(parents=True)
    for args in (["init", "-q"], ["config", "user.email", "t@example.com"], ["config", "user.name", "t"]):
        git(repo, *args)
    (repo / "nbs" / "optim" / "99_toy.ipynb").write_text("{}")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "toy chapter")
    ch = register(Chapter("toy_registration_test", "optim", "A toy", "nobody", _toy_experiment, _toy_claims(),
                          level="toy analogue", notebook="optim/99_toy.ipynb"))
    yield ch, repo
    _REGISTRY.pop("toy_registration_test", None)
    shutil.rmtree(repo, ignore_errors=True)


def _commit(repo, msg):
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", msg)


def _register_and_sweep(ch, repo, seeds):
    "The book's workflow in the scratch repository: register, commit, sweep, commit."
    register_claims(ch, root=repo, engine="serial")
    _commit(repo, "register toy")
    sweep(ch, seeds, engine="serial", root=repo)
    _commit(repo, "sweep toy")


def test_sweep_refuses_unregistered_dirty_and_changed(toy):
    ch, repo = toy
    with pytest.raises(ValueError, match="is not registered"):
        sweep(ch, "0-3", engine="serial", root=repo)
    entry = register_claims(ch, root=repo, engine="serial")
    assert entry["n"] == 1 and entry["commit"] == git_head(repo) and entry["seeds"] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="not clean"):  # the register file is not committed yet
        sweep(ch, "0-3", engine="serial", root=repo)
    _commit(repo, "register toy")
    (repo / "scratch.txt").write_text("an uncommitted edit")
    with pytest.raises(ValueError, match="not clean"):
        sweep(ch, "0-3", engine="serial", root=repo)
    (repo / "scratch.txt").unlink()
    ch.claims = _toy_claims(threshold=3.5)  # a moved threshold
    with pytest.raises(ValueError, match="differ from registration 1"):
        sweep(ch, "0-3", engine="serial", root=repo)
    ch.claims = _toy_claims()
    rec = sweep(ch, "0-15", engine="serial", root=repo)
    assert rec["dirty"] is False and rec["registration"]["commit"] == entry["commit"]
    # an exploratory sweep elsewhere is never gated; --out naming the notebook's own folder is the committed file
    sweep(ch, "0-1", engine="serial", root=repo, out=repo.parent / "explore")
    (repo / "scratch.txt").write_text("an uncommitted edit")
    with pytest.raises(ValueError, match="not clean"):
        sweep(ch, "0-3", engine="serial", root=repo, out=repo / "nbs" / "optim")
    (repo / "scratch.txt").unlink()


def test_sweep_refuses_a_registration_that_is_not_an_ancestor(toy):
    ch, repo = toy
    git(repo, "checkout", "-q", "-b", "elsewhere")
    git(repo, "commit", "-q", "--allow-empty", "-m", "a commit only this branch has")
    register_claims(ch, root=repo, engine="serial")  # registered at that commit, on another branch
    _commit(repo, "register toy elsewhere")
    reg = register_path(ch, repo).read_text()
    git(repo, "checkout", "-q", "-")
    register_path(ch, repo).write_text(reg)  # the file copied over, its commit not in this branch's history
    _commit(repo, "copy the registration")
    with pytest.raises(ValueError, match="not an ancestor of HEAD"):
        sweep(ch, "0-3", engine="serial", root=repo)


def test_code_changed_since_registration_needs_again(toy, tmp_path):
    import importlib.util
    ch, repo = toy
    src = repo / "toy_chapter_code.py"
    src.write_text("def experiment(scale='fast', seed=0):\n    return {'method': 3.0 + seed / 100, 'baseline': 1.0 + seed / 100,"
                   " 'sum': 1.0, 'proxy': 2.5 + seed / 100}\n")
    spec = importlib.util.spec_from_file_location("toy_chapter_code", src)
    mod = importlib.util.module_from_spec(spec)
    import sys
    sys.modules["toy_chapter_code"] = mod
    spec.loader.exec_module(mod)
    try:
        ch.experiment = mod.experiment
        _commit(repo, "toy code")
        e1 = register_claims(ch, root=repo, engine="serial")
        assert list(e1["code"]) == ["toy_chapter_code.py"]
        _commit(repo, "register toy")
        src.write_text(src.read_text().replace("3.0 +", "3.5 +"))  # the experiment changed, the claims did not
        _commit(repo, "change the experiment")
        with pytest.raises(ValueError, match="code changed since registration 1"):
            sweep(ch, "0-3", engine="serial", root=repo)
        e2 = register_claims(ch, again="the method's offset changed", root=repo, engine="serial")
        assert e2["changes"] == ["code changed: toy_chapter_code.py"]
        _commit(repo, "register toy again")
        assert registration_problems(ch, repo) == [] and register_history_problems(repo) == []
    finally:
        sys.modules.pop("toy_chapter_code", None)


def test_a_sweep_during_which_the_tree_changes_is_refused(toy):
    ch, repo = toy
    register_claims(ch, root=repo, engine="serial")
    _commit(repo, "register toy")
    experiment = ch.experiment

    def edits_the_tree(scale="fast", seed=0):
        if seed == 2:
            (repo / "edited-meanwhile.txt").write_text("x")
        return experiment(scale, seed)
    ch.experiment = edits_the_tree
    with pytest.raises(ValueError, match="tree changed while the seeds ran"):
        sweep(ch, "0-3", engine="serial", root=repo)
    assert json.loads((repo / "nbs" / "optim" / "99_toy.sweep.json").read_text())["dirty"] is True


def test_a_registration_rewritten_or_deleted_is_caught(toy):
    ch, repo = toy
    register_claims(ch, root=repo, engine="serial")
    _commit(repo, "register toy")
    assert register_history_problems(repo) == []
    path = register_path(ch, repo)
    doc = json.loads(path.read_text())
    doc["entries"][0]["spec"][0]["threshold"] = 1.0  # a moved threshold, written in by hand
    path.write_text(json.dumps(doc))
    _commit(repo, "bend it")
    assert any("rewrote entries" in p for p in register_history_problems(repo))
    path.unlink()
    _commit(repo, "delete it")
    assert any("deleted in" in p for p in register_history_problems(repo))


def test_register_refuses_dirty_twice_and_dropped_claims(toy):
    ch, repo = toy
    (repo / "scratch.txt").write_text("x")
    with pytest.raises(ValueError, match="clean tree"):
        register_claims(ch, root=repo, engine="serial")
    (repo / "scratch.txt").unlink()
    ch.claims = [Claim("p", "s", "method", ">=", 1.0, kind="paper", control="baseline", source="derived"),
                 Claim("q", "s", "sum", "==", 1.0, kind="check")]
    with pytest.raises(ValueError, match="needs tests="):
        register_claims(ch, root=repo, engine="serial")
    ch.claims = _toy_claims()
    with pytest.raises(ValueError, match="not registered yet"):
        register_claims(ch, again="why", root=repo, engine="serial")
    register_claims(ch, root=repo, engine="serial")
    _commit(repo, "register toy")
    with pytest.raises(ValueError, match="already registered"):
        register_claims(ch, root=repo, engine="serial")
    with pytest.raises(ValueError, match="neither the claims nor the chapter"):
        register_claims(ch, again="nothing", root=repo, engine="serial")
    ch.claims = _toy_claims(drop=True)
    with pytest.raises(ValueError, match="never deleted"):
        register_claims(ch, again="drop the check", root=repo, engine="serial")
    ch.claims = _toy_claims(withdraw=True)
    e2 = register_claims(ch, again="withdraw the toy claim", root=repo, engine="serial")
    assert e2["n"] == 2 and e2["changes"] == ["beats: status 'active' -> 'withdrawn'"]
    doc = json.loads(register_path(ch, repo).read_text())
    assert [e["reason"] for e in doc["entries"]] == ["first registration", "withdraw the toy claim"]


def test_history_catches_a_deleted_claim(toy):
    ch, repo = toy
    _register_and_sweep(ch, repo, "0-3")
    assert vanished_claims(repo, [ch]) == []
    ch.claims = _toy_claims(drop=True)  # sum_is_one deleted from CLAIMS (in the working tree, not registered)
    found = vanished_claims(repo, [ch])
    assert len(found) == 1 and found[0].startswith("toy_registration_test.sum_is_one")


def test_sweep_provenance_problems_catch_each_defect(toy):
    ch, repo = toy
    _register_and_sweep(ch, repo, "0-15")
    rec = json.loads((repo / "nbs" / "optim" / "99_toy.sweep.json").read_text())
    assert sweep_provenance_problems(rec, ch, repo) == []
    assert any("dirty" in p for p in sweep_provenance_problems({**rec, "dirty": True}, ch, repo))
    assert any("stale" in p for p in sweep_provenance_problems({**rec, "spec_sha256": "0" * 64}, ch, repo))
    # a sweep whose registration commit does not precede it
    later = {**rec, "registration": {**rec["registration"], "commit": git_head(repo)}}
    assert any("not an ancestor" in p for p in sweep_provenance_problems(later, ch, repo))
    # a sweep made from a commit on another branch (not in HEAD's history)
    git(repo, "checkout", "-q", "-b", "other")
    git(repo, "commit", "-q", "--allow-empty", "-m", "elsewhere")
    elsewhere = git_head(repo)
    git(repo, "checkout", "-q", "-")
    assert any("not in HEAD's history" in p for p in sweep_provenance_problems({**rec, "commit": elsewhere}, ch, repo))
    assert any("incomplete" in p for p in sweep_provenance_problems({**rec, "seeds": [0, 1]}, ch, repo))


def test_seed_independence_flag_fires_on_a_constant_metric(toy):
    ch, _ = toy
    ch.claims = _toy_claims() + [Claim("closed_form", "a closed form", "closed_form", ">=", 4.0, kind="paper",
                                       control="baseline", source="derived", tests="paper", control_basis="b")]
    rec = sweep_record(ch, "fast", {s: run_seed(ch.slug, "fast", s) for s in range(6)}, version="t")
    assert rec["claims"]["closed_form"]["seed_independent"] and rec["claims"]["closed_form"]["status"] == "seed-independent"
    assert not rec["claims"]["beats"]["seed_independent"]
    assert any(p.startswith("closed_form: seed-independent") for p in sweep_problems(rec))
    # a claim that declares why its value sits at a bound is not flagged as a problem
    ch.claims = ch.claims[:-1] + [Claim("closed_form", "at its bound", "closed_form", ">=", 4.0, kind="paper",
                                        control="baseline", source="derived", tests="paper", control_basis="b",
                                        saturated="the metric sits at its bound on every seed")]
    rec = sweep_record(ch, "fast", {s: run_seed(ch.slug, "fast", s) for s in range(6)}, version="t")
    assert rec["claims"]["closed_form"]["status"] == "reproduced" and sweep_problems(rec) == []
    # but `saturated` never excuses a control that is the same on every seed
    ch.claims = ch.claims[:-1] + [Claim("constant_control", "against a constant", "method", ">=", 2.0, kind="paper",
                                        control="sum", source="derived", tests="paper", control_basis="b",
                                        saturated="the metric sits at its bound")]
    rec = sweep_record(ch, "fast", {s: run_seed(ch.slug, "fast", s) for s in range(6)}, version="t")
    assert rec["claims"]["constant_control"]["status"] == "seed-independent"


def test_withdrawn_claim_counts_as_not_reproduced_and_headline_counts_apart(toy):
    ch, repo = toy
    ch.claims = _toy_claims(withdraw=True)
    register_claims(ch, root=repo, engine="serial")
    _commit(repo, "register toy")
    sweep(ch, "0-15", engine="serial", root=repo)
    st = chapter_status(ch, root=repo)
    assert (st["registered"], st["seeds"], st["withdrawn"]) == (True, 16, 1)
    assert st["statuses"]["beats"] == "withdrawn" and st["statuses"]["proxy_beats"] == "reproduced"
    assert st["not_reproduced"] == 1 and st["reproduced"] == 1  # the withdrawn claim, though it passes everywhere
    assert st["by_tests"] == {"paper": {"reproduced": 0, "total": 1}, "proxy": {"reproduced": 1, "total": 1}}
    paper, checks = status_cells(st)
    assert paper == "paper's own: 0 of 1 reproduced; proxies: 1 of 1 reproduced (1 not reproduced, 1 of them withdrawn)"
    assert checks == "1 of 1 hold on all 16 seeds"
    assert book_headline([st]) == "paper's own claims: 0 of 1 reproduced; proxies: 1 of 1 reproduced"


def test_readme_headline_is_the_books():
    readme = (ROOT / "README.md").read_text()
    head = book_headline([chapter_status(c) for c in BOOK])
    assert f"**Book-wide, from the committed sweeps:** {head}." in readme


def test_each_seed_records_where_it_ran_and_another_code_version_is_refused(toy, monkeypatch, tmp_path):
    import icml25nb.sweep as S
    ch, repo = toy
    register_claims(ch, root=repo, engine="serial")
    _commit(repo, "register toy")
    here = {"host": "here", "node": "node-a", "code": S.code_version()}
    monkeypatch.setattr(S, "worker_identity", lambda: dict(here))
    rec = sweep(ch, "0-1", engine="serial", root=repo, out=tmp_path / "same")
    assert rec["runs"] == {"0": here, "1": here}
    again = sweep(ch, "0-2", engine="serial", root=repo, out=tmp_path / "same")  # seeds 0-1 resumed from the file
    assert again["runs"] == {"0": here, "1": here, "2": here}
    monkeypatch.setattr(S, "worker_identity", lambda: {"host": "elsewhere", "node": "node-b", "code": "0.0.1+gdeadbeef00"})
    with pytest.raises(S.CodeVersionMismatch, match=r"seed 0 ran on node node-b \(host elsewhere\) with icml25nb "
                                                     r"0\.0\.1\+gdeadbeef00, but this sweep runs"):
        sweep(ch, "0-2", engine="serial", root=repo, out=tmp_path / "other")
    assert not list((tmp_path / "other").glob("*.sweep.json"))  # the refused seed was not written


def test_ray_connection_failures_name_the_fix(monkeypatch):
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    from icml25nb.sweep import ray_connect_error
    log = "gcs_client.cc:210: Failed to get cluster ID from GCS server: Unauthenticated: RPC error: InvalidAuthToken"
    msg = ray_connect_error("10.0.0.1:6379", ConnectionError("Failed to connect to Ray cluster at 10.0.0.1:6379"), log)
    assert "refused this driver's authentication token" in msg and "RAY_AUTH_MODE=token" in msg and "\n" not in msg
    msg = ray_connect_error("10.0.0.1:6379", ConnectionError("Failed to connect"), "")
    assert "could not join the Ray cluster at 10.0.0.1:6379" in msg and "if it uses token authentication" in msg
    msg = ray_connect_error(None, RuntimeError("raylet died"), "")
    assert "a local Ray cluster" in msg and "RuntimeError: raylet died" in msg and "token" not in msg


def test_a_seed_without_a_code_version_is_refused(toy, monkeypatch, tmp_path):
    "A worker with an icml25nb from before per-seed versions returns runs without 'code': refused, not merged."
    import icml25nb.sweep as S
    ch, repo = toy
    register_claims(ch, root=repo, engine="serial")
    _commit(repo, "register toy")
    monkeypatch.setattr(S, "worker_identity", lambda: {})
    with pytest.raises(S.CodeVersionMismatch, match="of unknown version"):
        sweep(ch, "0", engine="serial", root=repo, out=tmp_path)


def test_a_worker_that_died_is_recorded_and_the_sweep_goes_on(toy, monkeypatch, tmp_path):
    "A crash the engine records itself (a dead worker: no code version, no rows) is an error, not a version mismatch."
    import icml25nb.sweep as S
    ch, repo = toy
    register_claims(ch, root=repo, engine="serial")
    _commit(repo, "register toy")
    real = S.run_seed
    monkeypatch.setattr(S, "run_seed", lambda slug, scale, seed: {"seed": seed, "wall_s": float("nan"),
                                                                  "error": "worker died: killed"}
                        if seed == 1 else real(slug, scale, seed))
    rec = sweep(ch, "0-2", engine="serial", root=repo, out=tmp_path)
    assert rec["seeds"] == [0, 2] and rec["errors"] == {"1": "worker died: killed"}
