/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * The simulated NIC: latencies of small trees worked out by hand from the machine
 * model, routes of both topologies, and results of every program shape checked
 * bit for bit against the reference.
 */
#include "sim/sim.h"
#include "unit.h"

#include <math.h>
#include <string.h>

/* Distinct values, so that a term counted with the wrong parameter shows. */
#define A_POST 0.7
#define B_DONE 0.3
#define D_NIC 0.11
#define P_NIC 0.013
#define LINK 0.05
#define HOP 0.17
#define H_DESC 1.3
#define P_HOST 0.41
#define WAKE 2.9

static ofl_sim_model_t bare(void)
{
    ofl_sim_model_t m = {
        .link_lat_us = LINK, .link_bw = 1e12, .hop_lat_us = HOP,
        .nic_desc_us = D_NIC, .nic_pkt_us = 0.0, .nic_alu_bw = 1e12,
        .host_post_us = A_POST, .host_done_us = B_DONE,
        .host_desc_us = H_DESC, .host_pkt_us = 0.0, .host_wake_us = WAKE, .host_alu_bw = 1e12,
        .noise_prob = 0.0, .noise_us = 0.0,
        .shm_lat_us = 0.2, .shm_bw = 1e12,
    };
    return m;
}

static ofl_sim_run_t allreduce(ofl_tree_kind_t kind, int radix, size_t count)
{
    ofl_sim_run_t r = {
        .coll = OFL_COLL_ALLREDUCE, .root = 0,
        .sched = { .reduce_kind = kind, .reduce_radix = radix, .bcast_kind = kind,
                   .bcast_radix = radix, .slots = 4, .shape = OFL_SCHED_TREE },
        .mode = OFL_SIM_OFFLOAD, .type = OFL_T_DOUBLE, .op = OFL_OP_SUM, .count = count,
        .byte_scale = 1.0, .calls = 2, .seed = 1, .check = 1,
    };
    return r;
}

/* Wire time of a packet crossing up to fat-tree level l and down. */
static double wire(int l)
{
    return 2 * l * LINK + (2 * l - 1) * HOP;
}

static int near(double a, double b)
{
    return fabs(a - b) < 1e-9 * (1.0 + fabs(b));
}

static double sim_lat(const ofl_sim_model_t *m, const ofl_sim_topo_t *t, int nodes,
                      const ofl_sim_run_t *r, ofl_sim_result_t *res)
{
    char err[160];
    int rc = ofl_sim(m, t, nodes, r, res, err, sizeof(err));
    CHECK(0 == rc, "ofl_sim failed: %s", err);
    CHECK(0 == res->wrong, "%llu of %llu result elements wrong",
          (unsigned long long) res->wrong, (unsigned long long) res->checked);
    return res->mean_us;
}

/* Root and two leaves under one switch: post, leaf's descriptor, wire up, root's
 * descriptor, wire down, leaf's descriptor, return. */
static void test_two_levels(void)
{
    ofl_sim_model_t m = bare();
    ofl_sim_topo_t t = { .kind = OFL_SIM_FATTREE, .k = 16, .ppn = 1 };
    ofl_sim_run_t r = allreduce(OFL_TREE_KARY, 2, 1);
    ofl_sim_result_t res;
    double lat = sim_lat(&m, &t, 3, &r, &res);
    double want = A_POST + 3 * D_NIC + 2 * wire(1) + B_DONE;
    CHECK(near(lat, want), "2-level tree: %.6f us, formula %.6f", lat, want);
    CHECK(near(res.min_us, res.max_us), "every call alike without noise");
    CHECK(3 == res.checked / 2, "every rank's result checked (%llu)",
          (unsigned long long) res.checked);

    /* Packets cost the NIC time on both ends; the root sends its children's
     * credits before their results: leaf send P, root receives 2P, sends 4P (the
     * second child's result last), leaf receives P and returns the credit P. */
    m.nic_pkt_us = P_NIC;
    lat = sim_lat(&m, &t, 3, &r, &res);
    want = A_POST + 3 * D_NIC + 9 * P_NIC + 2 * wire(1) + B_DONE;
    CHECK(near(lat, want), "with packet costs: %.6f us, formula %.6f", lat, want);
}

/* Two ranks of one node: the packets take shared memory, at twice the latency
 * when the ranks sit on two sockets. */
