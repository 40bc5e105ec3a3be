/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/* Unit tests of the rules file parser (src/sched/rules.c). */
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "sched/program.h"
#include "sched/rules.h"
#include "tree/tree.h"
#include "unit.h"

static ofl_rules_t rs;   /* big (64 rules): one, not one per frame */

static int policy_eq(const ofl_policy_t *a, const ofl_policy_t *b)
{
    if (a->n != b->n) {
        return 0;
    }
    for (int i = 0; i < a->n; ++i) {
        if (a->rule[i].alg != b->rule[i].alg || a->rule[i].max_bytes != b->rule[i].max_bytes) {
            return 0;
        }
    }
    return 1;
}

/* Everything but the line: a rule read back from its formatted text sits elsewhere. */
static int rule_eq(const ofl_rule_t *a, const ofl_rule_t *b)
{
    return a->coll == b->coll && a->lo == b->lo && a->hi == b->hi
           && a->has_policy == b->has_policy
           && (!a->has_policy || policy_eq(&a->policy, &b->policy)) && a->tree == b->tree
           && a->radix == b->radix && a->origin == b->origin;
}

static int parse(const char *text, ofl_rules_t *out)
{
    int line = -7;
    char err[256] = "";
    int rc = ofl_rules_parse(text, strlen(text), out, &line, err, sizeof(err));
    CHECK(0 == rc, "'%s' refused at line %d: %s", text, line, err);
    return rc;
}

/* A refused text: the line at fault is `line`, the message quotes `token`, and the
 * result is empty even when it held rules before. */
static void bad_n(const char *text, size_t len, int line, const char *token)
{
    int got = -7;
    char err[256] = "";
    CHECK(0 == parse("format 1\nbcast 2 tree=kary\n", &rs) && 1 == rs.n, "setup");
    int rc = ofl_rules_parse(text, len, &rs, &got, err, sizeof(err));
    CHECK(-1 == rc, "'%s' accepted", text);
    CHECK(got == line, "'%s': line %d reported, expected %d (%s)", text, got, line, err);
    CHECK(NULL != strstr(err, token), "'%s': message '%s' does not mention '%s'", text, err,
          token);
    CHECK(0 == rs.n, "'%s': %d rules left after a refusal", text, rs.n);
}

static void bad(const char *text, int line, const char *token)
{
    bad_n(text, strlen(text), line, token);
}

/* A literal with NUL bytes in it, all of it. */
#define BAD_LIT(lit, line, token) bad_n((lit), sizeof(lit) - 1, (line), (token))

static void check_policy(const ofl_rule_t *r, int n, const ofl_alg_t *algs,
                         const uint64_t *maxes)
{
    CHECK(r->has_policy, "line %d: no policy", r->line);
    CHECK(r->policy.n == n, "line %d: %d policy entries, expected %d", r->line, r->policy.n, n);
    for (int i = 0; i < n && i < r->policy.n; ++i) {
        CHECK(r->policy.rule[i].alg == algs[i] && r->policy.rule[i].max_bytes == maxes[i],
              "line %d entry %d: %s/%llu", r->line, i, ofl_alg_name(r->policy.rule[i].alg),
              (unsigned long long) r->policy.rule[i].max_bytes);
    }
}

static void check_rule(const ofl_rule_t *r, int coll, int lo, int hi, int tree, int radix,
                       int origin, int line)
{
    CHECK(r->coll == coll, "line %d: coll %d, expected %d", line, r->coll, coll);
    CHECK(r->lo == lo && r->hi == hi, "line %d: %d..%d, expected %d..%d", line, r->lo, r->hi,
          lo, hi);
    CHECK(r->tree == tree, "line %d: tree %d, expected %d", line, r->tree, tree);
    CHECK(r->radix == radix, "line %d: radix %d, expected %d", line, r->radix, radix);
    CHECK(r->origin == origin, "line %d: origin %d, expected %d", line, r->origin, origin);
    CHECK(r->line == line, "rule of line %d says line %d", line, r->line);
}

