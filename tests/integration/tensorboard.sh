#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# cudatrainsink's tensorboard-logdir, read back with TensorBoard's own
# reader (tensorboard_events.py: every record's CRC, then EventAccumulator):
#   a run's scalars are its metrics.jsonl numbers at their steps; a resumed
#   run adds a file and TensorBoard shows one series, each step once; an
#   evaluation adds its result at the checkpoint's step; a run resumed from
#   an older checkpoint replaces the steps after it; the echo factor appears
#   once echo repeats; a folder that cannot be made or written is an error
#   at start that names it, before any training; a disk that fills during
#   the run is one warning, training goes on to the end, and the file keeps
#   what it had, readable; gst-train --tensorboard sets the property. The
#   2-rank job: dist-tensorboard.sh.
# The read-only and the full disk are small tmpfs mounts in a private mount
# namespace (unshare: root, as CI runs), gone when the namespace ends.
# Usage: tensorboard.sh DATASET-TOOL GST-TRAIN
set -eu
. "$(dirname "$0")/fashion-mnist-slice.sh"
here=$(cd "$(dirname "$0")" && pwd)
fashion_mnist_slice "$1" tensorboard 64 16
app=$2

line="datasetsrc location=$work/fm/train seed=3 num-epochs=-1 ! imagedec
  ! augment width=16 height=16 ! batcher batch-size=8
  ! cudatrainsink device=cpu model=resnet20 num-classes=10 num-threads=1
    total-steps=16 stats-interval=2"
eline="datasetsrc location=$work/fm/test shuffle=false ! imagedec
  ! augment width=16 height=16 crop=resize ! batcher batch-size=8
    drop-remainder=false
  ! cudatrainsink mode=eval device=cpu model=resnet20 num-classes=10
    num-threads=1"
# train ARGS / evaluate ARGS: the pipeline above with cudatrainsink's ARGS
train() {
  # shellcheck disable=SC2086
  preloaded gst-launch-1.0 -e $line "$@" >"$work/log" 2>&1 || {
    cat "$work/log"; fail "training: $*"; }
}
evaluate() {
  # shellcheck disable=SC2086
  preloaded gst-launch-1.0 -e $eline "$@" >"$work/log" 2>&1 || {
    cat "$work/log"; fail "evaluation: $*"; }
}
check() {
  /usr/bin/python3 "$here/tensorboard_events.py" "$@" || fail "tensorboard_events.py $*"
}

# -- a run, its resume, its evaluation: one folder, one series
runs=$work/runs
train max-steps=6 tensorboard-logdir="$runs/a" metrics-location="$work/a1.jsonl" \
  checkpoint-location="$work/a6.safetensors"
check "$runs/a" --files 1 --run "$work/a1.jsonl@1" --steps 2,4,6
train max-steps=12 tensorboard-logdir="$runs/a" metrics-location="$work/a2.jsonl" \
  resume-from="$work/a6.safetensors" checkpoint-location="$work/a12.safetensors"
check "$runs/a" --files 2 --run "$work/a1.jsonl@1" --run "$work/a2.jsonl@7" \
  --steps 2,4,6,8,10,12
evaluate tensorboard-logdir="$runs/a" metrics-location="$work/a3.jsonl" \
  resume-from="$work/a12.safetensors"
check "$runs/a" --files 3 --run "$work/a1.jsonl@1" --run "$work/a2.jsonl@7" \
  --eval "$work/a3.jsonl@12" --require-tag eval/top1 --steps 2,4,6,8,10,12

# -- resumed twice from the same checkpoint (the second run's steps after
# it replace the first's): 2, 4 of the first run, 6 of the third, no 8
train max-steps=4 tensorboard-logdir="$runs/b" metrics-location="$work/b1.jsonl" \
  checkpoint-location="$work/b4.safetensors"
train max-steps=8 tensorboard-logdir="$runs/b" metrics-location="$work/b2.jsonl" \
  resume-from="$work/b4.safetensors"
train max-steps=6 tensorboard-logdir="$runs/b" metrics-location="$work/b3.jsonl" \
  resume-from="$work/b4.safetensors"
check "$runs/b" --files 3 --run "$work/b1.jsonl@1" --run "$work/b2.jsonl@5" \
  --run "$work/b3.jsonl@5" --steps 2,4,6

# -- gst-train --tensorboard DIR: the same, through the application
# shellcheck disable=SC2086
"$app" -q --tensorboard "$runs/app" $line max-steps=4 \
  metrics-location="$work/app.jsonl" >"$work/log" 2>&1 || {
  cat "$work/log"; fail "gst-train --tensorboard"; }
