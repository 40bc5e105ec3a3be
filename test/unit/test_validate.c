/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Unit tests of the checks on values peers write (nic.h, "Validation"), with
 * hand-made corrupt inputs, deterministic, no MPI:
 *   stamps     a DATA stamp beyond the slots this rank's credits allow, or
 *              naming an item of another slot, is -EPROTO; a later item of
 *              the same slot inside the window is arrival; an older one is not;
 *   credits    a CREDIT value beyond the items put, or below one seen, is
 *              -EPROTO (also through the engine: the call fails, recv keeps
 *              its bytes past the message);
 *   poison     a mark naming no rank reads as corrupt; the engine's and the
 *              board's health checks then fail the call with -EPROTO;
 *   get        a reference shorter than the read, an offset past it, or one
 *              that wraps the address space is -EPROTO and writes nothing; a
 *              longer one fills exactly the bytes asked for;
 *   board      a line carrying a later call is -EPROTO (call fails), an older
 *              one is "not yet";
 *   pids       sealed pids do not follow a rewritten header; a missing pid
 *              makes sealing fail;
 *   blobs      ofl_ofi_blob_check refuses every out-of-range field of a
 *              neighbour's libfabric address and takes a correct one;
 *   ofi        the libfabric NIC's counters and credit words (stand-in
 *              provider objects, test/common/fake_ofi.h) are checked like the
 *              software NIC's.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "engine/board.h"
#include "engine/engine.h"
#include "fake_ofi.h"
#include "nic/ofi_int.h"
#include "nic/softnic.h"
#include "sched/sched.h"
#include "unit.h"

#define SLOTS 4
#define STAMP 16   /* softnic.h: each mailbox slot starts with its DATA stamp */

static ofl_softnic_t nic[2];

static void open2(void)
{
    char name[64];
    snprintf(name, sizeof(name), "/ofl-validate-%d", (int) getpid());
    int rc = ofl_softnic_create(&nic[0], name, 2, 0, SLOTS, 256);
    if (0 == rc) {
        rc = ofl_softnic_attach(&nic[1], name, 2, 1, SLOTS, 256);
    }
    ofl_softnic_unlink(name);
    if (0 != rc) {
        fprintf(stderr, "cannot make a software NIC: %s\n", strerror(-rc));
        exit(1);
    }
}

static void close2(void)
{
    ofl_softnic_detach(&nic[0]);
    ofl_softnic_detach(&nic[1]);
}

static volatile uint64_t *stamp_of(int receiver, int src, int chan, uint64_t item)
{
    ofl_nic_t *b = &nic[receiver].base;
    return (volatile uint64_t *) ((uint8_t *) b->ops->inbox(b, src, chan, item) - STAMP);
}

static volatile uint64_t *credit_of(int owner, int feeder, int chan)
{
    uint64_t line = ((uint64_t) owner * 2 + (uint64_t) feeder) * OFL_CHANNELS + (uint64_t) chan;
    return (volatile uint64_t *) (nic[0].mem + nic[0].off_counters + line * 64);
}

static void set_poison(int32_t v)
{
    atomic_store(&((ofl_softnic_hdr_t *) nic[0].mem)->poison, v);
}

