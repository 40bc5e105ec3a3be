/*
 * coll/offload — the simulated NIC and its discrete-event engine (see sim.h).
 *
 * Time is virtual. A heap of events (packet arrivals, stage starts) is drained in
 * time order; an event raises a counter at its rank and lets the real engine
 * (ofl_engine_progress) fire whatever that counter enabled. The engine writes the
 * data at once (into the receiver's mailbox slot, which nobody reads before the
 * counter moves) and asks for CP bumps; the bumps are held back, and after the
 * engine returns the descriptors it fired are replayed from the program to charge
 * each its time on the rank's executor and to send its bumps as packets that
 * arrive, later, as events. Counters therefore move only in virtual time, and a
 * descriptor fires exactly when its triggers would hold on the modelled machine.
 */
#include "nic/sim.h"

#include "engine/engine.h"
#include "nic/nic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_MAX_STAGES 8

typedef struct {
    int rank;                            /* the peer's rank in the group */
    uint64_t data[OFL_CHANNELS];         /* DATA(peer, chan) at me */
    uint64_t credit[OFL_CHANNELS];       /* CREDIT(peer, chan) at me */
    unsigned char *mbox[OFL_CHANNELS];   /* my inbox of stream (peer -> me, chan) */
    uint64_t seq_in[OFL_CHANNELS];       /* the engine's edge sequences, kept per peer */
    uint64_t seq_out[OFL_CHANNELS];
} sim_peer_t;

typedef struct {
    int cnt;
    int peer;
    int chan;
    uint64_t item;
    uint64_t len;
} sim_bump_t;

struct sim;
struct sim_group;

typedef struct {
    ofl_nic_t base;                      /* first: the engine sees an ofl_nic_t */
    struct sim *sim;
    struct sim_group *group;
    int global;                          /* rank in the whole machine */
    int npeers;
    sim_peer_t *peers;                   /* sorted by rank */
    ofl_program_t prog;
    ofl_inst_t inst;
    int posted;
    int done;
    double last_end;                     /* end of the last descriptor fired this call */
    sim_bump_t *log;                     /* bumps of the current engine round */
    int nlog;
    int caplog;
} sim_nic_t;

typedef struct sim_group {
    int size;
    int *members;                        /* global ranks, by group rank */
    int host;                            /* executed by the host (1) or the NIC (0) */
    sim_nic_t *nics;
} sim_group_t;

typedef struct {
    void *send;
    void *recv;
    double exec_free;                    /* the rank's executor is busy until then */
    double finish;                       /* the call returned at this rank */
    int nstages;
    sim_nic_t *stage[SIM_MAX_STAGES];
    const void *stage_send[SIM_MAX_STAGES];
    void *stage_recv[SIM_MAX_STAGES];
    uint64_t rng;
} sim_rank_t;

typedef struct {
    double t;
    uint64_t seq;
    sim_nic_t *nic;
    int peer;                            /* index into nic->peers; -1: start the stage */
    int cnt;
    int chan;
    uint64_t value;
} sim_event_t;

typedef struct sim {
    const ofl_sim_model_t *m;
    const ofl_sim_topo_t *topo;
    const ofl_sim_run_t *run;
    int nranks;
    int nnodes;
    sim_rank_t *ranks;
    double *tx_free;                     /* per node: the NIC's port toward the network */
    double *rx_free;                     /* per node: from the network */
    int ngroups;
    sim_group_t *groups;
    sim_event_t *heap;
    size_t nheap;
    size_t capheap;
    uint64_t seq;
    uint64_t events;
    uint64_t descs;
    size_t bytes;
    /* The engine keeps a rank's edge sequences in arrays indexed by comm rank; with
     * 64k ranks one such array per rank would not fit, so every rank keeps its
     * peers' entries and a post borrows this one shared pair of arrays. */
    ofl_edges_t edges;
    size_t slot_bytes;
    size_t count;                        /* elements per call (0 for a barrier) */
    ofl_alu_fn fn;
    size_t elem;
    int failed;
    char *err;
    size_t errlen;
} sim_t;

static void sim_fail(sim_t *s, const char *why)
{
    if (!s->failed && s->err && s->errlen) {
        snprintf(s->err, s->errlen, "%s", why);
    }
    s->failed = 1;
}

static void *sim_alloc(sim_t *s, size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (NULL == p) {
        sim_fail(s, "out of memory");
        return NULL;
    }
    s->bytes += n;
    return p;
}

/* ---- topology ---------------------------------------------------------------- */

