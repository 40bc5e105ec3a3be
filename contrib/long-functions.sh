#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# Lists the functions of the component's C sources longer than LIMIT lines (default 80),
# counted from the line naming the function to its closing brace, longest first.
#
# Usage: contrib/long-functions.sh [LIMIT] [FILE...]
#   FILE  default: ompi/*.c opal-glue/*.c src/*/*.c (run from the top directory)
# A definition is a line at column 0 that names a function (not ending in ';'),
# followed by '{' at column 0, as the project's style writes them.
limit=${1:-80}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- ompi/*.c opal-glue/*.c src/*/*.c
awk -v LIMIT="$limit" '
FNR == 1 { start = 0; cand = "" }
/^[A-Za-z_].*\(/ && !/;[ \t]*$/ && start == 0 { cand = $0; cand_line = FNR }
/^\{/ && start == 0 && cand != "" { start = cand_line; name = cand; next }
/^\}/ && start != 0 {
    n = FNR - start + 1
    if (n > LIMIT) {
        sub(/\(.*/, "", name)
        k = split(name, w, /[ *]+/)
        printf "%5d  %s:%d  %s\n", n, FILENAME, start, w[k]
    }
    start = 0
    cand = ""
}' "$@" | sort -rn
