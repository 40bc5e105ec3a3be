#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# Offload vs tuned across hosts made of network namespaces (root only): the
# side-by-side latency benchmark on 2 hosts x 2 ranks and 4 hosts x 1 rank,
# allreduce/barrier/bcast/reduce, 8 B .. 1 MiB. Tables in results/cluster-2x2/
# and results/cluster-4x1/. Extra arguments go to bench/compare.py (e.g.
# --repeat 5, --colls allreduce,barrier).
# The hosts share this machine's cores: absolute numbers carry that
# oversubscription and veth latency; the ratios are what to read.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh contrib/setup.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OFL_CLUSTER_DIR=${OFL_CLUSTER_DIR:-/tmp/ofl-bench-cluster.$$}
trap 'sh contrib/cluster.sh down >/dev/null 2>&1' EXIT INT TERM
for shape in 2x2 4x1; do
    hosts=${shape%x*}
    ppn=${shape#*x}
    OFL_CLUSTER_SLOTS=$ppn sh contrib/cluster.sh up "$hosts"
    /usr/bin/python3 bench/compare.py --bin bench/coll_lat --mpirun "$OFL_CLUSTER_DIR/mpirun" \
        --mpirun-args "--map-by ppr:$ppn:node" --np $((hosts * ppn)) --select offload,tuned \
        --sizes 8:1048576 --out "results/cluster-$shape" "$@"
    sh contrib/cluster.sh down >/dev/null
done
