/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * The predefined reduction ops and the C types they apply to, with one reference
 * implementation of them in plain C, for the MPI tests that check every (type, op)
 * pair (t_coll, t_stress).
 *
 * An element of any type is handled as a t_val_t: integers as their bits normalized to
 * the type's width (sign-extended when signed), real and complex values as long
 * double, MINLOC/MAXLOC pairs as value and index. t_gen draws the contribution behind
 * a hash, t_combine applies an op as C and MPI define it, t_put and t_get convert to
 * and from the memory layout MPI sees. The values drawn keep every partial result
 * exact in the narrowest type, so the reference is right whatever the order in which
 * a collective combines the contributions, and equality is exact.
 */
#ifndef T_OPS_H
#define T_OPS_H

#include "t_common.h"

#include <limits.h>
#include <stddef.h>

enum { K_INT, K_FLOAT, K_COMPLEX, K_BOOL, K_BYTE, K_PAIR };

/* How an element is stored. */
enum {
    S_INT,      /* size bytes, sgn */
    S_FLOAT, S_DOUBLE, S_LDOUBLE, S_BOOL, S_CFLOAT, S_CDOUBLE, S_CLDOUBLE,
    S_FLOAT_INT, S_DOUBLE_INT, S_LONG_INT, S_2INT, S_SHORT_INT, S_LDOUBLE_INT
};

enum {
    O_SUM, O_PROD, O_MIN, O_MAX, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR,
    O_MINLOC, O_MAXLOC, O_N
};

static const char *op_names[O_N] = {
    "SUM", "PROD", "MIN", "MAX", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR",
    "MINLOC", "MAXLOC"
};

/* Handles are not constant expressions in every MPI, so map at run time. */
static inline MPI_Op op_handle(int op)
{
    const MPI_Op ops[O_N] = {
        MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_BAND,
        MPI_BOR, MPI_BXOR, MPI_MINLOC, MPI_MAXLOC
    };
    return ops[op];
}

static inline int op_is_logical(int op)
{
    return O_LAND == op || O_LOR == op || O_LXOR == op;
}

/* Which (op, type) pairs the MPI standard defines. */
static inline int op_allowed(int op, int kind)
{
    switch (op) {
    case O_SUM:
    case O_PROD:
        return K_INT == kind || K_FLOAT == kind || K_COMPLEX == kind;
    case O_MIN:
    case O_MAX:
        return K_INT == kind || K_FLOAT == kind;
    case O_LAND:
    case O_LOR:
    case O_LXOR:
        return K_INT == kind || K_BOOL == kind;
    case O_BAND:
    case O_BOR:
    case O_BXOR:
        return K_INT == kind || K_BYTE == kind;
    default:
        return K_PAIR == kind;
    }
}

/* ---- the types ------------------------------------------------------------------ */

typedef struct { float v; int i; } t_float_int_t;
typedef struct { double v; int i; } t_double_int_t;
typedef struct { long v; int i; } t_long_int_t;
typedef struct { int v; int i; } t_two_int_t;
typedef struct { short v; int i; } t_short_int_t;
typedef struct { long double v; int i; } t_ldouble_int_t;

/*
 * Which programs check a type. t_stress draws the types the component maps onto its
 * ALU with the reductions MPI defines on them; t_coll's matrix adds MPI_CHAR (no
 * reduction type in MPI, but Open MPI accepts it, so an offloaded path must answer
 * as the fallback does) and long double complex (always the fallback), and leaves
 * out MPI_AINT, MPI_OFFSET and MPI_COUNT; T_COLL_QUICK is its --quick subset.
 */
#define T_COLL 1u
#define T_COLL_QUICK 2u
#define T_STRESS 4u

typedef struct {
    const char *name;
    MPI_Datatype dt;
    int kind;
    int store;
    size_t size;            /* C sizeof, which must be the MPI extent */
    int sgn;                /* signed integer */
    unsigned in;            /* T_COLL, T_COLL_QUICK, T_STRESS */
    int libbug[O_N];        /* this library's MPI_Reduce_local gets (type, op) wrong:
                             * set by each program's preflight */
} t_type_t;

