"""The reader's view generated at staging: the verdict box, the folded cells,
the claims table of real values, the scorecards (pipeline.verdicts, render)."""

import importlib

import pytest

from twolayer.pipeline import verdicts

render = importlib.import_module("twolayer.pipeline.render")
generated = importlib.import_module("twolayer.pipeline.generated")


def claim(**kw):
    c = {
        "id": "phuong2021.fig1.median_cos",
        "source": "Fig. 1c",
        "kind": "prediction",
        "statement": "median over neurons of cos(w_j, w±)",
        "measured": 0.93217,
        "relation": ">",
        "threshold": 0.9,
        "seeds": 5,
        "spread": [0.93217, 0.95],
        "rival": {"name": "large init", "measured": 0.6104, "spread": None},
        "verdict": "holds",
        "diagnosis": "",
        "note": "",
    }
    c.update(kw)
    return c


def test_real_values_not_the_lock_notation():
    c = claim()
    assert verdicts.test_text(c) == "0.932 > 0.9"
    assert verdicts.rival_text(c) == "large init: 0.61"
    log = claim(
        statement="log10 of the worst 1 − cos",
        measured=-3.19,
        threshold=-3,
        relation="<=",
    )
    assert verdicts.test_text(log) == "10{sup}`−3.19` ≤ 10{sup}`−3`"
    assert "~1e" not in verdicts.number_cell(log)


def test_held_out_miss_is_never_a_plain_holds():
    c = claim(heldout={"blocks": 3, "holds": 1, "seeds": 15, "stale": False})
    assert verdicts.label(c) == "fails on held-out seeds"
    assert "fails on 2 of 3 held-out blocks" in verdicts.number_cell(c)
    ok = claim(heldout={"blocks": 3, "holds": 3})
    assert verdicts.label(ok) == "holds"
    assert "holds on 3 of 3 held-out blocks" in verdicts.number_cell(ok)
    assert verdicts.label(claim(heldout=None)) == "holds"  # v2 JSON: no record


def test_labels():
    assert verdicts.label(claim(kind="finding")) == "finding holds"
    assert verdicts.label(claim(verdict="does not reproduce")) == "does not reproduce"
    assert verdicts.label(claim(verdict="not resolved")) == "not resolved"
    assert (
        verdicts.label(claim(kind="assumption", verdict="fails", note="discussed"))
        == "assumption not met"
    )
    assert verdicts.label(claim(kind="assumption")) == "assumption met"


def test_not_resolved_shows_its_trend():
    c = claim(
        verdict="not resolved",
        statement="log10 gap",
        measured=-2.5,
        threshold=-3,
        relation="<=",
        trend={"log10_t": [100, 300], "values": [-2.0, -2.5]},
    )
    assert "trend: 10{sup}`−2` at t = 10{sup}`100`" in verdicts.number_cell(c)


def test_box_rows_and_folded_part():
    cs = [
        claim(),
        claim(
            id="x.y.z",
            kind="identity",
            statement="a = b",
            measured=0.0,
            relation="<=",
            threshold=1e-9,
            rival=None,
            seeds=1,
            spread=None,
        ),
    ]
    box = verdicts.box("phuong2021/fig1_two_layer", cs, lambda c: "lbl")
    assert box.startswith(":::::{card}") and box.endswith(":::::")
    assert "{bdg-success}`holds`" in box
    assert "::::{dropdown} 1 identity checked" in box
    assert "{ref}`section <lbl>`" in box
    assert "</book/reading>" in box
    assert (
        "0.932 > 0.9; large init: 0.61 · worst of 5\u00a0seeds (0.932 to 0.95)" in box
    )


def test_statement_escaped():
    assert verdicts.esc("a*b_c | $x$") == r"a\*b\_c \| \$x\$"


def nb(cells):
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def code(src, tags=None, outputs=None, **meta):
    md = dict(meta)
    if tags:
        md["tags"] = list(tags)
    return {
        "cell_type": "code",
        "source": src,
        "metadata": md,
        "outputs": outputs or [],
        "execution_count": 1,
    }


def md(src):
    return {"cell_type": "markdown", "source": src, "metadata": {}}


def text_out(s):
    return {
        "output_type": "execute_result",
        "data": {"text/plain": s},
        "metadata": {},
        "execution_count": 1,
    }


