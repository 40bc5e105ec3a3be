/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the collective entry points: offload or hand to the layer below.
 *
 * Every decision depends only on arguments that MPI requires to be the same on
 * all ranks (op, datatype, count for reductions; the byte size for bcast), on MCA
 * values, and on the communicator's agreed state, so every rank of a call takes
 * the same path.
 */
#include "coll_offload_decide.h"
#include "coll_offload_exec.h"
#include "coll_offload_inject.h"
#include "coll_offload_types.h"

#include <errno.h>
#include <string.h>

#include "glue.h"
#include "ompi/datatype/ompi_datatype.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/util/output.h"

static const char *const mpi_names[OFL_COLL_COUNT] = {
    "MPI_Allreduce", "MPI_Reduce", "MPI_Bcast", "MPI_Barrier"
};

enum {
    R_OFFLOAD = OFL_R_OFFLOAD,
    R_USER_OP = OFL_R_USER_OP,
    R_TYPE = OFL_R_TYPE,
    R_OP_TYPE = OFL_R_OP_TYPE,
    R_SIZE = OFL_R_SIZE,
    R_NIC = OFL_R_NIC,
    R_POLICY = OFL_R_POLICY,
    R_UNSET = OFL_R_UNSET
};

/* The end of a blocking call that failed: what the communicator is left with. */
static inline int failed(mca_coll_offload_module_t *m, ofl_wait_status_t st)
{
    if (OFL_WAIT_MISMATCH == st) {
        m->state = OFL_MOD_BROKEN;
        return MPI_ERR_ARG;
    }
    /* The communicator's NIC state is now mid-call: nothing more runs on it. */
    m->state = OFL_MOD_DISABLED;
    return MPI_ERR_OTHER;
}

/* Count (and at verbose >= 10 explain) an offloaded blocking call. */
static inline void offload_note(ofl_coll_t coll, const ofl_call_t *call, const char *how,
                                struct ompi_communicator_t *comm)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    c->offloaded[coll]++;
    if (OPAL_UNLIKELY(c->params.verbose >= 10)) {
        opal_output(c->output, "coll:offload: %s %s %zu B: offload%s", comm->c_name,
                    ofl_coll_name(coll), call->count * call->elem, how);
    }
}

/* Nonblocking calls are outstanding: a blocking call (program or board) queues
 * behind them and runs under the executor lock (engine/queue.h). */
static int run_queued(mca_coll_offload_module_t *m, ofl_coll_t coll, const ofl_program_t *prog,
                      const ofl_call_t *call, int board, int root,
                      struct ompi_communicator_t *comm)
{
    int who = -1, cnt = OFL_CNT_DATA * OFL_CHANNELS, error = 0;
    uint64_t have = 0;
    int64_t need = 0;
    ofl_wait_status_t st = ofl_queue_blocking(&m->queue, prog, call, board, root, &who,
                                                           &cnt, &have, &need, &error);
    if (OPAL_LIKELY(OFL_WAIT_OK == st)) {
        return OMPI_SUCCESS;
    }
    int rc = failed(m, st);
    mca_coll_offload_report(m, mpi_names[coll], comm, st, who, cnt, have, need, error);
    return rc;
}

static int run(mca_coll_offload_module_t *m, ofl_coll_t coll, ofl_alg_t alg, int root,
               ofl_call_t *call, struct ompi_communicator_t *comm)
{
    const ofl_program_t *prog = mca_coll_offload_program(m, coll, alg, root);
    offload_note(coll, call, "", comm);
    call->seg_bytes = mca_coll_offload_segment(prog, call->count * call->elem);
    if (OPAL_UNLIKELY(0 != ofl_queue_active(&m->queue))) {
        return run_queued(m, coll, prog, call, 0, 0, comm);
    }
    int who = -1, cnt = OFL_CNT_DATA * OFL_CHANNELS, peer = -1;
    uint64_t have = 0;
    int64_t need = 0;
    ofl_wait_status_t st = ofl_engine_run(&m->inst, prog, m->nic, &m->edges, call,
                                          &m->wait_opts, &peer);
    if (OPAL_LIKELY(OFL_WAIT_OK == st)) {
        return OMPI_SUCCESS;
    }
    int rc = failed(m, st);
    if (!ofl_engine_blocker(&m->inst, &who, &cnt, &have, &need)) {
        who = peer;
    }
    mca_coll_offload_report(m, mpi_names[coll], comm, st,
                            OFL_WAIT_PEER_DEAD == st || OFL_WAIT_MISMATCH == st ? peer : who,
                            cnt, have, need, m->inst.error);
    return rc;
}

