/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — per-size algorithm policy.
 *
 * A policy is a short table read from an MCA string such as
 *     "exchange:1024,split:4194304,fallback"
 * meaning: up to 1024 bytes the one-step exchange, up to 4 MiB segment ownership,
 * above that the component below us. Entries are ALG[:MAXBYTES] in increasing size
 * order; the last entry has no size and covers everything larger (when the last
 * entry has a size, larger messages fall back). Sizes take k/m/g suffixes
 * (powers of 1024).
 */
#ifndef OFL_POLICY_H
#define OFL_POLICY_H

#include <stddef.h>
#include <stdint.h>

#define OFL_POLICY_MAX_RULES 8

typedef enum {
    OFL_ALG_FALLBACK,
    OFL_ALG_TREE,
    OFL_ALG_EXCHANGE,   /* allreduce/barrier: one-step all-to-all */
    OFL_ALG_SPLIT,      /* allreduce: segment ownership (reduce-scatter + allgather) */
    OFL_ALG_GET,        /* bcast: the tree, children reading the parent's buffer (single
                           copy; the tree where the NIC cannot read peers' memory) */
    OFL_ALG_BOARD       /* payload and count in the NIC's board lines (engine/board.h:
                           allreduce and barrier read every rank's, a reduce's root its
                           children's, a bcast's receivers the root's); exchange or tree
                           where it does not fit */
} ofl_alg_t;

typedef struct {
    int n;
    struct {
        ofl_alg_t alg;
        uint64_t max_bytes;   /* UINT64_MAX: no bound */
    } rule[OFL_POLICY_MAX_RULES];
} ofl_policy_t;

/* Parse `text` into *policy. Returns 0, or -1 with a reason in err. */
int ofl_policy_parse(const char *text, ofl_policy_t *policy, char *err, size_t errlen);

/* The algorithm for a message of `bytes` on `ranks` ranks. An exchange entry
 * bounds what each rank sends, bytes * (ranks - 1), since every rank sends its
 * data to every other: on more ranks it covers smaller messages. */
static inline ofl_alg_t ofl_policy_pick(const ofl_policy_t *policy, uint64_t bytes, int ranks)
{
    uint64_t sent = bytes * (uint64_t) (ranks > 1 ? ranks - 1 : 1);
    for (int i = 0; i < policy->n; ++i) {
        uint64_t key = OFL_ALG_EXCHANGE == policy->rule[i].alg ? sent : bytes;
        if (key <= policy->rule[i].max_bytes) {
            return policy->rule[i].alg;
        }
    }
    return OFL_ALG_FALLBACK;
}

const char *ofl_alg_name(ofl_alg_t alg);

#endif
