/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — compile a collective into one rank's descriptor program.
 *
 * Called once per communicator and shape (collective, root); the result is reused
 * for every call of that shape. The reduction goes up the reduction tree, the
 * result comes down the broadcast tree; the root's combine descriptor also feeds
 * its broadcast children so the result leaves the root without a second trigger.
 */
#ifndef OFL_SCHED_H
#define OFL_SCHED_H

#include "sched/program.h"
#include "tree/tree.h"

typedef enum {
    /* up the reduction tree, down the same tree */
    OFL_SCHED_TREE = 0,
    /* every rank puts its data to every other rank and combines all contributions
     * in rank order (the same order everywhere, so float results stay bitwise
     * identical): one step, for small messages on few ranks */
    OFL_SCHED_EXCHANGE,
    /* segment ownership: reduce-scatter then allgather, all ranks moving and
     * combining at once; for large messages (barrier: same as exchange) */
    OFL_SCHED_SPLIT
} ofl_sched_shape_t;

typedef struct {
    ofl_tree_kind_t reduce_kind;
    int reduce_radix;
    ofl_tree_kind_t bcast_kind;
    int bcast_radix;
    int slots;              /* mailbox slots per edge, >= 1 */
    ofl_sched_shape_t shape;    /* allreduce/barrier only */
    /* bcast only: single copy, children read the parent's buffer (an RDMA read
     * by the receiver) instead of the parent copying into their mailboxes.
     * Needs a backend with get/put_ref. */
    int byref;
} ofl_sched_params_t;

/* Build rank's program for `coll` rooted at `root` (ignored for allreduce and
 * barrier) on a communicator of `size`. Returns 0, or -1 on invalid parameters or
 * out of memory (*prog is then left empty). */
int ofl_sched_compile(ofl_coll_t coll, int root, int rank, int size,
                      const ofl_sched_params_t *params, ofl_program_t *prog);

#endif
