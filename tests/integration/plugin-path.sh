#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# gst-train finds its own plugins as a new shell would run it, with neither
# GST_PLUGIN_PATH nor GST_PLUGIN_PATH_1_0 set and a fresh registry: from the
# build tree (../gst-plugins beside it) and from an installation (`meson
# install` into a scratch DESTDIR: libdir/gstreamer-1.0 beside bindir). A
# plugin path the user set is kept (ours is appended). The registry it
# writes says which plugin files it loaded. The system plugin path stays the
# test's own (only the core elements), so that no scan of every system
# plugin slows the test down.
# Usage: plugin-path.sh BUILD-DIR DATASET-TOOL GST-TRAIN
set -eu
build=$1
tool=$2
app=$3
. "$(dirname "$0")/fashion-mnist-slice.sh"
fashion_mnist_slice "$tool" plugin-path 32 8
unset GST_PLUGIN_PATH GST_PLUGIN_PATH_1_0

line="datasetsrc location=$work/fm/train ! imagedec ! augment width=16 height=16
  ! batcher batch-size=8 ! cudatrainsink device=cpu model=resnet20 max-steps=1
  num-threads=1"

# The build tree.
GST_REGISTRY_1_0="$work/build.bin" "$app" -q $line \
    checkpoint-location="$work/build.safetensors" >"$work/out.txt" 2>&1 || {
  cat "$work/out.txt"; fail "gst-train did not find its plugins in the build tree"; }
grep -q "checkpoint written to $work/build.safetensors" "$work/out.txt" \
  || { cat "$work/out.txt"; fail "no closing line from the build tree"; }
grep -aq "$build/gst-plugins/libgsttrain.so" "$work/build.bin" \
  || fail "the registry does not list the build tree's plugin"
echo "ok: the build tree's gst-train finds its plugins"

# A user's plugin path is kept: fakesink only from there (GST_PLUGIN_PATH,
# then GST_PLUGIN_PATH_1_0), datasetsrc from ours.
core=$(pkg-config --variable=pluginsdir gstreamer-1.0)/libgstcoreelements.so
mkdir "$work/user-plugins" "$work/no-system-plugins"
ln -s "$core" "$work/user-plugins/"
for variable in GST_PLUGIN_PATH GST_PLUGIN_PATH_1_0; do
  env "$variable=$work/user-plugins" GST_REGISTRY_1_0="$work/user-$variable.bin" \
      GST_PLUGIN_SYSTEM_PATH_1_0="$work/no-system-plugins" "$app" -q \
      datasetsrc location="$work/fm/train" num-epochs=1 ! imagedec ! fakesink \
      >"$work/out.txt" 2>&1 || {
    cat "$work/out.txt"; fail "with $variable set: the user's or our plugins not found"; }
done
echo "ok: a plugin path the user set is kept"

# An installation.
meson install -C "$build" --destdir "$work/root" --no-rebuild --quiet \
  >"$work/install.txt" 2>&1 || { cat "$work/install.txt"; fail "meson install failed"; }
installed=$(find "$work/root" -name gst-train -type f | head -n 1)
libdir=$(find "$work/root" -name libgsttrain-trainer.so -printf '%h\n' | head -n 1)
[ -x "$installed" ] && [ -n "$libdir" ] || fail "no gst-train or library installed"
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  GST_REGISTRY_1_0="$work/installed.bin" "$installed" -q $line \
    checkpoint-location="$work/installed.safetensors" >"$work/out.txt" 2>&1 || {
  cat "$work/out.txt"; fail "the installed gst-train did not find its plugins"; }
[ -s "$work/installed.safetensors" ] || fail "no checkpoint from the installation"
grep -aq "$libdir/gstreamer-1.0/libgsttrain.so" "$work/installed.bin" \
  || fail "the registry does not list the installed plugin"
if grep -aq "$build/gst-plugins" "$work/installed.bin"; then
  fail "the installed gst-train loaded the build tree's plugins"
fi
echo "ok: the installed gst-train finds the installed plugins ($libdir/gstreamer-1.0)"