void ofl_sim_route(const ofl_sim_topo_t *topo, int a, int b, int *switches, int *links)
{
    *switches = 0;
    *links = 0;
    if (a == b) {
        return;
    }
    if (OFL_SIM_FATTREE == topo->kind) {
        /* up to the lowest switch level whose subtree holds both, and down again */
        int k = topo->k > 1 ? topo->k : 2;
        int level = 1;
        long span = k;
        while (a / span != b / span) {
            span *= k;
            level++;
        }
        *switches = 2 * level - 1;
        *links = 2 * level;
        return;
    }
    int p = topo->p > 0 ? topo->p : 1;
    int ra = a / p, rb = b / p;
    if (ra == rb) {
        *switches = 1;
        *links = 2;
        return;
    }
    int na = topo->a > 0 ? topo->a : 1;
    int ga = ra / na, gb = rb / na;
    if (ga == gb) {
        *switches = 2;
        *links = 3;   /* node, local link, node */
        return;
    }
    /* group ga reaches group gb through the router holding that global link: the
     * groups' links are dealt out over the routers in order */
    int h = topo->h > 0 ? topo->h : 1;
    int ngroups = na * h + 1;
    int out_a = ((gb - ga - 1) % ngroups + ngroups) % ngroups;
    int out_b = ((ga - gb - 1) % ngroups + ngroups) % ngroups;
    int gw_a = ga * na + (out_a / h) % na;
    int gw_b = gb * na + (out_b / h) % na;
    *switches = 2 + (gw_a != ra) + (gw_b != rb);
    *links = 3 + (gw_a != ra) + (gw_b != rb);
}

/* One way between two ranks of a node: a cache line's trip, twice across sockets. */
static double shm_latency(const sim_t *s, int ga, int gb)
{
    int ps = s->topo->per_socket;
    int ppn = s->topo->ppn;
    if (ps > 0 && (ga % ppn) / ps != (gb % ppn) / ps) {
        return 2.0 * s->m->shm_lat_us;
    }
    return s->m->shm_lat_us;
}

/* ---- events -------------------------------------------------------------------- */

static int ev_before(const sim_event_t *a, const sim_event_t *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void ev_push(sim_t *s, sim_event_t ev)
{
    if (s->nheap == s->capheap) {
        size_t ncap = s->capheap ? 2 * s->capheap : 1024;
        sim_event_t *n = realloc(s->heap, ncap * sizeof(*n));
        if (NULL == n) {
            sim_fail(s, "out of memory (events)");
            return;
        }
        s->bytes += (ncap - s->capheap) * sizeof(*n);
        s->heap = n;
        s->capheap = ncap;
    }
    ev.seq = s->seq++;
    size_t i = s->nheap++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!ev_before(&ev, &s->heap[up])) {
            break;
        }
        s->heap[i] = s->heap[up];
        i = up;
    }
    s->heap[i] = ev;
}

static sim_event_t ev_pop(sim_t *s)
{
    sim_event_t top = s->heap[0];
    sim_event_t last = s->heap[--s->nheap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->nheap) {
            break;
        }
        if (c + 1 < s->nheap && ev_before(&s->heap[c + 1], &s->heap[c])) {
            c++;
        }
        if (!ev_before(&s->heap[c], &last)) {
            break;
        }
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->nheap > 0) {
        s->heap[i] = last;
    }
    return top;
}

