#!/bin/sh
# Set up (contrib/setup.sh), then run every test: the unit tests of the core
# (no MPI), a bounded fuzz run of the readers of peer-written state (libFuzzer,
# 15 s per harness), the simulator's checks (bench/sim-check.sh), the unit tests
# and an MPI smoke run under the sanitizers (contrib/run-sanitizers.sh), the MPI
# tests under mpirun with the installed component, the multi-node MPI tests on
# hosts made of network namespaces (root only), and the unit and MPI tests again
# against Open MPI 5.0 in a Debian 13 root (root only).
# Last line: "N passed, M failed" (unit test programs + fuzz harnesses +
# simulator checks + sanitizer checks + MPI checks + the /dev/shm check).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh contrib/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }

echo "== unit tests (src/, no MPI)"
make -s check > /tmp/ofl-unit.$$.log 2>&1
for t in test/unit/test_*.log; do
    [ -f "$t" ] && cat "$t"
done
suite=test/unit/test-suite.log
unit_pass=$(sed -n 's/^# PASS: *//p' "$suite" 2>/dev/null | head -1)
unit_fail=$(sed -n 's/^# FAIL: *//p' "$suite" 2>/dev/null | head -1)
unit_err=$(sed -n 's/^# ERROR: *//p' "$suite" 2>/dev/null | head -1)
if [ -z "$unit_pass" ]; then
    cat /tmp/ofl-unit.$$.log
    unit_pass=0
    unit_fail=1
fi
unit_fail=$(( ${unit_fail:-0} + ${unit_err:-0} ))
rm -f /tmp/ofl-unit.$$.log
echo "unit test programs: $unit_pass passed, $unit_fail failed"

echo "== fuzzing (libFuzzer harnesses of the readers, ${FUZZ_SECONDS:-15} s each)"
log=$(mktemp)
sh test/fuzz/run.sh > "$log" 2>&1
cat "$log"
out=$(tail -n 1 "$log")
rm -f "$log"
fuzz_pass=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\1/p')
fuzz_fail=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\2/p')
fuzz_pass=${fuzz_pass:-0}
fuzz_fail=${fuzz_fail:-1}

echo "== simulator (bench/sim-check.sh: seed 003 validation, hwloc node shapes, dragonfly)"
sim_log=$(mktemp)
sh bench/sim-check.sh > "$sim_log" 2>&1
cat "$sim_log"
sim_out=$(tail -n 1 "$sim_log")
rm -f "$sim_log"
sim_pass=$(echo "$sim_out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\1/p')
sim_fail=$(echo "$sim_out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\2/p')
sim_pass=${sim_pass:-0}
sim_fail=${sim_fail:-1}

shm_before=$(ls /dev/shm 2>/dev/null | grep -c coll_offload || true)

echo "== sanitizers (ASan+UBSan: unit tests, MPI smoke run; TSan: threaded unit tests)"
san_log=$(mktemp)
sh contrib/run-sanitizers.sh > "$san_log" 2>&1
cat "$san_log"
san_out=$(tail -n 1 "$san_log")
rm -f "$san_log"
san_pass=$(echo "$san_out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\1/p')
san_fail=$(echo "$san_out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\2/p')
san_pass=${san_pass:-0}
san_fail=${san_fail:-1}

echo "== MPI tests"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Stock Open MPI 4.1's op/avx saturates 8/16-bit integer sums (open-mpi/ompi#8045); the
# tests check the library's own MPI_Reduce_local too, and fallback calls use it.
# suite SCRIPT: run a test script's suite, show its output, add its last line
# ("N passed, M failed"; missing counts as one failure) to the MPI totals.
mpi_pass=0
mpi_fail=0
suite() {
    log=$(mktemp)
    EXPECT_OFFLOAD=1 COLL_SELECTION="--mca op ^avx" bash "$1" "$top/test/mpi" > "$log" 2>&1
    cat "$log"
    out=$(tail -n 1 "$log")
    rm -f "$log"
    p=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\1/p')
    f=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\2/p')
    mpi_pass=$((mpi_pass + ${p:-0}))
    mpi_fail=$((mpi_fail + ${f:-1}))
}
suite test/mpi/run.sh

echo "== multi-node MPI tests (hosts made of network namespaces)"
suite test/mpi/run-cluster.sh

# The same tree against Open MPI 5.0 in a Debian 13 root (root only: debootstrap,
# chroot; OFL_SKIP_OMPI5=1 leaves it out).
echo "== Open MPI 5.0 (a Debian 13 root)"
if [ "$(id -u)" -eq 0 ] && [ "${OFL_SKIP_OMPI5:-0}" != 1 ]; then
    suite contrib/run-tests-ompi5.sh
else
    echo "skipped (needs root, or OFL_SKIP_OMPI5=1)"
fi

shm_after=$(ls /dev/shm 2>/dev/null | grep -c coll_offload || true)
shm_pass=1
shm_fail=0
if [ "$shm_after" -gt "$shm_before" ]; then
    echo "FAIL: $((shm_after - shm_before)) coll_offload segment(s) left in /dev/shm"
    shm_pass=0
    shm_fail=1
fi
pass=$((unit_pass + fuzz_pass + sim_pass + san_pass + mpi_pass + shm_pass))
fail=$((unit_fail + fuzz_fail + sim_fail + san_fail + mpi_fail + shm_fail))
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
