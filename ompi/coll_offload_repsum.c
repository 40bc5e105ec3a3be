/*
 * coll/offload — reproducible sums at the MPI level (src/alu/repsum.h has the
 * format and the guarantee).
 *
 * A float sum in reproducible mode is converted into binned elements in a
 * staging buffer, run as an ordinary reduction of the wire datatype under the
 * wire op (so the NIC's programs, the board, the node-aware module and the
 * layer below all carry it unchanged: the wire op is integer adds), and
 * converted back once. Whichever path the wire call takes, the result is a
 * function of the inputs alone: never the ordinary sum. Large blocking calls
 * take the two-pass form (src/alu/repsum_wide.h) instead: two wire calls of
 * 2 + 16 bytes per value, with the same bits.
 */
#include "coll_offload.h"

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "alu/repsum.h"
#include "alu/repsum_wide.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/info.h"
#include "opal/util/output.h"

#define INFO_KEY "coll_offload_repsum"

/* What this rank asks for: the info key if the communicator carries it, else
 * the MCA parameter. */
static int asked_here(struct ompi_communicator_t *comm)
{
    int on = 0 != mca_coll_offload_component.params.repsum;
    opal_info_t *info = comm->super.s_info;
    if (NULL != info) {
        bool value = false;
        int flag = 0;
        if (OPAL_SUCCESS == opal_info_get_bool(info, (char *) INFO_KEY, &value, &flag) && flag) {
            on = value;
        }
    }
    return on;
}

/*
 * The mode is this rank's own answer, taken at the communicator's first float
 * sum and kept. It is not agreed in a collective of its own: a rank that called
 * another collective there (an erroneous program, which the mismatch check
 * must report, not hang in) would never reach it. Ranks that answer
 * differently make calls of different signatures (the binned datatype and op,
 * 32 bytes per value), which the call records report as an argument mismatch
 * (MPI_ERR_ARG on every rank) once the communicator's NIC is set up.
 */
/* The communicator's first float sum: take this rank's answer and keep it. */
static __attribute__((noinline)) int decide(mca_coll_offload_repsum_t *r,
                                            struct ompi_communicator_t *comm)
{
    int on = asked_here(comm) && NULL != mca_coll_offload_repsum_type();
    int mode = on ? OFL_REPSUM_ON : OFL_REPSUM_OFF;
    __atomic_store_n(&r->mode, mode, __ATOMIC_RELAXED);
    if (mca_coll_offload_component.params.verbose >= 10) {
        opal_output(mca_coll_offload_component.output, "coll:offload: %s: reproducible sums %s",
                    comm->c_name, on ? "on" : "off");
    }
    return on;
}

/* Called on every reduction of a communicator whose mode is not off, the
 * binned calls' own included (their op is the wire op, not MPI_SUM): the op
 * test comes first and the decision is out of line. */
int mca_coll_offload_repsum_wanted(mca_coll_offload_repsum_t *r, struct ompi_datatype_t *dtype,
                                   struct ompi_op_t *op, struct ompi_communicator_t *comm)
{
    int mode = __atomic_load_n(&r->mode, __ATOMIC_RELAXED);
    if (OPAL_LIKELY(OFL_REPSUM_OFF == mode) || op != &ompi_mpi_op_sum.op
        || OFL_RS_NONE == mca_coll_offload_repsum_kind(dtype, op)) {
        return 0;
    }
    return OFL_REPSUM_UNDECIDED == mode ? decide(r, comm) : OFL_REPSUM_ON == mode;
}

/* Binned elements per call: two per complex value. */
static size_t elements(int kind, int count)
{
    size_t n = count > 0 ? (size_t) count : 0;
    return (OFL_RS_CFLOAT == kind || OFL_RS_CDOUBLE == kind) ? 2 * n : n;
}

/* Complex counts double: past INT_MAX elements the binned call cannot be made. */
static int too_many(size_t n, const char *what, struct ompi_communicator_t *comm)
{
    if (OPAL_LIKELY(n <= INT_MAX)) {
        return 0;
    }
    opal_output(0, "coll:offload: %s on communicator %s (cid %u): %zu binned elements are "
                "more than one call can carry; returning MPI_ERR_COUNT", what, comm->c_name,
                OFL_COMM_CID(comm), n);
    return 1;
}

