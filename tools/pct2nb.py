"""Authoring aid: turn a cell-marked text file into a notebook (the notebook is the source of truth).

Cells start with a line `#%%` (code) or `#%% md` (markdown); markdown text is written as is.
Usage: python tools/pct2nb.py SRC.py DST.ipynb
"""
import sys
import nbformat


def parse(text: str):
    "Split `text` into (kind, source) cells at `#%%` marker lines."
    cells, kind, buf = [], None, []
    for line in text.splitlines():
        if line.startswith("#%%"):
            if kind is not None:
                cells.append((kind, "\n".join(buf).strip("\n")))
            kind, buf = ("markdown" if line[3:].strip() == "md" else "code"), []
        else:
            buf.append(line)
    if kind is not None:
        cells.append((kind, "\n".join(buf).strip("\n")))
    return cells


def convert(src: str, dst: str) -> None:
    "Write the notebook for the cell-marked file `src` to `dst`."
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"display_name": "python3", "language": "python", "name": "python3"}}
    for kind, source in parse(open(src, encoding="utf-8").read()):
        make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        nb.cells.append(make(source))
    nbformat.write(nb, dst)


if __name__ == "__main__":
    convert(sys.argv[1], sys.argv[2])
