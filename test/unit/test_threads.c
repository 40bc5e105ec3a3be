/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Unit test of the descriptor engine (src/engine) over the software NIC with one
 * thread per rank, without MPI, and of how it handles failures.
 *
 *   threads   ofl_engine_wait, thousands of calls of tree, exchange and split
 *             programs and by-reference bcasts (whose buffers are reused the
 *             moment a call completes), every result compared with a reference
 *             computed here from the inputs;
 *   failure   poison, watchdog and a dead (forked) peer.
 *
 * A failed by-reference read is tested by test_engine, on its simulated ranks.
 */
#include "alu/alu.h"
#include "engine/engine.h"
#include "engine_util.h"
#include "nic/softnic.h"
#include "sched/sched.h"
#include "tree/tree.h"
#include "unit.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- c) threads ------------------------------------------------------------------ */

enum { THR_TREE, THR_EXCHANGE, THR_SPLIT, THR_BYREF, THR_NMODES };

typedef struct {
    int rank, n, iters, mode;
    ofl_softnic_t nic;
    ofl_sched_params_t params;
    long bad, calls, waits_bad;
    char first[160];
    uint64_t in[8 * NCH], out[8 * NCH];   /* the stream sequences at the end */
} thr_t;

/* What one rank's thread calls with: its edges, a program of every shape the modes mix
 * (tree, exchange and split allreduces, tree reduces, by-value and by-reference bcasts
 * from every root), the kernels and the buffers. */
typedef struct {
    thr_t *t;
    ofl_edges_t e;
    ofl_program_t ar, ex, sp, rd[8], bc[8], br[8];
    ofl_alu_fn isum, fsum, dmax;
    int64_t *send, *recv;
    uint8_t *bval, *bref;   /* by-value and by-reference bcasts' buffers */
} thr_run_t;

/* The largest int64 call (split's in-place sum on 8 ranks), bcast by value and by
 * reference, and float and double calls. */
#define THR_MAX_COUNT (9 * 512 + 300)
#define THR_MAX_BVAL 3001
#define THR_MAX_BREF 5000
#define THR_MAX_FP 37

static const ofl_wait_opts_t wait_opts = { NULL, NULL, 64, 0.0, 1.0 };

static int64_t thr_val(int rank, int it, size_t j)
{
    return (int64_t) mix3((uint64_t) rank, (uint64_t) it, j);
}

static void thr_fail(thr_t *t, const char *what, int it)
{
    if (0 == t->bad++) {
        snprintf(t->first, sizeof(t->first), "rank %d: %s at iteration %d", t->rank, what, it);
    }
}

static void thr_call(thr_t *t, const ofl_program_t *p, ofl_edges_t *e, ofl_call_t *oc, int it)
{
    ofl_inst_t inst;
    ofl_engine_post(&inst, p, &t->nic.base, e, oc);
    int peer = -1;
    if (OFL_WAIT_OK != ofl_engine_wait(&inst, &wait_opts, &peer)) {
        t->waits_bad++;
        thr_fail(t, "wait failed", it);
    }
    t->calls++;
}

#define THR_INPLACE 1   /* the input in the receive buffer */
#define THR_GUARD 2     /* a word past the result that must stay as it was */

/* An int64 sum of `count` inputs thr_val(rank, tag, j) through p (an allreduce, or a
 * reduce to `root`: only the root has a result to check), in segments of seg_bytes;
 * a failure is named `what`. */
static void call_sum(thr_run_t *x, const ofl_program_t *p, const char *what, int it, int tag,
                     size_t count, size_t seg_bytes, int flags, int root)
{
    thr_t *t = x->t;
    int inplace = flags & THR_INPLACE;
    for (size_t j = 0; j < count; ++j) {
        x->send[j] = thr_val(t->rank, tag, j);
        x->recv[j] = inplace ? x->send[j] : -1;
    }
    x->recv[count] = -7;
    ofl_call_t oc = { .send = inplace ? (void *) x->recv : (void *) x->send, .recv = x->recv,
                      .fn = x->isum, .elem = 8, .count = count, .seg_bytes = seg_bytes };
    thr_call(t, p, &x->e, &oc, it);
    size_t wrong = 0;
    for (size_t j = 0; j < count && (root < 0 || t->rank == root); ++j) {
        uint64_t want = 0;
        for (int r = 0; r < t->n; ++r) {
            want += (uint64_t) thr_val(r, tag, j);
        }
        wrong += (uint64_t) x->recv[j] != want;
    }
    wrong += (flags & THR_GUARD) && -7 != x->recv[count];
    if (wrong) {
        thr_fail(t, what, it);
    }
}

