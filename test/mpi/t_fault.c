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
 * Every surviving rank prints one line "t_fault: N passed, M failed" and exits
 * with _exit (MPI_Finalize cannot complete with a dead peer).
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double now(void)
{
    return MPI_Wtime();
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "kill";
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    /* Open MPI 4.1 raises errors of collective requests (MPI_Wait) on
     * MPI_COMM_WORLD's handler, whatever their communicator. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* A first call sets the communicator up and proves it works. */
    long v = rank + 1, sum = 0;
    int rc = MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, comm);
    int pass = 0, fail = 0;
    if (MPI_SUCCESS == rc && sum == (long) size * (size + 1) / 2) {
        pass++;
    } else {
        fail++;
        fprintf(stderr, "t_fault: rank %d: first allreduce rc=%d sum=%ld\n", rank, rc, sum);
    }
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
    double t0 = now();
    for (int i = 0; i < 3; ++i) {
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
    double waited = now() - t0;
    if (MPI_SUCCESS != rc && waited < 2.5) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        printf("t_fault %s: rank %d got \"%s\" after %.2f s\n", mode, rank, msg, waited);
        pass++;
    } else {
        fprintf(stderr, "t_fault %s: rank %d: rc=%d after %.2f s (expected an error)\n", mode,
                rank, rc, waited);
        fail++;
    }
    printf("t_fault: %d passed, %d failed\n", pass, fail);
    fflush(stdout);
    _exit(fail ? 1 : 0);
}
