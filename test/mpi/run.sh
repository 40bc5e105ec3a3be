#!/bin/bash
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# Runs the MPI-level tests of coll/offload under mpirun and sums their results.
#
# Usage: run.sh [BINDIR]
#   BINDIR          directory holding t_coll, t_fallback, t_leak, t_fault, t_nb, t_nb_mt,
#                   t_net, t_wrap, t_corrupt, t_stress, t_setup_fail, t_shm,
#                   t_mismatch, t_repsum, t_finalize, t_rules, t_device, t_large (default: this
#                   script's directory, i.e. run it from the build tree); the check
#                   command and its probe (coll-offload-check) are taken from
#                   BINDIR/../../bench, the build tree's bench/
# Environment:
#   MPIRUN          launcher (default: mpirun)
#   MPIRUN_ARGS     launcher options for every run (default: --oversubscribe)
#   COLL_SELECTION  extra mpirun arguments selecting components, e.g.
#                   "--mca coll tuned,libnbc,basic,self,inter --mca op ^avx";
#                   empty (default) means Open MPI's priority-based selection
#   EXPECT_OFFLOAD  1: pass --expect-offload (assert the MPI_T counters)
#   TEST_TIMEOUT    seconds per run (default: 600)
#   LOGDIR          where each run's output is kept (default: a new temp dir)
#   FINALIZE_RUNS   jobs of t_finalize in a row, each one check (default: 120 at
#                   np 2, 0.3-0.7 s each); FINALIZE_NP4_RUNS more at np 4
#                   (oversubscribed; default 0). None starts after
#                   FINALIZE_SECONDS (0: no limit; default 80, or 0 when
#                   FINALIZE_RUNS is given)
#   SUITE           node (default): everything below; quick: a shorter pass;
#                   finalize: the t_finalize jobs only; cluster, cluster-loss:
#                   across hosts (run-cluster.sh)
#
# Prints one line per run and finally exactly "N passed, M failed, K skipped"
# (sums over all runs of their "PROG: N passed, M failed, K skipped" lines; a run
# that crashes, times out or prints no summary counts as one failure; a run left
# out, e.g. one that needs EXPECT_OFFLOAD=1, as one skipped, with a [skip] line
# saying why).  Exit status is nonzero if anything failed.
set -u

BINDIR=${1:-$(cd "$(dirname "$0")" && pwd)}
MPIRUN=${MPIRUN:-mpirun}
MPIRUN_ARGS=${MPIRUN_ARGS:---oversubscribe}
COLL_SELECTION=${COLL_SELECTION:-}
EXPECT_OFFLOAD=${EXPECT_OFFLOAD:-0}
TEST_TIMEOUT=${TEST_TIMEOUT:-600}
LOGDIR=${LOGDIR:-$(mktemp -d "${TMPDIR:-/tmp}/coll_offload_mpi_tests.XXXXXX")}
mkdir -p "$LOGDIR"

# Limits t_fallback's size cases are written for (ignored if the component is absent).
LIMIT_ARGS="--mca coll_offload_allreduce_max_bytes 1024"
LIMIT_ARGS="$LIMIT_ARGS --mca coll_offload_reduce_max_bytes 1024"
LIMIT_ARGS="$LIMIT_ARGS --mca coll_offload_bcast_max_bytes 1024"

# Open MPI refuses to run as root unless told; containers and CI often are root.
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
    export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
fi

expect=""
[ "$EXPECT_OFFLOAD" = 1 ] && expect="--expect-offload"
# The Open MPI release under test (its major number), where behaviours differ.
ompi_major=$(ompi_info --version 2>/dev/null | sed -n 's/^Open MPI v\([0-9]*\).*/\1/p' | head -1)

# Persistent collectives run on the NIC only where their starts may be matched by
# order (MPI-4 lets ranks start them in any order; the component's default hands
# them to the layer below). Every program here starts them in one order on all
# ranks, so the suite asserts it, to test the NIC's persistent path; the default
# is run by the "persistent starts in any order" part below.
export OMPI_MCA_coll_offload_persistent_ordered=${OMPI_MCA_coll_offload_persistent_ordered:-1}
ANY_ORDER="--mca coll_offload_persistent_ordered 0"
# Most runs here put more ranks than cores on the node, where the default hands
# reduces and bcasts of up to coll_offload_crowded_max bytes to the layer below;
# the suite tests the NIC's paths there, and the default in the "crowded" part.
export OMPI_MCA_coll_offload_crowded_max=${OMPI_MCA_coll_offload_crowded_max:--1}
CROWDED="--mca coll_offload_crowded_max 256"

for prog in t_coll t_fallback t_leak t_fault t_nb t_nb_mt t_net t_wrap t_corrupt t_stress \
            t_setup_fail t_shm t_mismatch t_repsum t_finalize t_rules t_device t_large; do
    if [ ! -x "$BINDIR/$prog" ]; then
        echo "run.sh: $BINDIR/$prog not found or not executable (build first, or pass BINDIR)" >&2
        echo "0 passed, 1 failed"
        exit 1
    fi
done

total_pass=0
total_fail=0
total_skip=0
start_all=$(date +%s)

# logtext LOG: LOG's text with every NUL byte made a line break. Open MPI 5's launcher
# (PRRTE) ends each help message it relays with a NUL, so the next line a process
# prints, or the next message's line of dashes, starts after one; read as a line
# break, every line starts where its writer started it.
logtext() {
    tr '\000' '\n' <"$1"
}

# counts LOG PROG: "LINES PASSED FAILED SKIPPED", summed over LOG's summary lines
# "PROG: N passed, M failed[, K skipped]" (one from rank 0, or one from each rank
# that finishes alone).
counts() {
    logtext "$1" | grep -aE "^$2: [0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?\$" \
        | sed -E 's/^[^:]*: ([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$/\1 \2 \4/' \
        | awk '{ n++; p += $1; f += $2; s += $3 } END { print n + 0, p + 0, f + 0, s + 0 }'
}

# ", K skipped" when K is not 0, for the lines of single runs.
skipped() {
    [ "$1" = 0 ] || printf ', %s skipped' "$1"
}

# skip_begin WHY ... skip_end: the runs between them are not made, each counted as
# one skipped (run, run_inject, run_kill), and one [skip] line says how many and why.
SKIP_WHY=""
skip_begin() {
    SKIP_WHY=$1
    skip_at=$total_skip
}
skip_end() {
    echo "[skip]   $((total_skip - skip_at)) runs: $SKIP_WHY"
    SKIP_WHY=""
}

# skip_now: in a skip_begin block, counts this run as skipped (status 0: skip it).
skip_now() {
    [ -n "$SKIP_WHY" ] || return 1
    total_skip=$((total_skip + 1))
}

# The last line of a suite, and its status.
summary() {
    echo "total time $(( $(date +%s) - start_all ))s"
    echo "$total_pass passed, $total_fail failed, $total_skip skipped"
    [ "$total_fail" -eq 0 ]
}