static void test_stamps(void)
{
    open2();
    ofl_nic_t *a = &nic[0].base, *b = &nic[1].base;
    /* rank 1 puts items 0..3 to rank 0 (channel 0), honestly */
    for (uint64_t i = 0; i < SLOTS; ++i) {
        b->ops->bump(b, OFL_CNT_DATA, 0, 0, i, 0);
    }
    CHECK(1 == a->ops->reached(a, OFL_CNT_DATA, 1, 0, 4), "item 3 arrived");
    CHECK(0 == a->ops->reached(a, OFL_CNT_DATA, 1, 0, 5), "item 4 not yet");
    /* nothing consumed: a stamp of item 4 in slot 0 is beyond what rank 1 may put */
    *stamp_of(0, 1, 0, 0) = 5;
    CHECK(-EPROTO == a->ops->reached(a, OFL_CNT_DATA, 1, 0, 1), "stamp past the credits");
    /* rank 0 consumed items 0 and 1: item 4 may sit in slot 0 now, item 5 in slot 1 */
    a->ops->bump(a, OFL_CNT_CREDIT, 1, 0, 1, 0);
    CHECK(1 == a->ops->reached(a, OFL_CNT_DATA, 1, 0, 1), "a later item of the slot");
    *stamp_of(0, 1, 0, 1) = 6;
    CHECK(1 == a->ops->reached(a, OFL_CNT_DATA, 1, 0, 6), "item 5 arrived");
    *stamp_of(0, 1, 0, 1) = 4;   /* item 3, in the window, but item 3 lives in slot 3 */
    CHECK(-EPROTO == a->ops->reached(a, OFL_CNT_DATA, 1, 0, 2),
          "a stamp that names an item of another slot");
    *stamp_of(0, 1, 0, 1) = UINT64_MAX;
    CHECK(-EPROTO == a->ops->reached(a, OFL_CNT_DATA, 1, 0, 2), "a stamp of all ones");
    *stamp_of(0, 1, 0, 2) = 3;
    CHECK(0 == a->ops->reached(a, OFL_CNT_DATA, 1, 0, 7), "an older item: not yet");
    close2();
}

static void test_credits(void)
{
    open2();
    ofl_nic_t *a = &nic[0].base, *b = &nic[1].base;
    a->ops->bump(a, OFL_CNT_DATA, 1, 0, 0, 0);
    a->ops->bump(a, OFL_CNT_DATA, 1, 0, 1, 0);   /* rank 0 put 2 items to rank 1 */
    b->ops->bump(b, OFL_CNT_CREDIT, 0, 0, 0, 0);
    CHECK(1 == a->ops->reached(a, OFL_CNT_CREDIT, 1, 0, 1)
              && 0 == a->ops->reached(a, OFL_CNT_CREDIT, 1, 0, 2), "honest credit");
    *credit_of(0, 1, 0) = 3;
    CHECK(-EPROTO == a->ops->reached(a, OFL_CNT_CREDIT, 1, 0, 2), "credit past the items put");
    *credit_of(0, 1, 0) = 2;
    CHECK(1 == a->ops->reached(a, OFL_CNT_CREDIT, 1, 0, 2), "credit of every item put");
    a->ops->bump(a, OFL_CNT_DATA, 1, 0, 2, 0);
    *credit_of(0, 1, 0) = 1;
    CHECK(-EPROTO == a->ops->reached(a, OFL_CNT_CREDIT, 1, 0, 3), "credit going back");
    close2();

    /* Through the engine: a 2-rank exchange allreduce whose credit rank 1
     * rewrites runs until it needs that credit, then fails. */
    open2();
    ofl_sched_params_t par = { .reduce_kind = OFL_TREE_KNOMIAL, .reduce_radix = 2,
                               .bcast_kind = OFL_TREE_KNOMIAL, .bcast_radix = 2,
                               .slots = SLOTS, .shape = OFL_SCHED_EXCHANGE };
    ofl_program_t prog;
    ofl_edges_t edges;
    CHECK(0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 0, 2, &par, &prog), "compile");
    ofl_edges_init(&edges, 2);
    uint8_t send[128], recv[144];   /* 8 segments: the fifth put needs a credit */
    memset(send, 1, sizeof(send));
    memset(recv, 0xee, sizeof(recv));
    ofl_call_t call = { .send = send, .recv = recv, .elem = 1, .count = 128, .seg_bytes = 16 };
    ofl_inst_t inst;
    ofl_engine_post(&inst, &prog, &nic[0].base, &edges, &call);
    *credit_of(0, 1, 0) = 1000;
    int rc = 0;
    for (int i = 0; i < 100 && 0 == rc; ++i) {
        rc = ofl_engine_progress(&inst);
    }
    CHECK(-1 == rc && -EPROTO == inst.error, "engine on a corrupt credit: %d/%d", rc,
          inst.error);
    int kept = 1;
    for (size_t i = 128; i < sizeof(recv); ++i) {
        kept &= 0xee == recv[i];
    }
    CHECK(kept, "recv written past the message");
    CHECK(-1 == ofl_engine_progress(&inst), "a failed call stays failed");
    ofl_edges_fini(&edges);
    ofl_program_free(&prog);
    close2();
}

