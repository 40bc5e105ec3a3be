/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/* The simulated communicator test_engine steps: all ranks in one thread, each
 * with its own mapping of one softnic segment; the calls it runs, the references
 * it checks them against, and the checks it makes after every step (the
 * engine's queue rule, every counter quiescent after the last call). */
#ifndef OFL_ENGINE_SIM_H
#define OFL_ENGINE_SIM_H

#include "alu/alu.h"
#include "engine/engine.h"
#include "engine_util.h"
#include "nic/softnic.h"
#include "sched/sched.h"
#include "tree/tree.h"

#include <stdint.h>
#include <string.h>

#define SIM_MAX 16
#define NPSETS 4   /* 0 and 1 as given to world_open, 2: 0 with exchange, 3: 0 with split */
#define PS_BYREF 4 /* 4 and 5: 0 and 1 by reference (bcast only; not drawn at random) */
#define NPSETS_ALL 6

/* A fixed sequence: every run draws the same orders and the same calls. */
static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

typedef enum {
    K_SUM_I32,     /* allreduce */
    K_MAX_F64,     /* allreduce */
    K_SUM_F32,     /* allreduce, reference in tree order */
    K_BCAST,
    K_REDUCE_I32,
    K_BARRIER,
    K_NKINDS
} kind_t;

typedef struct {
    kind_t kind;
    int root;
    int pset;          /* which of the world's parameter sets (2: exchange, 3: split,
                          4, 5: by reference) */
    int inplace;       /* send == recv (reduce: at the root only) */
    size_t count;
    uint32_t tag;      /* varies the inputs from call to call */
    size_t seg;        /* the call's segment size (ofl_call_t.seg_bytes), 0: the slot's */
} spec_t;

typedef struct {
    int n;
    char name[64];
    ofl_sched_params_t params[NPSETS_ALL];
    ofl_softnic_t nic[SIM_MAX];
    ofl_edges_t edges[SIM_MAX];
    ofl_inst_t inst[SIM_MAX];
    ofl_program_t prog[NPSETS_ALL][OFL_COLL_COUNT][SIM_MAX][SIM_MAX]; /* [root][rank] */
    uint8_t compiled[NPSETS_ALL][OFL_COLL_COUNT][SIM_MAX][SIM_MAX];
    int preempt;       /* sim_run steps this world in preempt mode */
    uint32_t from[SIM_MAX][OFL_PROG_MAX_QUEUES];   /* executions the rule check saw */
} world_t;

/* Over the whole run: what the simulations saw of the engine's queue rule and of
 * the segmentation (non-vacuity of the split tests). */
static struct {
    long rule_broken;  /* executions of a segment an earlier queue had not finished */
    long rule_held;    /* times a triggered descriptor had to wait for the rule */
    long bad_nseg;     /* posts whose segment count is not the one computed here */
    long split_calls;  /* posts of split programs */
    long split_partial; /* ... whose last round is partial */
    long split_small;  /* ... with fewer segments than ranks */
    long byref_calls;  /* posts of by-reference programs */
    long byref_big;    /* ... of one segment larger than a mailbox slot */
    long byref_partial; /* ... of several segments, the last one partial */
    long byref_fenced; /* completions of by-reference calls checked against the
                          children's reads */
} stats;

typedef struct {
    spec_t s;
    ofl_coll_t coll;
    size_t elem;
    ofl_alu_fn fn;
    uint8_t *expect;
    uint8_t *send[SIM_MAX];
    uint8_t *recv[SIM_MAX];
} call_t;

static void world_close(world_t *w);

