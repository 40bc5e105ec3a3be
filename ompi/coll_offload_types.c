/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — which MPI datatypes and ops the NIC's ALU takes, and how.
 */
#include "coll_offload.h"
#include "coll_offload_types.h"

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"
#include "repsum/repsum.h"
#include "repsum/repsum_wide.h"


#define TYPE_SLOTS 256
#define TYPE_BUCKET 4

/* Predefined datatypes by identity, bucketed by id. Open MPI 4.1 gives several
 * predefined datatypes one id (MPI_BYTE, MPI_UNSIGNED_CHAR and MPI_UINT8_T share
 * one; MPI_CHAR shares MPI_INT8_T's): the id only narrows the search, the
 * object's address decides. */
typedef struct {
    const ompi_datatype_t *dt;
    uint8_t type;          /* ofl_type_t */
    uint16_t ops;          /* the ops taken on it: bit (1 << ofl_op_t) */
} known_type_t;

/* Every op the ALU has for the type (the ALU's table is MPI's). */
#define KNOWN_ALL 0xffffu

static known_type_t known[TYPE_SLOTS][TYPE_BUCKET];
static int known_overflow;

static void map_type_as(ompi_datatype_t *dt, ofl_type_t t, unsigned ops)
{
    if (OFL_T_COUNT == t || dt->id < 0 || dt->id >= TYPE_SLOTS) {
        return;
    }
    ptrdiff_t lb, extent;
    ompi_datatype_get_extent(dt, &lb, &extent);
    /* The ALU walks arrays of C objects: take the type only when Open MPI lays it
     * out the same way (pair types have padding). */
    if (0 != lb || (size_t) extent != ofl_type_size(t)) {
        return;
    }
    known_type_t *b = known[dt->id];
    for (int i = 0; i < TYPE_BUCKET; ++i) {
        if (NULL == b[i].dt || dt == b[i].dt) {
            b[i].dt = dt;
            b[i].type = (uint8_t) t;
            b[i].ops = (uint16_t) ops;
            return;
        }
    }
    /* More datatypes on one id than a bucket holds: that one is not offloaded
     * (never mistaken for another). */
    known_overflow++;
}

static void map_type(ompi_datatype_t *dt, ofl_type_t t)
{
    map_type_as(dt, t, KNOWN_ALL);
}

/* Reproducible sums handed to the layer below travel as binned elements (a
 * contiguous datatype of their bytes) under a commutative user op over the
 * ALU's kernel: whatever order the layer below combines in, the result is the
 * one the NIC would give. Made and released with the wrapping ops. */
static ompi_datatype_t *repsum_type;
static ompi_op_t *repsum_op;
/* The two-pass form's elements (repsum/repsum_wide.h), under the same op. */
static ompi_datatype_t *repsum_meta_type;
static ompi_datatype_t *repsum_wide_type;

/* The ALU type of a reproducible sum's wire datatype, or OFL_T_COUNT. */
static ofl_type_t repsum_wire_type(const ompi_datatype_t *dt)
{
    if (NULL == dt) {
        return OFL_T_COUNT;
    }
    return dt == repsum_type ? OFL_T_REPSUM
           : dt == repsum_wide_type ? OFL_T_REPSUM_WIDE
           : dt == repsum_meta_type ? OFL_T_REPSUM_META : OFL_T_COUNT;
}

/* The ALU type of a predefined datatype, or NULL when it has none. */
static inline const known_type_t *known_type(const ompi_datatype_t *dt)
{
    if (dt->id < 0 || dt->id >= TYPE_SLOTS) {
        return NULL;
    }
    const known_type_t *b = known[dt->id];
    for (int i = 0; i < TYPE_BUCKET && NULL != b[i].dt; ++i) {
        if (dt == b[i].dt) {
            return &b[i];
        }
    }
    return NULL;
}

int mca_coll_offload_types_overflow(void)
{
    return known_overflow;
}

