/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll-offload-tune — measures coll/offload's algorithms against each other and
 * against the layer below on the node it runs on, and writes a rules file
 * (docs/rules-format.md) that the component reads at start-up.
 *
 *     mpirun -np N coll-offload-tune [options]      (N: the ranks a node will run)
 *
 * Each candidate (an algorithm, a tree shape, the layer below, the defaults) runs on a
 * communicator of its own, made with the info key coll_offload_rules, so one job tries
 * them all. Candidates are sampled in rounds, interleaved, and compared by their
 * medians; every candidate's result is checked before it is timed. Each sample times a
 * candidate in two patterns, half a sample each: back to back (one interval over many
 * calls) and per call (each call timed alone, an untimed barrier after it, as the OSU
 * micro-benchmarks time collectives). Back-to-back calls let a fast rank run ahead and
 * hide part of a call's latency; per-call timing exposes what a call costs after its
 * peers have synchronised. An algorithm can win one pattern and lose the other, so a
 * candidate's figure is the worse (larger) of its two medians: advice must hold however
 * the application calls. The buffers are page-aligned, as the benchmarks' and most
 * large allocations are. Sizes start on a coarse grid and are refined where the fastest
 * algorithm changes. The defaults keep a size unless another algorithm beats them by
 * more than the margin, so a file written here never advises what measured slower than
 * the defaults.
 */
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clocks.h"
#include "engine/board.h"
#include "nic/nic.h"
#include "sched/policy.h"
#include "sched/rules.h"
#include "sched/sched.h"

#define MAX_CANDS   16
#define MAX_POINTS  48
#define MAX_NS      16
#define MIN_SAMPLE  0.5e-3   /* seconds a sample takes at least */
#define MAX_SAMPLE  20e-3
#define PAGE_BYTES  4096

static const char *const coll_names[OFL_COLL_COUNT] = { "allreduce", "reduce", "bcast",
                                                        "barrier" };

typedef struct {
    double budget;         /* seconds for the whole run */
    int colls[OFL_COLL_COUNT];
    size_t min_bytes, max_bytes;
    int ns[MAX_NS];
    int nns;
    const char *out;
    const char *add;       /* rules of another file (the simulator's) for larger sizes */
    double margin;         /* fraction another algorithm must beat the defaults by */
    int rounds;
    int rounds_given;
    int quiet;
} opts_t;

typedef struct {
    char name[48];         /* "tree kary-2", "below", "defaults" */
    char key[200];         /* the info key's value */
    ofl_alg_t alg;         /* what a policy calls it (below: OFL_ALG_FALLBACK) */
    int tree, radix;       /* -1/0: the defaults' */
    int is_default;
    int bad;               /* gave a wrong result: never advised */
    MPI_Comm comm;
} cand_t;

typedef struct {
    size_t bytes;
    double med[MAX_CANDS]; /* seconds per call, the worse of the two below; NAN: not measured */
    double b2b[MAX_CANDS]; /* median over rounds, calls back to back */
    double pcall[MAX_CANDS]; /* median over rounds, each call alone between barriers */
} point_t;

typedef struct {
    int coll, n;
    cand_t cand[MAX_CANDS];
    int ncand;
    point_t pt[MAX_POINTS];
    int npt;
    char rule[512];        /* the rule written, "" if none */
    char notes[16384];     /* comment lines for the file */
    size_t notes_len;
} study_t;

static int wrank, wsize;
static double t_start;
static long samples_done, samples_planned;
static double sample_secs = 2e-3;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    if (0 == wrank) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "coll-offload-tune: ");
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\n");
        va_end(ap);
    }
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

static void note(study_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(study_t *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(s->notes + s->notes_len, sizeof(s->notes) - s->notes_len, fmt, ap);
    va_end(ap);
    if (k > 0) {
        s->notes_len += (size_t) k;
        if (s->notes_len >= sizeof(s->notes)) {
            s->notes_len = sizeof(s->notes) - 1;
        }
    }
}

static void usage(FILE *f)
{
    fprintf(f,
"usage: mpirun -np N coll-offload-tune [options]\n"
"\n"
"Measures coll/offload's algorithms (board, exchange, split, tree shapes, get) against\n"
"each other, against the component's defaults and against the layer below (tuned), on\n"
"this node, for each collective, message size and communicator size asked for, and\n"
"writes a rules file that coll/offload reads at start-up. Run it with as many ranks as\n"
"the node's jobs will run (one per core is typical), with the component selected as\n"
"usual (it must be loadable: coll_offload_priority above tuned's).\n"
"\n"
"  --out FILE        where to write the rules (default: coll-offload-rules.conf here;\n"
"                    install it as <prefix>/etc/coll-offload-rules.conf or name it\n"
"                    with --mca coll_offload_rules_file FILE)\n"
"  --budget SECONDS  time to spend (default 180); samples are shortened to fit it\n"
"  --colls LIST      allreduce,reduce,bcast,barrier (default: all four)\n"
"  --sizes MIN:MAX   message sizes in bytes, k/m suffixes (default 4:4m)\n"
"  --ranks LIST      communicator sizes, each <= N (default 2, 4, 8, ... and N)\n"
"  --margin PCT      how much faster than the defaults an algorithm must be to be\n"
"                    advised instead (default 3)\n"
"  --rounds R        interleaved rounds per point (default 5, up to 15 where the\n"
"                    budget allows); a round times each candidate back to back and\n"
"                    per call (each call alone between barriers), half a sample\n"
"                    each, and the worse of the two medians counts\n"
"  --add FILE        also write FILE's rules (e.g. `sim rules` output) for the\n"
"                    communicator sizes above the largest measured\n"
"  --quiet           no progress lines\n"
"  --help            this text\n"
"\n"
"The file holds one rule per collective and measured communicator size range: the\n"
"per-size policy, and for reduce and bcast the tree shape, each with the medians it\n"
"was chosen from as comments. See docs/rules-format.md and coll-offload-tune(1).\n");
}

static size_t parse_size(const char *s)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || v < 0) {
        die("bad size '%s'", s);
    }
    switch (*end) {
    case 'k': case 'K': v *= 1024; ++end; break;
    case 'm': case 'M': v *= 1024 * 1024; ++end; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; ++end; break;
    default: break;
    }
    if ('\0' != *end) {
        die("bad size '%s'", s);
    }
    return (size_t) v;
}

