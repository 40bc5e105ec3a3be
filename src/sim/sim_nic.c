/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the sim NIC's operations (nic.h): counters per peer and channel,
 * mailboxes the engine writes into and reads from at once. A bump raises nothing:
 * it is logged, and sim_exec.c sends it as a packet in virtual time.
 */
#include "sim/sim_internal.h"

#include <stdlib.h>
#include <string.h>

sim_peer_t *sim_find_peer(sim_nic_t *n, int rank)
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
    sim_peer_t *p = sim_find_peer((sim_nic_t *) nic, peer);
    uint64_t v = OFL_CNT_DATA == cnt ? p->data[chan] : p->credit[chan];
    return v >= threshold;
}

static uint64_t op_counter(ofl_nic_t *nic, int cnt, int peer, int chan)
{
    sim_peer_t *p = sim_find_peer((sim_nic_t *) nic, peer);
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
    return slot_of(n, sim_find_peer(n, peer), chan, item);
}

static void *op_outbox(ofl_nic_t *nic, int peer, int chan, uint64_t item)
{
    sim_nic_t *n = (sim_nic_t *) nic;
    sim_nic_t *dst = &n->group->nics[peer];
    return slot_of(dst, sim_find_peer(dst, n->base.rank), chan, item);
}

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

const ofl_nic_ops_t sim_nic_ops = {
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
    .board_seen = NULL,
};
