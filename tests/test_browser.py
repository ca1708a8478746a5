"""The rendered book in a real browser (``make browser``, after ``make book``).

Debian's ``chromium`` + ``chromium-driver`` (installed by ``.ci/run``), headless,
driven by selenium against ``_build/html`` served on localhost. Every page is
visited once; the tests below then check, for every page: no console error,
no asset fetched from outside localhost, every image loaded, the math typeset
by MathJax (no raw TeX left), every internal link and anchor resolving; and
for the chapters: the claims table, the run record, the notebook download.
A full-page screenshot of each page under ``book/`` lands in
``_build/screenshots/``.

The tests skip (with the reason) only when chromium or its driver is not
installed; a missing site is a failure.
"""

from __future__ import annotations

import base64
import functools
import http.server
import json
import re
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from twolayer import claims as claims_mod
from twolayer import pipeline

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
CHROME_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,900",
)
PAGE_TIMEOUT = 60  # seconds for a page, its images and MathJax

# Raw TeX left in the text of a page (code blocks and typeset math removed):
# delimiters MathJax should have consumed, or $...$ holding a TeX command.
RAW_MATH = re.compile(r"\$\$|\\\(|\\\)|\\\[|\\\]|\$[^$\n]*\\[a-zA-Z]+[^$\n]*\$")

JS_WAIT_ASSETS = """
const done = arguments[arguments.length - 1];
const imgs = [...document.images];
imgs.forEach(i => { i.loading = 'eager'; });
const loaded = Promise.all(imgs.map(i => i.complete ? null :
    new Promise(r => {
        i.addEventListener('load', r);
        i.addEventListener('error', r);
    })));
const mj = (window.MathJax && MathJax.startup && MathJax.startup.promise)
    ? MathJax.startup.promise : null;
Promise.all([loaded, mj]).then(() => done('ok'), e => done('MathJax failed: ' + e));
"""

JS_COLLECT = """
const main = document.querySelector('main') || document.body;
const clone = main.cloneNode(true);
clone.querySelectorAll('pre, code, script, style, textarea, mjx-container, .highlight')
     .forEach(e => e.remove());
return {
  title: document.title,
  mathjax: !!(window.MathJax && window.MathJax.startup),
  images: [...document.images]
          .map(i => [i.getAttribute('src'), i.naturalWidth, i.complete]),
  math_nodes: document.querySelectorAll('span.math, div.math').length,
  typeset: document.querySelectorAll('mjx-container').length,
  math_errors: [...document.querySelectorAll('mjx-merror, [data-mjx-error]')]
               .map(e => e.getAttribute('data-mjx-error') || e.textContent),
  text: clone.textContent,
  main_text: main.innerText,
  links: [...document.querySelectorAll('a[href]')].map(a => a.href),
  resources: performance.getEntriesByType('resource').map(e => e.name),
  tables: [...main.querySelectorAll('table')]
          .map(t => [t.innerText, t.querySelectorAll('tbody tr').length]),
  height: Math.max(document.body.scrollHeight, document.documentElement.scrollHeight),
  loose_images: [...main.querySelectorAll('img')].filter(i => !i.closest('figure'))
                .map(i => i.getAttribute('src')),
  figures: [...main.querySelectorAll('figure')].map(f => {
      const cap = f.querySelector('figcaption');
      const num = cap ? cap.querySelector('.caption-number') : null;
      return [cap ? cap.innerText : '', num ? num.innerText : ''];
  }),
  overflowing_code: [...main.querySelectorAll(
                        '.cell_input pre, div.highlight-python pre, '
                        + 'div.highlight-ipython3 pre')]
                    .filter(p => p.scrollWidth > p.clientWidth + 1)
                    .map(p => p.innerText.split('\\n')
                               .reduce((a, b) => a.length >= b.length ? a : b)),
  nav_text: [...document.querySelectorAll(
                'nav.bd-docs-nav, .bd-sidebar-primary nav, .bd-toc-nav')]
            .map(n => n.innerText).join('\\n'),
};
"""


