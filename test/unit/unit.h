/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/* Minimal assertion helpers for the unit tests: count checks, report failures
 * with file:line, exit non-zero when anything failed. */
#ifndef OFL_UNIT_H
#define OFL_UNIT_H
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* Atomic: threads the tests start (the progress agent's callbacks, the
 * simulated ranks) check too. */
static atomic_int unit_checks;
static atomic_int unit_failures;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        atomic_fetch_add(&unit_checks, 1);                                      \
        if (!(cond)) {                                                          \
            if (atomic_fetch_add(&unit_failures, 1) < 50) {                     \
                fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, \
                        #cond);                                                 \
                fprintf(stderr, __VA_ARGS__);                                   \
                fputc('\n', stderr);                                            \
            }                                                                   \
        }                                                                       \
    } while (0)

static inline int unit_report(const char *name)
{
    int failures = atomic_load(&unit_failures);
    printf("%s: %d checks, %d failed\n", name, atomic_load(&unit_checks), failures);
    return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* SECS scaled by OFL_UNIT_TIME_SCALE when it is set (an integer above 1):
 * instrumented builds run the same tests several times slower. */
static inline unsigned unit_time_limit(unsigned secs)
{
    const char *scale = getenv("OFL_UNIT_TIME_SCALE");
    int k = NULL != scale ? atoi(scale) : 1;
    return k > 1 ? secs * (unsigned) k : secs;
}
#endif
