/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * t_shm: the shared memory a communicator costs on the node.
 *
 * Every communicator of coll/offload maps one segment, visible in
 * /proc/self/maps as /memfd:coll_offload (or, where reopening it through /proc is
 * refused, /dev/shm/coll_offload.*, deleted once every rank attached).
 * Its touched memory is measured here independently of the component: mincore()
 * on our own mapping of it says which of its pages exist in the shared-memory
 * object, whichever rank touched them.
 *
 *   t_shm report N  N communicators (dups of MPI_COMM_WORLD), on each one 1 MiB
 *                   MPI_Allreduce, MPI_Bcast and MPI_Reduce; prints the touched
 *                   bytes of their segments per communicator and per rank, and the
 *                   growth of the node's Shmem (/proc/meminfo; other jobs on the
 *                   node disturb it) per communicator. No checks but the results.
 *   t_shm bound     communicators of every size from 1 to the world's, each driven
 *                   through every stream its programs have (allreduce, reduce and
 *                   bcast of up to 4 MiB, every root, blocking and nonblocking);
 *                   each one's segment may have touched at most
 *                   coll_offload_shm_budget bytes per rank.
 *   t_shm cap       with coll_offload_shm_cap small enough for a few
 *                   communicators: communicators are created one by one (after one
 *                   that only the lower half of the ranks belongs to, so that the
 *                   ranks' holdings differ); each must be offloaded exactly when its
 *                   share fits under every rank's part of the cap (cap / ranks on the
 *                   node), on every rank alike, with right results either way; a freed
 *                   one gives its share back; the warning naming the parameter comes
 *                   once.
 */
#include "t_common.h"

#include <sys/mman.h>
#include <fcntl.h>

#define MIB (1024 * 1024)

typedef struct {
    unsigned long long touched;   /* bytes of resident pages, all segments */
    unsigned long long largest;   /* the most touched segment */
    int segments;
} shm_use_t;

/* The segments this process maps: start address and touched bytes. */
#define MAX_SEGS 1024
typedef struct {
    unsigned long lo[MAX_SEGS];
    unsigned long long touched[MAX_SEGS];
    int n;
} seg_list_t;

static void segment_list(seg_list_t *l)
{
    l->n = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    long page = sysconf(_SC_PAGESIZE);
    char line[512];
    while (NULL != f && NULL != fgets(line, sizeof(line), f) && l->n < MAX_SEGS) {
        unsigned long lo, hi;
        if ((NULL == strstr(line, "/memfd:coll_offload") && NULL == strstr(line, "/coll_offload."))
            || 2 != sscanf(line, "%lx-%lx", &lo, &hi)) {
            continue;
        }
        size_t pages = (hi - lo) / (unsigned long) page;
        unsigned char *vec = malloc(pages ? pages : 1);
        unsigned long long bytes = 0;
        if (NULL != vec && 0 == mincore((void *) lo, hi - lo, vec)) {
            for (size_t i = 0; i < pages; i++) {
                bytes += (vec[i] & 1) ? (unsigned long long) page : 0;
            }
        }
        free(vec);
        l->lo[l->n] = lo;
        l->touched[l->n++] = bytes;
    }
    if (NULL != f) {
        fclose(f);
    }
}

/* Touched bytes of every segment, the most touched one, and how many. */
static shm_use_t segment_use(void)
{
    seg_list_t l;
    shm_use_t use = { 0, 0, 0 };
    segment_list(&l);
    for (int i = 0; i < l.n; i++) {
        use.touched += l.touched[i];
        use.largest = l.touched[i] > use.largest ? l.touched[i] : use.largest;
    }
    use.segments = l.n;
    return use;
}

/* The Shmem line of /proc/meminfo, bytes (-1 if unreadable). */
static long long node_shmem(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    long long kib = -1;
    char line[256];
    while (NULL != f && NULL != fgets(line, sizeof(line), f)) {
        if (1 == sscanf(line, "Shmem: %lld kB", &kib)) {
            break;
        }
    }
    if (NULL != f) {
        fclose(f);
    }
    return kib < 0 ? -1 : kib * 1024;
}