static world_t *world_open(int n, int slots, size_t segsize, const ofl_sched_params_t *p0,
                           const ofl_sched_params_t *p1)
{
    world_t *w = calloc(1, sizeof(*w));
    if (NULL == w) {
        CHECK(0, "out of memory");
        return NULL;
    }
    w->n = n;
    w->params[0] = *p0;
    w->params[1] = *p1;
    w->params[2] = *p0;
    w->params[2].shape = OFL_SCHED_EXCHANGE;
    w->params[3] = *p0;
    w->params[3].shape = OFL_SCHED_SPLIT;
    w->params[PS_BYREF] = *p0;
    w->params[PS_BYREF].byref = 1;
    w->params[PS_BYREF + 1] = *p1;
    w->params[PS_BYREF + 1].byref = 1;
    for (int ps = 0; ps < NPSETS_ALL; ++ps) {
        w->params[ps].slots = slots;
    }
    shm_name(w->name, sizeof(w->name));
    int rc = ofl_softnic_create(&w->nic[0], w->name, n, 0, slots, segsize);
    CHECK(0 == rc, "create %s: %d", w->name, rc);
    for (int r = 1; r < n && 0 == rc; ++r) {
        rc = ofl_softnic_attach(&w->nic[r], w->name, n, r, slots, segsize);
        CHECK(0 == rc, "attach %s rank %d: %d", w->name, r, rc);
    }
    int urc = ofl_softnic_unlink(w->name);
    CHECK(0 == urc, "unlink %s: %d", w->name, urc);
    CHECK(w->nic[0].len == ofl_softnic_bytes(n, slots, segsize), "softnic_bytes");
    for (int r = 0; r < n; ++r) {
        CHECK(0 == ofl_edges_init(&w->edges[r], n), "edges_init");
    }
    if (0 != rc) {
        world_close(w);
        return NULL;
    }
    return w;
}

static void world_close(world_t *w)
{
    for (int r = 0; r < w->n; ++r) {
        ofl_softnic_detach(&w->nic[r]);
        ofl_edges_fini(&w->edges[r]);
    }
    for (int ps = 0; ps < NPSETS_ALL; ++ps) {
        for (int c = 0; c < OFL_COLL_COUNT; ++c) {
            for (int root = 0; root < w->n; ++root) {
                for (int r = 0; r < w->n; ++r) {
                    if (w->compiled[ps][c][root][r]) {
                        ofl_program_free(&w->prog[ps][c][root][r]);
                    }
                }
            }
        }
    }
    free(w);
}

static const ofl_program_t *world_prog(world_t *w, int ps, ofl_coll_t coll, int root, int rank)
{
    if (OFL_COLL_ALLREDUCE == coll || OFL_COLL_BARRIER == coll) {
        root = 0;
    }
    ofl_program_t *p = &w->prog[ps][coll][root][rank];
    if (!w->compiled[ps][coll][root][rank]) {
        int rc = ofl_sched_compile(coll, root, rank, w->n, &w->params[ps], p);
        CHECK(0 == rc, "compile %s root %d rank %d", ofl_coll_name(coll), root, rank);
        w->compiled[ps][coll][root][rank] = 1;
    }
    return p;
}

/* Float reference: the partial result of rank's subtree, combined as the tree
 * prescribes: own value first, then each child's partial in list order. */
static float tree_sum_f32(const world_t *w, int ps, int rank, uint32_t tag, size_t i)
{
    ofl_tree_node_t t;
    if (0 != ofl_tree_node(w->params[ps].reduce_kind, w->params[ps].reduce_radix, w->n, 0,
                           rank, &t)) {
        return 0.0f;
    }
    float acc = in_f32(rank, tag, i);
    for (int k = 0; k < t.nchildren; ++k) {
        acc = acc + tree_sum_f32(w, ps, t.children[k], tag, i);
    }
    return acc;
}


static void fill_input(kind_t kind, int rank, uint32_t tag, size_t count, uint8_t *buf)
{
    for (size_t i = 0; i < count; ++i) {
        if (K_SUM_I32 == kind || K_REDUCE_I32 == kind) {
            uint32_t v = in_i32(rank, tag, i);
            memcpy(buf + 4 * i, &v, 4);
        } else if (K_MAX_F64 == kind) {
            double v = in_f64(rank, tag, i);
            memcpy(buf + 8 * i, &v, 8);
        } else if (K_SUM_F32 == kind) {
            float v = in_f32(rank, tag, i);
            memcpy(buf + 4 * i, &v, 4);
        }
    }
}

