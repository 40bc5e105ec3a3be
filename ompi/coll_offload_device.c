/*
 * Copyright (c) 2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — which slots device memory may reach (see coll_offload_device.h).
 */
#include "coll_offload_device.h"

#include <string.h>

#include "coll_offload.h"
#include "coll_offload_below.h"
#include "coll_offload_compat.h"
#include "ompi/mca/coll/base/base.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"
#if OFL_OMPI_MAJOR >= 5
#include "opal/mca/accelerator/base/base.h"
#endif

/* The component above us that stages device buffers through host memory. */
#if OFL_OMPI_MAJOR >= 6
#define OFL_CONVERTER "accelerator"
#else
#define OFL_CONVERTER "cuda"
#endif

static ofl_device_t device_state = OFL_DEVICE_NONE;

/* The accelerator component in use, or NULL where device memory cannot exist. */
static const char *accelerator_in_use(void)
{
#if OFL_OMPI_MAJOR >= 5
    const char *name = opal_accelerator_base_selected_component.base_version.mca_component_name;
    return (0 == strcmp(name, "null")) ? NULL : name;
#elif OPAL_CUDA_SUPPORT
    /* 4.1 built with CUDA: device memory is possible whenever CUDA is */
    return "cuda";
#else
    return NULL;
#endif
}

/* An int MCA variable of a coll component, or `dflt` when it has none. */
static int coll_var(const char *component, const char *name, int dflt)
{
    int index = mca_base_var_find("ompi", "coll", component, name);
    const int *value = NULL;
    if (index < 0 || OPAL_SUCCESS != mca_base_var_get_value(index, &value, NULL, NULL)
        || NULL == value) {
        return dflt;
    }
    return *value;
}

/* Is the converting component open in this process (not excluded by the user)? */
static int converter_open(void)
{
    mca_base_component_list_item_t *cli;
    OPAL_LIST_FOREACH (cli, &ompi_coll_base_framework.framework_components,
                       mca_base_component_list_item_t) {
        if (0 == strcmp(cli->cli_component->mca_component_name, OFL_CONVERTER)) {
            return 1;
        }
    }
    return 0;
}

static const char *state_name(ofl_device_t s)
{
    return OFL_DEVICE_NONE == s ? "none" : OFL_DEVICE_CONVERTED == s ? "converted" : "raw";
}

void mca_coll_offload_device_init(mca_coll_offload_params_t *p, int output)
{
    const char *assume = NULL != p->device_assume ? p->device_assume : "";
    const char *accel = accelerator_in_use();
    const char *why;
    if (0 == strcmp(assume, "none")) {
        device_state = OFL_DEVICE_NONE;
        why = "coll_offload_device_assume";
    } else if (0 == strcmp(assume, "converted")) {
        device_state = OFL_DEVICE_CONVERTED;
        why = "coll_offload_device_assume";
    } else if (0 == strcmp(assume, "raw")) {
        device_state = OFL_DEVICE_RAW;
        why = "coll_offload_device_assume";
    } else if (NULL == accel) {
        device_state = OFL_DEVICE_NONE;
        why = "no accelerator in use";
    } else if (converter_open() && coll_var(OFL_CONVERTER, "priority", -1) > p->priority) {
        device_state = OFL_DEVICE_CONVERTED;
        why = "coll/" OFL_CONVERTER " stages device buffers above us";
    } else {
        device_state = OFL_DEVICE_RAW;
        why = "device buffers may reach us unconverted (coll/" OFL_CONVERTER
              " is not open above us)";
    }
    if ('\0' != assume[0] && OFL_DEVICE_NONE == device_state && 0 != strcmp(assume, "none")) {
        opal_output_verbose(1, output,
                            "coll:offload: coll_offload_device_assume=%s is none of none, "
                            "converted, raw; ignored", assume);
    }
    if (OFL_DEVICE_CONVERTED == device_state) {
        /* It stages bcasts up to its threshold only (none in coll/cuda). */
        int thresh = coll_var(OFL_CONVERTER, "bcast_thresh", 0);
        size_t cap = thresh > 0 ? (size_t) thresh : 0;
        if (p->max_bytes[OFL_COLL_BCAST] > cap) {
            p->max_bytes[OFL_COLL_BCAST] = cap;
        }
    }
    opal_output_verbose(1, output, "coll:offload: device memory: %s (%s%s%s)",
                        state_name(device_state), why, NULL != accel ? "; accelerator " : "",
                        NULL != accel ? accel : "");
}

ofl_device_t mca_coll_offload_device_state(void)
{
    return device_state;
}

void mca_coll_offload_device_trim(mca_coll_base_module_t *module)
{
    if (OFL_DEVICE_NONE == device_state) {
        return;
    }
    module->coll_iallreduce = NULL;
    module->coll_ireduce = NULL;
    module->coll_ibcast = NULL;
    module->coll_allreduce_init = NULL;
    module->coll_reduce_init = NULL;
    module->coll_bcast_init = NULL;
#define OFL_DEVICE_TRIM(c) module->coll_##c = NULL;
    OFL_PASSTHRU_SLOTS(OFL_DEVICE_TRIM)
#undef OFL_DEVICE_TRIM
    if (OFL_DEVICE_RAW == device_state
        || 0 == mca_coll_offload_component.params.max_bytes[OFL_COLL_BCAST]) {
        module->coll_bcast = NULL;
    }
    if (OFL_DEVICE_RAW == device_state) {
        module->coll_allreduce = NULL;
        module->coll_reduce = NULL;
    }
}
