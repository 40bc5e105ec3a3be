/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Unit test of the progress agent (src/engine/agent.c) without MPI.
 *
 *   lazy      nothing runs before start; the start hook runs in the starting
 *             thread, before ofl_agent_start returns, with the new thread's
 *             handle set; the thread reports itself ready;
 *   work      posted work is executed by the agent alone while the main thread
 *             only sleeps, and the pending count returns to zero;
 *   sleep     with nothing outstanding the agent sleeps: it runs no round while
 *             the main thread sleeps, and a later post wakes it;
 *   exclusive the agent and several host threads run rounds and try items
 *             concurrently; no item's callback is ever entered twice at once;
 *   remove    after ofl_agent_remove() returns the callback is never run again
 *             by the agent, even while work is still counted as pending;
 *   stop      fini joins a polling agent and a sleeping one;
 *   nap       with nap_ns set, an agent waiting on work it cannot advance naps
 *             between rounds: it still finishes the work;
 *   bell      an agent sleeping (naps of 30 s) on an item's doorbell is woken
 *             by a ring when the awaited data arrives (long before its nap
 *             would end), over many arrivals racing with its going to sleep
 *             (no lost wake-up), and it does not poll meanwhile;
 *   kick      ofl_agent_kick() ends the agent's long lingering sleep (naps of
 *             30 s), and so does fini;
 *   early     an agent stopped right after its start (a job that finalizes
 *             right after its first nonblocking call), many times over: fini
 *             joins it whether or not it ever ran, and it is ready after.
 *
 * How fast things happen (wake-up latencies, CPU time of an idle or napping
 * agent, rounds per nap) is printed, not judged: a loaded machine would fail
 * such a bound. What is checked is that they happen; a wait that never ends is
 * unit_timeout's failure, and the waits below give up after seconds.
 */
#include "clocks.h"
#include "engine/agent.h"
#include "unit.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long) (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* A work item that needs `steps` callbacks per unit of work, so a unit takes
 * several rounds. */
typedef struct {
    ofl_agent_item_t item;        /* first: the callback gets this pointer */
    ofl_agent_t *agent;
    atomic_int inside;            /* threads inside the callback right now */
    atomic_int overlap;           /* times two threads were inside at once */
    atomic_long calls;
    atomic_long units;            /* posted, not finished */
    atomic_long finished;
    long step;                    /* progress within the current unit */
    long steps;
    atomic_int removed;           /* set after ofl_agent_remove() returned */
    atomic_int called_after_remove;
    pthread_t owner_seen;
} work_t;

static int work_progress(ofl_agent_item_t *item)
{
    work_t *w = (work_t *) item;
    if (atomic_fetch_add(&w->inside, 1) != 0) {
        atomic_fetch_add(&w->overlap, 1);
    }
    if (atomic_load(&w->removed)) {
        atomic_fetch_add(&w->called_after_remove, 1);
    }
    atomic_fetch_add(&w->calls, 1);
    w->owner_seen = pthread_self();
    int did = 0;
    if (atomic_load(&w->units) > 0) {
        /* Non-atomic state, safe only because executors are exclusive. */
        long s = w->step + 1;
        for (volatile int spin = 0; spin < 50; ++spin) {
        }
        w->step = s;
        did = 1;
        if (w->step >= w->steps) {
            w->step = 0;
            atomic_fetch_sub(&w->units, 1);
            atomic_fetch_add(&w->finished, 1);
            ofl_agent_done(w->agent, 1);
        }
    }
    atomic_fetch_sub(&w->inside, 1);
    return did;
}

static void work_init(work_t *w, ofl_agent_t *agent, long steps)
{
    memset(w, 0, sizeof(*w));
    ofl_agent_item_init(&w->item, work_progress);
    w->agent = agent;
    w->steps = steps;
}

static void work_post(work_t *w, long n)
{
    atomic_fetch_add(&w->units, n);
    ofl_agent_post(w->agent, n);
}

static int wait_finished(work_t *w, long want, double timeout)
{
    double t0 = now_s();
    while (atomic_load(&w->finished) < want) {
        if (now_s() - t0 > timeout) {
            return 0;
        }
        sleep_ms(1);
    }
    return 1;
}