static void parse_args(int argc, char **argv, opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->budget = 180;
    for (int k = 0; k < OFL_COLL_COUNT; ++k) {
        o->colls[k] = 1;
    }
    o->min_bytes = 4;
    o->max_bytes = 4u << 20;
    o->out = "coll-offload-rules.conf";
    o->margin = 0.03;
    o->rounds = 5;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            if (0 == wrank) {
                usage(stdout);
            }
            MPI_Finalize();
            exit(0);
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (NULL == v) {
            die("%s needs a value (--help)", a);
        } else if (!strcmp(a, "--out")) {
            o->out = v, ++i;
        } else if (!strcmp(a, "--add")) {
            o->add = v, ++i;
        } else if (!strcmp(a, "--budget")) {
            o->budget = atof(v), ++i;
            if (o->budget <= 0) {
                die("--budget wants seconds > 0");
            }
        } else if (!strcmp(a, "--margin")) {
            o->margin = atof(v) / 100.0, ++i;
            if (o->margin < 0 || o->margin > 1) {
                die("--margin wants 0..100 (percent)");
            }
        } else if (!strcmp(a, "--rounds")) {
            o->rounds = atoi(v), o->rounds_given = 1, ++i;
            if (o->rounds < 1 || o->rounds > 99) {
                die("--rounds wants 1..99");
            }
        } else if (!strcmp(a, "--colls")) {
            memset(o->colls, 0, sizeof(o->colls));
            char buf[256];
            snprintf(buf, sizeof(buf), "%s", v);
            for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
                int k = 0;
                while (k < OFL_COLL_COUNT && strcmp(t, coll_names[k])) {
                    ++k;
                }
                if (k == OFL_COLL_COUNT) {
                    die("unknown collective '%s' (allreduce, reduce, bcast, barrier)", t);
                }
                o->colls[k] = 1;
            }
            ++i;
        } else if (!strcmp(a, "--sizes")) {
            char buf[64];
            snprintf(buf, sizeof(buf), "%s", v);
            char *colon = strchr(buf, ':');
            if (NULL == colon) {
                die("--sizes MIN:MAX");
            }
            *colon = '\0';
            o->min_bytes = parse_size(buf);
            o->max_bytes = parse_size(colon + 1);
            if (o->min_bytes < 4 || o->max_bytes < o->min_bytes || o->max_bytes > (1u << 30)) {
                die("--sizes: 4 <= MIN <= MAX <= 1g");
            }
            ++i;
        } else if (!strcmp(a, "--ranks")) {
            char buf[256];
            snprintf(buf, sizeof(buf), "%s", v);
            for (char *t = strtok(buf, ","); t && o->nns < MAX_NS; t = strtok(NULL, ",")) {
                int n = atoi(t);
                if (n < 2 || n > wsize) {
                    die("--ranks: each between 2 and the job's %d ranks, not '%s'", wsize, t);
                }
                if (o->nns > 0 && n <= o->ns[o->nns - 1]) {
                    die("--ranks: increasing sizes");
                }
                o->ns[o->nns++] = n;
            }
            ++i;
        } else {
            die("unknown option '%s' (--help)", a);
        }
    }
    if (0 == o->nns) {
        for (int n = 2; n < wsize && o->nns < MAX_NS - 1; n *= 2) {
            o->ns[o->nns++] = n;
        }
        o->ns[o->nns++] = wsize;
    }
}

/* ---- the component's defaults, read through MPI_T ------------------------------------ */

/* A control variable's value: a string into out, or an int (enums too) into *ival. */
static int cvar_read(const char *want, char *out, int len, int *ival)
{
    int num = 0;
    MPI_T_cvar_get_num(&num);
    for (int i = 0; i < num; ++i) {
        char name[256], desc[64];
        int nlen = sizeof(name), dlen = sizeof(desc), verb, bind, scope;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_SUCCESS != MPI_T_cvar_get_info(i, name, &nlen, &verb, &dt, &en, desc, &dlen,
                                               &bind, &scope)
            || strcmp(name, want)) {
            continue;
        }
        MPI_T_cvar_handle h;
        int count = 0;
        if (MPI_SUCCESS != MPI_T_cvar_handle_alloc(i, NULL, &h, &count)) {
            return -1;
        }
        int is_string = MPI_CHAR == dt;
        if (is_string != (NULL != out) || (!is_string && MPI_INT != dt)) {
            MPI_T_cvar_handle_free(&h);
            return -1;
        }
        _Alignas(8) char buf[4096] = "";
        int rc = (is_string ? count < (int) sizeof(buf) : 1 == count) ? MPI_T_cvar_read(h, buf)
                                                                      : MPI_ERR_OTHER;
        MPI_T_cvar_handle_free(&h);
        if (MPI_SUCCESS != rc) {
            return -1;
        }
        if (is_string) {
            snprintf(out, (size_t) len, "%s", buf);
        } else {
            memcpy(ival, buf, sizeof(int));
        }
        return 0;
    }
    return -1;
}

/* ---- candidates ------------------------------------------------------------------------- */

static void add_cand(study_t *s, const char *name, ofl_alg_t alg, int tree, int radix,
                     int is_default)
{
    cand_t *c = &s->cand[s->ncand++];
    memset(c, 0, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "%s", name);
    c->alg = alg;
    c->tree = tree;
    c->radix = radix;
    c->is_default = is_default;
    const char *coll = coll_names[s->coll];
    if (is_default) {
        c->key[0] = '\0';   /* no rule: the MCA values, whatever a rules file says */
    } else if (tree >= 0) {
        snprintf(c->key, sizeof(c->key), "%s 1+ policy=%s tree=%s radix=%d", coll,
                 ofl_alg_name(alg), ofl_tree_kind_name((ofl_tree_kind_t) tree), radix);
    } else {
        snprintf(c->key, sizeof(c->key), "%s 1+ policy=%s", coll, ofl_alg_name(alg));
    }
}

static void make_cands(study_t *s, int exchange_ok)
{
    s->ncand = 0;
    add_cand(s, "defaults", OFL_ALG_FALLBACK, -1, 0, 1);
    add_cand(s, "below", OFL_ALG_FALLBACK, -1, 0, 0);
    add_cand(s, "board", OFL_ALG_BOARD, -1, 0, 0);
    switch (s->coll) {
    case OFL_COLL_ALLREDUCE:
        if (exchange_ok) {
            add_cand(s, "exchange", OFL_ALG_EXCHANGE, -1, 0, 0);
        }
        add_cand(s, "split", OFL_ALG_SPLIT, -1, 0, 0);
        add_cand(s, "tree", OFL_ALG_TREE, -1, 0, 0);
        break;
    case OFL_COLL_BARRIER:
        if (exchange_ok) {
            add_cand(s, "exchange", OFL_ALG_EXCHANGE, -1, 0, 0);
        }
        add_cand(s, "tree", OFL_ALG_TREE, -1, 0, 0);
        break;
    default: {
        /* On 2 or 3 ranks every shape is the same tree. */
        static const struct {
            ofl_tree_kind_t kind;
            int radix;
        } shapes[] = { { OFL_TREE_KNOMIAL, 4 }, { OFL_TREE_KNOMIAL, 2 }, { OFL_TREE_KARY, 2 },
                       { OFL_TREE_KARY, 4 }, { OFL_TREE_FLAT, 2 } };
        int nshapes = s->n <= 3 ? 1 : s->n <= 8 ? 5 : 4;
        for (int k = 0; k < nshapes; ++k) {
            char name[48];
            snprintf(name, sizeof(name), "tree %s-%d", ofl_tree_kind_name(shapes[k].kind),
                     shapes[k].radix);
            add_cand(s, name, OFL_ALG_TREE, (int) shapes[k].kind, shapes[k].radix, 0);
            if (OFL_COLL_BCAST == s->coll) {
                snprintf(name, sizeof(name), "get %s-%d", ofl_tree_kind_name(shapes[k].kind),
                         shapes[k].radix);
                add_cand(s, name, OFL_ALG_GET, (int) shapes[k].kind, shapes[k].radix, 0);
            }
        }
        break;
    }
    }
}

