# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the test drivers (run-tests.sh, run-tests-ompi5.sh,
# bench/sim-check.sh, test/mpi/run-cluster.sh): running totals of the
# "N passed, M failed" lines that every part of the tests ends with.
tally_pass=0
tally_fail=0

# tally_add LINE: fold one such line into the totals; anything else counts as
# one failure (a part that died before its summary).
tally_add() {
    _p=$(echo "$1" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\1/p')
    _f=$(echo "$1" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\2/p')
    tally_pass=$((tally_pass + ${_p:-0}))
    tally_fail=$((tally_fail + ${_f:-1}))
}

# tally_part CMD...: run one part, show its output, add its last line.
tally_part() {
    _log=$(mktemp)
    "$@" > "$_log" 2>&1
    cat "$_log"
    tally_add "$(tail -n 1 "$_log")"
    rm -f "$_log"
}

# tally_unit SUITE_LOG BUILD_LOG: the unit test programs of an automake
# test-suite.log (ERROR counts as failed; no log: the build output and one
# failure), printed and added.
tally_unit() {
    _up=$(sed -n 's/^# PASS: *//p' "$1" 2>/dev/null | head -1)
    _uf=$(sed -n 's/^# FAIL: *//p' "$1" 2>/dev/null | head -1)
    _ue=$(sed -n 's/^# ERROR: *//p' "$1" 2>/dev/null | head -1)
    if [ -z "$_up" ]; then
        tail -n 40 "$2"
        _up=0
        _uf=1
    fi
    _uf=$(( ${_uf:-0} + ${_ue:-0} ))
    echo "unit test programs: $_up passed, $_uf failed"
    tally_add "$_up passed, $_uf failed"
}

# tally_end: the totals' line, and the status to exit with.
tally_end() {
    echo "$tally_pass passed, $tally_fail failed"
    [ "$tally_fail" -eq 0 ]
}
