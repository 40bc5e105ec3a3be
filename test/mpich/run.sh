#!/bin/bash
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# MPICH's collective test suite (test/mpi/coll of Debian's mpich source package)
# built against the installed Open MPI with mpicc and run twice per test: with
# Open MPI's default selection (coll/offload, installed with the highest
# priority) and with stock Open MPI (--mca coll ^offload).
#
# Usage: run.sh [--src DIR] [--build DIR] [--markdown FILE] [--max-np N]
#               [--timeout SECONDS] [--only REGEX]
#   --src DIR        an unpacked MPICH source (or its test/mpi); default: Debian's
#                    `apt-get source mpich` of the running release, fetched once into
#                    $MPICH_CACHE/mpich-<release> (if that release's source cannot be
#                    fetched, Debian 12's is, MPICH 4.0.2; the output says which)
#   --build DIR      where test/mpi is configured and coll built, kept (default: a new
#                    temp dir, removed at the end unless a check failed)
#   --markdown FILE  also write the results table as markdown to FILE (env MPICH_MARKDOWN)
#   --max-np N       most ranks per run (default 4, env MAX_NP); a testlist entry with
#                    more runs at N (at 2 if the program refuses N with both selections),
#                    unless an entry already runs that program with the same arguments
#                    at that size: then it is skipped as a duplicate
#   --timeout S      seconds per run (default 60, env TEST_TIMEOUT); a testlist
#                    timeLimit= below it applies
#   --only REGEX     run only the testlist entries whose program name matches
# Environment:
#   MPIRUN           launcher (default: mpirun)
#   MPIRUN_ARGS      launcher options for every run (default: --oversubscribe)
#   COMMON_ARGS      mpirun options of both selections (default: --mca op ^avx, because
#                    Open MPI's op/avx saturates 8/16-bit sums, open-mpi/ompi#8045, and
#                    allred -count=100 checks them: the comparison is of coll components)
#   OFFLOAD_ARGS     options selecting offload (default: none, Open MPI's own selection)
#   STOCK_ARGS       options selecting stock Open MPI (default: --mca coll ^offload)
#   MPICC            compiler (default: mpicc)
#   MAKE_JOBS        parallel make jobs (default: 2)
#   MPICH_CACHE      where fetched sources are kept (default: /var/cache/coll-offload)
#   DEBIAN_MIRROR    for the deb-src line (default: http://deb.debian.org/debian)
#   LOGDIR           where each run's output is kept (default: BUILD/logs)
#   MPICH_SRC, MPICH_BUILD, MPICH_MARKDOWN: defaults of --src, --build, --markdown
#
# A run passes as MPICH's runtests judges it: exit status 0 and output (stdout and
# stderr) of " No Errors" and nothing else but "Test Passed" lines. Each testlist
# entry that runs is one check: passed if offload passes (with stock passing or not),
# failed if only stock passes. An entry that fails with both selections says nothing
# about offload: it is skipped, with both outcomes as the reason, unless the reason is
# the environment: where both runs said " No Errors" and exited 0 but printed more
# (a launcher's or transport's warning, e.g. Open MPI 5's tcp BTL's "Unable to find
# reachable pairing"), or the launcher could not start the job, the environment keeps
# the suite from judging, and the entry is a failure of the harness.
# Entries that cannot run here (program not built against this Open MPI, duplicate
# after clipping, unsupported attribute) and clipped entries that fail with both
# (the program does not run at that size) are listed and counted as skipped.
# Last line: exactly "N passed, M failed, K skipped".
set -u

here=$(cd "$(dirname "$0")" && pwd)
SRC=${MPICH_SRC:-}
BUILD=${MPICH_BUILD:-}
MARKDOWN=${MPICH_MARKDOWN:-}
MAX_NP=${MAX_NP:-4}
TEST_TIMEOUT=${TEST_TIMEOUT:-60}
ONLY=""
while [ $# -gt 0 ]; do
    case $1 in
        --src) SRC=$2; shift 2 ;;
        --build) BUILD=$2; shift 2 ;;
        --markdown) MARKDOWN=$2; shift 2 ;;
        --max-np) MAX_NP=$2; shift 2 ;;
        --timeout) TEST_TIMEOUT=$2; shift 2 ;;
        --only) ONLY=$2; shift 2 ;;
        -h|--help) sed -n '4,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown option $1" >&2; echo "0 passed, 1 failed"; exit 1 ;;
    esac
