/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — the rules file: per-node tuning advice read at start-up.
 *
 * Format (this comment is the reference):
 *
 *     # comments run from '#' to the end of the line; blank lines are ignored
 *     format 1
 *     allreduce 2-8   policy=board:256,tree:32k,fallback:256k,tree
 *     bcast     9+    tree=knomial radix=4 origin=simulated
 *
 * - Lines end in "\n"; one "\r" at the end of a line (before its "\n", or at the end
 *   of the text) is dropped; the text may lack a final newline. A line is at most
 *   OFL_RULES_LINE_MAX (1024) bytes, its "\n" or "\r\n" not counted.
 * - A '#' starts a comment anywhere on a line; it runs to the end of the line. A line
 *   that is empty or all blanks once its comment is cut is ignored.
 * - Fields are separated by runs of spaces and tabs; leading and trailing blanks are
 *   allowed. Any other byte is part of a field.
 * - The first line that is not ignored is the format line: the two fields "format" and
 *   "1", nothing else. "format" with another version is refused (a newer file, which
 *   this reader cannot know the meaning of), and so is a second format line.
 * - Every other line is a rule:  COLL RANKS KEY=VALUE [KEY=VALUE ...]
 *   - COLL: allreduce, reduce, bcast or barrier.
 *   - RANKS: the communicator sizes it applies to: N (one size), N-M (N to M, inclusive,
 *     N <= M) or N+ (N and larger), with 1 <= N, M <= 1048576, written as decimal
 *     digits (no sign).
 *   - KEYs, each at most once per rule, at least one of policy, tree and radix:
 *     - policy=TEXT: a per-size algorithm policy exactly as ofl_policy_parse reads it
 *       (policy.h), e.g. policy=board:256,tree:32k,fallback:256k,tree
 *     - tree=kary|knomial|flat: the tree shape (reduce and bcast only)
 *     - radix=N: the tree's radix, 2..64 (reduce and bcast only)
 *     - origin=measured|simulated: where the advice comes from (default measured)
 *   - Two rules of one collective must not share a size: at most one rule applies to a
 *     (collective, size) pair, so the order of the rules does not matter.
 * - At most OFL_RULES_MAX (64) rules; a file with the format line and no rules is valid
 *   (no advice).
 * - A NUL byte anywhere (comments included) is an error: the file is text, and a NUL
 *   would make tools that read C strings see a different file than this parser does.
 *
 * Anything else is an error, reported with the line at fault; the whole file is then
 * refused (partial advice would differ between ranks that read different versions).
 */
#ifndef OFL_RULES_H
#define OFL_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "sched/policy.h"

#define OFL_RULES_MAX       64
#define OFL_RULES_LINE_MAX  1024      /* bytes of a line, its line end not counted */
#define OFL_RULES_RANKS_MAX 1048576   /* the largest N or M a RANKS field may name */

typedef enum { OFL_ORIGIN_MEASURED = 0, OFL_ORIGIN_SIMULATED = 1 } ofl_origin_t;

typedef struct {
    int coll;                 /* ofl_coll_t */
    int lo, hi;               /* communicator sizes, inclusive; hi INT_MAX for "N+" */
    int has_policy;
    ofl_policy_t policy;
    int tree;                 /* -1: not given, else an ofl_tree_kind_t value */
    int radix;                /* 0: not given */
    int origin;               /* ofl_origin_t */
    int line;                 /* 1-based line of the file */
} ofl_rule_t;

typedef struct {
    int n;
    ofl_rule_t rule[OFL_RULES_MAX];   /* in file order */
    uint64_t hash;            /* FNV-1a 64 of the whole text as given: ranks compare it */
} ofl_rules_t;

/* Parse `len` bytes of `text` (not necessarily terminated). 0 and *out filled, or -1 with
 * *bad_line the 1-based line at fault (0 when the fault is the file as a whole, e.g. no
 * format line) and a reason in err (always terminated when errlen > 0, truncated to fit;
 * errlen 0 allowed), *out then empty (n = 0). The reason quotes the offending field. */
int ofl_rules_parse(const char *text, size_t len, ofl_rules_t *out, int *bad_line,
                    char *err, size_t errlen);

/* The rule for `coll` on a communicator of `ranks` ranks, or NULL. */
const ofl_rule_t *ofl_rules_find(const ofl_rules_t *rules, int coll, int ranks);

/* What ranks compare: FNV-1a over the rules as formatted, by collective and first size,
 * so files that differ only in comments (a tuner's date line), spacing or the order of
 * their rules give the same digest. */
uint64_t ofl_rules_digest(const ofl_rules_t *rules);

/* A rule's text in the file's format (one line, no newline) into buf; returns what
 * snprintf would. For messages ("rule in force: ...") and for round trips in tests. */
int ofl_rules_format(const ofl_rule_t *rule, char *buf, size_t len);

#endif
