/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * t_nb: nonblocking and persistent collectives.
 *
 * Sections (each result is compared with a reference computed from every
 * rank's deterministic inputs):
 *   (a) MPI_Iallreduce / MPI_Ireduce over every predefined op (each once, on a
 *       type it allows), counts 1, 13 and a multi-segment one, every root kind,
 *       in place; MPI_Ibcast contiguous and non-contiguous (staged), several
 *       roots and sizes; MPI_Ibarrier does not complete before the last rank
 *       enters (it marks a file first: ranks on one node); a user-defined op goes
 *       to the fallback;
 *   (b) 32 outstanding on one communicator (Waitall) and 32 spread over four
 *       (posted in a per-rank order, completed with Testany / Waitany in a
 *       shuffled order);
 *   (c) blocking and nonblocking calls interleaved on one communicator; small
 *       calls started while one rank still has a large call outstanding and the
 *       others do not (each takes a different path into the same calls);
 *   (d) MPI_Request_free of active requests: the operation still completes;
 *       MPI_Cancel fails with MPI_ERR_REQUEST and the request completes;
 *   (e) persistent: MPIX_*_init, 1000 x MPI_Start/Wait with checks, Startall of
 *       all four, inactive after completion, Request_free of an active one;
 *       requests made before the communicator's first blocking collective run
 *       on the fallback until it, offloaded after it (counters say which);
 *       the same on a one-rank communicator, whose fallback requests do nothing;
 *   (f) progress without the host (--expect-offload only): every rank posts,
 *       computes (or sleeps) without any MPI call until the results are in place
 *       (at least 0.3 s, far longer than the calls take; 10 s at most: a hang),
 *       and the first MPI_Test says done; the time they took and the CPU time
 *       the idle agent then uses are printed, not judged; the agent sits on a
 *       core no rank is bound to when there is one, and is unbound otherwise.
 * With --expect-offload the MPI_T counters coll_offload_i<coll>_* and
 * coll_offload_p<coll>_* must show every call taking the expected path: all
 * offloaded but the user-defined op, so run it with size policies that offload
 * every size (run.sh does: coll_offload_{reduce,bcast}_policy).
 *
 * Usage: t_nb [--expect-offload] [--quick] [-v]
 */
#define _GNU_SOURCE
#include "clocks.h"
#include "t_common.h"

#include <unistd.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include "mpi_persist.h"
#include <sched.h>
#include <time.h>

static int me, np;

/* ---- MPI_T counters ---------------------------------------------------------- */

enum { C_ALLREDUCE, C_REDUCE, C_BCAST, C_BARRIER, C_N };
static const char *coll_names[C_N] = { "allreduce", "reduce", "bcast", "barrier" };
enum { K_I, K_P, K_N };
static const char *kind_prefix[K_N] = { "i", "p" };
static t_pvar_t pv[K_N][C_N][2];
static char pv_names[K_N][C_N][2][64];

typedef struct {
    unsigned long long v[K_N][C_N][2];   /* [..][0] offloaded, [..][1] fallback */
} snap_t;

static snap_t snap(void)
{
    snap_t s;
    memset(&s, 0, sizeof(s));
    if (t_opt.expect_offload) {
        for (int k = 0; k < K_N; k++) {
            for (int c = 0; c < C_N; c++) {
                t_pvar_read(&pv[k][c][0], &s.v[k][c][0]);
                t_pvar_read(&pv[k][c][1], &s.v[k][c][1]);
            }
        }
    }
    return s;
}

/* With --expect-offload: counter (kind, coll, fallback?) rose by exactly `n` and
 * the other counter of the pair did not move. */
static void expect_count(snap_t a, snap_t b, int kind, int coll, int fallback,
                         unsigned long long n, const char *what)
{
    if (!t_opt.expect_offload || np < 2) {
        t_skip_more();
        return;
    }
    unsigned long long d = b.v[kind][coll][fallback] - a.v[kind][coll][fallback];
    unsigned long long o = b.v[kind][coll][!fallback] - a.v[kind][coll][!fallback];
    t_check(d == n && 0 == o, "%s: coll_offload_%s%s_%s rose by %llu (want %llu), _%s by %llu",
            what, kind_prefix[kind], coll_names[coll], fallback ? "fallback" : "offloaded", d,
            n, fallback ? "offloaded" : "fallback", o);
}

/* ---- inputs and references ---------------------------------------------------- */

typedef struct {
    MPI_Datatype dt;
    const char *name;
    int size;
    int is_float;
    int is_unsigned;
} tinfo_t;

typedef struct {
    MPI_Op op;
    const char *name;
    int type;      /* index into types[] */
} case_t;

enum { T_I8, T_I16, T_INT, T_LL, T_U32, T_BYTE, T_FLOAT, T_DOUBLE, T_NTYPES };
static tinfo_t types[T_NTYPES];

static void types_init(void)
{
    tinfo_t t[T_NTYPES] = {
        [T_I8] = { MPI_INT8_T, "int8", 1, 0, 0 },
        [T_I16] = { MPI_INT16_T, "int16", 2, 0, 0 },
        [T_INT] = { MPI_INT, "int", (int) sizeof(int), 0, 0 },
        [T_LL] = { MPI_LONG_LONG, "long long", (int) sizeof(long long), 0, 0 },
        [T_U32] = { MPI_UINT32_T, "uint32", 4, 0, 1 },
        [T_BYTE] = { MPI_BYTE, "byte", 1, 0, 1 },
        [T_FLOAT] = { MPI_FLOAT, "float", (int) sizeof(float), 1, 0 },
        [T_DOUBLE] = { MPI_DOUBLE, "double", (int) sizeof(double), 1, 0 },
    };
    memcpy(types, t, sizeof(t));
}

/* Input of rank r, element i: small values so float sums and products are exact,
 * sums of 8-bit ints still wrap, logical ops see 0 and non-zero. */
static int64_t gen(const case_t *c, int r, size_t i, int salt)
{
    uint64_t h = t_hash3((uint64_t) salt, (uint64_t) r, (uint64_t) i);
    const tinfo_t *t = &types[c->type];
    if (MPI_PROD == c->op) {
        return (int64_t) (h % 3) + 1;
    }
    if (MPI_LAND == c->op || MPI_LOR == c->op || MPI_LXOR == c->op) {
        return (int64_t) (h % 3);   /* 0, 1, 2: non-zero is true */
    }
    if (MPI_BAND == c->op || MPI_BOR == c->op || MPI_BXOR == c->op) {
        return (int64_t) (h & (t->size >= 4 ? 0xffffffffu : 0xffu));
    }
    if (T_I8 == c->type) {
        return (int64_t) (h % 256) - 128;
    }
    return (int64_t) (h % 2001) - 1000;
}

static void put(const tinfo_t *t, void *buf, size_t i, int64_t v)
{
    char *p = (char *) buf + i * (size_t) t->size;
    switch (t->size * 2 + t->is_float) {
    case 2: { int8_t x = (int8_t) v; memcpy(p, &x, 1); break; }
    case 4: { int16_t x = (int16_t) v; memcpy(p, &x, 2); break; }
    case 8: { int32_t x = (int32_t) (uint32_t) v; memcpy(p, &x, 4); break; }
    case 9: { float x = (float) v; memcpy(p, &x, 4); break; }
    case 16: { int64_t x = v; memcpy(p, &x, 8); break; }
    case 17: { double x = (double) v; memcpy(p, &x, 8); break; }
    default: break;
    }
}

/* The element as the reference sees it: sign- or zero-extended per type. */
static int64_t get(const tinfo_t *t, const void *buf, size_t i)
{
    const char *p = (const char *) buf + i * (size_t) t->size;
    switch (t->size * 2 + t->is_float) {
    case 2: { int8_t x; memcpy(&x, p, 1); return t->is_unsigned ? (uint8_t) x : x; }
    case 4: { int16_t x; memcpy(&x, p, 2); return x; }
    case 8: { int32_t x; memcpy(&x, p, 4); return t->is_unsigned ? (int64_t) (uint32_t) x : x; }
    case 9: { float x; memcpy(&x, p, 4); return (int64_t) x; }
    case 16: { int64_t x; memcpy(&x, p, 8); return x; }
    case 17: { double x; memcpy(&x, p, 8); return (int64_t) x; }
    default: return 0;
    }
}

/* Narrow an exact result to what the type holds (integer sums wrap). */
static int64_t narrow(const tinfo_t *t, int64_t v)
{
    if (t->is_float) {
        return v;
    }
    switch (t->size) {
    case 1: return t->is_unsigned ? (int64_t) (uint8_t) v : (int64_t) (int8_t) v;
    case 2: return (int16_t) v;
    case 4: return t->is_unsigned ? (int64_t) (uint32_t) v : (int64_t) (int32_t) v;
    default: return v;
    }
}

static int64_t reference(const case_t *c, size_t i, int salt)
{
    int64_t acc = gen(c, 0, i, salt);
    /* With one process the input is the result, as it is; with more, logical
     * ops yield 0 or 1. */
    if (np > 1 && (MPI_LAND == c->op || MPI_LOR == c->op || MPI_LXOR == c->op)) {
        acc = acc != 0;
    }
    for (int r = 1; r < np; r++) {
        int64_t v = gen(c, r, i, salt);
        if (MPI_SUM == c->op) {
            acc = (int64_t) ((uint64_t) acc + (uint64_t) v);
        } else if (MPI_PROD == c->op) {
            acc = (int64_t) ((uint64_t) acc * (uint64_t) v);
        } else if (MPI_MIN == c->op) {
            acc = v < acc ? v : acc;
        } else if (MPI_MAX == c->op) {
            acc = v > acc ? v : acc;
        } else if (MPI_LAND == c->op) {
            acc = acc && v;
        } else if (MPI_LOR == c->op) {
            acc = acc || v;
        } else if (MPI_LXOR == c->op) {
            acc = (acc != 0) != (v != 0);
        } else if (MPI_BAND == c->op) {
            acc &= v;
        } else if (MPI_BOR == c->op) {
            acc |= v;
        } else if (MPI_BXOR == c->op) {
            acc ^= v;
        }
    }
    return narrow(&types[c->type], acc);
}

/* ---- (a) each collective ----------------------------------------------------------- */

static const case_t cases[] = {
    { MPI_SUM, "SUM", T_I8 },     { MPI_SUM, "SUM", T_INT },     { MPI_SUM, "SUM", T_DOUBLE },
    { MPI_SUM, "SUM", T_FLOAT },  { MPI_PROD, "PROD", T_LL },    { MPI_MIN, "MIN", T_I16 },
    { MPI_MAX, "MAX", T_DOUBLE }, { MPI_MIN, "MIN", T_FLOAT },   { MPI_LAND, "LAND", T_INT },
    { MPI_LOR, "LOR", T_INT },    { MPI_LXOR, "LXOR", T_INT },   { MPI_BAND, "BAND", T_U32 },
    { MPI_BOR, "BOR", T_U32 },    { MPI_BXOR, "BXOR", T_BYTE },
};

/* One nonblocking reduction; returns 1 if the result is right on this rank. */
static int one_reduction(const case_t *c, size_t count, int root, int in_place, int salt)
{
    const tinfo_t *t = &types[c->type];
    size_t bytes = count * (size_t) t->size;
    void *in = malloc(bytes + 1), *out = malloc(bytes + 1);
    for (size_t i = 0; i < count; i++) {
        put(t, in, i, gen(c, me, i, salt));
    }
    memset(out, 0x5a, bytes);
    int is_root = root < 0 || root == me;
    const void *sbuf = in;
    if (in_place && is_root) {
        memcpy(out, in, bytes);
        sbuf = MPI_IN_PLACE;
    }
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = root < 0 ? MPI_Iallreduce(sbuf, out, (int) count, t->dt, c->op, MPI_COMM_WORLD, &req)
                      : MPI_Ireduce(sbuf, out, (int) count, t->dt, c->op, root, MPI_COMM_WORLD,
                                    &req);
    if (MPI_SUCCESS == rc) {
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    long bad = -1;
    if (is_root) {
        for (size_t i = 0; i < count && bad < 0; i++) {
            if (get(t, out, i) != reference(c, i, salt)) {
                bad = (long) i;
            }
        }
    }
    int ok = t_check(MPI_SUCCESS == rc && bad < 0 && MPI_REQUEST_NULL == req,
                     "%s %s %s count %zu root %d%s: rc=%d, element %ld wrong (got %lld want "
                     "%lld)", root < 0 ? "MPI_Iallreduce" : "MPI_Ireduce", c->name, t->name,
                     count, root, in_place ? " in place" : "", rc, bad,
                     bad >= 0 ? (long long) get(t, out, (size_t) bad) : 0LL,
                     bad >= 0 ? (long long) reference(c, (size_t) bad, salt) : 0LL);
    free(in);
    free(out);
    return ok;
}

static void test_reductions(void)
{
    const size_t counts[] = { 1, 13, 70001 };
    int ncounts = t_opt.quick ? 2 : 3;
    int salt = 100;
    unsigned long long n_ar = 0, n_r = 0;
    snap_t a = snap();
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        for (int ci = 0; ci < ncounts; ci++) {
            /* The multi-segment count only for a few cases: it is the slow one. */
            if (2 == ci && k % 4 != 1) {
                continue;
            }
            size_t count = counts[ci];
            int in_place = (int) ((k + (size_t) ci) % 2);
            one_reduction(&cases[k], count, -1, in_place, salt++);
            n_ar++;
            int roots[3] = { 0, np - 1, np / 2 };
            int root = roots[(k + (size_t) ci) % 3];
            one_reduction(&cases[k], count, root, !in_place, salt++);
            n_r++;
        }
    }
    snap_t b = snap();
    expect_count(a, b, K_I, C_ALLREDUCE, 0, n_ar, "MPI_Iallreduce over the op/type matrix");
    expect_count(a, b, K_I, C_REDUCE, 0, n_r, "MPI_Ireduce over the op/type matrix");

    /* MINLOC / MAXLOC on pair types. */
    struct { double v; int i; } din[5], dout[5];
    struct { int v; int i; } iin[5], iout[5];
    for (int i = 0; i < 5; i++) {
        din[i].v = (double) ((me * 7 + i * 3) % 5);
        din[i].i = me;
        iin[i].v = (me * 5 + i) % 3;
        iin[i].i = me;
    }
    MPI_Request rq[2];
    a = snap();
    int rc = MPI_Iallreduce(din, dout, 5, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD, &rq[0]);
    rc |= MPI_Iallreduce(iin, iout, 5, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD, &rq[1]);
    rc |= MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    b = snap();
    int bad = -1;
    for (int i = 0; i < 5 && bad < 0; i++) {
        double bv = -1;
        int bi = -1, mv = 1 << 30, mi = -1;
        for (int r = 0; r < np; r++) {
            double v = (double) ((r * 7 + i * 3) % 5);
            if (v > bv) {
                bv = v;
                bi = r;
            }
            int w = (r * 5 + i) % 3;
            if (w < mv) {
                mv = w;
                mi = r;
            }
        }
        if (dout[i].v != bv || dout[i].i != bi || iout[i].v != mv || iout[i].i != mi) {
            bad = i;
        }
    }
    t_check(MPI_SUCCESS == rc && bad < 0, "MPI_Iallreduce MAXLOC/MINLOC: rc=%d element %d", rc,
            bad);
    expect_count(a, b, K_I, C_ALLREDUCE, 0, 2, "MPI_Iallreduce MAXLOC/MINLOC");
}

/* Sum modulo a prime: a user-defined op, which the NIC does not have. */
static void modsum_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void) dt;
    const int *a = in;
    int *b = inout;
    for (int i = 0; i < *len; i++) {
        b[i] = (int) (((long long) a[i] + b[i]) % 1000003);
    }
}

