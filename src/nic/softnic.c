/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the software NIC (see softnic.h): its data path, the ops
 * table every engine call goes through. The segment's set-up is softnic_seg.c.
 */
#include "nic/softnic_int.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <linux/memfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

typedef struct {
    _Atomic uint32_t word;    /* futex: incremented by every ring */
    _Atomic uint32_t armed;   /* written by the owner only */
} sn_bell_t;

static inline sn_bell_t *bell_at(ofl_softnic_t *nic, int rank)
{
    return (sn_bell_t *) (nic->mem + nic->off_bells + (uint64_t) rank * LINE);
}

static inline _Atomic uint64_t *credit_at(ofl_softnic_t *nic, int owner, int feeder, int chan)
{
    return (_Atomic uint64_t *) (nic->mem + nic->off_counters
                                 + (((uint64_t) owner * (uint64_t) nic->base.size
                                     + (uint64_t) feeder)
                                        * OFL_CHANNELS
                                    + (uint64_t) chan)
                                       * LINE);
}

/* The slot (stamp first) of `item` on the stream (src -> dst, chan). */
static inline uint8_t *slot_at(ofl_softnic_t *nic, int dst, int src, int chan, uint64_t item)
{
    ofl_nic_t *b = &nic->base;
    /* a power of two (what the component configures) needs no division */
    uint64_t n = (uint64_t) b->slots;
    uint64_t slot = (n & (n - 1)) ? item % n : item & (n - 1);
    uint64_t stream = ((uint64_t) dst * (uint64_t) b->size + (uint64_t) src) * OFL_CHANNELS
                      + (uint64_t) chan;
    return nic->mem + nic->off_mbox + stream * nic->stream_stride + slot * nic->slot_stride;
}

static inline uint64_t stamp(ofl_softnic_t *nic, int dst, int src, int chan, uint64_t item)
{
    return atomic_load_explicit((_Atomic uint64_t *) slot_at(nic, dst, src, chan, item),
                                memory_order_acquire);
}

/* A DATA stamp at or past the awaited count: the item in the slot is one the
 * peer may have put (at most `slots` beyond the items this rank consumed) and
 * one that lives in this slot. Anything else is a corrupt stream. */
static int stamp_ok(const ofl_softnic_t *nic, int peer, int chan, uint64_t s, uint64_t threshold)
{
    uint64_t n = (uint64_t) nic->base.slots;
    uint64_t given = nic->credit_given[peer * OFL_CHANNELS + chan];
    uint64_t apart = s - threshold;
    return s <= given + n && 0 == ((n & (n - 1)) ? apart % n : apart & (n - 1));
}

static int sn_reached(ofl_nic_t *b, int cnt, int peer, int chan, uint64_t threshold)
{
    ofl_softnic_t *nic = (ofl_softnic_t *) b;
    if (0 == threshold) {
        return 1;
    }
    if (OFL_CNT_DATA == cnt) {
        /* Item threshold-1 sits in its slot once the slot's stamp says so; the
         * sender cannot have reused the slot for a later item before we consumed
         * this one (credits), so the stamp is exact. */
        uint64_t s = stamp(nic, b->rank, peer, chan, threshold - 1);
        if (OFL_LIKELY(s == threshold)) {
            return 1;
        }
        if (s < threshold) {
            return 0;
        }
        return stamp_ok(nic, peer, chan, s, threshold) ? 1 : -EPROTO;
    }
    uint64_t *seen = &nic->credit_seen[peer * OFL_CHANNELS + chan];
    if (*seen >= threshold) {
        return 1;
    }
    uint64_t v = atomic_load_explicit(credit_at(nic, b->rank, peer, chan), memory_order_acquire);
    /* A credit never goes back and never counts items this rank has not put. */
    if (OFL_UNLIKELY(v < *seen || v > nic->data_put[peer * OFL_CHANNELS + chan])) {
        return -EPROTO;
    }
    *seen = v;
    return v >= threshold;
}

