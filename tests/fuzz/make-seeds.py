#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/):
small valid inputs of every kind each parser accepts, from which libFuzzer
starts. Run from anywhere; the files are committed, so this only needs to
run again to change them. The files named by a hash beside them are what
campaigns found that reaches further, added with libFuzzer's -merge=1
(docs/reliability.md); this script leaves them alone.

Needs PIL (python3-pil); cjpeg (libjpeg-turbo-progs) adds restart-marker and
arithmetic-coded JPEGs when it is there.
"""
import gzip
import io
import json
import os
import shutil
import struct
import subprocess
import tempfile

from PIL import Image

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def pattern(mode, width, height):
    """A deterministic image with edges and gradients, so that every DCT
    coefficient band holds something."""
    image = Image.new("RGB", (width, height))
    image.putdata([((x * 37) % 256, (y * 53) % 256, ((x ^ y) * 29) % 256)
                   for y in range(height) for x in range(width)])
    return image.convert(mode)


def jpeg(image, **options):
    out = io.BytesIO()
    image.save(out, "JPEG", **options)
    return out.getvalue()


def jpeg_seeds():
    write("jpeg", "rgb-8x8-444.jpg",
          jpeg(pattern("RGB", 8, 8), quality=90, subsampling=0))
    write("jpeg", "rgb-17x9-420.jpg",
          jpeg(pattern("RGB", 17, 9), quality=75, subsampling=2))
    write("jpeg", "rgb-64x48-422.jpg",
          jpeg(pattern("RGB", 64, 48), quality=30, subsampling=1))
    write("jpeg", "gray-5x3.jpg", jpeg(pattern("L", 5, 3), quality=80))
    write("jpeg", "progressive-24x16.jpg",
          jpeg(pattern("RGB", 24, 16), quality=60, progressive=True))
    write("jpeg", "cmyk-4x4.jpg", jpeg(pattern("CMYK", 4, 4), quality=90))
    cjpeg = shutil.which("cjpeg")
    if cjpeg is None:
        return
    with tempfile.TemporaryDirectory() as scratch:
        ppm = os.path.join(scratch, "in.ppm")
        pattern("RGB", 32, 16).save(ppm)
        for name, args in (("restart-32x16.jpg", ["-restart", "1B"]),
                           ("arithmetic-32x16.jpg", ["-arithmetic"])):
            data = subprocess.run([cjpeg, "-quality", "50"] + args + [ppm],
                                  check=True, stdout=subprocess.PIPE).stdout
            write("jpeg", name, data)


def dataset_list_seeds():
    # 'L' + a list file; 'T' + a tree description (fuzz-dataset-list.c).
    write("dataset-list", "list-simple.txt",
          b"La.jpg\t0\nsub/b.jpg\t1\n")
    write("dataset-list", "list-mixed.txt",
          b"L# comment\r\n\r\n/abs/c.jpg\t2\r\nname with\ttab.jpg\t0\n"
          b"d.jpg\t  1\n")
    write("dataset-list", "list-bad-label.txt", b"La.jpg\t-3\n")
    write("dataset-list", "tree-classes.txt",
          b"Tjpg, .JPEG ,png\ncat/\ncat/1.jpg\ncat/deep/2.JPEG\n"
          b"dog/3.png\ndog/notes.txt\nempty/\n.hidden/4.jpg\nB/5.jpg\n")
    write("dataset-list", "tree-links.txt",
          b"Tjpg\ncat/1.jpg\ndog/2.jpg\ndog/alias -> ../cat\n"
          b"dog/self -> .\nbird -> cat\nfish/dangling.jpg -> gone.jpg\n")
    write("dataset-list", "tree-no-extensions.txt",
          b"T\na/x\na/y/z\nb/\n")


def safetensors_file(tensors, metadata=None, pad=True):
    """tensors: (name, dtype, shape, bytes); laid out in order."""
    header = {}
    data = b""
    for name, dtype, shape, payload in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header, ensure_ascii=False).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    f32 = struct.pack("<4f", 1.0, -2.0, 0.5, 3.25)
    write("safetensors", "one-f32.safetensors",
          safetensors_file([("w", "F32", [2, 2], f32)]))
    write("safetensors", "dtypes.safetensors", safetensors_file([
        ("a.f64", "F64", [1], struct.pack("<d", 1.5)),
        ("b.i64", "I64", [], struct.pack("<q", -7)),
        ("c.bf16", "BF16", [2], b"\x80\x3f\x00\x40"),
        ("d.f16", "F16", [1, 1], b"\x00\x3c"),
        ("e.i32", "I32", [1], struct.pack("<i", 5)),
        ("f.i16", "I16", [1], b"\x01\x00"),
        ("g.i8", "I8", [2], b"\xff\x01"),
        ("h.u8", "U8", [3], b"\x01\x02\x03"),
        ("i.bool", "BOOL", [1], b"\x01"),
        ("j.empty", "F32", [0, 3], b""),
    ]))
    write("safetensors", "metadata.safetensors", safetensors_file(
        [("layer1.0.conv1.weight", "F32", [1, 1, 1, 1], f32[:4])],
        {"gst_train.step": "12", "gst_train.rng": "1 2 3 4",
         "format": "pt"}))
    # Escapes, a surrogate pair and an unknown field, by hand.
    header = (b'{"caf\\u00e9 \\ud83d\\ude00\\n\\"q\\"":{"dtype":"U8",'
              b'"shape":[2],"data_offsets":[0,2],"extra":[{"x":null},true,'
              b'-1.5e3]},"__metadata__":{"k\\t":"v\\\\"}}')
    write("safetensors", "escapes.safetensors",
          struct.pack("<Q", len(header)) + header + b"\x07\x08")
    write("safetensors", "empty-header.safetensors",
          struct.pack("<Q", 2) + b"{}")


def idx(magic_dims, dims, payload):
    return (bytes([0, 0, 8, magic_dims]) + b"".join(
        struct.pack(">I", d) for d in dims) + payload)


def idx_seeds():
    images = idx(3, [2, 3, 3], bytes(range(18)))
    rgb = idx(4, [1, 2, 2, 3], bytes(range(12)))
    labels = idx(1, [2], b"\x00\x09")
    for name, data in (("images-2x3x3.idx", images),
                       ("images-rgb-1x2x2x3.idx", rgb),
                       ("labels-2.idx", labels)):
        write("idx", name, data)
        write("idx", name + ".gz", gzip.compress(data, mtime=0))


def strings_seeds():
    for i, text in enumerate([b"jpg,jpeg", b" .JPG , png,,.", b"",
                              b"T-shirt_top,Trouser,Pullover,Bag",
                              b"a,,b", b"3", b"16777216", b"-1",
                              b"0x10", b"007"]):
        write("strings", "seed-%02d.txt" % i, text)


def tar(members, fmt, mtime=0.0):
    """A tar file of (name, bytes) members in tarfile's FORMAT."""
    out = io.BytesIO()
    import tarfile
    with tarfile.open(fileobj=out, mode="w", format=fmt) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), mtime
            t.addfile(info, io.BytesIO(data))
    # the end blocks, without tarfile's padding to 10 KiB
    data = out.getvalue().rstrip(b"\0")
    return data + bytes(-len(data) % 512 + 1024)


