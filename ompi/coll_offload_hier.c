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
 */
#include "coll_offload.h"

#include <errno.h>

#include <stdlib.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/op/op.h"
#include "opal/util/info.h"
#include "opal/util/output.h"

#include "glue.h"
#include "nic/ofi.h"

/* A reduce crosses the node level in chunks of this many bytes at most, so a
 * leader needs a fixed scratch reserved at set-up rather than one per call
 * that could fail on one rank while the others go on. */
#define HIER_SCRATCH_BYTES ((size_t) 1 << 20)

typedef enum { HIER_UNSET = 0, HIER_SETTING_UP, HIER_READY, HIER_DISABLED } hier_state_t;

typedef struct {
    mca_coll_base_module_t super;
    mca_coll_offload_below_t below;  /* saved and retained in enable */

    hier_state_t state;
    ompi_communicator_t *local;     /* the ranks of my node */
    ompi_communicator_t *leaders;   /* one rank per node; MPI_COMM_NULL off leaders */
    int lrank;                      /* my rank in local */
    int *node_of;                   /* [size]: each rank's node (its leader's rank in leaders) */
    int *lrank_of;                  /* [size]: each rank's rank in its node */
    int nnodes;
    void *tmp;                      /* a leader's partial results in a reduce, one chunk
                                       of HIER_SCRATCH_BYTES at a time (leaders only) */

    /* The leaders' level on the libfabric NIC. net_ready: on a leader, its NIC
     * is up (agreed among leaders); on the others, their leader's is. */
    unsigned calls;                 /* node-aware calls so far (up to ofi_after + 1) */
    int net_ready;
    ofl_ofi_t *ofi;
    ofl_edges_t net_edges;
    ofl_program_t net_allreduce;
    ofl_program_t net_barrier;
    ofl_inst_t net_inst;
    mca_coll_offload_repsum_t repsum;   /* reproducible sums: the node-aware calls
                                           carry the binned elements too */
} hier_module_t;

static int net_warned;

static void hier_construct(hier_module_t *h)
{
    memset((char *) h + sizeof(h->super), 0, sizeof(*h) - sizeof(h->super));
    h->local = MPI_COMM_NULL;
    h->leaders = MPI_COMM_NULL;
    mca_coll_offload_wrap_ops_retain();
}

static void net_release(hier_module_t *h)
{
    /* Programs are compiled before the NIC opens: free them either way. */
    ofl_program_free(&h->net_allreduce);
    ofl_program_free(&h->net_barrier);
    ofl_edges_fini(&h->net_edges);
    if (NULL != h->ofi) {
        ofl_ofi_close(h->ofi);
        h->ofi = NULL;
    }
    h->net_ready = 0;
}

static void hier_destruct(hier_module_t *h)
{
    net_release(h);
    if (MPI_COMM_NULL != h->leaders) {
        ompi_comm_free(&h->leaders);
    }
    if (MPI_COMM_NULL != h->local) {
        ompi_comm_free(&h->local);
    }
    free(h->node_of);
    free(h->lrank_of);
    free(h->tmp);
    mca_coll_offload_repsum_fini(&h->repsum);
    mca_coll_offload_below_release(&h->below);
    mca_coll_offload_wrap_ops_release();
}

static OBJ_CLASS_INSTANCE(hier_module_t, mca_coll_base_module_t, hier_construct, hier_destruct);

_Static_assert(offsetof(hier_module_t, below) == offsetof(mca_coll_offload_base_module_t, below),
               "the pass-through entries find the layer below at the same place in both modules");

static int hier_disable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    (void) module;
    (void) comm;
    return OMPI_SUCCESS;
}

static int hier_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    hier_module_t *h = (hier_module_t *) module;
    /* Everything we replace, saved before anything is touched; set-up also
     * needs the allgather we leave in place. */
    if (NULL == comm->c_coll->coll_allgather
        || OMPI_SUCCESS != mca_coll_offload_below_save(&h->below, comm)) {
        return OMPI_ERROR;
    }
    mca_coll_offload_below_trim(&h->super, &h->below);
    return OMPI_SUCCESS;
}

/* Leaders only, collective over the leaders' communicator: open the libfabric
 * NIC, exchange address blobs, compile the leaders' programs, agree. */