static void test_poison(void)
{
    open2();
    ofl_nic_t *a = &nic[0].base;
    int32_t values[] = { 0, 1, 2, 3, -1, INT32_MIN, INT32_MAX };
    int expect[] = { -1, 0, 1, OFL_NIC_CORRUPT, OFL_NIC_CORRUPT, OFL_NIC_CORRUPT,
                     OFL_NIC_CORRUPT };
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); ++i) {
        set_poison(values[i]);
        CHECK(expect[i] == a->ops->poisoned(a), "poison %d read as %d", (int) values[i],
              a->ops->poisoned(a));
    }
    ofl_sched_params_t par = { .reduce_kind = OFL_TREE_KNOMIAL, .reduce_radix = 2,
                               .bcast_kind = OFL_TREE_KNOMIAL, .bcast_radix = 2,
                               .slots = SLOTS, .shape = OFL_SCHED_EXCHANGE };
    ofl_program_t prog;
    ofl_edges_t edges;
    ofl_sched_compile(OFL_COLL_BARRIER, 0, 0, 2, &par, &prog);
    ofl_edges_init(&edges, 2);
    ofl_call_t call = { .elem = 1 };
    ofl_inst_t inst;
    ofl_engine_post(&inst, &prog, a, &edges, &call);
    ofl_engine_progress(&inst);
    int peer = 42;
    set_poison(3);
    CHECK(OFL_WAIT_FAILED == ofl_engine_check(&inst, 0.0, 0.0, &peer) && -EPROTO == inst.error,
          "engine check of a corrupt poison mark");
    set_poison(2);
    CHECK(OFL_WAIT_PEER_DEAD == ofl_engine_check(&inst, 0.0, 0.0, &peer) && 1 == peer,
          "engine check of rank 1 dead");
    set_poison(-5);
    ofl_board_call_t c;
    ofl_board_prepare(&c, a, 1, NULL, NULL, 0, 1, NULL);
    CHECK(0 == ofl_board_progress(&c), "board call waits");
    CHECK(OFL_WAIT_FAILED == ofl_board_check(&c, 0.0, 0.0, &peer) && -EPROTO == c.error,
          "board check of a corrupt poison mark");
    set_poison(0);
    ofl_edges_fini(&edges);
    ofl_program_free(&prog);
    close2();
}

typedef struct {
    uint64_t addr;
    uint64_t len;
} ref_t;   /* softnic.c's by-reference item */

