#!/bin/sh
# Prepares the one GPU call (docs/gpu-runs.md): a release build with the CUDA
# backend for sm_90 in build-gpu/, the device kit in .device/ (Debian runtime
# packages the GPU machine lacks, and its wrapper), and the sizes that will
# travel (at most 64 MiB with the tree). Run here, from anywhere:
#   sh bench/gpu-prepare.sh
set -eu
cd "$(dirname "$0")/.."
[ -d /usr/local/cuda/bin ] && PATH="/usr/local/cuda/bin:$PATH"
if [ -d build-gpu ]; then
  meson setup --reconfigure build-gpu --buildtype=release -Dcuda=enabled >/dev/null
else
  meson setup build-gpu --buildtype=release -Dcuda=enabled >/dev/null
fi
ninja -C build-gpu
[ -e build-gpu/trainer/libgsttrain-cuda.so ] || {
  echo "gpu-prepare: build-gpu has no CUDA backend module" >&2; exit 1; }
bash ../shared/device/pack.sh build-gpu
tree=$(git ls-files -z | du -cm --files0-from=- | tail -n 1 | cut -f1)
echo "the tracked tree: about $tree MiB"
echo "device call: run with carry [\".device\", \"build-gpu\"], timeout_s 560:"
echo "  bash .device/run.sh bash bench/gpu-check.sh build-gpu"
