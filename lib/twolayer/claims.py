"""The claims ledger: every theorem turned into numbers that could fail, over seeds.

A notebook writes ``ledger = Ledger(registered="<name>.claims.yml")`` (the page id
comes from the pipeline through ``$TWOLAYER_PAGE``; the registry,
:mod:`twolayer.protocol`, holds what each claim asserts, fixed before the run) and
records its claims, each of one of four kinds (README "What the book does", STYLE.md
"Claims"); every argument is a keyword, and any literal one may be registered instead
of passed (never both):

* :meth:`Ledger.prediction` — what a paper states, at a setting and horizon the
  paper shows: ``measured <relation> threshold``. ``measured`` is the per-seed
  values (≥ :data:`MIN_SEEDS` independent seeds) and the verdict is decided on
  the **worst** seed; a single value is accepted only with
  ``deterministic="<reason>"``. It carries a :class:`Rival` — the same quantity,
  at the same horizon (or explicitly the initial / early-phase state), on the
  strongest alternative the theorem rules out — whose whole spread must fail the
  relation by a margin (:func:`margin`); otherwise :class:`CannotDiscriminate`.
  A claim that fails on its worst seed is recorded as failing (its rival kept,
  not judged), so a held-out seed that breaks it shows as "fails".
  A failing prediction with a ``diagnosis`` and the ids of the claims on the same
  page that measured the separated ``causes`` is "does not reproduce".
* :meth:`Ledger.finding` — the book's own result beyond the paper; same rules, no
  "does not reproduce".
* :meth:`Ledger.probability` — a statement "with probability ≥ p": the measured
  frequency of successes, judged with a one-sided 95 % binomial margin; its rival
  (the event counted on the alternative) must fail the same test.
* :meth:`Ledger.identity` — an exact statement, tolerance ≤ 1e-6 of its scale.
* :meth:`Ledger.assumption` — a hypothesis on the data or setting. When it is not
  met and the page says so (``note``), that is information, not a failure.

:meth:`Ledger.finish` writes strict JSON beside the executed notebook (path from
``$TWOLAYER_CLAIMS_OUT``), prints the locked plain-text table — each value at the
precision its seed spread supports (:func:`portable`), so that another CPU's
floating point does not change it — and raises :class:`ClaimFailed` on failure.
"""

from __future__ import annotations

import functools
import json
import math
import operator
import os
import re
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

from . import protocol

CLAIMS_ENV = "TWOLAYER_CLAIMS_OUT"
PAGE_ENV = "TWOLAYER_PAGE"
CHAPTERS = ("phuong2021", "sarussi2021", "min2024", "lyu2021", "synthesis")
KINDS = ("prediction", "finding", "identity", "assumption")
VERDICTS = ("holds", "fails", "does not reproduce")
NOT_RESOLVED = "not resolved"  # format v3: a limit claim still converging
ALL_VERDICTS = (*VERDICTS, NOT_RESOLVED)
RELATIONS = {
    "<=": operator.le,
    "<": operator.lt,
    ">=": operator.ge,
    ">": operator.gt,
    "==": operator.eq,
}
MIN_SEEDS = 5
IDENTITY_TOLERANCE = 1e-6  # relative to the quantity's scale
RIVAL_MARGIN = 1e-2  # fraction of max(|threshold|, |worst value|) a rival must fail by
EARLY_HORIZONS = ("init", "early")
_PART = r"[a-z0-9_]+"
ID_PATTERN = re.compile(
    rf"(?P<chapter>{_PART})\.(?P<result>{_PART})\.(?P<item>{_PART})"
)


class ClaimFailed(AssertionError):
    """At least one claim of a notebook does not hold."""


class CannotDiscriminate(ValueError):
    """A rival that does not fail the same test by a margin: the claim cannot fail."""


# -- values over seeds ----------------------------------------------------------------
def _number(value, name: str) -> float:
    if isinstance(value, bool):
        return float(value)
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a number, got {value!r}") from exc
    if not math.isfinite(v):
        raise ValueError(
            f"{name} is {v}: the measurement failed (claims JSON is strict, finite)"
        )
    return v


