#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Data-parallel training on WebDataset shards: 2 ranks over 3 shards of 16
# Fashion-MNIST images. Rank 0 reads shards 0 and 2 (32 images, 8 steps of
# 4), rank 1 shard 1 (16 images, 4 steps): rank 1's data ends first, it
# leaves the job and rank 0 stops at the same step, as DDP's join; both
# exit 0 and rank 0's checkpoint is at step 4. Then one shard for 2 ranks:
# an error that names both counts, and the job ends.
# Usage: dist-shards.sh HAVE-MPI DATASET-TOOL
set -eu
. "$(dirname "$0")/dist-common.sh"
dist_setup dist-shards "$1" "$2" 8
"$2" fashion-mnist --output "$work/sh" --limit-train 48 --limit-test 8 \
  --shard-size 16 >/dev/null

line='gst-launch-1.0 -e datasetsrc
  location="$DIST_WORK/sh/train-{000000..000002}.tar" num-classes=10 seed=3
  shuffle-buffer-size=8 $SRC
  ! imagedec ! augment width=16 height=16 ! batcher batch-size=4
  ! cudatrainsink device=cpu model=resnet20 num-classes=10 num-threads=1
    stats-interval=1 $SINK'
export RANK0_SINK="checkpoint-location=$work/rank0.safetensors"
ranks 2 "$line" || {
  cat "$work"/rank-*.log; fail "the job did not end with status 0"; }
[ "$(ckpt meta "$work/rank0.safetensors" gst_train.step)" = 4 ] || {
  cat "$work"/rank-*.log; fail "rank 0's checkpoint is not at the common step 4"; }
grep -q "rank 0: rank 1 left at step 4: stopping with it" "$work/rank-0.log" || {
  cat "$work/rank-0.log"; fail "rank 0 does not say that rank 1 left at step 4"; }
grep -q "ERROR" "$work"/rank-*.log && fail "an error was posted"

# one shard, two ranks: an error on every rank, the job fails
rm -f "$work"/rank*
export RANK0_SINK=""
line=$(printf '%s' "$line" | sed 's/train-{000000..000002}.tar/train-000000.tar/')
if ranks 2 "$line"; then
  cat "$work"/rank-*.log; fail "one shard for 2 ranks: the job succeeded"
fi
grep -q "names 1 shard for 2 ranks" "$work/rank-0.log" || {
  cat "$work"/rank-*.log; fail "no error naming 1 shard and 2 ranks"; }

echo "ok: 2 ranks on their own shards, uneven: rank 1 left at step 4, rank 0 stopped with it; one shard for 2 ranks: an error naming both"
