/*
 * Unit test of the schedule compiler, the descriptor engine and the software NIC
 * (src/sched, src/engine, src/nic) without MPI.
 *
 *   shape     every rank's program compiles, is internally consistent (triggers,
 *             CP bumps and item positions follow from its references, the
 *             per-stream use tables are recomputed here), and both ends of every
 *             stream (ordered pair of ranks, channel) agree on how many items cross
 *             it per round and per partial round (tree, exchange and split
 *             programs);
 *   sim       all ranks of a communicator in one thread, each with its own mapping
 *             of one softnic segment, stepped in many orders; every result is
 *             compared with a reference computed here from the inputs, and after
 *             every step the engine's queue rule is checked against the cursors. In
 *             "preempt" mode a counter read may be followed by another rank's
 *             progress before the reader acts on it (a thread losing the CPU
 *             between two reads), deterministically;
 *   threads   one thread per rank, ofl_engine_wait, thousands of calls;
 *   failure   poison, watchdog and a dead (forked) peer.
 *
 * By-reference (single-copy) bcast programs get each of these too: their shape
 * (every mailbox item a reference, a fence at every rank with children), the
 * simulation (a rank's call never completes before each of its children has
 * read its buffer), threads that reuse the buffer the moment a call completes,
 * and reads of unmapped memory that must fail the call, not the process.
 *
 * References never come from the code under test: sums are taken in unsigned
 * arithmetic, the float reference re-derives the combine order from the tree's
 * definition (own value, then children by increasing virtual rank), or for an
 * exchange or split program takes rank order; the items a split call moves over
 * each stream are counted here from segment ownership, not from the use tables.
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
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SIM_MAX 16
#define NPSETS 4   /* 0 and 1 as given to world_open, 2: 0 with exchange, 3: 0 with split */
#define PS_BYREF 4 /* 4 and 5: 0 and 1 by reference (bcast only; not drawn at random) */
#define NPSETS_ALL 6
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
    /* mant * 2^e, exact: 2^e is a normal float, the product needs 10 bits. */
    uint32_t bits = (uint32_t) (127 + e) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof(scale));
    return (float) mant * scale;
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
    { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0, 0 },
    { OFL_TREE_KARY, 3, OFL_TREE_KNOMIAL, 2, 2, 0, 0 },
    { OFL_TREE_KARY, 4, OFL_TREE_KNOMIAL, 3, 4, 0, 0 },
    { OFL_TREE_KNOMIAL, 2, OFL_TREE_KARY, 3, 1, 0, 0 },
    { OFL_TREE_KNOMIAL, 3, OFL_TREE_KARY, 4, 2, 0, 0 },
    { OFL_TREE_KNOMIAL, 4, OFL_TREE_KNOMIAL, 4, 3, 0, 0 },
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

#define NCH OFL_CHANNELS

/* The use table of the stream between p's rank and `rank` on `chan`: what p puts
 * to it (out) or reads from it; NULL when rank is not p's peer. */
static const ofl_stream_use_t *stream_use(const ofl_program_t *p, int rank, int chan, int out)
{
    int i = peer_slot(p, rank);
    if (i < 0) {
        return NULL;
    }
    return out ? &p->use_out[i * NCH + chan] : &p->use_in[i * NCH + chan];
}

/* Items per round of that stream (0 when p does not use it). */
static int per_round(const ofl_program_t *p, int rank, int chan, int out)
{
    const ofl_stream_use_t *u = stream_use(p, rank, chan, out);
    return NULL == u ? 0 : u->per_round;
}

/* What pa's rank puts to pb's rank on each channel, per round and per partial
 * round, is exactly what pb's rank reads from pa's: the number of disagreements. */
static int streams_mismatch(const ofl_program_t *pa, const ofl_program_t *pb)
{
    int a = pa->rank, b = pb->rank, bad = pa->period != pb->period;
    if (bad) {
        return bad;
    }
    for (int c = 0; c < NCH; ++c) {
        const ofl_stream_use_t *uo = stream_use(pa, b, c, 1), *ui = stream_use(pb, a, c, 0);
        bad += (uo ? uo->per_round : 0) != (ui ? ui->per_round : 0);
        for (int j = 0; j <= pa->period; ++j) {
            bad += (uo ? uo->prefix[j] : 0) != (ui ? ui->prefix[j] : 0);
        }
    }
    return bad;
}

/* Internal consistency of one program: indices in range, each peer listed once,
 * descriptors of a queue in segment order; every mailbox reference has exactly
 * the trigger and CP bump program.h defines (a read waits for DATA >= k + 1 and
 * hands back CREDIT, a put waits for CREDIT >= k + 1 - slots and raises DATA),
 * its k is its position among the stream's items of the round, and each stream
 * is read (written) by one queue only; the use tables equal the ones recomputed
 * here from the references, and every stream carries at most one item per round
 * (true of every program the compiler makes).
 * By reference: in a program with byref set every mailbox reference is by
 * reference (no slot bounds its segments, so no item may carry data), in any
 * other none is, and no reference to a caller's buffer is; a descriptor with a
 * by-reference item copies one input (nothing is combined). Only such a program
 * may hold fences (no input, no output, no CP bump): each trigger of a fence is
 * the CREDIT of a stream whose by-reference put of the same segment it waits to
 * have been read (rel = that put's k + 1), and every by-reference put is fenced
 * exactly once. Returns the number of problems. */
static int program_sane(const ofl_program_t *p)
{
    int bad = 0;
    bad += p->period < 1 || p->npeers < 0 || p->npeers > OFL_PROG_MAX_PEERS;
    bad += p->nqueues < 1 || p->nqueues > OFL_PROG_MAX_QUEUES;
    bad += NULL == p->use_in || NULL == p->use_out;
    if (bad) {
        return bad;
    }
    for (int i = 0; i < p->npeers; ++i) {
        bad += p->peers[i] < 0 || p->peers[i] >= p->size || p->peers[i] == p->rank;
        for (int j = 0; j < i; ++j) {
            bad += p->peers[i] == p->peers[j];
        }
    }
    int total = 0;
    for (int q = 0; q < p->nqueues; ++q) {
        bad += p->qfirst[q] != total || p->qlen[q] < 0;
        total += p->qlen[q];
    }
    bad += total != p->ndesc;
    if (bad) {
        return bad;
    }
    size_t ns = (size_t) p->npeers * NCH, plen = (size_t) p->period + 1;
    int *owner = calloc(2 * ns + 1, sizeof(int));      /* [dir][stream]: queue + 1 */
    int *next_k = calloc(2 * ns + 1, sizeof(int));     /* [dir][stream] */
    int *prefix = calloc(2 * ns * plen + 1, sizeof(int)); /* [dir][stream][j] */
    int *ref_put = calloc(3 * ns + 1, sizeof(int));   /* [0][s]: seg_off + 1, [1][s]: k,
                                                         [2][s]: fences, of a by-ref put */
    if (NULL == owner || NULL == next_k || NULL == prefix || NULL == ref_put) {
        free(owner);
        free(next_k);
        free(prefix);
        free(ref_put);
        return 1;
    }
    for (int q = 0; q < p->nqueues; ++q) {
        int last_off = 0;
        for (int i = 0; i < p->qlen[q]; ++i) {
            const ofl_desc_t *d = &p->desc[p->qfirst[q] + i];
            int fence = 0 == d->n_in && 0 == d->n_out;
            bad += fence ? !p->byref : d->n_in < 1 || d->n_out < 1;
            bad += d->seg_off >= p->period || d->seg_off < last_off;
            last_off = d->seg_off;
            bad += d->first_ref + d->n_in + d->n_out > p->nrefs;
            bad += d->first_trig + d->n_trig > p->ntrigs || d->first_cp + d->n_cp > p->ncps;
            if (bad) {
                break;
            }
            if (fence) {
                bad += 0 != d->n_cp || d->n_trig < 1;
                for (int t = 0; t < d->n_trig; ++t) {
                    const ofl_trig_t *g = &p->trigs[d->first_trig + t];
                    if (OFL_CNT_CREDIT != g->cnt || g->peer >= p->npeers || g->chan >= NCH) {
                        bad++;
                        continue;
                    }
                    size_t s = (size_t) g->peer * NCH + g->chan;
                    bad += ref_put[s] != d->seg_off + 1 || g->rel != ref_put[ns + s] + 1;
                    ref_put[2 * ns + s]++;
                }
                continue;
            }
            int has_ref = 0;
            for (int k = 0; k < d->n_in + d->n_out; ++k) {
                has_ref |= p->refs[d->first_ref + k].byref;
            }
            bad += has_ref && 1 != d->n_in;
            uint8_t trig_used[2 * OFL_PROG_MAX_PEERS] = { 0 };
            uint8_t cp_used[2 * OFL_PROG_MAX_PEERS] = { 0 };
            int mailboxes = 0;
            for (int k = 0; k < d->n_in + d->n_out; ++k) {
                ofl_ref_t r = p->refs[d->first_ref + k];
                int out = k >= d->n_in;
                bad += r.buf > OFL_BUF_PEER || (out && OFL_BUF_SEND == r.buf);
                bad += r.byref != (OFL_BUF_PEER == r.buf && p->byref);
                if (OFL_BUF_PEER != r.buf) {
                    continue;
                }
                mailboxes++;
                if (r.peer >= p->npeers || r.chan >= NCH) {
                    bad++;
                    continue;
                }
                size_t s = (size_t) out * ns + (size_t) r.peer * NCH + r.chan;
                bad += 0 != owner[s] && owner[s] != q + 1;
                owner[s] = q + 1;
                bad += r.k != next_k[s]++;
                if (out && r.byref) {
                    size_t st = s - ns;   /* the stream */
                    ref_put[st] = d->seg_off + 1;
                    ref_put[ns + st] = r.k;
                }
                for (size_t j = (size_t) d->seg_off + 1; j < plen; ++j) {
                    prefix[s * plen + j]++;
                }
                /* Its trigger and its CP bump, each used once. */
                int want_cnt = out ? OFL_CNT_CREDIT : OFL_CNT_DATA;
                int want_cp = out ? OFL_CNT_DATA : OFL_CNT_CREDIT;
                int want_rel = out ? r.k + 1 - p->slots : r.k + 1;
                int tfound = 0, cfound = 0;
                for (int t = 0; t < d->n_trig && !tfound; ++t) {
                    const ofl_trig_t *g = &p->trigs[d->first_trig + t];
                    if (!trig_used[t] && g->cnt == want_cnt && g->peer == r.peer
                        && g->chan == r.chan && g->rel == want_rel) {
                        trig_used[t] = 1;
                        tfound = 1;
                    }
                }
                for (int c = 0; c < d->n_cp && !cfound; ++c) {
                    const ofl_cp_t *g = &p->cps[d->first_cp + c];
                    if (!cp_used[c] && g->cnt == want_cp
                        && g->peer == r.peer && g->chan == r.chan && g->k == r.k) {
                        cp_used[c] = 1;
                        cfound = 1;
                    }
                }
                bad += !tfound || !cfound;
            }
            bad += d->n_trig != mailboxes || d->n_cp != mailboxes;
        }
    }
    for (size_t s = 0; s < 2 * ns && 0 == bad; ++s) {
        const ofl_stream_use_t *u = s < ns ? &p->use_in[s] : &p->use_out[s - ns];
        bad += u->per_round != next_k[s] || next_k[s] > 1;
        for (size_t j = 0; j < plen; ++j) {
            bad += u->prefix[j] != prefix[s * plen + j];
        }
        bad += 0 != u->prefix[0] || u->per_round != u->prefix[plen - 1];
    }
    /* Every listed peer carries something. */
    for (int i = 0; i < p->npeers && 0 == bad; ++i) {
        int used = 0;
        for (int c = 0; c < NCH; ++c) {
            used += p->use_in[i * NCH + c].per_round + p->use_out[i * NCH + c].per_round;
        }
        bad += 0 == used;
    }
    /* Every by-reference put is fenced once: its sender keeps the data until read. */
    for (size_t s = 0; s < ns && 0 == bad; ++s) {
        bad += (0 != ref_put[s]) != (1 == ref_put[2 * ns + s]) || ref_put[2 * ns + s] > 1;
    }
    free(owner);
    free(next_k);
    free(prefix);
    free(ref_put);
    return bad;
}

/* Which streams the trees say a rank reads and writes, per round: in[r * NCH + c]
 * / out[r * NCH + c]. Contributions go up on channel 0, results (and broadcast
 * data) come down on channel 1. */
static void expected_edges(ofl_coll_t coll, int root, int rank, int size,
                           const ofl_sched_params_t *pp, int *in, int *out)
{
    memset(in, 0, sizeof(int) * (size_t) size * NCH);
    memset(out, 0, sizeof(int) * (size_t) size * NCH);
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
        out[t.parent * NCH + 0] |= up;
        in[t.parent * NCH + 1] |= down;
    }
    for (int i = 0; i < t.nchildren; ++i) {
        in[t.children[i] * NCH + 0] |= up;
        out[t.children[i] * NCH + 1] |= down;
    }
}

