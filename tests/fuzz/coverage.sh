#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Line and branch coverage of the code each fuzz target exercises, over the
# inputs in the given folders (a campaign's corpus, say), with clang's
# source-based coverage: the replay main() (replay.c) built with
# -fprofile-instr-generate, run on every input, then llvm-cov report.
#
#   tests/fuzz/coverage.sh TARGET CORPUS-FOLDER...
#   tests/fuzz/coverage.sh jpeg tests/fuzz/corpus/jpeg /tmp/my-campaign
#
# Needs clang, llvm-profdata and llvm-cov (Debian 12: clang-14, llvm-14).
set -eu
target=$1; shift
src=$(cd "$(dirname "$0")/../.." && pwd)
case $target in
  jpeg) sources="elements/data/jpeg-decode.c"; libs="glib-2.0 libturbojpeg" ;;
  dataset-list) sources="elements/data/dataset-index.c"; libs="glib-2.0" ;;
  safetensors) sources="trainer/safetensors.c"; libs="glib-2.0" ;;
  idx) sources="pipelines/dataset-tool/idx-reader.c"; libs="glib-2.0 zlib" ;;
  strings) sources="elements/data/dataset-index.c pipelines/dataset-tool/idx-reader.c"
    libs="glib-2.0 zlib" ;;
  shard) sources="elements/data/shard-reader.c elements/data/shard-pattern.c"
    libs="glib-2.0" ;;
  *) echo "unknown target $target" >&2; exit 2 ;;
esac
profdata=$(command -v llvm-profdata || command -v llvm-profdata-14)
cov=$(command -v llvm-cov || command -v llvm-cov-14)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# shellcheck disable=SC2046,SC2086
clang -O1 -g -fprofile-instr-generate -fcoverage-mapping \
  -I"$src/tests/fuzz" -I"$src/elements/data" -I"$src/trainer" \
  -I"$src/pipelines/dataset-tool" -I"$src/common" $(pkg-config --cflags $libs) \
  "$src/tests/fuzz/fuzz-$target.c" "$src/tests/fuzz/replay.c" \
  "$src/tests/fuzz/fuzz-scratch.c" $(for s in $sources; do echo "$src/$s"; done) \
  $(pkg-config --libs $libs) -o "$work/replay"
LLVM_PROFILE_FILE="$work/replay.profraw" "$work/replay" "$@" >/dev/null
"$profdata" merge -o "$work/replay.profdata" "$work/replay.profraw"
# shellcheck disable=SC2046
"$cov" report "$work/replay" -instr-profile="$work/replay.profdata" ${COVERAGE_ARGS:-} \
  $(for s in $sources; do echo "$src/$s"; done)
