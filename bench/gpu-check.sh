#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The GPU checks of the CUDA backend, planned for the device tool's two
# calls on the H200 machine (docs/gpu-runs.md gives the exact calls):
#
#   bash .device/run.sh bash bench/gpu-check.sh [--call 1] [BUILD_DIR]
#   bash .device/run.sh bash bench/gpu-check.sh --call 2 --after TABLE [BUILD_DIR]
#   bash bench/gpu-check.sh --plan [--call 1|2] [--after TABLE]
#   bash bench/gpu-check.sh --rehearse [BUILD_DIR]
#
# BUILD_DIR (default build-gpu; build for --rehearse) is a build made
# elsewhere with the CUDA backend for sm_90 and carried along; nothing is
# rebuilt here.
#
# A call is a list of stages, each with a limit in seconds (--plan prints
# them, one "NAME LIMIT" a line, then "total SECONDS"). Call 1 puts the
# headline first and totals at most 330 s, so that a corrected second call
# still fits in the device time:
#   environment  the build, the device probe (GPU, driver, runtime, cuDNN),
#                ldd of the CUDA module, NCCL, PyTorch seeing the GPU;
#   headline     ResNet-50 bf16 training images/s at batch 256, ours
#                (bench/trainer-bench, graphs on) then PyTorch eager
#                (channels_last, autocast bf16; bench/torch-gpu-step.py),
#                the ratio, graphs on or off and why, cuDNN's planning
#                seconds and its non-deterministic choices;
#   parity-quick resnet20 fp32 against the CPU backend (cuda-parity quick);
#   torch-parity-fp32, torch-parity-bf16
#                ResNet-50 against PyTorch on the GPU from the same weights
#                (tests/trainer/parity.sh --backend=cuda);
#   pipeline     datasetsrc ! imagedec ! augment ! batcher ! cudatrainsink
#                on synthetic JPEGs made there (bench/synthetic-corpus.py).
# Call 2 (at most 240 s) starts with the environment again (a fresh
# machine), then reruns what call 1 did not reach (--after names call 1's
# gpu-check.md: a stage without a finished row there was not reached),
# then the whole cuda-parity test, our time split per step (profile), the
# pipeline with adaptive echo, NCCL (cuda-dist), batch 128, torch.compile;
# stages that do not fit its budget are left out of its plan.
#
# Only a broken environment stops a call (no usable GPU, a CUDA module that
# does not load; exit status 1): any other stage that fails or runs out of
# time is recorded, the next one runs, and the call ends with status 3. After every stage the table ($OUT/
# gpu-check.md) and the log archive ($OUT/gpu-check-logs.tar.gz) are
# current, so a call killed at the device tool's limit still brings back
# what it did; at the end the tails of the failed logs are printed, the
# table last. $OUT holds at most three files (those two and the kit's
# device-env.txt; the tool returns at most eight).
#
# --rehearse runs every stage of both calls here, where there is no GPU,
# with device=cpu and small sizes through the same code paths (limits,
# table, archive, the tail): a stage that needs the GPU records its skip
# (77) and the rest go on. tests/integration/gpu-check-rehearse.sh runs it
# in CI, also killed mid-stage.
#
# PyTorch and the machine's other tools run with the machine's own loader
# path (the kit keeps it in GT_SYSTEM_LD_LIBRARY_PATH), our programs with
# the kit's.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1

CALL=1 AFTER="" MODE=run BUILD="" PLAN_ONLY=0
while [ $# -gt 0 ]; do
  case $1 in
    --plan) PLAN_ONLY=1 ;;
    --rehearse) MODE=rehearse ;;
    --call) CALL=${2:-}; shift ;;
    --after) AFTER=${2:-}; shift ;;
    -*) echo "gpu-check: unknown option $1" >&2; exit 2 ;;
    *) BUILD=$1 ;;
  esac
  shift
done
case $CALL in 1 | 2) ;; *) echo "gpu-check: --call takes 1 or 2" >&2; exit 2 ;; esac
if [ -n "$AFTER" ] && [ ! -r "$AFTER" ]; then
  echo "gpu-check: --after $AFTER: no such table" >&2
  exit 2
