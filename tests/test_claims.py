"""The claims ledger: kinds, seeds, rivals with a margin, ids, verdicts, strict JSON,
the portable locked table."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from twolayer import claims
from twolayer.claims import CannotDiscriminate, ClaimFailed, Ledger, Rival

PAGE = "phuong2021/fig1_two_layer"
H = "t = 1e300"
SEEDS = [0.9991, 0.9993, 0.9990, 0.9995, 0.9992]
EARLY = [0.95, 0.94, 0.951, 0.948, 0.947]
LARGE = Rival("large init", [True] * 50 + [False] * 50)


@pytest.fixture(autouse=True)
def _legacy_registry(monkeypatch):
    """These claims carry no quantifier (format v2 calls): the rules tested here do
    not depend on it; test_claims_v3 tests the required quantifier."""
    monkeypatch.setattr(claims, "QUANTIFIER_REQUIRED", False)


def predict(led, id="phuong2021.thm1.cos", measured=SEEDS, rival=None, **kw):
    args = dict(
        id=id,
        source="Thm 1",
        statement="cos to w+",
        measured=measured,
        relation=">=",
        threshold=0.99,
        why="limit is w+",
        horizon=H,
        rival=rival or Rival("early-phase direction x̂+", EARLY, horizon="early phase"),
    )
    return led.prediction(**{**args, **kw})


def test_prediction_over_seeds_is_decided_on_the_worst_seed():
    led = Ledger(PAGE)
    c = predict(led)
    assert (c.verdict, c.kind, c.seeds, c.measured) == (
        "holds",
        "prediction",
        5,
        0.9990,
    )
    rec = led.records()[0]
    assert rec["spread"] == [0.9990, 0.9995] and rec["horizon"] == H
    assert rec["rival"] == {
        "name": "early-phase direction x̂+",
        "measured": 0.951,
        "spread": [0.94, 0.951],
        "horizon": "early phase",
    }
    bad = predict(led, id="phuong2021.thm1.one_bad", measured=SEEDS[:4] + [0.98])
    assert bad.verdict == "fails" and bad.measured == 0.98, (
        "one bad seed fails the claim"
    )


def test_numpy_values_accepted():
    c = predict(Ledger(PAGE), measured=np.array(SEEDS))
    assert c.seeds == 5


def test_rival_that_passes_or_fails_by_too_little_is_refused():
    led = Ledger(PAGE)
    with pytest.raises(
        CannotDiscriminate, match="cannot discriminate: its rival 'r' measures 0.995"
    ):
        predict(led, rival=Rival("r", [0.995, 0.9, 0.91, 0.92, 0.93]))
    with pytest.raises(CannotDiscriminate, match="must fail by more than"):
        predict(led, rival=Rival("r", [0.99 - 1e-12, 0.9, 0.91, 0.92, 0.93]))
    with pytest.raises(
        CannotDiscriminate, match="must fail by more than"
    ):  # inside the spread
        predict(
            led,
            measured=[0.999, 0.995, 0.999, 0.999, 0.999],
            rival=Rival("r", [0.986, 0.9, 0.91, 0.92, 0.93]),
        )
    assert led.claims == [], "a claim that cannot discriminate is not recorded"


def test_a_claim_failing_on_a_seed_is_recorded_as_failing_not_refused():
    led = Ledger(PAGE)
    c = predict(
        led,
        id="phuong2021.thm1.held_out",
        measured=SEEDS[:4] + [0.95],
        rival=Rival("r", [0.96, 0.9, 0.91, 0.92, 0.93]),
    )
    assert c.verdict == "fails" and c.rival["measured"] == 0.96, (
        "a held-out seed breaking the claim shows as 'fails', with its rival"
    )
    with pytest.raises(ClaimFailed):
        led.finish(display=False)


def test_constant_rival_is_refused():
    with pytest.raises(CannotDiscriminate, match="constant"):
        predict(Ledger(PAGE), rival=Rival("best found", 0.5))
    with pytest.raises(CannotDiscriminate, match="constant"):
        predict(Ledger(PAGE), rival=Rival("best found", [0.5] * 5))
    c = predict(
        Ledger(PAGE),
        rival=Rival("the linear SVM", 0.5, deterministic="a convex program"),
    )
    assert c.rival["spread"] is None


def test_rival_at_another_horizon_is_refused():
    with pytest.raises(CannotDiscriminate, match="is measured at 't = 1e10'"):
        predict(Ledger(PAGE), rival=Rival("r", EARLY, horizon="t = 1e10"))
    assert (
        predict(Ledger(PAGE), rival=Rival("r", EARLY, horizon="initialisation")).verdict
        == "holds"
    )
    assert predict(Ledger(PAGE), rival=Rival("r", EARLY)).rival["horizon"] == H


@pytest.mark.parametrize("rival", [None, ("r", 0.1), Rival("", EARLY)])
def test_prediction_without_a_proper_rival_raises(rival):
    with pytest.raises(ValueError, match="rival"):
        Ledger(PAGE).prediction(
            id="phuong2021.thm1.cos",
            source="Thm 1",
            statement="c",
            measured=SEEDS,
            relation=">=",
            threshold=0.99,
            why="w",
            horizon=H,
            rival=rival,
        )


def test_one_seed_needs_a_reason_and_two_to_four_are_refused():
    with pytest.raises(ValueError, match="has one value: measure >= 5 seeds"):
        predict(Ledger(PAGE), measured=0.999)
    with pytest.raises(ValueError, match="has 3 seeds: at least 5"):
        predict(Ledger(PAGE), measured=[0.999] * 3)
    c = predict(
        Ledger(PAGE),
        measured=0.999,
        deterministic="a convex program on fixed data",
        rival=Rival("linear SVM", 0.9, deterministic="convex"),
    )
    assert c.seeds == 1 and c.spread is None and "one run: a convex program" in c.why


def test_horizon_is_required():
    with pytest.raises(ValueError, match="horizon must be stated"):
        predict(Ledger(PAGE), horizon="")


def test_nan_and_float_equality_refused():
    with pytest.raises(
        ValueError, match=r"measured of 'phuong2021.thm1.cos'\[2\] is nan"
    ):
        predict(Ledger(PAGE), measured=[1, 1, math.nan, 1, 1])
    with pytest.raises(ValueError, match="rival of 'phuong2021.thm1.cos'.* is nan"):
        predict(Ledger(PAGE), rival=Rival("r", [0.1, math.nan, 0.1, 0.2, 0.3]))
    with pytest.raises(ValueError, match="'==' compares integers only"):
        Ledger(PAGE).assumption(
            id="phuong2021.a.b",
            source="s",
            statement="s",
            measured=0.5,
            relation="==",
            threshold=0.5,
            why="w",
        )
    c = Ledger(PAGE).assumption(
        id="phuong2021.a.b",
        source="s",
        statement="rank",
        measured=3,
        relation="==",
        threshold=3,
        why="w",
    )
    assert c.verdict == "holds"


def test_diagnosis_must_name_measured_causes():
    led = Ledger(PAGE)
    with pytest.raises(ValueError, match="free text alone is not a diagnosis"):
        predict(
            led,
            measured=[0.5] * 5,
            rival=Rival("r", EARLY[:4] + [0.2]),
            diagnosis="tried things",
        )
    predict(led, id="phuong2021.appd.longer", rival=Rival("r", EARLY))
    dnr = predict(
        led,
        id="phuong2021.appd.sep",
        measured=[0.5, 0.6, 0.5, 0.5, 0.5],
        rival=Rival("r", [0.1, 0.2, 0.1, 0.1, 0.1]),
        diagnosis="longer training does not help",
        causes=["phuong2021.appd.longer"],
    )
    assert dnr.verdict == "does not reproduce" and not dnr.failing
    assert "causes measured: phuong2021.appd.longer" in led.records()[1]["diagnosis"]
    led.finish(display=False)
    predict(
        led,
        id="phuong2021.appd.sep2",
        measured=[0.5, 0.6, 0.5, 0.5, 0.5],
        rival=Rival("r", [0.1, 0.2, 0.1, 0.1, 0.1]),
        diagnosis="x",
        causes=["phuong2021.appd.nope"],
    )
    with pytest.raises(
        ValueError, match="names phuong2021.appd.nope, which are not other claims"
    ):
        led.finish(display=False)


def test_finding_has_no_diagnosis_and_fails_the_notebook():
    led = Ledger(PAGE)
    with pytest.raises(TypeError):
        led.finding(
            id="phuong2021.f.a",
            source="book",
            statement="s",
            measured=SEEDS,
            relation=">=",
            threshold=0.99,
            why="w",
            horizon=H,
            rival=Rival("r", EARLY),
            diagnosis="x",
        )
    f = led.finding(
        id="phuong2021.f.a",
        source="book",
        statement="s",
        measured=[0.5] * 4 + [0.6],
        relation=">=",
        threshold=0.99,
        why="w",
        horizon=H,
        rival=Rival("r", [0.1] * 4 + [0.2]),
    )
    assert f.kind == "finding" and f.failing
    with pytest.raises(ClaimFailed, match="phuong2021.f.a: measured 0.5 not >= 0.99"):
        led.finish(display=False)


def test_identity_tolerance_is_exact_only():
    led = Ledger(PAGE)
    with pytest.raises(
        ValueError, match="tolerance 0.001 is above 1e-06 of its scale 1: a bound"
    ):
        led.identity(
            id="phuong2021.a.b",
            source="s",
            statement="s",
            error=1e-4,
            tolerance=1e-3,
            why="w",
        )
    i = led.identity(
        id="phuong2021.a.b",
        source="s",
        statement="s",
        error=1e-4,
        tolerance=1e-3,
        scale=1e4,
        why="relative to |W|^2 ~ 1e4",
    )
    assert i.verdict == "holds" and i.seeds == 1
    with pytest.raises(ValueError, match="absolute value"):
        led.identity(
            id="phuong2021.a.c",
            source="s",
            statement="s",
            error=-1e-9,
            tolerance=1e-7,
            why="w",
        )


def test_assumption_not_met_with_note_does_not_fail():
    led = Ledger(PAGE)
    met = led.assumption(
        id="phuong2021.thm1.span",
        source="Thm 1",
        statement="rank",
        measured=7,
        relation="<=",
        threshold=6,
        why="span hypothesis",
        note="the page says so",
    )
    assert met.verdict == "fails" and not met.failing
    led.finish(display=False)
    led.assumption(
        id="phuong2021.thm1.other",
        source="Thm 1",
        statement="rank",
        measured=7,
        relation="<=",
        threshold=6,
        why="silent",
    )
    with pytest.raises(ClaimFailed):
        led.finish(display=False)


def test_probability_with_binomial_margin():
    led = Ledger(PAGE)
    p = led.probability(
        id="phuong2021.thm1.prob",
        source="Thm 1",
        statement="converges",
        successes=[True] * 85 + [False] * 15,
        bound=0.875,
        why="1 - 2^-3",
        horizon=H,
        rival=LARGE,
    )
    assert p.verdict == "holds" and p.seeds == 100 and p.threshold < 0.875
    rec = led.records()[0]
    assert rec["spread"] is None and "95% interval" in rec["why"], (
        "a frequency is one number: no seed spread that could cross its threshold"
    )
    assert rec["rival"]["measured"] == 0.5
    q = led.probability(
        id="phuong2021.thm1.prob2",
        source="Thm 1",
        statement="converges",
        successes=[True] * 70 + [False] * 30,
        bound=0.875,
        why="1 - 2^-3",
        horizon=H,
        rival=Rival("large init", [True] * 90 + [False] * 10),
    )
    assert q.verdict == "fails", "a failing frequency is recorded, rival or not"
    with pytest.raises(ValueError, match=">= 20 trials"):
        led.probability(
            id="phuong2021.thm1.prob3",
            source="Thm 1",
            statement="c",
            successes=[True] * 5,
            bound=0.5,
            why="w",
            horizon=H,
            rival=LARGE,
        )


def test_probability_needs_a_rival_that_fails_its_own_binomial_test():
    led = Ledger(PAGE)
    kw = dict(
        source="Thm 1",
        statement="converges",
        successes=[True] * 95 + [False] * 5,
        bound=0.875,
        why="1 - 2^-3",
        horizon=H,
    )
    with pytest.raises(ValueError, match="needs rival=Rival"):
        led.probability(id="phuong2021.thm1.a", **kw)
    with pytest.raises(ValueError, match="one boolean per trial"):
        led.probability(id="phuong2021.thm1.a", rival=Rival("large", 0.3), **kw)
    with pytest.raises(CannotDiscriminate, match="not significantly below"):
        led.probability(
            id="phuong2021.thm1.a",
            rival=Rival("large", [True] * 82 + [False] * 18),
            **kw,
        )
    with pytest.raises(CannotDiscriminate, match="is measured at"):
        led.probability(
            id="phuong2021.thm1.a", rival=Rival("large", LARGE.measured, "t = 1"), **kw
        )
    assert led.claims == []
    event = led.probability(
        id="phuong2021.thm1.event", kind="assumption", **{**kw, "horizon": "init"}
    )
    assert event.rival is None and event.verdict == "holds"
    with pytest.raises(ValueError, match="takes no rival"):
        led.probability(
            id="phuong2021.thm1.event2", kind="assumption", rival=LARGE, **kw
        )


@pytest.mark.parametrize(
    "bad",
    [
        "phuong2021.thm1",
        "Phuong2021.thm1.cos",
        "ch.a.b",
        "phuong2021.thm-1.cos",
        "phuong2021..cos",
        "phuong2021.thm1.cos.x",
        "lyu2021.thm1.cos",
    ],
)
def test_bad_ids_raise(bad):
    with pytest.raises(ValueError, match="claim id"):
        Ledger(PAGE).identity(
            id=bad, source="Thm 1", statement="s", error=0, tolerance=1e-9, why="w"
        )


def test_bad_arguments():
    with pytest.raises(ValueError, match="page must be '<chapter>/<name>'"):
        Ledger("nochapter")
    led = Ledger(PAGE)
    kw = dict(source="Thm 1", statement="s", error=0, tolerance=1e-9, why="w")
    with pytest.raises(TypeError):
        led.identity("phuong2021.a.b", "Thm 1", "s", 0, 1e-9, "w")  # keywords only
    with pytest.raises(ValueError, match="relation must be one of"):
        led.assumption(
            id="phuong2021.a.b",
            source="s",
            statement="s",
            measured=1,
            relation="=>",
            threshold=1,
            why="w",
        )
    led.identity(id="phuong2021.a.b", **kw)
    with pytest.raises(ValueError, match="'phuong2021.a.b' is used twice"):
        led.identity(id="phuong2021.a.b", **kw)
    with pytest.raises(ValueError, match="why must be stated"):
        led.identity(id="phuong2021.a.c", **{**kw, "why": ""})
    with pytest.raises(ValueError, match="is -inf"):
        led.identity(id="phuong2021.a.c", **{**kw, "error": -math.inf})
    assert [c.id for c in led.claims] == ["phuong2021.a.b"], (
        "rejected claims are not recorded"
    )
    with pytest.raises(ValueError, match="no claims recorded"):
        Ledger(PAGE).finish(display=False)


def test_page_from_environment(monkeypatch):
    monkeypatch.setenv(claims.PAGE_ENV, "lyu2021/phase1")
    assert Ledger().notebook == "lyu2021/phase1"
    monkeypatch.delenv(claims.PAGE_ENV)
    monkeypatch.chdir(os.path.dirname(__file__) + "/../book/min2024")
    assert Ledger().notebook.startswith("min2024/"), (
        "outside the pipeline the chapter is the folder"
    )


def test_strict_json_round_trip(tmp_path, monkeypatch):
    out = tmp_path / "deep" / "x.claims.json"
    monkeypatch.setenv(claims.CLAIMS_ENV, str(out))
    led = Ledger(PAGE)
    predict(led)
    led.identity(
        id="phuong2021.lem.tiny",
        source="Lemma 1",
        statement="tiny",
        error=1e-300,
        tolerance=1e-12,
        why="round-off",
    )
    led.finish(display=False)
    payload = json.loads(
        out.read_text(), parse_constant=lambda c: pytest.fail(f"non-strict {c}")
    )
    assert payload["notebook"] == PAGE
    keys = {
        "id",
        "source",
        "kind",
        "statement",
        "measured",
        "relation",
        "threshold",
        "why",
        "seeds",
        "spread",
        "horizon",
        "rival",
        "verdict",
        "diagnosis",
    }
    assert all(keys <= set(c) for c in payload["claims"])
    assert [c["verdict"] for c in payload["claims"]] == ["holds", "holds"]
    assert sorted(os.listdir(out.parent)) == ["x.claims.json"], (
        "no temporary file left behind"
    )
    assert [c["notebook"] for c in claims.load_all(tmp_path)] == [PAGE, PAGE]


@pytest.mark.parametrize(
    "x, digits, text",
    [
        (0.0, 2, "0"),
        (1.23456e-9, 3, "1.23e-9"),
        (4.56e12, 3, "4.56e+12"),
        (0.98765, 2, "0.99"),
        (-0.00012345, 2, "-0.00012"),
        (123456.0, 3, "123000"),
        (2.0, 3, "2"),
        (190.0, 2, "190"),
        (1.5e7, 2, "1.5e+7"),
        (0.999951, 2, "1"),
    ],
)
def test_significant_formats_tiny_and_huge(x, digits, text):
    assert claims.significant(x, digits) == text


@pytest.mark.parametrize(
    "values, digits, text",
    [
        ([0.512], 3, "0.512"),
        (
            [0.5121, 0.5122, 0.5123],
            2,
            "0.51",
        ),  # spread in the 4th digit: 2 digits supported
        ([0.31, 0.32, 0.315], 2, "0.3~"),  # seeds differ in the 2nd digit: one digit
        ([0.31, 0.34, 0.33], 2, "~1e-1"),  # ... and another draw could round to 0.4
        ([0.26, 0.34], 2, "~1e-1"),  # not even one digit: the order of magnitude
        ([1.6e-5, 3e-5], 2, "~1e-5"),
        ([-0.1, 0.1], 2, "±1e-1"),
        ([1e-6, 8e-6, 3e-6], 2, "~1e-5"),  # a distance stays non-negative
        ([-0.01, -0.02], 2, "-~1e-2"),
    ],
)
def test_portable_precision_follows_the_seed_spread(values, digits, text):
    assert claims.portable(values, digits) == text


def test_portable_value_is_shared_by_every_value_near_the_spread():
    """Another CPU's (or seed's) value within one spread-width of the seeds rounds
    to the same text: the locked table does not move."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        centre, spread = rng.uniform(0.1, 10), 10 ** rng.uniform(-5, 0)
        seeds = centre + spread * rng.uniform(size=5)
        shown = claims.portable(seeds, 3)
        if shown.startswith(("~", "±", "-~")):
            continue
        digits = claims.shared_digits(seeds, 3)
        w = seeds.max() - seeds.min()
        for v in rng.uniform(seeds.min() - w, seeds.max() + w, size=20):
            assert claims.significant(v, digits) == shown.rstrip("~"), (seeds, v, shown)


