/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the lazy, collective set-up of a communicator (coll_offload_setup.c), its
 * software NIC's part (coll_offload_shm.c) and the progress agent's start
 * (coll_offload_agent.c).
 */
#ifndef MCA_COLL_OFFLOAD_SETUP_H
#define MCA_COLL_OFFLOAD_SETUP_H

#include "coll_offload.h"

BEGIN_C_DECLS

/* Set the communicator's NIC up (collective; coll_offload_setup.c). OMPI_SUCCESS
 * with m->state READY or DISABLED (every rank alike: the calls fall back); an
 * error when this rank cannot know what the others decided (the agreement
 * itself failed here): the call must return it, and the communicator is marked
 * failed for the others. */
int mca_coll_offload_setup(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm);
/* The NIC backend's part of it (coll_offload_shm.c): collective; *ready 1 with
 * m->nic attached, 0 when every rank falls back; or the error of an agreement
 * that failed on this rank. */
int mca_coll_offload_shm_setup(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm,
                               int local_ok, int streams, int *ready);
/* Give back the NIC, the programs and the shared-memory share (coll_offload_module.c). */
void mca_coll_offload_release_nic(mca_coll_offload_module_t *m);

/* Set the communicator up from a persistent init (collective, in order): OMPI_SUCCESS
 * (then the module is ready, or falls back for good, on every rank alike) or the error
 * of a set-up this rank could not agree on. */
int mca_coll_offload_setup_in_init(mca_coll_offload_module_t *m, struct ompi_communicator_t *comm);

/* May persistent collectives on `comm` be matched by the order of their starts (the
 * communicator asserts mpi_assert_strict_persistent_collective_ordering, or
 * coll_offload_persistent_ordered says every communicator does)? */
int mca_coll_offload_persistent_ordered(struct ompi_communicator_t *comm);

/* The execution queue and its progress agent (coll_offload_agent.c): open the
 * queue with the MCA values and start the agent where it should run (once, at the
 * first nonblocking or persistent call); in an application thread, print what the
 * agent found in its set-up (the real-time class refused) once it is ready; stop it
 * at component close. */
void mca_coll_offload_agent_open(void);
void mca_coll_offload_agent_poll(void);
void mca_coll_offload_agent_close(void);

END_C_DECLS

#endif
