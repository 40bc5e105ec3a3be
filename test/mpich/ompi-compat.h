/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Force-included (-include) into every compile of MPICH's test programs when
 * they are built against Open MPI by run.sh. It changes no test: it only maps
 * names the tests use onto what Open MPI provides.
 */
#ifndef COLL_OFFLOAD_MPICH_OMPI_COMPAT_H
#define COLL_OFFLOAD_MPICH_OMPI_COMPAT_H

#include <mpi.h>

/* MPICH's dtpools library (linked into the tests that take -type=/-count=
 * arguments) still calls two MPI-1 names removed in MPI-3.0; Open MPI's mpi.h
 * turns them into a compile error. Their MPI-2 successors take the same
 * arguments. */
#undef MPI_Type_hvector
#define MPI_Type_hvector MPI_Type_create_hvector
#undef MPI_Type_hindexed
#define MPI_Type_hindexed MPI_Type_create_hindexed

/* Open MPI 4.1 has the MPI-4 persistent collectives only as the pcollreq
 * extension's MPIX_<coll>_init (same arguments); Open MPI 5 has the MPI-4 names. */
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define MPI_Allgather_init MPIX_Allgather_init
#define MPI_Allgatherv_init MPIX_Allgatherv_init
#define MPI_Allreduce_init MPIX_Allreduce_init
#define MPI_Alltoall_init MPIX_Alltoall_init
#define MPI_Alltoallv_init MPIX_Alltoallv_init
#define MPI_Alltoallw_init MPIX_Alltoallw_init
#define MPI_Barrier_init MPIX_Barrier_init
#define MPI_Bcast_init MPIX_Bcast_init
#define MPI_Exscan_init MPIX_Exscan_init
#define MPI_Gather_init MPIX_Gather_init
#define MPI_Gatherv_init MPIX_Gatherv_init
#define MPI_Reduce_init MPIX_Reduce_init
#define MPI_Reduce_scatter_init MPIX_Reduce_scatter_init
#define MPI_Reduce_scatter_block_init MPIX_Reduce_scatter_block_init
#define MPI_Scan_init MPIX_Scan_init
#define MPI_Scatter_init MPIX_Scatter_init
#define MPI_Scatterv_init MPIX_Scatterv_init
#define MPI_Neighbor_allgather_init MPIX_Neighbor_allgather_init
#define MPI_Neighbor_allgatherv_init MPIX_Neighbor_allgatherv_init
#define MPI_Neighbor_alltoall_init MPIX_Neighbor_alltoall_init
#define MPI_Neighbor_alltoallv_init MPIX_Neighbor_alltoallv_init
#define MPI_Neighbor_alltoallw_init MPIX_Neighbor_alltoallw_init
#endif
#endif

#endif
