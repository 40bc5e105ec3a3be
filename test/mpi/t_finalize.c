/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * A job that ends right after its only nonblocking and persistent calls: the
 * progress agent is started by the first of them, and may not have run at all
 * before MPI_Finalize. Whatever it does when it finally runs must not depend on
 * what Open MPI shuts down in MPI_Finalize (Open MPI 5 finalizes PMIx, and with
 * it the runtime, before it closes the collective components, where the agent
 * is stopped). One run is one check of the runner (run.sh runs it many times in
 * a row): it passes when the job ends with status 0 and prints its summary.
 *
 * Usage: t_finalize [ITERS]
 *   ITERS  rounds of MPI_Iallreduce, MPI_Ibarrier and a persistent barrier
 *          before the last start (default 1)
 *
 * The checks are t_common.h's; the summary ("t_finalize: N passed, M failed,
 * K skipped") is printed by rank 0 after the last checked call, from totals summed
 * with a nonblocking call (t_finish's blocking ones would come between the agent's
 * start and the end of the job); then every rank starts and waits for the
 * persistent barrier once more, frees it and finalizes. A rank whose own checks
 * failed, the last one included, exits with status 1.
 */
#include "t_common.h"
#include "mpi_persist.h"

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 1;
    if (argc > 1) {
        argv[1] = argv[0];
        argc--;
        argv++;
    }
    if (iters < 1) {
        iters = 1;
    }
    t_init(&argc, &argv, "t_finalize");
    int size = t_wsize;

    MPI_Request barrier = MPI_REQUEST_NULL;
    t_check_rc(MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &barrier), "MPI_Barrier_init");
    for (int it = 0; it < iters; ++it) {
        int in[2] = { t_wrank + 1, 1 }, out[2] = { 0, 0 };
        MPI_Request req;
        int rc = MPI_Iallreduce(in, out, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
        if (MPI_SUCCESS == rc) {
            rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        t_check(MPI_SUCCESS == rc && out[0] == size * (size + 1) / 2 && out[1] == size,
                "MPI_Iallreduce: rc=%d, %d %d", rc, out[0], out[1]);
        rc = MPI_Ibarrier(MPI_COMM_WORLD, &req);
        if (MPI_SUCCESS == rc) {
            rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        t_check_rc(rc, "MPI_Ibarrier");
        rc = MPI_Start(&barrier);
        if (MPI_SUCCESS == rc) {
            rc = MPI_Wait(&barrier, MPI_STATUS_IGNORE);
        }
        t_check_rc(rc, "MPI_Start/MPI_Wait of the persistent barrier");
    }

    /* The totals, nonblocking as well: no blocking collective between the
     * agent's start and the end of the job. */
    unsigned long long mine[3] = { t_npass, t_nfail, t_nskip }, all[3] = { 0, 0, 0 };
    MPI_Request req;
    int rc = MPI_Iallreduce(mine, all, 3, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, &req);
    if (MPI_SUCCESS == rc) {
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    if (MPI_SUCCESS != rc) {
        t_check_rc(rc, "MPI_Iallreduce of the totals");
        all[0] = t_npass;
        all[1] = t_nfail;
        all[2] = t_nskip;
    }
    if (0 == t_wrank) {
        t_print_summary(all[0], all[1], all[2]);
    }

    rc = MPI_Start(&barrier);
    if (MPI_SUCCESS == rc) {
        rc = MPI_Wait(&barrier, MPI_STATUS_IGNORE);
    }
    t_check_rc(rc, "the last MPI_Start/MPI_Wait");
    MPI_Request_free(&barrier);
    MPI_Finalize();
    return 0 == t_nfail ? 0 : 1;
}
