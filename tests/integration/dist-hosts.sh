#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Several hosts, for real, on one machine (netns-hosts.sh): two network
# namespaces with their own addresses joined by a bridge the test makes,
# Open MPI starting one rank in each through an rsh agent that enters the
# namespace, TCP only.
#   Each rank runs in its own namespace, on its own address.
#   2 hosts over TCP, 6 steps: the checkpoint is bitwise the 1-host 2-rank
#   run's (over shared memory).
#   The link of host B cut mid-run (ip link set down): mpirun ends within
#   collective-timeout + 10 s, non-zero, rank 0's error naming rank 1.
#   A host name that does not resolve (mpirun's own ssh): mpirun ends at
#   once, non-zero, naming the host.
# Where namespaces cannot be made (not root, a kernel that refuses) the
# test fails: it does not skip. Everything it made is removed at exit.
# Usage: dist-hosts.sh HAVE-MPI DATASET-TOOL GST-TRAIN
set -eu
. "$(dirname "$0")/dist-common.sh"
. "$(dirname "$0")/netns-hosts.sh"
dist_setup dist-hosts "$1" "$2" 48
export GST_TRAIN="$3"
trap 'hosts_down; rm -rf "$work"' EXIT
trap 'exit 1' INT TERM
hosts_up "$work"
# hosts_mpirun under the tests' bound (dist-common.sh's bounded.sh)
HOSTS_LAUNCHER=bounded
timeout=3

# one rank in each namespace, on its address
hosts_mpirun sh -c 'echo "rank $OMPI_COMM_WORLD_RANK $(ip -o -4 addr show dev eth0 | awk "{print \$4}")"' \
  >"$work/where.log" 2>&1 || { cat "$work/where.log"; fail "mpirun over the two hosts failed"; }
grep -qx "rank 0 $HOST_A/24" "$work/where.log" && grep -qx "rank 1 $HOST_B/24" "$work/where.log" \
  || { cat "$work/where.log"; fail "the ranks are not one on each host"; }

line="datasetsrc location=$work/fm/train seed=3 num-epochs=-1 ! imagedec
  ! augment width=16 height=16 ! batcher batch-size=4
  ! cudatrainsink device=cpu model=resnet20 num-classes=10 num-threads=1
    total-steps=8 stats-interval=0 max-steps=6 collective-timeout=$timeout"
# shellcheck disable=SC2086
hosts_mpirun "$GST_TRAIN" $line checkpoint-location="$work/hosts.safetensors" \
  >"$work/hosts.log" 2>&1 || { cat "$work/hosts.log"; fail "2 hosts over TCP"; }
# shellcheck disable=SC2086
mpi 2 "$GST_TRAIN" $line checkpoint-location="$work/one.safetensors" \
  >"$work/one.log" 2>&1 || { cat "$work/one.log"; fail "1 host, 2 ranks"; }
ckpt same "$work/hosts.safetensors" "$work/one.safetensors"
echo "2 hosts over TCP: bitwise the 1-host 2-rank run"

# the link of host B cut mid-run
rm -f "$work/cut.jsonl"
# shellcheck disable=SC2086
hosts_mpirun "$GST_TRAIN" $line max-steps=0 stats-interval=1 \
  metrics-location="$work/cut.jsonl" >"$work/cut.log" 2>&1 &
job=$!
deadline=$(($(date +%s) + 30))
while [ "$(cat "$work/cut.jsonl" 2>/dev/null | wc -l)" -lt 3 ]; do
  [ "$(date +%s)" -lt "$deadline" ] || { cat "$work/cut.log"; fail "the job over two hosts did not train"; }
  sleep 0.1
done
hosts_cut
started=$(now)
deadline=$(($(date +%s) + 60))
while kill -0 "$job" 2>/dev/null; do
  [ "$(date +%s)" -lt "$deadline" ] || { cat "$work/cut.log"; fail "cut link: the job hung"; }
  sleep 0.2
done
status=0
wait "$job" || status=$?
took=$(elapsed "$started" "$(now)")
[ "$status" -ne 0 ] || { cat "$work/cut.log"; fail "cut link: mpirun exited 0"; }
awk -v t="$took" -v m="$((timeout + 10))" 'BEGIN { exit !(t < m) }' || {
  cat "$work/cut.log"; fail "cut link: the job took $took s to end"; }
grep -qE "^rank 0: error from cudatrainsink0: .*collective-timeout=$timeout s: rank 1 did not arrive" \
  "$work/cut.log" || { cat "$work/cut.log"; fail "cut link: rank 0's error does not name rank 1"; }
echo "cut link: mpirun exited $status after $took s, naming rank 1"

# a host name that does not resolve (the default agent, ssh)
started=$(now)
status=0
(GT_TEST_MPI_BOUND_S=60
  bounded mpirun -np 2 --host localhost,no-such-host.invalid "$GST_TRAIN" $line) \
  >"$work/unresolved.log" 2>&1 || status=$?
took=$(elapsed "$started" "$(now)")
[ "$status" -ne 0 ] && [ "$status" -ne 124 ] || {
  cat "$work/unresolved.log"; fail "an unresolvable host: mpirun exited $status"; }
grep -q "Could not resolve hostname no-such-host" "$work/unresolved.log" || {
  cat "$work/unresolved.log"; fail "an unresolvable host is not named"; }
echo "unresolvable host: mpirun exited $status after $took s, naming it"

echo "ok: one rank on each of two hosts over TCP trains bitwise as 2 ranks on one; a cut link ends the job naming the rank; an unresolvable host is named"
