/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/* The software NIC (src/nic/softnic.c) without MPI. How its segment is made and
 * found: an anonymous segment that other processes reopen through /proc and
 * that never has a name, the named one whose last attacher removes the name, and
 * a rank marking itself failed. Its API: counters, puts and gets, by-reference
 * items (put_ref publishes where bytes lie, get reads them) and the budget that
 * sizes the slots. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine_util.h"
#include "nic/softnic.h"
#include "unit.h"

/* Entries of /dev/shm whose name starts with `prefix`. */
static int shm_count(const char *prefix)
{
    DIR *d = opendir("/dev/shm");
    if (NULL == d) {
        return -1;
    }
    int n = 0;
    for (struct dirent *e; NULL != (e = readdir(d));) {
        n += 0 == strncmp(e->d_name, prefix, strlen(prefix));
    }
    closedir(d);
    return n;
}

/* Does this process map a segment whose /proc/self/maps entry contains `what`? */
static int mapped_as(const char *what)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (NULL == f) {
        return 0;
    }
    char line[512];
    int found = 0;
    while (!found && NULL != fgets(line, sizeof(line), f)) {
        found = NULL != strstr(line, what);
    }
    fclose(f);
    return found;
}

/* Fork a child (as another user when drop_to_uid is not 0) that attaches as
 * rank 1 through our descriptor and poisons the segment naming itself. Returns
 * 'y' attached, 'r' refused (EACCES/EPERM), 'n' another failure. */
static char child_attach_anon(int pid, int fd, int size, uint32_t drop_to_uid)
{
    int ready[2];
    if (0 != pipe(ready)) {
        return '?';
    }
    fflush(NULL);
    pid_t child = fork();
    if (0 == child) {
        close(ready[0]);
        if (0 != drop_to_uid && 0 != setuid(drop_to_uid)) {
            _exit(3);
        }
        ofl_softnic_t b;
        int rc = ofl_softnic_attach_anon(&b, pid, fd, size, 1, 2, 100);
        char c = 0 == rc ? 'y' : (-EACCES == rc || -EPERM == rc) ? 'r' : 'n';
        if (0 == rc) {
            /* Prove it is the same memory: the poison word the parent reads. */
            ofl_nic_poison_self(&b.base);
            ofl_softnic_detach(&b);
        }
        if (1 != write(ready[1], &c, 1)) {
            _exit(3);
        }
        _exit(0);
    }
    close(ready[1]);
    char c = '?';
    if (child < 0 || 1 != read(ready[0], &c, 1)) {
        c = '?';
    }
    close(ready[0]);
    waitpid(child, NULL, 0);
    return c;
}

static void test_anon(void)
{
    ofl_softnic_t a;
    int fd = -1;
    int rc = ofl_softnic_create_anon(&a, &fd, 2, 0, 2, 100);
    CHECK(0 == rc && fd >= 0, "anonymous create: rc %d fd %d", rc, fd);
    if (0 != rc) {
        return;
    }
    /* What the kernel says the mapping is: a memfd, no file of /dev/shm. */
    CHECK(mapped_as("/memfd:coll_offload"), "not mapped as a memfd");
    CHECK(!mapped_as("/dev/shm/"), "mapped from /dev/shm");
    CHECK(-1 == a.base.ops->poisoned(&a.base), "fresh segment poisoned");
    CHECK('y' == child_attach_anon((int) getpid(), fd, 2, 0), "child could not attach");
    /* The child poisoned the segment naming itself (rank 1): shared memory. */
    CHECK(1 == a.base.ops->poisoned(&a.base), "child's poison not seen: %d",
          a.base.ops->poisoned(&a.base));
    /* Geometry must match, as for named segments. */
    ofl_softnic_t b;
    CHECK(-EINVAL == ofl_softnic_attach_anon(&b, (int) getpid(), fd, 3, 1, 2, 100),
          "attach with another size");
    CHECK(-ENOENT == ofl_softnic_attach_anon(&b, (int) getpid(), 1000000, 2, 1, 2, 100),
          "attach to a descriptor that does not exist");
    if (0 == geteuid()) {
        /* Another user may not reopen our descriptors: the caller's cue to fall
         * back to a named segment. */
        CHECK('r' == child_attach_anon((int) getpid(), fd, 2, 65534),
              "another user's attach was not refused");
    }
    close(fd);
    ofl_softnic_detach(&a);
}