/* A blocking allreduce, reduce, bcast or barrier on the board (engine/board.h):
 * an allreduce or a barrier waits for every rank; a reduce only at its root, for
 * the others' payloads; a bcast only at the others, for the root's. */
static int run_board(mca_coll_offload_module_t *m, ofl_coll_t coll, ofl_board_kind_t kind,
                     int root, const ofl_call_t *call, struct ompi_communicator_t *comm)
{
    offload_note(coll, call, " (board)", comm);
    if (OPAL_UNLIKELY(0 != ofl_queue_active(&m->queue))) {
        /* a board call may post only once those are done (board.h) */
        return run_queued(m, coll, NULL, call, 1 + (int) kind, root, comm);
    }
    int peer = -1;
    ofl_board_call_t c;
    ofl_board_prepare(&c, m->nic, 0, call->send, call->recv, call->count, call->elem,
                      call->fn);
    ofl_board_rooted(&c, kind, root);
    ofl_board_sign(&c, call->sig, call->callno);
    ofl_board_number(&m->board_state, &c);
    uint64_t seq = c.seq;
    ofl_wait_status_t st = ofl_board_run(&c, &m->wait_opts, &peer);
    if (OPAL_LIKELY(OFL_WAIT_OK == st)) {
        return OMPI_SUCCESS;
    }
    int rc = failed(m, st);
    /* a board call fails only on a corrupt value or a mismatch (board.h) */
    mca_coll_offload_report(m, mpi_names[coll], comm, st, peer, OFL_CNT_DATA * OFL_CHANNELS,
                            0, (int64_t) seq, OFL_WAIT_FAILED == st ? -EPROTO : 0);
    return rc;
}

static inline int run_allreduce(mca_coll_offload_module_t *m, ofl_alg_t alg, ofl_call_t *call,
                                struct ompi_communicator_t *comm)
{
    if (mca_coll_offload_board_takes(m, alg, call->count * call->elem)) {
        return run_board(m, OFL_COLL_ALLREDUCE, OFL_BOARD_ALL, 0, call, comm);
    }
    return run(m, OFL_COLL_ALLREDUCE, alg, 0, call, comm);
}

/* The allreduce after the reproducible-mode check: inlined into both entries
 * (a call between them would cost the ordinary path a frame). */
