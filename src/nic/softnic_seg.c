/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the software NIC's segment (see softnic.h): its geometry and
 * what fits a budget, making it (anonymous or named) and attaching to it,
 * sealing the pids, the single-copy probe, sweeping stale names, detaching.
 * The data path is softnic.c.
 */
#include "nic/softnic_int.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <linux/memfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* Header, bells, call records, counters and board: everything before the mailboxes. */
static uint64_t fixed_bytes(int size, uint64_t *bells, uint64_t *records, uint64_t *counters,
                            uint64_t *board)
{
    uint64_t page = page_bytes();
    *bells = round_up(sizeof(softnic_hdr_t) + sizeof(int32_t) * (size_t) size, LINE);
    *records = *bells + (uint64_t) size * LINE;
    *counters = round_up(*records + (uint64_t) size * RECORDS * 16, page);
    *board = *counters + (uint64_t) size * (uint64_t) size * OFL_CHANNELS * LINE;
    return round_up(*board + (uint64_t) size * OFL_BOARD_DEPTH * BOARD_LINES * LINE, page);
}

static void geometry(ofl_softnic_t *nic, int size, int slots, size_t segsize)
{
    nic->base.size = size;
    nic->base.slots = slots;
    nic->base.slot_bytes = round_up(segsize ? segsize : 1, LINE);
    nic->base.board_bytes = BOARD_LINES * OFL_BOARD_LINE_BYTES;
    nic->slot_stride = round_up(STAMP + nic->base.slot_bytes, LINE);
    nic->stream_stride = round_up((uint64_t) slots * nic->slot_stride, page_bytes());
    nic->off_mbox = fixed_bytes(size, &nic->off_bells, &nic->off_records, &nic->off_counters,
                                &nic->off_board);
    nic->len = nic->off_mbox
               + (uint64_t) size * (uint64_t) size * OFL_CHANNELS * nic->stream_stride;
}

size_t ofl_softnic_bytes(int size, int slots, size_t segsize)
{
    ofl_softnic_t tmp;
    geometry(&tmp, size, slots, segsize);
    return tmp.len;
}

size_t ofl_softnic_share(int size, int slots, int streams, size_t segsize)
{
    ofl_softnic_t tmp;
    geometry(&tmp, size, slots, segsize);
    uint64_t fixed = (tmp.off_mbox + (uint64_t) size - 1) / (uint64_t) size;
    return fixed + (uint64_t) (streams > 0 ? streams : 0) * tmp.stream_stride;
}

size_t ofl_softnic_fit(int size, int slots, int streams, size_t budget, size_t max_slot)
{
    uint64_t bells, records, counters, board;
    if (size < 1 || slots < 1) {
        return 0;
    }
    uint64_t fixed = (fixed_bytes(size, &bells, &records, &counters, &board) + (uint64_t) size - 1)
                     / (uint64_t) size;
    uint64_t max = round_up(max_slot ? max_slot : 1, LINE);
    if (streams < 1) {
        return fixed <= budget ? (size_t) max : 0;
    }
    uint64_t page = page_bytes();
    if (fixed > budget) {
        return 0;
    }
    /* Each stream is a whole number of pages; its slots share them. */
    uint64_t stream = (budget - fixed) / (uint64_t) streams / page * page;
    uint64_t stride = stream / (uint64_t) slots / LINE * LINE;
    if (stride < STAMP + LINE) {
        return 0;
    }
    uint64_t payload = stride - round_up(STAMP, LINE);
    return (size_t) (payload < max ? payload : max);
}

