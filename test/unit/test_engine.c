/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Unit test of the descriptor engine (src/engine) on programs of the schedule
 * compiler (src/sched) over the software NIC, without MPI: a deterministic
 * simulation.
 *
 * All ranks of a communicator run in one thread, each with its own mapping of
 * one softnic segment, stepped in many orders; every result is compared with a
 * reference computed here from the inputs, and after every step the engine's
 * queue rule is checked against the cursors. In "preempt" mode a counter read
 * may be followed by another rank's progress before the reader acts on it (a
 * thread losing the CPU between two reads), deterministically. Tree, exchange
 * and split programs, and by-reference (single-copy) bcasts: a rank's call
 * never completes before each of its children has read its buffer, and reads of
 * unmapped memory must fail the call, not the process.
 *
 * References never come from the code under test: sums are taken in unsigned
 * arithmetic, the float reference re-derives the combine order from the tree's
 * definition (own value, then children by increasing virtual rank), or for an
 * exchange or split program takes rank order; the items a split call moves over
 * each stream are counted here from segment ownership, not from the use tables.
 *
 * The program shapes are tested by test_sched, threads and the other failures
 * by test_threads, the softnic's own API by test_softnic.
 */
#include "alu/alu.h"
#include "engine/engine.h"
#include "engine_sim.h"
#include "engine_util.h"
#include "nic/softnic.h"
#include "sched/sched.h"
#include "tree/tree.h"
#include "unit.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Every kind, every root, counts 0, 1, 7 and counts spanning many segments, in
 * every stepping order, on one world whose edges carry over from run to run. */
static void test_sim_matrix(void)
{
    static const int sizes[] = { 1, 2, 3, 4, 5, 8, 13 };
    static const struct {
        int slots;
        size_t segsize;
    } geo[] = { { 1, 64 }, { 2, 64 }, { 4, 256 }, { 2, 256 } };
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KNOMIAL, 2, 1, 0, 0 };
    static const ofl_sched_params_t pn = { OFL_TREE_KNOMIAL, 3, OFL_TREE_KARY, 3, 1, 0, 0 };
    static const ofl_sched_params_t pf = { OFL_TREE_FLAT, 0, OFL_TREE_KARY, 4, 1, 0, 0 };
    spec_t specs[16 + 6 * SIM_MAX];
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); ++si) {
        for (size_t gi = 0; gi < sizeof(geo) / sizeof(geo[0]); ++gi) {
            int n = sizes[si];
            /* Alternate tree shapes by geometry so every shape meets small slots. */
            const ofl_sched_params_t *p0 = gi & 1 ? &pn : &pk;
            world_t *w = world_open(n, geo[gi].slots, geo[gi].segsize, p0, &pf);
            if (NULL == w) {
                continue;
            }
            for (int order = 0; order < ORD_COUNT; ++order) {
                int k = 0;
                static const size_t sums[] = { 0, 1, 7, 1000 };
                for (int ip = 0; ip < 2; ++ip) {
                    for (size_t c = 0; c < 4; ++c) {
                        specs[k++] = (spec_t) { K_SUM_I32, 0, (ip + order) & 1, ip, sums[c],
                                                next_tag++, 0 };
                    }
                }
                specs[k++] = (spec_t) { K_MAX_F64, 0, 0, 0, 7, next_tag++, 0 };
                specs[k++] = (spec_t) { K_MAX_F64, 0, 1, 1, 300, next_tag++, 0 };
                specs[k++] = (spec_t) { K_SUM_F32, 0, order & 1, 0, 100, next_tag++, 0 };
                specs[k++] = (spec_t) { K_BARRIER, 0, 0, 0, 0, next_tag++, 0 };
                specs[k++] = (spec_t) { K_SUM_I32, 0, 2, order & 1, 1000, next_tag++, 0 };
                specs[k++] = (spec_t) { K_SUM_F32, 0, 2, 1, 100, next_tag++, 0 };
                specs[k++] = (spec_t) { K_BARRIER, 0, 2, 0, 0, next_tag++, 0 };
                specs[k++] = (spec_t) { K_SUM_I32, 0, 3, order & 1, 1000, next_tag++, 0 };
                specs[k++] = (spec_t) { K_MAX_F64, 0, 3, order >> 1, 7, next_tag++, 0 };
                specs[k++] = (spec_t) { K_SUM_F32, 0, 3, 1, 100, next_tag++, 0 };
                specs[k++] = (spec_t) { K_BARRIER, 0, 3, 0, 0, next_tag++, 0 };
                for (int root = 0; root < n; ++root) {
                    specs[k++] = (spec_t) { K_BCAST, root, 0, 0, 0, next_tag++, 0 };
                    specs[k++] = (spec_t) { K_BCAST, root, 1, 0, 1, next_tag++, 0 };
                    specs[k++] = (spec_t) { K_BCAST, root, root & 1, 0, 777, next_tag++, 0 };
                    specs[k++] = (spec_t) { K_REDUCE_I32, root, 0, 0, 7, next_tag++, 0 };
                    specs[k++] = (spec_t) { K_REDUCE_I32, root, 1, 1, 500, next_tag++, 0 };
                    specs[k++] = (spec_t) { K_REDUCE_I32, root, root & 1, 0, 1, next_tag++, 0 };
                }
                char what[96];
                snprintf(what, sizeof(what), "matrix n %d slots %d seg %zu", n, geo[gi].slots,
                         geo[gi].segsize);
                run_specs(w, specs, k, order, what);
            }
            world_close(w);
        }
    }
}

/* 50 back-to-back calls of random kinds, roots, sizes and programs (two trees,
 * exchange, split) on the same streams: the thresholds of each call must start
 * where the previous call's ended. */
static void test_sim_mixed(void)
{
    static const ofl_sched_params_t pa = { OFL_TREE_KNOMIAL, 2, OFL_TREE_KARY, 2, 1, 0, 0 };
    static const ofl_sched_params_t pb = { OFL_TREE_KARY, 3, OFL_TREE_KNOMIAL, 4, 1, 0, 0 };
    static const size_t counts[] = { 0, 1, 7, 33, 100, 1000 };
    static const int sizes[] = { 7, 10, 16 };
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); ++si) {
        int n = sizes[si];
        world_t *w = world_open(n, (int) si + 1, 64, &pa, &pb);
        if (NULL == w) {
            continue;
        }
        for (int order = 0; order < ORD_COUNT; ++order) {
            spec_t specs[50];
            for (int i = 0; i < 50; ++i) {
                kind_t kind = (kind_t) (rng() % K_NKINDS);
                specs[i] = (spec_t) {
                    .kind = kind,
                    .root = (int) (rng() % (uint64_t) n),
                    .pset = (int) (rng() % NPSETS),
                    .inplace = (int) (rng() & 1),
                    .count = counts[rng() % 6],
                    .tag = next_tag++,
                };
            }
            char what[64];
            snprintf(what, sizeof(what), "mixed50 n %d", n);
            /* The last order once more with a peer running between counter reads. */
            world_preempt(w, ORD_SUBSET == order);
            run_specs(w, specs, 50, order, what);
        }
        world_close(w);
    }
}
/* Exchange-program calls (pset 2): int sums that wrap, double max, float sums
 * whose bits depend on the order, counts 0, 1, 7 and many segments, each both
 * out-of-place and in-place (at every rank, so at ranks 2.. the output is a later
 * input of the combine), and a barrier. Returns the number of specs. */
