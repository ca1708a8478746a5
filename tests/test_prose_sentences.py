"""twolayer.prose sentence helpers: plurals, counts, numbers with their exponent
on one line, powers of ten, ranges printed once when degenerate."""

import pytest

from twolayer import prose

S = prose.NBSP


def test_plural():
    assert prose.plural(1, "seed") == "seed"
    assert prose.plural(0, "seed") == "seeds"
    assert prose.plural(3, "match") == "matches"
    assert prose.plural(2, "maximum", "maxima") == "maxima"
    assert prose.plural(1, "maximum", "maxima") == "maximum"


def test_count():
    assert prose.count(0, 20) == "none"
    assert prose.count(1, 20) == "1 of 20"
    assert prose.count(5, 5) == "all 5"
    assert prose.count(0, 20, "draw") == f"none of the 20{S}draws"
    assert prose.count(1, 20, "draw") == f"1 of 20{S}draws"
    assert prose.count(5, 5, "seed") == f"all 5{S}seeds"
    assert prose.count(1, 1, "seed") == "the one seed"
    assert prose.count(3, noun="seed") == f"3{S}seeds"
    assert prose.count(1, noun="seed") == f"1{S}seed"
    assert prose.count(0, noun="seed") == "no seeds"
    assert prose.count(2, noun="maximum", many="maxima") == f"2{S}maxima"
    with pytest.raises(ValueError, match="between 0 and n"):
        prose.count(3, 2)


def test_number_keeps_its_exponent():
    assert prose.number(0.93217) == "0.932"
    assert prose.number(1200) == "1200"
    assert prose.number(0.6665, 4) == "0.6665"
    assert prose.number(2.0) == "2"
    assert prose.number(-0.5) == "\u22120.5"
    assert prose.number(0.00123) == "0.00123"
    assert prose.number(0.000123) == f"1.23{S}×{S}10⁻⁴"
    assert prose.number(0.00012, 2) == f"1.2{S}×{S}10⁻⁴"
    assert prose.number(1e-12) == "10⁻¹²"
    assert prose.number(3e300) == f"3{S}×{S}10³⁰⁰"
    assert " " not in prose.number(1.234e-7)  # no breakable space
    assert prose.number(0.00012, 2, markup="tex") == r"1.2 \times 10^{-4}"
    assert prose.number(0.00012, 2, markup="myst") == f"1.2{S}×{S}10{{sup}}`\u22124`"
    assert prose.number(0) == "0"
    assert prose.number(float("nan")) == "n/a"


def test_power10():
    assert prose.power10(-3) == "10⁻³"
    assert prose.power10(300) == "10³⁰⁰"
    assert prose.power10(-3.19) == f"6.46{S}×{S}10⁻⁴"
    assert prose.power10(-3.19, markup="myst") == "10{sup}`\u22123.19`"
    assert prose.power10(-3.19, markup="tex") == "10^{-3.19}"
    assert prose.power10(-3, markup="tex") == "10^{-3}"
    assert prose.power10(0) == "1" and prose.power10(1) == "10"


def test_span_printed_once_when_degenerate():
    assert prose.span(0.6665, 0.6665, 4) == "0.6665"
    assert prose.span(0.66649, 0.66651, 4) == "0.6665"
    assert prose.span(0.66, 0.67) == "0.66–0.67"
    between = dict(between="between {lo} and {hi}", single="exactly {v}")
    assert prose.span(0.66, 0.67, **between) == "between 0.66 and 0.67"
    assert prose.span(1.0, 1.0, **between) == "exactly 1"
    assert prose.span([0.3, 0.1, 0.2]) == "0.1–0.3"
    with pytest.raises(ValueError, match="no values"):
        prose.span([])


def test_join():
    assert prose.join([]) == ""
    assert prose.join(["a"]) == "a"
    assert prose.join(["a", "b"]) == "a and b"
    assert prose.join(["a", "b", "c"], "or") == "a, b or c"
