"""The same seed gives the same numbers: every chapter's experiment, run twice with seed 2, returns identical
results (and its claims hold for that seed too, a second seed besides test_claims.py's seed 1).

Wall-clock measurements cannot repeat: a chapter that times something keeps those numbers under the result's
`timings` key, which is the only part left out of the comparison."""
import json

import pytest

from icml25nb.core import all_passed, chapters, claims_table, evaluate_claims, seed_everything, to_jsonable

CHAPTERS = chapters()


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.slug for c in CHAPTERS])
def test_same_seed_same_result(chapter):
    runs = []
    for _ in range(2):
        seed_everything(2)
        runs.append(chapter.experiment(scale="fast", seed=2))
    first, second = (json.dumps(to_jsonable({k: v for k, v in r.items() if k != "timings"}), sort_keys=True)
                     for r in runs)
    assert first == second, f"{chapter.slug}: two runs with seed 2 differ"
    rows = evaluate_claims(chapter.claims, runs[0])
    assert all_passed(rows), "\n" + claims_table(rows, fmt="text")
