/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the compiled programs of one communicator (one rank's): every
 * shape a call may take, compiled once at set-up, and the one a call runs.
 */
#ifndef OFL_PROGSET_H
#define OFL_PROGSET_H

#include <stdio.h>

#include "sched/policy.h"
#include "sched/sched.h"

typedef struct {
    int size;
    ofl_program_t allreduce;      /* the tree */
    ofl_program_t barrier;
    ofl_program_t allreduce_x;    /* exchange variants; empty when the comm is too big */
    ofl_program_t barrier_x;
    ofl_program_t allreduce_s;    /* segment ownership; empty for one rank */
    ofl_program_t *reduce;        /* [size]: one per root */
    ofl_program_t *bcast;         /* [size] */
    ofl_program_t *bcast_get;     /* [size]: children read the parent's buffer */
} ofl_progset_t;

typedef struct {
    int slots;                    /* mailbox slots per stream */
    ofl_tree_kind_t reduce_kind;  /* the reduction tree (allreduce and reduce) */
    int reduce_radix;
    ofl_tree_kind_t bcast_kind;
    int bcast_radix;
    int exchange_max_ranks;       /* the exchange only on communicators up to this size */
} ofl_progset_params_t;

/* Compile rank's programs on a communicator of `size`. 0, or -1 (out of memory or
 * invalid parameters; *set then holds nothing: ofl_progset_free is harmless). */
int ofl_progset_compile(ofl_progset_t *set, int rank, int size, const ofl_progset_params_t *p);
void ofl_progset_free(ofl_progset_t *set);

/* The distinct streams (peer, channel) this rank receives on in any of the
 * programs: each is mailbox memory of the NIC. -1 when out of memory. */
int ofl_progset_inbound(const ofl_progset_t *set);

/* The allreduce, bcast, rooted tree's and barrier's programs for the size policy's
 * algorithm (sched/policy.h); `single_copy`: every rank can read every other's
 * memory (else a get runs the tree). */
static inline const ofl_program_t *ofl_progset_pick(const ofl_progset_t *set, ofl_coll_t coll,
                                                    ofl_alg_t alg, int root, int single_copy)
{
    int x = OFL_ALG_EXCHANGE == alg || OFL_ALG_BOARD == alg;
    switch (coll) {
    case OFL_COLL_ALLREDUCE:
        if (x && set->allreduce_x.ndesc > 0) {
            return &set->allreduce_x;
        }
        if (OFL_ALG_SPLIT == alg && set->allreduce_s.ndesc > 0) {
            return &set->allreduce_s;
        }
        return &set->allreduce;
    case OFL_COLL_REDUCE:
        return &set->reduce[root];
    case OFL_COLL_BCAST:
        return (OFL_ALG_GET == alg && single_copy) ? &set->bcast_get[root] : &set->bcast[root];
    default:
        return (x && set->barrier_x.ndesc > 0) ? &set->barrier_x : &set->barrier;
    }
}

/* Human-readable: the allreduce's programs, the reduce's and bcast's from root 0. */
void ofl_progset_dump(const ofl_progset_t *set, FILE *out);

#endif
