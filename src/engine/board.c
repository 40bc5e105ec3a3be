/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — small collectives on the board (see board.h).
 */
#include "engine/board.h"

#include <errno.h>
#include <string.h>

void ofl_board_prepare(ofl_board_call_t *c, ofl_nic_t *nic, uint64_t seq, const void *send,
                       void *recv, size_t count, size_t elem, ofl_alu_fn fn)
{
    c->nic = nic;
    c->seq = seq;
    c->send = send;
    c->recv = recv;
    c->count = count;
    c->elem = elem;
    c->fn = fn;
    c->kind = OFL_BOARD_ALL;
    c->root = 0;
    c->before[0].kind = -1;
    c->before[1].kind = -1;
    c->done = NULL;
    c->posted = 0;
    c->got = 0;
    c->flow = 0;
    c->missing = 0;
    c->error = 0;
    c->sig = 0;
    c->tag = 0;
    c->callno = 0;
}

void ofl_board_number(ofl_board_state_t *st, ofl_board_call_t *c)
{
    uint64_t seq = ++st->seq;
    /* call seq - D had this call's slot */
    ofl_board_past_t *prev = &st->past[(seq - 1) % OFL_BOARD_DEPTH];
    ofl_board_past_t *reused = &st->past[seq % OFL_BOARD_DEPTH];
    c->seq = seq;
    c->before[0] = *prev;
    c->before[1] = *reused;
    if (seq < 2) {
        c->before[0].kind = -1;
    }
    if (seq <= OFL_BOARD_DEPTH) {
        c->before[1].kind = -1;
    }
    c->done = st->done;
    *reused = (ofl_board_past_t) { .kind = c->kind, .root = c->root, .tag = c->tag,
                                   .sig = c->sig, .callno = c->callno };
}

/* Does `rank` write its line of a call of this kind only at the end (it only
 * receives)? */
static inline int acknowledges(int kind, int root, int rank)
{
    return (OFL_BOARD_REDUCE == kind && rank == root) || (OFL_BOARD_BCAST == kind && rank != root);
}

/* A peer's call differs from ours: say so on the NIC, where every rank's
 * health check looks, with both signatures (the peer's from its call record,
 * written before its lines). */
static void report_mismatch(ofl_nic_t *nic, uint64_t sig, uint64_t callno, int peer)
{
    uint64_t theirs = 0;
    if (NULL != nic->ops->recorded && 0 != callno) {
        nic->ops->recorded(nic, peer, callno, &theirs);
    }
    if (NULL != nic->ops->mismatch) {
        nic->ops->mismatch(nic, nic->rank, sig, peer, theirs);
    }
}

/* Which ranks read this rank's line of call seq - D (the one it is about to
 * rewrite), unless what this rank saw in call seq - 1 says they are done with it:
 * 1 for every other rank, 0 for none, 2 for before[1]'s root only. */
static int readers(const ofl_board_call_t *c)
{
    const ofl_board_past_t *p1 = &c->before[0], *pd = &c->before[1];
    int me = c->nic->rank;
    /* this rank read everybody's post of seq - 1: all are done with seq - 2 */
    int read_all = OFL_BOARD_ALL == p1->kind || (OFL_BOARD_REDUCE == p1->kind && me == p1->root);
    switch (pd->kind) {
    case OFL_BOARD_ALL:
        return read_all ? 0 : 1;
    case OFL_BOARD_REDUCE:
        if (me == pd->root || read_all) {
            return 0;
        }
        /* or it read that root's bcast of seq - 1 */
        return OFL_BOARD_BCAST == p1->kind && p1->root == pd->root ? 0 : 2;
    case OFL_BOARD_BCAST:
        return me == pd->root && !read_all ? 1 : 0;
    default:
        return 0;
    }
}

/* Is `q` done with call seq - D? What this rank knows of q, else q's line of
 * call t = seq - D/2: any line of t says q finished t - 1, which covers this call
 * and the next D/2 - 1. A rank that runs D calls ahead of q thus waits until q
 * is D/2 behind and then runs D/2 calls without looking: it reads q's lines
 * about once in D/2 calls, so only that store of q's misses in q's cache (a
 * poll of the line q writes next would take it from q in every call). Waiting
 * for t cannot deadlock: every call before seq is done here, so q can finish
 * them all. */
