/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll_lat: latency of one MPI collective over a sweep of message sizes.
 *
 *   coll_lat -c COLL [-m MIN:MAX] [-i ITERS] [-x WARMUP] [-p S/R[,S1/R1]]
 *            [-t b2b|percall] [-f csv|text] [-h]
 *
 * COLL is allreduce, reduce, bcast or barrier (blocking); iallreduce, ireduce, ibcast or
 * ibarrier (nonblocking); pallreduce, preduce, pbcast or pbarrier (persistent); or forms.
 *
 * The measurement follows the usual micro-benchmark recipe: for every power-of-two
 * size, run WARMUP untimed calls, synchronise with MPI_Barrier, then time ITERS calls
 * with MPI_Wtime.  -t selects how (for forms, within each block): b2b (the default)
 * times the ITERS calls back to back as one interval; percall times each call alone and
 * runs an untimed MPI_Barrier after it, so no call starts while a peer is still busy
 * with the previous one (the way the OSU micro-benchmarks time blocking collectives;
 * back-to-back calls let a fast rank run ahead and hide part of the latency).  Each
 * rank's latency is its timed total divided by ITERS; rank 0 reports the average of
 * those per-rank latencies plus the minimum and maximum over the ranks.
 *
 * -p places the buffers: "S/R" puts the send buffer S bytes and the receive buffer R
 * bytes after a page boundary (0 <= S, R < 4096; a single number N means N/N), and a
 * second value after a comma is used by the odd ranks, e.g. "-p 0/16,2048/64", so that
 * peers can sit at different offsets.  The default, 0/0, is page-aligned.  Components
 * may copy or reduce faster when source and destination share their alignment, so this
 * shows what unaligned applications get.  The reductions' offsets must be multiples of
 * 4 (a float's alignment, as any C program's float array has); bcast uses only the send
 * buffer.  The placement and the timing mode are printed in the header (a comment line
 * before the CSV header), so a results file says what it measured.
 *
 * allreduce and reduce use MPI_FLOAT / MPI_SUM (count = bytes / 4), bcast uses
 * MPI_CHAR, and the root is rank 0; the nonblocking and persistent forms of each use the
 * same arguments, so the three forms of one collective are comparable size by size.  The
 * i-forms (iallreduce, ireduce, ibcast, ibarrier) time MPI_I<coll> + MPI_Wait, the
 * p-forms (pallreduce, preduce, pbcast, pbarrier) MPI_Start + MPI_Wait of a persistent
 * request (MPI_<Coll>_init, made once per size outside the timing and freed after it, as
 * an application would amortise it).  forms times the three forms of allreduce
 * in turn, in 60 alternating blocks of ITERS / 60 calls, and reports each form's median
 * block: a slow phase of the machine then hits all three alike, so their ratios hold
 * even where absolute numbers drift between runs.  barrier, ibarrier and pbarrier have
 * no message and are reported once with bytes = 0.  After each timed loop the result of
 * the last call is checked (for every form), so a collective component that returns
 * wrong data makes the program exit with an error instead of silently reporting a
 * latency.
 *
 * The per-rank latencies are collected with MPI_Gather rather than MPI_Reduce so the
 * statistics do not depend on the reduction code of the component being measured.
 */
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include "mpi_persist.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_MIN_BYTES 4L
#define DEFAULT_MAX_BYTES (1L << 20)
#define SMALL_LIMIT (8L * 1024)   /* sizes below this: ITERS_SMALL */
#define MEDIUM_LIMIT (128L * 1024) /* sizes up to this: ITERS_MEDIUM */
#define ITERS_SMALL 10000
#define ITERS_MEDIUM 1000
#define ITERS_LARGE 100
#define MAX_BYTES_LIMIT (1L << 30)
#define PAGE_BYTES 4096L

/* coll_names[] must list the names in the order of this enum. */
enum coll_kind {
    COLL_ALLREDUCE, COLL_REDUCE, COLL_BCAST, COLL_BARRIER, COLL_IALLREDUCE, COLL_PALLREDUCE,
    COLL_IREDUCE, COLL_IBCAST, COLL_IBARRIER, COLL_PREDUCE, COLL_PBCAST, COLL_PBARRIER,
    COLL_FORMS
};

static const char *const coll_names[] = {
    "allreduce", "reduce", "bcast", "barrier", "iallreduce", "pallreduce",
    "ireduce", "ibcast", "ibarrier", "preduce", "pbcast", "pbarrier", "forms"
};

