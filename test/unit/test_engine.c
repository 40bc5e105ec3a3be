/*
 * Unit test of the schedule compiler, the descriptor engine and the software NIC
 * (src/sched, src/engine, src/nic) without MPI.
 *
 *   shape     every rank's program compiles and both ends of every edge agree on
 *             how many items cross it per segment (tree and exchange programs);
 *   sim       all ranks of a communicator in one thread, each with its own mapping
 *             of one softnic segment, stepped in many orders; every result is
 *             compared with a reference computed here from the inputs. In
 *             "preempt" mode a counter read may be followed by another rank's
 *             progress before the reader acts on it (a thread losing the CPU
 *             between two reads), deterministically;
 *   threads   one thread per rank, ofl_engine_wait, thousands of calls;
 *   failure   poison, watchdog and a dead (forked) peer.
 *
 * References never come from the code under test: sums are taken in unsigned
 * arithmetic, the float reference re-derives the combine order from the tree's
 * definition (own value, then children by increasing virtual rank), or for an
 * exchange program takes rank order.
 */
#include "alu/alu.h"
#include "engine/engine.h"
#include "nic/softnic.h"
#include "sched/sched.h"
#include "tree/tree.h"
#include "unit.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SIM_MAX 16
#define NPSETS 3   /* 0 and 1 as given to world_open, 2: 0 with exchange */
#define SENTINEL 0xa5

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* ---- inputs and references ------------------------------------------------ */

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static uint64_t mix3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t x = a * 0x9e3779b97f4a7c15ull + b * 0xbf58476d1ce4e5b9ull
                 + c * 0x94d049bb133111ebull + 0x632be59bd9b4e019ull;
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* Large enough that any sum of two ranks wraps modulo 2^32. */
static uint32_t in_i32(int rank, uint32_t tag, size_t i)
{
    return 0x7ff00000u + (uint32_t) (rank * 1000 + (int) i) + tag * 7u;
}

/* Mixed signs so that MAX is not simply the last rank's value. */
static double in_f64(int rank, uint32_t tag, size_t i)
{
    int64_t v = (int64_t) (mix3((uint64_t) rank, tag, i) % 2000001u) - 1000000;
    return (double) v / 7.0;
}

/* Magnitudes spread over 40 binary orders so that the order of a float sum shows
 * in the result bits. */
static float in_f32(int rank, uint32_t tag, size_t i)
{
    uint64_t h = mix3((uint64_t) rank + 77, tag, i);
    int mant = (int) (h % 2001u) - 1000;
    int e = (int) ((h >> 20) % 40u) - 20;
    float f = (float) mant;
    for (; e > 0; --e) {
        f *= 2.0f;
    }
    for (; e < 0; ++e) {
        f *= 0.5f;
    }
    return f;
}

/* Never the sentinel, so a slot nobody wrote cannot look right. */
static uint8_t pattern(int root, uint32_t tag, size_t i)
{
    uint8_t b = (uint8_t) mix3((uint64_t) root + 1000, tag, i);
    return SENTINEL == b ? 0x5a : b;
}

/* ---- shared memory names ---------------------------------------------------- */

static int shm_seq;

static void shm_name(char *buf, size_t len)
{
    snprintf(buf, len, "/ofl-unit-%d-%d", (int) getpid(), shm_seq++);
}

/* Every name this process made must be gone: they are unlinked right after the
 * last attach, so a leftover means a path that forgot to. */
static void check_no_leftover_shm(void)
{
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "ofl-unit-%d-", (int) getpid());
    DIR *d = opendir("/dev/shm");
    CHECK(NULL != d, "cannot open /dev/shm");
    if (NULL == d) {
        return;
    }
    int left = 0;
    struct dirent *e;
    while (NULL != (e = readdir(d))) {
        if (0 == strncmp(e->d_name, prefix, strlen(prefix))) {
            fprintf(stderr, "leftover /dev/shm/%s\n", e->d_name);
            left++;
        }
    }
    closedir(d);
    CHECK(0 == left, "%d leftover shared memory names", left);
}

/* ---- a) schedule shape ------------------------------------------------------ */

static const ofl_sched_params_t shape_params[] = {
    { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0 },
    { OFL_TREE_KARY, 3, OFL_TREE_KNOMIAL, 2, 2, 0 },
    { OFL_TREE_KARY, 4, OFL_TREE_KNOMIAL, 3, 4, 0 },
    { OFL_TREE_KNOMIAL, 2, OFL_TREE_KARY, 3, 1, 0 },
    { OFL_TREE_KNOMIAL, 3, OFL_TREE_KARY, 4, 2, 0 },
    { OFL_TREE_KNOMIAL, 4, OFL_TREE_KNOMIAL, 4, 3, 0 },
};
#define NSHAPE ((int) (sizeof(shape_params) / sizeof(shape_params[0])))

static int peer_slot(const ofl_program_t *p, int rank)
{
    for (int i = 0; i < p->npeers; ++i) {
        if (p->peers[i] == rank) {
            return i;
        }
    }
    return -1;
}

static int uses(const ofl_program_t *p, int rank, int out)
{
    int i = peer_slot(p, rank);
    return i < 0 ? 0 : (out ? p->uses_out[i] : p->uses_in[i]);
}

/* Internal consistency of one program: indices in range, thresholds as program.h
 * defines them, each peer listed once. Returns the number of problems. */
static int program_sane(const ofl_program_t *p)
{
    int bad = 0;
    for (int i = 0; i < p->npeers; ++i) {
        bad += p->peers[i] < 0 || p->peers[i] >= p->size || p->peers[i] == p->rank;
        bad += p->uses_in[i] > 1 || p->uses_out[i] > 1;
        for (int j = 0; j < i; ++j) {
            bad += p->peers[i] == p->peers[j];
        }
    }
    bad += p->nqueues < 1 || p->nqueues > OFL_PROG_MAX_QUEUES;
    int total = 0;
    for (int q = 0; q < p->nqueues; ++q) {
        bad += p->qfirst[q] != total || p->qlen[q] < 0;
        total += p->qlen[q];
    }
    bad += total != p->ndesc;
    for (int k = 0; k < p->ndesc; ++k) {
        const ofl_desc_t *d = &p->desc[k];
        bad += d->n_in < 1 || d->n_out < 1;
        bad += d->first_ref + d->n_in + d->n_out > p->nrefs;
        bad += d->first_trig + d->n_trig > p->ntrigs || d->first_cp + d->n_cp > p->ncps;
        for (int t = 0; t < d->n_trig; ++t) {
            const ofl_trig_t *g = &p->trigs[d->first_trig + t];
            bad += g->peer >= p->npeers;
            bad += OFL_CNT_DATA == g->cnt ? 1 != g->rel
                                          : (OFL_CNT_CREDIT != g->cnt || 1 - p->slots != g->rel);
        }
        for (int c = 0; c < d->n_cp; ++c) {
            bad += p->cps[d->first_cp + c].peer >= p->npeers;
        }
    }
    return bad;
}

/* Which edges the trees say a rank reads and writes: in[r] / out[r] flags. */
static void expected_edges(ofl_coll_t coll, int root, int rank, int size,
                           const ofl_sched_params_t *pp, int *in, int *out)
{
    memset(in, 0, sizeof(int) * (size_t) size);
    memset(out, 0, sizeof(int) * (size_t) size);
    ofl_tree_node_t t;
    if (OFL_COLL_BCAST == coll) {
        ofl_tree_node(pp->bcast_kind, pp->bcast_radix, size, root, rank, &t);
    } else {
        if (OFL_COLL_REDUCE != coll) {
            root = 0;
        }
        ofl_tree_node(pp->reduce_kind, pp->reduce_radix, size, root, rank, &t);
    }
    int up = OFL_COLL_BCAST != coll;
    int down = OFL_COLL_REDUCE != coll;
    if (t.parent >= 0) {
        out[t.parent] |= up;
        in[t.parent] |= down;
    }
    for (int i = 0; i < t.nchildren; ++i) {
        in[t.children[i]] |= up;
        out[t.children[i]] |= down;
    }
}

static void test_shape(void)
{
    static ofl_program_t progs[17];
    int in[17], out[17];
    for (int ps = 0; ps < NSHAPE; ++ps) {
        const ofl_sched_params_t *pp = &shape_params[ps];
        for (int coll = 0; coll < OFL_COLL_COUNT; ++coll) {
            for (int size = 1; size <= 17; ++size) {
                for (int root = 0; root < size; ++root) {
                    int ok = 1;
                    for (int r = 0; r < size; ++r) {
                        int rc = ofl_sched_compile((ofl_coll_t) coll, root, r, size, pp,
                                                   &progs[r]);
                        CHECK(0 == rc, "compile %s root %d rank %d/%d params %d",
                              ofl_coll_name(coll), root, r, size, ps);
                        ok &= 0 == rc;
                    }
                    if (!ok) {
                        continue;
                    }
                    int insane = 0, mismatch = 0, wrong = 0, items = 0;
                    int want_root = (OFL_COLL_BCAST == coll || OFL_COLL_REDUCE == coll)
                                        ? root : 0;
                    for (int a = 0; a < size; ++a) {
                        const ofl_program_t *p = &progs[a];
                        insane += program_sane(p);
                        insane += p->rank != a || p->size != size || p->root != want_root
                                  || p->coll != (ofl_coll_t) coll || p->slots != pp->slots;
                        expected_edges((ofl_coll_t) coll, root, a, size, pp, in, out);
                        for (int b = 0; b < size; ++b) {
                            /* What a puts to b is exactly what b reads from a. */
                            mismatch += uses(p, b, 1) != uses(&progs[b], a, 0);
                            wrong += uses(p, b, 1) != out[b] || uses(p, b, 0) != in[b];
                            items += uses(p, b, 1);
                        }
                    }
                    /* Not vacuous: a tree has size - 1 edges, allreduce and barrier
                     * use each both ways. */
                    int want_items = (size - 1)
                                     * ((OFL_COLL_ALLREDUCE == coll || OFL_COLL_BARRIER == coll)
                                            ? 2 : 1);
                    CHECK(0 == insane && 0 == mismatch && 0 == wrong && items == want_items,
                          "%s root %d size %d params %d: insane %d mismatch %d wrong %d "
                          "items %d/%d", ofl_coll_name(coll), root, size, ps, insane, mismatch,
                          wrong, items, want_items);
                    for (int r = 0; r < size; ++r) {
                        ofl_program_free(&progs[r]);
                    }
                }
            }
        }
    }

    /* The dump names the program and its mailboxes. */
    ofl_program_t p;
    CHECK(0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 0, 5, &shape_params[0], &p),
          "compile for dump");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(NULL != f, "open_memstream");
    if (NULL != f) {
        ofl_program_dump(&p, f);
        fclose(f);
        CHECK(NULL != strstr(text, "program") && NULL != strstr(text, "allreduce")
                  && NULL != strstr(text, "mbox[1]") && NULL != strstr(text, "mbox[2]")
                  && NULL != strstr(text, "DATA") && NULL != strstr(text, "CREDIT"),
              "dump: %s", text);
        free(text);
    }
    ofl_program_free(&p);
    CHECK(0 == ofl_sched_compile(OFL_COLL_BCAST, 2, 4, 6, &shape_params[1], &p),
          "compile for tmpfile dump");
    f = tmpfile();
    CHECK(NULL != f, "tmpfile");
    if (NULL != f) {
        ofl_program_dump(&p, f);
        char buf[512] = { 0 };
        rewind(f);
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        CHECK(n > 0 && NULL != strstr(buf, "program bcast root=2 rank=4/6"), "dump: %s", buf);
    }
    ofl_program_free(&p);

    /* Refused parameters leave the program empty. */
    ofl_sched_params_t bad = shape_params[0];
    bad.slots = 0;
    CHECK(-1 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 0, 4, &bad, &p) && NULL == p.desc
              && 0 == p.ndesc, "slots 0 accepted");
    bad.slots = 1025;
    CHECK(-1 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 0, 4, &bad, &p), "slots 1025");
    bad = shape_params[0];
    bad.reduce_kind = OFL_TREE_KNOMIAL;
    bad.reduce_radix = 1;
    CHECK(-1 == ofl_sched_compile(OFL_COLL_REDUCE, 0, 0, 4, &bad, &p), "knomial radix 1");
    CHECK(-1 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 0, 4, NULL, &p), "NULL params");
    CHECK(-1 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 4, 4, &shape_params[0], &p),
          "rank == size");
    CHECK(-1 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, -1, 4, &shape_params[0], &p),
          "rank -1");
    CHECK(-1 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 0, 0, &shape_params[0], &p),
          "size 0");
    CHECK(-1 == ofl_sched_compile(OFL_COLL_COUNT, 0, 0, 4, &shape_params[0], &p),
          "unknown collective");
    CHECK(-1 == ofl_sched_compile(OFL_COLL_BCAST, 4, 0, 4, &shape_params[0], &p),
          "bcast root == size");
    CHECK(-1 == ofl_sched_compile(OFL_COLL_REDUCE, -1, 0, 4, &shape_params[0], &p),
          "reduce root -1");
    /* Allreduce has no root: any value is accepted and ignored. */
    CHECK(0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 3, 1, 4, &shape_params[0], &p)
              && 0 == p.root, "allreduce root not ignored");
    ofl_program_free(&p);
}

