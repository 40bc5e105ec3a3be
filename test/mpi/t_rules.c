/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * t_rules: the communicator info key coll_offload_rules (docs/rules-format.md, "Per
 * communicator: the info key"), on communicators made with MPI_Comm_dup_with_info.
 *
 *   policies      every policy the key can force, per collective (fallback, tree, board;
 *                 exchange for allreduce and barrier, split for allreduce, get for bcast)
 *                 at 8 B, 1 KiB and 64 KiB where the algorithm means something there,
 *                 reduces and bcasts from the first and the last rank;
 *   trees         tree shapes and radices (kary 2, flat, knomial 3) and rules that apply to
 *                 some communicator sizes only;
 *   disagree      ranks whose keys differ (a key only rank 0 has, another radix, a value
 *                 only rank 0 cannot parse) use the layer below on every rank; keys that
 *                 differ only in spacing, comments and order do not differ;
 *   unparsable    a value no rank can parse leaves the communicator as it would be
 *                 without the key.
 *
 * Every result is compared with a closed form. With --expect-offload the MPI_T counters
 * coll_offload_<coll>_offloaded/_fallback must show each call where the key sent it, and
 * the shared memory the component accounts for (coll_offload_shm_bytes) must be back where
 * it was once a pass has freed its communicators. Everything runs twice, on new
 * communicators, to catch state one communicator leaves to the next.
 *
 * Usage: t_rules [--expect-offload] [-v]
 */
#include "clocks.h"
#include "t_common.h"

#include <time.h>

enum { C_ALLREDUCE, C_REDUCE, C_BCAST, C_BARRIER, C_N };
static const char *const coll_names[C_N] = { "allreduce", "reduce", "bcast", "barrier" };
static const char *const mpi_names[C_N] = { "MPI_Allreduce", "MPI_Reduce", "MPI_Bcast",
                                            "MPI_Barrier" };

#define MAX_BYTES 65536
#define MAX_INTS (MAX_BYTES / (int) sizeof(int))
/* Calls per (collective, size, root): the second, the same call with other data, takes the
 * component's path for a repeat of the last call. */
#define REPS 2

static int me, np;
static int check_paths;         /* --expect-offload and at least 2 ranks */
static int same_host;           /* every rank on one node: CLOCK_MONOTONIC is shared */

/* What the component does whatever the key says (read through MPI_T; see expected()). */
static int crowded;             /* some rank's node runs more ranks than it has cores */
static long long crowded_max = -1;
static unsigned long long max_bytes[C_N] = { ~0ULL, ~0ULL, ~0ULL, ~0ULL };
static int rules_file_in_force; /* coll_offload_rules_in_force names a file */

static t_pvar_t pv[2 * C_N + 1];
static char pv_names[2 * C_N][64];
#define PV_SHM (2 * C_N)

static int in_buf[MAX_INTS], out_buf[MAX_INTS];
static unsigned call_no;        /* calls made so far, the same on every rank: varies inputs */

typedef struct {
    MPI_Comm comm;
    int rank, size;
    const char *key;            /* this rank's value of the key, or NULL */
} tcomm_t;

typedef struct {
    unsigned long long off[C_N], fb[C_N];
} snap_t;

static snap_t snap(void)
{
    snap_t s;
    memset(&s, 0, sizeof(s));
    if (check_paths) {
        for (int c = 0; c < C_N; c++) {
            t_pvar_read(&pv[2 * c], &s.off[c]);
            t_pvar_read(&pv[2 * c + 1], &s.fb[c]);
        }
    }
    return s;
}

/* ---- set-up ------------------------------------------------------------------------- */

/* A string control variable (MCA parameter) into buf; 1 if found. */
static int cvar_read_string(const char *want, char *buf, size_t len)
{
    int provided, num = 0, found = 0;
    buf[0] = '\0';
    if (MPI_SUCCESS != MPI_T_init_thread(MPI_THREAD_SINGLE, &provided)) {
        return 0;
    }
    MPI_T_cvar_get_num(&num);
    for (int i = 0; i < num && !found; i++) {
        char name[256], desc[1024];
        int nlen = sizeof(name), dlen = sizeof(desc), verb, bind, scope, count = 0;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_SUCCESS != MPI_T_cvar_get_info(i, name, &nlen, &verb, &dt, &en, desc, &dlen,
                                               &bind, &scope) || 0 != strcmp(name, want)
            || MPI_CHAR != dt) {
            continue;
        }
        MPI_T_cvar_handle h;
        if (MPI_SUCCESS != MPI_T_cvar_handle_alloc(i, NULL, &h, &count)) {
            continue;
        }
        /* the value is copied whole: give it room beyond what we keep */
        char *tmp = calloc(1, (size_t) (count > 0 ? count : 0) + 4096);
        if (NULL != tmp && MPI_SUCCESS == MPI_T_cvar_read(h, tmp)) {
            snprintf(buf, len, "%s", tmp);
            found = 1;
        }
        free(tmp);
        MPI_T_cvar_handle_free(&h);
    }
    MPI_T_finalize();
    return found;
}

