#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# `meson install` lays out a working installation: the two plugins in
# libdir/gstreamer-1.0, the training library in libdir, the CUDA backend
# module in libdir/gst-train (where the library looks for it, beside
# itself), the tools in bindir. From that tree alone (GST_PLUGIN_PATH at its
# plugin folder) every element registers and a pipeline trains on the CPU,
# the library having found and loaded the installed module (its answer is
# about the device, not about a missing module).
# Usage: install.sh BUILD-DIR DATASET-TOOL HAVE-CUDA-MODULE HAVE-MPI-MODULE
set -eu
build=$1
tool=$2
have_module=$3
. "$(dirname "$0")/fashion-mnist-slice.sh"
fashion_mnist_slice "$tool" install 32 8

meson install -C "$build" --destdir "$work/root" --no-rebuild --quiet \
  >"$work/install.txt" 2>&1 || { cat "$work/install.txt"; fail "meson install failed"; }
libdir=$(find "$work/root" -name libgsttrain-trainer.so -printf '%h\n' | head -n 1)
[ -n "$libdir" ] || fail "no libgsttrain-trainer.so installed"
for f in gstreamer-1.0/libgsttrain.so gstreamer-1.0/libgsttrainsink.so; do
  [ -e "$libdir/$f" ] || fail "no $libdir/$f"
done
if [ "$have_module" = true ]; then
  [ -e "$libdir/gst-train/libgsttrain-cuda.so" ] || fail "no CUDA module in $libdir/gst-train"
fi
if [ "${4:-false}" = true ]; then
  [ -e "$libdir/gst-train/libgsttrain-mpi.so" ] || fail "no MPI module in $libdir/gst-train"
fi
# what is installed is for users: no test hook (the MPI module's test
# build, GT_TEST_DIST_STOP) and no helper of the elements in the public
# metadata library's header
if find "$work/root" -name 'libgsttrain-mpi-test*' | grep .; then
  fail "the test build of the MPI module is installed (above)"
fi
if grep -rlaF GT_TEST_DIST_STOP "$work/root"; then
  fail "the installation holds the test hook GT_TEST_DIST_STOP (above)"
fi
header=$(find "$work/root" -name train-meta.h | head -n 1)
[ -n "$header" ] || fail "no train-meta.h installed"
if grep -n "gst_train_element_" "$header"; then
  fail "$header declares the elements' own helpers (above)"
fi
# neither CUDA nor MPI is needed to load the library
if readelf -d "$libdir/libgsttrain-trainer.so" | grep -E "NEEDED.*(libmpi|libcud|libopenblas)"; then
  fail "libgsttrain-trainer.so links MPI, CUDA or OpenBLAS (above): they are opened at run time"
fi
bindir=$(find "$work/root" -name gst-train -type f -printf '%h\n' | head -n 1)
[ -x "$bindir/gst-train-dataset" ] || fail "no gst-train-dataset installed"

export GST_PLUGIN_PATH_1_0="$libdir/gstreamer-1.0"
export GST_REGISTRY_1_0="$work/registry.bin"
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for element in datasetsrc imagedec augment echo batcher cudatrainsink; do
  preloaded gst-inspect-1.0 "$element" >"$work/inspect.txt" 2>&1 || {
    cat "$work/inspect.txt"; fail "$element does not register from the installation"; }
  grep -q "Filename.*$libdir/gstreamer-1.0" "$work/inspect.txt" \
    || { cat "$work/inspect.txt"; fail "$element is not the installed one"; }
done

preloaded gst-launch-1.0 -e datasetsrc location="$work/fm/train" ! imagedec \
    ! augment width=16 height=16 ! batcher batch-size=8 \
    ! cudatrainsink device=auto model=resnet20 max-steps=2 num-threads=1 \
      checkpoint-location="$work/run.safetensors" >"$work/out.txt" 2>&1 || {
  cat "$work/out.txt"; fail "training from the installation failed"; }
[ -s "$work/run.safetensors" ] || fail "no checkpoint written"
if [ "$have_module" = true ] && grep -q "CUDA backend module\|CUDA backend cannot be loaded" "$work/out.txt"; then
  cat "$work/out.txt"; fail "the installed library did not load the installed CUDA module"
fi
# The Python package, where Debian's python3 finds it under the prefix
# (not checked in a sanitizer build, whose extension needs the sanitizer's
# runtime preloaded into Python).
native=$(find "$work/root" -path '*/dist-packages/gst_train/_native*.so' | head -n 1)
if [ -n "$native" ] && ! ldd "$native" | grep -q libasan; then
  PYTHONPATH=$(dirname "$(dirname "$native")") /usr/bin/python3 - "$work/fm/train" \
      >"$work/python.txt" 2>&1 <<'PY' || { cat "$work/python.txt"; fail "the installed gst_train package does not load batches"; }
import sys
import gst_train
from gst_train.torch import Loader
assert gst_train.__file__.startswith(sys.path[0]), gst_train.__file__
with Loader(sys.argv[1], batch_size=8, width=16, height=16) as loader:
    images, labels = next(iter(loader))
assert tuple(images.shape) == (8, 3, 16, 16), images.shape
PY
fi
echo "ok: installed under $libdir; six elements register; trained from the installation"
grep "Training on" "$work/out.txt" || true
