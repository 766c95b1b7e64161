#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The CUDA module without NCCL: it must not link libnccl (cuda-nccl.c opens
# it when a communicator is first made), must load where libnccl.so.2 is
# missing, and must say that NCCL is unavailable only when asked for it.
#  (a) the module's ELF has no NEEDED libnccl and no undefined nccl* symbol;
#  (b) with NCCL visible, cuda-nccl-probe reports a version >= the minimum
#      (cuda-nccl.h: 2.13), also from the file GT_NCCL_LIBRARY names;
#      stand-ins built here for a too old NCCL, one that lacks a function
#      and a library that is no NCCL are refused, each saying why;
#  (c) in a private mount namespace where the folder that holds libnccl is
#      covered by a tmpfs holding links to everything else, the module still
#      loads: cuda-device-probe's answer is about the GPU, never NCCL, and
#      cuda-nccl-probe says unavailable with the linker's message naming
#      libnccl.so.2; the mounts do not leak out of the namespace;
#  (d) GT_NCCL_LIBRARY naming a file that does not exist: unavailable,
#      naming that file.
# Usage: no-nccl.sh DEVICE-PROBE NCCL-PROBE CUDA-MODULE C-COMPILER
set -eu
device_probe=$1
nccl_probe=$2
module=$(readlink -f "$3")
cc=$4
# cuda-nccl.h's GT_NCCL_MIN_MAJOR and GT_NCCL_MIN_MINOR
min_major=2
min_minor=13

fail () {
  echo "FAIL: $*" >&2
  exit 1
}

# The probes open this module, the one readelf reads.
export GT_CUDA_MODULE="$module"
unset GT_NCCL_LIBRARY

# "nccl: unavailable: ..." from NCCL-PROBE run with GT_NCCL_LIBRARY=$1 (or
# without it, for ""), which must name every other argument.
expect_unavailable () {
  library=$1
  shift
  if [ -n "$library" ]; then
    out=$(GT_NCCL_LIBRARY="$library" "$nccl_probe") \
      || fail "cuda-nccl-probe failed (exit $?) with GT_NCCL_LIBRARY=$library"
  else
    out=$("$nccl_probe") || fail "cuda-nccl-probe failed (exit $?)"
  fi
  case "$out" in
    "nccl: unavailable: "*) ;;
    *) fail "expected NCCL to be unavailable${library:+ from $library}, got: $out" ;;
  esac
  for word in "$@"; do
    case "$out" in
      *"$word"*) ;;
      *) fail "the reason does not say \"$word\": $out" ;;
    esac
  done
  echo "ok: $out"
}

if [ "${GT_NO_NCCL_INSIDE:-}" = 1 ]; then
  # (c), inside the namespace: $5 is the folder to cover, $6 a mount point
  # for the folder itself, whose files the links lead to.
  nccl_dir=$5
  kept=$6
  mount --bind "$nccl_dir" "$kept"
  mount -t tmpfs gst-train-no-nccl "$nccl_dir"
  linked=0
  for file in "$kept"/* "$kept"/.[!.]*; do
    [ -e "$file" ] || [ -L "$file" ] || continue
    case "${file##*/}" in
      libnccl*) ;;
      *)
        ln -s "$file" "$nccl_dir/${file##*/}"
        linked=$((linked + 1))
        ;;
    esac
  done
  [ ! -e "$nccl_dir/libnccl.so.2" ] || fail "$nccl_dir/libnccl.so.2 is still visible"
  [ "$linked" -gt 0 ] || fail "nothing beside libnccl in $nccl_dir to keep"
  # shellcheck disable=SC2010 # CUDA's file names are plain
  [ "$(ls -A "$nccl_dir")" = "$(ls -A "$kept" | grep -v '^libnccl')" ] \
    || fail "$nccl_dir should show every file but libnccl*: $(ls -A "$nccl_dir")"

  status=0
  out=$("$device_probe" 2>&1) || status=$?
  case "$status" in
    0) echo "ok: the module loaded without NCCL and found a GPU: $out" ;;
    77)
      reason=${out#SKIP: }
      if echo "$reason" | grep -qi nccl; then
        fail "without libnccl the CUDA device probe speaks of NCCL: $reason"
      fi
      if echo "$reason" | grep -qi "the CUDA backend"; then
        fail "the CUDA module did not load without libnccl: $reason"
      fi
      echo "$reason" | grep -Eqi "driver|device|gpu" \
        || fail "the device probe's reason is not about the GPU: $reason"
      echo "ok: the module loaded without NCCL; no GPU: $reason"
      ;;
    *) fail "cuda-device-probe exited $status without NCCL: $out" ;;
  esac
  expect_unavailable "" "libnccl.so.2: cannot open shared object file" \
    GT_NCCL_LIBRARY
  exit 0
fi

# (a) the module's ELF
needed=$(readelf -d "$module" | grep NEEDED) \
  || fail "readelf found no NEEDED entry in $module: cannot judge it"