static void net_setup(hier_module_t *h)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    ompi_communicator_t *up = h->leaders;
    int n = ompi_comm_size(up), me = ompi_comm_rank(up);
    char why[256] = "";
    const char *fabric = c->params.ofi_fabric;
    /* The programs first: the NIC is made for their peers only. */
    ofl_sched_params_t sp = {
        .reduce_kind = (ofl_tree_kind_t) c->params.reduce_tree,
        .reduce_radix = c->params.reduce_radix,
        .bcast_kind = (ofl_tree_kind_t) c->params.bcast_tree,
        .bcast_radix = c->params.bcast_radix,
        .slots = c->params.slots,
        .shape = n <= c->params.exchange_max_ranks ? OFL_SCHED_EXCHANGE : OFL_SCHED_TREE,
    };
    int compiled = 0 == ofl_edges_init(&h->net_edges, n)
                   && 0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, me, n, &sp,
                                             &h->net_allreduce)
                   && 0 == ofl_sched_compile(OFL_COLL_BARRIER, 0, me, n, &sp, &h->net_barrier);
    int peers[2 * OFL_PROG_MAX_PEERS], npeers = 0;
    if (compiled) {
        for (int i = 0; i < h->net_allreduce.npeers; ++i) {
            peers[npeers++] = h->net_allreduce.peers[i];
        }
        for (int i = 0; i < h->net_barrier.npeers; ++i) {
            peers[npeers++] = h->net_barrier.peers[i];
        }
        h->ofi = ofl_ofi_open(me, n, peers, npeers, c->params.slots, c->params.segment_size,
                              c->params.ofi_provider, NULL != fabric && *fabric ? fabric : NULL,
                              why, sizeof(why));
    } else {
        snprintf(why, sizeof(why), "cannot compile the leaders' programs");
    }
    size_t bb = ofl_ofi_blob_bytes(n);
    char *blobs = malloc(bb * (size_t) n);
    char *mine = calloc(1, bb);
    int ok = NULL != h->ofi && NULL != blobs && NULL != mine;
    if (ok) {
        ofl_ofi_address(h->ofi, mine);
    } else if ('\0' == why[0]) {
        snprintf(why, sizeof(why), "out of memory");
    }
    /* Everyone takes part, whatever happened here: the blobs of a failed rank
     * are zeros, which connect() refuses, and the agreement settles it. */
    int rc = up->c_coll->coll_allgather(NULL != mine ? mine : blobs, (int) bb, &ompi_mpi_byte.dt,
                                        blobs, (int) bb, &ompi_mpi_byte.dt, up,
                                        up->c_coll->coll_allgather_module);
    ok = ok && OMPI_SUCCESS == rc && 0 == ofl_ofi_connect(h->ofi, blobs, why, sizeof(why));
    free(blobs);
    free(mine);
    int all = ok;
    rc = up->c_coll->coll_allreduce(&ok, &all, 1, &ompi_mpi_int.dt, &ompi_mpi_op_min.op, up,
                                    up->c_coll->coll_allreduce_module);
    if (OMPI_SUCCESS == rc && all) {
        h->net_ready = 1;
        opal_output_verbose(1, c->output,
                            "coll:offload: %s leaders (%d nodes): libfabric NIC ready "
                            "(provider %s; %zu receiving streams; native triggered "
                            "collectives: %s)", up->c_name, n, ofl_ofi_provider(h->ofi),
                            ofl_ofi_streams(h->ofi),
                            !c->params.ofi_native ? "off (coll_offload_ofi_native=0)"
                            : ofl_ofi_native(h->ofi) ? "yes"
                                                     : "no (provider or number of nodes)");
        return;
    }
    if (!__atomic_exchange_n(&net_warned, 1, __ATOMIC_RELAXED)) {
        opal_output(0, "coll:offload: the node leaders' level stays with the component below: "
                    "the libfabric NIC (provider %s) did not start on every node leader%s%s",
                    *c->params.ofi_provider ? c->params.ofi_provider : "automatic",
                    ok ? "" : "; here: ", ok ? "" : why);
    }
    net_release(h);
}

