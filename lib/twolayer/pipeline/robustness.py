"""How robust is each verdict: every page's claims over held-out seeds.

``make sweeps`` (``twolayer robustness run``) sweeps every
page that has a ``seed`` parameter over seeds it never uses by default, on
dask (:mod:`.sweep`), and stores one Parquet table per page in
``data/sweeps/<chapter>__<name>.parquet`` (with the commit, the library code key
and the page's code it was computed at). ``twolayer robustness
page`` (run by ``make sweeps`` too) writes ``book/robustness.md`` and one figure
per chapter from the stored tables; a table whose page changed since
(:func:`twolayer.pipeline.sweep.page_code`) is marked stale.

Held-out seeds: a page following the book's convention (``seed`` the first of
``n_seeds`` consecutive seeds, default 0..n_seeds-1) is run at ``seed`` =
:data:`HELDOUT_FIRST`, + n_seeds, + 2·n_seeds, … — blocks of seeds no page was
tuned on — until :func:`held_out_seeds` seeds are covered (15: three blocks of
5, or one block for the MNIST pages); a page with only ``seed`` is run at
consecutive seeds from :data:`HELDOUT_FIRST`. Each block is one point: a claim
"holds on a block" when its verdict holds there (worst seed of the block) and
its rival fails.

Data draws (issue 41): a page's data are drawn from ``seed`` (one data set per
block) unless its registry says otherwise (``data:`` in ``<page>.claims.yml``,
:func:`twolayer.protocol.data_mode`): a page with a ``data_seed`` parameter has
it set to the block's seed too; ``data: per_seed`` — each of its seeds draws
its own data set; ``data: "fixed: <why>"`` — the data are not random (the
paper's own points, a fixed subset) and the sweep varies only the init. Each
row of a stored sweep records its ``data_seed`` (None: fixed), so
:func:`heldout_record` counts the data draws a claim survived.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from .pages import Paths, book_pages, parameters, resolve
from .record import table_cell

STORE = Path("data") / "sweeps"
PAGE = Path("book") / "robustness.md"
FIGURES = Path("book") / "images" / "robustness"
SEEDS, SEEDS_MNIST = 15, 5
BLOCKS, BLOCKS_MNIST = 3, 1  # at least this many held-out blocks per page
# The first held-out seed. Blocks 5-24 and 100-120 were seen while pages were
# tuned (and the audits used 500-599), so held-out blocks start here; when a
# threshold or rival is changed after seeing these, move on to fresh ones
# (``twolayer robustness run --first-seed N``) and record them in ``tested_on``.
HELDOUT_FIRST = 1000
STALE_MARKER = "<!-- SWEEPS_STALE -->"
CHAPTER_TITLES = {
    "phuong2021": "Phuong & Lampert 2021",
    "sarussi2021": "Sarussi et al. 2021",
    "lyu2021": "Lyu et al. 2021",
    "min2024": "Min et al. 2024",
    "synthesis": "Synthesis",
}


def is_mnist(paths: Paths, page: str) -> bool:
    """Is it an MNIST page: does its name or its code say MNIST (the code may load
    it through an experiment function of the library, so the name counts too)?"""
    import json

    cells = json.loads(resolve(paths, page).read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return "mnist" in page.lower() or "mnist" in code.lower()


def held_out_seeds(paths: Paths, page: str) -> int:
    """How many held-out seeds a page is swept over: :data:`SEEDS`, or
    :data:`SEEDS_MNIST` for an MNIST page."""
    return SEEDS_MNIST if is_mnist(paths, page) else SEEDS


def seed_values(paths: Paths, page: str, first: int | None = None) -> list[int] | None:
    """The ``seed`` values of a page's held-out sweep, one per block of
    ``n_seeds`` seeds from ``first`` (default :data:`HELDOUT_FIRST`); None: no
    ``seed`` parameter."""
    decls = parameters(paths, page)
    if "seed" not in decls:
        return None
    first = HELDOUT_FIRST if first is None else int(first)
    block = int(decls["n_seeds"].default) if "n_seeds" in decls else 1
    want = held_out_seeds(paths, page)
    least = BLOCKS_MNIST if want == SEEDS_MNIST and is_mnist(paths, page) else BLOCKS
    n = max(least, math.ceil(want / block))
    return [first + block * k for k in range(n)]


def data_mode(paths: Paths, page: str) -> str:
    """How the page's data are drawn: "block", "per_seed" or "fixed: <why>"
    (:func:`twolayer.protocol.data_mode`)."""
    from .. import protocol

    return protocol.data_mode(resolve(paths, page))


def block_point(paths: Paths, page: str, seed: int) -> dict:
    """One held-out block's parameters: ``seed``, and ``data_seed`` = ``seed``
    when the page has that parameter and its data are not fixed."""
    point = {"seed": seed}
    if "data_seed" in parameters(paths, page) and not data_mode(paths, page).startswith(
        "fixed"
    ):
        point["data_seed"] = seed
    return point


def store_path(paths: Paths, page: str) -> Path:
    return paths.root / STORE / f"{page.replace('/', '__')}.parquet"


def plan(
    paths: Paths,
    pages: list[str] | None = None,
    max_seconds: float | None = None,
    first: int | None = None,
):
    """``[(page, points)]`` of the held-out sweeps (:func:`block_point` per block
    of :func:`seed_values`); pages without ``seed`` are left out (and, with
    ``max_seconds``, pages whose last run took longer)."""
    from . import runner
    from . import sweep as sw

    out = []
    for page in pages or book_pages(paths):
        seeds = seed_values(paths, page, first)
        if seeds is None:
            continue
        if max_seconds is not None and runner.last_seconds(paths, page) > max_seconds:
            continue
        points = [block_point(paths, page, s) for s in seeds]
        out.append((page, sw.make_points(paths, page, points)))
    return out


def run(
    paths: Paths,
    pages: list[str] | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    max_seconds: float | None = None,
    first: int | None = None,
) -> int:
    """Execute the held-out sweeps on one dask cluster and store a table per page."""
    from . import runner
    from . import sweep as sw

    todo = plan(paths, pages, max_seconds, first)
    # longest first: both cores busy to the end
    todo.sort(key=lambda t: -runner.last_seconds(paths, t[0]))
    flat = [p for _, pts in todo for p in pts]
    print(f"held-out sweeps: {len(todo)} page(s), {len(flat)} point(s)", flush=True)
    outcome = sw.run_points(paths, flat, workers=workers, scheduler=scheduler)
    extra = dict(code_key=sw.code_key(), commit=sw.commit(paths.root))
    offset = 0
    for page, pts in todo:
        sub = sw.Outcome(
            results={
                i: outcome.results[offset + i]
                for i in range(len(pts))
                if offset + i in outcome.results
            }
        )
        offset += len(pts)
        if len(sub.results) < len(pts):
            print(
                f"  {page}: {len(sub.results)}/{len(pts)} point(s) finished; not "
                "stored",
                flush=True,
            )
            continue
        df = sw.table(pts, sub, {**extra, "data": data_mode(paths, page)})
        sw.write_table(df, store_path(paths, page))
        lines, _ = sw.summary_lines(df)
        print(
            f"  {page}: stored {store_path(paths, page).relative_to(paths.root)}\n"
            + "\n".join(lines)
        )
    return 130 if outcome.interrupted else 0


# ---------------------------------------------------------------------------
# the page


def load(paths: Paths):
    """Every stored sweep as one table, with ``stale`` (the page's code changed
    since) and ``missing`` (the page is gone) per row."""
    import pandas as pd

    from . import sweep as sw

    frames = []
    pages = set(book_pages(paths))
    for f in sorted((paths.root / STORE).glob("*.parquet")):
        df = pd.read_parquet(f)
        if df.empty or not {"page", "page_code", "claim", "holds"} <= set(df.columns):
            continue  # not a held-out sweep of this module
        page = df["page"].iloc[0]
        df["missing"] = page not in pages
        df["stale"] = (
            True
            if page not in pages
            else bool((df["page_code"] != sw.page_code(paths, page)).any())
        )
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is _NA


try:  # pandas' missing value, compared by identity
    from pandas import NA as _NA
except ImportError:  # pragma: no cover
    _NA = None


def heldout_from_table(df, mode: str = "block", stale: bool = False) -> dict:
    """Each claim's held-out record in one page's stored sweep ``df``
    (:func:`heldout_record`); plain Python over the rows (a few dozen)."""
    from . import sweep as sw

    rows = [
        r
        for r in df.to_dict("records")
        if not str(r.get("error") or "").startswith("not executed")
    ]
    points = sorted({int(r["point"]) for r in rows})
    block, page_seeds, draws_of = {}, {}, {}
    for r in rows:
        p = int(r["point"])
        seed = r.get("seed")
        block.setdefault(p, p if _missing(seed) else int(seed))
        if not _missing(r.get("seeds")):
            page_seeds[p] = max(page_seeds.get(p, 0), int(r["seeds"]))
        if not _missing(r.get("data_seed")):
            draws_of.setdefault(p, int(r["data_seed"]))
    if str(mode).startswith("fixed"):
        block_draws = 1
    elif "data_seed" not in df.columns:
        block_draws = None  # stored before sweeps recorded their data draws
    else:  # none recorded (a sweep stored before, concatenated with newer ones)
        block_draws = len(set(draws_of.values())) or None
    claims: dict[str, list[dict]] = {}
    for r in rows:
        if isinstance(r.get("claim"), str):
            claims.setdefault(r["claim"], []).append(r)
    out = {}
    for claim in sorted(claims):
        g = claims[claim]
        held = {int(r["point"]) for r in g if r.get("holds") is True}
        exempt = {
            int(r["point"])
            for r in g
            if isinstance(r.get("verdict"), str)
            and sw._exempt(
                dict(
                    verdict=r["verdict"],
                    kind=r.get("kind"),
                    note=r["note"] if isinstance(r.get("note"), str) else "",
                )
            )
        }
        own = {
            int(r["point"]): int(r["seeds"]) for r in g if not _missing(r.get("seeds"))
        }
        seeds = sum(own.get(p, page_seeds.get(p, 1)) for p in points)
        draws = seeds if block_draws is not None and mode == "per_seed" else block_draws
        recorded = [r for r in g if isinstance(r.get("relation"), str)]
        bound = sw._probability_bound(recorded[0].get("why")) if recorded else None
        pooled = None
        if bound is not None:
            n = sum(int(r["seeds"]) for r in recorded)
            k = sum(float(r["measured"]) * int(r["seeds"]) for r in recorded)
            pooled = k / n if n else None
        out[claim] = dict(
            blocks=len(points),
            holds=len(held),
            seeds=int(seeds),
            data_draws=draws,
            stale=bool(stale),
            exempt=len(exempt),
            block_seeds=[block[p] for p in points],
            misses=[block[p] for p in points if p not in held],
            pooled_frequency=pooled,
        )
    return out


def heldout_record(paths: Paths, page: str) -> dict[str, dict] | None:
    """The held-out record of each claim of ``page`` in its stored sweep
    (``data/sweeps/<chapter>__<name>.parquet``), by claim id — what the ledger
    writes as ``heldout`` (claims format v3), the robustness page and the
    verdict boxes show. None when the page has no ``seed`` parameter or no
    stored sweep.

    Each record: ``blocks`` run (points executed), ``holds`` — blocks where the
    claim holds with its rival failing, ``seeds`` — init seeds covered (each
    block's ``seeds``; a probability claim's trials), ``data_draws`` — distinct
    data sets (1 for a page whose data are fixed, None for a sweep stored
    before draws were recorded), ``stale`` — the page's code changed since
    (:func:`twolayer.pipeline.sweep.page_code`), ``exempt`` — blocks where it
    is "does not reproduce", "not resolved" or an unmet assumption as its page
    states, ``block_seeds`` — each block's first seed, ``misses`` — the blocks'
    first seeds where it does not hold, ``pooled_frequency`` — for a
    probability claim, its frequency pooled over every block (else None).
    """
    import pandas as pd

    from . import sweep as sw

    path = store_path(paths, page)
    if not path.is_file() or "seed" not in parameters(paths, page):
        return None
    df = pd.read_parquet(path)
    if df.empty or not {"page", "page_code", "claim", "holds"} <= set(df.columns):
        return None
    stale = bool((df["page_code"] != sw.page_code(paths, page)).any())
    return heldout_from_table(df, data_mode(paths, page), stale)


def refresh_heldout(paths: Paths, page: str, claims_json: Path) -> bool:
    """Rewrite the ``heldout`` of every claim in a published claims JSON from
    the page's stored sweep as it is now (a cached run may predate the sweep);
    True if the file changed."""
    import json
    import os

    from .. import claims as claims_mod

    payload = json.loads(claims_json.read_text())
    before = json.dumps(payload, sort_keys=True)
    try:
        records = heldout_record(paths, page)
    except (OSError, ValueError, KeyError) as exc:  # the build goes on; say why
        print(f"  {page}: held-out record not read ({type(exc).__name__}: {exc})")
        records = None
    claims_mod.with_heldout(payload, records)
    if json.dumps(payload, sort_keys=True) == before:
        return False
    tmp = claims_json.with_name(claims_json.name + ".heldout.tmp")
    tmp.write_text(json.dumps(payload, indent=1, allow_nan=False))
    os.replace(tmp, claims_json)
    return True


def history(paths: Paths, page: str) -> dict[str, dict]:
    """Each registry entry's ``changed`` / ``chosen_on`` / ``tested_on`` (claims
    format v3), by registry key (a claim id or an id pattern)."""
    from .. import protocol

    try:
        entries = protocol.load(protocol.path_for(resolve(paths, page)))
    except (FileNotFoundError, ValueError, KeyError):
        return {}
    keys = ("changed", "chosen_on", "tested_on")
    return {k: {f: v.get(f) for f in keys} for k, v in entries.items()}


def _history_of(hist: dict, claim: str) -> dict:
    from .. import protocol

    if claim in hist:
        return hist[claim]
    for key, h in hist.items():
        if "{" in key and protocol.id_pattern(key).fullmatch(claim):
            return h
    return {}


def claim_table(df, paths: Paths | None = None):
    """One row per (page, claim): its held-out record (:func:`heldout_from_table`,
    the one computation the ledger's ``heldout`` uses too), the measured range
    and the rival's range over every block, and (with ``paths``) when its
    threshold or rival was last changed and on which blocks it was tested since."""
    import pandas as pd

    from . import sweep as sw

    rows = []
    for page, g in df.groupby("page", sort=True):
        summary, _ = sw.summarize(g)
        seeds = int(g.groupby("point")["seeds"].first().fillna(1).sum())
        mode, hist = "block", {}
        if paths is not None and not bool(g["missing"].iloc[0]):
            mode, hist = data_mode(paths, page), history(paths, page)
        records = heldout_from_table(g, mode, bool(g["stale"].iloc[0]))
        for s in summary:
            c = g[g["claim"] == s["claim"]]
            rec = records.get(s["claim"], {})
            h = _history_of(hist, s["claim"])
            lo = c["spread_min"].where(c["spread_min"].notna(), c["measured"]).min()
            hi = c["spread_max"].where(c["spread_max"].notna(), c["measured"]).max()
            rows.append(
                dict(
                    page=page,
                    claim=s["claim"],
                    kind=s["kind"],
                    points=s["points"],
                    holds=s["holds"],
                    exempt=s["exempt"],
                    # points that stopped before recording it (a point stopped
                    # on this very claim has a row naming it, with its error)
                    unreached=s["points"] - int(c["point"].nunique()),
                    need=s["need"],
                    enough=s["enough"],
                    seeds=rec.get("seeds", seeds),
                    data_draws=rec.get("data_draws"),
                    misses=rec.get("misses", []),
                    pooled=rec.get("pooled_frequency"),
                    block_seeds=rec.get("block_seeds", []),
                    changed=h.get("changed"),
                    chosen_on=h.get("chosen_on"),
                    tested_on=h.get("tested_on"),
                    relation=s["relation"],
                    threshold=s["threshold"],
                    lo=lo,
                    hi=hi,
                    rival=c["rival"].dropna().iloc[0]
                    if c["rival"].notna().any()
                    else None,
                    rival_lo=s["rival_min"],
                    rival_hi=s["rival_max"],
                    stale=bool(g["stale"].iloc[0]),
                    commit=str(g["commit"].iloc[0]),
                    error=next(
                        (
                            e
                            for e, v in zip(c["error"], c["verdict"])
                            if isinstance(e, str)
                            and not isinstance(v, str)
                            and not e.startswith("not executed")
                        ),
                        None,
                    ),
                )
            )
    return pd.DataFrame(rows)


def _num(x) -> str:
    from ..claims import significant

    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return significant(float(x), 3)


_TOC: set[str] = set()


def _toc_pages(paths: Paths) -> set[str]:
    """The pages ``_toc.yml`` lists (``chapter/name``): only those are linked (a
    link to a page outside the book is a warning, and the build treats warnings
    as errors)."""
    import re

    text = (paths.root / "_toc.yml").read_text()
    return {m.removeprefix("book/") for m in re.findall(r"file:\s*(\S+)", text)}


def _link(page: str) -> str:
    return f"[{page}]({page}.ipynb)" if page in _TOC else f"`{page}`"


def _crashed(df) -> list[str]:
    """The blocks on which a page stopped before recording its claims."""
    error = df["error"].fillna("")
    skipped = error.str.startswith("not executed")
    crashed = df[df["claim"].isna() & (error != "") & ~skipped]
    if not len(crashed):
        return []
    out = [
        "Blocks on which the page stopped before recording its claims (they count as "
        "not holding there):",
        "",
    ]
    for r in crashed.itertuples():
        seed = getattr(r, "seed", None)
        where = f" `seed = {int(seed)}`" if seed is not None and seed == seed else ""
        out.append(f"- {_link(r.page)}{where}: {r.error}")
    return [*out, ""]


def _blocks_text(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def _seeds_text(r) -> str:
    draws = getattr(r, "data_draws", None)
    if draws is None or (isinstance(draws, float) and math.isnan(draws)):
        return f"{r.seeds} / not recorded"
    return f"{r.seeds} / {int(draws)}"


def _history_text(r) -> str:
    parts = []
    if _blocks_text(getattr(r, "changed", None)):
        parts.append(f"changed {_blocks_text(r.changed)}")
    if _blocks_text(getattr(r, "chosen_on", None)):
        parts.append(f"chosen on {_blocks_text(r.chosen_on)}")
    if _blocks_text(getattr(r, "tested_on", None)):
        parts.append(f"tested since on {_blocks_text(r.tested_on)}")
    return table_cell("; ".join(parts)) if parts else "–"


def _row(r) -> str:
    held = f"{r.holds}/{r.points}" + (f" (+{r.exempt} as stated)" if r.exempt else "")
    if getattr(r, "unreached", 0):
        held += f" ({r.unreached} not reached: the page stopped before this claim)"
    misses = list(getattr(r, "misses", []) or [])
    if misses:
        held += f"; misses block(s) {', '.join(str(m) for m in misses)}"
    pooled = getattr(r, "pooled", None)
    if pooled is not None and not (isinstance(pooled, float) and math.isnan(pooled)):
        held += f"; pooled frequency {_num(pooled)}"
    rival = (
        f"{r.rival}: [{_num(r.rival_lo)}, {_num(r.rival_hi)}]"
        if isinstance(r.rival, str)
        else "–"
    )
    stale = " (stale)" if r.stale else ""
    return (
        f"| `{r.claim}` | {r.kind} | {held} | {_seeds_text(r)} | "
        f"[{_num(r.lo)}, {_num(r.hi)}] | "
        f"{r.relation} {_num(r.threshold)} | {rival} | {_history_text(r)} | "
        f"{_link(r.page)}{stale} |"
    )


HEADER = [
    "| claim | kind | holds on blocks (of run) | init seeds / data draws | "
    "measured over held-out seeds | test | rival | last changed, tested since | "
    "page |",
    "|---|---|---|---|---|---|---|---|---|",
]


def _page_blocks(paths: Paths, page: str, rows) -> str:
    """'<page> 3 block(s) from seeds 1000, 1005, 1010' — and whether those are
    the current plan's fresh blocks."""
    first = rows.iloc[0]
    blocks = list(first.block_seeds) if len(first.block_seeds) else []
    text = f"{_link(page)} {int(first.points)} block(s)"
    if blocks:
        text += f" from seeds {', '.join(str(b) for b in blocks)}"
    try:
        plan_seeds = seed_values(paths, page)
    except Exception:  # noqa: BLE001 - a page that cannot be read: no plan
        plan_seeds = None
    if plan_seeds is not None and blocks and sorted(blocks) != sorted(plan_seeds):
        text += " (not yet the fresh blocks of `make sweeps`)"
    return text


def figure(rows, chapter: str, out: Path) -> Path:
    """One compact panel per chapter: each claim's held-out range and its rival's,
    as a signed relative margin to the threshold (right of 0 passes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .. import plots

    rows = rows.reset_index(drop=True)
    lim = 1.0
    font = plots.MIN_FONT  # page width, the book's smallest font: legible on a phone
    fig, ax = plt.subplots(figsize=(plots.PAGE_WIDTH, 0.42 * len(rows) + 1.6))
    for i, r in rows.iterrows():

        def margin(v):
            if v is None or (isinstance(v, float) and math.isnan(v)):
                return None
            sign = 1 if r.relation in (">", ">=") else -1
            scale = max(abs(r.threshold), abs(v), 1e-300)
            return max(-2.0, min(2.0, sign * (v - r.threshold) / scale))

        nonlocal_lim = [
            abs(m)
            for m in (
                margin(r.lo),
                margin(r.hi),
                margin(r.rival_lo),
                margin(r.rival_hi),
            )
            if m is not None
        ]
        lim = max([lim, *nonlocal_lim])
        a, b = margin(r.lo), margin(r.hi)
        y = len(rows) - 1 - i
        color = (
            "tab:blue"
            if r.enough and r.holds == r.points
            else ("tab:orange" if r.enough else "tab:red")
        )
        if a is not None:
            ax.plot(
                [min(a, b), max(a, b)], [y, y], color=color, lw=5, solid_capstyle="butt"
            )
            ax.plot([min(a, b), max(a, b)], [y, y], "|", color=color, ms=9)
        ra, rb = margin(r.rival_lo), margin(r.rival_hi)
        if ra is not None:
            ax.plot(
                [min(ra, rb), max(ra, rb)],
                [y - 0.25, y - 0.25],
                color="0.55",
                lw=2.5,
                solid_capstyle="butt",
                marker="o",
                ms=3.5,
            )
    ax.axvline(0, color="k", lw=1)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([c.split(".", 1)[1] for c in rows["claim"]][::-1], fontsize=font)
    ax.set_xlim(-lim - 0.1, lim + 0.1)
    ax.set_xlabel(
        "relative margin to the threshold (right of 0: holds)",
        fontsize=font,
    )
    ax.set_title(
        f"{CHAPTER_TITLES.get(chapter, chapter)}: held-out seeds\n"
        "thick: the claim, grey: its rival",
        fontsize=font,
    )
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    ax.tick_params(labelsize=font)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def markdown(paths: Paths, figures: bool = True) -> str:
    """The robustness page (and, with ``figures``, its figures under
    ``book/images/robustness``)."""
    _TOC.clear()
    _TOC.update(_toc_pages(paths))
    df = load(paths)
    swept = set(df["page"]) if len(df) else set()
    no_seed = [p for p in book_pages(paths) if seed_values(paths, p) is None]
    not_run = [p for p in book_pages(paths) if p not in swept and p not in no_seed]
    out = [
        "# How robust is each verdict",
        "",
        "Every page decides its verdicts on the seeds it runs by default. This page "
        "reruns each page that has a `seed` parameter on seeds it never uses — blocks "
        "of fresh seeds (`seed` = n_seeds, 2·n_seeds, … for a page running `n_seeds` "
        f"seeds), {SEEDS} held-out seeds per page, {SEEDS_MNIST} for the MNIST pages — "
        "and counts, for every claim, the blocks on which it holds with its rival "
        "failing. The ranges are over every held-out seed (each block's seed spread); "
        "the rival's range is where the alternative the theorem rules out landed.",
        "",
        "The sweeps are computed by `make sweeps` (`twolayer sweep` on Dask, see the "
        "README) and stored in `data/sweeps/`, each with the commit and library code "
        "it was computed at; a page whose code changed since is marked *stale* until "
        "`make sweeps` runs again.",
        "",
        f"**Fresh blocks.** The held-out blocks start at seed {HELDOUT_FIRST}: no "
        "threshold or rival was chosen on them. A claim whose threshold or rival "
        "was changed after seeing a held-out block says so in its registry "
        "(`changed`, `chosen_on`) and is tested again on blocks drawn after the "
        "change (`tested_on`; `twolayer robustness run --first-seed N`).",
        "",
        "**Data draws.** A held-out block redraws the data as well as the "
        "initialisation: a page's data are drawn from its `seed` (one data set per "
        "block), or from its `data_seed` parameter, which the sweep sets to the "
        "block's seed; a page whose seeds each draw their own data set says "
        "`data: per_seed` in its claims registry, and a page whose data are not "
        "random (the paper's own points, a fixed subset) says `data: 'fixed: "
        "<why>'`, and then only the initialisation varies. The column *init "
        "seeds / data draws* counts both over the blocks; 'not recorded' marks a "
        "sweep stored before the draws were recorded.",
        "",
        STALE_MARKER,
        "",
    ]
    if not len(df):
        out += [
            "```{note}",
            "No held-out sweep is stored yet: run `make sweeps`.",
            "```",
            "",
        ]
    else:
        table = claim_table(df, paths)
        weak = table[(table.holds < table.points) | table.error.notna()]
        out += ["## Claims that do not hold on every held-out block", ""]
        if len(weak):
            out += [
                "Each is linked to its page. Listed too: a claim its page states "
                "does not reproduce or is not resolved there, or an assumption its "
                "page discusses (counted as '+n as stated'). On its page and in "
                "the ledger such a claim reads with this record, never as a plain "
                "'holds'.",
                "",
                *HEADER,
                *[_row(r) for r in weak.sort_values(["page", "claim"]).itertuples()],
                "",
            ]
            errs = weak[weak.error.notna()]
            for r in errs.itertuples():
                out.append(f"- `{r.claim}` ({_link(r.page)}): {r.error}")
            if len(errs):
                out.append("")
            out += _crashed(df)
        else:
            out += [
                "None: every swept claim holds, with its rival failing, on every "
                "held-out block.",
                "",
            ]
        stale = sorted(set(table[table.stale].page))
        if stale:
            out += [
                "```{warning}",
                "Stale (the page changed since its sweep): "
                + ", ".join(_link(p) for p in stale)
                + ". Run `make sweeps`.",
                "```",
                "",
            ]
        for chapter in CHAPTER_TITLES:
            rows = table[table.page.str.split("/").str[0] == chapter]
            if not len(rows):
                continue
            out += [f"## {CHAPTER_TITLES[chapter]}", ""]
            if figures:
                fig = figure(rows, chapter, paths.root / FIGURES / f"{chapter}.png")
                rel = fig.relative_to(paths.book)
                out += [
                    f"```{{figure}} {rel.as_posix()}",
                    f":name: robustness-{chapter}",
                    "",
                    "Each claim's measured range over the held-out seeds (thick; blue: "
                    "holds on every block, orange: holds except where its page says it "
                    "does not, "
                    "red: not) and its rival's (grey dots), as "
                    "the signed margin to the threshold relative to max(|threshold|, "
                    "|value|), clipped to ±2.",
                    "```",
                    "",
                ]
            pages = sorted(set(rows.page))
            seeds = ", ".join(
                _page_blocks(paths, p, rows[rows.page == p]) for p in pages
            )
            out += [
                f"Held out: {seeds}.",
                "",
                *HEADER,
                *[_row(r) for r in rows.itertuples()],
                "",
            ]
    if no_seed or not_run:
        out += ["## Pages not swept", ""]
        if no_seed:
            out.append(
                "Without a `seed` parameter (deterministic, or not yet seeded): "
                + ", ".join(_link(p) for p in no_seed)
                + "."
            )
        if not_run:
            out.append("")
            out.append(
                "No stored sweep yet: " + ", ".join(_link(p) for p in not_run) + "."
            )
        out.append("")
    return "\n".join(out)


def stale_markdown(paths: Paths) -> str:
    """Checked at build time (the ``SWEEPS_STALE`` marker): the stored sweeps
    whose page changed since they were computed."""
    _TOC.clear()
    _TOC.update(_toc_pages(paths))
    df = load(paths)
    if not len(df):
        return ""
    stale = sorted(set(df[df["stale"]]["page"]))
    if not stale:
        return ""
    return (
        "```{warning}\nStale at this build (the page changed since its sweep): "
        + ", ".join(_link(p) for p in stale)
        + ". Run `make sweeps`.\n```\n"
    )


def write_page(paths: Paths) -> Path:
    target = paths.root / PAGE
    target.write_text(markdown(paths) + "\n")
    return target


def add_parser(sub) -> None:
    """``twolayer robustness run|plan|page`` (``make sweeps``) under the
    ``twolayer`` command's subparsers ``sub``."""
    parser = sub.add_parser(
        "robustness",
        help="held-out-seed sweeps of every page, and the robustness page",
        description="Held-out-seed sweeps of every page, and the robustness page.",
    )
    what = parser.add_subparsers(dest="what", required=True)
    p = what.add_parser(
        "run", help="compute and store the held-out sweeps, then write the page"
    )
    p.add_argument(
        "pages",
        nargs="*",
        help="chapter/name (default: every page with a seed parameter)",
    )
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--scheduler", default=None)
    p.add_argument(
        "--max-seconds",
        type=float,
        default=None,
        help="only pages whose last run took at most this long",
    )
    p.add_argument(
        "--first-seed",
        type=int,
        default=None,
        help=f"first held-out seed (default {HELDOUT_FIRST}); fresh blocks after a "
        "threshold or rival changed on seeing the stored ones",
    )
    q = what.add_parser("plan", help="print the points `run` would execute")
    q.add_argument("--first-seed", type=int, default=None)
    what.add_parser("page", help="write book/robustness.md from the stored sweeps")
    parser.set_defaults(fn=command)


def command(args, paths: Paths) -> int:
    """What ``twolayer robustness`` does (:func:`add_parser`)."""
    if args.what == "plan":
        from .runner import last_seconds

        total = 0.0
        for page, pts in plan(paths, first=args.first_seed):
            cost = len(pts) * last_seconds(paths, page)
            total += cost
            mode = data_mode(paths, page)
            data = (
                "data fixed"
                if mode.startswith("fixed")
                else f"data drawn {'per seed' if mode == 'per_seed' else 'per block'}"
            )
            print(
                f"{page}: seed = {', '.join(str(p.values['seed']) for p in pts)}; "
                f"{data}  (~{cost:.0f} s of page time)"
            )
        print(
            f"~{total:.0f} s of page time in all (the pages' last runs), "
            f"~{total / (os.cpu_count() or 1):.0f} s wall on {os.cpu_count()} cores"
        )
        return 0
    rc = 0
    if args.what == "run":
        try:
            rc = run(
                paths,
                args.pages or None,
                args.workers,
                args.scheduler,
                args.max_seconds,
                args.first_seed,
            )
        except KeyboardInterrupt:
            rc = 130
    print(f"wrote {write_page(paths).relative_to(paths.root)}")
    return rc
