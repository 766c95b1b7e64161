#!/bin/sh
# The test command: installs the dependencies, builds with warnings as errors
# and runs the whole suite, then builds again under AddressSanitizer (with
# LeakSanitizer) and runs it a second time. GPU tests (suite gpu) skip
# (exit 77) where no GPU is usable; any other skip counts as a failure, and
# with REQUIRE_GPU=1 a GPU skip does too.
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

run_suite build
run_suite build-asan -Db_sanitize=address -Db_lundef=false

echo "$summary"
echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
[ "$total_failed" -eq 0 ]
