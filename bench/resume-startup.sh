#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Start-up time of an exact resume deep into a long list file.
#
#   bench/resume-startup.sh [--runs N] [--lines N] [--at N] [--build DIR]
#
# Makes 8 photos (bench/make-corpus.py) and a list file of --lines lines
# (default 1,000,000) that repeats them, trains one step from sample 0 to
# get a checkpoint, and writes a copy of it whose header says that training
# stopped at sample --at (default 900,000: gst_train.step, samples_seen and
# fresh-images changed, the tensors kept). Then, median of N interleaved
# runs, the wall time of gst-train for:
#   (a) one step from sample 0                       (the start-up floor)
#   (b) one step resumed at sample --at              (exact resume)
#   (c) (a) with echo factor=2 shuffle-buffer-size=1024 after imagedec
#   (d) (b) with that echo: echo replays its draws and the source re-reads
#       only the shuffle buffer's window
# and the rate of the input alone (4000 samples to fakesink), from which the time
# the old resume (every skipped sample read, decoded and augmented, then
# dropped at the sink) would take follows. Prints a Markdown table.
# The runs are short: the script takes /tmp/gt-bench.lock once, for all of
# them, so that no other benchmark runs in between.
# The launch lines are split into words on purpose.
# shellcheck disable=SC2086
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=3
LINES=1000000
AT=900000
BUILD=$ROOT/build
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --lines) LINES=$2; shift 2 ;;
    --at) AT=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    *) sed -n '/SPDX-License-Identifier/d; 2,20s/^# \{0,1\}//p' "$0"; exit 2 ;;
  esac
done
BATCH=50
OUT=$ROOT/bench/out/resume
mkdir -p "$OUT"
export GST_PLUGIN_PATH_1_0=$BUILD/gst-plugins
export LD_LIBRARY_PATH=$BUILD/gst-plugins:$BUILD/trainer:$BUILD/elements
export GST_REGISTRY_1_0=$OUT/registry.bin
APP=$BUILD/pipelines/gst-train

/usr/bin/python3 "$ROOT/bench/make-corpus.py" --count 8 --out "$OUT/corpus" >/dev/null
/usr/bin/python3 - "$OUT" "$LINES" <<'PY'
import glob, os, sys
out, lines = sys.argv[1], int(sys.argv[2])
files = sorted(glob.glob(os.path.join(out, "corpus", "*", "*.jpg")))
with open(os.path.join(out, "list.txt"), "w") as f:
    for i in range(lines):
        p = files[i % len(files)]
        f.write("%s\t%d\n" % (os.path.relpath(p, out), i % 10))
PY

src="datasetsrc location=$OUT/list.txt seed=1 num-epochs=-1 ! imagedec"
tail="augment width=32 height=32 seed=2 ! batcher batch-size=$BATCH
  ! cudatrainsink device=cpu model=resnet20 num-classes=10 num-threads=1
    total-steps=100000 stats-interval=0"
plain="$src ! $tail"
# the input alone, over 4000 samples: what the old resume did per sample
input="datasetsrc location=$OUT/list.txt seed=1 num-samples=4000 ! imagedec
  ! augment width=32 height=32 seed=2 ! batcher batch-size=$BATCH ! fakesink"
echoed="$src ! echo factor=2 shuffle-buffer-size=1024 seed=3 ! $tail"

"$APP" -q $plain max-steps=1 checkpoint-location="$OUT/step1.safetensors" >/dev/null
STEP=$((AT / BATCH))
/usr/bin/python3 - "$OUT/step1.safetensors" "$OUT/at.safetensors" "$STEP" "$AT" <<'PY'
import json, struct, sys
src, dst, step, at = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
data = open(src, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
meta = header["__metadata__"]
meta["gst_train.step"] = step
meta["samples_seen"] = at
meta["fresh-images"] = at
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
open(dst, "wb").write(struct.pack("<Q", len(text)) + text + data[8 + n:])
PY

seconds() { # PROGRAM ARGS...: wall seconds of one run
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >"$OUT/run.log" 2>&1 || { cat "$OUT/run.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  echo "$t0 $t1" | awk '{printf "%.2f", $2 - $1}'
}
median() { tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

exec 9>/tmp/gt-bench.lock
flock 9
LOAD0=$(uptime | sed 's/.*load average/load average/')
a=; b=; c=; d=; r=
for _ in $(seq "$RUNS"); do
  a="$a $(seconds "$APP" -q $plain max-steps=1)"
  b="$b $(seconds "$APP" -q $plain max-steps=$((STEP + 1)) resume-from=$OUT/at.safetensors)"
  c="$c $(seconds "$APP" -q $echoed max-steps=1)"
  d="$d $(seconds "$APP" -q $echoed max-steps=$((STEP + 1)) resume-from=$OUT/at.safetensors)"
  r="$r $(seconds gst-launch-1.0 -q $input)"
done
# check that the resumed source started at --at (its INFO line)
GST_DEBUG=datasetsrc:4,echo:4 GST_DEBUG_NO_COLOR=1 "$APP" -q $plain \
  max-steps=$((STEP + 1)) resume-from="$OUT/at.safetensors" 2>&1 \
  | grep -o "starting at sample [0-9]* of epoch [0-9]*" | head -1
GST_DEBUG=datasetsrc:4,echo:4 GST_DEBUG_NO_COLOR=1 "$APP" -q $echoed \
  max-steps=$((STEP + 1)) resume-from="$OUT/at.safetensors" 2>&1 \
  | grep -o "resuming after .*still held" | head -1
flock -u 9

A=$(echo $a | median); B=$(echo $b | median); C=$(echo $c | median)
D=$(echo $d | median); R=$(echo $r | median)
RATE=$(awk -v r="$R" 'BEGIN {printf "%.0f", 4000 / r}')
OLD=$(awk -v rate="$RATE" -v at="$AT" 'BEGIN {printf "%.0f", at / rate}')
echo
echo "| Run (gst-train, one step, resnet20 on the CPU, batch $BATCH) | seconds (median of $RUNS) | all runs |"
echo "|---|---:|---|"
echo "| (a) from sample 0 | $A |$a |"
echo "| (b) resumed at sample $AT of $LINES | $B |$b |"
echo "| (c) (a) with echo factor=2 shuffle-buffer-size=1024 | $C |$c |"
echo "| (d) (b) with that echo | $D |$d |"
echo
echo "The input alone (datasetsrc ! imagedec ! augment ! batcher ! fakesink, 4000 samples): $RATE images/s ($R s);"
echo "the old resume (read, decode, augment and drop $AT samples) would take about $OLD s."
echo "Load before: $LOAD0; after: $(uptime | sed 's/.*load average/load average/')"