static int exchange_specs(spec_t *specs)
{
    static const size_t counts[] = { 0, 1, 7, 1000 };
    int k = 0;
    for (int ip = 0; ip < 2; ++ip) {
        for (int c = 0; c < 4; ++c) {
            specs[k++] = (spec_t) { K_SUM_I32, 0, 2, ip, counts[c], next_tag++, 0 };
            specs[k++] = (spec_t) { K_MAX_F64, 0, 2, ip, counts[c] % 500, next_tag++, 0 };
            specs[k++] = (spec_t) { K_SUM_F32, 0, 2, ip, counts[c] % 700, next_tag++, 0 };
        }
    }
    specs[k++] = (spec_t) { K_BARRIER, 0, 2, 0, 0, next_tag++, 0 };
    return k;
}

/* In-place calls whose segments, at segsize 4096 and up, exceed the engine's
 * 2 KiB combine buffer several times, with a partial last chunk. */
static int exchange_big_specs(spec_t *specs)
{
    int k = 0;
    specs[k++] = (spec_t) { K_SUM_I32, 0, 2, 1, 6000, next_tag++, 0 };
    specs[k++] = (spec_t) { K_MAX_F64, 0, 2, 1, 3000, next_tag++, 0 };
    specs[k++] = (spec_t) { K_SUM_F32, 0, 2, 1, 3000, next_tag++, 0 };
    specs[k++] = (spec_t) { K_SUM_F32, 0, 2, 0, 3000, next_tag++, 0 };
    return k;
}

/* The exchange allreduce and barrier in every stepping order, with and without
 * preemption, at several geometries (slots 1 and 2; 64-byte segments for many
 * segments, 4 and 8 KiB ones for the chunked in-place combine); then 50 calls
 * mixing exchange, split and tree programs of every kind on the same streams. */
static void test_sim_exchange(void)
{
    static const int sizes[] = { 1, 2, 3, 5, 8 };
    static const struct {
        int slots;
        size_t segsize;
    } geo[] = { { 1, 64 }, { 2, 64 }, { 1, 4096 }, { 2, 8192 } };
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KNOMIAL, 2, 1, 0, 0 };
    static const ofl_sched_params_t pn = { OFL_TREE_KNOMIAL, 3, OFL_TREE_KARY, 3, 1, 0, 0 };
    static const size_t counts[] = { 0, 1, 7, 33, 100, 1000, 3000 };
    spec_t specs[64];
    long fired = pre.fired;
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); ++si) {
        for (size_t gi = 0; gi < sizeof(geo) / sizeof(geo[0]); ++gi) {
            int n = sizes[si];
            world_t *w = world_open(n, geo[gi].slots, geo[gi].segsize, &pk, &pn);
            if (NULL == w) {
                continue;
            }
            char what[96];
            /* Every order meets both modes across the geometries; so do the big
             * in-place calls at each geometry. */
            for (int order = 0; order < ORD_COUNT; ++order) {
                int preempt = (order + (int) gi) & 1;
                int k = exchange_specs(specs);
                if (geo[gi].segsize > 2048 && (ORD_REVERSE == order || ORD_RANDOM == order)) {
                    k += exchange_big_specs(specs + k);
                }
                snprintf(what, sizeof(what), "exchange n %d slots %d seg %zu%s", n,
                         geo[gi].slots, geo[gi].segsize, preempt ? " preempt" : "");
                world_preempt(w, preempt);
                run_specs(w, specs, k, order, what);
            }
            /* One big in-place call at a time: the counters are checked after each. */
            if (geo[gi].segsize > 2048) {
                CHECK(w->nic[0].base.slot_bytes >= 2 * 2048, "segments of one chunk only");
                int k = exchange_big_specs(specs);
                for (int i = 0; i < k; ++i) {
                    snprintf(what, sizeof(what), "exchange big n %d seg %zu call %d", n,
                             geo[gi].segsize, i);
                    world_preempt(w, i & 1);
                    run_specs(w, &specs[i], 1, ORD_RANDOM, what);
                }
            }
            /* Exchange, split and tree programs of every kind on the same streams. */
            for (int i = 0; i < 50; ++i) {
                specs[i] = (spec_t) {
                    .kind = (kind_t) (rng() % K_NKINDS),
                    .root = (int) (rng() % (uint64_t) n),
                    .pset = (int) (rng() % NPSETS),
                    .inplace = (int) (rng() & 1),
                    .count = counts[rng() % 7],
                    .tag = next_tag++,
                };
            }
            snprintf(what, sizeof(what), "exchange mixed50 n %d slots %d seg %zu", n,
                     geo[gi].slots, geo[gi].segsize);
            world_preempt(w, (int) (gi & 1));
            run_specs(w, specs, 50, (int) gi, what);
            world_close(w);
        }
    }
    CHECK(pre.fired - fired > 1000, "only %ld preemptions", pre.fired - fired);

    /* Not vacuous: for these inputs rank order gives other bits than the reverse
     * order and than the tree's order, so a combine in any order but rank order
     * (or one that depends on arrival) fails the comparison above. */
    for (int n = 3; n <= 8; ++n) {
        world_t *w = world_open(n, 1, 64, &pk, &pn);
        if (NULL == w) {
            continue;
        }
        int vs_rev = 0, vs_tree = 0;
        for (size_t i = 0; i < 3000; ++i) {
            float rank = rank_sum_f32(n, 12345, i), rev = in_f32(n - 1, 12345, i);
            for (int r = n - 2; r >= 0; --r) {
                rev = rev + in_f32(r, 12345, i);
            }
            float tree = tree_sum_f32(w, 0, 0, 12345, i);
            vs_rev += 0 != memcmp(&rank, &rev, sizeof(float));
            vs_tree += 0 != memcmp(&rank, &tree, sizeof(float));
        }
        CHECK(vs_rev > 30, "n %d: rank and reverse order differ in %d elements only", n,
              vs_rev);
        /* A binary tree of 3 combines (0 + 1) + 2: rank order. */
        CHECK(3 == n || vs_tree > 30, "n %d: rank and tree order differ in %d elements only",
              n, vs_tree);
        world_close(w);
    }
}

/* The exchange barrier: with one rank missing nobody completes, whichever rank
 * it is, and every other rank waits for that one's data; so does an exchange
 * allreduce, without writing any result (in-place: the inputs stay). Then the
 * missing rank posts and everything completes. */
