"""Time to reach 1 − cos ≤ 1e-3 for every live neuron (Phuong & Lampert Fig 1 setting):
the gradient-flow engine vs the paper's SGD recipe (batch 50, lr 0.1), from the same
balanced small initialisation (Theorem 1's hypothesis), single-threaded.

Usage: ``.venv/bin/python benchmarks/flow.py [--cap SECONDS]``. Prints both times
(or the cos SGD reached by the time cap) and their ratio, from one run.
"""

from __future__ import annotations

import argparse
import copy
import time

import numpy as np

import twolayer
from twolayer import data as D
from twolayer import flows as F
from twolayer import metrics
from twolayer import models as M
from twolayer.theory import phuong2021

TARGET = 1e-3


def worst_gap(W, a, X, w_pm) -> float:
    live = ~metrics.dead_neurons(W, X)
    cos = phuong2021.cosines_to_max_margin(W, a, *w_pm)
    return float((1 - cos[live]).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--cap", type=float, default=120.0, help="time cap of the SGD run (seconds)"
    )
    parser.add_argument("--scale", type=float, default=1e-3, help="balanced init scale")
    args = parser.parse_args()
    twolayer.configure_threads(1)
    ds = D.orthant_data(500, 20, seed=0)
    w_pm = phuong2021.max_margin_directions(ds.X, ds.y)
    net = M.TwoLayerNet(20, 100, init="balanced", scale=args.scale, seed=0)

    # the flow: find the first grid time at which the target holds, then time a run
    # to it
    probe = F.gradient_flow(net, ds, 1e300, n_snapshots=80, t_min=1e-1)
    gaps = np.array([worst_gap(s["W"], s["a"], ds.X, w_pm) for s in probe.snapshots])
    hit = np.flatnonzero(gaps <= TARGET)
    if hit.size == 0:
        print(f"flow: 1 − cos = {gaps[-1]:.2e} > {TARGET:g} at t = 1e300")
        return
    t_hit = float(probe.times[hit[0]])
    start = time.perf_counter()
    run = F.gradient_flow(net, ds, t_hit, n_snapshots=2)
    flow_time = time.perf_counter() - start
    flow_gap = worst_gap(run.final["W"], run.final["a"], ds.X, w_pm)
    print(
        f"flow: 1 − cos = {flow_gap:.2e} at t = {t_hit:.3g} in {flow_time:.2f} s "
        f"({run.config['steps']} steps)"
    )

    # the paper's SGD recipe, in chunks of epochs, until the target or the cap
    model = copy.deepcopy(net)
    start, epochs, gap = time.perf_counter(), 0, np.inf
    while time.perf_counter() - start < args.cap:
        F.sgd(model, ds, lr=0.1, epochs=10, batch_size=50, seed=epochs, n_snapshots=2)
        epochs += 10
        W, a = model.weights()
        gap = worst_gap(W, a, ds.X, w_pm)
        if gap <= TARGET:
            break
    sgd_time = time.perf_counter() - start
    reached = "reached" if gap <= TARGET else f"did NOT reach {TARGET:g} (time cap)"
    print(
        f"sgd : 1 − cos = {gap:.2e} (max cos deficit; min cos {1 - gap:.4f}) after "
        f"{epochs} epochs "
        f"in {sgd_time:.2f} s: {reached}"
    )
    bound = "≥ " if gap > TARGET else ""
    print(f"ratio sgd/flow time: {bound}{sgd_time / flow_time:.1f}")


if __name__ == "__main__":
    main()
