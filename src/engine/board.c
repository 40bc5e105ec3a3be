/*
 * coll/offload — small allreduces and barriers on the board (see board.h).
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
    c->posted = 0;
    c->missing = 0;
    c->error = 0;
    c->sig = 0;
    c->tag = 0;
    c->callno = 0;
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

/* Collect the payloads in rank order; 1 once all are there, -1 on a corrupt
 * line or a peer whose call differs (c->error). */
static int gather(ofl_board_call_t *c)
{
    ofl_nic_t *nic = c->nic;
    size_t len = c->count * c->elem;
    for (; c->missing < nic->size; ++c->missing) {
        int rc = nic->ops->board_read(nic, c->missing, c->seq, c->tag, len, c->tmp[c->missing],
                                      &c->in[c->missing]);
        if (rc <= 0) {
            if (rc < 0) {
                c->error = rc;
                if (OFL_EMISMATCH == rc) {
                    report_mismatch(nic, c->sig, c->callno, c->missing);
                }
                return -1;
            }
            return 0;
        }
    }
    return 1;
}

int ofl_board_progress(ofl_board_call_t *c)
{
    ofl_nic_t *nic = c->nic;
    if (!c->posted) {
        nic->ops->board_post(nic, c->seq, c->tag, c->send, c->count * c->elem);
        c->posted = 1;
    }
    if (c->error) {
        return -1;
    }
    int got = gather(c);
    if (got <= 0) {
        return got;
    }
    if (0 == c->count) {
        return 1;
    }
    /* Rank order, the own payload from the board too (send may be recv). */
    if (1 == nic->size) {
        memmove(c->recv, c->in[0], c->count * c->elem);
        return 1;
    }
    c->fn(c->recv, c->in[0], c->in[1], c->count);
    for (int r = 2; r < nic->size; ++r) {
        c->fn(c->recv, c->recv, c->in[r], c->count);
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
    if (!c->posted) {
        return OFL_WAIT_OK;
    }
    int got = gather(c);
    if (got != 0) {
        if (got < 0) {
            *peer = c->missing;
            return OFL_EMISMATCH == c->error ? OFL_WAIT_MISMATCH : OFL_WAIT_FAILED;
        }
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
