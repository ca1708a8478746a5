"""Sphinx tweaks that keep the book's site clean in a browser.

Loaded through ``_config.yml`` (``sphinx.local_extensions``). Rendering only:
nothing here changes a computed number, so it lives outside ``lib/`` (whose
hash is part of every notebook's cache key).

- Sphinx 7.4 adds an inline script registered after the builder started
  (``sphinx-thebe``'s configuration) twice; the second copy redeclares a
  ``const`` and is a console error on every page. Identical scripts are
  emitted once.
- ``static/booksite.css``: long identifiers in tables (claim ids) wrap, so
  the ledger's verdict column stays on screen.
- Author–year labels in the bibliography ("Phuong & Lampert 2021",
  "Lyu et al. 2021"), matching the author–year citations in the text: a pybtex
  label style registered as the formatting style ``plain_authoryear``.
"""

from __future__ import annotations

from pathlib import Path


def _script_key(js) -> tuple:
    attributes = getattr(js, "attributes", {}) or {}
    return (
        str(getattr(js, "filename", js) or ""),
        tuple(sorted((k, str(v)) for k, v in attributes.items())),
    )


def dedupe_scripts(app, pagename, templatename, context, doctree) -> None:
    """Drop repeated ``<script>`` entries (same source, same attributes/body)."""
    files = context.get("script_files")
    if not files:
        return
    seen, kept = set(), []
    for js in files:
        key = _script_key(js)
        if key not in seen:
            seen.add(key)
            kept.append(js)
    context["script_files"] = kept


def _author_year_label(entry) -> str:
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [" ".join(p.last_names) for p in persons]
    if len(names) > 2:
        who = f"{names[0]} et al."
    elif len(names) == 2:
        who = f"{names[0]} & {names[1]}"
    else:
        who = names[0] if names else entry.key
    return f"{who} {entry.fields.get('year', '')}".strip()


def register_author_year_style() -> None:
    """``bibtex_default_style: plain_authoryear``: pybtex's plain style with
    author–year labels (sphinxcontrib-bibtex's documented plugin route)."""
    from pybtex.plugin import register_plugin
    from pybtex.style.formatting.plain import Style as PlainStyle
    from pybtex.style.labels import BaseLabelStyle

    class AuthorYearLabels(BaseLabelStyle):
        def format_labels(self, sorted_entries):
            for entry in sorted_entries:
                yield _author_year_label(entry)

    class AuthorYearStyle(PlainStyle):
        default_label_style = AuthorYearLabels

    register_plugin(
        "pybtex.style.formatting", "plain_authoryear", AuthorYearStyle, force=True
    )


register_author_year_style()


def add_static(app) -> None:
    app.config.html_static_path.append(str(Path(__file__).parent / "static"))


def setup(app):
    # Load MathJax on every page, not only on pages whose body has math: the
    # navigation sidebar shows page titles that contain math on every page.
    app.set_html_assets_policy("always")
    app.connect("builder-inited", add_static)
    app.add_css_file("booksite.css")
    app.connect("html-page-context", dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
