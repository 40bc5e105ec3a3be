/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the libfabric NIC's set-up (see ofi.h): loading libfabric,
 * choosing the provider, opening the endpoint and registering the streams'
 * regions, the address blob every rank publishes and its check, connecting to
 * the neighbours, and closing. The data path is ofi.c.
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

/* libfabric is loaded when a NIC is first opened, not linked: it pulls a dozen
 * libraries (verbs, psm, ...) that every MPI process would otherwise load for
 * a feature most runs leave off. Its API is inline calls through the objects'
 * operation tables, except these few entry points. */
#include <dlfcn.h>
#include <pthread.h>

ofl_ofi_lib_t ofl_ofi_lf;
#define lf ofl_ofi_lf

static pthread_once_t lf_once = PTHREAD_ONCE_INIT;

static void lf_load(void)
{
    void *h = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
    if (NULL == h) {
        snprintf(lf.why, sizeof(lf.why), "cannot load libfabric.so.1: %s", dlerror());
        lf.loaded = -1;
        return;
    }
    lf.getinfo = (int (*)(uint32_t, const char *, const char *, uint64_t,
                          const struct fi_info *, struct fi_info **)) dlsym(h, "fi_getinfo");
    lf.freeinfo = (void (*)(struct fi_info *)) dlsym(h, "fi_freeinfo");
    lf.dupinfo = (struct fi_info * (*) (const struct fi_info *) ) dlsym(h, "fi_dupinfo");
    lf.fabric = (int (*)(struct fi_fabric_attr *, struct fid_fabric **, void *)) dlsym(
        h, "fi_fabric");
    lf.strerror = (const char *(*) (int) ) dlsym(h, "fi_strerror");
    if (NULL == lf.getinfo || NULL == lf.freeinfo || NULL == lf.dupinfo || NULL == lf.fabric
        || NULL == lf.strerror) {
        snprintf(lf.why, sizeof(lf.why), "libfabric.so.1 lacks fi_getinfo/fi_fabric/...");
        lf.loaded = -1;
        return;
    }
    lf.loaded = 1;
}

static size_t blob_bytes(int size)
{
    (void) size;
    return sizeof(blob_t);
}

#define FAIL(fmt, ...)                                                               \
    do {                                                                             \
        snprintf(why, why_len, fmt, __VA_ARGS__);                                    \
        goto fail;                                                                   \
    } while (0)

static int is_loopback(const char *fabric)
{
    return NULL == fabric || 0 == strncmp(fabric, "127.", 4) || 0 == strcmp(fabric, "::1/128")
           || 0 == strncmp(fabric, "fe80", 4);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *) a, y = *(const int *) b;
    return x < y ? -1 : x > y;
}

/* The neighbour set: `peers` (NULL: every other rank), plus the native
 * partners when native collectives may run; sorted, without duplicates or
 * this rank. 0 or -1 (too many, or out of memory). */
static int set_peers(ofl_ofi_t *o, const int *peers, int npeers)
{
    int size = o->base.size, me = o->base.rank;
    int cap = (NULL == peers ? size : npeers) + OFL_OFI_NAT_MAX_ROUNDS;
    o->peers = malloc(sizeof(int) * (size_t) cap);
    if (NULL == o->peers) {
        return -1;
    }
    int n = 0;
    for (int i = 0; i < (NULL == peers ? size : npeers); ++i) {
        int r = NULL == peers ? i : peers[i];
        if (r != me && r >= 0 && r < size) {
            o->peers[n++] = r;
        }
    }
    if (o->native && size >= 2 && 0 == (size & (size - 1))) {
        for (int j = 0; (1 << j) < size && j < OFL_OFI_NAT_MAX_ROUNDS; ++j) {
            o->peers[n++] = me ^ (1 << j);
        }
    }
    qsort(o->peers, (size_t) n, sizeof(int), cmp_int);
    int u = 0;
    for (int i = 0; i < n; ++i) {
        if (0 == u || o->peers[u - 1] != o->peers[i]) {
            o->peers[u++] = o->peers[i];
        }
    }
    o->npeers = u;
    return u <= OFL_OFI_MAX_PEERS ? 0 : -1;
}

