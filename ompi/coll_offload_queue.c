/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the execution queue: who runs a communicator's posted calls,
 * and how (see coll_offload_queue.h).
 */
#include "coll_offload_queue.h"
#include "coll_offload_setup.h"

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>

#include "glue.h"
#include "opal/mca/hwloc/base/base.h"
#include "opal/runtime/opal.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

/* Nonblocking calls up to this many bytes fire their first descriptors in the
 * posting thread; larger ones leave all the work to the agent and ring
 * doorbells (see mca_coll_offload_queue_post()). */
#define POST_FIRE_MAX 16384

static ofl_agent_t agent;
static int queue_open;                         /* atomic: the agent is initialised */
/* atomic: the agent may have a message for an application thread to print
 * (mca_coll_offload_agent_report); it never prints from its own thread */
static int agent_report_due;

/* Unproductive progress calls in a row, while work is outstanding, before
 * they start yielding (coll_offload_spin; 0 when oversubscribed). */
static unsigned nb_spin;

/* Polls a small call makes in its posting call (coll_offload_start_polls; 0
 * when oversubscribed, where the peers need this core to arrive at all). */
static unsigned start_polls;

static mca_coll_offload_qcall_t *done_stack;   /* atomic LIFO, newest first */
/* Calls an application thread finished while executing inside MPI
 * (queue_progress): handed back after its round, without the shared done
 * stack's locked instructions. */
static __thread int tls_app;
static __thread mca_coll_offload_qcall_t *tls_done_head, *tls_done_tail;
/* Without MPI threads: the module of the last call left outstanding at post,
 * which an MPI_Wait most likely waits for. Only the one application thread
 * reads or writes it; a module clears it when it goes. */
static mca_coll_offload_module_t *hot_module;

static inline mca_coll_offload_module_t *module_of(ofl_agent_item_t *item)
{
    return (mca_coll_offload_module_t *) ((char *) item
                                          - offsetof(mca_coll_offload_module_t, item));
}

/* ---- the executor (agent or application thread, under the module's lock) --- */

/* Run a posted call (program instance or board call): 1 done, 0 not yet, -1
 * failed. */
static inline int call_progress(mca_coll_offload_qcall_t *qc)
{
    return qc->board ? ofl_board_progress(&qc->bc) : ofl_engine_progress(&qc->inst);
}

/* Prepare a call for execution on m (nothing moves yet for a board call). */
static inline void call_post(mca_coll_offload_module_t *m, mca_coll_offload_qcall_t *qc,
                             const ofl_program_t *prog, const ofl_call_t *call)
{
    if (qc->board) {
        ofl_board_prepare(&qc->bc, m->nic, 0, call->send, call->recv, call->count,
                          call->elem, call->fn);
        if (qc->board > 1) {
            ofl_board_rooted(&qc->bc, (ofl_board_kind_t) (qc->board - 1), qc->board_root);
        }
        ofl_board_sign(&qc->bc, call->sig, call->callno);
        ofl_board_number(&m->board_state, &qc->bc);
    } else {
        ofl_engine_post(&qc->inst, prog, m->nic, &m->edges, call);
    }
}

/* A number that grows whenever a posted call moves (the executor's idle test). */
static inline uint64_t call_mark(const mca_coll_offload_qcall_t *qc)
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
    double p = mca_coll_offload_component.params.liveness_period;
    return p > 0 ? p : 0.1;
}

static void head_changed(mca_coll_offload_module_t *m)
{
    /* Clock reads cost tens of ns here: the first idle check stamps it. */
    m->head_since = 0.0;
    m->idle = 0;
}

/* qc leaves the run list. The module's count drops before anyone can see qc
 * done: an application thread that then finds nothing outstanding takes the
 * blocking fast path, and we touch the NIC no more in this call. */
static void finish(mca_coll_offload_module_t *m, mca_coll_offload_qcall_t *qc,
                   ofl_wait_status_t st)
{
    m->run_head = qc->next;
    if (NULL == m->run_head) {
        m->run_tail = NULL;
    }
    qc->next = NULL;
    qc->status = st;
    __atomic_fetch_sub(&m->nactive, 1, __ATOMIC_RELEASE);
    if (qc->blocking) {
        __atomic_store_n(&qc->done, 1, __ATOMIC_RELEASE);
    } else if (tls_app) {
        qc->done = 1;
        if (NULL == tls_done_head) {
            tls_done_head = qc;
        } else {
            tls_done_tail->next = qc;
        }
        tls_done_tail = qc;
    } else {
        __atomic_store_n(&qc->done, 1, __ATOMIC_RELAXED);
        mca_coll_offload_queue_push_done(qc);
    }
    ofl_agent_done(&agent, 1);
}

