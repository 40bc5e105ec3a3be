/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the backward block copy of ofl_copy's window (see copy.h).
 */
#include "alu/copy.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) \
    && !defined(__SANITIZE_ADDRESS__)
#define OFL_COPY_CLONES __attribute__((target_clones("default", "avx2")))
#else
#define OFL_COPY_CLONES
#endif

/* 32 bytes, any alignment; the compiler splits it where the CPU has no such register. */
typedef unsigned char ofl_vec_t __attribute__((vector_size(32), aligned(1), may_alias));

#define BLOCK (4 * sizeof(ofl_vec_t))

OFL_COPY_CLONES void ofl_copy_near(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    size_t whole = n / BLOCK * BLOCK;
    if (n > whole) {
        memcpy(d + whole, s + whole, n - whole);   /* fewer than BLOCK bytes: no cliff */
    }
    /* Four loads, then four stores: every load of a block is issued before the
     * block's stores, and later blocks lie below it, away from those stores. */
    for (size_t at = whole; at > 0; at -= BLOCK) {
        const ofl_vec_t *from = (const ofl_vec_t *) (s + at - BLOCK);
        ofl_vec_t *to = (ofl_vec_t *) (d + at - BLOCK);
        ofl_vec_t v0 = from[0], v1 = from[1], v2 = from[2], v3 = from[3];
        to[0] = v0;
        to[1] = v1;
        to[2] = v2;
        to[3] = v3;
    }
}
