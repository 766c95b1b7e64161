#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""WebDataset shards between gst-train-dataset, the webdataset library and
datasetsrc:
- gst-train-dataset fashion-mnist --shard-size writes shards that
  webdataset reads back: every sample's key, label and pixels (against the
  IDX files, within JPEG's error);
- gst-train-dataset shards turns an ImageFolder into shards that webdataset
  reads back: each file's bytes unchanged, torchvision's ImageFolder label,
  in an order shuffled from the seed (dataset order with --keep-order);
- datasetsrc (shuffle=false interleave=false: shard after shard, as
  webdataset reads them in one process) reads those shards, and shards that
  webdataset's own ShardWriter wrote (PAX headers, other members), as
  webdataset does: the same samples, labels and bytes, in the same order.

Usage: dataset_shards.py GST-TRAIN-DATASET DUMP-SAMPLES"""
import glob
import gzip
import io
import os
import struct
import subprocess
import sys
import tempfile

FASHION = "/usr/share/datasets/fashion-mnist"

try:
    import webdataset as wds
    from PIL import Image
    from torchvision.datasets import ImageFolder
except ImportError as e:  # scripts/install-deps.sh installs them
    print(f"SKIP: {e}")
    sys.exit(77)


def run(*args):
    res = subprocess.run(args, capture_output=True, text=True)
    assert res.returncode == 0, f"{args}: {res.stderr}"
    return res.stdout


def idx(path):
    with gzip.open(path) as f:
        data = f.read()
    magic, n = struct.unpack(">II", data[:8])
    if magic == 0x801:
        return list(data[8:8 + n])
    rows, cols = struct.unpack(">II", data[8:16])
    return [data[16 + i * rows * cols:16 + (i + 1) * rows * cols]
            for i in range(n)], rows, cols


def read_wds(pattern):
    """(key, label, jpg bytes) of every sample, in order, as webdataset
    reads them."""
    return [(s["__key__"], int(s["cls"]), s["jpg"])
            for s in wds.WebDataset(pattern, shardshuffle=False,
                                    empty_check=False)]


def read_datasetsrc(dump, location, classes):
    """(key, label, bytes) of every sample datasetsrc pushes, in order."""
    out = run(dump, f'datasetsrc location="{location}" shuffle=false '
              f'interleave=false num-classes={classes} ! fakesink name=sink')
    samples = []
    for line in out.splitlines():
        if not line.startswith("sample\t"):
            continue
        _, _, label, _, _, size, where = line.split("\t")
        member = where.split("#")[1]
        key = member.rsplit(".", 1)[0]
        samples.append((key, int(label), int(size)))
    return samples


def same_as_wds(dump, location, classes, reference):
    ours = read_datasetsrc(dump, location, classes)
    theirs = [(k, label, len(jpg)) for k, label, jpg in reference]
    assert ours == theirs, "\n".join(
        f"{a} vs {b}" for a, b in zip(ours, theirs) if a != b)[:2000]


def main():
    tool, dump = sys.argv[1:3]
    if not os.path.exists(f"{FASHION}/train-images-idx3-ubyte.gz"):
        print("SKIP: Debian's dataset-fashion-mnist is not installed")
        sys.exit(77)
    images, rows, cols = idx(f"{FASHION}/train-images-idx3-ubyte.gz")
    labels = idx(f"{FASHION}/train-labels-idx1-ubyte.gz")
    with tempfile.TemporaryDirectory(prefix="gst-train-shards-") as tmp:
        # -- IDX to shards, read back by webdataset
        out = f"{tmp}/fm"
        said = run(tool, "fashion-mnist", "--output", out, "--limit-train", "30",
                   "--limit-test", "10", "--shard-size", "8")
        assert "train 30 images in 4 shards (train-{000000..000003}.tar)" in said, said
        assert "test 10 images in 2 shards" in said, said
        samples = read_wds(f"{out}/train-{{000000..000003}}.tar")
        assert [k for k, _, _ in samples] == [f"{i:05d}" for i in range(30)]
        for i, (key, label, jpg) in enumerate(samples):
            assert label == labels[i], (key, label, labels[i])
            pixels = Image.open(io.BytesIO(jpg)).convert("L").tobytes()
            worst = max(abs(a - b) for a, b in zip(pixels, images[i]))
            assert len(pixels) == rows * cols and worst <= 40, (key, worst)
        assert len(read_wds(f"{out}/test-{{000000..000001}}.tar")) == 10
        # the same settings again: nothing to do; others: an error
        assert "already complete" in run(
            tool, "fashion-mnist", "--output", out, "--limit-train", "30",
            "--limit-test", "10", "--shard-size", "8")
        res = subprocess.run([tool, "fashion-mnist", "--output", out,
                              "--limit-train", "30", "--limit-test", "10"],
                             capture_output=True, text=True)
        assert res.returncode != 0 and "other settings" in res.stderr, res.stderr
        same_as_wds(dump, f"{out}/train-{{000000..000003}}.tar", 10, samples)

        # -- an ImageFolder to shards
        run(tool, "fashion-mnist", "--output", f"{tmp}/tree", "--limit-train",
            "30", "--limit-test", "10")
        reference = ImageFolder(f"{tmp}/tree/train")
        for keep in (False, True):
            sh = f"{tmp}/sh{int(keep)}"
            said = run(tool, "shards", "--input", f"{tmp}/tree/train", "--output",
                       sh, "--shard-size", "7", "--seed", "3",
                       *(["--keep-order"] if keep else []))
            assert "30 images in 5 shards (train-{000000..000004}.tar), 10 classes" \
                in said, said
            samples = read_wds(f"{sh}/train-{{000000..000004}}.tar")
            keys = [int(k) for k, _, _ in samples]
            assert sorted(keys) == list(range(30)), keys
            assert (keys == list(range(30))) == keep, keys
            for key, label, jpg in samples:
                path, want = reference.samples[int(key)]
                with open(path, "rb") as f:
                    assert f.read() == jpg, path
                assert label == want, (path, label, want)
            same_as_wds(dump, f"{sh}/train-{{000000..000004}}.tar", 10, samples)

        # -- shards written by webdataset itself (Python's tarfile: PAX
        # headers, a json member, a key with a folder)
        os.makedirs(f"{tmp}/py")
        with wds.ShardWriter(f"{tmp}/py/py-%06d.tar", maxcount=4) as w:
            for key, label, jpg in samples[:10]:
                w.write({"__key__": f"dir/{key}", "jpg": jpg, "cls": label,
                         "json": {"key": key}})
        written = sorted(glob.glob(f"{tmp}/py/py-*.tar"))
        assert len(written) == 3, written
        theirs = read_wds(f"{tmp}/py/py-{{000000..000002}}.tar")
        assert len(theirs) == 10
        same_as_wds(dump, f"{tmp}/py/py-{{000000..000002}}.tar", 10, theirs)
    print("ok: IDX and ImageFolder shards read back by webdataset (keys, labels, "
          "pixels, bytes); datasetsrc reads them and webdataset's own shards as "
          "webdataset does")


if __name__ == "__main__":
    main()