static void to_wire(ofl_repsum_t *out, const void *in, int kind, size_t n)
{
    if (OFL_RS_FLOAT == kind || OFL_RS_CFLOAT == kind) {
        ofl_repsum_from_float(out, in, n);
    } else {
        ofl_repsum_from_double(out, in, n);
    }
}

static void from_wire(void *out, const ofl_repsum_t *in, int kind, size_t n)
{
    if (OFL_RS_FLOAT == kind || OFL_RS_CFLOAT == kind) {
        ofl_repsum_to_float(out, in, n);
    } else {
        ofl_repsum_to_double(out, in, n);
    }
}

/* The staging buffer: the module's, grown as needed and kept. NULL when it
 * cannot grow. */
static void *stage(mca_coll_offload_repsum_t *r, size_t bytes)
{
    if (r->stage_bytes < bytes) {
        void *p = NULL;
        /* aligned: elements never straddle a cache line */
        if (0 != posix_memalign(&p, 64, bytes)) {
            return NULL;
        }
        free(r->stage);
        r->stage = p;
        r->stage_bytes = bytes;
    }
    return r->stage;
}

/* Every rank needs the same number of bytes; a rank out of memory cannot take
 * part, and saying so is all it can do. */
static int no_memory(const char *what, struct ompi_communicator_t *comm, size_t bytes)
{
    opal_output(0, "coll:offload: %s on communicator %s (cid %u): cannot allocate %zu B for "
                "the reproducible sum; returning MPI_ERR_NO_MEM", what, comm->c_name,
                OFL_COMM_CID(comm), bytes);
    return OMPI_ERR_OUT_OF_RESOURCE;
}

/*
 * The two-pass form (alu/repsum_wide.h) gives the binned form's bits with 2 +
 * 16 bytes per real instead of 32, but two calls: blocking calls take it from
 * coll_offload_repsum_two_pass_min reals up (its default is the crossover
 * bench/repsum_demo -t measured), when the sum has at most
 * OFL_REPSUM_WIDE_MAX_TERMS terms (one per rank, node-aware or flat). Count and
 * size are the same on every rank, so every rank takes the same form;
 * nonblocking and persistent calls keep the binned one, and the results agree
 * bit for bit whichever form a call takes.
 */
static int takes_two_pass(size_t n, struct ompi_communicator_t *comm)
{
    int min = mca_coll_offload_component.params.repsum_two_pass_min;
    return min >= 0 && n >= (size_t) min && ompi_comm_size(comm) <= OFL_REPSUM_WIDE_MAX_TERMS
           && NULL != mca_coll_offload_repsum_meta_type()
           && NULL != mca_coll_offload_repsum_wide_type();
}

static int is_float(int kind)
{
    return OFL_RS_FLOAT == kind || OFL_RS_CFLOAT == kind;
}

/* Pass 1 in, pass 2 in, and out: each real's meta, its integer, its sum. */
static void to_meta(ofl_repsum_meta_t *m, const void *in, int kind, size_t n)
{
    if (is_float(kind)) {
        ofl_repsum_meta_from_float(m, in, n);
    } else {
        ofl_repsum_meta_from_double(m, in, n);
    }
}

static void to_wide(ofl_repsum_wide_t *w, const void *in, const ofl_repsum_meta_t *m, int kind,
                    size_t n)
{
    if (is_float(kind)) {
        ofl_repsum_wide_from_float(w, in, m, n);
    } else {
        ofl_repsum_wide_from_double(w, in, m, n);
    }
}

static void from_wide(void *out, const ofl_repsum_wide_t *w, const ofl_repsum_meta_t *m,
                      int kind, size_t n)
{
    if (is_float(kind)) {
        ofl_repsum_wide_to_float(out, w, m, n);
    } else {
        ofl_repsum_wide_to_double(out, w, m, n);
    }
}

/* Both passes; root < 0 for an allreduce. Pass 1 is always an allreduce: every
 * rank truncates at the final meta's base. */
