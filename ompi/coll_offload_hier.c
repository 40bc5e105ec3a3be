/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — node-aware collectives on communicators that span nodes.
 *
 * Two levels, as in the seed's Rank and Node levels: the ranks of a node
 * combine through the software NIC (a node-local communicator, on which
 * coll/offload's own module runs), the node leaders (local rank 0) combine
 * across nodes (a leaders' communicator, left to the layer below: tuned over
 * the network), and the result comes back down through the software NIC. Only
 * leaders touch the network.
 *
 * Both sub-communicators are made at the first blocking collective on the
 * communicator (collective and blocking, like the software NIC's set-up);
 * while they are being made, every call on the communicator goes to the layer
 * below (the splits themselves run collectives on it). Every decision depends
 * only on arguments MPI requires to be equal on all ranks, and on the node
 * layout, which all ranks share.
 *
 * This file holds the calls; coll_offload_hier_setup.c the set-up.
 */
#include "coll_offload_hier.h"
#include "coll_offload_decide.h"
#include "coll_offload_types.h"

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/op/op.h"

static int hier_reduction_ok(hier_module_t *h, ofl_coll_t coll, struct ompi_op_t *op,
                             struct ompi_datatype_t *dtype, ofl_count_t count)
{
    /* Node-major combining order is not rank order: commutative ops only. */
    if (!ompi_op_is_commute(op)) {
        return OFL_R_USER_OP;
    }
    size_t bytes = (size_t) count * dtype->super.size;
    const mca_coll_offload_params_t *p = &mca_coll_offload_component.params;
    if (bytes > p->max_bytes[coll]) {
        return OFL_R_SIZE;
    }
    if (bytes > p->hier_max_bytes[coll]) {
        return OFL_R_POLICY;
    }
    /* A reduce goes through the leader's scratch: one element must fit it. */
    ptrdiff_t lb, extent, true_lb, true_extent;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    if (OFL_COLL_REDUCE == coll
        && (extent <= 0 || true_extent <= 0 || (size_t) true_extent > HIER_SCRATCH_BYTES)) {
        return OFL_R_SIZE;
    }
    (void) h;
    return OFL_R_OFFLOAD;
}

static int hier_allreduce(const void *sbuf, void *rbuf, ofl_count_t count,
                          struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    hier_module_t *h = (hier_module_t *) module;
    if (OPAL_UNLIKELY(OFL_REPSUM_OFF != h->repsum.mode)
        && mca_coll_offload_repsum_wanted(&h->repsum, dtype, op, comm)) {
        return mca_coll_offload_repsum_allreduce(&h->repsum, sbuf, rbuf, count, dtype, comm,
                                                 module, hier_allreduce);
    }
    size_t bytes = (size_t) count * dtype->super.size;
    int rc, why = HIER_DISABLED == h->state ? OFL_R_NIC : OFL_R_UNSET;
    if (mca_coll_offload_hier_ready(h, comm, &rc)) {
        why = hier_reduction_ok(h, OFL_COLL_ALLREDUCE, op, dtype, count);
    }
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (HIER_SETTING_UP == h->state || OFL_R_OFFLOAD != why) {
        if (HIER_SETTING_UP != h->state) {
            mca_coll_offload_note(OFL_KIND_BLOCKING, OFL_COLL_ALLREDUCE, why, bytes, comm);
        }
        return h->below.allreduce(sbuf, rbuf, count, dtype,
                                  mca_coll_offload_below_op(&h->below, dtype, op), comm,
                                  h->below.allreduce_module);
    }
    mca_coll_offload_note(OFL_KIND_BLOCKING, OFL_COLL_ALLREDUCE, OFL_R_OFFLOAD, bytes, comm);
    ompi_communicator_t *lo = h->local;
    /* With the leaders on the NIC's ALU, the node combines with it too. */
    mca_coll_base_module_reduce_fn_t node_reduce = lo->c_coll->coll_reduce;
    /* Our own node module maps the op itself; anything else gets the wrapping one. */
    struct ompi_op_t *lo_op = mca_coll_offload_reduce == node_reduce
                                  ? op
                                  : mca_coll_offload_below_op(&h->below, dtype, op);
    if (h->net_ready && mca_coll_offload_reduce == node_reduce) {
        node_reduce = mca_coll_offload_reduce_node;
    }
    if (0 == h->lrank) {
        rc = node_reduce(sbuf, rbuf, count, dtype, lo_op, 0, lo, lo->c_coll->coll_reduce_module);
    } else {
        /* Not the node's root: the receive buffer plays no part. */
        rc = node_reduce(MPI_IN_PLACE == sbuf ? rbuf : sbuf, NULL, count, dtype, lo_op, 0, lo,
                         lo->c_coll->coll_reduce_module);
    }
    if (OMPI_SUCCESS == rc && MPI_COMM_NULL != h->leaders) {
        ompi_communicator_t *up = h->leaders;
        ofl_call_t call = { 0 };
        ofl_op_t nop;
        ofl_type_t ntype;
        if (h->net_ready && mca_coll_offload_component.params.ofi_native
            && 0 == mca_coll_offload_map_kind(dtype, op, &nop, &ntype)
            && ofl_net_native(&h->net)
            && h->net.ops->native_ok(&h->net, nop, ntype, (size_t) count)) {
            /* the same answer on every leader: provider, op, type, count */
            rc = mca_coll_offload_hier_net_native(h, rbuf, (size_t) count, nop, ntype,
                                                  "MPI_Allreduce");
        } else if (h->net_ready
                   && 0 == mca_coll_offload_map(dtype, op, &call.fn, &call.elem)) {
            /* predefined op and type: the same on every leader */
            call.send = call.recv = rbuf;
            call.count = (size_t) count;
            rc = mca_coll_offload_hier_net_run(h, &h->net_allreduce, &call, "MPI_Allreduce");
        } else {
            rc = up->c_coll->coll_allreduce(MPI_IN_PLACE, rbuf, count, dtype,
                                            mca_coll_offload_below_op(&h->below, dtype, op), up,
                                            up->c_coll->coll_allreduce_module);
        }
    }
    if (OMPI_SUCCESS == rc) {
        rc = lo->c_coll->coll_bcast(rbuf, count, dtype, 0, lo, lo->c_coll->coll_bcast_module);
    }
    return rc;
}

/* A leader's scratch buffer for `count` elements of dtype (grows only). */
static int hier_reduce(const void *sbuf, void *rbuf, ofl_count_t count,
                       struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                       struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    hier_module_t *h = (hier_module_t *) module;
    if (OPAL_UNLIKELY(OFL_REPSUM_OFF != h->repsum.mode)
        && mca_coll_offload_repsum_wanted(&h->repsum, dtype, op, comm)) {
        return mca_coll_offload_repsum_reduce(&h->repsum, sbuf, rbuf, count, dtype, root, comm,
                                              module, hier_reduce, hier_allreduce);
    }
    size_t bytes = (size_t) count * dtype->super.size;
    int rc, why = HIER_DISABLED == h->state ? OFL_R_NIC : OFL_R_UNSET;
    if (mca_coll_offload_hier_ready(h, comm, &rc)) {
        why = hier_reduction_ok(h, OFL_COLL_REDUCE, op, dtype, count);
    }
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (HIER_SETTING_UP == h->state || OFL_R_OFFLOAD != why) {
        if (HIER_SETTING_UP != h->state) {
            mca_coll_offload_note(OFL_KIND_BLOCKING, OFL_COLL_REDUCE, why, bytes, comm);
        }
        return h->below.reduce(sbuf, rbuf, count, dtype,
                               mca_coll_offload_below_op(&h->below, dtype, op), root, comm,
                               h->below.reduce_module);
    }
    mca_coll_offload_note(OFL_KIND_BLOCKING, OFL_COLL_REDUCE, OFL_R_OFFLOAD, bytes, comm);
    int rank = ompi_comm_rank(comm);
    int root_node = h->node_of[root], root_lrank = h->lrank_of[root];
    int my_node = h->node_of[rank];
    ompi_communicator_t *lo = h->local;
    struct ompi_op_t *lo_op = mca_coll_offload_reduce == lo->c_coll->coll_reduce
                                  ? op
                                  : mca_coll_offload_below_op(&h->below, dtype, op);
    /* Same datatype and count on every rank (MPI), so every rank cuts the same
     * chunks; hier_reduction_ok made sure one element fits the scratch. */
    ptrdiff_t lb, extent, true_lb, true_extent;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    int per = (int) ((HIER_SCRATCH_BYTES - (size_t) true_extent) / (size_t) extent) + 1;
    int in_place = rank == root && MPI_IN_PLACE == sbuf;
    for (int at = 0; at < count && OMPI_SUCCESS == rc; at += per) {
        int n = count - at < per ? count - at : per;
        ptrdiff_t off = (ptrdiff_t) at * extent;
        const char *in = (in_place ? (const char *) rbuf : (const char *) sbuf) + off;
        /* Where a leader gathers its node's partial result: the root's own
         * buffer when the leader is the root, its scratch otherwise. */
        char *acc = NULL;
        if (0 == h->lrank) {
            acc = rank == root ? (char *) rbuf + off : (char *) h->tmp - true_lb;
            rc = lo->c_coll->coll_reduce(in_place ? MPI_IN_PLACE : (const void *) in, acc, n,
                                         dtype, lo_op, 0, lo, lo->c_coll->coll_reduce_module);
        } else {
            rc = lo->c_coll->coll_reduce(in, NULL, n, dtype, lo_op, 0, lo,
                                         lo->c_coll->coll_reduce_module);
        }
        if (OMPI_SUCCESS == rc && MPI_COMM_NULL != h->leaders) {
            ompi_communicator_t *up = h->leaders;
            int is_root_leader = my_node == root_node;
            rc = up->c_coll->coll_reduce(is_root_leader ? MPI_IN_PLACE : acc,
                                         is_root_leader ? acc : NULL, n, dtype,
                                         mca_coll_offload_below_op(&h->below, dtype, op),
                                         root_node, up, up->c_coll->coll_reduce_module);
        }
        if (OMPI_SUCCESS == rc && my_node == root_node && 0 != root_lrank) {
            /* The root is not its node's leader: one local message carries it. */
            if (0 == h->lrank) {
                rc = MCA_PML_CALL(send(acc, n, dtype, root_lrank, MCA_COLL_BASE_TAG_REDUCE,
                                       MCA_PML_BASE_SEND_STANDARD, lo));
            } else if (rank == root) {
                rc = MCA_PML_CALL(recv((char *) rbuf + off, n, dtype, 0,
                                       MCA_COLL_BASE_TAG_REDUCE, lo, MPI_STATUS_IGNORE));
            }
        }
    }
    return rc;
}

static int hier_bcast(void *buf, ofl_count_t count, struct ompi_datatype_t *dtype, int root,
                      struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    hier_module_t *h = (hier_module_t *) module;
    size_t bytes = (size_t) count * dtype->super.size;
    int rc, why = HIER_DISABLED == h->state ? OFL_R_NIC : OFL_R_UNSET;
    if (mca_coll_offload_hier_ready(h, comm, &rc)) {
        const mca_coll_offload_params_t *p = &mca_coll_offload_component.params;
        why = bytes > p->max_bytes[OFL_COLL_BCAST]        ? OFL_R_SIZE
              : bytes > p->hier_max_bytes[OFL_COLL_BCAST] ? OFL_R_POLICY
                                                          : OFL_R_OFFLOAD;
    }
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (HIER_SETTING_UP == h->state || OFL_R_OFFLOAD != why) {
        if (HIER_SETTING_UP != h->state) {
            mca_coll_offload_note(OFL_KIND_BLOCKING, OFL_COLL_BCAST, why, bytes, comm);
        }
        return h->below.bcast(buf, count, dtype, root, comm, h->below.bcast_module);
    }
    mca_coll_offload_note(OFL_KIND_BLOCKING, OFL_COLL_BCAST, OFL_R_OFFLOAD, bytes, comm);
    int root_node = h->node_of[root], root_lrank = h->lrank_of[root];
    int on_root_node = h->node_of[ompi_comm_rank(comm)] == root_node;
    ompi_communicator_t *lo = h->local;
    rc = OMPI_SUCCESS;
    if (on_root_node && 0 != root_lrank) {
        /* Up to the leader first (with everyone on the root's node). */
        rc = lo->c_coll->coll_bcast(buf, count, dtype, root_lrank, lo,
                                    lo->c_coll->coll_bcast_module);
    }
    if (OMPI_SUCCESS == rc && MPI_COMM_NULL != h->leaders) {
        ompi_communicator_t *up = h->leaders;
        rc = up->c_coll->coll_bcast(buf, count, dtype, root_node, up,
                                    up->c_coll->coll_bcast_module);
    }
    if (OMPI_SUCCESS == rc && !(on_root_node && 0 != root_lrank)) {
        rc = lo->c_coll->coll_bcast(buf, count, dtype, 0, lo, lo->c_coll->coll_bcast_module);
    }
    return rc;
}

static int hier_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    hier_module_t *h = (hier_module_t *) module;
    int rc;
    if (!mca_coll_offload_hier_ready(h, comm, &rc) || HIER_SETTING_UP == h->state) {
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        if (HIER_SETTING_UP != h->state) {
            mca_coll_offload_note(OFL_KIND_BLOCKING, OFL_COLL_BARRIER, OFL_R_NIC, 0, comm);
        }
        return h->below.barrier(comm, h->below.barrier_module);
    }
    mca_coll_offload_note(OFL_KIND_BLOCKING, OFL_COLL_BARRIER, OFL_R_OFFLOAD, 0, comm);
    ompi_communicator_t *lo = h->local;
    /* Everyone on the node is in; every node is in; let the node go. */
    rc = lo->c_coll->coll_barrier(lo, lo->c_coll->coll_barrier_module);
    if (OMPI_SUCCESS == rc && MPI_COMM_NULL != h->leaders) {
        if (h->net_ready && mca_coll_offload_component.params.ofi_native
            && ofl_net_native(&h->net)) {
            rc = mca_coll_offload_hier_net_native(h, NULL, 0, OFL_OP_SUM, OFL_T_UINT64,
                                                  "MPI_Barrier");
        } else if (h->net_ready) {
            ofl_call_t call = { .send = NULL, .recv = NULL, .fn = NULL, .elem = 1, .count = 0 };
            rc = mca_coll_offload_hier_net_run(h, &h->net_barrier, &call, "MPI_Barrier");
        } else {
            rc = h->leaders->c_coll->coll_barrier(h->leaders,
                                                  h->leaders->c_coll->coll_barrier_module);
        }
    }
    if (OMPI_SUCCESS == rc) {
        rc = lo->c_coll->coll_barrier(lo, lo->c_coll->coll_barrier_module);
    }
    return rc;
}

/*
 * Across nodes the nonblocking and persistent reductions are the layer below's;
 * all this module adds is the op it hands down, so that 8/16-bit sums and
 * products wrap there as they do everywhere else, and in reproducible mode the
 * binned elements and their op.
 */
static int hier_iallreduce(const void *sbuf, void *rbuf, ofl_count_t count,
                           struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                           struct ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_base_module_t *module)
{
    hier_module_t *h = (hier_module_t *) module;
    if (OPAL_UNLIKELY(OFL_REPSUM_OFF != h->repsum.mode)
        && mca_coll_offload_repsum_wanted(&h->repsum, dtype, op, comm)) {
        return mca_coll_offload_repsum_request(0, 0, sbuf, rbuf, count, dtype, 0, comm, NULL,
                                               request, &h->below);
    }
    return h->below.iallreduce(sbuf, rbuf, count, dtype,
                               mca_coll_offload_below_op(&h->below, dtype, op), comm, request,
                               h->below.iallreduce_module);
}

static int hier_ireduce(const void *sbuf, void *rbuf, ofl_count_t count,
                        struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                        struct ompi_communicator_t *comm, ompi_request_t **request,
                        mca_coll_base_module_t *module)
{
    hier_module_t *h = (hier_module_t *) module;
    if (OPAL_UNLIKELY(OFL_REPSUM_OFF != h->repsum.mode)
        && mca_coll_offload_repsum_wanted(&h->repsum, dtype, op, comm)) {
        return mca_coll_offload_repsum_request(1, 0, sbuf, rbuf, count, dtype, root, comm, NULL,
                                               request, &h->below);
    }
    return h->below.ireduce(sbuf, rbuf, count, dtype,
                            mca_coll_offload_below_op(&h->below, dtype, op), root, comm, request,
                            h->below.ireduce_module);
}

static int hier_allreduce_init(const void *sbuf, void *rbuf, ofl_count_t count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, struct ompi_info_t *info,
                               ompi_request_t **request, mca_coll_base_module_t *module)
{
    hier_module_t *h = (hier_module_t *) module;
    if (OPAL_UNLIKELY(OFL_REPSUM_OFF != h->repsum.mode)
        && mca_coll_offload_repsum_wanted(&h->repsum, dtype, op, comm)) {
        return mca_coll_offload_repsum_request(0, 1, sbuf, rbuf, count, dtype, 0, comm, info,
                                               request, &h->below);
    }
    return h->below.allreduce_init(sbuf, rbuf, count, dtype,
                                   mca_coll_offload_below_op(&h->below, dtype, op), comm, info,
                                   request, h->below.allreduce_init_module);
}

static int hier_reduce_init(const void *sbuf, void *rbuf, ofl_count_t count,
                            struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                            struct ompi_communicator_t *comm, struct ompi_info_t *info,
                            ompi_request_t **request, mca_coll_base_module_t *module)
{
    hier_module_t *h = (hier_module_t *) module;
    if (OPAL_UNLIKELY(OFL_REPSUM_OFF != h->repsum.mode)
        && mca_coll_offload_repsum_wanted(&h->repsum, dtype, op, comm)) {
        return mca_coll_offload_repsum_request(1, 1, sbuf, rbuf, count, dtype, root, comm, info,
                                               request, &h->below);
    }
    return h->below.reduce_init(sbuf, rbuf, count, dtype,
                                mca_coll_offload_below_op(&h->below, dtype, op), root, comm, info,
                                request, h->below.reduce_init_module);
}

mca_coll_base_module_t *mca_coll_offload_hier_query(struct ompi_communicator_t *comm,
                                                    int *priority)
{
    hier_module_t *h = OBJ_NEW(hier_module_t);
    if (NULL == h) {
        return NULL;
    }
    h->super.coll_module_enable = mca_coll_offload_hier_enable;
    h->super.coll_module_disable = mca_coll_offload_hier_disable;
    h->super.coll_allreduce = hier_allreduce;
    h->super.coll_reduce = hier_reduce;
    h->super.coll_bcast = hier_bcast;
    h->super.coll_barrier = hier_barrier;
    h->super.coll_iallreduce = hier_iallreduce;
    h->super.coll_ireduce = hier_ireduce;
    h->super.coll_allreduce_init = hier_allreduce_init;
    h->super.coll_reduce_init = hier_reduce_init;
    mca_coll_offload_passthru_install(&h->super);
    *priority = mca_coll_offload_component.params.priority;
    (void) comm;
    return &h->super;
}
