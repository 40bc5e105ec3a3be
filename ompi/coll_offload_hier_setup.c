/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the node-aware module's life and set-up: construction and
 * destruction, enable (the layer below saved), the sub-communicators and the
 * node layout (at the first blocking collective), and the node leaders'
 * libfabric NIC: opened at the communicator's coll_offload_ofi_after-th
 * node-aware call, and running one leaders' call. The calls themselves are in
 * coll_offload_hier.c.
 */
#include "coll_offload_device.h"
#include "coll_offload_exec.h"
#include "coll_offload_hier.h"
#include "coll_offload_inject.h"
#include "coll_offload_types.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"
#include "opal/util/info.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

static ofl_atomic_int32_t net_warned;

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
    ofl_net_close(&h->net);
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

OBJ_CLASS_INSTANCE(hier_module_t, mca_coll_base_module_t, hier_construct, hier_destruct);

_Static_assert(offsetof(hier_module_t, below) == offsetof(mca_coll_offload_base_module_t, below),
               "the pass-through entries find the layer below at the same place in both modules");

int mca_coll_offload_hier_disable(mca_coll_base_module_t *module,
                                  struct ompi_communicator_t *comm)
{
    mca_coll_offload_below_uninstall(module, &((hier_module_t *) module)->below, comm);
    return OMPI_SUCCESS;
}

int mca_coll_offload_hier_enable(mca_coll_base_module_t *module,
                                 struct ompi_communicator_t *comm)
{
    hier_module_t *h = (hier_module_t *) module;
    /* Everything we replace, saved before anything is touched; set-up also
     * needs the allgather we leave in place. */
    if (NULL == comm->c_coll->coll_allgather
        || OMPI_SUCCESS != mca_coll_offload_below_save(&h->below, comm)) {
        return OMPI_ERROR;
    }
    mca_coll_offload_below_trim(&h->super, &h->below);
    mca_coll_offload_device_trim(&h->super);
    mca_coll_offload_below_install(&h->super, comm);
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
    const ofl_net_ops_t *backend = ofl_net_backend(NULL);
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
        ofl_net_args_t args = {
            .rank = me, .size = n, .peers = peers, .npeers = npeers,
            .slots = c->params.slots, .slot_bytes = c->params.segment_size,
            .provider = c->params.ofi_provider,
            .iface = NULL != fabric && *fabric ? fabric : NULL,
        };
        ofl_net_open(&h->net, backend, &args, why, sizeof(why));
    } else {
        snprintf(why, sizeof(why), "cannot compile the leaders' programs");
    }
    size_t bb = backend->blob_bytes(n);
    char *blobs = malloc(bb * (size_t) n);
    char *mine = calloc(1, bb);
    int ok = ofl_net_is_open(&h->net) && NULL != blobs && NULL != mine;
    if (ok) {
        backend->address(&h->net, mine);
    } else if ('\0' == why[0]) {
        snprintf(why, sizeof(why), "out of memory");
    }
    /* Everyone takes part, whatever happened here: the blobs of a failed rank
     * are zeros, which connect() refuses, and the agreement settles it. */
    int rc = up->c_coll->coll_allgather(NULL != mine ? mine : blobs, (int) bb, &ompi_mpi_byte.dt,
                                        blobs, (int) bb, &ompi_mpi_byte.dt, up,
                                        up->c_coll->coll_allgather_module);
    ok = ok && OMPI_SUCCESS == rc && 0 == backend->connect(&h->net, blobs, why, sizeof(why));
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
                            "collectives: %s)", up->c_name, n, backend->provider(&h->net),
                            backend->streams(&h->net),
                            !c->params.ofi_native ? "off (coll_offload_ofi_native=0)"
                            : ofl_net_native(&h->net) ? "yes"
                                                     : "no (provider or number of nodes)");
        return;
    }
    if (!opal_atomic_swap_32(&net_warned, 1)) {
        opal_show_help(OFL_GLUE_HELP_FILE, "leaders-no-ofi", true,
                       *c->params.ofi_provider ? c->params.ofi_provider : "automatic",
                       ok ? "" : "; here: ", ok ? "" : why);
    }
    net_release(h);
}

/* The node's communicator and, on node leaders, the leaders' one. */
static int hier_split(hier_module_t *h, ompi_communicator_t *comm)
{
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
        rc = ompi_comm_split_with_info(comm, 0 == h->lrank ? 0 : MPI_UNDEFINED,
                                       ompi_comm_rank(comm), &info, &h->leaders, false);
    }
    OBJ_DESTRUCT(&info);
    return rc;
}

/* The layout's arrays (and `all`, for the exchange of every rank's pair), and a
 * leader's reduce scratch, reserved now (pages are touched only as reduces use
 * them) so that no call can fail for want of it. */
static int hier_alloc(hier_module_t *h, int size, int rank, int **all)
{
    /* (an injected failure is this allocation failing) */
    *all = mca_coll_offload_inject(OFL_INJECT_HIER, rank)
               ? NULL
               : malloc(sizeof(int) * 2 * (size_t) size);
    h->node_of = malloc(sizeof(int) * (size_t) size);
    h->lrank_of = malloc(sizeof(int) * (size_t) size);
    h->tmp = 0 == h->lrank ? malloc(HIER_SCRATCH_BYTES) : NULL;
    return (NULL == *all || NULL == h->node_of || NULL == h->lrank_of
            || (0 == h->lrank && NULL == h->tmp))
               ? OMPI_ERR_OUT_OF_RESOURCE
               : OMPI_SUCCESS;
}

