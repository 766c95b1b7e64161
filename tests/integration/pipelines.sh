#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every launch-line file in pipelines/ runs to EOS with gst-train over a
# Fashion-MNIST slice made by the dataset tool (one epoch, CPU backend), and
# trains the number of steps its echo position implies; eval.pipeline then
# evaluates a checkpoint one of them wrote.
# Usage: pipelines.sh DATASET-TOOL GST-TRAIN PIPELINES-DIR
set -eu
tool=$1
app=$2
dir=$3
. "$(dirname "$0")/fashion-mnist-slice.sh"
fashion_mnist_slice "$tool" pipelines 600 10

# 600 images, batches of 128 with the remainder dropped:
#   no echo: 4 steps; factor 2 before the batcher: 1200 images, 9 steps;
#   factor 2 after it: 4 batches twice; adaptive with max-factor 4: every
#   fresh image goes out (at least 4 batches), each at most 4 times in all
#   (2400 images, at most 18 batches); how many repeats depends on timing.
# A pipeline file this table does not know fails: add its count here.
expect() {
  case $1 in
    no-echo) echo "4 4" ;;
    echo-a|echo-b|echo-c) echo "9 9" ;;
    echo-d) echo "8 8" ;;
    echo-adaptive) echo "4 18" ;;
    *) echo "unknown" ;;
  esac
}

# A summary field: "step": 4 -> 4
field() {
  sed -n "s/.*\"$2\": \([0-9.e+-]*\).*/\1/p" "$1" | head -1
}

failed=0
for file in $(ls "$dir"/*.pipeline | sort); do
  name=$(basename "$file" .pipeline)
  [ "$name" = eval ] && continue
  # The file's launch line, pointed at the test's data and folder, for one
  # epoch and no step limit.
  sed -e "s|location=data/fashion-mnist/|location=$work/fm/|" \
      -e "s|num-epochs=-1|num-epochs=1|" -e "s|max-steps=[0-9]*|max-steps=0|" \
      -e "s#location=runs/\([a-z-]*\)\.\(safetensors\|jsonl\)#location=$work/runs/\1.\2#g" \
      "$file" > "$work/$name.pipeline"
  if ! "$app" -q -f "$work/$name.pipeline" --summary "$work/$name.json" \
      >"$work/$name.log" 2>&1; then
    tail -20 "$work/$name.log"
    echo "FAIL: $name did not reach EOS"
    failed=1
    continue
  fi
  steps=$(field "$work/$name.json" step)
  images=$(field "$work/$name.json" images)
  set -- $(expect "$name")
  if [ "$1" = unknown ]; then
    echo "FAIL: pipelines/$name.pipeline has no expected step count in $0"
    failed=1
  elif [ -z "$steps" ] || [ "$steps" -lt "$1" ] || [ "$steps" -gt "$2" ]; then
    echo "FAIL: $name trained ${steps:-no} steps, expected $1..$2"
    failed=1
  elif [ "${images:-0}" -ne $((steps * 128)) ]; then
    # full batches only: every step trained on 128 images
    echo "FAIL: $name trained on ${images:-no} images in $steps steps of 128"
    failed=1
  elif [ ! -s "$work/runs/$name.safetensors" ] || [ ! -s "$work/runs/$name.jsonl" ]; then
    echo "FAIL: $name wrote no checkpoint or no metrics"
    failed=1
  else
    echo "ok: $name: $steps steps"
  fi
done

# What the files write goes under runs/ (ignored by git, made by the sink
# when missing), not into the repository's root.
if grep -hoE '(checkpoint|metrics)-location=[^ ]+' "$dir"/*.pipeline | grep -v '=runs/'; then
  echo "FAIL: the locations above write outside runs/"
  failed=1
fi

# eval.pipeline on the checkpoint of echo-adaptive: all 10 test images.
sed -e "s|location=data/fashion-mnist/|location=$work/fm/|" \
    -e "s|resume-from=runs/\([a-z-]*\.safetensors\)|resume-from=$work/runs/\1|" \
    "$dir/eval.pipeline" > "$work/eval.pipeline"
if ! "$app" -f "$work/eval.pipeline" --summary "$work/eval.json" \
    >"$work/eval.log" 2>&1; then
  tail -20 "$work/eval.log"
  echo "FAIL: eval did not reach EOS"
  failed=1
elif [ "$(field "$work/eval.json" images)" != 10 ] \
    || ! grep -q "^eval: 10 images" "$work/eval.log"; then
  cat "$work/eval.log" "$work/eval.json"
  echo "FAIL: eval did not report 10 images"
  failed=1
else
  echo "ok: eval: $(grep '^eval:' "$work/eval.log")"
fi
exit $failed