static int two_pass(mca_coll_offload_repsum_t *r, const void *src, void *rbuf, int kind,
                    size_t n, int root, const char *what, struct ompi_communicator_t *comm,
                    mca_coll_base_module_t *module, mca_coll_base_module_allreduce_fn_t allreduce,
                    mca_coll_base_module_reduce_fn_t reduce)
{
    size_t wide_bytes = n * sizeof(ofl_repsum_wide_t);
    unsigned char *buf = stage(r, wide_bytes + n * sizeof(ofl_repsum_meta_t));
    if (NULL == buf) {
        return no_memory(what, comm, wide_bytes + n * sizeof(ofl_repsum_meta_t));
    }
    ofl_repsum_wide_t *w = (ofl_repsum_wide_t *) buf;
    ofl_repsum_meta_t *m = (ofl_repsum_meta_t *) (buf + wide_bytes);
    struct ompi_op_t *op = mca_coll_offload_repsum_op();
    to_meta(m, src, kind, n);
    int rc = allreduce(MPI_IN_PLACE, m, (int) n, mca_coll_offload_repsum_meta_type(), op, comm,
                       module);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    to_wide(w, src, m, kind, n);
    struct ompi_datatype_t *wt = mca_coll_offload_repsum_wide_type();
    int is_root = root < 0 || ompi_comm_rank(comm) == root;
    if (root < 0) {
        rc = allreduce(MPI_IN_PLACE, w, (int) n, wt, op, comm, module);
    } else {
        rc = reduce(is_root ? MPI_IN_PLACE : w, is_root ? w : NULL, (int) n, wt, op, root, comm,
                    module);
    }
    if (OMPI_SUCCESS == rc && is_root) {
        from_wide(rbuf, w, m, kind, n);
    }
    return rc;
}

/* The one binned pass of an allreduce: convert, run `self`, convert back. */
static inline int one_pass(mca_coll_offload_repsum_t *r, const void *src, void *rbuf, int kind,
                           size_t n, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module,
                           mca_coll_base_module_allreduce_fn_t self)
{
    ofl_repsum_t *w = stage(r, n * sizeof(ofl_repsum_t));
    if (OPAL_UNLIKELY(NULL == w)) {
        return no_memory("MPI_Allreduce", comm, n * sizeof(ofl_repsum_t));
    }
    int one_double = OFL_RS_DOUBLE == kind && 1 == n;
    if (one_double) {
        /* the most common reproducible call: no loop, no dispatch */
        ofl_repsum_from_double1(w, *(const double *) src);
    } else {
        to_wire(w, src, kind, n);
    }
    int rc = self(MPI_IN_PLACE, w, (int) n, r->wire_type, r->wire_op, comm, module);
    if (OPAL_LIKELY(OMPI_SUCCESS == rc)) {
        if (one_double) {
            *(double *) rbuf = ofl_repsum_to_double1(w);
        } else {
            from_wire(rbuf, w, kind, n);
        }
    }
    return rc;
}

/* The layouts are those of the predefined types: contiguous, no lower bound. */
int mca_coll_offload_repsum_allreduce(mca_coll_offload_repsum_t *r, const void *sbuf, void *rbuf,
                                      int count, struct ompi_datatype_t *dtype,
                                      struct ompi_communicator_t *comm,
                                      mca_coll_base_module_t *module,
                                      mca_coll_base_module_allreduce_fn_t self)
{
    const void *src = MPI_IN_PLACE == sbuf ? rbuf : sbuf;
    if (dtype == r->last_dtype && count == r->last_count) {
        return one_pass(r, src, rbuf, r->last_kind, elements(r->last_kind, count), comm, module,
                        self);
    }
    int kind = mca_coll_offload_repsum_kind(dtype, &ompi_mpi_op_sum.op);
    size_t n = elements(kind, count);
    if (too_many(n, "MPI_Allreduce", comm)) {
        return MPI_ERR_COUNT;
    }
    if (takes_two_pass(n, comm)) {
        return two_pass(r, src, rbuf, kind, n, -1, "MPI_Allreduce", comm, module, self, NULL);
    }
    if (NULL == stage(r, n * sizeof(ofl_repsum_t))) {
        return no_memory("MPI_Allreduce", comm, n * sizeof(ofl_repsum_t));
    }
    /* the memo: what a repeat of this call needs, the checks above done and
     * its staging buffer made (the buffer only grows) */
    r->wire_type = mca_coll_offload_repsum_type();
    r->wire_op = mca_coll_offload_repsum_op();
    r->last_kind = kind;
    r->last_count = count;
    r->last_dtype = dtype;
    return one_pass(r, src, rbuf, kind, n, comm, module, self);
}

