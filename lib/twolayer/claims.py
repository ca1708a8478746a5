"""The claims ledger: every theorem turned into numbers that could fail.

A notebook writes ``ledger = Ledger()`` (the page id comes from the pipeline
through ``$TWOLAYER_PAGE``) and records its claims, each of one of three kinds
(``../shared/DESIGN.md``, "Claims"):

* :meth:`Ledger.prediction` — a theorem's or figure's quantitative prediction,
  ``measured <relation> threshold``. It must carry a **rival**: the same
  quantity measured on the strongest alternative the theorem rules out (the
  early-phase direction, a large initialisation, the plain linear SVM...).
  The rival must *fail* the same relation and threshold; if it passes, the
  claim cannot discriminate and :class:`CannotDiscriminate` is raised at once.
  A prediction that fails and carries a ``diagnosis`` gets the verdict
  ``"does not reproduce"`` (it does not fail the notebook; the diagnosis names
  what was run to separate the candidate causes).
* :meth:`Ledger.identity` — an exact statement (definition, conservation law,
  algebra) checked to a floating-point tolerance whose reason is stated.
* :meth:`Ledger.assumption` — whether the data or setting meets a theorem's
  hypothesis. When it is not met and the page says so (``note``), that is
  information, not a failure.

:meth:`Ledger.finish` writes strict JSON beside the executed notebook (path
from ``$TWOLAYER_CLAIMS_OUT``), prints the locked plain-text table (values
rounded to each claim's ``digits`` significant digits, compared by nbval), and
raises :class:`ClaimFailed` if any claim fails.
"""
from __future__ import annotations

import json
import math
import operator
import os
import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

CLAIMS_ENV = "TWOLAYER_CLAIMS_OUT"
PAGE_ENV = "TWOLAYER_PAGE"
CHAPTERS = ("phuong2021", "sarussi2021", "min2024", "lyu2021", "synthesis")
KINDS = ("prediction", "identity", "assumption")
VERDICTS = ("holds", "fails", "does not reproduce")
RELATIONS = {"<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt,
             "==": operator.eq}
_PART = r"[a-z0-9_]+"
ID_PATTERN = re.compile(rf"(?P<chapter>{_PART})\.(?P<result>{_PART})\.(?P<item>{_PART})")


class ClaimFailed(AssertionError):
    """At least one claim of a notebook does not hold."""


class CannotDiscriminate(ValueError):
    """A prediction's rival passes the same test: the claim cannot fail."""


@dataclass(frozen=True)
class Rival:
    """The same quantity measured on the alternative the theorem rules out."""

    name: str
    measured: float


@dataclass(frozen=True)
class Claim:
    """One checkable statement: ``measured <relation> threshold``."""

    id: str
    source: str
    kind: str
    statement: str
    measured: float
    relation: str
    threshold: float
    why: str
    rival: Rival | None = None
    diagnosis: str = ""
    note: str = ""
    digits: int = 2

    @property
    def holds(self) -> bool:
        return bool(RELATIONS[self.relation](self.measured, self.threshold))

    @property
    def verdict(self) -> str:
        if self.holds:
            return "holds"
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
        d["verdict"] = self.verdict
        d["rival"] = asdict(self.rival) if self.rival else None
        return d


def check_id(claim_id: str, page: str | None = None) -> str:
    """``<chapter>.<result>.<item>``, lower case; the chapter must be the page's."""
    m = ID_PATTERN.fullmatch(claim_id or "")
    if not m or m["chapter"] not in CHAPTERS:
        raise ValueError(f"claim id {claim_id!r} is not '<chapter>.<result>.<item>' with chapter in "
                         f"{', '.join(CHAPTERS)} (lower case, digits, '_')")
    if page and m["chapter"] != page.split("/")[0]:
        raise ValueError(f"claim id {claim_id!r} is on page {page!r} of another chapter")
    return claim_id