/* Map the segment behind fd (ours to close); `create`: size and initialise it. */
static int map_fd(ofl_softnic_t *nic, int fd, int create)
{
    if (create && 0 != ftruncate(fd, (off_t) nic->len)) {
        int err = errno;
        close(fd);
        return -err;
    }
    if (!create) {
        struct stat st;
        if (0 != fstat(fd, &st) || (uint64_t) st.st_size != nic->len) {
            close(fd);
            return -EINVAL;
        }
    }
    void *mem = mmap(NULL, nic->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err = errno;
    close(fd);
    if (MAP_FAILED == mem) {
        return -err;
    }
    nic->mem = mem;
    return 0;
}

/* How the segment is found: by name, a new anonymous one, or a peer's
 * anonymous one reopened through /proc. */
typedef struct {
    const char *name;     /* named: the /dev/shm name */
    int *anon_fd;         /* create anonymous: out, the descriptor the creator keeps */
    int pid;              /* attach anonymous: the creator's process and descriptor */
    int fd;
    int unlink_last;      /* attach named: the last of the others to attach unlinks */
} where_t;

static int open_segment(ofl_softnic_t *nic, const where_t *w, int create)
{
    int fd;
    if (NULL != w->name) {
        fd = shm_open(w->name, create ? (O_CREAT | O_EXCL | O_RDWR) : O_RDWR, 0600);
        if (fd < 0) {
            return -errno;
        }
        int rc = map_fd(nic, fd, create);
        if (0 != rc && create) {
            shm_unlink(w->name);
        }
        return rc;
    }
    if (create) {
        /* Never named: nothing to unlink, nothing left behind by a crash. */
        fd = (int) syscall(SYS_memfd_create, "coll_offload", MFD_CLOEXEC);
        if (fd < 0) {
            return -errno;
        }
        int keep = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (keep < 0) {
            int err = errno;
            close(fd);
            return -err;
        }
        int rc = map_fd(nic, fd, 1);
        if (0 != rc) {
            close(keep);
            return rc;
        }
        *w->anon_fd = keep;
        return 0;
    }
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", w->pid, w->fd);
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return -errno;
    }
    return map_fd(nic, fd, 0);
}

static int setup(ofl_softnic_t *nic, const where_t *w, int size, int rank, int slots,
                 size_t segsize, int create)
{
    int owned = nic->owned;
    memset(nic, 0, sizeof(*nic));
    nic->owned = owned;
    /* the ops from the start, so that close works on a failed attach too */
    nic->base.ops = &ofl_softnic_ops;
    if (size < 1 || rank < 0 || rank >= size || slots < 1) {
        return -EINVAL;
    }
    geometry(nic, size, slots, segsize);
    nic->base.ops = &ofl_softnic_ops;
    nic->base.rank = rank;
    size_t streams = (size_t) size * OFL_CHANNELS;
    nic->credit_seen = calloc(3 * streams, sizeof(uint64_t));
    if (NULL == nic->credit_seen) {
        return -ENOMEM;
    }
    nic->data_put = nic->credit_seen + streams;
    nic->credit_given = nic->credit_seen + 2 * streams;
    int rc = open_segment(nic, w, create);
    if (0 != rc) {
        free(nic->credit_seen);
        nic->credit_seen = nic->data_put = nic->credit_given = NULL;
        return rc;
    }
    nic->base.own_records = ofl_softnic_record_at(nic, rank, 0);
    softnic_hdr_t *h = (softnic_hdr_t *) nic->mem;
    if (create) {
        h->size = (uint32_t) size;
        h->slots = (uint32_t) slots;
        h->slot_bytes = nic->base.slot_bytes;
        h->total = nic->len;
        atomic_store(&h->poison, 0);
        atomic_store(&h->attached, 0);
        atomic_store(&h->mismatch, 0);
        atomic_store_explicit((_Atomic uint64_t *) &h->magic, SOFTNIC_MAGIC,
                              memory_order_release);
    } else if (SOFTNIC_MAGIC
                   != atomic_load_explicit((_Atomic uint64_t *) &h->magic, memory_order_acquire)
               || h->size != (uint32_t) size || h->slots != (uint32_t) slots
               || h->slot_bytes != nic->base.slot_bytes || h->total != nic->len) {
        ofl_softnic_detach(nic);
        return -EINVAL;
    }
    h->pid[rank] = (int32_t) getpid();
    if (!create && w->unlink_last
        && (uint32_t) size - 1 == atomic_fetch_add(&h->attached, 1) + 1) {
        /* The last rank in removes the name at once: the window in which a
         * crash leaves a file ends here, not at the creator's next step. */
        shm_unlink(w->name);
    }
    return 0;
}

int ofl_softnic_create(ofl_softnic_t *nic, const char *name, int size, int rank, int slots,
                       size_t segsize)
{
    where_t w = { .name = name };
    if (NULL == name) {
        return -EINVAL;
    }
    return setup(nic, &w, size, rank, slots, segsize, 1);
}

int ofl_softnic_attach(ofl_softnic_t *nic, const char *name, int size, int rank, int slots,
                       size_t segsize)
{
    where_t w = { .name = name };
    if (NULL == name) {
        return -EINVAL;
    }
    return setup(nic, &w, size, rank, slots, segsize, 0);
}

