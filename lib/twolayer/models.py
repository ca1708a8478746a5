"""The networks of the four papers, as torch modules (float64 by default).

* :class:`TwoLayerNet` — ``f(x) = Σ_j a_j φ(w_j·x)``, ``φ(z) = max(z, αz)``
  (α = 0: ReLU), no biases; balanced, Gaussian or scaled-PyTorch-default
  initialisation; optionally a fixed second layer (Sarussi et al.).
* :class:`ResidualNet` — Phuong & Lampert §5.2.
* :class:`ConvNet` — Phuong & Lampert App. D (six conv + two FC layers).

The initialisation scale is ``init_scale`` everywhere and means one thing: every
initial parameter is ``init_scale`` times the unit-scale draw of the same seed
(``θ(λ) = λ·θ(1)``; the λ, σ or ε of the papers). ``scale=`` is accepted as a
deprecated alias while notebooks still pass it.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .validation import positive, to_numpy

INITS = ("balanced", "gaussian", "default")


def _init_scale(init_scale: float, scale: float | None) -> float:
    """``init_scale``, or its deprecated alias ``scale`` when that is given (with an
    ``init_scale`` other than the default 1 as well: an error)."""
    if scale is None:
        return init_scale
    if init_scale != 1.0:
        raise TypeError("give init_scale or its deprecated alias scale, not both")
    return scale


@contextlib.contextmanager
def _seeded(seed: int | None):
    """Seed torch's global generator for layers built with PyTorch's default
    initialisation, and restore its state afterwards: building a network never
    changes the random numbers the caller draws next."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0 if seed is None else int(seed))
        yield


def _generator(seed: int | None) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(0 if seed is None else int(seed))
    return g


