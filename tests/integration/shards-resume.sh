#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Exact resume on WebDataset shards (6 shards of 8 Fashion-MNIST images):
# a run to step N with a checkpoint, then resumed to step M, is bitwise the
# straight run to step M (weights, batch-norm statistics, momentum, step),
# the source starting where the checkpoint stopped (its shard order, the
# place in the shard, its shuffle buffer) without reading the images before:
#   one process, resumed in the middle of a shard;
#   2 ranks (3 shards each) with echo on decoded images, resumed across the
#   end of an epoch, each rank's source restoring echo's buffer too.
# Usage: shards-resume.sh HAVE-MPI DATASET-TOOL
set -eu
. "$(dirname "$0")/dist-common.sh"
dist_setup shards-resume "$1" "$2" 8
"$2" fashion-mnist --output "$work/sh" --limit-train 48 --limit-test 8 \
  --shard-size 8 >/dev/null
shards="$work/sh/train-{000000..000005}.tar"

line="datasetsrc location=$shards num-classes=10 seed=3 num-epochs=-1
  shuffle-buffer-size=5 ! imagedec ! augment width=16 height=16
  ! batcher batch-size=4
  ! cudatrainsink device=cpu model=resnet20 num-classes=10 num-threads=1
    total-steps=12 stats-interval=0"
one() {
  # shellcheck disable=SC2086
  GST_DEBUG=datasetsrc:4 GST_DEBUG_NO_COLOR=1 preloaded gst-launch-1.0 -e \
    $line "$@" >"$work/log" 2>&1 || {
    cat "$work/log"; fail "1 process: $*"; }
}
one max-steps=5 checkpoint-location="$work/a5.safetensors"
one max-steps=9 resume-from="$work/a5.safetensors" \
  checkpoint-location="$work/a9-resumed.safetensors"
grep -q "downstream resumes: starting at sample 20 " "$work/log" || {
  cat "$work/log"; fail "the source did not start at sample 20"; }
grep -q "starting at sample 20 of epoch 0: 4 held in the shuffle buffer" \
  "$work/log" || { cat "$work/log"; fail "the shuffle buffer was not restored"; }
one max-steps=9 checkpoint-location="$work/a9.safetensors"
ckpt same "$work/a9-resumed.safetensors" "$work/a9.safetensors"

# 2 ranks with echo (24 samples a rank, 48 of echo's output: 12 steps an
# epoch), resumed at step 10 to step 14
eline="datasetsrc location=$shards num-classes=10 seed=3 num-epochs=-1
  shuffle-buffer-size=5 ! imagedec
  ! echo factor=2 shuffle-buffer-size=6 seed=5 ! augment width=16 height=16
  ! batcher batch-size=4
  ! cudatrainsink device=cpu model=resnet20 num-classes=10 num-threads=1
    total-steps=16 stats-interval=0"
two() {
  # shellcheck disable=SC2086
  GST_DEBUG=datasetsrc:4 GST_DEBUG_NO_COLOR=1 mpi 2 gst-launch-1.0 -e \
    $eline "$@" >"$work/log" 2>&1 || {
    cat "$work/log"; fail "2 ranks with echo: $*"; }
}
two max-steps=10 checkpoint-location="$work/e10.safetensors"
two max-steps=14 resume-from="$work/e10.safetensors" \
  checkpoint-location="$work/e14-resumed.safetensors"
[ "$(grep -c "downstream resumes: starting at sample" "$work/log")" -eq 2 ] || {
  cat "$work/log"; fail "with echo: a rank's source did not start where the checkpoint stopped"; }
two max-steps=14 checkpoint-location="$work/e14.safetensors"
ckpt same "$work/e14-resumed.safetensors" "$work/e14.safetensors"

echo "ok: resumes on shards are bitwise the straight runs: one process mid-shard, 2 ranks with echo across an epoch's end"
