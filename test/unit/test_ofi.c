/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Unit test of the libfabric NIC backend (src/nic/ofi.c) without MPI: several
 * "ranks" in one process, each with its own endpoint (provider sockets, over
 * this host's loopback or first interface), connected by exchanging address
 * blobs in memory; the real engine runs compiled programs on them, one thread
 * stepping every rank's instance in turn.
 *
 *   counters   a DATA bump moves the outbox bytes into the peer's inbox slot
 *              and its counter says so; a CREDIT bump reaches the feeder only;
 *   allreduce  tree, exchange and split programs, 2-5 ranks, counts from 0 to
 *              several segments, int64 sums checked against sums computed here,
 *              many calls back to back (sequence numbers across calls, slot
 *              reuse under credits);
 *   barrier    and bcast from every root;
 *   automatic  no provider named: one that leaves the node, with triggered
 *              atomics (sockets here);
 *   neighbours NICs made for their tree programs' peers only hold streams for
 *              those (a leaf fewer than one per rank) and still run the tree
 *              allreduce right; a neighbour set that leaves this rank out is
 *              refused at connect;
 *   native     allreduces posted whole as triggered atomics (2 and 4 ranks,
 *              one thread each): sums, products, min/max, bitwise ops over
 *              integer and float types, 1 to 4096 bytes, dozens of calls
 *              back to back with the op and size changing every call; integer
 *              results against sums computed here, float results bit for bit
 *              the same on every rank and close to the exact sum, a negative
 *              zero kept; barriers that no rank leaves before every rank has
 *              entered; what may not run natively is refused (3 ranks, float
 *              MIN, MINLOC, too many bytes).
 * When the provider is missing (no libfabric sockets provider), the test says
 * so and exits 77 (skipped).
 */
#include "clocks.h"
#include "engine/engine.h"
#include "nic/ofi.h"
#include "sched/sched.h"
#include "unit.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXR 5

static ofl_ofi_t *nics[MAXR];

/* Open n NICs; peers[r] (npeers[r] ranks) are rank r's neighbours (NULL: all). */
static int open_some(int n, size_t slot_bytes, int slots, int (*peers)[MAXR], const int *npeers)
{
    char why[256];
    size_t bb = ofl_ofi_blob_bytes(n);
    char *blobs = calloc((size_t) n, bb);
    for (int r = 0; r < n; ++r) {
        nics[r] = ofl_ofi_open(r, n, NULL != peers ? peers[r] : NULL,
                               NULL != npeers ? npeers[r] : 0, slots, slot_bytes, "sockets", NULL,
                               why, sizeof(why));
        if (NULL == nics[r]) {
            printf("test_ofi: cannot open a sockets endpoint (%s)\n", why);
            free(blobs);
            return -1;
        }
        ofl_ofi_address(nics[r], blobs + (size_t) r * bb);
    }
    for (int r = 0; r < n; ++r) {
        int rc = ofl_ofi_connect(nics[r], blobs, why, sizeof(why));
        CHECK(0 == rc, "connect rank %d: %s", r, why);
    }
    free(blobs);
    return 0;
}

static int open_all(int n, size_t slot_bytes, int slots)
{
    return open_some(n, slot_bytes, slots, NULL, NULL);
}

static void close_all(int n)
{
    for (int r = 0; r < n; ++r) {
        ofl_ofi_close(nics[r]);
        nics[r] = NULL;
    }
}

/* Step every rank's instance until all are done (or 10 s pass). */
static int run_all(ofl_inst_t *inst, int n)
{
    double t0 = now_s();
    int done[MAXR] = { 0 }, left = n;
    while (left > 0) {
        for (int r = 0; r < n; ++r) {
            if (!done[r]) {
                int rc = ofl_engine_progress(&inst[r]);
                if (rc < 0) {
                    return -1;
                }
                if (rc > 0) {
                    done[r] = 1;
                    left--;
                }
            }
        }
        if (now_s() - t0 > 10.0) {
            return 0;
        }
    }
    return 1;
}

static void test_counters(void)
{
    if (0 != open_all(2, 4096, 4)) {
        exit(77);
    }
    ofl_nic_t *a = ofl_ofi_nic(nics[0]), *b = ofl_ofi_nic(nics[1]);
    memcpy(a->ops->outbox(a, 1, 0, 0), "hello, peer", 12);
    a->ops->bump(a, OFL_CNT_DATA, 1, 0, 0, 12);
    double t0 = now_s();
    while (!b->ops->reached(b, OFL_CNT_DATA, 0, 0, 1) && now_s() - t0 < 5.0) {
    }
    CHECK(b->ops->reached(b, OFL_CNT_DATA, 0, 0, 1), "DATA item 0 arrived");
    CHECK(0 == memcmp(b->ops->inbox(b, 0, 0, 0), "hello, peer", 12), "payload in the inbox");
    CHECK(!b->ops->reached(b, OFL_CNT_DATA, 0, 1, 1), "other channel untouched");
    CHECK(!b->ops->reached(b, OFL_CNT_DATA, 0, 0, 2), "not beyond what was sent");
    b->ops->bump(b, OFL_CNT_CREDIT, 0, 0, 0, 0);
    t0 = now_s();
    while (!a->ops->reached(a, OFL_CNT_CREDIT, 1, 0, 1) && now_s() - t0 < 5.0) {
    }
    CHECK(a->ops->reached(a, OFL_CNT_CREDIT, 1, 0, 1), "CREDIT reached the feeder");
    CHECK(1 == a->ops->counter(a, OFL_CNT_CREDIT, 1, 0), "credit value 1 (%llu)",
          (unsigned long long) a->ops->counter(a, OFL_CNT_CREDIT, 1, 0));
    uint64_t w, by;
    ofl_ofi_stats(nics[0], &w, &by);
    CHECK(1 == w && 12 == by, "stats: %llu writes, %llu bytes", (unsigned long long) w,
          (unsigned long long) by);
    close_all(2);
}

static void test_allreduce(int n, ofl_sched_shape_t shape, size_t count, int calls)
{
    if (0 != open_all(n, 1024, 4)) {
        exit(77);
    }
    ofl_sched_params_t sp = { .reduce_kind = OFL_TREE_KNOMIAL, .reduce_radix = 2,
                              .bcast_kind = OFL_TREE_KNOMIAL, .bcast_radix = 2, .slots = 4,
                              .shape = shape };
    ofl_program_t prog[MAXR];
    ofl_edges_t edges[MAXR];
    ofl_inst_t inst[MAXR];
    int64_t *send[MAXR], *recv[MAXR];
    for (int r = 0; r < n; ++r) {
        CHECK(0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, r, n, &sp, &prog[r]), "compile");
        CHECK(0 == ofl_edges_init(&edges[r], n), "edges");
        send[r] = malloc(sizeof(int64_t) * (count + 1));
        recv[r] = malloc(sizeof(int64_t) * (count + 1));
    }
    ofl_alu_fn sum = ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT64);
    int bad = 0;
    for (int call = 0; call < calls && !bad; ++call) {
        for (int r = 0; r < n; ++r) {
            for (size_t i = 0; i < count; ++i) {
                send[r][i] = (int64_t) (r + 1) * 1000003 + (int64_t) i * 7 + call;
                recv[r][i] = -1;
            }
            ofl_call_t c = { send[r], recv[r], sum, sizeof(int64_t), count, 0, 0 };
            ofl_engine_post(&inst[r], &prog[r], ofl_ofi_nic(nics[r]), &edges[r], &c);
        }
        int rc = run_all(inst, n);
        CHECK(1 == rc, "allreduce n=%d shape=%d count=%zu call %d completed (rc %d)", n, shape,
              count, call, rc);
        if (1 != rc) {
            bad = 1;
            break;
        }
        for (int r = 0; r < n && !bad; ++r) {
            for (size_t i = 0; i < count; ++i) {
                int64_t want = 0;
                for (int q = 0; q < n; ++q) {
                    want += (int64_t) (q + 1) * 1000003 + (int64_t) i * 7 + call;
                }
                if (recv[r][i] != want) {
                    CHECK(0, "allreduce n=%d shape=%d count=%zu call %d rank %d [%zu]: %lld, "
                             "want %lld", n, shape, count, call, r, i,
                          (long long) recv[r][i], (long long) want);
                    bad = 1;
                    break;
                }
            }
        }
    }
    CHECK(!bad, "allreduce n=%d shape=%d count=%zu: %d calls right", n, shape, count, calls);
    for (int r = 0; r < n; ++r) {
        ofl_program_free(&prog[r]);
        ofl_edges_fini(&edges[r]);
        free(send[r]);
        free(recv[r]);
    }
    close_all(n);
}

