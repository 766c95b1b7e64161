#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Shards against loose files: the default training pipeline's input stage
# on ImageNet-like photographs, from WebDataset shards and from the same
# images as an ImageFolder, from a cold and a warm page cache, over HTTP,
# and against PyTorch's webdataset library on the same shards.
#
#   bench/shards.sh [--runs N] [--quick] [--count N] [--shard-size N]
#                   [--output FILE]
#
# Builds its own release build ($BENCH_BUILD, build-bench/ by default),
# makes the corpus (bench/make-corpus.py, 2000 images) and its shards
# (gst-train-dataset shards, 100 images a shard), starts Debian's nginx on
# the loopback over the shards, then runs every row once per round, rounds
# interleaved, and reports medians of images per second (wall time of the
# whole process, start-up included):
#   folder-cold  datasetsrc location=IMAGEFOLDER ! imagedec ! augment
#                ! batcher batch-size=256 drop-remainder=false ! fakesink,
#                after `sync; echo 3 > /proc/sys/vm/drop_caches` and a run of
#                the same program on 16 other images (the program warm, the
#                data cold: a cold row measures reading the data, not
#                loading GStreamer or PyTorch from a cold disk)
#   folder-warm  the same right after folder-cold (every file cached)
#   shards-cold  the same pipeline, location=the shards, num-classes=10,
#                caches dropped before
#   shards-warm  the same right after
#   http-cold    the shards from nginx (http://127.0.0.1:PORT/...), caches
#                dropped before (nginx reads the files cold)
#   torch-cold   webdataset.WebDataset(shards, shardshuffle) .shuffle(1000)
#                .decode("pil"), RandomResizedCrop(224) + RandomHorizontalFlip
#                + PILToTensor, DataLoader(batch_size=256, num_workers=2),
#                caches dropped before
#   torch-warm   the same right after
# Every row shuffles (datasetsrc's defaults: shuffle=true, a shuffle buffer
# of 1000 for shards) and reads the corpus once. The report goes to stdout
# and docs/benchmarks/shards.md (--quick: 200 images, 1 round, to
# bench/out/shards-quick.md). Dropping the page cache needs root; without
# it the cold rows are left out and the report says so.
#
# Under bench/slow-disk.sh (a throttled disk, for a cold page cache that
# costs what it would on a real disk) the report names the limit.
#
# Needs: meson, ninja, a C compiler, gst-launch-1.0, nginx, lscpu,
# /usr/bin/python3 with PIL, torch, torchvision and webdataset.

set -euo pipefail
# shellcheck source=bench/bench-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh" shards "$@"

COUNT=2000
SHARD_SIZE=100
while [ $# -gt 0 ]; do
  case "$1" in
    --count) COUNT=$2; shift 2 ;;
    --count=*) COUNT=${1#*=}; shift ;;
    --shard-size) SHARD_SIZE=$2; shift 2 ;;
    --shard-size=*) SHARD_SIZE=${1#*=}; shift ;;
    *) bench_option "$@"; shift "$BENCH_SHIFT" ;;
  esac
done
if [ "$QUICK" = 1 ]; then
  COUNT=200; RUNS=1; SHARD_SIZE=20
fi
bench_default_output
for v in RUNS COUNT SHARD_SIZE; do
  case ${!v} in ''|*[!0-9]*|0) die "$v must be a positive integer" ;; esac
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || die "nginx not found (apt-get install nginx)"
for tool in meson ninja gst-launch-1.0 lscpu; do
  command -v "$tool" >/dev/null || die "'$tool' not found"
done
"$PY" -c 'import PIL, torch, torchvision, webdataset' 2>/dev/null ||
  die "$PY needs PIL, torch, torchvision and webdataset"
