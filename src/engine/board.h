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
    const void *send;
    void *recv;
    size_t count;
    size_t elem;
    ofl_alu_fn fn;
    int posted;
    int missing;              /* lowest rank whose payload is not in yet, or size */
    int error;                /* 0, or -EPROTO: a peer's line is corrupt (nic.h) */
    const void *in[OFL_BOARD_MAX_RANKS];
    _Alignas(64) unsigned char tmp[OFL_BOARD_MAX_RANKS][OFL_BOARD_MAX_LINES
                                                        * OFL_BOARD_LINE_BYTES];
} ofl_board_call_t;

/* Prepare call number `seq`; nothing is posted yet. */
void ofl_board_prepare(ofl_board_call_t *c, ofl_nic_t *nic, uint64_t seq, const void *send,
                       void *recv, size_t count, size_t elem, ofl_alu_fn fn);

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
 * line is corrupt (c->error). Never blocks. */
int ofl_board_progress(ofl_board_call_t *c);

/* The health check of a waiting board call (as ofl_engine_check): OFL_WAIT_OK
 * while the wait may go on; PEER_DEAD (the communicator poisoned, or the awaited
 * rank's process gone: then this rank poisons it) or TIMEOUT after `waited_s`
 * > `timeout_s` > 0, with *peer the rank waited for; FAILED (c->error) when the
 * poison mark or a peer's line is corrupt. */
ofl_wait_status_t ofl_board_check(ofl_board_call_t *c, double waited_s, double timeout_s,
                                  int *peer);

/* Prepare, post and wait (ofl_wait_loop): a blocking call. OFL_WAIT_FAILED
 * means a corrupt value (-EPROTO): nothing else makes a board call fail. */
ofl_wait_status_t ofl_board_allreduce(ofl_nic_t *nic, uint64_t seq, const void *send,
                                      void *recv, size_t count, size_t elem, ofl_alu_fn fn,
                                      const ofl_wait_opts_t *opts, int *peer);

#endif
