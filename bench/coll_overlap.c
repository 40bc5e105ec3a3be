/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll_overlap: how much of a nonblocking collective hides behind computation.
 *
 *   coll_overlap -c iallreduce|ibarrier [-m MIN:MAX] [-i ITERS] [-x WARMUP]
 *                [-w busy|sleep] [-f csv|text] [-h]
 *
 * The OSU recipe (osu_iallreduce, osu_ibarrier), per message size, each
 * iteration followed by an untimed MPI_Barrier:
 *   t_pure     average time of post + MPI_Wait, nothing in between;
 *   t_total    average time of post + a busy loop calibrated to last about
 *              t_pure when alone (no MPI call inside) + MPI_Wait;
 *   t_compute  average wall time of that busy loop inside those iterations;
 *   overlap    100 * (1 - (t_total - t_compute) / t_pure), clamped to [0, 100]:
 *              100 means the whole collective ran while the host computed.
 * Time taken from the host while it computes (a progress thread sharing its
 * core) lengthens t_compute and so counts as overlapped, as in OSU; the column
 * host_cost% shows that price: how much longer the busy loop took than the
 * same loop with no collective outstanding.
 * For iallreduce a fourth number, nohost_us: the median time from the post until
 * the result is complete in the receive buffer while the host computes and makes
 * no MPI call at all (it only looks at the buffer); -1 when that did not happen
 * within 100 t_pure + 20 ms, i.e. the operation needs the host to progress.
 * With -w sleep the host sleeps (nanosleep) instead of computing: work that
 * leaves the core free (waiting for I/O or an accelerator), or a machine with
 * cores to spare; on cores fully used by ranks only the busy loop shows what a
 * progress thread costs them.
 * Each quantity is averaged over the ranks (gathered with MPI_Gather, so the
 * statistics do not use the reduction under test). iallreduce sums floats
 * (count = bytes / 4) and the last result is checked; ibarrier has no size.
 */
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

enum coll_kind { C_IALLREDUCE, C_IBARRIER };
static const char *const names[] = { "iallreduce", "ibarrier" };

struct options {
    enum coll_kind coll;
    long min_bytes;
    long max_bytes;
    int iters;      /* -1: by size */
    int warmup;     /* -1: a tenth of iters */
    int csv;
    int sleep;      /* -w sleep: the host sleeps instead of computing */
};

static volatile double sink;
static double loops_per_us = 1.0;

/* The host's "application work": floating-point busy work, no memory traffic,
 * no system or MPI calls. */
static void busy(long loops)
{
    double x = sink;
    for (long i = 0; i < loops; i++) {
        x = x * 0.999999 + 1e-7;
    }
    sink = x;
}

static void calibrate(void)
{
    long n = 1000;
    for (;;) {
        double t0 = MPI_Wtime();
        busy(n);
        double dt = MPI_Wtime() - t0;
        if (dt > 0.02) {
            loops_per_us = (double) n / (dt * 1e6);
            return;
        }
        n *= 2;
    }
}

static int host_sleeps;

static void compute_us(double us)
{
    if (host_sleeps) {
        struct timespec ts = { (time_t) (us / 1e6), (long) (us * 1000.0) % 1000000000L };
        nanosleep(&ts, NULL);
        return;
    }
    busy((long) (us * loops_per_us));
}

static void usage(FILE *out, const char *prog)
{
    fprintf(out,
            "usage: %s -c iallreduce|ibarrier [-m MIN:MAX] [-i ITERS] [-x WARMUP]\n"
            "          [-f csv|text] [-h]\n"
            "  -m MIN:MAX  message sizes in bytes, powers of two (default 8:1048576)\n"
            "  -i ITERS    timed iterations per size and phase (default 2000 below 8 KiB,\n"
            "              500 up to 128 KiB, 100 above)\n"
            "  -x WARMUP   untimed iterations per size (default ITERS / 10)\n"
            "  -w WORK     busy (default): a calibrated busy loop; sleep: nanosleep\n"
            "  -f FORMAT   csv: 'coll,bytes,pure_us,compute_us,total_us,overlap_pct,iters,"
            "nohost_us,host_cost_pct'\n",
            prog);
}

