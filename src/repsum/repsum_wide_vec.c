/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the two-pass form's vector code: x86-64 AVX2, four doubles per
 * 256-bit register, one 64-bit lane each, chosen at run time (repsum_wide.c).
 * Every lane computes what the scalar code (repsum_wide_int.h, repsum_wide.c)
 * computes for its value, without branches:
 *
 * - AVX2 has no vector clz or ctz. An integer v <= 2^52 is exactly the double
 *   whose bits are those of 2^52 plus v, minus 2^52, so floor(log2 v) is read
 *   from that double's exponent field: for the lowest set bit of a significand
 *   (sig & -sig, at most 2^52), for a subnormal's significand, and for 32 bits
 *   of a 128-bit sum chosen by two compares.
 * - Variable shifts (vpsllvq, vpsrlvq) give 0 for counts of 64 or more, and a
 *   negative count is such a count as an unsigned one: a shift of the 53-bit
 *   significand by d into a 128-bit integer, or of a sum up to bit 127, is a
 *   few shifts ORed together with no test on d.
 * - x / 40 for 0 <= x < 2^16 is (x * 52429) >> 21 (52429 * 40 = 2^21 + 8, so
 *   the error stays below 1/40 there; the bin indices are below 2100).
 *
 * The rounding back takes the scalar code's fast formula (ofl_rs_to_double) for
 * every lane whose sum is nonzero and normal; it also holds for sums of 53 bits
 * or fewer, which are exact (no round bit, no sticky bits). Zero sums are +0.0
 * or -0.0 by the flags. Lanes with NaN or infinities among the inputs, or with
 * a subnormal or overflowing result, are done again by the scalar code.
 */
#include "repsum/repsum_wide_int.h"

#if OFL_RSW_X86
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))

#define V(c) _mm256_set1_epi64x((long long) (c))
#define TWO52_BITS 0x4330000000000000LL

/* floor(log2 v) for 1 <= v <= 2^52 in each lane. */
AVX2 static inline __m256i log2_small(__m256i v)
{
    __m256d d = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_add_epi64(v, V(TWO52_BITS))),
                              _mm256_set1_pd(0x1p52));
    return _mm256_sub_epi64(_mm256_srli_epi64(_mm256_castpd_si256(d), 52), V(1023));
}

/* x / 40 for 0 <= x < 2^16 in each lane. */
AVX2 static inline __m256i div40(__m256i x)
{
    return _mm256_srli_epi64(_mm256_mul_epu32(x, V(52429)), 21);
}

/* A value's fields as decode() has them: sig (0 for zeros and non-finite
 * values), pos, and masks (all ones) for negative, non-finite and zero. */
typedef struct {
    __m256i sig, pos, neg, special, zero, s, subn, field;
} fields4_t;

AVX2 static inline fields4_t decode4(__m256i bits)
{
    fields4_t f;
    const __m256i zero = _mm256_setzero_si256(), ones = _mm256_cmpeq_epi64(zero, zero);
    f.field = _mm256_and_si256(_mm256_srli_epi64(bits, 52), V(0x7ff));
    f.s = _mm256_and_si256(bits, V((UINT64_C(1) << 52) - 1));
    f.neg = _mm256_cmpgt_epi64(zero, bits);
    f.special = _mm256_cmpeq_epi64(f.field, V(0x7ff));
    f.subn = _mm256_cmpeq_epi64(f.field, zero);
    f.zero = _mm256_and_si256(f.subn, _mm256_cmpeq_epi64(f.s, zero));
    __m256i normal = _mm256_xor_si256(f.subn, ones);
    f.sig = _mm256_or_si256(f.s, _mm256_and_si256(normal, V(UINT64_C(1) << 52)));
    f.sig = _mm256_andnot_si256(_mm256_or_si256(f.special, f.zero), f.sig);
    f.pos = _mm256_add_epi64(f.field, normal);   /* field - 1, or 0 for subnormals */
    return f;
}

