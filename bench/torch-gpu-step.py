#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""PyTorch GPU training-step speed, the peer of the CUDA backend.

    bench/torch-gpu-step.py --model resnet50 --batch 256 [--compile]
        [--size 224] [--classes 1000] [--warmup 10] [--steps 10] [--windows 5]

One step, as bench/trainer-bench does it with --device cuda --precision bf16:
a random uint8 NHWC batch in pinned host memory goes to the GPU
(non_blocking), is normalised there, runs through torchvision's model in
channels_last under autocast(bfloat16), cross-entropy with label smoothing
0.1, backward, SGD (momentum 0.9, weight decay 1e-4 on weights with ndim > 1,
fused/foreach as PyTorch picks). cudnn.benchmark is on, as any tuned run
has it. After --warmup untimed steps, --windows windows of --steps steps
are timed with CUDA events; the median window's images/s is reported.
With --compile the model goes through torch.compile first (its warm-up
includes the compilation); a PyTorch without torch.compile exits 77.

--device cpu runs the same step on the CPU (autocast on the CPU, no pinned
memory, wall-clock windows): bench/gpu-check.sh --rehearse uses it to run
its stages where there is no GPU. The JSON line says whether PyTorch sees a
GPU and which.

Prints one JSON line.
"""
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from torch_step_bench import step_arguments  # puts tests/trainer on the path
from torch_reference import MEAN, STD, build_model, make_optimizer


def main():
    p = step_arguments(__doc__, batch=256, warmup=10, steps=10, lr=0.01)
    p.add_argument("--windows", type=int, default=5)
    p.add_argument("--compile", action="store_true")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    a = p.parse_args()

    if a.compile and not hasattr(torch, "compile"):
        print(f"SKIP: PyTorch {torch.__version__} has no torch.compile", flush=True)
        sys.exit(77)
    on_gpu = a.device == "cuda"
    if on_gpu and not torch.cuda.is_available():
        sys.exit("torch-gpu-step.py: PyTorch sees no GPU (torch.cuda.is_available() "
                 f"is False; torch {torch.__version__}, built for CUDA {torch.version.cuda})")
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(1)
    device = torch.device(a.device)
    model = build_model(a.model, a.classes).to(device).to(memory_format=torch.channels_last)
    optimizer = make_optimizer(model, a.lr, 0.9, 1e-4, False)
    step_model = torch.compile(model) if a.compile else model
    images = torch.randint(0, 256, (a.batch, a.size, a.size, 3), dtype=torch.uint8)
    labels = torch.randint(0, a.classes, (a.batch,), dtype=torch.int64)
    if on_gpu:
        images, labels = images.pin_memory(), labels.pin_memory()
    mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=device).view(1, 3, 1, 1)

    def step():
        x = images.to(device, non_blocking=True)
        y = labels.to(device, non_blocking=True)
        # NHWC uint8 -> NCHW view in channels_last memory, normalised on the GPU
        x = x.permute(0, 3, 1, 2).float().div_(255.0)
        x = ((x - mean) / std).contiguous(memory_format=torch.channels_last)
        with torch.autocast(a.device, dtype=torch.bfloat16):
            loss = F.cross_entropy(step_model(x), y, label_smoothing=0.1)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss

    def synchronize():
        if on_gpu:
            torch.cuda.synchronize()

    start = time.perf_counter()
    for _ in range(a.warmup):
        loss = step()
    synchronize()
    warmup_seconds = time.perf_counter() - start

    rates = []
    for _ in range(a.windows):
        if on_gpu:
            begin = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            begin.record()
        else:
            begin_seconds = time.perf_counter()
        for _ in range(a.steps):
            loss = step()
        if on_gpu:
            end.record()
            end.synchronize()
            seconds = begin.elapsed_time(end) / 1000.0
        else:
            seconds = time.perf_counter() - begin_seconds
        rates.append(a.batch * a.steps / seconds)
    print(json.dumps({
        "impl": "torch-compile" if a.compile else "torch-eager",
        "model": a.model, "size": a.size, "batch": a.batch,
        "precision": "bf16-autocast", "memory_format": "channels_last",
        "device": a.device, "torch": torch.__version__, "torch_cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "gpu": torch.cuda.get_device_name(0) if on_gpu else None,
        "warmup_seconds": round(warmup_seconds, 2),
        "last_loss": float(loss.item()),
        "images_per_second_windows": [round(r, 1) for r in rates],
        "images_per_second_windows_median": round(statistics.median(rates), 2),
    }))


if __name__ == "__main__":
    main()
