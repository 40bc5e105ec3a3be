/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Unit tests of the board (engine/board.h) on the software NIC, one thread per
 * rank, no MPI:
 *   results   1..16 ranks, thousands of back-to-back calls of 0..448 bytes
 *             (integer sums checked against sums computed here, float sums
 *             bit for bit against the rank-order sum, in place and not)
 *   barrier   nobody leaves call s before everybody has entered it
 *   faults    a rank that never comes (watchdog names it), a poisoned
 *             communicator, a forked peer that exits (named dead)
 *   fits      sizes and backends the board refuses
 *   rooted    reduces and bcasts mixed with all calls, 1..16 ranks, each rank's
 *             results checked; a reduce's child and a bcast's root finish two
 *             calls with the receiver held back, and not a third
 *   mismatch  a peer whose board call carries another signature (a different
 *             op, a payload of more lines): the call fails before combining
 *             anything, naming that peer, and the NIC's report holds both ranks
 *             and signatures; call records compare calls that take different
 *             paths (ofl_sig_check), and a peer that has not recorded the call
 *             yet, or is past it, is no mismatch
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/board.h"
#include "nic/softnic.h"
#include "unit.h"

#define MAXN OFL_BOARD_MAX_RANKS

static int shm_seq;

static void shm_name(char *buf, size_t len)
{
    snprintf(buf, len, "/ofl-board-%d-%d", (int) getpid(), shm_seq++);
}

typedef struct {
    int n;
    ofl_softnic_t nic[MAXN];
} world_t;

static int world_open(world_t *w, int n)
{
    char name[64];
    shm_name(name, sizeof(name));
    memset(w, 0, sizeof(*w));
    w->n = n;
    int rc = ofl_softnic_create(&w->nic[0], name, n, 0, 4, 4096);
    for (int r = 1; r < n && 0 == rc; ++r) {
        rc = ofl_softnic_attach(&w->nic[r], name, n, r, 4, 4096);
    }
    ofl_softnic_unlink(name);
    CHECK(0 == rc, "softnic for %d ranks: %d", n, rc);
    return rc;
}

static void world_close(world_t *w)
{
    for (int r = 0; r < w->n; ++r) {
        ofl_softnic_detach(&w->nic[r]);
    }
}

static uint32_t in_u32(int rank, uint64_t call, size_t i)
{
    uint64_t x = ((uint64_t) rank << 40) ^ (call << 12) ^ i;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (uint32_t) x;
}

static float in_f32(int rank, uint64_t call, size_t i)
{
    return (float) (in_u32(rank, call, i) % 2000001) * 1e-3f - 1000.0f;
}

static const ofl_wait_opts_t opts = {
    .progress = NULL,
    .ctx = NULL,
    .spin_before_yield = 64,   /* more threads than cores: yield soon */
    .timeout_s = 30.0,
    .liveness_period_s = 0.05,
};

/* ---- results and barriers --------------------------------------------------- */

typedef struct {
    world_t *w;
    int rank;
    int calls;
    atomic_int *entered;       /* [n]: the last call each rank entered */
    int failures;              /* checks failed in this thread */
    char first[256];
} thr_t;

static void note(thr_t *t, const char *fmt, uint64_t a, uint64_t b)
{
    if (0 == t->failures++) {
        snprintf(t->first, sizeof(t->first), fmt, (unsigned long long) a,
                 (unsigned long long) b);
    }
}

