/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the executors in virtual time. After the engine fired what the
 * counters allowed at a rank, the descriptors it fired are replayed from the
 * program to charge each its time on the rank's executor (the NIC's send unit, or
 * the host CPU) and to send its bumps as packets. An arriving packet moves its
 * counter when the receiver has taken it in: the NIC's receive unit, or the host.
 */
#include "sim/sim_internal.h"

#include <math.h>
#include <string.h>

/* Timing bytes of segment seg (0 past the end of the message). */
static double seg_bytes(const sim_t *s, const ofl_inst_t *inst, uint32_t seg)
{
    size_t first = (size_t) seg * inst->seg_elems;
    size_t cnt = 0;
    if (first < inst->count) {
        cnt = inst->count - first;
        cnt = cnt > inst->seg_elems ? inst->seg_elems : cnt;
    }
    return (double) (cnt * inst->elem) * s->run->byte_scale;
}

/* Executor time of one fired descriptor, before its packets. The host combines
 * all its operands when the descriptor runs. The NIC's receive unit has already
 * folded every arriving operand into its intermediate result (sim_arrive), so a
 * combining descriptor costs one ALU pass more: that result with the rank's own
 * operand (seed 003, §3.2 and Fig. 3). */
static double desc_cost(sim_t *s, sim_rank_t *r, int host, const ofl_desc_t *d, double bytes)
{
    const ofl_sim_model_t *m = s->m;
    int combines = d->n_in >= 2 && d->n_out > 0;
    if (!host) {
        return m->nic_desc_us + (combines ? bytes / m->nic_alu_bw : 0.0);
    }
    double cost = m->host_desc_us + (combines ? (d->n_in - 1) * bytes / m->host_alu_bw : 0.0);
    if (m->noise_prob > 0 && sim_uniform(&r->rng) < m->noise_prob) {
        cost += -m->noise_us * log(sim_uniform(&r->rng));
    }
    return cost;
}

/* Charge the descriptors the engine just fired (cursor `from` .. now, queue by
 * queue, as the engine fires them) and send their bumps, in the engine's order. */
static void account(sim_t *s, sim_nic_t *n, double t, const uint32_t *from)
{
    const ofl_program_t *p = &n->prog;
    const ofl_inst_t *inst = &n->inst;
    sim_rank_t *r = &s->ranks[n->global];
    int host = n->group->host;
    double pkt = host ? s->m->host_pkt_us : s->m->nic_pkt_us;
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
            clock += desc_cost(s, r, host, d, seg_bytes(s, inst, seg));
            for (int k = 0; k < d->n_cp; ++k) {
                if (li >= n->nlog) {
                    sim_fail(s, "the engine raised fewer counters than its program says");
                    return;
                }
                clock += pkt;
                sim_send_packet(s, n, &n->log[li++], clock);
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
        sim_start_stage(s, r->stage[next], next, end + s->m->host_post_us);
    } else {
        r->finish = end;
    }
}

void sim_start_stage(sim_t *s, sim_nic_t *n, int stage, double t)
{
    sim_event_t ev = { .t = t, .nic = n, .peer = -1, .cnt = stage };
    sim_ev_push(s, ev);
}

void sim_post(sim_t *s, sim_nic_t *n, int stage, double t)
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

/* A packet is at its receiver. On the NIC the receive unit takes packets in, one
 * after the other, beside the send unit (seed 003, Fig. 1): parsing the header and
 * passing the payload through the ALU into the intermediate result (Fig. 3, steps
 * 1-4); the counter moves when that is done. On the host the CPU's messaging stack
 * handles the packet between its descriptors. */
void sim_arrive(sim_t *s, sim_event_t ev)
{
    const ofl_sim_model_t *m = s->m;
    sim_rank_t *r = &s->ranks[ev.nic->global];
    int host = ev.nic->group->host;
    if (!host && !ev.received) {
        double start = ev.t > r->recv_unit_free ? ev.t : r->recv_unit_free;
        r->recv_unit_free = start + m->nic_pkt_us + ev.bytes / m->nic_alu_bw;
        ev.t = r->recv_unit_free;
        ev.received = 1;
        sim_ev_push(s, ev);
        return;
    }
    s->events++;
    sim_peer_t *p = &ev.nic->peers[ev.peer];
    uint64_t *ctr = OFL_CNT_DATA == ev.cnt ? &p->data[ev.chan] : &p->credit[ev.chan];
    if (ev.value > *ctr) {
        *ctr = ev.value;
    }
    if (host) {
        double busy = r->exec_free > ev.t ? r->exec_free : ev.t;
        r->exec_free = busy + m->host_pkt_us;
    }
    step(s, ev.nic, ev.t);
}
