# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the test drivers (run-tests.sh, run-tests-other-ompi.sh,
# bench/sim-check.sh, test/mpi/run-cluster.sh): running totals of the
# "N passed, M failed[, K skipped]" lines that every part of the tests ends with.
tally_pass=0
tally_fail=0
tally_skip=0

# tally_add LINE: fold one such line into the totals; anything else counts as
# one failure (a part that died before its summary).
tally_add() {
    _p=$(echo "$1" | sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed.*/\1/p')
    _f=$(echo "$1" | sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed.*/\2/p')
    _s=$(echo "$1" | sed -n 's/^[0-9]* passed, [0-9]* failed, \([0-9][0-9]*\) skipped.*/\1/p')
    tally_pass=$((tally_pass + ${_p:-0}))
    tally_fail=$((tally_fail + ${_f:-1}))
    tally_skip=$((tally_skip + ${_s:-0}))
}

# tally_skipped WHY: a part left out on purpose (the caller chose to): one skipped.
tally_skipped() {
    echo "skipped: $*"
    tally_add "0 passed, 0 failed, 1 skipped"
}

# tally_part CMD...: run one part, show its output, add its last line.
tally_part() {
    _log=$(mktemp)
    "$@" > "$_log" 2>&1
    cat "$_log"
    tally_add "$(tail -n 1 "$_log")"
    rm -f "$_log"
}

# tally_unit SUITE_LOG BUILD_LOG STATUS: the unit test programs of an automake
# test-suite.log (ERROR counts as failed, SKIP as skipped; no log: the build
# output and one failure), printed and added. STATUS is make check's exit
# status: nonzero with no failure in the log is one failure more. Remove
# SUITE_LOG before make check, or a previous run's log is read.
tally_unit() {
    _up=$(sed -n 's/^# PASS: *//p' "$1" 2>/dev/null | head -1)
    _uf=$(sed -n 's/^# FAIL: *//p' "$1" 2>/dev/null | head -1)
    _ue=$(sed -n 's/^# ERROR: *//p' "$1" 2>/dev/null | head -1)
    _us=$(sed -n 's/^# SKIP: *//p' "$1" 2>/dev/null | head -1)
    if [ -z "$_up" ]; then
        tail -n 40 "$2"
        _up=0
        _uf=1
    fi
    _uf=$(( ${_uf:-0} + ${_ue:-0} ))
    if [ "${3:-0}" != 0 ] && [ "$_uf" -eq 0 ]; then
        tail -n 40 "$2"
        echo "make check exited with status $3, although its log lists no failure"
        _uf=1
    fi
    echo "unit test programs: $_up passed, $_uf failed, ${_us:-0} skipped"
    tally_add "$_up passed, $_uf failed, ${_us:-0} skipped"
}

# tally_end: the totals' line ("N passed, M failed, K skipped"), and the status
# to exit with.
tally_end() {
    echo "$tally_pass passed, $tally_fail failed, $tally_skip skipped"
    [ "$tally_fail" -eq 0 ]
}
