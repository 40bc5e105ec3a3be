/*
 * coll/offload — the per-communicator module: enable (save the layer below),
 * lazy collective set-up of the software NIC and the programs, teardown.
 */
#include "coll_offload.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "coll_offload_queue.h"
#include "glue.h"
#include "opal/util/output.h"

static int offload_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm);
static int offload_disable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm);

static void module_construct(mca_coll_offload_module_t *m)
{
    memset((char *) m + sizeof(m->super), 0, sizeof(*m) - sizeof(m->super));
    m->super.coll_module_enable = offload_enable;
    m->super.coll_module_disable = offload_disable;
    m->super.coll_allreduce = mca_coll_offload_allreduce;
    m->super.coll_reduce = mca_coll_offload_reduce;
    m->super.coll_bcast = mca_coll_offload_bcast;
    m->super.coll_barrier = mca_coll_offload_barrier;
    m->super.coll_iallreduce = mca_coll_offload_iallreduce;
    m->super.coll_ireduce = mca_coll_offload_ireduce;
    m->super.coll_ibcast = mca_coll_offload_ibcast;
    m->super.coll_ibarrier = mca_coll_offload_ibarrier;
    m->super.coll_allreduce_init = mca_coll_offload_allreduce_init;
    m->super.coll_reduce_init = mca_coll_offload_reduce_init;
    m->super.coll_bcast_init = mca_coll_offload_bcast_init;
    m->super.coll_barrier_init = mca_coll_offload_barrier_init;
    mca_coll_offload_passthru_install(&m->super);
    mca_coll_offload_queue_module_init(m);
    mca_coll_offload_wrap_ops_retain();
}

_Static_assert(offsetof(mca_coll_offload_module_t, below)
                   == offsetof(mca_coll_offload_base_module_t, below),
               "the pass-through entries find the layer below at the same place in both modules");

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

static void release_nic(mca_coll_offload_module_t *m)
{
    if (0 != m->shm_share) {
        __atomic_fetch_sub(&mca_coll_offload_component.shm_bytes,
                           (unsigned long long) m->shm_share, __ATOMIC_RELAXED);
        m->shm_share = 0;
    }
    ofl_softnic_detach(&m->nic);
    ofl_program_free(&m->allreduce);
    ofl_program_free(&m->barrier);
    ofl_program_free(&m->allreduce_x);
    ofl_program_free(&m->allreduce_s);
    ofl_program_free(&m->barrier_x);
    for (int r = 0; r < m->size && NULL != m->reduce; ++r) {
        ofl_program_free(&m->reduce[r]);
    }
    for (int r = 0; r < m->size && NULL != m->bcast; ++r) {
        ofl_program_free(&m->bcast[r]);
    }
    for (int r = 0; r < m->size && NULL != m->bcast_get; ++r) {
        ofl_program_free(&m->bcast_get[r]);
    }
    free(m->reduce);
    free(m->bcast);
    free(m->bcast_get);
    m->reduce = m->bcast = m->bcast_get = NULL;
    ofl_edges_fini(&m->edges);
}

static void module_destruct(mca_coll_offload_module_t *m)
{
    /* No instance is outstanding (each holds a reference on us); after this no
     * executor can reach the module. */
    mca_coll_offload_queue_module_fini(m);
    release_nic(m);
    free(m->pack);
    m->pack = NULL;
    mca_coll_offload_repsum_fini(&m->repsum);
    mca_coll_offload_below_release(&m->below);
    mca_coll_offload_wrap_ops_release();
}

OBJ_CLASS_INSTANCE(mca_coll_offload_module_t, mca_coll_base_module_t, module_construct,
                   module_destruct);

