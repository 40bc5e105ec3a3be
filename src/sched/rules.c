/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the rules file (see rules.h for the format).
 */
#include "sched/rules.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/program.h"
#include "tree/tree.h"

/* A field of a line: not terminated, never empty. */
typedef struct {
    const char *p;
    size_t n;
} field_t;

/* For "'%.*s%s'": a field quoted in a message, cut short so that a long one (up to a
 * whole line) does not crowd out the reason. */
#define SHOWN 48
#define SHOW(f) (int) ((f).n < SHOWN ? (f).n : SHOWN), (f).p, (f).n > SHOWN ? "..." : ""

typedef struct {
    ofl_rules_t *out;
    int *bad_line;
    char *err;
    size_t errlen;
    int line;
} ctx_t;

static uint64_t fnv1a_more(uint64_t h, const char *p, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        h ^= (unsigned char) p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t fnv1a(const char *p, size_t n)
{
    return fnv1a_more(0xcbf29ce484222325ull, p, n);
}

__attribute__((format(printf, 3, 4))) static int fail_at(ctx_t *c, int line, const char *fmt,
                                                         ...)
{
    memset(c->out, 0, sizeof(*c->out));
    if (NULL != c->bad_line) {
        *c->bad_line = line;
    }
    if (c->errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->errlen, fmt, ap);
        va_end(ap);
        /* Quoted fields are the file's bytes: keep control characters (a stray \r, an
         * escape sequence) out of the log the message lands in. */
        for (char *s = c->err; '\0' != *s; ++s) {
            if ((unsigned char) *s < 0x20 || 0x7f == (unsigned char) *s) {
                *s = '?';
            }
        }
    }
    return -1;
}

#define FAIL(c, ...) fail_at((c), (c)->line, __VA_ARGS__)

/* The next blank-separated field of [*at, end), or 0 when there is none. */
static int next_field(const char **at, const char *end, field_t *f)
{
    const char *p = *at;
    while (p < end && (' ' == *p || '\t' == *p)) {
        p++;
    }
    const char *q = p;
    while (q < end && ' ' != *q && '\t' != *q) {
        q++;
    }
    *at = q;
    f->p = p;
    f->n = (size_t) (q - p);
    return q > p;
}

static int is(const char *p, size_t n, const char *word)
{
    return strlen(word) == n && 0 == memcmp(p, word, n);
}

/* Decimal digits only, lo..hi: strtol would take blanks, a sign and hex. */
static int parse_int(const char *p, size_t n, long lo, long hi, int *out)
{
    if (0 == n) {
        return -1;
    }
    long v = 0;
    for (size_t i = 0; i < n; ++i) {
        if (p[i] < '0' || p[i] > '9') {
            return -1;
        }
        v = v * 10 + (p[i] - '0');
        if (v > hi) {   /* before it can overflow */
            return -1;
        }
    }
    if (v < lo) {
        return -1;
    }
    *out = (int) v;
    return 0;
}

static int parse_ranks(ctx_t *c, field_t f, int *lo, int *hi)
{
    const char *dash = memchr(f.p, '-', f.n);
    int rc;
    if ('+' == f.p[f.n - 1]) {
        rc = parse_int(f.p, f.n - 1, 1, OFL_RULES_RANKS_MAX, lo);
        *hi = INT_MAX;
    } else if (NULL != dash) {
        size_t k = (size_t) (dash - f.p);
        rc = parse_int(f.p, k, 1, OFL_RULES_RANKS_MAX, lo);
        rc = rc ? rc : parse_int(dash + 1, f.n - k - 1, 1, OFL_RULES_RANKS_MAX, hi);
        if (0 == rc && *lo > *hi) {
            return FAIL(c, "empty rank range '%.*s%s' (N > M in N-M)", SHOW(f));
        }
    } else {
        rc = parse_int(f.p, f.n, 1, OFL_RULES_RANKS_MAX, lo);
        *hi = *lo;
    }
    if (0 != rc) {
        return FAIL(c, "bad rank range '%.*s%s' (N, N-M or N+ with 1 <= N, M <= %d)", SHOW(f),
                    OFL_RULES_RANKS_MAX);
    }
    return 0;
}

