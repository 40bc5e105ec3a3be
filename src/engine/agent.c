/*
 * coll/offload — the progress agent (see agent.h).
 */
#include "engine/agent.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
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
    atomic_init(&agent->host_round_ns, 0);
    agent->backoff_ns = 20000;
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
    atomic_store_explicit(&agent->host_round_ns, mono_ns(), memory_order_relaxed);
    /* Wait for a round in progress rather than skip it: on shared cores the
     * agent may have been preempted in the middle of it (by this very thread),
     * and spinning here would only keep it off the core. */
    pthread_mutex_lock(&agent->list_lock);
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

static void idle(ofl_agent_t *agent, unsigned *idle_rounds)
{
    if (agent->nap_ns <= 0 || ++*idle_rounds <= agent->yield_rounds) {
        sched_yield();
        return;
    }
    nap(agent->nap_ns);
}

static void *agent_main(void *arg)
{
    ofl_agent_t *agent = arg;
    pthread_setname_np(pthread_self(), "ofl-agent");
    if (agent->nap_ns > 0) {
        /* Naps of microseconds, not the default 50 us of timer slack. */
        prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    }
    if (agent->slice_ns > 0) {
        request_slice(agent->slice_ns);
    }
    if (NULL != agent->on_start) {
        agent->on_start(agent->on_start_ctx);
    }
    unsigned idle_rounds = 0;
    for (;;) {
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
        if (atomic_load_explicit(&agent->stop, memory_order_acquire)) {
            break;
        }
        /* An application thread inside MPI runs rounds itself: do not compete
         * with it for the items and (often shared) cores until it stops. */
        long long host = atomic_load_explicit(&agent->host_round_ns, memory_order_relaxed);
        if (agent->backoff_ns > 0 && mono_ns() - host < agent->backoff_ns) {
            idle_rounds = 0;
            nap(agent->backoff_ns);
            continue;
        }
        atomic_fetch_add_explicit(&agent->rounds, 1, memory_order_relaxed);
        /* Cores are often shared with the ranks themselves: when nothing could
         * run, give the core to whoever the work is waiting for. */
        if (run_round(agent) > 0) {
            idle_rounds = 0;
        } else {
            idle(agent, &idle_rounds);
        }
    }
    return NULL;
}

int ofl_agent_start(ofl_agent_t *agent, void (*on_start)(void *ctx), void *ctx)
{
    if (agent->started) {
        return 0;
    }
    agent->on_start = on_start;
    agent->on_start_ctx = ctx;
    atomic_store(&agent->stop, 0);
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
    return 0;
}

void ofl_agent_fini(ofl_agent_t *agent)
{
    if (agent->started) {
        atomic_store_explicit(&agent->stop, 1, memory_order_release);
        pthread_mutex_lock(&agent->sleep_lock);
        pthread_cond_signal(&agent->wake);
        pthread_mutex_unlock(&agent->sleep_lock);
        pthread_join(agent->thread, NULL);
        agent->started = 0;
    }
    pthread_cond_destroy(&agent->wake);
    pthread_mutex_destroy(&agent->sleep_lock);
    pthread_mutex_destroy(&agent->list_lock);
}
