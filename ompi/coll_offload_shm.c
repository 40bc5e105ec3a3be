/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the software NIC's set-up for one communicator: the segment
 * sized to the shared-memory budget and counted against the node-wide cap,
 * created by rank 0 (anonymous, else named) and attached by the others, a
 * cross-memory read tried, and the outcome agreed by every rank. The only file
 * of the Open MPI layer that knows the backend (nic/softnic.h); everything
 * after set-up reaches the NIC through nic/nic.h.
 */
#include "coll_offload.h"
#include "coll_offload_exec.h"
#include "coll_offload_inject.h"
#include "coll_offload_setup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "glue.h"
#include "nic/softnic.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

/* The handle set-up works on (it made it: ofl_softnic_new). */
static inline ofl_softnic_t *sn_of(mca_coll_offload_module_t *m)
{
    return (ofl_softnic_t *) m->nic;
}

/* This process's part of the node-wide cap: the cap divided among the job's
 * processes on the node, so that no process needs to know what the others hold. */
static unsigned long long shm_limit(void)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    unsigned long long limit = __atomic_load_n(&c->shm_limit, __ATOMIC_RELAXED);
    if (0 != limit) {
        return limit;
    }
    unsigned long long cap = c->params.shm_cap;
    if (0 == cap) {
        struct statvfs fs;
        /* /dev/shm is where the segments live and what they exhaust */
        cap = 0 == statvfs("/dev/shm", &fs)
                  ? (unsigned long long) fs.f_blocks * (unsigned long long) fs.f_frsize / 4
                  : ~0ull;
    }
    unsigned long long procs = (unsigned long long) opal_process_info.num_local_peers + 1;
    limit = cap / procs ? cap / procs : 1;
    __atomic_store_n(&c->shm_limit, limit, __ATOMIC_RELAXED);
    return limit;
}

/* Count `share` bytes for a new communicator if they fit under this process's part
 * of the cap; 0 if they do not. */