echo "$needed" | grep -q "libcudart" \
  || fail "readelf's NEEDED list of $module lacks even libcudart: $needed"
if echo "$needed" | grep -q libnccl; then
  fail "$module needs libnccl: $(echo "$needed" | grep libnccl)"
fi
undefined=$(nm -D --undefined-only "$module") \
  || fail "nm cannot read the dynamic symbols of $module"
if echo "$undefined" | grep -q " nccl"; then
  fail "$module calls NCCL by link: $(echo "$undefined" | grep " nccl" | tr -s ' \n' ' ')"
fi
echo "ok: $module needs no libnccl"

# (b) NCCL visible
out=$("$nccl_probe") || fail "cuda-nccl-probe failed (exit $?): $out"
case "$out" in
  "nccl: version "*" from /"*) ;;
  *) fail "NCCL is visible here, yet: $out" ;;
esac
version=${out#nccl: version }
version=${version%% from *}
path=${out#* from }
major=${version%%.*}
minor=${version#*.}
minor=${minor%%.*}
if [ "$major" -lt "$min_major" ] \
    || { [ "$major" -eq "$min_major" ] && [ "$minor" -lt "$min_minor" ]; }; then
  fail "NCCL $version is older than $min_major.$min_minor: $out"
fi
[ -f "$path" ] || fail "cuda-nccl-probe names $path, which is no file"
echo "ok: $out"
out=$(GT_NCCL_LIBRARY="$path" "$nccl_probe") || fail "cuda-nccl-probe failed (exit $?)"
[ "$out" = "nccl: version $version from $path" ] \
  || fail "GT_NCCL_LIBRARY=$path: expected version $version from it, got: $out"
echo "ok: GT_NCCL_LIBRARY: $out"

work=$(mktemp -d "${TMPDIR:-/tmp}/gst-train-no-nccl-XXXXXX")
mkdir "$work/kept" "$work/old" "$work/partial" "$work/other"
# never rm -r: were the bind mount of kept/ to leak, it would reach the
# CUDA libraries themselves
trap 'rm -f "$work"/old/libnccl.so.2 "$work"/partial/libnccl.so.2 \
  "$work"/other/libnccl.so.2; rmdir "$work"/kept "$work"/old "$work"/partial \
  "$work"/other "$work"' EXIT
# stand-ins: a 2.12.10, a 2.13.4 with ncclGetVersion alone, no NCCL at all
compile () {
  echo "$2" | $cc -shared -fPIC -x c -o "$1" - \
    || fail "cannot build a stand-in NCCL with $cc"
}
compile "$work/old/libnccl.so.2" \
  'int ncclGetVersion (int *v) { *v = 21210; return 0; }'
compile "$work/partial/libnccl.so.2" \
  'int ncclGetVersion (int *v) { *v = 21304; return 0; }'
compile "$work/other/libnccl.so.2" 'int gt_not_nccl (void) { return 0; }'
expect_unavailable "$work/old/libnccl.so.2" "NCCL 2.12.10" \
  "$work/old/libnccl.so.2" "needs NCCL $min_major.$min_minor or later"
expect_unavailable "$work/partial/libnccl.so.2" "$work/partial/libnccl.so.2" \
  "ncclGetErrorString"
expect_unavailable "$work/other/libnccl.so.2" "$work/other/libnccl.so.2" \
  "ncclGetVersion"

# (d) GT_NCCL_LIBRARY naming nothing
expect_unavailable "$work/nowhere/libnccl.so.2" "$work/nowhere/libnccl.so.2" \
  GT_NCCL_LIBRARY

# (c) libnccl hidden: the folder that really holds the library found above,
# which the module's RUNPATH (or the linker's cache) leads to
nccl_dir=$(dirname "$(readlink -f "$path")")
GT_NO_NCCL_INSIDE=1 unshare --mount --propagation private \
    sh "$0" "$device_probe" "$nccl_probe" "$module" "$cc" "$nccl_dir" "$work/kept" \
  || fail "the test without NCCL failed, or could not hide $nccl_dir in a mount namespace (exit $?)"
# nothing leaked: the namespace's mounts ended with it
[ -e "$nccl_dir/libnccl.so.2" ] || [ -e "$(readlink -f "$path")" ] \
  || fail "libnccl is gone from $nccl_dir outside the namespace"
if grep -q " $nccl_dir " /proc/self/mountinfo \
    || grep -q " $work/kept " /proc/self/mountinfo; then
  fail "a mount of the namespace leaked out: $(grep -e " $nccl_dir " -e " $work/kept " /proc/self/mountinfo)"
fi
out=$("$nccl_probe") || fail "cuda-nccl-probe failed (exit $?) after the namespace"
[ "$out" = "nccl: version $version from $path" ] \
  || fail "after the namespace, NCCL is not as before: $out"
echo "ok: no mount leaked; NCCL is back: $out"
