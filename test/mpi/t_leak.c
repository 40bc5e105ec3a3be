/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * t_leak: communicator churn must not leak memory, file descriptors or
 * shared-memory segments.
 *
 * 3000 cycles of MPI_Comm_dup + MPI_Allreduce + MPI_Barrier + MPI_Comm_free,
 * then 200 cycles of MPI_Comm_split (alternating parity and reversed order)
 * with the same calls.  Every 500 cycles, the resident set size must not have
 * grown by more than RSS_SLACK over its value after the first 500 cycles (by
 * then allocator pools and lazily created state have reached steady state),
 * and the number of open file descriptors must not grow.  The node leader
 * (local rank 0) checks that /dev/shm holds no more "coll_offload" entries
 * than before the churn once all ranks have freed their communicators.
 *
 * Usage: t_leak [-v]
 */
#include "t_common.h"

#include <dirent.h>
#include <limits.h>

#define DUP_CYCLES 3000
#define SPLIT_CYCLES 200
#define CHECK_EVERY 500
#define RSS_SLACK ((long)4 << 20)
#define FD_SLACK 2
#define SHM_TAG "coll_offload"
#define MAX_SHM 256

static long rss_bytes(void)
{
    long pages_total = 0, pages_res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (NULL == f) {
        return -1;
    }
    if (2 != fscanf(f, "%ld %ld", &pages_total, &pages_res)) {
        pages_res = -1;
    }
    fclose(f);
    return pages_res < 0 ? -1 : pages_res * sysconf(_SC_PAGESIZE);
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (NULL == d) {
        return -1;
    }
    while (NULL != readdir(d)) {
        n++;
    }
    closedir(d);
    return n;
}

/* Names in /dev/shm containing SHM_TAG; returns how many (up to MAX_SHM kept). */
static int list_shm(char names[][NAME_MAX + 1])
{
    DIR *d = opendir("/dev/shm");
    int n = 0;
    if (NULL == d) {
        return 0;
    }
    struct dirent *e;
    while (NULL != (e = readdir(d))) {
        if (NULL != strstr(e->d_name, SHM_TAG)) {
            if (n < MAX_SHM) {
                snprintf(names[n], NAME_MAX + 1, "%s", e->d_name);
            }
            n++;
        }
    }
    closedir(d);
    return n;
}

static char base_shm[MAX_SHM][NAME_MAX + 1];
static int n_base_shm;

/*
 * Node leader: entries that were not there before the churn.  Unlinking may
 * trail the last MPI_Comm_free a little, so a leak must persist for 2 s.
 */
static void check_shm(MPI_Comm node, const char *when)
{
    int lrank;
    MPI_Comm_rank(node, &lrank);
    /* Every rank of the node has freed its communicators once this returns. */
    int dummy = 0, *all = malloc(sizeof(int) * (size_t)t_wsize);
    MPI_Allgather(&dummy, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    free(all);
    if (0 != lrank) {
        return;
    }
    static char now[MAX_SHM][NAME_MAX + 1];
    int extra = 0;
    const char *first = "";
    for (int tries = 0; tries < 20; tries++) {
        int n = list_shm(now);
        extra = 0;
        for (int i = 0; i < n && i < MAX_SHM; i++) {
            int old = 0;
            for (int j = 0; j < n_base_shm && j < MAX_SHM && !old; j++) {
                old = 0 == strcmp(now[i], base_shm[j]);
            }
            if (!old && 0 == extra++) {
                first = now[i];
            }
        }
        if (0 == extra) {
            break;
        }
        usleep(100000);
    }
    t_check(0 == extra, "%s: %d new /dev/shm entries containing \"%s\" (e.g. %s) left after "
            "freeing every communicator (or another job is running concurrently)", when, extra,
            SHM_TAG, first);
}

typedef struct {
    long rss0;
    int fd0;
} base_t;

static void check_resources(base_t *b, int cycle, const char *phase)
{
    long rss = rss_bytes();
    int fds = count_fds();
    if (t_opt.verbose) {
        printf("  [rank %d] %s cycle %d: rss %ld KiB, %d fds\n", t_wrank, phase, cycle,
               rss / 1024, fds);
    }
    if (b->rss0 < 0) {
        b->rss0 = rss;
        b->fd0 = fds;
        return;
    }
    t_check(rss >= 0 && rss - b->rss0 <= RSS_SLACK, "%s cycle %d: resident memory grew by "
            "%ld KiB since cycle %d (limit %ld KiB)", phase, cycle, (rss - b->rss0) / 1024,
            CHECK_EVERY, RSS_SLACK / 1024);
    t_check(fds >= 0 && fds - b->fd0 <= FD_SLACK, "%s cycle %d: %d open file descriptors, "
            "%d after cycle %d", phase, cycle, fds, b->fd0, CHECK_EVERY);
}

/* One cycle's collectives on a fresh communicator, results checked. */
static void use_comm(MPI_Comm c, int cycle, const char *what)
{
    int n, r;
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Comm_size(c, &n);
    MPI_Comm_rank(c, &r);
    long v[3] = { r, cycle, 1 }, s[3] = { -1, -1, -1 };
    int rc = MPI_Allreduce(v, s, 3, MPI_LONG, MPI_SUM, c);
    t_check(MPI_SUCCESS == rc && s[0] == (long)n * (n - 1) / 2 && s[1] == (long)n * cycle
            && s[2] == n, "%s cycle %d: MPI_Allreduce gave %ld %ld %ld (rc=%d)", what, cycle,
            s[0], s[1], s[2], rc);
    t_check_rc(MPI_Barrier(c), "MPI_Barrier on a new communicator");
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "t_leak");
    t_note("t_leak: %d ranks, %d dup cycles, %d split cycles\n", t_wsize, DUP_CYCLES,
           SPLIT_CYCLES);

    /* Created before the baseline so its own segment (if any) is part of it. */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Barrier(MPI_COMM_WORLD);
    n_base_shm = list_shm(base_shm);

    base_t b = { -1, -1 };
    t_section_begin("MPI_Comm_dup/free cycles");
    for (int i = 1; i <= DUP_CYCLES; i++) {
        MPI_Comm c;
        if (!t_check_rc(MPI_Comm_dup(MPI_COMM_WORLD, &c), "MPI_Comm_dup")) {
            break;
        }
        use_comm(c, i, "dup");
        MPI_Comm_free(&c);
        if (0 == i % CHECK_EVERY) {
            check_resources(&b, i, "dup");
            char when[64];
            snprintf(when, sizeof(when), "dup cycle %d", i);
            check_shm(node, when);
        }
    }
    t_section_end();

    t_section_begin("MPI_Comm_split/free cycles");
    for (int i = 1; i <= SPLIT_CYCLES; i++) {
        MPI_Comm c;
        int color = 0 == i % 2 ? t_wrank % 2 : 0;
        int key = 0 == i % 2 ? t_wrank : t_wsize - t_wrank;
        if (!t_check_rc(MPI_Comm_split(MPI_COMM_WORLD, color, key, &c), "MPI_Comm_split")) {
            break;
        }
        use_comm(c, i, "split");
        MPI_Comm_free(&c);
    }
    check_resources(&b, SPLIT_CYCLES, "split");
    t_section_end();

    t_section_begin("/dev/shm after the churn");
    MPI_Barrier(MPI_COMM_WORLD);
    check_shm(node, "end");
    t_section_end();

    MPI_Comm_free(&node);
    return t_finish();
}
