#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The test command: installs the dependencies, builds with warnings as errors
# and runs the whole suite, then builds again under AddressSanitizer (with
# LeakSanitizer) and runs it a second time. GPU tests (suite gpu) skip
# (exit 77) where no GPU is usable; any other skip counts as a failure, and
# with REQUIRE_GPU=1 a GPU skip does too. Between the two, the release
# configuration (the demo's) is compiled with warnings as errors. A last
# stage builds the libFuzzer targets with clang (tests/fuzz) and runs each
# for 30 s from its committed corpus: a crash, or no libFuzzer to run them
# with, is a failure. It prints each stage's minutes and the whole's.
set -eu
cd "$(dirname "$0")/.."

sh scripts/install-deps.sh
[ -d /usr/local/cuda/bin ] && PATH="/usr/local/cuda/bin:$PATH"

jobs=$(nproc)
summary=""
total_failed=0

run_suite() {
  dir=$1; shift
  if [ -d "$dir" ]; then
    meson setup --reconfigure "$dir" -Dwerror=true "$@" >/dev/null
  else
    meson setup "$dir" -Dwerror=true "$@" >/dev/null
  fi
  ninja -C "$dir"
  status=0
  meson test -C "$dir" --print-errorlogs --num-processes "$jobs" || status=$?
  # A skipped test tested nothing: outside the GPU suite (and inside it
  # too with REQUIRE_GPU=1, for a run on a GPU machine) a skip fails.
  counts=$(REQUIRE_GPU=${REQUIRE_GPU:-0} /usr/bin/python3 - "$dir/meson-logs/testlog.json" <<'PY'
import json, os, sys
require_gpu = os.environ["REQUIRE_GPU"] == "1"
ok = failed = skipped = 0
for line in open(sys.argv[1]):
    test = json.loads(line)
    # meson names a test "project:suite / name"
    gpu = "gpu" in test["name"].split(" / ")[0].split(":")[1:]
    if test["result"] in ("OK", "EXPECTEDFAIL"):
        ok += 1
    elif test["result"] == "SKIP" and gpu and not require_gpu:
        skipped += 1
    else:
        if test["result"] == "SKIP":
            print(f"test.sh: {test['name']} was skipped: that counts as a failure",
                  file=sys.stderr)
        failed += 1
print(ok, failed, skipped)
PY
)
  set -- $counts
  summary="$summary
$dir: $1 passed, $2 failed, $3 skipped"
  total_passed=$(( ${total_passed:-0} + $1 ))
  total_failed=$(( total_failed + $2 ))
  total_skipped=$(( ${total_skipped:-0} + $3 ))
  # meson failed without a failed test in its log: count that as a failure.
  [ "$status" -eq 0 ] || [ "$2" -gt 0 ] || total_failed=$(( total_failed + 1 ))
  return 0
}

# Each fuzz target for $FUZZ_SECONDS (30) from its committed corpus and
# regressions; what it adds to the corpus goes to a scratch folder, crash
# inputs to build-fuzz/artifacts/. One passed or failed per target.
fuzz_suite() {
  dir=build-fuzz
  seconds=${FUZZ_SECONDS:-30}
  targets="jpeg dataset-list safetensors idx strings shard"
  passed=0 failed=0 executions=""
  if ! command -v clang >/dev/null \
      || ! printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
        'int LLVMFuzzerTestOneInput (const uint8_t *d, size_t n) { return 0; }' \
        | clang -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then
    echo "test.sh: no clang with libFuzzer (clang, libclang-rt-14-dev):" \
      "the fuzz stage did not run, which counts as a failure" >&2
    summary="$summary
$dir: 0 passed, 1 failed, 0 skipped (no clang with libFuzzer)"
    total_failed=$(( total_failed + 1 ))
    return 0
  fi
  if [ -d "$dir" ]; then
    meson setup --reconfigure "$dir" >/dev/null
  else
    CC=clang meson setup "$dir" -Dwerror=true -Dfuzz=enabled -Dcuda=disabled \
      >/dev/null
  fi
  # Only the fuzz targets: the suites above built and tested the rest.
  # shellcheck disable=SC2046
  ninja -C "$dir" $(for t in $targets; do echo "tests/fuzz/fuzz-$t"; done)
  mkdir -p "$dir/artifacts"
  for t in $targets; do
    scratch=$(mktemp -d)
    log="$dir/artifacts/fuzz-$t.log"
    status=0
    # -timeout is wall-clock time: the slowest inputs take under a second of
    # CPU, but on a busy machine 10 s fired on one of them.
    # shellcheck disable=SC2046
    "$dir/tests/fuzz/fuzz-$t" -max_total_time="$seconds" -timeout=25 \
      -print_final_stats=1 -artifact_prefix="$dir/artifacts/$t-" "$scratch" \
      tests/fuzz/corpus/"$t" $(ls -d tests/fuzz/regressions/"$t" 2>/dev/null) \
      >"$log" 2>&1 || status=$?
    rm -rf "$scratch"
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    executions="$executions $t=${runs:-?}"
    if [ "$status" -eq 0 ]; then
      passed=$(( passed + 1 ))
    else
      failed=$(( failed + 1 ))
      echo "test.sh: fuzz-$t failed (exit $status); its log:" >&2
      tail -n 60 "$log" >&2
    fi
  done
  echo "fuzz executions in ${seconds} s each:$executions"
  summary="$summary
$dir: $passed passed, $failed failed, 0 skipped (fuzz executions:$executions)"
  total_passed=$(( ${total_passed:-0} + passed ))
  total_failed=$(( total_failed + failed ))
}

# The release configuration the demo and the benchmarks build, with warnings
# as errors: -O3 inlines more and warns where -O2 does not (-Wformat-
# truncation). Every C file compiled, nothing linked or run (the stages
# above test the code; nvcc's flags do not depend on the build type, so the
# first stage checked the CUDA files). One passed or failed.
release_check() {
  dir=build-release-werror
  if [ -d "$dir" ]; then
    meson setup --reconfigure "$dir" --buildtype=release -Dwerror=true >/dev/null
  else
    meson setup "$dir" --buildtype=release -Dwerror=true >/dev/null
  fi
  # shellcheck disable=SC2046
  if ninja -C "$dir" $(ninja -C "$dir" -t targets all \
      | sed -n 's/^\([^:]*\.c\.o\): .*/\1/p'); then
    result="1 passed, 0 failed"
    total_passed=$(( ${total_passed:-0} + 1 ))
  else
    result="0 passed, 1 failed"
    total_failed=$(( total_failed + 1 ))
  fi
  summary="$summary
$dir: $result, 0 skipped (release, -Werror, compiled only)"
}

# Runs stage $1 (a function and its arguments) and notes its minutes.
timed() {
  began=$(date +%s)
  "$@"
  summary="$summary in $(( ($(date +%s) - began + 30) / 60 )) min"
}

started=$(date +%s)
timed run_suite build
timed release_check
timed run_suite build-asan -Db_sanitize=address -Db_lundef=false
timed fuzz_suite

echo "$summary"
echo "test.sh took $(( ($(date +%s) - started + 30) / 60 )) min"
echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
[ "$total_failed" -eq 0 ]