done
MPIRUN=${MPIRUN:-mpirun}
MPIRUN_ARGS=${MPIRUN_ARGS:---oversubscribe}
COMMON_ARGS=${COMMON_ARGS---mca op ^avx}
OFFLOAD_ARGS=${OFFLOAD_ARGS:-}
STOCK_ARGS=${STOCK_ARGS:---mca coll ^offload}
MPICC=${MPICC:-mpicc}
MAKE_JOBS=${MAKE_JOBS:-2}
MPICH_CACHE=${MPICH_CACHE:-/var/cache/coll-offload}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

die() {
    echo "mpich: $*"
    echo "0 passed, 1 failed"
    exit 1
}

# Open MPI refuses to run as root unless told; containers and CI often are root.
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
    export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
fi

# fetch RELEASE: `apt-get source mpich` of a Debian release into the cache (once);
# prints the unpacked directory.
fetch() {
    local rel=$1 dir=$MPICH_CACHE/mpich-$1 list=/etc/apt/sources.list.d/coll-offload-mpich-src.list
    if ! ls -d "$dir"/mpich-*/test/mpi >/dev/null 2>&1; then
        [ "$(id -u)" = 0 ] || { echo "mpich: fetching needs root (or pass --src)" >&2; return 1; }
        if ! grep -qs "^deb-src .* $rel main" /etc/apt/sources.list /etc/apt/sources.list.d/*.list; then
            echo "deb-src $DEBIAN_MIRROR $rel main" >> "$list"
        fi
        apt-get update -qq >/dev/null 2>&1
        rm -rf "$dir.part"
        mkdir -p "$dir.part"
        (cd "$dir.part" && apt-get source -qq "mpich/$rel") > "$MPICH_CACHE/mpich-$rel.log" 2>&1 \
            || { sed 's/^/mpich: /' "$MPICH_CACHE/mpich-$rel.log" | grep -v 'unsandboxed' | tail -3 >&2
                 rm -rf "$dir.part"; return 1; }
        rm -rf "$dir"
        mv "$dir.part" "$dir"
    fi
    ls -d "$dir"/mpich-*/ | head -1
}

if [ -z "$SRC" ]; then
    release=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    [ -n "$release" ] || die "cannot tell the Debian release (pass --src)"
    mkdir -p "$MPICH_CACHE" || die "cannot make $MPICH_CACHE"
    SRC=$(fetch "$release")
    if [ -z "$SRC" ] && [ "$release" != bookworm ]; then
        echo "mpich: $release's mpich source could not be fetched; using Debian 12's (bookworm)"
        SRC=$(fetch bookworm)
    fi
    [ -n "$SRC" ] || die "cannot fetch the mpich source package"
fi
[ -f "$SRC/test/mpi/configure" ] && SRC=$SRC/test/mpi
[ -f "$SRC/configure" ] && [ -d "$SRC/coll" ] || die "$SRC is not an MPICH source or its test/mpi"
SRC=$(cd "$SRC" && pwd)
mpich_version=$(sed -n 's/.*MPICH_VERSION_m4],\[\([^]]*\)\].*/\1/p' "$SRC/version.m4" 2>/dev/null | head -1)
ompi_version=$(ompi_info --version 2>/dev/null | sed -n 's/^Open MPI v//p' | head -1)
echo "mpich: MPICH ${mpich_version:-?} tests ($SRC), Open MPI ${ompi_version:-?}"

# Configure test/mpi for a non-MPICH MPI (only C; no Fortran, C++, ROMIO, spawn,
# RMA, partitioned or performance tests, no testlists of MPICH's own algorithm
# variables, which would need Python: only coll is built) and build coll.
# ompi-compat.h is force-included into every compile (see there).
made_build=""
if [ -z "$BUILD" ]; then
    # (removed at the end when no check failed)
    BUILD=$(mktemp -d "${TMPDIR:-/tmp}/mpich-coll.XXXXXX") && made_build=1