# help_says LOG PROG: every "PROG: expect ..." line in LOG (t_expect_help, t_common.h) is
# met by a help message that mpirun printed there; prints the ones that are not. A message
# is what stands between two lines of dashes; its "call:", "communicator: NAME (cid N)"
# and "this rank:" lines, and "ranks A and B" in its text, are what the keys compare.
# The launcher relays the processes' output and messages as they come: a message may be
# shown twice, or after the program's next lines (and Open MPI 5's ends in a NUL,
# logtext); a program's own line is read as one wherever it falls. Every line of dashes
# ends what came before it, so one message cut short (Open MPI 4.1's launcher sometimes
# cuts a message mid-line with the next one's dashes; helps_lost counts it) or a line
# between two messages cannot make the next messages be read as the gaps between them.
help_says() {
    # (on Open MPI 4.1 each rank prints a failed call's message itself: its first line
    # starts with the "[host:pid] " of opal_output)
    logtext "$1" | awk -v prog="$2" '
    function close_message() {
        if (body != "") {
            n++
            text[n] = body; rank[n] = r; comm[n] = c; call[n] = k; pa[n] = a; pb[n] = b
        }
        body = ""; r = c = k = ""; a = b = -1
    }
    index($0, prog ": ") == 1 {
        if (index($0, prog ": expect ") == 1) { want[substr($0, length(prog) + 10)] = 1 }
        next
    }
    /--------------------+$/ {
        cut = $0
        sub(/-+$/, "", cut)
        sub(/^\[[^]]*\] $/, "", cut)
        if (cut != "") {
            # a message cut short: not a message
            body = ""
        }
        close_message()
        next
    }
    {
        body = body " " $0
        if ($0 ~ /^  this rank: +[0-9]+$/) { r = $NF }
        if ($0 ~ /^  call: +/) { k = $NF }
        if ($0 ~ /^  communicator: .* \(cid [0-9]+\)$/) {
            c = $0
            sub(/^  communicator: /, "", c)
            sub(/ \(cid [0-9]+\)$/, "", c)
        }
        if (match($0, /ranks [0-9]+ and [0-9]+/)) {
            split(substr($0, RSTART, RLENGTH), w, " ")
            a = w[2]; b = w[4]
        }
        next
    }
    END {
        bad = 0
        for (e in want) {
            nw = split(e, w, " ")
            delete key
            says = ""
            for (i = 1; i <= nw; i++) {
                if (w[i] == "says") {
                    for (j = i + 1; j <= nw; j++) { says = says (j > i + 1 ? " " : "") w[j] }
                    break
                }
                if (w[i] == "order") { key["order"] = 1; continue }
                key[w[i]] = w[i + 1]
                i++
            }
            met = 0
            for (m = 1; m <= n && !met; m++) {
                met = ("rank" in key ? rank[m] == key["rank"] : 1) \
                      && ("comm" in key ? comm[m] == key["comm"] : 1) \
                      && ("call" in key ? call[m] == key["call"] : 1) \
                      && ("with" in key ? pa[m] != pb[m] \
                                          && (pa[m] == key["with"] || pb[m] == key["with"]) : 1) \
                      && (says == "" || index(text[m], says) > 0)
            }
            for (m = 1; met && ("order" in key) && m <= n; m++) {
                if (comm[m] == key["comm"] && index(text[m], "argument mismatch") > 0 \
                    && index(text[m], "MPI-4.0 section 6.12") == 0) {
                    met = 0
                }
            }
            if (!met) {
                print "no message: " e
                bad++
            }
        }
        exit (bad > 0)
    }'
}

# helps_lost LOG: how many help messages the launcher did not show in LOG: Open MPI
# 4.1's lost ones ("ORTE_ERROR_LOG: ... show_help.c", one line each), those it cut
# short (a line of text that the next message's dashes end), and those shown
# only as a count ("N more processes have sent help message FILE / TOPIC", PMIx's
# aggregation, which keys on the file and topic alone and so folds different ranks'
# and communicators' messages into one).
helps_lost() {
    logtext "$1" | awk '
        /ORTE_ERROR_LOG: .*show_help\.c/ { n++ }
        /--------------------+$/ {
            cut = $0
            sub(/-+$/, "", cut)
            sub(/^\[[^]]*\] $/, "", cut)
            if (cut != "") { n++ }
        }
        match($0, /^[0-9]+ more process(es)? ha(s|ve) sent help message help-coll-offload/) {
            n += $1
        }
        END { print n + 0 }'
}

# log_name BASE ARGS...: sets RUN_LOG to a log path in LOGDIR for BASE and the
# program's ARGS that no run before in this suite used (.2, .3, ... when it was taken).
declare -A log_used
log_name() {
    local base=$1 tag name
    shift
    tag=$(printf '%s' "$*" | sed -E 's/(^| )--?/ /g; s/[^A-Za-z0-9._-]+/_/g; s/^_+|_+$//g' \
        | cut -c1-60)
    name="$base${tag:+.$tag}"
    log_used[$name]=$(( ${log_used[$name]:-0} + 1 ))
    [ "${log_used[$name]}" = 1 ] || name="$name.${log_used[$name]}"
    RUN_LOG="$LOGDIR/$name.log"
}

# run NAME NP EXTRA_MPIRUN_ARGS PROGRAM_ARGS...: SUMMARIES=N when N ranks each
# print their own summary line (they finish alone; default 1: rank 0's). With SAYS=1,
# one check more: the help messages the program expects (help_says), every one shown
# in full (orte_base_help_aggregate=0, opal_base_help_aggregate=0). Open MPI 4.1's
# launcher loses some help messages that ranks send at about the same time, and says so
# ("ORTE_ERROR_LOG: ... show_help.c", once per message lost); one that aggregates shows
# some only as a count (helps_lost): a run whose own checks all passed and whose unmet
# expectations are no more than the messages the launcher did not show is made again
# (3 tries); so in every try, the check is counted as skipped, never as passed.
# Each run writes its own log, RUN_LOG (named by the program, np and its arguments, and
# numbered when that name was used before), which callers may read after it.
run() {
    local prog=$1 np=$2 extra=$3
    shift 3
    local log t0 rc secs n p f s status want=${SUMMARIES:-1}
    local try unmet="" nunmet=0 lost=0 all=""
    log_name "$prog.np$np" "$@"
    log=$RUN_LOG
    skip_now && return
    # (Open MPI 4.1's launcher aggregates; from 5.0 on, each process asks PMIx to)
    [ "${SAYS:-0}" = 1 ] \
        && all="OMPI_MCA_orte_base_help_aggregate=0 OMPI_MCA_opal_base_help_aggregate=0"
    t0=$(date +%s)
    for try in 1 2 3; do
        # shellcheck disable=SC2086  # the argument strings are meant to be split
        env $all \
            timeout -k 15 "$TEST_TIMEOUT" $MPIRUN $MPIRUN_ARGS -np "$np" $COLL_SELECTION \
            $extra "$BINDIR/$prog" "$@" >"$log" 2>&1 </dev/null
        rc=$?
        [ "${SAYS:-0}" = 1 ] || break
        unmet=$(help_says "$log" "$prog") && break
        lost=$(helps_lost "$log")
        nunmet=$(printf '%s\n' "$unmet" | grep -c .)
        read -r n p f s <<EOF
$(counts "$log" "$prog")
EOF
        # (only a run that is right but for the messages the launcher lost)
        if [ "$nunmet" -gt "$lost" ] || [ "$rc" = 124 ] || [ "$rc" = 137 ] \
            || [ "$n" -lt "$want" ] || [ "$f" != 0 ]; then
            break
        fi
        echo "         (try $try: the launcher lost $lost help message(s); running again)"
    done
    secs=$(( $(date +%s) - t0 ))
    read -r n p f s <<EOF
$(counts "$log" "$prog")
EOF
    status=ok
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        status="TIMEOUT after ${TEST_TIMEOUT}s"
        f=$((f + 1))
    elif [ "$n" = 0 ]; then
        status="CRASHED (exit $rc, no summary line)"
        f=$((f + 1))
    elif [ "$n" -lt "$want" ]; then
        status="CRASHED (exit $rc, $n of $want summary lines)"
        f=$((f + 1))
    elif [ "$rc" != 0 ] && [ "$f" = 0 ] && [ "${ALLOW_RC:-0}" != 1 ]; then
        status="exit status $rc despite 0 failures"
        f=1
    elif [ "$f" != 0 ]; then
        status=FAILED
    fi
    # (the messages of a run that ended early are not judged: its failure is counted)
    case "${SAYS:-0} $status" in
    "1 TIMEOUT"* | "1 CRASHED"*) ;;
    "1 "*)
        if [ -z "$unmet" ]; then
            p=$((p + 1))
        elif [ "$nunmet" -le "$lost" ] && [ "$status" = ok ]; then
            s=$((s + 1))
            echo "         (the messages: skipped, the launcher lost some in every try)"
        else
            f=$((f + 1))
            [ "$status" != ok ] || status="mpirun did not show a message the program expects"
        fi
        ;;
    esac
    printf '%-8s %-38s %9s passed, %s failed%s  (%ss)\n' \
        "$([ "$status" = ok ] && echo '[ ok ]' || echo '[FAIL]')" "$prog np=$np $*" "$p" "$f" \
        "$(skipped "$s")" "$secs"
    if [ "$status" != ok ]; then
        echo "         $status; log: $log"
        { logtext "$log" | grep -aE "^FAIL|rror|ignal|Segmentation|Abort"; echo "$unmet"; } \
            | grep . | head -n 15 | sed 's/^/         /'
    fi
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    total_skip=$((total_skip + s))
}

