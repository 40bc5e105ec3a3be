/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Unit test of the arithmetic unit (src/alu): which (op, type) pairs have kernels,
 * and that every kernel matches a scalar reference on every element.
 *
 * The reference is written independently of alu.c on purpose: integer results are
 * computed in uint64_t and masked to the type's width, floating results with the
 * operation spelled out per type, MINLOC/MAXLOC from the MPI standard's wording.
 * A bug shared by kernel and reference would otherwise go unnoticed.
 */
#include "alu/alu.h"
#include "unit.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* The pair layouts alu.h promises, restated here so the test checks the contract. */
struct t_float_int {
    float v;
    int i;
};
struct t_double_int {
    double v;
    int i;
};
struct t_long_int {
    long v;
    int i;
};
struct t_2int {
    int v;
    int i;
};
struct t_short_int {
    short v;
    int i;
};
struct t_long_double_int {
    long double v;
    int i;
};

_Static_assert(OFL_T_COUNT == 23, "allow table below has one column per type");
_Static_assert(OFL_OP_COUNT == 12, "allow table below has one row per op");

/*
 * What MPI allows, transcribed from the standard's op/type table. Columns:
 *
 *   i8 u8 i16 u16 i32 u32 i64 u64 | flt dbl ldbl | bool | cflt cdbl |
 *   float_int double_int long_int 2int short_int long_double_int | repsum meta wide
 *
 * The last columns are not MPI types but the ALU's elements of reproducible
 * sums (the binned element, the two-pass form's meta element and 128-bit
 * integer), which have SUM only (their values: test_repsum.c).
 */
static const char *const allow_rows[OFL_OP_COUNT] = {
    [OFL_OP_SUM] = "11111111" "111" "0" "11" "000000" "111",
    [OFL_OP_PROD] = "11111111" "111" "0" "11" "000000" "000",
    [OFL_OP_MIN] = "11111111" "111" "0" "00" "000000" "000",
    [OFL_OP_MAX] = "11111111" "111" "0" "00" "000000" "000",
    [OFL_OP_LAND] = "11111111" "000" "1" "00" "000000" "000",
    [OFL_OP_LOR] = "11111111" "000" "1" "00" "000000" "000",
    [OFL_OP_LXOR] = "11111111" "000" "1" "00" "000000" "000",
    [OFL_OP_BAND] = "11111111" "000" "0" "00" "000000" "000",
    [OFL_OP_BOR] = "11111111" "000" "0" "00" "000000" "000",
    [OFL_OP_BXOR] = "11111111" "000" "0" "00" "000000" "000",
    [OFL_OP_MINLOC] = "00000000" "000" "0" "00" "111111" "000",
    [OFL_OP_MAXLOC] = "00000000" "000" "0" "00" "111111" "000",
};

static bool mpi_allows(ofl_op_t op, ofl_type_t t)
{
    return allow_rows[op][t] == '1';
}

/* ---- type facts, restated independently of alu.c --------------------------- */

static size_t test_size(ofl_type_t t)
{
    switch (t) {
    case OFL_T_INT8: return sizeof(int8_t);
    case OFL_T_UINT8: return sizeof(uint8_t);
    case OFL_T_INT16: return sizeof(int16_t);
    case OFL_T_UINT16: return sizeof(uint16_t);
    case OFL_T_INT32: return sizeof(int32_t);
    case OFL_T_UINT32: return sizeof(uint32_t);
    case OFL_T_INT64: return sizeof(int64_t);
    case OFL_T_UINT64: return sizeof(uint64_t);
    case OFL_T_FLOAT: return sizeof(float);
    case OFL_T_DOUBLE: return sizeof(double);
    case OFL_T_LONG_DOUBLE: return sizeof(long double);
    case OFL_T_BOOL: return sizeof(_Bool);
    case OFL_T_CFLOAT: return sizeof(float _Complex);
    case OFL_T_CDOUBLE: return sizeof(double _Complex);
    case OFL_T_FLOAT_INT: return sizeof(struct t_float_int);
    case OFL_T_DOUBLE_INT: return sizeof(struct t_double_int);
    case OFL_T_LONG_INT: return sizeof(struct t_long_int);
    case OFL_T_2INT: return sizeof(struct t_2int);
    case OFL_T_SHORT_INT: return sizeof(struct t_short_int);
    case OFL_T_LONG_DOUBLE_INT: return sizeof(struct t_long_double_int);
    case OFL_T_REPSUM: return 4 * sizeof(int64_t);
    case OFL_T_REPSUM_META: return sizeof(uint16_t);
    case OFL_T_REPSUM_WIDE: return 2 * sizeof(uint64_t);
    default: return 0;
    }
}