/* One 1 MiB allreduce, bcast and reduce (root 0), results checked. */
static void use_1mib(MPI_Comm c, const char *what)
{
    int n, r;
    MPI_Comm_size(c, &n);
    MPI_Comm_rank(c, &r);
    size_t count = MIB / sizeof(int);
    int *a = malloc(MIB), *b = malloc(MIB);
    for (size_t i = 0; i < count; i++) {
        a[i] = r + (int) (i % 1000);
    }
    int rc = MPI_Allreduce(a, b, (int) count, MPI_INT, MPI_SUM, c);
    int bad = 0;
    for (size_t i = 0; i < count && !bad; i++) {
        bad = b[i] != n * (n - 1) / 2 + n * (int) (i % 1000);
    }
    t_check(MPI_SUCCESS == rc && !bad, "%s: 1 MiB MPI_Allreduce wrong (rc=%d)", what, rc);
    for (size_t i = 0; i < count; i++) {
        b[i] = 0 == r ? (int) (i * 7) : -1;
    }
    rc = MPI_Bcast(b, (int) count, MPI_INT, 0, c);
    bad = 0;
    for (size_t i = 0; i < count && !bad; i++) {
        bad = b[i] != (int) (i * 7);
    }
    t_check(MPI_SUCCESS == rc && !bad, "%s: 1 MiB MPI_Bcast wrong (rc=%d)", what, rc);
    rc = MPI_Reduce(a, b, (int) count, MPI_INT, MPI_SUM, 0, c);
    bad = 0;
    for (size_t i = 0; i < count && !bad && 0 == r; i++) {
        bad = b[i] != n * (n - 1) / 2 + n * (int) (i % 1000);
    }
    t_check(MPI_SUCCESS == rc && !bad, "%s: 1 MiB MPI_Reduce wrong (rc=%d)", what, rc);
    free(a);
    free(b);
}

/* The one segment of `after` not in `before` (0 if none or several). */
static unsigned long new_segment(const seg_list_t *before, const seg_list_t *after)
{
    unsigned long found = 0;
    int nnew = 0;
    for (int i = 0; i < after->n; i++) {
        int old = 0;
        for (int j = 0; j < before->n && !old; j++) {
            old = after->lo[i] == before->lo[j];
        }
        if (!old) {
            found = after->lo[i];
            nnew++;
        }
    }
    return 1 == nnew ? found : 0;
}

static void fill(int *v, size_t n, int r, int salt)
{
    for (size_t i = 0; i < n; i++) {
        v[i] = (int) ((unsigned) (r + 1) * 2654435761u ^ (unsigned) (i * 31 + salt)) & 0xffff;
    }
}

/* Every collective that moves data, sizes up to 4 MiB, every root: whatever streams
 * the communicator's programs have are filled. Results checked against the
 * contributions recomputed here. */
static void drive(MPI_Comm c, const char *what)
{
    static const size_t sizes[] = { 1024, 65536, 1u << 20, 4u << 20 };
    int n, r;
    MPI_Comm_size(c, &n);
    MPI_Comm_rank(c, &r);
    size_t most = 4u << 20;
    int *a = malloc(most), *b = malloc(most), *want = malloc(most), *tmp = malloc(most);
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        int cnt = (int) (sizes[k] / sizeof(int));
        fill(a, (size_t) cnt, r, (int) k);
        memset(want, 0, (size_t) cnt * sizeof(int));
        for (int q = 0; q < n; q++) {
            fill(tmp, (size_t) cnt, q, (int) k);
            for (int i = 0; i < cnt; i++) {
                want[i] += tmp[i];
            }
        }
        int rc = MPI_Allreduce(a, b, cnt, MPI_INT, MPI_SUM, c);
        t_check(MPI_SUCCESS == rc && 0 == memcmp(b, want, (size_t) cnt * sizeof(int)),
                "%s: MPI_Allreduce of %zu bytes wrong (rc=%d)", what, sizes[k], rc);
        MPI_Request req;
        memset(b, 0, (size_t) cnt * sizeof(int));
        rc = MPI_Iallreduce(a, b, cnt, MPI_INT, MPI_SUM, c, &req);
        if (MPI_SUCCESS == rc) {
            rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        t_check(MPI_SUCCESS == rc && 0 == memcmp(b, want, (size_t) cnt * sizeof(int)),
                "%s: MPI_Iallreduce of %zu bytes wrong (rc=%d)", what, sizes[k], rc);
        if (sizes[k] < (1u << 20)) {
            continue;
        }
        for (int root = 0; root < n; root++) {
            memset(b, 0, (size_t) cnt * sizeof(int));
            rc = MPI_Reduce(a, b, cnt, MPI_INT, MPI_SUM, root, c);
            t_check(MPI_SUCCESS == rc
                        && (r != root || 0 == memcmp(b, want, (size_t) cnt * sizeof(int))),
                    "%s: MPI_Reduce of %zu bytes to %d wrong (rc=%d)", what, sizes[k], root,
                    rc);
            if (r == root) {
                memcpy(b, want, (size_t) cnt * sizeof(int));
            } else {
                memset(b, 0, (size_t) cnt * sizeof(int));
            }
            rc = MPI_Bcast(b, cnt, MPI_INT, root, c);
            t_check(MPI_SUCCESS == rc && 0 == memcmp(b, want, (size_t) cnt * sizeof(int)),
                    "%s: MPI_Bcast of %zu bytes from %d wrong (rc=%d)", what, sizes[k], root,
                    rc);
        }
    }
    free(a);
    free(b);
    free(want);
    free(tmp);
}

