"""Reusing a finished run: trainer results kept on disk, keyed on every input.

A run of :func:`~twolayer.flows.train` or :func:`~twolayer.flows.gradient_flow`
is a deterministic function of the model (its class, configuration and
parameters), the training data, the trainer's arguments and the code that
computes it. :func:`remembered` stores each finished run under a hash of all of
these and returns the stored :class:`Trajectory` (and, for a trainer that moves
the model, the final parameters) when the same run is asked for again — by a
second execution of the same page (``make test`` runs every notebook under
nbval, then builds the book from the same runs), by another page training the
same network on the same data, or by a page re-executed after an edit elsewhere
in the library (its runs are unchanged when ``flows``/``models``/``data`` are).

The store is the folder named by ``$TWOLAYER_RUN_CACHE`` (the pipeline sets
``_build/runs``; unset or empty: nothing is stored, every run computes). A run
with ``callbacks`` (functions, not hashable by content) or a model class from
outside the library is always computed. Entries are written to a temporary
file and renamed, so an interrupted run leaves no partial entry; an unreadable
entry is removed and recomputed. Entries live in a folder per version of the
computing code; the first entry of a new version removes the folders of the
others (they can never be read again), so the store holds one build's runs.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import shutil
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
from torch import nn

from ..codekey import canonical

RUN_CACHE_ENV = "TWOLAYER_RUN_CACHE"
_CODE = (
    "flows/__init__.py",
    "flows/integrator.py",
    "flows/logtime.py",
    "flows/memo.py",
    "flows/steps.py",
    "flows/trajectory.py",
    "models.py",
    "data.py",
    "validation.py",
)
_UNKEYED = ("progress",)  # arguments that do not change the result


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Hash of the code of the files that compute a run (as syntax trees,
    :func:`twolayer.codekey.canonical`: reformatting, comments and docstrings keep
    every entry) and of the numerical packages' versions (an edit of the code or
    an upgrade invalidates every entry)."""
    import scipy

    lib = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for rel in _CODE:
        h.update(rel.encode())
        h.update(canonical((lib / rel).read_text()))
    h.update(
        f"torch {torch.__version__} numpy {np.__version__} "
        f"scipy {scipy.__version__}".encode()
    )
    return h.hexdigest()


def _update(h: "hashlib._Hash", value: Any) -> None:
    """Feed ``value`` into ``h`` by content (arrays by dtype, shape and bytes)."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        h.update(f"array {value.dtype} {value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, (list, tuple, range)):
        h.update(f"{type(value).__name__} {len(value)}".encode())
        for v in value:
            _update(h, v)
    elif isinstance(value, dict):
        h.update(f"dict {len(value)}".encode())
        for k in sorted(value, key=str):
            h.update(repr(k).encode())
            _update(h, value[k])
    else:
        h.update(f"{type(value).__name__} {value!r}".encode())


def _model_config(model: nn.Module) -> list:
    """Every submodule's class and public attributes (e.g. ``alpha``, conv
    shapes) and which parameters are trained."""
    config = []
    for name, mod in model.named_modules():
        attrs = {
            k: v
            for k, v in vars(mod).items()
            if not k.startswith("_") and k != "training"
        }
        config.append((name, f"{type(mod).__module__}.{type(mod).__qualname__}", attrs))
    config.append([(n, p.requires_grad) for n, p in model.named_parameters()])
    return config


def _models(model) -> list[nn.Module]:
    """The trained networks: one model, or the list :func:`~twolayer.flows.gd_many`
    takes."""
    return list(model) if isinstance(model, (list, tuple)) else [model]


def run_key(fn_name: str, model, data: Any, args: tuple, kwargs: dict) -> str:
    """The hash a run is stored under (see the module docstring)."""
    h = hashlib.sha256(code_fingerprint().encode())
    h.update(fn_name.encode())
    for net in _models(model):
        _update(h, _model_config(net))
        _update(h, {k: v for k, v in net.state_dict().items()})
    _update(h, (data.X, data.y))
    _update(h, args)
    _update(h, {k: v for k, v in kwargs.items() if k not in _UNKEYED})
    return h.hexdigest()[:32]


def _storable(model, data: Any, kwargs: dict) -> bool:
    nets = _models(model)
    return (
        not kwargs.get("callbacks")
        and bool(nets)
        and hasattr(data, "X")
        and hasattr(data, "y")
        and all(
            isinstance(net, nn.Module) and type(net).__module__.startswith("twolayer.")
            for net in nets
        )
    )


def _load(path: Path):
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except FileNotFoundError:
        return None
    except Exception:  # unreadable (e.g. written by another version): recompute
        path.unlink(missing_ok=True)
        return None


def _store(path: Path, entry: tuple) -> None:
    try:
        path.parent.mkdir(parents=True)
    except FileExistsError:
        pass
    else:  # a new code version: the other versions' entries are unreachable
        for old in path.parent.parent.iterdir():
            if old.is_dir() and old != path.parent:
                shutil.rmtree(old, ignore_errors=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            pickle.dump(entry, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def remembered(moves_model: bool) -> Callable:
    """Decorate a trainer ``fn(model, data, *args, **kwargs) -> Trajectory``
    (or ``fn(models, data, ...) -> list[Trajectory]``, as ``gd_many``) so that a
    finished run is stored and returned again (module docstring).
    ``moves_model``: the trainer leaves the final parameters in the model(s)
    (GD, SGD, Adam); a stored run then loads them into the model(s) as well."""

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(model, data, *args, **kwargs):
            root = os.environ.get(RUN_CACHE_ENV, "")
            if not root or not _storable(model, data, kwargs):
                return fn(model, data, *args, **kwargs)
            key = run_key(fn.__name__, model, data, args, kwargs)
            path = Path(root) / code_fingerprint()[:16] / f"{fn.__name__}-{key}.pkl"
            entry = _load(path)
            if entry is not None:
                traj, finals = entry
                if moves_model:
                    for net, final in zip(_models(model), finals):
                        net.load_state_dict(final)
                return traj
            traj = fn(model, data, *args, **kwargs)
            finals = (
                [
                    {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}
                    for net in _models(model)
                ]
                if moves_model
                else None
            )
            _store(path, (traj, finals))
            return traj

        return wrapper

    return decorate