static int done_before(ofl_board_call_t *c, int q)
{
    if (NULL != c->done && c->done[q] >= c->seq - OFL_BOARD_DEPTH) {
        return 1;
    }
    uint64_t t = c->seq - OFL_BOARD_DEPTH / 2, at, tag;
    int rc = c->nic->ops->board_seen(c->nic, q, t, &at, &tag);
    if (rc <= 0) {
        if (rc < 0) {
            c->error = rc;
        }
        return rc;
    }
    if (NULL != c->done) {
        c->done[q] = at - 1;
    }
    return 1;
}

/* May this rank rewrite its lines now? 1 yes, 0 not yet (c->missing is the
 * rank waited for), -1 on a corrupt line. */
static int flow(ofl_board_call_t *c)
{
    ofl_nic_t *nic = c->nic;
    int who = readers(c);
    if (0 == who) {
        return 1;
    }
    if (2 == who) {
        int rc = done_before(c, c->before[1].root);
        c->missing = c->before[1].root;
        return rc < 0 ? -1 : rc;
    }
    for (; c->flow < nic->size; ++c->flow) {
        if (c->flow == nic->rank) {
            continue;
        }
        int rc = done_before(c, c->flow);
        if (rc <= 0) {
            c->missing = c->flow;
            return rc < 0 ? -1 : 0;
        }
    }
    return 1;
}

static int read_line(ofl_board_call_t *c, int peer)
{
    ofl_nic_t *nic = c->nic;
    int rc = nic->ops->board_read(nic, peer, c->seq, c->tag, c->count * c->elem, c->tmp[peer],
                                  &c->in[peer]);
    if (rc < 0) {
        c->error = rc;
        if (OFL_EMISMATCH == rc) {
            report_mismatch(nic, c->sig, c->callno, peer);
        }
    }
    return rc;
}

/* Collect the payloads in rank order, this rank's own from send (a copy: send
 * may be recv, which the combination overwrites before it reaches a rank >= 2;
 * and its own line, just posted, cannot be read before the store reaches a
 * peer that waits on it); 1 once all are there, -1 on a corrupt line or a peer
 * whose call differs (c->error). */
static int gather(ofl_board_call_t *c)
{
    ofl_nic_t *nic = c->nic;
    for (; c->missing < nic->size; ++c->missing) {
        if (c->missing == nic->rank) {
            size_t len = c->count * c->elem;
            if (len > 0) {
                memcpy(c->tmp[c->missing], c->send, len);
            }
            c->in[c->missing] = c->tmp[c->missing];
            continue;
        }
        int rc = read_line(c, c->missing);
        if (rc <= 0) {
            return rc < 0 ? -1 : 0;
        }
    }
    return 1;
}

/* After a rooted call, an all call's ranks look at every peer's line of that call
 * (each rank wrote one), which those that only sent in it could not: a peer that
 * made another call is reported now. A line already rewritten says nothing. */
static int check_before(ofl_board_call_t *c)
{
    ofl_nic_t *nic = c->nic;
    const ofl_board_past_t *p1 = &c->before[0];
    if (OFL_BOARD_ALL == p1->kind || p1->kind < 0 || 0 == p1->sig) {
        return 1;
    }
    for (int q = 0; q < nic->size; ++q) {
        if (q == nic->rank) {
            continue;
        }
        uint64_t at, tag;
        int rc = nic->ops->board_seen(nic, q, c->seq - 1, &at, &tag);
        if (rc < 0) {
            c->error = rc;
            c->missing = q;
            return -1;
        }
        if (at == c->seq - 1 && tag != p1->tag) {
            c->error = OFL_EMISMATCH;
            c->missing = q;
            report_mismatch(nic, p1->sig, p1->callno, q);
            return -1;
        }
    }
    return 1;
}