# run_ends NAME NP EXTRA_MPIRUN_ARGS PROGRAM_ARGS...: a job that must end by
# itself (any exit status) well within the timeout: one check.
run_ends() {
    local prog=$1 np=$2 extra=$3
    shift 3
    local log="$LOGDIR/$prog.np$np.ends.log" t0 rc secs
    t0=$(date +%s)
    # shellcheck disable=SC2086
    timeout -k 15 "$TEST_TIMEOUT" $MPIRUN $MPIRUN_ARGS -np "$np" $COLL_SELECTION $extra \
        "$BINDIR/$prog" "$@" >"$log" 2>&1 </dev/null
    rc=$?
    secs=$(( $(date +%s) - t0 ))
    # (137 is also how mpirun reports a rank killed by SIGKILL: judge by time.)
    if [ "$rc" = 124 ] || [ "$secs" -ge "$TEST_TIMEOUT" ]; then
        printf '%-8s %-38s %9s passed, %s failed  (%ss)\n' '[FAIL]' "$prog np=$np $* (ends)" 0 1 \
            "$secs"
        echo "         still running after ${TEST_TIMEOUT}s: a hang; log: $log"
        total_fail=$((total_fail + 1))
    else
        printf '%-8s %-38s %9s passed, %s failed  (%ss, exit %s)\n' '[ ok ]' \
            "$prog np=$np $* (ends)" 1 0 "$secs" "$rc"
        total_pass=$((total_pass + 1))
    fi
}

# run_help NP: a malformed coll_offload_barrier_policy at component open. The
# warning comes from the component's help file (installed next to it), once per
# job through mpirun's aggregation of help messages, and the run still passes on
# the default policy: one check on top of t_coll's.
run_help() {
    local np=$1
    local log="$LOGDIR/t_coll.np$np.help.log" t0 rc secs n p f s shown missing
    t0=$(date +%s)
    # shellcheck disable=SC2086
    timeout -k 15 "$TEST_TIMEOUT" $MPIRUN $MPIRUN_ARGS -np "$np" $COLL_SELECTION \
        --mca coll_offload_barrier_policy bogus "$BINDIR/t_coll" --quick >"$log" 2>&1 </dev/null
    rc=$?
    secs=$(( $(date +%s) - t0 ))
    # (counts reads the log through logtext: Open MPI 5's launcher ends a help message
    # with a NUL byte)
    read -r n p f s <<EOF
$(counts "$log" t_coll)
EOF
    shown=$(grep -ac "coll_offload_barrier_policy could not be read" "$log")
    missing=$(grep -ac "couldn't open the help file" "$log")
    # Open MPI 4.1's and 5.0's launchers show a help message every rank sends once;
    # Open MPI 6's (PRRTE) shows some of the copies too: at least once, at most twice a rank.
    most=1
    [ "${ompi_major:-0}" -ge 6 ] && most=$((2 * np))
    if [ "$n" != 1 ] || [ "$rc" != 0 ] || [ "$shown" -lt 1 ] || [ "$shown" -gt "$most" ] \
        || [ "$missing" != 0 ]; then
        f=$((f + 1))
    else
        p=$((p + 1))
    fi
    printf '%-8s %-38s %9s passed, %s failed%s  (%ss)\n' \
        "$([ "$f" = 0 ] && echo '[ ok ]' || echo '[FAIL]')" "t_coll np=$np bad policy (help)" \
        "$p" "$f" "$(skipped "$s")" "$secs"
    if [ "$f" != 0 ]; then
        echo "         exit $rc, the help message shown $shown times (want 1..$most), help file" \
            "missing $missing times; log: $log"
    fi
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    total_skip=$((total_skip + s))
}

# run_check WANT PATTERN [VAR=VALUE...]: bench/coll-offload-check run with the
# variables added to its environment; WANT "selected" (exit 0 and the verdict "offload
# selected ... on 2 of 2 ranks") or "hidden" (exit 1, the verdict "offload NOT selected",
# and a "fix:" line). PATTERN must also be in its output. One check.
CHECK_DIR="$BINDIR/../../bench"
run_check() {
    local want=$1 pat=$2 log rc t0 secs why=""
    shift 2
    log="$LOGDIR/coll-offload-check.$want.$(echo "${1:-none}" | tr -c 'A-Za-z0-9_\n' '_').log"
    t0=$(date +%s)
    env COLL_OFFLOAD_CHECK_LIBEXEC="$CHECK_DIR" "$@" \
        timeout -k 15 "$TEST_TIMEOUT" sh "$CHECK_DIR/coll-offload-check" >"$log" 2>&1 </dev/null
    rc=$?
    secs=$(( $(date +%s) - t0 ))
    if [ "$want" = selected ]; then
        [ "$rc" = 0 ] || why="exit $rc, want 0"
        head -n 1 "$log" | grep -q "^coll-offload-check: offload selected: .* on 2 of 2 ranks" \
            || why="${why:+$why; }its first line is not the verdict 'offload selected'"
    else
        [ "$rc" = 1 ] || why="exit $rc, want 1"
        head -n 1 "$log" | grep -q "^coll-offload-check: offload NOT selected" \
            || why="${why:+$why; }its first line is not the verdict 'offload NOT selected'"
        grep -q "^    fix: " "$log" || why="${why:+$why; }no 'fix:' line"
    fi
    grep -q -- "$pat" "$log" || why="${why:+$why; }'$pat' not in its output"
    printf '%-8s %-38s %9s passed, %s failed  (%ss)\n' \
        "$([ -z "$why" ] && echo '[ ok ]' || echo '[FAIL]')" "coll-offload-check $want ${1:-}" \
        "$([ -z "$why" ] && echo 1 || echo 0)" "$([ -z "$why" ] && echo 0 || echo 1)" "$secs"
    if [ -n "$why" ]; then
        echo "         $why; log: $log"
        head -n 4 "$log" | sed 's/^/         /'
        total_fail=$((total_fail + 1))
    else
        total_pass=$((total_pass + 1))
    fi
}

