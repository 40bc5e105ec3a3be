/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — saving and releasing the layer below (see coll_offload_below.h).
 */
#include "coll_offload_below.h"

#include <string.h>

#if OFL_OMPI_MAJOR >= 6
#include "ompi/mca/coll/base/coll_base_util.h"

/* The component of a module enabled on comm before us (Open MPI 6 keeps the list). */
static const char *component_of(const struct ompi_communicator_t *comm,
                                const mca_coll_base_module_t *module)
{
    opal_list_t *list = comm->c_coll->module_list;
    mca_coll_base_avail_coll_t *avail;
    if (NULL == list || NULL == module) {
        return NULL;
    }
    OPAL_LIST_FOREACH (avail, list, mca_coll_base_avail_coll_t) {
        if (avail->ac_module == module) {
            return avail->ac_component_name;
        }
    }
    return NULL;
}

/* What the component of a module below is known to get wrong (OFL_BELOW_WRONG_*). */
static int known_wrong(const struct ompi_communicator_t *comm, const mca_coll_base_module_t *module)
{
    const char *name = component_of(comm, module);
    if (NULL == name) {
        return 0;
    }
    if (0 == strcmp(name, "acoll")) {
        return OFL_BELOW_WRONG_PAIRS | OFL_BELOW_WRONG_FLOAT_ORDER;
    }
    return 0 == strcmp(name, "xhc") ? OFL_BELOW_WRONG_PAIRS : 0;
}
#endif

int mca_coll_offload_below_save(mca_coll_offload_below_t *below,
                                const struct ompi_communicator_t *comm)
{
    memset(below, 0, sizeof(*below));
    const mca_coll_base_comm_coll_t *table = comm->c_coll;
#define OFL_BELOW_SAVE(c)                                                           \
    if (NULL != table->coll_##c && NULL != table->coll_##c##_module) {              \
        below->c = table->coll_##c;                                                 \
        below->c##_module = table->coll_##c##_module;                               \
    }
    OFL_BELOW_SLOTS(OFL_BELOW_SAVE)
#undef OFL_BELOW_SAVE
    if (NULL == below->allreduce || NULL == below->reduce || NULL == below->bcast
        || NULL == below->barrier) {
        memset(below, 0, sizeof(*below));
        return OMPI_ERROR;
    }
#define OFL_BELOW_RETAIN(c)                                                         \
    if (NULL != below->c##_module) {                                                \
        OBJ_RETAIN(below->c##_module);                                              \
    }
    OFL_BELOW_SLOTS(OFL_BELOW_RETAIN)
#undef OFL_BELOW_RETAIN
#if OFL_OMPI_MAJOR >= 6
    below->wrong = known_wrong(comm, below->allreduce_module)
                   | known_wrong(comm, below->reduce_module);
#endif
    return OMPI_SUCCESS;
}

void mca_coll_offload_below_trim(mca_coll_base_module_t *module,
                                 const mca_coll_offload_below_t *below)
{
#define OFL_BELOW_TRIM(c)                                                           \
    if (NULL == below->c) {                                                         \
        module->coll_##c = NULL;                                                    \
    }
    OFL_BELOW_SLOTS(OFL_BELOW_TRIM)
#undef OFL_BELOW_TRIM
}

void mca_coll_offload_below_release(mca_coll_offload_below_t *below)
{
#define OFL_BELOW_RELEASE(c)                                                        \
    if (NULL != below->c##_module) {                                                \
        OBJ_RELEASE(below->c##_module);                                             \
    }                                                                               \
    below->c = NULL;                                                                \
    below->c##_module = NULL;
    OFL_BELOW_SLOTS(OFL_BELOW_RELEASE)
#undef OFL_BELOW_RELEASE
}

void mca_coll_offload_below_install(mca_coll_base_module_t *module,
                                    struct ompi_communicator_t *comm)
{
#if OFL_MODULE_INSTALLS
    mca_coll_base_comm_coll_t *table = comm->c_coll;
#define OFL_BELOW_INSTALL(c)                                                        \
    if (NULL != module->coll_##c) {                                                 \
        table->coll_##c = module->coll_##c;                                         \
        table->coll_##c##_module = module;                                          \
    }
    OFL_BELOW_SLOTS(OFL_BELOW_INSTALL)
#undef OFL_BELOW_INSTALL
#else
    (void) module;
    (void) comm;
#endif
}

void mca_coll_offload_below_uninstall(mca_coll_base_module_t *module,
                                      const mca_coll_offload_below_t *below,
                                      struct ompi_communicator_t *comm)
{
#if OFL_MODULE_INSTALLS
    mca_coll_base_comm_coll_t *table = comm->c_coll;
#define OFL_BELOW_UNINSTALL(c)                                                      \
    if (module == table->coll_##c##_module) {                                       \
        table->coll_##c = below->c;                                                 \
        table->coll_##c##_module = below->c##_module;                               \
    }
    OFL_BELOW_SLOTS(OFL_BELOW_UNINSTALL)
#undef OFL_BELOW_UNINSTALL
#else
    (void) module;
    (void) below;
    (void) comm;
#endif
}
