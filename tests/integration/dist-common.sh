# SPDX-License-Identifier: LGPL-2.1-or-later
# dist-common.sh: sourced by the data-parallel tests (dist-*.sh), which run
# real jobs with Open MPI's mpirun on the CPU backend.
#
# dist_setup NAME HAVE-MPI DATASET-TOOL TRAIN
#   exits 77 (skipped) where mpirun is missing or the build has no MPI
#   (HAVE-MPI is not "true": gt_dist_built() is 0), else makes $work (see
#   fashion-mnist-slice.sh) with TRAIN Fashion-MNIST images in $work/fm/train.
# mpi N ARGS...
#   mpirun with N ranks on this machine: oversubscribed (2 cores), unbound
#   (every rank runs one CPU thread), a copy mechanism that containers allow;
#   under a bound (bounded.sh): a job that hangs fails with a message that
#   says what still ran, and is killed, ranks and all. A test gives a job
#   another bound by setting GT_TEST_MPI_BOUND_S around it.
# ranks N 'COMMAND LINE'
#   mpi N with dist-rank.sh: each rank runs the command line in sh, with
#   $SRC, $DEC and $SINK set from RANKr_SRC, RANKr_DEC and RANKr_SINK
#   (properties for datasetsrc, imagedec and cudatrainsink on rank r
#   only), its pid in
#   $work/rank-r.pid and its output in $work/rank-r.log.
# ckpt ARGS...: dist_checkpoint.py (reads checkpoints, torch for "strict").
# $dist_rest: the tests' elements after imagedec (16x16 images, batches of
#   4, resnet20 for 10 classes on one CPU thread); cudatrainsink's
#   properties may follow it.
# $dist_line (set by dist_setup): the tests' job, $work's images in order
#   of seed 3 for ever (num-epochs=-1), decoded, then $dist_rest.
. "$(dirname "$0")/fashion-mnist-slice.sh"

dist_here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/../bounded.sh
. "$dist_here/../bounded.sh"
dist_rest='! augment width=16 height=16 ! batcher batch-size=4
  ! cudatrainsink device=cpu model=resnet20 num-classes=10 num-threads=1'

dist_setup() {
  if ! command -v mpirun >/dev/null 2>&1; then
    echo "SKIP: mpirun is not installed"
    exit 77
  fi
  if [ "$2" != true ]; then
    echo "SKIP: this build has no MPI (meson -Dmpi)"
    exit 77
  fi
  fashion_mnist_slice "$3" "$1" "$4" 8
  export DIST_WORK="$work"
  dist_line="datasetsrc location=$work/fm/train seed=3 num-epochs=-1
  ! imagedec $dist_rest"
  # Open MPI refuses root unless told twice
  if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
  # Under AddressSanitizer the ranks run without leak checks: Open MPI's
  # components are dlopen()ed and keep what MPI_Init allocates for the life
  # of the process; LeakSanitizer reports those blocks with frames in
  # "<unknown module>" (the plugins' code, which it cannot name), so no
  # suppression can name Open MPI precisely without hiding our own leaks as
  # well. Memory errors are still checked, and the single-process tests
  # check the same elements for leaks.
  if [ -n "${GST_TRAIN_TEST_PRELOAD:-}" ]; then
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  fi
}

mpi() {
  n=$1
  shift
  bounded mpirun -np "$n" --oversubscribe --bind-to none \
    --mca btl_vader_single_copy_mechanism none \
    ${GST_TRAIN_TEST_PRELOAD:+-x LD_PRELOAD="$GST_TRAIN_TEST_PRELOAD"} "$@"
}

ranks() {
  mpi "$1" sh "$dist_here/dist-rank.sh" "$2"
}

ckpt() {
  /usr/bin/python3 "$dist_here/dist_checkpoint.py" "$@"
}

# seconds since the epoch, with fractions (for the fault tests' timings)
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