/* A repeat of any other count or kind: out of line, so that the one double's
 * path saves no registers for it. */
static __attribute__((noinline)) int again_general(mca_coll_offload_repsum_t *r,
                                                   const void *src, void *rbuf,
                                                   struct ompi_communicator_t *comm,
                                                   mca_coll_base_module_t *module,
                                                   mca_coll_base_module_allreduce_fn_t self)
{
    return one_pass(r, src, rbuf, r->last_kind, elements(r->last_kind, r->last_count), comm,
                    module, self);
}

int mca_coll_offload_repsum_allreduce_again(mca_coll_offload_repsum_t *r, const void *sbuf,
                                            void *rbuf, struct ompi_communicator_t *comm,
                                            mca_coll_base_module_t *module,
                                            mca_coll_base_module_allreduce_fn_t self)
{
    const void *src = MPI_IN_PLACE == sbuf ? rbuf : sbuf;
    if (OPAL_LIKELY(OFL_RS_DOUBLE == r->last_kind && 1 == r->last_count)) {
        /* one double: the staging buffer holds an element since the memo was
         * set, and nothing else is left to decide */
        ofl_repsum_t *w = r->stage;
        ofl_repsum_from_double1(w, *(const double *) src);
        int rc = self(MPI_IN_PLACE, w, 1, r->wire_type, r->wire_op, comm, module);
        if (OPAL_LIKELY(OMPI_SUCCESS == rc)) {
            *(double *) rbuf = ofl_repsum_to_double1(w);
        }
        return rc;
    }
    return again_general(r, src, rbuf, comm, module, self);
}

int mca_coll_offload_repsum_reduce(mca_coll_offload_repsum_t *r, const void *sbuf, void *rbuf,
                                   int count, struct ompi_datatype_t *dtype, int root,
                                   struct ompi_communicator_t *comm,
                                   mca_coll_base_module_t *module,
                                   mca_coll_base_module_reduce_fn_t self,
                                   mca_coll_base_module_allreduce_fn_t allreduce)
{
    int kind = mca_coll_offload_repsum_kind(dtype, &ompi_mpi_op_sum.op);
    size_t n = elements(kind, count);
    int is_root = ompi_comm_rank(comm) == root;
    const void *src = (MPI_IN_PLACE == sbuf && is_root) ? rbuf : sbuf;
    if (too_many(n, "MPI_Reduce", comm)) {
        return MPI_ERR_COUNT;
    }
    if (takes_two_pass(n, comm)) {
        return two_pass(r, src, rbuf, kind, n, root, "MPI_Reduce", comm, module, allreduce,
                        self);
    }
    ofl_repsum_t *w = stage(r, n * sizeof(ofl_repsum_t));
    if (NULL == w) {
        return no_memory("MPI_Reduce", comm, n * sizeof(ofl_repsum_t));
    }
    to_wire(w, src, kind, n);
    int rc = self(is_root ? MPI_IN_PLACE : w, is_root ? w : NULL, (int) n,
                  mca_coll_offload_repsum_type(), mca_coll_offload_repsum_op(), root, comm,
                  module);
    if (OMPI_SUCCESS == rc && is_root) {
        from_wire(rbuf, w, kind, n);
    }
    return rc;
}

void mca_coll_offload_repsum_fini(mca_coll_offload_repsum_t *r)
{
    free(r->stage);
    r->stage = NULL;
    r->stage_bytes = 0;
    r->mode = OFL_REPSUM_UNDECIDED;
    r->last_dtype = NULL;
    r->last_count = 0;
}

/*
 * Nonblocking and persistent calls. The binned call runs as a request of this
 * component's own entry points (`inner`, offloaded or the layer below's); the
 * request handed to the application (`outer`) completes once `inner` has and
 * its elements are converted back. Completion is found by a progress callback
 * polling the active wrappers, not by a hook in `inner`, so it never races with
 * whichever thread completes `inner`.
 */
typedef struct rs_req {
    ompi_coll_base_nbc_request_t super;
    ompi_request_t *inner;
    int persistent;
    int reduce;
    int is_root;
    int kind;
    const void *sbuf;       /* the application's (MPI_IN_PLACE resolved) */
    void *rbuf;
    size_t n;               /* binned elements */
    ofl_repsum_t *w;        /* the request's own elements */
    int freed;              /* under rs_lock: freed by the application while active */
    struct rs_req *next;    /* under rs_lock: the active list */
} rs_req_t;

