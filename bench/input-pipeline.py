#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The whole input stage (read, decode, random-resized crop to 224, flip,
batch of 256) against torchvision's DataLoader and DALI's CPU pipeline on the
same corpus, plus echo alone in buffers per second.

    flock /tmp/gt-bench.lock bench/input-pipeline.py [--runs 5] [--count 2000]
        [--epochs 2] [--quick] [--dali]

Builds its own release tree (build-bench/), makes the corpus with
bench/make-corpus.py, prints a Markdown table and writes it to
docs/benchmarks/input-pipeline.md (--quick: bench/out/input-pipeline-quick.md).
Rows on one core are pinned with taskset -c 0; rows on two cores are pinned
with taskset -c 0,1 (on a machine of two cores, both). The "default
properties" rows set nothing but the locations, seeds, epochs, output size and
batch size: the thread budget (the cores the process may run on) decides the
threads. The load average before and after is in the report.
Each figure is the median of --runs runs, interleaved; wall time of a whole
run (process start included, about 0.1 s, stated in the report).

DALI comes from PyPI (nvidia-dali-cuda130, about 200 MB), not Debian: --dali
installs it into a virtual environment under bench/out/dali-venv and adds its
rows (--dali-python PATH uses another environment's python instead); if it
cannot run on the machine, the report says why.
"""
import argparse
import datetime
import os
import platform
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "out")
BUILD = os.path.join(ROOT, "build-bench")
SYSTEM_PYTHON = "/usr/bin/python3"
KEEP_MARKER = "<!-- Written by hand from here on: bench/input-pipeline.py keeps it. -->"

TORCH_SCRIPT = r"""
import sys, time, torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms
root, workers, epochs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(1)
tf = transforms.Compose([transforms.RandomResizedCrop(224),
                         transforms.RandomHorizontalFlip(),
                         transforms.PILToTensor()])
ds = datasets.ImageFolder(root, transform=tf)
loader = DataLoader(ds, batch_size=256, shuffle=True, num_workers=workers,
                    drop_last=True, persistent_workers=workers > 0)
n = 0
start = time.perf_counter()
for _ in range(epochs):
    for images, labels in loader:
        assert images.shape[1:] == (3, 224, 224) and images.dtype == torch.uint8
        n += images.shape[0]
print(n, time.perf_counter() - start)
"""

DALI_SCRIPT = r"""
import sys, time
from nvidia.dali import pipeline_def, fn, types
root, threads, epochs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
# "fused": DALI's decoders.image_random_crop, which decodes only the crop
# (libjpeg-turbo's region decode on the CPU), then resize.
fused = len(sys.argv) > 4 and sys.argv[4] == "fused"

@pipeline_def(batch_size=256, num_threads=threads, device_id=None)
def train():
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True,
                                    name="reader")
    if fused:
        images = fn.decoders.image_random_crop(jpegs, device="cpu",
                                               output_type=types.RGB)
        images = fn.resize(images, size=(224, 224))
    else:
        images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
        images = fn.random_resized_crop(images, size=(224, 224))
    images = fn.flip(images, horizontal=fn.random.coin_flip())
    return images, labels

