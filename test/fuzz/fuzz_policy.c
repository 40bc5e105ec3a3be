/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Fuzz the policy parser (src/sched/policy.c), which reads MCA strings: any
 * bytes, any length, any error buffer size.
 *
 * Oracles: no out-of-bounds access or undefined behaviour; an accepted policy
 * has 1..OFL_POLICY_MAX_RULES known algorithms with strictly increasing
 * bounds, only the last unbounded, and reads back the same when printed and
 * parsed again; a refused one says why in a terminated message that fits its
 * buffer.
 */
#include <inttypes.h>

#include "fuzz.h"
#include "sched/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (0 == size) {
        return 0;
    }
    size_t errlen = data[0] % 130;   /* 0 .. 129, small ones test truncation */
    char *text = malloc(size);       /* the rest, terminated */
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    char *err = malloc(errlen ? errlen : 1);
    memset(err, 0x5a, errlen ? errlen : 1);
    ofl_policy_t p;
    int rc = ofl_policy_parse(text, &p, err, errlen);
    FZ_ASSERT(0 == rc || -1 == rc, "parse: %d", rc);
    if (0 == rc) {
        FZ_ASSERT(p.n >= 1 && p.n <= OFL_POLICY_MAX_RULES, "%d rules", p.n);
        char again[OFL_POLICY_MAX_RULES * 32] = "";
        size_t at = 0;
        for (int i = 0; i < p.n; ++i) {
            FZ_ASSERT((unsigned) p.rule[i].alg <= OFL_ALG_BOARD, "algorithm %d",
                      (int) p.rule[i].alg);
            FZ_ASSERT(i == 0 || p.rule[i].max_bytes > p.rule[i - 1].max_bytes,
                      "bounds not increasing at %d", i);
            FZ_ASSERT(i == p.n - 1 || UINT64_MAX != p.rule[i].max_bytes,
                      "unbounded entry %d not last", i);
            at += (size_t) snprintf(again + at, sizeof(again) - at, "%s%s",
                                    i ? "," : "", ofl_alg_name(p.rule[i].alg));
            if (UINT64_MAX != p.rule[i].max_bytes) {
                at += (size_t) snprintf(again + at, sizeof(again) - at, ":%" PRIu64,
                                        p.rule[i].max_bytes);
            }
        }
        ofl_policy_t q;
        char err2[128];
        FZ_ASSERT(0 == ofl_policy_parse(again, &q, err2, sizeof(err2)), "'%s' (from '%s'): %s",
                  again, text, err2);
        FZ_ASSERT(q.n == p.n, "'%s' read back with %d rules", again, q.n);
        for (int i = 0; i < p.n; ++i) {
            FZ_ASSERT(q.rule[i].alg == p.rule[i].alg && q.rule[i].max_bytes == p.rule[i].max_bytes,
                      "'%s' rule %d read back differently", again, i);
        }
        fz_count(0, "accepted, read back");
    } else if (errlen > 0) {
        FZ_ASSERT(NULL != memchr(err, '\0', errlen), "message not terminated in %zu", errlen);
        FZ_ASSERT(errlen == 1 || '\0' != err[0], "no message");
        fz_count(1, "refused with a message");
    }
    free(err);
    free(text);
    return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void) argc;
    (void) argv;
    fz_stats_init();
    return 0;
}
