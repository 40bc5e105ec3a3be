/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Reproducible sums (repsum/repsum.h): the same multiset summed in many orders and
 * tree shapes gives the same bytes, and the value agrees with an exact sum kept
 * here in a long fixed-point accumulator: correctly rounded when no input bits
 * were dropped, within 1 ulp otherwise (the terms cancel by far less than 26
 * bits in the data used for that check, the condition repsum.h states).
 */
#include <complex.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "alu/alu.h"
#include "repsum/repsum.h"
#include "repsum/repsum_wide.h"
#include "unit.h"

/* ---- the exact reference: 2^-1074 .. 2^1100 in 32-bit limbs --------------- */

#define LIMBS 70

typedef struct {
    int64_t l[LIMBS];   /* limb i weighs 2^(32 i - 1074); unnormalized while adding */
} exact_t;

static void exact_add(exact_t *x, double v)
{
    int e;
    double f = frexp(fabs(v), &e);
    if (0.0 == v) {
        return;
    }
    /* |v| = m * 2^(e - 53), placed at bit e - 53 + 1074 (subnormals: shift right, exact) */
    int pos = e - 53 + 1074;
    uint64_t m = (uint64_t) ldexp(f, 53);
    if (pos < 0) {
        m >>= -pos;
        pos = 0;
    }
    int64_t s = v < 0 ? -1 : 1;
    int limb = pos / 32, off = pos % 32;
    unsigned __int128 w = (unsigned __int128) m << off;
    for (int i = 0; i < 3 && limb + i < LIMBS; ++i) {
        x->l[limb + i] += s * (int64_t) (uint32_t) (w >> (32 * i));
    }
}

static int exact_bit(const uint32_t *mag, int b)
{
    return b >= 0 ? (int) ((mag[b / 32] >> (b % 32)) & 1) : 0;
}

/* The exact sum rounded to nearest even in prec bits, smallest bit 2^lsb_min,
 * largest finite exponent emax. */
static double exact_round(const exact_t *x, int prec, int lsb_min, int emax)
{
    int64_t l[LIMBS];
    memcpy(l, x->l, sizeof(l));
    for (int i = 0; i + 1 < LIMBS; ++i) {
        int64_t carry = l[i] >> 32;   /* floor */
        l[i] -= carry * ((int64_t) 1 << 32);
        l[i + 1] += carry;
    }
    int neg = l[LIMBS - 1] < 0;
    uint32_t mag[LIMBS];
    /* two's complement negate over the limbs when negative */
    int64_t borrow = 0;
    for (int i = 0; i < LIMBS; ++i) {
        int64_t v = neg ? -l[i] - borrow : l[i];
        borrow = 0;
        if (neg && v < 0) {
            v += (int64_t) 1 << 32;
            borrow = 1;
        }
        mag[i] = (uint32_t) v;
    }
    int top = -1;
    for (int b = LIMBS * 32 - 1; b >= 0; --b) {
        if (exact_bit(mag, b)) {
            top = b;
            break;
        }
    }
    if (top < 0) {
        return 0.0;
    }
    int lsb = top - prec + 1;   /* bit index (from 2^-1074) of the result's last bit */
    if (lsb < lsb_min + 1074) {
        lsb = lsb_min + 1074;
    }
    double mant = 0;
    for (int b = top; b >= lsb; --b) {
        mant = 2 * mant + exact_bit(mag, b);
    }
    int round = exact_bit(mag, lsb - 1), sticky = 0;
    for (int b = lsb - 2; b >= 0 && !sticky; --b) {
        sticky = exact_bit(mag, b);
    }
    if (round && (sticky || fmod(mant, 2) == 1)) {
        mant += 1;
    }
    double v = ldexp(mant, lsb - 1074);
    if (v >= ldexp(1.0, emax + 1)) {
        v = INFINITY;
    }
    return neg ? -v : v;
}

/* ---- helpers ------------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static double rnd_unit(void)
{
    return (double) (rnd() >> 11) / 9007199254740992.0;
}

/* Ordered distance in ulps between two finite doubles of any sign. */
static uint64_t ulp_dist(double a, double b)
{
    int64_t ia, ib;
    memcpy(&ia, &a, 8);
    memcpy(&ib, &b, 8);
    if (ia < 0) {
        ia = INT64_MIN - ia;
    }
    if (ib < 0) {
        ib = INT64_MIN - ib;
    }
    return ia > ib ? (uint64_t) ia - (uint64_t) ib : (uint64_t) ib - (uint64_t) ia;
}

static int same_bits(double a, double b)
{
    return 0 == memcmp(&a, &b, sizeof(a));
}

#define MAXN 128   /* the two-pass form takes at most OFL_REPSUM_WIDE_MAX_TERMS */

/* Sum the elements e[0..n) in a random tree: repeatedly combine two random
 * live partial sums (either operand order) through the ALU's kernel. */
static ofl_repsum_t tree_sum(const ofl_repsum_t *e, int n, ofl_alu_fn add)
{
    ofl_repsum_t live[MAXN];
    memcpy(live, e, (size_t) n * sizeof(*e));
    while (n > 1) {
        int i = (int) (rnd() % (uint64_t) n), j = (int) (rnd() % (uint64_t) (n - 1));
        if (j >= i) {
            ++j;
        }
        ofl_repsum_t out;
        if (rnd() & 1) {
            add(&out, &live[i], &live[j], 1);
        } else {
            add(&out, &live[j], &live[i], 1);
        }
        int lo = i < j ? i : j, hi = i < j ? j : i;
        live[lo] = out;
        live[hi] = live[n - 1];
        --n;
    }
    return live[0];
}