static inline __attribute__((always_inline)) int
allreduce_body(const void *sbuf, void *rbuf, ofl_count_t count, struct ompi_datatype_t *dtype,
               struct ompi_op_t *op, struct ompi_communicator_t *comm,
               mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    if (OPAL_LIKELY(dtype == m->ar_last.dtype && op == m->ar_last.op
                    && count == m->ar_last.count)) {
        /* a repeat of the last offloaded call (0 or -1: the communicator is no longer
         * ready, nothing was recorded, the full path below says what to do) */
        int64_t callno = mca_coll_offload_begin(m, m->ar_last.sig);
        if (OPAL_UNLIKELY(OFL_ALG_FALLBACK == m->ar_last.alg) && OPAL_LIKELY(callno > 0)) {
            /* a repeat of the last hand-down, which was found not to wait for the
             * records: only what the layer below needs */
            int rc = mca_coll_offload_unrefused(m, mpi_names[OFL_COLL_ALLREDUCE], comm);
            if (OPAL_UNLIKELY(MPI_SUCCESS != rc)) {
                return rc;
            }
            mca_coll_offload_component.fallback[OFL_COLL_ALLREDUCE]++;
            return m->below.allreduce(sbuf, rbuf, count, dtype, m->ar_last.below_op, comm,
                                      m->below.allreduce_module);
        }
        if (OPAL_LIKELY(callno > 0)) {
            ofl_call_t call = { .send = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf, .recv = rbuf,
                                .fn = m->ar_last.fn, .elem = m->ar_last.elem,
                                .count = (size_t) count, .sig = m->ar_last.sig,
                                .callno = (uint64_t) callno };
            return run_allreduce(m, m->ar_last.alg, &call, comm);
        }
    }
    ofl_call_t call = { 0 };
    ofl_alg_t alg = OFL_ALG_FALLBACK;
    int reason = decide_check_reduction(m, OFL_COLL_ALLREDUCE, dtype, op, count, &call, &alg);
    int setup_rc;
    if (R_OFFLOAD == reason && !decide_ensure_ready(m, comm, &setup_rc)) {
        if (OMPI_SUCCESS != setup_rc) {
            return setup_rc;
        }
        reason = R_NIC;
    }
    size_t bytes = count > 0 ? (size_t) count * dtype->super.size : 0;
    call.sig = mca_coll_offload_sig(OFL_COLL_ALLREDUCE, dtype, op, -1, bytes);
    int64_t callno = mca_coll_offload_begin(m, call.sig);
    if (R_OFFLOAD != reason || OPAL_UNLIKELY(callno <= 0) || 0 == call.count) {
        int rc = mca_coll_offload_agree(m, mpi_names[OFL_COLL_ALLREDUCE], call.sig, callno,
                                        reason, bytes, comm);
        if (MPI_SUCCESS != rc) {
            return rc;
        }
        if (R_OFFLOAD == reason && callno > 0) {
            /* empty: nothing to move once every rank has said so */
            mca_coll_offload_component.offloaded[OFL_COLL_ALLREDUCE]++;
            return OMPI_SUCCESS;
        }
        decide_fallback_note(OFL_COLL_ALLREDUCE, R_OFFLOAD == reason ? R_NIC : reason, bytes, comm);
        struct ompi_op_t *below_op = mca_coll_offload_below_op(&m->below, dtype, op);
        if (callno > 0 && R_OFFLOAD != reason && ompi_datatype_is_predefined(dtype)
            && !mca_coll_offload_agree_waits(m, reason, bytes)
            && mca_coll_offload_component.params.verbose < 10) {
            m->ar_last.dtype = dtype;
            m->ar_last.op = op;
            m->ar_last.count = count;
            m->ar_last.alg = OFL_ALG_FALLBACK;
            m->ar_last.sig = call.sig;
            m->ar_last.below_op = below_op;
        }
        return m->below.allreduce(sbuf, rbuf, count, dtype, below_op, comm,
                                  m->below.allreduce_module);
    }
    call.callno = (uint64_t) callno;
    call.send = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
    call.recv = rbuf;
    m->ar_last.dtype = dtype;
    m->ar_last.op = op;
    m->ar_last.count = count;
    m->ar_last.alg = alg;
    m->ar_last.fn = call.fn;
    m->ar_last.elem = call.elem;
    m->ar_last.sig = call.sig;
    return run_allreduce(m, alg, &call, comm);
}

int mca_coll_offload_allreduce_wire(const void *sbuf, void *rbuf, ofl_count_t count,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm,
                                    mca_coll_base_module_t *module)
{
    return allreduce_body(sbuf, rbuf, count, dtype, op, comm, module);
}

/* Reproducible mode, not a repeat: the kind and mode checks. */
static __attribute__((noinline)) int
allreduce_repsum_first(const void *sbuf, void *rbuf, ofl_count_t count,
                       struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                       struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    if (mca_coll_offload_repsum_wanted(&m->repsum, dtype, op, comm)) {
        return mca_coll_offload_repsum_allreduce(&m->repsum, sbuf, rbuf, count, dtype, comm,
                                                 module, mca_coll_offload_allreduce_wire);
    }
    return mca_coll_offload_allreduce_wire(sbuf, rbuf, count, dtype, op, comm, module);
}

/* A communicator whose mode is not off. Only tail calls: a repeat of the last
 * reproducible call goes straight to its conversions. */