pipe = train()
pipe.build()
size = pipe.epoch_size("reader")
n = 0
start = time.perf_counter()
for _ in range(epochs):
    for _ in range(size // 256):
        images, labels = pipe.run()
        n += len(labels)
print(n, time.perf_counter() - start)
"""


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def timed(cmd, env=None):
    """Runs cmd; returns its wall time in seconds."""
    start = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if res.returncode != 0:
        raise RuntimeError("%s failed:\n%s%s" % (" ".join(cmd), res.stdout[-2000:],
                                                 res.stderr[-2000:]))
    return wall, res.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dali", action="store_true",
                    help="install DALI from PyPI into bench/out/dali-venv and measure it")
    ap.add_argument("--dali-python", default=os.environ.get("DALI_PYTHON"))
    args = ap.parse_args()
    if args.dali and not args.dali_python:
        venv = os.path.join(OUT, "dali-venv")
        args.dali_python = os.path.join(venv, "bin", "python")
        if not os.path.exists(args.dali_python):
            sh([SYSTEM_PYTHON, "-m", "venv", venv])
        sh([args.dali_python, "-m", "pip", "install", "-q", "nvidia-dali-cuda130"])
    if args.quick:
        args.runs, args.count, args.epochs = 1, 512, 1
    # Every option spelled out, so that the line in the report reruns it.
    cmdline = "flock /tmp/gt-bench.lock bench/input-pipeline.py --runs %d --count %d " \
        "--epochs %d%s%s" % (args.runs, args.count, args.epochs,
                             " --quick" if args.quick else "",
                             " --dali" if args.dali else "")

    os.makedirs(OUT, exist_ok=True)
    if not os.path.exists(os.path.join(BUILD, "build.ninja")):
        sh(["meson", "setup", BUILD, "--buildtype=release"], cwd=ROOT)
    sh(["ninja", "-C", BUILD], cwd=ROOT)
    corpus = os.path.join(ROOT, "bench", "corpus" if args.count == 2000
                          else "corpus-%d" % args.count)
    sh([SYSTEM_PYTHON, os.path.join(ROOT, "bench", "make-corpus.py"),
        "--count", str(args.count), "--out", corpus])
    files = [os.path.join(d, f) for d, _, fs in os.walk(corpus) for f in fs
             if f.endswith(".jpg")]
    count = len(files)
    batches_per_epoch = count // 256
    images = batches_per_epoch * 256 * args.epochs
    # datasetsrc streams the epochs back to back and the batcher drops only
    # the last partial batch, so our pipeline delivers a few more batches
    # than loaders that drop one per epoch; each row counts what it delivers.
    gst_images = count * args.epochs // 256 * 256

    env = dict(os.environ, GST_PLUGIN_PATH_1_0=os.path.join(BUILD, "gst-plugins"),
               GST_REGISTRY_1_0=os.path.join(OUT, "registry-pipeline.bin"))
    env.pop("GST_PLUGIN_PATH", None)

    def gst(threads, between="", dec_extra=""):
        """threads None: default properties (the thread budget decides)."""
        if threads is None:
            src_t = dec_t = aug_t = ""
        else:
            src_t = " n-threads=%d" % (0 if threads == 1 else 2)
            dec_t = aug_t = " n-threads=%d" % threads
        return ["gst-launch-1.0", "-q"] + (
            "datasetsrc location=%s num-epochs=%d seed=1%s ! imagedec%s%s ! "
            "%saugment width=224 height=224 seed=1%s ! batcher batch-size=256 "
            "! fakesink" % (corpus, args.epochs, src_t, dec_t, dec_extra,
                            between, aug_t)).split()

    one = ["taskset", "-c", "0"]
    two = ["taskset", "-c", "0,1"]
    setups = [
        ("gd1", 1, "gst-train: datasetsrc ! imagedec ! augment ! batcher, default properties",
         lambda: one + gst(None), "gst"),
        ("gd2", 2, "gst-train, default properties",
         lambda: two + gst(None), "gst"),
        ("gn1", 1, "gst-train, default properties but imagedec decode-region=false "
         "(whole images decoded, as before decode-region)",
         lambda: one + gst(None, dec_extra=" decode-region=false"), "gst"),
        ("g1", 1, "gst-train, n-threads=1 each (datasetsrc n-threads=0)",
         lambda: one + gst(1), "gst"),
        ("g2", 2, "gst-train, n-threads=2 each",
         lambda: two + gst(2), "gst"),
        ("g3", 2, "gst-train, n-threads=1 each and a queue between imagedec and augment",
         lambda: two + gst(1, "queue max-size-buffers=8 ! "), "gst"),
        ("t1", 1, "torchvision DataLoader, num_workers=1 (RandomResizedCrop, flip, PILToTensor)",
         lambda: one + [SYSTEM_PYTHON, "-c", TORCH_SCRIPT, corpus, "1", str(args.epochs)], "py"),
        ("t2", 2, "torchvision DataLoader, num_workers=2",
         lambda: two + [SYSTEM_PYTHON, "-c", TORCH_SCRIPT, corpus, "2", str(args.epochs)], "py"),
    ]
    dali_note = None
    if args.dali_python:
        probe = subprocess.run(
            one + [args.dali_python, "-c", DALI_SCRIPT, corpus, "1", "1"],
            capture_output=True, text=True)
        if probe.returncode == 0:
            setups += [
                ("d1", 1, "DALI CPU pipeline, num_threads=1 (readers.file, decoders.image cpu, "
                 "random_resized_crop, flip)",
                 lambda: one + [args.dali_python, "-c", DALI_SCRIPT, corpus, "1",
                                str(args.epochs)], "py"),
                ("d2", 2, "DALI CPU pipeline, num_threads=2",
                 lambda: two + [args.dali_python, "-c", DALI_SCRIPT, corpus, "2",
                          str(args.epochs)], "py"),
                ("dc1", 1, "DALI CPU pipeline decoding only the crop, num_threads=1 "
                 "(decoders.image_random_crop, resize, flip)",
                 lambda: one + [args.dali_python, "-c", DALI_SCRIPT, corpus, "1",
                                str(args.epochs), "fused"], "py"),
                ("dc2", 2, "DALI decoding only the crop, num_threads=2",
                 lambda: two + [args.dali_python, "-c", DALI_SCRIPT, corpus, "2",
                                str(args.epochs), "fused"], "py"),
            ]
        else:
            dali_note = "DALI did not run on this machine: " + (
                probe.stderr.strip().splitlines() or ["(no message)"])[-1]
    else:
        dali_note = ("DALI not measured: no --dali-python given (it is a PyPI wheel, "
                     "nvidia-dali-cuda130, installed into a virtual environment)")

    # Echo alone, on small buffers, against the same pipeline without echo.
    n_buffers = 200000 if args.quick else 2000000
    fakesrc = "fakesrc num-buffers=%d sizetype=fixed sizemax=16 filltype=nothing" % n_buffers
    echo_setups = [
        ("e0", "fakesrc ! fakesink (no echo)",
         one + ["gst-launch-1.0", "-q"] + ("%s ! fakesink" % fakesrc).split(), n_buffers),
        ("e1", "fakesrc ! echo factor=2 shuffle-buffer-size=1024 ! fakesink",
         one + ["gst-launch-1.0", "-q"] + ("%s ! echo factor=2 shuffle-buffer-size=1024 "
                                           "! fakesink" % fakesrc).split(), 2 * n_buffers),
    ]

    load_before = os.getloadavg()
    results = {s[0]: [] for s in setups}
    results.update({e[0]: [] for e in echo_setups})
    for run in range(args.runs):
        print("run %d/%d" % (run + 1, args.runs), file=sys.stderr)
        for f in files:  # page cache warm for everybody
            with open(f, "rb") as fh:
                fh.read()
        for sid, cores, label, cmd, kind in setups:
            wall, out = timed(cmd(), env=env)
            if kind == "py":
                n, seconds = out.split()
                results[sid].append((int(n), wall))
            else:
                results[sid].append((gst_images, wall))
            print("  %s: %.0f images/s" % (sid, results[sid][-1][0] / wall),
                  file=sys.stderr)
        for sid, label, cmd, n in echo_setups:
            wall, _ = timed(cmd, env=env)
            results[sid].append((n, wall))
            print("  %s: %.0f buffers/s" % (sid, n / wall), file=sys.stderr)

    load_after = os.getloadavg()

    def med(sid):
        rates = [n / w for n, w in results[sid]]
        return statistics.median(rates), min(rates), max(rates)

    # The goals of the thread budget, from the medians of this run.
    goals = ["| Ratio (medians of this run) | value | goal |", "|---|---:|---:|"]
    gd1, gd2 = med("gd1")[0], med("gd2")[0]
    # The same ratio per interleaved round: each round ran both rows within
    # a minute of each other, so the load they met was alike.
    per_round = sorted(b[0] / b[1] / (a[0] / a[1])
                       for a, b in zip(results["gd1"], results["gd2"]))
    goals.append("| gst-train default properties, 2 cores / 1 core | %.2fx "
                 "(per round: %s) | >= 1.8x |" % (
                     gd2 / gd1, ", ".join("%.2f" % r for r in per_round)))
    goals.append("| gst-train default on 2 cores / torchvision num_workers=2 | "
                 "%.2fx | >= 2x |" % (gd2 / med("t2")[0]))
    if "d2" in results:
        goals.append("| gst-train default on 2 cores / DALI num_threads=2 | "
                     "%.2fx | >= 1.3x |" % (gd2 / med("d2")[0]))
    if "dc2" in results:
        goals.append("| gst-train default on 2 cores / DALI decoding only the crop, "
                     "num_threads=2 | %.2fx | |" % (gd2 / med("dc2")[0]))
    # Per round too: the machine's speed drifts by 10-20% within minutes,
    # which a ratio of medians of five rounds does not cancel.
    per_round = sorted(a[1] / b[1] for a, b in zip(results["gn1"], results["gd1"]))
    goals.append("| gst-train default, 1 core: decode-region on / off | %.2fx "
                 "(per round: %s) | |" % (gd1 / med("gn1")[0],
                                          ", ".join("%.2f" % r for r in per_round)))

    ref_t = med("t1")[0]
    ref_d = med("d1")[0] if "d1" in results else None
    lines = ["| Setup | Cores | images/s (median) | min-max | per core | "
             "per core vs torchvision | per core vs DALI |", "|---|---:|---:|---:|---:|---:|---:|"]
    for sid, cores, label, _, _ in setups:
        m, lo, hi = med(sid)
        lines.append("| %s | %d | %.0f | %.0f-%.0f | %.0f | %.2fx | %s |" % (
            label, cores, m, lo, hi, m / cores, (m / cores) / ref_t,
            "%.2fx" % ((m / cores) / ref_d) if ref_d else "n/a"))
    echo_lines = ["| Setup | buffers/s out (median) | min-max |", "|---|---:|---:|"]
    for sid, label, _, _ in echo_setups:
        m, lo, hi = med(sid)
        echo_lines.append("| %s | %.0f | %.0f-%.0f |" % (label, m, lo, hi))

    cpu = re.search(r"Model name:\s*(.*)", sh(["lscpu"]).stdout)
    torch_ver = sh([SYSTEM_PYTHON, "-c", "import torch, torchvision; "
                    "print(torch.__version__, torchvision.__version__)"]).stdout.split()
    report = """# Input pipeline: read, decode, random-resized crop, flip, batch

Generated by `%s` on %s.

- CPU: %s, %d cores; Python %s; torch %s, torchvision %s (Debian); GStreamer %s
- Corpus: %d JPEGs from `bench/make-corpus.py` (the input-stage corpus: photographs of Debian's
  mate-backgrounds, about 500x375, quality 90, 4:2:0); %d epochs, batches of 256. torchvision
  and DALI drop the last partial batch of each epoch (%d images per run); gst-train streams the
  epochs back to back and drops only the very last one (%d images per run). Each row counts the
  images it delivered in batches.
- Every setup does the same work: read the file, decode to RGB, draw a RandomResizedCrop box
  (scale 0.08-1, ratio 3/4-4/3), resize it to 224x224 (bilinear, antialiased), flip with
  probability 0.5, gather 256 images and their labels into one uint8 batch.
- Wall time of the whole process, start-up included; median of %d interleaved runs.
- Load average (1, 5, 15 min) before: %s; after: %s (the machine is shared; the
  load counts this benchmark's own processes too).
- %s

%s

%s

## Echo alone

Buffers of 16 bytes from `fakesrc`, %d in, pinned to one core; echo at factor 2 with a
1024-item shuffle buffer pushes twice as many. The first row is the same pipeline without echo.

%s
""" % (cmdline, datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
       cpu.group(1) if cpu else "?", os.cpu_count(), platform.python_version(),
       torch_ver[0], torch_ver[1],
       sh(["gst-launch-1.0", "--version"]).stdout.split("\n")[1].split()[-1],
       count, args.epochs, images, gst_images, args.runs,
       " ".join("%.2f" % x for x in load_before),
       " ".join("%.2f" % x for x in load_after),
       dali_note or "DALI measured in a virtual environment (nvidia-dali-cuda130 from PyPI)",
       "\n".join(lines), "\n".join(goals), n_buffers, "\n".join(echo_lines))
    dest = os.path.join(OUT, "input-pipeline-quick.md") if args.quick else \
        os.path.join(ROOT, "docs", "benchmarks", "input-pipeline.md")
    # The hand-written part of the document (the thread budget and the
    # scaling model) follows the marker and is kept as it is.
    kept = ""
    if os.path.exists(dest):
        with open(dest) as fh:
            old = fh.read()
        if KEEP_MARKER in old:
            kept = "\n" + old[old.index(KEEP_MARKER):]
    with open(dest, "w") as fh:
        fh.write(report + kept)
    print(report)


if __name__ == "__main__":
    main()