static void test_shape(void)
{
    static ofl_program_t progs[17];
    int in[17 * NCH], out[17 * NCH];
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
                                  || p->coll != (ofl_coll_t) coll || p->slots != pp->slots
                                  || 1 != p->period || 0 != p->byref;
                        expected_edges((ofl_coll_t) coll, root, a, size, pp, in, out);
                        for (int b = 0; b < size; ++b) {
                            /* What a puts to b is exactly what b reads from a. */
                            mismatch += streams_mismatch(p, &progs[b]);
                            for (int c = 0; c < NCH; ++c) {
                                wrong += per_round(p, b, c, 1) != out[b * NCH + c]
                                         || per_round(p, b, c, 0) != in[b * NCH + c];
                                items += per_round(p, b, c, 1);
                            }
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
        /* Up on channel 0, down on channel 1, from the root's one combine. */
        CHECK(NULL != strstr(text, "program allreduce root=0 rank=0/5 slots=1 period=1")
                  && NULL != strstr(text, "send op mbox[1.0] op mbox[2.0] -> recv, mbox[1.1], "
                                          "mbox[2.1]")
                  && NULL != strstr(text, "DATA(1.0)") && NULL != strstr(text, "CREDIT(2.1)"),
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

/* The two programs are the same data (header, peers, queues, descriptors,
 * references, triggers, CP bumps and use tables). */
static int programs_equal(const ofl_program_t *a, const ofl_program_t *b)
{
    if (a->coll != b->coll || a->root != b->root || a->rank != b->rank || a->size != b->size
        || a->slots != b->slots || a->period != b->period || a->npeers != b->npeers
        || a->nqueues != b->nqueues || a->ndesc != b->ndesc || a->nrefs != b->nrefs
        || a->ntrigs != b->ntrigs || a->ncps != b->ncps) {
        return 0;
    }
    if (0 != memcmp(a->peers, b->peers, sizeof(int) * (size_t) a->npeers)) {
        return 0;
    }
    for (int q = 0; q < a->nqueues; ++q) {
        if (a->qlen[q] != b->qlen[q] || a->qfirst[q] != b->qfirst[q]) {
            return 0;
        }
    }
    if ((a->ndesc > 0 && 0 != memcmp(a->desc, b->desc, sizeof(*a->desc) * (size_t) a->ndesc))
        || (a->nrefs > 0
            && 0 != memcmp(a->refs, b->refs, sizeof(*a->refs) * (size_t) a->nrefs))
        || (a->ntrigs > 0
            && 0 != memcmp(a->trigs, b->trigs, sizeof(*a->trigs) * (size_t) a->ntrigs))
        || (a->ncps > 0 && 0 != memcmp(a->cps, b->cps, sizeof(*a->cps) * (size_t) a->ncps))) {
        return 0;
    }
    for (int s = 0; s < a->npeers * NCH; ++s) {
        for (int out = 0; out < 2; ++out) {
            const ofl_stream_use_t *ua = out ? &a->use_out[s] : &a->use_in[s];
            const ofl_stream_use_t *ub = out ? &b->use_out[s] : &b->use_in[s];
            if (ua->per_round != ub->per_round
                || 0 != memcmp(ua->prefix, ub->prefix,
                               sizeof(uint16_t) * ((size_t) a->period + 1))) {
                return 0;
            }
        }
    }
    return 1;
}

/* Problems in rank's exchange program against its definition: queue 0 is one
 * descriptor putting the send buffer to every other rank's mailbox (or nothing
 * when alone), queue 1 one descriptor combining every rank's contribution in rank
 * order (its own from the send buffer) into the receive buffer; one segment per
 * round, every stream on channel 0. */
static int exchange_wrong(const ofl_program_t *p)
{
    int n = p->size, bad = 0;
    bad += 2 != p->nqueues || (n > 1) != p->qlen[0] || 1 != p->qlen[1] || 1 != p->period;
    bad += n - 1 != p->npeers;
    if (bad) {
        return bad;
    }
    for (int r = 0; r < n; ++r) {
        bad += r != p->rank
               && (1 != per_round(p, r, 0, 0) || 1 != per_round(p, r, 0, 1)
                   || 0 != per_round(p, r, 1, 0) || 0 != per_round(p, r, 1, 1));
    }
    if (n > 1) {
        const ofl_desc_t *d = &p->desc[p->qfirst[0]];
        const ofl_ref_t *refs = &p->refs[d->first_ref];
        bad += 1 != d->n_in || OFL_BUF_SEND != refs[0].buf || n - 1 != d->n_out;
        bad += n - 1 != d->n_trig || n - 1 != d->n_cp || 0 != d->seg_off;
        uint8_t hit[OFL_PROG_MAX_PEERS] = { 0 };
        for (int k = 0; k < d->n_out && 0 == bad; ++k) {
            ofl_ref_t o = refs[d->n_in + k];
            int to = OFL_BUF_PEER == o.buf ? p->peers[o.peer] : -1;
            bad += to < 0 || to >= n || to == p->rank || hit[to]++ || 0 != o.chan || 0 != o.k;
            bad += OFL_CNT_CREDIT != p->trigs[d->first_trig + k].cnt
                   || OFL_CNT_DATA != p->cps[d->first_cp + k].cnt;
        }
    }
    const ofl_desc_t *c = &p->desc[p->qfirst[1]];
    const ofl_ref_t *refs = &p->refs[c->first_ref];
    bad += n != c->n_in || 1 != c->n_out || OFL_BUF_RECV != refs[c->n_in].buf;
    bad += n - 1 != c->n_trig || n - 1 != c->n_cp || 0 != c->seg_off;
    for (int k = 0; k < c->n_in && 0 == bad; ++k) {
        if (k == p->rank) {
            bad += OFL_BUF_SEND != refs[k].buf;
        } else {
            bad += OFL_BUF_PEER != refs[k].buf || k != p->peers[refs[k].peer]
                   || 0 != refs[k].chan;
        }
    }
    for (int k = 0; k < c->n_trig && 0 == bad; ++k) {
        bad += OFL_CNT_DATA != p->trigs[c->first_trig + k].cnt
               || OFL_CNT_CREDIT != p->cps[c->first_cp + k].cnt;
    }
    return bad;
}

/* Exchange programs for allreduce and barrier: every rank of every size up to 65
 * compiles, both ends of each stream agree, every ordered pair of ranks is an edge
 * used once per segment each way (channel 0); 66 ranks are refused; bcast and
 * reduce ignore the shape (exchange or split). */
static void test_shape_exchange(void)
{
    static ofl_program_t progs[66];
    static const int sizes[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 65 };
    for (int slots = 1; slots <= 3; slots += 2) {
        ofl_sched_params_t px = shape_params[slots];
        px.slots = slots;
        px.shape = OFL_SCHED_EXCHANGE;
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
                              || p->coll != coll || p->slots != slots || 0 != p->byref;
                    wrong += exchange_wrong(p);
                    for (int b = 0; b < size; ++b) {
                        mismatch += streams_mismatch(p, &progs[b]);
                        for (int c = 0; c < NCH; ++c) {
                            items += per_round(p, b, c, 1);
                        }
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
                           && 0 == p->ndesc && 0 == p->npeers && NULL == p->use_in
                           && NULL == p->use_out;
            }
            CHECK(66 == refused, "exchange %s: size 66 refused at %d of 66 ranks",
                  ofl_coll_name(coll), refused);
            /* As a tree, 66 ranks are fine. */
            px.shape = OFL_SCHED_TREE;
            CHECK(0 == ofl_sched_compile(coll, 0, 65, 66, &px, &progs[0]), "tree at 66");
            ofl_program_free(&progs[0]);
            px.shape = OFL_SCHED_EXCHANGE;
        }
        /* Bcast and reduce have no exchange or split form: same program as the
         * tree's. */
        for (int ci = 0; ci < 2; ++ci) {
            ofl_coll_t coll = ci ? OFL_COLL_BCAST : OFL_COLL_REDUCE;
            ofl_sched_params_t pt = px;
            pt.shape = OFL_SCHED_TREE;
            int same = 0, tried = 0;
            for (int shape = OFL_SCHED_EXCHANGE; shape <= OFL_SCHED_SPLIT; ++shape) {
                ofl_sched_params_t ps = px;
                ps.shape = (ofl_sched_shape_t) shape;
                for (int size = 1; size <= 9; size += 4) {
                    for (int r = 0; r < size; ++r) {
                        ofl_program_t a, b;
                        int rc = ofl_sched_compile(coll, size - 1, r, size, &ps, &a);
                        rc |= ofl_sched_compile(coll, size - 1, r, size, &pt, &b);
                        tried++;
                        same += 0 == rc && programs_equal(&a, &b);
                        ofl_program_free(&a);
                        ofl_program_free(&b);
                    }
                }
            }
            CHECK(same == tried, "%s with exchange/split shape: %d of %d programs as the tree's",
                  ofl_coll_name(coll), same, tried);
        }
    }

    /* The dump shows the put to every peer and the rank-order combine. */
    ofl_sched_params_t px = shape_params[0];
    px.shape = OFL_SCHED_EXCHANGE;
    ofl_program_t p;
    CHECK(0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 2, 4, &px, &p), "compile for dump");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(NULL != f, "open_memstream");
    if (NULL != f) {
        ofl_program_dump(&p, f);
        fclose(f);
        CHECK(NULL != strstr(text, "send -> mbox[0.0], mbox[1.0], mbox[3.0]")
                  && NULL != strstr(text, "mbox[0.0] op mbox[1.0] op send op mbox[3.0] -> recv"),
              "exchange dump: %s", text);
        free(text);
    }
    ofl_program_free(&p);
}

/* Problems in rank's split program against its definition (sched.h): segment s
 * of every round of `size` segments belongs to rank s. Queue 0 puts the rank's
 * contribution of every segment it does not own to the owner on channel 0, in
 * segment order; queue 1 is one descriptor that combines the own segment's
 * contributions in rank order (its own from the send buffer) into the receive
 * buffer and puts the result to every other rank on channel 1; queue 2 reads the
 * other owners' results into the receive buffer, in segment order. Each stream
 * carries one item per round, in the segment of its owner: prefix[j] is 1 exactly
 * when that segment is below j. */
static int split_wrong(const ofl_program_t *p)
{
    int n = p->size, me = p->rank, bad = 0;
    bad += n != p->period || 3 != p->nqueues || n - 1 != p->npeers;
    bad += n - 1 != p->qlen[0] || 1 != p->qlen[1] || n - 1 != p->qlen[2];
    if (bad) {
        return bad;
    }
    for (int r = 0; r < n; ++r) {
        if (r == me) {
            continue;
        }
        const ofl_stream_use_t *part_out = stream_use(p, r, 0, 1);  /* mine of r's segment */
        const ofl_stream_use_t *part_in = stream_use(p, r, 0, 0);   /* r's of mine */
        const ofl_stream_use_t *res_out = stream_use(p, r, 1, 1);   /* my result to r */
        const ofl_stream_use_t *res_in = stream_use(p, r, 1, 0);    /* r's result */
        if (NULL == part_out) {
            return 1;
        }
        for (int j = 0; j <= n; ++j) {
            bad += part_out->prefix[j] != (j > r) || part_in->prefix[j] != (j > me);
            bad += res_out->prefix[j] != (j > me) || res_in->prefix[j] != (j > r);
        }
    }
    for (int i = 0; i < n - 1 && 0 == bad; ++i) {
        int s = i < me ? i : i + 1;
        for (int q = 0; q < 3; q += 2) {
            const ofl_desc_t *d = &p->desc[p->qfirst[q] + i];
            const ofl_ref_t *refs = &p->refs[d->first_ref];
            bad += d->seg_off != s || 1 != d->n_in || 1 != d->n_out;
            ofl_ref_t mbox = 0 == q ? refs[1] : refs[0];
            bad += OFL_BUF_PEER != mbox.buf || s != p->peers[mbox.peer] || q / 2 != mbox.chan;
            bad += (0 == q ? OFL_BUF_SEND : OFL_BUF_RECV) != (0 == q ? refs[0] : refs[1]).buf;
        }
    }
    const ofl_desc_t *c = &p->desc[p->qfirst[1]];
    const ofl_ref_t *refs = &p->refs[c->first_ref];
    bad += c->seg_off != me || n != c->n_in || n != c->n_out || 2 * (n - 1) != c->n_trig;
    if (bad) {
        return bad;
    }
    for (int k = 0; k < n; ++k) {
        if (k == me) {
            bad += OFL_BUF_SEND != refs[k].buf;
        } else {
            bad += OFL_BUF_PEER != refs[k].buf || k != p->peers[refs[k].peer]
                   || 0 != refs[k].chan;
        }
    }
    bad += OFL_BUF_RECV != refs[n].buf;
    uint8_t hit[OFL_PROG_MAX_PEERS] = { 0 };
    for (int k = 1; k < n; ++k) {
        ofl_ref_t o = refs[n + k];
        int to = OFL_BUF_PEER == o.buf ? p->peers[o.peer] : -1;
        bad += to < 0 || to == me || hit[to]++ || 1 != o.chan;
    }
    return bad;
}

/* Split allreduce programs at every size up to 17 and 64, 65 (the most one
 * combine takes), slots 1, 2 and 4: each matches its definition, both ends of
 * every stream agree per round and per partial round, every segment of a round is
 * combined by exactly one rank, each ordered pair carries one item per round on
 * each channel; one rank compiles (a copy); 66 ranks are refused everywhere; the
 * split barrier is the exchange barrier. */
static void test_shape_split(void)
{
    static ofl_program_t progs[66];
    static const int sizes[] = { 1,  2,  3,  4,  5,  6,  7,  8,  9, 10,
                                 11, 12, 13, 14, 15, 16, 17, 64, 65 };
    for (int slots = 1; slots <= 4; slots *= 2) {
        ofl_sched_params_t px = shape_params[slots];
        px.slots = slots;
        px.shape = OFL_SCHED_SPLIT;
        for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); ++si) {
            int size = sizes[si], ok = 1;
            for (int r = 0; r < size; ++r) {
                int rc = ofl_sched_compile(OFL_COLL_ALLREDUCE, r % 3, r, size, &px, &progs[r]);
                CHECK(0 == rc, "split rank %d/%d slots %d", r, size, slots);
                ok &= 0 == rc;
            }
            if (!ok) {
                continue;
            }
            int insane = 0, wrong = 0, mismatch = 0, items = 0;
            int combined[66] = { 0 };
            for (int a = 0; a < size; ++a) {
                const ofl_program_t *p = &progs[a];
                insane += program_sane(p);
                insane += p->rank != a || p->size != size || 0 != p->root
                          || OFL_COLL_ALLREDUCE != p->coll || p->slots != slots
                          || 0 != p->byref;
                int w = split_wrong(p);
                wrong += w;
                if (0 == w) {
                    combined[p->desc[p->qfirst[1]].seg_off]++;
                }
                for (int b = 0; b < size; ++b) {
                    mismatch += streams_mismatch(p, &progs[b]);
                    for (int c = 0; c < NCH; ++c) {
                        items += per_round(p, b, c, 1);
                    }
                }
            }
            int once = 0;
            for (int s = 0; s < size; ++s) {
                once += 1 == combined[s];
            }
            CHECK(0 == insane && 0 == wrong && 0 == mismatch && items == 2 * size * (size - 1)
                      && once == size,
                  "split size %d slots %d: insane %d wrong %d mismatch %d items %d "
                  "segments combined once %d", size, slots, insane, wrong, mismatch, items, once);
            for (int r = 0; r < size; ++r) {
                ofl_program_free(&progs[r]);
            }
        }
        int refused = 0;
        for (int r = 0; r < 66; ++r) {
            ofl_program_t *p = &progs[r];
            refused += -1 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, r, 66, &px, p)
                       && NULL == p->desc && 0 == p->ndesc && 0 == p->npeers
                       && NULL == p->use_in && NULL == p->use_out;
        }
        CHECK(66 == refused, "split: size 66 refused at %d of 66 ranks", refused);

        /* One rank: a program of one copy, send to receive buffer, in queue 1. */
        ofl_program_t p;
        int rc = ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 0, 1, &px, &p);
        CHECK(0 == rc && 1 == p.period && 0 == p.npeers && 1 == p.ndesc && 0 == p.qlen[0]
                  && 1 == p.qlen[1] && 0 == p.qlen[2] && 1 == p.desc[0].n_in
                  && 1 == p.desc[0].n_out && OFL_BUF_SEND == p.refs[0].buf
                  && OFL_BUF_RECV == p.refs[1].buf && 0 == p.ntrigs && 0 == p.ncps,
              "split at one rank: rc %d", rc);
        ofl_program_free(&p);

        /* Barrier has no split form: the exchange barrier. */
        ofl_sched_params_t pe = px;
        pe.shape = OFL_SCHED_EXCHANGE;
        int same = 0, tried = 0;
        for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si += 3) {
            int size = sizes[si];
            for (int r = 0; r < size; ++r) {
                ofl_program_t a, b;
                rc = ofl_sched_compile(OFL_COLL_BARRIER, 0, r, size, &px, &a);
                rc |= ofl_sched_compile(OFL_COLL_BARRIER, 0, r, size, &pe, &b);
                tried++;
                same += 0 == rc && programs_equal(&a, &b) && 0 == exchange_wrong(&a);
                ofl_program_free(&a);
                ofl_program_free(&b);
            }
        }
        CHECK(same == tried, "split barrier: %d of %d programs as the exchange's", same, tried);
    }

    /* The dump: puts in segment order, the owner's rank-order combine feeding
     * everybody on channel 1, the reads of the other owners' results. */
    ofl_sched_params_t px = shape_params[0];
    px.shape = OFL_SCHED_SPLIT;
    ofl_program_t p;
    CHECK(0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, 2, 4, &px, &p), "compile for dump");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(NULL != f, "open_memstream");
    if (NULL != f) {
        ofl_program_dump(&p, f);
        fclose(f);
        CHECK(NULL != strstr(text, "program allreduce root=0 rank=2/4 slots=1 period=4")
                  && NULL != strstr(text, "q0 d0 seg+0: send -> mbox[0.0]")
                  && NULL != strstr(text, "q0 d2 seg+3: send -> mbox[3.0]")
                  && NULL != strstr(text, "q1 d0 seg+2: mbox[0.0] op mbox[1.0] op send op "
                                          "mbox[3.0] -> recv, mbox[0.1], mbox[1.1], mbox[3.1]")
                  && NULL != strstr(text, "q2 d1 seg+1: mbox[1.1] -> recv"),
              "split dump: %s", text);
        free(text);
    }
    ofl_program_free(&p);
}

/* Problems in rank's by-reference bcast program p against the same shape's
 * by-value program v and the tree node t: queue 0 is v's queue 0 (the same
 * descriptors, triggers, CP bumps, peers and use tables) with every mailbox
 * reference, and nothing else, by reference; a rank with children has a queue 1
 * of one fence (no data, no CP bump, segment 0) with one trigger per child,
 * CREDIT of the down stream (channel 1) >= the put's item + 1; a leaf has no
 * second queue. */
static int byref_wrong(const ofl_program_t *p, const ofl_program_t *v, const ofl_tree_node_t *t)
{
    int nch = t->nchildren, bad = 0;
    bad += 1 != p->byref || 0 != v->byref || p->period != v->period;
    bad += p->nqueues != 1 + (nch > 0) || 1 != v->nqueues || p->qlen[0] != v->qlen[0];
    bad += p->qlen[0] != (p->size > 1) || p->npeers != v->npeers;
    bad += p->ndesc != v->ndesc + (nch > 0) || p->nrefs != v->nrefs || p->ncps != v->ncps
           || p->ntrigs != v->ntrigs + nch;
    if (bad) {
        return bad;
    }
    bad += 0 != memcmp(p->peers, v->peers, sizeof(int) * (size_t) p->npeers);
    bad += v->ndesc > 0 && 0 != memcmp(p->desc, v->desc, sizeof(*p->desc) * (size_t) v->ndesc);
    bad += v->ntrigs > 0
           && 0 != memcmp(p->trigs, v->trigs, sizeof(*p->trigs) * (size_t) v->ntrigs);
    bad += v->ncps > 0 && 0 != memcmp(p->cps, v->cps, sizeof(*p->cps) * (size_t) v->ncps);
    int refs = 0;
    for (int i = 0; i < p->nrefs; ++i) {
        ofl_ref_t a = p->refs[i], b = v->refs[i];
        int mbox = OFL_BUF_PEER == a.buf;
        refs += mbox;
        bad += a.byref != mbox || 0 != b.byref || a.buf != b.buf || a.peer != b.peer
               || a.chan != b.chan || a.k != b.k;
    }
    bad += refs != nch + (t->parent >= 0);
    for (int s = 0; s < p->npeers * NCH; ++s) {
        bad += p->use_in[s].per_round != v->use_in[s].per_round
               || p->use_out[s].per_round != v->use_out[s].per_round;
    }
    if (0 == nch || bad) {
        return bad;
    }
    const ofl_desc_t *f = &p->desc[p->qfirst[1]];
    bad += 1 != p->qlen[1] || 0 != f->n_in || 0 != f->n_out || 0 != f->n_cp || 0 != f->seg_off
           || nch != f->n_trig;
    uint8_t hit[OFL_TREE_MAX_CHILDREN] = { 0 };
    for (int k = 0; k < f->n_trig && 0 == bad; ++k) {
        const ofl_trig_t *g = &p->trigs[f->first_trig + k];
        int child = -1;
        for (int c = 0; c < nch; ++c) {
            child = g->peer < p->npeers && p->peers[g->peer] == t->children[c] ? c : child;
        }
        bad += child < 0 || OFL_CNT_CREDIT != g->cnt || 1 != g->chan || 1 != g->rel;
        bad += child >= 0 && hit[child]++;
    }
    return bad;
}

/* By-reference bcast programs, k-ary and k-nomial trees of radix 2..4 (slots 1..4),
 * every size up to 17 and every root: each rank's program is sane and matches
 * byref_wrong against its by-value twin and the tree; both ends of every stream
 * agree per round and per partial round, and the streams are the tree's edges
 * (channel 1, down). Fences exactly at ranks with children. byref is ignored by
 * the other collectives; the dump names references "ref". */
