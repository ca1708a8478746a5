"""Staged gradient descent: GD with a piecewise-constant step that follows
the growth of the stable step size deep into the late phase (Lyu et al.'s
chapter uses it for finite-time runs; limits come from :mod:`.integrator`)."""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from ..data import Dataset
from ..validation import positive
from .steps import train
from .trajectory import Trajectory


def _full_loss(model, data: Dataset) -> float:
    import torch

    from .steps import logistic_loss
    dtype = next(model.parameters()).dtype
    with torch.no_grad():
        X, y = torch.tensor(data.X, dtype=dtype), torch.tensor(data.y, dtype=dtype)
        return float(logistic_loss(y * model(X)))


def staged_gd(model, data: Dataset, schedule: Sequence[tuple[float, int]], n_snapshots: int = 20,
              callbacks: Mapping[str, Callable] | None = None, relative: bool = False) -> Trajectory:
    """Full-batch GD with a piecewise-constant step size: ``schedule`` is a list
    of ``(lr, steps)``; each stage is a :func:`twolayer.flows.train` GD run
    continuing from the previous one. GD with step η is the Euler scheme of
    gradient flow; late in training the logistic loss — hence the curvature —
    decays, so larger steps stay stable and reach flow times ``t = Σ η·steps``
    deep into the late phase. Returns one Trajectory with cumulative times.

    With ``relative=True`` each stage's step is ``lr / L(θ)`` at the start of
    the stage (L the mean logistic loss): piecewise-constant steps tracking the
    ``1/L`` growth of the stable step size, i.e. close to normalised GD. Gradient
    flow's path does not depend on how time is parametrised, so this follows the
    same trajectory with far fewer steps; ``times`` is still the flow time Σ η·steps.
    """
    if not schedule:
        raise ValueError("schedule must hold at least one (lr, steps) stage")
    parts, t0, k0 = [], 0.0, 0
    used = []
    for i, (lr, steps) in enumerate(schedule):
        lr = positive(lr, "lr") / (_full_loss(model, data) if relative else 1.0)
        used.append((lr, int(steps)))
        tr = train(model, data, optimizer="gd", lr=lr, steps=int(steps), n_snapshots=n_snapshots,
                   callbacks=callbacks)
        sl = slice(0 if i == 0 else 1, None)
        parts.append((tr.steps[sl] + k0, tr.times[sl] + t0, tr.snapshots[sl], tr.loss[sl],
                      {k: v[sl] for k, v in tr.records.items()}, tr))
        t0 += float(tr.times[-1])
        k0 += int(tr.steps[-1])
    out = Trajectory(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                     [s for p in parts for s in p[2]], np.concatenate([p[3] for p in parts]),
                     records={k: [v for p in parts for v in p[4][k]] for k in (callbacks or {})},
                     step_loss=np.concatenate([p[5].step_loss for p in parts]),
                     wall_time=sum(p[5].wall_time for p in parts),
                     config=dict(optimizer="gd (staged)", schedule=used, relative=relative))
    return out


