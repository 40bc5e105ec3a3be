/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the progress agent: one thread per process that executes
 * outstanding work while the application computes.
 *
 * Work is organised in items (in the component: one per communicator). An item
 * has a progress callback that executes whatever of its work can run now and
 * never blocks. At most one thread at a time runs an item's callback: the item
 * carries an executor lock, taken with a try-lock by whoever wants to progress
 * it — the agent, or an application thread inside an MPI call — so an item's
 * state needs no other synchronisation against concurrent executors.
 *
 * The agent sleeps on a condition variable (no CPU at all) while no work is
 * outstanding. Posters count work in with ofl_agent_post() and executors count
 * it out with ofl_agent_done(); the first unit of work wakes the agent, which
 * then polls every item, yielding or napping between rounds that found nothing
 * to do, until the count drops back to zero. It then lingers a little (naps,
 * checking for work) before it sleeps again, so that calls that follow each
 * other closely do not pay a wake-up system call each.
 *
 * Nothing here knows about MPI: the thread is started lazily by the caller,
 * which can run a hook in its own thread once the new one exists (to bind it to
 * a core). The agent thread itself runs only this file and the items'
 * callbacks: it may first be scheduled long after it was created, when the
 * libraries its creator uses are being shut down.
 */
#ifndef OFL_AGENT_H
#define OFL_AGENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* Scheduling classes of the agent thread (see sched_class); 0, the normal
 * class, is what ofl_agent_init leaves. */
enum { OFL_AGENT_NORMAL, OFL_AGENT_BATCH, OFL_AGENT_RT };

typedef struct ofl_agent_item ofl_agent_item_t;

/* Execute what can run now; never block. Returns > 0 if anything happened
 * (so the caller should poll again at once), 0 if everything is waiting. */
typedef int (*ofl_agent_progress_fn)(ofl_agent_item_t *item);

/* At most this many items' doorbells are waited on at once; beyond them the
 * agent only naps. */
#define OFL_AGENT_MAX_BELLS 32

struct ofl_agent_item {
    ofl_agent_progress_fn progress;
    atomic_int busy;              /* executor lock: 1 while a thread runs progress */
    /* Optional doorbell (a NIC's arrival notification, the bell op of nic.h):
     * a futex word shared with the peers, and the flag that asks them to ring
     * it. NULL: the item has none. Set before ofl_agent_add. */
    uint32_t *bell_word;
    uint32_t *bell_armed;
    ofl_agent_item_t *prev;       /* the agent's list; under the agent's list lock */
    ofl_agent_item_t *next;
    int linked;
};

typedef struct {
    pthread_mutex_t list_lock;    /* the item list; held for a whole round */
    ofl_agent_item_t *head;
    pthread_mutex_t sleep_lock;   /* with wake: the agent's sleep */
    pthread_cond_t wake;
    atomic_long pending;          /* units of work posted and not yet done */
    atomic_int stop;
    atomic_int sleeping;          /* written under sleep_lock, read by posters */
    /* Timed sleeps (naps, back-off, lingering, waiting for arrivals) are futex
     * waits on `kick` (and on the items' doorbells while waiting for arrivals):
     * ofl_agent_kick() ends them at once. */
    atomic_uint kick;
    atomic_int parked;            /* 1 while in a timed sleep */
    unsigned kick_seen;           /* the agent's */
    /* Rounds run by application threads (ofl_agent_run). When it has moved
     * since the agent last looked, an application thread is inside MPI driving
     * the work itself, and the agent steps back (naps `backoff_ns`) instead of
     * competing for the items and the (often shared) cores; it resumes as soon
     * as the count stops moving, i.e. the application left MPI to compute. A
     * count, not a clock: a clock read costs tens of ns on every MPI_Test. */
    atomic_ulong host_rounds;
    unsigned long host_rounds_seen;   /* the agent's */
    atomic_uint host_misses;      /* host rounds in a row that found the agent in one */
    long backoff_ns;
    int started;
    pthread_t thread;
    /* Idle policy while work is pending but nothing can run: yield the CPU for
     * `yield_rounds` rounds, then sleep up to `nap_ns` between rounds (0:
     * always yield), armed: a peer's arrival on an item with a doorbell ends
     * the sleep at once. A sleeping thread that wakes is scheduled ahead of a
     * computing one, so on cores shared with ranks the work still moves while
     * they compute; a yielding one may wait for the end of their time slice. */
    unsigned yield_rounds;
    long nap_ns;
    long spin_ns;                 /* before such a sleep, poll this long */
    long slice_ns;                /* scheduler slice hint (Linux >= 6.12); 0: none */
    /* Scheduling class: OFL_AGENT_BATCH never preempts a computing thread on
     * wake-up (runs on idle cores at once, on busy ones at ticks);
     * OFL_AGENT_NORMAL preempts as the fair scheduler sees fit; OFL_AGENT_RT
     * (SCHED_RR, lowest priority) always preempts, so a collective's work
     * runs as soon as it can run, wherever the ranks compute. An RT agent
     * never yields (that would not let a normal thread run): it sleeps. */
    int sched_class;
    /* RT asked for but refused: errno (runs normal). The agent's to write, in
     * its set-up; others read it once `ready` is set. */
    int rt_failed;
    atomic_int ready;             /* the thread has set itself up */
    long kick_delay_ns;           /* RT: nap after a kick before working */
    /* After the last unit of work is done the agent lingers `linger_ns`,
     * checking every `linger_nap_ns` for new work, before it sleeps on the
     * condition variable: a poster that finds it lingering needs no system
     * call to wake it, and calls that come back to back find it awake. 0: sleep
     * at once. */
    long linger_ns;
    long linger_nap_ns;
    atomic_ulong rounds;          /* rounds the agent ran (tests, diagnostics) */
    atomic_ulong sleeps;          /* times it went to sleep */
} ofl_agent_t;

