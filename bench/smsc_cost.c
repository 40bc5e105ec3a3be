/*
 * Copyright (c) 2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * smsc_cost: what Open MPI 5's smsc and shmem frameworks would cost coll/offload,
 * measured against what coll/offload does itself. Two ranks on one node.
 *
 * 1. Single copy. Rank 1 reads a buffer of rank 0 (coll/offload's bcast "get") of 8 B,
 *    64 B, 4 KiB, 64 KiB and 1 MiB, in two ways taken in turn: through smsc (the module
 *    Open MPI selected; on Debian only cma is built): mca_smsc->get_endpoint once, then
 *    mca_smsc->copy_from per copy; and by process_vm_readv directly, in the loop of
 *    src/nic/softnic.c. A sample is a batch of copies, timed and divided; the two ways
 *    alternate sample by sample (which goes first too), so both see the same load. Prints
 *    per size the median ns per copy of each, the median of the paired differences (smsc
 *    minus direct) and their 25th-75th percentiles; a copy of each way is checked.
 *
 * 2. Segments. A 2 MiB segment made by rank 0, handed to rank 1 by one message, attached
 *    there, acknowledged, then released everywhere, in three ways taken in turn:
 *    coll/offload's (a memfd reopened through /proc/<pid>/fd/<fd>, no name at any time),
 *    coll/offload's named fallback (shm_open; the attacher unlinks at once) and the shmem
 *    framework's selected component (opal_shmem_segment_create + attach, then
 *    opal_shmem_unlink; choose one with --mca shmem mmap|posix|sysv). Prints rank 0's
 *    median time to make and map the segment and for the whole cycle, next to a bare
 *    message round trip. Then rank 0 forks a child per way that makes a segment and is
 *    killed (SIGKILL) before anything is unlinked, and says whether a name or segment
 *    outlived it (and removes it).
 *
 * Build: it needs Open MPI 5's internal headers (opal/mca/smsc, opal/mca/shmem,
 * ompi/communicator), so it is built by hand, not by the project's Makefile. With
 * Debian 13's libopenmpi-dev, whose missing headers come from an Open MPI source tree
 * of the same version (as configure's --with-ompi-extra-headers), as root of such a
 * system or in a chroot of one:
 *
 *   S=/build/ompi-src/openmpi-5.0.7
 *   mpicc -O2 -o smsc_cost bench/smsc_cost.c -idirafter $S -idirafter $S/opal/include \
 *       -idirafter $S/ompi/include $(pkg-config --cflags pmix) -lopen-pal
 *
 * Run (two cores; mpirun binds each rank to one by default; in a chroot, with /proc, /sys,
 * /dev, /dev/shm and /dev/pts bind-mounted, and --mca btl ^tcp, see
 * contrib/run-tests-other-ompi.sh):
 *
 *   mpirun -np 2 --report-bindings [--mca shmem mmap|posix|sysv] ./smsc_cost [SAMPLES [CYCLES]]
 *
 * SAMPLES (default 1001) batches per size and way, CYCLES (default 401) per segment way.
 * Whatever the crash test finds left it removes. Not so Open MPI's own: with --mca shmem
 * posix, Open MPI 5.0.7's btl/sm leaves its segments (/dev/shm/open_mpi.NNNN) after a clean
 * run; remove them by hand.
 */
#define _GNU_SOURCE
#include "ompi_config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/proc/proc.h"
#include "opal/mca/shmem/base/base.h"
#include "opal/mca/shmem/shmem.h"
#include "opal/mca/smsc/smsc.h"

#define MAX_BYTES (1u << 20)
#define SEG_BYTES (2u << 20)
#define TAG 77

static int samples = 1001;
static int cycles = 401;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec * 1e9 + (double) ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

/* The q-quantile of v[0..n) (sorts v). */
static double quantile(double *v, int n, double q)
{
    qsort(v, (size_t) n, sizeof(*v), cmp_double);
    return v[(int) (q * (n - 1) + 0.5)];
}