def test_for_readers_folds_and_inserts():
    page = nb(
        [
            md("# Title\n\nThe paper states ..."),
            code("n = 3", ["parameters"]),
            code("import numpy as np", ["hide-input"]),
            code("x = f(n)\nglue('x', x)"),
            code("glue('a', 1)\nglue_each(b=2)"),
            md("(sec-fig)=\n## Figure"),
            code(
                "ledger = Ledger(registered='p.claims.yml')\nledger.prediction(id='a')",
                outputs=[text_out("Claim(id='a', ...)")],
            ),
            md("## Claims"),
            code(
                "ledger.finish()",
                ["nbval-check-output"],
                outputs=[text_out("id  ~1e-1 > 0.9")],
            ),
        ]
    )
    cs = [claim(section="sec-fig"), claim(id="b", section="missing-label")]
    out = render.for_readers(page, "phuong2021/fig1_two_layer", cs)
    cells = out["cells"]
    assert cells[1]["cell_type"] == "markdown" and "verdict-box" in cells[1]["source"]
    tags = [c["metadata"].get("tags", []) for c in cells]
    assert "hide-cell" in tags[2]  # parameters
    assert tags[4] == ["hide-input"]  # computes: one click away
    assert tags[5] == ["remove-input"]  # glue only
    assert "hide-cell" in tags[7] and "remove-output" in tags[7]  # ledger, repr
    assert {"remove-output", "hide-input"} <= set(tags[9])  # the claims cell
    assert "claims-table" in cells[10]["source"]
    assert cells[8]["source"].startswith("(phuong2021-fig1-two-layer-claims)=")
    # a section label that exists is linked; an unknown one falls back to Claims
    assert "{ref}`section <sec-fig>`" in cells[1]["source"]
    assert "{ref}`section <phuong2021-fig1-two-layer-claims>`" in cells[1]["source"]


def test_exception_output_is_an_error_naming_page_and_cell():
    page = nb(
        [
            md("# T"),
            code(
                "run()",
                outputs=[
                    {
                        "output_type": "stream",
                        "name": "stdout",
                        "text": "Traceback (most recent call last):\n ValueError: x",
                    }
                ],
            ),
        ]
    )
    with pytest.raises(render.ReaderError, match=r"p/q: cell 1"):
        render.for_readers(page, "p/q", [])


def test_related_lines_link_both_pages():
    cs = {
        "lyu2021/symmetric_limit": [claim(source="Thm 4.3 (probability)")],
        "lyu2021/phase1": [claim(source="Lemma 5.2"), claim(source="Thm 4.32")],
        "synthesis/limits": [
            claim(source="Lyu Thm 4.3, Lemma 5.3", verdict="does not reproduce")
        ],
        "min2024/fig6": [claim(source="Thm 4.3")],  # another paper's Thm 4.3
    }
    a = render.related_lines("lyu2021/symmetric_limit", cs)
    b = render.related_lines("synthesis/limits", cs)
    assert len(a) == 1 and "</book/synthesis/limits>" in a[0]
    assert "(1 does not reproduce)" in a[0] and "here: 1 holds" in a[0]
    assert len(b) == 1 and "</book/lyu2021/symmetric_limit>" in b[0]
    assert "phase1" not in a[0] + b[0] and "min2024" not in a[0] + b[0]
    assert render.related_lines("min2024/fig6", cs) == []
    assert render.related_lines("lyu2021/phase1", cs) == []


def test_answer_sentence():
    cs = [
        claim(),
        claim(verdict="does not reproduce"),
        claim(heldout={"blocks": 3, "holds": 2}),
    ]
    assert verdicts.answer(cs) == (
        "1 of 3 predictions and findings hold; 1 does not reproduce and 1 fails on "
        "some held-out seeds."
    )
    assert verdicts.answer([claim()]) == "Its one prediction holds."
    assert (
        verdicts.answer([claim(), claim()])
        == "All 2 of its predictions and findings hold."
    )


def test_where_not_names_the_paper_items_that_miss():
    cs = [
        claim(),
        claim(source="App. D / Fig 3", verdict="does not reproduce"),
        claim(source="Thm 6.2", heldout={"blocks": 3, "holds": 2}),
        claim(source="Thm 6.2", heldout={"blocks": 3, "holds": 1}),
        claim(source="Fig 1c", heldout={"blocks": 3, "holds": 0}),
    ]
    assert verdicts.where_not(cs) == (
        "Does not reproduce: App. D / Fig 3. "
        "Fails on some held-out seeds: Thm 6.2 and Fig 1c."
    )
    assert verdicts.where_not([claim(), claim(kind="identity", verdict="fails")]) == ""
    many = [claim(source=f"Fig {i}", verdict="does not reproduce") for i in range(7)]
    assert verdicts.where_not(many, limit=2) == (
        "Does not reproduce: Fig 0, Fig 1 and 5 more."
    )


def test_a_variant_page_suffixes_its_section_labels():
    """Two pages never define one label: a variant's targets, its references to
    them and its claims' sections get the variant's suffix; a base page keeps them."""
    from twolayer.pipeline.render import variant_labels

    text = "(min-fig5-phases)=\n## Phases\nsee {ref}`the phases <min-fig5-phases>`"
    nb = {"cells": [{"cell_type": "markdown", "source": text}]}
    claims = [{"section": "min-fig5-phases"}, {"section": None}]
    out, own = variant_labels(nb, claims, "min2024/fig5_mnist_alignment__digits_3_8")
    src = out["cells"][0]["source"]
    assert src.startswith("(min-fig5-phases-digits-3-8)=")
    assert "<min-fig5-phases-digits-3-8>`" in src
    assert [c["section"] for c in own] == ["min-fig5-phases-digits-3-8", None]
    base = {"cells": [{"cell_type": "markdown", "source": text}]}
    same, mine = variant_labels(base, claims, "min2024/fig5_mnist_alignment")
    assert same["cells"][0]["source"] == text and mine == claims