static const char example[] =
    "# tuning for node type A\n"                                      /* 1 */
    "\n"                                                              /* 2 */
    "   \t# an indented comment\n"                                    /* 3 */
    "format 1   # the version\n"                                      /* 4 */
    "  \t \n"                                                         /* 5 */
    "allreduce 2-8 policy=board:256,tree:32k,fallback:256k,tree\n"    /* 6 */
    "allreduce 9+ policy=split origin=simulated\n"                    /* 7 */
    "\t bcast   16  tree=knomial\tradix=4 # measured on 16 nodes\n"   /* 8 */
    "reduce 1-1048576 tree=flat origin=measured\r\n"                  /* 9 */
    "barrier 4 policy=exchange:0,board   ";                           /* 10, no newline */

static void test_values(void)
{
    if (0 != parse(example, &rs)) {
        return;
    }
    CHECK(5 == rs.n, "%d rules, expected 5", rs.n);
    if (5 != rs.n) {
        return;
    }
    check_rule(&rs.rule[0], OFL_COLL_ALLREDUCE, 2, 8, -1, 0, OFL_ORIGIN_MEASURED, 6);
    check_policy(&rs.rule[0], 4,
                 (ofl_alg_t[]) { OFL_ALG_BOARD, OFL_ALG_TREE, OFL_ALG_FALLBACK, OFL_ALG_TREE },
                 (uint64_t[]) { 256, 32768, 262144, UINT64_MAX });
    check_rule(&rs.rule[1], OFL_COLL_ALLREDUCE, 9, INT_MAX, -1, 0, OFL_ORIGIN_SIMULATED, 7);
    check_policy(&rs.rule[1], 1, (ofl_alg_t[]) { OFL_ALG_SPLIT }, (uint64_t[]) { UINT64_MAX });
    check_rule(&rs.rule[2], OFL_COLL_BCAST, 16, 16, OFL_TREE_KNOMIAL, 4, OFL_ORIGIN_MEASURED, 8);
    CHECK(!rs.rule[2].has_policy, "line 8 has a policy");
    check_rule(&rs.rule[3], OFL_COLL_REDUCE, 1, 1048576, OFL_TREE_FLAT, 0, OFL_ORIGIN_MEASURED,
               9);
    CHECK(!rs.rule[3].has_policy, "line 9 has a policy");
    check_rule(&rs.rule[4], OFL_COLL_BARRIER, 4, 4, -1, 0, OFL_ORIGIN_MEASURED, 10);
    check_policy(&rs.rule[4], 2, (ofl_alg_t[]) { OFL_ALG_EXCHANGE, OFL_ALG_BOARD },
                 (uint64_t[]) { 0, UINT64_MAX });

    /* The edges of each range, and the sizes no rule covers. */
    const ofl_rule_t *r = rs.rule;
    CHECK(NULL == ofl_rules_find(&rs, OFL_COLL_ALLREDUCE, 1), "allreduce 1");
    CHECK(&r[0] == ofl_rules_find(&rs, OFL_COLL_ALLREDUCE, 2), "allreduce 2");
    CHECK(&r[0] == ofl_rules_find(&rs, OFL_COLL_ALLREDUCE, 8), "allreduce 8");
    CHECK(&r[1] == ofl_rules_find(&rs, OFL_COLL_ALLREDUCE, 9), "allreduce 9");
    CHECK(&r[1] == ofl_rules_find(&rs, OFL_COLL_ALLREDUCE, 1048577), "allreduce 1048577");
    CHECK(&r[1] == ofl_rules_find(&rs, OFL_COLL_ALLREDUCE, INT_MAX), "allreduce INT_MAX");
    CHECK(NULL == ofl_rules_find(&rs, OFL_COLL_ALLREDUCE, 0), "allreduce 0");
    CHECK(NULL == ofl_rules_find(&rs, OFL_COLL_ALLREDUCE, -1), "allreduce -1");
    CHECK(NULL == ofl_rules_find(&rs, OFL_COLL_BCAST, 15), "bcast 15");
    CHECK(&r[2] == ofl_rules_find(&rs, OFL_COLL_BCAST, 16), "bcast 16");
    CHECK(NULL == ofl_rules_find(&rs, OFL_COLL_BCAST, 17), "bcast 17");
    CHECK(NULL == ofl_rules_find(&rs, OFL_COLL_REDUCE, 0), "reduce 0");
    CHECK(&r[3] == ofl_rules_find(&rs, OFL_COLL_REDUCE, 1), "reduce 1");
    CHECK(&r[3] == ofl_rules_find(&rs, OFL_COLL_REDUCE, 1048576), "reduce 1048576");
    CHECK(NULL == ofl_rules_find(&rs, OFL_COLL_REDUCE, 1048577), "reduce 1048577");
    CHECK(NULL == ofl_rules_find(&rs, OFL_COLL_BARRIER, 3), "barrier 3");
    CHECK(&r[4] == ofl_rules_find(&rs, OFL_COLL_BARRIER, 4), "barrier 4");
    CHECK(NULL == ofl_rules_find(&rs, OFL_COLL_BARRIER, 5), "barrier 5");
    CHECK(NULL == ofl_rules_find(&rs, OFL_COLL_COUNT, 4), "no such collective");
    CHECK(NULL == ofl_rules_find(NULL, OFL_COLL_BARRIER, 4), "no rules");

    /* A gap between two ranges of one collective, and the same range for another. */
    if (0 == parse("format 1\nbcast 10-20 tree=kary\nbcast 30-40 radix=8\n"
                   "reduce 10-20 radix=2\n", &rs)) {
        CHECK(3 == rs.n, "%d rules, expected 3", rs.n);
        CHECK(NULL == ofl_rules_find(&rs, OFL_COLL_BCAST, 9), "bcast 9");
        CHECK(&rs.rule[0] == ofl_rules_find(&rs, OFL_COLL_BCAST, 10), "bcast 10");
        CHECK(&rs.rule[0] == ofl_rules_find(&rs, OFL_COLL_BCAST, 20), "bcast 20");
        CHECK(NULL == ofl_rules_find(&rs, OFL_COLL_BCAST, 21), "bcast 21");
        CHECK(NULL == ofl_rules_find(&rs, OFL_COLL_BCAST, 29), "bcast 29");
        CHECK(&rs.rule[1] == ofl_rules_find(&rs, OFL_COLL_BCAST, 35), "bcast 35");
        CHECK(NULL == ofl_rules_find(&rs, OFL_COLL_BCAST, 41), "bcast 41");
        CHECK(&rs.rule[2] == ofl_rules_find(&rs, OFL_COLL_REDUCE, 15), "reduce 15");
        CHECK(NULL == ofl_rules_find(&rs, OFL_COLL_ALLREDUCE, 15), "allreduce 15");
    }

    /* The format line alone: valid, no advice. */
    if (0 == parse("format 1", &rs)) {
        CHECK(0 == rs.n, "%d rules from a format line", rs.n);
    }
    if (0 == parse("\r\n\t format\t1\t\r\n# end\r", &rs)) {
        CHECK(0 == rs.n, "%d rules from a format line", rs.n);
    }
}

