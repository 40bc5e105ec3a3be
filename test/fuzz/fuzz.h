/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Shared by the libFuzzer harnesses of the readers of peer-written state: an
 * input cursor, an oracle assertion, and a two-rank software NIC in this
 * process whose peer-written parts the input rewrites.
 *
 * Every harness drives the real code. ASan and UBSan catch any access outside
 * the process's buffers; FZ_ASSERT catches a reader whose verdict differs from
 * what nic.h ("Validation") says a correct peer can write, i.e. a corrupt value
 * acted on or a correct one refused.
 */
#ifndef OFL_FUZZ_H
#define OFL_FUZZ_H

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nic/softnic.h"
#include "sched/program.h"

#define FZ_ASSERT(cond, ...)                                                  \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s:%d: oracle: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
            abort();                                                          \
        }                                                                     \
    } while (0)

/* How deep the inputs go (calls completed, corruptions caught, ...): printed at
 * exit when FUZZ_STATS is set, so that a harness that never gets anywhere shows. */
#define FZ_NSTATS 8
static unsigned long fz_stat[FZ_NSTATS];
static const char *fz_stat_name[FZ_NSTATS];

static inline void fz_count(int i, const char *name)
{
    fz_stat[i]++;
    fz_stat_name[i] = name;
}

static void fz_stats_print(void)
{
    for (int i = 0; i < FZ_NSTATS; ++i) {
        if (NULL != fz_stat_name[i]) {
            fprintf(stderr, "stat %s: %lu\n", fz_stat_name[i], fz_stat[i]);
        }
    }
}

static inline void fz_stats_init(void)
{
    if (NULL != getenv("FUZZ_STATS")) {
        atexit(fz_stats_print);
    }
}

typedef struct {
    const uint8_t *p;
    size_t n;
} fz_in_t;

static inline uint8_t fz_u8(fz_in_t *in)
{
    if (0 == in->n) {
        return 0;
    }
    in->n--;
    return *in->p++;
}

static inline uint64_t fz_u64(fz_in_t *in)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) {
        v |= (uint64_t) fz_u8(in) << (8 * i);
    }
    return v;
}

/* A value near `base` (most corruptions that matter are off by a little) or,
 * one time in four, any value at all. */
static inline uint64_t fz_near(fz_in_t *in, uint64_t base)
{
    uint8_t how = fz_u8(in);
    if (0 == (how & 3)) {
        return fz_u64(in);
    }
    return base + (uint64_t) (int64_t) (int8_t) fz_u8(in);
}

/* The software NIC's layout as softnic.h describes it: each mailbox slot
 * starts with a 16-byte stamp (the stream's DATA count), every CREDIT counter
 * has its own line at [owner][feeder][chan]. */
#define FZ_STAMP 16
#define FZ_LINE 64

static inline volatile uint64_t *fz_stamp(ofl_softnic_t *receiver, int src, int chan,
                                          uint64_t item)
{
    ofl_nic_t *b = &receiver->base;
    return (volatile uint64_t *) ((uint8_t *) b->ops->inbox(b, src, chan, item) - FZ_STAMP);
}

static inline volatile uint64_t *fz_credit(ofl_softnic_t *nic, int owner, int feeder, int chan)
{
    uint64_t line = ((uint64_t) owner * (uint64_t) nic->base.size + (uint64_t) feeder)
                        * OFL_CHANNELS
                    + (uint64_t) chan;
    return (volatile uint64_t *) (nic->mem + nic->off_counters + line * FZ_LINE);
}

/* n ranks of one segment in this process (created once per fuzzing process). */
static inline void fz_world_open(ofl_softnic_t *nic, int n, int slots, size_t segsize)
{
    char name[64];
    snprintf(name, sizeof(name), "/ofl-fuzz-%d", (int) getpid());
    int rc = ofl_softnic_create(&nic[0], name, n, 0, slots, segsize);
    for (int r = 1; r < n && 0 == rc; ++r) {
        rc = ofl_softnic_attach(&nic[r], name, n, r, slots, segsize);
    }
    ofl_softnic_unlink(name);
    if (0 != rc) {
        fprintf(stderr, "cannot make a software NIC: %s\n", strerror(-rc));
        exit(1);
    }
}

/* Back to a fresh segment: everything after the header zero, no poison, and
 * every rank's private view of its streams forgotten. */
static inline void fz_world_reset(ofl_softnic_t *nic, int n)
{
    memset(nic[0].mem + nic[0].off_bells, 0, nic[0].len - nic[0].off_bells);
    atomic_store(&((ofl_softnic_hdr_t *) nic[0].mem)->poison, 0);
    atomic_store(&((ofl_softnic_hdr_t *) nic[0].mem)->mismatch, 0);
    size_t streams = (size_t) n * OFL_CHANNELS;
    for (int r = 0; r < n; ++r) {
        memset(nic[r].credit_seen, 0, streams * sizeof(uint64_t));
        memset(nic[r].data_put, 0, streams * sizeof(uint64_t));
        memset(nic[r].credit_given, 0, streams * sizeof(uint64_t));
    }
}

#endif
