"""Sphinx configuration for the offline docs site (sources are generated into docs/_src by tools/build_docs.py)."""
from pathlib import Path

import icml25nb

project = "icml25nb"
author = "icml25nb developers"
release = version = icml25nb.__version__
copyright = "2026, icml25nb developers"

extensions = ["myst_nb", "sphinx.ext.mathjax"]
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints"]

# Notebooks are committed with their outputs; the docs never execute them.
nb_execution_mode = "off"
nb_render_markdown_format = "myst"
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3
suppress_warnings = ["myst.header", "mystnb.unknown_mime_type", "misc.highlighting_failure", "myst.xref_missing"]

# MathJax 3 from the npm package, copied into _static/mathjax: the built pages load nothing from the network.
mathjax_path = "mathjax/tex-mml-chtml.js"
mathjax3_config = {"tex": {"tags": "ams"}}

html_theme = "sphinx_book_theme"
html_title = "icml25nb: a runnable book of ICML 2025 papers"
# conf.py lives in docs/ (sphinx-build -c docs), the generated sources and MathJax in docs/_src
html_static_path = [str(Path(__file__).resolve().parent / "_src" / "_static")]
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "navigation_with_keys": False,
    "show_navbar_depth": 1,
}
html_last_updated_fmt = None
