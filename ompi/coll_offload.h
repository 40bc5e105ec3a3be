/*
 * coll/offload — Open MPI glue: component, module and the collective entry points.
 *
 * The module owns, per communicator, the software NIC segment, the edge
 * sequences and the compiled programs; everything is set up lazily by the first
 * offloaded call (collectively, with an agreement so that every rank offloads or
 * none does) and reused by every later call.
 */
#ifndef MCA_COLL_OFFLOAD_H
#define MCA_COLL_OFFLOAD_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/coll.h"

#include "engine/engine.h"
#include "nic/softnic.h"
#include "sched/policy.h"
#include "sched/sched.h"

BEGIN_C_DECLS

/* What the MCA parameters say; read once at registration. */
typedef struct {
    int priority;
    int verbose;
    int reduce_tree;       /* ofl_tree_kind_t */
    int reduce_radix;
    int bcast_tree;
    int bcast_radix;
    size_t segment_size;
    int slots;
    int exchange_max_ranks;             /* exchange programs up to this many ranks */
    char *policy_text[OFL_COLL_COUNT];  /* per-size algorithm tables (policy.h) */
    ofl_policy_t policy[OFL_COLL_COUNT];
    size_t max_bytes[OFL_COLL_COUNT];   /* above: fallback (barrier unused) */
    double watchdog;                    /* seconds; 0 = off */
    double liveness_period;
    int spin;
} mca_coll_offload_params_t;

typedef struct {
    mca_coll_base_component_2_0_0_t super;
    mca_coll_offload_params_t params;
    int output;
    /* MPI_T counters (pvars coll_offload_<coll>_offloaded / _fallback) */
    unsigned long long offloaded[OFL_COLL_COUNT];
    unsigned long long fallback[OFL_COLL_COUNT];
} mca_coll_offload_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_offload_component_t mca_coll_offload_component;

typedef enum {
    OFL_MOD_UNSET = 0,   /* nothing built yet: the first offloaded call sets up */
    OFL_MOD_READY,
    OFL_MOD_DISABLED     /* set-up failed on some rank, or a fault: all falls back */
} ofl_mod_state_t;

typedef struct {
    mca_coll_base_module_t super;

    /* The layer below us, saved (and retained) in enable before anything else. */
    mca_coll_base_module_allreduce_fn_t prev_allreduce;
    mca_coll_base_module_t *prev_allreduce_module;
    mca_coll_base_module_reduce_fn_t prev_reduce;
    mca_coll_base_module_t *prev_reduce_module;
    mca_coll_base_module_bcast_fn_t prev_bcast;
    mca_coll_base_module_t *prev_bcast_module;
    mca_coll_base_module_barrier_fn_t prev_barrier;
    mca_coll_base_module_t *prev_barrier_module;

    ofl_mod_state_t state;
    int rank;
    int size;
    ofl_softnic_t nic;
    ofl_edges_t edges;
    ofl_program_t allreduce;
    ofl_program_t barrier;
    ofl_program_t allreduce_x;   /* exchange variants; empty when the comm is too big */
    ofl_program_t allreduce_s;   /* segment ownership; empty for one rank */
    ofl_program_t barrier_x;
    ofl_program_t *reduce;    /* [size]: one per root */
    ofl_program_t *bcast;     /* [size] */
    ofl_program_t *bcast_get; /* [size]: children read the parent's buffer */
    int single_copy;          /* every rank can read every other's memory */
    ofl_inst_t inst;          /* the blocking call in flight */
    void *pack;               /* staging for non-contiguous bcast layouts; grows only */
    size_t pack_bytes;
    int warned;
} mca_coll_offload_module_t;

OBJ_CLASS_DECLARATION(mca_coll_offload_module_t);

int mca_coll_offload_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_offload_comm_query(struct ompi_communicator_t *comm,
                                                    int *priority);

int mca_coll_offload_setup(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm);

int mca_coll_offload_allreduce(const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_offload_reduce(const void *sbuf, void *rbuf, int count,
                            struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_offload_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_offload_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module);

/* Datatype and op mapping (coll_offload_types.c). */
void mca_coll_offload_types_init(void);
int mca_coll_offload_map(struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                         ofl_alu_fn *fn, size_t *elem);

END_C_DECLS

#endif
