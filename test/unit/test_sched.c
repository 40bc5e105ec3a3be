/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Unit test of the schedule compiler (src/sched) without MPI: the shape of its
 * programs. Every rank's program compiles and is internally consistent
 * (triggers, CP bumps and item positions follow from its references, the
 * per-stream use tables are recomputed here), and both ends of every stream
 * (ordered pair of ranks, channel) agree on how many items cross it per round
 * and per partial round: tree, exchange and split programs, and by-reference
 * (single-copy) bcasts (every mailbox item a reference, a fence at every rank
 * with children).
 *
 * What the programs compute is tested by test_engine (simulation) and
 * test_threads (threads).
 */
#include "engine/engine.h"
#include "engine_util.h"
#include "sched/progset.h"
#include "sched/sched.h"
#include "tree/tree.h"
#include "unit.h"

#include <stdint.h>
#include <string.h>
#include <unistd.h>

static const ofl_sched_params_t shape_params[] = {
    { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0, 0 },
    { OFL_TREE_KARY, 3, OFL_TREE_KNOMIAL, 2, 2, 0, 0 },
    { OFL_TREE_KARY, 4, OFL_TREE_KNOMIAL, 3, 4, 0, 0 },
    { OFL_TREE_KNOMIAL, 2, OFL_TREE_KARY, 3, 1, 0, 0 },
    { OFL_TREE_KNOMIAL, 3, OFL_TREE_KARY, 4, 2, 0, 0 },
    { OFL_TREE_KNOMIAL, 4, OFL_TREE_KNOMIAL, 4, 3, 0, 0 },
};
#define NSHAPE ((int) (sizeof(shape_params) / sizeof(shape_params[0])))

/* The use table of the stream between p's rank and `rank` on `chan`: what p puts
 * to it (out) or reads from it; NULL when rank is not p's peer. */
static const ofl_stream_use_t *stream_use(const ofl_program_t *p, int rank, int chan, int out)
{
    int i = peer_slot(p, rank);
    if (i < 0) {
        return NULL;
    }
    return out ? &p->use_out[i * NCH + chan] : &p->use_in[i * NCH + chan];
}

/* Items per round of that stream (0 when p does not use it). */
static int per_round(const ofl_program_t *p, int rank, int chan, int out)
{
    const ofl_stream_use_t *u = stream_use(p, rank, chan, out);
    return NULL == u ? 0 : u->per_round;
}

/* What pa's rank puts to pb's rank on each channel, per round and per partial
 * round, is exactly what pb's rank reads from pa's: the number of disagreements. */
static int streams_mismatch(const ofl_program_t *pa, const ofl_program_t *pb)
{
    int a = pa->rank, b = pb->rank, bad = pa->period != pb->period;
    if (bad) {
        return bad;
    }
    for (int c = 0; c < NCH; ++c) {
        const ofl_stream_use_t *uo = stream_use(pa, b, c, 1), *ui = stream_use(pb, a, c, 0);
        bad += (uo ? uo->per_round : 0) != (ui ? ui->per_round : 0);
        for (int j = 0; j <= pa->period; ++j) {
            bad += (uo ? uo->prefix[j] : 0) != (ui ? ui->prefix[j] : 0);
        }
    }
    return bad;
}

/* Internal consistency of one program: indices in range, each peer listed once,
 * descriptors of a queue in segment order; every mailbox reference has exactly
 * the trigger and CP bump program.h defines (a read waits for DATA >= k + 1 and
 * hands back CREDIT, a put waits for CREDIT >= k + 1 - slots and raises DATA),
 * its k is its position among the stream's items of the round, and each stream
 * is read (written) by one queue only; the use tables equal the ones recomputed
 * here from the references, and every stream carries at most one item per round
 * (true of every program the compiler makes).
 * By reference: in a program with byref set every mailbox reference is by
 * reference (no slot bounds its segments, so no item may carry data), in any
 * other none is, and no reference to a caller's buffer is; a descriptor with a
 * by-reference item copies one input (nothing is combined). Only such a program
 * may hold fences (no input, no output, no CP bump): each trigger of a fence is
 * the CREDIT of a stream whose by-reference put of the same segment it waits to
 * have been read (rel = that put's k + 1), and every by-reference put is fenced
 * exactly once. Returns the number of problems. */
