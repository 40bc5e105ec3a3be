/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Unit test of the execution queue (src/engine/queue.c) over the software NIC,
 * one thread per rank, without MPI:
 *
 *   order     windows of nonblocking calls (tree and exchange allreduces, board
 *             allreduces, bcasts from every root, barriers) posted in the same
 *             order on every rank, completed through ofl_queue_progress in
 *             whatever thread collects them, a blocking call queued behind them
 *             (ofl_queue_blocking); every result against a reference computed
 *             here from the inputs; with and without the progress agent;
 *   stall     a call only one rank posts (one application thread): the
 *             watchdog stops the queue, the owner hears of it once, the call
 *             ends with the fault's status and names the peer it waited for, as
 *             does a start refused after the stop (ofl_queue_fail_call).
 */
#include "alu/alu.h"
#include "engine/engine.h"
#include "engine/queue.h"
#include "engine_util.h"
#include "nic/softnic.h"
#include "sched/sched.h"
#include "unit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define MAXR 4
#define WINDOW 12       /* calls outstanding at once per rank */
#define ROUNDS 60
#define MAXCOUNT 3000   /* int64 elements: several 4 KiB segments; above 16 KiB a
                           call is the agent's from its post */
#define BOARD_COUNT 5   /* int64 elements: 40 bytes, one board call */

enum { C_TREE, C_EXCH, C_BOARD, C_BCAST, C_BARRIER, C_NKINDS };

typedef struct {
    ofl_qcall_t qc;           /* first: the container of a finished call */
    atomic_int finished;
    int kind, root;
    size_t count;
    uint32_t tag;
    int64_t send[MAXCOUNT];
    int64_t recv[MAXCOUNT + 1];   /* + a guard */
} call_t;

typedef struct {
    int rank, n;
    ofl_softnic_t nic;
    ofl_edges_t edges;
    ofl_board_state_t board;
    ofl_queue_t q;
    ofl_program_t tree, exch, barrier, bcast[MAXR];
    ofl_alu_fn isum;
    call_t *calls;            /* [WINDOW] */
    long bad, checked, blocking_ok;
    char first[160];
} rank_t;

static atomic_int stopped_calls;
static atomic_int stopped_status;

static void on_stopped(ofl_queue_t *q, ofl_wait_status_t st)
{
    (void) q;
    atomic_fetch_add(&stopped_calls, 1);
    atomic_store(&stopped_status, (int) st);
}

static void host_progress(void)
{
}

static int no_threads(void)
{
    return 0;
}

static int threads(void)
{
    return 1;
}

static int64_t val(int rank, uint32_t tag, size_t j)
{
    return (int64_t) mix3((uint64_t) rank, tag, j);
}

static void fail(rank_t *r, const char *what, uint32_t tag)
{
    if (0 == r->bad++) {
        snprintf(r->first, sizeof(r->first), "rank %d: %s (tag %u)", r->rank, what, tag);
    }
}

/* Collect finished calls (any rank's: the done lists are per process) until `c`
 * is finished. */
static void wait_finished(call_t *c)
{
    while (!atomic_load_explicit(&c->finished, memory_order_acquire)) {
        ofl_qcall_t *done = NULL;
        ofl_queue_progress(&done);
        while (NULL != done) {
            ofl_qcall_t *next = done->next;
            done->next = NULL;
            atomic_store_explicit(&((call_t *) done)->finished, 1, memory_order_release);
            done = next;
        }
    }
}

static void post(rank_t *r, call_t *c, int kind, int root, size_t count, uint32_t tag)
{
    c->kind = kind;
    c->root = root;
    c->count = count;
    c->tag = tag;
    atomic_store(&c->finished, 0);
    memset(&c->qc, 0, sizeof(c->qc));
    for (size_t j = 0; j < count; ++j) {
        c->send[j] = val(r->rank, tag, j);
        c->recv[j] = -1;
    }
    c->recv[count] = -7;
    ofl_call_t oc = { .send = c->send, .recv = c->recv, .fn = r->isum, .elem = 8,
                      .count = count };
    const ofl_program_t *p = &r->tree;
    switch (kind) {
    case C_EXCH:
        p = &r->exch;
        break;
    case C_BOARD:
        c->qc.board = 1 + OFL_BOARD_ALL;
        break;
    case C_BCAST:
        p = &r->bcast[root];
        if (r->rank == root) {
            memcpy(c->recv, c->send, count * 8);
        }
        oc.send = oc.recv;
        oc.fn = NULL;
        break;
    case C_BARRIER:
        p = &r->barrier;
        oc.count = 0;
        oc.fn = NULL;
        break;
    default:
        break;
    }
    if (ofl_queue_post(&r->q, &c->qc, p, &oc)) {
        atomic_store(&c->finished, 1);
    }
}

