"""Gradient flow to t = 10^(10^6): time and steps of ``gradient_flow(...,
log10_t_max=1e6)`` on the book's two-neuron and width-10 problems (Lyu et al.'s
symmetric data, draw 15: the limits page's worst draw), single-threaded, with the
``t_max = 1e300`` integrator's time for comparison.

Usage: ``.venv/bin/python benchmarks/logtime.py [--horizon 1e6] [--note TEXT]``
(``make bench`` runs it). Results go to ``benchmarks/logtime_results.json`` and the
README's table between ``<!-- LOGTIME_TIMINGS -->`` markers is regenerated from
them (never typed by hand).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
from readme import README, write_table  # benchmarks/readme.py

import twolayer
from twolayer import data as D
from twolayer import flows as F
from twolayer.models import TwoLayerNet
from twolayer.theory import lyu2021

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "logtime_results.json"
MARKERS = ("<!-- LOGTIME_TIMINGS -->", "<!-- /LOGTIME_TIMINGS -->")
SEED = 15
TARGET = 180.0  # seconds of CPU to 10^(10^6) per problem: "seconds to a few minutes"


def symmetric_data(seed: int):
    """Lyu et al.'s symmetric setting as the limits and regimes pages build it: two
    Gaussians (mean ±1, std 0.7, n = 20, d = 5), symmetrically augmented, scaled to
    ``‖x‖ ≤ 1``; with 200 evaluation points for the sup norm."""
    sym = D.symmetric_augment(D.two_gaussians(20, 5, mean=1.0, std=0.7, seed=seed))
    sym = sym.with_data(sym.X / np.linalg.norm(sym.X, axis=1).max(), sym.y)
    rng = np.random.default_rng(seed)
    return sym, np.vstack([sym.X, rng.standard_normal((200, 5)) / np.sqrt(5)])


def problems(seed: int) -> dict:
    """``name -> (model, data, X_eval)``."""
    sym, X_eval = symmetric_data(seed)
    mu = lyu2021.mu(sym.X, sym.y)
    mu = mu / np.linalg.norm(mu)
    wide = TwoLayerNet(5, 10, alpha=0.5, init="gaussian", init_scale=1e-4, seed=seed)
    net = TwoLayerNet(5, 10, alpha=0.5, init="gaussian", seed=seed)
    W, a = lyu2021.phase2_start(lyu2021.embedding_vector(*net.weights(), mu), mu)
    two = TwoLayerNet.from_weights(1e-6 * W, 1e-6 * a, alpha=0.5)
    return {
        f"two-neuron σ→0 flow (Lyu Lemma 5.4 start, draw {seed})": (two, sym, X_eval),
        f"width 10, σ = 1e-4 (Lyu Thm 4.3, draw {seed})": (wide, sym, X_eval),
    }


def measure(model, data, X_eval, horizon: float) -> dict:
    w_star = lyu2021.max_margin_separator(data.X, data.y)
    target = lyu2021.symmetric_limit_function(X_eval, w_star, 0.5)

    def gap(snap) -> float:
        return float(lyu2021.limit_error(snap["W"], snap["a"], X_eval, target, 0.5))

    marks = [x for x in (300.0, 1e3, 1e4, 1e5, 1e6, 1e7) if x < horizon] + [horizon]
    wall, cpu = time.perf_counter(), time.process_time()
    run = F.gradient_flow(model, data, log10_t_max=horizon, snapshot_log10_times=marks)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    old_wall, old_cpu = time.perf_counter(), time.process_time()
    old = F.gradient_flow(model, data, 1e300, n_snapshots=2)
    old_wall, old_cpu = time.perf_counter() - old_wall, time.process_time() - old_cpu
    return dict(
        horizon=horizon,
        wall=wall,
        cpu=cpu,
        steps=int(run.config["steps"]),
        late_steps=int(run.config["late_steps"]),
        evaluations=int(run.config["evaluations"]),
        clock_drift=float(run.config["clock_drift"]),
        marks=marks,
        gaps=[gap(s) for s in run.snapshots],
        gap_1e300_t_max=gap(old.snapshots[-1]),
        t_max_wall=old_wall,
        t_max_cpu=old_cpu,
        t_max_steps=int(old.config["steps"]),
    )


def _mark(x: float) -> str:
    return f"10^{x:.0f}" if x < 1e4 else f"10^(10^{np.log10(x):.0f})"


def table(results: dict) -> str:
    rows = [
        f"| problem | to t = {_mark(results['horizon'])}: CPU s (wall s) | steps "
        "(late phase) | gap to Lyu's limit along the way | t_max = 1e300 today: "
        "CPU s, steps |",
        "|---|---|---|---|---|",
    ]
    for name, r in results["problems"].items():
        gaps = ", ".join(
            f"{g:.4g} at {_mark(x)}" for x, g in zip(r["marks"], r["gaps"])
        )
        rows.append(
            f"| {name} | {r['cpu']:.1f} ({r['wall']:.1f}) | {r['steps']} "
            f"({r['late_steps']}) | {gaps} | {r['t_max_cpu']:.1f}, "
            f"{r['t_max_steps']} |"
        )
    worst = max(r["cpu"] for r in results["problems"].values())
    ok = "met" if worst <= TARGET else "missed"
    return "\n".join(
        [
            f"Measured by `make bench` (`benchmarks/logtime.py`) on "
            f"{results['machine']} ({results['date']}, 1 thread, load average "
            f"{results['load_before']:.1f} before the run; CPU seconds are the "
            "process's own, wall seconds depend on the host's load):",
            "",
            *rows,
            "",
            f"Target: each problem to t = {_mark(results['horizon'])} within "
            f"{TARGET:.0f} CPU s: {ok}."
            + (f" {results['note']}" if results.get("note") else ""),
        ]
    )


def write_readme(results: dict, readme: Path = README) -> bool:
    return write_table(table(results), MARKERS, readme)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=float, default=1e6, help="log10 t_max")
    parser.add_argument("--note", default="", help="a sentence under the table")
    args = parser.parse_args(argv)
    twolayer.configure_threads(1)
    load = os.getloadavg()[0]
    out = {
        name: measure(*p, horizon=args.horizon) for name, p in problems(SEED).items()
    }
    results = dict(
        horizon=args.horizon,
        problems=out,
        date=time.strftime("%Y-%m-%d"),
        machine=(
            f"{platform.machine()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}"
        ),
        load_before=load,
        note=args.note,
    )
    RESULTS.write_text(json.dumps(results, indent=1))
    print(table(results))
    if write_readme(results):
        print(f"README table regenerated from {RESULTS.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