static void rs_construct(rs_req_t *r)
{
    r->inner = NULL;
    r->w = NULL;
    r->freed = 0;
    r->next = NULL;
}

static void rs_destruct(rs_req_t *r)
{
    free(r->w);
    r->w = NULL;
}

static OBJ_CLASS_INSTANCE(rs_req_t, ompi_coll_base_nbc_request_t, rs_construct, rs_destruct);

static pthread_mutex_t rs_lock = PTHREAD_MUTEX_INITIALIZER;
static rs_req_t *rs_active;
static int rs_nactive;          /* atomic: wrappers on the list */
static int rs_registered;       /* under rs_lock: the progress callback is */

static int rs_progress(void)
{
    if (0 == __atomic_load_n(&rs_nactive, __ATOMIC_ACQUIRE)) {
        return 0;
    }
    if (0 != pthread_mutex_trylock(&rs_lock)) {
        return 0;
    }
    rs_req_t *done = NULL, **link = &rs_active;
    while (NULL != *link) {
        rs_req_t *r = *link;
        if (REQUEST_COMPLETE(r->inner)) {
            *link = r->next;
            r->next = done;
            done = r;
            __atomic_fetch_sub(&rs_nactive, 1, __ATOMIC_RELEASE);
        } else {
            link = &r->next;
        }
    }
    pthread_mutex_unlock(&rs_lock);
    int n = 0;
    while (NULL != done) {
        rs_req_t *r = done;
        done = r->next;
        r->next = NULL;
        ompi_request_t *q = &r->super.super;
        int rc = r->inner->req_status.MPI_ERROR;
        if (MPI_SUCCESS == rc && (!r->reduce || r->is_root)) {
            from_wire(r->rbuf, r->w, r->kind, r->n);
        }
        if (!r->persistent) {
            ompi_request_free(&r->inner);
            r->inner = NULL;
        }
        q->req_status.MPI_ERROR = rc;
        pthread_mutex_lock(&rs_lock);
        int freed = r->freed;
        pthread_mutex_unlock(&rs_lock);
        if (freed) {
            /* nobody waits for it: complete (for any callback hooked on it), drop */
            ompi_request_complete(q, true);
            if (NULL != r->inner) {
                ompi_request_free(&r->inner);   /* a persistent one */
            }
            OBJ_RELEASE(r);
        } else {
            ompi_request_complete(q, true);
        }
        ++n;
    }
    return n;
}

static int rs_activate(rs_req_t *r)
{
    pthread_mutex_lock(&rs_lock);
    if (!rs_registered) {
        int rc = opal_progress_register(rs_progress);
        if (OPAL_SUCCESS != rc) {
            pthread_mutex_unlock(&rs_lock);
            return rc;
        }
        rs_registered = 1;
    }
    r->next = rs_active;
    rs_active = r;
    __atomic_fetch_add(&rs_nactive, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&rs_lock);
    return OMPI_SUCCESS;
}

