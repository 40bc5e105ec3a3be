/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the libfabric NIC backend (see ofi.h): its data path, the
 * ops table the engine drives, and what the component reads of a NIC. The
 * endpoint's set-up and the exchange of addresses are ofi_ep.c.
 */
#include "nic/ofi.h"
#include "nic/ofi_int.h"

#include <errno.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Programs only name neighbours: the index exists. */
static inline size_t stream(const ofl_ofi_t *o, int peer, int chan)
{
    return (size_t) ofl_ofi_peer_index(o, peer) * CH + (size_t) chan;
}

static inline fi_addr_t addr_of(const ofl_ofi_t *o, int peer)
{
    return peer == o->base.rank ? o->addr_self : o->addr[ofl_ofi_peer_index(o, peer)];
}

static inline uint8_t *mbox_slot(ofl_ofi_t *o, int src, int chan, uint64_t item)
{
    size_t slot = (size_t) (item % (uint64_t) o->base.slots);
    return o->mbox + (stream(o, src, chan) * (size_t) o->base.slots + slot) * o->base.slot_bytes;
}

static inline uint8_t *staging_slot(ofl_ofi_t *o, int dst, int chan, uint64_t item)
{
    size_t slot = (size_t) (item % (uint64_t) o->base.slots);
    return o->staging
           + (stream(o, dst, chan) * (size_t) o->base.slots + slot) * o->base.slot_bytes;
}

/* Drain the completion queue (writes are fire-and-forget: credits order slot
 * reuse; triggered operations carry a context and are counted) and, for
 * providers that need it, drive progress. */
void ofl_ofi_poll_cq(ofl_ofi_t *o)
{
    struct fi_cq_entry e[16];
    for (;;) {
        ssize_t n = fi_cq_read(o->cq, e, 16);
        if (n > 0) {
            for (ssize_t i = 0; i < n; ++i) {
                o->nat_completed += NULL != e[i].op_context;
            }
            continue;
        }
        if (-FI_EAVAIL == n) {
            struct fi_cq_err_entry err;
            memset(&err, 0, sizeof(err));
            fi_cq_readerr(o->cq, &err, 0);
            o->poisoned = o->poisoned ? o->poisoned : 1;   /* a write failed */
            continue;
        }
        return;
    }
}

static int ofi_reached(ofl_nic_t *b, int cnt, int peer, int chan, uint64_t threshold)
{
    ofl_ofi_t *o = (ofl_ofi_t *) b;
    if (0 == threshold) {
        return 1;
    }
    size_t s = stream(o, peer, chan);
    if (OFL_CNT_DATA == cnt) {
        if (o->data_seen[s] >= threshold) {
            return 1;
        }
        ofl_ofi_poll_cq(o);
        uint64_t v = fi_cntr_read(o->cntr[s]);
        /* Writes landed never go back, and a peer may put at most `slots`
         * items beyond those this rank handed back as credit. */
        if (v < o->data_seen[s] || v > o->credit_given[s] + (uint64_t) b->slots) {
            return -EPROTO;
        }
        o->data_seen[s] = v;
        if (v >= threshold) {
            atomic_thread_fence(memory_order_acquire);
            return 1;
        }
        return 0;
    }
    if (o->credit_seen[s] >= threshold) {
        return 1;
    }
    ofl_ofi_poll_cq(o);
    uint64_t v = atomic_load_explicit(&o->credit[s], memory_order_acquire);
    /* A credit never goes back and never counts items this rank has not put. */
    if (v < o->credit_seen[s] || v > o->data_put[s]) {
        return -EPROTO;
    }
    o->credit_seen[s] = v;
    return v >= threshold;
}

static uint64_t ofi_counter(ofl_nic_t *b, int cnt, int peer, int chan)
{
    ofl_ofi_t *o = (ofl_ofi_t *) b;
    size_t s = stream(o, peer, chan);
    return OFL_CNT_DATA == cnt ? fi_cntr_read(o->cntr[s])
                               : atomic_load_explicit(&o->credit[s], memory_order_acquire);
}

