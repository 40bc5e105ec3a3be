/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * bench/sim — the compiled descriptor programs on a simulated machine (src/sim/sim.h).
 *
 *   sim validate [--calls N] [--csv FILE [--png FILE]] [--quick]
 *                [--tree knomial|kary|flat] [--radix R] [--k K] [--noise PROB,US]
 *                [--host-pkt US] [--set PARAM=VALUE]...  (structure and model
 *                changes, for ablations; PARAM: a field of ofl_sim_model_t)
 *       seed 003's tables 1-5 (allreduce 16-48 B of doubles, 16-256 nodes, one
 *       rank per node, k-ary n-tree): the NIC's and the host's per-descriptor
 *       time are fitted on the 16-node row only, the other rows are predicted;
 *       error per cell. --quick: tables 1 and 5, fewer calls (CI).
 *   sim project [--csv FILE [--png FILE]] [--max-ranks N]
 *       1k-64k ranks, 1 and 64 ranks per node, 8 B - 1 MiB: offload vs software,
 *       and the tree (kind, radix) that is fastest at each point.
 *   sim one --ranks N [--ppn P] [--bytes B] [--radix R] [--tree knomial|kary|flat]
 *           [--mode offload|software] [--hier] [--hwloc SYNTH] [--dragonfly] [--tianhe]
 *           [--set PARAM=VALUE]...
 *       one run; prints latency, events, memory and the wall time it took.
 *   sim rules [--above N] [--max-ranks M] [--ppn P] [--calls C] [--out FILE]
 *       the simulator's advice as a rules file (docs/rules-format.md, origin=simulated):
 *       per band of communicator sizes one reduce and one bcast rule with the tree of
 *       least latency. Bands: N+1 up to the next power of two, then doubling up to M
 *       rounded up to a power of two (defaults N 2, M 4096: 3-4, 5-8, ..., 2049-4096);
 *       the last band is written open-ended (2049+), so larger communicators take the
 *       advice for M. Each band is simulated at its largest size (P ranks per node, a
 *       power of two, default 1; the modern model, offload, not node-aware), reduce and
 *       bcast rooted at 0 each on its own; candidates knomial and kary of radix 2, 4, 8
 *       and flat (bands of at most 16), ranked by the geometric mean of their latency at
 *       8 B, 1 KiB and 64 KiB; knomial-4, the default, stays unless another is strictly
 *       faster. C: calls per run (default 1; offload runs have no noise). The text is
 *       read back with ofl_rules_parse before it goes to stdout or FILE.
 *
 * Every simulated call's result is compared with the reference; any difference
 * makes the command fail.
 */
#include "sim/sim.h"

#include "clocks.h"
#include "sched/rules.h"

#include <hwloc.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- seed 003 (Chang, Xiong, Xu, NUDT 2022), tables 1-5, µs ---------------------- */

static const int paper_nodes[5] = { 16, 32, 64, 128, 256 };
static const int paper_bytes[5] = { 16, 24, 32, 40, 48 };
/* [table][row] software ("无") and offload ("有") */
static const double paper_sw[5][5] = {
    { 26.174, 35.974, 43.860, 58.900, 70.110 },
    { 29.252, 39.922, 48.288, 61.604, 77.608 },
    { 29.336, 39.982, 48.032, 63.270, 81.324 },
    { 29.450, 39.616, 48.138, 63.374, 82.074 },
    { 29.274, 40.210, 48.062, 62.502, 78.934 },
};
static const double paper_off[5][5] = {
    { 15.286, 18.140, 20.884, 26.424, 31.120 },
    { 15.364, 18.326, 20.366, 26.532, 30.838 },
    { 15.502, 18.226, 20.686, 26.462, 31.492 },
    { 15.324, 18.586, 20.742, 26.076, 30.290 },
    { 15.330, 18.132, 20.568, 26.014, 30.774 },
};

/* The machine model for the paper's system. Every value but the two fitted ones
 * is set from what the hardware is (docs/perf/sim.md says why each). */
static ofl_sim_model_t tianhe_model(void)
{
    ofl_sim_model_t m = {
        .link_lat_us = 0.10,     /* ~10 m cable and SerDes */
        .link_bw = 10000.0,      /* 80 Gbit/s of payload per link */
        .hop_lat_us = 0.10,      /* a switch's cut-through latency */
        .nic_desc_us = 1.0,      /* fitted */
        .nic_pkt_us = 1.0 / 150, /* one cycle at 150 MHz: a packet of <= 64 B (16 B header,
                                    <= 48 B of data) is one beat of a datapath as wide as
                                    the link needs (80 Gbit/s / 150 MHz = 67 B per cycle) */
        .nic_alu_bw = 1200.0,    /* one 64-bit operand per cycle at 150 MHz (FPGA) */
        .host_post_us = 0.5,     /* descriptors written over PCIe */
        .host_done_us = 0.5,     /* completion DMA to memory + the host's poll */
        .host_desc_us = 2.0,     /* fitted */
        .host_pkt_us = 0.3,      /* messaging stack per message: match, header */
        .host_wake_us = 0.5,     /* arrival DMA'd to memory until a polling host acts */
        .host_alu_bw = 4000.0,   /* a core combining doubles from cache */
        .noise_prob = 0.001,     /* OS detours: 0.1% of host steps ... */
        .noise_us = 10.0,        /* ... lose 10 µs on average (daemons, interrupts) */
        .shm_lat_us = 0.2,
        .shm_bw = 5000.0,
    };
    return m;
}

