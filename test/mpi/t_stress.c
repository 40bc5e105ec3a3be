/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * t_stress: stress and soak of the collectives, every result checked against a
 * reference computed locally.
 *
 * Every call's parameters (communicator, collective, form, datatype, op, count,
 * root, in place) and every rank's data come from a seeded generator that all
 * ranks agree on, so each rank computes every other rank's contribution itself
 * and checks its result element by element, plus guard bytes after every
 * buffer and an unchanged send buffer. Nothing in a check depends on a
 * collective under test.
 *
 * Modes (one per run):
 *   --comm-cycles N       N cycles of: a random subset of the ranks in random
 *                         order becomes a communicator (MPI_Comm_split,
 *                         MPI_Comm_create, or MPI_Comm_dup of a split), 1-3 random
 *                         collectives on it (small: cycles are meant to be
 *                         cheap), MPI_Comm_free
 *   --threads T --comms C MPI_THREAD_MULTIPLE: T threads, each owning C
 *                         communicators, run random collectives at once
 *                         (--iters N per thread, default 300); without
 *                         MPI_THREAD_MULTIPLE one skipped check
 *   --soak SECONDS        random collectives for that long: every op each
 *                         mapped C type allows, counts 0 .. --max-bytes (2 MiB)
 *                         biased to the edges (1, policy and segment
 *                         boundaries, odd), any root, in place, blocking /
 *                         nonblocking (Wait, Test loop, several outstanding) /
 *                         persistent (several starts)
 * Options:
 *   --seed S              data and parameters (default: from the clock, printed)
 *   --max-bytes B         largest message of the soak (default 2097152)
 *   --strict              also draw (type, op) pairs whose reduction in this MPI
 *                         library itself is wrong (MPI_Reduce_local, checked at
 *                         start). Without it they are left out and listed: stock
 *                         Open MPI 4.1's op/avx saturates 8/16-bit sums
 *                         (open-mpi/ompi#8045; gone with "--mca op ^avx"; the
 *                         component hands such calls to the fallback with its
 *                         own kernels, so they pass with --strict either way),
 *                         4.1.2-4.1.4 compare MPI_UNSIGNED_LONG MIN/MAX signed
 *                         (open-mpi/ompi#10525) and 4.1.4 MPI_OFFSET MIN/MAX
 *                         unsigned: calls handed to the fallback get those
 *                         answers and fail under --strict
 *   --expect-offload      the component's MPI_T counters must show offloaded
 *                         calls of the forms the mode uses
 *   --forms LETTERS       the forms drawn (default bwtpm): b blocking, w nonblocking
 *                         + MPI_Wait, t nonblocking + MPI_Test loop, p persistent,
 *                         m three nonblocking outstanding
 *   --trace               every rank prints every call before it starts
 *   -v                    progress lines, every rank's memory figures
 *
 * Before and after the run it prints resident memory (VmRSS), the entries and
 * bytes of /dev/shm (all, and the component's segments made by this job's
 * processes) and the node's Shmem (/proc/meminfo). Every mode fails if this
 * job's segments in /dev/shm outlive the run, or if resident memory grows
 * after warm-up by more than RSS_BOUND plus what the library's own persistent
 * requests keep (stock Open MPI 4.1's libnbc never releases them: 1 KiB plus
 * the message allowed per persistent request the fallback made).
 *
 * CI (test/mpi/run.sh) runs bounded versions; by hand, longer ones, e.g.
 *   mpirun --oversubscribe -np 4 --mca op ^avx t_stress --soak 600
 *   mpirun --oversubscribe -np 4 --mca op ^avx t_stress --comm-cycles 100000
 */
#include "t_ops.h"

#include <dirent.h>
#include <limits.h>
#include "mpi_persist.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/stat.h>
#include <time.h>

/* Canary bytes after every buffer: catches writes past the count. */
#define GUARD 64
#define GUARD_BYTE 0xA5
#define JUNK_BYTE 0x5A
/* Largest communicator the references are computed for. */
#define MAX_RANKS 256
/* Calls outstanding at once in the "several nonblocking" form. */
#define MULTI 3
/* Resident memory may grow by this much between the end of warm-up and the end
 * of a run: allocator pools and the component's per-size staging settle during
 * warm-up, a leak per cycle or per call does not. */
#define RSS_BOUND ((long) 16 << 20)
#define MAX_THREADS 16
#define MAX_THREAD_COMMS 16

enum { C_ALLREDUCE, C_REDUCE, C_BCAST, C_BARRIER, C_N };
static const char *coll_names[C_N] = { "allreduce", "reduce", "bcast", "barrier" };

enum { F_BLOCKING, F_NB_WAIT, F_NB_TEST, F_PERSISTENT, F_NB_MULTI, F_N };
static const char *form_names[F_N] = {
    "blocking", "nonblocking+wait", "nonblocking+test", "persistent", "nonblocking x3"
};

/* The types drawn (t_ops.h). */
static t_type_t *types[T_NTYPES];
static int ntypes;

/* Per-rank seed of one call's data: element i of rank r is t_mix(rank_seed + i). */
static uint64_t rank_seed(uint64_t seed, int r)
{
    return t_mix(seed ^ t_mix(0xc011ULL + (uint64_t) r));
}

static void rank_seeds(uint64_t seed, int n, uint64_t *rseed)
{
    for (int r = 0; r < n; r++) {
        rseed[r] = rank_seed(seed, r);
    }
}

/* ---- checks, per thread ---------------------------------------------------------- */

typedef struct {
    unsigned long long pass, fail, skip;
    unsigned long long calls, bytes, iters;
    unsigned long long tok;     /* this iteration's number, the same on every member */
    long long leak_allow;       /* bytes the library's persistent requests may keep */
    unsigned long long by_coll[C_N], by_form[F_N];
    int thread;             /* -1: the main thread */
} ctx_t;

static atomic_int printed_fails;

static int check(ctx_t *x, int ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int check(ctx_t *x, int ok, const char *fmt, ...)
{
    if (ok) {
        x->pass++;
        return 1;
    }
    x->fail++;
    int nth = atomic_fetch_add(&printed_fails, 1);
    if (nth < T_MAX_PRINTED_FAILS) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (x->thread >= 0) {
            fprintf(stderr, "FAIL t_stress[rank %d thread %d]: %s\n", t_wrank, x->thread, msg);
        } else {
            fprintf(stderr, "FAIL t_stress[rank %d]: %s\n", t_wrank, msg);
        }
        if (T_MAX_PRINTED_FAILS - 1 == nth) {
            fprintf(stderr, "FAIL t_stress[rank %d]: further failure messages suppressed\n",
                    t_wrank);
        }
        fflush(stderr);
    }
    return 0;
}

/* ---- barrier arrival: a shared array of tokens ----------------------------------- */

/*
 * Before a barrier each rank stores a token that grows from barrier to barrier
 * into its own word of a node-shared window; after it, every member's word must
 * be at least that token, i.e. every member has entered. One word per (rank,
 * thread). Not available (and not checked) when the ranks span nodes.
 */
static _Atomic uint64_t *arrivals;
static MPI_Win arrivals_win = MPI_WIN_NULL;

static void arrivals_open(void)
{
    MPI_Comm node;
    int nsize = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &nsize);
    if (nsize == t_wsize) {
        MPI_Aint bytes = (MPI_Aint) (sizeof(uint64_t) * MAX_THREADS);
        void *mine = NULL;
        if (MPI_SUCCESS == MPI_Win_allocate_shared(bytes, sizeof(uint64_t), MPI_INFO_NULL,
                                                   node, &mine, &arrivals_win)) {
            MPI_Aint sz;
            int du;
            void *base = NULL;
            MPI_Win_shared_query(arrivals_win, 0, &sz, &du, &base);
            arrivals = base;
            memset(mine, 0, (size_t) bytes);
        }
    }
    MPI_Comm_free(&node);
    MPI_Barrier(MPI_COMM_WORLD);
    if (NULL == arrivals) {
        t_note("  skipped: every barrier arrival check (ranks span nodes or no shared "
               "window)\n");
    }
}