#define T_INT(MPIT, T, SGN, IN) { #MPIT, MPIT, K_INT, S_INT, sizeof(T), SGN, IN, { 0 } }
#define T_OTHER(MPIT, K, S, T, IN) { #MPIT, MPIT, K, S, sizeof(T), 0, IN, { 0 } }
#define T_BOTH (T_COLL | T_STRESS)
#define T_QUICK (T_COLL | T_COLL_QUICK | T_STRESS)

static t_type_t t_types[] = {
    T_INT(MPI_INT8_T, int8_t, 1, T_QUICK),
    T_INT(MPI_UINT8_T, uint8_t, 0, T_QUICK),
    T_INT(MPI_INT16_T, int16_t, 1, T_QUICK),
    T_INT(MPI_UINT16_T, uint16_t, 0, T_QUICK),
    T_INT(MPI_INT32_T, int32_t, 1, T_BOTH),
    T_INT(MPI_UINT32_T, uint32_t, 0, T_QUICK),
    T_INT(MPI_INT64_T, int64_t, 1, T_QUICK),
    T_INT(MPI_UINT64_T, uint64_t, 0, T_BOTH),
    T_INT(MPI_CHAR, char, CHAR_MIN < 0, T_COLL),
    T_INT(MPI_SIGNED_CHAR, signed char, 1, T_BOTH),
    T_INT(MPI_UNSIGNED_CHAR, unsigned char, 0, T_BOTH),
    T_INT(MPI_SHORT, short, 1, T_BOTH),
    T_INT(MPI_UNSIGNED_SHORT, unsigned short, 0, T_BOTH),
    T_INT(MPI_INT, int, 1, T_QUICK),
    T_INT(MPI_UNSIGNED, unsigned, 0, T_BOTH),
    T_INT(MPI_LONG, long, 1, T_BOTH),
    T_INT(MPI_UNSIGNED_LONG, unsigned long, 0, T_QUICK),
    T_INT(MPI_LONG_LONG, long long, 1, T_BOTH),
    T_INT(MPI_UNSIGNED_LONG_LONG, unsigned long long, 0, T_BOTH),
    T_INT(MPI_AINT, MPI_Aint, 1, T_STRESS),
    T_INT(MPI_OFFSET, MPI_Offset, 1, T_STRESS),
    T_INT(MPI_COUNT, MPI_Count, 1, T_STRESS),
    T_OTHER(MPI_FLOAT, K_FLOAT, S_FLOAT, float, T_QUICK),
    T_OTHER(MPI_DOUBLE, K_FLOAT, S_DOUBLE, double, T_QUICK),
    T_OTHER(MPI_LONG_DOUBLE, K_FLOAT, S_LDOUBLE, long double, T_QUICK),
    T_OTHER(MPI_C_BOOL, K_BOOL, S_BOOL, _Bool, T_QUICK),
    T_OTHER(MPI_BYTE, K_BYTE, S_INT, unsigned char, T_QUICK),
    T_OTHER(MPI_C_FLOAT_COMPLEX, K_COMPLEX, S_CFLOAT, float _Complex, T_QUICK),
    T_OTHER(MPI_C_DOUBLE_COMPLEX, K_COMPLEX, S_CDOUBLE, double _Complex, T_BOTH),
    T_OTHER(MPI_C_LONG_DOUBLE_COMPLEX, K_COMPLEX, S_CLDOUBLE, long double _Complex, T_COLL),
    T_OTHER(MPI_FLOAT_INT, K_PAIR, S_FLOAT_INT, t_float_int_t, T_BOTH),
    T_OTHER(MPI_DOUBLE_INT, K_PAIR, S_DOUBLE_INT, t_double_int_t, T_QUICK),
    T_OTHER(MPI_LONG_INT, K_PAIR, S_LONG_INT, t_long_int_t, T_BOTH),
    T_OTHER(MPI_2INT, K_PAIR, S_2INT, t_two_int_t, T_QUICK),
    T_OTHER(MPI_SHORT_INT, K_PAIR, S_SHORT_INT, t_short_int_t, T_BOTH),
    T_OTHER(MPI_LONG_DOUBLE_INT, K_PAIR, S_LDOUBLE_INT, t_ldouble_int_t, T_QUICK),
};
#define T_NTYPES ((int) (sizeof(t_types) / sizeof(t_types[0])))

#undef T_INT
#undef T_OTHER
#undef T_BOTH
#undef T_QUICK