/* Reads what decides a call's path besides the key, and opens the counters. */
static void setup_expectations(void)
{
    same_host = t_all_on_one_host();

    /* The set-up marks a communicator crowded where some rank yields when idle (mpirun
     * says so where a node has more ranks than cores); reduces and bcasts of up to
     * coll_offload_crowded_max bytes then go to the layer below whatever the policy, and
     * larger reduces that the policy hands down run the tree (coll_offload_decide.h). */
    unsigned long long v = 0;
    int yield = t_cvar_read_ull("mpi_yield_when_idle", &v) && 0 != v;
    int *all = malloc(sizeof(int) * (size_t) np);
    MPI_Allgather(&yield, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < np; r++) {
        crowded = crowded || all[r];
    }
    free(all);
    if (t_cvar_read_ull("coll_offload_crowded_max", &v)) {
        crowded_max = (long long) v;
    }
    for (int c = 0; c < C_BARRIER; c++) {
        char name[64];
        snprintf(name, sizeof(name), "coll_offload_%s_max_bytes", coll_names[c]);
        if (t_cvar_read_ull(name, &v)) {
            max_bytes[c] = v;
        }
    }
    char in_force[1024];
    if (cvar_read_string("coll_offload_rules_in_force", in_force, sizeof(in_force))) {
        rules_file_in_force = 0 != strncmp(in_force, "none", 4);
    }

    if (!t_opt.expect_offload) {
        return;
    }
    for (int c = 0; c < C_N; c++) {
        snprintf(pv_names[2 * c], sizeof(pv_names[0]), "coll_offload_%s_offloaded",
                 coll_names[c]);
        snprintf(pv_names[2 * c + 1], sizeof(pv_names[0]), "coll_offload_%s_fallback",
                 coll_names[c]);
        pv[2 * c].name = pv_names[2 * c];
        pv[2 * c + 1].name = pv_names[2 * c + 1];
    }
    pv[PV_SHM].name = "coll_offload_shm_bytes";
    t_pvars_open(pv, 2 * C_N + 1);
    for (int i = 0; i < 2 * C_N + 1; i++) {
        t_check(pv[i].found, "performance variable %s not found", pv[i].name);
    }
    /* A single process has nothing to offload (coll/self serves it). */
    check_paths = np > 1;
}

/* A duplicate of MPI_COMM_WORLD carrying `key` as its coll_offload_rules (NULL: none). */
static tcomm_t dup_with_key(const char *key)
{
    tcomm_t c = { MPI_COMM_NULL, 0, 0, key };
    MPI_Info info;
    MPI_Info_create(&info);
    if (NULL != key) {
        MPI_Info_set(info, "coll_offload_rules", key);
    }
    if (t_check_rc(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c.comm),
                   "MPI_Comm_dup_with_info")) {
        MPI_Comm_set_errhandler(c.comm, MPI_ERRORS_RETURN);
        MPI_Comm_rank(c.comm, &c.rank);
        MPI_Comm_size(c.comm, &c.size);
    }
    MPI_Info_free(&info);
    return c;
}

/*
 * The key is read at the communicator's set-up, which runs inside its first call that the
 * MCA values (or the rules file) send to the NIC (decide_ensure_ready in
 * coll_offload_decide.h); that call, and any before it, go where those values say: its
 * algorithm was chosen before the set-up. A barrier sets the communicator up under the
 * default barrier policy (board) and is itself counted (offloaded, or on the layer below
 * where the set-up falls back); the one-int allreduce after it does where an MCA barrier
 * policy hands barriers down. So the calls measured after these two all follow the key.
 */
