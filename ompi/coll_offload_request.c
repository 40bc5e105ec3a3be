/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the MPI requests of nonblocking and persistent collectives.
 *
 * A request holds one call of the execution queue (engine/queue.h),
 * which runs it; this file makes, starts, completes and frees requests.
 *
 * Completion. Only the opal_progress callback, in an application thread,
 * completes MPI requests (ompi_request_complete is not safe from another
 * thread unless MPI runs THREAD_MULTIPLE): it collects the calls the executors
 * finished. A request freed while running (MPI_Request_free) is claimed by
 * whoever comes first: the free defers, the callback then recycles it instead
 * of completing it.
 *
 * Request objects come from one free list that only grows; each holds a
 * reference on its module while in use, so a communicator freed with calls in
 * flight keeps its NIC until they end.
 */
#include "coll_offload_request.h"
#include "coll_offload_decide.h"
#include "coll_offload_exec.h"
#include "coll_offload_inject.h"
#include "coll_offload_nb.h"

#include <sched.h>
#include <stddef.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

/* The peer of a request's failure that was refused at its start: its
 * communicator is broken by an earlier mismatch. */
#define REFUSED (-2)

/* A wrapped request of the layer below (stuck): fell back when it was made
 * (counted then), wrapped only so that its starts are recorded. */
#define STUCK_AT_INIT 2

/* Who finishes a running request: the completer, or MPI_Request_free first. */
enum {
    CLAIM_NONE = 0,
    CLAIM_COMPLETE,
    CLAIM_FREED
};

typedef struct mca_coll_offload_req {
    /* The nonblocking-collective request of coll/base: MPI_I<coll> stores the
     * datatypes and ops it retains for us in it. */
    ompi_coll_base_nbc_request_t super;
    ofl_qcall_t qc;         /* its call on the execution queue */
    mca_coll_offload_module_t *module;   /* retained while the request is in use */
    struct mca_coll_offload_req *next;   /* the idle list */
    ofl_req_kind_t kind;
    ofl_coll_t coll;
    ofl_atomic_int32_t claim; /* CLAIM_*: the completer and MPI_Request_free race for it */
    /* What every MPI_Start posts again (persistent). */
    const ofl_program_t *prog;
    ofl_call_t call;
    uint64_t sig;             /* a persistent request's signature, recorded at each start */
    /* Non-contiguous bcast: the root packs at post, the others unpack when
     * the request completes (in an application thread). */
    int staged;
    int root;
    void *buf;
    ofl_count_t count;
    struct ompi_datatype_t *dtype;   /* retained while staged */
    size_t bytes;
    void *stage;                     /* grows only, kept with the object */
    size_t stage_bytes;
    /* A persistent request of the layer below (`inner`) that runs each start;
     * `stuck`: 1 once the NIC failed, or STUCK_AT_INIT. */
    ompi_request_t *inner;
    int stuck;
    size_t inner_bytes;
} mca_coll_offload_req_t;

static void req_construct(mca_coll_offload_req_t *r)
{
    r->module = NULL;
    r->next = NULL;
    r->dtype = NULL;
    r->stage = NULL;
    r->stage_bytes = 0;
    r->inner = NULL;
}

static void req_destruct(mca_coll_offload_req_t *r)
{
    free(r->stage);
    r->stage = NULL;
}

OBJ_CLASS_INSTANCE(mca_coll_offload_req_t, ompi_coll_base_nbc_request_t, req_construct,
                   req_destruct);

/* Idle request objects: a list that only grows (objects are made when it is
 * empty and come back when freed), under a mutex that only application
 * threads take. */
static mca_coll_offload_req_t *idle_reqs;
static opal_mutex_t idle_lock = OPAL_MUTEX_STATIC_INIT;

static ofl_atomic_int32_t nb_active;           /* set up (queue, progress callback) */
static opal_mutex_t nb_lock = OPAL_MUTEX_STATIC_INIT;   /* application threads only */
static ofl_atomic_int32_t cancel_warned;

static const char *const nb_names[OFL_COLL_COUNT] = {
    "MPI_Iallreduce", "MPI_Ireduce", "MPI_Ibcast", "MPI_Ibarrier"
};
static const char *const p_names[OFL_COLL_COUNT] = {
    "persistent MPI_Allreduce", "persistent MPI_Reduce", "persistent MPI_Bcast",
    "persistent MPI_Barrier"
};

const char *mca_coll_offload_request_name(ofl_req_kind_t kind, ofl_coll_t coll)
{
    return OFL_REQ_PERSISTENT == kind ? p_names[coll] : nb_names[coll];
}

