/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the libfabric NIC's insides, shared by ofi.c (the NIC the
 * engine drives), ofi_ep.c (its set-up) and ofi_native.c (collectives posted
 * as triggered operations). Not for use outside src/nic/.
 */
#ifndef OFL_OFI_INT_H
#define OFL_OFI_INT_H

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_trigger.h>
#include <stdatomic.h>
#include <stdint.h>

#include "alu/alu.h"
#include "nic/ofi.h"

/* libfabric's entry points, loaded at the first open (ofi_ep.c). */
typedef struct {
    int (*getinfo)(uint32_t, const char *, const char *, uint64_t, const struct fi_info *,
                   struct fi_info **);
    void (*freeinfo)(struct fi_info *);
    struct fi_info *(*dupinfo)(const struct fi_info *);
    int (*fabric)(struct fi_fabric_attr *, struct fid_fabric **, void *);
    const char *(*strerror)(int);
    int loaded;               /* 1 ok, -1 failed */
    char why[200];
} ofl_ofi_lib_t;

extern ofl_ofi_lib_t ofl_ofi_lf;

/* Rounds of a native collective: log2 of the communicator size, at most. */
#define OFL_OFI_NAT_MAX_ROUNDS 16
/* A native region: the accumulator, then the word a partner's "ready" lands in. */
#define OFL_OFI_NAT_REGION (OFL_OFI_NATIVE_MAX_BYTES + 64)

#define CH OFL_CHANNELS
#define NAME_MAX_BYTES 256
#define MIN_WRITE 8   /* an item of no payload still lands (and counts) */

/* Neighbours (ranks this one exchanges with) a NIC may have: the peers of a
 * rank's programs, plus its native partners. */
#define OFL_OFI_MAX_PEERS (OFL_NIC_MAX_PEERS + OFL_OFI_NAT_MAX_ROUNDS)

/* One receiving stream of a blob: where (src, chan)'s writes land, and at
 * which index of the owner's credit words src's credits for it go (the
 * entry's position). */
typedef struct {
    int32_t src;
    int32_t chan;
    uint64_t base;
    uint64_t key;
} blob_mbox_t;

/* A rank's blob: its endpoint name, its credit region, its native regions,
 * then its receiving streams (one per neighbour and channel). The same size
 * on every rank, whatever the communicator's: what a rank keeps grows with
 * its neighbours only. */
typedef struct {
    uint32_t name_len;
    uint32_t size;
    uint8_t name[NAME_MAX_BYTES];
    uint64_t credit_base;
    uint64_t credit_key;
    int32_t nat_rounds;       /* native regions below (-1: none) */
    uint32_t nmbox;
    uint64_t nat[2 * (OFL_OFI_NAT_MAX_ROUNDS + 1)];   /* [round] pairs: base, key */
    blob_mbox_t mbox[OFL_OFI_MAX_PEERS * CH];
} blob_t;