static void arrivals_close(void)
{
    if (MPI_WIN_NULL != arrivals_win) {
        MPI_Win_free(&arrivals_win);
    }
    arrivals = NULL;
}

/* ---- communicators ------------------------------------------------------------- */

typedef struct {
    char name[48];
    MPI_Comm comm;
    int size, rank;
    int wranks[MAX_RANKS];      /* world rank of every member */
} scomm_t;

/* 0 if comm is MPI_COMM_NULL (not a member) */
static int scomm_init(scomm_t *s, MPI_Comm comm, const char *name)
{
    memset(s, 0, sizeof(*s));
    s->comm = comm;
    snprintf(s->name, sizeof(s->name), "%s", name);
    if (MPI_COMM_NULL == comm) {
        return 0;
    }
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_size(comm, &s->size);
    MPI_Comm_rank(comm, &s->rank);
    MPI_Group g, wg;
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int idx[MAX_RANKS];
    for (int r = 0; r < s->size && r < MAX_RANKS; r++) {
        idx[r] = r;
    }
    MPI_Group_translate_ranks(g, s->size < MAX_RANKS ? s->size : MAX_RANKS, idx, wg,
                              s->wranks);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    return 1;
}

/* ---- one call -------------------------------------------------------------------- */

typedef struct {
    int coll, ti, op, count, root, inplace, null_recv;
    uint64_t seed;              /* this start's data */
    uint64_t token;             /* barrier arrival token */
    unsigned char *sbuf, *rbuf; /* count * size + GUARD bytes each */
} call_t;

typedef struct {
    unsigned char *mem[2 * MULTI];
    size_t cap;                 /* max bytes of one buffer */
} bufs_t;