static void open_cands(study_t *s, MPI_Comm sub)
{
    for (int k = 0; k < s->ncand; ++k) {
        cand_t *c = &s->cand[k];
        MPI_Info info;
        MPI_Info_create(&info);
        /* an empty rule list: no rule, whatever the rules file says */
        MPI_Info_set(info, "coll_offload_rules", c->key[0] ? c->key : " ");
        if (MPI_SUCCESS != MPI_Comm_dup_with_info(sub, info, &c->comm)) {
            die("MPI_Comm_dup_with_info failed");
        }
        MPI_Info_free(&info);
        char name[64];
        snprintf(name, sizeof(name), "tune-%s", c->name);
        MPI_Comm_set_name(c->comm, name);
    }
}

static void close_cands(study_t *s)
{
    for (int k = 0; k < s->ncand; ++k) {
        MPI_Comm_free(&s->cand[k].comm);
    }
}

/* ---- one call, checked and timed --------------------------------------------------------- */

static float *sendbuf, *recvbuf;

static int call(int coll, MPI_Comm comm, size_t bytes)
{
    int count = (int) (bytes / sizeof(float));
    switch (coll) {
    case OFL_COLL_ALLREDUCE:
        return MPI_Allreduce(sendbuf, recvbuf, count, MPI_FLOAT, MPI_SUM, comm);
    case OFL_COLL_REDUCE:
        return MPI_Reduce(sendbuf, recvbuf, count, MPI_FLOAT, MPI_SUM, 0, comm);
    case OFL_COLL_BCAST:
        return MPI_Bcast(recvbuf, (int) bytes, MPI_CHAR, 0, comm);
    default:
        return MPI_Barrier(comm);
    }
}

/* One call on data whose result is known: 1 if right on every rank. Float sums of small
 * integers are exact in any order. */
static int check(int coll, MPI_Comm comm, size_t bytes)
{
    int rank, n;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &n);
    size_t count = bytes / sizeof(float);
    for (size_t i = 0; i < count; ++i) {
        sendbuf[i] = (float) ((rank + 1) * (int) (i % 7 + 1));
        recvbuf[i] = OFL_COLL_BCAST == coll && 0 != rank ? -1.0f : (float) (i % 13);
    }
    int ok = MPI_SUCCESS == call(coll, comm, bytes);
    for (size_t i = 0; ok && i < count; ++i) {
        float want = (float) (i % 13);
        if (OFL_COLL_ALLREDUCE == coll || (OFL_COLL_REDUCE == coll && 0 == rank)) {
            want = (float) (n * (n + 1) / 2 * (int) (i % 7 + 1));
        } else if (OFL_COLL_REDUCE == coll || OFL_COLL_BARRIER == coll) {
            break;
        }
        ok = recvbuf[i] == want;
    }
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    return all;
}

/* Seconds per call over `iters` calls back to back: the slowest rank's. */
static double timed(int coll, MPI_Comm comm, size_t bytes, int iters)
{
    MPI_Barrier(comm);
    double t0 = now_s();
    for (int i = 0; i < iters; ++i) {
        call(coll, comm, bytes);
    }
    double t = (now_s() - t0) / iters, tmax = 0;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, comm);
    return tmax;
}

/* Seconds per call over `iters` calls, each timed alone with an untimed MPI_Barrier after
 * it, so that every call starts once the previous one has finished on all ranks: the
 * slowest rank's. The barrier runs on the candidate's communicator, as a benchmark's runs
 * on the communicator it measures. *wall (if not NULL): the slowest rank's seconds per
 * iteration, barrier included, for sizing the samples. */
