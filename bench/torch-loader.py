#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""gst_train.torch.Loader against its peers: the same photographs, the same
224x224 RandomResizedCrop + flip, batches of 64, a consumer that does
nothing; then the Loader's own cost per batch, and its memory over epochs.

    flock /tmp/gt-bench.lock bench/torch-loader.py [--rounds 5] [--count 2000]
        [--epochs 3] [--commit REV] [--quick] [--no-ffcv] [--no-dali]

Rows of the main table, each in a process of its own, once per round, the
rounds interleaved (L Lc G T F D Dc, L Lc G T ...), medians reported:
  L   gst_train.torch.Loader(corpus, batch_size=64, width=224, height=224,
      crop="random-resized", scale_min=0.08, flip=0.5, shuffle=True, seed=0,
      drop_last=True, num_threads=0), contiguous NCHW uint8
  Lc  the same with channels_last=True (the batcher's NHWC bytes as a
      channels_last tensor)
  G   gst-launch-1.0 of the pipeline the Loader builds (its elements and
      every property it set, read back from the Loader) into fakesink, all
      epochs in one run
  T   torchvision DataLoader over ImageFolder (PIL decode, RandomResizedCrop,
      RandomHorizontalFlip, PILToTensor), num_workers = cores,
      pin_memory=True, persistent_workers=True
  F   FFCV 1.0.2's Loader over a .beton of the same photographs
      (RandomResizedCropRGBImageDecoder, RandomHorizontalFlip, ToTensor,
      ToTorchImage), num_workers = cores; the conversion is timed apart
  D   DALI's CPU pipeline (readers.file, decoders.image, random_resized_crop,
      crop_mirror_normalize to uint8 CHW with a coin-flip mirror) through its
      PyTorch iterator, num_threads = cores
  Dc  the same with decoders.image_random_crop (DALI decodes only the crop)
Each row times, inside its process, every batch from the start of the first
epoch (the first `for`; for gst-launch, "Setting pipeline to PAUSED", each
batch's arrival read from `gst-launch-1.0 -v` as fakesink posts it): images/s
over all epochs, and over the epochs after the first (FFCV compiles its
pipeline with numba during the first).

Then the Python cost per batch: Loader.from_pipeline over 8x8 JPEGs with
echo factor=50 (the C side does about a tenth of a millisecond per batch)
against gst-launch-1.0 of the same line, on both cores and on one
(taskset -c 0, where the difference is everything the Python side adds),
the main thread's CPU time inside each next(), and a cProfile of one epoch.
Last, VmRSS after each of 20 epochs of a 256-image corpus.

FFCV and DALI come from PyPI into virtual environments under bench/out/tl/
that see Debian's torch (--system-site-packages), numpy held at Debian's
version: installing them into the system python would replace numpy
(see the report). Builds its own release tree (build-tlbench/), makes the
corpus with bench/make-corpus.py, writes docs/benchmarks/torch-loader.md
(--quick: bench/out/torch-loader-quick.md), keeping the hand-written part
after the marker.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "out", "tl")
SYSTEM_PYTHON = "/usr/bin/python3"
KEEP_MARKER = "<!-- Written by hand from here on: bench/torch-loader.py keeps it. -->"
BATCH = 64
SIZE = 224
FFCV_VERSION = "1.0.2"
DALI_PACKAGE = "nvidia-dali-cuda130"
# Debian packages FFCV's build and its imports need (its setup.py asks
# pkg-config for opencv4 and libturbojpeg; cv2 and numba come from Debian so
# that pip does not bring numpy 2 along).
FFCV_DEBS = ["libopencv-dev", "libturbojpeg0-dev", "pkg-config",
             "python3-opencv", "python3-numba"]
FFCV_DEPS = ["terminaltables", "pytorch_pfn_extras", "fastargs", "assertpy",
             "tqdm", "psutil"]
# fakesink keeps the last batch by default, so that the batcher cannot
# reuse its memory for the next one; the Loader's appsink keeps none.
FAKESINK = "enable-last-sample=false"
TINY_COUNT = 640
TINY_ECHO = 50


# ---------------------------------------------------------------------------
# Children: each measurement runs in a process of its own and prints one JSON
# line. Only the standard library is imported at the top, so that the venvs'
# interpreters run this same file.
# ---------------------------------------------------------------------------

def loader_kwargs(channels_last):
    return dict(batch_size=BATCH, width=SIZE, height=SIZE, crop="random-resized",
                scale_min=0.08, flip=0.5, shuffle=True, seed=0, echo=None,
                drop_last=True, num_threads=0, channels_last=channels_last)


def proc_cpu(pid):
    """CPU seconds (user + system) process pid has used, from /proc."""
    with open("/proc/%d/stat" % pid) as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_epochs(make_iter, epochs, start=None, extra_cpu=None):
    """Times every batch of `epochs` passes (from `start`, a perf_counter
    reading, or from now); the consumer drops the tensors. Returns the
    seconds and the CPU seconds (every thread of this process, plus
    extra_cpu(): worker processes) at each batch since the first pass
    began, the batches of each epoch, the images of each batch, and the
    shape and dtype of the last images."""
    times, cpus, per_epoch, sizes = [], [], [], []
    perf, cpu = time.perf_counter, time.process_time
    extra_cpu = extra_cpu or (lambda: 0.0)
    last = None
    cpu_start = cpu() + extra_cpu()
    if start is None:
        start = perf()
    for _ in range(epochs):
        n = 0
        for batch in make_iter():
            times.append(perf() - start)
            cpus.append(cpu() + extra_cpu() - cpu_start)
            sizes.append(int(batch[1].shape[0]))
            last = batch[0]
            n += 1
        per_epoch.append(n)
    return dict(times=times, cpus=cpus, per_epoch=per_epoch, sizes=sizes,
                shape=(list(last.shape), str(last.dtype), last.is_contiguous()))


def child_loader(root, epochs, channels_last):
    __import__("torch")  # loaded before the clock starts, as the peers load it
    from gst_train.torch import Loader
    t = time.perf_counter()
    loader = Loader(root, **loader_kwargs(channels_last))
    construct = time.perf_counter() - t
    res = run_epochs(lambda: loader, epochs)
    res.update(construct=construct, stats=loader.stats())
    loader.close()
    return res


