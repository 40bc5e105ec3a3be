/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Shared helpers of the MPI-level tests of coll/offload.
 *
 * Only the public MPI API (mpi.h, MPI_T) is used so the tests can be validated
 * against stock Open MPI collectives as well as run against the component.
 *
 * Check accounting: every rank counts its own checks; t_finish() aggregates
 * them with MPI_Allgather (a collective the component does not provide, so a
 * broken MPI_Allreduce cannot hide failures) and cross-checks the totals with
 * an MPI_Allreduce, which is itself under test.
 *
 * A check is an assertion about a result (t_check): a call that merely returned
 * MPI_SUCCESS is none (t_check_rc counts only its failure). What a rank leaves
 * out it counts as skipped (t_skip), never as passed. Every program ends with
 * one line "<prog>: N passed, M failed, K skipped" (run.sh reads it).
 */
#ifndef T_COMMON_H
#define T_COMMON_H

#include <mpi.h>
#include "pvar.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Failures printed per rank before further messages are suppressed. */
#define T_MAX_PRINTED_FAILS 25

typedef struct {
    int quick;              /* --quick: fewer types/counts for large process counts */
    int expect_offload;     /* --expect-offload: assert the MPI_T counters of the component */
    int expect_triggered;   /* --expect-triggered: leaders post native triggered operations */
    int stress_iters;       /* --stress-iters N: t_coll's stress section (0: its default) */
    int verbose;            /* -v: print every section on every rank */
} t_opts_t;

static t_opts_t t_opt;
static unsigned long long t_npass, t_nfail, t_nskip;
static unsigned long long t_sec_pass, t_sec_fail, t_sec_skip;
static double t_sec_start;
static const char *t_sec_name;
static int t_wrank = -1, t_wsize = 0;
static const char *t_prog = "t";

