/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the NIC's arithmetic unit: element-wise reduction kernels.
 *
 * Which (op, type) pairs exist follows the MPI standard's table of predefined
 * reduction operations (MPI-4.0 section 6.9.2):
 *
 *   SUM, PROD          C integer, floating point, complex
 *   MIN, MAX           C integer, floating point
 *   LAND, LOR, LXOR    C integer, logical (C _Bool)
 *   BAND, BOR, BXOR    C integer, byte (MPI_BYTE is served by the uint8 kernels)
 *   MINLOC, MAXLOC     the six value/index pair types
 *
 * Every other pair has no kernel, so ofl_alu_lookup() returns NULL for it and the
 * Open MPI glue can fall back to the host path instead of computing nonsense.
 *
 * The kernels are plain index loops without restrict: out may alias a or b, and
 * because element i is read before element i is written, aliasing is harmless.
 * GCC still vectorizes these loops at -O3; it versions them behind a run-time
 * overlap check, which costs one comparison per call rather than per element.
 */
#include "alu.h"
#include "repsum/repsum.h"
#include "repsum/repsum_wide.h"

#include <limits.h>

/*
 * Pair types for MINLOC/MAXLOC. Their layout is the contract with the MPI side
 * (MPI_FLOAT_INT and friends are defined as exactly these C structs), so an array
 * of them can be handed over as is.
 */
typedef struct {
    float v;
    int i;
} ofl_float_int_t;

typedef struct {
    double v;
    int i;
} ofl_double_int_t;

typedef struct {
    long v;
    int i;
} ofl_long_int_t;

typedef struct {
    int v;
    int i;
} ofl_2int_t;

typedef struct {
    short v;
    int i;
} ofl_short_int_t;

typedef struct {
    long double v;
    int i;
} ofl_long_double_int_t;

/*
 * C _Bool buffers are accessed as unsigned char: a byte other than 0 or 1 read
 * through a _Bool lvalue is undefined, and a buffer handed over by an application
 * is not guaranteed to hold only canonical values. Any non-zero byte counts as
 * true; the result is always 0 or 1, which is a valid _Bool.
 */
_Static_assert(sizeof(_Bool) == 1, "bool kernels access C _Bool as one byte");

/* The 32-bit wrap type below is unsigned int, which must then hold 32 bits. */
_Static_assert(UINT_MAX >= UINT32_MAX, "unsigned int narrower than 32 bits");

/*
 * The kernels are built for the baseline and again for AVX2 and AVX-512, the
 * loader picking what the CPU has: a sum that is not an element wider per
 * instruction than Open MPI's op/avx leaves mid-size reduces memory-stalled on
 * the combine (GCC on x86-64; elsewhere the baseline only).
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) \
    && !defined(__SANITIZE_ADDRESS__)
#define OFL_CLONES __attribute__((target_clones("default", "avx2", "avx512f")))
#else
#define OFL_CLONES
#endif

/*
 * One kernel: out[i] = EXPR, where EXPR sees the two inputs as p and q. Loading both
 * into locals before the store keeps the function correct when out aliases a or b.
 */
#define OFL_KERNEL(opname, tname, T, EXPR)                                          \
    OFL_CLONES static void ofl_##opname##_##tname(void *out, const void *a,         \
                                                  const void *b,                    \
                                                  size_t count)                     \
    {                                                                               \
        T *o = out;                                                                 \
        const T *x = a;                                                             \
        const T *y = b;                                                             \
        for (size_t i = 0; i < count; i++) {                                        \
            const T p = x[i];                                                       \
            const T q = y[i];                                                       \
            o[i] = EXPR;                                                            \
        }                                                                           \
    }

/*
 * C integer types: (name, enum, type, unsigned type of the same width, wrap type).
 *
 * SUM and PROD must wrap modulo 2^N, but signed overflow is undefined and the
 * same-width unsigned types narrower than int are promoted to (signed) int, where
 * uint16 65535 * 65535 would overflow. So arithmetic is done in the "wrap type",
 * an unsigned type of at least int's rank that is therefore never promoted, then
 * truncated to the same-width unsigned type and converted back. The final
 * unsigned-to-signed conversion is implementation-defined in C11; GCC and Clang
 * define it as reduction modulo 2^N, which is the two's complement wrap MPI
 * users expect.
 */