static void call_init(world_t *w, call_t *c, const spec_t *s)
{
    memset(c, 0, sizeof(*c));
    c->s = *s;
    int n = w->n;
    switch (s->kind) {
    case K_SUM_I32:
        c->coll = OFL_COLL_ALLREDUCE;
        c->elem = 4;
        c->fn = ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT32);
        break;
    case K_MAX_F64:
        c->coll = OFL_COLL_ALLREDUCE;
        c->elem = 8;
        c->fn = ofl_alu_lookup(OFL_OP_MAX, OFL_T_DOUBLE);
        break;
    case K_SUM_F32:
        c->coll = OFL_COLL_ALLREDUCE;
        c->elem = 4;
        c->fn = ofl_alu_lookup(OFL_OP_SUM, OFL_T_FLOAT);
        break;
    case K_REDUCE_I32:
        c->coll = OFL_COLL_REDUCE;
        c->elem = 4;
        c->fn = ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT32);
        break;
    case K_BCAST:
        c->coll = OFL_COLL_BCAST;
        c->elem = 1;
        break;
    default:
        c->coll = OFL_COLL_BARRIER;
        c->elem = 1;
        c->s.count = 0;
        break;
    }
    CHECK(NULL != c->fn || K_BCAST == s->kind || K_BARRIER == s->kind, "no ALU kernel");
    size_t bytes = c->s.count * c->elem;
    c->expect = malloc(bytes + 1);
    for (int r = 0; r < n; ++r) {
        c->recv[r] = malloc(bytes + 1);
        memset(c->recv[r], SENTINEL, bytes + 1);
        int inplace = s->inplace && (K_REDUCE_I32 != s->kind || r == s->root);
        if (K_BCAST == s->kind || K_BARRIER == s->kind) {
            c->send[r] = NULL;   /* must never be touched */
        } else if (inplace) {
            c->send[r] = c->recv[r];
        } else {
            c->send[r] = malloc(bytes + 1);
            c->send[r][bytes] = SENTINEL;
        }
        if (NULL != c->send[r]) {
            fill_input(s->kind, r, s->tag, c->s.count, c->send[r]);
        }
    }
    for (size_t i = 0; i < c->s.count; ++i) {
        if (K_SUM_I32 == s->kind || K_REDUCE_I32 == s->kind) {
            uint32_t sum = 0;
            for (int r = 0; r < n; ++r) {
                sum += in_i32(r, s->tag, i);
            }
            memcpy(c->expect + 4 * i, &sum, 4);
        } else if (K_MAX_F64 == s->kind) {
            double m = in_f64(0, s->tag, i);
            for (int r = 1; r < n; ++r) {
                double v = in_f64(r, s->tag, i);
                m = v > m ? v : m;
            }
            memcpy(c->expect + 8 * i, &m, 8);
        } else if (K_SUM_F32 == s->kind) {
            float v = OFL_SCHED_TREE != w->params[s->pset].shape
                          ? rank_sum_f32(n, s->tag, i)
                          : tree_sum_f32(w, s->pset, 0, s->tag, i);
            memcpy(c->expect + 4 * i, &v, 4);
        } else if (K_BCAST == s->kind) {
            c->expect[i] = pattern(s->root, s->tag, i);
        }
    }
    if (K_BCAST == s->kind) {
        memcpy(c->recv[s->root], c->expect, bytes);
    }
}

static void call_free(world_t *w, call_t *c)
{
    for (int r = 0; r < w->n; ++r) {
        if (c->send[r] != c->recv[r]) {
            free(c->send[r]);
        }
        free(c->recv[r]);
    }
    free(c->expect);
}