static void warm_up(const tcomm_t *c)
{
    int one = 1, sum = 0;
    int rc1 = MPI_Barrier(c->comm);
    int rc2 = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c->comm);
    t_check(MPI_SUCCESS == rc1 && MPI_SUCCESS == rc2 && sum == c->size,
            "set-up calls (key '%s'): MPI_Barrier rc %d, MPI_Allreduce rc %d sum %d want %d",
            c->key ? c->key : "(none)", rc1, rc2, sum, c->size);
}

static void free_comm(tcomm_t *c)
{
    if (MPI_COMM_NULL != c->comm) {
        t_check_rc(MPI_Comm_free(&c->comm), "MPI_Comm_free");
    }
}

/* ---- calls and their results --------------------------------------------------------- */

/* Rank r's input element i of call k, and the sum over `n` ranks of it (closed form). */
static int ar_input(int r, int i, unsigned k)
{
    return (r + 1) * (i % 1009 + 1) + (int) (k % 1000) * r;
}

static int ar_sum(int n, int i, unsigned k)
{
    return (i % 1009 + 1) * n * (n + 1) / 2 + (int) (k % 1000) * n * (n - 1) / 2;
}

static int bc_value(int root, int i, unsigned k)
{
    return (root + 1) * 100003 + 7 * i + (int) (k % 1000);
}

/* One barrier; where every rank shares this node's clock, nobody may leave it before the
 * last rank (made late on purpose, a different one each call) has entered it. */
static void one_barrier(const tcomm_t *c, const char *key)
{
    unsigned k = call_no++;
    if (c->size > 1 && (int) (k % (unsigned) c->size) == c->rank) {
        usleep(1000);
    }
    double t0 = now_s();
    int rc = MPI_Barrier(c->comm);
    double t1 = now_s();
    double *in = malloc(sizeof(double) * (size_t) c->size);
    MPI_Allgather(&t0, 1, MPI_DOUBLE, in, 1, MPI_DOUBLE, c->comm);
    double last = t0;
    for (int r = 0; r < c->size; r++) {
        last = in[r] > last ? in[r] : last;
    }
    free(in);
    t_check(MPI_SUCCESS == rc && (!same_host || t1 >= last),
            "MPI_Barrier (key '%s'): rc %d, left %.6f s before the last rank entered", key, rc,
            last - t1);
}

/* One call of coll with `bytes` of ints (root: reduce and bcast), its result checked. */
static void one_call(const tcomm_t *c, int coll, size_t bytes, int root)
{
    const char *key = NULL != c->key ? c->key : "(none)";
    if (C_BARRIER == coll) {
        one_barrier(c, key);
        return;
    }
    unsigned k = call_no++;
    int n = (int) (bytes / sizeof(int)), rc, bad = -1, got = 0, want = 0;
    if (C_BCAST == coll) {
        for (int i = 0; i < n; i++) {
            in_buf[i] = c->rank == root ? bc_value(root, i, k) : -1 - i;
        }
        rc = MPI_Bcast(in_buf, n, MPI_INT, root, c->comm);
        for (int i = 0; i < n && bad < 0; i++) {
            if (in_buf[i] != bc_value(root, i, k)) {
                bad = i;
                got = in_buf[i];
                want = bc_value(root, i, k);
            }
        }
    } else {
        for (int i = 0; i < n; i++) {
            in_buf[i] = ar_input(c->rank, i, k);
            out_buf[i] = -1;
        }
        rc = C_ALLREDUCE == coll
                 ? MPI_Allreduce(in_buf, out_buf, n, MPI_INT, MPI_SUM, c->comm)
                 : MPI_Reduce(in_buf, out_buf, n, MPI_INT, MPI_SUM, root, c->comm);
        for (int i = 0; i < n && bad < 0 && (C_ALLREDUCE == coll || c->rank == root); i++) {
            if (out_buf[i] != ar_sum(c->size, i, k)) {
                bad = i;
                got = out_buf[i];
                want = ar_sum(c->size, i, k);
            }
        }
    }
    t_check(MPI_SUCCESS == rc && bad < 0, "%s of %zu B root %d (key '%s'): rc %d, int %d is "
            "%d, want %d", mpi_names[coll], bytes, C_ALLREDUCE == coll ? -1 : root, key, rc,
            bad, got, want);
}

