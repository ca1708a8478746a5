"""The claims ledger.

A notebook states each theorem's prediction as a named :class:`Claim`: the
measured value, a threshold taken from the theory (with the reason stated),
and a verdict. :meth:`Ledger.finish` writes the claims as JSON beside the
executed notebook (path from ``$TWOLAYER_CLAIMS_OUT``, set by the pipeline),
shows them as a table, and raises :class:`ClaimFailed` if any claim fails, so
that nbval and the pipeline catch regressions.
"""
from __future__ import annotations

import json
import math
import operator
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

CLAIMS_ENV = "TWOLAYER_CLAIMS_OUT"
RELATIONS = {"<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt, "==": operator.eq}


class ClaimFailed(AssertionError):
    """At least one claim of a notebook does not hold."""


@dataclass(frozen=True)
class Claim:
    """One checkable prediction: ``measured <relation> threshold``."""

    id: str
    statement: str
    measured: float
    relation: str
    threshold: float
    why: str
    notebook: str = ""
    deviation: str = ""

    @property
    def holds(self) -> bool:
        return bool(RELATIONS[self.relation](self.measured, self.threshold))

    @property
    def documented(self) -> bool:
        """A documented deviation: the paper's claim, measured and shown not to
        reproduce in this setting, with the explanation in ``deviation``."""
        return bool(self.deviation) and not self.holds

    @property
    def verdict(self) -> str:
        return "holds" if self.holds else ("deviates (documented)" if self.documented else "FAILS")

    def as_dict(self) -> dict:
        return {**asdict(self), "holds": self.holds, "verdict": self.verdict}


def _number(value, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a number, got {value!r}") from exc
    if math.isnan(v):
        raise ValueError(f"{name} is NaN: the measurement failed")
    return v


class Ledger:
    """The claims of one notebook, in the order they are checked."""

    def __init__(self, notebook: str) -> None:
        if not notebook or "/" not in notebook:
            raise ValueError(f"notebook must be 'chapter/name', got {notebook!r}")
        self.notebook = notebook
        self.claims: list[Claim] = []

    def check(self, id: str, statement: str, measured, relation: str, threshold, why: str,
              deviation: str = "") -> Claim:
        """Record a claim. ``why`` says where the threshold comes from.

        ``deviation`` is for a paper's claim that the book measured and found not
        to reproduce in this setting: the explanation shown in the ledger. Such a
        claim does not fail the notebook; its verdict says "deviates (documented)".
        """
        if relation not in RELATIONS:
            raise ValueError(f"relation must be one of {sorted(RELATIONS)}, got {relation!r}")
        if any(c.id == id for c in self.claims):
            raise ValueError(f"claim id {id!r} is used twice in {self.notebook}")
        if not why:
            raise ValueError(f"claim {id!r}: state where the threshold comes from (why)")
        claim = Claim(id, statement, _number(measured, "measured"), relation,
                      _number(threshold, "threshold"), why, self.notebook, deviation)
        self.claims.append(claim)
        return claim

    def records(self) -> list[dict]:
        return [c.as_dict() for c in self.claims]

    def table(self):
        """The claims as a pandas DataFrame (for display)."""
        import pandas as pd

        cols = ["id", "statement", "measured", "relation", "threshold", "verdict", "why"]
        return pd.DataFrame(self.records(), columns=cols + ["holds", "notebook"])[cols]

    def save(self, path: str | os.PathLike | None = None) -> Path | None:
        """Write the claims JSON atomically; default path from ``$TWOLAYER_CLAIMS_OUT``."""
        target = path or os.environ.get(CLAIMS_ENV)
        if not target:
            return None
        target = Path(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        payload = {"notebook": self.notebook, "claims": self.records()}
        with tempfile.NamedTemporaryFile("w", dir=target.parent, delete=False, suffix=".tmp") as fh:
            json.dump(payload, fh, indent=1, sort_keys=True)
            tmp = fh.name
        os.replace(tmp, target)
        return target

    def finish(self, display: bool = True) -> None:
        """Save, show the table, and raise :class:`ClaimFailed` on any failure."""
        self.save()
        if display:
            try:
                from IPython.display import display as show

                show(self.table().style.hide(axis="index").format(precision=4))
            except ImportError:  # plain Python
                print(self.table().to_string(index=False))
        failed = [c for c in self.claims if not c.holds and not c.documented]
        if failed:
            lines = "; ".join(f"{c.id}: measured {c.measured:.4g} not {c.relation} {c.threshold:.4g}"
                              for c in failed)
            raise ClaimFailed(f"{len(failed)} claim(s) of {self.notebook} fail: {lines}")


def load_all(root: str | os.PathLike) -> list[dict]:
    """Every claim recorded under ``root`` (``*.claims.json``), sorted by notebook."""
    out = []
    for p in sorted(Path(root).rglob("*.claims.json")):
        out.extend(json.loads(p.read_text())["claims"])
    return out
