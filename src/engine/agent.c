/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the progress agent (see agent.h).
 */
#include "engine/agent.h"
#include "engine/engine.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void ofl_agent_init(ofl_agent_t *agent)
{
    memset(agent, 0, sizeof(*agent));
    pthread_mutex_init(&agent->list_lock, NULL);
    pthread_mutex_init(&agent->sleep_lock, NULL);
    pthread_cond_init(&agent->wake, NULL);
    atomic_init(&agent->pending, 0);
    atomic_init(&agent->stop, 0);
    atomic_init(&agent->rounds, 0);
    atomic_init(&agent->sleeps, 0);
    atomic_init(&agent->sleeping, 0);
    atomic_init(&agent->host_rounds, 0);
    atomic_init(&agent->kick, 0);
    atomic_init(&agent->host_misses, 0);
    atomic_init(&agent->parked, 0);
    atomic_init(&agent->ready, 0);
    /* Every wake-up of the agent costs the machine microseconds (timer
     * interrupt, context switches, a preempted rank; several times more in a
     * virtual machine), so sleeps that only watch are long: a kick ends them
     * when work worth it is posted. */
    agent->backoff_ns = 1000000;
    agent->spin_ns = 0;
}

void ofl_agent_item_init(ofl_agent_item_t *item, ofl_agent_progress_fn progress)
{
    memset(item, 0, sizeof(*item));
    item->progress = progress;
    atomic_init(&item->busy, 0);
}

void ofl_agent_item_lock(ofl_agent_item_t *item)
{
    while (!ofl_agent_item_trylock(item)) {
        sched_yield();
    }
}

int ofl_agent_item_try(ofl_agent_item_t *item)
{
    if (!ofl_agent_item_trylock(item)) {
        return 0;
    }
    int rc = item->progress(item);
    ofl_agent_item_unlock(item);
    return rc;
}

void ofl_agent_add(ofl_agent_t *agent, ofl_agent_item_t *item)
{
    pthread_mutex_lock(&agent->list_lock);
    if (!item->linked) {
        item->prev = NULL;
        item->next = agent->head;
        if (NULL != agent->head) {
            agent->head->prev = item;
        }
        agent->head = item;
        item->linked = 1;
    }
    pthread_mutex_unlock(&agent->list_lock);
}

void ofl_agent_remove(ofl_agent_t *agent, ofl_agent_item_t *item)
{
    if (NULL != item->bell_armed) {
        /* peers stop ringing a bell nobody waits on */
        atomic_store_explicit((_Atomic uint32_t *) item->bell_armed, 0, memory_order_relaxed);
    }
    /* Rounds hold the list lock from start to end, so once we have it no round
     * is inside this item, and none can find it after the unlink. */
    pthread_mutex_lock(&agent->list_lock);
    if (item->linked) {
        if (NULL != item->prev) {
            item->prev->next = item->next;
        } else {
            agent->head = item->next;
        }
        if (NULL != item->next) {
            item->next->prev = item->prev;
        }
        item->prev = item->next = NULL;
        item->linked = 0;
    }
    pthread_mutex_unlock(&agent->list_lock);
}

/* The agent's round. While an application thread runs one it does the work,
 * so the agent skips rather than waits. */
static int run_round(ofl_agent_t *agent)
{
    if (0 != pthread_mutex_trylock(&agent->list_lock)) {
        return 0;
    }
    int worked = 0;
    for (ofl_agent_item_t *item = agent->head; NULL != item; item = item->next) {
        worked += ofl_agent_item_try(item);
    }
    pthread_mutex_unlock(&agent->list_lock);
    return worked;
}

