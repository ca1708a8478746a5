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
n_seeds, 2·n_seeds, … — blocks of fresh seeds — until :func:`held_out_seeds`
seeds are covered (15, or 5 for the MNIST pages); a page with only ``seed``
is run at the next seeds after its default. Each block is one point: a claim
"holds on a block" when its verdict holds there (worst seed of the block) and
its rival fails.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from .pages import Paths, book_pages, parameters, resolve

STORE = Path("data") / "sweeps"
PAGE = Path("book") / "robustness.md"
FIGURES = Path("book") / "images" / "robustness"
SEEDS, SEEDS_MNIST = 15, 5
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


def seed_values(paths: Paths, page: str) -> list[int] | None:
    """The ``seed`` values of a page's held-out sweep (None: no ``seed`` parameter)."""
    decls = parameters(paths, page)
    if "seed" not in decls:
        return None
    first = int(decls["seed"].default)
    block = int(decls["n_seeds"].default) if "n_seeds" in decls else 1
    want = held_out_seeds(paths, page)
    return [first + block * k for k in range(1, math.ceil(want / block) + 1)]


def store_path(paths: Paths, page: str) -> Path:
    return paths.root / STORE / f"{page.replace('/', '__')}.parquet"


def plan(
    paths: Paths, pages: list[str] | None = None, max_seconds: float | None = None
):
    """``[(page, points)]`` of the held-out sweeps; pages without ``seed`` are
    left out (and, with ``max_seconds``, pages whose last run took longer)."""
    from . import runner
    from . import sweep as sw

    out = []
    for page in pages or book_pages(paths):
        seeds = seed_values(paths, page)
        if seeds is None:
            continue
        if max_seconds is not None and runner.last_seconds(paths, page) > max_seconds:
            continue
        out.append((page, sw.make_points(paths, page, [{"seed": s} for s in seeds])))
    return out


def run(
    paths: Paths,
    pages: list[str] | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    max_seconds: float | None = None,
) -> int:
    """Execute the held-out sweeps on one dask cluster and store a table per page."""
    from . import runner
    from . import sweep as sw

    todo = plan(paths, pages, max_seconds)
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
        df = sw.table(pts, sub, extra)
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


def claim_table(df):
    """One row per (page, claim): blocks where it holds with its rival failing,
    seeds covered, the measured range and the rival's range over every block."""
    import pandas as pd

    from . import sweep as sw

    rows = []
    for page, g in df.groupby("page", sort=True):
        summary, _ = sw.summarize(g)
        seeds = int(g.groupby("point")["seeds"].first().fillna(1).sum())
        for s in summary:
            c = g[g["claim"] == s["claim"]]
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
                    seeds=seeds,
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


def _row(r) -> str:
    held = f"{r.holds}/{r.points}" + (f" (+{r.exempt} as stated)" if r.exempt else "")
    if getattr(r, "unreached", 0):
        held += f" ({r.unreached} not reached: the page stopped before this claim)"
    rival = (
        f"{r.rival}: [{_num(r.rival_lo)}, {_num(r.rival_hi)}]"
        if isinstance(r.rival, str)
        else "–"
    )
    stale = " (stale)" if r.stale else ""
    return (
        f"| `{r.claim}` | {r.kind} | {held} | [{_num(r.lo)}, {_num(r.hi)}] | "
        f"{r.relation} {_num(r.threshold)} | {rival} | {_link(r.page)}{stale} |"
    )


HEADER = [
    "| claim | kind | holds on blocks | measured over held-out seeds | test | rival | "
    "page |",
    "|---|---|---|---|---|---|---|",
]


def figure(rows, chapter: str, out: Path) -> Path:
    """One compact panel per chapter: each claim's held-out range and its rival's,
    as a signed relative margin to the threshold (right of 0 passes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = rows.reset_index(drop=True)
    lim = 1.0
    fig, ax = plt.subplots(figsize=(7.4, 0.28 * len(rows) + 1.1))
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
    ax.set_yticklabels([c.split(".", 1)[1] for c in rows["claim"]][::-1], fontsize=8)
    ax.set_xlim(-lim - 0.1, lim + 0.1)
    ax.set_xlabel(
        "signed margin to the threshold, relative (right of 0: the relation holds)",
        fontsize=9,
    )
    ax.set_title(
        f"{CHAPTER_TITLES.get(chapter, chapter)}: claims over held-out seeds "
        f"(thick: claim, grey: rival)",
        fontsize=10,
    )
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
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
        table = claim_table(df)
        weak = table[(table.holds + table.exempt < table.points) | table.error.notna()]
        out += ["## Claims that do not hold on every held-out block", ""]
        if len(weak):
            out += [
                "Each is linked to its page.",
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
                f"{_link(p)} {int(rows[rows.page == p].seeds.iloc[0])} seeds in "
                f"{int(rows[rows.page == p].points.iloc[0])} block(s)"
                for p in pages
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
    what.add_parser("plan", help="print the points `run` would execute")
    what.add_parser("page", help="write book/robustness.md from the stored sweeps")
    parser.set_defaults(fn=command)


def command(args, paths: Paths) -> int:
    """What ``twolayer robustness`` does (:func:`add_parser`)."""
    if args.what == "plan":
        from .runner import last_seconds

        total = 0.0
        for page, pts in plan(paths):
            cost = len(pts) * last_seconds(paths, page)
            total += cost
            print(
                f"{page}: seed = {', '.join(str(p.values['seed']) for p in pts)}  "
                f"(~{cost:.0f} s of page time)"
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
            )
        except KeyboardInterrupt:
            rc = 130
    print(f"wrote {write_page(paths).relative_to(paths.root)}")
    return rc