class TwoLayerNet(nn.Module):
    """Two-layer (leaky) ReLU network without biases.

    Parameters
    ----------
    d, width
        Input dimension and number of hidden neurons ``m``.
    alpha
        Leaky slope α ∈ [0, 1) of ``φ(z) = max(z, αz)``; 0 is ReLU.
    init
        The unit-scale draw (``init_scale = 1``):
        ``"balanced"`` — ``w_j ~ N(0, I/d)`` (so ``E‖w_j‖² = 1``),
        ``a_j = s_j‖w_j‖`` with random signs ``s_j`` (Phuong & Lampert §2; Min et
        al. ``v_j(0) = ±‖w_j(0)‖``);
        ``"gaussian"`` — ``W_ij ~ N(0, 1)``, ``a_j ~ N(0, c²)`` (Lyu et al. §4,
        Min et al. Fig 5);
        ``"default"`` — PyTorch's ``nn.Linear`` default, uniform
        ``±1/√fan_in`` (Phuong & Lampert §5.1).
    init_scale
        The initialisation scale λ (σ or ε in the papers): **every** initial
        parameter is λ times the unit-scale draw of the same seed,
        ``(W, a)(λ) = λ·(W, a)(1)``, whatever ``init`` is; so ``f`` starts at
        ``λ²·f(1)`` (``λ·f(1)`` with a fixed second layer, which is not scaled).
        Balanced: ``E‖w_j‖² = λ²``; Gaussian: ``W_ij ~ N(0, λ²)``,
        ``a_j ~ N(0, c²λ²)``; default: uniform ``±λ/√fan_in``.
    second_layer_scale
        ``c`` of the Gaussian init: the second layer's scale relative to the
        first (``a ~ N(0, c²λ²)``).
    fixed_signs
        If given, a vector of ±1: the second layer is fixed to it and not trained
        (Sarussi et al. ``N(x) = Σ σ(w_i·x) − Σ σ(u_i·x)``).
    signs
        Optional ±1 signs for the balanced init.
    seed
        Seed of the initialisation.
    scale
        Deprecated alias of ``init_scale`` (keyword only).
    """

    def __init__(
        self,
        d: int,
        width: int,
        alpha: float = 0.0,
        init: str = "balanced",
        init_scale: float = 1.0,
        second_layer_scale: float = 1.0,
        fixed_signs: np.ndarray | None = None,
        signs: np.ndarray | None = None,
        seed: int | None = 0,
        dtype: torch.dtype = torch.float64,
        *,
        scale: float | None = None,
    ) -> None:
        super().__init__()
        if int(d) != d or d < 1:
            raise ValueError(f"d must be a positive integer, got {d!r}")
        if int(width) != width or width < 1:
            raise ValueError(f"width must be a positive integer, got {width!r}")
        if not 0.0 <= alpha < 1.0:
            raise ValueError(f"alpha must be in [0, 1), got {alpha!r}")
        if init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {init!r}")
        init_scale = _init_scale(init_scale, scale)
        positive(init_scale, "init_scale")
        self.d, self.width, self.alpha, self.init_name = (
            int(d),
            int(width),
            float(alpha),
            init,
        )
        g = _generator(seed)
        W, a = self._initial(init, init_scale, second_layer_scale, signs, g, dtype)
        self.W = nn.Parameter(W)
        if fixed_signs is not None:
            s = torch.as_tensor(to_numpy(fixed_signs), dtype=dtype)
            if s.shape != (self.width,) or not torch.all(s.abs() == 1):
                raise ValueError(
                    f"fixed_signs must be a ±1 vector of length {self.width}"
                )
            self.register_buffer("a", s)
        else:
            self.a = nn.Parameter(a)

    @classmethod
    def fixed_second_layer(
        cls,
        d: int,
        k: int,
        alpha: float,
        init_scale: float = 1.0,
        seed: int | None = 0,
        dtype: torch.dtype = torch.float64,
        *,
        scale: float | None = None,
    ) -> "TwoLayerNet":
        """Sarussi et al.'s network: ``k`` neurons with output weight +1 (the
        w's, rows ``0..k-1``) and ``k`` with −1 (the u's, rows ``k..2k-1``);
        only the first layer is trained; ``W_ij ~ N(0, init_scale²)``. ``scale``
        is a deprecated alias of ``init_scale``."""
        signs = np.concatenate([np.ones(k), -np.ones(k)])
        return cls(
            d,
            2 * k,
            alpha=alpha,
            init="gaussian",
            init_scale=_init_scale(init_scale, scale),
            fixed_signs=signs,
            seed=seed,
            dtype=dtype,
        )

    @classmethod
    def from_weights(
        cls, W, a, alpha: float = 0.0, dtype: torch.dtype = torch.float64
    ) -> "TwoLayerNet":
        """The network with first layer ``W`` (m, d) and second layer ``a`` (m,),
        both trained (e.g. an embedding of a narrower net, Lyu et al. §5)."""
        W = np.asarray(to_numpy(W), dtype=float)
        a = np.asarray(to_numpy(a), dtype=float)
        if W.ndim != 2 or a.shape != (W.shape[0],):
            raise ValueError(
                f"W must be (m, d) and a (m,); got {W.shape} and {a.shape}"
            )
        net = cls(W.shape[1], W.shape[0], alpha=alpha, dtype=dtype)
        with torch.no_grad():
            net.W.copy_(torch.as_tensor(W, dtype=dtype))
            net.a.copy_(torch.as_tensor(a, dtype=dtype))
        return net

    def _initial(self, init, scale, c, signs, g, dtype):
        """The initial ``(W, a)``: ``scale`` (= ``init_scale``) times the unit
        draw of ``init`` (class docstring). Each product is written in the order
        the stored runs were computed with (bit-identical initialisations)."""
        m, d = self.width, self.d
        if init == "balanced":
            W = torch.randn(m, d, generator=g, dtype=dtype) * scale / math.sqrt(d)
            if signs is None:
                s = torch.where(
                    torch.rand(m, generator=g, dtype=dtype) < 0.5, 1.0, -1.0
                ).to(dtype)
            else:
                s = torch.as_tensor(to_numpy(signs), dtype=dtype)
                if s.shape != (m,) or not torch.all(s.abs() == 1):
                    raise ValueError(f"signs must be a ±1 vector of length {m}")
            return W, s * W.norm(dim=1)
        if init == "gaussian":
            W = torch.randn(m, d, generator=g, dtype=dtype) * scale
            return W, torch.randn(m, generator=g, dtype=dtype) * scale * c
        W = (torch.rand(m, d, generator=g, dtype=dtype) * 2 - 1) / math.sqrt(d) * scale
        a = (torch.rand(m, generator=g, dtype=dtype) * 2 - 1) / math.sqrt(m) * scale
        return W, a

    @property
    def trains_second_layer(self) -> bool:
        return isinstance(self.a, nn.Parameter)

    @property
    def homogeneity(self) -> int:
        """Degree of homogeneity in the *trainable* parameters: 2 when both
        layers train, 1 under a fixed second layer (Sarussi et al.): then
        ``f_{cW} = c f_W`` and the normalised margin is ``min q_i/‖W‖``."""
        return 2 if self.trains_second_layer else 1

    def activation(self, z: torch.Tensor) -> torch.Tensor:
        """``φ(z) = max(z, αz)``."""
        return F.leaky_relu(z, self.alpha) if self.alpha > 0 else F.relu(z)

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        """Pre-activations ``W x`` for a batch: shape (n, m)."""
        return x @ self.W.T

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.activation(self.hidden(x)) @ self.a

    def weights(self) -> tuple[np.ndarray, np.ndarray]:
        """``(W, a)`` as NumPy copies."""
        return (
            self.W.detach().cpu().numpy().copy(),
            self.a.detach().cpu().numpy().copy(),
        )

    def predict(self, X) -> np.ndarray:
        """``f(x)`` for the rows of ``X`` (NumPy in, NumPy out)."""
        with torch.no_grad():
            x = torch.tensor(
                to_numpy(X), dtype=self.W.dtype
            )  # a copy: X may be read-only (Dataset)
            return self(x).cpu().numpy()


def check_alpha(alpha: float) -> float:
    """A leaky-ReLU slope ``α`` in ``[0, 1)`` (α = 0 is ReLU), as a float."""
    try:
        a = float(alpha)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"alpha must be a number in [0, 1), got {alpha!r}") from exc
    if not 0.0 <= a < 1.0:
        raise ValueError(f"alpha must be in [0, 1) (leaky-ReLU slope), got {alpha!r}")
    return a


