#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# Runs the multi-node MPI tests of coll/offload on a cluster of network
# namespaces made on this machine (contrib/cluster.sh), and takes it down
# again however the tests end.
#
# Usage: run-cluster.sh [BINDIR]
#   BINDIR   directory holding t_coll, t_leak, t_fault (default: this script's)
# Environment: COLL_SELECTION, EXPECT_OFFLOAD, TEST_TIMEOUT, LOGDIR as for run.sh;
#   OFL_CLUSTER_OPTIONAL=1: a machine where the hosts cannot be made (not root, no
#   veth...) is a skip; by default it is a failure (the tests were asked for and
#   did not run).
#
#   3 hosts x 2 ranks  the correctness matrix (node-aware collectives: the two
#                      ranks of a host combine through the software NIC, the
#                      hosts through tcp), with the offload counters asserted;
#                      communicator churn (t_leak); a rank SIGKILLed on another
#                      host mid-collective ends the job within a minute
#   4 hosts x 1 rank   the matrix again (one rank per node: nothing to combine
#                      on a node, so everything goes to the fallback)
#   3 hosts x 2 ranks, 1% of every host's packets dropped (eBPF tc filter):
#                      the matrix still right, no hang (TCP retransmits: slow)
#
# Needs root (network namespaces), ip and unshare; otherwise says why it cannot
# run, and ends "0 passed, 1 failed" (or "0 passed, 0 failed, 1 skipped" with
# OFL_CLUSTER_OPTIONAL=1). The packet loss suite needs clang (the eBPF filter):
# without it, one skipped. Last line: "N passed, M failed, K skipped".
set -u

here=$(cd "$(dirname "$0")" && pwd)
BINDIR=${1:-$here}
top=$(cd "$here/../.." && pwd)
cluster="$top/contrib/cluster.sh"
export OFL_CLUSTER_DIR=${OFL_CLUSTER_DIR:-/tmp/ofl-cluster.$$}
EXPECT_OFFLOAD=${EXPECT_OFFLOAD:-0}

cannot() {
    if [ "${OFL_CLUSTER_OPTIONAL:-0}" = 1 ]; then
        echo "multi-node tests skipped (OFL_CLUSTER_OPTIONAL=1): $*"
        echo "0 passed, 0 failed, 1 skipped"
        exit 0
    fi
    echo "[FAIL]   multi-node tests cannot run: $*"
    echo "0 passed, 1 failed, 0 skipped"
    exit 1
}

[ "$(id -u)" = 0 ] || cannot "not root (network namespaces need it)"
command -v ip >/dev/null 2>&1 || cannot "no ip command (iproute2)"
command -v unshare >/dev/null 2>&1 || cannot "no unshare command (util-linux)"
probe=ofl-probe-$$
if ! ip netns add "$probe" >/dev/null 2>&1; then
    cannot "cannot create a network namespace here (ip netns add failed)"
fi
ok=1
ip -n "$probe" link add pv0 type veth peer name pv1 >/dev/null 2>&1 || ok=0
ip -n "$probe" link add pbr type bridge >/dev/null 2>&1 || ok=0
ip netns del "$probe" >/dev/null 2>&1
[ "$ok" = 1 ] || cannot "cannot make veth pairs or bridges here"
if ! unshare --uts --mount true >/dev/null 2>&1; then
    cannot "cannot unshare the UTS and mount namespaces here"
fi

trap 'sh "$cluster" down >/dev/null 2>&1' EXIT INT TERM

. "$top/contrib/tally.sh"

# suite NAME HOSTS RANKS_PER_HOST EXPECT [LOSS_PCT]: run run.sh's cluster suite
# (SUITE=cluster, or SUITE=cluster-loss: the matrix only) on a fresh cluster.
# EXPECT: assert the offload counters. LOSS_PCT: every host drops that share of
# what it sends, and the filter must have dropped something.
suite() {
    name=$1 hosts=$2 ppn=$3 want=$4 pct=${5:-}
    echo "== $name: $hosts hosts x $ppn rank(s)${pct:+, $pct% packet loss}"
    if ! OFL_CLUSTER_SLOTS=$ppn sh "$cluster" up "$hosts"; then
        echo "[FAIL]   cluster of $hosts hosts did not come up"
        tally_add "0 passed, 1 failed"
        return
    fi
    kind=cluster
    if [ -n "$pct" ]; then
        kind=cluster-loss
        if ! sh "$cluster" loss "$pct"; then
            echo "[FAIL]   cannot install the packet loss filter"
            tally_add "0 passed, 1 failed"
            sh "$cluster" down >/dev/null 2>&1
            return
        fi
    fi
    out=$(MPIRUN="$OFL_CLUSTER_DIR/mpirun" MPIRUN_ARGS="--map-by ppr:$ppn:node" \
          SUITE="$kind" NP=$((hosts * ppn)) HOSTS=$hosts EXPECT_OFFLOAD=$want \
          bash "$here/run.sh" "$BINDIR")
    echo "$out" | sed '$d'
    tally_add "$(echo "$out" | tail -n 1)"
    if [ -n "$pct" ]; then
        d=$(sh "$cluster" dropped)
        if [ "${d:-0}" -gt 0 ]; then
            echo "[ ok ]   the loss filter dropped $d packets"
            tally_add "1 passed, 0 failed"
        else
            echo "[FAIL]   the loss filter dropped nothing: the loss test proved nothing"
            tally_add "0 passed, 1 failed"
        fi
    fi
    sh "$cluster" down >/dev/null 2>&1
}

start=$(date +%s)
suite "3x2" 3 2 "$EXPECT_OFFLOAD"
suite "4x1" 4 1 0
if command -v clang >/dev/null 2>&1; then
    suite "3x2-loss" 3 2 "$EXPECT_OFFLOAD" 1
else
    echo "[skip]   packet loss suite: no clang to build the eBPF filter"
    tally_add "0 passed, 0 failed, 1 skipped"
fi
echo "multi-node tests: $(( $(date +%s) - start ))s"
tally_end
