"""Step-by-step trainers: GD, SGD, Adam, all recording one :class:`Trajectory`.

Loss: the logistic loss ``ℓ(q) = log(1 + e^{-q})`` of the margins
``q_i = y_i f(x_i)`` (computed as ``softplus(-q)``, stable in float64),
averaged (``reduction="mean"``, Phuong, Sarussi, Lyu) or summed
(``reduction="sum"``, Min et al.). Minimising it is the same as binary
cross-entropy with labels ``(1 + y)/2``.

GD with step ``η`` is the Euler discretisation of gradient flow: after ``k``
steps the flow time is ``t = kη``, recorded in ``Trajectory.times``.
"""
from __future__ import annotations

import copy
import time
from typing import Any, Callable, Iterable, Mapping

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from tqdm import tqdm

from ..data import Dataset
from ..models import TwoLayerNet
from ..validation import positive
from .memo import remembered
from .trajectory import DivergenceError, Trajectory

OPTIMIZERS = ("gd", "sgd", "adam")
REDUCTIONS = ("mean", "sum")


def logistic_loss(margins: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """``Σ or mean of log(1 + e^{-q_i})``, computed stably as softplus(-q)."""
    losses = F.softplus(-margins)
    return losses.mean() if reduction == "mean" else losses.sum()


def snapshot_schedule(total: int, count: int = 60, log_fraction: float = 0.5) -> np.ndarray:
    """Snapshot steps in ``[0, total]``: part log-spaced (early dynamics), part
    evenly spaced (late dynamics), always including 0 and ``total``."""
    count = max(2, int(count))
    n_log = int(count * log_fraction)
    log_part = np.unique(np.round(np.logspace(0, np.log10(max(total, 1)), n_log)).astype(int)) if n_log else []
    lin_part = np.round(np.linspace(0, total, count - n_log)).astype(int)
    return np.unique(np.concatenate([[0, total], log_part, lin_part]).clip(0, total))


def _state(model: nn.Module) -> dict[str, np.ndarray]:
    return {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}


PARAMETER_CHECK_EVERY = 16  # steps between checks that every parameter is finite


def _check_parameters(model: nn.Module, step: int, lr: float, optimizer: str) -> None:
    """Overflowing weights can leave the loss finite (``softplus(-inf) = 0``):
    a run is also stopped when a parameter is NaN or infinite."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not bool(torch.isfinite(p).all()):
                raise DivergenceError(
                    f"{optimizer}: parameter {name!r} became non-finite by step {step} with step "
                    f"size lr={lr:g}; lower the step size")


def _check_finite(loss: float, step: int, lr: float, optimizer: str) -> None:
    if not np.isfinite(loss):
        raise DivergenceError(
            f"{optimizer}: loss became {loss} at step {step} with step size lr={lr:g}; "
            "lower the step size")


def _live_columns(X: torch.Tensor) -> torch.Tensor | None:
    """Indices of the input coordinates that are not zero on every training
    point, or None when all are live. A coordinate ``j`` with ``x_ij = 0`` for
    all ``i`` contributes nothing to ``w_k·x_i`` and receives the gradient
    ``Σ_i D_ik x_ij = 0``: GD leaves ``W[:, j]`` at its initial value, so the
    products can skip it exactly (MNIST's blank border: about a third of the
    784 pixels of a digit pair)."""
    live = torch.nonzero((X != 0).any(dim=0)).squeeze(1)  # NaN counts as live
    return None if len(live) == X.shape[1] else live


def _two_layer_gd_step(net: TwoLayerNet, X: torch.Tensor, y: torch.Tensor, lr: float,
                       reduction: str, W: torch.Tensor | None = None) -> float:
    """One GD step of :class:`TwoLayerNet` on the batch ``(X, y)`` (the full set
    for GD, a mini-batch for SGD) with its gradient written out (no autograd
    graph); returns the loss before the step.

    With ``q_i = y_i Σ_j a_j φ(w_j·x_i)`` and ``g_i = ∂L/∂f(x_i) = −y_i σ(−q_i)/c``
    (``c = n`` for the mean, 1 for the sum): ``∂L/∂a = φ(XWᵀ)ᵀ g`` and
    ``∂L/∂W = ((g aᵀ) ⊙ φ'(XWᵀ))ᵀ X`` — the same two products autograd does,
    without its bookkeeping (``benchmarks/mnist_loops.py``). ``φ'(0) = α``, as
    torch's (leaky) ReLU backward. ``W`` (default ``net.W``) is the first
    layer read and updated in place: :func:`train` passes a copy of the live
    columns (:func:`_live_columns`), ``X`` holding only those columns, and
    writes it back into ``net.W`` when the parameters are read.
    """
    with torch.no_grad():
        a = net.a
        W = net.W if W is None else W
        Z = X @ W.T
        A = net.activation(Z)
        q = y * (A @ a)
        c = X.shape[0] if reduction == "mean" else 1
        loss = float(F.softplus(-q).sum()) / c
        g = (-y * torch.sigmoid(-q)) / c
        slope = (Z > 0).to(Z.dtype)
        if net.alpha > 0:
            slope = slope.mul_(1 - net.alpha).add_(net.alpha)
        D = slope.mul_(g[:, None]).mul_(a[None, :])
        if net.trains_second_layer:
            a.sub_(lr * (A.T @ g))
        W.sub_(lr * (D.T @ X))
    return loss


@remembered(moves_model=True)
def train(model: nn.Module, data: Dataset, *, optimizer: str = "gd", lr: float,
          steps: int | None = None, epochs: int | None = None, batch_size: int | None = None,
          reduction: str = "mean", snapshot_steps: Iterable[int] | None = None,
          n_snapshots: int = 60, callbacks: Mapping[str, Callable[[nn.Module], Any]] | None = None,
          seed: int = 0, progress: bool = False, betas: tuple[float, float] = (0.9, 0.999)) -> Trajectory:
    """Train ``model`` on ``data`` with the logistic loss and record a Trajectory.

    Parameters
    ----------
    optimizer
        ``"gd"`` (full batch, ``steps`` updates), ``"sgd"`` (mini-batches of
        ``batch_size``, each epoch a fresh permutation: sampling without
        replacement, as in Sarussi et al. Thm 4.1) or ``"adam"`` (same batches).
    lr
        Step size η.
    steps, epochs
        Length of the run: ``steps`` for GD, ``epochs`` for SGD/Adam.
    reduction
        ``"mean"`` or ``"sum"`` of the per-example losses.
    snapshot_steps
        Update counts at which to snapshot parameters, loss and callbacks;
        default :func:`snapshot_schedule` with ``n_snapshots`` points.
    callbacks
        ``name -> fn(model)``: measurements taken at every snapshot.
    seed
        Seeds the mini-batch order.
    """
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if not isinstance(data, Dataset):
        raise ValueError(f"data must be a twolayer.data.Dataset, got {type(data).__name__}")
    lr = positive(lr, "lr")
    n = data.n
    if optimizer == "gd":
        if steps is None or steps < 0:
            raise ValueError(f"steps must be a non-negative integer for GD, got {steps!r}")
        batch, per_epoch, total = n, 1, int(steps)
    else:
        if epochs is None or epochs < 0:
            raise ValueError(f"epochs must be a non-negative integer for {optimizer}, got {epochs!r}")
        if batch_size is None or not 1 <= batch_size <= n:
            raise ValueError(f"batch_size must be in [1, {n}] for {optimizer}, got {batch_size!r}")
        batch = int(batch_size)
        per_epoch = -(-n // batch)
        total = int(epochs) * per_epoch
    marks = (snapshot_schedule(total, n_snapshots) if snapshot_steps is None
             else np.unique(np.clip(np.asarray(list(snapshot_steps), dtype=int), 0, total)))
    marks = set(int(s) for s in marks)

    dtype = next(model.parameters()).dtype
    X = torch.tensor(data.X, dtype=dtype)
    y = torch.tensor(data.y, dtype=dtype)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = (torch.optim.Adam(params, lr=lr, betas=betas) if optimizer == "adam"
           else torch.optim.SGD(params, lr=lr))
    gen = torch.Generator().manual_seed(int(seed))
    # GD and SGD of a two-layer net take the written-out step (no autograd):
    # the same update to rounding, 2-10x faster on the book's small networks
    fast = optimizer in ("gd", "sgd") and type(model) is TwoLayerNet
    live = _live_columns(X) if fast else None
    X_live = X if live is None else X[:, live].contiguous()
    W_live = model.W.detach()[:, live].clone() if live is not None else None

    def sync() -> None:  # the live columns' copy back into the model
        if W_live is not None:
            with torch.no_grad():
                model.W[:, live] = W_live

    callbacks = dict(callbacks or {})

    traj = Trajectory(np.empty(0, int), np.empty(0), [], np.empty(0),
                      records={k: [] for k in callbacks},
                      config=dict(optimizer=optimizer, lr=lr, steps=total, batch_size=batch,
                                  reduction=reduction, seed=seed, n=n))
    steps_taken, times, losses = [], [], []

    def snapshot(k: int) -> None:
        with torch.no_grad():
            full = float(logistic_loss(y * model(X), reduction))
            traj.snapshots.append(_state(model))
            for name, fn in callbacks.items():
                traj.records[name].append(fn(model))
        steps_taken.append(k)
        times.append(k * lr if optimizer != "adam" else float(k))
        losses.append(full)

    step_loss = np.empty(total)
    order = torch.arange(n)
    start = time.perf_counter()
    if 0 in marks:
        snapshot(0)
    for k in tqdm(range(total), disable=not progress, desc=optimizer, unit="step", mininterval=1.0):
        if optimizer == "gd":
            xb, yb = X_live if fast else X, y
        else:
            j = k % per_epoch
            if j == 0:
                order = torch.randperm(n, generator=gen)
            idx = order[j * batch:(j + 1) * batch]
            xb, yb = (X_live if fast else X)[idx], y[idx]
        if fast:
            step_loss[k] = _two_layer_gd_step(model, xb, yb, lr, reduction, W_live)
            _check_finite(step_loss[k], k, lr, optimizer)
        else:
            opt.zero_grad(set_to_none=True)
            loss = logistic_loss(yb * model(xb), reduction)
            loss.backward()
            step_loss[k] = loss.item()
            _check_finite(step_loss[k], k, lr, optimizer)
            opt.step()
        if k + 1 in marks or (k + 1) % PARAMETER_CHECK_EVERY == 0 or k + 1 == total:
            sync()
            _check_parameters(model, k + 1, lr, optimizer)
        if k + 1 in marks:
            snapshot(k + 1)
            _check_finite(losses[-1], k + 1, lr, optimizer)
    traj.wall_time = time.perf_counter() - start
    traj.steps, traj.times, traj.loss = np.array(steps_taken), np.array(times), np.array(losses)
    traj.step_loss = step_loss
    return traj


def gd(model: nn.Module, data: Dataset, lr: float, steps: int, **kw) -> Trajectory:
    """Full-batch gradient descent (Euler steps of gradient flow); see :func:`train`."""
    return train(model, data, optimizer="gd", lr=lr, steps=steps, **kw)


def sgd(model: nn.Module, data: Dataset, lr: float, epochs: int, batch_size: int, **kw) -> Trajectory:
    """Mini-batch SGD, without replacement within an epoch; see :func:`train`."""
    return train(model, data, optimizer="sgd", lr=lr, epochs=epochs, batch_size=batch_size, **kw)


def adam(model: nn.Module, data: Dataset, lr: float, epochs: int, batch_size: int, **kw) -> Trajectory:
    """Adam on mini-batches (Phuong & Lampert App. D); see :func:`train`."""
    return train(model, data, optimizer="adam", lr=lr, epochs=epochs, batch_size=batch_size, **kw)


def load_state(model: nn.Module, state: dict[str, np.ndarray]) -> nn.Module:
    """A copy of ``model`` holding the parameters of a snapshot."""
    clone = copy.deepcopy(model)
    clone.load_state_dict({k: torch.as_tensor(v) for k, v in state.items()})
    return clone