/* The sub-communicators and the node layout. Collective over comm. */
static int hier_setup(hier_module_t *h, ompi_communicator_t *comm)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    int size = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
    h->state = HIER_SETTING_UP;
    opal_info_t info;
    OBJ_CONSTRUCT(&info, opal_info_t);
    int rc = ompi_comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, &info, &h->local);
    if (OMPI_SUCCESS == rc) {
        h->lrank = ompi_comm_rank(h->local);
        /* coll/offload stays out of the leaders' communicator: it spans nodes
         * and would split again. */
        rc = opal_info_set(&info, "ompi_comm_coll_preference", "^offload");
    }
    if (OMPI_SUCCESS == rc) {
        rc = ompi_comm_split_with_info(comm, 0 == h->lrank ? 0 : MPI_UNDEFINED, rank, &info,
                                       &h->leaders, false);
    }
    OBJ_DESTRUCT(&info);
    int mine[2] = { -1, -1 };
    int *all = NULL;
    if (OMPI_SUCCESS == rc) {
        mine[0] = h->lrank;
        mine[1] = MPI_COMM_NULL != h->leaders ? ompi_comm_rank(h->leaders) : -1;
        rc = h->local->c_coll->coll_bcast(&mine[1], 1, &ompi_mpi_int.dt, 0, h->local,
                                           h->local->c_coll->coll_bcast_module);
    }
    if (OMPI_SUCCESS == rc) {
        /* (an injected failure is this allocation failing) */
        all = mca_coll_offload_inject(OFL_INJECT_HIER, rank)
                  ? NULL
                  : malloc(sizeof(int) * 2 * (size_t) size);
        h->node_of = malloc(sizeof(int) * (size_t) size);
        h->lrank_of = malloc(sizeof(int) * (size_t) size);
        /* A leader's reduce scratch, reserved now (pages are touched only as
         * reduces use them) so that no call can fail for want of it. */
        h->tmp = 0 == h->lrank ? malloc(HIER_SCRATCH_BYTES) : NULL;
        rc = (NULL == all || NULL == h->node_of || NULL == h->lrank_of
              || (0 == h->lrank && NULL == h->tmp))
                 ? OMPI_ERR_OUT_OF_RESOURCE
                 : OMPI_SUCCESS;
    }
    /* Every rank joins the vote, whatever happened before on it, and only then
     * the layout exchange: no rank leaves a collective the others are in. */
    int vote = OMPI_SUCCESS == rc, all_ok = 0;
    int arc = h->below.allreduce(&vote, &all_ok, 1, &ompi_mpi_int.dt, &ompi_mpi_op_min.op, comm,
                                 h->below.allreduce_module);
    if (OMPI_SUCCESS == arc && all_ok) {
        arc = comm->c_coll->coll_allgather(mine, 2, &ompi_mpi_int.dt, all, 2, &ompi_mpi_int.dt,
                                           comm, comm->c_coll->coll_allgather_module);
    }
    int ok = OMPI_SUCCESS == arc && all_ok;
    int nnodes = 0;
    for (int r = 0; r < size && ok; ++r) {
        ok = all[2 * r] >= 0 && all[2 * r + 1] >= 0;
        if (ok) {
            h->lrank_of[r] = all[2 * r];
            h->node_of[r] = all[2 * r + 1];
            nnodes = h->node_of[r] + 1 > nnodes ? h->node_of[r] + 1 : nnodes;
        }
    }
    free(all);
    if (!ok) {
        opal_output_verbose(1, c->output,
                            "coll:offload: %s: node-aware set-up failed on %s; "
                            "everything goes to the fallback",
                            comm->c_name, OMPI_SUCCESS != rc ? "this rank" : "some rank");
        h->state = HIER_DISABLED;
        free(h->tmp);
        h->tmp = NULL;
        return OMPI_SUCCESS == arc ? OMPI_SUCCESS : arc;
    }
    h->nnodes = nnodes;
    if (nnodes == size && !c->params.ofi) {
        /* One rank per node and no network NIC: nothing to offload. */
        opal_output_verbose(1, c->output,
                            "coll:offload: %s: one rank per node and coll_offload_ofi=0: "
                            "nothing to offload; fallback",
                            comm->c_name);
        h->state = HIER_DISABLED;
        return OMPI_SUCCESS;
    }
    opal_output_verbose(1, c->output,
                        "coll:offload: %s (%d ranks on %d nodes): node-aware collectives "
                        "ready (I am local rank %d%s)",
                        comm->c_name, size, nnodes, h->lrank,
                        0 == h->lrank ? ", a node leader" : "");
    h->state = HIER_READY;
    return OMPI_SUCCESS;
}

/* The leaders get the libfabric NIC at the communicator's
 * coll_offload_ofi_after-th node-aware call (every rank counts the same calls):
 * a communicator made for a handful of calls never pays for endpoints and
 * registered memory. The node's ranks learn whether their leader runs it:
 * the node's part of a reduction depends on it. */
