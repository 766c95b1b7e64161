# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=sh
# dist-lib.sh: sourced by the data-parallel test wrappers (dist-parity.sh,
# dist-trainer.sh): how they skip and how they start a job.

# shellcheck source=SCRIPTDIR/../bounded.sh
. "$(dirname "$0")/../bounded.sh"

# Exits 77 (skipped) unless mpirun is installed and PROGRAM's build has MPI
# (PROGRAM --built exits 77 without it).
dist_skip_unless_ready() {
  if ! command -v mpirun >/dev/null 2>&1; then
    echo "mpirun not found (Open MPI: openmpi-bin): skipped"
    exit 77
  fi
  dist_built=0
  "$1" --built || dist_built=$?
  if [ "$dist_built" != 0 ]; then
    exit "$dist_built"
  fi
}

# dist_mpirun RANKS PROGRAM [ARGS]: one job of RANKS processes on this
# machine. --oversubscribe lets 3 or 4 ranks share 2 cores; --bind-to none
# leaves a rank's threads free to use any core. mpirun passes this
# environment (the sanitizers' options among it) to every rank. A job that
# outlives its bound fails with a message, killed (bounded.sh).
dist_mpirun() {
  dist_ranks=$1
  shift
  bounded mpirun --oversubscribe --bind-to none -np "$dist_ranks" "$@"
}