/* A float sum of `count` elements: the bits of the sum in rank order. */
static void call_fsum(thr_run_t *x, const ofl_program_t *p, const char *what, int it,
                      size_t count, size_t seg_bytes, int inplace)
{
    thr_t *t = x->t;
    float fs[THR_MAX_FP], fr[THR_MAX_FP];
    for (size_t j = 0; j < count; ++j) {
        fs[j] = in_f32(t->rank, (uint32_t) it, j);
        fr[j] = inplace ? fs[j] : -1.0f;
    }
    ofl_call_t oc = { .send = inplace ? (void *) fr : (void *) fs, .recv = fr, .fn = x->fsum,
                      .elem = 4, .count = count, .seg_bytes = seg_bytes };
    thr_call(t, p, &x->e, &oc, it);
    size_t wrong = 0;
    for (size_t j = 0; j < count; ++j) {
        float want = rank_sum_f32(t->n, (uint32_t) it, j);
        wrong += 0 != memcmp(&want, &fr[j], sizeof(float));
    }
    if (wrong) {
        thr_fail(t, what, it);
    }
}

/* A double allreduce (MAX) of `count` elements: the reference from the inputs. */
static double max_f64_ref(int n, uint32_t tag, size_t j)
{
    double m = in_f64(0, tag, j);
    for (int r = 1; r < n; ++r) {
        double v = in_f64(r, tag, j);
        m = v > m ? v : m;
    }
    return m;
}

/* A double MAX of `count` elements. */
static void call_dmax(thr_run_t *x, const ofl_program_t *p, const char *what, int it,
                      size_t count, size_t seg_bytes, int inplace)
{
    thr_t *t = x->t;
    double ds[THR_MAX_FP], dr[THR_MAX_FP];
    for (size_t j = 0; j < count; ++j) {
        ds[j] = in_f64(t->rank, (uint32_t) it, j);
        dr[j] = inplace ? ds[j] : 0.0;
    }
    ofl_call_t oc = { .send = inplace ? (void *) dr : (void *) ds, .recv = dr, .fn = x->dmax,
                      .elem = 8, .count = count, .seg_bytes = seg_bytes };
    thr_call(t, p, &x->e, &oc, it);
    size_t wrong = 0;
    for (size_t j = 0; j < count; ++j) {
        wrong += max_f64_ref(t->n, (uint32_t) it, j) != dr[j];
    }
    if (wrong) {
        thr_fail(t, what, it);
    }
}

/* A bcast of `len` bytes pattern(root, tag, j) from root through p (bc or br) into buf,
 * in segments of seg_bytes; with THR_GUARD a byte past them must stay SENTINEL. */
static void call_bcast(thr_run_t *x, const ofl_program_t *p, uint8_t *buf, const char *what,
                       int it, int root, uint32_t tag, size_t len, size_t seg_bytes, int flags)
{
    thr_t *t = x->t;
    for (size_t j = 0; j < len; ++j) {
        buf[j] = t->rank == root ? pattern(root, tag, j) : SENTINEL;
    }
    buf[len] = SENTINEL;
    ofl_call_t ob = { .recv = buf, .elem = 1, .count = len, .seg_bytes = seg_bytes };
    thr_call(t, p, &x->e, &ob, it);
    size_t wrong = 0;
    for (size_t j = 0; j < len; ++j) {
        wrong += buf[j] != pattern(root, tag, j);
    }
    wrong += (flags & THR_GUARD) && SENTINEL != buf[len];
    if (wrong) {
        thr_fail(t, what, it);
    }
}

/* THR_TREE: small tree allreduces of 1..3 int64, every 4th in place; then (iterations
 * iters .. iters + 5) large calls, hundreds of segments through 1..4 slots per edge:
 * an allreduce of 4000 int64 (every other in place), a bcast of 3001 bytes and a
 * reduce of 4000 int64, their roots moving on. */