static __attribute__((noinline)) int
allreduce_repsum(const void *sbuf, void *rbuf, ofl_count_t count, struct ompi_datatype_t *dtype,
                 struct ompi_op_t *op, struct ompi_communicator_t *comm,
                 mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    if (OPAL_LIKELY(mca_coll_offload_repsum_again(&m->repsum, dtype, op, count))) {
        return mca_coll_offload_repsum_allreduce_again(&m->repsum, sbuf, rbuf, comm, module,
                                                       mca_coll_offload_allreduce_wire);
    }
    return allreduce_repsum_first(sbuf, rbuf, count, dtype, op, comm, module);
}

/* Only tail calls: neither path pays for the other's frame. */
int mca_coll_offload_allreduce(const void *sbuf, void *rbuf, ofl_count_t count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    if (OPAL_LIKELY(OFL_REPSUM_OFF == ((mca_coll_offload_module_t *) module)->repsum.mode)) {
        return mca_coll_offload_allreduce_wire(sbuf, rbuf, count, dtype, op, comm, module);
    }
    return allreduce_repsum(sbuf, rbuf, count, dtype, op, comm, module);
}

static int reduce_impl(const void *sbuf, void *rbuf, ofl_count_t count,
                       struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                       struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                       int ignore_policy)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    const mca_coll_offload_params_t *p = &mca_coll_offload_component.params;
    size_t bytes = count > 0 ? (size_t) count * dtype->super.size : 0;
    uint64_t sig = mca_coll_offload_sig(OFL_COLL_REDUCE, dtype, op, root, bytes);
    ofl_alg_t alg;
    int chosen = ofl_choose(&m->choice, OFL_COLL_REDUCE, bytes, &alg);
    if (!ignore_policy && OFL_CHOSEN_POLICY == chosen) {
        /* The reduces the size policy hands down: straight down, before mapping
         * the op (the size a mapped call would have is this one, or it falls back
         * anyway). */
        int rc = mca_coll_offload_agree(m, mpi_names[OFL_COLL_REDUCE], sig,
                                        mca_coll_offload_begin(m, sig), R_POLICY, bytes, comm);
        if (MPI_SUCCESS != rc) {
            return rc;
        }
        decide_fallback_note(OFL_COLL_REDUCE, R_POLICY, bytes, comm);
        return m->below.reduce(sbuf, rbuf, count, dtype,
                               mca_coll_offload_below_op(&m->below, dtype, op), root, comm,
                               m->below.reduce_module);
    }
    ofl_call_t call = { 0 };
    int reason = decide_map(m, dtype, op, &call);
    if (0 == reason) {
        /* the size is the mapped call's (one element per element of dtype) */
        call.count = count > 0 ? (size_t) count : 0;
        reason = decide_reason(chosen);
    }
    if (R_POLICY == reason && ignore_policy) {
        reason = R_OFFLOAD;
    }
    int setup_rc;
    if (R_OFFLOAD == reason && !decide_ensure_ready(m, comm, &setup_rc)) {
        if (OMPI_SUCCESS != setup_rc) {
            return setup_rc;
        }
        reason = R_NIC;
    }
    call.sig = sig;
    int64_t callno = mca_coll_offload_begin(m, sig);
    if (R_OFFLOAD != reason || OPAL_UNLIKELY(callno <= 0) || 0 == call.count) {
        int rc = mca_coll_offload_agree(m, mpi_names[OFL_COLL_REDUCE], sig, callno, reason,
                                        bytes, comm);
        if (MPI_SUCCESS != rc) {
            return rc;
        }
        if (R_OFFLOAD == reason && callno > 0) {
            mca_coll_offload_component.offloaded[OFL_COLL_REDUCE]++;
            return OMPI_SUCCESS;
        }
        decide_fallback_note(OFL_COLL_REDUCE, R_OFFLOAD == reason ? R_NIC : reason, bytes, comm);
        return m->below.reduce(sbuf, rbuf, count, dtype,
                               mca_coll_offload_below_op(&m->below, dtype, op), root, comm,
                               m->below.reduce_module);
    }
    if (OPAL_UNLIKELY(p->check)) {
        /* full checks: every rank's record of this call first (a rank whose part
         * only sends would not see a mismatch in the call itself) */
        int rc = mca_coll_offload_agree(m, mpi_names[OFL_COLL_REDUCE], sig, callno, reason,
                                        bytes, comm);
        if (MPI_SUCCESS != rc) {
            return rc;
        }
    }
    call.callno = (uint64_t) callno;
    call.send = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
    call.recv = rbuf;
    if (mca_coll_offload_board_takes(m, alg, call.count * call.elem)) {
        return run_board(m, OFL_COLL_REDUCE, OFL_BOARD_REDUCE, root, &call, comm);
    }
    return run(m, OFL_COLL_REDUCE, alg, root, &call, comm);
}

