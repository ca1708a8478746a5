"""twolayer.prose.glue hands myst-nb plain Python numbers."""

import myst_nb
import numpy as np

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