static void step_tree(thr_run_t *x, int it)
{
    thr_t *t = x->t;
    if (it < t->iters) {
        call_sum(x, &x->ar, "small allreduce", it, it, 1 + (size_t) (it % 3), 0,
                 0 == it % 4 ? THR_INPLACE : 0, -1);
        return;
    }
    int k = it - t->iters, root = k % t->n, rroot = (k + 1) % t->n;
    call_sum(x, &x->ar, "large allreduce", it, 100000 + k, 4000, 0, k & 1 ? THR_INPLACE : 0,
             -1);
    call_bcast(x, &x->bc[root], x->bval, "large bcast", it, root, (uint32_t) k, THR_MAX_BVAL,
               0, 0);
    call_sum(x, &x->rd[rroot], "large reduce", it, 100000 + k, 4000, 0, 0, rroot);
}

/* THR_EXCHANGE: exchange allreduces interleaved with tree allreduces and bcasts on the
 * same edges: int64 sums of 1..3 elements (every 4th in place), every 10th a float sum
 * whose bits must be rank order's (every 20th in place), every 50th an in-place sum of
 * 2000 int64 (4 KiB segments: two combine chunks). Then every 3rd iteration a tree
 * allreduce of one int64, the next one a bcast of 1..40 bytes. */
static void step_exchange(thr_run_t *x, int it)
{
    if (25 == it % 50) {
        call_sum(x, &x->ex, "exchange allreduce", it, it, 2000, 0, THR_INPLACE, -1);
    } else if (9 == it % 10) {
        call_fsum(x, &x->ex, "exchange allreduce", it, 5, 0, 19 == it % 20);
    } else {
        call_sum(x, &x->ex, "exchange allreduce", it, it, 1 + (size_t) (it % 3), 0,
                 0 == it % 4 ? THR_INPLACE : 0, -1);
    }
    if (0 == it % 3) {
        call_sum(x, &x->ar, "tree allreduce between exchanges", it, -it, 1, 0,
                 it & 1 ? THR_INPLACE : 0, -1);
    } else if (1 == it % 3) {
        int root = it % x->t->n;
        call_bcast(x, &x->bc[root], x->bval, "bcast between exchanges", it, root,
                   (uint32_t) it, 1 + (size_t) (it % 40), 0, 0);
    }
}

/* THR_SPLIT: split allreduces interleaved with exchange and tree allreduces and bcasts
 * on the same streams. Each iteration makes one split call, in turn: an int64 sum in
 * 64-byte segments (seg_bytes) of a count that ends in a partial round (or a round of
 * its own, or less than one), every other one in place; a float sum of 37 elements in
 * 32-byte segments whose bits must be rank order's (every other in place); a double
 * max of 20 in 24-byte segments; and every 25th an in-place int64 sum in slot-size
 * (4 KiB) segments, two combine chunks each, size + 2 segments. Then every 2nd
 * iteration an exchange sum, every 3rd a tree allreduce, every 5th a tree bcast. */
static void step_split(thr_run_t *x, int it)
{
    int n = x->t->n, inplace = (it / 4) & 1;
    const size_t counts[] = { 1, 7, 8 * (size_t) n - 3, 8 * (size_t) n + 13,
                              16 * (size_t) n + 3, 100 };
    if (24 == it % 25) {
        call_sum(x, &x->sp, "split allreduce", it, it, (size_t) (n + 1) * 512 + 300, 0,
                 THR_INPLACE, -1);
    } else if (1 == it % 4) {
        call_fsum(x, &x->sp, "split allreduce", it, 37, 32, inplace);
    } else if (3 == it % 4) {
        call_dmax(x, &x->sp, "split allreduce", it, 20, 24, inplace);
    } else {
        call_sum(x, &x->sp, "split allreduce", it, it, counts[(it / 2) % 6], 64,
                 THR_GUARD | (inplace ? THR_INPLACE : 0), -1);
    }
    if (0 == it % 2) {
        call_sum(x, &x->ex, "exchange between splits", it, -it, 1 + (size_t) (it % 3), 0, 0,
                 -1);
    }
    if (0 == it % 3) {
        call_sum(x, &x->ar, "tree allreduce between splits", it, it + 7777, 1, 0, THR_INPLACE,
                 -1);
    }
    if (0 == it % 5) {
        int root = (it / 5) % n;
        call_bcast(x, &x->bc[root], x->bval, "bcast between splits", it, root, (uint32_t) it,
                   1 + (size_t) (it % 40), 0, 0);
    }
}

