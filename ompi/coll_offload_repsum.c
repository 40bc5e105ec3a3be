/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — reproducible sums at the MPI level (src/repsum/repsum.h has the
 * format and the guarantee).
 *
 * A float sum in reproducible mode is converted into binned elements in a
 * staging buffer, run as an ordinary reduction of the wire datatype under the
 * wire op (so the NIC's programs, the board, the node-aware module and the
 * layer below all carry it unchanged: the wire op is integer adds), and
 * converted back once. Whichever path the wire call takes, the result is a
 * function of the inputs alone: never the ordinary sum. Large blocking calls
 * take the two-pass form (src/repsum/repsum_wide.h) instead: two wire calls of
 * 2 + 16 bytes per value, with the same bits.
 */
#include "coll_offload.h"
#include "coll_offload_exec.h"
#include "coll_offload_repsum_int.h"

#include <stdbool.h>
#include <stdlib.h>

#include "repsum/repsum.h"
#include "repsum/repsum_wide.h"
#include "ompi/communicator/communicator.h"
#include "opal/util/info.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

#define INFO_KEY "coll_offload_repsum"

/* What this rank asks for: the info key if the communicator carries it, else
 * the MCA parameter. */
static int asked_here(struct ompi_communicator_t *comm)
{
    int on = 0 != mca_coll_offload_component.params.repsum;
    opal_info_t *info = comm->super.s_info;
    if (NULL != info) {
        bool value = false;
        int flag = 0;
        if (OPAL_SUCCESS == opal_info_get_bool(info, (char *) INFO_KEY, &value, &flag) && flag) {
            on = value;
        }
    }
    return on;
}

/*
 * The mode is this rank's own answer, taken at the communicator's first float
 * sum and kept. It is not agreed in a collective of its own: a rank that called
 * another collective there (an erroneous program, which the mismatch check
 * must report, not hang in) would never reach it. Ranks that answer
 * differently make calls of different signatures (the binned datatype and op,
 * 32 bytes per value), which the call records report as an argument mismatch
 * (MPI_ERR_ARG on every rank) once the communicator's NIC is set up.
 */
int mca_coll_offload_repsum_asked(struct ompi_communicator_t *comm)
{
    return asked_here(comm) && NULL != mca_coll_offload_repsum_type();
}

/* The communicator's first float sum: take this rank's answer and keep it. */
static __attribute__((noinline)) int decide(mca_coll_offload_repsum_t *r,
                                            struct ompi_communicator_t *comm)
{
    int on = mca_coll_offload_repsum_asked(comm);
    int mode = on ? OFL_REPSUM_ON : OFL_REPSUM_OFF;
    r->mode = mode;
    if (mca_coll_offload_component.params.verbose >= 10) {
        opal_output(mca_coll_offload_component.output, "coll:offload: %s: reproducible sums %s",
                    comm->c_name, on ? "on" : "off");
    }
    return on;
}

/* Called on every reduction of a communicator whose mode is not off, the
 * binned calls' own included (their op is the wire op, not MPI_SUM): the op
 * test comes first and the decision is out of line. */
int mca_coll_offload_repsum_wanted(mca_coll_offload_repsum_t *r, struct ompi_datatype_t *dtype,
                                   struct ompi_op_t *op, struct ompi_communicator_t *comm)
{
    int mode = r->mode;
    if (OPAL_LIKELY(OFL_REPSUM_OFF == mode) || op != &ompi_mpi_op_sum.op
        || OFL_RS_NONE == mca_coll_offload_repsum_kind(dtype, op)) {
        return 0;
    }
    return OFL_REPSUM_UNDECIDED == mode ? decide(r, comm) : OFL_REPSUM_ON == mode;
}

/* The staging buffer: the module's, grown as needed and kept. NULL when it
 * cannot grow. */
static void *stage(mca_coll_offload_repsum_t *r, size_t bytes)
{
    if (r->stage_bytes < bytes) {
        void *p = NULL;
        /* aligned: elements never straddle a cache line */
        if (0 != posix_memalign(&p, 64, bytes)) {
            return NULL;
        }
        free(r->stage);
        r->stage = p;
        r->stage_bytes = bytes;
    }
    return r->stage;
}

/* Every rank needs the same number of bytes; a rank out of memory cannot take
 * part, and saying so is all it can do. (MPI_ERR_NO_MEM itself: Open MPI maps
 * OMPI_ERR_OUT_OF_RESOURCE to MPI_ERR_INTERN.) */
static int no_memory(const char *what, struct ompi_communicator_t *comm, size_t bytes)
{
    mca_coll_offload_say("repsum-no-memory", what, comm->c_name, OFL_COMM_CID(comm), bytes);
    return MPI_ERR_NO_MEM;
}

/*
 * The two-pass form (repsum/repsum_wide.h) gives the binned form's bits with 2 +
 * 16 bytes per real instead of 32, but two calls: blocking calls take it from
 * coll_offload_repsum_two_pass_min reals up (its default is the crossover
 * bench/repsum_demo -t measured), when the sum has at most
 * OFL_REPSUM_WIDE_MAX_TERMS terms (one per rank, node-aware or flat). Count and
 * size are the same on every rank, so every rank takes the same form;
 * nonblocking and persistent calls keep the binned one, and the results agree
 * bit for bit whichever form a call takes.
 */