fi
mkdir -p "$BUILD" && BUILD=$(cd "$BUILD" && pwd)
LOGDIR=${LOGDIR:-$BUILD/logs}
mkdir -p "$LOGDIR"
t_build=$(date +%s)
if [ ! -f "$BUILD/coll/Makefile" ]; then
    (cd "$BUILD" && "$SRC/configure" CC="$MPICC" --disable-fortran --disable-cxx --disable-romio \
        --disable-spawn --disable-rma --disable-part --disable-perftest --disable-ft-tests \
        --disable-checkerrors --disable-collalgo-tests) > "$BUILD/configure.log" 2>&1 \
        || { tail -n 20 "$BUILD/configure.log"; die "configure failed (log: $BUILD/configure.log)"; }
fi
compat="-include $here/ompi-compat.h"
make -k -j"$MAKE_JOBS" -C "$BUILD/dtpools" CPPFLAGS="$compat" > "$BUILD/make.log" 2>&1
make -k -j"$MAKE_JOBS" -C "$BUILD/coll" CPPFLAGS="$compat" >> "$BUILD/make.log" 2>&1
echo "mpich: configured and built in $(( $(date +%s) - t_build ))s ($BUILD)"
[ -f "$BUILD/coll/testlist" ] || die "no $BUILD/coll/testlist"

# One run of a built test under the current default selection with offload's
# verbose output: offload must be the component that ran.
probe=$(cd "$BUILD/coll" && timeout -k 10 "$TEST_TIMEOUT" $MPIRUN $MPIRUN_ARGS -np 2 $COMMON_ARGS \
    $OFFLOAD_ARGS --mca coll_offload_verbose 1 ./allred -count=10 2>&1 </dev/null)
if ! echo "$probe" | grep -q 'coll:offload: allreduce: [1-9][0-9]* offloaded'; then
    echo "$probe" | tail -n 10
    die "coll/offload did not run allred's allreduces (is the component installed and selected?)"
fi
echo "mpich: offload selected: $(echo "$probe" | grep 'coll:offload: allreduce' | head -1)"

# run_one PROG NP TIMEOUT SELECTION_ARGS ENVS ARGS LOG: one run; prints its outcome:
# pass, fail (exit status or output not as runtests wants it), timeout, signal.
run_one() {
    local prog=$1 np=$2 t=$3 sel=$4 envs=$5 args=$6 log=$7 rc
    # shellcheck disable=SC2086  # the argument strings are meant to be split
    (cd "$BUILD/coll" && env $envs timeout -k 10 "$t" $MPIRUN $MPIRUN_ARGS -np "$np" $COMMON_ARGS \
        $sel ./"$prog" $args) > "$log" 2>&1 </dev/null
    rc=$?
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        echo timeout
    elif [ "$rc" -gt 128 ]; then
        echo "signal $((rc - 128))"
    elif [ "$rc" != 0 ]; then
        echo "fail (exit $rc)"
    elif ! grep -Eq '^\s*No [Ee]rrors\s*$' "$log"; then
        echo "fail (no \"No Errors\")"
    elif grep -Evq '^\s*(No [Ee]rrors|Test Passed)\s*$' "$log"; then
        echo "fail (other output)"
    else
        echo pass
    fi
}

# run_pair: the entry (prog, run_np, t, args, ...) with offload and with stock, in
# alternating order; sets off and stk.
run_pair() {
    local base
    base="$LOGDIR/$(printf '%03d' "$i")-$prog-np$run_np"
    if [ $((i % 2)) = 1 ]; then
        off=$(run_one "$prog" "$run_np" "$t" "$OFFLOAD_ARGS $mpiargs" "$envs" "$args" "$base.offload.log")
        stk=$(run_one "$prog" "$run_np" "$t" "$STOCK_ARGS $mpiargs" "$envs" "$args" "$base.stock.log")
    else
        stk=$(run_one "$prog" "$run_np" "$t" "$STOCK_ARGS $mpiargs" "$envs" "$args" "$base.stock.log")
        off=$(run_one "$prog" "$run_np" "$t" "$OFFLOAD_ARGS $mpiargs" "$envs" "$args" "$base.offload.log")
    fi
}