/* NICs made for their programs' peers only: a rank holds streams for its
 * neighbours in the tree (not for every rank), and the tree allreduce still
 * runs right; a rank left out of a neighbour's set is refused at connect. */
static void test_neighbours(void)
{
    enum { N = 5 };
    ofl_sched_params_t sp = { .reduce_kind = OFL_TREE_KARY, .reduce_radix = 2,
                              .bcast_kind = OFL_TREE_KARY, .bcast_radix = 2, .slots = 4,
                              .shape = OFL_SCHED_TREE };
    ofl_program_t prog[N];
    int peers[MAXR][MAXR], npeers[MAXR];
    for (int r = 0; r < N; ++r) {
        CHECK(0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, r, N, &sp, &prog[r]), "compile");
        npeers[r] = prog[r].npeers;
        for (int i = 0; i < prog[r].npeers; ++i) {
            peers[r][i] = prog[r].peers[i];
        }
    }
    if (0 != open_some(N, 1024, 4, peers, npeers)) {
        exit(77);
    }
    for (int r = 0; r < N; ++r) {
        CHECK(ofl_ofi_streams(nics[r]) == (size_t) npeers[r] * OFL_CHANNELS,
              "rank %d: %zu streams for %d tree neighbours", r, ofl_ofi_streams(nics[r]),
              npeers[r]);
    }
    CHECK(ofl_ofi_streams(nics[4]) < (size_t) (N - 1) * OFL_CHANNELS,
          "a leaf holds fewer streams than a rank per peer would");
    ofl_edges_t edges[N];
    ofl_inst_t inst[N];
    int64_t send[N][300], recv[N][300];
    ofl_alu_fn sum = ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT64);
    int bad = 0;
    for (int r = 0; r < N; ++r) {
        CHECK(0 == ofl_edges_init(&edges[r], N), "edges");
    }
    for (int call = 0; call < 10 && !bad; ++call) {
        for (int r = 0; r < N; ++r) {
            for (int i = 0; i < 300; ++i) {
                send[r][i] = (int64_t) r * 1000 + i + call;
            }
            ofl_call_t c = { send[r], recv[r], sum, sizeof(int64_t), 300, 0, 0 };
            ofl_engine_post(&inst[r], &prog[r], ofl_ofi_nic(nics[r]), &edges[r], &c);
        }
        bad = 1 != run_all(inst, N);
        for (int r = 0; r < N && !bad; ++r) {
            for (int i = 0; i < 300; ++i) {
                int64_t want = (int64_t) (0 + 1000 + 2000 + 3000 + 4000) + 5 * (i + call);
                bad |= recv[r][i] != want;
            }
        }
    }
    CHECK(!bad, "tree allreduce over neighbour-only NICs: 10 calls right");
    for (int r = 0; r < N; ++r) {
        ofl_edges_fini(&edges[r]);
        ofl_program_free(&prog[r]);
    }
    close_all(N);

    /* Rank 1 forgets rank 0: rank 0 cannot connect to it (3 ranks: no native
     * partners added). */
    int p2[MAXR][MAXR] = { { 1 }, { 2 }, { 1 } }, n2[MAXR] = { 1, 1, 1 };
    char why[256] = "";
    size_t bb = ofl_ofi_blob_bytes(3);
    char *blobs = calloc(3, bb);
    for (int r = 0; r < 3; ++r) {
        nics[r] = ofl_ofi_open(r, 3, p2[r], n2[r], 4, 1024, "sockets", NULL, why, sizeof(why));
        CHECK(NULL != nics[r], "open %d", r);
        ofl_ofi_address(nics[r], blobs + (size_t) r * bb);
    }
    int rc = ofl_ofi_connect(nics[0], blobs, why, sizeof(why));
    CHECK(0 != rc && NULL != strstr(why, "neighbours"), "asymmetric neighbours refused (%s)",
          why);
    free(blobs);
    close_all(3);
}