def _values(value, name: str) -> tuple[float, ...]:
    """A number or a sequence of per-seed numbers (NumPy/torch accepted), as floats."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValueError(f"{name} is empty")
        return tuple(_number(v, f"{name}[{i}]") for i, v in enumerate(value))
    return (_number(value, name),)


def _seeds_ok(values: tuple[float, ...], deterministic: str, name: str) -> None:
    """≥ MIN_SEEDS values, or one value with a stated reason."""
    if len(values) == 1:
        if not deterministic.strip():
            raise ValueError(
                f"{name} has one value: measure >= {MIN_SEEDS} seeds, or say why one "
                f"run is the quantity (deterministic='<reason>')"
            )
    elif len(values) < MIN_SEEDS:
        raise ValueError(
            f"{name} has {len(values)} seeds: at least {MIN_SEEDS} are needed"
        )


def worst(values: Sequence[float], relation: str) -> float:
    """The value a verdict is decided on: the largest for ``<``/``<=``, the
    smallest for ``>``/``>=`` (for ``==`` all must agree: the first that does not)."""
    if relation in ("<", "<="):
        return max(values)
    if relation in (">", ">="):
        return min(values)
    return values[0]


def best(values: Sequence[float], relation: str) -> float:
    """The value closest to passing (a rival is judged on it)."""
    return min(values) if relation in ("<", "<=") else max(values)


def width(values: Sequence[float]) -> float:
    return max(values) - min(values)


def margin(
    claim_values: Sequence[float],
    rival_values: Sequence[float],
    threshold: float,
    relation: str,
) -> float:
    """How far a rival must fail by: more than either seed spread and than
    :data:`RIVAL_MARGIN` of the scale max(|threshold|, |claim's worst value|)."""
    scale = max(abs(threshold), abs(worst(claim_values, relation)))
    return max(width(claim_values), width(rival_values), RIVAL_MARGIN * scale)


@dataclass(frozen=True)
class Rival:
    """The same quantity on the alternative the theorem rules out.

    ``measured`` is its per-seed values (or one value with ``deterministic``);
    ``horizon`` defaults to the claim's; another horizon must start with "init"
    or "early" (the initial or early-phase state named as such).
    """

    name: str
    measured: object
    horizon: str | None = None
    deterministic: str = ""


@dataclass(frozen=True)
class Claim:
    """One checkable statement: ``measured <relation> threshold`` (``measured`` the
    worst seed)."""

    id: str
    source: str
    kind: str
    statement: str
    measured: float
    relation: str
    threshold: float
    why: str
    seeds: int = 1
    spread: tuple[float, float] | None = None
    horizon: str = ""
    rival: dict | None = None
    diagnosis: str = ""
    causes: tuple[str, ...] = ()
    note: str = ""
    digits: int = 2
    values: tuple[float, ...] = field(default=(), repr=False)
    # format v3 (DESIGN.md "Claims"): registry fields passed through, the trend of
    # a limit claim, its measured stall, the held-out record (filled at save)
    quantifier: str | None = None
    quantifier_source: str | None = None
    limit: bool = False
    section: str | None = None
    changed: str | None = None
    chosen_on: object = None
    tested_on: object = None
    trend: dict | None = None
    stall: dict | None = None
    heldout: dict | None = None
    unresolved: str = field(default="", repr=False)

    @property
    def holds(self) -> bool:
        return bool(RELATIONS[self.relation](self.measured, self.threshold))

    @property
    def verdict(self) -> str:
        if self.holds:
            return "holds"
        if self.unresolved:
            return NOT_RESOLVED
        return "does not reproduce" if self.diagnosis else "fails"

    @property
    def failing(self) -> bool:
        """Does this claim fail its notebook? A documented non-reproduction
        and an unmet assumption the page discusses (``note``) do not."""
        if self.verdict != "fails":
            return False
        return not (self.kind == "assumption" and self.note)

    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("values")
        d.pop("unresolved")
        d["spread"] = list(self.spread) if self.spread else None
        d["causes"] = list(self.causes)
        d["verdict"] = self.verdict
        if self.verdict == NOT_RESOLVED:
            d["diagnosis"] = self.unresolved
        elif self.diagnosis and self.causes:
            d["diagnosis"] = (
                f"{self.diagnosis} (causes measured: {', '.join(self.causes)})"
            )
        return d


def check_id(claim_id: str, page: str | None = None) -> str:
    """``<chapter>.<result>.<item>``, lower case; the chapter must be the page's."""
    m = ID_PATTERN.fullmatch(claim_id or "")
    if not m or m["chapter"] not in CHAPTERS:
        raise ValueError(
            f"claim id {claim_id!r} is not '<chapter>.<result>.<item>' with chapter in "
            f"{', '.join(CHAPTERS)} (lower case, digits, '_')"
        )
    if page and m["chapter"] != page.split("/")[0]:
        raise ValueError(
            f"claim id {claim_id!r} is on page {page!r} of another chapter"
        )
    return claim_id


# -- the locked table's numbers --------------------------------------------------------
def significant(x: float, digits: int) -> str:
    """``x`` to ``digits`` significant digits, with an exponent where needed."""
    if x == 0:
        return "0"
    rounded = float(f"{x:.{digits - 1}e}")
    if 1e-4 <= abs(rounded) < 1e6:  # plain decimals: 190, 0.00012, 1200
        text = f"{rounded:.10f}".rstrip("0").rstrip(".")
        return text
    text = f"{rounded:.{digits - 1}e}"
    mantissa, exponent = text.split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent):+d}"


def portable(values: Sequence[float], digits: int) -> str:
    """The value of ``values`` to the precision its seed spread supports.

    The most digits (≤ ``digits``) at which every value of the interval
    ``[min − w, max + w]`` (``w`` the spread's width: room for another CPU's or
    another seed's value) rounds to the same text; "~" marks fewer digits than
    asked; if not even one digit is shared, the order of magnitude ``~1e-5``; if
    the sign is not shared either, ``±`` and the larger magnitude's order.
    One value (a deterministic quantity) is shown to ``digits``.
    """
    lo, hi = min(values), max(values)
    if lo == hi:
        return significant(lo, digits)
    d = shared_digits(values, digits)
    if d:
        return significant(lo, d) + ("" if d == digits else "~")
    lo_end, hi_end = _widened(values)
    order = math.floor(math.log10(max(abs(lo_end), abs(hi_end))))
    if lo_end >= 0 or hi_end <= 0:
        return f"{'-' if hi_end <= 0 else ''}~1e{order:+d}"
    return f"±1e{order:+d}"


def _widened(values: Sequence[float]) -> tuple[float, float]:
    """``[min − w, max + w]`` (``w`` the spread's width), not crossing zero when
    every value has one sign (a distance stays a distance)."""
    lo, hi = min(values), max(values)
    w = hi - lo
    lo_end, hi_end = lo - w, hi + w
    if lo >= 0:
        lo_end = max(lo_end, 0.0)
    if hi <= 0:
        hi_end = min(hi_end, 0.0)
    return lo_end, hi_end


def shared_digits(values: Sequence[float], digits: int) -> int:
    """The most significant digits (≤ ``digits``, 0 if none) to which every value of
    ``[min − w, max + w]`` rounds alike (``w`` the spread's width). Rounding is
    monotone, so checking both ends of the interval is enough."""
    lo_end, hi_end = _widened(values)
    for d in range(digits, 0, -1):
        if significant(lo_end, d) == significant(hi_end, d):
            return d
    return 0


