#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# The OSU micro-benchmarks (7.4) under coll/offload and under Open MPI's own components,
# side by side: a second opinion on bench/coll_lat's numbers from a program this project
# did not write. Builds OSU from a source tree given, then runs osu_allreduce,
# osu_reduce, osu_bcast, osu_barrier, osu_iallreduce and osu_ibcast with their default
# options (the reductions also with -T mpi_int and -T mpi_float) at np 2 and 4, under the
# selections of bench/compare.py:
#   offload  --mca coll offload,tuned,libnbc,basic,self,inter
#   tuned    --mca coll tuned,libnbc,basic,self,inter
# R times each, interleaved (every benchmark runs under both before the next; which of
# the two goes first alternates from one repetition to the next), so a slow phase of
# the machine hits both alike. Prints the CPU model, then per benchmark a table of the
# median latency of each selection and tuned/offload, the median of each repetition's own
# ratio (above 1: offload is faster), then
# the worst such ratio and where it is. For the nonblocking benchmarks the latency is
# OSU's "Pure Comm." column (MPI_I<coll> + MPI_Wait without computation). An np above
# the number of cores runs with --oversubscribe and is marked so.
#
# Usage: contrib/osu-compare.sh OSU_SRC [options]
#   OSU_SRC          an OSU micro-benchmarks source tree (copied, never changed)
#   --build DIR      a copy of OSU_SRC is built in DIR/src, the runs' output kept in
#                    DIR/runs (both replaced; default /tmp/osu-build)
#   --rebuild        build again even if DIR holds a build of OSU_SRC
#   --np "2 4"       the numbers of ranks
#   --bench "osu_allreduce osu_bcast"
#                    the benchmarks, any of OSU's blocking and nonblocking collectives
#                    (default: osu_allreduce osu_reduce osu_bcast osu_barrier
#                    osu_iallreduce osu_ibcast)
#   --types "default mpi_int mpi_float"
#                    the reductions' -T values, "default" for none (OSU's MPI_CHAR); the
#                    other benchmarks run once, with their default type
#   --reps R         runs of each benchmark under each selection (default 3)
#   --iters N        passed as OSU's -i (default: none, OSU's own iteration counts)
#   --out FILE       also write the report as markdown to FILE
# Environment: TEST_TIMEOUT (seconds per mpirun, default 600).
# Not in CI (it times things, and the OSU sources are not part of this repository).
# Exit status 1 if a build step or any run failed.
set -u

# The usage lines of the comment above; to stdout for --help, else to stderr.
usage() {
    if [ "$1" -eq 0 ]; then
        sed -n 's/^# \{0,1\}//; /^Usage:/,/^Environment/p' "$0" | sed '$d'
    else
        sed -n 's/^# \{0,1\}//; /^Usage:/,/^Environment/p' "$0" | sed '$d' >&2
    fi
    exit "$1"
}
die() {
    echo "osu-compare: $*" >&2
    exit 2
}
say() { echo "== $(date -u +%H:%M:%S) $*" >&2; }

[ $# -ge 1 ] || usage 2
case $1 in -h|--help) usage 0 ;; esac
src=$(cd "$1" 2>/dev/null && pwd) || die "$1: no such directory"
shift
build=/tmp/osu-build
nps="2 4"
benches="osu_allreduce osu_reduce osu_bcast osu_barrier osu_iallreduce osu_ibcast"
types="default mpi_int mpi_float"
reps=3
iters=""
out=""
rebuild=0
while [ $# -gt 0 ]; do
    case $1 in
        --build|--np|--bench|--types|--reps|--iters|--out)
            [ $# -ge 2 ] || die "$1 needs a value"
            case $1 in
                --build) build=$2 ;;
                --np) nps=$2 ;;
                --bench) benches=$2 ;;
                --types) types=$2 ;;
                --reps) reps=$2 ;;
                --iters) iters=$2 ;;
                --out) out=$2 ;;
            esac
            shift 2 ;;
        --rebuild) rebuild=1; shift ;;
        -h|--help) usage 0 ;;
        *) die "unknown option '$1' (--help lists them)" ;;
    esac
done
is_count() { case $1 in ''|*[!0-9]*|0*) return 1 ;; esac; }
is_count "$reps" || die "--reps wants a positive integer, not '$reps'"
[ -z "$iters" ] || is_count "$iters" || die "--iters wants a positive integer, not '$iters'"
[ -n "$nps" ] || die "--np is empty"
for np in $nps; do
    is_count "$np" || die "--np wants positive integers, not '$np'"
done
[ -n "$benches" ] || die "--bench is empty"
for bench in $benches; do
    case $bench in osu_*) ;; *) die "--bench: '$bench' is not an OSU benchmark name" ;; esac
