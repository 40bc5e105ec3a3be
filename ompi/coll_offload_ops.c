/*
 * coll/offload — the collective entry points: offload or hand to the layer below.
 *
 * Every decision depends only on arguments that MPI requires to be the same on
 * all ranks (op, datatype, count for reductions; the byte size for bcast), on MCA
 * values, and on the communicator's agreed state, so every rank of a call takes
 * the same path.
 */
#include "coll_offload.h"

#include <string.h>

#include "glue.h"
#include "ompi/datatype/ompi_datatype.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/util/output.h"

static const char *const reasons[] = {
    "offload",
    "user-defined op",
    "datatype not on the ALU",
    "op not defined on datatype",
    "above the size limit",
    "NIC unavailable on this communicator",
    "the size policy chose the fallback",
};

static const char *const mpi_names[OFL_COLL_COUNT] = {
    "MPI_Allreduce", "MPI_Reduce", "MPI_Bcast", "MPI_Barrier"
};

enum {
    R_OFFLOAD = 0,
    R_USER_OP = 1,
    R_TYPE = 2,
    R_OP_TYPE = 3,
    R_SIZE = 4,
    R_NIC = 5,
    R_POLICY = 6
};

static inline void fallback_note(ofl_coll_t coll, int reason, size_t bytes,
                                 struct ompi_communicator_t *comm)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    c->fallback[coll]++;
    if (OPAL_UNLIKELY(c->params.verbose >= 10)) {
        opal_output(c->output, "coll:offload: %s %s %zu B: fallback (%s)", comm->c_name,
                    ofl_coll_name(coll), bytes, reasons[reason]);
    }
}

/* Lazy, collective set-up at the first offloaded call; same outcome on all ranks. */
static inline int ensure_ready(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm)
{
    if (OPAL_LIKELY(OFL_MOD_READY == m->state)) {
        return 1;
    }
    if (OFL_MOD_UNSET == m->state) {
        if (OMPI_SUCCESS != mca_coll_offload_setup(m, comm)) {
            m->state = OFL_MOD_DISABLED;
        }
    }
    return OFL_MOD_READY == m->state;
}

/* Segment size for a call: a handful of segments per message (per owner for the
 * split program) so that moving and combining overlap, but never below the size
 * where per-segment handshakes would dominate. */
static inline size_t pick_segment(const ofl_program_t *prog, size_t bytes)
{
    if (prog->byref) {
        /* a reference per segment: few and large (each read is a system call) */
        size_t seg = bytes / 4;
        return seg < 65536 ? 65536 : seg;
    }
    size_t pieces = 8 * (size_t) prog->period;
    size_t seg = bytes / pieces;
    return seg < 16384 ? 16384 : seg;
}

static int run(mca_coll_offload_module_t *m, ofl_coll_t coll, const ofl_program_t *prog,
               ofl_call_t *call, struct ompi_communicator_t *comm)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    c->offloaded[coll]++;
    if (OPAL_UNLIKELY(c->params.verbose >= 10)) {
        opal_output(c->output, "coll:offload: %s %s %zu B: offload", comm->c_name,
                    ofl_coll_name(coll), call->count * call->elem);
    }
    call->seg_bytes = pick_segment(prog, call->count * call->elem);
    ofl_engine_post(&m->inst, prog, &m->nic.base, &m->edges, call);
    if (OPAL_LIKELY(ofl_engine_progress(&m->inst) > 0)) {
        return OMPI_SUCCESS;
    }
    ofl_wait_opts_t opts = {
        .progress = ofl_glue_progress,
        .ctx = NULL,
        .spin_before_yield = ofl_glue_spin_before_yield(&c->params),
        .timeout_s = c->params.watchdog,
        .liveness_period_s = c->params.liveness_period > 0 ? c->params.liveness_period : 0.1,
    };
    int peer = -1;
    ofl_wait_status_t st = ofl_engine_wait(&m->inst, &opts, &peer);
    if (OPAL_LIKELY(OFL_WAIT_OK == st)) {
        return OMPI_SUCCESS;
    }
    /* The communicator's NIC state is now mid-call: nothing more runs on it. */
    m->state = OFL_MOD_DISABLED;
    int who, cnt;
    uint64_t have = 0;
    int64_t need = 0;
    if (!ofl_engine_blocker(&m->inst, &who, &cnt, &have, &need)) {
        who = peer;
    }
    if (OFL_WAIT_FAILED == st) {
        opal_output(0,
                    "coll:offload: %s on communicator %s (cid %u) rank %d: reading a peer's "
                    "memory failed (%s); returning MPI_ERR_OTHER",
                    mpi_names[coll], comm->c_name, comm->c_contextid, m->rank,
                    strerror(-m->inst.error));
    } else if (OFL_WAIT_PEER_DEAD == st) {
        opal_output(0,
                    "coll:offload: %s on communicator %s (cid %u): rank %d of that "
                    "communicator is gone (its process exited); returning MPI_ERR_OTHER",
                    mpi_names[coll], comm->c_name, comm->c_contextid, peer);
    } else {
        opal_output(0,
                    "coll:offload: %s on communicator %s (cid %u) rank %d: watchdog: "
                    "waited more than %.3g s; still missing rank %d (%s counter %llu of %lld); "
                    "returning MPI_ERR_OTHER",
                    mpi_names[coll], comm->c_name, comm->c_contextid, m->rank,
                    c->params.watchdog, who, cnt / OFL_CHANNELS == OFL_CNT_DATA ? "data" : "credit",
                    (unsigned long long) have, (long long) need);
    }
    return MPI_ERR_OTHER;
}

