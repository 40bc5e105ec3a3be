/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll-offload-probe: what coll-offload-check (installed beside it) launches under
 * mpirun. Every rank runs a few small MPI_Allreduce calls on MPI_COMM_WORLD and reads
 * the component's MPI_T counters coll_offload_allreduce_offloaded and _fallback; rank 0
 * gathers them and prints, one fact a line, for the check to judge:
 *
 *   probe: ranks N
 *   probe: rank R pvar 0|1 offloaded N fallback M
 *   probe: cvar NAME VALUE     (as this process sees it: mca_base_component_path, coll,
 *                               every coll_*_priority; "(none)" when not registered)
 *   probe: env NAME VALUE      (OMPI_MCA_ variables of this process that can hide
 *                               the component, as the launcher handed them over)
 *   probe: library TEXT        (MPI_Get_library_version, first line)
 *   probe: done
 *
 * A counter that does not exist means the component was never loaded into the process;
 * one that exists but stayed at 0 means it was loaded but another component served
 * MPI_Allreduce. Only MPI and MPI_T: it runs with or without coll/offload.
 */
#include <mpi.h>
#include "pvar.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_CALLS 8

/* Looks up the named counter and allocates a handle for it (Open MPI counts a counter's
 * handle from its allocation on: made before the calls): 1 when it exists. */
static int open_counter(MPI_T_pvar_session session, const char *want, MPI_T_pvar_handle *h,
                        MPI_Datatype *dt)
{
    int num = 0;
    MPI_T_pvar_get_num(&num);
    for (int i = 0; i < num; i++) {
        char name[256], desc[1024];
        int nlen = sizeof(name), dlen = sizeof(desc);
        int verb, cls, bind, ro, cont, atomic, count = 0;
        MPI_T_enum en;
        if (MPI_SUCCESS != MPI_T_pvar_get_info(i, name, &nlen, &verb, &cls, dt, &en, desc,
                                               &dlen, &bind, &ro, &cont, &atomic)
            || 0 != strcmp(name, want)) {
            continue;
        }
        if (MPI_SUCCESS != MPI_T_pvar_handle_alloc(session, i, NULL, h, &count)) {
            return 0;
        }
        return cont || MPI_SUCCESS == MPI_T_pvar_start(session, *h);
    }
    return 0;
}

/* The counter's value since open_counter; 0 when it cannot be read. */
static unsigned long long read_counter(MPI_T_pvar_session session, MPI_T_pvar_handle h,
                                       MPI_Datatype dt)
{
    unsigned long long v;
    ofl_pvar_read_count(session, h, dt, &v);
    return v;
}

/* Prints every control variable named `want`, or whose name starts with `prefix` and
 * ends with `suffix`, as "probe: cvar NAME VALUE"; "(none)" when `want` does not exist. */
static void print_cvars(const char *want, const char *prefix, const char *suffix)
{
    int num = 0, seen = 0;
    MPI_T_cvar_get_num(&num);
    for (int i = 0; i < num; i++) {
        char name[256], desc[1024];
        int nlen = sizeof(name), dlen = sizeof(desc), verb, bind, scope, count = 0;
        MPI_Datatype dt;
        MPI_T_enum en;
        MPI_T_cvar_handle h;
        if (MPI_SUCCESS != MPI_T_cvar_get_info(i, name, &nlen, &verb, &dt, &en, desc, &dlen,
                                               &bind, &scope)) {
            continue;
        }
        size_t n = strlen(name);
        if (NULL != want ? 0 != strcmp(name, want)
                         : (0 != strncmp(name, prefix, strlen(prefix)) || n < strlen(suffix)
                            || 0 != strcmp(name + n - strlen(suffix), suffix))) {
            continue;
        }
        if (MPI_SUCCESS != MPI_T_cvar_handle_alloc(i, NULL, &h, &count)) {
            continue;
        }
        char *buf = calloc(1, (size_t) (count > 64 ? count : 64) + 1);
        if (NULL != buf && MPI_SUCCESS == MPI_T_cvar_read(h, buf)) {
            seen = 1;
            if (MPI_CHAR == dt) {
                printf("probe: cvar %s %s\n", name, buf);
            } else if (MPI_INT == dt) {
                printf("probe: cvar %s %d\n", name, *(int *) buf);
            }
        }
        free(buf);
        MPI_T_cvar_handle_free(&h);
    }
    if (NULL != want && !seen) {
        printf("probe: cvar %s (none)\n", want);
    }
}

int main(int argc, char **argv)
{
    int rank, size, provided;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    unsigned long long mine[4] = { 0, 0, 0, 1 };
    int t_ok = MPI_SUCCESS == MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    int have_off = 0, have_fb = 0, have_session = 0;
    MPI_T_pvar_session session;
    MPI_T_pvar_handle h_off, h_fb;
    MPI_Datatype dt_off = MPI_UNSIGNED_LONG_LONG, dt_fb = MPI_UNSIGNED_LONG_LONG;
    if (t_ok && MPI_SUCCESS == MPI_T_pvar_session_create(&session)) {
        have_session = 1;
        have_off = open_counter(session, "coll_offload_allreduce_offloaded", &h_off, &dt_off);
        have_fb = open_counter(session, "coll_offload_allreduce_fallback", &h_fb, &dt_fb);
    }

    int in = rank + 1, out = 0;
    for (int i = 0; i < PROBE_CALLS; i++) {
        MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        mine[3] = mine[3] && out == size * (size + 1) / 2;
    }

    if (have_off && have_fb) {
        mine[0] = 1;
        mine[1] = read_counter(session, h_off, dt_off);
        mine[2] = read_counter(session, h_fb, dt_fb);
    }
    if (have_off) {
        MPI_T_pvar_handle_free(session, &h_off);
    }
    if (have_fb) {
        MPI_T_pvar_handle_free(session, &h_fb);
    }
    if (have_session) {
        MPI_T_pvar_session_free(&session);
    }
    unsigned long long *all = calloc((size_t) size * 4, sizeof(*all));
    if (NULL == all) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Gather(mine, 4, MPI_UNSIGNED_LONG_LONG, all, 4, MPI_UNSIGNED_LONG_LONG, 0,
               MPI_COMM_WORLD);
    if (0 == rank) {
        printf("probe: ranks %d\n", size);
        for (int r = 0; r < size; r++) {
            printf("probe: rank %d pvar %llu offloaded %llu fallback %llu%s\n", r,
                   all[4 * r], all[4 * r + 1], all[4 * r + 2],
                   all[4 * r + 3] ? "" : " WRONG RESULT");
        }
        if (t_ok) {
            print_cvars("mca_base_component_path", NULL, NULL);
            print_cvars("coll", NULL, NULL);
            print_cvars(NULL, "coll_", "_priority");
        }
        static const char *envs[] = { "OMPI_MCA_mca_base_component_path", "OMPI_MCA_coll",
                                      "OMPI_MCA_coll_offload_priority",
                                      "OMPI_MCA_mca_base_param_files" };
        for (size_t k = 0; k < sizeof(envs) / sizeof(envs[0]); k++) {
            const char *v = getenv(envs[k]);
            if (NULL != v) {
                printf("probe: env %s %s\n", envs[k], v);
            }
        }
        char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
        int len = 0;
        MPI_Get_library_version(lib, &len);
        lib[strcspn(lib, "\n")] = '\0';
        printf("probe: library %s\n", lib);
        printf("probe: done\n");
        fflush(stdout);
    }
    free(all);
    if (t_ok) {
        MPI_T_finalize();
    }
    MPI_Finalize();
    return 0;
}
