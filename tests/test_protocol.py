"""Claims registered before the run (``<page>.claims.yml``): the ledger completes a
claim from its entry, refuses a field written twice, an unknown field, a claim
registered and never checked; the registry is part of the page's cache key."""

from __future__ import annotations

import json

import pytest

from twolayer import claims, protocol
from twolayer.claims import Ledger, Rival
from twolayer.pipeline.cache import notebook_source, notebook_tree

PAGE = "phuong2021/fig1_two_layer"
SEEDS = [0.9991, 0.9993, 0.9990, 0.9995, 0.9992]
EARLY = [0.95, 0.94, 0.951, 0.948, 0.947]


@pytest.fixture(autouse=True)
def _legacy_registry(monkeypatch):
    """These claims carry no quantifier (format v2 calls): the rules tested here do
    not depend on it; test_claims_v3 tests the required quantifier."""
    monkeypatch.setattr(claims, "QUANTIFIER_REQUIRED", False)


ENTRY = """
phuong2021.thm1.cos:
  source: Thm 1
  statement: cos to w+ at step {lr:g}
  relation: '>='
  threshold: 0.99
  why: limit is w+
"""


def registry(tmp_path, text=ENTRY):
    path = tmp_path / "fig1_two_layer.claims.yml"
    path.write_text(text)
    return str(path)


def check(led, **kw):
    rival = Rival("early-phase direction", EARLY, horizon="early phase")
    args = dict(id="thm1.cos", measured=SEEDS, horizon="t = 1e300", rival=rival)
    return led.prediction(**{**args, **kw})


def test_a_registered_claim_takes_its_fields_from_the_registry(tmp_path):
    led = Ledger(PAGE, registered=registry(tmp_path))
    c = check(led)
    assert (c.id, c.source, c.relation, c.threshold) == (
        "phuong2021.thm1.cos",
        "Thm 1",
        ">=",
        0.99,
    )
    assert c.statement == "cos to w+ at step {lr:g}"  # no names: text kept
    assert c.measured == min(SEEDS)


def test_text_fields_are_templates_filled_from_the_page_names(tmp_path):
    led = Ledger(PAGE, registered=registry(tmp_path), names={"lr": 0.25})
    assert check(led).statement == "cos to w+ at step 0.25"
    with pytest.raises(ValueError, match="cannot be filled"):
        Ledger(PAGE, registered=registry(tmp_path), names={}).prediction(
            id="thm1.cos", measured=SEEDS, horizon="h", rival=Rival("r", EARLY)
        )


def test_a_field_written_twice_is_refused(tmp_path):
    led = Ledger(PAGE, registered=registry(tmp_path))
    with pytest.raises(ValueError, match="threshold written both"):
        check(led, threshold=0.9)


def test_a_registered_claim_never_checked_fails_the_page(tmp_path):
    led = Ledger(PAGE, registered=registry(tmp_path))
    led.assumption(
        id="phuong2021.thm1.separable",
        source="Thm 1",
        statement="separable",
        measured=1,
        relation="==",
        threshold=1,
        why="data",
    )
    with pytest.raises(ValueError, match="never checked: phuong2021.thm1.cos"):
        led.finish(display=False)


def test_an_unregistered_claim_needs_every_field(tmp_path):
    led = Ledger(PAGE, registered=registry(tmp_path))
    with pytest.raises(TypeError):
        check(led, id="thm1.other")


@pytest.mark.parametrize(
    "text, message",
    [
        ("a: [1, 2]", "must map fields"),
        ("a:\n  threshhold: 1", "unknown field"),
        ("- a", "mapping of claim ids"),
        ("a: {b: [}", "not valid YAML"),
    ],
)
def test_a_bad_registry_is_named_in_one_line(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        protocol.load(registry(tmp_path, text))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        protocol.load(tmp_path / "absent.claims.yml")


def test_the_registry_is_part_of_the_page_key(tmp_path):
    nb = tmp_path / "fig1_two_layer.ipynb"
    cell = {"cell_type": "code", "source": "x = 1\n", "metadata": {}}
    nb.write_text(json.dumps({"cells": [cell]}))
    before = (notebook_source(nb), notebook_tree(nb))
    registry(tmp_path)
    after = (notebook_source(nb), notebook_tree(nb))
    registry(tmp_path, ENTRY.replace("0.99", "0.9"))
    moved = (notebook_source(nb), notebook_tree(nb))
    assert before[0] != after[0] != moved[0] and before[1] != after[1] != moved[1]
    registry(tmp_path, "# a comment\n" + ENTRY)  # layout and comments do not count
    assert (notebook_source(nb), notebook_tree(nb)) == after


def test_an_id_pattern_registers_the_claims_of_a_loop(tmp_path):
    text = ENTRY.replace("phuong2021.thm1.cos:", "phuong2021.thm1.cos_{pair}_{side}:")
    led = Ledger(PAGE, registered=registry(tmp_path, text), names={"lr": 0.1})
    for pair in ("0_1", "3_5"):
        c = check(led, id=f"thm1.cos_{pair}_centred")
        assert (c.id, c.threshold) == (f"phuong2021.thm1.cos_{pair}_centred", 0.99)
    led.finish(display=False)  # the pattern was checked: nothing left over
    with pytest.raises(TypeError):  # "cos" alone does not match the pattern
        check(Ledger(PAGE, registered=registry(tmp_path, text)), id="thm1.cos")
    assert not protocol.id_pattern("a.b.c_{x}").fullmatch("a.b.c_")


# -- format v3 fields (DESIGN.md "Claims") ---------------------------------------------
V3 = (
    ENTRY
    + """  quantifier: every
  quantifier_source: "Thm 1: 'for every initialisation'"
  section: fig1-limit
  changed: 2026-11-28
  chosen_on: [0]
  tested_on: "5-9, 10-14"
"""
)


def test_v3_fields_are_registered_and_pass_through_to_the_json(tmp_path):
    led = Ledger(PAGE, registered=registry(tmp_path, V3))
    c = check(led)
    d = led.records()[0]
    assert (c.quantifier, c.section, c.changed) == ("every", "fig1-limit", "2026-11-28")
    assert d["quantifier_source"].startswith("Thm 1")
    assert (d["chosen_on"], d["tested_on"], d["limit"]) == ([0], "5-9, 10-14", False)
    assert d["trend"] is None and d["stall"] is None and d["heldout"] is None
    json.dumps(d, allow_nan=False)


@pytest.mark.parametrize(
    "field, value",
    [
        ("quantifier", "always"),
        ("limit", "maybe"),
        ("section", "has space"),
        ("tested_on", "[]"),
        ("quantifier_source", "''"),
    ],
)
def test_a_bad_v3_value_is_one_line_naming_claim_and_field(tmp_path, field, value):
    path = registry(tmp_path, ENTRY + f"  {field}: {value}\n")
    with pytest.raises(ValueError, match=f"'phuong2021.thm1.cos' field {field}:") as e:
        protocol.load(path)
    assert "\n" not in str(e.value)


def test_an_unknown_field_is_still_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown field"):
        protocol.load(registry(tmp_path, ENTRY + "  quantifer: every\n"))