/* Waits (up to `timeout` s) until *flag is nonzero: 1 if it became so. */
static int wait_flag(atomic_int *flag, double timeout)
{
    double t0 = now_s();
    while (0 == atomic_load(flag)) {
        if (now_s() - t0 > timeout) {
            return 0;
        }
        sleep_ms(1);
    }
    return 1;
}

/* Waits (up to `timeout` s) until *count exceeds `than`: 1 if it did. */
static int wait_above(atomic_ulong *count, unsigned long than, double timeout)
{
    double t0 = now_s();
    while (atomic_load(count) <= than) {
        if (now_s() - t0 > timeout) {
            return 0;
        }
        sleep_ms(1);
    }
    return 1;
}

static pthread_t hook_thread;
static atomic_int hook_calls;
static ofl_agent_t *hook_agent;
static int hook_saw_thread;

static void hook(void *ctx)
{
    CHECK(ctx == (void *) &hook_calls, "hook context");
    hook_thread = pthread_self();
    /* the new thread's handle is set: the hook may bind it */
    cpu_set_t set;
    hook_saw_thread = 0 == pthread_getaffinity_np(hook_agent->thread, sizeof(set), &set);
    atomic_fetch_add(&hook_calls, 1);
}

static void test_lazy_and_work(void)
{
    ofl_agent_t a;
    ofl_agent_init(&a);
    work_t w;
    work_init(&w, &a, 7);
    ofl_agent_add(&a, &w.item);
    work_post(&w, 3);
    sleep_ms(20);
    CHECK(0 == atomic_load(&w.calls), "no thread runs before start (%ld calls)",
          (long) atomic_load(&w.calls));
    CHECK(!ofl_agent_started(&a), "not started");

    hook_agent = &a;
    CHECK(0 == ofl_agent_start(&a, hook, &hook_calls), "start");
    CHECK(1 == atomic_load(&hook_calls), "hook ran before start returned (%d)",
          atomic_load(&hook_calls));
    CHECK(0 == ofl_agent_start(&a, hook, &hook_calls), "second start is a no-op");
    CHECK(wait_finished(&w, 3, 5.0), "agent finished the work posted before start");
    CHECK(1 == atomic_load(&hook_calls), "hook ran once (%d)", atomic_load(&hook_calls));
    CHECK(pthread_equal(hook_thread, pthread_self()), "hook ran in the starting thread");
    CHECK(hook_saw_thread, "hook found the new thread's handle");
    CHECK(!pthread_equal(w.owner_seen, pthread_self()), "callbacks ran in the agent thread");
    CHECK(ofl_agent_ready(&a), "the agent set itself up");
    CHECK(0 == a.rt_failed, "no real-time class asked for, none refused");

    /* Only the agent works: the main thread sleeps. */
    for (int round = 0; round < 50; ++round) {
        work_post(&w, 1 + round % 3);
    }
    long want = 3;
    for (int round = 0; round < 50; ++round) {
        want += 1 + round % 3;
    }
    CHECK(wait_finished(&w, want, 10.0), "agent finished %ld units (did %ld)", want,
          (long) atomic_load(&w.finished));
    CHECK(0 == ofl_agent_pending(&a), "pending back to zero (%ld)", ofl_agent_pending(&a));
    CHECK(0 == atomic_load(&w.overlap), "no concurrent callbacks");

    ofl_agent_remove(&a, &w.item);
    ofl_agent_fini(&a);
    CHECK(!ofl_agent_started(&a), "stopped");
}

static void test_sleep(void)
{
    ofl_agent_t a;
    ofl_agent_init(&a);
    work_t w;
    work_init(&w, &a, 3);
    ofl_agent_add(&a, &w.item);
    CHECK(0 == ofl_agent_start(&a, NULL, NULL), "start");
    work_post(&w, 1);
    CHECK(wait_finished(&w, 1, 5.0), "first unit");
    CHECK(wait_flag(&a.sleeping, 5.0), "the agent went back to sleep");

    unsigned long rounds0 = atomic_load(&a.rounds);
    double c0 = cpu_s();
    sleep_ms(300);
    double used = cpu_s() - c0;
    unsigned long rounds1 = atomic_load(&a.rounds);
    CHECK(rounds1 == rounds0, "idle agent ran %lu rounds", rounds1 - rounds0);

    unsigned long sleeps0 = atomic_load(&a.sleeps);
    double t0 = now_s();
    work_post(&w, 1);
    CHECK(wait_finished(&w, 2, 5.0), "woken agent finished the unit");
    double lat = now_s() - t0;
    CHECK(wait_above(&a.sleeps, sleeps0, 5.0), "agent went back to sleep");
    printf("agent: idle, %.3f s of CPU in 0.3 s; wake-up to done %.3f s\n", used, lat);

    ofl_agent_remove(&a, &w.item);
    ofl_agent_fini(&a);
}