/* Every rank's (rank in its node, its node) from the exchange: 1 when all are
 * valid, with the number of nodes. */
static int hier_layout(hier_module_t *h, const int *all, int size, int *nnodes)
{
    *nnodes = 0;
    for (int r = 0; r < size; ++r) {
        if (all[2 * r] < 0 || all[2 * r + 1] < 0) {
            return 0;
        }
        h->lrank_of[r] = all[2 * r];
        h->node_of[r] = all[2 * r + 1];
        *nnodes = h->node_of[r] + 1 > *nnodes ? h->node_of[r] + 1 : *nnodes;
    }
    return 1;
}

/* The sub-communicators and the node layout. Collective over comm. */
static int hier_setup(hier_module_t *h, ompi_communicator_t *comm)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    int size = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
    h->state = HIER_SETTING_UP;
    int rc = hier_split(h, comm);
    int mine[2] = { -1, -1 };
    int *all = NULL;
    if (OMPI_SUCCESS == rc) {
        mine[0] = h->lrank;
        mine[1] = MPI_COMM_NULL != h->leaders ? ompi_comm_rank(h->leaders) : -1;
        rc = h->local->c_coll->coll_bcast(&mine[1], 1, &ompi_mpi_int.dt, 0, h->local,
                                           h->local->c_coll->coll_bcast_module);
    }
    if (OMPI_SUCCESS == rc) {
        rc = hier_alloc(h, size, rank, &all);
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
    int nnodes = 0;
    int ok = OMPI_SUCCESS == arc && all_ok && hier_layout(h, all, size, &nnodes);
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

int mca_coll_offload_hier_ready(hier_module_t *h, ompi_communicator_t *comm, int *rc)
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
int mca_coll_offload_hier_net_run(hier_module_t *h, const ofl_program_t *prog,
                                  const ofl_call_t *call, const char *what)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    uint64_t w0, b0, w1, b1;
    h->net.ops->stats(&h->net, &w0, &b0);
    ofl_wait_opts_t opts = ofl_glue_wait_opts(&c->params);
    int peer = -1;
    ofl_nic_t *nic = h->net.ops->nic(&h->net);
    ofl_wait_status_t st = ofl_engine_run(&h->net_inst, prog, nic, &h->net_edges, call, &opts,
                                          &peer);
    h->net.ops->stats(&h->net, &w1, &b1);
    __atomic_fetch_add(&c->ofi_writes, (unsigned long long) (w1 - w0), __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->ofi_bytes, (unsigned long long) (b1 - b0), __ATOMIC_RELAXED);
    if (OPAL_LIKELY(OFL_WAIT_OK == st)) {
        return OMPI_SUCCESS;
    }
    mca_coll_offload_say("leaders-ofi-failed", what, h->leaders->c_name,
                         OFL_WAIT_TIMEOUT == st ? "watchdog expired waiting"
                                                : "a write to a peer failed",
                         peer);
    h->net_ready = 0;   /* mid-call: nothing more runs on it */
    return MPI_ERR_OTHER;
}

/* One leaders' call posted whole as triggered operations (ofi_native.c). */
/* Waiting for a native call: done when the NIC says so; no peer to watch (the
 * runtime notices dead ranks across nodes), only the watchdog. */
typedef struct {
    ofl_net_t *net;
    void *recv;
    int rc;
} native_wait_t;

static int native_poll(void *ctx)
{
    native_wait_t *n = ctx;
    int r = n->net->ops->native_test(n->net, n->recv);
    n->rc = r < 0 ? r : 0;
    return r;
}

static ofl_wait_status_t native_check(void *ctx, double waited_s, double timeout_s, int *peer)
{
    (void) ctx;
    *peer = -1;
    return timeout_s > 0 && waited_s > timeout_s ? OFL_WAIT_TIMEOUT : OFL_WAIT_OK;
}

int mca_coll_offload_hier_net_native(hier_module_t *h, void *buf, size_t count, ofl_op_t op,
                                     ofl_type_t type, const char *what)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    uint64_t w0, b0, w1, b1, t0 = h->net.ops->native_posted(&h->net);
    h->net.ops->stats(&h->net, &w0, &b0);
    ofl_wait_opts_t w = ofl_glue_wait_opts(&c->params);
    int rc = NULL == buf ? h->net.ops->native_post_barrier(&h->net)
                         : h->net.ops->native_post(&h->net, buf, count, op, type);
    if (0 == rc) {
        native_wait_t n = { .net = &h->net, .recv = buf, .rc = 0 };
        int peer;
        ofl_wait_status_t st = ofl_wait_loop(native_poll, native_check, &n, &w, &peer);
        rc = OFL_WAIT_OK == st ? 0 : OFL_WAIT_TIMEOUT == st ? -ETIMEDOUT : n.rc ? n.rc : -EIO;
    }
    h->net.ops->stats(&h->net, &w1, &b1);
    __atomic_fetch_add(&c->ofi_writes, (unsigned long long) (w1 - w0), __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->ofi_bytes, (unsigned long long) (b1 - b0), __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->ofi_triggered,
                       (unsigned long long) (h->net.ops->native_posted(&h->net) - t0),
                       __ATOMIC_RELAXED);
    if (OPAL_LIKELY(0 == rc)) {
        return OMPI_SUCCESS;
    }
    mca_coll_offload_say("leaders-triggered-failed", what, h->leaders->c_name,
                         -ETIMEDOUT == rc ? "watchdog expired waiting"
                                          : "an operation to a peer failed");
    h->net_ready = 0;   /* mid-call: nothing more runs on it */
    return MPI_ERR_OTHER;
}
