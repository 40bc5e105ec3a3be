/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the layer below: the collective functions (and their modules)
 * that were installed on a communicator before ours, which every fallback calls.
 *
 * Both modules (the node module and the node-aware one) keep one of these,
 * saved in enable before they install anything, with every saved module
 * retained until the module is destructed: a module below may otherwise go
 * away while a fallback still needs it.
 */
#ifndef MCA_COLL_OFFLOAD_BELOW_H
#define MCA_COLL_OFFLOAD_BELOW_H

#include "ompi_config.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "coll_offload_compat.h"

/* The reductions we do not run ourselves but hand down with the op the layer
 * below gets right (see mca_coll_offload_below_op); X(name) once for each. */
#define OFL_PASSTHRU_SLOTS(X)                                                       \
    X(reduce_scatter) X(reduce_scatter_block) X(scan) X(exscan)                     \
    X(ireduce_scatter) X(ireduce_scatter_block) X(iscan) X(iexscan)                 \
    X(reduce_scatter_init) X(reduce_scatter_block_init) X(scan_init) X(exscan_init)

/* Every slot we may replace; X(name) once for each. */
#define OFL_BELOW_SLOTS(X)                                                          \
    X(allreduce) X(reduce) X(bcast) X(barrier)                                      \
    X(iallreduce) X(ireduce) X(ibcast) X(ibarrier)                                  \
    X(allreduce_init) X(reduce_init) X(bcast_init) X(barrier_init)                  \
    OFL_PASSTHRU_SLOTS(X)

#define OFL_BELOW_FIELD(c)                                                          \
    mca_coll_base_module_##c##_fn_t c;                                              \
    mca_coll_base_module_t *c##_module;

typedef struct {
    OFL_BELOW_SLOTS(OFL_BELOW_FIELD)
    /* what a reduction slot below is known to get wrong (OFL_BELOW_WRONG_*):
     * mca_coll_offload_below_op hands it those ops in a form it gets right */
    int wrong;
} mca_coll_offload_below_t;

#undef OFL_BELOW_FIELD

/* MINLOC/MAXLOC on the pair types (coll/xhc and coll/acoll of Open MPI 6 size them by
 * their data bytes, not their extent). */
#define OFL_BELOW_WRONG_PAIRS 1
/* Floating-point sums and products whose ranks get results that differ in their last
 * bits (coll/acoll of Open MPI 6 at 4 ranks and more: complex products seen). */
#define OFL_BELOW_WRONG_FLOAT_ORDER 2

/*
 * Save every slot from comm's current table and retain every module saved. A
 * slot without a function or without a module is saved as NULL/NULL (the
 * caller then leaves its own slot alone). The four blocking collectives are
 * required: when one is missing, nothing is kept and OMPI_ERROR is returned.
 */
int mca_coll_offload_below_save(mca_coll_offload_below_t *below,
                                const struct ompi_communicator_t *comm);

/* Release every module saved; safe on a zeroed or already released struct. */
void mca_coll_offload_below_release(mca_coll_offload_below_t *below);

/* Empty every slot of `module` that the layer below does not provide: where
 * nothing below could take a call we pass on or fall back with, we do not take
 * it either (the call fails as it would without us). */
void mca_coll_offload_below_trim(mca_coll_base_module_t *module,
                                 const mca_coll_offload_below_t *below);

/* Where the framework leaves it to the modules (OFL_MODULE_INSTALLS: Open MPI 6),
 * put every slot `module` fills into comm's table, as the module's own; elsewhere
 * nothing (the framework copies them after enable). Called last in enable. */
void mca_coll_offload_below_install(mca_coll_base_module_t *module,
                                    struct ompi_communicator_t *comm);

/* The reverse, in disable (Open MPI 6: modules are disabled in the reverse order of
 * their enable): every slot of comm's table that is still `module`'s gets the layer
 * below's function back. Elsewhere nothing. */
void mca_coll_offload_below_uninstall(mca_coll_base_module_t *module,
                                      const mca_coll_offload_below_t *below,
                                      struct ompi_communicator_t *comm);

/* How both modules begin, so that the pass-through entries find the layer
 * below in either (each module checks its layout against this). */
typedef struct {
    mca_coll_base_module_t super;
    mca_coll_offload_below_t below;
} mca_coll_offload_base_module_t;

/* Fill the OFL_PASSTHRU_SLOTS of a module (before enable; enable then empties
 * those the layer below does not have). */
void mca_coll_offload_passthru_install(mca_coll_base_module_t *module);

#endif