static void test_shape_byref(void)
{
    static ofl_program_t progs[17], plain[17];
    int in[17 * NCH], out[17 * NCH];
    static const struct {
        ofl_tree_kind_t kind;
        int radix, slots;
    } trees[] = { { OFL_TREE_KARY, 2, 1 },    { OFL_TREE_KARY, 3, 2 },
                  { OFL_TREE_KARY, 4, 4 },    { OFL_TREE_KNOMIAL, 2, 2 },
                  { OFL_TREE_KNOMIAL, 3, 1 }, { OFL_TREE_KNOMIAL, 4, 3 } };
    int fences_total = 0;
    for (size_t ti = 0; ti < sizeof(trees) / sizeof(trees[0]); ++ti) {
        ofl_sched_params_t pv = { OFL_TREE_KARY, 2, trees[ti].kind, trees[ti].radix,
                                  trees[ti].slots, OFL_SCHED_TREE, 0 };
        ofl_sched_params_t pr = pv;
        pr.byref = 1;
        for (int size = 1; size <= 17; ++size) {
            for (int root = 0; root < size; ++root) {
                int ok = 1;
                for (int r = 0; r < size; ++r) {
                    int rc = ofl_sched_compile(OFL_COLL_BCAST, root, r, size, &pr, &progs[r]);
                    rc |= ofl_sched_compile(OFL_COLL_BCAST, root, r, size, &pv, &plain[r]);
                    CHECK(0 == rc, "byref bcast root %d rank %d/%d tree %zu", root, r, size, ti);
                    ok &= 0 == rc;
                }
                if (!ok) {
                    continue;
                }
                int insane = 0, wrong = 0, mismatch = 0, edges = 0, items = 0, fences = 0;
                int parents = 0;
                for (int a = 0; a < size; ++a) {
                    const ofl_program_t *p = &progs[a];
                    ofl_tree_node_t t;
                    if (0 != ofl_tree_node(trees[ti].kind, trees[ti].radix, size, root, a, &t)) {
                        wrong++;
                        continue;
                    }
                    insane += program_sane(p) + program_sane(&plain[a]);
                    insane += p->rank != a || p->size != size || p->root != root
                              || OFL_COLL_BCAST != p->coll || p->slots != trees[ti].slots
                              || 1 != p->period;
                    wrong += byref_wrong(p, &plain[a], &t);
                    fences += 2 == p->nqueues;
                    parents += t.nchildren > 0;
                    expected_edges(OFL_COLL_BCAST, root, a, size, &pv, in, out);
                    for (int b = 0; b < size; ++b) {
                        mismatch += streams_mismatch(p, &progs[b]);
                        for (int c = 0; c < NCH; ++c) {
                            edges += per_round(p, b, c, 1) != out[b * NCH + c]
                                     || per_round(p, b, c, 0) != in[b * NCH + c];
                            items += per_round(p, b, c, 1);
                        }
                    }
                }
                fences_total += fences;
                CHECK(0 == insane && 0 == wrong && 0 == mismatch && 0 == edges
                          && items == size - 1 && fences == parents && (1 == size || fences > 0),
                      "byref bcast tree %zu size %d root %d: insane %d wrong %d mismatch %d "
                      "edges %d items %d fences %d at %d parents", ti, size, root, insane, wrong,
                      mismatch, edges, items, fences, parents);
                for (int r = 0; r < size; ++r) {
                    ofl_program_free(&progs[r]);
                    ofl_program_free(&plain[r]);
                }
            }
        }
    }
    CHECK(fences_total > 1000, "only %d fences", fences_total);

    /* byref is a bcast parameter: every other collective and shape ignores it. */
    int same = 0, tried = 0;
    for (int shape = OFL_SCHED_TREE; shape <= OFL_SCHED_SPLIT; ++shape) {
        ofl_sched_params_t pv = { OFL_TREE_KNOMIAL, 3, OFL_TREE_KARY, 2, 2,
                                  (ofl_sched_shape_t) shape, 0 };
        ofl_sched_params_t pr = pv;
        pr.byref = 1;
        for (int coll = 0; coll < OFL_COLL_COUNT; ++coll) {
            if (OFL_COLL_BCAST == coll) {
                continue;
            }
            for (int size = 1; size <= 9; size += 4) {
                for (int r = 0; r < size; ++r) {
                    ofl_program_t a, b;
                    int rc = ofl_sched_compile((ofl_coll_t) coll, size - 1, r, size, &pr, &a);
                    rc |= ofl_sched_compile((ofl_coll_t) coll, size - 1, r, size, &pv, &b);
                    tried++;
                    same += 0 == rc && programs_equal(&a, &b) && 0 == a.byref
                            && 0 == program_sane(&a);
                    ofl_program_free(&a);
                    ofl_program_free(&b);
                }
            }
        }
    }
    CHECK(same == tried, "byref on other collectives: %d of %d programs as without", same,
          tried);

    /* The dump: binary tree of 5 rooted at 0, rank 1 reads from 0, keeps a copy and
     * publishes it to 3 and 4; its fence waits for both reads. */
    ofl_sched_params_t pr = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, OFL_SCHED_TREE, 1 };
    ofl_program_t p;
    CHECK(0 == ofl_sched_compile(OFL_COLL_BCAST, 0, 1, 5, &pr, &p), "compile for dump");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(NULL != f, "open_memstream");
    if (NULL != f) {
        ofl_program_dump(&p, f);
        fclose(f);
        CHECK(NULL != strstr(text, "q0 d0 seg+0: ref[0.1] -> recv, ref[3.1], ref[4.1]")
                  && NULL != strstr(text, "q1 d0 seg+0:  -> ")
                  && NULL != strstr(text, "when CREDIT(3.1)>=base+1 CREDIT(4.1)>=base+1")
                  && NULL == strstr(text, "mbox["),
              "byref dump: %s", text);
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
    int pset;          /* which of the world's parameter sets (2: exchange, 3: split,
                          4, 5: by reference) */
    int inplace;       /* send == recv (reduce: at the root only) */
    size_t count;
    uint32_t tag;      /* varies the inputs from call to call */
    size_t seg;        /* the call's segment size (ofl_call_t.seg_bytes), 0: the slot's */
} spec_t;

typedef struct {
    int n;
    char name[64];
    ofl_sched_params_t params[NPSETS_ALL];
    ofl_softnic_t nic[SIM_MAX];
    ofl_edges_t edges[SIM_MAX];
    ofl_inst_t inst[SIM_MAX];
    ofl_program_t prog[NPSETS_ALL][OFL_COLL_COUNT][SIM_MAX][SIM_MAX]; /* [root][rank] */
    uint8_t compiled[NPSETS_ALL][OFL_COLL_COUNT][SIM_MAX][SIM_MAX];
    int preempt;       /* sim_run steps this world in preempt mode */
    uint32_t from[SIM_MAX][OFL_PROG_MAX_QUEUES];   /* executions the rule check saw */
} world_t;

/* Over the whole run: what the simulations saw of the engine's queue rule and of
 * the segmentation (non-vacuity of the split tests). */
static struct {
    long rule_broken;  /* executions of a segment an earlier queue had not finished */
    long rule_held;    /* times a triggered descriptor had to wait for the rule */
    long bad_nseg;     /* posts whose segment count is not the one computed here */
    long split_calls;  /* posts of split programs */
    long split_partial; /* ... whose last round is partial */
    long split_small;  /* ... with fewer segments than ranks */
    long byref_calls;  /* posts of by-reference programs */
    long byref_big;    /* ... of one segment larger than a mailbox slot */
    long byref_partial; /* ... of several segments, the last one partial */
    long byref_fenced; /* completions of by-reference calls checked against the
                          children's reads */
} stats;

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
    w->params[2].shape = OFL_SCHED_EXCHANGE;
    w->params[3] = *p0;
    w->params[3].shape = OFL_SCHED_SPLIT;
    w->params[PS_BYREF] = *p0;
    w->params[PS_BYREF].byref = 1;
    w->params[PS_BYREF + 1] = *p1;
    w->params[PS_BYREF + 1].byref = 1;
    for (int ps = 0; ps < NPSETS_ALL; ++ps) {
        w->params[ps].slots = slots;
    }
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
    for (int ps = 0; ps < NPSETS_ALL; ++ps) {
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
            float v = OFL_SCHED_TREE != w->params[s->pset].shape
                          ? rank_sum_f32(n, s->tag, i)
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
        .seg_bytes = c->s.seg,
    };
    const ofl_program_t *p = world_prog(w, c->s.pset, c->coll, c->s.root, rank);
    ofl_inst_t *inst = &w->inst[rank];
    ofl_engine_post(inst, p, &w->nic[rank].base, &w->edges[rank], &oc);
    memset(w->from[rank], 0, sizeof(w->from[rank]));
    /* Segments as engine.h defines them: of seg_bytes when below the slot size; by
     * reference of seg_bytes whatever the slot, the whole message when 0. */
    size_t slot = w->nic[rank].base.slot_bytes, bytes = c->s.count * c->elem;
    size_t seg = c->s.seg && c->s.seg < slot ? c->s.seg : slot;
    if (p->byref) {
        seg = c->s.seg ? c->s.seg : bytes;
    }
    size_t per = seg / c->elem ? seg / c->elem : 1;
    size_t nseg = c->s.count ? (c->s.count + per - 1) / per : 1;
    stats.bad_nseg += nseg != inst->nseg || inst->rounds != (nseg + p->period - 1) / p->period;
    if (p->byref && 0 == rank) {
        stats.byref_calls++;
        stats.byref_big += 1 == nseg && bytes > slot;
        stats.byref_partial += nseg > 1 && 0 != c->s.count % per;
    }
    if (p->period > 1) {
        stats.split_calls++;
        stats.split_partial += 0 != nseg % (size_t) p->period;
        stats.split_small += nseg < (size_t) p->period;
    }
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
    snprintf(buf, len, "%s root %d count %zu%s pset %d tag %u seg %zu", names[s->kind],
             s->root, s->count, s->inplace ? " in-place" : "", s->pset, s->tag, s->seg);
    return buf;
}

/* After every call completed nothing is in flight, so each counter must equal the
 * number of items the stream sequences say crossed: a descriptor that fired twice
 * (or never) shows up here. The trigger test must agree with the count at its
 * stream: reached at the count, not one beyond (the DATA count is the stamp in the
 * slot of the last item, CREDIT may be answered from the reader's cache). Every
 * stream (ordered pair, channel) on its own. */