int mca_coll_offload_reduce(const void *sbuf, void *rbuf, ofl_count_t count,
                            struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    if (OPAL_UNLIKELY(OFL_REPSUM_OFF != m->repsum.mode)
        && mca_coll_offload_repsum_wanted(&m->repsum, dtype, op, comm)) {
        return mca_coll_offload_repsum_reduce(&m->repsum, sbuf, rbuf, count, dtype, root,
                                              comm, module, mca_coll_offload_reduce,
                                              mca_coll_offload_allreduce);
    }
    return reduce_impl(sbuf, rbuf, count, dtype, op, root, comm, module, 0);
}

int mca_coll_offload_reduce_node(const void *sbuf, void *rbuf, ofl_count_t count,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                                 struct ompi_communicator_t *comm,
                                 mca_coll_base_module_t *module)
{
    return reduce_impl(sbuf, rbuf, count, dtype, op, root, comm, module, 1);
}

/* A bcast small enough for the board: the root posts its bytes, the others copy
 * them from its lines. */
static int bcast_board(mca_coll_offload_module_t *m, void *buf, ofl_count_t count,
                       struct ompi_datatype_t *dtype, int root, int staged, ofl_call_t *call,
                       struct ompi_communicator_t *comm)
{
    size_t bytes = call->count;
    unsigned char *data = m->board_scratch;
    if (!staged) {
        ptrdiff_t true_lb = 0, true_extent = 0;
        ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
        data = (unsigned char *) buf + true_lb;
    } else if (m->rank == root && 0 != mca_coll_offload_stage(data, buf, count, dtype, bytes, 1)) {
        return mca_coll_offload_fail_here(m, comm, "MPI_Bcast", "packing the root's data failed",
                                          OMPI_ERROR);
    }
    call->send = data;
    call->recv = data;
    int rc = run_board(m, OFL_COLL_BCAST, OFL_BOARD_BCAST, root, call, comm);
    if (OMPI_SUCCESS == rc && staged && m->rank != root
        && 0 != mca_coll_offload_stage(data, buf, count, dtype, bytes, 0)) {
        return OMPI_ERROR;
    }
    return rc;
}