@dataclass
class Visit:
    """What one page looked like in the browser."""

    page: str
    ready: str
    console_errors: list[str]
    data: dict = field(default_factory=dict)


@pytest.fixture(scope="module")
def paths() -> pipeline.Paths:
    return pipeline.Paths(pipeline.project_root())


@pytest.fixture(scope="module")
def site(paths) -> Path:
    html = paths.build / "html"
    if not (html / "index.html").exists():
        pytest.fail(
            f"no built site at {html}: run `make book` (or `twolayer build`) first"
        )
    return html


@pytest.fixture(scope="module")
def server(site):
    """``_build/html`` over HTTP on a free localhost port."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(site))
    )
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


BROWSERS = 2  # pages visited in parallel (one headless chromium each)


def _chromium(profile: Path):
    """A headless chromium under selenium, with its own profile folder."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in CHROME_ARGS:
        opts.add_argument(arg)
    opts.add_argument(f"--user-data-dir={profile}")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    drv.set_page_load_timeout(PAGE_TIMEOUT)
    drv.set_script_timeout(PAGE_TIMEOUT)
    return drv


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    if missing:
        pytest.skip(
            f"chromium not installed ({', '.join(missing)} missing): "
            "apt-get install chromium chromium-driver (.ci/run does it)"
        )
    drv = _chromium(tmp_path_factory.mktemp("chromium-profile"))
    yield drv
    drv.quit()


def site_pages(site: Path) -> list[str]:
    """Every HTML page of the site (not the theme's assets)."""
    return sorted(
        str(p.relative_to(site))
        for p in site.rglob("*.html")
        if not any(part.startswith("_") for part in p.relative_to(site).parts)
    )


def executed_pages(paths: pipeline.Paths) -> list[str]:
    """Every page the build executes: the notebooks (and declared variants)."""
    return getattr(pipeline, "book_pages", pipeline.notebook_ids)(paths)


def notebook_pages(paths: pipeline.Paths) -> dict[str, str]:
    """``chapter/name`` -> its HTML page, for every executed page."""
    return {nb: f"book/{nb}.html" for nb in executed_pages(paths)}


def screenshot(drv, height: int, out: Path, width: int = 1280) -> None:
    """A full-page PNG (capped at 16,000 px high)."""
    shot = drv.execute_cdp_cmd(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {
                "x": 0,
                "y": 0,
                "width": width,
                "height": min(max(height, 900), 16000),
                "scale": 1,
            },
        },
    )
    out.write_bytes(base64.b64decode(shot["data"]))


def _load(driver, url: str) -> tuple[str, dict, list[str]]:
    """Open ``url``, wait for its assets; its readiness, collected data and the
    console's SEVERE messages."""
    driver.get(url)
    ready = driver.execute_async_script(JS_WAIT_ASSETS)
    data = driver.execute_script(JS_COLLECT)
    errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    return ready, data, errors


JS_NEXT_FRAME = """
const done = arguments[arguments.length - 1];
requestAnimationFrame(() => requestAnimationFrame(() => done(true)));
"""


@pytest.fixture(scope="module")
def visits(driver, server, site, paths, tmp_path_factory) -> dict[str, Visit]:
    """Visit every page once, :data:`BROWSERS` pages at a time; screenshot the
    pages under ``book/``. The reader's view (:data:`JS_READER`) is read on the
    same visit at each of :data:`WIDTHS`: the window is narrowed on the loaded page
    (its images and typeset math do not change with the width), so no page is
    loaded twice; screenshots of the narrower widths in
    ``_build/screenshots/<width>/``."""
    from concurrent.futures import ThreadPoolExecutor

    shots = paths.build / "screenshots"
    if shots.exists():
        shutil.rmtree(shots)
    shots.mkdir(parents=True)
    for width in WIDTHS[1:]:
        (shots / str(width)).mkdir()
    pages = site_pages(site)
    assert pages, f"no pages in {site}"
    drivers = [driver] + [
        _chromium(tmp_path_factory.mktemp("chromium-profile"))
        for _ in range(min(BROWSERS, len(pages)) - 1)
    ]
    try:
        with ThreadPoolExecutor(len(drivers)) as pool:
            parts = pool.map(
                lambda i: _visit_pages(
                    drivers[i], server, pages[i :: len(drivers)], shots
                ),
                range(len(drivers)),
            )
            out = {page: visit for part in parts for page, visit in part.items()}
    finally:
        for extra in drivers[1:]:
            extra.quit()
    return {page: out[page] for page in pages}


