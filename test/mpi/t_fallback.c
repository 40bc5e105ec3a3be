/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * t_fallback: calls coll/offload must hand to the previous component, and
 * calls it must keep for itself.
 *
 * Cases, for MPI_Allreduce, MPI_Reduce and MPI_Bcast:
 *   (a) user-defined ops (commutative, and a non-commutative one whose result
 *       depends on rank order);
 *   (b) derived datatypes: a non-contiguous vector for bcast (offloaded, staged,
 *       within the size limit even while other ranks receive the same signature
 *       as contiguous ints; fallback above it), a contiguous derived type of
 *       MPI_INT with a predefined op where the MPI allows it;
 *   (c) an inter-communicator;
 *   (d) messages above / below coll_offload_<coll>_max_bytes (the runner sets
 *       the limits to 1024 bytes; the actual values are read via MPI_T).
 * Results are always checked.  With --expect-offload the MPI_T counters must
 * show the expected path: for a fallback case the *_fallback counter rises and
 * *_offloaded does not; for the small predefined case the reverse.  For an
 * inter-communicator only the result is checked (see expect_path()).
 *
 * Usage: t_fallback [--expect-offload] [-v]
 */
#include "t_common.h"

enum { C_ALLREDUCE, C_REDUCE, C_BCAST, C_N };
static const char *coll_names[C_N] = { "allreduce", "reduce", "bcast" };

static t_pvar_t pv[2 * C_N];
static char pv_names[2 * C_N][64];
static int me, np;
static int check_paths;      /* --expect-offload and at least 2 ranks */

typedef struct {
    unsigned long long off, fb;
} snap_t;

static snap_t snap(int coll)
{
    snap_t s = { 0, 0 };
    if (t_opt.expect_offload) {
        t_pvar_read(&pv[2 * coll], &s.off);
        t_pvar_read(&pv[2 * coll + 1], &s.fb);
    }
    return s;
}

enum { P_OFFLOAD, P_FALLBACK, P_ANY };

/*
 * Asserts which path the call between the two snapshots took (expect mode only).
 * P_ANY is for inter-communicators: the counters are per process, and the
 * inter-communicator algorithms run intra-communicator collectives on each
 * group (which may rightly be offloaded), while a component that declines
 * inter-communicators at selection never sees the call itself.  So only the
 * result is checked; -v prints what the counters did.
 */
static void expect_path(int coll, snap_t a, snap_t b, int want, const char *what)
{
    if (P_ANY == want) {
        if (t_opt.verbose) {
            printf("  [rank %d] %s: coll_offload_%s_offloaded %llu -> %llu, _fallback "
                   "%llu -> %llu\n", t_wrank, what, coll_names[coll], a.off, b.off, a.fb, b.fb);
        }
        return;
    }
    if (!check_paths) {
        t_skip_more();
        return;
    }
    if (P_FALLBACK == want) {
        t_check(b.fb > a.fb && b.off == a.off, "%s: expected a fallback, but "
                "coll_offload_%s_fallback %llu -> %llu, _offloaded %llu -> %llu", what,
                coll_names[coll], a.fb, b.fb, a.off, b.off);
    } else {
        t_check(b.off > a.off && b.fb == a.fb, "%s: expected offload, but "
                "coll_offload_%s_offloaded %llu -> %llu, _fallback %llu -> %llu", what,
                coll_names[coll], a.off, b.off, a.fb, b.fb);
    }
}

/* Describes the path taken, for cases where either path is legitimate. */
static const char *path_taken(snap_t a, snap_t b)
{
    if (!t_opt.expect_offload) {
        return "not measured";
    }
    if (b.off > a.off) {
        return "offloaded";
    }
    return b.fb > a.fb ? "fallback" : "neither counter moved";
}

static int input_int(int rank, int i, int salt)
{
    return (int)(t_hash3((uint64_t)salt, (uint64_t)rank, (uint64_t)i) % 1000003);
}

/* ---- (a) user-defined ops --------------------------------------------------------- */

#define MODULUS 1000003

/* Sum modulo a prime: commutative, and different from MPI_SUM on any input. */
static void modsum_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const int *a = in;
    int *b = inout;
    for (int i = 0; i < *len; i++) {
        b[i] = (int)(((long long)a[i] + b[i]) % MODULUS);
    }
}

/* Affine maps x -> a*x + b (mod 2^32) composed left to right: associative but
 * not commutative, so a fallback that reorders ranks gives a wrong answer. */
typedef struct {
    uint32_t a, b;
} affine_t;