/* meta_of() in each lane (values below 2^16 in 64-bit lanes). */
AVX2 static inline __m256i meta4(__m256i bits)
{
    fields4_t f = decode4(bits);
    __m256i lsb = _mm256_and_si256(f.sig, _mm256_sub_epi64(_mm256_setzero_si256(), f.sig));
    __m256i lo = _mm256_add_epi64(f.pos, log2_small(lsb));
    __m256i hi = _mm256_blendv_epi8(_mm256_add_epi64(f.field, V(51)), log2_small(f.s), f.subn);
    __m256i m = _mm256_or_si256(_mm256_or_si256(div40(hi), _mm256_slli_epi64(div40(lo), LOW_SHIFT)),
                                V(NOT_NEGZERO));
    /* non-finite: NaN, or -Inf / +Inf by the sign */
    __m256i inf = _mm256_add_epi64(V(OFL_REPSUM_PINF >> FLAG_SHIFT),
                                   _mm256_and_si256(f.neg, V(OFL_REPSUM_PINF >> FLAG_SHIFT)));
    /* no blend on a negated mask: GCC 12 drops the negation where AVX-512 is on */
    __m256i s0 = _mm256_cmpeq_epi64(f.s, _mm256_setzero_si256());
    __m256i flag = _mm256_blendv_epi8(V(OFL_REPSUM_NAN >> FLAG_SHIFT), inf, s0);
    __m256i special = _mm256_or_si256(flag, V(NONE_LOW | NOT_NEGZERO));
    __m256i zero = _mm256_or_si256(V(NONE_LOW), _mm256_andnot_si256(f.neg, V(NOT_NEGZERO)));
    m = _mm256_blendv_epi8(m, special, f.special);
    return _mm256_blendv_epi8(m, zero, f.zero);
}

/* All ones in the lanes that do not hold a normal double: exponent field 0 or
 * 0x7ff, the fields whose successor has none of the bits 1-10. */
AVX2 static inline __m256i not_normal4(__m256i bits)
{
    __m256i field1 = _mm256_add_epi64(_mm256_srli_epi64(bits, 52), V(1));
    return _mm256_cmpeq_epi64(_mm256_and_si256(field1, V(0x7fe)), _mm256_setzero_si256());
}

/* meta4() when every lane is normal: sig has bit 52, pos is field - 1 and the
 * top bit is at field + 51. */
AVX2 static inline __m256i meta4_normal(__m256i bits)
{
    __m256i field = _mm256_and_si256(_mm256_srli_epi64(bits, 52), V(0x7ff));
    __m256i sig = _mm256_or_si256(bits, V(UINT64_C(0xfff) << 52));   /* -sig keeps its lsb */
    __m256i lsb = _mm256_and_si256(sig, _mm256_sub_epi64(_mm256_setzero_si256(), sig));
    __m256i lo = _mm256_add_epi64(_mm256_add_epi64(field, V(-1)), log2_small(lsb));
    __m256i hi = _mm256_add_epi64(field, V(51));
    return _mm256_or_si256(_mm256_or_si256(div40(hi), _mm256_slli_epi64(div40(lo), LOW_SHIFT)),
                           V(NOT_NEGZERO));
}

