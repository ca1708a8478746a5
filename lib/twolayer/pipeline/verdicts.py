"""The verdict box, the claims table and the scorecards a reader sees, generated
at staging from the claims JSON the ledger writes (never typed, so they cannot
drift from the run). MyST only: sphinx-design badges and cards, list-tables,
dropdowns; no hand-made HTML.

Format v3 fields (``trend``, ``heldout``, ``quantifier``, ``section``) are used
when present and may be absent or null.
"""

from __future__ import annotations

import re

from .. import prose

READING = "/book/reading"  # the "How to read a verdict" page (a doc path)
SHOWN_KINDS = ("prediction", "finding")  # rows of the box; the rest fold below
RELATION = {"<=": "≤", ">=": "≥", "<": "<", ">": ">", "==": "="}
# verdict label -> sphinx-design badge colour
BADGES = {
    "holds": "success",
    "finding holds": "info",
    "assumption met": "success",
    "does not reproduce": "danger",
    "fails": "danger",
    "fails on held-out seeds": "warning",
    "not resolved": "secondary",
    "assumption not met": "dark",
}
ORDER = (  # the ledger lists the claims a reader must see first
    "does not reproduce",
    "fails",
    "fails on held-out seeds",
    "not resolved",
    "assumption not met",
    "holds",
    "finding holds",
    "assumption met",
)
_LOG10 = re.compile(r"(^|[\s:(])log10\b(?!-log)", re.I)
_MD_SPECIAL = re.compile(r"([\\`*_$\[\]<>|{}])")


def esc(text) -> str:
    """Text safe in generated MyST (one line; Markdown punctuation escaped)."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def heldout_short(c: dict) -> bool:
    """Does the claim miss on some stored held-out block?"""
    h = c.get("heldout") or {}
    blocks, holds = h.get("blocks"), h.get("holds")
    return bool(blocks) and holds is not None and holds < blocks


def label(c: dict) -> str:
    """The verdict as a reader reads it (one of :data:`BADGES`)."""
    v, kind = c.get("verdict"), c.get("kind")
    if v == "holds":
        if heldout_short(c):
            return "fails on held-out seeds"
        if kind == "finding":
            return "finding holds"
        if kind == "assumption":
            return "assumption met"
        return "holds"
    if kind == "assumption" and (c.get("note") or v == "fails"):
        return "assumption not met"
    if v in BADGES:
        return v
    return "fails"


def badge(c: dict) -> str:
    lab = label(c)
    return f"{{bdg-{BADGES[lab]}}}`{lab}`"


def is_log10(c: dict) -> bool:
    """A quantity the page compares in decades (its statement says log10)."""
    return bool(_LOG10.search(str(c.get("statement", "")))) and "slope" not in str(
        c.get("statement", "")
    )


def value(x, c: dict, digits: int = 3) -> str:
    """A measured value as a reader writes it: a log10 quantity as a power of ten."""
    if x is None:
        return "—"
    if is_log10(c):
        return prose.power10(x, digits, markup="myst")
    return prose.number(x, digits, markup="myst")


def test_text(c: dict) -> str:
    """``0.932 > 0.9`` (worst seed against the threshold)."""
    rel = RELATION.get(c.get("relation"), esc(c.get("relation", "")))
    return f"{value(c.get('measured'), c)} {rel} {value(c.get('threshold'), c)}"


def rival_text(c: dict) -> str:
    r = c.get("rival")
    if not r:
        return ""
    return f"{esc(r.get('name', 'rival'))}: {value(r.get('measured'), c)}"


def seeds_text(c: dict) -> str:
    n = int(c.get("seeds") or 1)
    sp = c.get("spread")
    out = prose.count(n, noun="seed") if n > 1 else "1 run"
    if n > 1 and c.get("quantifier") not in ("probability", "most"):
        out = f"worst of {out}"
    if sp and len(sp) == 2 and n > 1:
        a, b = value(sp[0], c), value(sp[1], c)
        if a != b:
            out += f" ({a} to {b})"
    return out


def heldout_text(c: dict) -> str:
    h = c.get("heldout") or {}
    blocks, holds = h.get("blocks"), h.get("holds")
    if not blocks or holds is None:
        return ""
    word = prose.plural(int(blocks), "block")
    if holds < blocks:
        text = f"fails on {blocks - holds} of {blocks} held-out {word}"
    elif blocks == 1:
        text = "holds on the held-out block"
    else:
        text = f"holds on {holds} of {blocks} held-out {word}"
    return text  # a stale sweep is said once per box (:func:`box`)


def trend_text(c: dict) -> str:
    """A limit claim's trend: its decided value at the horizons measured."""
    t = c.get("trend") or {}
    ts, vs = t.get("log10_t") or [], t.get("values") or []
    if len(ts) < 2 or len(vs) != len(ts):
        return ""
    pts = [
        f"{value(v, c)} at t = {prose.power10(x, 3, markup='myst')}"
        for x, v in zip(ts, vs)
    ]
    return "trend: " + ", ".join(pts)


