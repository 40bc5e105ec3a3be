/*
 * coll/offload — nonblocking and persistent collectives, and the progress agent.
 *
 * MPI_Iallreduce, MPI_Ireduce, MPI_Ibcast, MPI_Ibarrier and the persistent
 * MPIX_*_init forms run the programs the blocking calls run, with the same
 * decisions. A call is an instance (ofl_inst_t, inside a request object);
 * posting it advances the communicator's edge sequences as a blocking call
 * would, so all kinds interleave in whatever order the application calls them.
 *
 * Who executes. Each module keeps its posted instances in post order, and one
 * thread at a time executes them, holding the module's executor lock (the
 * agent item's try-lock): the progress agent (one thread per process, started
 * at the first nonblocking post, asleep while nothing is outstanding), or an
 * application thread inside MPI (opal_progress in MPI_Wait/Test, or a blocking
 * call queued behind nonblocking ones). Only the oldest unfinished instance of
 * a module runs: instances share the edges, and a later one consuming items
 * before an earlier one would hand back credits for slots the earlier one has
 * not read yet. All ranks post in the same order, so this never deadlocks.
 *
 * Completion. The executor marks an instance done and pushes it onto a
 * lock-free stack; only the opal_progress callback, in an application thread,
 * completes MPI requests (ompi_request_complete is not safe from another
 * thread unless MPI runs THREAD_MULTIPLE). A request freed while running
 * (MPI_Request_free) is claimed by whoever comes first: the free defers, the
 * callback then recycles it instead of completing it.
 *
 * Request objects come from one free list that only grows; each holds a
 * reference on its module while in use, so a communicator freed with calls in
 * flight keeps its NIC until they end.
 */
#include "coll_offload.h"

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "glue.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/request/request.h"
#include "opal/mca/hwloc/base/base.h"
#include "coll_offload_compat.h"
#include "opal/runtime/opal.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

typedef enum {
    REQ_NONBLOCKING,
    REQ_PERSISTENT,
    REQ_BLOCKING     /* a blocking call queued behind nonblocking ones */
} req_kind_t;

/* The peer of a request's failure that was refused at its start: its
 * communicator is broken by an earlier mismatch. */
#define REFUSED (-2)

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
    ofl_inst_t inst;
    /* A board call (engine/board.h) instead of a program instance: small
     * allreduces and barriers whose policy says board. Posted only when it
     * heads the module's run list, i.e. once every earlier call is done, as
     * the board requires. */
    int board;
    ofl_board_call_t bc;
    mca_coll_offload_module_t *module;   /* retained while the request is in use */
    struct mca_coll_offload_req *next;   /* incoming stack, run list, done stack */
    req_kind_t kind;
    ofl_coll_t coll;
    int done;                 /* atomic: the executor's last word */
    int claim;                /* atomic: CLAIM_* */
    ofl_wait_status_t status; /* with peer..error, written before done */
    int error;
    int peer;
    int cnt;
    uint64_t have;
    int64_t need;
    /* What every MPI_Start posts again (persistent). */
    const ofl_program_t *prog;
    ofl_call_t call;
    uint64_t sig;             /* a persistent request's signature, recorded at each start */
    /* Non-contiguous bcast: the root packs at post, the others unpack when
     * the request completes (in an application thread). */
    int staged;
    int root;
    void *buf;
    int count;
    struct ompi_datatype_t *dtype;   /* retained while staged */
    size_t bytes;
    void *stage;                     /* grows only, kept with the object */
    size_t stage_bytes;
    /* Persistent, made before the communicator's NIC was set up: the
     * fallback's request (`inner`) runs each start until a start finds the
     * NIC ready; the arguments are kept (op and datatype retained) to decide
     * then. `stuck`: that decision (or a NIC that failed) keeps the fallback
     * for good. */
    ompi_request_t *inner;
    int stuck;                /* 1, or STUCK_AT_INIT: fell back when it was made (counted
                                 then), wrapped only so that its starts are recorded */
    const void *d_sbuf;
    void *d_rbuf;
    int d_count;
    int d_root;
    struct ompi_datatype_t *d_dtype;
    struct ompi_op_t *d_op;
} mca_coll_offload_req_t;

static void req_construct(mca_coll_offload_req_t *r)
{
    r->module = NULL;
    r->next = NULL;
    r->dtype = NULL;
    r->stage = NULL;
    r->stage_bytes = 0;
    r->inner = NULL;
    r->d_dtype = NULL;
    r->d_op = NULL;
}

static void req_destruct(mca_coll_offload_req_t *r)
{
    free(r->stage);
    r->stage = NULL;
}

OBJ_CLASS_INSTANCE(mca_coll_offload_req_t, ompi_coll_base_nbc_request_t, req_construct,
                   req_destruct);

static ofl_agent_t agent;
/* Idle request objects: a list that only grows (objects are made when it is
 * empty and come back when freed), under a mutex that only application
 * threads take. */
static mca_coll_offload_req_t *idle_reqs;
static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
/* Nonblocking calls up to this many bytes fire their first descriptors in the
 * posting thread; larger ones leave all the work to the agent and ring
 * doorbells (see post()). */
#define POST_FIRE_MAX 16384

/* Unproductive progress calls in a row, while work is outstanding, before
 * they start yielding (coll_offload_spin; 0 when oversubscribed). */
static unsigned nb_spin;

/* Polls a small call makes in its posting call (coll_offload_start_polls; 0
 * when oversubscribed, where the peers need this core to arrive at all). */
static unsigned start_polls;

static int nb_active;                          /* atomic: set up (free list, agent) */
static pthread_mutex_t nb_lock = PTHREAD_MUTEX_INITIALIZER;
static mca_coll_offload_req_t *done_stack;     /* atomic LIFO, newest first */
/* Requests an application thread finished while executing inside MPI
 * (nb_progress): it completes them itself after its round, without the shared
 * done stack's locked instructions. */
static __thread int tls_app;
static __thread mca_coll_offload_req_t *tls_done_head, *tls_done_tail;
/* Without MPI threads: the module of the last call left outstanding at post,
 * which an MPI_Wait most likely waits for. Only the one application thread
 * reads or writes it; a module clears it when it goes. */
static mca_coll_offload_module_t *hot_module;
static hwloc_bitmap_t agent_set;               /* where the agent runs; NULL: as born */
static int cancel_warned;

static const char *const nb_names[OFL_COLL_COUNT] = {
    "MPI_Iallreduce", "MPI_Ireduce", "MPI_Ibcast", "MPI_Ibarrier"
};
static const char *const p_names[OFL_COLL_COUNT] = {
    "persistent MPI_Allreduce", "persistent MPI_Reduce", "persistent MPI_Bcast",
    "persistent MPI_Barrier"
};


static inline mca_coll_offload_module_t *module_of(ofl_agent_item_t *item)
{
    return (mca_coll_offload_module_t *) ((char *) item
                                          - offsetof(mca_coll_offload_module_t, item));
}

/* ---- the executor (agent or application thread, under the module's lock) --- */

/* Run a posted call (program instance or board call): 1 done, 0 not yet, -1
 * failed. */
static inline int inst_progress(mca_coll_offload_req_t *r)
{
    return r->board ? ofl_board_progress(&r->bc) : ofl_engine_progress(&r->inst);
}

/* Prepare a call for execution on m (nothing moves yet for a board call). */
static inline void inst_post(mca_coll_offload_module_t *m, mca_coll_offload_req_t *r,
                             const ofl_program_t *prog, const ofl_call_t *call)
{
    if (r->board) {
        ofl_board_prepare(&r->bc, &m->nic.base, ++m->board_seq, call->send, call->recv,
                          call->count, call->elem, call->fn);
        ofl_board_sign(&r->bc, call->sig, call->callno);
    } else {
        ofl_engine_post(&r->inst, prog, &m->nic.base, &m->edges, call);
    }
}

