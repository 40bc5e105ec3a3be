/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the execution queue of a communicator's calls.
 *
 * Nonblocking and persistent calls, and blocking ones while any of those is
 * outstanding, run as queued calls. Each communicator's queue keeps its posted
 * calls in post order, and one thread at a time executes them, holding the
 * queue's executor lock (the agent item's try-lock): the progress agent (one
 * thread per process, started at the first nonblocking post, asleep while
 * nothing is outstanding), or an application thread inside the host runtime's
 * progress or a blocking call queued behind nonblocking ones. Only the oldest
 * unfinished call of a queue runs: calls share the edges, and a later one
 * consuming items before an earlier one would hand back credits for slots the
 * earlier one has not read yet. All ranks post in the same order, so this never
 * deadlocks. Posting a call advances the communicator's edge sequences as a
 * blocking call would, so all kinds interleave in whatever order the
 * application calls them.
 *
 * Nothing here knows about requests: the executor marks a call done and pushes it
 * onto a lock-free stack (or, in an application thread, a list of its own); the
 * host collects finished calls through ofl_queue_progress in an application
 * thread, where its requests may be completed.
 */
#ifndef OFL_QUEUE_H
#define OFL_QUEUE_H

#include "engine/agent.h"
#include "engine/board.h"
#include "engine/engine.h"

/* Idle rounds (or polls of a blocking call's wait) between two looks at the oldest
 * call's peers and the host's progress (a power of 2). */
#define OFL_IDLE_CHECK_EVERY 64

/* One call on a queue: a program instance or a board call, and what the
 * executor reports when it ends. Requests embed one; each queue has one of its
 * own for a blocking call. */
typedef struct ofl_qcall {
    ofl_inst_t inst;
    /* A board call (engine/board.h) instead of a program instance: small calls
     * whose policy says board. Posted only when it heads the run list, i.e. once
     * every earlier call is done, as the board requires. 0: a program; else 1 +
     * its ofl_board_kind_t, and its root. */
    int board;
    int board_root;
    ofl_board_call_t bc;
    struct ofl_qcall *next;   /* incoming stack, run list, done lists */
    int blocking;             /* a blocking call: its caller waits for `done` */
    int done;                 /* atomic: the executor's last word */
    ofl_wait_status_t status; /* with peer..error, written before done */
    int error;
    int peer;
    int cnt;
    uint64_t have;
    int64_t need;
} ofl_qcall_t;

typedef struct ofl_queue ofl_queue_t;

/* A fault stopped the queue's NIC for good (executor's thread): the owner stops
 * offloading on the communicator (OFL_WAIT_MISMATCH: it is broken). */
typedef void (*ofl_queue_stopped_fn)(ofl_queue_t *q, ofl_wait_status_t st);

/* A communicator's queue. Touched with __atomic builtins where noted: it is
 * shared with the agent's thread, and its acquire/release pairs say exactly which
 * stores a load must see. */
struct ofl_queue {
    ofl_agent_item_t item;    /* executor lock; on the agent's list once linked */
    int linked;
    int nactive;              /* atomic: posted and not finished */
    ofl_qcall_t *incoming;    /* atomic LIFO of posts, newest first */
    ofl_qcall_t *run_head;    /* executor's: active, in post order */
    ofl_qcall_t *run_tail;
    ofl_qcall_t *blocking_call;   /* a blocking call's, once activated */
    /* what the calls run on (set at activation) */
    ofl_nic_t *nic;
    ofl_edges_t *edges;
    ofl_board_state_t *board_state;
    ofl_queue_stopped_fn stopped;
    int failed;               /* executor's: a fault stopped this NIC for good */
    int fail_status;          /* ofl_wait_status_t, and what was awaited: */
    int fail_error;           /* -errno of a failed read of a peer's memory, or
                                 -EPROTO: a peer's value failed validation */
    int fail_peer;
    int fail_cnt;
    uint64_t fail_have;
    int64_t fail_need;
    unsigned idle;            /* executor's: rounds without progress */
    double head_since;        /* executor's: when the head instance became head */
    double next_check;        /* executor's: next liveness check */
};