static void check_quiescent(world_t *w, const char *what)
{
    int bad = 0, used = 0;
    for (int a = 0; a < w->n; ++a) {
        for (int b = 0; b < w->n; ++b) {
            for (int c = 0; c < NCH; ++c) {
                ofl_nic_t *nb = &w->nic[b].base;
                ofl_nic_t *na = &w->nic[a].base;
                uint64_t data = nb->ops->counter(nb, OFL_CNT_DATA, a, c);
                uint64_t credit = na->ops->counter(na, OFL_CNT_CREDIT, b, c);
                uint64_t out = w->edges[a].out[b * NCH + c], in = w->edges[b].in[a * NCH + c];
                used += data > 0;
                if (data != out || data != in || credit != in
                    || !nb->ops->reached(nb, OFL_CNT_DATA, a, c, data)
                    || nb->ops->reached(nb, OFL_CNT_DATA, a, c, data + 1)
                    || !na->ops->reached(na, OFL_CNT_CREDIT, b, c, credit)
                    || na->ops->reached(na, OFL_CNT_CREDIT, b, c, credit + 1)) {
                    if (0 == bad++) {
                        fprintf(stderr,
                                "%s: stream %d->%d.%d: DATA %llu CREDIT %llu out %llu in %llu\n",
                                what, a, b, c, (unsigned long long) data,
                                (unsigned long long) credit, (unsigned long long) out,
                                (unsigned long long) in);
                    }
                }
            }
        }
    }
    CHECK(0 == bad, "%s: %d streams with counters off their sequences", what, bad);
    CHECK(1 == w->n || used > 0, "%s: no stream carried anything", what);
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

/* Engine rule: a queue never works on a segment an earlier queue has not
 * finished. Checks every descriptor execution of inst since from[q] (and moves
 * from[] on): for every earlier queue with a descriptor of the same segment, that
 * execution must be done. The cursors must stay in range. Returns violations. */
static long queue_rule_violations(const ofl_inst_t *inst, uint32_t *from)
{
    const ofl_program_t *p = inst->prog;
    long bad = 0;
    for (int q = 0; q < p->nqueues; ++q) {
        uint32_t qlen = (uint32_t) p->qlen[q], cur = inst->cursor[q];
        bad += cur > qlen * inst->rounds || cur < from[q];
        for (uint32_t pos = from[q]; q > 0 && pos < cur; ++pos) {
            uint32_t round = pos / qlen;
            int off = p->desc[p->qfirst[q] + (int) (pos % qlen)].seg_off;
            if (round * (uint32_t) p->period + (uint32_t) off >= inst->nseg) {
                continue;
            }
            for (int e = 0; e < q; ++e) {
                for (int i = 0; i < p->qlen[e]; ++i) {
                    if (p->desc[p->qfirst[e] + i].seg_off == off) {
                        bad += round * (uint32_t) p->qlen[e] + (uint32_t) i >= inst->cursor[e];
                    }
                }
            }
        }
        from[q] = cur;
    }
    return bad;
}

/* How many queues of inst could fire their next descriptor by its triggers (the
 * thresholds re-derived here from program.h) but may not by the queue rule. */
static int held_by_rule(const ofl_inst_t *inst)
{
    const ofl_program_t *p = inst->prog;
    ofl_nic_t *nic = inst->nic;
    int held = 0;
    for (int q = 1; q < p->nqueues; ++q) {
        uint32_t qlen = (uint32_t) p->qlen[q], cur = inst->cursor[q];
        if (0 == qlen || cur >= qlen * inst->rounds) {
            continue;
        }
        uint32_t round = cur / qlen;
        const ofl_desc_t *d = &p->desc[p->qfirst[q] + (int) (cur % qlen)];
        if (round * (uint32_t) p->period + d->seg_off >= inst->nseg) {
            continue;
        }
        int met = 1;
        for (int k = 0; k < d->n_trig && met; ++k) {
            const ofl_trig_t *t = &p->trigs[d->first_trig + k];
            int out = OFL_CNT_CREDIT == t->cnt;
            const ofl_stream_use_t *u = &(out ? p->use_out : p->use_in)[t->peer * NCH + t->chan];
            uint64_t base = out ? inst->base_out[t->peer][t->chan]
                                : inst->base_in[t->peer][t->chan];
            int64_t need = (int64_t) (base + (uint64_t) round * u->per_round) + t->rel;
            met = need <= 0
                  || (int64_t) nic->ops->counter(nic, t->cnt, p->peers[t->peer], t->chan) >= need;
        }
        int waits = 0;
        for (int e = 0; e < q && met; ++e) {
            for (int i = 0; i < p->qlen[e]; ++i) {
                waits |= p->desc[p->qfirst[e] + i].seg_off == d->seg_off
                         && round * (uint32_t) p->qlen[e] + (uint32_t) i >= inst->cursor[e];
            }
        }
        held += met && waits;
    }
    return held;
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

static int preempt_reached(ofl_nic_t *nic, int cnt, int peer, int chan, uint64_t threshold)
{
    int rv = pre.soft->reached(nic, cnt, peer, chan, threshold);
    if (NULL != pre.w && 0 == pre.hold && 0 == rng() % 3) {
        int other = (int) (rng() % (uint64_t) pre.w->n);
        if (other != nic->rank) {
            pre.hold++;
            ofl_engine_progress(&pre.w->inst[other]);
            stats.rule_broken += queue_rule_violations(&pre.w->inst[other], pre.w->from[other]);
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

/* The children (bcast tree, channel 1 down) of rank r's by-reference call that
 * have not yet read all of it, when r's call is calls[at]: a child still in an
 * earlier call has not, one in the same call has once its queue 0 (the reads)
 * is done, one in a later call has. cur: each rank's current call. */
static int unread_children(const world_t *w, int r, const int *cur, int at)
{
    const ofl_program_t *p = w->inst[r].prog;
    int unread = 0;
    for (int i = 0; i < p->npeers; ++i) {
        if (0 == p->use_out[i * NCH + 1].per_round) {
            continue;
        }
        int ch = p->peers[i];
        const ofl_inst_t *ci = &w->inst[ch];
        int read = cur[ch] > at;
        if (cur[ch] == at) {
            read = ci->prog->byref && 1 == ci->prog->qlen[0] && ci->cursor[0] >= ci->rounds;
        }
        unread += !read;
        stats.byref_fenced++;
    }
    return unread;
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
    long rule_broken = stats.rule_broken;
    int stalled = 0, remaining = n * ncalls;
    long bad_result = 0, bad_blocker = 0, bad_done = 0, early = 0;
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
            stats.rule_broken += queue_rule_violations(inst, w->from[r]);
            stats.rule_held += held_by_rule(inst);
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
                stats.rule_broken += queue_rule_violations(inst, w->from[r]);
                blocked = ofl_engine_blocker(inst, &peer, &cnt, &have, &need);
                if (!done && !blocked) {
                    bad_blocker++;
                    continue;
                }
            }
            if (!done) {
                /* Something must hold an incomplete call: a stream the program reads
                 * (DATA) or writes (CREDIT) whose counter really is short, and the
                 * value reported is that counter's. */
                int slot = blocked ? peer_slot(inst->prog, peer) : -1;
                int bcnt = cnt / NCH, bch = cnt % NCH;
                const ofl_stream_use_t *u = NULL;
                if (slot >= 0 && cnt >= 0 && cnt < 2 * NCH) {
                    u = (OFL_CNT_DATA == bcnt ? inst->prog->use_in : inst->prog->use_out)
                        + slot * NCH + bch;
                }
                ofl_nic_t *nic = &w->nic[r].base;
                if (NULL == u || 0 == u->per_round || (int64_t) have >= need
                    || have != nic->ops->counter(nic, bcnt, peer, bch)) {
                    bad_blocker++;
                }
                continue;
            }
            if (blocked) {
                bad_blocker++;
            }
            /* By reference: complete only once every child has read this rank's
             * buffer (the application may reuse it now). */
            if (inst->prog->byref) {
                early += unread_children(w, r, cur, cur[r]);
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
                    fprintf(stderr, "  rank %d call %d: waits for %s(%d.%d) %llu < %lld\n", r,
                            cur[r], cnt / NCH ? "CREDIT" : "DATA", peer, cnt % NCH,
                            (unsigned long long) have, (long long) need);
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
    CHECK(0 == early, "%s (%s): %ld by-reference completions before a child read", what,
          order_name[order], early);
    CHECK(stats.rule_broken == rule_broken, "%s (%s): a queue worked on a segment an earlier "
          "queue had not finished, %ld times", what, order_name[order],
          stats.rule_broken - rule_broken);
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
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KNOMIAL, 2, 1, 0, 0 };
    static const ofl_sched_params_t pn = { OFL_TREE_KNOMIAL, 3, OFL_TREE_KARY, 3, 1, 0, 0 };
    static const ofl_sched_params_t pf = { OFL_TREE_FLAT, 0, OFL_TREE_KARY, 4, 1, 0, 0 };
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
                                                next_tag++, 0 };
                    }
                }
                specs[k++] = (spec_t) { K_MAX_F64, 0, 0, 0, 7, next_tag++, 0 };
                specs[k++] = (spec_t) { K_MAX_F64, 0, 1, 1, 300, next_tag++, 0 };
                specs[k++] = (spec_t) { K_SUM_F32, 0, order & 1, 0, 100, next_tag++, 0 };
                specs[k++] = (spec_t) { K_BARRIER, 0, 0, 0, 0, next_tag++, 0 };
                specs[k++] = (spec_t) { K_SUM_I32, 0, 2, order & 1, 1000, next_tag++, 0 };
                specs[k++] = (spec_t) { K_SUM_F32, 0, 2, 1, 100, next_tag++, 0 };
                specs[k++] = (spec_t) { K_BARRIER, 0, 2, 0, 0, next_tag++, 0 };
                specs[k++] = (spec_t) { K_SUM_I32, 0, 3, order & 1, 1000, next_tag++, 0 };
                specs[k++] = (spec_t) { K_MAX_F64, 0, 3, order >> 1, 7, next_tag++, 0 };
                specs[k++] = (spec_t) { K_SUM_F32, 0, 3, 1, 100, next_tag++, 0 };
                specs[k++] = (spec_t) { K_BARRIER, 0, 3, 0, 0, next_tag++, 0 };
                for (int root = 0; root < n; ++root) {
                    specs[k++] = (spec_t) { K_BCAST, root, 0, 0, 0, next_tag++, 0 };
                    specs[k++] = (spec_t) { K_BCAST, root, 1, 0, 1, next_tag++, 0 };
                    specs[k++] = (spec_t) { K_BCAST, root, root & 1, 0, 777, next_tag++, 0 };
                    specs[k++] = (spec_t) { K_REDUCE_I32, root, 0, 0, 7, next_tag++, 0 };
                    specs[k++] = (spec_t) { K_REDUCE_I32, root, 1, 1, 500, next_tag++, 0 };
                    specs[k++] = (spec_t) { K_REDUCE_I32, root, root & 1, 0, 1, next_tag++, 0 };
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

/* 50 back-to-back calls of random kinds, roots, sizes and programs (two trees,
 * exchange, split) on the same streams: the thresholds of each call must start
 * where the previous call's ended. */
static void test_sim_mixed(void)
{
    static const ofl_sched_params_t pa = { OFL_TREE_KNOMIAL, 2, OFL_TREE_KARY, 2, 1, 0, 0 };
    static const ofl_sched_params_t pb = { OFL_TREE_KARY, 3, OFL_TREE_KNOMIAL, 4, 1, 0, 0 };
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
            specs[k++] = (spec_t) { K_SUM_I32, 0, 2, ip, counts[c], next_tag++, 0 };
            specs[k++] = (spec_t) { K_MAX_F64, 0, 2, ip, counts[c] % 500, next_tag++, 0 };
            specs[k++] = (spec_t) { K_SUM_F32, 0, 2, ip, counts[c] % 700, next_tag++, 0 };
        }
    }
    specs[k++] = (spec_t) { K_BARRIER, 0, 2, 0, 0, next_tag++, 0 };
    return k;
}

/* In-place calls whose segments, at segsize 4096 and up, exceed the engine's
 * 2 KiB combine buffer several times, with a partial last chunk. */
static int exchange_big_specs(spec_t *specs)
{
    int k = 0;
    specs[k++] = (spec_t) { K_SUM_I32, 0, 2, 1, 6000, next_tag++, 0 };
    specs[k++] = (spec_t) { K_MAX_F64, 0, 2, 1, 3000, next_tag++, 0 };
    specs[k++] = (spec_t) { K_SUM_F32, 0, 2, 1, 3000, next_tag++, 0 };
    specs[k++] = (spec_t) { K_SUM_F32, 0, 2, 0, 3000, next_tag++, 0 };
    return k;
}

/* The exchange allreduce and barrier in every stepping order, with and without
 * preemption, at several geometries (slots 1 and 2; 64-byte segments for many
 * segments, 4 and 8 KiB ones for the chunked in-place combine); then 50 calls
 * mixing exchange, split and tree programs of every kind on the same streams. */
static void test_sim_exchange(void)
{
    static const int sizes[] = { 1, 2, 3, 5, 8 };
    static const struct {
        int slots;
        size_t segsize;
    } geo[] = { { 1, 64 }, { 2, 64 }, { 1, 4096 }, { 2, 8192 } };
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KNOMIAL, 2, 1, 0, 0 };
    static const ofl_sched_params_t pn = { OFL_TREE_KNOMIAL, 3, OFL_TREE_KARY, 3, 1, 0, 0 };
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
            /* Exchange, split and tree programs of every kind on the same streams. */
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
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0, 0 };
    const int n = 5;
    world_t *w = world_open(n, 1, 64, &pk, &pk);
    if (NULL == w) {
        return;
    }
    uint32_t t0 = next_tag;
    next_tag += 4;
    spec_t warm[4] = {
        { K_SUM_I32, 0, 2, 0, 100, t0 + 0, 0 },
        { K_BARRIER, 0, 0, 0, 0, t0 + 1, 0 },
        { K_BCAST, 3, 0, 0, 200, t0 + 2, 0 },
        { K_BARRIER, 0, 2, 0, 0, t0 + 3, 0 },
    };
    run_specs(w, warm, 4, ORD_RANDOM, "exchange barrier warm-up");
    for (int missing = 0; missing < n; ++missing) {
        for (int kind = 0; kind < 3; ++kind) {
            /* A barrier, an allreduce of one segment, one of seven. */
            size_t count = 1 == kind ? 16 : 100;
            spec_t s = { kind ? K_SUM_I32 : K_BARRIER, 0, 2, missing & 1, count, next_tag++, 0 };
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
                         && (2 == kind ? OFL_CNT_CREDIT * NCH + 0 == cnt
                                       : OFL_CNT_DATA * NCH + 0 == cnt && peer == missing);
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
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0, 0 };
    const int n = 7;
    world_t *w = world_open(n, 1, 64, &pk, &pk);
    if (NULL == w) {
        return;
    }
    /* Warm up the edges so that stale counters would satisfy absolute thresholds. */
    uint32_t t0 = next_tag;
    next_tag += 4;
    spec_t warm[4] = {
        { K_SUM_I32, 0, 0, 0, 100, t0 + 0, 0 },
        { K_BCAST, 3, 0, 0, 200, t0 + 1, 0 },
        { K_REDUCE_I32, 5, 0, 0, 100, t0 + 2, 0 },
        { K_SUM_I32, 0, 0, 1, 100, t0 + 3, 0 },
    };
    run_specs(w, warm, 4, ORD_RANDOM, "thresholds warm-up");

    /* 1. Only the leaves posted. */
    spec_t s = { K_SUM_I32, 0, 0, 0, 100, next_tag++, 0 };
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
    CHECK(1 == ofl_engine_blocker(&w->inst[1], &peer, &cnt, &have, &need) && 0 == peer
              && OFL_CNT_CREDIT * NCH + 0 == cnt,
          "rank 1 blames %d/%d", peer, cnt);

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
              && OFL_CNT_DATA * NCH + 0 == cnt && (int64_t) have < need,
          "root blames %d/%d", peer, cnt);
    CHECK(1 == ofl_engine_blocker(&w->inst[2], &peer, &cnt, &have, &need) && 6 == peer
              && OFL_CNT_DATA * NCH + 0 == cnt && (int64_t) have < need,
          "rank 2 blames %d/%d", peer, cnt);
    /* Left subtree (1, 3, 4) could go as far as the slots allow: one item up, the
     * second waits for the root to free the slot (CREDIT of the up channel). */
    CHECK(1 == ofl_engine_blocker(&w->inst[1], &peer, &cnt, &have, &need) && 0 == peer
              && OFL_CNT_CREDIT * NCH + 0 == cnt && (int64_t) have < need,
          "rank 1 blames %d/%d", peer, cnt);
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
    static const ofl_sched_params_t pk = { OFL_TREE_KNOMIAL, 3, OFL_TREE_KARY, 2, 1, 0, 0 };
    const int n = 11;
    world_t *w = world_open(n, 2, 64, &pk, &pk);
    if (NULL == w) {
        return;
    }
    spec_t s = { K_SUM_F32, 0, 0, 0, 100, next_tag++, 0 };
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

/* ---- split programs ----------------------------------------------------------- */

/* Segments of a call of spec s on world w, as engine.h defines them. */
static size_t spec_nseg(const world_t *w, const spec_t *s)
{
    size_t elem = K_MAX_F64 == s->kind ? 8 : K_BCAST == s->kind ? 1 : 4;
    size_t slot = w->nic[0].base.slot_bytes;
    size_t seg = s->seg && s->seg < slot ? s->seg : slot;
    size_t per = seg / elem ? seg / elem : 1;
    return s->count ? (s->count + per - 1) / per : 1;
}

/* A count of `nseg` segments of `per` elements whose last segment is partial
 * (1 .. per elements, varied by tag). */
static size_t count_of(size_t nseg, size_t per, uint32_t tag)
{
    return (nseg - 1) * per + 1 + tag % per;
}

/* Split allreduces (pset 3) on an n-rank world of `slot`-byte slots, cut into
 * `seg`-byte segments (0: the slot's): int32 sums that wrap, double max and float
 * sums whose bits depend on the order, of counts 0, 1, 7 and of n - 1, n, n + 1,
 * 2n + n/2 + 1 and 3n - 1 segments (less than a round, one, one and a partial
 * round, several and a partial one), the last segment partial; out-of-place and
 * in-place (at every rank) in turn. Returns the number of specs. */
static int split_specs(spec_t *specs, int n, size_t slot, size_t seg, int inplace0)
{
    static const kind_t kinds[] = { K_SUM_I32, K_MAX_F64, K_SUM_F32 };
    static const size_t elems[] = { 4, 8, 4 };
    size_t segb = seg && seg < slot ? seg : slot;
    size_t nsegs[] = { (size_t) n - 1, (size_t) n, (size_t) n + 1,
                       2 * (size_t) n + (size_t) n / 2 + 1, 3 * (size_t) n - 1 };
    int k = 0;
    for (int ki = 0; ki < 3; ++ki) {
        size_t per = segb / elems[ki] ? segb / elems[ki] : 1;
        size_t counts[8] = { 0, 1, 7 };
        int nc = 3;
        for (int i = 0; i < 5; ++i) {
            if (nsegs[i] >= 1) {
                counts[nc++] = count_of(nsegs[i], per, next_tag);
            }
        }
        for (int c = 0; c < nc; ++c) {
            specs[k] = (spec_t) { kinds[ki], 0, 3, (k + inplace0) & 1, counts[c], next_tag++,
                                  seg };
            k++;
        }
    }
    return k;
}

/* In-place split allreduces whose segments (the slot's, 4 or 8 KiB) exceed the
 * engine's 2 KiB combine buffer: n + n/2 + 1 segments, so every rank owns one and
 * the last round is partial, the last segment 3/4 full; a float sum also
 * out-of-place for the same bits. */
static int split_big_specs(spec_t *specs, int n, size_t slot)
{
    size_t nseg = (size_t) n + (size_t) n / 2 + 1;
    size_t n4 = slot / 4, n8 = slot / 8;
    int k = 0;
    specs[k++] = (spec_t) { K_SUM_I32, 0, 3, 1, (nseg - 1) * n4 + 3 * n4 / 4, next_tag++, 0 };
    specs[k++] = (spec_t) { K_MAX_F64, 0, 3, 1, (nseg - 1) * n8 + 3 * n8 / 4, next_tag++, 0 };
    specs[k++] = (spec_t) { K_SUM_F32, 0, 3, 1, (nseg - 1) * n4 + 3 * n4 / 4, next_tag++, 0 };
    specs[k++] = (spec_t) { K_SUM_F32, 0, 3, 0, (nseg - 1) * n4 + 3 * n4 / 4, next_tag++, 0 };
    return k;
}

/* Run split-only specs and check what each stream carried against segment
 * ownership, counted here: from a to owner b on channel 0 one item per segment b
 * owns (segment s belongs to rank s mod n), from owner a to b on channel 1 one
 * per segment a owns; nothing between a rank and itself. */
static void run_split_specs(world_t *w, const spec_t *specs, int k, int order, const char *what)
{
    int n = w->n;
    uint64_t *before = malloc(sizeof(uint64_t) * (size_t) (n * n * NCH * 2));
    uint64_t *owned = calloc((size_t) n, sizeof(uint64_t));
    for (int a = 0; a < n; ++a) {
        memcpy(before + (size_t) (2 * a * n * NCH), w->edges[a].out,
               sizeof(uint64_t) * (size_t) (n * NCH));
        memcpy(before + (size_t) ((2 * a + 1) * n * NCH), w->edges[a].in,
               sizeof(uint64_t) * (size_t) (n * NCH));
    }
    for (int i = 0; i < k; ++i) {
        size_t nseg = spec_nseg(w, &specs[i]);
        for (size_t s = 0; s < nseg; ++s) {
            owned[s % (size_t) n]++;
        }
    }
    run_specs(w, specs, k, order, what);
    int bad = 0;
    for (int a = 0; a < n; ++a) {
        for (int b = 0; b < n; ++b) {
            for (int c = 0; c < NCH; ++c) {
                uint64_t want = a == b ? 0 : owned[0 == c ? b : a];
                uint64_t out = w->edges[a].out[b * NCH + c]
                               - before[(size_t) (2 * a * n * NCH + b * NCH + c)];
                uint64_t in = w->edges[b].in[a * NCH + c]
                              - before[(size_t) ((2 * b + 1) * n * NCH + a * NCH + c)];
                bad += out != want || in != want;
            }
        }
    }
    CHECK(0 == bad, "%s (%s): %d streams moved other than segment ownership says", what,
          order_name[order], bad);
    free(before);
    free(owned);
}

/* Split allreduces in every stepping order, with and without preemption: sizes 1
 * (a copy), 2, 3, 5, 8; slots 1, 2, 4 with 64-byte segments (many rounds, partial
 * last rounds), once cut to 48-byte segments by the call; 4 and 8 KiB slots cut
 * into 100-byte segments by the call, or not cut (multi-chunk in-place combines);
 * one big in-place call at a time with the counters checked after each; then 50
 * calls mixing split, exchange and tree programs of every kind on the same
 * streams, the calls asking for segments of the slot's size, less or more. */
static void test_sim_split(void)
{
    static const int sizes[] = { 1, 2, 3, 5, 8 };
    static const struct {
        int slots;
        size_t segsize;
    } geo[] = { { 1, 64 }, { 2, 64 }, { 4, 64 }, { 1, 4096 }, { 2, 8192 } };
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KNOMIAL, 2, 1, 0, 0 };
    static const ofl_sched_params_t pn = { OFL_TREE_KNOMIAL, 3, OFL_TREE_KARY, 3, 1, 0, 0 };
    static const size_t counts[] = { 0, 1, 7, 33, 100, 1000, 3000 };
    spec_t specs[80];
    long fired = pre.fired, calls = stats.split_calls, partial = stats.split_partial;
    long small = stats.split_small;
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); ++si) {
        for (size_t gi = 0; gi < sizeof(geo) / sizeof(geo[0]); ++gi) {
            int n = sizes[si];
            size_t slot = geo[gi].segsize;
            world_t *w = world_open(n, geo[gi].slots, slot, &pk, &pn);
            if (NULL == w) {
                continue;
            }
            char what[112];
            /* Segment sizes a call may ask for: the slot's, less, more. */
            const size_t segs[] = { 0, 0, 64, 100, 3 * slot / 4, 2 * slot };
            for (int order = 0; order < ORD_COUNT; ++order) {
                int preempt = (order + (int) gi) & 1;
                /* Big slots: cut small by the call in two orders, whole in two;
                 * small ones: once cut to 3/4 of the slot. */
                size_t seg = slot > 2048 ? (order < 2 ? 100 : 0) : (3 == order ? 48 : 0);
                int k = split_specs(specs, n, slot, seg, order);
                if (slot > 2048 && order >= 2) {
                    k += split_big_specs(specs + k, n, slot);
                }
                snprintf(what, sizeof(what), "split n %d slots %d slot %zu seg %zu%s", n,
                         geo[gi].slots, slot, seg, preempt ? " preempt" : "");
                world_preempt(w, preempt);
                run_split_specs(w, specs, k, order, what);
            }
            if (slot > 2048) {
                CHECK(w->nic[0].base.slot_bytes >= 2 * 2048, "segments of one chunk only");
                int k = split_big_specs(specs, n, slot);
                for (int i = 0; i < k; ++i) {
                    snprintf(what, sizeof(what), "split big n %d slot %zu call %d", n, slot, i);
                    world_preempt(w, i & 1);
                    run_split_specs(w, &specs[i], 1, ORD_RANDOM, what);
                }
            }
            /* Split, exchange and tree programs of every kind on the same streams;
             * half of the allreduces split. */
            for (int i = 0; i < 50; ++i) {
                kind_t kind = (kind_t) (rng() % K_NKINDS);
                specs[i] = (spec_t) {
                    .kind = kind,
                    .root = (int) (rng() % (uint64_t) n),
                    .pset = rng() & 1 ? 3 : (int) (rng() % 3),
                    .inplace = (int) (rng() & 1),
                    .count = counts[rng() % 7],
                    .tag = next_tag++,
                    .seg = segs[rng() % 6],
                };
            }
            snprintf(what, sizeof(what), "split mixed50 n %d slots %d slot %zu", n,
                     geo[gi].slots, slot);
            world_preempt(w, (int) (gi & 1));
            run_specs(w, specs, 50, (int) (gi % ORD_COUNT), what);
            world_close(w);
        }
    }
    CHECK(pre.fired - fired > 1000, "only %ld preemptions", pre.fired - fired);
    /* Not vacuous: many split calls, many with a partial last round, some with
     * fewer segments than ranks. */
    CHECK(stats.split_calls - calls > 5000 && stats.split_partial - partial > 2000
              && stats.split_small - small > 500,
          "split calls %ld, partial last round %ld, less than a round %ld",
          stats.split_calls - calls, stats.split_partial - partial, stats.split_small - small);
}

