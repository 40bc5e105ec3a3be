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
#include "glue.h"
#include "opal/mca/hwloc/base/base.h"

#include "engine/agent.h"
#include "engine/board.h"
#include "engine/engine.h"
#include "engine/sig.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"
#include "nic/nic.h"
#include "sched/policy.h"
#include "sched/sched.h"

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

/* Steps of the set-up (and the staging of a bcast) where coll_offload_inject can
 * make a rank fail, to test the error paths. */
typedef enum {
    OFL_INJECT_NONE = 0,
    OFL_INJECT_CREATE,
    OFL_INJECT_NAME,
    OFL_INJECT_BCAST,
    OFL_INJECT_PROC,
    OFL_INJECT_ATTACH,
    OFL_INJECT_PROBE,
    OFL_INJECT_COMPILE,
    OFL_INJECT_AGREE,
    OFL_INJECT_STAGE,
    OFL_INJECT_HIER,
    OFL_INJECT_COUNT
} ofl_inject_t;

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
    int rank;
    int size;
    ofl_nic_t *nic;             /* its backend's (set-up: coll_offload_shm.c); NULL before */
    ofl_edges_t edges;
    ofl_program_t allreduce;
    ofl_program_t barrier;
    ofl_program_t allreduce_x;   /* exchange variants; empty when the comm is too big */
    ofl_program_t allreduce_s;   /* segment ownership; empty for one rank */
    ofl_program_t barrier_x;
    ofl_program_t *reduce;    /* [size]: one per root */
    ofl_program_t *bcast;     /* [size] */
    ofl_program_t *bcast_get; /* [size]: children read the parent's buffer */
    int single_copy;          /* every rank can read every other's memory */
    int crowded;              /* some rank's node has more ranks than cores (agreed) */
    /* Per collective, the size policy in force: the MCA value's, or once the set-up
     * has found every rank with the same rules, their rule for this size. */
    const ofl_policy_t *policy[OFL_COLL_COUNT];
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
    /* The last blocking allreduce that ran offloaded: its (dtype, op, count) and what
     * the decision made of them. Every other input of the decision (size policy, caps,
     * ranks, the board) is fixed once the communicator is set up, and applications
     * repeat the same call, so a repeat skips the mapping, the policy and the signature. */
    struct {
        struct ompi_datatype_t *dtype;
        struct ompi_op_t *op;
        int count;
        ofl_alg_t alg;
        ofl_alu_fn fn;
        size_t elem;
        uint64_t sig;
    } ar_last;
    ofl_board_state_t board_state;  /* board calls so far (the same on every rank) */
    uint64_t calls;           /* collective calls since set-up, offloaded or not (the
                                 same count on every rank): call records (nic.h) */
    ofl_inst_t inst;          /* the blocking call in flight */
    void *pack;               /* staging for non-contiguous bcast layouts; grows only */
    size_t pack_bytes;
    int warned;
    mca_coll_offload_repsum_t repsum;

    /* The execution queue (coll_offload_queue.c). Nonblocking and persistent
     * calls, and blocking ones while any of those is outstanding, run as queued
     * calls in post order; one thread at a time executes them (item.busy, the
     * executor lock): the NIC's CREDIT counters have one writer and its credit
     * cache is per rank. Touched with __atomic builtins where noted: the queue is shared
     * with the progress agent's thread at every MPI thread level, and its
     * acquire/release pairs say exactly which stores a load must see; OPAL's
     * OPAL_THREAD_* forms are no-ops below MPI_THREAD_MULTIPLE, and its fences
     * (opal_atomic_rmb/wmb) would have to be placed by hand at each of them. */
    ofl_agent_item_t item;    /* executor lock; on the agent's list once linked */
    int item_linked;
    int nactive;              /* atomic: posted and not finished */
    struct mca_coll_offload_qcall *incoming;   /* atomic LIFO of posts, newest first */
    struct mca_coll_offload_qcall *run_head;   /* executor's: active, in post order */
    struct mca_coll_offload_qcall *run_tail;
    struct mca_coll_offload_qcall *blocking_call;  /* a blocking call's, once activated */
    int failed;               /* executor's: a fault stopped this NIC for good */
    int fail_status;          /* ofl_wait_status_t, and what was awaited: */
    int fail_error;           /* -errno of a failed read of a peer's memory, or
                                 -EPROTO: a peer's value failed validation */
    int fail_peer;
    int fail_cnt;
    uint64_t fail_have;
    int64_t fail_need;
    unsigned idle;            /* executor's: rounds without progress */
    double head_since;        /* executor's: when the head instance became head */
    double next_check;        /* executor's: next liveness check */
} mca_coll_offload_module_t;

