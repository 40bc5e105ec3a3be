/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — schedule compiler (see sched.h, program.h).
 */
#include "sched/sched.h"

#include <stdlib.h>
#include <string.h>

/* Builder: descriptors are emitted queue by queue, so each queue is a contiguous
 * run of prog->desc; refs/trigs/cps are appended to pools. */
typedef struct {
    ofl_program_t *p;
    int cap_desc, cap_refs, cap_trigs, cap_cps;
    int failed;
    int queue_of_in[OFL_PROG_MAX_PEERS][OFL_CHANNELS];   /* reading queue + 1 */
    int queue_of_out[OFL_PROG_MAX_PEERS][OFL_CHANNELS];  /* writing queue + 1 */
    int k_in[OFL_PROG_MAX_PEERS][OFL_CHANNELS];          /* items so far this round */
    int k_out[OFL_PROG_MAX_PEERS][OFL_CHANNELS];
} builder_t;

static void *grow(void *ptr, int *cap, int need, size_t elem, int *failed)
{
    if (need <= *cap) {
        return ptr;
    }
    int ncap = *cap ? *cap * 2 : 16;
    while (ncap < need) {
        ncap *= 2;
    }
    void *n = realloc(ptr, (size_t) ncap * elem);
    if (NULL == n) {
        *failed = 1;
        return ptr;
    }
    *cap = ncap;
    return n;
}

static int peer_index(builder_t *b, int rank)
{
    ofl_program_t *p = b->p;
    for (int i = 0; i < p->npeers; ++i) {
        if (p->peers[i] == rank) {
            return i;
        }
    }
    if (p->npeers >= OFL_PROG_MAX_PEERS) {
        b->failed = 1;
        return 0;
    }
    p->peers[p->npeers] = rank;
    return p->npeers++;
}

/* One descriptor under construction: inputs and outputs are given as lists; the
 * triggers and CP bumps follow from them (a mailbox read waits for DATA and hands
 * back CREDIT; a mailbox put waits for CREDIT and raises DATA at the peer). */
typedef struct {
    int n_in, n_out;
    int seg_off;
    ofl_ref_t in[OFL_TREE_MAX_CHILDREN + 1];
    ofl_ref_t out[OFL_TREE_MAX_CHILDREN + 1];
} draft_t;

/* Add an input or output; for a mailbox, `chan` names the stream with `rank`. */
static void draft_add_chan(builder_t *b, draft_t *d, int is_out, ofl_buf_t buf, int rank,
                           int chan)
{
    ofl_ref_t r = { .buf = (uint8_t) buf, .peer = 0, .chan = (uint8_t) chan, .k = 0 };
    if (OFL_BUF_PEER == buf) {
        r.peer = (uint8_t) peer_index(b, rank);
    }
    if (is_out) {
        d->out[d->n_out++] = r;
    } else {
        d->in[d->n_in++] = r;
    }
}

/* Tree programs: contributions go up on channel 0, results come down on 1. */
static void draft_add(builder_t *b, draft_t *d, int is_out, ofl_buf_t buf, int rank)
{
    draft_add_chan(b, d, is_out, buf, rank, 0);
}

/* A stream is written by one queue and read by one queue, in item order; k is
 * the item's position among the stream's items of the round. */
static int stream_k(builder_t *b, int is_out, const ofl_ref_t *r)
{
    int q = b->p->nqueues; /* the queue being built, + 1 */
    int *owner = is_out ? &b->queue_of_out[r->peer][r->chan] : &b->queue_of_in[r->peer][r->chan];
    if (0 == *owner) {
        *owner = q;
    } else if (*owner != q) {
        b->failed = 1;
    }
    int *k = is_out ? &b->k_out[r->peer][r->chan] : &b->k_in[r->peer][r->chan];
    if (*k > 255) {
        b->failed = 1;
    }
    return (*k)++;
}

/* Room for one more descriptor and its refs, triggers and CP bumps; the new
 * descriptor, empty, or NULL when memory ran out. */