/* The module's NIC is now mid-call: this call and all behind it fail, and later
 * calls on the communicator go to the fallback (or, after a mismatch, fail
 * too). */
static void stop_module(mca_coll_offload_module_t *m, ofl_wait_status_t st)
{
    m->fail_status = st;
    m->failed = 1;
    m->state = OFL_WAIT_MISMATCH == st ? OFL_MOD_BROKEN : OFL_MOD_DISABLED;
}

/* The oldest call has not moved for a while: the same checks a blocking wait
 * makes (ofl_engine_check), every liveness period. */
static void check_head(mca_coll_offload_module_t *m, mca_coll_offload_qcall_t *qc)
{
    double t = ofl_now_s();
    if (0.0 == m->head_since) {
        m->head_since = t;
        m->next_check = t + liveness_period();
        return;
    }
    if (t < m->next_check) {
        return;
    }
    m->next_check = t + liveness_period();
    int peer = -1;
    double watchdog = mca_coll_offload_component.params.watchdog;
    ofl_wait_status_t st = qc->board
                               ? ofl_board_check(&qc->bc, t - m->head_since, watchdog, &peer)
                               : ofl_engine_check(&qc->inst, t - m->head_since, watchdog, &peer);
    if (OFL_WAIT_OK == st) {
        return;
    }
    if (OFL_WAIT_FAILED == st && !qc->board && OFL_EMISMATCH == qc->inst.error) {
        st = OFL_WAIT_MISMATCH;
        peer = qc->inst.bad_peer;
    }
    int who;
    m->fail_peer = peer;
    m->fail_cnt = OFL_CNT_DATA * OFL_CHANNELS;
    m->fail_have = 0;
    m->fail_need = 0;
    if (qc->board) {
        m->fail_error = qc->bc.error;
        m->fail_need = (int64_t) qc->bc.seq;
    } else {
        m->fail_error = qc->inst.error;
        ofl_engine_blocker(&qc->inst, &who, &m->fail_cnt, &m->fail_have, &m->fail_need);
    }
    stop_module(m, st);
}

/* A read of a peer's memory failed, a peer's value is corrupt, or a peer's
 * call differs: this call cannot complete, and the NIC state is mid-call, as
 * for a dead peer. */
static void call_failed(mca_coll_offload_module_t *m, const mca_coll_offload_qcall_t *qc)
{
    int error = qc->board ? qc->bc.error : qc->inst.error;
    int mismatch = OFL_EMISMATCH == error;
    m->fail_error = mismatch ? 0 : error;
    m->fail_peer = !mismatch ? -1 : qc->board ? qc->bc.missing : qc->inst.bad_peer;
    m->fail_cnt = 0;
    m->fail_have = 0;
    m->fail_need = 0;
    stop_module(m, mismatch ? OFL_WAIT_MISMATCH : OFL_WAIT_FAILED);
}

/* The posts since the last round join the run list (the stack holds the
 * newest first: reversed into post order). */
static void take_incoming(mca_coll_offload_module_t *m)
{
    mca_coll_offload_qcall_t *in = NULL;
    if (NULL != __atomic_load_n(&m->incoming, __ATOMIC_RELAXED)) {
        in = __atomic_exchange_n(&m->incoming, NULL, __ATOMIC_ACQUIRE);
    }
    if (NULL == in) {
        return;
    }
    mca_coll_offload_qcall_t *fifo = NULL, *tail = in;
    while (NULL != in) {
        mca_coll_offload_qcall_t *next = in->next;
        in->next = fifo;
        fifo = in;
        in = next;
    }
    if (NULL == m->run_head) {
        m->run_head = fifo;
        head_changed(m);
    } else {
        m->run_tail->next = fifo;
    }
    m->run_tail = tail;
}