static void call_post(world_t *w, call_t *c, int rank)
{
    ofl_call_t oc = {
        .send = c->send[rank],
        .recv = c->recv[rank],
        .fn = c->fn,
        .elem = c->elem,
        .count = c->s.count,
        .seg_bytes = c->s.seg,
    };
    const ofl_program_t *p = world_prog(w, c->s.pset, c->coll, c->s.root, rank);
    ofl_inst_t *inst = &w->inst[rank];
    ofl_engine_post(inst, p, &w->nic[rank].base, &w->edges[rank], &oc);
    memset(w->from[rank], 0, sizeof(w->from[rank]));
    /* Segments as engine.h defines them: of seg_bytes when below the slot size; by
     * reference of seg_bytes whatever the slot, the whole message when 0. */
    size_t slot = w->nic[rank].base.slot_bytes, bytes = c->s.count * c->elem;
    size_t seg = c->s.seg && c->s.seg < slot ? c->s.seg : slot;
    if (p->byref) {
        seg = c->s.seg ? c->s.seg : bytes;
    }
    size_t per = seg / c->elem ? seg / c->elem : 1;
    size_t nseg = c->s.count ? (c->s.count + per - 1) / per : 1;
    stats.bad_nseg += nseg != inst->nseg || inst->rounds != (nseg + p->period - 1) / p->period;
    if (p->byref && 0 == rank) {
        stats.byref_calls++;
        stats.byref_big += 1 == nseg && bytes > slot;
        stats.byref_partial += nseg > 1 && 0 != c->s.count % per;
    }
    if (p->period > 1) {
        stats.split_calls++;
        stats.split_partial += 0 != nseg % (size_t) p->period;
        stats.split_small += nseg < (size_t) p->period;
    }
}

/* Mismatches of rank's buffers against the reference; the first is described in
 * msg. Checks the result, that the send buffer is intact, that the byte after the
 * result was not written, and that a reduce leaves non-root receive buffers alone. */
static int call_verify(const call_t *c, int rank, char *msg, size_t msglen)
{
    size_t bytes = c->s.count * c->elem;
    int bad = 0;
    const uint8_t *recv = c->recv[rank];
    if (K_BARRIER == c->s.kind) {
        return 0;
    }
    if (K_REDUCE_I32 == c->s.kind && rank != c->s.root) {
        for (size_t i = 0; i < bytes; ++i) {
            if (SENTINEL != recv[i] && 0 == bad++) {
                snprintf(msg, msglen, "non-root reduce recv byte %zu written", i);
            }
        }
    } else {
        for (size_t i = 0; i < c->s.count; ++i) {
            if (0 != memcmp(recv + i * c->elem, c->expect + i * c->elem, c->elem)
                && 0 == bad++) {
                snprintf(msg, msglen, "element %zu of %zu wrong", i, c->s.count);
            }
        }
    }
    if (SENTINEL != recv[bytes] && 0 == bad++) {
        snprintf(msg, msglen, "wrote past the receive buffer");
    }
    if (NULL != c->send[rank] && c->send[rank] != c->recv[rank]) {
        uint8_t *orig = malloc(bytes + 1);
        fill_input(c->s.kind, rank, c->s.tag, c->s.count, orig);
        if ((0 != memcmp(orig, c->send[rank], bytes) || SENTINEL != c->send[rank][bytes])
            && 0 == bad++) {
            snprintf(msg, msglen, "send buffer modified");
        }
        free(orig);
    }
    return bad;
}

static const char *spec_str(const spec_t *s, char *buf, size_t len)
{
    static const char *names[K_NKINDS] = { "sum_i32", "max_f64", "sum_f32",
                                           "bcast",   "reduce",  "barrier" };
    snprintf(buf, len, "%s root %d count %zu%s pset %d tag %u seg %zu", names[s->kind],
             s->root, s->count, s->inplace ? " in-place" : "", s->pset, s->tag, s->seg);
    return buf;
}

