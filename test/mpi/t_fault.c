/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Fault behaviour of coll/offload: a waiting rank must notice a dead peer, and
 * the watchdog must turn an over-long wait into an error, never a hang.
 *
 *   t_fault kill      rank size-1 is SIGKILLed before an allreduce; the others
 *                     must get an MPI error (run with mpirun --enable-recovery so
 *                     the runtime does not kill the job first)
 *   t_fault watchdog  rank size-1 arrives late (sleeps); with
 *                     --mca coll_offload_watchdog 0.5 the others get an error
 *   t_fault kill-nb, t_fault watchdog-nb
 *                     the same with MPI_Iallreduce + MPI_Wait: the wait on a
 *                     nonblocking request notices too
 *
 * Every call is checked by what it returns, not by how long it took: the first
 * collective after the peer died (or while it is late) must end in an error. A late
 * peer arrives after 3 s, so without the watchdog that call would succeed; a hang
 * is run.sh's timeout. Each surviving rank prints its own line
 * "t_fault: N passed, M failed, K skipped" (t_finish_alone: MPI_Finalize cannot
 * complete with a dead peer).
 */
#include "t_common.h"

#include <signal.h>

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "kill";
    if (argc > 1) {
        argv[1] = argv[0];
        argc--;
        argv++;
    }
    /* (MPI_ERRORS_RETURN on MPI_COMM_WORLD too: Open MPI 4.1 raises errors of
     * collective requests (MPI_Wait) on its handler, whatever their communicator.) */
    t_init(&argc, &argv, "t_fault");
    int rank = t_wrank, size = t_wsize;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);

    /* A first call sets the communicator up and proves it works. */
    long v = rank + 1, sum = 0;
    int rc = MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, comm);
    t_check(MPI_SUCCESS == rc && sum == (long) size * (size + 1) / 2,
            "first allreduce rc=%d sum=%ld", rc, sum);
    int victim = size - 1;
    int nb = NULL != strstr(mode, "-nb");
    if (rank == victim) {
        if (0 == strncmp(mode, "kill", 4)) {
            raise(SIGKILL);
        }
        sleep(3);
        MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, comm);
        _exit(0);
    }
    double t0 = MPI_Wtime();
    int calls = 0;
    for (int i = 0; i < 3; ++i) {
        calls++;
        if (nb) {
            MPI_Request req;
            rc = MPI_Iallreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, comm, &req);
            if (MPI_SUCCESS == rc) {
                rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
        } else {
            rc = MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, comm);
        }
        if (MPI_SUCCESS != rc) {
            break;
        }
    }
    double waited = MPI_Wtime() - t0;
    t_check(MPI_SUCCESS != rc && 1 == calls, "%s: rc=%d at call %d of 3 after %.2f s (expected "
            "an error from the first call)", mode, rc, calls, waited);
    if (MPI_SUCCESS != rc) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        printf("t_fault %s: rank %d got \"%s\" at call %d after %.2f s\n", mode, rank, msg,
               calls, waited);
    }
    t_finish_alone(victim);
}
