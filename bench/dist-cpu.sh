#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Data-parallel training on the CPU backend: 1 rank against 2, ours against
# PyTorch DDP (gloo), on this machine's cores.
#
#   bench/dist-cpu.sh [--runs N] [--steps K] [--quick] [--no-resnet50]
#                     [--output FILE]
#
# Builds its own release build (build-bench/, or the folder BENCH_BUILD
# names), then for resnet20 at 32x32
# with 32 samples per rank (10 classes) and resnet50 at 64x64 with 8 per rank
# (10 classes) runs, N times over, interleaved (1, 2, 1, 2, ...):
#   ours:    bench/dist-bench --no-comm with T/2 threads    (1 rank)
#            mpirun -np 2 bench/dist-bench, T/2 threads each (2 ranks)
#            bench/dist-bench --no-comm with T threads      (1 rank, all cores)
#   PyTorch: bench/torch-ddp-cpu.py in the same three shapes (2 ranks: DDP
#            over gloo)
# where T is the number of online CPUs (threads per rank = cores / ranks);
# and, for resnet20, the same 2-rank job with --collective-timeout 600
# (cudatrainsink's default: every collective non-blocking, polled against
# its deadline) against the blocking calls above (0), for the cost of the
# bound per step.
# Every run times K steps after 2 of warm-up and reports its median step
# (the slowest rank's); the report takes the median over the runs. Scaling
# efficiency = 2-rank images/s / (2 x 1-rank images/s at the same threads
# per rank), and the 2-rank images/s against 1 rank on all cores. The
# report goes to stdout and docs/benchmarks/dist-cpu.md (--quick: 1 run of
# 3 steps, resnet20 only, to bench/out/dist-cpu-quick.md), rewritten after
# every run; a "## Notes" section below the tables is kept.
#
# Needs: meson, ninja, a C compiler, libopenblas-dev, libopenmpi-dev and
# openmpi-bin, /usr/bin/python3 with Debian's python3-torch and
# python3-torchvision. As root, mpirun wants OMPI_ALLOW_RUN_AS_ROOT=1 and
# OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 (set here when run as root).
set -euo pipefail
# shellcheck source=bench/bench-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh" dist-cpu "$@"

STEPS=10
RESNET50=1
while [ $# -gt 0 ]; do
  case $1 in
    --steps) STEPS=$2; shift 2 ;;
    --no-resnet50) RESNET50=0; shift ;;
    *) bench_option "$@"; shift "$BENCH_SHIFT" ;;
  esac
done
WARMUP=2
if [ "$QUICK" = 1 ]; then
  RUNS=1 STEPS=3 WARMUP=1 RESNET50=0
fi
bench_default_output
CORES=$(nproc)
HALF=$((CORES / 2 > 0 ? CORES / 2 : 1))
mkdir -p "$OUT" "$(dirname "$OUTPUT")"
RESULTS=$OUT/dist-cpu.jsonl
: > "$RESULTS"
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# without hwloc's GL component: mpirun hangs for ever where something
# listens on ports 6000-6009 (TensorBoard: 6006), probing for X displays
# (docs/distributed.md, "Launching")
export HWLOC_COMPONENTS="${HWLOC_COMPONENTS:--gl}"

# the MPI module too: dist-bench opens it at run time
bench_build bench/dist-bench trainer/libgsttrain-mpi.so
BENCH=$ROOT/$BENCH_BUILD/bench/dist-bench

configs=("resnet20 32 32 10")
if [ "$RESNET50" = 1 ]; then
  configs+=("resnet50 64 8 10")
