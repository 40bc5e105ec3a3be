/*
 * coll/offload — the descriptor program.
 *
 * A compiled collective is data: a peer table and, per queue, an ordered list of
 * descriptors that is executed once per segment of the message. Each descriptor
 * names its inputs and outputs as references to named buffers (the caller's send
 * and receive buffers, or the mailbox of a tree edge), lists its trigger
 * conditions explicitly as (counter, relative threshold) pairs, and lists the CP
 * counters its completion bumps at its peers. Nothing here holds an address or a
 * call's sizes: thresholds are relative and patched per call (see engine.h), so
 * one program serves every call of the same shape on a communicator.
 *
 * Counters (per rank, per peer, each written by exactly one writer, the peer):
 *   DATA(p)   — items p has put into my mailbox from p (p's CP flag on a put)
 *   CREDIT(p) — items of mine p has consumed from p's mailbox from me
 * A put of item i to p waits for CREDIT(p) >= i + 1 - slots (mailbox slot free);
 * a read of item i from p waits for DATA(p) >= i + 1.
 */
#ifndef OFL_PROGRAM_H
#define OFL_PROGRAM_H

#include <stdint.h>
#include <stdio.h>

#define OFL_PROG_MAX_PEERS  136   /* parent + children of two trees */
#define OFL_PROG_MAX_QUEUES 2

typedef enum {
    OFL_BUF_SEND,   /* the caller's send buffer (== RECV for MPI_IN_PLACE) */
    OFL_BUF_RECV,   /* the caller's receive buffer (the bcast buffer) */
    OFL_BUF_PEER    /* a mailbox slot of the edge with peer: my inbox for an input,
                       the peer's inbox from me for an output */
} ofl_buf_t;

typedef enum {
    OFL_CNT_DATA,
    OFL_CNT_CREDIT
} ofl_cnt_t;

typedef struct {
    uint8_t buf;    /* ofl_buf_t */
    uint8_t peer;   /* index into the peer table when buf == OFL_BUF_PEER */
} ofl_ref_t;

/* Fires when my counter (cnt, peer) >= base(cnt, peer) + seg + rel, where base is
 * the number of items exchanged with that peer before this call (DATA: items read
 * from it; CREDIT: items put to it). */
typedef struct {
    uint8_t cnt;    /* ofl_cnt_t */
    uint8_t peer;
    int16_t rel;
} ofl_trig_t;

/* After the descriptor's data moved: bump counter cnt *at* peer (by one). */
typedef struct {
    uint8_t cnt;
    uint8_t peer;
} ofl_cp_t;

/* out[0] = in[0] op in[1] op ... op in[n_in-1], combined left to right;
 * out[1..n_out-1] receive copies of out[0]. n_in == 1 is a copy. */
typedef struct {
    uint16_t first_ref;   /* n_in inputs then n_out outputs in prog->refs */
    uint8_t n_in;
    uint8_t n_out;
    uint16_t first_trig;
    uint8_t n_trig;
    uint8_t n_cp;
    uint16_t first_cp;
} ofl_desc_t;

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
    int slots;                          /* mailbox slots per edge */
    int npeers;
    int peers[OFL_PROG_MAX_PEERS];      /* comm ranks */
    uint8_t uses_in[OFL_PROG_MAX_PEERS];  /* items read from peer per segment */
    uint8_t uses_out[OFL_PROG_MAX_PEERS]; /* items put to peer per segment */
    int nqueues;
    int qlen[OFL_PROG_MAX_QUEUES];      /* descriptors per segment in each queue */
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
