/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Reproducible sums (coll_offload_repsum / info key coll_offload_repsum).
 *
 * The global data do not depend on the number of ranks: element j is the sum of
 * the atoms +H, c, f1..f6, -H, with H = 2^(e+60) far above the rest. Each rank
 * contributes the exact sum of the atoms it holds (the split below keeps every
 * such share a double), so whatever np, the exact sum of the contributions is
 * T = c + f1 + ... + f6, itself a double. A reproducible sum must return T bit
 * for bit at every np, algorithm, radix and form; an ordinary sum that adds
 * H + c to a share of f's before -H rounds the f's away.
 *
 * Usage: t_repsum [world]
 *   world: MPI_COMM_WORLD is in reproducible mode (the MCA parameter is set):
 *          checked like the communicator made with the info key, and its
 *          results' hash printed ("t_repsum: hash ...") for the runner to
 *          compare across runs. Without: MPI_COMM_WORLD must give ordinary sums
 *          (for np >= 3 some element differs from T), and a communicator
 *          duplicated with coll_offload_repsum=true reproducible ones.
 *
 * Counts run below and above coll_offload_repsum_two_pass_min (256 reals by
 * default): blocking calls above it take the two-pass form, nonblocking and
 * persistent ones the binned form, and all must give the exact sum. Data whose
 * binned sums drop bits (exponents over the whole range, NaN, infinities,
 * signed zeros) check that the two forms agree bit for bit there too.
 */
#include <complex.h>
#include <float.h>
#include <math.h>

#include "mpi_persist.h"
#include "t_common.h"

static int np, rank;

/* Role of a rank for element j: rotates so that every rank plays every part. */
static int role(uint64_t j)
{
    return (int) (((uint64_t) rank + j) % (uint64_t) np);
}

/* The atoms of element j in double (prec 53) or float (prec 24) scale. */
static void atoms(uint64_t j, int is_float, double *h, double *c, double f[6])
{
    uint64_t x = t_mix(j * 7919 + (is_float ? 17 : 3));
    int e = is_float ? (int) (x % 120) - 60 : (int) (x % 400) - 200;
    int big = is_float ? 30 : 60, cgrid = is_float ? 7 : 8, fbits = is_float ? 8 : 20;
    *h = ldexp((x >> 20) & 1 ? 1.0 : -1.0, e + big);
    /* c on H's grid and small enough that H + c is a double: |c| < 2^(e + cgrid + 7) */
    *c = ldexp((double) (1 + t_mix(x) % 127) * ((x >> 21) & 1 ? 1 : -1), e + cgrid);
    for (int k = 0; k < 6; ++k) {
        uint64_t y = t_mix(x + (uint64_t) k + 1);
        f[k] = ldexp((double) (y % (1u << fbits)) * ((y >> 40) & 1 ? 1 : -1), e - fbits);
    }
}

/* This rank's contribution to element j (exact: every share is a double). */
static double share(uint64_t j, int is_float, double *total)
{
    double h, c, f[6], fsum = 0;
    atoms(j, is_float, &h, &c, f);
    for (int k = 0; k < 6; ++k) {
        fsum += f[k];
    }
    *total = c + fsum;
    int r = role(j);
    if (1 == np) {
        return c + fsum;
    }
    if (2 == np) {
        return 0 == r ? c : fsum;   /* +H and -H both on role 0 */
    }
    if (0 == r) {
        return h + c;
    }
    if (np - 1 == r) {
        return -h;
    }
    double s = 0;
    for (int k = 0; k < 6; ++k) {
        if (k % (np - 2) == r - 1) {
            s += f[k];
        }
    }
    return s;
}

typedef enum { F_ALLREDUCE, F_INPLACE, F_REDUCE, F_IALLREDUCE, F_IREDUCE, F_PALLREDUCE,
               F_PREDUCE, F_COUNT } form_t;