static long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int ofl_agent_run(ofl_agent_t *agent)
{
    /* A hint, not a count: no locked instruction here, as one would wait for
     * this core's stores to the peers' lines to drain on every MPI_Test. */
    atomic_store_explicit(&agent->host_rounds,
                          atomic_load_explicit(&agent->host_rounds, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    /* A round in progress elsewhere does the work: skip it, and let the caller
     * complete what is done. But after many misses in a row, wait for it: on a
     * core shared with the agent, the agent may have been preempted in the
     * middle of a round (by this very thread), and spinning here would only
     * keep it off the core. */
    if (0 != pthread_mutex_trylock(&agent->list_lock)) {
        unsigned misses = atomic_fetch_add_explicit(&agent->host_misses, 1,
                                                    memory_order_relaxed);
        if (0 != (misses + 1) % 64) {
            return 0;
        }
        pthread_mutex_lock(&agent->list_lock);
    }
    atomic_store_explicit(&agent->host_misses, 0, memory_order_relaxed);
    int worked = 0;
    for (ofl_agent_item_t *item = agent->head; NULL != item; item = item->next) {
        worked += ofl_agent_item_try(item);
    }
    pthread_mutex_unlock(&agent->list_lock);
    return worked;
}

void ofl_agent_wake_(ofl_agent_t *agent)
{
    /* Taking the lock waits for an agent between publishing `sleeping` and
     * waiting, so the signal cannot come too early. */
    pthread_mutex_lock(&agent->sleep_lock);
    if (atomic_load(&agent->sleeping)) {
        pthread_cond_signal(&agent->wake);
    }
    pthread_mutex_unlock(&agent->sleep_lock);
}

/* Ask for a short scheduler slice (EEVDF, Linux 6.12+): a waking task with a
 * shorter slice preempts the running one at once. Older kernels ignore it. */
static void request_slice(long slice_ns)
{
#ifdef SYS_sched_setattr
    struct {
        uint32_t size;
        uint32_t sched_policy;
        uint64_t sched_flags;
        int32_t sched_nice;
        uint32_t sched_priority;
        uint64_t sched_runtime;
        uint64_t sched_deadline;
        uint64_t sched_period;
    } attr;
    memset(&attr, 0, sizeof(attr));
    attr.size = sizeof(attr);
    attr.sched_policy = SCHED_OTHER;
    attr.sched_runtime = (uint64_t) slice_ns;
    (void) syscall(SYS_sched_setattr, 0, &attr, 0);
#else
    (void) slice_ns;
#endif
}

static void nap(long ns)
{
    struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
    nanosleep(&ts, NULL);
}

void ofl_agent_kick_(ofl_agent_t *agent)
{
    syscall(SYS_futex, &agent->kick, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void arm_all(ofl_agent_t *agent, uint32_t on)
{
    for (ofl_agent_item_t *item = agent->head; NULL != item; item = item->next) {
        if (NULL != item->bell_armed) {
            atomic_store_explicit((_Atomic uint32_t *) item->bell_armed, on,
                                  memory_order_seq_cst);
        }
    }
}

/* Sleep up to `ns`, or until kicked, or (arm) until a peer rings a doorbell.
 * Returns 1 if a last look found work to do (no sleep), else 0. */
static int agent_sleep(ofl_agent_t *agent, long ns, int arm)
{
#ifdef SYS_futex_waitv
    struct futex_waitv w[1 + OFL_AGENT_MAX_BELLS];
    int n = 0;
    memset(w, 0, sizeof(w));
    atomic_store_explicit(&agent->parked, 1, memory_order_seq_cst);
    w[n].val = atomic_load_explicit(&agent->kick, memory_order_seq_cst);
    w[n].uaddr = (uint64_t) (uintptr_t) &agent->kick;
    w[n++].flags = FUTEX_32 | FUTEX_PRIVATE_FLAG;
    if (arm && 0 == pthread_mutex_trylock(&agent->list_lock)) {
        /* Arm, then look once more: a peer that delivered before it could see
         * the flag is found by this round; one after it rings. */
        arm_all(agent, 1);
        for (ofl_agent_item_t *item = agent->head; NULL != item && n < 1 + OFL_AGENT_MAX_BELLS;
             item = item->next) {
            if (NULL != item->bell_word) {
                w[n].val = atomic_load_explicit((_Atomic uint32_t *) item->bell_word,
                                                memory_order_seq_cst);
                w[n].uaddr = (uint64_t) (uintptr_t) item->bell_word;
                w[n++].flags = FUTEX_32;
            }
        }
        int worked = 0;
        for (ofl_agent_item_t *item = agent->head; NULL != item; item = item->next) {
            worked += ofl_agent_item_try(item);
        }
        if (worked > 0) {
            arm_all(agent, 0);
            pthread_mutex_unlock(&agent->list_lock);
            atomic_store_explicit(&agent->parked, 0, memory_order_relaxed);
            return 1;
        }
        pthread_mutex_unlock(&agent->list_lock);
    } else {
        arm = 0;
    }
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += ns % 1000000000L;
    until.tv_sec += ns / 1000000000L + until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    long rc = syscall(SYS_futex_waitv, w, n, 0, &until, CLOCK_MONOTONIC);
    if (arm) {
        pthread_mutex_lock(&agent->list_lock);
        arm_all(agent, 0);
        pthread_mutex_unlock(&agent->list_lock);
    }
    atomic_store_explicit(&agent->parked, 0, memory_order_relaxed);
    if (rc < 0 && ENOSYS == errno) {
        nap(ns);
    }
    return 0;
#else
    (void) arm;
    nap(ns);
    return 0;
#endif
}

static void idle(ofl_agent_t *agent, unsigned *idle_rounds, long long *idle_since)
{
    int rt = OFL_AGENT_RT == agent->sched_class && 0 == agent->rt_failed;
    if (!rt && (agent->nap_ns <= 0 || ++*idle_rounds <= agent->yield_rounds)) {
        sched_yield();
        return;
    }
    if (agent->spin_ns > 0 && !rt) {
        /* Poll a little before sleeping: a wake-up costs microseconds (more
         * in a virtual machine), a peer's next segment is often closer. */
        long long t = mono_ns();
        if (1 == *idle_rounds - agent->yield_rounds) {
            *idle_since = t;
        }
        if (t - *idle_since < agent->spin_ns) {
            for (int i = 0; i < 64; ++i) {
                ofl_cpu_relax();
            }
            return;
        }
    }
    agent_sleep(agent, agent->nap_ns > 0 ? agent->nap_ns : 50000, 1);
}

/* The thread's name, timer slack, scheduler slice and class: system calls
 * only (the creator may be finalizing by now), then `ready`. */
static void thread_setup(ofl_agent_t *agent)
{
    if (atomic_load_explicit(&agent->stop, memory_order_acquire)) {
        /* first scheduled after it was told to stop: nothing to set up */
        atomic_store_explicit(&agent->ready, 1, memory_order_release);
        return;
    }
    pthread_setname_np(pthread_self(), "ofl-agent");
    if (agent->nap_ns > 0 || agent->linger_ns > 0) {
        /* Naps of microseconds, not the default 50 us of timer slack. */
        prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    }
    if (agent->slice_ns > 0) {
        request_slice(agent->slice_ns);
    }
    if (OFL_AGENT_BATCH == agent->sched_class) {
        /* A batch thread does not preempt on wake-up: it runs at once on an
         * idle core, otherwise when the scheduler's tick gives it its share. */
        struct sched_param sp = { 0 };
        pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
    } else if (OFL_AGENT_RT == agent->sched_class) {
        struct sched_param sp = { .sched_priority = sched_get_priority_min(SCHED_RR) };
        agent->rt_failed = pthread_setschedparam(pthread_self(), SCHED_RR, &sp);
    }
    atomic_store_explicit(&agent->ready, 1, memory_order_release);
}

/* Nothing pending: linger (napping) for a while, then sleep until a post
 * wakes the agent or it is told to stop. */
static void wait_for_work(ofl_agent_t *agent)
{
    if (0 == ofl_agent_pending(agent) && agent->linger_ns > 0) {
        long long until = mono_ns() + agent->linger_ns;
        while (0 == ofl_agent_pending(agent)
               && !atomic_load_explicit(&agent->stop, memory_order_acquire)
               && mono_ns() < until) {
            agent_sleep(agent, agent->linger_nap_ns > 0 ? agent->linger_nap_ns : 20000, 0);
        }
    }
    if (0 == ofl_agent_pending(agent)) {
        pthread_mutex_lock(&agent->sleep_lock);
        while (!atomic_load_explicit(&agent->stop, memory_order_acquire)) {
            atomic_store(&agent->sleeping, 1);
            if (0 != atomic_load(&agent->pending)) {
                break;
            }
            atomic_fetch_add_explicit(&agent->sleeps, 1, memory_order_relaxed);
            pthread_cond_wait(&agent->wake, &agent->sleep_lock);
        }
        atomic_store(&agent->sleeping, 0);
        pthread_mutex_unlock(&agent->sleep_lock);
    }
}

static void *agent_main(void *arg)
{
    ofl_agent_t *agent = arg;
    thread_setup(agent);
    unsigned idle_rounds = 0;
    long long idle_since = 0;
    for (;;) {
        wait_for_work(agent);
        if (atomic_load_explicit(&agent->stop, memory_order_acquire)) {
            break;
        }
        /* An application thread inside MPI runs rounds itself: do not compete
         * with it for the items and (often shared) cores until it stops. */
        unsigned long host = atomic_load_explicit(&agent->host_rounds, memory_order_relaxed);
        unsigned kick = atomic_load_explicit(&agent->kick, memory_order_acquire);
        if (kick != agent->kick_seen) {
            /* posted by a thread leaving MPI: go now, but a real-time agent
             * woke on the poster's core and preempted it inside its MPI call:
             * let it return first (the work then runs in its computation, not
             * in the post) */
            agent->kick_seen = kick;
            agent->host_rounds_seen = host;
            if (OFL_AGENT_RT == agent->sched_class && 0 == agent->rt_failed
                && agent->kick_delay_ns > 0) {
                nap(agent->kick_delay_ns);
            }
        } else if (agent->backoff_ns > 0 && host != agent->host_rounds_seen) {
            agent->host_rounds_seen = host;
            idle_rounds = 0;
            agent_sleep(agent, agent->backoff_ns, 0);
            continue;
        }
        atomic_fetch_add_explicit(&agent->rounds, 1, memory_order_relaxed);
        /* Cores are often shared with the ranks themselves: when nothing could
         * run, give the core to whoever the work is waiting for. */
        if (run_round(agent) > 0) {
            idle_rounds = 0;
        } else {
            idle(agent, &idle_rounds, &idle_since);
        }
    }
    return NULL;
}

int ofl_agent_start(ofl_agent_t *agent, void (*on_created)(void *ctx), void *ctx)
{
    if (agent->started) {
        return 0;
    }
    atomic_store(&agent->stop, 0);
    atomic_store(&agent->ready, 0);
    agent->rt_failed = 0;
    /* Signals belong to the application's threads: the agent inherits a mask
     * that blocks them all. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&agent->thread, NULL, agent_main, agent);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (0 != rc) {
        return rc;
    }
    agent->started = 1;
    if (NULL != on_created) {
        on_created(ctx);
    }
    return 0;
}

void ofl_agent_fini(ofl_agent_t *agent)
{
    if (agent->started) {
        atomic_store_explicit(&agent->stop, 1, memory_order_release);
        pthread_mutex_lock(&agent->sleep_lock);
        pthread_cond_signal(&agent->wake);
        pthread_mutex_unlock(&agent->sleep_lock);
        ofl_agent_kick(agent);
        pthread_join(agent->thread, NULL);
        agent->started = 0;
    }
    pthread_cond_destroy(&agent->wake);
    pthread_mutex_destroy(&agent->sleep_lock);
    pthread_mutex_destroy(&agent->list_lock);
}