static int net_maybe_start(hier_module_t *h)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    if (OPAL_LIKELY(h->calls > (unsigned) c->params.ofi_after) || !c->params.ofi) {
        return OMPI_SUCCESS;
    }
    if (h->calls++ != (unsigned) c->params.ofi_after) {
        return OMPI_SUCCESS;
    }
    if (MPI_COMM_NULL != h->leaders) {
        net_setup(h);
    }
    int net = h->net_ready;
    int rc = h->local->c_coll->coll_bcast(&net, 1, &ompi_mpi_int.dt, 0, h->local,
                                          h->local->c_coll->coll_bcast_module);
    h->net_ready = OMPI_SUCCESS == rc && net;
    return rc;
}

/* Set up if needed; 1 when the node-aware path may be taken. With one rank
 * per node, only once the leaders run the libfabric NIC (otherwise there is
 * nothing to offload). */
static int hier_ready(hier_module_t *h, ompi_communicator_t *comm, int *rc)
{
    *rc = OMPI_SUCCESS;
    if (HIER_UNSET == h->state) {
        *rc = hier_setup(h, comm);
    }
    if (HIER_READY != h->state || OMPI_SUCCESS != *rc) {
        return 0;
    }
    *rc = net_maybe_start(h);
    return OMPI_SUCCESS == *rc && (h->net_ready || h->nnodes < ompi_comm_size(comm));
}

/* Run one leaders' program to completion on the libfabric NIC. */
static int net_run(hier_module_t *h, const ofl_program_t *prog, const ofl_call_t *call,
                   const char *what)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    uint64_t w0, b0, w1, b1;
    ofl_ofi_stats(h->ofi, &w0, &b0);
    ofl_wait_opts_t opts = ofl_glue_wait_opts(&c->params);
    int peer = -1;
    ofl_wait_status_t st = ofl_engine_run(&h->net_inst, prog, ofl_ofi_nic(h->ofi), &h->net_edges,
                                          call, &opts, &peer);
    ofl_ofi_stats(h->ofi, &w1, &b1);
    __atomic_fetch_add(&c->ofi_writes, (unsigned long long) (w1 - w0), __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->ofi_bytes, (unsigned long long) (b1 - b0), __ATOMIC_RELAXED);
    if (OPAL_LIKELY(OFL_WAIT_OK == st)) {
        return OMPI_SUCCESS;
    }
    opal_output(0, "coll:offload: %s on %s (node leaders, libfabric NIC) failed: %s (node %d)",
                what, h->leaders->c_name,
                OFL_WAIT_TIMEOUT == st ? "watchdog expired waiting" : "a write to a peer failed",
                peer);
    h->net_ready = 0;   /* mid-call: nothing more runs on it */
    return MPI_ERR_OTHER;
}

/* One leaders' call posted whole as triggered operations (ofi_native.c). */
/* Waiting for a native call: done when the NIC says so; no peer to watch (the
 * runtime notices dead ranks across nodes), only the watchdog. */
typedef struct {
    ofl_ofi_t *ofi;
    void *recv;
    int rc;
} native_wait_t;

static int native_poll(void *ctx)
{
    native_wait_t *n = ctx;
    int r = ofl_ofi_native_test(n->ofi, n->recv);
    n->rc = r < 0 ? r : 0;
    return r;
}

static ofl_wait_status_t native_check(void *ctx, double waited_s, double timeout_s, int *peer)
{
    (void) ctx;
    *peer = -1;
    return timeout_s > 0 && waited_s > timeout_s ? OFL_WAIT_TIMEOUT : OFL_WAIT_OK;
}

