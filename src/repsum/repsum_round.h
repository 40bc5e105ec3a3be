/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the one rounding of reproducible sums, shared by the binned
 * element (repsum.c) and the two-pass wide integer form (repsum_wide.c).
 *
 * Both forms end with the same exact value: an integer magnitude u times 2^x
 * (the binned form's above 2^127 cut to 128 bits and a sticky bit), a sign, and
 * the flags of the element's meta word.
 * Rounding it in one function is what keeps the two forms bit-identical.
 *
 * Private to src/alu: static inline so each form's loop keeps it inlined.
 */
#ifndef OFL_REPSUM_ROUND_H
#define OFL_REPSUM_ROUND_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "repsum/repsum.h"

typedef unsigned __int128 ofl_u128;

#define OFL_RS_REST_BITS (2 * OFL_REPSUM_W)

/* The magnitude u * 2^x, plus a nonzero part below it when sticky (u is then
 * at least 2^(prec+1)), rounded to nearest (ties to even) in a format of prec
 * significand bits whose smallest subnormal is 2^lsb_min: mant * 2^scale with
 * mant < 2^prec (0 for a zero). */
static inline void ofl_rs_round_u(ofl_u128 u, int sticky, int x, int prec, int lsb_min,
                                  uint64_t *mant, int *scale)
{
    if (0 == u) {
        *mant = 0;
        *scale = 0;
        return;
    }
    uint64_t uh = (uint64_t) (u >> 64);
    int t = uh ? 127 - __builtin_clzll(uh) : 63 - __builtin_clzll((uint64_t) u);
    int lsb = t + x - prec + 1;
    if (lsb < lsb_min) {
        lsb = lsb_min;
    }
    int sh = lsb - x;
    if (sh <= 0) {
        *mant = (uint64_t) (u << -sh);
        *scale = lsb;
        return;
    }
    if (sh >= 128) {
        *mant = 0;   /* below half the smallest subnormal: u < 2^127 <= half */
        *scale = lsb;
        return;
    }
    uint64_t m = (uint64_t) (u >> sh);
    ofl_u128 rem = u & (((ofl_u128) 1 << sh) - 1);
    ofl_u128 half = (ofl_u128) 1 << (sh - 1);
    if (rem > half || (rem == half && (sticky || (m & 1)))) {
        ++m;
        if (m >> prec) {
            m >>= 1;
            ++lsb;
        }
    }
    *mant = m;
    *scale = lsb;
}

/* The magnitude hi 2^2W + rest (hi < 2^63) as one 128-bit u for the rounding:
 * above 2^127 it cuts 16 bits into *sticky, adding 16 to *x (only the top
 * prec + 1 bits matter, and whether any is below). */
static inline ofl_u128 ofl_rs_join(uint64_t hi, ofl_u128 rest, int *x, int *sticky)
{
    *sticky = 0;
    if (hi >> 46) {
        *sticky = 0 != (rest & 0xffff);
        *x += 16;
        return (rest >> 16) | ((ofl_u128) hi << (OFL_RS_REST_BITS - 16));
    }
    return rest | ((ofl_u128) hi << OFL_RS_REST_BITS);
}

/* mant * 2^scale (mant < 2^53, and below 2^52 only at the subnormal scale) as
 * a double's bits; infinity past the largest finite. */
static inline double ofl_rs_bits_double(int neg, uint64_t mant, int scale)
{
    uint64_t bits;
    if (mant >> 52) {
        int field = scale + 52 + 1023;   /* biased exponent of mant's top bit */
        bits = field >= 0x7ff ? UINT64_C(0x7ff) << 52
                              : ((uint64_t) field << 52) | (mant & ((UINT64_C(1) << 52) - 1));
    } else {
        bits = mant;   /* subnormal: scale is -1074 */
    }
    bits |= (uint64_t) neg << 63;
    double v;
    memcpy(&v, &bits, sizeof(v));
    return v;
}

static inline float ofl_rs_bits_float(int neg, uint64_t mant, int scale)
{
    uint32_t bits;
    if (mant >> 23) {
        int field = scale + 23 + 127;
        bits = field >= 0xff ? UINT32_C(0xff) << 23
                             : ((uint32_t) field << 23) | (uint32_t) (mant & ((1u << 23) - 1));
    } else {
        bits = (uint32_t) mant;   /* subnormal: scale is -149 */
    }
    bits |= (uint32_t) neg << 31;
    float v;
    memcpy(&v, &bits, sizeof(v));
    return v;
}

/* NaN, infinities first, as IEEE addition would give them (flags: the meta
 * word's OFL_REPSUM_* bits). */
static inline int ofl_rs_special(uint64_t flags, double *v)
{
    if ((flags & OFL_REPSUM_NAN) || ((flags & OFL_REPSUM_PINF) && (flags & OFL_REPSUM_NINF))) {
        *v = NAN;
        return 1;
    }
    if (flags & OFL_REPSUM_PINF) {
        *v = INFINITY;
        return 1;
    }
    if (flags & OFL_REPSUM_NINF) {
        *v = -INFINITY;
        return 1;
    }
    return 0;
}

/* The exact value (-1)^neg u 2^x (sticky: and a nonzero part below) with its
 * flags, as a double. */
/* The common case of ofl_rs_to_double on its own, to inline where the rest
 * would not be: 1 and *v when the result is a normal double from more than 53
 * bits, 0 otherwise (ofl_rs_to_double then has it). */
static inline __attribute__((always_inline)) int
ofl_rs_to_double_normal(uint64_t flags, int neg, ofl_u128 u, int sticky, int x, double *v)
{
    uint64_t uh = (uint64_t) (u >> 64), ul = (uint64_t) u;
    int lz = uh ? __builtin_clzll(uh) : 64 + __builtin_clzll(ul | 1);
    int t = 127 - lz;           /* u's top bit (0 for a zero) */
    int field = x + t + 1023;   /* the biased exponent of u's top bit */
    if (__builtin_expect(!(flags & (OFL_REPSUM_NAN | OFL_REPSUM_PINF | OFL_REPSUM_NINF))
                         && t > 52 && field >= 1 && field <= 0x7fe, 1)) {
        /* A normal result from more than 53 bits (ofl_rs_round_u's answer, without
         * branches on the data): u shifted up to bit 127 gives the 53 bits, the
         * round bit under them and the sticky bits below; ties to even. The
         * rounding carry may run into the exponent field, and from the largest
         * one to infinity, as it should. */
        ofl_u128 n = u << lz;
        uint64_t top = (uint64_t) (n >> 64);
        uint64_t m = top >> 11, round = (top >> 10) & 1;
        uint64_t below = 0 != ((top & 0x3ff) | (uint64_t) n) || sticky;
        uint64_t bits = ((uint64_t) (field - 1) << 52) + m + (round & (below | (m & 1)));
        bits |= (uint64_t) neg << 63;
        memcpy(v, &bits, sizeof(*v));
        return 1;
    }
    return 0;
}

static inline double ofl_rs_to_double(uint64_t flags, int neg, ofl_u128 u, int sticky, int x)
{
    double v;
    if (ofl_rs_to_double_normal(flags, neg, u, sticky, x, &v)) {
        return v;
    }
    if (__builtin_expect(ofl_rs_special(flags, &v), 0)) {
        return v;
    }
    int scale;
    uint64_t mant;
    ofl_rs_round_u(u, sticky, x, 53, -1074, &mant, &scale);
    if (0 == mant) {
        /* an exact zero is -0.0 only when every input was */
        int negzero = neg || !(flags & OFL_REPSUM_NOT_NEGZERO);
        return negzero ? -0.0 : 0.0;
    }
    return ofl_rs_bits_double(neg, mant, scale);
}

static inline float ofl_rs_to_float(uint64_t flags, int neg, ofl_u128 u, int sticky, int x)
{
    double s;
    if (__builtin_expect(ofl_rs_special(flags, &s), 0)) {
        return (float) s;
    }
    int scale;
    uint64_t mant;
    ofl_rs_round_u(u, sticky, x, 24, -149, &mant, &scale);
    if (0 == mant) {
        int negzero = neg || !(flags & OFL_REPSUM_NOT_NEGZERO);
        return negzero ? -0.0f : 0.0f;
    }
    return ofl_rs_bits_float(neg, mant, scale);
}

#endif