static void test_node(void)
{
    ofl_sim_model_t m = bare();
    ofl_sim_topo_t t = { .kind = OFL_SIM_FATTREE, .k = 16, .ppn = 2 };
    ofl_sim_run_t r = allreduce(OFL_TREE_KARY, 2, 1);
    ofl_sim_result_t res;
    double lat = sim_lat(&m, &t, 1, &r, &res);
    double want = A_POST + 3 * D_NIC + 2 * m.shm_lat_us + B_DONE;
    CHECK(near(lat, want), "one node: %.6f us, formula %.6f", lat, want);
    t.per_socket = 1;
    lat = sim_lat(&m, &t, 1, &r, &res);
    want = A_POST + 3 * D_NIC + 4 * m.shm_lat_us + B_DONE;
    CHECK(near(lat, want), "two sockets: %.6f us, formula %.6f", lat, want);
}

/* Seven ranks, binary tree, on a 2-ary fat tree: ranks 5 and 6 hang off rank 2
 * across level 3, rank 2 off the root across level 2; the critical path runs up
 * and down that branch. */
static void test_three_levels(void)
{
    ofl_sim_model_t m = bare();
    ofl_sim_topo_t t = { .kind = OFL_SIM_FATTREE, .k = 2, .ppn = 1 };
    ofl_sim_run_t r = allreduce(OFL_TREE_KARY, 2, 1);
    ofl_sim_result_t res;
    double lat = sim_lat(&m, &t, 7, &r, &res);
    double want = A_POST + 5 * D_NIC + 2 * wire(3) + 2 * wire(2) + B_DONE;
    CHECK(near(lat, want), "3-level tree: %.6f us, formula %.6f", lat, want);
}

/* The same tree driven by the hosts: every descriptor costs host CPU, every
 * packet crossing the network waits for the receiving host to notice it, and the
 * NIC's parameters play no part. */
static void test_software(void)
{
    ofl_sim_model_t m = bare();
    m.host_pkt_us = P_HOST;
    m.nic_pkt_us = 100.0;
    ofl_sim_topo_t t = { .kind = OFL_SIM_FATTREE, .k = 16, .ppn = 1 };
    ofl_sim_run_t r = allreduce(OFL_TREE_KARY, 2, 1);
    r.mode = OFL_SIM_SOFTWARE;
    ofl_sim_result_t res;
    double lat = sim_lat(&m, &t, 3, &r, &res);
    double want = A_POST + 3 * H_DESC + 9 * P_HOST + 2 * (wire(1) + WAKE);
    CHECK(near(lat, want), "software 2-level tree: %.6f us, formula %.6f", lat, want);

    /* noise only ever delays, and differs from call to call */
    m.noise_prob = 0.5;
    m.noise_us = 5.0;
    r.calls = 20;
    double noisy = sim_lat(&m, &t, 3, &r, &res);
    CHECK(noisy > want && res.min_us >= want - 1e-9 && res.max_us > res.min_us,
          "noise: mean %.3f min %.3f max %.3f over %.3f", noisy, res.min_us, res.max_us, want);
}

/* Bandwidth: S bytes serialize once per link crossing (cut-through), the root's
 * port takes the two children's packets one after the other and sends its two
 * results one after the other; the ALU passes S bytes three times on the critical
 * path: the root's receive unit folds in the second child's packet (the first one's
 * pass is done while the second is still on the wire), the root's descriptor
 * combines that with its own operand, and the leaf's receive unit takes the result.
 * The data really moved is 32 bytes; the timing charges byte_scale times that. */
static void test_bandwidth(void)
{
    ofl_sim_model_t m = bare();
    m.link_bw = 1000.0;
    m.nic_alu_bw = 4000.0;
    ofl_sim_topo_t t = { .kind = OFL_SIM_FATTREE, .k = 16, .ppn = 1 };
    ofl_sim_run_t r = allreduce(OFL_TREE_KARY, 2, 4);
    r.byte_scale = 1000.0;
    ofl_sim_result_t res;
    double lat = sim_lat(&m, &t, 3, &r, &res);
    double s = 32.0 * 1000.0;
    double want = A_POST + 3 * D_NIC + 2 * wire(1) + 4 * s / 1000.0 + 3 * s / 4000.0 + B_DONE;
    CHECK(near(lat, want), "bandwidth: %.6f us, formula %.6f", lat, want);
}

/* The NIC's receive unit: every arriving data packet passes the ALU (S / nic_alu_bw,
 * here 0.4 us) into the intermediate result, one packet after the other, and a
 * combining descriptor then costs one pass more (its own operand), whatever the
 * number of children. Links are fast enough that only the ALU counts. */