/* Problems in rank's exchange program against its definition: queue 0 is one
 * descriptor putting the send buffer to every other rank's mailbox (or nothing
 * when alone), queue 1 one descriptor combining every rank's contribution in rank
 * order (its own from the send buffer) into the receive buffer. */
static int exchange_wrong(const ofl_program_t *p)
{
    int n = p->size, bad = 0;
    bad += 2 != p->nqueues || (n > 1) != p->qlen[0] || 1 != p->qlen[1];
    bad += n - 1 != p->npeers;
    if (bad) {
        return bad;
    }
    for (int r = 0; r < n; ++r) {
        bad += r != p->rank && (1 != uses(p, r, 0) || 1 != uses(p, r, 1));
    }
    if (n > 1) {
        const ofl_desc_t *d = &p->desc[p->qfirst[0]];
        const ofl_ref_t *refs = &p->refs[d->first_ref];
        bad += 1 != d->n_in || OFL_BUF_SEND != refs[0].buf || n - 1 != d->n_out;
        bad += n - 1 != d->n_trig || n - 1 != d->n_cp;
        uint8_t hit[OFL_PROG_MAX_PEERS] = { 0 };
        for (int k = 0; k < d->n_out && 0 == bad; ++k) {
            ofl_ref_t o = refs[d->n_in + k];
            int to = OFL_BUF_PEER == o.buf ? p->peers[o.peer] : -1;
            bad += to < 0 || to >= n || to == p->rank || hit[to]++;
            bad += OFL_CNT_CREDIT != p->trigs[d->first_trig + k].cnt
                   || OFL_CNT_DATA != p->cps[d->first_cp + k].cnt;
        }
    }
    const ofl_desc_t *c = &p->desc[p->qfirst[1]];
    const ofl_ref_t *refs = &p->refs[c->first_ref];
    bad += n != c->n_in || 1 != c->n_out || OFL_BUF_RECV != refs[c->n_in].buf;
    bad += n - 1 != c->n_trig || n - 1 != c->n_cp;
    for (int k = 0; k < c->n_in && 0 == bad; ++k) {
        if (k == p->rank) {
            bad += OFL_BUF_SEND != refs[k].buf;
        } else {
            bad += OFL_BUF_PEER != refs[k].buf || k != p->peers[refs[k].peer];
        }
    }
    for (int k = 0; k < c->n_trig && 0 == bad; ++k) {
        bad += OFL_CNT_DATA != p->trigs[c->first_trig + k].cnt
               || OFL_CNT_CREDIT != p->cps[c->first_cp + k].cnt;
    }
    return bad;
}

/* Exchange programs for allreduce and barrier: every rank of every size up to 65
 * compiles, both ends of each edge agree, every ordered pair of ranks is an edge
 * used once per segment each way; 66 ranks are refused; bcast and reduce ignore
 * the flag. */
static void test_shape_exchange(void)
{
    static ofl_program_t progs[66];
    static const int sizes[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 65 };
    for (int slots = 1; slots <= 3; slots += 2) {
        ofl_sched_params_t px = shape_params[slots];
        px.slots = slots;
        px.exchange = 1;
        for (int ci = 0; ci < 2; ++ci) {
            ofl_coll_t coll = ci ? OFL_COLL_BARRIER : OFL_COLL_ALLREDUCE;
            for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); ++si) {
                int size = sizes[si], ok = 1;
                for (int r = 0; r < size; ++r) {
                    /* The root argument is ignored, as for the tree program. */
                    int rc = ofl_sched_compile(coll, r % 3, r, size, &px, &progs[r]);
                    CHECK(0 == rc, "exchange %s rank %d/%d slots %d", ofl_coll_name(coll), r,
                          size, slots);
                    ok &= 0 == rc;
                }
                if (!ok) {
                    continue;
                }
                int insane = 0, wrong = 0, mismatch = 0, items = 0;
                for (int a = 0; a < size; ++a) {
                    const ofl_program_t *p = &progs[a];
                    insane += program_sane(p);
                    insane += p->rank != a || p->size != size || 0 != p->root
                              || p->coll != coll || p->slots != slots;
                    wrong += exchange_wrong(p);
                    for (int b = 0; b < size; ++b) {
                        mismatch += uses(p, b, 1) != uses(&progs[b], a, 0);
                        items += uses(p, b, 1);
                    }
                }
                CHECK(0 == insane && 0 == wrong && 0 == mismatch && items == size * (size - 1),
                      "exchange %s size %d slots %d: insane %d wrong %d mismatch %d items %d",
                      ofl_coll_name(coll), size, slots, insane, wrong, mismatch, items);
                for (int r = 0; r < size; ++r) {
                    ofl_program_free(&progs[r]);
                }
            }
            /* 66 contributions exceed one descriptor: refused at every rank, and
             * the program is left empty. */
            int refused = 0;
            for (int r = 0; r < 66; ++r) {
                ofl_program_t *p = &progs[r];
                refused += -1 == ofl_sched_compile(coll, 0, r, 66, &px, p) && NULL == p->desc
                           && 0 == p->ndesc && 0 == p->npeers;
            }
            CHECK(66 == refused, "exchange %s: size 66 refused at %d of 66 ranks",
                  ofl_coll_name(coll), refused);
            /* Without the flag, 66 ranks are fine (a tree). */
            px.exchange = 0;
            CHECK(0 == ofl_sched_compile(coll, 0, 65, 66, &px, &progs[0]), "tree at 66");
            ofl_program_free(&progs[0]);
            px.exchange = 1;
        }
        /* Bcast and reduce have no exchange form: same program as without it. */
        for (int ci = 0; ci < 2; ++ci) {
            ofl_coll_t coll = ci ? OFL_COLL_BCAST : OFL_COLL_REDUCE;
            ofl_sched_params_t pt = px;
            pt.exchange = 0;
            int same = 0, tried = 0;
            for (int size = 1; size <= 9; size += 4) {
                for (int r = 0; r < size; ++r) {
                    ofl_program_t a, b;
                    int rc = ofl_sched_compile(coll, size - 1, r, size, &px, &a);
                    rc |= ofl_sched_compile(coll, size - 1, r, size, &pt, &b);
                    tried++;
                    same += 0 == rc && a.npeers == b.npeers && a.ndesc == b.ndesc
                            && a.nqueues == b.nqueues && a.nrefs == b.nrefs
                            && 0 == memcmp(a.peers, b.peers, sizeof(int) * (size_t) a.npeers)
                            && (0 == a.nrefs
                                || 0 == memcmp(a.refs, b.refs, sizeof(*a.refs) * (size_t) a.nrefs));
                    ofl_program_free(&a);
                    ofl_program_free(&b);
                }
            }
            CHECK(same == tried, "%s with exchange flag: %d of %d programs as the tree's",
                  ofl_coll_name(coll), same, tried);
        }
    }

    /* The dump shows the put to every peer and the rank-order combine. */
    ofl_sched_params_t px = shape_params[0];
    px.exchange = 1;
    ofl_program_t p;
    CHECK(0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 2, 4, &px, &p), "compile for dump");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(NULL != f, "open_memstream");
    if (NULL != f) {
        ofl_program_dump(&p, f);
        fclose(f);
        CHECK(NULL != strstr(text, "send -> mbox[0], mbox[1], mbox[3]")
                  && NULL != strstr(text, "mbox[0] op mbox[1] op send op mbox[3] -> recv"),
              "exchange dump: %s", text);
        free(text);
    }
    ofl_program_free(&p);
}

/* ---- b) deterministic simulation ------------------------------------------ */

typedef enum {
    K_SUM_I32,     /* allreduce */
    K_MAX_F64,     /* allreduce */
    K_SUM_F32,     /* allreduce, reference in tree order */
    K_BCAST,
    K_REDUCE_I32,
    K_BARRIER,
    K_NKINDS
} kind_t;

typedef struct {
    kind_t kind;
    int root;
    int pset;          /* which of the world's parameter sets (2: exchange) */
    int inplace;       /* send == recv (reduce: at the root only) */
    size_t count;
    uint32_t tag;      /* varies the inputs from call to call */
} spec_t;

typedef struct {
    int n;
    char name[64];
    ofl_sched_params_t params[NPSETS];
    ofl_softnic_t nic[SIM_MAX];
    ofl_edges_t edges[SIM_MAX];
    ofl_inst_t inst[SIM_MAX];
    ofl_program_t prog[NPSETS][OFL_COLL_COUNT][SIM_MAX][SIM_MAX]; /* [root][rank] */
    uint8_t compiled[NPSETS][OFL_COLL_COUNT][SIM_MAX][SIM_MAX];
    int preempt;       /* sim_run steps this world in preempt mode */
} world_t;

typedef struct {
    spec_t s;
    ofl_coll_t coll;
    size_t elem;
    ofl_alu_fn fn;
    uint8_t *expect;
    uint8_t *send[SIM_MAX];
    uint8_t *recv[SIM_MAX];
} call_t;

static void world_close(world_t *w);

static world_t *world_open(int n, int slots, size_t segsize, const ofl_sched_params_t *p0,
                           const ofl_sched_params_t *p1)
{
    world_t *w = calloc(1, sizeof(*w));
    if (NULL == w) {
        CHECK(0, "out of memory");
        return NULL;
    }
    w->n = n;
    w->params[0] = *p0;
    w->params[1] = *p1;
    w->params[2] = *p0;
    w->params[2].exchange = 1;
    w->params[0].slots = w->params[1].slots = w->params[2].slots = slots;
    shm_name(w->name, sizeof(w->name));
    int rc = ofl_softnic_create(&w->nic[0], w->name, n, 0, slots, segsize);
    CHECK(0 == rc, "create %s: %d", w->name, rc);
    for (int r = 1; r < n && 0 == rc; ++r) {
        rc = ofl_softnic_attach(&w->nic[r], w->name, n, r, slots, segsize);
        CHECK(0 == rc, "attach %s rank %d: %d", w->name, r, rc);
    }
    int urc = ofl_softnic_unlink(w->name);
    CHECK(0 == urc, "unlink %s: %d", w->name, urc);
    CHECK(w->nic[0].len == ofl_softnic_bytes(n, slots, segsize), "softnic_bytes");
    for (int r = 0; r < n; ++r) {
        CHECK(0 == ofl_edges_init(&w->edges[r], n), "edges_init");
    }
    if (0 != rc) {
        world_close(w);
        return NULL;
    }
    return w;
}

