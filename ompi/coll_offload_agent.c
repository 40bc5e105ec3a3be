/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the progress agent thread: how it is configured from the MCA
 * values, and where it runs: a core no rank of this node is bound to, from
 * hwloc's topology and the launcher's per-process cpusets (PMIx). The agent
 * itself is src/engine/agent.c, owned by the execution queue (src/engine/queue.c),
 * which this file opens with the MCA values and whose agent it starts.
 *
 * Everything here runs in the application thread that starts the agent (inside
 * an MPI call) or in later ones, never in the agent thread: that thread may be
 * scheduled for the first time only when the job finalizes, and Open MPI 5
 * shuts PMIx and the runtime down before it closes this component (where the
 * agent is stopped). So the placement is computed and applied here, and what
 * the agent has to say (the real-time class refused) is printed by the
 * application thread that finds it out.
 */
#include "coll_offload.h"
#include "coll_offload_setup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/proc/proc.h"
#include "opal/mca/hwloc/base/base.h"
#include "opal/util/output.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/show_help.h"

static void cpu_set_describe(hwloc_const_bitmap_t set, char *buf, size_t len)
{
    char *text = NULL;
    if (hwloc_bitmap_list_asprintf(&text, set) >= 0 && NULL != text) {
        snprintf(buf, len, "%s", text);
    } else {
        snprintf(buf, len, "?");
    }
    free(text);
}

/* The union of the cpusets of this node's ranks into `used`, and this rank's
 * place among them. 1 when some local rank is not bound at all. */
static int local_ranks_cpuset(hwloc_bitmap_t used, hwloc_bitmap_t one, unsigned *local_rank)
{
    ompi_communicator_t *world = &ompi_mpi_comm_world.comm;
    int n = ompi_comm_size(world);
    int me = ompi_comm_rank(world);
    *local_rank = 0;
    for (int r = 0; r < n; ++r) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(world, r);
        if (NULL == proc || (r != me && !OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags))) {
            continue;
        }
        *local_rank += r < me;
        char *cpus = NULL;
        int rc;
        OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, OFL_KEY_CPUSET, &proc->super.proc_name, &cpus,
                                       OFL_KEY_STRING);
        int unbound = OPAL_SUCCESS != rc || NULL == cpus
                      || 0 != hwloc_bitmap_list_sscanf(one, cpus) || hwloc_bitmap_iszero(one);
        free(cpus);
        if (unbound) {
            return 1;
        }
        hwloc_bitmap_or(used, used, one);
    }
    return 0;
}

/* The `pick`th core (in logical order) whose allowed PUs all lie in `spare`,
 * into `set`; with pick < 0, only count them. Returns the count, or the core. */
static int spare_cores(hwloc_topology_t topo, hwloc_const_bitmap_t allowed,
                       hwloc_const_bitmap_t spare, hwloc_bitmap_t one, int pick,
                       hwloc_bitmap_t set, hwloc_obj_t *core_out)
{
    int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    int k = 0;
    for (int i = 0; i < ncores; ++i) {
        hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (unsigned) i);
        hwloc_bitmap_and(one, core->cpuset, allowed);
        if (hwloc_bitmap_iszero(one) || !hwloc_bitmap_isincluded(one, spare)) {
            continue;
        }
        if (k++ == pick) {
            hwloc_bitmap_copy(set, one);
            *core_out = core;
            return k;
        }
    }
    return k;
}

/* With every rank bound: a core none of them uses, else their spare PUs, else
 * every allowed PU. */
