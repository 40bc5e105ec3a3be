/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the nonblocking and persistent entry points (coll_offload_nb.c) and their
 * requests' close (coll_offload_request.c).
 */
#ifndef MCA_COLL_OFFLOAD_NB_H
#define MCA_COLL_OFFLOAD_NB_H

#include "coll_offload.h"

BEGIN_C_DECLS

/* Nonblocking and persistent collectives (coll_offload_nb.c). */
/* Fill m->repsum_self (coll_offload_nb.c), once, when the module is made. */
void mca_coll_offload_repsum_self_init(mca_coll_offload_module_t *m);
int mca_coll_offload_iallreduce(const void *sbuf, void *rbuf, ofl_count_t count,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                struct ompi_communicator_t *comm, ompi_request_t **request,
                                mca_coll_base_module_t *module);
int mca_coll_offload_ireduce(const void *sbuf, void *rbuf, ofl_count_t count,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                             struct ompi_communicator_t *comm, ompi_request_t **request,
                             mca_coll_base_module_t *module);
int mca_coll_offload_ibcast(void *buf, ofl_count_t count, struct ompi_datatype_t *dtype, int root,
                            struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module);
int mca_coll_offload_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module);
int mca_coll_offload_allreduce_init(const void *sbuf, void *rbuf, ofl_count_t count,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                    ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_offload_reduce_init(const void *sbuf, void *rbuf, ofl_count_t count,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                                 struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                 ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_offload_bcast_init(void *buf, ofl_count_t count, struct ompi_datatype_t *dtype,
                                int root, struct ompi_communicator_t *comm,
                                struct ompi_info_t *info, ompi_request_t **request,
                                mca_coll_base_module_t *module);
int mca_coll_offload_barrier_init(struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                  ompi_request_t **request, mca_coll_base_module_t *module);

/* Component close: complete what is left, stop the agent, unregister the
 * progress callback (coll_offload_request.c). */
void mca_coll_offload_nb_close(void);

END_C_DECLS

#endif
