/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the descriptor engine (see engine.h).
 */
#include "alu/copy.h"
#include "engine/engine.h"
#include "engine/sig.h"
#include "tree/tree.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int ofl_edges_init(ofl_edges_t *edges, int size)
{
    edges->size = size;
    edges->in = calloc((size_t) size * OFL_CHANNELS, sizeof(uint64_t));
    edges->out = calloc((size_t) size * OFL_CHANNELS, sizeof(uint64_t));
    if (NULL == edges->in || NULL == edges->out) {
        ofl_edges_fini(edges);
        return -1;
    }
    return 0;
}

void ofl_edges_fini(ofl_edges_t *edges)
{
    free(edges->in);
    free(edges->out);
    edges->in = edges->out = NULL;
}

void ofl_engine_post(ofl_inst_t *inst, const ofl_program_t *prog, ofl_nic_t *nic,
                     ofl_edges_t *edges, const ofl_call_t *call)
{
    inst->prog = prog;
    inst->nic = nic;
    inst->send = call->send;
    inst->recv = call->recv;
    inst->fn = call->fn;
    inst->elem = call->elem ? call->elem : 1;
    inst->count = call->count;
    size_t seg = (call->seg_bytes && call->seg_bytes < nic->slot_bytes) ? call->seg_bytes
                                                                        : nic->slot_bytes;
    if (prog->byref) {
        /* items carry references, not data: no slot bounds a segment */
        seg = call->seg_bytes ? call->seg_bytes : call->count * inst->elem;
        seg = seg ? seg : 1;
    }
    inst->error = 0;
    inst->bad_peer = -1;
    inst->sig = call->sig;
    inst->callno = call->callno;
    inst->word = (call->callno && NULL != nic->ops->stamp) ? ofl_sig_word(call->callno, call->sig)
                                                          : 0;
    inst->ring = call->ring && NULL != nic->ops->ring;
    size_t per = seg / inst->elem;
    inst->seg_elems = per ? per : 1;
    inst->nseg = (uint32_t) ((call->count + inst->seg_elems - 1) / inst->seg_elems);
    if (0 == inst->nseg) {
        inst->nseg = 1;
    }
    uint32_t period = (uint32_t) prog->period;
    inst->rounds = (inst->nseg + period - 1) / period;
    uint32_t full = inst->rounds - 1;
    uint32_t rem = inst->nseg - full * period;
    for (int q = 0; q < OFL_PROG_MAX_QUEUES; ++q) {
        inst->cursor[q] = 0;
    }
    for (int i = 0; i < prog->npeers; ++i) {
        size_t r = (size_t) prog->peers[i] * OFL_CHANNELS;
        for (int c = 0; c < OFL_CHANNELS; ++c) {
            const ofl_stream_use_t *ui = &prog->use_in[i * OFL_CHANNELS + c];
            const ofl_stream_use_t *uo = &prog->use_out[i * OFL_CHANNELS + c];
            inst->base_in[i][c] = edges->in[r + c];
            inst->base_out[i][c] = edges->out[r + c];
            edges->in[r + c] += (uint64_t) full * ui->per_round + ui->prefix[rem];
            edges->out[r + c] += (uint64_t) full * uo->per_round + uo->prefix[rem];
        }
    }
}

/* The item a stream reference of round `round` names. */
static inline uint64_t item_in(const ofl_inst_t *inst, int peer, int chan, uint32_t round,
                               int k)
{
    const ofl_stream_use_t *u = &inst->prog->use_in[peer * OFL_CHANNELS + chan];
    return inst->base_in[peer][chan] + (uint64_t) round * u->per_round + (uint64_t) k;
}

static inline uint64_t item_out(const ofl_inst_t *inst, int peer, int chan, uint32_t round,
                                int k)
{
    const ofl_stream_use_t *u = &inst->prog->use_out[peer * OFL_CHANNELS + chan];
    return inst->base_out[peer][chan] + (uint64_t) round * u->per_round + (uint64_t) k;
}