static uint64_t sn_counter(ofl_nic_t *b, int cnt, int peer, int chan)
{
    ofl_softnic_t *nic = (ofl_softnic_t *) b;
    if (OFL_CNT_DATA == cnt) {
        uint64_t max = 0;
        for (int s = 0; s < b->slots; ++s) {
            uint64_t v = stamp(nic, b->rank, peer, chan, (uint64_t) s);
            max = v > max ? v : max;
        }
        return max;
    }
    return atomic_load_explicit(credit_at(nic, b->rank, peer, chan), memory_order_acquire);
}

static void sn_bump(ofl_nic_t *b, int cnt, int peer, int chan, uint64_t item, uint64_t len)
{
    (void) len;   /* the data is in the peer's slot already */
    ofl_softnic_t *nic = (ofl_softnic_t *) b;
    _Atomic uint64_t *c;
    if (OFL_CNT_DATA == cnt) {
        c = (_Atomic uint64_t *) slot_at(nic, peer, b->rank, chan, item);
        nic->data_put[peer * OFL_CHANNELS + chan] = item + 1;
    } else {
        c = credit_at(nic, peer, b->rank, chan);
        nic->credit_given[peer * OFL_CHANNELS + chan] = item + 1;
    }
    /* One writer per word (this rank), items in order: a release store of the
     * new count publishes the descriptor's data with it. */
    atomic_store_explicit(c, item + 1, memory_order_release);
}

static void *sn_inbox(ofl_nic_t *b, int peer, int chan, uint64_t item)
{
    return slot_at((ofl_softnic_t *) b, b->rank, peer, chan, item) + STAMP;
}

static void *sn_outbox(ofl_nic_t *b, int peer, int chan, uint64_t item)
{
    return slot_at((ofl_softnic_t *) b, peer, b->rank, chan, item) + STAMP;
}

/* A by-reference item: where the bytes lie in the sender's address space. */
typedef struct {
    uint64_t addr;
    uint64_t len;
} sn_ref_t;

static void sn_put_ref(ofl_nic_t *b, int peer, int chan, uint64_t item, const void *src,
                       uint64_t len)
{
    sn_ref_t *ref = (sn_ref_t *) (slot_at((ofl_softnic_t *) b, peer, b->rank, chan, item)
                                  + STAMP);
    ref->addr = (uint64_t) (uintptr_t) src;
    ref->len = len;
}

/* Cross-memory attach: the kernel copies straight from the sender's pages (one
 * copy, and the source lines are read clean rather than snooped dirty out of the
 * writer's cache as a mailbox copy would be). */
static int sn_get(ofl_nic_t *b, int peer, int chan, uint64_t item, uint64_t offset, void *dst,
                  uint64_t len)
{
    ofl_softnic_t *nic = (ofl_softnic_t *) b;
    /* The peer may rewrite the reference while we read it: one load of each
     * word, and only those copies are checked and used. The read never writes
     * more than `len` bytes into dst, whatever the reference says. */
    const volatile sn_ref_t *shared
        = (const volatile sn_ref_t *) (slot_at(nic, b->rank, peer, chan, item) + STAMP);
    sn_ref_t ref = { .addr = shared->addr, .len = shared->len };
    pid_t pid = peer_pid(nic, peer);
    if (offset > ref.len || ref.len - offset < len || ref.addr + ref.len < ref.addr) {
        return -EPROTO;
    }
    if (pid <= 0) {
        return -ESRCH;
    }
    uint64_t done = 0;
    while (done < len) {
        struct iovec local = { .iov_base = (char *) dst + done, .iov_len = len - done };
        struct iovec remote = { .iov_base = (void *) (uintptr_t) (ref.addr + offset + done),
                                .iov_len = len - done };
        ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n <= 0) {
            return n < 0 ? -errno : -EIO;
        }
        done += (uint64_t) n;
    }
    return 0;
}

