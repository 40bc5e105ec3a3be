/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * repsum_conv: the host-side cost of reproducible sums, one thread, no MPI.
 *
 *   repsum_conv [REPS [COUNT]]
 *
 * times each conversion and ALU kernel of the two-pass form (repsum/repsum_wide.h)
 * and of the 32-byte form (repsum/repsum.h) over COUNT doubles (default 131072:
 * 1 MiB), against the ordinary add, and prints the best of REPS runs (default
 * 30) in ns per value: the best run is the one least disturbed by other work
 * on the machine. "scalar" rows are the portable definitions that the entry
 * points must equal bit for bit; then the entry points at each vector level
 * the CPU has.
 *
 * The data are those of repsum_demo -t (exponents over 60 binades), with
 * alternating signs; the meta the pass-2 conversions use is the merge of two
 * ranks' metas, as after the pass-1 allreduce.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <math.h>

#include "clocks.h"
#include "repsum/repsum.h"
#include "repsum/repsum_wide.h"

/* Keep the compiler from dropping the ordinary add's loop. */
static void plain_add(double *out, const double *a, const double *b, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        out[i] = a[i] + b[i];
    }
}

static int reps = 30;
static size_t count = 131072;

#define TIME(name, stmt)                                                                      \
    do {                                                                                      \
        double best = 1e30;                                                                   \
        for (int r_ = 0; r_ < reps; ++r_) {                                                   \
            double t0_ = now_s();                                                             \
            stmt;                                                                             \
            double dt_ = now_s() - t0_;                                                       \
            best = dt_ < best ? dt_ : best;                                                   \
        }                                                                                     \
        printf("%-34s %7.3f ns/value\n", name, best * 1e9 / (double) count);                 \
    } while (0)

int main(int argc, char **argv)
{
    if (argc > 1) {
        reps = atoi(argv[1]) > 0 ? atoi(argv[1]) : reps;
    }
    if (argc > 2) {
        count = (size_t) atol(argv[2]) > 0 ? (size_t) atol(argv[2]) : count;
    }
    double *x = aligned_alloc(64, count * sizeof(double));
    double *y = aligned_alloc(64, count * sizeof(double));
    double *z = aligned_alloc(64, count * sizeof(double));
    ofl_repsum_meta_t *m = aligned_alloc(64, count * sizeof(*m) + 64);
    ofl_repsum_meta_t *m2 = aligned_alloc(64, count * sizeof(*m) + 64);
    ofl_repsum_wide_t *w = aligned_alloc(64, count * sizeof(*w));
    ofl_repsum_wide_t *w2 = aligned_alloc(64, count * sizeof(*w));
    ofl_repsum_t *e = aligned_alloc(64, count * sizeof(*e));
    ofl_repsum_t *e2 = aligned_alloc(64, count * sizeof(*e));
    if (!x || !y || !z || !m || !m2 || !w || !w2 || !e || !e2) {
        fprintf(stderr, "repsum_conv: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < count; ++i) {
        double v = ldexp(1.0 + (double) ((i * 2654435761u) % 1000) / 1000.0, (int) (i % 60) - 30);
        x[i] = (i & 1) ? -v : v;
        y[i] = 0.75 * x[(i * 7) % count];
    }
    /* the final meta of a two-rank sum, and each rank's integers under it */
    ofl_repsum_meta_from_double(m, x, count);
    ofl_repsum_meta_from_double(m2, y, count);
    ofl_repsum_meta_merge(m, m, m2, count);
    ofl_repsum_wide_from_double(w2, y, m, count);
    ofl_repsum_from_double(e2, y, count);

    printf("%zu doubles, best of %d\n", count, reps);
    TIME("ordinary add", plain_add(z, x, y, count));
    TIME("scalar: meta_from_double", ofl_repsum_meta_from_double_ref(m2, x, count));
    TIME("scalar: wide_from_double", ofl_repsum_wide_from_double_ref(w, x, m, count));
    TIME("scalar: wide_add", ofl_repsum_wide_add_ref(w, w, w2, count));
    ofl_repsum_wide_from_double(w, x, m, count);
    ofl_repsum_wide_add(w, w, w2, count);
    TIME("scalar: wide_to_double", ofl_repsum_wide_to_double_ref(z, w, m, count));
    TIME("scalar: wide_to_float", ofl_repsum_wide_to_float_ref((float *) z, w, m, count));
    TIME("meta_merge", ofl_repsum_meta_merge(m2, m2, m, count));
    /* the entry points at each vector level this CPU has, best first */
    static const char *const names[] = { "scalar", "AVX2", "AVX-512" };
    for (int level = ofl_repsum_wide_vector(); level >= 1; --level) {
        ofl_repsum_wide_set_vector(level);
        char label[64];
#define LABEL(what) (snprintf(label, sizeof(label), "%s: %s", names[level], what), label)
        TIME(LABEL("meta_from_double"), ofl_repsum_meta_from_double(m2, x, count));
        TIME(LABEL("wide_from_double"), ofl_repsum_wide_from_double(w, x, m, count));
        TIME(LABEL("wide_add"), ofl_repsum_wide_add(w, w, w2, count));
        ofl_repsum_wide_from_double(w, x, m, count);
        ofl_repsum_wide_add(w, w, w2, count);
        TIME(LABEL("wide_to_double"), ofl_repsum_wide_to_double(z, w, m, count));
        TIME(LABEL("wide_to_float"), ofl_repsum_wide_to_float((float *) z, w, m, count));
    }
    ofl_repsum_wide_set_vector(2);
    float *f = aligned_alloc(64, count * sizeof(float) + 64);
    if (NULL == f) {
        fprintf(stderr, "repsum_conv: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < count; ++i) {
        f[i] = (float) x[i];
    }
    TIME("two-pass: meta_from_float", ofl_repsum_meta_from_float(m2, f, count));
    TIME("two-pass: wide_from_float", ofl_repsum_wide_from_float(w, f, m, count));
    free(f);
    TIME("32-byte: from_double", ofl_repsum_from_double(e, x, count));
    TIME("32-byte: add", ofl_repsum_add(e, e, e2, count));
    TIME("32-byte: to_double", ofl_repsum_to_double(z, e, count));
    free(x);
    free(y);
    free(z);
    free(m);
    free(m2);
    free(w);
    free(w2);
    free(e);
    free(e2);
    return 0;
}
