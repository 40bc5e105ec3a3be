/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the NIC's data mover: memcpy without the short-distance cliff.
 *
 * glibc copies blocks above a few KiB with `rep movsb` on CPUs that advertise fast
 * string moves (ERMS/FSRM). On AMD Zen 3 that instruction runs at 1.5-2.7 GB/s
 * instead of 30-40 when the destination lies 1-31 bytes (and about 40% slower at
 * 32-63) past the source modulo 4 KiB: measured with 4 KiB-64 KiB copies, all other
 * distances at full speed. A page-aligned user buffer copied into a mailbox slot,
 * whose payload starts 16 bytes into its page after the stamp, is exactly that
 * case, and made offload 3-8x slower with page-aligned buffers (what OSU and many
 * allocators give) than with malloc's. See docs/performance.md, "Buffer placement".
 *
 * ofl_copy is memcpy except in that window, where it copies backwards in vector
 * blocks: a backward copy never loads from an address whose low 12 bits match a
 * store still in flight, so it runs at full speed there (36-40 GB/s at 64 KiB).
 * Any other distance costs one subtraction and a compare.
 */
#ifndef OFL_COPY_H
#define OFL_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Copies at or below this size take glibc's vector path, which has no cliff. */
#define OFL_COPY_NEAR_MIN 2048
/* The window of (dst - src) mod 4096 that a forward string move handles badly. */
#define OFL_COPY_NEAR_MAX 63

/* Backward copy for the window (any n, any alignment; dst and src must not overlap). */
void ofl_copy_near(void *dst, const void *src, size_t n);

/* Whether a copy of n bytes from src to dst falls in the window. */
static inline int ofl_copy_is_near(const void *dst, const void *src, size_t n)
{
    uintptr_t d = ((uintptr_t) dst - (uintptr_t) src) & 4095u;
    return n > OFL_COPY_NEAR_MIN && d - 1u < OFL_COPY_NEAR_MAX;
}

static inline void ofl_copy(void *dst, const void *src, size_t n)
{
    if (__builtin_expect(ofl_copy_is_near(dst, src, n), 0)) {
        ofl_copy_near(dst, src, n);
    } else {
        memcpy(dst, src, n);
    }
}

#endif