/* The predefined ops with an ALU counterpart, indexed by ofl_op_t. */
static ompi_op_t *const intrinsic_ops[] = {
    [OFL_OP_SUM] = &ompi_mpi_op_sum.op,   [OFL_OP_PROD] = &ompi_mpi_op_prod.op,
    [OFL_OP_MIN] = &ompi_mpi_op_min.op,   [OFL_OP_MAX] = &ompi_mpi_op_max.op,
    [OFL_OP_LAND] = &ompi_mpi_op_land.op, [OFL_OP_LOR] = &ompi_mpi_op_lor.op,
    [OFL_OP_LXOR] = &ompi_mpi_op_lxor.op, [OFL_OP_BAND] = &ompi_mpi_op_band.op,
    [OFL_OP_BOR] = &ompi_mpi_op_bor.op,   [OFL_OP_BXOR] = &ompi_mpi_op_bxor.op,
};

/* The ops this Open MPI's own reduction functions compute on dt (its op table, as
 * MPI_Reduce_local would find them). */
static unsigned stock_ops(ompi_datatype_t *dt)
{
    unsigned ops = 0;
    if (dt->id < 0 || dt->id >= OMPI_DATATYPE_MAX_PREDEFINED || -1 == ompi_op_ddt_map[dt->id]) {
        return 0;
    }
    for (size_t o = 0; o < sizeof(intrinsic_ops) / sizeof(intrinsic_ops[0]); ++o) {
        if (NULL != intrinsic_ops[o]
            && NULL != intrinsic_ops[o]->o_func.intrinsic.fns[ompi_op_ddt_map[dt->id]]) {
            ops |= 1u << o;
        }
    }
    return ops;
}

void mca_coll_offload_types_init(void)
{
    memset(known, 0, sizeof(known));
    known_overflow = 0;
    map_type(MPI_INT8_T, OFL_T_INT8);
    map_type(MPI_UINT8_T, OFL_T_UINT8);
    map_type(MPI_INT16_T, OFL_T_INT16);
    map_type(MPI_UINT16_T, OFL_T_UINT16);
    map_type(MPI_INT32_T, OFL_T_INT32);
    map_type(MPI_UINT32_T, OFL_T_UINT32);
    map_type(MPI_INT64_T, OFL_T_INT64);
    map_type(MPI_UINT64_T, OFL_T_UINT64);
    map_type(MPI_SIGNED_CHAR, OFL_T_INT8);
    map_type(MPI_UNSIGNED_CHAR, OFL_T_UINT8);
    map_type(MPI_SHORT, sizeof(short) == 2 ? OFL_T_INT16 : OFL_T_COUNT);
    map_type(MPI_UNSIGNED_SHORT, sizeof(short) == 2 ? OFL_T_UINT16 : OFL_T_COUNT);
    map_type(MPI_INT, sizeof(int) == 4 ? OFL_T_INT32 : OFL_T_COUNT);
    map_type(MPI_UNSIGNED, sizeof(int) == 4 ? OFL_T_UINT32 : OFL_T_COUNT);
    map_type(MPI_LONG, sizeof(long) == 8 ? OFL_T_INT64 : OFL_T_INT32);
    map_type(MPI_UNSIGNED_LONG, sizeof(long) == 8 ? OFL_T_UINT64 : OFL_T_UINT32);
    map_type(MPI_LONG_LONG_INT, OFL_T_INT64);
    map_type(MPI_UNSIGNED_LONG_LONG, OFL_T_UINT64);
    map_type(MPI_AINT, sizeof(MPI_Aint) == 8 ? OFL_T_INT64 : OFL_T_INT32);
    map_type(MPI_OFFSET, sizeof(MPI_Offset) == 8 ? OFL_T_INT64 : OFL_T_INT32);
    map_type(MPI_COUNT, sizeof(MPI_Count) == 8 ? OFL_T_INT64 : OFL_T_INT32);
    map_type(MPI_FLOAT, OFL_T_FLOAT);
    map_type(MPI_DOUBLE, OFL_T_DOUBLE);
    map_type(MPI_LONG_DOUBLE, OFL_T_LONG_DOUBLE);
    map_type(MPI_C_BOOL, OFL_T_BOOL);
    map_type(MPI_C_FLOAT_COMPLEX, OFL_T_CFLOAT);
    map_type(MPI_C_DOUBLE_COMPLEX, OFL_T_CDOUBLE);
    map_type(MPI_FLOAT_INT, OFL_T_FLOAT_INT);
    map_type(MPI_DOUBLE_INT, OFL_T_DOUBLE_INT);
    map_type(MPI_LONG_INT, OFL_T_LONG_INT);
    map_type(MPI_2INT, OFL_T_2INT);
    map_type(MPI_SHORT_INT, OFL_T_SHORT_INT);
    map_type(MPI_LONG_DOUBLE_INT, OFL_T_LONG_DOUBLE_INT);
    /* MPI defines no arithmetic on MPI_CHAR and only bitwise ops on MPI_BYTE, but Open
     * MPI computes whatever its op table has for them, MPI_CHAR as int8_t and MPI_BYTE as
     * uint8_t, and programs (the OSU benchmarks' default type among them) rely on it:
     * the NIC takes exactly the pairs this Open MPI computes, the same way. */
    map_type_as(MPI_BYTE, OFL_T_UINT8, stock_ops(MPI_BYTE));
    map_type_as(MPI_CHAR, OFL_T_INT8, stock_ops(MPI_CHAR));
}

