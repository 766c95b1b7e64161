#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# parity.sh: one parity check of a backend against PyTorch.
#   parity.sh [--cpu-kernels=K] [--cpu-isa=I] [--backend=cpu|cuda]
#             [--precision=fp32|bf16] PARITY_BINARY SCRATCH_DIR MODEL
#             CLASSES SIZE BATCH STEPS [ARGS]
# (the leading options go to the C side: parity.c picks the CPU backend's
# convolution path with --cpu-*, the backend and its precision with the
# others, which also go to PyTorch: --backend=cuda runs the reference on
# the GPU, --precision=bf16 under autocast; ARGS go to torch_reference.py)
# torch_reference.py writes the reference tensors, the C program compares
# and writes a checkpoint, and torchvision loads that checkpoint with
# strict=True and must give our eval logits. Where the backend cannot run
# (--backend=cuda without a GPU) it exits 77 before PyTorch starts.
#
# PYTHON: the command that runs PyTorch (default /usr/bin/python3), split
# into words, so that it may carry an environment: bench/gpu-check.sh
# passes "env -u LD_LIBRARY_PATH python3" for the GPU machine's own torch.
set -eu
c_options=
torch_options=
# check-checkpoint's bound on our eval logits against torchvision's fp32
# ones: fp32 agrees to ~1e-6; bf16 logits carry ~1e-2 of rounding, and
# the check is there for names and layout, whose faults are of order 1
rtol=1e-4
while :; do
  case $1 in
    --cpu-*=*) c_options="$c_options ${1%%=*} ${1#*=}"; shift ;;
    --backend=*)
      c_options="$c_options --backend ${1#*=}"
      torch_options="$torch_options --device ${1#*=}"
      shift ;;
    --precision=*)
      c_options="$c_options --precision ${1#*=}"
      torch_options="$torch_options --precision ${1#*=}"
      if [ "${1#*=}" = bf16 ]; then rtol=1e-1; fi
      shift ;;
    *) break ;;
  esac
done
parity=$1 scratch=$2 model=$3 classes=$4 size=$5 batch=$6 steps=$7
shift 7
here=$(dirname "$0")
python=${PYTHON:-/usr/bin/python3}
out="$scratch/$model-$size"

# shellcheck disable=SC2086 # the options split into words on purpose
"$parity" $c_options --can-run || exit $?
rm -rf "$out"
mkdir -p "$out"

# shellcheck disable=SC2086 # $python and the options split on purpose
$python "$here/torch_reference.py" reference --model "$model" \
  --classes "$classes" --size "$size" --batch "$batch" --steps "$steps" \
  --lr 0.1 --momentum 0.9 --weight-decay 1e-4 --label-smoothing 0.1 \
  --seed 1 --threads 2 --out "$out/reference.safetensors" $torch_options "$@"
# shellcheck disable=SC2086 # the options split into words on purpose
"$parity" $c_options "$out/reference.safetensors" "$out"
# Every case that trains writes a checkpoint for torchvision; only a
# forward-only case has none to check.
case " $* " in
  *" --forward-only "*) ;;
  *)
    if [ ! -s "$out/checkpoint.safetensors" ]; then
      echo "FAIL: $parity wrote no checkpoint ($out/checkpoint.safetensors)"
      exit 1
    fi
    # shellcheck disable=SC2086
    $python "$here/torch_reference.py" check-checkpoint --model "$model" \
      --classes "$classes" --checkpoint "$out/checkpoint.safetensors" \
      --expect "$out/expect.safetensors" --rtol "$rtol" ;;
esac
rm -rf "$out"