/* ---- where the calls must go --------------------------------------------------------- */

enum { P_OFFLOAD, P_FALLBACK };

/* The path of a call of `bytes` whose algorithm (once set up) is the fallback or not
 * (coll_offload_decide.h: the size cap, then the crowded node's rules, then the policy). */
static int expected(int coll, int policy_fallback, size_t bytes)
{
    if (C_BARRIER != coll && bytes > max_bytes[coll]) {
        return P_FALLBACK;
    }
    int crowded_rules = crowded && crowded_max >= 0;
    if (crowded_rules && (C_REDUCE == coll || C_BCAST == coll)
        && (long long) bytes <= crowded_max) {
        return P_FALLBACK;
    }
    if (policy_fallback) {
        return crowded_rules && C_REDUCE == coll ? P_OFFLOAD : P_FALLBACK;
    }
    return P_OFFLOAD;
}

/* Asserts that the `calls` calls of coll between the two snapshots all went `want`. */
static void expect_path(const tcomm_t *c, int coll, size_t bytes, int root, int calls, int want,
                        const snap_t *a, const snap_t *b)
{
    if (!check_paths) {
        t_skip_more();
        return;
    }
    unsigned long long doff = b->off[coll] - a->off[coll], dfb = b->fb[coll] - a->fb[coll];
    unsigned long long n = (unsigned long long) calls;
    int ok = P_FALLBACK == want ? (dfb == n && 0 == doff) : (doff == n && 0 == dfb);
    t_check(ok, "%s of %zu B root %d (key '%s'): %d calls expected %s, but "
            "coll_offload_%s_offloaded rose by %llu and _fallback by %llu", mpi_names[coll],
            bytes, root, NULL != c->key ? c->key : "(none)", calls,
            P_FALLBACK == want ? "on the layer below" : "offloaded", coll_names[coll], doff,
            dfb);
}

/* REPS calls of coll (bytes, root), results checked; *a and *b the snapshots around them. */
static void call_group(const tcomm_t *c, int coll, size_t bytes, int root, snap_t *a,
                       snap_t *b)
{
    *a = snap();
    for (int k = 0; k < REPS; k++) {
        one_call(c, coll, bytes, root);
    }
    *b = snap();
}

/* The roots tried: the first and the last rank. */
static int roots_of(const tcomm_t *c, int roots[2])
{
    roots[0] = 0;
    roots[1] = c->size - 1;
    return c->size > 1 ? 2 : 1;
}

/* Every size (and for reduce and bcast, every root) of coll on c, REPS calls each; each
 * group's path must be where a policy of fallback (policy_fallback) or of an algorithm
 * sends it, or with all_fallback, the layer below whatever the policy. */
static void run_coll(const tcomm_t *c, int coll, const size_t *sizes, int nsizes,
                     int policy_fallback, int all_fallback)
{
    int roots[2], nroots = C_ALLREDUCE == coll || C_BARRIER == coll ? 1 : roots_of(c, roots);
    if (C_BARRIER == coll) {
        nsizes = 1;
    }
    for (int s = 0; s < nsizes; s++) {
        size_t bytes = C_BARRIER == coll ? 0 : sizes[s];
        for (int r = 0; r < nroots; r++) {
            int root = 1 == nroots ? -1 : roots[r];
            snap_t a, b;
            call_group(c, coll, bytes, root < 0 ? 0 : root, &a, &b);
            expect_path(c, coll, bytes, root, REPS,
                        all_fallback ? P_FALLBACK : expected(coll, policy_fallback, bytes), &a,
                        &b);
        }
    }
}

/* ---- the sections -------------------------------------------------------------------- */

#define BIT(c) (1u << (c))
#define ALL_COLLS (BIT(C_ALLREDUCE) | BIT(C_REDUCE) | BIT(C_BCAST) | BIT(C_BARRIER))