static ofl_sim_topo_t tianhe_topo(void)
{
    ofl_sim_topo_t t = { .kind = OFL_SIM_FATTREE, .k = 8, .ppn = 1 };
    return t;
}

typedef struct {
    int calls;
    const char *csv;
    const char *png;     /* chart, drawn by sim_plot.py next to this program */
    const char *self;    /* argv[0] */
    int quick;
    int max_ranks;
    ofl_tree_kind_t kind;
    int radix;
    int k;               /* fat tree arity of the validation machine */
    double noise_prob;   /* < 0: the model's */
    double noise_us;
    double host_pkt_us;  /* < 0: the model's */
    const char *sets[16]; /* --set NAME=VALUE: model parameters changed by hand */
    int nsets;
} opts_t;

/* Apply --noise, --host-pkt and the --set overrides to a model; -1 on an unknown
 * parameter name. */
static int apply_sets(const opts_t *o, ofl_sim_model_t *m)
{
    if (o->noise_prob >= 0) {
        m->noise_prob = o->noise_prob;
        m->noise_us = o->noise_us;
    }
    if (o->host_pkt_us >= 0) {
        m->host_pkt_us = o->host_pkt_us;
    }
    static const struct {
        const char *name;
        size_t off;
    } fields[] = {
#define F(f) { #f, offsetof(ofl_sim_model_t, f) }
        F(link_lat_us), F(link_bw), F(hop_lat_us), F(nic_desc_us), F(nic_pkt_us),
        F(nic_alu_bw), F(host_post_us), F(host_done_us), F(host_desc_us), F(host_pkt_us),
        F(host_wake_us), F(host_alu_bw), F(noise_prob), F(noise_us), F(shm_lat_us), F(shm_bw),
#undef F
    };
    for (int i = 0; i < o->nsets; ++i) {
        char name[64];
        double v;
        if (2 != sscanf(o->sets[i], "%63[^=]=%lf", name, &v)) {
            fprintf(stderr, "sim: --set NAME=VALUE, not '%s'\n", o->sets[i]);
            return -1;
        }
        size_t f = 0;
        while (f < sizeof(fields) / sizeof(fields[0]) && strcmp(fields[f].name, name)) {
            ++f;
        }
        if (f == sizeof(fields) / sizeof(fields[0])) {
            fprintf(stderr, "sim: no model parameter '%s'\n", name);
            return -1;
        }
        memcpy((char *) m + fields[f].off, &v, sizeof(v));
    }
    return 0;
}

static ofl_sim_run_t base_run(const opts_t *o, ofl_sim_mode_t mode, size_t bytes)
{
    ofl_sim_run_t r = {
        .coll = OFL_COLL_ALLREDUCE,
        .sched = { .reduce_kind = o->kind, .reduce_radix = o->radix, .bcast_kind = o->kind,
                   .bcast_radix = o->radix, .slots = 4, .shape = OFL_SCHED_TREE },
        .mode = mode,
        .type = OFL_T_DOUBLE,
        .op = OFL_OP_SUM,
        .count = bytes / 8 ? bytes / 8 : 1,
        .byte_scale = 1.0,
        .calls = o->calls,
        .seed = 3,
        .check = 1,
    };
    return r;
}

static int bad;   /* results that differed from the reference, or failed runs */

static double run_once(const ofl_sim_model_t *m, const ofl_sim_topo_t *t, int nodes,
                       const ofl_sim_run_t *r, ofl_sim_result_t *res)
{
    char err[200];
    ofl_sim_result_t local;
    res = res ? res : &local;
    if (0 != ofl_sim(m, t, nodes, r, res, err, sizeof(err))) {
        fprintf(stderr, "sim: %d nodes: %s\n", nodes, err);
        bad++;
        return NAN;
    }
    if (res->wrong) {
        fprintf(stderr, "sim: %d nodes: %llu of %llu results wrong\n", nodes,
                (unsigned long long) res->wrong, (unsigned long long) res->checked);
        bad++;
    }
    return res->mean_us;
}

/* Mean relative error of one column's 16-node row, as a function of the fitted
 * parameter; latency grows with it, so bisection on the signed mean finds it. */
static double row16_err(ofl_sim_model_t m, const ofl_sim_topo_t *t, const opts_t *o,
                        ofl_sim_mode_t mode, int ntables)
{
    double e = 0.0;
    for (int tb = 0; tb < ntables; ++tb) {
        int table = ntables == 5 ? tb : (tb ? 4 : 0);
        ofl_sim_run_t r = base_run(o, mode, (size_t) paper_bytes[table]);
        double lat = run_once(&m, t, 16, &r, NULL);
        double want = OFL_SIM_OFFLOAD == mode ? paper_off[table][0] : paper_sw[table][0];
        e += (lat - want) / want;
    }
    return e / ntables;
}