static void test_get(void)
{
    open2();
    ofl_nic_t *b = &nic[1].base;
    CHECK(0 == ofl_softnic_seal(&nic[1]), "seal");
    static uint8_t src[256], dst[300];
    for (int i = 0; i < 256; ++i) {
        src[i] = (uint8_t) i;
    }
    ref_t *ref = b->ops->inbox(b, 0, 1, 0);
    struct {
        uint64_t addr, len, offset, want;
        int rc;
    } cases[] = {
        { (uintptr_t) src, 256, 0, 256, 0 },
        { (uintptr_t) src, 256, 100, 156, 0 },
        { (uintptr_t) src, 256, 0, 10, 0 },          /* longer reference: 10 bytes only */
        { (uintptr_t) src, 100, 0, 101, -EPROTO },   /* shorter than the read */
        { (uintptr_t) src, 100, 101, 0, -EPROTO },   /* offset past it */
        { (uintptr_t) src, 100, UINT64_MAX, 2, -EPROTO },
        { UINT64_MAX - 10, 100, 0, 50, -EPROTO },    /* wraps the address space */
        { (uintptr_t) src, UINT64_MAX, 0, 10, -EPROTO },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        ref->addr = cases[i].addr;
        ref->len = cases[i].len;
        memset(dst, 0xee, sizeof(dst));
        int rc = b->ops->get(b, 0, 1, 0, cases[i].offset, dst, cases[i].want);
        int untouched = 1;
        for (size_t k = 0 == rc ? cases[i].want : 0; k < sizeof(dst); ++k) {
            untouched &= 0xee == dst[k];
        }
        CHECK(rc == cases[i].rc && untouched
                  && (0 != rc || 0 == memcmp(dst, src + cases[i].offset, cases[i].want)),
              "get case %zu: %d", i, rc);
    }
    /* sealed: a rewritten pid is not followed */
    ofl_softnic_hdr_t *h = (ofl_softnic_hdr_t *) nic[0].mem;
    h->pid[0] = 1;
    ref->addr = (uintptr_t) src;
    ref->len = 256;
    CHECK(0 == b->ops->get(b, 0, 1, 0, 0, dst, 8) && 0 == memcmp(dst, src, 8),
          "sealed pid followed the header");
    h->pid[0] = 0;
    CHECK(-EPROTO == ofl_softnic_seal(&nic[0]), "sealed with a missing pid");
    h->pid[0] = (int32_t) getpid();
    close2();
}

static void sum_u8(void *out, const void *x, const void *y, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        ((uint8_t *) out)[i] = (uint8_t) (((const uint8_t *) x)[i] + ((const uint8_t *) y)[i]);
    }
}

static void test_board(void)
{
    open2();
    ofl_nic_t *a = &nic[0].base, *b = &nic[1].base;
    uint8_t send[100], out[100], tmp[OFL_BOARD_MAX_LINES * OFL_BOARD_LINE_BYTES];
    memset(send, 3, sizeof(send));
    const void *data = NULL;
    /* rank 1's lines of call 1's slot carry call 1 + D: it cannot be ahead */
    b->ops->board_post(b, 1 + OFL_BOARD_DEPTH, 0, send, sizeof(send));
    CHECK(-EPROTO == a->ops->board_read(a, 1, 1, 0, sizeof(send), tmp, &data), "line ahead");
    b->ops->board_post(b, 1, 0, send, sizeof(send));
    CHECK(1 == a->ops->board_read(a, 1, 1, 0, sizeof(send), tmp, &data) && data == tmp,
          "line of the call");
    CHECK(0 == a->ops->board_read(a, 1, 5, 0, sizeof(send), tmp, &data), "older line");
    ofl_board_call_t c;
    ofl_board_prepare(&c, a, 5, send, out, sizeof(send), 1, sum_u8);
    b->ops->board_post(b, 5 + OFL_BOARD_DEPTH, 0, send, sizeof(send));
    CHECK(-1 == ofl_board_progress(&c) && -EPROTO == c.error, "board call on a line ahead");
    int peer = 0;
    CHECK(OFL_WAIT_FAILED == ofl_board_check(&c, 0.0, 0.0, &peer), "its check");
    close2();
}

/* ---- the libfabric NIC --------------------------------------------------- */

static int blob_rc(const blob_t *b, int owner, int me, int size, uint32_t *entry)
{
    char why[200];
    return ofl_ofi_blob_check(b, owner, me, size, entry, why, sizeof(why));
}

