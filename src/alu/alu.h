/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the NIC's arithmetic unit.
 *
 * Element-wise reduction kernels for every predefined MPI reduction op on every
 * predefined C type that op allows. Plain C11, no MPI headers: the Open MPI glue
 * maps MPI_Datatype/MPI_Op onto these enums.
 *
 * Kernels are three-operand (out = a op b) so that a combine of k inputs needs no
 * extra copy; out may alias a or b (element-wise, so aliasing is safe).
 * Integer arithmetic wraps modulo 2^N as C unsigned arithmetic does (8- and 16-bit
 * sums wrap; they never saturate).
 */
#ifndef OFL_ALU_H
#define OFL_ALU_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    OFL_T_INT8,
    OFL_T_UINT8,
    OFL_T_INT16,
    OFL_T_UINT16,
    OFL_T_INT32,
    OFL_T_UINT32,
    OFL_T_INT64,
    OFL_T_UINT64,
    OFL_T_FLOAT,
    OFL_T_DOUBLE,
    OFL_T_LONG_DOUBLE,
    OFL_T_BOOL,          /* C _Bool (MPI_C_BOOL) */
    OFL_T_CFLOAT,        /* float _Complex */
    OFL_T_CDOUBLE,       /* double _Complex */
    /* pair types for MINLOC/MAXLOC, laid out as the C structs below */
    OFL_T_FLOAT_INT,     /* struct { float v; int i; } */
    OFL_T_DOUBLE_INT,    /* struct { double v; int i; } */
    OFL_T_LONG_INT,      /* struct { long v; int i; } */
    OFL_T_2INT,          /* struct { int v; int i; } */
    OFL_T_SHORT_INT,     /* struct { short v; int i; } */
    OFL_T_LONG_DOUBLE_INT, /* struct { long double v; int i; } */
    /* the binned integer element of reproducible sums (repsum/repsum.h): SUM only */
    OFL_T_REPSUM,
    /* the two-pass form's elements (repsum/repsum_wide.h), SUM only: the meta
     * element (its "sum" is the merge: max, min, OR) and the 128-bit integer */
    OFL_T_REPSUM_META,
    OFL_T_REPSUM_WIDE,
    OFL_T_COUNT
} ofl_type_t;

typedef enum {
    OFL_OP_SUM,
    OFL_OP_PROD,
    OFL_OP_MIN,
    OFL_OP_MAX,
    OFL_OP_LAND,
    OFL_OP_LOR,
    OFL_OP_LXOR,
    OFL_OP_BAND,
    OFL_OP_BOR,
    OFL_OP_BXOR,
    OFL_OP_MINLOC,
    OFL_OP_MAXLOC,
    OFL_OP_COUNT
} ofl_op_t;

/* out[i] = a[i] op b[i] for i < count; out may alias a or b. */
typedef void (*ofl_alu_fn)(void *out, const void *a, const void *b, size_t count);

/* The kernel for (op, type), or NULL when MPI does not define op on type. */
ofl_alu_fn ofl_alu_lookup(ofl_op_t op, ofl_type_t type);

/* Bytes one element occupies in an array (sizeof, padding included). */
size_t ofl_type_size(ofl_type_t type);

const char *ofl_type_name(ofl_type_t type);
const char *ofl_op_name(ofl_op_t op);

#endif