static inline void t_parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--quick")) {
            t_opt.quick = 1;
        } else if (0 == strcmp(argv[i], "--expect-offload")) {
            t_opt.expect_offload = 1;
        } else if (0 == strcmp(argv[i], "--expect-triggered")) {
            t_opt.expect_triggered = 1;
        } else if (0 == strcmp(argv[i], "--stress-iters") && i + 1 < argc
                   && atoi(argv[i + 1]) > 0) {
            t_opt.stress_iters = atoi(argv[++i]);
        } else if (0 == strcmp(argv[i], "-v")) {
            t_opt.verbose = 1;
        } else {
            if (0 == t_wrank) {
                fprintf(stderr, "%s: unknown option '%s' "
                        "(known: --quick --expect-offload --expect-triggered --stress-iters N -v)\n", t_prog, argv[i]);
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
}

static inline void t_init(int *argc, char ***argv, const char *prog)
{
    t_prog = prog;
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &t_wsize);
    /* Errors are reported as failed checks rather than aborting the job, so one
     * broken call does not hide the results of everything after it. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    t_parse_args(*argc, *argv);
}

static inline void t_vfail(const char *fmt, va_list ap)
{
    if (t_nfail <= T_MAX_PRINTED_FAILS) {
        char msg[1024];
        vsnprintf(msg, sizeof(msg), fmt, ap);
        fprintf(stderr, "FAIL %s[rank %d]: %s\n", t_prog, t_wrank, msg);
        if (T_MAX_PRINTED_FAILS == t_nfail) {
            fprintf(stderr, "FAIL %s[rank %d]: further failure messages suppressed\n",
                    t_prog, t_wrank);
        }
        fflush(stderr);
    }
}

/* Records one check; on failure prints the printf-style description. */
static inline int t_check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int t_check(int ok, const char *fmt, ...)
{
    if (ok) {
        t_npass++;
        return 1;
    }
    t_nfail++;
    va_list ap;
    va_start(ap, fmt);
    t_vfail(fmt, ap);
    va_end(ap);
    return 0;
}

/* An MPI return code: a failure if it is not MPI_SUCCESS (the message names the
 * call), and no check at all if it is (a call that returned is no result). */
static inline int t_check_rc(int rc, const char *what)
{
    if (MPI_SUCCESS == rc) {
        return 1;
    }
    char es[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, es, &len);
    return t_check(0, "%s returned %d (%s)", what, rc, es);
}

static inline void t_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void t_note(const char *fmt, ...)
{
    if (0 != t_wrank) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

/* A message the component must have shown through the launcher (opal_show_help goes
 * to mpirun, not to this process's stderr): one line "<prog>: expect WHAT", which
 * run.sh's help_says checks against the messages mpirun printed. WHAT is keys and
 * values: "rank R" (the message's "this rank"), "comm NAME" (its communicator), "call
 * MPI_X", "with R" (it names two ranks, R one of them), "order" (no message on that
 * communicator says "argument mismatch" without citing MPI-4.0 section 6.12), then
 * "says TEXT" (the rest of the line, in the message's words) last. Not a check here:
 * run.sh counts one per run for all of them. */
static inline void t_expect_help(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void t_expect_help(const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    printf("%s: expect %s\n", t_prog, what);
    fflush(stdout);
}

/* A check left out on this rank, and why (printed by rank 0, or by any rank
 * with -v): counted as skipped, not as passed. */
static inline void t_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void t_skip(const char *fmt, ...)
{
    t_nskip++;
    if (0 != t_wrank && !t_opt.verbose) {
        return;
    }
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (0 == t_wrank) {
        printf("  skipped: %s\n", msg);
    } else {
        printf("  skipped on rank %d: %s\n", t_wrank, msg);
    }
    fflush(stdout);
}

/* One more skipped check of a kind whose reason t_skip or t_note gave once (checks
 * left out in bulk, e.g. every path check without --expect-offload). */
static inline void t_skip_more(void)
{
    t_nskip++;
}

/* The summary line every program ends with (run.sh and the drivers parse it). */
static inline void t_print_summary(unsigned long long p, unsigned long long f,
                                   unsigned long long s)
{
    printf("%s: %llu passed, %llu failed, %llu skipped\n", t_prog, p, f, s);
    fflush(stdout);
}

/* Sums three counters over all ranks with MPI_Allgather (not under test). */
static inline void t_gather_sum(const unsigned long long mine[3], unsigned long long sum[3])
{
    unsigned long long *all = malloc(sizeof(unsigned long long) * 3 * (size_t)t_wsize);
    MPI_Allgather(mine, 3, MPI_UNSIGNED_LONG_LONG, all, 3, MPI_UNSIGNED_LONG_LONG,
                  MPI_COMM_WORLD);
    sum[0] = sum[1] = sum[2] = 0;
    for (int i = 0; i < t_wsize; i++) {
        for (int k = 0; k < 3; k++) {
            sum[k] += all[3 * i + k];
        }
    }
    free(all);
}

static inline void t_section_begin(const char *name)
{
    t_sec_name = name;
    t_sec_pass = t_npass;
    t_sec_fail = t_nfail;
    t_sec_skip = t_nskip;
    t_sec_start = MPI_Wtime();
}

/* Collective over MPI_COMM_WORLD: prints the section's aggregated counts. */
static inline void t_section_end(void)
{
    unsigned long long mine[3] = { t_npass - t_sec_pass, t_nfail - t_sec_fail,
                                   t_nskip - t_sec_skip };
    unsigned long long sum[3];
    t_gather_sum(mine, sum);
    char skipped[48] = "";
    if (0 != sum[2]) {
        snprintf(skipped, sizeof(skipped), ", %llu skipped", sum[2]);
    }
    t_note("  %-34s %8llu passed, %llu failed%s  (%.1f s)\n", t_sec_name, sum[0], sum[1],
           skipped, MPI_Wtime() - t_sec_start);
}

/*
 * Collective over MPI_COMM_WORLD: prints "<prog>: N passed, M failed, K skipped"
 * on rank 0, finalizes MPI and returns the exit status (nonzero on every rank if
 * any check failed anywhere).
 */
static inline int t_finish(void)
{
    unsigned long long mine[3] = { t_npass, t_nfail, t_nskip }, all[3];
    t_gather_sum(mine, all);

    /* The totals must agree with MPI_Allreduce (under test) as well: one check
     * on every rank. */
    unsigned long long sum[3] = { 0, 0, 0 };
    int rc = MPI_Allreduce(mine, sum, 3, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    int ok = (MPI_SUCCESS == rc && sum[0] == all[0] && sum[1] == all[1] && sum[2] == all[2]);
    if (!ok) {
        t_check(0, "final MPI_Allreduce of the check counts: rc=%d got %llu/%llu/%llu, "
                "MPI_Allgather says %llu/%llu/%llu", rc, sum[0], sum[1], sum[2], all[0],
                all[1], all[2]);
    }
    unsigned long long fails[3] = { ok ? 0 : 1, 0, 0 }, allfails[3];
    t_gather_sum(fails, allfails);
    all[0] += (unsigned long long)t_wsize - allfails[0];
    all[1] += allfails[0];
    if (0 == t_wrank) {
        t_print_summary(all[0], all[1], all[2]);
    }
    MPI_Finalize();
    return 0 == all[1] ? 0 : 1;
}

/*
 * For a rank that cannot finish collectively (a peer, world rank `absent`, is dead
 * or was made to misbehave): prints this rank's own "<prog>: N passed, M failed, K
 * skipped" and leaves with _exit, without MPI_Finalize. Every such rank prints its
 * line; run.sh sums them. The first rank to leave makes mpirun end the job, so the
 * ranks that finish alone first meet (point to point, the lowest of them in the
 * middle): a rank still saying why its call failed (opal_show_help waits for
 * mpirun) would otherwise be killed before its line.
 */
static inline void t_finish_alone(int absent)
{
    enum { T_ALONE_TAG = 7919 };
    fflush(stderr);
    t_print_summary(t_npass, t_nfail, t_nskip);
    int first = 0 == absent ? 1 : 0, token = 0;
    if (t_wrank == first) {
        for (int pass = 0; pass < 2; ++pass) {
            for (int r = 0; r < t_wsize; ++r) {
                if (r == first || r == absent) {
                    continue;
                }
                if (0 == pass) {
                    MPI_Recv(&token, 1, MPI_INT, r, T_ALONE_TAG, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                } else {
                    MPI_Send(&token, 1, MPI_INT, r, T_ALONE_TAG, MPI_COMM_WORLD);
                }
            }
        }
    } else if (first < t_wsize) {
        MPI_Send(&token, 1, MPI_INT, first, T_ALONE_TAG, MPI_COMM_WORLD);
        MPI_Recv(&token, 1, MPI_INT, first, T_ALONE_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    _exit(0 == t_nfail ? 0 : 1);
}

/* splitmix64 finalizer: deterministic, well-mixed per-element pseudo-random bits. */
static inline uint64_t t_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static inline uint64_t t_hash3(uint64_t seed, uint64_t a, uint64_t b)
{
    return t_mix(t_mix(seed ^ t_mix(a + 0x1234567ULL)) ^ b);
}

/* ---- MPI_T performance variables ------------------------------------------ */

typedef struct {
    const char *name;
    int found;
    int index;
    MPI_Datatype dt;
    MPI_T_pvar_handle handle;
} t_pvar_t;

static MPI_T_pvar_session t_pv_session;
static int t_pv_inited;

/* 1 when every rank of MPI_COMM_WORLD runs on this rank's node (by processor name);
 * collective. */
static inline int t_all_on_one_host(void)
{
    char host[MPI_MAX_PROCESSOR_NAME] = { 0 };
    int len = 0, size = 0, same = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    char *hosts = calloc((size_t) size, MPI_MAX_PROCESSOR_NAME);
    if (NULL == hosts) {
        return 0;
    }
    MPI_Allgather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME,
                  MPI_CHAR, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++) {
        same = same && 0 == strcmp(hosts + (size_t) r * MPI_MAX_PROCESSOR_NAME, host);
    }
    free(hosts);
    return same;
}

/* Looks up and starts the named pvars; those that do not exist stay !found. */
static inline void t_pvars_open(t_pvar_t *pv, int n)
{
    int provided, num = 0;
    if (MPI_SUCCESS != MPI_T_init_thread(MPI_THREAD_SINGLE, &provided)) {
        return;
    }
    t_pv_inited = 1;
    if (MPI_SUCCESS != MPI_T_pvar_session_create(&t_pv_session)) {
        return;
    }
    MPI_T_pvar_get_num(&num);
    for (int i = 0; i < num; i++) {
        char name[256], desc[1024];
        int nlen = sizeof(name), dlen = sizeof(desc);
        int verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_SUCCESS != MPI_T_pvar_get_info(i, name, &nlen, &verb, &cls, &dt, &en, desc,
                                               &dlen, &bind, &ro, &cont, &atomic)) {
            continue;
        }
        for (int k = 0; k < n; k++) {
            if (pv[k].found || 0 != strcmp(name, pv[k].name)) {
                continue;
            }
            int count = 0;
            if (MPI_SUCCESS != MPI_T_pvar_handle_alloc(t_pv_session, i, NULL,
                                                       &pv[k].handle, &count)) {
                continue;
            }
            /* Non-continuous variables only count while started. */
            if (!cont && MPI_SUCCESS != MPI_T_pvar_start(t_pv_session, pv[k].handle)) {
                continue;
            }
            pv[k].found = 1;
            pv[k].index = i;
            pv[k].dt = dt;
        }
    }
}

/* Reads a counter pvar as unsigned long long; returns 0 if it cannot be read. */
static inline int t_pvar_read(t_pvar_t *pv, unsigned long long *val)
{
    *val = 0;
    return pv->found && ofl_pvar_read_count(t_pv_session, pv->handle, pv->dt, val);
}

static inline void t_pvars_close(t_pvar_t *pv, int n)
{
    if (!t_pv_inited) {
        return;
    }
    for (int k = 0; k < n; k++) {
        if (pv[k].found) {
            MPI_T_pvar_handle_free(t_pv_session, &pv[k].handle);
        }
    }
    MPI_T_pvar_session_free(&t_pv_session);
    MPI_T_finalize();
    t_pv_inited = 0;
}

/* Reads an integer-valued control variable (MCA parameter); 1 if found. */
static inline int t_cvar_read_ull(const char *want, unsigned long long *val)
{
    int provided, num = 0, found = 0;
    if (MPI_SUCCESS != MPI_T_init_thread(MPI_THREAD_SINGLE, &provided)) {
        return 0;
    }
    MPI_T_cvar_get_num(&num);
    for (int i = 0; i < num && !found; i++) {
        char name[256], desc[1024];
        int nlen = sizeof(name), dlen = sizeof(desc), verb, bind, scope, count;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_SUCCESS != MPI_T_cvar_get_info(i, name, &nlen, &verb, &dt, &en, desc, &dlen,
                                               &bind, &scope) || 0 != strcmp(name, want)) {
            continue;
        }
        MPI_T_cvar_handle h;
        if (MPI_SUCCESS != MPI_T_cvar_handle_alloc(i, NULL, &h, &count)) {
            continue;
        }
        union {
            int i;
            unsigned u;
            long l;
            unsigned long ul;
            long long ll;
            unsigned long long ull;
            char pad[64];
        } buf;
        memset(&buf, 0, sizeof(buf));
        if (MPI_SUCCESS == MPI_T_cvar_read(h, &buf)) {
            found = 1;
            if (MPI_INT == dt) {
                *val = (unsigned long long)(long long)buf.i;
            } else if (MPI_UNSIGNED == dt) {
                *val = buf.u;
            } else if (MPI_LONG == dt) {
                *val = (unsigned long long)(long long)buf.l;
            } else if (MPI_UNSIGNED_LONG == dt) {
                *val = buf.ul;
            } else {
                *val = buf.ull;
            }
        }
        MPI_T_cvar_handle_free(&h);
    }
    MPI_T_finalize();
    return found;
}

#endif /* T_COMMON_H */
