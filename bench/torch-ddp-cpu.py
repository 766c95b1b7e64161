#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""PyTorch DistributedDataParallel (gloo) speed on the CPU, the peer of
bench/dist-bench (the trainer library's data-parallel CPU steps).

    bench/torch-ddp-cpu.py --ranks 2 --model resnet20 --size 32 --batch 32 \
        --classes 10 --threads 1 --warmup 2 --steps 10

--ranks N > 1 starts N processes of this script (torch.distributed over
gloo, rendezvous in a file of a temporary folder) and wraps the model in
DDP (broadcast_buffers=False: batch-norm statistics stay per rank, as the
trainer keeps them; buckets of 25 MiB, DDP's default, reduced while the
backward pass goes on); --ranks 1 trains the plain model in this process.
Each rank: torch.set_num_threads(--threads), one inter-op thread, its own
random uint8 NHWC batch of --batch samples. One step, as bench/dist-bench
times it: normalise the batch, forward, cross-entropy with label smoothing
0.1, backward (with DDP's all-reduce), SGD (momentum 0.9, weight decay 1e-4
on weights with ndim > 1; tests/trainer/torch_reference.py supplies the
model and the optimiser), float32, default memory format. Each rank times
its steps after --warmup untimed ones; a step of the job is the slowest
rank's. Prints one JSON line (from rank 0).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

from torch_step_bench import step_arguments  # puts tests/trainer on the path
from torch_reference import build_model, make_optimizer, normalize


def train(a, rank):
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(1)
    model = build_model(a.model, a.classes).train()
    opt = make_optimizer(model, a.lr, 0.9, 1e-4, False)
    net = model
    if a.ranks > 1:
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel

        dist.init_process_group("gloo", init_method=a.init_method, rank=rank,
                                world_size=a.ranks)
        net = DistributedDataParallel(model, broadcast_buffers=False)
    g = torch.Generator().manual_seed(1 + rank)
    images = torch.randint(0, 256, (a.batch, a.size, a.size, 3), generator=g,
                           dtype=torch.uint8)
    labels = torch.randint(0, a.classes, (a.batch,), generator=g)

    seconds = []
    for i in range(a.warmup + a.steps):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(net(normalize(images)), labels, label_smoothing=0.1)
        loss.backward()
        opt.step()
        if i >= a.warmup:
            seconds.append(time.perf_counter() - start)
    seconds = torch.tensor(seconds, dtype=torch.float64)
    if a.ranks > 1:
        dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
        dist.destroy_process_group()
    if rank == 0:
        median = statistics.median(seconds.tolist())
        print(json.dumps({
            "impl": "pytorch-ddp-gloo" if a.ranks > 1 else "pytorch",
            "torch": torch.__version__, "model": a.model, "size": a.size,
            "batch_per_rank": a.batch, "ranks": a.ranks,
            "threads_per_rank": a.threads,
            "step_seconds": [round(s, 4) for s in seconds.tolist()],
            "step_seconds_median": round(median, 5),
            "images_per_second": round(a.batch * a.ranks / median, 2)}), flush=True)


def main():
    p = step_arguments(__doc__, batch=32, warmup=2, steps=10, lr=0.01)
    p.set_defaults(model="resnet20", size=32, classes=10)
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rank", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--init-method", default=None, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.ranks == 1 or a.rank is not None:
        train(a, a.rank or 0)
        return 0
    with tempfile.TemporaryDirectory(prefix="torch-ddp-") as scratch:
        init = "file://" + os.path.join(scratch, "rendezvous")
        ranks = [subprocess.Popen([sys.executable, os.path.abspath(__file__)] + sys.argv[1:]
                                  + ["--rank", str(r), "--init-method", init])
                 for r in range(a.ranks)]
        codes = [process.wait() for process in ranks]
    if any(codes):
        print(f"torch-ddp-cpu.py: rank exit codes {codes}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