typedef struct {
    ofl_agent_t *agent;
    work_t *works;
    int nworks;
    atomic_int *go;
    long rounds;
} host_t;

static void *host_main(void *arg)
{
    host_t *h = arg;
    while (atomic_load(h->go)) {
        ofl_agent_run(h->agent);
        for (int i = 0; i < h->nworks; ++i) {
            ofl_agent_item_try(&h->works[i].item);
        }
        h->rounds++;
        if (0 == h->rounds % 16) {
            sched_yield();
        }
    }
    return NULL;
}

static void test_exclusive(void)
{
    enum { NW = 4, NH = 3 };
    ofl_agent_t a;
    ofl_agent_init(&a);
    work_t w[NW];
    for (int i = 0; i < NW; ++i) {
        work_init(&w[i], &a, 5 + i);
        ofl_agent_add(&a, &w[i].item);
    }
    CHECK(0 == ofl_agent_start(&a, NULL, NULL), "start");
    atomic_int go;
    atomic_init(&go, 1);
    pthread_t th[NH];
    host_t h[NH];
    for (int t = 0; t < NH; ++t) {
        h[t] = (host_t) { .agent = &a, .works = w, .nworks = NW, .go = &go };
        CHECK(0 == pthread_create(&th[t], NULL, host_main, &h[t]), "pthread_create");
    }
    long per = 2000;
    for (long k = 0; k < per; ++k) {
        for (int i = 0; i < NW; ++i) {
            work_post(&w[i], 1);
        }
        if (0 == k % 64) {
            sched_yield();
        }
    }
    for (int i = 0; i < NW; ++i) {
        CHECK(wait_finished(&w[i], per, 30.0), "item %d finished %ld of %ld", i,
              (long) atomic_load(&w[i].finished), per);
    }
    atomic_store(&go, 0);
    for (int t = 0; t < NH; ++t) {
        pthread_join(th[t], NULL);
    }
    for (int i = 0; i < NW; ++i) {
        CHECK(0 == atomic_load(&w[i].overlap), "item %d: %d concurrent entries", i,
              atomic_load(&w[i].overlap));
        ofl_agent_remove(&a, &w[i].item);
    }
    CHECK(0 == ofl_agent_pending(&a), "pending zero (%ld)", ofl_agent_pending(&a));
    ofl_agent_fini(&a);
}

static void test_remove_and_stop(void)
{
    ofl_agent_t a;
    ofl_agent_init(&a);
    work_t w, other;
    /* An item that never finishes: the agent keeps polling it. */
    work_init(&w, &a, 1L << 40);
    work_init(&other, &a, 2);
    ofl_agent_add(&a, &w.item);
    ofl_agent_add(&a, &other.item);
    CHECK(0 == ofl_agent_start(&a, NULL, NULL), "start");
    work_post(&w, 1);
    double t0 = now_s();
    while (atomic_load(&w.calls) < 1000 && now_s() - t0 < 5.0) {
        sched_yield();
    }
    CHECK(atomic_load(&w.calls) >= 1000, "polling agent calls the item");
    ofl_agent_remove(&a, &w.item);
    atomic_store(&w.removed, 1);
    long calls = atomic_load(&w.calls);
    /* Work is still pending (the removed item's unit), so the agent polls on. */
    work_post(&other, 5);
    CHECK(wait_finished(&other, 5, 5.0), "other item still served after a removal");
    sleep_ms(20);
    CHECK(0 == atomic_load(&w.called_after_remove), "removed item called %d times",
          atomic_load(&w.called_after_remove));
    CHECK(calls == atomic_load(&w.calls), "removed item's call count moved");
    /* fini with work pending: joins a polling agent. */
    t0 = now_s();
    ofl_agent_fini(&a);
    double polling = now_s() - t0;
    CHECK(!ofl_agent_started(&a), "fini stopped a polling agent");

    /* And a sleeping one. */
    ofl_agent_init(&a);
    CHECK(0 == ofl_agent_start(&a, NULL, NULL), "start");
    CHECK(wait_flag(&a.sleeping, 5.0), "the started agent went to sleep");
    t0 = now_s();
    ofl_agent_fini(&a);
    CHECK(!ofl_agent_started(&a), "fini stopped a sleeping agent");
    printf("agent: fini of a polling agent %.3f s, of a sleeping one %.3f s\n", polling,
           now_s() - t0);

    /* fini without start. */
    ofl_agent_init(&a);
    ofl_agent_fini(&a);
}

