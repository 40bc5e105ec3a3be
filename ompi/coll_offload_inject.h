/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — fault injection for tests (coll_offload_inject.c, coll_offload_inject).
 */
#ifndef MCA_COLL_OFFLOAD_INJECT_H
#define MCA_COLL_OFFLOAD_INJECT_H

#include "ompi_config.h"

BEGIN_C_DECLS

/* Steps of the set-up (and the staging of a bcast) where coll_offload_inject can
 * make a rank fail, to test the error paths. */
typedef enum {
    OFL_INJECT_NONE = 0,
    OFL_INJECT_CREATE,
    OFL_INJECT_NAME,
    OFL_INJECT_BCAST,
    OFL_INJECT_PROC,
    OFL_INJECT_ATTACH,
    OFL_INJECT_PROBE,
    OFL_INJECT_COMPILE,
    OFL_INJECT_AGREE,
    OFL_INJECT_STAGE,
    OFL_INJECT_HIER,
    OFL_INJECT_COUNT
} ofl_inject_t;

/* Fault injection (coll_offload_inject.c). Parse coll_offload_inject (component
 * open): 0, or -1 when it is malformed (then nothing is injected). */
int mca_coll_offload_inject_parse(const char *text);
/* Tests only: should `step` fail now on comm rank `rank`? Set-up steps count in
 * the process's first set-up only, OFL_INJECT_STAGE at its first staging only,
 * so that every later communicator works. With :kill the process SIGKILLs
 * itself here instead of returning. */
int mca_coll_offload_inject(ofl_inject_t step, int rank);
/* A set-up finished in this process (injections count the first one only). */
void mca_coll_offload_inject_setup_done(void);

END_C_DECLS

#endif
