"""Benchmark: the MNIST GD loop of ``book/min2024/fig5_mnist_alignment`` against plain matrix products.

The loop (``twolayer.flows.gd``: forward, autograd backward, SGD step, loss bookkeeping and the
notebook's snapshots) is timed for ``--steps`` iterations on centred MNIST 1 vs 0 (embedded sample,
n = 800, d = 784), h = 50, float32; the reference does, for the same number of iterations, only the
two products a GD step cannot avoid: the forward ``X Wᵀ`` (n×d by d×h) and the weight gradient
``Gᵀ X`` (h×n by n×d). Prints both times and their ratio (target: ≤ 3).

    .venv/bin/python benchmarks/min_gd_loop.py [--steps 2000] [--threads 1]
"""
from __future__ import annotations

import argparse
import time

import torch

import twolayer
from twolayer import data, flows, models
from twolayer.theory import min2024 as M


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000, help="GD iterations to time")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--width", type=int, default=50, help="hidden neurons h")
    args = parser.parse_args()
    twolayer.configure_threads(args.threads)

    ds = data.mnist_pair(1, 0).centered()
    lr = M.equivalent_step(2e-3, M.mnist_paper_size((0, 1)), ds.n)
    net = models.TwoLayerNet(ds.d, args.width, init="gaussian", scale=1e-6, seed=0, dtype=torch.float32)
    # the notebook takes 150 snapshots over 15000 steps: keep the same density
    marks = flows.snapshot_schedule(args.steps, max(2, args.steps * 150 // 15000), log_fraction=0.3)
    start = time.perf_counter()
    flows.gd(net, ds, lr=lr, steps=args.steps, reduction="sum", snapshot_steps=marks)
    loop = time.perf_counter() - start

    X = torch.tensor(ds.X, dtype=torch.float32)
    W = net.W.detach().clone()
    G = torch.randn(ds.n, args.width, dtype=torch.float32)
    for _ in range(20):  # warm-up
        X @ W.T
    start = time.perf_counter()
    for _ in range(args.steps):
        Z = X @ W.T
        gW = G.T @ X
    plain = time.perf_counter() - start
    del Z, gW
    print(f"GD loop (flows.gd), {args.steps} steps, n={ds.n}, d={ds.d}, h={args.width}: {loop:.2f} s "
          f"({1e3 * loop / args.steps:.2f} ms/step)")
    print(f"plain products X@W.T and G.T@X, {args.steps} times: {plain:.2f} s "
          f"({1e3 * plain / args.steps:.2f} ms/step)")
    print(f"ratio: {loop / plain:.2f} (target <= 3)")


if __name__ == "__main__":
    main()