#define OFL_CINT_TYPES(X)                                                           \
    X(int8, OFL_T_INT8, int8_t, uint8_t, unsigned int)                              \
    X(uint8, OFL_T_UINT8, uint8_t, uint8_t, unsigned int)                           \
    X(int16, OFL_T_INT16, int16_t, uint16_t, unsigned int)                          \
    X(uint16, OFL_T_UINT16, uint16_t, uint16_t, unsigned int)                       \
    X(int32, OFL_T_INT32, int32_t, uint32_t, unsigned int)                          \
    X(uint32, OFL_T_UINT32, uint32_t, uint32_t, unsigned int)                       \
    X(int64, OFL_T_INT64, int64_t, uint64_t, unsigned long long)                    \
    X(uint64, OFL_T_UINT64, uint64_t, uint64_t, unsigned long long)

/* Real floating types: (name, enum, type). */
#define OFL_FLOAT_TYPES(X)                                                          \
    X(float, OFL_T_FLOAT, float)                                                    \
    X(double, OFL_T_DOUBLE, double)                                                 \
    X(long_double, OFL_T_LONG_DOUBLE, long double)

/* Complex types: (name, enum, type). */
#define OFL_COMPLEX_TYPES(X)                                                        \
    X(cfloat, OFL_T_CFLOAT, float _Complex)                                         \
    X(cdouble, OFL_T_CDOUBLE, double _Complex)

/* MINLOC/MAXLOC pair types: (name, enum, type). */
#define OFL_PAIR_TYPES(X)                                                           \
    X(float_int, OFL_T_FLOAT_INT, ofl_float_int_t)                                  \
    X(double_int, OFL_T_DOUBLE_INT, ofl_double_int_t)                               \
    X(long_int, OFL_T_LONG_INT, ofl_long_int_t)                                     \
    X(2int, OFL_T_2INT, ofl_2int_t)                                                 \
    X(short_int, OFL_T_SHORT_INT, ofl_short_int_t)                                  \
    X(long_double_int, OFL_T_LONG_DOUBLE_INT, ofl_long_double_int_t)

/*
 * Logical ops use & | ^ on the 0/1 results of != 0 rather than && and ||: the
 * operands are plain values, so there is nothing to short-circuit, and the
 * branch-free form is what the vectorizer wants. Bitwise ops run in the unsigned
 * type so that no operand is ever a negative signed value.
 */
#define OFL_CINT_KERNELS(tname, E, T, UT, WT)                                       \
    OFL_KERNEL(sum, tname, T, (T)(UT)((WT)p + (WT)q))                               \
    OFL_KERNEL(prod, tname, T, (T)(UT)((WT)p * (WT)q))                              \
    OFL_KERNEL(min, tname, T, (p < q) ? p : q)                                      \
    OFL_KERNEL(max, tname, T, (p > q) ? p : q)                                      \
    OFL_KERNEL(land, tname, T, (T)((p != 0) & (q != 0)))                            \
    OFL_KERNEL(lor, tname, T, (T)((p != 0) | (q != 0)))                             \
    OFL_KERNEL(lxor, tname, T, (T)((p != 0) ^ (q != 0)))                            \
    OFL_KERNEL(band, tname, T, (T)(UT)((UT)p & (UT)q))                              \
    OFL_KERNEL(bor, tname, T, (T)(UT)((UT)p | (UT)q))                               \
    OFL_KERNEL(bxor, tname, T, (T)(UT)((UT)p ^ (UT)q))

/*
 * MIN/MAX on floating types are exactly (p < q) ? p : q and (p > q) ? p : q, the
 * semantics of the SSE/AVX min/max instructions, so the loops vectorize without
 * -ffast-math. Consequences, relied on by nothing but documented here:
 *   - if either operand is NaN the comparison is false and the result is q (the
 *     element of b): a NaN in b propagates, a NaN in a is dropped;
 *   - MIN(-0.0, +0.0) and MAX(-0.0, +0.0) likewise return q.
 * MPI leaves NaN handling unspecified; this rule is at least deterministic for a
 * fixed reduction order.
 */
#define OFL_FLOAT_KERNELS(tname, E, T)                                              \
    OFL_KERNEL(sum, tname, T, p + q)                                                \
    OFL_KERNEL(prod, tname, T, p * q)                                               \
    OFL_KERNEL(min, tname, T, (p < q) ? p : q)                                      \
    OFL_KERNEL(max, tname, T, (p > q) ? p : q)

