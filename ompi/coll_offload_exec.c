/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — what every entry point does around a call that runs: the
 * report of a call that failed (and what the communicator is left with), the
 * refusal on a communicator whose ranks' calls differed, the agreement a
 * fallback waits for (every rank's record of the call), marking the
 * communicator failed from one rank, and staging non-contiguous data.
 */
#include "coll_offload.h"
#include "coll_offload_decide.h"
#include "coll_offload_exec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"
#include "ompi/datatype/ompi_datatype.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/util/show_help.h"

/* A call's error, said by the rank that returns it, as a topic of the component's help
 * file like Open MPI's own errors. The launcher shows the first message of a topic in full
 * and counts the others ("N more processes have sent help message ..."; all of them with
 * orte_base_help_aggregate=0), so each text names the rank that says it. Open MPI 4.1's
 * launcher also loses some of the messages that ranks send at about the same time, as
 * those of one failing call are (it logs an ORTE_ERROR_LOG line of show_help.c for each):
 * what a program goes by is the error the call returns, on every rank. */
void mca_coll_offload_say(const char *topic, ...)
{
    va_list ap;
    va_start(ap, topic);
    opal_show_vhelp(OFL_GLUE_HELP_FILE, topic, true, ap);
    va_end(ap);
}

void mca_coll_offload_report(mca_coll_offload_module_t *m, const char *what,
                             struct ompi_communicator_t *comm, ofl_wait_status_t st, int peer,
                             int cnt, uint64_t have, int64_t need, int error)
{
    mca_coll_offload_component_t *c = &mca_coll_offload_component;
    unsigned cid = OFL_COMM_CID(comm);
    if (OFL_WAIT_MISMATCH == st) {
        int a = m->rank, b = peer;
        uint64_t sig_a = 0, sig_b = 0;
        char diff[96] = "arguments";
        m->nic->ops->mismatched(m->nic, &a, &sig_a, &b, &sig_b);
        if (0 != sig_a && 0 != sig_b) {
            ofl_sig_describe(sig_a, sig_b, diff, sizeof(diff));
        }
        /* Different collectives at the same place in the ranks' sequences of calls:
         * calls out of order, even where the layer below happens to match such
         * calls by other means (libnbc's tags apart from tuned's). */
        int order = 0 != sig_a && 0 != sig_b && ofl_sig_other_coll(sig_a, sig_b);
        mca_coll_offload_say(order ? "call-out-of-order" : "call-mismatch", a < b ? a : b,
                             a < b ? b : a, diff, what, comm->c_name, cid, m->rank);
    } else if (OFL_WAIT_FAILED == st && -EPROTO == error) {
        mca_coll_offload_say("call-corrupt-state", what, comm->c_name, cid, m->rank);
    } else if (OFL_WAIT_FAILED == st) {
        mca_coll_offload_say("call-peer-unreadable", what, comm->c_name, cid, m->rank,
                             strerror(-error));
    } else if (OFL_WAIT_PEER_DEAD == st && NULL != m->nic
               && m->nic->ops->peer_alive(m->nic, peer)) {
        /* Marked failed by a rank that lives: a failure on its side (its own
         * message says which), after which it cannot take part any more. */
        mca_coll_offload_say("call-peer-gave-up", peer, what, comm->c_name, cid, m->rank);
    } else if (OFL_WAIT_PEER_DEAD == st) {
        mca_coll_offload_say("call-peer-gone", peer, what, comm->c_name, cid, m->rank);
    } else {
        mca_coll_offload_say("call-watchdog", what, comm->c_name, cid, m->rank, c->params.watchdog,
                             peer, cnt / OFL_CHANNELS == OFL_CNT_DATA ? "data" : "credit",
                             (unsigned long long) have, (long long) need);
    }
}

int mca_coll_offload_refuse(mca_coll_offload_module_t *m, const char *what,
                            struct ompi_communicator_t *comm)
{
    int a = -1, b = -1;
    uint64_t sig_a, sig_b;
    m->nic->ops->mismatched(m->nic, &a, &sig_a, &b, &sig_b);
    mca_coll_offload_say("call-refused", a < b ? a : b, a < b ? b : a, what, comm->c_name,
                         OFL_COMM_CID(comm), m->rank);
    return MPI_ERR_OTHER;
}

typedef struct {
    mca_coll_offload_module_t *m;
    uint64_t sig;
    uint64_t callno;
    int next;      /* the lowest peer not known to have recorded the call */
    int bad;       /* a peer whose record differs */
} agree_t;

static int agree_poll(void *ctx)
{
    agree_t *a = ctx;
    ofl_nic_t *nic = a->m->nic;
    for (; a->next < nic->size; ++a->next) {
        uint64_t theirs = 0;
        if (a->next == nic->rank) {
            continue;
        }
        uint64_t n = nic->ops->recorded(nic, a->next, a->callno, &theirs);
        if (n < a->callno) {
            return 0;
        }
        if (n == a->callno && theirs != a->sig) {
            nic->ops->mismatch(nic, nic->rank, a->sig, a->next, theirs);
            a->bad = a->next;
            return -1;
        }
    }
    return 1;
}

static ofl_wait_status_t agree_check(void *ctx, double waited_s, double timeout_s, int *peer)
{
    agree_t *a = ctx;
    ofl_nic_t *nic = a->m->nic;
    if (ofl_sig_check(nic, a->sig, a->callno, peer)) {
        return OFL_WAIT_MISMATCH;
    }
    int dead = nic->ops->poisoned(nic);
    if (dead >= 0) {
        *peer = dead;
        return OFL_WAIT_PEER_DEAD;
    }
    if (a->next < nic->size && !nic->ops->peer_alive(nic, a->next)) {
        nic->ops->poison(nic, a->next);
        *peer = a->next;
        return OFL_WAIT_PEER_DEAD;
    }
    if (timeout_s > 0 && waited_s > timeout_s) {
        *peer = a->next;
        return OFL_WAIT_TIMEOUT;
    }
    return OFL_WAIT_OK;
}

int mca_coll_offload_agree_waits(const mca_coll_offload_module_t *m, int reason, size_t bytes)
{
    const mca_coll_offload_params_t *p = &mca_coll_offload_component.params;
    int above = p->agree_above;
    /* A call handed down for a reason its arguments decide (op, datatype, size, policy)
     * costs what the layer below costs: no wait for the other ranks' records. Ranks whose
     * arguments differ so that one offloads and another hands down are still caught by
     * the one that offloads (its wait reads the other's record); the one below waits in
     * the layer below as it would without this component, until the error handler of
     * the first ends the job. coll_offload_check=1 (or agree_above) makes every
     * hand-down wait and return the error on every rank. */
    int by_arguments = OFL_R_USER_OP == reason || OFL_R_TYPE == reason
                       || OFL_R_OP_TYPE == reason || OFL_R_SIZE == reason
                       || OFL_R_POLICY == reason;
    return p->check || m->repsum_mixed || !by_arguments || (above >= 0 && bytes > (size_t) above);
}

int mca_coll_offload_unrefused(mca_coll_offload_module_t *m, const char *what,
                               struct ompi_communicator_t *comm)
{
    int a, b;
    uint64_t sig_a, sig_b;
    if (OPAL_UNLIKELY(m->nic->ops->mismatched(m->nic, &a, &sig_a, &b, &sig_b))) {
        /* a peer found one since: this rank's calls are no longer the others' */
        m->state = OFL_MOD_BROKEN;
        return mca_coll_offload_refuse(m, what, comm);
    }
    return MPI_SUCCESS;
}

int mca_coll_offload_agree(mca_coll_offload_module_t *m, const char *what, uint64_t sig,
                           int64_t callno, int reason, size_t bytes,
                           struct ompi_communicator_t *comm)
{
    if (callno < 0) {
        return mca_coll_offload_refuse(m, what, comm);
    }
    if (0 == callno) {
        return MPI_SUCCESS;
    }
    if (!mca_coll_offload_agree_waits(m, reason, bytes)) {
        return mca_coll_offload_unrefused(m, what, comm);
    }
    agree_t a = { .m = m, .sig = sig, .callno = (uint64_t) callno, .next = 0, .bad = -1 };
    int peer = -1;
    ofl_wait_status_t st = ofl_wait_loop(agree_poll, agree_check, &a, &m->wait_opts, &peer);
    if (OPAL_LIKELY(OFL_WAIT_OK == st)) {
        return MPI_SUCCESS;
    }
    if (OFL_WAIT_FAILED == st) {
        st = OFL_WAIT_MISMATCH;
        peer = a.bad;
    }
    m->state = OFL_WAIT_MISMATCH == st ? OFL_MOD_BROKEN : OFL_MOD_DISABLED;
    mca_coll_offload_report(m, what, comm, st, peer, OFL_CNT_DATA * OFL_CHANNELS, 0, 0, 0);
    return OFL_WAIT_MISMATCH == st ? MPI_ERR_ARG : MPI_ERR_OTHER;
}

int mca_coll_offload_fail_here(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                               const char *what, const char *why, int rc)
{
    mca_coll_offload_say("call-failed-here", what, comm->c_name, OFL_COMM_CID(comm), m->rank, why);
    ofl_nic_poison_self(m->nic);
    m->state = OFL_MOD_DISABLED;
    return rc;
}

/* Pack or unpack a non-contiguous bcast buffer through a staging area.
 * Returns 0, or -1 when the convertor fails. */
int mca_coll_offload_stage(void *stage, void *buf, ofl_count_t count, struct ompi_datatype_t *dtype,
                           size_t bytes, int pack)
{
    opal_convertor_t conv;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    int rc;
    if (pack) {
        rc = opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &dtype->super,
                                                      (size_t) count, buf, 0, &conv);
    } else {
        rc = opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &dtype->super,
                                                      (size_t) count, buf, 0, &conv);
    }
    if (OPAL_SUCCESS == rc) {
        struct iovec iov = { .iov_base = stage, .iov_len = bytes };
        uint32_t niov = 1;
        size_t max = bytes;
        rc = pack ? opal_convertor_pack(&conv, &iov, &niov, &max)
                  : opal_convertor_unpack(&conv, &iov, &niov, &max);
        rc = (rc >= 0 && max == bytes) ? 0 : -1;
    }
    OBJ_DESTRUCT(&conv);
    return rc;
}