static int offload_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_offload_module_t *m = (mca_coll_offload_module_t *) module;
    /* Save every function we replace before touching anything: comm->c_coll holds
     * exactly the layer below us right now. */
    if (OMPI_SUCCESS != mca_coll_offload_below_save(&m->below, comm)) {
        opal_output_verbose(1, mca_coll_offload_component.output,
                            "coll:offload: %s: no component below to fall back to; disabled",
                            comm->c_name);
        return OMPI_ERROR;
    }
    /* Nonblocking and persistent forms fall back to the layer below's own; where
     * it has none we do not offer ours (the call fails as it would without us,
     * instead of having nowhere to go). */
    mca_coll_offload_below_trim(&m->super, &m->below);
    return OMPI_SUCCESS;
}

/* Called once per slot we fill; all state goes with the destructor. */
static int offload_disable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    (void) module;
    (void) comm;
    return OMPI_SUCCESS;
}

static int compile_all(mca_coll_offload_module_t *m)
{
    const mca_coll_offload_params_t *p = &mca_coll_offload_component.params;
    ofl_sched_params_t sp = {
        .reduce_kind = (ofl_tree_kind_t) p->reduce_tree,
        .reduce_radix = p->reduce_radix,
        .bcast_kind = (ofl_tree_kind_t) p->bcast_tree,
        .bcast_radix = p->bcast_radix,
        .slots = p->slots,
    };
    if (0 != ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, m->rank, m->size, &sp, &m->allreduce)
        || 0 != ofl_sched_compile(OFL_COLL_BARRIER, 0, m->rank, m->size, &sp, &m->barrier)) {
        return -1;
    }
    if (m->size <= p->exchange_max_ranks && m->size <= OFL_TREE_MAX_CHILDREN + 1) {
        sp.shape = OFL_SCHED_EXCHANGE;
        if (0 != ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, m->rank, m->size, &sp,
                                   &m->allreduce_x)
            || 0 != ofl_sched_compile(OFL_COLL_BARRIER, 0, m->rank, m->size, &sp,
                                      &m->barrier_x)) {
            return -1;
        }
    }
    if (m->size > 1 && m->size <= OFL_TREE_MAX_CHILDREN + 1) {
        sp.shape = OFL_SCHED_SPLIT;
        if (0 != ofl_sched_compile(OFL_COLL_ALLREDUCE, 0, m->rank, m->size, &sp,
                                   &m->allreduce_s)) {
            return -1;
        }
    }
    sp.shape = OFL_SCHED_TREE;
    m->reduce = calloc((size_t) m->size, sizeof(*m->reduce));
    m->bcast = calloc((size_t) m->size, sizeof(*m->bcast));
    m->bcast_get = calloc((size_t) m->size, sizeof(*m->bcast_get));
    if (NULL == m->reduce || NULL == m->bcast || NULL == m->bcast_get) {
        return -1;
    }
    for (int r = 0; r < m->size; ++r) {
        if (0 != ofl_sched_compile(OFL_COLL_REDUCE, r, m->rank, m->size, &sp, &m->reduce[r])
            || 0 != ofl_sched_compile(OFL_COLL_BCAST, r, m->rank, m->size, &sp, &m->bcast[r])) {
            return -1;
        }
        sp.byref = 1;
        if (0 != ofl_sched_compile(OFL_COLL_BCAST, r, m->rank, m->size, &sp, &m->bcast_get[r])) {
            return -1;
        }
        sp.byref = 0;
    }
    return 0;
}

/* Whether this rank receives on stream (peer, chan) in some program: each such
 * stream is mailbox memory of the segment. */
static void mark_inbound(const ofl_program_t *prog, unsigned char *in)
{
    for (int i = 0; i < prog->npeers && NULL != prog->use_in; ++i) {
        for (int ch = 0; ch < OFL_CHANNELS; ++ch) {
            if (prog->use_in[i * OFL_CHANNELS + ch].per_round > 0) {
                in[prog->peers[i] * OFL_CHANNELS + ch] = 1;
            }
        }
    }
}

