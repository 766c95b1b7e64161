#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# examples/train-torch.py for a few steps on a Fashion-MNIST slice, through
# the Loader with adaptive echo: it must train (finite losses, weights
# changed: the example's own exit status), evaluate, and write TensorBoard
# scalars.
# Usage: train-torch.sh GST-TRAIN-DATASET SOURCE-ROOT
set -eu
. "$2/tests/integration/fashion-mnist-slice.sh"
fashion_mnist_slice "$1" train-torch 640 200
/usr/bin/python3 "$2/examples/train-torch.py" --steps 10 --log-every 5 \
    --data "$work/fm" --logdir "$work/tb" >"$work/out.txt" 2>&1 || {
  cat "$work/out.txt"; fail "examples/train-torch.py failed"; }
cat "$work/out.txt"
grep -q "accuracy" "$work/out.txt" || fail "no test accuracy printed"
ls "$work"/tb/events.out.tfevents.* >/dev/null 2>&1 \
  || ls "$work"/tb/*/events.out.tfevents.* >/dev/null 2>&1 \
  || fail "no TensorBoard event file in $work/tb"
echo "ok: train-torch.py trained 10 steps through the Loader"
