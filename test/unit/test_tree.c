/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Unit test of the reduction/broadcast trees (src/tree).
 *
 * Every (kind, radix, size, root) is checked as a whole tree built from the
 * per-rank answers: BFS from the root must reach every rank exactly once, parent
 * and child lists must agree, children must come in increasing virtual rank (the
 * combine order the float reproducibility relies on), and the depth must match a
 * value computed here from the tree's definition, not by walking the tree.
 */
#include "tree/tree.h"
#include "unit.h"

#include <string.h>

#define MAX_SIZE 70

/* Virtual rank: the rank renumbered so that the root is 0. */
static int vrank(int rank, int root, int size)
{
    return (rank - root + size) % size;
}

/* Smallest d such that a complete radix-ary tree of depth d holds size nodes. */
static int expect_depth_kary(int radix, int size)
{
    long held = 1;
    long level = 1;
    int d = 0;
    while (held < size) {
        level *= radix;
        held += level;
        d++;
    }
    return d;
}

/* In a k-nomial tree each step towards the root clears one non-zero base-radix
 * digit, so a node's depth is its count of non-zero digits; the tree's depth is
 * the largest count below size. */
static int nonzero_digits(int v, int radix)
{
    int n = 0;
    for (; v > 0; v /= radix) {
        n += (v % radix) != 0;
    }
    return n;
}

static int digits(int v, int radix)
{
    int n = 0;
    for (; v > 0; v /= radix) {
        n++;
    }
    return n;
}

static int expect_depth_knomial(int radix, int size)
{
    int d = 0;
    for (int v = 0; v < size; ++v) {
        int z = nonzero_digits(v, radix);
        d = z > d ? z : d;
    }
    return d;
}

/* The virtual parent the definitions promise: heap order for k-ary, "clear the
 * lowest non-zero digit" for k-nomial. */
static int expect_vparent(ofl_tree_kind_t kind, int radix, int size, int v)
{
    if (OFL_TREE_FLAT == kind) {
        return 0;
    }
    if (OFL_TREE_KARY == kind) {
        return (v - 1) / radix;
    }
    (void) size;
    int place = 1;
    while ((v / place) % radix == 0) {
        place *= radix;
    }
    return v - ((v / place) % radix) * place;
}

static void check_tree(ofl_tree_kind_t kind, int radix, int size, int root)
{
    static ofl_tree_node_t node[MAX_SIZE];
    const char *kn = ofl_tree_kind_name(kind);
    for (int r = 0; r < size; ++r) {
        memset(&node[r], 0x5a, sizeof(node[r]));
        int rc = ofl_tree_node(kind, radix, size, root, r, &node[r]);
        CHECK(0 == rc, "%s radix %d size %d root %d rank %d: rc %d", kn, radix, size, root,
              r, rc);
        if (0 != rc) {
            return;
        }
    }
    CHECK(-1 == node[root].parent, "%s/%d size %d root %d: root parent %d", kn, radix, size,
          root, node[root].parent);

    for (int r = 0; r < size; ++r) {
        const ofl_tree_node_t *t = &node[r];
        int v = vrank(r, root, size);
        CHECK(t->nchildren >= 0 && t->nchildren <= OFL_TREE_MAX_CHILDREN,
              "%s/%d size %d root %d rank %d: nchildren %d", kn, radix, size, root, r,
              t->nchildren);
        if (t->nchildren < 0 || t->nchildren > OFL_TREE_MAX_CHILDREN) {
            return;
        }
        if (OFL_TREE_KARY == kind) {
            CHECK(t->nchildren <= radix, "kary/%d size %d rank %d: %d children", radix, size,
                  r, t->nchildren);
        }
        if (r != root) {
            int p = t->parent;
            CHECK(p >= 0 && p < size && p != r, "%s/%d size %d root %d rank %d: parent %d", kn,
                  radix, size, root, r, p);
            if (p < 0 || p >= size) {
                return;
            }
            int vp = expect_vparent(kind, radix, size, v);
            CHECK(vrank(p, root, size) == vp, "%s/%d size %d root %d rank %d: vparent %d != %d",
                  kn, radix, size, root, r, vrank(p, root, size), vp);
            /* The parent lists r exactly once. */
            int seen = 0;
            for (int i = 0; i < node[p].nchildren; ++i) {
                seen += node[p].children[i] == r;
            }
            CHECK(1 == seen, "%s/%d size %d root %d: rank %d listed %d times by parent %d", kn,
                  radix, size, root, r, seen, p);
        }
        int prev = 0;
        for (int i = 0; i < t->nchildren; ++i) {
            int c = t->children[i];
            CHECK(c >= 0 && c < size && c != r && c != root,
                  "%s/%d size %d root %d rank %d: child %d", kn, radix, size, root, r, c);
            if (c < 0 || c >= size) {
                return;
            }
            CHECK(node[c].parent == r, "%s/%d size %d root %d: child %d of %d has parent %d",
                  kn, radix, size, root, c, r, node[c].parent);
            /* Strictly increasing virtual rank: the fixed combine order. */
            int vc = vrank(c, root, size);
            CHECK(vc > prev, "%s/%d size %d root %d rank %d: child %d (v %d) after v %d", kn,
                  radix, size, root, r, c, vc, prev);
            prev = vc;
        }
    }

    /* BFS from the root: a rank met twice means a cycle or a shared child; a rank
     * never met is disconnected. */
    int depth[MAX_SIZE];
    int queue[MAX_SIZE];
    int met[MAX_SIZE] = { 0 };
    int head = 0, tail = 0, twice = 0, maxdepth = 0;
    queue[tail++] = root;
    met[root] = 1;
    depth[root] = 0;
    while (head < tail) {
        int r = queue[head++];
        maxdepth = depth[r] > maxdepth ? depth[r] : maxdepth;
        for (int i = 0; i < node[r].nchildren; ++i) {
            int c = node[r].children[i];
            if (met[c]++) {
                twice++;
                continue;
            }
            depth[c] = depth[r] + 1;
            queue[tail++] = c;
        }
    }
    CHECK(0 == twice, "%s/%d size %d root %d: %d ranks reached twice", kn, radix, size, root,
          twice);
    CHECK(tail == size, "%s/%d size %d root %d: BFS reached %d ranks", kn, radix, size, root,
          tail);
    int d = ofl_tree_depth(kind, radix, size);
    CHECK(d == maxdepth, "%s/%d size %d root %d: depth %d, BFS depth %d", kn, radix, size,
          root, d, maxdepth);
}