check "$runs/app" --files 1 --run "$work/app.jsonl@1" --steps 2,4

# -- echo: its factor too
line="datasetsrc location=$work/fm/train seed=3 num-epochs=-1 ! imagedec
  ! echo factor=2 shuffle-buffer-size=8 ! augment width=16 height=16
  ! batcher batch-size=8
  ! cudatrainsink device=cpu model=resnet20 num-classes=10 num-threads=1
    stats-interval=2"
train max-steps=4 tensorboard-logdir="$runs/echo" metrics-location="$work/echo.jsonl"
check "$runs/echo" --files 1 --run "$work/echo.jsonl@1" --require-tag echo/factor

# -- folders that cannot be made or written: an error at start, naming
# the folder, and nothing trained
bad_start() {
  # shellcheck disable=SC2086
  if preloaded "$@" >"$work/log" 2>&1; then
    cat "$work/log"; fail "started with an unusable tensorboard-logdir"
  fi
  grep "tensorboard-logdir" "$work/log" | grep -q "$bad" \
    || { cat "$work/log"; fail "the error does not name $bad"; }
  [ ! -e "$work/bad.jsonl" ] || fail "opened the metrics after the error"
}
touch "$work/plain-file"
bad="$work/plain-file/run"
bad_start gst-launch-1.0 -e $line max-steps=2 tensorboard-logdir="$bad" \
  metrics-location="$work/bad.jsonl"
grep -q "Not a directory" "$work/log" || { cat "$work/log"; fail "no reason"; }

mkdir "$work/mnt"
# in_tmpfs OPTIONS SCRIPT COMMAND...: sh runs SCRIPT with COMMAND as its
# arguments in a mount namespace where $work/mnt is a 64 KiB tmpfs mounted
# with OPTIONS
in_tmpfs() {
  opts=$1
  script=$2
  shift 2
  unshare --mount sh -c \
    'mount -t tmpfs -o "$1,size=64k" tmpfs "$2" && shift 2 && exec "$@"' \
    in_tmpfs "$opts" "$work/mnt" sh -c "$script" in_tmpfs "$@"
}
# a read-only file system
bad="$work/mnt/run"
# shellcheck disable=SC2016,SC2086
in_tmpfs ro 'exec env LD_PRELOAD="${GST_TRAIN_TEST_PRELOAD:-}" "$@"' \
  gst-launch-1.0 -e $line max-steps=2 tensorboard-logdir="$bad" \
  metrics-location="$work/bad.jsonl" >"$work/log" 2>&1 \
  && { cat "$work/log"; fail "started with a read-only tensorboard-logdir"; }
grep "tensorboard-logdir" "$work/log" | grep "$bad" | grep -q "Read-only" \
  || { cat "$work/log"; fail "the error does not name $bad and the reason"; }
[ ! -e "$work/bad.jsonl" ] || fail "opened the metrics after the error"

# -- a disk that fills: one page (4 KiB) free at start, which the first
# reports fill; then one warning, and training goes on to step 16; the
# event file is copied out before the namespace, and its tmpfs, go
# shellcheck disable=SC2016
fill_then_run='
  dd if=/dev/zero of="$TB_MNT/room" bs=4096 count=1 2>/dev/null
  dd if=/dev/zero of="$TB_MNT/filler" bs=4096 2>/dev/null
  rm "$TB_MNT/room"
  env LD_PRELOAD="${GST_TRAIN_TEST_PRELOAD:-}" "$@"
  status=$?
  cp -r "$TB_MNT/run" "$TB_WORK/full-copy"
  exit $status'
status=0
# shellcheck disable=SC2086
TB_MNT="$work/mnt" TB_WORK="$work" in_tmpfs rw "$fill_then_run" \
  gst-launch-1.0 -e $line stats-interval=1 max-steps=16 \
  tensorboard-logdir="$work/mnt/run" metrics-location="$work/full.jsonl" \
  checkpoint-location="$work/full.safetensors" >"$work/log" 2>&1 || status=$?
[ "$status" -eq 0 ] || { cat "$work/log"; fail "a full disk stopped training (exit $status)"; }
[ "$(grep -c "No space left on device" "$work/log")" -eq 1 ] \
  || { cat "$work/log"; fail "not one warning about the full disk"; }
grep -q "Training goes on" "$work/log" || { cat "$work/log"; fail "the warning does not say training goes on"; }
[ "$(grep -c '"train-stats"' "$work/full.jsonl")" -eq 16 ] \
  || fail "training did not go on to step 16"
[ -s "$work/full.safetensors" ] || fail "no checkpoint after the full disk"
check "$work/full-copy" --files 1 --run "$work/full.jsonl@1" --prefix

echo "PASS"
