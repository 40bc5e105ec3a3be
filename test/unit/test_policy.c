/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/* Unit tests of the per-size policy (src/sched/policy.c): the parser, the built-in
 * tables, and the choice with its size caps and crowded-node rules. */
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

/* The choice: caps, tables, crowded rules, each against what the rule says. */
static void test_choose(void)
{
    static const char *const texts[4] = { "board:256,exchange:16k,split",
                                          "board:256,tree:32k,fallback:256k,tree",
                                          "board:256,tree:16k,get", "board" };
    ofl_policy_t tab[4];
    char err[128];
    for (int k = 0; k < 4; ++k) {
        CHECK(0 == ofl_policy_parse(texts[k], &tab[k], err, sizeof(err)), "%s: %s", texts[k],
              err);
        CHECK(NULL != ofl_policy_default(k) && 0 == strcmp(texts[k], ofl_policy_default(k)),
              "built-in table %d: %s", k, ofl_policy_default(k));
    }
    CHECK(NULL == ofl_policy_default(4) && NULL == ofl_policy_default(-1), "no fifth table");
    enum {
        AR = OFL_COLL_ALLREDUCE,
        RD = OFL_COLL_REDUCE,
        BC = OFL_COLL_BCAST,
        BA = OFL_COLL_BARRIER
    };
    size_t caps[4] = { 1u << 20, 1u << 20, 1u << 20, 0 };
    ofl_choice_t c = { { &tab[0], &tab[1], &tab[2], &tab[3] }, caps, 2, 0, 256, OFL_ALG_FALLBACK };
    struct {
        int crowded;
        long crowded_max;
        int coll;
        uint64_t bytes;
        int chosen;
        ofl_alg_t alg;
    } cases[] = {
        /* one core per rank: the tables as written, the caps */
        { 0, 256, AR, 8, OFL_CHOSEN, OFL_ALG_BOARD },
        { 0, 256, AR, 16384, OFL_CHOSEN, OFL_ALG_EXCHANGE },
        { 0, 256, AR, 16385, OFL_CHOSEN, OFL_ALG_SPLIT },
        { 0, 256, AR, (1u << 20) + 1, OFL_CHOSEN_CAP, OFL_ALG_FALLBACK },
        { 0, 256, RD, 8, OFL_CHOSEN, OFL_ALG_BOARD },
        { 0, 256, RD, 65536, OFL_CHOSEN_POLICY, OFL_ALG_FALLBACK },
        { 0, 256, RD, 300000, OFL_CHOSEN, OFL_ALG_TREE },
        { 0, 256, BC, 8, OFL_CHOSEN, OFL_ALG_BOARD },
        { 0, 256, BC, 20000, OFL_CHOSEN, OFL_ALG_GET },
        { 0, 256, BA, 0, OFL_CHOSEN, OFL_ALG_BOARD },
        /* crowded: small reduces and bcasts below, mid reduces the tree, barriers the
         * tree; allreduces as written */
        { 1, 256, RD, 8, OFL_CHOSEN_POLICY, OFL_ALG_FALLBACK },
        { 1, 256, RD, 256, OFL_CHOSEN_POLICY, OFL_ALG_FALLBACK },
        { 1, 256, RD, 257, OFL_CHOSEN, OFL_ALG_TREE },
        { 1, 256, RD, 65536, OFL_CHOSEN, OFL_ALG_TREE },
        { 1, 256, BC, 100, OFL_CHOSEN_POLICY, OFL_ALG_FALLBACK },
        { 1, 256, BC, 20000, OFL_CHOSEN, OFL_ALG_GET },
        { 1, 256, BA, 0, OFL_CHOSEN, OFL_ALG_TREE },
        { 1, 256, AR, 8, OFL_CHOSEN, OFL_ALG_BOARD },
        { 1, 256, RD, (1u << 20) + 1, OFL_CHOSEN_CAP, OFL_ALG_FALLBACK },
        /* crowded with the rules off (crowded_max < 0): the tables as written */
        { 1, -1, RD, 8, OFL_CHOSEN, OFL_ALG_BOARD },
        { 1, -1, RD, 65536, OFL_CHOSEN_POLICY, OFL_ALG_FALLBACK },
        { 1, -1, BA, 0, OFL_CHOSEN, OFL_ALG_BOARD },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        c.crowded = cases[i].crowded;
        c.crowded_max = cases[i].crowded_max;
        ofl_alg_t alg = (ofl_alg_t) 99;
        int chosen = ofl_choose(&c, cases[i].coll, cases[i].bytes, &alg);
        CHECK(chosen == cases[i].chosen && alg == cases[i].alg,
              "case %zu (coll %d, %llu bytes, crowded %d/%ld): chose %d %s, want %d %s", i,
              cases[i].coll, (unsigned long long) cases[i].bytes, cases[i].crowded,
              cases[i].crowded_max, chosen, ofl_alg_name(alg), cases[i].chosen,
              ofl_alg_name(cases[i].alg));
    }
    /* the barrier's algorithm, chosen once per change */
    c.crowded = 0;
    c.crowded_max = 256;
    ofl_choice_settle(&c);
    ofl_alg_t open_node = c.barrier;
    c.crowded = 1;
    ofl_choice_settle(&c);
    CHECK(OFL_ALG_BOARD == open_node && OFL_ALG_TREE == c.barrier,
          "settled barrier: %s, crowded %s", ofl_alg_name(open_node), ofl_alg_name(c.barrier));
    /* an exchange entry bounds what each rank sends: on 5 ranks 16k covers 4k */
    c.crowded = 0;
    c.ranks = 5;
    ofl_alg_t alg;
    int at4k = ofl_choose(&c, OFL_COLL_ALLREDUCE, 4096, &alg);
    ofl_alg_t alg4k = alg;
    int above = ofl_choose(&c, OFL_COLL_ALLREDUCE, 4097, &alg);
    CHECK(OFL_CHOSEN == at4k && OFL_ALG_EXCHANGE == alg4k && OFL_CHOSEN == above
              && OFL_ALG_SPLIT == alg,
          "exchange bound on 5 ranks");
}

int main(void)
{
    unit_timeout("test_policy", 60);
    test_choose();
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
