#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/gpu-check.sh before a GPU sees it (docs/gpu-runs.md):
# - the plan: call 1 starts with the environment, then the headline, and
#   totals at most 330 s (its lines add up to its total); call 2 starts
#   with the environment and fits its 240 s;
# - the rehearsal (--rehearse): every stage of both calls runs here with
#   device=cpu and small sizes, each ends ok or skipped (77, a stage that
#   needs the GPU), the headline row has both rates and their ratio, $OUT
#   holds at most three files, the archive holds every stage's log, and
#   the table is the last thing printed, inside the device tool's
#   12,000-character tail;
# - a rehearsal killed with SIGKILL in the middle of a stage (as the device
#   tool kills a command at its limit, with no EXIT trap) leaves a readable
#   archive and a table with the stages it finished, and call 2's plan
#   made from that table reruns the stages it did not reach.
# Usage: gpu-check-rehearse.sh SOURCE-DIR BUILD-DIR
set -eu
source_dir=$1
build=$2
script="$source_dir/bench/gpu-check.sh"
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-rehearse-XXXXXX")
# gst-launch-1.0 is not instrumented: under AddressSanitizer its runtime
# is loaded first (tests/integration/meson.build sets the variable)
if [ -n "${GST_TRAIN_TEST_PRELOAD:-}" ]; then
  export GST_LAUNCH="env LD_PRELOAD=$GST_TRAIN_TEST_PRELOAD gst-launch-1.0"
fi
trap 'rm -rf "$work"' EXIT

# ---- the plans ----
bash "$script" --plan >"$work/plan1.txt"
cat "$work/plan1.txt"
awk 'NR == 1 && $1 != "environment" { exit 1 }
     NR == 2 && $1 != "headline" { exit 1 }' "$work/plan1.txt" ||
  fail "call 1 must start with the environment, then the headline"
awk '$1 == "total" { total = $2; next } { sum += $2 }
     END { if (total != sum || total > 330 || total == 0) exit 1 }' "$work/plan1.txt" ||
  fail "call 1's stages do not add up to its total, or it is over 330 s"
for stage in parity-quick torch-parity-fp32 torch-parity-bf16 pipeline; do
  grep -q "^$stage " "$work/plan1.txt" || fail "call 1 lacks the stage $stage"
done
bash "$script" --plan --call 2 >"$work/plan2.txt" 2>"$work/plan2.err"
head -n 1 "$work/plan2.txt" | grep -q "^environment " ||
  fail "call 2 must start with the environment (a fresh machine)"
awk '$1 == "total" { total = $2; next } { sum += $2 }
     END { if (total != sum || total > 240) exit 1 }' "$work/plan2.txt" ||
  fail "call 2's stages do not add up to its total, or it is over 240 s"

# ---- the whole rehearsal ----
mkdir "$work/out"
status=0
OUT="$work/out" timeout 300 bash "$script" --rehearse "$build" >"$work/stdout.txt" 2>&1 ||
  status=$?
[ "$status" -eq 0 ] || { cat "$work/stdout.txt"; fail "the rehearsal exited $status"; }
table="$work/out/gpu-check.md"
[ -s "$table" ] || fail "no gpu-check.md in OUT"
files=$(find "$work/out" -type f | wc -l)
[ "$files" -le 3 ] || { find "$work/out" -type f; fail "$files files in OUT (at most 3)"; }
stages=$(bash "$script" --plan --rehearse | awk '$1 != "total" { print $1 }')
for stage in $stages; do
  row=$(grep "^| $stage | " "$table") || fail "no row for the stage $stage"
  case $row in
    "| $stage | ok |"* | "| $stage | skipped |"*) ;;
    *) cat "$work/stdout.txt"; fail "the stage $stage did not end ok or skipped: $row" ;;
  esac
done
grep "^| headline | ok |" "$table" |
  grep -q "ours [0-9.]* / PyTorch eager [0-9.]* = [0-9.]*x; graphs off (cpu backend); cuDNN planning" ||
  fail "the headline row lacks the rates, the ratio, the graphs or the planning"
