#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Data-parallel training on the CPU backend across two "hosts" on this
# machine (two network namespaces joined by a bridge, TCP only:
# tests/integration/netns-hosts.sh) against two ranks on one host (Open
# MPI's shared memory), as root.
#
#   bench/dist-hosts.sh [--runs N] [--steps K] [--quick] [--output FILE]
#
# Builds its own release build (build-bench/, or the folder BENCH_BUILD
# names), then for resnet20 at 32x32 with 32 samples per rank (10 classes)
# and resnet50 at 64x64 with 8 per rank runs, N times over, interleaved:
#   mpirun -np 2 bench/dist-bench              (1 host, shared memory)
#   the same through hosts_mpirun              (2 hosts, btl tcp,self)
# each rank with cores / 2 threads. Every run times K steps after 2 of
# warm-up and reports its median step (the slowest rank's) and the median
# all-reduce (the rank that waited least: the reduction itself). The report
# goes to stdout and docs/benchmarks/dist-hosts.md (--quick: 1 run of 3
# steps, resnet20 only, to bench/out/dist-hosts-quick.md); a "## Notes"
# section below the table is kept.
set -euo pipefail
# shellcheck source=bench/bench-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh" dist-hosts "$@"

STEPS=10
while [ $# -gt 0 ]; do
  case $1 in
    --steps) STEPS=$2; shift 2 ;;
    *) bench_option "$@"; shift "$BENCH_SHIFT" ;;
  esac
done
WARMUP=2
configs=("resnet20 32 32 10" "resnet50 64 8 10")
if [ "$QUICK" = 1 ]; then
  RUNS=1 STEPS=3 WARMUP=1
  configs=("resnet20 32 32 10")
fi
bench_default_output
[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# without hwloc's GL component: mpirun and its daemons hang for ever where
# something listens on ports 6000-6009 (TensorBoard: 6006), probing for X
# displays (docs/distributed.md, "Launching")
export HWLOC_COMPONENTS="${HWLOC_COMPONENTS:--gl}"
CORES=$(nproc)
HALF=$((CORES / 2 > 0 ? CORES / 2 : 1))
mkdir -p "$OUT" "$(dirname "$OUTPUT")"
RESULTS=$OUT/dist-hosts.jsonl
: > "$RESULTS"

bench_build bench/dist-bench trainer/libgsttrain-mpi.so
BENCH=$ROOT/$BENCH_BUILD/bench/dist-bench

scratch=$(mktemp -d "${TMPDIR:-/tmp}/dist-hosts-XXXXXX")
# shellcheck source=tests/integration/netns-hosts.sh
. "$ROOT/tests/integration/netns-hosts.sh"
trap 'hosts_down; rm -rf "$scratch"' EXIT
hosts_up "$scratch"

report() {
local tables
tables=$("$PY" - "$RESULTS" "$CMDLINE" "$1" "$STEPS" "$CORES" "$HALF" <<'PYEOF'
import datetime, json, statistics, subprocess, sys
results, cmdline, runs, steps, cores, half = sys.argv[1:7]
rows = [json.loads(line) for line in open(results) if line.startswith("{")]
lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
cpu = next((l.split(":", 1)[1].strip() for l in lscpu.splitlines()
            if l.startswith("Model name")), "?")


def pick(model, where, key):
    return [r[key] for r in rows if r["model"] == model and r["where"] == where]


def cell(values, scale=1e3, digits=1):
    if not values:
        return "-"
    return (f"{statistics.median(values) * scale:.{digits}f} "
            f"({min(values) * scale:.{digits}f}-{max(values) * scale:.{digits}f})")


lines = [
    "# Data-parallel CPU training: 2 hosts over TCP against 2 ranks on one host",
    "",
    f"Measured {datetime.date.today()} on {cpu} ({cores} cores), with `{cmdline}`,",
    f"{runs} interleaved runs; each run's figure is the median of {steps} timed steps after warm-up.",
    "Both jobs run `bench/dist-bench` with 2 ranks of",
    f"{half} thread(s) on the same machine: one host is `mpirun -np 2` (Open MPI's shared memory,",
    "vader), two hosts are two network namespaces joined by a bridge, one rank in each,",
    "`--mca btl tcp,self --mca pml ob1` (tests/integration/netns-hosts.sh: the TCP stack and",
    "the veth pairs are real, the wire is not). Step: the slowest rank's; all-reduce: the rank",
    "that waited least (the reduction itself), with the wait for the other rank in brackets.",
    "Median over runs, and the spread (min-max), in milliseconds.",
    "",
    "| model | per rank | gradients | step, 1 host | step, 2 hosts | all-reduce, 1 host (with wait) "
    "| all-reduce, 2 hosts (with wait) | 2 hosts / 1 host, step |",
    "|---|---|---|---|---|---|---|---|",
]
for model in sorted({r["model"] for r in rows}, key=lambda m: m != "resnet20"):
    one = [r for r in rows if r["model"] == model]
    size, batch = one[0]["size"], one[0]["batch_per_rank"]
    step1, step2 = pick(model, "1 host", "step_seconds_median"), pick(model, "2 hosts", "step_seconds_median")
    ratio = (statistics.median(step2) / statistics.median(step1)) if step1 and step2 else float("nan")
    lines.append(
        f"| {model} {size}x{size} | {batch} | {'0.27 M' if model == 'resnet20' else '23.5 M'} "
        f"| {cell(step1)} | {cell(step2)} "
        f"| {cell(pick(model, '1 host', 'allreduce_seconds_median'), digits=2)} "
        f"({cell(pick(model, '1 host', 'allreduce_with_wait_seconds_median'), digits=2)}) "
        f"| {cell(pick(model, '2 hosts', 'allreduce_seconds_median'), digits=2)} "
        f"({cell(pick(model, '2 hosts', 'allreduce_with_wait_seconds_median'), digits=2)}) "
        f"| **{ratio:.2f}x** |")
lines.append("")
print("\n".join(lines))
PYEOF
)
bench_report "$tables"
}

# tag WHERE: each JSON line of dist-bench with "where"
tag() { sed "s/^{/{\"where\": \"$1\", /"; }

for run in $(seq 1 "$RUNS"); do
  for config in "${configs[@]}"; do
    # shellcheck disable=SC2086 # the config splits into words on purpose
    set -- $config
    shape=(--model "$1" --size "$2" --batch "$3" --classes "$4"
      --warmup "$WARMUP" --steps "$STEPS" --threads "$HALF")
    log "run $run/$RUNS: $1 at $2x$2, $3 per rank"
    mpirun --bind-to none -np 2 "$BENCH" "${shape[@]}" | tag "1 host" >>"$RESULTS"
    hosts_mpirun --bind-to none "$BENCH" "${shape[@]}" | tag "2 hosts" >>"$RESULTS"
  done
done
report "$RUNS"