static void test_receive_unit(void)
{
    ofl_sim_model_t m = bare();
    m.nic_alu_bw = 32.0 / 0.4;
    double pass = 0.4;
    ofl_sim_run_t r = allreduce(OFL_TREE_KARY, 2, 4);
    ofl_sim_result_t res;

    /* both children under the root's switch arrive together: the root's receive
     * unit takes them in one after the other (2 passes), its descriptor adds one,
     * the leaf's receive unit one for the result */
    ofl_sim_topo_t flat = { .kind = OFL_SIM_FATTREE, .k = 16, .ppn = 1 };
    double lat = sim_lat(&m, &flat, 3, &r, &res);
    double want = A_POST + 3 * D_NIC + 2 * wire(1) + 4 * pass + B_DONE;
    CHECK(near(lat, want), "receive unit, children together: %.6f us, formula %.6f", lat,
          want);

    /* on a 2-ary fat tree child 1 shares the root's switch and child 2 comes across
     * level 2, 2 links and 2 switches (0.44 us) later: child 1's pass is over by then */
    ofl_sim_topo_t two = { .kind = OFL_SIM_FATTREE, .k = 2, .ppn = 1 };
    lat = sim_lat(&m, &two, 3, &r, &res);
    want = A_POST + 3 * D_NIC + 2 * wire(2) + 3 * pass + B_DONE;
    CHECK(wire(2) - wire(1) > pass, "child 2 arrives after child 1's pass");
    CHECK(near(lat, want), "receive unit, children apart: %.6f us, formula %.6f", lat, want);
}

static void test_routes(void)
{
    ofl_sim_topo_t ft = { .kind = OFL_SIM_FATTREE, .k = 4, .ppn = 1 };
    int sw, links;
    ofl_sim_route(&ft, 5, 5, &sw, &links);
    CHECK(0 == sw && 0 == links, "same node");
    ofl_sim_route(&ft, 4, 7, &sw, &links);
    CHECK(1 == sw && 2 == links, "one leaf switch: %d %d", sw, links);
    ofl_sim_route(&ft, 3, 4, &sw, &links);
    CHECK(3 == sw && 4 == links, "level 2: %d %d", sw, links);
    ofl_sim_route(&ft, 0, 63, &sw, &links);
    CHECK(5 == sw && 6 == links, "level 3: %d %d", sw, links);
    ofl_sim_route(&ft, 0, 64, &sw, &links);
    CHECK(7 == sw && 8 == links, "level 4: %d %d", sw, links);

    /* dragonfly: 2 nodes per router, 4 routers per group, 2 global links each (9 groups) */
    ofl_sim_topo_t df = { .kind = OFL_SIM_DRAGONFLY, .p = 2, .a = 4, .h = 2, .ppn = 1 };
    ofl_sim_route(&df, 0, 1, &sw, &links);
    CHECK(1 == sw && 2 == links, "one router: %d %d", sw, links);
    ofl_sim_route(&df, 0, 7, &sw, &links);
    CHECK(2 == sw && 3 == links, "one group: %d %d", sw, links);
    /* group 0 -> group 1: group 0's first link (router 0); group 1 -> group 0 is
     * group 1's last link (router 3 of group 1, nodes 14-15) */
    ofl_sim_route(&df, 0, 14, &sw, &links);
    CHECK(2 == sw && 3 == links, "gateway to gateway: %d %d", sw, links);
    ofl_sim_route(&df, 2, 8, &sw, &links);
    CHECK(4 == sw && 5 == links, "local, global, local: %d %d", sw, links);
    int worst = 0;
    for (int b = 8; b < 72; ++b) {
        ofl_sim_route(&df, 0, b, &sw, &links);
        worst = sw > worst ? sw : worst;
        CHECK(links == sw + 1 && sw >= 2 && sw <= 4, "minimal route to %d: %d %d", b, sw, links);
    }
    CHECK(4 == worst, "some route needs both local hops");
}

