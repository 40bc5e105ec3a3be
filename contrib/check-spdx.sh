#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
#
# Lists the tracked source, script and build files that lack a licence header
# (a line with SPDX-License-Identifier): C sources and headers, shell and Python
# scripts, Makefile.am, configure.ac, m4, suppression and help files, and every
# executable file. Not checked: docs (*.md), data (*.csv, *.png), the fuzz seed
# corpus (test/fuzz/corpus/), .gitignore and LICENSE itself.
# Prints "spdx: N files without a licence header" and their names; exits 1 if
# N > 0, else 0. Run from anywhere inside the repository.
set -eu
cd "$(dirname "$0")/.."
# Without git (or outside a clone) nothing could be listed: that is a failure, not 0.
if ! command -v git >/dev/null 2>&1 || ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "spdx: cannot list the tracked files (git missing or not a clone): not checked"
    exit 1
fi

files=$( {
    git ls-files -- '*.c' '*.h' '*.sh' '*.bash' '*.py' '*.pl' '*.am' '*.ac' \
        '*.m4' '*.mk' '*.supp' '*.txt' 'Makefile' 'CMakeLists.txt'
    git ls-files -s | awk '$1 == "100755" { print $4 }'
} | grep -v -e '^test/fuzz/corpus/' -e '\.md$' -e '\.csv$' -e '\.png$' \
        -e '^\.gitignore$' -e '^LICENSE$' | sort -u)

missing=""
n=0
for f in $files; do
    [ -f "$f" ] || continue      # tracked but deleted in the work tree
    if ! grep -q 'SPDX-License-Identifier' "$f"; then
        missing="$missing $f"
        n=$((n + 1))
    fi
done

echo "spdx: $n files without a licence header"
for f in $missing; do
    echo "  $f"
done
[ "$n" -eq 0 ]