static double fit(ofl_sim_model_t *m, double *param, const ofl_sim_topo_t *t, const opts_t *o,
                  ofl_sim_mode_t mode, int ntables)
{
    double lo = 0.0, hi = 20.0;
    for (int i = 0; i < 40; ++i) {
        *param = 0.5 * (lo + hi);
        if (row16_err(*m, t, o, mode, ntables) > 0) {
            hi = *param;
        } else {
            lo = *param;
        }
    }
    *param = 0.5 * (lo + hi);
    return *param;
}

/* Draw `what` from the CSV into o->png with the plotting script beside argv[0]. */
static int plot(const opts_t *o, const char *what)
{
    if (NULL == o->png) {
        return 0;
    }
    char dir[512];
    snprintf(dir, sizeof(dir), "%s", o->self);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
    } else {
        snprintf(dir, sizeof(dir), ".");
    }
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 '%s/sim_plot.py' %s '%s' '%s'", dir, what, o->csv,
             o->png);
    int rc = system(cmd);
    if (0 != rc) {
        fprintf(stderr, "sim: drawing %s failed\n", o->png);
        return 1;
    }
    printf("chart: %s\n", o->png);
    return 0;
}

static int cmd_validate(const opts_t *o)
{
    ofl_sim_model_t m = tianhe_model();
    ofl_sim_topo_t t = tianhe_topo();
    t.k = o->k;
    if (0 != apply_sets(o, &m)) {
        return 2;
    }
    int ntables = o->quick ? 2 : 5;
    double nic = fit(&m, &m.nic_desc_us, &t, o, OFL_SIM_OFFLOAD, ntables);
    double host = fit(&m, &m.host_desc_us, &t, o, OFL_SIM_SOFTWARE, ntables);
    printf("seed 003 validation: allreduce of doubles, 1 rank per node, %d-ary n-tree, "
           "%s tree radix %d, %d calls per cell\n",
           t.k, ofl_tree_kind_name(o->kind), o->radix, o->calls);
    printf("fitted on the 16-node row: nic_desc_us = %.3f, host_desc_us = %.3f\n", nic, host);
    printf("| bytes | nodes | software paper | sim | error | offload paper | sim | error | "
           "ratio paper | sim |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    FILE *csv = o->csv ? fopen(o->csv, "w") : NULL;
    if (csv) {
        fprintf(csv, "bytes,nodes,paper_sw,sim_sw,paper_off,sim_off\n");
    }
    int within = 0, cells = 0, pass = 0, fail = 0;
    double worst = 0.0;
    for (int tb = 0; tb < ntables; ++tb) {
        int table = ntables == 5 ? tb : (tb ? 4 : 0);
        double last_ratio = 0.0;
        for (int row = 0; row < 5; ++row) {
            int nodes = paper_nodes[row];
            ofl_sim_run_t rs = base_run(o, OFL_SIM_SOFTWARE, (size_t) paper_bytes[table]);
            ofl_sim_run_t ro = base_run(o, OFL_SIM_OFFLOAD, (size_t) paper_bytes[table]);
            double sw = run_once(&m, &t, nodes, &rs, NULL);
            double off = run_once(&m, &t, nodes, &ro, NULL);
            double esw = 100.0 * (sw - paper_sw[table][row]) / paper_sw[table][row];
            double eoff = 100.0 * (off - paper_off[table][row]) / paper_off[table][row];
            printf("| %d | %d | %.1f | %.1f | %+.1f%% | %.1f | %.1f | %+.1f%% | %.2f | %.2f |%s\n",
                   paper_bytes[table], nodes, paper_sw[table][row], sw, esw,
                   paper_off[table][row], off, eoff, paper_sw[table][row] / paper_off[table][row],
                   sw / off, row ? "" : " fitted");
            if (csv) {
                fprintf(csv, "%d,%d,%.3f,%.3f,%.3f,%.3f\n", paper_bytes[table], nodes,
                        paper_sw[table][row], sw, paper_off[table][row], off);
            }
            /* checks: the fitted row reproduced within 10%, every predicted cell
             * within 15%, and the predicted advantage of offload growing with the
             * machine */
            double bound = row ? 15.0 : 10.0;
            int ok = fabs(esw) <= bound && fabs(eoff) <= bound;
            if (row > 0) {
                ok &= sw / off > last_ratio;
                cells += 2;
                within += fabs(esw) <= 15.0;
                within += fabs(eoff) <= 15.0;
                worst = fabs(esw) > worst ? fabs(esw) : worst;
                worst = fabs(eoff) > worst ? fabs(eoff) : worst;
            }
            if (!ok) {
                printf("FAIL: %d B, %d nodes outside +-%.0f%%, or the ratio fell\n",
                       paper_bytes[table], nodes, bound);
            }
            pass += ok;
            fail += !ok;
            last_ratio = sw / off;
        }
    }
    if (csv) {
        fclose(csv);
    }
    printf("predicted cells within +-15%%: %d of %d (worst %.1f%%); results checked: %s\n",
           within, cells, worst, bad ? "DIFFERENCES" : "all bit-exact");
    pass += !bad;
    fail += !!bad;
    fail += plot(o, "validation");
    printf("%d passed, %d failed\n", pass, fail);
    return fail ? 1 : 0;
}

/* ---- projection ------------------------------------------------------------------ */

/* A modern machine: 200 Gbit/s links, a NIC at ASIC speed, 64-port switches. */
static ofl_sim_model_t modern_model(void)
{
    ofl_sim_model_t m = tianhe_model();
    m.link_lat_us = 0.05;
    m.link_bw = 25000.0;
    m.hop_lat_us = 0.1;
    m.nic_desc_us = 0.1;
    m.nic_pkt_us = 0.02;
    m.nic_alu_bw = 25000.0;
    m.host_post_us = 0.3;
    m.host_done_us = 0.3;
    m.host_desc_us = 0.4;
    m.host_pkt_us = 0.2;
    m.host_wake_us = 0.3;
    m.host_alu_bw = 10000.0;
    m.shm_lat_us = 0.1;
    m.shm_bw = 10000.0;
    return m;
}

/* Element count and byte scale for a message: at most `cap` bytes really move per
 * rank, the timing charges the rest. */
static void scale_msg(ofl_sim_run_t *r, size_t bytes, size_t seg, size_t cap)
{
    size_t real = bytes < cap ? bytes : cap;
    real = real < 8 ? 8 : real;
    r->count = real / 8;
    r->byte_scale = (double) bytes / (double) (r->count * 8);
    r->byte_scale = r->byte_scale < 1.0 ? 1.0 : r->byte_scale;
    size_t segs = (bytes + seg - 1) / seg;
    size_t rseg = (r->count * 8) / (segs ? segs : 1);
    r->seg_bytes = rseg < 8 ? 8 : (rseg / 8) * 8;
}

static int cmd_project(const opts_t *o)
{
    ofl_sim_model_t m = modern_model();
    ofl_sim_topo_t t = { .kind = OFL_SIM_FATTREE, .k = 32, .ppn = 1 };
    static const int ranks_list[] = { 1024, 4096, 16384, 65536 };
    static const size_t sizes[] = { 8, 1024, 65536, 1048576 };
    static const int ppns[] = { 1, 64 };
    static const struct {
        ofl_tree_kind_t kind;
        int radix;
    } shapes[] = {
        { OFL_TREE_KNOMIAL, 2 }, { OFL_TREE_KNOMIAL, 4 }, { OFL_TREE_KARY, 2 },
        { OFL_TREE_KARY, 4 }, { OFL_TREE_KARY, 8 }, { OFL_TREE_KARY, 16 },
    };
    FILE *csv = o->csv ? fopen(o->csv, "w") : NULL;
    if (csv) {
        fprintf(csv, "ranks,ppn,bytes,tree,radix,offload_us,software_us\n");
    }
    printf("projection: allreduce of doubles, %d-ary fat tree, modern model (docs/perf/sim.md); "
           "node-aware when ranks share a node; best tree per point\n", t.k);
    printf("| ranks | per node | bytes | offload us (best tree) | software us (best tree) | "
           "software/offload | knomial-4 offload us |\n|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t pi = 0; pi < sizeof(ppns) / sizeof(ppns[0]); ++pi) {
        for (size_t ri = 0; ri < sizeof(ranks_list) / sizeof(ranks_list[0]); ++ri) {
            int ranks = ranks_list[ri];
            if (ranks > o->max_ranks) {
                continue;
            }
            t.ppn = ppns[pi];
            int nodes = ranks / t.ppn;
            for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); ++si) {
                double best[2] = { INFINITY, INFINITY };
                int arg[2] = { 0, 0 };
                double k4 = NAN;
                for (size_t sh = 0; sh < sizeof(shapes) / sizeof(shapes[0]); ++sh) {
                    for (int mode = 0; mode < 2; ++mode) {
                        opts_t oo = *o;
                        oo.kind = shapes[sh].kind;
                        oo.radix = shapes[sh].radix;
                        oo.calls = mode || t.ppn > 1 ? 2 : 1;
                        ofl_sim_run_t r = base_run(&oo, mode ? OFL_SIM_SOFTWARE
                                                             : OFL_SIM_OFFLOAD,
                                                   sizes[si]);
                        /* real bytes moved per rank: all of a small message; a large
                         * one scaled so that all ranks' buffers stay near 256 MiB */
                        size_t cap = (size_t) (256u << 20) / (size_t) ranks / 6;
                        scale_msg(&r, sizes[si], 128 * 1024, cap < 64 ? 64 : cap);
                        r.hier = t.ppn > 1;
                        double lat = run_once(&m, &t, nodes, &r, NULL);
                        if (csv) {
                            fprintf(csv, "%d,%d,%zu,%s,%d,%s%.3f\n", ranks, t.ppn, sizes[si],
                                    ofl_tree_kind_name(oo.kind), oo.radix, mode ? "," : "",
                                    lat);
                        }
                        if (lat < best[mode]) {
                            best[mode] = lat;
                            arg[mode] = (int) sh;
                        }
                        if (!mode && OFL_TREE_KNOMIAL == oo.kind && 4 == oo.radix) {
                            k4 = lat;
                        }
                    }
                }
                printf("| %d | %d | %zu | %.1f (%s-%d) | %.1f (%s-%d) | %.2f | %.1f |\n", ranks,
                       t.ppn, sizes[si], best[0], ofl_tree_kind_name(shapes[arg[0]].kind),
                       shapes[arg[0]].radix, best[1], ofl_tree_kind_name(shapes[arg[1]].kind),
                       shapes[arg[1]].radix, best[1] / best[0], k4);
                fflush(stdout);
            }
        }
    }
    if (csv) {
        fclose(csv);
    }
    int failed = bad || plot(o, "projection");
    printf("%d passed, %d failed\n", failed ? 0 : 1, failed ? 1 : 0);
    return failed;
}