/* An item whose unit finishes only once a deadline has passed: until then
 * every round finds nothing to do. */
typedef struct {
    ofl_agent_item_t item;
    ofl_agent_t *agent;
    double due;
    atomic_int done;
    atomic_long calls;
} timer_t_;

static int timer_progress(ofl_agent_item_t *item)
{
    timer_t_ *t = (timer_t_ *) item;
    atomic_fetch_add(&t->calls, 1);
    if (!atomic_load(&t->done) && now_s() >= t->due) {
        atomic_store(&t->done, 1);
        ofl_agent_done(t->agent, 1);
        return 1;
    }
    return 0;
}

static void test_nap(void)
{
    ofl_agent_t a;
    ofl_agent_init(&a);
    a.yield_rounds = 4;
    a.nap_ns = 200000;   /* 0.2 ms */
    timer_t_ t;
    memset(&t, 0, sizeof(t));
    ofl_agent_item_init(&t.item, timer_progress);
    t.agent = &a;
    ofl_agent_add(&a, &t.item);
    CHECK(0 == ofl_agent_start(&a, NULL, NULL), "start");
    double c0 = cpu_s();
    t.due = now_s() + 0.1;
    ofl_agent_post(&a, 1);
    double t0 = now_s();
    while (!atomic_load(&t.done) && now_s() - t0 < 5.0) {
        sleep_ms(1);
    }
    double used = cpu_s() - c0, took = now_s() - t0;
    CHECK(atomic_load(&t.done), "napping agent finished the unit");
    /* At most one round per nap (plus the yielding ones) would be about 500. */
    printf("agent: napping (0.2 ms) for %.3f s: %ld polls, %.3f s of CPU\n", took,
           (long) atomic_load(&t.calls), used);
    ofl_agent_remove(&a, &t.item);
    ofl_agent_fini(&a);
}

/* An item whose unit completes when a "peer" thread delivers: the agent can
 * only wait for it, on the item's doorbell. */
typedef struct {
    ofl_agent_item_t item;        /* first */
    ofl_agent_t *agent;
    _Atomic uint32_t word;        /* the doorbell */
    _Atomic uint32_t armed;
    atomic_long delivered;        /* arrivals so far */
    atomic_long consumed;         /* units the agent finished */
    atomic_long calls;
} bell_t;

static int bell_progress(ofl_agent_item_t *item)
{
    bell_t *b = (bell_t *) item;
    atomic_fetch_add(&b->calls, 1);
    long have = atomic_load(&b->delivered), done = atomic_load(&b->consumed);
    if (have > done) {
        atomic_store(&b->consumed, have);
        ofl_agent_done(b->agent, have - done);
        return 1;
    }
    return 0;
}

/* The peer's side of a delivery, as a NIC backend rings (softnic's sn_ring). */
static void bell_deliver(bell_t *b)
{
    atomic_fetch_add(&b->delivered, 1);
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&b->armed, memory_order_relaxed)) {
        atomic_fetch_add(&b->word, 1);
        syscall(SYS_futex, &b->word, FUTEX_WAKE, 1, NULL, NULL, 0);
    }
}

static int wait_consumed(bell_t *b, long want, double timeout)
{
    double t0 = now_s();
    while (atomic_load(&b->consumed) < want) {
        if (now_s() - t0 > timeout) {
            return 0;
        }
        sched_yield();
    }
    return 1;
}

