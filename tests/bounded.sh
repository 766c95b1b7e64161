# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=sh
# bounded.sh: a launch that hangs fails with a message instead of running
# into meson's timeout. Sourced by the tests that start jobs
# (tests/trainer/dist-lib.sh, tests/integration/dist-common.sh); run as a
# program (sh bounded.sh COMMAND...) by the C tests that launch mpirun.
#
# bounded COMMAND...
#   runs COMMAND in a session of its own (setsid) and returns its exit
#   status. When it still runs at its bound, it says so on stderr (the
#   command, the bound, and ps of every process left in its session: which
#   ranks had started), sends SIGTERM and SIGCONT to all of them, SIGKILL
#   after $bounded_grace_s seconds to any left (a stuck mpirun ignores
#   SIGTERM), and returns 124, as timeout(1) does. A session rather than a
#   process group: Open MPI's mpirun puts each rank it starts in a process
#   group of its own, and a rank whose mpirun died stays in the session,
#   under PID 1. Processes of the session still running after COMMAND
#   ended normally are killed too, with a note. A SIGTERM, SIGINT or SIGHUP
#   to the caller (meson's timeout) kills the session at once.
#   The bound: GT_TEST_MPI_BOUND_S seconds (default $bounded_default_s),
#   and never past the test's budget: GT_TEST_BUDGET_S seconds (default
#   $bounded_budget_s, or what bounded_budget set) from when this file was
#   sourced, so that the message comes before meson's timeout even when the
#   launches before this one took long. COMMAND must be a program (not a
#   shell function); the caller must not be a process group leader (a
#   script, not an interactive shell with job control), else setsid forks
#   and the session is not COMMAND's pid.
# bounded_budget SECONDS
#   the test's launches, all together, end within SECONDS of the start of
#   the test (unless GT_TEST_BUDGET_S says otherwise): a little less than
#   the timeout meson.build gives the test.

# A launch of the tests' jobs takes 1 to 3 s on a 2-core machine at rest
# (dist-launch's first: 0.8 s), several times that under AddressSanitizer
# and load: 120 s is far beyond any of them, and shorter than the 180 to
# 240 s meson gives the tests that launch (tests/meson.build). The budget
# leaves 20 s of a 240 s timeout for the kill's grace, the report and the
# test's last checks.
bounded_default_s=120
bounded_budget_s=220
bounded_grace_s=5
bounded_started=$(date +%s)

# Every launch of the tests runs without hwloc's GL component (issue 43):
# it probes X displays :0 to :9, on TCP ports 6000 to 6009 where no X
# socket exists, and waits for ever on anything that accepts there and
# never answers (TensorBoard on 6006): mpirun, Open MPI's daemons and
# srun --mpi=pmix's step daemon hang silently before any rank starts. Set
# here, when sourced, so that whatever the test starts inherits it, the
# test's slurmd included (the step daemon probes in slurmd's environment).
# A value the caller set stands (tests/integration/dist-port-6006.sh takes
# it away to show the hang).
if [ -z "${HWLOC_COMPONENTS+set}" ]; then
  HWLOC_COMPONENTS=-gl
  export HWLOC_COMPONENTS
fi

bounded_budget() {
  bounded_budget_s=$1
}

# bounded_pids SID: the processes of session SID, zombies left out
bounded_pids() {
  ps -s "$1" -o pid=,stat= 2>/dev/null | awk '$2 !~ /^Z/ { print $1 }'
}

# bounded_signal SID SIGNAL...: each SIGNAL to every process of SID, the
# session's leader first (which ps cannot list before setsid has run)
bounded_signal() {
  bounded_sid=$1
  shift
  bounded_live=$(bounded_pids "$bounded_sid")
  for bounded_sig in "$@"; do
    # shellcheck disable=SC2086 # one pid a word
    kill -s "$bounded_sig" "$bounded_sid" $bounded_live 2>/dev/null || true
  done
}

# bounded_gone SID SECONDS: whether SID's processes are all gone within
# SECONDS (to the second above; looked at every 0.2 s)
bounded_gone() {
  bounded_until=$(($(date +%s) + $2 + 1))
  while [ -n "$(bounded_pids "$1")" ]; do
    [ "$(date +%s)" -lt "$bounded_until" ] || return 1
    sleep 0.2
  done
}