/* ---- one run ------------------------------------------------------------------------ */

/* Ranks per node and per socket of an hwloc synthetic description (e.g.
 * "package:2 core:64 pu:1") or XML file: the node's PUs, and PUs per package. */
static int hwloc_shape(const char *desc, int *ppn, int *per_socket)
{
    hwloc_topology_t topo;
    if (0 != hwloc_topology_init(&topo)) {
        return -1;
    }
    int rc = strchr(desc, ':') ? hwloc_topology_set_synthetic(topo, desc)
                               : hwloc_topology_set_xml(topo, desc);
    if (0 != rc || 0 != hwloc_topology_load(topo)) {
        hwloc_topology_destroy(topo);
        return -1;
    }
    int pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    int pkgs = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    int numas = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    int domains = numas > pkgs ? numas : pkgs;
    *ppn = pus;
    *per_socket = domains > 1 ? pus / domains : 0;
    hwloc_topology_destroy(topo);
    return pus > 0 ? 0 : -1;
}

static int cmd_one(int argc, char **argv, const opts_t *o)
{
    ofl_sim_model_t m = modern_model();
    ofl_sim_topo_t t = { .kind = OFL_SIM_FATTREE, .k = 32, .ppn = 1 };
    int ranks = 1024;
    size_t bytes = 8;
    ofl_sim_mode_t mode = OFL_SIM_OFFLOAD;
    int hier = 0;
    opts_t oo = *o;
    for (int i = 0; i < argc; ++i) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--ranks")) {
            ranks = atoi(v), ++i;
        } else if (!strcmp(a, "--ppn")) {
            t.ppn = atoi(v), ++i;
        } else if (!strcmp(a, "--bytes")) {
            bytes = (size_t) atoll(v), ++i;
        } else if (!strcmp(a, "--radix")) {
            oo.radix = atoi(v), ++i;
        } else if (!strcmp(a, "--tree")) {
            oo.kind = !strcmp(v, "kary") ? OFL_TREE_KARY
                      : !strcmp(v, "flat") ? OFL_TREE_FLAT : OFL_TREE_KNOMIAL;
            ++i;
        } else if (!strcmp(a, "--mode")) {
            mode = !strcmp(v, "software") ? OFL_SIM_SOFTWARE : OFL_SIM_OFFLOAD;
            ++i;
        } else if (!strcmp(a, "--hier")) {
            hier = 1;
        } else if (!strcmp(a, "--dragonfly")) {
            t.kind = OFL_SIM_DRAGONFLY;
            t.p = 16, t.a = 32, t.h = 16;
        } else if (!strcmp(a, "--tianhe")) {
            m = tianhe_model();
            t.k = 8;
        } else if (!strcmp(a, "--hwloc")) {
            if (0 != hwloc_shape(v, &t.ppn, &t.per_socket)) {
                fprintf(stderr, "sim: hwloc could not read '%s'\n", v);
                return 2;
            }
            hier = 1;
            ++i;
        }
    }
    if (0 != apply_sets(o, &m)) {
        return 2;
    }
    if (ranks % t.ppn) {
        fprintf(stderr, "sim: %d ranks are not a multiple of %d per node\n", ranks, t.ppn);
        return 2;
    }
    ofl_sim_run_t r = base_run(&oo, mode, bytes);
    size_t cap = (size_t) (256u << 20) / (size_t) ranks / 6;
    scale_msg(&r, bytes, 128 * 1024, cap < 64 ? 64 : cap);
    r.hier = hier;
    ofl_sim_result_t res;
    double w0 = now_s();
    double lat = run_once(&m, &t, ranks / t.ppn, &r, &res);
    double w1 = now_s();
    printf("%d ranks (%d per node, %d per socket), %zu B, %s, %s-%d%s: %.2f us per call "
           "(min %.2f max %.2f), %llu packets, %llu descriptors, %.1f MiB, wall %.2f s, "
           "%llu of %llu results wrong\n",
           ranks, t.ppn, t.per_socket, bytes, mode ? "software" : "offload",
           ofl_tree_kind_name(oo.kind), oo.radix, hier ? " node-aware" : "", lat, res.min_us,
           res.max_us, (unsigned long long) res.events, (unsigned long long) res.descs,
           (double) res.bytes / 1048576.0, w1 - w0, (unsigned long long) res.wrong,
           (unsigned long long) res.checked);
    return bad ? 1 : 0;
}

