#!/bin/sh
# The test command: installs the dependencies, builds with warnings as errors
# and runs the whole suite, then builds again under AddressSanitizer (with
# LeakSanitizer) and runs it a second time. GPU tests skip (exit 77) where no
# GPU is usable.
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
  counts=$(/usr/bin/python3 - "$dir/meson-logs/testlog.json" <<'PY'
import json, sys
results = [json.loads(line)["result"] for line in open(sys.argv[1])]
ok = sum(r in ("OK", "EXPECTEDFAIL") for r in results)
skip = sum(r == "SKIP" for r in results)
print(ok, len(results) - ok - skip, skip)
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
