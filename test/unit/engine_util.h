/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/* Helpers the engine's unit tests share (test_sched, test_engine, test_threads,
 * test_softnic): inputs and the references computed from them, shared memory
 * names, and the clocks (clocks.h). Static inline so that each program carries
 * only what it uses, and CHECK counts into the including program's own tally. */
#ifndef OFL_ENGINE_UTIL_H
#define OFL_ENGINE_UTIL_H

#include "clocks.h"
#include "engine/engine.h"
#include "sched/sched.h"
#include "unit.h"

#include <dirent.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NCH OFL_CHANNELS
#define SENTINEL 0xa5

/* ---- inputs and references ------------------------------------------------ */

static inline uint64_t mix3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t x = a * 0x9e3779b97f4a7c15ull + b * 0xbf58476d1ce4e5b9ull
                 + c * 0x94d049bb133111ebull + 0x632be59bd9b4e019ull;
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* Large enough that any sum of two ranks wraps modulo 2^32. */
static inline uint32_t in_i32(int rank, uint32_t tag, size_t i)
{
    return 0x7ff00000u + (uint32_t) (rank * 1000 + (int) i) + tag * 7u;
}

/* Mixed signs so that MAX is not simply the last rank's value. */
static inline double in_f64(int rank, uint32_t tag, size_t i)
{
    int64_t v = (int64_t) (mix3((uint64_t) rank, tag, i) % 2000001u) - 1000000;
    return (double) v / 7.0;
}

/* Magnitudes spread over 40 binary orders so that the order of a float sum shows
 * in the result bits. */
static inline float in_f32(int rank, uint32_t tag, size_t i)
{
    uint64_t h = mix3((uint64_t) rank + 77, tag, i);
    int mant = (int) (h % 2001u) - 1000;
    int e = (int) ((h >> 20) % 40u) - 20;
    /* mant * 2^e, exact: 2^e is a normal float, the product needs 10 bits. */
    uint32_t bits = (uint32_t) (127 + e) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof(scale));
    return (float) mant * scale;
}

/* Never the sentinel, so a slot nobody wrote cannot look right. */
static inline uint8_t pattern(int root, uint32_t tag, size_t i)
{
    uint8_t b = (uint8_t) mix3((uint64_t) root + 1000, tag, i);
    return SENTINEL == b ? 0x5a : b;
}


static inline int all_sentinel(const uint8_t *buf, size_t bytes)
{
    for (size_t i = 0; i < bytes; ++i) {
        if (SENTINEL != buf[i]) {
            return 0;
        }
    }
    return 1;
}

/* Float reference of an exchange program: every rank combines in rank order. */
static inline float rank_sum_f32(int n, uint32_t tag, size_t i)
{
    float acc = in_f32(0, tag, i);
    for (int r = 1; r < n; ++r) {
        acc = acc + in_f32(r, tag, i);
    }
    return acc;
}

/* Where `rank` is in p's peer list; -1 when it is not p's peer. */
static inline int peer_slot(const ofl_program_t *p, int rank)
{
    for (int i = 0; i < p->npeers; ++i) {
        if (p->peers[i] == rank) {
            return i;
        }
    }
    return -1;
}

/* ---- shared memory names ---------------------------------------------------- */

static int shm_seq;

static inline void shm_name(char *buf, size_t len)
{
    snprintf(buf, len, "/ofl-unit-%d-%d", (int) getpid(), shm_seq++);
}

/* Every name this process made must be gone: they are unlinked right after the
 * last attach, so a leftover means a path that forgot to. */
static inline void check_no_leftover_shm(void)
{
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "ofl-unit-%d-", (int) getpid());
    DIR *d = opendir("/dev/shm");
    CHECK(NULL != d, "cannot open /dev/shm");
    if (NULL == d) {
        return;
    }
    int left = 0;
    struct dirent *e;
    while (NULL != (e = readdir(d))) {
        if (0 == strncmp(e->d_name, prefix, strlen(prefix))) {
            fprintf(stderr, "leftover /dev/shm/%s\n", e->d_name);
            left++;
        }
    }
    closedir(d);
    CHECK(0 == left, "%d leftover shared memory names", left);
}

#endif
