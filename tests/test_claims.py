"""The claims ledger: verdicts, JSON output, failure, bad arguments."""
from __future__ import annotations

import json
import os

import pytest

from twolayer import claims
from twolayer.claims import ClaimFailed, Ledger


def test_holds_and_fails():
    led = Ledger("ch/nb")
    ok = led.check("ch.a", "small", 0.1, "<=", 0.2, "theory: bound 0.2")
    bad = led.check("ch.b", "big", 3, ">", 5, "theory: above 5")
    assert ok.holds and ok.verdict == "holds" and ok.notebook == "ch/nb"
    assert not bad.holds and bad.verdict == "FAILS"
    for rel, m, t, expected in [("<", 1, 1, False), (">=", 1, 1, True), ("==", 2, 2.0, True), (">", 2, 1, True)]:
        assert led.check(f"r{rel}{m}", "", m, rel, t, "w").holds is expected
    rec = led.records()[0]
    assert rec["holds"] is True and rec["verdict"] == "holds" and rec["why"] == "theory: bound 0.2"
    assert list(led.table().columns) == ["id", "statement", "measured", "relation", "threshold", "verdict", "why"]


def test_finish_saves_json_then_raises(tmp_path, monkeypatch):
    out = tmp_path / "deep" / "claims.json"
    monkeypatch.setenv(claims.CLAIMS_ENV, str(out))
    led = Ledger("ch/nb")
    led.check("ch.ok", "fine", 1.0, "<=", 2.0, "w")
    led.check("ch.no", "broken", 3.0, "<=", 2.0, "w")
    with pytest.raises(ClaimFailed, match=r"1 claim\(s\) of ch/nb fail: ch.no: measured 3 not <= 2"):
        led.finish(display=False)
    payload = json.loads(out.read_text())
    assert payload["notebook"] == "ch/nb"
    assert [c["verdict"] for c in payload["claims"]] == ["holds", "FAILS"], "saved before raising"
    assert issubclass(ClaimFailed, AssertionError)


def test_documented_deviation_does_not_fail(tmp_path):
    led = Ledger("ch/nb")
    c = led.check("ch.dev", "paper's claim", 0.5, ">=", 0.9, "Theorem 1", deviation="finite time")
    held = led.check("ch.held", "x", 1.0, ">=", 0.9, "w", deviation="unused")
    assert c.verdict == "deviates (documented)" and c.documented
    assert held.verdict == "holds" and not held.documented
    led.finish(display=False)
    assert led.save(tmp_path / "c.json") == tmp_path / "c.json"


def test_save_is_atomic_and_optional(tmp_path, monkeypatch):
    monkeypatch.delenv(claims.CLAIMS_ENV, raising=False)
    led = Ledger("ch/nb")
    led.check("ch.a", "s", 1, "==", 1, "w")
    assert led.save() is None, "outside the pipeline nothing is written"
    target = tmp_path / "c.json"
    target.write_text("old")
    led.save(target)
    assert json.loads(target.read_text())["claims"][0]["id"] == "ch.a"
    assert sorted(os.listdir(tmp_path)) == ["c.json"], "no temporary file left behind"
    assert claims.load_all(tmp_path) == [] and target.rename(tmp_path / "x.claims.json")
    assert [c["id"] for c in claims.load_all(tmp_path)] == ["ch.a"]


def test_bad_arguments():
    with pytest.raises(ValueError, match="notebook must be 'chapter/name'"):
        Ledger("nochapter")
    led = Ledger("ch/nb")
    with pytest.raises(ValueError, match="relation must be one of"):
        led.check("ch.a", "s", 1, "=>", 1, "w")
    led.check("ch.a", "s", 1, "==", 1, "w")
    with pytest.raises(ValueError, match="claim id 'ch.a' is used twice in ch/nb"):
        led.check("ch.a", "s", 1, "==", 1, "w")
    with pytest.raises(ValueError, match="state where the threshold comes from"):
        led.check("ch.b", "s", 1, "==", 1, "")
    with pytest.raises(ValueError, match="measured is NaN"):
        led.check("ch.c", "s", float("nan"), "==", 1, "w")
    with pytest.raises(ValueError, match="threshold must be a number"):
        led.check("ch.d", "s", 1, "==", "one", "w")
    assert [c.id for c in led.claims] == ["ch.a"], "rejected claims are not recorded"
