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
from typing import Any, Callable, Iterable, Mapping, Sequence

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


def _check_parameters(named: Iterable[tuple[str, torch.Tensor]], step: int, lr: float,
                      optimizer: str) -> None:
    """Overflowing weights can leave the loss finite (``softplus(-inf) = 0``):
    a run is also stopped when a parameter (``(name, tensor)`` pairs: the
    model's, or the copies a loop updates) is NaN or infinite."""
    with torch.no_grad():
        for name, p in named:
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


def _loss_divisor(reduction: str, n: int) -> int:
    """``c`` of ``L = Σ ℓ(q_i) / c``: ``n`` for the mean, 1 for the sum."""
    return n if reduction == "mean" else 1


def _two_layer_gd_step(net: TwoLayerNet, X: torch.Tensor, y: torch.Tensor, lr: float,
                       reduction: str, W: torch.Tensor | None = None,
                       Xt: torch.Tensor | None = None) -> float:
    """One GD step of :class:`TwoLayerNet` on the batch ``(X, y)``; returns the
    loss before the step (:func:`_gd_stepper`, for a single step: SGD's
    mini-batches)."""
    return _gd_stepper(net, X, y, lr, reduction, W, Xt)()


def _gd_stepper(net: TwoLayerNet, X: torch.Tensor, y: torch.Tensor, lr: float, reduction: str,
                W: torch.Tensor | None = None, Xt: torch.Tensor | None = None,
                groups: int = 1) -> Callable[..., float | np.ndarray | None]:
    """``step(margins_out=None)``: one GD step of :class:`TwoLayerNet` on
    ``(X, y)`` (the full set for GD, a mini-batch for SGD) with its gradient
    written out (no autograd graph), returning the loss before the step; what
    does not change between steps is set up once, here.

    With ``q_i = y_i Σ_j a_j φ(w_j·x_i)`` and ``g_i = ∂L/∂f(x_i) = −y_i σ(−q_i)/c``
    (``c = n`` for the mean, 1 for the sum): ``∂L/∂a = φ(XWᵀ)ᵀ g`` and
    ``∂L/∂W = ((g aᵀ) ⊙ φ'(XWᵀ))ᵀ X`` — the same two products autograd does,
    without its bookkeeping (``benchmarks/mnist_loops.py``); the ``1/c`` is
    folded into the step size. ``φ'(0) = α``, as torch's (leaky) ReLU
    backward. ``W`` (default ``net.W``) is the first layer read and updated in
    place: :func:`train` passes a copy of the live columns
    (:func:`_live_columns`), ``X`` holding only those columns, and writes it
    back into ``net.W`` when the parameters are read. The products run in the
    (neurons × points) layout ``W Xᵀ``, with ``Xt = Xᵀ`` stored contiguously:
    on CPU it is up to 2x faster than ``X Wᵀ`` for the book's narrow layers.
    ``groups = B > 1``: ``net`` is B networks of ``m`` neurons stacked (rows
    ``b·m … (b+1)·m − 1`` are network b, see :func:`gd_many`); each has its
    own output and loss, and the per-network losses are returned. With
    ``margins_out`` the step writes ``−q`` there and returns None, the loop
    taking the losses of a block of steps at once (:class:`_BlockLosses`).
    """
    a = net.a
    W = net.W.detach() if W is None else W
    Xt = X.T if Xt is None else Xt
    n, alpha, trains = X.shape[0], net.alpha, net.trains_second_layer
    c = _loss_divisor(reduction, n)
    size, neg_y, shape = lr / c, -y, (len(a), n)
    stacked = (groups, -1, n)  # (network, neuron, point) views of the stacked rows
    a_row, a_col = a.view(groups, 1, -1), a.view(groups, -1, 1)

    def step(margins_out: torch.Tensor | None = None) -> float | np.ndarray | None:
        with torch.no_grad():
            Zt = W @ Xt  # (h, n)
            At = F.leaky_relu(Zt, alpha) if alpha > 0 else F.relu(Zt)
            f = a @ At if groups == 1 else torch.bmm(a_row, At.view(stacked)).view(groups, n)
            out = None if margins_out is None else margins_out.view(f.shape)
            nq = torch.mul(f, neg_y, out=out)  # −q (gd_many of one net: (1, n) row)
            loss = None
            if margins_out is None:
                losses = F.softplus(nq)
                loss = float(losses.sum()) / c if groups == 1 else losses.sum(1).numpy() / c
            g = torch.sigmoid(nq).mul_(y)  # −c g
            ga = torch.outer(a, g) if groups == 1 else (a_col * g.view(groups, 1, n)).view(shape)
            Dt = (torch.ops.aten.leaky_relu_backward(ga, Zt, alpha, False) if alpha > 0
                  else torch.ops.aten.threshold_backward(ga, Zt, 0))  # −c (g aᵀ)ᵀ ⊙ φ'(W Xᵀ)
            if trains:
                if groups == 1:
                    a.addmv_(At, g, alpha=size)
                else:
                    a.add_(torch.bmm(At.view(stacked), g.view(groups, n, 1)).view(-1), alpha=size)
            W.addmm_(Dt, X, alpha=size)
        return loss
    return step