tar -tzf "$work/out/gpu-check-logs.tar.gz" >"$work/archive.txt" ||
  fail "the log archive is not readable"
for log in gpu-check probe torch ours-16 torch-eager-16 parity-quick torch-parity-fp32 \
    torch-parity-bf16 corpus pipeline-none cuda-parity split pipeline-adaptive cuda-dist \
    ours-8 torch-eager-8 torch-compile; do
  grep -q "^\./$log\.log$" "$work/archive.txt" || fail "the archive lacks $log.log"
done
# what the device tool brings back of stdout: its last 12,000 characters
tail -c 12000 "$work/stdout.txt" >"$work/tail.txt"
tail -n "$(wc -l <"$table")" "$work/stdout.txt" | cmp -s - "$table" ||
  fail "the table is not the last thing printed"
grep -q "^| compile | " "$work/tail.txt" && grep -q "^# GPU check" "$work/tail.txt" ||
  fail "the table does not fit in the 12,000-character tail"
echo "ok: the rehearsal ran $(echo $stages | wc -w) stages, $files files in OUT"

# ---- killed in the middle of a stage ----
mkdir "$work/killed" "$work/tmp"
# (timeout(1) puts each command in a process group of its own: what the
# killed stage left running is found by its scratch folder, under TMPDIR)
OUT="$work/killed" TMPDIR="$work/tmp" setsid bash "$script" --rehearse "$build" >"$work/killed.txt" 2>&1 &
pid=$!
# its log says when torch-parity-fp32 has begun: the stages before it are
# finished and archived by then
waited=0
until grep -q "^== stage torch-parity-fp32 " "$work/killed.txt"; do
  kill -0 "$pid" 2>/dev/null || { cat "$work/killed.txt"; fail "the rehearsal ended before the stage to kill it in"; }
  [ "$waited" -lt 1200 ] || fail "torch-parity-fp32 did not begin within 120 s"
  sleep 0.1
  waited=$((waited + 1))
done
kill -KILL "-$pid"
wait "$pid" 2>/dev/null || true
pkill -KILL -f "$work/tmp" || true
files=$(find "$work/killed" -type f | wc -l)
[ "$files" -le 3 ] || { find "$work/killed" -type f; fail "$files files in OUT after the kill"; }
tar -tzf "$work/killed/gpu-check-logs.tar.gz" >"$work/killed-archive.txt" ||
  fail "the archive left by the kill is not readable"
for log in gpu-check ours-16 torch-eager-16 parity-quick; do
  grep -q "^\./$log\.log$" "$work/killed-archive.txt" ||
    fail "the archive left by the kill lacks $log.log"
done
tar -xzOf "$work/killed/gpu-check-logs.tar.gz" ./gpu-check.log | grep -q "stage parity-quick: " ||
  fail "the archived gpu-check.log does not reach the end of parity-quick"
for stage in environment headline parity-quick; do
  grep -q "^| $stage | \(ok\|skipped\) |" "$work/killed/gpu-check.md" ||
    fail "the table left by the kill lacks the finished stage $stage"
done
! grep -q "^| torch-parity-fp32 | " "$work/killed/gpu-check.md" ||
  fail "the killed stage has a row as if it had finished"
bash "$script" --plan --call 2 --after "$work/killed/gpu-check.md" >"$work/plan2-after.txt"
cat "$work/plan2-after.txt"
awk '$1 != "total" { printf "%s ", $1 }' "$work/plan2-after.txt" |
  grep -q "^environment torch-parity-fp32 torch-parity-bf16 pipeline " ||
  fail "call 2's plan after the killed call does not rerun what it did not reach first"
echo "ok: killed in torch-parity-fp32, the archive and table hold the $(grep -c '^| [a-z0-9-]* | \(ok\|skipped\)' "$work/killed/gpu-check.md") finished stages"