AVX2 void ofl_rsw_meta_from_double_avx2(ofl_repsum_meta_t *out, const double *in, size_t count)
{
    /* 16 values: two pairs of registers put into 32-bit lanes, packed to 16 bits
     * (the order then a0 a1 b0 b1 c0 c1 d0 d1 | a2 a3 b2 b3 ... after the byte
     * shuffle), and the 32-bit pairs put back in order */
    const __m256i shuf = _mm256_setr_epi8(0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15,
                                          0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    size_t i = 0;
    for (; i + 16 <= count; i += 16) {
        __m256i a = _mm256_loadu_si256((const __m256i *) (in + i));
        __m256i b = _mm256_loadu_si256((const __m256i *) (in + i + 4));
        __m256i c = _mm256_loadu_si256((const __m256i *) (in + i + 8));
        __m256i d = _mm256_loadu_si256((const __m256i *) (in + i + 12));
        __m256i odd = _mm256_or_si256(_mm256_or_si256(not_normal4(a), not_normal4(b)),
                                      _mm256_or_si256(not_normal4(c), not_normal4(d)));
        if (__builtin_expect(_mm256_testz_si256(odd, odd), 1)) {
            a = meta4_normal(a);
            b = meta4_normal(b);
            c = meta4_normal(c);
            d = meta4_normal(d);
        } else {
            a = meta4(a);
            b = meta4(b);
            c = meta4(c);
            d = meta4(d);
        }
        __m256i ab = _mm256_or_si256(a, _mm256_slli_epi64(b, 32));
        __m256i cd = _mm256_or_si256(c, _mm256_slli_epi64(d, 32));
        __m256i p = _mm256_shuffle_epi8(_mm256_packus_epi32(ab, cd), shuf);
        _mm256_storeu_si256((__m256i *) (out + i), _mm256_permutevar8x32_epi32(p, order));
    }
    for (; i < count; ++i) {
        out[i] = meta_of(in[i]);
    }
}

/* The meta's base (top - K + 1) W in each lane, from four 16-bit metas. */
AVX2 static inline __m256i load_meta4(const ofl_repsum_meta_t *m)
{
    return _mm256_cvtepu16_epi64(_mm_loadl_epi64((const __m128i *) m));
}

AVX2 static inline __m256i base4(__m256i meta)
{
    __m256i top = _mm256_and_si256(meta, V(TOP_MASK));
    return _mm256_sub_epi64(_mm256_mul_epu32(top, V(W)), V((K - 1) * W));
}

/* -(hi, lo) where neg is all ones, else (hi, lo). */
AVX2 static inline void negate4(__m256i *lo, __m256i *hi, __m256i neg)
{
    __m256i lo_zero = _mm256_cmpeq_epi64(*lo, _mm256_setzero_si256());
    *lo = _mm256_sub_epi64(_mm256_xor_si256(*lo, neg), neg);
    *hi = _mm256_sub_epi64(_mm256_xor_si256(*hi, neg), _mm256_and_si256(neg, lo_zero));
}

AVX2 void ofl_rsw_wide_from_double_avx2(ofl_repsum_wide_t *out, const double *in,
                                        const ofl_repsum_meta_t *meta, size_t count)
{
    size_t i = 0;
    for (; i + 4 <= count; i += 4) {
        __m256i bits = _mm256_loadu_si256((const __m256i *) (in + i));
        __m256i odd = not_normal4(bits);
        fields4_t f;
        if (__builtin_expect(_mm256_testz_si256(odd, odd), 1)) {
            /* all normal: bit 52 set, pos = field - 1 */
            f.sig = _mm256_or_si256(_mm256_and_si256(bits, V((UINT64_C(1) << 52) - 1)),
                                    V(UINT64_C(1) << 52));
            f.pos = _mm256_add_epi64(_mm256_srli_epi64(_mm256_slli_epi64(bits, 1), 53), V(-1));
            f.neg = _mm256_cmpgt_epi64(_mm256_setzero_si256(), bits);
        } else {
            f = decode4(bits);
        }
        __m256i d = _mm256_sub_epi64(f.pos, base4(load_meta4(meta + i)));
        __m256i nd = _mm256_sub_epi64(_mm256_setzero_si256(), d);
        /* sig 2^d as a 128-bit integer, d from below -64 up to 119 */
        __m256i lo = _mm256_or_si256(_mm256_sllv_epi64(f.sig, d), _mm256_srlv_epi64(f.sig, nd));
        __m256i hi = _mm256_or_si256(_mm256_srlv_epi64(f.sig, _mm256_add_epi64(nd, V(64))),
                                     _mm256_sllv_epi64(f.sig, _mm256_sub_epi64(d, V(64))));
        negate4(&lo, &hi, f.neg);
        __m256i e01 = _mm256_unpacklo_epi64(lo, hi);   /* lo0 hi0 | lo2 hi2 */
        __m256i e23 = _mm256_unpackhi_epi64(lo, hi);   /* lo1 hi1 | lo3 hi3 */
        _mm256_storeu_si256((__m256i *) (out + i), _mm256_permute2x128_si256(e01, e23, 0x20));
        _mm256_storeu_si256((__m256i *) (out + i + 2),
                            _mm256_permute2x128_si256(e01, e23, 0x31));
    }
    for (; i < count; ++i) {
        wide_of(&out[i], in[i], meta[i]);
    }
}

AVX2 void ofl_rsw_wide_add_avx2(void *out, const void *a, const void *b, size_t count)
{
    ofl_repsum_wide_t *o = out;
    const ofl_repsum_wide_t *p = a, *q = b;
    const __m256i sign = V(UINT64_C(1) << 63);
    size_t i = 0;
    for (; i + 2 <= count; i += 2) {
        __m256i x = _mm256_loadu_si256((const __m256i *) (p + i));
        __m256i y = _mm256_loadu_si256((const __m256i *) (q + i));
        __m256i s = _mm256_add_epi64(x, y);
        /* a low word's carry: its sum below an addend, unsigned; moved to the high word */
        __m256i carry = _mm256_cmpgt_epi64(_mm256_xor_si256(x, sign), _mm256_xor_si256(s, sign));
        s = _mm256_sub_epi64(s, _mm256_slli_si256(carry, 8));
        _mm256_storeu_si256((__m256i *) (o + i), s);
    }
    if (i < count) {
        ofl_repsum_wide_add_ref(o + i, p + i, q + i, count - i);
    }
}

/* The formats' constants: fl 0 for double, 1 for float. */
#define PREC(fl) ((fl) ? 24 : 53)
#define BIAS(fl) ((fl) ? 127 : 1023)
#define EMAX(fl) ((fl) ? 0xfe : 0x7fe)   /* the largest normal field */
#define SIGN(fl) ((fl) ? UINT64_C(1) << 31 : UINT64_C(1) << 63)

/* ofl_rs_to_double's fast formula, and the same for floats (ofl_rs_round_u's
 * answer for a normal result): n = u << lz has u's top bit at 127, field is the
 * biased exponent of that bit; the sign from neg. The rounding carry may run
 * into the exponent field, and from the largest one to infinity, as it should.
 * A float's bits are in the low half of each lane. */
AVX2 static inline __m256i round4(__m256i nh, __m256i nl, __m256i field, __m256i neg,
                                  const int fl)
{
    const int sh = 64 - PREC(fl);   /* n's bits under the significand's */
    __m256i mant = _mm256_srli_epi64(nh, sh);
    __m256i round = _mm256_and_si256(_mm256_srli_epi64(nh, sh - 1), V(1));
    __m256i rest = _mm256_and_si256(nh, V((UINT64_C(1) << (sh - 1)) - 1));
    __m256i below = _mm256_cmpeq_epi64(_mm256_or_si256(rest, nl), _mm256_setzero_si256());
    __m256i inc = _mm256_and_si256(round, _mm256_or_si256(_mm256_andnot_si256(below, V(1)), mant));
    __m256i bits = _mm256_add_epi64(_mm256_slli_epi64(_mm256_sub_epi64(field, V(1)), PREC(fl) - 1),
                                    _mm256_add_epi64(mant, inc));
    return _mm256_or_si256(bits, _mm256_and_si256(neg, V(SIGN(fl))));
}

/* All ones in the lanes without NaN or infinities whose field is normal. */
AVX2 static inline __m256i normal_finite4(__m256i field, __m256i m, const int fl)
{
    __m256i finite = _mm256_cmpeq_epi64(_mm256_and_si256(m, V(FLAG_MASK & ~NOT_NEGZERO)),
                                        _mm256_setzero_si256());
    __m256i normal = _mm256_and_si256(_mm256_cmpgt_epi64(field, _mm256_setzero_si256()),
                                      _mm256_cmpgt_epi64(V(EMAX(fl) + 1), field));
    return _mm256_and_si256(finite, normal);
}

/* The general case of round4's input: any u, zero included (lanes 0 2 1 3 as
 * wide_to_avx2 has them); *ok as normal_finite4, zero sums counted good. */
AVX2 static inline __m256i round_any4(__m256i uh, __m256i ul, __m256i m, __m256i neg, __m256i *ok,
                                      const int fl)
{
    /* t: u's top bit, from 32 of its bits */
    __m256i h0 = _mm256_cmpeq_epi64(uh, _mm256_setzero_si256());
    __m256i w = _mm256_blendv_epi8(uh, ul, h0);
    __m256i t = _mm256_andnot_si256(h0, V(64));
    __m256i w_hi = _mm256_srli_epi64(w, 32);
    __m256i w0 = _mm256_cmpeq_epi64(w_hi, _mm256_setzero_si256());
    w = _mm256_blendv_epi8(w_hi, _mm256_and_si256(w, V(0xffffffffu)), w0);
    t = _mm256_add_epi64(_mm256_add_epi64(t, _mm256_andnot_si256(w0, V(32))),
                         log2_small(w));
    /* n = u << lz puts the top bit at 127 */
    __m256i lz = _mm256_sub_epi64(V(127), t);
    __m256i nh = _mm256_or_si256(
        _mm256_sllv_epi64(uh, lz),
        _mm256_or_si256(_mm256_srlv_epi64(ul, _mm256_sub_epi64(V(64), lz)),
                        _mm256_sllv_epi64(ul, _mm256_sub_epi64(lz, V(64)))));
    __m256i nl = _mm256_sllv_epi64(ul, lz);
    __m256i field = _mm256_add_epi64(_mm256_add_epi64(base4(m), t), V(BIAS(fl) - 1074));
    __m256i bits = round4(nh, nl, field, neg, fl);
    /* a zero sum (neg is 0 then): -0.0 only when every input was */
    __m256i u0 = _mm256_and_si256(h0, _mm256_cmpeq_epi64(ul, _mm256_setzero_si256()));
    __m256i zbits = _mm256_andnot_si256(
        _mm256_cmpeq_epi64(_mm256_and_si256(m, V(NOT_NEGZERO)), V(NOT_NEGZERO)),
        V(SIGN(fl)));
    bits = _mm256_blendv_epi8(bits, zbits, u0);
    __m256i finite = _mm256_cmpeq_epi64(_mm256_and_si256(m, V(FLAG_MASK & ~NOT_NEGZERO)),
                                        _mm256_setzero_si256());
    *ok = _mm256_or_si256(normal_finite4(field, m, fl), _mm256_and_si256(finite, u0));
    return bits;
}

/* The lanes of a vector whose `good` bit (movemask, lanes 0 2 1 3) is clear,
 * again by the scalar code: NaN or infinities, results subnormal or too large. */
static void redo_lanes(void *out, const ofl_repsum_wide_t *in, const ofl_repsum_meta_t *meta,
                       size_t i, int good, const int fl)
{
    good = (good & 9) | (good & 2) << 1 | (good & 4) >> 1;
    for (int k = 0; k < 4; ++k) {
        if (!(good >> k & 1)) {
            if (fl) {
                ((float *) out)[i + k] = to_float_one(&in[i + k], meta[i + k]);
            } else {
                ((double *) out)[i + k] = to_double_one(&in[i + k], meta[i + k]);
            }
        }
    }
}

/* The sums as doubles (fl 0) or floats (fl 1). */
AVX2 static inline void wide_to_avx2(void *out, const ofl_repsum_wide_t *in,
                                     const ofl_repsum_meta_t *meta, size_t count, const int fl)
{
    const __m256i zero = _mm256_setzero_si256();
    /* the low halves of lanes 0 2 1 3, in the elements' order */
    const __m256i halves = _mm256_setr_epi32(0, 4, 2, 6, 1, 3, 5, 7);
    size_t i = 0;
    for (; i + 4 <= count; i += 4) {
        __m256i e01 = _mm256_loadu_si256((const __m256i *) (in + i));
        __m256i e23 = _mm256_loadu_si256((const __m256i *) (in + i + 2));
        /* lanes in the order 0 2 1 3; the results are put back at the end */
        __m256i ul = _mm256_unpacklo_epi64(e01, e23);
        __m256i uh = _mm256_unpackhi_epi64(e01, e23);
        __m256i m = _mm256_permute4x64_epi64(load_meta4(meta + i), 0xd8);
        __m256i neg = _mm256_cmpgt_epi64(zero, uh);
        negate4(&ul, &uh, neg);
        __m256i uh12 = _mm256_srli_epi64(uh, 12);
        __m256i small = _mm256_cmpeq_epi64(uh12, zero);
        __m256i bits, ok;
        if (__builtin_expect(_mm256_testz_si256(small, small), 1)) {
            /* every u at least 2^76 (the usual case: the sum's top bin is the
             * top kept one): its top bit t is 76 + that of uh >> 12, below 2^51 */
            __m256i top12 = log2_small(uh12);
            __m256i lz = _mm256_sub_epi64(V(127 - 76), top12);   /* 1 .. 51 */
            __m256i nh = _mm256_or_si256(_mm256_sllv_epi64(uh, lz),
                                         _mm256_srlv_epi64(ul, _mm256_sub_epi64(V(64), lz)));
            __m256i nl = _mm256_sllv_epi64(ul, lz);
            __m256i field = _mm256_add_epi64(_mm256_add_epi64(base4(m), top12),
                                             V(76 + BIAS(fl) - 1074));
            bits = round4(nh, nl, field, neg, fl);
            ok = normal_finite4(field, m, fl);
        } else {
            bits = round_any4(uh, ul, m, neg, &ok, fl);
        }
        if (fl) {
            _mm_storeu_si128((__m128i *) ((float *) out + i),
                             _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(bits, halves)));
        } else {
            _mm256_storeu_si256((__m256i *) ((double *) out + i),
                                _mm256_permute4x64_epi64(bits, 0xd8));
        }
        int good = _mm256_movemask_pd(_mm256_castsi256_pd(ok));
        if (__builtin_expect(0xf != good, 0)) {
            redo_lanes(out, in, meta, i, good, fl);
        }
    }
    for (; i < count; ++i) {
        if (fl) {
            ((float *) out)[i] = to_float_one(&in[i], meta[i]);
        } else {
            ((double *) out)[i] = to_double_one(&in[i], meta[i]);
        }
    }
}

