"""Training: step-by-step trainers and gradient flow, one :class:`Trajectory` record.

- :mod:`.steps` — GD, SGD and Adam on the logistic loss (``train``, ``gd``,
  ``sgd``, ``adam``): GD with step ``η`` is the Euler discretisation of the flow;
  ``gd_many`` trains several small networks as one tensor.
- :mod:`.integrator` — :func:`gradient_flow`, an adaptive integrator of the flow
  itself that reaches ``t = 1e300`` (``t_max``) or any horizon given as
  ``log10_t_max`` (e.g. ``1e6``: ``t = 10^(10^6)``).
- :mod:`.logtime` — the late phase of the latter in the log-time clock
  ``λ = −log L`` (``log10_to_log1p``/``log1p_to_log10`` convert horizons;
  ``horizon_grid`` and ``trend`` give a limit claim's ``trend=``).
- :mod:`.trajectory` — the :class:`Trajectory` record, :class:`DivergenceError`,
  :func:`trajectory_distance`.
"""

from .integrator import gradient_flow, log_time_grid
from .logtime import horizon_grid, log1p_to_log10, log10_to_log1p, trend
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
    "horizon_grid",
    "log_time_grid",
    "log1p_to_log10",
    "log10_to_log1p",
    "logistic_loss",
    "sgd",
    "snapshot_schedule",
    "train",
    "trend",
    "trajectory_distance",
]