static inline mca_coll_offload_req_t *req_of(ofl_qcall_t *qc)
{
    return (mca_coll_offload_req_t *) ((char *) qc - offsetof(mca_coll_offload_req_t, qc));
}

static int nb_progress(void);

static mca_coll_offload_req_t *req_alloc(void)
{
    OPAL_THREAD_LOCK(&idle_lock);
    mca_coll_offload_req_t *r = idle_reqs;
    if (NULL != r) {
        idle_reqs = r->next;
    }
    OPAL_THREAD_UNLOCK(&idle_lock);
    if (NULL == r) {
        r = OBJ_NEW(mca_coll_offload_req_t);
    }
    return r;
}

static void req_return(mca_coll_offload_req_t *r)
{
    OPAL_THREAD_LOCK(&idle_lock);
    r->next = idle_reqs;
    idle_reqs = r;
    OPAL_THREAD_UNLOCK(&idle_lock);
}

/* Once per process, at the first nonblocking or persistent call. */
static void nb_activate(void)
{
    if (OPAL_LIKELY(nb_active)) {
        opal_atomic_rmb();   /* what the thread that set it up wrote */
        return;
    }
    OPAL_THREAD_LOCK(&nb_lock);
    if (!nb_active) {
        mca_coll_offload_agent_open();
        opal_progress_register(nb_progress);
        opal_atomic_wmb();
        nb_active = 1;
    }
    OPAL_THREAD_UNLOCK(&nb_lock);
}

/* Component close: stop the agent, unregister the progress callback. */
void mca_coll_offload_nb_close(void)
{
    if (!nb_active) {
        return;
    }
    opal_atomic_rmb();
    mca_coll_offload_agent_close();
    opal_progress_unregister(nb_progress);
    /* Complete what finished after the application's last MPI call. */
    nb_progress();
    ofl_queue_close();
    opal_atomic_wmb();
    nb_active = 0;
    while (NULL != idle_reqs) {
        mca_coll_offload_req_t *r = idle_reqs;
        idle_reqs = r->next;
        OBJ_RELEASE(r);
    }
}

static int req_free(ompi_request_t **rptr);
static int req_cancel(ompi_request_t *q, int flag);
static int req_start(size_t count, ompi_request_t **requests);

static mca_coll_offload_req_t *req_get(mca_coll_offload_module_t *m,
                                       struct ompi_communicator_t *comm, ofl_req_kind_t kind,
                                       ofl_coll_t coll)
{
    mca_coll_offload_req_t *r = req_alloc();
    if (NULL == r) {
        return NULL;
    }
    ompi_request_t *q = &r->super.super;
    int persistent = OFL_REQ_PERSISTENT == kind;
    OMPI_REQUEST_INIT(q, persistent);
    q->req_type = OMPI_REQUEST_COLL;
    q->req_mpi_object.comm = comm;
    q->req_status = ompi_status_empty;
    q->req_start = persistent ? req_start : NULL;
    q->req_free = req_free;
    q->req_cancel = req_cancel;
    /* MPI_I<coll> may have hooked the previous user's retained objects here. */
    r->super.cb.req_complete_cb = NULL;
    r->super.req_complete_cb_data = NULL;
    OFL_NBC_RETAINED(&r->super)[0] = NULL;
    OFL_NBC_RETAINED(&r->super)[1] = NULL;
    r->kind = kind;
    r->coll = coll;
    r->claim = CLAIM_NONE;
    r->qc.done = 0;
    r->qc.next = NULL;
    r->qc.blocking = 0;
    r->qc.status = OFL_WAIT_OK;
    r->qc.board = 0;
    r->staged = 0;
    r->dtype = NULL;
    r->inner = NULL;
    r->stuck = 0;
    r->module = m;
    OBJ_RETAIN(m);
    return r;
}

static void drop_inner(mca_coll_offload_req_t *r)
{
    if (NULL != r->inner) {
        /* Its completion may still be returning in another thread. */
        while (OMPI_REQUEST_ACTIVE == r->inner->req_state && !REQUEST_COMPLETE(r->inner)) {
            sched_yield();
        }
        ompi_request_free(&r->inner);
        r->inner = NULL;
    }
}

static void recycle(mca_coll_offload_req_t *r)
{
    OMPI_REQUEST_FINI(&r->super.super);
    if (NULL != r->dtype) {
        OBJ_RELEASE(r->dtype);
        r->dtype = NULL;
    }
    drop_inner(r);
    mca_coll_offload_module_t *m = r->module;
    r->module = NULL;
    req_return(r);
    /* Last: this may be the last reference to the communicator's module. */
    OBJ_RELEASE(m);
}