static int ofl_op_of(const ompi_op_t *op)
{
    switch (op->op_type) {
    case OMPI_OP_SUM:
        return OFL_OP_SUM;
    case OMPI_OP_PROD:
        return OFL_OP_PROD;
    case OMPI_OP_MIN:
        return OFL_OP_MIN;
    case OMPI_OP_MAX:
        return OFL_OP_MAX;
    case OMPI_OP_LAND:
        return OFL_OP_LAND;
    case OMPI_OP_LOR:
        return OFL_OP_LOR;
    case OMPI_OP_LXOR:
        return OFL_OP_LXOR;
    case OMPI_OP_BAND:
        return OFL_OP_BAND;
    case OMPI_OP_BOR:
        return OFL_OP_BOR;
    case OMPI_OP_BXOR:
        return OFL_OP_BXOR;
    case OMPI_OP_MINLOC:
        return OFL_OP_MINLOC;
    case OMPI_OP_MAXLOC:
        return OFL_OP_MAXLOC;
    default:
        return -1;
    }
}

/* The ALU's names for (dtype, op) when mca_coll_offload_map takes them (0),
 * else its reason. */
int mca_coll_offload_map_kind(struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              ofl_op_t *o, ofl_type_t *t)
{
    ofl_alu_fn fn;
    size_t elem;
    int reason = mca_coll_offload_map(dtype, op, &fn, &elem);
    if (0 == reason && op == repsum_op) {
        *o = OFL_OP_SUM;
        *t = repsum_wire_type(dtype);
    } else if (0 == reason) {
        *o = (ofl_op_t) ofl_op_of(op);
        *t = (ofl_type_t) known_type(dtype)->type;
    }
    return reason;
}

/* 0 and the kernel when (dtype, op) runs on the ALU; otherwise a reason > 0:
 * 1 user-defined op, 2 not a predefined datatype the ALU knows, 3 op not defined
 * on that type. Depends only on arguments every rank passes identically. */
int mca_coll_offload_map(struct ompi_datatype_t *dtype, struct ompi_op_t *op, ofl_alu_fn *fn,
                         size_t *elem)
{
    if (OPAL_UNLIKELY(op == repsum_op) && NULL != op
        && OFL_T_COUNT != repsum_wire_type(dtype)) {
        *fn = ofl_alu_lookup(OFL_OP_SUM, repsum_wire_type(dtype));
        *elem = ofl_type_size(repsum_wire_type(dtype));
        return 0;
    }
    if (!ompi_op_is_intrinsic(op)) {
        return 1;
    }
    int o = ofl_op_of(op);
    if (o < 0) {
        return 1;
    }
    const known_type_t *k = ompi_datatype_is_predefined(dtype) ? known_type(dtype) : NULL;
    if (NULL == k) {
        return 2;
    }
    if (0 == (k->ops & (1u << o))) {
        return 3;
    }
    ofl_type_t t = (ofl_type_t) k->type;
    *fn = ofl_alu_lookup((ofl_op_t) o, t);
    if (NULL == *fn) {
        return 3;
    }
    *elem = ofl_type_size(t);
    return 0;
}

