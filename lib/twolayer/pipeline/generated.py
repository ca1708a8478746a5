"""The generated Markdown of the book: the claims ledger and the parameters
page (each inserted where its marker stands in a page's source)."""

from __future__ import annotations

from pathlib import Path

from .. import claims as claims_mod
from .pages import Paths, notebook_ids, parameters
from .record import table_cell


def claims_markdown(paths: Paths) -> str:
    """The ledger: counts per chapter and per kind (the papers' predictions apart
    from the book's findings), then each page's claims in a table (id, paper item,
    kind, statement, seeds, worst value and spread, test, horizon, rival, verdict)."""
    rows = claims_mod.load_all(paths.executed)
    return "\n".join(_ledger_summary(rows) + _ledger_tables(rows))


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
    out = [
        f"**{len(rows)} claims: {h} hold, {d} do not reproduce, {n} assumption(s) not "
        f"met, {f} fail.**",
        "",
        "| chapter | claims | "
        + " | ".join(claims_mod.KINDS)
        + " | hold | do not reproduce | not met | fail |",
        "|---" * (6 + len(claims_mod.KINDS)) + "|",
    ]
    for chapter in claims_mod.CHAPTERS:
        rs = [r for r in rows if r["notebook"].split("/")[0] == chapter]
        if not rs:
            continue
        kinds = [sum(r["kind"] == k for r in rs) for k in claims_mod.KINDS]
        h, f, d, n = _verdict_counts(rs)
        out.append(
            f"| {chapter} | {len(rs)} | "
            + " | ".join(map(str, kinds))
            + f" | {h} | {d} | {n} | {f} |"
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


def _ledger_tables(rows: list[dict]) -> list[str]:
    out: list[str] = []
    by_nb: dict[str, list[dict]] = {}
    for r in rows:
        by_nb.setdefault(r["notebook"], []).append(r)
    for nb, rs in by_nb.items():
        out += [
            "",
            f"## {{doc}}`{nb} <{nb}>`",
            "",
            "| claim | paper | kind | statement | seeds | measured (worst) [spread] | "
            "test | horizon | rival [spread] | verdict |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rs:
            sig = claims_mod.significant
            out.append(
                f"| `{r['id']}` | {table_cell(r['source'])} | {r['kind']} | "
                f"{table_cell(r['statement'])} | {r.get('seeds', 1)} | "
                f"{sig(r['measured'], 3)}{_spread(r.get('spread'))} | {r['relation']} "
                f"{sig(r['threshold'], 3)} | {table_cell(r.get('horizon') or '—')} | "
                f"{_rival_cell(r.get('rival'), r.get('horizon'))} | "
                f"{_verdict_badge(r)} |"
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


def parameters_markdown(paths: Paths) -> str:
    """Every notebook's parameters, read from its parameters cell."""
    out = []
    for nb in notebook_ids(paths):
        out += [
            f"### {{doc}}`{nb} <{nb}>`",
            "",
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
        for name, p in parameters(paths, nb).items():
            out.append(
                f"| `{name}` | `{p.default_text}` | `{p.describe()}` | "
                f"{table_cell(p.help)} |"
            )
        out.append("")
    return "\n".join(out)
