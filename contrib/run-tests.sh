#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# Set up (contrib/setup.sh), then run every test: the unit tests of the core
# (no MPI), a bounded fuzz run of the readers of peer-written state (libFuzzer,
# 15 s per harness), the simulator's checks (bench/sim-check.sh), the unit tests
# and an MPI smoke run under the sanitizers (contrib/run-sanitizers.sh), the MPI
# tests under mpirun with the installed component, MPICH's collective tests (with
# offload and without, test/mpich/run.sh), the multi-node MPI tests on
# hosts made of network namespaces (root only), and the unit, MPI and MPICH tests
# again against the other Open MPI in a root of the other Debian release (root only,
# contrib/run-tests-other-ompi.sh): on Debian 12 (Open MPI 4.1), Open MPI 5.0 in a
# Debian 13 root; on Debian 13 (Open MPI 5.0), Open MPI 4.1 in a Debian 12 root.
# Last line: "N passed, M failed, K skipped" (unit test programs + fuzz harnesses +
# simulator checks + sanitizer checks + MPI checks + MPICH tests + the /dev/shm check;
# skipped: what a part left out and said why, and the parts that need root when not
# run as root, or that were turned off).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh contrib/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }
ompi_ver=$(ompi_info --version 2>/dev/null | sed -n 's/^Open MPI v\{0,1\}\([0-9]*\.[0-9]*\).*/\1/p' | head -1)

. "$top/contrib/tally.sh"

echo "== licence headers (contrib/check-spdx.sh: every source, script and build file)"
if sh contrib/check-spdx.sh; then
    tally_add "1 passed, 0 failed"
else
    tally_add "0 passed, 1 failed"
fi

echo "== call cycles between files (contrib/call-cycles.sh: src/, and ompi/ with opal-glue/)"
tally_part sh contrib/call-cycles.sh

echo "== unit tests (src/, no MPI)"
# (a previous run's logs must not be read as this one's)
rm -f test/unit/test-suite.log test/unit/test_*.log test/unit/test_*.trs
make -s check > /tmp/ofl-unit.$$.log 2>&1
unit_status=$?
for t in test/unit/test_*.log; do
    [ -f "$t" ] && cat "$t"
done
tally_unit test/unit/test-suite.log /tmp/ofl-unit.$$.log "$unit_status"
rm -f /tmp/ofl-unit.$$.log

echo "== fuzzing (libFuzzer harnesses of the readers, ${FUZZ_SECONDS:-15} s each)"
tally_part sh test/fuzz/run.sh

echo "== simulator (bench/sim-check.sh: seed 003 validation, hwloc node shapes, dragonfly, rules)"
tally_part sh bench/sim-check.sh

shm_before=$(ls /dev/shm 2>/dev/null | grep -c coll_offload || true)

echo "== sanitizers (ASan+UBSan: unit tests, MPI smoke run; TSan: threaded unit tests)"
tally_part sh contrib/run-sanitizers.sh

echo "== MPI tests"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Stock Open MPI's op/avx (4.1 and 5.0) saturates 8/16-bit integer sums
# (open-mpi/ompi#8045); the tests check the library's own MPI_Reduce_local too, and
# fallback calls use it.
export EXPECT_OFFLOAD=1 COLL_SELECTION="--mca op ^avx"
tally_part bash test/mpi/run.sh "$top/test/mpi"

echo "== MPICH collective tests (Open MPI $ompi_ver)"
# MPICH's test/mpi/coll (Debian's mpich source, fetched once into /var/cache/coll-offload)
# with offload and with stock Open MPI: each test must do with offload as well as without.
# Every run is on this one machine: without tcp (Open MPI 5's tcp BTL prints "Unable to
# find reachable pairing between local and remote interfaces" on every run at np > 1 on
# some hosts, which MPICH's pass rule counts against both selections; Open MPI 4.1 runs
# on vader and self alike).
tally_part env COMMON_ARGS="${COMMON_ARGS:---mca op ^avx --mca btl ^tcp}" bash test/mpich/run.sh

echo "== multi-node MPI tests (hosts made of network namespaces)"
# As root they must run: a cluster that cannot be made is a failure. Otherwise
# (not root) they may say why they cannot and count as skipped.
if [ "$(id -u)" -eq 0 ]; then
    tally_part bash test/mpi/run-cluster.sh "$top/test/mpi"
else
    tally_part env OFL_CLUSTER_OPTIONAL=1 bash test/mpi/run-cluster.sh "$top/test/mpi"
fi

# The same tree against the other Open MPI in a root of the other Debian release (root
# only: debootstrap, chroot; OFL_SKIP_OTHER_OMPI=1, or its old name OFL_SKIP_OMPI5=1,
# leaves it out).
case $ompi_ver in
    4.*) echo "== Open MPI 5.0 (a Debian 13 root)" ;;
    *) echo "== Open MPI 4.1 (a Debian 12 root)" ;;
esac
if [ "$(id -u)" -eq 0 ] && [ "${OFL_SKIP_OTHER_OMPI:-${OFL_SKIP_OMPI5:-0}}" != 1 ]; then
    OTHER_SUITE=${OTHER_SUITE:-${OMPI5_SUITE:-quick}} tally_part bash contrib/run-tests-other-ompi.sh
else
    tally_skipped "the other Open MPI (needs root, or OFL_SKIP_OTHER_OMPI=1)"
fi

shm_after=$(ls /dev/shm 2>/dev/null | grep -c coll_offload || true)
if [ "$shm_after" -gt "$shm_before" ]; then
    echo "FAIL: $((shm_after - shm_before)) coll_offload segment(s) left in /dev/shm"
    tally_add "0 passed, 1 failed"
else
    tally_add "1 passed, 0 failed"
fi
tally_end
