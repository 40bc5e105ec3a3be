/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the per-communicator module's life: construction (every
 * entry point it offers), enable (save the layer below), release of its NIC
 * and programs, teardown. The NIC's set-up is coll_offload_setup.c.
 */
#include "coll_offload.h"
#include "coll_offload_nb.h"
#include "coll_offload_setup.h"
#include "coll_offload_device.h"
#include "coll_offload_types.h"

#include <stdlib.h>
#include <string.h>

#include "glue.h"
#include "opal/util/output.h"

static int offload_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm);
static int offload_disable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm);

/* The executor found the NIC failed mid-call (engine/queue.h): later calls on the
 * communicator go to the fallback, or after a mismatch fail too. */
static void queue_stopped(ofl_queue_t *q, ofl_wait_status_t st)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) ((char *) q
                                   - offsetof(mca_coll_offload_module_t, queue));
    m->state = OFL_WAIT_MISMATCH == st ? OFL_MOD_BROKEN : OFL_MOD_DISABLED;
}

static void module_construct(mca_coll_offload_module_t *m)
{
    memset((char *) m + sizeof(m->super), 0, sizeof(*m) - sizeof(m->super));
    m->super.coll_module_enable = offload_enable;
    m->super.coll_module_disable = offload_disable;
    m->super.coll_allreduce = mca_coll_offload_allreduce;
    m->super.coll_reduce = mca_coll_offload_reduce;
    m->super.coll_bcast = mca_coll_offload_bcast;
    m->super.coll_barrier = mca_coll_offload_barrier;
    m->super.coll_iallreduce = mca_coll_offload_iallreduce;
    m->super.coll_ireduce = mca_coll_offload_ireduce;
    m->super.coll_ibcast = mca_coll_offload_ibcast;
    m->super.coll_ibarrier = mca_coll_offload_ibarrier;
    m->super.coll_allreduce_init = mca_coll_offload_allreduce_init;
    m->super.coll_reduce_init = mca_coll_offload_reduce_init;
    m->super.coll_bcast_init = mca_coll_offload_bcast_init;
    m->super.coll_barrier_init = mca_coll_offload_barrier_init;
    for (int k = 0; k < OFL_COLL_COUNT; ++k) {
        m->choice.table[k] = &mca_coll_offload_component.params.policy[k];
    }
    m->choice.max_bytes = mca_coll_offload_component.params.max_bytes;
    m->choice.crowded_max = mca_coll_offload_component.params.crowded_max;
    mca_coll_offload_passthru_install(&m->super);
    mca_coll_offload_repsum_self_init(m);
    ofl_queue_init(&m->queue, queue_stopped);
    mca_coll_offload_wrap_ops_retain();
}

_Static_assert(offsetof(mca_coll_offload_module_t, below)
                   == offsetof(mca_coll_offload_base_module_t, below),
               "the pass-through entries find the layer below at the same place in both modules");

static void module_destruct(mca_coll_offload_module_t *m)
{
    /* No instance is outstanding (each holds a reference on us); after this no
     * executor can reach the module. */
    ofl_queue_fini(&m->queue);
    mca_coll_offload_release_nic(m);
    free(m->pack);
    m->pack = NULL;
    mca_coll_offload_repsum_fini(&m->repsum);
    free(m->own_rules);
    m->own_rules = NULL;
    m->rules = NULL;
    mca_coll_offload_below_release(&m->below);
    mca_coll_offload_wrap_ops_release();
}

OBJ_CLASS_INSTANCE(mca_coll_offload_module_t, mca_coll_base_module_t, module_construct,
                   module_destruct);

static int offload_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    /* Save every function we replace before touching anything: comm->c_coll holds
     * exactly the layer below us right now. */
    if (OMPI_SUCCESS != mca_coll_offload_below_save(&m->below, comm)) {
        opal_output_verbose(1, mca_coll_offload_component.output,
                            "coll:offload: %s: no component below to fall back to; disabled",
                            comm->c_name);
        return OMPI_ERROR;
    }
    /* Nonblocking and persistent forms fall back to the layer below's own; where
     * it has none we do not offer ours (the call fails as it would without us,
     * instead of having nowhere to go). */
    mca_coll_offload_below_trim(&m->super, &m->below);
    mca_coll_offload_device_trim(&m->super);
    mca_coll_offload_below_install(&m->super, comm);
    return OMPI_SUCCESS;
}

/* Open MPI 6 calls this once, the layer above already gone, to give the layer below
 * its slots back; earlier versions once per slot we fill, with nothing to do. All
 * state goes with the destructor. */
static int offload_disable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    mca_coll_offload_below_uninstall(module, &m->below, comm);
    return OMPI_SUCCESS;
}