static void test_named_last_unlinks(void)
{
    char name[64];
    snprintf(name, sizeof(name), "/coll_offload.unit.%d", (int) getpid());
    ofl_softnic_t m[3];
    CHECK(0 == ofl_softnic_create(&m[0], name, 3, 0, 2, 100), "create");
    CHECK(1 == shm_count(name + 1), "named segment missing");
    CHECK(0 == ofl_softnic_attach_unlink(&m[1], name, 3, 1, 2, 100), "first attach");
    CHECK(1 == shm_count(name + 1), "name gone before the last attach");
    CHECK(0 == ofl_softnic_attach_unlink(&m[2], name, 3, 2, 2, 100), "last attach");
    CHECK(0 == shm_count(name + 1), "the last attach left the name");
    CHECK(-ENOENT == ofl_softnic_unlink(name), "creator's unlink after the last attach");
    for (int r = 0; r < 3; ++r) {
        ofl_softnic_detach(&m[r]);
    }
    ofl_softnic_unlink(name);
    /* A failed attach (other geometry) does not count as one. */
    ofl_softnic_t a, b;
    CHECK(0 == ofl_softnic_create(&a, name, 2, 0, 2, 100), "create again");
    CHECK(-EINVAL == ofl_softnic_attach_unlink(&b, name, 2, 1, 1, 100), "attach other slots");
    CHECK(1 == shm_count(name + 1), "a failed attach removed the name");
    CHECK(0 == ofl_softnic_attach_unlink(&b, name, 2, 1, 2, 100), "attach");
    CHECK(0 == shm_count(name + 1), "name left after the only attach");
    ofl_softnic_detach(&a);
    ofl_softnic_detach(&b);
    ofl_softnic_unlink(name);   /* whatever the checks said, leave nothing */
}

/* ---- softnic API --------------------------------------------------------------- */

