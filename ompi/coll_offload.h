/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — Open MPI glue: component, module and the collective entry points.
 *
 * The module owns, per communicator, the software NIC segment, the edge
 * sequences and the compiled programs; everything is set up lazily by the first
 * offloaded call (collectively, with an agreement so that every rank offloads or
 * none does) and reused by every later call.
 */
#ifndef MCA_COLL_OFFLOAD_H
#define MCA_COLL_OFFLOAD_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/coll.h"
#include "coll_offload_compat.h"
#include "coll_offload_below.h"
#include "coll_offload_repsum.h"
#include "glue.h"
#include "opal/mca/hwloc/base/base.h"

#include "engine/agent.h"
#include "engine/board.h"
#include "engine/engine.h"
#include "engine/queue.h"
#include "engine/sig.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"
#include "nic/nic.h"
#include "sched/policy.h"
#include "sched/progset.h"
#include "sched/sched.h"

BEGIN_C_DECLS

/* How a collective was called: each kind has its own MPI_T counters. */
typedef enum {
    OFL_KIND_BLOCKING,
    OFL_KIND_NONBLOCKING,
    OFL_KIND_PERSISTENT,
    OFL_KIND_COUNT
} ofl_kind_t;

typedef struct {
    mca_coll_base_component_t super;
    mca_coll_offload_params_t params;
    int output;
    /* MPI_T counters (pvars coll_offload_<coll>_offloaded / _fallback). The counters
     * below that several threads update use the compiler's __atomic builtins on their
     * own type: the pvars read MPI_UNSIGNED_LONG_LONG, OPAL's 64-bit atomics take
     * int64_t, and a cast between the two would break C's aliasing rules. */
    unsigned long long offloaded[OFL_COLL_COUNT];
    unsigned long long fallback[OFL_COLL_COUNT];
    /* The same for nonblocking calls (i<coll>: per call) and persistent ones
     * (p<coll>: offloaded per MPI_Start, fallback per *_init); updated atomically,
     * since these calls also come from several threads. */
    unsigned long long nb_offloaded[OFL_KIND_COUNT][OFL_COLL_COUNT];
    unsigned long long nb_fallback[OFL_KIND_COUNT][OFL_COLL_COUNT];
    /* What the libfabric NIC sent between nodes (pvars coll_offload_ofi_*). */
    unsigned long long ofi_writes;
    unsigned long long ofi_bytes;
    unsigned long long ofi_triggered;   /* triggered operations posted (native calls) */
    /* Shared memory of this process's communicators (pvars coll_offload_shm_*): its
     * share of each segment (atomic: set-ups and frees may come from several
     * threads), and the communicators the node-wide cap sent to the fallback. */
    unsigned long long shm_bytes;
    unsigned long long shm_refused;
    unsigned long long shm_limit;       /* this process's part of the cap (0: not yet) */
    ofl_atomic_int32_t shm_warned;
} mca_coll_offload_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_offload_component_t mca_coll_offload_component;

typedef enum {
    OFL_MOD_UNSET = 0,   /* nothing built yet: the first offloaded call sets up */
    OFL_MOD_READY,
    OFL_MOD_DISABLED,    /* set-up failed on some rank, or a fault: all falls back */
    OFL_MOD_BROKEN       /* the ranks made different calls (an erroneous program):
                            every later collective call fails, nothing moves */
} ofl_mod_state_t;