static int program_sane(const ofl_program_t *p)
{
    int bad = 0;
    bad += p->period < 1 || p->npeers < 0 || p->npeers > OFL_PROG_MAX_PEERS;
    bad += p->nqueues < 1 || p->nqueues > OFL_PROG_MAX_QUEUES;
    bad += NULL == p->use_in || NULL == p->use_out;
    if (bad) {
        return bad;
    }
    for (int i = 0; i < p->npeers; ++i) {
        bad += p->peers[i] < 0 || p->peers[i] >= p->size || p->peers[i] == p->rank;
        for (int j = 0; j < i; ++j) {
            bad += p->peers[i] == p->peers[j];
        }
    }
    int total = 0;
    for (int q = 0; q < p->nqueues; ++q) {
        bad += p->qfirst[q] != total || p->qlen[q] < 0;
        total += p->qlen[q];
    }
    bad += total != p->ndesc;
    if (bad) {
        return bad;
    }
    size_t ns = (size_t) p->npeers * NCH, plen = (size_t) p->period + 1;
    int *owner = calloc(2 * ns + 1, sizeof(int));      /* [dir][stream]: queue + 1 */
    int *next_k = calloc(2 * ns + 1, sizeof(int));     /* [dir][stream] */
    int *prefix = calloc(2 * ns * plen + 1, sizeof(int)); /* [dir][stream][j] */
    int *ref_put = calloc(3 * ns + 1, sizeof(int));   /* [0][s]: seg_off + 1, [1][s]: k,
                                                         [2][s]: fences, of a by-ref put */
    if (NULL == owner || NULL == next_k || NULL == prefix || NULL == ref_put) {
        free(owner);
        free(next_k);
        free(prefix);
        free(ref_put);
        return 1;
    }
    for (int q = 0; q < p->nqueues; ++q) {
        int last_off = 0;
        for (int i = 0; i < p->qlen[q]; ++i) {
            const ofl_desc_t *d = &p->desc[p->qfirst[q] + i];
            int fence = 0 == d->n_in && 0 == d->n_out;
            bad += fence ? !p->byref : d->n_in < 1 || d->n_out < 1;
            bad += d->seg_off >= p->period || d->seg_off < last_off;
            last_off = d->seg_off;
            bad += d->first_ref + d->n_in + d->n_out > p->nrefs;
            bad += d->first_trig + d->n_trig > p->ntrigs || d->first_cp + d->n_cp > p->ncps;
            if (bad) {
                break;
            }
            if (fence) {
                bad += 0 != d->n_cp || d->n_trig < 1;
                for (int t = 0; t < d->n_trig; ++t) {
                    const ofl_trig_t *g = &p->trigs[d->first_trig + t];
                    if (OFL_CNT_CREDIT != g->cnt || g->peer >= p->npeers || g->chan >= NCH) {
                        bad++;
                        continue;
                    }
                    size_t s = (size_t) g->peer * NCH + g->chan;
                    bad += ref_put[s] != d->seg_off + 1 || g->rel != ref_put[ns + s] + 1;
                    ref_put[2 * ns + s]++;
                }
                continue;
            }
            int has_ref = 0;
            for (int k = 0; k < d->n_in + d->n_out; ++k) {
                has_ref |= p->refs[d->first_ref + k].byref;
            }
            bad += has_ref && 1 != d->n_in;
            uint8_t trig_used[2 * OFL_PROG_MAX_PEERS] = { 0 };
            uint8_t cp_used[2 * OFL_PROG_MAX_PEERS] = { 0 };
            int mailboxes = 0;
            for (int k = 0; k < d->n_in + d->n_out; ++k) {
                ofl_ref_t r = p->refs[d->first_ref + k];
                int out = k >= d->n_in;
                bad += r.buf > OFL_BUF_PEER || (out && OFL_BUF_SEND == r.buf);
                bad += r.byref != (OFL_BUF_PEER == r.buf && p->byref);
                if (OFL_BUF_PEER != r.buf) {
                    continue;
                }
                mailboxes++;
                if (r.peer >= p->npeers || r.chan >= NCH) {
                    bad++;
                    continue;
                }
                size_t s = (size_t) out * ns + (size_t) r.peer * NCH + r.chan;
                bad += 0 != owner[s] && owner[s] != q + 1;
                owner[s] = q + 1;
                bad += r.k != next_k[s]++;
                if (out && r.byref) {
                    size_t st = s - ns;   /* the stream */
                    ref_put[st] = d->seg_off + 1;
                    ref_put[ns + st] = r.k;
                }
                for (size_t j = (size_t) d->seg_off + 1; j < plen; ++j) {
                    prefix[s * plen + j]++;
                }
                /* Its trigger and its CP bump, each used once. */
                int want_cnt = out ? OFL_CNT_CREDIT : OFL_CNT_DATA;
                int want_cp = out ? OFL_CNT_DATA : OFL_CNT_CREDIT;
                int want_rel = out ? r.k + 1 - p->slots : r.k + 1;
                int tfound = 0, cfound = 0;
                for (int t = 0; t < d->n_trig && !tfound; ++t) {
                    const ofl_trig_t *g = &p->trigs[d->first_trig + t];
                    if (!trig_used[t] && g->cnt == want_cnt && g->peer == r.peer
                        && g->chan == r.chan && g->rel == want_rel) {
                        trig_used[t] = 1;
                        tfound = 1;
                    }
                }
                for (int c = 0; c < d->n_cp && !cfound; ++c) {
                    const ofl_cp_t *g = &p->cps[d->first_cp + c];
                    if (!cp_used[c] && g->cnt == want_cp
                        && g->peer == r.peer && g->chan == r.chan && g->k == r.k) {
                        cp_used[c] = 1;
                        cfound = 1;
                    }
                }
                bad += !tfound || !cfound;
            }
            bad += d->n_trig != mailboxes || d->n_cp != mailboxes;
        }
    }
    for (size_t s = 0; s < 2 * ns && 0 == bad; ++s) {
        const ofl_stream_use_t *u = s < ns ? &p->use_in[s] : &p->use_out[s - ns];
        bad += u->per_round != next_k[s] || next_k[s] > 1;
        for (size_t j = 0; j < plen; ++j) {
            bad += u->prefix[j] != prefix[s * plen + j];
        }
        bad += 0 != u->prefix[0] || u->per_round != u->prefix[plen - 1];
    }
    /* Every listed peer carries something. */
    for (int i = 0; i < p->npeers && 0 == bad; ++i) {
        int used = 0;
        for (int c = 0; c < NCH; ++c) {
            used += p->use_in[i * NCH + c].per_round + p->use_out[i * NCH + c].per_round;
        }
        bad += 0 == used;
    }
    /* Every by-reference put is fenced once: its sender keeps the data until read. */
    for (size_t s = 0; s < ns && 0 == bad; ++s) {
        bad += (0 != ref_put[s]) != (1 == ref_put[2 * ns + s]) || ref_put[2 * ns + s] > 1;
    }
    free(owner);
    free(next_k);
    free(prefix);
    free(ref_put);
    return bad;
}

/* Which streams the trees say a rank reads and writes, per round: in[r * NCH + c]
 * / out[r * NCH + c]. Contributions go up on channel 0, results (and broadcast
 * data) come down on channel 1. */
static void expected_edges(ofl_coll_t coll, int root, int rank, int size,
                           const ofl_sched_params_t *pp, int *in, int *out)
{
    memset(in, 0, sizeof(int) * (size_t) size * NCH);
    memset(out, 0, sizeof(int) * (size_t) size * NCH);
    ofl_tree_node_t t;
    if (OFL_COLL_BCAST == coll) {
        ofl_tree_node(pp->bcast_kind, pp->bcast_radix, size, root, rank, &t);
    } else {
        if (OFL_COLL_REDUCE != coll) {
            root = 0;
        }
        ofl_tree_node(pp->reduce_kind, pp->reduce_radix, size, root, rank, &t);
    }
    int up = OFL_COLL_BCAST != coll;
    int down = OFL_COLL_REDUCE != coll;
    if (t.parent >= 0) {
        out[t.parent * NCH + 0] |= up;
        in[t.parent * NCH + 1] |= down;
    }
    for (int i = 0; i < t.nchildren; ++i) {
        in[t.children[i] * NCH + 0] |= up;
        out[t.children[i] * NCH + 1] |= down;
    }
}

