/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Failure paths of coll/offload's set-up and staging leave nothing behind.
 * Run with --mca coll_offload_inject STEP:RANK[:kill],... (a step of the first
 * set-up, or of the first staged bcast, fails on a chosen rank) and say what
 * must come of it:
 *
 *   t_setup_fail offload   the victim communicator still offloads (a probe
 *                          failing only turns single-copy reads off)
 *   t_setup_fail named     it offloads on a named segment (reopening through
 *                          /proc refused on some rank)
 *   t_setup_fail fallback  every rank falls back alike: results right, the
 *                          fallback counter rises, nothing stays mapped
 *   t_setup_fail error     the first call returns an MPI error on every rank
 *                          (the agreement failed on one rank); later calls
 *                          fall back and are right
 *   t_setup_fail stage     a non-contiguous MPI_Bcast whose staging allocation
 *   t_setup_fail stage-nb  fails on one rank (MPI_Ibcast + MPI_Wait): every rank
 *                          gets an MPI error, in that call or in the next one
 *                          on the communicator
 *   t_setup_fail kill      a rank SIGKILLs itself during set-up; the job dies
 *                          (run.sh checks that it ends and leaves no file)
 *
 * In every mode except kill, collectives on a communicator made afterwards are
 * offloaded and right, and rank 0 (the only rank that ever names a segment)
 * finds no /dev/shm entry of its own, during set-up or after. An error must come,
 * not a hang (run.sh's timeout); how long it and the set-up took is printed.
 * Rank 0 prints "t_setup_fail: pid0 N" first, for run.sh's check after a kill.
 */
#include "t_common.h"

#include <dirent.h>

enum { PV_AR_OFF, PV_AR_FB, PV_BC_OFF, PV_BC_FB, PV_COUNT };

static t_pvar_t pv[PV_COUNT] = {
    { .name = "coll_offload_allreduce_offloaded" },
    { .name = "coll_offload_allreduce_fallback" },
    { .name = "coll_offload_bcast_offloaded" },
    { .name = "coll_offload_bcast_fallback" },
};

static unsigned long long pv_get(int k)
{
    unsigned long long v = 0;
    t_pvar_read(&pv[k], &v);
    return v;
}

/* Does this process map a segment whose /proc/self/maps line contains `what`? */
static int mapped_as(const char *what)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (NULL == f) {
        return 0;
    }
    char line[1024];
    int found = 0;
    while (!found && NULL != fgets(line, sizeof(line), f)) {
        found = NULL != strstr(line, what);
    }
    fclose(f);
    return found;
}

/* Entries of /dev/shm this process named (rank 0 names them after its pid). */
static int own_shm_files(void)
{
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "coll_offload.%d.", (int) getpid());
    DIR *d = opendir("/dev/shm");
    if (NULL == d) {
        return 0;
    }
    int n = 0;
    for (struct dirent *e; NULL != (e = readdir(d));) {
        n += 0 == strncmp(e->d_name, prefix, strlen(prefix));
    }
    closedir(d);
    return n;
}

/* Allreduce of three longs per rank, sums and a max computed independently. */
static int check_allreduce(MPI_Comm comm, const char *what)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    long in[3] = { rank + 1, -3L * rank, 7 }, out[3] = { 0, 0, 0 };
    int rc = MPI_Allreduce(in, out, 3, MPI_LONG, MPI_SUM, comm);
    if (!t_check_rc(rc, what)) {
        return 0;
    }
    long want[3] = { (long) size * (size + 1) / 2, -3L * size * (size - 1) / 2, 7L * size };
    return t_check(out[0] == want[0] && out[1] == want[1] && out[2] == want[2],
                   "%s: got %ld %ld %ld, want %ld %ld %ld", what, out[0], out[1], out[2],
                   want[0], want[1], want[2]);
}

/* Every-other-int layout: non-contiguous, so the component stages it. */
#define STRIDED 2048

static MPI_Datatype strided_type(void)
{
    MPI_Datatype t;
    MPI_Type_vector(STRIDED, 1, 2, MPI_INT, &t);
    MPI_Type_commit(&t);
    return t;
}

static void strided_fill(int *buf, int root_data, int rank)
{
    for (int i = 0; i < 2 * STRIDED; ++i) {
        buf[i] = (i & 1) ? -1 - i : (root_data ? 3 * i + 11 : rank - 1000);
    }
}

