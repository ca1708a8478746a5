"""Claims format v3 (DESIGN.md "Claims"): limit claims decided on their trend
("not resolved" while still converging, "does not reproduce" only with a measured
stall), the paper's quantifier choosing the route, the v3 JSON keys on every claim."""

from __future__ import annotations

import json

import pytest

from twolayer import claims
from twolayer.claims import ClaimFailed, Ledger, Rival

PAGE = "synthesis/limits"
LIMIT = """
synthesis.lyu_thm43.gap:
  source: Thm 4.3
  statement: distance to the max-margin direction
  relation: '<='
  threshold: 0.05
  why: O(1/log t) at 1e300
  horizon: t = 1e300
  limit: true
  quantifier: every
  quantifier_source: "Thm 4.3: 'for every ... symmetric data set'"
  section: limits-thm43
"""
GAPS = [0.11, 0.12, 0.13, 0.15, 0.1717]  # worst seed 0.1717: outside 0.05
SMALL = [0.011, 0.012, 0.013, 0.015, 0.017]
RIVAL = Rival("early-phase direction", [0.5, 0.6, 0.7, 0.55, 0.65], horizon="early")


def ledger(tmp_path, text=LIMIT):
    path = tmp_path / "limits.claims.yml"
    path.write_text(text)
    return Ledger(PAGE, registered=str(path))


def gap(led, measured=GAPS, **kw):
    return led.prediction(id="lyu_thm43.gap", measured=measured, rival=RIVAL, **kw)


# -- limit claims ----------------------------------------------------------------------
def test_a_limit_claim_still_falling_is_not_resolved_and_does_not_fail(tmp_path):
    led = ledger(tmp_path)
    # 1/log t: x0.1 per decade of log10 t (1e30 -> 1e300)
    c = gap(led, trend=([30, 300], [1.717, 0.1717]))
    assert c.verdict == "not resolved" and not c.failing
    assert c.trend["ratio"] == pytest.approx(0.1)
    # 0.1717 -> 0.05 at x0.1 per decade: log10 t = 300 * 10^(log10(0.1717/0.05))
    assert c.trend["crossing_log10_t"] == pytest.approx(300 * 0.1717 / 0.05, rel=1e-9)
    d = c.as_dict()
    assert d["verdict"] == "not resolved"
    assert "x0.1 per decade of log10 t" in d["diagnosis"]
    assert "near t = 10^1030" in d["diagnosis"]  # the projected crossing
    led.finish(display=False)  # does not raise


def test_a_limit_claim_reached_holds_and_one_flat_without_stall_fails(tmp_path):
    c = gap(ledger(tmp_path), measured=SMALL, trend=([30, 300], [0.1, 0.017]))
    assert c.verdict == "holds"
    led = ledger(tmp_path)
    c = gap(led, trend=([200, 300], [0.1717, 0.1717]))
    assert c.verdict == "fails" and c.trend["ratio"] == pytest.approx(1.0)
    with pytest.raises(ClaimFailed):
        led.finish(display=False)


def test_falling_means_more_than_ten_percent_per_decade(tmp_path):
    # the limits page's draw 15 between 1e200 and 1e300: x0.84 per decade
    c = gap(ledger(tmp_path), trend=([200, 300], [0.177, 0.1717]))
    assert c.verdict == "not resolved"
    # x0.95 per decade: flat
    slow = 0.1717 / 0.95 ** claims.math.log10(300 / 200)
    c = gap(ledger(tmp_path), trend=([200, 300], [slow, 0.1717]))
    assert c.verdict == "fails"


def test_does_not_reproduce_of_a_limit_claim_needs_a_measured_stall(tmp_path):
    kw = dict(
        trend=([200, 300], [0.1717, 0.1717]),
        diagnosis="converges to another KKT direction",
        causes=["lyu_thm43.gap"],  # checked at finish only
    )
    led = ledger(tmp_path)
    with pytest.raises(ValueError, match="only with a measured stall") as e:
        gap(led, **kw)
    assert "\n" not in str(e.value) and not led.claims
    c = gap(ledger(tmp_path), stall=dict(ratio=1.0, kkt_residual=1e-4), **kw)
    assert c.verdict == "does not reproduce"
    d = c.as_dict()
    assert d["stall"] == {"ratio": 1.0, "kkt_residual": 1e-4}


