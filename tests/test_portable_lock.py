"""The locked claims tables survive another CPU: the most chaotic pages (an Adam-
trained CNN on MNIST, GD on MNIST) re-executed under another ATen CPU capability
and with fresh training runs give the stored table (nbval compares it).

``make test``'s nbval step already re-executes every page under
``ATEN_CPU_CAPABILITY=default`` (Makefile); on a host whose own capability is
not ``avx2`` (AVX-512) this test adds ``avx2``, with a run cache of its own, so
no training result is read back from an earlier execution. On an AVX2 host it is
skipped: it would repeat the host's own arithmetic.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
CHAOTIC = [
    "book/phuong2021/appd_mnist.ipynb",
    "book/sarussi2021/thm51_mnist_linear_regime.ipynb",
]


def native_capability() -> str:
    """The host's own ATen CPU capability (e.g. "AVX2", "AVX512"), lower case."""
    import torch

    return str(torch.backends.cpu.get_cpu_capability()).lower()


@pytest.mark.parametrize("capability", ["avx2"])
def test_chaotic_pages_give_their_locked_table_on_another_cpu(tmp_path, capability):
    if native_capability() == capability:
        # the host computes with this capability already: the run would repeat the
        # host's own arithmetic; nbval's ATEN_CPU_CAPABILITY=default run is the
        # other CPU here (an AVX-512 host runs both)
        pytest.skip(
            f"the host's own capability is {capability}: nbval's default run covers it"
        )
    pages = [p for p in CHAOTIC if (ROOT / p).exists()]
    assert pages, "the chaotic pages moved: update CHAOTIC"
    env = {
        **os.environ,
        "ATEN_CPU_CAPABILITY": capability,
        "TWOLAYER_RUN_CACHE": str(tmp_path / "runs"),
        "TWOLAYER_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "--nbval-lax",
        "--nbval-current-env",
        "--nbval-kernel-startup-timeout",
        "300",
        "-q",
        "-p",
        "no:cacheprovider",
        "-n",
        str(min(2, len(pages))),
        "--dist",
        "loadfile",
        *pages,
    ]
    run = subprocess.run(
        cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800
    )
    assert run.returncode == 0, (
        f"ATEN_CPU_CAPABILITY={capability}:\n{run.stdout[-4000:]}\n{run.stderr[-2000:]}"
    )