static ofl_desc_t *desc_new(builder_t *b, int seg_off, int nrefs, int ntrigs, int ncps)
{
    ofl_program_t *p = b->p;
    p->desc = grow(p->desc, &b->cap_desc, p->ndesc + 1, sizeof(*p->desc), &b->failed);
    p->refs = grow(p->refs, &b->cap_refs, p->nrefs + nrefs, sizeof(*p->refs), &b->failed);
    p->trigs = grow(p->trigs, &b->cap_trigs, p->ntrigs + ntrigs, sizeof(*p->trigs),
                    &b->failed);
    p->cps = grow(p->cps, &b->cap_cps, p->ncps + ncps, sizeof(*p->cps), &b->failed);
    if (b->failed) {
        return NULL;
    }
    ofl_desc_t *desc = &p->desc[p->ndesc++];
    memset(desc, 0, sizeof(*desc));
    desc->first_ref = (uint16_t) p->nrefs;
    desc->first_trig = (uint16_t) p->ntrigs;
    desc->first_cp = (uint16_t) p->ncps;
    desc->seg_off = (uint16_t) seg_off;
    return desc;
}

static void emit(builder_t *b, draft_t *d)
{
    ofl_program_t *p = b->p;
    int nrefs = d->n_in + d->n_out;
    ofl_desc_t *desc = desc_new(b, d->seg_off, nrefs, nrefs, nrefs);
    if (NULL == desc) {
        return;
    }
    desc->n_in = (uint8_t) d->n_in;
    desc->n_out = (uint8_t) d->n_out;
    for (int i = 0; i < d->n_in; ++i) {
        ofl_ref_t r = d->in[i];
        if (OFL_BUF_PEER == r.buf) {
            r.k = (uint8_t) stream_k(b, 0, &r);
            p->trigs[p->ntrigs++] = (ofl_trig_t) { OFL_CNT_DATA, r.peer, r.chan, 0,
                                                   (int16_t) (r.k + 1) };
            p->cps[p->ncps++] = (ofl_cp_t) { OFL_CNT_CREDIT, r.peer, r.chan, r.k };
            desc->n_trig++;
            desc->n_cp++;
        }
        p->refs[p->nrefs++] = r;
    }
    for (int i = 0; i < d->n_out; ++i) {
        ofl_ref_t r = d->out[i];
        if (OFL_BUF_PEER == r.buf) {
            r.k = (uint8_t) stream_k(b, 1, &r);
            p->trigs[p->ntrigs++] = (ofl_trig_t) { OFL_CNT_CREDIT, r.peer, r.chan, 0,
                                                   (int16_t) (r.k + 1 - p->slots) };
            p->cps[p->ncps++] = (ofl_cp_t) { OFL_CNT_DATA, r.peer, r.chan, r.k };
            desc->n_trig++;
            desc->n_cp++;
        }
        p->refs[p->nrefs++] = r;
    }
}

/* A descriptor that moves nothing and waits until every by-reference output of
 * `put` (just emitted) has been read: CREDIT of each such stream reaches the
 * put's item + 1. */
static void emit_fence(builder_t *b, const draft_t *put)
{
    ofl_program_t *p = b->p;
    ofl_desc_t *desc = desc_new(b, put->seg_off, 0, put->n_out, 0);
    if (NULL == desc) {
        return;
    }
    for (int i = 0; i < put->n_out; ++i) {
        const ofl_ref_t *r = &put->out[i];
        if (OFL_BUF_PEER == r->buf && r->byref) {
            /* the put took position k_out - 1 of this stream's round */
            int16_t rel = (int16_t) b->k_out[r->peer][r->chan];
            p->trigs[p->ntrigs++] = (ofl_trig_t) { OFL_CNT_CREDIT, r->peer, r->chan, 0, rel };
            desc->n_trig++;
        }
    }
}

/* Per stream: items per round and per partial round (descriptors run in seg_off
 * order within a queue, so a partial round is a prefix of each stream). */
