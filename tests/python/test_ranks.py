# SPDX-License-Identifier: LGPL-2.1-or-later
"""The rank split: from torchrun's RANK and WORLD_SIZE, and under
`torchrun --nproc_per_node=2` with DDP on gloo from torch.distributed:
disjoint samples, every rank the same number of batches, the same model on
every rank after an epoch of training."""

import os
import subprocess
import sys
import tempfile
import unittest

import torch

from loader_fixture import make_dataset
from gst_train.torch import Loader

ROOT = make_dataset(classes=3, per_class=11)  # 33 images
COMMON = dict(batch_size=4, width=16, height=16, seed=2, with_ids=True,
              drop_last=False)

DDP_SCRIPT = r"""
import json, os, sys
import torch
import torch.distributed as dist
from gst_train.torch import Loader

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 16 * 16, 3))
ddp = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
seen, steps = [], 0
with Loader(sys.argv[1], batch_size=4, width=16, height=16, seed=2,
            with_ids=True, drop_last=False,
            normalize=((0.5, 0.5, 0.5), (0.25, 0.25, 0.25))) as loader:
    expected = len(loader)
    for images, labels, ids in loader:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ddp(images), labels).backward()
        opt.step()
        seen += ids.tolist()
        steps += 1
everyone = [None] * world
dist.all_gather_object(everyone, {"ids": seen, "steps": steps,
                                  "len": expected,
                                  "weight": model[1].weight.sum().item()})
if rank == 0:
    json.dump(everyone, open(sys.argv[2], "w"))
dist.destroy_process_group()
"""


class Ranks(unittest.TestCase):
    def test_env_split(self):
        seen = []
        counts = []
        for rank in range(3):
            os.environ.update(RANK=str(rank), WORLD_SIZE="3")
            try:
                with Loader(ROOT, **COMMON) as loader:
                    ids = [i for b in loader for i in b[2].tolist()]
            finally:
                del os.environ["RANK"], os.environ["WORLD_SIZE"]
            counts.append(len(ids))
            seen += ids
        self.assertEqual(counts, [11, 11, 11])
        self.assertEqual(sorted(seen), list(range(33)))

    def test_torchrun_ddp(self):
        torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "ddp.py")
            result = os.path.join(tmp, "result.json")
            with open(script, "w") as f:
                f.write(DDP_SCRIPT)
            env = dict(os.environ, OMP_NUM_THREADS="1")
            # Debian's torch 1.13 under Python 3.11: torchrun's default
            # --redirects=0 and --tee=0 parse to None (Python 3.11 no longer
            # iterates IntFlag's zero member) and it fails at start; 1 (the
            # ranks' stdout teed to files) parses.
            subprocess.run(
                [torchrun, "--nproc_per_node=2", "--redirects=1", "--tee=1",
                 "--rdzv_endpoint=localhost:0", "--rdzv_backend=c10d",
                 script, ROOT, result],
                env=env, check=True, timeout=240)
            import json
            ranks = json.load(open(result))
        self.assertEqual(len(ranks), 2)
        # 33 images over 2 ranks: 16 each, 4 batches each
        self.assertEqual([r["steps"] for r in ranks], [4, 4])
        self.assertEqual([r["len"] for r in ranks], [4, 4])
        a, b = set(ranks[0]["ids"]), set(ranks[1]["ids"])
        self.assertEqual(len(a), 16)
        self.assertEqual(len(b), 16)
        self.assertFalse(a & b)
        self.assertAlmostEqual(ranks[0]["weight"], ranks[1]["weight"],
                               places=5)


if __name__ == "__main__":
    unittest.main()
