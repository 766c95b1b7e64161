# SPDX-License-Identifier: LGPL-2.1-or-later
"""len(loader) is exactly the batches one for-loop yields: drop_last either
way, fixed echo before and after the batcher, under a rank split; and a
TypeError where the count cannot be known (adaptive echo)."""

import unittest

from loader_fixture import make_dataset
from gst_train.torch import Loader

ROOT = make_dataset(classes=3, per_class=21)  # 63 images
COMMON = dict(batch_size=8, width=16, height=16, seed=3)


def count(loader):
    return sum(1 for _ in loader)


class Len(unittest.TestCase):
    def check(self, expected, **kwargs):
        args = dict(COMMON)
        args.update(kwargs)
        with Loader(ROOT, **args) as loader:
            self.assertEqual(len(loader), expected, kwargs)
            self.assertEqual(count(loader), expected, kwargs)
            self.assertEqual(count(loader), expected, kwargs)  # 2nd epoch

    def test_drop_last(self):
        self.check(63 // 8, drop_last=True)

    def test_keep_last(self):
        self.check(63 // 8 + 1, drop_last=False)

    def test_echo_before_batcher(self):
        self.check(2 * 63 // 8, echo=2, echo_position="before-augment")

    def test_echo_after_batcher(self):
        self.check((63 // 8) * 3, echo=3, echo_position="after-batch")

    def test_rank_split(self):
        # 63 over 2 ranks: 31 each (the odd one left out, as
        # DistributedSampler with drop_last=True leaves it)
        for rank in range(2):
            self.check(31 // 8, rank=rank, world_size=2)
            self.check(31 // 8 + 1, rank=rank, world_size=2, drop_last=False)

    def test_adaptive_has_no_len(self):
        with Loader(ROOT, echo="adaptive", **COMMON) as loader:
            with self.assertRaisesRegex(TypeError, "adaptive"):
                len(loader)


if __name__ == "__main__":
    unittest.main()