static void place_beside(hwloc_topology_t topo, hwloc_const_bitmap_t allowed,
                         hwloc_const_bitmap_t used, hwloc_bitmap_t one, unsigned local_rank,
                         hwloc_bitmap_t set, char *why, size_t len)
{
    char pus[128];
    hwloc_bitmap_t spare = hwloc_bitmap_alloc();
    hwloc_bitmap_andnot(spare, allowed, used);
    int nfree = spare_cores(topo, allowed, spare, one, -1, NULL, NULL);
    if (nfree > 0) {
        hwloc_obj_t core = NULL;
        spare_cores(topo, allowed, spare, one, (int) (local_rank % (unsigned) nfree), set, &core);
        cpu_set_describe(set, pus, sizeof(pus));
        snprintf(why, len, "bound to core %u (PUs %s), which no local rank uses",
                 core->logical_index, pus);
    } else if (!hwloc_bitmap_iszero(spare)) {
        hwloc_bitmap_copy(set, spare);
        cpu_set_describe(set, pus, sizeof(pus));
        snprintf(why, len, "bound to PUs %s, which no local rank uses", pus);
    } else {
        hwloc_bitmap_copy(set, allowed);
        snprintf(why, len, "unbound: every core has a local rank bound to it");
    }
    hwloc_bitmap_free(spare);
}

/* Where the agent runs: a core that no rank on this node is bound to (spread
 * over such cores by local rank), else unbound — every allowed PU — when each
 * core has a rank or some local rank is not bound at all (it may run anywhere).
 * Ranks' bindings come from the launcher's per-process cpuset (PMIx). A cpuset
 * to free with hwloc_bitmap_free, or NULL (leave it as started); *why says
 * which and why, for verbose output. */
static hwloc_bitmap_t agent_cpuset(char *why, size_t len)
{
    if (!mca_coll_offload_component.params.agent_bind) {
        snprintf(why, len, "left as started (coll_offload_agent_bind=0)");
        return NULL;
    }
    if (OPAL_SUCCESS != opal_hwloc_base_get_topology() || NULL == opal_hwloc_topology) {
        snprintf(why, len, "left as started (no hwloc topology)");
        return NULL;
    }
    hwloc_topology_t topo = opal_hwloc_topology;
    hwloc_const_bitmap_t allowed = hwloc_topology_get_allowed_cpuset(topo);
    hwloc_bitmap_t used = hwloc_bitmap_alloc();
    hwloc_bitmap_t one = hwloc_bitmap_alloc();
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    unsigned local_rank = 0;   /* my place among this node's ranks */
    if (local_ranks_cpuset(used, one, &local_rank)) {
        hwloc_bitmap_copy(set, allowed);
        snprintf(why, len, "unbound: a rank on this node is not bound to cores");
    } else {
        place_beside(topo, allowed, used, one, local_rank, set, why, len);
    }
    hwloc_bitmap_free(used);
    hwloc_bitmap_free(one);
    return set;
}

/* What the starting thread hands to agent_created, and what it found. */
typedef struct {
    ofl_agent_t *agent;
    hwloc_bitmap_t set;           /* where the agent runs; NULL: as born */
    int bind_errno;               /* binding it failed: errno */
} agent_placement_t;

/* 1 while the agent may yet report the real-time class refused (set at start
 * when it was asked for; the first application thread to see the agent ready
 * clears it). */
static ofl_atomic_int32_t rt_watch;

/* In the starting thread, once the agent thread exists (it may not have run
 * yet): bind it from here. */
static void agent_created(void *ctx)
{
    agent_placement_t *pl = ctx;
    errno = 0;
    if (NULL != pl->set
        && 0 != hwloc_set_thread_cpubind(opal_hwloc_topology, pl->agent->thread, pl->set, 0)) {
        pl->bind_errno = 0 != errno ? errno : EINVAL;
    }
}

static int agent_report(ofl_agent_t *agent)
{
    if (!rt_watch) {
        return 0;
    }
    if (!ofl_agent_ready(agent)) {
        return 1;
    }
    if (opal_atomic_swap_32(&rt_watch, 0) && 0 != agent->rt_failed) {
        opal_show_help(OFL_GLUE_HELP_FILE, "agent-not-realtime", true,
                       strerror(agent->rt_failed));
    }
    return 0;
}