/* The text is `len` bytes, not a C string: nothing after it is read. */
static void test_length(void)
{
    const char text[] = "format 1\nbcast 4 tree=kary\nbogus";
    int line = -7;
    char err[128] = "";
    int rc = ofl_rules_parse(text, sizeof(text) - 1 - 5, &rs, &line, err, sizeof(err));
    CHECK(0 == rc && 1 == rs.n, "prefix refused (%d rules): %s", rs.n, err);
    rc = ofl_rules_parse(text, sizeof(text) - 1, &rs, &line, err, sizeof(err));
    CHECK(-1 == rc && 3 == line, "whole text: rc %d line %d", rc, line);
    /* Three bytes "for": no format line, and nothing read past them. */
    char *three = malloc(3);
    memcpy(three, "for", 3);
    rc = ofl_rules_parse(three, 3, &rs, &line, err, sizeof(err));
    CHECK(-1 == rc && 1 == line && NULL != strstr(err, "'for'"), "'for': %d line %d: %s", rc,
          line, err);
    free(three);
    rc = ofl_rules_parse(NULL, 0, &rs, &line, err, sizeof(err));
    CHECK(-1 == rc && 0 == line, "NULL text: rc %d line %d", rc, line);
}

static void test_hash(void)
{
    /* FNV-1a 64 of "format 1\n" and of the one-rule file, worked out apart from rules.c. */
    const char *t1 = "format 1\nbcast 4 radix=4\n";
    const char *t2 = "format 1\nbcast 4 radix=5\n";
    uint64_t h1 = 0, h2 = 0;
    if (0 == parse(t1, &rs)) {
        h1 = rs.hash;
    }
    CHECK(0x0298b28d69c1e2a1ull == h1, "hash %016llx", (unsigned long long) h1);
    char copy[64];
    strcpy(copy, t1);
    if (0 == parse(copy, &rs)) {
        CHECK(h1 == rs.hash, "equal texts, different hashes");
    }
    if (0 == parse(t2, &rs)) {
        h2 = rs.hash;
    }
    CHECK(0 != h2 && h1 != h2, "one byte changed, same hash %016llx", (unsigned long long) h2);
    /* Of the text as given: a blank that does not change the rules changes the hash. */
    if (0 == parse("format 1\nbcast 4 radix=4 \n", &rs)) {
        CHECK(h1 != rs.hash, "a trailing blank did not change the hash");
    }
    if (0 == parse("format 1\n", &rs)) {
        CHECK(0x98c91477435b2d7dull == rs.hash, "hash %016llx",
              (unsigned long long) rs.hash);
    }
}