static const size_t all_sizes[] = { 8, 1024, 65536 };
static const size_t tiny_size[] = { 8 };
static const size_t large_size[] = { 65536 };

/* One communicator per policy, its key forcing the policy on every collective that has
 * the algorithm. The board holds up to 448 bytes (larger calls run the exchange or the
 * tree, covered by their own rows), so it is tried at 8 B; split cuts a message into
 * segments of at least 16 KiB, one per owner, so it is tried at 64 KiB. */
static const struct {
    const char *alg;
    unsigned colls;
    const size_t *sizes;
    int nsizes;
} policies[] = {
    { "fallback", ALL_COLLS, all_sizes, 3 },
    { "tree", ALL_COLLS, all_sizes, 3 },
    { "board", ALL_COLLS, tiny_size, 1 },
    { "exchange", BIT(C_ALLREDUCE) | BIT(C_BARRIER), all_sizes, 3 },
    { "split", BIT(C_ALLREDUCE), large_size, 1 },
    { "get", BIT(C_BCAST), all_sizes, 3 },
};

static void test_policies(void)
{
    for (size_t p = 0; p < sizeof(policies) / sizeof(policies[0]); p++) {
        char key[256] = "";
        size_t len = 0;
        for (int coll = 0; coll < C_N; coll++) {
            if (policies[p].colls & BIT(coll)) {
                len += (size_t) snprintf(key + len, sizeof(key) - len, "%s%s 1+ policy=%s",
                                         len > 0 ? ";" : "", coll_names[coll],
                                         policies[p].alg);
            }
        }
        tcomm_t c = dup_with_key(key);
        if (MPI_COMM_NULL == c.comm) {
            continue;
        }
        warm_up(&c);
        int fb = 0 == strcmp(policies[p].alg, "fallback");
        for (int coll = 0; coll < C_N; coll++) {
            if (policies[p].colls & BIT(coll)) {
                run_coll(&c, coll, policies[p].sizes, policies[p].nsizes, fb, 0);
            }
        }
        free_comm(&c);
    }
}

/* Tree shapes and radices: the reduce tree carries the allreduce's and the barrier's
 * tree programs too, the bcast tree the get's. */
static const char *const tree_keys[] = {
    "reduce 1+ policy=tree tree=kary radix=2;allreduce 1+ policy=tree;"
    "barrier 1+ policy=tree;bcast 1+ policy=tree tree=kary radix=2",
    "bcast 1+ policy=tree tree=flat;reduce 1+ policy=tree tree=flat;allreduce 1+ policy=tree",
    "reduce 1+ policy=tree tree=knomial radix=3;bcast 1+ policy=get tree=knomial radix=3;"
    "allreduce 1+ policy=tree;barrier 1+ policy=tree",
    "bcast 1+ policy=tree tree=kary radix=3;reduce 1+ policy=tree tree=knomial radix=2",
};

/* Whether `key` has a rule for coll: a rule line starting with its name. */
static int has_rule(const char *key, int coll)
{
    size_t len = strlen(coll_names[coll]);
    for (const char *p = key; NULL != p; p = strchr(p, ';')) {
        p += ';' == *p;
        if (0 == strncmp(p, coll_names[coll], len) && ' ' == p[len]) {
            return 1;
        }
    }
    return 0;
}

static void test_trees(void)
{
    for (size_t t = 0; t < sizeof(tree_keys) / sizeof(tree_keys[0]); t++) {
        tcomm_t c = dup_with_key(tree_keys[t]);
        if (MPI_COMM_NULL == c.comm) {
            continue;
        }
        warm_up(&c);
        for (int coll = 0; coll < C_N; coll++) {
            /* a collective the key has no rule for runs as the MCA values say */
            if (has_rule(tree_keys[t], coll)) {
                run_coll(&c, coll, all_sizes, 3, 0, 0);
            }
        }
        free_comm(&c);
    }

    /* Rules for some communicator sizes only: the rule for this size is in force (at 2
     * ranks and at 4, one collective each on the layer below, where the MCA values and
     * the other rule would offload it). */
    const char *key = "allreduce 1-3 policy=tree;allreduce 4+ policy=fallback;"
                      "reduce 1-2 policy=fallback;reduce 3+ policy=tree tree=kary radix=3";
    tcomm_t c = dup_with_key(key);
    if (MPI_COMM_NULL != c.comm) {
        warm_up(&c);
        run_coll(&c, C_ALLREDUCE, all_sizes, 3, c.size >= 4, 0);
        run_coll(&c, C_REDUCE, all_sizes, 3, c.size <= 2, 0);
        free_comm(&c);
    }
}

