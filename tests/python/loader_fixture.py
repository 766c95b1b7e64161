# SPDX-License-Identifier: LGPL-2.1-or-later
"""Shared by the Loader's tests: a small ImageFolder of real JPEGs, written
once per test process into a temporary folder."""

import atexit
import os
import shutil
import tempfile

import numpy as np
from PIL import Image


def make_dataset(classes=3, per_class=20, size=(64, 48), seed=0, big=False):
    """An ImageFolder tree of classes x per_class JPEGs of random content;
    returns its root. big=True writes 1600x1200 photos-sized images, slow to
    decode."""
    root = tempfile.mkdtemp(prefix="gst-train-loader-")
    atexit.register(shutil.rmtree, root, True)
    rng = np.random.default_rng(seed)
    w, h = (1600, 1200) if big else size
    for c in range(classes):
        folder = os.path.join(root, f"class{c}")
        os.makedirs(folder)
        for i in range(per_class):
            # smooth gradients plus noise: JPEG-like content, not pure noise
            y, x = np.mgrid[0:h, 0:w]
            base = (x * rng.uniform(0.1, 1) + y * rng.uniform(0.1, 1)) % 256
            pixels = np.stack([base, base[::-1], base[:, ::-1]], axis=-1)
            pixels = pixels + rng.normal(0, 20, pixels.shape)
            Image.fromarray(np.clip(pixels, 0, 255).astype("uint8")).save(
                os.path.join(folder, f"{i:03d}.jpg"), quality=90)
    return root


def batches(loader):
    """One epoch of loader as a list of tuples of cloned tensors."""
    return [tuple(t.clone() for t in batch) for batch in loader]