struct ofl_ofi {
    ofl_nic_t base;           /* first: the engine's view */
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    int npeers;               /* neighbours: the only ranks with streams and addresses */
    int *peers;               /* [npeers] their ranks, ascending; stream index i * CH + chan */
    struct fid_cntr **cntr;   /* [stream]: DATA counters, counted by the NIC */
    struct fid_mr **mr_mbox;  /* [stream] */
    struct fid_mr *mr_credit;
    struct fid_mr *mr_staging;
    uint8_t *mbox;            /* [stream of src][slot] */
    _Atomic uint64_t *credit; /* [stream of the feeder] */
    uint8_t *staging;         /* [stream of dst][slot] */
    fi_addr_t *addr;          /* [neighbour] */
    fi_addr_t addr_self;
    uint64_t *r_mbox_base;    /* [stream of dst]: dst's region for stream (me, chan) */
    uint64_t *r_mbox_key;
    uint64_t *r_credit_at;    /* [stream of dst]: my credit word there */
    uint64_t *r_credit_key;   /* [neighbour] */
    uint64_t *data_seen;      /* [stream of src]: last counter value read */
    /* Private, [stream] each: what this rank knows of every stream, against
     * which the peers' values are checked (nic.h, "Validation"). */
    uint64_t *credit_seen;    /* [stream of the feeder]: last credit value read */
    uint64_t *data_put;       /* [stream of dst]: items put (DATA bumps) */
    uint64_t *credit_given;   /* [stream of src]: items consumed (CREDIT bumps) */
    int virt_addr;            /* remote addresses are virtual addresses, not offsets */
    int prov_key;
    int connected;
    int poisoned;             /* dead rank + 1 */
    uint64_t writes;
    uint64_t bytes;
    /* Native triggered collectives (ofi_native.c). Region j (0..rounds) is
     * the round-j accumulator, registered with its own counter: partners'
     * atomics into it and their "ready" writes count there. */
    int native;               /* the provider offers FI_TRIGGER and FI_ATOMIC */
    int nat_rounds;           /* log2(size); -1: not a power of two, or not native */
    uint8_t *nat;
    struct fid_mr *nat_mr[OFL_OFI_NAT_MAX_ROUNDS + 1];
    struct fid_cntr *nat_cntr[OFL_OFI_NAT_MAX_ROUNDS + 1];
    uint64_t r_acc_base[OFL_OFI_NAT_MAX_ROUNDS];     /* [j]: partner j's region j + 1 */
    uint64_t r_acc_key[OFL_OFI_NAT_MAX_ROUNDS];
    uint64_t r_ready_base[OFL_OFI_NAT_MAX_ROUNDS];   /* [j]: partner j's region j, ready word */
    uint64_t r_ready_key[OFL_OFI_NAT_MAX_ROUNDS];
    struct fi_triggered_context nat_trig[2 * OFL_OFI_NAT_MAX_ROUNDS];
    uint64_t nat_calls;       /* native calls so far: thresholds grow with them */
    uint64_t nat_completed;   /* completions of triggered operations (CQ) */
    int nat_pending;          /* a posted native call not yet found done */
    uint64_t nat_wait_cntr;   /* ... done when the last region's counter, */
    uint64_t nat_wait_completed;   /* ... the completions ... */
    size_t nat_wait_bytes;    /* ... and this many result bytes to copy out */
    uint64_t nat_posted;      /* triggered operations posted */
    int8_t nat_valid[OFL_OP_COUNT][OFL_T_COUNT];     /* 0 unknown, 1 yes, -1 no */
    size_t nat_max_count[OFL_OP_COUNT][OFL_T_COUNT];
};


void ofl_ofi_poll_cq(ofl_ofi_t *o);

/* The engine's operations on this NIC (ofi.c). */
extern const ofl_nic_ops_t ofl_ofi_ops;

/* Check rank `owner`'s blob (ofl_ofi_blob_bytes bytes, read from the network)
 * as rank `me` of `size` will use it: its size, name length, stream count and
 * native round count in range, every stream entry naming a rank other than
 * `owner` and a channel, and exactly one entry per channel for `me`, whose
 * index goes to entry[chan] (where my credit words lie in owner's region).
 * 0, or -EINVAL with a message in why. */
int ofl_ofi_blob_check(const void *blob, int owner, int me, int size,
                       uint32_t entry[OFL_CHANNELS], char *why, size_t why_len);

/* The neighbour index of `rank`, or -1 (binary search: a handful of entries). */
static inline int ofl_ofi_peer_index(const ofl_ofi_t *o, int rank)
{
    int lo = 0, hi = o->npeers - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (o->peers[mid] == rank) {
            return mid;
        }
        if (o->peers[mid] < rank) {
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return -1;
}

/* ofi_native.c: native resources at open (after the endpoint, before
 * fi_enable; whatever fails there only leaves native collectives off), the
 * blob's part, connect's part, and close. */
void ofl_ofi_native_open(ofl_ofi_t *o);
void ofl_ofi_native_address(ofl_ofi_t *o, blob_t *blob);
void ofl_ofi_native_connect(ofl_ofi_t *o, const void *blobs, size_t stride);
void ofl_ofi_native_close(ofl_ofi_t *o);

#endif
