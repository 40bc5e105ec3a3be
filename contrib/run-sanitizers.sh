#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# Runs coll/offload under the sanitizers; zero reports expected.
#
#   asan-unit  the unit tests of src/ (test/unit) built with AddressSanitizer and
#              UndefinedBehaviorSanitizer (gcc), leaks included;
#   asan-mpi   the component itself built the same way, installed into a private
#              component directory and loaded into ordinary mpirun processes (the
#              sanitizer runtime preloaded, since Open MPI is not instrumented):
#              t_coll, t_nb and t_fallback at np 2 and 4;
#   tsan-unit  the unit tests that run threads (threads, board, agent, ofi, queue) built
#              with ThreadSanitizer (clang).
#
# Usage: contrib/run-sanitizers.sh [WORKDIR]
#   WORKDIR   where the source copy, the builds and the logs go (default:
#             build/sanitizers under the top of the tree; emptied first)
# Environment:
#   SAN_LEGS      legs to run (default: "asan-unit asan-mpi tsan-unit")
#   TEST_TIMEOUT  seconds per MPI run (default: 300)
#
# Each unit test program and each MPI run is one check: it passes when it
# passes as a test and no sanitizer said anything. The last line is
# "N passed, M failed"; a build that fails counts as one failure.
#
# The builds are VPATH builds of a clean copy of the tree (what git tracks, in
# its working-tree state), so the tree's own in-place build is left alone.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$top/build/sanitizers}
legs=${SAN_LEGS:-asan-unit asan-mpi tsan-unit}
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
san_dir=$top/contrib/sanitizers
jobs=$(nproc 2>/dev/null || echo 2)
# Where Open MPI's devel headers are incomplete (Debian 13), the source tree that
# completes them, as the main build was configured (contrib/setup.sh).
extra=$("$top/config.status" --config 2>/dev/null | tr ' ' '\n' | tr -d "'" |
        grep -- '^--with-ompi-extra-headers=' | head -1)

pass=0
fail=0
ok() {
    printf '[ ok ]   %s\n' "$1"
    pass=$((pass + 1))
}
bad() {
    printf '[FAIL]   %s\n' "$1"
    fail=$((fail + 1))
}
# show_report FILE...: the sanitizer reports in FILEs, for the CI log.
show_report() {
    for f in "$@"; do
        [ -s "$f" ] && sed 's/^/         /' "$f" | head -n 60
    done
}
# has_report FILE...: true if any of them holds a sanitizer report.
sanitizer_re='(ERROR|SUMMARY): (Address|Leak|Thread|UndefinedBehavior)Sanitizer'
sanitizer_re="$sanitizer_re|WARNING: ThreadSanitizer|runtime error:"
has_report() {
    grep -a -q -E "$sanitizer_re" "$@" 2>/dev/null
}

rm -rf "$work"
mkdir -p "$work/src" "$work/logs"
start_all=$(date +%s)

# ---- a clean copy of the sources ----------------------------------------------
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$top" && git ls-files -z | xargs -0 tar -cf - 2>/dev/null) | tar -C "$work/src" -xf -
else
    (cd "$top" && tar --exclude=./build -cf - .) | tar -C "$work/src" -xf -
    [ -f "$work/src/Makefile" ] && make -s -C "$work/src" distclean >/dev/null 2>&1
fi
if ! (cd "$work/src" && ./autogen.sh) > "$work/logs/autogen.log" 2>&1; then
    cat "$work/logs/autogen.log"
    bad "autogen"
    echo "$pass passed, $fail failed"
    exit 1
fi

# configure_build DIR LOG SUBDIRS CONFIGURE-ARGS...: a VPATH build of the copy in
# DIR, of SUBDIRS only when not empty.
configure_build() {
    dir=$1
    log=$2
    subdirs=$3
    shift 3
    mkdir -p "$dir"
    (
        cd "$dir" && "$work/src/configure" -q "$@" || exit 1
        if [ -z "$subdirs" ]; then
            make -j"$jobs" -s
        else
            for d in $subdirs; do
                make -j"$jobs" -s -C "$d" || exit 1
            done
        fi
    ) > "$log" 2>&1
}