static void world_close(world_t *w)
{
    for (int r = 0; r < w->n; ++r) {
        ofl_softnic_detach(&w->nic[r]);
        ofl_edges_fini(&w->edges[r]);
    }
    for (int ps = 0; ps < NPSETS; ++ps) {
        for (int c = 0; c < OFL_COLL_COUNT; ++c) {
            for (int root = 0; root < w->n; ++root) {
                for (int r = 0; r < w->n; ++r) {
                    if (w->compiled[ps][c][root][r]) {
                        ofl_program_free(&w->prog[ps][c][root][r]);
                    }
                }
            }
        }
    }
    free(w);
}

static const ofl_program_t *world_prog(world_t *w, int ps, ofl_coll_t coll, int root, int rank)
{
    if (OFL_COLL_ALLREDUCE == coll || OFL_COLL_BARRIER == coll) {
        root = 0;
    }
    ofl_program_t *p = &w->prog[ps][coll][root][rank];
    if (!w->compiled[ps][coll][root][rank]) {
        int rc = ofl_sched_compile(coll, root, rank, w->n, &w->params[ps], p);
        CHECK(0 == rc, "compile %s root %d rank %d", ofl_coll_name(coll), root, rank);
        w->compiled[ps][coll][root][rank] = 1;
    }
    return p;
}

/* Float reference: the partial result of rank's subtree, combined as the tree
 * prescribes: own value first, then each child's partial in list order. */
static float tree_sum_f32(const world_t *w, int ps, int rank, uint32_t tag, size_t i)
{
    ofl_tree_node_t t;
    if (0 != ofl_tree_node(w->params[ps].reduce_kind, w->params[ps].reduce_radix, w->n, 0,
                           rank, &t)) {
        return 0.0f;
    }
    float acc = in_f32(rank, tag, i);
    for (int k = 0; k < t.nchildren; ++k) {
        acc = acc + tree_sum_f32(w, ps, t.children[k], tag, i);
    }
    return acc;
}

/* Float reference of an exchange program: every rank combines in rank order. */
static float rank_sum_f32(int n, uint32_t tag, size_t i)
{
    float acc = in_f32(0, tag, i);
    for (int r = 1; r < n; ++r) {
        acc = acc + in_f32(r, tag, i);
    }
    return acc;
}

static void fill_input(kind_t kind, int rank, uint32_t tag, size_t count, uint8_t *buf)
{
    for (size_t i = 0; i < count; ++i) {
        if (K_SUM_I32 == kind || K_REDUCE_I32 == kind) {
            uint32_t v = in_i32(rank, tag, i);
            memcpy(buf + 4 * i, &v, 4);
        } else if (K_MAX_F64 == kind) {
            double v = in_f64(rank, tag, i);
            memcpy(buf + 8 * i, &v, 8);
        } else if (K_SUM_F32 == kind) {
            float v = in_f32(rank, tag, i);
            memcpy(buf + 4 * i, &v, 4);
        }
    }
}

static void call_init(world_t *w, call_t *c, const spec_t *s)
{
    memset(c, 0, sizeof(*c));
    c->s = *s;
    int n = w->n;
    switch (s->kind) {
    case K_SUM_I32:
        c->coll = OFL_COLL_ALLREDUCE;
        c->elem = 4;
        c->fn = ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT32);
        break;
    case K_MAX_F64:
        c->coll = OFL_COLL_ALLREDUCE;
        c->elem = 8;
        c->fn = ofl_alu_lookup(OFL_OP_MAX, OFL_T_DOUBLE);
        break;
    case K_SUM_F32:
        c->coll = OFL_COLL_ALLREDUCE;
        c->elem = 4;
        c->fn = ofl_alu_lookup(OFL_OP_SUM, OFL_T_FLOAT);
        break;
    case K_REDUCE_I32:
        c->coll = OFL_COLL_REDUCE;
        c->elem = 4;
        c->fn = ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT32);
        break;
    case K_BCAST:
        c->coll = OFL_COLL_BCAST;
        c->elem = 1;
        break;
    default:
        c->coll = OFL_COLL_BARRIER;
        c->elem = 1;
        c->s.count = 0;
        break;
    }
    CHECK(NULL != c->fn || K_BCAST == s->kind || K_BARRIER == s->kind, "no ALU kernel");
    size_t bytes = c->s.count * c->elem;
    c->expect = malloc(bytes + 1);
    for (int r = 0; r < n; ++r) {
        c->recv[r] = malloc(bytes + 1);
        memset(c->recv[r], SENTINEL, bytes + 1);
        int inplace = s->inplace && (K_REDUCE_I32 != s->kind || r == s->root);
        if (K_BCAST == s->kind || K_BARRIER == s->kind) {
            c->send[r] = NULL;   /* must never be touched */
        } else if (inplace) {
            c->send[r] = c->recv[r];
        } else {
            c->send[r] = malloc(bytes + 1);
            c->send[r][bytes] = SENTINEL;
        }
        if (NULL != c->send[r]) {
            fill_input(s->kind, r, s->tag, c->s.count, c->send[r]);
        }
    }
    for (size_t i = 0; i < c->s.count; ++i) {
        if (K_SUM_I32 == s->kind || K_REDUCE_I32 == s->kind) {
            uint32_t sum = 0;
            for (int r = 0; r < n; ++r) {
                sum += in_i32(r, s->tag, i);
            }
            memcpy(c->expect + 4 * i, &sum, 4);
        } else if (K_MAX_F64 == s->kind) {
            double m = in_f64(0, s->tag, i);
            for (int r = 1; r < n; ++r) {
                double v = in_f64(r, s->tag, i);
                m = v > m ? v : m;
            }
            memcpy(c->expect + 8 * i, &m, 8);
        } else if (K_SUM_F32 == s->kind) {
            float v = w->params[s->pset].exchange ? rank_sum_f32(n, s->tag, i)
                                                  : tree_sum_f32(w, s->pset, 0, s->tag, i);
            memcpy(c->expect + 4 * i, &v, 4);
        } else if (K_BCAST == s->kind) {
            c->expect[i] = pattern(s->root, s->tag, i);
        }
    }
    if (K_BCAST == s->kind) {
        memcpy(c->recv[s->root], c->expect, bytes);
    }
}

static void call_free(world_t *w, call_t *c)
{
    for (int r = 0; r < w->n; ++r) {
        if (c->send[r] != c->recv[r]) {
            free(c->send[r]);
        }
        free(c->recv[r]);
    }
    free(c->expect);
}

static void call_post(world_t *w, call_t *c, int rank)
{
    ofl_call_t oc = {
        .send = c->send[rank],
        .recv = c->recv[rank],
        .fn = c->fn,
        .elem = c->elem,
        .count = c->s.count,
    };
    const ofl_program_t *p = world_prog(w, c->s.pset, c->coll, c->s.root, rank);
    ofl_engine_post(&w->inst[rank], p, &w->nic[rank].base, &w->edges[rank], &oc);
}

/* Mismatches of rank's buffers against the reference; the first is described in
 * msg. Checks the result, that the send buffer is intact, that the byte after the
 * result was not written, and that a reduce leaves non-root receive buffers alone. */
static int call_verify(const call_t *c, int rank, char *msg, size_t msglen)
{
    size_t bytes = c->s.count * c->elem;
    int bad = 0;
    const uint8_t *recv = c->recv[rank];
    if (K_BARRIER == c->s.kind) {
        return 0;
    }
    if (K_REDUCE_I32 == c->s.kind && rank != c->s.root) {
        for (size_t i = 0; i < bytes; ++i) {
            if (SENTINEL != recv[i] && 0 == bad++) {
                snprintf(msg, msglen, "non-root reduce recv byte %zu written", i);
            }
        }
    } else {
        for (size_t i = 0; i < c->s.count; ++i) {
            if (0 != memcmp(recv + i * c->elem, c->expect + i * c->elem, c->elem)
                && 0 == bad++) {
                snprintf(msg, msglen, "element %zu of %zu wrong", i, c->s.count);
            }
        }
    }
    if (SENTINEL != recv[bytes] && 0 == bad++) {
        snprintf(msg, msglen, "wrote past the receive buffer");
    }
    if (NULL != c->send[rank] && c->send[rank] != c->recv[rank]) {
        uint8_t *orig = malloc(bytes + 1);
        fill_input(c->s.kind, rank, c->s.tag, c->s.count, orig);
        if ((0 != memcmp(orig, c->send[rank], bytes) || SENTINEL != c->send[rank][bytes])
            && 0 == bad++) {
            snprintf(msg, msglen, "send buffer modified");
        }
        free(orig);
    }
    return bad;
}

static const char *spec_str(const spec_t *s, char *buf, size_t len)
{
    static const char *names[K_NKINDS] = { "sum_i32", "max_f64", "sum_f32",
                                           "bcast",   "reduce",  "barrier" };
    snprintf(buf, len, "%s root %d count %zu%s pset %d tag %u", names[s->kind], s->root,
             s->count, s->inplace ? " in-place" : "", s->pset, s->tag);
    return buf;
}

/* After every call completed nothing is in flight, so each counter must equal the
 * number of items the edge sequences say crossed: a descriptor that fired twice
 * (or never) shows up here. The trigger test must agree with the count at its
 * edge: reached at the count, not one beyond (the DATA count is the stamp in the
 * slot of the last item, CREDIT may be answered from the reader's cache). */
static void check_quiescent(world_t *w, const char *what)
{
    int bad = 0, used = 0;
    for (int a = 0; a < w->n; ++a) {
        for (int b = 0; b < w->n; ++b) {
            ofl_nic_t *nb = &w->nic[b].base;
            ofl_nic_t *na = &w->nic[a].base;
            uint64_t data = nb->ops->counter(nb, OFL_CNT_DATA, a);
            uint64_t credit = na->ops->counter(na, OFL_CNT_CREDIT, b);
            used += data > 0;
            if (data != w->edges[a].out[b] || data != w->edges[b].in[a]
                || credit != w->edges[b].in[a]
                || !nb->ops->reached(nb, OFL_CNT_DATA, a, data)
                || nb->ops->reached(nb, OFL_CNT_DATA, a, data + 1)
                || !na->ops->reached(na, OFL_CNT_CREDIT, b, credit)
                || na->ops->reached(na, OFL_CNT_CREDIT, b, credit + 1)) {
                if (0 == bad++) {
                    fprintf(stderr, "%s: edge %d->%d: DATA %llu CREDIT %llu out %llu in %llu\n",
                            what, a, b, (unsigned long long) data,
                            (unsigned long long) credit,
                            (unsigned long long) w->edges[a].out[b],
                            (unsigned long long) w->edges[b].in[a]);
                }
            }
        }
    }
    CHECK(0 == bad, "%s: %d edges with counters off their sequences", what, bad);
    CHECK(1 == w->n || used > 0, "%s: no edge carried anything", what);
}

enum { ORD_FORWARD, ORD_REVERSE, ORD_RANDOM, ORD_SUBSET, ORD_COUNT };
static const char *order_name[ORD_COUNT] = { "forward", "reverse", "random", "subset" };