AVX2 void ofl_rsw_wide_to_double_avx2(double *out, const ofl_repsum_wide_t *in,
                                      const ofl_repsum_meta_t *meta, size_t count)
{
    wide_to_avx2(out, in, meta, count, 0);
}

AVX2 void ofl_rsw_wide_to_float_avx2(float *out, const ofl_repsum_wide_t *in,
                                     const ofl_repsum_meta_t *meta, size_t count)
{
    wide_to_avx2(out, in, meta, count, 1);
}

/*
 * AVX-512 (F, CD, DQ, BW, VBMI2), eight doubles per register: the same
 * formulas with vplzcntq for clz (ctz is 63 - clz of the lowest set bit),
 * vpshldvq for the 128-bit left shift, masks for the lane choices, and the
 * sums' words taken apart in order by vpermt2q.
 */
#define AVX512 __attribute__((target("avx512f,avx512cd,avx512dq,avx512bw,avx512vl,avx512vbmi2")))
#define Z(c) _mm512_set1_epi64((long long) (c))

AVX512 static inline __m512i div40_512(__m512i x)
{
    return _mm512_srli_epi64(_mm512_mul_epu32(x, Z(52429)), 21);
}

/* Lanes whose field is 0 or 0x7ff. */
AVX512 static inline __mmask8 not_normal8(__m512i bits)
{
    __m512i field1 = _mm512_add_epi64(_mm512_srli_epi64(bits, 52), Z(1));
    return _mm512_testn_epi64_mask(field1, Z(0x7fe));
}