static int net_native(hier_module_t *h, void *buf, size_t count, ofl_op_t op, ofl_type_t type,
                      const char *what)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    uint64_t w0, b0, w1, b1, t0 = ofl_ofi_native_posted(h->ofi);
    ofl_ofi_stats(h->ofi, &w0, &b0);
    ofl_wait_opts_t w = ofl_glue_wait_opts(&c->params);
    int rc = NULL == buf ? ofl_ofi_native_post_barrier(h->ofi)
                         : ofl_ofi_native_post(h->ofi, buf, count, op, type);
    if (0 == rc) {
        native_wait_t n = { .ofi = h->ofi, .recv = buf, .rc = 0 };
        int peer;
        ofl_wait_status_t st = ofl_wait_loop(native_poll, native_check, &n, &w, &peer);
        rc = OFL_WAIT_OK == st ? 0 : OFL_WAIT_TIMEOUT == st ? -ETIMEDOUT : n.rc ? n.rc : -EIO;
    }
    ofl_ofi_stats(h->ofi, &w1, &b1);
    __atomic_fetch_add(&c->ofi_writes, (unsigned long long) (w1 - w0), __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->ofi_bytes, (unsigned long long) (b1 - b0), __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->ofi_triggered,
                       (unsigned long long) (ofl_ofi_native_posted(h->ofi) - t0),
                       __ATOMIC_RELAXED);
    if (OPAL_LIKELY(0 == rc)) {
        return OMPI_SUCCESS;
    }
    opal_output(0, "coll:offload: %s on %s (node leaders, triggered operations) failed: %s",
                what, h->leaders->c_name,
                -ETIMEDOUT == rc ? "watchdog expired waiting" : "an operation to a peer failed");
    h->net_ready = 0;   /* mid-call: nothing more runs on it */
    return MPI_ERR_OTHER;
}

static int hier_reduction_ok(hier_module_t *h, ofl_coll_t coll, struct ompi_op_t *op,
                             struct ompi_datatype_t *dtype, int count)
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

static int hier_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module)
{
    hier_module_t *h = (hier_module_t *) module;
    if (OPAL_UNLIKELY(OFL_REPSUM_OFF != h->repsum.mode)
        && mca_coll_offload_repsum_wanted(&h->repsum, dtype, op, comm)) {
        return mca_coll_offload_repsum_allreduce(&h->repsum, sbuf, rbuf, count, dtype, comm,
                                                 module, hier_allreduce);
    }
    size_t bytes = (size_t) count * dtype->super.size;
    int rc, why = HIER_DISABLED == h->state ? OFL_R_NIC : OFL_R_UNSET;
    if (hier_ready(h, comm, &rc)) {
        why = hier_reduction_ok(h, OFL_COLL_ALLREDUCE, op, dtype, count);
    }
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (HIER_SETTING_UP == h->state || OFL_R_OFFLOAD != why) {
        if (HIER_SETTING_UP != h->state) {
            mca_coll_offload_note(OFL_KIND_BLOCKING, OFL_COLL_ALLREDUCE, why, bytes, comm);
        }
        return h->below.allreduce(sbuf, rbuf, count, dtype, mca_coll_offload_below_op(dtype, op),
                                 comm, h->below.allreduce_module);
    }
    mca_coll_offload_note(OFL_KIND_BLOCKING, OFL_COLL_ALLREDUCE, OFL_R_OFFLOAD, bytes, comm);
    ompi_communicator_t *lo = h->local;
    /* With the leaders on the NIC's ALU, the node combines with it too. */
    mca_coll_base_module_reduce_fn_t node_reduce = lo->c_coll->coll_reduce;
    /* Our own node module maps the op itself; anything else gets the wrapping one. */
    struct ompi_op_t *lo_op = mca_coll_offload_reduce == node_reduce
                                  ? op
                                  : mca_coll_offload_below_op(dtype, op);
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
            && ofl_ofi_native_ok(h->ofi, nop, ntype, (size_t) count)) {
            /* the same answer on every leader: provider, op, type, count */
            rc = net_native(h, rbuf, (size_t) count, nop, ntype, "MPI_Allreduce");
        } else if (h->net_ready
                   && 0 == mca_coll_offload_map(dtype, op, &call.fn, &call.elem)) {
            /* predefined op and type: the same on every leader */
            call.send = call.recv = rbuf;
            call.count = (size_t) count;
            rc = net_run(h, &h->net_allreduce, &call, "MPI_Allreduce");
        } else {
            rc = up->c_coll->coll_allreduce(MPI_IN_PLACE, rbuf, count, dtype,
                                            mca_coll_offload_below_op(dtype, op), up,
                                            up->c_coll->coll_allreduce_module);
        }
    }
    if (OMPI_SUCCESS == rc) {
        rc = lo->c_coll->coll_bcast(rbuf, count, dtype, 0, lo, lo->c_coll->coll_bcast_module);
    }
    return rc;
}

