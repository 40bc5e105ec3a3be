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
    ofl_ref_t in[OFL_TREE_MAX_CHILDREN + 1];
    ofl_ref_t out[OFL_TREE_MAX_CHILDREN + 1];
} draft_t;

static void draft_add(builder_t *b, draft_t *d, int is_out, ofl_buf_t buf, int rank)
{
    ofl_ref_t r = { .buf = (uint8_t) buf, .peer = 0 };
    if (OFL_BUF_PEER == buf) {
        r.peer = (uint8_t) peer_index(b, rank);
    }
    if (is_out) {
        d->out[d->n_out++] = r;
    } else {
        d->in[d->n_in++] = r;
    }
}

static void emit(builder_t *b, const draft_t *d)
{
    ofl_program_t *p = b->p;
    p->desc = grow(p->desc, &b->cap_desc, p->ndesc + 1, sizeof(*p->desc), &b->failed);
    p->refs = grow(p->refs, &b->cap_refs, p->nrefs + d->n_in + d->n_out, sizeof(*p->refs),
                   &b->failed);
    p->trigs = grow(p->trigs, &b->cap_trigs, p->ntrigs + d->n_in + d->n_out,
                    sizeof(*p->trigs), &b->failed);
    p->cps = grow(p->cps, &b->cap_cps, p->ncps + d->n_in + d->n_out, sizeof(*p->cps),
                  &b->failed);
    if (b->failed) {
        return;
    }
    ofl_desc_t *desc = &p->desc[p->ndesc++];
    memset(desc, 0, sizeof(*desc));
    desc->first_ref = (uint16_t) p->nrefs;
    desc->n_in = (uint8_t) d->n_in;
    desc->n_out = (uint8_t) d->n_out;
    desc->first_trig = (uint16_t) p->ntrigs;
    desc->first_cp = (uint16_t) p->ncps;
    for (int i = 0; i < d->n_in; ++i) {
        ofl_ref_t r = d->in[i];
        p->refs[p->nrefs++] = r;
        if (OFL_BUF_PEER == r.buf) {
            p->trigs[p->ntrigs++] = (ofl_trig_t) { OFL_CNT_DATA, r.peer, 1 };
            p->cps[p->ncps++] = (ofl_cp_t) { OFL_CNT_CREDIT, r.peer };
            p->uses_in[r.peer]++;
            desc->n_trig++;
            desc->n_cp++;
        }
    }
    for (int i = 0; i < d->n_out; ++i) {
        ofl_ref_t r = d->out[i];
        p->refs[p->nrefs++] = r;
        if (OFL_BUF_PEER == r.buf) {
            p->trigs[p->ntrigs++] = (ofl_trig_t) { OFL_CNT_CREDIT, r.peer,
                                                   (int16_t) (1 - p->slots) };
            p->cps[p->ncps++] = (ofl_cp_t) { OFL_CNT_DATA, r.peer };
            p->uses_out[r.peer]++;
            desc->n_trig++;
            desc->n_cp++;
        }
    }
}

static void begin_queue(builder_t *b)
{
    ofl_program_t *p = b->p;
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
                draft_add(b, &d, 1, OFL_BUF_PEER, t->children[i]);
            }
        }
    }
    begin_queue(b);
    emit(b, &d);
    end_queue(b);
}

/* Down the broadcast tree: take the parent's data (the root's own buffer), keep a
 * copy, forward it to the children. */
static void compile_down(builder_t *b, const ofl_tree_node_t *t)
{
    draft_t d = { 0 };
    if (t->parent >= 0) {
        draft_add(b, &d, 0, OFL_BUF_PEER, t->parent);
        draft_add(b, &d, 1, OFL_BUF_RECV, -1);
    } else {
        draft_add(b, &d, 0, OFL_BUF_RECV, -1);
    }
    for (int i = 0; i < t->nchildren; ++i) {
        draft_add(b, &d, 1, OFL_BUF_PEER, t->children[i]);
    }
    begin_queue(b);
    if (d.n_out > 0) {
        emit(b, &d);
    }
    end_queue(b);
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

    builder_t b = { .p = prog };
    ofl_tree_node_t t;
    switch (coll) {
    case OFL_COLL_ALLREDUCE:
    case OFL_COLL_BARRIER:
        if (params->exchange) {
            if (size > OFL_TREE_MAX_CHILDREN + 1) {
                return -1;
            }
            compile_exchange(&b, rank, size);
            break;
        }
        /* One tree both ways: each edge then carries one item per segment in each
         * direction, which keeps every edge's item sequence deterministic. */
        if (0 != ofl_tree_node(params->reduce_kind, params->reduce_radix, size, root, rank,
                               &t)) {
            return -1;
        }
        compile_up(&b, &t, 1);
        if (t.parent >= 0) {
            compile_down(&b, &t);
        }
        break;
    case OFL_COLL_REDUCE:
        if (0 != ofl_tree_node(params->reduce_kind, params->reduce_radix, size, root, rank,
                               &t)) {
            return -1;
        }
        compile_up(&b, &t, 0);
        break;
    case OFL_COLL_BCAST:
        if (0 != ofl_tree_node(params->bcast_kind, params->bcast_radix, size, root, rank,
                               &t)) {
            return -1;
        }
        compile_down(&b, &t);
        break;
    default:
        return -1;
    }
    for (int i = 0; i < prog->npeers; ++i) {
        if (prog->uses_in[i] > 1 || prog->uses_out[i] > 1) {
            b.failed = 1; /* an edge used twice per segment would race */
        }
    }
    if (b.failed) {
        ofl_program_free(prog);
        return -1;
    }
    return 0;
}

void ofl_program_free(ofl_program_t *prog)
{
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
        fprintf(out, "mbox[%d]", p->peers[r.peer]);
        break;
    }
}

void ofl_program_dump(const ofl_program_t *p, FILE *out)
{
    static const char *cnt[] = { "DATA", "CREDIT" };
    fprintf(out, "program %s root=%d rank=%d/%d slots=%d peers=%d\n", ofl_coll_name(p->coll),
            p->root, p->rank, p->size, p->slots, p->npeers);
    for (int q = 0; q < p->nqueues; ++q) {
        for (int i = 0; i < p->qlen[q]; ++i) {
            const ofl_desc_t *d = &p->desc[p->qfirst[q] + i];
            fprintf(out, "  q%d d%d: ", q, i);
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
                fprintf(out, " %s(%d)>=base+seg%+d", cnt[t->cnt], p->peers[t->peer], t->rel);
            }
            if (0 == d->n_trig) {
                fputs(" posted", out);
            }
            fputs("  cp", out);
            for (int k = 0; k < d->n_cp; ++k) {
                const ofl_cp_t *c = &p->cps[d->first_cp + k];
                fprintf(out, " %s@%d", cnt[c->cnt], p->peers[c->peer]);
            }
            fputc('\n', out);
        }
    }
}
