#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# Set up (contrib/setup.sh), then run the side-by-side latency benchmark:
# offload vs tuned vs sm, np 2 and 4 (np 4 oversubscribed on a 2-core machine, and
# marked so), all four collectives, 4 B .. 1 MiB; then their nonblocking and
# persistent forms against libnbc (results/forms/); then the nonblocking overlap
# benchmark (offload vs libnbc; results/overlap.md); then the tuner's rules for this node
# and the sweep with and without them (results/tune/). Ends with one line: the worst
# offload/best-stock ratio over both sweeps and where it is.
# Extra arguments go to bench/compare.py (e.g. --np 2,4 --repeat 5).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh contrib/setup.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
/usr/bin/python3 bench/compare.py --bin bench/coll_lat --out results --np 2,4 "$@"
/usr/bin/python3 bench/compare.py --bin bench/coll_lat --out results/forms --np 2,4 \
    --colls iallreduce,ireduce,ibcast,ibarrier,pallreduce,preduce,pbcast,pbarrier \
    --select offload,libnbc "$@"
/usr/bin/python3 bench/compare.py --overlap --bin bench/coll_lat --out results "$@"
# This node's own rules (coll-offload-tune, 180 s at most), then the sweep again with
# and without them, interleaved (results/tune/: rules.conf, compare.md).
sh bench/tune-bench.sh
# The worst cell of the two sweeps (each latency.md names its own).
/usr/bin/python3 - results/latency.md results/forms/latency.md <<'PY'
import re, sys
worst = None
for path in sys.argv[1:]:
    for line in open(path):
        m = re.match(r"\*\*Worst cell\*\*: (\S+) / offload = ([0-9.]+) \((.*?);", line)
        if m and (worst is None or float(m.group(2)) < worst[0]):
            worst = (float(m.group(2)), m.group(1), m.group(3))
if worst is None:
    sys.exit("run-bench: no worst cell found in " + ", ".join(sys.argv[1:]))
print("worst offload/best-stock ratio over the sweeps: %.2f (%s, against %s; below 1: "
      "offload slower there)" % (worst[0], worst[2], worst[1]))
PY
