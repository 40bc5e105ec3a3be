/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — thin adapters to OPAL: the MCA variables and their storage,
 * the pvar and progress hooks, how a wait is configured. Nothing here knows
 * the component's modules; the component (ompi/) includes this, not the other
 * way round.
 */
#ifndef OFL_GLUE_H
#define OFL_GLUE_H

#include "ompi_config.h"

#include <stddef.h>

#include "engine/engine.h"
#include "opal/mca/mca.h"
#include "sched/policy.h"
#include "sched/rules.h"
#include "sched/sched.h"

/* What the MCA parameters say; read once at registration. */
typedef struct {
    int priority;
    int verbose;
    int reduce_tree;       /* ofl_tree_kind_t */
    int reduce_radix;
    int bcast_tree;
    int bcast_radix;
    size_t segment_size;
    int slots;
    size_t shm_budget;     /* bytes of shared memory per rank and communicator, at most */
    size_t shm_cap;        /* bytes of this job's segments on the node; 0: automatic */
    int exchange_max_ranks;             /* exchange programs up to this many ranks */
    char *policy_text[OFL_COLL_COUNT];  /* per-size algorithm tables (policy.h) */
    ofl_policy_t policy[OFL_COLL_COUNT];
    size_t max_bytes[OFL_COLL_COUNT];   /* above: fallback (barrier unused) */
    size_t hier_max_bytes[OFL_COLL_COUNT]; /* node-aware calls above: fallback */
    double watchdog;                    /* seconds; 0 = off */
    double liveness_period;
    int spin;
    int start_polls;                    /* small i/p calls: polls in the posting call */
    int agent;                          /* progress agent thread for nonblocking calls */
    int agent_bind;                     /* place it on a core no local rank uses */
    double agent_nap;                   /* us between idle rounds; 0: sched_yield */
    double agent_linger;                /* us the agent stays awake after its last work */
    int agent_preempt;                  /* 0: SCHED_BATCH agent; 1: normal; 2: SCHED_RR */
    double agent_kick_delay;            /* us an RT agent lets a poster return first */
    int hierarchy;                      /* node-aware collectives on multi-node comms */
    int ofi;                            /* leaders' level on the libfabric NIC */
    int ofi_after;                      /* ... from a communicator's n-th node-aware call */
    char *ofi_provider;
    char *ofi_fabric;                   /* "" : the provider's first non-loopback one */
    int ofi_native;                     /* leaders' calls as triggered operations */
    char *inject;                       /* tests only: STEP:RANK[:kill],... (see below) */
    char *device_assume;                /* tests only: "", none, converted or raw */
    char *built_for;                    /* tests only: "" or the release to take as built for */
    int agree_above;                    /* blocking fallbacks the policy chose wait for
                                           the call records above this many bytes */
    int repsum;                         /* reproducible float sums (info key overrides) */
    int repsum_two_pass_min;            /* reals from which blocking ones take two passes */
    int persistent_ordered;             /* persistent starts come in init order everywhere */
    int crowded_max;                    /* oversubscribed: reduce/bcast up to this go below */
    int check;                          /* full argument checks: every rank waits for all */
    char *rules_file;                   /* per-size advice for this node (sched/rules.h) */
    ofl_rules_t rules;                  /* what it says (n = 0: none in force) */
    char rules_path[512];               /* where it was read ("" : none) */
    uint64_t rules_digest;              /* of its rules as formatted (comments aside):
                                           what the ranks of a communicator compare */
    char rules_in_force[768];           /* "PATH (N rules)" or "none (why)" */
    char *rules_in_force_text;          /* the read-only MCA variable's storage */
} mca_coll_offload_params_t;

/* The rules file looked for when coll_offload_rules_file is empty, in the
 * installation's configuration directory. */
#define OFL_GLUE_RULES_NAME "coll-offload-rules.conf"

/* The component's help file, for opal_show_help: every warning and error it
 * shows users is a topic there (through mpirun's aggregation: the first message
 * of a topic in full, the others counted). */
#define OFL_GLUE_HELP_FILE "help-coll-offload.txt"
/* The stand-alone build installs the help file next to the component's shared
 * object: add that directory, found through `anchor` (any address inside the
 * object), to OPAL's help search path. Once, at component open. */
void ofl_glue_help_init(const void *anchor);

/* Register every MCA variable of the component `version` into *p. */
int ofl_glue_register_params(const mca_base_component_t *version, mca_coll_offload_params_t *p);
/* Read the rules file (coll_offload_rules_file, else the installation's default one if
 * it exists) into p->rules; one that cannot be read or parsed is reported, naming the
 * line, and no rule is in force. Registers coll_offload_rules_in_force, which says
 * what came of it. At component registration, so that ompi_info shows it. */
void ofl_glue_load_rules(const mca_base_component_t *version, mca_coll_offload_params_t *p);
/* Parse the *_policy strings; a bad one is reported and replaced by its default. */
int ofl_glue_parse_policies(mca_coll_offload_params_t *p);

/* An MPI_T counter (or, with `size`, a size) of `version` read from *storage. */
void ofl_glue_register_counter(const mca_base_component_t *version, const char *name,
                               const char *help, int size, unsigned long long *storage);

/* For ofl_wait_opts_t.progress: run OPAL's progress engine once. */
void ofl_glue_progress(void *ctx);

/* Polls to spin before each poll also yields: none when the node is
 * oversubscribed (Open MPI then sets yield_when_idle), else the MCA value. */
unsigned ofl_glue_spin_before_yield(const mca_coll_offload_params_t *p);

/* Does this node run more of the job's ranks than it has cores (Open MPI then
 * sets yield_when_idle)? */
int ofl_glue_oversubscribed(void);

/* How a blocking call waits: OPAL's progress, the spin above, the watchdog and
 * the liveness period of the MCA values. */
ofl_wait_opts_t ofl_glue_wait_opts(const mca_coll_offload_params_t *p);

#endif
