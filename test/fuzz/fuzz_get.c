/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Fuzz the by-reference reader: a get of an item whose reference (address and
 * length in the sender's memory) rank 0 published in rank 1's mailbox, which
 * the input rewrites. Two ranks of one software NIC (both this process, so a
 * cross-memory read reads this process) run the real single-copy bcast
 * program from rank 0, call after call; besides, every input makes a few
 * direct gets of any offset and length into a buffer of exactly that length.
 *
 * Oracles: no out-of-bounds access or undefined behaviour (dst is allocated to
 * the length asked for, so a get that wrote what the reference says instead
 * would be caught); a get fails with -EPROTO exactly when the reference does
 * not cover the bytes asked for; a covering reference to the real buffer
 * reads the real bytes; with nothing rewritten every bcast delivers the
 * root's data.
 */
#include "engine/engine.h"
#include "fuzz.h"
#include "sched/sched.h"

#define N 2
#define SLOTS 2
#define SEG 64
#define SRC_BYTES 4096

static ofl_softnic_t nic[N];
static ofl_program_t prog[N];
static ofl_nic_ops_t wrapped;
static const ofl_nic_ops_t *soft;
static uint8_t *source;   /* a sender's buffer: SRC_BYTES of a known pattern */

typedef struct {
    uint64_t addr;
    uint64_t len;
} ref_t;   /* a by-reference item as softnic.c lays it out in the slot */

static int covers(ref_t ref, uint64_t offset, uint64_t len)
{
    return offset <= ref.len && ref.len - offset >= len && ref.addr + ref.len >= ref.addr;
}

static int checked_get(ofl_nic_t *b, int peer, int chan, uint64_t item, uint64_t offset,
                       void *dst, uint64_t len)
{
    ref_t ref = *(volatile ref_t *) b->ops->inbox(b, peer, chan, item);
    int rc = soft->get(b, peer, chan, item, offset, dst, len);
    if (covers(ref, offset, len)) {
        FZ_ASSERT(-EPROTO != rc, "covering reference refused (%llu+%llu of %llu)",
                  (unsigned long long) offset, (unsigned long long) len,
                  (unsigned long long) ref.len);
    } else {
        FZ_ASSERT(-EPROTO == rc, "reference of %llu bytes taken for %llu+%llu: %d",
                  (unsigned long long) ref.len, (unsigned long long) offset,
                  (unsigned long long) len, rc);
        fz_count(0, "short references caught");
    }
    return rc;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void) argc;
    (void) argv;
    fz_stats_init();
    fz_world_open(nic, N, SLOTS, SEG);
    if (0 != ofl_softnic_seal(&nic[0]) || 0 != ofl_softnic_seal(&nic[1])) {
        fprintf(stderr, "cannot seal\n");
        exit(1);
    }
    soft = nic[0].base.ops;
    wrapped = *soft;
    wrapped.get = checked_get;
    ofl_sched_params_t par = { .reduce_kind = OFL_TREE_KNOMIAL, .reduce_radix = 2,
                               .bcast_kind = OFL_TREE_KNOMIAL, .bcast_radix = 2,
                               .slots = SLOTS, .shape = OFL_SCHED_TREE, .byref = 1 };
    for (int r = 0; r < N; ++r) {
        if (0 != ofl_sched_compile(OFL_COLL_BCAST, 0, r, N, &par, &prog[r])) {
            fprintf(stderr, "cannot compile the bcast\n");
            exit(1);
        }
        nic[r].base.ops = &wrapped;
    }
    source = malloc(SRC_BYTES);
    for (int i = 0; i < SRC_BYTES; ++i) {
        source[i] = (uint8_t) (i * 7 + 3);
    }
    return 0;
}

/* One direct get by rank 1 of item 0 of channel 1 from rank 0. */
static void direct_get(fz_in_t *in)
{
    ofl_nic_t *b = &nic[1].base;
    ref_t *slot = b->ops->inbox(b, 0, 1, 0);
    slot->addr = (uint64_t) (uintptr_t) source + (uint64_t) (int64_t) (int16_t) fz_u64(in);
    slot->len = fz_near(in, SRC_BYTES);
    uint64_t offset = fz_near(in, 0);
    uint64_t len = fz_u8(in) & 1 ? fz_u64(in) % (2 * SRC_BYTES) : slot->len - offset;
    if (len > 2 * SRC_BYTES) {
        len = fz_u64(in) % (2 * SRC_BYTES);
    }
    ref_t ref = *slot;
    uint8_t *dst = malloc(len ? len : 1);
    int rc = b->ops->get(b, 0, 1, 0, offset, dst, len);
    uint64_t from = ref.addr + offset - (uint64_t) (uintptr_t) source;
    if (0 == rc && covers(ref, offset, len) && ref.addr >= (uint64_t) (uintptr_t) source
        && from <= SRC_BYTES && SRC_BYTES - from >= len) {
        FZ_ASSERT(0 == memcmp(dst, source + from, len), "get read other bytes");
        fz_count(1, "direct gets read and compared");
    }
    free(dst);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in_t in = { data, size };
    fz_world_reset(nic, N);
    size_t count = 1 + fz_u8(&in) % 200;
    for (int k = fz_u8(&in) % 4; k > 0; --k) {
        direct_get(&in);
    }
    fz_world_reset(nic, N);
    ofl_edges_t edges[N];
    ofl_inst_t inst[N];
    uint8_t *buf[N];
    for (int r = 0; r < N; ++r) {
        ofl_edges_init(&edges[r], N);
        buf[r] = malloc(count);
    }
    int state[N] = { 1, 1 };
    int clean = 1;
    uint8_t call = 0;
    for (int step = 0; step < 200 && in.n > 0; ++step) {
        uint8_t op = fz_u8(&in);
        if (op & 2) {   /* rank 0 rewrites a reference it published */
            ref_t *ref = nic[1].base.ops->inbox(&nic[1].base, 0, op >> 7, (op >> 6) & 1);
            if (op & 4) {
                ref->len = fz_near(&in, ref->len);
            } else {
                ref->addr = fz_near(&in, ref->addr);
            }
            clean = 0;
            continue;
        }
        int r = op & 1;
        if (1 == state[0] && 1 == state[1]) {
            call++;
            for (int q = 0; q < N; ++q) {
                memset(buf[q], 0 == q ? call : 0, count);
                ofl_call_t c = { .send = buf[q], .recv = buf[q], .elem = 1, .count = count };
                ofl_engine_post(&inst[q], &prog[q], &nic[q].base, &edges[q], &c);
                state[q] = 0;
            }
        }
        if (0 != state[r]) {
            continue;
        }
        int rc = ofl_engine_progress(&inst[r]);
        FZ_ASSERT(rc >= -1 && rc <= 1, "progress %d", rc);
        if (rc < 0) {
            FZ_ASSERT(!clean, "rank %d failed an honest call: %d", r, inst[r].error);
            state[r] = -1;
            fz_count(2, "bcasts failed");
            break;
        }
        if (rc > 0) {
            state[r] = 1;
            for (size_t i = 0; clean && i < count; ++i) {
                FZ_ASSERT(buf[r][i] == call, "rank %d byte %zu: %u, not %u", r, i, buf[r][i],
                          call);
            }
            fz_count(3, "bcasts done");
        }
    }
    for (int r = 0; r < N; ++r) {
        ofl_edges_fini(&edges[r]);
        free(buf[r]);
    }
    return 0;
}