def _visit_pages(driver, server: str, pages: list[str], shots: Path) -> dict:
    """:func:`visits`' work on one browser."""
    driver.set_window_size(WIDTHS[0], 900)
    driver.get_log("browser")  # start from an empty console
    out = {}
    try:
        for page in pages:
            ready, data, errors = _load(driver, server + page)
            if errors:  # a real error repeats; a fetch lost on a loaded host does not
                ready, data, errors = _load(driver, server + page)
            out[page] = Visit(page, ready, errors, data)
            name = page.removesuffix(".html").replace("/", "__") + ".png"
            data["reader"] = {WIDTHS[0]: driver.execute_script(JS_READER)}
            if page.startswith("book/"):
                screenshot(driver, data["height"], shots / name)
            for width in WIDTHS[1:]:
                driver.set_window_size(width, 900)
                driver.execute_async_script(JS_NEXT_FRAME)  # the theme's resize
                data["reader"][width] = driver.execute_script(JS_READER)
                if page.startswith("book/"):
                    h = driver.execute_script(
                        "return document.documentElement.scrollHeight"
                    )
                    screenshot(driver, h, shots / str(width) / name, width=width)
            if len(WIDTHS) > 1:
                driver.set_window_size(WIDTHS[0], 900)
    finally:
        driver.set_window_size(WIDTHS[0], 900)
    return out


def failures(visits: dict[str, Visit], check) -> str:
    """One line per failing page (``check`` returns a list of problems)."""
    lines = []
    for page, visit in visits.items():
        lines += [f"{page}: {problem}" for problem in check(visit)]
    return "\n".join(lines)


def test_no_console_errors(visits):
    bad = failures(visits, lambda v: v.console_errors)
    assert not bad, "console errors:\n" + bad


def test_pages_finish_loading(visits):
    bad = failures(visits, lambda v: [] if v.ready == "ok" else [v.ready])
    assert not bad, bad


def test_every_asset_is_local(visits, server):
    """Nothing is fetched from the internet (a CDN, web fonts, require.js ...)."""

    def outside(v: Visit) -> list[str]:
        return [
            url
            for url in v.data["resources"]
            if not url.startswith((server, "data:", "blob:"))
        ]

    bad = failures(visits, outside)
    assert not bad, "assets loaded from outside the site:\n" + bad


def test_every_image_loaded(visits):
    def broken(v: Visit) -> list[str]:
        return [
            f"image {src} did not load"
            for src, width, complete in v.data["images"]
            if not complete or width == 0
        ]

    bad = failures(visits, broken)
    assert not bad, bad


def test_math_is_typeset(visits):
    """MathJax (served from ``_static/mathjax``) turned every formula into
    typeset math: no raw TeX delimiters left, no TeX errors."""

    def raw_math(v: Visit) -> list[str]:
        problems = [
            "raw TeX left: "
            f"...{v.data['text'][max(0, m.start() - 40) : m.end() + 40]!r}..."
            for m in RAW_MATH.finditer(v.data["text"])
        ]
        if v.data["math_nodes"] and not v.data["mathjax"]:
            problems.append(f"{v.data['math_nodes']} formulas but MathJax did not load")
        if v.data["typeset"] < v.data["math_nodes"]:
            problems.append(
                f"{v.data['math_nodes']} formulas, {v.data['typeset']} typeset"
            )
        problems += [f"TeX error: {e}" for e in v.data["math_errors"]]
        return problems

    bad = failures(visits, raw_math)
    assert not bad, bad
    assert any(v.data["typeset"] for v in visits.values()), (
        "no page has typeset math at all"
    )