/* Staging for a non-contiguous bcast; grows only. Returns 0 or -1. */
static int stage_prepare(mca_coll_offload_req_t *r, void *buf, ofl_count_t count,
                         struct ompi_datatype_t *dtype, int root, size_t bytes)
{
    if (r->stage_bytes < bytes) {
        void *p = NULL;
        if (!mca_coll_offload_inject(OFL_INJECT_STAGE, r->module->rank)) {
            p = realloc(r->stage, bytes);
        }
        if (NULL == p) {
            return -1;
        }
        r->stage = p;
        r->stage_bytes = bytes;
    }
    r->staged = 1;
    r->buf = buf;
    r->count = count;
    r->root = root;
    r->bytes = bytes;
    r->dtype = dtype;
    OBJ_RETAIN(dtype);
    r->call.send = r->call.recv = r->stage;
    return 0;
}

/* ---- completion (application threads only) ------------------------------------ */

/* The request's MPI error from how its call ended (and the message of a
 * failure); a staged bcast is unpacked here. */
static void complete_status(mca_coll_offload_req_t *r)
{
    ompi_request_t *q = &r->super.super;
    mca_coll_offload_module_t *m = r->module;
    ofl_qcall_t *qc = &r->qc;
    const char *what = mca_coll_offload_request_name(r->kind, r->coll);
    if (OPAL_UNLIKELY(OFL_WAIT_MISMATCH == qc->status && REFUSED == qc->peer)) {
        q->req_status.MPI_ERROR = mca_coll_offload_refuse(m, what, q->req_mpi_object.comm);
    } else if (OPAL_UNLIKELY(OFL_WAIT_OK != qc->status)) {
        q->req_status.MPI_ERROR = OFL_WAIT_MISMATCH == qc->status ? MPI_ERR_ARG : MPI_ERR_OTHER;
        mca_coll_offload_report(m, what, q->req_mpi_object.comm, qc->status, qc->peer, qc->cnt,
                                qc->have, qc->need, qc->error);
    } else if (r->staged && m->rank != r->root
               && 0 != mca_coll_offload_stage(r->stage, r->buf, r->count, r->dtype, r->bytes,
                                              0)) {
        q->req_status.MPI_ERROR = MPI_ERR_INTERN;
    }
}

/* `signal`: whether a thread may be waiting on it (ompi_request_complete's
 * with_signal); 0 only while the call that started it has not returned. */
static void complete(mca_coll_offload_req_t *r, int signal)
{
    ompi_request_t *q = &r->super.super;
    complete_status(r);
    if (!opal_using_threads()) {
        /* One application thread at a time: nobody frees it meanwhile (a
         * locked instruction less matters on the path of a call that completes
         * at its post). Completion always signals: MPI_Waitall waits on a sync
         * object even then. */
        if (CLAIM_FREED != r->claim) {
            r->claim = CLAIM_COMPLETE;
            ompi_request_complete(q, signal);
            return;
        }
    } else {
        int32_t expect = CLAIM_NONE;
        if (opal_atomic_compare_exchange_strong_32(&r->claim, &expect, CLAIM_COMPLETE)) {
            ompi_request_complete(q, true);
            return;
        }
    }
    /* Freed by the application while it ran: nobody waits for it. Completing it
     * still runs the callback that releases what MPI_I<coll> retained. */
    ompi_request_complete(q, true);
    recycle(r);
}

/* The opal_progress callback: execute (unless the agent is at it) and complete
 * the requests whose calls are done. */
static int nb_progress(void)
{
    ofl_qcall_t *done;
    mca_coll_offload_agent_poll();
    int n = ofl_queue_progress(&done);
    while (NULL != done) {
        ofl_qcall_t *next = done->next;
        done->next = NULL;
        complete(req_of(done), 1);
        done = next;
    }
    return n;
}

/* ---- starting (application threads) ------------------------------------------- */

/* Post, or (zero bytes) complete at once. */
static int start_one(mca_coll_offload_req_t *r)
{
    mca_coll_offload_module_t *m = r->module;
    ompi_request_t *q = &r->super.super;
    q->req_state = OMPI_REQUEST_ACTIVE;
    if (r->staged && m->rank == r->root
        && 0 != mca_coll_offload_stage(r->stage, r->buf, r->count, r->dtype, r->bytes, 1)) {
        /* Not posted: whoever waits for our data must fail too. */
        mca_coll_offload_fail_here(m, q->req_mpi_object.comm,
                                   mca_coll_offload_request_name(r->kind, r->coll),
                                   "packing the root's data failed", OMPI_ERROR);
        q->req_status.MPI_ERROR = MPI_ERR_INTERN;
        ompi_request_complete(q, true);
        return OMPI_SUCCESS;
    }
    if (0 == r->call.count && OFL_COLL_BARRIER != r->coll) {
        ompi_request_complete(q, true);
        return OMPI_SUCCESS;
    }
    if (ofl_queue_post(&m->queue, &r->qc, r->prog, &r->call)) {
        /* Done at its post, still inside the call that started it: nobody can
         * wait on it yet, so no signal (a locked exchange, which would wait
         * here for this core's store to its board line to reach the peers). */
        complete(r, 0);
    }
    return OMPI_SUCCESS;
}