static void test_sim_exchange_barrier(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0, 0 };
    const int n = 5;
    world_t *w = world_open(n, 1, 64, &pk, &pk);
    if (NULL == w) {
        return;
    }
    uint32_t t0 = next_tag;
    next_tag += 4;
    spec_t warm[4] = {
        { K_SUM_I32, 0, 2, 0, 100, t0 + 0, 0 },
        { K_BARRIER, 0, 0, 0, 0, t0 + 1, 0 },
        { K_BCAST, 3, 0, 0, 200, t0 + 2, 0 },
        { K_BARRIER, 0, 2, 0, 0, t0 + 3, 0 },
    };
    run_specs(w, warm, 4, ORD_RANDOM, "exchange barrier warm-up");
    for (int missing = 0; missing < n; ++missing) {
        for (int kind = 0; kind < 3; ++kind) {
            /* A barrier, an allreduce of one segment, one of seven. */
            size_t count = 1 == kind ? 16 : 100;
            spec_t s = { kind ? K_SUM_I32 : K_BARRIER, 0, 2, missing & 1, count, next_tag++, 0 };
            call_t c;
            call_init(w, &c, &s);
            unsigned mask = 0;
            for (int r = 0; r < n; ++r) {
                if (r != missing) {
                    call_post(w, &c, r);
                    mask |= 1u << r;
                }
            }
            int done = 0, blame = 0, untouched = 0;
            for (int round = 0; round < 100; ++round) {
                for (int r = 0; r < n; ++r) {
                    done += r != missing && ofl_engine_progress(&w->inst[r]);
                }
            }
            for (int r = 0; r < n; ++r) {
                int peer = -1, cnt = -1;
                uint64_t have = 0;
                int64_t need = 0;
                /* One segment: everybody waits for the missing rank's data. More:
                 * the second segment's put waits for the first's slot at a peer,
                 * which waits for the missing rank. */
                blame += r != missing
                         && 1 == ofl_engine_blocker(&w->inst[r], &peer, &cnt, &have, &need)
                         && (int64_t) have < need
                         && (2 == kind ? OFL_CNT_CREDIT * NCH + 0 == cnt
                                       : OFL_CNT_DATA * NCH + 0 == cnt && peer == missing);
                untouched += K_BARRIER == s.kind || s.inplace
                             || all_sentinel(c.recv[r], count * 4);
            }
            CHECK(0 == done, "%s completed %d times without rank %d",
                  kind ? "exchange allreduce" : "exchange barrier", done, missing);
            CHECK(n - 1 == blame, "kind %d: only %d ranks wait for missing rank %d", kind, blame,
                  missing);
            CHECK(n == untouched, "results written without rank %d", missing);
            if (s.inplace && K_SUM_I32 == s.kind) {
                /* In-place, the buffer holds the input until the result comes. */
                int intact = 0;
                uint8_t orig[400];
                for (int r = 0; r < n; ++r) {
                    fill_input(K_SUM_I32, r, s.tag, count, orig);
                    intact += 0 == memcmp(orig, c.recv[r], count * 4);
                }
                CHECK(n == intact, "in-place inputs changed without rank %d (%d intact)",
                      missing, intact);
            }
            sim_run(w, &c, 1, ORD_RANDOM, mask, "exchange barrier, last rank");
            call_free(w, &c);
        }
    }
    world_close(w);
}

/* Partial posting: with counters already high from earlier calls, nothing may
 * fire before its own call's thresholds, and the blocker must name the peer that
 * really holds things up. Tree (binary, 7 ranks): 0 -> 1 2, 1 -> 3 4, 2 -> 5 6. */
static void test_sim_thresholds(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0, 0 };
    const int n = 7;
    world_t *w = world_open(n, 1, 64, &pk, &pk);
    if (NULL == w) {
        return;
    }
    /* Warm up the edges so that stale counters would satisfy absolute thresholds. */
    uint32_t t0 = next_tag;
    next_tag += 4;
    spec_t warm[4] = {
        { K_SUM_I32, 0, 0, 0, 100, t0 + 0, 0 },
        { K_BCAST, 3, 0, 0, 200, t0 + 1, 0 },
        { K_REDUCE_I32, 5, 0, 0, 100, t0 + 2, 0 },
        { K_SUM_I32, 0, 0, 1, 100, t0 + 3, 0 },
    };
    run_specs(w, warm, 4, ORD_RANDOM, "thresholds warm-up");

    /* 1. Only the leaves posted. */
    spec_t s = { K_SUM_I32, 0, 0, 0, 100, next_tag++, 0 };
    call_t c;
    call_init(w, &c, &s);
    size_t bytes = c.s.count * c.elem;
    static const int leaves[] = { 3, 4, 5, 6 };
    static const int parent[] = { -1, 0, 0, 1, 1, 2, 2 };
    for (int i = 0; i < 4; ++i) {
        call_post(w, &c, leaves[i]);
    }
    int done = 0, blk = 0;
    for (int round = 0; round < 300; ++round) {
        for (int i = 0; i < 4; ++i) {
            done += ofl_engine_progress(&w->inst[leaves[i]]);
        }
    }
    for (int i = 0; i < 4; ++i) {
        int peer = -1, cnt = -1;
        uint64_t have = 0;
        int64_t need = 0;
        int b = ofl_engine_blocker(&w->inst[leaves[i]], &peer, &cnt, &have, &need);
        blk += b && peer == parent[leaves[i]] && (int64_t) have < need;
    }
    CHECK(0 == done, "leaves alone completed %d times", done);
    CHECK(4 == blk, "only %d leaves blame their parent", blk);
    int untouched = 0;
    for (int r = 0; r < n; ++r) {
        untouched += all_sentinel(c.recv[r], bytes);
    }
    CHECK(n == untouched, "receive buffers written with only leaves posted (%d clean)",
          untouched);

    /* 2. Everybody but the root: still nothing may complete or touch a result. */
    call_post(w, &c, 1);
    call_post(w, &c, 2);
    for (int round = 0; round < 300; ++round) {
        for (int r = 1; r < n; ++r) {
            done += ofl_engine_progress(&w->inst[r]);
        }
    }
    CHECK(0 == done, "completed without the root");
    untouched = 0;
    for (int r = 0; r < n; ++r) {
        untouched += all_sentinel(c.recv[r], bytes);
    }
    CHECK(n == untouched, "receive buffers written before the root posted");
    int peer = -1, cnt = -1;
    uint64_t have = 0;
    int64_t need = 0;
    CHECK(1 == ofl_engine_blocker(&w->inst[1], &peer, &cnt, &have, &need) && 0 == peer
              && OFL_CNT_CREDIT * NCH + 0 == cnt,
          "rank 1 blames %d/%d", peer, cnt);

    /* 3. The root posts: one progress moves exactly one segment down (one slot per
     * edge), so nobody is done yet; then everything finishes. */
    call_post(w, &c, 0);
    CHECK(0 == ofl_engine_progress(&w->inst[0]), "root finished 7 segments in one step");
    CHECK(!all_sentinel(c.recv[0], bytes) && all_sentinel(c.recv[0] + 64, bytes - 64),
          "root wrote other than its first segment");
    sim_run(w, &c, 1, ORD_RANDOM, 0x7fu, "thresholds finish");
    call_free(w, &c);

    /* 4. All but leaf 6: the root waits on 2, 2 waits on 6; no result is written. */
    s.tag = next_tag++;
    call_init(w, &c, &s);
    for (int r = 0; r < 6; ++r) {
        call_post(w, &c, r);
    }
    done = 0;
    for (int round = 0; round < 300; ++round) {
        for (int r = 5; r >= 0; --r) {
            done += ofl_engine_progress(&w->inst[r]);
        }
    }
    CHECK(0 == done, "completed without leaf 6");
    untouched = 0;
    for (int r = 0; r < n; ++r) {
        untouched += all_sentinel(c.recv[r], bytes);
    }
    CHECK(n == untouched, "receive buffers written without leaf 6");
    CHECK(1 == ofl_engine_blocker(&w->inst[0], &peer, &cnt, &have, &need) && 2 == peer
              && OFL_CNT_DATA * NCH + 0 == cnt && (int64_t) have < need,
          "root blames %d/%d", peer, cnt);
    CHECK(1 == ofl_engine_blocker(&w->inst[2], &peer, &cnt, &have, &need) && 6 == peer
              && OFL_CNT_DATA * NCH + 0 == cnt && (int64_t) have < need,
          "rank 2 blames %d/%d", peer, cnt);
    /* Left subtree (1, 3, 4) could go as far as the slots allow: one item up, the
     * second waits for the root to free the slot (CREDIT of the up channel). */
    CHECK(1 == ofl_engine_blocker(&w->inst[1], &peer, &cnt, &have, &need) && 0 == peer
              && OFL_CNT_CREDIT * NCH + 0 == cnt && (int64_t) have < need,
          "rank 1 blames %d/%d", peer, cnt);
    sim_run(w, &c, 1, ORD_REVERSE, 0x3fu, "thresholds without leaf 6");
    for (int r = 0; r < n; ++r) {
        CHECK(0 == ofl_engine_blocker(&w->inst[r], &peer, &cnt, &have, &need),
              "rank %d blocked after completion", r);
    }
    call_free(w, &c);
    world_close(w);
}