static void test_shape(void)
{
    static ofl_program_t progs[17];
    int in[17 * NCH], out[17 * NCH];
    for (int ps = 0; ps < NSHAPE; ++ps) {
        const ofl_sched_params_t *pp = &shape_params[ps];
        for (int coll = 0; coll < OFL_COLL_COUNT; ++coll) {
            for (int size = 1; size <= 17; ++size) {
                for (int root = 0; root < size; ++root) {
                    int ok = 1;
                    for (int r = 0; r < size; ++r) {
                        int rc = ofl_sched_compile((ofl_coll_t) coll, root, r, size, pp,
                                                   &progs[r]);
                        CHECK(0 == rc, "compile %s root %d rank %d/%d params %d",
                              ofl_coll_name(coll), root, r, size, ps);
                        ok &= 0 == rc;
                    }
                    if (!ok) {
                        continue;
                    }
                    int insane = 0, mismatch = 0, wrong = 0, items = 0;
                    int want_root = (OFL_COLL_BCAST == coll || OFL_COLL_REDUCE == coll)
                                        ? root : 0;
                    for (int a = 0; a < size; ++a) {
                        const ofl_program_t *p = &progs[a];
                        insane += program_sane(p);
                        insane += p->rank != a || p->size != size || p->root != want_root
                                  || p->coll != (ofl_coll_t) coll || p->slots != pp->slots
                                  || 1 != p->period || 0 != p->byref;
                        expected_edges((ofl_coll_t) coll, root, a, size, pp, in, out);
                        for (int b = 0; b < size; ++b) {
                            /* What a puts to b is exactly what b reads from a. */
                            mismatch += streams_mismatch(p, &progs[b]);
                            for (int c = 0; c < NCH; ++c) {
                                wrong += per_round(p, b, c, 1) != out[b * NCH + c]
                                         || per_round(p, b, c, 0) != in[b * NCH + c];
                                items += per_round(p, b, c, 1);
                            }
                        }
                    }
                    /* Not vacuous: a tree has size - 1 edges, allreduce and barrier
                     * use each both ways. */
                    int want_items = (size - 1)
                                     * ((OFL_COLL_ALLREDUCE == coll || OFL_COLL_BARRIER == coll)
                                            ? 2 : 1);
                    CHECK(0 == insane && 0 == mismatch && 0 == wrong && items == want_items,
                          "%s root %d size %d params %d: insane %d mismatch %d wrong %d "
                          "items %d/%d", ofl_coll_name(coll), root, size, ps, insane, mismatch,
                          wrong, items, want_items);
                    for (int r = 0; r < size; ++r) {
                        ofl_program_free(&progs[r]);
                    }
                }
            }
        }
    }

    /* The dump names the program and its mailboxes. */
    ofl_program_t p;
    CHECK(0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 0, 5, &shape_params[0], &p),
          "compile for dump");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(NULL != f, "open_memstream");
    if (NULL != f) {
        ofl_program_dump(&p, f);
        fclose(f);
        /* Up on channel 0, down on channel 1, from the root's one combine. */
        CHECK(NULL != strstr(text, "program allreduce root=0 rank=0/5 slots=1 period=1")
                  && NULL != strstr(text, "send op mbox[1.0] op mbox[2.0] -> recv, mbox[1.1], "
                                          "mbox[2.1]")
                  && NULL != strstr(text, "DATA(1.0)") && NULL != strstr(text, "CREDIT(2.1)"),
              "dump: %s", text);
        free(text);
    }
    ofl_program_free(&p);
    CHECK(0 == ofl_sched_compile(OFL_COLL_BCAST, 2, 4, 6, &shape_params[1], &p),
          "compile for tmpfile dump");
    f = tmpfile();
    CHECK(NULL != f, "tmpfile");
    if (NULL != f) {
        ofl_program_dump(&p, f);
        char buf[512] = { 0 };
        rewind(f);
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        CHECK(n > 0 && NULL != strstr(buf, "program bcast root=2 rank=4/6"), "dump: %s", buf);
    }
    ofl_program_free(&p);

    /* Refused parameters leave the program empty. */
    ofl_sched_params_t bad = shape_params[0];
    bad.slots = 0;
    CHECK(-1 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 0, 4, &bad, &p) && NULL == p.desc
              && 0 == p.ndesc, "slots 0 accepted");
    bad.slots = 1025;
    CHECK(-1 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 0, 4, &bad, &p), "slots 1025");
    bad = shape_params[0];
    bad.reduce_kind = OFL_TREE_KNOMIAL;
    bad.reduce_radix = 1;
    CHECK(-1 == ofl_sched_compile(OFL_COLL_REDUCE, 0, 0, 4, &bad, &p), "knomial radix 1");
    CHECK(-1 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 0, 4, NULL, &p), "NULL params");
    CHECK(-1 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 4, 4, &shape_params[0], &p),
          "rank == size");
    CHECK(-1 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, -1, 4, &shape_params[0], &p),
          "rank -1");
    CHECK(-1 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 0, 0, &shape_params[0], &p),
          "size 0");
    CHECK(-1 == ofl_sched_compile(OFL_COLL_COUNT, 0, 0, 4, &shape_params[0], &p),
          "unknown collective");
    CHECK(-1 == ofl_sched_compile(OFL_COLL_BCAST, 4, 0, 4, &shape_params[0], &p),
          "bcast root == size");
    CHECK(-1 == ofl_sched_compile(OFL_COLL_REDUCE, -1, 0, 4, &shape_params[0], &p),
          "reduce root -1");
    /* Allreduce has no root: any value is accepted and ignored. */
    CHECK(0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 3, 1, 4, &shape_params[0], &p)
              && 0 == p.root, "allreduce root not ignored");
    ofl_program_free(&p);
}

/* The two programs are the same data (header, peers, queues, descriptors,
 * references, triggers, CP bumps and use tables). */