static void bufs_alloc(bufs_t *b, size_t max_bytes)
{
    b->cap = max_bytes;
    for (int i = 0; i < 2 * MULTI; i++) {
        /* 64 spare bytes in front: buffers start at varying offsets */
        b->mem[i] = malloc(max_bytes + GUARD + 64);
        if (NULL == b->mem[i]) {
            fprintf(stderr, "t_stress: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        memset(b->mem[i], 0, max_bytes + GUARD + 64);
    }
}

static void bufs_free(bufs_t *b)
{
    for (int i = 0; i < 2 * MULTI; i++) {
        free(b->mem[i]);
    }
}

static const size_t edges[] = {
    0, 1, 2, 7, 8, 56, 63, 64, 65, 127, 128, 129, 224, 225, 256, 448, 1024, 4096, 8192,
    16383, 16384, 16385, 32768, 65536, 131071, 131072, 131073, 262144, 524288,
    1048576, 2097152
};
#define NEDGES ((int) (sizeof(edges) / sizeof(edges[0])))

/* A count whose byte size is biased to the edges of the size policies and
 * segmenting, within max_bytes. */
static int pick_count(uint64_t h, size_t elem, size_t max_bytes)
{
    size_t bytes;
    switch (h % 8) {
    case 0:
    case 1:
    case 2:
        bytes = edges[(h >> 3) % NEDGES];
        break;
    case 3:
    case 4: {
        /* log-uniform over 1 .. max_bytes */
        unsigned lg = 1 + (unsigned) ((h >> 3) % 21);
        bytes = ((size_t) 1 << lg) + (size_t) ((h >> 8) % ((size_t) 1 << lg));
        break;
    }
    default:
        bytes = (size_t) ((h >> 3) % 1025);
        break;
    }
    long count = (long) (bytes / elem);
    count += (long) ((h >> 40) % 3) - 1;
    if (0 == (h >> 44) % 4) {
        count |= 1;
    }
    if (count < 0) {
        count = 0;
    }
    if ((size_t) count * elem > max_bytes) {
        count = (long) (max_bytes / elem);
    }
    return (int) count;
}

static int g_strict;
static int g_trace;             /* --trace: every call, before it starts */
static unsigned g_forms = (1u << F_N) - 1;     /* --forms: those drawn */

/*
 * The (type, op) pairs drawn, in an order shuffled by the seed. Reductions take
 * them in turn by slot number (derived from the iteration, the same on every
 * member) rather than at random: a short run covers every pair, about 240,
 * each time with a random size, root and form.
 */
static struct {
    int ti, op;
} g_pairs[T_NTYPES * O_N];
static int g_npairs;
static uint64_t g_seed;

static void pairs_build(void)
{
    g_npairs = 0;
    for (int ti = 0; ti < ntypes; ti++) {
        for (int op = 0; op < O_N; op++) {
            if (op_allowed(op, types[ti]->kind) && (g_strict || !types[ti]->libbug[op])) {
                g_pairs[g_npairs].ti = ti;
                g_pairs[g_npairs].op = op;
                g_npairs++;
            }
        }
    }
    for (int i = g_npairs - 1; i > 0; i--) {
        int j = (int) (t_hash3(g_seed, 0x5a1fULL, (uint64_t) i) % (uint64_t) (i + 1));
        int ti = g_pairs[i].ti, op = g_pairs[i].op;
        g_pairs[i] = g_pairs[j];
        g_pairs[j].ti = ti;
        g_pairs[j].op = op;
    }
}

/* Random parameters of one call on a communicator of n ranks; a reduction
 * takes the (type, op) pair of its slot. */
static void pick_call(call_t *c, uint64_t h, uint64_t slot, int n, size_t max_bytes)
{
    memset(c, 0, sizeof(*c));
    unsigned w = (unsigned) (h % 20);
    c->coll = w < 8 ? C_ALLREDUCE : w < 13 ? C_REDUCE : w < 18 ? C_BCAST : C_BARRIER;
    uint64_t h2 = t_mix(h ^ 0x7ea5ULL);
    if (C_ALLREDUCE == c->coll || C_REDUCE == c->coll) {
        c->ti = g_pairs[slot % (uint64_t) g_npairs].ti;
        c->op = g_pairs[slot % (uint64_t) g_npairs].op;
    } else {
        c->ti = (int) (h2 % (uint64_t) ntypes);
        c->op = O_SUM;
    }
    uint64_t h3 = t_mix(h ^ 0xc0ffeeULL);
    c->count = C_BARRIER == c->coll ? 0 : pick_count(h3, types[c->ti]->size, max_bytes);
    c->root = (int) ((h3 >> 48) % (uint64_t) n);
    c->inplace = (C_ALLREDUCE == c->coll || C_REDUCE == c->coll) && 0 == (h2 >> 40) % 4;
    c->null_recv = C_REDUCE == c->coll && 0 == (h2 >> 44) % 8;
}

static void place_buffers(call_t *c, bufs_t *b, int slot, uint64_t h)
{
    /* offsets that keep every type aligned but move the buffers off cache lines */
    c->sbuf = b->mem[2 * slot] + 16 * (h % 4);
    c->rbuf = b->mem[2 * slot + 1] + 16 * ((h >> 2) % 4);
}

/* Where this rank's contribution lives and what it passes to MPI. */
static int input_in_recv(const call_t *c, const scomm_t *s)
{
    return c->inplace && (C_ALLREDUCE == c->coll || s->rank == c->root);
}

static int uses_recv(const call_t *c, const scomm_t *s)
{
    return !(C_REDUCE == c->coll && s->rank != c->root && c->null_recv);
}

static const void *send_arg(const call_t *c, const scomm_t *s)
{
    return input_in_recv(c, s) ? MPI_IN_PLACE : c->sbuf;
}

static void *recv_arg(const call_t *c, const scomm_t *s)
{
    return uses_recv(c, s) ? c->rbuf : NULL;
}

/* Writes this rank's data for c->seed (a bcast: the root's), junk where
 * results go, and the guards. */
static void fill(call_t *c, const scomm_t *s)
{
    const t_type_t *t = types[c->ti];
    size_t bytes = (size_t) c->count * t->size;
    if (C_BARRIER == c->coll) {
        return;
    }
    int bcast = C_BCAST == c->coll;
    int in_recv = bcast || input_in_recv(c, s);
    if (!in_recv || (bcast && s->rank != c->root)) {
        memset(c->rbuf, JUNK_BYTE, bytes);
    }
    if (!bcast || s->rank == c->root) {
        unsigned char *in = in_recv ? c->rbuf : c->sbuf;
        uint64_t mine = rank_seed(c->seed, s->rank);
        t_val_t v;
        for (int i = 0; i < c->count; i++) {
            t_gen(t, c->op, t_mix(mine + (uint64_t) i), s->size, &v);
            t_put(t, in, (size_t) i, &v);
        }
    }
    if (!bcast) {
        memset(c->sbuf + bytes, GUARD_BYTE, GUARD);
    }
    memset(c->rbuf + bytes, GUARD_BYTE, GUARD);
}

static int guard_ok(const unsigned char *p)
{
    for (int i = 0; i < GUARD; i++) {
        if (GUARD_BYTE != p[i]) {
            return 0;
        }
    }
    return 1;
}

static void describe(char *d, size_t n, const ctx_t *x, const call_t *c, const scomm_t *s,
                     int form)
{
    snprintf(d, n, "iteration %llu %s on %s (%d ranks, rank %d): %s %s %s count %d root %d%s%s",
             x->iters, form_names[form], s->name, s->size, s->rank, coll_names[c->coll],
             types[c->ti]->name, C_BCAST == c->coll || C_BARRIER == c->coll ? ""
                                                                            : op_names[c->op],
             c->count, c->root, c->inplace ? " in place" : "",
             c->null_recv && s->rank != c->root && C_REDUCE == c->coll ? " recvbuf NULL" : "");
}

static void trace(const ctx_t *x, const call_t *c, const scomm_t *s, int form)
{
    if (g_trace) {
        char d[256];
        describe(d, sizeof(d), x, c, s, form);
        printf("  [rank %d%s] %s\n", t_wrank, x->thread >= 0 ? " thread" : "", d);
        fflush(stdout);
    }
}

static void arrive(const call_t *c, int thread)
{
    if (NULL != arrivals && C_BARRIER == c->coll) {
        atomic_store_explicit(&arrivals[t_wrank * MAX_THREADS + thread], c->token,
                              memory_order_release);
    }
}

/* Checks the completed call c (MPI return code rc) against the reference. */
static void verify(ctx_t *x, const call_t *c, const scomm_t *s, int form, int rc)
{
    const t_type_t *t = types[c->ti];
    char d[256];
    x->calls++;
    x->by_coll[c->coll]++;
    x->bytes += (uint64_t) c->count * t->size;
    if (MPI_SUCCESS != rc) {
        describe(d, sizeof(d), x, c, s, form);
        check(x, 0, "%s: returned %d", d, rc);
        return;
    }
    if (C_BARRIER == c->coll) {
        if (NULL == arrivals) {
            x->skip++;
            return;
        }
        int late = -1;
        for (int r = 0; r < s->size && late < 0; r++) {
            uint64_t tok = atomic_load_explicit(
                &arrivals[s->wranks[r] * MAX_THREADS + (x->thread < 0 ? 0 : x->thread)],
                memory_order_acquire);
            if (tok < c->token) {
                late = r;
            }
        }
        if (late >= 0) {
            describe(d, sizeof(d), x, c, s, form);
        }
        check(x, late < 0, "%s: rank %d had not entered the barrier when it returned", d,
              late);
        return;
    }
    size_t bytes = (size_t) c->count * t->size;
    uint64_t rs[MAX_RANKS];
    int n = s->size;
    rank_seeds(c->seed, n, rs);
    int result_here = C_REDUCE != c->coll || s->rank == c->root;
    long bad = -1, bad_send = -1;
    t_val_t got, exp, v, mine;
    for (int i = 0; i < c->count && bad < 0 && bad_send < 0; i++) {
        if (C_BCAST == c->coll) {
            t_gen(t, c->op, t_mix(rs[c->root] + (uint64_t) i), n, &exp);
        } else {
            t_gen(t, c->op, t_mix(rs[0] + (uint64_t) i), n, &exp);
            for (int r = 1; r < n; r++) {
                t_gen(t, c->op, t_mix(rs[r] + (uint64_t) i), n, &v);
                t_combine(t, c->op, &exp, &v);
            }
            if (!input_in_recv(c, s)) {
                t_gen(t, c->op, t_mix(rs[s->rank] + (uint64_t) i), n, &mine);
                t_get(t, c->sbuf, (size_t) i, &got);
                if (!t_same(t, &got, &mine)) {
                    bad_send = i;
                }
            }
        }
        if (result_here) {
            t_get(t, c->rbuf, (size_t) i, &got);
            if (!t_same(t, &got, &exp)) {
                bad = i;
            }
        }
    }
    if (bad >= 0 || bad_send >= 0) {
        char gs[96], es[96];
        describe(d, sizeof(d), x, c, s, form);
        if (bad >= 0) {
            t_fmt(t, &got, gs, sizeof(gs));
            t_fmt(t, &exp, es, sizeof(es));
            check(x, 0, "%s: element %ld is %s, expected %s", d, bad, gs, es);
        } else {
            t_fmt(t, &got, gs, sizeof(gs));
            t_fmt(t, &mine, es, sizeof(es));
            check(x, 0, "%s: send buffer element %ld changed to %s from %s", d, bad_send, gs,
                  es);
        }
        return;
    }
    int guards = (!uses_recv(c, s) || guard_ok(c->rbuf + bytes))
                 && (C_BCAST == c->coll || input_in_recv(c, s) || guard_ok(c->sbuf + bytes));
    if (!guards) {
        describe(d, sizeof(d), x, c, s, form);
    }
    check(x, guards, "%s: bytes written past the end of a buffer", d);
}

/* ---- MPI_T counters ------------------------------------------------------------- */

static const char *form_prefix[3] = { "", "i", "p" };
static t_pvar_t pv[3][C_N][2];      /* [blocking, i, p][coll][offloaded, fallback] */
static char pv_names[3][C_N][2][64];

static void pvars_open(void)
{
    for (int f = 0; f < 3; f++) {
        for (int c = 0; c < C_N; c++) {
            for (int k = 0; k < 2; k++) {
                snprintf(pv_names[f][c][k], sizeof(pv_names[f][c][k]), "coll_offload_%s%s_%s",
                         form_prefix[f], coll_names[c], k ? "fallback" : "offloaded");
                pv[f][c][k].name = pv_names[f][c][k];
            }
        }
    }
    t_pvars_open(&pv[0][0][0], 3 * C_N * 2);
}

static void pvars_read(unsigned long long v[3][C_N][2])
{
    for (int f = 0; f < 3; f++) {
        for (int c = 0; c < C_N; c++) {
            for (int k = 0; k < 2; k++) {
                t_pvar_read(&pv[f][c][k], &v[f][c][k]);
            }
        }
    }
}

/*
 * Stock Open MPI 4.1's libnbc keeps every persistent collective request it
 * made, schedule and temporary buffer (about 0.3-1 KiB plus the message),
 * after MPI_Request_free. Resident memory may grow by that much per persistent
 * request the fallback made: counted where the counters say so (or for every
 * one when they cannot be read from this thread).
 */
static unsigned long long persistent_fallbacks(int coll)
{
    unsigned long long v = 0;
    t_pvar_read(&pv[2][coll][1], &v);
    return v;
}

/* coll_offload_persistent_ordered: persistent collectives run offloaded only where
 * their starts may be matched by order; else they go to the layer below. */
static int p_ordered;

/* Prints the counters' growth summed over the ranks and, with --expect-offload,
 * checks that every form the mode used ran offloaded at least once. */
static void pvars_report(ctx_t *x, unsigned long long v0[3][C_N][2], int forms_used)
{
    unsigned long long v1[3][C_N][2], mine[3 * C_N * 2], sum[3 * C_N * 2];
    pvars_read(v1);
    int k = 0;
    for (int f = 0; f < 3; f++) {
        for (int c = 0; c < C_N; c++) {
            for (int o = 0; o < 2; o++) {
                mine[k++] = v1[f][c][o] - v0[f][c][o];
            }
        }
    }
    unsigned long long *all = malloc(sizeof(mine) * (size_t) t_wsize);
    MPI_Allgather(mine, 3 * C_N * 2, MPI_UNSIGNED_LONG_LONG, all, 3 * C_N * 2,
                  MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
    memset(sum, 0, sizeof(sum));
    for (int r = 0; r < t_wsize; r++) {
        for (int i = 0; i < 3 * C_N * 2; i++) {
            sum[i] += all[r * 3 * C_N * 2 + i];
        }
    }
    free(all);
    if (!pv[0][0][0].found) {
        t_note("  (no coll_offload MPI_T counters: component not loaded)\n");
        if (t_opt.expect_offload) {
            check(x, 0, "--expect-offload: the component's MPI_T counters do not exist");
        }
        return;
    }
    static const char *fname[3] = { "blocking", "nonblocking", "persistent" };
    for (int f = 0; f < 3; f++) {
        unsigned long long off = 0, fb = 0;
        char line[256];
        int len = 0;
        for (int c = 0; c < C_N; c++) {
            off += sum[(f * C_N + c) * 2];
            fb += sum[(f * C_N + c) * 2 + 1];
            len += snprintf(line + len, sizeof(line) - (size_t) len, " %s %llu/%llu",
                            coll_names[c], sum[(f * C_N + c) * 2],
                            sum[(f * C_N + c) * 2 + 1]);
        }
        t_note("  offloaded/fallback, %-11s (all ranks):%s\n", fname[f], line);
        if (t_opt.expect_offload && (forms_used & (1 << f))) {
            if (2 == f && !p_ordered) {
                /* persistent starts may come in any order: the layer below's */
                check(x, 0 == off && fb > 0, "--expect-offload: %llu persistent calls ran "
                      "offloaded (want 0: coll_offload_persistent_ordered=0), %llu fell back",
                      off, fb);
            } else {
                check(x, off > 0, "--expect-offload: no %s call ran offloaded (%llu fell back)",
                      fname[f], fb);
            }
        }
    }
}

/* ---- forms ---------------------------------------------------------------------- */

static int start_nb(call_t *c, const scomm_t *s, MPI_Request *req)
{
    const t_type_t *t = types[c->ti];
    switch (c->coll) {
    case C_ALLREDUCE:
        return MPI_Iallreduce(send_arg(c, s), recv_arg(c, s), c->count, t->dt,
                              op_handle(c->op), s->comm, req);
    case C_REDUCE:
        return MPI_Ireduce(send_arg(c, s), recv_arg(c, s), c->count, t->dt, op_handle(c->op),
                           c->root, s->comm, req);
    case C_BCAST:
        return MPI_Ibcast(c->rbuf, c->count, t->dt, c->root, s->comm, req);
    default:
        return MPI_Ibarrier(s->comm, req);
    }
}

static int run_blocking(call_t *c, const scomm_t *s)
{
    const t_type_t *t = types[c->ti];
    switch (c->coll) {
    case C_ALLREDUCE:
        return MPI_Allreduce(send_arg(c, s), recv_arg(c, s), c->count, t->dt,
                             op_handle(c->op), s->comm);
    case C_REDUCE:
        return MPI_Reduce(send_arg(c, s), recv_arg(c, s), c->count, t->dt, op_handle(c->op),
                          c->root, s->comm);
    case C_BCAST:
        return MPI_Bcast(c->rbuf, c->count, t->dt, c->root, s->comm);
    default:
        return MPI_Barrier(s->comm);
    }
}

static int init_persistent(call_t *c, const scomm_t *s, MPI_Request *req)
{
    const t_type_t *t = types[c->ti];
    switch (c->coll) {
    case C_ALLREDUCE:
        return MPI_Allreduce_init(send_arg(c, s), recv_arg(c, s), c->count, t->dt,
                                   op_handle(c->op), s->comm, MPI_INFO_NULL, req);
    case C_REDUCE:
        return MPI_Reduce_init(send_arg(c, s), recv_arg(c, s), c->count, t->dt,
                                op_handle(c->op), c->root, s->comm, MPI_INFO_NULL, req);
    case C_BCAST:
        return MPI_Bcast_init(c->rbuf, c->count, t->dt, c->root, s->comm, MPI_INFO_NULL, req);
    default:
        return MPI_Barrier_init(s->comm, MPI_INFO_NULL, req);
    }
}

static int wait_by_test(MPI_Request *req)
{
    int flag = 0, rc = MPI_SUCCESS;
    while (MPI_SUCCESS == rc && !flag) {
        rc = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
    }
    return rc;
}

/*
 * One iteration on communicator s: a form and 1 (or MULTI) random calls, all
 * derived from h, identical on every member.
 */
static void run_iteration(ctx_t *x, const scomm_t *s, bufs_t *b, uint64_t h, size_t max_bytes)
{
    int tid = x->thread < 0 ? 0 : x->thread;
    unsigned fw = (unsigned) (t_mix(h ^ 0xf0f0ULL) % 20);
    int form = fw < 7 ? F_BLOCKING : fw < 11 ? F_NB_WAIT : fw < 13 ? F_NB_TEST
               : fw < 17 ? F_PERSISTENT : F_NB_MULTI;
    while (!(g_forms & (1u << form))) {
        form = (form + 1) % F_N;
    }
    x->by_form[form]++;
    uint64_t token_base = (x->tok + 1) << 4;
    /* threads take the pairs from different places */
    uint64_t slot = x->tok * MULTI + (uint64_t) (x->thread < 0 ? 0 : x->thread) * 61;
    if (F_NB_MULTI == form) {
        call_t c[MULTI];
        MPI_Request req[MULTI];
        int rc[MULTI];
        for (int k = 0; k < MULTI; k++) {
            uint64_t hk = t_mix(h + 0x100ULL * (uint64_t) (k + 1));
            pick_call(&c[k], hk, slot + (uint64_t) k, s->size, max_bytes);
            place_buffers(&c[k], b, k, hk >> 7);
            c[k].seed = t_mix(hk ^ 0xda7aULL);
            c[k].token = token_base + (uint64_t) k;
            fill(&c[k], s);
            trace(x, &c[k], s, form);
            arrive(&c[k], tid);
            rc[k] = start_nb(&c[k], s, &req[k]);
            if (MPI_SUCCESS != rc[k]) {
                req[k] = MPI_REQUEST_NULL;
            }
        }
        int wrc = MPI_Waitall(MULTI, req, MPI_STATUSES_IGNORE);
        for (int k = 0; k < MULTI; k++) {
            verify(x, &c[k], s, form, MPI_SUCCESS != rc[k] ? rc[k] : wrc);
        }
        return;
    }
    call_t c;
    pick_call(&c, h, slot + (h >> 20) % MULTI, s->size, max_bytes);
    place_buffers(&c, b, 0, h >> 7);
    c.seed = t_mix(h ^ 0xda7aULL);
    c.token = token_base;
    MPI_Request req = MPI_REQUEST_NULL;
    int rc;
    trace(x, &c, s, form);
    switch (form) {
    case F_BLOCKING:
        fill(&c, s);
        arrive(&c, tid);
        verify(x, &c, s, form, run_blocking(&c, s));
        break;
    case F_NB_WAIT:
    case F_NB_TEST:
        fill(&c, s);
        arrive(&c, tid);
        rc = start_nb(&c, s, &req);
        if (MPI_SUCCESS == rc) {
            rc = F_NB_WAIT == form ? MPI_Wait(&req, MPI_STATUS_IGNORE) : wait_by_test(&req);
        }
        verify(x, &c, s, form, rc);
        break;
    default: {
        /* A persistent request started 1-3 times, new data before every start. */
        int starts = 1 + (int) ((h >> 50) % 3);
        int counted = x->thread < 0 && pv[2][c.coll][1].found;
        unsigned long long fb0 = counted ? persistent_fallbacks(c.coll) : 0;
        rc = init_persistent(&c, s, &req);
        if (MPI_SUCCESS != rc) {
            verify(x, &c, s, form, rc);
            break;
        }
        for (int k = 0; k < starts; k++) {
            c.seed = t_mix(h ^ (0xda7aULL + (uint64_t) k));
            c.token = token_base + (uint64_t) k;
            fill(&c, s);
            arrive(&c, tid);
            rc = MPI_Start(&req);
            if (MPI_SUCCESS == rc) {
                rc = 0 == k % 2 ? MPI_Wait(&req, MPI_STATUS_IGNORE) : wait_by_test(&req);
            }
            verify(x, &c, s, form, rc);
        }
        MPI_Request_free(&req);
        if (!counted || persistent_fallbacks(c.coll) != fb0) {
            x->leak_allow += 1024 + (long long) c.count * (long long) types[c.ti]->size;
        }
        break;
    }
    }
}

/* ---- resources: RSS, /dev/shm, Shmem ------------------------------------------ */

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    if (NULL == f) {
        return -1;
    }
    while (NULL != fgets(line, sizeof(line), f)) {
        if (1 == sscanf(line, "VmRSS: %ld kB", &kib)) {
            break;
        }
    }
    fclose(f);
    return kib;
}

static long shmem_kib(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long kib = -1;
    if (NULL == f) {
        return -1;
    }
    while (NULL != fgets(line, sizeof(line), f)) {
        if (1 == sscanf(line, "Shmem: %ld kB", &kib)) {
            break;
        }
    }
    fclose(f);
    return kib;
}

typedef struct {
    long all_n, all_kib;        /* every /dev/shm entry, allocated KiB */
    long ofl_n, ofl_kib;        /* the component's segments, any job */
    long ours_n, ours_kib;      /* the component's segments made by this job's ranks */
    char ours_first[NAME_MAX + 1];
} shm_t;

static int *job_pids;

/* Segments are named /coll_offload.<pid of the creating rank>.<cid>.<serial>. */
static int made_by_this_job(const char *name)
{
    const char *p = strstr(name, "coll_offload.");
    if (NULL == p) {
        return 0;
    }
    int pid = atoi(p + strlen("coll_offload."));
    for (int r = 0; r < t_wsize; r++) {
        if (job_pids[r] == pid) {
            return 1;
        }
    }
    return 0;
}

static void shm_scan(shm_t *m)
{
    memset(m, 0, sizeof(*m));
    DIR *d = opendir("/dev/shm");
    if (NULL == d) {
        return;
    }
    struct dirent *e;
    while (NULL != (e = readdir(d))) {
        if ('.' == e->d_name[0]) {
            continue;
        }
        char path[NAME_MAX + 16];
        struct stat st;
        snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
        if (0 != stat(path, &st)) {
            continue;       /* unlinked meanwhile */
        }
        long kib = (long) (st.st_blocks / 2);
        m->all_n++;
        m->all_kib += kib;
        if (NULL != strstr(e->d_name, "coll_offload")) {
            m->ofl_n++;
            m->ofl_kib += kib;
            if (made_by_this_job(e->d_name)) {
                if (0 == m->ours_n) {
                    snprintf(m->ours_first, sizeof(m->ours_first), "%s", e->d_name);
                }
                m->ours_n++;
                m->ours_kib += kib;
            }
        }
    }
    closedir(d);
}

typedef struct {
    long rss_min, rss_max;      /* KiB over the ranks */
    shm_t shm;                  /* as the first rank sees it */
    long shmem;
} res_t;

/* Collective over MPI_COMM_WORLD (MPI_Allgather, not under test). */
static void res_take(res_t *r)
{
    long mine = rss_kib(), *all = malloc(sizeof(long) * (size_t) t_wsize);
    MPI_Allgather(&mine, 1, MPI_LONG, all, 1, MPI_LONG, MPI_COMM_WORLD);
    r->rss_min = r->rss_max = all[0];
    for (int i = 1; i < t_wsize; i++) {
        r->rss_min = all[i] < r->rss_min ? all[i] : r->rss_min;
        r->rss_max = all[i] > r->rss_max ? all[i] : r->rss_max;
    }
    free(all);
    shm_scan(&r->shm);
    r->shmem = shmem_kib();
}

static void res_print(const char *when, const res_t *r)
{
    t_note("  %-6s VmRSS %ld-%ld KiB per rank; /dev/shm %ld entries %ld KiB, coll_offload %ld "
           "(%ld KiB), of this job %ld (%ld KiB); node Shmem %ld KiB\n", when, r->rss_min,
           r->rss_max, r->shm.all_n, r->shm.all_kib, r->shm.ofl_n, r->shm.ofl_kib,
           r->shm.ours_n, r->shm.ours_kib, r->shmem);
}

/*
 * The checks of a run's end: this job's segments gone from /dev/shm (unlinking
 * may trail the last free a little: a leftover must persist for 2 s), resident
 * memory within RSS_BOUND of the warm-up baseline on every rank.
 */
static void res_check(ctx_t *x, long rss_warm, long long allow_warm, const res_t *before)
{
    MPI_Barrier(MPI_COMM_WORLD);
    shm_t now;
    for (int tries = 0; tries < 20; tries++) {
        shm_scan(&now);
        if (now.ours_n <= before->shm.ours_n) {
            break;
        }
        usleep(100000);
    }
    check(x, now.ours_n <= before->shm.ours_n, "/dev/shm holds %ld segments of this job "
          "after the run (%ld before), e.g. %s", now.ours_n, before->shm.ours_n,
          now.ours_first);
    long rss = rss_kib();
    long bound = (long) ((RSS_BOUND + x->leak_allow - allow_warm) / 1024);
    if (t_opt.verbose) {
        printf("  [rank %d] VmRSS %ld KiB after warm-up, %ld KiB at the end: grew by %ld KiB, "
               "bound %ld KiB (%lld KiB of it for the library's persistent requests)\n",
               t_wrank, rss_warm, rss, rss - rss_warm, bound,
               (x->leak_allow - allow_warm) / 1024);
    }
    check(x, rss >= 0 && rss - rss_warm <= bound, "resident memory grew by %ld KiB after "
          "warm-up (%ld -> %ld KiB; bound %ld KiB: %ld, and %lld for the persistent requests "
          "the library's fallback made)", rss - rss_warm, rss_warm, rss, bound,
          RSS_BOUND / 1024, (x->leak_allow - allow_warm) / 1024);
}

/* ---- preflight: the library's own reductions ----------------------------------- */

/*
 * MPI_Reduce_local runs the library's reduction functions, which the fallback
 * component uses too. A (type, op) pair they get wrong cannot be checked
 * through the fallback; it is left out of the draw unless --strict.
 */
static void preflight(void)
{
    enum { N = 257 };
    unsigned char *a = malloc(N * 32), *b = malloc(N * 32);
    char list[2048] = "";
    size_t len = 0;
    int nbad = 0;
    for (int ti = 0; ti < ntypes; ti++) {
        const t_type_t *t = types[ti];
        for (int op = 0; op < O_N; op++) {
            if (!op_allowed(op, t->kind)) {
                continue;
            }
            uint64_t rs[2];
            t_val_t va, vb;
            rank_seeds(t_mix(0x9f1e ^ (uint64_t) (ti * O_N + op)), 2, rs);
            for (int i = 0; i < N; i++) {
                t_gen(t, op, t_mix(rs[0] + (uint64_t) i), 2, &va);
                t_gen(t, op, t_mix(rs[1] + (uint64_t) i), 2, &vb);
                t_put(t, a, (size_t) i, &va);
                t_put(t, b, (size_t) i, &vb);
            }
            int rc = MPI_Reduce_local(a, b, N, t->dt, op_handle(op));
            int wrong = MPI_SUCCESS != rc;
            for (int i = 0; i < N && !wrong; i++) {
                t_val_t got;
                t_gen(t, op, t_mix(rs[1] + (uint64_t) i), 2, &vb);
                t_gen(t, op, t_mix(rs[0] + (uint64_t) i), 2, &va);
                t_combine(t, op, &vb, &va);
                t_get(t, b, (size_t) i, &got);
                wrong = !t_same(t, &got, &vb);
            }
            if (wrong) {
                types[ti]->libbug[op] = 1;
                nbad++;
                len += (size_t) snprintf(list + len, len < sizeof(list) ? sizeof(list) - len : 0,
                                         " %s/%s", t->name, op_names[op]);
            }
        }
    }
    free(a);
    free(b);
    if (nbad > 0) {
        t_note("  this MPI library's own reduction (MPI_Reduce_local) is wrong for %d "
               "(type, op) pairs:%s\n  %s\n", nbad, list,
               g_strict ? "--strict: drawn anyway"
                        : "left out of the draw (--strict draws them; op/avx's 8/16-bit sums "
                          "go away with --mca op ^avx)");
    }
}

/* ---- modes ---------------------------------------------------------------------- */

static size_t g_max_bytes = 2097152;

static void ctx_report(const char *what, ctx_t *x, double secs)
{
    unsigned long long mine[5 + C_N + F_N], sum[5 + C_N + F_N];
    int n = 5 + C_N + F_N;
    mine[0] = x->iters;
    mine[1] = x->calls;
    mine[2] = x->bytes;
    mine[3] = x->pass;
    mine[4] = x->fail;
    for (int c = 0; c < C_N; c++) {
        mine[5 + c] = x->by_coll[c];
    }
    for (int f = 0; f < F_N; f++) {
        mine[5 + C_N + f] = x->by_form[f];
    }
    unsigned long long *all = malloc(sizeof(mine) * (size_t) t_wsize);
    MPI_Allgather(mine, n, MPI_UNSIGNED_LONG_LONG, all, n, MPI_UNSIGNED_LONG_LONG,
                  MPI_COMM_WORLD);
    memset(sum, 0, sizeof(sum));
    for (int r = 0; r < t_wsize; r++) {
        for (int i = 0; i < n; i++) {
            sum[i] += all[r * n + i];
        }
    }
    free(all);
    t_note("  %s: %.1f s; rank 0: %llu iterations; all ranks: %llu calls (%.1f MiB), "
           "%llu checks passed, %llu failed\n", what, secs, mine[0], sum[1],
           (double) sum[2] / 1048576.0, sum[3], sum[4]);
    t_note("  calls by collective (all ranks): allreduce %llu, reduce %llu, bcast %llu, "
           "barrier %llu\n", sum[5], sum[6], sum[7], sum[8]);
    t_note("  iterations by form (all ranks): blocking %llu, nonblocking+wait %llu, "
           "nonblocking+test %llu, persistent %llu, nonblocking x3 %llu\n", sum[9], sum[10],
           sum[11], sum[12], sum[13]);
}

/* A random subset in random order; the same on every rank. Members get
 * 1 and a key, others 0. */
static int subset_member(uint64_t h, int wrank, int *key)
{
    int member = 0 != t_mix(h ^ (uint64_t) wrank) % 4;
    int forced = (int) (h % (uint64_t) t_wsize);
    *key = (int) (t_mix(h + 0x6b65ULL + (uint64_t) wrank) % 1000003);
    return member || wrank == forced;
}

static void mode_comm_cycles(long cycles)
{
    ctx_t x = { .thread = -1 };
    res_t before, after;
    bufs_t b;
    unsigned long long v0[3][C_N][2];
    /* Cycles are meant to be cheap: small messages, now and then a larger one. */
    size_t max_small = 4096, max_large = 65536;
    bufs_alloc(&b, max_large);
    /* Long-lived splits that cycles dup: even ranks, odd ranks, all reversed. */
    scomm_t base[2];
    MPI_Comm tmp;
    MPI_Comm_split(MPI_COMM_WORLD, t_wrank % 2, t_wrank, &tmp);
    scomm_init(&base[0], tmp, "parity");
    MPI_Comm_split(MPI_COMM_WORLD, 0, t_wsize - t_wrank, &tmp);
    scomm_init(&base[1], tmp, "reversed");
    long warm = cycles / 10 > 100 ? cycles / 10 : (cycles < 100 ? cycles : 100);
    long rss_warm = rss_kib();
    long long allow_warm = 0;
    pvars_read(v0);
    res_take(&before);
    res_print("before", &before);
    t_section_begin("communicator cycles");
    double t0 = MPI_Wtime();
    for (long cyc = 1; cyc <= cycles; cyc++) {
        uint64_t h = t_hash3(g_seed, 0xc7c1e5ULL, (uint64_t) cyc);
        int key, member = subset_member(h, t_wrank, &key);
        int how = (int) ((h >> 32) % 3);
        MPI_Comm c = MPI_COMM_NULL;
        const char *name;
        int rc = MPI_SUCCESS;
        if (0 == how) {
            name = "split";
            rc = MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, key, &c);
        } else if (1 == how) {
            /* the members in the order of their keys */
            name = "create";
            int ranks[MAX_RANKS], keys[MAX_RANKS], nm = 0;
            for (int r = 0; r < t_wsize && r < MAX_RANKS; r++) {
                int k, m = subset_member(h, r, &k);
                if (!m) {
                    continue;
                }
                int at = nm++;
                while (at > 0 && (keys[at - 1] > k || (keys[at - 1] == k && ranks[at - 1] > r))) {
                    keys[at] = keys[at - 1];
                    ranks[at] = ranks[at - 1];
                    at--;
                }
                keys[at] = k;
                ranks[at] = r;
            }
            MPI_Group wg, g;
            MPI_Comm_group(MPI_COMM_WORLD, &wg);
            MPI_Group_incl(wg, nm, ranks, &g);
            rc = MPI_Comm_create(MPI_COMM_WORLD, g, &c);
            MPI_Group_free(&g);
            MPI_Group_free(&wg);
        } else {
            name = "dup";
            scomm_t *from = &base[(h >> 40) % 2];
            if (MPI_COMM_NULL != from->comm) {
                rc = MPI_Comm_dup(from->comm, &c);
            }
        }
        if (MPI_SUCCESS != rc) {
            check(&x, 0, "cycle %ld: MPI_Comm_%s returned %d", cyc, name, rc);
            break;
        }
        scomm_t s;
        char nm[48];
        snprintf(nm, sizeof(nm), "%s of cycle %ld", name, cyc);
        if (scomm_init(&s, c, nm)) {
            int ncalls = 1 + (int) ((h >> 48) % 3);
            for (int k = 0; k < ncalls; k++) {
                uint64_t hk = t_mix(h + (uint64_t) k * 0x9e37ULL);
                x.iters = (unsigned long long) cyc;
                x.tok = (unsigned long long) cyc * 3 + (unsigned long long) k;
                run_iteration(&x, &s, &b, hk, 0 == hk % 16 ? max_large : max_small);
            }
            MPI_Comm_free(&c);
        }
        x.iters = (unsigned long long) cyc;
        if (cyc == warm) {
            rss_warm = rss_kib();
            allow_warm = x.leak_allow;
        }
        if (t_opt.verbose && 0 == cyc % 1000) {
            t_note("    cycle %ld: %.1f s, VmRSS %ld KiB\n", cyc, MPI_Wtime() - t0, rss_kib());
        }
    }
    double secs = MPI_Wtime() - t0;
    for (int i = 0; i < 2; i++) {
        if (MPI_COMM_NULL != base[i].comm) {
            MPI_Comm_free(&base[i].comm);
        }
    }
    res_check(&x, rss_warm, allow_warm, &before);
    res_take(&after);
    res_print("after", &after);
    ctx_report("communicator cycles", &x, secs);
    pvars_report(&x, v0, 7);
    bufs_free(&b);
    t_npass += x.pass;
    t_nfail += x.fail;
    t_nskip += x.skip;
    t_section_end();
}

/* ---- threads ---------------------------------------------------------------------- */

typedef struct {
    ctx_t x;
    scomm_t comms[MAX_THREAD_COMMS];
    int ncomms;
    long iters;
    bufs_t b;
} worker_t;

static void *worker(void *arg)
{
    worker_t *w = arg;
    for (long it = 1; it <= w->iters; it++) {
        uint64_t h = t_hash3(g_seed, 0x7431ULL + (uint64_t) w->x.thread, (uint64_t) it);
        scomm_t *s = &w->comms[(h >> 56) % (uint64_t) w->ncomms];
        w->x.iters = (unsigned long long) it;
        w->x.tok = (unsigned long long) it;
        if (MPI_COMM_NULL != s->comm) {
            run_iteration(&w->x, s, &w->b, h, 0 == h % 8 ? 262144 : 16384);
        }
    }
    return NULL;
}

static void mode_threads(int nthreads, int ncomms, long iters, int provided)
{
    if (provided < MPI_THREAD_MULTIPLE) {
        t_skip("threads: MPI_THREAD_MULTIPLE not provided (%d)", provided);
        return;
    }
    res_t before, after;
    unsigned long long v0[3][C_N][2];
    worker_t *w = calloc((size_t) nthreads, sizeof(worker_t));
    pthread_t th[MAX_THREADS];
    /* Each thread's communicators: the world in random order, or a random subset;
     * a blocking collective sets each up before the threads start. */
    for (int t = 0; t < nthreads; t++) {
        w[t].x.thread = t;
        w[t].ncomms = ncomms;
        w[t].iters = iters;
        bufs_alloc(&w[t].b, 262144);
        for (int k = 0; k < ncomms; k++) {
            uint64_t h = t_hash3(g_seed, 0x7c0ULL + (uint64_t) t, (uint64_t) k);
            int key = (int) (t_mix(h + (uint64_t) t_wrank) % 1000003), member = 1;
            if (0 != k % 2) {
                member = subset_member(h, t_wrank, &key);
            }
            MPI_Comm c;
            char nm[48];
            MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, key, &c);
            snprintf(nm, sizeof(nm), "thread %d comm %d%s", t, k, 0 == k % 2 ? "" : " (subset)");
            if (scomm_init(&w[t].comms[k], c, nm) && 0 != k % 3) {
                MPI_Barrier(c);
            }
        }
    }
    pvars_read(v0);
    res_take(&before);
    res_print("before", &before);
    long rss_warm = rss_kib();
    t_section_begin("threads x communicators");
    double t0 = MPI_Wtime();
    for (int t = 0; t < nthreads; t++) {
        pthread_create(&th[t], NULL, worker, &w[t]);
    }
    for (int t = 0; t < nthreads; t++) {
        pthread_join(th[t], NULL);
    }
    double secs = MPI_Wtime() - t0;
    ctx_t all = { .thread = -1 };
    for (int t = 0; t < nthreads; t++) {
        all.pass += w[t].x.pass;
        all.fail += w[t].x.fail;
        all.skip += w[t].x.skip;
        all.calls += w[t].x.calls;
        all.bytes += w[t].x.bytes;
        all.iters += w[t].x.iters;
        all.leak_allow += w[t].x.leak_allow;
        for (int c = 0; c < C_N; c++) {
            all.by_coll[c] += w[t].x.by_coll[c];
        }
        for (int f = 0; f < F_N; f++) {
            all.by_form[f] += w[t].x.by_form[f];
        }
        for (int k = 0; k < ncomms; k++) {
            if (MPI_COMM_NULL != w[t].comms[k].comm) {
                MPI_Comm_free(&w[t].comms[k].comm);
            }
        }
        bufs_free(&w[t].b);
    }
    res_check(&all, rss_warm, 0, &before);
    res_take(&after);
    res_print("after", &after);
    char what[64];
    snprintf(what, sizeof(what), "%d threads x %d communicators", nthreads, ncomms);
    ctx_report(what, &all, secs);
    pvars_report(&all, v0, 7);
    t_npass += all.pass;
    t_nfail += all.fail;
    t_nskip += all.skip;
    free(w);
    t_section_end();
}