/*
 * 8- and 16-bit integer sums and products for the layer below.
 *
 * Stock op/avx saturates them (open-mpi/ompi#8045), and calls this component hands
 * down (policy, size, no NIC, the leaders' level across nodes) would reach it. MPI
 * and C say they wrap, and the ALU's kernels do: the layer below gets a
 * commutative user op over the same kernels instead of MPI_SUM/MPI_PROD. One op per
 * process, created by the first module and released with the last.
 */
static opal_mutex_t wrap_lock = OPAL_MUTEX_STATIC_INIT;   /* module set-up: application threads */
/* SUM, PROD, MIN, MAX (commutative, over the ALU's kernels), MINLOC, MAXLOC, SUM, PROD
 * (the intrinsic ops declared non-commutative) */
static ompi_op_t *wrap_op[8];
static int wrap_refs;


static inline void wrap_apply(ofl_op_t o, ompi_op_t *intrinsic, void *in, void *inout,
                              int *len, struct ompi_datatype_t **dt)
{
    const known_type_t *k = ompi_datatype_is_predefined(*dt) ? known_type(*dt) : NULL;
    ofl_alu_fn fn = NULL != k ? ofl_alu_lookup(o, (ofl_type_t) k->type) : NULL;
    if (OPAL_UNLIKELY(NULL == fn || *len < 0)) {
        /* Only predefined narrow integers are ever handed this op; anything else
         * gets the intrinsic op's own answer. */
        ompi_op_reduce(intrinsic, in, inout, (size_t) (*len > 0 ? *len : 0), *dt);
        return;
    }
    fn(inout, in, inout, (size_t) *len);
}

static void wrap_sum(void *in, void *inout, int *len, struct ompi_datatype_t **dt)
{
    wrap_apply(OFL_OP_SUM, &ompi_mpi_op_sum.op, in, inout, len, dt);
}

static void wrap_prod(void *in, void *inout, int *len, struct ompi_datatype_t **dt)
{
    wrap_apply(OFL_OP_PROD, &ompi_mpi_op_prod.op, in, inout, len, dt);
}

static void wrap_min(void *in, void *inout, int *len, struct ompi_datatype_t **dt)
{
    wrap_apply(OFL_OP_MIN, &ompi_mpi_op_min.op, in, inout, len, dt);
}

static void wrap_max(void *in, void *inout, int *len, struct ompi_datatype_t **dt)
{
    wrap_apply(OFL_OP_MAX, &ompi_mpi_op_max.op, in, inout, len, dt);
}

/* MINLOC and MAXLOC for a layer below that gets the pair types wrong (coll/xhc and
 * coll/acoll of Open MPI 6 size their copies by a pair's data bytes, 12 for
 * MPI_DOUBLE_INT, while the op walks its 16-byte extent): the intrinsic op itself,
 * declared non-commutative, which both hand to Open MPI's base algorithms. */
static void wrap_minloc(void *in, void *inout, int *len, struct ompi_datatype_t **dt)
{
    ompi_op_reduce(&ompi_mpi_op_minloc.op, in, inout, (size_t) (*len > 0 ? *len : 0), *dt);
}

static void wrap_maxloc(void *in, void *inout, int *len, struct ompi_datatype_t **dt)
{
    ompi_op_reduce(&ompi_mpi_op_maxloc.op, in, inout, (size_t) (*len > 0 ? *len : 0), *dt);
}

/* Floating-point sums and products, the same way, for a layer below whose own algorithm
 * gives its ranks results that differ in their last bits (coll/acoll): its base
 * algorithms for non-commutative ops combine in one order that every rank shares. */
