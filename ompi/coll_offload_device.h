/*
 * Copyright (c) 2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — device (accelerator) memory. The component reads and writes
 * every buffer from the host, so device memory must never reach a slot of ours;
 * it goes to the layer below, which hands it to a device-aware transport.
 *
 * Which slots we keep is decided once per process, from what the accelerator
 * framework selected and whether a converting component (coll/accelerator in
 * Open MPI 6, coll/cuda before) sits above us:
 *   none       no device memory can exist: every slot is ours as usual;
 *   converted  the converting component is above us: it hands us host copies of
 *              the blocking allreduce's and reduce's buffers (and of bcasts up to
 *              its threshold, which becomes our bcast limit); every other slot that
 *              takes a buffer (nonblocking, persistent, the pass-through reductions)
 *              stays the layer below's;
 *   raw        device memory may reach us as it is: only the barriers are ours.
 * A per-call check (the accelerator's check_addr) would cost every call and could
 * not keep the ranks' decisions equal, since one rank's buffer may be on the device
 * and another's not; a choice of slots made once is free and the same on every rank
 * of a job whose processes select the same accelerator.
 */
#ifndef MCA_COLL_OFFLOAD_DEVICE_H
#define MCA_COLL_OFFLOAD_DEVICE_H

#include "ompi_config.h"
#include "ompi/mca/coll/coll.h"

#include "glue.h"

BEGIN_C_DECLS

typedef enum { OFL_DEVICE_NONE = 0, OFL_DEVICE_CONVERTED, OFL_DEVICE_RAW } ofl_device_t;

/* Once per process, before the first module is made (params: the component's;
 * output: its verbose stream). In the converted state it lowers the bcast limit to
 * the converting component's threshold. */
void mca_coll_offload_device_init(mca_coll_offload_params_t *p, int output);

/* What was decided (for the tests' and verbose output). */
ofl_device_t mca_coll_offload_device_state(void);

/* In enable, before the slots are installed: empty every slot device memory may
 * reach in this process's state. */
void mca_coll_offload_device_trim(mca_coll_base_module_t *module);

END_C_DECLS

#endif