static int module_progress(ofl_agent_item_t *item)
{
    mca_coll_offload_module_t *m = module_of(item);
    if (0 == __atomic_load_n(&m->nactive, __ATOMIC_ACQUIRE)) {
        return 0;
    }
    take_incoming(m);
    int worked = 0;
    mca_coll_offload_qcall_t *qc;
    while (NULL != (qc = m->run_head)) {
        if (OPAL_UNLIKELY(m->failed)) {
            qc->peer = m->fail_peer;
            qc->cnt = m->fail_cnt;
            qc->have = m->fail_have;
            qc->need = m->fail_need;
            qc->error = m->fail_error;
            finish(m, qc, (ofl_wait_status_t) m->fail_status);
            worked++;
            continue;
        }
        uint64_t before = call_mark(qc);
        int done = call_progress(qc);
        if (OPAL_UNLIKELY(done < 0)) {
            call_failed(m, qc);
            continue;
        }
        if (done) {
            finish(m, qc, OFL_WAIT_OK);
            worked++;
            if (NULL != m->run_head) {
                head_changed(m);
            }
            continue;
        }
        if (call_mark(qc) != before) {
            worked++;
        }
        break;
    }
    if (0 == worked && NULL != (qc = m->run_head)
        && 0 == (++m->idle & (OFL_IDLE_CHECK_EVERY - 1))) {
        check_head(m, qc);
        if (m->failed) {
            return module_progress(item);
        }
    }
    return worked;
}

/* ---- process and module life --------------------------------------------------- */

void mca_coll_offload_queue_open(void)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    ofl_agent_init(&agent);
    nb_spin = ofl_glue_spin_before_yield(&c->params);
    start_polls = 0;
    if (0 != nb_spin && c->params.start_polls > 0) {
        start_polls = (unsigned) c->params.start_polls;
    }
    if (c->params.agent && ofl_glue_oversubscribed()) {
        /* No core is idle: the agent could only take time from the ranks (np 4 on 2
         * cores: a 32 KiB MPI_Ibcast + MPI_Wait took 36.7 us with it, 13.5 without,
         * libnbc 13.4). */
        opal_output_verbose(1, c->output,
                            "coll:offload: no progress agent (more processes than cores): "
                            "nonblocking collectives progress inside MPI calls");
    } else if (c->params.agent) {
        mca_coll_offload_agent_start(&agent);
        __atomic_store_n(&agent_report_due, mca_coll_offload_agent_report(&agent),
                         __ATOMIC_RELAXED);
    } else {
        opal_output_verbose(1, c->output,
                            "coll:offload: no progress agent (coll_offload_agent=0): "
                            "nonblocking collectives progress inside MPI calls");
    }
    __atomic_store_n(&queue_open, 1, __ATOMIC_RELEASE);
}

void mca_coll_offload_queue_stop(void)
{
    opal_output_verbose(1, mca_coll_offload_component.output,
                        "coll:offload: progress agent: %lu rounds, %lu sleeps",
                        (unsigned long) atomic_load(&agent.rounds),
                        (unsigned long) atomic_load(&agent.sleeps));
    ofl_agent_fini(&agent);
    /* joined: whatever it found is final (a job that ended before it ran) */
    mca_coll_offload_agent_report(&agent);
    __atomic_store_n(&agent_report_due, 0, __ATOMIC_RELAXED);
}

void mca_coll_offload_queue_close(void)
{
    __atomic_store_n(&queue_open, 0, __ATOMIC_RELEASE);
}

void mca_coll_offload_queue_module_init(mca_coll_offload_module_t *m)
{
    ofl_agent_item_init(&m->item, module_progress);
    m->item_linked = 0;
    m->nactive = 0;
    m->incoming = NULL;
    m->run_head = m->run_tail = NULL;
    m->failed = 0;
    m->blocking_call = NULL;
}

void mca_coll_offload_queue_module_fini(mca_coll_offload_module_t *m)
{
    if (m->item_linked && __atomic_load_n(&queue_open, __ATOMIC_ACQUIRE)) {
        ofl_agent_remove(&agent, &m->item);
        m->item_linked = 0;
        if (hot_module == m) {
            hot_module = NULL;
        }
    }
    free(m->blocking_call);
    m->blocking_call = NULL;
}

int mca_coll_offload_queue_module_activate(mca_coll_offload_module_t *m)
{
    if (OPAL_LIKELY(m->item_linked)) {
        return OMPI_SUCCESS;
    }
    if (NULL == m->blocking_call) {
        m->blocking_call = calloc(1, sizeof(*m->blocking_call));
        if (NULL == m->blocking_call) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        m->blocking_call->blocking = 1;
    }
    uint32_t *word, *armed;
    m->nic->ops->bell(m->nic, &word, &armed);
    m->item.bell_word = word;
    m->item.bell_armed = armed;
    ofl_agent_add(&agent, &m->item);
    m->item_linked = 1;
    return OMPI_SUCCESS;
}


/* ---- posting ---------------------------------------------------------------- */

/* A small call on a module with nothing outstanding, whose executor lock this
 * thread gets: fire first, count after. The puts are then on their way before
 * any locked instruction (each would wait for this core's earlier stores to
 * the peers' lines to drain), and a call the peers have already made completes
 * here, without touching the run list, the agent or the done stack. Returns
 * -1, having done nothing, when the slow path must post; 1 when done, 0 when
 * left outstanding. */