OBJ_CLASS_DECLARATION(mca_coll_offload_module_t);

int mca_coll_offload_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_offload_comm_query(struct ompi_communicator_t *comm,
                                                    int *priority);

/* Set the communicator's NIC up (collective; coll_offload_setup.c). OMPI_SUCCESS
 * with m->state READY or DISABLED (every rank alike: the calls fall back); an
 * error when this rank cannot know what the others decided (the agreement
 * itself failed here): the call must return it, and the communicator is marked
 * failed for the others. */
int mca_coll_offload_setup(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm);
/* The NIC backend's part of it (coll_offload_shm.c): collective; *ready 1 with
 * m->nic attached, 0 when every rank falls back; or the error of an agreement
 * that failed on this rank. */
int mca_coll_offload_shm_setup(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                               int local_ok, int streams, int *ready);
/* Give back the NIC, the programs and the shared-memory share (coll_offload_module.c). */
void mca_coll_offload_release_nic(mca_coll_offload_module_t *m);

/* Fault injection (coll_offload_inject.c). Parse coll_offload_inject (component
 * open): 0, or -1 when it is malformed (then nothing is injected). */
int mca_coll_offload_inject_parse(const char *text);
/* Tests only: should `step` fail now on comm rank `rank`? Set-up steps count in
 * the process's first set-up only, OFL_INJECT_STAGE at its first staging only,
 * so that every later communicator works. With :kill the process SIGKILLs
 * itself here instead of returning. */
int mca_coll_offload_inject(ofl_inject_t step, int rank);
/* A set-up finished in this process (injections count the first one only). */
void mca_coll_offload_inject_setup_done(void);

/* The progress agent (coll_offload_agent.c): configure it from the MCA values
 * and start it where it should run. */
void mca_coll_offload_agent_start(ofl_agent_t *agent);
/* In an application thread: print what the agent found in its set-up (the
 * real-time class refused) once it is ready. 1 while it may yet have
 * something to say. */
int mca_coll_offload_agent_report(ofl_agent_t *agent);

/* The node-aware module for an intra-communicator that spans nodes
 * (coll_offload_hier.c). */
mca_coll_base_module_t *mca_coll_offload_hier_query(struct ompi_communicator_t *comm,
                                                    int *priority);