# check_cmd: the check command says "selected" with nothing set (where the component is
# expected), and names the variable that hides it on purpose: the component path, a
# coll list without offload (about a second each).
check_cmd() {
    if [ ! -f "$CHECK_DIR/coll-offload-check" ] || [ ! -x "$CHECK_DIR/coll-offload-probe" ]; then
        total_skip=$((total_skip + 3))
        echo "[skip]   3 checks: coll-offload-check and its probe are not built in $CHECK_DIR"
        return
    fi
    if [ "$EXPECT_OFFLOAD" = 1 ]; then
        run_check selected "MPI_Allreduce on MPI_COMM_WORLD ran on coll/offload"
    else
        total_skip=$((total_skip + 1))
        echo "[skip]   1 check: coll-offload-check's 'selected' needs the component (EXPECT_OFFLOAD=1)"
    fi
    run_check hidden "set in the environment variable OMPI_MCA_mca_base_component_path" \
        OMPI_MCA_mca_base_component_path=/nonexistent
    run_check hidden "set in the environment variable OMPI_MCA_coll:" \
        OMPI_MCA_coll=tuned,basic,libnbc,self
}

# run_inject NP INJECT MODE: t_setup_fail with coll_offload_inject=INJECT (a step
# of the first set-up or staging failing on a rank), asserting MODE's outcome.
run_inject() {
    local np=$1 inject=$2 mode=$3
    local log="$LOGDIR/t_setup_fail.np$np.$mode.$(echo "$inject" | tr ':,' '__').log"
    local t0 rc secs n p f s
    skip_now && return
    t0=$(date +%s)
    # shellcheck disable=SC2086
    timeout -k 15 "$TEST_TIMEOUT" $MPIRUN $MPIRUN_ARGS -np "$np" $COLL_SELECTION \
        --mca coll_offload_inject "$inject" "$BINDIR/t_setup_fail" "$mode" >"$log" 2>&1 \
        </dev/null
    rc=$?
    secs=$(( $(date +%s) - t0 ))
    read -r n p f s <<EOF
$(counts "$log" t_setup_fail)
EOF
    if [ "$n" != 1 ] || [ "$rc" != 0 ] || ! grep -q "coll_offload_inject: " "$log"; then
        f=$((f + 1))
    fi
    printf '%-8s %-38s %9s passed, %s failed%s  (%ss)\n' \
        "$([ "$f" = 0 ] && echo '[ ok ]' || echo '[FAIL]')" "t_setup_fail np=$np $mode $inject" \
        "$p" "$f" "$(skipped "$s")" "$secs"
    if [ "$f" != 0 ]; then
        echo "         exit $rc (an injection must fire, and the run pass); log: $log"
        logtext "$log" | grep -aE "^FAIL|rror|ignal|inject" | head -n 15 | sed 's/^/         /'
    fi
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    total_skip=$((total_skip + s))
}

# run_kill NP INJECT [window]: a rank SIGKILLs itself during set-up
# (INJECT ends in :kill). The job must end by itself, the kill must have
# happened, and no segment name of the job's rank 0 may be left in /dev/shm;
# with "window" (the kill falls inside a named segment's window) the name may
# be left, and the next named set-up on the node must remove it. One check.
run_kill() {
    local np=$1 inject=$2 window=${3:-}
    local log="$LOGDIR/t_setup_fail.np$np.kill.$(echo "$inject" | tr ':,' '__').log" t0 rc secs pid0 why=""
    skip_now && return
    t0=$(date +%s)
    # shellcheck disable=SC2086
    timeout -k 15 60 $MPIRUN $MPIRUN_ARGS -np "$np" $COLL_SELECTION \
        --mca coll_offload_inject "$inject" "$BINDIR/t_setup_fail" kill >"$log" 2>&1 </dev/null
    rc=$?
    secs=$(( $(date +%s) - t0 ))
    pid0=$(logtext "$log" | sed -n 's/^t_setup_fail: pid0 \([0-9]*\)$/\1/p' | head -n 1)
    left() { ls /dev/shm 2>/dev/null | grep -c "^coll_offload\.$pid0\." ; }
    if [ "$rc" = 124 ] || [ "$secs" -ge 60 ]; then
        why="still running after 60 s: a hang"
    elif ! grep -q "(SIGKILL)" "$log" || [ -z "$pid0" ]; then
        why="no rank was killed (exit $rc)"
    elif [ -n "$window" ]; then
        # shellcheck disable=SC2086
        timeout -k 15 60 $MPIRUN $MPIRUN_ARGS -np 2 $COLL_SELECTION \
            --mca coll_offload_inject proc:1 "$BINDIR/t_setup_fail" named >>"$log" 2>&1 \
            </dev/null
        [ "$(left)" = 0 ] || why="the next named set-up left the killed job's name in /dev/shm"
    elif [ "$(left)" != 0 ]; then
        why="$(left) segment name(s) left in /dev/shm"
    fi
    printf '%-8s %-38s %9s passed, %s failed  (%ss, exit %s)\n' \
        "$([ -z "$why" ] && echo '[ ok ]' || echo '[FAIL]')" "t_setup_fail np=$np kill $inject" \
        "$([ -z "$why" ] && echo 1 || echo 0)" "$([ -z "$why" ] && echo 0 || echo 1)" "$secs" "$rc"
    if [ -n "$why" ]; then
        echo "         $why; log: $log"
        total_fail=$((total_fail + 1))
    else
        total_pass=$((total_pass + 1))
    fi
}