static bool is_int(ofl_type_t t)
{
    return t <= OFL_T_UINT64;
}

static bool is_signed_int(ofl_type_t t)
{
    return t == OFL_T_INT8 || t == OFL_T_INT16 || t == OFL_T_INT32 || t == OFL_T_INT64;
}

static unsigned int_width(ofl_type_t t)
{
    return (unsigned)test_size(t) * 8;
}

static uint64_t width_mask(ofl_type_t t)
{
    unsigned w = int_width(t);
    return w == 64 ? UINT64_MAX : (UINT64_C(1) << w) - 1;
}

/* An integer element as uint64_t, sign-extended for signed types so that uint64
 * arithmetic stays congruent to the typed arithmetic modulo 2^width. */
static uint64_t int_load(ofl_type_t t, const void *p)
{
    switch (t) {
    case OFL_T_INT8: return (uint64_t)(int64_t)*(const int8_t *)p;
    case OFL_T_UINT8: return (uint64_t)*(const uint8_t *)p;
    case OFL_T_INT16: return (uint64_t)(int64_t)*(const int16_t *)p;
    case OFL_T_UINT16: return (uint64_t)*(const uint16_t *)p;
    case OFL_T_INT32: return (uint64_t)(int64_t)*(const int32_t *)p;
    case OFL_T_UINT32: return (uint64_t)*(const uint32_t *)p;
    case OFL_T_INT64: return (uint64_t)*(const int64_t *)p;
    case OFL_T_UINT64: return *(const uint64_t *)p;
    default: return 0;
    }
}

/* Store the low width bits of v; the test's typed writes go through memcpy of the
 * exact-width unsigned pattern so no signed conversion is involved. */
static void int_store(ofl_type_t t, void *p, uint64_t v)
{
    uint8_t u8 = (uint8_t)v;
    uint16_t u16 = (uint16_t)v;
    uint32_t u32 = (uint32_t)v;
    switch (int_width(t)) {
    case 8: memcpy(p, &u8, 1); break;
    case 16: memcpy(p, &u16, 2); break;
    case 32: memcpy(p, &u32, 4); break;
    default: memcpy(p, &v, 8); break;
    }
}

/* ---- pseudo-random input ----------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

/* xorshift64*: deterministic across runs so a failure reproduces. */
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(2685821657736338717);
}

static unsigned rnd_below(unsigned n)
{
    return (unsigned)(rnd() % n);
}

static int rnd_small(int lo, int hi)
{
    return lo + (int)rnd_below((unsigned)(hi - lo + 1));
}

/* Integer values biased towards the places where wraparound and sign bugs live. */
static uint64_t gen_int(ofl_type_t t)
{
    unsigned w = int_width(t);
    uint64_t mask = width_mask(t);
    uint64_t smax = mask >> 1;           /* INT_MAX of the width */
    uint64_t smin = (smax + 1) & mask;   /* INT_MIN bit pattern */
    bool s = is_signed_int(t);
    switch (rnd_below(12)) {
    case 0: return 0;
    case 1: return 0;
    case 2: return 1;
    case 3: return mask;                               /* -1 or UMAX */
    case 4: return s ? smax : mask;                    /* the type's max */
    case 5: return s ? smin : 0;                       /* the type's min */
    case 6: return s ? smax - (uint64_t)rnd_below(4) : mask - (uint64_t)rnd_below(4);
    case 7: return s ? smin + (uint64_t)rnd_below(4) : (uint64_t)rnd_below(4);
    case 8: return (uint64_t)(int64_t)rnd_small(-100, 100) & mask;
    case 9: return (uint64_t)1 << rnd_below(w);
    default: return rnd() & mask;
    }
}