# run_unit LEG DIR [TESTS]: run unit test programs of the build in DIR (all of
# them without TESTS), one check each.
run_unit() {
    leg=$1
    dir=$2
    tests=${3:-}
    if [ -n "$tests" ]; then
        make -s -C "$dir/test/unit" check TESTS="$tests" > "$work/logs/$leg.check.log" 2>&1
    else
        make -s -C "$dir/test/unit" check > "$work/logs/$leg.check.log" 2>&1
        tests=$(cd "$dir/test/unit" && ls -- *.trs 2>/dev/null | sed 's/\.trs$//')
        if [ -z "$tests" ]; then
            bad "$leg (no unit test ran)"
            show_report "$work/logs/$leg.check.log"
            return
        fi
    fi
    for t in $tests; do
        log=$dir/test/unit/$t.log
        if [ ! -f "$log" ]; then
            bad "$leg $t (did not run)"
            show_report "$work/logs/$leg.check.log"
        elif ! grep -q "^PASS $t" "$log" || has_report "$log"; then
            bad "$leg $t"
            show_report "$log"
        else
            ok "$leg $t"
        fi
    done
}

# The ASan legs: stops at the first report (-fno-sanitize-recover); beyond the
# defaults, pointers into returned frames, string functions reading past the
# terminator and globals used before their initialiser ran.
ASAN_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
asan_common="detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1"
asan_common="$asan_common:check_initialization_order=1"
ubsan_common="print_stacktrace=1:halt_on_error=1"
asan_built=no
build_asan() {
    [ "$asan_built" = no ] || return 0
    asan_built=failed
    echo "== building with ASan+UBSan (gcc)"
    # shellcheck disable=SC2086  # $extra is empty or one option
    if configure_build "$work/asan" "$work/logs/asan.build.log" "" CC=gcc \
        CFLAGS="-g $ASAN_FLAGS" LDFLAGS="$ASAN_FLAGS" \
        --with-component-dir="$work/asan/component" $extra; then
        asan_built=yes
    else
        tail -n 30 "$work/logs/asan.build.log"
    fi
}