static inline int64_t threshold(const ofl_inst_t *inst, const ofl_trig_t *t, uint32_t round)
{
    /* DATA counts what I read from the peer's stream, CREDIT what I put to it */
    uint64_t base = (OFL_CNT_DATA == t->cnt) ? item_in(inst, t->peer, t->chan, round, 0)
                                             : item_out(inst, t->peer, t->chan, round, 0);
    return (int64_t) base + t->rel;
}

/* 1 when every trigger holds, 0 while one does not, -EPROTO when a counter is
 * corrupt (nic.h, "Validation"). */
static inline int triggered(const ofl_inst_t *inst, const ofl_desc_t *d, uint32_t round)
{
    const ofl_program_t *p = inst->prog;
    ofl_nic_t *nic = inst->nic;
    for (int k = 0; k < d->n_trig; ++k) {
        const ofl_trig_t *t = &p->trigs[d->first_trig + k];
        int64_t need = threshold(inst, t, round);
        if (need > 0) {
            int rc = nic->ops->reached(nic, t->cnt, p->peers[t->peer], t->chan,
                                       (uint64_t) need);
            if (rc <= 0) {
                return rc;
            }
        }
    }
    return 1;
}

static inline void *resolve(const ofl_inst_t *inst, ofl_ref_t r, int is_out, uint32_t round,
                            size_t off)
{
    const ofl_program_t *p = inst->prog;
    ofl_nic_t *nic = inst->nic;
    switch (r.buf) {
    case OFL_BUF_SEND:
        return (char *) inst->send + off;
    case OFL_BUF_RECV:
        return (char *) inst->recv + off;
    default:
        if (is_out) {
            return nic->ops->outbox(nic, p->peers[r.peer], r.chan,
                                    item_out(inst, r.peer, r.chan, round, r.k));
        }
        return nic->ops->inbox(nic, p->peers[r.peer], r.chan,
                               item_in(inst, r.peer, r.chan, round, r.k));
    }
}

/* out = in[0] op in[1] op ... left to right, always in the compiled order: the
 * bits of a float result depend only on the program, never on arrival order.
 * When out is also a later input (in-place at a rank that is not first in the
 * order), a running result written into out would clobber that input, so the
 * combine then goes through a small stack buffer, chunk by chunk. */
static void combine(const ofl_inst_t *inst, const ofl_desc_t *d, const ofl_ref_t *refs,
                    uint32_t round, size_t off, void *out0, size_t n)
{
    const void *in[OFL_TREE_MAX_CHILDREN + 2];
    int alias = 0;
    for (int k = 0; k < d->n_in; ++k) {
        in[k] = resolve(inst, refs[k], 0, round, off);
        alias |= (k >= 2 && in[k] == out0);
    }
    if (!alias) {
        inst->fn(out0, in[0], in[1], n);
        for (int k = 2; k < d->n_in; ++k) {
            inst->fn(out0, out0, in[k], n);
        }
        return;
    }
    _Alignas(64) unsigned char tmp[2048];
    size_t elem = inst->elem;
    size_t chunk = sizeof(tmp) / elem;
    for (size_t done = 0; done < n; done += chunk) {
        size_t m = n - done < chunk ? n - done : chunk;
        size_t at = done * elem;
        inst->fn(tmp, (const char *) in[0] + at, (const char *) in[1] + at, m);
        for (int k = 2; k < d->n_in; ++k) {
            inst->fn(tmp, tmp, (const char *) in[k] + at, m);
        }
        memcpy((char *) out0 + at, tmp, m * elem);
    }
}