/* Every collective at 8 B and 64 KiB, all on the layer below whatever the policy. */
static void run_all_fallback(const tcomm_t *c)
{
    static const size_t sizes[] = { 8, 65536 };
    for (int coll = 0; coll < C_N; coll++) {
        run_coll(c, coll, sizes, 2, 1, 1);
    }
}

/* Ranks whose keys differ: the set-up compares the digests of their rules and the
 * communicator uses the layer below on every rank, from the set-up's own call on. */
static void test_disagree(void)
{
    if (np < 2) {
        t_skip("ranks that disagree: 1 process");
        return;
    }
    const char *const cases[][2] = {
        /* rank 0's key, the others' key (NULL: none) */
        { "allreduce 1+ policy=tree", NULL },
        { "reduce 1+ policy=tree tree=kary radix=3", "reduce 1+ policy=tree tree=kary radix=2" },
        { "allreduce 1+ policy=bogus", "allreduce 1+ policy=tree" },
        { NULL, "bcast 1+ policy=get;barrier 1+ policy=exchange" },
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        tcomm_t c = dup_with_key(cases[k][0 == me ? 0 : 1]);
        if (MPI_COMM_NULL == c.comm) {
            continue;
        }
        snap_t a = snap();
        warm_up(&c);
        snap_t b = snap();
        if (check_paths) {
            unsigned long long off = 0;
            for (int coll = 0; coll < C_N; coll++) {
                off += b.off[coll] - a.off[coll];
            }
            t_check(0 == off, "set-up calls on a communicator whose ranks' keys differ "
                    "('%s' on rank 0, '%s' on the others): %llu offloaded", cases[k][0] ?
                    cases[k][0] : "(none)", cases[k][1] ? cases[k][1] : "(none)", off);
        }
        run_all_fallback(&c);
        free_comm(&c);
    }

    /* Keys that differ only in spacing, comments and the order of their rules hold the
     * same rules: not a disagreement (the digest is of the rules, not of the text). */
    const char *same = 0 == me ? "allreduce 1+ policy=tree;reduce 1+ policy=tree # rank 0"
                               : "  reduce   1+\tpolicy=tree ;allreduce 1+ policy=tree;# others";
    tcomm_t c = dup_with_key(same);
    if (MPI_COMM_NULL != c.comm) {
        warm_up(&c);
        run_coll(&c, C_ALLREDUCE, all_sizes, 3, 0, 0);
        run_coll(&c, C_REDUCE, all_sizes, 3, 0, 0);
        free_comm(&c);
    }
}

/* The same calls on `keyed` and on `plain` (no key): each group's path must be the same on
 * both, as the key is refused and the rules file's rules or the MCA values stay
 * (docs/rules-format.md). */
static void compare_with_plain(const tcomm_t *keyed, const tcomm_t *plain)
{
    static const size_t sizes[] = { 8, 1024, 65536 };
    for (int coll = 0; coll < C_N; coll++) {
        int roots[2], nroots = C_ALLREDUCE == coll || C_BARRIER == coll ? 1
                                                                        : roots_of(plain, roots);
        for (int s = 0; s < (C_BARRIER == coll ? 1 : 3); s++) {
            size_t bytes = C_BARRIER == coll ? 0 : sizes[s];
            for (int r = 0; r < nroots; r++) {
                int root = 1 == nroots ? -1 : roots[r];
                snap_t a, b, x, y;
                call_group(plain, coll, bytes, root < 0 ? 0 : root, &a, &b);
                call_group(keyed, coll, bytes, root < 0 ? 0 : root, &x, &y);
                if (!check_paths) {
                    continue;
                }
                unsigned long long poff = b.off[coll] - a.off[coll];
                unsigned long long pfb = b.fb[coll] - a.fb[coll];
                unsigned long long koff = y.off[coll] - x.off[coll];
                unsigned long long kfb = y.fb[coll] - x.fb[coll];
                t_check(koff == poff && kfb == pfb && koff + kfb == REPS,
                        "%s of %zu B root %d (key '%s', refused): offloaded %llu, fallback "
                        "%llu; on a communicator without the key %llu and %llu",
                        mpi_names[coll], bytes, root, keyed->key, koff, kfb, poff, pfb);
            }
        }
    }
}

