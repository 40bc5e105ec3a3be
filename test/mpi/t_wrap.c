/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Integer reductions wrap, whatever path a call takes, and every predefined
 * datatype is recognised as itself.
 *
 * (a) identity: every predefined integer, floating, logical, complex and pair
 *     type with an op MPI defines on it gives the right answer, and with
 *     --expect-offload a small allreduce of it is offloaded (MPI_T counters).
 *     Open MPI 4.1 gives MPI_BYTE, MPI_UNSIGNED_CHAR and MPI_UINT8_T one internal
 *     id (and MPI_CHAR MPI_INT8_T's): a component that maps types by id takes
 *     MPI_UNSIGNED_CHAR for MPI_BYTE and never offloads its sums.
 * (b) wraparound: every integer type x MPI_SUM/MPI_PROD x counts 1..4096 (every
 *     count for 8- and 16-bit types, a sample for wider ones) through
 *     MPI_Allreduce and MPI_Reduce (root moving), plus a sample through
 *     MPI_Iallreduce, MPI_Ireduce and persistent MPI_Allreduce_init. The result
 *     must be C's wrapped one (modulo 2^N) at every size, including the sizes the
 *     component's policy hands to the layer below. Meant to run WITHOUT
 *     "--mca op ^avx": stock op/avx saturates 8/16-bit sums (open-mpi/ompi#8045),
 *     so `--mca coll ^offload` fails this test.
 * (c) the reductions the component does not run itself: MPI_Reduce_scatter_block,
 *     MPI_Reduce_scatter, MPI_Scan, MPI_Exscan, blocking, nonblocking and
 *     persistent, with 8/16-bit SUM/PROD (must wrap) and MIN/MAX on
 *     MPI_UNSIGNED_LONG and MPI_OFFSET (values on both sides of 2^63: Open MPI
 *     4.1's own MIN/MAX get their signedness wrong), and MIN/MAX on those types
 *     through MPI_Allreduce/MPI_Reduce at sizes offloaded and handed down.
 *
 * (d) the pairs MPI leaves undefined that Open MPI computes (MPI_CHAR with every
 *     integer op, as int8_t; MPI_BYTE with every op its table has, as uint8_t; the
 *     OSU benchmarks reduce MPI_CHAR by default): MPI_Allreduce and MPI_Reduce at
 *     counts that take every path give what this Open MPI's own reduction functions
 *     give (MPI_Reduce_local over every rank's contribution in rank order; values
 *     small enough that no 8-bit sum or product overflows, since stock op/avx
 *     saturates — (b) checks the wrap), and with --expect-offload a small allreduce
 *     of each is offloaded.
 *
 * Every rank's contribution to element i is a function of (seed, type, rank, i),
 * not of the count, so the expected result of element i is computed once per
 * type and op, independently of MPI.
 *
 * Usage: t_wrap [--quick] [--blocking] [--expect-offload] [-v]
 */
#include "t_common.h"

#include "mpi_persist.h"

#define MAXCOUNT 4096

typedef struct {
    const char *name;
    MPI_Datatype dt;
    int width;   /* bytes */
} itype_t;

static int me, np;
/* --blocking: only MPI_Allreduce/MPI_Reduce. Across nodes the node-aware module
 * leaves the nonblocking and persistent slots to the layer below, so those forms
 * still reach stock op/avx there (a known gap). */
static int blocking_only;

static itype_t itypes[32];
static int n_itypes;

static void add_itype(const char *name, MPI_Datatype dt)
{
    int size;
    MPI_Type_size(dt, &size);
    itypes[n_itypes].name = name;
    itypes[n_itypes].dt = dt;
    itypes[n_itypes].width = size;
    n_itypes++;
}

#define ADD(dt) add_itype(#dt, dt)

static void list_itypes(void)
{
    ADD(MPI_INT8_T);
    ADD(MPI_UINT8_T);
    ADD(MPI_SIGNED_CHAR);
    ADD(MPI_UNSIGNED_CHAR);
    ADD(MPI_INT16_T);
    ADD(MPI_UINT16_T);
    ADD(MPI_SHORT);
    ADD(MPI_UNSIGNED_SHORT);
    ADD(MPI_INT32_T);
    ADD(MPI_UINT32_T);
    ADD(MPI_INT);
    ADD(MPI_UNSIGNED);
    ADD(MPI_INT64_T);
    ADD(MPI_UINT64_T);
    ADD(MPI_LONG);
    ADD(MPI_UNSIGNED_LONG);
    ADD(MPI_LONG_LONG);
    ADD(MPI_UNSIGNED_LONG_LONG);
    ADD(MPI_AINT);
    ADD(MPI_OFFSET);
    ADD(MPI_COUNT);
    /* Outside MPI's table, computed by Open MPI as int8_t and uint8_t: section (d) */
    ADD(MPI_CHAR);
    ADD(MPI_BYTE);
}

/* Contribution of `rank` to element i of type t (the low `width` bytes count). */
static uint64_t contrib(int t, int rank, int i, int prod)
{
    uint64_t v = t_hash3(0x7772617000ULL + (uint64_t) t * 2 + (uint64_t) prod,
                         (uint64_t) rank, (uint64_t) i);
    if (prod && 0 == (i & 3)) {
        v |= 1;   /* some odd factors, so that products are not all zero mod 2^N */
    }
    return v;
}

static void store(void *buf, int i, int width, uint64_t v)
{
    switch (width) {
    case 1: ((uint8_t *) buf)[i] = (uint8_t) v; break;
    case 2: ((uint16_t *) buf)[i] = (uint16_t) v; break;
    case 4: ((uint32_t *) buf)[i] = (uint32_t) v; break;
    default: ((uint64_t *) buf)[i] = v; break;
    }
}

static uint64_t load(const void *buf, int i, int width)
{
    switch (width) {
    case 1: return ((const uint8_t *) buf)[i];
    case 2: return ((const uint16_t *) buf)[i];
    case 4: return ((const uint32_t *) buf)[i];
    default: return ((const uint64_t *) buf)[i];
    }
}

static uint64_t mask_of(int width)
{
    return width >= 8 ? ~0ULL : (1ULL << (8 * width)) - 1;
}

/* The wrapped result of every element: unsigned 64-bit arithmetic truncated to
 * the type's width is what C gives for both signed (two's complement) and
 * unsigned N-bit integers. */
static void reference(int t, int prod, uint64_t *ref)
{
    uint64_t mask = mask_of(itypes[t].width);
    for (int i = 0; i < MAXCOUNT; i++) {
        uint64_t acc = prod ? 1 : 0;
        for (int r = 0; r < np; r++) {
            uint64_t v = contrib(t, r, i, prod) & mask;
            acc = prod ? acc * v : acc + v;
        }
        ref[i] = acc & mask;
    }
}

enum { F_ALLREDUCE, F_REDUCE, F_IALLREDUCE, F_IREDUCE, F_PERSISTENT, F_N };
static const char *form_names[F_N] = { "MPI_Allreduce", "MPI_Reduce", "MPI_Iallreduce",
                                       "MPI_Ireduce", "MPI_Allreduce_init" };

static unsigned char sbuf[MAXCOUNT * 8 + 64], rbuf[MAXCOUNT * 8 + 64];

/* One call of `form` with `count` elements; checks the result (and that the
 * receive buffer past the count is untouched). */
static void one_call(int form, int t, int prod, int count, const uint64_t *ref)
{
    itype_t *it = &itypes[t];
    MPI_Op op = prod ? MPI_PROD : MPI_SUM;
    int root = count % np;
    for (int i = 0; i < count; i++) {
        store(sbuf, i, it->width, contrib(t, me, i, prod));
    }
    memset(rbuf, 0xa5, (size_t) (count + 8) * (size_t) it->width);
    int rc = MPI_SUCCESS;
    MPI_Request req;
    switch (form) {
    case F_ALLREDUCE:
        rc = MPI_Allreduce(sbuf, rbuf, count, it->dt, op, MPI_COMM_WORLD);
        break;
    case F_REDUCE:
        rc = MPI_Reduce(sbuf, rbuf, count, it->dt, op, root, MPI_COMM_WORLD);
        break;
    case F_IALLREDUCE:
        rc = MPI_Iallreduce(sbuf, rbuf, count, it->dt, op, MPI_COMM_WORLD, &req);
        if (MPI_SUCCESS == rc) {
            rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        break;
    case F_IREDUCE:
        rc = MPI_Ireduce(sbuf, rbuf, count, it->dt, op, root, MPI_COMM_WORLD, &req);
        if (MPI_SUCCESS == rc) {
            rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        break;
    default:
        rc = MPI_Allreduce_init(sbuf, rbuf, count, it->dt, op, MPI_COMM_WORLD,
                                 MPI_INFO_NULL, &req);
        for (int k = 0; k < 2 && MPI_SUCCESS == rc; k++) {
            rc = MPI_Start(&req);
            if (MPI_SUCCESS == rc) {
                rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
        }
        if (MPI_SUCCESS == rc) {
            rc = MPI_Request_free(&req);
        }
        break;
    }
    if (!t_check(MPI_SUCCESS == rc, "%s %s %s count %d: error %d", form_names[form], it->name,
                 prod ? "PROD" : "SUM", count, rc)) {
        return;
    }
    int has_result = !(F_REDUCE == form || F_IREDUCE == form) || me == root;
    int bad = 0, first = -1;
    if (has_result) {
        for (int i = 0; i < count; i++) {
            if (load(rbuf, i, it->width) != ref[i]) {
                if (first < 0) {
                    first = i;
                }
                bad++;
            }
        }
    }
    for (int i = count * it->width; i < (count + 8) * it->width; i++) {
        bad += rbuf[i] != 0xa5;
    }
    if (first >= 0) {
        t_check(0, "%s %s %s count %d np %d: %d wrong, first [%d] = %llu, want %llu",
                form_names[form], it->name, prod ? "PROD" : "SUM", count, np, bad, first,
                (unsigned long long) load(rbuf, first, it->width),
                (unsigned long long) ref[first]);
    } else {
        t_check(0 == bad, "%s %s %s count %d: %d bytes past the count written",
                form_names[form], it->name, prod ? "PROD" : "SUM", count, bad);
    }
}

static int sampled(int count)
{
    return count <= 70 || count % 61 == 0 || count == MAXCOUNT || count == MAXCOUNT - 1;
}

static void test_wrap(void)
{
    static uint64_t ref[MAXCOUNT];
    for (int t = 0; t < n_itypes; t++) {
        for (int prod = 0; prod < 2; prod++) {
            reference(t, prod, ref);
            int narrow = itypes[t].width <= 2;
            for (int count = 1; count <= MAXCOUNT; count++) {
                int every = narrow && !t_opt.quick;
                if (!every && !sampled(count)) {
                    continue;
                }
                one_call(F_ALLREDUCE, t, prod, count, ref);
                one_call(F_REDUCE, t, prod, count, ref);
                if (narrow && !blocking_only && (count % 13 == 1 || count == MAXCOUNT)) {
                    one_call(F_IALLREDUCE, t, prod, count, ref);
                    one_call(F_IREDUCE, t, prod, count, ref);
                    one_call(F_PERSISTENT, t, prod, count, ref);
                }
            }
        }
    }
}

/* ---- (c) the reductions handed down -------------------------------------- */

enum { G_RSB, G_RS, G_SCAN, G_EXSCAN, G_ALLREDUCE, G_REDUCE, G_N };
static const char *g_names[G_N] = { "reduce_scatter_block", "reduce_scatter", "scan", "exscan",
                                    "allreduce", "reduce" };
enum { V_BLOCKING, V_NONBLOCKING, V_PERSISTENT, V_N };
static const char *v_names[V_N] = { "", "(nonblocking)", "(persistent)" };

/* Combine of two values of `width` bytes; signedness matters for MIN/MAX. */
static uint64_t combine(int opk, int width, int is_signed, uint64_t a, uint64_t b)
{
    uint64_t mask = mask_of(width);
    a &= mask;
    b &= mask;
    switch (opk) {
    case 0: return (a + b) & mask;
    case 1: return (a * b) & mask;
    default: {
        int a_lt_b;
        if (is_signed) {
            int sh = 64 - 8 * width;
            a_lt_b = (int64_t) (a << sh) < (int64_t) (b << sh);
        } else {
            a_lt_b = a < b;
        }
        return (2 == opk) == a_lt_b ? a : b;
    }
    }
}

/* Element i's contribution for (c): for MIN/MAX, values on both sides of 2^63. */
static uint64_t g_contrib(int t, int opk, int rank, int i)
{
    uint64_t v = contrib(t, rank, i, 1 == opk);
    if (opk >= 2 && (i + rank) % 3 == 0) {
        v &= 0x7fffffffffffffffULL;
    }
    return v;
}

/* One call of generalised form g (variant v) of count elements per rank
 * (reduce_scatter: count per rank's block), op kind opk (0 SUM 1 PROD 2 MIN 3 MAX). */
static void g_call(int g, int v, int t, int opk, int count)
{
    itype_t *it = &itypes[t];
    static const MPI_Op ops[4] = { MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX };
    int is_signed = it->dt == MPI_OFFSET;
    int total = (G_RSB == g || G_RS == g) ? count * np : count;
    /* reduce_scatter sends np blocks of count elements */
    static unsigned char *gs, *gr;
    if (NULL == gs) {
        gs = malloc((size_t) (MAXCOUNT + 8) * 8 * (size_t) np);
        gr = malloc((size_t) (MAXCOUNT + 8) * 8 * (size_t) np);
    }
    for (int i = 0; i < total; i++) {
        store(gs, i, it->width, g_contrib(t, opk, me, i));
    }
    int out = (G_RSB == g || G_RS == g) ? count : total;
    memset(gr, 0xa5, (size_t) (out + 8) * (size_t) it->width);
    int root = count % np;
    int rcounts[64];
    for (int r = 0; r < np && r < 64; r++) {
        rcounts[r] = count;
    }
    MPI_Request req;
    int rc = MPI_SUCCESS;
    MPI_Op o = ops[opk];
    MPI_Datatype d = it->dt;
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Info ni = MPI_INFO_NULL;
    if (V_BLOCKING == v) {
        switch (g) {
        case G_RSB: rc = MPI_Reduce_scatter_block(gs, gr, count, d, o, w); break;
        case G_RS: rc = MPI_Reduce_scatter(gs, gr, rcounts, d, o, w); break;
        case G_SCAN: rc = MPI_Scan(gs, gr, count, d, o, w); break;
        case G_EXSCAN: rc = MPI_Exscan(gs, gr, count, d, o, w); break;
        case G_ALLREDUCE: rc = MPI_Allreduce(gs, gr, count, d, o, w); break;
        default: rc = MPI_Reduce(gs, gr, count, d, o, root, w); break;
        }
    } else {
        if (V_NONBLOCKING == v) {
            switch (g) {
            case G_RSB: rc = MPI_Ireduce_scatter_block(gs, gr, count, d, o, w, &req); break;
            case G_RS: rc = MPI_Ireduce_scatter(gs, gr, rcounts, d, o, w, &req); break;
            case G_SCAN: rc = MPI_Iscan(gs, gr, count, d, o, w, &req); break;
            default: rc = MPI_Iexscan(gs, gr, count, d, o, w, &req); break;
            }
        } else {
            switch (g) {
            case G_RSB: rc = MPI_Reduce_scatter_block_init(gs, gr, count, d, o, w, ni, &req); break;
            case G_RS: rc = MPI_Reduce_scatter_init(gs, gr, rcounts, d, o, w, ni, &req); break;
            case G_SCAN: rc = MPI_Scan_init(gs, gr, count, d, o, w, ni, &req); break;
            default: rc = MPI_Exscan_init(gs, gr, count, d, o, w, ni, &req); break;
            }
            if (MPI_SUCCESS == rc) {
                rc = MPI_Start(&req);
            }
        }
        if (MPI_SUCCESS == rc) {
            rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        if (MPI_SUCCESS == rc && V_PERSISTENT == v) {
            rc = MPI_Request_free(&req);
        }
    }
    const char *opn[4] = { "SUM", "PROD", "MIN", "MAX" };
    if (!t_check(MPI_SUCCESS == rc, "%s%s %s %s count %d: error %d", g_names[g], v_names[v],
                 it->name, opn[opk], count, rc)) {
        return;
    }
    /* Which ranks' contributions make my result, and from which element on. */
    int lo = 0, hi = np - 1, base = 0, has = 1;
    switch (g) {
    case G_RSB: case G_RS: base = me * count; break;
    case G_SCAN: hi = me; break;
    case G_EXSCAN: hi = me - 1; has = me > 0; break;
    case G_REDUCE: has = me == root; break;
    default: break;
    }
    int bad = 0, first = -1;
    uint64_t want_first = 0;
    for (int i = 0; has && i < out; i++) {
        uint64_t acc = g_contrib(t, opk, lo, base + i);
        for (int r = lo + 1; r <= hi; r++) {
            acc = combine(opk, it->width, is_signed, acc, g_contrib(t, opk, r, base + i));
        }
        acc &= mask_of(it->width);
        if (load(gr, i, it->width) != acc) {
            if (first < 0) {
                first = i;
                want_first = acc;
            }
            bad++;
        }
    }
    if (has || G_EXSCAN != g) {
        for (int i = out * it->width; i < (out + 8) * it->width && G_REDUCE != g; i++) {
            bad += gr[i] != 0xa5;
        }
    }
    t_check(0 == bad, "%s%s %s %s count %d np %d: %d wrong%s, first [%d] = %llu, want %llu",
            g_names[g], v_names[v], it->name, opn[opk], count, np, bad,
            first < 0 ? " (bytes past the result)" : "", first,
            first < 0 ? 0ULL : (unsigned long long) load(gr, first, it->width),
            (unsigned long long) want_first);
}

static void test_handed_down(void)
{
    static const int counts[] = { 1, 7, 64, 1000, 4096 };
    for (int t = 0; t < n_itypes; t++) {
        itype_t *it = &itypes[t];
        int narrow = it->width <= 2;
        int minmax = it->dt == MPI_UNSIGNED_LONG || it->dt == MPI_OFFSET;
        if (!narrow && !minmax) {
            continue;
        }
        for (int opk = narrow ? 0 : 2; opk < (narrow ? 2 : 4); opk++) {
            for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
                int count = counts[ci];
                if (t_opt.quick && 0 != ci % 2) {
                    continue;
                }
                for (int g = 0; g < G_N; g++) {
                    if ((G_ALLREDUCE == g || G_REDUCE == g) && !minmax) {
                        continue;   /* (b) covers them */
                    }
                    g_call(g, V_BLOCKING, t, opk, count);
                    if (!blocking_only && g < G_ALLREDUCE && 1 == count % 2) {
                        g_call(g, V_NONBLOCKING, t, opk, count);
                        g_call(g, V_PERSISTENT, t, opk, count);
                    }
                }
            }
        }
    }
}

/* ---- (a) identity ---------------------------------------------------------- */

static t_pvar_t pv[1] = { { .name = "coll_offload_allreduce_offloaded" } };

typedef struct {
    const char *name;
    MPI_Datatype dt;
    MPI_Op op;
    int kind;   /* 0 integer, 1 floating, 2 logical (C _Bool), 3 complex, 4 pair, 5 byte */
} idcase_t;

static void fill_and_check(const idcase_t *c)
{
    /* 8 elements: every type is within the board's 224 bytes */
    enum { N = 8 };
    unsigned char in[N * 32], out[N * 32];
    int size;
    MPI_Type_size(c->dt, &size);
    MPI_Aint lb, extent;
    MPI_Type_get_extent(c->dt, &lb, &extent);
    memset(in, 0, sizeof(in));
    memset(out, 0x5a, sizeof(out));
    for (int i = 0; i < N; i++) {
        unsigned char *e = in + (size_t) i * (size_t) extent;
        switch (c->kind) {
        case 0: case 5: store(e, 0, size, (uint64_t) (200 + me * 3 + i)); break;
        case 1:
            if (sizeof(float) == (size_t) size) {
                *(float *) e = (float) (me + i);
            } else if (sizeof(double) == (size_t) size) {
                *(double *) e = (double) (me + i);
            } else {
                *(long double *) e = (long double) (me + i);
            }
            break;
        case 2: *(_Bool *) e = (me + i) % 2; break;
        case 3:
            if (2 * sizeof(float) == (size_t) size) {
                ((float *) e)[0] = (float) me;
                ((float *) e)[1] = (float) i;
            } else {
                ((double *) e)[0] = (double) me;
                ((double *) e)[1] = (double) i;
            }
            break;
        default:
            /* value first, int index after it; value = (rank + i) % np, index rank */
            if (MPI_2INT == c->dt) {
                ((int *) e)[0] = (me + i) % np;
                ((int *) e)[1] = me;
            } else if (MPI_SHORT_INT == c->dt) {
                *(short *) e = (short) ((me + i) % np);
                *(int *) (e + extent - (MPI_Aint) sizeof(int)) = me;
            } else if (MPI_LONG_INT == c->dt) {
                *(long *) e = (me + i) % np;
                *(int *) (e + sizeof(long)) = me;
            } else if (MPI_FLOAT_INT == c->dt) {
                *(float *) e = (float) ((me + i) % np);
                *(int *) (e + sizeof(float)) = me;
            } else if (MPI_DOUBLE_INT == c->dt) {
                *(double *) e = (double) ((me + i) % np);
                *(int *) (e + sizeof(double)) = me;
            } else {
                *(long double *) e = (long double) ((me + i) % np);
                *(int *) (e + sizeof(long double)) = me;
            }
            break;
        }
    }
    unsigned long long before = 0, after = 0;
    t_pvar_read(&pv[0], &before);
    int rc = MPI_Allreduce(in, out, N, c->dt, c->op, MPI_COMM_WORLD);
    t_pvar_read(&pv[0], &after);
    if (!t_check(MPI_SUCCESS == rc, "identity %s: error %d", c->name, rc)) {
        return;
    }
    if (t_opt.expect_offload && np > 1 && pv[0].found) {
        t_check(after == before + 1, "identity %s: a small allreduce was not offloaded", c->name);
    }
    /* Independent answer for element i. */
    int bad = 0;
    for (int i = 0; i < N; i++) {
        const unsigned char *e = out + (size_t) i * (size_t) extent;
        switch (c->kind) {
        case 0: {
            uint64_t want = 0;
            for (int r = 0; r < np; r++) {
                want += (uint64_t) (200 + r * 3 + i);
            }
            bad += load(e, 0, size) != (want & mask_of(size));
            break;
        }
        case 5: {
            uint64_t want = 0;
            for (int r = 0; r < np; r++) {
                want ^= (uint64_t) (200 + r * 3 + i) & 0xff;
            }
            bad += load(e, 0, 1) != want;
            break;
        }
        case 1: {
            long double want = 0;
            for (int r = 0; r < np; r++) {
                want += (long double) (r + i);
            }
            long double got = sizeof(float) == (size_t) size    ? *(const float *) e
                              : sizeof(double) == (size_t) size ? *(const double *) e
                                                                 : *(const long double *) e;
            bad += got != want;
            break;
        }
        case 2: {
            int want = 0;
            for (int r = 0; r < np; r++) {
                want |= (r + i) % 2;
            }
            bad += *(const _Bool *) e != (_Bool) want;
            break;
        }
        case 3: {
            double re = 0, im = 0;
            for (int r = 0; r < np; r++) {
                re += r;
                im += i;
            }
            if (2 * sizeof(float) == (size_t) size) {
                bad += ((const float *) e)[0] != (float) re || ((const float *) e)[1] != (float) im;
            } else {
                bad += ((const double *) e)[0] != re || ((const double *) e)[1] != im;
            }
            break;
        }
        default: {
            /* MAXLOC: largest value (np - 1), smallest rank holding it */
            int want_idx = ((np - 1) - i % np + np) % np;
            int got_idx = *(const int *) (e + extent - (MPI_Aint) sizeof(int));
            if (MPI_LONG_INT == c->dt) {
                got_idx = *(const int *) (e + sizeof(long));
            } else if (MPI_FLOAT_INT == c->dt) {
                got_idx = *(const int *) (e + sizeof(float));
            } else if (MPI_DOUBLE_INT == c->dt) {
                got_idx = *(const int *) (e + sizeof(double));
            } else if (MPI_LONG_DOUBLE_INT == c->dt) {
                got_idx = *(const int *) (e + sizeof(long double));
            } else if (MPI_2INT == c->dt) {
                got_idx = ((const int *) e)[1];
            }
            bad += got_idx != want_idx;
            break;
        }
        }
    }
    t_check(0 == bad, "identity %s: %d of %d elements wrong", c->name, bad, N);
}

/* (d): MPI_CHAR and MPI_BYTE with every op this Open MPI computes on them, against
 * its own reduction functions. */
static void test_stock_pairs(void)
{
    static const struct {
        const char *name;
        MPI_Op op;
    } ops[] = { { "MPI_SUM", MPI_SUM },   { "MPI_PROD", MPI_PROD }, { "MPI_MIN", MPI_MIN },
                { "MPI_MAX", MPI_MAX },   { "MPI_LAND", MPI_LAND }, { "MPI_LOR", MPI_LOR },
                { "MPI_LXOR", MPI_LXOR }, { "MPI_BAND", MPI_BAND }, { "MPI_BOR", MPI_BOR },
                { "MPI_BXOR", MPI_BXOR } };
    static const struct {
        const char *name;
        MPI_Datatype dt;
    } types[] = { { "MPI_CHAR", MPI_CHAR }, { "MPI_BYTE", MPI_BYTE } };
    static const int counts[] = { 8, 200, 3000, 70000 };
    enum { MAXN = 70000 };
    signed char *mine = malloc(MAXN), *all = malloc((size_t) MAXN * (size_t) np);
    signed char *want = malloc(MAXN), *got = malloc(MAXN);
    if (!t_check(NULL != mine && NULL != all && NULL != want && NULL != got, "(d): no memory")) {
        free(mine), free(all), free(want), free(got);
        return;
    }
    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); ++t) {
        for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); ++o) {
            /* Whether this Open MPI computes the pair at all: ask its own functions. */
            signed char one = 1, acc = 1;
            if (MPI_SUCCESS != MPI_Reduce_local(&one, &acc, 1, types[t].dt, ops[o].op)) {
                t_skip("(d) %s/%s: this Open MPI does not compute it", types[t].name,
                       ops[o].name);
                continue;
            }
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); ++c) {
                int n = counts[c];
                int prod = MPI_PROD == ops[o].op;
                for (int i = 0; i < n; ++i) {
                    /* sums of np values in [-8, 7] and products of np values in {-2..2}
                     * stay inside int8_t (np <= 4) and uint8_t where it matters */
                    uint64_t h = t_hash3(0x64ULL + o * 16 + t, (uint64_t) me, (uint64_t) i);
                    int v = prod ? (int) (h % 5) - 2 : (int) (h % 16) - 8;
                    if (MPI_BYTE == types[t].dt && !prod) {
                        v = (int) (h % (np > 4 ? 16 : 60));   /* unsigned, sums < 256 */
                    } else if (MPI_BYTE == types[t].dt) {
                        v = (int) (h % 4);                     /* 3^4 = 81 */
                    }
                    mine[i] = (signed char) v;
                }
                MPI_Allgather(mine, n, MPI_BYTE, all, n, MPI_BYTE, MPI_COMM_WORLD);
                memcpy(want, all, (size_t) n);
                for (int r = 1; r < np; ++r) {
                    /* inout = in op inout: fold rank r onto ranks 0..r-1, like MPI's order */
                    memcpy(got, all + (size_t) r * (size_t) n, (size_t) n);
                    MPI_Reduce_local(want, got, n, types[t].dt, ops[o].op);
                    memcpy(want, got, (size_t) n);
                }
                unsigned long long before = 0, after = 0;
                t_pvar_read(&pv[0], &before);
                memset(got, 0x5a, (size_t) n);
                int rc = MPI_Allreduce(mine, got, n, types[t].dt, ops[o].op, MPI_COMM_WORLD);
                t_pvar_read(&pv[0], &after);
                int bad = 0;
                for (int i = 0; i < n && MPI_SUCCESS == rc; ++i) {
                    bad += got[i] != want[i];
                }
                t_check(MPI_SUCCESS == rc && 0 == bad,
                        "(d) MPI_Allreduce %s/%s count %d: rc %d, %d elements differ from "
                        "this Open MPI's own reduction", types[t].name, ops[o].name, n, rc, bad);
                if (t_opt.expect_offload && np > 1 && pv[0].found && 8 == n) {
                    t_check(after == before + 1, "(d) %s/%s: a small allreduce was not offloaded",
                            types[t].name, ops[o].name);
                }
                int root = (int) (c % (size_t) np);
                memset(got, 0x5a, (size_t) n);
                rc = MPI_Reduce(mine, got, n, types[t].dt, ops[o].op, root, MPI_COMM_WORLD);
                bad = 0;
                for (int i = 0; i < n && MPI_SUCCESS == rc && me == root; ++i) {
                    bad += got[i] != want[i];
                }
                t_check(MPI_SUCCESS == rc && 0 == bad,
                        "(d) MPI_Reduce %s/%s count %d root %d: rc %d, %d elements differ",
                        types[t].name, ops[o].name, n, root, rc, bad);
            }
        }
    }
    free(mine);
    free(all);
    free(want);
    free(got);
}

