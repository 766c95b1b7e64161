# SPDX-License-Identifier: LGPL-2.1-or-later
"""state_dict()/load_state_dict(): a new loader restored from a state taken
mid-epoch yields, bitwise, the batches the straight run yielded next, with
no echo and with fixed echo (its shuffle buffer rebuilt), and the state
after a whole epoch starts the next one."""

import unittest

import torch

from loader_fixture import make_dataset
from gst_train.torch import Loader

ROOT = make_dataset(classes=3, per_class=12)  # 36 images
COMMON = dict(batch_size=4, width=16, height=16, seed=9, with_ids=True)


def take(iterator, n):
    out = []
    for batch in iterator:
        out.append(tuple(t.clone() for t in batch))
        if len(out) == n:
            break
    return out


class State(unittest.TestCase):
    def check(self, stop_epoch, stop_batch, **kwargs):
        args = dict(COMMON)
        args.update(kwargs)
        with Loader(ROOT, **args) as loader:
            for _ in range(stop_epoch):
                for _ in loader:
                    pass
            iterator = iter(loader)
            taken = take(iterator, stop_batch) if stop_batch else []
            state = loader.state_dict()
            # the straight run goes on in the same epoch
            rest = take(iterator, 1000)
        self.assertTrue(rest, "nothing left after the state")
        with Loader(ROOT, **args) as restored:
            restored.load_state_dict(state)
            again = [tuple(t.clone() for t in b) for b in restored]
        self.assertEqual(len(again), len(rest), (state, len(taken)))
        for i, (a, b) in enumerate(zip(rest, again)):
            for x, y in zip(a, b):
                self.assertTrue(torch.equal(x, y),
                                f"batch {i} after the state differs: {kwargs}")

    def test_mid_epoch(self):
        self.check(1, 3)

    def test_after_whole_epoch(self):
        self.check(1, 0)

    def test_fixed_echo_shuffled(self):
        self.check(0, 4, echo=2, echo_shuffle_buffer_size=8,
                   echo_position="before-augment")

    def test_fixed_echo_after_batch(self):
        self.check(1, 5, echo=2, echo_position="after-batch")

    def test_other_loader_refused(self):
        with Loader(ROOT, **COMMON) as loader:
            state = loader.state_dict()
        other = dict(COMMON, batch_size=6)
        with Loader(ROOT, **other) as loader:
            with self.assertRaisesRegex(ValueError, "batch_size=4"):
                loader.load_state_dict(state)


if __name__ == "__main__":
    unittest.main()
