"""twolayer.prose: glue hands myst-nb plain Python numbers; glue_each, glue_range."""

import myst_nb
import numpy as np
import pytest

from twolayer import prose


def test_glue_converts_numpy_scalars(monkeypatch):
    seen = {}
    monkeypatch.setattr(
        myst_nb,
        "glue",
        lambda name, value, display=True: seen.update({name: (value, display)}),
    )
    prose.glue("x", np.float64(0.25))
    prose.glue("n", np.int64(3), display=True)
    prose.glue("s", "text")
    assert seen["x"] == (0.25, False) and type(seen["x"][0]) is float
    assert seen["n"] == (3, True) and type(seen["n"][0]) is int
    assert seen["s"] == ("text", False)
    assert f"{seen['x'][0]:.3f}" == "0.250"


def test_glue_each_and_glue_range(monkeypatch):
    seen = {}
    monkeypatch.setattr(
        myst_nb, "glue", lambda name, value, display=True: seen.update({name: value})
    )
    prose.glue_each(a=np.int64(2), b=0.5)
    prose.glue_range("err", np.array([0.3, 0.1, 0.2]))
    assert seen == {"a": 2, "b": 0.5, "err_lo": 0.1, "err_hi": 0.3}
    assert type(seen["err_lo"]) is float
    with pytest.raises(ValueError, match="no values"):
        prose.glue_range("e", [])
