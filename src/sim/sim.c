/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
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
#include "sim/sim_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        n->base.ops = &sim_nic_ops;
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

/* What the run asks for, checked before anything is built: 0 or -1 (reason set). */
static int check_run(sim_t *s, int nodes)
{
    const ofl_sim_run_t *run = s->run;
    if (nodes < 1 || s->topo->ppn < 1 || run->calls < 1 || run->byte_scale < 1.0
        || (long) nodes * s->topo->ppn > (1L << 24)) {
        sim_fail(s, "invalid arguments");
        return -1;
    }
    s->elem = ofl_type_size(run->type);
    if (OFL_COLL_BCAST != run->coll && OFL_COLL_BARRIER != run->coll) {
        s->fn = ofl_alu_lookup(run->op, run->type);
        if (NULL == s->fn) {
            sim_fail(s, "no ALU kernel for that op and type");
            return -1;
        }
        unsigned char a[64] = { 0 }, b[64] = { 0 };
        if (run->check && 0 != sim_ref_combine(run->op, run->type, a, b)) {
            sim_fail(s, "no reference for that op and type");
            return -1;
        }
    }
    if (run->hier && OFL_COLL_ALLREDUCE != run->coll && OFL_COLL_BARRIER != run->coll
        && 0 != run->root) {
        sim_fail(s, "node-aware reduce and bcast are simulated for root 0 only");
        return -1;
    }
    return 0;
}

/* Ranks, ports, buffers, groups and their programs; each rank's buffers per stage. */
static int build(sim_t *s, int nodes)
{
    const ofl_sim_run_t *run = s->run;
    s->nnodes = nodes;
    s->nranks = nodes * s->topo->ppn;
    s->count = OFL_COLL_BARRIER == run->coll ? 0 : run->count;
    size_t msg = s->count * s->elem;
    size_t seg = run->seg_bytes && run->seg_bytes < msg ? run->seg_bytes : msg;
    seg = (seg / s->elem) * s->elem;
    s->slot_bytes = seg > sizeof(sim_ref_t) ? seg : sizeof(sim_ref_t);
    s->slot_bytes = (s->slot_bytes + 63) & ~(size_t) 63;
    s->ranks = sim_alloc(s, (size_t) s->nranks * sizeof(sim_rank_t));
    s->tx_free = sim_alloc(s, (size_t) nodes * sizeof(double));
    s->rx_free = sim_alloc(s, (size_t) nodes * sizeof(double));
    /* at most: sockets + nodes + leaders + nodes + sockets groups */
    size_t maxgroups = run->hier ? 4 * (size_t) s->nranks + 1 : 1;
    s->groups = sim_alloc(s, maxgroups * sizeof(sim_group_t));
    if (0 != ofl_edges_init(&s->edges, s->nranks)) {
        sim_fail(s, "out of memory (edges)");
    }
    s->bytes += (size_t) s->nranks * OFL_CHANNELS * 2 * sizeof(uint64_t);
    for (int r = 0; !s->failed && r < s->nranks; ++r) {
        s->ranks[r].send = sim_alloc(s, msg ? msg : 1);
        s->ranks[r].recv = sim_alloc(s, msg ? msg : 1);
        s->ranks[r].rng = sim_mix64(run->seed ^ sim_mix64((uint64_t) r + 1));
    }
    if (s->failed) {
        return -1;
    }
    if (run->hier && s->topo->ppn > 1) {
        build_hier(s, &run->sched);
    } else {
        int *all = sim_alloc(s, (size_t) s->nranks * sizeof(int));
        for (int r = 0; all && r < s->nranks; ++r) {
            all[r] = r;
        }
        if (all) {
            add_group(s, all, s->nranks, OFL_SIM_SOFTWARE == run->mode, run->coll, run->root,
                      &run->sched, 0);
        }
        free(all);
    }
    /* Buffers per stage: the first reads the send buffer, later ones work in place on
     * the receive buffer, where the previous level left the partial result. */
    for (int r = 0; !s->failed && r < s->nranks; ++r) {
        sim_rank_t *rk = &s->ranks[r];
        int first = 1;
        for (int st = 0; st < rk->nstages; ++st) {
            rk->stage_send[st] = first ? rk->send : rk->recv;
            rk->stage_recv[st] = rk->recv;
            first &= NULL == rk->stage[st];
        }
    }
    return s->failed ? -1 : 0;
}