/* The same float sum twice, stepped in different orders: every rank of both runs
 * must hold the same bits, equal to the tree-order reference. */
static void test_sim_float(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KNOMIAL, 3, OFL_TREE_KARY, 2, 1, 0, 0 };
    const int n = 11;
    world_t *w = world_open(n, 2, 64, &pk, &pk);
    if (NULL == w) {
        return;
    }
    spec_t s = { K_SUM_F32, 0, 0, 0, 100, next_tag++, 0 };
    call_t a, b;
    call_init(w, &a, &s);
    call_init(w, &b, &s);
    sim_run(w, &a, 1, ORD_FORWARD, 0, "float run 1");
    sim_run(w, &b, 1, ORD_RANDOM, 0, "float run 2");
    size_t bytes = s.count * 4;
    int same = 0;
    for (int r = 0; r < n; ++r) {
        same += 0 == memcmp(a.recv[r], a.recv[0], bytes) && 0 == memcmp(b.recv[r], a.recv[0],
                                                                         bytes);
    }
    CHECK(n == same, "float results differ between ranks or runs (%d of %d same)", same, n);
    CHECK(0 == memcmp(a.recv[0], a.expect, bytes), "float result is not the tree order's");
    /* Not vacuous: the inputs are order-sensitive, rank order gives other bits. */
    int differ = 0;
    for (size_t i = 0; i < s.count; ++i) {
        float fwd = 0.0f, rev = 0.0f;
        for (int r = 0; r < n; ++r) {
            fwd += in_f32(r, s.tag, i);
            rev += in_f32(n - 1 - r, s.tag, i);
        }
        float got;
        memcpy(&got, a.recv[0] + 4 * i, 4);
        differ += memcmp(&fwd, &got, 4) != 0 || memcmp(&rev, &got, 4) != 0;
    }
    CHECK(differ > 10, "only %d elements order-sensitive", differ);
    call_free(w, &a);
    call_free(w, &b);
    world_close(w);
}

/* ---- split programs ----------------------------------------------------------- */

/* Segments of a call of spec s on world w, as engine.h defines them. */
static size_t spec_nseg(const world_t *w, const spec_t *s)
{
    size_t elem = K_MAX_F64 == s->kind ? 8 : K_BCAST == s->kind ? 1 : 4;
    size_t slot = w->nic[0].base.slot_bytes;
    size_t seg = s->seg && s->seg < slot ? s->seg : slot;
    size_t per = seg / elem ? seg / elem : 1;
    return s->count ? (s->count + per - 1) / per : 1;
}

/* A count of `nseg` segments of `per` elements whose last segment is partial
 * (1 .. per elements, varied by tag). */
static size_t count_of(size_t nseg, size_t per, uint32_t tag)
{
    return (nseg - 1) * per + 1 + tag % per;
}

/* Split allreduces (pset 3) on an n-rank world of `slot`-byte slots, cut into
 * `seg`-byte segments (0: the slot's): int32 sums that wrap, double max and float
 * sums whose bits depend on the order, of counts 0, 1, 7 and of n - 1, n, n + 1,
 * 2n + n/2 + 1 and 3n - 1 segments (less than a round, one, one and a partial
 * round, several and a partial one), the last segment partial; out-of-place and
 * in-place (at every rank) in turn. Returns the number of specs. */
static int split_specs(spec_t *specs, int n, size_t slot, size_t seg, int inplace0)
{
    static const kind_t kinds[] = { K_SUM_I32, K_MAX_F64, K_SUM_F32 };
    static const size_t elems[] = { 4, 8, 4 };
    size_t segb = seg && seg < slot ? seg : slot;
    size_t nsegs[] = { (size_t) n - 1, (size_t) n, (size_t) n + 1,
                       2 * (size_t) n + (size_t) n / 2 + 1, 3 * (size_t) n - 1 };
    int k = 0;
    for (int ki = 0; ki < 3; ++ki) {
        size_t per = segb / elems[ki] ? segb / elems[ki] : 1;
        size_t counts[8] = { 0, 1, 7 };
        int nc = 3;
        for (int i = 0; i < 5; ++i) {
            if (nsegs[i] >= 1) {
                counts[nc++] = count_of(nsegs[i], per, next_tag);
            }
        }
        for (int c = 0; c < nc; ++c) {
            specs[k] = (spec_t) { kinds[ki], 0, 3, (k + inplace0) & 1, counts[c], next_tag++,
                                  seg };
            k++;
        }
    }
    return k;
}

/* In-place split allreduces whose segments (the slot's, 4 or 8 KiB) exceed the
 * engine's 2 KiB combine buffer: n + n/2 + 1 segments, so every rank owns one and
 * the last round is partial, the last segment 3/4 full; a float sum also
 * out-of-place for the same bits. */
static int split_big_specs(spec_t *specs, int n, size_t slot)
{
    size_t nseg = (size_t) n + (size_t) n / 2 + 1;
    size_t n4 = slot / 4, n8 = slot / 8;
    int k = 0;
    specs[k++] = (spec_t) { K_SUM_I32, 0, 3, 1, (nseg - 1) * n4 + 3 * n4 / 4, next_tag++, 0 };
    specs[k++] = (spec_t) { K_MAX_F64, 0, 3, 1, (nseg - 1) * n8 + 3 * n8 / 4, next_tag++, 0 };
    specs[k++] = (spec_t) { K_SUM_F32, 0, 3, 1, (nseg - 1) * n4 + 3 * n4 / 4, next_tag++, 0 };
    specs[k++] = (spec_t) { K_SUM_F32, 0, 3, 0, (nseg - 1) * n4 + 3 * n4 / 4, next_tag++, 0 };
    return k;
}

/* Run split-only specs and check what each stream carried against segment
 * ownership, counted here: from a to owner b on channel 0 one item per segment b
 * owns (segment s belongs to rank s mod n), from owner a to b on channel 1 one
 * per segment a owns; nothing between a rank and itself. */
static void run_split_specs(world_t *w, const spec_t *specs, int k, int order, const char *what)
{
    int n = w->n;
    uint64_t *before = malloc(sizeof(uint64_t) * (size_t) (n * n * NCH * 2));
    uint64_t *owned = calloc((size_t) n, sizeof(uint64_t));
    for (int a = 0; a < n; ++a) {
        memcpy(before + (size_t) (2 * a * n * NCH), w->edges[a].out,
               sizeof(uint64_t) * (size_t) (n * NCH));
        memcpy(before + (size_t) ((2 * a + 1) * n * NCH), w->edges[a].in,
               sizeof(uint64_t) * (size_t) (n * NCH));
    }
    for (int i = 0; i < k; ++i) {
        size_t nseg = spec_nseg(w, &specs[i]);
        for (size_t s = 0; s < nseg; ++s) {
            owned[s % (size_t) n]++;
        }
    }
    run_specs(w, specs, k, order, what);
    int bad = 0;
    for (int a = 0; a < n; ++a) {
        for (int b = 0; b < n; ++b) {
            for (int c = 0; c < NCH; ++c) {
                uint64_t want = a == b ? 0 : owned[0 == c ? b : a];
                uint64_t out = w->edges[a].out[b * NCH + c]
                               - before[(size_t) (2 * a * n * NCH + b * NCH + c)];
                uint64_t in = w->edges[b].in[a * NCH + c]
                              - before[(size_t) ((2 * b + 1) * n * NCH + a * NCH + c)];
                bad += out != want || in != want;
            }
        }
    }
    CHECK(0 == bad, "%s (%s): %d streams moved other than segment ownership says", what,
          order_name[order], bad);
    free(before);
    free(owned);
}

