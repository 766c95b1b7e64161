#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Issue 43: mpirun hung for ever, silently, when anything listened on TCP
# port 6006, TensorBoard's default: hwloc's GL component, which Open MPI
# loads to learn the machine's layout, looks for X display :6 on that port
# and waits for an X server's answer. With a listener on 127.0.0.1:6006
# that accepts and never answers, and no HWLOC_COMPONENTS but the runs' own:
#   mpirun -np 1 true without HWLOC_COMPONENTS hangs (the control, bound
#   5 s) and its probe reaches the listener; where this machine's hwloc
#   probes no displays it does not hang, and the test says so;
#   the README's data-parallel line (the first line of the block after the
#   marker "dist-port-6006.sh runs this line"; docs/distributed.md has the
#   same line under the same marker), as written there, HWLOC_COMPONENTS=-gl
#   included, shortened (16 images of 16x16, batches of 4, 3 steps, the
#   checkpoint in the scratch folder), finishes: both ranks join, the
#   checkpoint is written, and nothing reached the listener;
#   a process alone with distributed=mpi (an Open MPI singleton, whose
#   MPI_Init starts a daemon that probes too) finishes without the variable
#   in its environment: the MPI module sets it (trainer/dist-mpi.c).
# A port 6006 already in use is a failure, not a skip. While the test runs,
# any other MPI launch on the machine without the variable would hang on
# its listener: meson runs it alone (is_parallel: false). At exit it kills
# whatever still holds a connection the listener accepted (a hung daemon
# that left the job's session, should the test fail), then the listener
# (which ends any other probe: it reads the end of the stream and goes on).
# Usage: dist-port-6006.sh HAVE-MPI DATASET-TOOL README.MD
set -eu
. "$(dirname "$0")/dist-common.sh"
dist_setup dist-port-6006 "$1" "$2" 16
doc=$3
# bounded.sh sets HWLOC_COMPONENTS for every launch of the tests; here the
# runs carry only what their line says
unset HWLOC_COMPONENTS

cat >"$work/listen.py" <<'EOF'
# Listens on 127.0.0.1:6006, accepts, never answers; one line a connection
# (the peer's port) in LOG; READY made once it listens.
import socket
import sys

ready, log = sys.argv[1], sys.argv[2]
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    server.bind(("127.0.0.1", 6006))
except OSError as error:
    print(f"cannot listen on 127.0.0.1:6006: {error}", file=sys.stderr)
    sys.exit(2)
server.listen(64)
open(ready, "w").close()
held = []
with open(log, "a", buffering=1) as out:
    while True:
        connection, peer = server.accept()
        held.append(connection)
        print(peer[1], file=out)
EOF
: >"$work/accepted"
listener=
# what holds a connection the listener accepted: a hung probe of this test
kill_probers() {
  command -v ss >/dev/null 2>&1 || return 0
  while read -r port; do
    ss -tnpH state established "( sport = :$port and dport = :6006 )" \
      2>/dev/null | grep -o 'pid=[0-9]*' | cut -d= -f2
  done <"$work/accepted" | sort -u | while read -r pid; do
    echo "killing pid $pid, still connected to the listener: $(ps -o args= -p "$pid")"
    kill -KILL "$pid" 2>/dev/null || true
  done
}
trap 'kill_probers; [ -z "$listener" ] || kill "$listener" 2>/dev/null
  rm -rf "$work"' EXIT
trap 'exit 1' INT TERM

/usr/bin/python3 "$work/listen.py" "$work/ready" "$work/accepted" \
  2>"$work/listen.err" &
listener=$!
deadline=$(($(date +%s) + 10))
until [ -e "$work/ready" ]; do
  if ! kill -0 "$listener" 2>/dev/null; then
    listener=
    ss -ltnp "( sport = :6006 )" 2>/dev/null || true
    fail "port 6006 is taken on this machine ($(cat "$work/listen.err")): the test needs it free to listen there; stop what uses it (above, where ss could say) and run the test again"
  fi
  [ "$(date +%s)" -lt "$deadline" ] || fail "the listener did not start in 10 s"
  sleep 0.1
done
accepted() { wc -l <"$work/accepted"; }
echo "listening on 127.0.0.1:6006: accepts, never answers"

# the control: mpirun without the variable
status=0
(GT_TEST_MPI_BOUND_S=5; bounded mpirun -np 1 true) >"$work/control.log" 2>&1 \
  || status=$?
if [ "$status" -eq 124 ] && [ "$(accepted)" -gt 0 ]; then
  echo "control: mpirun -np 1 true without HWLOC_COMPONENTS hung, its probe connected to the listener; killed"