# run_finalize NP RUNS: t_finalize RUNS times in a row, each job a check: it
# passes when it exits 0 and prints "t_finalize: N passed, 0 failed". The job's
# first nonblocking call starts the progress agent just before MPI_Finalize, so
# the agent may first run while Open MPI shuts down (a crash then, after the
# summary, is a failure like any other). No job starts once FINALIZE_SECONDS
# have passed (a slow machine runs fewer). One line for all of them, and the
# first few failures' logs.
run_finalize() {
    local np=$1 runs=$2 budget=80 i rc log t0 secs p=0 f=0 shown=0 crashed=0 timedout=0 ran=0
    [ -n "${FINALIZE_RUNS:-}" ] && budget=0
    budget=${FINALIZE_SECONDS:-$budget}
    [ "$runs" -gt 0 ] || return 0
    t0=$(date +%s)
    for i in $(seq 1 "$runs"); do
        if [ "$budget" -gt 0 ] && [ $(( $(date +%s) - t0 )) -ge "$budget" ]; then
            break
        fi
        ran=$i
        log="$LOGDIR/t_finalize.np$np.$i.log"
        # shellcheck disable=SC2086
        timeout -k 5 60 $MPIRUN $MPIRUN_ARGS -np "$np" $COLL_SELECTION "$BINDIR/t_finalize" \
            >"$log" 2>&1 </dev/null
        rc=$?
        if [ "$rc" = 0 ] && logtext "$log" \
            | grep -qaE "^t_finalize: [0-9]+ passed, 0 failed(, [0-9]+ skipped)?\$"; then
            p=$((p + 1))
            rm -f "$log"
            continue
        fi
        f=$((f + 1))
        if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
            timedout=$((timedout + 1))
        elif [ "$rc" != 0 ]; then
            crashed=$((crashed + 1))
        fi
        if [ "$shown" -lt 3 ]; then
            shown=$((shown + 1))
            echo "         t_finalize np=$np run $i: exit $rc; log: $log"
            logtext "$log" | grep -aE "^FAIL|rror|ignal|Segmentation|Abort|core" | head -n 8 \
                | sed 's/^/           /'
        fi
    done
    secs=$(( $(date +%s) - t0 ))
    printf '%-8s %-38s %9s passed, %s failed  (%ss; %s exited nonzero, %s timed out)\n' \
        "$([ "$f" = 0 ] && echo '[ ok ]' || echo '[FAIL]')" "t_finalize np=$np x$ran" "$p" "$f" \
        "$secs" "$crashed" "$timedout"
    if [ "$ran" -lt "$runs" ]; then
        echo "         $ran of $runs jobs: no more started after ${budget}s (FINALIZE_SECONDS)"
    fi
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
}

echo "MPI tests: bin=$BINDIR mpirun='$MPIRUN $MPIRUN_ARGS' selection='$COLL_SELECTION'" \
     "expect_offload=$EXPECT_OFFLOAD logs=$LOGDIR"
case "${SUITE:-node}" in
cluster | cluster-loss)
    # Across hosts (run-cluster.sh): NP ranks placed by MPIRUN_ARGS. Under
    # packet loss (cluster-loss) the matrix only: everything is slow there.
    # shellcheck disable=SC2086
    run t_coll "$NP" "" --quick $expect
    if [ "$SUITE" = cluster ]; then
        run t_leak "$NP" ""
        # The node-aware set-up failing on one rank (an allocation): every rank
        # falls back alike, after a vote, and the answers stay right.
        # shellcheck disable=SC2086
        run t_coll "$NP" "--mca coll_offload_inject hier:1" --quick
        # Reproducible sums across nodes: exact in-process, and the same bytes as
        # one rank alone on this machine gives.
        # shellcheck disable=SC2086
        run t_repsum "$NP" "--mca coll_offload_repsum 1" world
        h=$(logtext "$RUN_LOG" | sed -n 's/^t_repsum: hash //p' | tail -n 1)
        # shellcheck disable=SC2086
        ref=$(timeout 120 mpirun -np 1 $COLL_SELECTION --mca coll_offload_repsum 1 \
              "$BINDIR/t_repsum" world 2>/dev/null | sed -n 's/^t_repsum: hash //p')
        if [ -n "$h" ] && [ "$h" = "$ref" ]; then
            echo "[ ok ]   t_repsum np=$NP across nodes: the same bytes as np=1 ($h)"
            total_pass=$((total_pass + 1))
        else
            echo "[FAIL]   t_repsum np=$NP across nodes: hash '$h', np=1 '$ref'"
            total_fail=$((total_fail + 1))
        fi
        # 8/16-bit sums wrap on the node-aware path too (the leaders' level runs the
        # layer below over the network; the nonblocking and persistent forms are the
        # layer below's with the op substituted), with stock op/avx in place.
        # shellcheck disable=SC2086
        COLL_SELECTION=$(echo "$COLL_SELECTION" | sed 's/--mca op \^avx//') \
            run t_wrap "$NP" "" --quick
        # The leaders' level on the libfabric NIC (provider sockets), from the first call:
        # with a power-of-two number of hosts (HOSTS) the small allreduces and barriers
        # are posted as native triggered operations, and again with them off (software
        # triggering, as on providers without FI_TRIGGER); otherwise software only.
        # (every size node-aware: t_net's 70000 elements must take the NIC too)
        ofi="--mca coll_offload_ofi 1 --mca coll_offload_ofi_after 0"
        ofi="$ofi --mca coll_offload_hier_allreduce_max_bytes 16777216"
        case "${HOSTS:-0}" in
        2 | 4 | 8 | 16)
            run t_net "$NP" "$ofi" --quick --expect-offload --expect-triggered
            run t_net "$NP" "$ofi --mca coll_offload_ofi_native 0" --quick --expect-offload
            ;;
        *)
            run t_net "$NP" "$ofi" --quick --expect-offload
            ;;
        esac
        # The whole correctness matrix with the leaders on the libfabric NIC: with a
        # power-of-two number of hosts what fits natively (small sums, products,
        # integer min/max/bitwise) as triggered operations and the rest
        # software-triggered, otherwise all software-triggered. The provider's
        # progress thread must not sleep between events (milliseconds each) for
        # this to be quick.
        run t_coll "$NP" "$ofi -x FI_SOCKETS_PE_WAITTIME=0" --quick --stress-iters 200
        # A rank SIGKILLed on the last host before a collective: without
        # --enable-recovery Open MPI ends the whole job; it must not hang.
        TEST_TIMEOUT=60 run_ends t_fault "$NP" "" kill
    fi
    summary
    exit
    ;;
esac
# Jobs that end right after their first nonblocking and persistent calls.
# SUITE=finalize runs only these, e.g. FINALIZE_RUNS=1000 SUITE=finalize run.sh
# (all 1000: no time limit unless FINALIZE_SECONDS is set).
finalize_stress() {
    run_finalize 2 "${FINALIZE_RUNS:-120}"
    run_finalize 4 "${FINALIZE_NP4_RUNS:-0}"
}
if [ "${SUITE:-node}" = finalize ]; then
    finalize_stress
    summary
    exit
fi
if [ "${SUITE:-node}" = quick ]; then
    # A shorter pass over the same programs (another Open MPI version's leg in CI).
    for np in 1 2 4; do
        # shellcheck disable=SC2086
        run t_coll "$np" "" --quick $expect
    done
    # shellcheck disable=SC2086
    run t_coll 8 "" --quick $expect
    for np in 2 5 8; do
        # shellcheck disable=SC2086
        COLL_SELECTION=$(echo "$COLL_SELECTION" | sed 's/--mca op \^avx//') \
            run t_wrap "$np" "" --quick $expect
    done
    # shellcheck disable=SC2086
    run t_fallback 4 "$LIMIT_ARGS" $expect
    run t_leak 4 ""
    run_help 4
    check_cmd
    NB_POLICY="--mca coll_offload_reduce_policy tree --mca coll_offload_bcast_policy tree:32k,get"
    # shellcheck disable=SC2086
    run t_nb 3 "$NB_POLICY $ANY_ORDER" --quick $expect
    for np in 2 3; do
        # shellcheck disable=SC2086
        run t_nb "$np" "$NB_POLICY" --quick $expect
    done
    # shellcheck disable=SC2086
    run t_nb_mt 2 "" $expect
    finalize_stress
    # shellcheck disable=SC2086
    run t_stress 4 "" --comm-cycles 2000 $expect
    # Reproducible sums: exact, and the bytes of the node suite's runs (the hash is
    # a function of the data alone, the same under every Open MPI version).
    run t_repsum 3 "--mca coll_offload_repsum 1" world
    run t_repsum 4 ""
    [ "$EXPECT_OFFLOAD" = 1 ] || skip_begin "the watchdog needs the component (EXPECT_OFFLOAD=1)"
    TEST_TIMEOUT=60 ALLOW_RC=1 SUMMARIES=2 run t_fault 3 "--mca coll_offload_watchdog 0.5" \
        watchdog
    [ -z "$SKIP_WHY" ] || skip_end
    summary
    exit