static int fmt_ranks(char *buf, size_t len, int lo, int hi)
{
    if (lo == hi) {
        return snprintf(buf, len, "%d", lo);
    }
    if (INT_MAX == hi) {
        return snprintf(buf, len, "%d+", lo);
    }
    return snprintf(buf, len, "%d-%d", lo, hi);
}

enum { KEY_POLICY, KEY_TREE, KEY_RADIX, KEY_ORIGIN, NKEYS };
static const char *const key_names[NKEYS] = { "policy", "tree", "radix", "origin" };

/* One KEY=VALUE field of rule r. seen: the keys the rule already gave. */
static int parse_key(ctx_t *c, ofl_rule_t *r, field_t f, unsigned *seen)
{
    const char *eq = memchr(f.p, '=', f.n);
    if (NULL == eq) {
        return FAIL(c, "expected KEY=VALUE, got '%.*s%s'", SHOW(f));
    }
    field_t key = { f.p, (size_t) (eq - f.p) };
    field_t val = { eq + 1, f.n - key.n - 1 };
    int k = 0;
    while (k < NKEYS && !is(key.p, key.n, key_names[k])) {
        k++;
    }
    if (NKEYS == k) {
        return FAIL(c, "unknown key '%.*s%s' (policy, tree, radix, origin)", SHOW(key));
    }
    if (*seen & (1u << k)) {
        return FAIL(c, "key '%s' given twice ('%.*s%s')", key_names[k], SHOW(f));
    }
    *seen |= 1u << k;
    /* Only the tree collectives have a tree to shape: advice for another is a mistake
     * in the file, and silently ignoring it would hide that. */
    if ((KEY_TREE == k || KEY_RADIX == k) && OFL_COLL_REDUCE != r->coll
        && OFL_COLL_BCAST != r->coll) {
        return FAIL(c, "'%.*s%s' does not apply to %s (tree and radix: reduce, bcast only)",
                    SHOW(f), ofl_coll_name((ofl_coll_t) r->coll));
    }
    switch (k) {
    case KEY_POLICY: {
        char text[OFL_RULES_LINE_MAX + 1];   /* a field fits: lines are that long at most */
        char why[128] = "";
        memcpy(text, val.p, val.n);
        text[val.n] = '\0';
        if (0 != ofl_policy_parse(text, &r->policy, why, sizeof(why))) {
            return FAIL(c, "bad policy '%.*s%s': %s", SHOW(val), why);
        }
        r->has_policy = 1;
        return 0;
    }
    case KEY_TREE:
        for (int t = OFL_TREE_KARY; t <= OFL_TREE_FLAT; ++t) {
            if (is(val.p, val.n, ofl_tree_kind_name((ofl_tree_kind_t) t))) {
                r->tree = t;
                return 0;
            }
        }
        return FAIL(c, "bad tree '%.*s%s' (kary, knomial, flat)", SHOW(val));
    case KEY_RADIX:
        if (0 != parse_int(val.p, val.n, 2, OFL_TREE_MAX_CHILDREN, &r->radix)) {
            return FAIL(c, "bad radix '%.*s%s' (2..%d)", SHOW(val), OFL_TREE_MAX_CHILDREN);
        }
        return 0;
    default:
        if (is(val.p, val.n, "measured")) {
            r->origin = OFL_ORIGIN_MEASURED;
        } else if (is(val.p, val.n, "simulated")) {
            r->origin = OFL_ORIGIN_SIMULATED;
        } else {
            return FAIL(c, "bad origin '%.*s%s' (measured, simulated)", SHOW(val));
        }
        return 0;
    }
}