fi

# ---- the plan ----
# Call 1, in order (names and limits in seconds). Its total stays at most
# 330: the device time is 900 s, and each call also pays for the machine's
# start (a minute or two), the transfers and the kit's unpacking.
CALL1_STAGES="environment:25 headline:140 parity-quick:30 torch-parity-fp32:45 torch-parity-bf16:45 pipeline:45"
CALL2_STAGES="cuda-parity:110 split:35 pipeline-echo:40 nccl:30 batch-128:60 compile:90"
CALL2_BUDGET=240

# A stage of call 1 that has a finished row in @1 (a gpu-check.md) was
# reached; the others are printed, one a line.
unreached_in() {
  local entry name
  for entry in $CALL1_STAGES; do
    name=${entry%%:*}
    [ "$name" = environment ] && continue
    grep -q "^| $name | \(ok\|failed\|timeout\|skipped\)" "$1" || echo "$entry"
  done
}

# The stages of the call asked for, "name:limit" each, in order.
plan() {
  local entries total=0 entry limit budget
  case $MODE:$CALL in
    rehearse:*) echo $CALL1_STAGES $CALL2_STAGES; return ;;
    *:1) echo $CALL1_STAGES; return ;;
  esac
  budget=${GPU_CHECK_BUDGET:-$CALL2_BUDGET}
  entries="environment:25"
  [ -n "$AFTER" ] && entries="$entries $(unreached_in "$AFTER" | xargs)"
  entries="$entries $CALL2_STAGES"
  for entry in $entries; do
    limit=${entry##*:}
    if [ $((total + limit)) -le "$budget" ]; then
      echo "$entry"
      total=$((total + limit))
    else
      echo "gpu-check: call $CALL leaves out ${entry%%:*} ($limit s): over its $budget s" >&2
    fi
  done | xargs
}
STAGES=$(plan)