/* The types with any of the bits `in` into sel (T_NTYPES entries); returns how many. */
static inline int t_types_select(unsigned in, t_type_t **sel)
{
    int n = 0;
    for (int i = 0; i < T_NTYPES; i++) {
        if (0 != (t_types[i].in & in)) {
            sel[n++] = &t_types[i];
        }
    }
    return n;
}

/* A type whose values are real or complex numbers (pairs: by their value). */
static inline int t_type_fp(const t_type_t *t)
{
    switch (t->store) {
    case S_FLOAT:
    case S_DOUBLE:
    case S_LDOUBLE:
    case S_CFLOAT:
    case S_CDOUBLE:
    case S_CLDOUBLE:
    case S_FLOAT_INT:
    case S_DOUBLE_INT:
    case S_LDOUBLE_INT:
        return 1;
    default:
        return 0;
    }
}

/* ---- element values and the reference ------------------------------------------- */

typedef struct {
    uint64_t u;
    long double re, im;
    int idx;
} t_val_t;

static inline uint64_t t_int_norm(const t_type_t *t, uint64_t x)
{
    if (t->size >= 8) {
        return x;
    }
    unsigned bits = (unsigned) t->size * 8;
    uint64_t mask = (1ULL << bits) - 1;
    x &= mask;
    if (t->sgn && ((x >> (bits - 1)) & 1)) {
        x |= ~mask;
    }
    return x;
}

/* Whether an input of a logical op is zero; LAND needs mostly true inputs, or its
 * result would almost always be 0. */
static inline int t_logical_zero(int op, uint64_t h)
{
    return O_LAND == op ? 0 == h % 16 : (int) (h & 1);
}

static const long double t_prod_reals[8] = { 1, -1, 2, -2, 0.5L, -0.5L, 1, -1 };
/* Gaussian integers of small norm; the first four are the units. */
static const int t_cpx_re[8] = { 1, -1, 0, 0, 1, 1, -1, 2 };
static const int t_cpx_im[8] = { 0, 0, 1, -1, 1, -1, 1, 0 };

/*
 * The contribution behind hash h to a reduction over n ranks. Integers use their
 * full range (sums and products wrap, which catches saturation), except that
 * products draw odd numbers (units modulo 2^N keep all their bits; a rare 0 or 2
 * covers the rest) and the inputs of logical ops are often 0 and otherwise not
 * always 1 ("true" must not be taken for 1). Real values are quarters (sums) or
 * eighths (MIN, MAX) small enough, products powers of two and complex products
 * Gaussian integers (on more than 16 ranks units only), that every partial result
 * is exact in float. Pair values repeat often so that ties on the value exercise
 * the index rule.
 */
static inline void t_gen(const t_type_t *t, int op, uint64_t h, int n, t_val_t *v)
{
    memset(v, 0, sizeof(*v));
    uint64_t bits = t_mix(h ^ 0x5bd1e9955bd1e995ULL);
    switch (t->kind) {
    case K_INT:
    case K_BYTE:
        if (O_PROD == op) {
            bits = 0 == h % 97 ? 0 : 0 == h % 61 ? 2 : bits | 1;
        } else if (op_is_logical(op)) {
            bits = t_logical_zero(op, h) ? 0 : (0 != t_int_norm(t, bits) ? bits : 1);
        }
        v->u = t_int_norm(t, bits);
        break;
    case K_BOOL:
        v->u = !t_logical_zero(op, h);
        break;
    case K_FLOAT:
        if (O_PROD == op) {
            v->re = t_prod_reals[h & 7];
        } else if (O_SUM == op) {
            v->re = (long double) ((long) (bits % 4001) - 2000) / 4;
        } else {
            v->re = (long double) ((long) (bits % 2000001) - 1000000) / 8;
        }
        break;
    case K_COMPLEX:
        if (O_PROD == op) {
            unsigned k = (unsigned) (n <= 16 ? h & 7 : h & 3);
            v->re = t_cpx_re[k];
            v->im = t_cpx_im[k];
        } else {
            v->re = (long double) ((long) (bits % 2001) - 1000);
            v->im = (long double) ((long) ((bits >> 24) % 2001) - 1000);
        }
        break;
    default:
        v->re = (long double) ((long) (bits % 16) - 8);
        if (t_type_fp(t)) {
            v->re /= 2;
        }
        v->idx = (int) ((bits >> 32) % 2001) - 1000;
        break;
    }
}