/*
 * Complex PROD uses C's own complex multiplication, Annex G infinity/NaN recovery
 * included, so a reduction gives what the same product written in C would give.
 */
#define OFL_COMPLEX_KERNELS(tname, E, T)                                            \
    OFL_KERNEL(sum, tname, T, p + q)                                                \
    OFL_KERNEL(prod, tname, T, p * q)

/*
 * MINLOC/MAXLOC as MPI defines them: the better value wins, and on equal values
 * the smaller index wins. Incomparable values (a NaN in a float pair) select the
 * element of b, as the real MIN/MAX do.
 */
#define OFL_PAIR_KERNELS(tname, E, T)                                               \
    OFL_KERNEL(minloc, tname, T, ((p.v < q.v) || (p.v == q.v && p.i < q.i)) ? p : q) \
    OFL_KERNEL(maxloc, tname, T, ((p.v > q.v) || (p.v == q.v && p.i < q.i)) ? p : q)

OFL_CINT_TYPES(OFL_CINT_KERNELS)
OFL_FLOAT_TYPES(OFL_FLOAT_KERNELS)
OFL_COMPLEX_TYPES(OFL_COMPLEX_KERNELS)
OFL_PAIR_TYPES(OFL_PAIR_KERNELS)

OFL_KERNEL(land, bool, unsigned char, (unsigned char)((p != 0) & (q != 0)))
OFL_KERNEL(lor, bool, unsigned char, (unsigned char)((p != 0) | (q != 0)))
OFL_KERNEL(lxor, bool, unsigned char, (unsigned char)((p != 0) ^ (q != 0)))

/* Table rows, generated from the same type lists so a kernel cannot go missing. */
#define OFL_CINT_ENTRIES(tname, E, T, UT, WT)                                       \
    [OFL_OP_SUM][E] = ofl_sum_##tname,                                              \
    [OFL_OP_PROD][E] = ofl_prod_##tname,                                            \
    [OFL_OP_MIN][E] = ofl_min_##tname,                                              \
    [OFL_OP_MAX][E] = ofl_max_##tname,                                              \
    [OFL_OP_LAND][E] = ofl_land_##tname,                                            \
    [OFL_OP_LOR][E] = ofl_lor_##tname,                                              \
    [OFL_OP_LXOR][E] = ofl_lxor_##tname,                                            \
    [OFL_OP_BAND][E] = ofl_band_##tname,                                            \
    [OFL_OP_BOR][E] = ofl_bor_##tname,                                              \
    [OFL_OP_BXOR][E] = ofl_bxor_##tname,

#define OFL_FLOAT_ENTRIES(tname, E, T)                                              \
    [OFL_OP_SUM][E] = ofl_sum_##tname,                                              \
    [OFL_OP_PROD][E] = ofl_prod_##tname,                                            \
    [OFL_OP_MIN][E] = ofl_min_##tname,                                              \
    [OFL_OP_MAX][E] = ofl_max_##tname,

#define OFL_COMPLEX_ENTRIES(tname, E, T)                                            \
    [OFL_OP_SUM][E] = ofl_sum_##tname,                                              \
    [OFL_OP_PROD][E] = ofl_prod_##tname,

#define OFL_PAIR_ENTRIES(tname, E, T)                                               \
    [OFL_OP_MINLOC][E] = ofl_minloc_##tname,                                        \
    [OFL_OP_MAXLOC][E] = ofl_maxloc_##tname,

static const ofl_alu_fn ofl_alu_table[OFL_OP_COUNT][OFL_T_COUNT] = {
    OFL_CINT_TYPES(OFL_CINT_ENTRIES)
    OFL_FLOAT_TYPES(OFL_FLOAT_ENTRIES)
    OFL_COMPLEX_TYPES(OFL_COMPLEX_ENTRIES)
    OFL_PAIR_TYPES(OFL_PAIR_ENTRIES)
    [OFL_OP_LAND][OFL_T_BOOL] = ofl_land_bool,
    [OFL_OP_LOR][OFL_T_BOOL] = ofl_lor_bool,
    [OFL_OP_LXOR][OFL_T_BOOL] = ofl_lxor_bool,
    [OFL_OP_SUM][OFL_T_REPSUM] = ofl_repsum_add,
    [OFL_OP_SUM][OFL_T_REPSUM_META] = ofl_repsum_meta_merge,
    [OFL_OP_SUM][OFL_T_REPSUM_WIDE] = ofl_repsum_wide_add,
};

