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

# shard-index and num-shards, the names of rank and num-ranks before
# "shard" came to mean a tar file, still split on a launch line (part 1 of
# 3: 100 of the 300 samples, as with the new names), and gst-inspect-1.0
# says they are deprecated.
for split in old:"shard-index=1 num-shards=3" new:"rank=1 num-ranks=3"; do
  which=${split%%:*} names=${split#*:}
  # shellcheck disable=SC2086
  launch -v datasetsrc location="$work/fm/train" seed=4 $names \
      ! fakesink silent=false >"$work/split.txt" 2>&1 || {
    cat "$work/split.txt"; echo "FAIL: $names failed"; exit 1; }
  # each buffer's offset is its sample's index in the dataset
  grep 'fakesink0.*chain' "$work/split.txt" | grep -o 'offset: [0-9]*' \
      >"$work/split-$which.txt" || true
  read=$(wc -l <"$work/split-$which.txt")
  [ "$read" -eq 100 ] || {
    echo "FAIL: $names read $read samples, expected 100"; exit 1; }
done
cmp -s "$work/split-old.txt" "$work/split-new.txt" || {
  echo "FAIL: the old and the new names read different samples"; exit 1; }
LD_PRELOAD="${GST_TRAIN_TEST_PRELOAD:-}" gst-inspect-1.0 datasetsrc \
    >"$work/inspect.txt" 2>&1 || {
  cat "$work/inspect.txt"; echo "FAIL: gst-inspect-1.0 datasetsrc"; exit 1; }
for pair in shard-index:rank num-shards:num-ranks; do
  old=${pair%%:*} new=${pair#*:}
  grep -A1 "^  $old *: Deprecated alias of $new; " "$work/inspect.txt" \
      | grep -q "flags: .*deprecated" || {
    cat "$work/inspect.txt"
    echo "FAIL: gst-inspect-1.0 does not show $old as deprecated"; exit 1; }
  grep -A1 "^  $new *: " "$work/inspect.txt" | grep -q "deprecated" && {
    echo "FAIL: gst-inspect-1.0 shows $new as deprecated"; exit 1; }
done

echo "ok: 600 buffers decoded; missing folder reported; shard-index and num-shards split as rank and num-ranks, deprecated"
