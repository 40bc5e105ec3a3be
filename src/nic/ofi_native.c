/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — collectives posted whole as libfabric triggered operations
 * (see ofi.h for the algorithm and its guarantees).
 *
 * Counters, per rank, one per round region j = 0..L:
 *   j = 0       1 event per call: partner 0's ready;
 *   0 < j < L   3 events: my own round-(j-1) atomic, partner (j-1)'s, and
 *               partner j's ready;
 *   j = L       2 events: the two round-(L-1) atomics (the result).
 * Thresholds are cumulative over calls (call c waits for (c + 1) times the
 * per-call count), and no event of call c + 1 can arrive before call c has
 * used its own: a partner's atomic into my accumulator waits for my ready of
 * that call, which I send only after resetting it, and a partner's ready for
 * call c + 1 follows its completion of call c, which needs my round-j atomic
 * of call c, i.e. my counter past call c's threshold. A call also waits for the
 * local completion of its own triggered operations before it returns, so the
 * next call may rewrite the accumulators they read.
 */
#include "nic/ofi_int.h"

#include <errno.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Keys of the native regions (user keys must not collide with ofi.c's small ones). */
#define NAT_KEY_BASE (1ULL << 32)

static inline uint8_t *region(const ofl_ofi_t *o, int j)
{
    return o->nat + (size_t) j * OFL_OFI_NAT_REGION;
}

static inline uint64_t remote_addr(const ofl_ofi_t *o, const void *p, size_t off)
{
    /* Offsets into the region when the provider does not use virtual addresses. */
    return (o->virt_addr ? (uint64_t) (uintptr_t) p : 0) + off;
}

static void native_release(ofl_ofi_t *o)
{
    for (int j = 0; j <= OFL_OFI_NAT_MAX_ROUNDS; ++j) {
        if (NULL != o->nat_mr[j]) {
            fi_close(&o->nat_mr[j]->fid);
            o->nat_mr[j] = NULL;
        }
        if (NULL != o->nat_cntr[j]) {
            fi_close(&o->nat_cntr[j]->fid);
            o->nat_cntr[j] = NULL;
        }
    }
    free(o->nat);
    o->nat = NULL;
    o->nat_rounds = -1;
}

void ofl_ofi_native_open(ofl_ofi_t *o)
{
    /* Anything missing here only means no native collectives: never a
     * failure of the NIC itself. */
    int n = o->base.size;
    o->nat_rounds = -1;
    if (n < 2 || 0 != (n & (n - 1))) {
        return;
    }
    int rounds = __builtin_ctz((unsigned) n);
    if (rounds > OFL_OFI_NAT_MAX_ROUNDS) {
        return;
    }
    size_t bytes = (size_t) (rounds + 1) * OFL_OFI_NAT_REGION;
    o->nat = aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    if (NULL == o->nat) {
        return;
    }
    memset(o->nat, 0, bytes);
    struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
    for (int j = 0; j <= rounds; ++j) {
        if (0 != fi_cntr_open(o->domain, &attr, &o->nat_cntr[j], NULL)
            || 0 != fi_mr_reg(o->domain, region(o, j), OFL_OFI_NAT_REGION,
                              FI_REMOTE_WRITE | FI_REMOTE_READ | FI_READ | FI_WRITE, 0,
                              NAT_KEY_BASE + (uint64_t) j, 0, &o->nat_mr[j], NULL)
            || 0 != fi_mr_bind(o->nat_mr[j], &o->nat_cntr[j]->fid, FI_REMOTE_WRITE)
            || (0 != (o->info->domain_attr->mr_mode & FI_MR_ENDPOINT)
                && 0 != fi_mr_enable(o->nat_mr[j]))) {
            native_release(o);
            return;
        }
    }
    o->nat_rounds = rounds;
}

void ofl_ofi_native_address(ofl_ofi_t *o, blob_t *blob)
{
    blob->nat_rounds = o->nat_rounds;
    for (int j = 0; j <= o->nat_rounds; ++j) {
        blob->nat[2 * j] = remote_addr(o, region(o, j), 0);
        blob->nat[2 * j + 1] = fi_mr_key(o->nat_mr[j]);
    }
}