/* The entry of `list` to use: on fabric `iface` if given, else the first not on
 * loopback (or, with only loopback, the first: a single host). Automatic
 * choice skips providers that cannot leave the node. */
static struct fi_info *pick(struct fi_info *list, const char *iface, int automatic)
{
    struct fi_info *any = NULL;
    for (struct fi_info *i = list; NULL != i; i = i->next) {
        const char *prov = i->fabric_attr->prov_name, *name = i->fabric_attr->name;
        if (automatic && NULL != prov && (0 == strcmp(prov, "shm") || 0 == strcmp(prov, "sm2"))) {
            continue;
        }
        if (NULL != iface) {
            if (NULL != name && 0 == strcmp(name, iface)) {
                return lf.dupinfo(i);
            }
            continue;
        }
        if (!is_loopback(name)) {
            return lf.dupinfo(i);
        }
        any = NULL != any ? any : i;
    }
    return NULL != any ? lf.dupinfo(any) : NULL;
}
/* The provider: triggered atomics first (native collectives); else the
 * engine's software triggering over plain RMA. 0, or -1 with the reason. */
static int open_info(ofl_ofi_t *o, const char *provider, const char *iface, char *why,
                     size_t why_len)
{
    struct fi_info *hints = lf.dupinfo(NULL), *list = NULL;
    if (NULL == hints) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_RMA | FI_WRITE | FI_REMOTE_WRITE | FI_RMA_EVENT | FI_ATOMIC | FI_TRIGGER;
    hints->tx_attr->msg_order = FI_ORDER_WAW;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY
                                  | FI_MR_LOCAL;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    int automatic = NULL == provider || '\0' == *provider;
    hints->fabric_attr->prov_name = automatic ? NULL : strdup(provider);
    for (int pass = 0; pass < 2 && NULL == o->info; ++pass) {
        if (1 == pass) {
            hints->caps &= ~(uint64_t) (FI_ATOMIC | FI_TRIGGER);
        }
        if (NULL != list) {
            lf.freeinfo(list);
            list = NULL;
        }
        if (0 != lf.getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &list)) {
            continue;
        }
        o->info = pick(list, iface, automatic);
        o->native = NULL != o->info && 0 == pass;
    }
    int rc = 0;
    if (NULL == o->info) {
        snprintf(why, why_len,
                 "no libfabric provider %s%s%s with RDM endpoints, RMA, remote-write counters "
                 "and ordered writes%s%s",
                 automatic ? "" : "named '", automatic ? "" : provider,
                 automatic ? "(automatic: any but node-local ones)" : "'",
                 NULL != iface ? " on fabric " : "", NULL != iface ? iface : "");
        rc = -1;
    } else if (0 == (o->info->tx_attr->msg_order & FI_ORDER_WAW)) {
        snprintf(why, why_len, "provider %s does not order writes after writes",
                 o->info->fabric_attr->prov_name);
        rc = -1;
    }
    lf.freeinfo(hints);
    if (NULL != list) {
        lf.freeinfo(list);
    }
    return rc;
}

/* Fabric, domain, the neighbour set, address vector, completion queue and
 * endpoint. 0, or -1 with the reason. */
static int open_endpoint(ofl_ofi_t *o, const int *peers, int npeers, char *why, size_t why_len)
{
    o->virt_addr = 0 != (o->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR);
    o->prov_key = 0 != (o->info->domain_attr->mr_mode & FI_MR_PROV_KEY);
    int rc;
    if (0 != (rc = lf.fabric(o->info->fabric_attr, &o->fabric, NULL))
        || 0 != (rc = fi_domain(o->fabric, o->info, &o->domain, NULL))) {
        FAIL("fabric/domain: %s", lf.strerror(-rc));
    }
    if (0 != set_peers(o, peers, npeers)) {
        FAIL("more than %d neighbours (or out of memory)", OFL_OFI_MAX_PEERS);
    }
    struct fi_av_attr av_attr = { .type = FI_AV_TABLE, .count = (size_t) o->npeers + 1 };
    struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT, .size = 256 };
    if (0 != (rc = fi_av_open(o->domain, &av_attr, &o->av, NULL))
        || 0 != (rc = fi_cq_open(o->domain, &cq_attr, &o->cq, NULL))
        || 0 != (rc = fi_endpoint(o->domain, o->info, &o->ep, NULL))
        || 0 != (rc = fi_ep_bind(o->ep, &o->av->fid, 0))
        || 0 != (rc = fi_ep_bind(o->ep, &o->cq->fid, FI_TRANSMIT))) {
        FAIL("endpoint: %s", lf.strerror(-rc));
    }
    return 0;