static double timed_percall(int coll, MPI_Comm comm, size_t bytes, int iters, double *wall)
{
    MPI_Barrier(comm);
    double t[2] = { 0, now_s() }, tmax[2] = { 0, 0 };
    for (int i = 0; i < iters; ++i) {
        double t0 = now_s();
        call(coll, comm, bytes);
        t[0] += now_s() - t0;
        MPI_Barrier(comm);
    }
    t[1] = now_s() - t[1];
    t[0] /= iters;
    t[1] /= iters;
    MPI_Allreduce(t, tmax, 2, MPI_DOUBLE, MPI_MAX, comm);
    if (NULL != wall) {
        *wall = tmax[1];
    }
    return tmax[0];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static void progress(const opts_t *o, const study_t *s, const point_t *p, int best)
{
    if (o->quiet || 0 != wrank) {
        return;
    }
    double el = now_s() - t_start;
    double frac = samples_planned > 0 ? (double) samples_done / (double) samples_planned : 0;
    frac = frac > 0.99 ? 0.99 : frac;
    double eta = frac > 0 ? el / frac - el : 0;
    printf("[%3.0f%% %4.0fs, ETA %4.0fs] %-9s np %-3d %8zu B: best %-14s %9.3f us, below "
           "%9.3f us, defaults %9.3f us\n",
           100 * frac, el, eta, coll_names[s->coll], s->n, OFL_COLL_BARRIER == s->coll ? 0
           : p->bytes, s->cand[best].name, 1e6 * p->med[best], 1e6 * p->med[1],
           1e6 * p->med[0]);
    fflush(stdout);
}

/* Whether the candidate runs as itself at this size: the board holds at most
 * OFL_BOARD_MAX_LINES lines of payload per rank, on at most OFL_BOARD_MAX_RANKS ranks;
 * beyond that "board" runs another algorithm, which its own candidate measures. */
static int fits(const study_t *s, const cand_t *c, size_t bytes)
{
    return OFL_ALG_BOARD != c->alg || c->is_default
           || (bytes <= (size_t) OFL_BOARD_MAX_LINES * OFL_BOARD_LINE_BYTES
               && s->n <= OFL_BOARD_MAX_RANKS);
}

/* Measure every candidate at `bytes`: checked once, then `rounds` interleaved samples
 * each, a sample being both timing patterns at half a sample's time each; the point's
 * medians per pattern and the worse of the two. Returns the point's index. */
static int measure(const opts_t *o, study_t *s, size_t bytes)
{
    if (s->npt == MAX_POINTS) {
        return -1;
    }
    point_t *p = &s->pt[s->npt];
    p->bytes = bytes;
    /* iterations for a sample: from the layer below's time over enough calls that the
     * first, cold ones do not count (timed() is the slowest rank's: all agree) */
    int iters = 1;
    double t1 = 0;
    for (;;) {
        t1 = timed(s->coll, s->cand[1].comm, bytes, iters);
        if (t1 * iters >= sample_secs / 8 || iters >= (1 << 20)) {
            break;
        }
        iters *= 4;
    }
    t1 = t1 > 1e-9 ? t1 : 1e-9;
    /* each pattern gets half a sample, so that tuning takes as long as with one pattern.
     * The per-call pattern's count comes from its own time per iteration, barrier
     * included, probed over about an eighth of a sample (the probe's count guesses an
     * iteration at three calls: the call, and a barrier taking about two) */
    int iters_b = (int) (sample_secs / 2 / t1);
    iters_b = iters_b < 2 ? 2 : iters_b > (1 << 22) ? (1 << 22) : iters_b;
    int probe = (int) (sample_secs / 8 / (3 * t1));
    probe = probe < 2 ? 2 : probe > (1 << 20) ? (1 << 20) : probe;
    double w1 = 0;
    timed_percall(s->coll, s->cand[1].comm, bytes, probe, &w1);
    w1 = w1 > 1e-9 ? w1 : 1e-9;
    int iters_p = (int) (sample_secs / 2 / w1);
    iters_p = iters_p < 2 ? 2 : iters_p > (1 << 22) ? (1 << 22) : iters_p;
    double samp_b[MAX_CANDS][99], samp_p[MAX_CANDS][99];
    for (int k = 0; k < s->ncand; ++k) {
        cand_t *c = &s->cand[k];
        p->med[k] = p->b2b[k] = p->pcall[k] = NAN;
        if (!fits(s, c, bytes)) {
            continue;
        }
        if (!c->bad && !check(s->coll, c->comm, bytes)) {
            c->bad = 1;
            note(s, "# %s at %zu B gave a wrong result: never advised\n", c->name, bytes);
            if (0 == wrank) {
                fprintf(stderr, "coll-offload-tune: %s %s np %d %zu B: WRONG RESULT\n",
                        coll_names[s->coll], c->name, s->n, bytes);
            }
        }
        if (!c->bad) {
            /* warm up */
            timed(s->coll, c->comm, bytes, iters_b / 4 + 1);
            timed_percall(s->coll, c->comm, bytes, iters_p / 4 + 1, NULL);
        }
    }
    for (int r = 0; r < o->rounds; ++r) {
        for (int j = 0; j < s->ncand; ++j) {
            int k = (j + r) % s->ncand;   /* rotate who goes first */
            if (s->cand[k].bad || !fits(s, &s->cand[k], bytes)) {
                continue;
            }
            /* the patterns' order alternates between rounds, so that neither always
             * runs right after another candidate's calls */
            for (int q = 0; q < 2; ++q) {
                if ((q + r) % 2) {
                    samp_p[k][r] = timed_percall(s->coll, s->cand[k].comm, bytes, iters_p,
                                                 NULL);
                } else {
                    samp_b[k][r] = timed(s->coll, s->cand[k].comm, bytes, iters_b);
                }
            }
            ++samples_done;
        }
    }
    for (int k = 0; k < s->ncand; ++k) {
        if (!s->cand[k].bad && fits(s, &s->cand[k], bytes)) {
            qsort(samp_b[k], (size_t) o->rounds, sizeof(double), cmp_double);
            qsort(samp_p[k], (size_t) o->rounds, sizeof(double), cmp_double);
            p->b2b[k] = samp_b[k][o->rounds / 2];
            p->pcall[k] = samp_p[k][o->rounds / 2];
            p->med[k] = p->b2b[k] > p->pcall[k] ? p->b2b[k] : p->pcall[k];
        }
    }
    /* keep the points sorted by size */
    int at = s->npt++;
    while (at > 0 && s->pt[at - 1].bytes > bytes) {
        point_t tmp = s->pt[at - 1];
        s->pt[at - 1] = s->pt[at];
        s->pt[at] = tmp;
        --at;
    }
    return at;
}

/* ---- choosing ---------------------------------------------------------------------------- */

/* The candidate whose algorithm the defaults pick at this point (by their policy), or 0. */
static int defaults_pick(const study_t *s, const ofl_policy_t *def, int def_tree, int def_radix,
                         size_t bytes)
{
    ofl_alg_t a = ofl_policy_pick(def, bytes, s->n);
    for (int k = 1; k < s->ncand; ++k) {
        const cand_t *c = &s->cand[k];
        if (c->alg == a && (c->tree < 0 || (c->tree == def_tree && c->radix == def_radix)
                            || s->n <= 3)) {
            return k;
        }
    }
    return 0;
}

/* The winner at a point among the allowed candidates: the fastest, unless the defaults'
 * own choice is within the margin of it. */
static int winner(const opts_t *o, const study_t *s, const point_t *p, const int *allowed,
                  int dflt)
{
    int best = -1;
    for (int k = 1; k < s->ncand; ++k) {
        if (allowed[k] && !isnan(p->med[k]) && (best < 0 || p->med[k] < p->med[best])) {
            best = k;
        }
    }
    if (dflt > 0 && allowed[dflt] && !isnan(p->med[dflt])
        && p->med[dflt] <= p->med[best] * (1 + o->margin)) {
        return dflt;
    }
    /* the defaults as measured, too: a win must beat them by the margin */
    if (!isnan(p->med[0]) && p->med[0] <= p->med[best] * (1 + o->margin) && dflt > 0
        && allowed[dflt]) {
        return dflt;
    }
    return best;
}

/* Which pattern gave candidate k's figure at p: 'b' back to back, 'p' per call. */
static char worse_of(const point_t *p, int k)
{
    return isnan(p->med[k]) ? ' ' : p->b2b[k] >= p->pcall[k] ? 'b' : 'p';
}

static double geomean_ratio(const study_t *s, int k, int ref)
{
    double sum = 0;
    int n = 0;
    for (int i = 0; i < s->npt; ++i) {
        double a = s->pt[i].med[k], b = s->pt[i].med[ref];
        if (!isnan(a) && !isnan(b) && b > 0) {
            sum += log(a / b);
            ++n;
        }
    }
    return n ? exp(sum / n) : NAN;
}

static void size_text(size_t b, char *buf, size_t len)
{
    if (b >= (1u << 20) && 0 == b % (1u << 20)) {
        snprintf(buf, len, "%zum", b >> 20);
    } else if (b >= 1024 && 0 == b % 1024) {
        snprintf(buf, len, "%zuk", b >> 10);
    } else {
        snprintf(buf, len, "%zu", b);
    }
}

/* Per point the winner; runs of one winner merged; at most OFL_POLICY_MAX_RULES runs (the
 * cheapest run to give up goes to its neighbour). Fills win[]. */
static void choose(const opts_t *o, study_t *s, const int *allowed, int dflt_of[MAX_POINTS],
                   int win[MAX_POINTS])
{
    for (int i = 0; i < s->npt; ++i) {
        win[i] = winner(o, s, &s->pt[i], allowed, dflt_of[i]);
    }
    /* one point alone against the defaults' choice on both sides is more likely noise
     * than a crossover: it needs three margins to stand */
    for (int i = 0; i < s->npt; ++i) {
        int d = dflt_of[i];
        int alone = (0 == i || win[i - 1] != win[i]) && (i + 1 == s->npt || win[i + 1] != win[i]);
        if (alone && d > 0 && allowed[d] && win[i] != d && !isnan(s->pt[i].med[d])
            && s->pt[i].med[d] < s->pt[i].med[win[i]] * (1 + 3 * o->margin)) {
            win[i] = d;
        }
    }
    for (;;) {
        int runs = 1;
        for (int i = 1; i < s->npt; ++i) {
            runs += win[i] != win[i - 1];
        }
        if (runs <= OFL_POLICY_MAX_RULES) {
            return;
        }
        /* the run whose points lose least taking a neighbour's algorithm */
        double best_loss = INFINITY;
        int bi = -1, bj = -1, bto = -1;
        for (int i = 0; i < s->npt;) {
            int j = i;
            while (j + 1 < s->npt && win[j + 1] == win[i]) {
                ++j;
            }
            int nb[2] = { i > 0 ? win[i - 1] : -1, j + 1 < s->npt ? win[j + 1] : -1 };
            for (int e = 0; e < 2; ++e) {
                if (nb[e] < 0) {
                    continue;
                }
                double loss = 0;
                for (int q = i; q <= j; ++q) {
                    loss += s->pt[q].med[nb[e]] / s->pt[q].med[win[q]] - 1;
                }
                if (loss < best_loss) {
                    best_loss = loss, bi = i, bj = j, bto = nb[e];
                }
            }
            i = j + 1;
        }
        for (int q = bi; q <= bj; ++q) {
            win[q] = bto;
        }
    }
}

/* The policy text of win[]: each run up to its last point's size; below the first point
 * and above the last, the defaults' entries (sizes not measured keep the defaults'
 * choice; a grid that ends at 4 MiB or more leaves its last run open instead). */
static void policy_text(const opts_t *o, const study_t *s, const int win[MAX_POINTS],
                        const ofl_policy_t *def, char *buf, size_t len)
{
    struct {
        ofl_alg_t alg;
        uint64_t max;
    } e[3 * OFL_POLICY_MAX_RULES + MAX_POINTS];
    int n = 0;
    uint64_t first = s->pt[0].bytes;
    for (int d = 0; d < def->n && def->rule[d].max_bytes < first; ++d) {
        e[n].alg = def->rule[d].alg, e[n++].max = def->rule[d].max_bytes;
    }
    int open_end = o->max_bytes >= (4u << 20);
    uint64_t last = 0;
    for (int i = 0; i < s->npt; ++i) {
        if (i + 1 < s->npt && win[i + 1] == win[i]) {
            continue;
        }
        const cand_t *c = &s->cand[win[i]];
        /* an exchange bound counts what each rank sends: bytes x (ranks - 1) */
        uint64_t bound = s->pt[i].bytes * (OFL_ALG_EXCHANGE == c->alg ? (uint64_t) (s->n - 1)
                                                                      : 1);
        e[n].alg = c->alg;
        e[n++].max = i + 1 < s->npt || !open_end ? bound : UINT64_MAX;
        last = bound;
    }
    for (int d = 0; d < def->n && !open_end; ++d) {
        if (def->rule[d].max_bytes > last) {
            e[n].alg = def->rule[d].alg, e[n++].max = def->rule[d].max_bytes;
        }
    }
    /* neighbours of one algorithm are one entry; sizes must increase */
    int m = 0;
    for (int i = 0; i < n; ++i) {
        if (m > 0 && (e[m - 1].alg == e[i].alg || e[m - 1].max >= e[i].max)) {
            /* the same algorithm goes on; a smaller bound is covered already */
            e[m - 1].max = e[m - 1].max > e[i].max ? e[m - 1].max : e[i].max;
            continue;
        }
        e[m++] = e[i];
    }
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < m; ++i) {
        char sz[32] = "";
        if (UINT64_MAX != e[i].max) {
            size_text((size_t) e[i].max, sz, sizeof(sz));
        }
        at += (size_t) snprintf(buf + at, at < len ? len - at : 0, "%s%s%s%s", at ? "," : "",
                                ofl_alg_name(e[i].alg), sz[0] ? ":" : "", sz);
    }
}

