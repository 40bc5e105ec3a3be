/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Fuzz what a rank reads from the software NIC's header: at attach (magic and
 * geometry), afterwards (the poison mark, the pids), and at sealing. Rank 0
 * creates a segment once; every input rewrites its header words, then rank 1
 * attaches, looks at the poison mark through the health check of a waiting
 * board call, checks its peers' liveness, and seals.
 *
 * Oracles: no out-of-bounds access or undefined behaviour; attach succeeds
 * exactly when magic and geometry are this rank's own; the poison mark reads
 * as the rank it names or as corrupt (the check then fails with -EPROTO),
 * never as anything else; sealing takes exactly the pids that are positive,
 * and once sealed a rewritten header changes no pid the NIC uses.
 */
#include "engine/board.h"
#include "fuzz.h"

#define N 2
#define SLOTS 2
#define SEG 64

static ofl_softnic_t creator;
static char name[64];
static ofl_softnic_hdr_t orig;
static int32_t orig_pid[N];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void) argc;
    (void) argv;
    fz_stats_init();
    snprintf(name, sizeof(name), "/ofl-fuzz-attach-%d", (int) getpid());
    int rc = ofl_softnic_create(&creator, name, N, 0, SLOTS, SEG);
    if (0 != rc) {
        fprintf(stderr, "cannot create %s: %s\n", name, strerror(-rc));
        exit(1);
    }
    memcpy(&orig, creator.mem, sizeof(orig));
    orig_pid[0] = (int32_t) getpid();
    orig_pid[1] = (int32_t) getpid();
    return 0;
}

static void cleanup(void) __attribute__((destructor));
static void cleanup(void)
{
    if ('\0' != name[0]) {
        ofl_softnic_unlink(name);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in_t in = { data, size };
    ofl_softnic_hdr_t *h = (ofl_softnic_hdr_t *) creator.mem;
    /* the header as the input says, each word near the true one or anything */
    h->magic = fz_near(&in, orig.magic);
    h->size = (uint32_t) fz_near(&in, orig.size);
    h->slots = (uint32_t) fz_near(&in, orig.slots);
    h->slot_bytes = fz_near(&in, orig.slot_bytes);
    h->total = fz_near(&in, orig.total);
    int32_t poison = (int32_t) fz_near(&in, 0);
    atomic_store(&h->poison, poison);
    for (int r = 0; r < N; ++r) {
        h->pid[r] = (int32_t) fz_near(&in, (uint64_t) orig_pid[r]);
    }
    int32_t pid[N] = { h->pid[0], h->pid[1] };
    int valid = h->magic == orig.magic && h->size == orig.size && h->slots == orig.slots
                && h->slot_bytes == orig.slot_bytes && h->total == orig.total;

    ofl_softnic_t nic;
    int rc = ofl_softnic_attach(&nic, name, N, 1, SLOTS, SEG);
    FZ_ASSERT(0 == rc || -EINVAL == rc, "attach: %d", rc);
    FZ_ASSERT(valid == (0 == rc), "attach %s a %s header", rc ? "refused" : "took",
              valid ? "valid" : "corrupt");
    if (0 == rc) {
        fz_count(0, "attached");
        pid[1] = (int32_t) getpid();   /* attach wrote its own */
        ofl_nic_t *b = &nic.base;
        int dead = b->ops->poisoned(b);
        if (poison >= 1 && poison <= N) {
            FZ_ASSERT(dead == poison - 1, "poison %d read as %d", (int) poison, dead);
        } else if (0 == poison) {
            FZ_ASSERT(-1 == dead, "healthy read as %d", dead);
        } else {
            FZ_ASSERT(OFL_NIC_CORRUPT == dead, "poison %d read as %d", (int) poison, dead);
            fz_count(1, "corrupt poison caught");
        }
        /* The health check of a board call that waits for rank 0. */
        ofl_board_call_t c;
        ofl_board_prepare(&c, b, 1, NULL, NULL, 0, 1, NULL);
        c.posted = 1;
        int peer = -7;
        ofl_wait_status_t st = ofl_board_check(&c, 0.0, 0.0, &peer);
        if (OFL_NIC_CORRUPT == dead) {
            FZ_ASSERT(OFL_WAIT_FAILED == st && -EPROTO == c.error, "check: %d/%d", (int) st,
                      c.error);
        } else if (dead >= 0) {
            FZ_ASSERT(OFL_WAIT_PEER_DEAD == st && peer == dead, "check: %d/%d", (int) st, peer);
        } else {
            FZ_ASSERT(OFL_WAIT_OK == st || OFL_WAIT_PEER_DEAD == st, "check: %d", (int) st);
        }
        for (int r = 0; r < N; ++r) {
            int alive = b->ops->peer_alive(b, r);
            FZ_ASSERT(0 == alive || 1 == alive, "peer_alive %d", alive);
        }
        int src = ofl_softnic_seal(&nic);
        int all = pid[0] > 0 && pid[1] > 0;
        FZ_ASSERT(all ? 0 == src : -EPROTO == src, "seal of pids %d, %d: %d", (int) pid[0],
                  (int) pid[1], src);
        if (0 == src) {
            fz_count(2, "sealed");
            h->pid[0] = (int32_t) fz_u64(&in);
            FZ_ASSERT(NULL != nic.pid && nic.pid[0] == pid[0] && nic.pid[1] == pid[1],
                      "sealed pids moved");
        }
        ofl_softnic_detach(&nic);
    }
    memcpy(h, &orig, sizeof(orig));
    h->pid[0] = orig_pid[0];
    h->pid[1] = orig_pid[1];
    return 0;
}
