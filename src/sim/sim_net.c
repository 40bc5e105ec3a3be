/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the simulated machine's network: routes through a k-ary n-tree
 * or a dragonfly, shared memory between ranks of a node, and a packet's trip from
 * the sender's port to the receiver (docs/perf/sim.md: the machine model).
 */
#include "sim/sim_internal.h"

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

int sim_same_node(const sim_t *s, int ga, int gb)
{
    return ga / s->topo->ppn == gb / s->topo->ppn;
}

/* A bump leaves rank `n` at `t` as a packet; its counter moves at the receiver when
 * the packet is there (and, for a host-driven receiver across the network, when
 * the host has noticed). */
void sim_send_packet(sim_t *s, sim_nic_t *n, const sim_bump_t *b, double t)
{
    const ofl_sim_model_t *m = s->m;
    sim_nic_t *dst = &n->group->nics[b->peer];
    double bytes = OFL_CNT_DATA == b->cnt ? (double) b->len * s->run->byte_scale : 0.0;
    double arrive;
    if (sim_same_node(s, n->global, dst->global)) {
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
    sim_peer_t *p = sim_find_peer(dst, n->base.rank);
    if (NULL == p) {
        sim_fail(s, "a packet to a rank whose program does not know the sender");
        return;
    }
    sim_event_t ev = { .t = arrive, .nic = dst, .peer = (int) (p - dst->peers), .cnt = b->cnt,
                       .chan = b->chan, .value = b->item + 1, .bytes = bytes };
    sim_ev_push(s, ev);
}