def test_text_table_is_portable(capsys):
    led = Ledger(PAGE)
    predict(led, measured=[0.999123, 0.99913, 0.999125, 0.99912, 0.999127], digits=3)
    led.identity(
        id="phuong2021.lem.tiny",
        source="Lemma 1",
        statement="tiny",
        error=3.3e-16,
        tolerance=1e-12,
        why="round-off",
    )
    led.identity(
        id="phuong2021.lem.drift",
        source="Lemma 1",
        statement="drift",
        error=3.3e-9,
        tolerance=1e-7,
        why="rtol 1e-10 integrator",
    )
    led.finish()
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == [
        "id",
        "kind",
        "verdict",
        "seeds",
        "measured",
        "test",
        "rival",
    ]
    assert out[1].split() == [
        "phuong2021.thm1.cos",
        "prediction",
        "holds",
        "5",
        "0.999",
        ">=",
        "0.99",
        "~1e-1",
    ]
    assert out[2].split() == [
        "phuong2021.lem.tiny",
        "identity",
        "holds",
        "1",
        "round-off",
        "<=",
        "1e-12",
        "-",
    ], "round-off of an identity differs between machines: not locked"
    assert out[3].split()[4] == "3e-9", "drift beyond round-off is visible"


def test_a_probability_that_does_not_reproduce_names_its_causes():
    led = Ledger(PAGE)
    led.probability(
        id="phuong2021.thm1.event",
        source="Lemma",
        statement="event rate",
        successes=[True] * 80 + [False] * 20,
        bound=0.75,
        why="w",
        horizon="init",
        kind="assumption",
    )
    with pytest.raises(ValueError, match="free text alone is not a diagnosis"):
        led.probability(
            id="phuong2021.thm1.prob",
            source="Thm 1",
            statement="limit reached",
            successes=[True] * 60 + [False] * 40,
            bound=0.75,
            why="w",
            horizon=H,
            rival=LARGE,
            diagnosis="other KKT directions",
        )
    p = led.probability(
        id="phuong2021.thm1.prob",
        source="Thm 1",
        statement="limit reached",
        successes=[True] * 60 + [False] * 40,
        bound=0.75,
        why="w",
        horizon=H,
        rival=LARGE,
        diagnosis="other KKT directions",
        causes=["phuong2021.thm1.event"],
    )
    assert p.verdict == "does not reproduce" and not p.failing
    with pytest.raises(ValueError, match="only a prediction"):
        led.probability(
            id="phuong2021.thm1.f",
            source="book",
            statement="s",
            kind="finding",
            successes=[True] * 30,
            bound=0.5,
            why="w",
            horizon=H,
            rival=LARGE,
            diagnosis="d",
            causes=["phuong2021.thm1.event"],
        )
    led.finish(display=False)