static void test_bell(void)
{
    ofl_agent_t a;
    ofl_agent_init(&a);
    a.nap_ns = 30000000000L;   /* only a ring ends a sleep before the waits below give up */
    bell_t b;
    memset(&b, 0, sizeof(b));
    ofl_agent_item_init(&b.item, bell_progress);
    b.item.bell_word = (uint32_t *) &b.word;
    b.item.bell_armed = (uint32_t *) &b.armed;
    b.agent = &a;
    ofl_agent_add(&a, &b.item);
    CHECK(0 == ofl_agent_start(&a, NULL, NULL), "start");

    /* One arrival long after the agent went to sleep. */
    ofl_agent_post(&a, 1);
    double t_arm = now_s();
    while (1 != atomic_load(&b.armed) && now_s() - t_arm < 5.0) {
        sleep_ms(1);
    }
    CHECK(1 == atomic_load(&b.armed), "agent sleeps armed");
    sleep_ms(50);
    long calls0 = atomic_load(&b.calls);
    sleep_ms(50);
    CHECK(atomic_load(&b.calls) == calls0, "armed agent polled %ld times while asleep",
          atomic_load(&b.calls) - calls0);
    double t0 = now_s();
    bell_deliver(&b);
    CHECK(wait_consumed(&b, 1, 10.0), "rung agent consumed the arrival");
    double lat = now_s() - t0;

    /* Arrivals racing with the agent's arming and last look. */
    unsigned seed = 12345;
    int lost = 0;
    for (long i = 2; i <= 2000 && !lost; ++i) {
        ofl_agent_post(&a, 1);
        seed = seed * 1103515245u + 12345u;
        for (volatile unsigned spin = 0; spin < (seed >> 16) % 20000; ++spin) {
        }
        bell_deliver(&b);
        lost = !wait_consumed(&b, i, 10.0);
        CHECK(!lost, "arrival %ld not consumed within 10 s of a 30 s nap (a lost wake-up)", i);
    }
    printf("agent: ring to consumption %.3f s\n", lat);
    CHECK(0 == ofl_agent_pending(&a), "pending zero (%ld)", ofl_agent_pending(&a));
    ofl_agent_remove(&a, &b.item);
    CHECK(0 == atomic_load(&b.armed), "remove disarms the bell");
    ofl_agent_fini(&a);
}

static void test_kick(void)
{
    ofl_agent_t a;
    ofl_agent_init(&a);
    a.linger_ns = 60000000000L;        /* 60 s awake after the last work ... */
    a.linger_nap_ns = 30000000000L;    /* ... in naps of 30 s */
    work_t w;
    work_init(&w, &a, 3);
    ofl_agent_add(&a, &w.item);
    /* Posted before the start: a started agent with nothing to do would
     * already linger in a 10 s nap, which only a kick ends. */
    work_post(&w, 1);
    CHECK(0 == ofl_agent_start(&a, NULL, NULL), "start");
    CHECK(wait_finished(&w, 1, 5.0), "first unit");
    sleep_ms(20);   /* now in a 30 s nap */
    double t0 = now_s();
    atomic_fetch_add(&w.units, 1);
    ofl_agent_count_in(&a, 1);
    ofl_agent_kick(&a);
    CHECK(wait_finished(&w, 2, 10.0), "kicked agent finished the unit within 10 s of a 30 s "
          "nap");
    double lat = now_s() - t0;
    ofl_agent_remove(&a, &w.item);
    t0 = now_s();
    ofl_agent_fini(&a);
    double fini = now_s() - t0;
    /* (not a speed bound: waiting out the nap would take 30 s) */
    CHECK(fini < 10.0, "fini waited out the agent's 30 s nap (%.3f s)", fini);
    printf("agent: kick to completion %.3f s, fini of a napping agent %.3f s\n", lat, fini);
}

static void test_early_stop(void)
{
    int ok = 1;
    for (int i = 0; i < 200 && ok; ++i) {
        ofl_agent_t a;
        ofl_agent_init(&a);
        a.linger_ns = 2000000;
        a.nap_ns = 50000;
        work_t w;
        work_init(&w, &a, 2);
        ofl_agent_add(&a, &w.item);
        ok = 0 == ofl_agent_start(&a, NULL, NULL);
        if (i & 1) {
            /* work that its poster finishes itself, as a small call does */
            work_post(&w, 1);
            while (atomic_load(&w.units) > 0) {
                ofl_agent_run(&a);
            }
        }
        ofl_agent_fini(&a);
        ok = ok && !ofl_agent_started(&a) && ofl_agent_ready(&a);
        CHECK(ok, "start and stop %d: stopped and ready", i);
    }
}

int main(void)
{
    unit_timeout("test_agent", 60);
    test_lazy_and_work();
    test_sleep();
    test_exclusive();
    test_remove_and_stop();
    test_nap();
    test_bell();
    test_kick();
    test_early_stop();
    return unit_report("test_agent");
}