# env_says LOG: the first line of LOG that says the launcher could not start the job
# (nothing when none does).
env_says() {
    local launch='not enough slots|was unable to launch|could not access or execute'
    grep -aEm1 "$launch|lost communication with a remote daemon|(ORTE|PRTE) has lost" "$1"
}

passed=0
failed=0
n_skip=0
n_env=0
n_both=0
n_bothfail=0
n_onlyoff=0
n_onlystock=0
rows=""          # markdown rows
skips=""         # skipped entries, one a line
declare -A seen  # program+args+np -> the entry that runs it
t_run=$(date +%s)
i=0
while read -r line; do
    line=${line%%#*}
    set -- $line
    [ $# -ge 1 ] || continue
    prog=$1
    np=${2:-2}
    shift $(( $# >= 2 ? 2 : 1 ))
    args=""
    envs=""
    mpiargs=""
    attrs=""
    tlimit=""
    unsupported=""
    for kv in "$@"; do
        case $kv in
            arg=*) args="$args ${kv#arg=}" ;;
            env=*) envs="$envs ${kv#env=}" ;;
            mpiexecarg=*) mpiargs="$mpiargs ${kv#mpiexecarg=}" ;;
            timeLimit=*) tlimit=${kv#timeLimit=}; attrs="$attrs $kv" ;;
            xfail=*|strict=*|mem=*|mpiversion=*|mpix=*|lock=*) attrs="$attrs $kv" ;;
            *) unsupported="$unsupported $kv" ;;
        esac
    done
    args=${args# }
    attrs=${attrs# }
    [ -n "$ONLY" ] && ! [[ $prog =~ $ONLY ]] && continue
    i=$((i + 1))
    run_np=$np
    [ "$np" -gt "$MAX_NP" ] && run_np=$MAX_NP
    label="$prog np=$np${args:+ $args}"
    [ "$run_np" != "$np" ] && label="$prog np=$np->$run_np${args:+ $args}"
    key="$prog|$run_np|$args|$envs|$mpiargs"
    reason=""
    if [ ! -x "$BUILD/coll/$prog" ]; then
        reason="not built against Open MPI ${ompi_version:-?}"
    elif [ -n "$unsupported" ]; then
        reason="unsupported testlist attribute:$unsupported"
    elif [ -n "${seen[$key]:-}" ]; then
        reason="np $np clipped to $run_np: the same run as '${seen[$key]}'"
    fi
    if [ -n "$reason" ]; then
        printf '%-8s %-44s %s\n' '[skip]' "$label" "$reason"
        skips="$skips$label: $reason"$'\n'
        rows="$rows| $prog | $np | ${args:-} | skipped | skipped | skipped: $reason |"$'\n'
        n_skip=$((n_skip + 1))
        continue
    fi
    seen[$key]=$label
    t=$TEST_TIMEOUT
    [ -n "$tlimit" ] && [ "$tlimit" -lt "$t" ] && t=$tlimit
    t0=$(date +%s)
    run_pair
    # A clipped entry whose program refuses that size with both selections (some
    # need a divisor of their data): once more at np 2, unless that run is listed.
    if [ "$run_np" != "$np" ] && [ "$off" != pass ] && [ "$stk" != pass ] && [ "$run_np" -gt 2 ] \
        && [ -z "${seen[$prog|2|$args|$envs|$mpiargs]:-}" ]; then
        run_np=2
        label="$prog np=$np->2${args:+ $args}"
        seen[$prog|2|$args|$envs|$mpiargs]=$label
        run_pair
    fi
    secs=$(( $(date +%s) - t0 ))
    base="$LOGDIR/$(printf '%03d' "$i")-$prog-np$run_np"
    if [ "$off" = pass ] && [ "$stk" = pass ]; then
        verdict="ok"; mark="[ ok ]"; passed=$((passed + 1)); n_both=$((n_both + 1))
    elif [ "$off" = pass ]; then
        verdict="ok: passes only with offload"; mark="[ ok ]"; passed=$((passed + 1))
        n_onlyoff=$((n_onlyoff + 1))
    elif [ "$stk" = pass ]; then
        verdict="FAIL: fails only with offload"; mark="[FAIL]"; failed=$((failed + 1))
        n_onlystock=$((n_onlystock + 1))
    elif [ "$run_np" != "$np" ]; then
        # Fewer ranks than the testlist asks for, and stock fails too: the program
        # does not run at this size (some need a divisor of their data, or more ranks).
        verdict="skipped: fails with both at np $run_np (the testlist asks for $np)"
        mark="[skip]"; n_skip=$((n_skip + 1))
        skips="$skips$label: fails with both at np $run_np (the testlist asks for $np)"$'\n'
    elif [ "$off" = "fail (other output)" ] && [ "$stk" = "fail (other output)" ]; then
        # Both said " No Errors" and exited 0: the rest was printed by the environment.
        extra=$(grep -aEv '^\s*(No [Ee]rrors|Test Passed)\s*$' "$base.offload.log" | tr -d '\000' \
            | grep -m1 . | cut -c1-200)
        verdict="FAIL: the environment: both selections passed but printed more ($extra)"
        mark="[FAIL]"; failed=$((failed + 1)); n_env=$((n_env + 1))
    elif why=$(env_says "$base.offload.log") && env_says "$base.stock.log" >/dev/null; then
        verdict="FAIL: the environment: the launcher did not run the job ($(echo "$why" \
            | tr -d '\000' | cut -c1-120))"
        mark="[FAIL]"; failed=$((failed + 1)); n_env=$((n_env + 1))
    else
        # The test's or Open MPI's own failure at the size the testlist asks for.
        verdict="skipped: fails with both (offload: $off, stock: $stk), not offload's"
        mark="[skip]"; n_skip=$((n_skip + 1)); n_bothfail=$((n_bothfail + 1))
        skips="$skips$label: fails with both (offload: $off, stock: $stk)"$'\n'
    fi
    printf '%-8s %-44s offload: %-12s stock: %-12s (%ss)%s\n' "$mark" "$label" "$off" "$stk" \
        "$secs" "${attrs:+  [$attrs]}"
    case $verdict in
        FAIL:*the\ environment*) echo "         ${verdict#FAIL: }" ;;
    esac
    if [ "$off" != pass ] || [ "$stk" != pass ]; then
        for s in offload stock; do
            [ "$([ $s = offload ] && echo "$off" || echo "$stk")" = pass ] && continue
            echo "         $s log: $base.$s.log"
            grep -aEv '^\s*No [Ee]rrors\s*$' "$base.$s.log" | tr -d '\000' | head -n 6 \
                | cut -c1-160 | sed 's/^/           /'
        done
    fi
    rows="$rows| $prog | $np$([ "$run_np" != "$np" ] && echo " → $run_np") | ${args:-} | $off | $stk | $verdict |"$'\n'
done < "$BUILD/coll/testlist"
run_secs=$(( $(date +%s) - t_run ))

summary="$((passed + failed + n_bothfail)) tests run ($n_both pass with both, $n_onlyoff only with"
summary="$summary offload, $n_bothfail fail with both (skipped), $n_onlystock fail only with offload,"
summary="$summary $n_env fail with both for the environment), $n_skip skipped;"
summary="$summary ${run_secs}s of runs"
echo
echo "MPICH ${mpich_version:-?} coll tests, Open MPI ${ompi_version:-?}: $summary"
if [ -n "$skips" ]; then
    echo "skipped:"
    printf '%s' "$skips" | sed 's/^/  /'
fi
if [ -n "$MARKDOWN" ]; then
    {
        echo "MPICH ${mpich_version:-?} \`test/mpi/coll\` against Open MPI ${ompi_version:-?}" \
             "(np clipped to $MAX_NP, ${TEST_TIMEOUT} s per run, \`$COMMON_ARGS\` for both):" \
             "$summary."
        echo
        echo "| test | np | arguments | offload | stock | verdict |"
        echo "|---|---|---|---|---|---|"
        printf '%s' "$rows"
    } > "$MARKDOWN"
    echo "mpich: table written to $MARKDOWN"
fi
[ "$failed" = 0 ] && [ -n "$made_build" ] && rm -rf "$BUILD"
echo "$passed passed, $failed failed, $n_skip skipped"
[ "$failed" = 0 ]