/* Left to right in a random permutation, accumulating in place (out aliases a). */
static ofl_repsum_t chain_sum(const ofl_repsum_t *e, int n, ofl_alu_fn add)
{
    int perm[MAXN];
    for (int i = 0; i < n; ++i) {
        perm[i] = i;
    }
    for (int i = n - 1; i > 0; --i) {
        int j = (int) (rnd() % (uint64_t) (i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    ofl_repsum_t acc = e[perm[0]];
    for (int i = 1; i < n; ++i) {
        add(&acc, &acc, &e[perm[i]], 1);
    }
    return acc;
}

/* ---- the data sets ---------------------------------------------------------------- */

enum { SAME_SIGN, MIXED_MILD, WIDE, CANCEL, SUBNORMAL, HUGE, SETS };

static const char *const set_names[SETS] = {
    "same sign", "mixed signs", "wide exponents", "cancelling", "subnormal", "huge"
};

static double draw(int set)
{
    double sign = (rnd() & 1) ? -1.0 : 1.0;
    switch (set) {
    case SAME_SIGN:
        return ldexp(1.0 + rnd_unit(), (int) (rnd() % 40) - 20);
    case MIXED_MILD:
        /* mostly positive: the sum stays near the largest terms */
        return ((rnd() % 4) ? 1.0 : -1.0) * ldexp(1.0 + rnd_unit(), (int) (rnd() % 8));
    case WIDE:
        return ldexp(1.0 + rnd_unit(), (int) (rnd() % 600) - 300);
    case CANCEL:
        return sign * ldexp(1.0 + rnd_unit(), (int) (rnd() % 100) - 50);
    case SUBNORMAL:
        return sign * ldexp(rnd_unit(), -1060 + (int) (rnd() % 20));
    default:
        return sign * ldexp(1.0 + rnd_unit(), 1000 + (int) (rnd() % 24));
    }
}

static void test_orders_and_reference(void)
{
    ofl_alu_fn add = ofl_alu_lookup(OFL_OP_SUM, OFL_T_REPSUM);
    CHECK(NULL != add, "no SUM kernel for the repsum type");
    CHECK(sizeof(ofl_repsum_t) == ofl_type_size(OFL_T_REPSUM), "element size");
    if (NULL == add) {
        return;
    }
    int rounded = 0, exact_cases = 0, within = 0;
    for (int set = 0; set < SETS; ++set) {
        for (int trial = 0; trial < 60; ++trial) {
            int n = 1 + (int) (rnd() % MAXN);
            double v[MAXN];
            ofl_repsum_t e[MAXN];
            exact_t ex = { { 0 } };
            for (int i = 0; i < n; ++i) {
                v[i] = draw(set);
                exact_add(&ex, v[i]);
            }
            ofl_repsum_from_double(e, v, (size_t) n);
            ofl_repsum_t first = tree_sum(e, n, add);
            double got;
            ofl_repsum_to_double(&got, &first, 1);
            for (int k = 0; k < 24; ++k) {
                ofl_repsum_t other = (k & 1) ? tree_sum(e, n, add) : chain_sum(e, n, add);
                double again;
                ofl_repsum_to_double(&again, &other, 1);
                CHECK(0 == memcmp(&other, &first, sizeof(other)) && same_bits(again, got),
                      "%s, %d terms: order %d gives %a, the first gave %a", set_names[set], n, k,
                      again, got);
            }
            double want = exact_round(&ex, 53, -1074, 1023);
            if (!ofl_repsum_inexact(&first)) {
                ++exact_cases;
                rounded += same_bits(got, want);
                CHECK(same_bits(got, want), "%s, %d terms, nothing dropped: %a, exact sum "
                      "rounded is %a", set_names[set], n, got, want);
            } else if (CANCEL != set) {
                within += ulp_dist(got, want) <= 1;
                CHECK(ulp_dist(got, want) <= 1, "%s, %d terms: %a is %llu ulp from the exact "
                      "sum %a", set_names[set], n, got,
                      (unsigned long long) ulp_dist(got, want), want);
            } else {
                /* heavy cancellation: the bound is absolute, terms * 2^-80 * max|x| */
                double maxabs = 0;
                for (int i = 0; i < n; ++i) {
                    maxabs = fmax(maxabs, fabs(v[i]));
                }
                CHECK(fabs(got - want) <= ldexp(maxabs * n, -80) + ldexp(fabs(want), -52),
                      "cancelling, %d terms: %a vs exact %a", n, got, want);
            }
        }
    }
    CHECK(exact_cases > 100 && rounded == exact_cases, "correctly rounded %d of %d",
          rounded, exact_cases);
    CHECK(within > 50, "only %d inexact cases checked against 1 ulp", within);
}

static void test_floats(void)
{
    ofl_alu_fn add = ofl_alu_lookup(OFL_OP_SUM, OFL_T_REPSUM);
    int checked = 0;
    for (int trial = 0; trial < 200; ++trial) {
        int n = 1 + (int) (rnd() % MAXN);
        float f[MAXN];
        ofl_repsum_t e[MAXN];
        exact_t ex = { { 0 } };
        for (int i = 0; i < n; ++i) {
            f[i] = (float) ((trial & 1 ? -1.0 : 1.0) * ((rnd() % 5) ? 1.0 : -1.0)
                            * ldexp(1.0 + rnd_unit(), (int) (rnd() % 30) - 15));
            if (trial % 10 == 9) {
                f[i] = (float) ldexp(rnd_unit(), -140 - (int) (rnd() % 9));   /* subnormal */
            }
            exact_add(&ex, f[i]);
        }
        ofl_repsum_from_float(e, f, (size_t) n);
        ofl_repsum_t a = tree_sum(e, n, add), b = chain_sum(e, n, add);
        float ga, gb;
        ofl_repsum_to_float(&ga, &a, 1);
        ofl_repsum_to_float(&gb, &b, 1);
        float want = (float) exact_round(&ex, 24, -149, 127);
        CHECK(0 == memcmp(&ga, &gb, sizeof(ga)), "float orders differ: %a vs %a", ga, gb);
        /* 24 + 80 kept bits: float sums of these data never drop anything */
        CHECK(!ofl_repsum_inexact(&a), "float sum dropped bits");
        CHECK(0 == memcmp(&ga, &want, sizeof(ga)), "float sum %a, exact sum rounded %a", ga,
              want);
        ++checked;
    }
    CHECK(200 == checked, "float trials");
}

static double sum_of(const double *v, int n)
{
    ofl_alu_fn add = ofl_alu_lookup(OFL_OP_SUM, OFL_T_REPSUM);
    ofl_repsum_t e[MAXN];
    ofl_repsum_from_double(e, v, (size_t) n);
    ofl_repsum_t s = tree_sum(e, n, add);
    double out;
    ofl_repsum_to_double(&out, &s, 1);
    return out;
}

static void test_special_values(void)
{
    double d;
    d = sum_of((double[]) { 1.0, NAN, 2.0 }, 3);
    CHECK(isnan(d), "1 + NaN + 2 = %a", d);
    d = sum_of((double[]) { INFINITY, -INFINITY }, 2);
    CHECK(isnan(d), "Inf - Inf = %a", d);
    d = sum_of((double[]) { INFINITY, -DBL_MAX, 3.0 }, 3);
    CHECK(isinf(d) && d > 0, "Inf + finite = %a", d);
    d = sum_of((double[]) { -INFINITY, -INFINITY }, 2);
    CHECK(isinf(d) && d < 0, "-Inf - Inf = %a", d);
    d = sum_of((double[]) { -0.0, -0.0, -0.0 }, 3);
    CHECK(0.0 == d && signbit(d), "-0 + -0 + -0 = %a, want -0", d);
    d = sum_of((double[]) { -0.0, 0.0 }, 2);
    CHECK(0.0 == d && !signbit(d), "-0 + +0 = %a, want +0", d);
    d = sum_of((double[]) { 1.5, -1.5, -0.0 }, 3);
    CHECK(0.0 == d && !signbit(d), "1.5 - 1.5 - 0 = %a, want +0", d);
    d = sum_of((double[]) { DBL_MAX, DBL_MAX }, 2);
    CHECK(isinf(d) && d > 0, "DBL_MAX + DBL_MAX = %a, want +Inf", d);
    d = sum_of((double[]) { -DBL_MAX, -DBL_MAX, -1.0 }, 3);
    CHECK(isinf(d) && d < 0, "-2 DBL_MAX = %a, want -Inf", d);
    /* the exact sum fits although partial sums would not: every order agrees */
    d = sum_of((double[]) { DBL_MAX, DBL_MAX, -DBL_MAX }, 3);
    CHECK(DBL_MAX == d, "DBL_MAX + DBL_MAX - DBL_MAX = %a", d);
    /* the largest sum below the overflow threshold rounds to DBL_MAX */
    d = sum_of((double[]) { DBL_MAX, ldexp(1.0, 970) * 0.999 }, 2);
    CHECK(DBL_MAX == d, "DBL_MAX + just under half an ulp = %a", d);
    d = sum_of((double[]) { DBL_MAX, ldexp(1.0, 970) }, 2);
    CHECK(isinf(d), "DBL_MAX + half an ulp (ties to even overflows) = %a", d);
    double tiny = ldexp(1.0, -1074);
    d = sum_of((double[]) { tiny, tiny, tiny }, 3);
    CHECK(ldexp(3.0, -1074) == d, "3 smallest subnormals = %a", d);
    d = sum_of((double[]) { DBL_MIN, -tiny }, 2);
    CHECK(DBL_MIN - tiny == d, "DBL_MIN - 2^-1074 = %a", d);
    /* 1 + 2^-53 + 2^-53: the ordinary left-to-right sum says 1, the exact sum 1 + 2^-52 */
    d = sum_of((double[]) { 1.0, ldexp(1.0, -53), ldexp(1.0, -53) }, 3);
    CHECK(1.0 + ldexp(1.0, -52) == d, "1 + 2^-53 + 2^-53 = %a", d);
    /* bits below the kept bins are dropped, and that is reported */
    ofl_repsum_t e[2], s;
    ofl_repsum_from_double(e, (double[]) { ldexp(1.0, 100), 1.0 }, 2);
    ofl_repsum_add(&s, &e[0], &e[1], 1);
    CHECK(ofl_repsum_inexact(&s), "2^100 + 1: the 1 lies below the kept bins");
    ofl_repsum_add(&s, &e[1], &e[1], 1);
    CHECK(!ofl_repsum_inexact(&s), "1 + 1 is exact");
    float f;
    ofl_repsum_t fe[2];
    ofl_repsum_from_float(fe, (float[]) { FLT_MAX, FLT_MAX }, 2);
    ofl_repsum_add(&s, &fe[0], &fe[1], 1);
    ofl_repsum_to_float(&f, &s, 1);
    CHECK(isinf(f) && f > 0, "float FLT_MAX + FLT_MAX = %a, want +Inf", f);
    ofl_repsum_from_float(fe, (float[]) { -0.0f, -0.0f }, 2);
    ofl_repsum_add(&s, &fe[0], &fe[1], 1);
    ofl_repsum_to_float(&f, &s, 1);
    CHECK(0.0f == f && signbit(f), "float -0 + -0 = %a", f);
}

/* Complex values are pairs of reals: their parts are summed independently. */
static void test_complex(void)
{
    ofl_alu_fn add = ofl_alu_lookup(OFL_OP_SUM, OFL_T_REPSUM);
    double _Complex z[3] = { 1.0 + 2.0 * I, ldexp(1.0, -60) - 3.0 * I, -1.0 + 0.5 * I };
    ofl_repsum_t e[3][2], s[2], t[2];
    for (int i = 0; i < 3; ++i) {
        ofl_repsum_from_double(e[i], (const double *) &z[i], 2);
    }
    add(s, e[0], e[1], 2);
    add(s, s, e[2], 2);
    add(t, e[2], e[0], 2);
    add(t, e[1], t, 2);
    double _Complex r1, r2;
    ofl_repsum_to_double((double *) &r1, s, 2);
    ofl_repsum_to_double((double *) &r2, t, 2);
    CHECK(0 == memcmp(&r1, &r2, sizeof(r1)), "complex orders differ");
    CHECK(creal(r1) == ldexp(1.0, -60) && cimag(r1) == -0.5, "complex sum %a%+ai", creal(r1),
          cimag(r1));
}

/* ---- the two-pass form: bit-identical to the binned one ------------------------ */

/* Combine n elements of `size` bytes in a random tree through an ALU kernel,
 * either operand order; the result is left in buf (first element). */
static void tree_combine(void *buf, size_t size, int n, ofl_alu_fn fn)
{
    unsigned char *b = buf;
    while (n > 1) {
        int i = (int) (rnd() % (uint64_t) n), j = (int) (rnd() % (uint64_t) (n - 1));
        if (j >= i) {
            ++j;
        }
        int lo = i < j ? i : j, hi = i < j ? j : i;
        if (rnd() & 1) {
            fn(b + lo * size, b + i * size, b + j * size, 1);
        } else {
            fn(b + lo * size, b + j * size, b + i * size, 1);
        }
        memmove(b + hi * size, b + (n - 1) * size, size);
        --n;
    }
}

/* What a two-pass sum computes: every input's meta merged (pass 1), every
 * input truncated under that final meta and the integers added (pass 2). The
 * per-input arrays stand for the ranks' buffers. */
static double wide_sum(const double *v, int n, ofl_repsum_meta_t *final)
{
    ofl_alu_fn merge = ofl_alu_lookup(OFL_OP_SUM, OFL_T_REPSUM_META);
    ofl_alu_fn add = ofl_alu_lookup(OFL_OP_SUM, OFL_T_REPSUM_WIDE);
    ofl_repsum_meta_t m[MAXN], g[MAXN];
    ofl_repsum_wide_t w[MAXN];
    ofl_repsum_meta_from_double(m, v, (size_t) n);
    tree_combine(m, sizeof(m[0]), n, merge);
    for (int i = 0; i < n; ++i) {
        g[i] = m[0];   /* every rank has the allreduced meta */
    }
    ofl_repsum_wide_from_double(w, v, g, (size_t) n);
    tree_combine(w, sizeof(w[0]), n, add);
    double out;
    ofl_repsum_wide_to_double(&out, w, m, 1);
    *final = m[0];
    return out;
}

static float wide_sum_float(const float *f, int n)
{
    ofl_alu_fn merge = ofl_alu_lookup(OFL_OP_SUM, OFL_T_REPSUM_META);
    ofl_alu_fn add = ofl_alu_lookup(OFL_OP_SUM, OFL_T_REPSUM_WIDE);
    ofl_repsum_meta_t m[MAXN], g[MAXN];
    ofl_repsum_wide_t w[MAXN];
    ofl_repsum_meta_from_float(m, f, (size_t) n);
    tree_combine(m, sizeof(m[0]), n, merge);
    for (int i = 0; i < n; ++i) {
        g[i] = m[0];
    }
    ofl_repsum_wide_from_float(w, f, g, (size_t) n);
    tree_combine(w, sizeof(w[0]), n, add);
    float out;
    ofl_repsum_wide_to_float(&out, w, m, 1);
    return out;
}

enum { W_SPREAD = SETS, W_SPECIAL, W_SETS };

/* The binned form's sets, exponents over the whole double range (the binned
 * form is inexact there), and a mix with NaN, infinities and signed zeros. */
static double draw_wide(int set)
{
    double sign = (rnd() & 1) ? -1.0 : 1.0;
    if (W_SPREAD == set) {
        return sign * ldexp(1.0 + rnd_unit(), (int) (rnd() % 2090) - 1070);
    }
    if (W_SPECIAL == set) {
        static const double specials[] = { NAN, INFINITY, -INFINITY, -0.0, 0.0, 0x1p-1074 };
        return (rnd() % 16) ? sign * ldexp(1.0 + rnd_unit(), (int) (rnd() % 200) - 100)
                            : specials[rnd() % 6];
    }
    return draw(set);
}

static void test_wide_equals_binned(void)
{
    ofl_alu_fn add = ofl_alu_lookup(OFL_OP_SUM, OFL_T_REPSUM);
    CHECK(NULL != ofl_alu_lookup(OFL_OP_SUM, OFL_T_REPSUM_META)
          && NULL != ofl_alu_lookup(OFL_OP_SUM, OFL_T_REPSUM_WIDE)
          && 2 == ofl_type_size(OFL_T_REPSUM_META) && 16 == ofl_type_size(OFL_T_REPSUM_WIDE),
          "two-pass kernels registered");
    int inexact = 0, exact = 0;
    for (int set = 0; set < W_SETS; ++set) {
        for (int trial = 0; trial < 120; ++trial) {
            int n = trial % 4 ? 1 + (int) (rnd() % MAXN) : OFL_REPSUM_WIDE_MAX_TERMS;
            double v[MAXN];
            ofl_repsum_t e[MAXN];
            exact_t ex = { { 0 } };
            for (int i = 0; i < n; ++i) {
                v[i] = draw_wide(set);
                if (W_SPECIAL != set) {
                    exact_add(&ex, v[i]);
                }
            }
            ofl_repsum_from_double(e, v, (size_t) n);
            ofl_repsum_t s = tree_sum(e, n, add);
            double binned, wide;
            ofl_repsum_to_double(&binned, &s, 1);
            ofl_repsum_meta_t m;
            wide = wide_sum(v, n, &m);
            CHECK(same_bits(binned, wide), "%s, %d terms: two-pass %a, binned %a",
                  W_SPREAD == set ? "spread" : W_SPECIAL == set ? "special" : set_names[set],
                  n, wide, binned);
            CHECK(ofl_repsum_meta_inexact(m) == ofl_repsum_inexact(&s), "inexact flags differ");
            if (W_SPECIAL == set) {
                continue;
            }
            if (ofl_repsum_meta_inexact(m)) {
                ++inexact;
            } else {
                ++exact;
                double want = exact_round(&ex, 53, -1074, 1023);
                CHECK(same_bits(wide, want), "%d terms, exact: two-pass %a, exact sum %a", n,
                      wide, want);
            }
        }
    }
    CHECK(inexact > 100 && exact > 300, "%d inexact and %d exact cases", inexact, exact);
}

static void test_wide_floats_and_extremes(void)
{
    ofl_alu_fn add = ofl_alu_lookup(OFL_OP_SUM, OFL_T_REPSUM);
    int exact_floats = 0;
    for (int trial = 0; trial < 200; ++trial) {
        int n = trial % 4 ? 1 + (int) (rnd() % MAXN) : OFL_REPSUM_WIDE_MAX_TERMS;
        float f[MAXN];
        ofl_repsum_t e[MAXN];
        exact_t ex = { { 0 } };
        for (int i = 0; i < n; ++i) {
            int spread = trial % 3 ? 30 : 270;
            f[i] = (float) (((rnd() & 1) ? -1.0 : 1.0)
                            * ldexp(1.0 + rnd_unit(), (int) (rnd() % spread) - spread / 2));
            if (trial % 10 == 9) {
                f[i] = (float) ldexp(rnd_unit(), -140 - (int) (rnd() % 9));   /* subnormal */
            }
            exact_add(&ex, f[i]);
        }
        ofl_repsum_from_float(e, f, (size_t) n);
        ofl_repsum_t s = tree_sum(e, n, add);
        float binned, wide = wide_sum_float(f, n);
        ofl_repsum_to_float(&binned, &s, 1);
        CHECK(0 == memcmp(&binned, &wide, sizeof(wide)), "float, %d terms: two-pass %a, "
              "binned %a", n, wide, binned);
        float want = (float) exact_round(&ex, 24, -149, 127);
        exact_floats += !ofl_repsum_inexact(&s);
        CHECK(ofl_repsum_inexact(&s) || 0 == memcmp(&wide, &want, sizeof(want)),
              "float, %d terms, exact: two-pass %a, exact sum %a", n, wide, want);
    }
    CHECK(exact_floats > 100, "only %d exact float sums", exact_floats);
    /* 128 terms each just under 2^(K W) in units of the lowest kept bin (top bit
     * at bit 439 = the top of bin 10): the sum is just under 2^127, the most the
     * integer holds, of either sign */
    double top = ldexp(2.0 - ldexp(1.0, -52), 439 - 1074 - 1);
    double big[MAXN];
    for (int sign = -1; sign <= 1; sign += 2) {
        for (int i = 0; i < OFL_REPSUM_WIDE_MAX_TERMS; ++i) {
            big[i] = sign * top;
        }
        ofl_repsum_meta_t m;
        double d = wide_sum(big, OFL_REPSUM_WIDE_MAX_TERMS, &m);
        CHECK(d == sign * 128 * top && !ofl_repsum_meta_inexact(m), "128 x %a = %a", sign * top,
              d);
    }
    for (int i = 0; i < OFL_REPSUM_WIDE_MAX_TERMS; ++i) {
        big[i] = i < 64 ? -DBL_MAX : DBL_MAX * 0.5;
    }
    big[0] = DBL_MAX;
    ofl_repsum_meta_t m;
    double d = wide_sum(big, OFL_REPSUM_WIDE_MAX_TERMS, &m);
    CHECK(isinf(d) && d < 0, "-63 DBL_MAX + DBL_MAX + 32 DBL_MAX = %a, want -Inf", d);
    /* A tie at 53 bits just above 2^126 units of the lowest kept bin (2^-754):
     * broken by one unit (the binned form cuts that unit into its sticky bit, the
     * two-pass form keeps it; both round up), or not: ties to even, down from an
     * even significand, up from an odd one (one more ulp, 2^74 units). */
    for (int c = 0; c < 3; ++c) {
        int n = 0;
        for (; n < 86; ++n) {
            big[n] = 1.5 * ldexp(1.0, -635);   /* 129 x 2^119 units in all */
        }
        big[n++] = ldexp(1.0, -681);           /* 2^73 units: half an ulp */
        big[n++] = 0 == c ? ldexp(1.0, -754) : 2 == c ? ldexp(1.0, -680) : 0.0;
        double want = 129 * ldexp(1.0, -635) + (1 == c ? 0 : 2 == c ? ldexp(1.0, -679)
                                                               : ldexp(1.0, -680));
        double binned = sum_of(big, n), wide = wide_sum(big, n, &m);
        CHECK(want == binned && want == wide, "tie case %d: binned %a, two-pass %a, want %a", c,
              binned, wide, want);
    }
    d = wide_sum((double[]) { -0.0, -0.0 }, 2, &m);
    CHECK(0.0 == d && signbit(d), "two-pass -0 + -0 = %a", d);
    d = wide_sum((double[]) { INFINITY, 1.0, -INFINITY }, 3, &m);
    CHECK(isnan(d), "two-pass Inf - Inf = %a", d);
    d = wide_sum((double[]) { ldexp(1.0, 100), 1.0 }, 2, &m);
    CHECK(ofl_repsum_meta_inexact(m) && ldexp(1.0, 100) == d, "2^100 + 1 (1 dropped) = %a", d);
}

/* ---- the vector code against the portable reference ----------------------------- */

/* Values that take every branch of the scalar code: normal ones at the
 * range's ends, next to and at a bin's edges (32.0 and 64.0: bits 1079 and
 * 1080 = 27 W, each the lowest and the top bit at once), then NaN (quiet, signalling, negative),
 * infinities, signed zeros, subnormals from the smallest up. */
static const uint64_t edges[] = {
    0x0010000000000000ull, 0x7fefffffffffffffull, 0xffefffffffffffffull,
    0x7fe0000000000000ull, 0x3ff0000000000000ull, 0x3ff0000000000001ull,
    0x0280000000000000ull, 0x4050000000000000ull, 0xc04fffffffffffffull,
    0x4040000000000000ull, 0x0010000000000001ull, 0x8020000000000000ull,
    /* not normal from here */
    0x7ff8000000000000ull, 0x7ff0000000000001ull, 0xfff8000000000000ull,
    0x7ff0000000000000ull, 0xfff0000000000000ull, 0x0000000000000000ull,
    0x8000000000000000ull, 0x0000000000000001ull, 0x8000000000000001ull,
    0x000fffffffffffffull, 0x0008000000000000ull, 0x800ffffffffffffeull,
    0x0000010000000000ull, 0x000000ffffffffffull,
};
#define NORMAL_EDGES 12

static double edge_value(int normal)
{
    size_t n = normal ? NORMAL_EDGES : sizeof(edges) / sizeof(edges[0]);
    uint64_t b = edges[rnd() % n];
    double d;
    memcpy(&d, &b, sizeof(d));
    return d;
}

/* Any bits (NaN and infinities 1 in 2048), exponents in a narrow range (the
 * common case: every lane normal), the edge values, normal edge values among
 * narrow ones (the vector code's path for blocks of normal values), or a mix
 * of all. */
static double draw_vec(int set)
{
    uint64_t b = rnd();
    double d;
    switch (set) {
    case 0:
        memcpy(&d, &b, sizeof(d));
        return d;
    case 1:
        return ((b & 1) ? -1.0 : 1.0) * ldexp(1.0 + rnd_unit(), (int) (rnd() % 61) - 30);
    case 2:
        return edge_value(0);
    case 3:
        return 0 == rnd() % 2 ? edge_value(1) : draw_vec(1);
    default:
        return 0 == rnd() % 3 ? edge_value(0) : draw_vec((int) (rnd() % 2));
    }
}

#define VN 1031   /* odd: every tail length of the vector loops comes up */

static double vx[4][VN + 4];
static ofl_repsum_meta_t vm[4][VN + 4], vg[VN + 4], vr[VN + 4];
static ofl_repsum_wide_t vw[VN + 4], vwr[VN + 4], vs[VN + 4], vsr[VN + 4];
static double vd[VN + 4], vdr[VN + 4];
static float vf[VN + 4], vfr[VN + 4];

/* Values of three ranks: metas, the merged meta, the integers under it, their
 * sum and its rounding, by the entry points and by the reference, compared bit
 * for bit at each start offset (unaligned for the vector loads) and count. */
static void vector_round(int set, size_t off, size_t n)
{
    int bad_meta = 0, bad_wide = 0, bad_add = 0, bad_round = 0;
    for (int r = 0; r < 3; ++r) {
        for (size_t i = 0; i < n; ++i) {
            vx[r][off + i] = draw_vec(set);
        }
        ofl_repsum_meta_from_double(vm[r] + off, vx[r] + off, n);
        ofl_repsum_meta_from_double_ref(vr + off, vx[r] + off, n);
        bad_meta += 0 != memcmp(vm[r] + off, vr + off, n * sizeof(vr[0]));
    }
    ofl_repsum_meta_merge(vg + off, vm[0] + off, vm[1] + off, n);
    ofl_repsum_meta_merge(vg + off, vg + off, vm[2] + off, n);
    for (int r = 0; r < 3; ++r) {
        ofl_repsum_wide_from_double(vw + off, vx[r] + off, vg + off, n);
        ofl_repsum_wide_from_double_ref(vwr + off, vx[r] + off, vg + off, n);
        bad_wide += 0 != memcmp(vw + off, vwr + off, n * sizeof(vw[0]));
        if (0 == r) {
            memcpy(vs + off, vwr + off, n * sizeof(vs[0]));
            memcpy(vsr + off, vwr + off, n * sizeof(vs[0]));
        } else {
            ofl_repsum_wide_add(vs + off, vs + off, vw + off, n);   /* out aliases a */
            ofl_repsum_wide_add_ref(vsr + off, vwr + off, vsr + off, n);   /* and b */
            bad_add += 0 != memcmp(vs + off, vsr + off, n * sizeof(vs[0]));
        }
    }
    ofl_repsum_wide_to_double(vd + off, vs + off, vg + off, n);
    ofl_repsum_wide_to_double_ref(vdr + off, vsr + off, vg + off, n);
    bad_round += 0 != memcmp(vd + off, vdr + off, n * sizeof(vd[0]));
    /* the same sums rounded to float: overflowing, subnormal and normal ones */
    ofl_repsum_wide_to_float(vf + off, vs + off, vg + off, n);
    ofl_repsum_wide_to_float_ref(vfr + off, vsr + off, vg + off, n);
    bad_round += 0 != memcmp(vf + off, vfr + off, n * sizeof(vf[0]));
    /* floats: the values rounded to float (subnormal floats among the edge
     * values' neighbours), against the reference of the same values as doubles */
    for (size_t i = 0; i < n; ++i) {
        float f = 2 == set && (rnd() & 1) ? (float) ldexp(vx[0][off + i], -1000)
                                          : (float) vx[0][off + i];
        vf[off + i] = f;
        vx[1][off + i] = (double) f;
    }
    ofl_repsum_meta_from_float(vm[0] + off, vf + off, n);
    ofl_repsum_meta_from_double_ref(vr + off, vx[1] + off, n);
    bad_meta += 0 != memcmp(vm[0] + off, vr + off, n * sizeof(vr[0]));
    ofl_repsum_meta_merge(vr + off, vg + off, vm[0] + off, n);   /* a rounding up may raise a top */
    ofl_repsum_wide_from_float(vw + off, vf + off, vr + off, n);
    ofl_repsum_wide_from_double_ref(vwr + off, vx[1] + off, vr + off, n);
    bad_wide += 0 != memcmp(vw + off, vwr + off, n * sizeof(vw[0]));
    CHECK(0 == bad_meta, "set %d, offset %zu, %zu values: vector meta differs", set, off, n);
    CHECK(0 == bad_wide, "set %d, offset %zu, %zu values: vector integers differ", set, off, n);
    CHECK(0 == bad_add, "set %d, offset %zu, %zu values: vector adds differ", set, off, n);
    CHECK(0 == bad_round, "set %d, offset %zu, %zu values: vector rounding differs", set, off,
          n);
}

/* Sums the conversions cannot produce from a few ranks, rounded by both: any
 * 128-bit integer under any top bin and flags (subnormal and overflowing
 * results, tops past the range), exact ties and one above and below them,
 * sums of 53 bits or fewer, and zeros. */
static void vector_rounding_extremes(void)
{
    int bad = 0, bad_float = 0;
    for (int round = 0; round < 400; ++round) {
        size_t n = 1 + rnd() % 37, off = rnd() % 4;
        for (size_t i = 0; i < n; ++i) {
            ofl_repsum_wide_t *e = &vs[off + i];
            uint64_t kind = rnd() % 7, t = rnd() % 127;
            e->lo = rnd();
            e->hi = rnd();
            if (kind >= 1) {
                /* u of t + 1 bits, possibly a tie at bit t - 53 (double) or
                 * t - 24 (float) */
                unsigned __int128 u = ((unsigned __int128) e->hi << 64 | e->lo) >> (127 - t);
                u |= (unsigned __int128) 1 << t;
                if (2 == kind && t > 53) {
                    u &= ~(((unsigned __int128) 1 << (t - 53)) - 1);
                    u |= (unsigned __int128) 1 << (t - 53);
                    u += (unsigned __int128) (rnd() % 3) - 1;   /* the tie, one below or above */
                } else if (5 == kind && t > 24) {
                    u &= ~(((unsigned __int128) 1 << (t - 24)) - 1);
                    u |= (unsigned __int128) 1 << (t - 24);
                    u += (unsigned __int128) (rnd() % 3) - 1;
                } else if (3 == kind) {
                    u &= ((unsigned __int128) 1 << 53) - 1;   /* exact */
                } else if (4 == kind) {
                    u = 0;
                }
                if (rnd() & 1) {
                    u = -u;
                }
                e->lo = (uint64_t) u;
                e->hi = (uint64_t) (u >> 64);
            }
            uint16_t m = (uint16_t) rnd();
            /* mostly finite metas, tops over the bins of the double range, or
             * where the sums are normal floats (tops 22..32) */
            unsigned top = (rnd() & 1) ? (unsigned) (rnd() % 60) : 22 + (unsigned) (rnd() % 11);
            vg[off + i] = (rnd() % 4) ? (uint16_t) ((m & 0x8fc0) | top) : m;
        }
        ofl_repsum_wide_to_double(vd + off, vs + off, vg + off, n);
        ofl_repsum_wide_to_double_ref(vdr + off, vs + off, vg + off, n);
        bad += 0 != memcmp(vd + off, vdr + off, n * sizeof(vd[0]));
        ofl_repsum_wide_to_float(vf + off, vs + off, vg + off, n);
        ofl_repsum_wide_to_float_ref(vfr + off, vs + off, vg + off, n);
        bad_float += 0 != memcmp(vf + off, vfr + off, n * sizeof(vf[0]));
    }
    CHECK(0 == bad, "%d of 400 rounds of extreme sums: vector rounding differs", bad);
    CHECK(0 == bad_float, "%d of 400 rounds of extreme sums: vector rounding to float differs",
          bad_float);
    /* the adds' carries: low words that wrap, in both directions */
    for (size_t i = 0; i < VN; ++i) {
        vw[i].lo = (rnd() & 1) ? ~(uint64_t) (rnd() % 3) : rnd() % 3;
        vw[i].hi = rnd();
        vwr[i].lo = (rnd() & 1) ? ~(uint64_t) (rnd() % 3) : rnd() % 3;
        vwr[i].hi = rnd();
    }
    ofl_repsum_wide_add(vs, vw, vwr, VN);
    ofl_repsum_wide_add_ref(vsr, vw, vwr, VN);
    CHECK(0 == memcmp(vs, vsr, VN * sizeof(vs[0])), "the adds' carries differ");
}

static void test_vector_level(void)
{
    for (int set = 0; set < 5; ++set) {
        for (size_t off = 0; off < 4; ++off) {
            for (size_t n = 0; n <= 37; ++n) {
                vector_round(set, off, n);
            }
            vector_round(set, off, VN);
        }
    }
    vector_rounding_extremes();
    /* independently: known values through the entry points */
    double in[5] = { -0.0, INFINITY, 0x1p-1074, 1.0 + 0x1p-52, -0x1.8p100 };
    ofl_repsum_meta_t m[5];
    ofl_repsum_meta_from_double(m, in, 5);
    /* 1 + 2^-52: bits 1022 (lsb) and 1074 (top) of the 2^-1074 grid, bins 25 and 26 */
    CHECK(0x8000 + (25 << 6) + 26 == m[3], "meta of 1 + 2^-52: %#x", m[3]);
    /* -1.5 2^100: bits 1173 and 1174, bin 29 */
    CHECK(0x8000 + (29 << 6) + 29 == m[4], "meta of -1.5 2^100: %#x", m[4]);
    CHECK(0xffc0 - 0x4000 - 0x1000 == m[1], "meta of +Inf: %#x", m[1]);
    CHECK(0x0fc0 == m[0] && 0x8000 == m[2], "meta of -0.0 %#x, of 2^-1074 %#x", m[0], m[2]);
}

/* ---- the fast paths of the binned conversions against the general code ------ */

static int same_element(const ofl_repsum_t *a, const ofl_repsum_t *b)
{
    return 0 == memcmp(a, b, sizeof(*a));
}

/* One input through ofl_repsum_from_double1 (inline fast path), the array
 * conversion (fast path per element) and the general code alone: one element. */
static void from_paths_agree(double x)
{
    ofl_repsum_t one, arr, ref;
    memset(&one, 0x5a, sizeof(one));
    ofl_repsum_from_double1(&one, x);
    ofl_repsum_from_double(&arr, &x, 1);
    ofl_repsum_from_double_ref(&ref, &x, 1);
    CHECK(same_element(&one, &ref) && same_element(&arr, &ref),
          "%a: element (%lld %lld %lld %#llx) from the fast path, (%lld %lld %lld %#llx) from "
          "the general code", x, (long long) one.c[0], (long long) one.c[1],
          (long long) one.c[2], (unsigned long long) one.meta, (long long) ref.c[0],
          (long long) ref.c[1], (long long) ref.c[2], (unsigned long long) ref.meta);
}

/* One element through ofl_repsum_to_double1, the array conversion and the
 * general code alone: the same bits. */
static void to_paths_agree(const ofl_repsum_t *e)
{
    double one = ofl_repsum_to_double1(e), arr, ref;
    ofl_repsum_to_double(&arr, e, 1);
    ofl_repsum_to_double_ref(&ref, e, 1);
    CHECK(same_bits(one, ref) && same_bits(arr, ref),
          "element (%lld %lld %lld %#llx): %a from the fast path, %a from the general code",
          (long long) e->c[0], (long long) e->c[1], (long long) e->c[2],
          (unsigned long long) e->meta, one, ref);
}

/* A component of an element: any value a sum of up to MAX_TERMS inputs can
 * give (|c| < 2^62), often small or next to the fast path's limit 2^45. */
static int64_t draw_component(void)
{
    uint64_t b = rnd();
    switch (rnd() % 6) {
    case 0:
        return (int64_t) (b % (UINT64_C(1) << 41)) - (INT64_C(1) << 40);
    case 1:
        return (int64_t) (b % 7) - 3;
    case 2:
        /* next to a power of two from the fast path's limit up */
        return ((b & 1) ? -1 : 1)
               * ((INT64_C(1) << (45 + (int) (rnd() % 3))) + (int64_t) (rnd() % 5) - 2);
    case 3:
        return (int64_t) (b >> 2) - (INT64_C(1) << 61);
    default:
        return (int64_t) (b % (UINT64_C(1) << 47)) - (INT64_C(1) << 46);
    }
}

static void test_fast_paths_equal_general(void)
{
    /* values -> elements: random bits, every data set, the edge values */
    for (int i = 0; i < 4000; ++i) {
        from_paths_agree(draw_vec(i % 5));
        from_paths_agree(draw(i % SETS));
    }
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); ++i) {
        double d;
        memcpy(&d, &edges[i], sizeof(d));
        from_paths_agree(d);
    }
    /* elements -> values: single inputs, sums of random inputs, and made-up
     * elements (any top bin, any flags) around the fast path's limits */
    for (int i = 0; i < 3000; ++i) {
        ofl_repsum_t e[MAXN];
        double v[MAXN];
        int n = 1 + (int) (rnd() % 64);
        int set = (int) (rnd() % SETS);
        for (int k = 0; k < n; ++k) {
            v[k] = (0 == i % 3) ? draw_vec((int) (rnd() % 5)) : draw(set);
        }
        ofl_repsum_from_double_ref(e, v, (size_t) n);
        to_paths_agree(&e[0]);
        ofl_repsum_t s = tree_sum(e, n, ofl_repsum_add);
        to_paths_agree(&s);
    }
    static const uint64_t flags[] = {
        OFL_REPSUM_NOT_NEGZERO, 0, OFL_REPSUM_NAN | OFL_REPSUM_NOT_NEGZERO,
        OFL_REPSUM_PINF | OFL_REPSUM_NOT_NEGZERO, OFL_REPSUM_NINF | OFL_REPSUM_NOT_NEGZERO,
        OFL_REPSUM_PINF | OFL_REPSUM_NINF | OFL_REPSUM_NOT_NEGZERO,
    };
    for (int i = 0; i < 6000; ++i) {
        ofl_repsum_t e;
        e.c[0] = draw_component();
        e.c[1] = draw_component();
        e.c[2] = draw_component();
        if (0 == rnd() % 8) {
            e.c[0] = 0;   /* the top bin empty: results from the lower two */
        }
        uint64_t top = rnd() % OFL_REPSUM_BINS;
        uint64_t f = flags[(rnd() % 4) ? 0 : rnd() % (sizeof(flags) / sizeof(flags[0]))];
        e.meta = top | ((rnd() % OFL_REPSUM_BINS) << 8) | f;
        to_paths_agree(&e);
    }
}

/* Every vector level this CPU has, each against the reference. */
static void test_vector_equals_reference(void)
{
    int best = ofl_repsum_wide_vector();
    if (0 == best) {
        printf("test_repsum: no vector code on this CPU: the entry points are the reference\n");
    }
    for (int level = best; level >= 0; --level) {
        CHECK(level == ofl_repsum_wide_set_vector(level), "vector level %d not taken", level);
        test_vector_level();
    }
    ofl_repsum_wide_set_vector(2);
    CHECK(best == ofl_repsum_wide_vector(), "vector level %d not restored", best);
}

int main(void)
{
    unit_timeout("test_repsum", 60);
    test_orders_and_reference();
    test_floats();
    test_special_values();
    test_complex();
    test_wide_equals_binned();
    test_wide_floats_and_extremes();
    test_vector_equals_reference();
    test_fast_paths_equal_general();
    return unit_report("test_repsum");
}