/* Real values: ordinary ones, exact small integers, and the IEEE special cases. */
#define GEN_REAL(T, NAME, MAXV, MINV, TRUEMIN)                                        \
    static T NAME(void)                                                              \
    {                                                                                \
        switch (rnd_below(16)) {                                                     \
        case 0: return (T)0;                                                         \
        case 1: return -(T)0;                                                        \
        case 2: return (T)1;                                                         \
        case 3: return (T)-1;                                                        \
        case 4: return MAXV;                                                         \
        case 5: return -(MAXV);                                                      \
        case 6: return MINV;                                                         \
        case 7: return TRUEMIN;                                                      \
        case 8: return (T)INFINITY;                                                  \
        case 9: return -(T)INFINITY;                                                 \
        case 10: return (T)NAN;                                                      \
        case 11: return (T)rnd_small(-1000, 1000);                                   \
        default: return (T)((double)(int64_t)rnd() / (double)(rnd() | 1));          \
        }                                                                            \
    }

GEN_REAL(float, gen_float, FLT_MAX, FLT_MIN, FLT_TRUE_MIN)
GEN_REAL(double, gen_double, DBL_MAX, DBL_MIN, DBL_TRUE_MIN)
GEN_REAL(long double, gen_ldouble, LDBL_MAX, LDBL_MIN, LDBL_TRUE_MIN)

/* Pair values from a tiny range so equal values (MINLOC ties) are common. */
static int gen_index(void)
{
    switch (rnd_below(10)) {
    case 0: return INT_MAX;
    case 1: return INT_MIN;
    default: return rnd_small(-3, 5);
    }
}

static void fill_elem(ofl_type_t t, void *p)
{
    switch (t) {
    case OFL_T_FLOAT: {
        float v = gen_float();
        memcpy(p, &v, sizeof v);
        break;
    }
    case OFL_T_DOUBLE: {
        double v = gen_double();
        memcpy(p, &v, sizeof v);
        break;
    }
    case OFL_T_LONG_DOUBLE: {
        long double v = gen_ldouble();
        memcpy(p, &v, sizeof v);
        break;
    }
    case OFL_T_BOOL: {
        _Bool v = rnd_below(2) != 0;
        memcpy(p, &v, sizeof v);
        break;
    }
    case OFL_T_CFLOAT: {
        /* Small integer parts keep every partial product and sum exact. */
        float parts[2] = { (float)rnd_small(-64, 64), (float)rnd_small(-64, 64) };
        memcpy(p, parts, sizeof parts);
        break;
    }
    case OFL_T_CDOUBLE: {
        double parts[2] = { (double)rnd_small(-(1 << 20), 1 << 20),
                            (double)rnd_small(-(1 << 20), 1 << 20) };
        memcpy(p, parts, sizeof parts);
        break;
    }
    case OFL_T_FLOAT_INT: {
        struct t_float_int v = { (float)rnd_small(-2, 2) * 0.5f, gen_index() };
        memcpy(p, &v, sizeof v);
        break;
    }
    case OFL_T_DOUBLE_INT: {
        struct t_double_int v = { rnd_below(8) ? (double)rnd_small(-2, 2) : DBL_MAX,
                                  gen_index() };
        memcpy(p, &v, sizeof v);
        break;
    }
    case OFL_T_LONG_INT: {
        long vals[] = { LONG_MIN, LONG_MAX, -1, 0, 1, 2 };
        struct t_long_int v = { vals[rnd_below(6)], gen_index() };
        memcpy(p, &v, sizeof v);
        break;
    }
    case OFL_T_2INT: {
        int vals[] = { INT_MIN, INT_MAX, -1, 0, 1, 2 };
        struct t_2int v = { vals[rnd_below(6)], gen_index() };
        memcpy(p, &v, sizeof v);
        break;
    }
    case OFL_T_SHORT_INT: {
        short vals[] = { SHRT_MIN, SHRT_MAX, -1, 0, 1, 2 };
        struct t_short_int v = { vals[rnd_below(6)], gen_index() };
        memcpy(p, &v, sizeof v);
        break;
    }
    case OFL_T_LONG_DOUBLE_INT: {
        struct t_long_double_int v = { (long double)rnd_small(-2, 2) / 3.0L, gen_index() };
        memcpy(p, &v, sizeof v);
        break;
    }
    default: int_store(t, p, gen_int(t)); break;
    }
}

