"""The claims ledger: kinds, rivals, ids, verdicts, strict JSON, the locked table."""
from __future__ import annotations

import json
import math
import os

import pytest

from twolayer import claims
from twolayer.claims import CannotDiscriminate, ClaimFailed, Ledger

PAGE = "phuong2021/fig1_two_layer"


def test_prediction_holds_with_failing_rival():
    led = Ledger(PAGE)
    c = led.prediction("phuong2021.thm1.cos", "Thm 1", "cos to w+", 0.999, ">=", 0.99, "limit is w+",
                       rival=("early-phase direction x̂+", 0.95))
    assert c.holds and c.verdict == "holds" and c.kind == "prediction"
    rec = led.records()[0]
    assert rec["rival"] == {"name": "early-phase direction x̂+", "measured": 0.95}
    assert rec["source"] == "Thm 1" and rec["verdict"] == "holds" and rec["diagnosis"] == ""


def test_prediction_whose_rival_passes_raises():
    led = Ledger(PAGE)
    with pytest.raises(CannotDiscriminate, match="cannot discriminate: its rival 'early phase' measures 0.95"):
        led.prediction("phuong2021.thm1.cos", "Thm 1", "cos", 0.999, ">=", 0.9, "w", rival=("early phase", 0.95))
    assert led.claims == [], "a claim that cannot discriminate is not recorded"


@pytest.mark.parametrize("rival", [None, (), ("", 1.0), ("name",)])
def test_prediction_without_rival_raises(rival):
    with pytest.raises((ValueError, TypeError), match="rival"):
        Ledger(PAGE).prediction("phuong2021.thm1.cos", "Thm 1", "cos", 1, ">=", 0.9, "w", rival=rival)


def test_rival_must_be_a_finite_number():
    with pytest.raises(ValueError, match="rival of 'phuong2021.thm1.cos' is nan"):
        Ledger(PAGE).prediction("phuong2021.thm1.cos", "Thm 1", "c", 1, ">=", 0.9, "w", rival=("r", math.nan))


def test_does_not_reproduce_needs_a_diagnosis():
    led = Ledger(PAGE)
    dnr = led.prediction("phuong2021.appd.sep", "App. D", "s", 0.5, "<=", 0.01, "w", rival=("input", 0.6),
                         diagnosis="tried SGD, no biases: same")
    held = led.prediction("phuong2021.thm1.a", "Thm 1", "x", 1.0, ">=", 0.9, "w", rival=("r", 0.1),
                          diagnosis="unused while it holds")
    assert dnr.verdict == "does not reproduce" and not dnr.failing
    assert held.verdict == "holds"
    led.finish(display=False)  # does not raise
    led.prediction("phuong2021.thm1.b", "Thm 1", "x", 0.5, ">=", 0.9, "w", rival=("r", 0.1))
    with pytest.raises(ClaimFailed, match=r"1 claim\(s\) of phuong2021/fig1_two_layer fail: "
                                          r"phuong2021.thm1.b: measured 0.5 not >= 0.9"):
        led.finish(display=False)


def test_identity_and_assumption():
    led = Ledger(PAGE)
    i = led.identity("phuong2021.lem_a4.balanced", "Lemma A.4", "drift", 3e-15, 1e-12, "float64 round-off")
    assert (i.kind, i.relation, i.verdict) == ("identity", "<=", "holds")
    met = led.assumption("phuong2021.thm1.span", "Thm 1", "rank", 7, "<=", 6, "span hypothesis",
                         note="the page says the paper's data break it")
    assert met.verdict == "fails" and not met.failing, "an unmet assumption the page discusses is information"
    led.finish(display=False)
    led.assumption("phuong2021.thm1.other", "Thm 1", "rank", 7, "<=", 6, "silent")
    with pytest.raises(ClaimFailed):
        led.finish(display=False)


@pytest.mark.parametrize("bad", ["phuong2021.thm1", "Phuong2021.thm1.cos", "ch.a.b", "phuong2021.thm-1.cos",
                                 "phuong2021..cos", "phuong2021.thm1.cos.x", "lyu2021.thm1.cos"])
def test_bad_ids_raise(bad):
    with pytest.raises(ValueError, match="claim id"):
        Ledger(PAGE).identity(bad, "Thm 1", "s", 0, 1, "w")