/* -c forms: the three forms of allreduce, timed in alternating blocks. */
#define FORMS_BLOCKS 60
static const enum coll_kind forms[3] = { COLL_ALLREDUCE, COLL_IALLREDUCE, COLL_PALLREDUCE };

/* The persistent request of the current size (the p-forms and forms). */
static MPI_Request persistent = MPI_REQUEST_NULL;

/*
 * The blocking collective that a form is a variant of: its buffers, sizes and result
 * check are the blocking one's, so that only the way the call is made differs.
 */
static enum coll_kind base_of(enum coll_kind coll)
{
    switch (coll) {
    case COLL_IALLREDUCE:
    case COLL_PALLREDUCE:
    case COLL_FORMS:
        return COLL_ALLREDUCE;
    case COLL_IREDUCE:
    case COLL_PREDUCE:
        return COLL_REDUCE;
    case COLL_IBCAST:
    case COLL_PBCAST:
        return COLL_BCAST;
    case COLL_IBARRIER:
    case COLL_PBARRIER:
        return COLL_BARRIER;
    default:
        return coll;
    }
}

/* Where a rank's buffers start: bytes after a page boundary. */
struct placement {
    long send;
    long recv;
};

struct options {
    enum coll_kind coll;
    long min_bytes;
    long max_bytes;
    int iters;  /* -1: scale with the message size */
    int warmup; /* -1: a tenth of the iterations */
    int csv;
    int percall;             /* -t percall: each call timed alone, barrier between */
    struct placement at[2];  /* -p: even ranks, odd ranks */
    int odd_differs;         /* -p gave a second value */
};

struct buffers {
    float *send; /* reduction input, also the bcast buffer */
    float *recv; /* reduction output */
    void *send_block; /* what posix_memalign returned, for free() */
    void *recv_block;
};

static void usage(FILE *out, const char *prog)
{
    fprintf(out,
            "usage: %s -c COLL [-m MIN:MAX] [-i ITERS] [-x WARMUP] [-p S/R[,S1/R1]]\n"
            "                [-t b2b|percall] [-f csv|text] [-h]\n"
            "  -c COLL     collective to time (required):\n"
            "              blocking:    allreduce, reduce, bcast, barrier\n"
            "              nonblocking: iallreduce, ireduce, ibcast, ibarrier\n"
            "                           (MPI_I<coll> + MPI_Wait)\n"
            "              persistent:  pallreduce, preduce, pbcast, pbarrier\n"
            "                           (MPI_Start + MPI_Wait; MPI_<Coll>_init once per size)\n"
            "              forms:       allreduce, iallreduce, pallreduce in alternating\n"
            "                           blocks\n"
            "  -m MIN:MAX  message sizes in bytes, powers of two from MIN to MAX\n"
            "              (default %ld:%ld; \"MAX\" alone means %ld:MAX)\n"
            "  -i ITERS    timed iterations per size (default %d below %ld B,\n"
            "              %d up to %ld B, %d above)\n"
            "  -x WARMUP   untimed iterations per size (default ITERS / 10)\n"
            "  -p S/R[,S1/R1]\n"
            "              send and receive buffers S and R bytes after a page boundary\n"
            "              (0..%ld; N alone means N/N); S1/R1: the odd ranks' offsets\n"
            "              (default 0/0: page-aligned; reductions: multiples of 4)\n"
            "  -t MODE     b2b: ITERS back-to-back calls timed as one (default);\n"
            "              percall: each call timed alone, an untimed MPI_Barrier after it\n"
            "  -f FORMAT   csv: 'coll,bytes,avg_us,min_us,max_us,iters' lines after a\n"
            "              '#' line naming the placement and mode;\n"
            "              text: aligned columns (default)\n",
            prog, DEFAULT_MIN_BYTES, DEFAULT_MAX_BYTES, DEFAULT_MIN_BYTES, ITERS_SMALL,
            SMALL_LIMIT, ITERS_MEDIUM, MEDIUM_LIMIT, ITERS_LARGE, PAGE_BYTES - 1);
}

/* Parse a non-negative decimal integer that must fit in [lo, hi]. */
static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        return -1;
    }
    *out = v;
    return 0;
}

/* Copies s into buf (64 bytes) and cuts it at the first sep: *rest is what follows it, or
 * NULL when there is none. -1 when s does not fit. */
