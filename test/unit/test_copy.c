/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * ofl_copy and its backward block copy: every byte lands where it should, nothing
 * around the destination is touched, for sizes around the block and the window's
 * threshold, at every source alignment and at distances inside and outside the
 * window. The expected bytes are the source's own (a pattern no copy produces by
 * accident), compared byte by byte.
 */
#include "alu/copy.h"
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>

#define PAGE 4096
#define GUARD 0xA5

static unsigned char *src_page, *dst_page;

static unsigned char pattern(size_t i)
{
    return (unsigned char) (i * 131u + (i >> 8) * 7u + 1u);
}

/* One copy of n bytes from src_page + so to dst_page + doff, checked whole. */
static void check_one(void (*copy)(void *, const void *, size_t), const char *name, size_t n,
                      size_t so, size_t doff)
{
    memset(dst_page, GUARD, 3 * PAGE + (1u << 17));
    copy(dst_page + doff, src_page + so, n);
    size_t bad = SIZE_MAX;
    for (size_t i = 0; i < n && SIZE_MAX == bad; ++i) {
        if (dst_page[doff + i] != pattern(so + i)) {
            bad = i;
        }
    }
    CHECK(SIZE_MAX == bad, "%s n=%zu so=%zu doff=%zu: byte %zu wrong", name, n, so, doff, bad);
    int guard_ok = 1;
    for (size_t i = 0; i < doff; ++i) {
        guard_ok &= dst_page[i] == GUARD;
    }
    for (size_t i = doff + n; i < doff + n + 256; ++i) {
        guard_ok &= dst_page[i] == GUARD;
    }
    CHECK(guard_ok, "%s n=%zu so=%zu doff=%zu: wrote outside the destination", name, n, so,
          doff);
}

static void near_fn(void *d, const void *s, size_t n)
{
    ofl_copy_near(d, s, n);
}

static void copy_fn(void *d, const void *s, size_t n)
{
    ofl_copy(d, s, n);
}

int main(void)
{
    unit_timeout("test_copy", 60);
    size_t span = 3 * PAGE + (1u << 17);
    if (0 != posix_memalign((void **) &src_page, PAGE, span)
        || 0 != posix_memalign((void **) &dst_page, PAGE, span)) {
        fprintf(stderr, "test_copy: no memory\n");
        return EXIT_FAILURE;
    }
    for (size_t i = 0; i < span; ++i) {
        src_page[i] = pattern(i);
    }

    /* The window: a destination 1-63 bytes past the source modulo 4 KiB, above the
     * threshold; not below it, not at 0 or 64, not before the source. */
    const unsigned char *base = dst_page;   /* only addresses are compared */
    CHECK(ofl_copy_is_near(base + 16, base, 4096), "16 past, 4 KiB: in the window");
    CHECK(ofl_copy_is_near(base + 4096 + 63, base, 4096), "63 past a page: in the window");
    CHECK(ofl_copy_is_near(base + 1, base, OFL_COPY_NEAR_MIN + 1), "1 past: in the window");
    CHECK(!ofl_copy_is_near(base + 16, base, OFL_COPY_NEAR_MIN), "at the threshold: memcpy");
    CHECK(!ofl_copy_is_near(base, base, 65536), "same offset: memcpy");
    CHECK(!ofl_copy_is_near(base + 64, base, 65536), "64 past: memcpy");
    CHECK(!ofl_copy_is_near(base, base + 16, 65536), "16 before: memcpy");
    CHECK(!ofl_copy_is_near(base + 2048, base, 65536), "half a page: memcpy");

    static const size_t sizes[] = { 0, 1, 31, 127, 128, 129, 255, 2047, 2048, 2049, 4096,
                                    4097, 65536 + 77, 1u << 17 };
    static const size_t sos[] = { 0, 1, 16, 33, 4095 };
    static const size_t dists[] = { 0, 1, 16, 31, 32, 63, 64, 2048, 4080 };
    for (size_t a = 0; a < sizeof(sizes) / sizeof(sizes[0]); ++a) {
        for (size_t b = 0; b < sizeof(sos) / sizeof(sos[0]); ++b) {
            for (size_t c = 0; c < sizeof(dists) / sizeof(dists[0]); ++c) {
                size_t doff = (sos[b] + dists[c]) % PAGE + PAGE;
                check_one(near_fn, "ofl_copy_near", sizes[a], sos[b], doff);
                check_one(copy_fn, "ofl_copy", sizes[a], sos[b], doff);
            }
        }
    }
    free(src_page);
    free(dst_page);
    return unit_report("test_copy");
}
