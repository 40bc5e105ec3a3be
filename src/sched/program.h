/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the descriptor program.
 *
 * A compiled collective is data: a peer table and, per queue, an ordered list of
 * descriptors executed once per round of `period` segments (descriptor d handles
 * segment round * period + d.seg_off). Each descriptor names its inputs and
 * outputs as references to named buffers (the caller's send and receive buffers,
 * or a mailbox stream of a tree edge), lists its trigger conditions explicitly as
 * (counter, relative threshold) pairs, and lists the CP counters its completion
 * raises at its peers. Nothing here holds an address or a call's sizes:
 * thresholds are relative and patched per call (see engine.h), so one program
 * serves every call of the same shape on a communicator.
 *
 * Streams: every ordered pair of ranks has two independent item streams
 * (channels), e.g. 0 for contributions going up and 1 for results coming down.
 * Within one program a stream is written by one queue of the sender and read by
 * one queue of the receiver, in item order; its items are numbered in one
 * sequence that never restarts (calls continue it).
 *
 * Counters (per rank, per peer and channel, each written by exactly one writer,
 * the peer):
 *   DATA(p,c)   — items p has put into my mailbox of stream (p -> me, c)
 *   CREDIT(p,c) — items of mine p has consumed from stream (me -> p, c)
 * A put of item i waits for CREDIT >= i + 1 - slots (mailbox slot free); a read
 * of item i waits for DATA >= i + 1.
 */
#ifndef OFL_PROGRAM_H
#define OFL_PROGRAM_H

#include <stdint.h>
#include <stdio.h>

#include "nic/nic.h"   /* streams, channels and counters are the NIC's */

#define OFL_PROG_MAX_PEERS  OFL_NIC_MAX_PEERS
#define OFL_PROG_MAX_QUEUES 3

typedef enum {
    OFL_BUF_SEND,   /* the caller's send buffer (== RECV for MPI_IN_PLACE) */
    OFL_BUF_RECV,   /* the caller's receive buffer (the bcast buffer) */
    OFL_BUF_PEER    /* a mailbox slot of a stream with peer: my inbox for an input,
                       the peer's inbox from me for an output */
} ofl_buf_t;


/* A buffer reference. For a mailbox: the stream (peer, chan) and `k`, the
 * position of this item among the stream's items of one round. With `byref`
 * the item carries no data but where the data lies in the sender's memory, and
 * the receiver's NIC reads it from there (an RDMA read); the sender then must
 * keep the data until the receiver's CREDIT says it has been read (a fence). */
typedef struct {
    uint8_t buf;    /* ofl_buf_t */
    uint8_t peer;   /* index into the peer table when buf == OFL_BUF_PEER */
    uint8_t chan;
    uint8_t k;
    uint8_t byref;
} ofl_ref_t;

/* Fires when my counter (cnt, peer, chan) >= base + round * per_round + rel,
 * where base counts the stream's items before this call (DATA: items read from
 * the peer; CREDIT: items put to it) and per_round its items per round. */
typedef struct {
    uint8_t cnt;    /* ofl_cnt_t */
    uint8_t peer;
    uint8_t chan;
    uint8_t pad;
    int16_t rel;
} ofl_trig_t;

/* After the descriptor's data moved: raise counter cnt of stream (me, chan) *at*
 * peer to item + 1, item = base + round * per_round + k. */
typedef struct {
    uint8_t cnt;
    uint8_t peer;
    uint8_t chan;
    uint8_t k;
} ofl_cp_t;

/* out[0] = in[0] op in[1] op ... op in[n_in-1], combined left to right;
 * out[1..n_out-1] receive copies of out[0]. n_in == 1 is a copy; n_in == 0 and
 * n_out == 0 waits for its triggers only (a fence). A by-reference output
 * publishes where out[0] (or in[0], when out[0] is itself by reference) lies. */
typedef struct {
    uint16_t first_ref;   /* n_in inputs then n_out outputs in prog->refs */
    uint8_t n_in;
    uint8_t n_out;
    uint16_t first_trig;
    uint8_t n_trig;
    uint8_t n_cp;
    uint16_t first_cp;
    uint16_t seg_off;     /* segment within the round */
} ofl_desc_t;

/* Items of one stream per round, and per partial round: prefix[j] counts the
 * stream's items in descriptors with seg_off < j (j = 0..period). */
typedef struct {
    uint16_t per_round;
    uint16_t *prefix;     /* [period + 1] */
} ofl_stream_use_t;

typedef enum {
    OFL_COLL_ALLREDUCE,
    OFL_COLL_REDUCE,
    OFL_COLL_BCAST,
    OFL_COLL_BARRIER,
    OFL_COLL_COUNT
} ofl_coll_t;

typedef struct {
    ofl_coll_t coll;
    int root;
    int rank;
    int size;
    int slots;                          /* mailbox slots per stream */
    int period;                         /* segments per round */
    int byref;                          /* items travel by reference: segments are
                                           not bounded by the mailbox slot size */
    int npeers;
    int peers[OFL_PROG_MAX_PEERS];      /* comm ranks */
    /* [peer * OFL_CHANNELS + chan]: items read from / put to each stream */
    ofl_stream_use_t *use_in;
    ofl_stream_use_t *use_out;
    uint16_t *prefix_pool;
    int nqueues;
    int qlen[OFL_PROG_MAX_QUEUES];      /* descriptors per round in each queue */
    int qfirst[OFL_PROG_MAX_QUEUES];    /* index of the queue's first descriptor */
    int ndesc;
    ofl_desc_t *desc;
    int nrefs;
    ofl_ref_t *refs;
    int ntrigs;
    ofl_trig_t *trigs;
    int ncps;
    ofl_cp_t *cps;
} ofl_program_t;

void ofl_program_free(ofl_program_t *prog);

/* Human-readable dump of one rank's program (debug output, tests). */
void ofl_program_dump(const ofl_program_t *prog, FILE *out);

const char *ofl_coll_name(ofl_coll_t coll);

#endif
