/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Persistent collectives under MPI-4's names. Open MPI 5 has them in mpi.h
 * (MPI_Allreduce_init, ...), although its MPI_VERSION still says 3; Open MPI 4.1
 * only as the pcollreq extension's MPIX_<coll>_init in mpi-ext.h. Tests and
 * benchmarks use the MPI-4 names.
 */
#ifndef MPI_PERSIST_H
#define MPI_PERSIST_H

#include <mpi.h>

#if MPI_VERSION < 4 && !(defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#include <mpi-ext.h>
#define MPI_Allreduce_init MPIX_Allreduce_init
#define MPI_Reduce_init MPIX_Reduce_init
#define MPI_Bcast_init MPIX_Bcast_init
#define MPI_Barrier_init MPIX_Barrier_init
#define MPI_Reduce_scatter_init MPIX_Reduce_scatter_init
#define MPI_Reduce_scatter_block_init MPIX_Reduce_scatter_block_init
#define MPI_Scan_init MPIX_Scan_init
#define MPI_Exscan_init MPIX_Exscan_init
#endif

#endif
