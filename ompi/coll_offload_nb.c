/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the nonblocking and persistent entry points.
 *
 * MPI_Iallreduce, MPI_Ireduce, MPI_Ibcast, MPI_Ibarrier and the persistent
 * MPIX_*_init forms run the programs the blocking calls run, with the same
 * decisions (coll_offload_decide.h); an offloaded call becomes a request
 * (coll_offload_request.c) whose call runs on the communicator's execution
 * queue (engine/queue.h); the others go to the layer below.
 */
#include "coll_offload_decide.h"
#include "coll_offload_exec.h"
#include "coll_offload_nb.h"
#include "coll_offload_setup.h"
#include "coll_offload_types.h"

#include <string.h>

#include "coll_offload_request.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/request/request.h"

/* ---- the entry points ----------------------------------------------------------- */

/* A nonblocking call, offloaded or not, is a call from its start: numbered and
 * recorded (call.callno), never waited for (a nonblocking start must not wait
 * for the peers). On a communicator broken by an earlier mismatch it fails at
 * once: *fallback says offload (nothing goes down) and the error is returned.
 * Persistent requests are numbered at each start instead. */
static inline int started(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                          ofl_req_kind_t kind, ofl_coll_t coll, ofl_call_t *call, int *fallback)
{
    if (OFL_REQ_NONBLOCKING != kind) {
        return OMPI_SUCCESS;
    }
    int64_t callno = mca_coll_offload_begin(m, call->sig);
    if (OPAL_UNLIKELY(callno < 0)) {
        *fallback = OFL_R_OFFLOAD;
        return mca_coll_offload_refuse(m, mca_coll_offload_request_name(kind, coll), comm);
    }
    call->callno = (uint64_t) callno;
    return OMPI_SUCCESS;
}

/* The helpers below set *fallback to the reason when the call goes to the
 * layer below (then nothing was created), 0 when it was offloaded. */
static int reduction(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                     ofl_req_kind_t kind, ofl_coll_t coll, const void *sbuf, void *rbuf,
                     ofl_count_t count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                     int root, ompi_request_t **request, int *fallback)
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
    if (OFL_REQ_NONBLOCKING == kind) {
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
    return mca_coll_offload_request_make(m, comm, kind, coll, prog, board, &call, NULL, 0, NULL,
                                         root, request);
}

static int bcast(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                 ofl_req_kind_t kind, void *buf, ofl_count_t count, struct ompi_datatype_t *dtype,
                 int root, ompi_request_t **request, int *fallback)
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
    if (OFL_REQ_NONBLOCKING == kind) {
        mca_coll_offload_note(OFL_KIND_NONBLOCKING, OFL_COLL_BCAST, OFL_R_OFFLOAD, bytes, comm);
    }
    const ofl_program_t *prog = mca_coll_offload_program(m, OFL_COLL_BCAST, alg, root);
    call.seg_bytes = mca_coll_offload_segment(prog, bytes);
    /* Only the byte size decides (layouts may differ between ranks): a
     * non-contiguous layout is staged, as in the blocking call. */
    if (bytes > 0 && !ompi_datatype_is_contiguous_memory_layout(dtype, count)) {
        return mca_coll_offload_request_make(m, comm, kind, OFL_COLL_BCAST, prog, 0, &call, buf,
                                             count, dtype, root, request);
    }
    ptrdiff_t true_lb = 0, true_extent = 0;
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    call.send = call.recv = (char *) buf + true_lb;
    return mca_coll_offload_request_make(m, comm, kind, OFL_COLL_BCAST, prog, 0, &call, NULL, 0,
                                         NULL, root, request);
}

