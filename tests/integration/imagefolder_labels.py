#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""datasetsrc against torchvision's ImageFolder: same classes, same sample
order, same labels, on a tree whose class order depends on case, punctuation
and non-ASCII names, with nested folders and files the filter must skip.

Usage: imagefolder_labels.py DUMP-SAMPLES  (exits 77 without torchvision)."""
import os
import subprocess
import sys
import tempfile

try:
    from torchvision.datasets import ImageFolder
except ImportError as e:  # the test command installs it; say why we skip
    print(f"SKIP: torchvision is not importable ({e})")
    sys.exit(77)

# A valid 1x1 JPEG is not needed: datasetsrc only reads bytes here.
JPEG_BYTES = b"\xff\xd8\xff\xd9"

CLASSES = ["b", "B", "a", "A", "_x", "Zeta", "\u00e9clair", "z9", "z10", ".hidden"]
FILES = ["img1.jpg", "IMG0.JPEG", "x.jpeg", "sub/deep.jpg", "sub.d/e.jpg",
         "sub/inner/f.JPG", "notes.txt", "pic.png"]


def main():
    dump = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="gst-train-labels-") as root:
        for c in CLASSES:
            for f in FILES:
                path = os.path.join(root, c, f)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as fh:
                    fh.write(JPEG_BYTES)

        ours = subprocess.run(
            [dump, f'datasetsrc location="{root}" shuffle=false ! fakesink name=sink'],
            check=True, capture_output=True, text=True).stdout.splitlines()
        classes = [line.split("\t")[2] for line in ours if line.startswith("class\t")]
        samples = [(line.split("\t")[6], int(line.split("\t")[2]))
                   for line in ours if line.startswith("sample\t")]

        reference = ImageFolder(
            root, is_valid_file=lambda p: p.lower().endswith((".jpg", ".jpeg")))

        assert classes == reference.classes, (classes, reference.classes)
        assert samples == reference.samples, "\n".join(
            f"{a}  vs  {b}" for a, b in zip(samples, reference.samples) if a != b)
        assert len(samples) == len(CLASSES) * 6
    print(f"ok: {len(classes)} classes, {len(samples)} samples, same as ImageFolder")


if __name__ == "__main__":
    main()
