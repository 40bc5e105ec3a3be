/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — what the blocking (coll_offload_repsum.c) and the nonblocking
 * and persistent (coll_offload_repsum_nb.c) reproducible sums share: the binned
 * elements of a call and their conversions.
 */
#ifndef MCA_COLL_OFFLOAD_REPSUM_INT_H
#define MCA_COLL_OFFLOAD_REPSUM_INT_H

#include "coll_offload.h"
#include "coll_offload_exec.h"

#include <limits.h>

#include "repsum/repsum.h"
#include "opal/util/show_help.h"

/* Binned elements per call: two per complex value. */
static inline size_t elements(int kind, ofl_count_t count)
{
    size_t n = count > 0 ? (size_t) count : 0;
    return (OFL_RS_CFLOAT == kind || OFL_RS_CDOUBLE == kind) ? 2 * n : n;
}

/* Complex counts double: past INT_MAX elements the binned call cannot be made. */
static inline int too_many(size_t n, const char *what, struct ompi_communicator_t *comm)
{
    if (OPAL_LIKELY(n <= INT_MAX)) {
        return 0;
    }
    mca_coll_offload_say("repsum-too-many", what, comm->c_name, OFL_COMM_CID(comm), n);
    return 1;
}

static inline void to_wire(ofl_repsum_t *out, const void *in, int kind, size_t n)
{
    if (OFL_RS_FLOAT == kind || OFL_RS_CFLOAT == kind) {
        ofl_repsum_from_float(out, in, n);
    } else {
        ofl_repsum_from_double(out, in, n);
    }
}

static inline void from_wire(void *out, const ofl_repsum_t *in, int kind, size_t n)
{
    if (OFL_RS_FLOAT == kind || OFL_RS_CFLOAT == kind) {
        ofl_repsum_to_float(out, in, n);
    } else {
        ofl_repsum_to_double(out, in, n);
    }
}

#endif
