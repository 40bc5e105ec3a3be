/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the software NIC: the NIC emulated over one shared-memory
 * segment per communicator (all ranks on one node).
 *
 * Layout (every offset a multiple of 64 bytes):
 *   header     magic, geometry, the pid of every rank, the poison word, (named
 *              segments) how many ranks have attached, and the mismatch report
 *   bells      [rank] one cache line each: a futex word and an "armed" flag,
 *              set by the rank's executor while it sleeps waiting for arrivals
 *   records    [rank][16] call records (call number, signature; nic.h), four
 *              lines per rank, written only by that rank
 *   counters   [owner][feeder][chan] one cache line each: the CREDIT counter,
 *              written only by the feeder, read only by the owner
 *   board      [rank][slot: call number % OFL_BOARD_DEPTH][OFL_BOARD_MAX_LINES lines]:
 *              written only by rank, read by all; 56 payload bytes and the writing
 *              call's sequence number per line (the board of nic.h: small
 *              allreduces, reduces, bcasts and barriers)
 *   mailboxes  [dst][src][chan] one stream each, a whole number of pages holding
 *              its [slot]s: written only by src, read only by dst; touched
 *              lazily, so streams no program uses cost no memory and one that is
 *              used costs at most its pages. Each slot
 *              starts with a 16-byte stamp: the DATA counter of the edge as of
 *              the item in that slot, so a small item and its CP count arrive in
 *              one cache line (one transfer instead of two), then the signature
 *              word of the call that put it (sig.h)
 * Reading a CREDIT counter costs a cache-line transfer, so each rank keeps the
 * last value it saw per peer and reads the shared line only when that value is
 * not enough.
 */
#ifndef OFL_SOFTNIC_H
#define OFL_SOFTNIC_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "nic/nic.h"

/* The segment's header, written by its creator (the pids: each rank its own).
 * Whoever attaches checks magic and geometry against its own; nothing in it
 * is used as an index or a size. */
typedef struct {
    uint64_t magic;
    uint32_t size;
    uint32_t slots;
    uint64_t slot_bytes;
    uint64_t total;
    _Atomic int32_t poison;   /* dead (or failed) rank + 1, 0 while healthy */
    _Atomic uint32_t attached; /* named segments: ranks attached so far, creator aside */
    /* An argument mismatch (nic.h): 0 none, UINT64_MAX being written, else
     * (a + 1) << 32 | (b + 1) with both ranks' signatures below */
    _Atomic uint64_t mismatch;
    uint64_t mismatch_sig[2];
    int32_t pid[];            /* [size] */
} ofl_softnic_hdr_t;

typedef struct {
    ofl_nic_t base;
    uint8_t *mem;
    size_t len;
    uint64_t off_bells;
    uint64_t off_records;
    uint64_t off_counters;
    uint64_t off_board;
    uint64_t off_mbox;
    uint64_t slot_stride;      /* stamp + payload, cache-line multiple */
    uint64_t stream_stride;    /* a stream's slots, rounded up to whole pages */
    /* Private, [size][chan] each: what this rank knows of every stream, against
     * which the peers' values are checked (nic.h, "Validation"). */
    uint64_t *credit_seen;     /* last CREDIT value read (owner side) */
    uint64_t *data_put;        /* items put to the peer's stream (DATA bumps) */
    uint64_t *credit_given;    /* items of the peer's stream consumed (CREDIT bumps) */
    int32_t *pid;              /* [size] the ranks' pids once sealed, else NULL */
    int owned;                 /* from ofl_softnic_new: the close op frees it */
} ofl_softnic_t;

/* Bytes of the segment for `size` ranks (address space: the mailboxes of every
 * ordered pair of ranks, most of which no program touches). */
size_t ofl_softnic_bytes(int size, int slots, size_t segsize);

/* A rank's share of the memory the segment can ever touch when every rank
 * receives on at most `streams` streams: 1/size of header, bells, counters and
 * board, and the pages of those streams. Bounds the segment's resident pages
 * divided by size, whatever the calls. */
size_t ofl_softnic_share(int size, int slots, int streams, size_t segsize);

/* The largest slot payload (segsize of create/attach), at most max_slot, whose
 * share stays within `budget` bytes; 0 when not even one page per stream fits. */
size_t ofl_softnic_fit(int size, int slots, int streams, size_t budget, size_t max_slot);

/* A handle for create/attach that the NIC's close op (nic.h) detaches and
 * frees; NULL without memory. (A caller's own ofl_softnic_t works as well; it
 * then detaches it itself.) */
ofl_softnic_t *ofl_softnic_new(void);

/* Rank `rank` creates an anonymous segment (memfd: it never has a name, so
 * nothing of it outlives the processes that map it, whatever way they end) and
 * initialises it. *fd is the descriptor the others reopen through
 * /proc/<pid>/fd/<fd>; the creator closes it once they all have (the mappings
 * stay). `slots` (mailbox slots per stream) is best a power of two. */
int ofl_softnic_create_anon(ofl_softnic_t *nic, int *fd, int size, int rank, int slots,
                            size_t segsize);

/* Another rank maps the anonymous segment of process `pid`'s descriptor `fd` and
 * checks its geometry. Opening another process's descriptor needs the same
 * ptrace read access as /proc/<pid>/fd itself (same user, dumpable process):
 * -EACCES/-EPERM when refused, -ENOENT without such an entry (no /proc, another
 * pid namespace). */
int ofl_softnic_attach_anon(ofl_softnic_t *nic, int pid, int fd, int size, int rank, int slots,
                            size_t segsize);

/* The same with a name in /dev/shm, for where /proc reopening is refused: rank
 * `rank` creates it (exclusively, mode 0600) and initialises it; the others
 * attach. With ofl_softnic_attach_unlink the last of `size - 1` ranks to attach
 * removes the name at once (the window in which a crash leaves a file closes
 * with the last attach). */
int ofl_softnic_create(ofl_softnic_t *nic, const char *name, int size, int rank, int slots,
                       size_t segsize);
int ofl_softnic_attach(ofl_softnic_t *nic, const char *name, int size, int rank, int slots,
                       size_t segsize);
int ofl_softnic_attach_unlink(ofl_softnic_t *nic, const char *name, int size, int rank,
                              int slots, size_t segsize);

/* Every rank has attached (the caller agreed on it): keep the ranks' pids
 * privately from now on, so that a peer rewriting the header cannot point
 * liveness checks or cross-memory reads at another process. 0, or -EPROTO if a
 * pid is missing or out of range. */
int ofl_softnic_seal(ofl_softnic_t *nic);

/* Can this process read `peer`'s memory (cross-memory attach)? Reads the word
 * at addr in peer's address space and compares it with expect: 0 or -errno. */
int ofl_softnic_probe_get(ofl_softnic_t *nic, int peer, const void *addr, uint64_t expect);

/* Remove the names in /dev/shm that begin with `prefix` followed by a process
 * id and '.', whose process no longer exists: named segments of a creator
 * killed before its last peer attached. Returns how many were removed. (A
 * process of another pid namespace sharing /dev/shm looks dead from here: its
 * segment loses its name early, and its late attachers fail, so that
 * communicator falls back; nothing else is affected.) */
int ofl_softnic_sweep(const char *prefix);

/* Remove the name (mappings stay valid): the creator's error exit, in case the
 * last attach never came; -ENOENT when it did. */
int ofl_softnic_unlink(const char *name);

void ofl_softnic_detach(ofl_softnic_t *nic);

#endif
