/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — reproducible floating-point sums (see repsum.h).
 *
 * Why the sum cannot depend on the order of the adds. An element stands for
 * the bins top, top-1, ..., top-K+1 of the inputs it sums, each bin summed as
 * an integer and never carried into its neighbour. Adding two elements takes
 * the larger top and shifts the other's components down, dropping those that
 * fall below top-K+1. Whatever the order, the final element's top is the
 * largest top of any input (max is associative and commutative), and every
 * bin of every input is either at or above final top-K+1, then it was never
 * dropped on the way (each partial top is at most the final one), or below it,
 * then it was dropped at some step or is dropped by the last one. So the
 * final components are the integer sums, per bin, of exactly the input bits at
 * or above final top-K+1: the same integers for every order. Integer adds do
 * not round; with at most OFL_REPSUM_MAX_TERMS terms they do not overflow. The
 * lowest nonzero input bin is kept as a min (again order-free), so whether
 * bits were dropped is known from the final element alone. The flags are ORs.
 */
#include "repsum/repsum.h"

#include <math.h>
#include <string.h>

#include "repsum/repsum_round.h"

#define K OFL_REPSUM_K
#define W OFL_REPSUM_W
#define BIN_MASK ((INT64_C(1) << W) - 1)
#define LOW_NONE 0xffu
#define FLAGS_MASK (~(uint64_t) 0xffff)
#define RS_UNLIKELY(x) __builtin_expect(!!(x), 0)

typedef ofl_u128 u128;

static inline unsigned meta_top(uint64_t meta)
{
    return (unsigned) (meta & 0xff);
}

static inline unsigned meta_low(uint64_t meta)
{
    return (unsigned) ((meta >> 8) & 0xff);
}

static inline uint64_t meta_make(unsigned top, unsigned low, uint64_t flags)
{
    return (uint64_t) top | ((uint64_t) low << 8) | flags;
}

/* Straight from the bits: frexp and ldexp cost more than the rest together.
 * Every input: zeros, subnormals, infinities and NaN included. */
static inline void from_general(ofl_repsum_t *e, double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof(bits));
    unsigned field = (unsigned) (bits >> 52) & 0x7ff;
    uint64_t sig = bits & ((UINT64_C(1) << 52) - 1);
    int negative = (int) (bits >> 63);
    e->c[0] = e->c[1] = e->c[2] = 0;
    if (RS_UNLIKELY(0x7ff == field)) {
        uint64_t flag = 0 != sig ? OFL_REPSUM_NAN : negative ? OFL_REPSUM_NINF : OFL_REPSUM_PINF;
        e->meta = meta_make(0, LOW_NONE, flag | OFL_REPSUM_NOT_NEGZERO);
        return;
    }
    if (RS_UNLIKELY(0 == field && 0 == sig)) {
        e->meta = meta_make(0, LOW_NONE, negative ? 0 : OFL_REPSUM_NOT_NEGZERO);
        return;
    }
    /* |x| = sig * 2^(pos - 1074): pos is the bit position of sig's lsb */
    int pos = 0;
    if (0 != field) {
        sig |= UINT64_C(1) << 52;
        pos = (int) field - 1;
    }
    int tz = __builtin_ctzll(sig);
    sig >>= tz;
    pos += tz;
    int hi = pos + 63 - __builtin_clzll(sig);  /* position of the top bit */
    int top = hi / W;
    int base = (top - K + 1) * W;              /* lsb of the lowest kept bin; may be < 0 */
    u128 v;
    if (pos >= base) {
        v = (u128) sig << (pos - base);        /* < 2^(K W) */
    } else {
        v = (u128) (sig >> (base - pos));      /* the input's own bits below its bins */
    }
    uint64_t lo = (uint64_t) v, mid = (uint64_t) (v >> W), up = (uint64_t) (v >> (2 * W));
    int64_t c0 = (int64_t) (up & BIN_MASK), c1 = (int64_t) (mid & BIN_MASK);
    int64_t c2 = (int64_t) (lo & BIN_MASK);
    e->c[0] = negative ? -c0 : c0;
    e->c[1] = negative ? -c1 : c1;
    e->c[2] = negative ? -c2 : c2;
    e->meta = meta_make((unsigned) top, (unsigned) (pos / W), OFL_REPSUM_NOT_NEGZERO);
}

/* The rare inputs of ofl_repsum_from_double1 (repsum.h), which has the fast
 * path for normal ones: every element goes through it. */
void ofl_repsum_from_double_rare(ofl_repsum_t *out, double in)
{
    from_general(out, in);
}

static inline void from_one(ofl_repsum_t *e, double x)
{
    ofl_repsum_from_double1(e, x);
}

void ofl_repsum_from_double(ofl_repsum_t *out, const double *in, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        from_one(&out[i], in[i]);
    }
}

void ofl_repsum_from_double_ref(ofl_repsum_t *out, const double *in, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        from_general(&out[i], in[i]);
    }
}

void ofl_repsum_from_float(ofl_repsum_t *out, const float *in, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        from_one(&out[i], (double) in[i]);   /* exact */
    }
}

int ofl_repsum_inexact(const ofl_repsum_t *e)
{
    unsigned low = meta_low(e->meta);
    return LOW_NONE != low && (int) low < (int) meta_top(e->meta) - K + 1;
}

/* An element's exact value as a sign and the magnitude hi 2^2W + rest (rest <
 * 2^2W) in units of 2^x: the bins carried into one number. */
