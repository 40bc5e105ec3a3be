#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# Set up (contrib/setup.sh), then run the side-by-side latency benchmark on page-aligned
# buffers: offload vs tuned vs sm, np 2 and 4 (np 4 oversubscribed on a 2-core machine,
# and marked so), all four collectives, 4 B .. 1 MiB, calls timed back to back
# (results/latency.md); then their nonblocking and persistent forms against libnbc
# (results/forms/); then the four collectives again with each call timed alone, an
# untimed barrier after it, as the OSU micro-benchmarks time them (results/percall/);
# then the nonblocking overlap benchmark (offload vs libnbc; results/overlap.md); then
# the tuner's rules for this node and the sweep with and without them (results/tune/).
# Ends with one line: the worst offload/best-stock ratio over the sweeps of both timing
# modes, where it is and which mode it came from.
# Extra arguments go to bench/compare.py (e.g. --np 2,4 --repeat 5); each sweep's
# --mode comes after them, so that a table says the timing it is filed under.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh contrib/setup.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
/usr/bin/python3 bench/compare.py --bin bench/coll_lat --out results --np 2,4 \
    --placement 0 "$@" --mode b2b
/usr/bin/python3 bench/compare.py --bin bench/coll_lat --out results/forms --np 2,4 \
    --colls iallreduce,ireduce,ibcast,ibarrier,pallreduce,preduce,pbcast,pbarrier \
    --select offload,libnbc --placement 0 "$@" --mode b2b
# Per call: the blocking collectives only, at np 2 and 4, with the default iterations.
# The barrier after every call makes a run 1.2x (np 2) to 4x (np 4 on 2 cores, small
# messages) as long as back to back: this sweep takes about twice the back-to-back one,
# roughly a fifth of the whole job. The forms are not repeated per call (as much again).
/usr/bin/python3 bench/compare.py --bin bench/coll_lat --out results/percall --np 2,4 \
    --placement 0 "$@" --mode percall
/usr/bin/python3 bench/compare.py --overlap --bin bench/coll_lat --out results "$@"
# This node's own rules (coll-offload-tune, 180 s at most), then the sweep again with
# and without them, interleaved (results/tune/: rules.conf, compare.md).
sh bench/tune-bench.sh
# The worst cell of the sweeps, either mode (each latency.md names its own).
/usr/bin/python3 - "back to back=results/latency.md" "back to back=results/forms/latency.md" \
    "per call=results/percall/latency.md" <<'PY'
import re, sys
worst = None
for arg in sys.argv[1:]:
    mode, path = arg.split("=", 1)
    for line in open(path):
        m = re.match(r"\*\*Worst cell\*\*: (\S+) / offload = ([0-9.]+) \((.*?);", line)
        if m and (worst is None or float(m.group(2)) < worst[0]):
            worst = (float(m.group(2)), m.group(1), m.group(3), mode, path)
if worst is None:
    sys.exit("run-bench: no worst cell found in "
             + ", ".join(a.split("=", 1)[1] for a in sys.argv[1:]))
print("worst offload/best-stock ratio over the sweeps, both timing modes: %.2f (%s, timed %s "
      "[%s], against %s; below 1: offload slower there)" % (worst[0], worst[2], worst[3],
                                                             worst[4], worst[1]))
PY