static int programs_equal(const ofl_program_t *a, const ofl_program_t *b)
{
    if (a->coll != b->coll || a->root != b->root || a->rank != b->rank || a->size != b->size
        || a->slots != b->slots || a->period != b->period || a->npeers != b->npeers
        || a->nqueues != b->nqueues || a->ndesc != b->ndesc || a->nrefs != b->nrefs
        || a->ntrigs != b->ntrigs || a->ncps != b->ncps) {
        return 0;
    }
    if (0 != memcmp(a->peers, b->peers, sizeof(int) * (size_t) a->npeers)) {
        return 0;
    }
    for (int q = 0; q < a->nqueues; ++q) {
        if (a->qlen[q] != b->qlen[q] || a->qfirst[q] != b->qfirst[q]) {
            return 0;
        }
    }
    if ((a->ndesc > 0 && 0 != memcmp(a->desc, b->desc, sizeof(*a->desc) * (size_t) a->ndesc))
        || (a->nrefs > 0
            && 0 != memcmp(a->refs, b->refs, sizeof(*a->refs) * (size_t) a->nrefs))
        || (a->ntrigs > 0
            && 0 != memcmp(a->trigs, b->trigs, sizeof(*a->trigs) * (size_t) a->ntrigs))
        || (a->ncps > 0 && 0 != memcmp(a->cps, b->cps, sizeof(*a->cps) * (size_t) a->ncps))) {
        return 0;
    }
    for (int s = 0; s < a->npeers * NCH; ++s) {
        for (int out = 0; out < 2; ++out) {
            const ofl_stream_use_t *ua = out ? &a->use_out[s] : &a->use_in[s];
            const ofl_stream_use_t *ub = out ? &b->use_out[s] : &b->use_in[s];
            if (ua->per_round != ub->per_round
                || 0 != memcmp(ua->prefix, ub->prefix,
                               sizeof(uint16_t) * ((size_t) a->period + 1))) {
                return 0;
            }
        }
    }
    return 1;
}

/* Problems in rank's exchange program against its definition: queue 0 is one
 * descriptor putting the send buffer to every other rank's mailbox (or nothing
 * when alone), queue 1 one descriptor combining every rank's contribution in rank
 * order (its own from the send buffer) into the receive buffer; one segment per
 * round, every stream on channel 0. */
static int exchange_wrong(const ofl_program_t *p)
{
    int n = p->size, bad = 0;
    bad += 2 != p->nqueues || (n > 1) != p->qlen[0] || 1 != p->qlen[1] || 1 != p->period;
    bad += n - 1 != p->npeers;
    if (bad) {
        return bad;
    }
    for (int r = 0; r < n; ++r) {
        bad += r != p->rank
               && (1 != per_round(p, r, 0, 0) || 1 != per_round(p, r, 0, 1)
                   || 0 != per_round(p, r, 1, 0) || 0 != per_round(p, r, 1, 1));
    }
    if (n > 1) {
        const ofl_desc_t *d = &p->desc[p->qfirst[0]];
        const ofl_ref_t *refs = &p->refs[d->first_ref];
        bad += 1 != d->n_in || OFL_BUF_SEND != refs[0].buf || n - 1 != d->n_out;
        bad += n - 1 != d->n_trig || n - 1 != d->n_cp || 0 != d->seg_off;
        uint8_t hit[OFL_PROG_MAX_PEERS] = { 0 };
        for (int k = 0; k < d->n_out && 0 == bad; ++k) {
            ofl_ref_t o = refs[d->n_in + k];
            int to = OFL_BUF_PEER == o.buf ? p->peers[o.peer] : -1;
            bad += to < 0 || to >= n || to == p->rank || hit[to]++ || 0 != o.chan || 0 != o.k;
            bad += OFL_CNT_CREDIT != p->trigs[d->first_trig + k].cnt
                   || OFL_CNT_DATA != p->cps[d->first_cp + k].cnt;
        }
    }
    const ofl_desc_t *c = &p->desc[p->qfirst[1]];
    const ofl_ref_t *refs = &p->refs[c->first_ref];
    bad += n != c->n_in || 1 != c->n_out || OFL_BUF_RECV != refs[c->n_in].buf;
    bad += n - 1 != c->n_trig || n - 1 != c->n_cp || 0 != c->seg_off;
    for (int k = 0; k < c->n_in && 0 == bad; ++k) {
        if (k == p->rank) {
            bad += OFL_BUF_SEND != refs[k].buf;
        } else {
            bad += OFL_BUF_PEER != refs[k].buf || k != p->peers[refs[k].peer]
                   || 0 != refs[k].chan;
        }
    }
    for (int k = 0; k < c->n_trig && 0 == bad; ++k) {
        bad += OFL_CNT_DATA != p->trigs[c->first_trig + k].cnt
               || OFL_CNT_CREDIT != p->cps[c->first_cp + k].cnt;
    }
    return bad;
}

/* Exchange programs for allreduce and barrier: every rank of every size up to 65
 * compiles, both ends of each stream agree, every ordered pair of ranks is an edge
 * used once per segment each way (channel 0); 66 ranks are refused; bcast and
 * reduce ignore the shape (exchange or split). */