/* No provider named: the automatic choice is one that reaches other nodes,
 * and one with triggered atomics when there is such (sockets here). */
static void test_automatic(void)
{
    char why[256] = "";
    ofl_ofi_t *a = ofl_ofi_open(0, 2, NULL, 0, 4, 1024, NULL, NULL, why, sizeof(why));
    ofl_ofi_t *b = ofl_ofi_open(1, 2, NULL, 0, 4, 1024, "", NULL, why, sizeof(why));
    CHECK(NULL != a && NULL != b, "automatic provider opens (%s)", why);
    if (NULL == a || NULL == b) {
        ofl_ofi_close(a);
        ofl_ofi_close(b);
        return;
    }
    const char *p = ofl_ofi_provider(a);
    CHECK(0 != strcmp(p, "shm") && 0 != strcmp(p, "sm2"), "automatic: not node-local (%s)", p);
    size_t bb = ofl_ofi_blob_bytes(2);
    char *blobs = calloc(2, bb);
    ofl_ofi_address(a, blobs);
    ofl_ofi_address(b, blobs + bb);
    CHECK(0 == ofl_ofi_connect(a, blobs, why, sizeof(why))
              && 0 == ofl_ofi_connect(b, blobs, why, sizeof(why)),
          "automatic: connect (%s)", why);
    CHECK(ofl_ofi_native(a), "automatic: %s, with triggered atomics", p);
    free(blobs);
    ofl_ofi_close(a);
    ofl_ofi_close(b);
}