/* After every call completed nothing is in flight, so each counter must equal the
 * number of items the stream sequences say crossed: a descriptor that fired twice
 * (or never) shows up here. The trigger test must agree with the count at its
 * stream: reached at the count, not one beyond (the DATA count is the stamp in the
 * slot of the last item, CREDIT may be answered from the reader's cache). Every
 * stream (ordered pair, channel) on its own. */
static void check_quiescent(world_t *w, const char *what)
{
    int bad = 0, used = 0;
    for (int a = 0; a < w->n; ++a) {
        for (int b = 0; b < w->n; ++b) {
            for (int c = 0; c < NCH; ++c) {
                ofl_nic_t *nb = &w->nic[b].base;
                ofl_nic_t *na = &w->nic[a].base;
                uint64_t data = nb->ops->counter(nb, OFL_CNT_DATA, a, c);
                uint64_t credit = na->ops->counter(na, OFL_CNT_CREDIT, b, c);
                uint64_t out = w->edges[a].out[b * NCH + c], in = w->edges[b].in[a * NCH + c];
                used += data > 0;
                if (data != out || data != in || credit != in
                    || !nb->ops->reached(nb, OFL_CNT_DATA, a, c, data)
                    || nb->ops->reached(nb, OFL_CNT_DATA, a, c, data + 1)
                    || !na->ops->reached(na, OFL_CNT_CREDIT, b, c, credit)
                    || na->ops->reached(na, OFL_CNT_CREDIT, b, c, credit + 1)) {
                    if (0 == bad++) {
                        fprintf(stderr,
                                "%s: stream %d->%d.%d: DATA %llu CREDIT %llu out %llu in %llu\n",
                                what, a, b, c, (unsigned long long) data,
                                (unsigned long long) credit, (unsigned long long) out,
                                (unsigned long long) in);
                    }
                }
            }
        }
    }
    CHECK(0 == bad, "%s: %d streams with counters off their sequences", what, bad);
    CHECK(1 == w->n || used > 0, "%s: no stream carried anything", what);
}

enum { ORD_FORWARD, ORD_REVERSE, ORD_RANDOM, ORD_SUBSET, ORD_COUNT };
static const char *order_name[ORD_COUNT] = { "forward", "reverse", "random", "subset" };