AVX512 void ofl_rsw_meta_from_double_avx512(ofl_repsum_meta_t *out, const double *in, size_t count)
{
    size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        __m512i bits = _mm512_loadu_si512(in + i);
        if (__builtin_expect(0 != not_normal8(bits), 0)) {
            /* the general formula, two AVX2 registers */
            __m256i a = meta4(_mm512_castsi512_si256(bits));
            __m256i b = meta4(_mm512_extracti64x4_epi64(bits, 1));
            __m512i m = _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
            _mm_storeu_si128((__m128i *) (out + i), _mm512_cvtepi64_epi16(m));
            continue;
        }
        __m512i field = _mm512_and_si512(_mm512_srli_epi64(bits, 52), Z(0x7ff));
        __m512i sig = _mm512_or_si512(bits, Z(UINT64_C(0xfff) << 52));
        __m512i lsb = _mm512_and_si512(sig, _mm512_sub_epi64(_mm512_setzero_si512(), sig));
        /* lo = field - 1 + ctz = field + 62 - clz(lsb) */
        __m512i lo = _mm512_sub_epi64(_mm512_add_epi64(field, Z(62)), _mm512_lzcnt_epi64(lsb));
        __m512i hi = _mm512_add_epi64(field, Z(51));
        __m512i m = _mm512_or_si512(_mm512_or_si512(div40_512(hi),
                                                     _mm512_slli_epi64(div40_512(lo), LOW_SHIFT)),
                                    Z(NOT_NEGZERO));
        _mm_storeu_si128((__m128i *) (out + i), _mm512_cvtepi64_epi16(m));
    }
    ofl_rsw_meta_from_double_avx2(out + i, in + i, count - i);
}