def number_cell(c: dict) -> str:
    """The deciding number, its rival, seeds, held-out record (one cell)."""
    parts = [test_text(c)]
    rv = rival_text(c)
    if rv:
        parts[0] += f"; {rv}"
    extra = [seeds_text(c)]
    ho = heldout_text(c)
    if ho:
        extra.append(ho)
    if c.get("verdict") == "not resolved":
        tr = trend_text(c)
        if tr:
            extra.append(tr)
    return parts[0] + " · " + " · ".join(extra)


def statement_cell(c: dict, link: str | None) -> str:
    src = esc(c.get("source", ""))
    text = f"**{src}**: {esc(c.get('statement', ''))}" if src else esc(c["statement"])
    if link:
        text += f" ({{ref}}`section <{link}>`)"
    return text


def _list_table(header: list[str], rows: list[list[str]], cls: str) -> list[str]:
    out = [
        ":::{list-table}",
        ":header-rows: 1",
        f":class: {cls}",
        "",
        "* - " + "\n  - ".join(header),
    ]
    for row in rows:
        out.append("* - " + "\n  - ".join(row))
    out.append(":::")
    return out


def box(
    page: str,
    claims: list[dict],
    link_for,
    related: list[str] | None = None,
) -> str:
    """The verdict box of ``page``: one row per prediction/finding (statement with
    its source, verdict badge, deciding number · seeds · held-out record), the
    identities and assumptions folded below, a link to the reading guide.
    ``link_for(claim)`` is the label of the section showing the claim (or None)."""
    main = [c for c in claims if c.get("kind") in SHOWN_KINDS]
    rest = [c for c in claims if c.get("kind") not in SHOWN_KINDS]
    out = [
        ":::::{card}",
        ":class-card: verdict-box",
        "",
        f"**What this page finds** · {_summary(claims)} · "
        f"{{doc}}`How to read a verdict <{READING}>`"
        + (
            " · held-out records from a sweep stored at earlier code "
            "({doc}`robustness </book/robustness>`)"
            if any((c.get("heldout") or {}).get("stale") for c in claims)
            else ""
        ),
        "",
    ]
    if main:
        out += _list_table(
            ["The paper says (or the book finds)", "Verdict", "Deciding number"],
            [[statement_cell(c, link_for(c)), badge(c), number_cell(c)] for c in main],
            "verdict-table",
        )
    else:
        out.append(
            "This page states no prediction of its own; it checks the "
            "identities and assumptions below."
        )
    if rest:
        out += [
            "",
            f"::::{{dropdown}} {_kinds_title(rest)}",
            ":class-container: verdict-more",
            "",
        ]
        out += _list_table(
            ["Checked", "Verdict", "Number"],
            [[statement_cell(c, link_for(c)), badge(c), number_cell(c)] for c in rest],
            "verdict-table",
        )
        out.append("::::")
    for line in related or []:
        out += ["", line]
    out.append(":::::")
    return "\n".join(out)


def _kinds_title(rest: list[dict]) -> str:
    kinds = []
    for k, word, many in (
        ("identity", "identity", "identities"),
        ("assumption", "assumption", "assumptions"),
    ):
        n = sum(c.get("kind") == k for c in rest)
        if n:
            kinds.append(prose.count(n, noun=word, many=many))
    return prose.join(kinds).replace(prose.NBSP, " ") + " checked"


def tally(claims: list[dict]) -> dict[str, int]:
    """Claims per reader verdict (:func:`label`)."""
    out: dict[str, int] = {}
    for c in claims:
        out[label(c)] = out.get(label(c), 0) + 1
    return out


def _summary(claims: list[dict]) -> str:
    t = tally(claims)
    held = t.get("holds", 0) + t.get("finding holds", 0) + t.get("assumption met", 0)
    parts = [f"{held} of {len(claims)} hold"]
    for lab in ORDER:
        if lab in ("holds", "finding holds", "assumption met"):
            continue
        if t.get(lab):
            parts.append(f"{t[lab]} {lab}")
    return ", ".join(parts)


