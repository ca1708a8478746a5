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


def snapshot_schedule(
    total: int, count: int = 60, log_fraction: float = 0.5
) -> np.ndarray:
    """Snapshot steps in ``[0, total]``: part log-spaced (early dynamics), part
    evenly spaced (late dynamics), always including 0 and ``total``."""
    count = max(2, int(count))
    n_log = int(count * log_fraction)
    log_part = (
        np.unique(np.round(np.logspace(0, np.log10(max(total, 1)), n_log)).astype(int))
        if n_log
        else []
    )
    lin_part = np.round(np.linspace(0, total, count - n_log)).astype(int)
    return np.unique(np.concatenate([[0, total], log_part, lin_part]).clip(0, total))


def model_state(model: nn.Module) -> dict[str, np.ndarray]:
    """A snapshot of ``model``'s parameters and buffers as NumPy copies (what a
    :class:`Trajectory` stores; :func:`load_state` puts it back)."""
    return {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}


PARAMETER_CHECK_EVERY = 16  # steps between checks that every parameter is finite


def _check_parameters(
    named: Iterable[tuple[str, torch.Tensor]], step: int, lr: float, optimizer: str
) -> None:
    """Overflowing weights can leave the loss finite (``softplus(-inf) = 0``):
    a run is also stopped when a parameter (``(name, tensor)`` pairs: the
    model's, or the copies a loop updates) is NaN or infinite."""
    with torch.no_grad():
        for name, p in named:
            if not bool(torch.isfinite(p).all()):
                raise DivergenceError(
                    f"{optimizer}: parameter {name!r} became non-finite by step {step} "
                    f"with step size lr={lr:g}; lower the step size"
                )


def _check_finite(loss: float, step: int, lr: float, optimizer: str) -> None:
    if not np.isfinite(loss):
        raise DivergenceError(
            f"{optimizer}: loss became {loss} at step {step} with step size lr={lr:g}; "
            "lower the step size"
        )


def live_columns(X: torch.Tensor) -> torch.Tensor | None:
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


def _two_layer_gd_step(
    net: TwoLayerNet,
    X: torch.Tensor,
    y: torch.Tensor,
    lr: float,
    reduction: str,
    W: torch.Tensor | None = None,
    Xt: torch.Tensor | None = None,
) -> float:
    """One GD step of :class:`TwoLayerNet` on the batch ``(X, y)``; returns the
    loss before the step (:func:`_gd_stepper`, for a single step: SGD's
    mini-batches)."""
    return _gd_stepper(net, X, y, lr, reduction, W, Xt)()


def _gd_stepper(
    net: TwoLayerNet,
    X: torch.Tensor,
    y: torch.Tensor,
    lr: float,
    reduction: str,
    W: torch.Tensor | None = None,
    Xt: torch.Tensor | None = None,
    groups: int = 1,
) -> Callable[..., float | np.ndarray | None]:
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
    (:func:`live_columns`), ``X`` holding only those columns, and writes it
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
            f = (
                a @ At
                if groups == 1
                else torch.bmm(a_row, At.view(stacked)).view(groups, n)
            )
            out = None if margins_out is None else margins_out.view(f.shape)
            nq = torch.mul(f, neg_y, out=out)  # −q (gd_many of one net: (1, n) row)
            loss = None
            if margins_out is None:
                losses = F.softplus(nq)
                loss = (
                    float(losses.sum()) / c
                    if groups == 1
                    else losses.sum(1).numpy() / c
                )
            g = torch.sigmoid(nq).mul_(y)  # −c g
            ga = (
                torch.outer(a, g)
                if groups == 1
                else (a_col * g.view(groups, 1, n)).view(shape)
            )
            Dt = (
                torch.ops.aten.leaky_relu_backward(ga, Zt, alpha, False)
                if alpha > 0
                else torch.ops.aten.threshold_backward(ga, Zt, 0)
            )  # −c (g aᵀ)ᵀ ⊙ φ'(W Xᵀ)
            if trains:
                if groups == 1:
                    a.addmv_(At, g, alpha=size)
                else:
                    a.add_(
                        torch.bmm(At.view(stacked), g.view(groups, n, 1)).view(-1),
                        alpha=size,
                    )
            W.addmm_(Dt, X, alpha=size)
        return loss

    return step


