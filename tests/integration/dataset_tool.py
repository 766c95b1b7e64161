#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""gst-train-dataset on IDX files this test writes: the tree, the labels, the
pixels (decoded with PIL), gzip and plain input alike, and the errors.

Usage: dataset_tool.py GST-TRAIN-DATASET"""
import gzip
import os
import random
import struct
import subprocess
import sys
import tempfile

from PIL import Image


def idx_images(images):
    n, rows, cols = len(images), len(images[0]), len(images[0][0])
    body = bytes(v for img in images for row in img for v in row)
    return struct.pack(">IIII", 0x803, n, rows, cols) + body


def idx_labels(labels):
    return struct.pack(">II", 0x801, len(labels)) + bytes(labels)


def run(tool, *args):
    return subprocess.run([tool, *args], capture_output=True, text=True)


def main():
    tool = sys.argv[1]
    rng = random.Random(5)
    rows, cols, n = 12, 10, 40
    # Smooth images, so JPEG at quality 95 keeps them within a few levels.
    images = [[[min(255, (r * 20 + c * 7 + i * 3) % 256) for c in range(cols)]
               for r in range(rows)] for i in range(n)]
    labels = [rng.randrange(3) for _ in range(n)]

    with tempfile.TemporaryDirectory(prefix="gst-train-tool-") as tmp:
        paths = {}
        for name, data in (("img", idx_images(images)), ("lbl", idx_labels(labels))):
            paths[name] = os.path.join(tmp, name + ".idx")
            with open(paths[name], "wb") as f:
                f.write(data)
            with gzip.open(paths[name] + ".gz", "wb") as f:
                f.write(data)

        for suffix in ("", ".gz"):
            out = os.path.join(tmp, "out" + suffix.replace(".", "-"))
            res = run(tool, "idx", "--images", paths["img"] + suffix,
                      "--labels", paths["lbl"] + suffix, "--output", out,
                      "--class-names", "cat,dog,eel")
            assert res.returncode == 0, res.stderr
            classes = sorted(d for d in os.listdir(out) if not d.startswith("."))
            assert classes == ["0_cat", "1_dog", "2_eel"], classes
            seen = 0
            for label, cls in enumerate(classes):
                for fname in sorted(os.listdir(os.path.join(out, cls))):
                    index = int(fname.split(".")[0])
                    assert labels[index] == label, (fname, cls)
                    img = Image.open(os.path.join(out, cls, fname))
                    assert img.size == (cols, rows) and img.mode == "L"
                    pixels = list(img.getdata())
                    want = [v for row in images[index] for v in row]
                    err = max(abs(a - b) for a, b in zip(pixels, want))
                    assert err <= 8, f"{fname}: max error {err}"
                    seen += 1
            assert seen == n, seen
            # A second run finds the tree complete and leaves it alone.
            again = run(tool, "idx", "--images", paths["img"] + suffix,
                        "--labels", paths["lbl"] + suffix, "--output", out,
                        "--class-names", "cat,dog,eel")
            assert again.returncode == 0 and "already complete" in again.stdout, again

        def expect_error(args, *parts):
            res = run(tool, *args)
            assert res.returncode == 1, (args, res.returncode, res.stderr)
            for part in parts:
                assert part in res.stderr, (part, res.stderr)

        short = os.path.join(tmp, "short.idx")
        with open(short, "wb") as f:
            f.write(idx_images(images)[:-7])
        expect_error(["idx", "--images", short, "--labels", paths["lbl"],
                      "--output", os.path.join(tmp, "e1")], short, "truncated")
        expect_error(["idx", "--images", paths["lbl"], "--labels", paths["img"],
                      "--output", os.path.join(tmp, "e2")], "swapped")
        expect_error(["idx", "--images", paths["img"], "--labels", paths["lbl"],
                      "--output", os.path.join(tmp, "e3"), "--class-names", "a,b"],
                     "out of range")
        expect_error(["idx", "--images", os.path.join(tmp, "missing.idx"),
                      "--labels", paths["lbl"], "--output", os.path.join(tmp, "e4")],
                     "missing.idx")
    print(f"ok: {n} images in 3 classes, plain and gzip; 4 error cases")


if __name__ == "__main__":
    main()