static inline uint64_t cursor_sum(const ofl_inst_t *inst);

/* A number that grows whenever a posted call moves (the executor's idle test). */
static inline uint64_t inst_mark(const mca_coll_offload_req_t *r)
{
    return r->board ? (uint64_t) (r->bc.posted + r->bc.missing) : cursor_sum(&r->inst);
}

static inline uint64_t cursor_sum(const ofl_inst_t *inst)
{
    uint64_t s = 0;
    for (int q = 0; q < OFL_PROG_MAX_QUEUES; ++q) {
        s += inst->cursor[q];
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

/* r leaves the run list. The module's count drops before anyone can see r done:
 * an application thread that then finds nothing outstanding takes the blocking
 * fast path, and we touch the NIC no more in this call. */
static void finish(mca_coll_offload_module_t *m, mca_coll_offload_req_t *r,
                   ofl_wait_status_t st)
{
    m->run_head = r->next;
    if (NULL == m->run_head) {
        m->run_tail = NULL;
    }
    r->next = NULL;
    r->status = st;
    __atomic_fetch_sub(&m->nactive, 1, __ATOMIC_RELEASE);
    if (REQ_BLOCKING == r->kind) {
        __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
    } else if (tls_app) {
        r->done = 1;
        if (NULL == tls_done_head) {
            tls_done_head = r;
        } else {
            tls_done_tail->next = r;
        }
        tls_done_tail = r;
    } else {
        __atomic_store_n(&r->done, 1, __ATOMIC_RELAXED);
        mca_coll_offload_req_t *top = __atomic_load_n(&done_stack, __ATOMIC_RELAXED);
        do {
            r->next = top;
        } while (!__atomic_compare_exchange_n(&done_stack, &top, r, 1, __ATOMIC_RELEASE,
                                              __ATOMIC_RELAXED));
    }
    ofl_agent_done(&agent, 1);
}

/* The oldest instance has not moved for a while: the same checks a blocking
 * wait makes (ofl_engine_check), every liveness period. */
static void check_head(mca_coll_offload_module_t *m, mca_coll_offload_req_t *r)
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
    ofl_wait_status_t st = r->board ? ofl_board_check(&r->bc, t - m->head_since, watchdog, &peer)
                                    : ofl_engine_check(&r->inst, t - m->head_since, watchdog,
                                                       &peer);
    if (OFL_WAIT_OK == st) {
        return;
    }
    if (OFL_WAIT_FAILED == st && !r->board && OFL_EMISMATCH == r->inst.error) {
        st = OFL_WAIT_MISMATCH;
        peer = r->inst.bad_peer;
    }
    /* The NIC state is now mid-call: this instance and all behind it fail, and
     * later calls on the communicator go to the fallback (or, after a
     * mismatch, fail too). */
    int who;
    m->fail_peer = peer;
    m->fail_cnt = OFL_CNT_DATA * OFL_CHANNELS;
    m->fail_have = 0;
    m->fail_need = 0;
    if (r->board) {
        m->fail_error = r->bc.error;
        m->fail_need = (int64_t) r->bc.seq;
    } else {
        m->fail_error = r->inst.error;
        ofl_engine_blocker(&r->inst, &who, &m->fail_cnt, &m->fail_have, &m->fail_need);
    }
    m->fail_status = st;
    m->failed = 1;
    __atomic_store_n(&m->state, OFL_WAIT_MISMATCH == st ? OFL_MOD_BROKEN : OFL_MOD_DISABLED,
                     __ATOMIC_RELAXED);
}

static int module_progress(ofl_agent_item_t *item)
{
    mca_coll_offload_module_t *m = module_of(item);
    if (0 == __atomic_load_n(&m->nactive, __ATOMIC_ACQUIRE)) {
        return 0;
    }
    mca_coll_offload_req_t *in = NULL;
    if (NULL != __atomic_load_n(&m->incoming, __ATOMIC_RELAXED)) {
        in = __atomic_exchange_n(&m->incoming, NULL, __ATOMIC_ACQUIRE);
    }
    if (NULL != in) {
        /* The stack holds the newest first: reverse into post order. */
        mca_coll_offload_req_t *fifo = NULL, *tail = in;
        while (NULL != in) {
            mca_coll_offload_req_t *next = in->next;
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
    int worked = 0;
    mca_coll_offload_req_t *r;
    while (NULL != (r = m->run_head)) {
        if (OPAL_UNLIKELY(m->failed)) {
            r->peer = m->fail_peer;
            r->cnt = m->fail_cnt;
            r->have = m->fail_have;
            r->need = m->fail_need;
            r->error = m->fail_error;
            finish(m, r, (ofl_wait_status_t) m->fail_status);
            worked++;
            continue;
        }
        uint64_t before = inst_mark(r);
        int done = inst_progress(r);
        if (OPAL_UNLIKELY(done < 0)) {
            /* A read of a peer's memory failed, a peer's value is corrupt, or
             * a peer's call differs: this call cannot complete, and the NIC
             * state is mid-call, as for a dead peer. */
            int error = r->board ? r->bc.error : r->inst.error;
            int mismatch = OFL_EMISMATCH == error;
            m->fail_status = mismatch ? OFL_WAIT_MISMATCH : OFL_WAIT_FAILED;
            m->fail_error = mismatch ? 0 : error;
            m->fail_peer = !mismatch ? -1 : r->board ? r->bc.missing : r->inst.bad_peer;
            m->fail_cnt = 0;
            m->fail_have = 0;
            m->fail_need = 0;
            m->failed = 1;
            __atomic_store_n(&m->state, mismatch ? OFL_MOD_BROKEN : OFL_MOD_DISABLED,
                             __ATOMIC_RELAXED);
            continue;
        }
        if (done) {
            finish(m, r, OFL_WAIT_OK);
            worked++;
            if (NULL != m->run_head) {
                head_changed(m);
            }
            continue;
        }
        if (inst_mark(r) != before) {
            worked++;
        }
        break;
    }
    if (0 == worked && NULL != (r = m->run_head) && 0 == (++m->idle & 63)) {
        check_head(m, r);
        if (m->failed) {
            return module_progress(item);
        }
    }
    return worked;
}

/* ---- posting ---------------------------------------------------------------- */

/* Runs first in the agent thread: hwloc only, no MPI. */
static void agent_started(void *ctx)
{
    hwloc_bitmap_t set = ctx;
    if (NULL != set) {
        hwloc_set_cpubind(opal_hwloc_topology, set, HWLOC_CPUBIND_THREAD);
    }
    if (0 != agent.rt_failed) {
        opal_output(0,
                    "coll:offload: coll_offload_agent_preempt=2: the progress agent may not "
                    "run in the real-time class (%s: needs CAP_SYS_NICE or an RLIMIT_RTPRIO "
                    "above 0); it runs in the normal class",
                    strerror(agent.rt_failed));
    }
}

static int nb_progress(void);

static mca_coll_offload_req_t *req_alloc(void)
{
    pthread_mutex_lock(&idle_lock);
    mca_coll_offload_req_t *r = idle_reqs;
    if (NULL != r) {
        idle_reqs = r->next;
    }
    pthread_mutex_unlock(&idle_lock);
    if (NULL == r) {
        r = OBJ_NEW(mca_coll_offload_req_t);
    }
    return r;
}

static void req_return(mca_coll_offload_req_t *r)
{
    pthread_mutex_lock(&idle_lock);
    r->next = idle_reqs;
    idle_reqs = r;
    pthread_mutex_unlock(&idle_lock);
}

/* Once per process, at the first nonblocking or persistent call. */
static int nb_activate(void)
{
    if (OPAL_LIKELY(__atomic_load_n(&nb_active, __ATOMIC_ACQUIRE))) {
        return OMPI_SUCCESS;
    }
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    int rc = OMPI_SUCCESS;
    pthread_mutex_lock(&nb_lock);
    if (!nb_active) {
        ofl_agent_init(&agent);
        nb_spin = ofl_glue_spin_before_yield(&c->params);
        start_polls = 0;
        if (0 != nb_spin && c->params.start_polls > 0) {
            start_polls = (unsigned) c->params.start_polls;
        }
        opal_progress_register(nb_progress);
        if (c->params.agent) {
            char why[256];
            /* With coll_offload_agent_nap the agent naps between idle rounds
             * instead of yielding (from the first one: a yield can cost a whole
             * time slice of a rank computing on the same core), and asks for a
             * scheduler slice as short as a nap. */
            agent.yield_rounds = 0;
            agent.nap_ns = (long) (c->params.agent_nap * 1000.0);
            agent.slice_ns = agent.nap_ns;
            agent.sched_class = c->params.agent_preempt >= 2   ? OFL_AGENT_RT
                                : 1 == c->params.agent_preempt ? OFL_AGENT_NORMAL
                                                               : OFL_AGENT_BATCH;
            agent.kick_delay_ns = (long) (c->params.agent_kick_delay * 1000.0);
            agent.linger_ns = (long) (c->params.agent_linger * 1000.0);
            agent.linger_nap_ns = 200000;
            agent_set = mca_coll_offload_agent_cpuset(why, sizeof(why));
            int err = ofl_agent_start(&agent, agent_started, agent_set);
            if (0 != err) {
                opal_output(c->output,
                            "coll:offload: cannot start the progress agent (%s); nonblocking "
                            "collectives progress inside MPI calls only",
                            strerror(err));
            } else {
                opal_output_verbose(1, c->output, "coll:offload: progress agent started, %s",
                                    why);
            }
        } else {
            opal_output_verbose(1, c->output,
                                "coll:offload: no progress agent (coll_offload_agent=0): "
                                "nonblocking collectives progress inside MPI calls");
        }
        __atomic_store_n(&nb_active, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&nb_lock);
    return rc;
}

/* A module's first post puts it on the agent's list; its blocking-call object
 * is taken then, so a blocking call never has to allocate. */
static int module_activate(mca_coll_offload_module_t *m)
{
    if (OPAL_LIKELY(m->item_linked)) {
        return OMPI_SUCCESS;
    }
    int rc = nb_activate();
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    m->blocking_req = req_alloc();
    if (NULL == m->blocking_req) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    uint32_t *word, *armed;
    ofl_softnic_bell(&m->nic, &word, &armed);
    m->item.bell_word = word;
    m->item.bell_armed = armed;
    ofl_agent_add(&agent, &m->item);
    m->item_linked = 1;
    return OMPI_SUCCESS;
}

static void complete(mca_coll_offload_req_t *r, int signal);

/* A small call on a module with nothing outstanding, whose executor lock this
 * thread gets: fire first, count after. The puts are then on their way before
 * any locked instruction (each would wait for this core's earlier stores to
 * the peers' lines to drain), and a call the peers have already made complete
 * here, without touching the run list, the agent or the done stack. Returns 0,
 * having done nothing, when the slow path must post. */
static int post_first(mca_coll_offload_module_t *m, mca_coll_offload_req_t *r,
                      const ofl_program_t *prog, const ofl_call_t *call)
{
    if (0 != __atomic_load_n(&m->nactive, __ATOMIC_ACQUIRE)
        || !ofl_agent_item_trylock(&m->item)) {
        return 0;
    }
    if (0 != __atomic_load_n(&m->nactive, __ATOMIC_ACQUIRE)) {
        ofl_agent_item_unlock(&m->item);
        return 0;
    }
    inst_post(m, r, prog, call);
    int done = inst_progress(r);
    /* Peers that are already in the call answer within a few line transfers:
     * waiting that long here costs less than the bookkeeping (and the wait
     * call's progress rounds) of a call left outstanding. */
    for (unsigned k = 0; 0 == done && k < start_polls; ++k) {
        done = inst_progress(r);
    }
    if (done > 0) {
        ofl_agent_item_unlock(&m->item);
        r->done = 1;
        /* Still inside the call that started it: nobody can wait on it yet,
         * so no signal (a locked exchange, which would wait here for this
         * core's store to its board line to reach the peers). */
        complete(r, 0);
        return 1;
    }
    /* Outstanding (or failed: module_progress reports it): the run list is
     * empty, and ours while we hold the lock. */
    __atomic_fetch_add(&m->nactive, 1, __ATOMIC_ACQ_REL);
    ofl_agent_count_in(&agent, 1);
    r->next = NULL;
    m->run_head = m->run_tail = r;
    head_changed(m);
    ofl_agent_item_unlock(&m->item);
    ofl_agent_wake(&agent);
    if (!opal_using_threads()) {
        hot_module = m;
    }
    return 1;
}

/* A posted call joins the module's outstanding ones (through the incoming
 * stack: no executor lock needed) and is handed to the executors. */
static void enqueue(mca_coll_offload_module_t *m, mca_coll_offload_req_t *r, int large)
{
    __atomic_fetch_add(&m->nactive, 1, __ATOMIC_ACQ_REL);
    mca_coll_offload_req_t *top = __atomic_load_n(&m->incoming, __ATOMIC_RELAXED);
    do {
        r->next = top;
    } while (!__atomic_compare_exchange_n(&m->incoming, &top, r, 1, __ATOMIC_RELEASE,
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
    if (REQ_BLOCKING != r->kind && !__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
        ofl_agent_wake(&agent);
    }
}

/* A board call on a module with nothing outstanding: post it and look for the
 * peers' payloads at once. No executor lock: with nothing outstanding no
 * executor touches the module, and the call reaches them (enqueue) only if it
 * is not done here. */
static void board_first(mca_coll_offload_module_t *m, mca_coll_offload_req_t *r,
                        const ofl_call_t *call)
{
    if (NULL != call) {
        inst_post(m, r, NULL, call);
    } else {
        /* a persistent request's board call, prepared when it was made */
        ofl_board_rearm(&r->bc, ++m->board_seq);
        ofl_board_sign(&r->bc, r->call.sig, r->call.callno);
    }
    int done = inst_progress(r);
    for (unsigned k = 0; 0 == done && k < start_polls; ++k) {
        done = inst_progress(r);
    }
    if (done > 0) {
        r->done = 1;
        complete(r, 0);   /* as in post_first */
        return;
    }
    enqueue(m, r, 0);
}

static void post(mca_coll_offload_module_t *m, mca_coll_offload_req_t *r,
                 const ofl_program_t *prog, const ofl_call_t *call)
{
    /* A small nonblocking call fires here what can fire now (its first puts, a
     * line or two each): it need not wait for the agent to be scheduled, and
     * one that completes at once never wakes it. A large one is the agent's
     * work from the start (firing it here would copy and combine whole
     * segments before the call returns), worth a system call to wake the agent
     * and the peers' agents on arrival. A blocking call is driven by its
     * caller. */
    r->status = OFL_WAIT_OK;
    r->error = 0;
    r->done = 0;
    if (r->board && REQ_BLOCKING != r->kind
        && 0 == __atomic_load_n(&m->nactive, __ATOMIC_ACQUIRE)) {
        board_first(m, r, call);
        return;
    }
    int large = REQ_BLOCKING != r->kind && ofl_agent_started(&agent)
                && call->count * call->elem > POST_FIRE_MAX;
    ofl_call_t c = *call;
    c.ring = large;
    if (!large && REQ_BLOCKING != r->kind && post_first(m, r, prog, &c)) {
        return;
    }
    inst_post(m, r, prog, &c);
    enqueue(m, r, large);
}

static int req_free(ompi_request_t **rptr);
static int req_cancel(ompi_request_t *q, int flag);
static int req_start(size_t count, ompi_request_t **requests);

static mca_coll_offload_req_t *req_get(mca_coll_offload_module_t *m,
                                       struct ompi_communicator_t *comm, req_kind_t kind,
                                       ofl_coll_t coll)
{
    mca_coll_offload_req_t *r = req_alloc();
    if (NULL == r) {
        return NULL;
    }
    ompi_request_t *q = &r->super.super;
    int persistent = REQ_PERSISTENT == kind;
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
    r->done = 0;
    r->next = NULL;
    r->status = OFL_WAIT_OK;
    r->staged = 0;
    r->dtype = NULL;
    r->inner = NULL;
    r->stuck = 0;
    r->board = 0;
    r->module = m;
    OBJ_RETAIN(m);
    return r;
}

static void drop_deferred(mca_coll_offload_req_t *r)
{
    if (NULL != r->inner) {
        /* Its completion may still be returning in another thread. */
        while (OMPI_REQUEST_ACTIVE == r->inner->req_state && !REQUEST_COMPLETE(r->inner)) {
            sched_yield();
        }
        ompi_request_free(&r->inner);
        r->inner = NULL;
    }
    if (NULL != r->d_dtype) {
        OBJ_RELEASE(r->d_dtype);
        r->d_dtype = NULL;
    }
    if (NULL != r->d_op) {
        OBJ_RELEASE(r->d_op);
        r->d_op = NULL;
    }
}

static void recycle(mca_coll_offload_req_t *r)
{
    OMPI_REQUEST_FINI(&r->super.super);
    if (NULL != r->dtype) {
        OBJ_RELEASE(r->dtype);
        r->dtype = NULL;
    }
    drop_deferred(r);
    mca_coll_offload_module_t *m = r->module;
    r->module = NULL;
    req_return(r);
    /* Last: this may be the last reference to the communicator's module. */
    OBJ_RELEASE(m);
}

/* Staging for a non-contiguous bcast; grows only. Returns 0 or -1. */
static int stage_prepare(mca_coll_offload_req_t *r, void *buf, int count,
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

/* The application thread: post, or (zero bytes) complete at once. */
static int start_one(mca_coll_offload_req_t *r)
{
    mca_coll_offload_module_t *m = r->module;
    ompi_request_t *q = &r->super.super;
    q->req_state = OMPI_REQUEST_ACTIVE;
    if (r->staged && m->rank == r->root
        && 0 != mca_coll_offload_stage(r->stage, r->buf, r->count, r->dtype, r->bytes, 1)) {
        /* Not posted: whoever waits for our data must fail too. */
        mca_coll_offload_fail_here(m, q->req_mpi_object.comm,
                                   REQ_PERSISTENT == r->kind ? p_names[r->coll]
                                                             : nb_names[r->coll],
                                   "packing the root's data failed", OMPI_ERROR);
        q->req_status.MPI_ERROR = MPI_ERR_INTERN;
        ompi_request_complete(q, true);
        return OMPI_SUCCESS;
    }
    if (0 == r->call.count && OFL_COLL_BARRIER != r->coll) {
        ompi_request_complete(q, true);
        return OMPI_SUCCESS;
    }
    post(m, r, r->prog, &r->call);
    return OMPI_SUCCESS;
}

/* A new nonblocking call or persistent request for an offloaded decision. For
 * a bcast, `buf` non-NULL with a non-contiguous dtype means staged. */
static int make_request(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                        req_kind_t kind, ofl_coll_t coll, const ofl_program_t *prog,
                        int board, const ofl_call_t *call, void *buf, int count,
                        struct ompi_datatype_t *dtype, int root, mca_coll_offload_req_t *reuse,
                        ompi_request_t **request)
{
    const char *what = REQ_PERSISTENT == kind ? p_names[coll] : nb_names[coll];
    int rc = module_activate(m);
    if (OMPI_SUCCESS != rc) {
        return mca_coll_offload_fail_here(m, comm, what, "cannot allocate a request", rc);
    }
    mca_coll_offload_req_t *r = NULL != reuse ? reuse : req_get(m, comm, kind, coll);
    if (NULL == r) {
        return mca_coll_offload_fail_here(m, comm, what, "cannot allocate a request",
                                          OMPI_ERR_OUT_OF_RESOURCE);
    }
    r->prog = prog;
    r->board = board;
    r->call = *call;
    r->sig = call->sig;
    if (board && REQ_PERSISTENT == kind) {
        ofl_board_prepare(&r->bc, &m->nic.base, 0, call->send, call->recv, call->count,
                          call->elem, call->fn);
    }
    if (NULL != buf && 0 != stage_prepare(r, buf, count, dtype, root, call->count)) {
        /* The other ranks may already have posted: an out-of-resource error
         * here, and every rank waiting on this one fails too (not a watchdog
         * wait, not a silent divergence). */
        if (NULL == reuse) {
            recycle(r);
        }
        return mca_coll_offload_fail_here(m, comm, what, "cannot allocate the staging buffer",
                                          OMPI_ERR_OUT_OF_RESOURCE);
    }
    if (NULL != reuse) {
        return OMPI_SUCCESS;
    }
    *request = &r->super.super;
    if (REQ_PERSISTENT == kind) {
        return OMPI_SUCCESS;
    }
    return start_one(r);
}

/* ---- completion (application threads only) ------------------------------------ */

/* `signal`: whether a thread may be waiting on it (ompi_request_complete's
 * with_signal); 0 only while the call that started it has not returned. */
static void complete(mca_coll_offload_req_t *r, int signal)
{
    ompi_request_t *q = &r->super.super;
    mca_coll_offload_module_t *m = r->module;
    if (OPAL_UNLIKELY(OFL_WAIT_MISMATCH == r->status && REFUSED == r->peer)) {
        q->req_status.MPI_ERROR = mca_coll_offload_refuse(
            m, REQ_PERSISTENT == r->kind ? p_names[r->coll] : nb_names[r->coll],
            q->req_mpi_object.comm);
    } else if (OPAL_UNLIKELY(OFL_WAIT_OK != r->status)) {
        q->req_status.MPI_ERROR = OFL_WAIT_MISMATCH == r->status ? MPI_ERR_ARG : MPI_ERR_OTHER;
        mca_coll_offload_report(m, REQ_PERSISTENT == r->kind ? p_names[r->coll]
                                                             : nb_names[r->coll],
                                q->req_mpi_object.comm, r->status, r->peer, r->cnt, r->have,
                                r->need, r->error);
    } else if (r->staged && m->rank != r->root
               && 0 != mca_coll_offload_stage(r->stage, r->buf, r->count, r->dtype, r->bytes,
                                              0)) {
        q->req_status.MPI_ERROR = MPI_ERR_INTERN;
    }
    if (!opal_using_threads()) {
        /* One application thread at a time: nobody frees it meanwhile (see
         * post_first for why a locked instruction less matters). Completion
         * always signals: MPI_Waitall waits on a sync object even then. */
        if (CLAIM_FREED != r->claim) {
            r->claim = CLAIM_COMPLETE;
            ompi_request_complete(q, signal);
            return;
        }
    } else {
        int expect = CLAIM_NONE;
        if (__atomic_compare_exchange_n(&r->claim, &expect, CLAIM_COMPLETE, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
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
 * the requests whose instances are done. */
static int nb_progress(void)
{
    static unsigned idle_streak;   /* racy across threads: only a hint */
    static unsigned calls;         /* idem */
    int n = 0;
    if (ofl_agent_pending(&agent) > 0) {
        tls_app = 1;
        mca_coll_offload_module_t *h = hot_module;
        if (NULL != h && 0 != (++calls & 15)
            && 0 != __atomic_load_n(&h->nactive, __ATOMIC_ACQUIRE)
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
        while (NULL != tls_done_head) {
            mca_coll_offload_req_t *r = tls_done_head;
            tls_done_head = r->next;
            r->next = NULL;
            complete(r, 1);
        }
        if (0 != n) {
            idle_streak = 0;
        } else if (NULL == __atomic_load_n(&done_stack, __ATOMIC_RELAXED)
                   && ++idle_streak > nb_spin) {
            /* An application thread spinning in MPI_Wait would keep off its core
             * whatever the work waits for: the agent of this or another rank,
             * preempted there (Open MPI's wait loop itself never yields). */
            sched_yield();
        }
    }
    if (NULL == __atomic_load_n(&done_stack, __ATOMIC_RELAXED)) {
        return n;
    }
    mca_coll_offload_req_t *r = __atomic_exchange_n(&done_stack, NULL, __ATOMIC_ACQUIRE);
    mca_coll_offload_req_t *fifo = NULL;
    while (NULL != r) {
        mca_coll_offload_req_t *next = r->next;
        r->next = fifo;
        fifo = r;
        r = next;
    }
    while (NULL != fifo) {
        mca_coll_offload_req_t *next = fifo->next;
        fifo->next = NULL;
        complete(fifo, 1);
        fifo = next;
        n++;
    }
    return n;
}

/* ---- request callbacks ------------------------------------------------------- */

static int req_free(ompi_request_t **rptr)
{
    mca_coll_offload_req_t *r = (mca_coll_offload_req_t *) *rptr;
    ompi_request_t *q = &r->super.super;
    int running = !REQUEST_COMPLETE(q)
                  && (!q->req_persistent || OMPI_REQUEST_ACTIVE == q->req_state);
    if (running) {
        int expect = CLAIM_NONE;
        if (__atomic_compare_exchange_n(&r->claim, &expect, CLAIM_FREED, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
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
    if (!__atomic_exchange_n(&cancel_warned, 1, __ATOMIC_RELAXED)) {
        opal_output(0, "coll:offload: MPI_Cancel on a collective request on %s is erroneous "
                    "(MPI-3.1 section 5.12): returning MPI_ERR_REQUEST; the request stays "
                    "active and completes normally",
                    q->req_mpi_object.comm->c_name);
    }
    return MPI_ERR_REQUEST;
}

static int deferred_start(mca_coll_offload_req_t *r, int *upgraded);

static int req_start(size_t count, ompi_request_t **requests)
{
    for (size_t i = 0; i < count; ++i) {
        mca_coll_offload_req_t *r = (mca_coll_offload_req_t *) requests[i];
        ompi_request_t *q = &r->super.super;
        if (OMPI_REQUEST_ACTIVE == q->req_state && !REQUEST_COMPLETE(q)) {
            return MPI_ERR_REQUEST;   /* started twice: erroneous */
        }
        mca_coll_offload_module_t *m = r->module;
        q->req_complete = REQUEST_PENDING;
        q->req_status.MPI_ERROR = MPI_SUCCESS;
        r->claim = CLAIM_NONE;
        /* Every start is a call: recorded before anything can wait. */
        int64_t callno = mca_coll_offload_begin(m, r->sig);
        if (OPAL_UNLIKELY(callno < 0)) {
            q->req_state = OMPI_REQUEST_ACTIVE;
            r->status = OFL_WAIT_MISMATCH;
            r->peer = REFUSED;
            complete(r, 1);
            continue;
        }
        if (OPAL_UNLIKELY(NULL != r->inner)) {
            int upgraded = 0;
            int rc = deferred_start(r, &upgraded);
            if (OMPI_SUCCESS != rc) {
                q->req_complete = REQUEST_COMPLETED;
                return rc;
            }
            if (!upgraded) {
                continue;
            }
        }
        r->call.callno = (uint64_t) callno;
        mca_coll_offload_note_offload(OFL_KIND_PERSISTENT, r->coll,
                                      r->call.count * r->call.elem, q->req_mpi_object.comm);
        if (r->board && OFL_MOD_READY == __atomic_load_n(&m->state, __ATOMIC_RELAXED)
            && 0 == __atomic_load_n(&m->nactive, __ATOMIC_ACQUIRE)) {
            /* Only the call number changes from start to start. */
            q->req_state = OMPI_REQUEST_ACTIVE;
            r->status = OFL_WAIT_OK;
            r->done = 0;
            board_first(m, r, NULL);
            continue;
        }
        if (OPAL_UNLIKELY(OFL_MOD_READY != __atomic_load_n(&m->state, __ATOMIC_RELAXED))) {
            /* A fault stopped this communicator's NIC after the request was made. */
            q->req_state = OMPI_REQUEST_ACTIVE;
            r->status = m->failed ? (ofl_wait_status_t) m->fail_status : OFL_WAIT_PEER_DEAD;
            r->peer = m->fail_peer;
            r->cnt = m->fail_cnt;
            r->have = m->fail_have;
            r->need = m->fail_need;
            r->error = m->fail_error;
            complete(r, 1);
            continue;
        }
        start_one(r);
    }
    return OMPI_SUCCESS;
}

static int reduction(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                     req_kind_t kind, ofl_coll_t coll, const void *sbuf, void *rbuf, int count,
                     struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                     mca_coll_offload_req_t *reuse, ompi_request_t **request, int *fallback);
static int bcast(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                 req_kind_t kind, void *buf, int count, struct ompi_datatype_t *dtype, int root,
                 mca_coll_offload_req_t *reuse, ompi_request_t **request, int *fallback);
static int barrier(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                   req_kind_t kind, mca_coll_offload_req_t *reuse, ompi_request_t **request,
                   int *fallback);

/* ---- persistent requests made before set-up ------------------------------------- */

/* Requests made on the fallback while the communicator was not set up, switched
 * to the offloaded program at the first start after a blocking collective set it
 * up. Since persistent inits set the communicator up themselves
 * (mca_coll_offload_setup_in_init), an init no longer leaves it unset, so nothing
 * takes this path today; it goes with the next cleanup of this file. */

/* The fallback's request completed (in whatever thread progressed it): the
 * wrapper completes in the progress callback, like an offloaded one. */
static int deferred_done(ompi_request_t *inner)
{
    mca_coll_offload_req_t *r = (mca_coll_offload_req_t *) inner->req_complete_cb_data;
    r->super.super.req_status.MPI_ERROR = inner->req_status.MPI_ERROR;
    r->status = OFL_WAIT_OK;
    mca_coll_offload_req_t *top = __atomic_load_n(&done_stack, __ATOMIC_RELAXED);
    do {
        r->next = top;
    } while (!__atomic_compare_exchange_n(&done_stack, &top, r, 1, __ATOMIC_RELEASE,
                                          __ATOMIC_RELAXED));
    return 0;
}

static int deferred_start(mca_coll_offload_req_t *r, int *upgraded)
{
    mca_coll_offload_module_t *m = r->module;
    ompi_request_t *q = &r->super.super;
    struct ompi_communicator_t *comm = q->req_mpi_object.comm;
    int why = OFL_R_UNSET;
    size_t bytes = 0;
    if (NULL != r->d_dtype) {
        bytes = r->d_count > 0 ? (size_t) r->d_count * r->d_dtype->super.size : 0;
    }
    ofl_mod_state_t st = __atomic_load_n(&m->state, __ATOMIC_ACQUIRE);
    if (!r->stuck && OFL_MOD_READY == st) {
        int rc;
        if (OFL_COLL_BCAST == r->coll) {
            rc = bcast(m, comm, REQ_PERSISTENT, r->d_rbuf, r->d_count, r->d_dtype, r->d_root, r,
                       NULL, &why);
        } else if (OFL_COLL_BARRIER == r->coll) {
            rc = barrier(m, comm, REQ_PERSISTENT, r, NULL, &why);
        } else {
            rc = reduction(m, comm, REQ_PERSISTENT, r->coll, r->d_sbuf, r->d_rbuf, r->d_count,
                           r->d_dtype, r->d_op, r->d_root, r, NULL, &why);
        }
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        if (OFL_R_OFFLOAD == why) {
            opal_output_verbose(10, mca_coll_offload_component.output,
                                "coll:offload: %s on %s: the NIC is set up now; this request "
                                "runs offloaded from this start on",
                                p_names[r->coll], comm->c_name);
            drop_deferred(r);
            *upgraded = 1;
            return OMPI_SUCCESS;
        }
        r->stuck = 1;   /* the same decision, with the same arguments, every time */
    } else if (OFL_MOD_DISABLED == st) {
        r->stuck = 1;
        why = OFL_R_NIC;
    }
    if (STUCK_AT_INIT != r->stuck) {
        mca_coll_offload_note(OFL_KIND_PERSISTENT, r->coll, why, bytes, comm);
    }
    q->req_state = OMPI_REQUEST_ACTIVE;
    if (OMPI_REQUEST_NOOP == r->inner->req_type) {
        /* The fallback's request has nothing to run and no start function (libnbc
         * makes such a persistent request for a communicator of one rank):
         * MPI_Start only activates it, complete, so the start completes at once.
         * Still inside MPI_Start: nobody waits on it yet, no signal needed. */
        r->status = OFL_WAIT_OK;
        complete(r, 0);
        return OMPI_SUCCESS;
    }
    r->inner->req_complete_cb = deferred_done;
    r->inner->req_complete_cb_data = r;
    ompi_request_t *inner = r->inner;
    return inner->req_start(1, &inner);
}

/* Wrap the fallback's persistent request `inner` (see above). */
static int make_deferred(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                         ofl_coll_t coll, ompi_request_t *inner, const void *sbuf, void *rbuf,
                         int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                         ompi_request_t **request)
{
    int rc = nb_activate();
    mca_coll_offload_req_t *r = OMPI_SUCCESS == rc ? req_get(m, comm, REQ_PERSISTENT, coll)
                                                   : NULL;
    if (NULL == r) {
        ompi_request_free(&inner);
        return OMPI_SUCCESS != rc ? rc : OMPI_ERR_OUT_OF_RESOURCE;
    }
    r->inner = inner;
    r->prog = NULL;
    r->sig = mca_coll_offload_sig(coll, OFL_COLL_BCAST == coll ? NULL : dtype, op,
                                  OFL_COLL_REDUCE == coll || OFL_COLL_BCAST == coll ? root : -1,
                                  NULL != dtype && count > 0 ? (size_t) count * dtype->super.size
                                                             : 0);
    r->d_sbuf = sbuf;
    r->d_rbuf = rbuf;
    r->d_count = count;
    r->d_root = root;
    r->d_dtype = dtype;
    r->d_op = op;
    if (NULL != dtype) {
        OBJ_RETAIN(dtype);
    }
    if (NULL != op) {
        OBJ_RETAIN(op);
    }
    *request = &r->super.super;
    return OMPI_SUCCESS;
}

/* ---- the blocking slow path --------------------------------------------------- */

ofl_wait_status_t mca_coll_offload_nb_blocking(mca_coll_offload_module_t *m,
                                               const ofl_program_t *prog,
                                               const ofl_call_t *call, int board, int *peer,
                                               int *cnt, uint64_t *have, int64_t *need,
                                               int *error)
{
    mca_coll_offload_req_t *r = m->blocking_req;
    r->kind = REQ_BLOCKING;
    r->board = board;
    post(m, r, prog, call);
    unsigned spin = ofl_glue_spin_before_yield(&mca_coll_offload_component.params);
    for (unsigned long iter = 1;; ++iter) {
        ofl_agent_item_try(&m->item);
        if (__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
            break;
        }
        if (0 == (iter & 63)) {
            opal_progress();
        }
        if (iter >= spin) {
            sched_yield();
        } else {
            ofl_cpu_relax();
        }
    }
    *peer = r->peer;
    *cnt = r->cnt;
    *have = r->have;
    *need = r->need;
    *error = r->error;
    return r->status;
}

/* ---- module and component life ----------------------------------------------- */

void mca_coll_offload_nb_module_init(mca_coll_offload_module_t *m)
{
    ofl_agent_item_init(&m->item, module_progress);
    m->item_linked = 0;
    m->nactive = 0;
    m->incoming = NULL;
    m->run_head = m->run_tail = NULL;
    m->failed = 0;
    m->blocking_req = NULL;
}

void mca_coll_offload_nb_module_fini(mca_coll_offload_module_t *m)
{
    if (!m->item_linked || !__atomic_load_n(&nb_active, __ATOMIC_ACQUIRE)) {
        return;
    }
    ofl_agent_remove(&agent, &m->item);
    m->item_linked = 0;
    if (hot_module == m) {
        hot_module = NULL;
    }
    req_return(m->blocking_req);
    m->blocking_req = NULL;
}

void mca_coll_offload_nb_close(void)
{
    if (!__atomic_load_n(&nb_active, __ATOMIC_ACQUIRE)) {
        return;
    }
    opal_output_verbose(1, mca_coll_offload_component.output,
                        "coll:offload: progress agent: %lu rounds, %lu sleeps",
                        (unsigned long) atomic_load(&agent.rounds),
                        (unsigned long) atomic_load(&agent.sleeps));
    ofl_agent_fini(&agent);
    opal_progress_unregister(nb_progress);
    /* Complete what finished after the application's last MPI call. */
    nb_progress();
    if (NULL != agent_set) {
        hwloc_bitmap_free(agent_set);
        agent_set = NULL;
    }
    __atomic_store_n(&nb_active, 0, __ATOMIC_RELEASE);
    while (NULL != idle_reqs) {
        mca_coll_offload_req_t *r = idle_reqs;
        idle_reqs = r->next;
        OBJ_RELEASE(r);
    }
}

/* ---- the entry points ----------------------------------------------------------- */

/* A nonblocking call, offloaded or not, is a call from its start: numbered and
 * recorded (call.callno), never waited for (a nonblocking start must not wait
 * for the peers). On a communicator broken by an earlier mismatch it fails at
 * once: *fallback says offload (nothing goes down) and the error is returned.
 * Persistent requests are numbered at each start instead. */
static inline int started(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                          req_kind_t kind, ofl_coll_t coll, ofl_call_t *call, int *fallback)
{
    if (REQ_NONBLOCKING != kind) {
        return OMPI_SUCCESS;
    }
    int64_t callno = mca_coll_offload_begin(m, call->sig);
    if (OPAL_UNLIKELY(callno < 0)) {
        *fallback = OFL_R_OFFLOAD;
        return mca_coll_offload_refuse(m, nb_names[coll], comm);
    }
    call->callno = (uint64_t) callno;
    return OMPI_SUCCESS;
}

/* The helpers below set *fallback to the reason when the call goes to the
 * layer below (then nothing was created), 0 when it was offloaded. */
static int reduction(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                     req_kind_t kind, ofl_coll_t coll, const void *sbuf, void *rbuf, int count,
                     struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                     mca_coll_offload_req_t *reuse, ompi_request_t **request, int *fallback)
{
    ofl_call_t call = { 0 };
    ofl_alg_t alg;
    *fallback = mca_coll_offload_decide_reduction(m, comm, coll, dtype, op, count, &call, &alg);
    call.sig = mca_coll_offload_sig(coll, dtype, op, OFL_COLL_REDUCE == coll ? root : -1,
                                    count > 0 ? (size_t) count * dtype->super.size : 0);
    int rc = started(m, comm, kind, coll, &call, fallback);
    if (OFL_R_OFFLOAD != *fallback || OMPI_SUCCESS != rc) {
        return rc;
    }
    if (REQ_NONBLOCKING == kind) {
        mca_coll_offload_note(OFL_KIND_NONBLOCKING, coll, OFL_R_OFFLOAD,
                              call.count * call.elem, comm);
    }
    call.send = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
    call.recv = rbuf;
    const ofl_program_t *prog = mca_coll_offload_program(m, coll, alg, root);
    call.seg_bytes = mca_coll_offload_segment(prog, call.count * call.elem);
    /* (An empty allreduce completes at its start without touching the NIC, on
     * every rank alike: no board call, no call number.) */
    int board = OFL_COLL_ALLREDUCE == coll && call.count > 0
                && mca_coll_offload_board_takes(m, alg, call.count * call.elem);
    return make_request(m, comm, kind, coll, prog, board, &call, NULL, 0, NULL, root, reuse,
                        request);
}

static int bcast(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                 req_kind_t kind, void *buf, int count, struct ompi_datatype_t *dtype, int root,
                 mca_coll_offload_req_t *reuse, ompi_request_t **request, int *fallback)
{
    size_t bytes = count > 0 ? (size_t) count * dtype->super.size : 0;
    ofl_alg_t alg;
    *fallback = mca_coll_offload_decide_bcast(m, comm, bytes, &alg);
    ofl_call_t call = { .fn = NULL, .elem = 1, .count = bytes };
    call.sig = mca_coll_offload_sig(OFL_COLL_BCAST, NULL, NULL, root, bytes);
    int rc = started(m, comm, kind, OFL_COLL_BCAST, &call, fallback);
    if (OFL_R_OFFLOAD != *fallback || OMPI_SUCCESS != rc) {
        return rc;
    }
    if (REQ_NONBLOCKING == kind) {
        mca_coll_offload_note(OFL_KIND_NONBLOCKING, OFL_COLL_BCAST, OFL_R_OFFLOAD, bytes, comm);
    }
    const ofl_program_t *prog = mca_coll_offload_program(m, OFL_COLL_BCAST, alg, root);
    call.seg_bytes = mca_coll_offload_segment(prog, bytes);
    /* Only the byte size decides (layouts may differ between ranks): a
     * non-contiguous layout is staged, as in the blocking call. */
    if (bytes > 0 && !ompi_datatype_is_contiguous_memory_layout(dtype, count)) {
        return make_request(m, comm, kind, OFL_COLL_BCAST, prog, 0, &call, buf, count, dtype,
                            root, reuse, request);
    }
    ptrdiff_t true_lb = 0, true_extent = 0;
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    call.send = call.recv = (char *) buf + true_lb;
    return make_request(m, comm, kind, OFL_COLL_BCAST, prog, 0, &call, NULL, 0, NULL, root,
                        reuse, request);
}

static int barrier(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                   req_kind_t kind, mca_coll_offload_req_t *reuse, ompi_request_t **request,
                   int *fallback)
{
    ofl_alg_t alg;
    *fallback = mca_coll_offload_decide_barrier(m, comm, &alg);
    ofl_call_t call = { .send = NULL, .recv = NULL, .fn = NULL, .elem = 1, .count = 0 };
    call.sig = mca_coll_offload_sig(OFL_COLL_BARRIER, NULL, NULL, -1, 0);
    int rc = started(m, comm, kind, OFL_COLL_BARRIER, &call, fallback);
    if (OFL_R_OFFLOAD != *fallback || OMPI_SUCCESS != rc) {
        return rc;
    }
    if (REQ_NONBLOCKING == kind) {
        mca_coll_offload_note(OFL_KIND_NONBLOCKING, OFL_COLL_BARRIER, OFL_R_OFFLOAD, 0, comm);
    }
    return make_request(m, comm, kind, OFL_COLL_BARRIER,
                        mca_coll_offload_program(m, OFL_COLL_BARRIER, alg, 0),
                        mca_coll_offload_board_takes(m, alg, 0), &call, NULL, 0, NULL, 0, reuse,
                        request);
}

/* Count a fallback decision (and explain it at verbose >= 10). */
static inline int fell_back(int reason, ofl_kind_t kind, ofl_coll_t coll, size_t bytes,
                            struct ompi_communicator_t *comm)
{
    if (OFL_R_OFFLOAD == reason) {
        return 0;
    }
    mca_coll_offload_note(kind, coll, reason, bytes, comm);
    return 1;
}

/* Reproducible sums run their binned call through this module's own entry points. */
static const mca_coll_offload_below_t *repsum_via(mca_coll_offload_below_t *via,
                                                  mca_coll_base_module_t *module)
{
    memset(via, 0, sizeof(*via));
    via->iallreduce = mca_coll_offload_iallreduce;
    via->iallreduce_module = module;
    via->ireduce = mca_coll_offload_ireduce;
    via->ireduce_module = module;
    via->allreduce_init = mca_coll_offload_allreduce_init;
    via->allreduce_init_module = module;
    via->reduce_init = mca_coll_offload_reduce_init;
    via->reduce_init_module = module;
    return via;
}

int mca_coll_offload_iallreduce(const void *sbuf, void *rbuf, int count,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                struct ompi_communicator_t *comm, ompi_request_t **request,
                                mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    if (OPAL_UNLIKELY(OFL_REPSUM_OFF != m->repsum.mode)
        && mca_coll_offload_repsum_wanted(&m->repsum, dtype, op, comm)) {
        mca_coll_offload_below_t via;
        return mca_coll_offload_repsum_request(0, 0, sbuf, rbuf, count, dtype, 0, comm,
                                               NULL, request, repsum_via(&via, module));
    }
    int why;
    int rc = reduction(m, comm, REQ_NONBLOCKING, OFL_COLL_ALLREDUCE, sbuf, rbuf, count, dtype,
                       op, 0, NULL, request, &why);
    if (fell_back(why, OFL_KIND_NONBLOCKING, OFL_COLL_ALLREDUCE,
                  (size_t) count * dtype->super.size, comm)) {
        return m->below.iallreduce(sbuf, rbuf, count, dtype, mca_coll_offload_below_op(dtype, op),
                                  comm, request,
                                  m->below.iallreduce_module);
    }
    return rc;
}

int mca_coll_offload_ireduce(const void *sbuf, void *rbuf, int count,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                             struct ompi_communicator_t *comm, ompi_request_t **request,
                             mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    if (OPAL_UNLIKELY(OFL_REPSUM_OFF != m->repsum.mode)
        && mca_coll_offload_repsum_wanted(&m->repsum, dtype, op, comm)) {
        mca_coll_offload_below_t via;
        return mca_coll_offload_repsum_request(1, 0, sbuf, rbuf, count, dtype, root, comm,
                                               NULL, request, repsum_via(&via, module));
    }
    int why;
    int rc = reduction(m, comm, REQ_NONBLOCKING, OFL_COLL_REDUCE, sbuf, rbuf, count, dtype, op,
                       root, NULL, request, &why);
    if (fell_back(why, OFL_KIND_NONBLOCKING, OFL_COLL_REDUCE,
                  (size_t) count * dtype->super.size, comm)) {
        return m->below.ireduce(sbuf, rbuf, count, dtype, mca_coll_offload_below_op(dtype, op),
                               root, comm, request,
                               m->below.ireduce_module);
    }
    return rc;
}

int mca_coll_offload_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                            struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    int why;
    int rc = bcast(m, comm, REQ_NONBLOCKING, buf, count, dtype, root, NULL, request, &why);
    if (fell_back(why, OFL_KIND_NONBLOCKING, OFL_COLL_BCAST, (size_t) count * dtype->super.size,
                  comm)) {
        return m->below.ibcast(buf, count, dtype, root, comm, request, m->below.ibcast_module);
    }
    return rc;
}

int mca_coll_offload_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    int why;
    int rc = barrier(m, comm, REQ_NONBLOCKING, NULL, request, &why);
    if (fell_back(why, OFL_KIND_NONBLOCKING, OFL_COLL_BARRIER, 0, comm)) {
        return m->below.ibarrier(comm, request, m->below.ibarrier_module);
    }
    return rc;
}

/* The fallback's persistent request `inner` (made with status rc): wrapped
 * when the communicator was only not set up yet, else handed out as it is. */
static int persistent_fallback(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                               ofl_coll_t coll, int why, int rc, ompi_request_t *inner,
                               const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                               ompi_request_t **request)
{
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (OFL_R_UNSET == why) {
        return make_deferred(m, comm, coll, inner, sbuf, rbuf, count, dtype, op, root, request);
    }
    fell_back(why, OFL_KIND_PERSISTENT, coll,
              NULL != dtype && count > 0 ? (size_t) count * dtype->super.size : 0, comm);
    if (OFL_MOD_DISABLED != __atomic_load_n(&m->state, __ATOMIC_RELAXED)) {
        /* Its starts are calls the peers count and compare (call records):
         * wrapped like a request made before set-up, for good on the fallback. */
        rc = make_deferred(m, comm, coll, inner, sbuf, rbuf, count, dtype, op, root, request);
        if (OMPI_SUCCESS == rc) {
            ((mca_coll_offload_req_t *) *request)->stuck = STUCK_AT_INIT;
        }
        return rc;
    }
    *request = inner;
    return OMPI_SUCCESS;
}

int mca_coll_offload_allreduce_init(const void *sbuf, void *rbuf, int count,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                    ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    if (OPAL_UNLIKELY(OFL_REPSUM_OFF != m->repsum.mode)
        && mca_coll_offload_repsum_wanted(&m->repsum, dtype, op, comm)) {
        mca_coll_offload_below_t via;
        return mca_coll_offload_repsum_request(0, 1, sbuf, rbuf, count, dtype, 0, comm,
                                               info, request, repsum_via(&via, module));
    }
    int why;
    int rc = reduction(m, comm, REQ_PERSISTENT, OFL_COLL_ALLREDUCE, sbuf, rbuf, count, dtype,
                       op, 0, NULL, request, &why);
    if (OFL_R_UNSET == why) {
        int setup_rc = mca_coll_offload_setup_in_init(m, comm);
        if (OMPI_SUCCESS != setup_rc) {
            return setup_rc;
        }
        rc = reduction(m, comm, REQ_PERSISTENT, OFL_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op,
                       0, NULL, request, &why);
    }
    if (OFL_R_OFFLOAD == why) {
        return rc;
    }
    ompi_request_t *inner = NULL;
    rc = m->below.allreduce_init(sbuf, rbuf, count, dtype, mca_coll_offload_below_op(dtype, op),
                                comm, info, &inner,
                                m->below.allreduce_init_module);
    return persistent_fallback(m, comm, OFL_COLL_ALLREDUCE, why, rc, inner, sbuf, rbuf, count,
                               dtype, op, 0, request);
}

int mca_coll_offload_reduce_init(const void *sbuf, void *rbuf, int count,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                                 struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                 ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    if (OPAL_UNLIKELY(OFL_REPSUM_OFF != m->repsum.mode)
        && mca_coll_offload_repsum_wanted(&m->repsum, dtype, op, comm)) {
        mca_coll_offload_below_t via;
        return mca_coll_offload_repsum_request(1, 1, sbuf, rbuf, count, dtype, root, comm,
                                               info, request, repsum_via(&via, module));
    }
    int why;
    int rc = reduction(m, comm, REQ_PERSISTENT, OFL_COLL_REDUCE, sbuf, rbuf, count, dtype, op,
                       root, NULL, request, &why);
    if (OFL_R_UNSET == why) {
        int setup_rc = mca_coll_offload_setup_in_init(m, comm);
        if (OMPI_SUCCESS != setup_rc) {
            return setup_rc;
        }
        rc = reduction(m, comm, REQ_PERSISTENT, OFL_COLL_REDUCE, sbuf, rbuf, count, dtype, op,
                       root, NULL, request, &why);
    }
    if (OFL_R_OFFLOAD == why) {
        return rc;
    }
    ompi_request_t *inner = NULL;
    rc = m->below.reduce_init(sbuf, rbuf, count, dtype, mca_coll_offload_below_op(dtype, op),
                             root, comm, info, &inner,
                             m->below.reduce_init_module);
    return persistent_fallback(m, comm, OFL_COLL_REDUCE, why, rc, inner, sbuf, rbuf, count,
                               dtype, op, root, request);
}

int mca_coll_offload_bcast_init(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                                struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    int why;
    int rc = bcast(m, comm, REQ_PERSISTENT, buf, count, dtype, root, NULL, request, &why);
    if (OFL_R_UNSET == why) {
        int setup_rc = mca_coll_offload_setup_in_init(m, comm);
        if (OMPI_SUCCESS != setup_rc) {
            return setup_rc;
        }
        rc = bcast(m, comm, REQ_PERSISTENT, buf, count, dtype, root, NULL, request, &why);
    }
    if (OFL_R_OFFLOAD == why) {
        return rc;
    }
    ompi_request_t *inner = NULL;
    rc = m->below.bcast_init(buf, count, dtype, root, comm, info, &inner,
                            m->below.bcast_init_module);
    return persistent_fallback(m, comm, OFL_COLL_BCAST, why, rc, inner, NULL, buf, count, dtype,
                               NULL, root, request);
}

int mca_coll_offload_barrier_init(struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                  ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    int why;
    int rc = barrier(m, comm, REQ_PERSISTENT, NULL, request, &why);
    if (OFL_R_UNSET == why) {
        int setup_rc = mca_coll_offload_setup_in_init(m, comm);
        if (OMPI_SUCCESS != setup_rc) {
            return setup_rc;
        }
        rc = barrier(m, comm, REQ_PERSISTENT, NULL, request, &why);
    }
    if (OFL_R_OFFLOAD == why) {
        return rc;
    }
    ompi_request_t *inner = NULL;
    rc = m->below.barrier_init(comm, info, &inner, m->below.barrier_init_module);
    return persistent_fallback(m, comm, OFL_COLL_BARRIER, why, rc, inner, NULL, NULL, 0, NULL,
                               NULL, 0, request);
}