/* A rule line whose first field is `f`; the rest is [at, end). */
static int parse_rule(ctx_t *c, field_t f, const char *at, const char *end)
{
    ofl_rules_t *out = c->out;
    if (out->n >= OFL_RULES_MAX) {
        return FAIL(c, "more than %d rules ('%.*s%s')", OFL_RULES_MAX, SHOW(f));
    }
    ofl_rule_t *r = &out->rule[out->n];
    memset(r, 0, sizeof(*r));
    r->coll = -1;
    for (int k = 0; k < OFL_COLL_COUNT; ++k) {
        if (is(f.p, f.n, ofl_coll_name((ofl_coll_t) k))) {
            r->coll = k;
        }
    }
    if (r->coll < 0) {
        return FAIL(c, "unknown collective '%.*s%s' (allreduce, reduce, bcast, barrier)",
                    SHOW(f));
    }
    field_t ranks;
    if (!next_field(&at, end, &ranks)) {
        return FAIL(c, "'%.*s%s' without a rank range (N, N-M or N+)", SHOW(f));
    }
    if (0 != parse_ranks(c, ranks, &r->lo, &r->hi)) {
        return -1;
    }
    r->tree = -1;
    r->origin = OFL_ORIGIN_MEASURED;
    r->line = c->line;
    unsigned seen = 0;
    field_t kv;
    while (next_field(&at, end, &kv)) {
        if (0 != parse_key(c, r, kv, &seen)) {
            return -1;
        }
    }
    if (0 == (seen & ((1u << KEY_POLICY) | (1u << KEY_TREE) | (1u << KEY_RADIX)))) {
        return FAIL(c, "rule '%.*s%s %.*s%s' gives no advice (policy=, tree= or radix=)",
                    SHOW(f), SHOW(ranks));
    }
    /* One rule per (collective, size): then which applies does not depend on the order of
     * the lines, and an edit that makes two ranges meet is caught, not resolved silently. */
    for (int i = 0; i < out->n; ++i) {
        const ofl_rule_t *o = &out->rule[i];
        if (o->coll == r->coll && o->lo <= r->hi && r->lo <= o->hi) {
            char other[32];
            fmt_ranks(other, sizeof(other), o->lo, o->hi);
            return FAIL(c, "%s ranks '%.*s%s' overlap line %d (%s %s)",
                        ofl_coll_name((ofl_coll_t) r->coll), SHOW(ranks), o->line,
                        ofl_coll_name((ofl_coll_t) o->coll), other);
        }
    }
    out->n++;
    return 0;
}

/* The format line, first field `f`: "format 1" and nothing more. */
static int parse_format(ctx_t *c, field_t f, const char *at, const char *end)
{
    field_t v, extra;
    if (!is(f.p, f.n, "format")) {
        return FAIL(c, "expected 'format 1' before the first rule, got '%.*s%s'", SHOW(f));
    }
    if (!next_field(&at, end, &v)) {
        return FAIL(c, "'format' without a version (expected 'format 1')");
    }
    if (!is(v.p, v.n, "1")) {
        return FAIL(c, "unsupported format '%.*s%s' (this reader knows format 1)", SHOW(v));
    }
    if (next_field(&at, end, &extra)) {
        return FAIL(c, "unexpected '%.*s%s' after 'format 1'", SHOW(extra));
    }
    return 0;
}

int ofl_rules_parse(const char *text, size_t len, ofl_rules_t *out, int *bad_line,
                    char *err, size_t errlen)
{
    ctx_t c = { out, bad_line, err, errlen, 0 };
    memset(out, 0, sizeof(*out));
    if (NULL != bad_line) {
        *bad_line = 0;
    }
    if (errlen > 0) {
        err[0] = '\0';
    }
    if (NULL == text && len > 0) {
        return fail_at(&c, 0, "no text");
    }
    int have_format = 0;
    size_t at = 0;
    while (at < len) {
        if (INT_MAX == c.line) {
            return fail_at(&c, 0, "more than %d lines", INT_MAX - 1);
        }
        c.line++;
        const char *s = text + at;
        const char *nl = memchr(s, '\n', len - at);
        size_t n = NULL != nl ? (size_t) (nl - s) : len - at;
        at += n + (NULL != nl);
        const char *nul = memchr(s, '\0', n);
        if (NULL != nul) {
            return FAIL(&c, "NUL byte at column %zu", (size_t) (nul - s) + 1);
        }
        if (n > 0 && '\r' == s[n - 1]) {
            n--;
        }
        if (n > OFL_RULES_LINE_MAX) {
            return FAIL(&c, "line of %zu bytes, longer than %d", n, OFL_RULES_LINE_MAX);
        }
        const char *hash = memchr(s, '#', n);
        const char *end = NULL != hash ? hash : s + n;
        const char *p = s;
        field_t f;
        if (!next_field(&p, end, &f)) {
            continue;
        }
        if (!have_format) {
            if (0 != parse_format(&c, f, p, end)) {
                return -1;
            }
            have_format = 1;
        } else if (is(f.p, f.n, "format")) {
            return FAIL(&c, "a second 'format' line");
        } else if (0 != parse_rule(&c, f, p, end)) {
            return -1;
        }
    }
    if (!have_format) {
        return fail_at(&c, 0, "no 'format 1' line (empty, or only comments and blanks)");
    }
    out->hash = fnv1a(text, len);
    return 0;
}

