/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the reductions this component does not run itself
 * (reduce_scatter, reduce_scatter_block, scan, exscan: blocking, nonblocking and
 * persistent), handed to the layer below unchanged except for the op: where the
 * stock op is wrong (8/16-bit sums and products saturate in op/avx; MIN/MAX on
 * MPI_UNSIGNED_LONG and MPI_OFFSET compare with the wrong signedness in Open MPI
 * 4.1), mca_coll_offload_below_op gives the layer below one over the ALU's
 * kernels. Selecting the component thus never leaves a reduction wrong.
 */
#include "coll_offload.h"
#include "coll_offload_types.h"

static inline const mca_coll_offload_below_t *below_of(mca_coll_base_module_t *module)
{
    return &((mca_coll_offload_base_module_t *) module)->below;
}

#define OP(dtype, op) mca_coll_offload_below_op(b, dtype, op)

static int pt_reduce_scatter(const void *sbuf, void *rbuf, ofl_counts_t rcounts,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    const mca_coll_offload_below_t *b = below_of(module);
    return b->reduce_scatter(sbuf, rbuf, rcounts, dtype, OP(dtype, op), comm,
                             b->reduce_scatter_module);
}

static int pt_reduce_scatter_block(const void *sbuf, void *rbuf, ofl_count_t rcount,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm,
                                   mca_coll_base_module_t *module)
{
    const mca_coll_offload_below_t *b = below_of(module);
    return b->reduce_scatter_block(sbuf, rbuf, rcount, dtype, OP(dtype, op), comm,
                                   b->reduce_scatter_block_module);
}

static int pt_scan(const void *sbuf, void *rbuf, ofl_count_t count, struct ompi_datatype_t *dtype,
                   struct ompi_op_t *op, struct ompi_communicator_t *comm,
                   mca_coll_base_module_t *module)
{
    const mca_coll_offload_below_t *b = below_of(module);
    return b->scan(sbuf, rbuf, count, dtype, OP(dtype, op), comm, b->scan_module);
}

static int pt_exscan(const void *sbuf, void *rbuf, ofl_count_t count, struct ompi_datatype_t *dtype,
                     struct ompi_op_t *op, struct ompi_communicator_t *comm,
                     mca_coll_base_module_t *module)
{
    const mca_coll_offload_below_t *b = below_of(module);
    return b->exscan(sbuf, rbuf, count, dtype, OP(dtype, op), comm, b->exscan_module);
}

static int pt_ireduce_scatter(const void *sbuf, void *rbuf, ofl_counts_t rcounts,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module)
{
    const mca_coll_offload_below_t *b = below_of(module);
    return b->ireduce_scatter(sbuf, rbuf, rcounts, dtype, OP(dtype, op), comm, request,
                              b->ireduce_scatter_module);
}

static int pt_ireduce_scatter_block(const void *sbuf, void *rbuf, ofl_count_t rcount,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm, ompi_request_t **request,
                                    mca_coll_base_module_t *module)
{
    const mca_coll_offload_below_t *b = below_of(module);
    return b->ireduce_scatter_block(sbuf, rbuf, rcount, dtype, OP(dtype, op), comm, request,
                                    b->ireduce_scatter_block_module);
}

static int pt_iscan(const void *sbuf, void *rbuf, ofl_count_t count, struct ompi_datatype_t *dtype,
                    struct ompi_op_t *op, struct ompi_communicator_t *comm,
                    ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_offload_below_t *b = below_of(module);
    return b->iscan(sbuf, rbuf, count, dtype, OP(dtype, op), comm, request, b->iscan_module);
}

static int pt_iexscan(const void *sbuf, void *rbuf, ofl_count_t count,
                      struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                      struct ompi_communicator_t *comm, ompi_request_t **request,
                      mca_coll_base_module_t *module)
{
    const mca_coll_offload_below_t *b = below_of(module);
    return b->iexscan(sbuf, rbuf, count, dtype, OP(dtype, op), comm, request,
                      b->iexscan_module);
}

static int pt_reduce_scatter_init(const void *sbuf, void *rbuf, ofl_counts_t rcounts,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                  ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_offload_below_t *b = below_of(module);
    return b->reduce_scatter_init(sbuf, rbuf, rcounts, dtype, OP(dtype, op), comm, info,
                                  request, b->reduce_scatter_init_module);
}

static int pt_reduce_scatter_block_init(const void *sbuf, void *rbuf, ofl_count_t rcount,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        struct ompi_info_t *info, ompi_request_t **request,
                                        mca_coll_base_module_t *module)
{
    const mca_coll_offload_below_t *b = below_of(module);
    return b->reduce_scatter_block_init(sbuf, rbuf, rcount, dtype, OP(dtype, op), comm, info,
                                        request, b->reduce_scatter_block_init_module);
}

static int pt_scan_init(const void *sbuf, void *rbuf, ofl_count_t count,
                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                        struct ompi_communicator_t *comm, struct ompi_info_t *info,
                        ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_offload_below_t *b = below_of(module);
    return b->scan_init(sbuf, rbuf, count, dtype, OP(dtype, op), comm, info, request,
                        b->scan_init_module);
}

static int pt_exscan_init(const void *sbuf, void *rbuf, ofl_count_t count,
                          struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                          struct ompi_communicator_t *comm, struct ompi_info_t *info,
                          ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_offload_below_t *b = below_of(module);
    return b->exscan_init(sbuf, rbuf, count, dtype, OP(dtype, op), comm, info, request,
                          b->exscan_init_module);
}

void mca_coll_offload_passthru_install(mca_coll_base_module_t *module)
{
#define OFL_PASSTHRU_INSTALL(c) module->coll_##c = pt_##c;
    OFL_PASSTHRU_SLOTS(OFL_PASSTHRU_INSTALL)
#undef OFL_PASSTHRU_INSTALL
}