def leaky_relu(z, alpha: float = 0.0) -> np.ndarray:
    """NumPy ``φ(z) = max(z, αz)`` (α = 0: ReLU), the activation of every paper."""
    z = np.asarray(z, dtype=float)
    return np.where(z > 0, z, alpha * z)


def two_layer_output(
    W: np.ndarray, a: np.ndarray, X: np.ndarray, alpha: float = 0.0
) -> np.ndarray:
    """NumPy ``f(x) = Σ_j a_j φ(w_j·x)`` for snapshots stored in a Trajectory."""
    return leaky_relu(np.asarray(X) @ np.asarray(W).T, alpha) @ np.asarray(a)


class ResidualNet(nn.Module):
    """Phuong & Lampert §5.2: ``f1 = W1 x``; ``f_l = f_{l-1} + W_l ρ(f_{l-1})``
    for ``l = 2..L-1``; ``f = W_L ρ(f_{L-1})``. No biases. Every weight is
    ``init_scale`` times PyTorch's default draw (uniform ``±1/√fan_in``) of the
    same seed; ``scale`` is a deprecated alias of ``init_scale``."""

    def __init__(
        self,
        d: int,
        width: int = 100,
        depth: int = 4,
        init_scale: float = 1.0,
        seed: int | None = 0,
        dtype: torch.dtype = torch.float64,
        *,
        scale: float | None = None,
    ) -> None:
        super().__init__()
        if depth < 3:
            raise ValueError(
                f"depth must be >= 3 (input, residual, output layers), got {depth}"
            )
        init_scale = _init_scale(init_scale, scale)
        positive(init_scale, "init_scale")
        dims = [(d, width)] + [(width, width)] * (depth - 2) + [(width, 1)]
        with _seeded(seed):
            self.layers = nn.ModuleList(
                nn.Linear(i, o, bias=False, dtype=dtype) for i, o in dims
            )
        with torch.no_grad():
            for layer in self.layers:
                layer.weight.mul_(init_scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = self.layers[0](x)
        for layer in self.layers[1:-1]:
            f = f + layer(F.relu(f))
        return self.layers[-1](F.relu(f)).squeeze(-1)

    def weight_matrices(self) -> list[np.ndarray]:
        """``[W_1, ..., W_L]`` as NumPy copies."""
        return [layer.weight.detach().cpu().numpy().copy() for layer in self.layers]


class ConvNet(nn.Module):
    """Phuong & Lampert App. D: six conv layers then fc(3136, 128), fc(128, 1).

    The paper's Table 1 (the conv stack) is lost in extraction; **choice**:
    3×3 convolutions, stride 1, padding 1, with channels
    ``channels = (c1, c1, c2, c2, 64, 64)`` and 2×2 max-pooling after layers 2
    and 4, so layer 6 outputs 64·7·7 = 3136 features. Biases everywhere (the
    paper mentions them). Inputs are flattened 28×28 images. The FC weights are
    multiplied by ``fc_scale`` (0.05 in the paper) before training, their
    biases with them. ``fc_bias=False`` drops the two FC biases (a run that
    separates their effect on the 7th-layer representation).
    """

    def __init__(
        self,
        channels: tuple[int, int] = (16, 32),
        fc_width: int = 128,
        fc_scale: float = 0.05,
        seed: int | None = 0,
        dtype: torch.dtype = torch.float32,
        fc_bias: bool = True,
    ) -> None:
        super().__init__()
        positive(fc_scale, "fc_scale")
        c1, c2 = channels
        chans = [1, c1, c1, c2, c2, 64, 64]
        with _seeded(seed):
            self.convs = nn.ModuleList(
                nn.Conv2d(chans[i], chans[i + 1], 3, padding=1, dtype=dtype)
                for i in range(6)
            )
            self.fc7 = nn.Linear(64 * 7 * 7, fc_width, bias=fc_bias, dtype=dtype)
            self.fc8 = nn.Linear(fc_width, 1, bias=fc_bias, dtype=dtype)
        with torch.no_grad():
            for p in (*self.fc7.parameters(), *self.fc8.parameters()):
                p.mul_(fc_scale)
        # NHWC ("channels last") convolutions: the same layers, ~20% faster on CPU
        self.convs.to(memory_format=torch.channels_last)

    def representations(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The input and the output of each of the 7 hidden layers (flattened):
        index 0 is the image, index l the representation after layer l."""
        h = x.reshape(-1, 1, 28, 28).contiguous(memory_format=torch.channels_last)
        reps = [x.reshape(len(h), -1)]
        for i, conv in enumerate(self.convs):
            h = F.relu(conv(h))
            if i in (1, 3):
                h = F.max_pool2d(h, 2)
            reps.append(h.flatten(1))
        reps.append(F.relu(self.fc7(reps[-1])))
        return reps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc8(self.representations(x)[-1]).squeeze(-1)