/* THR_BYREF: by-reference bcasts interleaved with exchange, tree and split allreduces
 * and by-value bcasts on the same streams. Each iteration one by-reference bcast from
 * a root that moves on (it + it / n), of 0 .. 5000 bytes (below, at and above the
 * 256-byte slot) in segments of the message, 100 bytes, a slot or 3000 bytes; the
 * moment it completes, the buffer is overwritten as an application reusing it would:
 * a rank whose call completed before every child had read it hands that child the
 * scribble. Then every 2nd iteration an exchange sum, every 3rd an in-place tree sum,
 * every 4th a by-value bcast of up to 700 bytes (several slots), every 5th a split sum
 * in 64-byte segments. */
static void step_byref(thr_run_t *x, int it)
{
    static const size_t lens[] = { 0, 1, 7, 255, 257, 1000, 2600, THR_MAX_BREF };
    static const size_t segs[] = { 0, 100, 256, 3000 };
    const size_t nl = sizeof(lens) / sizeof(lens[0]);
    int n = x->t->n, root = (it + it / n) % n;
    size_t len = lens[it % nl];
    call_bcast(x, &x->br[root], x->bref, "by-reference bcast", it, root, (uint32_t) it, len,
               segs[(it / nl) % 4], THR_GUARD);
    memset(x->bref, 0x3c, len);
    if (0 == it % 2) {
        call_sum(x, &x->ex, "exchange between by-reference bcasts", it, it,
                 1 + (size_t) (it % 3), 0, 0, -1);
    }
    if (0 == it % 3) {
        call_sum(x, &x->ar, "tree allreduce between by-reference bcasts", it, it + 5555, 1, 0,
                 THR_INPLACE, -1);
    }
    if (1 == it % 4) {
        int vroot = (it / 4) % n;
        call_bcast(x, &x->bc[vroot], x->bval, "by-value bcast between by-reference bcasts",
                   it, vroot, (uint32_t) it + 77777, 1 + (size_t) (it * 37 % 700), 0, THR_GUARD);
    }
    if (2 == it % 5) {
        call_sum(x, &x->sp, "split between by-reference bcasts", it, -it,
                 8 * (size_t) n + (size_t) (it % 13), 64, THR_GUARD, -1);
    }
}

/* The calls a rank makes in a mode's `iters` iterations, counted independently of the
 * steps (the tree's 6 large iterations make 3 calls each). */
static long tree_calls(int iters)
{
    return iters + 18;
}

static long exchange_calls(int iters)
{
    return iters + (iters + 2) / 3 + (iters + 1) / 3;
}

static long split_calls(int iters)
{
    return iters + (iters + 1) / 2 + (iters + 2) / 3 + (iters + 4) / 5;
}

static long byref_calls(int iters)
{
    long calls = 0;
    for (int it = 0; it < iters; ++it) {
        calls += 1 + (0 == it % 2) + (0 == it % 3) + (1 == it % 4) + (2 == it % 5);
    }
    return calls;
}

/* Per mode: its slot size, its iterations after `iters`, one iteration, and the calls
 * it makes per rank. THR_TREE and THR_BYREF on 256-byte slots, THR_EXCHANGE and
 * THR_SPLIT on 4 KiB ones (most of split's calls cut smaller by seg_bytes); THR_BYREF's
 * bcast trees of the kind and radix given (the other modes' are binomial). */
static const struct {
    const char *name;
    size_t slot_bytes;
    int extra;
    void (*step)(thr_run_t *x, int it);
    long (*calls)(int iters);
} thr_modes[THR_NMODES] = {
    { "tree", 256, 6, step_tree, tree_calls },
    { "exchange", 4096, 0, step_exchange, exchange_calls },
    { "split", 4096, 0, step_split, split_calls },
    { "byref", 256, 0, step_byref, byref_calls },
};