done
for type in $types; do
    case $type in default|mpi_char|mpi_int|mpi_float) ;;
        *) die "--types: '$type' is none of default, mpi_char, mpi_int, mpi_float" ;;
    esac
done
[ -n "$types" ] || die "--types is empty"
[ -f "$src/c/mpi/collective/blocking/osu_allreduce.c" ] ||
    die "$src is not an OSU micro-benchmarks source tree (no c/mpi/collective/blocking)"
command -v mpicc > /dev/null 2>&1 || die "no mpicc on PATH"
mkdir -p "$build" || die "cannot make $build"
build=$(cd "$build" && pwd)
tmo=${TEST_TIMEOUT:-600}
osu=$build/src
runs=$build/runs

# The path of a benchmark's program in the build, empty if it has none.
bin_of() {
    for d in blocking non_blocking; do
        if [ -x "$osu/c/mpi/collective/$d/$1" ]; then
            echo "$osu/c/mpi/collective/$d/$1"
            return
        fi
    done
}

have_all() {
    for bench in $benches; do
        [ -n "$(bin_of "$bench")" ] || return 1
    done
}

# The version in a libtool ltmain.sh ("2.4.7" of VERSION="2.4.7 Debian-...").
ltmain_version() {
    sed -n 's/^VERSION="\{0,1\}\([0-9][0-9.a-z]*\).*/\1/p' "$1" | head -1
}

# A copy, not a build directory next to the tree: a tree configured in place refuses a
# second, out-of-tree configure, and autoreconf would change the user's tree.
build_osu() (
    log=$build/build.log
    : > "$log"
    rm -rf "$osu"
    say "copying $src to $osu"
    cp -a "$src" "$osu" || exit 1
    cd "$osu" || exit 1
    if [ -f Makefile ]; then
        make distclean >> "$log" 2>&1 || say "note: make distclean failed in the copy; going on"
    fi
    why=""
    if [ ! -x configure ]; then
        why="there is no configure"
    else
        lt=$(find . -maxdepth 2 -name ltmain.sh | head -1)
        have=""
        [ -n "$lt" ] && have=$(ltmain_version "$lt")
        sys=$(libtoolize --version 2>/dev/null | sed -n '1s/.* \([0-9][0-9.a-z]*\)$/\1/p')
        # A tarball's ltmain.sh from another libtool makes the build stop at the first
        # library ("Version mismatch error") once anything runs aclocal again.
        if [ -n "$have" ] && [ -n "$sys" ] && [ "$have" != "$sys" ]; then
            why="its ltmain.sh is libtool $have, the system's libtool is $sys"
        fi
    fi
    if [ -n "$why" ]; then
        say "autoreconf -fi ($why)"
        nice autoreconf -fi >> "$log" 2>&1 || { say "FAILED: autoreconf -fi (log: $log)"; exit 1; }
    fi
    say "configure CC=mpicc CXX=mpicxx"
    nice ./configure CC=mpicc CXX=mpicxx >> "$log" 2>&1 ||
        { say "FAILED: configure (log: $log)"; exit 1; }
    say "make -j2"
    nice make -j2 >> "$log" 2>&1 || { say "FAILED: make (log: $log)"; exit 1; }
    echo "$src" > "$build/built-from"
)

if [ "$rebuild" -eq 0 ] && [ "$(cat "$build/built-from" 2>/dev/null)" = "$src" ] && have_all; then
    say "reusing the build of $src in $osu (--rebuild to build again)"
else
    t0=$(date +%s)
    build_osu || exit 1
    say "built OSU in $(($(date +%s) - t0)) s (log: $build/build.log)"
fi
for bench in $benches; do
    [ -n "$(bin_of "$bench")" ] ||
        die "no $bench in $osu/c/mpi/collective/{blocking,non_blocking}"
done

sel_offload="offload,tuned,libnbc,basic,self,inter"
sel_tuned="tuned,libnbc,basic,self,inter"
as_root=""
[ "$(id -u)" -eq 0 ] && as_root=--allow-run-as-root
cores=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)
cpu=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo 2>/dev/null | head -1)
ompi=$(mpirun --version 2>/dev/null | sed -n 's/.*(Open MPI) *//p' | head -1)

types_of() {
    case $1 in
        *reduce*) echo "$types" ;;
        *) echo default ;;
    esac
}
crowded() { [ "$1" -gt "$cores" ]; }
np_label() {
    if crowded "$1"; then
        echo "np $1 (oversubscribed: $cores cores)"
    else
        echo "np $1"
    fi
}

