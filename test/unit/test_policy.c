/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/* Unit tests of the per-size policy parser (src/sched/policy.c). */
#include <stdint.h>
#include <string.h>

#include "sched/policy.h"
#include "unit.h"

static void good(const char *text, int n, const ofl_alg_t *algs, const uint64_t *maxes)
{
    ofl_policy_t p;
    char err[128] = "";
    int rc = ofl_policy_parse(text, &p, err, sizeof(err));
    CHECK(0 == rc, "'%s' rejected: %s", text, err);
    CHECK(p.n == n, "'%s': %d rules, expected %d", text, p.n, n);
    for (int i = 0; i < n && i < p.n; ++i) {
        CHECK(p.rule[i].alg == algs[i] && p.rule[i].max_bytes == maxes[i],
              "'%s' rule %d: %s/%llu", text, i, ofl_alg_name(p.rule[i].alg),
              (unsigned long long) p.rule[i].max_bytes);
    }
}

static void bad(const char *text)
{
    ofl_policy_t p;
    char err[128] = "";
    CHECK(-1 == ofl_policy_parse(text, &p, err, sizeof(err)) && err[0], "'%s' accepted", text);
}

int main(void)
{
    unit_timeout("test_policy", 60);
    good("tree", 1, (ofl_alg_t[]) { OFL_ALG_TREE }, (uint64_t[]) { UINT64_MAX });
    good("exchange:1024,tree", 2, (ofl_alg_t[]) { OFL_ALG_EXCHANGE, OFL_ALG_TREE },
         (uint64_t[]) { 1024, UINT64_MAX });
    good("exchange:1k,tree:4m,fallback", 3,
         (ofl_alg_t[]) { OFL_ALG_EXCHANGE, OFL_ALG_TREE, OFL_ALG_FALLBACK },
         (uint64_t[]) { 1024, 4u << 20, UINT64_MAX });
    good("tree:1G", 1, (ofl_alg_t[]) { OFL_ALG_TREE }, (uint64_t[]) { 1ull << 30 });
    good("fallback:0,tree", 2, (ofl_alg_t[]) { OFL_ALG_FALLBACK, OFL_ALG_TREE },
         (uint64_t[]) { 0, UINT64_MAX });
    bad("");
    bad(NULL);
    bad("ring");
    bad("tree,exchange");          /* unbounded entry not last */
    bad("tree:4k,exchange:1k");    /* decreasing */
    bad("tree:4k,exchange:4k");    /* not increasing */
    bad("tree:-1");
    bad("get:23k,get: -1,get");    /* blank and sign: strtoull would read UINT64_MAX */
    bad("tree:+5");
    bad("tree:18446744073709551615,get");   /* the unbounded sentinel written out */
    bad("tree:17179869184G");      /* 2^64 */
    bad("tree:12q");
    bad("tree:");
    bad("tre:1k");
    bad("tree:99999999999999999999");
    bad("a:1,b:2,c:3,d:4,e:5,f:6,g:7,h:8,i");
    bad("tree:1,tree:2,tree:3,tree:4,tree:5,tree:6,tree:7,tree:8,tree");

    /* Picking: the first rule whose bound holds; past a last bound, fallback. */
    ofl_policy_t p;
    char err[128];
    CHECK(0 == ofl_policy_parse("exchange:1024,tree:4096", &p, err, sizeof(err)), "%s", err);
    CHECK(OFL_ALG_EXCHANGE == ofl_policy_pick(&p, 0, 2), "0 bytes");
    CHECK(OFL_ALG_EXCHANGE == ofl_policy_pick(&p, 1024, 2), "1024 bytes");
    CHECK(OFL_ALG_TREE == ofl_policy_pick(&p, 1025, 2), "1025 bytes");
    CHECK(OFL_ALG_TREE == ofl_policy_pick(&p, 4096, 2), "4096 bytes");
    CHECK(OFL_ALG_FALLBACK == ofl_policy_pick(&p, 4097, 2), "4097 bytes");
    /* An exchange bound counts what each rank sends: bytes * (ranks - 1). */
    CHECK(OFL_ALG_EXCHANGE == ofl_policy_pick(&p, 512, 3), "512 bytes on 3 ranks");
    CHECK(OFL_ALG_TREE == ofl_policy_pick(&p, 513, 3), "513 bytes on 3 ranks");
    CHECK(OFL_ALG_EXCHANGE == ofl_policy_pick(&p, 0, 65), "0 bytes on 65 ranks");
    CHECK(OFL_ALG_EXCHANGE == ofl_policy_pick(&p, 1024, 1), "one rank");
    CHECK(OFL_ALG_TREE == ofl_policy_pick(&p, 4096, 8), "tree bound is per message");
    CHECK(0 == strcmp("exchange", ofl_alg_name(OFL_ALG_EXCHANGE)), "name");
    CHECK(0 == strcmp("get", ofl_alg_name(OFL_ALG_GET)), "name");
    CHECK(0 == strcmp("split", ofl_alg_name(OFL_ALG_SPLIT)), "name");
    return unit_report("policy");
}
