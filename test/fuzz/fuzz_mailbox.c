/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Fuzz the mailbox readers: DATA stamps and CREDIT counters as the engine
 * consumes them. Two ranks of one software NIC run a real allreduce program
 * (tree, exchange or split; sums of uint32) call after call; the input is a
 * script that interleaves honest progress of either rank with rewrites of
 * what rank 1 writes for rank 0 (stamps, payloads, credit counters, the
 * poison mark), near the true values or anywhere.
 *
 * Oracles: no out-of-bounds access (ASan) or undefined behaviour (UBSan);
 * every trigger test's answer equals the one nic.h's rules give for the value
 * in memory (a model kept here from the bumps each rank made); a corrupt
 * counter fails the call, which says -EPROTO; while nothing has been rewritten every call that
 * completes has the right sums, and with nothing rewritten no call fails.
 */
#include "engine/engine.h"
#include "fuzz.h"
#include "sched/sched.h"

#define N 2
#define SLOTS 4
#define SEG 256
#define MAX_COUNT 160

static ofl_softnic_t nic[N];
static ofl_program_t prog[3][N];
static ofl_nic_ops_t wrapped;          /* the softnic's with the model check around */
static const ofl_nic_ops_t *soft;

/* The model: per rank and stream, what nic.h says the checks compare with. */
static struct {
    uint64_t put[N][OFL_CHANNELS];     /* DATA bumps made: items put to the peer */
    uint64_t given[N][OFL_CHANNELS];   /* CREDIT bumps made: items consumed */
    uint64_t seen[N][OFL_CHANNELS];    /* CREDIT value last accepted */
} model[N];

static ofl_softnic_t *of(ofl_nic_t *b)
{
    return (ofl_softnic_t *) b;
}

static int model_reached(ofl_nic_t *b, int cnt, int peer, int chan, uint64_t threshold)
{
    int me = b->rank;
    if (0 == threshold) {
        return 1;
    }
    if (OFL_CNT_DATA == cnt) {
        uint64_t s = *fz_stamp(of(b), peer, chan, threshold - 1);
        if (s <= threshold) {
            return s == threshold;
        }
        uint64_t given = model[me].given[peer][chan];
        int ok = s <= given + SLOTS && 0 == (s - threshold) % SLOTS;
        fz_count(ok ? 3 : 4, ok ? "stamps ahead, valid" : "stamps ahead, corrupt");
        return ok ? 1 : -EPROTO;
    }
    uint64_t *seen = &model[me].seen[peer][chan];
    if (*seen >= threshold) {
        return 1;
    }
    uint64_t v = *fz_credit(of(b), me, peer, chan);
    if (v < *seen || v > model[me].put[peer][chan]) {
        fz_count(5, "credits corrupt");
        return -EPROTO;
    }
    *seen = v;
    return v >= threshold;
}

static int corrupt_seen;   /* a trigger test said -EPROTO during this progress call */

static int checked_reached(ofl_nic_t *b, int cnt, int peer, int chan, uint64_t threshold)
{
    int expect = model_reached(b, cnt, peer, chan, threshold);
    int got = soft->reached(b, cnt, peer, chan, threshold);
    corrupt_seen |= got < 0;
    FZ_ASSERT(got == expect, "rank %d %s(%d.%d) >= %llu: %d, rules say %d", b->rank,
              OFL_CNT_DATA == cnt ? "DATA" : "CREDIT", peer, chan,
              (unsigned long long) threshold, got, expect);
    return got;
}

static void checked_bump(ofl_nic_t *b, int cnt, int peer, int chan, uint64_t item, uint64_t len)
{
    if (OFL_CNT_DATA == cnt) {
        model[b->rank].put[peer][chan] = item + 1;
    } else {
        model[b->rank].given[peer][chan] = item + 1;
    }
    soft->bump(b, cnt, peer, chan, item, len);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void) argc;
    (void) argv;
    fz_stats_init();
    fz_world_open(nic, N, SLOTS, SEG);
    soft = nic[0].base.ops;
    wrapped = *soft;
    wrapped.reached = checked_reached;
    wrapped.bump = checked_bump;
    static const ofl_sched_shape_t shapes[3] = { OFL_SCHED_TREE, OFL_SCHED_EXCHANGE,
                                                 OFL_SCHED_SPLIT };
    for (int s = 0; s < 3; ++s) {
        ofl_sched_params_t par = { .reduce_kind = OFL_TREE_KNOMIAL, .reduce_radix = 2,
                                   .bcast_kind = OFL_TREE_KNOMIAL, .bcast_radix = 2,
                                   .slots = SLOTS, .shape = shapes[s], .byref = 0 };
        for (int r = 0; r < N; ++r) {
            if (0 != ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, r, N, &par, &prog[s][r])) {
                fprintf(stderr, "cannot compile shape %d\n", s);
                exit(1);
            }
        }
    }
    for (int r = 0; r < N; ++r) {
        nic[r].base.ops = &wrapped;
    }
    return 0;
}

