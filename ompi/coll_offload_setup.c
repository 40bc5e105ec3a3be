/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the collective, lazy set-up of a communicator at its first
 * offloaded call: the programs compiled, the NIC set up by its backend's
 * set-up (coll_offload_shm.c) and the module made ready, or disabled alike on
 * every rank.
 */
#include "coll_offload.h"
#include "coll_offload_inject.h"
#include "coll_offload_setup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

#define RULES_INFO_KEY "coll_offload_rules"

/* The rule for `coll` at this communicator's size, or NULL. */
static const ofl_rule_t *rule_for(const mca_coll_offload_module_t *m, ofl_coll_t coll)
{
    return NULL != m->rules ? ofl_rules_find(m->rules, (int) coll, m->size) : NULL;
}

/* Where this communicator's rules come from, for messages. */
static const char *rules_source(const mca_coll_offload_module_t *m)
{
    return NULL != m->own_rules ? "info key " RULES_INFO_KEY
                                : mca_coll_offload_component.params.rules_path;
}

/* This rank's rules for the communicator: the info key coll_offload_rules if the
 * communicator carries it (rule lines as in a rules file, without the format line,
 * separated by ';' or newlines), else the rules file's. A value that does not parse
 * is reported and the rules file's stay; the set-up then compares the choice. */
static void choose_rules(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm)
{
    const mca_coll_offload_params_t *p = &mca_coll_offload_component.params;
    free(m->own_rules);
    m->own_rules = NULL;
    m->rules = p->rules.n > 0 ? &p->rules : NULL;
    m->rules_digest = p->rules.n > 0 ? p->rules_digest : 0;
    /* 4.1 caps an info value at MPI_MAX_INFO_VAL (256); 5.0 does not */
    char value[OFL_RULES_LINE_MAX * 4];
    if (!ofl_info_get_string(comm->super.s_info, RULES_INFO_KEY, value, (int) sizeof(value))) {
        return;
    }
    static const char head[] = "format 1\n";
    size_t vlen = strlen(value);
    char *text = malloc(sizeof(head) + vlen);
    ofl_rules_t *own = calloc(1, sizeof(*own));
    int line = 0;
    char err[160];
    if (NULL == text || NULL == own) {
        snprintf(err, sizeof(err), "out of memory");
    } else {
        memcpy(text, head, sizeof(head) - 1);
        for (size_t i = 0; i < vlen; ++i) {
            text[sizeof(head) - 1 + i] = ';' == value[i] ? '\n' : value[i];
        }
        if (0 == ofl_rules_parse(text, sizeof(head) - 1 + vlen, own, &line, err, sizeof(err))) {
            free(text);
            m->own_rules = own;
            m->rules = own->n > 0 ? own : NULL;
            m->rules_digest = own->n > 0 ? ofl_rules_digest(own) : 0;
            return;
        }
    }
    /* line 1 of the info value is line 2 of the text parsed */
    opal_show_help(OFL_GLUE_HELP_FILE, "bad-rules-info", true, comm->c_name,
                   line > 1 ? line - 1 : 0, err);
    free(text);
    free(own);
}

/* Tree shape and radix: the rule's where it gives them (the set-up then checks that
 * every rank read the same file), else the MCA values. */
static void tree_of(const mca_coll_offload_module_t *m, ofl_coll_t coll, int kind, int radix,
                    ofl_tree_kind_t *kind_out, int *radix_out)
{
    const ofl_rule_t *r = rule_for(m, coll);
    *kind_out = (ofl_tree_kind_t) (NULL != r && r->tree >= 0 ? r->tree : kind);
    *radix_out = NULL != r && r->radix > 0 ? r->radix : radix;
}

static int compile_all(mca_coll_offload_module_t *m)
{
    const mca_coll_offload_params_t *p = &mca_coll_offload_component.params;
    ofl_progset_params_t pp = {
        .slots = p->slots,
        .exchange_max_ranks = p->exchange_max_ranks,
    };
    tree_of(m, OFL_COLL_REDUCE, p->reduce_tree, p->reduce_radix, &pp.reduce_kind,
            &pp.reduce_radix);
    tree_of(m, OFL_COLL_BCAST, p->bcast_tree, p->bcast_radix, &pp.bcast_kind, &pp.bcast_radix);
    return ofl_progset_compile(&m->progs, m->rank, m->size, &pp);
}