static void make_order(int n, int order, int *perm, int *len)
{
    for (int i = 0; i < n; ++i) {
        perm[i] = ORD_REVERSE == order ? n - 1 - i : i;
    }
    *len = n;
    if (ORD_RANDOM == order || ORD_SUBSET == order) {
        for (int i = n - 1; i > 0; --i) {
            int j = (int) (rng() % (uint64_t) (i + 1));
            int t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
    }
    if (ORD_SUBSET == order) {
        int k = 0;
        for (int i = 0; i < n; ++i) {
            if (rng() & 1) {
                perm[k++] = perm[i];
            }
        }
        *len = k;
    }
}

/* Preempt mode: every trigger test first reads the counter, then, now and then,
 * lets another rank progress before the reader acts on what it read, as a thread
 * that loses the CPU between two counter reads would. A program whose correctness
 * depends on two reads of one progress call seeing one instant fails here
 * deterministically, where the threaded test would need luck. */
static struct {
    world_t *w;                 /* the world sim_run is stepping, NULL: off */
    int hold;                   /* > 0: no preemption (nested, or re-checking) */
    long fired;                 /* preemptions so far (non-vacuity) */
    const ofl_nic_ops_t *soft;  /* the softnic's own table */
    ofl_nic_ops_t ops;          /* the softnic's with reached() wrapped */
} pre;

static int preempt_reached(ofl_nic_t *nic, int cnt, int peer, uint64_t threshold)
{
    int rv = pre.soft->reached(nic, cnt, peer, threshold);
    if (NULL != pre.w && 0 == pre.hold && 0 == rng() % 3) {
        int other = (int) (rng() % (uint64_t) pre.w->n);
        if (other != nic->rank) {
            pre.hold++;
            ofl_engine_progress(&pre.w->inst[other]);
            pre.hold--;
            pre.fired++;
        }
    }
    return rv;
}

static void world_preempt(world_t *w, int on)
{
    if (NULL == pre.soft) {
        pre.soft = w->nic[0].base.ops;
        pre.ops = *pre.soft;
        pre.ops.reached = preempt_reached;
    }
    w->preempt = on;
    for (int r = 0; r < w->n; ++r) {
        w->nic[r].base.ops = on ? &pre.ops : pre.soft;
    }
}

static uint64_t cursor_sum(const ofl_inst_t *inst)
{
    uint64_t s = 0;
    for (int q = 0; q < OFL_PROG_MAX_QUEUES; ++q) {
        s += inst->cursor[q];
    }
    return s;
}

/* Run calls[0..ncalls) on every rank. Like blocking collectives, a rank posts its
 * next call as soon as its previous one completed, while its peers may still be
 * in the previous one. Ranks in `preposted` (bit mask) already posted calls[0].
 * Each result is verified the moment progress first reports completion. */
static int sim_run(world_t *w, call_t *calls, int ncalls, int order, unsigned preposted,
                   const char *what)
{
    int n = w->n;
    int cur[SIM_MAX];
    for (int r = 0; r < n; ++r) {
        cur[r] = 0;
        if (!(preposted & (1u << r))) {
            call_post(w, &calls[0], r);
        }
    }
    pre.w = w->preempt ? w : NULL;
    int stalled = 0, remaining = n * ncalls;
    long bad_result = 0, bad_blocker = 0, bad_done = 0;
    char msg[320] = "", desc[160], sdesc[80];
    while (remaining > 0) {
        int perm[SIM_MAX], len, moved = 0;
        make_order(n, order, perm, &len);
        for (int k = 0; k < len; ++k) {
            int r = perm[k];
            if (cur[r] >= ncalls) {
                continue;
            }
            ofl_inst_t *inst = &w->inst[r];
            uint64_t before = cursor_sum(inst);
            int done = ofl_engine_progress(inst);
            moved |= cursor_sum(inst) != before;
            int peer, cnt;
            uint64_t have;
            int64_t need;
            int blocked = ofl_engine_blocker(inst, &peer, &cnt, &have, &need);
            if (!done && !blocked && NULL != pre.w) {
                /* A peer ran after a counter read: what the read missed has come
                 * since, so one more progress (not preempted) must move on. */
                pre.hold++;
                done = ofl_engine_progress(inst);
                pre.hold--;
                moved |= cursor_sum(inst) != before;
                blocked = ofl_engine_blocker(inst, &peer, &cnt, &have, &need);
                if (!done && !blocked) {
                    bad_blocker++;
                    continue;
                }
            }
            if (!done) {
                /* Something must hold an incomplete call, and it must be a peer of
                 * the program whose counter really is short. */
                if (!blocked || peer_slot(inst->prog, peer) < 0 || (int64_t) have >= need
                    || (OFL_CNT_DATA != cnt && OFL_CNT_CREDIT != cnt)) {
                    bad_blocker++;
                }
                continue;
            }
            if (blocked) {
                bad_blocker++;
            }
            int b = call_verify(&calls[cur[r]], r, desc, sizeof(desc));
            if (b && 0 == bad_result++) {
                snprintf(msg, sizeof(msg), "rank %d call %d (%s): %s", r, cur[r],
                         spec_str(&calls[cur[r]].s, sdesc, sizeof(sdesc)), desc);
            }
            /* Completion is sticky and fires nothing more (the counters say so at
             * the end). */
            if (1 != ofl_engine_progress(inst)) {
                bad_done++;
            }
            moved = 1;
            remaining--;
            if (++cur[r] < ncalls) {
                call_post(w, &calls[cur[r]], r);
            }
        }
        stalled = moved ? 0 : stalled + 1;
        if (stalled > 200) {
            for (int r = 0; r < n; ++r) {
                int peer = -1, cnt = -1;
                uint64_t have = 0;
                int64_t need = 0;
                if (cur[r] < ncalls && ofl_engine_blocker(&w->inst[r], &peer, &cnt, &have,
                                                          &need)) {
                    fprintf(stderr, "  rank %d call %d: waits for %s(%d) %llu < %lld\n", r,
                            cur[r], cnt ? "CREDIT" : "DATA", peer, (unsigned long long) have,
                            (long long) need);
                }
            }
            CHECK(0, "%s (%s): deadlock with %d rank-calls left", what, order_name[order],
                  remaining);
            pre.w = NULL;
            return -1;
        }
    }
    pre.w = NULL;
    CHECK(0 == bad_result, "%s (%s): %ld wrong results, first: %s", what, order_name[order],
          bad_result, msg);
    CHECK(0 == bad_blocker, "%s (%s): %ld implausible blocker answers", what,
          order_name[order], bad_blocker);
    CHECK(0 == bad_done, "%s (%s): completion not sticky %ld times", what, order_name[order],
          bad_done);
    /* Nothing may change a buffer after its call completed, even while the peers
     * ran on into later calls. */
    long late = 0;
    for (int i = 0; i < ncalls; ++i) {
        for (int r = 0; r < n; ++r) {
            late += call_verify(&calls[i], r, desc, sizeof(desc));
        }
    }
    CHECK(0 == late, "%s (%s): %ld buffers changed after completion", what, order_name[order],
          late);
    check_quiescent(w, what);
    return 0;
}

static void run_specs(world_t *w, const spec_t *specs, int ncalls, int order, const char *what)
{
    call_t *calls = calloc((size_t) ncalls, sizeof(*calls));
    for (int i = 0; i < ncalls; ++i) {
        call_init(w, &calls[i], &specs[i]);
    }
    sim_run(w, calls, ncalls, order, 0, what);
    for (int i = 0; i < ncalls; ++i) {
        call_free(w, &calls[i]);
    }
    free(calls);
}

static uint32_t next_tag = 1;

/* Every kind, every root, counts 0, 1, 7 and counts spanning many segments, in
 * every stepping order, on one world whose edges carry over from run to run. */
static void test_sim_matrix(void)
{
    static const int sizes[] = { 1, 2, 3, 4, 5, 8, 13 };
    static const struct {
        int slots;
        size_t segsize;
    } geo[] = { { 1, 64 }, { 2, 64 }, { 4, 256 }, { 2, 256 } };
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KNOMIAL, 2, 1, 0 };
    static const ofl_sched_params_t pn = { OFL_TREE_KNOMIAL, 3, OFL_TREE_KARY, 3, 1, 0 };
    static const ofl_sched_params_t pf = { OFL_TREE_FLAT, 0, OFL_TREE_KARY, 4, 1, 0 };
    spec_t specs[16 + 6 * SIM_MAX];
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); ++si) {
        for (size_t gi = 0; gi < sizeof(geo) / sizeof(geo[0]); ++gi) {
            int n = sizes[si];
            /* Alternate tree shapes by geometry so every shape meets small slots. */
            const ofl_sched_params_t *p0 = gi & 1 ? &pn : &pk;
            world_t *w = world_open(n, geo[gi].slots, geo[gi].segsize, p0, &pf);
            if (NULL == w) {
                continue;
            }
            for (int order = 0; order < ORD_COUNT; ++order) {
                int k = 0;
                static const size_t sums[] = { 0, 1, 7, 1000 };
                for (int ip = 0; ip < 2; ++ip) {
                    for (size_t c = 0; c < 4; ++c) {
                        specs[k++] = (spec_t) { K_SUM_I32, 0, (ip + order) & 1, ip, sums[c],
                                                next_tag++ };
                    }
                }
                specs[k++] = (spec_t) { K_MAX_F64, 0, 0, 0, 7, next_tag++ };
                specs[k++] = (spec_t) { K_MAX_F64, 0, 1, 1, 300, next_tag++ };
                specs[k++] = (spec_t) { K_SUM_F32, 0, order & 1, 0, 100, next_tag++ };
                specs[k++] = (spec_t) { K_BARRIER, 0, 0, 0, 0, next_tag++ };
                specs[k++] = (spec_t) { K_SUM_I32, 0, 2, order & 1, 1000, next_tag++ };
                specs[k++] = (spec_t) { K_SUM_F32, 0, 2, 1, 100, next_tag++ };
                specs[k++] = (spec_t) { K_BARRIER, 0, 2, 0, 0, next_tag++ };
                for (int root = 0; root < n; ++root) {
                    specs[k++] = (spec_t) { K_BCAST, root, 0, 0, 0, next_tag++ };
                    specs[k++] = (spec_t) { K_BCAST, root, 1, 0, 1, next_tag++ };
                    specs[k++] = (spec_t) { K_BCAST, root, root & 1, 0, 777, next_tag++ };
                    specs[k++] = (spec_t) { K_REDUCE_I32, root, 0, 0, 7, next_tag++ };
                    specs[k++] = (spec_t) { K_REDUCE_I32, root, 1, 1, 500, next_tag++ };
                    specs[k++] = (spec_t) { K_REDUCE_I32, root, root & 1, 0, 1, next_tag++ };
                }
                char what[96];
                snprintf(what, sizeof(what), "matrix n %d slots %d seg %zu", n, geo[gi].slots,
                         geo[gi].segsize);
                run_specs(w, specs, k, order, what);
            }
            world_close(w);
        }
    }
}

/* 50 back-to-back calls of random kinds, roots, sizes and trees on the same edges:
 * the thresholds of each call must start where the previous call's ended. */
static void test_sim_mixed(void)
{
    static const ofl_sched_params_t pa = { OFL_TREE_KNOMIAL, 2, OFL_TREE_KARY, 2, 1, 0 };
    static const ofl_sched_params_t pb = { OFL_TREE_KARY, 3, OFL_TREE_KNOMIAL, 4, 1, 0 };
    static const size_t counts[] = { 0, 1, 7, 33, 100, 1000 };
    static const int sizes[] = { 7, 10, 16 };
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); ++si) {
        int n = sizes[si];
        world_t *w = world_open(n, (int) si + 1, 64, &pa, &pb);
        if (NULL == w) {
            continue;
        }
        for (int order = 0; order < ORD_COUNT; ++order) {
            spec_t specs[50];
            for (int i = 0; i < 50; ++i) {
                kind_t kind = (kind_t) (rng() % K_NKINDS);
                specs[i] = (spec_t) {
                    .kind = kind,
                    .root = (int) (rng() % (uint64_t) n),
                    .pset = (int) (rng() % NPSETS),
                    .inplace = (int) (rng() & 1),
                    .count = counts[rng() % 6],
                    .tag = next_tag++,
                };
            }
            char what[64];
            snprintf(what, sizeof(what), "mixed50 n %d", n);
            /* The last order once more with a peer running between counter reads. */
            world_preempt(w, ORD_SUBSET == order);
            run_specs(w, specs, 50, order, what);
        }
        world_close(w);
    }
}

