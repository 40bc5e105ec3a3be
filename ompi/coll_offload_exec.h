/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — what every entry point does around a call (coll_offload_exec.c):
 * call records and signatures, the fallback's agreement, failure reports, staging,
 * segment sizes.
 */
#ifndef MCA_COLL_OFFLOAD_EXEC_H
#define MCA_COLL_OFFLOAD_EXEC_H

#include "coll_offload.h"
#include "engine/sig.h"

BEGIN_C_DECLS

/* The smallest segment a message is cut into (a slot is never smaller where the
 * budget allows): below it the per-segment handshakes dominate. */
#define OFL_SEGMENT_MIN_BYTES (16u << 10)
/* The segment size of a call of `bytes` on prog (ofl_call_t.seg_bytes). */
size_t mca_coll_offload_segment(const ofl_program_t *prog, size_t bytes);
/* The error message of a failed offloaded call (dead peer, watchdog, or a failed
 * read of a peer's memory: -error). */
/* A failed call's help topic (help-coll-offload.txt), said by this rank: the one
 * place where how it reaches the user is decided. (Open MPI 4.1's launcher drops some
 * help messages several ranks send at once, ORTE_ERROR_LOG in show_help.c; printing
 * the rendered topic from each rank instead was tried and interleaved the ranks'
 * lines, so the launcher's relay stays; the call's error is never affected.) */
void mca_coll_offload_say(const char *topic, ...);

void mca_coll_offload_report(mca_coll_offload_module_t *m, const char *what,
                             struct ompi_communicator_t *comm, ofl_wait_status_t st, int peer,
                             int cnt, uint64_t have, int64_t need, int error);
/* A local failure in the middle of a call (a staging allocation, packing)
 * that leaves this rank unable to take part: say so, mark the communicator
 * failed for every rank (ofl_nic_poison_self: whoever waits on us gives up
 * at its next liveness check) and fall back from now on. Returns the error for
 * the call. */
int mca_coll_offload_fail_here(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                               const char *what, const char *why, int rc);
/* What every rank of a call must pass alike (engine/sig.h). */
static inline uint64_t mca_coll_offload_sig(ofl_coll_t coll, struct ompi_datatype_t *dtype,
                                            struct ompi_op_t *op, int root, size_t bytes)
{
    unsigned o = 0, t = 0;
    if (NULL != op) {
        o = ompi_op_is_intrinsic(op) ? (unsigned) op->o_f_to_c_index + 1 : OFL_SIG_OP_USER;
    }
    if (NULL != dtype) {
        t = ompi_datatype_is_predefined(dtype) ? (unsigned) dtype->id + 1 : OFL_SIG_TYPE_DERIVED;
    }
    return ofl_sig_make((unsigned) coll, o, t, root, bytes);
}

/* The start of every collective call (all kinds, offloaded or not): on a
 * communicator whose NIC is set up, number the call and record its signature
 * where the peers can compare it, before waiting for anybody. Returns the
 * call's number (0 without a NIC), or -1 when the communicator is broken by an
 * earlier mismatch (the call must fail). */
static inline int64_t mca_coll_offload_begin(mca_coll_offload_module_t *m, uint64_t sig)
{
    ofl_mod_state_t st = m->state;
    if (OPAL_LIKELY(OFL_MOD_READY == st)) {
        uint64_t n = ++m->calls;
        ofl_nic_record(m->nic, n, sig);
        return (int64_t) n;
    }
    return OFL_MOD_BROKEN == st ? -1 : 0;
}

/* A call on a broken communicator: say so, once per call. */
int mca_coll_offload_refuse(mca_coll_offload_module_t *m, const char *what,
                            struct ompi_communicator_t *comm);

/* A blocking call of `bytes` handed to the fallback (for `reason`, OFL_R_*) as
 * call `callno` (from begin): wait until every peer has recorded the same call (a
 * peer that offloads it would otherwise wait for us for ever while we wait in the
 * fallback for it) — unless the size policy chose the fallback (for a call of at
 * most coll_offload_agree_above bytes, or of any size when that is -1) and
 * coll_offload_check is off: then only a mismatch already reported on the
 * communicator ends it. MPI_SUCCESS, or the error to return. */
int mca_coll_offload_agree(mca_coll_offload_module_t *m, const char *what, uint64_t sig,
                           int64_t callno, int reason, size_t bytes,
                           struct ompi_communicator_t *comm);

/* A call that does not wait for the peers' records: MPI_SUCCESS, or the refusal when a
 * mismatch has been reported on the communicator since (which then breaks it). */
int mca_coll_offload_unrefused(mca_coll_offload_module_t *m, const char *what,
                               struct ompi_communicator_t *comm);

/* Whether mca_coll_offload_agree waits for the peers' records for such a call. */
int mca_coll_offload_agree_waits(const mca_coll_offload_module_t *m, int reason, size_t bytes);

/* Pack (root) or unpack a non-contiguous bcast buffer through `stage`. */
int mca_coll_offload_stage(void *stage, void *buf, ofl_count_t count, struct ompi_datatype_t *dtype,
                           size_t bytes, int pack);

END_C_DECLS

#endif