def element_launch(element):
    """factory prop=value ... for the properties that differ from their
    defaults, read back from the element (enums by nick)."""
    from gi.repository import GObject
    parts = [element.get_factory().get_name()]
    for pspec in element.list_properties():
        rw = GObject.ParamFlags.READABLE | GObject.ParamFlags.WRITABLE
        if pspec.flags & rw != rw or pspec.name in ("name", "parent"):
            continue
        value = element.get_property(pspec.name)
        default = pspec.default_value
        if hasattr(value, "value_nick"):
            if default is not None and int(value) == int(default):
                continue
            text = value.value_nick
        elif isinstance(value, bool):
            if value == default:
                continue
            text = "true" if value else "false"
        elif isinstance(value, float):
            if default is not None and abs(value - default) < 1e-12:
                continue
            text = repr(value)
        elif isinstance(value, (int, str)):
            if value == default:
                continue
            text = str(value)
        else:  # caps, objects: none of ours is set by the Loader
            continue
        parts.append("%s=%s" % (pspec.name, text))
    return " ".join(parts)


def child_describe(root, channels_last):
    """The gst-launch line of the pipeline the Loader builds (without the
    epoch: datasetsrc's num-epochs and start-position are set per epoch)."""
    from gst_train.torch import Loader
    loader = Loader(root, **loader_kwargs(channels_last))
    element = loader._elements["src"]  # the Loader's own pipeline, read back
    parts = []
    while element is not None:
        name = element.get_factory().get_name()
        if name == "appsink":
            break
        line = element_launch(element)
        if name == "datasetsrc":
            line = " ".join(p for p in line.split()
                            if not p.startswith(("num-epochs=", "start-position=")))
        parts.append(line)
        pad = element.get_static_pad("src")
        peer = pad.get_peer() if pad is not None else None
        element = peer.get_parent_element() if peer is not None else None
    loader.close()
    return dict(line=" ! ".join(parts))


def child_dataloader(root, epochs):
    import torch
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms
    tf = transforms.Compose([transforms.RandomResizedCrop(SIZE),
                             transforms.RandomHorizontalFlip(),
                             transforms.PILToTensor()])
    torch.manual_seed(0)
    t = time.perf_counter()
    ds = datasets.ImageFolder(root, transform=tf)
    loader = DataLoader(ds, batch_size=BATCH, shuffle=True,
                        num_workers=os.cpu_count(), pin_memory=True,
                        persistent_workers=True, drop_last=True)
    construct = time.perf_counter() - t

    def workers_cpu():
        # the worker processes start at the first iter() and, persistent,
        # live to the end
        it = loader._iterator
        return sum(proc_cpu(w.pid) for w in getattr(it, "_workers", []))
    res = run_epochs(lambda: loader, epochs, extra_cpu=workers_cpu)
    res.update(construct=construct, pin_memory_effective=bool(
        loader.pin_memory and torch.cuda.is_available()))
    return res


def child_ffcv_write(root, beton):
    from torchvision.datasets import ImageFolder
    from ffcv.writer import DatasetWriter
    from ffcv.fields import RGBImageField, IntField
    t = time.perf_counter()
    ds = ImageFolder(root)
    # The photographs as JPEGs (quality 90, as the corpus), their own size:
    # FFCV decodes and crops them as the other rows do. ("raw" would store
    # decoded pixels and skip the JPEG decode.)
    writer = DatasetWriter(beton, {
        "image": RGBImageField(write_mode="jpg", jpeg_quality=90),
        "label": IntField()}, num_workers=os.cpu_count())
    writer.from_indexed_dataset(ds)
    return dict(seconds=time.perf_counter() - t, bytes=os.path.getsize(beton),
                images=len(ds))


def child_ffcv(beton, epochs):
    __import__("torch")
    from ffcv.fields.decoders import IntDecoder
    from ffcv.fields.rgb_image import RandomResizedCropRGBImageDecoder
    from ffcv.loader import Loader, OrderOption
    from ffcv.transforms import RandomHorizontalFlip, Squeeze, ToTensor, ToTorchImage
    t = time.perf_counter()
    loader = Loader(beton, batch_size=BATCH, num_workers=os.cpu_count(),
                    order=OrderOption.RANDOM, drop_last=True, os_cache=True, seed=0,
                    pipelines={
                        "image": [RandomResizedCropRGBImageDecoder((SIZE, SIZE)),
                                  RandomHorizontalFlip(), ToTensor(), ToTorchImage()],
                        "label": [IntDecoder(), ToTensor(), Squeeze()]})
    construct = time.perf_counter() - t
    res = run_epochs(lambda: loader, epochs)
    res.update(construct=construct)
    return res


def child_dali(root, epochs, fused):
    __import__("torch")
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

    # exec_dynamic=False: DALI 2.x's dynamic executor hands tensors over
    # under `with torch.device(...)`, which torch 1.13 does not have; the
    # other executor copies each batch into torch tensors (feed_ndarray).
    @pipeline_def(batch_size=BATCH, num_threads=os.cpu_count(), device_id=None,
                  seed=0, exec_dynamic=False)
    def train():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True,
                                        name="reader")
        if fused:
            images = fn.decoders.image_random_crop(jpegs, device="cpu",
                                                   output_type=types.RGB)
            images = fn.resize(images, size=(SIZE, SIZE))
        else:
            images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
            images = fn.random_resized_crop(images, size=(SIZE, SIZE))
        images = fn.crop_mirror_normalize(images, dtype=types.UINT8,
                                          output_layout="CHW",
                                          mirror=fn.random.coin_flip())
        return images, labels

    t = time.perf_counter()
    pipe = train()
    pipe.build()
    construct = time.perf_counter() - t
    # The iterator runs the pipeline and takes its first batch as it is
    # made: the first epoch starts there.
    start = time.perf_counter()
    it = DALIGenericIterator(pipe, ["images", "labels"], reader_name="reader",
                             last_batch_policy=LastBatchPolicy.DROP,
                             auto_reset=True)

    def batches():
        for data in it:
            yield data[0]["images"], data[0]["labels"]
    res = run_epochs(batches, epochs, start)
    res.update(construct=construct)
    return res


