"""Kernels forked from the worker's zygote behave as freshly started ones: the
page's folder and environment, the book's modules imported from disk, the
kernel the worker's own child in its own process group, figures shown inline."""

from __future__ import annotations

import json
import os

import nbformat
import pytest
from jupyter_client import AsyncKernelManager
from nbclient import NotebookClient

from twolayer.pipeline import kernels

pytestmark = pytest.mark.skipif(
    not kernels.enabled(), reason="kernels are forked on Linux only"
)

PROBE = """
import json, os, sys
import matplotlib.pyplot as plt
plt.plot([0, 1])
print(json.dumps(dict(
    cwd=os.getcwd(), mark=os.environ.get("PROBE_MARK"), ppid=os.getppid(),
    pgid=os.getpgid(0), pid=os.getpid(), torch="torch" in sys.modules,
    ours=sorted(m for m in sys.modules if m.startswith("twolayer")),
    comm=open("/proc/self/comm").read().strip())))
"""


def run_probe(tmp_path, manager) -> tuple[dict, list]:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PROBE)])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    os.environ["PROBE_MARK"] = "page-7"
    try:
        NotebookClient(
            nb,
            kernel_name="python3",
            kernel_manager_class=manager,
            timeout=120,
            startup_timeout=120,
            resources={"metadata": {"path": str(tmp_path)}},
        ).execute()
    finally:
        del os.environ["PROBE_MARK"]
    outputs = nb.cells[0].outputs
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    return json.loads(text.strip().splitlines()[-1]), outputs


def test_a_forked_kernel_runs_the_page_as_a_fresh_one_would(tmp_path):
    manager = kernels.manager_class()
    assert manager is not AsyncKernelManager
    seen, outputs = run_probe(tmp_path, manager)
    assert seen["cwd"] == str(tmp_path) and seen["mark"] == "page-7"
    assert seen["comm"] == kernels.KERNEL_NAME.decode(), (
        "the kernel came from the zygote"
    )
    assert seen["torch"], "the preloaded libraries are there"
    assert seen["ours"] == [], (
        "the book's own modules are imported from disk by the page"
    )
    assert seen["ppid"] == os.getpid(), "the kernel is this process's child (subreaper)"
    assert seen["pgid"] == seen["pid"], "in its own process group"
    assert any("image/png" in o.get("data", {}) for o in outputs), (
        "figures are shown inline"
    )
    # the zygote stays for the next page; a second kernel comes from the same one
    zygote = kernels.ZYGOTES.current
    again, _ = run_probe(tmp_path, manager)
    assert kernels.ZYGOTES.current is zygote and again["pid"] != seen["pid"]


def test_fresh_kernels_when_forking_is_off(tmp_path, monkeypatch):
    monkeypatch.setenv(kernels.FORK_ENV, "0")
    manager = kernels.manager_class()
    assert manager is AsyncKernelManager
    seen, _ = run_probe(tmp_path, manager)
    assert seen["comm"] != kernels.KERNEL_NAME.decode() and seen["cwd"] == str(tmp_path)


def test_the_zygote_is_started_without_the_pages_variables():
    env = {
        "PATH": "/bin",
        "TWOLAYER_PAGE": "a/b",
        "TWOLAYER_CLAIMS_OUT": "/x",
        "JPY_PARENT_PID": "1",
    }
    assert kernels.zygote_env(env) == {"PATH": "/bin"}


def test_a_zygote_that_cannot_start_is_not_tried_again(monkeypatch):
    """Each page would otherwise pay the preload again before falling back."""
    tries = []

    class Broken:
        def __init__(self, env):
            tries.append(env)
            raise OSError("the kernel zygote did not start: no answer")

    monkeypatch.setattr(kernels, "Zygote", Broken)
    zygotes = kernels.Zygotes()
    env = {"PATH": "/bin", "TWOLAYER_PAGE": "a/b"}
    for page in ("a/b", "c/d"):
        with pytest.raises(OSError, match="did not start"):
            zygotes.for_env({**env, "TWOLAYER_PAGE": page})
    assert tries == [{"PATH": "/bin"}]
