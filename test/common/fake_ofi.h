/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * The libfabric NIC (src/nic/ofi.c) without a provider or a network, for the tests of
 * its readers of peer-written values (test/unit/test_validate.c, test/fuzz/fuzz_ofi.c):
 * rank 0 of 2 with rank 1 as its one neighbour, built around stand-in provider
 * objects: DATA counters and CREDIT words whose values the test sets (as the peer's
 * writes would), an endpoint whose writes go nowhere, a completion queue that is
 * always empty.
 */
#ifndef OFL_FAKE_OFI_H
#define OFL_FAKE_OFI_H

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "nic/ofi_int.h"

#define FAKE_OFI_SLOTS 4
#define FAKE_OFI_SLOT_BYTES 64
/* One neighbour's streams, one per channel. */
#define FAKE_OFI_STREAMS (1 * CH)

typedef struct {
    struct fid_cntr cntr;
    uint64_t value;             /* writes landed, as the provider counts them */
} fake_cntr_t;

typedef struct {
    ofl_ofi_t nic;
    fake_cntr_t cntr[FAKE_OFI_STREAMS];             /* DATA, per stream from rank 1 */
    _Atomic uint64_t credit[FAKE_OFI_STREAMS];      /* CREDIT, per stream to rank 1 */
    struct fid_cntr *cntr_of[FAKE_OFI_STREAMS];
    uint8_t mbox[FAKE_OFI_STREAMS * FAKE_OFI_SLOTS * FAKE_OFI_SLOT_BYTES];
    uint8_t staging[FAKE_OFI_STREAMS * FAKE_OFI_SLOTS * FAKE_OFI_SLOT_BYTES];
    uint64_t r_mbox_base[FAKE_OFI_STREAMS + 1], r_mbox_key[FAKE_OFI_STREAMS + 1];
    uint64_t r_credit_at[FAKE_OFI_STREAMS + 1], r_credit_key[2];
    uint64_t priv[4 * FAKE_OFI_STREAMS + 1];
    fi_addr_t addr[2];
    int peers[1];
    struct fid_mr staging_mr;
} fake_ofi_t;

static uint64_t fake_cntr_read(struct fid_cntr *c)
{
    return ((fake_cntr_t *) c)->value;
}

static ssize_t fake_cq_read(struct fid_cq *cq, void *buf, size_t count)
{
    (void) cq, (void) buf, (void) count;
    return -FI_EAGAIN;
}

static ssize_t fake_rma_write(struct fid_ep *ep, const void *buf, size_t len, void *desc,
                              fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
    (void) ep, (void) buf, (void) len, (void) desc, (void) dest, (void) addr, (void) key,
        (void) context;
    return 0;
}

static ssize_t fake_rma_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest,
                               uint64_t addr, uint64_t key)
{
    (void) ep, (void) buf, (void) len, (void) dest, (void) addr, (void) key;
    return 0;
}

static struct fi_ops_cntr fake_cntr_ops = { .size = sizeof(struct fi_ops_cntr),
                                            .read = fake_cntr_read };
static struct fi_ops_cq fake_cq_ops = { .size = sizeof(struct fi_ops_cq), .read = fake_cq_read };
static struct fi_ops_rma fake_rma_ops = { .size = sizeof(struct fi_ops_rma),
                                          .write = fake_rma_write, .inject = fake_rma_inject };
static struct fid_cq fake_cq = { .ops = &fake_cq_ops };
static struct fid_ep fake_ep = { .rma = &fake_rma_ops };

/* A NIC as connected, nothing put or consumed yet, every counter and credit word 0. */
static inline void fake_ofi_init(fake_ofi_t *f)
{
    memset(f, 0, sizeof(*f));
    ofl_ofi_t *o = &f->nic;
    o->base.ops = &ofl_ofi_ops;
    o->base.rank = 0;
    o->base.size = 2;
    o->base.slots = FAKE_OFI_SLOTS;
    o->base.slot_bytes = FAKE_OFI_SLOT_BYTES;
    o->cq = &fake_cq;
    o->ep = &fake_ep;
    o->mr_staging = &f->staging_mr;
    f->peers[0] = 1;
    o->npeers = 1;
    o->peers = f->peers;
    o->cntr = f->cntr_of;
    o->credit = f->credit;
    o->mbox = f->mbox;
    o->staging = f->staging;
    o->addr = f->addr;
    o->r_mbox_base = f->r_mbox_base;
    o->r_mbox_key = f->r_mbox_key;
    o->r_credit_at = f->r_credit_at;
    o->r_credit_key = f->r_credit_key;
    o->data_seen = f->priv;
    o->credit_seen = f->priv + FAKE_OFI_STREAMS;
    o->data_put = f->priv + 2 * FAKE_OFI_STREAMS;
    o->credit_given = f->priv + 3 * FAKE_OFI_STREAMS;
    o->nat_rounds = -1;
    for (int s = 0; s < FAKE_OFI_STREAMS; ++s) {
        f->cntr[s].cntr.ops = &fake_cntr_ops;
        f->cntr_of[s] = &f->cntr[s].cntr;
    }
}

#endif /* OFL_FAKE_OFI_H */