static void verify(rank_t *r, const call_t *c)
{
    if (OFL_WAIT_OK != c->qc.status) {
        fail(r, "status not OK", c->tag);
        return;
    }
    size_t wrong = 0;
    for (size_t j = 0; j < c->count && C_BARRIER != c->kind; ++j) {
        int64_t want = 0;
        if (C_BCAST == c->kind) {
            want = val(c->root, c->tag, j);
        } else {
            for (int k = 0; k < r->n; ++k) {
                want = (int64_t) ((uint64_t) want + (uint64_t) val(k, c->tag, j));
            }
        }
        wrong += c->recv[j] != want;
    }
    wrong += C_BARRIER != c->kind && -7 != c->recv[c->count];
    if (wrong) {
        fail(r, "wrong result", c->tag);
    }
    r->checked++;
}

/* Every rank draws the same sequence of calls (MPI's rule for collectives). */
static uint64_t draw(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void *rank_main(void *arg)
{
    rank_t *r = arg;
    uint64_t seq = 0x9e3779b97f4a7c15ull;
    uint32_t tag = 1;
    for (int round = 0; round < ROUNDS; ++round) {
        int w = 1 + (int) (draw(&seq) % WINDOW);
        for (int i = 0; i < w; ++i) {
            int kind = (int) (draw(&seq) % C_NKINDS);
            int root = (int) (draw(&seq) % (uint64_t) r->n);
            size_t count = C_BOARD == kind ? BOARD_COUNT
                           : 1 + draw(&seq) % (0 == i % 3 ? MAXCOUNT : 700);
            post(r, &r->calls[i], kind, root, count, tag++);
        }
        if (0 == round % 3) {
            /* a blocking allreduce behind whatever is outstanding */
            static __thread int64_t bs[64], br[64];
            for (size_t j = 0; j < 64; ++j) {
                bs[j] = val(r->rank, tag, j);
            }
            ofl_call_t oc = { .send = bs, .recv = br, .fn = r->isum, .elem = 8, .count = 64 };
            int peer, cnt, error;
            uint64_t have;
            int64_t need;
            ofl_wait_status_t st = ofl_queue_blocking(&r->q, &r->tree, &oc, 0, 0, &peer, &cnt,
                                                      &have, &need, &error);
            size_t wrong = OFL_WAIT_OK != st;
            for (size_t j = 0; j < 64; ++j) {
                int64_t want = 0;
                for (int k = 0; k < r->n; ++k) {
                    want = (int64_t) ((uint64_t) want + (uint64_t) val(k, tag, j));
                }
                wrong += br[j] != want;
            }
            if (wrong) {
                fail(r, "blocking call behind nonblocking ones", tag);
            } else {
                r->blocking_ok++;
            }
            tag++;
        }
        for (int i = 0; i < w; ++i) {
            wait_finished(&r->calls[i]);
            verify(r, &r->calls[i]);
        }
    }
    return NULL;
}

static int world_open(rank_t *rk, int n, const char *name)
{
    for (int r = 0; r < n; ++r) {
        rank_t *x = &rk[r];
        memset(x, 0, sizeof(*x));
        x->rank = r;
        x->n = n;
        int rc = 0 == r ? ofl_softnic_create(&x->nic, name, n, r, 4, 4096)
                        : ofl_softnic_attach(&x->nic, name, n, r, 4, 4096);
        CHECK(0 == rc, "softnic rank %d of %d: %d", r, n, rc);
        if (0 != rc) {
            return -1;
        }
        CHECK(0 == ofl_edges_init(&x->edges, n), "edges");
        ofl_sched_params_t sp = { OFL_TREE_KNOMIAL, 2, OFL_TREE_KNOMIAL, 2, 4, 0, 0 };
        int ok = 0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, r, n, &sp, &x->tree);
        ok &= 0 == ofl_sched_compile(OFL_COLL_BARRIER, 0, r, n, &sp, &x->barrier);
        for (int root = 0; root < n; ++root) {
            ok &= 0 == ofl_sched_compile(OFL_COLL_BCAST, root, r, n, &sp, &x->bcast[root]);
        }
        sp.shape = OFL_SCHED_EXCHANGE;
        ok &= 0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, r, n, &sp, &x->exch);
        CHECK(ok, "compile rank %d of %d", r, n);
        x->isum = ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT64);
        x->calls = calloc(WINDOW, sizeof(call_t));
        ofl_queue_init(&x->q, on_stopped);
        CHECK(0 == ofl_queue_activate(&x->q, &x->nic.base, &x->edges, &x->board),
              "activate");
        CHECK(NULL != x->q.blocking_call && x->q.linked, "activated: blocking call, linked");
    }
    CHECK(0 == ofl_softnic_unlink(name), "unlink");
    return 0;
}