@functools.lru_cache(maxsize=None)
def _ids(path: Path) -> frozenset[str]:
    return frozenset(re.findall(r'\bid="([^"]+)"', path.read_text(errors="replace")))


def test_internal_links_resolve(visits, site, server):
    def dead(v: Visit) -> list[str]:
        problems = []
        for href in sorted(set(v.data["links"])):
            if not href.startswith(server):
                continue
            url = urlparse(href)
            target = site / unquote(url.path).lstrip("/")
            if url.path.endswith("/"):
                target = target / "index.html"
            if not target.is_file():
                problems.append(f"link to missing {url.path}")
            elif (
                url.fragment
                and target.suffix == ".html"
                and unquote(url.fragment) not in _ids(target)
            ):
                problems.append(f"link to missing anchor {url.path}#{url.fragment}")
        return problems

    bad = failures(visits, dead)
    assert not bad, "dead internal links:\n" + bad


def test_claims_ledger_page(visits, paths):
    rows = claims_mod.load_all(paths.executed)
    visit = visits.get("book/claims.html")
    assert visit is not None, "the site has no claims page (book/claims.html)"
    held = sum(r["verdict"] == "holds" for r in rows)
    assert f"{len(rows)} claims" in visit.data["main_text"], (
        "the ledger's summary line is missing"
    )
    assert f"{held} hold" in visit.data["main_text"]
    compared = [r for r in rows if r["kind"] in ("prediction", "finding")]
    # only a probability statement (judged on a frequency with a binomial margin) may
    # lack one
    unrivalled = [
        r["id"]
        for r in compared
        if not r["rival"] and "binomial margin" not in r["why"]
    ]
    assert compared and not unrivalled, (
        f"predictions/findings without a rival: {unrivalled}"
    )
    shown = visit.data["main_text"].replace("\u2019", "'").replace("\u2018", "'")
    missing_rivals = [
        r["id"] for r in compared if r["rival"] and r["rival"]["name"] not in shown
    ]
    assert not missing_rivals, f"rivals not shown on the ledger page: {missing_rivals}"

    def head(text: str) -> str:  # the header row (its cells' paragraphs: lines)
        return " ".join(text[:300].split()).lower()

    ledger = [  # the per-page tables (the "read these first" table repeats claims)
        (text, n)
        for text, n in visit.data["tables"]
        if "verdict" in head(text) and "measured vs test; rival" in head(text)
    ]
    assert ledger, "the claims tables are missing from the ledger page"
    text = "\n".join(t for t, _ in ledger).replace("\u200b", "")
    missing = [r["id"] for r in rows if r["id"] not in text]
    assert not missing, f"claims missing from the ledger: {missing}"
    n_rows = sum(n for _, n in ledger)
    assert n_rows == len(rows), f"the ledger has {n_rows} rows for {len(rows)} claims"
    summary = [(t, n) for t, n in visit.data["tables"] if t.startswith("chapter")]
    chapters = {r["notebook"].split("/")[0] for r in rows}
    assert summary and summary[0][1] == len(chapters), "one summary row per chapter"
    kinds = [(t, n) for t, n in visit.data["tables"] if t.startswith("kind")]
    assert kinds and kinds[0][1] == len(claims_mod.KINDS), (
        "one summary row per kind of claim"
    )


