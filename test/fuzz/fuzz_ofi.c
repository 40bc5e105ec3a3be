/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Fuzz the libfabric NIC's readers, without a network: the address blob a
 * neighbour sends at connect (ofl_ofi_blob_check), and the values peers
 * write into this rank's memory while it runs (the DATA counters the provider
 * counts as the peer's writes land, the CREDIT words the peer writes).
 *
 * The NIC under test is rank 0 of 2 (neighbour: rank 1) built around stand-in
 * provider objects (test/common/fake_ofi.h): counters whose values the input
 * sets, an endpoint whose writes go nowhere, a completion queue that is always
 * empty. The input alternates honest use (puts allowed by the credits, consumption of items
 * the counters say arrived) with rewrites of counters and credit words.
 *
 * Oracles: no out-of-bounds access or undefined behaviour (the blob is read
 * from a buffer of exactly its size); a blob is accepted exactly when every
 * field is in range and it lists rank 0 once per channel, and then the entry
 * indices name those entries; every trigger test's answer is the one nic.h's
 * rules give for the value read (a model kept here from the bumps made).
 */
#include "fake_ofi.h"
#include "fuzz.h"
#include "nic/ofi_int.h"

#define SLOTS FAKE_OFI_SLOTS
#define SLOT_BYTES FAKE_OFI_SLOT_BYTES

/* ---- the blob ------------------------------------------------------------ */

static void fuzz_blob(fz_in_t *in)
{
    blob_t *b = malloc(sizeof(blob_t));
    uint8_t *raw = (uint8_t *) b;
    memset(b, 0, sizeof(*b));
    int size = 2 + fz_u8(in) % 200;
    int owner = fz_u8(in) % size, me = fz_u8(in) % size;
    b->size = (uint32_t) fz_near(in, (uint64_t) size);
    b->name_len = (uint32_t) fz_near(in, 16);
    b->nmbox = (uint32_t) fz_near(in, 4);
    b->nat_rounds = (int32_t) fz_near(in, 1);
    for (uint32_t k = 0; k < OFL_OFI_MAX_PEERS * CH && in->n > 0 && (fz_u8(in) & 7); ++k) {
        b->mbox[k].src = (int32_t) fz_near(in, (uint64_t) me);
        b->mbox[k].chan = (int32_t) fz_near(in, k & 1);
    }
    for (int k = fz_u8(in) % 8; k > 0; --k) {   /* and a few bytes anywhere */
        raw[fz_u64(in) % sizeof(*b)] = fz_u8(in);
    }
    /* what the blob should be judged by, read here independently */
    int valid = b->size == (uint32_t) size && b->name_len >= 1 && b->name_len <= NAME_MAX_BYTES
                && b->nmbox <= OFL_OFI_MAX_PEERS * CH && b->nat_rounds >= -1
                && b->nat_rounds <= OFL_OFI_NAT_MAX_ROUNDS;
    int mine[CH] = { 0, 0 };
    for (uint32_t k = 0; valid && k < b->nmbox; ++k) {
        int32_t src = b->mbox[k].src, chan = b->mbox[k].chan;
        valid = src >= 0 && src < size && src != owner && chan >= 0 && chan < CH;
        if (valid && src == me) {
            mine[chan]++;
        }
    }
    valid = valid && 1 == mine[0] && 1 == mine[1];
    uint32_t entry[CH] = { UINT32_MAX, UINT32_MAX };
    char why[256];
    why[0] = '\0';
    int rc = ofl_ofi_blob_check(b, owner, me, size, entry, why, sizeof(why));
    FZ_ASSERT(0 == rc || -EINVAL == rc, "blob check: %d", rc);
    FZ_ASSERT(valid == (0 == rc), "blob %s, judged %s (%s)", valid ? "valid" : "corrupt",
              rc ? "corrupt" : "valid", why);
    if (0 == rc) {
        for (int c = 0; c < CH; ++c) {
            FZ_ASSERT(entry[c] < b->nmbox && b->mbox[entry[c]].src == me
                          && b->mbox[entry[c]].chan == c, "entry %d: %u", c, entry[c]);
        }
        fz_count(0, "blobs accepted");
    } else {
        FZ_ASSERT('\0' != why[0], "refused without a reason");
        fz_count(1, "blobs refused");
    }
    free(b);
}