/* ---- soak ------------------------------------------------------------------------- */

static void mode_soak(double seconds)
{
    ctx_t x = { .thread = -1 };
    res_t before, after;
    bufs_t b;
    unsigned long long v0[3][C_N][2];
    bufs_alloc(&b, g_max_bytes);
    /* The communicators: the world as it is, in reverse order, split in two. */
    enum { NPOOL = 3 };
    scomm_t pool[NPOOL];
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    scomm_init(&pool[0], c, "world dup");
    MPI_Comm_split(MPI_COMM_WORLD, 0, t_wsize - t_wrank, &c);
    scomm_init(&pool[1], c, "reversed");
    MPI_Comm_split(MPI_COMM_WORLD, t_wrank % 2, t_wrank, &c);
    scomm_init(&pool[2], c, t_wrank % 2 ? "odd ranks" : "even ranks");
    pvars_read(v0);
    res_take(&before);
    res_print("before", &before);
    t_section_begin("soak");
    double t0 = MPI_Wtime(), last_note = t0, warm_at = t0 + (seconds / 10 < 30 ? seconds / 10
                                                                                : 30);
    long rss_warm = -1;
    long long allow_warm = 0;
    int stop = 0;
    int *stops = malloc(sizeof(int) * (size_t) t_wsize);
    for (unsigned long long it = 1; !stop; it++) {
        uint64_t h = t_hash3(g_seed, 0x50a4ULL, (uint64_t) it);
        x.iters = it;
        x.tok = it;
        run_iteration(&x, &pool[(h >> 58) % NPOOL], &b, h, g_max_bytes);
        if (0 == it % 8) {
            /* rank 0's clock decides, for everybody (MPI_Allgather is not under test) */
            double now = MPI_Wtime();
            int mine = now - t0 >= seconds;
            MPI_Allgather(&mine, 1, MPI_INT, stops, 1, MPI_INT, MPI_COMM_WORLD);
            stop = stops[0];
            if (rss_warm < 0 && now >= warm_at) {
                rss_warm = rss_kib();
                allow_warm = x.leak_allow;
            }
            if (now - last_note >= 60) {
                last_note = now;
                t_note("    %.0f s: %llu iterations, %llu failed checks on rank 0, VmRSS %ld "
                       "KiB\n", now - t0, it, x.fail, rss_kib());
            }
        }
    }
    free(stops);
    double secs = MPI_Wtime() - t0;
    for (int i = 0; i < NPOOL; i++) {
        MPI_Comm_free(&pool[i].comm);
    }
    res_check(&x, rss_warm < 0 ? rss_kib() : rss_warm, rss_warm < 0 ? x.leak_allow : allow_warm,
              &before);
    res_take(&after);
    res_print("after", &after);
    ctx_report("soak", &x, secs);
    pvars_report(&x, v0, 7);
    bufs_free(&b);
    t_npass += x.pass;
    t_nfail += x.fail;
    t_nskip += x.skip;
    t_section_end();
}

