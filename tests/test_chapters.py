"""Every registered chapter under the claims contract, at the fast scale with seed 1 (the notebooks run seed 0, and
compare it with the committed sweep themselves):

- one run with seed 1 (one, not two: CI's 45-minute limit; a run that differs from the committed sweep's verdicts
  fails below, and each notebook makes the same decision on seed 0);
- nothing is broken (`run_problems`, the decision `icml25nb run`, `claims` and `make book` make): every check holds,
  every claim can be measured, and every verdict equals the committed sweep's for seed 1; a paper claim that fails
  or does not discriminate is a reported result, not a test failure; claims not yet classified (`provisional`)
  must hold. (Seed 0 gets the same decision in every chapter notebook, which ends with `assert_sweep_agrees`.)
- claims on wall-clock numbers (metric or control under the result's `timings`) are measured and reported by the
  sweep, the notebook and `icml25nb run`, but never asserted here: a test does not time anything (the machine's load
  decides a speed ratio; the sweep records it over 16 seeds);
- a chapter under the contract declares it properly: at least two paper claims, each with a control and a threshold
  source, and a committed sweep made with the same claims (registration: tests/test_registration.py).

`SWEPT` is the one chapter whose seed-1 runs come from tests/test_sweep.py instead (the local and the Ray sweep each
run it once with seed 1 and must agree), and `CLI_CHAPTER` the one whose seed-1 runs come from tests/test_cli.py
(`icml25nb run` twice: the one same-seed determinism test across processes), so that no chapter runs more than twice in
the tests besides its notebook (SWEPT: seeds 1 and 2, in each engine)."""
import pytest

from icml25nb.core import chapters, load_sweep, run_chapter, run_problems
from icml25nb.sweep import _claims_match

CHAPTERS = chapters()
SWEPT = "hclust"
CLI_CHAPTER = "precond"


def test_timed_claims_are_recognised():
    vmf = next(c for c in CHAPTERS if c.slug == "vmf")
    timed = {c.id: c.timed for c in vmf.claims}
    assert timed["speed_1e6"] and not timed["vmf_explores"]


def test_registry_lists_the_chapters():
    slugs = {c.slug for c in CHAPTERS}
    assert {"mincut", SWEPT, CLI_CHAPTER} <= slugs


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if c.slug not in (SWEPT, CLI_CHAPTER)], ids=lambda c: c.slug)
def test_seed_1_agrees_with_the_sweep_and_contract(chapter):
    _, rows = run_chapter(chapter, "fast", 1)
    problems = run_problems(chapter, rows, seed=1)
    assert not problems, f"{chapter.slug}, seed 1:\n" + "\n".join(problems)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.slug)
def test_claims_are_declared_as_the_contract_asks(chapter):
    if not chapter.under_contract:
        assert all(c.kind == "provisional" for c in chapter.claims), \
            f"{chapter.slug}: classify every claim (paper or check) at once, not some"
        return
    paper = [c for c in chapter.claims if c.kind == "paper"]
    assert len(paper) >= 2, f"{chapter.slug}: a chapter needs at least two paper claims"
    for c in paper:
        assert c.control is not None and c.source and c.basis.strip(), \
            f"{chapter.slug}.{c.id}: a paper claim needs a control, a threshold source and its basis"
    sweep = load_sweep(chapter)
    assert sweep is not None, f"{chapter.slug}: no committed sweep (icml25nb sweep {chapter.slug} --seeds 0-15)"
    assert len(sweep["seeds"]) >= 16 and not sweep["errors"], f"{chapter.slug}: the committed sweep is incomplete"
    # the same claims, comparisons and thresholds (a claim withdrawn after a sweep that predates registration may be
    # missing from it; a registered chapter's sweep must match its spec hash: tests/test_registration.py)
    assert _claims_match(chapter, sweep), f"{chapter.slug}: the sweep was made with other claims or comparisons"


def test_readme_table_matches_the_committed_sweeps():
    # the README is generated from nbs/index.ipynb's saved output: rerun it (and `make readme`) after a new sweep
    from pathlib import Path

    from icml25nb.sweep import chapter_status, status_cells
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    for c in CHAPTERS:
        row = next((line for line in readme.splitlines() if line.startswith(f"| {c.part} | `{c.slug}`")), None)
        assert row is not None, f"README has no row for {c.slug}"
        paper, checks = status_cells(chapter_status(c))
        assert f"| {c.level} | {paper} | {checks} |" in row, f"README row for {c.slug} is stale: {row}"
