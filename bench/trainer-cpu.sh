#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Training-step benchmark of the CPU backend against PyTorch on the CPU.
#
#   bench/trainer-cpu.sh [--runs N] [--quick] [--avx2-cpu] [--output FILE]
#
# Builds its own release build (build-bench/), then, for resnet50 at 224x224
# batch 16 (1000 classes) and resnet20 at 32x32 batch 128 (10 classes), runs
# bench/trainer-bench (ours) and bench/torch-train-cpu.py (PyTorch fp32,
# default and channels_last, the faster counted) N times each, interleaved,
# with the same thread count (all online CPUs) and random data; every run
# times several steps after warm-up and reports its median step. The
# report (median over runs, ratio ours / PyTorch) goes to stdout and to
# docs/benchmarks/trainer-cpu.md (--quick: 1 run of 2 steps, to
# bench/out/trainer-cpu-quick.md).
#
# --avx2-cpu: each run also times both sides on the paths an AVX2 CPU
# without AVX-512 (AMD EPYC Zen 3) takes, forced on this one: OpenBLAS's
# Zen kernels for both, our direct kernels at AVX2 (GT_CPU_ISA), PyTorch's
# oneDNN at AVX2 (ONEDNN_MAX_CPU_ISA); our streaming passes follow the CPU
# and cannot be forced. A second table reports them.
#
# Needs: meson, ninja, a C compiler, libopenblas-dev, /usr/bin/python3 with
# python3-torch and python3-torchvision (Debian's).
set -euo pipefail
# shellcheck source=bench/bench-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh" trainer-cpu "$@"

AVX2_CPU=0
while [ $# -gt 0 ]; do
  if [ "$1" = --avx2-cpu ]; then
    AVX2_CPU=1
    shift
    continue
  fi
  bench_option "$@"
  shift "$BENCH_SHIFT"
done
# what --avx2-cpu forces, for both sides (tests/meson.build's avx2_cpu_env)
AVX2_ENV=(OPENBLAS_CORETYPE=Zen GT_BLAS_KEEP_CORETYPE=1 GT_CPU_ISA=avx2
  ONEDNN_MAX_CPU_ISA=AVX2)
STEPS=5 WARMUP=2
if [ "$QUICK" = 1 ]; then
  RUNS=1 STEPS=2 WARMUP=1
fi
bench_default_output
THREADS=$(nproc)
mkdir -p "$OUT" "$(dirname "$OUTPUT")"
RESULTS=$OUT/trainer-cpu.jsonl
: > "$RESULTS"

bench_build bench/trainer-bench

configs=("resnet50 224 16 1000" "resnet20 32 128 10")
for run in $(seq 1 "$RUNS"); do
  for config in "${configs[@]}"; do
    set -- $config
    log "run $run/$RUNS: $1 at $2x$2, batch $3"
    "$ROOT/build-bench/bench/trainer-bench" --model "$1" --size "$2" \
      --batch "$3" --classes "$4" --threads "$THREADS" --warmup "$WARMUP" \
      --steps "$STEPS" >> "$RESULTS"
    if [ "$1" = resnet50 ]; then
      # OpenBLAS's fallback for CPU models it does not know: as detected
      # and remedied by the backend, and as it would run if kept
      for keep in 0 1; do
        OPENBLAS_CORETYPE=Prescott GT_BLAS_KEEP_CORETYPE=$keep \
          "$ROOT/build-bench/bench/trainer-bench" --model "$1" --size "$2" \
          --batch "$3" --classes "$4" --threads "$THREADS" \
          --warmup "$WARMUP" --steps "$STEPS" \
          | sed "s/\"impl\": \"gst-train\"/\"impl\": \"prescott-keep$keep\"/" \
          >> "$RESULTS"
      done
    fi
    "$PY" "$ROOT/bench/torch-train-cpu.py" --model "$1" --size "$2" \
      --batch "$3" --classes "$4" --threads "$THREADS" --warmup "$WARMUP" \
      --steps "$STEPS" --runs 1 --channels-last >> "$RESULTS"
    if [ "$AVX2_CPU" = 1 ]; then
      log "run $run/$RUNS: $1 at $2x$2, batch $3, AVX2 paths"
      env "${AVX2_ENV[@]}" "$ROOT/build-bench/bench/trainer-bench" \
        --model "$1" --size "$2" --batch "$3" --classes "$4" \
        --threads "$THREADS" --warmup "$WARMUP" --steps "$STEPS" \
        | sed 's/"impl": "gst-train"/"impl": "gst-train-avx2"/' >> "$RESULTS"
      env "${AVX2_ENV[@]}" "$PY" "$ROOT/bench/torch-train-cpu.py" \
        --model "$1" --size "$2" --batch "$3" --classes "$4" \
        --threads "$THREADS" --warmup "$WARMUP" --steps "$STEPS" --runs 1 \
        --channels-last \
        | sed 's/"impl": "pytorch"/"impl": "pytorch-avx2"/' >> "$RESULTS"
    fi
  done
done

"$PY" - "$RESULTS" "$OUTPUT" "$CMDLINE" "$RUNS" "$STEPS" "$THREADS" <<'PYEOF'
import json, platform, statistics, subprocess, sys, datetime
results, output, cmdline, runs, steps, threads = sys.argv[1:7]
rows = [json.loads(line) for line in open(results) if line.startswith("{")]
torch_version = next((r.get("torch") for r in rows if r.get("torch")), "?")
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
            if l.startswith("model name")), platform.processor())
