# SPDX-License-Identifier: LGPL-2.1-or-later
"""On a GPU: device="cuda" hands out the batches the CPU path gives, on the
device, copied ahead on a side stream; pin_memory=True gives page-locked
batches. Skips (exit 77) where no GPU is usable."""

import sys
import unittest

import torch

if not torch.cuda.is_available():
    print("SKIP: no GPU is usable (torch.cuda.is_available() is False)")
    sys.exit(77)

from loader_fixture import make_dataset  # noqa: E402
from gst_train.torch import Loader  # noqa: E402

ROOT = make_dataset(classes=3, per_class=10)
COMMON = dict(batch_size=4, width=16, height=16, seed=6, with_ids=True)


class Cuda(unittest.TestCase):
    def test_device_matches_cpu(self):
        with Loader(ROOT, **COMMON) as cpu, \
                Loader(ROOT, device="cuda", **COMMON) as gpu:
            n = 0
            for a, b in zip(cpu, gpu):
                for x, y in zip(a, b):
                    self.assertEqual(y.device.type, "cuda")
                    self.assertTrue(torch.equal(x, y.cpu()))
                n += 1
            self.assertEqual(n, len(cpu))

    def test_pin_memory(self):
        with Loader(ROOT, pin_memory=True, **COMMON) as loader:
            images, labels, ids = next(iter(loader))
            self.assertTrue(images.is_pinned())
            self.assertTrue(labels.is_pinned())
            moved = images.cuda(non_blocking=True)
            torch.cuda.synchronize()
            self.assertTrue(torch.equal(moved.cpu(), images))


if __name__ == "__main__":
    unittest.main()