static void test_softnic_api(void)
{
    char name[64];
    shm_name(name, sizeof(name));
    ofl_softnic_t a, b;
    CHECK(-ENOENT == ofl_softnic_attach(&b, name, 2, 1, 1, 64), "attach before create");
    CHECK(-EINVAL == ofl_softnic_create(&a, name, 0, 0, 1, 64), "size 0");
    CHECK(-EINVAL == ofl_softnic_create(&a, name, 2, 2, 1, 64), "rank == size");
    CHECK(-EINVAL == ofl_softnic_create(&a, name, 2, 0, 0, 64), "slots 0");
    CHECK(0 == ofl_softnic_create(&a, name, 2, 0, 2, 100), "create");
    CHECK(128 == a.base.slot_bytes && 2 == a.base.slots && 2 == a.base.size
              && 0 == a.base.rank, "geometry %llu", (unsigned long long) a.base.slot_bytes);
    CHECK(-EEXIST == ofl_softnic_create(&b, name, 2, 1, 2, 100), "second create");
    CHECK(-EINVAL == ofl_softnic_attach(&b, name, 2, 1, 1, 100), "attach other slots");
    CHECK(-EINVAL == ofl_softnic_attach(&b, name, 3, 1, 2, 100), "attach other size");
    CHECK(0 == ofl_softnic_attach(&b, name, 2, 1, 2, 100), "attach");
    CHECK(0 == ofl_softnic_unlink(name), "unlink");
    CHECK(-ENOENT == ofl_softnic_unlink(name), "second unlink");
    /* Counters start at zero and a bump at one mapping is seen through the other,
     * on its own stream (peer, channel) only. */
    ofl_nic_t *na = &a.base, *nb = &b.base;
    int fresh = 0;
    for (int c = 0; c < NCH; ++c) {
        fresh += 0 == nb->ops->counter(nb, OFL_CNT_DATA, 0, c)
                 && 0 == nb->ops->counter(nb, OFL_CNT_CREDIT, 0, c)
                 && 0 == na->ops->counter(na, OFL_CNT_DATA, 1, c)
                 && 0 == na->ops->counter(na, OFL_CNT_CREDIT, 1, c);
    }
    CHECK(NCH == fresh, "fresh counters");
    na->ops->bump(na, OFL_CNT_DATA, 1, 0, 0, 0);
    na->ops->bump(na, OFL_CNT_DATA, 1, 0, 1, 0);
    CHECK(2 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 0)
              && 0 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 1)
              && 0 == nb->ops->counter(nb, OFL_CNT_CREDIT, 0, 0)
              && 0 == na->ops->counter(na, OFL_CNT_DATA, 1, 0)
              && 0 == na->ops->counter(na, OFL_CNT_DATA, 1, 1), "bump lands at the peer only");
    na->ops->bump(na, OFL_CNT_DATA, 1, 1, 0, 0);
    CHECK(1 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 1)
              && 2 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 0), "channels not independent");
    /* Mailboxes: my outbox to b is b's inbox from me; slots wrap with the item;
     * the two channels of a pair never share a slot. */
    uint8_t *o = na->ops->outbox(na, 1, 0, 5);
    o[0] = 42;
    CHECK(o == (uint8_t *) na->ops->outbox(na, 1, 0, 7), "slot of item 5 != item 7");
    CHECK(42 == ((uint8_t *) nb->ops->inbox(nb, 0, 0, 5))[0], "inbox does not see outbox");
    CHECK(na->ops->outbox(na, 1, 0, 4) != na->ops->outbox(na, 1, 0, 5), "two slots alias");
    CHECK((uint8_t *) na->ops->outbox(na, 1, 1, 5) - a.mem
                  == (uint8_t *) nb->ops->inbox(nb, 0, 1, 7) - b.mem
              && na->ops->outbox(na, 1, 1, 5) != na->ops->outbox(na, 1, 0, 5)
              && na->ops->outbox(na, 1, 1, 4) != na->ops->outbox(na, 1, 0, 5),
          "channel 1 slots");
    /* The DATA count sits in front of each slot's payload: payloads written to the
     * last byte, on every stream and in every slot, leave every count alone, and
     * each payload keeps its own bytes. */
    for (int c = 0; c < NCH; ++c) {
        for (int s = 0; s < 2; ++s) {
            memset(na->ops->outbox(na, 1, c, (uint64_t) s), 0xf0 + 2 * c + s, na->slot_bytes);
            memset(nb->ops->outbox(nb, 0, c, (uint64_t) s), 0xe0 + 2 * c + s, nb->slot_bytes);
        }
    }
    int kept = 0;
    for (int c = 0; c < NCH; ++c) {
        kept += 0 == na->ops->counter(na, OFL_CNT_DATA, 1, c)
                && 0 == na->ops->counter(na, OFL_CNT_CREDIT, 1, c)
                && 0 == nb->ops->counter(nb, OFL_CNT_CREDIT, 0, c);
        for (int s = 0; s < 2; ++s) {
            uint8_t *ib = nb->ops->inbox(nb, 0, c, (uint64_t) s);
            uint8_t *ia = na->ops->inbox(na, 1, c, (uint64_t) s);
            kept += 0 == ((uintptr_t) ib & 15) && 0 == ((uintptr_t) ia & 15)
                    && 0xf0 + 2 * c + s == ib[0] && 0xf0 + 2 * c + s == ib[nb->slot_bytes - 1]
                    && 0xe0 + 2 * c + s == ia[0] && 0xe0 + 2 * c + s == ia[na->slot_bytes - 1];
        }
    }
    CHECK(3 * NCH == kept && 2 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 0)
              && 1 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 1),
          "payload clobbered a count or another payload (%d)", kept);
    /* reached() is the count test, exact at the count, and follows slot reuse. */
    CHECK(nb->ops->reached(nb, OFL_CNT_DATA, 0, 0, 0)
              && nb->ops->reached(nb, OFL_CNT_DATA, 0, 0, 1)
              && nb->ops->reached(nb, OFL_CNT_DATA, 0, 0, 2)
              && !nb->ops->reached(nb, OFL_CNT_DATA, 0, 0, 3)
              && nb->ops->reached(nb, OFL_CNT_DATA, 0, 1, 1)
              && !nb->ops->reached(nb, OFL_CNT_DATA, 0, 1, 2)
              && !na->ops->reached(na, OFL_CNT_DATA, 1, 0, 1), "reached(DATA) off its count");
    na->ops->bump(na, OFL_CNT_DATA, 1, 0, 2, 0);   /* item 2 reuses the slot of item 0 */
    CHECK(3 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 0)
              && nb->ops->reached(nb, OFL_CNT_DATA, 0, 0, 3)
              && !nb->ops->reached(nb, OFL_CNT_DATA, 0, 0, 4)
              && 1 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 1)
              && 0xf0 == ((uint8_t *) nb->ops->inbox(nb, 0, 0, 2))[5], "slot reuse");
    /* CREDIT: its own line per channel; a cached value must neither hide a later
     * bump nor answer for the other channel. */
    nb->ops->bump(nb, OFL_CNT_CREDIT, 0, 0, 0, 0);
    CHECK(1 == na->ops->counter(na, OFL_CNT_CREDIT, 1, 0)
              && na->ops->reached(na, OFL_CNT_CREDIT, 1, 0, 1)
              && !na->ops->reached(na, OFL_CNT_CREDIT, 1, 0, 2)
              && !na->ops->reached(na, OFL_CNT_CREDIT, 1, 1, 1)
              && 0 == na->ops->counter(na, OFL_CNT_CREDIT, 1, 1), "reached(CREDIT) off its count");
    /* (a credit counts only items put: 3 on channel 0, 1 on channel 1) */
    nb->ops->bump(nb, OFL_CNT_CREDIT, 0, 0, 2, 0);
    nb->ops->bump(nb, OFL_CNT_CREDIT, 0, 1, 0, 0);
    CHECK(3 == na->ops->counter(na, OFL_CNT_CREDIT, 1, 0)
              && 1 == na->ops->reached(na, OFL_CNT_CREDIT, 1, 0, 3)
              && 0 == na->ops->reached(na, OFL_CNT_CREDIT, 1, 0, 4)
              && 1 == na->ops->reached(na, OFL_CNT_CREDIT, 1, 0, 2)
              && 1 == na->ops->reached(na, OFL_CNT_CREDIT, 1, 1, 1)
              && 0 == na->ops->reached(na, OFL_CNT_CREDIT, 1, 1, 2), "cached CREDIT went stale");
    CHECK(3 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 0)
              && 1 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 1)
              && 0 == nb->ops->counter(nb, OFL_CNT_CREDIT, 0, 0)
              && 0 == nb->ops->counter(nb, OFL_CNT_CREDIT, 0, 1)
              && 0 == na->ops->counter(na, OFL_CNT_DATA, 1, 0),
          "a CREDIT bump moved another count");
    CHECK(1 == na->ops->peer_alive(na, 1) && -1 == na->ops->poisoned(na), "healthy");
    ofl_softnic_detach(&a);
    ofl_softnic_detach(&b);

    /* The layout softnic.h documents, at 3 ranks and 3 slots (no index is
     * symmetric): CREDIT counters [owner][feeder][chan], one line each, after the
     * header; mailboxes [dst][src][chan], each stream whole pages of its own holding
     * its [slot]s, each a 16-byte stamp (the DATA count) and the payload, lines
     * apart; the segment ends after the last. */
    ofl_softnic_t m[3];
    shm_name(name, sizeof(name));
    int rc = ofl_softnic_create(&m[0], name, 3, 0, 3, 200);
    rc |= ofl_softnic_attach(&m[1], name, 3, 1, 3, 200);
    rc |= ofl_softnic_attach(&m[2], name, 3, 2, 3, 200);
    CHECK(0 == rc, "3-rank softnic");
    CHECK(0 == ofl_softnic_unlink(name), "unlink");
    if (0 != rc) {
        return;
    }
    uint64_t stride = (16 + m[0].base.slot_bytes + 63) / 64 * 64;
    uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);
    uint64_t stream = (3 * stride + page - 1) / page * page;
    CHECK(256 == m[0].base.slot_bytes && stride == m[0].slot_stride
              && 0 == m[0].off_mbox % page
              && m[0].len == m[0].off_mbox + 3 * 3 * NCH * stream
              && m[0].len == ofl_softnic_bytes(3, 3, 200)
              && m[0].off_mbox >= m[0].off_counters + 3 * 3 * NCH * 64,
          "geometry: stride %llu len %zu", (unsigned long long) m[0].slot_stride, m[0].len);
    int placed = 0, tried = 0;
    for (int dst = 0; dst < 3; ++dst) {
        for (int src = 0; src < 3; ++src) {
            for (int c = 0; c < NCH && src != dst; ++c) {
                for (uint64_t item = 0; item < 4; ++item) {
                    uint64_t at = m[0].off_mbox
                                  + ((uint64_t) (dst * 3 + src) * NCH + (uint64_t) c) * stream
                                  + item % 3 * stride + 16;
                    uint8_t *in = m[dst].base.ops->inbox(&m[dst].base, src, c, item);
                    uint8_t *out = m[src].base.ops->outbox(&m[src].base, dst, c, item);
                    tried++;
                    placed += in == m[dst].mem + at && out == m[src].mem + at;
                }
                /* A CREDIT bump by the feeder dst lands in owner src's line. */
                ofl_nic_t *fd = &m[dst].base;
                fd->ops->bump(fd, OFL_CNT_CREDIT, src, c, (uint64_t) (10 * dst + src + c), 0);
                uint64_t v;
                memcpy(&v, m[src].mem + m[src].off_counters
                               + ((uint64_t) (src * 3 + dst) * NCH + (uint64_t) c) * 64,
                       sizeof(v));
                tried++;
                placed += v == (uint64_t) (10 * dst + src + c + 1);
                /* A DATA bump by src lands in the stamp of dst's slot. */
                ofl_nic_t *fs = &m[src].base;
                fs->ops->bump(fs, OFL_CNT_DATA, dst, c, 4, 0);
                memcpy(&v, (uint8_t *) m[dst].base.ops->inbox(&m[dst].base, src, c, 4) - 16,
                       sizeof(v));
                tried++;
                placed += 5 == v && 5 == m[dst].base.ops->counter(&m[dst].base, OFL_CNT_DATA,
                                                                   src, c);
            }
        }
    }
    CHECK(placed == tried && 3 * 2 * NCH * 6 == tried, "layout: %d of %d in place", placed,
          tried);
    for (int r = 0; r < 3; ++r) {
        ofl_softnic_detach(&m[r]);
    }
}