static void check_depth(ofl_tree_kind_t kind, int radix, int size)
{
    const char *kn = ofl_tree_kind_name(kind);
    int d = ofl_tree_depth(kind, radix, size);
    int want;
    if (OFL_TREE_KARY == kind) {
        want = expect_depth_kary(radix, size);
    } else if (OFL_TREE_KNOMIAL == kind) {
        want = expect_depth_knomial(radix, size);
        /* The classic bound: no deeper than the digit count of the largest rank. */
        CHECK(d <= digits(size - 1, radix), "knomial/%d size %d: depth %d > %d digits", radix,
              size, d, digits(size - 1, radix));
    } else {
        want = size > 1 ? 1 : 0;
    }
    CHECK(d == want, "%s/%d size %d: depth %d, expected %d", kn, radix, size, d, want);
}

static void check_invalid(void)
{
    ofl_tree_node_t n;
    CHECK(-1 == ofl_tree_node(OFL_TREE_KARY, 0, 4, 0, 0, &n), "kary radix 0");
    CHECK(-1 == ofl_tree_node(OFL_TREE_KARY, -3, 4, 0, 0, &n), "kary radix -3");
    CHECK(-1 == ofl_tree_node(OFL_TREE_KARY, OFL_TREE_MAX_CHILDREN + 1, 4, 0, 0, &n),
          "kary radix beyond OFL_TREE_MAX_CHILDREN");
    CHECK(-1 == ofl_tree_node(OFL_TREE_KNOMIAL, 0, 4, 0, 0, &n), "knomial radix 0");
    CHECK(-1 == ofl_tree_node(OFL_TREE_KNOMIAL, 1, 4, 0, 0, &n), "knomial radix 1");
    CHECK(-1 == ofl_tree_node(OFL_TREE_KNOMIAL, OFL_TREE_MAX_CHILDREN + 1, 10, 0, 0, &n),
          "knomial radix beyond OFL_TREE_MAX_CHILDREN");
    /* A root of ~3000 children: must be refused, not written past a buffer. */
    CHECK(-1 == ofl_tree_node(OFL_TREE_KNOMIAL, 3000, 3001, 0, 0, &n), "knomial radix 3000");
    for (int k = OFL_TREE_KARY; k <= OFL_TREE_FLAT; ++k) {
        CHECK(-1 == ofl_tree_node(k, 2, 4, 0, 4, &n), "%d: rank == size", k);
        CHECK(-1 == ofl_tree_node(k, 2, 4, 0, -1, &n), "%d: rank -1", k);
        CHECK(-1 == ofl_tree_node(k, 2, 4, 4, 0, &n), "%d: root == size", k);
        CHECK(-1 == ofl_tree_node(k, 2, 4, -1, 0, &n), "%d: root -1", k);
        CHECK(-1 == ofl_tree_node(k, 2, 0, 0, 0, &n), "%d: size 0", k);
        CHECK(-1 == ofl_tree_node(k, 2, 4, 0, 0, NULL), "%d: NULL node", k);
    }
    CHECK(-1 == ofl_tree_node((ofl_tree_kind_t) 17, 2, 4, 0, 0, &n), "unknown kind");
    CHECK(-1 == ofl_tree_depth(OFL_TREE_KARY, 0, 5), "depth: kary radix 0");
    CHECK(-1 == ofl_tree_depth(OFL_TREE_KNOMIAL, 1, 5), "depth: knomial radix 1");
    CHECK(-1 == ofl_tree_depth((ofl_tree_kind_t) 17, 2, 5), "depth: unknown kind");
    CHECK(0 == strcmp("kary", ofl_tree_kind_name(OFL_TREE_KARY)), "name kary");
    CHECK(0 == strcmp("knomial", ofl_tree_kind_name(OFL_TREE_KNOMIAL)), "name knomial");
    CHECK(0 == strcmp("flat", ofl_tree_kind_name(OFL_TREE_FLAT)), "name flat");
}

