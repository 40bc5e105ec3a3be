/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Fuzz the rules file parser (src/sched/rules.c), which reads a file written by
 * hand or by a tuning script: any bytes, any length, any error buffer size.
 *
 * Oracles: no out-of-bounds access or undefined behaviour (the text is handed over
 * in a buffer of exactly its length, not terminated); an accepted file has at most
 * OFL_RULES_MAX rules, each within the format's bounds, no two of one collective
 * sharing a size, each found by ofl_rules_find at its range's ends, each read back
 * the same when formatted and parsed again, and a hash of the text as given; a
 * refused one leaves no rules, names a line of the text (or 0) and says why in a
 * terminated message that fits its buffer.
 */
#include <limits.h>

#include "fuzz.h"
#include "sched/rules.h"
#include "tree/tree.h"

static ofl_rules_t rs, again;   /* 64 rules each: not on the stack of every input */

static int rule_eq(const ofl_rule_t *a, const ofl_rule_t *b)
{
    if (a->coll != b->coll || a->lo != b->lo || a->hi != b->hi || a->has_policy != b->has_policy
        || a->tree != b->tree || a->radix != b->radix || a->origin != b->origin) {
        return 0;
    }
    if (a->has_policy) {
        if (a->policy.n != b->policy.n) {
            return 0;
        }
        for (int i = 0; i < a->policy.n; ++i) {
            if (a->policy.rule[i].alg != b->policy.rule[i].alg
                || a->policy.rule[i].max_bytes != b->policy.rule[i].max_bytes) {
                return 0;
            }
        }
    }
    return 1;
}

static void check_rule(const ofl_rule_t *r, int lines)
{
    FZ_ASSERT(r->coll >= 0 && r->coll < OFL_COLL_COUNT, "collective %d", r->coll);
    FZ_ASSERT(1 <= r->lo && r->lo <= r->hi, "line %d: ranks %d..%d", r->line, r->lo, r->hi);
    FZ_ASSERT(r->lo <= OFL_RULES_RANKS_MAX
                  && (r->hi <= OFL_RULES_RANKS_MAX || INT_MAX == r->hi),
              "line %d: ranks %d..%d", r->line, r->lo, r->hi);
    FZ_ASSERT(r->line >= 1 && r->line <= lines, "line %d of %d", r->line, lines);
    FZ_ASSERT(r->tree >= -1 && r->tree <= OFL_TREE_FLAT, "line %d: tree %d", r->line, r->tree);
    FZ_ASSERT(0 == r->radix || (r->radix >= 2 && r->radix <= 64), "line %d: radix %d", r->line,
              r->radix);
    FZ_ASSERT((r->tree < 0 && 0 == r->radix) || OFL_COLL_REDUCE == r->coll
                  || OFL_COLL_BCAST == r->coll,
              "line %d: a tree for collective %d", r->line, r->coll);
    FZ_ASSERT(OFL_ORIGIN_MEASURED == r->origin || OFL_ORIGIN_SIMULATED == r->origin,
              "line %d: origin %d", r->line, r->origin);
    FZ_ASSERT(0 == r->has_policy || 1 == r->has_policy, "has_policy %d", r->has_policy);
    FZ_ASSERT(!r->has_policy || (r->policy.n >= 1 && r->policy.n <= OFL_POLICY_MAX_RULES),
              "line %d: %d policy entries", r->line, r->policy.n);
    FZ_ASSERT(r->has_policy || r->tree >= 0 || r->radix > 0, "line %d: no advice", r->line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (0 == size) {
        return 0;
    }
    size_t errlen = data[0] % 130;   /* 0 .. 129, small ones test truncation */
    size_t len = size - 1;
    char *text = malloc(len ? len : 1);   /* exactly the text: a read past it is caught */
    memcpy(text, data + 1, len);
    char *err = errlen ? malloc(errlen) : NULL;   /* no buffer at all with errlen 0 */
    if (errlen) {
        memset(err, 0x5a, errlen);
    }
    int lines = 1;
    for (size_t i = 0; i < len; ++i) {
        lines += '\n' == text[i] && i + 1 < len;
    }
    int bad_line = -7;
    int rc = ofl_rules_parse(text, len, &rs, &bad_line, err, errlen);
    FZ_ASSERT(0 == rc || -1 == rc, "parse: %d", rc);
    if (0 == rc) {
        FZ_ASSERT(rs.n >= 0 && rs.n <= OFL_RULES_MAX, "%d rules", rs.n);
        uint64_t h = 0xcbf29ce484222325ull;
        for (size_t i = 0; i < len; ++i) {
            h = (h ^ (unsigned char) text[i]) * 0x100000001b3ull;
        }
        FZ_ASSERT(rs.hash == h, "hash %016llx, FNV-1a %016llx", (unsigned long long) rs.hash,
                  (unsigned long long) h);
        for (int i = 0; i < rs.n; ++i) {
            const ofl_rule_t *r = &rs.rule[i];
            check_rule(r, lines);
            FZ_ASSERT(i == 0 || r->line > rs.rule[i - 1].line, "rule %d not in file order", i);
            for (int j = 0; j < i; ++j) {
                const ofl_rule_t *o = &rs.rule[j];
                FZ_ASSERT(o->coll != r->coll || o->hi < r->lo || r->hi < o->lo,
                          "lines %d and %d overlap", o->line, r->line);
            }
            FZ_ASSERT(r == ofl_rules_find(&rs, r->coll, r->lo), "line %d not found at %d",
                      r->line, r->lo);
            FZ_ASSERT(r == ofl_rules_find(&rs, r->coll, r->hi), "line %d not found at %d",
                      r->line, r->hi);
            FZ_ASSERT(r != ofl_rules_find(&rs, r->coll, r->lo - 1), "line %d found at %d",
                      r->line, r->lo - 1);

            char line[OFL_RULES_LINE_MAX + 16];
            int k = ofl_rules_format(r, line + 9, sizeof(line) - 9);
            FZ_ASSERT(k > 0 && (size_t) k < sizeof(line) - 9 && (size_t) k == strlen(line + 9),
                      "line %d formatted in %d bytes", r->line, k);
            memcpy(line, "format 1\n", 9);
            int again_line = -7;
            char err2[160] = "";
            FZ_ASSERT(0 == ofl_rules_parse(line, 9 + (size_t) k, &again, &again_line, err2,
                                           sizeof(err2)),
                      "'%s' (line %d) refused at %d: %s", line + 9, r->line, again_line, err2);
            FZ_ASSERT(1 == again.n && 2 == again.rule[0].line && rule_eq(r, &again.rule[0]),
                      "'%s' (line %d) read back differently", line + 9, r->line);
        }
        fz_count(0, "accepted");
        if (rs.n > 0) {
            fz_count(1, "accepted with rules, read back");
        }
        if (rs.n > 4) {
            fz_count(2, "accepted with more than 4 rules");
        }
    } else {
        FZ_ASSERT(0 == rs.n && 0 == rs.hash, "refused, yet %d rules", rs.n);
        FZ_ASSERT(bad_line >= 0 && bad_line <= lines, "bad line %d of %d", bad_line, lines);
        if (errlen > 0) {
            FZ_ASSERT(NULL != memchr(err, '\0', errlen), "message not terminated in %zu",
                      errlen);
            FZ_ASSERT(errlen == 1 || '\0' != err[0], "no message");
        }
        fz_count(bad_line > 0 ? 3 : 4, bad_line > 0 ? "refused at a line" : "refused whole");
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