/* Sizes come from the very types the kernels index with, so strides always agree. */
#define OFL_CINT_SIZE(tname, E, T, UT, WT) [E] = sizeof(T),
#define OFL_OTHER_SIZE(tname, E, T) [E] = sizeof(T),

static const size_t ofl_type_sizes[OFL_T_COUNT] = {
    OFL_CINT_TYPES(OFL_CINT_SIZE)
    OFL_FLOAT_TYPES(OFL_OTHER_SIZE)
    OFL_COMPLEX_TYPES(OFL_OTHER_SIZE)
    OFL_PAIR_TYPES(OFL_OTHER_SIZE)
    [OFL_T_BOOL] = sizeof(_Bool),
    [OFL_T_REPSUM] = sizeof(ofl_repsum_t),
    [OFL_T_REPSUM_META] = sizeof(ofl_repsum_meta_t),
    [OFL_T_REPSUM_WIDE] = sizeof(ofl_repsum_wide_t),
};

static const char *const ofl_type_names[OFL_T_COUNT] = {
    [OFL_T_INT8] = "int8",
    [OFL_T_UINT8] = "uint8",
    [OFL_T_INT16] = "int16",
    [OFL_T_UINT16] = "uint16",
    [OFL_T_INT32] = "int32",
    [OFL_T_UINT32] = "uint32",
    [OFL_T_INT64] = "int64",
    [OFL_T_UINT64] = "uint64",
    [OFL_T_FLOAT] = "float",
    [OFL_T_DOUBLE] = "double",
    [OFL_T_LONG_DOUBLE] = "long_double",
    [OFL_T_BOOL] = "bool",
    [OFL_T_CFLOAT] = "float_complex",
    [OFL_T_CDOUBLE] = "double_complex",
    [OFL_T_FLOAT_INT] = "float_int",
    [OFL_T_DOUBLE_INT] = "double_int",
    [OFL_T_LONG_INT] = "long_int",
    [OFL_T_2INT] = "2int",
    [OFL_T_SHORT_INT] = "short_int",
    [OFL_T_LONG_DOUBLE_INT] = "long_double_int",
    [OFL_T_REPSUM] = "repsum",
    [OFL_T_REPSUM_META] = "repsum_meta",
    [OFL_T_REPSUM_WIDE] = "repsum_wide",
};

static const char *const ofl_op_names[OFL_OP_COUNT] = {
    [OFL_OP_SUM] = "sum",
    [OFL_OP_PROD] = "prod",
    [OFL_OP_MIN] = "min",
    [OFL_OP_MAX] = "max",
    [OFL_OP_LAND] = "land",
    [OFL_OP_LOR] = "lor",
    [OFL_OP_LXOR] = "lxor",
    [OFL_OP_BAND] = "band",
    [OFL_OP_BOR] = "bor",
    [OFL_OP_BXOR] = "bxor",
    [OFL_OP_MINLOC] = "minloc",
    [OFL_OP_MAXLOC] = "maxloc",
};

/*
 * The enums arrive from glue code that may have cast an unmapped MPI handle, so
 * every entry point range-checks; the unsigned cast also rejects negative values.
 */
static int ofl_op_valid(ofl_op_t op)
{
    return (unsigned)op < (unsigned)OFL_OP_COUNT;
}

static int ofl_type_valid(ofl_type_t type)
{
    return (unsigned)type < (unsigned)OFL_T_COUNT;
}

ofl_alu_fn ofl_alu_lookup(ofl_op_t op, ofl_type_t type)
{
    if (!ofl_op_valid(op) || !ofl_type_valid(type)) {
        return NULL;
    }
    return ofl_alu_table[op][type];
}

size_t ofl_type_size(ofl_type_t type)
{
    if (!ofl_type_valid(type)) {
        return 0;
    }
    return ofl_type_sizes[type];
}

/* Names end up in log lines, so an invalid value yields a string, never NULL. */
const char *ofl_type_name(ofl_type_t type)
{
    if (!ofl_type_valid(type)) {
        return "invalid";
    }
    return ofl_type_names[type];
}

const char *ofl_op_name(ofl_op_t op)
{
    if (!ofl_op_valid(op)) {
        return "invalid";
    }
    return ofl_op_names[op];
}