/* By-reference items on the softnic: put_ref publishes where bytes lie, get reads
 * them (all or from an offset) and refuses to read past what was published; a
 * reference to unmapped memory (a bogus address, a page made inaccessible) fails
 * the read with an error, not the process, and leaves the destination alone;
 * put_ref moves no counter and touches only its own stream's slot. probe_get
 * reads a peer's word: equal, different, unreadable. */
/* The budget: ofl_softnic_fit gives the largest slot whose share fits, the share
 * bounds what the segment can touch, and filling every slot of the streams a rank
 * receives on (mincore) stays within it. */
static void test_softnic_budget(void)
{
    static const int sizes[] = { 1, 2, 3, 4, 5, 8, 16, 33, 65, 128 };
    static const size_t budgets[] = { 16384, 65536, 262144, 1u << 20, 4u << 20 };
    static const size_t maxes[] = { 4096, 131072 };
    int fitted = 0, refused = 0;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        int n = sizes[i];
        int streams[] = { 0, 1, n > 1 ? 2 * (n - 1) : 1, 2 * n };
        for (int slots = 1; slots <= 8; slots *= 2) {
            for (size_t k = 0; k < sizeof(streams) / sizeof(streams[0]); ++k) {
                for (size_t b = 0; b < sizeof(budgets) / sizeof(budgets[0]); ++b) {
                    for (size_t x = 0; x < sizeof(maxes) / sizeof(maxes[0]); ++x) {
                        size_t seg = ofl_softnic_fit(n, slots, streams[k], budgets[b], maxes[x]);
                        if (0 == seg) {
                            refused++;
                            CHECK(ofl_softnic_share(n, slots, streams[k], 64) > budgets[b],
                                  "n=%d slots=%d streams=%d budget=%zu: refused, but the "
                                  "smallest slot fits", n, slots, streams[k], budgets[b]);
                            continue;
                        }
                        fitted++;
                        CHECK(0 == seg % 64 && seg <= maxes[x]
                                  && ofl_softnic_share(n, slots, streams[k], seg) <= budgets[b],
                              "n=%d slots=%d streams=%d budget=%zu max=%zu: slot %zu, share "
                              "%zu", n, slots, streams[k], budgets[b], maxes[x], seg,
                              ofl_softnic_share(n, slots, streams[k], seg));
                        CHECK(seg == maxes[x] || 0 == streams[k]
                                  || ofl_softnic_share(n, slots, streams[k], seg + 64)
                                         > budgets[b],
                              "n=%d slots=%d streams=%d budget=%zu: slot %zu is not the "
                              "largest that fits", n, slots, streams[k], budgets[b], seg);
                    }
                }
            }
        }
    }
    CHECK(fitted > 100 && refused > 10, "%d fitted, %d refused", fitted, refused);

    /* 4 ranks receiving from every peer on both channels, 256 KiB per rank: fill
     * every slot of every stream entirely and count the segment's resident pages. */
    enum { N = 4, SLOTS = 4 };
    const int nstreams = 2 * (N - 1);
    const size_t budget = 262144;
    size_t seg = ofl_softnic_fit(N, SLOTS, nstreams, budget, 1u << 20);
    ofl_softnic_t m[N];
    char name[64];
    shm_name(name, sizeof(name));
    int rc = ofl_softnic_create(&m[0], name, N, 0, SLOTS, seg);
    for (int r = 1; r < N; ++r) {
        rc |= ofl_softnic_attach(&m[r], name, N, r, SLOTS, seg);
    }
    ofl_softnic_unlink(name);
    CHECK(0 == rc && seg > 0, "4-rank softnic with %zu-byte slots", seg);
    if (0 != rc || 0 == seg) {
        return;
    }
    for (int dst = 0; dst < N; ++dst) {
        for (int src = 0; src < N; ++src) {
            for (int c = 0; c < NCH && src != dst; ++c) {
                for (uint64_t item = 0; item < SLOTS; ++item) {
                    ofl_nic_t *fs = &m[src].base;
                    memset(fs->ops->outbox(fs, dst, c, item), 0x5a, seg);
                    fs->ops->bump(fs, OFL_CNT_DATA, dst, c, item, seg);
                }
            }
        }
    }
    size_t page = (size_t) sysconf(_SC_PAGESIZE), pages = m[0].len / page, resident = 0;
    unsigned char *vec = malloc(pages);
    CHECK(NULL != vec && 0 == mincore(m[0].mem, m[0].len, vec), "mincore");
    for (size_t p = 0; NULL != vec && p < pages; ++p) {
        resident += (vec[p] & 1) ? page : 0;
    }
    free(vec);
    CHECK(resident <= N * ofl_softnic_share(N, SLOTS, nstreams, seg) && resident <= N * budget
              && resident > N * budget / 2,
          "every slot filled: %zu bytes resident, budget %zu per rank", resident, budget);
    for (int r = 0; r < N; ++r) {
        ofl_softnic_detach(&m[r]);
    }
}

