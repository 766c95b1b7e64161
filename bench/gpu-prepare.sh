#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Prepares the GPU calls (docs/gpu-runs.md), here, from anywhere:
#   sh bench/gpu-prepare.sh
# 1. a release build with the CUDA backend for sm_90 in build-gpu-full/;
# 2. build-gpu/, the folder that travels: only what bench/gpu-check.sh
#    runs (trainer-bench, the probes, cuda-parity, parity, cuda-dist, the
#    plugins and the libraries they load), stripped, in the build's own
#    layout (the programs find their libraries relative to themselves), no
#    object folders, no other programs;
# 3. the device kit in .device/ (../shared/device/pack.sh: the Debian
#    runtime the GPU machine lacks, its wrapper), which fails above 60 MiB;
# 4. the rehearsal of both calls on build-gpu/ (bench/gpu-check.sh
#    --rehearse, on the CPU): a program missing from build-gpu/ shows here,
#    not on the GPU.
# It prints what travels and the two calls to make.
set -eu
cd "$(dirname "$0")/.."
[ -d /usr/local/cuda/bin ] && PATH="/usr/local/cuda/bin:$PATH"
full=build-gpu-full
carried=build-gpu
if [ -d "$full" ]; then
  meson setup --reconfigure "$full" --buildtype=release -Dcuda=enabled >/dev/null
else
  meson setup "$full" --buildtype=release -Dcuda=enabled >/dev/null
fi
ninja -C "$full"
[ -e "$full/trainer/libgsttrain-cuda.so" ] || {
  echo "gpu-prepare: $full has no CUDA backend module" >&2; exit 1; }

rm -rf "$carried"
for file in bench/trainer-bench tests/cuda-device-probe tests/cuda-nccl-probe \
    tests/cuda-parity tests/parity tests/cuda-dist \
    trainer/libgsttrain-trainer.so trainer/libgsttrain-cuda.so \
    trainer/libgsttrain-mpi.so gst-plugins/libgsttrain.so \
    gst-plugins/libgsttrainsink.so elements/meta/libgsttrainmeta-1.0.so.0; do
  if [ ! -e "$full/$file" ]; then
    case $file in
      trainer/libgsttrain-mpi.so | tests/cuda-nccl-probe) continue ;; # optional
      *) echo "gpu-prepare: $full/$file is missing" >&2; exit 1 ;;
    esac
  fi
  mkdir -p "$carried/$(dirname "$file")"
  # the file itself, not a link: a link travels as a link
  cp -L "$full/$file" "$carried/$file"
  strip --strip-unneeded "$carried/$file"
done
# Every library a carried program takes from the build must come from the
# carried folder.
for program in "$carried"/bench/* "$carried"/tests/* "$carried"/gst-plugins/*; do
  if ldd "$program" | grep -q "$full/"; then
    echo "gpu-prepare: $program still loads from $full:" >&2
    ldd "$program" | grep "$full/" >&2
    exit 1
  fi
done
echo "build-gpu (carried): $(du -sm "$carried" | cut -f1) MiB, $(find "$carried" -type f | wc -l) files"

bash ../shared/device/pack.sh "$carried"

out=$(mktemp -d "${TMPDIR:-/tmp}/gpu-prepare-XXXXXX")
if OUT="$out" bash bench/gpu-check.sh --rehearse "$carried" >"$out.txt" 2>&1; then
  grep '^| ' "$out/gpu-check.md"
  echo "gpu-prepare: the rehearsal on $carried ran every stage (table above)"
else
  cat "$out.txt"
  echo "gpu-prepare: the rehearsal on $carried failed" >&2
  rm -rf "$out" "$out.txt"
  exit 1
fi
rm -rf "$out" "$out.txt"
echo
echo "call 1: device run, carry [\".device\", \"$carried\"], timeout_s 420:"
echo "  bash .device/run.sh bash bench/gpu-check.sh --call 1 $carried"
echo "call 2: copy call 1's gpu-check.md to .device/call1.md here, then timeout_s 330:"
echo "  bash .device/run.sh bash bench/gpu-check.sh --call 2 --after .device/call1.md $carried"
bash bench/gpu-check.sh --plan --call 1 | sed 's/^/  call 1: /'
