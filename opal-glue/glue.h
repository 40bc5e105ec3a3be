/*
 * coll/offload — thin adapters to OPAL: MCA variables, MPI_T pvars, progress.
 */
#ifndef OFL_GLUE_H
#define OFL_GLUE_H

#include "coll_offload.h"

int ofl_glue_register_params(mca_coll_offload_component_t *c);
int ofl_glue_register_pvars(mca_coll_offload_component_t *c);
/* Parse the *_policy strings; a bad one is reported and replaced by its default. */
int ofl_glue_parse_policies(mca_coll_offload_component_t *c);

/* For ofl_wait_opts_t.progress: run OPAL's progress engine once. */
void ofl_glue_progress(void *ctx);

/* Polls to spin before each poll also yields: none when the node is
 * oversubscribed (Open MPI then sets yield_when_idle), else the MCA value. */
unsigned ofl_glue_spin_before_yield(const mca_coll_offload_params_t *p);

/* How a blocking call waits: OPAL's progress, the spin above, the watchdog and
 * the liveness period of the MCA values. */
ofl_wait_opts_t ofl_glue_wait_opts(const mca_coll_offload_params_t *p);

#endif