fail:
    return -1;
}

/* The streams' buffers and the tables of what the peers publish. 0 or -1. */
static int open_buffers(ofl_ofi_t *o, size_t streams, size_t region)
{
    o->cntr = calloc(streams, sizeof(*o->cntr));
    o->mr_mbox = calloc(streams, sizeof(*o->mr_mbox));
    /* One spare page or entry each: a rank without neighbours (size 1) still
     * gets non-empty buffers and registrations, which providers require. */
    o->mbox = aligned_alloc(4096, (streams * region + 4096) / 4096 * 4096);
    o->staging = aligned_alloc(4096, (streams * region + 4096) / 4096 * 4096);
    o->credit = aligned_alloc(4096, (streams * sizeof(uint64_t) + 4096) / 4096 * 4096);
    o->addr = calloc((size_t) o->npeers + 1, sizeof(*o->addr));
    o->r_mbox_base = calloc(streams + 1, sizeof(uint64_t));
    o->r_mbox_key = calloc(streams + 1, sizeof(uint64_t));
    o->r_credit_at = calloc(streams + 1, sizeof(uint64_t));
    o->r_credit_key = calloc((size_t) o->npeers + 1, sizeof(uint64_t));
    o->data_seen = calloc(4 * streams + 1, sizeof(uint64_t));
    if (NULL != o->data_seen) {
        o->credit_seen = o->data_seen + streams;
        o->data_put = o->data_seen + 2 * streams;
        o->credit_given = o->data_seen + 3 * streams;
    }
    if (NULL == o->cntr || NULL == o->mr_mbox || NULL == o->mbox || NULL == o->staging
        || NULL == o->credit || NULL == o->addr || NULL == o->r_mbox_base
        || NULL == o->r_mbox_key || NULL == o->r_credit_at || NULL == o->r_credit_key
        || NULL == o->data_seen) {
        return -1;
    }
    memset(o->credit, 0, streams * sizeof(uint64_t));
    return 0;
}

/* Each mailbox registered with its DATA counter; the credit words and the
 * staging area registered. 0, or -1 with the reason. */
static int open_regions(ofl_ofi_t *o, size_t streams, size_t region, char *why,
                        size_t why_len)
{
    struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
    uint64_t key = 1;
    int rc;
    for (size_t s = 0; s < streams; ++s) {
        const char *step = "fi_cntr_open";
        if (0 != (rc = fi_cntr_open(o->domain, &cntr_attr, &o->cntr[s], NULL))
            || (step = "fi_mr_reg",
                0 != (rc = fi_mr_reg(o->domain, o->mbox + s * region, region, FI_REMOTE_WRITE,
                                     0, key++, 0, &o->mr_mbox[s], NULL)))
            || (step = "fi_mr_bind (counter)",
                0 != (rc = fi_mr_bind(o->mr_mbox[s], &o->cntr[s]->fid, FI_REMOTE_WRITE)))) {
            FAIL("mailbox region %zu: %s: %s", s, step, lf.strerror(-rc));
        }
        if (0 != (o->info->domain_attr->mr_mode & FI_MR_ENDPOINT)
            && 0 != (rc = fi_mr_enable(o->mr_mbox[s]))) {
            FAIL("mailbox region %zu: fi_mr_enable: %s", s, lf.strerror(-rc));
        }
    }
    if (0 != (rc = fi_mr_reg(o->domain, (void *) o->credit, (streams + 1) * sizeof(uint64_t),
                             FI_REMOTE_WRITE, 0, key++, 0, &o->mr_credit, NULL))
        || 0 != (rc = fi_mr_reg(o->domain, o->staging, streams * region + 1, FI_WRITE, 0, key++,
                                0, &o->mr_staging, NULL))) {
        FAIL("credit/staging regions: %s", lf.strerror(-rc));
    }
    return 0;
fail:
    return -1;
}