@pytest.mark.parametrize(
    "trend, stall, why",
    [
        (([30, 300], [1.717, 0.1717]), dict(ratio=1.0, kkt_residual=0.0), "shrinks"),
        (([200, 300], [0.1717, 0.1717]), dict(ratio=0.5, kkt_residual=0.0), "ratio"),
        (([200, 300], [0.1717, 0.1717]), dict(ratio=1.0, kkt_residual=0.99), "KKT"),
    ],
)
def test_a_stall_contradicted_by_the_trend_or_not_at_a_kkt_point_is_refused(
    tmp_path, trend, stall, why
):
    with pytest.raises(ValueError, match=f"no stall.*{why}"):
        gap(
            ledger(tmp_path),
            trend=trend,
            stall=stall,
            diagnosis="another limit",
            causes=["x.y.z"],
        )


@pytest.mark.parametrize(
    "trend, match",
    [
        (([300], [0.1717]), ">= 2"),
        (([300, 200], [0.2, 0.1717]), "increasing"),
        (([0, 300], [0.2, 0.1717]), "> 0"),
        (([30, 300], [0.2, 0.15]), "not the decided value"),
        ((1, 2), "same number"),
        ("gap", "must be"),
    ],
)
def test_a_bad_trend_is_refused(tmp_path, trend, match):
    with pytest.raises(ValueError, match=match):
        gap(ledger(tmp_path), trend=trend)


def test_trend_is_required_for_a_limit_claim_and_refused_otherwise(tmp_path):
    with pytest.raises(ValueError, match="pass trend="):
        gap(ledger(tmp_path))
    plain = LIMIT.replace("  limit: true\n", "")
    with pytest.raises(ValueError, match="limit: true"):
        gap(ledger(tmp_path, plain), trend=([30, 300], [1.717, 0.1717]))
    with pytest.raises(ValueError, match="stall= is for a limit claim"):
        gap(ledger(tmp_path, plain), stall=dict(ratio=1, kkt_residual=0))


def test_a_greater_than_limit_claim_needs_its_target(tmp_path):
    text = LIMIT.replace("'<='", "'>='").replace("0.05", "0.99")
    margins = [0.95, 0.96, 0.97, 0.955, 0.96]
    with pytest.raises(ValueError, match="needs the value the theory says"):
        gap(ledger(tmp_path, text), measured=margins, trend=([30, 300], [0.5, 0.95]))
    rival = Rival("large init", [0.3, 0.4, 0.5, 0.35, 0.45])
    c = ledger(tmp_path, text).prediction(
        id="lyu_thm43.gap",
        measured=margins,
        rival=rival,
        trend=([30, 300], [0.5, 0.95], 1.0),
    )
    assert c.verdict == "not resolved" and c.trend["target"] == 1.0
    with pytest.raises(ValueError, match="must pass"):
        gap(
            ledger(tmp_path, text),
            measured=margins,
            trend=([30, 300], [0.5, 0.95], 0.9),
        )


def test_a_limit_that_is_its_own_threshold_is_accepted_with_a_non_strict_test(
    tmp_path,
):
    """A frequency that must reach 1 (critical frequency 1 with >=): the limit 1
    passes >= 1, the trend has a rate but no crossing at a rate; with > it is
    still refused (the limit would fail the test)."""
    text = LIMIT.replace("'<='", "'>='").replace("0.05", "1.0")
    rival = Rival("large init", [0.3, 0.4, 0.5, 0.35, 0.45])
    c = ledger(tmp_path, text).prediction(
        id="lyu_thm43.gap",
        measured=[0.95, 0.96, 0.97, 0.955, 0.96],
        rival=rival,
        trend=([30, 300], [0.5, 0.95], 1.0),
    )
    assert c.verdict == "not resolved" and c.trend["crossing_log10_t"] is None
    assert c.trend["ratio"] == pytest.approx(0.1)
    with pytest.raises(ValueError, match="must pass"):
        gap(
            ledger(tmp_path, text.replace("'>='", "'>'")),
            measured=[0.95, 0.96, 0.97, 0.955, 0.96],
            trend=([30, 300], [0.5, 0.95], 1.0),
        )


def test_a_claim_in_decades_falls_by_its_slope(tmp_path):
    text = LIMIT.replace("0.05", "-3")
    # log10 gap: -1.9 at 1e30 -> -2.9 at 1e300, one decade per decade (1/log t)
    c = gap(
        ledger(tmp_path, text),
        measured=[-3.2, -3.1, -3.0, -2.95, -2.9],
        trend=([30, 300], [-1.9, -2.9]),
    )
    assert c.verdict == "not resolved" and c.trend["target"] is None
    assert c.trend["ratio"] == pytest.approx(0.1)
    assert c.trend["crossing_log10_t"] == pytest.approx(300 * 10**0.1)


def test_an_identity_or_assumption_cannot_be_a_limit_claim(tmp_path):
    text = LIMIT.replace("synthesis.lyu_thm43.gap", "synthesis.lyu_thm43.sep")
    with pytest.raises(ValueError, match="not an assumption"):
        ledger(tmp_path, text).assumption(id="lyu_thm43.sep", measured=1.0)