lines = [
    "# CPU training step: gst-train's CPU backend against PyTorch",
    "",
    f"Measured {datetime.date.today()} on {cpu}, {threads} threads, with `{cmdline}`",
    f"({runs} interleaved runs; each run's figure is the median of {steps} timed steps after warm-up;",
    "the table gives the median over runs, and the spread min-max). Random uint8 data, fp32,",
    "SGD with momentum 0.9, weight decay 1e-4, label smoothing 0.1; the uint8 to float",
    "normalisation is inside the timed step for both. PyTorch "
    f"{torch_version} (Debian, oneDNN) runs both memory formats; the faster one counts.",
    "",
    "| model | input | batch | gst-train images/s | PyTorch images/s | PyTorch format | ratio |",
    "|---|---|---|---|---|---|---|",
]
def table(suffix):
    """The rows of one pair of implementations (gst-train + suffix against
    pytorch + suffix); none when the runs have none."""
    out = []
    for model, size, batch in (("resnet50", 224, 16), ("resnet20", 32, 128)):
        ours = [r["images_per_second_median"] for r in rows
                if r["impl"] == "gst-train" + suffix and r["model"] == model]
        theirs = [r["images_per_second_median"] for r in rows
                  if r["impl"] == "pytorch" + suffix and r["model"] == model]
        formats = sorted({r.get("memory_format", "?") for r in rows
                          if r["impl"] == "pytorch" + suffix and r["model"] == model})
        if not ours or not theirs:
            continue
        o, t = statistics.median(ours), statistics.median(theirs)
        out.append(f"| {model} | {size}x{size} | {batch} | {o:.2f} ({min(ours):.2f}-{max(ours):.2f}) "
                   f"| {t:.2f} ({min(theirs):.2f}-{max(theirs):.2f}) | {', '.join(formats)} | **{o / t:.2f}x** |")
    return out


def kernels(impl):
    return next((r["cpu_kernels"] for r in rows
                 if r["impl"] == impl and "cpu_kernels" in r), "?")


lines += table("")
lines += ["", f"gst-train's kernels: {kernels('gst-train')}.", ""]
avx2 = table("-avx2")
if avx2:
    lines += [
        "The paths an AVX2 CPU without AVX-512 (AMD EPYC Zen 3) takes, forced on this",
        "one for both sides in the same runs (`--avx2-cpu`: OpenBLAS's Zen kernels,",
        "`GT_CPU_ISA=avx2`, PyTorch's `ONEDNN_MAX_CPU_ISA=AVX2`; our streaming passes",
        "follow the CPU):",
        "",
        "| model | input | batch | gst-train images/s | PyTorch images/s | PyTorch format | ratio |",
        "|---|---|---|---|---|---|---|",
    ] + avx2 + ["", f"gst-train's kernels there: {kernels('gst-train-avx2')}.", ""]
forced = {keep: [r["images_per_second_median"] for r in rows
                 if r["impl"] == f"prescott-keep{keep}"] for keep in (0, 1)}
theirs = [r["images_per_second_median"] for r in rows
          if r["impl"] == "pytorch" and r["model"] == "resnet50"]
if forced[0] and forced[1] and theirs:
    t = statistics.median(theirs)
    lines += [
        "OpenBLAS's fallback for CPU models missing from its table, forced with",
        "`OPENBLAS_CORETYPE=Prescott` (resnet50 224x224 batch 16, same runs):",
        "",
        "| OpenBLAS kernels | gst-train images/s | ratio to PyTorch |",
        "|---|---|---|",
    ]
    for keep, label in ((1, "Prescott, kept (`GT_BLAS_KEEP_CORETYPE=1`)"),
                        (0, "detected and reloaded by the backend")):
        o = statistics.median(forced[keep])
        note = next((r.get("cpu_kernels", "") for r in rows
                     if r["impl"] == f"prescott-keep{keep}"), "")
        lines.append(f"| {label}: {note.split(';')[0]} | {o:.2f} | {o / t:.2f}x |")
    lines.append("")
text = "\n".join(lines)
print(text)
if not output.endswith("-quick.md"):
    text += "\n"
open(output, "w").write(text + "\n")
PYEOF
