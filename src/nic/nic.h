/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — what the engine needs from a NIC backend.
 *
 * A backend owns, for one rank of one communicator, the CP counters and the
 * mailboxes of every tree edge. The engine (engine.h) is generic over this table;
 * the software NIC (softnic.h) implements it over shared memory.
 */
#ifndef OFL_NIC_H
#define OFL_NIC_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Every ordered pair of ranks has OFL_CHANNELS independent streams, and each
 * stream two counters: DATA (items put into the receiver's mailbox) at the
 * receiver, CREDIT (items the receiver consumed) at the sender. Programs and
 * backends number them alike. */
#define OFL_CHANNELS 2

typedef enum {
    OFL_CNT_DATA,
    OFL_CNT_CREDIT
} ofl_cnt_t;

/* Peers one rank's program may exchange with: the most streams a backend
 * serves for one call (a parent and the children of two trees). */
#define OFL_NIC_MAX_PEERS 136

typedef struct ofl_nic ofl_nic_t;

typedef struct {
    /* Has my counter `cnt` (ofl_cnt_t) of stream (peer, chan) reached `threshold`? This is
     * the trigger test; acquire: the data behind the count is visible once true.
     * A backend may realise a counter any way that keeps this answer (the
     * software NIC stamps DATA into the mailbox slot's own cache line).
     * 1 yes, 0 not yet, -EPROTO when the counter holds what no correct peer can
     * have written (see "Validation" below): the stream is corrupt. */
    int (*reached)(ofl_nic_t *nic, int cnt, int peer, int chan, uint64_t threshold);
    /* The current value of that counter (diagnostics, blocker reports). */
    uint64_t (*counter)(ofl_nic_t *nic, int cnt, int peer, int chan);
    /* The CP flag: raise counter `cnt` at `peer` (the one I feed) to item + 1,
     * after every store of the descriptor's data (release). Items on an edge are
     * raised in order, so this is the same as counting by one. `len`: for DATA,
     * the bytes the descriptor stored in the item's outbox slot — a backend whose
     * outbox is local staging (a network) moves them now; 0 for CREDIT. */
    void (*bump)(ofl_nic_t *nic, int cnt, int peer, int chan, uint64_t item, uint64_t len);
    /* My mailbox slot holding item `item` of stream (peer -> me, chan). */
    void *(*inbox)(ofl_nic_t *nic, int peer, int chan, uint64_t item);
    /* `peer`'s mailbox slot for item `item` of stream (me -> peer, chan). */
    void *(*outbox)(ofl_nic_t *nic, int peer, int chan, uint64_t item);
    /* By-reference items (an RDMA read): publish in peer's mailbox slot of the
     * item where `len` bytes of mine lie; and, at the receiver, read the bytes
     * an item of stream (peer -> me, chan) refers to, from `offset` on, into dst.
     * get returns 0 or -errno. NULL when the backend cannot read a peer's memory. */
    void (*put_ref)(ofl_nic_t *nic, int peer, int chan, uint64_t item, const void *src,
                    uint64_t len);
    int (*get)(ofl_nic_t *nic, int peer, int chan, uint64_t item, uint64_t offset, void *dst,
               uint64_t len);
    /* 0 when peer's process is known to be gone, 1 otherwise. */
    int (*peer_alive)(ofl_nic_t *nic, int peer);
    /* A rank that finds a dead peer marks the whole communicator so that ranks
     * waiting on it, not on the dead peer directly, give up too. poisoned()
     * returns the dead rank, -1, or OFL_NIC_CORRUPT when the mark itself names
     * no rank of the communicator. */
    void (*poison)(ofl_nic_t *nic, int dead);
    int (*poisoned)(ofl_nic_t *nic);
    /* Arrival notification: after bumps to `peer`, wake the executor of peer if
     * it parked asking to be woken (a hardware NIC raises an event; the
     * software NIC a futex). Costs a system call only then. NULL: no such thing,
     * executors poll. */
    void (*ring)(ofl_nic_t *nic, int peer);
    /* The board (optional, NULL when absent; see board.h): per rank and board
     * slot (a call's number modulo OFL_BOARD_DEPTH), a few cache lines that only
     * the rank writes and every peer reads, each carrying OFL_BOARD_LINE_BYTES of
     * payload and a word made of the sequence number of the call that wrote it
     * and the call's folded signature (`tag`, OFL_BOARD_TAG_BITS bits: a fold of
     * its signature, sig.h) — a small payload, its counter and what the call was
     * in one line, no credit: the calls' own order tells when a
     * line may be reused. board_post publishes my `len` bytes for call `seq`
     * (release); board_read looks at peer's lines of call `seq`: 1 once every line
     * carries seq and `tag` (acquire; *data the payload, contiguous, copied into
     * `tmp` when it spans lines); 0 while some line still carries an older call;
     * OFL_EMISMATCH when the peer's first line (written first) carries seq with
     * another tag: it made a different call; -EPROTO when a line carries a later
     * call than `seq` (no correct peer can be ahead: it rewrites a line only after
     * every reader finished the call that wrote it). */
    void (*board_post)(ofl_nic_t *nic, uint64_t seq, uint64_t tag, const void *data,
                       uint64_t len);
    int (*board_read)(ofl_nic_t *nic, int peer, uint64_t seq, uint64_t tag, uint64_t len,
                      void *tmp, const void **data);
    /* Has `peer` posted board call `seq` or a later one of its slot (the number on
     * its first line of seq's slot, into *at, with that call's tag into *tag)?
     * 1 yes, 0 not yet, -EPROTO when the line is
     * more than OFL_BOARD_AHEAD calls past seq (no correct peer runs that far ahead).
     * What a rooted call (board.h) checks before it rewrites a line its readers
     * may still be reading; optional with the board. */
    int (*board_seen)(ofl_nic_t *nic, int peer, uint64_t seq, uint64_t *at, uint64_t *tag);
    /* Call signatures (optional, NULL when absent; sig.h). stamp writes `word`
     * beside the DATA count of the item `item` of stream (me -> peer, chan),
     * before the bump that publishes it; stamped reads the word of my item `item`
     * of stream (peer -> me, chan), valid once that item's DATA count has been
     * seen. */
    void (*stamp)(ofl_nic_t *nic, int peer, int chan, uint64_t item, uint64_t word);
    uint64_t (*stamped)(ofl_nic_t *nic, int peer, int chan, uint64_t item);
    /* A rank's call record: every collective call on the communicator, offloaded
     * or not, records (call number, signature) in a small ring of lines only
     * that rank writes, before it waits for anybody. record writes mine for call
     * `callno` (release); recorded looks where peer records call `callno` and
     * returns the number of the call recorded there: `callno` (its signature in
     * *sig), a smaller one (peer has not reached the call yet; 0 also while the
     * record is being rewritten), or a larger one (peer is that far ahead). */
    void (*record)(ofl_nic_t *nic, uint64_t callno, uint64_t sig);
    uint64_t (*recorded)(ofl_nic_t *nic, int peer, uint64_t callno, uint64_t *sig);
    /* A mismatch found by any rank, kept where every rank looks when a wait goes
     * on too long (as poison): the two ranks whose calls differed and both full
     * signatures. The first report stands. mismatched returns 1 and fills the
     * outputs once one is set. */
    void (*mismatch)(ofl_nic_t *nic, int a, uint64_t sig_a, int b, uint64_t sig_b);
    int (*mismatched)(ofl_nic_t *nic, int *a, uint64_t *sig_a, int *b, uint64_t *sig_b);
    /* This rank's doorbell (see ring): a word that peers increment and wake
     * after delivering data while *armed is non-zero. An executor about to sleep
     * stores 1 in *armed, then reads *word, checks for work once more, and
     * futex-waits on word with the value read; it stores 0 in *armed when it
     * wakes. NULL with ring. */
    void (*bell)(ofl_nic_t *nic, uint32_t **word, uint32_t **armed);
    /* Give back all the backend holds for this rank, the handle too where the
     * backend allocated it. NULL: the handle's owner releases it its own way. */
    void (*close)(ofl_nic_t *nic);
} ofl_nic_ops_t;

/* Validation. Whatever a backend reads from memory that another process writes
 * (a shared segment, a network region) may be corrupt; nothing read there is
 * used as an index, a length or an address before it is checked, and a value
 * outside what a correct peer can write is reported, never acted on:
 *   DATA      at most `slots` items beyond what this rank has handed back as
 *             CREDIT, and naming an item of the slot it was read from;
 *   CREDIT    never below a value seen before, never beyond the items put;
 *   poison    -1 (healthy) or a rank of the communicator;
 *   reference (get) covers the bytes the reader asks for;
 *   board     a line's call number never ahead of the call being read.
 * A corrupt value makes the call fail (-EPROTO), as a failed read does. */
#define OFL_NIC_CORRUPT (-2)

/* What a reader of a peer's board line or stamped item returns, and a call's
 * error, when the peer's call differs from ours (another signature, sig.h). */
#define OFL_EMISMATCH (-100000)

/* Payload bytes per board line (a 64-byte line less its sequence number), and
 * the most lines a board payload may span. */
#define OFL_BOARD_LINE_BYTES 56
#define OFL_BOARD_MAX_LINES 8
/* Board slots per rank: a call's lines are rewritten by the call this many later,
 * so a rank whose part of rooted calls only sends (or only receives) may run that
 * many calls ahead of the ranks it feeds before it has to look at them. */
#define OFL_BOARD_DEPTH 16
/* How far past a call a peer's board line may be when a rooted call looks at it:
 * ranks that only send or only receive in rooted calls wait for nobody but the
 * calls' roots, so a peer may be several calls ahead, never this many. */
#define OFL_BOARD_AHEAD (1u << 16)
/* Bits of a board line's sequence word that carry the call's tag (the rest
 * is the call's board number). */
#define OFL_BOARD_TAG_BITS 24

/* Call records per rank (four lines): a peer that runs further ahead than this
 * cannot be compared any more. */
#define OFL_NIC_RECORDS 16

/* A call record: the call number (0 while being rewritten) and the signature. */
typedef struct {
    _Atomic uint64_t callno;
    _Atomic uint64_t sig;
} ofl_nic_record_t;

struct ofl_nic {
    const ofl_nic_ops_t *ops;
    int rank;
    int size;
    int slots;              /* mailbox slots per stream */
    uint64_t slot_bytes;    /* bytes per mailbox slot: the largest segment */
    uint64_t board_bytes;   /* the largest board payload; 0: no board */
    /* This rank's OFL_NIC_RECORDS call records where the backend keeps them in
     * memory this process can store to (every call writes one, so it is not
     * worth an indirect call); NULL: through ops->record. */
    ofl_nic_record_t *own_records;
};

/* Write a record into a rank's own ring (own_records). */
static inline void ofl_nic_record_put(ofl_nic_record_t *ring, uint64_t callno, uint64_t sig)
{
    ofl_nic_record_t *r = ring + (callno & (OFL_NIC_RECORDS - 1));
    /* A reader that sees the same number before and after reading the
     * signature read this call's (a sequence lock with one writer). */
    atomic_store_explicit(&r->callno, 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&r->sig, sig, memory_order_relaxed);
    atomic_store_explicit(&r->callno, callno, memory_order_release);
}

/* The record op, inline where the backend allows it. */
static inline void ofl_nic_record(ofl_nic_t *nic, uint64_t callno, uint64_t sig)
{
    if (NULL == nic->own_records) {
        nic->ops->record(nic, callno, sig);
    } else {
        ofl_nic_record_put(nic->own_records, callno, sig);
    }
}

/* This rank cannot go on with the communicator: mark it failed, naming itself,
 * so that every peer waiting on it gives up at its next liveness check. */
static inline void ofl_nic_poison_self(ofl_nic_t *nic)
{
    if (NULL != nic) {
        nic->ops->poison(nic, nic->rank);
    }
}

#endif