static int takes_two_pass(size_t n, struct ompi_communicator_t *comm)
{
    int min = mca_coll_offload_component.params.repsum_two_pass_min;
    return min >= 0 && n >= (size_t) min && ompi_comm_size(comm) <= OFL_REPSUM_WIDE_MAX_TERMS
           && NULL != mca_coll_offload_repsum_meta_type()
           && NULL != mca_coll_offload_repsum_wide_type();
}

static int is_float(int kind)
{
    return OFL_RS_FLOAT == kind || OFL_RS_CFLOAT == kind;
}

/* Pass 1 in, pass 2 in, and out: each real's meta, its integer, its sum. */
static void to_meta(ofl_repsum_meta_t *m, const void *in, int kind, size_t n)
{
    if (is_float(kind)) {
        ofl_repsum_meta_from_float(m, in, n);
    } else {
        ofl_repsum_meta_from_double(m, in, n);
    }
}

static void to_wide(ofl_repsum_wide_t *w, const void *in, const ofl_repsum_meta_t *m, int kind,
                    size_t n)
{
    if (is_float(kind)) {
        ofl_repsum_wide_from_float(w, in, m, n);
    } else {
        ofl_repsum_wide_from_double(w, in, m, n);
    }
}

static void from_wide(void *out, const ofl_repsum_wide_t *w, const ofl_repsum_meta_t *m,
                      int kind, size_t n)
{
    if (is_float(kind)) {
        ofl_repsum_wide_to_float(out, w, m, n);
    } else {
        ofl_repsum_wide_to_double(out, w, m, n);
    }
}

/* Both passes; root < 0 for an allreduce. Pass 1 is always an allreduce: every
 * rank truncates at the final meta's base. */
static int two_pass(mca_coll_offload_repsum_t *r, const void *src, void *rbuf, int kind,
                    size_t n, int root, const char *what, struct ompi_communicator_t *comm,
                    mca_coll_base_module_t *module, mca_coll_base_module_allreduce_fn_t allreduce,
                    mca_coll_base_module_reduce_fn_t reduce)
{
    size_t wide_bytes = n * sizeof(ofl_repsum_wide_t);
    unsigned char *buf = stage(r, wide_bytes + n * sizeof(ofl_repsum_meta_t));
    if (NULL == buf) {
        return no_memory(what, comm, wide_bytes + n * sizeof(ofl_repsum_meta_t));
    }
    ofl_repsum_wide_t *w = (ofl_repsum_wide_t *) buf;
    ofl_repsum_meta_t *m = (ofl_repsum_meta_t *) (buf + wide_bytes);
    struct ompi_op_t *op = mca_coll_offload_repsum_op();
    to_meta(m, src, kind, n);
    int rc = allreduce(MPI_IN_PLACE, m, (int) n, mca_coll_offload_repsum_meta_type(), op, comm,
                       module);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    to_wide(w, src, m, kind, n);
    struct ompi_datatype_t *wt = mca_coll_offload_repsum_wide_type();
    int is_root = root < 0 || ompi_comm_rank(comm) == root;
    if (root < 0) {
        rc = allreduce(MPI_IN_PLACE, w, (int) n, wt, op, comm, module);
    } else {
        rc = reduce(is_root ? MPI_IN_PLACE : w, is_root ? w : NULL, (int) n, wt, op, root, comm,
                    module);
    }
    if (OMPI_SUCCESS == rc && is_root) {
        from_wide(rbuf, w, m, kind, n);
    }
    return rc;
}

/* The one binned pass of an allreduce: convert, run `self`, convert back. */
static inline int one_pass(mca_coll_offload_repsum_t *r, const void *src, void *rbuf, int kind,
                           size_t n, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module,
                           mca_coll_base_module_allreduce_fn_t self)
{
    ofl_repsum_t *w = stage(r, n * sizeof(ofl_repsum_t));
    if (OPAL_UNLIKELY(NULL == w)) {
        return no_memory("MPI_Allreduce", comm, n * sizeof(ofl_repsum_t));
    }
    int one_double = OFL_RS_DOUBLE == kind && 1 == n;
    if (one_double) {
        /* the most common reproducible call: no loop, no dispatch */
        ofl_repsum_from_double1(w, *(const double *) src);
    } else {
        to_wire(w, src, kind, n);
    }
    int rc = self(MPI_IN_PLACE, w, (int) n, r->wire_type, r->wire_op, comm, module);
    if (OPAL_LIKELY(OMPI_SUCCESS == rc)) {
        if (one_double) {
            *(double *) rbuf = ofl_repsum_to_double1(w);
        } else {
            from_wire(rbuf, w, kind, n);
        }
    }
    return rc;
}