static affine_t affine_then(affine_t p, affine_t q)
{
    affine_t r = { q.a * p.a, q.a * p.b + q.b };
    return r;
}

static void affine_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const affine_t *a = in;
    affine_t *b = inout;
    for (int i = 0; i < *len; i++) {
        b[i] = affine_then(a[i], b[i]);
    }
}

static affine_t affine_input(int rank, int i)
{
    uint64_t h = t_hash3(0xaff1eULL, (uint64_t)rank, (uint64_t)i);
    affine_t x = { (uint32_t)h | 1, (uint32_t)(h >> 32) };
    return x;
}

static void test_user_ops(void)
{
    enum { N = 100 };
    int in[N], out[N], expect[N];
    MPI_Op modsum, affine;
    MPI_Op_create(modsum_fn, 1, &modsum);
    MPI_Op_create(affine_fn, 0, &affine);
    for (int i = 0; i < N; i++) {
        long long s = 0;
        for (int r = 0; r < np; r++) {
            s += input_int(r, i, 1);
        }
        expect[i] = (int)(s % MODULUS);
        in[i] = input_int(me, i, 1);
    }

    memset(out, 0, sizeof(out));
    snap_t a = snap(C_ALLREDUCE);
    int rc = MPI_Allreduce(in, out, N, MPI_INT, modsum, MPI_COMM_WORLD);
    snap_t b = snap(C_ALLREDUCE);
    t_check(MPI_SUCCESS == rc && 0 == memcmp(out, expect, sizeof(out)),
            "MPI_Allreduce user commutative op: wrong result (rc=%d)", rc);
    expect_path(C_ALLREDUCE, a, b, P_FALLBACK, "MPI_Allreduce user commutative op");

    for (int root = 0; root < np; root += (np > 1 ? np - 1 : 1)) {
        memset(out, 0, sizeof(out));
        a = snap(C_REDUCE);
        rc = MPI_Reduce(in, out, N, MPI_INT, modsum, root, MPI_COMM_WORLD);
        b = snap(C_REDUCE);
        t_check(MPI_SUCCESS == rc && (me != root || 0 == memcmp(out, expect, sizeof(out))),
                "MPI_Reduce user commutative op root %d: wrong result (rc=%d)", root, rc);
        expect_path(C_REDUCE, a, b, P_FALLBACK, "MPI_Reduce user commutative op");
    }

    /* Non-commutative op on a derived type (two uint32 per element). */
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_UINT32_T, &pair);
    MPI_Type_commit(&pair);
    affine_t ain[N], aout[N], aexp[N];
    for (int i = 0; i < N; i++) {
        aexp[i] = affine_input(0, i);
        for (int r = 1; r < np; r++) {
            aexp[i] = affine_then(aexp[i], affine_input(r, i));
        }
        ain[i] = affine_input(me, i);
    }
    memset(aout, 0, sizeof(aout));
    a = snap(C_ALLREDUCE);
    rc = MPI_Allreduce(ain, aout, N, pair, affine, MPI_COMM_WORLD);
    b = snap(C_ALLREDUCE);
    t_check(MPI_SUCCESS == rc && 0 == memcmp(aout, aexp, sizeof(aout)),
            "MPI_Allreduce user non-commutative op: wrong result, rank order not kept (rc=%d)",
            rc);
    expect_path(C_ALLREDUCE, a, b, P_FALLBACK, "MPI_Allreduce user non-commutative op");

    int root = np / 2;
    memset(aout, 0, sizeof(aout));
    a = snap(C_REDUCE);
    rc = MPI_Reduce(ain, aout, N, pair, affine, root, MPI_COMM_WORLD);
    b = snap(C_REDUCE);
    t_check(MPI_SUCCESS == rc && (me != root || 0 == memcmp(aout, aexp, sizeof(aout))),
            "MPI_Reduce user non-commutative op root %d: wrong result (rc=%d)", root, rc);
    expect_path(C_REDUCE, a, b, P_FALLBACK, "MPI_Reduce user non-commutative op");

    MPI_Type_free(&pair);
    MPI_Op_free(&modsum);
    MPI_Op_free(&affine);
}

/* ---- (b) derived datatypes ---------------------------------------------------------- */

