/*
 * Copyright (c) 2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Device memory: which collectives the component takes in each state of a process
 * (coll_offload_device.h). Run with --mca coll_offload_device_assume none, converted
 * or raw and the same word after --mode; without an accelerator the calls use host
 * memory, and what is checked is that every result is right and, with
 * --expect-offload, that the slots device memory could reach were left to the layer
 * below (the component's MPI_T counters never see those calls) while the others
 * are still the component's.
 */
#include "mpi_persist.h"
#include "t_common.h"

enum { C_ALLREDUCE, C_REDUCE, C_BCAST, C_BARRIER, C_N };
enum { K_BLOCKING, K_NONBLOCKING, K_PERSISTENT, K_N };
static const char *coll_names[C_N] = { "allreduce", "reduce", "bcast", "barrier" };
static const char *kind_prefix[K_N] = { "", "i", "p" };

/* [kind][coll][0: offloaded, 1: fallback] */
static t_pvar_t pv[K_N][C_N][2];
static char pv_names[K_N][C_N][2][64];

static unsigned long long reached(int kind, int coll, const unsigned long long before[K_N][C_N][2])
{
    unsigned long long sum = 0;
    for (int f = 0; f < 2; f++) {
        unsigned long long v = 0;
        t_pvar_read(&pv[kind][coll][f], &v);
        sum += v - before[kind][coll][f];
    }
    return sum;
}

static void snapshot(unsigned long long out[K_N][C_N][2])
{
    for (int k = 0; k < K_N; k++) {
        for (int c = 0; c < C_N; c++) {
            for (int f = 0; f < 2; f++) {
                t_pvar_read(&pv[k][c][f], &out[k][c][f]);
            }
        }
    }
}

/* Rank r's element i: an integer, so that every sum is exact in a double. */
static double value(int r, int i)
{
    return (double) (t_hash3(7, (uint64_t) r, (uint64_t) i) % 1000);
}

static void check_sum(const double *got, int n, int size, const char *what)
{
    int bad = -1;
    for (int i = 0; i < n && bad < 0; i++) {
        double want = 0;
        for (int r = 0; r < size; r++) {
            want += value(r, i);
        }
        if (got[i] != want) {
            bad = i;
        }
    }
    t_check(bad < 0, "%s of %d doubles: element %d wrong", what, n, bad);
}

static void run_calls(MPI_Comm comm, int rank, int size)
{
    static const int counts[] = { 1, 25, 1000 };
    static const int bcast_bytes[] = { 8, 200, 4096 };
    double *in = malloc(1000 * sizeof(double)), *out = malloc(1000 * sizeof(double));
    char *bytes = malloc(4096);
    for (int rep = 0; rep < 3; rep++) {
        for (unsigned c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            int n = counts[c];
            for (int i = 0; i < n; i++) {
                in[i] = value(rank, i);
            }
            t_check_rc(MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, comm), "MPI_Allreduce");
            check_sum(out, n, size, "MPI_Allreduce");
            memset(out, 0, (size_t) n * sizeof(double));
            t_check_rc(MPI_Reduce(in, out, n, MPI_DOUBLE, MPI_SUM, size - 1, comm),
                       "MPI_Reduce");
            if (rank == size - 1) {
                check_sum(out, n, size, "MPI_Reduce");
            }
            MPI_Request req;
            t_check_rc(MPI_Iallreduce(in, out, n, MPI_DOUBLE, MPI_SUM, comm, &req),
                       "MPI_Iallreduce");
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            check_sum(out, n, size, "MPI_Iallreduce");
            t_check_rc(MPI_Ireduce(in, out, n, MPI_DOUBLE, MPI_SUM, 0, comm, &req),
                       "MPI_Ireduce");
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            if (0 == rank) {
                check_sum(out, n, size, "MPI_Ireduce");
            }
            t_check_rc(MPI_Allreduce_init(in, out, n, MPI_DOUBLE, MPI_SUM, comm, MPI_INFO_NULL,
                                          &req), "MPI_Allreduce_init");
            for (int s = 0; s < 2; s++) {
                memset(out, 0, (size_t) n * sizeof(double));
                MPI_Start(&req);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
                check_sum(out, n, size, "persistent allreduce");
            }
            MPI_Request_free(&req);
            /* a reduction the component passes down (with the op it gets right) */
            t_check_rc(MPI_Scan(in, out, n, MPI_DOUBLE, MPI_SUM, comm), "MPI_Scan");
            check_sum(out, n, rank + 1, "MPI_Scan");
        }
        for (unsigned b = 0; b < sizeof(bcast_bytes) / sizeof(bcast_bytes[0]); b++) {
            int n = bcast_bytes[b];
            for (int i = 0; i < n; i++) {
                bytes[i] = (char) (0 == rank ? (i * 7 + rep) & 0x7f : 0);
            }
            t_check_rc(MPI_Bcast(bytes, n, MPI_CHAR, 0, comm), "MPI_Bcast");
            int bad = -1;
            for (int i = 0; i < n && bad < 0; i++) {
                bad = bytes[i] == (char) ((i * 7 + rep) & 0x7f) ? -1 : i;
            }
            t_check(bad < 0, "MPI_Bcast of %d bytes: byte %d wrong", n, bad);
            MPI_Request req;
            if (0 != rank) {
                memset(bytes, 0, (size_t) n);
            }
            t_check_rc(MPI_Ibcast(bytes, n, MPI_CHAR, 0, comm, &req), "MPI_Ibcast");
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            bad = -1;
            for (int i = 0; i < n && bad < 0; i++) {
                bad = bytes[i] == (char) ((i * 7 + rep) & 0x7f) ? -1 : i;
            }
            t_check(bad < 0, "MPI_Ibcast of %d bytes: byte %d wrong", n, bad);
        }
        t_check_rc(MPI_Barrier(comm), "MPI_Barrier");
        MPI_Request req;
        t_check_rc(MPI_Ibarrier(comm, &req), "MPI_Ibarrier");
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    free(in);
    free(out);
    free(bytes);
}