AVX512 void ofl_rsw_wide_from_double_avx512(ofl_repsum_wide_t *out, const double *in,
                                            const ofl_repsum_meta_t *meta, size_t count)
{
    const __m512i idx_a = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11);
    const __m512i idx_b = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
    size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        __m512i bits = _mm512_loadu_si512(in + i);
        if (__builtin_expect(0 != not_normal8(bits), 0)) {
            ofl_rsw_wide_from_double_avx2(out + i, in + i, meta + i, 8);
            continue;
        }
        __m512i sig = _mm512_or_si512(_mm512_and_si512(bits, Z((UINT64_C(1) << 52) - 1)),
                                      Z(UINT64_C(1) << 52));
        __m512i pos = _mm512_srli_epi64(_mm512_slli_epi64(bits, 1), 53);   /* field */
        __m512i top = _mm512_and_si512(
            _mm512_cvtepu16_epi64(_mm_loadu_si128((const __m128i *) (meta + i))), Z(TOP_MASK));
        /* d = field - 1 - (top - K + 1) W */
        __m512i d = _mm512_sub_epi64(_mm512_add_epi64(pos, Z((K - 1) * W - 1)),
                                     _mm512_mul_epu32(top, Z(W)));
        __m512i nd = _mm512_sub_epi64(_mm512_setzero_si512(), d);
        __m512i lo = _mm512_or_si512(_mm512_sllv_epi64(sig, d), _mm512_srlv_epi64(sig, nd));
        __m512i hi = _mm512_or_si512(_mm512_srlv_epi64(sig, _mm512_add_epi64(nd, Z(64))),
                                     _mm512_sllv_epi64(sig, _mm512_sub_epi64(d, Z(64))));
        __mmask8 neg = _mm512_movepi64_mask(bits);
        __mmask8 borrow = neg & _mm512_test_epi64_mask(lo, lo);
        lo = _mm512_mask_sub_epi64(lo, neg, _mm512_setzero_si512(), lo);
        hi = _mm512_mask_sub_epi64(hi, neg, _mm512_setzero_si512(), hi);
        hi = _mm512_mask_sub_epi64(hi, borrow, hi, Z(1));
        _mm512_storeu_si512(out + i, _mm512_permutex2var_epi64(lo, idx_a, hi));
        _mm512_storeu_si512(out + i + 4, _mm512_permutex2var_epi64(lo, idx_b, hi));
    }
    ofl_rsw_wide_from_double_avx2(out + i, in + i, meta + i, count - i);
}