static void *run_rank(void *arg)
{
    thr_t *t = arg;
    int n = t->w->n;
    ofl_nic_t *nic = &t->w->nic[t->rank].base;
    ofl_alu_fn sum_u32 = ofl_alu_lookup(OFL_OP_SUM, OFL_T_UINT32);
    ofl_alu_fn sum_f32 = ofl_alu_lookup(OFL_OP_SUM, OFL_T_FLOAT);
    _Alignas(64) uint32_t send[56], recv[56];
    for (uint64_t s = 1; s <= (uint64_t) t->calls; ++s) {
        int kind = (int) (s % 4);            /* 0 barrier, 1 u32, 2 u32 in place, 3 f32 */
        size_t count = 0 == kind ? 0 : (size_t) ((s * 7) % 57);   /* 0..56 elements */
        for (size_t i = 0; i < count; ++i) {
            if (3 == kind) {
                float f = in_f32(t->rank, s, i);
                memcpy(&send[i], &f, sizeof(f));
            } else {
                send[i] = in_u32(t->rank, s, i);
            }
        }
        int peer = -1;
        ofl_wait_status_t st;
        atomic_store(&t->entered[t->rank], (int) s);
        if (0 == kind) {
            st = ofl_board_allreduce(nic, s, NULL, NULL, 0, 1, NULL, &opts, &peer);
            for (int r = 0; r < n; ++r) {
                int e = atomic_load(&t->entered[r]);
                if (e < (int) s) {
                    note(t, "barrier %llu: a rank had entered only call %llu", s,
                         (uint64_t) e);
                }
            }
        } else if (2 == kind) {
            memcpy(recv, send, count * 4);
            st = ofl_board_allreduce(nic, s, recv, recv, count, 4, sum_u32, &opts, &peer);
        } else {
            st = ofl_board_allreduce(nic, s, send, recv, count, 4,
                                     3 == kind ? sum_f32 : sum_u32, &opts, &peer);
        }
        if (OFL_WAIT_OK != st) {
            note(t, "call %llu: wait status %llu", s, (uint64_t) st);
            break;
        }
        for (size_t i = 0; i < count; ++i) {
            if (3 == kind) {
                float want = in_f32(0, s, i), got;
                for (int r = 1; r < n; ++r) {
                    want += in_f32(r, s, i);
                }
                memcpy(&got, &recv[i], sizeof(got));
                if (0 != memcmp(&want, &got, sizeof(got))) {
                    note(t, "call %llu float element %llu differs", s, i);
                }
            } else {
                uint32_t want = 0;
                for (int r = 0; r < n; ++r) {
                    want += in_u32(r, s, i);
                }
                if (want != recv[i]) {
                    note(t, "call %llu element %llu differs", s, i);
                }
            }
        }
    }
    return NULL;
}

static void test_results(void)
{
    static const int sizes[] = { 1, 2, 3, 5, 8, 16 };
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); ++k) {
        int n = sizes[k];
        world_t w;
        if (0 != world_open(&w, n)) {
            continue;
        }
        atomic_int entered[MAXN];
        for (int r = 0; r < MAXN; ++r) {
            atomic_init(&entered[r], 0);
        }
        thr_t th[MAXN];
        pthread_t tid[MAXN];
        int calls = n <= 3 ? 20000 : n <= 8 ? 3000 : 1000;
        for (int r = 0; r < n; ++r) {
            th[r] = (thr_t) { .w = &w, .rank = r, .calls = calls, .entered = entered };
            pthread_create(&tid[r], NULL, run_rank, &th[r]);
        }
        for (int r = 0; r < n; ++r) {
            pthread_join(tid[r], NULL);
            CHECK(0 == th[r].failures, "%d ranks, rank %d: %d failures, first: %s", n, r,
                  th[r].failures, th[r].first);
        }
        world_close(&w);
    }
}

/* Payloads spanning several lines (bytes that are not a multiple of 56). */
typedef struct {
    world_t *w;
    int rank;
    int bad;
} span_t;

static void *span_rank(void *arg)
{
    span_t *t = arg;
    ofl_nic_t *nic = &t->w->nic[t->rank].base;
    ofl_alu_fn bxor = ofl_alu_lookup(OFL_OP_BXOR, OFL_T_UINT8);
    uint8_t send[448], recv[448];
    for (uint64_t s = 1; s <= 3000; ++s) {
        size_t len = (size_t) (s % 449);
        for (size_t i = 0; i < len; ++i) {
            send[i] = (uint8_t) in_u32(t->rank, s, i);
        }
        int peer = -1;
        if (OFL_WAIT_OK != ofl_board_allreduce(nic, s, send, recv, len, 1, bxor, &opts, &peer)) {
            t->bad++;
            return NULL;
        }
        for (size_t i = 0; i < len; ++i) {
            uint8_t want = 0;
            for (int r = 0; r < t->w->n; ++r) {
                want ^= (uint8_t) in_u32(r, s, i);
            }
            t->bad += want != recv[i];
        }
    }
    return NULL;
}

