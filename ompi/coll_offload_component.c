/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the MCA component: parameters, pvars, and which communicators
 * get a module.
 */
#include "coll_offload.h"
#include "coll_offload_device.h"
#include "coll_offload_inject.h"
#include "coll_offload_nb.h"
#include "coll_offload_types.h"

#include <stdio.h>
#include <string.h>

#include "glue.h"
#include "ompi/proc/proc.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

static int offload_register(void);
static int offload_open(void);
static int offload_close(void);

mca_coll_offload_component_t mca_coll_offload_component = {
    .super = {
        .collm_version = {
            OFL_COLL_BASE_VERSION,
            .mca_component_name = "offload",
            MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
            .mca_open_component = offload_open,
            .mca_close_component = offload_close,
            .mca_register_component_params = offload_register,
        },
        .collm_data = {
            MCA_BASE_METADATA_PARAM_CHECKPOINT
        },
        .collm_init_query = mca_coll_offload_init_query,
        .collm_comm_query = mca_coll_offload_comm_query,
    },
    .output = -1,
};

/* The component's MPI_T counters (coll_offload_<coll>_offloaded/_fallback, their
 * nonblocking and persistent forms, ofi_*, shm_*). */
static int register_pvars(mca_coll_offload_component_t *c)
{
    const mca_base_component_t *v = &c->super.collm_version;
    for (int k = 0; k < OFL_COLL_COUNT; ++k) {
        const char *coll = ofl_coll_name((ofl_coll_t) k);
        char name[64], help[320];
        snprintf(name, sizeof(name), "%s_offloaded", coll);
        snprintf(help, sizeof(help), "Number of MPI_%s calls run as descriptor programs", coll);
        ofl_glue_register_counter(v, name, help, 0, &c->offloaded[k]);
        snprintf(name, sizeof(name), "%s_fallback", coll);
        snprintf(help, sizeof(help), "Number of MPI_%s calls handed to the fallback component",
                 coll);
        ofl_glue_register_counter(v, name, help, 0, &c->fallback[k]);

        snprintf(name, sizeof(name), "i%s_offloaded", coll);
        snprintf(help, sizeof(help), "Number of MPI_I%s calls run as descriptor programs", coll);
        ofl_glue_register_counter(v, name, help, 0, &c->nb_offloaded[OFL_KIND_NONBLOCKING][k]);
        snprintf(name, sizeof(name), "i%s_fallback", coll);
        snprintf(help, sizeof(help),
                 "Number of MPI_I%s calls handed to the fallback component's nonblocking one",
                 coll);
        ofl_glue_register_counter(v, name, help, 0, &c->nb_fallback[OFL_KIND_NONBLOCKING][k]);

        snprintf(name, sizeof(name), "p%s_offloaded", coll);
        snprintf(help, sizeof(help),
                 "Number of MPI_Start(all)s of persistent %s requests run as descriptor "
                 "programs (one per start)", coll);
        ofl_glue_register_counter(v, name, help, 0, &c->nb_offloaded[OFL_KIND_PERSISTENT][k]);
        snprintf(name, sizeof(name), "p%s_fallback", coll);
        snprintf(help, sizeof(help),
                 "Number of persistent %s requests (MPIX_%s_init) handed to the fallback "
                 "component (one per init), and of starts of requests made before the "
                 "communicator was set up that still ran on the fallback (one per start)",
                 coll, coll);
        ofl_glue_register_counter(v, name, help, 0, &c->nb_fallback[OFL_KIND_PERSISTENT][k]);
    }
    ofl_glue_register_counter(v, "ofi_writes",
                              "RMA writes the libfabric NIC sent between nodes (node leaders "
                              "only): items and credits of the leaders' descriptor programs",
                              0, &c->ofi_writes);
    ofl_glue_register_counter(v, "ofi_bytes",
                              "Bytes the libfabric NIC sent between nodes (node leaders only)", 0,
                              &c->ofi_bytes);
    ofl_glue_register_counter(v, "ofi_triggered",
                              "Triggered operations (fi_trigger(3): atomics fired by a counter "
                              "threshold) the node leaders posted for native collectives "
                              "(coll_offload_ofi_native)",
                              0, &c->ofi_triggered);
    ofl_glue_register_counter(v, "shm_bytes",
                              "Bytes of node shared memory this process accounts for its "
                              "communicators: its share of each segment (what the segment can "
                              "ever touch divided by its ranks), counted against its part of "
                              "coll_offload_shm_cap",
                              1, &c->shm_bytes);
    ofl_glue_register_counter(v, "shm_refused",
                              "Communicators that use the fallback component because their "
                              "shared memory would have passed coll_offload_shm_cap on some rank",
                              0, &c->shm_refused);
    return OMPI_SUCCESS;
}

static int offload_register(void)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    int rc = ofl_glue_register_params(&c->super.collm_version, &c->params);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    /* the rules file is read here, not at open, so that ompi_info shows what came of it */
    ofl_glue_help_init(&mca_coll_offload_component);
    ofl_glue_load_rules(&c->super.collm_version, &c->params);
    return register_pvars(c);
}

/* "MAJOR.MINOR.RELEASE" of an Open MPI version text at `at` (the library's "Open MPI
 * v4.1.4, package: ..." from its "v", or a parameter's value): 1 when all three parse. */
static int parse_release(const char *at, int v[3])
{
    return NULL != at && 3 == sscanf(at, "%d.%d.%d", &v[0], &v[1], &v[2]);
}

/* The component reads Open MPI's internal structures as the headers of the release it was
 * compiled against lay them out; the framework checks only the coll interface's version,
 * which stays the same across releases whose structures differ. So it runs only inside
 * that same release (major.minor.release), and says so where it declines. 1: it matches. */