#define IDC(dt, op, kind) { #dt "/" #op, dt, op, kind }

static void test_identity(void)
{
    const idcase_t cases[] = {
        IDC(MPI_INT8_T, MPI_SUM, 0), IDC(MPI_UINT8_T, MPI_SUM, 0),
        IDC(MPI_SIGNED_CHAR, MPI_SUM, 0), IDC(MPI_UNSIGNED_CHAR, MPI_SUM, 0),
        IDC(MPI_INT16_T, MPI_SUM, 0), IDC(MPI_UINT16_T, MPI_SUM, 0),
        IDC(MPI_SHORT, MPI_SUM, 0), IDC(MPI_UNSIGNED_SHORT, MPI_SUM, 0),
        IDC(MPI_INT32_T, MPI_SUM, 0), IDC(MPI_UINT32_T, MPI_SUM, 0),
        IDC(MPI_INT, MPI_SUM, 0), IDC(MPI_UNSIGNED, MPI_SUM, 0),
        IDC(MPI_INT64_T, MPI_SUM, 0), IDC(MPI_UINT64_T, MPI_SUM, 0),
        IDC(MPI_LONG, MPI_SUM, 0), IDC(MPI_UNSIGNED_LONG, MPI_SUM, 0),
        IDC(MPI_LONG_LONG, MPI_SUM, 0), IDC(MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0),
        IDC(MPI_AINT, MPI_SUM, 0), IDC(MPI_OFFSET, MPI_SUM, 0), IDC(MPI_COUNT, MPI_SUM, 0),
        IDC(MPI_FLOAT, MPI_SUM, 1), IDC(MPI_DOUBLE, MPI_SUM, 1),
        IDC(MPI_LONG_DOUBLE, MPI_SUM, 1), IDC(MPI_C_BOOL, MPI_LOR, 2),
        IDC(MPI_C_FLOAT_COMPLEX, MPI_SUM, 3), IDC(MPI_C_DOUBLE_COMPLEX, MPI_SUM, 3),
        IDC(MPI_2INT, MPI_MAXLOC, 4), IDC(MPI_SHORT_INT, MPI_MAXLOC, 4),
        IDC(MPI_LONG_INT, MPI_MAXLOC, 4), IDC(MPI_FLOAT_INT, MPI_MAXLOC, 4),
        IDC(MPI_DOUBLE_INT, MPI_MAXLOC, 4), IDC(MPI_LONG_DOUBLE_INT, MPI_MAXLOC, 4),
        IDC(MPI_BYTE, MPI_BXOR, 5),
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        fill_and_check(&cases[k]);
    }
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--blocking")) {
            blocking_only = 1;
            for (int j = i; j + 1 < argc; j++) {
                argv[j] = argv[j + 1];
            }
            argc--;
            i--;
        }
    }
    t_init(&argc, &argv, "t_wrap");
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    list_itypes();
    if (t_opt.expect_offload) {
        t_pvars_open(pv, 1);
        t_check(pv[0].found, "performance variable %s not found", pv[0].name);
    }
    t_note("t_wrap: %d ranks, %d integer types, counts 1..%d%s\n", np, n_itypes, MAXCOUNT,
           t_opt.quick ? " (sampled)" : " (every count for 8/16-bit types)");
    t_section_begin("(a) identity of predefined datatypes");
    test_identity();
    t_section_end();
    t_section_begin("(b) integer SUM/PROD wrap at every size");
    test_wrap();
    t_section_end();
    t_section_begin("(c) the reductions handed down");
    test_handed_down();
    t_section_end();
    t_section_begin("(d) MPI_CHAR and MPI_BYTE as this Open MPI computes them");
    test_stock_pairs();
    t_section_end();
    if (t_opt.expect_offload) {
        t_pvars_close(pv, 1);
    }
    return t_finish();
}