/* a and b: random elements, with b[i] a copy of a[i] now and then so that equal
 * operands (MIN/MAX of equals, MINLOC ties, x ^ x) are exercised on every type. */
static void fill_inputs(ofl_type_t t, unsigned char *a, unsigned char *b, size_t n)
{
    size_t sz = test_size(t);
    for (size_t i = 0; i < n; i++) {
        fill_elem(t, a + i * sz);
        if (rnd_below(6) == 0) {
            memcpy(b + i * sz, a + i * sz, sz);
        } else {
            fill_elem(t, b + i * sz);
        }
    }
}

/* ---- reference and comparison ------------------------------------------------ */

/* Integers: uint64 arithmetic masked to the width; orderings on the widened value. */
static bool check_int(ofl_op_t op, ofl_type_t t, const void *x, const void *y,
                      const void *got, uint64_t *want_out)
{
    uint64_t m = width_mask(t);
    uint64_t a = int_load(t, x);
    uint64_t b = int_load(t, y);
    bool s = is_signed_int(t);
    bool a_lt_b = s ? (int64_t)a < (int64_t)b : a < b;
    uint64_t want;
    switch (op) {
    case OFL_OP_SUM: want = a + b; break;
    case OFL_OP_PROD: want = a * b; break;
    case OFL_OP_MIN: want = a_lt_b ? a : b; break;
    case OFL_OP_MAX: want = a_lt_b ? b : a; break;
    case OFL_OP_LAND: want = (a != 0 && b != 0) ? 1 : 0; break;
    case OFL_OP_LOR: want = (a != 0 || b != 0) ? 1 : 0; break;
    case OFL_OP_LXOR: want = ((a != 0) != (b != 0)) ? 1 : 0; break;
    case OFL_OP_BAND: want = a & b; break;
    case OFL_OP_BOR: want = a | b; break;
    case OFL_OP_BXOR: want = a ^ b; break;
    default: want = ~(uint64_t)0; break;
    }
    *want_out = want & m;
    return (int_load(t, got) & m) == (want & m);
}

/* Bitwise-equivalent for reals: same value and same sign of zero, or both NaN. */
#define SAME_REAL(e, g) \
    ((isnan(e) && isnan(g)) || ((e) == (g) && !!signbit(e) == !!signbit(g)))

/*
 * Reals: one IEEE operation on two operands is correctly rounded, so computing it
 * once more in the same precision must give the identical result. MIN/MAX follow
 * the rule documented in alu.c: b's element wins unless a's is strictly better.
 */
#define CHECK_REAL(T, NAME)                                                          \
    static bool NAME(ofl_op_t op, const void *x, const void *y, const void *got)     \
    {                                                                                \
        T a;                                                                         \
        T b;                                                                         \
        T g;                                                                         \
        T want;                                                                      \
        memcpy(&a, x, sizeof a);                                                     \
        memcpy(&b, y, sizeof b);                                                     \
        memcpy(&g, got, sizeof g);                                                   \
        switch (op) {                                                                \
        case OFL_OP_SUM: want = (T)(a + b); break;                                   \
        case OFL_OP_PROD: want = (T)(a * b); break;                                  \
        case OFL_OP_MIN:                                                             \
            if (isnan(a) || isnan(b)) {                                              \
                want = b;                                                            \
            } else {                                                                 \
                want = (a < b) ? a : b;                                              \
            }                                                                        \
            break;                                                                   \
        case OFL_OP_MAX:                                                             \
            if (isnan(a) || isnan(b)) {                                              \
                want = b;                                                            \
            } else {                                                                 \
                want = (b < a) ? a : b;                                              \
            }                                                                        \
            break;                                                                   \
        default: return false;                                                       \
        }                                                                            \
        return SAME_REAL(want, g);                                                   \
    }

CHECK_REAL(float, check_float)
CHECK_REAL(double, check_double)
CHECK_REAL(long double, check_ldouble)