static int all_sentinel(const uint8_t *buf, size_t bytes)
{
    for (size_t i = 0; i < bytes; ++i) {
        if (SENTINEL != buf[i]) {
            return 0;
        }
    }
    return 1;
}

/* Exchange-program calls (pset 2): int sums that wrap, double max, float sums
 * whose bits depend on the order, counts 0, 1, 7 and many segments, each both
 * out-of-place and in-place (at every rank, so at ranks 2.. the output is a later
 * input of the combine), and a barrier. Returns the number of specs. */
static int exchange_specs(spec_t *specs)
{
    static const size_t counts[] = { 0, 1, 7, 1000 };
    int k = 0;
    for (int ip = 0; ip < 2; ++ip) {
        for (int c = 0; c < 4; ++c) {
            specs[k++] = (spec_t) { K_SUM_I32, 0, 2, ip, counts[c], next_tag++ };
            specs[k++] = (spec_t) { K_MAX_F64, 0, 2, ip, counts[c] % 500, next_tag++ };
            specs[k++] = (spec_t) { K_SUM_F32, 0, 2, ip, counts[c] % 700, next_tag++ };
        }
    }
    specs[k++] = (spec_t) { K_BARRIER, 0, 2, 0, 0, next_tag++ };
    return k;
}

/* In-place calls whose segments, at segsize 4096 and up, exceed the engine's
 * 2 KiB combine buffer several times, with a partial last chunk. */
static int exchange_big_specs(spec_t *specs)
{
    int k = 0;
    specs[k++] = (spec_t) { K_SUM_I32, 0, 2, 1, 6000, next_tag++ };
    specs[k++] = (spec_t) { K_MAX_F64, 0, 2, 1, 3000, next_tag++ };
    specs[k++] = (spec_t) { K_SUM_F32, 0, 2, 1, 3000, next_tag++ };
    specs[k++] = (spec_t) { K_SUM_F32, 0, 2, 0, 3000, next_tag++ };
    return k;
}

/* The exchange allreduce and barrier in every stepping order, with and without
 * preemption, at several geometries (slots 1 and 2; 64-byte segments for many
 * segments, 4 and 8 KiB ones for the chunked in-place combine); then 50 calls
 * mixing exchange and tree programs of every kind on the same edges. */
static void test_sim_exchange(void)
{
    static const int sizes[] = { 1, 2, 3, 5, 8 };
    static const struct {
        int slots;
        size_t segsize;
    } geo[] = { { 1, 64 }, { 2, 64 }, { 1, 4096 }, { 2, 8192 } };
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KNOMIAL, 2, 1, 0 };
    static const ofl_sched_params_t pn = { OFL_TREE_KNOMIAL, 3, OFL_TREE_KARY, 3, 1, 0 };
    static const size_t counts[] = { 0, 1, 7, 33, 100, 1000, 3000 };
    spec_t specs[64];
    long fired = pre.fired;
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); ++si) {
        for (size_t gi = 0; gi < sizeof(geo) / sizeof(geo[0]); ++gi) {
            int n = sizes[si];
            world_t *w = world_open(n, geo[gi].slots, geo[gi].segsize, &pk, &pn);
            if (NULL == w) {
                continue;
            }
            char what[96];
            /* Every order meets both modes across the geometries; so do the big
             * in-place calls at each geometry. */
            for (int order = 0; order < ORD_COUNT; ++order) {
                int preempt = (order + (int) gi) & 1;
                int k = exchange_specs(specs);
                if (geo[gi].segsize > 2048 && (ORD_REVERSE == order || ORD_RANDOM == order)) {
                    k += exchange_big_specs(specs + k);
                }
                snprintf(what, sizeof(what), "exchange n %d slots %d seg %zu%s", n,
                         geo[gi].slots, geo[gi].segsize, preempt ? " preempt" : "");
                world_preempt(w, preempt);
                run_specs(w, specs, k, order, what);
            }
            /* One big in-place call at a time: the counters are checked after each. */
            if (geo[gi].segsize > 2048) {
                CHECK(w->nic[0].base.slot_bytes >= 2 * 2048, "segments of one chunk only");
                int k = exchange_big_specs(specs);
                for (int i = 0; i < k; ++i) {
                    snprintf(what, sizeof(what), "exchange big n %d seg %zu call %d", n,
                             geo[gi].segsize, i);
                    world_preempt(w, i & 1);
                    run_specs(w, &specs[i], 1, ORD_RANDOM, what);
                }
            }
            /* Exchange and tree programs of every kind on the same edges. */
            for (int i = 0; i < 50; ++i) {
                specs[i] = (spec_t) {
                    .kind = (kind_t) (rng() % K_NKINDS),
                    .root = (int) (rng() % (uint64_t) n),
                    .pset = (int) (rng() % NPSETS),
                    .inplace = (int) (rng() & 1),
                    .count = counts[rng() % 7],
                    .tag = next_tag++,
                };
            }
            snprintf(what, sizeof(what), "exchange mixed50 n %d slots %d seg %zu", n,
                     geo[gi].slots, geo[gi].segsize);
            world_preempt(w, (int) (gi & 1));
            run_specs(w, specs, 50, (int) gi, what);
            world_close(w);
        }
    }
    CHECK(pre.fired - fired > 1000, "only %ld preemptions", pre.fired - fired);

    /* Not vacuous: for these inputs rank order gives other bits than the reverse
     * order and than the tree's order, so a combine in any order but rank order
     * (or one that depends on arrival) fails the comparison above. */
    for (int n = 3; n <= 8; ++n) {
        world_t *w = world_open(n, 1, 64, &pk, &pn);
        if (NULL == w) {
            continue;
        }
        int vs_rev = 0, vs_tree = 0;
        for (size_t i = 0; i < 3000; ++i) {
            float rank = rank_sum_f32(n, 12345, i), rev = in_f32(n - 1, 12345, i);
            for (int r = n - 2; r >= 0; --r) {
                rev = rev + in_f32(r, 12345, i);
            }
            float tree = tree_sum_f32(w, 0, 0, 12345, i);
            vs_rev += 0 != memcmp(&rank, &rev, sizeof(float));
            vs_tree += 0 != memcmp(&rank, &tree, sizeof(float));
        }
        CHECK(vs_rev > 30, "n %d: rank and reverse order differ in %d elements only", n,
              vs_rev);
        /* A binary tree of 3 combines (0 + 1) + 2: rank order. */
        CHECK(3 == n || vs_tree > 30, "n %d: rank and tree order differ in %d elements only",
              n, vs_tree);
        world_close(w);
    }
}

/* The exchange barrier: with one rank missing nobody completes, whichever rank
 * it is, and every other rank waits for that one's data; so does an exchange
 * allreduce, without writing any result (in-place: the inputs stay). Then the
 * missing rank posts and everything completes. */
static void test_sim_exchange_barrier(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0 };
    const int n = 5;
    world_t *w = world_open(n, 1, 64, &pk, &pk);
    if (NULL == w) {
        return;
    }
    spec_t warm[4] = {
        { K_SUM_I32, 0, 2, 0, 100, next_tag++ },
        { K_BARRIER, 0, 0, 0, 0, next_tag++ },
        { K_BCAST, 3, 0, 0, 200, next_tag++ },
        { K_BARRIER, 0, 2, 0, 0, next_tag++ },
    };
    run_specs(w, warm, 4, ORD_RANDOM, "exchange barrier warm-up");
    for (int missing = 0; missing < n; ++missing) {
        for (int kind = 0; kind < 3; ++kind) {
            /* A barrier, an allreduce of one segment, one of seven. */
            size_t count = 1 == kind ? 16 : 100;
            spec_t s = { kind ? K_SUM_I32 : K_BARRIER, 0, 2, missing & 1, count, next_tag++ };
            call_t c;
            call_init(w, &c, &s);
            unsigned mask = 0;
            for (int r = 0; r < n; ++r) {
                if (r != missing) {
                    call_post(w, &c, r);
                    mask |= 1u << r;
                }
            }
            int done = 0, blame = 0, untouched = 0;
            for (int round = 0; round < 100; ++round) {
                for (int r = 0; r < n; ++r) {
                    done += r != missing && ofl_engine_progress(&w->inst[r]);
                }
            }
            for (int r = 0; r < n; ++r) {
                int peer = -1, cnt = -1;
                uint64_t have = 0;
                int64_t need = 0;
                /* One segment: everybody waits for the missing rank's data. More:
                 * the second segment's put waits for the first's slot at a peer,
                 * which waits for the missing rank. */
                blame += r != missing
                         && 1 == ofl_engine_blocker(&w->inst[r], &peer, &cnt, &have, &need)
                         && (int64_t) have < need
                         && (2 == kind ? OFL_CNT_CREDIT == cnt
                                       : OFL_CNT_DATA == cnt && peer == missing);
                untouched += K_BARRIER == s.kind || s.inplace
                             || all_sentinel(c.recv[r], count * 4);
            }
            CHECK(0 == done, "%s completed %d times without rank %d",
                  kind ? "exchange allreduce" : "exchange barrier", done, missing);
            CHECK(n - 1 == blame, "kind %d: only %d ranks wait for missing rank %d", kind, blame,
                  missing);
            CHECK(n == untouched, "results written without rank %d", missing);
            if (s.inplace && K_SUM_I32 == s.kind) {
                /* In-place, the buffer holds the input until the result comes. */
                int intact = 0;
                uint8_t orig[400];
                for (int r = 0; r < n; ++r) {
                    fill_input(K_SUM_I32, r, s.tag, count, orig);
                    intact += 0 == memcmp(orig, c.recv[r], count * 4);
                }
                CHECK(n == intact, "in-place inputs changed without rank %d (%d intact)",
                      missing, intact);
            }
            sim_run(w, &c, 1, ORD_RANDOM, mask, "exchange barrier, last rank");
            call_free(w, &c);
        }
    }
    world_close(w);
}

/* Partial posting: with counters already high from earlier calls, nothing may
 * fire before its own call's thresholds, and the blocker must name the peer that
 * really holds things up. Tree (binary, 7 ranks): 0 -> 1 2, 1 -> 3 4, 2 -> 5 6. */