# mpi_smoke PROG NP MCA-ARGS PROG-ARGS...: one run of an MPI test of the ASan
# build with the instrumented component; each process writes its sanitizer
# reports (if any) to a file of its own.
mpi_smoke() {
    prog=$1
    np=$2
    mca=$3
    shift 3
    dir=$work/logs/asan-mpi.$prog.np$np
    mkdir -p "$dir"
    t0=$(date +%s)
    # shellcheck disable=SC2086  # the argument strings are meant to be split
    timeout -k 15 "$TEST_TIMEOUT" mpirun --oversubscribe -np "$np" \
        --mca mca_base_component_path "$syscomp:$work/asan/component" --mca op ^avx $mca \
        -x LD_PRELOAD="$runtime $work/keep-loaded.so" \
        -x ASAN_OPTIONS="$asan_common:log_path=$dir/asan:fast_unwind_on_malloc=0" \
        -x LSAN_OPTIONS="suppressions=$san_dir/lsan-openmpi.supp" \
        -x UBSAN_OPTIONS="$ubsan_common:log_path=$dir/ubsan" \
        "$work/asan/test/mpi/$prog" "$@" --expect-offload > "$dir/out.log" 2>&1 < /dev/null
    rc=$?
    secs=$(( $(date +%s) - t0 ))
    # (-a: Open MPI 5's launcher ends an aggregated help message with a NUL byte)
    line=$(grep -a -E "^$prog: [0-9]+ passed, 0 failed(, [0-9]+ skipped)?\$" "$dir/out.log" \
        | tail -n 1)
    if [ "$rc" != 0 ] || [ -z "$line" ] || has_report "$dir"/*; then
        bad "asan-mpi $prog np=$np (exit $rc, ${secs}s; logs: $dir)"
        grep -a -E "^FAIL|failed" "$dir/out.log" | head -n 10 | sed 's/^/         /'
        show_report "$dir"/asan.* "$dir"/ubsan.*
    else
        ok "asan-mpi $prog np=$np: ${line#*: } (${secs}s)"
    fi
}

for leg in $legs; do
    case $leg in
    asan-unit)
        build_asan
        if [ "$asan_built" != yes ]; then
            bad "asan-unit build"
            continue
        fi
        echo "== asan-unit: unit tests under ASan+UBSan"
        OFL_UNIT_TIME_SCALE=5 ASAN_OPTIONS=$asan_common UBSAN_OPTIONS=$ubsan_common \
            run_unit asan-unit "$work/asan"
        ;;

    asan-mpi)
        build_asan
        if [ "$asan_built" != yes ] \
            || ! make -s -C "$work/asan" install > "$work/logs/asan.install.log" 2>&1 \
            || ! cc -shared -fPIC -O2 -o "$work/keep-loaded.so" "$san_dir/keep-loaded.c" \
                    > "$work/logs/keep-loaded.log" 2>&1; then
            show_report "$work/logs/asan.install.log" "$work/logs/keep-loaded.log"
            bad "asan-mpi build"
            continue
        fi
        # The sanitizer runtime must come first in the process (Open MPI and
        # mpirun are not instrumented); keep-loaded.so: see that file.
        runtime=$(gcc -print-file-name=libasan.so)
        syscomp=$(ompi_info --path pkglibdir | sed -n 's/.*Pkglibdir: *//p')
        echo "== asan-mpi: MPI smoke run, component under ASan+UBSan"
        # Open MPI refuses to run as root unless told; CI is root.
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
        # As test/mpi/run.sh: the NIC's paths also where ranks outnumber cores (np 4
        # here), persistent starts asserted in order (the tests start them so).
        export OMPI_MCA_coll_offload_crowded_max=-1 OMPI_MCA_coll_offload_persistent_ordered=1
        limits="--mca coll_offload_allreduce_max_bytes 1024"
        limits="$limits --mca coll_offload_reduce_max_bytes 1024"
        limits="$limits --mca coll_offload_bcast_max_bytes 1024"
        # (as test/mpi/run.sh: t_nb expects every call it makes offloaded)
        nb_policy="--mca coll_offload_reduce_policy tree"
        nb_policy="$nb_policy --mca coll_offload_bcast_policy tree:32k,get"
        for np in 2 4; do
            mpi_smoke t_coll "$np" "" --quick
            mpi_smoke t_nb "$np" "$nb_policy" --quick
            mpi_smoke t_fallback "$np" "$limits"
        done
        ;;

    tsan-unit)
        echo "== building with TSan (clang)"
        # shellcheck disable=SC2086
        if ! configure_build "$work/tsan" "$work/logs/tsan.build.log" src CC=clang \
            CFLAGS="-g -fsanitize=thread" LDFLAGS="-fsanitize=thread" \
            --with-component-dir="$work/tsan/component" $extra; then
            tail -n 30 "$work/logs/tsan.build.log"
            bad "tsan-unit build"
            continue
        fi
        echo "== tsan-unit: threaded unit tests under TSan"
        OFL_UNIT_TIME_SCALE=20 \
            TSAN_OPTIONS="suppressions=$san_dir/tsan.supp:second_deadlock_stack=1" \
            run_unit tsan-unit "$work/tsan" "test_threads test_board test_agent test_ofi test_queue"
        ;;

    *)
        bad "unknown leg $leg"
        ;;
    esac
done

echo "sanitizers: total time $(( $(date +%s) - start_all ))s"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
