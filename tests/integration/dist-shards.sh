#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Data-parallel training on WebDataset shards: 2 ranks over 3 shards of 16
# Fashion-MNIST images. Rank 0 reads shards 0 and 2 (32 images, 8 steps of
# 4), rank 1 shard 1 (16 images, 4 steps), as docs/distributed.md splits
# them (rank R takes shards R, R + N, ...): rank 1 reads every sample of
# shard 1 once and nothing else, rank 0 samples of shards 0 and 2 alone,
# each once (datasetsrc's log names each sample it hands out). Rank 1's
# data ends first, it leaves the job and rank 0 stops at the same step, as
# DDP's join; both exit 0 and rank 0's checkpoint is at step 4. Then one
# shard for 2 ranks: an error that names both counts, and the job ends.
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
GST_DEBUG=datasetsrc:6 GST_DEBUG_NO_COLOR=1
export GST_DEBUG GST_DEBUG_NO_COLOR
ranks 2 "$line" || {
  cat "$work"/rank-*.log; fail "the job did not end with status 0"; }
unset GST_DEBUG

# the samples of shards S... ("SHARD MEMBER" lines, sorted), from the tars
samples_of() {
  for s in "$@"; do
    tar tf "$work/sh/train-00000$s.tar" | grep '\.jpg$' \
      | sed "s/^/train-00000$s.tar /"
  done | sort
}
# the samples rank R read, from datasetsrc's "sample SHARD#MEMBER, N bytes"
read_by() {
  sed -n 's|.* sample .*/\(train-[0-9]*\.tar\)#\([^,]*\), [0-9]* bytes$|\1 \2|p' \
    "$work/rank-$1.log" | sort
}
samples_of 1 >"$work/shard1.txt"
samples_of 0 2 >"$work/shards02.txt"
read_by 0 >"$work/read0.txt"
read_by 1 >"$work/read1.txt"
[ "$(wc -l <"$work/shard1.txt")" -eq 16 ] || fail "shard 1 does not hold 16 samples"
cmp -s "$work/read1.txt" "$work/shard1.txt" || {
  diff "$work/shard1.txt" "$work/read1.txt" | head -20
  fail "rank 1 did not read shard 1, every sample once, and nothing else"; }
[ -z "$(uniq -d "$work/read0.txt")" ] || {
  uniq -d "$work/read0.txt"; fail "rank 0 read samples twice"; }
[ -z "$(comm -23 "$work/read0.txt" "$work/shards02.txt")" ] || {
  comm -23 "$work/read0.txt" "$work/shards02.txt" | head -20
  fail "rank 0 read samples that are not of its shards 0 and 2"; }
# 4 steps of 4 at least (what it read ahead may come on top)
[ "$(wc -l <"$work/read0.txt")" -ge 16 ] || {
  cat "$work/read0.txt"; fail "rank 0 read fewer than the 16 samples of its 4 steps"; }
echo "rank 1 read shard 1 (16 samples), rank 0 $(wc -l <"$work/read0.txt") samples of shards $(cut -d' ' -f1 "$work/read0.txt" | sort -u | sed 's/train-0*\([0-9]\)\.tar/\1/' | tr '\n' ' ')"
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

echo "ok: 2 ranks on their own shards (rank 0: 0 and 2, rank 1: 1, each sample once), uneven: rank 1 left at step 4, rank 0 stopped with it; one shard for 2 ranks: an error naming both"