class _BlockLosses:
    """The per-step losses of a GD loop, taken a block of steps at a time: each
    step writes its ``−q`` into a row of a buffer (:func:`_gd_stepper`'s
    ``margins_out``) and :meth:`close` turns the block into losses with one
    softplus, then stops the run at the first non-finite one, naming its step."""

    def __init__(
        self,
        total: int,
        margins_shape: tuple[int, ...],
        dtype: torch.dtype,
        reduction: str,
        lr: float,
        optimizer: str,
    ):
        self.values = np.empty((total,) + tuple(margins_shape[:-1]))
        self.buffer = torch.empty(
            (PARAMETER_CHECK_EVERY,) + tuple(margins_shape), dtype=dtype
        )
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
            block = (
                F.softplus(self.buffer[: end - self.start]).sum(-1) / self.c
            ).numpy()
        self.values[self.start : end] = block
        finite = np.isfinite(block.reshape(len(block), -1)).all(1)
        if not finite.all():
            first = self.start + int(np.argmin(finite))
            _check_finite(
                float(np.sum(self.values[first])), first, self.lr, self.optimizer
            )
        self.start = end


def _run(
    total: int,
    marks: set[int],
    step: Callable[[int], None],
    checkpoint: Callable[[int, bool], None],
    snapshot: Callable[[int], None],
    progress: bool = False,
    desc: str = "gd",
) -> float:
    """The loop every trainer shares; returns its wall time.

    ``step(k)`` takes update ``k`` (``0 … total − 1``); ``checkpoint(k, marked)``
    runs after update ``k − 1`` every :data:`PARAMETER_CHECK_EVERY` updates, at
    the end and before each snapshot (losses of the block closed, parameters
    checked finite; ``marked``: a snapshot or the end follows); ``snapshot(k)``
    records the state after ``k`` updates, at each of ``marks``.
    """
    start = time.perf_counter()
    if 0 in marks:
        snapshot(0)
    for k in tqdm(
        range(total), disable=not progress, desc=desc, unit="step", mininterval=1.0
    ):
        step(k)
        done = k + 1
        marked = done in marks or done == total
        if marked or done % PARAMETER_CHECK_EVERY == 0:
            checkpoint(done, marked)
        if done in marks:
            snapshot(done)
    return time.perf_counter() - start


def _marks(
    total: int, snapshot_steps: Iterable[int] | None, n_snapshots: int
) -> set[int]:
    """The update counts at which a run is snapshot (default
    :func:`snapshot_schedule`)."""
    marks = (
        snapshot_schedule(total, n_snapshots)
        if snapshot_steps is None
        else np.unique(np.clip(np.asarray(list(snapshot_steps), dtype=int), 0, total))
    )
    return set(int(k) for k in marks)