typedef struct {
    mca_coll_base_module_t super;

    /* The layer below us, saved (and retained) in enable before anything else. */
    mca_coll_offload_below_t below;
    mca_coll_offload_below_t repsum_self;  /* our own nonblocking/persistent reductions,
                                               which reproducible sums call */

    volatile ofl_mod_state_t state;
    /* The set-up's own collectives go to the layer below, which may call back into
     * this communicator's table (coll/basic's allreduce is our reduce and bcast):
     * while it runs, such calls fall back instead of setting up again. */
    int in_setup;
    int rank;
    int size;
    ofl_nic_t *nic;             /* its backend's (set-up: coll_offload_shm.c); NULL before */
    ofl_edges_t edges;
    ofl_progset_t progs;      /* compiled at set-up (sched/progset.h) */
    int single_copy;          /* every rank can read every other's memory */
    /* What chooses each call's algorithm (sched/policy.h): the tables are the MCA
     * values' until the set-up has found every rank with the same rules (then their
     * rule's for this size), `crowded` agreed at the set-up. */
    ofl_choice_t choice;
    /* The rules of this communicator, chosen at its set-up: its info key
     * coll_offload_rules (own_rules), else the rules file's; NULL: none. The set-up
     * compares rules_digest across the ranks. */
    const ofl_rules_t *rules;
    ofl_rules_t *own_rules;
    uint64_t rules_digest;
    int repsum_mixed;         /* ranks disagree on reproducible sums (the info key): their
                                 sums are different calls, so every fallback checks */
    size_t shm_share;         /* bytes counted in the component's shm_bytes for us */
    int board;                /* small allreduces/barriers may use the board */
    /* A board reduce's result at ranks other than the root, and a board bcast's
     * non-contiguous data (packed): never more than the board holds. */
    _Alignas(16) unsigned char board_scratch[OFL_BOARD_MAX_LINES * OFL_BOARD_LINE_BYTES];
    ofl_wait_opts_t wait_opts;  /* blocking waits (MCA values, fixed after init) */
    struct ompi_datatype_t *map_dtype;   /* the last (dtype, op) mapped onto the ALU */
    struct ompi_op_t *map_op;
    ofl_alu_fn map_fn;
    size_t map_elem;
    /* The last blocking allreduce that ran offloaded, or that went to the layer below for
     * its arguments without waiting for the call records (alg OFL_ALG_FALLBACK; predefined
     * datatypes only, whose signature cannot go stale): its (dtype, op, count) and what the
     * decision made of them. Every other input of the decision (size policy, caps, ranks,
     * the board) is fixed once the communicator is set up, and applications repeat the
     * same call, so a repeat skips the mapping, the policy and the signature. */
    struct {
        struct ompi_datatype_t *dtype;
        struct ompi_op_t *op;
        ofl_count_t count;
        ofl_alg_t alg;
        ofl_alu_fn fn;
        size_t elem;
        uint64_t sig;
        struct ompi_op_t *below_op;   /* handed down: the op the layer below gets */
    } ar_last;
    ofl_board_state_t board_state;  /* board calls so far (the same on every rank) */
    uint64_t calls;           /* collective calls since set-up, offloaded or not (the
                                 same count on every rank): call records (nic.h) */
    ofl_inst_t inst;          /* the blocking call in flight */
    void *pack;               /* staging for non-contiguous bcast layouts; grows only */
    size_t pack_bytes;
    int warned;
    mca_coll_offload_repsum_t repsum;

    /* The execution queue of nonblocking and persistent calls, and of blocking ones
     * while any of those is outstanding (engine/queue.h). */
    ofl_queue_t queue;
} mca_coll_offload_module_t;

OBJ_CLASS_DECLARATION(mca_coll_offload_module_t);

int mca_coll_offload_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_offload_comm_query(struct ompi_communicator_t *comm,
                                                    int *priority);

/* The node-aware module for an intra-communicator that spans nodes
 * (coll_offload_hier.c). */
mca_coll_base_module_t *mca_coll_offload_hier_query(struct ompi_communicator_t *comm,
                                                    int *priority);

int mca_coll_offload_allreduce(const void *sbuf, void *rbuf, ofl_count_t count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
/* The same without the reproducible-mode check: the entry of the binned calls
 * of reproducible sums, whose op is never MPI_SUM. */
int mca_coll_offload_allreduce_wire(const void *sbuf, void *rbuf, ofl_count_t count,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm,
                                    mca_coll_base_module_t *module);
int mca_coll_offload_reduce(const void *sbuf, void *rbuf, ofl_count_t count,
                            struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
/* The node's part of a node-aware reduction: as mca_coll_offload_reduce, but the
 * per-size policy never hands it to the fallback (the leaders combine with the
 * NIC's ALU; the node must too, or an op the library computes differently
 * — Open MPI 4.1's MIN/MAX on unsigned long — would mix two answers). */
int mca_coll_offload_reduce_node(const void *sbuf, void *rbuf, ofl_count_t count,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                                 struct ompi_communicator_t *comm,
                                 mca_coll_base_module_t *module);
int mca_coll_offload_bcast(void *buf, ofl_count_t count, struct ompi_datatype_t *dtype, int root,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_offload_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module);

END_C_DECLS

#endif