static int fire(const ofl_inst_t *inst, const ofl_desc_t *d, uint32_t round, uint32_t seg)
{
    const ofl_program_t *p = inst->prog;
    ofl_nic_t *nic = inst->nic;
    size_t first = (size_t) seg * inst->seg_elems;
    size_t n = 0;
    if (first < inst->count) {
        n = inst->count - first;
        if (n > inst->seg_elems) {
            n = inst->seg_elems;
        }
    }
    size_t off = first * inst->elem;
    size_t len = n * inst->elem;
    if (len > 0 && d->n_out > 0) {
        const ofl_ref_t *refs = &p->refs[d->first_ref];
        const ofl_ref_t *outs = refs + d->n_in;
        const void *result;    /* where the descriptor's result lies, locally */
        int first_out = 1;
        if (OFL_BUF_PEER == outs[0].buf && outs[0].byref) {
            /* nothing to compute here: the peers read in[0] where it is */
            result = resolve(inst, refs[0], 0, round, off);
            first_out = 0;
        } else {
            void *out0 = resolve(inst, outs[0], 1, round, off);
            if (OFL_BUF_PEER == refs[0].buf && refs[0].byref) {
                int rc = nic->ops->get(nic, p->peers[refs[0].peer], refs[0].chan,
                                       item_in(inst, refs[0].peer, refs[0].chan, round,
                                               refs[0].k),
                                       0, out0, len);
                if (0 != rc) {
                    return rc;
                }
            } else if (1 == d->n_in) {
                const void *in0 = resolve(inst, refs[0], 0, round, off);
                if (out0 != in0) {
                    ofl_copy(out0, in0, len);
                }
            } else {
                combine(inst, d, refs, round, off, out0, n);
            }
            result = out0;
        }
        for (int k = first_out; k < d->n_out; ++k) {
            if (OFL_BUF_PEER == outs[k].buf && outs[k].byref) {
                nic->ops->put_ref(nic, p->peers[outs[k].peer], outs[k].chan,
                                  item_out(inst, outs[k].peer, outs[k].chan, round, outs[k].k),
                                  result, len);
            } else {
                ofl_copy(resolve(inst, outs[k], 1, round, off), result, len);
            }
        }
    }
    for (int k = 0; k < d->n_cp; ++k) {
        const ofl_cp_t *c = &p->cps[d->first_cp + k];
        uint64_t item = (OFL_CNT_DATA == c->cnt) ? item_out(inst, c->peer, c->chan, round, c->k)
                                                 : item_in(inst, c->peer, c->chan, round, c->k);
        if (0 == round && 0 != inst->word && OFL_CNT_DATA == c->cnt) {
            /* the call's first items say what call put them */
            nic->ops->stamp(nic, p->peers[c->peer], c->chan, item, inst->word);
        }
        nic->ops->bump(nic, c->cnt, p->peers[c->peer], c->chan, item,
                       OFL_CNT_DATA == c->cnt ? (uint64_t) len : 0);
    }
    if (inst->ring) {
        int last = -1;
        for (int k = 0; k < d->n_cp; ++k) {
            int peer = p->peers[p->cps[d->first_cp + k].peer];
            if (peer != last) {
                nic->ops->ring(nic, peer);
                last = peer;
            }
        }
    }
    return 0;
}

/* Before a descriptor of the call's first round consumes anything: do the
 * items its DATA triggers waited for come from the same call (number and
 * signature)? Items of later rounds follow the first ones on the same streams. */
static int stamps_match(ofl_inst_t *inst, const ofl_desc_t *d)
{
    const ofl_program_t *p = inst->prog;
    ofl_nic_t *nic = inst->nic;
    for (int k = 0; k < d->n_trig; ++k) {
        const ofl_trig_t *t = &p->trigs[d->first_trig + k];
        if (OFL_CNT_DATA != t->cnt) {
            continue;
        }
        int64_t need = threshold(inst, t, 0);
        if (need > 0
            && nic->ops->stamped(nic, p->peers[t->peer], t->chan, (uint64_t) need - 1)
                   != inst->word) {
            inst->bad_peer = p->peers[t->peer];
            return 0;
        }
    }
    return 1;
}

static void report_mismatch(ofl_inst_t *inst)
{
    ofl_nic_t *nic = inst->nic;
    uint64_t theirs = 0;
    if (NULL != nic->ops->recorded) {
        nic->ops->recorded(nic, inst->bad_peer, inst->callno, &theirs);
    }
    if (NULL != nic->ops->mismatch) {
        nic->ops->mismatch(nic, nic->rank, inst->sig, inst->bad_peer, theirs);
    }
}

