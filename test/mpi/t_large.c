/*
 * Copyright (c) 2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * MPI-4's large-count bindings (MPI_Allreduce_c, MPI_Reduce_c, MPI_Bcast_c), which
 * Open MPI 6 passes to the components as size_t counts: a small count through them
 * runs as any call (offloaded where the component takes it), and a count above
 * INT_MAX goes to the layer below on every rank, with the right result. Where mpi.h
 * has no such bindings (Open MPI 4.1 and 5.0) every case is a skip.
 *
 * The large cases move 2 GiB + 64 bytes per rank (about 6 GiB in all at np 2); run
 * with --quick to leave them out.
 */
#include "t_common.h"

#include <limits.h>

#if MPI_VERSION >= 4

enum { C_ALLREDUCE, C_REDUCE, C_BCAST, C_N };
static const char *coll_names[C_N] = { "allreduce", "reduce", "bcast" };
static t_pvar_t pv[C_N][2];
static char pv_names[C_N][2][64];

static unsigned long long counter(int c, int f)
{
    unsigned long long v = 0;
    t_pvar_read(&pv[c][f], &v);
    return v;
}

/* Cheap enough for 2 GiB, and no two nearby bytes or ranks alike. */
static unsigned char pattern(size_t i, int rank)
{
    return (unsigned char) (i ^ (i >> 11) ^ (i >> 23) ^ (size_t) (rank * 0x5b + 1));
}

/* The byte rank `rank` contributes, or (ranks > 0) the MPI_BOR of ranks 0..ranks-1's. */
static unsigned char expected(size_t i, int rank, int ranks)
{
    unsigned char want = ranks > 0 ? 0 : pattern(i, rank);
    for (int r = 0; r < ranks; r++) {
        want |= pattern(i, r);
    }
    return want;
}

/* The first byte of buf[0..n) that is not expected(i, rank, ranks), or n. */
static size_t first_wrong(const unsigned char *buf, size_t n, int rank, int ranks)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] != expected(i, rank, ranks)) {
            return i;
        }
    }
    return n;
}

static void small_counts(MPI_Comm comm, int rank, int size)
{
    const MPI_Count n = 1000;
    double in[1000], out[1000];
    for (int i = 0; i < n; i++) {
        in[i] = (double) (rank * 1000 + i);
    }
    unsigned long long off0 = counter(C_ALLREDUCE, 0);
    t_check_rc(MPI_Allreduce_c(in, out, n, MPI_DOUBLE, MPI_SUM, comm), "MPI_Allreduce_c");
    int bad = -1;
    for (int i = 0; i < n && bad < 0; i++) {
        double want = 0;
        for (int r = 0; r < size; r++) {
            want += (double) (r * 1000 + i);
        }
        bad = out[i] == want ? -1 : i;
    }
    t_check(bad < 0, "MPI_Allreduce_c of %lld doubles: element %d wrong", (long long) n, bad);
    if (t_opt.expect_offload) {
        t_check(counter(C_ALLREDUCE, 0) > off0,
                "MPI_Allreduce_c of 1000 doubles ran offloaded (counter %llu -> %llu)", off0,
                counter(C_ALLREDUCE, 0));
    }
    char bytes[200];
    for (int i = 0; i < 200; i++) {
        bytes[i] = (char) (0 == rank ? i : 0);
    }
    t_check_rc(MPI_Bcast_c(bytes, 200, MPI_CHAR, 0, comm), "MPI_Bcast_c");
    bad = -1;
    for (int i = 0; i < 200 && bad < 0; i++) {
        bad = bytes[i] == (char) i ? -1 : i;
    }
    t_check(bad < 0, "MPI_Bcast_c of 200 bytes: byte %d wrong", bad);
}

/* count > INT_MAX: the layer below's, on every rank (the fallback counter says so) */
static void large_counts(MPI_Comm comm, int rank, int size)
{
    const size_t n = (size_t) INT_MAX + 65;
    unsigned char *buf = malloc(n);
    if (NULL == buf) {
        t_skip("large counts: no memory for %zu bytes", n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        buf[i] = 0 == rank ? pattern(i, 0) : 0;
    }
    unsigned long long fb0 = counter(C_BCAST, 1);
    t_check_rc(MPI_Bcast_c(buf, (MPI_Count) n, MPI_BYTE, 0, comm), "MPI_Bcast_c (large)");
    size_t bad = first_wrong(buf, n, 0, 0);
    t_check(bad == n, "MPI_Bcast_c of %zu bytes: byte %zu wrong", n, bad);
    if (t_opt.expect_offload) {
        t_check(counter(C_BCAST, 1) == fb0 + 1, "MPI_Bcast_c of %zu bytes went to the layer below "
                "(fallback counter %llu -> %llu)", n, fb0, counter(C_BCAST, 1));
    }
    /* MPI_BOR of bytes: rank r contributes pattern(i, r); the root's own in place */
    for (size_t i = 0; i < n; i++) {
        buf[i] = pattern(i, rank);
    }
    fb0 = counter(C_REDUCE, 1);
    int root = size - 1;
    t_check_rc(MPI_Reduce_c(rank == root ? MPI_IN_PLACE : buf, rank == root ? buf : NULL,
                            (MPI_Count) n, MPI_BYTE, MPI_BOR, root, comm), "MPI_Reduce_c (large)");
    if (rank == root) {
        bad = first_wrong(buf, n, 0, size);
        t_check(bad == n, "MPI_Reduce_c of %zu bytes (MPI_BOR): byte %zu wrong", n, bad);
    }
    if (t_opt.expect_offload) {
        t_check(counter(C_REDUCE, 1) == fb0 + 1, "MPI_Reduce_c of %zu bytes went to the layer "
                "below (fallback counter %llu -> %llu)", n, fb0, counter(C_REDUCE, 1));
    }
    free(buf);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "t_large");
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int c = 0; c < C_N; c++) {
        for (int f = 0; f < 2; f++) {
            snprintf(pv_names[c][f], sizeof(pv_names[c][f]), "coll_offload_%s_%s",
                     coll_names[c], f ? "fallback" : "offloaded");
            pv[c][f].name = pv_names[c][f];
        }
    }
    if (t_opt.expect_offload) {
        t_pvars_open(&pv[0][0], C_N * 2);
    }
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    t_section_begin("small counts through the _c bindings");
    small_counts(comm, rank, size);
    t_section_end();
    t_section_begin("counts above INT_MAX");
    if (t_opt.quick) {
        t_skip("counts above INT_MAX: --quick");
    } else {
        large_counts(comm, rank, size);
    }
    t_section_end();
    if (t_opt.expect_offload) {
        t_pvars_close(&pv[0][0], C_N * 2);
    }
    MPI_Comm_free(&comm);
    return t_finish();
}

#else

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "t_large");
    t_section_begin("large-count bindings");
    t_skip("mpi.h has MPI_VERSION %d: no MPI-4 large-count bindings", MPI_VERSION);
    t_section_end();
    return t_finish();
}

#endif
