"""The generated Markdown of the book: the claims ledger and the parameters
page (each inserted where its marker stands in a page's source)."""

from __future__ import annotations

import json
from pathlib import Path

from .. import claims as claims_mod
from . import verdicts
from .pages import Paths, notebook_ids, parameters
from .record import table_cell


def claims_markdown(paths: Paths) -> str:
    """The ledger: counts per chapter and per kind (the papers' predictions apart
    from the book's findings), then each page's claims in a table (id, paper item,
    kind, statement, seeds, worst value and spread, test, horizon, rival, verdict)."""
    rows = claims_mod.load_all(paths.executed)
    try:
        order = toc_pages(paths)
    except (OSError, ValueError):
        order = []
    return "\n".join(_ledger_summary(rows) + _ledger_tables(rows, order))


def _not_met(r: dict) -> bool:
    """An unmet assumption that its page discusses: information, not a failure."""
    return r["verdict"] == "fails" and r["kind"] == "assumption" and bool(r.get("note"))


def _verdict_counts(rows: list[dict]) -> list[int]:
    """(hold, fail, do not reproduce, assumptions not met)."""
    h, f, d = (sum(r["verdict"] == v for r in rows) for v in claims_mod.VERDICTS)
    n = sum(_not_met(r) for r in rows)
    return [h, f - n, d, n]


def _ledger_summary(rows: list[dict]) -> list[str]:
    h, f, d, n = _verdict_counts(rows)
    short = sum(verdicts.label(r) == "fails on held-out seeds" for r in rows)
    unresolved = sum(r["verdict"] == "not resolved" for r in rows)
    out = [
        f"**{len(rows)} claims: {h} hold, {d} do not reproduce, {n} assumption(s) not "
        f"met, {f} fail.** Of those that hold, {short} miss on some held-out seed "
        f'block (shown as "fails on held-out seeds"); {unresolved} not resolved at '
        "the horizon reached. {doc}`How to read a verdict <reading>`.",
        "",
        "| chapter | claims (prediction · finding · identity · assumption) | hold "
        "| do not reproduce | not met | fail |",
        "|---|---|---|---|---|---|",
    ]
    for chapter in claims_mod.CHAPTERS:
        rs = [r for r in rows if r["notebook"].split("/")[0] == chapter]
        if not rs:
            continue
        kinds = [sum(r["kind"] == k for r in rs) for k in claims_mod.KINDS]
        h, f, d, n = _verdict_counts(rs)
        out.append(
            f"| {chapter} | {len(rs)} ({' · '.join(map(str, kinds))}) "
            f"| {h} | {d} | {n} | {f} |"
        )
    out += [
        "",
        "| kind | claims | hold | do not reproduce | not met | fail |",
        "|---|---|---|---|---|---|",
    ]
    for kind in claims_mod.KINDS:
        rs = [r for r in rows if r["kind"] == kind]
        h, f, d, n = _verdict_counts(rs)
        out.append(f"| {kind} | {len(rs)} | {h} | {d} | {n} | {f} |")
    return out


_id_cell = verdicts.id_cell


def _first_rows(rows: list[dict]) -> list[str]:
    """The claims a reader must see first: does not reproduce, fails on some
    held-out block, not resolved (each with its page and why)."""
    bad = [
        r
        for r in rows
        if verdicts.label(r)
        in ("does not reproduce", "fails", "fails on held-out seeds", "not resolved")
    ]
    if not bad:
        return []
    bad.sort(key=lambda r: verdicts.ORDER.index(verdicts.label(r)))
    out = [
        "",
        "## Read these first",
        "",
        "The claims that do not reproduce, miss on some held-out seed block, or are "
        "not resolved at the horizon reached; every other claim holds.",
        "",
    ]
    body = []
    for r in bad:
        why = r.get("diagnosis") or verdicts.heldout_text(r) or ""
        body.append(
            [
                _id_cell(r["id"]),
                verdicts.badge(r),
                f"{{doc}}`{r['notebook']} </book/{r['notebook']}>`",
                verdicts.number_cell(r) + (f" · {verdicts.esc(why)}" if why else ""),
            ]
        )
    out += verdicts._list_table(
        ["Claim", "Verdict", "Page", "Number · why"], body, "claims-table first-rows"
    )
    return out


def _ledger_tables(rows: list[dict], toc_order: list[str] = ()) -> list[str]:
    out: list[str] = _first_rows(rows)
    by_nb: dict[str, list[dict]] = {}
    for r in rows:
        by_nb.setdefault(r["notebook"], []).append(r)
    order = {p: i for i, p in enumerate(toc_order)}
    for nb, rs in sorted(by_nb.items(), key=lambda kv: (order.get(kv[0], 1e9), kv[0])):
        out += ["", f"## {{doc}}`{nb} <{nb}>`", ""]
        body = []
        for r in sorted(rs, key=lambda r: verdicts.ORDER.index(verdicts.label(r))):
            diag = r.get("diagnosis") or r.get("note") or ""
            extra = (
                f" · {verdicts.esc(diag)}"
                if diag and verdicts.label(r) not in ("holds", "finding holds")
                else ""
            )
            body.append(
                [
                    _id_cell(r["id"]),
                    verdicts.badge(r),
                    f"{verdicts.esc(r['source'])} ({r['kind']}): "
                    f"{verdicts.esc(r['statement'])}",
                    verdicts.number_cell(r)
                    + (
                        f" · at {verdicts.esc(r['horizon'])}"
                        if r.get("horizon")
                        else ""
                    )
                    + extra,
                ]
            )
        out += verdicts._list_table(
            [
                "Claim",
                "Verdict",
                "Paper item (kind): statement",
                "Measured vs test; rival · seeds · held-out",
            ],
            body,
            "claims-table",
        )
    return out


