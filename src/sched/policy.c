/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — per-size algorithm policy (see policy.h).
 */
#include "sched/policy.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const alg_names[] = { "fallback", "tree", "exchange", "split", "get",
                                         "board" };

/* Measured on one node (docs/performance.md): the board below 256 bytes; allreduce
 * the one-step exchange to 16 KiB, segment ownership above; reduce the tree except
 * 32-256 KiB, where tuned's led on the Intel machine the tables come from; bcast the
 * tree to 16 KiB, the children reading the root's buffer above; barrier the board. */
static const char *const default_policy[OFL_COLL_COUNT] = {
    /* in ofl_coll_t's order */
    "board:256,exchange:16k,split",
    "board:256,tree:32k,fallback:256k,tree",
    "board:256,tree:16k,get",
    "board",
};

const char *ofl_policy_default(int coll)
{
    return coll >= 0 && coll < OFL_COLL_COUNT ? default_policy[coll] : NULL;
}

const char *ofl_alg_name(ofl_alg_t alg)
{
    return (unsigned) alg < sizeof(alg_names) / sizeof(alg_names[0]) ? alg_names[alg] : "?";
}

static int parse_size(const char *s, size_t len, uint64_t *out)
{
    char buf[32];
    if (0 == len || len >= sizeof(buf)) {
        return -1;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    /* strtoull would take leading blanks and a sign (" -1" is UINT64_MAX) */
    if (!isdigit((unsigned char) buf[0])) {
        return -1;
    }
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    if (errno || end == buf) {
        return -1;
    }
    unsigned shift = 0;
    switch (tolower((unsigned char) *end)) {
    case '\0':
        break;
    case 'k':
        shift = 10;
        end++;
        break;
    case 'm':
        shift = 20;
        end++;
        break;
    case 'g':
        shift = 30;
        end++;
        break;
    default:
        return -1;
    }
    /* UINT64_MAX itself means "unbounded": a written size must stay below it */
    if ('\0' != *end || v > (UINT64_MAX >> shift) || ((uint64_t) v << shift) == UINT64_MAX) {
        return -1;
    }
    *out = (uint64_t) v << shift;
    return 0;
}

int ofl_policy_parse(const char *text, ofl_policy_t *policy, char *err, size_t errlen)
{
    memset(policy, 0, sizeof(*policy));
    if (NULL == text || '\0' == *text) {
        snprintf(err, errlen, "empty policy");
        return -1;
    }
    const char *p = text;
    uint64_t prev = 0;
    while (1) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t) (comma - p) : strlen(p);
        const char *colon = memchr(p, ':', len);
        size_t nlen = colon ? (size_t) (colon - p) : len;
        int alg = -1;
        for (int a = 0; a < (int) (sizeof(alg_names) / sizeof(alg_names[0])); ++a) {
            if (strlen(alg_names[a]) == nlen && 0 == strncmp(p, alg_names[a], nlen)) {
                alg = a;
            }
        }
        if (alg < 0) {
            snprintf(err, errlen,
                     "unknown algorithm '%.*s' (fallback, tree, exchange, split, get, board)",
                     (int) nlen, p);
            return -1;
        }
        if (policy->n >= OFL_POLICY_MAX_RULES) {
            snprintf(err, errlen, "more than %d entries", OFL_POLICY_MAX_RULES);
            return -1;
        }
        uint64_t max = UINT64_MAX;
        if (colon) {
            if (0 != parse_size(colon + 1, len - nlen - 1, &max)) {
                snprintf(err, errlen, "bad size in '%.*s'", (int) len, p);
                return -1;
            }
            if (policy->n > 0 && max <= prev) {
                snprintf(err, errlen, "sizes must increase ('%.*s')", (int) len, p);
                return -1;
            }
        } else if (comma) {
            snprintf(err, errlen, "only the last entry may omit its size ('%.*s')", (int) len,
                     p);
            return -1;
        }
        policy->rule[policy->n].alg = (ofl_alg_t) alg;
        policy->rule[policy->n].max_bytes = max;
        policy->n++;
        prev = max;
        if (!comma) {
            break;
        }
        p = comma + 1;
    }
    return 0;
}
