/*
 * coll/offload — which MPI datatypes and ops the NIC's ALU takes, and how.
 */
#include "coll_offload.h"

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"

#define TYPE_SLOTS 256

/* ofl type + 1 per predefined datatype id (0: not offloaded) */
static uint8_t type_of_id[TYPE_SLOTS];
/* MPI_BYTE is only for the bitwise ops, although it maps to uint8 */
static int byte_id = -1;

static void map_type(ompi_datatype_t *dt, ofl_type_t t)
{
    if (dt->id < 0 || dt->id >= TYPE_SLOTS) {
        return;
    }
    ptrdiff_t lb, extent;
    ompi_datatype_get_extent(dt, &lb, &extent);
    /* The ALU walks arrays of C objects: take the type only when Open MPI lays it
     * out the same way (pair types have padding). */
    if (0 != lb || (size_t) extent != ofl_type_size(t)) {
        return;
    }
    type_of_id[dt->id] = (uint8_t) (t + 1);
}

void mca_coll_offload_types_init(void)
{
    memset(type_of_id, 0, sizeof(type_of_id));
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
    map_type(MPI_BYTE, OFL_T_UINT8);
    byte_id = MPI_BYTE->id;
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
    if (0 == reason) {
        *o = (ofl_op_t) ofl_op_of(op);
        *t = (ofl_type_t) (type_of_id[dtype->id] - 1);
    }
    return reason;
}

/* 0 and the kernel when (dtype, op) runs on the ALU; otherwise a reason > 0:
 * 1 user-defined op, 2 not a predefined datatype the ALU knows, 3 op not defined
 * on that type. Depends only on arguments every rank passes identically. */
int mca_coll_offload_map(struct ompi_datatype_t *dtype, struct ompi_op_t *op, ofl_alu_fn *fn,
                         size_t *elem)
{
    if (!ompi_op_is_intrinsic(op)) {
        return 1;
    }
    int o = ofl_op_of(op);
    if (o < 0) {
        return 1;
    }
    if (!ompi_datatype_is_predefined(dtype) || dtype->id < 0 || dtype->id >= TYPE_SLOTS
        || 0 == type_of_id[dtype->id]) {
        return 2;
    }
    if (dtype->id == byte_id && o != OFL_OP_BAND && o != OFL_OP_BOR && o != OFL_OP_BXOR) {
        return 3;
    }
    ofl_type_t t = (ofl_type_t) (type_of_id[dtype->id] - 1);
    *fn = ofl_alu_lookup((ofl_op_t) o, t);
    if (NULL == *fn) {
        return 3;
    }
    *elem = ofl_type_size(t);
    return 0;
}