/* The same float sums (split, 5 and 8 ranks, partial last rounds, in-place and
 * not) stepped in every order, with and without preemption: every rank of every
 * run holds the same bits, rank order's. Not vacuous: an owner combining its own
 * contribution first, or in reverse rank order, would give other bits. */
static void test_sim_split_float(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0, 0 };
    for (int n = 5; n <= 8; n += 3) {
        world_t *w = world_open(n, 2, 64, &pk, &pk);
        if (NULL == w) {
            continue;
        }
        uint32_t tag = next_tag++;
        size_t count = count_of(3 * (size_t) n + 2, 16, tag);
        call_t calls[2 * ORD_COUNT];
        int ncalls = 0;
        for (int order = 0; order < ORD_COUNT; ++order) {
            for (int preempt = 0; preempt < 2; ++preempt) {
                spec_t s = { K_SUM_F32, 0, 3, (order + preempt) & 1, count, tag, 0 };
                call_t *c = &calls[ncalls++];
                call_init(w, c, &s);
                world_preempt(w, preempt);
                sim_run(w, c, 1, order, 0, "split float");
            }
        }
        world_preempt(w, 0);
        int same = 0;
        for (int i = 0; i < ncalls; ++i) {
            for (int r = 0; r < n; ++r) {
                same += 0 == memcmp(calls[i].recv[r], calls[0].recv[0], count * 4);
            }
        }
        CHECK(same == ncalls * n, "split float n %d: %d of %d results the same bits", n, same,
              ncalls * n);
        CHECK(0 == memcmp(calls[0].recv[0], calls[0].expect, count * 4),
              "split float n %d: not rank order's", n);
        int own_first = 0, reverse = 0;
        for (size_t i = 0; i < count; ++i) {
            int owner = (int) ((i / 16) % (size_t) n);
            float own = in_f32(owner, tag, i), rev = in_f32(n - 1, tag, i), got;
            for (int r = 0; r < n; ++r) {
                own = r == owner ? own : own + in_f32(r, tag, i);
            }
            for (int r = n - 2; r >= 0; --r) {
                rev = rev + in_f32(r, tag, i);
            }
            memcpy(&got, calls[0].recv[0] + 4 * i, 4);
            own_first += 0 != memcmp(&own, &got, 4);
            reverse += 0 != memcmp(&rev, &got, 4);
        }
        CHECK(own_first > 5 && reverse > 20, "split float n %d: order-sensitive elements: "
              "own first %d, reverse %d", n, own_first, reverse);
        for (int i = 0; i < ncalls; ++i) {
            call_free(w, &calls[i]);
        }
        world_close(w);
    }
}

/* Split calls with a rank missing or stalled (3 ranks, one slot, 16 int32 per
 * segment), after warm-up calls of every program on the same streams:
 *   - count 0 is a barrier: with any rank missing nobody completes; owner 0 waits
 *     for the missing contribution (DATA, channel 0), the others for owner 0's
 *     result (DATA, channel 1);
 *   - 3 segments (one round), rank 2 stepped once (its puts) and then stalled:
 *     ranks 0 and 1 finish segments 0 and 1 and wait for owner 2's result (DATA,
 *     channel 1); segment 2 of their results stays unwritten;
 *   - 6 segments (two rounds), in-place, rank 2 stalled likewise: ranks 0 and 1
 *     cannot put their round-1 part of segment 5 to rank 2, whose slot still holds
 *     round 0's (CREDIT, channel 0); segments 0 and 1 hold results, the rest
 *     still the inputs.
 * Then the stalled rank runs and every call completes. */
static void test_sim_split_blocked(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0, 0 };
    const int n = 3;
    world_t *w = world_open(n, 1, 64, &pk, &pk);
    if (NULL == w) {
        return;
    }
    uint32_t t0 = next_tag;
    next_tag += 5;
    spec_t warm[5] = {
        { K_SUM_I32, 0, 3, 0, 100, t0 + 0, 0 },
        { K_SUM_I32, 0, 0, 1, 50, t0 + 1, 0 },
        { K_BCAST, 2, 0, 0, 200, t0 + 2, 0 },
        { K_SUM_F32, 0, 2, 0, 40, t0 + 3, 0 },
        { K_MAX_F64, 0, 3, 1, 33, t0 + 4, 0 },
    };
    run_specs(w, warm, 5, ORD_RANDOM, "split blocked warm-up");
    int peer = -1, cnt = -1;
    uint64_t have = 0;
    int64_t need = 0;
    for (int missing = 0; missing < n; ++missing) {
        spec_t s = { K_SUM_I32, 0, 3, 0, 0, next_tag++, 0 };
        call_t c;
        call_init(w, &c, &s);
        unsigned mask = 0;
        for (int r = 0; r < n; ++r) {
            if (r != missing) {
                call_post(w, &c, r);
                mask |= 1u << r;
            }
        }
        int done = 0, blame = 0;
        for (int round = 0; round < 50; ++round) {
            for (int r = 0; r < n; ++r) {
                done += r != missing && ofl_engine_progress(&w->inst[r]);
            }
        }
        for (int r = 0; r < n; ++r) {
            int b = r != missing
                    && 1 == ofl_engine_blocker(&w->inst[r], &peer, &cnt, &have, &need)
                    && (int64_t) have < need;
            if (0 == r) {
                blame += b && peer == missing && OFL_CNT_DATA * NCH + 0 == cnt;
            } else {
                blame += b && peer == 0 && OFL_CNT_DATA * NCH + 1 == cnt;
            }
        }
        CHECK(0 == done, "empty split completed %d times without rank %d", done, missing);
        CHECK(n - 1 == blame, "empty split without rank %d: %d ranks blame right", missing,
              blame);
        sim_run(w, &c, 1, ORD_RANDOM, mask, "empty split, last rank");
        call_free(w, &c);
    }

    for (int rounds = 1; rounds <= 2; ++rounds) {
        size_t nseg = 3 * (size_t) rounds;
        spec_t s = { K_SUM_I32, 0, 3, 2 == rounds, count_of(nseg, 16, next_tag), next_tag, 0 };
        next_tag++;
        call_t c;
        call_init(w, &c, &s);
        for (int r = 0; r < n; ++r) {
            call_post(w, &c, r);
        }
        CHECK(0 == ofl_engine_progress(&w->inst[2]), "rank 2 done alone");
        int done = 0;
        for (int round = 0; round < 50; ++round) {
            done += ofl_engine_progress(&w->inst[0]);
            done += ofl_engine_progress(&w->inst[1]);
        }
        CHECK(0 == done, "split of %zu segments completed without rank 2", nseg);
        int blame = 0, partial = 0;
        int want_cnt = 1 == rounds ? OFL_CNT_DATA * NCH + 1 : OFL_CNT_CREDIT * NCH + 0;
        uint32_t orig[6 * 16];
        for (int r = 0; r < 2; ++r) {
            blame += 1 == ofl_engine_blocker(&w->inst[r], &peer, &cnt, &have, &need)
                     && 2 == peer && want_cnt == cnt && (int64_t) have < need;
            /* Results in segments 0 and 1; the rest untouched (the input, in
             * place; the sentinel otherwise). */
            fill_input(K_SUM_I32, r, s.tag, s.count, (uint8_t *) orig);
            size_t bytes = s.count * 4;
            partial += 0 == memcmp(c.recv[r], c.expect, 2 * 64)
                       && (s.inplace ? 0 == memcmp(c.recv[r] + 128, (uint8_t *) orig + 128,
                                                   bytes - 128)
                                     : all_sentinel(c.recv[r] + 128, bytes - 128));
        }
        CHECK(2 == blame, "split of %zu segments: %d ranks blame rank 2 (%d/%d)", nseg, blame,
              peer, cnt);
        CHECK(2 == partial, "split of %zu segments: %d ranks with exactly segments 0, 1 done",
              nseg, partial);
        sim_run(w, &c, 1, ORD_FORWARD, 0x7u, "split, stalled rank");
        call_free(w, &c);
    }
    world_close(w);
}

/* ---- by-reference bcast ---------------------------------------------------------- */

/* By-reference bcasts (psets 4 and 5, alternating with root and order) from every
 * root of an n-rank world of `slot`-byte slots: counts 0, 1, 7; 7 bytes in 3-byte
 * segments; one segment of 4 slots and a bit (seg_bytes 0: the message), or of 2
 * slots under a seg_bytes of 3 slots; several segments of a slot, of 100 bytes and
 * of 3/4 of a slot, each with a partial last one. Returns the number of specs. */
static int byref_specs(spec_t *specs, int n, size_t slot, int order)
{
    const struct {
        size_t count, seg;
    } cs[] = { { 0, 0 },
               { 1, 0 },
               { 7, 0 },
               { 7, 3 },
               { 4 * slot + 21, 0 },
               { 2 * slot, 3 * slot },
               { 3 * slot + 13, slot },
               { 450, 100 },
               { 5 * slot + 1, 3 * slot / 4 } };
    int k = 0;
    for (int root = 0; root < n; ++root) {
        for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); ++i) {
            specs[k++] = (spec_t) { K_BCAST, root, PS_BYREF + ((root + order + (int) i) & 1), 0,
                                    cs[i].count, next_tag++, cs[i].seg };
        }
    }
    return k;
}

/* By-reference bcasts in every stepping order, with and without preemption, at
 * sizes 1, 2, 3, 5, 8 and one or two 64-byte slots per stream; every result, the
 * root's untouched buffer, the byte past every buffer and the fence (a call
 * completes only after every child has read) checked by sim_run; then 50 calls
 * mixing by-reference bcasts with every other kind and program (tree, exchange,
 * split, by-value bcast) on the same streams, segments of any size. */
static void test_sim_byref(void)
{
    static const int sizes[] = { 1, 2, 3, 5, 8 };
    static const int slots[] = { 1, 2 };
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KNOMIAL, 2, 1, 0, 0 };
    static const ofl_sched_params_t pn = { OFL_TREE_KNOMIAL, 3, OFL_TREE_KARY, 3, 1, 0, 0 };
    static const size_t counts[] = { 0, 1, 7, 33, 100, 1000, 3000 };
    const size_t slot = 64;
    spec_t specs[9 * SIM_MAX];
    long fired = pre.fired, calls = stats.byref_calls, big = stats.byref_big;
    long partial = stats.byref_partial, fenced = stats.byref_fenced;
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); ++si) {
        for (size_t gi = 0; gi < sizeof(slots) / sizeof(slots[0]); ++gi) {
            int n = sizes[si];
            world_t *w = world_open(n, slots[gi], slot, &pk, &pn);
            if (NULL == w) {
                continue;
            }
            CHECK(slot == w->nic[0].base.slot_bytes, "slot %llu",
                  (unsigned long long) w->nic[0].base.slot_bytes);
            char what[96];
            for (int order = 0; order < ORD_COUNT; ++order) {
                int preempt = (order + (int) gi) & 1;
                int k = byref_specs(specs, n, slot, order);
                snprintf(what, sizeof(what), "byref n %d slots %d%s", n, slots[gi],
                         preempt ? " preempt" : "");
                world_preempt(w, preempt);
                run_specs(w, specs, k, order, what);
            }
            const size_t segs[] = { 0, 0, 48, 100, 3 * slot / 4, 2 * slot };
            for (int i = 0; i < 50; ++i) {
                kind_t kind = (kind_t) (rng() % K_NKINDS);
                int ps = (int) (rng() % NPSETS);
                if (K_BCAST == kind && (rng() & 1)) {
                    ps = PS_BYREF + (int) (rng() & 1);
                }
                specs[i] = (spec_t) {
                    .kind = kind,
                    .root = (int) (rng() % (uint64_t) n),
                    .pset = ps,
                    .inplace = (int) (rng() & 1),
                    .count = counts[rng() % 7],
                    .tag = next_tag++,
                    .seg = segs[rng() % 6],
                };
            }
            snprintf(what, sizeof(what), "byref mixed50 n %d slots %d", n, slots[gi]);
            world_preempt(w, (int) ((si + gi) & 1));
            run_specs(w, specs, 50, (int) ((si + gi) % ORD_COUNT), what);
            world_close(w);
        }
    }
    CHECK(pre.fired - fired > 1000, "only %ld preemptions", pre.fired - fired);
    /* Not vacuous: many calls, many of one segment larger than a slot (which a
     * by-value item could not carry), many with a partial last segment; the
     * fence was checked at many completions. */
    CHECK(stats.byref_calls - calls > 1000 && stats.byref_big - big > 200
              && stats.byref_partial - partial > 500 && stats.byref_fenced - fenced > 1000,
          "byref calls %ld, one big segment %ld, partial last segment %ld, fences checked %ld",
          stats.byref_calls - calls, stats.byref_big - big, stats.byref_partial - partial,
          stats.byref_fenced - fenced);
}

/* The ranks of a by-reference bcast from root 0 on 5 ranks (binary tree: 0 -> 1 2,
 * 1 -> 3 4), posted first everywhere but the root, stepped by hand:
 *   one segment (seg_bytes 0, 300 bytes > the 64-byte slot): the root, progressed
 *   alone, publishes and stays incomplete waiting for a child's read (CREDIT,
 *   channel 1), nothing written anywhere; rank 1 reads and stays incomplete (3 and
 *   4 have not read it); the root still incomplete (2 has not read); 3 and 4 read
 *   and complete, then 1 completes; the root still incomplete; 2 reads and
 *   completes; only now the root completes, its buffer unchanged;
 *   five segments (64-byte seg_bytes, the last 44 bytes), one slot per stream: the
 *   root, progressed alone, publishes segment 0 only; the others, progressed
 *   without it, get exactly segment 0 and stay incomplete; then all finish. */
