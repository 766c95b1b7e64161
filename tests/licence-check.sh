#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The licence is stated everywhere it must be: LICENSE holds the LGPL 2.1,
# every tracked source file (C, CUDA, shell, Python, meson) carries the
# SPDX line LGPL-2.1-or-later, and both plugins register the licence
# "LGPL", which GStreamer checks against its list.
# Usage: licence-check.sh SOURCE-DIR
set -eu
cd "$1"
fail() { echo "FAIL: $*"; exit 1; }
if ! command -v git >/dev/null || ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "SKIP: needs a git checkout"
  exit 77
fi
grep -q "GNU LESSER GENERAL PUBLIC LICENSE" LICENSE &&
  grep -q "Version 2.1, February 1999" LICENSE || fail "LICENSE is not the LGPL 2.1"
missing=$(git ls-files '*.c' '*.h' '*.cu' '*.sh' '*.py' 'meson.build' '*/meson.build' \
  'meson_options.txt' .ci/run | while read -r f; do
    [ -f "$f" ] || continue
    grep -q "SPDX-License-Identifier: LGPL-2.1-or-later" "$f" || echo "$f"
  done)
[ -z "$missing" ] || fail "no SPDX line (LGPL-2.1-or-later) in: $(echo $missing)"
for plugin in gst-plugins/*.c; do
  grep -q '"LGPL"' "$plugin" || fail "$plugin does not register the licence \"LGPL\""
done
grep -q "license: 'LGPL-2.1-or-later'" meson.build || fail "meson.build's project licence"
echo "ok: LICENSE, $(git ls-files '*.c' '*.h' '*.cu' '*.sh' '*.py' | wc -l) sources with the SPDX line, both plugins LGPL"