/* ---- the running NIC ------------------------------------------------------ */

static fake_ofi_t fake;

static struct {
    uint64_t put[CH], given[CH], data_seen[CH], credit_seen[CH];
} model;

static int model_reached(int cnt, int chan, uint64_t threshold)
{
    if (0 == threshold) {
        return 1;
    }
    if (OFL_CNT_DATA == cnt) {
        if (model.data_seen[chan] >= threshold) {
            return 1;
        }
        uint64_t v = fake.cntr[chan].value;
        if (v < model.data_seen[chan] || v > model.given[chan] + SLOTS) {
            return -EPROTO;
        }
        model.data_seen[chan] = v;
        return v >= threshold;
    }
    if (model.credit_seen[chan] >= threshold) {
        return 1;
    }
    uint64_t v = fake.credit[chan];
    if (v < model.credit_seen[chan] || v > model.put[chan]) {
        return -EPROTO;
    }
    model.credit_seen[chan] = v;
    return v >= threshold;
}

static int reached(int cnt, int chan, uint64_t threshold)
{
    int expect = model_reached(cnt, chan, threshold);
    ofl_nic_t *n = &fake.nic.base;
    int got = n->ops->reached(n, cnt, 1, chan, threshold);
    FZ_ASSERT(got == expect, "%s(1.%d) >= %llu: %d, rules say %d",
              OFL_CNT_DATA == cnt ? "DATA" : "CREDIT", chan, (unsigned long long) threshold,
              got, expect);
    if (got < 0) {
        fz_count(2, "corrupt counters caught");
    }
    return got;
}

static void nic_reset(void)
{
    fake_ofi_init(&fake);
    memset(&model, 0, sizeof(model));
}

static void fuzz_items(fz_in_t *in)
{
    nic_reset();
    ofl_nic_t *n = &fake.nic.base;
    for (int step = 0; step < 300 && in->n > 0; ++step) {
        uint8_t op = fz_u8(in);
        int chan = (op >> 3) & 1;
        switch (op & 7) {
        case 0:     /* put my next item when the credits allow */
            if (1 == reached(OFL_CNT_CREDIT, chan, model.put[chan] + 1 > SLOTS
                                                       ? model.put[chan] + 1 - SLOTS
                                                       : 0)) {
                memset(n->ops->outbox(n, 1, chan, model.put[chan]), op, SLOT_BYTES);
                model.put[chan]++;
                n->ops->bump(n, OFL_CNT_DATA, 1, chan, model.put[chan] - 1,
                             fz_u8(in) % (SLOT_BYTES + 1));
            }
            break;
        case 1:     /* consume the next item when it is there */
            if (1 == reached(OFL_CNT_DATA, chan, model.given[chan] + 1)) {
                volatile uint8_t *slot = n->ops->inbox(n, 1, chan, model.given[chan]);
                (void) slot[SLOT_BYTES - 1];
                model.given[chan]++;
                n->ops->bump(n, OFL_CNT_CREDIT, 1, chan, model.given[chan] - 1, 0);
            }
            break;
        case 2:     /* the peer's item lands (honest, within my credits) */
            if (fake.cntr[chan].value < model.given[chan] + SLOTS) {
                fake.cntr[chan].value++;
            }
            break;
        case 3:     /* the peer hands back a credit for what I put (honest) */
            if (fake.credit[chan] < model.put[chan]) {
                fake.credit[chan]++;
            }
            break;
        case 4:     /* the counter says what the input says */
            fake.cntr[chan].value = fz_near(in, fake.cntr[chan].value);
            break;
        case 5:     /* the credit word says what the input says */
            fake.credit[chan] = fz_near(in, fake.credit[chan]);
            break;
        default:    /* a trigger test of any threshold near the stream's position */
            reached(op & 1 ? OFL_CNT_DATA : OFL_CNT_CREDIT, chan,
                    fz_near(in, op & 1 ? model.given[chan] + 1 : model.put[chan]));
            break;
        }
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void) argc;
    (void) argv;
    fz_stats_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in_t in = { data, size };
    if (fz_u8(&in) & 1) {
        fuzz_blob(&in);
    } else {
        fuzz_items(&in);
    }
    return 0;
}