/* A leader's scratch buffer for `count` elements of dtype (grows only). */
static int hier_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                       mca_coll_base_module_t *module)
{
    hier_module_t *h = (hier_module_t *) module;
    if (OPAL_UNLIKELY(OFL_REPSUM_OFF != h->repsum.mode)
        && mca_coll_offload_repsum_wanted(&h->repsum, dtype, op, comm)) {
        return mca_coll_offload_repsum_reduce(&h->repsum, sbuf, rbuf, count, dtype, root, comm,
                                              module, hier_reduce, hier_allreduce);
    }
    size_t bytes = (size_t) count * dtype->super.size;
    int rc, why = HIER_DISABLED == h->state ? OFL_R_NIC : OFL_R_UNSET;
    if (hier_ready(h, comm, &rc)) {
        why = hier_reduction_ok(h, OFL_COLL_REDUCE, op, dtype, count);
    }
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (HIER_SETTING_UP == h->state || OFL_R_OFFLOAD != why) {
        if (HIER_SETTING_UP != h->state) {
            mca_coll_offload_note(OFL_KIND_BLOCKING, OFL_COLL_REDUCE, why, bytes, comm);
        }
        return h->below.reduce(sbuf, rbuf, count, dtype, mca_coll_offload_below_op(dtype, op), root,
                              comm, h->below.reduce_module);
    }
    mca_coll_offload_note(OFL_KIND_BLOCKING, OFL_COLL_REDUCE, OFL_R_OFFLOAD, bytes, comm);
    int rank = ompi_comm_rank(comm);
    int root_node = h->node_of[root], root_lrank = h->lrank_of[root];
    int my_node = h->node_of[rank];
    ompi_communicator_t *lo = h->local;
    struct ompi_op_t *lo_op = mca_coll_offload_reduce == lo->c_coll->coll_reduce
                                  ? op
                                  : mca_coll_offload_below_op(dtype, op);
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
                                         mca_coll_offload_below_op(dtype, op), root_node, up,
                                         up->c_coll->coll_reduce_module);
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

static int hier_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                      struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    hier_module_t *h = (hier_module_t *) module;
    size_t bytes = (size_t) count * dtype->super.size;
    int rc, why = HIER_DISABLED == h->state ? OFL_R_NIC : OFL_R_UNSET;
    if (hier_ready(h, comm, &rc)) {
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
    if (!hier_ready(h, comm, &rc) || HIER_SETTING_UP == h->state) {
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
            && ofl_ofi_native(h->ofi)) {
            rc = net_native(h, NULL, 0, OFL_OP_SUM, OFL_T_UINT64, "MPI_Barrier");
        } else if (h->net_ready) {
            ofl_call_t call = { .send = NULL, .recv = NULL, .fn = NULL, .elem = 1, .count = 0 };
            rc = net_run(h, &h->net_barrier, &call, "MPI_Barrier");
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
static int hier_iallreduce(const void *sbuf, void *rbuf, int count,
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
    return h->below.iallreduce(sbuf, rbuf, count, dtype, mca_coll_offload_below_op(dtype, op),
                               comm, request, h->below.iallreduce_module);
}

static int hier_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                        struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                        ompi_request_t **request, mca_coll_base_module_t *module)
{
    hier_module_t *h = (hier_module_t *) module;
    if (OPAL_UNLIKELY(OFL_REPSUM_OFF != h->repsum.mode)
        && mca_coll_offload_repsum_wanted(&h->repsum, dtype, op, comm)) {
        return mca_coll_offload_repsum_request(1, 0, sbuf, rbuf, count, dtype, root, comm, NULL,
                                               request, &h->below);
    }
    return h->below.ireduce(sbuf, rbuf, count, dtype, mca_coll_offload_below_op(dtype, op), root,
                            comm, request, h->below.ireduce_module);
}

static int hier_allreduce_init(const void *sbuf, void *rbuf, int count,
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
                                   mca_coll_offload_below_op(dtype, op), comm, info, request,
                                   h->below.allreduce_init_module);
}

static int hier_reduce_init(const void *sbuf, void *rbuf, int count,
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
    return h->below.reduce_init(sbuf, rbuf, count, dtype, mca_coll_offload_below_op(dtype, op),
                                root, comm, info, request, h->below.reduce_init_module);
}

mca_coll_base_module_t *mca_coll_offload_hier_query(struct ompi_communicator_t *comm,
                                                    int *priority)
{
    hier_module_t *h = OBJ_NEW(hier_module_t);
    if (NULL == h) {
        return NULL;
    }
    h->super.coll_module_enable = hier_enable;
    h->super.coll_module_disable = hier_disable;
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
