/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — nonblocking and persistent reproducible sums: a request of
 * the component's own entry points carrying the binned elements, converted
 * back once it completes (coll_offload_repsum.c has the blocking calls).
 */
#include "coll_offload.h"
#include "coll_offload_repsum_int.h"

#include <stdbool.h>
#include <stdlib.h>

#include "repsum/repsum.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"

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

/* Only application threads take it (the progress callback runs in theirs). */
static opal_mutex_t rs_lock = OPAL_MUTEX_STATIC_INIT;
static rs_req_t *rs_active;
static ofl_atomic_int32_t rs_nactive;   /* wrappers on the list */
static int rs_registered;       /* under rs_lock: the progress callback is */

static int rs_progress(void)
{
    if (0 == rs_nactive) {
        return 0;
    }
    if (0 != OPAL_THREAD_TRYLOCK(&rs_lock)) {
        return 0;
    }
    rs_req_t *done = NULL, **link = &rs_active;
    while (NULL != *link) {
        rs_req_t *r = *link;
        if (REQUEST_COMPLETE(r->inner)) {
            *link = r->next;
            r->next = done;
            done = r;
            (void) opal_atomic_add_fetch_32(&rs_nactive, -1);
        } else {
            link = &r->next;
        }
    }
    OPAL_THREAD_UNLOCK(&rs_lock);
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
        OPAL_THREAD_LOCK(&rs_lock);
        int freed = r->freed;
        OPAL_THREAD_UNLOCK(&rs_lock);
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
    OPAL_THREAD_LOCK(&rs_lock);
    if (!rs_registered) {
        int rc = opal_progress_register(rs_progress);
        if (OPAL_SUCCESS != rc) {
            OPAL_THREAD_UNLOCK(&rs_lock);
            return rc;
        }
        rs_registered = 1;
    }
    r->next = rs_active;
    rs_active = r;
    (void) opal_atomic_add_fetch_32(&rs_nactive, 1);
    OPAL_THREAD_UNLOCK(&rs_lock);
    return OMPI_SUCCESS;
}

static int rs_free(ompi_request_t **rptr)
{
    rs_req_t *r = (rs_req_t *) *rptr;
    OPAL_THREAD_LOCK(&rs_lock);
    int active = 0;
    for (rs_req_t *p = rs_active; NULL != p; p = p->next) {
        active |= p == r;
    }
    if (active) {
        r->freed = 1;   /* the progress callback releases it when it ends */
        OPAL_THREAD_UNLOCK(&rs_lock);
        *rptr = MPI_REQUEST_NULL;
        return OMPI_SUCCESS;
    }
    OPAL_THREAD_UNLOCK(&rs_lock);
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
                                    ofl_count_t count, struct ompi_datatype_t *dtype, int root,
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
    OPAL_THREAD_LOCK(&rs_lock);
    if (rs_registered) {
        opal_progress_unregister(rs_progress);
        rs_registered = 0;
    }
    OPAL_THREAD_UNLOCK(&rs_lock);
}