COLD=1
if ! { sync && echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null; then
  COLD=0
  log "cannot drop the page cache (not root?): the cold rows are left out"
fi
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# --- build, corpus, shards ------------------------------------------------------
BUILD=$ROOT/$BENCH_BUILD
log "building ($BENCH_BUILD)"
bench_build gst-plugins/libgsttrain.so pipelines/gst-train-dataset
if [ "$COUNT" = 2000 ]; then CORPUS=$ROOT/bench/corpus; else CORPUS=$OUT/corpus-$COUNT; fi
"$PY" "$ROOT/bench/make-corpus.py" --count "$COUNT" --out "$CORPUS" >&2 ||
  die "make-corpus.py failed"
SHARDS=$OUT/shards-$COUNT-$SHARD_SIZE
"$BUILD/pipelines/gst-train-dataset" shards --input "$CORPUS" --output "$SHARDS" \
  --prefix train --shard-size "$SHARD_SIZE" >&2 || die "gst-train-dataset shards failed"
N_SHARDS=$(find "$SHARDS" -name 'train-*.tar' | wc -l)
LAST=$(printf '%06d' $((N_SHARDS - 1)))
PATTERN="train-{000000..$LAST}.tar"
SHARD_BYTES=$(du -sb "$SHARDS" | cut -f1)
# Other images, run through a row's program after the caches are dropped so
# that its libraries are read back in before the cold data is timed.
WARM_CORPUS=$OUT/warm-corpus
"$PY" "$ROOT/bench/make-corpus.py" --count 16 --out "$WARM_CORPUS" >&2 ||
  die "make-corpus.py failed (warm-up images)"
WARM_SHARD=$OUT/warm-shards/train-000000.tar
"$BUILD/pipelines/gst-train-dataset" shards --input "$WARM_CORPUS" \
  --output "$OUT/warm-shards" --prefix train --shard-size 16 >&2 ||
  die "gst-train-dataset shards failed (warm-up shard)"

export GST_REGISTRY=$OUT/registry-shards.bin
export GST_PLUGIN_PATH=$BUILD/gst-plugins
unset GST_DEBUG GST_TRACERS GST_PLUGIN_PATH_1_0 || true

# --- nginx over the shards -------------------------------------------------------
NG=$OUT/nginx
rm -rf "$NG"
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$ROOT/bench/echo-http-server.sh" "$SHARDS" "$PORT" "$NG" &
NGINX_PID=$!
trap 'kill "$NGINX_PID" 2>/dev/null || true' EXIT
"$PY" -c 'import socket, sys, time
for _ in range(200):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close(); sys.exit(0)
    except OSError:
        time.sleep(0.05)
sys.exit(1)' "$PORT" || die "nginx did not start (see $NG/error.log)"

# --- the rows --------------------------------------------------------------------
TAIL="imagedec ! augment ! batcher batch-size=256 drop-remainder=false ! fakesink"
TORCH=$OUT/shards-torch.py
cat >"$TORCH" <<'PYEOF'
# Written by bench/shards.sh on every run; edit it there.
import sys, time
t0 = time.monotonic()
import torch, webdataset as wds
from torchvision import transforms
urls, batch = sys.argv[1], int(sys.argv[2])
t = transforms.Compose([transforms.RandomResizedCrop(224),
                        transforms.RandomHorizontalFlip(),
                        transforms.PILToTensor()])
ds = (wds.WebDataset(urls, shardshuffle=True, empty_check=False)
      .shuffle(1000).decode("pil").to_tuple("jpg", "cls").map_tuple(t, int))
loader = torch.utils.data.DataLoader(ds, batch_size=batch, num_workers=2)
n = sum(len(labels) for _, labels in loader)
print(n)
PYEOF

RESULTS=$OUT/shards-results.txt
: >"$RESULTS"
# run ROW ROUND COMMAND...: times COMMAND, checks its image count, appends
# "ROW ROUND IMAGES SECONDS" to the results
run() {
  local row=$1 round=$2 start end n
  shift 2
  start=$(date +%s.%N)
  "$@" >"$OUT/logs/shards-$row.log" 2>&1 || {
    tail -20 "$OUT/logs/shards-$row.log" >&2; die "row $row failed"; }
  end=$(date +%s.%N)
  n=$COUNT
  if [[ $row == torch-* ]]; then n=$(tail -1 "$OUT/logs/shards-$row.log"); fi
  [ "$n" = "$COUNT" ] || die "row $row delivered $n images, not $COUNT"
  echo "$row $round $n $(awk -v a="$start" -v b="$end" 'BEGIN {print b - a}')" >>"$RESULTS"
  log "round $round $row: $(awk -v n="$n" -v a="$start" -v b="$end" 'BEGIN {printf "%.0f images/s", n / (b - a)}')"
}
ours() { gst-launch-1.0 -q datasetsrc location="$1" $2 ! $TAIL; }
# cold ROW ROUND PROGRAM ARGS...: drops the page cache, runs PROGRAM once on
# the warm-up images (not timed), then times the row
cold() {
  local row=$1 round=$2 program=$3
  drop_caches
  if [ "$program" = ours ]; then
    { ours "$WARM_CORPUS" "" && ours "$WARM_SHARD" num-classes=10; } >/dev/null 2>&1 ||
      die "the warm-up run before $row failed"
  else
    "$PY" "$TORCH" "$WARM_SHARD" 8 >/dev/null 2>&1 || die "the warm-up run before $row failed"
  fi
  run "$@"
}
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for ((round = 1; round <= RUNS; round++)); do
  if [ "$COLD" = 1 ]; then
    cold folder-cold "$round" ours "$CORPUS" ""
  fi
  run folder-warm "$round" ours "$CORPUS" ""
  if [ "$COLD" = 1 ]; then
    cold shards-cold "$round" ours "$SHARDS/$PATTERN" num-classes=10
  fi
  run shards-warm "$round" ours "$SHARDS/$PATTERN" num-classes=10
  if [ "$COLD" = 1 ]; then
    cold http-cold "$round" ours "http://127.0.0.1:$PORT/$PATTERN" num-classes=10
    cold torch-cold "$round" "$PY" "$TORCH" "$SHARDS/$PATTERN" 256
  fi
  run torch-warm "$round" "$PY" "$TORCH" "$SHARDS/$PATTERN" 256
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# --- the report ------------------------------------------------------------------
CPU_MODEL=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
REPORT=$("$PY" - "$RESULTS" <<PYEOF
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    row, rnd, n, wall = line.split()
    rows.setdefault(row, {})[int(rnd)] = int(n) / float(wall)
labels = {
    "folder-cold": "ImageFolder, cold page cache",
    "folder-warm": "ImageFolder, warm page cache",
    "shards-cold": "shards, cold page cache",
    "shards-warm": "shards, warm page cache",
    "http-cold": "shards over HTTP from nginx on the loopback, cold page cache",
    "torch-cold": "webdataset + torchvision + DataLoader(2 workers), shards, cold",
    "torch-warm": "webdataset + torchvision + DataLoader(2 workers), shards, warm",
}
med = {r: statistics.median(v.values()) for r, v in rows.items()}
print("| row | setup | images/s (median) | min-max |")
print("|---|---|---:|---:|")
for r in labels:
    if r in rows:
        v = rows[r].values()
        print("| %s | %s | %.0f | %.0f-%.0f |" % (r, labels[r], med[r], min(v), max(v)))
print()
print("| ratio (medians of this run) | value | per round | goal |")
print("|---|---:|---|---:|")
for a, b, goal in (("shards-cold", "folder-cold", ">= 1.8x"),
                   ("shards-cold", "folder-warm", ">= 0.9x"),
                   ("http-cold", "shards-cold", ">= 0.9x"),
                   ("shards-cold", "torch-cold", ">= 2x"),
                   ("shards-warm", "torch-warm", ">= 2x"),
                   ("shards-warm", "folder-warm", "")):
    if a in rows and b in rows:
        per = ", ".join("%.2f" % (rows[a][k] / rows[b][k])
                        for k in sorted(rows[a]) if k in rows[b])
        print("| %s / %s | %.2fx | %s | %s |" % (a, b, med[a] / med[b], per, goal))
PYEOF
)
{
  cat <<EOF
# Shards against loose files: the input stage from WebDataset shards

Generated by \`$CMDLINE\` on $(date -u '+%Y-%m-%d %H:%M UTC').

- CPU: $CPU_MODEL, $(nproc) cores (lscpu); GStreamer $(gst-launch-1.0 --version | sed -n 's/.*GStreamer \([0-9.]*\).*/\1/p' | head -1); nginx $("$NGINX" -v 2>&1 | sed 's/.*nginx\///'); $("$PY" -c 'import torch, torchvision, webdataset; print("torch %s, torchvision %s, webdataset %s" % (torch.__version__, torchvision.__version__, webdataset.__version__))')
- Corpus: $COUNT JPEGs from \`bench/make-corpus.py\` (photographs of Debian's mate-backgrounds, about
  500x375, quality 90) as an ImageFolder, and as $N_SHARDS shards of $SHARD_SIZE
  (\`gst-train-dataset shards\`, $((SHARD_BYTES / 1048576)) MiB).
- Pipeline: \`datasetsrc location=... ! $TAIL\` (shuffle on: a fresh order for files, shard
  order and a 1000-sample buffer for shards), one epoch; torchvision: the same transforms and
  batch, 2 DataLoader workers.
- Cold rows: \`sync; echo 3 > /proc/sys/vm/drop_caches\`, then the row's program run once on 16 other images (not timed: the program warm, the data cold), before the run$( [ "$COLD" = 1 ] || printf ' (not possible here: left out)'). This is a
  virtual machine: the host below it may still hold the files in its own cache, so "cold" here
  may be warmer than a cold disk or network file system.${BENCH_DISK:+
- Disk: $BENCH_DISK; every row ran under it (the warm rows read nothing from the disk).}
- $RUNS interleaved rounds, medians; wall time of the whole process, start-up included.
- Load average (1, 5, 15 min) before: $LOAD_BEFORE; after: $LOAD_AFTER (shared machine).

$REPORT
EOF
} >"$OUTPUT.tmp"
mv "$OUTPUT.tmp" "$OUTPUT"
cat "$OUTPUT"