const ofl_rule_t *ofl_rules_find(const ofl_rules_t *rules, int coll, int ranks)
{
    if (NULL == rules) {
        return NULL;
    }
    for (int i = 0; i < rules->n; ++i) {
        const ofl_rule_t *r = &rules->rule[i];
        if (r->coll == coll && r->lo <= ranks && ranks <= r->hi) {
            return r;
        }
    }
    return NULL;
}

/* Appends to a buffer the way snprintf fills one: `at` counts what would have been
 * written, the buffer keeps what fits and stays terminated. */
typedef struct {
    char *buf;
    size_t len;
    size_t at;
} sink_t;

__attribute__((format(printf, 2, 3))) static void put(sink_t *o, const char *fmt, ...)
{
    size_t room = o->at < o->len ? o->len - o->at : 0;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(room > 0 ? o->buf + o->at : NULL, room, fmt, ap);
    va_end(ap);
    if (k > 0) {
        o->at += (size_t) k;
    }
}

/* A policy as ofl_policy_parse reads it back: sizes with the largest k/m/g suffix that
 * divides them exactly (policy.c's suffixes are powers of 1024), else in bytes. */
static void put_policy(sink_t *o, const ofl_policy_t *p)
{
    static const char suffix[] = { 'g', 'm', 'k' };
    for (int i = 0; i < p->n; ++i) {
        put(o, "%s%s", i > 0 ? "," : "", ofl_alg_name(p->rule[i].alg));
        uint64_t v = p->rule[i].max_bytes;
        if (UINT64_MAX == v) {
            continue;
        }
        int s = 0;
        while (s < 3 && (0 == v || 0 != (v & ((1ull << (10 * (3 - s))) - 1)))) {
            s++;
        }
        if (s < 3) {
            put(o, ":%llu%c", (unsigned long long) (v >> (10 * (3 - s))), suffix[s]);
        } else {
            put(o, ":%llu", (unsigned long long) v);
        }
    }
}

int ofl_rules_format(const ofl_rule_t *rule, char *buf, size_t len)
{
    sink_t o = { buf, len, 0 };
    if (len > 0) {
        buf[0] = '\0';
    }
    const char *coll = (unsigned) rule->coll < OFL_COLL_COUNT
                           ? ofl_coll_name((ofl_coll_t) rule->coll) : "?";
    char ranks[32];
    fmt_ranks(ranks, sizeof(ranks), rule->lo, rule->hi);
    put(&o, "%s %s", coll, ranks);
    if (rule->has_policy) {
        put(&o, " policy=");
        put_policy(&o, &rule->policy);
    }
    if (rule->tree >= 0) {
        put(&o, " tree=%s", ofl_tree_kind_name((ofl_tree_kind_t) rule->tree));
    }
    if (rule->radix > 0) {
        put(&o, " radix=%d", rule->radix);
    }
    /* Always written, default or not: a message should say what the advice rests on. */
    put(&o, " origin=%s", OFL_ORIGIN_SIMULATED == rule->origin ? "simulated" : "measured");
    return o.at > INT_MAX ? INT_MAX : (int) o.at;
}

/* By collective, then by first size (no two rules of one collective share a size). */
static int rule_order(const void *a, const void *b)
{
    const ofl_rule_t *x = *(const ofl_rule_t *const *) a, *y = *(const ofl_rule_t *const *) b;
    if (x->coll != y->coll) {
        return x->coll < y->coll ? -1 : 1;
    }
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

uint64_t ofl_rules_digest(const ofl_rules_t *rules)
{
    const ofl_rule_t *sorted[OFL_RULES_MAX];
    for (int i = 0; i < rules->n; ++i) {
        sorted[i] = &rules->rule[i];
    }
    qsort(sorted, (size_t) rules->n, sizeof(sorted[0]), rule_order);
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < rules->n; ++i) {
        char line[512];
        int n = ofl_rules_format(sorted[i], line, sizeof(line));
        h = fnv1a_more(h, line, n < (int) sizeof(line) ? (size_t) n : sizeof(line) - 1);
        h = fnv1a_more(h, "\n", 1);
    }
    return h;
}