static void test_errors(void)
{
    /* No format line: the file as a whole is at fault. */
    bad("", 0, "format");
    bad("# only a comment\n\n  \t\n", 0, "format");
    bad_n("\n\n", 2, 0, "format");
    /* The first line that counts is not the format line. */
    bad("# c\n\nbcast 4 tree=kary\n", 3, "'bcast'");
    bad("formats 1\n", 1, "'formats'");
    bad("\nformat 2\nbcast 4 tree=kary\n", 2, "'2'");
    bad("format 1.0\n", 1, "'1.0'");
    bad("format 01\n", 1, "'01'");
    bad("format\n", 1, "format");
    bad("format 1 2\n", 1, "'2'");
    bad("format 1\nbcast 4 tree=kary\nformat 1\n", 3, "format");

    /* Unknown collective, unknown key, not a KEY=VALUE. */
    bad("format 1\n\n# c\nalltoall 4 policy=tree\n", 4, "'alltoall'");
    bad("format 1\nBcast 4 tree=kary\n", 2, "'Bcast'");
    bad("format 1\nbcast 4 color=red\n", 2, "'color'");
    bad("format 1\nbcast 4 Tree=kary\n", 2, "'Tree'");
    bad("format 1\nbcast 4 =kary\n", 2, "''");
    bad("format 1\nbcast 4 tree\n", 2, "'tree'");
    bad("format 1\nbcast 4 tree =kary\n", 2, "'tree'");
    bad("format 1\nbcast\n", 2, "'bcast'");
    bad("format 1\nbcast # 4 tree=kary\n", 2, "'bcast'");

    /* Bad numbers. */
    bad("format 1\nbcast 0 tree=kary\n", 2, "'0'");
    bad("format 1\nbcast 1048577 tree=kary\n", 2, "'1048577'");
    bad("format 1\nbcast 99999999999999999999 tree=kary\n", 2, "'99999999999999999999'");
    bad("format 1\nbcast 2147483648+ tree=kary\n", 2, "'2147483648+'");
    bad("format 1\nbcast 4x tree=kary\n", 2, "'4x'");
    bad("format 1\nbcast -4 tree=kary\n", 2, "'-4'");
    bad("format 1\nbcast +4 tree=kary\n", 2, "'+4'");
    bad("format 1\nbcast 4- tree=kary\n", 2, "'4-'");
    bad("format 1\nbcast 4-5-6 tree=kary\n", 2, "'4-5-6'");
    bad("format 1\nbcast 4++ tree=kary\n", 2, "'4++'");
    bad("format 1\nbcast 0-4 tree=kary\n", 2, "'0-4'");
    bad("format 1\nbcast 4-1048577 tree=kary\n", 2, "'4-1048577'");
    bad("format 1\nbcast 0x10 tree=kary\n", 2, "'0x10'");
    bad("format 1\nbcast 4 radix=1\n", 2, "'1'");
    bad("format 1\nbcast 4 radix=65\n", 2, "'65'");
    bad("format 1\nbcast 4 radix=\n", 2, "''");
    bad("format 1\nbcast 4 radix=+4\n", 2, "'+4'");
    bad("format 1\nbcast 4 radix=4k\n", 2, "'4k'");

    /* An empty range. */
    bad("format 1\nallreduce 8-4 policy=tree\n", 2, "'8-4'");

    /* Bad values. */
    bad("format 1\nallreduce 4 policy=ring\n", 2, "'ring'");
    bad("format 1\nallreduce 4 policy=\n", 2, "empty policy");
    bad("format 1\nallreduce 4 policy=tree:4k,exchange:1k\n", 2, "'tree:4k,exchange:1k'");
    bad("format 1\nreduce 4 tree=binary\n", 2, "'binary'");
    bad("format 1\nreduce 4 tree=kary origin=guessed\n", 2, "'guessed'");
    /* A stray \r that does not end a line is part of a field. */
    bad("format 1\nreduce 4 tree=kary\r\r\n", 2, "'kary?'");

    /* Tree shape and radix: reduce and bcast only. */
    bad("format 1\nallreduce 4 tree=kary\n", 2, "'tree=kary'");
    bad("format 1\nbarrier 4 radix=4\n", 2, "'radix=4'");
    bad("format 1\nbarrier 4 policy=board radix=4\n", 2, "'radix=4'");

    /* A key twice, and a rule without advice. */
    bad("format 1\n\nreduce 4 tree=kary tree=flat\n", 3, "'tree'");
    bad("format 1\nreduce 4 tree=kary policy=tree radix=2 policy=tree\n", 2, "'policy'");
    bad("format 1\nreduce 4 origin=simulated origin=simulated radix=2\n", 2, "'origin'");
    bad("format 1\nreduce 4 origin=simulated\n", 2, "'reduce 4'");
    bad("format 1\nbarrier 8+\n", 2, "'barrier 8+'");

    /* Overlaps within one collective, whatever the order of the lines. */
    bad("format 1\nallreduce 4-8 policy=tree\nbcast 4-8 tree=kary\nallreduce 8+ policy=tree\n", 4,
        "'8+'");
    bad("format 1\nallreduce 9+ policy=tree\nallreduce 2-9 policy=tree\n", 3, "line 2");
    bad("format 1\nbcast 5 radix=2\nbcast 1-1048576 radix=3\n", 3, "'1-1048576'");
    bad("format 1\nbcast 5 radix=2\nbcast 5 radix=2\n", 3, "'5'");
    bad("format 1\nbcast 1+ radix=2\nbcast 1048576 radix=2\n", 3, "'1048576'");

    /* A NUL byte, in a rule or in a comment. */
    BAD_LIT("format 1\nbcast 4 tree=kary\n# a\0b\n", 3, "NUL");
    BAD_LIT("format 1\nbcast 4\0 tree=kary\n", 2, "NUL");
    BAD_LIT("\0format 1\n", 1, "NUL");
}