static int post_first(mca_coll_offload_module_t *m, mca_coll_offload_qcall_t *qc,
                      const ofl_program_t *prog, const ofl_call_t *call)
{
    if (0 != __atomic_load_n(&m->nactive, __ATOMIC_ACQUIRE)
        || !ofl_agent_item_trylock(&m->item)) {
        return -1;
    }
    if (0 != __atomic_load_n(&m->nactive, __ATOMIC_ACQUIRE)) {
        ofl_agent_item_unlock(&m->item);
        return -1;
    }
    call_post(m, qc, prog, call);
    int done = call_progress(qc);
    /* Peers that are already in the call answer within a few line transfers:
     * waiting that long here costs less than the bookkeeping (and the wait
     * call's progress rounds) of a call left outstanding. */
    for (unsigned k = 0; 0 == done && k < start_polls; ++k) {
        done = call_progress(qc);
    }
    if (done > 0) {
        ofl_agent_item_unlock(&m->item);
        qc->done = 1;
        return 1;
    }
    /* Outstanding (or failed: module_progress reports it): the run list is
     * empty, and ours while we hold the lock. */
    __atomic_fetch_add(&m->nactive, 1, __ATOMIC_ACQ_REL);
    ofl_agent_count_in(&agent, 1);
    qc->next = NULL;
    m->run_head = m->run_tail = qc;
    head_changed(m);
    ofl_agent_item_unlock(&m->item);
    ofl_agent_wake(&agent);
    if (!opal_using_threads()) {
        hot_module = m;
    }
    return 0;
}

/* A posted call joins the module's outstanding ones (through the incoming
 * stack: no executor lock needed) and is handed to the executors. */
static void enqueue(mca_coll_offload_module_t *m, mca_coll_offload_qcall_t *qc, int large)
{
    __atomic_fetch_add(&m->nactive, 1, __ATOMIC_ACQ_REL);
    mca_coll_offload_qcall_t *top = __atomic_load_n(&m->incoming, __ATOMIC_RELAXED);
    do {
        qc->next = top;
    } while (!__atomic_compare_exchange_n(&m->incoming, &top, qc, 1, __ATOMIC_RELEASE,
                                          __ATOMIC_RELAXED));
    ofl_agent_count_in(&agent, 1);
    if (!opal_using_threads()) {
        hot_module = m;
    }
    if (large) {
        ofl_agent_kick(&agent);
        return;
    }
    ofl_agent_item_try(&m->item);
    if (!qc->blocking && !__atomic_load_n(&qc->done, __ATOMIC_ACQUIRE)) {
        ofl_agent_wake(&agent);
    }
}

/* A board call on a module with nothing outstanding, posted: look for the
 * peers' payloads at once. No executor lock: with nothing outstanding no
 * executor touches the module, and the call reaches them (enqueue) only if it
 * is not done here. 1 when done. */
static int board_first(mca_coll_offload_module_t *m, mca_coll_offload_qcall_t *qc)
{
    int done = call_progress(qc);
    for (unsigned k = 0; 0 == done && k < start_polls; ++k) {
        done = call_progress(qc);
    }
    if (done > 0) {
        qc->done = 1;
        return 1;
    }
    enqueue(m, qc, 0);
    return 0;
}

int mca_coll_offload_queue_post(mca_coll_offload_module_t *m, mca_coll_offload_qcall_t *qc,
                                const ofl_program_t *prog, const ofl_call_t *call)
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
    if (qc->board && !qc->blocking && 0 == __atomic_load_n(&m->nactive, __ATOMIC_ACQUIRE)) {
        call_post(m, qc, NULL, call);
        return board_first(m, qc);
    }
    int large = !qc->blocking && ofl_agent_started(&agent)
                && call->count * call->elem > POST_FIRE_MAX;
    ofl_call_t c = *call;
    c.ring = large;
    if (!large && !qc->blocking) {
        int done = post_first(m, qc, prog, &c);
        if (done >= 0) {
            return done;
        }
    }
    call_post(m, qc, prog, &c);
    enqueue(m, qc, large);
    return 0;
}

void mca_coll_offload_queue_board_prepare(mca_coll_offload_module_t *m,
                                          mca_coll_offload_qcall_t *qc, const ofl_call_t *call)
{
    ofl_board_prepare(&qc->bc, m->nic, 0, call->send, call->recv, call->count,
                      call->elem, call->fn);
}