static int shm_reserve(unsigned long long share)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    unsigned long long limit = shm_limit();
    unsigned long long held = __atomic_load_n(&c->shm_bytes, __ATOMIC_RELAXED);
    do {
        if (share > limit || held > limit - share) {
            return 0;
        }
    } while (!__atomic_compare_exchange_n(&c->shm_bytes, &held, held + share, 0,
                                          __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return 1;
}
/* Where rank 0 made the segment, as the others learn it by the fallback bcast. */
typedef struct {
    int32_t rc;             /* 0, or -errno of rank 0's create */
    int32_t pid;            /* anonymous: rank 0's process and its descriptor */
    int32_t fd;
    int32_t pad;
    char name[48];          /* named */
    uint64_t probe_addr;    /* a word of rank 0's memory, to test reading it */
    uint64_t probe_value;
} setup_msg_t;

/* What each rank says in the agreement (MIN over ranks; 1 = fine here). */
enum {
    VOTE_NIC,       /* the segment and the programs work */
    VOTE_GET,       /* cross-memory reads of rank 0 work */
    VOTE_ANON,      /* the anonymous segment could be reopened (else: use a name) */
    VOTE_CAP,       /* this rank's share fits under its part of coll_offload_shm_cap */
    VOTE_CORES,     /* this node has a core for every rank Open MPI put on it */
    VOTE_REPSUM,    /* reproducible sums are on here */
    VOTE_PLAIN,     /* ... off here (both 0 after MIN: the ranks disagree) */
    VOTE_RULES,     /* the rules file read here (a fold of its hash; 0: none) */
    VOTE_RULES_NOT, /* its complement: MIN of it is ~MIN of the above only if all agree */
    VOTE_COUNT
};

/* Names of named segments whose creator was killed inside their window
 * (before the last attach) go at a later named set-up on the node: once per
 * process (reading /dev/shm costs some 30 us here), and only where names are
 * used at all. */
static void sweep_once(mca_coll_offload_component_t *c)
{
    static int swept_already = 0;
    if (swept_already) {
        return;
    }
    swept_already = 1;
    int swept = ofl_softnic_sweep("coll_offload.");
    if (swept > 0) {
        opal_output_verbose(1, c->output,
                            "coll:offload: removed %d segment name(s) of processes that no "
                            "longer exist from /dev/shm",
                            swept);
    }
}

/* Rank 0's part of an attempt: make the segment and say where it is. */
static void attempt_create(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                           int named, size_t segsize, setup_msg_t *msg, int *fd,
                           int vote[VOTE_COUNT])
{
    static unsigned serial = 0;
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    const mca_coll_offload_params_t *p = &c->params;
    if (named) {
        sweep_once(c);
        snprintf(msg->name, sizeof(msg->name), "/coll_offload.%d.%u.%u", (int) getpid(),
                 OFL_COMM_CID(comm), serial++);
        msg->rc = ofl_softnic_create(sn_of(m), msg->name, m->size, 0, p->slots, segsize);
    } else {
        msg->rc = ofl_softnic_create_anon(sn_of(m), fd, m->size, 0, p->slots, segsize);
        msg->pid = (int32_t) getpid();
        msg->fd = *fd;
    }
    if (0 == msg->rc && mca_coll_offload_inject(named ? OFL_INJECT_NAME : OFL_INJECT_CREATE, 0)) {
        msg->rc = -EIO;
    }
    if (0 != msg->rc) {
        opal_output_verbose(1, c->output,
                            "coll:offload: %s: cannot create the %s segment (%zu bytes): %s",
                            comm->c_name, named ? "named" : "anonymous",
                            ofl_softnic_bytes(m->size, p->slots, segsize), strerror(-msg->rc));
        /* A kernel without memfd may still have /dev/shm: try a name. */
        vote[named ? VOTE_NIC : VOTE_ANON] = 0;
    }
}

/* Single-copy reads need cross-memory attach (ptrace rules may forbid it): try
 * one on rank 0, which waits in the agreement, so the word is still there. */
static void attempt_probe(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                          const setup_msg_t *msg, int vote[VOTE_COUNT])
{
    int prc = ofl_softnic_probe_get(sn_of(m), 0, (const void *) msg->probe_addr,
                                    msg->probe_value);
    if (0 == prc && mca_coll_offload_inject(OFL_INJECT_PROBE, m->rank)) {
        prc = -EPERM;
    }
    if (0 != prc) {
        opal_output_verbose(1, mca_coll_offload_component.output,
                            "coll:offload: %s: cannot read a peer's memory (%s): "
                            "no single-copy bcast",
                            comm->c_name, strerror(-prc));
        vote[VOTE_GET] = 0;
    }
}

/* The other ranks' part: attach where rank 0 said. */
static void attempt_attach(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                           int named, size_t segsize, const setup_msg_t *msg,
                           int vote[VOTE_COUNT])
{
    const mca_coll_offload_params_t *p = &mca_coll_offload_component.params;
    int output = mca_coll_offload_component.output;
    int arc;
    if (named) {
        arc = ofl_softnic_attach_unlink(sn_of(m), msg->name, m->size, m->rank, p->slots, segsize);
    } else if (mca_coll_offload_inject(OFL_INJECT_PROC, m->rank)) {
        arc = -EACCES;
    } else {
        arc = ofl_softnic_attach_anon(sn_of(m), msg->pid, msg->fd, m->size, m->rank, p->slots,
                                      segsize);
    }
    if (0 == arc && mca_coll_offload_inject(OFL_INJECT_ATTACH, m->rank)) {
        arc = -EIO;
    }
    if (!named && (-EACCES == arc || -EPERM == arc || -ENOENT == arc)) {
        /* Refused, or no such /proc entry (no /proc, another pid namespace): a
         * name may still work. */
        opal_output_verbose(1, output,
                            "coll:offload: %s: cannot reopen rank 0's segment through "
                            "/proc (%s): a named segment is used",
                            comm->c_name, strerror(-arc));
        vote[VOTE_ANON] = 0;
    } else if (0 != arc) {
        opal_output_verbose(1, output, "coll:offload: %s: cannot attach the segment: %s",
                            comm->c_name, strerror(-arc));
        vote[VOTE_NIC] = 0;
    } else {
        attempt_probe(m, comm, msg, vote);
    }
}

/* One try at the segment, anonymous or named, ending in the agreement. Every
 * rank takes part in both collectives whatever failed before on it, so that
 * all reach the same verdict (all_votes); rank 0 closes its descriptor or
 * removes the name right after the agreement, whatever it says. Returns the
 * agreement's error if it failed here (then this rank does not know the
 * verdict). A failed step leaves what it made for the caller's error exit. */
static int setup_attempt(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                         int named, int local_ok, int cap_ok, size_t segsize,
                         int all_votes[VOTE_COUNT])
{
    setup_msg_t msg;
    memset(&msg, 0, sizeof(msg));
    int repsum = mca_coll_offload_repsum_asked(comm);
    uint64_t digest = m->rules_digest;
    int fold = NULL != m->rules ? (int) ((digest ^ (digest >> 32)) & 0x7fffffff) : 0;
    int vote[VOTE_COUNT] = { local_ok, 1, 1, cap_ok, !ofl_glue_oversubscribed(), repsum,
                             !repsum, fold, ~fold };
    int fd = -1;
    volatile uint64_t probe = ((uint64_t) getpid() << 32) ^ 0x6f666c6f6164ull;

    if (0 == m->rank && NULL == m->nic) {
        msg.rc = -ENOMEM;
    } else if (0 == m->rank) {
        attempt_create(m, comm, named, segsize, &msg, &fd, vote);
        msg.probe_addr = (uint64_t) (uintptr_t) &probe;
        msg.probe_value = probe;
    }
    int rc = m->below.bcast(&msg, (int) sizeof(msg), MPI_BYTE, 0, comm, m->below.bcast_module);
    if (OMPI_SUCCESS == rc && mca_coll_offload_inject(OFL_INJECT_BCAST, m->rank)) {
        rc = OMPI_ERROR;
    }
    if (OMPI_SUCCESS != rc) {
        /* What arrived (if anything) cannot be trusted; the agreement below
         * still runs, so that nobody is left waiting in it. */
        opal_output_verbose(1, mca_coll_offload_component.output,
                            "coll:offload: %s: the set-up bcast failed here (%d)", comm->c_name,
                            rc);
        vote[VOTE_NIC] = 0;
    } else if (0 != m->rank && 0 == msg.rc && NULL != m->nic) {
        attempt_attach(m, comm, named, segsize, &msg, vote);
    }
    rc = m->below.allreduce(vote, all_votes, VOTE_COUNT, MPI_INT, MPI_MIN, comm,
                           m->below.allreduce_module);
    if (OMPI_SUCCESS == rc && mca_coll_offload_inject(OFL_INJECT_AGREE, m->rank)) {
        rc = OMPI_ERROR;
    }
    if (0 == m->rank) {
        /* Everybody who could attach has: the descriptor or the name (if the
         * last attacher has not removed it) goes, whatever was decided. */
        if (fd >= 0) {
            close(fd);
        }
        if (named && '\0' != msg.name[0]) {
            ofl_softnic_unlink(msg.name);
        }
    }
    return rc;
}

/* Every rank's mailboxes must fit the budget, so the slots are cut for the rank
 * that receives on the most streams (*most, a fallback allreduce). Then this
 * rank's share is reserved against the node-wide cap (*cap_ok 0 if it does not
 * fit). *segsize stays 0 when the streams do not fit the budget at all. */
static int setup_size(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                      int streams, size_t *segsize, size_t *share, int *cap_ok, int *most)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    const mca_coll_offload_params_t *p = &c->params;
    *most = 0;
    int rc = m->below.allreduce(&streams, most, 1, MPI_INT, MPI_MAX, comm,
                               m->below.allreduce_module);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    *segsize = ofl_softnic_fit(m->size, p->slots, *most < 0 ? m->size * OFL_CHANNELS : *most,
                               p->shm_budget,
                               p->segment_size ? p->segment_size : OFL_SEGMENT_MIN_BYTES);
    if (0 == *segsize) {
        if (0 == m->rank) {
            opal_output(c->output,
                        "coll:offload: %s: %d ranks receiving on up to %d streams do not "
                        "fit coll_offload_shm_budget (%zu bytes per rank); this "
                        "communicator uses the fallback component",
                        comm->c_name, m->size, *most, p->shm_budget);
        }
        return OMPI_SUCCESS;
    }
    *share = ofl_softnic_share(m->size, p->slots, *most, *segsize);
    if (shm_reserve(*share)) {
        m->shm_share = *share;
    } else {
        *cap_ok = 0;
    }
    return OMPI_SUCCESS;
}