void ofl_agent_init(ofl_agent_t *agent);

/* Start the thread (once; later calls return 0 at once). `on_created` (may be
 * NULL) runs in the calling thread once agent->thread exists, before this
 * returns: whatever needs the caller's libraries (placing the thread on a core)
 * is done there, not in the new thread, which may not run before the caller
 * has shut them down. Returns 0 or an errno value. */
int ofl_agent_start(ofl_agent_t *agent, void (*on_created)(void *ctx), void *ctx);

/* Stop and join the thread (if started), then free what init made. Items still
 * registered are left alone: the caller owns them. */
void ofl_agent_fini(ofl_agent_t *agent);

static inline int ofl_agent_started(const ofl_agent_t *agent)
{
    return agent->started;
}

/* 1 once the thread has run its set-up: rt_failed is then final. */
static inline int ofl_agent_ready(ofl_agent_t *agent)
{
    return atomic_load_explicit(&agent->ready, memory_order_acquire);
}

void ofl_agent_item_init(ofl_agent_item_t *item, ofl_agent_progress_fn progress);

/* Register / unregister an item with the agent's list. After ofl_agent_remove()
 * returns, no round runs the item any more and no thread is inside its callback
 * through the agent (a thread calling ofl_agent_item_try() directly is the
 * caller's business). */
void ofl_agent_add(ofl_agent_t *agent, ofl_agent_item_t *item);
void ofl_agent_remove(ofl_agent_t *agent, ofl_agent_item_t *item);

/* The executor lock. try_lock never waits; lock spins (yielding) until held. */
static inline int ofl_agent_item_trylock(ofl_agent_item_t *item)
{
    int expect = 0;
    return atomic_load_explicit(&item->busy, memory_order_relaxed) == 0
           && atomic_compare_exchange_strong_explicit(&item->busy, &expect, 1,
                                                      memory_order_acquire,
                                                      memory_order_relaxed);
}

static inline void ofl_agent_item_unlock(ofl_agent_item_t *item)
{
    atomic_store_explicit(&item->busy, 0, memory_order_release);
}

void ofl_agent_item_lock(ofl_agent_item_t *item);

/* Run item's callback if no other thread is running it. Returns its result, or
 * 0 when the item was busy. */
int ofl_agent_item_try(ofl_agent_item_t *item);

/* Internal to ofl_agent_wake: signal the agent under its lock. */
void ofl_agent_wake_(ofl_agent_t *agent);

/* Count `n` units of work in, without waking the agent (yet). */
static inline void ofl_agent_count_in(ofl_agent_t *agent, long n)
{
    atomic_fetch_add_explicit(&agent->pending, n, memory_order_seq_cst);
}

/* Wake the agent if it sleeps. With ofl_agent_count_in before it, no wake-up
 * is lost: the agent publishes `sleeping` before it checks `pending` (both
 * sequentially consistent), so one of the two sees the other. */
static inline void ofl_agent_wake(ofl_agent_t *agent)
{
    if (atomic_load_explicit(&agent->sleeping, memory_order_seq_cst)) {
        ofl_agent_wake_(agent);
    }
}

/* Internal to ofl_agent_kick. */
void ofl_agent_kick_(ofl_agent_t *agent);

/* Wake the agent from any sleep, timed ones included, and have it run a round
 * at once even if an application thread ran one lately: for work worth a
 * system call (large collectives), posted by a thread about to leave MPI. */
static inline void ofl_agent_kick(ofl_agent_t *agent)
{
    atomic_fetch_add_explicit(&agent->kick, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&agent->parked, memory_order_seq_cst)) {
        ofl_agent_kick_(agent);
    }
    ofl_agent_wake(agent);
}

/* Count `n` units of work in and wake a sleeping agent. */
static inline void ofl_agent_post(ofl_agent_t *agent, long n)
{
    ofl_agent_count_in(agent, n);
    ofl_agent_wake(agent);
}

/* Count `n` units of work out (whoever finished them). */
static inline void ofl_agent_done(ofl_agent_t *agent, long n)
{
    atomic_fetch_sub_explicit(&agent->pending, n, memory_order_acq_rel);
}

static inline long ofl_agent_pending(ofl_agent_t *agent)
{
    return atomic_load_explicit(&agent->pending, memory_order_acquire);
}

/* An application thread drove progress itself (without ofl_agent_run): the
 * agent backs off as it does after host rounds. */
static inline void ofl_agent_host_round(ofl_agent_t *agent)
{
    atomic_store_explicit(&agent->host_rounds,
                          atomic_load_explicit(&agent->host_rounds, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* One round over every registered item from an application thread (inside an
 * MPI call): the sum of the callbacks' results (an item busy in another thread
 * counts 0). If the agent is in the middle of a round, this returns 0 at once,
 * except every 64th time in a row, when it waits for the round to end: on a
 * core shared with the agent, spinning would keep a preempted agent, and the
 * items it holds, off the core. It also tells the agent that an application
 * thread is driving progress. */
int ofl_agent_run(ofl_agent_t *agent);

#endif
