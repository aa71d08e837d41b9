"""Every registered chapter's claims hold at the fast scale with a seed other than the notebook's (seed 0)."""
import pytest

from icml25nb.core import all_passed, chapters, claims_table, run_chapter

CHAPTERS = chapters()


def test_registry_is_not_empty():
    assert any(c.slug == "precond" for c in CHAPTERS)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.slug for c in CHAPTERS])
def test_claims_hold_with_seed_1(chapter):
    result, rows = run_chapter(chapter, scale="fast", seed=1)
    assert all_passed(rows), "\n" + claims_table(rows, fmt="text")
