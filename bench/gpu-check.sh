#!/usr/bin/env bash
# The GPU checks of the CUDA backend, in one call of at most eight minutes,
# on the H200 machine (see docs/gpu-runs.md and ../shared/device/README.md):
#
#   bash .device/run.sh bash bench/gpu-check.sh [BUILD_DIR]
#
# BUILD_DIR (default build-gpu) is a build made elsewhere with the CUDA
# backend for sm_90 and carried along; nothing is rebuilt here.
#
# The order puts what matters first, so that a call cut short still tells:
#   1. the environment (about a minute; a broken one stops here, non-zero,
#      with the reason): the build, the device probe (GPU, driver, runtime
#      and cuDNN versions), the quick parity case (resnet20 fp32 against the
#      CPU backend), one resnet50 bf16 step at batch 256;
#   2. the headline: resnet50 bf16 training images/s at batch 256, ours
#      (bench/trainer-bench, graphs on) against PyTorch eager (channels_last,
#      autocast bf16; bench/torch-gpu-step.py), as a ratio;
#   3. parity: the whole cuda-parity test (fp32 parity, bf16 bounds,
#      determinism and graphs, checkpoints, non-finite loss, memory over 200
#      steps), then resnet50 against PyTorch on the GPU from the same
#      torchvision weights, fp32 and bf16 (tests/trainer/parity.sh, the
#      meson tests torch-parity-gpu-resnet50-*: logits, loss, gradients,
#      weights after three steps, against PyTorch's own error from float64);
#   4. the rest: batch 128, our time split per step (profile mode), the
#      whole pipeline on the GPU (datasetsrc ! imagedec ! augment ! batcher
#      ! cudatrainsink device=cuda, on synthetic JPEGs made there; with and
#      without adaptive echo), torch.compile when time is left.
# Each run has its own limit (about 120 s at most) inside the call's budget.
#
# What comes back is at most three files under $OUT (the device tool returns
# at most eight): gpu-check.md (the table), gpu-check-logs.tar.gz (every log,
# written by an EXIT trap, so also after an early stop) and the kit's
# device-env.txt. The tail of every failing log goes to stdout, the table
# last. Where there is no usable GPU the script stops within a minute with
# exit status 1 and the reason (tests/integration/gpu-check-dry.sh holds
# that). PyTorch runs with the kit's LD_LIBRARY_PATH removed, so that it
# loads its own CUDA libraries, not the toolkit's.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=${1:-build-gpu}
[ -d "$BUILD" ] && BUILD=$(cd "$BUILD" && pwd)
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-logs-XXXXXX")
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-scratch-XXXXXX")
START=$(date +%s)
# seconds: the call's eight minutes, less a margin; a rerun within the
# session's device time needs GPU_CHECK_BUDGET lowered (e.g. 240)
BUDGET=${GPU_CHECK_BUDGET:-470}
PY=${PYTHON:-python3}
BENCH="$BUILD/bench/trainer-bench"
TABLE="$OUT/gpu-check.md"
FAILED=""
export PYTHONUNBUFFERED=1

finish() {
  local status=$?
  tar -czf "$OUT/gpu-check-logs.tar.gz" -C "$LOGS" . 2>/dev/null
  for name in $FAILED; do
    echo "---- last lines of $name.log"
    tail -n 30 "$LOGS/$name.log" 2>/dev/null
  done
  echo
  cat "$TABLE"
  rm -rf "$LOGS" "$SCRATCH"
  exit "$status"
}
trap finish EXIT