static int finish_streams(builder_t *b)
{
    ofl_program_t *p = b->p;
    size_t nstreams = (size_t) (p->npeers ? p->npeers : 1) * OFL_CHANNELS;
    size_t plen = (size_t) p->period + 1;
    p->use_in = calloc(nstreams, sizeof(*p->use_in));
    p->use_out = calloc(nstreams, sizeof(*p->use_out));
    p->prefix_pool = calloc(2 * nstreams * plen, sizeof(uint16_t));
    if (NULL == p->use_in || NULL == p->use_out || NULL == p->prefix_pool) {
        return -1;
    }
    for (size_t s = 0; s < nstreams; ++s) {
        p->use_in[s].prefix = p->prefix_pool + (2 * s) * plen;
        p->use_out[s].prefix = p->prefix_pool + (2 * s + 1) * plen;
    }
    for (int i = 0; i < p->ndesc; ++i) {
        const ofl_desc_t *d = &p->desc[i];
        for (int k = 0; k < d->n_in + d->n_out; ++k) {
            const ofl_ref_t *r = &p->refs[d->first_ref + k];
            if (OFL_BUF_PEER != r->buf) {
                continue;
            }
            ofl_stream_use_t *u = (k < d->n_in ? p->use_in : p->use_out)
                                  + (size_t) r->peer * OFL_CHANNELS + r->chan;
            u->per_round++;
            for (int j = d->seg_off + 1; j <= p->period; ++j) {
                u->prefix[j]++;
            }
        }
    }
    return 0;
}

static void begin_queue(builder_t *b)
{
    ofl_program_t *p = b->p;
    if (p->nqueues >= OFL_PROG_MAX_QUEUES) {
        b->failed = 1;
        return;
    }
    p->qfirst[p->nqueues] = p->ndesc;
    p->qlen[p->nqueues] = 0;
    p->nqueues++;
}

static void end_queue(builder_t *b)
{
    ofl_program_t *p = b->p;
    p->qlen[p->nqueues - 1] = p->ndesc - p->qfirst[p->nqueues - 1];
}

/* Up the reduction tree: combine own data with the children's partial results
 * (fixed order: own, then children by increasing virtual rank) and pass it on.
 * The root keeps the result; with `result_down` it also feeds its children. */
static void compile_up(builder_t *b, const ofl_tree_node_t *t, int result_down)
{
    draft_t d = { 0 };
    draft_add(b, &d, 0, OFL_BUF_SEND, -1);
    for (int i = 0; i < t->nchildren; ++i) {
        draft_add(b, &d, 0, OFL_BUF_PEER, t->children[i]);
    }
    if (t->parent >= 0) {
        draft_add(b, &d, 1, OFL_BUF_PEER, t->parent);
    } else {
        draft_add(b, &d, 1, OFL_BUF_RECV, -1);
        if (result_down) {
            for (int i = 0; i < t->nchildren; ++i) {
                draft_add_chan(b, &d, 1, OFL_BUF_PEER, t->children[i], 1);
            }
        }
    }
    begin_queue(b);
    emit(b, &d);
    end_queue(b);
}

/* Down the broadcast tree: take the parent's data (the root's own buffer), keep a
 * copy, forward it to the children. */
static void compile_down(builder_t *b, const ofl_tree_node_t *t, int byref)
{
    draft_t d = { 0 };
    if (t->parent >= 0) {
        draft_add_chan(b, &d, 0, OFL_BUF_PEER, t->parent, 1);
        draft_add(b, &d, 1, OFL_BUF_RECV, -1);
    } else {
        draft_add(b, &d, 0, OFL_BUF_RECV, -1);
    }
    for (int i = 0; i < t->nchildren; ++i) {
        draft_add_chan(b, &d, 1, OFL_BUF_PEER, t->children[i], 1);
    }
    if (byref) {
        for (int i = 0; i < d.n_in; ++i) {
            d.in[i].byref = OFL_BUF_PEER == d.in[i].buf;
        }
        for (int i = 0; i < d.n_out; ++i) {
            d.out[i].byref = OFL_BUF_PEER == d.out[i].buf;
        }
    }
    begin_queue(b);
    if (d.n_out > 0) {
        emit(b, &d);
    }
    end_queue(b);
    if (byref && t->nchildren > 0) {
        /* The children read this rank's buffer: the call may complete (and the
         * application reuse the buffer) only once each has said it is done. A
         * queue of its own, so the next segment need not wait for this one. */
        begin_queue(b);
        emit_fence(b, &d);
        end_queue(b);
    }
}

/* Every rank: one descriptor puts the own contribution to every peer, one
 * combines all contributions in rank order into the result. */