/* Values that do not parse, the same on every rank: each rank warns (bad-rules-info),
 * keeps the rules file's rules or the MCA values, and the ranks still agree. */
static void test_unparsable(void)
{
    static const char *const bad[] = {
        "allreduce 1+ policy=bogus",
        /* the first rule is fine, the second is not: none of the value is in force */
        "allreduce 1+ policy=fallback;bcast 0 policy=tree",
        "reduce 1+ policy=tree radix=65;barrier 1+ policy=fallback",
    };
    tcomm_t plain = dup_with_key(NULL);
    if (MPI_COMM_NULL == plain.comm) {
        return;
    }
    warm_up(&plain);
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        tcomm_t c = dup_with_key(bad[k]);
        if (MPI_COMM_NULL == c.comm) {
            continue;
        }
        warm_up(&c);
        compare_with_plain(&c, &plain);
        free_comm(&c);
    }

    /* A value with no rules at all on rank 0 only, no key on the others: neither holds a
     * rule, so they agree, unless a rules file is in force, which the value replaces on
     * rank 0 alone. */
    tcomm_t c = dup_with_key(0 == me ? " ; # no rules here" : NULL);
    if (MPI_COMM_NULL != c.comm) {
        warm_up(&c);
        if (rules_file_in_force) {
            run_all_fallback(&c);
        } else {
            compare_with_plain(&c, &plain);
        }
        free_comm(&c);
    }
    free_comm(&plain);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "t_rules");
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    setup_expectations();
    t_note("t_rules: %d ranks%s\n", np, t_opt.expect_offload ? ", --expect-offload"
           : " (correctness only)");
    if (!check_paths) {
        t_note("  skipped: every MPI_T path check (%s)\n", t_opt.expect_offload
               ? "1 process has nothing to offload" : "no --expect-offload");
    }
    if (check_paths && crowded && crowded_max >= 0) {
        t_note("  more ranks than cores: reduces and bcasts of up to %lld B expected on the "
               "layer below whatever the key (coll_offload_crowded_max)\n", crowded_max);
    }
    if (rules_file_in_force) {
        t_note("  a rules file is in force (coll_offload_rules_in_force)\n");
    }

    for (int pass = 1; pass <= 2; pass++) {
        unsigned long long shm0 = 0, shm1 = 0;
        int shm_ok = check_paths && t_pvar_read(&pv[PV_SHM], &shm0);
        char sec[64];
        snprintf(sec, sizeof(sec), "policies (pass %d)", pass);
        t_section_begin(sec);
        test_policies();
        t_section_end();
        snprintf(sec, sizeof(sec), "trees and sizes (pass %d)", pass);
        t_section_begin(sec);
        test_trees();
        t_section_end();
        snprintf(sec, sizeof(sec), "ranks that disagree (pass %d)", pass);
        t_section_begin(sec);
        test_disagree();
        t_section_end();
        snprintf(sec, sizeof(sec), "values that do not parse (pass %d)", pass);
        t_section_begin(sec);
        test_unparsable();
        t_section_end();
        if (check_paths) {
            /* every communicator of the pass is freed: its shared memory is given back */
            snprintf(sec, sizeof(sec), "shared memory given back (pass %d)", pass);
            t_section_begin(sec);
            shm_ok = shm_ok && t_pvar_read(&pv[PV_SHM], &shm1);
            t_check(shm_ok && shm1 == shm0, "pass %d: coll_offload_shm_bytes %llu before, "
                    "%llu after freeing its communicators%s", pass, shm0, shm1,
                    shm_ok ? "" : " (not readable)");
            t_section_end();
        }
    }

    if (t_opt.expect_offload) {
        t_pvars_close(pv, 2 * C_N + 1);
    }
    return t_finish();
}
