#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The example applications train and stop cleanly: examples/train-app (C,
# from a launch description and from element factories) and
# examples/train-app.py (PyGObject) each run until their step count, send
# EOS, and leave a checkpoint of the step in flight when they stopped the
# sink; at Ctrl-C mid-training (SIGINT) they stop the same way: exit 0, a
# whole checkpoint at the step of their last statistics and no temporary
# file; a missing dataset fails with its name.
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

# alive PID: the process is there and not a zombie (a child the shell has
# not reaped yet still answers kill -0).
alive() { [ -e "/proc/$1/stat" ] && ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat"; }

# interrupt_run NAME COMMAND...: COMMAND (a training with no step count in
# reach, writing $work/NAME.safetensors) gets SIGINT once its output has
# the statistics of step 5, as at Ctrl-C in a terminal: SIGINT is at its
# default disposition when it starts (env --default-signal; a script's
# background job would start with it ignored), so that PyGObject's main
# loop behaves as there. timeout(1) bounds the run and passes SIGINT on;
# only COMMAND is preloaded (see preloaded).
interrupt_run() {
  name=$1
  shift
  out="$work/$name.txt"
  timeout -s KILL 240 env --default-signal=INT \
    LD_PRELOAD="${GST_TRAIN_TEST_PRELOAD:-}" "$@" >"$out" 2>&1 &
  pid=$!
  tries=0
  until grep -q "^step 5 | loss " "$out"; do
    tries=$((tries + 1))
    if [ "$tries" -gt 1800 ] || ! alive "$pid"; then
      kill -KILL "$pid" 2>/dev/null || true
      status=0
      wait "$pid" || status=$?
      cat "$out"
      fail "$name: no statistics of step 5 to interrupt after $((tries / 10)) s (exit status $status)"
    fi
    sleep 0.1
  done
  kill -INT "$pid"
  status=0
  wait "$pid" || status=$?
  [ "$status" = 0 ] || { cat "$out"; fail "$name: exited $status after SIGINT, not 0"; }
  grep -q "^train-app: interrupted: sending end-of-stream" "$out" \
    || { cat "$out"; fail "$name: SIGINT not acknowledged"; }
  ! grep -q "enough steps" "$out" || { cat "$out"; fail "$name: stopped for its steps, not for SIGINT"; }
  grep -q "end of stream: stopped cleanly" "$out" || { cat "$out"; fail "$name: did not reach EOS"; }
  [ -s "$work/$name.safetensors" ] || { cat "$out"; fail "$name: no checkpoint"; }
  # written to NAME.safetensors.tmp-XXXXXX, then renamed over
  leftover=$(find "$work" -maxdepth 1 -name "$name.safetensors.*")
  [ -z "$leftover" ] || fail "$name: left $leftover"
  # meta reads every tensor of the file: a cut one fails here
  step=$(/usr/bin/python3 "$(dirname "$0")/dist_checkpoint.py" meta \
    "$work/$name.safetensors" gst_train.step) \
    || { cat "$out"; fail "$name: the checkpoint does not read"; }
  last=$(sed -n 's/^step \([0-9]*\) |.*/\1/p' "$out" | tail -n 1)
  [ "$step" = "$last" ] || { cat "$out"; fail "$name: the checkpoint is at step $step, the last statistics of step $last"; }
  [ "$step" -gt 5 ] || { cat "$out"; fail "$name: the checkpoint is at step $step, not after the statistics of step 5"; }
  echo "ok: $name (SIGINT after the statistics of step 5, stopped at step $step)"
}

interrupt_run c-interrupted "$app" --steps 100000 --checkpoint "$work/c-interrupted.safetensors" \
  "$work/fm/train"
ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
interrupt_run python-interrupted /usr/bin/python3 "$source_dir/examples/train-app.py" \
  --steps 100000 --checkpoint "$work/python-interrupted.safetensors" "$work/fm/train"

if preloaded "$app" "$work/nowhere" >"$work/missing.txt" 2>&1; then
  fail "a missing dataset did not fail"
fi
grep -q "$work/nowhere" "$work/missing.txt" || { cat "$work/missing.txt"; fail "the error does not name the folder"; }
echo "ok: missing dataset reported"