int main(void)
{
    unit_timeout("test_tree", 60);
    static const int kary_radix[] = { 1, 2, 3, 4, 5, 6, 7, 8, 64 };
    for (size_t i = 0; i < sizeof(kary_radix) / sizeof(kary_radix[0]); ++i) {
        for (int size = 1; size <= MAX_SIZE; ++size) {
            check_depth(OFL_TREE_KARY, kary_radix[i], size);
            for (int root = 0; root < size; ++root) {
                check_tree(OFL_TREE_KARY, kary_radix[i], size, root);
            }
        }
    }
    for (int radix = 2; radix <= 8; ++radix) {
        for (int size = 1; size <= MAX_SIZE; ++size) {
            check_depth(OFL_TREE_KNOMIAL, radix, size);
            for (int root = 0; root < size; ++root) {
                check_tree(OFL_TREE_KNOMIAL, radix, size, root);
            }
        }
    }
    /* A flat root has size - 1 children, so beyond OFL_TREE_MAX_CHILDREN + 1 ranks
     * the node cannot be described and every rank must be refused alike (a partial
     * tree would deadlock the collective). */
    for (int size = 1; size <= MAX_SIZE; ++size) {
        if (size - 1 <= OFL_TREE_MAX_CHILDREN) {
            check_depth(OFL_TREE_FLAT, 0, size);
            for (int root = 0; root < size; ++root) {
                check_tree(OFL_TREE_FLAT, 0, size, root);
            }
            continue;
        }
        ofl_tree_node_t n;
        CHECK(-1 == ofl_tree_depth(OFL_TREE_FLAT, 0, size), "flat size %d: depth", size);
        for (int r = 0; r < size; ++r) {
            CHECK(-1 == ofl_tree_node(OFL_TREE_FLAT, 0, size, 0, r, &n),
                  "flat size %d rank %d accepted", size, r);
        }
    }
    /* Spot checks of the known shapes, so that a wrong shape cannot pass merely by
     * being a consistent tree. */
    ofl_tree_node_t n;
    CHECK(0 == ofl_tree_node(OFL_TREE_KNOMIAL, 2, 8, 0, 0, &n) && 3 == n.nchildren
              && 1 == n.children[0] && 2 == n.children[1] && 4 == n.children[2],
          "binomial root of 8");
    CHECK(0 == ofl_tree_node(OFL_TREE_KNOMIAL, 3, 9, 0, 3, &n) && 0 == n.parent
              && 2 == n.nchildren && 4 == n.children[0] && 5 == n.children[1],
          "trinomial rank 3 of 9");
    CHECK(0 == ofl_tree_node(OFL_TREE_KARY, 2, 7, 5, 0, &n) && 5 == n.parent
              && 2 == n.nchildren && 3 == n.children[0] && 4 == n.children[1],
          "binary rank 0 of 7 rooted at 5 (virtual 2)");
    CHECK(0 == ofl_tree_node(OFL_TREE_FLAT, 0, 5, 3, 3, &n) && -1 == n.parent
              && 4 == n.nchildren && 4 == n.children[0] && 0 == n.children[1]
              && 2 == n.children[3],
          "flat root 3 of 5");
    check_invalid();
    return unit_report("tree");
}
