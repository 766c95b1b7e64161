#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Soak: a million samples through echo (with its shuffle buffer), augment
# and batcher together, and through each of them alone, with the resident
# memory of the gst-launch-1.0 process sampled over the run. A leak of a
# few bytes per sample shows as a rise of megabytes between the first and
# the last quarter of the run.
#
#   bench/soak.sh [BUILD-DIR] [OUT-DIR]      (defaults: build, bench/out/soak)
#
# SAMPLES (default 1000000) fresh samples are read: a corpus of 1000 16x16
# JPEGs (10 classes, made here with PIL) read num-epochs=SAMPLES/1000 times
# by datasetsrc and decoded by imagedec, which every configuration shares
# ("decode" is that stage alone, the baseline). CONFIGS (default: all of
# them) names the configurations to run, separated by spaces. INTERVAL (default 0.5) is
# the sampling period in seconds. Per configuration OUT-DIR/NAME.csv holds
# "seconds,vmrss_kib" rows; OUT-DIR/soak.txt the table: run time, VmRSS at
# the first sample, median of the first and of the last quarter of the run,
# their difference, the least-squares slope over the second half, and
# "flat" when the last quarter is within FLAT_KIB (default 1024) of the
# first. Exit status 1 when a configuration is not flat or fails.
#
# Run it as the other benchmarks run, one at a time:
#     nice -n 19 flock /tmp/gt-bench.lock bench/soak.sh
set -eu
build=$(realpath "${1:-build}")
out=${2:-bench/out/soak}
samples=${SAMPLES:-1000000}
interval=${INTERVAL:-0.5}
flat_kib=${FLAT_KIB:-1024}
mkdir -p "$out"
out=$(realpath "$out")
corpus="$out/corpus"
epochs=$((samples / 1000))

export GST_PLUGIN_PATH_1_0="$build/gst-plugins"
export GST_REGISTRY_1_0="$out/registry.bin"

if [ ! -d "$corpus/class09" ]; then
  /usr/bin/python3 - "$corpus" <<'EOF'
import os
import sys

import numpy as np
from PIL import Image

rng = np.random.default_rng(1)
for i in range(1000):
    folder = os.path.join(sys.argv[1], f"class{i % 10:02d}")
    os.makedirs(folder, exist_ok=True)
    pixels = rng.integers(0, 256, size=(16, 16, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(os.path.join(folder, f"{i:05d}.jpg"), quality=90)
EOF
fi

input="datasetsrc location=$corpus num-epochs=$epochs seed=1 ! imagedec"
configs="decode|$input ! fakesink
echo|$input ! echo factor=2 shuffle-buffer-size=1024 seed=1 ! fakesink
echo-adaptive|$input ! echo mode=adaptive max-factor=3 shuffle-buffer-size=1024 seed=1 ! fakesink
augment|$input ! augment width=16 height=16 scale-min=0.35 seed=1 ! fakesink
batcher|$input ! batcher batch-size=32 ! fakesink
all|$input ! echo factor=2 shuffle-buffer-size=1024 seed=1 ! augment width=16 height=16 scale-min=0.35 seed=1 ! batcher batch-size=32 ! fakesink"

# VmRSS of process $1 in KiB every $interval s into $2, until it exits.
sample_rss() {
  start=$(date +%s.%N)
  while rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status" 2>/dev/null) \
      && [ -n "$rss" ]; do
    now=$(date +%s.%N)
    echo "$(echo "$now - $start" | bc),$rss" >>"$2"
    sleep "$interval"
  done
}

failed=0
: >"$out/soak.txt"
{
  echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(lscpu | sed -n 's/^Model name:[[:space:]]*//p'), $(nproc) cores"
  echo "# $samples fresh samples of 16x16 RGB; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '%-14s %8s %10s %10s %10s %8s %14s %s\n' config seconds \
    start_kib q1_kib q4_kib diff_kib 'slope_kib/min' verdict
} | tee -a "$out/soak.txt"
echo "$configs" | while IFS='|' read -r name line; do
  case " ${CONFIGS:-$name} " in *" $name "*) ;; *) continue ;; esac
  csv="$out/$name.csv"
  echo "seconds,vmrss_kib" >"$csv"
  # shellcheck disable=SC2086 # the launch line splits into words on purpose
  gst-launch-1.0 -q $line >"$out/$name.log" 2>&1 &
  pid=$!
  sample_rss "$pid" "$csv"
  if ! wait "$pid"; then
    echo "FAIL: $name: gst-launch-1.0 failed"; cat "$out/$name.log"
    echo 1 >"$out/failed"
    continue
  fi
  /usr/bin/python3 - "$csv" "$name" "$flat_kib" <<'EOF' | tee -a "$out/soak.txt"
import sys

import numpy as np

path, name, flat = sys.argv[1], sys.argv[2], float(sys.argv[3])
data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
t, rss = data[:, 0], data[:, 1]
end = t[-1]
q1 = np.median(rss[t <= end / 4])
q4 = np.median(rss[t >= 3 * end / 4])
half = t >= end / 2
slope = np.polyfit(t[half], rss[half], 1)[0] * 60 if half.sum() > 2 else float("nan")
verdict = "flat" if abs(q4 - q1) <= flat and len(rss) >= 8 else "NOT FLAT"
print(f"{name:<14} {end:8.1f} {rss[0]:10.0f} {q1:10.0f} {q4:10.0f} {q4 - q1:8.0f} "
      f"{slope:14.1f} {verdict} ({len(rss)} samples)")
EOF
  if grep -q "^$name .*NOT FLAT" "$out/soak.txt"; then echo 1 >"$out/failed"; fi
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/soak.txt"
if [ -e "$out/failed" ]; then rm -f "$out/failed"; failed=1; fi
exit $failed
