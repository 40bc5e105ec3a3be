/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the libfabric backend (ofi.h) behind net.h's table, and the
 * table of network backends.
 */
#include "nic/net.h"
#include "nic/ofi.h"

#include <string.h>

static inline ofl_ofi_t *ofi_of(ofl_net_t *net)
{
    return (ofl_ofi_t *) net->impl;
}

static int net_open(ofl_net_t *net, const ofl_net_args_t *a, char *why, size_t why_len)
{
    net->impl = ofl_ofi_open(a->rank, a->size, a->peers, a->npeers, a->slots, a->slot_bytes,
                             a->provider, a->iface, why, why_len);
    return NULL != net->impl ? 0 : -1;
}

static void net_address(ofl_net_t *net, void *blob)
{
    ofl_ofi_address(ofi_of(net), blob);
}

static int net_connect(ofl_net_t *net, const void *blobs, char *why, size_t why_len)
{
    return 0 == ofl_ofi_connect(ofi_of(net), blobs, why, why_len) ? 0 : -1;
}

static void net_close(ofl_net_t *net)
{
    ofl_ofi_close(ofi_of(net));
}

static ofl_nic_t *net_nic(ofl_net_t *net)
{
    return ofl_ofi_nic(ofi_of(net));
}

static const char *net_provider(ofl_net_t *net)
{
    return ofl_ofi_provider(ofi_of(net));
}

static size_t net_streams(ofl_net_t *net)
{
    return ofl_ofi_streams(ofi_of(net));
}

static void net_stats(ofl_net_t *net, uint64_t *writes, uint64_t *bytes)
{
    ofl_ofi_stats(ofi_of(net), writes, bytes);
}

static int net_native(ofl_net_t *net)
{
    return ofl_ofi_native(ofi_of(net));
}

static int net_native_ok(ofl_net_t *net, ofl_op_t op, ofl_type_t type, size_t count)
{
    return ofl_ofi_native_ok(ofi_of(net), op, type, count);
}

static int net_native_post(ofl_net_t *net, const void *send, size_t count, ofl_op_t op,
                           ofl_type_t type)
{
    return ofl_ofi_native_post(ofi_of(net), send, count, op, type);
}

static int net_native_post_barrier(ofl_net_t *net)
{
    return ofl_ofi_native_post_barrier(ofi_of(net));
}

static int net_native_test(ofl_net_t *net, void *recv)
{
    return ofl_ofi_native_test(ofi_of(net), recv);
}

static uint64_t net_native_posted(ofl_net_t *net)
{
    return ofl_ofi_native_posted(ofi_of(net));
}

static const ofl_net_ops_t ofi_net_ops = {
    .name = "ofi",
    .blob_bytes = ofl_ofi_blob_bytes,
    .open = net_open,
    .address = net_address,
    .connect = net_connect,
    .close = net_close,
    .nic = net_nic,
    .provider = net_provider,
    .streams = net_streams,
    .stats = net_stats,
    .native = net_native,
    .native_ok = net_native_ok,
    .native_post = net_native_post,
    .native_post_barrier = net_native_post_barrier,
    .native_test = net_native_test,
    .native_posted = net_native_posted,
};

const ofl_net_ops_t *ofl_net_backend(const char *name)
{
    static const ofl_net_ops_t *const backends[] = { &ofi_net_ops };
    if (NULL == name || '\0' == *name) {
        return backends[0];
    }
    for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); ++i) {
        if (0 == strcmp(name, backends[i]->name)) {
            return backends[i];
        }
    }
    return NULL;
}
