# SPDX-License-Identifier: LGPL-2.1-or-later
"""close(), the with-block and garbage collection end every thread the
pipeline started; tensors handed out outlive the loader; Ctrl-C in a
training loop stops it cleanly; an exception that leaves a playing loader
to the garbage collector does not crash the interpreter."""

import gc
import os
import signal
import subprocess
import sys
import time
import unittest

import torch

from loader_fixture import make_dataset
from gst_train.torch import Loader

ROOT = make_dataset(classes=2, per_class=16)
COMMON = dict(batch_size=4, width=16, height=16, seed=1)


def threads():
    """The names of this process's threads."""
    names = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                names.append(f.read().strip())
        except FileNotFoundError:  # ended while listed
            pass
    return names


def pipeline_threads(baseline, seconds=10):
    """The threads beyond baseline that still work for a pipeline, once none
    does or after seconds: the elements' worker pool ("train-pool") and
    more than the two idle threads GLib's shared pool keeps for reuse
    (GStreamer's streaming tasks run there and return there)."""
    deadline = time.monotonic() + seconds
    while True:
        extra = threads()
        for name in baseline:
            if name in extra:
                extra.remove(name)
        working = [n for n in extra if n == "train-pool"]
        if len(extra) > 2:
            working = extra
        if not working or time.monotonic() > deadline:
            return working
        time.sleep(0.01)


def run_partly(**kwargs):
    loader = Loader(ROOT, **COMMON, **kwargs)
    for i, _ in enumerate(loader):
        if i == 2:
            break
    return threads().count("train-pool")


LOOP = r"""
import sys
from gst_train.torch import Loader
loader = Loader(sys.argv[1], batch_size=2, width=16, height=16,
                echo="adaptive", prefetch=1)
def train():
    while True:
        for images, labels in loader:
            print("batch", flush=True)
            {work}
{body}
"""


class Lifecycle(unittest.TestCase):
    def setUp(self):
        gc.collect()
        self.baseline = threads()

    def test_close_ends_threads(self):
        for kwargs in ({}, {"echo": "adaptive"}, {"echo": 2}):
            with self.subTest(**kwargs):
                loader = Loader(ROOT, **COMMON, **kwargs)
                for _ in loader:
                    pass
                it = iter(loader)
                next(it)
                self.assertIn("train-pool", threads())
                loader.close()
                self.assertEqual(pipeline_threads(self.baseline), [])
                loader.close()  # twice is harmless

    def test_with_block(self):
        with Loader(ROOT, **COMMON) as loader:
            next(iter(loader))
        self.assertEqual(pipeline_threads(self.baseline), [])
        with self.assertRaisesRegex(RuntimeError, "closed"):
            iter(loader)

    def test_garbage_collection(self):
        self.assertGreater(run_partly(echo="adaptive"), 0)
        gc.collect()
        self.assertEqual(pipeline_threads(self.baseline), [])

    def test_no_threads_pile_up(self):
        for _ in range(4):
            with Loader(ROOT, echo="adaptive", **COMMON) as loader:
                for _ in loader:
                    pass
        self.assertEqual(pipeline_threads(self.baseline), [])

    def test_tensors_outlive_loader(self):
        loader = Loader(ROOT, **COMMON)
        images, labels = next(iter(loader))
        kept = images.clone(), labels.clone()
        loader.close()
        del loader
        gc.collect()
        # the pipeline's memory is reused or unmapped if the tensors did not
        # hold it: fill some memory and look again
        junk = [torch.randint(0, 255, (4, 3, 16, 16), dtype=torch.uint8)
                for _ in range(64)]
        self.assertTrue(torch.equal(images, kept[0]))
        self.assertTrue(torch.equal(labels, kept[1]))
        del junk

    def interrupt(self, body, work="pass"):
        child = subprocess.Popen(
            [sys.executable, "-c", LOOP.format(body=body, work=work), ROOT],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            self.assertEqual(child.stdout.readline(), "batch\n")
            child.send_signal(signal.SIGINT)
            out, err = child.communicate(timeout=60)
        finally:
            child.kill()
        return child.returncode, out, err

    def test_ctrl_c_handled(self):
        code, out, err = self.interrupt(
            "try:\n    train()\nexcept KeyboardInterrupt:\n"
            "    loader.close()\n    print('stopped', flush=True)\n")
        self.assertEqual(code, 0, err)
        self.assertIn("stopped", out)

    def test_ctrl_c_unhandled(self):
        code, out, err = self.interrupt("train()\n")
        # Python ends by SIGINT after the traceback, not by an abort
        self.assertEqual(code, -signal.SIGINT, err)
        self.assertIn("KeyboardInterrupt", err)
        self.assertNotIn("CRITICAL", err)

    def test_exception_leaves_loader_to_gc(self):
        code, out, err = self.interrupt(
            "try:\n    train()\nexcept KeyboardInterrupt:\n"
            "    raise ValueError('the loop failed')\n")
        self.assertEqual(code, 1, err)
        self.assertIn("ValueError: the loop failed", err)
        self.assertNotIn("CRITICAL", err)


if __name__ == "__main__":
    unittest.main()
