/*
 * coll/offload — small allreduces and barriers on the NIC's board (nic.h).
 *
 * Every rank posts its payload (up to nic->board_bytes) with the call's sequence
 * number into its own board lines and combines, in rank order, the payloads the
 * others posted under the same number. One line written and one read per peer:
 * no mailbox, no credit coming back. A line of parity p is rewritten by the
 * call two later, which its writer cannot post before every reader has
 * finished this one — provided that every rank posts board call s + 1 only
 * after it has finished board call s: then the post of s + 1 by any rank means
 * it read everybody's s, and a rank that finished s + 1 has seen all those
 * posts. Blocking calls keep that order by themselves; an executor of
 * nonblocking ones must post each board call only once the previous one of the
 * communicator is done. Every rank of a call must take the board (the same
 * decision on the same arguments) and number its calls alike.
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

/* One board call in flight: recv = the rank-ordered combination (fn) of every
 * rank's `count` elements of `elem` bytes at send (send == recv: in place);
 * count 0 is a barrier. Lives in the caller's memory. */
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
    int posted;
    int missing;              /* lowest rank whose payload is not in yet, or size; the
                                 peer whose line failed, once progress said -1 */
    int error;                /* 0, -EPROTO: a peer's line is corrupt (nic.h), or
                                 OFL_EMISMATCH: a peer's call differs (reported on
                                 the NIC) */
    const void *in[OFL_BOARD_MAX_RANKS];
    _Alignas(64) unsigned char tmp[OFL_BOARD_MAX_RANKS][OFL_BOARD_MAX_LINES
                                                        * OFL_BOARD_LINE_BYTES];
} ofl_board_call_t;

/* Prepare call number `seq`; nothing is posted yet. */
void ofl_board_prepare(ofl_board_call_t *c, ofl_nic_t *nic, uint64_t seq, const void *send,
                       void *recv, size_t count, size_t elem, ofl_alu_fn fn);

/* Its signature and its number among all the communicator's calls, checked
 * against every peer's board lines and, while the call waits, against the
 * peers' call records (see ofl_board_check). */
static inline void ofl_board_sign(ofl_board_call_t *c, uint64_t sig, uint64_t callno)
{
    c->sig = sig;
    c->tag = ofl_sig_fold(sig, OFL_SIG_BOARD_BITS);
    c->callno = callno;
}

/* The same call again as call number `seq` (a persistent request's start). */
static inline void ofl_board_rearm(ofl_board_call_t *c, uint64_t seq)
{
    c->seq = seq;
    c->posted = 0;
    c->missing = 0;
    c->error = 0;
}

/* Post (the first time) and look for the others' payloads; once all are in,
 * combine into recv and return 1; 0 while some are missing; -1 when a peer's
 * line is corrupt or carries this call's number with another signature
 * (c->error; c->missing is that peer). Never blocks. */
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