int mca_coll_offload_request_make(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                                  ofl_req_kind_t kind, ofl_coll_t coll, const ofl_program_t *prog,
                                  int board, const ofl_call_t *call, void *buf, ofl_count_t count,
                                  struct ompi_datatype_t *dtype, int root, ompi_request_t **request)
{
    const char *what = mca_coll_offload_request_name(kind, coll);
    nb_activate();
    if (0 != ofl_queue_activate(&m->queue, m->nic, &m->edges, &m->board_state)) {
        return mca_coll_offload_fail_here(m, comm, what, "cannot allocate a request",
                                          OMPI_ERR_OUT_OF_RESOURCE);
    }
    mca_coll_offload_req_t *r = req_get(m, comm, kind, coll);
    if (NULL == r) {
        return mca_coll_offload_fail_here(m, comm, what, "cannot allocate a request",
                                          OMPI_ERR_OUT_OF_RESOURCE);
    }
    r->prog = prog;
    r->qc.board = board;
    r->call = *call;
    r->sig = call->sig;
    if (board && OFL_REQ_PERSISTENT == kind) {
        ofl_queue_board_prepare(&m->queue, &r->qc, call);
    }
    if (NULL != buf && 0 != stage_prepare(r, buf, count, dtype, root, call->count)) {
        /* The other ranks may already have posted: an out-of-resource error
         * here, and every rank waiting on this one fails too (not a watchdog
         * wait, not a silent divergence). */
        recycle(r);
        return mca_coll_offload_fail_here(m, comm, what, "cannot allocate the staging buffer",
                                          OMPI_ERR_OUT_OF_RESOURCE);
    }
    *request = &r->super.super;
    if (OFL_REQ_PERSISTENT == kind) {
        return OMPI_SUCCESS;
    }
    return start_one(r);
}

/* ---- persistent requests of the layer below ---------------------------------- */

/* The layer below's request completed (in whatever thread progressed it): the
 * wrapper completes in the progress callback, like an offloaded one. */
static int inner_done(ompi_request_t *inner)
{
    mca_coll_offload_req_t *r = (mca_coll_offload_req_t *) inner->req_complete_cb_data;
    r->super.super.req_status.MPI_ERROR = inner->req_status.MPI_ERROR;
    r->qc.status = OFL_WAIT_OK;
    ofl_queue_push_done(&r->qc);
    return 0;
}

static int inner_start(mca_coll_offload_req_t *r)
{
    mca_coll_offload_module_t *m = r->module;
    ompi_request_t *q = &r->super.super;
    int why = OFL_R_UNSET;
    if (OFL_MOD_DISABLED == m->state) {
        opal_atomic_rmb();   /* what the thread that disabled it wrote before */
        r->stuck = 1;
        why = OFL_R_NIC;
    }
    if (STUCK_AT_INIT != r->stuck) {
        mca_coll_offload_note(OFL_KIND_PERSISTENT, r->coll, why, r->inner_bytes,
                              q->req_mpi_object.comm);
    }
    q->req_state = OMPI_REQUEST_ACTIVE;
    if (OMPI_REQUEST_NOOP == r->inner->req_type) {
        /* The layer below's request has nothing to run and no start function
         * (libnbc makes such a persistent request for a communicator of one
         * rank): MPI_Start only activates it, complete, so the start completes
         * at once. Still inside MPI_Start: nobody waits on it yet, no signal
         * needed. */
        r->qc.status = OFL_WAIT_OK;
        complete(r, 0);
        return OMPI_SUCCESS;
    }
    r->inner->req_complete_cb = inner_done;
    r->inner->req_complete_cb_data = r;
    ompi_request_t *inner = r->inner;
    return inner->req_start(1, &inner);
}

