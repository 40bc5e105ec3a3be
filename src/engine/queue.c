/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the execution queue: who runs a communicator's posted calls,
 * and how (see queue.h).
 */
#include "engine/queue.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define OFL_LIKELY(x) __builtin_expect(!!(x), 1)
#define OFL_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Nonblocking calls up to this many bytes fire their first descriptors in the
 * posting thread; larger ones leave all the work to the agent and ring
 * doorbells (see ofl_queue_post()). */
#define POST_FIRE_MAX 16384

static ofl_agent_t agent;
static int queue_open;                         /* atomic: the agent is initialised */
static ofl_queue_opts_t opts;                  /* fixed at open */

static ofl_qcall_t *done_stack;   /* atomic LIFO, newest first */
/* Calls an application thread finished while executing inside the host's progress
 * (queue_progress): handed back after its round, without the shared done
 * stack's locked instructions. */
static __thread int tls_app;
static __thread ofl_qcall_t *tls_done_head, *tls_done_tail;
/* With one application thread: the queue of the last call left outstanding at
 * post, which a wait most likely waits for. Only that thread reads or writes
 * it; a queue clears it when it goes. */
static ofl_queue_t *hot_queue;

static inline ofl_queue_t *queue_of(ofl_agent_item_t *item)
{
    return (ofl_queue_t *) ((char *) item - offsetof(ofl_queue_t, item));
}

/* ---- the executor (agent or application thread, under the queue's lock) ---- */

/* Run a posted call (program instance or board call): 1 done, 0 not yet, -1
 * failed. */
static inline int call_progress(ofl_qcall_t *qc)
{
    return qc->board ? ofl_board_progress(&qc->bc) : ofl_engine_progress(&qc->inst);
}

/* Prepare a call for execution on m (nothing moves yet for a board call). */
static inline void call_post(ofl_queue_t *q, ofl_qcall_t *qc,
                             const ofl_program_t *prog, const ofl_call_t *call)
{
    if (qc->board) {
        ofl_board_prepare(&qc->bc, q->nic, 0, call->send, call->recv, call->count,
                          call->elem, call->fn);
        if (qc->board > 1) {
            ofl_board_rooted(&qc->bc, (ofl_board_kind_t) (qc->board - 1), qc->board_root);
        }
        ofl_board_sign(&qc->bc, call->sig, call->callno);
        ofl_board_number(q->board_state, &qc->bc);
    } else {
        ofl_engine_post(&qc->inst, prog, q->nic, q->edges, call);
    }
}

/* A number that grows whenever a posted call moves (the executor's idle test). */
static inline uint64_t call_mark(const ofl_qcall_t *qc)
{
    if (qc->board) {
        return (uint64_t) (qc->bc.posted + qc->bc.got + qc->bc.flow + qc->bc.missing);
    }
    uint64_t s = 0;
    for (int q = 0; q < OFL_PROG_MAX_QUEUES; ++q) {
        s += qc->inst.cursor[q];
    }
    return s;
}

static inline double liveness_period(void)
{
    return opts.liveness_period_s > 0 ? opts.liveness_period_s : 0.1;
}

static void head_changed(ofl_queue_t *q)
{
    /* Clock reads cost tens of ns here: the first idle check stamps it. */
    q->head_since = 0.0;
    q->idle = 0;
}

/* qc leaves the run list. The queue's count drops before anyone can see qc
 * done: an application thread that then finds nothing outstanding takes the
 * blocking fast path, and we touch the NIC no more in this call. */
static void finish(ofl_queue_t *q, ofl_qcall_t *qc,
                   ofl_wait_status_t st)
{
    q->run_head = qc->next;
    if (NULL == q->run_head) {
        q->run_tail = NULL;
    }
    qc->next = NULL;
    qc->status = st;
    __atomic_fetch_sub(&q->nactive, 1, __ATOMIC_RELEASE);
    if (qc->blocking) {
        __atomic_store_n(&qc->done, 1, __ATOMIC_RELEASE);
    } else if (tls_app) {
        /* the posting thread may be another one, reading it atomically */
        __atomic_store_n(&qc->done, 1, __ATOMIC_RELAXED);
        if (NULL == tls_done_head) {
            tls_done_head = qc;
        } else {
            tls_done_tail->next = qc;
        }
        tls_done_tail = qc;
    } else {
        __atomic_store_n(&qc->done, 1, __ATOMIC_RELAXED);
        ofl_queue_push_done(qc);
    }
    ofl_agent_done(&agent, 1);
}