def test_chapters_show_claims_run_record_and_download(visits, paths):
    pages = notebook_pages(paths)
    assert pages, "the book has no notebooks"
    problems = []
    for nb, page in pages.items():
        visit = visits.get(page)
        if visit is None:
            problems.append(f"{nb}: no page {page}")
            continue
        text = visit.data["main_text"].replace("\u200b", "")  # ids break at dots
        claims_file = paths.executed / f"{nb}.claims.json"
        if claims_file.exists():
            ids = [c["id"] for c in json.loads(claims_file.read_text())["claims"]]
            if not all(i in text for i in ids):
                problems.append(
                    f"{nb}: the claims table (with {ids}) is not on the page"
                )
        if "Run record" not in text or "seed" not in text or "wall time" not in text:
            problems.append(
                f"{nb}: the run record (seed, wall time, versions) is missing"
            )
        if not any(
            h.endswith(f"_sources/book/{nb}.ipynb") for h in visit.data["links"]
        ):
            problems.append(f"{nb}: no download link to the notebook")
    rerun = visits.get("book/rerun.html")
    if rerun is None:
        problems.append("no rerun page (book/rerun.html)")
    else:
        for nb in pipeline.notebook_ids(paths):
            if not any(
                re.search(
                    rf"/_downloads/[0-9a-f]+/{re.escape(Path(nb).name)}\.ipynb$", h
                )
                for h in rerun.data["links"]
            ):
                problems.append(f"rerun page: no download of {nb}")
    assert not problems, "\n".join(problems)


def test_screenshots_of_every_chapter(visits, paths):
    shots = paths.build / "screenshots"
    pngs = {
        nb: shots / f"book__{nb.replace('/', '__')}.png" for nb in executed_pages(paths)
    }
    missing = [
        nb for nb, png in pngs.items() if not png.is_file() or png.stat().st_size == 0
    ]
    assert not missing, f"no screenshot of {missing}"


def test_every_figure_is_captioned_and_numbered(visits, paths):
    """Chapter figures are ``<figure>`` elements with a caption and a number
    (myst-nb figure metadata), never bare images."""
    problems = []
    for nb, page in notebook_pages(paths).items():
        visit = visits.get(page)
        if visit is None:
            continue
        problems += [
            f"{nb}: image {src} is not a captioned figure"
            for src in visit.data["loose_images"]
        ]
        for caption, number in visit.data["figures"]:
            if not caption.strip() or not re.match(r"Fig\. \d", number):
                problems.append(
                    f"{nb}: figure without caption or number ({caption[:60]!r})"
                )
    assert not problems, "\n".join(problems)
    assert sum(len(v.data["figures"]) for v in visits.values()) > 20, (
        "the book should have figures"
    )


def test_page_titles_are_unique(visits):
    titles: dict[str, list[str]] = {}
    for page, visit in visits.items():
        if (
            page == "index.html"
        ):  # the site's entry: a redirect to the root page (book/intro)
            continue
        titles.setdefault(visit.data["title"], []).append(page)
    shared = {t: p for t, p in titles.items() if len(p) > 1}
    assert not shared, f"pages sharing a title: {shared}"


def test_no_code_line_overflows(visits):
    bad = failures(
        visits,
        lambda v: [
            f"code line wider than its box: {line[:100]!r}"
            for line in v.data["overflowing_code"]
        ],
    )
    assert not bad, bad


def test_no_raw_tex_in_navigation_or_search(visits, site):
    bad = failures(
        visits,
        lambda v: [
            f"raw TeX in the navigation: {m.group()!r}"
            for m in re.finditer(r"\$[^$]*\$|\\\(|\\[a-zA-Z]+", v.data["nav_text"])
        ],
    )
    assert not bad, bad
    index = (site / "searchindex.js").read_text()
    titles = re.search(r'"titles":\s*\[(.*?)\]', index, re.S)
    assert titles, "no titles in the search index"
    assert not re.search(r"\$|\\\\\(", titles.group(1)), (
        f"raw TeX in search titles: {titles.group(1)[:300]}"
    )


# -- the reader's view (issue 42): the verdict box, folded machinery, no broken text,
#    legible figures, at a desktop and a phone width ----------------------------------
WIDTHS = (1280, 420)
MIN_SCREEN_FONT = 8.0  # px: the smallest text a figure may show on screen
STATEMENT_WORDS = (12, 400)  # the first markdown cell: the title and the statement

