#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Faults in a data-parallel job never hang it:
#   a rank killed (-9) mid-run: mpirun exits non-zero within 30 s;
#   a rank that cannot start (a missing dataset folder; a missing checkpoint
#   folder, found before it joins) and one whose pipeline fails mid-run (a
#   corrupt JPEG with imagedec on-error=fail): mpirun exits non-zero within
#   30 s, and the error names the rank;
#   a non-finite loss on rank 1 only: every rank stops with an error at the
#   same step, naming rank 1;
#   SIGTERM to one gst-train rank (its Ctrl-C): it stops, its peer stops at
#   the same step with a warning, both exit 0, the checkpoint at that step;
#   an application that never stops its pipeline after the sink's error:
#   the sink's error-timeout ends the job, naming the rank.
# Usage: dist-faults.sh HAVE-MPI DATASET-TOOL GST-TRAIN PLAY-DEAF
set -eu
. "$(dirname "$0")/dist-common.sh"
dist_setup dist-faults "$1" "$2" 48
export GST_TRAIN="$3" PLAY_DEAF="$4"

src='datasetsrc location=$DIST_WORK/fm/train'
rest=$dist_rest

# waits up to 30 s until $1 has at least $2 lines (a run that trains on)
wait_lines() {
  deadline=$(($(date +%s) + 30))
  while [ "$(cat "$1" 2>/dev/null | wc -l)" -lt "$2" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "$1 did not reach $2 lines"
    sleep 0.1
  done
}

# expect_failure NAME SECONDS: the job in the background ($job) ended with a
# non-zero status within SECONDS of $started
expect_failure() {
  status=0
  wait "$job" || status=$?
  took=$(elapsed "$started" "$(now)")
  [ "$status" -ne 0 ] || { cat "$work"/rank-*.log; fail "$1: mpirun exited 0"; }
  [ "$status" -ne 124 ] || fail "$1: the job hung (killed at its bound)"
  awk -v t="$took" -v m="$2" 'BEGIN { exit !(t < m) }' \
    || fail "$1: mpirun took $took s to end, more than $2"
  echo "$1: mpirun exited $status after $took s"
}

# start_job 'COMMAND LINE' [VAR=VALUE]: the 2-rank job (ranks) in the
# background ($job, killed after 60 s with status 124: bounded.sh;
# $started: its start), with VAR (a RANKr_SRC, RANKr_DEC or RANKr_SINK of
# dist-rank.sh) set where given
start_job() {
  rm -f "$work"/rank-*
  started=$(now)
  (
    [ -z "${2:-}" ] || export "$2"
    GT_TEST_MPI_BOUND_S=60
    ranks 2 "$1"
  ) &
  job=$!
}

# job_fails NAME 'COMMAND LINE' [VAR=VALUE] [LOG PATTERN WHY]: start_job,
# then the job ends non-zero within 30 s (expect_failure) and, where LOG
# (a log in $work, or a glob of them) is given, a line of it matches the
# grep PATTERN, else the log is shown and the test fails with WHY
job_fails() {
  start_job "$2" "${3:-}"
  expect_failure "$1" 30
  [ $# -gt 3 ] || return 0
  # shellcheck disable=SC2086 # LOG may be a glob
  grep -q "$5" "$work"/$4 || { cat "$work"/$4; fail "$6"; }
}

# -- a rank killed mid-run
rm -f "$work/m.jsonl"
start_job "gst-launch-1.0 -e $src num-epochs=-1 ! imagedec $rest stats-interval=1
     metrics-location=\$DIST_WORK/m.jsonl"
wait_lines "$work/m.jsonl" 2
kill -9 "$(cat "$work/rank-1.pid")"
started=$(now)
expect_failure "kill -9 of rank 1" 30

# -- a rank that cannot start: rank 1's folder is missing
job_fails "missing folder on rank 1" "\$GST_TRAIN $src \$SRC ! imagedec $rest" \
  "RANK1_SRC=location=$work/nowhere" \
  rank-1.log "^rank 1: error from datasetsrc0: .*nowhere" \
  "rank 1's error does not name the rank"

# -- a sink that cannot start on rank 0 (its checkpoint folder is a file,
# so it can be neither used nor made): it never joins, and the launcher
# ends the job
: >"$work/not-a-folder"
job_fails "checkpoint folder that is a file on rank 0" \
  "gst-launch-1.0 -e $src ! imagedec $rest \$SINK" \
  "RANK0_SINK=checkpoint-location=$work/not-a-folder/run.safetensors" \
  rank-0.log "rank 0: Cannot write checkpoint-location" \
  "rank 0's error does not name the rank"

# -- a pipeline error mid-run on rank 1: the last class's files are not
# JPEGs; rank 0 skips them (a warning each), rank 1 fails at the first
for file in "$work"/fm/train/9_*/*.jpg; do
  echo "not a JPEG" >"$file"
done
job_fails "corrupt JPEG on rank 1" \
  "\$GST_TRAIN $src shuffle=false ! imagedec \$DEC $rest" \
  "RANK1_DEC=on-error=fail" \
  rank-1.log "^rank 1: error from imagedec0: " \
  "rank 1's error does not name the rank"

# -- a non-finite loss on rank 1 only (its images scaled to infinity):
# both ranks stop at step 1 with the error, which names rank 1
job_fails "non-finite loss on rank 1" \
  "gst-launch-1.0 -e $src shuffle=false ! imagedec $rest \$SINK" \
  "RANK1_SINK=mean=0,0,0 std=1e-45,1e-45,1e-45"
for r in 0 1; do
  grep -q "rank $r: Training diverged: step 1: the loss of rank 1 was not finite" \
    "$work/rank-$r.log" || {
    cat "$work/rank-$r.log"; fail "rank $r did not stop at step 1 naming rank 1"; }
done

# -- an application that never stops its pipeline after an error, as
# gst-launch-1.0 does when the error comes before its main loop runs (it
# hung about one run in fifteen with the rank-split error below): each rank's
# sink posts the error, nobody reacts, and error-timeout=2 ends the job
job_fails "an application deaf to the sink's error" \
  "\$PLAY_DEAF $src num-ranks=3 ! imagedec $rest error-timeout=2" "" \
  "rank-*.log" \
  "rank [01]: the pipeline was not stopped within error-timeout=2 s of the sink's error" \
  "no rank said why it ended the job"

# -- SIGTERM to rank 1's gst-train: a stop, as Ctrl-C; rank 0 stops with it
rm -f "$work/m.jsonl" "$work/stop.safetensors"
start_job "\$GST_TRAIN $src num-epochs=-1 ! imagedec $rest stats-interval=1
     metrics-location=\$DIST_WORK/m.jsonl
     checkpoint-location=\$DIST_WORK/stop.safetensors"
wait_lines "$work/m.jsonl" 2
kill -TERM "$(cat "$work/rank-1.pid")"
wait "$job" || { cat "$work"/rank-*.log; fail "a stopped job did not exit 0"; }
step=$(ckpt meta "$work/stop.safetensors" gst_train.step)
grep -q "^rank 0: warning from cudatrainsink0: rank 1 left at step $step: stopping with it" \
  "$work/rank-0.log" || {
  cat "$work"/rank-*.log; fail "rank 0 did not stop at rank 1's step $step"; }
grep -q "stopped at step $step; checkpoint written" "$work/rank-0.log" \
  || fail "rank 0's closing line is not at step $step"
grep -q "^rank 1: interrupt: stopping" "$work/rank-1.log" \
  || fail "rank 1 did not take SIGTERM as a stop"

echo "ok: kill -9, a missing folder, a corrupt file and a non-finite loss end the job; SIGTERM stops both ranks at step $step"
