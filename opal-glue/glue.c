/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — thin adapters to OPAL (see glue.h).
 */
#include "glue.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/mca/installdirs/installdirs.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

static const mca_base_var_enum_value_t tree_kinds[] = {
    { OFL_TREE_KARY, "kary" },
    { OFL_TREE_KNOMIAL, "knomial" },
    { OFL_TREE_FLAT, "flat" },
    { 0, NULL },
};

/* Per-size algorithm tables (see src/sched/policy.h), measured on one node. */
static const char *const default_policy[OFL_COLL_COUNT] = {
    [OFL_COLL_ALLREDUCE] = "board:256,exchange:16k,split",
    [OFL_COLL_REDUCE] = "board:256,tree:32k,fallback:256k,tree",
    [OFL_COLL_BCAST] = "board:256,tree:16k,get",
    [OFL_COLL_BARRIER] = "board",
};

static int reg_int(const mca_base_component_t *c, const char *name, const char *help,
                   mca_base_var_info_lvl_t lvl, int *storage)
{
    return mca_base_component_var_register(c, name, help,
                                           MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, lvl,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static int reg_size(const mca_base_component_t *c, const char *name, const char *help,
                    mca_base_var_info_lvl_t lvl, size_t *storage)
{
    return mca_base_component_var_register(c, name, help,
                                           MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, lvl,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static int reg_double(const mca_base_component_t *c, const char *name, const char *help,
                      mca_base_var_info_lvl_t lvl, double *storage)
{
    return mca_base_component_var_register(c, name, help,
                                           MCA_BASE_VAR_TYPE_DOUBLE, NULL, 0, 0, lvl,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static int reg_tree(const mca_base_component_t *c, const char *name, const char *help,
                    int *storage)
{
    mca_base_var_enum_t *kinds = NULL;
    int rc = mca_base_var_enum_create("coll_offload_tree_kinds", tree_kinds, &kinds);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    rc = mca_base_component_var_register(c, name, help,
                                         MCA_BASE_VAR_TYPE_INT, kinds, 0, 0, OPAL_INFO_LVL_5,
                                         MCA_BASE_VAR_SCOPE_READONLY, storage);
    OBJ_RELEASE(kinds);
    return rc;
}

/* One MCA variable of the params struct: its name, type, level, field, help. */
typedef enum { VAR_INT, VAR_SIZE, VAR_DOUBLE, VAR_TREE, VAR_STRING } var_kind_t;

typedef struct {
    const char *name;
    var_kind_t kind;
    mca_base_var_info_lvl_t lvl;   /* (trees: always level 5) */
    size_t offset;                 /* in mca_coll_offload_params_t */
    const char *help;
} glue_var_t;

#define PARAM(field) offsetof(mca_coll_offload_params_t, field)

/* Registered first, in this order (ompi_info lists them so). */
static const glue_var_t early_vars[] = {
    { "priority", VAR_INT, OPAL_INFO_LVL_6, PARAM(priority),
      "Priority of coll/offload (tuned is 30: the default makes offload the first choice)" },
    { "repsum", VAR_INT, OPAL_INFO_LVL_4, PARAM(repsum),
      "Reproducible sums: 1 makes MPI_SUM on float, double and their complex types "
      "bitwise identical whatever the number of ranks, the data's distribution over "
      "them, the algorithm, tree, radix or hierarchy (each value is carried as "
      "binned integers summed on the NIC and rounded once at the end; within 1 ulp "
      "of the exact sum, see the README for the cost). 0: ordinary sums. A "
      "communicator's info key coll_offload_repsum (\"true\"/\"false\") overrides "
      "this; every rank must say the same" },
    { "repsum_two_pass_min", VAR_INT, OPAL_INFO_LVL_5, PARAM(repsum_two_pass_min),
      "Reproducible sums: blocking MPI_Allreduce and MPI_Reduce of at least this many "
      "reals (complex values count two) on communicators of at most 128 ranks take the "
      "two-pass form (18 bytes per real on the wire instead of 32; bit-identical "
      "results). -1: never. Every rank must say the same" },
    { "verbose", VAR_INT, OPAL_INFO_LVL_9, PARAM(verbose),
      "Verbosity: 1 set-up and faults, 10 every offload/fallback decision, "
      "50 dump each rank's descriptor programs" },
    { "reduce_tree", VAR_TREE, OPAL_INFO_LVL_5, PARAM(reduce_tree),
      "Shape of the reduction tree (also carries allreduce/barrier results back): "
      "kary, knomial or flat" },
    { "reduce_radix", VAR_INT, OPAL_INFO_LVL_5, PARAM(reduce_radix),
      "Radix of the reduction tree (2..64; ignored by flat)" },
    { "bcast_tree", VAR_TREE, OPAL_INFO_LVL_5, PARAM(bcast_tree),
      "Shape of the broadcast tree: kary, knomial or flat" },
    { "bcast_radix", VAR_INT, OPAL_INFO_LVL_5, PARAM(bcast_radix),
      "Radix of the broadcast tree (2..64; ignored by flat)" },
    { "segment_size", VAR_SIZE, OPAL_INFO_LVL_5, PARAM(segment_size),
      "Bytes of a mailbox slot at most, the largest segment: messages are cut into "
      "segments (about 8 per message, at least 16 KiB, at most a slot) that are "
      "combined and forwarded one by one (pipelining); slots are smaller where "
      "coll_offload_shm_budget needs it" },
    { "shm_budget", VAR_SIZE, OPAL_INFO_LVL_4, PARAM(shm_budget),
      "Bytes of node shared memory a communicator may use per rank, at most: its "
      "segment's mailbox slots are sized so that header, counters, board and the "
      "slots of every stream a rank receives on, divided among its ranks, fit (the "
      "more ranks, the smaller the slots and the more segments a large message is "
      "cut into, never beyond coll_offload_segment_size); a communicator whose "
      "streams cannot have one page each within it uses the fallback component" },
    { "shm_cap", VAR_SIZE, OPAL_INFO_LVL_4, PARAM(shm_cap),
      "Bytes of node shared memory this job's communicators may use together on a "
      "node: each process counts its share of every communicator it sets up (the "
      "bound above, at most coll_offload_shm_budget) against this divided by the "
      "job's processes on the node; a communicator that would pass it on any rank "
      "uses the fallback component on every rank (one warning), and a freed one gives "
      "its share back. 0: a quarter of the size of /dev/shm" },
    { "slots", VAR_INT, OPAL_INFO_LVL_5, PARAM(slots),
      "Mailbox slots per stream (a power of two; others are rounded up): items a "
      "sender may run ahead of its receiver" },
    { "exchange_max_ranks", VAR_INT, OPAL_INFO_LVL_5, PARAM(exchange_max_ranks),
      "Communicators of at most this many ranks may use the one-step exchange for "
      "allreduce/barrier (every rank sends to every rank, all combine in rank order); "
      "larger ones use the trees where a policy says exchange" },
};

/* Registered after the per-collective policies and size limits, in this order. */
static const glue_var_t late_vars[] = {
    { "watchdog", VAR_DOUBLE, OPAL_INFO_LVL_4, PARAM(watchdog),
      "Seconds a collective may wait before it fails with an error naming the peers "
      "it waits for (debugging aid; 0 = wait for ever, since a late peer is legal)" },
    { "liveness_period", VAR_DOUBLE, OPAL_INFO_LVL_6, PARAM(liveness_period),
      "Seconds between checks, while waiting, that the awaited peer process lives" },
    { "spin", VAR_INT, OPAL_INFO_LVL_6, PARAM(spin),
      "Polls before a waiting rank also yields its core (0 when oversubscribed)" },
    { "start_polls", VAR_INT, OPAL_INFO_LVL_6, PARAM(start_polls),
      "A small nonblocking or persistent collective (up to 16 KiB) fires its first "
      "transfers in MPI_I<coll>/MPI_Start and polls this many times for the peers' "
      "before it returns, so that one whose peers are already there completes in the "
      "call (MPI_Wait then only finds it done); 0: return at once (as when "
      "oversubscribed or coll_offload_spin is 0)" },
    { "agree_above", VAR_INT, OPAL_INFO_LVL_6, PARAM(agree_above),
      "A blocking collective handed to the fallback on a communicator whose NIC is set "
      "up first waits until every rank has recorded the same call (collective, op, "
      "datatype, count, root), so that ranks passing different arguments, some of which "
      "offload the call, get MPI_ERR_ARG instead of waiting for each other for ever. "
      "Calls that the size policy hands down (coll_offload_<coll>_policy) wait so only "
      "above this many bytes; -1 (default): never (coll_offload_check=1 makes them "
      "wait): the policy chose the fallback because it is faster, and the wait would "
      "cost 3-6 percent (ranks can take different ways there only with different byte counts, "
      "an erroneous call that may then hang, as such a call can without coll/offload). "
      "Calls handed down for other reasons (user op, derived datatype, size cap, count "
      "0) always wait" },
    { "agent", VAR_INT, OPAL_INFO_LVL_5, PARAM(agent),
      "Start a progress agent thread (one per process) at the first nonblocking or "
      "persistent collective, so those progress while the application computes; "
      "0: they progress only inside MPI calls" },
    { "check", VAR_INT, OPAL_INFO_LVL_4, PARAM(check),
      "1: full argument checking, like a debug build's: every blocking reduce and bcast, "
      "and every blocking call handed to the layer below, first waits until every rank "
      "has recorded the same call (collective, op, datatype, size, root), so every rank of "
      "a call whose ranks passed different arguments gets MPI_ERR_ARG from that call; "
      "costs a synchronisation per reduce and bcast. 0: checks that add no wait (a rank "
      "whose part of a reduce or bcast only sends learns of a mismatch at its next "
      "collective on the communicator)" },
    { "rules_file", VAR_STRING, OPAL_INFO_LVL_4, PARAM(rules_file),
      "Rules file (written by coll-offload-tune; format: docs/rules-format.md): per "
      "communicator size, the policy, tree and radix in force instead of the *_policy, "
      "*_tree and *_radix values. Empty: the installation's etc/" OFL_GLUE_RULES_NAME
      " if present. A communicator's info key coll_offload_rules overrides it" },
    { "crowded_max", VAR_INT, OPAL_INFO_LVL_5, PARAM(crowded_max),
      "Where a communicator's node runs more ranks than it has cores, reduces and bcasts "
      "of up to this many bytes go to the layer below: its eager sends let a reduce's "
      "children and a bcast's root run ahead while ranks share a core, which measured "
      "2-5x faster there than the NIC's board and trees (np 4 on 2 cores); larger "
      "reduces that the size policy hands down run the tree instead (tuned's 32-512 KiB "
      "reduces took 1.1-3.8x the tree's time there); -1: neither" },
    { "persistent_ordered", VAR_INT, OPAL_INFO_LVL_4, PARAM(persistent_ordered),
      "1: assume that on every communicator all ranks start their persistent collectives "
      "in the same order, as the communicator info key "
      "mpi_assert_strict_persistent_collective_ordering=true asserts for one "
      "communicator; then persistent collectives run on the NIC. 0: MPI-4 lets ranks "
      "start them in different orders, so persistent collectives go to the layer below "
      "unless the communicator carries that key (Open MPI 4.1 cannot: its info keys are "
      "limited to 35 characters)" },
    { "agent_bind", VAR_INT, OPAL_INFO_LVL_6, PARAM(agent_bind),
      "1: bind the progress agent to a core that no rank on the node is bound to, when "
      "there is one, otherwise let it run on any core; 0: leave it where it started "
      "(inheriting the rank's binding)" },
    { "agent_nap", VAR_DOUBLE, OPAL_INFO_LVL_6, PARAM(agent_nap),
      "Microseconds the progress agent sleeps at most, while collectives are "
      "outstanding, between rounds that found nothing to do; an arrival of a peer's "
      "data for a large collective (its doorbell) or a new large post ends the sleep "
      "at once. 0: poll, yielding the core between rounds" },
    { "hierarchy", VAR_INT, OPAL_INFO_LVL_5, PARAM(hierarchy),
      "1: on communicators that span nodes, node-aware collectives: the ranks of a node "
      "combine through the software NIC to a node leader, leaders combine across nodes "
      "through the layer below (tuned over the network), the result comes back the same "
      "way; 0: leave such communicators to the other components" },
    { "ofi", VAR_INT, OPAL_INFO_LVL_5, PARAM(ofi),
      "1: the node leaders' level of node-aware collectives (allreduce, barrier) runs as "
      "a descriptor program on the libfabric NIC when the provider starts on every "
      "leader (else, with one warning, the layer below); 0 (default: with the software "
      "sockets provider it is far slower than tuned over tcp): always the layer below" },
    { "ofi_after", VAR_INT, OPAL_INFO_LVL_6, PARAM(ofi_after),
      "Node-aware calls on a communicator before its leaders open the libfabric NIC "
      "(endpoint, registered mailboxes): communicators used a few times never pay for "
      "it. With one rank per node, calls before that go to the layer below" },
    { "ofi_native", VAR_INT, OPAL_INFO_LVL_6, PARAM(ofi_native),
      "1: where the provider offers triggered atomics (FI_TRIGGER, FI_ATOMIC: sockets "
      "here, cxi on Slingshot) and the number of nodes is a power of two, the leaders' "
      "allreduce (up to 4096 bytes; sums and products, integer min/max/bitwise ops) and "
      "barrier are posted whole as triggered operations: the NIC combines and forwards, "
      "the host only posts and waits (recursive doubling, results identical on every "
      "rank); 0: the descriptor program with software triggering" },
    { "inject", VAR_STRING, OPAL_INFO_LVL_9, PARAM(inject),
      "For tests only: make steps of the first communicator set-up (or of the first "
      "staged bcast) fail on chosen ranks, to exercise the error paths. A comma-separated "
      "list (up to 4) of STEP:RANK[:kill], RANK a rank of that communicator, STEP one of "
      "create (the anonymous segment, rank 0: then a named one is tried), name (the named "
      "segment, rank 0), bcast (the bcast of where it is), proc (reopening it through "
      "/proc is refused: a named segment is used), attach, probe (the "
      "cross-memory read test), compile (the programs), agree (the agreement allreduce "
      "returns an error), stage (the staging allocation of a non-contiguous bcast or "
      "ibcast), hier (the node-aware set-up of a communicator spanning nodes: its "
      "allocations); with :kill the rank SIGKILLs itself right after the step instead. Empty "
      "(default): nothing is injected" },
    { "ofi_provider", VAR_STRING, OPAL_INFO_LVL_5, PARAM(ofi_provider),
      "libfabric provider of the leaders' level; empty (default): automatic, the first in "
      "libfabric's order that offers triggered atomics (cxi on Slingshot, sockets), else "
      "the first with RDM endpoints, RMA, remote-write counters (FI_RMA_EVENT) and ordered "
      "writes, never a node-local one (shm)" },
    { "ofi_fabric", VAR_STRING, OPAL_INFO_LVL_5, PARAM(ofi_fabric),
      "libfabric fabric (for sockets/tcp: the subnet, e.g. 198.51.100.0/24) of the leaders' "
      "level; empty: the provider's first one that is not loopback" },
    { "agent_preempt", VAR_INT, OPAL_INFO_LVL_6, PARAM(agent_preempt),
      "0: the progress agent runs in the SCHED_BATCH class: a wake-up never "
      "preempts a rank, so the agent takes idle cores at once and busy ones only at "
      "scheduler ticks (no stolen time inside MPI calls); 1: the normal class: it "
      "preempts as the fair scheduler sees fit, wherever the rank happens to be; 2: "
      "the real-time class (SCHED_RR, lowest priority; needs CAP_SYS_NICE or "
      "RLIMIT_RTPRIO, else a warning and 1): it always preempts a computing rank at "
      "once, so a collective's work runs during the application's computation even "
      "when no core is idle (the time is taken from the computation); it never "
      "spins, it sleeps when there is nothing to do" },
    { "agent_kick_delay", VAR_DOUBLE, OPAL_INFO_LVL_6, PARAM(agent_kick_delay),
      "With coll_offload_agent_preempt=2: microseconds the agent waits after a "
      "large post woke it before it works: it woke on the posting thread's core "
      "and preempted it inside MPI_I<coll>, which should return first (a context "
      "switch and back: a few us on bare metal, 10-20 in a virtual machine)" },
    { "agent_linger", VAR_DOUBLE, OPAL_INFO_LVL_6, PARAM(agent_linger),
      "Microseconds the progress agent stays awake after its last outstanding "
      "collective completed (napping 200 us at a time, checking for new work) before "
      "it sleeps until the next post wakes it: calls that follow each other closely "
      "then need no wake-up system call. 0: sleep at once" },
};

static void set_defaults(mca_coll_offload_params_t *p)
{
    p->priority = 40;
    p->verbose = 0;
    p->reduce_tree = OFL_TREE_KNOMIAL;
    p->reduce_radix = 4;
    p->bcast_tree = OFL_TREE_KNOMIAL;
    p->bcast_radix = 4;
    p->segment_size = 131072;
    p->slots = 4;
    p->shm_budget = 1u << 20;
    p->shm_cap = 0;
    p->exchange_max_ranks = 8;
    for (int k = 0; k < OFL_COLL_COUNT; ++k) {
        p->policy_text[k] = (char *) default_policy[k];
    }
    p->max_bytes[OFL_COLL_ALLREDUCE] = 16u << 20;
    p->max_bytes[OFL_COLL_REDUCE] = 16u << 20;
    p->max_bytes[OFL_COLL_BCAST] = 16u << 20;
    /* Measured on 2 hosts x 2 ranks: above these the leaders' single link
     * carries what tuned spreads over every rank's (allreduce 128 KiB: 0.7x,
     * bcast 64 KiB: 0.9x), while reduce gains at every size. */
    p->hier_max_bytes[OFL_COLL_ALLREDUCE] = 64u << 10;
    p->hier_max_bytes[OFL_COLL_REDUCE] = 16u << 20;
    p->hier_max_bytes[OFL_COLL_BCAST] = 32u << 10;
    p->watchdog = 0.0;
    p->liveness_period = 0.1;
    p->spin = 2000;
    p->start_polls = 64;
    p->agent = 1;
    p->agent_bind = 1;
    p->agent_nap = 50.0;
    p->agent_linger = 2000.0;
    p->agent_preempt = 0;
    p->agent_kick_delay = 20.0;
    p->hierarchy = 1;
    p->ofi = 0;
    p->ofi_after = 16;
    p->ofi_provider = (char *) "";
    p->ofi_native = 1;
    p->agree_above = -1;
    p->ofi_fabric = (char *) "";
    p->inject = (char *) "";
    p->repsum = 0;
    p->repsum_two_pass_min = 256;
    p->persistent_ordered = 0;
    p->crowded_max = 256;
    p->check = 0;
    p->rules_file = (char *) "";
}

static void register_vars(const mca_base_component_t *c, mca_coll_offload_params_t *p,
                          const glue_var_t *vars, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        const glue_var_t *v = &vars[i];
        void *storage = (char *) p + v->offset;
        switch (v->kind) {
        case VAR_INT:
            reg_int(c, v->name, v->help, v->lvl, storage);
            break;
        case VAR_SIZE:
            reg_size(c, v->name, v->help, v->lvl, storage);
            break;
        case VAR_DOUBLE:
            reg_double(c, v->name, v->help, v->lvl, storage);
            break;
        case VAR_TREE:
            reg_tree(c, v->name, v->help, storage);
            break;
        case VAR_STRING:
            mca_base_component_var_register(c, v->name, v->help, MCA_BASE_VAR_TYPE_STRING, NULL,
                                            0, 0, v->lvl, MCA_BASE_VAR_SCOPE_READONLY, storage);
            break;
        }
    }
}

/* Per collective: its size policy, and the size limits on a node and node-aware. */
static void register_sizes(const mca_base_component_t *c, mca_coll_offload_params_t *p)
{
    for (int k = 0; k < OFL_COLL_COUNT; ++k) {
        static const char *const names[OFL_COLL_COUNT] = {
            "allreduce_policy", "reduce_policy", "bcast_policy", "barrier_policy"
        };
        mca_base_component_var_register(
            c, names[k],
            "Algorithm by message size: comma-separated ALG[:MAXBYTES] in increasing size "
            "order; ALG: tree, fallback, exchange (allreduce/barrier; its bound applies to "
            "bytes x (ranks - 1), what each rank sends), split (allreduce), get (bcast, "
            "single copy), board (up to 448 bytes and 16 ranks: each rank's payload in "
            "cache lines only it writes; an allreduce reads every rank's, a reduce's root "
            "its children's, a bcast's receivers the root's); the last entry may omit its "
            "size; k/m/g suffixes. "
            "E.g. exchange:64k,split:4m,fallback",
            MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
            &p->policy_text[k]);
    }
    /* Size limits of the three collectives that move data, on a node and node-aware. */
    for (int k = 0; k < OFL_COLL_BARRIER; ++k) {
        static const char *const mpi[OFL_COLL_BARRIER] = { "MPI_Allreduce", "MPI_Reduce",
                                                           "MPI_Bcast" };
        char name[64], help[256];
        snprintf(name, sizeof(name), "%s_max_bytes", ofl_coll_name((ofl_coll_t) k));
        snprintf(help, sizeof(help),
                 "Largest %s (bytes) run offloaded; larger ones go to the fallback", mpi[k]);
        reg_size(c, name, help, OPAL_INFO_LVL_4, &p->max_bytes[k]);
        snprintf(name, sizeof(name), "hier_%s_max_bytes", ofl_coll_name((ofl_coll_t) k));
        snprintf(help, sizeof(help),
                 "Largest %s (bytes) on a communicator spanning nodes that runs node-aware; "
                 "larger ones go to the fallback, whose algorithms may use every rank's link "
                 "instead of the leaders' alone", mpi[k]);
        reg_size(c, name, help, OPAL_INFO_LVL_5, &p->hier_max_bytes[k]);
    }
}

int ofl_glue_register_params(const mca_base_component_t *c, mca_coll_offload_params_t *p)
{
    set_defaults(p);
    register_vars(c, p, early_vars, sizeof(early_vars) / sizeof(early_vars[0]));
    register_sizes(c, p);
    register_vars(c, p, late_vars, sizeof(late_vars) / sizeof(late_vars[0]));
    return OPAL_SUCCESS;
}

static int pvar_read(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    (void) obj;
    *(unsigned long long *) value = *(const unsigned long long *) pvar->ctx;
    return OPAL_SUCCESS;
}

void ofl_glue_help_init(const void *anchor)
{
    static int added;
    Dl_info info;
    if (added || 0 == dladdr(anchor, &info) || NULL == info.dli_fname) {
        return;
    }
    const char *slash = strrchr(info.dli_fname, '/');
    char *dir = NULL != slash ? strndup(info.dli_fname, (size_t) (slash - info.dli_fname)) : NULL;
    if (NULL != dir && OPAL_SUCCESS == opal_show_help_add_dir(dir)) {
        added = 1;
    }
    free(dir);
}

/* Read the file into p->rules; what came of it into p->rules_in_force. */
static void load_rules(mca_coll_offload_params_t *p)
{
    p->rules.n = 0;
    p->rules_path[0] = '\0';
    p->rules_digest = 0;
    int given = NULL != p->rules_file && '\0' != p->rules_file[0];
    char path[sizeof(p->rules_path)];
    if (given) {
        snprintf(path, sizeof(path), "%s", p->rules_file);
    } else if (NULL != opal_install_dirs.sysconfdir) {
        snprintf(path, sizeof(path), "%s/%s", opal_install_dirs.sysconfdir, OFL_GLUE_RULES_NAME);
    } else {
        snprintf(p->rules_in_force, sizeof(p->rules_in_force), "none");
        return;
    }
    FILE *f = fopen(path, "r");
    if (NULL == f) {
        if (given) {
            opal_show_help(OFL_GLUE_HELP_FILE, "rules-unreadable", true, path,
                           strerror(errno));
        }
        snprintf(p->rules_in_force, sizeof(p->rules_in_force), "none (%s: %s)", path,
                 strerror(errno));
        return;
    }
    /* A rules file is a few dozen lines; anything near the cap is not one. */
    size_t cap = 1 << 20, len = 0;
    char *text = malloc(cap);
    if (NULL != text) {
        len = fread(text, 1, cap, f);
    }
    int too_long = NULL != text && len == cap;
    fclose(f);
    int line = 0;
    char err[160];
    if (NULL == text || too_long) {
        snprintf(err, sizeof(err), "%s", NULL == text ? "out of memory" : "longer than 1 MiB");
    } else if (0 != ofl_rules_parse(text, len, &p->rules, &line, err, sizeof(err))) {
        p->rules.n = 0;
    } else {
        snprintf(p->rules_path, sizeof(p->rules_path), "%s", path);
        p->rules_digest = ofl_rules_digest(&p->rules);
        snprintf(p->rules_in_force, sizeof(p->rules_in_force), "%s (%d rules)", path,
                 p->rules.n);
        free(text);
        return;
    }
    opal_show_help(OFL_GLUE_HELP_FILE, "bad-rules", true, path, line, err);
    snprintf(p->rules_in_force, sizeof(p->rules_in_force), "none (%s line %d: %s)", path, line,
             err);
    free(text);
}

void ofl_glue_load_rules(const mca_base_component_t *c, mca_coll_offload_params_t *p)
{
    load_rules(p);
    /* What ompi_info and MPI_T show: set here, never by the user */
    p->rules_in_force_text = p->rules_in_force;
    mca_base_component_var_register(
        c, "rules_in_force",
        "The rules file in force and its number of rules, or 'none' and why (read-only; "
        "set from coll_offload_rules_file at start-up)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, MCA_BASE_VAR_FLAG_DEFAULT_ONLY, OPAL_INFO_LVL_4,
        MCA_BASE_VAR_SCOPE_CONSTANT, &p->rules_in_force_text);
}

int ofl_glue_parse_policies(mca_coll_offload_params_t *p)
{
    int slots = 1;
    while (slots < p->slots && slots < 1024) {
        slots *= 2;
    }
    p->slots = slots;
    for (int k = 0; k < OFL_COLL_COUNT; ++k) {
        char err[160];
        if (0 != ofl_policy_parse(p->policy_text[k], &p->policy[k], err,
                                  sizeof(err))) {
            opal_show_help(OFL_GLUE_HELP_FILE, "bad-policy", true, ofl_coll_name((ofl_coll_t) k),
                           p->policy_text[k] ? p->policy_text[k] : "", err,
                           default_policy[k]);
            ofl_policy_parse(default_policy[k], &p->policy[k], err, sizeof(err));
        }
    }
    return OPAL_SUCCESS;
}

void ofl_glue_register_counter(const mca_base_component_t *version, const char *name,
                               const char *help, int size, unsigned long long *storage)
{
    mca_base_component_pvar_register(version, name, help, OPAL_INFO_LVL_4,
                                     size ? MCA_BASE_PVAR_CLASS_SIZE : MCA_BASE_PVAR_CLASS_COUNTER,
                                     MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
                                     MCA_BASE_VAR_BIND_NO_OBJECT,
                                     MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
                                     pvar_read, NULL, NULL, storage);
}

void ofl_glue_progress(void *ctx)
{
    (void) ctx;
    opal_progress();
}

int ofl_glue_oversubscribed(void)
{
    return opal_progress_yield_when_idle ? 1 : 0;
}

unsigned ofl_glue_spin_before_yield(const mca_coll_offload_params_t *p)
{
    if (opal_progress_yield_when_idle) {
        return 0;
    }
    return p->spin > 0 ? (unsigned) p->spin : 0;
}

ofl_wait_opts_t ofl_glue_wait_opts(const mca_coll_offload_params_t *p)
{
    ofl_wait_opts_t opts = {
        .progress = ofl_glue_progress,
        .ctx = NULL,
        .spin_before_yield = ofl_glue_spin_before_yield(p),
        .timeout_s = p->watchdog,
        .liveness_period_s = p->liveness_period > 0 ? p->liveness_period : 0.1,
    };
    return opts;
}
