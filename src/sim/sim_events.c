/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the simulator's virtual time: a heap of events drained in time
 * order (ties in the order they were pushed, so that runs are reproducible), and
 * the random numbers of the noise and the data.
 */
#include "sim/sim_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* The first failure of a run, kept for its report (every part of the simulator
 * reports here, so this file depends on no other). */
void sim_fail(sim_t *s, const char *why)
{
    if (!s->failed && s->err && s->errlen) {
        snprintf(s->err, s->errlen, "%s", why);
    }
    s->failed = 1;
}

void *sim_alloc(sim_t *s, size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (NULL == p) {
        sim_fail(s, "out of memory");
        return NULL;
    }
    s->bytes += n;
    return p;
}

static int ev_before(const sim_event_t *a, const sim_event_t *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

void sim_ev_push(sim_t *s, sim_event_t ev)
{
    if (s->nheap == s->capheap) {
        size_t ncap = s->capheap ? 2 * s->capheap : 1024;
        sim_event_t *n = realloc(s->heap, ncap * sizeof(*n));
        if (NULL == n) {
            sim_fail(s, "out of memory (events)");
            return;
        }
        s->bytes += (ncap - s->capheap) * sizeof(*n);
        s->heap = n;
        s->capheap = ncap;
    }
    ev.seq = s->seq++;
    size_t i = s->nheap++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!ev_before(&ev, &s->heap[up])) {
            break;
        }
        s->heap[i] = s->heap[up];
        i = up;
    }
    s->heap[i] = ev;
}

sim_event_t sim_ev_pop(sim_t *s)
{
    sim_event_t top = s->heap[0];
    sim_event_t last = s->heap[--s->nheap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->nheap) {
            break;
        }
        if (c + 1 < s->nheap && ev_before(&s->heap[c + 1], &s->heap[c])) {
            c++;
        }
        if (!ev_before(&s->heap[c], &last)) {
            break;
        }
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->nheap > 0) {
        s->heap[i] = last;
    }
    return top;
}

/* ---- random numbers (noise, data) ------------------------------------------------ */

uint64_t sim_mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double sim_uniform(uint64_t *state)
{
    *state = sim_mix64(*state);
    return ((double) (*state >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