/* ---- rules: the simulator's tree advice as a rules file --------------------------- */

typedef struct {
    ofl_tree_kind_t kind;
    int radix;                /* 0 for flat: its radix is the communicator's size - 1 */
} shape_t;

/* The candidates; knomial-4 is the component's default (coll_offload_*_radix), which a
 * band keeps unless another shape is strictly faster. */
static const shape_t rule_shapes[] = {
    { OFL_TREE_KNOMIAL, 4 }, { OFL_TREE_KNOMIAL, 2 }, { OFL_TREE_KNOMIAL, 8 },
    { OFL_TREE_KARY, 2 }, { OFL_TREE_KARY, 4 }, { OFL_TREE_KARY, 8 }, { OFL_TREE_FLAT, 0 },
};
#define RULE_SHAPES ((int) (sizeof(rule_shapes) / sizeof(rule_shapes[0])))
/* A flat tree's root talks to every rank: only for bands of at most this many ranks. */
#define RULE_FLAT_MAX 16
#define RULE_BANDS_MAX 24     /* 2 rules a band, and a file holds OFL_RULES_MAX (64) */

static const size_t rule_sizes[] = { 8, 1024, 65536 };
#define RULE_SIZES ((int) (sizeof(rule_sizes) / sizeof(rule_sizes[0])))

