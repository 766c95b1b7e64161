#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Uneven data in a data-parallel job: rank 1 has 8 samples (2 steps), rank 0
# has 24 (6 steps). Rank 1's data ends, it leaves the job, and rank 0 stops
# at the same step with a warning that names rank 1, as PyTorch DDP's join:
# both exit 0, and rank 0's checkpoint is at the common step. Each rank is
# given its own checkpoint and metrics path: rank 1 writes neither. Then
# rank 1 has no data at all: no rank trains, both exit 0.
# Usage: dist-uneven.sh HAVE-MPI DATASET-TOOL
set -eu
. "$(dirname "$0")/dist-common.sh"
dist_setup dist-uneven "$1" "$2" 48

line='gst-launch-1.0 -e datasetsrc location=$DIST_WORK/fm/train seed=3 $SRC
  ! imagedec ! augment width=16 height=16 ! batcher batch-size=4
  ! cudatrainsink device=cpu model=resnet20 num-classes=10 num-threads=1
    stats-interval=1 checkpoint-interval=1 $SINK'
export RANK1_SRC="num-samples=8"
for r in 0 1; do
  export "RANK${r}_SINK=checkpoint-location=$work/rank$r.safetensors metrics-location=$work/rank$r.jsonl"
done
ranks 2 "$line" || {
  cat "$work"/rank-*.log; fail "the job did not end with status 0"; }

[ "$(ckpt meta "$work/rank0.safetensors" gst_train.step)" = 2 ] \
  || fail "rank 0's checkpoint is not at the common step 2"
[ ! -e "$work/rank1.safetensors" ] || fail "rank 1 wrote a checkpoint"
[ ! -e "$work/rank1.jsonl" ] || fail "rank 1 wrote metrics"
grep -q "rank 0: rank 1 left at step 2: stopping with it" "$work/rank-0.log" || {
  cat "$work/rank-0.log"; fail "rank 0 does not say that rank 1 left at step 2"; }
grep -q "ERROR" "$work"/rank-*.log && fail "an error was posted"
# rank 0's statistics stop at step 2, with both ranks' images
tail -1 "$work/rank0.jsonl" | grep -q '"step": 2, .*"images": 16,' || {
  cat "$work/rank0.jsonl"; fail "rank 0's last statistics are not step 2 of 16 images"; }
[ "$(grep -c train-stats "$work/rank0.jsonl")" -eq 2 ] \
  || fail "rank 0 reported other steps than 1 and 2"
ckpt strict resnet20 10 "$work/rank0.safetensors"

# a rank with no data at all: no rank trains, nothing is written, exit 0
rm -f "$work"/rank*
export RANK1_SRC="num-epochs=0"
ranks 2 "$line" || {
  cat "$work"/rank-*.log; fail "no data on rank 1: the job did not end with status 0"; }
grep -q "rank 0: rank 1 had no data to train on before the first step" \
  "$work/rank-0.log" || {
  cat "$work/rank-0.log"; fail "rank 0 does not say that rank 1 had no data"; }
[ ! -e "$work/rank0.safetensors" ] || fail "a checkpoint was written without a step"

echo "ok: rank 1 ran out after 2 steps, rank 0 stopped at step 2 with it, exit 0, one checkpoint; no data on rank 1: nobody trains"
