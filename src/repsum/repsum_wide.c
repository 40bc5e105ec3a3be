/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the two-pass form of reproducible sums (see repsum_wide.h): each
 * kernel's entry point, dispatching to the CPU's best vector kernels
 * (repsum_wide_vec.c) or to the reference ones (repsum_wide_ref.c).
 */
#include "repsum/repsum_wide_int.h"

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
    ofl_repsum_meta_from_float_ref(out, in, count);
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
    ofl_repsum_wide_from_float_ref(out, in, meta, count);
}