static void world_close(rank_t *rk, int n)
{
    for (int r = 0; r < n; ++r) {
        rank_t *x = &rk[r];
        ofl_queue_fini(&x->q);
        ofl_program_free(&x->tree);
        ofl_program_free(&x->exch);
        ofl_program_free(&x->barrier);
        for (int root = 0; root < n; ++root) {
            ofl_program_free(&x->bcast[root]);
        }
        free(x->calls);
        ofl_edges_fini(&x->edges);
        ofl_softnic_detach(&x->nic);
    }
}

static void test_order(int n, int with_agent)
{
    ofl_queue_opts_t o = { host_progress, threads, 64, 16, 0.05, 0.0 };
    ofl_queue_open(&o);
    if (with_agent) {
        CHECK(0 == ofl_agent_start(ofl_queue_agent(), NULL, NULL), "agent start");
    }
    char name[64];
    shm_name(name, sizeof(name));
    rank_t rk[MAXR];
    if (0 == world_open(rk, n, name)) {
        pthread_t th[MAXR];
        for (int r = 0; r < n; ++r) {
            CHECK(0 == pthread_create(&th[r], NULL, rank_main, &rk[r]), "pthread_create");
        }
        long checked = 0, blocking = 0;
        for (int r = 0; r < n; ++r) {
            pthread_join(th[r], NULL);
            CHECK(0 == rk[r].bad, "order n %d agent %d: %ld failures, first: %s", n, with_agent,
                  rk[r].bad, rk[r].first);
            checked += rk[r].checked;
            blocking += rk[r].blocking_ok;
            CHECK(0 == ofl_queue_active(&rk[r].q), "rank %d: calls left active", r);
        }
        /* every rank drew the same calls: the counts prove nothing was skipped */
        CHECK(checked > (long) n * ROUNDS && 0 == checked % n && blocking == (long) n * 20,
              "order n %d agent %d: %ld calls checked, %ld blocking", n, with_agent, checked,
              blocking);
    }
    world_close(rk, n);
    ofl_queue_stop();
    ofl_queue_close();
    CHECK(0 == atomic_load(&stopped_calls), "no queue stopped in order runs");
}

/* Rank 0 posts an allreduce rank 1 never makes: the watchdog (0.2 s) stops rank 0's
 * queue. */
static void test_stall(void)
{
    ofl_queue_opts_t o = { host_progress, no_threads, 64, 0, 0.02, 0.2 };
    ofl_queue_open(&o);
    char name[64];
    shm_name(name, sizeof(name));
    rank_t rk[2];
    atomic_store(&stopped_calls, 0);
    if (0 == world_open(rk, 2, name)) {
        call_t *a = &rk[0].calls[0];
        post(&rk[0], a, C_TREE, 0, 100, 1);
        double t0 = ofl_now_s();
        wait_finished(a);
        double waited = ofl_now_s() - t0;
        CHECK(OFL_WAIT_TIMEOUT == a->qc.status && 1 == rk[0].q.failed,
              "stalled call: status %d, failed %d", (int) a->qc.status, rk[0].q.failed);
        CHECK(waited >= 0.15 && waited < 5.0, "stalled call ended after %.3f s", waited);
        CHECK(1 == atomic_load(&stopped_calls)
                  && OFL_WAIT_TIMEOUT == atomic_load(&stopped_status),
              "owner told once: %d times, status %d", atomic_load(&stopped_calls),
              atomic_load(&stopped_status));
        ofl_qcall_t probe;
        memset(&probe, 0, sizeof(probe));
        ofl_queue_fail_call(&rk[0].q, &probe);
        CHECK(OFL_WAIT_TIMEOUT == probe.status && 1 == probe.peer,
              "a call refused after the stop: status %d, peer %d (waited for rank 1)",
              (int) probe.status, probe.peer);
    }
    world_close(rk, 2);
    ofl_queue_stop();
    ofl_queue_close();
}

int main(void)
{
    unit_timeout("test_queue", unit_time_limit(60));
    for (int n = 2; n <= MAXR; ++n) {
        test_order(n, 0);
        test_order(n, 1);
    }
    test_stall();
    return unit_report("test_queue");
}
