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

#include "sched/program.h"   /* ofl_coll_t */

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

/* The built-in table of a collective (ofl_coll_t), measured on one node; the
 * text a policy MCA value replaces. */
const char *ofl_policy_default(int coll);

/* Everything that chooses a call's algorithm on one communicator, fixed once it is
 * set up: the table in force per collective (the rules' or the MCA value's), the
 * hard size caps, the ranks, and whether some node has more ranks than cores. The
 * only inputs beyond it are the collective and the size, which MPI requires to be
 * the same on every rank: every rank chooses alike. */
typedef struct {
    const ofl_policy_t *table[OFL_COLL_COUNT];
    const size_t *max_bytes;  /* [OFL_COLL_COUNT]: above, the layer below (barrier unused) */
    int ranks;
    /* A node with more ranks than cores (agreed at set-up), and what changes there
     * (crowded_max < 0: nothing): a reduce or bcast of at most crowded_max bytes goes
     * below, a larger reduce that the table hands down runs the tree, a barrier runs
     * the tree rather than the board or the exchange. */
    int crowded;
    long crowded_max;
    /* A barrier's algorithm: its table has no size to look at, so it is chosen once,
     * by ofl_choice_settle, whenever the rest changes. */
    ofl_alg_t barrier;
} ofl_choice_t;

enum { OFL_CHOSEN = 0, OFL_CHOSEN_CAP = 1, OFL_CHOSEN_POLICY = 2 };

/* The algorithm for a call of `bytes` of collective `coll` (an ofl_coll_t), in *alg: OFL_CHOSEN, or why it goes
 * below (above its cap, or the table or the crowded rule says so; *alg is then
 * OFL_ALG_FALLBACK).
 *
 * Why the crowded rules (np 4 on 2 cores): tuned's reduces of 32-512 KiB take
 * 1.1-3.8x the tree's time when ranks share cores, where with a core each they
 * win (np 2: the tree 0.67-0.85x); small reduces and bcasts are tuned's own code
 * either way, without the NIC's spinning. On the board every rank leaves a
 * barrier when it sees the last line, whichever of them the scheduler runs next;
 * the tree's root leaves first and releases the others, so a bcast or reduce from
 * that root right after finds its peers behind it instead of waiting for it to be
 * scheduled (OSU, each call followed by a barrier, 8 B: osu_bcast 3.5-5.6 us after
 * the board, 0.6-1.3 after the tree, tuned 0.9-1.2). */
static inline int ofl_choose(const ofl_choice_t *c, ofl_coll_t coll, uint64_t bytes,
                             ofl_alg_t *alg)
{
    *alg = OFL_ALG_FALLBACK;
    if (OFL_COLL_BARRIER != coll && bytes > c->max_bytes[coll]) {
        return OFL_CHOSEN_CAP;
    }
    int crowded = c->crowded && c->crowded_max >= 0;
    if (crowded && (OFL_COLL_REDUCE == coll || OFL_COLL_BCAST == coll)
        && bytes <= (uint64_t) c->crowded_max) {
        return OFL_CHOSEN_POLICY;
    }
    *alg = ofl_policy_pick(c->table[coll], bytes, c->ranks);
    if (crowded && OFL_COLL_REDUCE == coll && OFL_ALG_FALLBACK == *alg) {
        *alg = OFL_ALG_TREE;
    } else if (crowded && OFL_COLL_BARRIER == coll
               && (OFL_ALG_BOARD == *alg || OFL_ALG_EXCHANGE == *alg)) {
        *alg = OFL_ALG_TREE;
    }
    return OFL_ALG_FALLBACK == *alg ? OFL_CHOSEN_POLICY : OFL_CHOSEN;
}

/* After filling or changing *c (at the communicator's creation, at its set-up): what
 * depends on no call, chosen once. */
static inline void ofl_choice_settle(ofl_choice_t *c)
{
    ofl_choose(c, OFL_COLL_BARRIER, 0, &c->barrier);
}

#endif
