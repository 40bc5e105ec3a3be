/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — fault injection for tests (coll_offload_inject): the steps of
 * the set-up (and the staging of a bcast) where a rank can be made to fail, to
 * test the error paths.
 */
#include "coll_offload.h"
#include "coll_offload_inject.h"

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opal/util/output.h"

/* coll_offload_inject, parsed (tests only). */
static const char *const inject_names[OFL_INJECT_COUNT] = {
    [OFL_INJECT_NONE] = "",
    [OFL_INJECT_CREATE] = "create",
    [OFL_INJECT_NAME] = "name",
    [OFL_INJECT_BCAST] = "bcast",
    [OFL_INJECT_PROC] = "proc",
    [OFL_INJECT_ATTACH] = "attach",
    [OFL_INJECT_PROBE] = "probe",
    [OFL_INJECT_COMPILE] = "compile",
    [OFL_INJECT_AGREE] = "agree",
    [OFL_INJECT_STAGE] = "stage",
    [OFL_INJECT_HIER] = "hier",
};

#define INJECT_MAX 4

static struct {
    struct {
        ofl_inject_t step;
        int rank;
        int kill;
    } at[INJECT_MAX];
    int n;
    int setups;     /* set-ups finished in this process */
    int stages;     /* staging allocations tried in this process */
} inject;

/* One STEP:RANK[:kill] of the list; 0 or -1. */
static int inject_parse_one(const char *text, size_t len)
{
    const char *colon = memchr(text, ':', len);
    if (NULL == colon || INJECT_MAX == inject.n) {
        return -1;
    }
    ofl_inject_t step = OFL_INJECT_NONE;
    for (int k = OFL_INJECT_NONE + 1; k < OFL_INJECT_COUNT; ++k) {
        if (strlen(inject_names[k]) == (size_t) (colon - text)
            && 0 == strncmp(text, inject_names[k], (size_t) (colon - text))) {
            step = (ofl_inject_t) k;
        }
    }
    char rest[32];
    size_t rlen = len - (size_t) (colon + 1 - text);
    if (OFL_INJECT_NONE == step || 0 == rlen || rlen >= sizeof(rest)) {
        return -1;
    }
    memcpy(rest, colon + 1, rlen);
    rest[rlen] = '\0';
    char *end = NULL;
    long rank = strtol(rest, &end, 10);
    int kill = 0 == strcmp(end, ":kill");
    if (end == rest || rank < 0 || rank > INT32_MAX || (!kill && '\0' != *end)) {
        return -1;
    }
    inject.at[inject.n].step = step;
    inject.at[inject.n].rank = (int) rank;
    inject.at[inject.n].kill = kill;
    inject.n++;
    return 0;
}

int mca_coll_offload_inject_parse(const char *text)
{
    inject.n = 0;
    while (NULL != text && '\0' != *text) {
        const char *comma = strchr(text, ',');
        size_t len = NULL != comma ? (size_t) (comma - text) : strlen(text);
        if (0 != inject_parse_one(text, len)) {
            inject.n = 0;
            return -1;
        }
        text = NULL != comma ? comma + 1 : text + len;
    }
    return 0;
}

int mca_coll_offload_inject(ofl_inject_t step, int rank)
{
    if (OPAL_LIKELY(0 == inject.n)) {
        return 0;
    }
    /* Only the first set-up and the first staging, on every rank alike:
     * communicators made afterwards must work. */
    if (OFL_INJECT_STAGE == step ? 0 != inject.stages++ : 0 != inject.setups) {
        return 0;
    }
    for (int i = 0; i < inject.n; ++i) {
        if (step != inject.at[i].step || rank != inject.at[i].rank) {
            continue;
        }
        /* A trace of the test harness, not a message to users (coll_offload_inject is for
         * tests only): on this process's own stderr, verbatim for every injection (run.sh
         * reads each one), where opal_show_help would let the launcher show only the
         * first of the job's injections and count the rest. */
        opal_output(0, "coll:offload: coll_offload_inject: %s fails on rank %d%s",
                    inject_names[step], rank, inject.at[i].kill ? " (SIGKILL)" : "");
        if (inject.at[i].kill) {
            raise(SIGKILL);
        }
        return 1;
    }
    return 0;
}

void mca_coll_offload_inject_setup_done(void)
{
    inject.setups++;
}
