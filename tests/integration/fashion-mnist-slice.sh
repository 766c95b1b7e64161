# SPDX-License-Identifier: LGPL-2.1-or-later
# fashion-mnist-slice.sh: sourced by the integration scripts that run over a
# few Fashion-MNIST images made into an ImageFolder tree by the dataset tool.
#
# fashion_mnist_slice DATASET-TOOL NAME TRAIN TEST
#   sets $work to a new scratch folder (gst-train-NAME-*, removed at exit)
#   and writes the first TRAIN training and TEST test images to $work/fm;
#   exits 77 (skipped) where Debian's dataset-fashion-mnist is not
#   installed.
fashion_mnist_slice() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/gst-train-$2-XXXXXX")
  trap 'rm -rf "$work"' EXIT
  if [ ! -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    echo "SKIP: Debian's dataset-fashion-mnist is not installed"
    exit 77
  fi
  "$1" fashion-mnist --output "$work/fm" --limit-train "$3" --limit-test "$4" >/dev/null
}

# fail MESSAGE: says FAIL: MESSAGE and ends the test.
fail() { echo "FAIL: $*"; exit 1; }
# preloaded COMMAND...: runs an uninstrumented program (gst-launch-1.0,
# gst-inspect-1.0, python3) with the ASan runtime preloaded where the build
# is instrumented, so that our plugins load into it.
preloaded() { LD_PRELOAD="${GST_TRAIN_TEST_PRELOAD:-}" "$@"; }
