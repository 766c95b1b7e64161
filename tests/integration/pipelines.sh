#!/bin/sh
# Every launch-line file in pipelines/ runs to EOS with gst-launch-1.0 over a
# Fashion-MNIST slice made by the dataset tool, and pushes the number of
# batches its echo position implies.
# Usage: pipelines.sh DATASET-TOOL PIPELINES-DIR
set -eu
tool=$1
dir=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/gst-train-pipelines-XXXXXX")
trap 'rm -rf "$work"' EXIT

launch() {
  LD_PRELOAD="${GST_TRAIN_TEST_PRELOAD:-}" gst-launch-1.0 "$@"
}

if [ ! -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  echo "SKIP: Debian's dataset-fashion-mnist is not installed"
  exit 77
fi
"$tool" fashion-mnist --output "$work/fm" --limit-train 600 --limit-test 10 >/dev/null

# 600 images, batches of 128 with the remainder dropped:
#   no echo: 4 batches; factor 2 before the batcher: 1200 images, 9 batches;
#   factor 2 after it: 4 batches twice; adaptive: at least the 4 fresh ones.
expect() {
  case $1 in
    no-echo) echo "4 4" ;;
    echo-a|echo-b|echo-c) echo "9 9" ;;
    echo-d) echo "8 8" ;;
    echo-adaptive) echo "4 36" ;;
    *) echo "1 1000000" ;;
  esac
}

failed=0
for file in "$dir"/*.pipeline; do
  name=$(basename "$file" .pipeline)
  # The file's launch line, pointed at the test's dataset, with a sink that
  # reports every buffer.
  line=$(grep -v '^#' "$file" | tr '\n' ' ' \
    | sed "s|location=data/fashion-mnist/train|location=$work/fm/train|" \
    | sed 's|fakesink *$|fakesink silent=false|')
  # shellcheck disable=SC2086
  if ! launch -v $line >"$work/$name.log" 2>&1; then
    tail -20 "$work/$name.log"
    echo "FAIL: $name did not reach EOS"
    failed=1
    continue
  fi
  batches=$(grep -c 'fakesink0.*chain' "$work/$name.log" || true)
  set -- $(expect "$name")
  if [ "$batches" -lt "$1" ] || [ "$batches" -gt "$2" ]; then
    echo "FAIL: $name pushed $batches batches, expected $1..$2"
    failed=1
  else
    echo "ok: $name: $batches batches"
  fi
done
exit $failed