/* The layouts are those of the predefined types: contiguous, no lower bound. */
int mca_coll_offload_repsum_allreduce(mca_coll_offload_repsum_t *r, const void *sbuf, void *rbuf,
                                      ofl_count_t count, struct ompi_datatype_t *dtype,
                                      struct ompi_communicator_t *comm,
                                      mca_coll_base_module_t *module,
                                      mca_coll_base_module_allreduce_fn_t self)
{
    const void *src = MPI_IN_PLACE == sbuf ? rbuf : sbuf;
    if (dtype == r->last_dtype && count == r->last_count) {
        return one_pass(r, src, rbuf, r->last_kind, elements(r->last_kind, count), comm, module,
                        self);
    }
    int kind = mca_coll_offload_repsum_kind(dtype, &ompi_mpi_op_sum.op);
    size_t n = elements(kind, count);
    if (too_many(n, "MPI_Allreduce", comm)) {
        return MPI_ERR_COUNT;
    }
    if (takes_two_pass(n, comm)) {
        return two_pass(r, src, rbuf, kind, n, -1, "MPI_Allreduce", comm, module, self, NULL);
    }
    if (NULL == stage(r, n * sizeof(ofl_repsum_t))) {
        return no_memory("MPI_Allreduce", comm, n * sizeof(ofl_repsum_t));
    }
    /* the memo: what a repeat of this call needs, the checks above done and
     * its staging buffer made (the buffer only grows) */
    r->wire_type = mca_coll_offload_repsum_type();
    r->wire_op = mca_coll_offload_repsum_op();
    r->last_kind = kind;
    r->last_count = count;
    r->last_dtype = dtype;
    return one_pass(r, src, rbuf, kind, n, comm, module, self);
}

/* A repeat of any other count or kind: out of line, so that the one double's
 * path saves no registers for it. */
static __attribute__((noinline)) int again_general(mca_coll_offload_repsum_t *r,
                                                   const void *src, void *rbuf,
                                                   struct ompi_communicator_t *comm,
                                                   mca_coll_base_module_t *module,
                                                   mca_coll_base_module_allreduce_fn_t self)
{
    return one_pass(r, src, rbuf, r->last_kind, elements(r->last_kind, r->last_count), comm,
                    module, self);
}

int mca_coll_offload_repsum_allreduce_again(mca_coll_offload_repsum_t *r, const void *sbuf,
                                            void *rbuf, struct ompi_communicator_t *comm,
                                            mca_coll_base_module_t *module,
                                            mca_coll_base_module_allreduce_fn_t self)
{
    const void *src = MPI_IN_PLACE == sbuf ? rbuf : sbuf;
    if (OPAL_LIKELY(OFL_RS_DOUBLE == r->last_kind && 1 == r->last_count)) {
        /* one double: the staging buffer holds an element since the memo was
         * set, and nothing else is left to decide */
        ofl_repsum_t *w = r->stage;
        ofl_repsum_from_double1(w, *(const double *) src);
        int rc = self(MPI_IN_PLACE, w, 1, r->wire_type, r->wire_op, comm, module);
        if (OPAL_LIKELY(OMPI_SUCCESS == rc)) {
            *(double *) rbuf = ofl_repsum_to_double1(w);
        }
        return rc;
    }
    return again_general(r, src, rbuf, comm, module, self);
}

int mca_coll_offload_repsum_reduce(mca_coll_offload_repsum_t *r, const void *sbuf, void *rbuf,
                                   ofl_count_t count, struct ompi_datatype_t *dtype, int root,
                                   struct ompi_communicator_t *comm,
                                   mca_coll_base_module_t *module,
                                   mca_coll_base_module_reduce_fn_t self,
                                   mca_coll_base_module_allreduce_fn_t allreduce)
{
    int kind = mca_coll_offload_repsum_kind(dtype, &ompi_mpi_op_sum.op);
    size_t n = elements(kind, count);
    int is_root = ompi_comm_rank(comm) == root;
    const void *src = (MPI_IN_PLACE == sbuf && is_root) ? rbuf : sbuf;
    if (too_many(n, "MPI_Reduce", comm)) {
        return MPI_ERR_COUNT;
    }
    if (takes_two_pass(n, comm)) {
        return two_pass(r, src, rbuf, kind, n, root, "MPI_Reduce", comm, module, allreduce,
                        self);
    }
    ofl_repsum_t *w = stage(r, n * sizeof(ofl_repsum_t));
    if (NULL == w) {
        return no_memory("MPI_Reduce", comm, n * sizeof(ofl_repsum_t));
    }
    to_wire(w, src, kind, n);
    int rc = self(is_root ? MPI_IN_PLACE : w, is_root ? w : NULL, (int) n,
                  mca_coll_offload_repsum_type(), mca_coll_offload_repsum_op(), root, comm,
                  module);
    if (OMPI_SUCCESS == rc && is_root) {
        from_wire(rbuf, w, kind, n);
    }
    return rc;
}

void mca_coll_offload_repsum_fini(mca_coll_offload_repsum_t *r)
{
    free(r->stage);
    r->stage = NULL;
    r->stage_bytes = 0;
    r->mode = OFL_REPSUM_UNDECIDED;
    r->last_dtype = NULL;
    r->last_count = 0;
}