def _length(optimizer: str, n: int, steps, epochs, batch_size) -> tuple[int, int, int]:
    """``(batch, updates per epoch, total updates)`` of a run, validated."""
    if optimizer == "gd":
        if steps is None or steps < 0:
            raise ValueError(
                f"steps must be a non-negative integer for GD, got {steps!r}"
            )
        return n, 1, int(steps)
    if epochs is None or epochs < 0:
        raise ValueError(
            f"epochs must be a non-negative integer for {optimizer}, got {epochs!r}"
        )
    if batch_size is None or not 1 <= batch_size <= n:
        raise ValueError(
            f"batch_size must be in [1, {n}] for {optimizer}, got {batch_size!r}"
        )
    per_epoch = -(-n // int(batch_size))
    return int(batch_size), per_epoch, int(epochs) * per_epoch


class _Batches:
    """Mini-batch ``k``'s indices: each epoch a fresh permutation from ``seed``
    (sampling without replacement, as in Sarussi et al. Thm 4.1)."""

    def __init__(self, n: int, batch: int, per_epoch: int, seed: int):
        self.n, self.batch, self.per_epoch = n, batch, per_epoch
        self.gen = torch.Generator().manual_seed(int(seed))
        self.order = torch.arange(n)

    def __call__(self, k: int) -> torch.Tensor:
        j = k % self.per_epoch
        if j == 0:
            self.order = torch.randperm(self.n, generator=self.gen)
        return self.order[j * self.batch : (j + 1) * self.batch]


class _LiveTwoLayer:
    """A :class:`TwoLayerNet`'s first layer restricted to the live input columns
    (:func:`live_columns`): the steps update ``W`` (a copy of those columns, or
    the model's own), :meth:`sync` writes it back into the model."""

    def __init__(self, model: TwoLayerNet, X: torch.Tensor):
        self.model, self.live = model, live_columns(X)
        self.X = X if self.live is None else X[:, self.live].contiguous()
        self.Xt = self.X.T.contiguous()
        self.W = None if self.live is None else model.W.detach()[:, self.live].clone()

    def sync(self) -> None:
        if self.W is not None:
            with torch.no_grad():
                self.model.W[:, self.live] = self.W

    def checked(self) -> list[tuple[str, torch.Tensor]]:
        """What the steps update in place, by parameter name."""
        return [
            (name, self.W if name == "W" and self.W is not None else p)
            for name, p in self.model.named_parameters()
        ]


def _gd_path(
    live: _LiveTwoLayer, y, lr, reduction, block: _BlockLosses
) -> Callable[[int], None]:
    """Full-batch GD of a TwoLayerNet, written out; losses kept a block at a time."""
    step = _gd_stepper(live.model, live.X, y, lr, reduction, live.W, live.Xt)
    return lambda k: step(block.row(k))


def _sgd_path(
    live: _LiveTwoLayer, y, lr, reduction, batches: _Batches, step_loss: np.ndarray
) -> Callable[[int], None]:
    """Mini-batch SGD of a TwoLayerNet, each step written out."""

    def step(k: int) -> None:
        idx = batches(k)
        step_loss[k] = _two_layer_gd_step(
            live.model, live.X[idx], y[idx], lr, reduction, live.W
        )
        _check_finite(step_loss[k], k, lr, "sgd")

    return step


def _autograd_path(
    model: nn.Module,
    X,
    y,
    optimizer: str,
    lr,
    reduction,
    batches: _Batches | None,
    step_loss: np.ndarray,
    betas,
) -> Callable[[int], None]:
    """Any model through autograd: Adam is torch's; plain (S)GD is ``p ← p − η∇p``
    written out (torch.optim.SGD without momentum does exactly this, but its first
    construction imports ~2 s of torch._dynamo)."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr, betas=betas) if optimizer == "adam" else None

    def step(k: int) -> None:
        if batches is None:
            xb, yb = X, y
        else:
            idx = batches(k)
            xb, yb = X[idx], y[idx]
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

    return step


@remembered(moves_model=True)
def train(
    model: nn.Module,
    data: Dataset,
    *,
    optimizer: str = "gd",
    lr: float,
    steps: int | None = None,
    epochs: int | None = None,
    batch_size: int | None = None,
    reduction: str = "mean",
    snapshot_steps: Iterable[int] | None = None,
    n_snapshots: int = 60,
    callbacks: Mapping[str, Callable[[nn.Module], Any]] | None = None,
    seed: int = 0,
    progress: bool = False,
    betas: tuple[float, float] = (0.9, 0.999),
) -> Trajectory:
    """Train ``model`` on ``data`` with the logistic loss and record a Trajectory.

    Three step paths share one loop (:func:`_run`): full-batch GD and mini-batch
    SGD of a :class:`TwoLayerNet` take the written-out step (no autograd: the
    same update to rounding, 2-10x faster on the book's small networks,
    :func:`_gd_path`, :func:`_sgd_path`); Adam and other models go through
    autograd (:func:`_autograd_path`).

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
        raise ValueError(
            f"data must be a twolayer.data.Dataset, got {type(data).__name__}"
        )
    lr = positive(lr, "lr")
    n = data.n
    batch, per_epoch, total = _length(optimizer, n, steps, epochs, batch_size)
    marks = _marks(total, snapshot_steps, n_snapshots)
    dtype = next(model.parameters()).dtype
    X = torch.tensor(data.X, dtype=dtype)
    y = torch.tensor(data.y, dtype=dtype)
    batches = None if optimizer == "gd" else _Batches(n, batch, per_epoch, seed)
    step_loss = np.empty(total)
    block = None
    if optimizer in ("gd", "sgd") and type(model) is TwoLayerNet:
        live = _LiveTwoLayer(model, X)
        checked, sync = live.checked(), live.sync
        if optimizer == "gd":
            block = _BlockLosses(total, (n,), dtype, reduction, lr, optimizer)
            step = _gd_path(live, y, lr, reduction, block)
        else:
            step = _sgd_path(live, y, lr, reduction, batches, step_loss)
    else:
        checked, sync = list(model.named_parameters()), lambda: None
        step = _autograd_path(
            model, X, y, optimizer, lr, reduction, batches, step_loss, betas
        )

    callbacks = dict(callbacks or {})
    traj = Trajectory(
        np.empty(0, int),
        np.empty(0),
        [],
        np.empty(0),
        records={k: [] for k in callbacks},
        config=dict(
            optimizer=optimizer,
            lr=lr,
            steps=total,
            batch_size=batch,
            reduction=reduction,
            seed=seed,
            n=n,
        ),
    )
    steps_taken, times, losses = [], [], []

    def checkpoint(k: int, marked: bool) -> None:
        if block is not None:
            block.close(k)
        _check_parameters(checked, k, lr, optimizer)
        if marked:
            sync()

    def snapshot(k: int) -> None:
        with torch.no_grad():
            full = float(logistic_loss(y * model(X), reduction))
            traj.snapshots.append(model_state(model))
            for name, fn in callbacks.items():
                traj.records[name].append(fn(model))
        steps_taken.append(k)
        times.append(k * lr if optimizer != "adam" else float(k))
        losses.append(full)
        if k:
            _check_finite(full, k, lr, optimizer)

    traj.wall_time = _run(total, marks, step, checkpoint, snapshot, progress, optimizer)
    traj.steps, traj.times, traj.loss = (
        np.array(steps_taken),
        np.array(times),
        np.array(losses),
    )
    traj.step_loss = step_loss if block is None else block.values
    return traj


def _stack(nets: Sequence[TwoLayerNet]) -> TwoLayerNet:
    """One network holding the neurons of ``nets`` (same shape, slope, dtype and
    trained layers) as consecutive blocks of rows."""
    first = nets[0]
    shape = (
        first.d,
        first.width,
        first.alpha,
        first.W.dtype,
        first.trains_second_layer,
    )
    for net in nets:
        if type(net) is not TwoLayerNet:
            raise ValueError(
                f"gd_many trains TwoLayerNet models, got {type(net).__name__}"
            )
        same = (net.d, net.width, net.alpha, net.W.dtype, net.trains_second_layer)
        if same != shape:
            raise ValueError(
                "gd_many needs networks of one shape (d, width), slope alpha, dtype "
                f"and trained layers; got {same} after "
                f"{shape}"
            )
    big = copy.deepcopy(first)
    with torch.no_grad():
        big.W = nn.Parameter(torch.cat([net.W.detach() for net in nets]))
        a = torch.cat([net.a.detach() for net in nets])
        big.a = nn.Parameter(a) if first.trains_second_layer else a
    big.width = len(nets) * first.width
    return big


@remembered(moves_model=True)
def gd_many(
    models: Sequence[TwoLayerNet],
    data: Dataset,
    lr: float,
    steps: int,
    *,
    reduction: str = "mean",
    snapshot_steps: Iterable[int] | None = None,
    n_snapshots: int = 60,
) -> list[Trajectory]:
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
        raise ValueError(
            f"data must be a twolayer.data.Dataset, got {type(data).__name__}"
        )
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if steps is None or steps < 0:
        raise ValueError(f"steps must be a non-negative integer for GD, got {steps!r}")
    lr, total, B, m = positive(lr, "lr"), int(steps), len(models), models[0].width
    big = _stack(models)
    marks = _marks(total, snapshot_steps, n_snapshots)
    X = torch.tensor(data.X, dtype=big.W.dtype)
    y = torch.tensor(data.y, dtype=big.W.dtype)
    live = _LiveTwoLayer(big, X)
    W = big.W.detach() if live.W is None else live.W

    def sync() -> None:  # the stacked rows back into each model
        live.sync()
        with torch.no_grad():
            for b, net in enumerate(models):
                net.W.copy_(big.W[b * m : (b + 1) * m])
                net.a.copy_(big.a[b * m : (b + 1) * m])

    trajs = [
        Trajectory(
            np.empty(0, int),
            np.empty(0),
            [],
            np.empty(0),
            config=dict(
                optimizer="gd",
                lr=lr,
                steps=total,
                batch_size=data.n,
                reduction=reduction,
                seed=0,
                n=data.n,
                stacked=B,
            ),
        )
        for _ in models
    ]
    taken, losses = [], []
    block = _BlockLosses(total, (B, data.n), big.W.dtype, reduction, lr, "gd")
    checked = [("W", W)] + ([("a", big.a)] if big.trains_second_layer else [])
    stepper = _gd_stepper(big, live.X, y, lr, reduction, W, live.Xt, groups=B)

    def checkpoint(k: int, marked: bool) -> None:
        block.close(k)
        _check_parameters(checked, k, lr, "gd")

    def snapshot(k: int) -> None:
        sync()
        with torch.no_grad():
            losses.append(
                [float(logistic_loss(y * net(X), reduction)) for net in models]
            )
        for traj, net in zip(trajs, models):
            traj.snapshots.append(model_state(net))
        taken.append(k)

    wall = _run(total, marks, lambda k: stepper(block.row(k)), checkpoint, snapshot)
    sync()
    for b, traj in enumerate(trajs):
        traj.steps, traj.times = np.array(taken), np.array(taken) * lr
        traj.loss = np.array([row[b] for row in losses])
        traj.step_loss, traj.wall_time = block.values[:, b].copy(), wall / B
    return trajs


def gd(model: nn.Module, data: Dataset, lr: float, steps: int, **kw) -> Trajectory:
    """Full-batch gradient descent (Euler steps of gradient flow); see :func:`train`."""
    return train(model, data, optimizer="gd", lr=lr, steps=steps, **kw)


def sgd(
    model: nn.Module, data: Dataset, lr: float, epochs: int, batch_size: int, **kw
) -> Trajectory:
    """Mini-batch SGD, without replacement within an epoch; see :func:`train`."""
    return train(
        model, data, optimizer="sgd", lr=lr, epochs=epochs, batch_size=batch_size, **kw
    )


def adam(
    model: nn.Module, data: Dataset, lr: float, epochs: int, batch_size: int, **kw
) -> Trajectory:
    """Adam on mini-batches (Phuong & Lampert App. D); see :func:`train`."""
    return train(
        model, data, optimizer="adam", lr=lr, epochs=epochs, batch_size=batch_size, **kw
    )


def load_state(model: nn.Module, state: dict[str, np.ndarray]) -> nn.Module:
    """A copy of ``model`` holding the parameters of a snapshot."""
    clone = copy.deepcopy(model)
    from .trajectory import SNAPSHOT_LABELS

    clone.load_state_dict(
        {k: torch.as_tensor(v) for k, v in state.items() if k not in SNAPSHOT_LABELS}
    )
    return clone