/* Split allreduces in every stepping order, with and without preemption: sizes 1
 * (a copy), 2, 3, 5, 8; slots 1, 2, 4 with 64-byte segments (many rounds, partial
 * last rounds), once cut to 48-byte segments by the call; 4 and 8 KiB slots cut
 * into 100-byte segments by the call, or not cut (multi-chunk in-place combines);
 * one big in-place call at a time with the counters checked after each; then 50
 * calls mixing split, exchange and tree programs of every kind on the same
 * streams, the calls asking for segments of the slot's size, less or more. */
static void test_sim_split(void)
{
    static const int sizes[] = { 1, 2, 3, 5, 8 };
    static const struct {
        int slots;
        size_t segsize;
    } geo[] = { { 1, 64 }, { 2, 64 }, { 4, 64 }, { 1, 4096 }, { 2, 8192 } };
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KNOMIAL, 2, 1, 0, 0 };
    static const ofl_sched_params_t pn = { OFL_TREE_KNOMIAL, 3, OFL_TREE_KARY, 3, 1, 0, 0 };
    static const size_t counts[] = { 0, 1, 7, 33, 100, 1000, 3000 };
    spec_t specs[80];
    long fired = pre.fired, calls = stats.split_calls, partial = stats.split_partial;
    long small = stats.split_small;
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); ++si) {
        for (size_t gi = 0; gi < sizeof(geo) / sizeof(geo[0]); ++gi) {
            int n = sizes[si];
            size_t slot = geo[gi].segsize;
            world_t *w = world_open(n, geo[gi].slots, slot, &pk, &pn);
            if (NULL == w) {
                continue;
            }
            char what[112];
            /* Segment sizes a call may ask for: the slot's, less, more. */
            const size_t segs[] = { 0, 0, 64, 100, 3 * slot / 4, 2 * slot };
            for (int order = 0; order < ORD_COUNT; ++order) {
                int preempt = (order + (int) gi) & 1;
                /* Big slots: cut small by the call in two orders, whole in two;
                 * small ones: once cut to 3/4 of the slot. */
                size_t seg = slot > 2048 ? (order < 2 ? 100 : 0) : (3 == order ? 48 : 0);
                int k = split_specs(specs, n, slot, seg, order);
                if (slot > 2048 && order >= 2) {
                    k += split_big_specs(specs + k, n, slot);
                }
                snprintf(what, sizeof(what), "split n %d slots %d slot %zu seg %zu%s", n,
                         geo[gi].slots, slot, seg, preempt ? " preempt" : "");
                world_preempt(w, preempt);
                run_split_specs(w, specs, k, order, what);
            }
            if (slot > 2048) {
                CHECK(w->nic[0].base.slot_bytes >= 2 * 2048, "segments of one chunk only");
                int k = split_big_specs(specs, n, slot);
                for (int i = 0; i < k; ++i) {
                    snprintf(what, sizeof(what), "split big n %d slot %zu call %d", n, slot, i);
                    world_preempt(w, i & 1);
                    run_split_specs(w, &specs[i], 1, ORD_RANDOM, what);
                }
            }
            /* Split, exchange and tree programs of every kind on the same streams;
             * half of the allreduces split. */
            for (int i = 0; i < 50; ++i) {
                kind_t kind = (kind_t) (rng() % K_NKINDS);
                specs[i] = (spec_t) {
                    .kind = kind,
                    .root = (int) (rng() % (uint64_t) n),
                    .pset = rng() & 1 ? 3 : (int) (rng() % 3),
                    .inplace = (int) (rng() & 1),
                    .count = counts[rng() % 7],
                    .tag = next_tag++,
                    .seg = segs[rng() % 6],
                };
            }
            snprintf(what, sizeof(what), "split mixed50 n %d slots %d slot %zu", n,
                     geo[gi].slots, slot);
            world_preempt(w, (int) (gi & 1));
            run_specs(w, specs, 50, (int) (gi % ORD_COUNT), what);
            world_close(w);
        }
    }
    CHECK(pre.fired - fired > 1000, "only %ld preemptions", pre.fired - fired);
    /* Not vacuous: many split calls, many with a partial last round, some with
     * fewer segments than ranks. */
    CHECK(stats.split_calls - calls > 5000 && stats.split_partial - partial > 2000
              && stats.split_small - small > 500,
          "split calls %ld, partial last round %ld, less than a round %ld",
          stats.split_calls - calls, stats.split_partial - partial, stats.split_small - small);
}

/* The same float sums (split, 5 and 8 ranks, partial last rounds, in-place and
 * not) stepped in every order, with and without preemption: every rank of every
 * run holds the same bits, rank order's. Not vacuous: an owner combining its own
 * contribution first, or in reverse rank order, would give other bits. */
static void test_sim_split_float(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0, 0 };
    for (int n = 5; n <= 8; n += 3) {
        world_t *w = world_open(n, 2, 64, &pk, &pk);
        if (NULL == w) {
            continue;
        }
        uint32_t tag = next_tag++;
        size_t count = count_of(3 * (size_t) n + 2, 16, tag);
        call_t calls[2 * ORD_COUNT];
        int ncalls = 0;
        for (int order = 0; order < ORD_COUNT; ++order) {
            for (int preempt = 0; preempt < 2; ++preempt) {
                spec_t s = { K_SUM_F32, 0, 3, (order + preempt) & 1, count, tag, 0 };
                call_t *c = &calls[ncalls++];
                call_init(w, c, &s);
                world_preempt(w, preempt);
                sim_run(w, c, 1, order, 0, "split float");
            }
        }
        world_preempt(w, 0);
        int same = 0;
        for (int i = 0; i < ncalls; ++i) {
            for (int r = 0; r < n; ++r) {
                same += 0 == memcmp(calls[i].recv[r], calls[0].recv[0], count * 4);
            }
        }
        CHECK(same == ncalls * n, "split float n %d: %d of %d results the same bits", n, same,
              ncalls * n);
        CHECK(0 == memcmp(calls[0].recv[0], calls[0].expect, count * 4),
              "split float n %d: not rank order's", n);
        int own_first = 0, reverse = 0;
        for (size_t i = 0; i < count; ++i) {
            int owner = (int) ((i / 16) % (size_t) n);
            float own = in_f32(owner, tag, i), rev = in_f32(n - 1, tag, i), got;
            for (int r = 0; r < n; ++r) {
                own = r == owner ? own : own + in_f32(r, tag, i);
            }
            for (int r = n - 2; r >= 0; --r) {
                rev = rev + in_f32(r, tag, i);
            }
            memcpy(&got, calls[0].recv[0] + 4 * i, 4);
            own_first += 0 != memcmp(&own, &got, 4);
            reverse += 0 != memcmp(&rev, &got, 4);
        }
        CHECK(own_first > 5 && reverse > 20, "split float n %d: order-sensitive elements: "
              "own first %d, reverse %d", n, own_first, reverse);
        for (int i = 0; i < ncalls; ++i) {
            call_free(w, &calls[i]);
        }
        world_close(w);
    }
}