fi
# report RUNS_DONE [quiet]: the tables from the results so far (written
# after every run, so that an interrupted benchmark leaves its figures).
report() {
local tables
tables=$("$PY" - "$RESULTS" "$CMDLINE" "$1" "$STEPS" "$CORES" "$HALF" \
  "$LOADS" <<'PYEOF'
import datetime, json, statistics, subprocess, sys
results, cmdline, runs, steps, cores, half, loads = sys.argv[1:8]
cores, half = int(cores), int(half)
rows = [json.loads(line) for line in open(results) if line.startswith("{")]
torch_version = next((r["torch"] for r in rows if r.get("torch")), "?")
lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
cpu = next((l.split(":", 1)[1].strip() for l in lscpu.splitlines()
            if l.startswith("Model name")), "?")


def pick(impl, model, ranks, threads, key="images_per_second", timeout=0):
    return [r[key] for r in rows if r["impl"].startswith(impl) and r["model"] == model
            and r["ranks"] == ranks and r["threads_per_rank"] == threads
            and r.get("collective_timeout", 0) == timeout]


def med(values):
    return statistics.median(values) if values else float("nan")


def spread(values):
    return f"{med(values):.2f} ({min(values):.2f}-{max(values):.2f})" if values else "-"


lines = [
    "# Data-parallel CPU training: 1 rank against 2, gst-train against PyTorch DDP",
    "",
    f"Measured {datetime.date.today()} on {cpu} ({cores} cores), with `{cmdline}`;",
    f"One-minute load average at the start of each run and at the end:{loads} (anything",
    f"above {cores} means other processes shared the cores: the figures are then noisy).",
    f"{runs} interleaved runs; each run's figure is the median of {steps} timed steps after",
    "warm-up, a step of a 2-rank job being its slowest rank's; the tables give the median over",
    "runs and the spread (min-max). Each rank trains on its own random uint8 batch, fp32, SGD",
    "with momentum 0.9, weight decay 1e-4, label smoothing 0.1, the normalisation inside the",
    f"step. Threads per rank = cores / ranks: {half} for 2 ranks; 1 rank runs at {half} (the same",
    f"threads per rank) and at {cores} (all cores). Ours: `bench/dist-bench` (2 ranks: `mpirun",
    "-np 2 --bind-to none`, Open MPI, one MPI_Allreduce per step after the backward pass).",
    f"PyTorch {torch_version}: `bench/torch-ddp-cpu.py` (2 ranks: DDP over gloo, 25 MiB buckets",
    "reduced during the backward pass, broadcast_buffers=False), default memory format.",
    "",
    "| model | input | per rank | shape | gst-train images/s | PyTorch images/s | ratio |",
    "|---|---|---|---|---|---|---|",
]
shapes = sorted({(r["model"], r["size"], r["batch_per_rank"]) for r in rows},
                key=lambda s: s[0] != "resnet20")
summary = []
for model, size, batch in shapes:
    for ranks, threads, label in ((1, half, f"1 rank x {half} thread(s)"),
                                  (2, half, f"2 ranks x {half} thread(s)"),
                                  (1, cores, f"1 rank x {cores} threads")):
        ours, theirs = pick("gst-train", model, ranks, threads), pick("pytorch", model, ranks, threads)
        lines.append(f"| {model} | {size}x{size} | {batch} | {label} | {spread(ours)} | "
                     f"{spread(theirs)} | **{med(ours) / med(theirs):.2f}x** |")
    summary.append((model, size, batch))
lines += [
    "",
    "| model | gst-train: step, all-reduce (with wait) | scaling efficiency | 2 ranks / 1 rank on all cores "
    "| PyTorch DDP: step | scaling efficiency | 2 ranks / 1 rank on all cores |",
    "|---|---|---|---|---|---|---|",
]
for model, size, batch in summary:
    cells = []
    for impl in ("gst-train", "pytorch"):
        one = med(pick(impl, model, 1, half))
        two = med(pick(impl, model, 2, half))
        full = med(pick(impl, model, 1, cores))
        step = med(pick(impl, model, 2, half, "step_seconds_median"))
        if impl == "gst-train":
            comm = med(pick(impl, model, 2, half, "allreduce_seconds_median"))
            wait = med(pick(impl, model, 2, half, "allreduce_with_wait_seconds_median"))
            cells.append(f"{step * 1e3:.0f} ms, {comm * 1e3:.1f} ms ({wait * 1e3:.1f} ms)")
        else:
            cells.append(f"{step * 1e3:.0f} ms")
        cells += [f"{two / (2 * one):.2f}", f"{two / full:.2f}"]
    lines.append(f"| {model} {size}x{size}, {batch} per rank | " + " | ".join(cells) + " |")
bounded = [s for s in summary if pick("gst-train", s[0], 2, half, timeout=600)]
if bounded:
    lines += [
        "",
        "The bound on every collective (cudatrainsink's collective-timeout, 600 s by default: "
        "MPI_Iallreduce polled against its deadline) against MPI's blocking MPI_Allreduce "
        "(collective-timeout=0), the same 2-rank job, interleaved:",
        "",
        "| model | step, blocking | step, bounded | all-reduce, blocking | all-reduce, bounded "
        "| cost per step (bounded - blocking) |",
        "|---|---|---|---|---|---|",
    ]
    for model, size, batch in bounded:
        step0 = med(pick("gst-train", model, 2, half, "step_seconds_median"))
        step1 = med(pick("gst-train", model, 2, half, "step_seconds_median", 600))
        comm0 = med(pick("gst-train", model, 2, half, "allreduce_seconds_median"))
        comm1 = med(pick("gst-train", model, 2, half, "allreduce_seconds_median", 600))
        lines.append(
            f"| {model} {size}x{size}, {batch} per rank | {step0 * 1e3:.1f} ms | {step1 * 1e3:.1f} ms "
            f"| {comm0 * 1e3:.2f} ms | {comm1 * 1e3:.2f} ms | step {(step1 - step0) * 1e3:+.1f} ms "
            f"({(step1 - step0) / step0 * 100:+.1f}%), all-reduce {(comm1 - comm0) * 1e3:+.2f} ms "
            f"({(comm1 - comm0) / step0 * 100:+.2f}% of the step) |")
lines.append("")
print("\n".join(lines))
PYEOF
)
bench_report "$tables" "${2:-}"
}

LOADS=
for run in $(seq 1 "$RUNS"); do
  LOADS="$LOADS $(cut -d' ' -f1 /proc/loadavg)"
  for config in "${configs[@]}"; do
    # shellcheck disable=SC2086 # the config splits into words on purpose
    set -- $config
    shape=(--model "$1" --size "$2" --batch "$3" --classes "$4"
      --warmup "$WARMUP" --steps "$STEPS")
    log "run $run/$RUNS: $1 at $2x$2, $3 per rank"
    {
      "$BENCH" --no-comm --threads "$HALF" "${shape[@]}"
      mpirun --bind-to none -np 2 "$BENCH" --threads "$HALF" "${shape[@]}"
      if [ "$1" = resnet20 ]; then
        mpirun --bind-to none -np 2 "$BENCH" --threads "$HALF" "${shape[@]}" \
          --collective-timeout 600
      fi
      "$BENCH" --no-comm --threads "$CORES" "${shape[@]}"
      "$PY" "$ROOT/bench/torch-ddp-cpu.py" --ranks 1 --threads "$HALF" "${shape[@]}"
      "$PY" "$ROOT/bench/torch-ddp-cpu.py" --ranks 2 --threads "$HALF" "${shape[@]}"
      "$PY" "$ROOT/bench/torch-ddp-cpu.py" --ranks 1 --threads "$CORES" "${shape[@]}"
    } >> "$RESULTS"
  done
  if [ "$run" -lt "$RUNS" ]; then
    report "$run" quiet
  fi
done
LOADS="$LOADS $(cut -d' ' -f1 /proc/loadavg)"
report "$RUNS"

