"""Warm kernels: each page's kernel is forked from a process that has already
imported the libraries every page imports.

A fresh ``ipykernel`` spends ~1.5 s starting and each page's first cell ~3.5 s
importing torch, matplotlib and seaborn (with scipy.stats and pandas): over the
book's 22 pages about a fifth of a clean build on two cores, spent 22 times on
the same work. So each build worker keeps one *zygote*, a child process that
imports :data:`PRELOAD` once and then, for every page, forks a kernel that runs
``ipykernel`` exactly as ``python -m ipykernel_launcher`` would, in the page's
folder and with the page's environment.

The kernel stays the worker's own child: the worker registers as a child
subreaper (Linux) and the zygote forks twice, so when the middle process exits
the kernel is re-parented to the worker, which waits for it, signals its
process group and sees it die exactly as for a kernel it started itself
(:class:`ForkedKernel`, :class:`ForkProvisioner`). The kernel watches the
worker (ipykernel's parent poller) and exits when the worker is gone; the
zygote dies with the worker (parent-death signal).

Only third-party libraries are preloaded, never the book's own modules: the
kernel forgets the ``twolayer`` modules the zygote runs on, so a page imports
them from disk as in a fresh kernel; and :data:`PRELOAD` starts no thread
(checked), so forking is safe. Off Linux, or with
``TWOLAYER_FORK_KERNELS=0``, kernels start the usual way.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

from ..claims import CLAIMS_ENV, PAGE_ENV

FORK_ENV = "TWOLAYER_FORK_KERNELS"

# What the book's pages import, directly or through ``twolayer`` (measured with
# ``python -X importtime``: torch ~1.6 s, seaborn ~1.4 s, matplotlib.pyplot
# ~0.8 s, ipykernel ~0.3 s, cvxpy ~0.2 s). Importing pyplot does not choose a
# backend: the inline backend is loaded in the kernel, where IPython exists.
PRELOAD = (
    "numpy",
    "scipy.optimize",
    "scipy.special",
    "scipy.integrate",
    "torch",
    "pandas",
    "matplotlib.pyplot",
    "matplotlib.ticker",
    "seaborn",
    "cvxpy",
    "mlxtend.data",
    "tqdm",
    "threadpoolctl",
    "IPython.display",
    "myst_nb",
    "ipykernel.kernelapp",
)

# Variables that differ from page to page: set in each kernel, not in the zygote
# (whose environment is fixed when it starts).
PER_KERNEL = frozenset({CLAIMS_ENV, PAGE_ENV, "JPY_PARENT_PID", "JPY_SESSION_NAME"})

PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
PR_SET_CHILD_SUBREAPER = 36
ZYGOTE_NAME, KERNEL_NAME = b"kernel-zygote", b"forked-kernel"  # their /proc/<pid>/comm


def prctl(option: int, value: int | bytes) -> bool:
    """Linux ``prctl(option, value)``; False where it is not available."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        return (
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(option, value, 0, 0, 0) == 0
        )
    except OSError:
        return False


def enabled() -> bool:
    """Fork kernels unless ``TWOLAYER_FORK_KERNELS=0`` or not on Linux."""
    return sys.platform.startswith("linux") and os.environ.get(FORK_ENV, "1") != "0"


# ---------------------------------------------------------------------------
# the zygote (its own process, started by :class:`Zygote`)


def serve() -> None:
    """Import :data:`PRELOAD`, say ``ready``, then fork one kernel per request
    line (JSON: ``argv``, ``env``, ``cwd``) and answer with its pid, once the
    kernel is the worker's child. Ends when the worker closes the pipe."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    prctl(PR_SET_NAME, ZYGOTE_NAME)
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    # what ipykernel does before a page can import matplotlib, done before the
    # preload does (matplotlib reads MPLBACKEND once, when imported)
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    # a Python thread would not survive the fork (native BLAS pools, started by
    # numpy when more than one thread is asked for, shut down and restart
    # around a fork themselves; torch starts its pool on first use)
    if threading.active_count() != 1:
        replies.write(b"error: a preloaded library started a thread\n")
        replies.flush()
        return
    replies.write(b"ready\n")
    replies.flush()
    while line := requests.readline():
        replies.write(f"{_fork_kernel(json.loads(line))}\n".encode())
        replies.flush()


def _fork_kernel(request: dict) -> int:
    """Fork twice: the middle process reports the kernel's pid and exits, which
    hands the kernel to the nearest subreaper, the worker."""
    read, write = os.pipe()
    middle = os.fork()
    if middle == 0:  # never returns into the zygote's loop, even if the fork fails
        kernel = -1
        try:
            os.close(read)
            me = os.getpid()  # not os.getppid() in the kernel: the middle may be gone
            kernel = os.fork()
            if kernel == 0:
                os.close(write)
                _run_kernel(request, middle=me)
        finally:
            os.write(write, str(kernel).encode())
            os._exit(0)
    os.close(write)
    pid = int(os.read(read, 32) or b"-1")
    os.close(read)
    os.waitpid(middle, 0)
    return pid


def _run_kernel(request: dict, middle: int) -> None:
    """In the forked kernel: what ``python -m ipykernel_launcher`` does, in the
    request's folder and environment; never returns."""
    code = 1
    try:
        while os.getppid() == middle:  # wait to be handed to the worker
            time.sleep(0.001)
        os.setsid()  # its own process group, as jupyter_client starts kernels
        prctl(PR_SET_NAME, KERNEL_NAME)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(2, 1)  # fd 1 was the zygote's reply pipe
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.path[0] = request["cwd"]
        for name in [
            m for m in sys.modules if m == "twolayer" or m.startswith("twolayer.")
        ]:
            del sys.modules[name]
        argv = request["argv"]
        # ipykernel reads JPY_PARENT_PID when it is imported (here: in the zygote)
        watch = f"--IPKernelApp.parent_handle={request['env']['JPY_PARENT_PID']}"
        sys.argv = [argv[0], *argv[3:], watch]
        from ipykernel import kernelapp

        kernelapp.launch_new_instance()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        import atexit

        atexit._run_exitfuncs()
        os._exit(code)