static void shape_name(shape_t s, char *buf, size_t len)
{
    if (OFL_TREE_FLAT == s.kind) {
        snprintf(buf, len, "flat");
    } else {
        snprintf(buf, len, "%s-%d", ofl_tree_kind_name(s.kind), s.radix);
    }
}

/* Geometric mean over rule_sizes of one collective's latency (root 0) with one shape on
 * `ranks` ranks: each size weighs the same whatever its latency, so 64 KiB does not
 * decide alone. NAN when a run failed (counted in `bad`). */
static double rule_lat(const opts_t *o, const ofl_sim_model_t *m, const ofl_sim_topo_t *t,
                       int ranks, ofl_coll_t coll, shape_t s)
{
    double logsum = 0.0;
    for (int si = 0; si < RULE_SIZES; ++si) {
        opts_t oo = *o;
        oo.kind = s.kind;
        oo.radix = OFL_TREE_FLAT == s.kind ? 2 : s.radix;   /* flat ignores it */
        ofl_sim_run_t r = base_run(&oo, OFL_SIM_OFFLOAD, rule_sizes[si]);
        r.coll = coll;
        r.root = 0;
        /* as cmd_project: all ranks' buffers near 256 MiB at most */
        size_t cap = (size_t) (256u << 20) / (size_t) ranks / 6;
        scale_msg(&r, rule_sizes[si], 128 * 1024, cap < 64 ? 64 : cap);
        double lat = run_once(m, t, ranks / t->ppn, &r, NULL);
        if (!(lat > 0.0)) {
            return NAN;
        }
        logsum += log(lat);
    }
    return exp(logsum / RULE_SIZES);
}

static int arg_int(const char *opt, const char *v, long lo, long hi, int *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if ('\0' == *v || '\0' != *end || x < lo || x > hi) {
        fprintf(stderr, "sim rules: %s takes a whole number %ld..%ld, not '%s'\n", opt, lo, hi,
                v);
        return -1;
    }
    *out = (int) x;
    return 0;
}