static void test_limits(void)
{
    /* A line of 1024 bytes (with "\r\n" after it) is read, one of 1025 is refused. */
    static char text[2 * OFL_RULES_LINE_MAX + 64];
    size_t n = (size_t) snprintf(text, sizeof(text), "format 1\nbcast 4 tree=kary #");
    size_t start = strlen("format 1\n");
    while (n - start < OFL_RULES_LINE_MAX) {
        text[n++] = 'x';
    }
    memcpy(text + n, "\r\n", 3);
    parse(text, &rs);
    memcpy(text + n, "x\r\nbcast 5 tree=kary\n", 22);
    bad(text, 2, "1025");
    memcpy(text + n, "x", 2);
    bad(text, 2, "1025");

    /* 64 rules are read; a 65th is refused at its line (after the format line). */
    static char many[(OFL_RULES_MAX + 2) * 32];
    size_t at = (size_t) snprintf(many, sizeof(many), "format 1\n");
    for (int i = 1; i <= OFL_RULES_MAX; ++i) {
        at += (size_t) snprintf(many + at, sizeof(many) - at, "reduce %d tree=kary\n", i);
    }
    if (0 == parse(many, &rs)) {
        CHECK(OFL_RULES_MAX == rs.n, "%d rules, expected %d", rs.n, OFL_RULES_MAX);
        CHECK(&rs.rule[OFL_RULES_MAX - 1] == ofl_rules_find(&rs, OFL_COLL_REDUCE, 64), "64");
        CHECK(OFL_RULES_MAX + 1 == rs.rule[OFL_RULES_MAX - 1].line, "last rule's line %d",
              rs.rule[OFL_RULES_MAX - 1].line);
    }
    snprintf(many + at, sizeof(many) - at, "reduce 65 tree=kary\n");
    bad(many, OFL_RULES_MAX + 2, "64");

    /* Messages: truncated to fit and terminated; no buffer at all is fine. */
    char err[16];
    memset(err, 'x', sizeof(err));
    int line = -7;
    int rc = ofl_rules_parse("format 1\nalltoall 4 tree=kary\n", 30, &rs, &line, err, 8);
    CHECK(-1 == rc && 2 == line, "rc %d line %d", rc, line);
    CHECK(7 == strlen(err) && 'x' == err[8], "message not cut to its 8 bytes");
    line = -7;
    rc = ofl_rules_parse("format 2\n", 9, &rs, &line, NULL, 0);
    CHECK(-1 == rc && 1 == line && 0 == rs.n, "no buffer: rc %d line %d", rc, line);
    rc = ofl_rules_parse("format 1\n", 9, &rs, NULL, NULL, 0);
    CHECK(0 == rc, "no line and no buffer: rc %d", rc);
}