/* The queue's NIC is now mid-call: this call and all behind it fail, and the
 * owner stops offloading on the communicator. */
static void stop_queue(ofl_queue_t *q, ofl_wait_status_t st)
{
    q->fail_status = st;
    q->failed = 1;
    q->stopped(q, st);
}

/* The oldest call has not moved for a while: the same checks a blocking wait
 * makes (ofl_engine_check), every liveness period. */
static void check_head(ofl_queue_t *q, ofl_qcall_t *qc)
{
    double t = ofl_now_s();
    if (0.0 == q->head_since) {
        q->head_since = t;
        q->next_check = t + liveness_period();
        return;
    }
    if (t < q->next_check) {
        return;
    }
    q->next_check = t + liveness_period();
    int peer = -1;
    double watchdog = opts.watchdog_s;
    ofl_wait_status_t st = qc->board
                               ? ofl_board_check(&qc->bc, t - q->head_since, watchdog, &peer)
                               : ofl_engine_check(&qc->inst, t - q->head_since, watchdog, &peer);
    if (OFL_WAIT_OK == st) {
        return;
    }
    if (OFL_WAIT_FAILED == st && !qc->board && OFL_EMISMATCH == qc->inst.error) {
        st = OFL_WAIT_MISMATCH;
        peer = qc->inst.bad_peer;
    }
    int who;
    q->fail_peer = peer;
    q->fail_cnt = OFL_CNT_DATA * OFL_CHANNELS;
    q->fail_have = 0;
    q->fail_need = 0;
    if (qc->board) {
        q->fail_error = qc->bc.error;
        q->fail_need = (int64_t) qc->bc.seq;
    } else {
        q->fail_error = qc->inst.error;
        ofl_engine_blocker(&qc->inst, &who, &q->fail_cnt, &q->fail_have, &q->fail_need);
    }
    stop_queue(q, st);
}

/* A read of a peer's memory failed, a peer's value is corrupt, or a peer's
 * call differs: this call cannot complete, and the NIC state is mid-call, as
 * for a dead peer. */
static void call_failed(ofl_queue_t *q, const ofl_qcall_t *qc)
{
    int error = qc->board ? qc->bc.error : qc->inst.error;
    int mismatch = OFL_EMISMATCH == error;
    q->fail_error = mismatch ? 0 : error;
    q->fail_peer = !mismatch ? -1 : qc->board ? qc->bc.missing : qc->inst.bad_peer;
    q->fail_cnt = 0;
    q->fail_have = 0;
    q->fail_need = 0;
    stop_queue(q, mismatch ? OFL_WAIT_MISMATCH : OFL_WAIT_FAILED);
}

/* The posts since the last round join the run list (the stack holds the
 * newest first: reversed into post order). */
static void take_incoming(ofl_queue_t *q)
{
    ofl_qcall_t *in = NULL;
    if (NULL != __atomic_load_n(&q->incoming, __ATOMIC_RELAXED)) {
        in = __atomic_exchange_n(&q->incoming, NULL, __ATOMIC_ACQUIRE);
    }
    if (NULL == in) {
        return;
    }
    ofl_qcall_t *fifo = NULL, *tail = in;
    while (NULL != in) {
        ofl_qcall_t *next = in->next;
        in->next = fifo;
        fifo = in;
        in = next;
    }
    if (NULL == q->run_head) {
        q->run_head = fifo;
        head_changed(q);
    } else {
        q->run_tail->next = fifo;
    }
    q->run_tail = tail;
}

static int queue_progress(ofl_agent_item_t *item)
{
    ofl_queue_t *q = queue_of(item);
    if (0 == __atomic_load_n(&q->nactive, __ATOMIC_ACQUIRE)) {
        return 0;
    }
    take_incoming(q);
    int worked = 0;
    ofl_qcall_t *qc;
    while (NULL != (qc = q->run_head)) {
        if (OFL_UNLIKELY(q->failed)) {
            qc->peer = q->fail_peer;
            qc->cnt = q->fail_cnt;
            qc->have = q->fail_have;
            qc->need = q->fail_need;
            qc->error = q->fail_error;
            finish(q, qc, (ofl_wait_status_t) q->fail_status);
            worked++;
            continue;
        }
        uint64_t before = call_mark(qc);
        int done = call_progress(qc);
        if (OFL_UNLIKELY(done < 0)) {
            call_failed(q, qc);
            continue;
        }
        if (done) {
            finish(q, qc, OFL_WAIT_OK);
            worked++;
            if (NULL != q->run_head) {
                head_changed(q);
            }
            continue;
        }
        if (call_mark(qc) != before) {
            worked++;
        }
        break;
    }
    if (0 == worked && NULL != (qc = q->run_head)
        && 0 == (++q->idle & (OFL_IDLE_CHECK_EVERY - 1))) {
        check_head(q, qc);
        if (q->failed) {
            return queue_progress(item);
        }
    }
    return worked;
}