static void test_sim_byref_fence(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0, 0 };
    const int n = 5;
    world_t *w = world_open(n, 1, 64, &pk, &pk);
    if (NULL == w) {
        return;
    }
    ofl_tree_node_t t0, t1;
    ofl_tree_node(OFL_TREE_KARY, 2, n, 0, 0, &t0);
    ofl_tree_node(OFL_TREE_KARY, 2, n, 0, 1, &t1);
    CHECK(2 == t0.nchildren && 1 == t0.children[0] && 2 == t0.children[1]
              && 2 == t1.nchildren && 3 == t1.children[0] && 4 == t1.children[1],
          "not the binary tree assumed");
    uint32_t tg = next_tag;
    next_tag += 4;
    spec_t warm[4] = {
        { K_SUM_I32, 0, 0, 0, 100, tg + 0, 0 },
        { K_BCAST, 3, PS_BYREF, 0, 200, tg + 1, 0 },
        { K_BCAST, 0, 0, 0, 100, tg + 2, 0 },
        { K_SUM_I32, 0, 3, 1, 100, tg + 3, 0 },
    };
    run_specs(w, warm, 4, ORD_RANDOM, "byref fence warm-up");
    int peer = -1, cnt = -1;
    uint64_t have = 0;
    int64_t need = 0;

    spec_t s = { K_BCAST, 0, PS_BYREF, 0, 300, next_tag++, 0 };
    call_t c;
    call_init(w, &c, &s);
    for (int r = 1; r < n; ++r) {
        call_post(w, &c, r);
    }
    call_post(w, &c, 0);
    CHECK(1 == w->inst[0].nseg && 300 > w->nic[0].base.slot_bytes, "one segment: %u",
          w->inst[0].nseg);
    int done = 0;
    for (int i = 0; i < 20; ++i) {
        done += ofl_engine_progress(&w->inst[0]);
    }
    int clean = 0;
    for (int r = 1; r < n; ++r) {
        clean += all_sentinel(c.recv[r], 301);
    }
    CHECK(0 == done && n - 1 == clean, "root alone: done %d, %d buffers clean", done, clean);
    CHECK(1 == ofl_engine_blocker(&w->inst[0], &peer, &cnt, &have, &need)
              && (1 == peer || 2 == peer) && OFL_CNT_CREDIT * NCH + 1 == cnt
              && (int64_t) have < need, "root alone blames %d/%d", peer, cnt);
    /* 1 reads; its own children have not read it. */
    for (int i = 0; i < 20; ++i) {
        done += ofl_engine_progress(&w->inst[1]);
    }
    CHECK(0 == done && 0 == memcmp(c.recv[1], c.expect, 300) && SENTINEL == c.recv[1][300],
          "rank 1 done %d or did not read", done);
    CHECK(1 == ofl_engine_blocker(&w->inst[1], &peer, &cnt, &have, &need)
              && (3 == peer || 4 == peer) && OFL_CNT_CREDIT * NCH + 1 == cnt,
          "rank 1 blames %d/%d", peer, cnt);
    CHECK(0 == ofl_engine_progress(&w->inst[0]), "root complete with child 2 unread");
    CHECK(1 == ofl_engine_blocker(&w->inst[0], &peer, &cnt, &have, &need) && 2 == peer
              && OFL_CNT_CREDIT * NCH + 1 == cnt, "root then blames %d/%d", peer, cnt);
    CHECK(1 == ofl_engine_progress(&w->inst[3]) && 0 == ofl_engine_progress(&w->inst[1])
              && 1 == ofl_engine_progress(&w->inst[4]) && 1 == ofl_engine_progress(&w->inst[1]),
          "rank 1 completes exactly when 3 and 4 have read");
    CHECK(0 == ofl_engine_progress(&w->inst[0]), "root complete with child 2 unread");
    CHECK(1 == ofl_engine_progress(&w->inst[2]), "leaf 2 did not complete");
    CHECK(0 == memcmp(c.recv[0], c.expect, 300), "root buffer changed");
    CHECK(1 == ofl_engine_progress(&w->inst[0]), "root incomplete after every read");
    sim_run(w, &c, 1, ORD_FORWARD, 0x1fu, "byref fence, one segment");
    call_free(w, &c);

    s = (spec_t) { K_BCAST, 0, PS_BYREF, 0, 300, next_tag++, 64 };
    call_init(w, &c, &s);
    for (int r = 1; r < n; ++r) {
        call_post(w, &c, r);
    }
    call_post(w, &c, 0);
    CHECK(5 == w->inst[0].nseg, "five segments: %u", w->inst[0].nseg);
    done = 0;
    for (int i = 0; i < 20; ++i) {
        done += ofl_engine_progress(&w->inst[0]);
    }
    for (int i = 0; i < 20; ++i) {
        for (int r = 1; r < n; ++r) {
            done += ofl_engine_progress(&w->inst[r]);
        }
    }
    int seg0 = 0;
    for (int r = 1; r < n; ++r) {
        seg0 += 0 == memcmp(c.recv[r], c.expect, 64) && all_sentinel(c.recv[r] + 64, 237);
    }
    CHECK(0 == done && n - 1 == seg0, "without the root: done %d, %d with segment 0 only",
          done, seg0);
    CHECK(1 == ofl_engine_blocker(&w->inst[3], &peer, &cnt, &have, &need) && 1 == peer
              && OFL_CNT_DATA * NCH + 1 == cnt, "leaf 3 blames %d/%d", peer, cnt);
    CHECK(0 == memcmp(c.recv[0], c.expect, 300), "root buffer changed");
    sim_run(w, &c, 1, ORD_REVERSE, 0x1fu, "byref fence, five segments");
    call_free(w, &c);
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
    /* Counters start at zero and a bump at one mapping is seen through the other,
     * on its own stream (peer, channel) only. */
    ofl_nic_t *na = &a.base, *nb = &b.base;
    int fresh = 0;
    for (int c = 0; c < NCH; ++c) {
        fresh += 0 == nb->ops->counter(nb, OFL_CNT_DATA, 0, c)
                 && 0 == nb->ops->counter(nb, OFL_CNT_CREDIT, 0, c)
                 && 0 == na->ops->counter(na, OFL_CNT_DATA, 1, c)
                 && 0 == na->ops->counter(na, OFL_CNT_CREDIT, 1, c);
    }
    CHECK(NCH == fresh, "fresh counters");
    na->ops->bump(na, OFL_CNT_DATA, 1, 0, 0, 0);
    na->ops->bump(na, OFL_CNT_DATA, 1, 0, 1, 0);
    CHECK(2 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 0)
              && 0 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 1)
              && 0 == nb->ops->counter(nb, OFL_CNT_CREDIT, 0, 0)
              && 0 == na->ops->counter(na, OFL_CNT_DATA, 1, 0)
              && 0 == na->ops->counter(na, OFL_CNT_DATA, 1, 1), "bump lands at the peer only");
    na->ops->bump(na, OFL_CNT_DATA, 1, 1, 0, 0);
    CHECK(1 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 1)
              && 2 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 0), "channels not independent");
    /* Mailboxes: my outbox to b is b's inbox from me; slots wrap with the item;
     * the two channels of a pair never share a slot. */
    uint8_t *o = na->ops->outbox(na, 1, 0, 5);
    o[0] = 42;
    CHECK(o == (uint8_t *) na->ops->outbox(na, 1, 0, 7), "slot of item 5 != item 7");
    CHECK(42 == ((uint8_t *) nb->ops->inbox(nb, 0, 0, 5))[0], "inbox does not see outbox");
    CHECK(na->ops->outbox(na, 1, 0, 4) != na->ops->outbox(na, 1, 0, 5), "two slots alias");
    CHECK((uint8_t *) na->ops->outbox(na, 1, 1, 5) - a.mem
                  == (uint8_t *) nb->ops->inbox(nb, 0, 1, 7) - b.mem
              && na->ops->outbox(na, 1, 1, 5) != na->ops->outbox(na, 1, 0, 5)
              && na->ops->outbox(na, 1, 1, 4) != na->ops->outbox(na, 1, 0, 5),
          "channel 1 slots");
    /* The DATA count sits in front of each slot's payload: payloads written to the
     * last byte, on every stream and in every slot, leave every count alone, and
     * each payload keeps its own bytes. */
    for (int c = 0; c < NCH; ++c) {
        for (int s = 0; s < 2; ++s) {
            memset(na->ops->outbox(na, 1, c, (uint64_t) s), 0xf0 + 2 * c + s, na->slot_bytes);
            memset(nb->ops->outbox(nb, 0, c, (uint64_t) s), 0xe0 + 2 * c + s, nb->slot_bytes);
        }
    }
    int kept = 0;
    for (int c = 0; c < NCH; ++c) {
        kept += 0 == na->ops->counter(na, OFL_CNT_DATA, 1, c)
                && 0 == na->ops->counter(na, OFL_CNT_CREDIT, 1, c)
                && 0 == nb->ops->counter(nb, OFL_CNT_CREDIT, 0, c);
        for (int s = 0; s < 2; ++s) {
            uint8_t *ib = nb->ops->inbox(nb, 0, c, (uint64_t) s);
            uint8_t *ia = na->ops->inbox(na, 1, c, (uint64_t) s);
            kept += 0 == ((uintptr_t) ib & 15) && 0 == ((uintptr_t) ia & 15)
                    && 0xf0 + 2 * c + s == ib[0] && 0xf0 + 2 * c + s == ib[nb->slot_bytes - 1]
                    && 0xe0 + 2 * c + s == ia[0] && 0xe0 + 2 * c + s == ia[na->slot_bytes - 1];
        }
    }
    CHECK(3 * NCH == kept && 2 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 0)
              && 1 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 1),
          "payload clobbered a count or another payload (%d)", kept);
    /* reached() is the count test, exact at the count, and follows slot reuse. */
    CHECK(nb->ops->reached(nb, OFL_CNT_DATA, 0, 0, 0)
              && nb->ops->reached(nb, OFL_CNT_DATA, 0, 0, 1)
              && nb->ops->reached(nb, OFL_CNT_DATA, 0, 0, 2)
              && !nb->ops->reached(nb, OFL_CNT_DATA, 0, 0, 3)
              && nb->ops->reached(nb, OFL_CNT_DATA, 0, 1, 1)
              && !nb->ops->reached(nb, OFL_CNT_DATA, 0, 1, 2)
              && !na->ops->reached(na, OFL_CNT_DATA, 1, 0, 1), "reached(DATA) off its count");
    na->ops->bump(na, OFL_CNT_DATA, 1, 0, 2, 0);   /* item 2 reuses the slot of item 0 */
    CHECK(3 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 0)
              && nb->ops->reached(nb, OFL_CNT_DATA, 0, 0, 3)
              && !nb->ops->reached(nb, OFL_CNT_DATA, 0, 0, 4)
              && 1 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 1)
              && 0xf0 == ((uint8_t *) nb->ops->inbox(nb, 0, 0, 2))[5], "slot reuse");
    /* CREDIT: its own line per channel; a cached value must neither hide a later
     * bump nor answer for the other channel. */
    nb->ops->bump(nb, OFL_CNT_CREDIT, 0, 0, 0, 0);
    CHECK(1 == na->ops->counter(na, OFL_CNT_CREDIT, 1, 0)
              && na->ops->reached(na, OFL_CNT_CREDIT, 1, 0, 1)
              && !na->ops->reached(na, OFL_CNT_CREDIT, 1, 0, 2)
              && !na->ops->reached(na, OFL_CNT_CREDIT, 1, 1, 1)
              && 0 == na->ops->counter(na, OFL_CNT_CREDIT, 1, 1), "reached(CREDIT) off its count");
    /* (a credit counts only items put: 3 on channel 0, 1 on channel 1) */
    nb->ops->bump(nb, OFL_CNT_CREDIT, 0, 0, 2, 0);
    nb->ops->bump(nb, OFL_CNT_CREDIT, 0, 1, 0, 0);
    CHECK(3 == na->ops->counter(na, OFL_CNT_CREDIT, 1, 0)
              && 1 == na->ops->reached(na, OFL_CNT_CREDIT, 1, 0, 3)
              && 0 == na->ops->reached(na, OFL_CNT_CREDIT, 1, 0, 4)
              && 1 == na->ops->reached(na, OFL_CNT_CREDIT, 1, 0, 2)
              && 1 == na->ops->reached(na, OFL_CNT_CREDIT, 1, 1, 1)
              && 0 == na->ops->reached(na, OFL_CNT_CREDIT, 1, 1, 2), "cached CREDIT went stale");
    CHECK(3 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 0)
              && 1 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 1)
              && 0 == nb->ops->counter(nb, OFL_CNT_CREDIT, 0, 0)
              && 0 == nb->ops->counter(nb, OFL_CNT_CREDIT, 0, 1)
              && 0 == na->ops->counter(na, OFL_CNT_DATA, 1, 0),
          "a CREDIT bump moved another count");
    CHECK(1 == na->ops->peer_alive(na, 1) && -1 == na->ops->poisoned(na), "healthy");
    ofl_softnic_detach(&a);
    ofl_softnic_detach(&b);

    /* The layout softnic.h documents, at 3 ranks and 3 slots (no index is
     * symmetric): CREDIT counters [owner][feeder][chan], one line each, after the
     * header; mailboxes [dst][src][chan], each stream whole pages of its own holding
     * its [slot]s, each a 16-byte stamp (the DATA count) and the payload, lines
     * apart; the segment ends after the last. */
    ofl_softnic_t m[3];
    shm_name(name, sizeof(name));
    int rc = ofl_softnic_create(&m[0], name, 3, 0, 3, 200);
    rc |= ofl_softnic_attach(&m[1], name, 3, 1, 3, 200);
    rc |= ofl_softnic_attach(&m[2], name, 3, 2, 3, 200);
    CHECK(0 == rc, "3-rank softnic");
    CHECK(0 == ofl_softnic_unlink(name), "unlink");
    if (0 != rc) {
        return;
    }
    uint64_t stride = (16 + m[0].base.slot_bytes + 63) / 64 * 64;
    uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);
    uint64_t stream = (3 * stride + page - 1) / page * page;
    CHECK(256 == m[0].base.slot_bytes && stride == m[0].slot_stride
              && 0 == m[0].off_mbox % page
              && m[0].len == m[0].off_mbox + 3 * 3 * NCH * stream
              && m[0].len == ofl_softnic_bytes(3, 3, 200)
              && m[0].off_mbox >= m[0].off_counters + 3 * 3 * NCH * 64,
          "geometry: stride %llu len %zu", (unsigned long long) m[0].slot_stride, m[0].len);
    int placed = 0, tried = 0;
    for (int dst = 0; dst < 3; ++dst) {
        for (int src = 0; src < 3; ++src) {
            for (int c = 0; c < NCH && src != dst; ++c) {
                for (uint64_t item = 0; item < 4; ++item) {
                    uint64_t at = m[0].off_mbox
                                  + ((uint64_t) (dst * 3 + src) * NCH + (uint64_t) c) * stream
                                  + item % 3 * stride + 16;
                    uint8_t *in = m[dst].base.ops->inbox(&m[dst].base, src, c, item);
                    uint8_t *out = m[src].base.ops->outbox(&m[src].base, dst, c, item);
                    tried++;
                    placed += in == m[dst].mem + at && out == m[src].mem + at;
                }
                /* A CREDIT bump by the feeder dst lands in owner src's line. */
                ofl_nic_t *fd = &m[dst].base;
                fd->ops->bump(fd, OFL_CNT_CREDIT, src, c, (uint64_t) (10 * dst + src + c), 0);
                uint64_t v;
                memcpy(&v, m[src].mem + m[src].off_counters
                               + ((uint64_t) (src * 3 + dst) * NCH + (uint64_t) c) * 64,
                       sizeof(v));
                tried++;
                placed += v == (uint64_t) (10 * dst + src + c + 1);
                /* A DATA bump by src lands in the stamp of dst's slot. */
                ofl_nic_t *fs = &m[src].base;
                fs->ops->bump(fs, OFL_CNT_DATA, dst, c, 4, 0);
                memcpy(&v, (uint8_t *) m[dst].base.ops->inbox(&m[dst].base, src, c, 4) - 16,
                       sizeof(v));
                tried++;
                placed += 5 == v && 5 == m[dst].base.ops->counter(&m[dst].base, OFL_CNT_DATA,
                                                                   src, c);
            }
        }
    }
    CHECK(placed == tried && 3 * 2 * NCH * 6 == tried, "layout: %d of %d in place", placed,
          tried);
    for (int r = 0; r < 3; ++r) {
        ofl_softnic_detach(&m[r]);
    }
}

/* By-reference items on the softnic: put_ref publishes where bytes lie, get reads
 * them (all or from an offset) and refuses to read past what was published; a
 * reference to unmapped memory (a bogus address, a page made inaccessible) fails
 * the read with an error, not the process, and leaves the destination alone;
 * put_ref moves no counter and touches only its own stream's slot. probe_get
 * reads a peer's word: equal, different, unreadable. */
/* The budget: ofl_softnic_fit gives the largest slot whose share fits, the share
 * bounds what the segment can touch, and filling every slot of the streams a rank
 * receives on (mincore) stays within it. */
static void test_softnic_budget(void)
{
    static const int sizes[] = { 1, 2, 3, 4, 5, 8, 16, 33, 65, 128 };
    static const size_t budgets[] = { 16384, 65536, 262144, 1u << 20, 4u << 20 };
    static const size_t maxes[] = { 4096, 131072 };
    int fitted = 0, refused = 0;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        int n = sizes[i];
        int streams[] = { 0, 1, n > 1 ? 2 * (n - 1) : 1, 2 * n };
        for (int slots = 1; slots <= 8; slots *= 2) {
            for (size_t k = 0; k < sizeof(streams) / sizeof(streams[0]); ++k) {
                for (size_t b = 0; b < sizeof(budgets) / sizeof(budgets[0]); ++b) {
                    for (size_t x = 0; x < sizeof(maxes) / sizeof(maxes[0]); ++x) {
                        size_t seg = ofl_softnic_fit(n, slots, streams[k], budgets[b], maxes[x]);
                        if (0 == seg) {
                            refused++;
                            CHECK(ofl_softnic_share(n, slots, streams[k], 64) > budgets[b],
                                  "n=%d slots=%d streams=%d budget=%zu: refused, but the "
                                  "smallest slot fits", n, slots, streams[k], budgets[b]);
                            continue;
                        }
                        fitted++;
                        CHECK(0 == seg % 64 && seg <= maxes[x]
                                  && ofl_softnic_share(n, slots, streams[k], seg) <= budgets[b],
                              "n=%d slots=%d streams=%d budget=%zu max=%zu: slot %zu, share "
                              "%zu", n, slots, streams[k], budgets[b], maxes[x], seg,
                              ofl_softnic_share(n, slots, streams[k], seg));
                        CHECK(seg == maxes[x] || 0 == streams[k]
                                  || ofl_softnic_share(n, slots, streams[k], seg + 64)
                                         > budgets[b],
                              "n=%d slots=%d streams=%d budget=%zu: slot %zu is not the "
                              "largest that fits", n, slots, streams[k], budgets[b], seg);
                    }
                }
            }
        }
    }
    CHECK(fitted > 100 && refused > 10, "%d fitted, %d refused", fitted, refused);

    /* 4 ranks receiving from every peer on both channels, 256 KiB per rank: fill
     * every slot of every stream entirely and count the segment's resident pages. */
    enum { N = 4, SLOTS = 4 };
    const int nstreams = 2 * (N - 1);
    const size_t budget = 262144;
    size_t seg = ofl_softnic_fit(N, SLOTS, nstreams, budget, 1u << 20);
    ofl_softnic_t m[N];
    char name[64];
    shm_name(name, sizeof(name));
    int rc = ofl_softnic_create(&m[0], name, N, 0, SLOTS, seg);
    for (int r = 1; r < N; ++r) {
        rc |= ofl_softnic_attach(&m[r], name, N, r, SLOTS, seg);
    }
    ofl_softnic_unlink(name);
    CHECK(0 == rc && seg > 0, "4-rank softnic with %zu-byte slots", seg);
    if (0 != rc || 0 == seg) {
        return;
    }
    for (int dst = 0; dst < N; ++dst) {
        for (int src = 0; src < N; ++src) {
            for (int c = 0; c < NCH && src != dst; ++c) {
                for (uint64_t item = 0; item < SLOTS; ++item) {
                    ofl_nic_t *fs = &m[src].base;
                    memset(fs->ops->outbox(fs, dst, c, item), 0x5a, seg);
                    fs->ops->bump(fs, OFL_CNT_DATA, dst, c, item, seg);
                }
            }
        }
    }
    size_t page = (size_t) sysconf(_SC_PAGESIZE), pages = m[0].len / page, resident = 0;
    unsigned char *vec = malloc(pages);
    CHECK(NULL != vec && 0 == mincore(m[0].mem, m[0].len, vec), "mincore");
    for (size_t p = 0; NULL != vec && p < pages; ++p) {
        resident += (vec[p] & 1) ? page : 0;
    }
    free(vec);
    CHECK(resident <= N * ofl_softnic_share(N, SLOTS, nstreams, seg) && resident <= N * budget
              && resident > N * budget / 2,
          "every slot filled: %zu bytes resident, budget %zu per rank", resident, budget);
    for (int r = 0; r < N; ++r) {
        ofl_softnic_detach(&m[r]);
    }
}

