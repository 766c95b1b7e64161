#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The example applications train and stop cleanly: examples/train-app (C,
# from a launch description and from element factories) and
# examples/train-app.py (PyGObject) each run until their step count, send
# EOS, and leave a checkpoint of the step in flight when they stopped the
# sink; a missing dataset fails with its name.
# Usage: examples.sh DATASET-TOOL TRAIN-APP SOURCE-DIR
set -eu
tool=$1
app=$2
source_dir=$3
. "$(dirname "$0")/fashion-mnist-slice.sh"
fashion_mnist_slice "$tool" examples 400 8

check_run() { # NAME: the run's output is $work/NAME.txt
  out="$work/$1.txt"
  grep -q "^step 10 | loss " "$out" || { cat "$out"; fail "$1: no progress line for step 10"; }
  grep -q "enough steps: sending end-of-stream" "$out" || { cat "$out"; fail "$1: did not send EOS"; }
  grep -q "end of stream: stopped cleanly" "$out" || { cat "$out"; fail "$1: did not reach EOS"; }
  [ -s "$work/$1.safetensors" ] || fail "$1: no checkpoint"
  # The examples tell the sink to stop as it posts the statistics of step
  # 10 (a bus sync handler, in the sink's thread): the batch of step 11 has
  # come in then (the sink ends a step when the next batch arrives) and is
  # the step in flight, which the stop action finishes, checkpoints and
  # reports in the run's last statistics. Step 11 and no other: no step
  # later than it is justified, whatever the load.
  step=$(/usr/bin/python3 "$(dirname "$0")/dist_checkpoint.py" meta "$work/$1.safetensors" gst_train.step)
  [ "$step" = 11 ] || { cat "$out"; fail "$1: the checkpoint is at step $step, not 11, the step in flight when the sink was told to stop"; }
  last=$(sed -n 's/^step \([0-9]*\) |.*/\1/p' "$out" | tail -n 1)
  [ "$last" = 11 ] || { cat "$out"; fail "$1: the last statistics are of step $last, not 11"; }
  echo "ok: $1 (stopped at step 11)"
}

preloaded "$app" --steps 10 --checkpoint "$work/c-launch.safetensors" "$work/fm/train" \
  >"$work/c-launch.txt" 2>&1 || { s=$?; cat "$work/c-launch.txt"; fail "c-launch exited $s"; }
check_run c-launch
preloaded "$app" --factories --steps 10 --checkpoint "$work/c-factories.safetensors" \
  "$work/fm/train" >"$work/c-factories.txt" 2>&1 \
  || { s=$?; cat "$work/c-factories.txt"; fail "c-factories exited $s"; }
check_run c-factories
# Under ASan, LeakSanitizer would judge the Python interpreter's own
# allocations at exit: our plugins' leaks are the C example's to show.
ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
preloaded /usr/bin/python3 "$source_dir/examples/train-app.py" --steps 10 \
  --checkpoint "$work/python.safetensors" "$work/fm/train" >"$work/python.txt" 2>&1 \
  || { s=$?; cat "$work/python.txt"; fail "python exited $s"; }
check_run python

if preloaded "$app" "$work/nowhere" >"$work/missing.txt" 2>&1; then
  fail "a missing dataset did not fail"
fi
grep -q "$work/nowhere" "$work/missing.txt" || { cat "$work/missing.txt"; fail "the error does not name the folder"; }
echo "ok: missing dataset reported"
