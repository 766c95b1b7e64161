#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Resuming data-parallel training:
#   2 ranks to step 3 with a checkpoint, then 2 ranks resumed to step 6, is
#   bitwise the uninterrupted 2-rank run to step 6 (weights, batch-norm
#   statistics, momentum, step); the same with echo, resumed across the end
#   of an epoch, each rank's source starting where its shard stopped;
#   2 ranks -> 1 process and 1 process -> 2 ranks: the resumed run has the
#   checkpoint's weights, momentum and step (one more step with lr=0 keeps
#   the weights, and the momentum grows by exactly momentum x the saved
#   buffer), and warns that the global batch changed.
# Usage: dist-resume.sh HAVE-MPI DATASET-TOOL
set -eu
. "$(dirname "$0")/dist-common.sh"
dist_setup dist-resume "$1" "$2" 48

# the schedule's length is fixed (total-steps), so that a run to step 3 and
# one to step 6 train the same first steps
line="$dist_line total-steps=8 stats-interval=0"
# two ranks; one process (no launcher: it trains alone)
two() {
  # shellcheck disable=SC2086
  mpi 2 gst-launch-1.0 -e $line "$@" >"$work/log" 2>&1 || {
    cat "$work/log"; fail "2 ranks: $*"; }
}
one() {
  # shellcheck disable=SC2086
  preloaded gst-launch-1.0 -e $line "$@" >"$work/log" 2>&1 || {
    cat "$work/log"; fail "1 process: $*"; }
}

# -- 2 ranks: 3 steps + 3 resumed = 6 steps
two max-steps=3 checkpoint-location="$work/a3.safetensors"
two max-steps=6 resume-from="$work/a3.safetensors" \
  checkpoint-location="$work/a6-resumed.safetensors"
two max-steps=6 checkpoint-location="$work/a6.safetensors"
ckpt same "$work/a6-resumed.safetensors" "$work/a6.safetensors"

# -- 2 ranks with echo on decoded images, resumed across the end of an
# epoch (24 samples a rank, 48 of echo's output: 12 steps an epoch): each
# rank's source starts where its shard stopped (no batch skipped by the
# sink), and the run is still bitwise the uninterrupted one
eline="datasetsrc location=$work/fm/train seed=3 num-epochs=-1 ! imagedec
  ! echo factor=2 shuffle-buffer-size=6 seed=5 $dist_rest
    total-steps=16 stats-interval=0"
etwo() {
  # shellcheck disable=SC2086
  GST_DEBUG=datasetsrc:4 GST_DEBUG_NO_COLOR=1 mpi 2 gst-launch-1.0 -e $eline "$@" \
    >"$work/log" 2>&1 || { cat "$work/log"; fail "2 ranks with echo: $*"; }
}
etwo max-steps=10 checkpoint-location="$work/e10.safetensors"
etwo max-steps=14 resume-from="$work/e10.safetensors" \
  checkpoint-location="$work/e14-resumed.safetensors"
[ "$(grep -c "downstream resumes: starting at sample" "$work/log")" -eq 2 ] \
  || { cat "$work/log"; fail "with echo: a rank's source did not start where the checkpoint stopped"; }
etwo max-steps=14 checkpoint-location="$work/e14.safetensors"
ckpt same "$work/e14-resumed.safetensors" "$work/e14.safetensors"

# resumed RUN NAME FROM TO WARNING: RUN (one or two) resumes checkpoint
# FROM (step 3) for one more step with lr=0, with momentum 0 (TO-m0) and
# 0.9 (TO): the run warns with WARNING (a line of its log), its step is 4,
# and weights, batch-norm statistics and momentum are FROM's (ckpt restored)
resumed() {
  $1 max-steps=4 lr=0 momentum=0 resume-from="$work/$3.safetensors" \
    checkpoint-location="$work/$4-m0.safetensors"
  $1 max-steps=4 lr=0 momentum=0.9 resume-from="$work/$3.safetensors" \
    checkpoint-location="$work/$4.safetensors"
  grep -q "$5" "$work/log" || {
    cat "$work/log"; fail "$2: no warning about the global batch"; }
  [ "$(ckpt meta "$work/$4.safetensors" gst_train.step)" = 4 ] \
    || fail "$2: the step was not restored"
  ckpt restored "$work/$4.safetensors" "$work/$3.safetensors" \
    "$work/$4-m0.safetensors" 0.9
}

# -- 2 ranks -> 1: step 3 of the 2-rank run, one more step with lr=0
resumed one "2 -> 1" a3 b4 \
  "global batch of 8 (2 rank(s)); this run's is 4 (4 per rank, 1 rank(s))"

# -- 1 -> 2 ranks
one max-steps=3 checkpoint-location="$work/c3.safetensors"
resumed two "1 -> 2" c3 d4 \
  "rank 0: Resumed from a checkpoint trained with a global batch of 4 (1 rank(s)); this run's is 8 (4 per rank, 2 rank(s))"
[ "$(grep -c "Resumed from a checkpoint" "$work/log")" -eq 1 ] \
  || fail "1 -> 2: the warning is not rank 0's alone"
[ "$(ckpt meta "$work/d4.safetensors" world_size)" = 2 ] \
  || fail "1 -> 2: the new checkpoint does not say world_size 2"

echo "ok: a 2-rank resume is bitwise the uninterrupted run (with echo too, across an epoch); 2 -> 1 and 1 -> 2 restore weights, momentum and step, with a warning"