static void test_user_op(void)
{
    MPI_Op op;
    MPI_Op_create(modsum_fn, 1, &op);
    int in[10], out[10];
    for (int i = 0; i < 10; i++) {
        in[i] = 999990 + me + i;
    }
    snap_t a = snap();
    MPI_Request req;
    int rc = MPI_Iallreduce(in, out, 10, MPI_INT, op, MPI_COMM_WORLD, &req);
    rc |= MPI_Wait(&req, MPI_STATUS_IGNORE);
    snap_t b = snap();
    int bad = -1;
    for (int i = 0; i < 10 && bad < 0; i++) {
        long long s = 0;
        for (int r = 0; r < np; r++) {
            s = (s + 999990 + r + i) % 1000003;
        }
        bad = out[i] == (int) s ? -1 : i;
    }
    t_check(MPI_SUCCESS == rc && bad < 0, "MPI_Iallreduce user op: rc=%d element %d", rc, bad);
    expect_count(a, b, K_I, C_ALLREDUCE, 1, 1, "MPI_Iallreduce with a user-defined op");
    MPI_Op_free(&op);
}

static unsigned char bval(int root, size_t i, int salt)
{
    return (unsigned char) t_hash3((uint64_t) salt, (uint64_t) root, (uint64_t) i);
}

