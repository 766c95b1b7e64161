#!/bin/sh
# parity.sh: one parity check of the CPU backend against PyTorch.
#   parity.sh [--cpu-kernels=K] [--cpu-isa=I] PARITY_BINARY SCRATCH_DIR MODEL
#             CLASSES SIZE BATCH STEPS [ARGS]
# (the leading options go to the C side: parity.c picks the CPU backend's
# convolution path with them; ARGS go to torch_reference.py)
# torch_reference.py writes the reference tensors, the C program compares
# and writes a checkpoint, and torchvision loads that checkpoint with
# strict=True and must give our eval logits.
set -eu
c_options=
while :; do
  case $1 in
    --cpu-*=*) c_options="$c_options ${1%%=*} ${1#*=}"; shift ;;
    *) break ;;
  esac
done
parity=$1 scratch=$2 model=$3 classes=$4 size=$5 batch=$6 steps=$7
shift 7
here=$(dirname "$0")
python=/usr/bin/python3
out="$scratch/$model-$size"
rm -rf "$out"
mkdir -p "$out"

"$python" "$here/torch_reference.py" reference --model "$model" \
  --classes "$classes" --size "$size" --batch "$batch" --steps "$steps" \
  --lr 0.1 --momentum 0.9 --weight-decay 1e-4 --label-smoothing 0.1 \
  --seed 1 --threads 2 --out "$out/reference.safetensors" "$@"
# shellcheck disable=SC2086 # the options split into words on purpose
"$parity" $c_options "$out/reference.safetensors" "$out"
if [ -f "$out/checkpoint.safetensors" ]; then
  "$python" "$here/torch_reference.py" check-checkpoint --model "$model" \
    --classes "$classes" --checkpoint "$out/checkpoint.safetensors" \
    --expect "$out/expect.safetensors" --rtol 1e-4
fi
rm -rf "$out"
