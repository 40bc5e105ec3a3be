/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the offload/fallback decision, shared by every entry point
 * (blocking, nonblocking, persistent): the per-call checks are inline here, on
 * the path of every small call; what runs once per call kind or set-up is in
 * coll_offload_decide.c.
 *
 * Every decision depends only on arguments MPI requires to be the same on all
 * ranks (op, datatype, count for reductions; the byte size for bcast), on MCA
 * values, and on the communicator's agreed state, so every rank of a call takes
 * the same path.
 */
#ifndef MCA_COLL_OFFLOAD_DECIDE_H
#define MCA_COLL_OFFLOAD_DECIDE_H

#include "coll_offload.h"
#include "coll_offload_setup.h"
#include "coll_offload_types.h"

BEGIN_C_DECLS

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
                                      ofl_count_t count, ofl_call_t *call, ofl_alg_t *alg);
int mca_coll_offload_decide_bcast(mca_coll_offload_module_t *m,
                                  struct ompi_communicator_t *comm, size_t bytes,
                                  ofl_alg_t *alg);
int mca_coll_offload_decide_barrier(mca_coll_offload_module_t *m,
                                    struct ompi_communicator_t *comm, ofl_alg_t *alg);
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


/* Every blocking fallback passes here, tiny reduces and bcasts included: the
 * count in place, the call out only to explain it. */
static inline void decide_fallback_note(ofl_coll_t coll, int reason, size_t bytes,
                                        struct ompi_communicator_t *comm)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    if (OPAL_UNLIKELY(c->params.verbose >= 10)) {
        mca_coll_offload_note(OFL_KIND_BLOCKING, coll, reason, bytes, comm);
        return;
    }
    c->fallback[coll]++;
}

/* A nonblocking call never sets the NIC up: set-up is collective and blocking,
 * and ranks may start nonblocking collectives on several communicators in
 * different orders (MPI allows it), so waiting in one would deadlock. Until a
 * blocking collective or a persistent init has set it up, they fall back. */
static inline int decide_nb_ready(mca_coll_offload_module_t *m)
{
    ofl_mod_state_t st = m->state;
    return OFL_MOD_READY == st ? OFL_R_OFFLOAD : OFL_MOD_UNSET == st ? OFL_R_UNSET : OFL_R_NIC;
}

/* Lazy, collective set-up at the first offloaded call; same outcome on all ranks.
 * 1: offload; 0: fall back, or return *rc when it is an error (this rank could
 * not learn the outcome: falling back alone would leave the others waiting). */
static inline int decide_ensure_ready(mca_coll_offload_module_t *m,
                                      struct ompi_communicator_t *comm, int *rc)
{
    *rc = OMPI_SUCCESS;
    if (OPAL_LIKELY(OFL_MOD_READY == m->state)) {
        return 1;
    }
    if (OFL_MOD_UNSET == m->state && !m->in_setup) {
        m->in_setup = 1;
        *rc = mca_coll_offload_setup(m, comm);
        m->in_setup = 0;
    }
    return OFL_MOD_READY == m->state;
}

/* What ofl_choose's answer (sched/policy.h) makes of a call: offload, or why not. */
static inline int decide_reason(int chosen)
{
    return OFL_CHOSEN == chosen       ? OFL_R_OFFLOAD
           : OFL_CHOSEN_CAP == chosen ? OFL_R_SIZE
                                      : OFL_R_POLICY;
}

/* The hard size cap, the per-size table and the crowded rules (sched/policy.h). */
static inline int decide_check_size(const mca_coll_offload_module_t *m, ofl_coll_t coll,
                                    size_t bytes, ofl_alg_t *alg)
{
    return decide_reason(ofl_choose(&m->choice, coll, bytes, alg));
}

/* The ALU kernel for (dtype, op). The last successful mapping is kept per
 * module: applications repeat the same pair, and only predefined datatypes and
 * intrinsic ops ever map, objects that live as long as MPI does. */
static inline int decide_map(mca_coll_offload_module_t *m, struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, ofl_call_t *call)
{
    if (OPAL_LIKELY(dtype == m->map_dtype && op == m->map_op)) {
        call->fn = m->map_fn;
        call->elem = m->map_elem;
        return 0;
    }
    int reason = mca_coll_offload_map(dtype, op, &call->fn, &call->elem);
    if (0 == reason) {
        m->map_dtype = dtype;
        m->map_op = op;
        m->map_fn = call->fn;
        m->map_elem = call->elem;
    }
    return reason;
}

static inline int decide_check_reduction(mca_coll_offload_module_t *m, ofl_coll_t coll,
                                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         ofl_count_t count, ofl_call_t *call, ofl_alg_t *alg)
{
    int reason = decide_map(m, dtype, op, call);
    if (0 != reason) {
        return reason;
    }
    call->count = count > 0 ? (size_t) count : 0;
    return decide_check_size(m, coll, call->count * call->elem, alg);
}

/* The compiled program for an offloaded call (sched/progset.h). */
static inline const ofl_program_t *mca_coll_offload_program(const mca_coll_offload_module_t *m,
                                                            ofl_coll_t coll, ofl_alg_t alg,
                                                            int root)
{
    return ofl_progset_pick(&m->progs, coll, alg, root, m->single_copy);
}

END_C_DECLS

#endif