# -- quantifier ------------------------------------------------------------------------
def test_a_probability_quantifier_through_prediction_is_refused(tmp_path):
    for q in ("probability", "most"):
        text = LIMIT.replace("quantifier: every", f"quantifier: {q}").replace(
            "  limit: true\n", ""
        )
        with pytest.raises(
            ValueError, match=f"quantifier is '{q}'.*ledger.probability"
        ):
            gap(ledger(tmp_path, text), measured=SMALL)
        with pytest.raises(ValueError, match="ledger.probability"):
            ledger(tmp_path, text.replace("prediction", "finding")).finding(
                id="lyu_thm43.gap", measured=SMALL, rival=RIVAL
            )


CLAUSE = """
synthesis.lyu_thm43.clause:
  source: Thm 4.3
  statement: the clause
  why: the paper's bound
  horizon: t = 1e300
  quantifier: probability
"""


def test_a_probability_quantifier_goes_through_probability(tmp_path):
    text = CLAUSE + "  quantifier_source: \"Thm 4.3: 'with probability >= 1 - 2^-m'\"\n"
    led = ledger(tmp_path, text)
    c = led.probability(
        id="lyu_thm43.clause",
        successes=[True] * 19 + [False],
        bound=0.75,
        rival=Rival("large init", [True] * 5 + [False] * 15),
    )
    assert c.quantifier == "probability" and c.verdict == "holds"
    every = text.replace("quantifier: probability", "quantifier: every")
    with pytest.raises(ValueError, match="not as a frequency"):
        ledger(tmp_path, every).probability(
            id="lyu_thm43.clause",
            successes=[True] * 20,
            bound=0.75,
            rival=Rival("large init", [False] * 20),
        )


# -- the JSON --------------------------------------------------------------------------
def test_v3_keys_are_on_every_claim(tmp_path, monkeypatch):
    out = tmp_path / "limits.claims.json"
    monkeypatch.setenv(claims.CLAIMS_ENV, str(out))
    led = ledger(
        tmp_path, LIMIT + LIMIT.replace(".gap", ".other").replace("  limit: true\n", "")
    )
    gap(led, trend=([30, 300], [1.717, 0.1717]))
    led.prediction(id="lyu_thm43.other", measured=SMALL, rival=RIVAL)
    led.identity(
        id="lyu_thm43.norm",
        source="Def",
        statement="unit norm",
        error=0.0,
        tolerance=1e-9,
        why="float",
    )
    led.finish(display=False)
    payload = json.loads(out.read_text())
    keys = {
        "trend",
        "heldout",
        "stall",
        "quantifier",
        "quantifier_source",
        "limit",
        "section",
        "changed",
        "chosen_on",
        "tested_on",
        "verdict",
        "diagnosis",
    }
    for c in payload["claims"]:
        assert keys <= set(c), c["id"]
        assert c["heldout"] is None  # filled by the pipeline when it publishes
    first, other, ident = payload["claims"]
    assert first["trend"]["log10_t"] == [30.0, 300.0] and first["limit"] is True
    assert first["section"] == "limits-thm43" and first["quantifier"] == "every"
    assert other["trend"] is None and other["limit"] is False
    assert ident["quantifier"] is None and ident["trend"] is None
    assert claims.NOT_RESOLVED in claims.ALL_VERDICTS


def test_a_probability_about_the_limit_takes_a_frequency_trend(tmp_path):
    led = ledger(tmp_path, CLAUSE + "  limit: true\n")
    c = led.probability(
        id="lyu_thm43.clause",
        successes=[True] * 12 + [False] * 8,
        bound=0.9,
        rival=Rival("large init", [False] * 20),
        trend=([30, 300], [0.2, 0.6], 1.0),
    )
    # 1 - freq: 0.8 -> 0.4 per decade of log10 t: x0.5, still converging
    assert c.verdict == "not resolved" and c.trend["ratio"] == pytest.approx(0.5)
    assert not c.failing


def test_a_missing_quantifier_is_refused_when_required(tmp_path, monkeypatch):
    plain = LIMIT.replace("  quantifier: every\n", "").replace("  limit: true\n", "")
    monkeypatch.setattr(claims, "QUANTIFIER_REQUIRED", True)
    with pytest.raises(ValueError, match="register its quantifier"):
        gap(ledger(tmp_path, plain), measured=SMALL)
    assert gap(ledger(tmp_path), measured=SMALL, trend=([30, 300], [0.1, 0.017]))
    monkeypatch.setattr(claims, "QUANTIFIER_REQUIRED", False)
    assert gap(ledger(tmp_path, plain), measured=SMALL).quantifier is None