static void test_bcast_barrier(int n)
{
    if (0 != open_all(n, 512, 2)) {
        exit(77);
    }
    ofl_sched_params_t sp = { .reduce_kind = OFL_TREE_KNOMIAL, .reduce_radix = 2,
                              .bcast_kind = OFL_TREE_KARY, .bcast_radix = 2, .slots = 2 };
    ofl_program_t prog[MAXR];
    ofl_edges_t edges[MAXR];
    ofl_inst_t inst[MAXR];
    unsigned char buf[MAXR][3000];
    for (int r = 0; r < n; ++r) {
        CHECK(0 == ofl_edges_init(&edges[r], n), "edges");
    }
    for (int root = 0; root < n; ++root) {
        for (int r = 0; r < n; ++r) {
            CHECK(0 == ofl_sched_compile(OFL_COLL_BCAST, root, r, n, &sp, &prog[r]), "compile");
            for (int i = 0; i < 3000; ++i) {
                buf[r][i] = r == root ? (unsigned char) (i * 13 + root) : 0;
            }
            ofl_call_t c = { buf[r], buf[r], NULL, 1, 3000, 0, 0 };
            ofl_engine_post(&inst[r], &prog[r], ofl_ofi_nic(nics[r]), &edges[r], &c);
        }
        CHECK(1 == run_all(inst, n), "bcast n=%d root %d completed", n, root);
        int ok = 1;
        for (int r = 0; r < n; ++r) {
            for (int i = 0; i < 3000 && ok; ++i) {
                ok = buf[r][i] == (unsigned char) (i * 13 + root);
            }
            ofl_program_free(&prog[r]);
        }
        CHECK(ok, "bcast n=%d root %d: every rank has the root's bytes", n, root);
    }
    for (int r = 0; r < n; ++r) {
        CHECK(0 == ofl_sched_compile(OFL_COLL_BARRIER, 0, r, n, &sp, &prog[r]), "compile");
    }
    for (int k = 0; k < 20; ++k) {
        for (int r = 0; r < n; ++r) {
            ofl_call_t c = { NULL, NULL, NULL, 1, 0, 0, 0 };
            ofl_engine_post(&inst[r], &prog[r], ofl_ofi_nic(nics[r]), &edges[r], &c);
        }
        CHECK(1 == run_all(inst, n), "barrier n=%d #%d completed", n, k);
    }
    for (int r = 0; r < n; ++r) {
        ofl_program_free(&prog[r]);
        ofl_edges_fini(&edges[r]);
    }
    close_all(n);
}