int main(int argc, char **argv)
{
    /* --mode WORD is ours; the rest is t_common's */
    const char *mode = NULL;
    for (int i = 1; i + 1 < argc; i++) {
        if (0 == strcmp(argv[i], "--mode")) {
            mode = argv[i + 1];
            for (int j = i; j + 2 <= argc; j++) {
                argv[j] = argv[j + 2];
            }
            argc -= 2;
            break;
        }
    }
    t_init(&argc, &argv, "t_device");
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (NULL == mode || (strcmp(mode, "none") && strcmp(mode, "converted")
                         && strcmp(mode, "raw"))) {
        if (0 == rank) {
            fprintf(stderr, "usage: t_device --mode none|converted|raw [--expect-offload]\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int k = 0; k < K_N; k++) {
        for (int c = 0; c < C_N; c++) {
            for (int f = 0; f < 2; f++) {
                snprintf(pv_names[k][c][f], sizeof(pv_names[k][c][f]), "coll_offload_%s%s_%s",
                         kind_prefix[k], coll_names[c], f ? "fallback" : "offloaded");
                pv[k][c][f].name = pv_names[k][c][f];
            }
        }
    }
    if (t_opt.expect_offload) {
        t_pvars_open(&pv[0][0][0], K_N * C_N * 2);
    }
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    unsigned long long before[K_N][C_N][2];
    snapshot(before);
    t_section_begin(mode);
    run_calls(comm, rank, size);
    t_section_end();

    if (t_opt.expect_offload) {
        t_section_begin("which calls reached the component");
        int converted = 0 == strcmp(mode, "converted"), raw = 0 == strcmp(mode, "raw");
        /* converted: the bcast limit is the converting component's threshold */
        unsigned long long thresh = 0;
        int has_thresh = t_cvar_read_ull("coll_accelerator_bcast_thresh", &thresh);
        for (int k = 0; k < K_N; k++) {
            for (int c = 0; c < C_N; c++) {
                unsigned long long n = reached(k, c, before);
                int want;
                if (C_BARRIER == c || K_PERSISTENT == k) {
                    /* barriers always; persistent: only allreduce is started here */
                    want = C_BARRIER == c ? 1 : (C_ALLREDUCE == c && !converted && !raw);
                } else if (raw) {
                    want = 0;
                } else if (converted) {
                    want = K_BLOCKING == k
                           && (C_BCAST != c || (has_thresh && thresh > 0));
                } else {
                    want = 1;
                }
                if (K_PERSISTENT == k && C_BARRIER == c) {
                    continue; /* no persistent barrier is made here */
                }
                t_check(want ? n > 0 : n == 0, "%s: MPI_%s%s reached the component %llu times "
                        "(expected %s)", mode, kind_prefix[k], coll_names[c], n,
                        want ? "some" : "none");
            }
        }
        if (converted && has_thresh && thresh > 0) {
            /* bcasts above the threshold are the layer below's (counted as fallbacks) */
            unsigned long long fb = 0;
            t_pvar_read(&pv[K_BLOCKING][C_BCAST][1], &fb);
            t_check(fb - before[K_BLOCKING][C_BCAST][1] >= 3,
                    "converted: bcasts above %llu bytes handed down (%llu fallbacks)", thresh,
                    fb - before[K_BLOCKING][C_BCAST][1]);
        }
        t_section_end();
        t_pvars_close(&pv[0][0][0], K_N * C_N * 2);
    }
    MPI_Comm_free(&comm);
    return t_finish();
}
