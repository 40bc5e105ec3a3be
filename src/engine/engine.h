/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the descriptor engine.
 *
 * Executes one posted call of a program (program.h) on a NIC backend (nic.h): a
 * descriptor fires exactly once, when all its trigger counters reach their
 * thresholds, in order within its queue (segment by segment) and never for a
 * segment an earlier queue has not finished; it combines its inputs in the ALU,
 * writes its outputs and raises its CP counters. Nothing is allocated here: an
 * instance lives in the caller's memory.
 */
#ifndef OFL_ENGINE_H
#define OFL_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "alu/alu.h"
#include "nic/nic.h"
#include "sched/program.h"

/* Per communicator and rank: how many items went over each stream so far.
 * Thresholds of a new call start where the previous call's ended (counters never
 * reset). */
typedef struct {
    int size;
    uint64_t *in;    /* [size * OFL_CHANNELS] items read from each peer's stream */
    uint64_t *out;   /* [size * OFL_CHANNELS] items put to each peer's stream */
} ofl_edges_t;

int ofl_edges_init(ofl_edges_t *edges, int size);
void ofl_edges_fini(ofl_edges_t *edges);

typedef struct {
    const ofl_program_t *prog;
    ofl_nic_t *nic;
    const void *send;
    void *recv;
    ofl_alu_fn fn;          /* NULL: data is only moved (bcast, barrier) */
    size_t elem;            /* bytes per element */
    size_t count;           /* elements */
    size_t seg_elems;       /* elements per segment */
    uint32_t nseg;
    uint32_t rounds;        /* ceil(nseg / period) */
    uint32_t cursor[OFL_PROG_MAX_QUEUES];   /* descriptor executions done */
    int error;              /* 0, -errno: a failed read of a peer's memory, -EPROTO: a
                               peer's value failed validation (nic.h), or
                               OFL_EMISMATCH: bad_peer's call differs from ours */
    int bad_peer;
    uint64_t sig;           /* the call's signature (sig.h) and number, as posted */
    uint64_t callno;
    uint64_t word;          /* ofl_sig_word of the two; 0: not checked */
    int ring;               /* ring the peers' doorbells after bumps (call.ring) */
    uint64_t base_in[OFL_PROG_MAX_PEERS][OFL_CHANNELS];
    uint64_t base_out[OFL_PROG_MAX_PEERS][OFL_CHANNELS];
} ofl_inst_t;

typedef struct {
    const void *send;       /* == recv for in-place */
    void *recv;
    ofl_alu_fn fn;
    size_t elem;
    size_t count;
    size_t seg_bytes;       /* segment size for this call; 0 or > slot: the slot size
                               (by-reference programs: any size; 0 = the message) */
    int ring;               /* wake peers' parked executors on arrival (nic ring op);
                               every rank of one call must agree only on the result,
                               not on this */
    uint64_t sig;           /* what every rank must agree on (sig.h), stamped into the
                               call's first item of every stream and checked there */
    uint64_t callno;        /* the call's number on the communicator, 1, 2, ...; 0:
                               no signature check */
} ofl_call_t;


/* Prepare inst to run prog for this call and advance the edge sequences past it.
 * A call of zero bytes still runs one (empty) segment: that is a barrier. */
void ofl_engine_post(ofl_inst_t *inst, const ofl_program_t *prog, ofl_nic_t *nic,
                     ofl_edges_t *edges, const ofl_call_t *call);

/* Fire every descriptor whose triggers hold. Returns 1 once the call is complete,
 * 0 otherwise, -1 when it failed (inst->error: a by-reference read failed, or a
 * counter or reference a peer wrote is corrupt; the call cannot complete). Never
 * blocks. Within a queue descriptors fire in order; a queue never works on a
 * segment an earlier queue has not finished (in-place, a later queue may
 * overwrite the buffer an earlier one still has to send). */
int ofl_engine_progress(ofl_inst_t *inst);