static void test_softnic_byref(void)
{
    char name[64];
    shm_name(name, sizeof(name));
    ofl_softnic_t a, b;
    int rc = ofl_softnic_create(&a, name, 2, 0, 2, 64);
    rc |= ofl_softnic_attach(&b, name, 2, 1, 2, 64);
    CHECK(0 == rc, "byref softnic");
    CHECK(0 == ofl_softnic_unlink(name), "unlink");
    if (0 != rc) {
        return;
    }
    ofl_nic_t *na = &a.base, *nb = &b.base;
    CHECK(NULL != na->ops->get && NULL != na->ops->put_ref, "softnic without get/put_ref");
    static uint8_t src[5000];
    for (size_t i = 0; i < sizeof(src); ++i) {
        src[i] = pattern(7, 99, i);
    }
    uint8_t *other = nb->ops->outbox(nb, 0, 1, 0);   /* b -> a, same channel and slot */
    memset(other, 0x77, 64);
    na->ops->put_ref(na, 1, 1, 0, src + 100, 4000);
    na->ops->put_ref(na, 1, 0, 1, src, 10);
    CHECK(0 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 1)
              && 0 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 0)
              && 0 == na->ops->counter(na, OFL_CNT_CREDIT, 1, 1) && 0x77 == other[0]
              && 0x77 == other[63], "put_ref moved a counter or wrote another slot");
    na->ops->bump(na, OFL_CNT_DATA, 1, 1, 0, 0);
    static uint8_t dst[5000];
    memset(dst, SENTINEL, sizeof(dst));
    CHECK(0 == nb->ops->get(nb, 0, 1, 0, 0, dst, 4000) && 0 == memcmp(dst, src + 100, 4000)
              && SENTINEL == dst[4000], "get of a whole reference");
    memset(dst, SENTINEL, sizeof(dst));
    CHECK(0 == nb->ops->get(nb, 0, 1, 0, 1234, dst, 2766)
              && 0 == memcmp(dst, src + 1334, 2766) && SENTINEL == dst[2766],
          "get from an offset to the end");
    CHECK(0 == nb->ops->get(nb, 0, 1, 0, 4000, dst, 0), "get of nothing at the end");
    memset(dst, SENTINEL, sizeof(dst));
    CHECK(-EPROTO == nb->ops->get(nb, 0, 1, 0, 0, dst, 4001)
              && -EPROTO == nb->ops->get(nb, 0, 1, 0, 3999, dst, 2)
              && -EPROTO == nb->ops->get(nb, 0, 1, 0, 4001, dst, 0)
              && -EPROTO == nb->ops->get(nb, 0, 1, 0, UINT64_MAX, dst, 2)
              && all_sentinel(dst, sizeof(dst)), "get past the published bytes");
    CHECK(0 == nb->ops->get(nb, 0, 0, 1, 0, dst, 10) && 0 == memcmp(dst, src, 10),
          "the other channel's reference");
    /* The next item in the same slot (2 slots: item 2) replaces the reference. */
    na->ops->put_ref(na, 1, 1, 2, src + 7, 16);
    CHECK(0 == nb->ops->get(nb, 0, 1, 2, 0, dst, 16) && 0 == memcmp(dst, src + 7, 16),
          "slot reuse");
    /* Unreadable memory: a bogus address, a guard page behind readable bytes. */
    long pg = sysconf(_SC_PAGESIZE);
    uint8_t *map = mmap(NULL, (size_t) (2 * pg), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(MAP_FAILED != map, "mmap");
    if (MAP_FAILED != map) {
        memset(map, 0x42, (size_t) (2 * pg));
        CHECK(0 == mprotect(map + pg, (size_t) pg, PROT_NONE), "mprotect");
        memset(dst, SENTINEL, sizeof(dst));
        na->ops->put_ref(na, 1, 1, 3, (void *) 16, 64);
        int e1 = nb->ops->get(nb, 0, 1, 3, 0, dst, 64);
        int clean = all_sentinel(dst, sizeof(dst));
        na->ops->put_ref(na, 1, 1, 4, map + pg - 100, 300);
        int e2 = nb->ops->get(nb, 0, 1, 4, 0, dst, 300);
        int e3 = nb->ops->get(nb, 0, 1, 4, 100, dst, 1);
        int ok = nb->ops->get(nb, 0, 1, 4, 0, dst + 1000, 100);
        CHECK(e1 < 0 && e2 < 0 && e3 < 0 && clean, "unreadable memory read: %d %d %d", e1, e2,
              e3);
        CHECK(0 == ok && 0x42 == dst[1000] && 0x42 == dst[1099] && SENTINEL == dst[1100],
              "the readable part of a reference");
        /* probe_get: this process's word, a wrong value, an unreadable address. */
        uint64_t word = 0x0123456789abcdefull;
        CHECK(0 == ofl_softnic_probe_get(&a, 1, &word, word)
                  && 0 == ofl_softnic_probe_get(&b, 0, &word, word)
                  && 0 == ofl_softnic_probe_get(&a, 0, &word, word), "probe_get of a real word");
        int w1 = ofl_softnic_probe_get(&a, 1, &word, word + 1);
        int w2 = ofl_softnic_probe_get(&a, 1, (void *) 16, 0);
        int w3 = ofl_softnic_probe_get(&b, 0, map + pg, 0x4242424242424242ull);
        /* A word half readable: a short read, which sets no errno of its own. */
        errno = 0;
        int w4 = ofl_softnic_probe_get(&b, 0, map + pg - 4, 0x4242424242424242ull);
        CHECK(w1 < 0 && w2 < 0 && w3 < 0 && w4 < 0, "probe_get accepted a wrong value or "
              "address: %d %d %d %d", w1, w2, w3, w4);
        CHECK(0 == ofl_softnic_probe_get(&b, 0, map + pg - 8, 0x4242424242424242ull),
              "probe_get of the last readable word");
        munmap(map, (size_t) (2 * pg));
    }
    ofl_softnic_detach(&a);
    ofl_softnic_detach(&b);
}

int main(void)
{
    unit_timeout("test_softnic", 60);
    test_anon();
    test_named_last_unlinks();
    test_softnic_api();
    test_softnic_byref();
    test_softnic_budget();
    check_no_leftover_shm();
    return unit_report("test_softnic");
}
