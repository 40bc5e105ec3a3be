/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * A corrupt or hostile peer: rank size-1 rewrites what it may write in the
 * communicator's software NIC segment with values no correct rank writes,
 * then leaves the collective to the others, who must get an MPI error and a
 * message naming corrupt shared state, never a wrong result, a crash or a hang
 * (run.sh's timeout; the time the error took is printed, not judged: were the
 * corruption not seen, the error would be the victim's exit, which names no
 * corrupt state). The message goes to mpirun (opal_show_help): each rank prints
 * the one it expects (t_expect_help), and run.sh checks that mpirun showed it.
 *
 *   t_corrupt board      its board line for the next call carries a later
 *                        call's number; the others' MPI_Allreduce (8 bytes,
 *                        the board) reads it
 *   t_corrupt board-nb   the same through MPI_Iallreduce + MPI_Wait
 *   t_corrupt poison     the poison mark names rank 1000; the others, waiting
 *                        for it in MPI_Allreduce, read the mark at their
 *                        liveness check
 *
 * The segment's layout is softnic.h's (the header) and softnic.c's geometry();
 * the rank finds its mapping of the segment (a memfd, or a name in /dev/shm) in
 * /proc/self/maps. Every other
 * rank prints its own "t_corrupt: N passed, M failed, K skipped" and exits with
 * _exit (t_finish_alone: the victim leaves without finalizing).
 */
#include "t_common.h"

#include <stddef.h>

#include "engine/sig.h"
#include "nic/softnic.h"

#define LINE 64

static uint64_t round_up(uint64_t v, uint64_t to)
{
    return (v + to - 1) / to * to;
}

/* This process's mapping of the communicator's segment (the only one). */
static uint8_t *segment(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    uint8_t *seg = NULL;
    while (NULL != f && NULL != fgets(line, sizeof(line), f)) {
        unsigned long lo = 0;
        /* an anonymous segment (memfd), or a named one where /proc refused */
        if ((NULL != strstr(line, "/memfd:coll_offload") || NULL != strstr(line, "/coll_offload."))
            && 1 == sscanf(line, "%lx-", &lo)) {
            seg = (uint8_t *) lo;
        }
    }
    if (NULL != f) {
        fclose(f);
    }
    return seg;
}

/* The call-number word of `rank`'s first board line for call `seq`'s slot. */
static volatile uint64_t *board_seq(uint8_t *seg, int rank, uint64_t seq)
{
    const ofl_softnic_hdr_t *h = (const ofl_softnic_hdr_t *) seg;
    uint64_t size = h->size;
    uint64_t bells = round_up(sizeof(ofl_softnic_hdr_t) + sizeof(int32_t) * size, LINE);
    uint64_t records = bells + size * LINE;
    uint64_t counters
        = round_up(records + size * OFL_NIC_RECORDS * sizeof(ofl_nic_record_t), 4096);
    uint64_t board = counters + size * size * 2 * LINE;
    uint64_t slot = (uint64_t) rank * OFL_BOARD_DEPTH + seq % OFL_BOARD_DEPTH;
    uint64_t line = slot * OFL_BOARD_MAX_LINES;
    return (volatile uint64_t *) (seg + board + line * LINE + 56);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "board";
    if (argc > 1) {
        argv[1] = argv[0];
        argc--;
        argv++;
    }
    t_init(&argc, &argv, "t_corrupt");
    int rank = t_wrank, size = t_wsize;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    char name[64];
    snprintf(name, sizeof(name), "t_corrupt-%s", mode);
    MPI_Comm_set_name(comm, name);

    /* Call 1 sets the communicator's NIC up (board call number 1). */
    long v = rank + 1, sum = 0;
    int rc = MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, comm);
    t_check(MPI_SUCCESS == rc && sum == (long) size * (size + 1) / 2,
            "first allreduce rc=%d sum=%ld", rc, sum);
    int victim = size - 1, token = 0;
    if (rank == victim) {
        uint8_t *seg = segment();
        if (NULL == seg) {
            fprintf(stderr, "t_corrupt: no segment mapped (is coll/offload selected?)\n");
        } else if (0 == strcmp(mode, "poison")) {
            atomic_store(&((ofl_softnic_hdr_t *) seg)->poison, 1001);
        } else {
            /* call 2's line says call 4 (the number above the signature's bits) */
            *board_seq(seg, rank, 2) = (uint64_t) 4 << OFL_SIG_BOARD_BITS;
        }
        for (int r = 0; r < size; ++r) {
            if (r != victim) {
                MPI_Send(&token, 1, MPI_INT, r, 0, MPI_COMM_WORLD);
            }
        }
        sleep(3);
        _exit(0);
    }
    MPI_Recv(&token, 1, MPI_INT, victim, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    double t0 = MPI_Wtime();
    if (0 == strcmp(mode, "board-nb")) {
        MPI_Request req;
        rc = MPI_Iallreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, comm, &req);
        if (MPI_SUCCESS == rc) {
            rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
    } else {
        rc = MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, comm);
    }
    double waited = MPI_Wtime() - t0;
    t_check(MPI_SUCCESS != rc, "%s: rc=%d sum=%ld after %.2f s (expected an error)", mode, rc,
            sum, waited);
    if (MPI_SUCCESS != rc) {
        printf("t_corrupt %s: rank %d got an error after %.2f s\n", mode, rank, waited);
        t_expect_help("rank %d comm %s says corrupt shared state", rank, name);
    }
    t_finish_alone(victim);
}
