/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * t_nb_mt: MPI_THREAD_MULTIPLE, two threads, each running blocking,
 * nonblocking and persistent collectives on its own communicator at the same
 * time as the other. Every result is checked; a thread also completes its
 * requests with MPI_Test loops, so both threads drive progress (and complete
 * requests) concurrently.
 *
 * Usage: t_nb_mt [--expect-offload] [--quick] [-v]
 * Without MPI_THREAD_MULTIPLE from the library it reports one skipped check.
 */
#include "t_common.h"

#include "mpi_persist.h"
#include <pthread.h>

enum { NTHREADS = 2 };

static int me, np;

typedef struct {
    int id;
    MPI_Comm comm;
    int iters;
    unsigned long long pass, fail;
    char first_failure[256];
} worker_t;

static int val(int rank, int thread, int it, int i)
{
    return (int) (t_hash3((uint64_t) (thread * 1000003 + it), (uint64_t) rank, (uint64_t) i)
                  % 100000);
}

static void wcheck(worker_t *w, int ok, const char *what, int it)
{
    if (ok) {
        w->pass++;
        return;
    }
    if (0 == w->fail++) {
        snprintf(w->first_failure, sizeof(w->first_failure), "thread %d iteration %d: %s",
                 w->id, it, what);
    }
}

static int sum_ok(const int *out, int thread, int it, int count)
{
    for (int i = 0; i < count; i++) {
        long long s = 0;
        for (int r = 0; r < np; r++) {
            s += val(r, thread, it, i);
        }
        if (out[i] != (int) s) {
            return 0;
        }
    }
    return 1;
}

static void *work(void *arg)
{
    worker_t *w = arg;
    enum { BIG = 5000 };
    int *in = malloc(sizeof(int) * BIG), *out = malloc(sizeof(int) * BIG);
    int pin = 0, pout = 0;
    MPI_Request preq;
    MPI_Allreduce_init(&pin, &pout, 1, MPI_INT, MPI_SUM, w->comm, MPI_INFO_NULL, &preq);
    for (int it = 0; it < w->iters; it++) {
        int cnt = (it % 4 == 3) ? BIG : 1 + it % 17;
        for (int i = 0; i < cnt; i++) {
            in[i] = val(me, w->id, it, i);
        }
        /* blocking */
        memset(out, 0, sizeof(int) * (size_t) cnt);
        int rc = MPI_Allreduce(in, out, cnt, MPI_INT, MPI_SUM, w->comm);
        wcheck(w, MPI_SUCCESS == rc && sum_ok(out, w->id, it, cnt), "MPI_Allreduce", it);
        /* nonblocking, Wait */
        memset(out, 0, sizeof(int) * (size_t) cnt);
        MPI_Request req;
        rc = MPI_Iallreduce(in, out, cnt, MPI_INT, MPI_SUM, w->comm, &req);
        rc |= MPI_Wait(&req, MPI_STATUS_IGNORE);
        wcheck(w, MPI_SUCCESS == rc && sum_ok(out, w->id, it, cnt), "MPI_Iallreduce", it);
        /* nonblocking, Test loop */
        int root = it % np;
        memset(out, 0, sizeof(int) * (size_t) cnt);
        rc = MPI_Ireduce(in, out, cnt, MPI_INT, MPI_SUM, root, w->comm, &req);
        int flag = 0;
        while (MPI_SUCCESS == rc && !flag) {
            rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        }
        wcheck(w, MPI_SUCCESS == rc && (me != root || sum_ok(out, w->id, it, cnt)),
               "MPI_Ireduce", it);
        /* bcast from a moving root */
        for (int i = 0; i < cnt; i++) {
            out[i] = me == root ? val(root, w->id, it, i) : -1;
        }
        rc = MPI_Ibcast(out, cnt, MPI_INT, root, w->comm, &req);
        rc |= MPI_Wait(&req, MPI_STATUS_IGNORE);
        int bok = 1;
        for (int i = 0; i < cnt && bok; i++) {
            bok = out[i] == val(root, w->id, it, i);
        }
        wcheck(w, MPI_SUCCESS == rc && bok, "MPI_Ibcast", it);
        /* persistent */
        pin = val(me, w->id, it, 0);
        pout = -1;
        rc = MPI_Start(&preq);
        rc |= MPI_Wait(&preq, MPI_STATUS_IGNORE);
        wcheck(w, MPI_SUCCESS == rc && sum_ok(&pout, w->id, it, 1), "persistent allreduce", it);
        if (0 == it % 16) {
            rc = MPI_Ibarrier(w->comm, &req);
            rc |= MPI_Wait(&req, MPI_STATUS_IGNORE);
            if (MPI_SUCCESS != rc) {
                wcheck(w, 0, "MPI_Ibarrier", it);
            }
        }
    }
    MPI_Request_free(&preq);
    free(in);
    free(out);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    t_prog = "t_nb_mt";
    MPI_Comm_rank(MPI_COMM_WORLD, &t_wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &t_wsize);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    t_parse_args(argc, argv);
    me = t_wrank;
    np = t_wsize;
    if (provided < MPI_THREAD_MULTIPLE) {
        t_skip("t_nb_mt: MPI_THREAD_MULTIPLE not provided (%d)", provided);
        return t_finish();
    }
    t_note("t_nb_mt: %d ranks x %d threads, MPI_THREAD_MULTIPLE\n", np, NTHREADS);
    worker_t w[NTHREADS];
    pthread_t th[NTHREADS];
    t_section_begin("2 threads on 2 communicators");
    for (int t = 0; t < NTHREADS; t++) {
        memset(&w[t], 0, sizeof(w[t]));
        w[t].id = t;
        w[t].iters = t_opt.quick ? 100 : 400;
        MPI_Comm_dup(MPI_COMM_WORLD, &w[t].comm);
        MPI_Comm_set_errhandler(w[t].comm, MPI_ERRORS_RETURN);
        /* A blocking collective sets the communicator up for offload. */
        MPI_Barrier(w[t].comm);
    }
    for (int t = 0; t < NTHREADS; t++) {
        pthread_create(&th[t], NULL, work, &w[t]);
    }
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
    }
    for (int t = 0; t < NTHREADS; t++) {
        t_npass += w[t].pass;
        t_nfail += w[t].fail;
        if (w[t].fail) {
            fprintf(stderr, "FAIL t_nb_mt[rank %d]: %llu failures, first: %s\n", me,
                    w[t].fail, w[t].first_failure);
        }
        MPI_Comm_free(&w[t].comm);
    }
    t_section_end();
    return t_finish();
}
