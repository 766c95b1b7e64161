#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# No GstObject or GstMiniObject (caps, buffers, events, memories) outlives a
# pipeline through every element, by GStreamer's own leaks tracer, which
# sees what LeakSanitizer cannot (GLib's slices keep those allocations
# reachable). Held once a GstCaps per negotiation leaked in batcher.
# Usage: leaks.sh DATASET-TOOL
set -eu
tool=$1
. "$(dirname "$0")/fashion-mnist-slice.sh"
fashion_mnist_slice "$tool" leaks 48 8

# LeakSanitizer off for this one run: the leaks tracer object itself is
# never freed by gst-launch (no gst_deinit), which LSan reports once
# G_SLICE=always-malloc shows slice memory to it. The tracer is the leak
# check here; the other pipeline tests of the ASan suite keep LSan on.
ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
GST_TRACERS=leaks GST_DEBUG=GST_TRACER:7 GST_DEBUG_NO_COLOR=1 \
preloaded gst-launch-1.0 -e datasetsrc location="$work/fm/train" num-epochs=2 \
    ! imagedec ! echo factor=2 shuffle-buffer-size=4 ! augment width=16 height=16 \
    ! batcher batch-size=8 ! echo mode=adaptive ! queue \
    ! cudatrainsink model=resnet20 max-steps=3 num-threads=1 \
    >"$work/out.txt" 2>&1 || { cat "$work/out.txt"; fail "the pipeline failed"; }
grep -q "GST_TRACER.*leaks" "$work/out.txt" || fail "the leaks tracer did not run"
if grep "object-alive, " "$work/out.txt" | grep -v "format string"; then
  fail "objects alive after the pipeline was freed (above)"
fi
echo "ok: nothing alive after the pipeline"