void ofl_ofi_native_connect(ofl_ofi_t *o, const void *blobs, size_t stride)
{
    int n = o->base.size, me = o->base.rank, rounds = o->nat_rounds;
    if (rounds < 1) {
        return;
    }
    /* Every rank sees every blob: all decide alike. */
    for (int r = 0; r < n; ++r) {
        const blob_t *b = (const blob_t *) ((const char *) blobs + (size_t) r * stride);
        if (b->nat_rounds != rounds) {
            native_release(o);
            return;
        }
    }
    for (int j = 0; j < rounds; ++j) {
        if (ofl_ofi_peer_index(o, me ^ (1 << j)) < 0) {
            native_release(o);   /* cannot happen: open adds the partners */
            return;
        }
    }
    for (int j = 0; j < rounds; ++j) {
        const blob_t *b = (const blob_t *) ((const char *) blobs
                                            + (size_t) (me ^ (1 << j)) * stride);
        o->r_acc_base[j] = b->nat[2 * (j + 1)];
        o->r_acc_key[j] = b->nat[2 * (j + 1) + 1];
        o->r_ready_base[j] = b->nat[2 * j] + OFL_OFI_NATIVE_MAX_BYTES;
        o->r_ready_key[j] = b->nat[2 * j + 1];
    }
}

void ofl_ofi_native_close(ofl_ofi_t *o)
{
    native_release(o);
}

int ofl_ofi_native(const ofl_ofi_t *o)
{
    return NULL != o && o->native && o->connected && o->nat_rounds >= 1;
}

uint64_t ofl_ofi_native_posted(const ofl_ofi_t *o)
{
    return o->nat_posted;
}

static int fi_type_of(ofl_type_t t)
{
    switch (t) {
    case OFL_T_INT8:
        return FI_INT8;
    case OFL_T_UINT8:
        return FI_UINT8;
    case OFL_T_INT16:
        return FI_INT16;
    case OFL_T_UINT16:
        return FI_UINT16;
    case OFL_T_INT32:
        return FI_INT32;
    case OFL_T_UINT32:
        return FI_UINT32;
    case OFL_T_INT64:
        return FI_INT64;
    case OFL_T_UINT64:
        return FI_UINT64;
    case OFL_T_FLOAT:
        return FI_FLOAT;
    case OFL_T_DOUBLE:
        return FI_DOUBLE;
    default:
        return -1;
    }
}

/* Ops whose two-operand results match the software ALU's bit for bit: sums
 * and products on every type; order and bitwise ops on integers only (MIN and
 * MAX of floats differ on NaN and signed zeros between implementations). */
static int fi_op_of(ofl_op_t op, ofl_type_t t)
{
    int is_float = OFL_T_FLOAT == t || OFL_T_DOUBLE == t;
    switch (op) {
    case OFL_OP_SUM:
        return FI_SUM;
    case OFL_OP_PROD:
        return FI_PROD;
    case OFL_OP_MIN:
        return is_float ? -1 : FI_MIN;
    case OFL_OP_MAX:
        return is_float ? -1 : FI_MAX;
    case OFL_OP_BAND:
        return is_float ? -1 : FI_BAND;
    case OFL_OP_BOR:
        return is_float ? -1 : FI_BOR;
    case OFL_OP_BXOR:
        return is_float ? -1 : FI_BXOR;
    default:
        return -1;
    }
}

int ofl_ofi_native_ok(ofl_ofi_t *o, ofl_op_t op, ofl_type_t type, size_t count)
{
    if (!ofl_ofi_native(o) || (unsigned) op >= OFL_OP_COUNT || (unsigned) type >= OFL_T_COUNT
        || 0 == count || count * ofl_type_size(type) > OFL_OFI_NATIVE_MAX_BYTES) {
        return 0;
    }
    int ft = fi_type_of(type), fo = fi_op_of(op, type);
    if (ft < 0 || fo < 0) {
        return 0;
    }
    if (0 == o->nat_valid[op][type]) {
        size_t max = 0;
        int rc = fi_atomicvalid(o->ep, (enum fi_datatype) ft, (enum fi_op) fo, &max);
        o->nat_valid[op][type] = 0 == rc && max > 0 ? 1 : -1;
        o->nat_max_count[op][type] = max;
    }
    return 1 == o->nat_valid[op][type] && count <= o->nat_max_count[op][type];
}

