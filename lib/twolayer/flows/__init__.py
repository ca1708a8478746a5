"""Training: step-by-step trainers and gradient flow, one :class:`Trajectory` record.

- :mod:`.steps` — GD, SGD and Adam on the logistic loss (``train``, ``gd``,
  ``sgd``, ``adam``): GD with step ``η`` is the Euler discretisation of the flow;
  ``gd_many`` trains several small networks as one tensor.
- :mod:`.integrator` — :func:`gradient_flow`, an adaptive integrator of the flow
  itself that reaches ``t = 1e300``.
- :mod:`.trajectory` — the :class:`Trajectory` record, :class:`DivergenceError`,
  :func:`trajectory_distance`.
"""

from .integrator import gradient_flow, log_time_grid
from .steps import (
    OPTIMIZERS,
    REDUCTIONS,
    adam,
    gd,
    gd_many,
    load_state,
    logistic_loss,
    sgd,
    snapshot_schedule,
    train,
)
from .trajectory import DivergenceError, Trajectory, trajectory_distance

__all__ = [
    "DivergenceError",
    "OPTIMIZERS",
    "REDUCTIONS",
    "Trajectory",
    "adam",
    "gd",
    "gd_many",
    "gradient_flow",
    "load_state",
    "log_time_grid",
    "logistic_loss",
    "sgd",
    "snapshot_schedule",
    "train",
    "trajectory_distance",
]
