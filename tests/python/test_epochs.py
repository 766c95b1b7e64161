# SPDX-License-Identifier: LGPL-2.1-or-later
"""Each for over the loader is one epoch of the whole split, in a new order;
breaking out and iterating again starts a clean next epoch, the same as the
straight run's; set_epoch(n) gives epoch n."""

import unittest

import torch

from loader_fixture import batches, make_dataset
from gst_train.torch import Loader

ROOT = make_dataset(classes=3, per_class=10)  # 30 images
COMMON = dict(batch_size=4, width=16, height=16, seed=5, drop_last=False,
              with_ids=True)


def ids(epoch):
    return torch.cat([b[2] for b in epoch]).tolist()


def same(a, b):
    return len(a) == len(b) and all(
        all(torch.equal(x, y) for x, y in zip(p, q)) for p, q in zip(a, b))


class Epochs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with Loader(ROOT, **COMMON) as loader:
            cls.straight = [batches(loader) for _ in range(4)]

    def test_each_epoch_is_the_whole_dataset(self):
        for epoch in self.straight:
            self.assertEqual(sorted(ids(epoch)), list(range(30)))

    def test_epochs_differ(self):
        self.assertNotEqual(ids(self.straight[0]), ids(self.straight[1]))

    def test_break_then_next_epoch(self):
        with Loader(ROOT, **COMMON) as loader:
            for i, _ in enumerate(loader):
                if i == 2:
                    break
            self.assertTrue(same(batches(loader), self.straight[1]))
            # a break in the first batch, then the rest of the run
            for _ in loader:
                break
            self.assertTrue(same(batches(loader), self.straight[3]))

    def test_set_epoch(self):
        with Loader(ROOT, **COMMON) as loader:
            loader.set_epoch(3)
            self.assertTrue(same(batches(loader), self.straight[3]))
            loader.set_epoch(1)
            self.assertTrue(same(batches(loader), self.straight[1]))
            # then on from there
            self.assertTrue(same(batches(loader), self.straight[2]))


if __name__ == "__main__":
    unittest.main()
