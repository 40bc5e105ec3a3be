/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * line_lat: the floor under any two-rank collective on this machine — how long
 * one cache line takes to go from one core to another and back.
 *
 *   line_lat [-i ITERS] [-c CPU_A,CPU_B]
 *
 * Two threads pinned to two cores (default: the first two the process may use)
 * bounce a counter in one 64-byte line: A writes n, B waits for n and writes
 * n + 1, A waits for n + 1. Prints the median over 21 blocks of the round trip
 * and of half of it (one way), in microseconds. A collective between two
 * ranks on those cores moves at least one line each way; an 8-byte allreduce
 * cannot take less than one one-way transfer per rank, a barrier one round
 * trip's worth, whatever the software.
 */
#define _GNU_SOURCE
#include "clocks.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCKS 21

static _Alignas(64) _Atomic uint64_t line;
static long iters = 200000;
static int cpu_b;

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (0 != pthread_setaffinity_np(pthread_self(), sizeof(set), &set)) {
        fprintf(stderr, "line_lat: cannot pin to cpu %d\n", cpu);
        exit(1);
    }
}

static void *echo(void *arg)
{
    (void) arg;
    pin(cpu_b);
    uint64_t want = 1;
    for (long k = 0; k < (long) BLOCKS * iters + 1000; ++k) {
        while (atomic_load_explicit(&line, memory_order_acquire) != want) {
        }
        atomic_store_explicit(&line, want + 1, memory_order_release);
        want += 2;
    }
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int cpu_a = -1;
    cpu_b = -1;
    int c;
    while ((c = getopt(argc, argv, "i:c:h")) != -1) {
        if ('i' == c) {
            iters = atol(optarg);
        } else if ('c' == c && 2 == sscanf(optarg, "%d,%d", &cpu_a, &cpu_b)) {
            continue;
        } else {
            fprintf(stderr, "usage: %s [-i ITERS] [-c CPU_A,CPU_B]\n", argv[0]);
            return 'h' == c ? 0 : 2;
        }
    }
    if (iters < 1) {
        iters = 1;
    }
    if (cpu_a < 0) {
        cpu_set_t set;
        sched_getaffinity(0, sizeof(set), &set);
        for (int i = 0; i < CPU_SETSIZE && cpu_b < 0; ++i) {
            if (CPU_ISSET(i, &set)) {
                if (cpu_a < 0) {
                    cpu_a = i;
                } else {
                    cpu_b = i;
                }
            }
        }
        if (cpu_b < 0) {
            fprintf(stderr, "line_lat: needs two cores\n");
            return 1;
        }
    }
    pthread_t t;
    pthread_create(&t, NULL, echo, NULL);
    pin(cpu_a);
    uint64_t n = 1;
    for (int k = 0; k < 1000; ++k, n += 2) {   /* warm-up */
        atomic_store_explicit(&line, n, memory_order_release);
        while (atomic_load_explicit(&line, memory_order_acquire) != n + 1) {
        }
    }
    double rt[BLOCKS];
    for (int b = 0; b < BLOCKS; ++b) {
        double t0 = now_s();
        for (long k = 0; k < iters; ++k, n += 2) {
            atomic_store_explicit(&line, n, memory_order_release);
            while (atomic_load_explicit(&line, memory_order_acquire) != n + 1) {
            }
        }
        rt[b] = (now_s() - t0) * 1e6 / (double) iters;
    }
    pthread_join(t, NULL);
    qsort(rt, BLOCKS, sizeof(double), cmp);
    printf("cpus %d,%d: cache-line round trip %.3f us, one way %.3f us (median of %d blocks; "
           "min %.3f, max %.3f)\n", cpu_a, cpu_b, rt[BLOCKS / 2], rt[BLOCKS / 2] / 2, BLOCKS,
           rt[0], rt[BLOCKS - 1]);
    return 0;
}