static int strided_ok(const int *buf)
{
    for (int i = 0; i < 2 * STRIDED; ++i) {
        int want = (i & 1) ? -1 - i : 3 * i + 11;
        if (buf[i] != want) {
            return 0;
        }
    }
    return 1;
}

/* A non-contiguous bcast, blocking or not; returns its MPI code. */
static int strided_bcast(MPI_Comm comm, MPI_Datatype t, int *buf, int root, int nb)
{
    if (!nb) {
        return MPI_Bcast(buf, 1, t, root, comm);
    }
    MPI_Request req;
    int rc = MPI_Ibcast(buf, 1, t, root, comm, &req);
    return MPI_SUCCESS == rc ? MPI_Wait(&req, MPI_STATUS_IGNORE) : rc;
}

/* Every collective on a working communicator, results checked. */
static void check_works(MPI_Comm comm, const char *what)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    char name[96];
    snprintf(name, sizeof(name), "%s: allreduce", what);
    check_allreduce(comm, name);
    enum { N = 20000 };
    static double in[N], out[N];
    for (int i = 0; i < N; ++i) {
        in[i] = (double) ((rank + 1) * (i % 97));
    }
    int rc = MPI_Allreduce(in, out, N, MPI_DOUBLE, MPI_MAX, comm);
    int ok = MPI_SUCCESS == rc;
    for (int i = 0; ok && i < N; ++i) {
        ok = out[i] == (double) (size * (i % 97));
    }
    t_check(ok, "%s: allreduce max of %d doubles rc=%d", what, N, rc);
    long r = rank + 1, sum = 0;
    rc = MPI_Reduce(&r, &sum, 1, MPI_LONG, MPI_SUM, size - 1, comm);
    t_check(MPI_SUCCESS == rc && (rank != size - 1 || sum == (long) size * (size + 1) / 2),
            "%s: reduce rc=%d sum=%ld", what, rc, sum);
    static int b[4096];
    for (int i = 0; i < 4096; ++i) {
        b[i] = rank == size - 1 ? i * 5 + 1 : -7;
    }
    rc = MPI_Bcast(b, 4096, MPI_INT, size - 1, comm);
    ok = MPI_SUCCESS == rc;
    for (int i = 0; ok && i < 4096; ++i) {
        ok = b[i] == i * 5 + 1;
    }
    t_check(ok, "%s: bcast rc=%d", what, rc);
    MPI_Datatype t = strided_type();
    static int sb[2 * STRIDED];
    strided_fill(sb, 0 == rank, rank);
    rc = MPI_Bcast(sb, 1, t, 0, comm);
    t_check(MPI_SUCCESS == rc && strided_ok(sb), "%s: non-contiguous bcast rc=%d", what, rc);
    MPI_Type_free(&t);
    t_check_rc(MPI_Barrier(comm), "barrier");
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    /* t_common's option parser sees only what follows the mode. */
    if (argc > 1) {
        argv[1] = argv[0];
        argc--;
        argv++;
    }
    t_init(&argc, &argv, "t_setup_fail");
    int rank = t_wrank, size = t_wsize;
    if (0 == rank) {
        printf("t_setup_fail: pid0 %d\n", (int) getpid());
        fflush(stdout);
    }
    int m_offload = 0 == strcmp(mode, "offload"), m_named = 0 == strcmp(mode, "named");
    int m_fallback = 0 == strcmp(mode, "fallback"), m_error = 0 == strcmp(mode, "error");
    int m_stage = 0 == strcmp(mode, "stage"), m_stage_nb = 0 == strcmp(mode, "stage-nb");
    int m_kill = 0 == strcmp(mode, "kill");
    if (!(m_offload || m_named || m_fallback || m_error || m_stage || m_stage_nb || m_kill)) {
        if (0 == rank) {
            fprintf(stderr, "t_setup_fail: mode offload|named|fallback|error|stage|stage-nb|"
                            "kill expected, got '%s'\n", mode);
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    t_pvars_open(pv, PV_COUNT);
    t_check(pv[PV_AR_OFF].found && pv[PV_BC_FB].found, "coll/offload's pvars not found");

    MPI_Comm victim;
    MPI_Comm_dup(MPI_COMM_WORLD, &victim);
    MPI_Comm_set_errhandler(victim, MPI_ERRORS_RETURN);

    /* The victim's first blocking collective is the process's first set-up. */
    t_section_begin("first call on the victim");
    unsigned long long off0 = pv_get(PV_AR_OFF), fb0 = pv_get(PV_AR_FB);
    double t0 = MPI_Wtime();
    if (m_error) {
        long v = 1, s = 0;
        int rc = MPI_Allreduce(&v, &s, 1, MPI_LONG, MPI_SUM, victim);
        double waited = MPI_Wtime() - t0;
        t_check(MPI_SUCCESS != rc, "the first call succeeded (sum %ld) although the "
                "agreement failed on a rank", s);
        t_note("  the first call's error came after %.2f s on rank 0\n", waited);
    } else {
        check_allreduce(victim, "first allreduce");
        if (m_kill) {
            t_check(0, "still alive: the injected SIGKILL did not happen");
        }
    }
    double waited = MPI_Wtime() - t0;
    unsigned long long off = pv_get(PV_AR_OFF) - off0, fb = pv_get(PV_AR_FB) - fb0;
    if (m_fallback) {
        t_check(0 == off && 1 == fb, "expected the fallback: %llu offloaded, %llu fallback",
                off, fb);
        t_check(!mapped_as("/memfd:coll_offload") && !mapped_as("/dev/shm/coll_offload"),
                "a segment is still mapped after the fallback");
    } else if (m_offload || m_named || m_stage || m_stage_nb) {
        t_check(1 == off && 0 == fb, "expected offload: %llu offloaded, %llu fallback", off,
                fb);
        /* What the segment is, as the kernel sees the mapping. */
        if (m_named) {
            t_check(mapped_as("/dev/shm/coll_offload"), "not on a named segment");
        } else {
            t_check(mapped_as("/memfd:coll_offload") && !mapped_as("/dev/shm/coll_offload"),
                    "not on an anonymous segment");
        }
    }
    t_note("  set-up and the first call: %.2f s on rank 0\n", waited);
    if (0 == rank) {
        t_check(0 == own_shm_files(), "a named segment is left in /dev/shm after set-up");
    }
    t_section_end();

    if (m_stage || m_stage_nb) {
        t_section_begin(m_stage ? "staging fails (MPI_Bcast)" : "staging fails (MPI_Ibcast)");
        MPI_Datatype t = strided_type();
        static int buf[2 * STRIDED];
        strided_fill(buf, 0 == rank, rank);
        t0 = MPI_Wtime();
        int rc = strided_bcast(victim, t, buf, 0, m_stage_nb);
        int rc2 = MPI_SUCCESS;
        if (MPI_SUCCESS == rc) {
            /* This rank did not wait for the failed one: its next call does. */
            long v = 1, s = 0;
            rc2 = MPI_Allreduce(&v, &s, 1, MPI_LONG, MPI_SUM, victim);
        }
        waited = MPI_Wtime() - t0;
        t_check(MPI_SUCCESS != rc || MPI_SUCCESS != rc2,
                "no error on this rank although another's staging failed");
        t_note("  the staging error came after %.2f s on rank 0\n", waited);
        MPI_Type_free(&t);
        t_section_end();
    }

    if (!m_kill) {
        t_section_begin("the victim afterwards");
        check_works(victim, "victim");
        t_section_end();
    }
    MPI_Comm_free(&victim);

    t_section_begin("a new communicator");
    MPI_Comm fresh;
    MPI_Comm_dup(MPI_COMM_WORLD, &fresh);
    MPI_Comm_set_errhandler(fresh, MPI_ERRORS_RETURN);
    off0 = pv_get(PV_AR_OFF);
    unsigned long long boff0 = pv_get(PV_BC_OFF);
    check_works(fresh, "new communicator");
    t_check(pv_get(PV_AR_OFF) > off0 && pv_get(PV_BC_OFF) >= boff0 + 2,
            "the new communicator did not offload (allreduce +%llu, bcast +%llu)",
            pv_get(PV_AR_OFF) - off0, pv_get(PV_BC_OFF) - boff0);
    t_check(mapped_as("/memfd:coll_offload"), "the new communicator is not on a memfd");
    MPI_Comm_free(&fresh);
    t_section_end();
    if (0 == rank) {
        t_check(0 == own_shm_files(), "a named segment is left in /dev/shm");
    }
    (void) size;
    t_pvars_close(pv, PV_COUNT);
    return t_finish();
}