int ofl_softnic_attach_unlink(ofl_softnic_t *nic, const char *name, int size, int rank,
                              int slots, size_t segsize)
{
    where_t w = { .name = name, .unlink_last = 1 };
    if (NULL == name) {
        return -EINVAL;
    }
    return setup(nic, &w, size, rank, slots, segsize, 0);
}

ofl_softnic_t *ofl_softnic_new(void)
{
    /* Read on every call's hot path: whole cache lines of its own, so that no
     * other allocation's writes share them. */
    size_t bytes = (sizeof(ofl_softnic_t) + LINE - 1) / LINE * LINE;
    ofl_softnic_t *nic = aligned_alloc(LINE, bytes);
    if (NULL != nic) {
        memset(nic, 0, bytes);
        nic->base.ops = &ofl_softnic_ops;
        nic->owned = 1;
    }
    return nic;
}

int ofl_softnic_create_anon(ofl_softnic_t *nic, int *fd, int size, int rank, int slots,
                            size_t segsize)
{
    where_t w = { .anon_fd = fd };
    *fd = -1;
    return setup(nic, &w, size, rank, slots, segsize, 1);
}

int ofl_softnic_attach_anon(ofl_softnic_t *nic, int pid, int fd, int size, int rank, int slots,
                            size_t segsize)
{
    where_t w = { .pid = pid, .fd = fd };
    return setup(nic, &w, size, rank, slots, segsize, 0);
}

int ofl_softnic_seal(ofl_softnic_t *nic)
{
    int size = nic->base.size;
    int32_t *pid = malloc(sizeof(int32_t) * (size_t) size);
    if (NULL == pid) {
        return -ENOMEM;
    }
    const softnic_hdr_t *h = (const softnic_hdr_t *) nic->mem;
    for (int r = 0; r < size; ++r) {
        pid[r] = ((const volatile int32_t *) h->pid)[r];
        if (pid[r] <= 0) {
            free(pid);
            return -EPROTO;
        }
    }
    free(nic->pid);
    nic->pid = pid;
    return 0;
}

int ofl_softnic_probe_get(ofl_softnic_t *nic, int peer, const void *addr, uint64_t expect)
{
    pid_t pid = peer_pid(nic, peer);
    if (pid <= 0) {
        return -ESRCH;
    }
    uint64_t v = 0;
    struct iovec local = { .iov_base = &v, .iov_len = sizeof(v) };
    struct iovec remote = { .iov_base = (void *) addr, .iov_len = sizeof(v) };
    ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n < 0) {
        return -errno;
    }
    if (sizeof(v) != (size_t) n) {
        return -EFAULT;   /* a short read (the word runs into unreadable memory) sets no errno */
    }
    return v == expect ? 0 : -EIO;
}

int ofl_softnic_sweep(const char *prefix)
{
    DIR *d = opendir("/dev/shm");
    if (NULL == d) {
        return 0;
    }
    size_t plen = strlen(prefix);
    int removed = 0;
    for (struct dirent *e; NULL != (e = readdir(d));) {
        if (0 != strncmp(e->d_name, prefix, plen)) {
            continue;
        }
        char *end = NULL;
        long pid = strtol(e->d_name + plen, &end, 10);
        if (end == e->d_name + plen || '.' != *end || pid <= 0 || pid > INT32_MAX) {
            continue;
        }
        if (0 == kill((pid_t) pid, 0) || ESRCH != errno) {
            continue;   /* its creator lives (or is not ours to judge) */
        }
        char name[NAME_MAX + 2];
        snprintf(name, sizeof(name), "/%s", e->d_name);
        removed += 0 == shm_unlink(name);
    }
    closedir(d);
    return removed;
}

int ofl_softnic_unlink(const char *name)
{
    return 0 == shm_unlink(name) ? 0 : -errno;
}

void ofl_softnic_detach(ofl_softnic_t *nic)
{
    if (NULL != nic->mem) {
        munmap(nic->mem, nic->len);
        nic->mem = NULL;
        nic->base.own_records = NULL;
    }
    free(nic->credit_seen);
    nic->credit_seen = nic->data_put = nic->credit_given = NULL;
    free(nic->pid);
    nic->pid = NULL;
}
