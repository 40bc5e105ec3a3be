/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Argument mismatch between ranks (an erroneous program): one rank passes a
 * different op, datatype, count or root — or calls another collective — than the
 * others in the same call. coll/offload must end the call with an MPI error on
 * every rank, with a message naming the collective, the communicator and the
 * mismatching ranks; never a wrong answer, a hang, or a write outside the
 * receive buffers.
 *
 *   t_mismatch [--quick] [--tiny] [--policy] [--strict]
 *
 * --quick leaves out the cases where ranks take different paths through the
 * component (offloaded against handed to the fallback); --tiny adds two where the
 * fallback is the size policy's for tiny calls, and --policy two where it is the
 * size policy's for mid-size ones and one where it is a user op's: a blocking call
 * handed down for its arguments checks the peers only with --mca
 * coll_offload_agree_above 0 or coll_offload_check 1 (--strict implies --policy).
 *
 * Each case runs on a fresh communicator (MPI_ERRORS_RETURN) that a correct
 * allreduce first sets up; then rank size-1 (the "odd" rank) passes its
 * arguments, every other rank the common ones; blocking, nonblocking
 * (MPI_I<coll> + MPI_Wait) and persistent (MPIX_<coll>_init + MPI_Start +
 * MPI_Wait) forms; board sizes (8 B) and program sizes (4 KiB); calls where the
 * ranks take different paths (board vs program, offloaded vs handed to the
 * fallback). Checked on every rank:
 *   - the call returns an error; for reduce and bcast, which do not synchronise,
 *     a rank whose part needed nothing from a mismatching rank may finish the
 *     call, and must then get the error from the next collective (a barrier) on
 *     the communicator; for allreduce and barrier the call itself must fail;
 *   - the component's messages (opal_show_help: mpirun prints them) name the
 *     communicator, its cid and two ranks of which one is the odd rank, and the
 *     collective of a rank whose call itself failed; where the ranks called
 *     different collectives, no message of the mismatch leaves out the ordering
 *     rule. Each rank prints what it expects (t_expect_help), and run.sh checks
 *     that mpirun showed it, every message in full, from some rank of the case
 *     (Open MPI 4.1's launcher loses the odd message when many ranks send at once);
 *   - guard bytes before and after the receive buffer are untouched, and a rank
 *     whose call failed wrote nothing that its own arguments do not call for;
 *   - a later call on the broken communicator fails (a hang is run.sh's timeout);
 *   - a correct allreduce (board and program sizes) on a fresh communicator
 *     works afterwards.
 * Every run is under mpirun with a timeout (run.sh): a hang counts as a failure.
 * Rank 0 prints "t_mismatch: N passed, M failed, K skipped" (all ranks' checks,
 * t_common.h; the messages are run.sh's one check more).
 */
#include "t_common.h"
#include "mpi_persist.h"

enum { C_ALLREDUCE, C_REDUCE, C_BCAST, C_BARRIER };
/* --strict (with coll_offload_check=1): every rank's mismatched blocking call itself
 * fails, reduce and bcast ranks that only send included. */
static int strict_all;

enum { K_BLOCKING, K_NONBLOCKING, K_PERSISTENT };

static const char *const coll_names[] = { "Allreduce", "Reduce", "Bcast", "Barrier" };
static const char *const kind_names[] = { "blocking", "nonblocking", "persistent" };

typedef struct {
    int coll;
    MPI_Op op;
    MPI_Datatype type;
    int count;
    int root;
} args_t;

#define GUARD 256
#define FILL 0xa5

static int rank, size, odd;
static MPI_Op user_sum;

static void user_sum_fn(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void) type;
    for (int i = 0; i < *len; ++i) {
        ((int *) inout)[i] += ((int *) in)[i];
    }
}

/* ---- one call ------------------------------------------------------------------ */

static int type_size(MPI_Datatype t)
{
    int s = 0;
    MPI_Type_size(t, &s);
    return s;
}

/* Run the call `a` as `kind`: the error code (MPI_Wait's for the nonblocking
 * and persistent forms). */
static int do_call(const args_t *a, int kind, MPI_Comm comm, const void *sbuf, void *rbuf)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    if (K_BLOCKING == kind) {
        switch (a->coll) {
        case C_ALLREDUCE:
            return MPI_Allreduce(sbuf, rbuf, a->count, a->type, a->op, comm);
        case C_REDUCE:
            return MPI_Reduce(sbuf, rbuf, a->count, a->type, a->op, a->root, comm);
        case C_BCAST:
            return MPI_Bcast(rbuf, a->count, a->type, a->root, comm);
        default:
            return MPI_Barrier(comm);
        }
    }
    if (K_NONBLOCKING == kind) {
        switch (a->coll) {
        case C_ALLREDUCE:
            rc = MPI_Iallreduce(sbuf, rbuf, a->count, a->type, a->op, comm, &req);
            break;
        case C_REDUCE:
            rc = MPI_Ireduce(sbuf, rbuf, a->count, a->type, a->op, a->root, comm, &req);
            break;
        case C_BCAST:
            rc = MPI_Ibcast(rbuf, a->count, a->type, a->root, comm, &req);
            break;
        default:
            rc = MPI_Ibarrier(comm, &req);
        }
    } else {
        switch (a->coll) {
        case C_ALLREDUCE:
            rc = MPI_Allreduce_init(sbuf, rbuf, a->count, a->type, a->op, comm, MPI_INFO_NULL,
                                     &req);
            break;
        case C_REDUCE:
            rc = MPI_Reduce_init(sbuf, rbuf, a->count, a->type, a->op, a->root, comm,
                                  MPI_INFO_NULL, &req);
            break;
        case C_BCAST:
            rc = MPI_Bcast_init(rbuf, a->count, a->type, a->root, comm, MPI_INFO_NULL, &req);
            break;
        default:
            rc = MPI_Barrier_init(comm, MPI_INFO_NULL, &req);
        }
        if (MPI_SUCCESS == rc) {
            rc = MPI_Start(&req);
        }
    }
    if (MPI_SUCCESS != rc) {
        if (MPI_REQUEST_NULL != req) {
            MPI_Request_free(&req);
        }
        return rc;
    }
    /* (a single-completion wait returns the request's error; it need not set
     * the status's MPI_ERROR) */
    rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (K_PERSISTENT == kind && MPI_REQUEST_NULL != req) {
        MPI_Request_free(&req);
    }
    return rc;
}

static int guards_intact(const unsigned char *buf, size_t inner)
{
    for (size_t i = 0; i < GUARD; ++i) {
        if (FILL != buf[i] || FILL != buf[GUARD + inner + i]) {
            return 0;
        }
    }
    return 1;
}

static MPI_Comm fresh(const char *name)
{
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Comm_set_name(c, (char *) name);
    return c;
}

/* A correct allreduce of `count` ints on comm: 1 if right. */
static int good_allreduce(MPI_Comm comm, int count)
{
    int *in = malloc(sizeof(int) * (size_t) count), *out = malloc(sizeof(int) * (size_t) count);
    for (int i = 0; i < count; ++i) {
        in[i] = rank + i;
        out[i] = -1;
    }
    int rc = MPI_Allreduce(in, out, count, MPI_INT, MPI_SUM, comm);
    int ok = MPI_SUCCESS == rc;
    for (int i = 0; ok && i < count; ++i) {
        ok = out[i] == size * (size - 1) / 2 + size * i;
    }
    free(in);
    free(out);
    return ok;
}

/* One case: the odd rank calls `bad`, the others `good`, as `kind`. */
static void run_case(const char *what, int kind, const args_t *good, const args_t *bad)
{
    const args_t *mine = rank == odd ? bad : good;
    char name[96];
    snprintf(name, sizeof(name), "mm-%s-%s", what, kind_names[kind]);
    MPI_Comm comm = fresh(name);
    t_check(good_allreduce(comm, 2), "%s: the set-up allreduce failed", name);

    int esize = mine->coll == C_BARRIER ? 1 : type_size(mine->type);
    size_t inner = (size_t) (mine->count > 0 ? mine->count : 0) * (size_t) esize;
    unsigned char *rbuf = malloc(2 * GUARD + inner);
    unsigned char *sbuf = malloc(inner + 1);
    memset(rbuf, FILL, 2 * GUARD + inner);
    for (size_t i = 0; i < inner; ++i) {
        sbuf[i] = (unsigned char) (rank * 7 + i);
    }
    int root_here = (C_BCAST == mine->coll || C_REDUCE == mine->coll) && rank == mine->root;
    if (C_BCAST == mine->coll && root_here) {
        memcpy(rbuf + GUARD, sbuf, inner);
    }

    int rc = do_call(mine, kind, comm, sbuf, rbuf + GUARD);
    /* a rank whose call went through learns of the mismatch at its next call */
    int rc2 = MPI_Barrier(comm);

    int strict = C_ALLREDUCE == good->coll || C_BARRIER == good->coll
                 || (strict_all && K_BLOCKING == kind);
    if (strict) {
        t_check(MPI_SUCCESS != rc, "%s: the mismatched call returned MPI_SUCCESS", name);
    }
    t_check(MPI_SUCCESS != rc || MPI_SUCCESS != rc2,
            "%s: neither the mismatched call nor the next barrier returned an error", name);
    char cname[64];
    snprintf(cname, sizeof(cname), "%s%s", K_NONBLOCKING == kind ? "MPI_I" : "MPI_",
             coll_names[mine->coll]);
    if (K_NONBLOCKING == kind) {
        /* "MPI_Iallreduce" */
        cname[5] = (char) (cname[5] - 'A' + 'a');
    }
    /* What the messages of this case must say: a refusal of the next barrier names
     * the ranks too, the failed call's own report names the call as well; calls out
     * of order cite the rule. */
    t_expect_help("comm %s%s%s with %d%s", name, MPI_SUCCESS != rc ? " call " : "",
                  MPI_SUCCESS != rc ? cname : "", odd, good->coll != bad->coll ? " order" : "");
    t_check(guards_intact(rbuf, inner), "%s: bytes outside the receive buffer were written",
            name);
    if (C_BCAST == mine->coll && root_here) {
        t_check(0 == memcmp(rbuf + GUARD, sbuf, inner), "%s: the bcast root's buffer changed",
                name);
    }
    /* The communicator is broken for good: a later call fails at once. */
    double t0 = MPI_Wtime();
    int rc3 = MPI_Barrier(comm);
    t_check(MPI_SUCCESS != rc3, "%s: a later barrier on the broken communicator succeeded "
            "(after %.1f s)", name, MPI_Wtime() - t0);
    MPI_Comm_free(&comm);
    free(rbuf);
    free(sbuf);

    /* A fresh communicator works. */
    snprintf(name, sizeof(name), "mm-after-%s-%s", what, kind_names[kind]);
    comm = fresh(name);
    t_check(good_allreduce(comm, 2) && good_allreduce(comm, 1024) && good_allreduce(comm, 2),
            "%s: a correct allreduce on a fresh communicator failed", name);
    MPI_Comm_free(&comm);
}

int main(int argc, char **argv)
{
    int tiny = 0, policy = 0, kept = 1;
    /* this program's own options; t_init reads the rest (--quick, -v) */
    for (int i = 1; i < argc; ++i) {
        int own = 0 == strcmp(argv[i], "--tiny") || 0 == strcmp(argv[i], "--policy")
                  || 0 == strcmp(argv[i], "--strict");
        tiny |= 0 == strcmp(argv[i], "--tiny");
        policy |= 0 == strcmp(argv[i], "--policy");
        strict_all |= 0 == strcmp(argv[i], "--strict");
        if (!own) {
            argv[kept++] = argv[i];
        }
    }
    argc = kept;
    policy |= strict_all;
    /* (MPI_ERRORS_RETURN on MPI_COMM_WORLD too: Open MPI 4.1 raises errors of
     * collective requests on its handler.) */
    t_init(&argc, &argv, "t_mismatch");
    int quick = t_opt.quick;
    rank = t_wrank;
    size = t_wsize;
    odd = size - 1;
    MPI_Op_create(user_sum_fn, 1, &user_sum);
    if (size < 2) {
        t_skip("every case: needs 2 ranks");
        MPI_Op_free(&user_sum);
        return t_finish();
    }

    /* board size (8 B) and program size (4 KiB) */
    const int small = 2, large = 1024;
    for (int kind = K_BLOCKING; kind <= K_PERSISTENT; ++kind) {
        args_t g, b;
        /* op */
        g = (args_t) { C_ALLREDUCE, MPI_SUM, MPI_INT, small, 0 };
        b = g;
        b.op = MPI_MAX;
        run_case("allreduce-op-board", kind, &g, &b);
        g.count = b.count = large;
        run_case("allreduce-op-program", kind, &g, &b);
        /* datatype (same bytes) */
        g = (args_t) { C_ALLREDUCE, MPI_SUM, MPI_INT, small, 0 };
        b = g;
        b.type = MPI_FLOAT;
        run_case("allreduce-type-board", kind, &g, &b);
        /* count: both on the board; board against program */
        b = g;
        b.count = 2 * small;
        run_case("allreduce-count-board", kind, &g, &b);
        b.count = large;
        run_case("allreduce-count-paths", kind, &g, &b);
        /* collective: a barrier against an allreduce (both on the board) */
        b = (args_t) { C_BARRIER, MPI_SUM, MPI_INT, 0, 0 };
        run_case("allreduce-vs-barrier", kind, &g, &b);
        /* reduce: op, count, root (program sizes) */
        g = (args_t) { C_REDUCE, MPI_SUM, MPI_INT, large, 0 };
        b = g;
        b.op = MPI_MIN;
        run_case("reduce-op", kind, &g, &b);
        b = g;
        b.root = 1;
        run_case("reduce-root", kind, &g, &b);
        /* bcast: count, root */
        g = (args_t) { C_BCAST, MPI_SUM, MPI_INT, large, 0 };
        b = g;
        b.count = 2 * large;
        run_case("bcast-count", kind, &g, &b);
        if (size >= 3) {
            /* (with two ranks both would be roots: neither reads anything) */
            b = g;
            b.root = 1;
            run_case("bcast-root", kind, &g, &b);
        }
        if (K_BLOCKING != kind || quick) {
            continue;
        }
        /* Different paths through the component: offloaded on some ranks, handed
         * to the fallback on the odd one (blocking only: a nonblocking call on
         * the fallback cannot wait for the peers' records; see
         * docs/architecture.md). */
        g = (args_t) { C_BCAST, MPI_SUM, MPI_INT, large, 0 };
        b = g;
        /* 192 KiB: the single-copy get against the others' tree by default; in the
         * fallback range 64-256 KiB of the policy that run.sh passes with --policy */
        b.count = 49152;
        run_case("bcast-count-fallback", kind, &g, &b);
        if (policy) {
            /* A user op: handed down for its arguments, which by default costs no wait
             * for the peers' records either. */
            g = (args_t) { C_ALLREDUCE, MPI_SUM, MPI_INT, large, 0 };
            b = g;
            b.op = user_sum;
            run_case("allreduce-user-op", kind, &g, &b);
            /* 64 KiB: the default policy's fallback range 32-256 KiB (on a node with
             * more ranks than cores the tree runs it, against the others' tree) */
            g = (args_t) { C_REDUCE, MPI_SUM, MPI_INT, large, 0 };
            b = g;
            b.count = 16384;
            run_case("reduce-count-fallback", kind, &g, &b);
        }
        if (tiny) {
            /* The default policy's tiny fallbacks (reduce <= 64 B, bcast <= 128 B)
             * wait for the records only with coll_offload_agree_above below
             * their size (run.sh passes 0 with --tiny). */
            g = (args_t) { C_REDUCE, MPI_SUM, MPI_INT, large, 0 };
            b = g;
            b.count = 2;
            run_case("reduce-count-tiny", kind, &g, &b);
            g = (args_t) { C_BCAST, MPI_SUM, MPI_INT, large, 0 };
            b = g;
            b.count = 4;
            run_case("bcast-count-tiny", kind, &g, &b);
        }
    }

    MPI_Op_free(&user_sum);
    return t_finish();
}