def shard_seeds():
    import tarfile
    fake_jpeg = b"\xff\xd8\xff\xe0" + bytes(range(40)) + b"\xff\xd9"
    samples = [("000000.jpg", fake_jpeg), ("000000.cls", b"3"),
               ("000001.jpg", fake_jpeg * 3), ("000001.cls", b"7\n"),
               ("000001.json", b'{"a": 1}')]
    # as gst-train-dataset and GNU tar write them, and as Python's tarfile
    # does for WebDataset (PAX headers for float times)
    write("shard", "ustar.tar", tar(samples, tarfile.USTAR_FORMAT))
    write("shard", "pax-times.tar", tar(samples, tarfile.PAX_FORMAT, 1.5))
    long_dir = "d" * 120
    write("shard", "gnu-long-names.tar",
          tar([(f"{long_dir}/k.jpg", fake_jpeg), (f"{long_dir}/k.cls", b"1")],
              tarfile.GNU_FORMAT))
    write("shard", "ustar-prefix.tar",
          tar([(f"{long_dir}/x/k.JPEG", fake_jpeg), (f"{long_dir}/x/k.cls", b"2")],
              tarfile.USTAR_FORMAT))
    write("shard", "bad-labels.tar",
          tar([("a.jpg", fake_jpeg), ("a.cls", b"cat"), ("b.jpg", fake_jpeg),
               ("c.cls", b"-4"), ("d/", b""), ("noext", b"x")],
              tarfile.USTAR_FORMAT))
    write("shard", "truncated.tar", tar(samples, tarfile.PAX_FORMAT, 1.5)[:2900])
    write("shard", "pattern.txt",
          b"Ptrain-{000..009}.tar http://h/{a,b}-{1..3..2}.tar x.tar")


if __name__ == "__main__":
    jpeg_seeds()
    dataset_list_seeds()
    safetensors_seeds()
    idx_seeds()
    strings_seeds()
    shard_seeds()