static void test_blob(void)
{
    blob_t *good = calloc(1, sizeof(blob_t)), *b = malloc(sizeof(blob_t));
    good->size = 8;
    good->name_len = 16;
    good->nat_rounds = 3;
    good->nmbox = 6;
    int32_t srcs[6] = { 0, 0, 5, 5, 7, 7 };   /* owner 3's neighbours: 0, 5, 7 */
    for (int k = 0; k < 6; ++k) {
        good->mbox[k].src = srcs[k];
        good->mbox[k].chan = k & 1;
    }
    uint32_t entry[2] = { 0, 0 };
    CHECK(0 == blob_rc(good, 3, 5, 8, entry) && 2 == entry[0] && 3 == entry[1], "good blob");
    CHECK(-EINVAL == blob_rc(good, 3, 6, 8, entry), "blob without me");
#define BAD(what, change)                                                      \
    do {                                                                       \
        memcpy(b, good, sizeof(*b));                                           \
        change;                                                                \
        CHECK(-EINVAL == blob_rc(b, 3, 5, 8, entry), "blob with %s", what);    \
    } while (0)
    BAD("another size", b->size = 9);
    BAD("no name", b->name_len = 0);
    BAD("a name too long", b->name_len = NAME_MAX_BYTES + 1);
    BAD("too many streams", b->nmbox = OFL_OFI_MAX_PEERS * CH + 1);
    BAD("streams of all ones", b->nmbox = UINT32_MAX);
    BAD("too many native rounds", b->nat_rounds = OFL_OFI_NAT_MAX_ROUNDS + 1);
    BAD("native rounds below -1", b->nat_rounds = -2);
    BAD("a source out of range", b->mbox[4].src = 8);
    BAD("a negative source", b->mbox[0].src = -1);
    BAD("a stream from its owner", b->mbox[0].src = 3);
    BAD("a channel out of range", b->mbox[1].chan = 2);
    BAD("my stream twice", b->mbox[4].src = 5);
#undef BAD
    free(good);
    free(b);
}

static void test_ofi_counters(void)
{
    static fake_ofi_t f;
    fake_ofi_init(&f);
    ofl_nic_t *n = &f.nic.base;
    f.cntr[0].value = FAKE_OFI_SLOTS;
    CHECK(1 == n->ops->reached(n, OFL_CNT_DATA, 1, 0, FAKE_OFI_SLOTS), "DATA: a full window");
    f.cntr[1].value = FAKE_OFI_SLOTS + 1;
    CHECK(-EPROTO == n->ops->reached(n, OFL_CNT_DATA, 1, 1, 1), "DATA past the credits");
    n->ops->bump(n, OFL_CNT_CREDIT, 1, 0, 1, 0);   /* consumed 2 */
    f.cntr[0].value = FAKE_OFI_SLOTS + 2;
    CHECK(1 == n->ops->reached(n, OFL_CNT_DATA, 1, 0, FAKE_OFI_SLOTS + 2), "DATA after credits");
    f.cntr[0].value = 3;
    CHECK(-EPROTO == n->ops->reached(n, OFL_CNT_DATA, 1, 0, FAKE_OFI_SLOTS + 3), "DATA going back");
    n->ops->bump(n, OFL_CNT_DATA, 1, 0, 0, 8);
    f.credit[0] = 1;
    CHECK(1 == n->ops->reached(n, OFL_CNT_CREDIT, 1, 0, 1), "credit of the item put");
    f.credit[0] = 2;
    CHECK(-EPROTO == n->ops->reached(n, OFL_CNT_CREDIT, 1, 0, 2), "credit past the items put");
    n->ops->bump(n, OFL_CNT_DATA, 1, 0, 1, 8);
    n->ops->bump(n, OFL_CNT_DATA, 1, 0, 2, 8);
    f.credit[0] = 0;
    CHECK(-EPROTO == n->ops->reached(n, OFL_CNT_CREDIT, 1, 0, 2), "credit going back");
    f.credit[0] = 3;
    CHECK(1 == n->ops->reached(n, OFL_CNT_CREDIT, 1, 0, 3), "credit of every item put");
}

int main(void)
{
    unit_timeout("test_validate", 60);
    test_stamps();
    test_credits();
    test_poison();
    test_get();
    test_board();
    test_blob();
    test_ofi_counters();
    return unit_report("validate");
}
