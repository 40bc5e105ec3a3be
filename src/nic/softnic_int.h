/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — what the software NIC's two halves share (internal to
 * src/nic/): the segment's geometry constants and the pid of a peer. softnic.c
 * is the data path (the ops table), softnic_seg.c the segment's set-up.
 */
#ifndef OFL_SOFTNIC_INT_H
#define OFL_SOFTNIC_INT_H

#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

#include "nic/softnic.h"

#define LINE 64
#define STAMP 16   /* bytes before a slot's payload: keeps payload 16-byte aligned */
#define SOFTNIC_MAGIC 0x6f666c736e696334ull /* "oflsnic4" */
#define BOARD_LINES OFL_BOARD_MAX_LINES  /* per rank and board slot */
#define OFL_LIKELY(x) __builtin_expect(!!(x), 1)
#define OFL_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define RECORDS OFL_NIC_RECORDS
#define BOARD_SEQ_SHIFT OFL_BOARD_TAG_BITS

typedef ofl_softnic_hdr_t softnic_hdr_t;

static inline uint64_t round_up(uint64_t v, uint64_t to)
{
    return (v + to - 1) / to * to;
}

static inline uint64_t page_bytes(void)
{
    long page = sysconf(_SC_PAGESIZE);
    return page > 0 ? (uint64_t) page : 4096;
}

/* The pid of `peer`: the sealed private copy, else the header's (set-up). */
/* A rank's call record for call `callno`, in the segment's records area (the layout
 * softnic_seg.c lays out, which softnic.c's ops read). */
static inline ofl_nic_record_t *ofl_softnic_record_at(ofl_softnic_t *nic, int rank,
                                                      uint64_t callno)
{
    return (ofl_nic_record_t *) (nic->mem + nic->off_records)
           + (uint64_t) rank * OFL_NIC_RECORDS + (callno & (OFL_NIC_RECORDS - 1));
}

static inline pid_t peer_pid(const ofl_softnic_t *nic, int peer)
{
    if (NULL != nic->pid) {
        return nic->pid[peer];
    }
    const softnic_hdr_t *h = (const softnic_hdr_t *) nic->mem;
    return ((const volatile int32_t *) h->pid)[peer];
}

/* The data path (softnic.c), installed in every segment's base NIC. */
extern const ofl_nic_ops_t ofl_softnic_ops;

#endif