static inline void element_value(const ofl_repsum_t *e, int *neg, uint64_t *hi, u128 *rest,
                                 int *x)
{
    /* carry the bins into one number c0 * 2^2W + c1 * 2^W + c2, c1 and c2 in [0, 2^W) */
    int64_t c2 = e->c[2], c1 = e->c[1], c0 = e->c[0];
    c1 += c2 >> W;   /* arithmetic shift: floor division by 2^W */
    c2 &= BIN_MASK;
    c0 += c1 >> W;
    c1 &= BIN_MASK;
    u128 r = ((u128) (uint64_t) c1 << W) | (uint64_t) c2;
    *neg = c0 < 0;
    if (*neg) {
        /* -(c0 2^2W + r) = (-c0 - 1) 2^2W + (2^2W - r), or -c0 2^2W if r is 0 */
        if (0 != r) {
            *hi = (uint64_t) (-(c0 + 1));
            r = ((u128) 1 << (2 * W)) - r;
        } else {
            *hi = (uint64_t) -c0;
        }
    } else {
        *hi = (uint64_t) c0;
    }
    *rest = r;
    *x = ((int) meta_top(e->meta) - K + 1) * W - 1074;
}

/* An element's exact value as the shared rounding takes it (repsum_round.h). */
static inline u128 element_joined(const ofl_repsum_t *e, int *neg, int *sticky, int *x)
{
    uint64_t hi;
    u128 rest;
    element_value(e, neg, &hi, &rest, x);
    return ofl_rs_join(hi, rest, x, sticky);
}

static inline double to_general(const ofl_repsum_t *e)
{
    int neg, sticky, x;
    u128 u = element_joined(e, &neg, &sticky, &x);
    return ofl_rs_to_double(e->meta & FLAGS_MASK, neg, u, sticky, x);
}

/* With |c0| at most 2^45, the value c0 2^2W + c1 2^W + c2 fits a signed 128-bit
 * integer whatever the int64 c1 and c2, its magnitude is below 2^(2W + 46) and
 * ofl_rs_join would not cut it: the carries of element_value and the join
 * become three shifted adds and an absolute value, with the same u, sign and
 * exponent for the same rounding. */
static __attribute__((noinline, cold)) double to_rare(const ofl_repsum_t *e)
{
    return to_general(e);
}

static inline double to_one(const ofl_repsum_t *e)
{
    int64_t c0 = e->c[0];
    if (__builtin_expect((uint64_t) c0 + (UINT64_C(1) << 45) <= (UINT64_C(1) << 46), 1)) {
        __int128 v = (__int128) c0 * ((__int128) 1 << (2 * W))
                     + (__int128) e->c[1] * ((__int128) 1 << W) + e->c[2];
        int neg = v < 0;
        u128 u = neg ? (u128) 0 - (u128) v : (u128) v;
        int x = ((int) meta_top(e->meta) - K + 1) * W - 1074;
        double d;
        if (__builtin_expect(ofl_rs_to_double_normal(e->meta & FLAGS_MASK, neg, u, 0, x, &d), 1)) {
            return d;
        }
    }
    /* zeros, specials, subnormal or overflowing results, a huge top component */
    return to_rare(e);
}

void ofl_repsum_to_double(double *out, const ofl_repsum_t *in, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        out[i] = to_one(&in[i]);
    }
}

double ofl_repsum_to_double1(const ofl_repsum_t *in)
{
    return to_one(in);
}

void ofl_repsum_to_double_ref(double *out, const ofl_repsum_t *in, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        out[i] = to_general(&in[i]);
    }
}

void ofl_repsum_to_float(float *out, const ofl_repsum_t *in, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        int neg, sticky, x;
        u128 u = element_joined(&in[i], &neg, &sticky, &x);
        out[i] = ofl_rs_to_float(in[i].meta & FLAGS_MASK, neg, u, sticky, x);
    }
}

/* p's components re-expressed under a larger top: shifted down by d bins,
 * those falling below the K kept bins dropped. */
static inline void shift_down(int64_t r[K], const int64_t c[K], unsigned d)
{
    for (int i = 0; i < K; ++i) {
        r[i] = i >= (int) d ? c[i - (int) d] : 0;
    }
}

void ofl_repsum_add(void *out, const void *a, const void *b, size_t count)
{
    ofl_repsum_t *o = out;
    const ofl_repsum_t *p = a, *q = b;
    for (size_t i = 0; i < count; ++i) {
        uint64_t ma = p[i].meta, mb = q[i].meta;
        unsigned ta = meta_top(ma), tb = meta_top(mb);
        unsigned la = meta_low(ma), lb = meta_low(mb);
        uint64_t flags = (ma | mb) & FLAGS_MASK;
        unsigned low = la < lb ? la : lb;
        if (__builtin_expect(ta == tb, 1)) {
            /* unsigned adds: the components never overflow (MAX_TERMS), and
             * this way the compiler owes no signed-overflow assumptions */
            for (int k = 0; k < K; ++k) {
                o[i].c[k] = (int64_t) ((uint64_t) p[i].c[k] + (uint64_t) q[i].c[k]);
            }
            o[i].meta = meta_make(ta, low, flags);
            continue;
        }
        int64_t x[K], y[K];
        unsigned top;
        if (ta > tb) {
            memcpy(x, p[i].c, sizeof(x));
            shift_down(y, q[i].c, ta - tb);
            top = ta;
        } else {
            shift_down(x, p[i].c, tb - ta);
            memcpy(y, q[i].c, sizeof(y));
            top = tb;
        }
        for (int k = 0; k < K; ++k) {
            o[i].c[k] = (int64_t) ((uint64_t) x[k] + (uint64_t) y[k]);
        }
        o[i].meta = meta_make(top, low, flags);
    }
}
