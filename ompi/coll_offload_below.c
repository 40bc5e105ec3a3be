/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — saving and releasing the layer below (see coll_offload_below.h).
 */
#include "coll_offload_below.h"

#include <string.h>

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