static void test_derived(void)
{
    /* Non-contiguous: 64 blocks of 3 ints with stride 5; the gaps must stay. */
    enum { BLOCKS = 64, BLEN = 3, STRIDE = 5, LEN = BLOCKS * STRIDE };
    MPI_Datatype vec;
    MPI_Type_vector(BLOCKS, BLEN, STRIDE, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    /* The bcast decision may depend only on the byte size (layouts may differ
     * between ranks as long as type signatures match), so a non-contiguous
     * layout within the size limit is offloaded (staged), and one above it is
     * not. Odd ranks receive the same signature as plain contiguous ints. */
    for (int nelem = 1; nelem <= 2; nelem++) {
        int offload = (size_t) nelem * BLOCKS * BLEN * sizeof(int) <= 1024;
        for (int root = 0; root < np; root++) {
            int buf[2 * LEN];
            int plain = (me != root) && (me % 2);
            for (int i = 0; i < 2 * LEN; i++) {
                buf[i] = me == root ? input_int(root, i, 2) : -1 - i;
            }
            snap_t a = snap(C_BCAST);
            int rc = plain ? MPI_Bcast(buf, nelem * BLOCKS * BLEN, MPI_INT, root, MPI_COMM_WORLD)
                           : MPI_Bcast(buf, nelem, vec, root, MPI_COMM_WORLD);
            snap_t b = snap(C_BCAST);
            /* Element e of the vector starts at e * extent. */
            MPI_Aint lb, ext;
            MPI_Type_get_extent(vec, &lb, &ext);
            int ext_ints = (int)(ext / (MPI_Aint)sizeof(int)), bad = -1;
            for (int i = 0; i < 2 * LEN && bad < 0; i++) {
                int k = i % ext_ints;
                int in_block = i < nelem * ext_ints && (k % STRIDE) < BLEN;
                int want;
                if (me == root) {
                    want = input_int(root, i, 2);
                } else if (plain) {
                    /* the root's vector elements, packed one after another */
                    want = -1 - i;
                    if (i < nelem * BLOCKS * BLEN) {
                        int e = i / (BLOCKS * BLEN), r = i % (BLOCKS * BLEN);
                        want = input_int(root, e * ext_ints + (r / BLEN) * STRIDE + r % BLEN, 2);
                    }
                } else {
                    want = in_block ? input_int(root, i, 2) : -1 - i;
                }
                if (buf[i] != want) {
                    bad = i;
                }
            }
            t_check(MPI_SUCCESS == rc && bad < 0, "MPI_Bcast %d vector element(s) root %d (%s "
                    "layout here): rc=%d, int %d wrong", nelem, root,
                    plain ? "contiguous" : "vector", rc, bad);
            expect_path(C_BCAST, a, b, offload ? P_OFFLOAD : P_FALLBACK,
                        offload ? "MPI_Bcast non-contiguous layout within the limit"
                                : "MPI_Bcast non-contiguous layout above the limit");
        }
    }
    MPI_Type_free(&vec);

    /* Contiguous derived type of MPI_INT. */
    MPI_Datatype c4;
    MPI_Type_contiguous(4, MPI_INT, &c4);
    MPI_Type_commit(&c4);
    enum { N = 50 };
    int in[4 * N], out[4 * N], expect[4 * N];
    for (int i = 0; i < 4 * N; i++) {
        expect[i] = 0;
        for (int r = 0; r < np; r++) {
            expect[i] += input_int(r, i, 3) % 1000;
        }
        in[i] = input_int(me, i, 3) % 1000;
    }

    /* Bcast: either path is legitimate for a contiguous type; check data only. */
    int root = np - 1;
    for (int i = 0; i < 4 * N; i++) {
        out[i] = me == root ? in[i] : -1;
    }
    snap_t a = snap(C_BCAST);
    int rc = MPI_Bcast(out, N, c4, root, MPI_COMM_WORLD);
    snap_t b = snap(C_BCAST);
    int ok = MPI_SUCCESS == rc;
    for (int i = 0; i < 4 * N && ok; i++) {
        ok = out[i] == input_int(root, i, 3) % 1000;
    }
    t_check(ok, "MPI_Bcast contiguous derived type: wrong data (rc=%d)", rc);
    if (t_opt.verbose) {
        t_note("  MPI_Bcast contiguous derived type: %s\n", path_taken(a, b));
    }

    /* Predefined op on a derived type: not every MPI accepts it. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    memset(out, 0, sizeof(out));
    a = snap(C_ALLREDUCE);
    rc = MPI_Allreduce(in, out, N, c4, MPI_SUM, MPI_COMM_WORLD);
    b = snap(C_ALLREDUCE);
    if (MPI_SUCCESS != rc) {
        t_skip("MPI_Allreduce/MPI_Reduce of MPI_SUM on a contiguous derived type: rejected "
               "by this MPI (error %d)", rc);
    } else {
        t_check(0 == memcmp(out, expect, sizeof(out)), "MPI_Allreduce MPI_SUM on a contiguous "
                "derived type: wrong result");
        expect_path(C_ALLREDUCE, a, b, P_FALLBACK, "MPI_Allreduce MPI_SUM on a derived type");
        memset(out, 0, sizeof(out));
        a = snap(C_REDUCE);
        rc = MPI_Reduce(in, out, N, c4, MPI_SUM, 0, MPI_COMM_WORLD);
        b = snap(C_REDUCE);
        t_check(MPI_SUCCESS == rc && (0 != me || 0 == memcmp(out, expect, sizeof(out))),
                "MPI_Reduce MPI_SUM on a contiguous derived type: wrong result (rc=%d)", rc);
        expect_path(C_REDUCE, a, b, P_FALLBACK, "MPI_Reduce MPI_SUM on a derived type");
    }
    MPI_Type_free(&c4);
}

/* ---- (c) inter-communicator ------------------------------------------------------------- */

static void test_intercomm(void)
{
    if (np < 2) {
        t_skip("inter-communicator cases: need at least 2 ranks");
        return;
    }
    /* Lower half and upper half; each group's leader is its lowest world rank. */
    int half = np / 2, color = me < half ? 0 : 1;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, color, me, &local);
    int rc = MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 0 == color ? half : 0, 77, &inter);
    if (!t_check_rc(rc, "MPI_Intercomm_create")) {
        MPI_Comm_free(&local);
        return;
    }
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    int lrank, lsize, rsize;
    MPI_Comm_rank(inter, &lrank);
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_remote_size(inter, &rsize);
    int rbase = 0 == color ? half : 0;      /* world rank of remote local-rank 0 */

    /* Allreduce: each group receives the reduction over the other group. */
    enum { N = 33 };
    int in[N], out[N], expect[N];
    for (int i = 0; i < N; i++) {
        in[i] = input_int(me, i, 4) % 100000;
        expect[i] = 0;
        for (int r = 0; r < rsize; r++) {
            expect[i] += input_int(rbase + r, i, 4) % 100000;
        }
    }
    memset(out, 0, sizeof(out));
    snap_t a = snap(C_ALLREDUCE);
    rc = MPI_Allreduce(in, out, N, MPI_INT, MPI_SUM, inter);
    snap_t b = snap(C_ALLREDUCE);
    t_check(MPI_SUCCESS == rc && 0 == memcmp(out, expect, sizeof(out)),
            "MPI_Allreduce on an inter-communicator (group %d): wrong result (rc=%d)", color, rc);
    expect_path(C_ALLREDUCE, a, b, P_ANY, "MPI_Allreduce on an inter-communicator");

    /* Reduce to rank 0 of group 0 from group 1. */
    int root = 0 == color ? (0 == lrank ? MPI_ROOT : MPI_PROC_NULL) : 0;
    memset(out, 0, sizeof(out));
    a = snap(C_REDUCE);
    rc = MPI_Reduce(in, out, N, MPI_INT, MPI_SUM, root, inter);
    b = snap(C_REDUCE);
    t_check(MPI_SUCCESS == rc && (MPI_ROOT != root || 0 == memcmp(out, expect, sizeof(out))),
            "MPI_Reduce on an inter-communicator (group %d): wrong result (rc=%d)", color, rc);
    expect_path(C_REDUCE, a, b, P_ANY, "MPI_Reduce on an inter-communicator");

    /* Bcast from rank 0 of group 1 to group 0; group 1's others are not involved. */
    root = 1 == color ? (0 == lrank ? MPI_ROOT : MPI_PROC_NULL) : 0;
    for (int i = 0; i < N; i++) {
        out[i] = MPI_ROOT == root ? input_int(half, i, 5) : -7;
    }
    a = snap(C_BCAST);
    rc = MPI_Bcast(out, N, MPI_INT, root, inter);
    b = snap(C_BCAST);
    int ok = MPI_SUCCESS == rc;
    for (int i = 0; i < N && ok; i++) {
        ok = out[i] == (MPI_PROC_NULL == root ? -7 : input_int(half, i, 5));
    }
    t_check(ok, "MPI_Bcast on an inter-communicator (group %d, local rank %d): wrong data "
            "(rc=%d)", color, lrank, rc);
    expect_path(C_BCAST, a, b, P_ANY, "MPI_Bcast on an inter-communicator");

    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
}

