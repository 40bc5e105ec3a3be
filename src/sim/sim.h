/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the simulated NIC: compiled descriptor programs run by the real
 * engine (engine.h) on a NIC backend (nic.h) that lives in virtual time.
 *
 * Every rank of a simulated machine gets its own program from sched.c, its own
 * engine instance and its own sim NIC. The NIC's counters only move when a
 * discrete event (a packet's arrival) says so; a descriptor the engine fires
 * takes virtual time on its rank's executor (the NIC in offload mode, the host
 * CPU in software mode) and its packets cross a modelled network. Data really
 * moves and really combines in the ALU, so every simulated call's result is
 * checked against a reference computed without the engine.
 *
 * The machine model (ofl_sim_model_t) has few parameters, each with a physical
 * meaning; docs/perf/sim.md says where the values come from.
 */
#ifndef OFL_SIM_H
#define OFL_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "alu/alu.h"
#include "sched/program.h"
#include "sched/sched.h"

typedef struct {
    /* network */
    double link_lat_us;    /* one link, one way: cable, SerDes, link layer */
    double link_bw;        /* bytes per µs a link carries (= MB/s) */
    double hop_lat_us;     /* one switch traversal: routing, arbitration, crossbar */
    /* the NIC, executor of offloaded programs: a send unit fires descriptors and
     * builds their packets; beside it a receive unit takes arriving packets in, one
     * after the other, passing their data through the ALU into an intermediate
     * result, so that a combining descriptor needs one ALU pass more when it fires */
    double nic_desc_us;    /* per descriptor fired: trigger match, operand fetch */
    double nic_pkt_us;     /* per packet built (send unit) or taken in (receive unit) */
    double nic_alu_bw;     /* bytes per µs the ALU passes (an arriving packet's data; a
                              combining descriptor's own operand) */
    /* the host */
    double host_post_us;   /* entering the call and posting its program */
    double host_done_us;   /* offload: from the NIC's last descriptor to the host's return */
    double host_desc_us;   /* software: CPU per descriptor (matching, protocol state) */
    double host_pkt_us;    /* software: CPU per packet sent or received (the messaging stack) */
    double host_wake_us;   /* software: a packet's arrival until the host acts on it */
    double host_alu_bw;    /* software: bytes per µs the CPU combines */
    double noise_prob;     /* software: chance that a host step meets an OS detour */
    double noise_us;       /* mean length of a detour (exponentially distributed) */
    /* ranks of one node */
    double shm_lat_us;     /* one way between two ranks of a node (a cache line's trip) */
    double shm_bw;         /* bytes per µs between two ranks of a node */
} ofl_sim_model_t;

typedef enum {
    OFL_SIM_FATTREE,       /* k-ary n-tree: k nodes per leaf switch, k^l below a level-l switch */
    OFL_SIM_DRAGONFLY      /* p nodes per router, a routers per group (all-to-all), h global
                              links per router, minimal routing */
} ofl_sim_topo_kind_t;

typedef struct {
    ofl_sim_topo_kind_t kind;
    int k;                 /* fat tree */
    int p, a, h;           /* dragonfly */
    int ppn;               /* ranks per node (consecutive ranks share a node) */
    /* Ranks per socket (or NUMA domain) of a node, from hwloc or set by hand, dividing
     * ppn; 0: one level inside the node. Used by node-aware runs for a level between
     * rank and node, and by the model: ranks of one socket talk at shm_lat_us, ranks
     * of two sockets at twice that. */
    int per_socket;
} ofl_sim_topo_t;

/* Switches and links a packet from node a to node b crosses (0, 0 on one node). */
void ofl_sim_route(const ofl_sim_topo_t *topo, int a, int b, int *switches, int *links);

typedef enum {
    OFL_SIM_OFFLOAD,       /* the NIC fires descriptors on counters */
    OFL_SIM_SOFTWARE       /* every descriptor waits for the host (overhead, wake-up, noise) */
} ofl_sim_mode_t;

typedef struct {
    ofl_coll_t coll;
    int root;
    ofl_sched_params_t sched;  /* tree kind and radix, shape, slots */
    /* Node-aware: reduce to each node's leader (through each socket's leader when the
     * topology has sockets), the leaders' own program across nodes, the result back
     * down the same levels (allreduce, barrier, bcast/reduce rooted at rank 0). The
     * levels inside a node are host-driven in both modes (shared memory). */
    int hier;
    ofl_sim_mode_t mode;
    ofl_type_t type;
    ofl_op_t op;
    size_t count;          /* elements really moved and combined per rank */
    /* Bytes the timing charges per byte really moved (>= 1): the timing of a large
     * message with the same number of segments and descriptors as the real one, its
     * data scaled down so that 64k ranks fit in memory; 1 for exact runs. */
    double byte_scale;
    size_t seg_bytes;      /* segment size (really moved bytes); 0: the whole message */
    int calls;             /* calls simulated, each from time 0, latency averaged */
    uint64_t seed;         /* noise and data */
    int check;             /* compare every result with the reference */
} ofl_sim_run_t;

typedef struct {
    double mean_us;        /* per call: from time 0 until the last rank returned */
    double min_us;
    double max_us;
    uint64_t wrong;        /* result elements that differ from the reference (bits) */
    uint64_t checked;      /* result elements compared */
    uint64_t events;       /* packet arrivals simulated */
    uint64_t descs;        /* descriptors fired */
    size_t bytes;          /* memory the simulation held at its peak (buffers, programs) */
} ofl_sim_result_t;

/* Simulate `run` on nodes * topo->ppn ranks. Returns 0, or -1 (invalid arguments,
 * a program that cannot be compiled, out of memory, a call that never completes:
 * the reason in err). */
int ofl_sim(const ofl_sim_model_t *model, const ofl_sim_topo_t *topo, int nodes,
            const ofl_sim_run_t *run, ofl_sim_result_t *res, char *err, size_t errlen);

/* The value rank r contributes at element i of call c (the simulation's data, also
 * used by tests): small integers for floating types, so that every combine order
 * gives the same bits and the reference needs no tree. */
void ofl_sim_value(ofl_type_t type, int r, size_t i, int c, void *out);

#endif