/* Process-wide settings, fixed at open. */
typedef struct {
    void (*host_progress)(void);  /* the host's progress, now and then in a blocking wait */
    int (*threads)(void);         /* may several application threads call in? */
    unsigned spin;                /* unproductive polls before yielding (0: yield at once) */
    unsigned start_polls;         /* polls a small call makes in its posting call */
    double liveness_period_s;     /* how often a stalled call looks at its peers */
    double watchdog_s;            /* 0: a late peer is waited for for ever */
} ofl_queue_opts_t;

/* Process-wide: configure (once, from the first nonblocking or persistent call);
 * the agent, which the host may then start (ofl_agent_start); stop it, close. */
void ofl_queue_open(const ofl_queue_opts_t *opts);
ofl_agent_t *ofl_queue_agent(void);
void ofl_queue_stop(void);
void ofl_queue_close(void);

/* Per communicator: set up at construction, torn down by the destructor;
 * activate at the first nonblocking or persistent call (puts the queue on the
 * agent's list, takes the blocking call's object, so a blocking call never
 * allocates). Activate returns 0 or -ENOMEM. */
void ofl_queue_init(ofl_queue_t *q, ofl_queue_stopped_fn stopped);
void ofl_queue_fini(ofl_queue_t *q);
int ofl_queue_activate(ofl_queue_t *q, ofl_nic_t *nic, ofl_edges_t *edges,
                       ofl_board_state_t *board_state);

/* Calls posted and not finished (the blocking fast path's test). */
static inline int ofl_queue_active(const ofl_queue_t *q)
{
    return __atomic_load_n(&q->nactive, __ATOMIC_ACQUIRE);
}

/* Post a nonblocking call (program prog, or a board call when qc->board). 1: it
 * completed at once, in this thread (the caller completes it, nobody can wait on
 * it yet); 0: queued, it comes back through ofl_queue_progress. */
int ofl_queue_post(ofl_queue_t *q, ofl_qcall_t *qc, const ofl_program_t *prog,
                   const ofl_call_t *call);

/* A persistent board call: prepare it once; at each start, post it again with
 * call's signature and number. The same results as ofl_queue_post. */
void ofl_queue_board_prepare(ofl_queue_t *q, ofl_qcall_t *qc, const ofl_call_t *call);
int ofl_queue_board_repost(ofl_queue_t *q, ofl_qcall_t *qc, const ofl_call_t *call);

/* A blocking call on a queue with calls outstanding: queue it behind them and
 * execute until it is done (`board`: a board call as in ofl_qcall_t, prog
 * unused). Returns the wait status; on a failure *peer and the blocker (*cnt,
 * *have, *need) describe what it waited for. */
ofl_wait_status_t ofl_queue_blocking(ofl_queue_t *q, const ofl_program_t *prog,
                                     const ofl_call_t *call, int board, int board_root,
                                     int *peer, int *cnt, uint64_t *have, int64_t *need,
                                     int *error);

/* An application thread inside the host's progress: execute a round unless the
 * agent is at it, and hand back in *done the nonblocking calls finished since, in
 * completion order (linked by next). Returns the number of calls that moved or
 * finished. */
int ofl_queue_progress(ofl_qcall_t **done);

/* A call finished elsewhere (a fallback's request, in whatever thread): hand it
 * back through ofl_queue_progress like one the executor finished. */
void ofl_queue_push_done(ofl_qcall_t *qc);

/* A call that cannot run because the queue stopped: its status and blocker are
 * the fault's (a dead peer when no fault was recorded). */
void ofl_queue_fail_call(const ofl_queue_t *q, ofl_qcall_t *qc);

#endif