/*
 * Complex: C11 lays out T _Complex as T[2]. Inputs are small integers, so the
 * textbook formula is exact and any correct multiplication must agree with it.
 */
#define CHECK_COMPLEX(T, NAME)                                                       \
    static bool NAME(ofl_op_t op, const void *x, const void *y, const void *got)     \
    {                                                                                \
        T a[2];                                                                      \
        T b[2];                                                                      \
        T g[2];                                                                      \
        T w[2];                                                                      \
        memcpy(a, x, sizeof a);                                                      \
        memcpy(b, y, sizeof b);                                                      \
        memcpy(g, got, sizeof g);                                                    \
        if (op == OFL_OP_SUM) {                                                      \
            w[0] = a[0] + b[0];                                                      \
            w[1] = a[1] + b[1];                                                      \
        } else {                                                                     \
            w[0] = a[0] * b[0] - a[1] * b[1];                                        \
            w[1] = a[0] * b[1] + a[1] * b[0];                                        \
        }                                                                            \
        return w[0] == g[0] && w[1] == g[1];                                         \
    }

CHECK_COMPLEX(float, check_cfloat)
CHECK_COMPLEX(double, check_cdouble)

/*
 * Pairs, as the MPI standard words MINLOC: w = min(u, v), and k = i if u < v,
 * min(i, j) if u == v, j if u > v. MAXLOC mirrors it. Values compare with ==.
 */
#define CHECK_PAIR(S, NAME)                                                          \
    static bool NAME(ofl_op_t op, const void *x, const void *y, const void *got)     \
    {                                                                                \
        S a;                                                                         \
        S b;                                                                         \
        S g;                                                                         \
        S w;                                                                         \
        memcpy(&a, x, sizeof a);                                                     \
        memcpy(&b, y, sizeof b);                                                     \
        memcpy(&g, got, sizeof g);                                                   \
        bool a_wins = op == OFL_OP_MINLOC ? a.v < b.v : a.v > b.v;                   \
        bool b_wins = op == OFL_OP_MINLOC ? b.v < a.v : b.v > a.v;                   \
        if (a_wins) {                                                                \
            w = a;                                                                   \
        } else if (b_wins) {                                                         \
            w = b;                                                                   \
        } else {                                                                     \
            w.v = a.v;                                                               \
            w.i = a.i < b.i ? a.i : b.i;                                             \
        }                                                                            \
        return w.v == g.v && w.i == g.i;                                             \
    }

CHECK_PAIR(struct t_float_int, check_float_int)
CHECK_PAIR(struct t_double_int, check_double_int)
CHECK_PAIR(struct t_long_int, check_long_int)
CHECK_PAIR(struct t_2int, check_2int)
CHECK_PAIR(struct t_short_int, check_short_int)
CHECK_PAIR(struct t_long_double_int, check_long_double_int)

/* Bools: any non-zero byte is true; the result must be exactly 0 or 1. */
static bool check_bool(ofl_op_t op, const void *x, const void *y, const void *got)
{
    unsigned char a;
    unsigned char b;
    unsigned char g;
    memcpy(&a, x, 1);
    memcpy(&b, y, 1);
    memcpy(&g, got, 1);
    unsigned char want;
    switch (op) {
    case OFL_OP_LAND: want = (a && b) ? 1 : 0; break;
    case OFL_OP_LOR: want = (a || b) ? 1 : 0; break;
    case OFL_OP_LXOR: want = (!a != !b) ? 1 : 0; break;
    default: return false;
    }
    return g == want;
}

static bool check_elem(ofl_op_t op, ofl_type_t t, const void *x, const void *y,
                       const void *got)
{
    uint64_t want;
    switch (t) {
    case OFL_T_FLOAT: return check_float(op, x, y, got);
    case OFL_T_DOUBLE: return check_double(op, x, y, got);
    case OFL_T_LONG_DOUBLE: return check_ldouble(op, x, y, got);
    case OFL_T_BOOL: return check_bool(op, x, y, got);
    case OFL_T_CFLOAT: return check_cfloat(op, x, y, got);
    case OFL_T_CDOUBLE: return check_cdouble(op, x, y, got);
    case OFL_T_FLOAT_INT: return check_float_int(op, x, y, got);
    case OFL_T_DOUBLE_INT: return check_double_int(op, x, y, got);
    case OFL_T_LONG_INT: return check_long_int(op, x, y, got);
    case OFL_T_2INT: return check_2int(op, x, y, got);
    case OFL_T_SHORT_INT: return check_short_int(op, x, y, got);
    case OFL_T_LONG_DOUBLE_INT: return check_long_double_int(op, x, y, got);
    default: return is_int(t) && check_int(op, t, x, y, got, &want);
    }
}

