/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — small collectives on the NIC's board (nic.h).
 *
 * Every rank has, per board slot, a few lines that only it writes, each with a
 * payload and the number and folded signature of the board call that wrote it.
 * Every rank writes its lines once in every board call, before it waits (its
 * payload) or, where its part is only to receive, at the end (an
 * acknowledgement: it has read what it needed). What a call waits for depends on
 * its kind:
 *   all      (allreduce, barrier) every rank posts its payload and combines, in
 *            rank order, everybody's;
 *   reduce   the others post their payloads and are done; the root combines
 *            them with its own and acknowledges;
 *   bcast    the root posts its payload and is done; the others copy it and
 *            acknowledge.
 * So a reduce makes only its root wait (for its children), a bcast only the
 * others (for the root): no rank waits for the last one as in an allreduce.
 *
 * Call s's lines are those of slot s % D (D = OFL_BOARD_DEPTH, nic.h), rewritten
 * by call s + D. A rank posts call t only after it has finished call t - 1, so
 * any line of call t says its writer is done with t - 1; an acknowledgement of t
 * says its writer is done with t. Before rewriting its line of call s - D, a rank
 * makes sure that every rank that read that line (everybody after an all or
 * after its bcast, the root after its reduce) is done with s - D: it looks at the
 * reader's line of call s - D/2 and keeps what that says, per peer, in the
 * communicator's board state, so it looks at a peer's lines about once in D/2
 * calls; a rank never runs more than D calls ahead of the ranks it feeds, and
 * once it is that far ahead it waits until they are D/2 behind. Blocking calls
 * keep the order
 * by themselves; an executor of nonblocking ones must post each board call only
 * once the previous one of the communicator is done. Every rank of a call must
 * take the board (the same decision on the same arguments), number its calls
 * alike (ofl_board_number) and give it the same kind and root.
 *
 * A rank whose part only sends (a reduce's non-root, a bcast's root) cannot see
 * that a peer made another call; the next all call looks at every peer's line
 * of that call and reports it then.
 */
#ifndef OFL_BOARD_H
#define OFL_BOARD_H

#include <stddef.h>
#include <stdint.h>

#include "alu/alu.h"
#include "engine/engine.h"
#include "engine/sig.h"
#include "nic/nic.h"

/* Ranks a board call may have (each rank reads every other's lines). */
#define OFL_BOARD_MAX_RANKS 16

/* Can `nic` run a board call of `bytes` on its communicator? */
static inline int ofl_board_fits(const ofl_nic_t *nic, size_t bytes)
{
    return NULL != nic->ops->board_post && bytes <= nic->board_bytes
           && nic->size <= OFL_BOARD_MAX_RANKS;
}

/* What a board call is (see above). */
typedef enum { OFL_BOARD_ALL = 0, OFL_BOARD_REDUCE = 1, OFL_BOARD_BCAST = 2 } ofl_board_kind_t;

/* What a board call was, as far as the calls after it need to know. */
typedef struct {
    int kind;                 /* ofl_board_kind_t */
    int root;
    uint64_t tag;
    uint64_t sig;
    uint64_t callno;
} ofl_board_past_t;

/* A communicator's board calls so far, the same on every rank: their count and
 * the last OFL_BOARD_DEPTH; and, this rank's own, the last call each peer is
 * known to have finished. */
typedef struct {
    uint64_t seq;
    ofl_board_past_t past[OFL_BOARD_DEPTH];  /* by slot */
    uint64_t done[OFL_BOARD_MAX_RANKS];
} ofl_board_state_t;

/* One board call in flight: recv = the rank-ordered combination (fn) of every
 * rank's `count` elements of `elem` bytes at send (send == recv: in place);
 * count 0 is a barrier. A reduce leaves it at the root only; a bcast copies the
 * root's send into every other rank's recv. Lives in the caller's memory. */