/* The op's identity: e (+) x == x bit for bit (-0.0 for float sums, so that a
 * negative zero survives). */
#define FILL(T, v)                                                                         \
    do {                                                                                   \
        T *p_ = buf;                                                                       \
        for (size_t i_ = 0; i_ < count; ++i_) {                                            \
            p_[i_] = (v);                                                                  \
        }                                                                                  \
    } while (0)

static void fill_one(void *buf, ofl_type_t t, size_t count)
{
    switch (t) {
    case OFL_T_INT8:
    case OFL_T_UINT8:
        FILL(uint8_t, 1);
        return;
    case OFL_T_INT16:
    case OFL_T_UINT16:
        FILL(uint16_t, 1);
        return;
    case OFL_T_INT32:
    case OFL_T_UINT32:
        FILL(uint32_t, 1);
        return;
    case OFL_T_INT64:
    case OFL_T_UINT64:
        FILL(uint64_t, 1);
        return;
    case OFL_T_FLOAT:
        FILL(float, 1.0f);
        return;
    default:
        FILL(double, 1.0);
        return;
    }
}

/* The largest value of t (MIN's identity). */
static void fill_max(void *buf, ofl_type_t t, size_t count)
{
    switch (t) {
    case OFL_T_INT8:
        FILL(int8_t, INT8_MAX);
        return;
    case OFL_T_INT16:
        FILL(int16_t, INT16_MAX);
        return;
    case OFL_T_INT32:
        FILL(int32_t, INT32_MAX);
        return;
    case OFL_T_INT64:
        FILL(int64_t, INT64_MAX);
        return;
    default:
        memset(buf, 0xff, count * ofl_type_size(t));   /* unsigned maximum */
        return;
    }
}

/* The smallest value of t (MAX's identity). */
static void fill_min(void *buf, ofl_type_t t, size_t count)
{
    switch (t) {
    case OFL_T_INT8:
        FILL(int8_t, INT8_MIN);
        return;
    case OFL_T_INT16:
        FILL(int16_t, INT16_MIN);
        return;
    case OFL_T_INT32:
        FILL(int32_t, INT32_MIN);
        return;
    case OFL_T_INT64:
        FILL(int64_t, INT64_MIN);
        return;
    default:
        memset(buf, 0, count * ofl_type_size(t));
        return;
    }
}

static void fill_identity(void *buf, ofl_op_t op, ofl_type_t t, size_t count)
{
    size_t bytes = count * ofl_type_size(t);
    switch (op) {
    case OFL_OP_SUM:
        if (OFL_T_FLOAT == t) {
            FILL(float, -0.0f);
        } else if (OFL_T_DOUBLE == t) {
            FILL(double, -0.0);
        } else {
            memset(buf, 0, bytes);
        }
        return;
    case OFL_OP_PROD:
        fill_one(buf, t, count);
        return;
    case OFL_OP_MIN:
        fill_max(buf, t, count);
        return;
    case OFL_OP_MAX:
        fill_min(buf, t, count);
        return;
    case OFL_OP_BAND:
        memset(buf, 0xff, bytes);
        return;
    default:   /* BOR, BXOR */
        memset(buf, 0, bytes);
        return;
    }
}

/* Post a triggered atomic of region j's `count` elements to `dst` (rank) at
 * (raddr, key), fired when region j's counter reaches `threshold`. */
static int post_atomic(ofl_ofi_t *o, int slot, int j, size_t count, int ft, int fo, int dst,
                       uint64_t raddr, uint64_t key, uint64_t threshold)
{
    struct fi_triggered_context *trig = &o->nat_trig[slot];
    memset(trig, 0, sizeof(*trig));
    trig->event_type = FI_TRIGGER_THRESHOLD;
    trig->trigger.threshold.cntr = o->nat_cntr[j];
    trig->trigger.threshold.threshold = (size_t) threshold;
    struct fi_ioc ioc = { .addr = region(o, j), .count = count };
    struct fi_rma_ioc rioc = { .addr = raddr, .count = count, .key = key };
    void *desc = fi_mr_desc(o->nat_mr[j]);
    struct fi_msg_atomic msg = {
        .msg_iov = &ioc,
        .desc = &desc,
        .iov_count = 1,
        .addr = dst == o->base.rank ? o->addr_self : o->addr[ofl_ofi_peer_index(o, dst)],
        .rma_iov = &rioc,
        .rma_iov_count = 1,
        .datatype = (enum fi_datatype) ft,
        .op = (enum fi_op) fo,
        .context = trig,
    };
    for (;;) {
        ssize_t rc = fi_atomicmsg(o->ep, &msg, FI_TRIGGER);
        if (0 == rc) {
            o->nat_posted++;
            return 0;
        }
        if (-FI_EAGAIN != rc) {
            return (int) rc;
        }
        ofl_ofi_poll_cq(o);
    }
}

