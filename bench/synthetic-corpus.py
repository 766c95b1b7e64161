#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Write a synthetic ImageFolder of photo-sized JPEGs where no dataset exists.

    bench/synthetic-corpus.py --out DIR [--count 2048] [--classes 10]
        [--seed 0] [--quality 90]

For the GPU machine, which has PIL and numpy but no datasets and no network
(bench/make-corpus.py needs Debian's photographs). Image i is 500x375 or
375x500: a smooth random field (a coarse grid of random colours, upscaled
bicubically) plus fine noise, so that its JPEG is about as large and as slow
to decode as a photograph's at quality 90, 4:2:0; it goes to class
i mod --classes, as OUT/classNN/NNNNN.jpg. Everything is derived from --seed
and i: the same options give the same files.
"""
import argparse
import os

import numpy as np
from PIL import Image


def image(index, seed):
    rng = np.random.default_rng([seed, index])
    width, height = (500, 375) if rng.random() < 0.7 else (375, 500)
    coarse = rng.integers(0, 256, size=(6, 8, 3), dtype=np.uint8)
    base = Image.fromarray(coarse).resize((width, height), Image.BICUBIC)
    pixels = np.asarray(base, dtype=np.int16)
    pixels = pixels + rng.normal(0, 12, size=pixels.shape).astype(np.int16)
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--count", type=int, default=2048)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quality", type=int, default=90)
    args = ap.parse_args()
    for i in range(args.count):
        folder = os.path.join(args.out, "class%02d" % (i % args.classes))
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "%05d.jpg" % i)
        if not os.path.exists(path):
            image(i, args.seed).save(path, quality=args.quality, subsampling=2)
    print("wrote %d images in %d classes under %s" % (args.count, args.classes, args.out))


if __name__ == "__main__":
    main()
