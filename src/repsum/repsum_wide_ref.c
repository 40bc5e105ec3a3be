/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the two-pass form of reproducible sums (see repsum_wide.h): the
 * reference (scalar) kernels, which the vector ones (repsum_wide_vec.c) use for tails.
 *
 * Why it equals the binned form bit for bit. The binned form's final element
 * has top T = the largest input top and components that are, per bin, the sums
 * of exactly the input bits in bins T-K+1..T (repsum.c). from_one first drops
 * an input's bits below its own lowest kept bin, which lies at or below base =
 * (T-K+1) W since the input's top is at most T; the adds then drop whole bins
 * below base. Truncating a magnitude at a finer grid and then at base is
 * truncating it at base, and a negative input's bins are its magnitude's bins
 * negated. So the element stands for sum_i sign_i floor(|x_i| / 2^base) in units
 * of 2^base: the integer pass 2 sums. Pass 1's meta is the element's meta word
 * (the same max, min and OR of the same per-input fields), and both forms round
 * the same exact value with the same function.
 */
#include "repsum/repsum_wide_int.h"




void ofl_repsum_meta_from_double_ref(ofl_repsum_meta_t *out, const double *in, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        out[i] = meta_of(in[i]);
    }
}

void ofl_repsum_meta_from_float_ref(ofl_repsum_meta_t *out, const float *in, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        out[i] = meta_of((double) in[i]);   /* exact */
    }
}

void ofl_repsum_meta_merge(void *out, const void *a, const void *b, size_t count)
{
    ofl_repsum_meta_t *o = out;
    const ofl_repsum_meta_t *p = a, *q = b;
    for (size_t i = 0; i < count; ++i) {
        unsigned x = p[i], y = q[i];
        unsigned top = (x & TOP_MASK) > (y & TOP_MASK) ? x & TOP_MASK : y & TOP_MASK;
        unsigned lx = x & (TOP_MASK << LOW_SHIFT), ly = y & (TOP_MASK << LOW_SHIFT);
        o[i] = (ofl_repsum_meta_t) (top | (lx < ly ? lx : ly) | ((x | y) & FLAG_MASK));
    }
}


void ofl_repsum_wide_from_double_ref(ofl_repsum_wide_t *out, const double *in,
                                     const ofl_repsum_meta_t *meta, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        wide_of(&out[i], in[i], meta[i]);
    }
}

void ofl_repsum_wide_from_float_ref(ofl_repsum_wide_t *out, const float *in,
                                    const ofl_repsum_meta_t *meta, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        wide_of(&out[i], (double) in[i], meta[i]);
    }
}

void ofl_repsum_wide_add_ref(void *out, const void *a, const void *b, size_t count)
{
    ofl_repsum_wide_t *o = out;
    const ofl_repsum_wide_t *p = a, *q = b;
    for (size_t i = 0; i < count; ++i) {
        uint64_t lo = p[i].lo + q[i].lo;
        o[i].hi = p[i].hi + q[i].hi + (lo < p[i].lo);
        o[i].lo = lo;
    }
}




void ofl_repsum_wide_to_double_ref(double *out, const ofl_repsum_wide_t *in,
                                   const ofl_repsum_meta_t *meta, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        out[i] = to_double_one(&in[i], meta[i]);
    }
}


void ofl_repsum_wide_to_float_ref(float *out, const ofl_repsum_wide_t *in,
                                  const ofl_repsum_meta_t *meta, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        out[i] = to_float_one(&in[i], meta[i]);
    }
}

int ofl_repsum_meta_inexact(ofl_repsum_meta_t m)
{
    unsigned low = (m >> LOW_SHIFT) & TOP_MASK;
    return OFL_REPSUM_META_LOW_NONE != low && (int) low < (int) (m & TOP_MASK) - K + 1;
}
