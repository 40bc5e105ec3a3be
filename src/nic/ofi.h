/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — a NIC backend over libfabric: the same CP counters and
 * mailboxes as the software NIC, between processes on different nodes.
 *
 * One reliable-datagram endpoint per rank of a communicator. Memory, all in
 * this process:
 *   mailboxes  [src][chan][slot] of slot_bytes, for neighbours src only:
 *              they RMA-write items here.
 *              Each stream (src, chan) is its own registered region with its
 *              own completion counter (FI_REMOTE_WRITE): the DATA counter of
 *              the stream is that counter, counted by the NIC as the writes
 *              land (in order: the provider must order write after write);
 *   credits    [feeder][chan] 64-bit words: the CREDIT counters, which the
 *              feeders RMA-write (inject) with their new value;
 *   staging    [dst][chan][slot]: the outbox; a DATA bump RMA-writes the
 *              descriptor's bytes from here to the peer's mailbox slot.
 * Triggering is the engine's (software) for these programs. Where the
 * provider offers triggered atomics (FI_TRIGGER, FI_ATOMIC: sockets here, cxi
 * on Slingshot) and the communicator's size is a power of two, small
 * allreduces and barriers can instead be posted whole as native triggered
 * operations (ofl_ofi_native_*, ofi_native.c): the NIC combines and forwards,
 * the host posts and later finds the result.
 *
 * Set-up is three steps, so that the caller exchanges addresses its own way
 * (an allgather): open, then address() gives this rank's blob (endpoint name,
 * where its regions are, their keys), then connect() with every rank's blob.
 */
#ifndef OFL_OFI_H
#define OFL_OFI_H

#include <stddef.h>
#include <stdint.h>

#include "alu/alu.h"
#include "nic/nic.h"

typedef struct ofl_ofi ofl_ofi_t;

/* Bytes of one rank's address blob on a communicator of `size`. */
size_t ofl_ofi_blob_bytes(int size);

/* Open a NIC for `rank` of `size` that exchanges with the ranks in `peers`
 * (`npeers` of them; NULL: every rank): the union of its programs' peers.
 * Streams, counters, regions and addresses exist for those neighbours only
 * (and for the native partners, added here when native collectives may run),
 * so what a rank holds grows with its tree, not with `size`; every neighbour
 * must list this rank too. `provider` names the libfabric provider (NULL or
 * "": the first, in libfabric's order, that offers triggered atomics, else the
 * first with what the engine needs; never a node-local one); `iface` (NULL:
 * any) a fabric name (subnet, e.g.
 * "198.51.100.0/24") to pick among the provider's. On failure returns NULL and
 * puts a message in why. */
ofl_ofi_t *ofl_ofi_open(int rank, int size, const int *peers, int npeers, int slots,
                        size_t slot_bytes, const char *provider, const char *iface, char *why,
                        size_t why_len);

/* The provider in use (libfabric's name for it). */
const char *ofl_ofi_provider(const ofl_ofi_t *ofi);

/* Receiving streams (neighbours x channels): each a region and a counter. */
size_t ofl_ofi_streams(const ofl_ofi_t *ofi);

/* This rank's blob (ofl_ofi_blob_bytes(size) bytes). */
void ofl_ofi_address(ofl_ofi_t *ofi, void *blob);

/* Every rank's blob, in rank order, each ofl_ofi_blob_bytes(size). 0 or -errno. */
int ofl_ofi_connect(ofl_ofi_t *ofi, const void *blobs, char *why, size_t why_len);

/* The engine's view. */
ofl_nic_t *ofl_ofi_nic(ofl_ofi_t *ofi);

/* What went over the network: RMA writes and payload bytes sent. */
void ofl_ofi_stats(const ofl_ofi_t *ofi, uint64_t *writes, uint64_t *bytes);

void ofl_ofi_close(ofl_ofi_t *ofi);

/* ---- native triggered collectives (ofi_native.c) ----------------------------
 *
 * Recursive doubling, every step a triggered atomic: in round j (0..L-1,
 * L = log2 size) each rank adds its round-j accumulator into partner
 * (rank ^ 2^j)'s round-(j+1) accumulator and into its own, both when its
 * round-j counter says the accumulator is complete and that partner has
 * reset the accumulator it adds into (a "ready" write sent at the partner's
 * post). Each accumulator is combined from exactly two operands, so results
 * are the same on every rank and every run, floats included (a + b == b + a
 * bit for bit); their association is recursive doubling's, not the software
 * programs' rank order. The host posts everything at the call and waits for
 * the last counter; nothing is allocated per call. */

#define OFL_OFI_NATIVE_MAX_BYTES 4096

/* 1 when native collectives can run on this NIC (provider, power-of-two size). */
int ofl_ofi_native(const ofl_ofi_t *ofi);

/* 1 when `count` elements of (op, type) can run natively: the provider's
 * atomics take them, and the bytes fit. Same answer on every rank of the same
 * provider. */
int ofl_ofi_native_ok(ofl_ofi_t *ofi, ofl_op_t op, ofl_type_t type, size_t count);

/* Post an allreduce of `count` elements (send is copied: reusable at once) as
 * triggered operations: 0, -EINVAL (not native, or a call still pending), -EIO
 * (an operation could not be posted). One call at a time. */
int ofl_ofi_native_post(ofl_ofi_t *ofi, const void *send, size_t count, ofl_op_t op,
                        ofl_type_t type);

/* A barrier: the allreduce of one 64-bit zero. */
int ofl_ofi_native_post_barrier(ofl_ofi_t *ofi);

/* Look at the posted call once (never blocks): 1 when its result is in recv
 * (NULL: not wanted) and this rank's operations completed, 0 not yet, -EIO an
 * operation failed, -EINVAL nothing posted. Whoever waits decides how (the
 * engine's ofl_wait_loop, a test's loop). */
int ofl_ofi_native_test(ofl_ofi_t *ofi, void *recv);

/* Triggered operations posted so far. */
uint64_t ofl_ofi_native_posted(const ofl_ofi_t *ofi);

#endif
