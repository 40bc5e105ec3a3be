/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the simulation's data and the reference its results are checked
 * against: a fold over the ranks in rank order, written out without the ALU.
 */
#include "sim/sim_internal.h"

#include <string.h>

void ofl_sim_value(ofl_type_t type, int r, size_t i, int c, void *out)
{
    uint64_t key = ((uint64_t) (uint32_t) r << 32) ^ (uint64_t) i;
    uint64_t z = sim_mix64(sim_mix64(key) ^ (uint64_t) c);
    switch (type) {
    case OFL_T_FLOAT: {
        float v = (float) ((int) (z % 201) - 100);
        memcpy(out, &v, sizeof(v));
        break;
    }
    case OFL_T_DOUBLE: {
        double v = (double) ((int) (z % 2001) - 1000);
        memcpy(out, &v, sizeof(v));
        break;
    }
    default:
        memcpy(out, &z, ofl_type_size(type));
        break;
    }
}

/* acc = acc op v, written out for each supported (op, type) without the ALU. */
#define REF_INT(T)                                                                     \
    do {                                                                               \
        T a, b;                                                                        \
        memcpy(&a, acc, sizeof(T));                                                    \
        memcpy(&b, v, sizeof(T));                                                      \
        switch (op) {                                                                  \
        case OFL_OP_SUM: a = (T) ((uint64_t) a + (uint64_t) b); break;                 \
        case OFL_OP_PROD: a = (T) ((uint64_t) a * (uint64_t) b); break;                \
        case OFL_OP_MIN: a = b < a ? b : a; break;                                     \
        case OFL_OP_MAX: a = b > a ? b : a; break;                                     \
        case OFL_OP_BAND: a = a & b; break;                                            \
        case OFL_OP_BOR: a = a | b; break;                                             \
        case OFL_OP_BXOR: a = a ^ b; break;                                            \
        default: return -1;                                                            \
        }                                                                              \
        memcpy(acc, &a, sizeof(T));                                                    \
        return 0;                                                                      \
    } while (0)

#define REF_FLT(T)                                                                     \
    do {                                                                               \
        T a, b;                                                                        \
        memcpy(&a, acc, sizeof(T));                                                    \
        memcpy(&b, v, sizeof(T));                                                      \
        switch (op) {                                                                  \
        case OFL_OP_SUM: a = a + b; break;                                             \
        case OFL_OP_MIN: a = b < a ? b : a; break;                                     \
        case OFL_OP_MAX: a = b > a ? b : a; break;                                     \
        default: return -1;                                                            \
        }                                                                              \
        memcpy(acc, &a, sizeof(T));                                                    \
        return 0;                                                                      \
    } while (0)

int sim_ref_combine(ofl_op_t op, ofl_type_t type, void *acc, const void *v)
{
    switch (type) {
    case OFL_T_INT32: REF_INT(int32_t);
    case OFL_T_UINT32: REF_INT(uint32_t);
    case OFL_T_INT64: REF_INT(int64_t);
    case OFL_T_UINT64: REF_INT(uint64_t);
    case OFL_T_FLOAT: REF_FLT(float);
    case OFL_T_DOUBLE: REF_FLT(double);
    default: return -1;
    }
}

/* Compare every result the call owes with the reference; count differing elements. */
void sim_check_call(sim_t *s, int c, uint64_t *wrong, uint64_t *checked)
{
    const ofl_sim_run_t *run = s->run;
    size_t es = s->elem;
    unsigned char want[64], v[64];
    for (size_t i = 0; i < s->count; ++i) {
        if (OFL_COLL_BCAST == run->coll) {
            ofl_sim_value(run->type, run->root, i, c, want);
        } else {
            ofl_sim_value(run->type, 0, i, c, want);
            for (int r = 1; r < s->nranks; ++r) {
                ofl_sim_value(run->type, r, i, c, v);
                sim_ref_combine(run->op, run->type, want, v);
            }
        }
        for (int r = 0; r < s->nranks; ++r) {
            if (OFL_COLL_REDUCE == run->coll && r != run->root) {
                continue;
            }
            const unsigned char *got = (const unsigned char *) s->ranks[r].recv + i * es;
            *checked += 1;
            *wrong += 0 != memcmp(got, want, es);
        }
    }
}