static void test_shape_exchange(void)
{
    static ofl_program_t progs[66];
    static const int sizes[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 65 };
    for (int slots = 1; slots <= 3; slots += 2) {
        ofl_sched_params_t px = shape_params[slots];
        px.slots = slots;
        px.shape = OFL_SCHED_EXCHANGE;
        for (int ci = 0; ci < 2; ++ci) {
            ofl_coll_t coll = ci ? OFL_COLL_BARRIER : OFL_COLL_ALLREDUCE;
            for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); ++si) {
                int size = sizes[si], ok = 1;
                for (int r = 0; r < size; ++r) {
                    /* The root argument is ignored, as for the tree program. */
                    int rc = ofl_sched_compile(coll, r % 3, r, size, &px, &progs[r]);
                    CHECK(0 == rc, "exchange %s rank %d/%d slots %d", ofl_coll_name(coll), r,
                          size, slots);
                    ok &= 0 == rc;
                }
                if (!ok) {
                    continue;
                }
                int insane = 0, wrong = 0, mismatch = 0, items = 0;
                for (int a = 0; a < size; ++a) {
                    const ofl_program_t *p = &progs[a];
                    insane += program_sane(p);
                    insane += p->rank != a || p->size != size || 0 != p->root
                              || p->coll != coll || p->slots != slots || 0 != p->byref;
                    wrong += exchange_wrong(p);
                    for (int b = 0; b < size; ++b) {
                        mismatch += streams_mismatch(p, &progs[b]);
                        for (int c = 0; c < NCH; ++c) {
                            items += per_round(p, b, c, 1);
                        }
                    }
                }
                CHECK(0 == insane && 0 == wrong && 0 == mismatch && items == size * (size - 1),
                      "exchange %s size %d slots %d: insane %d wrong %d mismatch %d items %d",
                      ofl_coll_name(coll), size, slots, insane, wrong, mismatch, items);
                for (int r = 0; r < size; ++r) {
                    ofl_program_free(&progs[r]);
                }
            }
            /* 66 contributions exceed one descriptor: refused at every rank, and
             * the program is left empty. */
            int refused = 0;
            for (int r = 0; r < 66; ++r) {
                ofl_program_t *p = &progs[r];
                refused += -1 == ofl_sched_compile(coll, 0, r, 66, &px, p) && NULL == p->desc
                           && 0 == p->ndesc && 0 == p->npeers && NULL == p->use_in
                           && NULL == p->use_out;
            }
            CHECK(66 == refused, "exchange %s: size 66 refused at %d of 66 ranks",
                  ofl_coll_name(coll), refused);
            /* As a tree, 66 ranks are fine. */
            px.shape = OFL_SCHED_TREE;
            CHECK(0 == ofl_sched_compile(coll, 0, 65, 66, &px, &progs[0]), "tree at 66");
            ofl_program_free(&progs[0]);
            px.shape = OFL_SCHED_EXCHANGE;
        }
        /* Bcast and reduce have no exchange or split form: same program as the
         * tree's. */
        for (int ci = 0; ci < 2; ++ci) {
            ofl_coll_t coll = ci ? OFL_COLL_BCAST : OFL_COLL_REDUCE;
            ofl_sched_params_t pt = px;
            pt.shape = OFL_SCHED_TREE;
            int same = 0, tried = 0;
            for (int shape = OFL_SCHED_EXCHANGE; shape <= OFL_SCHED_SPLIT; ++shape) {
                ofl_sched_params_t ps = px;
                ps.shape = (ofl_sched_shape_t) shape;
                for (int size = 1; size <= 9; size += 4) {
                    for (int r = 0; r < size; ++r) {
                        ofl_program_t a, b;
                        int rc = ofl_sched_compile(coll, size - 1, r, size, &ps, &a);
                        rc |= ofl_sched_compile(coll, size - 1, r, size, &pt, &b);
                        tried++;
                        same += 0 == rc && programs_equal(&a, &b);
                        ofl_program_free(&a);
                        ofl_program_free(&b);
                    }
                }
            }
            CHECK(same == tried, "%s with exchange/split shape: %d of %d programs as the tree's",
                  ofl_coll_name(coll), same, tried);
        }
    }

    /* The dump shows the put to every peer and the rank-order combine. */
    ofl_sched_params_t px = shape_params[0];
    px.shape = OFL_SCHED_EXCHANGE;
    ofl_program_t p;
    CHECK(0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 2, 4, &px, &p), "compile for dump");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(NULL != f, "open_memstream");
    if (NULL != f) {
        ofl_program_dump(&p, f);
        fclose(f);
        CHECK(NULL != strstr(text, "send -> mbox[0.0], mbox[1.0], mbox[3.0]")
                  && NULL != strstr(text, "mbox[0.0] op mbox[1.0] op send op mbox[3.0] -> recv"),
              "exchange dump: %s", text);
        free(text);
    }
    ofl_program_free(&p);
}

/* Problems in rank's split program against its definition (sched.h): segment s
 * of every round of `size` segments belongs to rank s. Queue 0 puts the rank's
 * contribution of every segment it does not own to the owner on channel 0, in
 * segment order; queue 1 is one descriptor that combines the own segment's
 * contributions in rank order (its own from the send buffer) into the receive
 * buffer and puts the result to every other rank on channel 1; queue 2 reads the
 * other owners' results into the receive buffer, in segment order. Each stream
 * carries one item per round, in the segment of its owner: prefix[j] is 1 exactly
 * when that segment is below j. */
static int split_wrong(const ofl_program_t *p)
{
    int n = p->size, me = p->rank, bad = 0;
    bad += n != p->period || 3 != p->nqueues || n - 1 != p->npeers;
    bad += n - 1 != p->qlen[0] || 1 != p->qlen[1] || n - 1 != p->qlen[2];
    if (bad) {
        return bad;
    }
    for (int r = 0; r < n; ++r) {
        if (r == me) {
            continue;
        }
        const ofl_stream_use_t *part_out = stream_use(p, r, 0, 1);  /* mine of r's segment */
        const ofl_stream_use_t *part_in = stream_use(p, r, 0, 0);   /* r's of mine */
        const ofl_stream_use_t *res_out = stream_use(p, r, 1, 1);   /* my result to r */
        const ofl_stream_use_t *res_in = stream_use(p, r, 1, 0);    /* r's result */
        if (NULL == part_out) {
            return 1;
        }
        for (int j = 0; j <= n; ++j) {
            bad += part_out->prefix[j] != (j > r) || part_in->prefix[j] != (j > me);
            bad += res_out->prefix[j] != (j > me) || res_in->prefix[j] != (j > r);
        }
    }
    for (int i = 0; i < n - 1 && 0 == bad; ++i) {
        int s = i < me ? i : i + 1;
        for (int q = 0; q < 3; q += 2) {
            const ofl_desc_t *d = &p->desc[p->qfirst[q] + i];
            const ofl_ref_t *refs = &p->refs[d->first_ref];
            bad += d->seg_off != s || 1 != d->n_in || 1 != d->n_out;
            ofl_ref_t mbox = 0 == q ? refs[1] : refs[0];
            bad += OFL_BUF_PEER != mbox.buf || s != p->peers[mbox.peer] || q / 2 != mbox.chan;
            bad += (0 == q ? OFL_BUF_SEND : OFL_BUF_RECV) != (0 == q ? refs[0] : refs[1]).buf;
        }
    }
    const ofl_desc_t *c = &p->desc[p->qfirst[1]];
    const ofl_ref_t *refs = &p->refs[c->first_ref];
    bad += c->seg_off != me || n != c->n_in || n != c->n_out || 2 * (n - 1) != c->n_trig;
    if (bad) {
        return bad;
    }
    for (int k = 0; k < n; ++k) {
        if (k == me) {
            bad += OFL_BUF_SEND != refs[k].buf;
        } else {
            bad += OFL_BUF_PEER != refs[k].buf || k != p->peers[refs[k].peer]
                   || 0 != refs[k].chan;
        }
    }
    bad += OFL_BUF_RECV != refs[n].buf;
    uint8_t hit[OFL_PROG_MAX_PEERS] = { 0 };
    for (int k = 1; k < n; ++k) {
        ofl_ref_t o = refs[n + k];
        int to = OFL_BUF_PEER == o.buf ? p->peers[o.peer] : -1;
        bad += to < 0 || to == me || hit[to]++ || 1 != o.chan;
    }
    return bad;
}