static void bound(void)
{
    unsigned long long budget = 0;
    int have = t_cvar_read_ull("coll_offload_shm_budget", &budget);
    if (t_opt.expect_offload) {
        t_check(have, "MPI_T cvar coll_offload_shm_budget not found");
    } else if (!have) {
        t_skip("segments within the budget: no coll_offload_shm_budget (the component is not "
               "there)");
    }
    /* Communicators of every size, one at a time, each one's segment told apart by
     * its address; the world's first (the dups' set-up talks on it). */
    MPI_Barrier(MPI_COMM_WORLD);
    int nsizes = t_wsize;
    MPI_Comm *comms = calloc((size_t) nsizes, sizeof(MPI_Comm));
    unsigned long *seg = calloc((size_t) nsizes, sizeof(unsigned long));
    for (int k = 0; k < nsizes; k++) {
        int size = t_wsize - k;   /* the world's size first, then smaller ones */
        seg_list_t before, after;
        segment_list(&before);
        /* members in reverse world order, so comm ranks differ from world ranks */
        MPI_Comm_split(MPI_COMM_WORLD, t_wrank < size ? 0 : MPI_UNDEFINED, -t_wrank,
                       &comms[k]);
        if (MPI_COMM_NULL != comms[k]) {
            MPI_Comm_set_errhandler(comms[k], MPI_ERRORS_RETURN);
            char what[64];
            snprintf(what, sizeof(what), "%d-rank communicator", size);
            drive(comms[k], what);
            segment_list(&after);
            seg[k] = new_segment(&before, &after);
            if (t_opt.expect_offload && size > 1) {
                t_check(0 != seg[k], "%s: no new coll_offload segment told apart in "
                        "/proc/self/maps", what);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* Every rank's pages are in by now: judge each communicator's segment. */
    seg_list_t all;
    segment_list(&all);
    double worst = 0;
    for (int k = 0; k < nsizes && have; k++) {
        int size = t_wsize - k;
        for (int i = 0; i < all.n && 0 != seg[k]; i++) {
            if (all.lo[i] != seg[k]) {
                continue;
            }
            double per_rank = (double) all.touched[i] / size;
            worst = per_rank > worst ? per_rank : worst;
            t_check(per_rank <= (double) budget,
                    "%d-rank communicator: its segment has %llu bytes touched, %.0f per rank, "
                    "over coll_offload_shm_budget %llu", size, all.touched[i], per_rank,
                    budget);
        }
    }
    double worst_all = 0;
    MPI_Reduce(&worst, &worst_all, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    t_note("  most touched per rank of one communicator: %.1f KiB (budget %.1f KiB)\n",
           worst_all / 1024, (double) budget / 1024);
    for (int k = 0; k < nsizes; k++) {
        if (MPI_COMM_NULL != comms[k]) {
            MPI_Comm_free(&comms[k]);
        }
    }
    free(comms);
    free(seg);
}

/* An allreduce on c, checked; returns whether the component ran it (MPI_T). */
static int offloaded_call(MPI_Comm c, t_pvar_t *pv, const char *what)
{
    unsigned long long off0, off1, fb0, fb1;
    int n, r;
    MPI_Comm_size(c, &n);
    MPI_Comm_rank(c, &r);
    long v[2] = { r + 1, 7 }, sum[2] = { 0, 0 };
    t_pvar_read(&pv[0], &off0);
    t_pvar_read(&pv[1], &fb0);
    int rc = MPI_Allreduce(v, sum, 2, MPI_LONG, MPI_SUM, c);
    t_pvar_read(&pv[0], &off1);
    t_pvar_read(&pv[1], &fb1);
    t_check(MPI_SUCCESS == rc && sum[0] == (long) n * (n + 1) / 2 && sum[1] == 7L * n,
            "%s: MPI_Allreduce gave %ld %ld (rc=%d)", what, sum[0], sum[1], rc);
    t_check(1 == (off1 - off0) + (fb1 - fb0), "%s: the allreduce counted %llu offloaded, %llu "
            "fallback", what, off1 - off0, fb1 - fb0);
    return 1 == off1 - off0;
}

/* Every rank's value of x (MPI_Allgather, not under test). */
static unsigned long long *gather_all(unsigned long long x)
{
    unsigned long long *all = malloc(sizeof(x) * (size_t) t_wsize);
    MPI_Allgather(&x, 1, MPI_UNSIGNED_LONG_LONG, all, 1, MPI_UNSIGNED_LONG_LONG,
                  MPI_COMM_WORLD);
    return all;
}

#define CAP_COMMS 6

static void cap(void)
{
    t_pvar_t pv[] = { { .name = "coll_offload_allreduce_offloaded" },
                      { .name = "coll_offload_allreduce_fallback" },
                      { .name = "coll_offload_shm_bytes" },
                      { .name = "coll_offload_shm_refused" } };
    const int npv = (int) (sizeof(pv) / sizeof(pv[0]));
    unsigned long long budget = 0, cap_bytes = 0;
    int have = t_cvar_read_ull("coll_offload_shm_budget", &budget)
               && t_cvar_read_ull("coll_offload_shm_cap", &cap_bytes);
    t_pvars_open(pv, npv);
    for (int k = 0; k < npv; k++) {
        have = have && pv[k].found;
    }
    if (t_opt.expect_offload) {
        t_check(have, "the component's cvars/pvars are not there");
    } else if (!have) {
        t_skip("the node-wide cap: the component's cvars/pvars are not there");
    }
    if (!have) {
        t_pvars_close(pv, npv);
        return;
    }
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int local = 0;
    MPI_Comm_size(node, &local);
    unsigned long long limit = cap_bytes / (unsigned long long) local;

    /* The warning goes to stderr: keep it in a file to count it. */
    fflush(stderr);
    char errname[] = "/tmp/t_shm_err.XXXXXX";
    int errfd = mkstemp(errname), saved = dup(2);
    if (errfd >= 0) {
        unlink(errname);
        dup2(errfd, 2);
    }
    unsigned long long refused0 = 0;
    t_pvar_read(&pv[3], &refused0);

    /* The lower half hold one communicator more than the upper half. */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, t_wrank < (t_wsize + 1) / 2 ? 0 : MPI_UNDEFINED, 0, &half);
    if (MPI_COMM_NULL != half) {
        MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
        offloaded_call(half, pv, "lower half");
    }
    MPI_Comm comms[CAP_COMMS + 1];
    unsigned long long share = 0;
    int nfit = 0, nrefused = 0, mixed = 0;
    for (int i = 0; i <= CAP_COMMS; i++) {
        if (CAP_COMMS == i) {
            /* give the first one that fitted back: one more fits again */
            unsigned long long held0, held1;
            t_pvar_read(&pv[2], &held0);
            MPI_Comm_free(&comms[0]);
            t_pvar_read(&pv[2], &held1);
            t_check(held0 - held1 == share, "a freed communicator gave %llu bytes back, its "
                    "share is %llu", held0 - held1, share);
        }
        unsigned long long held;
        t_pvar_read(&pv[2], &held);
        unsigned long long *helds = gather_all(held);
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]);
        MPI_Comm_set_errhandler(comms[i], MPI_ERRORS_RETURN);
        char what[64];
        snprintf(what, sizeof(what), "communicator %d", i + 1);
        int off = offloaded_call(comms[i], pv, what);
        unsigned long long after;
        t_pvar_read(&pv[2], &after);
        if (0 == share && off) {
            share = after - held;   /* every dup of the world has the same share */
            t_check(share > 0 && share <= budget, "%s: share %llu bytes, budget %llu", what,
                    share, budget);
        }
        unsigned long long *offs = gather_all((unsigned long long) off);
        int all_fit = 1, some_fit = 0, alike = 1;
        for (int q = 0; q < t_wsize; q++) {
            int fits = helds[q] + share <= limit;
            all_fit = all_fit && fits;
            some_fit = some_fit || fits;
            alike = alike && offs[q] == offs[0];
        }
        t_check(alike, "%s: offloaded on some ranks and not on others", what);
        if (0 != share) {
            t_check(off == all_fit, "%s: %s, but its share %llu %s under every rank's part of "
                    "the cap (%llu; this rank holds %llu)", what,
                    off ? "offloaded" : "fell back", share, all_fit ? "fits" : "does not fit",
                    limit, held);
            mixed += !all_fit && some_fit;
        }
        t_check(after - held == (off ? share : 0), "%s: holding grew by %llu bytes", what,
                after - held);
        nfit += off;
        nrefused += !off;
        free(helds);
        free(offs);
        /* a fallen-back communicator still computes right: several calls */
        for (int k = 0; k < 3; k++) {
            offloaded_call(comms[i], pv, what);
        }
    }
    unsigned long long refused1 = 0;
    t_pvar_read(&pv[3], &refused1);
    t_check(refused1 - refused0 == (unsigned long long) nrefused,
            "coll_offload_shm_refused grew by %llu, %d communicators fell back",
            refused1 - refused0, nrefused);
    /* The cap must have been exercised: some fitted, some did not, one of them
     * on some ranks only (the half communicator makes holdings differ). */
    t_check(nfit >= 2 && nrefused >= 2 && mixed >= 1,
            "coll_offload_shm_cap %llu does not exercise the cap here: %d fitted, %d fell "
            "back, %d on some ranks only", cap_bytes, nfit, nrefused, mixed);

    /* Count the warnings, then give stderr back and show what it got. */
    fflush(stderr);
    int warnings = 0;
    if (errfd >= 0) {
        dup2(saved, 2);
        char buf[8192];
        ssize_t got;
        lseek(errfd, 0, SEEK_SET);
        char *text = calloc(1, 1 << 16);
        size_t len = 0;
        while ((got = read(errfd, buf, sizeof(buf))) > 0 && len + (size_t) got < (1 << 16)) {
            memcpy(text + len, buf, (size_t) got);
            len += (size_t) got;
        }
        for (char *at = text; NULL != (at = strstr(at, "pass coll_offload_shm_cap")); at++) {
            warnings++;
        }
        fputs(text, stderr);
        free(text);
        close(errfd);
    }
    close(saved);
    unsigned long long *warned = gather_all((unsigned long long) warnings);
    unsigned long long total = 0;
    for (int q = 0; q < t_wsize; q++) {
        total += warned[q];
    }
    free(warned);
    /* every communicator here has world rank 0 as its rank 0, which warns */
    t_check(1 == total && (0 != t_wrank || 1 == warnings),
            "the warning naming coll_offload_shm_cap came %llu times (%d here)", total,
            warnings);
    t_note("  share %llu bytes per rank, %llu per process under the cap: %d communicators "
           "offloaded, %d fell back (%d because of some ranks only)\n",
           share, limit, nfit, nrefused, mixed);
    for (int i = 1; i <= CAP_COMMS; i++) {
        MPI_Comm_free(&comms[i]);
    }
    if (MPI_COMM_NULL != half) {
        MPI_Comm_free(&half);
    }
    MPI_Comm_free(&node);
    t_pvars_close(pv, npv);
}

static void report(int ncomms)
{
    MPI_Comm *comms = calloc((size_t) ncomms, sizeof(MPI_Comm));
    MPI_Barrier(MPI_COMM_WORLD);
    shm_use_t use0 = segment_use();
    long long shmem0 = node_shmem();
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < ncomms; i++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]);
        MPI_Comm_set_errhandler(comms[i], MPI_ERRORS_RETURN);
        use_1mib(comms[i], "report");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    shm_use_t use = segment_use();
    long long shmem = node_shmem();
    double per_comm = (double) (use.touched - use0.touched) / ncomms;
    t_note("np %d, %d communicators: segments %d, touched %.1f KiB per communicator, "
           "%.1f KiB per rank per communicator (largest segment %.1f KiB); node Shmem "
           "+%.1f KiB per communicator\n",
           t_wsize, ncomms, use.segments - use0.segments, per_comm / 1024,
           per_comm / t_wsize / 1024, (double) use.largest / 1024,
           (double) (shmem - shmem0) / ncomms / 1024);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < ncomms; i++) {
        MPI_Comm_free(&comms[i]);
    }
    free(comms);
}

int main(int argc, char **argv)
{
    /* The mode and its argument come first; the usual options follow. */
    const char *mode = argc > 1 ? argv[1] : "";
    int arg = argc > 2 ? atoi(argv[2]) : 0;
    int skip = 0 == strcmp(mode, "report") ? 2 : 1;
    if (argc <= skip) {
        skip = argc - 1;
    }
    argv[skip] = argv[0];
    argc -= skip;
    argv += skip;
    t_init(&argc, &argv, "t_shm");
    if (0 == strcmp(mode, "report")) {
        report(arg > 0 ? arg : 8);
    } else if (0 == strcmp(mode, "bound")) {
        t_section_begin("touched memory per rank within the budget");
        bound();
        t_section_end();
    } else if (0 == strcmp(mode, "cap")) {
        t_section_begin("node-wide cap");
        cap();
        t_section_end();
    } else {
        t_check(0, "unknown mode '%s' (report N, bound, cap)", mode);
    }
    return t_finish();
}