static void wrap_sum_ordered(void *in, void *inout, int *len, struct ompi_datatype_t **dt)
{
    ompi_op_reduce(&ompi_mpi_op_sum.op, in, inout, (size_t) (*len > 0 ? *len : 0), *dt);
}

static void wrap_prod_ordered(void *in, void *inout, int *len, struct ompi_datatype_t **dt)
{
    ompi_op_reduce(&ompi_mpi_op_prod.op, in, inout, (size_t) (*len > 0 ? *len : 0), *dt);
}

static void repsum_apply(void *in, void *inout, int *len, struct ompi_datatype_t **dt)
{
    /* only ever a wire type: whole elements */
    ofl_type_t t = repsum_wire_type(*dt);
    if (*len > 0 && OFL_T_COUNT != t) {
        ofl_alu_lookup(OFL_OP_SUM, t)(inout, in, inout, (size_t) *len);
    }
}

struct ompi_datatype_t *mca_coll_offload_repsum_type(void)
{
    return repsum_type;
}

struct ompi_datatype_t *mca_coll_offload_repsum_meta_type(void)
{
    return repsum_meta_type;
}

struct ompi_datatype_t *mca_coll_offload_repsum_wide_type(void)
{
    return repsum_wide_type;
}

struct ompi_op_t *mca_coll_offload_repsum_op(void)
{
    return repsum_op;
}

/* The four datatypes mca_coll_offload_types_init maps to the ALU's float,
 * double and complex types, compared directly: this runs on every float sum of
 * a communicator in reproducible mode, before the call's own work. */
int mca_coll_offload_repsum_kind(struct ompi_datatype_t *dtype, struct ompi_op_t *op)
{
    if (op != &ompi_mpi_op_sum.op) {
        return OFL_RS_NONE;
    }
    return dtype == MPI_DOUBLE ? OFL_RS_DOUBLE
           : dtype == MPI_FLOAT ? OFL_RS_FLOAT
           : dtype == MPI_C_DOUBLE_COMPLEX ? OFL_RS_CDOUBLE
           : dtype == MPI_C_FLOAT_COMPLEX ? OFL_RS_CFLOAT : OFL_RS_NONE;
}

/* A committed contiguous datatype of n bytes, or NULL. */
static ompi_datatype_t *wire_bytes(size_t n)
{
    ompi_datatype_t *t = NULL;
    if (OMPI_SUCCESS != ompi_datatype_create_contiguous((int) n, MPI_BYTE, &t)) {
        return NULL;
    }
    if (OMPI_SUCCESS != ompi_datatype_commit(&t)) {
        ompi_datatype_destroy(&t);
        return NULL;
    }
    return t;
}

void mca_coll_offload_wrap_ops_retain(void)
{
    OPAL_THREAD_LOCK(&wrap_lock);
    if (0 == wrap_refs++) {
        wrap_op[0] = OFL_OP_CREATE_USER(true, wrap_sum);
        wrap_op[1] = OFL_OP_CREATE_USER(true, wrap_prod);
        wrap_op[2] = OFL_OP_CREATE_USER(true, wrap_min);
        wrap_op[3] = OFL_OP_CREATE_USER(true, wrap_max);
        wrap_op[4] = OFL_OP_CREATE_USER(false, wrap_minloc);
        wrap_op[5] = OFL_OP_CREATE_USER(false, wrap_maxloc);
        wrap_op[6] = OFL_OP_CREATE_USER(false, wrap_sum_ordered);
        wrap_op[7] = OFL_OP_CREATE_USER(false, wrap_prod_ordered);
        repsum_op = OFL_OP_CREATE_USER(true, repsum_apply);
        if (OMPI_SUCCESS != ompi_datatype_create_contiguous((int) sizeof(ofl_repsum_t),
                                                            MPI_BYTE, &repsum_type)
            || OMPI_SUCCESS != ompi_datatype_commit(&repsum_type)) {
            /* without it reproducible mode computes nothing: it stays off */
            repsum_type = NULL;
        }
        /* without these every call takes the binned form */
        repsum_meta_type = wire_bytes(sizeof(ofl_repsum_meta_t));
        repsum_wide_type = wire_bytes(sizeof(ofl_repsum_wide_t));
    }
    OPAL_THREAD_UNLOCK(&wrap_lock);
}