static int post_ready(ofl_ofi_t *o, int j)
{
    static const uint64_t one = 1;
    int dst = o->base.rank ^ (1 << j);
    for (;;) {
        ssize_t rc = fi_inject_write(o->ep, &one, sizeof(one),
                                     o->addr[ofl_ofi_peer_index(o, dst)], o->r_ready_base[j],
                                     o->r_ready_key[j]);
        if (0 == rc) {
            o->writes++;
            o->bytes += sizeof(one);
            return 0;
        }
        if (-FI_EAGAIN != rc) {
            return (int) rc;
        }
        ofl_ofi_poll_cq(o);
    }
}

int ofl_ofi_native_post(ofl_ofi_t *o, const void *send, size_t count, ofl_op_t op,
                        ofl_type_t type)
{
    if (!ofl_ofi_native_ok(o, op, type, count) || o->nat_pending) {
        return -EINVAL;
    }
    int rounds = o->nat_rounds, me = o->base.rank;
    int ft = fi_type_of(type), fo = fi_op_of(op, type);
    size_t bytes = count * ofl_type_size(type);
    uint64_t c = o->nat_calls++;
    memcpy(region(o, 0), send, bytes);
    for (int j = 1; j <= rounds; ++j) {
        fill_identity(region(o, j), op, type, count);
    }
    for (int j = 0; j < rounds; ++j) {
        uint64_t threshold = (0 == j ? 1 : 3) * (c + 1);
        int rc = post_atomic(o, 2 * j, j, count, ft, fo, me ^ (1 << j), o->r_acc_base[j],
                             o->r_acc_key[j], threshold);
        if (0 == rc) {
            rc = post_atomic(o, 2 * j + 1, j, count, ft, fo, me,
                             remote_addr(o, region(o, j + 1), 0),
                             fi_mr_key(o->nat_mr[j + 1]), threshold);
        }
        if (0 != rc) {
            o->poisoned = o->poisoned ? o->poisoned : (me ^ (1 << j)) + 1;
            return -EIO;
        }
        o->writes++;
        o->bytes += bytes;
    }
    /* Only now may the partners add into my accumulators. */
    for (int j = 0; j < rounds; ++j) {
        if (0 != post_ready(o, j)) {
            o->poisoned = o->poisoned ? o->poisoned : (me ^ (1 << j)) + 1;
            return -EIO;
        }
    }
    /* Done when my last round's accumulator got both its additions and every
     * operation of mine completed. */
    o->nat_pending = 1;
    o->nat_wait_cntr = 2 * (c + 1);
    o->nat_wait_completed = 2 * (uint64_t) rounds * (c + 1);
    o->nat_wait_bytes = bytes;
    return 0;
}

int ofl_ofi_native_post_barrier(ofl_ofi_t *o)
{
    uint64_t zero = 0;
    return ofl_ofi_native_post(o, &zero, 1, OFL_OP_SUM, OFL_T_UINT64);
}

int ofl_ofi_native_test(ofl_ofi_t *o, void *recv)
{
    ofl_ofi_poll_cq(o);
    if (o->poisoned) {
        o->nat_pending = 0;
        return -EIO;
    }
    if (!o->nat_pending) {
        return -EINVAL;
    }
    if (o->nat_completed < o->nat_wait_completed
        || fi_cntr_read(o->nat_cntr[o->nat_rounds]) < o->nat_wait_cntr) {
        return 0;
    }
    o->nat_pending = 0;
    if (NULL != recv) {
        memcpy(recv, region(o, o->nat_rounds), o->nat_wait_bytes);
    }
    return 1;
}