static void die(const char *what)
{
    fprintf(stderr, "smsc_cost: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* ---- 1. single copy ----------------------------------------------------------------- */

/* coll/offload's read: process_vm_readv until all of it has come. */
static int direct_read(pid_t pid, void *dst, uint64_t addr, size_t len)
{
    size_t done = 0;
    while (done < len) {
        struct iovec local = { .iov_base = (char *) dst + done, .iov_len = len - done };
        struct iovec remote = { .iov_base = (void *) (uintptr_t) (addr + done),
                                .iov_len = len - done };
        ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n <= 0) {
            return -1;
        }
        done += (size_t) n;
    }
    return 0;
}

static unsigned char pattern(size_t i)
{
    return (unsigned char) (i * 131u + 7u);
}

static int check(const unsigned char *dst, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (dst[i] != pattern(i)) {
            return -1;
        }
    }
    return 0;
}

/* One batch of `batch` copies of `len` bytes one way (0 smsc, 1 direct): ns per copy. */
static double batch_ns(int way, mca_smsc_endpoint_t *ep, pid_t pid, void *dst, uint64_t addr,
                       size_t len, int batch)
{
    double t0 = now_ns();
    for (int b = 0; b < batch; b++) {
        int rc = 0 == way ? mca_smsc->copy_from(ep, dst, (void *) (uintptr_t) addr, len, NULL)
                          : direct_read(pid, dst, addr, len);
        if (0 != rc) {
            die(0 == way ? "mca_smsc->copy_from failed" : "process_vm_readv failed");
        }
    }
    return (now_ns() - t0) / batch;
}

/* One row of the table: `len` bytes both ways, alternated; t[2][samples], diff[samples]
 * are scratch. */
static void measure_size(mca_smsc_endpoint_t *ep, pid_t pid, unsigned char *buf, uint64_t addr,
                         size_t len, double *t[2], double *diff)
{
    int batch = len <= 4096 ? 64 : len <= 65536 ? 16 : 2;
    for (int w = 0; w < 20; w++) {
        batch_ns(w & 1, ep, pid, buf, addr, len, batch);
    }
    for (int s = 0; s < samples; s++) {
        for (int i = 0; i < 2; i++) {
            int way = i ^ (s & 1);
            t[way][s] = batch_ns(way, ep, pid, buf, addr, len, batch);
        }
        diff[s] = t[0][s] - t[1][s];
    }
    for (int way = 0; way < 2; way++) {
        memset(buf, 0, len);
        batch_ns(way, ep, pid, buf, addr, len, 1);
        if (0 != check(buf, len)) {
            die(0 == way ? "smsc copy: wrong data" : "direct copy: wrong data");
        }
    }
    double m0 = quantile(t[0], samples, 0.5), m1 = quantile(t[1], samples, 0.5);
    double d25 = quantile(diff, samples, 0.25), d50 = quantile(diff, samples, 0.5);
    double d75 = quantile(diff, samples, 0.75);
    printf("%8zu %6d %7d %12.1f %12.1f %12.1f %9.1f..%-9.1f\n", len, batch, samples, m0, m1, d50,
           d25, d75);
}