static int sn_peer_alive(ofl_nic_t *b, int peer)
{
    pid_t pid = peer_pid((ofl_softnic_t *) b, peer);
    if (pid <= 0) {
        return 1;
    }
    if (0 == kill(pid, 0) || EPERM == errno) {
        /* A zombie still answers kill(); its /proc state says it is gone. */
        char path[64], buf[256];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        FILE *f = fopen(path, "r");
        if (NULL == f) {
            return 1;
        }
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *paren = strrchr(buf, ')');
        if (paren && (paren[2] == 'Z' || paren[2] == 'X')) {
            return 0;
        }
        return 1;
    }
    return 0;
}

/* Line `line` of rank's board for call `seq`'s slot: the payload, then at byte
 * 56 the sequence number of the call that wrote it. */
static inline uint8_t *board_line(ofl_softnic_t *nic, int rank, uint64_t seq, uint64_t line)
{
    uint64_t slot = (uint64_t) rank * OFL_BOARD_DEPTH + (seq & (OFL_BOARD_DEPTH - 1));
    return nic->mem + nic->off_board + (slot * BOARD_LINES + line) * LINE;
}

/* A line's last word: the call's board number, shifted, and its folded
 * signature (nic.h). */
static inline _Atomic uint64_t *board_seq(uint8_t *line)
{
    return (_Atomic uint64_t *) (line + OFL_BOARD_LINE_BYTES);
}

static inline uint64_t board_lines(uint64_t len)
{
    return len ? (len + OFL_BOARD_LINE_BYTES - 1) / OFL_BOARD_LINE_BYTES : 1;
}

/* Ask for `line` in this core's cache, owned: a later store to it then commits
 * at once instead of holding every store behind it until a peer that read the
 * line gives it up. */
static inline void own_soon(uint8_t *line)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("prefetchw %0" ::"m"(*line));
#else
    __builtin_prefetch(line, 1, 3);
#endif
}

static void sn_board_post(ofl_nic_t *b, uint64_t seq, uint64_t tag, const void *data,
                          uint64_t len)
{
    ofl_softnic_t *nic = (ofl_softnic_t *) b;
    uint64_t word = (seq << BOARD_SEQ_SHIFT) | tag;
    for (uint64_t l = 0, n = board_lines(len); l < n; ++l) {
        uint8_t *line = board_line(nic, b->rank, seq, l);
        uint64_t at = l * OFL_BOARD_LINE_BYTES;
        if (at < len) {
            uint64_t chunk = len - at < OFL_BOARD_LINE_BYTES ? len - at : OFL_BOARD_LINE_BYTES;
            memcpy(line, (const uint8_t *) data + at, chunk);
        }
        atomic_store_explicit(board_seq(line), word, memory_order_release);
    }
    /* The next call's lines were last read D - 1 calls ago: take back as many as
     * this call used now, while the caller goes on, rather than at that call's
     * post. */
    for (uint64_t l = 0, n = board_lines(len); l < n; ++l) {
        own_soon(board_line(nic, b->rank, seq + 1, l));
    }
}