static int cmd_rules(int argc, char **argv, const opts_t *o)
{
    int above = 2, max_ranks = 4096, ppn = 1, calls = 1;
    const char *out = NULL;
    for (int i = 0; i < argc; ++i) {
        const char *a = argv[i];
        if (i + 1 >= argc) {
            fprintf(stderr, "sim rules: '%s' without a value, or unknown (see bench/sim.c)\n",
                    a);
            return 2;
        }
        const char *v = argv[++i];
        int rc = 0;
        if (!strcmp(a, "--above")) {
            rc = arg_int(a, v, 1, OFL_RULES_RANKS_MAX - 1, &above);
        } else if (!strcmp(a, "--max-ranks")) {
            rc = arg_int(a, v, 2, OFL_RULES_RANKS_MAX, &max_ranks);
        } else if (!strcmp(a, "--ppn")) {
            rc = arg_int(a, v, 1, 1 << 16, &ppn);
        } else if (!strcmp(a, "--calls")) {
            rc = arg_int(a, v, 1, 1000, &calls);
        } else if (!strcmp(a, "--out")) {
            out = v;
        } else {
            fprintf(stderr, "sim rules: unknown option '%s' (see bench/sim.c)\n", a);
            return 2;
        }
        if (0 != rc) {
            return 2;
        }
    }
    /* Bands end at powers of two, so a power-of-two ppn divides every band's size that
     * fills more than one node. */
    if (0 != (ppn & (ppn - 1))) {
        fprintf(stderr, "sim rules: --ppn must be a power of two, not %d\n", ppn);
        return 2;
    }
    if (above >= max_ranks) {
        fprintf(stderr, "sim rules: nothing to advise: --above %d, --max-ranks %d\n", above,
                max_ranks);
        return 2;
    }

    /* Bands: (above+1) up to the next power of two, then doubling, the last one holding
     * max_ranks (its end: max_ranks rounded up to a power of two). */
    int lo[RULE_BANDS_MAX], hi[RULE_BANDS_MAX], nb = 0;
    long top = 1;
    while (top < above + 1) {
        top *= 2;
    }
    for (long l = above + 1; nb < RULE_BANDS_MAX; l = top + 1, top *= 2) {
        lo[nb] = (int) l;
        hi[nb++] = (int) top;
        if (top >= max_ranks) {
            break;
        }
    }

    ofl_sim_model_t m = modern_model();
    opts_t oo = *o;
    oo.calls = calls;
    static const ofl_coll_t colls[2] = { OFL_COLL_REDUCE, OFL_COLL_BCAST };
    shape_t best[RULE_BANDS_MAX][2];
    double best_us[RULE_BANDS_MAX][2], k4_us[RULE_BANDS_MAX][2];
    double w0 = now_s();
    for (int b = 0; b < nb; ++b) {
        /* A rule's tree shapes the whole communicator's program (the node-aware module
         * keeps the MCA values), so the run is flat over all ranks, not node-aware; a
         * band smaller than a node is one node. */
        ofl_sim_topo_t t = { .kind = OFL_SIM_FATTREE, .k = 32,
                             .ppn = ppn < hi[b] ? ppn : hi[b] };
        for (int c = 0; c < 2; ++c) {
            best[b][c] = rule_shapes[0];
            best_us[b][c] = INFINITY;
            for (int s = 0; s < RULE_SHAPES; ++s) {
                if (OFL_TREE_FLAT == rule_shapes[s].kind && hi[b] > RULE_FLAT_MAX) {
                    continue;
                }
                double lat = rule_lat(&oo, &m, &t, hi[b], colls[c], rule_shapes[s]);
                if (0 == s) {
                    k4_us[b][c] = lat;
                }
                if (lat < best_us[b][c]) {
                    best_us[b][c] = lat;
                    best[b][c] = rule_shapes[s];
                }
            }
        }
    }
    double w1 = now_s();
    if (bad) {
        fprintf(stderr, "sim rules: %d simulated runs failed or gave wrong results; "
                        "no rules written\n", bad);
        return 1;
    }

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (NULL == f) {
        fprintf(stderr, "sim rules: out of memory\n");
        return 1;
    }
    fprintf(f, "# written by sim rules: simulated advice\n");
    fprintf(f, "# sim rules --above %d --max-ranks %d --ppn %d --calls %d\n", above, max_ranks,
            ppn, calls);
    fprintf(f, "# model: modern (bench/sim.c, docs/perf/sim.md), 32-ary fat tree, %d rank%s "
               "per node, offload\n", ppn, 1 == ppn ? "" : "s");
    fprintf(f, "# reduce and bcast (root 0) simulated each on its own, at each band's largest "
               "size;\n# allreduce's tree goes up the reduce tree and down the bcast tree\n");
    fprintf(f, "# latency: geometric mean over 8 B, 1 KiB and 64 KiB of doubles\n");
    fprintf(f, "# candidates: knomial-2/4/8, kary-2/4/8, flat (bands of at most %d ranks); "
               "knomial-4 (the\n# default) stays unless another is strictly faster\n",
            RULE_FLAT_MAX);
    fprintf(f, "# the last band is open-ended: communicators larger than %d take the advice "
               "for %d\n# (not simulated)\n", hi[nb - 1], hi[nb - 1]);
    for (int c = 0; c < 2; ++c) {
        for (int b = 0; b < nb; ++b) {
            char bn[16], rng[32];
            shape_name(best[b][c], bn, sizeof(bn));
            if (b == nb - 1) {
                snprintf(rng, sizeof(rng), "%d+ (at %d)", lo[b], hi[b]);
            } else if (lo[b] == hi[b]) {
                snprintf(rng, sizeof(rng), "%d", lo[b]);
            } else {
                snprintf(rng, sizeof(rng), "%d-%d", lo[b], hi[b]);
            }
            fprintf(f, "# %s %s: %s %.2f us, knomial-4 %.2f us (%.2fx)\n",
                    ofl_coll_name(colls[c]), rng, bn, best_us[b][c], k4_us[b][c],
                    k4_us[b][c] / best_us[b][c]);
        }
    }
    fprintf(f, "format 1\n");
    for (int c = 0; c < 2; ++c) {
        for (int b = 0; b < nb; ++b) {
            ofl_rule_t r = { .coll = colls[c], .lo = lo[b],
                             .hi = b == nb - 1 ? INT_MAX : hi[b], .tree = best[b][c].kind,
                             .radix = best[b][c].radix, .origin = OFL_ORIGIN_SIMULATED };
            char line[OFL_RULES_LINE_MAX + 1];
            ofl_rules_format(&r, line, sizeof(line));
            fprintf(f, "%s\n", line);
        }
    }
    if (0 != fclose(f)) {
        free(text);
        fprintf(stderr, "sim rules: out of memory\n");
        return 1;
    }

    /* The text must be what the component reads: parsed here, every rule where it was
     * meant to be, before anything is written. */
    static ofl_rules_t parsed;
    char err[256] = "", why[200];
    int bad_line = 0;
    if (0 != ofl_rules_parse(text, len, &parsed, &bad_line, why, sizeof(why))) {
        snprintf(err, sizeof(err), "line %d: %s", bad_line, why);
    } else if (parsed.n != 2 * nb) {
        snprintf(err, sizeof(err), "%d rules read back, %d written", parsed.n, 2 * nb);
    }
    for (int c = 0; '\0' == err[0] && c < 2; ++c) {
        for (int b = 0; '\0' == err[0] && b < nb; ++b) {
            const ofl_rule_t *r = ofl_rules_find(&parsed, colls[c], lo[b]);
            int want_hi = b == nb - 1 ? INT_MAX : hi[b];
            if (NULL == r || r->lo != lo[b] || r->hi != want_hi
                || r->tree != (int) best[b][c].kind || r->radix != best[b][c].radix
                || r->has_policy || OFL_ORIGIN_SIMULATED != r->origin) {
                snprintf(err, sizeof(err), "the %s rule for %d ranks reads back differently",
                         ofl_coll_name(colls[c]), lo[b]);
            }
        }
    }
    if ('\0' != err[0]) {
        fprintf(stderr, "sim rules: the text does not read back as written (%s):\n", err);
        fputs(text, stderr);
        free(text);
        return 1;
    }

    FILE *dst = out ? fopen(out, "w") : stdout;
    if (NULL == dst) {
        fprintf(stderr, "sim rules: cannot write %s\n", out);
        free(text);
        return 1;
    }
    int werr = len != fwrite(text, 1, len, dst);
    werr |= out ? 0 != fclose(dst) : 0 != fflush(dst);
    free(text);
    if (werr) {
        fprintf(stderr, "sim rules: writing %s failed\n", out ? out : "the output");
        return 1;
    }
    if (out) {
        fprintf(stderr, "sim rules: %d rules for %d bands in %s (simulated in %.1f s)\n",
                2 * nb, nb, out, w1 - w0);
    }
    return 0;
}