static void test_spanning(void)
{
    world_t w;
    if (0 != world_open(&w, 3)) {
        return;
    }
    span_t th[3];
    pthread_t tid[3];
    for (int r = 0; r < 3; ++r) {
        th[r] = (span_t) { .w = &w, .rank = r, .bad = 0 };
        pthread_create(&tid[r], NULL, span_rank, &th[r]);
    }
    for (int r = 0; r < 3; ++r) {
        pthread_join(tid[r], NULL);
        CHECK(0 == th[r].bad, "rank %d: %d wrong bytes over 1..448-byte payloads", r,
              th[r].bad);
    }
    world_close(&w);
}

/* ---- faults ----------------------------------------------------------------- */

static void test_faults(void)
{
    world_t w;
    if (0 != world_open(&w, 3)) {
        return;
    }
    /* Rank 1 has posted, rank 2 never comes: the watchdog ends rank 0's wait
     * naming rank 2. */
    w.nic[1].base.ops->board_post(&w.nic[1].base, 1, 0, NULL, 0);
    ofl_wait_opts_t o = opts;
    o.timeout_s = 0.2;
    int peer = -1;
    ofl_wait_status_t st = ofl_board_allreduce(&w.nic[0].base, 1, NULL, NULL, 0, 1, NULL, &o,
                                               &peer);
    CHECK(OFL_WAIT_TIMEOUT == st && 2 == peer, "watchdog: status %d peer %d", (int) st, peer);
    /* A communicator poisoned elsewhere ends the wait of the others. */
    w.nic[1].base.ops->poison(&w.nic[1].base, 2);
    o.timeout_s = 0;
    peer = -1;
    st = ofl_board_allreduce(&w.nic[1].base, 1, NULL, NULL, 0, 1, NULL, &o, &peer);
    CHECK(OFL_WAIT_PEER_DEAD == st && 2 == peer, "poisoned: status %d peer %d", (int) st, peer);
    world_close(&w);

    /* A peer process that attached and exited: named dead, communicator poisoned. */
    char name[64];
    shm_name(name, sizeof(name));
    ofl_softnic_t a, b;
    int rc = ofl_softnic_create(&a, name, 2, 0, 4, 4096);
    CHECK(0 == rc, "create: %d", rc);
    if (0 != rc) {
        return;
    }
    pid_t child = fork();
    if (0 == child) {
        _exit(0 == ofl_softnic_attach(&b, name, 2, 1, 4, 4096) ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    ofl_softnic_unlink(name);
    CHECK(WIFEXITED(status) && 0 == WEXITSTATUS(status), "child attach");
    peer = -1;
    int v = 7, out = 0;
    st = ofl_board_allreduce(&a.base, 1, &v, &out, 1, 4,
                             ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT32), &o, &peer);
    CHECK(OFL_WAIT_PEER_DEAD == st && 1 == peer, "dead peer: status %d peer %d", (int) st, peer);
    CHECK(1 == a.base.ops->poisoned(&a.base), "poisoned names the dead rank");
    ofl_softnic_detach(&a);
}

static void test_fits(void)
{
    world_t w;
    if (0 != world_open(&w, 2)) {
        return;
    }
    ofl_nic_t *nic = &w.nic[0].base;
    CHECK(ofl_board_fits(nic, 0) && ofl_board_fits(nic, 448), "0 and 448 bytes fit");
    CHECK(!ofl_board_fits(nic, 449), "449 bytes do not");
    ofl_nic_ops_t none = *nic->ops;
    none.board_post = NULL;
    none.board_read = NULL;
    ofl_nic_t bare = *nic;
    bare.ops = &none;
    CHECK(!ofl_board_fits(&bare, 8), "a backend without a board");
    world_close(&w);
}

/* ---- signatures ------------------------------------------------------------- */

static void test_mismatch(void)
{
    world_t w;
    if (0 != world_open(&w, 2)) {
        return;
    }
    ofl_nic_t *a = &w.nic[0].base, *b = &w.nic[1].base;
    /* allreduce of 2 int32: rank 0 sums, rank 1 takes the maximum */
    uint64_t sum = ofl_sig_make(OFL_COLL_ALLREDUCE, 3, 7, -1, 8);
    uint64_t max = ofl_sig_make(OFL_COLL_ALLREDUCE, 4, 7, -1, 8);
    CHECK(ofl_sig_fold(sum, OFL_SIG_BOARD_BITS) != ofl_sig_fold(max, OFL_SIG_BOARD_BITS),
          "the folds of two ops differ");
    char what[64];
    ofl_sig_describe(sum, max, what, sizeof(what));
    CHECK(0 == strcmp(what, "op"), "describe: '%s'", what);
    uint32_t va[2] = { 1, 2 }, vb[2] = { 3, 4 }, ra[2] = { 77, 77 }, rb[2] = { 77, 77 };
    ofl_board_call_t ca, cb;
    a->ops->record(a, 1, sum);
    b->ops->record(b, 1, max);
    ofl_board_prepare(&ca, a, 1, va, ra, 2, 4, ofl_alu_lookup(OFL_OP_SUM, OFL_T_UINT32));
    ofl_board_sign(&ca, sum, 1);
    ofl_board_prepare(&cb, b, 1, vb, rb, 2, 4, ofl_alu_lookup(OFL_OP_MAX, OFL_T_UINT32));
    ofl_board_sign(&cb, max, 1);
    int da = ofl_board_progress(&ca), db = ofl_board_progress(&cb);
    if (0 == da) {
        da = ofl_board_progress(&ca);
    }
    CHECK(-1 == da && -1 == db && OFL_EMISMATCH == ca.error && OFL_EMISMATCH == cb.error
              && 1 == ca.missing && 0 == cb.missing,
          "different ops on the board: %d (peer %d), %d (peer %d)", da, ca.missing, db,
          cb.missing);
    CHECK(77 == ra[0] && 77 == ra[1] && 77 == rb[0] && 77 == rb[1],
          "nothing combined into recv: %u %u / %u %u", ra[0], ra[1], rb[0], rb[1]);
    int x = -1, y = -1;
    uint64_t sx = 0, sy = 0;
    CHECK(1 == b->ops->mismatched(b, &x, &sx, &y, &sy) && ((0 == x && 1 == y && sum == sx
                                                            && max == sy)
                                                           || (1 == x && 0 == y && max == sx
                                                               && sum == sy)),
          "the NIC's report: ranks %d %d", x, y);
    int peer = -1;
    CHECK(1 == ofl_sig_check(a, sum, 1, &peer) && 1 == peer, "a reported mismatch: peer %d",
          peer);
    world_close(&w);

    /* Call records: the same call, a call not reached yet, a peer ahead. */
    if (0 != world_open(&w, 3)) {
        return;
    }
    a = &w.nic[0].base;
    b = &w.nic[1].base;
    ofl_nic_t *c = &w.nic[2].base;
    uint64_t bc = ofl_sig_make(OFL_COLL_BCAST, 0, 0, 0, 4096);
    uint64_t bc1 = ofl_sig_make(OFL_COLL_BCAST, 0, 0, 1, 4096);
    for (uint64_t n = 1; n <= 3; ++n) {
        a->ops->record(a, n, bc);
        b->ops->record(b, n, bc);
    }
    c->ops->record(c, 1, bc);
    uint64_t got = 0;
    CHECK(3 == a->ops->recorded(a, 1, 3, &got) && bc == got, "record 3 of rank 1");
    CHECK(3 > a->ops->recorded(a, 2, 3, &got), "rank 2 has not reached call 3");
    peer = -1;
    CHECK(0 == ofl_sig_check(a, bc, 3, &peer), "a late peer is no mismatch");
    for (uint64_t n = 2; n <= 40; ++n) {
        c->ops->record(c, n, bc);
    }
    CHECK(0 == ofl_sig_check(a, bc, 3, &peer), "a peer far ahead is no mismatch");
    b->ops->record(b, 4, bc1);   /* rank 1 names another root in call 4 */
    CHECK(1 == ofl_sig_check(a, bc, 4, &peer) && 1 == peer, "root differs: peer %d", peer);
    CHECK(1 == c->ops->mismatched(c, &x, &sx, &y, &sy) && 0 == x && 1 == y && bc == sx
              && bc1 == sy,
          "reported to all: ranks %d %d", x, y);
    world_close(&w);
}

/* ---- rooted calls: reduce and bcast among all calls -------------------------- */

/* Call s of the mixed sequence: an all call, a reduce or a bcast, with a root and
 * a count (u32 elements, 0..56) that every rank derives alike. */
static void rooted_shape(uint64_t s, int n, int *kind, int *root, size_t *count)
{
    uint64_t x = in_u32(7, s, 3);
    *kind = (int) (x % 3);
    *root = (int) ((x >> 8) % (uint64_t) n);
    *count = (size_t) ((x >> 16) % 57);
}

typedef struct {
    world_t *w;
    int rank;
    int calls;
    int failures;
    char first[256];
} rthr_t;

static void rnote(rthr_t *t, const char *what, uint64_t s, size_t i)
{
    if (0 == t->failures++) {
        snprintf(t->first, sizeof(t->first), "rank %d call %llu: %s (element %zu)", t->rank,
                 (unsigned long long) s, what, i);
    }
}

static void *rooted_rank(void *arg)
{
    rthr_t *t = arg;
    int n = t->w->n;
    ofl_nic_t *nic = &t->w->nic[t->rank].base;
    ofl_alu_fn sum_u32 = ofl_alu_lookup(OFL_OP_SUM, OFL_T_UINT32);
    ofl_board_state_t st;
    memset(&st, 0, sizeof(st));
    _Alignas(64) uint32_t send[56], recv[56];
    for (uint64_t s = 1; s <= (uint64_t) t->calls; ++s) {
        int kind, root;
        size_t count;
        rooted_shape(s, n, &kind, &root, &count);
        for (size_t i = 0; i < count; ++i) {
            send[i] = in_u32(t->rank, s, i);
            recv[i] = 0xdeadbeef;
        }
        int in_place = 0 == s % 2;
        ofl_board_call_t c;
        ofl_board_prepare(&c, nic, 0, in_place ? recv : send, recv, count, 4, sum_u32);
        if (in_place) {
            memcpy(recv, send, count * 4);
        }
        if (OFL_BOARD_BCAST == kind && t->rank == root) {
            memcpy(recv, send, count * 4);
            c.send = recv;
        }
        ofl_board_rooted(&c, (ofl_board_kind_t) kind, root);
        ofl_board_sign(&c, 1 + (uint64_t) kind + ((uint64_t) root << 8) + ((uint64_t) count << 16),
                       s);
        ofl_board_number(&st, &c);
        int peer = -1;
        ofl_wait_status_t ws = ofl_board_run(&c, &opts, &peer);
        if (OFL_WAIT_OK != ws) {
            rnote(t, OFL_WAIT_TIMEOUT == ws ? "the call timed out" : "the call failed", s,
                  (size_t) peer);
            return NULL;
        }
        for (size_t i = 0; i < count; ++i) {
            uint32_t want;
            if (OFL_BOARD_BCAST == kind) {
                want = in_u32(root, s, i);
            } else if (OFL_BOARD_REDUCE == kind && t->rank != root) {
                continue;    /* a child's receive buffer is not significant */
            } else {
                want = 0;
                for (int r = 0; r < n; ++r) {
                    want += in_u32(r, s, i);
                }
            }
            if (recv[i] != want) {
                rnote(t, OFL_BOARD_BCAST == kind   ? "bcast: not the root's data"
                         : OFL_BOARD_ALL == kind ? "allreduce: wrong sum"
                                                 : "reduce: wrong sum at the root",
                      s, i);
                break;
            }
        }
    }
    return NULL;
}

/* 1..16 ranks, a few thousand calls of every kind mixed, each rank's results
 * against sums computed here. */
static void test_rooted_results(void)
{
    static const int sizes[] = { 1, 2, 3, 4, 7, 16 };
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); ++k) {
        int n = sizes[k];
        world_t w;
        if (0 != world_open(&w, n)) {
            continue;
        }
        pthread_t tid[MAXN];
        rthr_t th[MAXN];
        for (int r = 0; r < n; ++r) {
            th[r] = (rthr_t) { .w = &w, .rank = r, .calls = n > 4 ? 600 : 3000 };
            pthread_create(&tid[r], NULL, rooted_rank, &th[r]);
        }
        int bad = 0;
        const char *first = "";
        for (int r = 0; r < n; ++r) {
            pthread_join(tid[r], NULL);
            if (th[r].failures && !bad++) {
                first = th[r].first;
            }
        }
        CHECK(0 == bad, "%d ranks, mixed all/reduce/bcast calls: %d ranks wrong; first: %s", n,
              bad, first);
        world_close(&w);
    }
}

