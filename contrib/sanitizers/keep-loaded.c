/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Preloaded into MPI processes for the sanitizer smoke run: dlclose() does
 * nothing, so every component Open MPI unloads in MPI_Finalize (ours included)
 * is still mapped when LeakSanitizer reports at exit. Without it the
 * allocation stacks of those components show as "<unknown module>" and a leak
 * cannot be told to be ours or Open MPI's. Open MPI 4.1 has no parameter to
 * keep components loaded.
 */
int dlclose(void *handle)
{
    (void) handle;
    return 0;
}