def identity_text(error: float, scale: float) -> str:
    """An identity's error: 'round-off' below 1e-12 of its scale (machine-dependent
    digits), otherwise one significant digit, so drift is visible."""
    return "round-off" if error <= 1e-12 * scale else significant(error, 1)


def _default_page() -> str:
    page = os.environ.get(PAGE_ENV)
    if page:
        return page
    # Run outside the pipeline (nbval, a notebook front end): cwd is the chapter folder.
    return f"{Path.cwd().name}/(unnamed)"


def clopper_pearson_floor(n: int, bound: float, level: float = 0.05) -> int:
    """The smallest number of successes in ``n`` trials not significantly below
    ``bound`` (one-sided binomial test at ``level``)."""
    from scipy.stats import binom

    k = 0
    while k < n and binom.cdf(k, n, bound) < level:
        k += 1
    return k


def _registered(method):
    """Complete a claim's keyword arguments from the page's registry entry for its
    ``id`` (which may leave out the chapter: ``"thm43.error"``); then apply the
    format-v3 fields (:meth:`Ledger._v3`: quantifier, limit with ``trend`` and
    ``stall``, section and history)."""

    @functools.wraps(method)
    def checked(self, *, id: str, **given):
        full, fields = self._from_registry(id, given)
        meta = {
            k: protocol.check_v3_field(full, k, fields.pop(k), where="claim")
            for k in sorted(protocol.V3_FIELDS)
            if k in fields
        }
        trend, stall = fields.pop("trend", None), fields.pop("stall", None)
        kind = (
            fields.get("kind", "prediction")
            if method.__name__ == "probability"
            else method.__name__
        )
        _check_quantifier(full, method.__name__, kind, meta)
        limit = bool(meta.get("limit", False))
        if limit and kind not in LIMIT_KINDS:
            raise ValueError(
                f"claim {full!r}: limit: true is for a prediction, finding or "
                f"probability about t -> infinity, not an {kind}"
            )
        if trend is not None and not limit:
            raise ValueError(
                f"claim {full!r}: trend= is for a claim about t -> infinity; its "
                "registry entry must say limit: true"
            )
        if limit and trend is None:
            raise ValueError(
                f"claim {full!r} is a limit claim (limit: true): pass "
                "trend=(log10_ts, values), the decided value at >= 2 horizons, the "
                "last the claim's horizon"
            )
        if stall is not None and not limit:
            raise ValueError(
                f"claim {full!r}: stall= is for a limit claim (limit: true)"
            )
        claim = method(self, id=full, **fields)
        try:
            return self._v3(claim, meta, trend, stall)
        except ValueError:
            if self.claims and self.claims[-1].id == claim.id:
                self.claims.pop()
            raise

    return checked


LIMIT_KINDS = ("prediction", "finding")
# Every prediction and finding states the paper's quantifier (format v3): a claim
# without one is refused (tests may switch this off for a legacy registry).
QUANTIFIER_REQUIRED = True
# A limit claim's distance to its limit, per decade of log10 t (x10 in log t): a
# 1/log t decay shrinks it x0.1, a stall x1. "Still falls": it shrinks by more than
# 10% (ratio < FALLING_RATIO); a stall: by less (ratio >= STALL_RATIO) while the
# reached direction is a KKT point (relative residual <= STALL_KKT).
FALLING_RATIO = 0.9
STALL_RATIO = 0.9
STALL_KKT = 1e-2


def _check_quantifier(id: str, method: str, kind: str, meta: dict) -> None:
    """The paper's quantifier decides the route: a frequency ("with probability",
    "for most") through :meth:`Ledger.probability`, a statement for every
    initialisation / data set (or the book's own) on the worst seed."""
    q = meta.get("quantifier")
    if kind not in ("prediction", "finding"):
        return
    if q is None:
        if QUANTIFIER_REQUIRED:
            raise ValueError(
                f"{kind} {id!r}: register its quantifier (every, probability, most "
                "or book) and quantifier_source: where the paper states it"
            )
        return
    if q in ("probability", "most") and method != "probability":
        src = meta.get("quantifier_source")
        raise ValueError(
            f"claim {id!r}: its quantifier is {q!r}"
            + (f" ({src})" if src else "")
            + f": a frequency over seeds and draws, checked with ledger.probability("
            f"...), not ledger.{method} (worst of seeds)"
        )
    if q in ("every", "book") and method == "probability":
        raise ValueError(
            f"claim {id!r}: its quantifier is {q!r} (every seed and draw, worst "
            "case): check it with ledger.prediction/finding, not as a frequency"
        )


def _distance(values: Sequence[float], relation: str, target: float | None):
    """Each value's distance to the theory's limit in decades (log10): ``target``
    None means the values already are log10 of a distance that tends to 0 (a
    claim compared in decades); None where the value is at or past the limit."""
    sign = 1.0 if relation in ("<", "<=") else -1.0
    if target is None:
        return [sign * v for v in values]
    return [
        math.log10(sign * (v - target)) if sign * (v - target) > 0 else None
        for v in values
    ]


def _passes(target: float, rel: str, thr: float) -> bool:
    """Does the limit itself pass the claim's test? (``<=``/``>=`` allow the
    threshold: a frequency whose critical value is every draw, 1 >= 1.)"""
    return {
        "<": target < thr,
        "<=": target <= thr,
        ">": target > thr,
        ">=": target >= thr,
    }[rel]