elif [ "$status" -eq 0 ]; then
  echo "NOTE: mpirun -np 1 true without HWLOC_COMPONENTS did not hang: this hwloc probes no X displays (no GL component), the hang cannot happen here"
else
  cat "$work/control.log"
  fail "control: mpirun -np 1 true without HWLOC_COMPONENTS ended $status, with $(accepted) connection(s) to the listener"
fi

# the documented line, as written, shortened
line=$(sed -n '/^<!-- dist-port-6006.sh runs this line -->$/,/^```$/p' "$doc" \
  | sed '1,2d;$d' | awk '{ print } !/\\$/ { exit }')
[ -n "$line" ] || fail "no line under '<!-- dist-port-6006.sh runs this line -->' in $doc"
short=$(printf '%s\n' "$line" | sed \
  -e "s|location=data/fashion-mnist/train |location=$work/fm/train |" \
  -e 's|width=32 height=32 |width=16 height=16 |' \
  -e 's|batch-size=64 |batch-size=4 |' \
  -e 's|max-steps=100 |max-steps=3 |' \
  -e "s|checkpoint-location=runs/ddp.safetensors|checkpoint-location=$work/ddp.safetensors|")
for part in "location=$work/fm/train " "width=16 height=16 " "batch-size=4 " \
  "max-steps=3 " "checkpoint-location=$work/ddp.safetensors"; do
  case $short in
    *"$part"*) ;;
    *) fail "the line of $doc is not the one this test shortens (no place for '$part'): $line" ;;
  esac
done
# only where the build or the machine needs them: the ASan runtime for the
# ranks, more ranks than cores
[ -z "${GST_TRAIN_TEST_PRELOAD:-}" ] \
  || short=$(printf '%s\n' "$short" | sed "s|mpirun |mpirun -x LD_PRELOAD=$GST_TRAIN_TEST_PRELOAD |")
[ "$(nproc)" -ge 2 ] \
  || short=$(printf '%s\n' "$short" | sed "s|mpirun |mpirun --oversubscribe |")
echo "running, in $work:"
printf '%s\n' "$short" | sed 's/^/  /'
before=$(accepted)
status=0
(GT_TEST_MPI_BOUND_S=90; cd "$work" && bounded sh -c "$short") \
  >"$work/line.log" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
  cat "$work/line.log"
  [ "$status" -ne 124 ] || fail "the line of $doc hung with a listener on port 6006 ($(($(accepted) - before)) connection(s) to it; bounded's message above)"
  fail "the line of $doc failed ($status) with a listener on port 6006"
fi
for r in 0 1; do
  grep -q "Joined a data-parallel job as rank $r of 2" "$work/line.log" \
    || { cat "$work/line.log"; fail "rank $r did not say it joined a job of 2"; }
done
[ -s "$work/ddp.safetensors" ] || { cat "$work/line.log"; fail "no checkpoint"; }
[ "$(accepted)" -eq "$before" ] \
  || fail "the line's launch connected to the listener: HWLOC_COMPONENTS=-gl did not take"
echo "the line of $doc finished with the listener there, nothing probed it"

# a process alone with distributed=mpi, no HWLOC_COMPONENTS in its
# environment
before=$(accepted)
status=0
(GT_TEST_MPI_BOUND_S=60
  bounded env LD_PRELOAD="${GST_TRAIN_TEST_PRELOAD:-}" gst-launch-1.0 -e \
    datasetsrc location="$work/fm/train" num-epochs=-1 ! imagedec \
    ! augment width=16 height=16 ! batcher batch-size=4 \
    ! cudatrainsink device=cpu model=resnet20 num-threads=1 max-steps=2 \
      distributed=mpi checkpoint-location="$work/alone.safetensors") \
  >"$work/alone.log" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
  cat "$work/alone.log"
  [ "$status" -ne 124 ] || fail "a process alone with distributed=mpi hung with a listener on port 6006 ($(($(accepted) - before)) connection(s) to it; bounded's message above)"
  fail "a process alone with distributed=mpi failed ($status)"
fi
[ -s "$work/alone.safetensors" ] || { cat "$work/alone.log"; fail "alone: no checkpoint"; }
[ "$(accepted)" -eq "$before" ] \
  || fail "the process alone connected to the listener: the MPI module did not set HWLOC_COMPONENTS"
echo "a process alone with distributed=mpi finished, nothing probed the listener"

echo "ok: with a listener on port 6006 the documented line and a process alone finish"