/* ---- native triggered collectives -------------------------------------------- */

typedef struct {
    ofl_op_t op;
    ofl_type_t type;
} nat_case_t;

static const nat_case_t nat_cases[] = {
    { OFL_OP_SUM, OFL_T_INT64 },  { OFL_OP_SUM, OFL_T_DOUBLE }, { OFL_OP_PROD, OFL_T_INT32 },
    { OFL_OP_MIN, OFL_T_INT32 },  { OFL_OP_MAX, OFL_T_UINT16 }, { OFL_OP_BXOR, OFL_T_UINT8 },
    { OFL_OP_SUM, OFL_T_FLOAT },  { OFL_OP_BAND, OFL_T_UINT64 }, { OFL_OP_MAX, OFL_T_INT8 },
    { OFL_OP_BOR, OFL_T_INT16 },  { OFL_OP_SUM, OFL_T_UINT32 },
};
#define NAT_NCASES (sizeof(nat_cases) / sizeof(nat_cases[0]))
#define NAT_CALLS 60   /* 55 (op, type, size) combinations and then some */
#define NAT_BARRIERS 10

/* Element i of rank r's input in call k, as a 64-bit value (cast per type). */
static int64_t nat_in(int r, int k, size_t i)
{
    uint64_t x = (uint64_t) (r + 1) * 0x9e3779b97f4a7c15ULL + (uint64_t) k * 1000003ULL
                 + (uint64_t) i * 7919ULL;
    return (int64_t) (x ^ (x >> 29));
}

static size_t nat_count(int k, ofl_type_t t)
{
    size_t max = OFL_OFI_NATIVE_MAX_BYTES / ofl_type_size(t);
    size_t sizes[] = { 1, 3, 17, 100, max };
    return sizes[k % 5] < max ? sizes[k % 5] : max;
}

static void nat_put(ofl_type_t t, void *buf, size_t i, int64_t v, ofl_op_t op)
{
    switch (t) {
    case OFL_T_INT8: ((int8_t *) buf)[i] = (int8_t) v; break;
    case OFL_T_UINT8: ((uint8_t *) buf)[i] = (uint8_t) v; break;
    case OFL_T_INT16: ((int16_t *) buf)[i] = (int16_t) v; break;
    case OFL_T_UINT16: ((uint16_t *) buf)[i] = (uint16_t) v; break;
    case OFL_T_INT32:
        /* products of small factors stay exact and away from overflow */
        ((int32_t *) buf)[i] = OFL_OP_PROD == op ? (int32_t) (v & 3) - 1 : (int32_t) v;
        break;
    case OFL_T_UINT32: ((uint32_t *) buf)[i] = (uint32_t) v; break;
    case OFL_T_INT64: ((int64_t *) buf)[i] = v; break;
    case OFL_T_UINT64: ((uint64_t *) buf)[i] = (uint64_t) v; break;
    case OFL_T_FLOAT: ((float *) buf)[i] = (float) (v % 100000) / 7.0f; break;
    case OFL_T_DOUBLE: ((double *) buf)[i] = (double) (v % 1000000) / 3.0; break;
    default: break;
    }
}

typedef struct {
    int rank, n;
    int failed_call;        /* -1: every call returned 0 */
    int rc;
    unsigned char *out;     /* [NAT_CALLS][4096] results */
    int barrier_early;      /* a barrier left before every rank entered */
    int neg_zero;           /* the all -0.0 sum came back as -0.0 */
} nat_arg_t;

