/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — reduction and broadcast trees.
 *
 * A tree is described per rank (parent, ordered children) so that the schedule
 * compiler can build each rank's program without materialising the whole tree.
 * Ranks are renumbered relative to the root (virtual rank = (rank - root) mod size),
 * so one shape serves every root. Children are listed in increasing virtual rank:
 * that order is the fixed combine order that makes float results reproducible.
 */
#ifndef OFL_TREE_H
#define OFL_TREE_H

#define OFL_TREE_MAX_CHILDREN 64

typedef enum {
    OFL_TREE_KARY,     /* heap-ordered k-ary tree: shallow fan-in, depth log_k(n) */
    OFL_TREE_KNOMIAL,  /* k-nomial: the root talks to more peers, leaves finish sooner */
    OFL_TREE_FLAT      /* root is the parent of everybody (k-ary with k = n - 1) */
} ofl_tree_kind_t;

typedef struct {
    int parent;                              /* -1 at the root */
    int nchildren;
    int children[OFL_TREE_MAX_CHILDREN];     /* comm ranks, fixed combine order */
} ofl_tree_node_t;

/* Fill *node for `rank` in a tree of `size` ranks rooted at `root`.
 * Returns 0, or -1 on invalid arguments (radix < 1, rank/root out of range,
 * radix beyond OFL_TREE_MAX_CHILDREN). */
int ofl_tree_node(ofl_tree_kind_t kind, int radix, int size, int root, int rank,
                  ofl_tree_node_t *node);

/* Depth (edges from root to the deepest leaf) of the same tree; -1 on error. */
int ofl_tree_depth(ofl_tree_kind_t kind, int radix, int size);

const char *ofl_tree_kind_name(ofl_tree_kind_t kind);

#endif
