/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — MPI datatypes and ops mapped onto the ALU, and the ops handed to the layer below
 * (coll_offload_types.c).
 */
#ifndef MCA_COLL_OFFLOAD_TYPES_H
#define MCA_COLL_OFFLOAD_TYPES_H

#include "ompi_config.h"

#include "alu/alu.h"
#include "coll_offload_below.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"

BEGIN_C_DECLS

/* Datatype and op mapping (coll_offload_types.c). */
void mca_coll_offload_types_init(void);
int mca_coll_offload_map(struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                         ofl_alu_fn *fn, size_t *elem);
int mca_coll_offload_map_kind(struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              ofl_op_t *o, ofl_type_t *t);
/* Predefined datatypes that could not be told apart from another of the same id
 * (not offloaded); 0 on Open MPI 4.1. */
int mca_coll_offload_types_overflow(void);
/* The op to hand the layer below for (dtype, op): `op` itself, except where the
 * stock op is wrong: 8- and 16-bit integer MPI_SUM/MPI_PROD (op/avx saturates
 * them) and MPI_MIN/MPI_MAX on MPI_UNSIGNED_LONG and MPI_OFFSET (wrong
 * signedness) get a user op over the ALU's kernels. Each module holds a
 * reference on those ops from construction to destruction. */
struct ompi_op_t *mca_coll_offload_below_op(const mca_coll_offload_below_t *below,
                                            struct ompi_datatype_t *dtype, struct ompi_op_t *op);
void mca_coll_offload_wrap_ops_retain(void);
void mca_coll_offload_wrap_ops_release(void);

END_C_DECLS

#endif
