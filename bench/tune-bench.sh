#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# The tuner on this node, then the side-by-side benchmark with and without the rules it
# wrote, interleaved in one invocation: offload with the defaults, offload with the rules,
# tuned, and offload with the defaults again (the same code: the machine's noise). Writes OUT/rules.conf, OUT/tune.log, OUT/bench/ (compare.py's tables) and
# OUT/compare.md (tune_table.py: medians and ratios per cell, the worst of each).
# Environment: OUT (default results/tune), NP (default 2), BUDGET (tuner seconds, default
# 180), REPEAT (runs per selection, default 9). Run from a built tree, component installed.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out=${OUT:-results/tune}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mpirun -np "${NP:-2}" bench/coll-offload-tune --budget "${BUDGET:-180}" \
    --out "$out/rules.conf" | tee "$out/tune.log"
/usr/bin/python3 bench/compare.py --bin bench/coll_lat --out "$out/bench" --np "${NP:-2}" \
    --repeat "${REPEAT:-9}" --placement 0 --mode b2b \
    --select "offload,offload+coll_offload_rules_file=$out/rules.conf,tuned,offload+coll_offload_verbose=0"
/usr/bin/python3 bench/tune_table.py "$out/bench/raw.csv" --md "$out/compare.md"