if [ "$PLAN_ONLY" = 1 ]; then
  total=0
  for entry in $STAGES; do
    echo "${entry%%:*} ${entry##*:}"
    total=$((total + ${entry##*:}))
  done
  echo "total $total"
  exit 0
fi

# ---- what the stages run on ----
if [ "$MODE" = rehearse ]; then
  BUILD=${BUILD:-build}
  # device=cpu, small sizes: the same commands, seconds instead of minutes
  DEVICE=cpu MODEL=resnet20 SIZE=32 CLASSES=10 BATCH=16 BATCH_SMALL=8
  WARMUP=1 STEPS=2 WINDOWS=3
  PARITY_MODEL="resnet20 10 16 4 3" CORPUS=48 PIPE_BATCH=8 PIPE_STEPS=4
else
  BUILD=${BUILD:-build-gpu}
  DEVICE=cuda MODEL=resnet50 SIZE=224 CLASSES=1000 BATCH=256 BATCH_SMALL=128
  WARMUP=10 STEPS=10 WINDOWS=5
  PARITY_MODEL="resnet50 10 64 4 3" CORPUS=512 PIPE_BATCH=256 PIPE_STEPS=30
fi
[ -d "$BUILD" ] && BUILD=$(cd "$BUILD" && pwd)
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-logs-XXXXXX")
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-scratch-XXXXXX")
START=$(date +%s)
BUDGET=0
for entry in $STAGES; do BUDGET=$((BUDGET + ${entry##*:})); done
# PyTorch: the GPU machine's python3; here Debian's, where torch is
PY=${PYTHON:-python3}
[ "$MODE" = rehearse ] && [ -z "${PYTHON:-}" ] && [ -x /usr/bin/python3 ] && PY=/usr/bin/python3
BENCH="$BUILD/bench/trainer-bench"
MODULE="$BUILD/trainer/libgsttrain-cuda.so"
TABLE="$OUT/gpu-check.md"
ARCHIVE="$OUT/gpu-check-logs.tar.gz"
FAILED=""
STAGES_FAILED=""
STAGE_END=0
export PYTHONUNBUFFERED=1
# GST_LAUNCH: the command that runs gst-launch-1.0, split into words (the
# rehearsal under AddressSanitizer preloads its runtime there)
GST_LAUNCH=${GST_LAUNCH:-gst-launch-1.0}
# the machine's own loader path, for PyTorch (the kit's wrapper sets it;
# elsewhere the current one)
SYSTEM_LD_LIBRARY_PATH=${GT_SYSTEM_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:-}}

now() { echo $(($(date +%s) - START)); }
log() { echo "== $* ($(now) s)" | tee -a "$LOGS/gpu-check.log"; }
# The archive of every log so far, replaced whole (written beside it, then
# renamed), so that a kill leaves the last complete one.
archive() {
  tar -czf "$ARCHIVE.part" -C "$LOGS" . 2>/dev/null && mv -f "$ARCHIVE.part" "$ARCHIVE"
}
finish() {
  local status=$?
  archive
  for name in $FAILED; do
    echo "---- last lines of $name.log"
    tail -n 25 "$LOGS/$name.log" 2>/dev/null
  done
  echo
  cat "$TABLE"
  rm -rf "$LOGS" "$SCRATCH"
  exit "$status"
}
trap finish EXIT
trap 'exit 130' INT TERM

# run NAME SECONDS COMMAND...: output to NAME.log, for at most SECONDS and
# never past the stage's end; returns the command's status (124 for out of
# time; 124 without running when no time is left).
run() {
  local name=$1 limit=$2 status left
  shift 2
  left=$((STAGE_END - $(date +%s)))
  [ "$limit" -gt "$left" ] && limit=$left
  if [ "$limit" -lt 3 ]; then
    log "$name: not run, the stage's time is up"
    echo "not run: the stage's time is up" >"$LOGS/$name.log"
    FAILED="$FAILED $name"
    return 124
  fi
  log "$name (limit ${limit} s): $*"
  timeout --kill-after=3 "$limit" "$@" >"$LOGS/$name.log" 2>&1
  status=$?
  log "$name: exit $status"
  case $status in 0 | 77) ;; *) FAILED="$FAILED $name" ;; esac
  return $status
}
# PyTorch with the machine's own libraries, not the kit's.
torch_run() {
  local name=$1 limit=$2
  shift 2
  run "$name" "$limit" env LD_LIBRARY_PATH="$SYSTEM_LD_LIBRARY_PATH" "$@"
}
json_number() { # LOG FIELD: the last numeric value of FIELD in LOG
  grep -o "\"$2\": [0-9.]*" "$LOGS/$1.log" 2>/dev/null | tail -n 1 | awk '{print $2}'
}
json_text() { # LOG FIELD: the last string or literal value of FIELD
  grep -o "\"$2\": \(\"[^\"]*\"\|[a-z]*\)" "$LOGS/$1.log" 2>/dev/null | tail -n 1 |
    sed 's/^"[^"]*": //; s/^"//; s/"$//'
}
ratio() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2fx", a / b}'; }
skip_reason() { grep -h -m1 '^SKIP' "$LOGS/$1.log" 2>/dev/null | sed 's/^SKIP: //'; }
broken() { # REASON: the environment cannot do the rest (a rehearsal goes on)
  if [ "$MODE" = rehearse ]; then
    log "rehearsal: would stop here on the GPU machine: $1"
    return 0
  fi
  echo "| stopped | broken | $(now) | $1 |" >>"$TABLE"
  log "stopped: $1"
  echo "gpu-check: $1" >&2
  exit 1
}

# ---- the stages: each sets RESULT and returns 0, 77 (skipped) or else ----

stage_environment() {
  local device torch nccl wheel
  nvidia-smi >"$LOGS/nvidia-smi.log" 2>&1 ||
    echo "nvidia-smi: not here or failed" >>"$LOGS/nvidia-smi.log"
  [ -x "$BENCH" ] || broken "no $BENCH: carry a build made with the CUDA backend"
  if [ -e "$MODULE" ]; then
    ldd "$MODULE" >"$LOGS/ldd-cuda-module.log" 2>&1
    if grep -q "not found" "$LOGS/ldd-cuda-module.log"; then
      broken "no usable CUDA module: $(grep "not found" "$LOGS/ldd-cuda-module.log" | xargs)"
    fi
  else
    broken "no $MODULE: the build has no CUDA backend module"
  fi
  if ! run probe 20 "$BUILD/tests/cuda-device-probe"; then
    broken "no usable GPU: $(tail -n 1 "$LOGS/probe.log" | sed 's/^SKIP: //')"
  fi
  device=$(grep -h -m1 '^device 0' "$LOGS/probe.log")
  if [ -x "$BUILD/tests/cuda-nccl-probe" ]; then
    run nccl-probe 10 "$BUILD/tests/cuda-nccl-probe"
    # Not on the loader path: PyTorch's wheel may bring one (nvidia-nccl)
    if grep -q "^nccl: unavailable" "$LOGS/nccl-probe.log" && [ -z "${GT_NCCL_LIBRARY:-}" ]; then
      wheel=$(env LD_LIBRARY_PATH="$SYSTEM_LD_LIBRARY_PATH" timeout 20 "$PY" -c \
        'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
      if [ -n "$wheel" ] && [ -e "$wheel" ]; then
        export GT_NCCL_LIBRARY="$wheel"
        log "NCCL from PyTorch's wheel: GT_NCCL_LIBRARY=$wheel"
        run nccl-probe 10 "$BUILD/tests/cuda-nccl-probe"
      fi
    fi
  fi
  torch_run torch 30 "$PY" -c 'import torch
gpu = torch.cuda.is_available()
print("torch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN",
      torch.backends.cudnn.version(), "sees a GPU:", gpu,
      torch.cuda.get_device_name(0) if gpu else "")'
  torch=$(tail -n 1 "$LOGS/torch.log")
  nccl=$(grep -h -m1 "^nccl" "$LOGS/nccl-probe.log" 2>/dev/null)
  RESULT="${device:-no GPU (probe: $(skip_reason probe))}; ${nccl:+$nccl; }${torch}"
  [ -n "$device" ] || return 77
}

# bench_pair SUFFIX BATCH: ours, then PyTorch eager, at BATCH; PyTorch is
# given at least 45 s of the stage (60 in a call with more room).
bench_pair() {
  local suffix=$1 batch=$2 ours torch graphs
  run "ours-$suffix" $((STAGE_END - $(date +%s) - 45)) "$BENCH" --device "$DEVICE" \
    --precision bf16 --model "$MODEL" --size "$SIZE" --batch "$batch" \
    --classes "$CLASSES" --warmup "$WARMUP" --steps "$STEPS" --windows "$WINDOWS"
  torch_run "torch-eager-$suffix" 90 "$PY" bench/torch-gpu-step.py --device "$DEVICE" \
    --model "$MODEL" --size "$SIZE" --batch "$batch" --classes "$CLASSES" \
    --warmup "$WARMUP" --steps "$STEPS" --windows "$WINDOWS"
  ours=$(json_number "ours-$suffix" images_per_second_windows_median)
  torch=$(json_number "torch-eager-$suffix" images_per_second_windows_median)
  graphs=$(json_text "ours-$suffix" graphs)
  [ "$graphs" = false ] && graphs="off ($(json_text "ours-$suffix" graphs_off))"
  [ "$graphs" = true ] && graphs=on
  RESULT="$MODEL bf16 batch $batch img/s: ours ${ours:-?} / PyTorch eager ${torch:-?} = $(ratio "$ours" "$torch"); graphs ${graphs:-?}; cuDNN planning $(json_number "ours-$suffix" cudnn_planning_seconds) s over $(json_number "ours-$suffix" conv_shapes) shapes, warm-up $(json_number "ours-$suffix" warmup_seconds) s (PyTorch's $(json_number "torch-eager-$suffix" warmup_seconds) s); non-deterministic algorithms $(json_number "ours-$suffix" nondeterministic)"
  [ -n "$ours" ] && [ -n "$torch" ]
}
stage_headline() { bench_pair "$BATCH" "$BATCH"; }
stage_batch_128() { bench_pair "$BATCH_SMALL" "$BATCH_SMALL"; }

stage_parity_quick() {
  GT_CUDA_PARITY_ONLY=quick run parity-quick 60 "$BUILD/tests/cuda-parity" "$SCRATCH/parity-quick"
  local status=$?
  RESULT="resnet20 fp32 against the CPU backend: exit $status: $(tail -n 1 "$LOGS/parity-quick.log")"
  return $status
}

stage_cuda_parity() {
  run cuda-parity 200 "$BUILD/tests/cuda-parity" "$SCRATCH/cuda-parity"
  local status=$?
  RESULT="fp32 parity, bf16 bounds, determinism and graphs, non-finite loss, memory over 200 steps: exit $status: $(grep -h 'determinism\|ACCEPTED ON RETRY\|memory' "$LOGS/cuda-parity.log" | head -n 4 | xargs) $(tail -n 1 "$LOGS/cuda-parity.log")"
  return $status
}

# torch_parity PRECISION: as the meson tests torch-parity-gpu-resnet50-*;
# parity.sh runs PyTorch through $PYTHON (split into words), our side with
# the kit's libraries.
torch_parity() {
  local status
  # shellcheck disable=SC2086
  run "torch-parity-$1" 120 env PYTHON="env LD_LIBRARY_PATH=$SYSTEM_LD_LIBRARY_PATH $PY" \
    sh tests/trainer/parity.sh --backend="$DEVICE" --precision="$1" \
    "$BUILD/tests/parity" "$SCRATCH/torch-parity-$1" $PARITY_MODEL \
    --lr 0.01 --zero-init-residual 1
  status=$?
  RESULT="${PARITY_MODEL%% *} $1 against PyTorch, same weights: exit $status; $(grep -h '^worst relative error' "$LOGS/torch-parity-$1.log")"
  return $status
}
stage_torch_parity_fp32() { torch_parity fp32; }
stage_torch_parity_bf16() { torch_parity bf16; }

stage_split() {
  GT_CUDA_PROFILE=1 run split 60 "$BENCH" --device "$DEVICE" --precision bf16 \
    --model "$MODEL" --size "$SIZE" --batch "$BATCH" --classes "$CLASSES" \
    --warmup 3 --steps 5
  local status=$?
  RESULT="our split per step (ms, batch $BATCH, eager with events): exit $status; $(grep -h 'gst_train_cuda_split\|gst_train_cudnn' "$LOGS/split.log" | xargs)"
  return $status
}

# pipeline ECHO: the whole pipeline over the synthetic corpus (made once).
pipeline() {
  local echo=$1 stage="" status stats
  if [ ! -d "$SCRATCH/corpus" ]; then
    torch_run corpus 30 "$PY" bench/synthetic-corpus.py --count "$CORPUS" \
      --out "$SCRATCH/corpus" || { RESULT="no corpus: see corpus.log"; return 1; }
  fi
  [ "$echo" = adaptive ] && stage="echo mode=adaptive max-factor=4 !"
  # shellcheck disable=SC2086
  GST_PLUGIN_PATH="$BUILD/gst-plugins" run "pipeline-$echo" 60 $GST_LAUNCH -e \
    datasetsrc location="$SCRATCH/corpus" num-epochs=-1 ! imagedec ! $stage \
    augment width="$SIZE" height="$SIZE" ! batcher batch-size="$PIPE_BATCH" ! queue \
    ! cudatrainsink device="$DEVICE" model="$MODEL" precision=bf16 \
    max-steps="$PIPE_STEPS" metrics-location="$LOGS/pipeline-$echo.jsonl"
  status=$?
  stats=$(grep '"train-stats"' "$LOGS/pipeline-$echo.jsonl" 2>/dev/null | tail -n 1)
  RESULT="echo $echo, exit $status; last train-stats:$(for field in step images-per-second \
      fresh-images-per-second echo-factor step-time busy-time data-wait-fraction \
      pinned-fraction; do echo "$stats" | grep -o "\"$field\": [^,}]*" | tr -d '"'; done |
      sed 's/^/ /' | tr '\n' ',')"
  [ -s "$LOGS/pipeline-$echo.jsonl" ] || { [ "$status" -ne 0 ] || status=1; }
  return $status
}
stage_pipeline() { pipeline none; }
stage_pipeline_echo() { pipeline adaptive; }

# Data-parallel on the GPU (tests/trainer/cuda-dist.c): two ranks over
# comm-backend mpi against a two-rank CPU run, then NCCL at one rank
# against no communicator and its cost per step. It needs mpirun, which
# the kit does not bring.
stage_nccl() {
  if ! command -v mpirun >/dev/null 2>&1; then
    echo "SKIP: no mpirun on this machine" >"$LOGS/cuda-dist.log"
    RESULT="not run: no mpirun on this machine"
    return 77
  fi
  # HWLOC_COMPONENTS: mpirun hangs on a listener on ports 6000-6009
  # (docs/distributed.md, "Launching")
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    HWLOC_COMPONENTS="${HWLOC_COMPONENTS:--gl}" \
    run cuda-dist 120 "$BUILD/tests/cuda-dist" --mpirun "$(command -v mpirun)"
  local status=$?
  RESULT="exit $status: $(skip_reason cuda-dist)$(grep -h 'overhead\|NCCL' "$LOGS/cuda-dist.log" | tail -n 3 | xargs)"
  return $status
}

stage_compile() {
  torch_run torch-compile 200 "$PY" bench/torch-gpu-step.py --compile --device "$DEVICE" \
    --model "$MODEL" --size "$SIZE" --batch "$BATCH" --classes "$CLASSES" \
    --warmup "$WARMUP" --steps "$STEPS" --windows "$WINDOWS"
  local status=$?
  RESULT="torch.compile batch $BATCH img/s: $(json_number torch-compile images_per_second_windows_median) $(skip_reason torch-compile) (ours in the headline)"
  return $status
}

# ---- the call ----
{
  echo "# GPU check, $([ "$MODE" = rehearse ] && echo "rehearsal of both calls" || echo "call $CALL"), $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- command: bash bench/gpu-check.sh $([ "$MODE" = rehearse ] && echo --rehearse || echo "--call $CALL")${AFTER:+ --after $AFTER} $BUILD"
  echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 || echo none)"
  echo "- stages: $STAGES (total $BUDGET s)"
  echo
  echo "| stage | status | seconds | result |"
  echo "| --- | --- | --- | --- |"
} >"$TABLE"
archive

for entry in $STAGES; do
  name=${entry%%:*} limit=${entry##*:}
  STAGE_END=$(($(date +%s) + limit))
  log "stage $name (limit $limit s)"
  RESULT=""
  began=$(date +%s)
  touch "$LOGS/.stage-start"
  "stage_${name//-/_}"
  status=$?
  # LeakSanitizer's tracer sometimes crashes as a process exits ("Tracer
  # caught signal 11", a known flake of the sanitizer runtime, about 1 run
  # in 7 of this stage under the suite's ASan build): run the stage once
  # more then, and say so. A leak report is other text and is not retried.
  if [ "$status" != 0 ] && [ "$status" != 77 ] &&
    find "$LOGS" -name '*.log' ! -name gpu-check.log -newer "$LOGS/.stage-start" -exec \
      grep -l "LeakSanitizer has encountered a fatal error" {} + 2>/dev/null | grep -q .; then
    log "stage $name: LeakSanitizer's tracer crashed at exit; running it once more"
    "stage_${name//-/_}"
    status=$?
    RESULT="$RESULT (run twice: LeakSanitizer's tracer crashed at the first one's exit)"
  fi
  case $status in
    0) verdict=ok ;;
    77) verdict=skipped ;;
    124 | 137) verdict=timeout ;;
    *) verdict="failed" ;;
  esac
  echo "| $name | $verdict | $(($(date +%s) - began)) | $(echo "$RESULT" | tr '|\n' '/ ') |" >>"$TABLE"
  log "stage $name: $verdict"
  [ "$verdict" = ok ] || [ "$verdict" = skipped ] || STAGES_FAILED="$STAGES_FAILED $name"
  archive
done
log "done${STAGES_FAILED:+; failed or out of time:$STAGES_FAILED}"
# 3: some stage failed or ran out of time (1: the environment is broken)
[ -z "$STAGES_FAILED" ] || exit 3