# ---------------------------------------------------------------------------
# the worker's side


class Zygote:
    """The worker's handle on its zygote process."""

    def __init__(self, env: dict[str, str]) -> None:
        if not prctl(PR_SET_CHILD_SUBREAPER, 1):
            raise OSError("cannot become a child subreaper")
        self.env = env
        self.proc = subprocess.Popen(
            [sys.executable, "-c", f"from {__name__} import serve; serve()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        ready = self.proc.stdout.readline()
        if ready != b"ready\n":
            self.close()
            raise OSError(
                "the kernel zygote did not start: "
                f"{ready.decode().strip() or 'no answer'}"
            )

    def fork(self, argv: list[str], env: dict[str, str], cwd: str) -> int:
        self.proc.stdin.write(
            json.dumps(dict(argv=argv, env=env, cwd=cwd)).encode() + b"\n"
        )
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer.strip().lstrip(b"-").isdigit() or int(answer) < 0:
            raise OSError(
                f"the kernel zygote could not fork a kernel: {answer.decode().strip()}"
            )
        return int(answer)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(5)


def zygote_env(env: dict[str, str]) -> dict[str, str]:
    """The part of a kernel's environment the zygote is started with."""
    return {k: v for k, v in env.items() if k not in PER_KERNEL}


class Zygotes:
    """A worker's zygote, and the zygote environments that could not start (with
    why: not tried again, each page would otherwise pay the preload again)."""

    def __init__(self) -> None:
        self.current: Zygote | None = None
        self.failed: dict[tuple, str] = {}

    def for_env(self, env: dict[str, str]) -> Zygote:
        """The zygote, (re)started if the environment it was started with differs
        from ``env`` (e.g. other thread counts)."""
        wanted = zygote_env(env)
        key = tuple(sorted(wanted.items()))
        if key in self.failed:
            raise OSError(self.failed[key])
        z = self.current
        if z is None or z.env != wanted or z.proc.poll() is not None:
            if z is not None and z.proc.poll() is None:
                z.close()
            self.current = None
            try:
                self.current = Zygote(wanted)
            except OSError as exc:
                self.failed[key] = str(exc)
                raise
        return self.current


ZYGOTES = Zygotes()  # this process's


class ForkedKernel:
    """The part of :class:`subprocess.Popen` jupyter_client uses, for a kernel
    forked by the zygote (the worker's child through the subreaper)."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(0.01)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


@functools.cache
def _fork_manager_class():
    """jupyter_client's kernel manager with :class:`ForkProvisioner` (defined on
    first use: the ``twolayer`` command does not import jupyter_client)."""
    from jupyter_client import AsyncKernelManager
    from jupyter_client.provisioning import LocalProvisioner

    class ForkProvisioner(LocalProvisioner):
        """:class:`LocalProvisioner` whose kernel comes from the worker's zygote."""

        async def launch_kernel(self, cmd, **kwargs):
            if cmd[1:3] != ["-m", "ipykernel_launcher"] or os.path.realpath(
                cmd[0]
            ) != os.path.realpath(sys.executable):
                return await super().launch_kernel(cmd, **kwargs)
            env = {
                **(kwargs.get("env") or os.environ),
                "JPY_PARENT_PID": str(os.getpid()),
            }
            cwd = str(kwargs.get("cwd") or os.getcwd())
            try:
                pid = ZYGOTES.for_env(env).fork(list(cmd), env, cwd)
            except OSError as exc:  # slower, not wrong: start this kernel the usual way
                print(
                    f"warning: {exc}; starting a fresh kernel",
                    file=sys.stderr,
                    flush=True,
                )
                return await super().launch_kernel(cmd, **kwargs)
            self.process = ForkedKernel(pid)
            self.pid = self.pgid = self.process.pid  # the kernel called setsid()
            self.cwd = cwd
            return self.connection_info

    class ForkKernelManager(AsyncKernelManager):
        async def _async_pre_start_kernel(self, **kw):
            if self.provisioner is None:
                self.kernel_id = self.kernel_id or kw.pop(
                    "kernel_id", str(uuid.uuid4())
                )
                self.provisioner = ForkProvisioner(
                    kernel_id=self.kernel_id, kernel_spec=self.kernel_spec, parent=self
                )
            return await super()._async_pre_start_kernel(**kw)

    return ForkKernelManager


def manager_class():
    """The kernel manager papermill should use: one whose kernels are forked
    from the zygote, or jupyter_client's own when forking is off."""
    if enabled():
        return _fork_manager_class()
    from jupyter_client import AsyncKernelManager

    return AsyncKernelManager