/* ---- main ------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr, "usage: t_stress (--comm-cycles N | --threads T --comms C [--iters N] | "
            "--soak SECONDS) [--seed S] [--max-bytes B] [--forms bwtpm] [--strict] "
            "[--expect-offload] [--quick] [--trace] [-v]\n");
}

int main(int argc, char **argv)
{
    long cycles = 0, iters = 300;
    int nthreads = 0, ncomms = 4;
    double soak = 0;
    int have_seed = 0;
    unsigned long long seed = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (0 == strcmp(a, "--comm-cycles") && v) {
            cycles = atol(argv[++i]);
        } else if (0 == strcmp(a, "--threads") && v) {
            nthreads = atoi(argv[++i]);
        } else if (0 == strcmp(a, "--comms") && v) {
            ncomms = atoi(argv[++i]);
        } else if (0 == strcmp(a, "--iters") && v) {
            iters = atol(argv[++i]);
        } else if (0 == strcmp(a, "--soak") && v) {
            soak = atof(argv[++i]);
        } else if (0 == strcmp(a, "--seed") && v) {
            seed = strtoull(argv[++i], NULL, 0);
            have_seed = 1;
        } else if (0 == strcmp(a, "--max-bytes") && v) {
            g_max_bytes = (size_t) strtoull(argv[++i], NULL, 0);
        } else if (0 == strcmp(a, "--forms") && v) {
            const char *letters = "bwtpm";      /* in the order of the F_ enum */
            g_forms = 0;
            for (const char *f = argv[++i]; '\0' != *f; f++) {
                const char *at = strchr(letters, *f);
                if (NULL == at) {
                    usage();
                    return 2;
                }
                g_forms |= 1u << (at - letters);
            }
        } else if (0 == strcmp(a, "--trace")) {
            g_trace = 1;
        } else if (0 == strcmp(a, "--strict")) {
            g_strict = 1;
        } else if (0 == strcmp(a, "--expect-offload")) {
            t_opt.expect_offload = 1;
        } else if (0 == strcmp(a, "--quick")) {
            t_opt.quick = 1;
        } else if (0 == strcmp(a, "-v")) {
            t_opt.verbose = 1;
        } else {
            usage();
            return 2;
        }
    }
    int modes = (cycles > 0) + (nthreads > 0) + (soak > 0);
    if (1 != modes || 0 == g_forms || nthreads > MAX_THREADS || ncomms < 1
        || ncomms > MAX_THREAD_COMMS || iters < 1 || g_max_bytes < 1) {
        usage();
        return 2;
    }
    int provided = MPI_THREAD_SINGLE;
    if (nthreads > 0) {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    t_prog = "t_stress";
    MPI_Comm_rank(MPI_COMM_WORLD, &t_wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &t_wsize);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    unsigned long long ordered = 0;
    p_ordered = t_cvar_read_ull("coll_offload_persistent_ordered", &ordered) && ordered;
    if (t_wsize > MAX_RANKS) {
        t_note("t_stress: at most %d ranks\n", MAX_RANKS);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* Everybody takes rank 0's seed and learns the job's pids (MPI_Allgather is
     * not under test). */
    if (!have_seed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = t_mix((uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec) % 1000000007ULL;
    }
    unsigned long long *seeds = malloc(sizeof(seed) * (size_t) t_wsize);
    MPI_Allgather(&seed, 1, MPI_UNSIGNED_LONG_LONG, seeds, 1, MPI_UNSIGNED_LONG_LONG,
                  MPI_COMM_WORLD);
    g_seed = seeds[0];
    free(seeds);
    int pid = (int) getpid();
    job_pids = malloc(sizeof(int) * (size_t) t_wsize);
    MPI_Allgather(&pid, 1, MPI_INT, job_pids, 1, MPI_INT, MPI_COMM_WORLD);

    if (cycles > 0) {
        t_note("t_stress: %d ranks, %ld communicator cycles, seed %llu\n", t_wsize, cycles,
               (unsigned long long) g_seed);
    } else if (nthreads > 0) {
        t_note("t_stress: %d ranks x %d threads x %d communicators, %ld iterations per "
               "thread, seed %llu\n", t_wsize, nthreads, ncomms, iters,
               (unsigned long long) g_seed);
    } else {
        t_note("t_stress: %d ranks, soak %.0f s, up to %zu bytes, seed %llu\n", t_wsize, soak,
               g_max_bytes, (unsigned long long) g_seed);
    }
    ntypes = t_types_select(T_STRESS, types);
    preflight();
    pairs_build();
    pvars_open();
    arrivals_open();
    if (cycles > 0) {
        mode_comm_cycles(cycles);
    } else if (nthreads > 0) {
        mode_threads(nthreads, ncomms, iters, provided);
    } else {
        mode_soak(soak);
    }
    arrivals_close();
    t_pvars_close(&pv[0][0][0], 3 * C_N * 2);
    free(job_pids);
    return t_finish();
}
