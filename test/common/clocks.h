/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * The clocks the tests and benchmarks time with, in seconds: the monotonic one for
 * intervals and deadlines (a change of the wall clock must not end a wait early or
 * stretch a measurement), and the CPU time of the process for what a loop costs.
 */
#ifndef OFL_CLOCKS_H
#define OFL_CLOCKS_H

#include <time.h>

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* All threads of this process together. */
static inline double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

#endif /* OFL_CLOCKS_H */