left() { echo $((BUDGET - ($(date +%s) - START))); }
log() { echo "== $* ($(($(date +%s) - START)) s)" | tee -a "$LOGS/gpu-check.log"; }
row() { echo "| $1 | $2 |" >>"$TABLE"; }
# run NAME SECONDS COMMAND...: output to NAME.log, at most SECONDS
run() {
  local name=$1 limit=$2 status
  shift 2
  if [ "$(left)" -lt 10 ]; then
    log "$name: skipped, no time left"
    echo "skipped: no time left" >"$LOGS/$name.log"
    return 124
  fi
  [ "$limit" -gt "$(left)" ] && limit=$(left)
  log "$name (limit ${limit} s): $*"
  timeout --kill-after=5 "$limit" "$@" >"$LOGS/$name.log" 2>&1
  status=$?
  log "$name: exit $status"
  [ "$status" -eq 0 ] || FAILED="$FAILED $name"
  return $status
}
# PyTorch with its own libraries, not the toolkit's the kit put first.
torch_run() { local name=$1 limit=$2; shift 2; run "$name" "$limit" env -u LD_LIBRARY_PATH "$@"; }
json_field() { # json_field LOG FIELD: the last value of FIELD in LOG
  grep -o "\"$2\": [0-9.]*" "$LOGS/$1.log" 2>/dev/null | tail -n 1 | awk '{print $2}'
}
ratio() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2fx", a / b}'; }
stop() { # stop REASON: the environment cannot do the rest
  row "stopped" "$1"
  log "stopped: $1"
  echo "gpu-check: $1" >&2
  exit 1
}

{
  echo "# GPU check, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- command: bash .device/run.sh bash bench/gpu-check.sh $BUILD"
  echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 || echo none)"
  echo
  echo "| check | result |"
  echo "| --- | --- |"
} >"$TABLE"

# ---- 1. the environment ----
[ -x "$BENCH" ] || stop "no $BENCH: carry a build made with the CUDA backend"
[ -e "$BUILD/trainer/libgsttrain-cuda.so" ] ||
  stop "no $BUILD/trainer/libgsttrain-cuda.so: the build has no CUDA backend module"
nvidia-smi >"$LOGS/nvidia-smi.log" 2>&1
if ! run probe 30 "$BUILD/tests/cuda-device-probe"; then
  stop "no usable GPU: $(tail -n 1 "$LOGS/probe.log" | sed "s/^SKIP: //")"
fi
row "device (ours)" "$(grep '^device 0' "$LOGS/probe.log")"
row "torch" "$(env -u LD_LIBRARY_PATH timeout 60 "$PY" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())' 2>&1 | tail -n 1)"
GT_CUDA_PARITY_ONLY=quick run parity-quick 90 \
  "$BUILD/tests/cuda-parity" "$SCRATCH/parity"
row "quick parity (resnet20 fp32 vs CPU)" "exit $?"
run step-once 90 "$BENCH" --device cuda --precision bf16 --model resnet50 \
  --size 224 --batch 256 --classes 1000 --warmup 1 --steps 1
ONCE=$?
row "one resnet50 bf16 step, batch 256" "exit $ONCE: $(grep -o '"step_seconds": \[[0-9., ]*\]' "$LOGS/step-once.log")"
[ "$ONCE" -eq 0 ] || stop "a resnet50 bf16 step failed: see step-once.log"