def test_bad_arguments():
    with pytest.raises(ValueError, match="page must be '<chapter>/<name>'"):
        Ledger("nochapter")
    with pytest.raises(ValueError, match="page must be"):
        Ledger("ch/nb")
    led = Ledger(PAGE)
    with pytest.raises(ValueError, match="relation must be one of"):
        led.assumption("phuong2021.a.b", "Thm 1", "s", 1, "=>", 1, "w")
    led.identity("phuong2021.a.b", "Thm 1", "s", 0, 1, "w")
    with pytest.raises(ValueError, match="'phuong2021.a.b' is used twice"):
        led.identity("phuong2021.a.b", "Thm 1", "s", 0, 1, "w")
    with pytest.raises(ValueError, match="why must be stated"):
        led.identity("phuong2021.a.c", "Thm 1", "s", 0, 1, "")
    with pytest.raises(ValueError, match="source must be stated"):
        led.identity("phuong2021.a.c", "", "s", 0, 1, "w")
    with pytest.raises(ValueError, match="is nan"):
        led.identity("phuong2021.a.c", "Thm 1", "s", float("nan"), 1, "w")
    with pytest.raises(ValueError, match="is -inf"):
        led.identity("phuong2021.a.c", "Thm 1", "s", -math.inf, 1, "w")
    with pytest.raises(ValueError, match="threshold of 'phuong2021.a.c' must be a number"):
        led.identity("phuong2021.a.c", "Thm 1", "s", 0, "one", "w")
    assert [c.id for c in led.claims] == ["phuong2021.a.b"], "rejected claims are not recorded"
    with pytest.raises(ValueError, match="no claims recorded"):
        Ledger(PAGE).finish(display=False)


def test_page_from_environment(monkeypatch):
    monkeypatch.setenv(claims.PAGE_ENV, "lyu2021/phase1")
    assert Ledger().notebook == "lyu2021/phase1"
    monkeypatch.delenv(claims.PAGE_ENV)
    monkeypatch.chdir(os.path.dirname(__file__) + "/../book/min2024")
    assert Ledger().notebook.startswith("min2024/"), "outside the pipeline the chapter is the folder"


def test_strict_json_round_trip(tmp_path, monkeypatch):
    out = tmp_path / "deep" / "x.claims.json"
    monkeypatch.setenv(claims.CLAIMS_ENV, str(out))
    led = Ledger(PAGE)
    led.prediction("phuong2021.thm1.cos", "Thm 1", "cos", 0.999, ">=", 0.99, "w", rival=("x̂", 0.95))
    led.identity("phuong2021.lem.tiny", "Lemma 1", "tiny", 1e-300, 1e-12, "round-off")
    led.finish(display=False)
    text = out.read_text()
    payload = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert payload["notebook"] == PAGE
    keys = {"id", "source", "kind", "statement", "measured", "relation", "threshold", "why", "rival",
            "verdict", "diagnosis"}
    assert all(keys <= set(c) for c in payload["claims"])
    assert [c["verdict"] for c in payload["claims"]] == ["holds", "holds"]
    assert sorted(os.listdir(out.parent)) == ["x.claims.json"], "no temporary file left behind"
    loaded = claims.load_all(tmp_path)
    assert [c["notebook"] for c in loaded] == [PAGE, PAGE]


def test_save_is_optional(monkeypatch):
    monkeypatch.delenv(claims.CLAIMS_ENV, raising=False)
    led = Ledger(PAGE)
    led.identity("phuong2021.a.b", "Thm 1", "s", 0, 1, "w")
    assert led.save() is None, "outside the pipeline nothing is written"


@pytest.mark.parametrize("x, digits, text", [(0.0, 2, "0"), (1.23456e-9, 3, "1.23e-9"), (4.56e12, 3, "4.56e+12"),
                                             (0.98765, 2, "0.99"), (-0.00012345, 2, "-0.00012"),
                                             (123456.0, 3, "123000"), (2.0, 3, "2"), (190.0, 2, "190"), (1.5e7, 2, "1.5e+7"), (0.999951, 2, "1")])
def test_significant_formats_tiny_and_huge(x, digits, text):
    assert claims.significant(x, digits) == text


def test_text_table_rounds_to_stated_digits(capsys):
    led = Ledger(PAGE)
    led.prediction("phuong2021.thm1.cos", "Thm 1", "cos", 0.999123, ">=", 0.99, "w", rival=("x̂", 0.951234),
                   digits=3)
    led.identity("phuong2021.lem.tiny", "Lemma 1", "tiny", 3.3e-16, 1e-12, "round-off")
    led.finish()
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["id", "kind", "verdict", "measured", "test", "rival"]
    assert out[1].split() == ["phuong2021.thm1.cos", "prediction", "holds", "0.999", ">=", "0.99", "0.951"]
    assert out[2].split() == ["phuong2021.lem.tiny", "identity", "holds", "within", "<=", "1e-12", "-"], \
        "round-off of a holding identity is not locked (it differs between machines)"