static void test_softnic_byref(void)
{
    char name[64];
    shm_name(name, sizeof(name));
    ofl_softnic_t a, b;
    int rc = ofl_softnic_create(&a, name, 2, 0, 2, 64);
    rc |= ofl_softnic_attach(&b, name, 2, 1, 2, 64);
    CHECK(0 == rc, "byref softnic");
    CHECK(0 == ofl_softnic_unlink(name), "unlink");
    if (0 != rc) {
        return;
    }
    ofl_nic_t *na = &a.base, *nb = &b.base;
    CHECK(NULL != na->ops->get && NULL != na->ops->put_ref, "softnic without get/put_ref");
    static uint8_t src[5000];
    for (size_t i = 0; i < sizeof(src); ++i) {
        src[i] = pattern(7, 99, i);
    }
    uint8_t *other = nb->ops->outbox(nb, 0, 1, 0);   /* b -> a, same channel and slot */
    memset(other, 0x77, 64);
    na->ops->put_ref(na, 1, 1, 0, src + 100, 4000);
    na->ops->put_ref(na, 1, 0, 1, src, 10);
    CHECK(0 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 1)
              && 0 == nb->ops->counter(nb, OFL_CNT_DATA, 0, 0)
              && 0 == na->ops->counter(na, OFL_CNT_CREDIT, 1, 1) && 0x77 == other[0]
              && 0x77 == other[63], "put_ref moved a counter or wrote another slot");
    na->ops->bump(na, OFL_CNT_DATA, 1, 1, 0, 0);
    static uint8_t dst[5000];
    memset(dst, SENTINEL, sizeof(dst));
    CHECK(0 == nb->ops->get(nb, 0, 1, 0, 0, dst, 4000) && 0 == memcmp(dst, src + 100, 4000)
              && SENTINEL == dst[4000], "get of a whole reference");
    memset(dst, SENTINEL, sizeof(dst));
    CHECK(0 == nb->ops->get(nb, 0, 1, 0, 1234, dst, 2766)
              && 0 == memcmp(dst, src + 1334, 2766) && SENTINEL == dst[2766],
          "get from an offset to the end");
    CHECK(0 == nb->ops->get(nb, 0, 1, 0, 4000, dst, 0), "get of nothing at the end");
    memset(dst, SENTINEL, sizeof(dst));
    CHECK(-EPROTO == nb->ops->get(nb, 0, 1, 0, 0, dst, 4001)
              && -EPROTO == nb->ops->get(nb, 0, 1, 0, 3999, dst, 2)
              && -EPROTO == nb->ops->get(nb, 0, 1, 0, 4001, dst, 0)
              && -EPROTO == nb->ops->get(nb, 0, 1, 0, UINT64_MAX, dst, 2)
              && all_sentinel(dst, sizeof(dst)), "get past the published bytes");
    CHECK(0 == nb->ops->get(nb, 0, 0, 1, 0, dst, 10) && 0 == memcmp(dst, src, 10),
          "the other channel's reference");
    /* The next item in the same slot (2 slots: item 2) replaces the reference. */
    na->ops->put_ref(na, 1, 1, 2, src + 7, 16);
    CHECK(0 == nb->ops->get(nb, 0, 1, 2, 0, dst, 16) && 0 == memcmp(dst, src + 7, 16),
          "slot reuse");
    /* Unreadable memory: a bogus address, a guard page behind readable bytes. */
    long pg = sysconf(_SC_PAGESIZE);
    uint8_t *map = mmap(NULL, (size_t) (2 * pg), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(MAP_FAILED != map, "mmap");
    if (MAP_FAILED != map) {
        memset(map, 0x42, (size_t) (2 * pg));
        CHECK(0 == mprotect(map + pg, (size_t) pg, PROT_NONE), "mprotect");
        memset(dst, SENTINEL, sizeof(dst));
        na->ops->put_ref(na, 1, 1, 3, (void *) 16, 64);
        int e1 = nb->ops->get(nb, 0, 1, 3, 0, dst, 64);
        int clean = all_sentinel(dst, sizeof(dst));
        na->ops->put_ref(na, 1, 1, 4, map + pg - 100, 300);
        int e2 = nb->ops->get(nb, 0, 1, 4, 0, dst, 300);
        int e3 = nb->ops->get(nb, 0, 1, 4, 100, dst, 1);
        int ok = nb->ops->get(nb, 0, 1, 4, 0, dst + 1000, 100);
        CHECK(e1 < 0 && e2 < 0 && e3 < 0 && clean, "unreadable memory read: %d %d %d", e1, e2,
              e3);
        CHECK(0 == ok && 0x42 == dst[1000] && 0x42 == dst[1099] && SENTINEL == dst[1100],
              "the readable part of a reference");
        /* probe_get: this process's word, a wrong value, an unreadable address. */
        uint64_t word = 0x0123456789abcdefull;
        CHECK(0 == ofl_softnic_probe_get(&a, 1, &word, word)
                  && 0 == ofl_softnic_probe_get(&b, 0, &word, word)
                  && 0 == ofl_softnic_probe_get(&a, 0, &word, word), "probe_get of a real word");
        int w1 = ofl_softnic_probe_get(&a, 1, &word, word + 1);
        int w2 = ofl_softnic_probe_get(&a, 1, (void *) 16, 0);
        int w3 = ofl_softnic_probe_get(&b, 0, map + pg, 0x4242424242424242ull);
        /* A word half readable: a short read, which sets no errno of its own. */
        errno = 0;
        int w4 = ofl_softnic_probe_get(&b, 0, map + pg - 4, 0x4242424242424242ull);
        CHECK(w1 < 0 && w2 < 0 && w3 < 0 && w4 < 0, "probe_get accepted a wrong value or "
              "address: %d %d %d %d", w1, w2, w3, w4);
        CHECK(0 == ofl_softnic_probe_get(&b, 0, map + pg - 8, 0x4242424242424242ull),
              "probe_get of the last readable word");
        munmap(map, (size_t) (2 * pg));
    }
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
    uint64_t in[8 * NCH], out[8 * NCH];   /* the stream sequences at the end */
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
        ofl_call_t oc = { inplace ? (void *) recv : (void *) send, recv, sum, 8, count, 0 };
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
        ofl_call_t oc = { it & 1 ? (void *) br : (void *) bs, br, sum, 8, big, 0 };
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
        ofl_call_t ob = { NULL, bb, NULL, 1, bbytes, 0 };
        thr_call(t, &bc[root], &e, &ob, 200000 + it);
        for (size_t j = 0; j < bbytes; ++j) {
            wrong += bb[j] != pattern(root, (uint32_t) it, j);
        }
        int rroot = (it + 1) % n;
        for (size_t j = 0; j < big; ++j) {
            br[j] = -1;
        }
        ofl_call_t orr = { bs, br, sum, 8, big, 0 };
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
    memcpy(t->in, e.in, sizeof(uint64_t) * (size_t) n * NCH);
    memcpy(t->out, e.out, sizeof(uint64_t) * (size_t) n * NCH);
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
    px.shape = OFL_SCHED_EXCHANGE;
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
            ofl_call_t oc = { bs, bs, sum, 8, big, 0 };
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
            ofl_call_t oc = { inplace ? (void *) fr : (void *) fs, fr, fsum, 4, 5, 0 };
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
            ofl_call_t oc = { inplace ? (void *) recv : (void *) send, recv, sum, 8, count, 0 };
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
            ofl_call_t oc = { inplace ? (void *) recv : (void *) send, recv, sum, 8, 1, 0 };
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
            ofl_call_t ob = { NULL, bb, NULL, 1, len, 0 };
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
    memcpy(t->in, e.in, sizeof(uint64_t) * (size_t) n * NCH);
    memcpy(t->out, e.out, sizeof(uint64_t) * (size_t) n * NCH);
    ofl_edges_fini(&e);
    return NULL;
}

/* A double allreduce (MAX) of `count` elements: the reference from the inputs. */
static double max_f64_ref(int n, uint32_t tag, size_t j)
{
    double m = in_f64(0, tag, j);
    for (int r = 1; r < n; ++r) {
        double v = in_f64(r, tag, j);
        m = v > m ? v : m;
    }
    return m;
}

/* Calls thr_smain makes in `iters` iterations. */
static long smain_calls(int iters)
{
    return iters + (iters + 1) / 2 + (iters + 2) / 3 + (iters + 4) / 5;
}

/* Split allreduces interleaved with exchange and tree allreduces and bcasts on the
 * same streams, every result checked. Each iteration makes one split call, in
 * turn: an int64 sum in 64-byte segments (seg_bytes) of a count that ends in a
 * partial round (or a round of its own, or less than one), every other one
 * in-place; a float sum of 37 elements in 32-byte segments whose bits must be
 * rank order's (every other in-place); a double max of 20 in 24-byte segments; and
 * every 25th an in-place int64 sum in slot-size (4 KiB) segments, two combine
 * chunks each, size + 2 segments. Then every 2nd iteration an exchange sum, every
 * 3rd a tree allreduce, every 5th a tree bcast. */
static void *thr_smain(void *arg)
{
    thr_t *t = arg;
    int n = t->n;
    ofl_edges_t e;
    if (0 != ofl_edges_init(&e, n)) {
        thr_fail(t, "edges_init", -1);
        return NULL;
    }
    ofl_sched_params_t ps = t->params, px = t->params;
    ps.shape = OFL_SCHED_SPLIT;
    px.shape = OFL_SCHED_EXCHANGE;
    ofl_program_t sp, ex, ar, bc[8];
    int ok = 0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, t->rank, n, &ps, &sp);
    ok &= 0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, t->rank, n, &px, &ex);
    ok &= 0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, t->rank, n, &t->params, &ar);
    for (int r = 0; r < n; ++r) {
        ok &= 0 == ofl_sched_compile(OFL_COLL_BCAST, r, t->rank, n, &t->params, &bc[r]);
    }
    if (!ok) {
        thr_fail(t, "compile", -1);
        return NULL;
    }
    ofl_alu_fn isum = ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT64);
    ofl_alu_fn fsum = ofl_alu_lookup(OFL_OP_SUM, OFL_T_FLOAT);
    ofl_alu_fn dmax = ofl_alu_lookup(OFL_OP_MAX, OFL_T_DOUBLE);
    const size_t big = (size_t) (n + 1) * 512 + 300;
    const size_t counts[] = { 1, 7, 8 * (size_t) n - 3, 8 * (size_t) n + 13,
                              16 * (size_t) n + 3, 100 };
    int64_t *br = malloc(big * 8), send[200], recv[200];
    float fs[37], fr[37];
    double ds[20], dr[20];
    uint8_t bb[40];
    for (int it = 0; it < t->small_iters; ++it) {
        size_t wrong = 0;
        int inplace = (it / 4) & 1;
        if (24 == it % 25) {
            for (size_t j = 0; j < big; ++j) {
                br[j] = thr_val(t->rank, it, j);
            }
            ofl_call_t oc = { br, br, isum, 8, big, 0 };
            thr_call(t, &sp, &e, &oc, it);
            for (size_t j = 0; j < big; ++j) {
                uint64_t want = 0;
                for (int r = 0; r < n; ++r) {
                    want += (uint64_t) thr_val(r, it, j);
                }
                wrong += (uint64_t) br[j] != want;
            }
        } else if (1 == it % 4) {
            for (size_t j = 0; j < 37; ++j) {
                fs[j] = in_f32(t->rank, (uint32_t) it, j);
                fr[j] = inplace ? fs[j] : -1.0f;
            }
            ofl_call_t oc = { inplace ? (void *) fr : (void *) fs, fr, fsum, 4, 37, 32 };
            thr_call(t, &sp, &e, &oc, it);
            for (size_t j = 0; j < 37; ++j) {
                float want = rank_sum_f32(n, (uint32_t) it, j);
                wrong += 0 != memcmp(&want, &fr[j], sizeof(float));
            }
        } else if (3 == it % 4) {
            for (size_t j = 0; j < 20; ++j) {
                ds[j] = in_f64(t->rank, (uint32_t) it, j);
                dr[j] = inplace ? ds[j] : 0.0;
            }
            ofl_call_t oc = { inplace ? (void *) dr : (void *) ds, dr, dmax, 8, 20, 24 };
            thr_call(t, &sp, &e, &oc, it);
            for (size_t j = 0; j < 20; ++j) {
                wrong += max_f64_ref(n, (uint32_t) it, j) != dr[j];
            }
        } else {
            size_t count = counts[(it / 2) % 6];
            for (size_t j = 0; j < count; ++j) {
                send[j] = thr_val(t->rank, it, j);
                recv[j] = inplace ? send[j] : -1;
            }
            recv[count] = -7;
            ofl_call_t oc = { inplace ? (void *) recv : (void *) send, recv, isum, 8, count, 64 };
            thr_call(t, &sp, &e, &oc, it);
            for (size_t j = 0; j < count; ++j) {
                uint64_t want = 0;
                for (int r = 0; r < n; ++r) {
                    want += (uint64_t) thr_val(r, it, j);
                }
                wrong += (uint64_t) recv[j] != want;
            }
            wrong += -7 != recv[count];
        }
        if (wrong) {
            thr_fail(t, "split allreduce", it);
        }
        if (0 == it % 2) {
            size_t count = 1 + (size_t) (it % 3);
            for (size_t j = 0; j < count; ++j) {
                send[j] = thr_val(t->rank, -it, j);
                recv[j] = -1;
            }
            ofl_call_t oc = { send, recv, isum, 8, count, 0 };
            thr_call(t, &ex, &e, &oc, it);
            for (size_t j = 0; j < count; ++j) {
                uint64_t want = 0;
                for (int r = 0; r < n; ++r) {
                    want += (uint64_t) thr_val(r, -it, j);
                }
                wrong += (uint64_t) recv[j] != want;
            }
            if (wrong) {
                thr_fail(t, "exchange between splits", it);
            }
        }
        if (0 == it % 3) {
            send[0] = thr_val(t->rank, it + 7777, 0);
            recv[0] = send[0];
            ofl_call_t oc = { recv, recv, isum, 8, 1, 0 };
            thr_call(t, &ar, &e, &oc, it);
            uint64_t want = 0;
            for (int r = 0; r < n; ++r) {
                want += (uint64_t) thr_val(r, it + 7777, 0);
            }
            if ((uint64_t) recv[0] != want) {
                thr_fail(t, "tree allreduce between splits", it);
            }
        }
        if (0 == it % 5) {
            int root = (it / 5) % n;
            size_t len = 1 + (size_t) (it % 40);
            for (size_t j = 0; j < len; ++j) {
                bb[j] = t->rank == root ? pattern(root, (uint32_t) it, j) : SENTINEL;
            }
            ofl_call_t ob = { NULL, bb, NULL, 1, len, 0 };
            thr_call(t, &bc[root], &e, &ob, it);
            for (size_t j = 0; j < len; ++j) {
                wrong += bb[j] != pattern(root, (uint32_t) it, j);
            }
            if (wrong) {
                thr_fail(t, "bcast between splits", it);
            }
        }
    }
    free(br);
    ofl_program_free(&sp);
    ofl_program_free(&ex);
    ofl_program_free(&ar);
    for (int r = 0; r < n; ++r) {
        ofl_program_free(&bc[r]);
    }
    memcpy(t->in, e.in, sizeof(uint64_t) * (size_t) n * NCH);
    memcpy(t->out, e.out, sizeof(uint64_t) * (size_t) n * NCH);
    ofl_edges_fini(&e);
    return NULL;
}

/* Calls thr_bmain makes in `iters` iterations. */
static long bmain_calls(int iters)
{
    long calls = 0;
    for (int it = 0; it < iters; ++it) {
        calls += 1 + (0 == it % 2) + (0 == it % 3) + (1 == it % 4) + (2 == it % 5);
    }
    return calls;
}

/* By-reference bcasts interleaved with exchange, tree and split allreduces and
 * by-value bcasts on the same streams, every result checked. Each iteration one
 * by-reference bcast from a root that moves on (it + it / n), of 0 .. 5000 bytes
 * (below, at and above the 256-byte slot) in segments of the message, 100 bytes,
 * a slot or 3000 bytes; the moment it completes, the buffer is overwritten as
 * an application reusing it would: a rank whose call completed before every
 * child had read it hands that child the scribble. Then every 2nd iteration an
 * exchange sum, every 3rd an in-place tree sum, every 4th a by-value bcast of up
 * to 700 bytes (several slots), every 5th a split sum in 64-byte segments. */