JS_READER = """
const main = document.querySelector('main') || document.body;
const col = (document.querySelector('article.bd-article') || main)
            .getBoundingClientRect();
const visible = e => { const r = e.getBoundingClientRect();
                       return r.width > 0 && r.height > 0; };
// textContent: the rows of a closed dropdown are not rendered (no innerText)
const rows = t => [...t.querySelectorAll('tbody tr')].map(
    tr => [...tr.children].map(td => td.textContent.replace(/\\s+/g, ' ').trim()));
const box = main.querySelector('.verdict-box');
let before = null;
if (box) {
  // the text between the page's title and the box: the paper's statement
  const h1 = main.querySelector('h1');
  let words = 0, blocks = 0, code = false;
  const all = [...main.querySelectorAll('*')];
  const i0 = h1 ? all.indexOf(h1) : 0, i1 = all.indexOf(box);
  for (const e of all.slice(i0 + 1, i1)) {
    if (e.matches('p, div.math, li') && !e.closest('li p')) {
      words += e.innerText.split(/\\s+/).filter(Boolean).length; blocks += 1; }
    if (e.matches('.cell, figure')) code = true;
  }
  before = {words: words, blocks: blocks, code_or_figure: code};
}
const strip = main.cloneNode(true);
strip.querySelectorAll('.cell_input, .highlight, script, style, mjx-container, '
                       + 'section#run-record').forEach(e => e.remove());
const literals = [...main.querySelectorAll('code')]
    .filter(c => !c.closest('.cell_input, .cell_output, .highlight, pre, '
                            + 'section#run-record, table.claims-table, '
                            + '.verdict-box, table.scorecard-table'))
    .map(c => c.innerText.trim());
const boxes = [...main.querySelectorAll(
    '.verdict-box, table.verdict-table, table.claims-table, table.scorecard-table')];
const overflow = [];
for (const b of boxes) {
  for (const e of [b, ...b.querySelectorAll('td, th, .sd-badge, p, span, code')]) {
    if (!visible(e)) continue;
    const r = e.getBoundingClientRect();
    const cell = e.closest('td, th');
    const tooWide = (e.matches('td, th, .verdict-box, table')
                     && e.scrollWidth > e.clientWidth + 1);
    const outside = r.right > col.right + 1 || r.left < col.left - 1;
    const outCell = cell && e !== cell
        && r.right > cell.getBoundingClientRect().right + 1;
    if (tooWide || outside || outCell) {
      overflow.push((e.className || e.tagName) + ': '
                    + e.innerText.trim().slice(0, 60));
      break;
    }
  }
}
return {
  box: !!box,
  before: before,
  main_rows: box ? [...box.querySelectorAll('table.verdict-table')]
                   .filter(t => !t.closest('details')).flatMap(rows) : [],
  more_rows: box ? [...box.querySelectorAll('details table.verdict-table')]
                   .flatMap(rows) : [],
  text: strip.textContent,
  literals: literals,
  overflow: overflow,
  figures: [...main.querySelectorAll('figure img')].map(
      i => [i.getAttribute('src'), i.naturalWidth, i.getBoundingClientRect().width]),
};
"""

LEFTOVERS = (
    (re.compile(r"\{glue(:\w+)?\}?`?"), "a leftover {glue} role"),
    (re.compile(r"~1e[+-]?\d"), "the nbval lock's ~1e notation"),
    (re.compile(r"\bClaim\(|\bRival\("), "a Python repr (Claim(...))"),
    (
        re.compile(
            r"Traceback \(most recent call last\)|\b[A-Z]\w*(Error|Exception): "
        ),
        "exception text",
    ),
)