fi
for np in 1 2 3 4 7 8; do
    if [ "$np" -ge 7 ]; then
        # shellcheck disable=SC2086
        run t_coll "$np" "" --quick $expect
    else
        # shellcheck disable=SC2086
        run t_coll "$np" "" $expect
    fi
done
# 8/16-bit integer sums and products wrap at every size and on every path, with
# stock op/avx in place (it saturates them): the selection without "op ^avx".
for np in 2 3 4 5 6 7 8; do
    # shellcheck disable=SC2086
    COLL_SELECTION=$(echo "$COLL_SELECTION" | sed 's/--mca op \^avx//') run t_wrap "$np" "" $expect
done
# shellcheck disable=SC2086
run t_fallback 4 "$LIMIT_ARGS" $expect
run t_leak 2 ""
run t_leak 4 ""
run_help 4
check_cmd
# Nonblocking and persistent collectives, the progress agent, two threads.
# t_nb's path checks expect every call it makes offloaded: policies without the
# fallback ranges of the defaults (reduce 512k-1m, bcast 128k-256k), bcast by
# reference above 32k.
NB_POLICY="--mca coll_offload_reduce_policy tree --mca coll_offload_bcast_policy tree:32k,get"
for np in 2 3 4; do
    # shellcheck disable=SC2086
    run t_nb "$np" "$NB_POLICY" $expect
done
# Persistent starts in any order (the default): starts in rank-dependent orders
# (MPICH's p_order), the rest of t_nb and a stress run with persistent forms.
for np in 2 3 4; do
    # shellcheck disable=SC2086
    run t_nb "$np" "$NB_POLICY $ANY_ORDER" --quick $expect
done
# shellcheck disable=SC2086
run t_stress 4 "$ANY_ORDER" --comm-cycles 2000 $expect
# More ranks than cores, with the default for small reduces and bcasts (the layer
# below's): results, and the mismatch check where calls still reach the NIC.
# shellcheck disable=SC2086
run t_coll 4 "$CROWDED" --quick
# shellcheck disable=SC2086
run t_stress 4 "$CROWDED" --comm-cycles 2000
# shellcheck disable=SC2086
run t_nb 7 "$NB_POLICY" --quick $expect
# shellcheck disable=SC2086
run t_nb 2 "$NB_POLICY --mca coll_offload_agent 0" --quick $expect
# The agent in the real-time class (as root; otherwise it warns and runs normal).
# shellcheck disable=SC2086
run t_nb 2 "$NB_POLICY --mca coll_offload_agent_preempt 2" --quick $expect
# Shared memory: every communicator's segment (mincore) within coll_offload_shm_budget
# per rank, at the default budget and at 256 KiB with every collective on its trees;
# the node-wide cap (16 MiB: a few communicators of 4 ranks) sends the rest to the
# fallback on every rank alike.
for np in 2 4 8; do
    # shellcheck disable=SC2086
    run t_shm "$np" "" bound $expect
done
TREES="--mca coll_offload_allreduce_policy tree --mca coll_offload_bcast_policy tree"
TREES="$TREES --mca coll_offload_reduce_policy tree"
# shellcheck disable=SC2086
run t_shm 4 "$TREES --mca coll_offload_shm_budget 262144" bound $expect
# shellcheck disable=SC2086
run t_shm 4 "--mca coll_offload_shm_cap 16777216" cap $expect
# shellcheck disable=SC2086
run t_nb_mt 2 "" $expect
# shellcheck disable=SC2086
run t_nb_mt 3 "" --quick $expect
finalize_stress
# Stress and soak, every result checked against references computed locally
# (about 2 minutes): 10,000 communicators made of random subsets, each used by
# a few random collectives and freed; 4 threads x 4 communicators under
# MPI_THREAD_MULTIPLE; random ops, types, sizes (to 2 MiB), roots and forms for
# 60 s at np 4 and 30 s at np 3. A failure prints the seed; rerun it with
# --seed. Longer by hand, e.g. (see t_stress.c for every option):
#   mpirun --oversubscribe -np 4 --mca op ^avx t_stress --soak 600
#   mpirun --oversubscribe -np 4 --mca op ^avx t_stress --comm-cycles 100000
# shellcheck disable=SC2086
TEST_TIMEOUT=180 run t_stress 4 "" --comm-cycles 10000 $expect
# shellcheck disable=SC2086
TEST_TIMEOUT=180 run t_stress 4 "" --threads 4 --comms 4 --iters 1500 $expect
# shellcheck disable=SC2086
TEST_TIMEOUT=240 run t_stress 4 "" --soak 60 $expect
# shellcheck disable=SC2086
TEST_TIMEOUT=180 run t_stress 3 "" --soak 30 $expect
# Tiny reduces and bcasts handed to the fallback (small fallback entries in their
# policies, which the defaults run on the board): right answers there too, and
# 8/16-bit sums wrapped (t_wrap, without --mca op ^avx).
tiny_fallback="--mca coll_offload_reduce_policy fallback:64,tree:32k,fallback:256k,tree"
tiny_fallback="$tiny_fallback --mca coll_offload_bcast_policy fallback:128,tree:16k,get:64k,fallback:256k,get"
# shellcheck disable=SC2086
run t_coll 3 "$tiny_fallback" --quick $expect
# shellcheck disable=SC2086
COLL_SELECTION=$(echo "$COLL_SELECTION" | sed 's/--mca op \^avx//') run t_wrap 3 "$tiny_fallback" $expect
# Reproducible sums: the same global data over np 1..8, every allreduce policy,
# reduce trees of several shapes and radices, the layer below, the binned and
# the two-pass form of blocking calls: every result the exact sum (t_repsum
# checks in-process), and the same bytes in every run (the hash each run
# prints). Then the info key on a communicator of an ordinary job.
repsum_hash=""
repsum_bad=0
run_repsum() {
    local np=$1 extra=$2 h
    run t_repsum "$np" "--mca coll_offload_repsum 1 $extra" world
    h=$(logtext "$RUN_LOG" | sed -n 's/^t_repsum: hash //p' | tail -n 1)
    repsum_hash=${repsum_hash:-$h}
    if [ -z "$h" ] || [ "$h" != "$repsum_hash" ]; then
        echo "         t_repsum np=$np $extra: result hash '$h', the first run's $repsum_hash"
        repsum_bad=$((repsum_bad + 1))
    fi
}
for np in 1 2 3 4 5 6 7 8; do
    run_repsum "$np" ""
