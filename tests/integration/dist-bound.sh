#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The bound on the tests' MPI launches (tests/bounded.sh, through
# dist-common.sh's mpi), over jobs whose ranks never end (a sleep of 1000 s
# under a name of this run, so that what is left of them can be found):
#   2 ranks, a bound of 3 s: mpi returns 124 after 3 s and before 3 s + the
#   grace (5 s) + 10 s for the reports, its stderr names the command, the
#   bound and the 2 ranks it had started, and no process of the job's
#   session, nor any of the ranks, is left;
#   2 ranks that ignore SIGTERM (mpirun kills them, or dies and leaves them
#   under PID 1, as the stuck jobs of issue 39 did): the same;
#   a launcher that ignores SIGTERM, as those stuck mpiruns: it and its
#   child killed (SIGKILL) after the grace;
#   the test's budget (GT_TEST_BUDGET_S) shortens a longer bound;
#   SIGTERM to the test's process group (meson's timeout) kills the job's
#   session at once;
#   a job that ends in time: its exit status, its stdin, no message.
# Usage: dist-bound.sh
set -eu
. "$(dirname "$0")/dist-common.sh"
if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: mpirun is not installed"
  exit 77
fi
# Open MPI refuses root unless told twice
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/gst-train-dist-bound-XXXXXX")
group=
# (the job of the signal case, should the test fail before it signals it)
trap '[ -z "$group" ] || kill -TERM "-$group" 2>/dev/null; rm -rf "$work"' EXIT
marker=gt-bound-$$
never="$work/sleep-$marker"
ln -s "$(command -v sleep)" "$never"
grace=$bounded_grace_s

# left: the live processes (zombies are dead) that run $never
left() {
  ps -eo pid=,stat=,args= | awk -v never="$never" '$2 !~ /^Z/ && $3 == never'
}

# bounded_job NAME BOUND EFFECTIVE [mpi ARGS...]: mpi under
# GT_TEST_MPI_BOUND_S=BOUND returns 124 within EFFECTIVE (the bound, or less
# where the budget cuts it) + grace + 10 s, not before EFFECTIVE, says so
# naming the command, and leaves nothing behind; $err: its stderr
bounded_job() {
  name=$1 asked=$2 bound=$3
  shift 3
  err="$work/$name.err"
  started=$(now)
  status=0
  (GT_TEST_MPI_BOUND_S=$asked; mpi "$@") >"$work/$name.out" 2>"$err" || status=$?
  took=$(elapsed "$started" "$(now)")
  [ "$status" -eq 124 ] || { cat "$err"; fail "$name: exit status $status, not 124"; }
  awk -v t="$took" -v lo="$bound" -v hi="$((bound + grace + 10))" \
    'BEGIN { exit !(t >= lo && t < hi) }' || {
    cat "$err"; fail "$name: ended after $took s, bound $bound s + grace $grace s"; }
  if ! grep -qF "bounded: 'mpirun -np 2 " "$err" || ! grep -qF "$marker" "$err"; then
    cat "$err"; fail "$name: the message does not name the command"
  fi
  session=$(sed -n 's/.* SIGTERM to its session \([0-9]*\),.*/\1/p' "$err")
  [ -n "$session" ] || { cat "$err"; fail "$name: the message names no session"; }
  [ -z "$(ps -s "$session" -o stat= | grep -v '^Z' || true)" ] || {
    ps -s "$session" -o pid,stat,args; fail "$name: processes of session $session are left"; }
  [ -z "$(left)" ] || { left; fail "$name: ranks are left"; }
  echo "$name: 124 after $took s (bound $bound s), nothing left"
}

# -- 2 ranks that never end
bounded_job never 3 3 2 "$never" 1000
grep -q "still ran after 3 s (GT_TEST_MPI_BOUND_S=3 s)" "$err" \
  || { cat "$err"; fail "never: the message does not give the bound"; }
grep -q "processes the launcher (pid $session) had started (ranks, daemons): 2;" "$err" \
  || { cat "$err"; fail "never: the message does not count the 2 ranks"; }