# ---- 2. the headline ----
bench_ours() { # NAME BATCH
  run "$1" 120 "$BENCH" --device cuda --precision bf16 --model resnet50 \
    --size 224 --batch "$2" --classes 1000 --warmup 10 --steps 10 --windows 5
}
bench_torch() { # NAME BATCH [--compile]
  local name=$1 batch=$2 limit=120
  shift 2
  [ $# -gt 0 ] && limit=$(($(left) - 10))
  torch_run "$name" "$limit" "$PY" bench/torch-gpu-step.py --batch "$batch" \
    --warmup 10 --steps 10 --windows 5 "$@"
}
bench_ours ours-256 256
bench_torch torch-eager-256 256
O256=$(json_field ours-256 images_per_second_windows_median)
T256=$(json_field torch-eager-256 images_per_second_windows_median)
row "resnet50 bf16 batch 256 img/s: ours / PyTorch eager" "${O256:-?} / ${T256:-?} = $(ratio "$O256" "$T256")"

# ---- 3. parity ----
run parity 150 "$BUILD/tests/cuda-parity" "$SCRATCH/parity"
row "cuda-parity (all cases)" "exit $? (parity.log in the archive)"
# torch_parity PRECISION: as the meson test torch-parity-gpu-resnet50-*;
# parity.sh runs PyTorch through $PYTHON, here without the kit's
# LD_LIBRARY_PATH, and our side with it.
torch_parity() {
  local status
  run "torch-parity-$1" 120 env PYTHON="env -u LD_LIBRARY_PATH $PY" \
    tests/trainer/parity.sh --backend=cuda --precision="$1" \
    "$BUILD/tests/parity" "$SCRATCH/torch-parity-$1" resnet50 10 64 4 3 \
    --lr 0.01 --zero-init-residual 1
  status=$?
  row "resnet50 $1 vs PyTorch on the GPU, same weights" \
    "exit $status: $(grep -h '^worst relative error' "$LOGS/torch-parity-$1.log")"
}
torch_parity fp32
torch_parity bf16
# Data-parallel on the GPU (tests/trainer/cuda-dist.c): two ranks on this
# GPU over comm-backend mpi against a two-rank CPU run, then NCCL at one
# rank against no communicator, and its cost on a resnet50 bf16 step. It
# needs mpirun, which the kit does not bring.
if command -v mpirun >/dev/null 2>&1; then
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    run cuda-dist 150 "$BUILD/tests/cuda-dist" --mpirun "$(command -v mpirun)"
  row "data-parallel (cuda-dist: 2 ranks over MPI, NCCL at 1 rank)" \
    "exit $?: $(grep -h 'overhead\|NCCL' "$LOGS/cuda-dist.log" | tail -n 3 | tr '\n' ' ')"
else
  row "data-parallel (cuda-dist)" "not run: no mpirun on this machine"
fi

# ---- 4. the rest ----
bench_ours ours-128 128
bench_torch torch-eager-128 128
O128=$(json_field ours-128 images_per_second_windows_median)
T128=$(json_field torch-eager-128 images_per_second_windows_median)
row "resnet50 bf16 batch 128 img/s: ours / PyTorch eager" "${O128:-?} / ${T128:-?} = $(ratio "$O128" "$T128")"
GT_CUDA_PROFILE=1 run split-256 60 "$BENCH" --device cuda --precision bf16 \
  --model resnet50 --size 224 --batch 256 --classes 1000 --warmup 3 --steps 5
row "our split per step (ms, batch 256, eager with events); cuDNN planning" "$(grep -h 'gst_train_cuda_split\|gst_train_cudnn' "$LOGS/split-256.log" | tr '\n' ' ')"

# The whole pipeline on the GPU, over synthetic JPEGs made here (the machine
# has no datasets and no network).
if torch_run corpus 60 "$PY" bench/synthetic-corpus.py --count 1024 \
    --out "$SCRATCH/corpus"; then
  for echo in none adaptive; do
    stage=""
    [ "$echo" = adaptive ] && stage="echo mode=adaptive max-factor=4 !"
    export GST_PLUGIN_PATH="$BUILD/gst-plugins"
    # shellcheck disable=SC2086
    run "pipeline-$echo" 120 gst-launch-1.0 -e datasetsrc \
      location="$SCRATCH/corpus" num-epochs=-1 ! imagedec ! $stage \
      augment width=224 height=224 ! batcher batch-size=256 ! queue \
      ! cudatrainsink device=cuda model=resnet50 precision=bf16 \
      max-steps=60 metrics-location="$LOGS/pipeline-$echo.jsonl"
    row "pipeline, echo $echo: exit $?, last train-stats" \
      "$(tail -n 1 "$LOGS/pipeline-$echo.jsonl" 2>/dev/null)"
  done
fi

if [ "$(left)" -gt 100 ]; then
  bench_torch torch-compile-256 256 --compile
  C256=$(json_field torch-compile-256 images_per_second_windows_median)
  row "torch.compile batch 256 img/s: ours / compiled" "${O256:-?} / ${C256:-?} = $(ratio "$O256" "$C256")"
fi
log "done"