static void test_bcast(void)
{
    const size_t sizes[] = { 1, 1000, 300001 };
    int salt = 300;
    unsigned long long n = 0;
    snap_t a = snap();
    for (int si = 0; si < 3; si++) {
        for (int ri = 0; ri < 3; ri++) {
            int root = ri == 0 ? 0 : ri == 1 ? np - 1 : np / 2;
            size_t len = sizes[si];
            unsigned char *buf = malloc(len);
            for (size_t i = 0; i < len; i++) {
                buf[i] = me == root ? bval(root, i, salt) : (unsigned char) ~bval(root, i, salt);
            }
            MPI_Request req;
            int rc = MPI_Ibcast(buf, (int) len, MPI_BYTE, root, MPI_COMM_WORLD, &req);
            rc |= MPI_Wait(&req, MPI_STATUS_IGNORE);
            long bad = -1;
            for (size_t i = 0; i < len && bad < 0; i++) {
                bad = buf[i] == bval(root, i, salt) ? -1 : (long) i;
            }
            t_check(MPI_SUCCESS == rc && bad < 0, "MPI_Ibcast %zu B root %d: rc=%d byte %ld",
                    len, root, rc, bad);
            n++;
            salt++;
            free(buf);
        }
    }
    /* Non-contiguous (a vector of ints): staged, still offloaded; multi-segment
     * for the larger count. Odd non-root ranks receive plain ints. */
    MPI_Datatype vec;
    MPI_Type_vector(2, 3, 5, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    const int nvec[2] = { 7, 3000 };
    for (int k = 0; k < 2; k++) {
        int root = k % np;
        int plain = me != root && (me % 2);
        int cnt = nvec[k];
        int *buf = malloc(sizeof(int) * (size_t) cnt * 10);
        for (int i = 0; i < cnt * 10; i++) {
            buf[i] = me == root ? (int) bval(root, (size_t) i, salt) : -1;
        }
        MPI_Request req;
        int rc = plain ? MPI_Ibcast(buf, cnt * 6, MPI_INT, root, MPI_COMM_WORLD, &req)
                       : MPI_Ibcast(buf, cnt, vec, root, MPI_COMM_WORLD, &req);
        rc |= MPI_Wait(&req, MPI_STATUS_IGNORE);
        int bad = -1;
        /* Element e of the vector covers ints e*8 + {0,1,2,5,6,7}. */
        static const int offs[6] = { 0, 1, 2, 5, 6, 7 };
        for (int e = 0; e < cnt && bad < 0 && me != root; e++) {
            for (int j = 0; j < 6 && bad < 0; j++) {
                int want = (int) bval(root, (size_t) (e * 8 + offs[j]), salt);
                int got = plain ? buf[e * 6 + j] : buf[e * 8 + offs[j]];
                bad = got == want ? -1 : e;
            }
            if (!plain && e * 8 + 3 < cnt * 10 && buf[e * 8 + 3] != -1) {
                bad = e;   /* a gap was written */
            }
        }
        t_check(MPI_SUCCESS == rc && bad < 0,
                "MPI_Ibcast of %d vector elements root %d (%s here): rc=%d element %d", cnt,
                root, plain ? "contiguous" : "vector", rc, bad);
        n++;
        free(buf);
    }
    MPI_Type_free(&vec);
    snap_t b = snap();
    expect_count(a, b, K_I, C_BCAST, 0, n, "MPI_Ibcast (contiguous and staged)");
}

/* 1 if the last rank has marked the file (its first byte), else 0. */
static int marked(int fd)
{
    char c = 0;
    return fd >= 0 && 1 == pread(fd, &c, 1, 0) && '1' == c;
}

static void test_ibarrier(void)
{
    /* The last rank enters 0.2 s late, after writing a mark into a file the others
     * read: whoever sees the barrier complete (at a test while the last rank is
     * still asleep, or at the wait) must see the mark. No clock is judged. */
    MPI_Comm node;
    int local = 1;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
    int *pids = malloc(sizeof(int) * (size_t) np), pid = (int) getpid();
    MPI_Allgather(&pid, 1, MPI_INT, pids, 1, MPI_INT, MPI_COMM_WORLD);
    char path[64];
    snprintf(path, sizeof(path), "/tmp/t_nb_ibarrier.%d", pids[0]);
    free(pids);
    int last = me == np - 1, fd = -1, files = np > 1 && local == np;
    if (files && last) {
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (files && !last) {
        fd = open(path, O_RDONLY);
    }
    int opened = !files || fd >= 0, all_opened = 0;
    MPI_Allreduce(&opened, &all_opened, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (files && last) {
        unlink(path);
    }
    if (files && !all_opened) {
        t_check(0, "MPI_Ibarrier: the mark file %s could not be shared", path);
        files = 0;
    } else if (!files) {
        t_skip("MPI_Ibarrier arrival check: %s", np < 2 ? "1 process"
               : "ranks on several nodes (no shared file)");
    }
    snap_t a = snap();
    if (last) {
        usleep(200000);
        if (fd >= 0 && 1 != pwrite(fd, "1", 1, 0)) {
            t_check(0, "MPI_Ibarrier: cannot write the mark: %s", strerror(errno));
        }
    }
    MPI_Request req;
    int rc = MPI_Ibarrier(MPI_COMM_WORLD, &req);
    int early = 0;
    if (!last) {
        usleep(50000);
        int flag = 0;
        rc |= MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        early = flag && !marked(fd);
    }
    rc |= MPI_Wait(&req, MPI_STATUS_IGNORE);
    int unmarked = !last && !marked(fd);
    snap_t b = snap();
    if (files) {
        t_check(MPI_SUCCESS == rc && !early && !unmarked, "MPI_Ibarrier: rc=%d, complete "
                "before the last rank entered: %s", rc, early || unmarked ? "yes" : "no");
    } else {
        t_check_rc(rc, "MPI_Ibarrier");
    }
    if (fd >= 0) {
        close(fd);
    }
    expect_count(a, b, K_I, C_BARRIER, 0, 1, "MPI_Ibarrier");
}

/* ---- (b) many outstanding --------------------------------------------------------- */

static int ival(int r, int k, int i)
{
    return (int) (t_hash3(0x5eedULL + (uint64_t) k, (uint64_t) r, (uint64_t) i) % 100000);
}

static int check_sum(const int *out, int k, int count)
{
    for (int i = 0; i < count; i++) {
        long long s = 0;
        for (int r = 0; r < np; r++) {
            s += ival(r, k, i);
        }
        if (out[i] != (int) s) {
            return i;
        }
    }
    return -1;
}

static void shuffle(int *a, int n, uint64_t seed)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int) (t_hash3(seed, (uint64_t) i, 7) % (uint64_t) (i + 1));
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

static void test_many(void)
{
    enum { N = 32, NCOMM = 4 };
    int *in[N], *out[N], cnt[N];
    MPI_Request req[N];
    snap_t a = snap();
    /* One communicator, Waitall. */
    for (int k = 0; k < N; k++) {
        cnt[k] = 1 + k * 37 + (k % 5 == 4 ? 9000 : 0);
        in[k] = malloc(sizeof(int) * (size_t) cnt[k]);
        out[k] = calloc((size_t) cnt[k], sizeof(int));
        for (int i = 0; i < cnt[k]; i++) {
            in[k][i] = ival(me, k, i);
        }
        t_check_rc(MPI_Iallreduce(in[k], out[k], cnt[k], MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                  &req[k]), "MPI_Iallreduce (32 outstanding)");
    }
    t_check_rc(MPI_Waitall(N, req, MPI_STATUSES_IGNORE), "MPI_Waitall of 32");
    for (int k = 0; k < N; k++) {
        int bad = check_sum(out[k], k, cnt[k]);
        t_check(bad < 0, "32 outstanding on one communicator: call %d (%d ints) element %d", k,
                cnt[k], bad);
    }
    snap_t b = snap();
    expect_count(a, b, K_I, C_ALLREDUCE, 0, N, "32 outstanding MPI_Iallreduce");

    /* Four communicators, posted in a per-rank order (per communicator the order
     * is the same everywhere, as MPI requires), completed in a shuffled order. */
    MPI_Comm comm[NCOMM];
    for (int c = 0; c < NCOMM; c++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comm[c]);
        /* coll/offload sets a communicator up in its first blocking collective
         * (a nonblocking call cannot: the posting order below differs by rank). */
        MPI_Barrier(comm[c]);
    }
    int order[N], next[NCOMM] = { 0 };
    for (int k = 0; k < N; k++) {
        order[k] = k % NCOMM;
    }
    shuffle(order, N, 11 + (uint64_t) me);
    for (int j = 0; j < N; j++) {
        int c = order[j];
        int k = c * (N / NCOMM) + next[c]++;
        memset(out[k], 0, sizeof(int) * (size_t) cnt[k]);
        t_check_rc(MPI_Iallreduce(in[k], out[k], cnt[k], MPI_INT, MPI_SUM, comm[c], &req[k]),
                   "MPI_Iallreduce (32 over 4 communicators)");
    }
    int perm[N];
    for (int k = 0; k < N; k++) {
        perm[k] = k;
    }
    shuffle(perm, N, 99 + (uint64_t) me);
    MPI_Request shuffled[N];
    for (int k = 0; k < N; k++) {
        shuffled[k] = req[perm[k]];
    }
    int done = 0, spins = 0;
    while (done < N) {
        int idx, flag;
        int rc = (spins++ % 2) ? MPI_Testany(N, shuffled, &idx, &flag, MPI_STATUS_IGNORE)
                               : (flag = 1, MPI_Waitany(N, shuffled, &idx, MPI_STATUS_IGNORE));
        if (MPI_SUCCESS != rc) {
            t_check_rc(rc, "MPI_Testany/Waitany");
            break;
        }
        if (flag && MPI_UNDEFINED != idx) {
            int k = perm[idx];
            int bad = check_sum(out[k], k, cnt[k]);
            t_check(bad < 0, "32 over 4 communicators: call %d element %d", k, bad);
            done++;
        }
    }
    for (int c = 0; c < NCOMM; c++) {
        MPI_Comm_free(&comm[c]);
    }
    for (int k = 0; k < N; k++) {
        free(in[k]);
        free(out[k]);
    }
}

/* ---- (c) mixed ------------------------------------------------------------------ */

static void test_mixed(void)
{
    int rounds = t_opt.quick ? 10 : 40;
    snap_t a = snap();
    for (int it = 0; it < rounds; it++) {
        int cnt = (it % 3 == 2) ? 20000 : 1 + it;
        int *in = malloc(sizeof(int) * (size_t) cnt), *o1 = calloc((size_t) cnt, sizeof(int));
        int *o2 = calloc((size_t) cnt, sizeof(int)), *o3 = calloc((size_t) cnt, sizeof(int));
        int *bc = malloc(sizeof(int) * (size_t) cnt);
        for (int i = 0; i < cnt; i++) {
            in[i] = ival(me, it, i);
            bc[i] = me == it % np ? ival(it % np, it + 1, i) : 0;
        }
        MPI_Request r[3];
        int rc = MPI_Iallreduce(in, o1, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]);
        rc |= MPI_Allreduce(in, o2, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        rc |= MPI_Ibcast(bc, cnt, MPI_INT, it % np, MPI_COMM_WORLD, &r[1]);
        rc |= MPI_Reduce(in, o3, cnt, MPI_INT, MPI_SUM, np - 1, MPI_COMM_WORLD);
        rc |= MPI_Ibarrier(MPI_COMM_WORLD, &r[2]);
        rc |= MPI_Barrier(MPI_COMM_WORLD);
        rc |= MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
        int b1 = check_sum(o1, it, cnt), b2 = check_sum(o2, it, cnt);
        int b3 = me == np - 1 ? check_sum(o3, it, cnt) : -1, b4 = -1;
        for (int i = 0; i < cnt && b4 < 0; i++) {
            b4 = bc[i] == ival(it % np, it + 1, i) ? -1 : i;
        }
        t_check(MPI_SUCCESS == rc && b1 < 0 && b2 < 0 && b3 < 0 && b4 < 0,
                "mixed round %d (%d ints): rc=%d iallreduce %d allreduce %d reduce %d "
                "ibcast %d", it, cnt, rc, b1, b2, b3, b4);
        free(in);
        free(o1);
        free(o2);
        free(o3);
        free(bc);
    }
    snap_t b = snap();
    expect_count(a, b, K_I, C_ALLREDUCE, 0, (unsigned long long) rounds, "mixed: MPI_Iallreduce");
    expect_count(a, b, K_I, C_BCAST, 0, (unsigned long long) rounds, "mixed: MPI_Ibcast");
    expect_count(a, b, K_I, C_BARRIER, 0, (unsigned long long) rounds, "mixed: MPI_Ibarrier");
}

/* Small calls start while one rank still has a call outstanding and the others
 * do not, so each rank takes a different path into the same calls (queued
 * behind the outstanding one, or posted at once); an empty persistent allreduce
 * in between (Open MPI 4.1 completes those before any component sees them).
 * Every result must still be right, and nothing may hang. */
static void test_uneven(void)
{
    int rounds = t_opt.quick ? 20 : 100;
    int pin[3], pout[3] = { 0, 0, 0 }, zero_in = 0, zero_out = 0;
    MPI_Request pz, ps;
    int rc = MPI_Allreduce_init(&zero_in, &zero_out, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                 MPI_INFO_NULL, &pz);
    rc |= MPI_Allreduce_init(pin, pout, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &ps);
    int bad = 0;
    const int big = 65536;   /* long enough to be still outstanding at rank 0 */
    int *lin = malloc(sizeof(int) * (size_t) big), *lout = malloc(sizeof(int) * (size_t) big);
    for (int it = 0; it < rounds && MPI_SUCCESS == rc; it++) {
        MPI_Request rb, ri;
        for (int i = 0; i < big; i++) {
            lin[i] = ival(me, it, i);
        }
        int iin = ival(me, it, 0), iout = 0, bin = ival(me, it, 1), bout = 0;
        for (int i = 0; i < 3; i++) {
            pin[i] = ival(me, it, 2 + i);
        }
        rc |= MPI_Iallreduce(lin, lout, big, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rb);
        if (0 != me) {
            rc |= MPI_Wait(&rb, MPI_STATUS_IGNORE);
        }
        rc |= MPI_Start(&pz);
        rc |= MPI_Iallreduce(&iin, &iout, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &ri);
        rc |= MPI_Start(&ps);
        rc |= MPI_Allreduce(&bin, &bout, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (0 == me) {
            rc |= MPI_Wait(&rb, MPI_STATUS_IGNORE);
        }
        rc |= MPI_Wait(&pz, MPI_STATUS_IGNORE);
        rc |= MPI_Wait(&ri, MPI_STATUS_IGNORE);
        rc |= MPI_Wait(&ps, MPI_STATUS_IGNORE);
        bad += check_sum(&iout, it, 1) >= 0;
        bad += check_sum(lout, it, big) >= 0;
        int wb = 0, wp[3] = { 0, 0, 0 };
        for (int r = 0; r < np; r++) {
            wb += ival(r, it, 1);
            for (int i = 0; i < 3; i++) {
                wp[i] += ival(r, it, 2 + i);
            }
        }
        bad += wb != bout;
        for (int i = 0; i < 3; i++) {
            bad += wp[i] != pout[i];
        }
    }
    free(lin);
    free(lout);
    rc |= MPI_Request_free(&pz);
    rc |= MPI_Request_free(&ps);
    t_check(MPI_SUCCESS == rc && 0 == bad,
            "uneven starts: rc=%d, %d wrong results over %d rounds", rc, bad, rounds);
}

/* ---- (d) Request_free and Cancel ------------------------------------------------ */

/* Which calls coll/offload itself serves: with --expect-offload on 2+ ranks
 * (one process gets coll/self). Behaviour the MPI standard calls erroneous is
 * only checked there: stock libnbc refuses MPI_Request_free of an active
 * request, coll/offload lets the operation complete and recycles it. */
static int offloaded_here(void)
{
    return t_opt.expect_offload && np > 1;
}

/* Does coll/offload run persistent collectives itself? Only where their starts
 * may be matched by order (coll_offload_persistent_ordered, or the communicator's
 * mpi_assert_strict_persistent_collective_ordering); else they are the layer
 * below's (MPI-4 lets ranks start them in any order). */
static int p_ordered;

static int p_offloaded(void)
{
    return offloaded_here() && p_ordered;
}

/* The persistent counters: offloaded ones count starts; those handed down because
 * starts may come in any order count their inits (the starts are the layer below's). */
static void p_expect(snap_t a, snap_t b, int coll, unsigned long long starts,
                     unsigned long long inits, const char *what)
{
    expect_count(a, b, K_P, coll, !p_ordered, p_ordered ? starts : inits, what);
}

static void test_free_cancel(void)
{
    int rounds = t_opt.quick ? 50 : 200;
    int cnt = 3000;
    int *in = malloc(sizeof(int) * (size_t) cnt), *out = malloc(sizeof(int) * (size_t) cnt);
    int bad_rounds = 0, null_after = 1;
    /* A freed request's buffers are reused after the barrier below: valid only where
     * the component runs the call (in order); on a crowded node (more ranks than cores)
     * small reduces go to the layer below unless coll_offload_crowded_max is -1. */
    unsigned long long crowded_max = 0;
    int crowded = t_cvar_read_ull("coll_offload_crowded_max", &crowded_max)
                  && (long long) crowded_max >= 0 && np > sysconf(_SC_NPROCESSORS_ONLN);
    if (!offloaded_here() || crowded) {
        rounds = 0;
        t_skip("MPI_Request_free of active requests: %s", crowded
               ? "more ranks than cores and coll_offload_crowded_max >= 0 (handed down)"
               : "only with --expect-offload, 2+ ranks");
    }
    for (int it = 0; it < rounds; it++) {
        for (int i = 0; i < cnt; i++) {
            in[i] = ival(me, it, i);
            out[i] = -1;
        }
        MPI_Request req;
        int c = it % 3 == 0 ? 5 : cnt;
        if (it % 2) {
            MPI_Ireduce(in, out, c, MPI_INT, MPI_SUM, it % np, MPI_COMM_WORLD, &req);
        } else {
            MPI_Iallreduce(in, out, c, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
        }
        MPI_Request_free(&req);
        null_after &= MPI_REQUEST_NULL == req;
        /* A later call on the same communicator completes after it, everywhere. */
        MPI_Barrier(MPI_COMM_WORLD);
        if ((0 == it % 2 || me == it % np) && check_sum(out, it, c) >= 0) {
            bad_rounds++;
        }
    }
    if (rounds > 0) {
        t_check(0 == bad_rounds && null_after,
                "MPI_Request_free of active requests: %d of %d results wrong, handle %s NULL",
                bad_rounds, rounds, null_after ? "set to" : "not set to");
    }

    /* MPI_Cancel: erroneous for collectives; a clear error, the request lives on. */
    for (int i = 0; i < cnt; i++) {
        in[i] = ival(me, 77, i);
    }
    MPI_Request req;
    MPI_Iallreduce(in, out, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    int rc = MPI_Cancel(&req);
    int cls = MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    if (np < 2) {
        t_skip("MPI_Cancel of a collective request: 1 process (coll/self serves it)");
    } else {
        t_check(MPI_ERR_REQUEST == cls, "MPI_Cancel on an MPI_Iallreduce request: rc %d "
                "class %d (want MPI_ERR_REQUEST)", rc, cls);
    }
    MPI_Status st;
    rc = MPI_Wait(&req, &st);
    int cancelled = 1;
    MPI_Test_cancelled(&st, &cancelled);
    t_check(MPI_SUCCESS == rc && !cancelled && check_sum(out, 77, cnt) < 0,
            "request after a refused MPI_Cancel: rc=%d cancelled=%d, result %s", rc, cancelled,
            check_sum(out, 77, cnt) < 0 ? "right" : "wrong");
    free(in);
    free(out);
}

/* ---- (e) persistent ----------------------------------------------------------- */

static void test_persistent(void)
{
    int iters = t_opt.quick ? 300 : 1000;
    enum { BIG = 6000 };
    int small_in, small_out, *big_in = malloc(sizeof(int) * BIG);
    int *big_out = malloc(sizeof(int) * BIG);
    MPI_Request r[2];
    snap_t a = snap();
    int rc = MPI_Allreduce_init(&small_in, &small_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                 MPI_INFO_NULL, &r[0]);
    rc |= MPI_Allreduce_init(MPI_IN_PLACE, big_out, BIG, MPI_INT, MPI_MAX, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &r[1]);
    t_check_rc(rc, "MPI_Allreduce_init");
    int bad = 0;
    for (int it = 0; it < iters; it++) {
        small_in = ival(me, it, 0);
        small_out = -1;
        rc = MPI_Start(&r[0]);
        if (0 == it % 10) {
            for (int i = 0; i < BIG; i++) {
                big_out[i] = ival(me, it, i);
            }
            rc |= MPI_Start(&r[1]);
            rc |= MPI_Wait(&r[1], MPI_STATUS_IGNORE);
            for (int i = 0; i < BIG; i++) {
                int mx = ival(0, it, i);
                for (int q = 1; q < np; q++) {
                    mx = ival(q, it, i) > mx ? ival(q, it, i) : mx;
                }
                if (big_out[i] != mx) {
                    bad++;
                    break;
                }
            }
        }
        rc |= MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        bad += MPI_SUCCESS != rc || check_sum(&small_out, it, 1) >= 0;
    }
    t_check(0 == bad && MPI_REQUEST_NULL != r[0], "%d x MPI_Start of persistent allreduces: %d "
            "wrong (handle %s)", iters, bad, MPI_REQUEST_NULL != r[0] ? "kept" : "lost");
    snap_t b = snap();
    p_expect(a, b, C_ALLREDUCE, (unsigned long long) (iters + (iters + 9) / 10), 2,
             "persistent allreduce starts");

    /* Inactive after completion: Test says done at once, Wait returns at once. */
    int flag = 0;
    MPI_Status st;
    rc = MPI_Test(&r[0], &flag, &st);
    int rc2 = MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    t_check(MPI_SUCCESS == rc && MPI_SUCCESS == rc2 && flag && MPI_REQUEST_NULL != r[0],
            "inactive persistent request: test rc=%d flag=%d, wait rc=%d", rc, flag, rc2);
    t_check_rc(MPI_Request_free(&r[0]), "MPI_Request_free (inactive persistent)");
    t_check_rc(MPI_Request_free(&r[1]), "MPI_Request_free (inactive persistent)");
    t_check(MPI_REQUEST_NULL == r[0] && MPI_REQUEST_NULL == r[1], "freed handles not NULL");

    /* All four, started together. */
    enum { BC = 5000 };
    int rin[3], rout[3], *bcb = malloc(sizeof(int) * BC);
    MPI_Request q[4];
    int broot = np - 1, rroot = np / 2;
    a = snap();
    rc = MPI_Bcast_init(bcb, BC, MPI_INT, broot, MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]);
    rc |= MPI_Reduce_init(rin, rout, 3, MPI_INT, MPI_SUM, rroot, MPI_COMM_WORLD, MPI_INFO_NULL,
                           &q[1]);
    rc |= MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &q[2]);
    rc |= MPI_Allreduce_init(rin, rout, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &q[3]);
    t_check_rc(rc, "MPIX_{Bcast,Reduce,Barrier,Allreduce}_init");
    int rounds = t_opt.quick ? 50 : 200;
    bad = 0;
    for (int it = 0; it < rounds; it++) {
        for (int i = 0; i < BC; i++) {
            bcb[i] = me == broot ? ival(broot, it, i) : -1;
        }
        for (int i = 0; i < 3; i++) {
            rin[i] = ival(me, it, i);
            rout[i] = -1;
        }
        /* The reduce and the allreduce share rout: start them apart. */
        rc = MPI_Startall(3, q);
        rc |= MPI_Waitall(3, q, MPI_STATUSES_IGNORE);
        int okr = me != rroot || check_sum(rout, it, 3) < 0;
        rc |= MPI_Start(&q[3]);
        rc |= MPI_Wait(&q[3], MPI_STATUS_IGNORE);
        int oka = check_sum(rout, it, 3) < 0;
        int okb = 1;
        for (int i = 0; i < BC && okb; i++) {
            okb = bcb[i] == ival(broot, it, i);
        }
        bad += MPI_SUCCESS != rc || !okr || !oka || !okb;
    }
    t_check(0 == bad, "%d rounds of MPI_Startall(bcast, reduce, barrier) + allreduce: %d wrong",
            rounds, bad);
    b = snap();
    p_expect(a, b, C_BCAST, (unsigned long long) rounds, 1, "persistent bcast starts");
    p_expect(a, b, C_REDUCE, (unsigned long long) rounds, 1, "persistent reduce starts");
    p_expect(a, b, C_BARRIER, (unsigned long long) rounds, 1, "persistent barrier starts");

    /* Freed while active: the operation still completes. */
    if (p_offloaded()) {
        for (int i = 0; i < 3; i++) {
            rin[i] = ival(me, 4242, i);
            rout[i] = -1;
        }
        rc = MPI_Start(&q[3]);
        rc |= MPI_Request_free(&q[3]);
        rc |= MPI_Barrier(MPI_COMM_WORLD);
        t_check(MPI_SUCCESS == rc && MPI_REQUEST_NULL == q[3] && check_sum(rout, 4242, 3) < 0,
                "persistent allreduce freed while active: rc=%d result %s", rc,
                check_sum(rout, 4242, 3) < 0 ? "right" : "wrong");
    } else {
        t_check_rc(MPI_Request_free(&q[3]), "MPI_Request_free (persistent)");
    }
    for (int k = 0; k < 3; k++) {
        t_check_rc(MPI_Request_free(&q[k]), "MPI_Request_free (persistent)");
    }
    free(big_in);
    free(big_out);
    free(bcb);
}

/* Persistent requests made on a communicator before any blocking collective:
 * the inits are collective (MPI-4), so the first of them sets the NIC up and
 * every start is offloaded (MPI-4 test suites' p_allred uses nothing else). */
static void test_persistent_early(void)
{
    MPI_Comm c;
    t_check_rc(MPI_Comm_dup(MPI_COMM_WORLD, &c), "MPI_Comm_dup");
    enum { BC = 700, PHASE = 5 };
    int rin[3], rout[3], ain[3], aout[3], *bcb = malloc(sizeof(int) * BC);
    int broot = np - 1, rroot = np / 2;
    MPI_Request q[4], gone;
    int rc = MPI_Allreduce_init(ain, aout, 3, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, &q[0]);
    rc |= MPI_Reduce_init(rin, rout, 3, MPI_INT, MPI_SUM, rroot, c, MPI_INFO_NULL, &q[1]);
    rc |= MPI_Bcast_init(bcb, BC, MPI_INT, broot, c, MPI_INFO_NULL, &q[2]);
    rc |= MPI_Barrier_init(c, MPI_INFO_NULL, &q[3]);
    t_check_rc(rc, "MPI_<coll>_init before the communicator's first blocking collective");

    for (int phase = 0; phase < 2; phase++) {
        snap_t a = snap();
        int bad = 0;
        for (int k = 0; k < PHASE; k++) {
            int it = 100 * phase + k;
            for (int i = 0; i < 3; i++) {
                rin[i] = ain[i] = ival(me, it, i);
                rout[i] = aout[i] = -1;
            }
            for (int i = 0; i < BC; i++) {
                bcb[i] = me == broot ? ival(broot, it, i) : -1;
            }
            rc = MPI_Startall(4, q);
            rc |= MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
            int okb = 1;
            for (int i = 0; i < BC && okb; i++) {
                okb = bcb[i] == ival(broot, it, i);
            }
            bad += MPI_SUCCESS != rc || check_sum(aout, it, 3) >= 0
                   || (me == rroot && check_sum(rout, it, 3) >= 0) || !okb;
        }
        t_check(0 == bad, "persistent requests made before set-up, %s: %d of %d rounds wrong",
                phase ? "after the first blocking collective" : "before it", bad, PHASE);
        snap_t b = snap();
        for (int coll = 0; coll < C_N; coll++) {
            p_expect(a, b, coll, PHASE, 0,
                         phase ? "early persistent request after set-up"
                               : "early persistent request before set-up");
        }
        if (0 == phase && p_offloaded()) {
            /* One freed while it runs: the operation completes. */
            int gin = ival(me, 77, 0), gout = -1;
            rc = MPI_Allreduce_init(&gin, &gout, 1, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, &gone);
            rc |= MPI_Start(&gone);
            rc |= MPI_Request_free(&gone);
            double t0 = MPI_Wtime();
            while (check_sum(&gout, 77, 1) >= 0 && MPI_Wtime() - t0 < 10.0) {
                int flag;
                MPI_Iprobe(MPI_ANY_SOURCE, 12345, c, &flag, MPI_STATUS_IGNORE);
            }
            t_check(MPI_SUCCESS == rc && MPI_REQUEST_NULL == gone && check_sum(&gout, 77, 1) < 0,
                    "early persistent allreduce freed while active: rc=%d result %s", rc,
                    check_sum(&gout, 77, 1) < 0 ? "right" : "wrong");
            t_check_rc(MPI_Barrier(c), "MPI_Barrier");
        }
    }
    for (int k = 0; k < 4; k++) {
        t_check_rc(MPI_Request_free(&q[k]), "MPI_Request_free (early persistent)");
    }
    t_check_rc(MPI_Comm_free(&c), "MPI_Comm_free");
    free(bcb);
}

/* The same on a communicator of one rank: there the fallback (libnbc) makes
 * persistent requests that do nothing and have no start function, which a
 * start must complete at once instead of calling into them. */
static void test_persistent_one_rank(void)
{
    MPI_Comm c;
    t_check_rc(MPI_Comm_split(MPI_COMM_WORLD, me, 0, &c), "MPI_Comm_split (one rank each)");
    enum { N = 5, ROUNDS = 3 };
    int ain[N], aout[N], rin[N], rout[N], bcb[N];
    MPI_Request q[4];
    int rc = MPI_Allreduce_init(ain, aout, N, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, &q[0]);
    rc |= MPI_Reduce_init(rin, rout, N, MPI_INT, MPI_MAX, 0, c, MPI_INFO_NULL, &q[1]);
    rc |= MPI_Bcast_init(bcb, N, MPI_INT, 0, c, MPI_INFO_NULL, &q[2]);
    rc |= MPI_Barrier_init(c, MPI_INFO_NULL, &q[3]);
    t_check_rc(rc, "MPIX_*_init on a one-rank communicator before its first blocking collective");
    for (int phase = 0; phase < 2; phase++) {
        int bad = 0;
        for (int k = 0; k < ROUNDS; k++) {
            int it = 300 + 10 * phase + k;
            for (int i = 0; i < N; i++) {
                ain[i] = rin[i] = bcb[i] = ival(me, it, i);
                aout[i] = rout[i] = -1;
            }
            if (0 == k % 2) {
                rc = MPI_Startall(4, q);
                rc |= MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
            } else {
                rc = MPI_SUCCESS;
                for (int j = 0; j < 4; j++) {
                    rc |= MPI_Start(&q[j]);
                    rc |= MPI_Wait(&q[j], MPI_STATUS_IGNORE);
                }
            }
            int ok = MPI_SUCCESS == rc;
            for (int i = 0; i < N && ok; i++) {
                int v = ival(me, it, i);
                ok = aout[i] == v && rout[i] == v && bcb[i] == v;
            }
            bad += !ok;
        }
        t_check(0 == bad, "persistent requests on a one-rank communicator, %s: %d of %d rounds "
                "wrong", phase ? "after a blocking collective" : "before any", bad, ROUNDS);
        if (0 == phase) {
            t_check_rc(MPI_Barrier(c), "MPI_Barrier on a one-rank communicator");
        }
    }
    for (int k = 0; k < 4; k++) {
        t_check_rc(MPI_Request_free(&q[k]), "MPI_Request_free (one-rank persistent)");
    }
    t_check_rc(MPI_Comm_free(&c), "MPI_Comm_free");
}

/* MPI-4 section 6.13: unless the communicator asserts
 * mpi_assert_strict_persistent_collective_ordering, ranks may start persistent
 * collectives in different orders (MPICH's p_order does). Every rank starts a
 * bcast, a reduce, an allreduce and a barrier one at a time in an order of its own
 * (rotated by rank and round, reversed on odd ranks), then waits for all four; an
 * offloaded blocking allreduce on the same communicator follows each round. */
static void test_persistent_any_order(void)
{
    if (p_ordered) {
        t_skip("persistent starts in different orders: coll_offload_persistent_ordered=1 "
               "asserts one order");
        return;
    }
    MPI_Comm c;
    t_check_rc(MPI_Comm_dup(MPI_COMM_WORLD, &c), "MPI_Comm_dup");
    t_check_rc(MPI_Barrier(c), "MPI_Barrier");   /* sets the NIC up */
    enum { BC = 3000, N = 3 };
    int rounds = t_opt.quick ? 20 : 100;
    int rin[N], rout[N], ain[N], aout[N], *bcb = malloc(sizeof(int) * BC);
    int broot = np - 1, rroot = np / 2;
    MPI_Request q[4];
    snap_t a = snap();
    int rc = MPI_Bcast_init(bcb, BC, MPI_INT, broot, c, MPI_INFO_NULL, &q[0]);
    rc |= MPI_Reduce_init(rin, rout, N, MPI_INT, MPI_SUM, rroot, c, MPI_INFO_NULL, &q[1]);
    rc |= MPI_Allreduce_init(ain, aout, N, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, &q[2]);
    rc |= MPI_Barrier_init(c, MPI_INFO_NULL, &q[3]);
    t_check_rc(rc, "MPI_{Bcast,Reduce,Allreduce,Barrier}_init");
    int bad = 0, bad_blocking = 0;
    for (int it = 0; it < rounds; it++) {
        for (int i = 0; i < N; i++) {
            rin[i] = ain[i] = ival(me, it, i);
            rout[i] = aout[i] = -1;
        }
        for (int i = 0; i < BC; i++) {
            bcb[i] = me == broot ? ival(broot, it, i) : -1;
        }
        rc = MPI_SUCCESS;
        for (int j = 0; j < 4; j++) {
            int k = (me + it + j) % 4;
            rc |= MPI_Start(&q[me % 2 ? 3 - k : k]);
        }
        rc |= MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
        int ok = MPI_SUCCESS == rc && check_sum(aout, it, N) < 0
                 && (me != rroot || check_sum(rout, it, N) < 0);
        for (int i = 0; i < BC && ok; i++) {
            ok = bcb[i] == ival(broot, it, i);
        }
        bad += !ok;
        int x = ival(me, 1000 + it, 0), y = -1;
        rc = MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, c);
        bad_blocking += MPI_SUCCESS != rc || check_sum(&y, 1000 + it, 1) >= 0;
    }
    t_check(0 == bad, "%d rounds of persistent bcast, reduce, allreduce, barrier started in "
            "rank-dependent orders: %d wrong", rounds, bad);
    t_check(0 == bad_blocking, "blocking allreduces between those rounds: %d of %d wrong",
            bad_blocking, rounds);
    snap_t b = snap();
    for (int coll = 0; coll < C_N; coll++) {
        p_expect(a, b, coll, (unsigned long long) rounds, 1, "persistent starts in any order");
    }
    for (int k = 0; k < 4; k++) {
        t_check_rc(MPI_Request_free(&q[k]), "MPI_Request_free (persistent)");
    }
    t_check_rc(MPI_Comm_free(&c), "MPI_Comm_free");
    free(bcb);
}

/* ---- (f) progress without the host ----------------------------------------------- */

static volatile double sink;

/* Busy work with no MPI call, for `secs` seconds. */
static void compute(double secs)
{
    double t0 = now_s(), x = 1.0;
    while (now_s() - t0 < secs) {
        for (int i = 0; i < 10000; i++) {
            x = x * 1.0000001 + 1e-9;
        }
    }
    sink = x;
}

/* The agent thread's CPU list (from /proc), or "" if there is none. */
static void agent_cpus(char *buf, size_t len)
{
    buf[0] = '\0';
    DIR *d = opendir("/proc/self/task");
    if (NULL == d) {
        return;
    }
    struct dirent *e;
    while (NULL != (e = readdir(d))) {
        char path[300], name[64] = "";
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (NULL == f) {
            continue;
        }
        if (NULL == fgets(name, sizeof(name), f)) {
            name[0] = '\0';
        }
        fclose(f);
        if (0 != strncmp(name, "ofl-agent", 9)) {
            continue;
        }
        snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
        f = fopen(path, "r");
        char line[512];
        while (NULL != f && NULL != fgets(line, sizeof(line), f)) {
            if (0 == strncmp(line, "Cpus_allowed_list:", 18)) {
                char *p = line + 18;
                while (' ' == *p || '\t' == *p) {
                    p++;
                }
                p[strcspn(p, "\n")] = '\0';
                snprintf(buf, len, "%s", p);
            }
        }
        if (NULL != f) {
            fclose(f);
        }
    }
    closedir(d);
}

static void parse_cpus(const char *list, cpu_set_t *set)
{
    CPU_ZERO(set);
    const char *p = list;
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10);
        if (end == p) {
            break;
        }
        long b = a;
        if ('-' == *end) {
            b = strtol(end + 1, &end, 10);
        }
        for (long c = a; c <= b && c < CPU_SETSIZE; c++) {
            CPU_SET((int) c, set);
        }
        p = ',' == *end ? end + 1 : end;
    }
}