ofl_ofi_t *ofl_ofi_open(int rank, int size, const int *peers, int npeers, int slots,
                        size_t slot_bytes, const char *provider, const char *iface, char *why,
                        size_t why_len)
{
    pthread_once(&lf_once, lf_load);
    if (1 != lf.loaded) {
        snprintf(why, why_len, "%s", lf.why);
        return NULL;
    }
    ofl_ofi_t *o = calloc(1, sizeof(*o));
    if (NULL == o) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    o->base.ops = &ofl_ofi_ops;
    o->base.rank = rank;
    o->base.size = size;
    o->base.slots = slots;
    o->base.slot_bytes = (slot_bytes + 63) / 64 * 64;
    o->nat_rounds = -1;
    if (0 != open_info(o, provider, iface, why, why_len)
        || 0 != open_endpoint(o, peers, npeers, why, why_len)) {
        goto fail;
    }
    size_t streams = (size_t) o->npeers * CH;
    size_t region = (size_t) slots * o->base.slot_bytes;
    if (0 != open_buffers(o, streams, region)) {
        FAIL("out of memory for %zu streams", streams);
    }
    if (0 != open_regions(o, streams, region, why, why_len)) {
        goto fail;
    }
    if (o->native) {
        ofl_ofi_native_open(o);
    }
    int rc = fi_enable(o->ep);
    if (0 != rc) {
        FAIL("fi_enable: %s", lf.strerror(-rc));
    }
    return o;
fail:
    ofl_ofi_close(o);
    return NULL;
}

static uint64_t remote_base(const ofl_ofi_t *o, const void *p)
{
    return o->virt_addr ? (uint64_t) (uintptr_t) p : 0;
}

void ofl_ofi_address(ofl_ofi_t *o, void *out)
{
    blob_t *blob = out;
    memset(blob, 0, blob_bytes(o->base.size));
    size_t len = NAME_MAX_BYTES;
    if (0 != fi_getname(&o->ep->fid, blob->name, &len)) {
        len = 0;
    }
    blob->name_len = (uint32_t) len;
    blob->size = (uint32_t) o->base.size;
    blob->credit_base = remote_base(o, (const void *) o->credit);
    blob->credit_key = fi_mr_key(o->mr_credit);
    ofl_ofi_native_address(o, blob);
    size_t streams = (size_t) o->npeers * CH;
    size_t region = (size_t) o->base.slots * o->base.slot_bytes;
    blob->nmbox = (uint32_t) streams;
    for (size_t s = 0; s < streams; ++s) {
        blob->mbox[s].src = o->peers[s / CH];
        blob->mbox[s].chan = (int32_t) (s % CH);
        blob->mbox[s].base = remote_base(o, o->mbox + s * region);
        blob->mbox[s].key = fi_mr_key(o->mr_mbox[s]);
    }
}

int ofl_ofi_blob_check(const void *blob, int owner, int me, int size,
                       uint32_t entry[OFL_CHANNELS], char *why, size_t why_len)
{
    const blob_t *b = blob;
    /* Read each word once: only the copies are checked and used. */
    uint32_t bsize = b->size, name_len = b->name_len, nmbox = b->nmbox;
    int32_t nat_rounds = b->nat_rounds;
    if (bsize != (uint32_t) size || 0 == name_len || name_len > NAME_MAX_BYTES
        || nmbox > OFL_OFI_MAX_PEERS * CH || nat_rounds < -1
        || nat_rounds > OFL_OFI_NAT_MAX_ROUNDS) {
        snprintf(why, why_len,
                 "rank %d's address is unusable (size %u, name %u bytes, %u streams, %d "
                 "native rounds)",
                 owner, bsize, name_len, nmbox, (int) nat_rounds);
        return -EINVAL;
    }
    for (int c = 0; c < CH; ++c) {
        entry[c] = UINT32_MAX;
    }
    for (uint32_t k = 0; k < nmbox; ++k) {
        int32_t src = b->mbox[k].src, chan = b->mbox[k].chan;
        if (src < 0 || src >= size || src == owner || chan < 0 || chan >= CH) {
            snprintf(why, why_len, "rank %d's address lists a stream from rank %d channel %d",
                     owner, (int) src, (int) chan);
            return -EINVAL;
        }
        if (src == me) {
            if (UINT32_MAX != entry[chan]) {
                snprintf(why, why_len, "rank %d's address lists rank %d channel %d twice",
                         owner, me, (int) chan);
                return -EINVAL;
            }
            entry[chan] = k;
        }
    }
    for (int c = 0; c < CH; ++c) {
        if (UINT32_MAX == entry[c]) {
            snprintf(why, why_len, "rank %d does not count rank %d among its neighbours", owner,
                     me);
            return -EINVAL;
        }
    }
    return 0;
}