class _BlockLosses:
    """The per-step losses of a GD loop, taken a block of steps at a time: each
    step writes its ``−q`` into a row of a buffer (:func:`_gd_stepper`'s
    ``margins_out``) and :meth:`close` turns the block into losses with one
    softplus, then stops the run at the first non-finite one, naming its step."""

    def __init__(self, total: int, margins_shape: tuple[int, ...], dtype: torch.dtype, reduction: str,
                 lr: float, optimizer: str):
        self.values = np.empty((total,) + tuple(margins_shape[:-1]))
        self.buffer = torch.empty((PARAMETER_CHECK_EVERY,) + tuple(margins_shape), dtype=dtype)
        self.rows = self.buffer.unbind(0)
        self.c = _loss_divisor(reduction, margins_shape[-1])
        self.lr, self.optimizer, self.start = lr, optimizer, 0

    def row(self, k: int) -> torch.Tensor:
        """Where step ``k`` writes its ``−q`` (steps since the last close < block)."""
        return self.rows[k - self.start]

    def close(self, end: int) -> None:
        """Losses of steps ``start … end − 1``; raises at the first non-finite."""
        if end == self.start:
            return
        with torch.no_grad():
            block = (F.softplus(self.buffer[: end - self.start]).sum(-1) / self.c).numpy()
        self.values[self.start:end] = block
        finite = np.isfinite(block.reshape(len(block), -1)).all(1)
        if not finite.all():
            first = self.start + int(np.argmin(finite))
            _check_finite(float(np.sum(self.values[first])), first, self.lr, self.optimizer)
        self.start = end


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
    gen = torch.Generator().manual_seed(int(seed))
    # GD and SGD of a two-layer net take the written-out step (no autograd):
    # the same update to rounding, 2-10x faster on the book's small networks
    fast = optimizer in ("gd", "sgd") and type(model) is TwoLayerNet
    params = [p for p in model.parameters() if p.requires_grad]
    # Adam is torch's; plain (S)GD is the update p ← p − η∇p, written out: torch.optim.SGD
    # without momentum does exactly this, but its first construction imports ~2 s of torch._dynamo
    opt = torch.optim.Adam(params, lr=lr, betas=betas) if optimizer == "adam" else None
    live = _live_columns(X) if fast else None
    X_live = X if live is None else X[:, live].contiguous()
    Xt_live = X_live.T.contiguous() if fast else None
    W_live = model.W.detach()[:, live].clone() if live is not None else None
    gd_step = _gd_stepper(model, X_live, y, lr, reduction, W_live, Xt_live) if fast and optimizer == "gd" else None
    checked = [(name, W_live if name == "W" and W_live is not None else p)
               for name, p in model.named_parameters()]  # what the steps update in place

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
    block = (_BlockLosses(total, (n,), dtype, reduction, lr, optimizer)
             if gd_step is not None else None)
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
        if block is not None:
            gd_step(block.row(k))
        elif fast:
            step_loss[k] = _two_layer_gd_step(model, xb, yb, lr, reduction, W_live)
            _check_finite(step_loss[k], k, lr, optimizer)
        else:
            for p in params:
                p.grad = None
            loss = logistic_loss(yb * model(xb), reduction)
            loss.backward()
            step_loss[k] = loss.item()
            _check_finite(step_loss[k], k, lr, optimizer)
            if opt is not None:
                opt.step()
            else:
                with torch.no_grad():
                    for p in params:
                        p.add_(p.grad, alpha=-lr)
        if k + 1 in marks or (k + 1) % PARAMETER_CHECK_EVERY == 0 or k + 1 == total:
            if block is not None:
                block.close(k + 1)
            _check_parameters(checked, k + 1, lr, optimizer)
        if k + 1 in marks or k + 1 == total:
            sync()
        if k + 1 in marks:
            snapshot(k + 1)
            _check_finite(losses[-1], k + 1, lr, optimizer)
    traj.wall_time = time.perf_counter() - start
    traj.steps, traj.times, traj.loss = np.array(steps_taken), np.array(times), np.array(losses)
    traj.step_loss = step_loss if block is None else block.values
    return traj