def answer(claims: list[dict]) -> str:
    """One sentence: does it reproduce, and where not (counts)."""
    preds = [c for c in claims if c.get("kind") in SHOWN_KINDS]
    t = tally(preds)
    held = t.get("holds", 0) + t.get("finding holds", 0)
    n = len(preds)
    if not n:
        return "No prediction checked yet."
    misses = []
    for lab, one, many in (
        ("does not reproduce", "does not reproduce", "do not reproduce"),
        ("fails on held-out seeds", "fails", "fail"),
        ("not resolved", "is not resolved", "are not resolved"),
        ("fails", "fails", "fail"),
    ):
        k = t.get(lab)
        if k:
            tail = {
                "fails on held-out seeds": " on some held-out seeds",
                "not resolved": " at the horizon reached",
            }.get(lab, "")
            misses.append(f"{k} {one if k == 1 else many}{tail}")
    if held == n:
        head = (
            "Its one prediction holds"
            if n == 1
            else f"All {n} of its predictions and findings hold"
        )
    elif held == 0:
        head = f"None of its {n} predictions and findings holds as stated"
    else:
        head = f"{held} of {n} predictions and findings hold"
    return head + ("; " + prose.join(misses) if misses else "") + "."


MISS_PHRASES = (
    ("does not reproduce", "Does not reproduce"),
    ("fails", "Fails"),
    ("not resolved", "Not resolved at the horizon reached"),
    ("fails on held-out seeds", "Fails on some held-out seeds"),
)


def where_not(claims: list[dict], limit: int = 4) -> str:
    """Where it does not reproduce: per miss verdict, the paper items (the claims'
    ``source``, each once, in order; at most ``limit`` then "and n more"), e.g.
    "Does not reproduce: App. D / Fig 3. Fails on some held-out seeds: Fig 1c, Thm 6.2."
    Empty when every prediction and finding holds."""
    preds = [c for c in claims if c.get("kind") in SHOWN_KINDS]
    out = []
    for lab, phrase in MISS_PHRASES:
        items = list(
            dict.fromkeys(c.get("source") or c["id"] for c in preds if label(c) == lab)
        )
        if not items:
            continue
        shown = items[:limit] + (
            [f"{len(items) - limit} more"] if len(items) > limit else []
        )
        out.append(f"{phrase}: {esc(prose.join(shown))}.")
    return " ".join(out)


def id_cell(claim_id: str) -> str:
    """A claim id that wraps only after its dots (a zero-width space there)."""
    return "{code}`" + claim_id.replace(".", ".\u200b") + "`"


def full_table(claims: list[dict], link_for, own: str | None = None) -> str:
    """Every claim of the page, as the claims cell's readable form: id, verdict
    (second column), statement with source, number · seeds · held-out, and the
    diagnosis of what does not reproduce."""
    rows = []
    for c in sorted(claims, key=lambda c: ORDER.index(label(c))):
        num = number_cell(c)
        diag = c.get("diagnosis") or c.get("note") or ""
        if diag and label(c) not in ("holds", "finding holds", "assumption met"):
            num += f" · {esc(diag)}"
        link = link_for(c)
        rows.append(
            [
                id_cell(c["id"]),
                badge(c),
                statement_cell(c, None if link == own else link),
                num,
            ]
        )
    return "\n".join(
        _list_table(["Claim", "Verdict", "Statement", "Number"], rows, "claims-table")
    )


CHAPTER_NAMES = {
    "phuong2021": "Phuong & Lampert",
    "sarussi2021": "Sarussi et al.",
    "lyu2021": "Lyu et al.",
    "min2024": "Min et al.",
    "synthesis": "Synthesis",
}


CARD_TITLES = {
    "phuong2021": "Phuong & Lampert (2021)",
    "sarussi2021": "Sarussi, Brutzkus & Globerson (2021)",
    "lyu2021": "Lyu, Li, Wang & Arora (2021)",
    "min2024": "Min, Mallada & Vidal (2024)",
    "synthesis": "Synthesis: the four together",
}


def tally_text(claims: list[dict]) -> str:
    """ "2 hold, 1 does not reproduce" (reader verdicts, the misses first)."""
    t = tally(claims)
    held = t.get("holds", 0) + t.get("finding holds", 0) + t.get("assumption met", 0)
    parts = []
    for lab in ORDER:
        if lab in ("holds", "finding holds", "assumption met") or not t.get(lab):
            continue
        parts.append(f"{t[lab]} {lab}")
    if held:
        parts.append(f"{held} {'holds' if held == 1 else 'hold'}")
    return prose.join(parts)