size_t ofl_ofi_blob_bytes(int size)
{
    return blob_bytes(size);
}

int ofl_ofi_connect(ofl_ofi_t *o, const void *blobs, char *why, size_t why_len)
{
    int size = o->base.size, me = o->base.rank;
    size_t stride = blob_bytes(size);
    const blob_t *self = (const blob_t *) ((const char *) blobs + (size_t) me * stride);
    if (1 != fi_av_insert(o->av, self->name, 1, &o->addr_self, 0, NULL)) {
        snprintf(why, why_len, "fi_av_insert of this rank's own address failed");
        return -EINVAL;
    }
    for (int i = 0; i < o->npeers; ++i) {
        int r = o->peers[i];
        const blob_t *blob = (const blob_t *) ((const char *) blobs + (size_t) r * stride);
        uint32_t entry[CH];
        int rc = ofl_ofi_blob_check(blob, r, me, size, entry, why, why_len);
        if (0 != rc) {
            return rc;
        }
        int n = fi_av_insert(o->av, blob->name, 1, &o->addr[i], 0, NULL);
        if (1 != n) {
            snprintf(why, why_len, "fi_av_insert of rank %d: %d", r, n);
            return -EINVAL;
        }
        /* r's region for each stream (me -> r, chan), and my credit words there. */
        for (int c = 0; c < CH; ++c) {
            size_t s = (size_t) i * CH + (size_t) c;
            const blob_mbox_t *e = &blob->mbox[entry[c]];
            o->r_mbox_base[s] = e->base;
            o->r_mbox_key[s] = e->key;
            o->r_credit_at[s] = blob->credit_base + sizeof(uint64_t) * entry[c];
        }
        o->r_credit_key[i] = blob->credit_key;
    }
    ofl_ofi_native_connect(o, blobs, stride);
    o->connected = 1;
    return 0;
}

void ofl_ofi_close(ofl_ofi_t *o)
{
    if (NULL == o) {
        return;
    }
    if (NULL != o->ep) {
        fi_close(&o->ep->fid);
    }
    ofl_ofi_native_close(o);
    size_t streams = (size_t) o->npeers * CH;
    for (size_t s = 0; s < streams && NULL != o->mr_mbox; ++s) {
        if (NULL != o->mr_mbox[s]) {
            fi_close(&o->mr_mbox[s]->fid);
        }
    }
    for (size_t s = 0; s < streams && NULL != o->cntr; ++s) {
        if (NULL != o->cntr[s]) {
            fi_close(&o->cntr[s]->fid);
        }
    }
    if (NULL != o->mr_credit) {
        fi_close(&o->mr_credit->fid);
    }
    if (NULL != o->mr_staging) {
        fi_close(&o->mr_staging->fid);
    }
    if (NULL != o->cq) {
        fi_close(&o->cq->fid);
    }
    if (NULL != o->av) {
        fi_close(&o->av->fid);
    }
    if (NULL != o->domain) {
        fi_close(&o->domain->fid);
    }
    if (NULL != o->fabric) {
        fi_close(&o->fabric->fid);
    }
    if (NULL != o->info) {
        lf.freeinfo(o->info);
    }
    free(o->cntr);
    free(o->mr_mbox);
    free(o->mbox);
    free(o->staging);
    free((void *) o->credit);
    free(o->addr);
    free(o->r_mbox_base);
    free(o->r_mbox_key);
    free(o->r_credit_at);
    free(o->peers);
    free(o->r_credit_key);
    free(o->data_seen);
    free(o);
}