/* Some rank's share does not fit under the cap: the communicator costs no
 * shared memory and every rank falls back alike. */
static void setup_refused(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                          size_t share)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    __atomic_fetch_add(&c->shm_refused, 1ull, __ATOMIC_RELAXED);
    if (0 == m->rank && !opal_atomic_swap_32(&c->shm_warned, 1)) {
        opal_output(c->output,
                    "coll:offload: %s (%d ranks): its %zu bytes of shared memory per rank "
                    "would pass coll_offload_shm_cap (%llu bytes per process on this "
                    "node); it and every communicator past the cap use the fallback "
                    "component (warned once; raise coll_offload_shm_cap or lower "
                    "coll_offload_shm_budget)",
                    comm->c_name, m->size, share, shm_limit());
    }
}

/* Everybody is attached. */
static void setup_ready(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                        int named, size_t segsize, int most, size_t share,
                        const int all_votes[VOTE_COUNT])
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    const mca_coll_offload_params_t *p = &c->params;
    /* From here on the pids come from this rank's own copy, whatever a peer
     * writes into the header. Every rank wrote its pid before the agreement,
     * so this fails only on a corrupt header; the communicator still runs
     * alike on every rank, reading the header's pids (each checked where it is
     * used). */
    if (0 != ofl_softnic_seal(sn_of(m))) {
        opal_show_help(OFL_GLUE_HELP_FILE, "corrupt-header", true, comm->c_name);
    }
    m->single_copy = all_votes[VOTE_GET];
    m->choice.crowded = !all_votes[VOTE_CORES];
    m->repsum_mixed = !all_votes[VOTE_REPSUM] && !all_votes[VOTE_PLAIN];
    if (m->choice.crowded && p->crowded_max >= 0) {
        opal_output_verbose(1, c->output,
                            "coll:offload: %s: more ranks than cores on the node: reduces and "
                            "bcasts of up to %d bytes go to the layer below, barriers run the "
                            "tree (coll_offload_crowded_max)",
                            comm->c_name, p->crowded_max);
    }
    opal_output_verbose(1, c->output,
                        "coll:offload: %s (cid %u, %d ranks): software NIC ready (%s segment), "
                        "%zu-byte segments, %d slots/edge, %d inbound streams at most: %zu "
                        "bytes of shared memory per rank (budget %zu)",
                        comm->c_name, OFL_COMM_CID(comm), m->size,
                        named ? "named" : "anonymous", segsize, p->slots, most, share,
                        p->shm_budget);
}