/* The hard size cap, then the per-size policy. */
static inline int check_size(ofl_coll_t coll, size_t bytes, int ranks, ofl_alg_t *alg)
{
    const mca_coll_offload_params_t *p = &mca_coll_offload_component.params;
    if (bytes > p->max_bytes[coll]) {
        return R_SIZE;
    }
    *alg = ofl_policy_pick(&p->policy[coll], bytes, ranks);
    return OFL_ALG_FALLBACK == *alg ? R_POLICY : R_OFFLOAD;
}

static inline int check_reduction(ofl_coll_t coll, struct ompi_datatype_t *dtype,
                                  struct ompi_op_t *op, int count, int ranks, ofl_call_t *call,
                                  ofl_alg_t *alg)
{
    int reason = mca_coll_offload_map(dtype, op, &call->fn, &call->elem);
    if (0 != reason) {
        return reason;
    }
    call->count = count > 0 ? (size_t) count : 0;
    return check_size(coll, call->count * call->elem, ranks, alg);
}

int mca_coll_offload_allreduce(const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    ofl_call_t call = { 0 };
    ofl_alg_t alg;
    int reason = check_reduction(OFL_COLL_ALLREDUCE, dtype, op, count, m->size, &call,
                                 &alg);
    if (R_OFFLOAD == reason && !ensure_ready(m, comm)) {
        reason = R_NIC;
    }
    if (R_OFFLOAD != reason) {
        fallback_note(OFL_COLL_ALLREDUCE, reason, (size_t) count * dtype->super.size, comm);
        return m->prev_allreduce(sbuf, rbuf, count, dtype, op, comm, m->prev_allreduce_module);
    }
    call.send = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
    call.recv = rbuf;
    if (0 == call.count) {
        mca_coll_offload_component.offloaded[OFL_COLL_ALLREDUCE]++;
        return OMPI_SUCCESS;
    }
    const ofl_program_t *prog = &m->allreduce;
    if (OFL_ALG_EXCHANGE == alg && m->allreduce_x.ndesc > 0) {
        prog = &m->allreduce_x;
    } else if (OFL_ALG_SPLIT == alg && m->allreduce_s.ndesc > 0) {
        prog = &m->allreduce_s;
    }
    return run(m, OFL_COLL_ALLREDUCE, prog, &call, comm);
}

int mca_coll_offload_reduce(const void *sbuf, void *rbuf, int count,
                            struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    ofl_call_t call = { 0 };
    ofl_alg_t alg;
    int reason = check_reduction(OFL_COLL_REDUCE, dtype, op, count, m->size, &call, &alg);
    if (R_OFFLOAD == reason && !ensure_ready(m, comm)) {
        reason = R_NIC;
    }
    if (R_OFFLOAD != reason) {
        fallback_note(OFL_COLL_REDUCE, reason, (size_t) count * dtype->super.size, comm);
        return m->prev_reduce(sbuf, rbuf, count, dtype, op, root, comm, m->prev_reduce_module);
    }
    call.send = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
    call.recv = rbuf;
    if (0 == call.count) {
        mca_coll_offload_component.offloaded[OFL_COLL_REDUCE]++;
        return OMPI_SUCCESS;
    }
    return run(m, OFL_COLL_REDUCE, &m->reduce[root], &call, comm);
}

