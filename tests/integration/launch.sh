#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Real gst-launch-1.0 pipelines over a Fashion-MNIST slice made by the dataset
# tool: the input stage decodes every sample, and a missing folder fails with
# a message that names it.
# Usage: launch.sh DATASET-TOOL
set -eu
tool=$1
. "$(dirname "$0")/fashion-mnist-slice.sh"

# Under AddressSanitizer the uninstrumented gst-launch-1.0 needs the runtime
# preloaded to load our plugin; nothing else in this script gets it.
launch() {
  LD_PRELOAD="${GST_TRAIN_TEST_PRELOAD:-}" gst-launch-1.0 "$@"
}
fashion_mnist_slice "$tool" launch 300 20

# 300 samples, two epochs, all decoded, in two threads.
launch -v datasetsrc location="$work/fm/train" num-epochs=2 \
    ! imagedec n-threads=2 ! fakesink silent=false >"$work/out.txt" 2>&1 || {
  cat "$work/out.txt"; echo "FAIL: pipeline failed"; exit 1; }
decoded=$(grep -c 'fakesink0.*chain' "$work/out.txt" || true)
if [ "$decoded" -ne 600 ]; then
  echo "FAIL: fakesink received $decoded buffers, expected 600"; exit 1
fi
# 28x28 gray JPEGs come out as RGB.
grep -q 'video/x-raw, format=(string)RGB, width=(int)28, height=(int)28' "$work/out.txt" || {
  echo "FAIL: no 28x28 RGB caps in the output"; exit 1; }

# A missing dataset: non-zero exit, and the error names the folder.
if launch datasetsrc location="$work/nowhere" ! imagedec ! fakesink \
    >"$work/err.txt" 2>&1; then
  echo "FAIL: a missing folder did not fail the pipeline"; exit 1
fi
grep -q "$work/nowhere\" does not exist" "$work/err.txt" || {
  cat "$work/err.txt"; echo "FAIL: error does not name the folder"; exit 1; }

echo "ok: 600 buffers decoded; missing folder reported"
