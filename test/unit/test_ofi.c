/*
 * Unit test of the libfabric NIC backend (src/nic/ofi.c) without MPI: several
 * "ranks" in one process, each with its own endpoint (provider sockets, over
 * this host's loopback or first interface), connected by exchanging address
 * blobs in memory; the real engine runs compiled programs on them, one thread
 * stepping every rank's instance in turn.
 *
 *   counters   a DATA bump moves the outbox bytes into the peer's inbox slot
 *              and its counter says so; a CREDIT bump reaches the feeder only;
 *   allreduce  tree, exchange and split programs, 2-5 ranks, counts from 0 to
 *              several segments, int64 sums checked against sums computed here,
 *              many calls back to back (sequence numbers across calls, slot
 *              reuse under credits);
 *   barrier    and bcast from every root.
 * When the provider is missing (no libfabric sockets provider), the test says
 * so and exits 77 (skipped).
 */
#include "engine/engine.h"
#include "nic/ofi.h"
#include "sched/sched.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXR 5

static ofl_ofi_t *nics[MAXR];

static int open_all(int n, size_t slot_bytes, int slots)
{
    char why[256];
    size_t bb = ofl_ofi_blob_bytes(n);
    char *blobs = calloc((size_t) n, bb);
    for (int r = 0; r < n; ++r) {
        nics[r] = ofl_ofi_open(r, n, slots, slot_bytes, "sockets", NULL, why, sizeof(why));
        if (NULL == nics[r]) {
            printf("test_ofi: cannot open a sockets endpoint (%s)\n", why);
            free(blobs);
            return -1;
        }
        ofl_ofi_address(nics[r], blobs + (size_t) r * bb);
    }
    for (int r = 0; r < n; ++r) {
        int rc = ofl_ofi_connect(nics[r], blobs, why, sizeof(why));
        CHECK(0 == rc, "connect rank %d: %s", r, why);
    }
    free(blobs);
    return 0;
}