static atomic_int nat_entered;

/* A native call waited for as the node-aware module does: post, then the
 * engine's wait loop over ofl_ofi_native_test (the watchdog its only check). */
static int nat_poll(void *ctx)
{
    void **a = ctx;
    return ofl_ofi_native_test(a[0], a[1]);
}

static ofl_wait_status_t nat_check(void *ctx, double waited_s, double timeout_s, int *peer)
{
    (void) ctx;
    *peer = -1;
    return timeout_s > 0 && waited_s > timeout_s ? OFL_WAIT_TIMEOUT : OFL_WAIT_OK;
}

static int native_allreduce(ofl_ofi_t *o, const void *send, void *recv, size_t count,
                            ofl_op_t op, ofl_type_t type, const ofl_wait_opts_t *w)
{
    int rc = NULL == send ? ofl_ofi_native_post_barrier(o)
                          : ofl_ofi_native_post(o, send, count, op, type);
    if (0 != rc) {
        return rc;
    }
    void *ctx[2] = { o, recv };
    int peer;
    return OFL_WAIT_OK == ofl_wait_loop(nat_poll, nat_check, ctx, w, &peer) ? 0 : -EIO;
}

static void *nat_rank(void *p)
{
    nat_arg_t *a = p;
    ofl_ofi_t *o = nics[a->rank];
    ofl_wait_opts_t w = { .spin_before_yield = 100, .timeout_s = 20.0 };
    unsigned char in[OFL_OFI_NATIVE_MAX_BYTES];
    a->failed_call = -1;
    for (int k = 0; k < NAT_CALLS; ++k) {
        const nat_case_t *c = &nat_cases[k % NAT_NCASES];
        size_t count = nat_count(k, c->type);
        for (size_t i = 0; i < count; ++i) {
            nat_put(c->type, in, i, nat_in(a->rank, k, i), c->op);
        }
        /* in place on odd calls */
        void *out = a->out + (size_t) k * OFL_OFI_NATIVE_MAX_BYTES;
        const void *src = in;
        if (k & 1) {
            memcpy(out, in, count * ofl_type_size(c->type));
            src = out;
        }
        int rc = native_allreduce(o, src, out, count, c->op, c->type, &w);
        if (0 != rc) {
            a->failed_call = k;
            a->rc = rc;
            return NULL;
        }
    }
    double nz = -0.0, res = 1.0;
    if (0 != native_allreduce(o, &nz, &res, 1, OFL_OP_SUM, OFL_T_DOUBLE, &w)) {
        a->failed_call = NAT_CALLS;
        return NULL;
    }
    a->neg_zero = 0.0 == res && signbit(res);
    for (int b = 0; b < NAT_BARRIERS; ++b) {
        atomic_fetch_add(&nat_entered, 1);
        if (0 != native_allreduce(o, NULL, NULL, 0, OFL_OP_SUM, OFL_T_UINT64, &w)) {
            a->failed_call = NAT_CALLS + 1 + b;
            return NULL;
        }
        if (atomic_load(&nat_entered) < a->n * (b + 1)) {
            a->barrier_early++;
        }
    }
    return NULL;
}

/* The exact result of call k, element i, for integer types (wrapping as C
 * unsigned arithmetic does, then narrowed). */
