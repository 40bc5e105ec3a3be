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
#include <limits.h>
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
      "1: MPI_SUM of float and double types bitwise reproducible whatever the ranks, data "
      "distribution and algorithm (within 1 ulp of the exact sum); 0: ordinary sums. The "
      "info key coll_offload_repsum overrides it per communicator" },
    { "repsum_two_pass_min", VAR_INT, OPAL_INFO_LVL_5, PARAM(repsum_two_pass_min),
      "Reproducible sums: blocking reductions of at least this many reals take the two-pass "
      "form (18 instead of 32 bytes per real, same bits); -1: never" },
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
      "Largest segment in bytes (a mailbox slot): large messages are cut into segments that "
      "are combined and forwarded one by one" },
    { "shm_budget", VAR_SIZE, OPAL_INFO_LVL_4, PARAM(shm_budget),
      "Bytes of node shared memory a communicator may use per rank; one that cannot fit "
      "uses the fallback component" },
    { "shm_cap", VAR_SIZE, OPAL_INFO_LVL_4, PARAM(shm_cap),
      "Bytes of node shared memory all of this job's communicators may use together on a "
      "node (0: a quarter of /dev/shm); beyond it, new communicators use the fallback "
      "component" },
    { "slots", VAR_INT, OPAL_INFO_LVL_5, PARAM(slots),
      "Mailbox slots per stream (a power of two; others are rounded up): items a "
      "sender may run ahead of its receiver" },
    { "exchange_max_ranks", VAR_INT, OPAL_INFO_LVL_5, PARAM(exchange_max_ranks),
      "Largest communicator that may use the one-step exchange (and the board) for "
      "allreduce and barrier" },
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
      "Polls a small nonblocking or persistent collective makes for its peers before "
      "MPI_I<coll>/MPI_Start returns (0: return at once)" },
    { "agree_above", VAR_INT, OPAL_INFO_LVL_6, PARAM(agree_above),
      "Bytes above which a blocking call handed down for its arguments (op, datatype, "
      "size, policy) first waits for every rank's call record (mismatched arguments then "
      "give MPI_ERR_ARG on every rank); -1: never, such calls cost what the layer below "
      "costs. Calls handed down because the NIC is not ready always wait" },
    { "agent", VAR_INT, OPAL_INFO_LVL_5, PARAM(agent),
      "Start a progress agent thread (one per process) at the first nonblocking or "
      "persistent collective, so those progress while the application computes; "
      "0: they progress only inside MPI calls" },
    { "check", VAR_INT, OPAL_INFO_LVL_4, PARAM(check),
      "1: full argument checking (every reduce, bcast and handed-down call waits for every "
      "rank's call record; a synchronisation per call); 0: the checks that cost no wait" },
    { "rules_file", VAR_STRING, OPAL_INFO_LVL_4, PARAM(rules_file),
      "Rules file from coll-offload-tune (docs/rules-format.md): per communicator size, "
      "the policy, tree and radix to use; empty: etc/" OFL_GLUE_RULES_NAME " of the "
      "installation if present" },
    { "crowded_max", VAR_INT, OPAL_INFO_LVL_5, PARAM(crowded_max),
      "Where ranks outnumber a node's cores, reduces and bcasts up to this many bytes go to "
      "the layer below (faster there); -1: never" },
    { "persistent_ordered", VAR_INT, OPAL_INFO_LVL_4, PARAM(persistent_ordered),
      "1: assume persistent collectives are started in the same order on every rank, so "
      "they run on the NIC; 0: only on communicators asserting "
      "mpi_assert_strict_persistent_collective_ordering" },
    { "agent_bind", VAR_INT, OPAL_INFO_LVL_6, PARAM(agent_bind),
      "1: bind the progress agent to a core that no rank on the node is bound to, when "
      "there is one, otherwise let it run on any core; 0: leave it where it started "
      "(inheriting the rank's binding)" },
    { "agent_nap", VAR_DOUBLE, OPAL_INFO_LVL_6, PARAM(agent_nap),
      "Microseconds the progress agent sleeps at most between idle rounds while collectives "
      "are outstanding (0: poll, yielding)" },
    { "hierarchy", VAR_INT, OPAL_INFO_LVL_5, PARAM(hierarchy),
      "1: node-aware collectives on communicators spanning nodes (node members through the "
      "software NIC, leaders through the layer below or libfabric); 0: leave them to other "
      "components" },
    { "ofi", VAR_INT, OPAL_INFO_LVL_5, PARAM(ofi),
      "1: the node leaders' level of node-aware allreduce and barrier runs on the libfabric "
      "NIC where every leader can open it; 0 (default): the layer below" },
    { "ofi_after", VAR_INT, OPAL_INFO_LVL_6, PARAM(ofi_after),
      "Node-aware calls on a communicator before its leaders open the libfabric NIC (rarely "
      "used communicators never pay for it)" },
    { "ofi_native", VAR_INT, OPAL_INFO_LVL_6, PARAM(ofi_native),
      "1: where the provider offers triggered atomics and the node count is a power of two, "
      "the leaders' small allreduce and barrier are posted whole as triggered operations; "
      "0: software triggering" },
    { "inject", VAR_STRING, OPAL_INFO_LVL_9, PARAM(inject),
      "For tests only: STEP:RANK[:kill],... makes set-up steps fail on chosen ranks (see "
      "docs/parameters.md); empty: nothing injected" },
    { "device_assume", VAR_STRING, OPAL_INFO_LVL_9, PARAM(device_assume),
      "For tests only: none, converted or raw makes the process act as if device memory "
      "could (raw) or could only after a converting component (converted) reach it; empty: "
      "as the accelerator framework says" },
    { "built_for", VAR_STRING, OPAL_INFO_LVL_9, PARAM(built_for),
      "For tests only: MAJOR.MINOR.RELEASE makes the component take itself as built for that "
      "Open MPI release (it declines to run inside another); empty: the release it was "
      "compiled against" },
    { "ofi_provider", VAR_STRING, OPAL_INFO_LVL_5, PARAM(ofi_provider),
      "libfabric provider of the leaders' level; empty: the first with triggered atomics, "
      "else the first with RDM, RMA and remote-write counters (never shm)" },
    { "ofi_fabric", VAR_STRING, OPAL_INFO_LVL_5, PARAM(ofi_fabric),
      "libfabric fabric (for sockets/tcp: the subnet, e.g. 198.51.100.0/24) of the leaders' "
      "level; empty: the provider's first one that is not loopback" },
    { "agent_preempt", VAR_INT, OPAL_INFO_LVL_6, PARAM(agent_preempt),
      "Scheduling class of the progress agent: 0 batch (never preempts a rank), 1 normal, 2 "
      "real-time (preempts a computing rank at once; needs CAP_SYS_NICE)" },
    { "agent_kick_delay", VAR_DOUBLE, OPAL_INFO_LVL_6, PARAM(agent_kick_delay),
      "With agent_preempt=2: microseconds the agent waits after a large post woke it, so "
      "that MPI_I<coll> returns first" },
    { "agent_linger", VAR_DOUBLE, OPAL_INFO_LVL_6, PARAM(agent_linger),
      "Microseconds the progress agent stays awake after its last collective completed "
      "before it sleeps (0: sleep at once)" },
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
        p->policy_text[k] = (char *) ofl_policy_default(k);
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
    p->device_assume = (char *) "";
    p->built_for = (char *) "";
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
            "Algorithm by message size: ALG[:MAXBYTES],... in increasing size order, the last "
            "entry open (ALG: board, exchange, split, tree, get, fallback; k/m/g suffixes), "
            "e.g. board:256,exchange:16k,split; see docs/parameters.md",
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
        /* What runs offloaded counts its elements in an int; anything larger (Open MPI
         * 6 passes the MPI-4 large counts down) goes to the fallback, decided by the
         * byte size every rank shares. */
        if (p->max_bytes[k] > (size_t) INT_MAX) {
            p->max_bytes[k] = (size_t) INT_MAX;
        }
        if (p->hier_max_bytes[k] > (size_t) INT_MAX) {
            p->hier_max_bytes[k] = (size_t) INT_MAX;
        }
        char err[160];
        if (0 != ofl_policy_parse(p->policy_text[k], &p->policy[k], err,
                                  sizeof(err))) {
            opal_show_help(OFL_GLUE_HELP_FILE, "bad-policy", true, ofl_coll_name((ofl_coll_t) k),
                           p->policy_text[k] ? p->policy_text[k] : "", err,
                           ofl_policy_default(k));
            ofl_policy_parse(ofl_policy_default(k), &p->policy[k], err, sizeof(err));
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