/* Whether the policy text parses and picks at each point what was chosen there. */
static int policy_says(const study_t *s, const char *pol, const int win[MAX_POINTS])
{
    ofl_policy_t p;
    char err[160];
    if (0 != ofl_policy_parse(pol, &p, err, sizeof(err))) {
        return 0;
    }
    for (int i = 0; i < s->npt; ++i) {
        if (ofl_policy_pick(&p, s->pt[i].bytes, s->n) != s->cand[win[i]].alg) {
            return 0;
        }
    }
    return 1;
}

/* ---- one (collective, communicator size) -------------------------------------------------- */

static void study(const opts_t *o, study_t *s, MPI_Comm sub, const ofl_policy_t *def,
                  int def_tree, int def_radix, int exchange_max, double deadline)
{
    make_cands(s, s->n <= exchange_max);
    open_cands(s, sub);
    /* the coarse grid: powers of 4 from min to max (barrier: one point) */
    if (OFL_COLL_BARRIER == s->coll) {
        int i = measure(o, s, 0);
        int best = 1;
        for (int k = 1; k < s->ncand; ++k) {
            best = isnan(s->pt[i].med[k]) ? best : s->pt[i].med[k] < s->pt[i].med[best] ? k
                                                                                         : best;
        }
        progress(o, s, &s->pt[i], best);
    } else {
        for (size_t b = o->min_bytes; b <= o->max_bytes; b = b * 4 < b ? o->max_bytes + 1
                                                                       : b * 4) {
            int i = measure(o, s, b);
            int best = 1;
            for (int k = 1; k < s->ncand; ++k) {
                best = isnan(s->pt[i].med[k]) ? best
                       : s->pt[i].med[k] < s->pt[i].med[best] ? k : best;
            }
            progress(o, s, &s->pt[i], best);
        }
        if (s->pt[s->npt - 1].bytes != o->max_bytes) {
            measure(o, s, o->max_bytes);
        }
    }
    /* trees: one shape per collective and size range, the fastest over all sizes */
    int allowed[MAX_CANDS] = { 0 };
    int shape_tree = -1, shape_radix = 0;
    if (OFL_COLL_REDUCE == s->coll || OFL_COLL_BCAST == s->coll) {
        double best = INFINITY;
        for (int k = 1; k < s->ncand; ++k) {
            const cand_t *c = &s->cand[k];
            if (c->tree < 0 || c->bad || OFL_ALG_TREE != c->alg) {
                continue;
            }
            /* a shape's score: its tree's (and bcast's get) geometric mean against below */
            double g = geomean_ratio(s, k, 1);
            for (int q = 1; OFL_COLL_BCAST == s->coll && q < s->ncand; ++q) {
                if (OFL_ALG_GET == s->cand[q].alg && s->cand[q].tree == c->tree
                    && s->cand[q].radix == c->radix) {
                    double gg = geomean_ratio(s, q, 1);
                    g = isnan(gg) ? g : sqrt(g * gg);
                }
            }
            if (g < best * (1 - o->margin) || (c->tree == def_tree && c->radix == def_radix
                                              && g <= best * (1 + o->margin))) {
                best = g, shape_tree = c->tree, shape_radix = c->radix;
            }
        }
    }
    for (int k = 1; k < s->ncand; ++k) {
        const cand_t *c = &s->cand[k];
        allowed[k] = !c->bad && (c->tree < 0 || s->n <= 3
                                 || (c->tree == shape_tree && c->radix == shape_radix));
    }
    /* refine: between neighbours with different winners, the power of 2 between them */
    int dflt_of[MAX_POINTS], win[MAX_POINTS];
    for (int pass = 0; pass < 6 && OFL_COLL_BARRIER != s->coll; ++pass) {
        for (int i = 0; i < s->npt; ++i) {
            dflt_of[i] = defaults_pick(s, def, def_tree, def_radix, s->pt[i].bytes);
            win[i] = winner(o, s, &s->pt[i], allowed, dflt_of[i]);
        }
        size_t mids[MAX_POINTS];
        int nmid = 0;
        for (int i = 0; i + 1 < s->npt; ++i) {
            size_t a = s->pt[i].bytes, b = s->pt[i + 1].bytes;
            if (win[i] != win[i + 1] && b > 2 * a) {
                size_t m = a * 2;
                while (m * 2 < b && m * m < a * b) {
                    m *= 2;
                }
                mids[nmid++] = m;
            }
        }
        if (0 == nmid || now_s() > deadline) {
            break;
        }
        for (int j = 0; j < nmid; ++j) {
            int i = measure(o, s, mids[j]);
            if (i < 0) {
                break;
            }
            int best = 1;
            for (int k = 1; k < s->ncand; ++k) {
                best = isnan(s->pt[i].med[k]) ? best
                       : s->pt[i].med[k] < s->pt[i].med[best] ? k : best;
            }
            progress(o, s, &s->pt[i], best);
        }
    }
    for (int i = 0; i < s->npt; ++i) {
        dflt_of[i] = defaults_pick(s, def, def_tree, def_radix, s->pt[i].bytes);
    }
    choose(o, s, allowed, dflt_of, win);
    close_cands(s);

    /* the rule, and the numbers it was chosen from; an exchange bound counts bytes x
     * (ranks - 1) and may overtake the next entry's: then without the exchange */
    char pol[400];
    policy_text(o, s, win, def, pol, sizeof(pol));
    if (!policy_says(s, pol, win)) {
        for (int k = 1; k < s->ncand; ++k) {
            allowed[k] = allowed[k] && OFL_ALG_EXCHANGE != s->cand[k].alg;
        }
        for (int i = 0; i < s->npt; ++i) {
            int d = dflt_of[i];
            dflt_of[i] = d > 0 && OFL_ALG_EXCHANGE == s->cand[d].alg ? 0 : d;
        }
        choose(o, s, allowed, dflt_of, win);
        policy_text(o, s, win, def, pol, sizeof(pol));
        note(s, "# (an exchange bound overtook the next entry: chosen without the exchange)\n");
    }
    note(s, "#\n# %s on %d ranks: us per call, the worse of b2b and pcall (medians of %d "
         "rounds each);\n# last column: the candidate advised\n",
         coll_names[s->coll], s->n, o->rounds);
    note(s, "#   %9s %11s %11s %11s %8s %7s %10s %10s\n", "bytes", "advised", "defaults",
         "below", "x below", "x dflt", "adv b2b", "adv pcall");
    for (int i = 0; i < s->npt; ++i) {
        const point_t *p = &s->pt[i];
        double w = p->med[win[i]];
        note(s, "#   %9zu %10.3f%c %10.3f%c %10.3f%c %8.2f %7.2f %10.3f %10.3f  %s%s\n",
             p->bytes, 1e6 * w, worse_of(p, win[i]), 1e6 * p->med[0], worse_of(p, 0),
             1e6 * p->med[1], worse_of(p, 1), p->med[1] / w, p->med[0] / w,
             1e6 * p->b2b[win[i]], 1e6 * p->pcall[win[i]], s->cand[win[i]].name,
             p->med[0] / w < 1 - o->margin ? " (the defaults' run measured faster)" : "");
    }
    note(s, "#   alternatives (geometric mean of time / below's):");
    for (int k = 2; k < s->ncand; ++k) {
        double g = geomean_ratio(s, k, 1);
        note(s, "%s %s %.2f", 2 == k ? "" : ",", s->cand[k].name, g);
    }
    note(s, "\n");
    int at = snprintf(s->rule, sizeof(s->rule), "%s %%s policy=%s", coll_names[s->coll], pol);
    if (shape_tree >= 0 && s->n > 3) {
        snprintf(s->rule + at, sizeof(s->rule) - (size_t) at, " tree=%s radix=%d",
                 ofl_tree_kind_name((ofl_tree_kind_t) shape_tree), shape_radix);
    }
    if (!policy_says(s, pol, win)) {
        note(s, "# (policy %s does not say what was chosen; none written)\n", pol);
        snprintf(s->rule, sizeof(s->rule), "%s", "");
        if (shape_tree >= 0 && s->n > 3) {
            snprintf(s->rule, sizeof(s->rule), "%s %%s tree=%s radix=%d", coll_names[s->coll],
                     ofl_tree_kind_name((ofl_tree_kind_t) shape_tree), shape_radix);
        }
    }
}