def reader_problems(
    page: str,
    data: dict,
    claims: list[dict] | None,
    params: list[str],
    png_dpi=lambda src: 100.0,
    min_font_pt: float = 11.0,
) -> list[str]:
    """What a reader must not meet on ``page`` (the data of :data:`JS_READER`):
    each problem names the page and the defect. ``claims`` is the page's claims
    JSON (None: not a notebook page, no box needed); ``params`` its parameters."""
    from twolayer.pipeline import verdicts

    out = []
    if claims is not None:
        if not data["box"]:
            out.append(f"{page}: no verdict box (it is generated for every page)")
        else:
            want = [c for c in claims if c.get("kind") in verdicts.SHOWN_KINDS]
            rest = [c for c in claims if c.get("kind") not in verdicts.SHOWN_KINDS]
            for name, shown, expected in (
                ("verdict box", data["main_rows"], want),
                ("verdict box's folded part", data["more_rows"], rest),
            ):
                got = [r[1] if len(r) > 1 else "" for r in shown]
                labels = [verdicts.label(c) for c in expected]
                if got != labels:
                    out.append(
                        f"{page}: the {name} shows verdicts {got}, its claims JSON "
                        f"says {labels}"
                    )
                for r, c in zip(shown, expected):
                    if c["statement"].split()[0] not in r[0]:
                        out.append(
                            f"{page}: {name} row {r[0][:50]!r} is not claim "
                            f"{c['id']} ({c['statement'][:40]!r})"
                        )
            b = data["before"] or {}
            lo, hi = STATEMENT_WORDS
            if b.get("code_or_figure"):
                out.append(
                    f"{page}: code or a figure comes before the verdict box: the "
                    "notebook's first markdown cell must be the title and the paper's "
                    "statement only"
                )
            elif b.get("words", 0) < lo:
                out.append(
                    f"{page}: no statement of the paper between the title and the "
                    f"verdict box ({b.get('words', 0)} words): the notebook's first "
                    "markdown cell must hold the title and the paper's statement"
                )
            elif b.get("words", 0) > hi:
                out.append(
                    f"{page}: the first markdown cell runs {b['words']} words before "
                    f"the verdict box (at most {hi}): keep it to the title and the "
                    "paper's statement"
                )
    for rx, what in LEFTOVERS:
        m = rx.search(data["text"])
        if m:
            ctx = data["text"][max(0, m.start() - 40) : m.end() + 40]
            out.append(f"{page}: {what}: ...{' '.join(ctx.split())!r}...")
    named = sorted({x for x in data["literals"] if x in params})
    if named:
        out.append(
            f"{page}: a parameter's name printed where its value belongs: "
            + ", ".join(f"`{n}`" for n in named)
            + " (glue the value)"
        )
    out += [f"{page}: overflows its column: {o}" for o in data["overflow"]]
    for src, natural, shown in data["figures"]:
        if not natural:
            continue
        px = min_font_pt * png_dpi(src) / 72 * shown / natural
        if px < MIN_SCREEN_FONT:
            out.append(
                f"{page}: figure {src} shows its {min_font_pt:g} pt text at "
                f"{px:.1f} px on screen (at least {MIN_SCREEN_FONT:g}): "
                f"{natural} px wide, drawn {shown:.0f} px"
            )
    return out


def _png_dpi(site: Path, page: str):
    def dpi(src: str) -> float:
        from PIL import Image

        path = (site / page).parent / unquote(urlparse(src).path)
        try:
            with Image.open(path) as im:
                d = im.info.get("dpi")
            return float(d[0]) if d else 100.0
        except (OSError, ValueError):
            return 100.0

    return dpi


@pytest.fixture(scope="module")
def reader_visits(visits) -> dict[int, dict[str, dict]]:
    """Every page at each of :data:`WIDTHS`: what :data:`JS_READER` collected on
    the page's one visit (:func:`visits`)."""
    return {
        width: {page: v.data["reader"][width] for page, v in visits.items()}
        for width in WIDTHS
    }


def _page_claims(paths, nb: str) -> list[dict]:
    f = paths.executed / f"{nb}.claims.json"
    return json.loads(f.read_text())["claims"] if f.exists() else []


@pytest.mark.parametrize("width", WIDTHS)
def test_reader_view(reader_visits, paths, site, width):
    """Every page at 1280 and 420 px: the verdict box is there and agrees with the
    page's claims JSON (same rows, same verdicts), the first markdown cell is the
    statement, no verdict table overflows its column, no leftover {glue}, ~1e,
    Claim( or exception text, no parameter named where its value belongs, no
    figure whose text is smaller than 8 px on screen."""
    from twolayer import plots

    pages = notebook_pages(paths)
    by_html = {html: nb for nb, html in pages.items()}
    problems = []
    for page, data in reader_visits[width].items():
        nb = by_html.get(page)
        claims = _page_claims(paths, nb) if nb else None
        params = list(pipeline.parameters(paths, nb)) if nb else []
        problems += reader_problems(
            page,
            data,
            claims,
            params,
            png_dpi=_png_dpi(site, page),
            min_font_pt=plots.MIN_FONT,
        )
    missing = [nb for nb, html in pages.items() if html not in reader_visits[width]]
    problems += [f"{nb}: no page in the site" for nb in missing]
    assert not problems, f"at {width} px:\n" + "\n".join(problems)