/* Split allreduce programs at every size up to 17 and 64, 65 (the most one
 * combine takes), slots 1, 2 and 4: each matches its definition, both ends of
 * every stream agree per round and per partial round, every segment of a round is
 * combined by exactly one rank, each ordered pair carries one item per round on
 * each channel; one rank compiles (a copy); 66 ranks are refused everywhere; the
 * split barrier is the exchange barrier. */
static void test_shape_split(void)
{
    static ofl_program_t progs[66];
    static const int sizes[] = { 1,  2,  3,  4,  5,  6,  7,  8,  9, 10,
                                 11, 12, 13, 14, 15, 16, 17, 64, 65 };
    for (int slots = 1; slots <= 4; slots *= 2) {
        ofl_sched_params_t px = shape_params[slots];
        px.slots = slots;
        px.shape = OFL_SCHED_SPLIT;
        for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); ++si) {
            int size = sizes[si], ok = 1;
            for (int r = 0; r < size; ++r) {
                int rc = ofl_sched_compile(OFL_COLL_ALLREDUCE, r % 3, r, size, &px, &progs[r]);
                CHECK(0 == rc, "split rank %d/%d slots %d", r, size, slots);
                ok &= 0 == rc;
            }
            if (!ok) {
                continue;
            }
            int insane = 0, wrong = 0, mismatch = 0, items = 0;
            int combined[66] = { 0 };
            for (int a = 0; a < size; ++a) {
                const ofl_program_t *p = &progs[a];
                insane += program_sane(p);
                insane += p->rank != a || p->size != size || 0 != p->root
                          || OFL_COLL_ALLREDUCE != p->coll || p->slots != slots
                          || 0 != p->byref;
                int w = split_wrong(p);
                wrong += w;
                if (0 == w) {
                    combined[p->desc[p->qfirst[1]].seg_off]++;
                }
                for (int b = 0; b < size; ++b) {
                    mismatch += streams_mismatch(p, &progs[b]);
                    for (int c = 0; c < NCH; ++c) {
                        items += per_round(p, b, c, 1);
                    }
                }
            }
            int once = 0;
            for (int s = 0; s < size; ++s) {
                once += 1 == combined[s];
            }
            CHECK(0 == insane && 0 == wrong && 0 == mismatch && items == 2 * size * (size - 1)
                      && once == size,
                  "split size %d slots %d: insane %d wrong %d mismatch %d items %d "
                  "segments combined once %d", size, slots, insane, wrong, mismatch, items, once);
            for (int r = 0; r < size; ++r) {
                ofl_program_free(&progs[r]);
            }
        }
        int refused = 0;
        for (int r = 0; r < 66; ++r) {
            ofl_program_t *p = &progs[r];
            refused += -1 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, r, 66, &px, p)
                       && NULL == p->desc && 0 == p->ndesc && 0 == p->npeers
                       && NULL == p->use_in && NULL == p->use_out;
        }
        CHECK(66 == refused, "split: size 66 refused at %d of 66 ranks", refused);

        /* One rank: a program of one copy, send to receive buffer, in queue 1. */
        ofl_program_t p;
        int rc = ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 0, 1, &px, &p);
        CHECK(0 == rc && 1 == p.period && 0 == p.npeers && 1 == p.ndesc && 0 == p.qlen[0]
                  && 1 == p.qlen[1] && 0 == p.qlen[2] && 1 == p.desc[0].n_in
                  && 1 == p.desc[0].n_out && OFL_BUF_SEND == p.refs[0].buf
                  && OFL_BUF_RECV == p.refs[1].buf && 0 == p.ntrigs && 0 == p.ncps,
              "split at one rank: rc %d", rc);
        ofl_program_free(&p);

        /* Barrier has no split form: the exchange barrier. */
        ofl_sched_params_t pe = px;
        pe.shape = OFL_SCHED_EXCHANGE;
        int same = 0, tried = 0;
        for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si += 3) {
            int size = sizes[si];
            for (int r = 0; r < size; ++r) {
                ofl_program_t a, b;
                rc = ofl_sched_compile(OFL_COLL_BARRIER, 0, r, size, &px, &a);
                rc |= ofl_sched_compile(OFL_COLL_BARRIER, 0, r, size, &pe, &b);
                tried++;
                same += 0 == rc && programs_equal(&a, &b) && 0 == exchange_wrong(&a);
                ofl_program_free(&a);
                ofl_program_free(&b);
            }
        }
        CHECK(same == tried, "split barrier: %d of %d programs as the exchange's", same, tried);
    }

    /* The dump: puts in segment order, the owner's rank-order combine feeding
     * everybody on channel 1, the reads of the other owners' results. */
    ofl_sched_params_t px = shape_params[0];
    px.shape = OFL_SCHED_SPLIT;
    ofl_program_t p;
    CHECK(0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 2, 4, &px, &p), "compile for dump");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(NULL != f, "open_memstream");
    if (NULL != f) {
        ofl_program_dump(&p, f);
        fclose(f);
        CHECK(NULL != strstr(text, "program allreduce root=0 rank=2/4 slots=1 period=4")
                  && NULL != strstr(text, "q0 d0 seg+0: send -> mbox[0.0]")
                  && NULL != strstr(text, "q0 d2 seg+3: send -> mbox[3.0]")
                  && NULL != strstr(text, "q1 d0 seg+2: mbox[0.0] op mbox[1.0] op send op "
                                          "mbox[3.0] -> recv, mbox[0.1], mbox[1.1], mbox[3.1]")
                  && NULL != strstr(text, "q2 d1 seg+1: mbox[1.1] -> recv"),
              "split dump: %s", text);
        free(text);
    }
    ofl_program_free(&p);
}

/* Problems in rank's by-reference bcast program p against the same shape's
 * by-value program v and the tree node t: queue 0 is v's queue 0 (the same
 * descriptors, triggers, CP bumps, peers and use tables) with every mailbox
 * reference, and nothing else, by reference; a rank with children has a queue 1
 * of one fence (no data, no CP bump, segment 0) with one trigger per child,
 * CREDIT of the down stream (channel 1) >= the put's item + 1; a leaf has no
 * second queue. */