static void test_sim_thresholds(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0 };
    const int n = 7;
    world_t *w = world_open(n, 1, 64, &pk, &pk);
    if (NULL == w) {
        return;
    }
    /* Warm up the edges so that stale counters would satisfy absolute thresholds. */
    spec_t warm[4] = {
        { K_SUM_I32, 0, 0, 0, 100, next_tag++ },
        { K_BCAST, 3, 0, 0, 200, next_tag++ },
        { K_REDUCE_I32, 5, 0, 0, 100, next_tag++ },
        { K_SUM_I32, 0, 0, 1, 100, next_tag++ },
    };
    run_specs(w, warm, 4, ORD_RANDOM, "thresholds warm-up");

    /* 1. Only the leaves posted. */
    spec_t s = { K_SUM_I32, 0, 0, 0, 100, next_tag++ };
    call_t c;
    call_init(w, &c, &s);
    size_t bytes = c.s.count * c.elem;
    static const int leaves[] = { 3, 4, 5, 6 };
    static const int parent[] = { -1, 0, 0, 1, 1, 2, 2 };
    for (int i = 0; i < 4; ++i) {
        call_post(w, &c, leaves[i]);
    }
    int done = 0, blk = 0;
    for (int round = 0; round < 300; ++round) {
        for (int i = 0; i < 4; ++i) {
            done += ofl_engine_progress(&w->inst[leaves[i]]);
        }
    }
    for (int i = 0; i < 4; ++i) {
        int peer = -1, cnt = -1;
        uint64_t have = 0;
        int64_t need = 0;
        int b = ofl_engine_blocker(&w->inst[leaves[i]], &peer, &cnt, &have, &need);
        blk += b && peer == parent[leaves[i]] && (int64_t) have < need;
    }
    CHECK(0 == done, "leaves alone completed %d times", done);
    CHECK(4 == blk, "only %d leaves blame their parent", blk);
    int untouched = 0;
    for (int r = 0; r < n; ++r) {
        untouched += all_sentinel(c.recv[r], bytes);
    }
    CHECK(n == untouched, "receive buffers written with only leaves posted (%d clean)",
          untouched);

    /* 2. Everybody but the root: still nothing may complete or touch a result. */
    call_post(w, &c, 1);
    call_post(w, &c, 2);
    for (int round = 0; round < 300; ++round) {
        for (int r = 1; r < n; ++r) {
            done += ofl_engine_progress(&w->inst[r]);
        }
    }
    CHECK(0 == done, "completed without the root");
    untouched = 0;
    for (int r = 0; r < n; ++r) {
        untouched += all_sentinel(c.recv[r], bytes);
    }
    CHECK(n == untouched, "receive buffers written before the root posted");
    int peer = -1, cnt = -1;
    uint64_t have = 0;
    int64_t need = 0;
    CHECK(1 == ofl_engine_blocker(&w->inst[1], &peer, &cnt, &have, &need) && 0 == peer,
          "rank 1 blames %d", peer);

    /* 3. The root posts: one progress moves exactly one segment down (one slot per
     * edge), so nobody is done yet; then everything finishes. */
    call_post(w, &c, 0);
    CHECK(0 == ofl_engine_progress(&w->inst[0]), "root finished 7 segments in one step");
    CHECK(!all_sentinel(c.recv[0], bytes) && all_sentinel(c.recv[0] + 64, bytes - 64),
          "root wrote other than its first segment");
    sim_run(w, &c, 1, ORD_RANDOM, 0x7fu, "thresholds finish");
    call_free(w, &c);

    /* 4. All but leaf 6: the root waits on 2, 2 waits on 6; no result is written. */
    s.tag = next_tag++;
    call_init(w, &c, &s);
    for (int r = 0; r < 6; ++r) {
        call_post(w, &c, r);
    }
    done = 0;
    for (int round = 0; round < 300; ++round) {
        for (int r = 5; r >= 0; --r) {
            done += ofl_engine_progress(&w->inst[r]);
        }
    }
    CHECK(0 == done, "completed without leaf 6");
    untouched = 0;
    for (int r = 0; r < n; ++r) {
        untouched += all_sentinel(c.recv[r], bytes);
    }
    CHECK(n == untouched, "receive buffers written without leaf 6");
    CHECK(1 == ofl_engine_blocker(&w->inst[0], &peer, &cnt, &have, &need) && 2 == peer
              && OFL_CNT_DATA == cnt && (int64_t) have < need,
          "root blames %d/%d", peer, cnt);
    CHECK(1 == ofl_engine_blocker(&w->inst[2], &peer, &cnt, &have, &need) && 6 == peer
              && OFL_CNT_DATA == cnt && (int64_t) have < need,
          "rank 2 blames %d/%d", peer, cnt);
    /* Left subtree (1, 3, 4) could go as far as the slots allow: one item up. */
    CHECK(1 == ofl_engine_blocker(&w->inst[1], &peer, &cnt, &have, &need) && 0 == peer,
          "rank 1 blames %d", peer);
    sim_run(w, &c, 1, ORD_REVERSE, 0x3fu, "thresholds without leaf 6");
    for (int r = 0; r < n; ++r) {
        CHECK(0 == ofl_engine_blocker(&w->inst[r], &peer, &cnt, &have, &need),
              "rank %d blocked after completion", r);
    }
    call_free(w, &c);
    world_close(w);
}

/* The same float sum twice, stepped in different orders: every rank of both runs
 * must hold the same bits, equal to the tree-order reference. */
static void test_sim_float(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KNOMIAL, 3, OFL_TREE_KARY, 2, 1, 0 };
    const int n = 11;
    world_t *w = world_open(n, 2, 64, &pk, &pk);
    if (NULL == w) {
        return;
    }
    spec_t s = { K_SUM_F32, 0, 0, 0, 100, next_tag++ };
    call_t a, b;
    call_init(w, &a, &s);
    call_init(w, &b, &s);
    sim_run(w, &a, 1, ORD_FORWARD, 0, "float run 1");
    sim_run(w, &b, 1, ORD_RANDOM, 0, "float run 2");
    size_t bytes = s.count * 4;
    int same = 0;
    for (int r = 0; r < n; ++r) {
        same += 0 == memcmp(a.recv[r], a.recv[0], bytes) && 0 == memcmp(b.recv[r], a.recv[0],
                                                                         bytes);
    }
    CHECK(n == same, "float results differ between ranks or runs (%d of %d same)", same, n);
    CHECK(0 == memcmp(a.recv[0], a.expect, bytes), "float result is not the tree order's");
    /* Not vacuous: the inputs are order-sensitive, rank order gives other bits. */
    int differ = 0;
    for (size_t i = 0; i < s.count; ++i) {
        float fwd = 0.0f, rev = 0.0f;
        for (int r = 0; r < n; ++r) {
            fwd += in_f32(r, s.tag, i);
            rev += in_f32(n - 1 - r, s.tag, i);
        }
        float got;
        memcpy(&got, a.recv[0] + 4 * i, 4);
        differ += memcmp(&fwd, &got, 4) != 0 || memcmp(&rev, &got, 4) != 0;
    }
    CHECK(differ > 10, "only %d elements order-sensitive", differ);
    call_free(w, &a);
    call_free(w, &b);
    world_close(w);
}

/* ---- softnic API --------------------------------------------------------------- */

static void test_softnic_api(void)
{
    char name[64];
    shm_name(name, sizeof(name));
    ofl_softnic_t a, b;
    CHECK(-ENOENT == ofl_softnic_attach(&b, name, 2, 1, 1, 64), "attach before create");
    CHECK(-EINVAL == ofl_softnic_create(&a, name, 0, 0, 1, 64), "size 0");
    CHECK(-EINVAL == ofl_softnic_create(&a, name, 2, 2, 1, 64), "rank == size");
    CHECK(-EINVAL == ofl_softnic_create(&a, name, 2, 0, 0, 64), "slots 0");
    CHECK(0 == ofl_softnic_create(&a, name, 2, 0, 2, 100), "create");
    CHECK(128 == a.base.slot_bytes && 2 == a.base.slots && 2 == a.base.size
              && 0 == a.base.rank, "geometry %llu", (unsigned long long) a.base.slot_bytes);
    CHECK(-EEXIST == ofl_softnic_create(&b, name, 2, 1, 2, 100), "second create");
    CHECK(-EINVAL == ofl_softnic_attach(&b, name, 2, 1, 1, 100), "attach other slots");
    CHECK(-EINVAL == ofl_softnic_attach(&b, name, 3, 1, 2, 100), "attach other size");
    CHECK(0 == ofl_softnic_attach(&b, name, 2, 1, 2, 100), "attach");
    CHECK(0 == ofl_softnic_unlink(name), "unlink");
    CHECK(-ENOENT == ofl_softnic_unlink(name), "second unlink");
    /* Counters start at zero and a bump at one mapping is seen through the other. */
    ofl_nic_t *na = &a.base, *nb = &b.base;
    CHECK(0 == nb->ops->counter(nb, OFL_CNT_DATA, 0), "fresh counter");
    na->ops->bump(na, OFL_CNT_DATA, 1, 0);
    na->ops->bump(na, OFL_CNT_DATA, 1, 1);
    CHECK(2 == nb->ops->counter(nb, OFL_CNT_DATA, 0)
              && 0 == nb->ops->counter(nb, OFL_CNT_CREDIT, 0)
              && 0 == na->ops->counter(na, OFL_CNT_DATA, 1), "bump lands at the peer only");
    /* Mailboxes: my outbox to b is b's inbox from me; slots wrap with the item. */
    uint8_t *o = na->ops->outbox(na, 1, 5);
    o[0] = 42;
    CHECK(o == (uint8_t *) na->ops->outbox(na, 1, 7), "slot of item 5 != item 7");
    CHECK(42 == ((uint8_t *) nb->ops->inbox(nb, 0, 5))[0], "inbox does not see outbox");
    CHECK(na->ops->outbox(na, 1, 4) != na->ops->outbox(na, 1, 5), "two slots alias");
    /* The DATA count sits in front of each slot's payload: payloads written to the
     * last byte, on both edges and in every slot, leave every count alone. */
    for (int s = 0; s < 2; ++s) {
        memset(na->ops->outbox(na, 1, (uint64_t) s), 0xff, na->slot_bytes);
        memset(nb->ops->outbox(nb, 0, (uint64_t) s), 0xee, nb->slot_bytes);
    }
    CHECK(2 == nb->ops->counter(nb, OFL_CNT_DATA, 0)
              && 0 == na->ops->counter(na, OFL_CNT_DATA, 1)
              && 0 == na->ops->counter(na, OFL_CNT_CREDIT, 1)
              && 0 == nb->ops->counter(nb, OFL_CNT_CREDIT, 0), "payload clobbered a count");
    uint8_t *in1 = nb->ops->inbox(nb, 0, 1), *in0 = na->ops->inbox(na, 1, 0);
    CHECK(0 == ((uintptr_t) in1 & 15) && 0xff == in1[0] && 0xff == in1[nb->slot_bytes - 1]
              && 0xee == in0[0] && 0xee == in0[na->slot_bytes - 1], "payload not in place");
    /* reached() is the count test, exact at the count, and follows slot reuse. */
    CHECK(nb->ops->reached(nb, OFL_CNT_DATA, 0, 0) && nb->ops->reached(nb, OFL_CNT_DATA, 0, 1)
              && nb->ops->reached(nb, OFL_CNT_DATA, 0, 2)
              && !nb->ops->reached(nb, OFL_CNT_DATA, 0, 3)
              && !na->ops->reached(na, OFL_CNT_DATA, 1, 1), "reached(DATA) off its count");
    na->ops->bump(na, OFL_CNT_DATA, 1, 2);   /* item 2 reuses the slot of item 0 */
    CHECK(3 == nb->ops->counter(nb, OFL_CNT_DATA, 0) && nb->ops->reached(nb, OFL_CNT_DATA, 0, 3)
              && !nb->ops->reached(nb, OFL_CNT_DATA, 0, 4)
              && 0xff == ((uint8_t *) nb->ops->inbox(nb, 0, 2))[5], "slot reuse");
    /* CREDIT: its own line; a cached value must not hide a later bump. */
    nb->ops->bump(nb, OFL_CNT_CREDIT, 0, 0);
    CHECK(1 == na->ops->counter(na, OFL_CNT_CREDIT, 1) && na->ops->reached(na, OFL_CNT_CREDIT, 1, 1)
              && !na->ops->reached(na, OFL_CNT_CREDIT, 1, 2), "reached(CREDIT) off its count");
    nb->ops->bump(nb, OFL_CNT_CREDIT, 0, 4);
    CHECK(5 == na->ops->counter(na, OFL_CNT_CREDIT, 1) && na->ops->reached(na, OFL_CNT_CREDIT, 1, 5)
              && !na->ops->reached(na, OFL_CNT_CREDIT, 1, 6)
              && na->ops->reached(na, OFL_CNT_CREDIT, 1, 2), "cached CREDIT went stale");
    CHECK(3 == nb->ops->counter(nb, OFL_CNT_DATA, 0) && 0 == nb->ops->counter(nb, OFL_CNT_CREDIT, 0)
              && 0 == na->ops->counter(na, OFL_CNT_DATA, 1), "a CREDIT bump moved another count");
    CHECK(1 == na->ops->peer_alive(na, 1) && -1 == na->ops->poisoned(na), "healthy");
    ofl_softnic_detach(&a);
    ofl_softnic_detach(&b);
}

