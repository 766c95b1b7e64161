#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# A 2-rank job with tensorboard-logdir, every rank given the same folder:
# rank 0 alone writes, one event file, whose scalars (read by TensorBoard's
# own reader, tensorboard_events.py) are the job's metrics.jsonl numbers,
# the all-reduce time and the slowest rank among them.
# Usage: dist-tensorboard.sh HAVE-MPI DATASET-TOOL
set -eu
. "$(dirname "$0")/dist-common.sh"
dist_setup dist-tensorboard "$1" "$2" 32

line="$dist_line stats-interval=2 max-steps=6 tensorboard-logdir=$work/runs/job
    metrics-location=$work/job.jsonl"
# shellcheck disable=SC2086
mpi 2 gst-launch-1.0 -e $line >"$work/log" 2>&1 || {
  cat "$work/log"; fail "the 2-rank job failed"; }
/usr/bin/python3 "$dist_here/tensorboard_events.py" "$work/runs/job" --files 1 \
  --run "$work/job.jsonl@1" --steps 2,4,6 --require-tag dist/comm_time \
  --require-tag dist/slowest_rank || fail "the job's event file"
echo "PASS"
