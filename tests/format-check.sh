#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every C file of the tree is formatted with the root .clang-format.
# Usage: format-check.sh SOURCE-DIR
set -eu
cd "$1"
if ! command -v clang-format >/dev/null || ! command -v git >/dev/null \
    || ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "SKIP: needs clang-format and a git checkout"
  exit 77
fi
files=$(git ls-files '*.c' '*.h' '*.cu')
# shellcheck disable=SC2086
if ! clang-format --dry-run --Werror $files; then
  echo "FAIL: run: clang-format -i \$(git ls-files '*.c' '*.h' '*.cu')"
  exit 1
fi
echo "ok: $(echo "$files" | wc -l) files formatted"