# ps's lines: PID PPID PGID STAT ELAPSED TIME COMMAND
[ "$(awk -v s="$session" -v r="$never" '$2 == s && $7 == r' "$err" | wc -l)" -eq 2 ] \
  || { cat "$err"; fail "never: the message does not list the 2 ranks"; }

# -- 2 ranks that ignore SIGTERM: mpirun, on SIGTERM, kills them itself or
# dies and leaves them under PID 1 (both happen); either way none is left
bounded_job deaf 3 3 2 sh -c 'trap "" TERM; exec "$0" 1000' "$never"

# -- a launcher that ignores SIGTERM, as the stuck mpiruns did: SIGKILL
# after the grace, for it and its child
started=$(now)
status=0
(GT_TEST_MPI_BOUND_S=3; bounded sh -c 'trap "" TERM; "$0" 1000 & wait' "$never") \
  2>"$work/stuck.err" || status=$?
took=$(elapsed "$started" "$(now)")
[ "$status" -eq 124 ] || { cat "$work/stuck.err"; fail "stuck: exit status $status, not 124"; }
awk -v t="$took" -v lo="$((3 + grace))" -v hi="$((3 + grace + 10))" \
  'BEGIN { exit !(t >= lo && t < hi) }' || {
  cat "$work/stuck.err"; fail "stuck: ended after $took s, bound 3 s + grace $grace s"; }
grep -q "still there after SIGTERM, killed (SIGKILL)" "$work/stuck.err" \
  || { cat "$work/stuck.err"; fail "stuck: no SIGKILL after the grace"; }
[ -z "$(left)" ] || { left; fail "stuck: its child is left"; }
echo "stuck: 124 after $took s (bound 3 s, SIGKILL after $grace s), nothing left"

# -- the test's budget, 3 s from now, shortens the bound of 100 s
# (2 or 3 s, as a second may turn between here and the launch)
GT_TEST_BUDGET_S=$(($(date +%s) - bounded_started + 3))
bounded_job budget 100 2 2 "$never" 1000
grep -qE "still ran after [23] s \(what was left of the test's budget of $GT_TEST_BUDGET_S s" \
  "$err" || { cat "$err"; fail "budget: the message does not name the budget"; }
unset GT_TEST_BUDGET_S

# -- SIGTERM to the test's process group, as meson's timeout sends it: the
# job's session goes at once
setsid sh -c '. "$0"; mpi 2 "$1" 1000' "$dist_here/dist-common.sh" "$never" \
  >"$work/signalled.out" 2>&1 &
group=$!
deadline=$(($(date +%s) + 60))
until [ "$(left | wc -l)" -eq 2 ]; do
  [ "$(date +%s)" -lt "$deadline" ] || { left; fail "signalled: the 2 ranks did not start"; }
  sleep 0.1
done
started=$(now)
kill -TERM "-$group"
status=0
wait "$group" || status=$?
group=
[ "$status" -ne 0 ] || fail "signalled: exited 0"
# the test's shell is gone; its bounded subshell ends the job in its trap
deadline=$(($(date +%s) + 5))
while [ -n "$(left)" ]; do
  [ "$(date +%s)" -lt "$deadline" ] || { left; fail "signalled: ranks are left 5 s after SIGTERM to the group"; }
  sleep 0.1
done
took=$(elapsed "$started" "$(now)")
echo "signalled: exit status $status, nothing left after $took s"

# -- a job that ends in time: its status, its stdin, nothing said
status=0
mpi 2 sh -c 'exit 3' 2>"$work/exit.err" || status=$?
[ "$status" -eq 3 ] || { cat "$work/exit.err"; fail "exit status 3 came back as $status"; }
grep "bounded:" "$work/exit.err" && fail "a job that ended in time: bounded spoke"
[ "$(echo through | mpi 1 cat)" = through ] || fail "stdin did not reach rank 0"

echo "ok: a job past its bound ends with 124 within bound + grace, named, its ranks killed, a launcher deaf to SIGTERM too; the budget shortens the bound; SIGTERM to the test kills the job; a job in time keeps its status and stdin"
