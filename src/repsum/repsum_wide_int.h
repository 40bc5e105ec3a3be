/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — what the two-pass form's scalar code (repsum_wide.c) and its
 * x86 vector code (repsum_wide_vec.c) share: the meta element's fields, one
 * value's conversions (the reference every vector lane must equal), and the
 * vector entry points the dispatch in repsum_wide.c picks from.
 */
#ifndef OFL_REPSUM_WIDE_INT_H
#define OFL_REPSUM_WIDE_INT_H

#include <string.h>

#include "repsum/repsum_round.h"
#include "repsum/repsum_wide.h"

#define K OFL_REPSUM_K
#define W OFL_REPSUM_W
#define TOP_MASK 0x3fu
#define LOW_SHIFT 6
#define FLAG_SHIFT 4   /* meta element flags = binned meta flags >> 4 */
#define FLAG_MASK 0xf000u
#define NOT_NEGZERO (OFL_REPSUM_NOT_NEGZERO >> FLAG_SHIFT)
#define NONE_LOW (OFL_REPSUM_META_LOW_NONE << LOW_SHIFT)

_Static_assert(OFL_REPSUM_BINS <= (int) OFL_REPSUM_META_LOW_NONE, "bin index fits 6 bits");
_Static_assert((OFL_REPSUM_NAN >> FLAG_SHIFT) == 0x1000 && NOT_NEGZERO == 0x8000,
               "flags fit bits 12-15");
_Static_assert(sizeof(ofl_repsum_wide_t) == 16, "16-byte wide element");
_Static_assert(((ofl_u128) OFL_REPSUM_WIDE_MAX_TERMS << (K * W)) <= ((ofl_u128) 1 << 127),
               "the sum of the most terms fits a signed 128-bit integer");

/* A finite nonzero value's magnitude sig * 2^(pos - 1074), sig < 2^53. Returns
 * 0 for zeros and non-finite values, after setting *flags for them. */
static inline int decode(double x, uint64_t *sig, int *pos, int *negative, unsigned *flags)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof(bits));
    unsigned field = (unsigned) (bits >> 52) & 0x7ff;
    uint64_t s = bits & ((UINT64_C(1) << 52) - 1);
    *negative = (int) (bits >> 63);
    if (__builtin_expect(0x7ff == field, 0)) {
        unsigned f = 0 != s ? OFL_REPSUM_NAN : *negative ? OFL_REPSUM_NINF : OFL_REPSUM_PINF;
        *flags = (f >> FLAG_SHIFT) | NOT_NEGZERO;
        return 0;
    }
    if (__builtin_expect(0 == field && 0 == s, 0)) {
        *flags = *negative ? 0 : NOT_NEGZERO;
        return 0;
    }
    *sig = 0 != field ? s | (UINT64_C(1) << 52) : s;
    *pos = 0 != field ? (int) field - 1 : 0;
    return 1;
}

static inline ofl_repsum_meta_t meta_of(double x)
{
    uint64_t sig;
    int pos, negative;
    unsigned flags;
    if (!decode(x, &sig, &pos, &negative, &flags)) {
        return (ofl_repsum_meta_t) (NONE_LOW | flags);
    }
    int hi = pos + 63 - __builtin_clzll(sig);   /* position of the top bit */
    int lo = pos + __builtin_ctzll(sig);        /* and of the lowest nonzero one */
    return (ofl_repsum_meta_t) ((unsigned) (hi / W) | ((unsigned) (lo / W) << LOW_SHIFT)
                                | NOT_NEGZERO);
}

static inline void wide_of(ofl_repsum_wide_t *o, double x, ofl_repsum_meta_t m)
{
    uint64_t sig;
    int pos, negative;
    unsigned flags;
    if (!decode(x, &sig, &pos, &negative, &flags)) {
        o->lo = o->hi = 0;
        return;
    }
    int d = pos - ((int) (m & TOP_MASK) - K + 1) * W;   /* sig's lsb above the base */
    ofl_u128 v;
    if (d >= 0) {
        v = (ofl_u128) sig << d;   /* below 2^(K W): x's top is at most the final top */
    } else {
        v = d > -64 ? sig >> -d : 0;
    }
    if (negative) {
        v = -v;
    }
    o->lo = (uint64_t) v;
    o->hi = (uint64_t) (v >> 64);
}

/* A sum's sign and magnitude (below 2^127: no cut needed); x its unit. */
static inline ofl_u128 wide_value(const ofl_repsum_wide_t *e, ofl_repsum_meta_t m, int *neg,
                                  int *x)
{
    ofl_u128 v = ((ofl_u128) e->hi << 64) | e->lo;
    *neg = (int) (e->hi >> 63);
    *x = ((int) (m & TOP_MASK) - K + 1) * W - 1074;
    return *neg ? -v : v;
}

static inline uint64_t binned_flags(ofl_repsum_meta_t m)
{
    return (uint64_t) (m & FLAG_MASK) << FLAG_SHIFT;
}

static inline double to_double_one(const ofl_repsum_wide_t *e, ofl_repsum_meta_t m)
{
    int neg, x;
    ofl_u128 u = wide_value(e, m, &neg, &x);
    return ofl_rs_to_double(binned_flags(m), neg, u, 0, x);
}

static inline float to_float_one(const ofl_repsum_wide_t *e, ofl_repsum_meta_t m)
{
    int neg, x;
    ofl_u128 u = wide_value(e, m, &neg, &x);
    return ofl_rs_to_float(binned_flags(m), neg, u, 0, x);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define OFL_RSW_X86 1
void ofl_rsw_meta_from_double_avx2(ofl_repsum_meta_t *out, const double *in, size_t count);
void ofl_rsw_wide_from_double_avx2(ofl_repsum_wide_t *out, const double *in,
                                   const ofl_repsum_meta_t *meta, size_t count);
void ofl_rsw_wide_add_avx2(void *out, const void *a, const void *b, size_t count);
void ofl_rsw_wide_to_double_avx2(double *out, const ofl_repsum_wide_t *in,
                                 const ofl_repsum_meta_t *meta, size_t count);
void ofl_rsw_wide_to_float_avx2(float *out, const ofl_repsum_wide_t *in,
                                const ofl_repsum_meta_t *meta, size_t count);
void ofl_rsw_meta_from_double_avx512(ofl_repsum_meta_t *out, const double *in, size_t count);
void ofl_rsw_wide_from_double_avx512(ofl_repsum_wide_t *out, const double *in,
                                     const ofl_repsum_meta_t *meta, size_t count);
void ofl_rsw_wide_to_double_avx512(double *out, const ofl_repsum_wide_t *in,
                                   const ofl_repsum_meta_t *meta, size_t count);
void ofl_rsw_wide_to_float_avx512(float *out, const ofl_repsum_wide_t *in,
                                  const ofl_repsum_meta_t *meta, size_t count);
#else
#define OFL_RSW_X86 0
#endif

#endif
