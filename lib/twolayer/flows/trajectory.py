"""The record every trainer leaves behind (:class:`Trajectory`), the error a
diverging run raises, and the distance between two runs at matched flow times."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SNAPSHOT_LABELS = ("log10_t",)
"""Snapshot keys that label a snapshot and are not parameters of the model."""


class DivergenceError(FloatingPointError):
    """The loss became NaN or infinite: the run is stopped, not plotted."""


@dataclass
class Trajectory:
    """What a training run leaves behind; every chapter reads from it.

    Attributes
    ----------
    steps
        Number of parameter updates done at each snapshot (0 = initialisation).
    times
        Gradient-flow time of each snapshot (``steps · lr``; for Adam the step count).
    snapshots
        ``state_dict`` copies (NumPy) at the snapshot steps.
    loss
        Full-data training loss at each snapshot.
    records
        Callback measurements at each snapshot, by name.
    step_loss
        The (mini-)batch loss before each update, one per step.
    wall_time
        Seconds spent in the training loop.
    config
        The optimiser settings the run used.
    """

    steps: np.ndarray
    times: np.ndarray
    snapshots: list[dict[str, np.ndarray]]
    loss: np.ndarray
    records: dict[str, list] = field(default_factory=dict)
    step_loss: np.ndarray = field(default_factory=lambda: np.empty(0))
    wall_time: float = 0.0
    config: dict = field(default_factory=dict)

    @property
    def log10_times(self) -> np.ndarray:
        """``log10`` of each snapshot's flow time (``-inf`` at ``t = 0``); exact for
        :func:`~twolayer.flows.gradient_flow` runs beyond float64's range."""
        if "log10_t" in self.records:
            return np.asarray(self.records["log10_t"], float)
        with np.errstate(divide="ignore"):
            return np.log10(np.asarray(self.times, float))

    @property
    def final(self) -> dict[str, np.ndarray]:
        """Parameters at the last snapshot."""
        return self.snapshots[-1]

    def record(self, name: str) -> np.ndarray:
        """A callback's measurements stacked into an array (one row per snapshot)."""
        if name not in self.records:
            raise KeyError(f"no record {name!r}; recorded: {sorted(self.records)}")
        return np.asarray(self.records[name])

    def param(self, name: str) -> np.ndarray:
        """One parameter over all snapshots, stacked: shape (snapshots, ...)."""
        return np.stack([s[name] for s in self.snapshots])


def trajectory_distance(
    a: Trajectory, b: Trajectory, relative: bool = True
) -> np.ndarray:
    """``‖θ_a(t_k) − θ_b(t_k)‖`` (divided by ``‖θ_b(t_k)‖`` if ``relative``) at
    the snapshots of two runs taken at the same flow times (e.g. a GD run and
    :func:`gradient_flow` with ``snapshot_times=gd_run.times``)."""
    if len(a.snapshots) != len(b.snapshots) or not np.allclose(
        a.times, b.times, rtol=1e-9, atol=1e-12
    ):
        raise ValueError("a and b must have snapshots at the same flow times")
    out = []
    for sa, sb in zip(a.snapshots, b.snapshots):
        keys = sorted(k for k in sa if k not in SNAPSHOT_LABELS)
        da = np.concatenate([np.ravel(sa[k]) for k in keys])
        db = np.concatenate([np.ravel(sb[k]) for k in keys])
        diff = np.linalg.norm(da - db)
        out.append(diff / np.linalg.norm(db) if relative else diff)
    return np.array(out)