static int release_matches(const mca_coll_offload_params_t *p)
{
    int built[3] = { OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION };
    int running[3];
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    if (NULL != p->built_for && '\0' != p->built_for[0] && !parse_release(p->built_for, built)) {
        return 1;   /* a test parameter that does not parse: the real release stands */
    }
    (void) MPI_Get_library_version(lib, &len);
    const char *v = strstr(lib, " v");
    if (!parse_release(NULL != v ? v + 2 : NULL, running)) {
        return 1;   /* an Open MPI that words its version otherwise: nothing to compare */
    }
    if (built[0] == running[0] && built[1] == running[1] && built[2] == running[2]) {
        return 1;
    }
    char b[48], r[48];
    snprintf(b, sizeof(b), "%d.%d.%d", built[0], built[1], built[2]);
    snprintf(r, sizeof(r), "%d.%d.%d", running[0], running[1], running[2]);
    opal_show_help(OFL_GLUE_HELP_FILE, "release-mismatch", true, b, r, lib);
    return 0;
}

static int offload_open(void)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    if (!release_matches(&c->params)) {
        /* declined: the framework leaves the component out, the layer below runs */
        return OMPI_ERR_NOT_SUPPORTED;
    }
    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->params.verbose);
    if (0 != mca_coll_offload_inject_parse(c->params.inject)) {
        opal_show_help(OFL_GLUE_HELP_FILE, "bad-inject", true, c->params.inject);
    }
    return ofl_glue_parse_policies(&c->params);
}

static int offload_close(void)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    /* Communicators are gone by now: stop the agent before anything else. */
    mca_coll_offload_repsum_close();
    mca_coll_offload_nb_close();
    if (c->params.verbose > 0) {
        for (int k = 0; k < OFL_COLL_COUNT; ++k) {
            if (c->offloaded[k] || c->fallback[k]) {
                opal_output(c->output, "coll:offload: %s: %llu offloaded, %llu fallback",
                            ofl_coll_name((ofl_coll_t) k), c->offloaded[k], c->fallback[k]);
            }
            for (int kind = OFL_KIND_NONBLOCKING; kind < OFL_KIND_COUNT; ++kind) {
                unsigned long long off = c->nb_offloaded[kind][k];
                unsigned long long fb = c->nb_fallback[kind][k];
                if (off || fb) {
                    opal_output(c->output, "coll:offload: %s%s: %llu offloaded, %llu fallback",
                                OFL_KIND_NONBLOCKING == kind ? "i" : "p",
                                ofl_coll_name((ofl_coll_t) k), off, fb);
                }
            }
        }
    }
    if (c->output >= 0) {
        opal_output_close(c->output);
        c->output = -1;
    }
    return OMPI_SUCCESS;
}

int mca_coll_offload_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void) enable_progress_threads;
    (void) enable_mpi_threads;
    return OMPI_SUCCESS;
}

static int all_on_this_node(struct ompi_communicator_t *comm)
{
    int size = ompi_comm_size(comm);
    for (int r = 0; r < size; ++r) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(comm, r);
        if (NULL == proc || !OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags)) {
            return 0;
        }
    }
    return 1;
}

/* The datatype table reads the predefined datatypes' layout, which Open MPI 5
 * fills in after the coll framework is opened: build it at the first query. */
static void types_init_once(void)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    mca_coll_offload_types_init();
    if (0 != mca_coll_offload_types_overflow()) {
        opal_output_verbose(1, c->output,
                            "coll:offload: %d predefined datatype(s) share an internal id with "
                            "too many others and are never offloaded",
                            mca_coll_offload_types_overflow());
    }
}

mca_coll_base_module_t *mca_coll_offload_comm_query(struct ompi_communicator_t *comm,
                                                    int *priority)
{
    /* once per process; comm_query runs in application threads only */
    static opal_mutex_t types_lock = OPAL_MUTEX_STATIC_INIT;
    static ofl_atomic_int32_t types_done;
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    if (OPAL_UNLIKELY(!types_done)) {
        OPAL_THREAD_LOCK(&types_lock);
        if (!types_done) {
            types_init_once();
            mca_coll_offload_device_init(&c->params, c->output);
            opal_atomic_wmb();
            types_done = 1;
        }
        OPAL_THREAD_UNLOCK(&types_lock);
    }
    if (c->params.priority < 0) {
        return NULL;
    }
    if (OMPI_COMM_IS_INTER(comm)) {
        opal_output_verbose(10, c->output, "coll:offload: %s: inter-communicator, not offered",
                            comm->c_name);
        return NULL;
    }
    /* The software NIC lives in one node's shared memory: a communicator that
     * spans nodes gets the node-aware module, which runs the software NIC on
     * each node's part (all ranks agree on this, since locality is symmetric). */
    if (!all_on_this_node(comm)) {
        if (c->params.hierarchy) {
            opal_output_verbose(10, c->output, "coll:offload: %s: spans nodes, node-aware",
                                comm->c_name);
            return mca_coll_offload_hier_query(comm, priority);
        }
        opal_output_verbose(10, c->output, "coll:offload: %s: spans nodes, not offered "
                            "(coll_offload_hierarchy=0)", comm->c_name);
        return NULL;
    }
    mca_coll_offload_module_t *m = OBJ_NEW(mca_coll_offload_module_t);
    if (NULL == m) {
        return NULL;
    }
    *priority = c->params.priority;
    m->rank = ompi_comm_rank(comm);
    m->size = ompi_comm_size(comm);
    m->choice.ranks = m->size;
    ofl_choice_settle(&m->choice);
    return &m->super;
}