static void *thr_bmain(void *arg)
{
    thr_t *t = arg;
    int n = t->n;
    ofl_edges_t e;
    if (0 != ofl_edges_init(&e, n)) {
        thr_fail(t, "edges_init", -1);
        return NULL;
    }
    ofl_sched_params_t pr = t->params, px = t->params, ps = t->params;
    pr.byref = 1;
    px.shape = OFL_SCHED_EXCHANGE;
    ps.shape = OFL_SCHED_SPLIT;
    ofl_program_t ex, sp, ar, bc[8], br[8];
    int ok = 0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, t->rank, n, &px, &ex);
    ok &= 0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, t->rank, n, &ps, &sp);
    ok &= 0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, t->rank, n, &t->params, &ar);
    for (int r = 0; r < n; ++r) {
        ok &= 0 == ofl_sched_compile(OFL_COLL_BCAST, r, t->rank, n, &t->params, &bc[r]);
        ok &= 0 == ofl_sched_compile(OFL_COLL_BCAST, r, t->rank, n, &pr, &br[r]);
        ok &= 1 == br[r].byref && 0 == bc[r].byref;
    }
    if (!ok) {
        thr_fail(t, "compile", -1);
        return NULL;
    }
    ofl_alu_fn isum = ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT64);
    static const size_t lens[] = { 0, 1, 7, 255, 257, 1000, 2600, 5000 };
    static const size_t segs[] = { 0, 100, 256, 3000 };
    const size_t nl = sizeof(lens) / sizeof(lens[0]);
    uint8_t *bb = malloc(5001), vb[701];
    int64_t send[8 * 8 + 13], recv[8 * 8 + 14];
    for (int it = 0; it < t->small_iters; ++it) {
        size_t wrong = 0;
        int root = (it + it / n) % n;
        size_t len = lens[it % nl], seg = segs[(it / nl) % 4];
        for (size_t j = 0; j < len; ++j) {
            bb[j] = t->rank == root ? pattern(root, (uint32_t) it, j) : SENTINEL;
        }
        bb[len] = SENTINEL;
        ofl_call_t ob = { NULL, bb, NULL, 1, len, seg };
        thr_call(t, &br[root], &e, &ob, it);
        for (size_t j = 0; j < len; ++j) {
            wrong += bb[j] != pattern(root, (uint32_t) it, j);
        }
        wrong += SENTINEL != bb[len];
        memset(bb, 0x3c, len);
        if (wrong) {
            thr_fail(t, "by-reference bcast", it);
        }
        if (0 == it % 2) {
            size_t count = 1 + (size_t) (it % 3);
            for (size_t j = 0; j < count; ++j) {
                send[j] = thr_val(t->rank, it, j);
                recv[j] = -1;
            }
            ofl_call_t oc = { send, recv, isum, 8, count, 0 };
            thr_call(t, &ex, &e, &oc, it);
            for (size_t j = 0; j < count; ++j) {
                uint64_t want = 0;
                for (int r = 0; r < n; ++r) {
                    want += (uint64_t) thr_val(r, it, j);
                }
                wrong += (uint64_t) recv[j] != want;
            }
            if (wrong) {
                thr_fail(t, "exchange between by-reference bcasts", it);
            }
        }
        if (0 == it % 3) {
            recv[0] = thr_val(t->rank, it + 5555, 0);
            ofl_call_t oc = { recv, recv, isum, 8, 1, 0 };
            thr_call(t, &ar, &e, &oc, it);
            uint64_t want = 0;
            for (int r = 0; r < n; ++r) {
                want += (uint64_t) thr_val(r, it + 5555, 0);
            }
            if ((uint64_t) recv[0] != want) {
                thr_fail(t, "tree allreduce between by-reference bcasts", it);
            }
        }
        if (1 == it % 4) {
            int vroot = (it / 4) % n;
            size_t vlen = 1 + (size_t) (it * 37 % 700);
            for (size_t j = 0; j < vlen; ++j) {
                vb[j] = t->rank == vroot ? pattern(vroot, (uint32_t) it + 77777, j) : SENTINEL;
            }
            vb[vlen] = SENTINEL;
            ofl_call_t ov = { NULL, vb, NULL, 1, vlen, 0 };
            thr_call(t, &bc[vroot], &e, &ov, it);
            for (size_t j = 0; j < vlen; ++j) {
                wrong += vb[j] != pattern(vroot, (uint32_t) it + 77777, j);
            }
            wrong += SENTINEL != vb[vlen];
            if (wrong) {
                thr_fail(t, "by-value bcast between by-reference bcasts", it);
            }
        }
        if (2 == it % 5) {
            size_t count = 8 * (size_t) n + (size_t) (it % 13);
            for (size_t j = 0; j < count; ++j) {
                send[j] = thr_val(t->rank, -it, j);
                recv[j] = -1;
            }
            recv[count] = -7;
            ofl_call_t oc = { send, recv, isum, 8, count, 64 };
            thr_call(t, &sp, &e, &oc, it);
            for (size_t j = 0; j < count; ++j) {
                uint64_t want = 0;
                for (int r = 0; r < n; ++r) {
                    want += (uint64_t) thr_val(r, -it, j);
                }
                wrong += (uint64_t) recv[j] != want;
            }
            wrong += -7 != recv[count];
            if (wrong) {
                thr_fail(t, "split between by-reference bcasts", it);
            }
        }
    }
    free(bb);
    ofl_program_free(&ex);
    ofl_program_free(&sp);
    ofl_program_free(&ar);
    for (int r = 0; r < n; ++r) {
        ofl_program_free(&bc[r]);
        ofl_program_free(&br[r]);
    }
    memcpy(t->in, e.in, sizeof(uint64_t) * (size_t) n * NCH);
    memcpy(t->out, e.out, sizeof(uint64_t) * (size_t) n * NCH);
    ofl_edges_fini(&e);
    return NULL;
}

enum { THR_TREE, THR_EXCHANGE, THR_SPLIT, THR_BYREF };

/* THR_TREE: thr_main on 256-byte segments; THR_EXCHANGE: thr_xmain on 4 KiB ones;
 * THR_SPLIT: thr_smain on 4 KiB slots, most calls cut smaller by seg_bytes;
 * THR_BYREF: thr_bmain on 256-byte slots, its bcast trees of the kind and radix
 * given (the other modes' bcast tree is the binomial one). */
static void test_threads(int n, int slots, ofl_tree_kind_t kind, int radix, int mode,
                         int iters)
{
    static const char *mode_name[] = { "tree", "exchange", "split", "byref" };
    size_t segsize = THR_TREE == mode || THR_BYREF == mode ? 256 : 4096;
    char name[64];
    shm_name(name, sizeof(name));
    thr_t t[8];
    memset(t, 0, sizeof(t));
    int rc = 0;
    for (int r = 0; r < n; ++r) {
        t[r].rank = r;
        t[r].n = n;
        t[r].small_iters = iters;
        t[r].params = (ofl_sched_params_t) { kind, radix, OFL_TREE_KNOMIAL, 2, slots, 0, 0 };
        if (THR_BYREF == mode) {
            t[r].params.bcast_kind = kind;
            t[r].params.bcast_radix = radix;
        }
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
    void *(*body[])(void *) = { thr_main, thr_xmain, thr_smain, thr_bmain };
    pthread_t th[8];
    for (int r = 0; r < n; ++r) {
        CHECK(0 == pthread_create(&th[r], NULL, body[mode], &t[r]), "pthread_create");
    }
    long calls = 0;
    for (int r = 0; r < n; ++r) {
        pthread_join(th[r], NULL);
        CHECK(0 == t[r].bad, "threads n %d %s: %ld failures, first: %s", n, mode_name[mode],
              t[r].bad, t[r].first);
        calls += t[r].calls;
    }
    long want = THR_TREE == mode       ? iters + 18
                : THR_EXCHANGE == mode ? iters + (iters + 2) / 3 + (iters + 1) / 3
                : THR_SPLIT == mode    ? smain_calls(iters)
                                       : bmain_calls(iters);
    CHECK(calls == (long) n * want, "threads n %d %s: %ld calls", n, mode_name[mode], calls);
    /* Every call is over: each count equals the items its stream carried, and the
     * trigger test agrees with it exactly. */
    int bad = 0, used[NCH] = { 0 };
    for (int a = 0; a < n; ++a) {
        for (int b = 0; b < n; ++b) {
            for (int c = 0; c < NCH; ++c) {
                ofl_nic_t *na = &t[a].nic.base, *nb = &t[b].nic.base;
                uint64_t data = nb->ops->counter(nb, OFL_CNT_DATA, a, c);
                uint64_t credit = na->ops->counter(na, OFL_CNT_CREDIT, b, c);
                uint64_t out = t[a].out[b * NCH + c], in = t[b].in[a * NCH + c];
                used[c] += data > 0;
                bad += data != out || data != in || credit != in
                       || !nb->ops->reached(nb, OFL_CNT_DATA, a, c, data)
                       || nb->ops->reached(nb, OFL_CNT_DATA, a, c, data + 1)
                       || !na->ops->reached(na, OFL_CNT_CREDIT, b, c, credit)
                       || na->ops->reached(na, OFL_CNT_CREDIT, b, c, credit + 1);
            }
        }
    }
    /* Trees use n - 1 streams up (channel 0) and down (1); exchange all pairs on
     * channel 0; split all pairs on both. */
    int all = n * (n - 1);
    int used_ok = THR_TREE == mode       ? used[0] >= n - 1 && used[1] >= n - 1
                  : THR_EXCHANGE == mode ? used[0] == all && used[1] >= n - 1
                                         : used[0] == all && used[1] == all;
    /* THR_BYREF calls wait for nothing else: no wait failed. */
    long waits_bad = 0;
    for (int r = 0; r < n; ++r) {
        waits_bad += t[r].waits_bad;
    }
    CHECK(0 == waits_bad, "threads n %d %s: %ld waits failed", n, mode_name[mode], waits_bad);
    CHECK(0 == bad && used_ok, "threads n %d %s: %d streams off their counts, %d + %d used", n,
          mode_name[mode], bad, used[0], used[1]);
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
    ofl_call_t oc = { s, r, ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT64), 8, 10, 0 };
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
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0, 0 };
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
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0, 0 };
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
    ofl_call_t oc = { &s, &r, ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT32), 4, 1, 0 };
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

/* A by-reference bcast whose data cannot be read (root 0 of 3 ranks, binary tree:
 * both others read from it): the root's buffer is a bogus pointer, or one whose
 * segment runs from readable bytes into a page without access. The root never
 * touches its buffer and waits for the reads (incomplete, no crash); a reader's
 * progress returns -1 with inst.error < 0, again on every later call, leaving its
 * buffer as it was for the bogus pointer, and even once the page is readable
 * again (a failed call stays failed); the other reader's ofl_engine_wait
 * returns OFL_WAIT_FAILED with inst.error < 0. Runs on a fresh world each time:
 * the failed streams are not used again. Before that, the same call with a good
 * buffer works on the same kind of world. */
static void test_byref_failure(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0, 0 };
    long pg = sysconf(_SC_PAGESIZE);
    uint8_t *map = mmap(NULL, (size_t) (2 * pg), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(MAP_FAILED != map, "mmap");
    if (MAP_FAILED == map) {
        return;
    }
    memset(map, 0x42, (size_t) pg);
    CHECK(0 == mprotect(map + pg, (size_t) pg, PROT_NONE), "mprotect");
    void *bad_root[2] = { (void *) 16, map + pg - 100 };
    for (int v = 0; v < 3; ++v) {
        world_t *w = world_open(3, 1, 64, &pk, &pk);
        if (NULL == w) {
            continue;
        }
        /* v == 2: the readable bytes alone (the last one the sentinel behind the
         * buffer), as a control. */
        spec_t s = { K_BCAST, 0, PS_BYREF, 0, 2 == v ? 99 : 300, next_tag++, 0 };
        call_t c;
        call_init(w, &c, &s);
        uint8_t *good = c.recv[0];
        c.recv[0] = 2 == v ? map + pg - 100 : bad_root[v];
        if (2 == v) {
            memset(c.expect, 0x42, 99);
            map[pg - 1] = SENTINEL;
        }
        for (int r = 0; r < 3; ++r) {
            call_post(w, &c, r);
        }
        if (2 == v) {
            sim_run(w, &c, 1, ORD_RANDOM, 0x7u, "byref read up to a guard page");
            c.recv[0] = good;
            call_free(w, &c);
            world_close(w);
            continue;
        }
        int r0 = ofl_engine_progress(&w->inst[0]);
        int r1 = ofl_engine_progress(&w->inst[1]);
        int e1 = w->inst[1].error;
        int r1again = ofl_engine_progress(&w->inst[1]);
        CHECK(0 == r0 && -1 == r1 && e1 < 0 && -1 == r1again && e1 == w->inst[1].error,
              "bad reference %d: root %d, reader %d (error %d), again %d", v, r0, r1, e1,
              r1again);
        CHECK(1 == v || all_sentinel(c.recv[1], 301), "failed read wrote the buffer");
        if (1 == v) {
            /* The memory becomes readable: a failed call stays failed, reads no more. */
            uint8_t before[301];
            memcpy(before, c.recv[1], sizeof(before));
            CHECK(0 == mprotect(map + pg, (size_t) pg, PROT_READ), "mprotect");
            CHECK(-1 == ofl_engine_progress(&w->inst[1]) && e1 == w->inst[1].error
                      && 0 == memcmp(before, c.recv[1], sizeof(before)),
                  "a failed call resumed");
            CHECK(0 == mprotect(map + pg, (size_t) pg, PROT_NONE), "mprotect");
        }
        ofl_wait_opts_t o = { NULL, NULL, 64, 5.0, 0.01 };
        int peer = -1;
        double t0 = now_s();
        ofl_wait_status_t st = ofl_engine_wait(&w->inst[2], &o, &peer);
        CHECK(OFL_WAIT_FAILED == st && w->inst[2].error < 0 && now_s() - t0 < 1.0,
              "bad reference %d: wait status %d error %d", v, (int) st, w->inst[2].error);
        CHECK(OFL_WAIT_FAILED == ofl_engine_wait(&w->inst[1], &o, &peer),
              "a failed call waited on");
        int done = 0;
        for (int i = 0; i < 20; ++i) {
            done += ofl_engine_progress(&w->inst[0]);
        }
        CHECK(0 == done && 0 == w->inst[0].error, "root completed without a read (%d)", done);
        c.recv[0] = good;
        call_free(w, &c);
        world_close(w);
    }
    munmap(map, (size_t) (2 * pg));
}

/* A real process attaches as rank 1 and exits: as a zombie and once reaped, it is
 * dead; a wait on it reports it and poisons the communicator. Runs while this
 * process has a single thread. */
static void test_dead_peer(void)
{
    static const ofl_sched_params_t pk = { OFL_TREE_KARY, 2, OFL_TREE_KARY, 2, 1, 0, 0 };
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
    ofl_call_t oc = { &s, &r, ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT32), 4, 1, 0 };
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
    alarm(unit_time_limit(60));
    double t0 = now_s();
    test_shape();
    test_shape_exchange();
    test_shape_split();
    test_shape_byref();
    double t1 = now_s();
    test_softnic_api();
    test_softnic_byref();
    test_softnic_budget();
    test_sim_matrix();
    test_sim_mixed();
    test_sim_exchange();
    test_sim_exchange_barrier();
    test_sim_thresholds();
    test_sim_float();
    test_sim_split();
    test_sim_split_float();
    test_sim_split_blocked();
    test_sim_byref();
    test_sim_byref_fence();
    /* The engine's queue rule held after every step of every simulated call; it
     * did hold triggered descriptors back (in-place exchange: the combine of a
     * segment may trigger before its put); and every call was cut into the
     * segments engine.h defines. */
    CHECK(0 == stats.rule_broken, "queue rule broken %ld times", stats.rule_broken);
    CHECK(stats.rule_held > 0, "the queue rule never held a descriptor back");
    CHECK(0 == stats.bad_nseg, "%ld posts with an unexpected segment count", stats.bad_nseg);
    double t2 = now_s();
    test_dead_peer();
    test_watchdog();
    test_poison();
    test_byref_failure();
    double t3 = now_s();
    test_threads(2, 1, OFL_TREE_KARY, 2, THR_TREE, 2000);
    test_threads(3, 2, OFL_TREE_KNOMIAL, 2, THR_TREE, 2000);
    test_threads(4, 4, OFL_TREE_KARY, 3, THR_TREE, 2000);
    test_threads(8, 2, OFL_TREE_KNOMIAL, 2, THR_TREE, 2000);
    test_threads(2, 1, OFL_TREE_KARY, 2, THR_EXCHANGE, 2000);
    test_threads(4, 2, OFL_TREE_KNOMIAL, 2, THR_EXCHANGE, 2000);
    test_threads(8, 1, OFL_TREE_KARY, 3, THR_EXCHANGE, 2000);
    test_threads(2, 1, OFL_TREE_KNOMIAL, 2, THR_SPLIT, 1500);
    test_threads(4, 2, OFL_TREE_KARY, 2, THR_SPLIT, 1500);
    test_threads(8, 1, OFL_TREE_KNOMIAL, 3, THR_SPLIT, 500);
    test_threads(2, 1, OFL_TREE_KARY, 2, THR_BYREF, 600);
    test_threads(4, 2, OFL_TREE_KNOMIAL, 2, THR_BYREF, 400);
    test_threads(8, 1, OFL_TREE_KARY, 3, THR_BYREF, 200);
    double t4 = now_s();
    check_no_leftover_shm();
    printf("engine: shape %.2f s, sim %.2f s, failure %.2f s, threads %.2f s\n", t1 - t0,
           t2 - t1, t3 - t2, t4 - t3);
    return unit_report("engine");
}