static void *thr_main(void *arg)
{
    thr_t *t = arg;
    int n = t->n;
    thr_run_t x = { .t = t };
    if (0 != ofl_edges_init(&x.e, n)) {
        thr_fail(t, "edges_init", -1);
        return NULL;
    }
    ofl_sched_params_t px = t->params, ps = t->params, pr = t->params;
    px.shape = OFL_SCHED_EXCHANGE;
    ps.shape = OFL_SCHED_SPLIT;
    pr.byref = 1;
    int ok = 0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, t->rank, n, &t->params, &x.ar);
    ok &= 0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, t->rank, n, &px, &x.ex);
    ok &= 0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, t->rank, n, &ps, &x.sp);
    for (int r = 0; r < n; ++r) {
        ok &= 0 == ofl_sched_compile(OFL_COLL_REDUCE, r, t->rank, n, &t->params, &x.rd[r]);
        ok &= 0 == ofl_sched_compile(OFL_COLL_BCAST, r, t->rank, n, &t->params, &x.bc[r]);
        ok &= 0 == ofl_sched_compile(OFL_COLL_BCAST, r, t->rank, n, &pr, &x.br[r]);
        ok &= 1 == x.br[r].byref && 0 == x.bc[r].byref;
    }
    if (!ok) {
        thr_fail(t, "compile", -1);
        return NULL;
    }
    x.isum = ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT64);
    x.fsum = ofl_alu_lookup(OFL_OP_SUM, OFL_T_FLOAT);
    x.dmax = ofl_alu_lookup(OFL_OP_MAX, OFL_T_DOUBLE);
    x.send = malloc((THR_MAX_COUNT + 1) * sizeof(int64_t));
    x.recv = malloc((THR_MAX_COUNT + 1) * sizeof(int64_t));
    x.bval = malloc(THR_MAX_BVAL + 1);
    x.bref = malloc(THR_MAX_BREF + 1);
    for (int it = 0; it < t->iters + thr_modes[t->mode].extra; ++it) {
        thr_modes[t->mode].step(&x, it);
    }
    free(x.send);
    free(x.recv);
    free(x.bval);
    free(x.bref);
    ofl_program_free(&x.ar);
    ofl_program_free(&x.ex);
    ofl_program_free(&x.sp);
    for (int r = 0; r < n; ++r) {
        ofl_program_free(&x.rd[r]);
        ofl_program_free(&x.bc[r]);
        ofl_program_free(&x.br[r]);
    }
    memcpy(t->in, x.e.in, sizeof(uint64_t) * (size_t) n * NCH);
    memcpy(t->out, x.e.out, sizeof(uint64_t) * (size_t) n * NCH);
    ofl_edges_fini(&x.e);
    return NULL;
}

