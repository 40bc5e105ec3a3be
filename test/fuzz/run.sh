#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# A bounded fuzz run: build the harnesses (build.sh), then run each for
# FUZZ_SECONDS (default 15) from its checked-in seed corpus (corpus/NAME; new
# inputs go to a scratch copy, never into the tree). A harness passes when it
# ran its time without a finding; a finding is shown with the input that
# reproduces it (fuzz_NAME INPUT). Last line: "N passed, M failed".
# FUZZ_SEED (default 1) fixes libFuzzer's seed so that a bounded run explores
# the same way on every machine; FUZZ_SEED=0 takes a random one (longer runs
# by hand, to look for new findings; a finding's input then joins corpus/).
#   run.sh [HARNESS...]      default: attach mailbox get board ofi policy rules
set -u
here=$(cd "$(dirname "$0")" && pwd)
secs=${FUZZ_SECONDS:-15}
seed=${FUZZ_SEED:-1}
work=${FUZZ_WORK:-$(mktemp -d /tmp/ofl-fuzz.XXXXXX)}
harnesses=${*:-attach mailbox get board ofi policy rules}
mkdir -p "$work"
if ! FUZZ_HARNESSES="$harnesses" sh "$here/build.sh" "$work" > "$work/build.log" 2>&1; then
    cat "$work/build.log"
    echo "fuzz harnesses do not build"
    echo "0 passed, 1 failed"
    exit 1
fi
pass=0
fail=0
for h in $harnesses; do
    mkdir -p "$work/corpus-$h"
    start=$(date +%s)
    timeout $((secs + 120)) "$work/fuzz_$h" -max_total_time="$secs" -seed="$seed" -timeout=10 \
        -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
        -artifact_prefix="$work/$h-" "$work/corpus-$h" "$here/corpus/$h" \
        > "$work/$h.log" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$h.log")
    # a harness that died leaves its segment's name behind (fuzz_attach's)
    for f in /dev/shm/ofl-fuzz-*; do
        [ -e "$f" ] || continue
        kill -0 "${f##*-}" 2>/dev/null || rm -f "$f"
    done
    if [ "$rc" -eq 0 ]; then
        echo "PASS: fuzz_$h (${runs:-?} inputs in ${took} s, no finding)"
        pass=$((pass + 1))
    else
        tail -n 40 "$work/$h.log"
        echo "FAIL: fuzz_$h (exit $rc after ${took} s); reproduce: fuzz_$h $(ls "$work/$h-"* 2>/dev/null | head -n 1)"
        fail=$((fail + 1))
    fi
done
[ -n "${FUZZ_WORK:-}" ] || [ "$fail" -gt 0 ] || rm -rf "$work"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