/* Split calls with a rank missing or stalled (3 ranks, one slot, 16 int32 per
 * segment), after warm-up calls of every program on the same streams:
 *   - count 0 is a barrier: with any rank missing nobody completes; owner 0 waits
 *     for the missing contribution (DATA, channel 0), the others for owner 0's
 *     result (DATA, channel 1);
 *   - 3 segments (one round), rank 2 stepped once (its puts) and then stalled:
 *     ranks 0 and 1 finish segments 0 and 1 and wait for owner 2's result (DATA,
 *     channel 1); segment 2 of their results stays unwritten;
 *   - 6 segments (two rounds), in-place, rank 2 stalled likewise: ranks 0 and 1
 *     cannot put their round-1 part of segment 5 to rank 2, whose slot still holds
 *     round 0's (CREDIT, channel 0); segments 0 and 1 hold results, the rest
 *     still the inputs.
 * Then the stalled rank runs and every call completes. */
static void test_sim_split_blocked(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0, 0 };
    const int n = 3;
    world_t *w = world_open(n, 1, 64, &pk, &pk);
    if (NULL == w) {
        return;
    }
    uint32_t t0 = next_tag;
    next_tag += 5;
    spec_t warm[5] = {
        { K_SUM_I32, 0, 3, 0, 100, t0 + 0, 0 },
        { K_SUM_I32, 0, 0, 1, 50, t0 + 1, 0 },
        { K_BCAST, 2, 0, 0, 200, t0 + 2, 0 },
        { K_SUM_F32, 0, 2, 0, 40, t0 + 3, 0 },
        { K_MAX_F64, 0, 3, 1, 33, t0 + 4, 0 },
    };
    run_specs(w, warm, 5, ORD_RANDOM, "split blocked warm-up");
    int peer = -1, cnt = -1;
    uint64_t have = 0;
    int64_t need = 0;
    for (int missing = 0; missing < n; ++missing) {
        spec_t s = { K_SUM_I32, 0, 3, 0, 0, next_tag++, 0 };
        call_t c;
        call_init(w, &c, &s);
        unsigned mask = 0;
        for (int r = 0; r < n; ++r) {
            if (r != missing) {
                call_post(w, &c, r);
                mask |= 1u << r;
            }
        }
        int done = 0, blame = 0;
        for (int round = 0; round < 50; ++round) {
            for (int r = 0; r < n; ++r) {
                done += r != missing && ofl_engine_progress(&w->inst[r]);
            }
        }
        for (int r = 0; r < n; ++r) {
            int b = r != missing
                    && 1 == ofl_engine_blocker(&w->inst[r], &peer, &cnt, &have, &need)
                    && (int64_t) have < need;
            if (0 == r) {
                blame += b && peer == missing && OFL_CNT_DATA * NCH + 0 == cnt;
            } else {
                blame += b && peer == 0 && OFL_CNT_DATA * NCH + 1 == cnt;
            }
        }
        CHECK(0 == done, "empty split completed %d times without rank %d", done, missing);
        CHECK(n - 1 == blame, "empty split without rank %d: %d ranks blame right", missing,
              blame);
        sim_run(w, &c, 1, ORD_RANDOM, mask, "empty split, last rank");
        call_free(w, &c);
    }

    for (int rounds = 1; rounds <= 2; ++rounds) {
        size_t nseg = 3 * (size_t) rounds;
        spec_t s = { K_SUM_I32, 0, 3, 2 == rounds, count_of(nseg, 16, next_tag), next_tag, 0 };
        next_tag++;
        call_t c;
        call_init(w, &c, &s);
        for (int r = 0; r < n; ++r) {
            call_post(w, &c, r);
        }
        CHECK(0 == ofl_engine_progress(&w->inst[2]), "rank 2 done alone");
        int done = 0;
        for (int round = 0; round < 50; ++round) {
            done += ofl_engine_progress(&w->inst[0]);
            done += ofl_engine_progress(&w->inst[1]);
        }
        CHECK(0 == done, "split of %zu segments completed without rank 2", nseg);
        int blame = 0, partial = 0;
        int want_cnt = 1 == rounds ? OFL_CNT_DATA * NCH + 1 : OFL_CNT_CREDIT * NCH + 0;
        uint32_t orig[6 * 16];
        for (int r = 0; r < 2; ++r) {
            blame += 1 == ofl_engine_blocker(&w->inst[r], &peer, &cnt, &have, &need)
                     && 2 == peer && want_cnt == cnt && (int64_t) have < need;
            /* Results in segments 0 and 1; the rest untouched (the input, in
             * place; the sentinel otherwise). */
            fill_input(K_SUM_I32, r, s.tag, s.count, (uint8_t *) orig);
            size_t bytes = s.count * 4;
            partial += 0 == memcmp(c.recv[r], c.expect, 2 * 64)
                       && (s.inplace ? 0 == memcmp(c.recv[r] + 128, (uint8_t *) orig + 128,
                                                   bytes - 128)
                                     : all_sentinel(c.recv[r] + 128, bytes - 128));
        }
        CHECK(2 == blame, "split of %zu segments: %d ranks blame rank 2 (%d/%d)", nseg, blame,
              peer, cnt);
        CHECK(2 == partial, "split of %zu segments: %d ranks with exactly segments 0, 1 done",
              nseg, partial);
        sim_run(w, &c, 1, ORD_FORWARD, 0x7u, "split, stalled rank");
        call_free(w, &c);
    }
    world_close(w);
}

/* ---- by-reference bcast ---------------------------------------------------------- */

/* By-reference bcasts (psets 4 and 5, alternating with root and order) from every
 * root of an n-rank world of `slot`-byte slots: counts 0, 1, 7; 7 bytes in 3-byte
 * segments; one segment of 4 slots and a bit (seg_bytes 0: the message), or of 2
 * slots under a seg_bytes of 3 slots; several segments of a slot, of 100 bytes and
 * of 3/4 of a slot, each with a partial last one. Returns the number of specs. */
static int byref_specs(spec_t *specs, int n, size_t slot, int order)
{
    const struct {
        size_t count, seg;
    } cs[] = { { 0, 0 },
               { 1, 0 },
               { 7, 0 },
               { 7, 3 },
               { 4 * slot + 21, 0 },
               { 2 * slot, 3 * slot },
               { 3 * slot + 13, slot },
               { 450, 100 },
               { 5 * slot + 1, 3 * slot / 4 } };
    int k = 0;
    for (int root = 0; root < n; ++root) {
        for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); ++i) {
            specs[k++] = (spec_t) { K_BCAST, root, PS_BYREF + ((root + order + (int) i) & 1), 0,
                                    cs[i].count, next_tag++, cs[i].seg };
        }
    }
    return k;
}

/* By-reference bcasts in every stepping order, with and without preemption, at
 * sizes 1, 2, 3, 5, 8 and one or two 64-byte slots per stream; every result, the
 * root's untouched buffer, the byte past every buffer and the fence (a call
 * completes only after every child has read) checked by sim_run; then 50 calls
 * mixing by-reference bcasts with every other kind and program (tree, exchange,
 * split, by-value bcast) on the same streams, segments of any size. */
