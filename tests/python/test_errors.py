# SPDX-License-Identifier: LGPL-2.1-or-later
"""Bad arguments raise at once with the element's terms and a "did you
mean"; a missing folder raises the element's message; nothing hangs and
GLib prints no warning on stderr."""

import os
import subprocess
import sys
import unittest

from loader_fixture import make_dataset

ROOT = make_dataset(classes=2, per_class=4)

CASES = [
    # (arguments, exception, text that must be in its message)
    ("crop='random'", "ValueError", 'did you mean "random-resized"'),
    ("flip=2.0", "ValueError", "out of range, takes 0 to 1"),
    ("num_samples=-1", "ValueError", "out of range"),
    ("scale_mn=0.5", "TypeError", 'did you mean "scale_min"'),
    ("shuffle='yes'", "TypeError", "takes True or False"),
    ("echo='adaptiv'", "ValueError", 'did you mean "adaptive"'),
    ("echo=0.5", "ValueError", "out of range"),
    ("echo_position='after-augmnt'", "ValueError",
     'did you mean "after-augment"'),
    ("normalize=(1, 2)", "ValueError", "normalize"),
    ("rank=2, world_size=2", "ValueError", "rank"),
    ("echo_max_factor=3", "TypeError", "echo=None"),
]

SCRIPT = r"""
import sys
from gst_train.torch import Loader, PipelineError
try:
    loader = Loader(sys.argv[1], batch_size=2, width=8, height=8, {args})
    for batch in loader:
        pass
except {exc} as e:
    print("RAISED", e)
else:
    print("NO ERROR")
"""


def run(code, *args):
    return subprocess.run([sys.executable, "-c", code, *args],
                          capture_output=True, text=True, timeout=120)


class Errors(unittest.TestCase):
    def test_arguments(self):
        for args, exc, text in CASES:
            with self.subTest(args=args):
                out = run(SCRIPT.format(args=args, exc=exc), ROOT)
                self.assertIn("RAISED", out.stdout, out.stderr)
                self.assertIn(text, out.stdout)
                self.assertEqual(out.stderr, "", args)

    def test_missing_folder(self):
        missing = os.path.join(ROOT, "no-such-folder")
        out = run(SCRIPT.format(args="", exc="PipelineError"), missing)
        self.assertIn("RAISED datasetsrc", out.stdout, out.stderr)
        self.assertIn(missing, out.stdout)
        self.assertEqual(out.stderr, "")

    def test_corrupt_file_fails_with_on_error_fail(self):
        bad = os.path.join(ROOT, "class0", "zz-broken.jpg")
        with open(bad, "wb") as f:
            f.write(b"\xff\xd8\xff\xe0 this is not a JPEG")
        try:
            out = run(SCRIPT.format(args="on_error='fail'",
                                    exc="PipelineError"), ROOT)
            self.assertIn("RAISED", out.stdout, out.stderr)
            self.assertIn("zz-broken.jpg", out.stdout)
            # skipped with a warning by default
            out = run(SCRIPT.format(args="", exc="PipelineError"), ROOT)
            self.assertIn("NO ERROR", out.stdout, out.stderr)
            self.assertIn("zz-broken.jpg", out.stderr)
            self.assertIn("RuntimeWarning", out.stderr)
        finally:
            os.unlink(bad)

    def test_from_pipeline(self):
        code = SCRIPT.replace(
            "Loader(sys.argv[1], batch_size=2, width=8, height=8, {args})",
            "Loader.from_pipeline({args})")
        for args, text in (
                ("'datasetsrc locaton=x ! imagedec ! augment ! batcher'",
                 'did you mean "location"'),
                ("'datasetsrc location=x ! imagdec ! augment ! batcher'",
                 'did you mean "imagedec"'),
                ("'datasetsrc location=x ! imagedec ! augment'",
                 "ends in a batcher")):
            with self.subTest(args=args):
                out = run(code.format(args=args, exc="ValueError"), ROOT)
                self.assertIn("RAISED", out.stdout, out.stderr)
                self.assertIn(text, out.stdout)
                self.assertEqual(out.stderr, "")


if __name__ == "__main__":
    unittest.main()