static void dump_programs(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (NULL == f) {
        return;
    }
    fprintf(f, "coll:offload: %s (cid %u) rank %d programs:\n", comm->c_name,
            OFL_COMM_CID(comm), m->rank);
    ofl_progset_dump(&m->progs, f);
    fclose(f);
    opal_output(mca_coll_offload_component.output, "%s", text);
    free(text);
}
/* The NIC and this process's count of its shared memory, given back (the module's
 * destructor, and a set-up that ends without a NIC). */
void mca_coll_offload_release_nic(mca_coll_offload_module_t *m)
{
    if (0 != m->shm_share) {
        __atomic_fetch_sub(&mca_coll_offload_component.shm_bytes,
                           (unsigned long long) m->shm_share, __ATOMIC_RELAXED);
        m->shm_share = 0;
    }
    if (NULL != m->nic) {
        m->nic->ops->close(m->nic);
        m->nic = NULL;
    }
    ofl_progset_free(&m->progs);
    ofl_edges_fini(&m->edges);
}

/* The agreement failed here, so the others may have decided to offload: mark
 * the NIC failed (their first call then fails promptly instead of waiting for
 * us) and return the error. */
static int setup_failed(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm, int rc)
{
    ofl_nic_poison_self(m->nic);
    mca_coll_offload_release_nic(m);
    m->state = OFL_MOD_DISABLED;
    opal_show_help(OFL_GLUE_HELP_FILE, "setup-failed", true, comm->c_name, m->rank, rc);
    return rc;
}

/* Collective: every rank of comm calls this at the same (first offloaded) call;
 * every outcome is the same on every rank. */
int mca_coll_offload_setup(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    const mca_coll_offload_params_t *p = &c->params;
    choose_rules(m, comm);
    int local_ok = 0 == ofl_edges_init(&m->edges, m->size) && 0 == compile_all(m);
    if (local_ok && mca_coll_offload_inject(OFL_INJECT_COMPILE, m->rank)) {
        local_ok = 0;
    }
    if (!local_ok) {
        opal_output_verbose(1, c->output, "coll:offload: %s: cannot compile the programs",
                            comm->c_name);
    }
    int streams = local_ok ? ofl_progset_inbound(&m->progs) : 0;
    if (streams < 0) {
        local_ok = 0;
        streams = 0;
    }
    int ready = 0;
    int rc = mca_coll_offload_shm_setup(m, comm, local_ok, streams, &ready);
    if (OMPI_SUCCESS != rc) {
        return setup_failed(m, comm, rc);
    }
    if (!ready) {
        mca_coll_offload_release_nic(m);
        m->state = OFL_MOD_DISABLED;
        return OMPI_SUCCESS;
    }
    /* every rank has the same rules (the set-up compared them): their policies from
     * the next call on, on every rank */
    for (int k = 0; k < OFL_COLL_COUNT; ++k) {
        const ofl_rule_t *r = rule_for(m, (ofl_coll_t) k);
        if (NULL != r && r->has_policy) {
            m->choice.table[k] = &r->policy;
        }
        if (NULL != r && p->verbose >= 1 && 0 == m->rank) {
            char text[256];
            ofl_rules_format(r, text, sizeof(text));
            opal_output(c->output, "coll:offload: %s (%d ranks): %s line %d in force: %s",
                        comm->c_name, m->size, rules_source(m),
                        r->line - (NULL != m->own_rules), text);
        }
    }
    ofl_choice_settle(&m->choice);
    m->state = OFL_MOD_READY;
    m->board = ofl_board_fits(m->nic, 0) && m->size <= p->exchange_max_ranks;
    memset(&m->board_state, 0, sizeof(m->board_state));
    m->wait_opts = ofl_glue_wait_opts(p);
    if (p->verbose >= 50) {
        dump_programs(m, comm);
    }
    return OMPI_SUCCESS;
}