static void sum_u32(void *out, const void *a, const void *b, size_t n)
{
    uint32_t *o = out;
    const uint32_t *x = a, *y = b;
    for (size_t i = 0; i < n; ++i) {
        o[i] = x[i] + y[i];
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in_t in = { data, size };
    fz_world_reset(nic, N);
    memset(model, 0, sizeof(model));
    int shape = fz_u8(&in) % 3;
    size_t count = 1 + fz_u8(&in) % MAX_COUNT;
    size_t seg = 4 * (1 + fz_u8(&in) % (SEG / 4));
    ofl_edges_t edges[N];
    ofl_inst_t inst[N];
    uint32_t *send[N], *recv[N];
    for (int r = 0; r < N; ++r) {
        ofl_edges_init(&edges[r], N);
        send[r] = malloc(count * sizeof(uint32_t));
        recv[r] = malloc(count * sizeof(uint32_t));
    }
    int state[N] = { 1, 1 };           /* 1 done (may post), 0 running, -1 failed */
    int clean = 1;                     /* nothing rewritten so far */
    uint32_t call = 0;
    for (int step = 0; step < 400 && in.n > 0; ++step) {
        uint8_t op = fz_u8(&in);
        int chan = (op >> 4) & 1;
        switch (op & 7) {
        case 0:
        case 1: {   /* a rank makes progress; both done: the next call */
            int r = op & 1;
            if (1 == state[0] && 1 == state[1]) {
                call++;
                ofl_call_t c = { .fn = sum_u32, .elem = 4, .count = count, .seg_bytes = seg };
                for (int q = 0; q < N; ++q) {
                    for (size_t i = 0; i < count; ++i) {
                        send[q][i] = (uint32_t) (call * 2654435761u + i * 40503u + (uint32_t) q);
                    }
                    c.send = send[q];
                    c.recv = recv[q];
                    ofl_engine_post(&inst[q], &prog[shape][q], &nic[q].base, &edges[q], &c);
                    state[q] = 0;
                }
            }
            if (0 != state[r]) {
                break;
            }
            corrupt_seen = 0;
            int rc = ofl_engine_progress(&inst[r]);
            FZ_ASSERT(rc >= -1 && rc <= 1, "progress %d", rc);
            FZ_ASSERT(!corrupt_seen || -1 == rc, "a corrupt counter did not fail the call");
            if (rc < 0) {
                FZ_ASSERT(-EPROTO == inst[r].error, "failed call: error %d", inst[r].error);
                FZ_ASSERT(!clean, "rank %d failed a call nobody tampered with", r);
                state[r] = -1;
                fz_count(0, "calls failed (corrupt value caught)");
            } else if (rc > 0) {
                state[r] = 1;
                if (clean) {
                    fz_count(1, "calls done, results checked");
                } else {
                    fz_count(2, "calls done, tampered");
                }
                for (size_t i = 0; clean && i < count; ++i) {
                    FZ_ASSERT(recv[r][i] == send[0][i] + send[1][i],
                              "rank %d element %zu of %zu: %u", r, i, count, recv[r][i]);
                }
            }
            break;
        }
        case 2: {   /* rank 1 rewrites the stamp of one of its items to rank 0 */
            uint64_t item = fz_u8(&in) % SLOTS;
            volatile uint64_t *st = fz_stamp(&nic[0], 1, chan, item);
            *st = fz_near(&in, *st);
            clean = 0;
            break;
        }
        case 3: {   /* ... rank 0's CREDIT counter for rank 1's stream */
            volatile uint64_t *cr = fz_credit(&nic[0], 0, 1, chan);
            *cr = fz_near(&in, *cr);
            clean = 0;
            break;
        }
        case 4: {   /* ... payload bytes (no validation can see those) */
            uint8_t *slot = nic[0].base.ops->inbox(&nic[0].base, 1, chan, fz_u8(&in) % SLOTS);
            slot[fz_u8(&in) % SEG] ^= (uint8_t) (1 + fz_u8(&in));
            clean = 0;
            break;
        }
        case 5: {   /* ... the poison mark; the health check must read it safely */
            ofl_softnic_hdr_t *h = (ofl_softnic_hdr_t *) nic[0].mem;
            int32_t v = (int32_t) fz_near(&in, 0);
            atomic_store(&h->poison, v);
            clean = 0;
            if (0 == state[0]) {
                int peer = -7;
                ofl_wait_status_t st = ofl_engine_check(&inst[0], 0.0, 0.0, &peer);
                if (v >= 1 && v <= N) {
                    FZ_ASSERT(OFL_WAIT_PEER_DEAD == st && peer == v - 1, "poison %d: %d/%d",
                              (int) v, (int) st, peer);
                } else if (0 != v) {
                    FZ_ASSERT(OFL_WAIT_FAILED == st && -EPROTO == inst[0].error,
                              "poison %d: %d", (int) v, (int) st);
                    state[0] = -1;
                } else {
                    FZ_ASSERT(OFL_WAIT_OK == st, "healthy: %d", (int) st);
                }
            }
            atomic_store(&h->poison, 0);
            break;
        }
        default:
            break;
        }
        if (state[0] < 0 || state[1] < 0) {
            break;
        }
    }
    for (int r = 0; r < N; ++r) {
        ofl_edges_fini(&edges[r]);
        free(send[r]);
        free(recv[r]);
    }
    return 0;
}