def _number(value, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a number, got {value!r}") from exc
    if not math.isfinite(v):
        raise ValueError(f"{name} is {v}: the measurement failed (claims JSON is strict, finite)")
    return v


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


def _default_page() -> str:
    page = os.environ.get(PAGE_ENV)
    if page:
        return page
    # Run outside the pipeline (nbval, a notebook front end): cwd is the chapter folder.
    return f"{Path.cwd().name}/(unnamed)"


class Ledger:
    """The claims of one page, in the order they are checked."""

    def __init__(self, page: str | None = None) -> None:
        page = page or _default_page()
        if "/" not in page or page.split("/")[0] not in CHAPTERS:
            raise ValueError(f"page must be '<chapter>/<name>' with chapter in {', '.join(CHAPTERS)}, "
                             f"got {page!r}")
        self.notebook = page
        self.claims: list[Claim] = []

    # -- the three kinds --------------------------------------------------------------
    def prediction(self, id: str, source: str, statement: str, measured, relation: str, threshold,
                   why: str, rival: tuple[str, float], diagnosis: str = "", digits: int = 2) -> Claim:
        """A theorem's prediction; ``rival=(name, value)`` must fail the same test.

        ``why`` says where the threshold comes from (fixed from the theory before
        the run). ``diagnosis`` is only for a paper claim found not to reproduce:
        it names the runs that separated the candidate causes.
        """
        if rival is None or len(rival) != 2 or not str(rival[0]).strip():
            raise ValueError(f"prediction {id!r} needs rival=(name, measured value)")
        riv = Rival(str(rival[0]), _number(rival[1], f"rival of {id!r}"))
        claim = self._add(id, source, "prediction", statement, measured, relation, threshold, why,
                          rival=riv, diagnosis=diagnosis, digits=digits)
        if RELATIONS[relation](riv.measured, claim.threshold):
            self.claims.pop()
            raise CannotDiscriminate(
                f"claim {id!r} cannot discriminate: its rival {riv.name!r} measures "
                f"{significant(riv.measured, 4)}, which also satisfies {relation} "
                f"{significant(claim.threshold, 4)}")
        return claim

    def identity(self, id: str, source: str, statement: str, error, tolerance, why: str,
                 digits: int = 1) -> Claim:
        """An exact statement: ``error <= tolerance``; ``why`` gives the tolerance's reason."""
        return self._add(id, source, "identity", statement, error, "<=", tolerance, why,
                         digits=digits)

    def assumption(self, id: str, source: str, statement: str, measured, relation: str, threshold,
                   why: str, note: str = "", digits: int = 2) -> Claim:
        """A theorem's hypothesis checked on the data. If it is not met, ``note``
        (what the page says about it) keeps the notebook from failing."""
        return self._add(id, source, "assumption", statement, measured, relation, threshold, why,
                         note=note, digits=digits)

    def _add(self, id, source, kind, statement, measured, relation, threshold, why, **extra) -> Claim:
        check_id(id, self.notebook)
        if relation not in RELATIONS:
            raise ValueError(f"claim {id!r}: relation must be one of {sorted(RELATIONS)}, got {relation!r}")
        if any(c.id == id for c in self.claims):
            raise ValueError(f"claim id {id!r} is used twice on {self.notebook}")
        for name, text in (("source", source), ("statement", statement), ("why", why)):
            if not str(text).strip():
                raise ValueError(f"claim {id!r}: {name} must be stated")
        digits = extra.pop("digits")
        if not (isinstance(digits, int) and 1 <= digits <= 6):
            raise ValueError(f"claim {id!r}: digits must be an integer in 1..6, got {digits!r}")
        claim = Claim(id, str(source), kind, str(statement), _number(measured, f"measured of {id!r}"),
                      relation, _number(threshold, f"threshold of {id!r}"), str(why), digits=digits,
                      **extra)
        self.claims.append(claim)
        return claim

    # -- output -----------------------------------------------------------------------
    def records(self) -> list[dict]:
        return [c.as_dict() for c in self.claims]

    def text_table(self) -> str:
        """The locked table nbval compares: id, kind, verdict, rounded values."""
        rows = [("id", "kind", "verdict", "measured", "test", "rival")]
        for c in self.claims:
            riv = significant(c.rival.measured, c.digits) if c.rival else "-"
            # an identity that holds is locked as "within": its error is round-off,
            # which differs between machines and would make the table flaky
            shown = "within" if c.kind == "identity" and c.holds else significant(c.measured, c.digits)
            rows.append((c.id, c.kind, c.verdict, shown,
                         f"{c.relation} {significant(c.threshold, 3)}", riv))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        return "\n".join("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows)

    def save(self, path: str | os.PathLike | None = None) -> Path | None:
        """Write the claims as strict JSON, atomically; default path ``$TWOLAYER_CLAIMS_OUT``."""
        target = path or os.environ.get(CLAIMS_ENV)
        if not target:
            return None
        target = Path(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        payload = {"notebook": self.notebook, "claims": self.records()}
        text = json.dumps(payload, indent=1, allow_nan=False)
        with tempfile.NamedTemporaryFile("w", dir=target.parent, delete=False, suffix=".tmp") as fh:
            fh.write(text)
            tmp = fh.name
        os.replace(tmp, target)
        return target

    def finish(self, display: bool = True) -> None:
        """Save, print the locked table, and raise :class:`ClaimFailed` on any failure."""
        if not self.claims:
            raise ValueError(f"{self.notebook}: no claims recorded")
        self.save()
        if display:
            print(self.text_table())
        failed = [c for c in self.claims if c.failing]
        if failed:
            lines = "; ".join(f"{c.id}: measured {significant(c.measured, 4)} not {c.relation} "
                              f"{significant(c.threshold, 4)}" for c in failed)
            raise ClaimFailed(f"{len(failed)} claim(s) of {self.notebook} fail: {lines}")


def load_all(root: str | os.PathLike) -> list[dict]:
    """Every claim recorded under ``root`` (``*.claims.json``), sorted by page,
    each with its page id under ``"notebook"``."""
    out = []
    for p in sorted(Path(root).rglob("*.claims.json")):
        payload = json.loads(p.read_text())
        out.extend({**c, "notebook": payload["notebook"]} for c in payload["claims"])
    return out
