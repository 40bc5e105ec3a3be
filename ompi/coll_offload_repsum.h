/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — reproducible sums at the MPI level: a communicator's mode and memo, the wire
 * datatypes and op, and the calls in reproducible mode (coll_offload_repsum.c,
 * coll_offload_repsum_nb.c; the format is src/repsum/).
 */
#ifndef MCA_COLL_OFFLOAD_REPSUM_H
#define MCA_COLL_OFFLOAD_REPSUM_H

#include "ompi_config.h"

#include "coll_offload_below.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/op/op.h"

BEGIN_C_DECLS

/* Reproducible sums on one communicator (coll_offload_repsum.c). */
typedef enum {
    OFL_REPSUM_UNDECIDED = 0,   /* no float sum yet: decided at the first */
    OFL_REPSUM_OFF,
    OFL_REPSUM_ON
} ofl_repsum_mode_t;

typedef struct {
    volatile int mode;          /* ofl_repsum_mode_t: set once, read by every call */
    void *stage;                /* blocking calls' binned elements; grows only */
    size_t stage_bytes;
    /* The last blocking allreduce taken in one binned pass: a repeat of its
     * datatype and count (mode on, op MPI_SUM) skips the checks, which cost as
     * much as the conversions on a small call. last_dtype NULL: none yet. */
    struct ompi_datatype_t *last_dtype;
    int last_count;
    int last_kind;
    struct ompi_datatype_t *wire_type;
    struct ompi_op_t *wire_op;
} mca_coll_offload_repsum_t;

/* Reproducible sums. The kinds of datatype they cover (0: not a float sum). */
enum { OFL_RS_NONE = 0, OFL_RS_FLOAT, OFL_RS_DOUBLE, OFL_RS_CFLOAT, OFL_RS_CDOUBLE };
int mca_coll_offload_repsum_kind(struct ompi_datatype_t *dtype, struct ompi_op_t *op);
/* The wire datatype (one binned element, contiguous) and the commutative user op
 * over it that the layer below gets; created with the wrapping ops. */
struct ompi_datatype_t *mca_coll_offload_repsum_type(void);
/* The two-pass form's wire datatypes (meta element, 128-bit integer) under the
 * same op; NULL when they could not be made. */
struct ompi_datatype_t *mca_coll_offload_repsum_meta_type(void);
struct ompi_datatype_t *mca_coll_offload_repsum_wide_type(void);
struct ompi_op_t *mca_coll_offload_repsum_op(void);
/* Would this rank's float sums on `comm` be reproducible (its own answer, as the
 * first float sum takes it)? The set-up compares it across ranks. */
int mca_coll_offload_repsum_asked(struct ompi_communicator_t *comm);

/* 1 when (dtype, op) is a float sum this communicator makes reproducible (the
 * mode is taken at its first float sum: coll_offload_repsum.c). */
int mca_coll_offload_repsum_wanted(mca_coll_offload_repsum_t *r, struct ompi_datatype_t *dtype,
                                   struct ompi_op_t *op, struct ompi_communicator_t *comm);
/* 1 when the call repeats the last one-pass allreduce (mode on: nothing else
 * sets the memo), inline so the repeat costs three compares. */
static inline int mca_coll_offload_repsum_again(const mca_coll_offload_repsum_t *r,
                                                struct ompi_datatype_t *dtype,
                                                struct ompi_op_t *op, ofl_count_t count)
{
    return dtype == r->last_dtype && op == &ompi_mpi_op_sum.op && count == r->last_count;
}
/* The blocking calls in reproducible mode: convert, run `self` (the module's
 * own entry point) on the binned elements, convert back. Large counts take the
 * two-pass form (bit-identical): an allreduce of the meta elements through
 * `allreduce` (the module's own), then `self` on the 128-bit integers. */
int mca_coll_offload_repsum_allreduce(mca_coll_offload_repsum_t *r, const void *sbuf, void *rbuf,
                                      ofl_count_t count, struct ompi_datatype_t *dtype,
                                      struct ompi_communicator_t *comm,
                                      mca_coll_base_module_t *module,
                                      mca_coll_base_module_allreduce_fn_t self);
/* The same for a repeat (mca_coll_offload_repsum_again): count and datatype
 * are the memo's. */
int mca_coll_offload_repsum_allreduce_again(mca_coll_offload_repsum_t *r, const void *sbuf,
                                            void *rbuf, struct ompi_communicator_t *comm,
                                            mca_coll_base_module_t *module,
                                            mca_coll_base_module_allreduce_fn_t self);
int mca_coll_offload_repsum_reduce(mca_coll_offload_repsum_t *r, const void *sbuf, void *rbuf,
                                   ofl_count_t count, struct ompi_datatype_t *dtype, int root,
                                   struct ompi_communicator_t *comm,
                                   mca_coll_base_module_t *module,
                                   mca_coll_base_module_reduce_fn_t self,
                                   mca_coll_base_module_allreduce_fn_t allreduce);
void mca_coll_offload_repsum_fini(mca_coll_offload_repsum_t *r);
/* Nonblocking (persistent = 0) and persistent allreduce (reduce = 0) or reduce
 * in reproducible mode: the binned call runs through `via`'s i<coll> or
 * <coll>_init (the node module's own entry points, or the layer below). */
int mca_coll_offload_repsum_request(int reduce, int persistent, const void *sbuf, void *rbuf,
                                    ofl_count_t count, struct ompi_datatype_t *dtype, int root,
                                    struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                    ompi_request_t **request,
                                    const mca_coll_offload_below_t *via);
void mca_coll_offload_repsum_close(void);

END_C_DECLS

#endif