static void compile_exchange(builder_t *b, int rank, int size)
{
    draft_t put = { 0 };
    draft_add(b, &put, 0, OFL_BUF_SEND, -1);
    for (int r = 0; r < size; ++r) {
        if (r != rank) {
            draft_add(b, &put, 1, OFL_BUF_PEER, r);
        }
    }
    begin_queue(b);
    if (put.n_out > 0) {
        emit(b, &put);
    }
    end_queue(b);

    draft_t all = { 0 };
    for (int r = 0; r < size; ++r) {
        draft_add(b, &all, 0, r == rank ? OFL_BUF_SEND : OFL_BUF_PEER, r);
    }
    draft_add(b, &all, 1, OFL_BUF_RECV, -1);
    begin_queue(b);
    emit(b, &all);
    end_queue(b);
}

/* Segment ownership (reduce-scatter + allgather in one program): segment s of
 * every round of `size` segments belongs to rank s. Queue 0 puts this rank's
 * contribution of every segment it does not own to the owner (channel 0); queue
 * 1 combines all contributions of its own segments in rank order into the
 * receive buffer and puts the result to everybody (channel 1); queue 2 takes the
 * other owners' results. Three queues, so that no rank's combining waits for
 * another rank's combining: every rank combines 1/size of the message and all
 * move data at once. For large messages. */
static void compile_split(builder_t *b, int rank, int size)
{
    b->p->period = size;
    begin_queue(b);
    for (int s = 0; s < size; ++s) {
        if (s != rank) {
            draft_t d = { 0 };
            d.seg_off = s;
            draft_add(b, &d, 0, OFL_BUF_SEND, -1);
            draft_add_chan(b, &d, 1, OFL_BUF_PEER, s, 0);
            emit(b, &d);
        }
    }
    end_queue(b);

    begin_queue(b);
    draft_t d = { 0 };
    d.seg_off = rank;
    for (int r = 0; r < size; ++r) {
        draft_add_chan(b, &d, 0, r == rank ? OFL_BUF_SEND : OFL_BUF_PEER, r, 0);
    }
    draft_add(b, &d, 1, OFL_BUF_RECV, -1);
    for (int r = 0; r < size; ++r) {
        if (r != rank) {
            draft_add_chan(b, &d, 1, OFL_BUF_PEER, r, 1);
        }
    }
    emit(b, &d);
    end_queue(b);

    begin_queue(b);
    for (int s = 0; s < size; ++s) {
        if (s != rank) {
            draft_t r = { 0 };
            r.seg_off = s;
            draft_add_chan(b, &r, 0, OFL_BUF_PEER, s, 1);
            draft_add(b, &r, 1, OFL_BUF_RECV, -1);
            emit(b, &r);
        }
    }
    end_queue(b);
}

static int compile_into(builder_t *b, ofl_coll_t coll, int root, int rank, int size,
                        const ofl_sched_params_t *params)
{
    ofl_program_t *prog = b->p;
    ofl_tree_node_t t;
    switch (coll) {
    case OFL_COLL_ALLREDUCE:
    case OFL_COLL_BARRIER:
        if (OFL_SCHED_EXCHANGE == params->shape || OFL_SCHED_SPLIT == params->shape) {
            if (size > OFL_TREE_MAX_CHILDREN + 1) {
                return -1;
            }
            if (OFL_SCHED_SPLIT == params->shape && OFL_COLL_ALLREDUCE == coll) {
                compile_split(b, rank, size);
            } else {
                compile_exchange(b, rank, size);
            }
            break;
        }
        /* One tree both ways: each edge then carries one item per segment in each
         * direction, which keeps every edge's item sequence deterministic. */
        if (0 != ofl_tree_node(params->reduce_kind, params->reduce_radix, size, root, rank,
                               &t)) {
            return -1;
        }
        compile_up(b, &t, 1);
        if (t.parent >= 0) {
            compile_down(b, &t, 0);
        }
        break;
    case OFL_COLL_REDUCE:
        if (0 != ofl_tree_node(params->reduce_kind, params->reduce_radix, size, root, rank,
                               &t)) {
            return -1;
        }
        compile_up(b, &t, 0);
        break;
    case OFL_COLL_BCAST:
        if (0 != ofl_tree_node(params->bcast_kind, params->bcast_radix, size, root, rank,
                               &t)) {
            return -1;
        }
        compile_down(b, &t, params->byref);
        /* every item is a reference: no mailbox slot bounds a segment (the same
         * on every rank, so all cut the message alike) */
        prog->byref = params->byref;
        break;
    default:
        return -1;
    }
    if (b->failed || 0 != finish_streams(b)) {
        ofl_program_free(prog);
        return -1;
    }
    return 0;
}