int mca_coll_offload_bcast(void *buf, ofl_count_t count, struct ompi_datatype_t *dtype, int root,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    size_t bytes = count > 0 ? (size_t) count * dtype->super.size : 0;
    ofl_alg_t alg = OFL_ALG_FALLBACK;
    /* Only the byte size may decide: type signatures match across ranks but
     * layouts need not, so a non-contiguous layout is staged, not refused. */
    int reason = decide_check_size(m, OFL_COLL_BCAST, bytes, &alg);
    int setup_rc;
    if (R_OFFLOAD == reason && !decide_ensure_ready(m, comm, &setup_rc)) {
        if (OMPI_SUCCESS != setup_rc) {
            return setup_rc;
        }
        reason = R_NIC;
    }
    /* the byte size, not the datatype: layouts may differ between ranks */
    uint64_t sig = mca_coll_offload_sig(OFL_COLL_BCAST, NULL, NULL, root, bytes);
    int64_t callno = mca_coll_offload_begin(m, sig);
    if (R_OFFLOAD != reason || OPAL_UNLIKELY(callno <= 0) || 0 == bytes) {
        int rc = mca_coll_offload_agree(m, mpi_names[OFL_COLL_BCAST], sig, callno, reason,
                                        bytes, comm);
        if (MPI_SUCCESS != rc) {
            return rc;
        }
        if (R_OFFLOAD == reason && callno > 0) {
            mca_coll_offload_component.offloaded[OFL_COLL_BCAST]++;
            return OMPI_SUCCESS;
        }
        decide_fallback_note(OFL_COLL_BCAST, R_OFFLOAD == reason ? R_NIC : reason, bytes, comm);
        return m->below.bcast(buf, count, dtype, root, comm, m->below.bcast_module);
    }
    if (OPAL_UNLIKELY(mca_coll_offload_component.params.check)) {
        /* full checks: every rank's record of this call first (see reduce) */
        int rc = mca_coll_offload_agree(m, mpi_names[OFL_COLL_BCAST], sig, callno, reason,
                                        bytes, comm);
        if (MPI_SUCCESS != rc) {
            return rc;
        }
    }
    ofl_call_t call = { .fn = NULL, .elem = 1, .count = bytes, .sig = sig,
                        .callno = (uint64_t) callno };
    int staged = !ompi_datatype_is_contiguous_memory_layout(dtype, count);
    if (mca_coll_offload_board_takes(m, alg, bytes)) {
        return bcast_board(m, buf, count, dtype, root, staged, &call, comm);
    }
    if (OPAL_LIKELY(!staged)) {
        ptrdiff_t true_lb = 0, true_extent = 0;
        ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
        call.send = call.recv = (char *) buf + true_lb;
        return run(m, OFL_COLL_BCAST, alg, root, &call, comm);
    }
    if (m->pack_bytes < bytes) {
        void *p = NULL;
        if (!mca_coll_offload_inject(OFL_INJECT_STAGE, m->rank)) {
            p = realloc(m->pack, bytes);
        }
        if (NULL == p) {
            /* The others may already be in the program (and layouts, hence
             * staging, may differ between ranks: no agreement is possible
             * here): every rank waiting on us must fail too, now. */
            return mca_coll_offload_fail_here(m, comm, "MPI_Bcast",
                                              "cannot allocate the staging buffer",
                                              OMPI_ERR_OUT_OF_RESOURCE);
        }
        m->pack = p;
        m->pack_bytes = bytes;
    }
    if (m->rank == root && 0 != mca_coll_offload_stage(m->pack, buf, count, dtype, bytes, 1)) {
        return mca_coll_offload_fail_here(m, comm, "MPI_Bcast", "packing the root's data failed",
                                          OMPI_ERROR);
    }
    call.send = call.recv = m->pack;
    int rc = run(m, OFL_COLL_BCAST, alg, root, &call, comm);
    if (OMPI_SUCCESS == rc && m->rank != root
        && 0 != mca_coll_offload_stage(m->pack, buf, count, dtype, bytes, 0)) {
        return OMPI_ERROR;
    }
    return rc;
}

int mca_coll_offload_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    ofl_alg_t alg = m->choice.barrier;
    int reason = OFL_ALG_FALLBACK == alg ? R_POLICY : R_OFFLOAD;
    int setup_rc;
    if (R_OFFLOAD == reason && !decide_ensure_ready(m, comm, &setup_rc)) {
        if (OMPI_SUCCESS != setup_rc) {
            return setup_rc;
        }
        reason = R_NIC;
    }
    uint64_t sig = mca_coll_offload_sig(OFL_COLL_BARRIER, NULL, NULL, -1, 0);
    int64_t callno = mca_coll_offload_begin(m, sig);
    if (R_OFFLOAD != reason || OPAL_UNLIKELY(callno <= 0)) {
        int rc = mca_coll_offload_agree(m, mpi_names[OFL_COLL_BARRIER], sig, callno, reason, 0,
                                        comm);
        if (MPI_SUCCESS != rc) {
            return rc;
        }
        decide_fallback_note(OFL_COLL_BARRIER, R_OFFLOAD == reason ? R_NIC : reason, 0, comm);
        return m->below.barrier(comm, m->below.barrier_module);
    }
    ofl_call_t call = { .send = NULL, .recv = NULL, .fn = NULL, .elem = 1, .count = 0,
                        .sig = sig, .callno = (uint64_t) callno };
    if (OPAL_UNLIKELY(m->choice.crowded)) {
        /* known since the set-up, which this call may have made */
        alg = m->choice.barrier;
    }
    if (mca_coll_offload_board_takes(m, alg, 0)) {
        return run_board(m, OFL_COLL_BARRIER, OFL_BOARD_ALL, 0, &call, comm);
    }
    return run(m, OFL_COLL_BARRIER, alg, 0, &call, comm);
}