static void make_order(int n, int order, int *perm, int *len)
{
    for (int i = 0; i < n; ++i) {
        perm[i] = ORD_REVERSE == order ? n - 1 - i : i;
    }
    *len = n;
    if (ORD_RANDOM == order || ORD_SUBSET == order) {
        for (int i = n - 1; i > 0; --i) {
            int j = (int) (rng() % (uint64_t) (i + 1));
            int t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
    }
    if (ORD_SUBSET == order) {
        int k = 0;
        for (int i = 0; i < n; ++i) {
            if (rng() & 1) {
                perm[k++] = perm[i];
            }
        }
        *len = k;
    }
}

/* Engine rule: a queue never works on a segment an earlier queue has not
 * finished. Checks every descriptor execution of inst since from[q] (and moves
 * from[] on): for every earlier queue with a descriptor of the same segment, that
 * execution must be done. The cursors must stay in range. Returns violations. */
static long queue_rule_violations(const ofl_inst_t *inst, uint32_t *from)
{
    const ofl_program_t *p = inst->prog;
    long bad = 0;
    for (int q = 0; q < p->nqueues; ++q) {
        uint32_t qlen = (uint32_t) p->qlen[q], cur = inst->cursor[q];
        bad += cur > qlen * inst->rounds || cur < from[q];
        for (uint32_t pos = from[q]; q > 0 && pos < cur; ++pos) {
            uint32_t round = pos / qlen;
            int off = p->desc[p->qfirst[q] + (int) (pos % qlen)].seg_off;
            if (round * (uint32_t) p->period + (uint32_t) off >= inst->nseg) {
                continue;
            }
            for (int e = 0; e < q; ++e) {
                for (int i = 0; i < p->qlen[e]; ++i) {
                    if (p->desc[p->qfirst[e] + i].seg_off == off) {
                        bad += round * (uint32_t) p->qlen[e] + (uint32_t) i >= inst->cursor[e];
                    }
                }
            }
        }
        from[q] = cur;
    }
    return bad;
}

/* How many queues of inst could fire their next descriptor by its triggers (the
 * thresholds re-derived here from program.h) but may not by the queue rule. */
static int held_by_rule(const ofl_inst_t *inst)
{
    const ofl_program_t *p = inst->prog;
    ofl_nic_t *nic = inst->nic;
    int held = 0;
    for (int q = 1; q < p->nqueues; ++q) {
        uint32_t qlen = (uint32_t) p->qlen[q], cur = inst->cursor[q];
        if (0 == qlen || cur >= qlen * inst->rounds) {
            continue;
        }
        uint32_t round = cur / qlen;
        const ofl_desc_t *d = &p->desc[p->qfirst[q] + (int) (cur % qlen)];
        if (round * (uint32_t) p->period + d->seg_off >= inst->nseg) {
            continue;
        }
        int met = 1;
        for (int k = 0; k < d->n_trig && met; ++k) {
            const ofl_trig_t *t = &p->trigs[d->first_trig + k];
            int out = OFL_CNT_CREDIT == t->cnt;
            const ofl_stream_use_t *u = &(out ? p->use_out : p->use_in)[t->peer * NCH + t->chan];
            uint64_t base = out ? inst->base_out[t->peer][t->chan]
                                : inst->base_in[t->peer][t->chan];
            int64_t need = (int64_t) (base + (uint64_t) round * u->per_round) + t->rel;
            met = need <= 0
                  || (int64_t) nic->ops->counter(nic, t->cnt, p->peers[t->peer], t->chan) >= need;
        }
        int waits = 0;
        for (int e = 0; e < q && met; ++e) {
            for (int i = 0; i < p->qlen[e]; ++i) {
                waits |= p->desc[p->qfirst[e] + i].seg_off == d->seg_off
                         && round * (uint32_t) p->qlen[e] + (uint32_t) i >= inst->cursor[e];
            }
        }
        held += met && waits;
    }
    return held;
}

/* Preempt mode: every trigger test first reads the counter, then, now and then,
 * lets another rank progress before the reader acts on what it read, as a thread
 * that loses the CPU between two counter reads would. A program whose correctness
 * depends on two reads of one progress call seeing one instant fails here
 * deterministically, where the threaded test would need luck. */
static struct {
    world_t *w;                 /* the world sim_run is stepping, NULL: off */
    int hold;                   /* > 0: no preemption (nested, or re-checking) */
    long fired;                 /* preemptions so far (non-vacuity) */
    const ofl_nic_ops_t *soft;  /* the softnic's own table */
    ofl_nic_ops_t ops;          /* the softnic's with reached() wrapped */
} pre;

static int preempt_reached(ofl_nic_t *nic, int cnt, int peer, int chan, uint64_t threshold)
{
    int rv = pre.soft->reached(nic, cnt, peer, chan, threshold);
    if (NULL != pre.w && 0 == pre.hold && 0 == rng() % 3) {
        int other = (int) (rng() % (uint64_t) pre.w->n);
        if (other != nic->rank) {
            pre.hold++;
            ofl_engine_progress(&pre.w->inst[other]);
            stats.rule_broken += queue_rule_violations(&pre.w->inst[other], pre.w->from[other]);
            pre.hold--;
            pre.fired++;
        }
    }
    return rv;
}

static void world_preempt(world_t *w, int on)
{
    if (NULL == pre.soft) {
        pre.soft = w->nic[0].base.ops;
        pre.ops = *pre.soft;
        pre.ops.reached = preempt_reached;
    }
    w->preempt = on;
    for (int r = 0; r < w->n; ++r) {
        w->nic[r].base.ops = on ? &pre.ops : pre.soft;
    }
}

/* The children (bcast tree, channel 1 down) of rank r's by-reference call that
 * have not yet read all of it, when r's call is calls[at]: a child still in an
 * earlier call has not, one in the same call has once its queue 0 (the reads)
 * is done, one in a later call has. cur: each rank's current call. */
static int unread_children(const world_t *w, int r, const int *cur, int at)
{
    const ofl_program_t *p = w->inst[r].prog;
    int unread = 0;
    for (int i = 0; i < p->npeers; ++i) {
        if (0 == p->use_out[i * NCH + 1].per_round) {
            continue;
        }
        int ch = p->peers[i];
        const ofl_inst_t *ci = &w->inst[ch];
        int read = cur[ch] > at;
        if (cur[ch] == at) {
            read = ci->prog->byref && 1 == ci->prog->qlen[0] && ci->cursor[0] >= ci->rounds;
        }
        unread += !read;
        stats.byref_fenced++;
    }
    return unread;
}

static uint64_t cursor_sum(const ofl_inst_t *inst)
{
    uint64_t s = 0;
    for (int q = 0; q < OFL_PROG_MAX_QUEUES; ++q) {
        s += inst->cursor[q];
    }
    return s;
}

/* Run calls[0..ncalls) on every rank. Like blocking collectives, a rank posts its
 * next call as soon as its previous one completed, while its peers may still be
 * in the previous one. Ranks in `preposted` (bit mask) already posted calls[0].
 * Each result is verified the moment progress first reports completion. */
static int sim_run(world_t *w, call_t *calls, int ncalls, int order, unsigned preposted,
                   const char *what)
{
    int n = w->n;
    int cur[SIM_MAX];
    for (int r = 0; r < n; ++r) {
        cur[r] = 0;
        if (!(preposted & (1u << r))) {
            call_post(w, &calls[0], r);
        }
    }
    pre.w = w->preempt ? w : NULL;
    long rule_broken = stats.rule_broken;
    int stalled = 0, remaining = n * ncalls;
    long bad_result = 0, bad_blocker = 0, bad_done = 0, early = 0;
    char msg[320] = "", desc[160], sdesc[80];
    while (remaining > 0) {
        int perm[SIM_MAX], len, moved = 0;
        make_order(n, order, perm, &len);
        for (int k = 0; k < len; ++k) {
            int r = perm[k];
            if (cur[r] >= ncalls) {
                continue;
            }
            ofl_inst_t *inst = &w->inst[r];
            uint64_t before = cursor_sum(inst);
            int done = ofl_engine_progress(inst);
            moved |= cursor_sum(inst) != before;
            stats.rule_broken += queue_rule_violations(inst, w->from[r]);
            stats.rule_held += held_by_rule(inst);
            int peer, cnt;
            uint64_t have;
            int64_t need;
            int blocked = ofl_engine_blocker(inst, &peer, &cnt, &have, &need);
            if (!done && !blocked && NULL != pre.w) {
                /* A peer ran after a counter read: what the read missed has come
                 * since, so one more progress (not preempted) must move on. */
                pre.hold++;
                done = ofl_engine_progress(inst);
                pre.hold--;
                moved |= cursor_sum(inst) != before;
                stats.rule_broken += queue_rule_violations(inst, w->from[r]);
                blocked = ofl_engine_blocker(inst, &peer, &cnt, &have, &need);
                if (!done && !blocked) {
                    bad_blocker++;
                    continue;
                }
            }
            if (!done) {
                /* Something must hold an incomplete call: a stream the program reads
                 * (DATA) or writes (CREDIT) whose counter really is short, and the
                 * value reported is that counter's. */
                int slot = blocked ? peer_slot(inst->prog, peer) : -1;
                int bcnt = cnt / NCH, bch = cnt % NCH;
                const ofl_stream_use_t *u = NULL;
                if (slot >= 0 && cnt >= 0 && cnt < 2 * NCH) {
                    u = (OFL_CNT_DATA == bcnt ? inst->prog->use_in : inst->prog->use_out)
                        + slot * NCH + bch;
                }
                ofl_nic_t *nic = &w->nic[r].base;
                if (NULL == u || 0 == u->per_round || (int64_t) have >= need
                    || have != nic->ops->counter(nic, bcnt, peer, bch)) {
                    bad_blocker++;
                }
                continue;
            }
            if (blocked) {
                bad_blocker++;
            }
            /* By reference: complete only once every child has read this rank's
             * buffer (the application may reuse it now). */
            if (inst->prog->byref) {
                early += unread_children(w, r, cur, cur[r]);
            }
            int b = call_verify(&calls[cur[r]], r, desc, sizeof(desc));
            if (b && 0 == bad_result++) {
                snprintf(msg, sizeof(msg), "rank %d call %d (%s): %s", r, cur[r],
                         spec_str(&calls[cur[r]].s, sdesc, sizeof(sdesc)), desc);
            }
            /* Completion is sticky and fires nothing more (the counters say so at
             * the end). */
            if (1 != ofl_engine_progress(inst)) {
                bad_done++;
            }
            moved = 1;
            remaining--;
            if (++cur[r] < ncalls) {
                call_post(w, &calls[cur[r]], r);
            }
        }
        stalled = moved ? 0 : stalled + 1;
        if (stalled > 200) {
            for (int r = 0; r < n; ++r) {
                int peer = -1, cnt = -1;
                uint64_t have = 0;
                int64_t need = 0;
                if (cur[r] < ncalls && ofl_engine_blocker(&w->inst[r], &peer, &cnt, &have,
                                                          &need)) {
                    fprintf(stderr, "  rank %d call %d: waits for %s(%d.%d) %llu < %lld\n", r,
                            cur[r], cnt / NCH ? "CREDIT" : "DATA", peer, cnt % NCH,
                            (unsigned long long) have, (long long) need);
                }
            }
            CHECK(0, "%s (%s): deadlock with %d rank-calls left", what, order_name[order],
                  remaining);
            pre.w = NULL;
            return -1;
        }
    }
    pre.w = NULL;
    CHECK(0 == bad_result, "%s (%s): %ld wrong results, first: %s", what, order_name[order],
          bad_result, msg);
    CHECK(0 == bad_blocker, "%s (%s): %ld implausible blocker answers", what,
          order_name[order], bad_blocker);
    CHECK(0 == bad_done, "%s (%s): completion not sticky %ld times", what, order_name[order],
          bad_done);
    CHECK(0 == early, "%s (%s): %ld by-reference completions before a child read", what,
          order_name[order], early);
    CHECK(stats.rule_broken == rule_broken, "%s (%s): a queue worked on a segment an earlier "
          "queue had not finished, %ld times", what, order_name[order],
          stats.rule_broken - rule_broken);
    /* Nothing may change a buffer after its call completed, even while the peers
     * ran on into later calls. */
    long late = 0;
    for (int i = 0; i < ncalls; ++i) {
        for (int r = 0; r < n; ++r) {
            late += call_verify(&calls[i], r, desc, sizeof(desc));
        }
    }
    CHECK(0 == late, "%s (%s): %ld buffers changed after completion", what, order_name[order],
          late);
    check_quiescent(w, what);
    return 0;
}

static void run_specs(world_t *w, const spec_t *specs, int ncalls, int order, const char *what)
{
    call_t *calls = calloc((size_t) ncalls, sizeof(*calls));
    for (int i = 0; i < ncalls; ++i) {
        call_init(w, &calls[i], &specs[i]);
    }
    sim_run(w, calls, ncalls, order, 0, what);
    for (int i = 0; i < ncalls; ++i) {
        call_free(w, &calls[i]);
    }
    free(calls);
}

static uint32_t next_tag = 1;

#endif