int ofl_sched_compile(ofl_coll_t coll, int root, int rank, int size,
                      const ofl_sched_params_t *params, ofl_program_t *prog)
{
    memset(prog, 0, sizeof(*prog));
    if (NULL == params || params->slots < 1 || params->slots > 1024 || size < 1
        || rank < 0 || rank >= size || coll >= OFL_COLL_COUNT) {
        return -1;
    }
    if (OFL_COLL_ALLREDUCE == coll || OFL_COLL_BARRIER == coll) {
        root = 0;
    } else if (root < 0 || root >= size) {
        return -1;
    }
    prog->coll = coll;
    prog->root = root;
    prog->rank = rank;
    prog->size = size;
    prog->slots = params->slots;
    prog->period = 1;

    builder_t *bp = calloc(1, sizeof(*bp));
    if (NULL == bp) {
        return -1;
    }
    bp->p = prog;
    int rc = compile_into(bp, coll, root, rank, size, params);
    free(bp);
    return rc;
}

void ofl_program_free(ofl_program_t *prog)
{
    free(prog->use_in);
    free(prog->use_out);
    free(prog->prefix_pool);
    free(prog->desc);
    free(prog->refs);
    free(prog->trigs);
    free(prog->cps);
    memset(prog, 0, sizeof(*prog));
}

const char *ofl_coll_name(ofl_coll_t coll)
{
    static const char *names[OFL_COLL_COUNT] = { "allreduce", "reduce", "bcast", "barrier" };
    return coll < OFL_COLL_COUNT ? names[coll] : "?";
}

static void dump_ref(const ofl_program_t *p, ofl_ref_t r, FILE *out)
{
    switch (r.buf) {
    case OFL_BUF_SEND:
        fputs("send", out);
        break;
    case OFL_BUF_RECV:
        fputs("recv", out);
        break;
    default:
        fprintf(out, "%s[%d.%d]", r.byref ? "ref" : "mbox", p->peers[r.peer], r.chan);
        break;
    }
}

void ofl_program_dump(const ofl_program_t *p, FILE *out)
{
    static const char *cnt[] = { "DATA", "CREDIT" };
    fprintf(out, "program %s root=%d rank=%d/%d slots=%d period=%d peers=%d\n",
            ofl_coll_name(p->coll), p->root, p->rank, p->size, p->slots, p->period, p->npeers);
    for (int q = 0; q < p->nqueues; ++q) {
        for (int i = 0; i < p->qlen[q]; ++i) {
            const ofl_desc_t *d = &p->desc[p->qfirst[q] + i];
            fprintf(out, "  q%d d%d seg+%d: ", q, i, d->seg_off);
            const ofl_ref_t *refs = &p->refs[d->first_ref];
            for (int k = 0; k < d->n_in; ++k) {
                fputs(k ? " op " : "", out);
                dump_ref(p, refs[k], out);
            }
            fputs(" -> ", out);
            for (int k = 0; k < d->n_out; ++k) {
                fputs(k ? ", " : "", out);
                dump_ref(p, refs[d->n_in + k], out);
            }
            fputs("  when", out);
            for (int k = 0; k < d->n_trig; ++k) {
                const ofl_trig_t *t = &p->trigs[d->first_trig + k];
                fprintf(out, " %s(%d.%d)>=base%+d", cnt[t->cnt], p->peers[t->peer], t->chan,
                        t->rel);
            }
            if (0 == d->n_trig) {
                fputs(" posted", out);
            }
            fputs("  cp", out);
            for (int k = 0; k < d->n_cp; ++k) {
                const ofl_cp_t *c = &p->cps[d->first_cp + k];
                fprintf(out, " %s@%d.%d", cnt[c->cnt], p->peers[c->peer], c->chan);
            }
            fputc('\n', out);
        }
    }
}
