#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The per-image cost of each stage of the input pipeline on one core, for the
# scaling model in docs/benchmarks/input-pipeline.md: read, + decode (whole
# images), + augment (once with whole images decoded, once with imagedec
# decoding only the crop, the default), + batcher (its copy), + echo
# factor=2 before the batcher, each stage added to the one before, everything in the streaming thread
# (n-threads=1 / datasetsrc n-threads=0), pinned to core 0 with taskset.
#
#   flock /tmp/gt-bench.lock bench/input-serial.sh [--runs 5]
#
# Uses the release tree and the corpus that bench/input-pipeline.py makes
# (build-bench/, bench/corpus/: run that first). Prints, per stage, the
# median over --runs interleaved rounds of the CPU time (user + system) per
# image and of the wall time per image, start-up (fakesrc ! fakesink)
# subtracted, and the load average before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5
[ "${1:-}" = --runs ] && runs=$2
build=$PWD/build-bench
corpus=$PWD/bench/corpus
[ -d "$corpus" ] && [ -f "$build/build.ninja" ] || {
    echo "input-serial.sh: run bench/input-pipeline.py first (build-bench/, bench/corpus/)" >&2
    exit 1
}
export GST_PLUGIN_PATH_1_0=$build/gst-plugins
export GST_REGISTRY_1_0=$PWD/bench/out/registry-serial.bin
unset GST_PLUGIN_PATH
mkdir -p bench/out
out=bench/out/input-serial.txt
: >"$out"

src="datasetsrc location=$corpus num-epochs=2 seed=1 n-threads=0"
dec="imagedec n-threads=1"
aug="augment width=224 height=224 seed=1 n-threads=1"
count=$(find "$corpus" -name '*.jpg' | wc -l)
n=$((2 * count))

one() { # NAME IMAGES PIPELINE...
    local name=$1 images=$2
    shift 2
    local t
    t=$({ /usr/bin/time -f "%e %U %S" taskset -c 0 gst-launch-1.0 -q "$@"; } 2>&1 | tail -1)
    echo "$name $images $t" >>"$out"
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$runs"); do
    one start 0 fakesrc num-buffers=1 ! fakesink
    one read "$n" $src ! fakesink
    one read+decode "$n" $src ! $dec ! fakesink
    # whole images decoded, then cropped (as before decode-region)
    one read+decode+augment,whole "$n" $src ! $dec decode-region=false ! $aug ! fakesink
    # imagedec decodes only augment's crop box (decode-region, the default)
    one read+decode+augment "$n" $src ! $dec ! $aug ! fakesink
    one read+decode+augment+batcher $((n / 256 * 256)) $src ! $dec ! $aug ! batcher batch-size=256 ! fakesink
    # echo after augment: the batcher copies every emission, twice per image
    one read+decode+augment+echo2+batcher $((2 * n / 256 * 256)) $src ! $dec ! $aug ! echo factor=2 ! batcher batch-size=256 ! fakesink
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

/usr/bin/python3 - "$out" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, images, wall, user, system = line.split()
    rows.setdefault(name, []).append((int(images), float(wall), float(user) + float(system)))
start = rows.pop("start")
start_wall = statistics.median(w for _, w, _ in start)
start_cpu = statistics.median(c for _, _, c in start)
print("| Stages (one core, streaming thread only) | CPU us/image | wall us/image | images |")
print("|---|---:|---:|---:|")
for name, samples in rows.items():
    cpu = statistics.median((c - start_cpu) / i * 1e6 for i, w, c in samples)
    wall = statistics.median((w - start_wall) / i * 1e6 for i, w, c in samples)
    print("| %s | %.0f | %.0f | %d |" % (name, cpu, wall, samples[0][0]))
EOF
