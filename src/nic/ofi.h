/*
 * coll/offload — a NIC backend over libfabric: the same CP counters and
 * mailboxes as the software NIC, between processes on different nodes.
 *
 * One reliable-datagram endpoint per rank of a communicator. Memory, all in
 * this process:
 *   mailboxes  [src][chan][slot] of slot_bytes: peers RMA-write items here.
 *              Each stream (src, chan) is its own registered region with its
 *              own completion counter (FI_REMOTE_WRITE): the DATA counter of
 *              the stream is that counter, counted by the NIC as the writes
 *              land (in order: the provider must order write after write);
 *   credits    [feeder][chan] 64-bit words: the CREDIT counters, which the
 *              feeders RMA-write (inject) with their new value;
 *   staging    [dst][chan][slot]: the outbox; a DATA bump RMA-writes the
 *              descriptor's bytes from here to the peer's mailbox slot.
 * Triggering is the engine's (software); a provider with FI_TRIGGER could
 * take the same program as triggered operations (not done yet).
 *
 * Set-up is three steps, so that the caller exchanges addresses its own way
 * (an allgather): open, then address() gives this rank's blob (endpoint name,
 * where its regions are, their keys), then connect() with every rank's blob.
 */
#ifndef OFL_OFI_H
#define OFL_OFI_H

#include <stddef.h>
#include <stdint.h>

#include "nic/nic.h"

typedef struct ofl_ofi ofl_ofi_t;

/* Bytes of one rank's address blob on a communicator of `size`. */
size_t ofl_ofi_blob_bytes(int size);

/* Open a NIC for `rank` of `size`. `provider` (NULL: "sockets") names the
 * libfabric provider; `iface` (NULL: any) a fabric name (subnet, e.g.
 * "198.51.100.0/24") to pick among the provider's. On failure returns NULL and
 * puts a message in why. */
ofl_ofi_t *ofl_ofi_open(int rank, int size, int slots, size_t slot_bytes, const char *provider,
                        const char *iface, char *why, size_t why_len);

/* This rank's blob (ofl_ofi_blob_bytes(size) bytes). */
void ofl_ofi_address(ofl_ofi_t *ofi, void *blob);

/* Every rank's blob, in rank order, each ofl_ofi_blob_bytes(size). 0 or -errno. */
int ofl_ofi_connect(ofl_ofi_t *ofi, const void *blobs, char *why, size_t why_len);

/* The engine's view. */
ofl_nic_t *ofl_ofi_nic(ofl_ofi_t *ofi);

/* What went over the network: RMA writes and payload bytes sent. */
void ofl_ofi_stats(const ofl_ofi_t *ofi, uint64_t *writes, uint64_t *bytes);

void ofl_ofi_close(ofl_ofi_t *ofi);

#endif
