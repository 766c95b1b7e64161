#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The demo: installs, builds, turns Debian's Fashion-MNIST into an ImageFolder
# of JPEGs, trains a ResNet on it for a few minutes through a GStreamer
# pipeline with adaptive echo before augmentation (gst-train), evaluates the
# result on the test split, and draws the loss curve and the pipeline.
#
#   scripts/demo.sh                 # about 4 minutes of training on 2 cores
#   DEMO_STEPS=200 scripts/demo.sh  # shorter
#
# On the GPU when one is usable (resnet50, 224x224, bf16), else on the CPU
# (resnet20, 32x32). Outputs in build-release/demo/: the checkpoint
# (resnet20.safetensors, or resnet50.safetensors on the GPU, with
# torchvision's names: the README shows how to load it into PyTorch),
# metrics.jsonl (with the evaluation's result), loss.png,
# tensorboard/ (tensorboard --logdir), pipeline.png, summary.json.
set -eu
cd "$(dirname "$0")/.."

# Quiet until the first line, which says where it trains and why: what is
# installed (nothing when all is there) and the build's output, which goes
# to a log that is shown when it fails.
sh scripts/install-deps.sh --quiet
[ -d /usr/local/cuda/bin ] && PATH="/usr/local/cuda/bin:$PATH"

log=$(mktemp)
if [ ! -d build-release ]; then
  meson setup build-release --buildtype=release >"$log" 2>&1 \
    || { cat "$log"; echo "demo: meson setup failed (above)"; exit 1; }
fi
ninja -C build-release >"$log" 2>&1 \
  || { cat "$log"; echo "demo: the build failed (above)"; exit 1; }
rm -f "$log"

# The first line: where it trains, and why. With a usable GPU: resnet50 at
# 224x224 in bf16 on the CUDA backend (the 28x28 images upscaled); without:
# resnet20 at 32x32 on the CPU backend.
if why=$(build-release/tests/cuda-device-probe 2>&1); then
  model=resnet50 size=224 device=cuda precision=bf16 batch=256
  echo "demo: training on the GPU: $(echo "$why" | head -n 1)"
else
  model=resnet20 size=32 device=cpu precision=fp32 batch=128
  echo "demo: training on the CPU ($(nproc) cores): $(echo "$why" | sed 's/^SKIP: //')"
fi

data=${GST_TRAIN_DATA:-data/fashion-mnist}
steps=${DEMO_STEPS:-800}
out=build-release/demo
build-release/pipelines/gst-train-dataset fashion-mnist --output "$data"
rm -rf "$out"
mkdir -p "$out"

export GST_PLUGIN_PATH_1_0="$PWD/build-release/gst-plugins"
export GST_REGISTRY_1_0="$PWD/build-release/registry.bin"

checkpoint="$out/$model.safetensors"

echo "demo: training $model for $steps steps of $batch images, adaptive echo before augmentation ..."
build-release/pipelines/gst-train --dot-dir "$out/dots" \
  --summary "$out/summary.json" \
  datasetsrc location="$data/train" num-epochs=-1 seed=1 \
  ! imagedec \
  ! echo mode=adaptive max-factor=4 shuffle-buffer-size=1024 seed=1 \
  ! augment width=$size height=$size scale-min=0.35 seed=1 \
  ! batcher batch-size=$batch \
  ! queue max-size-buffers=2 \
  ! cudatrainsink model=$model device=$device precision=$precision lr=0.1 \
      warmup-steps=50 total-steps="$steps" max-steps="$steps" stats-interval=25 \
      checkpoint-interval=200 checkpoint-location="$checkpoint" \
      metrics-location="$out/metrics.jsonl" tensorboard-logdir="$out/tensorboard"

echo "demo: evaluating on $data/test (10,000 images) ..."
build-release/pipelines/gst-train --summary "$out/eval.json" \
  datasetsrc location="$data/test" num-epochs=1 shuffle=false \
  ! imagedec \
  ! augment width=$size height=$size crop=resize \
  ! batcher batch-size=256 drop-remainder=false \
  ! cudatrainsink mode=eval model=$model device=$device precision=$precision \
      resume-from="$checkpoint" tensorboard-logdir="$out/tensorboard" \
      metrics-location="$out/metrics.jsonl"

/usr/bin/python3 pipelines/plot-metrics.py "$out/metrics.jsonl" "$out/loss.png" \
  "$model on Fashion-MNIST, adaptive echo before augmentation" | sed 's/^/demo: /'
# the dump at end of stream: the counters and echo factor as the run ended
# (the one at PAUSED_PLAYING shows them as the buffers were still filling)
dump=$(ls "$out"/dots/*-eos.dot 2>/dev/null | head -1)
[ -n "$dump" ] || dump=$(ls "$out"/dots/*PAUSED_PLAYING.dot | head -1)
dot -Tpng "$dump" -o "$out/pipeline.png"
echo "demo: the pipeline as it ran: $out/pipeline.png (from $dump)"
echo "demo: loss curve: $out/loss.png; checkpoint: $checkpoint"
echo "demo: in TensorBoard: tensorboard --logdir $out/tensorboard"
