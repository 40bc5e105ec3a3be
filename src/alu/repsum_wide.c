/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the two-pass form of reproducible sums (see repsum_wide.h).
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
#include "alu/repsum_wide_int.h"




void ofl_repsum_meta_from_double_ref(ofl_repsum_meta_t *out, const double *in, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        out[i] = meta_of(in[i]);
    }
}

static void meta_from_float_scalar(ofl_repsum_meta_t *out, const float *in, size_t count)
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

static void wide_from_float_scalar(ofl_repsum_wide_t *out, const float *in,
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

#if OFL_RSW_X86
/* 0: scalar, 1: AVX2, 2: AVX-512; the CPU's best, capped by a caller. */
static int isa_cached = -1;
static int isa_cap = 2;

static int isa(void)
{
    int v = __atomic_load_n(&isa_cached, __ATOMIC_RELAXED);
    if (v < 0) {
        __builtin_cpu_init();
        v = 0;
        if (__builtin_cpu_supports("avx2")) {
            v = 1;
            if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd")
                && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw")
                && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi2")) {
                v = 2;
            }
        }
        __atomic_store_n(&isa_cached, v, __ATOMIC_RELAXED);
    }
    int cap = __atomic_load_n(&isa_cap, __ATOMIC_RELAXED);
    return v < cap ? v : cap;
}

static int use_avx2(void)
{
    return isa() >= 1;
}
#endif

int ofl_repsum_wide_vector(void)
{
#if OFL_RSW_X86
    return isa();
#else
    return 0;
#endif
}

int ofl_repsum_wide_set_vector(int level)
{
#if OFL_RSW_X86
    __atomic_store_n(&isa_cap, level, __ATOMIC_RELAXED);
    return isa();
#else
    (void) level;
    return 0;
#endif
}

void ofl_repsum_meta_from_double(ofl_repsum_meta_t *out, const double *in, size_t count)
{
#if OFL_RSW_X86
    int level = isa();
    if (2 == level) {
        ofl_rsw_meta_from_double_avx512(out, in, count);
        return;
    }
    if (1 == level) {
        ofl_rsw_meta_from_double_avx2(out, in, count);
        return;
    }
#endif
    ofl_repsum_meta_from_double_ref(out, in, count);
}

void ofl_repsum_wide_from_double(ofl_repsum_wide_t *out, const double *in,
                                 const ofl_repsum_meta_t *meta, size_t count)
{
#if OFL_RSW_X86
    int level = isa();
    if (2 == level) {
        ofl_rsw_wide_from_double_avx512(out, in, meta, count);
        return;
    }
    if (1 == level) {
        ofl_rsw_wide_from_double_avx2(out, in, meta, count);
        return;
    }
#endif
    ofl_repsum_wide_from_double_ref(out, in, meta, count);
}

void ofl_repsum_wide_add(void *out, const void *a, const void *b, size_t count)
{
#if OFL_RSW_X86
    if (use_avx2()) {
        ofl_rsw_wide_add_avx2(out, a, b, count);
        return;
    }
#endif
    ofl_repsum_wide_add_ref(out, a, b, count);
}

void ofl_repsum_wide_to_double(double *out, const ofl_repsum_wide_t *in,
                               const ofl_repsum_meta_t *meta, size_t count)
{
#if OFL_RSW_X86
    int level = isa();
    if (2 == level) {
        ofl_rsw_wide_to_double_avx512(out, in, meta, count);
        return;
    }
    if (1 == level) {
        ofl_rsw_wide_to_double_avx2(out, in, meta, count);
        return;
    }
#endif
    ofl_repsum_wide_to_double_ref(out, in, meta, count);
}

void ofl_repsum_wide_to_float(float *out, const ofl_repsum_wide_t *in,
                              const ofl_repsum_meta_t *meta, size_t count)
{
#if OFL_RSW_X86
    int level = isa();
    if (2 == level) {
        ofl_rsw_wide_to_float_avx512(out, in, meta, count);
        return;
    }
    if (1 == level) {
        ofl_rsw_wide_to_float_avx2(out, in, meta, count);
        return;
    }
#endif
    ofl_repsum_wide_to_float_ref(out, in, meta, count);
}

/* Floats take the double code on blocks converted on the stack: a float's
 * conversion to double is exact, as in the scalar code. */
#define FLOAT_BLOCK 512

static size_t to_doubles(double *d, const float *in, size_t i, size_t count)
{
    size_t n = count - i < FLOAT_BLOCK ? count - i : FLOAT_BLOCK;
    for (size_t k = 0; k < n; ++k) {
        d[k] = (double) in[i + k];
    }
    return n;
}

void ofl_repsum_meta_from_float(ofl_repsum_meta_t *out, const float *in, size_t count)
{
#if OFL_RSW_X86
    if (use_avx2()) {
        double d[FLOAT_BLOCK];
        for (size_t i = 0, n; i < count; i += n) {
            n = to_doubles(d, in, i, count);
            ofl_repsum_meta_from_double(out + i, d, n);
        }
        return;
    }
#endif
    meta_from_float_scalar(out, in, count);
}

void ofl_repsum_wide_from_float(ofl_repsum_wide_t *out, const float *in,
                                const ofl_repsum_meta_t *meta, size_t count)
{
#if OFL_RSW_X86
    if (use_avx2()) {
        double d[FLOAT_BLOCK];
        for (size_t i = 0, n; i < count; i += n) {
            n = to_doubles(d, in, i, count);
            ofl_repsum_wide_from_double(out + i, d, meta + i, n);
        }
        return;
    }
#endif
    wide_from_float_scalar(out, in, meta, count);
}