static int rs_free(ompi_request_t **rptr)
{
    rs_req_t *r = (rs_req_t *) *rptr;
    pthread_mutex_lock(&rs_lock);
    int active = 0;
    for (rs_req_t *p = rs_active; NULL != p; p = p->next) {
        active |= p == r;
    }
    if (active) {
        r->freed = 1;   /* the progress callback releases it when it ends */
        pthread_mutex_unlock(&rs_lock);
        *rptr = MPI_REQUEST_NULL;
        return OMPI_SUCCESS;
    }
    pthread_mutex_unlock(&rs_lock);
    if (NULL != r->inner) {
        ompi_request_free(&r->inner);
    }
    OBJ_RELEASE(r);
    *rptr = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static int rs_cancel(ompi_request_t *q, int flag)
{
    (void) q;
    (void) flag;
    return MPI_ERR_REQUEST;   /* MPI-3.1 section 5.12: erroneous for collectives */
}

/* Convert the application's data and start `inner` (persistent: at each start). */
static int rs_start_one(rs_req_t *r)
{
    ompi_request_t *q = &r->super.super;
    q->req_complete = REQUEST_PENDING;
    q->req_state = OMPI_REQUEST_ACTIVE;
    q->req_status.MPI_ERROR = MPI_SUCCESS;
    to_wire(r->w, r->sbuf, r->kind, r->n);
    int rc = r->inner->req_start(1, &r->inner);
    if (OMPI_SUCCESS != rc) {
        q->req_status.MPI_ERROR = rc;
        ompi_request_complete(q, true);
        return rc;
    }
    return rs_activate(r);
}

static int rs_start(size_t count, ompi_request_t **requests)
{
    for (size_t i = 0; i < count; ++i) {
        rs_req_t *r = (rs_req_t *) requests[i];
        if (OMPI_REQUEST_ACTIVE == r->super.super.req_state
            && !REQUEST_COMPLETE(&r->super.super)) {
            return MPI_ERR_REQUEST;   /* started twice: erroneous */
        }
        int rc = rs_start_one(r);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

int mca_coll_offload_repsum_request(int reduce, int persistent, const void *sbuf, void *rbuf,
                                    int count, struct ompi_datatype_t *dtype, int root,
                                    struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                    ompi_request_t **request, const mca_coll_offload_below_t *via)
{
    int kind = mca_coll_offload_repsum_kind(dtype, &ompi_mpi_op_sum.op);
    if (too_many(elements(kind, count), reduce ? "MPI_Ireduce" : "MPI_Iallreduce", comm)) {
        return MPI_ERR_COUNT;
    }
    rs_req_t *r = OBJ_NEW(rs_req_t);
    if (NULL == r) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    ompi_request_t *q = &r->super.super;
    OMPI_REQUEST_INIT(q, persistent);
    q->req_type = OMPI_REQUEST_COLL;
    q->req_mpi_object.comm = comm;
    q->req_status = ompi_status_empty;
    q->req_start = persistent ? rs_start : NULL;
    q->req_free = rs_free;
    q->req_cancel = rs_cancel;
    r->persistent = persistent;
    r->reduce = reduce;
    r->is_root = !reduce || ompi_comm_rank(comm) == root;
    r->kind = kind;
    r->rbuf = rbuf;
    r->sbuf = (MPI_IN_PLACE == sbuf && r->is_root) ? rbuf : sbuf;
    r->n = elements(kind, count);
    size_t bytes = (r->n ? r->n : 1) * sizeof(ofl_repsum_t);
    if (0 != posix_memalign((void **) &r->w, 64, bytes)) {
        r->w = NULL;
        OBJ_RELEASE(r);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    struct ompi_datatype_t *wt = mca_coll_offload_repsum_type();
    struct ompi_op_t *wo = mca_coll_offload_repsum_op();
    const void *ws = r->is_root ? MPI_IN_PLACE : (const void *) r->w;
    void *wr = r->is_root ? (void *) r->w : NULL;
    int rc;
    if (!persistent) {
        q->req_state = OMPI_REQUEST_ACTIVE;
        to_wire(r->w, r->sbuf, kind, r->n);
        rc = reduce ? via->ireduce(ws, wr, (int) r->n, wt, wo, root, comm, &r->inner,
                                   via->ireduce_module)
                    : via->iallreduce(MPI_IN_PLACE, r->w, (int) r->n, wt, wo, comm, &r->inner,
                                      via->iallreduce_module);
    } else {
        rc = reduce ? via->reduce_init(ws, wr, (int) r->n, wt, wo, root, comm, info, &r->inner,
                                       via->reduce_init_module)
                    : via->allreduce_init(MPI_IN_PLACE, r->w, (int) r->n, wt, wo, comm, info,
                                          &r->inner, via->allreduce_init_module);
    }
    if (OMPI_SUCCESS != rc) {
        r->inner = NULL;
        OBJ_RELEASE(r);
        return rc;
    }
    if (!persistent) {
        rc = rs_activate(r);
        if (OMPI_SUCCESS != rc) {
            /* the binned call runs on; without the callback nobody would see it end */
            return rc;
        }
    }
    *request = q;
    return OMPI_SUCCESS;
}

void mca_coll_offload_repsum_close(void)
{
    pthread_mutex_lock(&rs_lock);
    if (rs_registered) {
        opal_progress_unregister(rs_progress);
        rs_registered = 0;
    }
    pthread_mutex_unlock(&rs_lock);
}