/* ---- the sweep ---------------------------------------------------------------- */

enum { SENTINEL = 0xa5 };

static const char *const mode_names[] = { "out-of-place", "out==a", "out==b" };

/*
 * Run one kernel over n elements in each aliasing mode and check every element and
 * the element just past the end (which must stay untouched).
 */
static void sweep_one(ofl_op_t op, ofl_type_t t, ofl_alu_fn fn, size_t n)
{
    size_t sz = test_size(t);
    size_t bytes = (n + 1) * sz;
    unsigned char *a = malloc(bytes);
    unsigned char *b = malloc(bytes);
    unsigned char *a0 = malloc(bytes);
    unsigned char *b0 = malloc(bytes);
    unsigned char *out = malloc(bytes);
    if (!a || !b || !a0 || !b0 || !out) {
        CHECK(0, "out of memory");
        goto done;
    }
    memset(a0, SENTINEL, bytes);
    memset(b0, SENTINEL, bytes);
    fill_inputs(t, a0, b0, n);

    for (int mode = 0; mode < 3; mode++) {
        memcpy(a, a0, bytes);
        memcpy(b, b0, bytes);
        memset(out, SENTINEL, bytes);
        unsigned char *dst = mode == 0 ? out : mode == 1 ? a : b;
        fn(dst, a, b, n);

        for (size_t i = 0; i < n; i++) {
            bool ok = check_elem(op, t, a0 + i * sz, b0 + i * sz, dst + i * sz);
            CHECK(ok, "%s %s n=%zu %s: element %zu wrong", ofl_op_name(op),
                  ofl_type_name(t), n, mode_names[mode], i);
        }
        bool tail_ok = true;
        for (size_t k = n * sz; k < bytes; k++) {
            tail_ok = tail_ok && dst[k] == SENTINEL;
        }
        CHECK(tail_ok, "%s %s n=%zu %s: wrote past the end", ofl_op_name(op),
              ofl_type_name(t), n, mode_names[mode]);
        /* Inputs that are not the destination must come back unchanged. */
        CHECK(dst == a || memcmp(a, a0, bytes) == 0, "%s %s n=%zu %s: modified a",
              ofl_op_name(op), ofl_type_name(t), n, mode_names[mode]);
        CHECK(dst == b || memcmp(b, b0, bytes) == 0, "%s %s n=%zu %s: modified b",
              ofl_op_name(op), ofl_type_name(t), n, mode_names[mode]);
    }
done:
    free(a);
    free(b);
    free(a0);
    free(b0);
    free(out);
}

static void test_allow_table_and_sweep(void)
{
    static const size_t lengths[] = { 0, 1, 7, 33, 1000 };
    for (int op = 0; op < OFL_OP_COUNT; op++) {
        CHECK(strlen(allow_rows[op]) == OFL_T_COUNT, "allow row %d malformed", op);
        for (int t = 0; t < OFL_T_COUNT; t++) {
            ofl_alu_fn fn = ofl_alu_lookup((ofl_op_t)op, (ofl_type_t)t);
            bool want = mpi_allows((ofl_op_t)op, (ofl_type_t)t);
            CHECK((fn != NULL) == want, "lookup(%s, %s) is %s, MPI %s it",
                  ofl_op_name((ofl_op_t)op), ofl_type_name((ofl_type_t)t),
                  fn ? "a kernel" : "NULL", want ? "allows" : "forbids");
            if (fn == NULL || !want || OFL_T_REPSUM <= t) {
                continue;
            }
            for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; k++) {
                sweep_one((ofl_op_t)op, (ofl_type_t)t, fn, lengths[k]);
            }
            /* A zero-count call must not touch its (possibly NULL) buffers. */
            fn(NULL, NULL, NULL, 0);
        }
    }
}