def _stack(nets: Sequence[TwoLayerNet]) -> TwoLayerNet:
    """One network holding the neurons of ``nets`` (same shape, slope, dtype and
    trained layers) as consecutive blocks of rows."""
    first = nets[0]
    for net in nets:
        if type(net) is not TwoLayerNet:
            raise ValueError(f"gd_many trains TwoLayerNet models, got {type(net).__name__}")
        same = (net.d, net.width, net.alpha, net.W.dtype, net.trains_second_layer)
        if same != (first.d, first.width, first.alpha, first.W.dtype, first.trains_second_layer):
            raise ValueError("gd_many needs networks of one shape (d, width), slope alpha, dtype "
                             f"and trained layers; got {same} after "
                             f"{(first.d, first.width, first.alpha, first.W.dtype, first.trains_second_layer)}")
    big = copy.deepcopy(first)
    with torch.no_grad():
        big.W = nn.Parameter(torch.cat([net.W.detach() for net in nets]))
        a = torch.cat([net.a.detach() for net in nets])
        big.a = nn.Parameter(a) if first.trains_second_layer else a
    big.width = len(nets) * first.width
    return big


@remembered(moves_model=True)
def gd_many(models: Sequence[TwoLayerNet], data: Dataset, lr: float, steps: int, *,
            reduction: str = "mean", snapshot_steps: Iterable[int] | None = None,
            n_snapshots: int = 60) -> list[Trajectory]:
    """Full-batch GD of several :class:`TwoLayerNet` on the same data as one
    tensor: the networks' neurons are stacked into one first layer, each keeps
    its own output and loss (``groups`` of :func:`_gd_stepper`), so each
    run equals ``gd(model, data, lr, steps)`` to rounding while B small networks
    cost about what one does (seeds and init-scale sweeps). Every model ends at
    its final parameters, as after :func:`gd`; one Trajectory per model."""
    models = list(models)
    if not models:
        raise ValueError("gd_many needs at least one model")
    if not isinstance(data, Dataset):
        raise ValueError(f"data must be a twolayer.data.Dataset, got {type(data).__name__}")
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if steps is None or steps < 0:
        raise ValueError(f"steps must be a non-negative integer for GD, got {steps!r}")
    lr, total, B, m = positive(lr, "lr"), int(steps), len(models), models[0].width
    big = _stack(models)
    marks = (snapshot_schedule(total, n_snapshots) if snapshot_steps is None
             else np.unique(np.clip(np.asarray(list(snapshot_steps), dtype=int), 0, total)))
    marks = set(int(k) for k in marks)
    X = torch.tensor(data.X, dtype=big.W.dtype)
    y = torch.tensor(data.y, dtype=big.W.dtype)
    live = _live_columns(X)
    X_live = X if live is None else X[:, live].contiguous()
    Xt = X_live.T.contiguous()
    W = big.W.detach() if live is None else big.W.detach()[:, live].clone()

    def sync() -> None:  # the stacked rows back into each model
        with torch.no_grad():
            if live is not None:
                big.W[:, live] = W
            for b, net in enumerate(models):
                net.W.copy_(big.W[b * m:(b + 1) * m])
                net.a.copy_(big.a[b * m:(b + 1) * m])

    trajs = [Trajectory(np.empty(0, int), np.empty(0), [], np.empty(0),
                        config=dict(optimizer="gd", lr=lr, steps=total, batch_size=data.n,
                                    reduction=reduction, seed=0, n=data.n, stacked=B))
             for _ in models]
    taken, losses = [], []
    block = _BlockLosses(total, (B, data.n), big.W.dtype, reduction, lr, "gd")
    checked = [("W", W)] + ([("a", big.a)] if big.trains_second_layer else [])
    step = _gd_stepper(big, X_live, y, lr, reduction, W, Xt, groups=B)

    def snapshot(k: int) -> None:
        sync()
        with torch.no_grad():
            losses.append([float(logistic_loss(y * net(X), reduction)) for net in models])
        for traj, net in zip(trajs, models):
            traj.snapshots.append(_state(net))
        taken.append(k)

    start = time.perf_counter()
    if 0 in marks:
        snapshot(0)
    for k in range(total):
        step(block.row(k))
        if k + 1 in marks or (k + 1) % PARAMETER_CHECK_EVERY == 0 or k + 1 == total:
            block.close(k + 1)
            _check_parameters(checked, k + 1, lr, "gd")
        if k + 1 in marks:
            snapshot(k + 1)
    sync()
    wall = time.perf_counter() - start
    for b, traj in enumerate(trajs):
        traj.steps, traj.times = np.array(taken), np.array(taken) * lr
        traj.loss = np.array([row[b] for row in losses])
        traj.step_loss, traj.wall_time = block.values[:, b].copy(), wall / B
    return trajs


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