/* ---- process and queue life ------------------------------------------------------ */

void ofl_queue_open(const ofl_queue_opts_t *o)
{
    opts = *o;
    if (0 == opts.spin) {
        /* oversubscribed: the peers need this core to arrive at all */
        opts.start_polls = 0;
    }
    ofl_agent_init(&agent);
    __atomic_store_n(&queue_open, 1, __ATOMIC_RELEASE);
}

ofl_agent_t *ofl_queue_agent(void)
{
    return &agent;
}

void ofl_queue_stop(void)
{
    ofl_agent_fini(&agent);
}

void ofl_queue_close(void)
{
    __atomic_store_n(&queue_open, 0, __ATOMIC_RELEASE);
}

void ofl_queue_init(ofl_queue_t *q, ofl_queue_stopped_fn stopped)
{
    memset(q, 0, sizeof(*q));
    ofl_agent_item_init(&q->item, queue_progress);
    q->stopped = stopped;
}

void ofl_queue_fini(ofl_queue_t *q)
{
    if (q->linked && __atomic_load_n(&queue_open, __ATOMIC_ACQUIRE)) {
        ofl_agent_remove(&agent, &q->item);
        q->linked = 0;
        if (hot_queue == q) {
            hot_queue = NULL;
        }
    }
    free(q->blocking_call);
    q->blocking_call = NULL;
}

int ofl_queue_activate(ofl_queue_t *q, ofl_nic_t *nic, ofl_edges_t *edges,
                       ofl_board_state_t *board_state)
{
    if (OFL_LIKELY(q->linked)) {
        return 0;
    }
    if (NULL == q->blocking_call) {
        q->blocking_call = calloc(1, sizeof(*q->blocking_call));
        if (NULL == q->blocking_call) {
            return -ENOMEM;
        }
        q->blocking_call->blocking = 1;
    }
    q->nic = nic;
    q->edges = edges;
    q->board_state = board_state;
    uint32_t *word, *armed;
    q->nic->ops->bell(q->nic, &word, &armed);
    q->item.bell_word = word;
    q->item.bell_armed = armed;
    ofl_agent_add(&agent, &q->item);
    q->linked = 1;
    return 0;
}


/* ---- posting ---------------------------------------------------------------- */

/* A small call on a queue with nothing outstanding, whose executor lock this
 * thread gets: fire first, count after. The puts are then on their way before
 * any locked instruction (each would wait for this core's earlier stores to
 * the peers' lines to drain), and a call the peers have already made completes
 * here, without touching the run list, the agent or the done stack. Returns
 * -1, having done nothing, when the slow path must post; 1 when done, 0 when
 * left outstanding. */
static int post_first(ofl_queue_t *q, ofl_qcall_t *qc,
                      const ofl_program_t *prog, const ofl_call_t *call)
{
    if (0 != __atomic_load_n(&q->nactive, __ATOMIC_ACQUIRE)
        || !ofl_agent_item_trylock(&q->item)) {
        return -1;
    }
    if (0 != __atomic_load_n(&q->nactive, __ATOMIC_ACQUIRE)) {
        ofl_agent_item_unlock(&q->item);
        return -1;
    }
    call_post(q, qc, prog, call);
    int done = call_progress(qc);
    /* Peers that are already in the call answer within a few line transfers:
     * waiting that long here costs less than the bookkeeping (and the wait
     * call's progress rounds) of a call left outstanding. */
    for (unsigned k = 0; 0 == done && k < opts.start_polls; ++k) {
        done = call_progress(qc);
    }
    if (done > 0) {
        ofl_agent_item_unlock(&q->item);
        qc->done = 1;
        return 1;
    }
    /* Outstanding (or failed: queue_progress reports it): the run list is
     * empty, and ours while we hold the lock. */
    __atomic_fetch_add(&q->nactive, 1, __ATOMIC_ACQ_REL);
    ofl_agent_count_in(&agent, 1);
    qc->next = NULL;
    q->run_head = q->run_tail = qc;
    head_changed(q);
    ofl_agent_item_unlock(&q->item);
    ofl_agent_wake(&agent);
    if (!opts.threads()) {
        hot_queue = q;
    }
    return 0;
}