static int byref_wrong(const ofl_program_t *p, const ofl_program_t *v, const ofl_tree_node_t *t)
{
    int nch = t->nchildren, bad = 0;
    bad += 1 != p->byref || 0 != v->byref || p->period != v->period;
    bad += p->nqueues != 1 + (nch > 0) || 1 != v->nqueues || p->qlen[0] != v->qlen[0];
    bad += p->qlen[0] != (p->size > 1) || p->npeers != v->npeers;
    bad += p->ndesc != v->ndesc + (nch > 0) || p->nrefs != v->nrefs || p->ncps != v->ncps
           || p->ntrigs != v->ntrigs + nch;
    if (bad) {
        return bad;
    }
    bad += 0 != memcmp(p->peers, v->peers, sizeof(int) * (size_t) p->npeers);
    bad += v->ndesc > 0 && 0 != memcmp(p->desc, v->desc, sizeof(*p->desc) * (size_t) v->ndesc);
    bad += v->ntrigs > 0
           && 0 != memcmp(p->trigs, v->trigs, sizeof(*p->trigs) * (size_t) v->ntrigs);
    bad += v->ncps > 0 && 0 != memcmp(p->cps, v->cps, sizeof(*p->cps) * (size_t) v->ncps);
    int refs = 0;
    for (int i = 0; i < p->nrefs; ++i) {
        ofl_ref_t a = p->refs[i], b = v->refs[i];
        int mbox = OFL_BUF_PEER == a.buf;
        refs += mbox;
        bad += a.byref != mbox || 0 != b.byref || a.buf != b.buf || a.peer != b.peer
               || a.chan != b.chan || a.k != b.k;
    }
    bad += refs != nch + (t->parent >= 0);
    for (int s = 0; s < p->npeers * NCH; ++s) {
        bad += p->use_in[s].per_round != v->use_in[s].per_round
               || p->use_out[s].per_round != v->use_out[s].per_round;
    }
    if (0 == nch || bad) {
        return bad;
    }
    const ofl_desc_t *f = &p->desc[p->qfirst[1]];
    bad += 1 != p->qlen[1] || 0 != f->n_in || 0 != f->n_out || 0 != f->n_cp || 0 != f->seg_off
           || nch != f->n_trig;
    uint8_t hit[OFL_TREE_MAX_CHILDREN] = { 0 };
    for (int k = 0; k < f->n_trig && 0 == bad; ++k) {
        const ofl_trig_t *g = &p->trigs[f->first_trig + k];
        int child = -1;
        for (int c = 0; c < nch; ++c) {
            child = g->peer < p->npeers && p->peers[g->peer] == t->children[c] ? c : child;
        }
        bad += child < 0 || OFL_CNT_CREDIT != g->cnt || 1 != g->chan || 1 != g->rel;
        bad += child >= 0 && hit[child]++;
    }
    return bad;
}

/* By-reference bcast programs, k-ary and k-nomial trees of radix 2..4 (slots 1..4),
 * every size up to 17 and every root: each rank's program is sane and matches
 * byref_wrong against its by-value twin and the tree; both ends of every stream
 * agree per round and per partial round, and the streams are the tree's edges
 * (channel 1, down). Fences exactly at ranks with children. byref is ignored by
 * the other collectives; the dump names references "ref". */
static void test_shape_byref(void)
{
    static ofl_program_t progs[17], plain[17];
    int in[17 * NCH], out[17 * NCH];
    static const struct {
        ofl_tree_kind_t kind;
        int radix, slots;
    } trees[] = { { OFL_TREE_KARY, 2, 1 },    { OFL_TREE_KARY, 3, 2 },
                  { OFL_TREE_KARY, 4, 4 },    { OFL_TREE_KNOMIAL, 2, 2 },
                  { OFL_TREE_KNOMIAL, 3, 1 }, { OFL_TREE_KNOMIAL, 4, 3 } };
    int fences_total = 0;
    for (size_t ti = 0; ti < sizeof(trees) / sizeof(trees[0]); ++ti) {
        ofl_sched_params_t pv = { OFL_TREE_KARY, 2, trees[ti].kind, trees[ti].radix,
                                  trees[ti].slots, OFL_SCHED_TREE, 0 };
        ofl_sched_params_t pr = pv;
        pr.byref = 1;
        for (int size = 1; size <= 17; ++size) {
            for (int root = 0; root < size; ++root) {
                int ok = 1;
                for (int r = 0; r < size; ++r) {
                    int rc = ofl_sched_compile(OFL_COLL_BCAST, root, r, size, &pr, &progs[r]);
                    rc |= ofl_sched_compile(OFL_COLL_BCAST, root, r, size, &pv, &plain[r]);
                    CHECK(0 == rc, "byref bcast root %d rank %d/%d tree %zu", root, r, size, ti);
                    ok &= 0 == rc;
                }
                if (!ok) {
                    continue;
                }
                int insane = 0, wrong = 0, mismatch = 0, edges = 0, items = 0, fences = 0;
                int parents = 0;
                for (int a = 0; a < size; ++a) {
                    const ofl_program_t *p = &progs[a];
                    ofl_tree_node_t t;
                    if (0 != ofl_tree_node(trees[ti].kind, trees[ti].radix, size, root, a, &t)) {
                        wrong++;
                        continue;
                    }
                    insane += program_sane(p) + program_sane(&plain[a]);
                    insane += p->rank != a || p->size != size || p->root != root
                              || OFL_COLL_BCAST != p->coll || p->slots != trees[ti].slots
                              || 1 != p->period;
                    wrong += byref_wrong(p, &plain[a], &t);
                    fences += 2 == p->nqueues;
                    parents += t.nchildren > 0;
                    expected_edges(OFL_COLL_BCAST, root, a, size, &pv, in, out);
                    for (int b = 0; b < size; ++b) {
                        mismatch += streams_mismatch(p, &progs[b]);
                        for (int c = 0; c < NCH; ++c) {
                            edges += per_round(p, b, c, 1) != out[b * NCH + c]
                                     || per_round(p, b, c, 0) != in[b * NCH + c];
                            items += per_round(p, b, c, 1);
                        }
                    }
                }
                fences_total += fences;
                CHECK(0 == insane && 0 == wrong && 0 == mismatch && 0 == edges
                          && items == size - 1 && fences == parents && (1 == size || fences > 0),
                      "byref bcast tree %zu size %d root %d: insane %d wrong %d mismatch %d "
                      "edges %d items %d fences %d at %d parents", ti, size, root, insane, wrong,
                      mismatch, edges, items, fences, parents);
                for (int r = 0; r < size; ++r) {
                    ofl_program_free(&progs[r]);
                    ofl_program_free(&plain[r]);
                }
            }
        }
    }
    CHECK(fences_total > 1000, "only %d fences", fences_total);

    /* byref is a bcast parameter: every other collective and shape ignores it. */
    int same = 0, tried = 0;
    for (int shape = OFL_SCHED_TREE; shape <= OFL_SCHED_SPLIT; ++shape) {
        ofl_sched_params_t pv = { OFL_TREE_KNOMIAL, 3, OFL_TREE_KARY, 2, 2,
                                  (ofl_sched_shape_t) shape, 0 };
        ofl_sched_params_t pr = pv;
        pr.byref = 1;
        for (int coll = 0; coll < OFL_COLL_COUNT; ++coll) {
            if (OFL_COLL_BCAST == coll) {
                continue;
            }
            for (int size = 1; size <= 9; size += 4) {
                for (int r = 0; r < size; ++r) {
                    ofl_program_t a, b;
                    int rc = ofl_sched_compile((ofl_coll_t) coll, size - 1, r, size, &pr, &a);
                    rc |= ofl_sched_compile((ofl_coll_t) coll, size - 1, r, size, &pv, &b);
                    tried++;
                    same += 0 == rc && programs_equal(&a, &b) && 0 == a.byref
                            && 0 == program_sane(&a);
                    ofl_program_free(&a);
                    ofl_program_free(&b);
                }
            }
        }
    }
    CHECK(same == tried, "byref on other collectives: %d of %d programs as without", same,
          tried);

    /* The dump: binary tree of 5 rooted at 0, rank 1 reads from 0, keeps a copy and
     * publishes it to 3 and 4; its fence waits for both reads. */
    ofl_sched_params_t pr = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, OFL_SCHED_TREE, 1 };
    ofl_program_t p;
    CHECK(0 == ofl_sched_compile(OFL_COLL_BCAST, 0, 1, 5, &pr, &p), "compile for dump");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(NULL != f, "open_memstream");
    if (NULL != f) {
        ofl_program_dump(&p, f);
        fclose(f);
        CHECK(NULL != strstr(text, "q0 d0 seg+0: ref[0.1] -> recv, ref[3.1], ref[4.1]")
                  && NULL != strstr(text, "q1 d0 seg+0:  -> ")
                  && NULL != strstr(text, "when CREDIT(3.1)>=base+1 CREDIT(4.1)>=base+1")
                  && NULL == strstr(text, "mbox["),
              "byref dump: %s", text);
        free(text);
    }
    ofl_program_free(&p);
}

