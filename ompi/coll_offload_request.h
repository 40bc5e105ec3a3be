/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — MPI requests of nonblocking and persistent collectives
 * (internal to the component; coll_offload_request.c). The entry points
 * (coll_offload_nb.c) decide; a request made here runs its call on the
 * execution queue (engine/queue.h) and completes in an application
 * thread.
 */
#ifndef MCA_COLL_OFFLOAD_REQUEST_H
#define MCA_COLL_OFFLOAD_REQUEST_H

#include "coll_offload.h"

typedef enum {
    OFL_REQ_NONBLOCKING,
    OFL_REQ_PERSISTENT
} ofl_req_kind_t;

/* How a call of this kind is named in messages ("MPI_Iallreduce", "persistent
 * MPI_Bcast"). */
const char *mca_coll_offload_request_name(ofl_req_kind_t kind, ofl_coll_t coll);

/* A request for an offloaded call (program prog, or the board), started at once
 * when nonblocking. For a bcast, `buf` non-NULL with a non-contiguous dtype
 * means staged (count, dtype describe buf). On an error the message is out and
 * the error returned. */
int mca_coll_offload_request_make(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                                  ofl_req_kind_t kind, ofl_coll_t coll, const ofl_program_t *prog,
                                  int board, const ofl_call_t *call, void *buf, ofl_count_t count,
                                  struct ompi_datatype_t *dtype, int root,
                                  ompi_request_t **request);

/* A persistent request of the layer below (`inner`, a call of `bytes` with
 * signature `sig`) wrapped so that its starts are calls the peers count and
 * compare (call records): it runs on the fallback for good. On an error inner
 * is freed. */
int mca_coll_offload_request_wrap(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                                  ofl_coll_t coll, ompi_request_t *inner, uint64_t sig,
                                  size_t bytes, ompi_request_t **request);

#endif
