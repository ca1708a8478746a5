"""Tests of the regime maps' decay test and the imbalance law of Lyu et al.
Thm 4.3's slow misses (twolayer.regimes, twolayer.synthesis), against
computations written out here."""

import numpy as np
import pandas as pd
import pytest

from twolayer import regimes, synthesis
from twolayer.models import TwoLayerNet
from twolayer.theory import lyu2021


def test_decay_ratio_per_decade_of_log10_t():
    # c / log t from 10^100 to 10^300: a factor 1/3 over log10(3) decades -> 0.1
    assert regimes.decay_ratio(3.0, 1.0, 100.0, 300.0) == pytest.approx(0.1)
    # flat: 1; one decade of log10 t: the plain ratio
    assert regimes.decay_ratio(0.2, 0.2, 100.0, 300.0) == pytest.approx(1.0)
    assert regimes.decay_ratio(0.5, 0.25, 30.0, 300.0) == pytest.approx(0.5)
    # c / sqrt(log t): 10^-1/2 per decade
    v = regimes.decay_ratio(1 / np.sqrt(100), 1 / np.sqrt(300), 100.0, 300.0)
    assert v == pytest.approx(10**-0.5)
    assert np.isnan(regimes.decay_ratio(0.0, 0.0, 100.0, 300.0))
    with pytest.raises(ValueError):
        regimes.decay_ratio(1.0, 1.0, 300.0, 100.0)


def _decay_frame(seeds, scales, stall_from=None):
    """Rows like the decay grids: gap c·scale/log t at 1e30, 1e100, 1e300 (a slow
    decay), or flat for theorem 'lyu' from scale ``stall_from`` on; the lazy
    distance flat everywhere."""
    rows = []
    for th in ("phuong", "lyu"):
        for sc in scales:
            for s in seeds:
                stall = th == "lyu" and stall_from is not None and sc >= stall_from
                g = {
                    h: (0.3 * sc if stall else 0.3 * sc * 30 / h)
                    for h in (30.0, 100.0, 300.0)
                }
                row = dict(theorem=th, init_scale=sc, width=4, seed=s, error="")
                row.update({f"gap@{h:g}": v for h, v in g.items()})
                row.update({f"lazy@{h:g}": 1.0 for h in g})
                row["ratio"] = float(regimes.decay_ratio(g[100.0], g[300.0], 100, 300))
                row["lazy_ratio"] = 1.0
                rows.append(row)
    return pd.DataFrame(rows)


def test_decay_test_reads_crossings_and_stalls():
    scales = [1e-3, 1e-2, 1e-1, 1.0]
    located = _decay_frame(range(5), scales, stall_from=1e-1)
    heldout = _decay_frame(range(10, 14), [1.0], stall_from=1e-1)
    specs = dict(phuong=(1e-3, "P"), lyu=(1e-3, "L"))
    out = regimes.decay_test(located, heldout, specs)
    c = out["crossings"].set_index(["theorem", "log10_t"]).critical
    # phuong's gap 0.3·sc·30/h <= 1e-3 up to sc = 1e-2 at h = 300 only
    assert c[("phuong", 300.0)] == pytest.approx(np.sqrt(1e-2 * 1e-1))
    assert c[("phuong", 30.0)] == pytest.approx(np.sqrt(1e-3 * 1e-2))
    # a slow decay: the crossing moves up with the horizon
    assert c[("phuong", 300.0)] > c[("phuong", 30.0)]
    assert np.isnan(out["bracket"]["phuong"])
    assert out["bracket"]["lyu"] == pytest.approx(1e-1)
    t = out["trials"]
    assert t["phuong"]["decays"].all() and not t["lyu"]["decays"].any()
    assert not t["phuong"]["lazy_decays"].any() and t["phuong"]["runs"] == 4
    q = out["quotes"]
    assert q["decay_phuong_hi"] == pytest.approx(0.1)
    assert q["decay_lyu_stalled"] == 10 and q["decay_runs_lyu"] == 20
    assert q["decay_stopped"] == 0


def test_decay_test_leaves_out_stopped_points():
    located = _decay_frame(range(3), [1e-3, 1.0])
    located.loc[0, "error"] = "DivergenceError: lower the step size"
    out = regimes.decay_test(
        located, _decay_frame([10], [1.0]), dict(phuong=(1e-3, "P"))
    )
    assert out["quotes"]["decay_stopped"] == 1
    assert out["quotes"]["decay_runs_phuong"] == 5


def test_mass_law_exponent_against_the_reduced_flow():
    # the law's two relations, Q = c P^2 (d ln Q = 2 d ln P) and margin
    # alpha P + Q = L (∝ log t), solved numerically: p = -d ln(P/Q) / d ln L
    alpha, c = 0.5, 1e-4
    P = np.geomspace(1.0, 1e4, 4001)
    Q = c * P**2
    L = alpha * P + Q
    rho = P / Q
    p = -np.gradient(np.log(rho), np.log(L))
    inner = slice(10, -10)
    law = synthesis.mass_law_exponent(rho[inner], alpha)
    assert np.abs(p[inner] - law).max() < 1e-4
    # -> 1 while one neuron dominates, 2/3 at rho = 2
    assert synthesis.mass_law_exponent(1e6) == pytest.approx(1.0, abs=1e-5)
    assert synthesis.mass_law_exponent(2.0) == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        synthesis.mass_law_exponent(2.0, alpha=0.2)


def test_mass_law_check_on_a_power_law():
    # rho = 1000 / log10 t exactly: measured exponent 1
    p, law = synthesis.mass_law_check(1000 / 200, 1000 / 300, 200.0, 300.0)
    assert p == pytest.approx(1.0)
    assert law == pytest.approx(synthesis.mass_law_exponent(1000 / np.sqrt(6e4)))


def test_imbalance_fresh_points_are_the_unequal_inits_outside_the_event():
    data, _ = synthesis.lyu_data(0)
    mu = lyu2021.mu(data.X, data.y)
    pts = regimes.imbalance_fresh_points()
    assert pts and all(p["seed"] in regimes.IMBALANCE_SEEDS for p in pts)
    chosen = {(p["width"], p["seed"]) for p in pts}
    for m in (2, 3):
        for s in regimes.IMBALANCE_SEEDS[:40]:
            W, a = TwoLayerNet(data.d, m, alpha=0.5, init="gaussian", seed=s).weights()
            b = (W @ (mu / np.linalg.norm(mu))) + a  # b̄ up to a positive factor
            both = (b > 0).any() and (b < 0).any()
            k = np.linalg.norm(b[b > 0]) / np.linalg.norm(b[b < 0]) if both else 1.0
            unequal = both and max(k, 1 / k) >= regimes.IMBALANCE_MIN
            assert ((m, s) in chosen) == unequal