/* ---- (d) message size limits ------------------------------------------------------------ */

static void test_limits(void)
{
    for (int coll = 0; coll < C_N; coll++) {
        char name[80];
        unsigned long long limit = 1024;
        snprintf(name, sizeof(name), "coll_offload_%s_max_bytes", coll_names[coll]);
        int found = t_cvar_read_ull(name, &limit);
        if (t_opt.expect_offload) {
            t_check(found, "control variable %s not found", name);
        }
        if (!found) {
            limit = 1024;
        }
        /* The brief's sizes for the runner's 1024-byte limit, scaled otherwise. */
        size_t small = 512, big = 4096;
        if (1024 != limit) {
            small = (size_t)(limit / 2) & ~(size_t)7;
            big = (size_t)limit * 4;
        }
        if (0 == limit || big > ((size_t)64 << 20)) {
            t_skip("%s = %llu: size-limit cases", name, limit);
            continue;
        }
        if (found) {
            t_note("  %s = %llu: %zu bytes must be offloaded, %zu must fall back\n", name,
                   limit, small, big);
        }
        for (int s = 0; s < 2; s++) {
            size_t bytes = 0 == s ? small : big;
            int cnt = (int)(bytes / sizeof(double)), root = np - 1;
            double *in = malloc(bytes + 8), *out = malloc(bytes + 8);
            for (int i = 0; i < cnt; i++) {
                in[i] = (double)(input_int(me, i, 6) % 1000);
                out[i] = -1;
            }
            snap_t a = snap(coll), b;
            int rc;
            if (C_ALLREDUCE == coll) {
                rc = MPI_Allreduce(in, out, cnt, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            } else if (C_REDUCE == coll) {
                rc = MPI_Reduce(in, out, cnt, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
            } else {
                if (me == root) {
                    memcpy(out, in, bytes);
                }
                rc = MPI_Bcast(out, cnt, MPI_DOUBLE, root, MPI_COMM_WORLD);
            }
            b = snap(coll);
            int ok = MPI_SUCCESS == rc;
            for (int i = 0; i < cnt && ok; i++) {
                double want = 0;
                if (C_BCAST == coll) {
                    want = (double)(input_int(root, i, 6) % 1000);
                } else {
                    for (int r = 0; r < np; r++) {
                        want += (double)(input_int(r, i, 6) % 1000);
                    }
                }
                ok = (C_REDUCE == coll && me != root) || out[i] == want;
            }
            char what[160];
            snprintf(what, sizeof(what), "MPI_%s of %zu bytes (limit %llu)",
                     C_ALLREDUCE == coll ? "Allreduce" : C_REDUCE == coll ? "Reduce" : "Bcast",
                     bytes, limit);
            t_check(ok, "%s: wrong result (rc=%d)", what, rc);
            expect_path(coll, a, b, 1 == s ? P_FALLBACK : P_OFFLOAD, what);
            free(in);
            free(out);
        }
    }
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "t_fallback");
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (t_opt.expect_offload) {
        for (int c = 0; c < C_N; c++) {
            snprintf(pv_names[2 * c], sizeof(pv_names[0]), "coll_offload_%s_offloaded",
                     coll_names[c]);
            snprintf(pv_names[2 * c + 1], sizeof(pv_names[0]), "coll_offload_%s_fallback",
                     coll_names[c]);
            pv[2 * c].name = pv_names[2 * c];
            pv[2 * c + 1].name = pv_names[2 * c + 1];
        }
        t_pvars_open(pv, 2 * C_N);
        for (int i = 0; i < 2 * C_N; i++) {
            t_check(pv[i].found, "performance variable %s not found", pv[i].name);
        }
        /* A single process has nothing to offload: only existence is checked. */
        check_paths = np > 1;
    }
    t_note("t_fallback: %d ranks%s\n", np, t_opt.expect_offload ? ", --expect-offload" :
           " (correctness only)");
    if (!check_paths) {
        t_note("  skipped: every MPI_T path check (%s)\n", t_opt.expect_offload
               ? "1 process has nothing to offload" : "no --expect-offload");
    }

    t_section_begin("(a) user-defined ops");
    test_user_ops();
    t_section_end();
    t_section_begin("(b) derived datatypes");
    test_derived();
    t_section_end();
    t_section_begin("(c) inter-communicator");
    test_intercomm();
    t_section_end();
    t_section_begin("(d) size limits");
    test_limits();
    t_section_end();

    if (t_opt.expect_offload) {
        t_pvars_close(pv, 2 * C_N);
    }
    return t_finish();
}