static void test_threads(int n, int slots, ofl_tree_kind_t kind, int radix, int mode,
                         int iters)
{
    const char *mode_name = thr_modes[mode].name;
    size_t segsize = thr_modes[mode].slot_bytes;
    char name[64];
    shm_name(name, sizeof(name));
    thr_t t[8];
    memset(t, 0, sizeof(t));
    int rc = 0;
    for (int r = 0; r < n; ++r) {
        t[r].rank = r;
        t[r].n = n;
        t[r].iters = iters;
        t[r].mode = mode;
        t[r].params = (ofl_sched_params_t) { kind, radix, OFL_TREE_KNOMIAL, 2, slots, 0, 0 };
        if (THR_BYREF == mode) {
            t[r].params.bcast_kind = kind;
            t[r].params.bcast_radix = radix;
        }
        rc = 0 == r ? ofl_softnic_create(&t[r].nic, name, n, r, slots, segsize)
                    : ofl_softnic_attach(&t[r].nic, name, n, r, slots, segsize);
        CHECK(0 == rc, "threads %d: softnic rank %d: %d", n, r, rc);
        if (0 != rc) {
            break;
        }
    }
    CHECK(0 == ofl_softnic_unlink(name), "unlink");
    if (0 != rc) {
        return;
    }
    pthread_t th[8];
    for (int r = 0; r < n; ++r) {
        CHECK(0 == pthread_create(&th[r], NULL, thr_main, &t[r]), "pthread_create");
    }
    long calls = 0;
    for (int r = 0; r < n; ++r) {
        pthread_join(th[r], NULL);
        CHECK(0 == t[r].bad, "threads n %d %s: %ld failures, first: %s", n, mode_name,
              t[r].bad, t[r].first);
        calls += t[r].calls;
    }
    long want = thr_modes[mode].calls(iters);
    CHECK(calls == (long) n * want, "threads n %d %s: %ld calls", n, mode_name, calls);
    /* Every call is over: each count equals the items its stream carried, and the
     * trigger test agrees with it exactly. */
    int bad = 0, used[NCH] = { 0 };
    for (int a = 0; a < n; ++a) {
        for (int b = 0; b < n; ++b) {
            for (int c = 0; c < NCH; ++c) {
                ofl_nic_t *na = &t[a].nic.base, *nb = &t[b].nic.base;
                uint64_t data = nb->ops->counter(nb, OFL_CNT_DATA, a, c);
                uint64_t credit = na->ops->counter(na, OFL_CNT_CREDIT, b, c);
                uint64_t out = t[a].out[b * NCH + c], in = t[b].in[a * NCH + c];
                used[c] += data > 0;
                bad += data != out || data != in || credit != in
                       || !nb->ops->reached(nb, OFL_CNT_DATA, a, c, data)
                       || nb->ops->reached(nb, OFL_CNT_DATA, a, c, data + 1)
                       || !na->ops->reached(na, OFL_CNT_CREDIT, b, c, credit)
                       || na->ops->reached(na, OFL_CNT_CREDIT, b, c, credit + 1);
            }
        }
    }
    /* Trees use n - 1 streams up (channel 0) and down (1); exchange all pairs on
     * channel 0; split all pairs on both. */
    int all = n * (n - 1);
    int used_ok = THR_TREE == mode       ? used[0] >= n - 1 && used[1] >= n - 1
                  : THR_EXCHANGE == mode ? used[0] == all && used[1] >= n - 1
                                         : used[0] == all && used[1] == all;
    /* THR_BYREF calls wait for nothing else: no wait failed. */
    long waits_bad = 0;
    for (int r = 0; r < n; ++r) {
        waits_bad += t[r].waits_bad;
    }
    CHECK(0 == waits_bad, "threads n %d %s: %ld waits failed", n, mode_name, waits_bad);
    CHECK(0 == bad && used_ok, "threads n %d %s: %d streams off their counts, %d + %d used", n,
          mode_name, bad, used[0], used[1]);
    for (int r = 0; r < n; ++r) {
        ofl_softnic_detach(&t[r].nic);
    }
}

/* ---- failure handling ------------------------------------------------------- */

typedef struct {
    ofl_softnic_t nic;
    ofl_program_t prog;
    ofl_wait_status_t st;
    int peer;
    int saw_poison_first;
} poison_t;

static atomic_int poison_sent;

static void *poison_waiter(void *arg)
{
    poison_t *p = arg;
    ofl_edges_t e;
    ofl_edges_init(&e, 3);
    int64_t s[10] = { 0 }, r[10];
    ofl_call_t oc = { s, r, ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT64), 8, 10, 0 };
    ofl_inst_t inst;
    ofl_engine_post(&inst, &p->prog, &p->nic.base, &e, &oc);
    /* Long timeout only as a safety net: the poison must end the wait first. */
    ofl_wait_opts_t o = { NULL, NULL, 64, 10.0, 0.01 };
    p->st = ofl_engine_wait(&inst, &o, &p->peer);
    p->saw_poison_first = atomic_load(&poison_sent);
    ofl_edges_fini(&e);
    return NULL;
}

/* Rank 2 never posts; ranks 0 and 1 wait (1 waits on 0, not on 2 directly). A
 * third party poisons the communicator naming 2: both waits must end with it. */
