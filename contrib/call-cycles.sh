#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# Cross-file call cycles in src/ and in ompi/ + opal-glue/: file A calls a function
# defined in file B, which (directly or through other files) calls back into A. Each
# file is compiled once more with GCC's -fcallgraph-info (direct calls; calls through
# function pointers are the backends' and the engine's interfaces and are not edges),
# a file graph is made of the calls whose callee the project defines, and its strongly
# connected components of more than one file are printed.
# Run from a configured tree (for Open MPI's include flags). Last line:
# "1 passed, 0 failed" when there is no cycle, "0 passed, 1 failed" otherwise.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
ompi_flags=$(sed -n 's/^OMPI_CPPFLAGS = //p' ompi/Makefile 2>/dev/null | head -1)
[ -n "$ompi_flags" ] || ompi_flags=$(mpicc --showme:compile 2>/dev/null)
fail=0
n=0
for f in src/*/*.c ompi/*.c opal-glue/*.c; do
    case "$f" in
        src/*) flags="-D_GNU_SOURCE" ;;
        *) flags="-D_GNU_SOURCE $ompi_flags -idirafter $top/opal-glue/compat" ;;
    esac
    n=$((n + 1))
    # shellcheck disable=SC2086
    if ! (cd "$tmp" && gcc -std=gnu11 -O0 -w -fcallgraph-info $flags -I"$top/src" \
            -I"$top/ompi" -I"$top/opal-glue" -c "$top/$f" -o "$n.o") 2>"$tmp/err"; then
        echo "call-cycles: cannot compile $f:"
        head -5 "$tmp/err"
        fail=1
    fi
done
if [ "$fail" = 1 ]; then
    echo "0 passed, 1 failed"
    exit 1
fi
/usr/bin/python3 - "$top" "$tmp"/*.ci <<'PY'
import os
import re
import sys

top = sys.argv[1]
node_re = re.compile(r'node: \{ title: "([^"]*)" label: "([^"\\]*)\\n([^:"]*):\d+:\d+"( shape)?')
edge_re = re.compile(r'edge: \{ sourcename: "([^"]*)" targetname: "([^"]*)"')
defined = {}        # node title -> the project file that defines it
edges = []
for path in sys.argv[2:]:
    for line in open(path):
        m = node_re.match(line)
        if m and not m.group(4):
            where = os.path.relpath(m.group(3), top)
            if not where.startswith(".."):
                defined[m.group(1)] = where
            continue
        m = edge_re.match(line)
        if m:
            edges.append((m.group(1), m.group(2)))


def part(f):
    return "src" if f.startswith("src/") else "ompi"


def unit(f):
    """A header's inline functions belong to the file of the same name."""
    base, ext = os.path.splitext(f)
    return base + ".c" if ext == ".h" and os.path.exists(os.path.join(top, base + ".c")) else f


graph = {}
for a, b in edges:
    fa, fb = unit(defined.get(a, "")), unit(defined.get(b, ""))
    if fa and fb and fa != fb and part(fa) == part(fb):
        graph.setdefault(fa, {}).setdefault(fb, set()).add((a.split(":")[-1], b.split(":")[-1]))
# Tarjan's strongly connected components over the files
index, low, stack, on, comps = {}, {}, [], set(), []
counter = [0]


def visit(v):
    index[v] = low[v] = counter[0]
    counter[0] += 1
    stack.append(v)
    on.add(v)
    for w in graph.get(v, {}):
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop()
            on.discard(w)
            comp.append(w)
            if w == v:
                break
        comps.append(comp)


sys.setrecursionlimit(10000)
for v in sorted(set(graph) | {w for d in graph.values() for w in d}):
    if v not in index:
        visit(v)
cycles = [sorted(c) for c in comps if len(c) > 1]
files = len(set(defined.values()))
for c in cycles:
    print("cycle among %d files: %s" % (len(c), ", ".join(c)))
    for a in c:
        for b in sorted(graph.get(a, {})):
            if b in c:
                calls = sorted(graph[a][b])
                print("  %s -> %s: %s" % (a, b, ", ".join("%s calls %s" % x for x in calls[:3])
                                          + (" ..." if len(calls) > 3 else "")))
print("call-cycles: %d files, %d cross-file calls, %d cycles"
      % (files, sum(len(d) for d in graph.values()), len(cycles)))
print("%d passed, %d failed" % (0 if cycles else 1, 1 if cycles else 0))
sys.exit(1 if cycles else 0)
PY
