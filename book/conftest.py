"""nbval's kernels talk over IPC sockets, not TCP ports.

``make test`` runs nbval on two pytest-xdist workers. jupyter_client finds a
kernel's five TCP ports by binding free ones and releasing them, so two kernels
started at the same moment can be handed the same port; the client of the one
that lost then waits for a kernel that never answers ("Kernel didn't respond in
60 seconds", seen once in CI on ``phuong2021/fig1_two_layer``). IPC sockets are
files; each kernel gets its own fresh folder for them (an absolute path: nbval
starts the kernel in the notebook's folder, the client stays in pytest's).
"""

from __future__ import annotations

import os
import shutil
import tempfile

import nbval.kernel
from jupyter_client.manager import KernelManager


class IPCKernelManager(KernelManager):
    """A :class:`KernelManager` whose default transport is ``ipc``."""

    def __init__(self, **kwargs):
        kwargs.setdefault("transport", "ipc")
        if "ip" not in kwargs:
            kwargs["ip"] = tempfile.mkdtemp(prefix="nbval-kernel-") + "/socket"
        super().__init__(**kwargs)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        # the hook shutdown_kernel awaits (it does not go through cleanup_resources)
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            shutil.rmtree(os.path.dirname(self.ip), ignore_errors=True)


nbval.kernel.KernelManager = IPCKernelManager
