"""The built docs site (`make docs`, run by `make test` before pytest): pages, math, plots, API docs, offline."""
import html
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# the chapters as the package defines them, taken at import (see tests/test_registration.py's BOOK): a chapter
# notebook executed in this worker re-registers its chapter with claims whose lambdas belong to `__main__`
from icml25nb.core import chapters as _chapters  # noqa: E402

BOOK = _chapters()
SITE = ROOT / "_docs"

if not (SITE / "index.html").exists():
    if os.environ.get("ICML25NB_REQUIRE_DOCS"):
        raise RuntimeError("_docs/index.html is missing: the docs build failed or did not run")
    pytest.skip("docs not built (run `make docs`)", allow_module_level=True)

PAGES = sorted(SITE.rglob("*.html"))
# anything the browser loads by itself: scripts, images, iframes, stylesheets and other <link>s
LOADS = re.compile(r"<(?:script|img|iframe|source|video|audio|embed)\b[^>]*\bsrc\s*=\s*[\"']?(https?:)?//"
                   r"|<link\b[^>]*\bhref\s*=\s*[\"']?(https?:)?//|url\(\s*[\"']?(https?:)?//", re.I)


def test_every_chapter_and_foundation_page_is_built():
    for rel in ["index.html", "00_core.html", "01_cli.html", "02_tinylm.html", "03_sweep.html", "04_pareto.html",
                "05_control.html", "06_graphdata.html", "07_registration.html",
                "efficient/02_pipeline.html", "efficient/01_lowra.html",
                "optim/01_precond.html", "claims.html",
                "search.html", "searchindex.js"]:
        assert (SITE / rel).exists(), rel


def test_no_page_loads_anything_from_the_network():
    offenders = {str(p.relative_to(SITE)): LOADS.search(p.read_text(errors="ignore")).group(0)
                 for p in PAGES if LOADS.search(p.read_text(errors="ignore"))}
    assert not offenders, offenders
    # the check can fail: it catches a CDN script tag
    assert LOADS.search('<script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"></script>')
    assert not LOADS.search('<a class="reference external" href="https://arxiv.org/abs/2502.08532">paper</a>')


def test_mathjax_is_served_locally():
    page = (SITE / "optim" / "01_precond.html").read_text()
    m = re.search(r'<script[^>]*src="([^"?]*tex-mml-chtml\.js)[^"]*"', page)
    assert m, "no MathJax script on the chapter page"
    assert (SITE / "optim" / m.group(1)).resolve().exists()
    assert "\\nabla\\phi^*" in page or "\\nabla \\phi^*" in page  # the derivation's LaTeX reaches the page


def test_chapter_page_has_plots_api_docs_and_claims():
    page = (SITE / "optim" / "01_precond.html").read_text()
    imgs = re.findall(r'<img[^>]*src="([^"]+\.png)"', page)
    assert len(imgs) >= 2 and all((SITE / "optim" / src).resolve().exists() for src in imgs)
    assert "npgd" in page and "gd_best_step" in page  # API docs from show_doc
    assert "clip_equals_torch" in page and "PASS" in page  # the claims table


def test_every_registered_chapter_has_a_page_with_plots_and_claims():
    for ch in BOOK:
        page = SITE / ch.notebook.replace(".ipynb", ".html")
        assert page.exists(), page
        html = page.read_text()
        assert re.search(r'<img[^>]*src="[^"]+\.png"', html), f"{page}: no plot"
        assert all(c.id in html for c in ch.claims), f"{page}: claims table incomplete"


def test_sidebar_lists_parts_and_chapters():
    index = (SITE / "index.html").read_text()
    assert "Foundations" in index and "Optim" in index and "Claims dashboard" in index
    assert "optim/01_precond.html" in index


def test_dashboard_reads_the_committed_sweeps():
    from icml25nb.core import load_sweep, record_verdicts
    from icml25nb.sweep import book_headline, chapter_status
    page = (SITE / "claims.html").read_text()
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())  # as a reader sees it
    assert "Book-wide" in page and "not discriminating" in page and "seed-independent" in page
    statuses = [chapter_status(c) for c in BOOK]
    assert " ".join(book_headline(statuses).split()) in text.replace("\u2019", "'")
    swept = [c for c in BOOK if load_sweep(c) is not None]
    assert {"precond", "mincut"} <= {c.slug for c in swept}
    for c in swept:
        rec, st = load_sweep(c), chapter_status(c)
        # every paper claim with its status and its seeds passed, as the sweep file says by today's rules
        for cid, r in rec["claims"].items():
            assert cid in page, cid
            if r["kind"] == "paper":
                assert f"{sum(record_verdicts(r)[0])}/{len(rec['seeds'])}" in page
        registered = (st["registrations"][-1]["date"][:10] + (f" ({len(st['registrations'])}x)"
                      if len(st["registrations"]) > 1 else "") if st["registered"] else f"no (issue {st['awaiting']})")
        assert (f"{c.slug} {c.part} {c.level} {registered} {st['seeds']} {st['paper']} {st['reproduced']} "
                f"{st['partly']} {st['not_reproduced']} {st['not_discriminating']} {st['seed_independent']} "
                f"{st['checks_holding']} of {st['checks']}") in text, c.slug
        img = re.search(rf'<img[^>]*src="([^"]*{c.slug}\.png)"', page)
        assert img and (SITE / img.group(1)).resolve().exists(), f"{c.slug}: no strip plot"
        chapter_page = (SITE / c.notebook.replace(".ipynb", ".html")).read_text()
        assert "Reproduction over seeds" in chapter_page and f"{c.slug}.png" in chapter_page
        # the registration, and every re-registration with its reason, on the chapter's page
        assert "Registration:" in chapter_page
        readable = html.unescape(chapter_page).replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
        for e in st["registrations"][1:]:
            assert e["reason"][:40] in readable, (c.slug, e["reason"])