/* acc = acc op in, as C and MPI define it. */
static inline void t_combine(const t_type_t *t, int op, t_val_t *acc, const t_val_t *in)
{
    switch (t->kind) {
    case K_INT:
    case K_BYTE:
    case K_BOOL: {
        uint64_t a = acc->u, b = in->u;
        int less = t->sgn ? (int64_t) b < (int64_t) a : b < a;
        switch (op) {
        case O_SUM: acc->u = t_int_norm(t, a + b); break;
        case O_PROD: acc->u = t_int_norm(t, a * b); break;
        case O_MIN: acc->u = less ? b : a; break;
        case O_MAX: acc->u = (!less && a != b) ? b : a; break;
        case O_LAND: acc->u = (0 != a) && (0 != b); break;
        case O_LOR: acc->u = (0 != a) || (0 != b); break;
        case O_LXOR: acc->u = (0 != a) != (0 != b); break;
        case O_BAND: acc->u = a & b; break;
        case O_BOR: acc->u = a | b; break;
        case O_BXOR: acc->u = a ^ b; break;
        default: break;
        }
        break;
    }
    case K_FLOAT:
        switch (op) {
        case O_SUM: acc->re += in->re; break;
        case O_PROD: acc->re *= in->re; break;
        case O_MIN: acc->re = in->re < acc->re ? in->re : acc->re; break;
        case O_MAX: acc->re = in->re > acc->re ? in->re : acc->re; break;
        default: break;
        }
        break;
    case K_COMPLEX:
        if (O_SUM == op) {
            acc->re += in->re;
            acc->im += in->im;
        } else {
            long double re = acc->re * in->re - acc->im * in->im;
            long double im = acc->re * in->im + acc->im * in->re;
            acc->re = re;
            acc->im = im;
        }
        break;
    default: {
        int better = O_MINLOC == op ? in->re < acc->re : in->re > acc->re;
        if (better || (in->re == acc->re && in->idx < acc->idx)) {
            *acc = *in;
        }
        break;
    }
    }
}

/* Element i of buf = v; a pair's padding is zeroed. */
static inline void t_put(const t_type_t *t, void *buf, size_t i, const t_val_t *v)
{
    unsigned char *p = (unsigned char *) buf + i * t->size;
    switch (t->store) {
    case S_INT:
        switch (t->size) {
        case 1: { uint8_t x = (uint8_t) v->u; memcpy(p, &x, 1); break; }
        case 2: { uint16_t x = (uint16_t) v->u; memcpy(p, &x, 2); break; }
        case 4: { uint32_t x = (uint32_t) v->u; memcpy(p, &x, 4); break; }
        default: memcpy(p, &v->u, 8); break;
        }
        break;
    case S_FLOAT: { float x = (float) v->re; memcpy(p, &x, sizeof(x)); break; }
    case S_DOUBLE: { double x = (double) v->re; memcpy(p, &x, sizeof(x)); break; }
    case S_LDOUBLE: { long double x = v->re; memcpy(p, &x, sizeof(x)); break; }
    case S_BOOL: { unsigned char x = (unsigned char) v->u; memcpy(p, &x, 1); break; }
    /* Complex values as R[2], the layout C11 guarantees. */
    case S_CFLOAT: {
        float x[2] = { (float) v->re, (float) v->im };
        memcpy(p, x, sizeof(x));
        break;
    }
    case S_CDOUBLE: {
        double x[2] = { (double) v->re, (double) v->im };
        memcpy(p, x, sizeof(x));
        break;
    }
    case S_CLDOUBLE: {
        long double x[2] = { v->re, v->im };
        memcpy(p, x, sizeof(x));
        break;
    }
#define T_PUT_PAIR(S, T, VT)                                                        \
    case S: {                                                                       \
        T x;                                                                        \
        memset(&x, 0, sizeof(x));                                                   \
        x.v = (VT) v->re;                                                           \
        x.i = v->idx;                                                               \
        memcpy(p, &x, sizeof(x));                                                   \
        break;                                                                      \
    }
    T_PUT_PAIR(S_FLOAT_INT, t_float_int_t, float)
    T_PUT_PAIR(S_DOUBLE_INT, t_double_int_t, double)
    T_PUT_PAIR(S_LONG_INT, t_long_int_t, long)
    T_PUT_PAIR(S_2INT, t_two_int_t, int)
    T_PUT_PAIR(S_SHORT_INT, t_short_int_t, short)
    T_PUT_PAIR(S_LDOUBLE_INT, t_ldouble_int_t, long double)
#undef T_PUT_PAIR
    default:
        break;
    }
}

