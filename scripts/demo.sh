#!/bin/sh
# The demo: installs, builds, turns Debian's Fashion-MNIST into an ImageFolder
# of JPEGs, streams it through the decoder, then through the whole input
# stage with echo before augmentation, reporting images per second and echo's
# statistics. Training on top of it (cudatrainsink) arrives with a later
# issue; the demo then trains, on the GPU when one is usable.
set -eu
cd "$(dirname "$0")/.."

sh scripts/install-deps.sh
[ -d /usr/local/cuda/bin ] && PATH="/usr/local/cuda/bin:$PATH"

if [ ! -d build-release ]; then
  meson setup build-release --buildtype=release >/dev/null
fi
ninja -C build-release

data=${GST_TRAIN_DATA:-data/fashion-mnist}
build-release/pipelines/gst-train-dataset fashion-mnist --output "$data"

export GST_PLUGIN_PATH_1_0="$PWD/build-release/gst-plugins"
export GST_REGISTRY_1_0="$PWD/build-release/registry.bin"

if build-release/tests/cuda-device-probe; then
  echo "demo: a CUDA device is usable (training on it comes with cudatrainsink)"
else
  echo "demo: no usable GPU; the input stage runs on the CPU as it always does"
fi

echo "demo: decoding $data/train (60,000 JPEGs) on $(nproc) cores ..."
start=$(date +%s.%N)
gst-launch-1.0 -q datasetsrc location="$data/train" seed=1 \
    ! imagedec n-threads=0 ! fakesink
end=$(date +%s.%N)
/usr/bin/python3 -c "import sys; s = float(sys.argv[2]) - float(sys.argv[1]); \
print(f'demo: 60000 images in {s:.2f} s = {60000 / s:,.0f} images/s')" "$start" "$end"

echo "demo: the whole input stage with echo before augmentation (position B) ..."
start=$(date +%s.%N)
gst-launch-1.0 -m datasetsrc location="$data/train" seed=1 \
    ! imagedec ! queue max-size-buffers=8 \
    ! echo factor=2 shuffle-buffer-size=1024 seed=1 \
    ! augment width=32 height=32 seed=1 ! batcher batch-size=128 \
    ! fakesink >build-release/demo-echo.log 2>&1
end=$(date +%s.%N)
grep -o 'echo-stats, .*' build-release/demo-echo.log | sed 's/^/demo: /'
/usr/bin/python3 -c "import sys; s = float(sys.argv[2]) - float(sys.argv[1]); \
print(f'demo: 120000 augmented images (60000 fresh) in {s:.2f} s = {120000 / s:,.0f} images/s')" "$start" "$end"