int mca_coll_offload_allreduce(const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
/* The same without the reproducible-mode check: the entry of the binned calls
 * of reproducible sums, whose op is never MPI_SUM. */
int mca_coll_offload_allreduce_wire(const void *sbuf, void *rbuf, int count,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm,
                                    mca_coll_base_module_t *module);
int mca_coll_offload_reduce(const void *sbuf, void *rbuf, int count,
                            struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
/* The node's part of a node-aware reduction: as mca_coll_offload_reduce, but the
 * per-size policy never hands it to the fallback (the leaders combine with the
 * NIC's ALU; the node must too, or an op the library computes differently
 * — Open MPI 4.1's MIN/MAX on unsigned long — would mix two answers). */
int mca_coll_offload_reduce_node(const void *sbuf, void *rbuf, int count,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                                 struct ompi_communicator_t *comm,
                                 mca_coll_base_module_t *module);
int mca_coll_offload_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_offload_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module);

/* Nonblocking and persistent collectives (coll_offload_nb.c). */
/* Fill m->repsum_self (coll_offload_nb.c), once, when the module is made. */
void mca_coll_offload_repsum_self_init(mca_coll_offload_module_t *m);
int mca_coll_offload_iallreduce(const void *sbuf, void *rbuf, int count,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                struct ompi_communicator_t *comm, ompi_request_t **request,
                                mca_coll_base_module_t *module);
int mca_coll_offload_ireduce(const void *sbuf, void *rbuf, int count,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                             struct ompi_communicator_t *comm, ompi_request_t **request,
                             mca_coll_base_module_t *module);
int mca_coll_offload_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                            struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module);
int mca_coll_offload_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module);
int mca_coll_offload_allreduce_init(const void *sbuf, void *rbuf, int count,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                    ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_offload_reduce_init(const void *sbuf, void *rbuf, int count,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                                 struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                 ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_offload_bcast_init(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                                struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_offload_barrier_init(struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                  ompi_request_t **request, mca_coll_base_module_t *module);

/* Component close: complete what is left, stop the agent, unregister the
 * progress callback (coll_offload_request.c). */
void mca_coll_offload_nb_close(void);

/* Does the board take this call: the policy chose it, the communicator may use
 * the board, and the payload fits? (Nonblocking and persistent calls too.) */
static inline int mca_coll_offload_board_takes(const mca_coll_offload_module_t *m,
                                               ofl_alg_t alg, size_t bytes)
{
    return OFL_ALG_BOARD == alg && m->board && bytes <= m->nic->board_bytes;
}

/* Shared by the blocking and the nonblocking entry points (coll_offload_ops.c). */
enum {
    OFL_R_OFFLOAD = 0,
    OFL_R_USER_OP = 1,
    OFL_R_TYPE = 2,
    OFL_R_OP_TYPE = 3,
    OFL_R_SIZE = 4,
    OFL_R_NIC = 5,
    OFL_R_POLICY = 6,
    OFL_R_UNSET = 7,
    OFL_R_UNORDERED = 8
};
/* The decision of a nonblocking or persistent call: a reduction (fills call's
 * fn, elem, count), a bcast of `bytes`, a barrier: OFL_R_OFFLOAD, or why not.
 * These never set the NIC up (OFL_R_UNSET until a blocking call did). */
int mca_coll_offload_decide_reduction(mca_coll_offload_module_t *m,
                                      struct ompi_communicator_t *comm, ofl_coll_t coll,
                                      struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                      int count, ofl_call_t *call, ofl_alg_t *alg);
int mca_coll_offload_decide_bcast(mca_coll_offload_module_t *m,
                                  struct ompi_communicator_t *comm, size_t bytes,
                                  ofl_alg_t *alg);
int mca_coll_offload_decide_barrier(mca_coll_offload_module_t *m,
                                    struct ompi_communicator_t *comm, ofl_alg_t *alg);
/* The compiled program for an offloaded call. */
const ofl_program_t *mca_coll_offload_program(mca_coll_offload_module_t *m, ofl_coll_t coll,
                                              ofl_alg_t alg, int root);
/* Count (and at verbose >= 10 explain) a decision. */
void mca_coll_offload_note(ofl_kind_t kind, ofl_coll_t coll, int reason, size_t bytes,
                           struct ompi_communicator_t *comm);

/* The same for an offloaded nonblocking or persistent call, the counter bumped
 * in place (every persistent start passes here). */
static inline void mca_coll_offload_note_offload(ofl_kind_t kind, ofl_coll_t coll,
                                                 size_t bytes,
                                                 struct ompi_communicator_t *comm)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    if (OPAL_UNLIKELY(c->params.verbose >= 10 || opal_using_threads())) {
        mca_coll_offload_note(kind, coll, OFL_R_OFFLOAD, bytes, comm);
        return;
    }
    c->nb_offloaded[kind][coll]++;
}
/* The smallest segment a message is cut into (a slot is never smaller where the
 * budget allows): below it the per-segment handshakes dominate. */
#define OFL_SEGMENT_MIN_BYTES (16u << 10)
/* The segment size of a call of `bytes` on prog (ofl_call_t.seg_bytes). */
size_t mca_coll_offload_segment(const ofl_program_t *prog, size_t bytes);
/* The error message of a failed offloaded call (dead peer, watchdog, or a failed
 * read of a peer's memory: -error). */
void mca_coll_offload_report(mca_coll_offload_module_t *m, const char *what,
                             struct ompi_communicator_t *comm, ofl_wait_status_t st, int peer,
                             int cnt, uint64_t have, int64_t need, int error);
/* A local failure in the middle of a call (a staging allocation, packing)
 * that leaves this rank unable to take part: say so, mark the communicator
 * failed for every rank (ofl_nic_poison_self: whoever waits on us gives up
 * at its next liveness check) and fall back from now on. Returns the error for
 * the call. */
int mca_coll_offload_fail_here(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                               const char *what, const char *why, int rc);
/* What every rank of a call must pass alike (engine/sig.h). */
static inline uint64_t mca_coll_offload_sig(ofl_coll_t coll, struct ompi_datatype_t *dtype,
                                            struct ompi_op_t *op, int root, size_t bytes)
{
    unsigned o = 0, t = 0;
    if (NULL != op) {
        o = ompi_op_is_intrinsic(op) ? (unsigned) op->o_f_to_c_index + 1 : OFL_SIG_OP_USER;
    }
    if (NULL != dtype) {
        t = ompi_datatype_is_predefined(dtype) ? (unsigned) dtype->id + 1 : OFL_SIG_TYPE_DERIVED;
    }
    return ofl_sig_make((unsigned) coll, o, t, root, bytes);
}

/* The start of every collective call (all kinds, offloaded or not): on a
 * communicator whose NIC is set up, number the call and record its signature
 * where the peers can compare it, before waiting for anybody. Returns the
 * call's number (0 without a NIC), or -1 when the communicator is broken by an
 * earlier mismatch (the call must fail). */
static inline int64_t mca_coll_offload_begin(mca_coll_offload_module_t *m, uint64_t sig)
{
    ofl_mod_state_t st = m->state;
    if (OPAL_LIKELY(OFL_MOD_READY == st)) {
        uint64_t n = ++m->calls;
        ofl_nic_record(m->nic, n, sig);
        return (int64_t) n;
    }
    return OFL_MOD_BROKEN == st ? -1 : 0;
}

/* A call on a broken communicator: say so, once per call. */
int mca_coll_offload_refuse(mca_coll_offload_module_t *m, const char *what,
                            struct ompi_communicator_t *comm);

/* A blocking call of `bytes` handed to the fallback (for `reason`, OFL_R_*) as
 * call `callno` (from begin): wait until every peer has recorded the same call (a
 * peer that offloads it would otherwise wait for us for ever while we wait in the
 * fallback for it) — unless the size policy chose the fallback (for a call of at
 * most coll_offload_agree_above bytes, or of any size when that is -1) and
 * coll_offload_check is off: then only a mismatch already reported on the
 * communicator ends it. MPI_SUCCESS, or the error to return. */
int mca_coll_offload_agree(mca_coll_offload_module_t *m, const char *what, uint64_t sig,
                           int64_t callno, int reason, size_t bytes,
                           struct ompi_communicator_t *comm);

/* Pack (root) or unpack a non-contiguous bcast buffer through `stage`. */
int mca_coll_offload_stage(void *stage, void *buf, int count, struct ompi_datatype_t *dtype,
                           size_t bytes, int pack);

/* Set the communicator up from a persistent init (collective, in order): OMPI_SUCCESS
 * (then the module is ready, or falls back for good, on every rank alike) or the error
 * of a set-up this rank could not agree on. */
int mca_coll_offload_setup_in_init(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm);

/* May persistent collectives on `comm` be matched by the order of their starts (the
 * communicator asserts mpi_assert_strict_persistent_collective_ordering, or
 * coll_offload_persistent_ordered says every communicator does)? */
int mca_coll_offload_persistent_ordered(struct ompi_communicator_t *comm);

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
struct ompi_op_t *mca_coll_offload_below_op(struct ompi_datatype_t *dtype, struct ompi_op_t *op);

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
                                                struct ompi_op_t *op, int count)
{
    return dtype == r->last_dtype && op == &ompi_mpi_op_sum.op && count == r->last_count;
}
/* The blocking calls in reproducible mode: convert, run `self` (the module's
 * own entry point) on the binned elements, convert back. Large counts take the
 * two-pass form (bit-identical): an allreduce of the meta elements through
 * `allreduce` (the module's own), then `self` on the 128-bit integers. */
int mca_coll_offload_repsum_allreduce(mca_coll_offload_repsum_t *r, const void *sbuf, void *rbuf,
                                      int count, struct ompi_datatype_t *dtype,
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
                                   int count, struct ompi_datatype_t *dtype, int root,
                                   struct ompi_communicator_t *comm,
                                   mca_coll_base_module_t *module,
                                   mca_coll_base_module_reduce_fn_t self,
                                   mca_coll_base_module_allreduce_fn_t allreduce);
void mca_coll_offload_repsum_fini(mca_coll_offload_repsum_t *r);
/* Nonblocking (persistent = 0) and persistent allreduce (reduce = 0) or reduce
 * in reproducible mode: the binned call runs through `via`'s i<coll> or
 * <coll>_init (the node module's own entry points, or the layer below). */
int mca_coll_offload_repsum_request(int reduce, int persistent, const void *sbuf, void *rbuf,
                                    int count, struct ompi_datatype_t *dtype, int root,
                                    struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                    ompi_request_t **request,
                                    const mca_coll_offload_below_t *via);
void mca_coll_offload_repsum_close(void);
void mca_coll_offload_wrap_ops_retain(void);
void mca_coll_offload_wrap_ops_release(void);

END_C_DECLS

#endif