static int sn_board_read(ofl_nic_t *b, int peer, uint64_t seq, uint64_t tag, uint64_t len,
                         void *tmp, const void **data)
{
    ofl_softnic_t *nic = (ofl_softnic_t *) b;
    uint64_t n = board_lines(len);
    uint64_t word = (seq << BOARD_SEQ_SHIFT) | tag;
    /* The peer rewrites this slot's lines only for call seq + OFL_BOARD_DEPTH,
     * which it does not post before this rank, a reader, has finished seq: a
     * line carrying seq holds seq's payload for as long as we read it, and a
     * line carrying a later number is corrupt. Its first line is written first:
     * carrying this number with another signature, it is a different call. */
    uint64_t first = atomic_load_explicit(board_seq(board_line(nic, peer, seq, 0)),
                                          memory_order_acquire);
    if (OFL_LIKELY(first == word)) {
        for (uint64_t l = 1; l < n; ++l) {
            uint64_t v = atomic_load_explicit(board_seq(board_line(nic, peer, seq, l)),
                                              memory_order_acquire);
            if (OFL_UNLIKELY(v != word)) {
                /* the same call writes the same word into each of its lines */
                return (v >> BOARD_SEQ_SHIFT) < seq ? 0 : -EPROTO;
            }
        }
    } else {
        uint64_t at = first >> BOARD_SEQ_SHIFT;
        return at < seq ? 0 : at > seq ? -EPROTO : OFL_EMISMATCH;
    }
    if (1 == n) {
        *data = board_line(nic, peer, seq, 0);
        return 1;
    }
    for (uint64_t l = 0; l < n; ++l) {
        uint64_t at = l * OFL_BOARD_LINE_BYTES;
        uint64_t chunk = len - at < OFL_BOARD_LINE_BYTES ? len - at : OFL_BOARD_LINE_BYTES;
        memcpy((uint8_t *) tmp + at, board_line(nic, peer, seq, l), chunk);
    }
    *data = tmp;
    return 1;
}

static int sn_board_seen(ofl_nic_t *b, int peer, uint64_t seq, uint64_t *at, uint64_t *tag)
{
    ofl_softnic_t *nic = (ofl_softnic_t *) b;
    uint64_t word = atomic_load_explicit(board_seq(board_line(nic, peer, seq, 0)),
                                         memory_order_acquire);
    *at = word >> BOARD_SEQ_SHIFT;
    *tag = word & ((1ull << BOARD_SEQ_SHIFT) - 1);
    return *at < seq ? 0 : *at <= seq + OFL_BOARD_AHEAD ? 1 : -EPROTO;
}

/* The second word of a slot's stamp: the signature word of the call that put
 * the item (written for the first items of a call; see engine.c). */
static void sn_stamp(ofl_nic_t *b, int peer, int chan, uint64_t item, uint64_t word)
{
    ofl_softnic_t *nic = (ofl_softnic_t *) b;
    _Atomic uint64_t *w = (_Atomic uint64_t *) (slot_at(nic, peer, b->rank, chan, item) + 8);
    /* published by the DATA bump's release store that follows */
    atomic_store_explicit(w, word, memory_order_relaxed);
}

static uint64_t sn_stamped(ofl_nic_t *b, int peer, int chan, uint64_t item)
{
    ofl_softnic_t *nic = (ofl_softnic_t *) b;
    return atomic_load_explicit((_Atomic uint64_t *) (slot_at(nic, b->rank, peer, chan, item)
                                                      + 8),
                                memory_order_relaxed);
}

static void sn_record(ofl_nic_t *b, uint64_t callno, uint64_t sig)
{
    ofl_nic_record_put(b->own_records, callno, sig);   /* set at attach */
}