static int parse_args(int argc, char **argv, struct options *o, int verbose)
{
    int c, have = 0;
    o->min_bytes = 8;
    o->max_bytes = 1L << 20;
    o->iters = -1;
    o->warmup = -1;
    o->csv = 0;
    o->sleep = 0;
    opterr = verbose;
    while ((c = getopt(argc, argv, "c:m:i:x:f:w:h")) != -1) {
        switch (c) {
        case 'c':
            if (0 == strcmp(optarg, names[C_IALLREDUCE])) {
                o->coll = C_IALLREDUCE;
            } else if (0 == strcmp(optarg, names[C_IBARRIER])) {
                o->coll = C_IBARRIER;
            } else {
                if (verbose) {
                    fprintf(stderr, "coll_overlap: unknown collective '%s'\n", optarg);
                }
                return -1;
            }
            have = 1;
            break;
        case 'm': {
            char *colon = strchr(optarg, ':');
            char *end;
            errno = 0;
            if (NULL == colon) {
                o->max_bytes = strtol(optarg, &end, 10);
            } else {
                o->min_bytes = strtol(optarg, &end, 10);
                o->max_bytes = strtol(colon + 1, &end, 10);
            }
            if (0 != errno || o->min_bytes < 4 || o->max_bytes < o->min_bytes
                || o->max_bytes > (1L << 30)) {
                if (verbose) {
                    fprintf(stderr, "coll_overlap: bad size range '%s'\n", optarg);
                }
                return -1;
            }
            break;
        }
        case 'i':
            o->iters = atoi(optarg);
            if (o->iters < 1) {
                return -1;
            }
            break;
        case 'x':
            o->warmup = atoi(optarg);
            if (o->warmup < 0) {
                return -1;
            }
            break;
        case 'w':
            if (0 == strcmp(optarg, "sleep")) {
                o->sleep = 1;
            } else if (0 != strcmp(optarg, "busy")) {
                return -1;
            }
            break;
        case 'f':
            if (0 == strcmp(optarg, "csv")) {
                o->csv = 1;
            } else if (0 == strcmp(optarg, "text")) {
                o->csv = 0;
            } else {
                return -1;
            }
            break;
        case 'h':
            return 1;
        default:
            return -1;
        }
    }
    if (!have || optind != argc) {
        if (verbose) {
            fprintf(stderr, "coll_overlap: -c COLL is required\n");
        }
        return -1;
    }
    return 0;
}

static int post(const struct options *o, float *send, float *recv, int count, MPI_Request *req)
{
    if (C_IALLREDUCE == o->coll) {
        return MPI_Iallreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, req);
    }
    return MPI_Ibarrier(MPI_COMM_WORLD, req);
}

struct times {
    double total;     /* post [+ compute] + wait, us per iteration */
    double compute;   /* the compute alone inside it, us per iteration */
};

/* `iters` iterations of post [+ compute] + wait, each followed by an untimed
 * barrier (so every iteration starts together, as in OSU); with comm 0 the
 * compute only. Returns -1 in total on an MPI error. */
static struct times phase(const struct options *o, float *send, float *recv, int count,
                          int iters, int comm, double compute)
{
    struct times t = { 0.0, 0.0 };
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters; i++) {
        MPI_Request req;
        double t0 = MPI_Wtime();
        if (comm && MPI_SUCCESS != post(o, send, recv, count, &req)) {
            t.total = -1;
            return t;
        }
        double c0 = MPI_Wtime();
        if (compute > 0) {
            compute_us(compute);
        }
        double c1 = MPI_Wtime();
        if (comm && MPI_SUCCESS != MPI_Wait(&req, MPI_STATUS_IGNORE)) {
            t.total = -1;
            return t;
        }
        double t1 = MPI_Wtime();
        t.total += t1 - t0;
        t.compute += c1 - c0;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    t.total *= 1e6 / iters;
    t.compute *= 1e6 / iters;
    return t;
}