def trend_record(claim: "Claim", trend) -> dict:
    """A limit claim's ``trend`` checked and measured.

    ``trend`` is ``(log10_ts, values)`` or ``(log10_ts, values, target)`` (or a
    dict with those keys: ``log10_t``, ``values``, ``target``): the decided value
    (worst seed) at >= 2 horizons given as log10 t (> 0, increasing), the last
    the claim's horizon (its value the claim's ``measured``). ``target`` is the
    value the theory says the quantity tends to (default 0 for ``<``/``<=`` with a
    positive threshold; required for ``>``/``>=``), or ``None``/``-inf`` for a
    quantity compared in decades (log10 of a distance tending to 0; ``+inf``
    for ``>=``).

    Returns the JSON record: ``log10_t``, ``values``, ``target`` (None in
    decades), ``ratio`` — how much the distance to the limit shrinks per decade
    of log10 t over the last two horizons (0.1 for a 1/log t decay, 1 flat) —
    and ``crossing_log10_t``: log10 t at which, at that rate, it crosses the
    threshold (None if it does not fall or already holds).
    """
    if isinstance(trend, dict):
        unknown = set(trend) - {"log10_t", "values", "target"}
        if unknown:
            raise ValueError(
                f"claim {claim.id!r}: trend has unknown key(s) {sorted(unknown)}"
            )
        parts = (trend.get("log10_t"), trend.get("values"))
        target = trend.get("target", "default")
    elif isinstance(trend, (tuple, list)) and len(trend) in (2, 3):
        parts = trend[:2]
        target = trend[2] if len(trend) == 3 else "default"
    else:
        raise ValueError(
            f"claim {claim.id!r}: trend must be (log10_ts, values) or "
            "(log10_ts, values, target)"
        )
    ts = _values(parts[0], f"trend log10_t of {claim.id!r}")
    vs = _values(parts[1], f"trend values of {claim.id!r}")
    if len(ts) != len(vs) or len(ts) < 2:
        raise ValueError(
            f"claim {claim.id!r}: trend needs the same number (>= 2) of horizons "
            f"and values, got {len(ts)} and {len(vs)}"
        )
    if ts[0] <= 0 or any(b <= a for a, b in zip(ts, ts[1:])):
        raise ValueError(
            f"claim {claim.id!r}: trend horizons (log10 t) must be > 0 and "
            f"increasing, got {list(ts)}"
        )
    if not math.isclose(vs[-1], claim.measured, rel_tol=1e-9, abs_tol=1e-12):
        raise ValueError(
            f"claim {claim.id!r}: the trend's last value {significant(vs[-1], 6)} "
            f"is not the decided value {significant(claim.measured, 6)} (the last "
            "horizon is the claim's, worst seed)"
        )
    rel, thr = claim.relation, claim.threshold
    if rel == "==":
        raise ValueError(f"claim {claim.id!r}: a limit claim cannot use '=='")
    if isinstance(target, str):  # the default
        if rel in ("<", "<="):
            target = 0.0 if thr > 0 else None
        else:
            raise ValueError(
                f"claim {claim.id!r}: a limit claim with {rel!r} needs the value "
                "the theory says it tends to: trend=(log10_ts, values, target)"
            )
    if target is not None:
        target = float(target)
        if math.isinf(target):
            if (target < 0) != (rel in ("<", "<=")):
                raise ValueError(
                    f"claim {claim.id!r}: trend target {target} is on the failing "
                    f"side of {rel} {significant(thr, 4)}"
                )
            target = None
        elif not _passes(target, rel, thr):
            raise ValueError(
                f"claim {claim.id!r}: trend target {significant(target, 4)} must "
                f"pass {rel} {significant(thr, 4)} (the limit the claim approaches)"
            )
    dist = _distance(vs, rel, target)
    # None: the threshold is the limit itself (a frequency that must reach 1 with
    # >=), reached only at it: no crossing at a rate
    goal = _distance([thr], rel, target)[0]
    ratio = crossing = None
    a, b = dist[-2], dist[-1]
    if a is not None and b is not None:
        slope = (b - a) / math.log10(ts[-1] / ts[-2])  # decades per decade
        ratio = 10.0**slope
        if slope < 0 and goal is not None and b > goal:
            crossing = math.log10(ts[-1]) + (goal - b) / slope
            crossing = 10.0**crossing if crossing < 300 else math.inf
    return dict(
        log10_t=list(ts),
        values=list(vs),
        target=target,
        ratio=ratio,
        crossing_log10_t=None if crossing is None or math.isinf(crossing) else crossing,
    )


def _stall_record(id: str, stall) -> dict:
    """``stall=dict(ratio=..., kkt_residual=...)`` checked: the gap's ratio per
    decade of log10 t (>= :data:`STALL_RATIO`: flat) and the relative KKT
    residual at the reached direction (<= :data:`STALL_KKT`: another KKT point)."""
    if (
        not isinstance(stall, dict)
        or set(stall) - {"ratio", "kkt_residual", "note"}
        or not {"ratio", "kkt_residual"} <= set(stall)
    ):
        raise ValueError(
            f"claim {id!r}: stall must be dict(ratio=<gap ratio per decade of log10 "
            "t>, kkt_residual=<relative KKT residual at the reached direction>)"
        )
    out = {
        "ratio": _number(stall["ratio"], f"stall ratio of {id!r}"),
        "kkt_residual": _number(stall["kkt_residual"], f"stall kkt_residual of {id!r}"),
    }
    if "note" in stall:
        out["note"] = str(stall["note"])
    return out