typedef struct {
    ofl_nic_t *nic;
    uint64_t seq;             /* 1, 2, ... per communicator, the same on every rank */
    uint64_t sig;             /* the call's signature (sig.h); 0: none given */
    uint64_t tag;             /* its fold posted with every line */
    uint64_t callno;          /* its number among all calls (call records); 0: none */
    const void *send;
    void *recv;
    size_t count;
    size_t elem;
    ofl_alu_fn fn;
    int kind;                 /* ofl_board_kind_t */
    int root;                 /* reduce, bcast */
    ofl_board_past_t before[2];  /* calls seq - 1 and seq - D (kind -1: none) */
    uint64_t *done;           /* the state's done (NULL: none kept) */
    int posted;
    int got;                  /* what it waits for is in (and combined or copied) */
    int flow;                 /* the next rank to look at before posting */
    int missing;              /* lowest rank whose payload is not in yet, or size; the
                                 peer whose line failed, once progress said -1; the
                                 rank waited for before posting */
    int error;                /* 0, -EPROTO: a peer's line is corrupt (nic.h), or
                                 OFL_EMISMATCH: a peer's call differs (reported on
                                 the NIC) */
    const void *in[OFL_BOARD_MAX_RANKS];
    _Alignas(64) unsigned char tmp[OFL_BOARD_MAX_RANKS][OFL_BOARD_MAX_LINES
                                                        * OFL_BOARD_LINE_BYTES];
} ofl_board_call_t;

/* Prepare an all call (number `seq`, for a call that no rooted call precedes;
 * ofl_board_number gives the number otherwise); nothing is posted yet. */
void ofl_board_prepare(ofl_board_call_t *c, ofl_nic_t *nic, uint64_t seq, const void *send,
                       void *recv, size_t count, size_t elem, ofl_alu_fn fn);

/* Make it a reduce or a bcast to or from `root`. */
static inline void ofl_board_rooted(ofl_board_call_t *c, ofl_board_kind_t kind, int root)
{
    c->kind = kind;
    c->root = root;
}

/* Number a prepared (and signed) call as the communicator's next board call. */
void ofl_board_number(ofl_board_state_t *st, ofl_board_call_t *c);

/* Its signature and its number among all the communicator's calls, checked
 * against every peer's board lines and, while the call waits, against the
 * peers' call records (see ofl_board_check). */
static inline void ofl_board_sign(ofl_board_call_t *c, uint64_t sig, uint64_t callno)
{
    c->sig = sig;
    c->tag = ofl_sig_fold(sig, OFL_SIG_BOARD_BITS);
    c->callno = callno;
}

/* The same call again as the communicator's next (a persistent request's start). */
static inline void ofl_board_rearm(ofl_board_state_t *st, ofl_board_call_t *c)
{
    c->posted = 0;
    c->got = 0;
    c->flow = 0;
    c->missing = 0;
    c->error = 0;
    ofl_board_number(st, c);
}

/* Post (once the readers of this rank's line of D calls ago are done with it)
 * and look for what the call waits for; once it is in, combine or copy it into
 * recv, acknowledge where the call does, and return 1; 0 while something is
 * missing; -1 when a peer's line is corrupt or carries this call's number with
 * another signature (c->error; c->missing is that peer). Never blocks. */
int ofl_board_progress(ofl_board_call_t *c);

/* The health check of a waiting board call (as ofl_engine_check): OFL_WAIT_OK
 * while the wait may go on; MISMATCH (a mismatch reported on the NIC, a peer's
 * record of this call differs, or its line says another call), PEER_DEAD (the
 * communicator poisoned, or the awaited rank's process gone: then this rank
 * poisons it) or TIMEOUT after `waited_s` > `timeout_s` > 0, with *peer the rank
 * waited for; FAILED (c->error) when the poison mark or a peer's line is
 * corrupt. */
ofl_wait_status_t ofl_board_check(ofl_board_call_t *c, double waited_s, double timeout_s,
                                  int *peer);

/* Post a prepared call and wait for it (ofl_wait_loop): a blocking call.
 * OFL_WAIT_FAILED means a corrupt value (-EPROTO), MISMATCH a peer whose call
 * differs (*peer). */
ofl_wait_status_t ofl_board_run(ofl_board_call_t *c, const ofl_wait_opts_t *opts, int *peer);

/* Prepare, post and wait, with no signature: a blocking call. */
ofl_wait_status_t ofl_board_allreduce(ofl_nic_t *nic, uint64_t seq, const void *send,
                                      void *recv, size_t count, size_t elem, ofl_alu_fn fn,
                                      const ofl_wait_opts_t *opts, int *peer);

#endif
