/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * The node leaders' level on the libfabric NIC (run across hosts with
 * --mca coll_offload_ofi 1 --mca coll_offload_ofi_after 0; see run-cluster.sh).
 *
 *   allreduce  int64 SUM, double SUM (integer-valued, so exact), unsigned long
 *              MIN and MAX (values above 2^63: the NIC's ALU compares them as
 *              unsigned), counts 1, 7, 1000 and 70000 (several segments), in
 *              place and not, results checked against sums and extremes
 *              computed here from every rank's inputs;
 *   reduce     int64 SUM of 393221 and 262144 elements (3 and 2 MiB: the
 *              node-aware reduce crosses the node level in 1 MiB chunks
 *              through the leader's scratch; the last one partial or not),
 *              to the first and the last rank, in place at the root and not;
 *   barrier    many, back to back;
 *   counters   with --expect-offload: every node leader's
 *              coll_offload_ofi_writes and _bytes rose (it sent over the
 *              network), the other ranks' stayed at 0 (only leaders touch it),
 *              and coll_offload_allreduce_offloaded counted every call; with
 *              --expect-triggered the leaders' coll_offload_ofi_triggered rose
 *              (the small allreduces and the barriers ran as native triggered
 *              operations), without it it stayed at 0 (software triggering:
 *              number of nodes not a power of two, or coll_offload_ofi_native 0).
 */
#include "t_common.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t ival(int r, size_t i, int it)
{
    return (int64_t) (t_hash3(11, (uint64_t) r, i * 31 + (uint64_t) it) % 2000001) - 1000000;
}

static unsigned long uval(int r, size_t i, int it)
{
    return (unsigned long) t_hash3(12, (uint64_t) r, i * 31 + (uint64_t) it);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "t_net");
    int rank = t_wrank, size = t_wsize;
    enum { NPV = 4 };
    t_pvar_t pv[NPV] = { { .name = "coll_offload_ofi_writes" },
                         { .name = "coll_offload_ofi_bytes" },
                         { .name = "coll_offload_allreduce_offloaded" },
                         { .name = "coll_offload_ofi_triggered" } };
    unsigned long long before[NPV] = { 0 }, after[NPV] = { 0 };
    if (t_opt.expect_offload) {
        t_pvars_open(pv, NPV);
        for (int k = 0; k < NPV; ++k) {
            t_check(t_pvar_read(&pv[k], &before[k]), "pvar %s readable", pv[k].name);
        }
    }
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int lrank;
    MPI_Comm_rank(node, &lrank);

    static const size_t counts[] = { 1, 7, 1000, 70000 };
    const int iters = t_opt.quick ? 10 : 40;
    size_t maxc = 70000;
    int64_t *is = malloc(maxc * sizeof(int64_t)), *ir = malloc(maxc * sizeof(int64_t));
    double *ds = malloc(maxc * sizeof(double)), *dr = malloc(maxc * sizeof(double));
    unsigned long *us = malloc(maxc * sizeof(unsigned long));
    unsigned long *ur = malloc(maxc * sizeof(unsigned long));
    unsigned long long calls = 0;
    t_section_begin("allreduce over the leaders' NIC");
    for (int it = 0; it < iters; ++it) {
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {
            size_t n = counts[ci];
            int inplace = (it + (int) ci) % 2;
            for (size_t i = 0; i < n; ++i) {
                is[i] = ival(rank, i, it);
                ds[i] = (double) ival(rank, i, it + 1000);
                us[i] = uval(rank, i, it);
            }
            if (inplace) {
                memcpy(ir, is, n * sizeof(int64_t));
            }
            int rc = MPI_Allreduce(inplace ? MPI_IN_PLACE : is, ir, (int) n, MPI_INT64_T,
                                   MPI_SUM, MPI_COMM_WORLD);
            rc |= MPI_Allreduce(ds, dr, (int) n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            MPI_Op uop = it % 2 ? MPI_MAX : MPI_MIN;
            rc |= MPI_Allreduce(us, ur, (int) n, MPI_UNSIGNED_LONG, uop, MPI_COMM_WORLD);
            calls += 3;
            size_t bad = 0, first = 0;
            for (size_t i = 0; i < n; ++i) {
                int64_t isum = 0;
                double dsum = 0;
                unsigned long u = uval(0, i, it);
                for (int r = 0; r < size; ++r) {
                    isum += ival(r, i, it);
                    dsum += (double) ival(r, i, it + 1000);
                    unsigned long v = uval(r, i, it);
                    u = it % 2 ? (v > u ? v : u) : (v < u ? v : u);
                }
                if (ir[i] != isum || dr[i] != dsum || ur[i] != u) {
                    first = bad++ ? first : i;
                }
            }
            t_check(MPI_SUCCESS == rc && 0 == bad,
                    "iteration %d count %zu%s: rc %d, %zu of %zu elements wrong (first [%zu])",
                    it, n, inplace ? " in place" : "", rc, bad, n, first);
        }
    }
    t_section_end();
    t_section_begin("node-aware reduce in chunks");
    {
        const size_t big = 393221;
        int64_t *bs = malloc(big * sizeof(int64_t)), *br = malloc(big * sizeof(int64_t));
        for (int k = 0; k < 4; ++k) {
            int root = k % 2 ? size - 1 : 0;
            int inplace = k / 2;
            int n = k % 2 ? 262144 : (int) big;
            for (size_t i = 0; i < big; ++i) {
                bs[i] = ival(rank, i, 7 + k);
            }
            int rc;
            if (inplace && rank == root) {
                memcpy(br, bs, big * sizeof(int64_t));
                rc = MPI_Reduce(MPI_IN_PLACE, br, n, MPI_INT64_T, MPI_SUM, root, MPI_COMM_WORLD);
            } else {
                rc = MPI_Reduce(bs, br, n, MPI_INT64_T, MPI_SUM, root, MPI_COMM_WORLD);
            }
            size_t bad = 0, first = 0, used = (size_t) n;
            for (size_t i = 0; rank == root && i < used; ++i) {
                int64_t want = 0;
                for (int r = 0; r < size; ++r) {
                    want += ival(r, i, 7 + k);
                }
                if (br[i] != want) {
                    first = bad++ ? first : i;
                }
            }
            t_check(MPI_SUCCESS == rc && 0 == bad,
                    "reduce of %d int64 to %d%s: rc %d, %zu wrong (first [%zu])", n, root,
                    inplace ? " in place" : "", rc, bad, first);
        }
        free(bs);
        free(br);
    }
    t_section_end();
    t_section_begin("barrier over the leaders' NIC");
    for (int k = 0; k < 200; ++k) {
        t_check_rc(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    }
    t_section_end();
    if (t_opt.expect_offload) {
        t_section_begin("counters");
        for (int k = 0; k < NPV; ++k) {
            t_pvar_read(&pv[k], &after[k]);
        }
        if (0 == lrank && t_opt.expect_triggered) {
            t_check(after[3] > before[3], "node leader %d: ofi_triggered %llu -> %llu (must rise)",
                    rank, before[3], after[3]);
        } else {
            t_check(after[3] == before[3], "rank %d: ofi_triggered %llu -> %llu (must not move%s)",
                    rank, before[3], after[3], 0 == lrank ? ": software triggering" : "");
        }
        if (0 == lrank) {
            t_check(after[0] > before[0] && after[1] > before[1],
                    "node leader %d: ofi_writes %llu -> %llu, ofi_bytes %llu -> %llu (must rise)",
                    rank, before[0], after[0], before[1], after[1]);
        } else {
            t_check(after[0] == before[0] && after[1] == before[1],
                    "rank %d (not a leader) sent over the network: writes %llu -> %llu", rank,
                    before[0], after[0]);
        }
        t_check(after[2] - before[2] >= calls,
                "allreduce_offloaded rose by %llu, %llu calls made", after[2] - before[2],
                calls);
        t_pvars_close(pv, NPV);
        t_section_end();
    }
    free(is);
    free(ir);
    free(ds);
    free(dr);
    free(us);
    free(ur);
    MPI_Comm_free(&node);
    return t_finish();
}