static void test_no_host(void)
{
    if (!t_opt.expect_offload || np < 2) {
        t_skip("progress without the host: only with --expect-offload and 2+ ranks");
        return;
    }
    unsigned long long agent_on = 1;
    t_cvar_read_ull("coll_offload_agent", &agent_on);
    if (!agent_on) {
        t_skip("progress without the host: coll_offload_agent=0");
        return;
    }
    /* More ranks on the node than cores: no core is idle for an agent, and the
     * component starts none (nonblocking calls progress inside MPI calls). */
    MPI_Comm node;
    int local = 1;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
    if (local > (int) sysconf(_SC_NPROCESSORS_ONLN)) {
        char none[512];
        agent_cpus(none, sizeof(none));
        t_check('\0' == none[0], "%d ranks on %ld cores, yet a thread named ofl-agent runs "
                "(on %s)", local, sysconf(_SC_NPROCESSORS_ONLN), none);
        t_skip("progress without the host: more ranks than cores, no agent");
        return;
    }
    enum { BIG = 16384 + 7 };
    int *in = malloc(sizeof(int) * BIG);
    volatile int *out = calloc(BIG, sizeof(int));
    for (int i = 0; i < BIG; i++) {
        in[i] = ival(me, 555, i);
    }
    int small_in = ival(me, 556, 0);
    volatile int small_out = 0;
    volatile int bc[64];
    for (int i = 0; i < 64; i++) {
        bc[i] = me == 0 ? i * 3 + 1 : -1;
    }
    for (int mode = 0; mode < 2; mode++) {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Request r[4];
        MPI_Iallreduce(&small_in, (int *) &small_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]);
        MPI_Iallreduce(in, (int *) out, BIG, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[1]);
        MPI_Ibcast((int *) bc, 64, MPI_INT, 0, MPI_COMM_WORLD, &r[2]);
        MPI_Ibarrier(MPI_COMM_WORLD, &r[3]);
        /* No MPI call until the results are in place, and for at least 0.3 s (far
         * longer than the calls take, well under a millisecond each); 10 s without
         * them is a hang. How long they took is printed, not judged. */
        double t0 = now_s(), in_place = -1;
        int ready = 0;
        while (now_s() - t0 < 10.0 && (!ready || now_s() - t0 < 0.3)) {
            if (0 == mode) {
                compute(0.005);
            } else {
                usleep(5000);
            }
            if (!ready) {
                ready = check_sum((const int *) &small_out, 556, 1) < 0
                        && check_sum((const int *) out, 555, BIG) < 0;
                for (int i = 0; i < 64 && ready; i++) {
                    ready = bc[i] == i * 3 + 1;
                }
                in_place = ready ? now_s() - t0 : in_place;
            }
        }
        int flags[4];
        for (int k = 0; k < 4; k++) {
            MPI_Test(&r[k], &flags[k], MPI_STATUS_IGNORE);
        }
        t_check(ready, "progress without the host (%s): results not in place after %.1f s "
                "without MPI calls", mode ? "sleeping" : "computing", now_s() - t0);
        t_note("  progress without the host (%s): results in place after %.3f s on rank 0\n",
               mode ? "sleeping" : "computing", in_place);
        t_check(flags[0] && flags[1] && flags[2] && flags[3],
                "progress without the host (%s): first MPI_Test flags %d %d %d %d",
                mode ? "sleeping" : "computing", flags[0], flags[1], flags[2], flags[3]);
        for (int k = 0; k < 4; k++) {
            if (!flags[k]) {
                MPI_Wait(&r[k], MPI_STATUS_IGNORE);
            }
        }
        for (int i = 0; i < BIG; i++) {
            out[i] = 0;
        }
        small_out = 0;
    }

    /* Nothing outstanding: the agent sleeps. */
    MPI_Barrier(MPI_COMM_WORLD);
    usleep(20000);
    double c0 = cpu_s();
    usleep(300000);
    double used = cpu_s() - c0;
    t_note("  idle: rank 0 used %.3f s of CPU in 0.3 s (the agent asleep: about none)\n", used);

    /* Placement: a core no local rank is bound to, if there is one; else unbound. */
    char cpus[512];
    agent_cpus(cpus, sizeof(cpus));
    t_check('\0' != cpus[0], "no thread named ofl-agent");
    cpu_set_t mine, all, agent;
    sched_getaffinity(0, sizeof(mine), &mine);
    CPU_ZERO(&all);
    int online = (int) sysconf(_SC_NPROCESSORS_ONLN);
    for (int c = 0; c < online && c < CPU_SETSIZE; c++) {
        CPU_SET(c, &all);
    }
    unsigned char bits[CPU_SETSIZE / 8], *every = malloc(sizeof(bits) * (size_t) np);
    memset(bits, 0, sizeof(bits));
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, &mine)) {
            bits[c / 8] |= (unsigned char) (1u << (c % 8));
        }
    }
    MPI_Allgather(bits, sizeof(bits), MPI_BYTE, every, sizeof(bits), MPI_BYTE, MPI_COMM_WORLD);
    cpu_set_t used_by_ranks, spare;
    CPU_ZERO(&used_by_ranks);
    for (int r = 0; r < np; r++) {
        for (int c = 0; c < CPU_SETSIZE; c++) {
            if (every[(size_t) r * sizeof(bits) + (size_t) (c / 8)] & (1u << (c % 8))) {
                CPU_SET(c, &used_by_ranks);
            }
        }
    }
    CPU_AND(&spare, &all, &used_by_ranks);
    CPU_XOR(&spare, &all, &spare);
    parse_cpus(cpus, &agent);
    cpu_set_t overlap;
    CPU_AND(&overlap, &agent, &used_by_ranks);
    if (CPU_COUNT(&spare) > 0) {
        t_check(CPU_COUNT(&overlap) == 0 && CPU_COUNT(&agent) > 0,
                "agent on CPUs %s although %d CPU(s) have no rank", cpus, CPU_COUNT(&spare));
    } else {
        t_check(CPU_EQUAL(&agent, &all), "agent on CPUs %s: with every CPU taken by a rank it "
                "should be unbound (all %d)", cpus, online);
    }
    if (t_opt.verbose) {
        printf("  [rank %d] agent CPUs %s\n", me, cpus);
    }
    free(every);
    free(in);
    free((void *) out);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "t_nb");
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    types_init();
    if (t_opt.expect_offload) {
        t_pvar_t *flat = &pv[0][0][0];
        for (int k = 0; k < K_N; k++) {
            for (int c = 0; c < C_N; c++) {
                for (int f = 0; f < 2; f++) {
                    snprintf(pv_names[k][c][f], sizeof(pv_names[k][c][f]),
                             "coll_offload_%s%s_%s", kind_prefix[k], coll_names[c],
                             f ? "fallback" : "offloaded");
                    pv[k][c][f].name = pv_names[k][c][f];
                }
            }
        }
        t_pvars_open(flat, K_N * C_N * 2);
        for (int i = 0; i < K_N * C_N * 2; i++) {
            t_check(flat[i].found, "performance variable %s not found", flat[i].name);
        }
    }
    unsigned long long ordered = 0;
    p_ordered = t_cvar_read_ull("coll_offload_persistent_ordered", &ordered) && ordered;
    t_note("t_nb: %d ranks%s%s\n", np, t_opt.expect_offload ? ", --expect-offload" : "",
           p_ordered ? ", persistent starts in one order" : "");
    if (!t_opt.expect_offload || np < 2) {
        t_note("  skipped: every MPI_T counter check (%s)\n", np < 2 ? "1 process"
               : "no --expect-offload");
    }
    /* coll/offload sets a communicator up in its first blocking collective;
     * until then nonblocking calls go to the fallback. */
    MPI_Barrier(MPI_COMM_WORLD);

    t_section_begin("(a) reductions: ops x types");
    test_reductions();
    test_user_op();
    t_section_end();
    t_section_begin("(a) ibcast, ibarrier");
    test_bcast();
    test_ibarrier();
    t_section_end();
    t_section_begin("(b) 32 outstanding");
    test_many();
    t_section_end();
    t_section_begin("(c) blocking and nonblocking mixed");
    test_mixed();
    test_uneven();
    t_section_end();
    t_section_begin("(d) Request_free, Cancel");
    test_free_cancel();
    t_section_end();
    t_section_begin("(e) persistent");
    test_persistent();
    test_persistent_early();
    test_persistent_one_rank();
    test_persistent_any_order();
    t_section_end();
    t_section_begin("(f) progress without the host");
    test_no_host();
    t_section_end();

    if (t_opt.expect_offload) {
        t_pvars_close(&pv[0][0][0], K_N * C_N * 2);
    }
    return t_finish();
}
