/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the node-aware module (internal to the component): its state,
 * shared by its set-up (coll_offload_hier_setup.c: the module's life, the node
 * layout, the leaders' libfabric NIC) and its calls (coll_offload_hier.c).
 */
#ifndef MCA_COLL_OFFLOAD_HIER_H
#define MCA_COLL_OFFLOAD_HIER_H

#include "coll_offload.h"

#include "nic/net.h"

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

    /* The leaders' level on the network NIC. net_ready: on a leader, its NIC
     * is up (agreed among leaders); on the others, their leader's is. */
    unsigned calls;                 /* node-aware calls so far (up to ofi_after + 1) */
    int net_ready;
    ofl_net_t net;                  /* the leaders' network NIC (net.h) */
    ofl_edges_t net_edges;
    ofl_program_t net_allreduce;
    ofl_program_t net_barrier;
    ofl_inst_t net_inst;
    mca_coll_offload_repsum_t repsum;   /* reproducible sums: the node-aware calls
                                           carry the binned elements too */
} hier_module_t;

OBJ_CLASS_DECLARATION(hier_module_t);

int mca_coll_offload_hier_enable(mca_coll_base_module_t *module,
                                 struct ompi_communicator_t *comm);
int mca_coll_offload_hier_disable(mca_coll_base_module_t *module,
                                  struct ompi_communicator_t *comm);

/* Set up if needed; 1 when the node-aware path may be taken. With one rank
 * per node, only once the leaders run the libfabric NIC (otherwise there is
 * nothing to offload). */
int mca_coll_offload_hier_ready(hier_module_t *h, ompi_communicator_t *comm, int *rc);

/* Leaders only: run one leaders' program to completion on the libfabric NIC;
 * post one call whole as triggered operations (buf NULL: a barrier) and wait
 * for it. OMPI_SUCCESS, or MPI_ERR_OTHER with the message out and the NIC
 * stopped for good. */
int mca_coll_offload_hier_net_run(hier_module_t *h, const ofl_program_t *prog,
                                  const ofl_call_t *call, const char *what);
int mca_coll_offload_hier_net_native(hier_module_t *h, void *buf, size_t count, ofl_op_t op,
                                     ofl_type_t type, const char *what);

#endif