def _spread(spread) -> str:
    if not spread:
        return ""
    lo, hi = (claims_mod.significant(v, 3) for v in spread)
    return f" [{lo}, {hi}]"


def _rival_cell(rival: dict | None, horizon: str | None) -> str:
    if not rival:
        return "—"
    at = rival.get("horizon")
    where = f" (at {table_cell(at)})" if at and at != horizon else ""
    return (
        f"{table_cell(rival['name'])}: {claims_mod.significant(rival['measured'], 3)}"
        f"{_spread(rival.get('spread'))}{where}"
    )


def _verdict_badge(row: dict) -> str:
    # ✓ ⚠ ✗ are in common text fonts (unlike emoji, which need an emoji font)
    if row["verdict"] == "holds":
        return "✓ holds"
    if row["verdict"] == "does not reproduce":
        return f"⚠ does not reproduce: {table_cell(row['diagnosis'])}"
    if row["kind"] == "assumption" and row.get("note"):
        return f"○ not met: {table_cell(row['note'])}"
    return "✗ **fails**"


def _seconds(paths: Paths, nb: str) -> float | None:
    meta = paths.executed / f"{nb}.meta.json"
    if not meta.exists():
        return None
    try:
        return float(json.loads(meta.read_text()).get("seconds"))
    except (TypeError, ValueError):
        return None


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "not timed yet"
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    return f"about {round(seconds / 60)} min"


def parameters_markdown(paths: Paths) -> str:
    """Every notebook's parameters, read from its parameters cell: one folded
    section per notebook (how long its last run took, the command, a download of
    the executed notebook, the parameter table)."""
    out = []
    for nb in notebook_ids(paths):
        params = parameters(paths, nb)
        out += [
            f"::::{{dropdown}} {nb} · {len(params)} parameters · "
            f"{_duration(_seconds(paths, nb))}",
            ":class-container: rerun-page",
            "",
            f"{{doc}}`The page <{nb}>` · "
            f"{{download}}`Download {Path(nb).name}.ipynb </book/{nb}.ipynb>` "
            "(executed, with its run record)",
            "",
            "```bash",
            f"twolayer rerun {nb} -p NAME VALUE ...",
            "```",
            "",
            "| parameter | default | type | meaning |",
            "|---|---|---|---|",
        ]
        for name, p in params.items():
            out.append(
                f"| `{name}` | `{p.default_text}` | `{p.describe()}` | "
                f"{table_cell(p.help) or '—'} |"
            )
        out += ["::::", ""]
    return "\n".join(out)


def run_times_markdown(paths: Paths) -> str:
    """How long the pages took on the machine that built this site."""
    times = {nb: _seconds(paths, nb) for nb in notebook_ids(paths)}
    known = {k: v for k, v in times.items() if v is not None}
    if not known:
        return "*(run times appear here once the book has been built)*"
    slow = sorted(known, key=known.get, reverse=True)[:3]
    lo, hi = _duration(min(known.values())), _duration(max(known.values()))
    longest = ", ".join(f"{{doc}}`{nb} <{nb}>` ({_duration(known[nb])})" for nb in slow)
    return (
        f"On the machine that built this site a page took {lo} to "
        f"{hi.removeprefix('about ')} with one thread (the longest: {longest}); the "
        f"whole book, {round(sum(known.values()) / 60)} min of computing. A rerun "
        "with unchanged values returns at once from the cache."
    )


# -- scorecards ------------------------------------------------------------------------
PAPERS = ("phuong2021", "sarussi2021", "lyu2021", "min2024")
# the page whose first figure stands for its paper on the front page
KEY_FIGURES = {
    "phuong2021": "phuong2021/fig1_two_layer",
    "sarussi2021": "sarussi2021/fig1_3_5_two_d",
    "lyu2021": "lyu2021/symmetric_limit",
    "min2024": "min2024/fig7_9_two_points",
    "synthesis": "synthesis/overlay",
}
THUMBS = "images/generated"  # under the staged book/


def toc_pages(paths: Paths) -> list[str]:
    """The pages in the order of ``_toc.yml`` (``chapter/name``)."""
    import yaml

    toc = yaml.safe_load((paths.root / "_toc.yml").read_text())
    out: list[str] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            f = node.get("file")
            if isinstance(f, str):
                out.append(f.removeprefix("book/"))
            for v in node.values():
                if isinstance(v, (list, dict)):
                    walk(v)
        elif isinstance(node, list):
            for x in node:
                walk(x)

    walk(toc)
    return out


