# shellcheck shell=bash disable=SC2034
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench-lib.sh: what the benchmark scripts share (dist-cpu.sh,
# dist-hosts.sh, trainer-cpu.sh, input-stage.sh): their common options,
# where the report goes (and its notes kept), and the release build they
# measure. Sourced after
# `set -euo pipefail`, with the script's name and arguments:
#
#   . "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh" NAME "$@"
#
# It sets ROOT (the source tree), CMDLINE (the command as run, for the
# report), OUT (bench/out/), PY (Debian's python, where python3-torch and
# python3-pil live), and the defaults of the common options: RUNS=5,
# QUICK=0, OUTPUT empty.

BENCH_NAME=$1
shift
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CMDLINE="bench/$BENCH_NAME.sh${*:+ $*}"
OUT=$ROOT/bench/out
PY=/usr/bin/python3
RUNS=5
QUICK=0
OUTPUT=

log() { echo "$BENCH_NAME.sh: $*" >&2; }
die() { echo "$BENCH_NAME.sh: error: $*" >&2; exit 1; }

# bench_option ARG...: the options every benchmark takes, from the first
# ARG (and the next, its value): --runs N, --quick, --output FILE (also
# --runs=N, --output=FILE), -h/--help (prints the script's header comment
# and exits). Sets BENCH_SHIFT to the number of ARGs it took; an unknown
# option exits 2.
bench_option() {
  case $1 in
    --runs) RUNS=$2; BENCH_SHIFT=2 ;;
    --runs=*) RUNS=${1#*=}; BENCH_SHIFT=1 ;;
    --quick) QUICK=1; BENCH_SHIFT=1 ;;
    --output) OUTPUT=$2; BENCH_SHIFT=2 ;;
    --output=*) OUTPUT=${1#*=}; BENCH_SHIFT=1 ;;
    -h|--help)
      sed -n '/SPDX-License-Identifier/d; 2,/^[^#]/s/^# \{0,1\}//p' "$0"
      exit 0 ;;
    *) echo "$BENCH_NAME.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
}

# bench_default_output: where the report goes unless --output said:
# docs/benchmarks/NAME.md, or bench/out/NAME-quick.md for --quick.
bench_default_output() {
  if [ "$QUICK" = 1 ]; then
    : "${OUTPUT:=$OUT/$BENCH_NAME-quick.md}"
  fi
  : "${OUTPUT:=$ROOT/docs/benchmarks/$BENCH_NAME.md}"
}

# bench_report TABLES [quiet]: writes TABLES (the report, a blank line
# after it) to $OUTPUT, keeping the "## Notes" section written by hand
# below the tables of the report there, and to stdout unless quiet.
bench_report() {
  local notes=
  if [ -f "$OUTPUT" ]; then
    # the "." keeps the notes' last newlines from $(...)
    notes=$(sed -n '/^## Notes/,$p' "$OUTPUT"; echo .)
    notes=${notes%.}
  fi
  if [ "${2:-}" != quiet ]; then
    printf '%s\n\n' "$1"
  fi
  printf '%s\n\n%s' "$1" "$notes" >"$OUTPUT"
}

# bench_build TARGET...: builds TARGETs in $BENCH_BUILD (build-bench/ unless
# the environment names another folder of the tree), the release build,
# set up first when it is not there. meson's and ninja's output go to
# bench/out/logs/; the last 30 lines of a failure to stderr.
BENCH_BUILD=${BENCH_BUILD:-build-bench}
bench_build() {
  mkdir -p "$OUT/logs"
  if [ ! -f "$ROOT/$BENCH_BUILD/build.ninja" ]; then
    log "configuring $BENCH_BUILD (release)"
    (cd "$ROOT" && meson setup "$BENCH_BUILD" --buildtype=release) \
      >"$OUT/logs/meson-setup.txt" 2>&1 ||
      { tail -30 "$OUT/logs/meson-setup.txt" >&2; die "meson setup failed"; }
  fi
  ninja -C "$ROOT/$BENCH_BUILD" "$@" >"$OUT/logs/ninja.txt" 2>&1 ||
    { tail -30 "$OUT/logs/ninja.txt" >&2; die "build failed"; }
}
