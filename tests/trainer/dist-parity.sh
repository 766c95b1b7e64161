#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# dist-parity.sh: one data-parallel parity check of the CPU backend against
# PyTorch DDP.
#   dist-parity.sh [--max-score=S] DIST_PARITY SCRATCH_DIR RANKS MODEL
#                  CLASSES SIZE BATCH STEPS [ARGS]
# ddp_reference.py emulates RANKS ranks of BATCH samples each (ARGS go to
# it), then mpirun starts RANKS processes of dist-parity, which compare
# (--max-score goes to them: ours at most S times PyTorch's fp32 error).
# Skips (77) without mpirun or without MPI in the build.
set -eu
c_options=
case $1 in
  --max-score=*) c_options="--max-score ${1#*=}"; shift ;;
esac
program=$1 scratch=$2 ranks=$3 model=$4 classes=$5 size=$6 batch=$7 steps=$8
shift 8
here=$(dirname "$0")
# shellcheck source=SCRIPTDIR/dist-lib.sh
. "$here/dist-lib.sh"
dist_skip_unless_ready "$program"
out="$scratch/$model-$size-$ranks-$batch"
rm -rf "$out"
mkdir -p "$out"

/usr/bin/python3 "$here/ddp_reference.py" reference --ranks "$ranks" \
  --model "$model" --classes "$classes" --size "$size" --batch "$batch" \
  --steps "$steps" --momentum 0.9 --weight-decay 1e-4 \
  --label-smoothing 0.1 --seed 1 --threads 1 \
  --out "$out/reference.safetensors" "$@"
# shellcheck disable=SC2086 # the options split into words on purpose
dist_mpirun "$ranks" "$program" $c_options "$out/reference.safetensors" "$out"
rm -rf "$out"