static void copy_part(int rank)
{
    static const size_t sizes[] = { 8, 64, 4096, 65536, MAX_BYTES };
    unsigned char *buf = aligned_alloc(4096, MAX_BYTES);
    uint64_t where[2];
    if (NULL == buf) {
        die("out of memory");
    }
    if (0 == rank) {
        for (size_t i = 0; i < MAX_BYTES; i++) {
            buf[i] = pattern(i);
        }
        where[0] = (uint64_t) (uintptr_t) buf;
        where[1] = (uint64_t) getpid();
        MPI_Send(where, 2, MPI_UINT64_T, 1, TAG, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        free(buf);
        return;
    }
    MPI_Recv(where, 2, MPI_UINT64_T, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    memset(buf, 0, MAX_BYTES);
    pid_t pid = (pid_t) where[1];
    if (NULL == mca_smsc) {
        die("no smsc module selected (mca_smsc is NULL)");
    }
    Dl_info info;
    const char *impl = 0 != dladdr((void *) mca_smsc->copy_from, &info) && info.dli_sname
                           ? info.dli_sname
                           : "?";
    ompi_proc_t *proc = ompi_comm_peer_lookup(&ompi_mpi_comm_world.comm, 0);
    double t0 = now_ns();
    mca_smsc_endpoint_t *ep = mca_smsc->get_endpoint(&proc->super);
    double t_ep = now_ns() - t0;
    if (NULL == ep) {
        die("mca_smsc->get_endpoint returned NULL");
    }
    printf("single copy: rank 1 reads rank 0 (pid %d); mca_smsc->copy_from is %s, features "
           "0x%llx; get_endpoint took %.0f ns (once)\n",
           (int) pid, impl, (unsigned long long) mca_smsc->features, t_ep);
    printf("%8s %6s %7s %12s %12s %12s %20s\n", "bytes", "batch", "samples", "smsc ns",
           "direct ns", "diff ns", "diff p25..p75 ns");
    double *t[2], *diff;
    t[0] = malloc(sizeof(double) * (size_t) samples);
    t[1] = malloc(sizeof(double) * (size_t) samples);
    diff = malloc(sizeof(double) * (size_t) samples);
    if (NULL == t[0] || NULL == t[1] || NULL == diff) {
        die("out of memory");
    }
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        measure_size(ep, pid, buf, where[0], sizes[k], t, diff);
    }
    mca_smsc->return_endpoint(ep);
    free(t[0]);
    free(t[1]);
    free(diff);
    free(buf);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- 2. segments -------------------------------------------------------------------- */

enum { SEG_MEMFD, SEG_NAMED, SEG_OPAL, SEG_NONE, SEG_WAYS };
static const char *const seg_way_name[SEG_WAYS]
    = { "offload memfd", "offload named", "opal_shmem", "message only" };

/* What rank 0 sends: where the segment is (the opal_shmem_ds_t, up to its name, last). */
typedef struct {
    int32_t pid;
    int32_t fd;
    char name[56];
    opal_shmem_ds_t ds;
} seg_msg_t;

#define SEG_MSG_FIXED offsetof(seg_msg_t, ds)

/* Rank 0's side while the segment exists. */
typedef struct {
    void *mem;
    int keep;   /* memfd: the descriptor rank 0 keeps until everyone attached */
} seg_own_t;

static void *map_fd(int fd, int create)
{
    if (create && 0 != ftruncate(fd, SEG_BYTES)) {
        close(fd);
        return NULL;
    }
    if (!create) {
        struct stat st;
        if (0 != fstat(fd, &st) || SEG_BYTES != st.st_size) {
            close(fd);
            return NULL;
        }
    }
    void *mem = mmap(NULL, SEG_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return MAP_FAILED == mem ? NULL : mem;
}

/* Rank 0 (or the crash test's child): make and map a segment; fill *msg. Returns 0. */
static int seg_create(int way, seg_msg_t *msg, seg_own_t *own, unsigned serial)
{
    msg->pid = (int32_t) getpid();
    msg->fd = -1;
    msg->name[0] = '\0';
    own->mem = NULL;
    own->keep = -1;
    if (SEG_MEMFD == way) {
        int fd = memfd_create("smsc_cost", MFD_CLOEXEC);
        if (fd < 0) {
            return -1;
        }
        own->keep = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        own->mem = map_fd(fd, 1);
        msg->fd = own->keep;
    } else if (SEG_NAMED == way) {
        snprintf(msg->name, sizeof(msg->name), "/smsc_cost.%d.%u", (int) getpid(), serial);
        int fd = shm_open(msg->name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0) {
            return -1;
        }
        own->mem = map_fd(fd, 1);
    } else if (SEG_OPAL == way) {
        char path[96];
        snprintf(path, sizeof(path), "/dev/shm/smsc_cost.%d.%u", (int) getpid(), serial);
        if (OPAL_SUCCESS != opal_shmem_segment_create(&msg->ds, path, SEG_BYTES)) {
            return -1;
        }
        own->mem = opal_shmem_segment_attach(&msg->ds);
    } else {
        return 0;
    }
    if (NULL == own->mem) {
        return -1;
    }
    /* a word for the attacher to check, past opal_shmem's header */
    ((volatile uint64_t *) own->mem)[SEG_BYTES / 16] = 0x5eed0000u + serial;
    return 0;
}

/* Rank 1: attach, check the word, detach (the named way unlinks right after opening). */
static int seg_attach(int way, seg_msg_t *msg, unsigned serial)
{
    void *mem = NULL;
    if (SEG_MEMFD == way) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int) msg->pid, (int) msg->fd);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        mem = fd < 0 ? NULL : map_fd(fd, 0);
    } else if (SEG_NAMED == way) {
        int fd = shm_open(msg->name, O_RDWR, 0600);
        if (fd >= 0) {
            shm_unlink(msg->name);
        }
        mem = fd < 0 ? NULL : map_fd(fd, 0);
    } else if (SEG_OPAL == way) {
        mem = opal_shmem_segment_attach(&msg->ds);
    } else {
        return 0;
    }
    if (NULL == mem || ((volatile uint64_t *) mem)[SEG_BYTES / 16] != 0x5eed0000u + serial) {
        return -1;
    }
    if (SEG_OPAL == way) {
        opal_shmem_segment_detach(&msg->ds);
    } else {
        munmap(mem, SEG_BYTES);
    }
    return 0;
}