# OSU's output on stdin, "SIZE LATENCY" lines out ("-" as SIZE without a size column).
# The latency column is found by its heading: "Pure Comm.(us)" in the nonblocking
# benchmarks' tables, else "Avg Latency(us)"; headings are separated by two or more
# spaces, as they contain one. Other '#' lines and non-numeric lines (the ranks' own
# messages) are skipped.
parse_osu() {
    awk '
    /^#/ {
        h = $0
        sub(/^#[ \t]*/, "", h)
        n = split(h, f, /[ \t][ \t]+/)
        c = 0
        for (i = 1; i <= n; i++) if (f[i] ~ /^Pure Comm/) c = i
        if (!c) for (i = 1; i <= n; i++) if (f[i] ~ /^Avg Latency/) c = i
        if (c) { col = c; sized = (f[1] == "Size") }
        next
    }
    col && NF >= col {
        for (i = 1; i <= NF; i++) if ($i !~ /^-?[0-9]+(\.[0-9]*)?$/) next
        print (sized ? $1 : "-"), $col
    }'
}

fails=0
run_one() { # np bench type selection rep
    f=$runs/$1.$2.$3.$4.$5
    list=$sel_tuned
    [ "$4" = offload ] && list=$sel_offload
    over=""
    crowded "$1" && over=--oversubscribe
    targs=""
    [ "$3" = default ] || targs="-T $3"
    [ -z "$iters" ] || targs="$targs -i $iters"
    t0=$(date +%s)
    # shellcheck disable=SC2086 # the optional arguments are words on purpose
    timeout "$tmo" mpirun $as_root -np "$1" $over --mca coll "$list" "$(bin_of "$2")" $targs \
        > "$f.out" 2> "$f.err"
    rc=$?
    parse_osu < "$f.out" > "$f.rows"
    n=$(wc -l < "$f.rows")
    sed "s/^/$4 $5 /" "$f.rows" >> "$runs/$1.$2.$3.dat"
    if [ "$rc" -ne 0 ] || [ "$n" -eq 0 ]; then
        why="exit $rc"
        [ "$rc" -eq 124 ] && why="timed out after $tmo s"
        [ "$rc" -eq 0 ] && why="no latency rows in its output"
        echo "$4, run $5: $why (output: $f.out, $f.err)" >> "$runs/$1.$2.$3.notes"
        say "np $1 run $5/$reps $2 $3 $4: FAILED, $why ($f.err)"
        fails=$((fails + 1))
    else
        say "np $1 run $5/$reps $2 $3 $4: $n rows, $(($(date +%s) - t0)) s"
    fi
}

rm -rf "$runs"
mkdir -p "$runs"
say "CPU: ${cpu:-unknown}, $cores cores; Open MPI ${ompi:-unknown}; runs in $runs"
rep=1
while [ "$rep" -le "$reps" ]; do
    order="offload tuned"
    [ $((rep % 2)) -eq 0 ] && order="tuned offload"
    for np in $nps; do
        for bench in $benches; do
            for type in $(types_of "$bench"); do
                for sel in $order; do
                    run_one "$np" "$bench" "$type" "$sel" "$rep"
                done
            done
        done
    done
    rep=$((rep + 1))
done

