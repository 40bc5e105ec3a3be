/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — reduction and broadcast trees (see tree.h).
 */
#include "tree/tree.h"

#include <stddef.h>

static int to_rank(int vrank, int root, int size)
{
    return (vrank + root) % size;
}

/* k-nomial tree in virtual ranks: the parent of v clears v's lowest non-zero
 * base-k digit; the children of v add d*k^j for every digit position j below
 * v's lowest non-zero digit and d in 1..k-1. */
static int knomial_parent(int v, int radix)
{
    int place = 1;
    while (v % (place * radix) == 0) {
        place *= radix;
    }
    return v - (v % (place * radix));
}

static int knomial_children(int v, int radix, int size, int *out)
{
    int n = 0;
    /* Largest power of radix that divides v (for v == 0: beyond size). */
    long limit = 1;
    if (v == 0) {
        while (limit < size) {
            limit *= radix;
        }
    } else {
        while (v % (limit * radix) == 0) {
            limit *= radix;
        }
    }
    for (long place = 1; place < limit; place *= radix) {
        for (int d = 1; d < radix; ++d) {
            long c = v + d * place;
            if (c >= size) {
                break;
            }
            out[n++] = (int) c;
        }
    }
    return n;
}

int ofl_tree_node(ofl_tree_kind_t kind, int radix, int size, int root, int rank,
                  ofl_tree_node_t *node)
{
    if (NULL == node || size < 1 || root < 0 || root >= size || rank < 0 || rank >= size) {
        return -1;
    }
    if (OFL_TREE_FLAT == kind) {
        kind = OFL_TREE_KARY;
        radix = size > 1 ? size - 1 : 1;
    }
    if (radix < 1) {
        return -1;
    }
    int v = (rank - root + size) % size;
    node->nchildren = 0;
    if (OFL_TREE_KARY == kind) {
        if (radix > OFL_TREE_MAX_CHILDREN) {
            return -1;
        }
        node->parent = (0 == v) ? -1 : to_rank((v - 1) / radix, root, size);
        for (int i = 1; i <= radix; ++i) {
            long c = (long) v * radix + i;
            if (c >= size) {
                break;
            }
            node->children[node->nchildren++] = to_rank((int) c, root, size);
        }
        return 0;
    }
    if (OFL_TREE_KNOMIAL == kind) {
        /* The radix bound (as documented) also bounds tmp: at most radix - 1
         * children per base-radix digit of an int. */
        if (radix < 2 || radix > OFL_TREE_MAX_CHILDREN) {
            return -1;
        }
        int tmp[OFL_TREE_MAX_CHILDREN * 32];
        int n = knomial_children(v, radix, size, tmp);
        if (n > OFL_TREE_MAX_CHILDREN) {
            return -1;
        }
        node->parent = (0 == v) ? -1 : to_rank(knomial_parent(v, radix), root, size);
        for (int i = 0; i < n; ++i) {
            node->children[i] = to_rank(tmp[i], root, size);
        }
        node->nchildren = n;
        return 0;
    }
    return -1;
}

int ofl_tree_depth(ofl_tree_kind_t kind, int radix, int size)
{
    int depth = 0;
    for (int r = 0; r < size; ++r) {
        ofl_tree_node_t node;
        int d = 0;
        int cur = r;
        while (1) {
            if (0 != ofl_tree_node(kind, radix, size, 0, cur, &node)) {
                return -1;
            }
            if (node.parent < 0) {
                break;
            }
            cur = node.parent;
            if (++d > size) {
                return -1; /* not a tree: a cycle */
            }
        }
        if (d > depth) {
            depth = d;
        }
    }
    return depth;
}

const char *ofl_tree_kind_name(ofl_tree_kind_t kind)
{
    switch (kind) {
    case OFL_TREE_KARY:
        return "kary";
    case OFL_TREE_KNOMIAL:
        return "knomial";
    case OFL_TREE_FLAT:
        return "flat";
    }
    return "?";
}