/* Rank 0 after the acknowledgement: drop the descriptor or the name, unmap. */
static void seg_finish(int way, seg_msg_t *msg, seg_own_t *own)
{
    if (SEG_MEMFD == way) {
        close(own->keep);
        munmap(own->mem, SEG_BYTES);
    } else if (SEG_NAMED == way) {
        shm_unlink(msg->name);   /* ENOENT: the attacher did */
        munmap(own->mem, SEG_BYTES);
    } else if (SEG_OPAL == way) {
        opal_shmem_unlink(&msg->ds);
        opal_shmem_segment_detach(&msg->ds);
    }
}

static int seg_msg_bytes(int way, const seg_msg_t *msg)
{
    return (int) (SEG_OPAL == way ? SEG_MSG_FIXED + opal_shmem_sizeof_shmem_ds(&msg->ds)
                                  : SEG_MSG_FIXED);
}

static const char *opal_shmem_name(void)
{
    return NULL != opal_shmem_base_component
               ? opal_shmem_base_component->base_version.mca_component_name
               : "none";
}

/* Rank 0: a child makes a segment and is killed before any unlink; what is left? */
static void crash_test(void)
{
    seg_msg_t *shared = mmap(NULL, sizeof(seg_msg_t), PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (MAP_FAILED == shared) {
        die("mmap");
    }
    printf("killed after create, before any unlink:\n");
    for (int way = SEG_MEMFD; way <= SEG_OPAL; way++) {
        memset(shared, 0, sizeof(*shared));
        shared->fd = -2;
        fflush(stdout);
        pid_t child = fork();
        if (0 == child) {
            seg_msg_t msg;
            seg_own_t own;
            memset(&msg, 0, sizeof(msg));
            if (0 == seg_create(way, &msg, &own, 999u)) {
                memcpy(shared, &msg, sizeof(msg));
            }
            raise(SIGKILL);
            _exit(1);
        }
        int status;
        waitpid(child, &status, 0);
        char path[OPAL_PATH_MAX + 16];
        char what[sizeof(path) + 64];
        struct stat st;
        if (-2 == shared->fd) {
            snprintf(what, sizeof(what), "create failed in the child");
        } else if (SEG_MEMFD == way) {
            snprintf(what, sizeof(what), "nothing: a memfd has no name, its last reference died");
        } else if (SEG_NAMED == way) {
            snprintf(path, sizeof(path), "/dev/shm%s", shared->name);
            int left = 0 == stat(path, &st);
            snprintf(what, sizeof(what), "%s%s", left ? "LEFT: " : "nothing: ", path);
            if (left) {
                shm_unlink(shared->name);
            }
        } else if (0 == strcmp(opal_shmem_name(), "sysv")) {
            struct shmid_ds sd;
            int left = 0 == shmctl(shared->ds.seg_id, IPC_STAT, &sd);
            snprintf(what, sizeof(what), "%s System V segment id %d", left ? "LEFT:" : "nothing:",
                     shared->ds.seg_id);
            if (left) {
                shmctl(shared->ds.seg_id, IPC_RMID, NULL);
            }
        } else {
            /* posix: a name under /dev/shm; mmap: the file path given to create */
            if ('/' == shared->ds.seg_name[0] && NULL == strchr(shared->ds.seg_name + 1, '/')) {
                snprintf(path, sizeof(path), "/dev/shm%s", shared->ds.seg_name);
            } else {
                snprintf(path, sizeof(path), "%s", shared->ds.seg_name);
            }
            int left = 0 == stat(path, &st);
            snprintf(what, sizeof(what), "%s%s (%lld bytes)", left ? "LEFT: " : "nothing: ", path,
                     left ? (long long) st.st_size : 0ll);
            if (left) {
                unlink(path);
            }
        }
        printf("  %-15s %s%s%s\n", seg_way_name[way], what,
               SEG_OPAL == way ? ", component " : "", SEG_OPAL == way ? opal_shmem_name() : "");
    }
    munmap(shared, sizeof(seg_msg_t));
}

static void segment_part(int rank)
{
    seg_msg_t msg;
    seg_own_t own;
    double *create[SEG_WAYS], *cycle[SEG_WAYS];
    for (int way = 0; way < SEG_WAYS; way++) {
        create[way] = malloc(sizeof(double) * (size_t) cycles);
        cycle[way] = malloc(sizeof(double) * (size_t) cycles);
        if (NULL == create[way] || NULL == cycle[way]) {
            die("out of memory");
        }
    }
    int warm = 10;
    unsigned serial = 0;
    for (int c = -warm; c < cycles; c++) {
        for (int i = 0; i < SEG_WAYS; i++) {
            int way = (i + (c < 0 ? 0 : c)) % SEG_WAYS;
            int ok = 1;
            serial++;
            memset(&msg, 0, SEG_MSG_FIXED);
            if (0 == rank) {
                double t0 = now_ns();
                if (0 != seg_create(way, &msg, &own, serial)) {
                    die("segment create failed");
                }
                double t1 = now_ns();
                MPI_Send(&msg, seg_msg_bytes(way, &msg), MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
                MPI_Recv(&ok, 1, MPI_INT, 1, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                seg_finish(way, &msg, &own);
                double t2 = now_ns();
                if (!ok) {
                    die("rank 1 could not attach");
                }
                if (c >= 0) {
                    create[way][c] = t1 - t0;
                    cycle[way][c] = t2 - t0;
                }
            } else {
                MPI_Recv(&msg, (int) sizeof(msg), MPI_BYTE, 0, TAG, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                ok = 0 == seg_attach(way, &msg, serial);
                MPI_Send(&ok, 1, MPI_INT, 0, TAG, MPI_COMM_WORLD);
            }
        }
    }
    if (0 == rank) {
        printf("segments of %u bytes, np 2, %d cycles per way, opal_shmem component: %s\n",
               SEG_BYTES, cycles, opal_shmem_name());
        printf("%-15s %16s %24s\n", "way", "create+map ns", "create..all released ns");
        for (int way = 0; way < SEG_WAYS; way++) {
            printf("%-15s %16.0f %24.0f\n", seg_way_name[way], quantile(create[way], cycles, 0.5),
                   quantile(cycle[way], cycles, 0.5));
        }
        crash_test();
    }
    for (int way = 0; way < SEG_WAYS; way++) {
        free(create[way]);
        free(cycle[way]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (2 != size) {
        if (0 == rank) {
            fprintf(stderr, "smsc_cost: run it with exactly 2 ranks on one node\n");
        }
        MPI_Finalize();
        return 1;
    }
    if (argc > 1) {
        samples = atoi(argv[1]) > 0 ? atoi(argv[1]) : samples;
    }
    if (argc > 2) {
        cycles = atoi(argv[2]) > 0 ? atoi(argv[2]) : cycles;
    }
    if (0 == rank) {
        printf("smsc_cost: %s\n", OMPI_VERSION);
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    copy_part(rank);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    segment_part(rank);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
