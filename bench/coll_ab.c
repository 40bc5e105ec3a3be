/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll_ab: offload against the layer below in one job, window by window, with the
 * machine's phase measured beside them.
 *
 *   mpirun -np N coll_ab -c allreduce|reduce|bcast -b BYTES [-w WINDOWS] [-i ITERS]
 *
 * Two communicators of the same job: one with the component's defaults, one made with
 * the info key coll_offload_rules set to hand every call to the layer below (normally
 * tuned). Each window times ITERS back-to-back calls on each (MPI_FLOAT / MPI_SUM for the
 * reductions, MPI_CHAR for bcast, root 0, page-aligned buffers), then the round trip of
 * one cache line between ranks 0 and 1 through MPI shared memory. Rank 0 prints a line a
 * window: the round trip, both latencies (the slowest rank's) and their ratio.
 *
 * Why: on a virtual machine the host moves vCPUs between cores near each other and far
 * apart, for seconds at a time (a round trip of 120-140 ns in one phase, 400-550 in the
 * other), and every collective's time follows. Two separate jobs compared side by side can
 * land in different phases; the two halves of one window share it. The last call of each
 * window is checked (every rank contributes 1.0 per element, or the root's bytes), so a
 * wrong result stops the program instead of being timed.
 */
#include <mpi.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { C_ALLREDUCE, C_REDUCE, C_BCAST };

static void usage(void)
{
    fprintf(stderr, "usage: coll_ab -c allreduce|reduce|bcast -b BYTES [-w WINDOWS] "
                    "[-i ITERS]\n");
}

static void call(int coll, float *s, float *r, long bytes, MPI_Comm comm)
{
    int n = (int) (bytes / (long) sizeof(float));
    if (C_ALLREDUCE == coll) {
        MPI_Allreduce(s, r, n, MPI_FLOAT, MPI_SUM, comm);
    } else if (C_REDUCE == coll) {
        MPI_Reduce(s, r, n, MPI_FLOAT, MPI_SUM, 0, comm);
    } else {
        MPI_Bcast(s, (int) bytes, MPI_CHAR, 0, comm);
    }
}

/* 1 when the last call's result is right on this rank. */
static int result_ok(int coll, const float *s, const float *r, long bytes, int rank, int size)
{
    if (C_BCAST == coll) {
        const unsigned char *b = (const unsigned char *) s;
        for (long i = 0; i < bytes; ++i) {
            if (b[i] != (unsigned char) (i * 7 + 3)) {
                return 0;
            }
        }
        return 1;
    }
    if (C_REDUCE == coll && 0 != rank) {
        return 1;
    }
    for (long i = 0; i < bytes / (long) sizeof(float); ++i) {
        if (r[i] != (float) size) {
            return 0;
        }
    }
    return 1;
}

static void fill(int coll, float *s, long bytes, int rank)
{
    if (C_BCAST == coll) {
        unsigned char *b = (unsigned char *) s;
        for (long i = 0; i < bytes; ++i) {
            b[i] = 0 == rank ? (unsigned char) (i * 7 + 3) : 0;
        }
        return;
    }
    for (long i = 0; i < bytes / (long) sizeof(float); ++i) {
        s[i] = 1.0f;
    }
}

int main(int argc, char **argv)
{
    int rank, size, coll = -1, windows = 20, iters = 0, opt;
    long bytes = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    opterr = 0 == rank;
    while ((opt = getopt(argc, argv, "c:b:w:i:")) != -1) {
        if ('c' == opt) {
            coll = 0 == strcmp(optarg, "allreduce") ? C_ALLREDUCE
                   : 0 == strcmp(optarg, "reduce")  ? C_REDUCE
                   : 0 == strcmp(optarg, "bcast")   ? C_BCAST : -1;
        } else if ('b' == opt) {
            bytes = atol(optarg);
        } else if ('w' == opt) {
            windows = atoi(optarg);
        } else if ('i' == opt) {
            iters = atoi(optarg);
        } else {
            coll = -1;
            break;
        }
    }
    if (coll < 0 || bytes < (long) sizeof(float) || windows < 1 || iters < 0 || size < 2
        || (C_BCAST != coll && 0 != bytes % (long) sizeof(float))) {
        if (0 == rank) {
            usage();
            if (size < 2) {
                fprintf(stderr, "coll_ab: needs at least 2 ranks\n");
            }
        }
        MPI_Finalize();
        return 2;
    }
    if (0 == iters) {
        iters = bytes >= 65536 ? 100 : 2000;
    }
    float *s = NULL, *r = NULL;
    if (0 != posix_memalign((void **) &s, 4096, (size_t) bytes)
        || 0 != posix_memalign((void **) &r, 4096, (size_t) bytes)) {
        fprintf(stderr, "coll_ab: no memory for %ld bytes\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(r, 0, (size_t) bytes);

    /* an empty rule list: the defaults, whatever a rules file says */
    MPI_Comm comm[2];
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "coll_offload_rules", " ");
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm[0]);
    MPI_Info_set(info, "coll_offload_rules",
                 "allreduce 1+ policy=fallback;reduce 1+ policy=fallback;"
                 "bcast 1+ policy=fallback;barrier 1+ policy=fallback");
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm[1]);
    MPI_Info_free(&info);

    MPI_Win win;
    _Atomic long *line;
    MPI_Aint wsize;
    int disp;
    MPI_Win_allocate_shared(0 == rank ? 4096 : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &line,
                            &win);
    MPI_Win_shared_query(win, 0, &wsize, &disp, &line);
    if (0 == rank) {
        atomic_store(line, 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    if (0 == rank) {
        printf("# coll_ab: %s %ld B, %d ranks, %d calls a window; round trip of a cache line "
               "between ranks 0 and 1; latencies in us (slowest rank)\n",
               C_ALLREDUCE == coll ? "allreduce" : C_REDUCE == coll ? "reduce" : "bcast",
               bytes, size, iters);
        printf("%6s %10s %10s %10s %8s\n", "window", "rt_ns", "offload", "below", "b/o");
    }
    const long trips = 2000;
    long next = 0;
    int bad = 0;
    for (int w = 0; w < windows && !bad; ++w) {
        double lat[2];
        for (int k = 0; k < 2; ++k) {
            fill(coll, s, bytes, rank);
            MPI_Barrier(comm[k]);
            double t0 = MPI_Wtime();
            for (int i = 0; i < iters; ++i) {
                call(coll, s, r, bytes, comm[k]);
            }
            double mine = (MPI_Wtime() - t0) / iters * 1e6;
            MPI_Allreduce(&mine, &lat[k], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            int ok = result_ok(coll, s, r, bytes, rank, size), all_ok;
            MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
            if (!all_ok) {
                if (0 == rank) {
                    fprintf(stderr, "coll_ab: WRONG RESULT (%s, window %d)\n",
                            0 == k ? "offload" : "below", w);
                }
                bad = 1;
                break;
            }
        }
        if (bad) {
            break;
        }
        /* ranks 0 and 1 pass one line back and forth; the others wait at the barrier */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (long i = 0; i < trips && rank < 2; ++i, next += 2) {
            if (0 == rank) {
                atomic_store(line, next + 1);
                while (atomic_load(line) != next + 2) {
                }
            } else {
                while (atomic_load(line) != next + 1) {
                }
                atomic_store(line, next + 2);
            }
        }
        double rt = (MPI_Wtime() - t0) / (double) trips * 1e9;
        if (rank >= 2) {
            next += 2 * trips;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (0 == rank) {
            printf("%6d %10.0f %10.2f %10.2f %8.2f\n", w, rt, lat[0], lat[1], lat[1] / lat[0]);
            fflush(stdout);
        }
    }
    MPI_Win_free(&win);
    MPI_Comm_free(&comm[0]);
    MPI_Comm_free(&comm[1]);
    free(s);
    free(r);
    MPI_Finalize();
    return bad ? 1 : 0;
}
