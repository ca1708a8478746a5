"""Tests of twolayer.sweeps."""

import pytest

from twolayer.sweeps import run_sweep


def _power(base, exponent=2):
    return base**exponent


def test_parallel_matches_serial_and_keeps_order():
    points = [dict(base=b, exponent=e) for b, e in [(3, 2), (2, 5), (7, 1), (1, 9)]]
    assert (
        run_sweep(_power, points, max_workers=2)
        == [9, 32, 7, 1]
        == run_sweep(_power, points, max_workers=1)
    )


def test_bad_input():
    with pytest.raises(ValueError, match="max_workers"):
        run_sweep(_power, [dict(base=1)], max_workers=0)
    with pytest.raises(ValueError, match="fn"):
        run_sweep(3, [dict(base=1)])