static const char *const form_names[F_COUNT] = {
    "allreduce", "allreduce in place", "reduce", "iallreduce", "ireduce", "persistent allreduce",
    "persistent reduce"
};

/* One call of `form` summing count elements of dtype; returns whether this rank
 * has the result in recv. */
static int run_form(form_t form, const void *send, void *recv, int count, MPI_Datatype dtype,
                    size_t bytes, MPI_Comm comm)
{
    int root = np - 1, rc = MPI_SUCCESS;
    MPI_Request req;
    switch (form) {
    case F_ALLREDUCE:
        rc = MPI_Allreduce(send, recv, count, dtype, MPI_SUM, comm);
        break;
    case F_INPLACE:
        memcpy(recv, send, bytes);
        rc = MPI_Allreduce(MPI_IN_PLACE, recv, count, dtype, MPI_SUM, comm);
        break;
    case F_REDUCE:
        rc = MPI_Reduce(send, recv, count, dtype, MPI_SUM, root, comm);
        break;
    case F_IALLREDUCE:
        rc = MPI_Iallreduce(send, recv, count, dtype, MPI_SUM, comm, &req);
        if (MPI_SUCCESS == rc) {
            rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        break;
    case F_IREDUCE:
        rc = MPI_Ireduce(send, recv, count, dtype, MPI_SUM, root, comm, &req);
        if (MPI_SUCCESS == rc) {
            rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        break;
    case F_PALLREDUCE:
    case F_PREDUCE:
        if (F_PALLREDUCE == form) {
            rc = MPI_Allreduce_init(send, recv, count, dtype, MPI_SUM, comm, MPI_INFO_NULL, &req);
        } else {
            rc = MPI_Reduce_init(send, recv, count, dtype, MPI_SUM, root, comm, MPI_INFO_NULL,
                                 &req);
        }
        /* started twice: the second start converts the data again */
        for (int i = 0; i < 2 && MPI_SUCCESS == rc; ++i) {
            memset(recv, 0x5a, bytes);
            rc = MPI_Start(&req);
            if (MPI_SUCCESS == rc) {
                rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
        }
        if (MPI_SUCCESS == rc) {
            rc = MPI_Request_free(&req);
        }
        break;
    default:
        break;
    }
    t_check_rc(rc, form_names[form]);
    return (F_REDUCE != form && F_IREDUCE != form && F_PREDUCE != form) || rank == root;
}

typedef enum { K_DOUBLE, K_FLOAT, K_CDOUBLE, K_CFLOAT, K_COUNT } kind_t;
static const char *const kind_names[K_COUNT] = { "double", "float", "double complex",
                                                 "float complex" };

static uint64_t result_hash;

/* Element values: reals element j; complex parts j (real) and j + 500009 (imaginary). */
static void check_kind(kind_t kind, int count, form_t form, MPI_Comm comm, int reproducible,
                       int *differs)
{
    int cplx = K_CDOUBLE == kind || K_CFLOAT == kind;
    int is_float = K_FLOAT == kind || K_CFLOAT == kind;
    size_t reals = (size_t) count * (cplx ? 2 : 1);
    size_t rsize = is_float ? sizeof(float) : sizeof(double);
    MPI_Datatype dt = K_DOUBLE == kind ? MPI_DOUBLE
                      : K_FLOAT == kind ? MPI_FLOAT
                      : K_CDOUBLE == kind ? MPI_C_DOUBLE_COMPLEX : MPI_C_FLOAT_COMPLEX;
    char *send = malloc(reals * rsize), *recv = malloc(reals * rsize);
    double *want = malloc(reals * sizeof(double));
    for (size_t i = 0; i < reals; ++i) {
        uint64_t j = cplx ? (i / 2) + (i % 2) * 500009 : i;
        double total, v = share(j, is_float, &total);
        want[i] = total;
        if (is_float) {
            ((float *) send)[i] = (float) v;   /* exact: a float share */
        } else {
            ((double *) send)[i] = v;
        }
    }
    memset(recv, 0x5a, reals * rsize);
    if (run_form(form, send, recv, count, dt, reals * rsize, comm)) {
        int bad = 0;
        for (size_t i = 0; i < reals; ++i) {
            double got = is_float ? (double) ((float *) recv)[i] : ((double *) recv)[i];
            int same = got == want[i] && signbit(got) == signbit(want[i]);
            if (reproducible && !same && bad++ < 3) {
                t_check(0, "%s %s count %d: element %zu is %a, the exact sum is %a",
                        kind_names[kind], form_names[form], count, i, got, want[i]);
            }
            *differs += !same;
        }
        int everywhere = F_ALLREDUCE == form || F_INPLACE == form || F_IALLREDUCE == form
                         || F_PALLREDUCE == form;
        if (reproducible) {
            t_check(0 == bad, "%s %s count %d: %d elements differ from the exact sum",
                    kind_names[kind], form_names[form], count, bad);
            for (size_t i = 0; everywhere && i < reals * rsize; ++i) {
                result_hash = t_mix(result_hash ^ (uint8_t) recv[i]);
            }
        }
    }
    free(send);
    free(recv);
    free(want);
}

/* NaN, infinities, -0.0 and overflow, as IEEE summation gives them. */
static void check_specials(MPI_Comm comm)
{
    enum { N = 5 };
    double send[N], recv[N];
    int r = rank;
    send[0] = 0 == r ? NAN : 1.0;
    send[1] = 0 == r ? INFINITY : -DBL_MAX;
    send[2] = -0.0;
    send[3] = DBL_MAX;
    /* DBL_MAX + DBL_MAX - DBL_MAX: exact sum DBL_MAX, whatever the order */
    send[4] = 1 == np ? DBL_MAX : 0 == r ? DBL_MAX : 1 == r ? (2 == np ? 0.0 : DBL_MAX)
              : 2 == r ? -DBL_MAX : 0.0;
    int rc = MPI_Allreduce(send, recv, N, MPI_DOUBLE, MPI_SUM, comm);
    t_check_rc(rc, "MPI_Allreduce of special values");
    t_check(isnan(recv[0]), "NaN + finite = %a", recv[0]);
    t_check(isinf(recv[1]) && recv[1] > 0, "Inf + finite = %a", recv[1]);
    t_check(0.0 == recv[2] && signbit(recv[2]), "-0.0 summed over %d ranks = %a, want -0.0", np,
            recv[2]);
    if (np > 1) {
        t_check(isinf(recv[3]) && recv[3] > 0, "DBL_MAX x %d = %a, want +Inf", np, recv[3]);
    } else {
        t_check(DBL_MAX == recv[3], "DBL_MAX alone = %a", recv[3]);
    }
    t_check(DBL_MAX == recv[4], "DBL_MAX + DBL_MAX - DBL_MAX = %a, want DBL_MAX", recv[4]);
}

/* A value of this rank's whose binned sums drop bits: exponents over the whole
 * range, and now and then NaN, an infinity or a signed zero. */
static double spread_value(size_t i, int is_float)
{
    uint64_t x = t_mix(((uint64_t) rank << 32) ^ (i * 2654435761u) ^ (is_float ? 77 : 0));
    double sign = (x >> 62) & 1 ? -1.0 : 1.0;
    switch (x % 211) {
    case 0:
        return 0 == rank ? NAN : 1.0;
    case 1:
        return (x >> 20) & 1 ? INFINITY : -INFINITY;
    case 2:
        return -0.0;
    case 3:
        return 0.0;
    default:
        break;
    }
    int range = is_float ? 250 : 2040, low = is_float ? -140 : -1060;
    double v = sign * ldexp(1.0 + (double) ((x >> 11) & 0xfffff) / 1048576.0,
                            low + (int) ((x >> 32) % (uint64_t) range));
    return is_float ? (double) (float) v : v;
}

/* The two forms of one sum agree bit for bit: the blocking calls of `count`
 * reals (two-pass above coll_offload_repsum_two_pass_min), their nonblocking
 * twins (binned), and blocking calls of a prefix below the crossover (binned). */
static void check_forms_agree(MPI_Comm comm, int is_float, int count, int prefix)
{
    size_t rsize = is_float ? sizeof(float) : sizeof(double), bytes = (size_t) count * rsize;
    MPI_Datatype dt = is_float ? MPI_FLOAT : MPI_DOUBLE;
    char *send = malloc(bytes), *out[4];
    for (int k = 0; k < 4; ++k) {
        out[k] = malloc(bytes);
        memset(out[k], 0x5a, bytes);
    }
    for (int i = 0; i < count; ++i) {
        double v = spread_value((size_t) i, is_float);
        if (is_float) {
            ((float *) send)[i] = (float) v;
        } else {
            ((double *) send)[i] = v;
        }
    }
    int root = np / 2;
    MPI_Request req;
    t_check_rc(MPI_Allreduce(send, out[0], count, dt, MPI_SUM, comm), "MPI_Allreduce");
    t_check_rc(MPI_Iallreduce(send, out[1], count, dt, MPI_SUM, comm, &req), "MPI_Iallreduce");
    t_check_rc(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait");
    t_check_rc(MPI_Allreduce(send, out[2], prefix, dt, MPI_SUM, comm), "MPI_Allreduce prefix");
    t_check(0 == memcmp(out[0], out[1], bytes), "%s x %d: blocking and nonblocking allreduce "
            "differ", is_float ? "float" : "double", count);
    t_check(0 == memcmp(out[0], out[2], (size_t) prefix * rsize), "%s x %d: the first %d sums "
            "differ from a call of %d", is_float ? "float" : "double", count, prefix, prefix);
    memset(out[2], 0x5a, bytes);
    t_check_rc(MPI_Reduce(send, out[2], count, dt, MPI_SUM, root, comm), "MPI_Reduce");
    t_check_rc(MPI_Ireduce(send, out[3], count, dt, MPI_SUM, root, comm, &req), "MPI_Ireduce");
    t_check_rc(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait");
    if (rank == root) {
        t_check(0 == memcmp(out[0], out[2], bytes) && 0 == memcmp(out[0], out[3], bytes),
                "%s x %d: reduce, ireduce and allreduce differ", is_float ? "float" : "double",
                count);
    }
    free(send);
    for (int k = 0; k < 4; ++k) {
        free(out[k]);
    }
}

static void check_comm(MPI_Comm comm, int reproducible, const char *name)
{
    /* 1, 5 and 200 doubles, 7 floats, 3 and 100 complex values: below the
     * two-pass crossover (256 reals); the rest above it */
    static const int counts[] = { 1, 5, 200, 300, 3000, 20000 };
    int differs = 0;
    for (int form = 0; form < F_COUNT; ++form) {
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); ++c) {
            check_kind(K_DOUBLE, counts[c], (form_t) form, comm, reproducible, &differs);
        }
        check_kind(K_FLOAT, 7, (form_t) form, comm, reproducible, &differs);
        check_kind(K_FLOAT, 1000, (form_t) form, comm, reproducible, &differs);
        check_kind(K_FLOAT, 9000, (form_t) form, comm, reproducible, &differs);
        check_kind(K_CDOUBLE, 3, (form_t) form, comm, reproducible, &differs);
        check_kind(K_CDOUBLE, 100, (form_t) form, comm, reproducible, &differs);
        check_kind(K_CDOUBLE, 700, (form_t) form, comm, reproducible, &differs);
        check_kind(K_CDOUBLE, 4100, (form_t) form, comm, reproducible, &differs);
        check_kind(K_CFLOAT, 300, (form_t) form, comm, reproducible, &differs);
        check_kind(K_CFLOAT, 4500, (form_t) form, comm, reproducible, &differs);
    }
    if (reproducible) {
        check_specials(comm);
        check_forms_agree(comm, 0, 6000, 200);
        check_forms_agree(comm, 1, 5000, 255);
    } else if (np >= 3) {
        /* the data do tell the two apart: ordinary sums lose the small atoms */
        int any = 0;
        MPI_Allreduce(&differs, &any, 1, MPI_INT, MPI_MAX, comm);
        t_check(any > 0, "%s: ordinary sums expected, but every element was the exact sum",
                name);
    }
}

int main(int argc, char **argv)
{
    int world = argc > 1 && 0 == strcmp(argv[1], "world");
    if (world) {
        argv[1] = argv[0];
        ++argv;
        --argc;
    }
    t_init(&argc, &argv, "t_repsum");
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    t_section_begin("info key coll_offload_repsum=true");
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "coll_offload_repsum", "true");
    MPI_Comm rs;
    t_check_rc(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &rs), "MPI_Comm_dup_with_info");
    MPI_Comm_set_errhandler(rs, MPI_ERRORS_RETURN);
    check_comm(rs, 1, "info true");
    MPI_Comm_free(&rs);
    t_section_end();

    /* Across nodes the leaders' level is the layer below's, which compares no
     * signatures (a mismatch there is what it is without this component). */
    MPI_Comm node;
    int node_size;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    if (np > 1 && node_size < np) {
        t_skip("ranks disagreeing on the mode: the job spans nodes");
    } else if (np > 1) {
        /* Ranks disagreeing on the mode make calls of different signatures: an
         * argument mismatch on every rank once the NIC is set up, not a hang and
         * not a sum of mixed formats. */
        t_section_begin("ranks disagreeing on the mode");
        MPI_Info_set(info, "coll_offload_repsum", 0 == rank ? "true" : "false");
        MPI_Comm mixed;
        t_check_rc(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &mixed),
                   "MPI_Comm_dup_with_info");
        MPI_Comm_set_errhandler(mixed, MPI_ERRORS_RETURN);
        /* the NIC is set up at the first offloaded call: a barrier's, whatever
         * the allreduce policy */
        t_check_rc(MPI_Barrier(mixed), "set-up barrier");
        /* 200 doubles, which a policy may send to the layer below: the set-up
         * found the ranks disagreeing, so that checks the call too */
        double d[200], out[200];
        for (int i = 0; i < 200; ++i) {
            d[i] = 1.0 + i;
        }
        int rc = MPI_Allreduce(d, out, 200, MPI_DOUBLE, MPI_SUM, mixed);
        int eclass = MPI_SUCCESS;
        MPI_Error_class(rc, &eclass);
        t_check(MPI_ERR_ARG == eclass, "mixed modes: MPI_Allreduce returned %d (class %d), "
                "want MPI_ERR_ARG", rc, eclass);
        MPI_Comm_free(&mixed);
        MPI_Info_set(info, "coll_offload_repsum", "true");
        t_section_end();
    }

    if (world) {
        t_section_begin("MCA parameter (MPI_COMM_WORLD)");
        result_hash = 0;
        check_comm(MPI_COMM_WORLD, 1, "world");
        t_section_end();
        t_section_begin("info key coll_offload_repsum=false");
        MPI_Info_set(info, "coll_offload_repsum", "false");
        MPI_Comm plain;
        t_check_rc(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &plain),
                   "MPI_Comm_dup_with_info");
        MPI_Comm_set_errhandler(plain, MPI_ERRORS_RETURN);
        check_comm(plain, 0, "info false");
        MPI_Comm_free(&plain);
        t_section_end();
        if (0 == rank) {
            printf("t_repsum: hash %016llx\n", (unsigned long long) result_hash);
        }
    } else {
        t_section_begin("ordinary sums (MPI_COMM_WORLD)");
        check_comm(MPI_COMM_WORLD, 0, "world");
        t_section_end();
    }
    MPI_Info_free(&info);
    return t_finish();
}
