/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/* Reading a counter performance variable (MPI_T), as the MPI tests and the
 * installed check's probe do. */
#ifndef OFL_TEST_PVAR_H
#define OFL_TEST_PVAR_H

#include <mpi.h>
#include <string.h>

/* The value of a counter whose datatype is MPI_UNSIGNED, MPI_UNSIGNED_LONG or
 * MPI_UNSIGNED_LONG_LONG, into *val: 1, or 0 (and *val 0) when it cannot be read. */
static inline int ofl_pvar_read_count(MPI_T_pvar_session session, MPI_T_pvar_handle h,
                                      MPI_Datatype dt, unsigned long long *val)
{
    union {
        unsigned u;
        unsigned long ul;
        unsigned long long ull;
        char pad[64];
    } buf;
    *val = 0;
    memset(&buf, 0, sizeof(buf));
    if (MPI_SUCCESS != MPI_T_pvar_read(session, h, &buf)) {
        return 0;
    }
    *val = MPI_UNSIGNED == dt ? buf.u : MPI_UNSIGNED_LONG == dt ? buf.ul : buf.ull;
    return 1;
}

#endif