/* A posted call joins the queue's outstanding ones (through the incoming
 * stack: no executor lock needed) and is handed to the executors. */
static void enqueue(ofl_queue_t *q, ofl_qcall_t *qc, int large)
{
    __atomic_fetch_add(&q->nactive, 1, __ATOMIC_ACQ_REL);
    ofl_qcall_t *top = __atomic_load_n(&q->incoming, __ATOMIC_RELAXED);
    do {
        qc->next = top;
    } while (!__atomic_compare_exchange_n(&q->incoming, &top, qc, 1, __ATOMIC_RELEASE,
                                          __ATOMIC_RELAXED));
    ofl_agent_count_in(&agent, 1);
    if (!opts.threads()) {
        hot_queue = q;
    }
    if (large) {
        ofl_agent_kick(&agent);
        return;
    }
    ofl_agent_item_try(&q->item);
    if (!qc->blocking && !__atomic_load_n(&qc->done, __ATOMIC_ACQUIRE)) {
        ofl_agent_wake(&agent);
    }
}

/* A board call on a queue with nothing outstanding, posted: look for the
 * peers' payloads at once. No executor lock: with nothing outstanding no
 * executor touches the queue, and the call reaches them (enqueue) only if it
 * is not done here. 1 when done. */
static int board_first(ofl_queue_t *q, ofl_qcall_t *qc)
{
    int done = call_progress(qc);
    for (unsigned k = 0; 0 == done && k < opts.start_polls; ++k) {
        done = call_progress(qc);
    }
    if (done > 0) {
        qc->done = 1;
        return 1;
    }
    enqueue(q, qc, 0);
    return 0;
}

int ofl_queue_post(ofl_queue_t *q, ofl_qcall_t *qc, const ofl_program_t *prog,
                   const ofl_call_t *call)
{
    /* A small nonblocking call fires here what can fire now (its first puts, a
     * line or two each): it need not wait for the agent to be scheduled, and
     * one that completes at once never wakes it. A large one is the agent's
     * work from the start (firing it here would copy and combine whole
     * segments before the call returns), worth a system call to wake the agent
     * and the peers' agents on arrival. A blocking call is driven by its
     * caller. */
    qc->status = OFL_WAIT_OK;
    qc->error = 0;
    qc->done = 0;
    if (qc->board && !qc->blocking && 0 == __atomic_load_n(&q->nactive, __ATOMIC_ACQUIRE)) {
        call_post(q, qc, NULL, call);
        return board_first(q, qc);
    }
    int large = !qc->blocking && ofl_agent_started(&agent)
                && call->count * call->elem > POST_FIRE_MAX;
    ofl_call_t c = *call;
    c.ring = large;
    if (!large && !qc->blocking) {
        int done = post_first(q, qc, prog, &c);
        if (done >= 0) {
            return done;
        }
    }
    call_post(q, qc, prog, &c);
    enqueue(q, qc, large);
    return 0;
}

void ofl_queue_board_prepare(ofl_queue_t *q, ofl_qcall_t *qc, const ofl_call_t *call)
{
    ofl_board_prepare(&qc->bc, q->nic, 0, call->send, call->recv, call->count,
                      call->elem, call->fn);
}

int ofl_queue_board_repost(ofl_queue_t *q, ofl_qcall_t *qc, const ofl_call_t *call)
{
    /* Only the call number changes from start to start. */
    qc->status = OFL_WAIT_OK;
    qc->done = 0;
    ofl_board_sign(&qc->bc, call->sig, call->callno);
    ofl_board_rearm(q->board_state, &qc->bc);
    return board_first(q, qc);
}

/* ---- the blocking slow path --------------------------------------------------- */