/* Distinct streams this rank receives on over all its compiled programs, or -1. */
static int inbound_streams(const mca_coll_offload_module_t *m)
{
    unsigned char *in = calloc((size_t) m->size * OFL_CHANNELS, 1);
    if (NULL == in) {
        return -1;
    }
    const ofl_program_t *one[] = { &m->allreduce, &m->barrier, &m->allreduce_x,
                                   &m->allreduce_s, &m->barrier_x };
    for (size_t k = 0; k < sizeof(one) / sizeof(one[0]); ++k) {
        mark_inbound(one[k], in);
    }
    for (int r = 0; r < m->size; ++r) {
        mark_inbound(&m->reduce[r], in);
        mark_inbound(&m->bcast[r], in);
        mark_inbound(&m->bcast_get[r], in);
    }
    int n = 0;
    for (int k = 0; k < m->size * OFL_CHANNELS; ++k) {
        n += in[k];
    }
    free(in);
    return n;
}

static void dump_programs(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (NULL == f) {
        return;
    }
    fprintf(f, "coll:offload: %s (cid %u) rank %d programs:\n", comm->c_name,
            OFL_COMM_CID(comm), m->rank);
    ofl_program_dump(&m->allreduce, f);
    if (m->allreduce_x.ndesc > 0) {
        ofl_program_dump(&m->allreduce_x, f);
    }
    if (m->allreduce_s.ndesc > 0) {
        ofl_program_dump(&m->allreduce_s, f);
    }
    ofl_program_dump(&m->reduce[0], f);
    ofl_program_dump(&m->bcast[0], f);
    fclose(f);
    opal_output(mca_coll_offload_component.output, "%s", text);
    free(text);
}

/* coll_offload_inject, parsed (tests only). */
static const char *const inject_names[OFL_INJECT_COUNT] = {
    [OFL_INJECT_NONE] = "",
    [OFL_INJECT_CREATE] = "create",
    [OFL_INJECT_NAME] = "name",
    [OFL_INJECT_BCAST] = "bcast",
    [OFL_INJECT_PROC] = "proc",
    [OFL_INJECT_ATTACH] = "attach",
    [OFL_INJECT_PROBE] = "probe",
    [OFL_INJECT_COMPILE] = "compile",
    [OFL_INJECT_AGREE] = "agree",
    [OFL_INJECT_STAGE] = "stage",
    [OFL_INJECT_HIER] = "hier",
};

#define INJECT_MAX 4

static struct {
    struct {
        ofl_inject_t step;
        int rank;
        int kill;
    } at[INJECT_MAX];
    int n;
    int setups;     /* set-ups finished in this process */
    int stages;     /* staging allocations tried in this process */
} inject;

/* One STEP:RANK[:kill] of the list; 0 or -1. */
static int inject_parse_one(const char *text, size_t len)
{
    const char *colon = memchr(text, ':', len);
    if (NULL == colon || INJECT_MAX == inject.n) {
        return -1;
    }
    ofl_inject_t step = OFL_INJECT_NONE;
    for (int k = OFL_INJECT_NONE + 1; k < OFL_INJECT_COUNT; ++k) {
        if (strlen(inject_names[k]) == (size_t) (colon - text)
            && 0 == strncmp(text, inject_names[k], (size_t) (colon - text))) {
            step = (ofl_inject_t) k;
        }
    }
    char rest[32];
    size_t rlen = len - (size_t) (colon + 1 - text);
    if (OFL_INJECT_NONE == step || 0 == rlen || rlen >= sizeof(rest)) {
        return -1;
    }
    memcpy(rest, colon + 1, rlen);
    rest[rlen] = '\0';
    char *end = NULL;
    long rank = strtol(rest, &end, 10);
    int kill = 0 == strcmp(end, ":kill");
    if (end == rest || rank < 0 || rank > INT32_MAX || (!kill && '\0' != *end)) {
        return -1;
    }
    inject.at[inject.n].step = step;
    inject.at[inject.n].rank = (int) rank;
    inject.at[inject.n].kill = kill;
    inject.n++;
    return 0;
}