def child_python_cost(line, epochs, profile):
    """Loader.from_pipeline(line): per batch, the wall time, and the main
    thread's CPU time inside next(); with profile, a cProfile of one epoch."""
    __import__("torch")
    from gst_train.torch import Loader
    loader = Loader.from_pipeline(line)
    if profile:
        import cProfile
        import io
        import pstats
        prof = cProfile.Profile()
        n = 0
        prof.enable()
        for _ in loader:
            n += 1
        prof.disable()
        loader.close()
        out = io.StringIO()
        stats = pstats.Stats(prof, stream=out)
        rows = []
        for (file, lineno, func), (cc, nc, tt, ct, _) in stats.stats.items():
            rows.append(dict(where="%s:%d(%s)" % (os.path.basename(file), lineno, func)
                             if file != "~" else func,
                             calls=nc, tottime=tt, cumtime=ct))
        rows.sort(key=lambda r: -r["tottime"])
        return dict(batches=n, rows=rows[:14],
                    total=sum(r["tottime"] for r in rows))
    perf, cpu = time.perf_counter_ns, time.thread_time_ns
    epoch_walls, next_wall, next_cpu, batches = [], [], [], 0
    for _ in range(epochs):
        start = perf()
        it = iter(loader)
        n = 0
        while True:
            w0, c0 = perf(), cpu()
            try:
                next(it)
            except StopIteration:
                break
            w1, c1 = perf(), cpu()
            next_wall.append(w1 - w0)
            next_cpu.append(c1 - c0)
            n += 1
        # the whole epoch: the pipeline's start, its batches, EOS and its
        # stop, as child_c_epochs times the C pipeline
        epoch_walls.append(((perf() - start) / 1e9, n))
        batches += n
    loader.close()
    next_wall.sort()
    next_cpu.sort()
    return dict(per_batch=epoch_per_batch(epoch_walls), epochs=epoch_walls,
                batches=batches,
                wall_median=next_wall[len(next_wall) // 2] / 1e9,
                cpu_median=next_cpu[len(next_cpu) // 2] / 1e9,
                cpu_mean=sum(next_cpu) / len(next_cpu) / 1e9,
                cpu_p90=next_cpu[int(len(next_cpu) * 0.9)] / 1e9)


def epoch_per_batch(epoch_walls):
    """Seconds per batch of the quickest epoch: the machine's other work only
    ever adds time."""
    return min(w / n for w, n in epoch_walls)


def child_c_epochs(line, epochs, batches):
    """The C pipeline alone, in this process as the Loader runs it: for each
    epoch, parse line ! fakesink, PLAYING, wait for EOS on the bus, NULL.
    No Python runs per batch."""
    import gi
    gi.require_version("Gst", "1.0")
    from gi.repository import Gst
    Gst.init(None)
    epoch_walls = []
    for _ in range(epochs):
        pipeline = Gst.parse_launch(line + " ! fakesink " + FAKESINK)
        bus = pipeline.get_bus()
        start = time.perf_counter_ns()
        pipeline.set_state(Gst.State.PLAYING)
        msg = bus.timed_pop_filtered(Gst.CLOCK_TIME_NONE,
                                     Gst.MessageType.EOS | Gst.MessageType.ERROR)
        pipeline.set_state(Gst.State.NULL)
        epoch_walls.append(((time.perf_counter_ns() - start) / 1e9, batches))
        if msg.type == Gst.MessageType.ERROR:
            raise RuntimeError(msg.parse_error()[0].message)
    return dict(per_batch=epoch_per_batch(epoch_walls), epochs=epoch_walls)


def vm_rss_kib():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def child_rss(root, epochs):
    __import__("torch")
    from gst_train.torch import Loader
    loader = Loader(root, **loader_kwargs(False))
    before = vm_rss_kib()
    rss, images = [], 0
    for _ in range(epochs):
        for images_batch, labels in loader:
            images += labels.shape[0]
        rss.append(vm_rss_kib())
    loader.close()
    return dict(before=before, rss=rss, images=images, after_close=vm_rss_kib())


def child_main(argv):
    kind, rest = argv[0], argv[1:]
    if kind == "loader":
        res = child_loader(rest[0], int(rest[1]), rest[2] == "1")
    elif kind == "describe":
        res = child_describe(rest[0], rest[1] == "1")
    elif kind == "dataloader":
        res = child_dataloader(rest[0], int(rest[1]))
    elif kind == "ffcv-write":
        res = child_ffcv_write(rest[0], rest[1])
    elif kind == "ffcv":
        res = child_ffcv(rest[0], int(rest[1]))
    elif kind == "dali":
        res = child_dali(rest[0], int(rest[1]), rest[2] == "1")
    elif kind == "python-cost":
        res = child_python_cost(rest[0], int(rest[1]), rest[2] == "1")
    elif kind == "c-epochs":
        res = child_c_epochs(rest[0], int(rest[1]), int(rest[2]))
    elif kind == "rss":
        res = child_rss(rest[0], int(rest[1]))
    else:
        raise SystemExit("unknown child " + kind)
    print("RESULT " + json.dumps(res), flush=True)


# ---------------------------------------------------------------------------
# The driver.
# ---------------------------------------------------------------------------

def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def run_child(python, args, env, prefix=()):
    """Runs this file as a child; returns (its JSON result, wall seconds)."""
    cmd = list(prefix) + [python, os.path.abspath(__file__), "--child"] + [str(a) for a in args]
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    found = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")]
    if res.returncode != 0 or not found:
        raise RuntimeError("%s failed (exit %d):\n%s%s" % (
            " ".join(cmd), res.returncode, res.stdout[-3000:], res.stderr[-3000:]))
    return json.loads(found[-1][len("RESULT "):]), wall


def run_gst_timed(line, env, prefix=()):
    """gst-launch-1.0 -v with fakesink silent=false: each batch's line
    (fakesink's last-message, printed and flushed by gst-launch as the
    batch arrives) is stamped here. Returns the same times as a child,
    counted from "Setting pipeline to PAUSED"."""
    cmd = list(prefix) + ["gst-launch-1.0", "-v", "-X", "caps"] + line.split()
    t_spawn = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=env, text=True, bufsize=1)
    start, times, cpus, tail, ended = None, [], [], [], None
    for text in proc.stdout:
        now = time.perf_counter()
        if start is None and text.startswith("Setting pipeline to PAUSED"):
            start = now
            cpu_start = proc_cpu(proc.pid)
        elif "last-message = chain" in text:
            times.append(now - start)
            cpus.append(proc_cpu(proc.pid) - cpu_start)
        elif text.startswith("Execution ended after"):
            ended = text.split()[-1]
        else:
            tail.append(text)
            del tail[:-20]
    proc.wait()
    wall = time.perf_counter() - t_spawn
    if proc.returncode != 0 or start is None:
        raise RuntimeError("%s failed (exit %d):\n%s" % (" ".join(cmd), proc.returncode,
                                                         "".join(tail)))
    return dict(times=times, cpus=cpus, ended=ended), wall


def rates(times, per_epoch_images, total_images):
    """(images/s over all epochs, images/s after the first epoch)."""
    whole = total_images / times[-1]
    first_batches = per_epoch_images
    if len(times) > first_batches:
        after = (total_images - first_batches * BATCH) / (times[-1] - times[first_batches - 1])
    else:
        after = float("nan")
    return whole, after


def ensure_debs(debs, log):
    missing = [d for d in debs if subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", d], capture_output=True,
        text=True).stdout.find("install ok installed") < 0]
    if not missing:
        return None
    if os.geteuid() != 0:
        return "missing Debian packages %s (not root: not installed)" % " ".join(missing)
    res = subprocess.run(["apt-get", "install", "-y", "-q"] + missing, capture_output=True,
                         text=True, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    log.append("apt-get install %s: exit %d" % (" ".join(missing), res.returncode))
    if res.returncode != 0:
        return "apt-get install %s failed: %s" % (" ".join(missing),
                                                 (res.stderr.strip().splitlines() or ["?"])[-1])
    return None


def ensure_venv(name, probe, installs, log):
    """A venv under bench/out/tl that sees Debian's packages, numpy held at
    Debian's version. installs: pip argument lists, run in order when
    `probe` (python code) fails. Returns (python, None) or (None, why)."""
    venv = os.path.join(OUT, name)
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        sh([SYSTEM_PYTHON, "-m", "venv", "--system-site-packages", venv])
    if subprocess.run([python, "-c", probe], capture_output=True).returncode == 0:
        return python, None
    numpy = sh([SYSTEM_PYTHON, "-c", "import numpy; print(numpy.__version__)"]).stdout.strip()
    constraints = os.path.join(OUT, "constraints.txt")
    with open(constraints, "w") as fh:
        fh.write("numpy==%s\n" % numpy)
    for extra in installs:
        cmd = [python, "-m", "pip", "install", "-q", "-c", constraints] + extra
        res = subprocess.run(cmd, capture_output=True, text=True)
        log.append("%s: exit %d" % (" ".join(cmd[2:]), res.returncode))
        if res.returncode != 0:
            lines = [ln for ln in (res.stdout + res.stderr).splitlines() if ln.strip()]
            return None, "`pip %s` failed: %s" % (" ".join(extra), " / ".join(lines[-6:]))
    res = subprocess.run([python, "-c", probe], capture_output=True, text=True)
    if res.returncode != 0:
        return None, "installed, but does not import: " + (
            res.stderr.strip().splitlines() or ["?"])[-1]
    return python, None


def make_tiny_corpus(path):
    """TINY_COUNT 8x8 JPEGs of noise in 10 class folders (deterministic)."""
    stamp = os.path.join(path, ".complete")
    if os.path.exists(stamp):
        return
    code = r"""
import os, random, sys
from PIL import Image
root, count = sys.argv[1], int(sys.argv[2])
rng = random.Random(0)
for i in range(count):
    d = os.path.join(root, "class%02d" % (i % 10))
    os.makedirs(d, exist_ok=True)
    im = Image.frombytes("RGB", (8, 8), bytes(rng.randrange(256) for _ in range(192)))
    im.save(os.path.join(d, "%05d.jpg" % i), "JPEG", quality=90)
open(os.path.join(root, ".complete"), "w").close()
"""
    sh([SYSTEM_PYTHON, "-c", code, path, str(TINY_COUNT)])


def warm(paths):
    for top in paths:
        if os.path.isfile(top):
            with open(top, "rb") as fh:
                while fh.read(1 << 22):
                    pass
            continue
        for d, _, fs in os.walk(top):
            for f in fs:
                with open(os.path.join(d, f), "rb") as fh:
                    fh.read()


def med(values):
    return statistics.median(values)


def fmt_range(values, digits=0):
    return "%.*f-%.*f" % (digits, min(values), digits, max(values))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child_main(sys.argv[2:])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--build", default=None,
                    help="build directory (default build-tlbench/, or with --commit "
                    "bench/out/tl/build-commit/)")
    ap.add_argument("--commit", default=None,
                    help="measure this commit, exported with git archive into "
                    "bench/out/tl/src/ and built there, rather than the working tree "
                    "(which others may be changing)")
    ap.add_argument("--quick", action="store_true",
                    help="1 round, 512 images, 2 epochs; report to bench/out/")
    ap.add_argument("--no-ffcv", action="store_true")
    ap.add_argument("--no-dali", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.count, args.epochs = 1, 512, 2
    cmdline = "flock /tmp/gt-bench.lock bench/torch-loader.py --rounds %d --count %d " \
        "--epochs %d%s%s%s%s" % (args.rounds, args.count, args.epochs,
                                 " --commit %s" % args.commit if args.commit else "",
                               " --quick" if args.quick else "",
                               " --no-ffcv" if args.no_ffcv else "",
                               " --no-dali" if args.no_dali else "")
    os.makedirs(OUT, exist_ok=True)
    log = []
    source = ROOT
    if args.commit:
        commit = sh(["git", "rev-parse", "--short", args.commit + "^{commit}"],
                    cwd=ROOT).stdout.strip()
        source = os.path.join(OUT, "src")
        stamp = os.path.join(source, ".exported-commit")
        if not os.path.exists(stamp) or open(stamp).read() != commit:
            shutil.rmtree(source, ignore_errors=True)
            os.makedirs(source)
            archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", source], input=archive, check=True)
            with open(stamp, "w") as fh:
                fh.write(commit)
            shutil.rmtree(os.path.join(OUT, "build-commit"), ignore_errors=True)
        # the report's command names the commit, not a name that moves
        cmdline = cmdline.replace(" --commit %s" % args.commit, " --commit %s" % commit)
    build = os.path.abspath(args.build or (os.path.join(OUT, "build-commit") if args.commit
                                           else os.path.join(ROOT, "build-tlbench")))
    benv = dict(os.environ, PATH="/usr/local/cuda/bin:" + os.environ.get("PATH", ""))
    if not os.path.exists(os.path.join(build, "build.ninja")):
        sh(["meson", "setup", build, "--buildtype=release"], cwd=source, env=benv)
    sh(["ninja", "-C", build], cwd=source, env=benv)
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"),
               GST_PLUGIN_PATH_1_0=os.path.join(build, "gst-plugins"),
               GST_REGISTRY_1_0=os.path.join(OUT, "registry.bin"))
    env.pop("GST_PLUGIN_PATH", None)

    corpus = os.path.join(ROOT, "bench", "corpus" if args.count == 2000
                          else "corpus-%d" % args.count)
    sh([SYSTEM_PYTHON, os.path.join(ROOT, "bench", "make-corpus.py"),
        "--count", str(args.count), "--out", corpus])
    small = os.path.join(ROOT, "bench", "corpus-256")
    sh([SYSTEM_PYTHON, os.path.join(ROOT, "bench", "make-corpus.py"),
        "--count", "256", "--out", small])
    tiny = os.path.join(OUT, "tiny-%d" % TINY_COUNT)
    make_tiny_corpus(tiny)
    count = sum(1 for _, _, fs in os.walk(corpus) for f in fs if f.endswith(".jpg"))
    epoch_batches = count // BATCH

    # The pipeline the Loader builds, as a launch line.
    described = {}
    for cl in (False, True):
        res, _ = run_child(SYSTEM_PYTHON, ["describe", corpus, int(cl)], env)
        described[cl] = res["line"]

    def gst_line(cl):
        return described[cl].replace("datasetsrc ", "datasetsrc num-epochs=%d " % args.epochs, 1) \
            + " ! fakesink silent=false " + FAKESINK

    # Peers from PyPI.
    notes = {}
    ffcv_python = dali_python = None
    beton = os.path.join(OUT, "corpus-%d.beton" % count)
    ffcv_write = None
    if args.no_ffcv:
        notes["F"] = "FFCV not measured (--no-ffcv)"
    else:
        why = ensure_debs(FFCV_DEBS, log)
        if why is None:
            ffcv_python, why = ensure_venv(
                "ffcv-venv", "import ffcv.loader, ffcv.fields.rgb_image",
                [FFCV_DEPS, ["--no-deps", "--no-build-isolation", "ffcv==" + FFCV_VERSION]],
                log)
        if ffcv_python is None:
            notes["F"] = "FFCV not measured: " + why
        else:
            if os.path.exists(beton):
                os.remove(beton)
            try:
                ffcv_write, _ = run_child(ffcv_python, ["ffcv-write", corpus, beton], env)
            except RuntimeError as e:
                ffcv_python = None
                notes["F"] = "FFCV's writer failed: " + str(e).splitlines()[-1]
    if args.no_dali:
        notes["D"] = "DALI not measured (--no-dali)"
    else:
        dali_python, why = ensure_venv(
            "dali-venv", "import nvidia.dali.plugin.pytorch", [[DALI_PACKAGE]], log)
        if dali_python is None:
            notes["D"] = "DALI not measured: " + why

    rows = [
        ("L", "gst_train.torch.Loader (contiguous NCHW)",
         lambda: run_child(SYSTEM_PYTHON, ["loader", corpus, args.epochs, 0], env)),
        ("Lc", "gst_train.torch.Loader, channels_last=True",
         lambda: run_child(SYSTEM_PYTHON, ["loader", corpus, args.epochs, 1], env)),
        ("G", "C pipeline: gst-launch-1.0 of the Loader's pipeline ! fakesink",
         lambda: run_gst_timed(gst_line(False), env)),
        ("T", "torchvision DataLoader(ImageFolder), num_workers=%d" % os.cpu_count(),
         lambda: run_child(SYSTEM_PYTHON, ["dataloader", corpus, args.epochs], env)),
    ]
    if " n-threads=0" in described[False].split(" ! ")[0]:
        # num_threads=0 sets datasetsrc's n-threads to 0 too, which there
        # means no read-ahead: the same line with datasetsrc's default
        rows.insert(3, ("Gr", "the same with datasetsrc's default n-threads (read-ahead)",
                        lambda: run_gst_timed(gst_line(False).replace(" n-threads=0", "", 1),
                                              env)))
    if ffcv_python:
        rows.append(("F", "FFCV %s Loader, num_workers=%d" % (FFCV_VERSION, os.cpu_count()),
                     lambda: run_child(ffcv_python, ["ffcv", beton, args.epochs], env)))
    if dali_python:
        rows.append(("D", "DALI CPU pipeline + DALIGenericIterator, num_threads=%d"
                     % os.cpu_count(),
                     lambda: run_child(dali_python, ["dali", corpus, args.epochs, 0], env)))
        rows.append(("Dc", "DALI, decoders.image_random_crop (decodes only the crop)",
                     lambda: run_child(dali_python, ["dali", corpus, args.epochs, 1], env)))

    # The Python cost rows: 8x8 JPEGs, echo factor=50 before the batcher.
    tiny_line = ("datasetsrc location=%s seed=0 ! imagedec ! echo factor=%d ! "
                 "batcher batch-size=%d" % (tiny, TINY_ECHO, BATCH))
    tiny_epochs = 3 if args.quick else 8
    tiny_batches = TINY_COUNT * TINY_ECHO // BATCH
    one = ["taskset", "-c", "0"]
    cost_rows = [
        ("pg2", "C pipeline alone (the line ! fakesink, from Python, no Python per batch), "
         "2 cores",
         lambda: run_child(SYSTEM_PYTHON, ["c-epochs", tiny_line, tiny_epochs, tiny_batches],
                           env)[0]),
        ("pl2", "Loader.from_pipeline, 2 cores",
         lambda: run_child(SYSTEM_PYTHON, ["python-cost", tiny_line, tiny_epochs, 0], env)[0]),
        ("pg1", "C pipeline alone, 1 core (taskset -c 0)",
         lambda: run_child(SYSTEM_PYTHON, ["c-epochs", tiny_line, tiny_epochs, tiny_batches],
                           env, one)[0]),
        ("pl1", "Loader.from_pipeline, 1 core (taskset -c 0)",
         lambda: run_child(SYSTEM_PYTHON, ["python-cost", tiny_line, tiny_epochs, 0],
                           env, one)[0]),
    ]

    uptime_before = sh(["uptime"]).stdout.strip()
    results = {r[0]: [] for r in rows}
    cost = {r[0]: [] for r in cost_rows}
    for rnd in range(args.rounds):
        print("round %d/%d" % (rnd + 1, args.rounds), file=sys.stderr)
        warm([corpus] + ([beton] if ffcv_python else []))
        for rid, label, fn in rows:
            res, wall = fn()
            n_images = len(res["times"]) * BATCH
            whole, after = rates(res["times"], epoch_batches, n_images)
            # images per CPU-second: what the row costs, whatever share of the
            # cores the machine's other work left it
            cpu_whole, cpu_after = rates(res["cpus"], epoch_batches, n_images)
            results[rid].append(dict(res, whole=whole, after=after, wall=wall,
                                     images=n_images, cpu_whole=cpu_whole,
                                     cpu_after=cpu_after))
            print("  %-3s %6.0f images/s (after the first epoch %6.0f), process %.1f s"
                  % (rid, whole, after, wall), file=sys.stderr)
        warm([tiny])
        for rid, label, fn in cost_rows:
            res = fn()
            cost[rid].append(res)
            print("  %-3s %7.1f us per batch" % (rid, res["per_batch"] * 1e6), file=sys.stderr)
    uptime_after = sh(["uptime"]).stdout.strip()

    profile, _ = run_child(SYSTEM_PYTHON, ["python-cost", tiny_line, 1, 1], env)
    rss_epochs = 20
    rss, _ = run_child(SYSTEM_PYTHON, ["rss", small, rss_epochs], env)

    # ---- the report ----
    def m(rid, key):
        return med([r[key] for r in results[rid]])

    def epoch_gap(r):
        """The wait between an epoch's last batch and the next epoch's first,
        beyond the median wait between batches (the C pipeline: at the same
        places in its one stream)."""
        t = r["times"]
        waits = [b - a for a, b in zip(t, t[1:])]
        at = [k * epoch_batches - 1 for k in range(1, args.epochs)
              if k * epoch_batches - 1 < len(waits)]
        if not at:
            return float("nan")
        return sum(waits[i] for i in at) / len(at) - med(waits)

    for rid in results:
        for r in results[rid]:
            r["gap"] = epoch_gap(r)
    table = ["| Row | Setup | images/s, all epochs (median) | min-max | images/s after "
             "the first epoch | vs DataLoader | vs C pipeline | CPU ms per image, all "
             "epochs (after the first) | first batch s | epoch change ms | set-up s | "
             "process s |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for rid, label, _ in rows:
        vals = [r["whole"] for r in results[rid]]
        table.append("| %s | %s | %.0f | %s | %.0f | %.2fx | %.2fx | %.3f (%.3f) | %.2f | %.0f "
                     "| %s | %.1f |"
                     % (rid, label, med(vals), fmt_range(vals), m(rid, "after"),
                        m(rid, "whole") / m("T", "whole"), m(rid, "whole") / m("G", "whole"),
                        1e3 / m(rid, "cpu_whole"), 1e3 / m(rid, "cpu_after"),
                        med([r["times"][0] for r in results[rid]]), m(rid, "gap") * 1e3,
                        "%.2f" % m(rid, "construct") if "construct" in results[rid][0]
                        else "-", m(rid, "wall")))

    def per_round(a, b, key):
        return [x[key] / y[key] for x, y in zip(results[a], results[b])]

    # Judged on the median of the per-round ratios: the two rows of a round ran
    # within a minute of each other and met alike load, which a ratio of
    # medians taken from different rounds does not.
    goals = ["| Ratio | median per round | per round | ratio of the medians | target | met |",
             "|---|---:|---|---:|---:|---|"]
    for a, b, key, what, target in (
            ("L", "T", "whole", "Loader / DataLoader, all epochs", 4.0),
            ("L", "T", "after", "Loader / DataLoader, after the first epoch", 4.0),
            ("L", "G", "whole", "Loader / C pipeline, all epochs", 0.95),
            ("L", "G", "after", "Loader / C pipeline, after the first epoch", 0.95),
            ("Lc", "G", "whole", "Loader channels_last / C pipeline, all epochs", 0.95),
            ("Lc", "G", "after", "Loader channels_last / C pipeline, after the first epoch", 0.95),
            ("L", "T", "cpu_whole", "Loader / DataLoader, images per CPU-second, all epochs",
             4.0),
            ("L", "G", "cpu_whole", "Loader / C pipeline, images per CPU-second, all epochs",
             0.95),
            ("L", "G", "cpu_after", "Loader / C pipeline, images per CPU-second, after the "
             "first epoch", 0.95)):
        rounds = sorted(per_round(a, b, key))
        r = med(rounds)
        goals.append("| %s | %.2fx | %s | %.2fx | >= %gx | %s |" % (
            what, r, ", ".join("%.2f" % x for x in rounds), m(a, key) / m(b, key), target,
            "yes" if r >= target else "**no**"))
    for a, what in (("Gr", "C pipeline with read-ahead"), ("F", "FFCV"), ("D", "DALI"),
                    ("Dc", "DALI decoding only the crop")):
        for key, when in (("whole", "all epochs"), ("after", "after the first epoch")):
            if a in results:
                rounds = sorted(per_round("L", a, key))
                goals.append("| Loader / %s, %s | %.2fx | %s | %.2fx | | |" % (
                    what, when, med(rounds), ", ".join("%.2f" % x for x in rounds),
                    m("L", key) / m(a, key)))

    stats = results["L"][-1]["stats"]
    shapes = ["  - %s: images %s %s%s" % (rid, results[rid][0]["shape"][0],
                                        results[rid][0]["shape"][1],
                                        "" if results[rid][0]["shape"][2] else
                                        " (channels_last memory)")
              for rid, _, _ in rows if "shape" in results[rid][0]]

    def cm(rid, key=None):
        vals = [c if key is None else c[key] for c in cost[rid]]
        return med(vals) * 1e6, vals
    cost_lines = ["| Setup | us per batch (median) | least | per round |", "|---|---:|---:|---|"]
    for rid, label, _ in cost_rows:
        v, vals = cm(rid, "per_batch")
        cost_lines.append("| %s | %.1f | %.1f | %s |" % (label, v, min(vals) * 1e6, ", ".join(
            "%.1f" % (x * 1e6) for x in vals)))
    diff2 = [a["per_batch"] - b["per_batch"] for a, b in zip(cost["pl2"], cost["pg2"])]
    diff1 = [a["per_batch"] - b["per_batch"] for a, b in zip(cost["pl1"], cost["pg1"])]
    cpu_med = med([c["cpu_median"] for c in cost["pl2"]]) * 1e6
    cpu_mean = med([c["cpu_mean"] for c in cost["pl2"]]) * 1e6
    cpu_p90 = med([c["cpu_p90"] for c in cost["pl2"]]) * 1e6
    cost_goal = [
        "| Measure | us per batch | per round | target | met |", "|---|---:|---|---:|---|",
        "| Loader - C pipeline, 1 core (all the Python side adds) | %.1f | %s | <= 50 | %s |" % (
            med(diff1) * 1e6, ", ".join("%.1f" % (x * 1e6) for x in diff1),
            "yes" if med(diff1) * 1e6 <= 50 else "**no**"),
        "| Loader - C pipeline, 2 cores (what the loop loses) | %.1f | %s | | |" % (
            med(diff2) * 1e6, ", ".join("%.1f" % (x * 1e6) for x in diff2)),
        "| main thread's CPU time in next(), 2 cores: median (mean, 90th percentile) "
        "| %.1f (%.1f, %.1f) | | <= 50 | %s |" % (
            cpu_med, cpu_mean, cpu_p90, "yes" if cpu_med <= 50 else "**no**"),
    ]
    prof_lines = ["| Function | calls | own time, us per batch | share |", "|---|---:|---:|---:|"]
    for r in profile["rows"][:12]:
        prof_lines.append("| `%s` | %d | %.1f | %.0f%% |" % (
            r["where"].replace("|", "\\|"), r["calls"],
            r["tottime"] / profile["batches"] * 1e6, 100 * r["tottime"] / profile["total"]))

    rss_mb = [x / 1024 for x in rss["rss"]]
    rss_line = ("first epoch %.1f MiB, last (20th) %.1f MiB, max %.1f MiB (epoch %d), "
                "min after the first %.1f MiB; before the first epoch %.1f MiB, after "
                "close() %.1f MiB; %d images in all" % (
                    rss_mb[0], rss_mb[-1], max(rss_mb), rss_mb.index(max(rss_mb)) + 1,
                    min(rss_mb[1:]) if len(rss_mb) > 1 else rss_mb[0],
                    rss["before"] / 1024, rss["after_close"] / 1024, rss["images"]))

    cpuinfo = open("/proc/cpuinfo").read()

    def cpu_field(name):
        mm = re.search(r"^%s\s*:\s*(.*)$" % name, cpuinfo, re.M)
        return mm.group(1).strip() if mm else "?"
    if args.commit:
        dirty = ""  # a clean export of that commit
    else:
        commit = sh(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT).stdout.strip()
        dirty = sh(["git", "status", "--porcelain", "--untracked-files=all", "--", "python",
                    "elements", "meson.build"], cwd=ROOT).stdout.rstrip()
    versions = sh([SYSTEM_PYTHON, "-c", "import torch, torchvision; "
                   "print(torch.__version__, torchvision.__version__, "
                   "torch.cuda.is_available())"]).stdout.split()
    peer_versions = []
    for python, mod in ((ffcv_python, "ffcv"), (dali_python, DALI_PACKAGE)):
        if python:
            # ffcv.__version__ says 0.0.3rc1 in the 1.0.2 release: ask pip's record
            peer_versions.append("%s %s" % (mod, sh([python, "-c", "import importlib.metadata "
                                                     "as m; print(m.version(%r))" % mod])
                                            .stdout.strip()))
    ffcv_line = ("FFCV conversion (DatasetWriter, RGBImageField write_mode=jpg quality 90, "
                 "num_workers=%d): %d images in %.1f s (%.0f images/s), %.1f MB; not in "
                 "the table" % (os.cpu_count(), ffcv_write["images"], ffcv_write["seconds"],
                                ffcv_write["images"] / ffcv_write["seconds"],
                                ffcv_write["bytes"] / 1e6)) if ffcv_write else notes.get("F")
    report = """# gst_train.torch.Loader against DataLoader, FFCV, DALI and the C pipeline

Generated by `%(cmd)s` on %(date)s, %(what)s.

- CPU: %(cpu)s (family %(family)s, model %(model)s), %(cores)d cores; Python %(py)s;
  torch %(torch)s, torchvision %(tv)s (Debian; CUDA usable: %(cuda)s); %(peers)s;
  GStreamer %(gst)s.
- Load (`uptime`) before: `%(up0)s`; after: `%(up1)s`. The machine is shared: the
  rounds are interleaved, each row's figure is the median of %(rounds)d rounds, and the
  ratios are given per round too.
- Corpus: %(count)d JPEGs from `bench/make-corpus.py` (photographs of Debian's
  mate-backgrounds, about 500x375, quality 90, 4:2:0), read from a warm page cache; %(epochs)d
  epochs; batches of %(batch)d, the last partial batch of each epoch dropped (the C pipeline
  runs the epochs back to back, as one stream).
- Every row reads each file, decodes it to RGB, draws a RandomResizedCrop box (scale
  0.08-1, ratio 3/4-4/3), resizes it to %(size)dx%(size)d, flips with probability 0.5,
  and hands over uint8 images and their labels; the consumer drops them.
- images/s counts from the start of the first epoch to the last batch (construction
  apart: "set-up s"); "after the first epoch" from the first epoch's last batch on.
  "first batch s": from the start of the first epoch to its first batch. "epoch change
  ms": the wait from an epoch's last batch to the next epoch's first, less the median
  wait between batches (for the C pipeline, the same places in its one stream).
  "CPU ms per image": the CPU time of every thread and worker process of the row over the
  same span (read in the process, or from /proc for gst-launch-1.0 and the DataLoader's
  workers), per image delivered: what the row costs whatever share of the cores the
  machine's other work left it (the ratios of images per CPU-second below).
  "process s" is the whole process, imports and start-up included.
- The C pipeline's line, read back from the Loader's own pipeline (`%(epochs)d` epochs set on
  datasetsrc):
  `gst-launch-1.0 %(gline)s`
- %(ffcv)s.
- %(dali)s.
- Shapes handed out (last batch of round 1):
%(shapes)s

%(table)s

%(goals)s

The Loader's own `stats()` after the last round's run (row L): %(stats)s.

## The Python cost per batch

`Loader.from_pipeline("%(tline)s")`: %(tiny)d JPEGs of 8x8 pixels, each
repeated %(echo)d times by echo before the batcher, %(tbatches)d batches of %(batch)d
per epoch, %(tepochs)d epochs per run: the C side's work per batch is small (the first row
below), so what the Loader adds shows. Both sides run in a Python process of their
own, one pipeline run per epoch, as the Loader runs them, and both are timed over whole
epochs (the pipeline's start, its %(tbatches)d batches, EOS and its stop): the Loader from
`iter()` to StopIteration, the C pipeline alone as the same line `! fakesink %(fakesink)s`
(by default fakesink keeps the last batch, so that the batcher cannot reuse its memory; the
Loader's appsink keeps none), parsed with `Gst.parse_launch`, set to PLAYING and waited
for EOS on the bus, so that no Python runs per batch. Each run's figure is its quickest of
%(tepochs)d epochs: the machine's other work only adds time, so the least is the
figure nearest the code's own; %(rounds)d interleaved rounds, medians.

%(cost)s

%(costgoal)s

Where the main thread's time goes (cProfile of one epoch of the same Loader, %(pbatches)d
batches, %(ptotal).1f us of wall time per batch under the profiler, which inflates every
Python call; the C extension's `pull` includes the wait for the batch, and `_start_epoch`
runs once an epoch):

%(prof)s

## Memory over epochs

`Loader(bench/corpus-256, ...)`, the main table's arguments, 256 photographs, %(rss_epochs)d
epochs, VmRSS read from /proc/self/status after each epoch: %(rss_line)s.

VmRSS per epoch, MiB: %(rss_all)s
""" % dict(
        cmd=cmdline, date=datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
        what=("commit %s, exported with git archive and built apart" % commit)
        if args.commit else "the working tree at commit %s%s" % (commit, (
            " plus uncommitted changes to " + ", ".join(
                sorted(set(ln[3:] for ln in dirty.splitlines())))) if dirty else ""),
        cpu=cpu_field("model name"), family=cpu_field("cpu family"), model=cpu_field("model"),
        cores=os.cpu_count(), py=platform.python_version(), torch=versions[0],
        tv=versions[1], cuda=versions[2], peers=", ".join(peer_versions) or "no FFCV or DALI",
        gst=sh(["gst-launch-1.0", "--version"]).stdout.split("\n")[1].split()[-1],
        up0=uptime_before, up1=uptime_after, rounds=args.rounds, count=count,
        epochs=args.epochs, batch=BATCH, size=SIZE,
        gline=gst_line(False).replace(ROOT + "/", ""),
        ffcv=ffcv_line,
        dali=notes.get("D") or "DALI %s from PyPI in a venv over Debian's torch" % DALI_PACKAGE,
        shapes="\n".join(shapes), table="\n".join(table), goals="\n".join(goals),
        stats=", ".join("%s %s" % (k, ("%.3g" % v) if isinstance(v, float) else v)
                        for k, v in stats.items()),
        tline=tiny_line.replace(ROOT + "/", ""), tiny=TINY_COUNT, echo=TINY_ECHO,
        tbatches=tiny_batches, tepochs=tiny_epochs, tepochs1=tiny_epochs + 1,
        fakesink=FAKESINK, cost="\n".join(cost_lines),
        costgoal="\n".join(cost_goal), pbatches=profile["batches"],
        ptotal=profile["total"] / profile["batches"] * 1e6, prof="\n".join(prof_lines),
        rss_epochs=rss_epochs, rss_line=rss_line,
        rss_all=", ".join("%.1f" % x for x in rss_mb))
    if log:
        report += "\nInstall steps this run: " + "; ".join(log) + ".\n"
    dest = os.path.join(ROOT, "bench", "out", "torch-loader-quick.md") if args.quick else \
        os.path.join(ROOT, "docs", "benchmarks", "torch-loader.md")
    kept = ""
    if os.path.exists(dest):
        with open(dest) as fh:
            old = fh.read()
        if KEEP_MARKER in old:
            kept = "\n" + old[old.index(KEEP_MARKER):]
    with open(dest, "w") as fh:
        fh.write(report + kept)
    with open(os.path.join(OUT, "torch-loader-%s.json" % (
            "quick" if args.quick else "full")), "w") as fh:
        json.dump(dict(results=results, cost=cost, profile=profile, rss=rss,
                       described=described), fh)
    print(report)


if __name__ == "__main__":
    main()
