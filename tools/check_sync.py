"""Fail if `nbdev-clean`, `nbdev-export` or `make readme` would change any file: notebooks clean, library in sync.

Compares file hashes before and after, so it works on a clean clone (CI) and on a working tree with
uncommitted edits alike.
"""
import hashlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def snapshot() -> dict:
    "Hashes of the notebooks, the generated library and README.md."
    files = list((ROOT / "nbs").rglob("*.ipynb")) + list((ROOT / "icml25nb").rglob("*.py")) + [ROOT / "README.md"]
    return {str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in files if p.exists() and ".ipynb_checkpoints" not in p.parts and "__pycache__" not in p.parts}


def changed(before: dict, after: dict) -> list:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def main() -> int:
    steps = [("nbdev-clean", "notebooks are not clean: run `nbdev-clean` and commit"),
             ("nbdev-export", "the library is out of sync with the notebooks: run `nbdev-export` and commit"),
             ("readme", "README.md is out of date: run `make readme` and commit")]
    failed = False
    for step, msg in steps:
        before = snapshot()
        cmd = [sys.executable, str(ROOT / "tools" / "build_docs.py"), "readme"] if step == "readme" else [str(BIN / step)]
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        diff = changed(before, snapshot())
        if diff:
            failed = True
            print(f"check_sync: {msg}; changed: {', '.join(diff)}", file=sys.stderr)
    if not failed:
        print("check_sync: notebooks clean, library and README in sync")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
