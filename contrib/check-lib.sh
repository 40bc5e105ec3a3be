# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the checks against Open MPI source trees (check-ompi-src.sh,
# check-ompi-main.sh): counted steps and their logs. Needs $work; sets passed, failed.
passed=0
failed=0

say() { echo "== $(date -u +%H:%M:%S) $*"; }
ok() { say "ok: $*"; passed=$((passed + 1)); }
bad() { say "FAILED: $*"; failed=$((failed + 1)); }
finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
}
# Runs a step (a command or a function of the script), its output in $work/LOG.log;
# prints how long it took.
run() {
    log=$1
    shift
    t0=$(date +%s)
    "$@" > "$work/$log.log" 2>&1
    rc=$?
    say "$log: exit $rc after $(($(date +%s) - t0)) s (log: $work/$log.log)"
    return $rc
}