static uint64_t sn_recorded(ofl_nic_t *b, int peer, uint64_t callno, uint64_t *sig)
{
    ofl_nic_record_t *r = ofl_softnic_record_at((ofl_softnic_t *) b, peer, callno);
    uint64_t n = atomic_load_explicit(&r->callno, memory_order_acquire);
    if (n != callno) {
        return n;
    }
    uint64_t s = atomic_load_explicit(&r->sig, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    n = atomic_load_explicit(&r->callno, memory_order_relaxed);
    if (n == callno) {
        *sig = s;
    }
    return n;
}

static void sn_mismatch(ofl_nic_t *b, int a, uint64_t sig_a, int peer, uint64_t sig_b)
{
    softnic_hdr_t *h = (softnic_hdr_t *) ((ofl_softnic_t *) b)->mem;
    uint64_t expect = 0;
    if (!atomic_compare_exchange_strong(&h->mismatch, &expect, UINT64_MAX)) {
        return;   /* the first report stands */
    }
    h->mismatch_sig[0] = sig_a;
    h->mismatch_sig[1] = sig_b;
    atomic_store_explicit(&h->mismatch,
                          ((uint64_t) (uint32_t) (a + 1) << 32) | (uint32_t) (peer + 1),
                          memory_order_release);
}

static int sn_mismatched(ofl_nic_t *b, int *a, uint64_t *sig_a, int *peer, uint64_t *sig_b)
{
    softnic_hdr_t *h = (softnic_hdr_t *) ((ofl_softnic_t *) b)->mem;
    uint64_t v = atomic_load_explicit(&h->mismatch, memory_order_acquire);
    if (0 == v || UINT64_MAX == v) {
        return 0;
    }
    *a = (int) (v >> 32) - 1;
    *peer = (int) (v & 0xffffffffu) - 1;
    if (*a < 0 || *a >= b->size || *peer < 0 || *peer >= b->size) {
        *a = *peer = -1;   /* corrupt: the ranks are only printed, never used */
    }
    *sig_a = h->mismatch_sig[0];
    *sig_b = h->mismatch_sig[1];
    return 1;
}

static void sn_poison(ofl_nic_t *b, int dead)
{
    softnic_hdr_t *h = (softnic_hdr_t *) ((ofl_softnic_t *) b)->mem;
    if (NULL == h) {
        return;   /* not attached (a failed set-up): nobody waits on this segment */
    }
    int32_t expect = 0;
    atomic_compare_exchange_strong(&h->poison, &expect, dead + 1);
}

static int sn_poisoned(ofl_nic_t *b)
{
    softnic_hdr_t *h = (softnic_hdr_t *) ((ofl_softnic_t *) b)->mem;
    int32_t v = atomic_load_explicit(&h->poison, memory_order_relaxed);
    /* dead rank + 1, or 0: any other value names no rank and must index nothing */
    if (OFL_UNLIKELY(v < 0 || v > b->size)) {
        return OFL_NIC_CORRUPT;
    }
    return v - 1;
}

static void sn_ring(ofl_nic_t *b, int peer)
{
    sn_bell_t *bell = bell_at((ofl_softnic_t *) b, peer);
    /* Order our bumps before the look at `armed`; the sleeper orders its store
     * of `armed` before its last look at the counters: one of us sees the other. */
    atomic_thread_fence(memory_order_seq_cst);
    if (0 == atomic_load_explicit(&bell->armed, memory_order_relaxed)) {
        return;
    }
    atomic_fetch_add_explicit(&bell->word, 1, memory_order_release);
    syscall(SYS_futex, &bell->word, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static void sn_bell(ofl_nic_t *b, uint32_t **word, uint32_t **armed)
{
    sn_bell_t *bell = bell_at((ofl_softnic_t *) b, b->rank);
    *word = (uint32_t *) &bell->word;
    *armed = (uint32_t *) &bell->armed;
}

static void sn_close(ofl_nic_t *b)
{
    ofl_softnic_t *nic = (ofl_softnic_t *) b;
    ofl_softnic_detach(nic);
    if (nic->owned) {
        free(nic);
    }
}

const ofl_nic_ops_t ofl_softnic_ops = {
    .reached = sn_reached,
    .counter = sn_counter,
    .bump = sn_bump,
    .inbox = sn_inbox,
    .outbox = sn_outbox,
    .put_ref = sn_put_ref,
    .get = sn_get,
    .peer_alive = sn_peer_alive,
    .poison = sn_poison,
    .poisoned = sn_poisoned,
    .ring = sn_ring,
    .board_post = sn_board_post,
    .board_read = sn_board_read,
    .board_seen = sn_board_seen,
    .stamp = sn_stamp,
    .stamped = sn_stamped,
    .record = sn_record,
    .recorded = sn_recorded,
    .mismatch = sn_mismatch,
    .mismatched = sn_mismatched,
    .bell = sn_bell,
    .close = sn_close,
};
