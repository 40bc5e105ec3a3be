/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — what the node-aware level needs from a network backend: one
 * endpoint per node leader, joining the leaders of a communicator.
 *
 * Set-up is three steps, so that the caller exchanges addresses its own way (an
 * allgather): open, then address() gives this leader's blob, then connect()
 * with every leader's blob. Once connected the backend is a NIC of nic.h that
 * the engine drives with the leaders' descriptor programs; a backend whose
 * hardware can run a whole small collective by itself (native triggered
 * operations) offers that too. Every entry point takes the handle first.
 */
#ifndef OFL_NET_H
#define OFL_NET_H

#include <stddef.h>
#include <stdint.h>

#include "alu/alu.h"
#include "nic/nic.h"

typedef struct ofl_net ofl_net_t;

/* This leader, and what its programs need: `peers` (`npeers` of them, NULL:
 * every leader) are the union of its programs' peers, so that streams exist for
 * those only (each of them must list this leader too). `provider` names a
 * backend-specific provider (NULL or "": the backend picks), `iface` a fabric
 * (subnet) to pick among the provider's (NULL: any). */
typedef struct {
    int rank;
    int size;
    const int *peers;
    int npeers;
    int slots;
    size_t slot_bytes;
    const char *provider;
    const char *iface;
} ofl_net_args_t;

typedef struct {
    const char *name;
    /* Bytes of one leader's address blob for `size` leaders. */
    size_t (*blob_bytes)(int size);
    /* 0, or -1 with a message in why; net->impl is set on success only. */
    int (*open)(ofl_net_t *net, const ofl_net_args_t *args, char *why, size_t why_len);
    void (*address)(ofl_net_t *net, void *blob);
    /* blobs: every leader's, blob_bytes apart. 0, or -1 with a message. */
    int (*connect)(ofl_net_t *net, const void *blobs, char *why, size_t why_len);
    void (*close)(ofl_net_t *net);
    /* The NIC (nic.h) the engine runs the leaders' programs on. */
    ofl_nic_t *(*nic)(ofl_net_t *net);
    /* Diagnostics: the provider in use, receiving streams, and the writes and
     * bytes sent so far. */
    const char *(*provider)(ofl_net_t *net);
    size_t (*streams)(ofl_net_t *net);
    void (*stats)(ofl_net_t *net, uint64_t *writes, uint64_t *bytes);
    /* Native collectives (all NULL when the backend has none): native says
     * whether this connection can run them at all; native_ok whether it can run
     * this one (same answer on every leader); post starts an allreduce (send is
     * copied) or a barrier, one call at a time: 0 or -errno; test looks once: 1
     * done with the result in recv (NULL: not wanted), 0 not yet, -errno failed;
     * posted counts triggered operations posted so far. */
    int (*native)(ofl_net_t *net);
    int (*native_ok)(ofl_net_t *net, ofl_op_t op, ofl_type_t type, size_t count);
    int (*native_post)(ofl_net_t *net, const void *send, size_t count, ofl_op_t op,
                       ofl_type_t type);
    int (*native_post_barrier)(ofl_net_t *net);
    int (*native_test)(ofl_net_t *net, void *recv);
    uint64_t (*native_posted)(ofl_net_t *net);
} ofl_net_ops_t;

/* A handle: the backend's table and its state (NULL until open succeeds). */
struct ofl_net {
    const ofl_net_ops_t *ops;
    void *impl;
};

/* The backend called `name` (NULL or "": the default), or NULL. */
const ofl_net_ops_t *ofl_net_backend(const char *name);

/* Open `net` on backend `ops`; 0, or -1 with a message in why. */
static inline int ofl_net_open(ofl_net_t *net, const ofl_net_ops_t *ops,
                               const ofl_net_args_t *args, char *why, size_t why_len)
{
    net->ops = ops;
    net->impl = NULL;
    return ops->open(net, args, why, why_len);
}

static inline int ofl_net_is_open(const ofl_net_t *net)
{
    return NULL != net->impl;
}

/* Close if open; the handle can be opened again. */
static inline void ofl_net_close(ofl_net_t *net)
{
    if (NULL != net->impl) {
        net->ops->close(net);
        net->impl = NULL;
    }
}

/* Whether this connection runs native collectives at all. */
static inline int ofl_net_native(ofl_net_t *net)
{
    return NULL != net->ops->native && net->ops->native(net);
}

#endif