/* ---- c) threads ------------------------------------------------------------------ */

typedef struct {
    int rank, n, small_iters;
    ofl_softnic_t nic;
    ofl_sched_params_t params;
    long bad, calls, waits_bad;
    char first[160];
    uint64_t in[8], out[8];     /* the edge sequences at the end */
} thr_t;

static const ofl_wait_opts_t wait_opts = { NULL, NULL, 64, 0.0, 1.0 };

static int64_t thr_val(int rank, int it, size_t j)
{
    return (int64_t) mix3((uint64_t) rank, (uint64_t) it, j);
}

static void thr_fail(thr_t *t, const char *what, int it)
{
    if (0 == t->bad++) {
        snprintf(t->first, sizeof(t->first), "rank %d: %s at iteration %d", t->rank, what, it);
    }
}

static void thr_call(thr_t *t, const ofl_program_t *p, ofl_edges_t *e, ofl_call_t *oc, int it)
{
    ofl_inst_t inst;
    ofl_engine_post(&inst, p, &t->nic.base, e, oc);
    int peer = -1;
    if (OFL_WAIT_OK != ofl_engine_wait(&inst, &wait_opts, &peer)) {
        t->waits_bad++;
        thr_fail(t, "wait failed", it);
    }
    t->calls++;
}

static void *thr_main(void *arg)
{
    thr_t *t = arg;
    int n = t->n;
    ofl_edges_t e;
    if (0 != ofl_edges_init(&e, n)) {
        thr_fail(t, "edges_init", -1);
        return NULL;
    }
    ofl_program_t ar, bc[8], rd[8];
    int ok = 0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, t->rank, n, &t->params, &ar);
    for (int r = 0; r < n; ++r) {
        ok &= 0 == ofl_sched_compile(OFL_COLL_BCAST, r, t->rank, n, &t->params, &bc[r]);
        ok &= 0 == ofl_sched_compile(OFL_COLL_REDUCE, r, t->rank, n, &t->params, &rd[r]);
    }
    if (!ok) {
        thr_fail(t, "compile", -1);
        return NULL;
    }
    ofl_alu_fn sum = ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT64);
    int64_t send[3], recv[3];
    for (int it = 0; it < t->small_iters; ++it) {
        size_t count = 1 + (size_t) (it % 3);
        for (size_t j = 0; j < count; ++j) {
            send[j] = thr_val(t->rank, it, j);
            recv[j] = -1;
        }
        int inplace = 0 == it % 4;
        ofl_call_t oc = { inplace ? (void *) recv : (void *) send, recv, sum, 8, count };
        if (inplace) {
            memcpy(recv, send, count * sizeof(send[0]));
        }
        thr_call(t, &ar, &e, &oc, it);
        for (size_t j = 0; j < count; ++j) {
            uint64_t want = 0;
            for (int r = 0; r < n; ++r) {
                want += (uint64_t) thr_val(r, it, j);
            }
            if ((uint64_t) recv[j] != want) {
                thr_fail(t, "small allreduce", it);
            }
        }
    }
    /* Large calls: hundreds of segments through 1..4 slots per edge. */
    const size_t big = 4000, bbytes = 3001;
    int64_t *bs = malloc(big * 8), *br = malloc(big * 8);
    uint8_t *bb = malloc(bbytes);
    for (int it = 0; it < 6; ++it) {
        int root = it % n;
        for (size_t j = 0; j < big; ++j) {
            bs[j] = thr_val(t->rank, 100000 + it, j);
            br[j] = it & 1 ? bs[j] : -1;
        }
        ofl_call_t oc = { it & 1 ? (void *) br : (void *) bs, br, sum, 8, big };
        thr_call(t, &ar, &e, &oc, 100000 + it);
        size_t wrong = 0;
        for (size_t j = 0; j < big; ++j) {
            uint64_t want = 0;
            for (int r = 0; r < n; ++r) {
                want += (uint64_t) thr_val(r, 100000 + it, j);
            }
            wrong += (uint64_t) br[j] != want;
        }
        for (size_t j = 0; j < bbytes; ++j) {
            bb[j] = t->rank == root ? pattern(root, (uint32_t) it, j) : SENTINEL;
        }
        ofl_call_t ob = { NULL, bb, NULL, 1, bbytes };
        thr_call(t, &bc[root], &e, &ob, 200000 + it);
        for (size_t j = 0; j < bbytes; ++j) {
            wrong += bb[j] != pattern(root, (uint32_t) it, j);
        }
        int rroot = (it + 1) % n;
        for (size_t j = 0; j < big; ++j) {
            br[j] = -1;
        }
        ofl_call_t orr = { bs, br, sum, 8, big };
        thr_call(t, &rd[rroot], &e, &orr, 300000 + it);
        for (size_t j = 0; j < big && t->rank == rroot; ++j) {
            uint64_t want = 0;
            for (int r = 0; r < n; ++r) {
                want += (uint64_t) thr_val(r, 100000 + it, j);
            }
            wrong += (uint64_t) br[j] != want;
        }
        if (wrong) {
            thr_fail(t, "large call", it);
        }
    }
    free(bs);
    free(br);
    free(bb);
    ofl_program_free(&ar);
    for (int r = 0; r < n; ++r) {
        ofl_program_free(&bc[r]);
        ofl_program_free(&rd[r]);
    }
    memcpy(t->in, e.in, sizeof(uint64_t) * (size_t) n);
    memcpy(t->out, e.out, sizeof(uint64_t) * (size_t) n);
    ofl_edges_fini(&e);
    return NULL;
}

/* Exchange allreduces interleaved with tree allreduces and bcasts on the same
 * edges, every result checked: int64 sums of 1..3 elements (every 4th in-place),
 * every 10th a float sum whose bits must be rank order's (every 20th in-place),
 * every 50th an in-place sum of 2000 int64 (4 KiB segments: two combine chunks). */
static void *thr_xmain(void *arg)
{
    thr_t *t = arg;
    int n = t->n;
    ofl_edges_t e;
    if (0 != ofl_edges_init(&e, n)) {
        thr_fail(t, "edges_init", -1);
        return NULL;
    }
    ofl_sched_params_t px = t->params;
    px.exchange = 1;
    ofl_program_t ex, ar, bc[8];
    int ok = 0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, t->rank, n, &px, &ex);
    ok &= 0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, t->rank, n, &t->params, &ar);
    for (int r = 0; r < n; ++r) {
        ok &= 0 == ofl_sched_compile(OFL_COLL_BCAST, r, t->rank, n, &t->params, &bc[r]);
    }
    if (!ok) {
        thr_fail(t, "compile", -1);
        return NULL;
    }
    ofl_alu_fn sum = ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT64);
    ofl_alu_fn fsum = ofl_alu_lookup(OFL_OP_SUM, OFL_T_FLOAT);
    const size_t big = 2000;
    int64_t *bs = malloc(big * 8), send[3], recv[3];
    float fs[5], fr[5];
    uint8_t bb[40];
    for (int it = 0; it < t->small_iters; ++it) {
        size_t wrong = 0;
        if (25 == it % 50) {
            for (size_t j = 0; j < big; ++j) {
                bs[j] = thr_val(t->rank, it, j);
            }
            ofl_call_t oc = { bs, bs, sum, 8, big };
            thr_call(t, &ex, &e, &oc, it);
            for (size_t j = 0; j < big; ++j) {
                uint64_t want = 0;
                for (int r = 0; r < n; ++r) {
                    want += (uint64_t) thr_val(r, it, j);
                }
                wrong += (uint64_t) bs[j] != want;
            }
        } else if (9 == it % 10) {
            int inplace = 19 == it % 20;
            for (size_t j = 0; j < 5; ++j) {
                fs[j] = in_f32(t->rank, (uint32_t) it, j);
                fr[j] = inplace ? fs[j] : -1.0f;
            }
            ofl_call_t oc = { inplace ? (void *) fr : (void *) fs, fr, fsum, 4, 5 };
            thr_call(t, &ex, &e, &oc, it);
            for (size_t j = 0; j < 5; ++j) {
                float want = rank_sum_f32(n, (uint32_t) it, j);
                wrong += 0 != memcmp(&want, &fr[j], sizeof(float));
            }
        } else {
            size_t count = 1 + (size_t) (it % 3);
            int inplace = 0 == it % 4;
            for (size_t j = 0; j < count; ++j) {
                send[j] = thr_val(t->rank, it, j);
                recv[j] = inplace ? send[j] : -1;
            }
            ofl_call_t oc = { inplace ? (void *) recv : (void *) send, recv, sum, 8, count };
            thr_call(t, &ex, &e, &oc, it);
            for (size_t j = 0; j < count; ++j) {
                uint64_t want = 0;
                for (int r = 0; r < n; ++r) {
                    want += (uint64_t) thr_val(r, it, j);
                }
                wrong += (uint64_t) recv[j] != want;
            }
        }
        if (wrong) {
            thr_fail(t, "exchange allreduce", it);
        }
        if (0 == it % 3) {
            int inplace = it & 1;
            send[0] = thr_val(t->rank, -it, 0);
            recv[0] = inplace ? send[0] : -1;
            ofl_call_t oc = { inplace ? (void *) recv : (void *) send, recv, sum, 8, 1 };
            thr_call(t, &ar, &e, &oc, it);
            uint64_t want = 0;
            for (int r = 0; r < n; ++r) {
                want += (uint64_t) thr_val(r, -it, 0);
            }
            if ((uint64_t) recv[0] != want) {
                thr_fail(t, "tree allreduce between exchanges", it);
            }
        } else if (1 == it % 3) {
            int root = it % n;
            size_t len = 1 + (size_t) (it % 40);
            for (size_t j = 0; j < len; ++j) {
                bb[j] = t->rank == root ? pattern(root, (uint32_t) it, j) : SENTINEL;
            }
            ofl_call_t ob = { NULL, bb, NULL, 1, len };
            thr_call(t, &bc[root], &e, &ob, it);
            for (size_t j = 0; j < len; ++j) {
                wrong += bb[j] != pattern(root, (uint32_t) it, j);
            }
            if (wrong) {
                thr_fail(t, "bcast between exchanges", it);
            }
        }
    }
    free(bs);
    ofl_program_free(&ex);
    ofl_program_free(&ar);
    for (int r = 0; r < n; ++r) {
        ofl_program_free(&bc[r]);
    }
    memcpy(t->in, e.in, sizeof(uint64_t) * (size_t) n);
    memcpy(t->out, e.out, sizeof(uint64_t) * (size_t) n);
    ofl_edges_fini(&e);
    return NULL;
}