done
for policy in tree exchange:16k,tree split board:224,split fallback; do
    run_repsum 5 "--mca coll_offload_allreduce_policy $policy --mca coll_offload_reduce_policy tree"
done
for tree in "kary --mca coll_offload_reduce_radix 2" "knomial --mca coll_offload_reduce_radix 3" \
            "kary --mca coll_offload_reduce_radix 8" "flat"; do
    run_repsum 6 "--mca coll_offload_allreduce_policy tree --mca coll_offload_reduce_policy tree --mca coll_offload_reduce_tree $tree"
done
run_repsum 4 "--mca coll_offload_reduce_policy fallback --mca coll_offload_agent 0"
# Blocking calls in the binned form only, and in the two-pass form from one real up
run_repsum 4 "--mca coll_offload_repsum_two_pass_min -1"
run_repsum 5 "--mca coll_offload_repsum_two_pass_min 0"
# shellcheck disable=SC2086
run_repsum 3 "$tiny_fallback"
if [ "$repsum_bad" = 0 ]; then
    total_pass=$((total_pass + 1))
else
    total_fail=$((total_fail + 1))
fi
# A rules file (docs/rules-format.md): where every rank reads the same one, its rules are
# in force from the set-up on (verbose names them) and the results stay right; a malformed
# one is warned of with its line and the MCA values stay; ranks reading different files
# fall back on every rank, with one message. One check each for what the logs say.
rules_dir="$LOGDIR/rules"
mkdir -p "$rules_dir"
cat >"$rules_dir/good.conf" <<'RULES'
# rules for the suite: trees of other shapes, smaller exchange bound
format 1
reduce    2-4  policy=tree tree=flat
bcast     3    policy=tree radix=2 origin=simulated
allreduce 1+   policy=exchange:4k,split
RULES
printf 'format 1\nreduce 2 policy=tree\nbcast 0 policy=tree\n' >"$rules_dir/bad.conf"
printf 'format 1\nreduce 2-4 policy=tree tree=knomial radix=3\n' >"$rules_dir/other.conf"
# rules_says LOG PATTERN...: one check, passed when the log has every pattern
rules_says() {
    local log=$1 missing=""
    shift
    for pat in "$@"; do
        logtext "$log" | grep -qa -- "$pat" || missing="$missing '$pat'"
    done
    if [ -z "$missing" ]; then
        total_pass=$((total_pass + 1))
        printf '%-8s %-38s %9s passed, %s failed\n' "[ ok ]" "rules: $(basename "$log")" 1 0
    else
        total_fail=$((total_fail + 1))
        printf '%-8s %-38s %9s passed, %s failed\n' "[FAIL]" "rules: $(basename "$log")" 0 1
        echo "         missing:$missing; log: $log"
    fi
}
# shellcheck disable=SC2086
run t_coll 3 "--mca coll_offload_rules_file $rules_dir/good.conf --mca coll_offload_verbose 1" \
    --quick $expect
cp "$RUN_LOG" "$rules_dir/good.log"
rules_says "$rules_dir/good.log" "good.conf line 3 in force: reduce 2-4 policy=tree" \
    "good.conf line 4 in force: bcast 3 policy=tree" "good.conf line 5 in force: allreduce 1+"
run t_coll 2 "--mca coll_offload_rules_file $rules_dir/bad.conf" --quick $expect
cp "$RUN_LOG" "$rules_dir/bad.log"
rules_says "$rules_dir/bad.log" "bad.conf" "line:    3"
# Rank 0 reads one file, the others another (a wrapper picks it from the rank).
cat >"$rules_dir/pick.sh" <<'PICK'
#!/bin/sh
f=other.conf
[ "${OMPI_COMM_WORLD_RANK:-0}" = 0 ] && f=good.conf
OMPI_MCA_coll_offload_rules_file="$(dirname "$0")/$f" exec "$@"
PICK
chmod +x "$rules_dir/pick.sh"
# shellcheck disable=SC2086
# Open MPI 4.1's launcher sometimes drops a help message that several ranks send at once
# ("ORTE_ERROR_LOG: ... show_help.c"): then, and only then, the job is run again (3 tries).
for try in 1 2 3; do
    timeout -k 15 "$TEST_TIMEOUT" $MPIRUN $MPIRUN_ARGS -np 3 $COLL_SELECTION "$rules_dir/pick.sh" \
        "$BINDIR/t_coll" --quick >"$rules_dir/differ.log" 2>&1 </dev/null
    grep -q "hold different coll/offload rules" "$rules_dir/differ.log" && break
    grep -q "ORTE_ERROR_LOG: .*show_help.c" "$rules_dir/differ.log" || break
    echo "         (try $try: the launcher dropped a help message; running again)"
done
rules_says "$rules_dir/differ.log" "hold different coll/offload rules" "^t_coll: [0-9]* passed, 0 failed"
# A component built for another Open MPI release (coll_offload_built_for stands for the
# release it was compiled against) declines at open with one message naming both releases
# and the command that rebuilds it; the job runs on the layer below, right, without a NIC.
if [ "$EXPECT_OFFLOAD" = 1 ]; then
    run t_coll 2 "--mca coll_offload_built_for 1.2.3 --mca coll_offload_verbose 1" --quick
    cp "$RUN_LOG" "$rules_dir/release.log"
    rules_says "$rules_dir/release.log" "compiled against the internal headers of Open MPI 1.2.3" \
        "process runs Open MPI [0-9]" "sh contrib/setup.sh" "^t_coll: [0-9]* passed, 0 failed"
    if grep -q "software NIC ready" "$rules_dir/release.log"; then
        total_fail=$((total_fail + 1))
        echo "[FAIL]   release: the declined component still set a NIC up ($rules_dir/release.log)"
    else
        total_pass=$((total_pass + 1))
        printf '%-8s %-38s %9s passed, %s failed\n' "[ ok ]" "release: no NIC when declined" 1 0
    fi
else
    total_skip=$((total_skip + 2))
    echo "[skip]   2 checks: the release check needs the component (EXPECT_OFFLOAD=1)"
fi
# The same per communicator, from its info key coll_offload_rules: every policy, tree and
# radix the key can force, ranks whose keys differ, values that do not parse.
run t_rules 2 "" $expect
run t_rules 4 "" $expect
# Device memory: in each state a process can be in, the slots device buffers could
# reach are the layer below's, the others stay the component's, every result right.
for mode in none converted raw; do
    run t_device 3 "--mca coll_offload_device_assume $mode" --mode "$mode" $expect