static void agent_start(ofl_agent_t *agent)
{
    const mca_coll_offload_params_t *p = &mca_coll_offload_component.params;
    int output = mca_coll_offload_component.output;
    char why[256];
    /* With coll_offload_agent_nap the agent naps between idle rounds instead of
     * yielding (from the first one: a yield can cost a whole time slice of a
     * rank computing on the same core), and asks for a scheduler slice as short
     * as a nap. */
    agent->yield_rounds = 0;
    agent->nap_ns = (long) (p->agent_nap * 1000.0);
    agent->slice_ns = agent->nap_ns;
    agent->sched_class = p->agent_preempt >= 2   ? OFL_AGENT_RT
                         : 1 == p->agent_preempt ? OFL_AGENT_NORMAL
                                                 : OFL_AGENT_BATCH;
    agent->kick_delay_ns = (long) (p->agent_kick_delay * 1000.0);
    agent->linger_ns = (long) (p->agent_linger * 1000.0);
    agent->linger_nap_ns = 200000;
    agent_placement_t pl = { .agent = agent, .set = agent_cpuset(why, sizeof(why)) };
    rt_watch = OFL_AGENT_RT == agent->sched_class;
    int err = ofl_agent_start(agent, agent_created, &pl);
    if (NULL != pl.set) {
        hwloc_bitmap_free(pl.set);
    }
    if (0 != err) {
        rt_watch = 0;
        opal_output(output,
                    "coll:offload: cannot start the progress agent (%s); nonblocking "
                    "collectives progress inside MPI calls only",
                    strerror(err));
    } else if (0 != pl.bind_errno) {
        opal_output_verbose(1, output,
                            "coll:offload: progress agent started, left as started: binding "
                            "it failed (%s; wanted %s)",
                            strerror(pl.bind_errno), why);
    } else {
        opal_output_verbose(1, output, "coll:offload: progress agent started, %s", why);
    }
}

/* atomic: the agent may have a message for an application thread to print
 * (agent_report); it never prints from its own thread */
static int report_due;

static void host_progress(void)
{
    opal_progress();
}

static int host_threads(void)
{
    return opal_using_threads();
}

void mca_coll_offload_agent_open(void)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    ofl_queue_opts_t opts = {
        .host_progress = host_progress,
        .threads = host_threads,
        .spin = ofl_glue_spin_before_yield(&c->params),
        .start_polls = c->params.start_polls > 0 ? (unsigned) c->params.start_polls : 0,
        .liveness_period_s = c->params.liveness_period,
        .watchdog_s = c->params.watchdog,
    };
    ofl_queue_open(&opts);
    if (c->params.agent && ofl_glue_oversubscribed()) {
        /* No core is idle: the agent could only take time from the ranks (np 4 on 2
         * cores: a 32 KiB MPI_Ibcast + MPI_Wait took 36.7 us with it, 13.5 without,
         * libnbc 13.4). */
        opal_output_verbose(1, c->output,
                            "coll:offload: no progress agent (more processes than cores): "
                            "nonblocking collectives progress inside MPI calls");
    } else if (c->params.agent) {
        agent_start(ofl_queue_agent());
        __atomic_store_n(&report_due, agent_report(ofl_queue_agent()), __ATOMIC_RELAXED);
    } else {
        opal_output_verbose(1, c->output,
                            "coll:offload: no progress agent (coll_offload_agent=0): "
                            "nonblocking collectives progress inside MPI calls");
    }
}

void mca_coll_offload_agent_poll(void)
{
    if (OPAL_UNLIKELY(__atomic_load_n(&report_due, __ATOMIC_RELAXED))) {
        __atomic_store_n(&report_due, agent_report(ofl_queue_agent()), __ATOMIC_RELAXED);
    }
}

void mca_coll_offload_agent_close(void)
{
    ofl_agent_t *agent = ofl_queue_agent();
    opal_output_verbose(1, mca_coll_offload_component.output,
                        "coll:offload: progress agent: %lu rounds, %lu sleeps",
                        (unsigned long) atomic_load(&agent->rounds),
                        (unsigned long) atomic_load(&agent->sleeps));
    ofl_queue_stop();
    /* joined: whatever it found is final (a job that ended before it ran) */
    agent_report(agent);
    __atomic_store_n(&report_due, 0, __ATOMIC_RELAXED);
}
