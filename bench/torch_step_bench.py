# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the PyTorch step benchmarks (torch-gpu-step.py, torch-train-cpu.py)
share: tests/trainer/torch_reference.py on the import path, and the
arguments that describe the training step they time."""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests", "trainer"))
from torch_reference import MODELS  # noqa: E402


def step_arguments(doc, batch, warmup, steps, lr):
    """A parser for --model, --size, --batch, --classes, --warmup, --steps
    and --lr with these defaults, described by the first paragraph of doc;
    the caller adds its own options."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--model", default="resnet50", choices=MODELS)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--batch", type=int, default=batch)
    p.add_argument("--classes", type=int, default=1000)
    p.add_argument("--warmup", type=int, default=warmup)
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument("--lr", type=float, default=lr)
    return p
