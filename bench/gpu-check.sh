#!/usr/bin/env bash
# The GPU checks of the CUDA backend, in one call of at most eight minutes,
# on the H200 machine (see ../shared/device/README.md):
#
#   bash .device/run.sh bash bench/gpu-check.sh [BUILD_DIR]
#
# BUILD_DIR (default build-gpu) is a build made elsewhere with the CUDA
# backend for sm_90 and carried along; nothing is rebuilt here.
#
# Stage 1 (about a minute; a broken environment stops here): the device,
#   the device probe, the quick parity case (resnet20 fp32 against the CPU
#   backend), one timed resnet50 bf16 step at batch 256.
# Stage 2: the whole cuda-parity test (fp32 parity, bf16 bounds,
#   determinism and graphs, checkpoints, non-finite loss, memory over 200
#   steps).
# Stage 3: resnet50 training images/s in bf16 at batch 256 and 128, ours
#   (bench/trainer-bench, graphs on) against PyTorch eager (channels_last,
#   autocast bf16, same batch; bench/torch-gpu-step.py) and torch.compile if
#   it compiles in the time left; medians of windows timed after a warm-up;
#   then our time split per step (GT_CUDA_PROFILE=1: convolutions, BN/ReLU/
#   pooling, classifier+loss, optimiser, input conversion, H2D copy).
#
# Logs go to $OUT (default /tmp/gpu-check), the table to $OUT/gpu-check.md
# and to stdout last. Copy the table into docs/benchmarks/gpu.md.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BUILD=${1:-build-gpu}
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
START=$(date +%s)
BUDGET=470 # seconds: the call's eight minutes, less a margin
PY=${PYTHON:-python3}
BENCH="$BUILD/bench/trainer-bench"
TABLE="$OUT/gpu-check.md"
export PYTHONUNBUFFERED=1

left() { echo $((BUDGET - ($(date +%s) - START))); }
log() { echo "== $* ($(($(date +%s) - START)) s)" | tee -a "$OUT/gpu-check.log"; }
# run NAME SECONDS COMMAND...: output to $OUT/NAME.log, at most SECONDS
run() {
  local name=$1 limit=$2
  shift 2
  if [ "$(left)" -lt 5 ]; then
    log "$name: skipped, no time left"
    return 124
  fi
  [ "$limit" -gt "$(left)" ] && limit=$(left)
  log "$name (limit ${limit} s): $*"
  timeout --kill-after=5 "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  log "$name: exit $rc"
  return $rc
}
rate() { # the median field of the last JSON line of a log
  grep -o '"images_per_second_windows_median": [0-9.]*' "$OUT/$1.log" 2>/dev/null |
    tail -n 1 | awk '{print $2}'
}

{
  echo "# GPU check, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1)"
  echo "- torch: $($PY -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())' 2>&1 | tail -n 1)"
  echo "- command: bash .device/run.sh bash bench/gpu-check.sh $BUILD"
  echo
} >"$TABLE"

# ---- stage 1 ----
if [ ! -x "$BENCH" ]; then
  echo "gpu-check: no $BENCH: carry a build made with the CUDA backend" >&2
  exit 2
fi
nvidia-smi >"$OUT/nvidia-smi.log" 2>&1
run probe 30 "$BUILD/tests/cuda-device-probe" || {
  cat "$OUT/probe.log"
  exit 1
}
mkdir -p /tmp/gpu-check-scratch
GT_CUDA_PARITY_ONLY=quick run parity-quick 90 \
  "$BUILD/tests/cuda-parity" /tmp/gpu-check-scratch
QUICK=$?
run step-once 90 "$BENCH" --device cuda --precision bf16 --model resnet50 \
  --size 224 --batch 256 --classes 1000 --warmup 1 --steps 1
ONCE=$?
echo "| check | result |" >>"$TABLE"
echo "| --- | --- |" >>"$TABLE"
echo "| quick parity (resnet20 fp32 vs CPU) | exit $QUICK |" >>"$TABLE"
echo "| one resnet50 bf16 step, batch 256 | exit $ONCE: $(grep -o '"step_seconds": \[[0-9., ]*\]' "$OUT/step-once.log") |" >>"$TABLE"
if [ "$ONCE" != 0 ]; then
  cat "$OUT/parity-quick.log" "$OUT/step-once.log"
  cat "$TABLE"
  exit 1
fi

# ---- stage 2 ----
run parity 200 "$BUILD/tests/cuda-parity" /tmp/gpu-check-scratch
echo "| cuda-parity (all cases) | exit $? (log: parity.log) |" >>"$TABLE"

# ---- stage 3 ----
for batch in 256 128; do
  run "ours-$batch" 60 "$BENCH" --device cuda --precision bf16 \
    --model resnet50 --size 224 --batch $batch --classes 1000 \
    --warmup 10 --steps 10 --windows 5
  run "torch-eager-$batch" 60 "$PY" bench/torch-gpu-step.py --batch $batch \
    --warmup 10 --steps 10 --windows 5
done
GT_CUDA_PROFILE=1 run split-256 45 "$BENCH" --device cuda --precision bf16 \
  --model resnet50 --size 224 --batch 256 --classes 1000 --warmup 3 \
  --steps 5
if [ "$(left)" -gt 100 ]; then
  run torch-compile-256 $(($(left) - 10)) "$PY" bench/torch-gpu-step.py \
    --batch 256 --compile --warmup 10 --steps 10 --windows 5
fi

{
  echo
  echo "| resnet50 bf16, 224x224 | batch 256 img/s | batch 128 img/s |"
  echo "| --- | --- | --- |"
  echo "| gst-train CUDA backend | $(rate ours-256) | $(rate ours-128) |"
  echo "| PyTorch eager (channels_last, autocast bf16) | $(rate torch-eager-256) | $(rate torch-eager-128) |"
  echo "| torch.compile | $(rate torch-compile-256) | - |"
  for batch in 256 128; do
    o=$(rate "ours-$batch")
    t=$(rate "torch-eager-$batch")
    if [ -n "$o" ] && [ -n "$t" ]; then
      echo
      echo "batch $batch: ours / PyTorch eager = $(awk -v o="$o" -v t="$t" 'BEGIN {printf "%.2fx", o / t}')"
    fi
  done
  echo
  echo "Our split per step (ms, batch 256, eager with events):"
  echo
  echo '```'
  grep -h gst_train_cuda_split "$OUT/split-256.log" || echo "(none)"
  echo '```'
} >>"$TABLE"
log "done"
cat "$TABLE"