/* What the call waits for, combined or copied into recv: 1 done, 0 not yet. */
static int receive(ofl_board_call_t *c)
{
    ofl_nic_t *nic = c->nic;
    size_t len = c->count * c->elem;
    if (OFL_BOARD_BCAST == c->kind) {
        c->missing = c->root;
        int rc = read_line(c, c->root);
        if (rc <= 0) {
            return rc < 0 ? -1 : 0;
        }
        if (len > 0) {
            memcpy(c->recv, c->in[c->root], len);
        }
        c->missing = nic->size;
        return 1;
    }
    int got = gather(c);
    if (got <= 0) {
        return got;
    }
    if (OFL_BOARD_ALL == c->kind && check_before(c) < 0) {
        return -1;
    }
    if (0 == c->count) {
        return 1;
    }
    /* Rank order (in[] never points into recv). */
    if (1 == nic->size) {
        memmove(c->recv, c->in[0], len);
        return 1;
    }
    c->fn(c->recv, c->in[0], c->in[1], c->count);
    for (int r = 2; r < nic->size; ++r) {
        c->fn(c->recv, c->recv, c->in[r], c->count);
    }
    return 1;
}

int ofl_board_progress(ofl_board_call_t *c)
{
    ofl_nic_t *nic = c->nic;
    if (c->error) {
        return -1;
    }
    int ack = acknowledges(c->kind, c->root, nic->rank);
    if (!c->posted && !ack) {
        int ok = flow(c);
        if (ok <= 0) {
            return ok;
        }
        nic->ops->board_post(nic, c->seq, c->tag, c->send, c->count * c->elem);
        c->posted = 1;
        c->missing = 0;
        if (OFL_BOARD_ALL != c->kind) {
            /* a reduce's child or a bcast's root: its part is done */
            return 1;
        }
    }
    if (!c->got) {
        int got = receive(c);
        if (got <= 0) {
            return got;
        }
        c->got = 1;
    }
    if (!c->posted) {
        int ok = flow(c);
        if (ok <= 0) {
            return ok;
        }
        nic->ops->board_post(nic, c->seq, c->tag, NULL, 0);
        c->posted = 1;
    }
    return 1;
}

ofl_wait_status_t ofl_board_check(ofl_board_call_t *c, double waited_s, double timeout_s,
                                  int *peer)
{
    ofl_nic_t *nic = c->nic;
    if (ofl_sig_check(nic, c->sig, c->callno, peer)) {
        return OFL_WAIT_MISMATCH;
    }
    int dead = nic->ops->poisoned(nic);
    if (dead >= 0) {
        *peer = dead;
        return OFL_WAIT_PEER_DEAD;
    }
    if (OFL_NIC_CORRUPT == dead) {
        c->error = -EPROTO;
        *peer = -1;
        return OFL_WAIT_FAILED;
    }
    if (c->error) {
        *peer = c->missing;
        return OFL_EMISMATCH == c->error ? OFL_WAIT_MISMATCH : OFL_WAIT_FAILED;
    }
    /* progress left in c->missing the rank it waits for */
    if (c->missing < 0 || c->missing >= nic->size || c->missing == nic->rank) {
        return OFL_WAIT_OK;
    }
    if (!nic->ops->peer_alive(nic, c->missing)) {
        nic->ops->poison(nic, c->missing);
        *peer = c->missing;
        return OFL_WAIT_PEER_DEAD;
    }
    if (timeout_s > 0 && waited_s > timeout_s) {
        *peer = c->missing;
        return OFL_WAIT_TIMEOUT;
    }
    return OFL_WAIT_OK;
}

static int poll_call(void *ctx)
{
    return ofl_board_progress(ctx);
}

static ofl_wait_status_t check_call(void *ctx, double waited_s, double timeout_s, int *peer)
{
    return ofl_board_check(ctx, waited_s, timeout_s, peer);
}

ofl_wait_status_t ofl_board_run(ofl_board_call_t *c, const ofl_wait_opts_t *opts, int *peer)
{
    ofl_wait_status_t st = ofl_wait_loop(poll_call, check_call, c, opts, peer);
    if (OFL_WAIT_FAILED == st && OFL_EMISMATCH == c->error) {
        *peer = c->missing;
        return OFL_WAIT_MISMATCH;
    }
    return st;
}

ofl_wait_status_t ofl_board_allreduce(ofl_nic_t *nic, uint64_t seq, const void *send,
                                      void *recv, size_t count, size_t elem, ofl_alu_fn fn,
                                      const ofl_wait_opts_t *opts, int *peer)
{
    ofl_board_call_t c;
    ofl_board_prepare(&c, nic, seq, send, recv, count, elem, fn);
    return ofl_board_run(&c, opts, peer);
}