static void test_poison(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0, 0 };
    char name[64];
    shm_name(name, sizeof(name));
    poison_t p[2];
    ofl_softnic_t third;
    memset(p, 0, sizeof(p));
    int rc = ofl_softnic_create(&p[0].nic, name, 3, 0, 1, 64);
    rc |= ofl_softnic_attach(&p[1].nic, name, 3, 1, 1, 64);
    rc |= ofl_softnic_attach(&third, name, 3, 2, 1, 64);
    CHECK(0 == rc, "poison: softnic");
    CHECK(0 == ofl_softnic_unlink(name), "unlink");
    if (0 != rc) {
        return;
    }
    atomic_store(&poison_sent, 0);
    pthread_t th[2];
    for (int r = 0; r < 2; ++r) {
        CHECK(0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, r, 3, &pk, &p[r].prog), "compile");
        CHECK(0 == pthread_create(&th[r], NULL, poison_waiter, &p[r]), "pthread_create");
    }
    struct timespec ts = { 0, 50 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    atomic_store(&poison_sent, 1);
    third.base.ops->poison(&third.base, 2);
    for (int r = 0; r < 2; ++r) {
        pthread_join(th[r], NULL);
        CHECK(OFL_WAIT_PEER_DEAD == p[r].st && 2 == p[r].peer && p[r].saw_poison_first,
              "poison: rank %d got status %d peer %d (after poison: %d)", r, (int) p[r].st,
              p[r].peer, p[r].saw_poison_first);
        ofl_program_free(&p[r].prog);
    }
    /* The first poison sticks: a later one does not rename the dead rank. */
    third.base.ops->poison(&third.base, 0);
    CHECK(2 == p[0].nic.base.ops->poisoned(&p[0].nic.base), "poison renamed");
    ofl_softnic_detach(&p[0].nic);
    ofl_softnic_detach(&p[1].nic);
    ofl_softnic_detach(&third);
}

static void count_progress(void *ctx)
{
    (*(long *) ctx)++;
}

/* A live peer that never posts: the watchdog names it after timeout_s. */
static void test_watchdog(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0, 0 };
    char name[64];
    shm_name(name, sizeof(name));
    ofl_softnic_t a, b;
    int rc = ofl_softnic_create(&a, name, 2, 0, 1, 64);
    rc |= ofl_softnic_attach(&b, name, 2, 1, 1, 64);
    CHECK(0 == rc, "watchdog: softnic");
    CHECK(0 == ofl_softnic_unlink(name), "unlink");
    if (0 != rc) {
        return;
    }
    ofl_program_t p;
    ofl_edges_t e;
    CHECK(0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 0, 2, &pk, &p), "compile");
    ofl_edges_init(&e, 2);
    int32_t s = 1, r = 0;
    ofl_call_t oc = { &s, &r, ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT32), 4, 1, 0 };
    ofl_inst_t inst;
    ofl_engine_post(&inst, &p, &a.base, &e, &oc);
    long hooks = 0;
    ofl_wait_opts_t o = { count_progress, &hooks, 64, 0.2, 0.05 };
    int peer = -1;
    double t0 = now_s();
    ofl_wait_status_t st = ofl_engine_wait(&inst, &o, &peer);
    double dt = now_s() - t0;
    CHECK(OFL_WAIT_TIMEOUT == st && 1 == peer, "watchdog: status %d peer %d", (int) st, peer);
    /* not before its time; how long after is printed, not judged */
    CHECK(dt >= 0.2, "watchdog fired after %.3f s, before its 0.2 s", dt);
    printf("threads: the 0.2 s watchdog fired after %.3f s\n", dt);
    CHECK(hooks > 0, "the host progress hook was never called");
    CHECK(0 == r, "result written without the peer");
    CHECK(-1 == a.base.ops->poisoned(&a.base), "a timeout must not poison");
    ofl_program_free(&p);
    ofl_edges_fini(&e);
    ofl_softnic_detach(&a);
    ofl_softnic_detach(&b);
}

/* A real process attaches as rank 1 and exits: as a zombie and once reaped, it is
 * dead; a wait on it reports it and poisons the communicator. Runs while this
 * process has a single thread. */
