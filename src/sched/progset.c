/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the compiled programs of one communicator (see progset.h).
 */
#include "sched/progset.h"

#include <stdlib.h>
#include <string.h>

int ofl_progset_compile(ofl_progset_t *set, int rank, int size, const ofl_progset_params_t *p)
{
    memset(set, 0, sizeof(*set));
    set->size = size;
    ofl_sched_params_t sp = {
        .reduce_kind = p->reduce_kind,
        .reduce_radix = p->reduce_radix,
        .bcast_kind = p->bcast_kind,
        .bcast_radix = p->bcast_radix,
        .slots = p->slots,
    };
    int ok = 0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, rank, size, &sp, &set->allreduce)
             && 0 == ofl_sched_compile(OFL_COLL_BARRIER, 0, rank, size, &sp, &set->barrier);
    if (ok && size <= p->exchange_max_ranks && size <= OFL_TREE_MAX_CHILDREN + 1) {
        sp.shape = OFL_SCHED_EXCHANGE;
        ok = 0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, rank, size, &sp, &set->allreduce_x)
             && 0 == ofl_sched_compile(OFL_COLL_BARRIER, 0, rank, size, &sp, &set->barrier_x);
    }
    if (ok && size > 1 && size <= OFL_TREE_MAX_CHILDREN + 1) {
        sp.shape = OFL_SCHED_SPLIT;
        ok = 0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, rank, size, &sp, &set->allreduce_s);
    }
    sp.shape = OFL_SCHED_TREE;
    set->reduce = ok ? calloc((size_t) size, sizeof(*set->reduce)) : NULL;
    set->bcast = ok ? calloc((size_t) size, sizeof(*set->bcast)) : NULL;
    set->bcast_get = ok ? calloc((size_t) size, sizeof(*set->bcast_get)) : NULL;
    ok = ok && NULL != set->reduce && NULL != set->bcast && NULL != set->bcast_get;
    for (int r = 0; ok && r < size; ++r) {
        sp.byref = 0;
        ok = 0 == ofl_sched_compile(OFL_COLL_REDUCE, r, rank, size, &sp, &set->reduce[r])
             && 0 == ofl_sched_compile(OFL_COLL_BCAST, r, rank, size, &sp, &set->bcast[r]);
        sp.byref = 1;
        ok = ok && 0 == ofl_sched_compile(OFL_COLL_BCAST, r, rank, size, &sp, &set->bcast_get[r]);
    }
    if (!ok) {
        ofl_progset_free(set);
        return -1;
    }
    return 0;
}

void ofl_progset_free(ofl_progset_t *set)
{
    ofl_program_free(&set->allreduce);
    ofl_program_free(&set->barrier);
    ofl_program_free(&set->allreduce_x);
    ofl_program_free(&set->barrier_x);
    ofl_program_free(&set->allreduce_s);
    for (int r = 0; r < set->size; ++r) {
        if (NULL != set->reduce) {
            ofl_program_free(&set->reduce[r]);
        }
        if (NULL != set->bcast) {
            ofl_program_free(&set->bcast[r]);
        }
        if (NULL != set->bcast_get) {
            ofl_program_free(&set->bcast_get[r]);
        }
    }
    free(set->reduce);
    free(set->bcast);
    free(set->bcast_get);
    set->reduce = set->bcast = set->bcast_get = NULL;
}

/* Mark each stream (peer, chan) prog reads from. */
static void mark_inbound(const ofl_program_t *prog, unsigned char *in)
{
    for (int i = 0; i < prog->npeers && NULL != prog->use_in; ++i) {
        for (int ch = 0; ch < OFL_CHANNELS; ++ch) {
            if (prog->use_in[i * OFL_CHANNELS + ch].per_round > 0) {
                in[prog->peers[i] * OFL_CHANNELS + ch] = 1;
            }
        }
    }
}

int ofl_progset_inbound(const ofl_progset_t *set)
{
    unsigned char *in = calloc((size_t) set->size * OFL_CHANNELS, 1);
    if (NULL == in) {
        return -1;
    }
    const ofl_program_t *one[] = { &set->allreduce, &set->barrier, &set->allreduce_x,
                                   &set->allreduce_s, &set->barrier_x };
    for (size_t k = 0; k < sizeof(one) / sizeof(one[0]); ++k) {
        mark_inbound(one[k], in);
    }
    for (int r = 0; r < set->size; ++r) {
        mark_inbound(&set->reduce[r], in);
        mark_inbound(&set->bcast[r], in);
        mark_inbound(&set->bcast_get[r], in);
    }
    int n = 0;
    for (int k = 0; k < set->size * OFL_CHANNELS; ++k) {
        n += in[k];
    }
    free(in);
    return n;
}

void ofl_progset_dump(const ofl_progset_t *set, FILE *out)
{
    ofl_program_dump(&set->allreduce, out);
    if (set->allreduce_x.ndesc > 0) {
        ofl_program_dump(&set->allreduce_x, out);
    }
    if (set->allreduce_s.ndesc > 0) {
        ofl_program_dump(&set->allreduce_s, out);
    }
    ofl_program_dump(&set->reduce[0], out);
    ofl_program_dump(&set->bcast[0], out);
}
