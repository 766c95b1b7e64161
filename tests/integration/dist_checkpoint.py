#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""dist_checkpoint.py: what the data-parallel tests (dist-*.sh) ask of the
checkpoints cudatrainsink writes.

  meta FILE KEY            print a metadata value (gst_train.step, world_size,
                           global_batch, ...), or "-" when absent
  strict MODEL CLASSES FILE
                           torchvision-style load_state_dict(strict=True) of
                           the checkpoint (optimizer.* tensors dropped) into
                           torch_reference.py's model
  same A B                 every tensor of A and B (weights, batch-norm
                           statistics, momentum) bitwise equal, same step
  restored RESUMED A RESUMED0 M
                           RESUMED is a checkpoint made by resuming from A
                           and training one step with lr=0 and momentum M,
                           RESUMED0 the same with momentum 0: RESUMED's
                           weights are A's, bitwise (weights restored), and
                           its momentum minus RESUMED0's (the step's
                           gradient) is M times A's (momentum restored)

Exit status: 0 yes, 1 no (with what differs), 2 usage or file error.
"""
import json
import os
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "I64": np.int64, "F64": np.float64}


def read(path):
    """(tensors by name as numpy arrays, metadata dict)."""
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        start, end = info["data_offsets"]
        tensors[name] = np.frombuffer(
            data[start:end], dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
    return tensors, meta


def is_parameter(name):
    """Weights and biases (what SGD moves), not batch-norm statistics."""
    return not (name.startswith("optimizer.") or name.endswith("running_mean")
                or name.endswith("running_var")
                or name.endswith("num_batches_tracked"))


def cmd_meta(path, key):
    _, meta = read(path)
    print(meta.get(key, "-"))
    return 0


def cmd_strict(model, classes, path):
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "trainer"))
    import torch
    from torch_reference import build_model, load_safetensors

    tensors, _ = load_safetensors(path)
    state = {k: v for k, v in tensors.items() if not k.startswith("optimizer.")}
    for k in state:
        if k.endswith("num_batches_tracked"):
            state[k] = state[k].to(torch.int64)
    net = build_model(model, int(classes))
    try:
        net.load_state_dict(state, strict=True)
    except RuntimeError as e:
        print(f"FAIL: {path} does not load into {model}: {e}")
        return 1
    print(f"ok: {path} loads into {model} with strict=True")
    return 0


def cmd_same(a, b):
    ta, ma = read(a)
    tb, mb = read(b)
    bad = []
    if ma.get("gst_train.step") != mb.get("gst_train.step"):
        bad.append(f"step {ma.get('gst_train.step')} != {mb.get('gst_train.step')}")
    if set(ta) != set(tb):
        bad.append(f"tensors differ: {sorted(set(ta) ^ set(tb))[:5]}")
    for name in sorted(set(ta) & set(tb)):
        if ta[name].tobytes() != tb[name].tobytes():
            diff = np.abs(ta[name].astype(np.float64) - tb[name]).max()
            bad.append(f"{name}: max |a-b| {diff:.3g}")
    if bad:
        print(f"FAIL: {a} and {b} differ:\n  " + "\n  ".join(bad[:10]))
        return 1
    momentum = sum(1 for n in ta if n.startswith("optimizer.momentum."))
    print(f"ok: {len(ta)} tensors ({momentum} momentum) bitwise equal, step "
          f"{ma.get('gst_train.step')}")
    return 0


def cmd_restored(resumed, origin, resumed0, coefficient):
    tm, _ = read(resumed)
    to, _ = read(origin)
    t0, _ = read(resumed0)
    bad = [n for n in to if is_parameter(n) and tm[n].tobytes() != to[n].tobytes()]
    if bad:
        print(f"FAIL: {resumed} does not have {origin}'s weights: {bad[:5]}")
        return 1
    print(f"ok: the weights of {origin} are restored bitwise")
    c = float(coefficient)
    worst = 0.0
    count = 0
    for name in to:
        if not name.startswith("optimizer.momentum."):
            continue
        want = c * to[name].astype(np.float64)
        got = tm[name].astype(np.float64) - t0[name]
        # RESUMED's buffer is fl(c * buf + g), RESUMED0's is g exactly: the
        # difference
        # is c * buf up to the rounding of that sum
        scale = np.abs(tm[name]).max() + np.abs(want).max()
        err = np.abs(got - want).max() / max(scale, 1e-30)
        worst = max(worst, err)
        count += 1
    if count == 0 or worst > 1e-5:
        print(f"FAIL: momentum of {origin} not restored ({count} tensors, "
              f"relative error {worst:.3g})")
        return 1
    print(f"ok: the momentum of {origin} is restored ({count} tensors, "
          f"relative error {worst:.3g})")
    return 0


def main(argv):
    commands = {"meta": (cmd_meta, 2), "strict": (cmd_strict, 3),
                "same": (cmd_same, 2), "restored": (cmd_restored, 4)}
    if len(argv) < 2 or argv[1] not in commands:
        print(__doc__, file=sys.stderr)
        return 2
    function, count = commands[argv[1]]
    args = argv[2:]
    if len(args) != count:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        return function(*args)
    except (OSError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