static void test_dead_peer(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0, 0 };
    char name[64];
    shm_name(name, sizeof(name));
    ofl_softnic_t a;
    int rc = ofl_softnic_create(&a, name, 2, 0, 1, 64);
    CHECK(0 == rc, "dead peer: create");
    if (0 != rc) {
        ofl_softnic_unlink(name);
        return;
    }
    int go[2], ready[2];
    CHECK(0 == pipe(go) && 0 == pipe(ready), "pipe");
    fflush(NULL);
    pid_t pid = fork();
    if (0 == pid) {
        ofl_softnic_t b;
        char c = 0 == ofl_softnic_attach(&b, name, 2, 1, 1, 64) ? 'y' : 'n';
        close(go[1]);
        if (1 != write(ready[1], &c, 1) || 0 > read(go[0], &c, 1)) {
            _exit(3);
        }
        _exit(0);
    }
    CHECK(pid > 0, "fork");
    close(go[0]);
    close(ready[1]);
    char c = 0;
    CHECK(1 == read(ready[0], &c, 1) && 'y' == c, "child did not attach");
    CHECK(0 == ofl_softnic_unlink(name), "unlink");
    ofl_nic_t *nic = &a.base;
    CHECK(1 == nic->ops->peer_alive(nic, 1), "live child reported dead");
    close(go[1]);   /* the child exits */
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    CHECK(0 == waitid(P_PID, (id_t) pid, &si, WEXITED | WNOWAIT), "waitid");
    CHECK(0 == nic->ops->peer_alive(nic, 1), "zombie child reported alive");

    ofl_program_t p;
    ofl_edges_t e;
    CHECK(0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 0, 2, &pk, &p), "compile");
    ofl_edges_init(&e, 2);
    int32_t s = 1, r = 0;
    ofl_call_t oc = { &s, &r, ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT32), 4, 1, 0 };
    ofl_inst_t inst;
    ofl_engine_post(&inst, &p, nic, &e, &oc);
    ofl_wait_opts_t o = { NULL, NULL, 64, 5.0, 0.01 };
    int peer = -1;
    ofl_wait_status_t st = ofl_engine_wait(&inst, &o, &peer);
    CHECK(OFL_WAIT_PEER_DEAD == st && 1 == peer, "dead peer: status %d peer %d", (int) st,
          peer);
    CHECK(1 == nic->ops->poisoned(nic), "dead peer not poisoned: %d", nic->ops->poisoned(nic));
    int status = 0;
    CHECK(pid == waitpid(pid, &status, 0) && WIFEXITED(status) && 0 == WEXITSTATUS(status),
          "child status %d", status);
    CHECK(0 == nic->ops->peer_alive(nic, 1), "reaped child reported alive");
    CHECK(1 == nic->ops->peer_alive(nic, 0), "self reported dead");
    close(ready[0]);
    ofl_program_free(&p);
    ofl_edges_fini(&e);
    ofl_softnic_detach(&a);
}

int main(void)
{
    unit_timeout("test_threads", 60);
    double t0 = now_s();
    test_dead_peer();
    test_watchdog();
    test_poison();
    double t1 = now_s();
    test_threads(2, 1, OFL_TREE_KARY, 2, THR_TREE, 2000);
    test_threads(3, 2, OFL_TREE_KNOMIAL, 2, THR_TREE, 2000);
    test_threads(4, 4, OFL_TREE_KARY, 3, THR_TREE, 2000);
    test_threads(8, 2, OFL_TREE_KNOMIAL, 2, THR_TREE, 2000);
    test_threads(2, 1, OFL_TREE_KARY, 2, THR_EXCHANGE, 2000);
    test_threads(4, 2, OFL_TREE_KNOMIAL, 2, THR_EXCHANGE, 2000);
    test_threads(8, 1, OFL_TREE_KARY, 3, THR_EXCHANGE, 2000);
    test_threads(2, 1, OFL_TREE_KNOMIAL, 2, THR_SPLIT, 1500);
    test_threads(4, 2, OFL_TREE_KARY, 2, THR_SPLIT, 1500);
    test_threads(8, 1, OFL_TREE_KNOMIAL, 3, THR_SPLIT, 500);
    test_threads(2, 1, OFL_TREE_KARY, 2, THR_BYREF, 600);
    test_threads(4, 2, OFL_TREE_KNOMIAL, 2, THR_BYREF, 400);
    test_threads(8, 1, OFL_TREE_KARY, 3, THR_BYREF, 200);
    double t2 = now_s();
    check_no_leftover_shm();
    printf("threads: failure %.2f s, threads %.2f s\n", t1 - t0, t2 - t1);
    return unit_report("threads");
}
