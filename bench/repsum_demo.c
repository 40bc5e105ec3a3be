/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * repsum_demo: ordinary and reproducible sums of the same data, and what the
 * reproducible ones cost.
 *
 *   repsum_demo              print, for this number of ranks, the ordinary and
 *                            the reproducible MPI_Allreduce sums of three values
 *                            whose global data do not depend on the rank count
 *                            (run it at np 1..8: bench/repsum-demo.sh)
 *   repsum_demo -t [BLOCKS [COUNT...]]
 *                            time MPI_Allreduce of COUNT doubles (default 1, 8192
 *                            and 131072: 8 B, 64 KiB, 1 MiB) on two communicators
 *                            duplicated from MPI_COMM_WORLD, one with the info key
 *                            coll_offload_repsum=true and one with =false, in
 *                            alternating blocks (BLOCKS, default 40): each size's
 *                            median block per call and the median of the blocks'
 *                            ratios
 *
 * The data: value j is the sum of the atoms +H, c, f1..f6, -H with H far above
 * the others; each rank contributes the exact sum of the atoms it holds. The
 * exact total c + f1 + ... + f6 is a double, and the reproducible sum returns it
 * at every rank count; the ordinary sum depends on where the +H and -H meet the
 * small atoms.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int np, rank;

static double share(int j, double *total)
{
    static const double f[3][6] = {
        { 0x1.8p-20, 0x1.3p-19, -0x1.1p-21, 0x1.7p-18, 0x1.fp-22, 0x1.5p-20 },
        { 0x1.1p-3, -0x1.9p-4, 0x1.3p-6, 0x1.dp-5, -0x1.1p-7, 0x1.6p-2 },
        { 0x1.ap-30, 0x1.2p-31, 0x1.4p-29, -0x1.ep-33, 0x1.1p-30, 0x1.9p-32 },
    };
    static const double big[3] = { 0x1p40, 0x1p57, 0x1p24 };
    static const double c[3] = { 0x1.4p0, 0x1.8p6, 0x1.2p-6 };   /* on big + c's grid */
    double fsum = 0;
    for (int k = 0; k < 6; ++k) {
        fsum += f[j][k];
    }
    *total = c[j] + fsum;
    int r = (rank + j) % np;
    if (1 == np) {
        return c[j] + fsum;
    }
    if (2 == np) {
        return 0 == r ? c[j] : fsum;
    }
    if (0 == r) {
        return big[j] + c[j];
    }
    if (np - 1 == r) {
        return -big[j];
    }
    double s = 0;
    for (int k = 0; k < 6; ++k) {
        s += (k % (np - 2) == r - 1) ? f[j][k] : 0.0;
    }
    return s;
}

static MPI_Comm dup_with(const char *value)
{
    MPI_Info info;
    MPI_Comm comm;
    MPI_Info_create(&info);
    MPI_Info_set(info, "coll_offload_repsum", value);
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm);
    MPI_Info_free(&info);
    return comm;
}

static void demo(MPI_Comm plain, MPI_Comm rs)
{
    double in[3], total[3], ordinary[3], reproducible[3];
    for (int j = 0; j < 3; ++j) {
        in[j] = share(j, &total[j]);
    }
    MPI_Allreduce(in, ordinary, 3, MPI_DOUBLE, MPI_SUM, plain);
    MPI_Allreduce(in, reproducible, 3, MPI_DOUBLE, MPI_SUM, rs);
    if (0 == rank) {
        for (int j = 0; j < 3; ++j) {
            printf("np=%d value %d: ordinary %-24.17g reproducible %-24.17g exact %.17g%s\n", np,
                   j, ordinary[j], reproducible[j], total[j],
                   reproducible[j] == total[j] ? "" : "  (reproducible differs from exact!)");
        }
    }
}

static double block(MPI_Comm comm, double *buf, double *out, int count, int iters)
{
    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
        MPI_Allreduce(buf, out, count, MPI_DOUBLE, MPI_SUM, comm);
    }
    double dt = (MPI_Wtime() - t0) / iters, max = 0;
    MPI_Allreduce(&dt, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return max;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static void timing(MPI_Comm plain, MPI_Comm rs, int blocks, const int *counts, int ncounts)
{
    for (int s = 0; s < ncounts; ++s) {
        int n = counts[s];
        /* about 1 M doubles per block, 10 to 2000 calls */
        int iters = n > 0 ? (1 << 20) / n : 2000;
        iters = iters < 10 ? 10 : iters > 2000 ? 2000 : iters;
        double *buf = malloc((size_t) n * sizeof(double));
        double *out = malloc((size_t) n * sizeof(double));
        double *tp = malloc((size_t) blocks * sizeof(double));
        double *tr = malloc((size_t) blocks * sizeof(double));
        double *ratio = malloc((size_t) blocks * sizeof(double));
        for (int i = 0; i < n; ++i) {
            buf[i] = ldexp(1.0 + (double) ((i * 2654435761u) % 1000) / 1000.0, i % 60 - 30);
        }
        block(plain, buf, out, n, iters);   /* warm-up: set-up and staging */
        block(rs, buf, out, n, iters);
        for (int b = 0; b < blocks; ++b) {
            /* alternate which goes first, so a drift in the machine hits both */
            if (b & 1) {
                tr[b] = block(rs, buf, out, n, iters);
                tp[b] = block(plain, buf, out, n, iters);
            } else {
                tp[b] = block(plain, buf, out, n, iters);
                tr[b] = block(rs, buf, out, n, iters);
            }
            ratio[b] = tr[b] / tp[b];
        }
        qsort(tp, (size_t) blocks, sizeof(double), cmp);
        qsort(tr, (size_t) blocks, sizeof(double), cmp);
        qsort(ratio, (size_t) blocks, sizeof(double), cmp);
        if (0 == rank) {
            printf("np=%d allreduce %7zu B doubles: ordinary %9.2f us, reproducible %9.2f us, "
                   "ratio median %.2f (blocks: %.2f..%.2f, quartiles %.2f..%.2f; fastest "
                   "blocks %.2f and %.2f us)\n",
                   np, (size_t) n * sizeof(double), tp[blocks / 2] * 1e6, tr[blocks / 2] * 1e6,
                   ratio[blocks / 2], ratio[0], ratio[blocks - 1], ratio[blocks / 4],
                   ratio[3 * blocks / 4], tp[0] * 1e6, tr[0] * 1e6);
        }
        free(buf);
        free(out);
        free(tp);
        free(tr);
        free(ratio);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm plain = dup_with("false"), rs = dup_with("true");
    if (argc > 1 && 0 == strcmp(argv[1], "-t")) {
        int blocks = argc > 2 ? atoi(argv[2]) : 40;
        int defaults[] = { 1, 8192, 131072 }, *counts = defaults, ncounts = 3;
        if (argc > 3) {
            ncounts = argc - 3;
            counts = malloc((size_t) ncounts * sizeof(int));
            for (int i = 0; i < ncounts; ++i) {
                counts[i] = atoi(argv[3 + i]);
            }
        }
        timing(plain, rs, blocks > 2 ? blocks : 3, counts, ncounts);
        if (counts != defaults) {
            free(counts);
        }
    } else {
        demo(plain, rs);
    }
    MPI_Comm_free(&plain);
    MPI_Comm_free(&rs);
    MPI_Finalize();
    return 0;
}