/* Every program shape, checked against the reference on every rank of every call. */
static void test_results(void)
{
    ofl_sim_model_t m = bare();
    m.nic_pkt_us = P_NIC;
    m.noise_prob = 0.3;
    m.noise_us = 1.0;
    ofl_sim_topo_t t = { .kind = OFL_SIM_FATTREE, .k = 4, .ppn = 1 };
    ofl_sim_result_t res;
    const struct {
        ofl_coll_t coll;
        ofl_tree_kind_t kind;
        int radix;
        ofl_sched_shape_t shape;
        ofl_type_t type;
        ofl_op_t op;
        int root;
        int nodes;
        int ppn;
        int per_socket;
        int hier;
        size_t count;
        size_t seg;
        int byref;
    } cases[] = {
#define AR OFL_COLL_ALLREDUCE
#define KN OFL_TREE_KNOMIAL
#define KA OFL_TREE_KARY
#define TR OFL_SCHED_TREE
        { AR, KN, 4, TR, OFL_T_DOUBLE, OFL_OP_SUM, 0, 37, 1, 0, 0, 1000, 256, 0 },
        { AR, KA, 3, TR, OFL_T_INT64, OFL_OP_SUM, 0, 50, 1, 0, 0, 33, 0, 0 },
        { AR, OFL_TREE_FLAT, 1, TR, OFL_T_UINT32, OFL_OP_BXOR, 0, 17, 1, 0, 0, 9, 0, 0 },
        { AR, KN, 2, OFL_SCHED_EXCHANGE, OFL_T_FLOAT, OFL_OP_MAX, 0, 9, 1, 0, 0, 5, 0, 0 },
        { AR, KN, 2, OFL_SCHED_SPLIT, OFL_T_INT32, OFL_OP_MIN, 0, 6, 1, 0, 0, 4000, 512, 0 },
        { OFL_COLL_REDUCE, KN, 4, TR, OFL_T_INT64, OFL_OP_PROD, 13, 40, 1, 0, 0, 64, 128, 0 },
        { OFL_COLL_BCAST, KN, 4, TR, OFL_T_UINT64, OFL_OP_SUM, 7, 40, 1, 0, 0, 300, 512, 0 },
        { OFL_COLL_BCAST, KA, 2, TR, OFL_T_UINT64, OFL_OP_SUM, 3, 20, 1, 0, 0, 300, 512, 1 },
        { OFL_COLL_BARRIER, KN, 4, TR, OFL_T_UINT64, OFL_OP_SUM, 0, 64, 1, 0, 0, 0, 0, 0 },
        /* node-aware: 16 per node; 32 per node in sockets of 8; 8 per node in 4s */
        { AR, KN, 4, TR, OFL_T_DOUBLE, OFL_OP_SUM, 0, 8, 16, 0, 1, 100, 0, 0 },
        { AR, KN, 4, TR, OFL_T_INT64, OFL_OP_SUM, 0, 4, 32, 8, 1, 10, 0, 0 },
        { OFL_COLL_REDUCE, KA, 2, TR, OFL_T_INT64, OFL_OP_MAX, 0, 4, 8, 4, 1, 10, 0, 0 },
        { OFL_COLL_BCAST, KA, 2, TR, OFL_T_INT64, OFL_OP_MAX, 0, 4, 8, 4, 1, 10, 0, 0 },
        { OFL_COLL_BARRIER, KA, 2, TR, OFL_T_INT64, OFL_OP_MAX, 0, 4, 8, 4, 1, 0, 0, 0 },
#undef AR
#undef KN
#undef KA
#undef TR
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        for (int mode = 0; mode < 2; ++mode) {
            ofl_sim_run_t r = allreduce(cases[i].kind, cases[i].radix, cases[i].count);
            r.coll = cases[i].coll;
            r.root = cases[i].root;
            r.sched.shape = cases[i].shape;
            r.sched.byref = cases[i].byref;
            r.type = cases[i].type;
            r.op = cases[i].op;
            r.hier = cases[i].hier;
            r.seg_bytes = cases[i].seg;
            r.mode = mode ? OFL_SIM_SOFTWARE : OFL_SIM_OFFLOAD;
            r.calls = 3;
            t.ppn = cases[i].ppn;
            t.per_socket = cases[i].per_socket;
            char err[160];
            int rc = ofl_sim(&m, &t, cases[i].nodes, &r, &res, err, sizeof(err));
            CHECK(0 == rc, "case %zu mode %d: %s", i, mode, err);
            size_t ranks = (size_t) cases[i].nodes * (size_t) cases[i].ppn;
            size_t owed = OFL_COLL_BARRIER == r.coll  ? 0
                          : OFL_COLL_REDUCE == r.coll ? cases[i].count * 3
                                                      : cases[i].count * 3 * ranks;
            CHECK(res.checked == owed, "case %zu mode %d: %llu checked, %zu owed", i, mode,
                  (unsigned long long) res.checked, owed);
            CHECK(0 == res.wrong, "case %zu mode %d: %llu wrong", i, mode,
                  (unsigned long long) res.wrong);
            CHECK(res.mean_us > 0, "case %zu mode %d: latency %.3f", i, mode, res.mean_us);
        }
    }
}

int main(void)
{
    unit_timeout("test_sim", 60);
    test_two_levels();
    test_three_levels();
    test_node();
    test_software();
    test_bandwidth();
    test_receive_unit();
    test_routes();
    test_results();
    return unit_report("test_sim");
}
