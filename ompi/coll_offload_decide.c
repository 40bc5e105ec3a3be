/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the decision's out-of-line part (see coll_offload_decide.h):
 * counting and explaining decisions, set-up from a persistent init, segment
 * sizes, the nonblocking entry points' decisions and program choice.
 */
#include "coll_offload_decide.h"
#include "coll_offload_exec.h"
#include "coll_offload_setup.h"

#include "opal/util/info.h"
#include "opal/util/output.h"

static const char *const reasons[] = {
    "offload",
    "user-defined op",
    "datatype not on the ALU",
    "op not defined on datatype",
    "above the size limit",
    "NIC unavailable on this communicator",
    "the size policy chose the fallback",
    "NIC not set up yet (the first blocking collective or persistent init on the "
    "communicator sets it up)",
    "persistent starts may come in any order (MPI-4 section 6.13; see "
    "coll_offload_persistent_ordered)",
};

static const char *const kind_prefix[OFL_KIND_COUNT] = { "", "i", "p" };

void mca_coll_offload_note(ofl_kind_t kind, ofl_coll_t coll, int reason, size_t bytes,
                           struct ompi_communicator_t *comm)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    unsigned long long *counter;
    if (OFL_KIND_BLOCKING == kind) {
        counter = OFL_R_OFFLOAD == reason ? &c->offloaded[coll] : &c->fallback[coll];
        (*counter)++;
    } else {
        counter = OFL_R_OFFLOAD == reason ? &c->nb_offloaded[kind][coll]
                                      : &c->nb_fallback[kind][coll];
        if (opal_using_threads()) {
            __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
        } else {
            /* One application thread: no locked instruction (they stall on
             * this core's pending stores to the peers' lines). */
            __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + 1,
                             __ATOMIC_RELAXED);
        }
    }
    if (OPAL_UNLIKELY(c->params.verbose >= 10)) {
        if (OFL_R_OFFLOAD == reason) {
            opal_output(c->output, "coll:offload: %s %s%s %zu B: offload", comm->c_name,
                        kind_prefix[kind], ofl_coll_name(coll), bytes);
        } else {
            opal_output(c->output, "coll:offload: %s %s%s %zu B: fallback (%s)", comm->c_name,
                        kind_prefix[kind], ofl_coll_name(coll), bytes, reasons[reason]);
        }
    }
}

/* Persistent inits are nonlocal and ordered like every collective call on the
 * communicator (MPI-4 section 6.13), so, unlike MPI_I<coll>, they may run the
 * collective set-up: every rank reaches it at the same init, and a program that
 * only ever uses persistent collectives is offloaded too. */
int mca_coll_offload_setup_in_init(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm)
{
    int rc;
    (void) decide_ensure_ready(m, comm, &rc);
    return rc;
}

/* The NIC matches the calls of a communicator by the order in which each rank makes
 * them: every call takes the next items of the shared streams. MPI-4 (section 6.13)
 * lets ranks start persistent collectives in different orders unless the communicator
 * carries the info assertion mpi_assert_strict_persistent_collective_ordering, so
 * only then may a start be one more call in that order. */
int mca_coll_offload_persistent_ordered(struct ompi_communicator_t *comm)
{
    if (mca_coll_offload_component.params.persistent_ordered) {
        return 1;
    }
    bool asserted = false;
    int found = 0;
    if (NULL != comm->super.s_info
        && OPAL_SUCCESS == opal_info_get_bool(comm->super.s_info,
                                              (char *) "mpi_assert_strict_persistent_"
                                                       "collective_ordering",
                                              &asserted, &found)) {
        return found && asserted;
    }
    return 0;
}

/* Segment size for a call: a handful of segments per message (per owner for the
 * split program) so that moving and combining overlap, but never below the size
 * where per-segment handshakes would dominate. */
#define SEG_PIECES         8            /* segments per message and per owner */
#define SEG_BYREF_PIECES   4
#define SEG_BYREF_MIN      (512u << 10) /* one read of 512 KiB beat four, up to 1 MiB */

size_t mca_coll_offload_segment(const ofl_program_t *prog, size_t bytes)
{
    if (prog->byref) {
        /* a reference per segment: few and large (each read is a system call,
         * and a read of 512 KiB in one piece beat four pieces at every size up
         * to 1 MiB); larger messages in four, so that deeper trees pipeline */
        size_t seg = bytes / SEG_BYREF_PIECES;
        return seg < SEG_BYREF_MIN ? SEG_BYREF_MIN : seg;
    }
    size_t pieces = SEG_PIECES * (size_t) prog->period;
    size_t seg = bytes / pieces;
    return seg < OFL_SEGMENT_MIN_BYTES ? OFL_SEGMENT_MIN_BYTES : seg;
}

int mca_coll_offload_decide_reduction(mca_coll_offload_module_t *m,
                                      struct ompi_communicator_t *comm, ofl_coll_t coll,
                                      struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                      ofl_count_t count, ofl_call_t *call, ofl_alg_t *alg)
{
    int reason = decide_check_reduction(m, coll, dtype, op, count, call, alg);
    return OFL_R_OFFLOAD == reason ? decide_nb_ready(m) : reason;
}

int mca_coll_offload_decide_bcast(mca_coll_offload_module_t *m,
                                  struct ompi_communicator_t *comm, size_t bytes,
                                  ofl_alg_t *alg)
{
    int reason = decide_check_size(m, OFL_COLL_BCAST, bytes, alg);
    return OFL_R_OFFLOAD == reason ? decide_nb_ready(m) : reason;
}

int mca_coll_offload_decide_barrier(mca_coll_offload_module_t *m,
                                    struct ompi_communicator_t *comm, ofl_alg_t *alg)
{
    *alg = m->choice.barrier;
    return OFL_ALG_FALLBACK == *alg ? OFL_R_POLICY : decide_nb_ready(m);
}