static int64_t nat_want_int(const nat_case_t *c, int n, int k, size_t i)
{
    unsigned char tmp[8];
    int64_t acc = 0;
    for (int r = 0; r < n; ++r) {
        nat_put(c->type, tmp, 0, nat_in(r, k, i), c->op);
        int64_t v;
        switch (c->type) {
        case OFL_T_INT8: v = *(int8_t *) tmp; break;
        case OFL_T_UINT8: v = *(uint8_t *) tmp; break;
        case OFL_T_INT16: v = *(int16_t *) tmp; break;
        case OFL_T_UINT16: v = *(uint16_t *) tmp; break;
        case OFL_T_INT32: v = *(int32_t *) tmp; break;
        case OFL_T_UINT32: v = *(uint32_t *) tmp; break;
        default: v = *(int64_t *) tmp; break;
        }
        if (0 == r) {
            acc = v;
            continue;
        }
        switch (c->op) {
        case OFL_OP_SUM: acc = (int64_t) ((uint64_t) acc + (uint64_t) v); break;
        case OFL_OP_PROD: acc = (int64_t) ((uint64_t) acc * (uint64_t) v); break;
        case OFL_OP_MIN: acc = v < acc ? v : acc; break;
        case OFL_OP_MAX: acc = v > acc ? v : acc; break;
        case OFL_OP_BAND: acc &= v; break;
        case OFL_OP_BOR: acc |= v; break;
        default: acc ^= v; break;
        }
    }
    memset(tmp, 0, sizeof(tmp));
    nat_put(c->type == OFL_T_INT32 ? OFL_T_UINT32 : c->type, tmp, 0, acc, OFL_OP_SUM);
    int64_t narrowed;
    switch (c->type) {
    case OFL_T_INT8: narrowed = *(int8_t *) tmp; break;
    case OFL_T_UINT8: narrowed = *(uint8_t *) tmp; break;
    case OFL_T_INT16: narrowed = *(int16_t *) tmp; break;
    case OFL_T_UINT16: narrowed = *(uint16_t *) tmp; break;
    case OFL_T_INT32: narrowed = *(int32_t *) tmp; break;
    case OFL_T_UINT32: narrowed = *(uint32_t *) tmp; break;
    default: narrowed = *(int64_t *) tmp; break;
    }
    return narrowed;
}

static int64_t nat_got_int(ofl_type_t t, const void *buf, size_t i)
{
    switch (t) {
    case OFL_T_INT8: return ((const int8_t *) buf)[i];
    case OFL_T_UINT8: return ((const uint8_t *) buf)[i];
    case OFL_T_INT16: return ((const int16_t *) buf)[i];
    case OFL_T_UINT16: return ((const uint16_t *) buf)[i];
    case OFL_T_INT32: return ((const int32_t *) buf)[i];
    case OFL_T_UINT32: return ((const uint32_t *) buf)[i];
    default: return ((const int64_t *) buf)[i];
    }
}