# One cell's .dat ("SELECTION REP SIZE LATENCY" lines): "SIZE OFFLOAD TUNED RATIO" rows,
# sizes in ascending order, n/a where a selection has no value. The latencies are medians
# over the runs; the ratio is the median of each repetition's own tuned/offload ratio, the
# two runs of a repetition having run one right after the other: a virtual machine's speed
# drifts over seconds (its vCPUs move between near and far host cores: a cache line's
# round trip between the two ranks took 120-140 ns in one phase and 400-550 in another,
# and every selection's time follows it), so a ratio of medians taken from different
# phases reports the phases, not the components.
cell_rows() {
    awk '
    function mid(a, k,    i, j, t) {
        for (i = 2; i <= k; i++)
            for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    function median(sel, s,    k, i, a) {
        k = cnt[sel, s]
        if (!k) return ""
        for (i = 1; i <= k; i++) a[i] = val[sel, s, i]
        return mid(a, k)
    }
    function paired(s,    k, r, a) {
        k = 0
        for (r = 1; r <= maxrep; r++)
            if ((("offload", s, r) in byrep) && (("tuned", s, r) in byrep) \
                && byrep["offload", s, r] > 0)
                a[++k] = byrep["tuned", s, r] / byrep["offload", s, r]
        return k ? mid(a, k) : ""
    }
    {
        val[$1, $3, ++cnt[$1, $3]] = $4 + 0
        byrep[$1, $3, $2] = $4 + 0
        if ($2 + 0 > maxrep) maxrep = $2 + 0
        if (!($3 in seen)) { seen[$3] = 1; sizes[++ns] = $3 }
    }
    END {
        for (i = 2; i <= ns; i++)
            for (j = i; j > 1 && sizes[j - 1] + 0 > sizes[j] + 0; j--) {
                t = sizes[j]; sizes[j] = sizes[j - 1]; sizes[j - 1] = t
            }
        for (i = 1; i <= ns; i++) {
            o = median("offload", sizes[i]); u = median("tuned", sizes[i])
            p = paired(sizes[i])
            r = p != "" ? sprintf("%.2f", p) : "n/a"
            printf "%s %s %s %s\n", sizes[i], o == "" ? "n/a" : sprintf("%.2f", o),
                u == "" ? "n/a" : sprintf("%.2f", u), r
        }
    }' "$1"
}

# The report, as text or as markdown; also sets the worst cell in $runs/worst.
report() {
    style=$1
    each="median of $reps interleaved runs"
    [ "$reps" -eq 1 ] && each="a single run"
    : > "$runs/worst"
    if [ "$style" = md ]; then
        echo "# OSU micro-benchmarks: offload vs tuned"
        echo
        echo "CPU: ${cpu:-unknown}, $cores cores; Open MPI ${ompi:-unknown}; OSU from \`$src\`."
        echo "Latency in µs, $each per selection; tuned/offload: the median of each" \
            "repetition's own ratio (its two runs back to back), above 1: offload is" \
            "faster. Nonblocking benchmarks: OSU's Pure Comm. column."
        echo
        echo "- \`offload\`: \`--mca coll $sel_offload\`"
        echo "- \`tuned\`: \`--mca coll $sel_tuned\`"
    else
        echo "CPU: ${cpu:-unknown} ($cores cores), Open MPI ${ompi:-unknown}"
        echo "OSU micro-benchmarks from $src, built in $osu"
        echo "offload: --mca coll $sel_offload"
        echo "tuned:   --mca coll $sel_tuned"
        echo "latency in µs, $each per selection; tuned/offload: median of the"
        echo "repetitions' own ratios (each pair back to back), above 1: offload faster;"
        echo "nonblocking benchmarks: OSU's Pure Comm. column"
    fi
    for np in $nps; do
        for bench in $benches; do
            for type in $(types_of "$bench"); do
                cell=$np.$bench.$type
                dtype=$(sed -n 's/^# Datatype: *\([A-Za-z_]*\).*/\1/p' \
                    "$runs/$cell".*.out 2>/dev/null | head -1)
                name=$bench
                [ "$type" = default ] || name="$name -T $type"
                title=$name
                [ -n "$dtype" ] && title="$title ($dtype)"
                title="$title, $(np_label "$np")"
                echo
                rows=$(cell_rows "$runs/$cell.dat" 2>/dev/null)
                [ -n "$rows" ] || rows="n/a n/a n/a n/a"
                if [ "$style" = md ]; then
                    echo "### $title"
                    echo
                    echo "| size | offload µs | tuned µs | tuned/offload |"
                    echo "|-----:|-----------:|---------:|--------------:|"
                    echo "$rows" | awk '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }'
                else
                    echo "$title"
                    echo "      size   offload µs     tuned µs  tuned/offload"
                    echo "$rows" | awk '{ printf "%10s %12s %12s %14s\n", $1, $2, $3, $4 }'
                fi
                echo "$rows" | awk -v name="$name" -v np="$(np_label "$np")" '$4 != "n/a" {
                    printf "%s %s, %s%s\n", $4, name, $1 == "-" ? "" : $1 " B, ", np }' \
                    >> "$runs/worst"
                if [ -f "$runs/$cell.notes" ]; then
                    while read -r note; do
                        if [ "$style" = md ]; then
                            echo
                            echo "*$note*"
                        else
                            echo "  FAILED: $note"
                        fi
                    done < "$runs/$cell.notes"
                fi
            done
        done
    done
    worst=$(sort -n "$runs/worst" | head -1)
    echo
    if [ -z "$worst" ]; then
        echo "worst tuned/offload ratio: none (no cell has both latencies)"
    elif [ "$style" = md ]; then
        echo "**Worst cell**: tuned/offload = ${worst%% *} (${worst#* }; below 1: offload is" \
            "slower there)"
    else
        echo "worst tuned/offload ratio: ${worst%% *} (${worst#* }; below 1: offload slower there)"
    fi
}

report text
if [ -n "$out" ]; then
    report md > "$out" && say "wrote $out"
fi
[ "$fails" -eq 0 ] || { say "$fails runs failed"; exit 1; }