done
# MPI-4's large-count bindings (Open MPI 6 passes size_t counts down): counts above
# INT_MAX go to the layer below (2 GiB a rank; skipped where mpi.h has no _c bindings).
# coll/basic as the layer below: its allreduce calls the communicator's reduce and bcast,
# ours, from inside the component's set-up (which must then fall back, not recurse).
run t_coll 3 "--mca coll offload,basic,libnbc,self,inter" --quick $expect
# The layer below is basic here: Open MPI main's tuned reduce crashes on counts above
# INT_MAX without this component too (a segfault in ompi_coll_base_reduce_generic).
run t_large 2 "--mca coll offload,basic,libnbc,self,inter" $expect
# The tuner (bench/coll-offload-tune) on a short budget: it checks every candidate's
# result, writes a file that reads back, and the component runs t_coll by it.
tune="$BINDIR/../../bench/coll-offload-tune"
if [ "$EXPECT_OFFLOAD" = 1 ]; then
    # shellcheck disable=SC2086
    timeout -k 15 "$TEST_TIMEOUT" $MPIRUN $MPIRUN_ARGS -np 3 $COLL_SELECTION "$tune" \
        --budget 6 --sizes 4:64k --rounds 3 --quiet --out "$rules_dir/tuned.conf" \
        >"$rules_dir/tune.log" 2>&1 </dev/null
    rules_says "$rules_dir/tune.log" "wrote .*tuned.conf ([1-9][0-9]* rules)"
    if grep -q "WRONG RESULT" "$rules_dir/tune.log"; then
        total_fail=$((total_fail + 1))
        echo "[FAIL]   tuner: a candidate gave a wrong result ($rules_dir/tune.log)"
    fi
    # shellcheck disable=SC2086
    run t_coll 3 "--mca coll_offload_rules_file $rules_dir/tuned.conf --mca coll_offload_verbose 1" \
        --quick $expect
    cp "$RUN_LOG" "$rules_dir/tuned.log"
    rules_says "$rules_dir/tuned.log" "tuned.conf line [0-9]* in force: allreduce 3 policy="
else
    # the tuner's run and file, the run of t_coll by its file and what that says
    echo "[skip]   3 runs and checks: the tuner needs the component (EXPECT_OFFLOAD=1)"
    total_skip=$((total_skip + 3))
fi
run t_repsum 4 ""
# (Without the component every run below is counted as skipped, not made.)
[ "$EXPECT_OFFLOAD" = 1 ] || skip_begin "argument mismatch, faults, a corrupt peer, set-up \
failures and kills need the component (EXPECT_OFFLOAD=1)"
{
    # Ranks passing different arguments to one call (op, datatype, count, root,
    # collective; every form): an error on every rank and messages naming the call,
    # the communicator and the ranks (SAYS), never a hang (the timeout: a few
    # seconds each when right), a wrong answer or a stray write.
    # 9 ranks: above exchange_max_ranks, so tree programs and no board.
    for np in 2 3 4; do
        TEST_TIMEOUT=60 SAYS=1 run t_mismatch "$np" ""
    done
    TEST_TIMEOUT=90 SAYS=1 run t_mismatch 9 "" --quick
    # Tiny calls: the default policies run tiny reduces and bcasts on the board,
    # where a mismatch is found like any other; handed to the fallback by the size
    # policy (tiny or mid-size: --policy), only the agreement of every blocking
    # fallback (agree_above 0, or the full checks) finds it.
    # Full checks (coll_offload_check=1): every rank's mismatched blocking call fails,
    # a reduce's sending children and a bcast's root included.
    TEST_TIMEOUT=60 SAYS=1 run t_mismatch 2 "--mca coll_offload_check 1" --strict
    TEST_TIMEOUT=60 SAYS=1 run t_mismatch 3 "--mca coll_offload_check 1" --strict
    TEST_TIMEOUT=60 SAYS=1 run t_mismatch 3 "" --tiny
    TEST_TIMEOUT=60 SAYS=1 run t_mismatch 3 "--mca coll_offload_agree_above 0 $tiny_fallback" --tiny --policy
    # A peer killed mid-collective and a late peer under the watchdog: the
    # others must return an error, not hang. The job itself ends abnormally
    # (a rank is gone, survivors cannot finalize), so mpirun's status is moot.
    # --enable-recovery keeps the survivors running after the kill, under Open MPI
    # 4.1's launcher and under Open MPI 5's (PRRTE marks the job recoverable: a rank
    # killed by a signal is reported to the others instead of ending the job; 5.0.7's
    # jobs exit 0), so each survivor's summary line is required.
    TEST_TIMEOUT=60 ALLOW_RC=1 SUMMARIES=2 run t_fault 3 "--enable-recovery" kill
    TEST_TIMEOUT=60 ALLOW_RC=1 SUMMARIES=2 run t_fault 3 "--mca coll_offload_watchdog 0.5" \
        watchdog
    TEST_TIMEOUT=60 ALLOW_RC=1 SUMMARIES=2 run t_fault 3 "--enable-recovery" kill-nb
    TEST_TIMEOUT=60 ALLOW_RC=1 SUMMARIES=2 run t_fault 3 "--mca coll_offload_watchdog 0.5" \
        watchdog-nb
    # A peer that writes what no correct rank writes (a board line ahead, a
    # poison mark naming no rank): the others get an error, and a message naming
    # corrupt shared state (SAYS), not a wrong result.
    TEST_TIMEOUT=60 ALLOW_RC=1 SUMMARIES=2 SAYS=1 run t_corrupt 3 "" board
    TEST_TIMEOUT=60 ALLOW_RC=1 SUMMARIES=2 SAYS=1 run t_corrupt 3 "" board-nb
    TEST_TIMEOUT=60 ALLOW_RC=1 SUMMARIES=2 SAYS=1 run t_corrupt 3 "" poison
    # Set-up and staging failures (coll_offload_inject), each step on a chosen
    # rank: still offloaded, on a named segment, every rank falling back alike,
    # or an MPI error on every rank (not a hang); nothing left in /dev/shm.
    for np in 2 4; do
        last=$((np - 1))
        TEST_TIMEOUT=60 run_inject "$np" probe:$last offload
        TEST_TIMEOUT=60 run_inject "$np" proc:$last named
        TEST_TIMEOUT=60 run_inject "$np" create:0 named
        TEST_TIMEOUT=60 run_inject "$np" create:0,name:0 fallback
        TEST_TIMEOUT=60 run_inject "$np" bcast:0 fallback
        TEST_TIMEOUT=60 run_inject "$np" bcast:$last fallback
        TEST_TIMEOUT=60 run_inject "$np" attach:$last fallback
        TEST_TIMEOUT=60 run_inject "$np" proc:$last,attach:$last fallback
        TEST_TIMEOUT=60 run_inject "$np" compile:$last fallback
        TEST_TIMEOUT=60 run_inject "$np" agree:$last error
        TEST_TIMEOUT=60 run_inject "$np" agree:0 error
        TEST_TIMEOUT=60 run_inject "$np" stage:0 stage
        TEST_TIMEOUT=60 run_inject "$np" stage:$last stage
        TEST_TIMEOUT=60 run_inject "$np" stage:$last stage-nb
        # A rank SIGKILLed at each point of set-up: the anonymous segment leaves
        # nothing; a named one nothing once its last peer attached (on 2 ranks,
        # the one attacher), and inside its window a name that the next named
        # set-up on the node removes.
        for inject in create:0:kill bcast:0:kill bcast:$last:kill attach:$last:kill \
                      agree:0:kill agree:$last:kill; do
            run_kill "$np" "$inject"
        done
        if [ "$np" = 2 ]; then
            run_kill "$np" "proc:1,attach:1:kill"
        else
            run_kill "$np" "proc:$last,attach:$last:kill" window
        fi
        run_kill "$np" "proc:$last,name:0:kill" window
    done
}
[ -z "$SKIP_WHY" ] || skip_end

summary