AVX512 static inline void wide_to_avx512(void *out, const ofl_repsum_wide_t *in,
                                         const ofl_repsum_meta_t *meta, size_t count,
                                         const int fl)
{
    const __m512i idx_lo = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
    const __m512i idx_hi = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    const __m512i zero = _mm512_setzero_si512();
    const int sh = 64 - PREC(fl);
    size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        __m512i e0 = _mm512_loadu_si512(in + i);
        __m512i e1 = _mm512_loadu_si512(in + i + 4);
        __m512i ul = _mm512_permutex2var_epi64(e0, idx_lo, e1);
        __m512i uh = _mm512_permutex2var_epi64(e0, idx_hi, e1);
        __m512i m = _mm512_cvtepu16_epi64(_mm_loadu_si128((const __m128i *) (meta + i)));
        /* the magnitude */
        __mmask8 neg = _mm512_movepi64_mask(uh);
        __mmask8 borrow = neg & _mm512_test_epi64_mask(ul, ul);
        ul = _mm512_mask_sub_epi64(ul, neg, zero, ul);
        uh = _mm512_mask_sub_epi64(uh, neg, zero, uh);
        uh = _mm512_mask_sub_epi64(uh, borrow, uh, Z(1));
        /* n = u << lz, u's top bit at 127 */
        __mmask8 h0 = _mm512_testn_epi64_mask(uh, uh);
        __m512i lz = _mm512_mask_add_epi64(_mm512_lzcnt_epi64(uh), h0, _mm512_lzcnt_epi64(ul),
                                           Z(64));
        __m512i nh = _mm512_shldv_epi64(uh, ul, lz);   /* lz below 64 */
        nh = _mm512_mask_sllv_epi64(nh, h0, ul, _mm512_sub_epi64(lz, Z(64)));
        __m512i nl = _mm512_sllv_epi64(ul, lz);
        /* field - 1 = base + 127 - lz + bias - 1074 - 1, base = top W - (K - 1) W */
        __m512i top = _mm512_and_si512(m, Z(TOP_MASK));
        __m512i field1 = _mm512_sub_epi64(
            _mm512_mul_epu32(top, Z(W)), _mm512_add_epi64(lz, Z((K - 1) * W - 127 - BIAS(fl)
                                                                 + 1074 + 1)));
        __m512i mant = _mm512_srli_epi64(nh, sh);
        __mmask8 below = _mm512_test_epi64_mask(nh, Z((UINT64_C(1) << (sh - 1)) - 1))
                         | _mm512_test_epi64_mask(nl, nl);
        __mmask8 inc = _mm512_test_epi64_mask(nh, Z(UINT64_C(1) << (sh - 1)))
                       & (below | _mm512_test_epi64_mask(nh, Z(UINT64_C(1) << sh)));
        __m512i bits = _mm512_add_epi64(_mm512_slli_epi64(field1, PREC(fl) - 1), mant);
        bits = _mm512_mask_add_epi64(bits, inc, bits, Z(1));
        bits = _mm512_mask_or_epi64(bits, neg, bits, Z(SIGN(fl)));
        /* a zero sum: -0.0 only when every input was */
        __mmask8 u0 = h0 & _mm512_testn_epi64_mask(ul, ul);
        bits = _mm512_mask_mov_epi64(bits, u0, zero);
        bits = _mm512_mask_mov_epi64(bits, u0 & _mm512_testn_epi64_mask(m, Z(NOT_NEGZERO)),
                                     Z(SIGN(fl)));
        if (fl) {
            _mm256_storeu_si256((__m256i *) ((float *) out + i), _mm512_cvtepi64_epi32(bits));
        } else {
            _mm512_storeu_si512((double *) out + i, bits);
        }
        __mmask8 finite = _mm512_testn_epi64_mask(m, Z(FLAG_MASK & ~NOT_NEGZERO));
        __mmask8 normal = _mm512_cmplt_epu64_mask(field1, Z(EMAX(fl)));
        unsigned good = finite & (normal | u0);
        if (__builtin_expect(0xff != good, 0)) {
            for (int k = 0; k < 8; ++k) {
                if (!(good >> k & 1)) {
                    if (fl) {
                        ((float *) out)[i + k] = to_float_one(&in[i + k], meta[i + k]);
                    } else {
                        ((double *) out)[i + k] = to_double_one(&in[i + k], meta[i + k]);
                    }
                }
            }
        }
    }
    if (fl) {
        ofl_rsw_wide_to_float_avx2((float *) out + i, in + i, meta + i, count - i);
    } else {
        ofl_rsw_wide_to_double_avx2((double *) out + i, in + i, meta + i, count - i);
    }
}

AVX512 void ofl_rsw_wide_to_double_avx512(double *out, const ofl_repsum_wide_t *in,
                                          const ofl_repsum_meta_t *meta, size_t count)
{
    wide_to_avx512(out, in, meta, count, 0);
}

AVX512 void ofl_rsw_wide_to_float_avx512(float *out, const ofl_repsum_wide_t *in,
                                         const ofl_repsum_meta_t *meta, size_t count)
{
    wide_to_avx512(out, in, meta, count, 1);
}

#endif