int main(int argc, char **argv)
{
    opts_t o = { .calls = 200, .csv = NULL, .quick = 0, .max_ranks = 65536,
                 .kind = OFL_TREE_KNOMIAL, .radix = 2, .k = tianhe_topo().k,
                 .noise_prob = -1.0, .noise_us = 0.0, .host_pkt_us = -1.0 };
    if (argc < 2) {
        fprintf(stderr, "usage: sim validate|project|one|rules [options] (see bench/sim.c)\n");
        return 2;
    }
    for (int i = 2; i < argc; ++i) {
        if (!strcmp(argv[i], "--calls") && i + 1 < argc) {
            o.calls = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--csv") && i + 1 < argc) {
            o.csv = argv[++i];
        } else if (!strcmp(argv[i], "--png") && i + 1 < argc) {
            o.png = argv[++i];
        } else if (!strcmp(argv[i], "--quick")) {
            o.quick = 1;
            o.calls = 60;
        } else if (!strcmp(argv[i], "--tree") && i + 1 < argc) {
            ++i;
            o.kind = !strcmp(argv[i], "kary") ? OFL_TREE_KARY
                     : !strcmp(argv[i], "flat") ? OFL_TREE_FLAT : OFL_TREE_KNOMIAL;
        } else if (!strcmp(argv[i], "--radix") && i + 1 < argc) {
            o.radix = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--host-pkt") && i + 1 < argc) {
            o.host_pkt_us = atof(argv[++i]);
        } else if (!strcmp(argv[i], "--k") && i + 1 < argc) {
            o.k = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--noise") && i + 1 < argc) {
            /* probability,mean_us */
            if (2 != sscanf(argv[++i], "%lf,%lf", &o.noise_prob, &o.noise_us)) {
                fprintf(stderr, "sim: --noise PROB,US\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--set") && i + 1 < argc && o.nsets < 16) {
            o.sets[o.nsets++] = argv[++i];
        } else if (!strcmp(argv[i], "--max-ranks") && i + 1 < argc) {
            o.max_ranks = atoi(argv[++i]);
        }
    }
    o.self = argv[0];
    if (o.png && NULL == o.csv) {
        fprintf(stderr, "sim: --png needs --csv FILE (the chart's data)\n");
        return 2;
    }
    if (!strcmp(argv[1], "validate")) {
        return cmd_validate(&o);
    }
    if (!strcmp(argv[1], "project")) {
        return cmd_project(&o);
    }
    if (!strcmp(argv[1], "one")) {
        int given = 0;
        for (int i = 2; i < argc; ++i) {
            given |= !strcmp(argv[i], "--calls");
        }
        o.calls = given ? o.calls : 5;
        return cmd_one(argc - 2, argv + 2, &o);
    }
    if (!strcmp(argv[1], "rules")) {
        return cmd_rules(argc - 2, argv + 2, &o);
    }
    fprintf(stderr, "sim: unknown command %s\n", argv[1]);
    return 2;
}