static void close_all(int n)
{
    for (int r = 0; r < n; ++r) {
        ofl_ofi_close(nics[r]);
        nics[r] = NULL;
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* Step every rank's instance until all are done (or 10 s pass). */
static int run_all(ofl_inst_t *inst, int n)
{
    double t0 = now_s();
    int done[MAXR] = { 0 }, left = n;
    while (left > 0) {
        for (int r = 0; r < n; ++r) {
            if (!done[r]) {
                int rc = ofl_engine_progress(&inst[r]);
                if (rc < 0) {
                    return -1;
                }
                if (rc > 0) {
                    done[r] = 1;
                    left--;
                }
            }
        }
        if (now_s() - t0 > 10.0) {
            return 0;
        }
    }
    return 1;
}

static void test_counters(void)
{
    if (0 != open_all(2, 4096, 4)) {
        exit(77);
    }
    ofl_nic_t *a = ofl_ofi_nic(nics[0]), *b = ofl_ofi_nic(nics[1]);
    memcpy(a->ops->outbox(a, 1, 0, 0), "hello, peer", 12);
    a->ops->bump(a, OFL_CNT_DATA, 1, 0, 0, 12);
    double t0 = now_s();
    while (!b->ops->reached(b, OFL_CNT_DATA, 0, 0, 1) && now_s() - t0 < 5.0) {
    }
    CHECK(b->ops->reached(b, OFL_CNT_DATA, 0, 0, 1), "DATA item 0 arrived");
    CHECK(0 == memcmp(b->ops->inbox(b, 0, 0, 0), "hello, peer", 12), "payload in the inbox");
    CHECK(!b->ops->reached(b, OFL_CNT_DATA, 0, 1, 1), "other channel untouched");
    CHECK(!b->ops->reached(b, OFL_CNT_DATA, 0, 0, 2), "not beyond what was sent");
    b->ops->bump(b, OFL_CNT_CREDIT, 0, 0, 0, 0);
    t0 = now_s();
    while (!a->ops->reached(a, OFL_CNT_CREDIT, 1, 0, 1) && now_s() - t0 < 5.0) {
    }
    CHECK(a->ops->reached(a, OFL_CNT_CREDIT, 1, 0, 1), "CREDIT reached the feeder");
    CHECK(1 == a->ops->counter(a, OFL_CNT_CREDIT, 1, 0), "credit value 1 (%llu)",
          (unsigned long long) a->ops->counter(a, OFL_CNT_CREDIT, 1, 0));
    uint64_t w, by;
    ofl_ofi_stats(nics[0], &w, &by);
    CHECK(1 == w && 12 == by, "stats: %llu writes, %llu bytes", (unsigned long long) w,
          (unsigned long long) by);
    close_all(2);
}

static void test_allreduce(int n, ofl_sched_shape_t shape, size_t count, int calls)
{
    if (0 != open_all(n, 1024, 4)) {
        exit(77);
    }
    ofl_sched_params_t sp = { .reduce_kind = OFL_TREE_KNOMIAL, .reduce_radix = 2,
                              .bcast_kind = OFL_TREE_KNOMIAL, .bcast_radix = 2, .slots = 4,
                              .shape = shape };
    ofl_program_t prog[MAXR];
    ofl_edges_t edges[MAXR];
    ofl_inst_t inst[MAXR];
    int64_t *send[MAXR], *recv[MAXR];
    for (int r = 0; r < n; ++r) {
        CHECK(0 == ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, r, n, &sp, &prog[r]), "compile");
        CHECK(0 == ofl_edges_init(&edges[r], n), "edges");
        send[r] = malloc(sizeof(int64_t) * (count + 1));
        recv[r] = malloc(sizeof(int64_t) * (count + 1));
    }
    ofl_alu_fn sum = ofl_alu_lookup(OFL_OP_SUM, OFL_T_INT64);
    int bad = 0;
    for (int call = 0; call < calls && !bad; ++call) {
        for (int r = 0; r < n; ++r) {
            for (size_t i = 0; i < count; ++i) {
                send[r][i] = (int64_t) (r + 1) * 1000003 + (int64_t) i * 7 + call;
                recv[r][i] = -1;
            }
            ofl_call_t c = { send[r], recv[r], sum, sizeof(int64_t), count, 0, 0 };
            ofl_engine_post(&inst[r], &prog[r], ofl_ofi_nic(nics[r]), &edges[r], &c);
        }
        int rc = run_all(inst, n);
        CHECK(1 == rc, "allreduce n=%d shape=%d count=%zu call %d completed (rc %d)", n, shape,
              count, call, rc);
        if (1 != rc) {
            bad = 1;
            break;
        }
        for (int r = 0; r < n && !bad; ++r) {
            for (size_t i = 0; i < count; ++i) {
                int64_t want = 0;
                for (int q = 0; q < n; ++q) {
                    want += (int64_t) (q + 1) * 1000003 + (int64_t) i * 7 + call;
                }
                if (recv[r][i] != want) {
                    CHECK(0, "allreduce n=%d shape=%d count=%zu call %d rank %d [%zu]: %lld, "
                             "want %lld", n, shape, count, call, r, i,
                          (long long) recv[r][i], (long long) want);
                    bad = 1;
                    break;
                }
            }
        }
    }
    CHECK(!bad, "allreduce n=%d shape=%d count=%zu: %d calls right", n, shape, count, calls);
    for (int r = 0; r < n; ++r) {
        ofl_program_free(&prog[r]);
        ofl_edges_fini(&edges[r]);
        free(send[r]);
        free(recv[r]);
    }
    close_all(n);
}

static void test_bcast_barrier(int n)
{
    if (0 != open_all(n, 512, 2)) {
        exit(77);
    }
    ofl_sched_params_t sp = { .reduce_kind = OFL_TREE_KNOMIAL, .reduce_radix = 2,
                              .bcast_kind = OFL_TREE_KARY, .bcast_radix = 2, .slots = 2 };
    ofl_program_t prog[MAXR];
    ofl_edges_t edges[MAXR];
    ofl_inst_t inst[MAXR];
    unsigned char buf[MAXR][3000];
    for (int r = 0; r < n; ++r) {
        CHECK(0 == ofl_edges_init(&edges[r], n), "edges");
    }
    for (int root = 0; root < n; ++root) {
        for (int r = 0; r < n; ++r) {
            CHECK(0 == ofl_sched_compile(OFL_COLL_BCAST, root, r, n, &sp, &prog[r]), "compile");
            for (int i = 0; i < 3000; ++i) {
                buf[r][i] = r == root ? (unsigned char) (i * 13 + root) : 0;
            }
            ofl_call_t c = { buf[r], buf[r], NULL, 1, 3000, 0, 0 };
            ofl_engine_post(&inst[r], &prog[r], ofl_ofi_nic(nics[r]), &edges[r], &c);
        }
        CHECK(1 == run_all(inst, n), "bcast n=%d root %d completed", n, root);
        int ok = 1;
        for (int r = 0; r < n; ++r) {
            for (int i = 0; i < 3000 && ok; ++i) {
                ok = buf[r][i] == (unsigned char) (i * 13 + root);
            }
            ofl_program_free(&prog[r]);
        }
        CHECK(ok, "bcast n=%d root %d: every rank has the root's bytes", n, root);
    }
    for (int r = 0; r < n; ++r) {
        CHECK(0 == ofl_sched_compile(OFL_COLL_BARRIER, 0, r, n, &sp, &prog[r]), "compile");
    }
    for (int k = 0; k < 20; ++k) {
        for (int r = 0; r < n; ++r) {
            ofl_call_t c = { NULL, NULL, NULL, 1, 0, 0, 0 };
            ofl_engine_post(&inst[r], &prog[r], ofl_ofi_nic(nics[r]), &edges[r], &c);
        }
        CHECK(1 == run_all(inst, n), "barrier n=%d #%d completed", n, k);
    }
    for (int r = 0; r < n; ++r) {
        ofl_program_free(&prog[r]);
        ofl_edges_fini(&edges[r]);
    }
    close_all(n);
}

int main(void)
{
    test_counters();
    for (int n = 2; n <= MAXR; ++n) {
        test_allreduce(n, OFL_SCHED_TREE, 1, 20);
        test_allreduce(n, OFL_SCHED_EXCHANGE, 5, 20);
        test_allreduce(n, OFL_SCHED_TREE, 1000, 4);      /* 8000 B: 8 segments of 1 KiB */
        test_allreduce(n, OFL_SCHED_SPLIT, 1000, 4);
    }
    test_allreduce(3, OFL_SCHED_TREE, 0, 5);
    test_bcast_barrier(4);
    return unit_report("test_ofi");
}