/* Collective: every rank of comm calls this at the same (first offloaded) call,
 * after compiling its programs (local_ok) that receive on `streams` streams.
 * Rank 0 creates an anonymous segment, where it is travels by the fallback
 * bcast, the others reopen it through /proc, and a fallback allreduce agrees on
 * the outcome (where the reopening is refused, once more with a named segment).
 * Every outcome is the same on every rank: OMPI_SUCCESS with *ready 1 (m->nic
 * attached) or 0 (everybody falls back; the caller releases m->nic); or the
 * error of an agreement that failed here (this rank does not know the verdict). */
int mca_coll_offload_shm_setup(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                               int local_ok, int streams, int *ready)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    int all_votes[VOTE_COUNT] = { 0 };
    size_t segsize = 0, share = 0;
    int cap_ok = 1, most = 0, named = 0;
    *ready = 0;
    ofl_softnic_t *sn = ofl_softnic_new();
    if (NULL == sn) {
        local_ok = 0;   /* still takes part in the agreement */
    }
    m->nic = NULL != sn ? &sn->base : NULL;
    int rc = setup_size(m, comm, streams, &segsize, &share, &cap_ok, &most);
    if (OMPI_SUCCESS != rc || 0 == segsize) {
        return rc;
    }
    rc = setup_attempt(m, comm, named, local_ok, cap_ok, segsize, all_votes);
    if (OMPI_SUCCESS == rc && all_votes[VOTE_NIC] && all_votes[VOTE_CAP]
        && !all_votes[VOTE_ANON]) {
        ofl_softnic_detach(sn);
        named = 1;
        rc = setup_attempt(m, comm, named, local_ok, cap_ok, segsize, all_votes);
    }
    mca_coll_offload_inject_setup_done();
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (!all_votes[VOTE_CAP]) {
        setup_refused(m, comm, share);
        return OMPI_SUCCESS;
    }
    if (all_votes[VOTE_RULES_NOT] != ~all_votes[VOTE_RULES]) {
        /* Their trees and policies could differ: nothing is safe to run here. */
        if (0 == m->rank) {
            opal_show_help(OFL_GLUE_HELP_FILE, "rules-differ", true, comm->c_name);
        }
        return OMPI_SUCCESS;
    }
    if (!all_votes[VOTE_NIC] || !all_votes[VOTE_ANON]) {
        if (0 == m->rank) {
            opal_output(c->output,
                        "coll:offload: %s: software NIC set-up failed on some rank; this "
                        "communicator uses the fallback component",
                        comm->c_name);
        }
        return OMPI_SUCCESS;
    }
    setup_ready(m, comm, named, segsize, most, share, all_votes);
    *ready = 1;
    return OMPI_SUCCESS;
}
