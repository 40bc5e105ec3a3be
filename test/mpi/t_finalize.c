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
 * The summary ("t_finalize: N passed, M failed") is printed by rank 0 after the
 * last checked call; then every rank starts and waits for the persistent
 * barrier once more, frees it and finalizes. A rank whose own checks failed,
 * the last one included, exits with status 1.
 */
#include <stdio.h>
#include <stdlib.h>

#include "mpi_persist.h"

static int npass, nfail;

static void check(int ok, int rank, const char *what)
{
    if (ok) {
        npass++;
    } else {
        nfail++;
        fprintf(stderr, "FAIL t_finalize[rank %d]: %s\n", rank, what);
        fflush(stderr);
    }
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int iters = argc > 1 ? atoi(argv[1]) : 1;
    if (iters < 1) {
        iters = 1;
    }

    MPI_Request barrier = MPI_REQUEST_NULL;
    check(MPI_SUCCESS == MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &barrier),
          rank, "MPI_Barrier_init");
    for (int it = 0; it < iters; ++it) {
        int in[2] = { rank + 1, 1 }, out[2] = { 0, 0 };
        MPI_Request req;
        int rc = MPI_Iallreduce(in, out, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
        if (MPI_SUCCESS == rc) {
            rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        check(MPI_SUCCESS == rc && out[0] == size * (size + 1) / 2 && out[1] == size, rank,
              "MPI_Iallreduce");
        rc = MPI_Ibarrier(MPI_COMM_WORLD, &req);
        if (MPI_SUCCESS == rc) {
            rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        check(MPI_SUCCESS == rc, rank, "MPI_Ibarrier");
        rc = MPI_Start(&barrier);
        if (MPI_SUCCESS == rc) {
            rc = MPI_Wait(&barrier, MPI_STATUS_IGNORE);
        }
        check(MPI_SUCCESS == rc, rank, "MPI_Start/MPI_Wait of the persistent barrier");
    }

    /* The totals, nonblocking as well: no blocking collective between the
     * agent's start and the end of the job. */
    int mine[2] = { npass, nfail }, all[2] = { 0, 0 };
    MPI_Request req;
    int rc = MPI_Iallreduce(mine, all, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    if (MPI_SUCCESS == rc) {
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    if (MPI_SUCCESS != rc) {
        check(0, rank, "MPI_Iallreduce of the totals");
        all[0] = npass;
        all[1] = nfail;
    }
    if (0 == rank) {
        printf("t_finalize: %d passed, %d failed\n", all[0], all[1]);
        fflush(stdout);
    }

    rc = MPI_Start(&barrier);
    if (MPI_SUCCESS == rc) {
        rc = MPI_Wait(&barrier, MPI_STATUS_IGNORE);
    }
    check(MPI_SUCCESS == rc, rank, "the last MPI_Start/MPI_Wait");
    MPI_Request_free(&barrier);
    MPI_Finalize();
    return 0 == nfail ? 0 : 1;
}