static int split_at(const char *s, char sep, char buf[64], char **rest)
{
    if (strlen(s) >= 64) {
        return -1;
    }
    strcpy(buf, s);
    *rest = strchr(buf, sep);
    if (*rest != NULL) {
        *(*rest)++ = '\0';
    }
    return 0;
}

/* "MIN:MAX", "MIN:" or "MAX" (min stays at its default). */
static int parse_range(const char *s, long *min_bytes, long *max_bytes)
{
    char buf[64], *max;

    if (split_at(s, ':', buf, &max) != 0) {
        return -1;
    }
    if (max == NULL) {
        return parse_long(buf, 1, MAX_BYTES_LIMIT, max_bytes);
    }
    if (buf[0] != '\0' && parse_long(buf, 1, MAX_BYTES_LIMIT, min_bytes) != 0) {
        return -1;
    }
    if (max[0] != '\0' && parse_long(max, 1, MAX_BYTES_LIMIT, max_bytes) != 0) {
        return -1;
    }
    return 0;
}

/* "S/R" or "N" (= N/N): one rank's offsets, each below a page. */
static int parse_offsets(const char *s, struct placement *at)
{
    char buf[64], *recv;

    if (split_at(s, '/', buf, &recv) != 0
        || parse_long(buf, 0, PAGE_BYTES - 1, &at->send) != 0) {
        return -1;
    }
    if (recv == NULL) {
        at->recv = at->send;
        return 0;
    }
    return parse_long(recv, 0, PAGE_BYTES - 1, &at->recv);
}

/* "EVEN[,ODD]": without ODD, the odd ranks use EVEN too. */
static int parse_placement(const char *s, struct options *opt)
{
    char buf[64], *odd;

    if (split_at(s, ',', buf, &odd) != 0 || parse_offsets(buf, &opt->at[0]) != 0) {
        return -1;
    }
    opt->at[1] = opt->at[0];
    opt->odd_differs = odd != NULL;
    return odd == NULL ? 0 : parse_offsets(odd, &opt->at[1]);
}