int mca_coll_offload_request_wrap(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                                  ofl_coll_t coll, ompi_request_t *inner, uint64_t sig,
                                  size_t bytes, ompi_request_t **request)
{
    nb_activate();
    mca_coll_offload_req_t *r = req_get(m, comm, OFL_REQ_PERSISTENT, coll);
    if (NULL == r) {
        ompi_request_free(&inner);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    r->inner = inner;
    r->stuck = STUCK_AT_INIT;
    r->prog = NULL;
    r->sig = sig;
    r->inner_bytes = bytes;
    *request = &r->super.super;
    return OMPI_SUCCESS;
}

/* ---- request callbacks ------------------------------------------------------- */

static int req_free(ompi_request_t **rptr)
{
    mca_coll_offload_req_t *r = (mca_coll_offload_req_t *) *rptr;
    ompi_request_t *q = &r->super.super;
    int running = !REQUEST_COMPLETE(q)
                  && (!q->req_persistent || OMPI_REQUEST_ACTIVE == q->req_state);
    if (running) {
        int32_t expect = CLAIM_NONE;
        if (opal_atomic_compare_exchange_strong_32(&r->claim, &expect, CLAIM_FREED)) {
            /* The completer recycles it when it ends. */
            *rptr = MPI_REQUEST_NULL;
            return OMPI_SUCCESS;
        }
        /* Another thread is completing it right now. */
        while (!REQUEST_COMPLETE(q)) {
            sched_yield();
        }
    }
    recycle(r);
    *rptr = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

/* MPI-3.1 §5.12: cancelling a request of a nonblocking collective is erroneous.
 * Say so (once) and leave the request running: it completes normally. */
static int req_cancel(ompi_request_t *q, int flag)
{
    (void) flag;
    if (!opal_atomic_swap_32(&cancel_warned, 1)) {
        opal_show_help(OFL_GLUE_HELP_FILE, "cancel-collective", true,
                       q->req_mpi_object.comm->c_name);
    }
    return MPI_ERR_REQUEST;
}

/* A start that cannot run on the NIC: refused (a mismatch broke the
 * communicator: peer REFUSED), or a fault stopped the NIC after the request was
 * made. It completes at once with that status. */
static void start_failed(mca_coll_offload_req_t *r, int refused)
{
    mca_coll_offload_module_t *m = r->module;
    ofl_qcall_t *qc = &r->qc;
    r->super.super.req_state = OMPI_REQUEST_ACTIVE;
    if (refused) {
        qc->status = OFL_WAIT_MISMATCH;
        qc->peer = REFUSED;
    } else {
        ofl_queue_fail_call(&m->queue, qc);
    }
    complete(r, 1);
}

/* One MPI_Start of a persistent request that is not active. */
static int start_persistent(mca_coll_offload_req_t *r)
{
    ompi_request_t *q = &r->super.super;
    mca_coll_offload_module_t *m = r->module;
    q->req_complete = REQUEST_PENDING;
    q->req_status.MPI_ERROR = MPI_SUCCESS;
    r->claim = CLAIM_NONE;
    /* Every start is a call: recorded before anything can wait. */
    int64_t callno = mca_coll_offload_begin(m, r->sig);
    if (OPAL_UNLIKELY(callno < 0)) {
        start_failed(r, 1);
        return OMPI_SUCCESS;
    }
    if (OPAL_UNLIKELY(NULL != r->inner)) {
        int rc = inner_start(r);
        if (OMPI_SUCCESS != rc) {
            q->req_complete = REQUEST_COMPLETED;
        }
        return rc;
    }
    r->call.callno = (uint64_t) callno;
    mca_coll_offload_note_offload(OFL_KIND_PERSISTENT, r->coll, r->call.count * r->call.elem,
                                  q->req_mpi_object.comm);
    ofl_mod_state_t st = m->state;
    if (r->qc.board && OFL_MOD_READY == st && 0 == ofl_queue_active(&m->queue)) {
        q->req_state = OMPI_REQUEST_ACTIVE;
        if (ofl_queue_board_repost(&m->queue, &r->qc, &r->call)) {
            complete(r, 0);   /* as in start_one */
        }
        return OMPI_SUCCESS;
    }
    if (OPAL_UNLIKELY(OFL_MOD_READY != st)) {
        start_failed(r, 0);
        return OMPI_SUCCESS;
    }
    return start_one(r);
}

static int req_start(size_t count, ompi_request_t **requests)
{
    for (size_t i = 0; i < count; ++i) {
        mca_coll_offload_req_t *r = (mca_coll_offload_req_t *) requests[i];
        ompi_request_t *q = &r->super.super;
        if (OMPI_REQUEST_ACTIVE == q->req_state && !REQUEST_COMPLETE(q)) {
            return MPI_ERR_REQUEST;   /* started twice: erroneous */
        }
        int rc = start_persistent(r);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    return OMPI_SUCCESS;
}
