#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# dist-trainer.sh: the data-parallel trainer's scenarios (dist-trainer.c
# describes them), each job under mpirun.
#   dist-trainer.sh DIST_TRAINER SCRATCH_DIR nonfinite|uneven RANKS
#   dist-trainer.sh DIST_TRAINER SCRATCH_DIR resume
# resume: a 2-rank job checkpoints, a second 2-rank job resumes it (2 -> 2),
# one process resumes the same checkpoint (2 -> 1) and a 2-rank job resumes
# that process's checkpoint (1 -> 2).
# Skips (77) without mpirun or without MPI in the build.
set -eu
program=$1 scratch=$2 scenario=$3
here=$(dirname "$0")
# shellcheck source=SCRIPTDIR/dist-lib.sh
. "$here/dist-lib.sh"
dist_skip_unless_ready "$program"
# tests/meson.build gives these 180 s
bounded_budget 160

case $scenario in
  nonfinite|uneven)
    dist_mpirun "$4" "$program" "$scenario"
    ;;
  resume)
    out="$scratch/resume"
    rm -rf "$out"
    mkdir -p "$out"
    dist_mpirun 2 "$program" resume-first "$out"
    dist_mpirun 2 "$program" resume-second "$out"
    "$program" to-one "$out"
    dist_mpirun 2 "$program" from-one "$out"
    rm -rf "$out"
    ;;
  *)
    echo "dist-trainer.sh: unknown scenario $scenario" >&2
    exit 2
    ;;
esac
