#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The plugins on a machine without the CUDA libraries: in a private mount
# namespace the CUDA toolkit folder is covered by an empty one (where there
# is one), then all six elements must register (from a fresh registry),
# and a training pipeline with device=auto must train on the CPU and say
# why: the library that is missing, or, in a build without the CUDA backend,
# that it was built without it. Also: the data plugin's ELF needs no cuDNN,
# cuBLAS or OpenBLAS, and the training plugin no cuDNN or cuBLAS (only the
# CUDA backend module does). Every build runs it, with the backend or not.
# Usage: no-cuda.sh DATASET-TOOL PLUGIN-DIR CUDA-ROOT HAVE-CUDA-BACKEND
set -eu
tool=$1
plugins=$2
cuda_root=$(readlink -m "$3")
have_backend=$4
. "$(dirname "$0")/fashion-mnist-slice.sh"

for lib in cudnn cublas openblas; do
  if readelf -d "$plugins/libgsttrain.so" | grep NEEDED | grep -q "lib$lib"; then
    fail "the data plugin libgsttrain.so needs lib$lib"
  fi
done
for lib in cudnn cublas cudart; do
  if readelf -d "$plugins/libgsttrainsink.so" | grep NEEDED | grep -q "lib$lib"; then
    fail "the training plugin libgsttrainsink.so needs lib$lib"
  fi
done

if [ "${GT_NO_CUDA_INSIDE:-}" != 1 ] && [ -d "$cuda_root" ]; then
  # Hiding the toolkit needs a mount namespace: root (CI runs as root) or
  # unprivileged user namespaces. Without one this test cannot do its job.
  empty=$(mktemp -d "${TMPDIR:-/tmp}/gst-train-empty-XXXXXX")
  trap 'rmdir "$empty"' EXIT
  GT_NO_CUDA_INSIDE=1 unshare --mount sh -c \
      'mount --bind "$1" "$2" && exec sh "$0" "$3" "$4" "$5" "$6"' \
      "$0" "$empty" "$cuda_root" "$tool" "$plugins" "$3" "$have_backend" \
    || fail "could not run the test in a mount namespace with $cuda_root hidden (exit $?)"
  exit 0
fi

# (no toolkit folder at all: nothing to hide)
[ ! -d "$cuda_root" ] || [ -z "$(ls -A "$cuda_root")" ] || fail "$cuda_root is still visible"
fashion_mnist_slice "$tool" no-cuda 64 8
# A registry of its own, scanned with CUDA hidden.
export GST_REGISTRY_1_0="$work/registry.bin"

for element in datasetsrc imagedec augment echo batcher cudatrainsink; do
  preloaded gst-inspect-1.0 "$element" >"$work/inspect.txt" 2>&1 || {
    cat "$work/inspect.txt"; fail "$element does not register without CUDA"; }
done


preloaded gst-launch-1.0 -e datasetsrc location="$work/fm/train" \
    ! imagedec ! augment width=16 height=16 ! batcher batch-size=8 \
    ! cudatrainsink device=auto model=resnet20 max-steps=3 num-threads=1 \
      checkpoint-location="$work/run.safetensors" >"$work/out.txt" 2>&1 || {
  cat "$work/out.txt"; fail "the CPU training pipeline failed without CUDA"; }
if [ "$have_backend" = true ]; then
  # the library that is missing, or, first, the driver (libcuda.so.1 is the
  # driver's, not the toolkit's: a machine without it never loads the rest)
  grep -q -e "Training on the CPU: .*CUDA.*lib[a-zA-Z]*\.so" \
      -e "Training on the CPU: no NVIDIA driver on this machine (libcuda\.so\.1" \
      "$work/out.txt" || {
    cat "$work/out.txt"; fail "no message naming the missing CUDA library"; }
else
  grep -q "Training on the CPU: gst-train was built without the CUDA backend" \
      "$work/out.txt" || {
    cat "$work/out.txt"; fail "no message saying the build has no CUDA backend"; }
fi
[ -s "$work/run.safetensors" ] || fail "no checkpoint written"
echo "ok: six elements registered, trained on the CPU, saying why:"
grep "Training on the CPU" "$work/out.txt"
