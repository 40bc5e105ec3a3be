#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# The simulator's checks for CI (seconds): seed 003's validation on two tables,
# node-aware runs on node shapes read by hwloc (synthetic), a dragonfly, both modes,
# and the rules file `sim rules` writes.
# Every simulated result is compared with the reference inside bench/sim.
# Last line: "N passed, M failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
sim="$here/sim"
. "$here/../contrib/tally.sh"

if [ ! -x "$sim" ]; then
    echo "FAIL: $sim not built"
    echo "0 passed, 1 failed"
    exit 1
fi

echo "-- seed 003, tables 1 and 5: fitted on 16 nodes, 32-256 predicted"
tally_part timeout 120 "$sim" validate --quick

# one NAME EXPECT ARGS...: a single run must succeed with every result right and
# print EXPECT (the node shape it was given).
one() {
    name=$1
    expect=$2
    shift 2
    line=$(timeout 120 "$sim" one "$@" 2>&1)
    rc=$?
    echo "$line"
    if [ "$rc" -eq 0 ] && echo "$line" | grep -q "$expect" \
        && echo "$line" | grep -q " 0 of [1-9][0-9]* results wrong"; then
        tally_add "1 passed, 0 failed"
    else
        echo "FAIL: $name"
        tally_add "0 passed, 1 failed"
    fi
}

echo "-- node shapes from hwloc, node-aware (socket, node, leaders)"
one "2 sockets x 64 cores, offload" "(128 per node, 64 per socket)" \
    --hwloc "package:2 core:64 pu:1" --ranks 2048 --bytes 64
one "2 sockets x 64 cores, software" "(128 per node, 64 per socket)" \
    --hwloc "package:2 core:64 pu:1" --ranks 2048 --bytes 64 --mode software
one "2 packages x 2 NUMA x 16 cores, 16 KiB" "(64 per node, 16 per socket)" \
    --hwloc "package:2 numa:2 core:16 pu:1" --ranks 512 --bytes 16384
echo "-- dragonfly, k-ary tree, 1 MiB (scaled), software"
one "dragonfly" "1048576 B, software" --dragonfly --ranks 256 --bytes 1048576 \
    --tree kary --radix 4 --mode software
echo "-- sim rules: the simulated tree advice as a rules file, up to 64 ranks"
# sim rules reads its text back with the component's parser and fails if it does not
# read as written; here: it ran, and the file has a format line and rules of both kinds.
rules=$(timeout 120 "$sim" rules --max-ranks 64 2>&1)
rc=$?
echo "$rules"
if [ "$rc" -eq 0 ] && echo "$rules" | grep -q "^format 1$" \
    && echo "$rules" | grep -q "^reduce [0-9+-]* .*origin=simulated$" \
    && echo "$rules" | grep -q "^bcast [0-9+-]* .*origin=simulated$"; then
    tally_add "1 passed, 0 failed"
else
    echo "FAIL: sim rules (exit $rc)"
    tally_add "0 passed, 1 failed"
fi
tally_end
