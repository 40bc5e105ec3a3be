/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — reproducible floating-point sums on the NIC's ALU.
 *
 * A float or double is carried as a binned integer element (ofl_repsum_t):
 * the real line from 2^-1074 up is cut into bins of OFL_REPSUM_W bits, and an
 * element keeps its OFL_REPSUM_K highest bins as signed integer components
 * plus the index of the highest one. The ALU adds elements as integers, so the
 * sum of a multiset of inputs does not depend on the order or grouping of the
 * adds (see repsum.c for why dropping low bins does not either). The host
 * converts values into elements before the collective and the result back
 * after it, rounding once. repsum_wide.h computes the same results in two
 * passes with fewer bytes (large counts, at most 128 terms).
 *
 * Guarantee (repsum.c has the argument): for at most OFL_REPSUM_MAX_TERMS
 * terms, the result is a function of the multiset of inputs only. When no
 * input had a nonzero bit below the lowest kept bin (ofl_repsum_inexact() says
 * 0), it is the exact sum correctly rounded. Otherwise the kept part differs
 * from the exact sum by less than terms * 2^-(K-1)W * max|input|; the result is
 * within 1 ulp of the exact sum whenever |sum| >= terms * 2^-26 * max|input|.
 *
 * Plain C11 (with the GCC/Clang 128-bit integer), no MPI headers.
 */
#ifndef OFL_REPSUM_H
#define OFL_REPSUM_H

#include <stddef.h>
#include <stdint.h>

/*
 * K = 3 components of W = 40 bits: a double's 53-bit significand spans at most
 * two 40-bit bins below its top bin, so one input is exact in its own element,
 * and the two bins under the top one keep 80 bits of the largest input, enough
 * for a double result within 1 ulp unless the terms cancel by more than 26
 * bits. Each int64 component has 23 bits of headroom above the 40, so
 * 2^22 terms can never overflow it whatever their signs. The fourth word holds
 * the index and flags, keeping the element a power of two (32 bytes: the
 * smallest with three 64-bit components, and aligned so no element straddles
 * a cache line).
 */
#define OFL_REPSUM_K 3
#define OFL_REPSUM_W 40
#define OFL_REPSUM_MAX_TERMS (1L << 22)

/* Bins of the double range: bit 0 is 2^-1074, the top finite bit 2^1023. */
#define OFL_REPSUM_BINS ((1074 + 1024 + OFL_REPSUM_W - 1) / OFL_REPSUM_W)

/* Meta word: bits 0-7 top bin index, 8-15 lowest nonzero input bin (0xff:
 * none), then the flags below. */
#define OFL_REPSUM_NAN 0x10000u
#define OFL_REPSUM_PINF 0x20000u
#define OFL_REPSUM_NINF 0x40000u
#define OFL_REPSUM_NOT_NEGZERO 0x80000u   /* some input was not -0.0 */

typedef struct {
    int64_t c[OFL_REPSUM_K];   /* c[i] sums bin (top - i) of every input */
    uint64_t meta;
} ofl_repsum_t;

/* Values -> elements (count elements each). */
void ofl_repsum_from_double(ofl_repsum_t *out, const double *in, size_t count);
void ofl_repsum_from_float(ofl_repsum_t *out, const float *in, size_t count);

/* Elements -> values, each rounded once to nearest, ties to even. */
void ofl_repsum_to_double(double *out, const ofl_repsum_t *in, size_t count);
void ofl_repsum_to_float(float *out, const ofl_repsum_t *in, size_t count);

/* One value, without the loop: the blocking one-double call's. */
double ofl_repsum_to_double1(const ofl_repsum_t *in);

/* Zeros, subnormals, infinities and NaN: the general code, out of line. */
void ofl_repsum_from_double_rare(ofl_repsum_t *out, double in);

/*
 * One value, inline for the common case: a normal finite input. No zero,
 * subnormal or special to tell apart, and the implicit bit puts the top bit
 * at lsb + 52 without a count; its bits never fall below its own bins, and the
 * sign is applied without a branch. The same element as the general code, bit
 * for bit (the unit tests compare them on random and edge inputs).
 */
static inline void ofl_repsum_from_double1(ofl_repsum_t *out, double in)
{
    uint64_t bits;
    __builtin_memcpy(&bits, &in, sizeof(bits));
    /* exponent field 1 .. 0x7fe: a normal finite value */
    if (__builtin_expect(((bits >> 52) & 0x7ff) - 1 >= 0x7fe, 0)) {
        ofl_repsum_from_double_rare(out, in);
        return;
    }
    const int k = OFL_REPSUM_K, w = OFL_REPSUM_W;
    const uint64_t bin = (UINT64_C(1) << OFL_REPSUM_W) - 1;
    int pos = (int) ((bits >> 52) & 0x7ff) - 1;   /* the significand's lsb over 2^-1074 */
    uint64_t sig = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52);
    int top = (pos + 52) / w;
    unsigned __int128 v = (unsigned __int128) sig << (pos - (top - k + 1) * w);   /* [28, 67] */
    uint64_t s = (uint64_t) 0 - (bits >> 63);   /* all ones when negative: -c = (c ^ s) - s */
    uint64_t c0 = (uint64_t) (v >> (2 * w)) & bin;
    uint64_t c1 = (uint64_t) (v >> w) & bin, c2 = (uint64_t) v & bin;
    out->c[0] = (int64_t) ((c0 ^ s) - s);
    out->c[1] = (int64_t) ((c1 ^ s) - s);
    out->c[2] = (int64_t) ((c2 ^ s) - s);
    /* meta: top bin, lowest bin holding a nonzero input bit, "not -0.0" */
    uint64_t low = (uint64_t) ((unsigned) (pos + __builtin_ctzll(sig)) / (unsigned) w);
    out->meta = (uint64_t) top | (low << 8) | OFL_REPSUM_NOT_NEGZERO;
}

/* The general conversions alone, without the fast paths the ones above take
 * for the common case (normal inputs, a top component far from overflow):
 * the reference the unit tests compare those paths against, bit for bit. */
void ofl_repsum_from_double_ref(ofl_repsum_t *out, const double *in, size_t count);
void ofl_repsum_to_double_ref(double *out, const ofl_repsum_t *in, size_t count);

/* The ALU kernel: out[i] = a[i] + b[i]; out may alias a or b. */
void ofl_repsum_add(void *out, const void *a, const void *b, size_t count);

/* 1 when bins holding nonzero input bits were dropped from the element. */
int ofl_repsum_inexact(const ofl_repsum_t *e);

#endif