int ofl_sig_check(ofl_nic_t *nic, uint64_t sig, uint64_t callno, int *peer)
{
    int a, b;
    uint64_t sig_a, sig_b;
    if (NULL == nic->ops->mismatched) {
        return 0;
    }
    if (nic->ops->mismatched(nic, &a, &sig_a, &b, &sig_b)) {
        *peer = a == nic->rank ? b : a;
        return 1;
    }
    if (0 == callno) {
        return 0;
    }
    for (int r = 0; r < nic->size; ++r) {
        uint64_t theirs = 0;
        if (r != nic->rank && callno == nic->ops->recorded(nic, r, callno, &theirs)
            && theirs != sig) {
            nic->ops->mismatch(nic, nic->rank, sig, r, theirs);
            *peer = r;
            return 1;
        }
    }
    return 0;
}

/* Segment of queue q's next descriptor execution, or nseg when q is done. */
static inline uint32_t next_seg(const ofl_inst_t *inst, int q)
{
    const ofl_program_t *p = inst->prog;
    uint32_t qlen = (uint32_t) p->qlen[q];
    uint32_t cur = inst->cursor[q];
    if (0 == qlen || cur >= qlen * inst->rounds) {
        return inst->nseg;
    }
    const ofl_desc_t *d = &p->desc[p->qfirst[q] + (int) (cur % qlen)];
    uint32_t seg = (cur / qlen) * (uint32_t) p->period + d->seg_off;
    return seg < inst->nseg ? seg : inst->nseg;
}

int ofl_engine_progress(ofl_inst_t *inst)
{
    const ofl_program_t *p = inst->prog;
    if (inst->error) {
        return -1;
    }
    int complete = 1;
    uint32_t limit = inst->nseg;   /* segments every earlier queue has finished */
    for (int q = 0; q < p->nqueues; ++q) {
        uint32_t qlen = (uint32_t) p->qlen[q];
        uint32_t end = qlen * inst->rounds;
        uint32_t cur = inst->cursor[q];
        while (cur < end) {
            uint32_t round = cur / qlen;
            const ofl_desc_t *d = &p->desc[p->qfirst[q] + (int) (cur % qlen)];
            uint32_t seg = round * (uint32_t) p->period + d->seg_off;
            if (seg >= inst->nseg) {
                cur++;           /* beyond the message: a partial last round */
                continue;
            }
            if (seg >= limit) {
                break;
            }
            int rc = triggered(inst, d, round);
            if (rc <= 0) {
                if (0 == rc) {
                    break;
                }
                inst->cursor[q] = cur;
                inst->error = rc;
                return -1;
            }
            if (0 == round && 0 != inst->word && !stamps_match(inst, d)) {
                inst->cursor[q] = cur;
                inst->error = OFL_EMISMATCH;
                report_mismatch(inst);
                return -1;
            }
            rc = fire(inst, d, round, seg);
            if (0 != rc) {
                inst->cursor[q] = cur;
                inst->error = rc;
                return -1;
            }
            cur++;
        }
        inst->cursor[q] = cur;
        if (cur < end) {
            complete = 0;
        }
        uint32_t mine = next_seg(inst, q);
        limit = mine < limit ? mine : limit;
    }
    return complete;
}

int ofl_engine_blocker(const ofl_inst_t *inst, int *peer, int *cnt, uint64_t *have,
                       int64_t *need)
{
    const ofl_program_t *p = inst->prog;
    for (int q = 0; q < p->nqueues; ++q) {
        uint32_t qlen = (uint32_t) p->qlen[q];
        uint32_t cur = inst->cursor[q];
        if (0 == qlen || cur >= qlen * inst->rounds) {
            continue;
        }
        uint32_t round = cur / qlen;
        const ofl_desc_t *d = &p->desc[p->qfirst[q] + (int) (cur % qlen)];
        for (int k = 0; k < d->n_trig; ++k) {
            const ofl_trig_t *t = &p->trigs[d->first_trig + k];
            int64_t thr = threshold(inst, t, round);
            int who = p->peers[t->peer];
            uint64_t v = inst->nic->ops->counter(inst->nic, t->cnt, who, t->chan);
            if (thr > 0 && (int64_t) v < thr) {
                *peer = who;
                *cnt = t->cnt * OFL_CHANNELS + t->chan;
                *have = v;
                *need = thr;
                return 1;
            }
        }
    }
    return 0;
}

double ofl_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