/* exchange: thr_xmain on 4 KiB segments, else thr_main on 256-byte ones. */
static void test_threads(int n, int slots, ofl_tree_kind_t kind, int radix, int exchange)
{
    size_t segsize = exchange ? 4096 : 256;
    char name[64];
    shm_name(name, sizeof(name));
    thr_t t[8];
    memset(t, 0, sizeof(t));
    int rc = 0;
    for (int r = 0; r < n; ++r) {
        t[r].rank = r;
        t[r].n = n;
        t[r].small_iters = 2000;
        t[r].params = (ofl_sched_params_t) { kind, radix, OFL_TREE_KNOMIAL, 2, slots, 0 };
        rc = 0 == r ? ofl_softnic_create(&t[r].nic, name, n, r, slots, segsize)
                    : ofl_softnic_attach(&t[r].nic, name, n, r, slots, segsize);
        CHECK(0 == rc, "threads %d: softnic rank %d: %d", n, r, rc);
        if (0 != rc) {
            break;
        }
    }
    CHECK(0 == ofl_softnic_unlink(name), "unlink");
    if (0 != rc) {
        return;
    }
    pthread_t th[8];
    for (int r = 0; r < n; ++r) {
        CHECK(0 == pthread_create(&th[r], NULL, exchange ? thr_xmain : thr_main, &t[r]),
              "pthread_create");
    }
    long calls = 0;
    for (int r = 0; r < n; ++r) {
        pthread_join(th[r], NULL);
        CHECK(0 == t[r].bad, "threads n %d%s: %ld failures, first: %s", n,
              exchange ? " exchange" : "", t[r].bad, t[r].first);
        calls += t[r].calls;
    }
    long want = exchange ? 2000 + 667 + 667 : 2000 + 18;
    CHECK(calls == (long) n * want, "threads n %d: %ld calls", n, calls);
    /* Every call is over: each count equals the items its edge carried. */
    int bad = 0, edges = 0;
    for (int a = 0; a < n; ++a) {
        for (int b = 0; b < n; ++b) {
            ofl_nic_t *na = &t[a].nic.base, *nb = &t[b].nic.base;
            uint64_t data = nb->ops->counter(nb, OFL_CNT_DATA, a);
            edges += data > 0;
            bad += data != t[a].out[b] || data != t[b].in[a]
                   || na->ops->counter(na, OFL_CNT_CREDIT, b) != t[b].in[a];
        }
    }
    CHECK(0 == bad && (!exchange || edges == n * (n - 1)) && edges >= 2 * (n - 1),
          "threads n %d: %d edges off their counts, %d edges used", n, bad, edges);
    for (int r = 0; r < n; ++r) {
        ofl_softnic_detach(&t[r].nic);
    }
}

/* ---- failure handling ------------------------------------------------------- */

typedef struct {
    ofl_softnic_t nic;
    ofl_program_t prog;
    ofl_wait_status_t st;
    int peer;
    int saw_poison_first;
} poison_t;

static atomic_int poison_sent;

static void *poison_waiter(void *arg)
{
    poison_t *p = arg;
    ofl_edges_t e;
    ofl_edges_init(&e, 3);
    int64_t s[10] = { 0 }, r[10];
    ofl_call_t oc = { s, r, ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT64), 8, 10 };
    ofl_inst_t inst;
    ofl_engine_post(&inst, &p->prog, &p->nic.base, &e, &oc);
    /* Long timeout only as a safety net: the poison must end the wait first. */
    ofl_wait_opts_t o = { NULL, NULL, 64, 10.0, 0.01 };
    p->st = ofl_engine_wait(&inst, &o, &p->peer);
    p->saw_poison_first = atomic_load(&poison_sent);
    ofl_edges_fini(&e);
    return NULL;
}

/* Rank 2 never posts; ranks 0 and 1 wait (1 waits on 0, not on 2 directly). A
 * third party poisons the communicator naming 2: both waits must end with it. */
static void test_poison(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0 };
    char name[64];
    shm_name(name, sizeof(name));
    poison_t p[2];
    ofl_softnic_t third;
    memset(p, 0, sizeof(p));
    int rc = ofl_softnic_create(&p[0].nic, name, 3, 0, 1, 64);
    rc |= ofl_softnic_attach(&p[1].nic, name, 3, 1, 1, 64);
    rc |= ofl_softnic_attach(&third, name, 3, 2, 1, 64);
    CHECK(0 == rc, "poison: softnic");
    CHECK(0 == ofl_softnic_unlink(name), "unlink");
    if (0 != rc) {
        return;
    }
    atomic_store(&poison_sent, 0);
    pthread_t th[2];
    for (int r = 0; r < 2; ++r) {
        CHECK(0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, r, 3, &pk, &p[r].prog), "compile");
        CHECK(0 == pthread_create(&th[r], NULL, poison_waiter, &p[r]), "pthread_create");
    }
    struct timespec ts = { 0, 50 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    atomic_store(&poison_sent, 1);
    third.base.ops->poison(&third.base, 2);
    for (int r = 0; r < 2; ++r) {
        pthread_join(th[r], NULL);
        CHECK(OFL_WAIT_PEER_DEAD == p[r].st && 2 == p[r].peer && p[r].saw_poison_first,
              "poison: rank %d got status %d peer %d (after poison: %d)", r, (int) p[r].st,
              p[r].peer, p[r].saw_poison_first);
        ofl_program_free(&p[r].prog);
    }
    /* The first poison sticks: a later one does not rename the dead rank. */
    third.base.ops->poison(&third.base, 0);
    CHECK(2 == p[0].nic.base.ops->poisoned(&p[0].nic.base), "poison renamed");
    ofl_softnic_detach(&p[0].nic);
    ofl_softnic_detach(&p[1].nic);
    ofl_softnic_detach(&third);
}

static void count_progress(void *ctx)
{
    (*(long *) ctx)++;
}

/* A live peer that never posts: the watchdog names it after timeout_s. */
static void test_watchdog(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0 };
    char name[64];
    shm_name(name, sizeof(name));
    ofl_softnic_t a, b;
    int rc = ofl_softnic_create(&a, name, 2, 0, 1, 64);
    rc |= ofl_softnic_attach(&b, name, 2, 1, 1, 64);
    CHECK(0 == rc, "watchdog: softnic");
    CHECK(0 == ofl_softnic_unlink(name), "unlink");
    if (0 != rc) {
        return;
    }
    ofl_program_t p;
    ofl_edges_t e;
    CHECK(0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 0, 2, &pk, &p), "compile");
    ofl_edges_init(&e, 2);
    int32_t s = 1, r = 0;
    ofl_call_t oc = { &s, &r, ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT32), 4, 1 };
    ofl_inst_t inst;
    ofl_engine_post(&inst, &p, &a.base, &e, &oc);
    long hooks = 0;
    ofl_wait_opts_t o = { count_progress, &hooks, 64, 0.2, 0.05 };
    int peer = -1;
    double t0 = now_s();
    ofl_wait_status_t st = ofl_engine_wait(&inst, &o, &peer);
    double dt = now_s() - t0;
    CHECK(OFL_WAIT_TIMEOUT == st && 1 == peer, "watchdog: status %d peer %d", (int) st, peer);
    CHECK(dt >= 0.2 && dt < 2.0, "watchdog fired after %.3f s", dt);
    CHECK(hooks > 0, "the host progress hook was never called");
    CHECK(0 == r, "result written without the peer");
    CHECK(-1 == a.base.ops->poisoned(&a.base), "a timeout must not poison");
    ofl_program_free(&p);
    ofl_edges_fini(&e);
    ofl_softnic_detach(&a);
    ofl_softnic_detach(&b);
}

/* A real process attaches as rank 1 and exits: as a zombie and once reaped, it is
 * dead; a wait on it reports it and poisons the communicator. Runs while this
 * process has a single thread. */
static void test_dead_peer(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0 };
    char name[64];
    shm_name(name, sizeof(name));
    ofl_softnic_t a;
    int rc = ofl_softnic_create(&a, name, 2, 0, 1, 64);
    CHECK(0 == rc, "dead peer: create");
    if (0 != rc) {
        ofl_softnic_unlink(name);
        return;
    }
    int go[2], ready[2];
    CHECK(0 == pipe(go) && 0 == pipe(ready), "pipe");
    fflush(NULL);
    pid_t pid = fork();
    if (0 == pid) {
        ofl_softnic_t b;
        char c = 0 == ofl_softnic_attach(&b, name, 2, 1, 1, 64) ? 'y' : 'n';
        close(go[1]);
        if (1 != write(ready[1], &c, 1) || 0 > read(go[0], &c, 1)) {
            _exit(3);
        }
        _exit(0);
    }
    CHECK(pid > 0, "fork");
    close(go[0]);
    close(ready[1]);
    char c = 0;
    CHECK(1 == read(ready[0], &c, 1) && 'y' == c, "child did not attach");
    CHECK(0 == ofl_softnic_unlink(name), "unlink");
    ofl_nic_t *nic = &a.base;
    CHECK(1 == nic->ops->peer_alive(nic, 1), "live child reported dead");
    close(go[1]);   /* the child exits */
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    CHECK(0 == waitid(P_PID, (id_t) pid, &si, WEXITED | WNOWAIT), "waitid");
    CHECK(0 == nic->ops->peer_alive(nic, 1), "zombie child reported alive");

    ofl_program_t p;
    ofl_edges_t e;
    CHECK(0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 0, 2, &pk, &p), "compile");
    ofl_edges_init(&e, 2);
    int32_t s = 1, r = 0;
    ofl_call_t oc = { &s, &r, ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT32), 4, 1 };
    ofl_inst_t inst;
    ofl_engine_post(&inst, &p, nic, &e, &oc);
    ofl_wait_opts_t o = { NULL, NULL, 64, 5.0, 0.01 };
    int peer = -1;
    ofl_wait_status_t st = ofl_engine_wait(&inst, &o, &peer);
    CHECK(OFL_WAIT_PEER_DEAD == st && 1 == peer, "dead peer: status %d peer %d", (int) st,
          peer);
    CHECK(1 == nic->ops->poisoned(nic), "dead peer not poisoned: %d", nic->ops->poisoned(nic));
    int status = 0;
    CHECK(pid == waitpid(pid, &status, 0) && WIFEXITED(status) && 0 == WEXITSTATUS(status),
          "child status %d", status);
    CHECK(0 == nic->ops->peer_alive(nic, 1), "reaped child reported alive");
    CHECK(1 == nic->ops->peer_alive(nic, 0), "self reported dead");
    close(ready[0]);
    ofl_program_free(&p);
    ofl_edges_fini(&e);
    ofl_softnic_detach(&a);
}

int main(void)
{
    /* A deadlock must fail the test, not hang make check. */
    alarm(60);
    double t0 = now_s();
    test_shape();
    test_shape_exchange();
    double t1 = now_s();
    test_softnic_api();
    test_sim_matrix();
    test_sim_mixed();
    test_sim_exchange();
    test_sim_exchange_barrier();
    test_sim_thresholds();
    test_sim_float();
    double t2 = now_s();
    test_dead_peer();
    test_watchdog();
    test_poison();
    double t3 = now_s();
    test_threads(2, 1, OFL_TREE_KARY, 2, 0);
    test_threads(3, 2, OFL_TREE_KNOMIAL, 2, 0);
    test_threads(4, 4, OFL_TREE_KARY, 3, 0);
    test_threads(8, 2, OFL_TREE_KNOMIAL, 2, 0);
    test_threads(2, 1, OFL_TREE_KARY, 2, 1);
    test_threads(4, 2, OFL_TREE_KNOMIAL, 2, 1);
    test_threads(8, 1, OFL_TREE_KARY, 3, 1);
    double t4 = now_s();
    check_no_leftover_shm();
    printf("engine: shape %.2f s, sim %.2f s, failure %.2f s, threads %.2f s\n", t1 - t0,
           t2 - t1, t3 - t2, t4 - t3);
    return unit_report("engine");
}
