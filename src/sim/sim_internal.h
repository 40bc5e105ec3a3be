/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the simulated NIC's private parts, shared by its files:
 *   sim_events.c  the event queue (virtual time) and the random numbers
 *   sim_net.c     the machine: topologies, routes and a packet's trip
 *   sim_nic.c     the NIC backend operations the engine calls (nic.h)
 *   sim_exec.c    the executors: descriptors charged, packets received, stages
 *   sim_check.c   the data and the reference every result is compared with
 *   sim.c         set-up (groups, node-aware levels) and the run of the calls
 */
#ifndef OFL_SIM_INTERNAL_H
#define OFL_SIM_INTERNAL_H

#include "engine/engine.h"
#include "nic/nic.h"
#include "sim/sim.h"

#include <stddef.h>
#include <stdint.h>

#define SIM_MAX_STAGES 8

typedef struct {
    int rank;                            /* the peer's rank in the group */
    uint64_t data[OFL_CHANNELS];         /* DATA(peer, chan) at me */
    uint64_t credit[OFL_CHANNELS];       /* CREDIT(peer, chan) at me */
    unsigned char *mbox[OFL_CHANNELS];   /* my inbox of stream (peer -> me, chan) */
    uint64_t seq_in[OFL_CHANNELS];       /* the engine's edge sequences, kept per peer */
    uint64_t seq_out[OFL_CHANNELS];
} sim_peer_t;

typedef struct {
    int cnt;
    int peer;
    int chan;
    uint64_t item;
    uint64_t len;
} sim_bump_t;

struct sim;
struct sim_group;

typedef struct {
    ofl_nic_t base;                      /* first: the engine sees an ofl_nic_t */
    struct sim *sim;
    struct sim_group *group;
    int global;                          /* rank in the whole machine */
    int npeers;
    sim_peer_t *peers;                   /* sorted by rank */
    ofl_program_t prog;
    ofl_inst_t inst;
    int posted;
    int done;
    double last_end;                     /* end of the last descriptor fired this call */
    sim_bump_t *log;                     /* bumps of the current engine round */
    int nlog;
    int caplog;
} sim_nic_t;

typedef struct sim_group {
    int size;
    int *members;                        /* global ranks, by group rank */
    int host;                            /* executed by the host (1) or the NIC (0) */
    sim_nic_t *nics;
} sim_group_t;

typedef struct {
    void *send;
    void *recv;
    double exec_free;                    /* the rank's executor (offload: the NIC's send unit,
                                            software: the host CPU) is busy until then */
    double recv_unit_free;               /* offload: the NIC's receive unit is busy until then */
    double finish;                       /* the call returned at this rank */
    int nstages;
    sim_nic_t *stage[SIM_MAX_STAGES];
    const void *stage_send[SIM_MAX_STAGES];
    void *stage_recv[SIM_MAX_STAGES];
    uint64_t rng;
} sim_rank_t;

typedef struct {
    double t;
    uint64_t seq;
    sim_nic_t *nic;
    int peer;                            /* index into nic->peers; -1: start the stage */
    int cnt;
    int chan;
    uint64_t value;
    double bytes;                        /* payload the packet carries (timing bytes) */
    int received;                        /* offload: the receive unit has taken it in */
} sim_event_t;

typedef struct sim {
    const ofl_sim_model_t *m;
    const ofl_sim_topo_t *topo;
    const ofl_sim_run_t *run;
    int nranks;
    int nnodes;
    sim_rank_t *ranks;
    double *tx_free;                     /* per node: the NIC's port toward the network */
    double *rx_free;                     /* per node: from the network */
    int ngroups;
    sim_group_t *groups;
    sim_event_t *heap;
    size_t nheap;
    size_t capheap;
    uint64_t seq;
    uint64_t events;
    uint64_t descs;
    size_t bytes;
    /* The engine keeps a rank's edge sequences in arrays indexed by comm rank; with
     * 64k ranks one such array per rank would not fit, so every rank keeps its
     * peers' entries and a post borrows this one shared pair of arrays. */
    ofl_edges_t edges;
    size_t slot_bytes;
    size_t count;                        /* elements per call (0 for a barrier) */
    ofl_alu_fn fn;
    size_t elem;
    int failed;
    char *err;
    size_t errlen;
} sim_t;

/* Returned by put_ref/get through a mailbox slot: where a by-reference payload is. */
typedef struct {
    const void *addr;
    uint64_t len;
} sim_ref_t;

/* sim.c */
void sim_fail(sim_t *s, const char *why);
void *sim_alloc(sim_t *s, size_t n);

/* sim_events.c */
void sim_ev_push(sim_t *s, sim_event_t ev);
sim_event_t sim_ev_pop(sim_t *s);
uint64_t sim_mix64(uint64_t z);
double sim_uniform(uint64_t *state);

/* sim_net.c */
int sim_same_node(const sim_t *s, int ga, int gb);
void sim_send_packet(sim_t *s, sim_nic_t *n, const sim_bump_t *b, double t);

/* sim_nic.c */
extern const ofl_nic_ops_t sim_nic_ops;
sim_peer_t *sim_find_peer(sim_nic_t *n, int rank);

/* sim_exec.c */
void sim_start_stage(sim_t *s, sim_nic_t *n, int stage, double t);
void sim_post(sim_t *s, sim_nic_t *n, int stage, double t);
void sim_arrive(sim_t *s, sim_event_t ev);

/* sim_check.c */
int sim_ref_combine(ofl_op_t op, ofl_type_t type, void *acc, const void *v);
void sim_check_call(sim_t *s, int c, uint64_t *wrong, uint64_t *checked);

#endif