ofl_wait_status_t ofl_engine_check(ofl_inst_t *inst, double waited_s, double timeout_s,
                                   int *peer)
{
    if (OFL_EMISMATCH == inst->error) {
        *peer = inst->bad_peer;
        return OFL_WAIT_MISMATCH;
    }
    if (ofl_sig_check(inst->nic, inst->sig, inst->callno, peer)) {
        return OFL_WAIT_MISMATCH;
    }
    int dead = inst->nic->ops->poisoned(inst->nic);
    if (dead >= 0) {
        *peer = dead;
        return OFL_WAIT_PEER_DEAD;
    }
    if (OFL_NIC_CORRUPT == dead) {
        inst->error = -EPROTO;
        return OFL_WAIT_FAILED;
    }
    int who, cnt;
    uint64_t have;
    int64_t need;
    if (!ofl_engine_blocker(inst, &who, &cnt, &have, &need)) {
        return OFL_WAIT_OK;
    }
    if (!inst->nic->ops->peer_alive(inst->nic, who)) {
        /* Last look: the peer may have finished its part before it left. */
        int done = ofl_engine_progress(inst);
        if (done) {
            return done > 0 ? OFL_WAIT_OK : OFL_WAIT_FAILED;
        }
        inst->nic->ops->poison(inst->nic, who);
        *peer = who;
        return OFL_WAIT_PEER_DEAD;
    }
    if (timeout_s > 0 && waited_s > timeout_s) {
        *peer = who;
        return OFL_WAIT_TIMEOUT;
    }
    return OFL_WAIT_OK;
}

ofl_wait_status_t ofl_wait_loop(ofl_poll_fn poll, ofl_check_fn check, void *ctx,
                                const ofl_wait_opts_t *opts, int *peer)
{
    int done = poll(ctx);
    if (done) {
        return done > 0 ? OFL_WAIT_OK : OFL_WAIT_FAILED;
    }
    /* The clock is read from the first liveness check on: most waits end
     * long before it, and a clock read costs as much as several polls. */
    double start = 0.0, next_check = 0.0;
    for (unsigned long iter = 1;; ++iter) {
        done = poll(ctx);
        if (done) {
            return done > 0 ? OFL_WAIT_OK : OFL_WAIT_FAILED;
        }
        if (opts->progress && 0 == (iter & (OFL_WAIT_PROGRESS_EVERY - 1))) {
            opts->progress(opts->ctx);
        }
        if (iter >= opts->spin_before_yield) {
            sched_yield();
        } else {
            ofl_cpu_relax();
        }
        if (0 != (iter & 255)) {
            continue;
        }
        double t = ofl_now_s();
        if (0.0 == start) {
            start = t;
            next_check = t + opts->liveness_period_s;
            continue;
        }
        if (t < next_check) {
            continue;
        }
        next_check = t + opts->liveness_period_s;
        ofl_wait_status_t st = check(ctx, t - start, opts->timeout_s, peer);
        if (OFL_WAIT_OK != st) {
            return st;
        }
    }
}

static int engine_poll(void *ctx)
{
    return ofl_engine_progress(ctx);
}

static ofl_wait_status_t engine_check(void *ctx, double waited_s, double timeout_s, int *peer)
{
    return ofl_engine_check(ctx, waited_s, timeout_s, peer);
}

ofl_wait_status_t ofl_engine_wait(ofl_inst_t *inst, const ofl_wait_opts_t *opts, int *peer)
{
    ofl_wait_status_t st = ofl_wait_loop(engine_poll, engine_check, inst, opts, peer);
    if (OFL_WAIT_FAILED == st && OFL_EMISMATCH == inst->error) {
        *peer = inst->bad_peer;
        return OFL_WAIT_MISMATCH;
    }
    return st;
}

ofl_wait_status_t ofl_engine_run(ofl_inst_t *inst, const ofl_program_t *prog, ofl_nic_t *nic,
                                 ofl_edges_t *edges, const ofl_call_t *call,
                                 const ofl_wait_opts_t *opts, int *peer)
{
    ofl_engine_post(inst, prog, nic, edges, call);
    /* most small calls are done by the time their last descriptor is posted */
    if (__builtin_expect(ofl_engine_progress(inst) > 0, 1)) {
        return OFL_WAIT_OK;
    }
    return ofl_engine_wait(inst, opts, peer);
}
