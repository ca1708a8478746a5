"""A page's claims registered before its run: ``<page>.claims.yml`` beside the notebook.

What a claim asserts (its source, statement, relation, threshold, why the threshold,
horizon, digits) is fixed from the theory before any run — DESIGN.md "Claims". The
registry file says it once, as data a reader can scan; the notebook's claims cell
then only supplies what the run measured::

    ledger = Ledger(registered="symmetric_limit.claims.yml")
    ledger.prediction(id="thm43.error", measured=err_main, rival=phase1)

Each entry is keyed by the claim's full id (or an id pattern, ``fig7.ratio_{pair}``,
for claims made in a loop over a parameter's values) and holds literal fields only
(text fields may be templates, see :class:`twolayer.claims.Ledger`); a field
computed by the run (a threshold from a parameter, a statement with the run's
``alpha``) is passed in the call instead — never both (:class:`twolayer.claims.Ledger`
refuses a field written twice, a registered claim never checked, an unknown field).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

SUFFIX = ".claims.yml"
FIELDS = frozenset(
    (
        "source",
        "statement",
        "relation",
        "threshold",
        "why",
        "horizon",
        "digits",
        "kind",
        "bound",
        "deterministic",
        "diagnosis",
        "causes",
        "tolerance",
        "scale",
        "note",
    )
)
# Claims format v3 (DESIGN.md "Claims"): how the paper quantifies the statement,
# whether it is about t -> infinity, where the page shows it, and its history.
QUANTIFIERS = ("every", "probability", "most", "book")
V3_FIELDS = frozenset(
    (
        "quantifier",
        "quantifier_source",
        "limit",
        "section",
        "changed",
        "chosen_on",
        "tested_on",
    )
)
FIELDS = FIELDS | V3_FIELDS
# Page-level entries (not claim ids, which have three dotted parts).
# ``data``: how the page's data are drawn, for its held-out sweeps — "block" (the
# default: one data set drawn from ``seed``, or from ``data_seed`` if the page has
# that parameter, which the sweep then sets to the block's seed), "per_seed" (each
# of the page's seeds draws its own data set), or "fixed: <why>" (the paper's own
# point set, a fixed subset: the sweep varies only what is random).
PAGE_KEYS = ("data",)
DATA_MODES = ("block", "per_seed")
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")


def path_for(notebook: Path) -> Path:
    """The registry of ``<name>.ipynb``: ``<name>.claims.yml`` in the same folder."""
    return notebook.with_name(notebook.stem + SUFFIX)


def id_pattern(key: str) -> re.Pattern:
    """A registry key with ``{placeholders}`` as a pattern over full ids: each
    placeholder stands for one or more of ``[a-z0-9_]`` (a claim made in a loop
    over a parameter's values is registered once)."""
    parts = re.split(r"\{[^{}]*\}", key)
    return re.compile("[a-z0-9_]+".join(re.escape(p) for p in parts))


def load(path: str | Path) -> dict[str, dict]:
    """The registered claims of one page, ``{full id: {field: value}}``, checked:
    a mapping of ids to mappings of known fields (one-line error naming what is
    wrong otherwise)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"claims registry {path} does not exist")
    try:
        entries = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"claims registry {path} is not valid YAML: {exc}") from exc
    if not isinstance(entries, dict):
        raise ValueError(f"claims registry {path}: expected a mapping of claim ids")
    for key in PAGE_KEYS:
        if key in entries:
            check_data(entries.pop(key), where=str(path))
    for cid, fields in entries.items():
        if not isinstance(fields, dict):
            raise ValueError(f"claims registry {path}: {cid!r} must map fields")
        unknown = sorted(set(fields) - FIELDS)
        if unknown:
            raise ValueError(
                f"claims registry {path}: {cid!r} has unknown field(s) "
                f"{', '.join(unknown)} (known: {', '.join(sorted(FIELDS))})"
            )
        for name in V3_FIELDS & set(fields):
            fields[name] = check_v3_field(cid, name, fields[name], where=str(path))
    return entries


def check_data(value, where: str = "claims registry") -> str:
    """A page's ``data:`` entry checked (one-line ``ValueError`` otherwise)."""
    if isinstance(value, str) and (
        value in DATA_MODES
        or (value.startswith("fixed:") and value.removeprefix("fixed:").strip())
    ):
        return value
    raise ValueError(
        f"{where}: data: expected one of {', '.join(DATA_MODES)} or 'fixed: <why>', "
        f"got {value!r}"
    )


def data_mode(notebook: Path) -> str:
    """How a page's data are drawn (its registry's ``data:``; "block" without
    one): "block", "per_seed" or "fixed: <why>"."""
    path = path_for(notebook)
    if not path.is_file():
        return "block"
    try:
        entries = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"claims registry {path} is not valid YAML: {exc}") from exc
    if not isinstance(entries, dict) or "data" not in entries:
        return "block"
    return check_data(entries["data"], where=str(path))


def _blocks(value) -> bool:
    """Seed blocks as written: a text ("0-4, 5-9"), a block's first seed, or a
    list of those."""
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return True
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value)
    )


def check_v3_field(cid: str, name: str, value, where: str = "claims registry"):
    """A format-v3 field of claim ``cid``, checked (one-line ``ValueError`` naming
    the claim and the field) and normalised: a YAML date becomes its ISO text."""
    import datetime

    if isinstance(value, (datetime.date, datetime.datetime)):
        value = value.isoformat()
    ok = {
        "quantifier": lambda v: v in QUANTIFIERS,
        "quantifier_source": lambda v: isinstance(v, str) and bool(v.strip()),
        "limit": lambda v: isinstance(v, bool),
        "section": lambda v: isinstance(v, str) and bool(_LABEL.fullmatch(v)),
        "changed": lambda v: isinstance(v, str) and bool(v.strip()),
        "chosen_on": _blocks,
        "tested_on": _blocks,
    }[name](value)
    if not ok:
        expected = {
            "quantifier": f"one of {', '.join(QUANTIFIERS)}",
            "quantifier_source": "where the paper states it (text)",
            "limit": "true or false",
            "section": "a MyST label (letters, digits, _ . : -)",
            "changed": "a date or commit note (text)",
            "chosen_on": "seed blocks (text, a first seed, or a list of those)",
            "tested_on": "seed blocks (text, a first seed, or a list of those)",
        }[name]
        raise ValueError(
            f"{where}: {cid!r} field {name}: expected {expected}, got {value!r}"
        )
    return value


def fingerprint(notebook: Path) -> bytes:
    """What a page's registry says, layout and comments left out (b"" without
    one): part of the page's cache key and of its sweeps' code key."""
    path = path_for(notebook)
    if not path.is_file():
        return b""
    return json.dumps(load(path), sort_keys=True, default=str).encode()
