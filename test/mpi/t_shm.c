/*
 * t_shm: the shared memory a communicator costs on the node.
 *
 * Every communicator of coll/offload maps one segment, visible in
 * /proc/self/maps as /dev/shm/coll_offload.* (deleted once every rank attached).
 * Its touched memory is measured here independently of the component: mincore()
 * on our own mapping of it says which of its pages exist in the shared-memory
 * object, whichever rank touched them.
 *
 *   t_shm report N  N communicators (dups of MPI_COMM_WORLD), on each one 1 MiB
 *                   MPI_Allreduce, MPI_Bcast and MPI_Reduce; prints the touched
 *                   bytes of their segments per communicator and per rank, and the
 *                   growth of the node's Shmem (/proc/meminfo; other jobs on the
 *                   node disturb it) per communicator. No checks but the results.
 */
#include "t_common.h"

#include <sys/mman.h>

#define MIB (1024 * 1024)

typedef struct {
    unsigned long long touched;   /* bytes of resident pages, all segments */
    unsigned long long largest;   /* the most touched segment */
    int segments;
} shm_use_t;

/* Sums mincore() over every coll_offload segment this process maps. */
static shm_use_t segment_use(void)
{
    shm_use_t use = { 0, 0, 0 };
    FILE *f = fopen("/proc/self/maps", "r");
    if (NULL == f) {
        return use;
    }
    long page = sysconf(_SC_PAGESIZE);
    char line[512];
    while (NULL != fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        if (NULL == strstr(line, "/coll_offload.") || 2 != sscanf(line, "%lx-%lx", &lo, &hi)) {
            continue;
        }
        size_t pages = (hi - lo) / (unsigned long) page;
        unsigned char *vec = malloc(pages ? pages : 1);
        if (NULL == vec || 0 != mincore((void *) lo, hi - lo, vec)) {
            free(vec);
            continue;
        }
        unsigned long long bytes = 0;
        for (size_t i = 0; i < pages; i++) {
            bytes += (vec[i] & 1) ? (unsigned long long) page : 0;
        }
        free(vec);
        use.touched += bytes;
        use.largest = bytes > use.largest ? bytes : use.largest;
        use.segments++;
    }
    fclose(f);
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
    } else {
        t_check(0, "unknown mode '%s' (report N)", mode);
    }
    return t_finish();
}