/* A communicator's program set: every shape compiled, the pick a policy's
 * algorithm gets, the streams a rank receives on. */
static void test_progset(void)
{
    ofl_progset_params_t pp = { 4, OFL_TREE_KNOMIAL, 2, OFL_TREE_KARY, 3, 4 };
    for (int n = 1; n <= 9; ++n) {
        for (int r = 0; r < n; ++r) {
            ofl_progset_t set;
            int rc = ofl_progset_compile(&set, r, n, &pp);
            CHECK(0 == rc, "progset n %d rank %d", n, r);
            if (0 != rc) {
                continue;
            }
            int x = n <= pp.exchange_max_ranks;
            const ofl_program_t *ex = ofl_progset_pick(&set, OFL_COLL_ALLREDUCE,
                                                       OFL_ALG_EXCHANGE, 0, 1);
            const ofl_program_t *bd = ofl_progset_pick(&set, OFL_COLL_ALLREDUCE, OFL_ALG_BOARD,
                                                       0, 1);
            const ofl_program_t *sp = ofl_progset_pick(&set, OFL_COLL_ALLREDUCE, OFL_ALG_SPLIT,
                                                       0, 1);
            const ofl_program_t *tr = ofl_progset_pick(&set, OFL_COLL_ALLREDUCE, OFL_ALG_TREE,
                                                       0, 1);
            const ofl_program_t *ba = ofl_progset_pick(&set, OFL_COLL_BARRIER, OFL_ALG_BOARD,
                                                       0, 1);
            int bad = (x ? ex != &set.allreduce_x || ex->ndesc < 1 : ex != &set.allreduce)
                      || bd != ex || tr != &set.allreduce
                      || (n > 1 ? sp != &set.allreduce_s || sp->period != n
                                : sp != &set.allreduce)
                      || (x ? ba != &set.barrier_x : ba != &set.barrier)
                      || OFL_COLL_BARRIER != ba->coll || OFL_COLL_ALLREDUCE != tr->coll;
            for (int root = 0; root < n; ++root) {
                const ofl_program_t *g = ofl_progset_pick(&set, OFL_COLL_BCAST, OFL_ALG_GET,
                                                          root, 1);
                const ofl_program_t *g0 = ofl_progset_pick(&set, OFL_COLL_BCAST, OFL_ALG_GET,
                                                           root, 0);
                const ofl_program_t *rd = ofl_progset_pick(&set, OFL_COLL_REDUCE, OFL_ALG_TREE,
                                                           root, 1);
                bad += 1 != g->byref || root != g->root || OFL_COLL_BCAST != g->coll
                       || 0 != g0->byref || root != g0->root
                       || OFL_COLL_REDUCE != rd->coll || root != rd->root;
            }
            CHECK(0 == bad, "progset n %d rank %d: a pick names the wrong program", n, r);
            /* every rank hears from every other in the exchange (channel 0), and
             * nothing arrives on more than both channels of every peer */
            int in = ofl_progset_inbound(&set);
            CHECK(1 == n ? 0 == in : in >= (x ? n - 1 : 1) && in <= 2 * (n - 1),
                  "progset n %d rank %d: %d inbound streams", n, r, in);
            CHECK(2 != n || 2 == in, "progset of two ranks: both channels of the peer (%d)", in);
            ofl_progset_free(&set);
            ofl_progset_free(&set);   /* harmless twice */
            CHECK(NULL == set.reduce && 0 == set.allreduce.ndesc, "progset freed");
        }
    }
    pp.slots = 0;   /* invalid: nothing compiled, nothing left */
    ofl_progset_t set;
    CHECK(-1 == ofl_progset_compile(&set, 0, 3, &pp) && NULL == set.bcast
              && 0 == set.allreduce.ndesc,
          "progset with no slots refused, empty");
}

int main(void)
{
    unit_timeout("test_sched", 60);
    double t0 = now_s();
    test_shape();
    test_shape_exchange();
    test_shape_split();
    test_shape_byref();
    test_progset();
    printf("sched: shape %.2f s\n", now_s() - t0);
    return unit_report("sched");
}