static void test_sim_byref(void)
{
    static const int sizes[] = { 1, 2, 3, 5, 8 };
    static const int slots[] = { 1, 2 };
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KNOMIAL, 2, 1, 0, 0 };
    static const ofl_sched_params_t pn = { OFL_TREE_KNOMIAL, 3, OFL_TREE_KARY, 3, 1, 0, 0 };
    static const size_t counts[] = { 0, 1, 7, 33, 100, 1000, 3000 };
    const size_t slot = 64;
    spec_t specs[9 * SIM_MAX];
    long fired = pre.fired, calls = stats.byref_calls, big = stats.byref_big;
    long partial = stats.byref_partial, fenced = stats.byref_fenced;
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); ++si) {
        for (size_t gi = 0; gi < sizeof(slots) / sizeof(slots[0]); ++gi) {
            int n = sizes[si];
            world_t *w = world_open(n, slots[gi], slot, &pk, &pn);
            if (NULL == w) {
                continue;
            }
            CHECK(slot == w->nic[0].base.slot_bytes, "slot %llu",
                  (unsigned long long) w->nic[0].base.slot_bytes);
            char what[96];
            for (int order = 0; order < ORD_COUNT; ++order) {
                int preempt = (order + (int) gi) & 1;
                int k = byref_specs(specs, n, slot, order);
                snprintf(what, sizeof(what), "byref n %d slots %d%s", n, slots[gi],
                         preempt ? " preempt" : "");
                world_preempt(w, preempt);
                run_specs(w, specs, k, order, what);
            }
            const size_t segs[] = { 0, 0, 48, 100, 3 * slot / 4, 2 * slot };
            for (int i = 0; i < 50; ++i) {
                kind_t kind = (kind_t) (rng() % K_NKINDS);
                int ps = (int) (rng() % NPSETS);
                if (K_BCAST == kind && (rng() & 1)) {
                    ps = PS_BYREF + (int) (rng() & 1);
                }
                specs[i] = (spec_t) {
                    .kind = kind,
                    .root = (int) (rng() % (uint64_t) n),
                    .pset = ps,
                    .inplace = (int) (rng() & 1),
                    .count = counts[rng() % 7],
                    .tag = next_tag++,
                    .seg = segs[rng() % 6],
                };
            }
            snprintf(what, sizeof(what), "byref mixed50 n %d slots %d", n, slots[gi]);
            world_preempt(w, (int) ((si + gi) & 1));
            run_specs(w, specs, 50, (int) ((si + gi) % ORD_COUNT), what);
            world_close(w);
        }
    }
    CHECK(pre.fired - fired > 1000, "only %ld preemptions", pre.fired - fired);
    /* Not vacuous: many calls, many of one segment larger than a slot (which a
     * by-value item could not carry), many with a partial last segment; the
     * fence was checked at many completions. */
    CHECK(stats.byref_calls - calls > 1000 && stats.byref_big - big > 200
              && stats.byref_partial - partial > 500 && stats.byref_fenced - fenced > 1000,
          "byref calls %ld, one big segment %ld, partial last segment %ld, fences checked %ld",
          stats.byref_calls - calls, stats.byref_big - big, stats.byref_partial - partial,
          stats.byref_fenced - fenced);
}

/* The ranks of a by-reference bcast from root 0 on 5 ranks (binary tree: 0 -> 1 2,
 * 1 -> 3 4), posted first everywhere but the root, stepped by hand:
 *   one segment (seg_bytes 0, 300 bytes > the 64-byte slot): the root, progressed
 *   alone, publishes and stays incomplete waiting for a child's read (CREDIT,
 *   channel 1), nothing written anywhere; rank 1 reads and stays incomplete (3 and
 *   4 have not read it); the root still incomplete (2 has not read); 3 and 4 read
 *   and complete, then 1 completes; the root still incomplete; 2 reads and
 *   completes; only now the root completes, its buffer unchanged;
 *   five segments (64-byte seg_bytes, the last 44 bytes), one slot per stream: the
 *   root, progressed alone, publishes segment 0 only; the others, progressed
 *   without it, get exactly segment 0 and stay incomplete; then all finish. */
static void test_sim_byref_fence(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0, 0 };
    const int n = 5;
    world_t *w = world_open(n, 1, 64, &pk, &pk);
    if (NULL == w) {
        return;
    }
    ofl_tree_node_t t0, t1;
    ofl_tree_node(OFL_TREE_KARY, 2, n, 0, 0, &t0);
    ofl_tree_node(OFL_TREE_KARY, 2, n, 0, 1, &t1);
    CHECK(2 == t0.nchildren && 1 == t0.children[0] && 2 == t0.children[1]
              && 2 == t1.nchildren && 3 == t1.children[0] && 4 == t1.children[1],
          "not the binary tree assumed");
    uint32_t tg = next_tag;
    next_tag += 4;
    spec_t warm[4] = {
        { K_SUM_I32, 0, 0, 0, 100, tg + 0, 0 },
        { K_BCAST, 3, PS_BYREF, 0, 200, tg + 1, 0 },
        { K_BCAST, 0, 0, 0, 100, tg + 2, 0 },
        { K_SUM_I32, 0, 3, 1, 100, tg + 3, 0 },
    };
    run_specs(w, warm, 4, ORD_RANDOM, "byref fence warm-up");
    int peer = -1, cnt = -1;
    uint64_t have = 0;
    int64_t need = 0;

    spec_t s = { K_BCAST, 0, PS_BYREF, 0, 300, next_tag++, 0 };
    call_t c;
    call_init(w, &c, &s);
    for (int r = 1; r < n; ++r) {
        call_post(w, &c, r);
    }
    call_post(w, &c, 0);
    CHECK(1 == w->inst[0].nseg && 300 > w->nic[0].base.slot_bytes, "one segment: %u",
          w->inst[0].nseg);
    int done = 0;
    for (int i = 0; i < 20; ++i) {
        done += ofl_engine_progress(&w->inst[0]);
    }
    int clean = 0;
    for (int r = 1; r < n; ++r) {
        clean += all_sentinel(c.recv[r], 301);
    }
    CHECK(0 == done && n - 1 == clean, "root alone: done %d, %d buffers clean", done, clean);
    CHECK(1 == ofl_engine_blocker(&w->inst[0], &peer, &cnt, &have, &need)
              && (1 == peer || 2 == peer) && OFL_CNT_CREDIT * NCH + 1 == cnt
              && (int64_t) have < need, "root alone blames %d/%d", peer, cnt);
    /* 1 reads; its own children have not read it. */
    for (int i = 0; i < 20; ++i) {
        done += ofl_engine_progress(&w->inst[1]);
    }
    CHECK(0 == done && 0 == memcmp(c.recv[1], c.expect, 300) && SENTINEL == c.recv[1][300],
          "rank 1 done %d or did not read", done);
    CHECK(1 == ofl_engine_blocker(&w->inst[1], &peer, &cnt, &have, &need)
              && (3 == peer || 4 == peer) && OFL_CNT_CREDIT * NCH + 1 == cnt,
          "rank 1 blames %d/%d", peer, cnt);
    CHECK(0 == ofl_engine_progress(&w->inst[0]), "root complete with child 2 unread");
    CHECK(1 == ofl_engine_blocker(&w->inst[0], &peer, &cnt, &have, &need) && 2 == peer
              && OFL_CNT_CREDIT * NCH + 1 == cnt, "root then blames %d/%d", peer, cnt);
    CHECK(1 == ofl_engine_progress(&w->inst[3]) && 0 == ofl_engine_progress(&w->inst[1])
              && 1 == ofl_engine_progress(&w->inst[4]) && 1 == ofl_engine_progress(&w->inst[1]),
          "rank 1 completes exactly when 3 and 4 have read");
    CHECK(0 == ofl_engine_progress(&w->inst[0]), "root complete with child 2 unread");
    CHECK(1 == ofl_engine_progress(&w->inst[2]), "leaf 2 did not complete");
    CHECK(0 == memcmp(c.recv[0], c.expect, 300), "root buffer changed");
    CHECK(1 == ofl_engine_progress(&w->inst[0]), "root incomplete after every read");
    sim_run(w, &c, 1, ORD_FORWARD, 0x1fu, "byref fence, one segment");
    call_free(w, &c);

    s = (spec_t) { K_BCAST, 0, PS_BYREF, 0, 300, next_tag++, 64 };
    call_init(w, &c, &s);
    for (int r = 1; r < n; ++r) {
        call_post(w, &c, r);
    }
    call_post(w, &c, 0);
    CHECK(5 == w->inst[0].nseg, "five segments: %u", w->inst[0].nseg);
    done = 0;
    for (int i = 0; i < 20; ++i) {
        done += ofl_engine_progress(&w->inst[0]);
    }
    for (int i = 0; i < 20; ++i) {
        for (int r = 1; r < n; ++r) {
            done += ofl_engine_progress(&w->inst[r]);
        }
    }
    int seg0 = 0;
    for (int r = 1; r < n; ++r) {
        seg0 += 0 == memcmp(c.recv[r], c.expect, 64) && all_sentinel(c.recv[r] + 64, 237);
    }
    CHECK(0 == done && n - 1 == seg0, "without the root: done %d, %d with segment 0 only",
          done, seg0);
    CHECK(1 == ofl_engine_blocker(&w->inst[3], &peer, &cnt, &have, &need) && 1 == peer
              && OFL_CNT_DATA * NCH + 1 == cnt, "leaf 3 blames %d/%d", peer, cnt);
    CHECK(0 == memcmp(c.recv[0], c.expect, 300), "root buffer changed");
    sim_run(w, &c, 1, ORD_REVERSE, 0x1fu, "byref fence, five segments");
    call_free(w, &c);
    world_close(w);
}