int mca_coll_offload_queue_board_repost(mca_coll_offload_module_t *m,
                                        mca_coll_offload_qcall_t *qc, const ofl_call_t *call)
{
    /* Only the call number changes from start to start. */
    qc->status = OFL_WAIT_OK;
    qc->done = 0;
    ofl_board_sign(&qc->bc, call->sig, call->callno);
    ofl_board_rearm(&m->board_state, &qc->bc);
    return board_first(m, qc);
}

/* ---- the blocking slow path --------------------------------------------------- */

ofl_wait_status_t mca_coll_offload_queue_blocking(mca_coll_offload_module_t *m,
                                                  const ofl_program_t *prog,
                                                  const ofl_call_t *call, int board,
                                                  int board_root, int *peer, int *cnt,
                                                  uint64_t *have, int64_t *need, int *error)
{
    mca_coll_offload_qcall_t *qc = m->blocking_call;
    qc->board = board;
    qc->board_root = board_root;
    mca_coll_offload_queue_post(m, qc, prog, call);
    unsigned spin = ofl_glue_spin_before_yield(&mca_coll_offload_component.params);
    for (unsigned long iter = 1;; ++iter) {
        ofl_agent_item_try(&m->item);
        if (__atomic_load_n(&qc->done, __ATOMIC_ACQUIRE)) {
            break;
        }
        if (0 == (iter & (OFL_IDLE_CHECK_EVERY - 1))) {
            opal_progress();
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

void mca_coll_offload_queue_push_done(mca_coll_offload_qcall_t *qc)
{
    mca_coll_offload_qcall_t *top = __atomic_load_n(&done_stack, __ATOMIC_RELAXED);
    do {
        qc->next = top;
    } while (!__atomic_compare_exchange_n(&done_stack, &top, qc, 1, __ATOMIC_RELEASE,
                                          __ATOMIC_RELAXED));
}

/* Execute a round (unless the agent is at it); the calls this thread finished
 * are returned in *head..*tail. Returns the number of calls that moved. */
static int app_round(mca_coll_offload_qcall_t **head, mca_coll_offload_qcall_t **tail)
{
    static unsigned idle_streak;   /* racy across threads: only a hint */
    static unsigned calls;         /* idem */
    int n = 0;
    tls_app = 1;
    mca_coll_offload_module_t *h = hot_module;
    if (NULL != h && 0 != (++calls & 15) && 0 != __atomic_load_n(&h->nactive, __ATOMIC_ACQUIRE)
        && ofl_agent_item_trylock(&h->item)) {
        /* MPI_Wait on the last call posted: poll its communicator only,
         * without the agent's list lock (two more locked instructions per
         * poll). Every 16th call, and whenever that module is busy, all. */
        ofl_agent_host_round(&agent);
        n += module_progress(&h->item);
        ofl_agent_item_unlock(&h->item);
    } else {
        n += ofl_agent_run(&agent);
    }
    tls_app = 0;
    *head = tls_done_head;
    *tail = NULL != tls_done_head ? tls_done_tail : NULL;
    tls_done_head = tls_done_tail = NULL;
    if (0 != n) {
        idle_streak = 0;
    } else if (NULL == __atomic_load_n(&done_stack, __ATOMIC_RELAXED)
               && ++idle_streak > nb_spin) {
        /* An application thread spinning in MPI_Wait would keep off its core
         * whatever the work waits for: the agent of this or another rank,
         * preempted there (Open MPI's wait loop itself never yields). */
        sched_yield();
    }
    return n;
}

int mca_coll_offload_queue_progress(mca_coll_offload_qcall_t **done)
{
    mca_coll_offload_qcall_t *head = NULL, *tail = NULL;
    int n = 0;
    if (OPAL_UNLIKELY(__atomic_load_n(&agent_report_due, __ATOMIC_RELAXED))) {
        __atomic_store_n(&agent_report_due, mca_coll_offload_agent_report(&agent),
                         __ATOMIC_RELAXED);
    }
    if (ofl_agent_pending(&agent) > 0) {
        n = app_round(&head, &tail);
    }
    *done = head;
    if (NULL == __atomic_load_n(&done_stack, __ATOMIC_RELAXED)) {
        return n;
    }
    /* The stack holds the newest first: reversed into completion order, after
     * this thread's own. */
    mca_coll_offload_qcall_t *qc = __atomic_exchange_n(&done_stack, NULL, __ATOMIC_ACQUIRE);
    mca_coll_offload_qcall_t *fifo = NULL;
    while (NULL != qc) {
        mca_coll_offload_qcall_t *next = qc->next;
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