def chapter_scorecard(paths: Paths, chapter: str, claims: dict[str, list[dict]]) -> str:
    """A chapter's scorecard: paper item → page → verdict badge → one number, for
    every prediction and finding of its pages (toc order), then a line counting
    the identities and assumptions."""
    pages = [p for p in toc_pages(paths) if p.startswith(chapter + "/") and p in claims]
    pages += sorted(p for p in claims if p.startswith(chapter + "/") and p not in pages)
    allc = [c for p in pages for c in claims[p]]
    rows, rest = [], 0
    for p in pages:
        for c in claims[p]:
            if c.get("kind") not in verdicts.SHOWN_KINDS:
                rest += 1
                continue
            short = verdicts.heldout_short(c)
            rows.append(
                [
                    f"**{verdicts.esc(c.get('source', ''))}**: "
                    f"{verdicts.esc(c.get('statement', ''))}",
                    f"{{doc}}`{p.split('/', 1)[1].replace('_', ' ')} </book/{p}>`",
                    verdicts.badge(c),
                    verdicts.test_text(c)
                    + (f" · {verdicts.heldout_text(c)}" if short else ""),
                ]
            )
    if not rows:
        return "*No claims recorded for this chapter yet.*"
    out = [
        "::::{admonition} Scorecard",
        ":class: scorecard",
        "",
        verdicts.answer(allc) + f" Also checked on these pages: {_rest_text(rest)} "
        f"({{doc}}`how to read a verdict <{verdicts.READING}>`).",
        "",
    ]
    out += verdicts._list_table(
        ["Paper item", "Page", "Verdict", "Number"], rows, "scorecard-table"
    )
    out.append("::::")
    return "\n".join(out)


def _rest_text(n: int) -> str:
    return (
        "no identity or assumption"
        if n == 0
        else f"{n} identity or assumption"
        if n == 1
        else f"{n} identities and assumptions"
    )


def _badges(claims: list[dict]) -> str:
    t = verdicts.tally([c for c in claims if c.get("kind") in verdicts.SHOWN_KINDS])
    held = t.pop("holds", 0) + t.pop("finding holds", 0)
    t.pop("assumption met", None)
    out = [f"{{bdg-success}}`{held} hold`"] if held else []
    for lab in verdicts.ORDER:
        if t.get(lab):
            out.append(f"{{bdg-{verdicts.BADGES[lab]}}}`{t[lab]} {lab}`")
    return " ".join(out)


def front_scorecards(
    paths: Paths, claims: dict[str, list[dict]], thumbs: set[str] = frozenset()
) -> str:
    """The four papers side by side (a sphinx-design grid of cards): a key figure,
    one sentence "does it reproduce, and where not", the counts, the link to the
    chapter's scorecard; the synthesis chapter below."""
    out = ["::::{grid} 1 1 2 2", ":gutter: 3", ""]
    for chapter in PAPERS + ("synthesis",):
        cs = [c for p, v in claims.items() if p.startswith(chapter + "/") for c in v]
        out += [
            f":::{{grid-item-card}} {verdicts.CARD_TITLES[chapter]}",
            f":link: /book/{chapter}/index",
            ":link-type: doc",
            ":class-card: paper-card",
        ]
        if chapter in thumbs:
            out += [
                f":img-top: {THUMBS}/{chapter}.png",
                f":img-alt: the key figure of {verdicts.CHAPTER_NAMES[chapter]}",
            ]
        out += [
            "",
            verdicts.answer(cs),
            "",
            *([verdicts.where_not(cs), ""] if verdicts.where_not(cs) else []),
            _badges(cs),
            "",
            "**Scorecard and pages →**",
            ":::",
            "",
        ]
    out.append("::::")
    return "\n".join(out)


def copy_thumbnails(paths: Paths, book: Path) -> set[str]:
    """The first figure of each chapter's key page (:data:`KEY_FIGURES`), as a PNG
    under the staged ``book/images/generated/`` (the front page's cards); returns
    the chapters that have one."""
    import base64

    dest = book / THUMBS
    dest.mkdir(parents=True, exist_ok=True)
    done = set()
    for chapter, page in KEY_FIGURES.items():
        nb = paths.executed / f"{page}.ipynb"
        if not nb.exists():
            continue
        cells = json.loads(nb.read_text())["cells"]
        figures = [
            c for c in cells if c.get("metadata", {}).get("mystnb", {}).get("figure")
        ]
        png = next(
            (
                o["data"]["image/png"]
                for c in figures + cells
                if c.get("cell_type") == "code"
                for o in c.get("outputs", [])
                if "image/png" in o.get("data", {})
                and "scrapbook" not in o.get("metadata", {})
            ),
            None,
        )
        if png:
            text = "".join(png) if isinstance(png, list) else png
            (dest / f"{chapter}.png").write_bytes(base64.b64decode(text))
            done.add(chapter)
    return done
