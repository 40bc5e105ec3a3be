/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — what differs between the Open MPI versions the component builds
 * against (4.1, 5.0 and 6 from main), in one place. Everything else uses the
 * unversioned names they all define (mca_coll_base_component_t, mca_coll_base_module_t).
 */
#ifndef MCA_COLL_OFFLOAD_COMPAT_H
#define MCA_COLL_OFFLOAD_COMPAT_H

#include "ompi_config.h"
#include "ompi/mca/coll/coll.h"

#if defined(MCA_COLL_BASE_VERSION_3_0_0)
/* Open MPI 6: coll framework 3.0.0. Counts are size_t (the MPI-4 large-count
 * bindings reach the components), and the framework no longer copies a module's
 * functions into the communicator: each module installs them in enable and takes
 * them out in disable (OFL_MODULE_INSTALLS). */
#define OFL_OMPI_MAJOR 6
#define OFL_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_3_0_0
#define OFL_MODULE_INSTALLS 1
typedef size_t ofl_count_t;
typedef ompi_count_array_t ofl_counts_t;
#elif defined(MCA_COLL_BASE_VERSION_2_4_0)
/* Open MPI 5.0: coll framework 2.4.0. */
#define OFL_OMPI_MAJOR 5
#define OFL_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
#else
/* Open MPI 4.1: coll framework 2.0.0. */
#define OFL_OMPI_MAJOR 4
#define OFL_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
#endif

/* A user op over a C function (Open MPI 6 adds the large-count flag). */
#if OFL_OMPI_MAJOR >= 6
#define OFL_OP_CREATE_USER(commute, fn)                                                        \
    ompi_op_create_user((commute), false, (ompi_op_fortran_handler_fn_t *) (fn))
#else
#define OFL_OP_CREATE_USER(commute, fn)                                                        \
    ompi_op_create_user((commute), (ompi_op_fortran_handler_fn_t *) (fn))
#endif

#if OFL_OMPI_MAJOR < 6
/* The framework copies the functions a module offers after its enable. */
#define OFL_MODULE_INSTALLS 0
/* The element count of a collective, and the per-rank counts of a vector one. */
typedef int ofl_count_t;
typedef const int *ofl_counts_t;
#endif

#if OFL_OMPI_MAJOR >= 5
/* PMIx keys under their PMIx names. */
#include "opal/mca/pmix/pmix-internal.h"
#define OFL_KEY_CPUSET PMIX_CPUSET
#define OFL_KEY_STRING PMIX_STRING
/* The communicator's id as a printable number. */
#define OFL_COMM_CID(comm) ompi_comm_get_local_cid(comm)
/* Objects a nonblocking request retained for MPI_I<coll> (released on completion). */
#define OFL_NBC_RETAINED(req) ((req)->data.refcounted.objs.objs)
/* Components export their symbol with the library's visibility attribute. */
#ifndef OMPI_MODULE_DECLSPEC
#define OMPI_MODULE_DECLSPEC OMPI_DECLSPEC
#endif
#else
#include "opal/mca/pmix/pmix.h"
#define OFL_KEY_CPUSET OPAL_PMIX_CPUSET
#define OFL_KEY_STRING OPAL_STRING
#define OFL_COMM_CID(comm) ((comm)->c_contextid)
#define OFL_NBC_RETAINED(req) ((req)->data.objs.objs)
#endif

#include <stdint.h>
#include <stdio.h>

#include "opal/sys/atomic.h"
#include "opal/util/info.h"

/* What OPAL's atomics operate on: volatile int32_t/int64_t in 4.1, opal_atomic_int*_t in
 * 5.0 (the same types where C11 atomics are off, as in Debian's builds). */
#if OFL_OMPI_MAJOR >= 5
typedef opal_atomic_int32_t ofl_atomic_int32_t;
typedef opal_atomic_int64_t ofl_atomic_int64_t;
#else
typedef volatile int32_t ofl_atomic_int32_t;
typedef volatile int64_t ofl_atomic_int64_t;
#endif

/* The string value of `key` in `info` into buf (truncated to len - 1 bytes, always
 * terminated): 1 if the key is there, 0 if not (or no info). */
static inline int ofl_info_get_string(opal_info_t *info, const char *key, char *buf, int len)
{
    int flag = 0;
    buf[0] = '\0';
    if (NULL == info) {
        return 0;
    }
#if OFL_OMPI_MAJOR >= 5
    opal_cstring_t *value = NULL;
    if (OPAL_SUCCESS != opal_info_get(info, key, &value, &flag) || !flag || NULL == value) {
        return 0;
    }
    snprintf(buf, (size_t) len, "%s", value->string);
    OBJ_RELEASE(value);
#else
    if (OPAL_SUCCESS != opal_info_get(info, key, len - 1, buf, &flag) || !flag) {
        buf[0] = '\0';
        return 0;
    }
    buf[len - 1] = '\0';
#endif
    return 1;
}

#endif