static void test_native(int n)
{
    if (0 != open_all(n, 1024, 4)) {
        exit(77);
    }
    CHECK(ofl_ofi_native(nics[0]), "sockets offers triggered atomics: native on %d ranks", n);
    if (!ofl_ofi_native(nics[0])) {
        close_all(n);
        return;
    }
    CHECK(!ofl_ofi_native_ok(nics[0], OFL_OP_MIN, OFL_T_FLOAT, 4), "float MIN refused");
    CHECK(!ofl_ofi_native_ok(nics[0], OFL_OP_MINLOC, OFL_T_2INT, 4), "MINLOC refused");
    CHECK(!ofl_ofi_native_ok(nics[0], OFL_OP_SUM, OFL_T_INT64, 513), "4104 bytes refused");
    CHECK(ofl_ofi_native_ok(nics[0], OFL_OP_SUM, OFL_T_INT64, 512), "4096 bytes taken");
    nat_arg_t args[MAXR];
    pthread_t th[MAXR];
    atomic_store(&nat_entered, 0);
    for (int r = 0; r < n; ++r) {
        memset(&args[r], 0, sizeof(args[r]));
        args[r].rank = r;
        args[r].n = n;
        args[r].out = calloc(NAT_CALLS, OFL_OFI_NATIVE_MAX_BYTES);
        pthread_create(&th[r], NULL, nat_rank, &args[r]);
    }
    for (int r = 0; r < n; ++r) {
        pthread_join(th[r], NULL);
        CHECK(-1 == args[r].failed_call, "native n=%d rank %d: call %d failed (%d)", n, r,
              args[r].failed_call, args[r].rc);
        CHECK(0 == args[r].barrier_early, "native barrier n=%d rank %d: left %d times before "
              "every rank entered", n, r, args[r].barrier_early);
        CHECK(args[r].neg_zero, "native n=%d rank %d: sum of negative zeros is -0.0", n, r);
    }
    int bad = 0;
    for (int k = 0; k < NAT_CALLS && !bad; ++k) {
        const nat_case_t *c = &nat_cases[k % NAT_NCASES];
        size_t count = nat_count(k, c->type), bytes = count * ofl_type_size(c->type);
        const unsigned char *r0 = args[0].out + (size_t) k * OFL_OFI_NATIVE_MAX_BYTES;
        for (int r = 1; r < n; ++r) {
            if (0 != memcmp(r0, args[r].out + (size_t) k * OFL_OFI_NATIVE_MAX_BYTES, bytes)) {
                CHECK(0, "native n=%d call %d (%s %s x%zu): rank %d differs from rank 0", n, k,
                      ofl_op_name(c->op), ofl_type_name(c->type), count, r);
                bad = 1;
            }
        }
        for (size_t i = 0; i < count && !bad; ++i) {
            if (OFL_T_FLOAT == c->type || OFL_T_DOUBLE == c->type) {
                double exact = 0.0, mag = 0.0, got;
                unsigned char tmp[8];
                for (int r = 0; r < n; ++r) {
                    nat_put(c->type, tmp, 0, nat_in(r, k, i), c->op);
                    double v = OFL_T_FLOAT == c->type ? *(float *) tmp : *(double *) tmp;
                    exact += v;
                    mag += fabs(v);
                }
                got = OFL_T_FLOAT == c->type ? ((const float *) r0)[i]
                                             : ((const double *) r0)[i];
                double tol = (OFL_T_FLOAT == c->type ? 1e-6 : 1e-14) * mag * n;
                if (fabs(got - exact) > tol) {
                    CHECK(0, "native n=%d call %d %s [%zu]: %.17g, want %.17g", n, k,
                          ofl_type_name(c->type), i, got, exact);
                    bad = 1;
                }
            } else {
                int64_t want = nat_want_int(c, n, k, i), got = nat_got_int(c->type, r0, i);
                if (got != want) {
                    CHECK(0, "native n=%d call %d (%s %s x%zu) [%zu]: %lld, want %lld", n, k,
                          ofl_op_name(c->op), ofl_type_name(c->type), count, i,
                          (long long) got, (long long) want);
                    bad = 1;
                }
            }
        }
    }
    CHECK(!bad, "native n=%d: %d calls right on every rank", n, NAT_CALLS);
    uint64_t posted = ofl_ofi_native_posted(nics[0]);
    int rounds = n == 2 ? 1 : 2;
    CHECK(posted == (uint64_t) (NAT_CALLS + 1 + NAT_BARRIERS) * 2 * (uint64_t) rounds,
          "native n=%d: %llu triggered operations posted by rank 0", n,
          (unsigned long long) posted);
    for (int r = 0; r < n; ++r) {
        free(args[r].out);
    }
    close_all(n);
    if (0 == open_all(3, 1024, 4)) {
        CHECK(!ofl_ofi_native(nics[0]), "3 ranks: no native collectives");
        close_all(3);
    }
}

int main(void)
{
    unit_timeout("test_ofi", 120);
    test_counters();
    for (int n = 2; n <= MAXR; ++n) {
        test_allreduce(n, OFL_SCHED_TREE, 1, 20);
        test_allreduce(n, OFL_SCHED_EXCHANGE, 5, 20);
        test_allreduce(n, OFL_SCHED_TREE, 1000, 4);      /* 8000 B: 8 segments of 1 KiB */
        test_allreduce(n, OFL_SCHED_SPLIT, 1000, 4);
    }
    test_allreduce(3, OFL_SCHED_TREE, 0, 5);
    test_bcast_barrier(4);
    test_neighbours();
    test_automatic();
    test_native(2);
    test_native(4);
    return unit_report("test_ofi");
}
