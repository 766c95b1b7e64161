#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""PyTorch CPU training-step speed, the baseline for trainer/.

    bench/torch-train-cpu.py --model resnet50 --size 224 --batch 16 \
        --classes 1000 --threads 2 --warmup 2 --steps 5 --runs 1 [--channels-last]

One step = normalise a random uint8 NHWC batch (as the C library does),
forward, cross-entropy with label smoothing 0.1, backward, SGD step (momentum
0.9, weight decay 1e-4 on conv/fc weights only; see tests/trainer/
torch_reference.py, which supplies the model and the optimiser). float32,
torch.set_num_threads(--threads), one inter-op thread. Each run does --warmup
untimed steps and then times --steps steps with time.perf_counter.

Prints one JSON line. With --channels-last both memory formats are timed
(runs interleaved); the top-level figures are the faster one's, named in
"memory_format", and "by_format" has both medians.
"""
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from torch_step_bench import step_arguments  # puts tests/trainer on the path
from torch_reference import build_model, make_optimizer, normalize


def main():
    p = step_arguments(__doc__, batch=16, warmup=2, steps=5, lr=0.1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--channels-last", action="store_true",
                   help="also time torch.channels_last and report the faster format")
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(a.seed)
    images = torch.randint(0, 256, (a.batch, a.size, a.size, 3), dtype=torch.uint8)
    labels = torch.randint(0, a.classes, (a.batch,), dtype=torch.int64)

    formats = {"contiguous": torch.contiguous_format}
    if a.channels_last:
        formats["channels_last"] = torch.channels_last
    setups = {}
    for name, fmt in formats.items():
        torch.manual_seed(a.seed)
        model = build_model(a.model, a.classes).train().to(memory_format=fmt)
        opt = make_optimizer(model, a.lr, 0.9, 1e-4, False)
        setups[name] = (model, opt, fmt)

    def step(model, opt, fmt):
        x = normalize(images).contiguous(memory_format=fmt)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), labels, label_smoothing=0.1)
        loss.backward()
        opt.step()

    times = {name: [] for name in formats}
    for _ in range(a.runs):
        for name, s in setups.items():
            for _ in range(a.warmup):
                step(*s)
            for _ in range(a.steps):
                t0 = time.perf_counter()
                step(*s)
                times[name].append(time.perf_counter() - t0)

    ips = {n: a.batch / statistics.median(t) for n, t in times.items()}
    best = max(ips, key=ips.get)
    result = {"impl": "pytorch", "torch": torch.__version__, "model": a.model,
              "size": a.size, "batch": a.batch, "classes": a.classes,
              "threads": a.threads, "warmup": a.warmup, "steps": a.steps,
              "runs": a.runs, "memory_format": best,
              "step_seconds": [round(t, 6) for t in times[best]],
              "images_per_second_median": round(ips[best], 3)}
    if len(formats) > 1:
        result["by_format"] = {n: {"images_per_second_median": round(v, 3),
                                   "step_seconds_median": round(a.batch / v, 6)}
                               for n, v in ips.items()}
        result["faster"] = best
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