/* v = element i of buf. A bool is its byte: a "true" other than 1 is not a valid
 * bool, and compares unequal to 1. */
static inline void t_get(const t_type_t *t, const void *buf, size_t i, t_val_t *v)
{
    const unsigned char *p = (const unsigned char *) buf + i * t->size;
    memset(v, 0, sizeof(*v));
    switch (t->store) {
    case S_INT:
        switch (t->size) {
        case 1: { uint8_t x; memcpy(&x, p, 1); v->u = x; break; }
        case 2: { uint16_t x; memcpy(&x, p, 2); v->u = x; break; }
        case 4: { uint32_t x; memcpy(&x, p, 4); v->u = x; break; }
        default: memcpy(&v->u, p, 8); break;
        }
        v->u = t_int_norm(t, v->u);
        break;
    case S_FLOAT: { float x; memcpy(&x, p, sizeof(x)); v->re = x; break; }
    case S_DOUBLE: { double x; memcpy(&x, p, sizeof(x)); v->re = x; break; }
    case S_LDOUBLE: { long double x; memcpy(&x, p, sizeof(x)); v->re = x; break; }
    case S_BOOL: { unsigned char x; memcpy(&x, p, 1); v->u = x; break; }
    case S_CFLOAT: {
        float x[2];
        memcpy(x, p, sizeof(x));
        v->re = x[0];
        v->im = x[1];
        break;
    }
    case S_CDOUBLE: {
        double x[2];
        memcpy(x, p, sizeof(x));
        v->re = x[0];
        v->im = x[1];
        break;
    }
    case S_CLDOUBLE: {
        long double x[2];
        memcpy(x, p, sizeof(x));
        v->re = x[0];
        v->im = x[1];
        break;
    }
#define T_GET_PAIR(S, T)                                                            \
    case S: {                                                                       \
        T x;                                                                        \
        memcpy(&x, p, sizeof(x));                                                   \
        v->re = (long double) x.v;                                                  \
        v->idx = x.i;                                                               \
        break;                                                                      \
    }
    T_GET_PAIR(S_FLOAT_INT, t_float_int_t)
    T_GET_PAIR(S_DOUBLE_INT, t_double_int_t)
    T_GET_PAIR(S_LONG_INT, t_long_int_t)
    T_GET_PAIR(S_2INT, t_two_int_t)
    T_GET_PAIR(S_SHORT_INT, t_short_int_t)
    T_GET_PAIR(S_LDOUBLE_INT, t_ldouble_int_t)
#undef T_GET_PAIR
    default:
        break;
    }
}

/* Values are exact, so equality is exact (and +0 == -0, which MPI leaves open). */
static inline int t_same(const t_type_t *t, const t_val_t *a, const t_val_t *b)
{
    switch (t->kind) {
    case K_INT:
    case K_BYTE:
    case K_BOOL:
        return a->u == b->u;
    case K_FLOAT:
        return a->re == b->re;
    case K_COMPLEX:
        return a->re == b->re && a->im == b->im;
    default:
        return a->re == b->re && a->idx == b->idx;
    }
}

/* Integers in decimal and as the type's bits in hex. */
static inline void t_fmt(const t_type_t *t, const t_val_t *v, char *s, size_t n)
{
    switch (t->kind) {
    case K_INT:
    case K_BYTE:
    case K_BOOL: {
        int neg = t->sgn && (int64_t) v->u < 0;
        uint64_t bits = t->size >= 8 ? v->u : v->u & ((1ULL << (8 * t->size)) - 1);
        snprintf(s, n, "%s%llu (0x%llx)", neg ? "-" : "",
                 neg ? 0ULL - (unsigned long long) v->u : (unsigned long long) v->u,
                 (unsigned long long) bits);
        break;
    }
    case K_FLOAT:
        snprintf(s, n, "%.21Lg", v->re);
        break;
    case K_COMPLEX:
        snprintf(s, n, "(%.21Lg, %.21Lg)", v->re, v->im);
        break;
    default:
        snprintf(s, n, "(%.21Lg, %d)", v->re, v->idx);
        break;
    }
}

#endif /* T_OPS_H */