/* Parse -> format -> parse gives the same rule; some formatted texts written out. */
static void test_round_trip(void)
{
    static const char *const lines[] = {
        "allreduce 2-8 policy=board:256,tree:32k,fallback:256k,tree",
        "allreduce 9+ policy=split origin=simulated",
        "bcast 16 tree=knomial radix=4",
        "reduce 1-1048576 tree=flat origin=measured",
        "barrier 4 policy=exchange:0,board",
        "reduce 1048576 policy=tree:1000,exchange:1025,split:3m,get:1073741824,board:1536m "
        "tree=kary radix=64",
        "bcast 7-7 radix=2 origin=simulated",
        "allreduce 1+ policy=tree:18446744073709551614",
    };
    static const char *const want[] = {
        "allreduce 2-8 policy=board:256,tree:32k,fallback:256k,tree origin=measured",
        "allreduce 9+ policy=split origin=simulated",
        "bcast 16 tree=knomial radix=4 origin=measured",
        "reduce 1-1048576 tree=flat origin=measured",
        "barrier 4 policy=exchange:0,board origin=measured",
        "reduce 1048576 policy=tree:1000,exchange:1025,split:3m,get:1g,board:1536m "
        "tree=kary radix=64 origin=measured",
        "bcast 7 radix=2 origin=simulated",
        "allreduce 1+ policy=tree:18446744073709551614 origin=measured",
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); ++i) {
        char text[1200], buf[1100];
        snprintf(text, sizeof(text), "format 1\n%s\n", lines[i]);
        if (0 != parse(text, &rs) || 1 != rs.n) {
            continue;
        }
        ofl_rule_t first = rs.rule[0];
        int k = ofl_rules_format(&first, buf, sizeof(buf));
        CHECK(k == (int) strlen(buf) && 0 == strcmp(buf, want[i]), "'%s' formatted '%s'",
              lines[i], buf);
        snprintf(text, sizeof(text), "# again\nformat 1\n%s", buf);
        if (0 == parse(text, &rs) && 1 == rs.n) {
            CHECK(rule_eq(&first, &rs.rule[0]), "'%s' read back differently", buf);
            CHECK(3 == rs.rule[0].line, "read back at line %d", rs.rule[0].line);
        }
    }
    /* Into a short buffer: what snprintf would, terminated. */
    if (0 == parse("format 1\nbcast 16 tree=knomial radix=4\n", &rs)) {
        char small[10];
        memset(small, 'x', sizeof(small));
        int k = ofl_rules_format(&rs.rule[0], small, 6);
        CHECK(45 == k && 0 == strcmp(small, "bcast") && 'x' == small[6], "%d '%.6s'", k,
              small);
        CHECK(45 == ofl_rules_format(&rs.rule[0], NULL, 0), "no buffer");
    }
}

int main(void)
{
    unit_timeout("test_rules", 10);
    test_values();
    test_length();
    test_hash();
    test_errors();
    test_limits();
    test_round_trip();
    return unit_report("rules");
}