void mca_coll_offload_wrap_ops_release(void)
{
    OPAL_THREAD_LOCK(&wrap_lock);
    if (wrap_refs > 0 && 0 == --wrap_refs) {
        for (int i = 0; i < 8; ++i) {
            if (NULL != wrap_op[i]) {
                OBJ_RELEASE(wrap_op[i]);
                wrap_op[i] = NULL;
            }
        }
        if (NULL != repsum_op) {
            OBJ_RELEASE(repsum_op);
            repsum_op = NULL;
        }
        if (NULL != repsum_type) {
            ompi_datatype_destroy(&repsum_type);
            repsum_type = NULL;
        }
        if (NULL != repsum_meta_type) {
            ompi_datatype_destroy(&repsum_meta_type);
            repsum_meta_type = NULL;
        }
        if (NULL != repsum_wide_type) {
            ompi_datatype_destroy(&repsum_wide_type);
            repsum_wide_type = NULL;
        }
    }
    OPAL_THREAD_UNLOCK(&wrap_lock);
}

struct ompi_op_t *mca_coll_offload_below_op(const mca_coll_offload_below_t *below,
                                            struct ompi_datatype_t *dtype, struct ompi_op_t *op)
{
    if (OPAL_UNLIKELY(0 != below->wrong)) {
        if ((below->wrong & OFL_BELOW_WRONG_PAIRS)
            && (op == &ompi_mpi_op_minloc.op || op == &ompi_mpi_op_maxloc.op)) {
            struct ompi_op_t *w = wrap_op[op == &ompi_mpi_op_minloc.op ? 4 : 5];
            return NULL != w ? w : op;
        }
        if ((below->wrong & OFL_BELOW_WRONG_FLOAT_ORDER)
            && (op == &ompi_mpi_op_sum.op || op == &ompi_mpi_op_prod.op)) {
            const known_type_t *k = ompi_datatype_is_predefined(dtype) ? known_type(dtype) : NULL;
            if (NULL != k && (OFL_T_FLOAT == k->type || OFL_T_DOUBLE == k->type
                              || OFL_T_LONG_DOUBLE == k->type || OFL_T_CFLOAT == k->type
                              || OFL_T_CDOUBLE == k->type)) {
                struct ompi_op_t *w = wrap_op[op == &ompi_mpi_op_sum.op ? 6 : 7];
                return NULL != w ? w : op;
            }
        }
    }
    if (op == &ompi_mpi_op_min.op || op == &ompi_mpi_op_max.op) {
        /* Open MPI 4.1's own MIN/MAX compare MPI_UNSIGNED_LONG as signed and
         * MPI_OFFSET as unsigned (5.0.7: MPI_OFFSET still); the ALU's are right. */
        if (dtype == &ompi_mpi_unsigned_long.dt || dtype == &ompi_mpi_offset.dt) {
            struct ompi_op_t *w = wrap_op[op == &ompi_mpi_op_min.op ? 2 : 3];
            return NULL != w ? w : op;
        }
        return op;
    }
    int which;
    if (OPAL_LIKELY(op != &ompi_mpi_op_sum.op && op != &ompi_mpi_op_prod.op)) {
        return op;
    }
    which = (op == &ompi_mpi_op_sum.op) ? 0 : 1;
    const known_type_t *k = ompi_datatype_is_predefined(dtype) ? known_type(dtype) : NULL;
    /* MPI_BYTE and MPI_CHAR too: MPI defines no sum on them, Open MPI computes one
     * as on 8-bit integers, and then it should wrap as well. */
    if (NULL == k || NULL == wrap_op[which]) {
        return op;
    }
    switch (k->type) {
    case OFL_T_INT8:
    case OFL_T_UINT8:
    case OFL_T_INT16:
    case OFL_T_UINT16:
        return wrap_op[which];
    default:
        return op;
    }
}
