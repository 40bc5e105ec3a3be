/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/* Drop about LOSS_PCT percent of the packets leaving an interface: a tc egress
 * classifier for contrib/cluster.sh loss (this kernel has no netem). */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

#ifndef LOSS_PCT
#define LOSS_PCT 1
#endif

static unsigned int (*prandom_u32)(void) = (void *) BPF_FUNC_get_prandom_u32;

__attribute__((section("tc"), used)) int drop_some(struct __sk_buff *skb)
{
    (void) skb;
    return prandom_u32() % 100 < LOSS_PCT ? TC_ACT_SHOT : TC_ACT_OK;
}

char _license[] __attribute__((section("license"), used)) = "GPL";