/* ---- the file ----------------------------------------------------------------------------- */

static void cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (NULL != f && fgets(line, sizeof(line), f)) {
        char *colon = strchr(line, ':');
        if (0 == strncmp(line, "model name", 10) && NULL != colon) {
            colon += 1 + (' ' == colon[1]);
            colon[strcspn(colon, "\n")] = '\0';
            snprintf(buf, len, "%s", colon);
            break;
        }
    }
    if (NULL != f) {
        fclose(f);
    }
}

/* The rules of --add for communicators above `above` ranks, formatted, or -1. */
static int added_rules(const char *path, int above, char *out, size_t len, int *nout)
{
    FILE *f = fopen(path, "r");
    if (NULL == f) {
        return -1;
    }
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    static ofl_rules_t rules;
    int line = 0;
    char err[160];
    if (0 != ofl_rules_parse(text, n, &rules, &line, err, sizeof(err))) {
        fprintf(stderr, "coll-offload-tune: %s line %d: %s\n", path, line, err);
        return -1;
    }
    size_t at = 0;
    *nout = 0;
    for (int i = 0; i < rules.n; ++i) {
        ofl_rule_t r = rules.rule[i];
        if (r.hi <= above) {
            continue;
        }
        r.lo = r.lo <= above ? above + 1 : r.lo;
        char one[1100];
        ofl_rules_format(&r, one, sizeof(one));
        at += (size_t) snprintf(out + at, at < len ? len - at : 0, "%s\n", one);
        ++*nout;
    }
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    opts_t o;
    parse_args(argc, argv, &o);
    if (wsize < 2) {
        die("run it under mpirun with at least 2 ranks (-np N: the ranks a node will run)");
    }
    int provided;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    char pol_text[OFL_COLL_COUNT][512];
    ofl_policy_t def[OFL_COLL_COUNT];
    for (int k = 0; k < OFL_COLL_COUNT; ++k) {
        char name[64], err[160];
        snprintf(name, sizeof(name), "coll_offload_%s_policy", coll_names[k]);
        if (0 != cvar_read(name, pol_text[k], sizeof(pol_text[k]), NULL)) {
            die("coll/offload is not loaded here (no MPI_T variable %s): check "
                "ompi_info | grep offload", name);
        }
        if (0 != ofl_policy_parse(pol_text[k], &def[k], err, sizeof(err))) {
            die("%s = '%s': %s", name, pol_text[k], err);
        }
    }
    /* the defaults' trees and the exchange's limit; if one cannot be read, the
     * component's documented default */
    int def_tree[OFL_COLL_COUNT] = { 0 }, def_radix[OFL_COLL_COUNT] = { 0 }, exchange_max = 16;
    for (int k = OFL_COLL_REDUCE; k <= OFL_COLL_BCAST; ++k) {
        char name[64];
        snprintf(name, sizeof(name), "coll_offload_%s_tree", coll_names[k]);
        def_tree[k] = OFL_TREE_KNOMIAL;
        cvar_read(name, NULL, 0, &def_tree[k]);
        snprintf(name, sizeof(name), "coll_offload_%s_radix", coll_names[k]);
        def_radix[k] = 4;
        cvar_read(name, NULL, 0, &def_radix[k]);
    }
    cvar_read("coll_offload_exchange_max_ranks", NULL, 0, &exchange_max);
    char in_force[800] = "";
    cvar_read("coll_offload_rules_in_force", in_force, sizeof(in_force), NULL);

    /* page-aligned, as the OSU micro-benchmarks' buffers and most large allocations are
     * (malloc puts a large block 16 bytes past a page boundary, and copies can run at
     * another speed there); touched once so first-use page faults are not timed */
    void *sb = NULL, *rb = NULL;
    if (0 != posix_memalign(&sb, PAGE_BYTES, o.max_bytes + 64)
        || 0 != posix_memalign(&rb, PAGE_BYTES, o.max_bytes + 64)) {
        die("cannot allocate 2 x %zu bytes", o.max_bytes);
    }
    sendbuf = sb;
    recvbuf = rb;
    memset(sendbuf, 0, o.max_bytes + 64);
    memset(recvbuf, 0, o.max_bytes + 64);

    /* the plan, to shorten samples to the budget: candidates x rounds x points, with half
     * again for the refinement, each sample `sample_secs` plus its check and warm-up */
    int ncolls = 0, npts = 0;
    for (size_t b = o.min_bytes; b <= o.max_bytes; b = b * 4 < b ? o.max_bytes + 1 : b * 4) {
        ++npts;
    }
    ++npts;
    long plan = 0;
    for (int k = 0; k < OFL_COLL_COUNT; ++k) {
        if (!o.colls[k]) {
            continue;
        }
        ++ncolls;
        for (int j = 0; j < o.nns; ++j) {
            int cands = OFL_COLL_BARRIER == k ? 5 : OFL_COLL_ALLREDUCE == k ? 6
                        : o.ns[j] <= 3 ? (OFL_COLL_BCAST == k ? 5 : 4)
                        : (OFL_COLL_BCAST == k ? 13 : 8);
            plan += (long) cands * o.rounds * (OFL_COLL_BARRIER == k ? 1 : npts * 3 / 2);
        }
    }
    sample_secs = o.budget * 0.8 / (double) (plan > 0 ? plan : 1);
    sample_secs = sample_secs < MIN_SAMPLE ? MIN_SAMPLE : sample_secs;
    if (sample_secs > MAX_SAMPLE && !o.rounds_given) {
        /* a budget longer than the plan's samples: more rounds (the noise here comes in
         * bursts that a longer sample does not average out, another round does) */
        int r = (int) ((double) o.rounds * sample_secs / MAX_SAMPLE);
        r = r > 15 ? 15 : r;
        plan = plan / o.rounds * r;
        o.rounds = r;
    }
    sample_secs = o.budget * 0.8 / (double) (plan > 0 ? plan : 1);
    sample_secs = sample_secs < MIN_SAMPLE ? MIN_SAMPLE : sample_secs > MAX_SAMPLE
                  ? MAX_SAMPLE : sample_secs;
    samples_planned = plan;
    t_start = now_s();
    if (0 == wrank && wsize > sysconf(_SC_NPROCESSORS_ONLN)) {
        fprintf(stderr, "coll-offload-tune: warning: %d ranks on %ld cores: ranks share cores, "
                "so what is measured is mostly the scheduler; run at most one rank per "
                "core\n", wsize, sysconf(_SC_NPROCESSORS_ONLN));
    }
    if (0 == wrank && !o.quiet) {
        printf("coll-offload-tune: %d ranks; communicator sizes", wsize);
        for (int j = 0; j < o.nns; ++j) {
            printf(" %d", o.ns[j]);
        }
        printf("; %zu..%zu bytes; about %ld samples of %.1f ms (budget %.0f s)\n", o.min_bytes,
               o.max_bytes, plan, 1e3 * sample_secs, o.budget);
        printf("coll-offload-tune: a sample: half back to back, half per call (each call "
               "alone between barriers); times below: the worse of the two medians\n");
        fflush(stdout);
    }

    static study_t st[OFL_COLL_COUNT][MAX_NS];
    for (int j = 0; j < o.nns; ++j) {
        int n = o.ns[j];
        MPI_Comm sub;
        MPI_Comm_split(MPI_COMM_WORLD, wrank < n ? 0 : MPI_UNDEFINED, wrank, &sub);
        if (MPI_COMM_NULL != sub) {
            for (int k = 0; k < OFL_COLL_COUNT; ++k) {
                if (!o.colls[k]) {
                    continue;
                }
                study_t *s = &st[k][j];
                s->coll = k;
                s->n = n;
                double deadline = t_start + o.budget * 0.9;
                study(&o, s, sub, &def[k], def_tree[k], def_radix[k], exchange_max, deadline);
            }
            MPI_Comm_free(&sub);
        }
        /* ranks outside the communicator sleep in a barrier instead of spinning on a core
         * the measured ranks may need */
        MPI_Request req;
        MPI_Ibarrier(MPI_COMM_WORLD, &req);
        int done = 0;
        while (!done) {
            MPI_Test(&req, &done, MPI_STATUS_IGNORE);
            if (!done && wrank >= n) {
                usleep(1000);
            }
        }
    }
    double took = now_s() - t_start;

    int rc = 0;
    if (0 == wrank) {
        FILE *f = fopen(o.out, "w");
        if (NULL == f) {
            perror(o.out);
            rc = 1;
        } else {
            char cpu[256], host[256] = "", lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
            int liblen = 0;
            cpu_model(cpu, sizeof(cpu));
            gethostname(host, sizeof(host) - 1);
            MPI_Get_library_version(lib, &liblen);
            lib[strcspn(lib, "\n,")] = '\0';
            time_t t = time(NULL);
            char date[64];
            strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S UTC", gmtime(&t));
            long cores = sysconf(_SC_NPROCESSORS_ONLN);
            fprintf(f, "# coll/offload rules, measured by coll-offload-tune\n");
            fprintf(f, "# machine: %s, %s, %ld cores online; job of %d ranks\n", host, cpu,
                    cores, wsize);
            fprintf(f, "# date: %s; %s\n", date, lib);
            fprintf(f, "# took %.0f s (budget %.0f s); samples of %.1f ms, %d rounds, margin "
                    "%.0f%%\n", took, o.budget, 1e3 * sample_secs, o.rounds, 100 * o.margin);
            fprintf(f, "# timing: page-aligned buffers; each candidate timed in two patterns, "
                    "half a sample\n# each: b2b (calls back to back) and pcall (each call "
                    "alone, an untimed barrier\n# after it). Its figure is the worse of its "
                    "two medians (b or p after it in the\n# tables: the pattern it came from); "
                    "the ratios and the advice use those figures.\n# 'adv b2b' and 'adv "
                    "pcall': the advised candidate's two medians\n");
            fprintf(f, "# defaults then: allreduce_policy=%s reduce_policy=%s bcast_policy=%s "
                    "barrier_policy=%s\n", pol_text[0], pol_text[1], pol_text[2], pol_text[3]);
            fprintf(f, "# rules file in force then: %s\n", in_force[0] ? in_force : "none");
            if (wsize > cores) {
                fprintf(f, "# OVERSUBSCRIBED: %d ranks on %ld cores; ranks share cores, the "
                        "medians are mostly noise\n", wsize, cores);
            }
            fprintf(f, "# 'x below' is the layer below's time over the advised one's, 'x dflt' "
                    "the defaults'\n");
            fprintf(f, "# (above 1: the advice is faster)\n");
            for (int j = 0; j < o.nns; ++j) {
                for (int k = 0; k < OFL_COLL_COUNT; ++k) {
                    if (o.colls[k]) {
                        fputs(st[k][j].notes, f);
                    }
                }
            }
            fprintf(f, "\nformat 1\n");
            int nrules = 0;
            for (int k = 0; k < OFL_COLL_COUNT; ++k) {
                for (int j = 0; j < o.nns && o.colls[k]; ++j) {
                    if ('\0' == st[k][j].rule[0]) {
                        continue;
                    }
                    char ranks[32];
                    int lo = j > 0 ? o.ns[j - 1] + 1 : 2;
                    if (lo == o.ns[j]) {
                        snprintf(ranks, sizeof(ranks), "%d", lo);
                    } else {
                        snprintf(ranks, sizeof(ranks), "%d-%d", lo, o.ns[j]);
                    }
                    fprintf(f, st[k][j].rule, ranks);
                    fprintf(f, "\n");
                    ++nrules;
                }
            }
            if (NULL != o.add) {
                static char extra[1 << 16];
                int nextra = 0;
                if (0 != added_rules(o.add, o.ns[o.nns - 1], extra, sizeof(extra), &nextra)) {
                    fprintf(stderr, "coll-offload-tune: --add %s: not added\n", o.add);
                    rc = 1;
                } else {
                    fprintf(f, "# from %s, for communicators above %d ranks\n%s", o.add,
                            o.ns[o.nns - 1], extra);
                    nrules += nextra;
                }
            }
            fclose(f);
            /* what was written must be what the component reads */
            FILE *g = fopen(o.out, "r");
            static char text[1 << 20];
            size_t len = NULL != g ? fread(text, 1, sizeof(text), g) : 0;
            if (NULL != g) {
                fclose(g);
            }
            static ofl_rules_t back;
            int line = 0;
            char err[160];
            if (0 != ofl_rules_parse(text, len, &back, &line, err, sizeof(err))) {
                fprintf(stderr, "coll-offload-tune: %s line %d does not parse: %s\n", o.out,
                        line, err);
                rc = 1;
            } else {
                printf("coll-offload-tune: wrote %s (%d rules) in %.0f s\n", o.out, back.n,
                       took);
            }
        }
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(sendbuf);
    free(recvbuf);
    MPI_T_finalize();
    MPI_Finalize();
    return rc;
}