/* ---- hand-picked cases --------------------------------------------------------- */

static void test_wraparound(void)
{
    int8_t i8a[1] = { 100 }, i8b[1] = { 100 }, i8o[1];
    ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT8)(i8o, i8a, i8b, 1);
    CHECK(i8o[0] == -56, "int8 100 + 100 = %d, want -56 (wrap, not saturate)", i8o[0]);

    uint8_t u8a[1] = { 200 }, u8b[1] = { 100 }, u8o[1];
    ofl_alu_lookup(OFL_OP_SUM, OFL_T_UINT8)(u8o, u8a, u8b, 1);
    CHECK(u8o[0] == 44, "uint8 200 + 100 = %u, want 44 (wrap, not saturate)", u8o[0]);

    int16_t i16a[1] = { 30000 }, i16b[1] = { 30000 }, i16o[1];
    ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT16)(i16o, i16a, i16b, 1);
    CHECK(i16o[0] == -5536, "int16 30000 + 30000 = %d, want -5536", i16o[0]);

    /* 65535 * 65535 overflows int if uint16 is promoted to int before multiplying. */
    uint16_t u16a[1] = { 65535 }, u16b[1] = { 65535 }, u16o[1];
    ofl_alu_lookup(OFL_OP_PROD, OFL_T_UINT16)(u16o, u16a, u16b, 1);
    CHECK(u16o[0] == 1, "uint16 65535 * 65535 = %u, want 1", u16o[0]);

    int32_t i32a[1] = { INT32_MAX }, i32b[1] = { 1 }, i32o[1];
    ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT32)(i32o, i32a, i32b, 1);
    CHECK(i32o[0] == INT32_MIN, "int32 INT32_MAX + 1 = %d, want INT32_MIN", (int)i32o[0]);

    int64_t i64a[1] = { INT64_MIN }, i64b[1] = { -1 }, i64o[1];
    ofl_alu_lookup(OFL_OP_PROD, OFL_T_INT64)(i64o, i64a, i64b, 1);
    CHECK(i64o[0] == INT64_MIN, "int64 INT64_MIN * -1 = %lld, want INT64_MIN",
          (long long)i64o[0]);
}

static void test_loc_ties(void)
{
    struct t_2int a[3] = { { 7, 5 }, { 7, 2 }, { 1, 9 } };
    struct t_2int b[3] = { { 7, 2 }, { 7, 5 }, { 3, 0 } };
    struct t_2int o[3];
    ofl_alu_lookup(OFL_OP_MINLOC, OFL_T_2INT)(o, a, b, 3);
    CHECK(o[0].v == 7 && o[0].i == 2, "minloc tie (7,5),(7,2) -> (%d,%d)", o[0].v, o[0].i);
    CHECK(o[1].v == 7 && o[1].i == 2, "minloc tie (7,2),(7,5) -> (%d,%d)", o[1].v, o[1].i);
    CHECK(o[2].v == 1 && o[2].i == 9, "minloc (1,9),(3,0) -> (%d,%d)", o[2].v, o[2].i);
    ofl_alu_lookup(OFL_OP_MAXLOC, OFL_T_2INT)(o, a, b, 3);
    CHECK(o[0].v == 7 && o[0].i == 2, "maxloc tie (7,5),(7,2) -> (%d,%d)", o[0].v, o[0].i);
    CHECK(o[1].v == 7 && o[1].i == 2, "maxloc tie (7,2),(7,5) -> (%d,%d)", o[1].v, o[1].i);
    CHECK(o[2].v == 3 && o[2].i == 0, "maxloc (1,9),(3,0) -> (%d,%d)", o[2].v, o[2].i);
}