/* ---- failure of a by-reference read --------------------------------------- */

/* A by-reference bcast whose data cannot be read (root 0 of 3 ranks, binary tree:
 * both others read from it): the root's buffer is a bogus pointer, or one whose
 * segment runs from readable bytes into a page without access. The root never
 * touches its buffer and waits for the reads (incomplete, no crash); a reader's
 * progress returns -1 with inst.error < 0, again on every later call, leaving its
 * buffer as it was for the bogus pointer, and even once the page is readable
 * again (a failed call stays failed); the other reader's ofl_engine_wait
 * returns OFL_WAIT_FAILED with inst.error < 0. Runs on a fresh world each time:
 * the failed streams are not used again. Before that, the same call with a good
 * buffer works on the same kind of world. */
static void test_byref_failure(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0, 0 };
    long pg = sysconf(_SC_PAGESIZE);
    uint8_t *map = mmap(NULL, (size_t) (2 * pg), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(MAP_FAILED != map, "mmap");
    if (MAP_FAILED == map) {
        return;
    }
    memset(map, 0x42, (size_t) pg);
    CHECK(0 == mprotect(map + pg, (size_t) pg, PROT_NONE), "mprotect");
    void *bad_root[2] = { (void *) 16, map + pg - 100 };
    for (int v = 0; v < 3; ++v) {
        world_t *w = world_open(3, 1, 64, &pk, &pk);
        if (NULL == w) {
            continue;
        }
        /* v == 2: the readable bytes alone (the last one the sentinel behind the
         * buffer), as a control. */
        spec_t s = { K_BCAST, 0, PS_BYREF, 0, 2 == v ? 99 : 300, next_tag++, 0 };
        call_t c;
        call_init(w, &c, &s);
        uint8_t *good = c.recv[0];
        c.recv[0] = 2 == v ? map + pg - 100 : bad_root[v];
        if (2 == v) {
            memset(c.expect, 0x42, 99);
            map[pg - 1] = SENTINEL;
        }
        for (int r = 0; r < 3; ++r) {
            call_post(w, &c, r);
        }
        if (2 == v) {
            sim_run(w, &c, 1, ORD_RANDOM, 0x7u, "byref read up to a guard page");
            c.recv[0] = good;
            call_free(w, &c);
            world_close(w);
            continue;
        }
        int r0 = ofl_engine_progress(&w->inst[0]);
        int r1 = ofl_engine_progress(&w->inst[1]);
        int e1 = w->inst[1].error;
        int r1again = ofl_engine_progress(&w->inst[1]);
        CHECK(0 == r0 && -1 == r1 && e1 < 0 && -1 == r1again && e1 == w->inst[1].error,
              "bad reference %d: root %d, reader %d (error %d), again %d", v, r0, r1, e1,
              r1again);
        CHECK(1 == v || all_sentinel(c.recv[1], 301), "failed read wrote the buffer");
        if (1 == v) {
            /* The memory becomes readable: a failed call stays failed, reads no more. */
            uint8_t before[301];
            memcpy(before, c.recv[1], sizeof(before));
            CHECK(0 == mprotect(map + pg, (size_t) pg, PROT_READ), "mprotect");
            CHECK(-1 == ofl_engine_progress(&w->inst[1]) && e1 == w->inst[1].error
                      && 0 == memcmp(before, c.recv[1], sizeof(before)),
                  "a failed call resumed");
            CHECK(0 == mprotect(map + pg, (size_t) pg, PROT_NONE), "mprotect");
        }
        ofl_wait_opts_t o = { NULL, NULL, 64, 5.0, 0.01 };
        int peer = -1;
        /* (the failure, not the 5 s watchdog's timeout, ends the wait) */
        ofl_wait_status_t st = ofl_engine_wait(&w->inst[2], &o, &peer);
        CHECK(OFL_WAIT_FAILED == st && w->inst[2].error < 0,
              "bad reference %d: wait status %d error %d", v, (int) st, w->inst[2].error);
        CHECK(OFL_WAIT_FAILED == ofl_engine_wait(&w->inst[1], &o, &peer),
              "a failed call waited on");
        int done = 0;
        for (int i = 0; i < 20; ++i) {
            done += ofl_engine_progress(&w->inst[0]);
        }
        CHECK(0 == done && 0 == w->inst[0].error, "root completed without a read (%d)", done);
        c.recv[0] = good;
        call_free(w, &c);
        world_close(w);
    }
    munmap(map, (size_t) (2 * pg));
}


int main(void)
{
    unit_timeout("test_engine", 60);
    double t0 = now_s();
    test_sim_matrix();
    test_sim_mixed();
    test_sim_exchange();
    test_sim_exchange_barrier();
    test_sim_thresholds();
    test_sim_float();
    test_sim_split();
    test_sim_split_float();
    test_sim_split_blocked();
    test_sim_byref();
    test_sim_byref_fence();
    /* The engine's queue rule held after every step of every simulated call; it
     * did hold triggered descriptors back (in-place exchange: the combine of a
     * segment may trigger before its put); and every call was cut into the
     * segments engine.h defines. */
    CHECK(0 == stats.rule_broken, "queue rule broken %ld times", stats.rule_broken);
    CHECK(stats.rule_held > 0, "the queue rule never held a descriptor back");
    CHECK(0 == stats.bad_nseg, "%ld posts with an unexpected segment count", stats.bad_nseg);
    double t1 = now_s();
    test_byref_failure();
    double t2 = now_s();
    check_no_leftover_shm();
    printf("engine: sim %.2f s, failure %.2f s\n", t1 - t0, t2 - t1);
    return unit_report("engine");
}