def test_front_page_and_indexes_carry_scorecards(reader_visits, visits):
    """The front page shows a card per paper; every chapter index a scorecard."""
    problems = []
    intro = visits.get("book/intro.html")
    if intro is None or "What reproduces" not in intro.data["main_text"]:
        problems.append("book/intro.html: no 'What reproduces' scorecards")
    for chapter in claims_mod.CHAPTERS:
        v = visits.get(f"book/{chapter}/index.html")
        if v is None or "Scorecard" not in v.data["main_text"]:
            problems.append(f"book/{chapter}/index.html: no scorecard")
    assert not problems, "\n".join(problems)


PLANTED = """<!doctype html><html><head><meta charset="utf-8">
<style>body{margin:0} main{width:600px} .verdict-box{width:560px}
table{border-collapse:collapse}</style></head><body><main>
<article class="bd-article"><h1>Scratch page</h1>
<p>The paper states that every neuron aligns with the max-margin direction of its
class, in the limit of the flow, from a small balanced initialisation.</p>
<div class="verdict-box"><table class="verdict-table"><thead><tr><th>s</th><th>v</th>
<th>n</th></tr></thead><tbody><tr><td>median cos above 0.9</td><td>holds</td>
<td><span style="white-space:nowrap">0.932&nbsp;&gt;&nbsp;0.9;&nbsp;large_init_0.61_
and_a_very_long_unbreakable_rival_name_that_does_not_wrap_at_all_anywhere_here</span>
</td></tr></tbody></table></div>
<p>At t = 10^{glue:text}`t_hi:.1f` the network trains <code class="literal">
epochs</code> epochs.</p>
</article></main></body></html>
"""


def test_planted_defects_fail_with_their_names(driver, tmp_path):
    """A scratch page with a leftover {glue:text}, a printed parameter name and a
    table wider than its column: each check fails, naming the page and the
    defect."""
    page = tmp_path / "scratch.html"
    page.write_text(PLANTED)
    driver.set_window_size(1280, 900)
    driver.get(page.as_uri())
    data = driver.execute_script(JS_READER)
    claims = [
        {
            "id": "phuong2021.fig1.median_cos",
            "kind": "prediction",
            "statement": "median cos above 0.9",
            "verdict": "holds",
            "heldout": None,
        }
    ]
    problems = reader_problems("scratch.html", data, claims, ["epochs", "lr"])
    text = "\n".join(problems)
    assert all(p.startswith("scratch.html: ") for p in problems), text
    assert any("leftover {glue}" in p for p in problems), text
    assert any("`epochs`" in p and "parameter" in p for p in problems), text
    assert any("overflows its column" in p for p in problems), text
    # the clean page passes (the same checks find nothing)
    clean = (
        PLANTED.replace("10^{glue:text}`t_hi:.1f`", "10^300")
        .replace('<code class="literal">\nepochs</code>', "500")
        .replace('<span style="white-space:nowrap">', "<span>")
        .replace("_", " ")
    )
    page.write_text(clean)
    driver.get(page.as_uri())
    assert (
        reader_problems(
            "scratch.html", driver.execute_script(JS_READER), claims, ["epochs"]
        )
        == []
    )
    # a held-out miss shown as a plain "holds" disagrees with the claims JSON
    claims[0]["heldout"] = {"blocks": 3, "holds": 1}
    assert any(
        "fails on held-out seeds" in p
        for p in reader_problems(
            "scratch.html", driver.execute_script(JS_READER), claims, []
        )
    )