# bounded_ps SID: what runs in SID, one line a process, with its age
bounded_ps() {
  ps -s "$1" -o pid,ppid,pgid,stat,etime,time,args 2>/dev/null \
    | sed 's/^/  /'
}

# bounded_watch SECONDS SID 'COMMAND' WHY: sleeps out the bound, then ends
# SID's processes (see bounded); exits 124 if it did, 0 if its sleep was cut
# short by a SIGTERM (COMMAND ended in time)
bounded_watch() {
  trap 'kill "$bounded_sleep" 2>/dev/null; exit 0' TERM
  # its output elsewhere: a sleep left behind must not hold meson's pipe
  sleep "$1" >/dev/null 2>&1 &
  bounded_sleep=$!
  wait "$bounded_sleep"
  trap '' TERM
  # it ended just now, and bounded reaped it: not a hang
  kill -0 "$2" 2>/dev/null || exit 0
  bounded_children=$(ps -s "$2" -o ppid= 2>/dev/null | grep -cx " *$2" || true)
  {
    echo "bounded: '$3' still ran after $1 s ($4):" \
      "SIGTERM to its session $2, SIGKILL after $bounded_grace_s s;" \
      "processes the launcher (pid $2) had started (ranks, daemons):" \
      "$bounded_children; what ran:"
    bounded_ps "$2"
  } >&2
  bounded_signal "$2" TERM CONT
  if bounded_gone "$2" "$bounded_grace_s"; then
    echo "bounded: session $2 ended with SIGTERM" >&2
  else
    echo "bounded: still there after SIGTERM, killed (SIGKILL):" >&2
    bounded_ps "$2" >&2
    bounded_signal "$2" KILL
    bounded_gone "$2" 2 || {
      echo "bounded: still there after SIGKILL:" >&2
      bounded_ps "$2" >&2
    }
  fi
  exit 124
}

bounded() (
  bounded_bound=${GT_TEST_MPI_BOUND_S:-$bounded_default_s}
  bounded_why="GT_TEST_MPI_BOUND_S=$bounded_bound s"
  [ -n "${GT_TEST_MPI_BOUND_S:-}" ] \
    || bounded_why="the bound of a launch, $bounded_bound s (GT_TEST_MPI_BOUND_S)"
  bounded_budget_s=${GT_TEST_BUDGET_S:-$bounded_budget_s}
  bounded_left=$((bounded_started + bounded_budget_s - $(date +%s)))
  if [ "$bounded_left" -lt "$bounded_bound" ]; then
    bounded_bound=$((bounded_left > 1 ? bounded_left : 1))
    bounded_why="what was left of the test's budget of $bounded_budget_s s (GT_TEST_BUDGET_S)"
  fi
  # an asynchronous command reads /dev/null: COMMAND keeps our stdin
  exec 3<&0
  setsid "$@" <&3 3<&- &
  bounded_job=$!
  exec 3<&-
  bounded_watch "$bounded_bound" "$bounded_job" "$*" "$bounded_why" &
  bounded_watcher=$!
  trap 'kill -KILL "$bounded_watcher" 2>/dev/null
    bounded_signal "$bounded_job" TERM CONT KILL; exit 143' INT TERM HUP
  bounded_status=0
  wait "$bounded_job" || bounded_status=$?
  kill -TERM "$bounded_watcher" 2>/dev/null
  bounded_watched=0
  wait "$bounded_watcher" || bounded_watched=$?
  [ "$bounded_watched" -ne 124 ] || exit 124
  if [ -n "$(bounded_pids "$bounded_job")" ]; then
    {
      echo "bounded: '$*' ended ($bounded_status) and left these running;" \
        "killed (SIGKILL):"
      bounded_ps "$bounded_job"
    } >&2
    bounded_signal "$bounded_job" KILL
  fi
  exit "$bounded_status"
)

# as a program: bounded.sh COMMAND...
case ${0##*/} in
  bounded.sh) bounded "$@" || exit $? ;;
esac