/* Pins down the NaN rule documented in alu.c: the element of b wins. */
static void test_float_nan_rule(void)
{
    double a[2] = { NAN, 1.0 };
    double b[2] = { 1.0, NAN };
    double o[2];
    ofl_alu_lookup(OFL_OP_MIN, OFL_T_DOUBLE)(o, a, b, 2);
    CHECK(o[0] == 1.0 && isnan(o[1]), "min(NaN,1)=%g min(1,NaN)=%g", o[0], o[1]);
    ofl_alu_lookup(OFL_OP_MAX, OFL_T_DOUBLE)(o, a, b, 2);
    CHECK(o[0] == 1.0 && isnan(o[1]), "max(NaN,1)=%g max(1,NaN)=%g", o[0], o[1]);
}

/* A C_BOOL buffer filled by memset or by another language may hold bytes other than
 * 0 and 1; they count as true and the result must still be a canonical _Bool. */
static void test_bool_noncanonical(void)
{
    unsigned char a[4] = { 2, 0, 0xff, 2 };
    unsigned char b[4] = { 3, 0, 0, 0x80 };
    unsigned char o[4];
    ofl_alu_lookup(OFL_OP_LAND, OFL_T_BOOL)(o, a, b, 4);
    CHECK(o[0] == 1 && o[1] == 0 && o[2] == 0 && o[3] == 1, "land %u %u %u %u", o[0], o[1],
          o[2], o[3]);
    ofl_alu_lookup(OFL_OP_LXOR, OFL_T_BOOL)(o, a, b, 4);
    CHECK(o[0] == 0 && o[1] == 0 && o[2] == 1 && o[3] == 0, "lxor %u %u %u %u", o[0], o[1],
          o[2], o[3]);
}

static void test_names_and_sizes(void)
{
    for (int t = 0; t < OFL_T_COUNT; t++) {
        const char *n = ofl_type_name((ofl_type_t)t);
        CHECK(n != NULL && n[0] != '\0', "type %d has no name", t);
        CHECK(ofl_type_size((ofl_type_t)t) == test_size((ofl_type_t)t),
              "size of %s is %zu, want %zu", n ? n : "?", ofl_type_size((ofl_type_t)t),
              test_size((ofl_type_t)t));
        for (int u = 0; u < t && n != NULL; u++) {
            const char *m = ofl_type_name((ofl_type_t)u);
            CHECK(m == NULL || strcmp(n, m) != 0, "types %d and %d share name %s", u, t, n);
        }
    }
    for (int op = 0; op < OFL_OP_COUNT; op++) {
        const char *n = ofl_op_name((ofl_op_t)op);
        CHECK(n != NULL && n[0] != '\0', "op %d has no name", op);
        for (int u = 0; u < op && n != NULL; u++) {
            const char *m = ofl_op_name((ofl_op_t)u);
            CHECK(m == NULL || strcmp(n, m) != 0, "ops %d and %d share name %s", u, op, n);
        }
    }
    CHECK(strcmp(ofl_type_name(OFL_T_INT8), "int8") == 0, "int8 name");
    CHECK(strcmp(ofl_type_name(OFL_T_FLOAT_INT), "float_int") == 0, "float_int name");
    CHECK(strcmp(ofl_op_name(OFL_OP_SUM), "sum") == 0, "sum name");
    CHECK(strcmp(ofl_op_name(OFL_OP_MAXLOC), "maxloc") == 0, "maxloc name");

    /* Out-of-range enums, as a bad MPI handle mapping could produce. */
    CHECK(ofl_alu_lookup(OFL_OP_COUNT, OFL_T_INT8) == NULL, "lookup past op range");
    CHECK(ofl_alu_lookup(OFL_OP_SUM, OFL_T_COUNT) == NULL, "lookup past type range");
    CHECK(ofl_alu_lookup((ofl_op_t)-1, OFL_T_INT8) == NULL, "lookup of negative op");
    CHECK(ofl_type_size(OFL_T_COUNT) == 0, "size past type range");
    CHECK(ofl_type_name(OFL_T_COUNT) != NULL, "name past type range");
    CHECK(ofl_op_name(OFL_OP_COUNT) != NULL, "name past op range");
}

int main(void)
{
    unit_timeout("test_alu", 60);
    test_names_and_sizes();
    test_wraparound();
    test_loc_ties();
    test_float_nan_rule();
    test_bool_noncanonical();
    test_allow_table_and_sweep();
    return unit_report("alu");
}
