#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Runs a command with its reads from a block device throttled, as if the
# files lay on a slower disk: a cold page cache on this machine's own disk
# is read at the speed of the host's memory (a virtual machine's disk is a
# file the host caches), so the cost of many small random reads, which
# shards avoid, never shows. The throttle is the kernel's block-layer
# limit on read operations per second and read bytes per second (cgroup
# v1 blkio.throttle.*, or cgroup v2 io.max), for the command and every
# process it starts. What it counts is requests that reach the device:
# the page cache still serves what it holds, so drop it before a cold run.
#
#   bench/slow-disk.sh --read-iops N [--read-bps BYTES] [--path DIR] -- CMD...
#
# --read-iops   read requests a second the device is allowed (required)
# --read-bps    read bytes a second (default: no limit); K, M, G suffixes
#               (powers of 1024)
# --path        a path on the filesystem whose device is throttled
#               (default: the current directory)
# The command sees BENCH_DISK, a one-line description of the limit, which
# bench/shards.sh writes into its report. Needs root. Exits with the
# command's status; the cgroup is removed after it.
set -eu

die() {
  echo "slow-disk.sh: $*" >&2
  exit 2
}

iops="" bps=0 path=.
while [ $# -gt 0 ]; do
  case $1 in
    --read-iops) [ $# -ge 2 ] || die "--read-iops needs a value"; iops=$2; shift 2 ;;
    --read-bps) [ $# -ge 2 ] || die "--read-bps needs a value"; bps=$2; shift 2 ;;
    --path) [ $# -ge 2 ] || die "--path needs a value"; path=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '3,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[ $# -gt 0 ] || die "no command after --"
case $iops in ''|*[!0-9]*|0) die "--read-iops must be a positive integer, not '$iops'" ;; esac
case $bps in
  *[0-9]K) bps=$(( ${bps%K} * 1024 )) ;;
  *[0-9]M) bps=$(( ${bps%M} * 1024 * 1024 )) ;;
  *[0-9]G) bps=$(( ${bps%G} * 1024 * 1024 * 1024 )) ;;
esac
case $bps in ''|*[!0-9]*) die "--read-bps must be bytes a second (K, M, G allowed)" ;; esac
[ "$(id -u)" -eq 0 ] || die "throttling a device needs root"

# The whole disk under the filesystem: a partition's parent, as the
# throttle applies to whole devices.
source=$(findmnt -no SOURCE -T "$path") || die "no filesystem found for '$path'"
disk=$(lsblk -no PKNAME "$source" 2>/dev/null | head -n 1)
[ -n "$disk" ] || disk=${source#/dev/}
majmin=$(lsblk -dno MAJ:MIN "/dev/$disk" 2>/dev/null | tr -d ' ')
[ -n "$majmin" ] || die "'$path' is not on a block device ($source)"

name=gst-train-slow-disk-$$
if [ -w /sys/fs/cgroup/blkio ]; then
  cg=/sys/fs/cgroup/blkio/$name
  mkdir "$cg"
  echo "$majmin $iops" >"$cg/blkio.throttle.read_iops_device"
  [ "$bps" -eq 0 ] || echo "$majmin $bps" >"$cg/blkio.throttle.read_bps_device"
else
  base=/sys/fs/cgroup
  [ -f "$base/cgroup.controllers" ] || base=/sys/fs/cgroup/unified
  grep -qw io "$base/cgroup.controllers" 2>/dev/null \
    || die "no blkio (cgroup v1) or io (cgroup v2) controller to throttle with"
  echo +io >"$base/cgroup.subtree_control" 2>/dev/null || true
  cg=$base/$name
  mkdir "$cg"
  limit="riops=$iops"
  [ "$bps" -eq 0 ] || limit="$limit rbps=$bps"
  echo "$majmin $limit" >"$cg/io.max" || { rmdir "$cg"; die "io.max refused '$limit'"; }
fi

BENCH_DISK="reads from /dev/$disk ($majmin) throttled to $iops requests/s"
[ "$bps" -eq 0 ] || BENCH_DISK="$BENCH_DISK and $(( bps / 1048576 )) MiB/s"
BENCH_DISK="$BENCH_DISK (bench/slow-disk.sh, the kernel's block-layer throttle)"
export BENCH_DISK
echo "slow-disk.sh: $BENCH_DISK" >&2

# Processes the command left behind would keep the cgroup busy: move them
# out (to the root) before removing it.
cleanup() {
  for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do
    echo "$p" >"${cg%/*}/cgroup.procs" 2>/dev/null || true
  done
  rmdir "$cg" 2>/dev/null || echo "slow-disk.sh: could not remove $cg" >&2
}
# A signal to this script goes on to the command, and the cgroup is removed
# after it ends.
child=""
on_signal() {
  [ -z "$child" ] || kill "-$1" "$child" 2>/dev/null || true
  [ -z "$child" ] || wait "$child" 2>/dev/null || true
  cleanup
  exit "$2"
}
trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM

status=0
# (an asynchronous command's stdin would be /dev/null: keep ours)
exec 3<&0
sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' slow-disk "$cg" "$@" <&3 3<&- &
child=$!
exec 3<&-
wait "$child" || status=$?
cleanup
exit "$status"