/* The first condition the call is waiting for: peer (comm rank) and counter
 * (*cnt = ofl_cnt_t * OFL_CHANNELS + channel). Returns 0 if the call is
 * complete. */
int ofl_engine_blocker(const ofl_inst_t *inst, int *peer, int *cnt, uint64_t *have,
                       int64_t *need);

typedef enum {
    OFL_WAIT_OK = 0,
    OFL_WAIT_PEER_DEAD,
    OFL_WAIT_TIMEOUT,
    OFL_WAIT_FAILED,        /* inst->error says why */
    OFL_WAIT_MISMATCH       /* the ranks made different calls (*peer: one that differs) */
} ofl_wait_status_t;

typedef struct {
    void (*progress)(void *ctx);  /* the host runtime's progress, now and then */
    void *ctx;
    unsigned spin_before_yield;   /* polls before each poll also yields the CPU */
    double timeout_s;             /* watchdog; 0 waits for ever (a late peer is legal) */
    double liveness_period_s;     /* how often to check that awaited peers still live */
} ofl_wait_opts_t;

/* One health check of a call that is waiting, as ofl_engine_wait makes every
 * liveness period: the communicator poisoned by another rank, the awaited peer's
 * process gone (then this rank poisons it), or the watchdog (`timeout_s` > 0)
 * after `waited_s` seconds. OFL_WAIT_OK while the wait may go on (or the call is
 * complete), OFL_WAIT_FAILED if the last look that a dead peer gets (by
 * progress) found the call failed, or the poison mark is corrupt (inst->error
 * -EPROTO). Whoever calls it must be executing inst. */
ofl_wait_status_t ofl_engine_check(ofl_inst_t *inst, double waited_s, double timeout_s,
                                   int *peer);

/* Has a rank of the communicator found that the ranks' calls differ (the NIC's
 * mismatch report), or does a peer's record of call `callno` (0: do not look)
 * differ from `sig`? Then 1 (reporting it on the NIC if this rank found it),
 * *peer a rank whose call differs from this rank's, or from the finder's. */
int ofl_sig_check(ofl_nic_t *nic, uint64_t sig, uint64_t callno, int *peer);

/* A blocking call: post prog for `call`, and if one look does not finish it,
 * wait (ofl_engine_wait). */
ofl_wait_status_t ofl_engine_run(ofl_inst_t *inst, const ofl_program_t *prog, ofl_nic_t *nic,
                                 ofl_edges_t *edges, const ofl_call_t *call,
                                 const ofl_wait_opts_t *opts, int *peer);

/* Drive inst to completion. On PEER_DEAD/TIMEOUT, *peer is the peer waited for;
 * on MISMATCH a peer whose call differs. */
ofl_wait_status_t ofl_engine_wait(ofl_inst_t *inst, const ofl_wait_opts_t *opts, int *peer);

/* The waits' clock (monotonic seconds) and the pause between two polls of a
 * spin; every wait of the component uses these two. */
double ofl_now_s(void);

static inline void ofl_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Polls between two calls of the host's progress in a wait (a power of 2): the host's
 * progress costs a few hundred ns, a poll a few. */
#define OFL_WAIT_PROGRESS_EVERY 64

/* The wait itself, for anything that polls: poll(ctx) > 0 done, 0 not yet, < 0
 * failed; between polls the host's progress now and then, yielding after
 * opts->spin_before_yield polls, and every liveness period check(ctx, waited,
 * timeout, peer), whose verdict other than OFL_WAIT_OK ends the wait. */
typedef int (*ofl_poll_fn)(void *ctx);
typedef ofl_wait_status_t (*ofl_check_fn)(void *ctx, double waited_s, double timeout_s,
                                          int *peer);
ofl_wait_status_t ofl_wait_loop(ofl_poll_fn poll, ofl_check_fn check, void *ctx,
                                const ofl_wait_opts_t *opts, int *peer);

#endif
