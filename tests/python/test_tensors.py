# SPDX-License-Identifier: LGPL-2.1-or-later
"""The tensors: shapes, dtypes and memory formats; the images equal what
the C pipeline's batcher wrote (the same launch line into dump-samples' view
through from_pipeline); normalize; with_ids; stats() counts what the loop
got and adaptive echo repeats when the source is the slow side."""

import unittest

import torch

from loader_fixture import make_dataset
from gst_train.torch import Loader

ROOT = make_dataset(classes=3, per_class=8)  # 24 images
COMMON = dict(batch_size=4, width=20, height=12, seed=4, with_ids=True)


class Tensors(unittest.TestCase):
    def test_layouts(self):
        with Loader(ROOT, **COMMON) as planar, \
                Loader(ROOT, channels_last=True, **COMMON) as packed:
            for a, b in zip(planar, packed):
                images, labels, ids = a
                self.assertEqual(images.shape, (4, 3, 12, 20))
                self.assertEqual(images.dtype, torch.uint8)
                self.assertTrue(images.is_contiguous())
                self.assertEqual(labels.dtype, torch.int64)
                self.assertEqual(ids.dtype, torch.int64)
                self.assertTrue(b[0].is_contiguous(
                    memory_format=torch.channels_last))
                self.assertFalse(b[0].is_contiguous())
                self.assertTrue(torch.equal(images, b[0]))
                self.assertTrue(torch.equal(labels, b[1]))
                self.assertTrue(torch.equal(ids, b[2]))
                # labels follow the ImageFolder layout: 8 per class
                self.assertTrue(torch.equal(labels, ids // 8))

    def test_from_pipeline_same_batches(self):
        line = (f"datasetsrc location={ROOT} seed=4 ! imagedec ! augment "
                "width=20 height=12 seed=4 ! batcher batch-size=4 layout=nchw")
        with Loader(ROOT, **COMMON) as own, \
                Loader.from_pipeline(line, with_ids=True) as other:
            self.assertEqual(len(own), len(other))
            for a, b in zip(own, other):
                for x, y in zip(a, b):
                    self.assertTrue(torch.equal(x, y))

    def test_normalize(self):
        mean, std = (0.4, 0.5, 0.6), (0.2, 0.25, 0.3)
        with Loader(ROOT, **COMMON) as raw, \
                Loader(ROOT, normalize=(mean, std), **COMMON) as norm:
            for (images, _, _), (floats, _, _) in zip(raw, norm):
                self.assertEqual(floats.dtype, torch.float32)
                want = (images.float() / 255
                        - torch.tensor(mean).view(1, 3, 1, 1)) \
                    / torch.tensor(std).view(1, 3, 1, 1)
                self.assertTrue(torch.allclose(floats, want, atol=1e-5))

    def test_stats_count_fixed_echo(self):
        with Loader(ROOT, echo=2, **COMMON) as loader:
            images = fresh = 0
            for batch in loader:
                images += batch[0].shape[0]
            stats = loader.stats()
        self.assertEqual(stats["images"], 48)
        self.assertEqual(stats["images"], images)
        self.assertEqual(stats["fresh_images"], 24)
        self.assertAlmostEqual(stats["echo_factor"], 2.0)
        self.assertGreater(stats["images_per_second"], 0)
        self.assertTrue(0 <= stats["data_wait_fraction"] <= 1)

    def test_step_time_is_the_loops_work(self):
        with Loader(ROOT, **COMMON) as loader:
            loader.stats()
            work = 0.0
            import time
            for batch in loader:
                start = time.perf_counter()
                x = torch.randn(200, 200)
                for _ in range(20):
                    x = torch.tanh(x @ x / 200)
                work += time.perf_counter() - start
            stats = loader.stats()
        per_step = work / stats["batches"]
        # the first batch has no step before it: 5 of 6 steps measured
        self.assertGreater(stats["step_time"], 0.5 * per_step)
        self.assertLess(stats["step_time"], 1.5 * per_step)

    def test_adaptive_echo_repeats_for_a_slow_source(self):
        big = make_dataset(classes=2, per_class=6, big=True)
        with Loader(big, batch_size=2, width=32, height=32, seed=1,
                    echo="adaptive", echo_max_factor=4, num_threads=1,
                    prefetch=1, drop_last=False) as loader:
            for _ in loader:
                pass
            stats = loader.stats()
        # 12 fresh photo-sized decodes against a loop that does nothing:
        # echo fills the wait with repeats
        self.assertEqual(stats["fresh_images"], 12)
        self.assertGreater(stats["echo_factor"], 1.5)


if __name__ == "__main__":
    unittest.main()
