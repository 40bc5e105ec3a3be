/*
 * coll/offload — where the progress agent thread runs: a core no rank of this
 * node is bound to, from hwloc's topology and the launcher's per-process
 * cpusets (PMIx). Placement only; the agent itself is src/engine/agent.c, and
 * coll_offload_nb.c starts it.
 */
#include "coll_offload.h"

#include <stdio.h>
#include <stdlib.h>

#include "ompi/proc/proc.h"
#include "opal/mca/hwloc/base/base.h"

static void cpu_set_describe(hwloc_const_bitmap_t set, char *buf, size_t len)
{
    char *text = NULL;
    if (hwloc_bitmap_list_asprintf(&text, set) >= 0 && NULL != text) {
        snprintf(buf, len, "%s", text);
    } else {
        snprintf(buf, len, "?");
    }
    free(text);
}

/* Where the agent runs: a core that no rank on this node is bound to (spread
 * over such cores by local rank), else unbound — every allowed PU — when each
 * core has a rank or some local rank is not bound at all (it may run anywhere).
 * Ranks' bindings come from the launcher's per-process cpuset (PMIx). */
hwloc_bitmap_t mca_coll_offload_agent_cpuset(char *why, size_t len)
{
    if (!mca_coll_offload_component.params.agent_bind) {
        snprintf(why, len, "left as started (coll_offload_agent_bind=0)");
        return NULL;
    }
    if (OPAL_SUCCESS != opal_hwloc_base_get_topology() || NULL == opal_hwloc_topology) {
        snprintf(why, len, "left as started (no hwloc topology)");
        return NULL;
    }
    hwloc_topology_t topo = opal_hwloc_topology;
    hwloc_const_bitmap_t allowed = hwloc_topology_get_allowed_cpuset(topo);
    hwloc_bitmap_t used = hwloc_bitmap_alloc();
    hwloc_bitmap_t one = hwloc_bitmap_alloc();
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    int unbound = 0;
    unsigned local_rank = 0;   /* my place among this node's ranks */
    ompi_communicator_t *world = &ompi_mpi_comm_world.comm;
    int n = ompi_comm_size(world);
    int me = ompi_comm_rank(world);
    for (int r = 0; r < n && !unbound; ++r) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(world, r);
        if (NULL == proc || (r != me && !OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags))) {
            continue;
        }
        local_rank += r < me;
        char *cpus = NULL;
        int rc;
        OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, OFL_KEY_CPUSET, &proc->super.proc_name, &cpus,
                                       OFL_KEY_STRING);
        if (OPAL_SUCCESS != rc || NULL == cpus || 0 != hwloc_bitmap_list_sscanf(one, cpus)
            || hwloc_bitmap_iszero(one)) {
            unbound = 1;
        } else {
            hwloc_bitmap_or(used, used, one);
        }
        free(cpus);
    }
    char pus[128];
    if (unbound) {
        hwloc_bitmap_copy(set, allowed);
        snprintf(why, len, "unbound: a rank on this node is not bound to cores");
    } else {
        hwloc_bitmap_t spare = hwloc_bitmap_alloc();
        hwloc_bitmap_andnot(spare, allowed, used);
        int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
        int nfree = 0;
        for (int i = 0; i < ncores; ++i) {
            hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (unsigned) i);
            hwloc_bitmap_and(one, core->cpuset, allowed);
            nfree += !hwloc_bitmap_iszero(one) && hwloc_bitmap_isincluded(one, spare);
        }
        if (nfree > 0) {
            int pick = (int) (local_rank % (unsigned) nfree);
            for (int i = 0, k = 0; i < ncores; ++i) {
                hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (unsigned) i);
                hwloc_bitmap_and(one, core->cpuset, allowed);
                if (hwloc_bitmap_iszero(one) || !hwloc_bitmap_isincluded(one, spare)) {
                    continue;
                }
                if (k++ == pick) {
                    hwloc_bitmap_copy(set, one);
                    cpu_set_describe(set, pus, sizeof(pus));
                    snprintf(why, len, "bound to core %u (PUs %s), which no local rank uses",
                             core->logical_index, pus);
                    break;
                }
            }
        } else if (!hwloc_bitmap_iszero(spare)) {
            hwloc_bitmap_copy(set, spare);
            cpu_set_describe(set, pus, sizeof(pus));
            snprintf(why, len, "bound to PUs %s, which no local rank uses", pus);
        } else {
            hwloc_bitmap_copy(set, allowed);
            snprintf(why, len, "unbound: every core has a local rank bound to it");
        }
        hwloc_bitmap_free(spare);
    }
    hwloc_bitmap_free(used);
    hwloc_bitmap_free(one);
    return set;
}