/* fprintf to stderr, but only when verbose is set. */
static void complain(int verbose, const char *fmt, ...)
{
    va_list ap;

    if (!verbose) {
        return;
    }
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

/*
 * Returns 0 on success, 1 after -h, -1 on a bad command line.  Only the rank that
 * passes verbose != 0 prints why, so an error is not repeated once per rank.
 */
static int parse_args(int argc, char **argv, struct options *opt, int verbose)
{
    int have_coll = 0;
    int c;
    long v;

    opterr = verbose; /* getopt's own messages too */
    opt->min_bytes = DEFAULT_MIN_BYTES;
    opt->max_bytes = DEFAULT_MAX_BYTES;
    opt->iters = -1;
    opt->warmup = -1;
    opt->csv = 0;
    opt->percall = 0;
    memset(opt->at, 0, sizeof(opt->at));
    opt->odd_differs = 0;

    while ((c = getopt(argc, argv, "c:m:i:x:p:t:f:h")) != -1) {
        switch (c) {
        case 'c':
            for (v = 0; v < (long)(sizeof(coll_names) / sizeof(coll_names[0])); v++) {
                if (strcmp(optarg, coll_names[v]) == 0) {
                    break;
                }
            }
            if (v == (long)(sizeof(coll_names) / sizeof(coll_names[0]))) {
                complain(verbose, "coll_lat: unknown collective '%s'\n", optarg);
                return -1;
            }
            opt->coll = (enum coll_kind)v;
            have_coll = 1;
            break;
        case 'm':
            if (parse_range(optarg, &opt->min_bytes, &opt->max_bytes) != 0) {
                complain(verbose, "coll_lat: bad size range '%s' (want MIN:MAX, 1..%ld)\n",
                         optarg, MAX_BYTES_LIMIT);
                return -1;
            }
            break;
        case 'i':
            if (parse_long(optarg, 1, INT_MAX, &v) != 0) {
                complain(verbose, "coll_lat: bad iteration count '%s'\n", optarg);
                return -1;
            }
            opt->iters = (int)v;
            break;
        case 'x':
            if (parse_long(optarg, 0, INT_MAX, &v) != 0) {
                complain(verbose, "coll_lat: bad warmup count '%s'\n", optarg);
                return -1;
            }
            opt->warmup = (int)v;
            break;
        case 'p':
            if (parse_placement(optarg, opt) != 0) {
                complain(verbose, "coll_lat: bad placement '%s' (want S/R or S/R,S1/R1, "
                         "offsets 0..%ld)\n", optarg, PAGE_BYTES - 1);
                return -1;
            }
            break;
        case 't':
            if (strcmp(optarg, "percall") == 0) {
                opt->percall = 1;
            } else if (strcmp(optarg, "b2b") == 0) {
                opt->percall = 0;
            } else {
                complain(verbose, "coll_lat: unknown timing mode '%s' (b2b or percall)\n",
                         optarg);
                return -1;
            }
            break;
        case 'f':
            if (strcmp(optarg, "csv") == 0) {
                opt->csv = 1;
            } else if (strcmp(optarg, "text") == 0) {
                opt->csv = 0;
            } else {
                complain(verbose, "coll_lat: unknown format '%s' (csv or text)\n", optarg);
                return -1;
            }
            break;
        case 'h':
            return 1;
        default:
            return -1;
        }
    }
    if (optind != argc) {
        complain(verbose, "coll_lat: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (!have_coll) {
        complain(verbose, "coll_lat: -c COLL is required\n");
        return -1;
    }
    if (opt->min_bytes > opt->max_bytes) {
        complain(verbose, "coll_lat: MIN (%ld) is larger than MAX (%ld)\n", opt->min_bytes,
                 opt->max_bytes);
        return -1;
    }
    /* The reductions' buffers are float arrays: a float off its 4-byte boundary is undefined
     * behaviour in this program and in the reduction loops of the components. */
    if (base_of(opt->coll) == COLL_ALLREDUCE || base_of(opt->coll) == COLL_REDUCE) {
        for (v = 0; v < 2; v++) {
            if (opt->at[v].send % (long)sizeof(float) != 0
                || opt->at[v].recv % (long)sizeof(float) != 0) {
                complain(verbose, "coll_lat: %s: placement offsets must be multiples of %zu "
                         "(float data)\n", coll_names[opt->coll], sizeof(float));
                return -1;
            }
        }
    }
    /* Reductions work on whole floats: start the sweep at one element. */
    if (base_of(opt->coll) != COLL_BCAST && base_of(opt->coll) != COLL_BARRIER
        && opt->min_bytes < (long)sizeof(float)) {
        opt->min_bytes = sizeof(float);
        if (opt->max_bytes < opt->min_bytes) {
            opt->max_bytes = opt->min_bytes;
        }
    }
    return 0;
}

static int iters_for(const struct options *opt, long bytes)
{
    if (opt->iters > 0) {
        return opt->iters;
    }
    if (base_of(opt->coll) == COLL_BARRIER || bytes < SMALL_LIMIT) {
        return ITERS_SMALL;
    }
    if (bytes <= MEDIUM_LIMIT) {
        return ITERS_MEDIUM;
    }
    return ITERS_LARGE;
}

static int warmup_for(const struct options *opt, int iters)
{
    if (opt->warmup >= 0) {
        return opt->warmup;
    }
    return iters / 10 > 0 ? iters / 10 : 1;
}

/* The size after 'bytes' in the sweep; barriers have a single, message-less step. */
static long next_size(const struct options *opt, long bytes)
{
    if (base_of(opt->coll) == COLL_BARRIER) {
        return LONG_MAX;
    }
    return bytes * 2;
}

/* Value of element i of rank r's reduction input: small integers, so sums are exact. */
static float input_value(int rank, long i)
{
    return (float)((rank + 1) * (int)(i % 7 + 1));
}

static char bcast_value(long i)
{
    return (char)(i * 31 + 7);
}

/*
 * Fill the buffers for one message size before the warmup and, for the persistent forms,
 * make this size's request (after the buffers, which it is bound to).  Returns the
 * return code of MPI_<Coll>_init, or MPI_SUCCESS.
 */
static int prepare(const struct options *opt, struct buffers *b, long bytes, int rank)
{
    long count = bytes / (long)sizeof(float);
    long i;

    switch (base_of(opt->coll)) {
    case COLL_ALLREDUCE:
    case COLL_REDUCE:
        for (i = 0; i < count; i++) {
            b->send[i] = input_value(rank, i);
            b->recv[i] = -1.0f;
        }
        break;
    case COLL_BCAST:
        for (i = 0; i < bytes; i++) {
            ((char *)b->send)[i] = rank == 0 ? bcast_value(i) : 0;
        }
        break;
    default:
        break;
    }

    /* The previous size's request is bound to that size's count. */
    if (MPI_REQUEST_NULL != persistent) {
        MPI_Request_free(&persistent);
    }
    switch (opt->coll) {
    case COLL_PALLREDUCE:
    case COLL_FORMS:
        return MPI_Allreduce_init(b->send, b->recv, (int)count, MPI_FLOAT, MPI_SUM,
                                  MPI_COMM_WORLD, MPI_INFO_NULL, &persistent);
    case COLL_PREDUCE:
        return MPI_Reduce_init(b->send, b->recv, (int)count, MPI_FLOAT, MPI_SUM, 0,
                               MPI_COMM_WORLD, MPI_INFO_NULL, &persistent);
    case COLL_PBCAST:
        return MPI_Bcast_init(b->send, (int)bytes, MPI_CHAR, 0, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &persistent);
    case COLL_PBARRIER:
        return MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &persistent);
    default:
        return MPI_SUCCESS;
    }
}

/* A nonblocking call's return code, completed with MPI_Wait when the post succeeded. */
static int wait_posted(int rc, MPI_Request *req)
{
    return MPI_SUCCESS == rc ? MPI_Wait(req, MPI_STATUS_IGNORE) : rc;
}

static int run_form(enum coll_kind coll, struct buffers *b, long bytes)
{
    int count = (int)(bytes / (long)sizeof(float));
    MPI_Request req;

    switch (coll) {
    case COLL_ALLREDUCE:
        return MPI_Allreduce(b->send, b->recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    case COLL_REDUCE:
        return MPI_Reduce(b->send, b->recv, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
    case COLL_BCAST:
        return MPI_Bcast(b->send, (int)bytes, MPI_CHAR, 0, MPI_COMM_WORLD);
    case COLL_BARRIER:
        return MPI_Barrier(MPI_COMM_WORLD);
    case COLL_IALLREDUCE:
        return wait_posted(MPI_Iallreduce(b->send, b->recv, count, MPI_FLOAT, MPI_SUM,
                                          MPI_COMM_WORLD, &req), &req);
    case COLL_IREDUCE:
        return wait_posted(MPI_Ireduce(b->send, b->recv, count, MPI_FLOAT, MPI_SUM, 0,
                                       MPI_COMM_WORLD, &req), &req);
    case COLL_IBCAST:
        return wait_posted(MPI_Ibcast(b->send, (int)bytes, MPI_CHAR, 0, MPI_COMM_WORLD, &req),
                           &req);
    case COLL_IBARRIER:
        return wait_posted(MPI_Ibarrier(MPI_COMM_WORLD, &req), &req);
    case COLL_PALLREDUCE:
    case COLL_PREDUCE:
    case COLL_PBCAST:
    case COLL_PBARRIER:
        /* prepare() made this size's request; MPI_Wait makes it inactive, not null. */
        return wait_posted(MPI_Start(&persistent), &persistent);
    case COLL_FORMS:
        break;
    }
    return MPI_ERR_OTHER;
}

static int run_once(const struct options *opt, struct buffers *b, long bytes)
{
    return run_form(opt->coll, b, bytes);
}

/* Check the result of the last call; returns the index of the first bad element or -1. */
static long check(const struct options *opt, const struct buffers *b, long bytes, int rank,
                  int nranks)
{
    long count = bytes / (long)sizeof(float);
    long i;

    switch (base_of(opt->coll)) {
    case COLL_REDUCE:
        /* Only the root's receive buffer is defined. */
        if (rank != 0) {
            return -1;
        }
        /* fall through */
    case COLL_ALLREDUCE:
        for (i = 0; i < count; i++) {
            float want = (float)(nranks * (nranks + 1) / 2 * (int)(i % 7 + 1));
            if (b->recv[i] != want) {
                return i;
            }
        }
        break;
    case COLL_BCAST:
        for (i = 0; i < bytes; i++) {
            if (((const char *)b->send)[i] != bcast_value(i)) {
                return i;
            }
        }
        break;
    default:
        break;
    }
    return -1;
}

/*
 * n timed calls of one form after a barrier; returns the timed seconds, or -1 on error.
 * percall leaves the barrier after each call out of the time.
 */
static double time_calls(enum coll_kind coll, struct buffers *b, long bytes, int n,
                         int percall)
{
    double t0, total = 0.0;
    int i;

    MPI_Barrier(MPI_COMM_WORLD);
    if (!percall) {
        t0 = MPI_Wtime();
        for (i = 0; i < n; i++) {
            if (run_form(coll, b, bytes) != MPI_SUCCESS) {
                return -1.0;
            }
        }
        return MPI_Wtime() - t0;
    }
    for (i = 0; i < n; i++) {
        t0 = MPI_Wtime();
        if (run_form(coll, b, bytes) != MPI_SUCCESS) {
            return -1.0;
        }
        total += MPI_Wtime() - t0;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    return total;
}

/* Time one message size; returns this rank's latency in microseconds, or -1 on error. */
static double measure(const struct options *opt, struct buffers *b, long bytes, int iters,
                      int warmup)
{
    double t;
    int i;

    for (i = 0; i < warmup; i++) {
        if (run_once(opt, b, bytes) != MPI_SUCCESS) {
            return -1.0;
        }
    }
    t = time_calls(opt->coll, b, bytes, iters, opt->percall);
    return t < 0 ? -1.0 : t * 1e6 / iters;
}

/* One output line: the average of the ranks' latencies, and their range. */
static void report(const struct options *opt, const char *name, long bytes,
                   const double *all_lat, int nranks, int iters)
{
    double avg = 0.0, min = all_lat[0], max = all_lat[0];
    for (int i = 0; i < nranks; i++) {
        avg += all_lat[i];
        min = all_lat[i] < min ? all_lat[i] : min;
        max = all_lat[i] > max ? all_lat[i] : max;
    }
    avg /= nranks;
    if (opt->csv) {
        printf("%s,%ld,%.3f,%.3f,%.3f,%d\n", name, bytes, avg, min, max, iters);
    } else {
        printf("%-10s %12ld %12.2f %12.2f %12.2f %8d\n", name, bytes, avg, min, max, iters);
    }
    fflush(stdout);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* -c forms: lat[f] = median over blocks of form f's per-call latency (us); 0 or -1. */
static int measure_forms(const struct options *opt, struct buffers *b, long bytes, int iters,
                         int warmup, double lat[3])
{
    static double block[3][FORMS_BLOCKS];
    int per = iters / FORMS_BLOCKS > 0 ? iters / FORMS_BLOCKS : 1;

    for (int f = 0; f < 3; f++) {
        for (int i = 0; i < warmup / 3 + 1; i++) {
            if (run_form(forms[f], b, bytes) != MPI_SUCCESS) {
                return -1;
            }
        }
    }
    for (int k = 0; k < FORMS_BLOCKS; k++) {
        for (int f = 0; f < 3; f++) {
            /* Rotate the order so that no form always follows the same one. */
            int g = (f + k) % 3;
            double t = time_calls(forms[g], b, bytes, per, opt->percall);
            if (t < 0) {
                return -1;
            }
            block[g][k] = t * 1e6 / per;
        }
    }
    for (int f = 0; f < 3; f++) {
        qsort(block[f], FORMS_BLOCKS, sizeof(double), cmp_double);
        lat[f] = block[f][FORMS_BLOCKS / 2];
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct options opt;
    struct buffers b = { NULL, NULL, NULL, NULL };
    const struct placement *here;
    double *all_lat = NULL;
    long bytes, first, alloc;
    int rank, nranks, rc, status = EXIT_SUCCESS;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    /* Report failures of the measured collective as return codes instead of aborting. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    rc = parse_args(argc, argv, &opt, rank == 0);
    if (rc != 0) {
        if (rank == 0) {
            usage(rc > 0 ? stdout : stderr, argv[0]);
        }
        MPI_Finalize();
        return rc > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
    }

    /* A blocking collective first, as applications do early on: components
     * that set a communicator up lazily (coll/offload does it at the first
     * blocking collective) are then ready before a persistent request is made. */
    MPI_Barrier(MPI_COMM_WORLD);

    /* Page-aligned blocks with room for MAX bytes after this rank's offsets, touched once
     * so first-use page faults are not timed. */
    alloc = base_of(opt.coll) == COLL_BARRIER ? (long)sizeof(float) : opt.max_bytes;
    here = &opt.at[rank % 2];
    if (posix_memalign(&b.send_block, PAGE_BYTES, (size_t)(alloc + here->send)) != 0
        || posix_memalign(&b.recv_block, PAGE_BYTES, (size_t)(alloc + here->recv)) != 0) {
        fprintf(stderr, "coll_lat: rank %d: cannot allocate %ld + %ld bytes\n", rank,
                alloc + here->send, alloc + here->recv);
        MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
    }
    memset(b.send_block, 0, (size_t)(alloc + here->send));
    memset(b.recv_block, 0, (size_t)(alloc + here->recv));
    b.send = (float *)((char *)b.send_block + here->send);
    b.recv = (float *)((char *)b.recv_block + here->recv);
    all_lat = malloc(sizeof(double) * (size_t)nranks);
    if (all_lat == NULL) {
        MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
    }

    if (rank == 0) {
        char odd[64] = "";
        if (opt.odd_differs) {
            snprintf(odd, sizeof(odd), ", odd ranks %ld/%ld", opt.at[1].send, opt.at[1].recv);
        }
        printf("# coll_lat: MPI_%s, %d ranks, buffers at page offsets send/recv %ld/%ld%s, "
               "timing %s\n", coll_names[opt.coll], nranks, opt.at[0].send, opt.at[0].recv,
               odd, opt.percall ? "percall" : "b2b");
        if (opt.csv) {
            printf("coll,bytes,avg_us,min_us,max_us,iters\n");
        } else {
            printf("%-10s %12s %12s %12s %12s %8s\n", "# coll", "bytes", "avg_us", "min_us",
                   "max_us", "iters");
        }
        fflush(stdout);
    }

    /* The sweep starts at the smallest power of two not below MIN. */
    first = 1;
    while (first < opt.min_bytes) {
        first <<= 1;
    }
    if (base_of(opt.coll) == COLL_BARRIER) {
        first = 0;
    }

    for (bytes = first; bytes <= opt.max_bytes; bytes = next_size(&opt, bytes)) {
        int iters = iters_for(&opt, bytes);
        int warmup = warmup_for(&opt, iters);
        double lat;
        long bad;
        int i, any_bad;

        if (prepare(&opt, &b, bytes, rank) != MPI_SUCCESS) {
            fprintf(stderr, "coll_lat: rank %d: %s: making the persistent request failed "
                    "at %ld bytes\n", rank, coll_names[opt.coll], bytes);
            MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
        }
        if (COLL_FORMS == opt.coll) {
            double fl[3];
            if (measure_forms(&opt, &b, bytes, iters, warmup, fl) != 0) {
                fprintf(stderr, "coll_lat: rank %d: an allreduce form failed at %ld bytes\n",
                        rank, bytes);
                MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
            }
            bad = check(&opt, &b, bytes, rank, nranks);
            i = bad >= 0;
            MPI_Allreduce(&i, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            if (any_bad) {
                fprintf(stderr, "coll_lat: wrong allreduce result at %ld bytes\n", bytes);
                status = EXIT_FAILURE;
                break;
            }
            for (int f = 0; f < 3; f++) {
                MPI_Gather(&fl[f], 1, MPI_DOUBLE, all_lat, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
                if (rank == 0) {
                    report(&opt, coll_names[forms[f]], bytes, all_lat, nranks, iters);
                }
            }
            continue;
        }
        lat = measure(&opt, &b, bytes, iters, warmup);
        if (lat < 0) {
            fprintf(stderr, "coll_lat: rank %d: MPI_%s failed at %ld bytes\n", rank,
                    coll_names[opt.coll], bytes);
            MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
        }

        bad = check(&opt, &b, bytes, rank, nranks);
        if (bad >= 0) {
            fprintf(stderr, "coll_lat: rank %d: MPI_%s gave a wrong result at %ld bytes "
                    "(element %ld)\n", rank, coll_names[opt.coll], bytes, bad);
        }
        i = bad >= 0;
        MPI_Allreduce(&i, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any_bad) {
            status = EXIT_FAILURE;
            break;
        }

        MPI_Gather(&lat, 1, MPI_DOUBLE, all_lat, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            report(&opt, coll_names[opt.coll], bytes, all_lat, nranks, iters);
        }
    }

    if (MPI_REQUEST_NULL != persistent) {
        MPI_Request_free(&persistent);
    }
    free(all_lat);
    free(b.send_block);
    free(b.recv_block);
    MPI_Finalize();
    return status;
}