static int barrier(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                   ofl_req_kind_t kind, ompi_request_t **request, int *fallback)
{
    ofl_alg_t alg;
    *fallback = mca_coll_offload_decide_barrier(m, comm, &alg);
    ofl_call_t call = { .send = NULL, .recv = NULL, .fn = NULL, .elem = 1, .count = 0 };
    call.sig = mca_coll_offload_sig(OFL_COLL_BARRIER, NULL, NULL, -1, 0);
    int rc = started(m, comm, kind, OFL_COLL_BARRIER, &call, fallback);
    if (OFL_R_OFFLOAD != *fallback || OMPI_SUCCESS != rc) {
        return rc;
    }
    if (OFL_REQ_NONBLOCKING == kind) {
        mca_coll_offload_note(OFL_KIND_NONBLOCKING, OFL_COLL_BARRIER, OFL_R_OFFLOAD, 0, comm);
    }
    return mca_coll_offload_request_make(m, comm, kind, OFL_COLL_BARRIER,
                                         mca_coll_offload_program(m, OFL_COLL_BARRIER, alg, 0),
                                         mca_coll_offload_board_takes(m, alg, 0), &call, NULL, 0,
                                         NULL, 0, request);
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

/* Reproducible sums run their binned call through this module's own entry points:
 * the table they call, filled once when the module is made. */
void mca_coll_offload_repsum_self_init(mca_coll_offload_module_t *m)
{
    mca_coll_offload_below_t *via = &m->repsum_self;
    memset(via, 0, sizeof(*via));
    via->iallreduce = mca_coll_offload_iallreduce;
    via->iallreduce_module = &m->super;
    via->ireduce = mca_coll_offload_ireduce;
    via->ireduce_module = &m->super;
    via->allreduce_init = mca_coll_offload_allreduce_init;
    via->allreduce_init_module = &m->super;
    via->reduce_init = mca_coll_offload_reduce_init;
    via->reduce_init_module = &m->super;
}

int mca_coll_offload_iallreduce(const void *sbuf, void *rbuf, ofl_count_t count,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                struct ompi_communicator_t *comm, ompi_request_t **request,
                                mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    if (OPAL_UNLIKELY(OFL_REPSUM_OFF != m->repsum.mode)
        && mca_coll_offload_repsum_wanted(&m->repsum, dtype, op, comm)) {
        return mca_coll_offload_repsum_request(0, 0, sbuf, rbuf, count, dtype, 0, comm,
                                               NULL, request, &m->repsum_self);
    }
    int why;
    int rc = reduction(m, comm, OFL_REQ_NONBLOCKING, OFL_COLL_ALLREDUCE, sbuf, rbuf, count, dtype,
                       op, 0, request, &why);
    if (fell_back(why, OFL_KIND_NONBLOCKING, OFL_COLL_ALLREDUCE,
                  (size_t) count * dtype->super.size, comm)) {
        return m->below.iallreduce(sbuf, rbuf, count, dtype,
                                   mca_coll_offload_below_op(&m->below, dtype, op), comm, request,
                                   m->below.iallreduce_module);
    }
    return rc;
}

int mca_coll_offload_ireduce(const void *sbuf, void *rbuf, ofl_count_t count,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                             struct ompi_communicator_t *comm, ompi_request_t **request,
                             mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    if (OPAL_UNLIKELY(OFL_REPSUM_OFF != m->repsum.mode)
        && mca_coll_offload_repsum_wanted(&m->repsum, dtype, op, comm)) {
        return mca_coll_offload_repsum_request(1, 0, sbuf, rbuf, count, dtype, root, comm,
                                               NULL, request, &m->repsum_self);
    }
    int why;
    int rc = reduction(m, comm, OFL_REQ_NONBLOCKING, OFL_COLL_REDUCE, sbuf, rbuf, count, dtype, op,
                       root, request, &why);
    if (fell_back(why, OFL_KIND_NONBLOCKING, OFL_COLL_REDUCE,
                  (size_t) count * dtype->super.size, comm)) {
        return m->below.ireduce(sbuf, rbuf, count, dtype,
                                mca_coll_offload_below_op(&m->below, dtype, op), root, comm,
                                request, m->below.ireduce_module);
    }
    return rc;
}

int mca_coll_offload_ibcast(void *buf, ofl_count_t count, struct ompi_datatype_t *dtype, int root,
                            struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    int why;
    int rc = bcast(m, comm, OFL_REQ_NONBLOCKING, buf, count, dtype, root, request, &why);
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
    int rc = barrier(m, comm, OFL_REQ_NONBLOCKING, request, &why);
    if (fell_back(why, OFL_KIND_NONBLOCKING, OFL_COLL_BARRIER, 0, comm)) {
        return m->below.ibarrier(comm, request, m->below.ibarrier_module);
    }
    return rc;
}

/* Where ranks may start persistent collectives in any order (MPI-4 section 6.13), a
 * start cannot be one more call in the communicator's order: the layer below's
 * request is handed out as it is, and the NIC never sees its starts. */
static inline int unordered(struct ompi_communicator_t *comm, ofl_coll_t coll, size_t bytes)
{
    if (OPAL_LIKELY(!mca_coll_offload_persistent_ordered(comm))) {
        mca_coll_offload_note(OFL_KIND_PERSISTENT, coll, OFL_R_UNORDERED, bytes, comm);
        return 1;
    }
    return 0;
}

/* The layer below's persistent request `inner` (made with status rc): wrapped
 * while the communicator's NIC may still run calls, whose starts the peers
 * count and compare (call records), else handed out as it is. */
static int persistent_fallback(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                               ofl_coll_t coll, int why, int rc, ompi_request_t *inner,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                               ofl_count_t count, ompi_request_t **request)
{
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    size_t bytes = NULL != dtype && count > 0 ? (size_t) count * dtype->super.size : 0;
    fell_back(why, OFL_KIND_PERSISTENT, coll, bytes, comm);
    if (OFL_MOD_DISABLED != m->state) {
        uint64_t sig = mca_coll_offload_sig(
            coll, OFL_COLL_BCAST == coll ? NULL : dtype, op,
            OFL_COLL_REDUCE == coll || OFL_COLL_BCAST == coll ? root : -1, bytes);
        return mca_coll_offload_request_wrap(m, comm, coll, inner, sig, bytes, request);
    }
    *request = inner;
    return OMPI_SUCCESS;
}

int mca_coll_offload_allreduce_init(const void *sbuf, void *rbuf, ofl_count_t count,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                    ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    if (OPAL_UNLIKELY(OFL_REPSUM_OFF != m->repsum.mode)
        && mca_coll_offload_repsum_wanted(&m->repsum, dtype, op, comm)) {
        return mca_coll_offload_repsum_request(0, 1, sbuf, rbuf, count, dtype, 0, comm,
                                               info, request, &m->repsum_self);
    }
    if (unordered(comm, OFL_COLL_ALLREDUCE, (size_t) count * dtype->super.size)) {
        return m->below.allreduce_init(sbuf, rbuf, count, dtype,
                                       mca_coll_offload_below_op(&m->below, dtype, op), comm,
                                       info, request, m->below.allreduce_init_module);
    }
    int why;
    int rc = reduction(m, comm, OFL_REQ_PERSISTENT, OFL_COLL_ALLREDUCE, sbuf, rbuf, count, dtype,
                       op, 0, request, &why);
    if (OFL_R_UNSET == why) {
        int setup_rc = mca_coll_offload_setup_in_init(m, comm);
        if (OMPI_SUCCESS != setup_rc) {
            return setup_rc;
        }
        rc = reduction(m, comm, OFL_REQ_PERSISTENT, OFL_COLL_ALLREDUCE, sbuf, rbuf, count, dtype,
                       op, 0, request, &why);
    }
    if (OFL_R_OFFLOAD == why) {
        return rc;
    }
    ompi_request_t *inner = NULL;
    rc = m->below.allreduce_init(sbuf, rbuf, count, dtype,
                                 mca_coll_offload_below_op(&m->below, dtype, op), comm, info,
                                 &inner, m->below.allreduce_init_module);
    return persistent_fallback(m, comm, OFL_COLL_ALLREDUCE, why, rc, inner, dtype, op, 0, count,
                               request);
}

int mca_coll_offload_reduce_init(const void *sbuf, void *rbuf, ofl_count_t count,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                                 struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                 ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    if (OPAL_UNLIKELY(OFL_REPSUM_OFF != m->repsum.mode)
        && mca_coll_offload_repsum_wanted(&m->repsum, dtype, op, comm)) {
        return mca_coll_offload_repsum_request(1, 1, sbuf, rbuf, count, dtype, root, comm,
                                               info, request, &m->repsum_self);
    }
    if (unordered(comm, OFL_COLL_REDUCE, (size_t) count * dtype->super.size)) {
        return m->below.reduce_init(sbuf, rbuf, count, dtype,
                                    mca_coll_offload_below_op(&m->below, dtype, op), root, comm,
                                    info, request, m->below.reduce_init_module);
    }
    int why;
    int rc = reduction(m, comm, OFL_REQ_PERSISTENT, OFL_COLL_REDUCE, sbuf, rbuf, count, dtype, op,
                       root, request, &why);
    if (OFL_R_UNSET == why) {
        int setup_rc = mca_coll_offload_setup_in_init(m, comm);
        if (OMPI_SUCCESS != setup_rc) {
            return setup_rc;
        }
        rc = reduction(m, comm, OFL_REQ_PERSISTENT, OFL_COLL_REDUCE, sbuf, rbuf, count, dtype, op,
                       root, request, &why);
    }
    if (OFL_R_OFFLOAD == why) {
        return rc;
    }
    ompi_request_t *inner = NULL;
    rc = m->below.reduce_init(sbuf, rbuf, count, dtype,
                              mca_coll_offload_below_op(&m->below, dtype, op), root, comm, info,
                              &inner, m->below.reduce_init_module);
    return persistent_fallback(m, comm, OFL_COLL_REDUCE, why, rc, inner, dtype, op, root, count,
                               request);
}

int mca_coll_offload_bcast_init(void *buf, ofl_count_t count, struct ompi_datatype_t *dtype,
                                int root, struct ompi_communicator_t *comm,
                                struct ompi_info_t *info, ompi_request_t **request,
                                mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    if (unordered(comm, OFL_COLL_BCAST, (size_t) count * dtype->super.size)) {
        return m->below.bcast_init(buf, count, dtype, root, comm, info, request,
                                   m->below.bcast_init_module);
    }
    int why;
    int rc = bcast(m, comm, OFL_REQ_PERSISTENT, buf, count, dtype, root, request, &why);
    if (OFL_R_UNSET == why) {
        int setup_rc = mca_coll_offload_setup_in_init(m, comm);
        if (OMPI_SUCCESS != setup_rc) {
            return setup_rc;
        }
        rc = bcast(m, comm, OFL_REQ_PERSISTENT, buf, count, dtype, root, request, &why);
    }
    if (OFL_R_OFFLOAD == why) {
        return rc;
    }
    ompi_request_t *inner = NULL;
    rc = m->below.bcast_init(buf, count, dtype, root, comm, info, &inner,
                            m->below.bcast_init_module);
    return persistent_fallback(m, comm, OFL_COLL_BCAST, why, rc, inner, dtype, NULL, root, count,
                               request);
}

int mca_coll_offload_barrier_init(struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                  ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    if (unordered(comm, OFL_COLL_BARRIER, 0)) {
        return m->below.barrier_init(comm, info, request, m->below.barrier_init_module);
    }
    int why;
    int rc = barrier(m, comm, OFL_REQ_PERSISTENT, request, &why);
    if (OFL_R_UNSET == why) {
        int setup_rc = mca_coll_offload_setup_in_init(m, comm);
        if (OMPI_SUCCESS != setup_rc) {
            return setup_rc;
        }
        rc = barrier(m, comm, OFL_REQ_PERSISTENT, request, &why);
    }
    if (OFL_R_OFFLOAD == why) {
        return rc;
    }
    ompi_request_t *inner = NULL;
    rc = m->below.barrier_init(comm, info, &inner, m->below.barrier_init_module);
    return persistent_fallback(m, comm, OFL_COLL_BARRIER, why, rc, inner, NULL, NULL, 0, 0,
                               request);
}