/* Median time until the result is in place with no MPI call (see above). */
static double nohost(float *send, float *recv, int count, int iters, double pure, int size)
{
    enum { MAXS = 200 };
    double t[MAXS];
    int n = iters < MAXS ? iters : MAXS, missed = 0;
    double limit = (100.0 * pure + 20000.0) * 1e-6;
    float want0 = (float) (size * (size + 1) / 2);
    for (int k = 0; k < n; k++) {
        for (int i = 0; i < count; i++) {
            recv[i] = -1.0f;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Request req;
        double t0 = MPI_Wtime(), d;
        MPI_Iallreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
        int done;
        do {
            busy(200);
            d = MPI_Wtime() - t0;
            /* one element per 4 KiB: every segment has at least one */
            done = 1;
            for (int i = 0; i < count && done; i += 1024) {
                done = ((volatile float *) recv)[i] == want0 * (float) (i % 5 + 1);
            }
            done = done && ((volatile float *) recv)[count - 1]
                               == want0 * (float) ((count - 1) % 5 + 1);
        } while (!done && d < limit);
        t[k] = done ? d * 1e6 : -1.0;
        missed += !done;
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (4 == k) {
            /* Five misses everywhere: it never moves without MPI calls; do
             * not wait out the limit 200 times. */
            int mine = missed < 5, anyone;
            MPI_Allreduce(&mine, &anyone, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            if (!anyone) {
                return -1.0;
            }
        }
    }
    if (missed > n / 2) {
        return -1.0;
    }
    for (int i = 1; i < n; i++) {   /* insertion sort; misses count as longest */
        double v = t[i] < 0 ? 1e30 : t[i];
        int j = i - 1;
        while (j >= 0 && (t[j] < 0 ? 1e30 : t[j]) > v) {
            t[j + 1] = t[j];
            j--;
        }
        t[j + 1] = t[i] < 0 && v == 1e30 ? -1.0 : v;
    }
    return t[n / 2];
}

static double average(double v, int rank, int size)
{
    double *all = 0 == rank ? malloc(sizeof(double) * (size_t) size) : NULL;
    MPI_Gather(&v, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    double s = 0;
    if (0 == rank) {
        for (int r = 0; r < size; r++) {
            s += all[r];
        }
        s /= size;
        free(all);
    }
    MPI_Bcast(&s, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return s;
}

int main(int argc, char **argv)
{
    struct options o;
    int rank, size, status = EXIT_SUCCESS;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = parse_args(argc, argv, &o, 0 == rank);
    if (0 != rc) {
        if (0 == rank) {
            usage(rc > 0 ? stdout : stderr, argv[0]);
        }
        MPI_Finalize();
        return rc > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
    }
    calibrate();
    host_sleeps = o.sleep;
    if (host_sleeps) {
        /* Sleeps of microseconds, not the default 50 us of timer slack. */
        prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    }
    long alloc = C_IBARRIER == o.coll ? 4 : o.max_bytes;
    float *send = malloc((size_t) alloc), *recv = malloc((size_t) alloc);
    memset(recv, 0, (size_t) alloc);
    for (long i = 0; i < alloc / 4; i++) {
        send[i] = (float) ((rank + 1) * (int) (i % 5 + 1));
    }
    /* A blocking collective first: some components set a communicator up there. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        if (o.csv) {
            printf("coll,bytes,pure_us,compute_us,total_us,overlap_pct,iters,nohost_us,"
                   "host_cost_pct\n");
        } else {
            printf("# coll_overlap: MPI_%s, %d ranks, host %s\n", names[o.coll], size,
                   o.sleep ? "sleeps" : "computes");
            printf("%-11s %10s %10s %11s %10s %9s %7s %10s %10s\n", "# coll", "bytes",
                   "pure_us", "compute_us", "total_us", "overlap%", "iters", "nohost_us",
                   "host_cost%");
        }
        fflush(stdout);
    }
    long first = 1;
    while (first < o.min_bytes) {
        first <<= 1;
    }
    for (long bytes = first; bytes <= o.max_bytes; bytes <<= 1) {
        int count = (int) (bytes / 4);
        int iters = o.iters > 0 ? o.iters : bytes < 8192 ? 2000 : bytes <= 131072 ? 500 : 100;
        int warmup = o.warmup >= 0 ? o.warmup : (iters / 10 > 0 ? iters / 10 : 1);
        if (phase(&o, send, recv, count, warmup, 1, 0).total < 0) {
            fprintf(stderr, "coll_overlap: rank %d: MPI_%s failed\n", rank, names[o.coll]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        double pure = average(phase(&o, send, recv, count, iters, 1, 0).total, rank, size);
        double alone = average(phase(&o, send, recv, count, iters, 0, pure).compute, rank, size);
        struct times both = phase(&o, send, recv, count, iters, 1, pure);
        double total = average(both.total, rank, size);
        double comp = average(both.compute, rank, size);
        double cost = alone > 0 ? 100.0 * (comp - alone) / alone : 0.0;
        if (C_IALLREDUCE == o.coll) {
            int bad = 0;
            for (int i = 0; i < count && !bad; i++) {
                bad = recv[i] != (float) (size * (size + 1) / 2 * (i % 5 + 1));
            }
            int any = 0;
            MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            if (any) {
                if (bad) {
                    fprintf(stderr, "coll_overlap: rank %d: wrong result at %ld bytes\n", rank,
                            bytes);
                }
                status = EXIT_FAILURE;
                break;
            }
        }
        double nohost_us = -1.0;
        if (C_IALLREDUCE == o.coll && !o.sleep) {
            /* the worst rank decides: a rank whose result never came counts */
            double mine = nohost(send, recv, count, iters, pure, size);
            double worst = mine < 0 ? 1e30 : mine;
            MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            nohost_us = worst >= 1e30 ? -1.0 : worst;
        }
        double overlap = pure > 0 ? 100.0 * (1.0 - (total - comp) / pure) : 0.0;
        overlap = overlap < 0 ? 0 : overlap > 100 ? 100 : overlap;
        if (0 == rank) {
            long shown = C_IBARRIER == o.coll ? 0 : bytes;
            if (o.csv) {
                printf("%s,%ld,%.3f,%.3f,%.3f,%.1f,%d,%.1f,%.1f\n", names[o.coll], shown, pure,
                       comp, total, overlap, iters, nohost_us, cost);
            } else {
                printf("%-11s %10ld %10.2f %11.2f %10.2f %9.1f %7d %10.1f %10.1f\n",
                       names[o.coll], shown, pure, comp, total, overlap, iters, nohost_us, cost);
            }
            fflush(stdout);
        }
        if (C_IBARRIER == o.coll) {
            break;
        }
    }
    free(send);
    free(recv);
    MPI_Finalize();
    return status;
}
