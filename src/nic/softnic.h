/*
 * coll/offload — the software NIC: the NIC emulated over one shared-memory
 * segment per communicator (all ranks on one node).
 *
 * Layout (every offset a multiple of 64 bytes):
 *   header     magic, geometry, the pid of every rank, the poison word
 *   bells      [rank] one cache line each: a futex word and an "armed" flag,
 *              set by the rank's executor while it sleeps waiting for arrivals
 *   counters   [owner][feeder][chan] one cache line each: the CREDIT counter,
 *              written only by the feeder, read only by the owner
 *   board      [rank][call parity][4 lines]: written only by rank, read by all;
 *              56 payload bytes and the writing call's sequence number per line
 *              (the board of nic.h: small allreduces and barriers)
 *   mailboxes  [dst][src][chan][slot]: written only by src, read only by dst; touched
 *              lazily, so edges outside every tree cost no memory. Each slot
 *              starts with a 16-byte stamp: the DATA counter of the edge as of
 *              the item in that slot, so a small item and its CP count arrive in
 *              one cache line (one transfer instead of two)
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
    _Atomic int32_t poison;   /* dead rank + 1, 0 while healthy */
    int32_t pid[];            /* [size] */
} ofl_softnic_hdr_t;

typedef struct {
    ofl_nic_t base;
    uint8_t *mem;
    size_t len;
    uint64_t off_bells;
    uint64_t off_counters;
    uint64_t off_board;
    uint64_t off_mbox;
    uint64_t slot_stride;      /* stamp + payload, cache-line multiple */
    /* Private, [size][chan] each: what this rank knows of every stream, against
     * which the peers' values are checked (nic.h, "Validation"). */
    uint64_t *credit_seen;     /* last CREDIT value read (owner side) */
    uint64_t *data_put;        /* items put to the peer's stream (DATA bumps) */
    uint64_t *credit_given;    /* items of the peer's stream consumed (CREDIT bumps) */
    int32_t *pid;              /* [size] the ranks' pids once sealed, else NULL */
} ofl_softnic_t;

/* Bytes of the segment for `size` ranks. */
size_t ofl_softnic_bytes(int size, int slots, size_t segsize);

/* Rank `rank` creates (exclusively, mode 0600) and initialises the segment.
 * `slots` (mailbox slots per stream) is best a power of two (no division). */
int ofl_softnic_create(ofl_softnic_t *nic, const char *name, int size, int rank, int slots,
                       size_t segsize);

/* Another rank maps the segment created under `name` and checks its geometry. */
int ofl_softnic_attach(ofl_softnic_t *nic, const char *name, int size, int rank, int slots,
                       size_t segsize);

/* Every rank has attached (the caller agreed on it): keep the ranks' pids
 * privately from now on, so that a peer rewriting the header cannot point
 * liveness checks or cross-memory reads at another process. 0, or -EPROTO if a
 * pid is missing or out of range. */
int ofl_softnic_seal(ofl_softnic_t *nic);

/* Can this process read `peer`'s memory (cross-memory attach)? Reads the word
 * at addr in peer's address space and compares it with expect: 0 or -errno. */
int ofl_softnic_probe_get(ofl_softnic_t *nic, int peer, const void *addr, uint64_t expect);

/* This rank's doorbell: a futex word (shared between processes) that peers
 * increment and wake after delivering data while *armed is non-zero. An
 * executor about to sleep stores 1 in *armed, then reads *word, checks for
 * work once more, and futex-waits on word with the value read; it stores 0 in
 * *armed when it wakes. */
void ofl_softnic_bell(ofl_softnic_t *nic, uint32_t **word, uint32_t **armed);

/* Remove the name (mappings stay valid); call once every rank has attached. */
int ofl_softnic_unlink(const char *name);

void ofl_softnic_detach(ofl_softnic_t *nic);

#endif
