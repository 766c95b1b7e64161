#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The GPU check where there is no GPU: bench/gpu-check.sh must stop within
# a minute, with a non-zero exit status and the reason, leaving at most
# three files in $OUT (the device tool brings back at most eight), one of
# them the archive of its logs. On a machine with a GPU, CUDA_VISIBLE_DEVICES
# hides it, so the test runs (and can fail) everywhere.
# Usage: gpu-check-dry.sh SOURCE-DIR BUILD-DIR
set -eu
source_dir=$1
build=$2
fail() { echo "FAIL: $*"; exit 1; }

out=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-dry-XXXXXX")
trap 'rm -rf "$out" "$out.txt"' EXIT
start=$(date +%s)
status=0
OUT=$out CUDA_VISIBLE_DEVICES= timeout 90 bash "$source_dir/bench/gpu-check.sh" "$build" \
  >"$out.txt" 2>&1 || status=$?
took=$(( $(date +%s) - start ))
cat "$out.txt"
[ "$status" -ne 0 ] || fail "gpu-check.sh succeeded without a GPU"
[ "$status" -ne 124 ] || fail "gpu-check.sh ran past 90 s without a GPU"
[ "$took" -le 60 ] || fail "gpu-check.sh took $took s to stop (at most 60)"
grep -q "^gpu-check: no " "$out.txt" || fail "no reason given"
files=$(find "$out" -type f | wc -l)
[ "$files" -le 3 ] || { find "$out" -type f; fail "$files files in OUT (at most 3)"; }
[ -s "$out/gpu-check-logs.tar.gz" ] || fail "no log archive"
tar -tzf "$out/gpu-check-logs.tar.gz" | grep -q gpu-check.log \
  || fail "the archive lacks gpu-check.log"
tar -xzOf "$out/gpu-check-logs.tar.gz" ./gpu-check.log | grep -q "stopped: no " \
  || fail "gpu-check.log does not say why it stopped"
echo "ok: stopped after $took s with status $status, $files files"