/* A reduce's children and a bcast's root do not wait for the others: with the
 * receiving rank held back, the sending one finishes D calls (OFL_BOARD_DEPTH);
 * the next waits until the receiver is done with the first (the lines it
 * rewrites). */
typedef struct {
    world_t *w;
    int rank;
    int kind;
    atomic_int *sender_done;   /* calls the sending rank finished */
    int ok_first, ok_held, ok_after;
} ahead_t;

static void *ahead_rank(void *arg)
{
    ahead_t *t = arg;
    ofl_nic_t *nic = &t->w->nic[t->rank].base;
    ofl_alu_fn sum_u32 = ofl_alu_lookup(OFL_OP_SUM, OFL_T_UINT32);
    ofl_board_state_t st;
    memset(&st, 0, sizeof(st));
    int sender = OFL_BOARD_REDUCE == t->kind ? 1 : 0;   /* root 0 either way */
    ofl_wait_opts_t o = opts;
    o.timeout_s = 10.0;
    uint32_t v = 5, out = 0;
    if (t->rank != sender) {
        /* hold back until the sender has finished D calls (it must not wait) */
        double waited = 0;
        while (atomic_load(t->sender_done) < OFL_BOARD_DEPTH && waited < 10.0) {
            usleep(1000);
            waited += 1e-3;
        }
        t->ok_first = atomic_load(t->sender_done) >= OFL_BOARD_DEPTH;
        usleep(50000);
        /* its next call rewrites the lines of its first: not before we read them */
        t->ok_held = atomic_load(t->sender_done) == OFL_BOARD_DEPTH;
    }
    for (uint64_t s = 1; s <= OFL_BOARD_DEPTH + 1; ++s) {
        ofl_board_call_t c;
        ofl_board_prepare(&c, nic, 0, &v, &out, 1, 4, sum_u32);
        ofl_board_rooted(&c, (ofl_board_kind_t) t->kind, 0);
        ofl_board_sign(&c, 77 + (uint64_t) t->kind, s);
        ofl_board_number(&st, &c);
        int peer = -1;
        if (OFL_WAIT_OK != ofl_board_run(&c, &o, &peer)) {
            return NULL;
        }
        if (t->rank == sender) {
            atomic_fetch_add(t->sender_done, 1);
        }
    }
    t->ok_after = 1;
    return NULL;
}

