"""Authoring aid: turn a notebook into a cell-marked text file (the inverse of tools/pct2nb.py).

Cells start with a line `#%%` (code) or `#%% md` (markdown). Outputs are dropped: after converting back,
rerun the notebook (`nbdev-test --path NB --do_print` or `jupyter nbconvert --execute --inplace NB`) and `nbdev-clean`.
Usage: python tools/nb2pct.py SRC.ipynb DST.py
"""
import sys
import nbformat


def convert(src: str, dst: str) -> None:
    "Write the cell-marked text of notebook `src` to `dst`."
    nb = nbformat.read(src, as_version=4)
    out = []
    for c in nb.cells:
        out.append("#%% md" if c.cell_type == "markdown" else "#%%")
        out.append(c.source.rstrip("\n"))
        out.append("")
    open(dst, "w", encoding="utf-8").write("\n".join(out))


if __name__ == "__main__":
    convert(sys.argv[1], sys.argv[2])
