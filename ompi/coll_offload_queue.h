/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the execution queue of a communicator's calls (internal to
 * the component; coll_offload_queue.c).
 *
 * Nonblocking and persistent calls, and blocking ones while any of those is
 * outstanding, run as queued calls. Each module keeps its posted calls in post
 * order, and one thread at a time executes them, holding the module's executor
 * lock (the agent item's try-lock): the progress agent (one thread per
 * process, started at the first nonblocking post, asleep while nothing is
 * outstanding), or an application thread inside MPI (opal_progress in
 * MPI_Wait/Test, or a blocking call queued behind nonblocking ones). Only the
 * oldest unfinished call of a module runs: calls share the edges, and a later
 * one consuming items before an earlier one would hand back credits for slots
 * the earlier one has not read yet. All ranks post in the same order, so this
 * never deadlocks. Posting a call advances the communicator's edge sequences
 * as a blocking call would, so all kinds interleave in whatever order the
 * application calls them.
 *
 * Both kinds of entry point call down into this file; it knows nothing of MPI
 * requests. The executor marks a call done and pushes it onto a lock-free
 * stack (or, in an application thread, a list of its own); the request layer
 * collects finished calls through mca_coll_offload_queue_progress in an
 * application thread, where MPI requests may be completed.
 */
#ifndef MCA_COLL_OFFLOAD_QUEUE_H
#define MCA_COLL_OFFLOAD_QUEUE_H

/* Idle rounds (or polls of a blocking call's wait) between two looks at the oldest
 * call's peers and the host's progress (a power of 2). */
#define OFL_IDLE_CHECK_EVERY 64

#include "coll_offload.h"

/* One call on a module's queue: a program instance or a board call, and what
 * the executor reports when it ends. Request objects embed one; each module
 * has one of its own for a blocking call. */
typedef struct mca_coll_offload_qcall {
    ofl_inst_t inst;
    /* A board call (engine/board.h) instead of a program instance: small
     * calls whose policy says board. Posted only when it heads the module's
     * run list, i.e. once every earlier call is done, as the board requires.
     * 0: a program; else 1 + its ofl_board_kind_t, and its root. */
    int board;
    int board_root;
    ofl_board_call_t bc;
    struct mca_coll_offload_qcall *next;   /* incoming stack, run list, done lists */
    int blocking;             /* a blocking call: its caller waits for `done` */
    int done;                 /* atomic: the executor's last word */
    ofl_wait_status_t status; /* with peer..error, written before done */
    int error;
    int peer;
    int cnt;
    uint64_t have;
    int64_t need;
} mca_coll_offload_qcall_t;

/* Process-wide: configure and start the progress agent (once, from the first
 * nonblocking or persistent call); stop it, then release what open made. */
void mca_coll_offload_queue_open(void);
void mca_coll_offload_queue_stop(void);
void mca_coll_offload_queue_close(void);

/* Per module: set up at construction, torn down by the destructor; activate at
 * the first nonblocking or persistent call (puts the module on the agent's
 * list, takes the blocking call's object, so a blocking call never allocates). */
void mca_coll_offload_queue_module_init(mca_coll_offload_module_t *m);
void mca_coll_offload_queue_module_fini(mca_coll_offload_module_t *m);
int mca_coll_offload_queue_module_activate(mca_coll_offload_module_t *m);

/* Post a nonblocking call (program prog, or a board call when qc->board). 1:
 * it completed at once, in this thread (the caller completes it, nobody can
 * wait on it yet); 0: queued, it comes back through queue_progress. */
int mca_coll_offload_queue_post(mca_coll_offload_module_t *m, mca_coll_offload_qcall_t *qc,
                                const ofl_program_t *prog, const ofl_call_t *call);

/* A persistent board call: prepare it once; at each start, post it again with
 * call's signature and number. The same results as queue_post. */
void mca_coll_offload_queue_board_prepare(mca_coll_offload_module_t *m,
                                          mca_coll_offload_qcall_t *qc, const ofl_call_t *call);
int mca_coll_offload_queue_board_repost(mca_coll_offload_module_t *m,
                                        mca_coll_offload_qcall_t *qc, const ofl_call_t *call);

/* A blocking call on a module with calls outstanding: queue it behind them and
 * execute until it is done (`board`: a board call as in
 * mca_coll_offload_qcall_t, prog unused). Returns the
 * wait status; on a failure *peer and the blocker (*cnt, *have, *need) describe
 * what it waited for. */
ofl_wait_status_t mca_coll_offload_queue_blocking(mca_coll_offload_module_t *m,
                                                  const ofl_program_t *prog,
                                                  const ofl_call_t *call, int board,
                                                  int board_root, int *peer, int *cnt,
                                                  uint64_t *have, int64_t *need, int *error);

/* An application thread inside MPI (the opal_progress callback): execute a
 * round unless the agent is at it, and hand back in *done the nonblocking calls
 * finished since, in completion order (linked by next). Returns the number of
 * calls that moved or finished. */
int mca_coll_offload_queue_progress(mca_coll_offload_qcall_t **done);

/* A call finished elsewhere (a fallback's request, in whatever thread): hand it
 * back through queue_progress like one the executor finished. */
void mca_coll_offload_queue_push_done(mca_coll_offload_qcall_t *qc);

#endif