/* ---- random numbers (noise, data) ------------------------------------------------ */

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *state)
{
    *state = mix64(*state);
    return ((double) (*state >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* ---- the NIC operations -------------------------------------------------------- */

static sim_peer_t *find_peer(sim_nic_t *n, int rank)
{
    int lo = 0, hi = n->npeers - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (n->peers[mid].rank == rank) {
            return &n->peers[mid];
        }
        if (n->peers[mid].rank < rank) {
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return NULL;
}

static unsigned char *slot_of(sim_nic_t *n, sim_peer_t *p, int chan, uint64_t item)
{
    sim_t *s = n->sim;
    if (NULL == p->mbox[chan]) {
        p->mbox[chan] = sim_alloc(s, (size_t) n->base.slots * s->slot_bytes);
        if (NULL == p->mbox[chan]) {
            return NULL;
        }
    }
    return p->mbox[chan] + (item % (uint64_t) n->base.slots) * s->slot_bytes;
}

static int op_reached(ofl_nic_t *nic, int cnt, int peer, int chan, uint64_t threshold)
{
    sim_peer_t *p = find_peer((sim_nic_t *) nic, peer);
    uint64_t v = OFL_CNT_DATA == cnt ? p->data[chan] : p->credit[chan];
    return v >= threshold;
}

static uint64_t op_counter(ofl_nic_t *nic, int cnt, int peer, int chan)
{
    sim_peer_t *p = find_peer((sim_nic_t *) nic, peer);
    return OFL_CNT_DATA == cnt ? p->data[chan] : p->credit[chan];
}

static void op_bump(ofl_nic_t *nic, int cnt, int peer, int chan, uint64_t item, uint64_t len)
{
    sim_nic_t *n = (sim_nic_t *) nic;
    if (n->nlog == n->caplog) {
        int ncap = n->caplog ? 2 * n->caplog : 16;
        sim_bump_t *l = realloc(n->log, (size_t) ncap * sizeof(*l));
        if (NULL == l) {
            sim_fail(n->sim, "out of memory (bumps)");
            return;
        }
        n->log = l;
        n->caplog = ncap;
    }
    n->log[n->nlog++] = (sim_bump_t) { cnt, peer, chan, item, len };
}

static void *op_inbox(ofl_nic_t *nic, int peer, int chan, uint64_t item)
{
    sim_nic_t *n = (sim_nic_t *) nic;
    return slot_of(n, find_peer(n, peer), chan, item);
}

static void *op_outbox(ofl_nic_t *nic, int peer, int chan, uint64_t item)
{
    sim_nic_t *n = (sim_nic_t *) nic;
    sim_nic_t *dst = &n->group->nics[peer];
    return slot_of(dst, find_peer(dst, n->base.rank), chan, item);
}

typedef struct {
    const void *addr;
    uint64_t len;
} sim_ref_t;

static void op_put_ref(ofl_nic_t *nic, int peer, int chan, uint64_t item, const void *src,
                       uint64_t len)
{
    sim_ref_t r = { src, len };
    memcpy(op_outbox(nic, peer, chan, item), &r, sizeof(r));
}

static int op_get(ofl_nic_t *nic, int peer, int chan, uint64_t item, uint64_t offset, void *dst,
                  uint64_t len)
{
    sim_ref_t r;
    memcpy(&r, op_inbox(nic, peer, chan, item), sizeof(r));
    if (offset + len > r.len) {
        return -22;
    }
    memcpy(dst, (const char *) r.addr + offset, len);
    return 0;
}

static int op_peer_alive(ofl_nic_t *nic, int peer)
{
    (void) nic;
    (void) peer;
    return 1;
}

static void op_poison(ofl_nic_t *nic, int dead)
{
    (void) nic;
    (void) dead;
}

static int op_poisoned(ofl_nic_t *nic)
{
    (void) nic;
    return -1;
}

static const ofl_nic_ops_t sim_ops = {
    .reached = op_reached,
    .counter = op_counter,
    .bump = op_bump,
    .inbox = op_inbox,
    .outbox = op_outbox,
    .put_ref = op_put_ref,
    .get = op_get,
    .peer_alive = op_peer_alive,
    .poison = op_poison,
    .poisoned = op_poisoned,
    .ring = NULL,
    .board_post = NULL,
    .board_read = NULL,
};

/* ---- timing --------------------------------------------------------------------- */

static int same_node(const sim_t *s, int ga, int gb)
{
    return ga / s->topo->ppn == gb / s->topo->ppn;
}

/* A bump leaves rank `n` at `t` as a packet; its counter moves at the receiver when
 * the packet is there (and, for a host-driven receiver across the network, when
 * the host has noticed). */
static void send_packet(sim_t *s, sim_nic_t *n, const sim_bump_t *b, double t)
{
    const ofl_sim_model_t *m = s->m;
    sim_nic_t *dst = &n->group->nics[b->peer];
    double bytes = OFL_CNT_DATA == b->cnt ? (double) b->len * s->run->byte_scale : 0.0;
    double arrive;
    if (same_node(s, n->global, dst->global)) {
        arrive = t + shm_latency(s, n->global, dst->global) + bytes / m->shm_bw;
    } else {
        int na = n->global / s->topo->ppn, nb = dst->global / s->topo->ppn;
        int sw, links;
        ofl_sim_route(s->topo, na, nb, &sw, &links);
        double ser = bytes / m->link_bw;
        double depart = t > s->tx_free[na] ? t : s->tx_free[na];
        s->tx_free[na] = depart + ser;
        double tail = depart + links * m->link_lat_us + sw * m->hop_lat_us + ser;
        arrive = tail;
        if (ser > 0) {
            /* the receiving port takes one packet's bytes at a time */
            double rx = s->rx_free[nb] + ser;
            arrive = tail > rx ? tail : rx;
            s->rx_free[nb] = arrive;
        }
        if (dst->group->host) {
            arrive += m->host_wake_us;
        }
    }
    sim_peer_t *p = find_peer(dst, n->base.rank);
    if (NULL == p) {
        sim_fail(s, "a packet to a rank whose program does not know the sender");
        return;
    }
    sim_event_t ev = { .t = arrive, .nic = dst, .peer = (int) (p - dst->peers), .cnt = b->cnt,
                       .chan = b->chan, .value = b->item + 1 };
    ev_push(s, ev);
}

/* Charge the descriptors the engine just fired (cursor `from` .. now, queue by
 * queue, as the engine fires them) and send their bumps, in the engine's order. */
static void account(sim_t *s, sim_nic_t *n, double t, const uint32_t *from)
{
    const ofl_sim_model_t *m = s->m;
    const ofl_program_t *p = &n->prog;
    const ofl_inst_t *inst = &n->inst;
    sim_rank_t *r = &s->ranks[n->global];
    int host = n->group->host;
    double clock = t > r->exec_free ? t : r->exec_free;
    int li = 0;
    for (int q = 0; q < p->nqueues; ++q) {
        uint32_t qlen = (uint32_t) p->qlen[q];
        for (uint32_t cur = from[q]; cur < inst->cursor[q]; ++cur) {
            const ofl_desc_t *d = &p->desc[p->qfirst[q] + (int) (cur % qlen)];
            uint32_t seg = (cur / qlen) * (uint32_t) p->period + d->seg_off;
            if (seg >= inst->nseg) {
                continue;   /* the engine skips these without firing */
            }
            size_t first = (size_t) seg * inst->seg_elems;
            size_t cnt = 0;
            if (first < inst->count) {
                cnt = inst->count - first;
                cnt = cnt > inst->seg_elems ? inst->seg_elems : cnt;
            }
            double bytes = (double) (cnt * inst->elem) * s->run->byte_scale;
            double alu = (d->n_in >= 2 && d->n_out > 0) ? (d->n_in - 1) * bytes : 0.0;
            double cost;
            if (host) {
                cost = m->host_desc_us + alu / m->host_alu_bw;
                if (m->noise_prob > 0 && uniform(&r->rng) < m->noise_prob) {
                    cost += -m->noise_us * log(uniform(&r->rng));
                }
            } else {
                cost = m->nic_desc_us + alu / m->nic_alu_bw;
            }
            clock += cost;
            double pkt = host ? m->host_pkt_us : m->nic_pkt_us;
            for (int k = 0; k < d->n_cp; ++k) {
                if (li >= n->nlog) {
                    sim_fail(s, "the engine raised fewer counters than its program says");
                    return;
                }
                clock += pkt;
                send_packet(s, n, &n->log[li++], clock);
            }
            s->descs++;
            n->last_end = clock;
        }
    }
    if (li != n->nlog) {
        sim_fail(s, "the engine raised more counters than its program says");
    }
    n->nlog = 0;
    r->exec_free = clock;
}

static void start_stage(sim_t *s, sim_nic_t *n, int stage, double t);

/* Let the engine fire what the counters now allow at rank n, at time t. */
static void step(sim_t *s, sim_nic_t *n, double t)
{
    if (!n->posted || n->done) {
        return;
    }
    uint32_t from[OFL_PROG_MAX_QUEUES];
    memcpy(from, n->inst.cursor, sizeof(from));
    int rc = ofl_engine_progress(&n->inst);
    if (rc < 0) {
        sim_fail(s, "the engine failed a call");
        return;
    }
    account(s, n, t, from);
    if (1 != rc) {
        return;
    }
    n->done = 1;
    sim_rank_t *r = &s->ranks[n->global];
    double end = n->last_end > t ? n->last_end : t;
    if (!n->group->host) {
        end += s->m->host_done_us;
    }
    r->exec_free = end > r->exec_free ? end : r->exec_free;
    int next = -1;
    for (int i = r->nstages - 1; i >= 0 && r->stage[i] != n; --i) {
        if (NULL != r->stage[i]) {
            next = i;
        }
    }
    if (next >= 0) {
        start_stage(s, r->stage[next], next, end + s->m->host_post_us);
    } else {
        r->finish = end;
    }
}

static void start_stage(sim_t *s, sim_nic_t *n, int stage, double t)
{
    sim_event_t ev = { .t = t, .nic = n, .peer = -1, .cnt = stage };
    ev_push(s, ev);
}

static void post(sim_t *s, sim_nic_t *n, int stage, double t)
{
    sim_rank_t *r = &s->ranks[n->global];
    ofl_call_t call = {
        .send = r->stage_send[stage],
        .recv = r->stage_recv[stage],
        .fn = OFL_COLL_BCAST == n->prog.coll || OFL_COLL_BARRIER == n->prog.coll ? NULL
                                                                                 : s->fn,
        .elem = s->elem,
        .count = OFL_COLL_BARRIER == n->prog.coll ? 0 : s->count,
        .seg_bytes = s->slot_bytes,
        .ring = 0,
    };
    ofl_edges_t *e = &s->edges;
    for (int k = 0; k < n->npeers; ++k) {
        size_t at = (size_t) n->peers[k].rank * OFL_CHANNELS;
        memcpy(&e->in[at], n->peers[k].seq_in, sizeof(n->peers[k].seq_in));
        memcpy(&e->out[at], n->peers[k].seq_out, sizeof(n->peers[k].seq_out));
    }
    ofl_engine_post(&n->inst, &n->prog, &n->base, e, &call);
    for (int k = 0; k < n->npeers; ++k) {
        size_t at = (size_t) n->peers[k].rank * OFL_CHANNELS;
        memcpy(n->peers[k].seq_in, &e->in[at], sizeof(n->peers[k].seq_in));
        memcpy(n->peers[k].seq_out, &e->out[at], sizeof(n->peers[k].seq_out));
    }
    n->posted = 1;
    n->done = 0;
    n->last_end = t;
    step(s, n, t);
}

/* ---- data and the reference ------------------------------------------------------ */

void ofl_sim_value(ofl_type_t type, int r, size_t i, int c, void *out)
{
    uint64_t z = mix64(mix64(((uint64_t) (uint32_t) r << 32) ^ (uint64_t) i) ^ (uint64_t) c);
    switch (type) {
    case OFL_T_FLOAT: {
        float v = (float) ((int) (z % 201) - 100);
        memcpy(out, &v, sizeof(v));
        break;
    }
    case OFL_T_DOUBLE: {
        double v = (double) ((int) (z % 2001) - 1000);
        memcpy(out, &v, sizeof(v));
        break;
    }
    default:
        memcpy(out, &z, ofl_type_size(type));
        break;
    }
}

/* acc = acc op v, written out for each supported (op, type) without the ALU. */
#define REF_INT(T)                                                                     \
    do {                                                                               \
        T a, b;                                                                        \
        memcpy(&a, acc, sizeof(T));                                                    \
        memcpy(&b, v, sizeof(T));                                                      \
        switch (op) {                                                                  \
        case OFL_OP_SUM: a = (T) ((uint64_t) a + (uint64_t) b); break;                 \
        case OFL_OP_PROD: a = (T) ((uint64_t) a * (uint64_t) b); break;                \
        case OFL_OP_MIN: a = b < a ? b : a; break;                                     \
        case OFL_OP_MAX: a = b > a ? b : a; break;                                     \
        case OFL_OP_BAND: a = a & b; break;                                            \
        case OFL_OP_BOR: a = a | b; break;                                             \
        case OFL_OP_BXOR: a = a ^ b; break;                                            \
        default: return -1;                                                            \
        }                                                                              \
        memcpy(acc, &a, sizeof(T));                                                    \
        return 0;                                                                      \
    } while (0)

#define REF_FLT(T)                                                                     \
    do {                                                                               \
        T a, b;                                                                        \
        memcpy(&a, acc, sizeof(T));                                                    \
        memcpy(&b, v, sizeof(T));                                                      \
        switch (op) {                                                                  \
        case OFL_OP_SUM: a = a + b; break;                                             \
        case OFL_OP_MIN: a = b < a ? b : a; break;                                     \
        case OFL_OP_MAX: a = b > a ? b : a; break;                                     \
        default: return -1;                                                            \
        }                                                                              \
        memcpy(acc, &a, sizeof(T));                                                    \
        return 0;                                                                      \
    } while (0)

static int ref_combine(ofl_op_t op, ofl_type_t type, void *acc, const void *v)
{
    switch (type) {
    case OFL_T_INT32: REF_INT(int32_t);
    case OFL_T_UINT32: REF_INT(uint32_t);
    case OFL_T_INT64: REF_INT(int64_t);
    case OFL_T_UINT64: REF_INT(uint64_t);
    case OFL_T_FLOAT: REF_FLT(float);
    case OFL_T_DOUBLE: REF_FLT(double);
    default: return -1;
    }
}

/* Compare every result the call owes with the reference; count differing elements. */
static void check_call(sim_t *s, int c, uint64_t *wrong, uint64_t *checked)
{
    const ofl_sim_run_t *run = s->run;
    size_t es = s->elem;
    unsigned char want[64], v[64];
    for (size_t i = 0; i < s->count; ++i) {
        if (OFL_COLL_BCAST == run->coll) {
            ofl_sim_value(run->type, run->root, i, c, want);
        } else {
            ofl_sim_value(run->type, 0, i, c, want);
            for (int r = 1; r < s->nranks; ++r) {
                ofl_sim_value(run->type, r, i, c, v);
                ref_combine(run->op, run->type, want, v);
            }
        }
        for (int r = 0; r < s->nranks; ++r) {
            if (OFL_COLL_REDUCE == run->coll && r != run->root) {
                continue;
            }
            const unsigned char *got = (const unsigned char *) s->ranks[r].recv + i * es;
            *checked += 1;
            *wrong += 0 != memcmp(got, want, es);
        }
    }
}

/* ---- set-up ---------------------------------------------------------------------- */

static int cmp_peer(const void *a, const void *b)
{
    const sim_peer_t *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* A group of ranks (a communicator) running one program each; stage: its place in
 * every member's sequence of programs. */
static sim_group_t *add_group(sim_t *s, const int *members, int size, int host, ofl_coll_t coll,
                              int root, const ofl_sched_params_t *sp, int stage)
{
    sim_group_t *g = &s->groups[s->ngroups++];
    g->size = size;
    g->host = host;
    g->members = sim_alloc(s, (size_t) size * sizeof(int));
    g->nics = sim_alloc(s, (size_t) size * sizeof(sim_nic_t));
    if (s->failed) {
        return NULL;
    }
    memcpy(g->members, members, (size_t) size * sizeof(int));
    for (int i = 0; i < size; ++i) {
        sim_nic_t *n = &g->nics[i];
        n->sim = s;
        n->group = g;
        n->global = members[i];
        n->base.ops = &sim_ops;
        n->base.rank = i;
        n->base.size = size;
        n->base.slots = sp->slots;
        n->base.slot_bytes = s->slot_bytes;
        n->base.board_bytes = 0;
        if (0 != ofl_sched_compile(coll, root, i, size, sp, &n->prog)) {
            sim_fail(s, "a program could not be compiled (shape, radix or size)");
            return NULL;
        }
        s->bytes += sizeof(ofl_program_t) + (size_t) n->prog.ndesc * 64;
        n->npeers = n->prog.npeers;
        n->peers = sim_alloc(s, (size_t) (n->npeers ? n->npeers : 1) * sizeof(sim_peer_t));
        if (NULL == n->peers) {
            return NULL;
        }
        for (int k = 0; k < n->npeers; ++k) {
            n->peers[k].rank = n->prog.peers[k];
        }
        qsort(n->peers, (size_t) n->npeers, sizeof(sim_peer_t), cmp_peer);
        sim_rank_t *r = &s->ranks[members[i]];
        if (r->nstages <= stage) {
            r->nstages = stage + 1;
        }
        r->stage[stage] = n;
    }
    return g;
}

/* Group ranks into the levels of the node-aware algorithm: level 0 the smallest
 * domain (socket, else node), each next level the leaders (first rank) of the level
 * below within the next domain, the last level the node leaders. */
static int build_hier(sim_t *s, const ofl_sched_params_t *sp)
{
    const ofl_sim_run_t *run = s->run;
    int ppn = s->topo->ppn;
    int ps = s->topo->per_socket;
    ps = ps > 0 && ps < ppn && 0 == ppn % ps ? ps : ppn;   /* sockets must tile the node */
    int *tmp = sim_alloc(s, (size_t) (s->nranks > ppn ? s->nranks : ppn) * sizeof(int));
    if (NULL == tmp) {
        return -1;
    }
    /* domains inside a node, innermost first: sockets (if any), then the node */
    int spans[2], nlev = 0;
    if (ps < ppn) {
        spans[nlev++] = ps;
    }
    spans[nlev++] = ppn;
    ofl_sched_params_t local = *sp;
    local.shape = OFL_SCHED_TREE;
    int up = OFL_COLL_BCAST != run->coll;
    int down = OFL_COLL_REDUCE != run->coll;
    ofl_coll_t top = run->coll;
    int stage = 0;
    /* up: reduce (or a barrier's arrival) to each domain's first rank */
    int stride = 1;
    for (int l = 0; l < nlev && up; ++l) {
        for (int base = 0; base < s->nranks; base += spans[l]) {
            int n = 0;
            for (int r = base; r < base + spans[l]; r += stride) {
                tmp[n++] = r;
            }
            if (NULL == add_group(s, tmp, n, 1, OFL_COLL_REDUCE, 0, &local, stage)) {
                goto fail;
            }
        }
        stride = spans[l];
        stage++;
    }
    int n = 0;
    for (int r = 0; r < s->nranks; r += ppn) {
        tmp[n++] = r;
    }
    if (NULL == add_group(s, tmp, n, OFL_SIM_SOFTWARE == run->mode, top, 0, sp, stage)) {
        goto fail;
    }
    stage++;
    for (int l = nlev - 1; l >= 0 && down; --l) {
        int inner = l > 0 ? spans[l - 1] : 1;
        for (int base = 0; base < s->nranks; base += spans[l]) {
            int m = 0;
            for (int r = base; r < base + spans[l]; r += inner) {
                tmp[m++] = r;
            }
            if (NULL == add_group(s, tmp, m, 1, OFL_COLL_BCAST, 0, &local, stage)) {
                goto fail;
            }
        }
        stage++;
    }
    free(tmp);
    return 0;
fail:
    free(tmp);
    return -1;
}

static void sim_free(sim_t *s)
{
    for (int g = 0; g < s->ngroups; ++g) {
        sim_group_t *grp = &s->groups[g];
        for (int i = 0; grp->nics && i < grp->size; ++i) {
            sim_nic_t *n = &grp->nics[i];
            for (int k = 0; n->peers && k < n->npeers; ++k) {
                free(n->peers[k].mbox[0]);
                free(n->peers[k].mbox[1]);
            }
            free(n->peers);
            free(n->log);
            ofl_program_free(&n->prog);
        }
        free(grp->nics);
        free(grp->members);
    }
    free(s->groups);
    for (int r = 0; s->ranks && r < s->nranks; ++r) {
        free(s->ranks[r].send);
        free(s->ranks[r].recv);
    }
    free(s->ranks);
    free(s->tx_free);
    free(s->rx_free);
    free(s->heap);
    ofl_edges_fini(&s->edges);
}

int ofl_sim(const ofl_sim_model_t *model, const ofl_sim_topo_t *topo, int nodes,
            const ofl_sim_run_t *run, ofl_sim_result_t *res, char *err, size_t errlen)
{
    sim_t s = { .m = model, .topo = topo, .run = run, .err = err, .errlen = errlen };
    memset(res, 0, sizeof(*res));
    if (err && errlen) {
        err[0] = '\0';
    }
    if (nodes < 1 || topo->ppn < 1 || run->calls < 1 || run->byte_scale < 1.0
        || (long) nodes * topo->ppn > (1L << 24)) {
        sim_fail(&s, "invalid arguments");
        return -1;
    }
    s.nnodes = nodes;
    s.nranks = nodes * topo->ppn;
    if (OFL_COLL_BCAST == run->coll || OFL_COLL_BARRIER == run->coll) {
        s.elem = ofl_type_size(run->type);
    } else {
        s.fn = ofl_alu_lookup(run->op, run->type);
        s.elem = ofl_type_size(run->type);
        if (NULL == s.fn) {
            sim_fail(&s, "no ALU kernel for that op and type");
            return -1;
        }
    }
    if (run->check && OFL_COLL_BARRIER != run->coll && OFL_COLL_BCAST != run->coll) {
        unsigned char a[64] = { 0 }, b[64] = { 0 };
        if (0 != ref_combine(run->op, run->type, a, b)) {
            sim_fail(&s, "no reference for that op and type");
            return -1;
        }
    }
    if (run->hier && OFL_COLL_ALLREDUCE != run->coll && OFL_COLL_BARRIER != run->coll
        && 0 != run->root) {
        sim_fail(&s, "node-aware reduce and bcast are simulated for root 0 only");
        return -1;
    }
    s.count = OFL_COLL_BARRIER == run->coll ? 0 : run->count;
    size_t msg = s.count * s.elem;
    size_t seg = run->seg_bytes && run->seg_bytes < msg ? run->seg_bytes : msg;
    seg = (seg / s.elem) * s.elem;
    s.slot_bytes = seg > sizeof(sim_ref_t) ? seg : sizeof(sim_ref_t);
    s.slot_bytes = (s.slot_bytes + 63) & ~(size_t) 63;

    s.ranks = sim_alloc(&s, (size_t) s.nranks * sizeof(sim_rank_t));
    s.tx_free = sim_alloc(&s, (size_t) nodes * sizeof(double));
    s.rx_free = sim_alloc(&s, (size_t) nodes * sizeof(double));
    /* at most: sockets + nodes + leaders + nodes + sockets groups */
    size_t maxgroups = run->hier ? 4 * (size_t) s.nranks + 1 : 1;
    s.groups = sim_alloc(&s, maxgroups * sizeof(sim_group_t));
    if (0 != ofl_edges_init(&s.edges, s.nranks)) {
        sim_fail(&s, "out of memory (edges)");
    }
    s.bytes += (size_t) s.nranks * OFL_CHANNELS * 2 * sizeof(uint64_t);
    for (int r = 0; !s.failed && r < s.nranks; ++r) {
        s.ranks[r].send = sim_alloc(&s, msg ? msg : 1);
        s.ranks[r].recv = sim_alloc(&s, msg ? msg : 1);
        s.ranks[r].rng = mix64(run->seed ^ mix64((uint64_t) r + 1));
    }
    if (s.failed) {
        sim_free(&s);
        return -1;
    }
    int hier = run->hier && topo->ppn > 1;
    if (hier) {
        build_hier(&s, &run->sched);
    } else {
        int *all = sim_alloc(&s, (size_t) s.nranks * sizeof(int));
        for (int r = 0; all && r < s.nranks; ++r) {
            all[r] = r;
        }
        if (all) {
            add_group(&s, all, s.nranks, OFL_SIM_SOFTWARE == run->mode, run->coll, run->root,
                      &run->sched, 0);
        }
        free(all);
    }
    if (s.failed) {
        sim_free(&s);
        return -1;
    }
    /* Buffers per stage: the first reads the send buffer, later ones work in place on
     * the receive buffer, where the previous level left the partial result. */
    for (int r = 0; r < s.nranks; ++r) {
        sim_rank_t *rk = &s.ranks[r];
        int first = 1;
        for (int st = 0; st < rk->nstages; ++st) {
            rk->stage_send[st] = first ? rk->send : rk->recv;
            rk->stage_recv[st] = rk->recv;
            first &= NULL == rk->stage[st];
        }
    }
    double sum = 0.0;
    res->min_us = INFINITY;
    for (int c = 0; c < run->calls && !s.failed; ++c) {
        for (int r = 0; r < s.nranks; ++r) {
            sim_rank_t *rk = &s.ranks[r];
            for (size_t i = 0; i < s.count; ++i) {
                ofl_sim_value(run->type, r, i, c, (char *) rk->send + i * s.elem);
            }
            if (OFL_COLL_BCAST == run->coll) {
                if (r == run->root) {
                    memcpy(rk->recv, rk->send, msg);
                } else if (msg) {
                    memset(rk->recv, 0xA5, msg);
                }
            } else if (msg) {
                memset(rk->recv, 0xA5, msg);
            }
            rk->exec_free = 0.0;
            rk->finish = -1.0;
            for (int st = 0; st < rk->nstages; ++st) {
                if (rk->stage[st]) {
                    rk->stage[st]->posted = 0;
                }
            }
        }
        for (int nd = 0; nd < nodes; ++nd) {
            s.tx_free[nd] = s.rx_free[nd] = 0.0;
        }
        for (int r = 0; r < s.nranks; ++r) {
            sim_rank_t *rk = &s.ranks[r];
            for (int st = 0; st < rk->nstages; ++st) {
                if (NULL != rk->stage[st]) {
                    start_stage(&s, rk->stage[st], st, model->host_post_us);
                    break;
                }
            }
        }
        while (s.nheap > 0 && !s.failed) {
            sim_event_t ev = ev_pop(&s);
            if (ev.peer < 0) {
                post(&s, ev.nic, ev.cnt, ev.t);
                continue;
            }
            s.events++;
            sim_peer_t *p = &ev.nic->peers[ev.peer];
            uint64_t *ctr = OFL_CNT_DATA == ev.cnt ? &p->data[ev.chan] : &p->credit[ev.chan];
            if (ev.value > *ctr) {
                *ctr = ev.value;
            }
            /* the receiver handles the packet: a counter update on the NIC, the
             * messaging stack on the host */
            sim_rank_t *rk = &s.ranks[ev.nic->global];
            double busy = rk->exec_free > ev.t ? rk->exec_free : ev.t;
            rk->exec_free = busy + (ev.nic->group->host ? model->host_pkt_us : model->nic_pkt_us);
            step(&s, ev.nic, ev.t);
        }
        double lat = 0.0;
        for (int r = 0; r < s.nranks && !s.failed; ++r) {
            if (s.ranks[r].finish < 0) {
                sim_fail(&s, "a call never completed (the program waits for a counter no "
                             "packet raises)");
            }
            lat = s.ranks[r].finish > lat ? s.ranks[r].finish : lat;
        }
        if (s.failed) {
            break;
        }
        sum += lat;
        res->min_us = lat < res->min_us ? lat : res->min_us;
        res->max_us = lat > res->max_us ? lat : res->max_us;
        if (run->check && OFL_COLL_BARRIER != run->coll) {
            check_call(&s, c, &res->wrong, &res->checked);
        }
    }
    res->mean_us = sum / run->calls;
    res->events = s.events;
    res->descs = s.descs;
    res->bytes = s.bytes;
    int failed = s.failed;
    sim_free(&s);
    return failed ? -1 : 0;
}
