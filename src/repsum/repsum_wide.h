/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the two-pass form of reproducible sums, for large counts.
 *
 * The binned element (repsum.h) carries 32 bytes per value. Its final value is
 * fixed by two things only: the meta word (largest top bin, lowest nonzero
 * input bin, flags: each an order-free max, min or OR) and the integer the
 * kept bins stand for, which is the sum over the inputs of each input's bits
 * at or above the final lowest kept bin (bins never carry into each other, so
 * what the adds drop from a partial sum is exactly those inputs' lower bits).
 * The two-pass form computes the same two things separately:
 *
 *   pass 1: a 2-byte meta element per value, merged by max, min and OR;
 *   pass 2: each input truncated at the final lowest kept bin, base =
 *           (top - K + 1) W from pass 1, as one signed 128-bit integer, summed.
 *
 * Each truncated input is below 2^(K W) = 2^120, so the sum of at most
 * OFL_REPSUM_WIDE_MAX_TERMS (128) of them is below 2^127 and the integer adds
 * (modulo 2^128, hence order-free) give it exactly. Rounding shares the binned
 * form's function (repsum_round.h): the result is bit-identical to the binned
 * form's for the same multiset, whichever form each call takes.
 *
 * Plain C11 (with the GCC/Clang 128-bit integer), no MPI headers; on x86-64
 * the .c file adds vector code (target attributes, intrinsics).
 */
#ifndef OFL_REPSUM_WIDE_H
#define OFL_REPSUM_WIDE_H

#include <stddef.h>
#include <stdint.h>

#include "repsum/repsum.h"

#define OFL_REPSUM_WIDE_MAX_TERMS 128

/* The meta element: bits 0-5 top bin index, 6-11 lowest nonzero input bin (63:
 * none), 12-15 the flags NaN, +Inf, -Inf, not -0.0 (OFL_REPSUM_* >> 4). */
typedef uint16_t ofl_repsum_meta_t;

#define OFL_REPSUM_META_LOW_NONE 63u

/* A signed 128-bit integer, two's complement, low word first. */
typedef struct {
    uint64_t lo;
    uint64_t hi;
} ofl_repsum_wide_t;

/* Pass 1: each value's own meta element. */
void ofl_repsum_meta_from_double(ofl_repsum_meta_t *out, const double *in, size_t count);
void ofl_repsum_meta_from_float(ofl_repsum_meta_t *out, const float *in, size_t count);

/* The ALU kernel of pass 1: max of the tops, min of the lows, OR of the flags. */
void ofl_repsum_meta_merge(void *out, const void *a, const void *b, size_t count);

/* Pass 2: each value truncated at the lowest bin its final meta keeps. */
void ofl_repsum_wide_from_double(ofl_repsum_wide_t *out, const double *in,
                                 const ofl_repsum_meta_t *meta, size_t count);
void ofl_repsum_wide_from_float(ofl_repsum_wide_t *out, const float *in,
                                const ofl_repsum_meta_t *meta, size_t count);

/* The ALU kernel of pass 2: 128-bit integer adds; out may alias a or b. */
void ofl_repsum_wide_add(void *out, const void *a, const void *b, size_t count);

/* The sums and their final meta -> values, rounded as ofl_repsum_to_double does. */
void ofl_repsum_wide_to_double(double *out, const ofl_repsum_wide_t *in,
                               const ofl_repsum_meta_t *meta, size_t count);
void ofl_repsum_wide_to_float(float *out, const ofl_repsum_wide_t *in,
                              const ofl_repsum_meta_t *meta, size_t count);

/* The portable definitions of the conversions of doubles, the add and the
 * rounding back to doubles and floats. The entry points above take vector code
 * where the CPU has it (x86-64 with AVX2 or AVX-512, found at run time; floats
 * in blocks converted to double) and must equal these bit for bit: they are
 * the reference the unit tests hold the vector code to. */
void ofl_repsum_meta_from_double_ref(ofl_repsum_meta_t *out, const double *in, size_t count);
void ofl_repsum_wide_from_double_ref(ofl_repsum_wide_t *out, const double *in,
                                     const ofl_repsum_meta_t *meta, size_t count);
void ofl_repsum_meta_from_float_ref(ofl_repsum_meta_t *out, const float *in, size_t count);
void ofl_repsum_wide_from_float_ref(ofl_repsum_wide_t *out, const float *in,
                                    const ofl_repsum_meta_t *meta, size_t count);
void ofl_repsum_wide_add_ref(void *out, const void *a, const void *b, size_t count);
void ofl_repsum_wide_to_double_ref(double *out, const ofl_repsum_wide_t *in,
                                   const ofl_repsum_meta_t *meta, size_t count);
void ofl_repsum_wide_to_float_ref(float *out, const ofl_repsum_wide_t *in,
                                  const ofl_repsum_meta_t *meta, size_t count);

/* The vector code the entry points take on this CPU: 0 none, 1 AVX2, 2 AVX-512. */
int ofl_repsum_wide_vector(void);

/* At most that level from now on (2 by default; tests and benchmarks compare
 * the levels): returns the one in effect. Not for use while conversions run. */
int ofl_repsum_wide_set_vector(int level);

/* 1 when bins holding nonzero input bits lie below the kept ones. */
int ofl_repsum_meta_inexact(ofl_repsum_meta_t m);

#endif
