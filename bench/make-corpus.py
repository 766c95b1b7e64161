#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Build a reproducible ImageNet-like JPEG corpus for the input-stage benchmark.

The images are random crops of the real photographs that Debian's
mate-backgrounds package installs under /usr/share/backgrounds/mate, resized
so that the short side is 300-400 pixels with an aspect ratio between 3:4 and
4:3 (ImageNet's typical 500x375 is in that range), then saved with PIL as
baseline JPEG, quality 90, 4:2:0 chroma subsampling, no metadata.

Layout (torchvision ImageFolder):

    OUT/class00/00000.jpg
    OUT/class01/00001.jpg
    ...

Image i goes to class (i mod --classes); file names are numbered over the
whole corpus, so a flat numbered view (for multifilesrc) is a set of links.

Everything is derived from --seed and the image index alone: the same options
give byte-identical files, and image i does not depend on --count. Running the
script again on a complete corpus does nothing; an interrupted run resumes.

Run it with Debian's interpreter, which has python3-pil:
    /usr/bin/python3 bench/make-corpus.py [--count 2000] [--out bench/corpus]
"""

import argparse
import glob
import json
import math
import multiprocessing
import os
import random
import shutil
import sys

try:
    from PIL import Image, ImageOps
except ImportError:  # pragma: no cover - depends on the host
    sys.exit("make-corpus.py: needs PIL (apt-get install python3-pil; "
             "run with /usr/bin/python3)")

SOURCE_DIR = "/usr/share/backgrounds/mate"
# Not photographs, or the same photograph again at another size. The PNG files
# of mate-backgrounds are all rendered graphics (flat colours, gradients), so
# only the JPEG photographs are used.
SKIP = {
    "GreenTraditional.jpg",         # logo on a flat grey background
    "Elephants.jpg",                # = Elephants_5640x3172.jpg, smaller
    "Elephants_3840x2160.jpg",      # = Elephants_5640x3172.jpg, smaller
}
FORMAT_VERSION = 2  # bump when the way images are made changes
STAMP = ".corpus-complete"
PARAMS = ".corpus-params"

_sources = []  # (name, PIL image), loaded once, shared with worker processes


def source_files():
    files = sorted(glob.glob(os.path.join(SOURCE_DIR, "**", "*.jpg"),
                             recursive=True))
    files = [f for f in files if os.path.basename(f) not in SKIP]
    if not files:
        sys.exit("make-corpus.py: no photographs in %s "
                 "(apt-get install mate-backgrounds)" % SOURCE_DIR)
    return files


def load_sources(files):
    out = []
    for f in files:
        with Image.open(f) as im:
            im = ImageOps.exif_transpose(im).convert("RGB")
        out.append((os.path.basename(f), im))
    return out


def image_path(out_dir, classes, i):
    return os.path.join(out_dir, "class%02d" % (i % classes), "%05d.jpg" % i)


def make_one(job):
    out_dir, classes, seed, quality, i = job
    path = image_path(out_dir, classes, i)
    if os.path.exists(path):
        return 0
    rng = random.Random("gst-train-corpus:%d:%d" % (seed, i))
    _, src = _sources[rng.randrange(len(_sources))]
    sw, sh = src.size

    # Output geometry: short side 300-400, aspect log-uniform in [3/4, 4/3].
    short = rng.randint(300, 400)
    aspect = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))  # w/h
    if aspect >= 1:
        ow, oh = round(short * aspect), short
    else:
        ow, oh = short, round(short / aspect)

    # Crop with the output's aspect ratio, 50-100% of the largest such crop
    # (the photographs are smooth macro shots: smaller crops get even smoother).
    max_w = min(sw, sh * ow / oh)
    frac = rng.uniform(0.5, 1.0)
    cw = max(max_w * frac, ow / 2)
    ch = cw * oh / ow
    x0 = rng.uniform(0, sw - cw)
    y0 = rng.uniform(0, sh - ch)
    im = src.resize((ow, oh), Image.BICUBIC, box=(x0, y0, x0 + cw, y0 + ch),
                    reducing_gap=3.0)
    if rng.random() < 0.5:
        im = im.transpose(Image.FLIP_LEFT_RIGHT)

    tmp = path + ".tmp%d" % os.getpid()
    im.save(tmp, "JPEG", quality=quality, subsampling=2, optimize=False,
            progressive=False)
    os.replace(tmp, path)
    return 1


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=2000,
                    help="number of images (default 2000)")
    ap.add_argument("--out", default=os.path.join(here, "corpus"),
                    help="output folder (default bench/corpus)")
    ap.add_argument("--classes", type=int, default=10,
                    help="class folders (default 10)")
    ap.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    ap.add_argument("--quality", type=int, default=90,
                    help="JPEG quality (default 90)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="worker processes (default: one per CPU)")
    args = ap.parse_args()
    if args.count < 1 or args.classes < 1 or args.count > 99999:
        ap.error("--count must be 1..99999 and --classes at least 1")

    files = source_files()
    params = {
        "version": FORMAT_VERSION,
        "count": args.count,
        "classes": args.classes,
        "seed": args.seed,
        "quality": args.quality,
        "subsampling": "4:2:0",
        "sources": [os.path.basename(f) for f in files],
    }
    out = args.out
    stamp = os.path.join(out, STAMP)
    pfile = os.path.join(out, PARAMS)

    def read_json(p):
        try:
            with open(p) as fh:
                return json.load(fh)
        except (OSError, ValueError):
            return None

    if read_json(stamp) == params and all(
            os.path.exists(image_path(out, args.classes, i))
            for i in range(args.count)):
        print("make-corpus.py: %s already complete (%d images)"
              % (out, args.count))
        return

    if os.path.isdir(out) and read_json(pfile) != params:
        # Different options (or an unknown folder): start from scratch, but
        # only delete what this script makes.
        if os.listdir(out) and not os.path.exists(pfile):
            sys.exit("make-corpus.py: %s exists and was not made by this "
                     "script; remove it or pick another --out" % out)
        for d in glob.glob(os.path.join(out, "class[0-9][0-9]")):
            shutil.rmtree(d)
        for p in (stamp, pfile):
            if os.path.exists(p):
                os.remove(p)
    os.makedirs(out, exist_ok=True)
    if os.path.exists(stamp):
        os.remove(stamp)
    with open(pfile, "w") as fh:
        json.dump(params, fh, indent=1)
    for c in range(args.classes):
        os.makedirs(os.path.join(out, "class%02d" % c), exist_ok=True)
    for p in glob.glob(os.path.join(out, "class*", "*.tmp*")):
        os.remove(p)

    print("make-corpus.py: writing %d images to %s from %d photographs"
          % (args.count, out, len(files)), flush=True)
    _sources.extend(load_sources(files))
    jobs = [(out, args.classes, args.seed, args.quality, i)
            for i in range(args.count)]
    if args.jobs > 1:
        with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
            made = sum(pool.imap_unordered(make_one, jobs, chunksize=16))
    else:
        made = sum(map(make_one, jobs))

    with open(stamp, "w") as fh:
        json.dump(params, fh, indent=1)
    print("make-corpus.py: wrote %d new images; %s complete" % (made, out))


if __name__ == "__main__":
    main()