static inline const ofl_program_t *bcast_program(mca_coll_offload_module_t *m, ofl_alg_t alg,
                                                 int root)
{
    return (OFL_ALG_GET == alg && m->single_copy) ? &m->bcast_get[root] : &m->bcast[root];
}

/* Pack or unpack a non-contiguous bcast buffer through the module's staging
 * area. Returns 0, or -1 when memory for staging cannot be had. */
static int stage_bcast(mca_coll_offload_module_t *m, void *buf, int count,
                       struct ompi_datatype_t *dtype, size_t bytes, int pack)
{
    opal_convertor_t conv;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    int rc;
    if (pack) {
        rc = opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &dtype->super,
                                                      (size_t) count, buf, 0, &conv);
    } else {
        rc = opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &dtype->super,
                                                      (size_t) count, buf, 0, &conv);
    }
    if (OPAL_SUCCESS == rc) {
        struct iovec iov = { .iov_base = m->pack, .iov_len = bytes };
        uint32_t niov = 1;
        size_t max = bytes;
        rc = pack ? opal_convertor_pack(&conv, &iov, &niov, &max)
                  : opal_convertor_unpack(&conv, &iov, &niov, &max);
        rc = (rc >= 0 && max == bytes) ? 0 : -1;
    }
    OBJ_DESTRUCT(&conv);
    return rc;
}

int mca_coll_offload_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    size_t bytes = count > 0 ? (size_t) count * dtype->super.size : 0;
    ofl_alg_t alg;
    /* Only the byte size may decide: type signatures match across ranks but
     * layouts need not, so a non-contiguous layout is staged, not refused. */
    int reason = check_size(OFL_COLL_BCAST, bytes, m->size, &alg);
    if (R_OFFLOAD == reason && !ensure_ready(m, comm)) {
        reason = R_NIC;
    }
    if (R_OFFLOAD != reason) {
        fallback_note(OFL_COLL_BCAST, reason, bytes, comm);
        return m->prev_bcast(buf, count, dtype, root, comm, m->prev_bcast_module);
    }
    if (0 == bytes) {
        mca_coll_offload_component.offloaded[OFL_COLL_BCAST]++;
        return OMPI_SUCCESS;
    }
    ofl_call_t call = { .fn = NULL, .elem = 1, .count = bytes };
    int staged = !ompi_datatype_is_contiguous_memory_layout(dtype, count);
    if (OPAL_LIKELY(!staged)) {
        ptrdiff_t true_lb = 0, true_extent = 0;
        ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
        call.send = call.recv = (char *) buf + true_lb;
        return run(m, OFL_COLL_BCAST, bcast_program(m, alg, root), &call, comm);
    }
    if (m->pack_bytes < bytes) {
        void *p = realloc(m->pack, bytes);
        if (NULL == p) {
            /* Cannot stage here, but the others may already be in the program:
             * this is an out-of-resource error, not a silent divergence. */
            opal_output(0, "coll:offload: MPI_Bcast on %s: cannot allocate %zu bytes of staging",
                        comm->c_name, bytes);
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        m->pack = p;
        m->pack_bytes = bytes;
    }
    if (m->rank == root && 0 != stage_bcast(m, buf, count, dtype, bytes, 1)) {
        return OMPI_ERROR;
    }
    call.send = call.recv = m->pack;
    int rc = run(m, OFL_COLL_BCAST, bcast_program(m, alg, root), &call, comm);
    if (OMPI_SUCCESS == rc && m->rank != root && 0 != stage_bcast(m, buf, count, dtype, bytes, 0)) {
        return OMPI_ERROR;
    }
    return rc;
}

int mca_coll_offload_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    ofl_alg_t alg = ofl_policy_pick(&mca_coll_offload_component.params.policy[OFL_COLL_BARRIER],
                                    0, m->size);
    int reason = OFL_ALG_FALLBACK == alg ? R_POLICY : R_OFFLOAD;
    if (R_OFFLOAD == reason && !ensure_ready(m, comm)) {
        reason = R_NIC;
    }
    if (R_OFFLOAD != reason) {
        fallback_note(OFL_COLL_BARRIER, reason, 0, comm);
        return m->prev_barrier(comm, m->prev_barrier_module);
    }
    ofl_call_t call = { .send = NULL, .recv = NULL, .fn = NULL, .elem = 1, .count = 0 };
    const ofl_program_t *prog = &m->barrier;
    if (OFL_ALG_EXCHANGE == alg && m->barrier_x.ndesc > 0) {
        prog = &m->barrier_x;
    }
    return run(m, OFL_COLL_BARRIER, prog, &call, comm);
}