int mca_coll_offload_inject_parse(const char *text)
{
    inject.n = 0;
    while (NULL != text && '\0' != *text) {
        const char *comma = strchr(text, ',');
        size_t len = NULL != comma ? (size_t) (comma - text) : strlen(text);
        if (0 != inject_parse_one(text, len)) {
            inject.n = 0;
            return -1;
        }
        text = NULL != comma ? comma + 1 : text + len;
    }
    return 0;
}

int mca_coll_offload_inject(ofl_inject_t step, int rank)
{
    if (OPAL_LIKELY(0 == inject.n)) {
        return 0;
    }
    /* Only the first set-up and the first staging, on every rank alike:
     * communicators made afterwards must work. */
    if (OFL_INJECT_STAGE == step ? 0 != inject.stages++ : 0 != inject.setups) {
        return 0;
    }
    for (int i = 0; i < inject.n; ++i) {
        if (step != inject.at[i].step || rank != inject.at[i].rank) {
            continue;
        }
        opal_output(0, "coll:offload: coll_offload_inject: %s fails on rank %d%s",
                    inject_names[step], rank, inject.at[i].kill ? " (SIGKILL)" : "");
        if (inject.at[i].kill) {
            raise(SIGKILL);
        }
        return 1;
    }
    return 0;
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
    static unsigned serial = 0;
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    const mca_coll_offload_params_t *p = &c->params;
    setup_msg_t msg;
    memset(&msg, 0, sizeof(msg));
    int vote[VOTE_COUNT] = { local_ok, 1, 1, cap_ok };
    int fd = -1;
    volatile uint64_t probe = ((uint64_t) getpid() << 32) ^ 0x6f666c6f6164ull;

    if (0 == m->rank) {
        if (named) {
            sweep_once(c);
            snprintf(msg.name, sizeof(msg.name), "/coll_offload.%d.%u.%u", (int) getpid(),
                     OFL_COMM_CID(comm), serial++);
            msg.rc = ofl_softnic_create(&m->nic, msg.name, m->size, 0, p->slots, segsize);
        } else {
            msg.rc = ofl_softnic_create_anon(&m->nic, &fd, m->size, 0, p->slots, segsize);
            msg.pid = (int32_t) getpid();
            msg.fd = fd;
        }
        if (0 == msg.rc
            && mca_coll_offload_inject(named ? OFL_INJECT_NAME : OFL_INJECT_CREATE, 0)) {
            msg.rc = -EIO;
        }
        msg.probe_addr = (uint64_t) (uintptr_t) &probe;
        msg.probe_value = probe;
        if (0 != msg.rc) {
            opal_output_verbose(1, c->output,
                                "coll:offload: %s: cannot create the %s segment (%zu bytes): %s",
                                comm->c_name, named ? "named" : "anonymous",
                                ofl_softnic_bytes(m->size, p->slots, segsize),
                                strerror(-msg.rc));
            /* A kernel without memfd may still have /dev/shm: try a name. */
            vote[named ? VOTE_NIC : VOTE_ANON] = 0;
        }
    }
    int rc = m->below.bcast(&msg, (int) sizeof(msg), MPI_BYTE, 0, comm, m->below.bcast_module);
    if (OMPI_SUCCESS == rc && mca_coll_offload_inject(OFL_INJECT_BCAST, m->rank)) {
        rc = OMPI_ERROR;
    }
    if (OMPI_SUCCESS != rc) {
        /* What arrived (if anything) cannot be trusted; the agreement below
         * still runs, so that nobody is left waiting in it. */
        opal_output_verbose(1, c->output, "coll:offload: %s: the set-up bcast failed here (%d)",
                            comm->c_name, rc);
        vote[VOTE_NIC] = 0;
    } else if (0 != m->rank && 0 == msg.rc) {
        int arc;
        if (named) {
            arc = ofl_softnic_attach_unlink(&m->nic, msg.name, m->size, m->rank, p->slots,
                                            segsize);
        } else if (mca_coll_offload_inject(OFL_INJECT_PROC, m->rank)) {
            arc = -EACCES;
        } else {
            arc = ofl_softnic_attach_anon(&m->nic, msg.pid, msg.fd, m->size, m->rank, p->slots,
                                          segsize);
        }
        if (0 == arc && mca_coll_offload_inject(OFL_INJECT_ATTACH, m->rank)) {
            arc = -EIO;
        }
        if (!named && (-EACCES == arc || -EPERM == arc || -ENOENT == arc)) {
            /* Refused, or no such /proc entry (no /proc, another pid
             * namespace): a name may still work. */
            opal_output_verbose(1, c->output,
                                "coll:offload: %s: cannot reopen rank 0's segment through "
                                "/proc (%s): a named segment is used",
                                comm->c_name, strerror(-arc));
            vote[VOTE_ANON] = 0;
        } else if (0 != arc) {
            opal_output_verbose(1, c->output, "coll:offload: %s: cannot attach the segment: %s",
                                comm->c_name, strerror(-arc));
            vote[VOTE_NIC] = 0;
        } else {
            /* Single-copy reads need cross-memory attach (ptrace rules may
             * forbid it): try one on rank 0, which waits in the agreement
             * below, so the word is still there. */
            int prc = ofl_softnic_probe_get(&m->nic, 0, (const void *) msg.probe_addr,
                                            msg.probe_value);
            if (0 == prc && mca_coll_offload_inject(OFL_INJECT_PROBE, m->rank)) {
                prc = -EPERM;
            }
            if (0 != prc) {
                opal_output_verbose(1, c->output,
                                    "coll:offload: %s: cannot read a peer's memory (%s): "
                                    "no single-copy bcast",
                                    comm->c_name, strerror(-prc));
                vote[VOTE_GET] = 0;
            }
        }
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

/* Collective: every rank of comm calls this at the same (first offloaded) call.
 * Rank 0 creates an anonymous segment, where it is travels by the fallback
 * bcast, the others reopen it through /proc, and a fallback allreduce agrees on
 * the outcome (where the reopening is refused, once more with a named segment).
 * Every failure ends in the one error exit below, on every rank alike. */
int mca_coll_offload_setup(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    const mca_coll_offload_params_t *p = &c->params;
    int all_votes[VOTE_COUNT] = { 0 };
    int local_ok = 0 == ofl_edges_init(&m->edges, m->size) && 0 == compile_all(m);
    if (local_ok && mca_coll_offload_inject(OFL_INJECT_COMPILE, m->rank)) {
        local_ok = 0;
    }
    if (!local_ok) {
        opal_output_verbose(1, c->output, "coll:offload: %s: cannot compile the programs",
                            comm->c_name);
    }
    /* Every rank's mailboxes must fit the budget, so the slots are cut for the
     * rank that receives on the most streams (a fallback allreduce). */
    int streams = local_ok ? inbound_streams(m) : 0;
    if (streams < 0) {
        local_ok = 0;
        streams = 0;
    }
    int most = 0;
    int rc = m->below.allreduce(&streams, &most, 1, MPI_INT, MPI_MAX, comm,
                               m->below.allreduce_module);
    size_t segsize = 0, share = 0;
    int cap_ok = 1;
    if (OMPI_SUCCESS == rc) {
        segsize = ofl_softnic_fit(m->size, p->slots, most < 0 ? m->size * OFL_CHANNELS : most,
                                  p->shm_budget, p->segment_size ? p->segment_size : 16384);
        if (0 == segsize) {
            release_nic(m);
            m->state = OFL_MOD_DISABLED;
            if (0 == m->rank) {
                opal_output(c->output,
                            "coll:offload: %s: %d ranks receiving on up to %d streams do not "
                            "fit coll_offload_shm_budget (%zu bytes per rank); this "
                            "communicator uses the fallback component",
                            comm->c_name, m->size, most, p->shm_budget);
            }
            return OMPI_SUCCESS;
        }
        share = ofl_softnic_share(m->size, p->slots, most, segsize);
        if (shm_reserve(share)) {
            m->shm_share = share;
        } else {
            cap_ok = 0;
        }
    }
    int named = 0;
    if (OMPI_SUCCESS == rc) {
        rc = setup_attempt(m, comm, named, local_ok, cap_ok, segsize, all_votes);
    }
    if (OMPI_SUCCESS == rc && all_votes[VOTE_NIC] && all_votes[VOTE_CAP]
        && !all_votes[VOTE_ANON]) {
        ofl_softnic_detach(&m->nic);
        named = 1;
        rc = setup_attempt(m, comm, named, local_ok, cap_ok, segsize, all_votes);
    }
    inject.setups++;
    if (OMPI_SUCCESS != rc) {
        /* The agreement failed here, so the others may have decided to
         * offload: mark the segment failed (their first call then fails
         * promptly instead of waiting for us) and return the error. */
        ofl_softnic_poison_self(&m->nic);
        release_nic(m);
        m->state = OFL_MOD_DISABLED;
        opal_output(0,
                    "coll:offload: %s: the set-up agreement failed on rank %d (%d); the "
                    "communicator is marked failed and falls back from now on",
                    comm->c_name, m->rank, rc);
        return rc;
    }
    if (!all_votes[VOTE_CAP]) {
        /* Some rank's share does not fit: the communicator costs no shared memory
         * and every rank falls back alike. */
        release_nic(m);
        m->state = OFL_MOD_DISABLED;
        __atomic_fetch_add(&c->shm_refused, 1ull, __ATOMIC_RELAXED);
        if (0 == m->rank && !__atomic_exchange_n(&c->shm_warned, 1, __ATOMIC_RELAXED)) {
            opal_output(c->output,
                        "coll:offload: %s (%d ranks): its %zu bytes of shared memory per rank "
                        "would pass coll_offload_shm_cap (%llu bytes per process on this "
                        "node); it and every communicator past the cap use the fallback "
                        "component (warned once; raise coll_offload_shm_cap or lower "
                        "coll_offload_shm_budget)",
                        comm->c_name, m->size, share, shm_limit());
        }
        return OMPI_SUCCESS;
    }
    if (!all_votes[VOTE_NIC] || !all_votes[VOTE_ANON]) {
        release_nic(m);
        m->state = OFL_MOD_DISABLED;
        if (0 == m->rank) {
            opal_output(c->output,
                        "coll:offload: %s: software NIC set-up failed on some rank; this "
                        "communicator uses the fallback component",
                        comm->c_name);
        }
        return OMPI_SUCCESS;
    }
    /* Everybody is attached: from here on the pids come from this rank's own
     * copy, whatever a peer writes into the header. Every rank wrote its pid
     * before the agreement, so this fails only on a corrupt header; the
     * communicator still runs alike on every rank, reading the header's pids
     * (each checked where it is used). */
    if (0 != ofl_softnic_seal(&m->nic)) {
        opal_output(0, "coll:offload: %s: the software NIC's header is corrupt (a rank's pid "
                    "is missing or out of range)", comm->c_name);
    }
    m->state = OFL_MOD_READY;
    m->single_copy = all_votes[VOTE_GET];
    m->board = ofl_board_fits(&m->nic.base, 0) && m->size <= p->exchange_max_ranks;
    m->board_seq = 0;
    m->wait_opts = ofl_glue_wait_opts(p);
    opal_output_verbose(1, c->output,
                        "coll:offload: %s (cid %u, %d ranks): software NIC ready (%s segment), "
                        "%zu-byte segments, %d slots/edge, %d inbound streams at most: %zu "
                        "bytes of shared memory per rank (budget %zu)",
                        comm->c_name, OFL_COMM_CID(comm), m->size,
                        named ? "named" : "anonymous", segsize, p->slots, most, share,
                        p->shm_budget);
    if (p->verbose >= 50) {
        dump_programs(m, comm);
    }
    return OMPI_SUCCESS;
}