class Ledger:
    """The claims of one page, in the order they are checked; ``registered`` the
    page's claims registry (:mod:`twolayer.protocol`), relative to the working
    directory (the chapter folder under the pipeline and nbval). With ``names``
    (the page's variables, ``globals()``), the registry's text fields are templates
    (``"at step {lr:g}"``) filled when the claim is checked."""

    def __init__(
        self,
        page: str | None = None,
        registered: str | None = None,
        names: dict | None = None,
    ) -> None:
        page = page or _default_page()
        if "/" not in page or page.split("/")[0] not in CHAPTERS:
            raise ValueError(
                "page must be '<chapter>/<name>' with chapter in "
                f"{', '.join(CHAPTERS)}, got {page!r}"
            )
        self.notebook = page
        self.claims: list[Claim] = []
        self._scales: dict[str, float] = {}
        self.registry = str(registered or "")
        self._registry = protocol.load(registered) if registered else {}
        self._unchecked = dict.fromkeys(self._registry)
        self._names = names

    def _from_registry(self, id: str, given: dict) -> tuple[str, dict]:
        """The full id and the claim's fields: the registered ones and ``given``,
        refusing a field written in both places."""
        chapter = self.notebook.split("/")[0]
        full = id if str(id).split(".")[0] in CHAPTERS else f"{chapter}.{id}"
        key = self._registry_key(full)
        entry = self._registry.get(key, {})
        twice = sorted(set(entry) & set(given))
        if twice:
            raise ValueError(
                f"claim {full!r}: {', '.join(twice)} written both in {self.registry} "
                "and in the call (write each field once)"
            )
        self._unchecked.pop(key, None)
        if self._names is not None:
            entry = {k: self._filled(full, k, v) for k, v in entry.items()}
        return full, {**entry, **given}

    def _registry_key(self, full: str) -> str:
        """The registry entry of a claim: its own id, else the first id pattern
        (``sarussi2021.fig7.ratio_{pair}``: a claim made in a loop over a parameter's
        values) that matches it."""
        if full in self._registry:
            return full
        for key in self._registry:
            if "{" in key and protocol.id_pattern(key).fullmatch(full):
                return key
        return full

    def _filled(self, id: str, name: str, value):
        """A registered text field with the page's variables filled in."""
        if not isinstance(value, str):
            return value
        try:
            return value.format_map(self._names)
        except (KeyError, AttributeError, IndexError, ValueError) as exc:
            raise ValueError(
                f"claim {id!r}: registered {name} {value!r} cannot be filled from "
                f"the page's variables ({type(exc).__name__}: {exc})"
            ) from exc

    def _v3(self, claim: Claim, meta: dict, trend, stall) -> Claim:
        """The claim just recorded with its format-v3 fields; a limit claim decided
        on its trend: "not resolved" while the distance to its limit still falls
        (ratio per decade of log10 t < :data:`FALLING_RATIO`), "does not reproduce"
        only with a measured stall (:func:`_stall_record`)."""
        tr = trend_record(claim, trend) if trend is not None else None
        st = _stall_record(claim.id, stall) if stall is not None else None
        unresolved = ""
        if tr is not None and not claim.holds:
            falling = tr["ratio"] is not None and tr["ratio"] < FALLING_RATIO
            if claim.diagnosis:
                if st is None:
                    raise ValueError(
                        f"claim {claim.id!r}: a limit claim 'does not reproduce' "
                        "only with a measured stall: pass stall=dict(ratio=<gap "
                        "ratio per decade of log10 t, ~1>, kkt_residual=<~0>)"
                    )
                if (
                    falling
                    or st["ratio"] < STALL_RATIO
                    or st["kkt_residual"] > STALL_KKT
                ):
                    rate = "–" if tr["ratio"] is None else significant(tr["ratio"], 2)
                    raise ValueError(
                        f"claim {claim.id!r}: no stall — its trend shrinks x{rate} "
                        f"per decade of log10 t, stall ratio "
                        f"{significant(st['ratio'], 2)} (needs >= {STALL_RATIO}), "
                        f"KKT residual {significant(st['kkt_residual'], 2)} (needs "
                        f"<= {STALL_KKT:g}): not a 'does not reproduce'"
                    )
            elif falling:
                unresolved = _unresolved_text(claim, tr)
        fields = {
            **_fields(claim),
            **{k: meta.get(k) for k in protocol.V3_FIELDS},
            "limit": bool(meta.get("limit", False)),
            "trend": tr,
            "stall": st,
            "unresolved": unresolved,
        }
        self.claims[-1] = Claim(**fields)
        return self.claims[-1]

    # -- the kinds ---------------------------------------------------------------------
    @_registered
    def prediction(
        self,
        *,
        id: str,
        source: str,
        statement: str,
        measured,
        relation: str,
        threshold,
        why: str,
        horizon: str,
        rival: Rival,
        deterministic: str = "",
        diagnosis: str = "",
        causes: Sequence[str] = (),
        digits: int = 2,
    ) -> Claim:
        """What the paper states, at a setting and horizon the paper shows.

        ``measured`` per seed (≥ 5) or one value with ``deterministic``; ``rival``
        a :class:`Rival` that fails by a margin; ``why`` says where the threshold
        comes from (fixed before the run). ``diagnosis`` + ``causes`` (ids of
        claims on this page that measured the separated causes) only for a
        paper statement that does not reproduce.
        """
        _check_diagnosis(id, diagnosis, causes)
        return self._compared(
            id,
            source,
            "prediction",
            statement,
            measured,
            relation,
            threshold,
            why,
            horizon,
            rival,
            deterministic,
            digits,
            diagnosis=str(diagnosis),
            causes=tuple(causes),
        )

    @_registered
    def finding(
        self,
        *,
        id: str,
        source: str,
        statement: str,
        measured,
        relation: str,
        threshold,
        why: str,
        horizon: str,
        rival: Rival,
        deterministic: str = "",
        digits: int = 2,
    ) -> Claim:
        """The book's own result beyond the paper (a limit it does not show, a horizon
        past its figures, a statistic it does not use); rules as :meth:`prediction`."""
        return self._compared(
            id,
            source,
            "finding",
            statement,
            measured,
            relation,
            threshold,
            why,
            horizon,
            rival,
            deterministic,
            digits,
        )

    @_registered
    def probability(
        self,
        *,
        id: str,
        source: str,
        statement: str,
        successes,
        bound: float,
        why: str,
        horizon: str,
        kind: str = "prediction",
        rival: Rival | None = None,
        diagnosis: str = "",
        causes: Sequence[str] = (),
        digits: int = 3,
    ) -> Claim:
        """ "With probability ≥ ``bound``": the frequency of ``successes`` (one bool
        per independent seed) holds unless it is below ``bound`` by more than the
        one-sided 95 % binomial margin; the threshold stored is that critical
        frequency. The frequency is one number (``spread`` null); its 95 %
        Clopper–Pearson interval is written into ``why``.

        A prediction or finding needs ``rival=Rival(name, successes)`` — the same
        event counted per trial on the alternative — which must fail the same
        one-sided test (its frequency below its own critical frequency). An
        ``assumption`` (an event of the initialisation or the data) needs none. A
        paper's probability that does not reproduce takes ``diagnosis`` and
        ``causes`` as :meth:`prediction`."""
        if kind not in ("prediction", "finding", "assumption"):
            raise ValueError(
                f"claim {id!r}: a probability is a prediction, a finding or an "
                f"assumption, not {kind!r}"
            )
        _check_diagnosis(id, diagnosis, causes)
        if diagnosis and kind != "prediction":
            raise ValueError(
                f"claim {id!r}: only a prediction can be 'does not reproduce'"
            )
        if kind != "assumption" and not isinstance(rival, Rival):
            raise ValueError(
                f"{kind} {id!r} needs rival=Rival(name, per-trial successes): the "
                "same event counted on the alternative"
            )
        if kind == "assumption" and rival is not None:
            raise ValueError(f"assumption {id!r}: an assumption takes no rival")
        flags = _flags(successes, f"successes of {id!r}")
        bound = _number(bound, f"bound of {id!r}")
        if not 0 < bound < 1:
            raise ValueError(f"claim {id!r}: bound must be in (0, 1), got {bound}")
        n, k = len(flags), sum(flags)
        lo, hi = _binomial_interval(k, n)
        why = (
            f"{why} — bound {significant(bound, 4)} less the one-sided 95% binomial "
            f"margin at n = {n}; frequency {k}/{n}, 95% interval "
            f"[{significant(lo, 2)}, {significant(hi, 2)}]"
        )
        claim = self._add(
            id,
            source,
            kind,
            statement,
            (k / n,),
            ">=",
            clopper_pearson_floor(n, bound) / n,
            why,
            str(horizon),
            digits,
            seeds=n,
            spread=None,
            diagnosis=str(diagnosis),
            causes=tuple(causes),
        )
        if rival is not None:
            try:
                self._check_frequency_rival(claim, rival, bound)
            except (CannotDiscriminate, ValueError):
                self.claims.pop()
                raise
        return self.claims[-1]

    def _check_frequency_rival(self, claim: Claim, rival: Rival, bound: float) -> None:
        """The rival's event, counted per trial, must fail the claim's one-sided
        binomial test at its own number of trials."""
        name = _rival_name(claim, rival)
        flags = _flags(rival.measured, f"rival of {claim.id!r}")
        horizon = _rival_horizon(claim, name, rival)
        n, k = len(flags), sum(flags)
        critical = clopper_pearson_floor(n, bound)
        if claim.holds and k >= critical:
            raise CannotDiscriminate(
                f"claim {claim.id!r} cannot discriminate: its rival {name!r} has "
                f"{k}/{n} successes, not significantly below the bound "
                f"{significant(bound, 4)} (it must have fewer than {critical})"
            )
        self._with_rival(claim, name, k / n, None, horizon, [k / n])

    @_registered
    def identity(
        self,
        *,
        id: str,
        source: str,
        statement: str,
        error,
        tolerance,
        why: str,
        scale: float = 1.0,
    ) -> Claim:
        """An exact statement: ``error <= tolerance`` with tolerance ≤ 1e-6 × ``scale``
        (the quantity's size); ``why`` gives the tolerance's floating-point reason."""
        scale = _number(scale, f"scale of {id!r}")
        tol = _number(tolerance, f"threshold of {id!r}")
        if scale <= 0:
            raise ValueError(f"identity {id!r}: scale must be > 0, got {scale}")
        if tol > IDENTITY_TOLERANCE * scale:
            raise ValueError(
                f"identity {id!r}: tolerance {significant(tol, 2)} is above "
                f"{IDENTITY_TOLERANCE:g} of its scale {significant(scale, 2)}: a "
                "bound, a discretisation error or a drift is a prediction or finding "
                "with a rival"
            )
        err = _number(error, f"measured of {id!r}")
        if err < 0:
            raise ValueError(
                f"identity {id!r}: error must be an absolute value, got {err}"
            )
        claim = self._add(
            id, source, "identity", statement, (err,), "<=", tol, why, "exact", 1
        )
        self._scales[id] = scale
        return claim

    @_registered
    def assumption(
        self,
        *,
        id: str,
        source: str,
        statement: str,
        measured,
        relation: str,
        threshold,
        why: str,
        note: str = "",
        digits: int = 2,
    ) -> Claim:
        """A theorem's hypothesis checked on the data or setting (never a training
        outcome). If it is not met, ``note`` (what the page says) keeps the
        notebook from failing."""
        values = _values(measured, f"measured of {id!r}")
        return self._add(
            id,
            source,
            "assumption",
            statement,
            values,
            relation,
            threshold,
            why,
            "hypothesis",
            digits,
            note=str(note),
        )

    # -- checks ------------------------------------------------------------------------
    def _compared(
        self,
        id,
        source,
        kind,
        statement,
        measured,
        relation,
        threshold,
        why,
        horizon,
        rival,
        deterministic,
        digits,
        **extra,
    ) -> Claim:
        if not isinstance(rival, Rival):
            raise ValueError(
                f"{kind} {id!r} needs rival=Rival(name, per-seed values, horizon=...)"
            )
        if not str(horizon or "").strip():
            raise ValueError(
                f"{kind} {id!r}: horizon must be stated (where the quantity is "
                "measured)"
            )
        values = _values(measured, f"measured of {id!r}")
        _seeds_ok(values, deterministic, f"measured of {id!r}")
        if deterministic and len(values) == 1:
            why = f"{why} — one run: {deterministic}"
        claim = self._add(
            id,
            source,
            kind,
            statement,
            values,
            relation,
            threshold,
            why,
            str(horizon),
            digits,
            **extra,
        )
        try:
            self._check_rival(
                claim, values, rival, deterministic_claim=len(values) == 1
            )
        except (CannotDiscriminate, ValueError):
            self.claims.pop()
            raise
        return self.claims[-1]

    def _check_rival(
        self, claim: Claim, values, rival: Rival, deterministic_claim: bool
    ) -> None:
        name = _rival_name(claim, rival)
        rv = _values(rival.measured, f"rival of {claim.id!r}")
        constant = (
            len(rv) == 1 and not deterministic_claim or (len(rv) > 1 and width(rv) == 0)
        )
        if constant and not rival.deterministic.strip():
            raise CannotDiscriminate(
                f"claim {claim.id!r}: the rival {name!r} is a constant "
                f"({significant(rv[0], 4)} on every seed): measure it per seed, or say "
                "why it is one number (deterministic=)"
            )
        if len(rv) > 1:
            _seeds_ok(rv, rival.deterministic, f"rival of {claim.id!r}")
        horizon = _rival_horizon(claim, name, rival)
        passes = RELATIONS[claim.relation]
        nearest = best(rv, claim.relation)
        need = margin(values, rv, claim.threshold, claim.relation)
        # A claim that fails on its worst seed is recorded as failing: whether its
        # rival would have been told apart no longer matters.
        if claim.holds and (
            passes(nearest, claim.threshold) or abs(nearest - claim.threshold) <= need
        ):
            raise CannotDiscriminate(
                f"claim {claim.id!r} cannot discriminate: its rival {name!r} measures "
                f"{significant(nearest, 4)} against {claim.relation} "
                f"{significant(claim.threshold, 4)} — it must fail by more than "
                f"{significant(need, 2)} (the seed spreads, 1% of scale)"
            )
        spread = [min(rv), max(rv)] if len(rv) > 1 else None
        self._with_rival(claim, name, nearest, spread, horizon, list(rv))

    def _with_rival(self, claim: Claim, name, measured, spread, horizon, values):
        """Replace the last claim recorded (``claim``) by itself with its rival."""
        rival = {
            "name": name,
            "measured": measured,
            "spread": spread,
            "horizon": horizon,
            "values": values,
        }
        self.claims[-1] = Claim(**{**_fields(claim), "rival": rival})

    def _add(
        self,
        id,
        source,
        kind,
        statement,
        values,
        relation,
        threshold,
        why,
        horizon,
        digits,
        **extra,
    ) -> Claim:
        check_id(id, self.notebook)
        if relation not in RELATIONS:
            raise ValueError(
                f"claim {id!r}: relation must be one of {sorted(RELATIONS)}, got "
                f"{relation!r}"
            )
        if any(c.id == id for c in self.claims):
            raise ValueError(f"claim id {id!r} is used twice on {self.notebook}")
        for name, text in (("source", source), ("statement", statement), ("why", why)):
            if not str(text).strip():
                raise ValueError(f"claim {id!r}: {name} must be stated")
        if not (isinstance(digits, int) and 1 <= digits <= 6):
            raise ValueError(
                f"claim {id!r}: digits must be an integer in 1..6, got {digits!r}"
            )
        thr = _number(threshold, f"threshold of {id!r}")
        if relation == "==" and not all(float(v).is_integer() for v in (*values, thr)):
            raise ValueError(
                f"claim {id!r}: '==' compares integers only; a float is compared with "
                "a tolerance (an identity) or a one-sided relation"
            )
        spread = extra.pop(
            "spread", (min(values), max(values)) if len(values) > 1 else None
        )
        claim = Claim(
            id,
            str(source),
            kind,
            str(statement),
            worst(values, relation),
            relation,
            thr,
            str(why),
            seeds=extra.pop("seeds", len(values)),
            spread=spread,
            horizon=str(horizon),
            digits=digits,
            values=tuple(values),
            **extra,
        )
        self.claims.append(claim)
        return claim

    # -- output ------------------------------------------------------------------------
    def records(self) -> list[dict]:
        out = []
        for c in self.claims:
            d = c.as_dict()
            if d["rival"]:
                d["rival"] = {k: v for k, v in d["rival"].items() if k != "values"}
            out.append(d)
        return out

    def _shown(self, c: Claim) -> str:
        if c.kind == "identity":
            return identity_text(c.measured, self._scales.get(c.id, 1.0))
        if c.seeds > len(c.values):  # a frequency: its value at ``digits``
            return significant(c.measured, c.digits)
        return portable(c.values or (c.measured,), c.digits)

    def text_table(self) -> str:
        """The locked table nbval compares: id, kind, verdict, seeds, values at the
        precision their seed spread supports."""
        rows = [("id", "kind", "verdict", "seeds", "measured", "test", "rival")]
        for c in self.claims:
            riv = portable(c.rival["values"], c.digits) if c.rival else "-"
            rows.append(
                (
                    c.id,
                    c.kind,
                    c.verdict,
                    str(c.seeds),
                    self._shown(c),
                    f"{c.relation} {significant(c.threshold, 3)}",
                    riv,
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        return "\n".join(
            "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows
        )

    def save(self, path: str | os.PathLike | None = None) -> Path | None:
        """Write the claims as strict JSON, atomically; default path
        ``$TWOLAYER_CLAIMS_OUT``."""
        target = path or os.environ.get(CLAIMS_ENV)
        if not target:
            return None
        target = Path(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        # ``heldout`` stays null here: the pipeline fills it from the page's stored
        # sweep when it publishes this file (twolayer.pipeline.robustness.
        # refresh_heldout), so that a cached run shows the sweep as stored now
        payload = {"notebook": self.notebook, "claims": self.records()}
        text = json.dumps(payload, indent=1, allow_nan=False)
        with tempfile.NamedTemporaryFile(
            "w", dir=target.parent, delete=False, suffix=".tmp"
        ) as fh:
            fh.write(text)
            tmp = fh.name
        os.replace(tmp, target)
        return target

    def _check_causes(self) -> None:
        ids = {c.id for c in self.claims}
        for c in self.claims:
            missing = [x for x in c.causes if x not in ids or x == c.id]
            if missing:
                raise ValueError(
                    f"claim {c.id!r}: its diagnosis names {', '.join(missing)}, which "
                    f"are not other claims of {self.notebook}"
                )

    def finish(self, display: bool = True) -> None:
        """Save, print the locked table, and raise :class:`ClaimFailed` on any
        failure."""
        if not self.claims:
            raise ValueError(f"{self.notebook}: no claims recorded")
        if self._unchecked:
            raise ValueError(
                f"{self.notebook}: claims registered in {self.registry} but never "
                f"checked: {', '.join(self._unchecked)}"
            )
        self._check_causes()
        self.save()
        if display:
            print(self.text_table())
        failed = [c for c in self.claims if c.failing]
        if failed:
            lines = "; ".join(
                f"{c.id}: measured {significant(c.measured, 4)} not {c.relation} "
                f"{significant(c.threshold, 4)}"
                for c in failed
            )
            raise ClaimFailed(
                f"{len(failed)} claim(s) of {self.notebook} fail: {lines}"
            )


def _unresolved_text(claim: Claim, tr: dict) -> str:
    """The ledger's diagnosis of a limit claim that is not resolved."""
    ts = tr["log10_t"]
    if tr["target"] is None:
        what = "the value (log10 of a distance tending to 0)"
    else:
        what = f"its distance to the limit {significant(tr['target'], 4)}"
    cross = (
        f"at this rate it crosses {claim.relation} {significant(claim.threshold, 3)} "
        f"near t = 10^{significant(tr['crossing_log10_t'], 3)}"
        if tr["crossing_log10_t"] is not None
        else "at this rate it crosses the threshold beyond t = 10^(1e300)"
    )
    return (
        f"not resolved at t = 10^{significant(ts[-1], 3)}: "
        f"{significant(claim.measured, 4)} is outside {claim.relation} "
        f"{significant(claim.threshold, 3)}, but {what} still shrinks "
        f"x{significant(tr['ratio'], 2)} per decade of log10 t (from "
        f"{significant(tr['values'][-2], 4)} at t = 10^{significant(ts[-2], 3)}); "
        f"{cross}"
    )


def _rival_name(claim: Claim, rival: Rival) -> str:
    """The rival's name, stripped; a rival without one is refused."""
    name = str(rival.name).strip()
    if not name:
        raise ValueError(f"claim {claim.id!r}: the rival needs a name")
    return name


def _rival_horizon(claim: Claim, name: str, rival: Rival) -> str:
    """The rival's horizon (the claim's unless given), which must be the claim's
    horizon or the initial / early-phase state named as such."""
    horizon = claim.horizon if rival.horizon is None else str(rival.horizon)
    if horizon != claim.horizon and not horizon.strip().lower().startswith(
        EARLY_HORIZONS
    ):
        raise CannotDiscriminate(
            f"claim {claim.id!r}: the rival {name!r} is measured at {horizon!r}, "
            f"not at the claim's horizon {claim.horizon!r} (nor the initial / "
            "early-phase state)"
        )
    return horizon


def _flags(successes, name: str) -> list[bool]:
    """Per-trial outcomes of a probability statement: booleans, at least 20."""
    seq = successes.tolist() if hasattr(successes, "tolist") else successes
    if isinstance(seq, (bool, int, float)):
        raise ValueError(
            f"{name}: give one boolean per trial, not a single frequency ({seq!r})"
        )
    flags = list(seq)
    if not all(isinstance(f, bool) or f in (0, 1) for f in flags):
        raise ValueError(f"{name}: every trial must be True/False")
    if len(flags) < 20:
        raise ValueError(f"{name}: a probability needs >= 20 trials, got {len(flags)}")
    return [bool(f) for f in flags]


def _binomial_interval(k: int, n: int) -> tuple[float, float]:
    """The 95 % Clopper–Pearson interval of ``k`` successes in ``n`` trials."""
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(0.95)
    return ci.low, ci.high


def _check_diagnosis(id: str, diagnosis: str, causes: Sequence[str]) -> None:
    """A diagnosis names the claims on the page that measured the separated causes."""
    if diagnosis and not list(causes):
        raise ValueError(
            f"claim {id!r}: a diagnosis must name the ids of the claims on this "
            "page that measured the separated causes (causes=[...]); free text "
            "alone is not a diagnosis"
        )
    if list(causes) and not diagnosis.strip():
        raise ValueError(f"claim {id!r}: causes given without a diagnosis")


def _fields(claim: Claim) -> dict:
    return {f: getattr(claim, f) for f in claim.__dataclass_fields__}


def with_heldout(payload: dict, records: dict | None) -> dict:
    """``payload`` (a claims JSON) with each claim's ``heldout`` set from
    ``records`` (by claim id; null for a claim not in them)."""
    for c in payload["claims"]:
        c["heldout"] = (records or {}).get(c["id"])
    return payload


def load_all(root: str | os.PathLike) -> list[dict]:
    """Every claim recorded under ``root`` (``*.claims.json``), sorted by page,
    each with its page id under ``"notebook"``."""
    out = []
    for p in sorted(Path(root).rglob("*.claims.json")):
        payload = json.loads(p.read_text())
        out.extend({**c, "notebook": payload["notebook"]} for c in payload["claims"])
    return out