ofl_wait_status_t ofl_queue_blocking(ofl_queue_t *q, const ofl_program_t *prog,
                                     const ofl_call_t *call, int board, int board_root,
                                     int *peer, int *cnt, uint64_t *have, int64_t *need,
                                     int *error)
{
    ofl_qcall_t *qc = q->blocking_call;
    qc->board = board;
    qc->board_root = board_root;
    ofl_queue_post(q, qc, prog, call);
    unsigned spin = opts.spin;
    for (unsigned long iter = 1;; ++iter) {
        ofl_agent_item_try(&q->item);
        if (__atomic_load_n(&qc->done, __ATOMIC_ACQUIRE)) {
            break;
        }
        if (0 == (iter & (OFL_IDLE_CHECK_EVERY - 1))) {
            opts.host_progress();
        }
        if (iter >= spin) {
            sched_yield();
        } else {
            ofl_cpu_relax();
        }
    }
    *peer = qc->peer;
    *cnt = qc->cnt;
    *have = qc->have;
    *need = qc->need;
    *error = qc->error;
    return qc->status;
}

/* ---- handing finished calls back (application threads only) -------------------- */

void ofl_queue_push_done(ofl_qcall_t *qc)
{
    ofl_qcall_t *top = __atomic_load_n(&done_stack, __ATOMIC_RELAXED);
    do {
        qc->next = top;
    } while (!__atomic_compare_exchange_n(&done_stack, &top, qc, 1, __ATOMIC_RELEASE,
                                          __ATOMIC_RELAXED));
}

/* Execute a round (unless the agent is at it); the calls this thread finished
 * are returned in *head..*tail. Returns the number of calls that moved. */
static int app_round(ofl_qcall_t **head, ofl_qcall_t **tail)
{
    /* Hints, shared by the application threads without a lock: updates may be
     * lost, never torn (relaxed loads and stores, plain moves). */
    static unsigned idle_streak;
    static unsigned calls;
    int n = 0;
    tls_app = 1;
    ofl_queue_t *h = hot_queue;
    unsigned c = __atomic_load_n(&calls, __ATOMIC_RELAXED) + 1;
    __atomic_store_n(&calls, c, __ATOMIC_RELAXED);
    if (NULL != h && 0 != (c & 15) && 0 != __atomic_load_n(&h->nactive, __ATOMIC_ACQUIRE)
        && ofl_agent_item_trylock(&h->item)) {
        /* A wait on the last call posted: poll its communicator only,
         * without the agent's list lock (two more locked instructions per
         * poll). Every 16th call, and whenever that queue is busy, all. */
        ofl_agent_host_round(&agent);
        n += queue_progress(&h->item);
        ofl_agent_item_unlock(&h->item);
    } else {
        n += ofl_agent_run(&agent);
    }
    tls_app = 0;
    *head = tls_done_head;
    *tail = NULL != tls_done_head ? tls_done_tail : NULL;
    tls_done_head = tls_done_tail = NULL;
    if (0 != n) {
        __atomic_store_n(&idle_streak, 0, __ATOMIC_RELAXED);
    } else if (NULL == __atomic_load_n(&done_stack, __ATOMIC_RELAXED)) {
        unsigned idle = __atomic_load_n(&idle_streak, __ATOMIC_RELAXED) + 1;
        __atomic_store_n(&idle_streak, idle, __ATOMIC_RELAXED);
        if (idle > opts.spin) {
            /* An application thread spinning in a wait would keep off its core
             * whatever the work waits for: the agent of this or another rank,
             * preempted there (a host's wait loop may never yield). */
            sched_yield();
        }
    }
    return n;
}

int ofl_queue_progress(ofl_qcall_t **done)
{
    ofl_qcall_t *head = NULL, *tail = NULL;
    int n = 0;
    if (ofl_agent_pending(&agent) > 0) {
        n = app_round(&head, &tail);
    }
    *done = head;
    if (NULL == __atomic_load_n(&done_stack, __ATOMIC_RELAXED)) {
        return n;
    }
    /* The stack holds the newest first: reversed into completion order, after
     * this thread's own. */
    ofl_qcall_t *qc = __atomic_exchange_n(&done_stack, NULL, __ATOMIC_ACQUIRE);
    ofl_qcall_t *fifo = NULL;
    while (NULL != qc) {
        ofl_qcall_t *next = qc->next;
        qc->next = fifo;
        fifo = qc;
        qc = next;
        n++;
    }
    if (NULL == tail) {
        *done = fifo;
    } else {
        tail->next = fifo;
    }
    return n;
}

void ofl_queue_fail_call(const ofl_queue_t *q, ofl_qcall_t *qc)
{
    qc->status = q->failed ? (ofl_wait_status_t) q->fail_status : OFL_WAIT_PEER_DEAD;
    qc->peer = q->fail_peer;
    qc->cnt = q->fail_cnt;
    qc->have = q->fail_have;
    qc->need = q->fail_need;
    qc->error = q->fail_error;
}