/* Call c's data into every send buffer, receive buffers poisoned, every executor
 * and port idle at time 0, every rank's first stage posted after the post cost. */
static void reset_call(sim_t *s, int c)
{
    const ofl_sim_run_t *run = s->run;
    size_t msg = s->count * s->elem;
    for (int r = 0; r < s->nranks; ++r) {
        sim_rank_t *rk = &s->ranks[r];
        for (size_t i = 0; i < s->count; ++i) {
            ofl_sim_value(run->type, r, i, c, (char *) rk->send + i * s->elem);
        }
        if (OFL_COLL_BCAST == run->coll && r == run->root) {
            memcpy(rk->recv, rk->send, msg);
        } else if (msg) {
            memset(rk->recv, 0xA5, msg);
        }
        rk->exec_free = 0.0;
        rk->recv_unit_free = 0.0;
        rk->finish = -1.0;
        for (int st = 0; st < rk->nstages; ++st) {
            if (rk->stage[st]) {
                rk->stage[st]->posted = 0;
            }
        }
    }
    for (int nd = 0; nd < s->nnodes; ++nd) {
        s->tx_free[nd] = s->rx_free[nd] = 0.0;
    }
    for (int r = 0; r < s->nranks; ++r) {
        sim_rank_t *rk = &s->ranks[r];
        for (int st = 0; st < rk->nstages; ++st) {
            if (NULL != rk->stage[st]) {
                sim_start_stage(s, rk->stage[st], st, s->m->host_post_us);
                break;
            }
        }
    }
}

/* Run call c to its end; its latency (the last rank's return), or -1. */
static double run_call(sim_t *s, int c)
{
    reset_call(s, c);
    while (s->nheap > 0 && !s->failed) {
        sim_event_t ev = sim_ev_pop(s);
        if (ev.peer < 0) {
            sim_post(s, ev.nic, ev.cnt, ev.t);
        } else {
            sim_arrive(s, ev);
        }
    }
    double lat = 0.0;
    for (int r = 0; r < s->nranks && !s->failed; ++r) {
        if (s->ranks[r].finish < 0) {
            sim_fail(s, "a call never completed (the program waits for a counter no "
                        "packet raises)");
        }
        lat = s->ranks[r].finish > lat ? s->ranks[r].finish : lat;
    }
    return s->failed ? -1.0 : lat;
}

int ofl_sim(const ofl_sim_model_t *model, const ofl_sim_topo_t *topo, int nodes,
            const ofl_sim_run_t *run, ofl_sim_result_t *res, char *err, size_t errlen)
{
    sim_t s = { .m = model, .topo = topo, .run = run, .err = err, .errlen = errlen };
    memset(res, 0, sizeof(*res));
    if (err && errlen) {
        err[0] = '\0';
    }
    if (0 != check_run(&s, nodes)) {
        return -1;
    }
    if (0 != build(&s, nodes)) {
        sim_free(&s);
        return -1;
    }
    double sum = 0.0;
    res->min_us = INFINITY;
    for (int c = 0; c < run->calls && !s.failed; ++c) {
        double lat = run_call(&s, c);
        if (s.failed) {
            break;
        }
        sum += lat;
        res->min_us = lat < res->min_us ? lat : res->min_us;
        res->max_us = lat > res->max_us ? lat : res->max_us;
        if (run->check && OFL_COLL_BARRIER != run->coll) {
            sim_check_call(&s, c, &res->wrong, &res->checked);
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
