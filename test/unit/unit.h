/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/* Minimal assertion helpers for the unit tests: count checks, report failures
 * with file:line, exit non-zero when anything failed. */
#ifndef OFL_UNIT_H
#define OFL_UNIT_H
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static const char *unit_timeout_name = "unit test";

/* SIGALRM: says so on stderr, then dies of the signal (its default action). */
static inline void unit_timeout_fired(int sig)
{
    static const char said[] = ": timed out (unit_timeout), killed by SIGALRM\n";
    ssize_t n = write(2, unit_timeout_name, strlen(unit_timeout_name));
    n = write(2, said, sizeof(said) - 1);
    (void) n;
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Every test program arms this first: after SECS (scaled, unit_time_limit) it is
 * killed by SIGALRM, so a deadlock or a wait that never ends fails the test
 * instead of hanging make check. */
static inline void unit_timeout(const char *name, unsigned secs)
{
    unit_timeout_name = name;
    signal(SIGALRM, unit_timeout_fired);
    alarm(unit_time_limit(secs));
}
#endif