/* Post an RMA write, retrying while the provider is busy. */
static void post_write(ofl_ofi_t *o, const void *src, size_t len, int peer, uint64_t raddr,
                       uint64_t key, int inject)
{
    for (;;) {
        fi_addr_t to = addr_of(o, peer);
        ssize_t rc = inject ? fi_inject_write(o->ep, src, len, to, raddr, key)
                            : fi_write(o->ep, src, len, fi_mr_desc(o->mr_staging), to, raddr, key,
                                       NULL);
        if (0 == rc) {
            o->writes++;
            o->bytes += len;
            return;
        }
        if (-FI_EAGAIN != rc) {
            o->poisoned = o->poisoned ? o->poisoned : peer + 1;
            return;
        }
        ofl_ofi_poll_cq(o);
    }
}

static void ofi_bump(ofl_nic_t *b, int cnt, int peer, int chan, uint64_t item, uint64_t len)
{
    ofl_ofi_t *o = (ofl_ofi_t *) b;
    size_t s = stream(o, peer, chan);
    if (OFL_CNT_DATA == cnt) {
        /* The item's bytes, from the outbox to the peer's mailbox slot; the
         * write landing is the count (the peer's counter for the stream). */
        size_t slot = (size_t) (item % (uint64_t) b->slots);
        uint64_t off = (uint64_t) slot * b->slot_bytes;
        uint64_t raddr = o->r_mbox_base[s] + off;
        size_t n = len < MIN_WRITE ? MIN_WRITE : (size_t) len;
        o->data_put[s] = item + 1;
        post_write(o, staging_slot(o, peer, chan, item), n, peer, raddr, o->r_mbox_key[s], 0);
        return;
    }
    /* My credit toward peer: its word for my stream becomes item + 1. */
    uint64_t v = item + 1;
    o->credit_given[s] = v;
    post_write(o, &v, sizeof(v), peer, o->r_credit_at[s], o->r_credit_key[s / CH], 1);
}

static void *ofi_inbox(ofl_nic_t *b, int peer, int chan, uint64_t item)
{
    return mbox_slot((ofl_ofi_t *) b, peer, chan, item);
}

static void *ofi_outbox(ofl_nic_t *b, int peer, int chan, uint64_t item)
{
    return staging_slot((ofl_ofi_t *) b, peer, chan, item);
}

static int ofi_peer_alive(ofl_nic_t *b, int peer)
{
    /* The runtime notices dead processes across nodes; a failed write poisons. */
    (void) b;
    (void) peer;
    return 1;
}

static void ofi_poison(ofl_nic_t *b, int dead)
{
    ofl_ofi_t *o = (ofl_ofi_t *) b;
    o->poisoned = o->poisoned ? o->poisoned : dead + 1;
}

static int ofi_poisoned(ofl_nic_t *b)
{
    return ((ofl_ofi_t *) b)->poisoned - 1;
}

const ofl_nic_ops_t ofl_ofi_ops = {
    .reached = ofi_reached,
    .counter = ofi_counter,
    .bump = ofi_bump,
    .inbox = ofi_inbox,
    .outbox = ofi_outbox,
    .put_ref = NULL,
    .get = NULL,
    .peer_alive = ofi_peer_alive,
    .poison = ofi_poison,
    .poisoned = ofi_poisoned,
    .ring = NULL,
};

const char *ofl_ofi_provider(const ofl_ofi_t *o)
{
    return o->info->fabric_attr->prov_name;
}

size_t ofl_ofi_streams(const ofl_ofi_t *o)
{
    return (size_t) o->npeers * CH;
}

ofl_nic_t *ofl_ofi_nic(ofl_ofi_t *o)
{
    return &o->base;
}

void ofl_ofi_stats(const ofl_ofi_t *o, uint64_t *writes, uint64_t *bytes)
{
    *writes = o->writes;
    *bytes = o->bytes;
}