static void test_rooted_ahead(void)
{
    for (int kind = OFL_BOARD_REDUCE; kind <= OFL_BOARD_BCAST; ++kind) {
        world_t w;
        if (0 != world_open(&w, 2)) {
            continue;
        }
        atomic_int done = 0;
        ahead_t th[2];
        pthread_t tid[2];
        for (int r = 0; r < 2; ++r) {
            th[r] = (ahead_t) { .w = &w, .rank = r, .kind = kind, .sender_done = &done };
            pthread_create(&tid[r], NULL, ahead_rank, &th[r]);
        }
        pthread_join(tid[0], NULL);
        pthread_join(tid[1], NULL);
        const char *name = OFL_BOARD_REDUCE == kind ? "reduce child" : "bcast root";
        int receiver = OFL_BOARD_REDUCE == kind ? 0 : 1;
        CHECK(th[receiver].ok_first, "%s: %d calls did not finish while the receiver was held",
              name, OFL_BOARD_DEPTH);
        CHECK(th[receiver].ok_held, "%s: call %d finished before the receiver read the first",
              name, OFL_BOARD_DEPTH + 1);
        CHECK(th[0].ok_after && th[1].ok_after && OFL_BOARD_DEPTH + 1 == atomic_load(&done),
              "%s: the %d calls did not all finish", name, OFL_BOARD_DEPTH + 1);
        world_close(&w);
    }
}

int main(void)
{
    unit_timeout("test_board", 60);
    test_results();
    test_spanning();
    test_faults();
    test_fits();
    test_mismatch();
    test_rooted_results();
    test_rooted_ahead();
    return unit_report("test_board");
}
