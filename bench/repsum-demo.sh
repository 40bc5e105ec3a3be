#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# Ordinary and reproducible MPI_Allreduce sums of the same global data at np
# 1..8, then the cost of reproducible sums at np 4 (8 B and 1 MiB of doubles,
# alternating blocks). Usage: repsum-demo.sh [BINDIR] (default: this directory).
# Needs the component on the MCA path (mca_base_component_path).
bin=${1:-$(cd "$(dirname "$0")" && pwd)}
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
for np in 1 2 3 4 5 6 7 8; do
    mpirun --oversubscribe -np "$np" --mca op ^avx "$bin/repsum_demo" || exit 1
done
mpirun --oversubscribe -np 4 --mca op ^avx "$bin/repsum_demo" -t "${BLOCKS:-40}"
