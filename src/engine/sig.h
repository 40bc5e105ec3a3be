/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — call signatures: what every rank of one collective call must
 * agree on, packed into one word.
 *
 * MPI requires the ranks of a call to pass the same collective, op, datatype,
 * count and root; a program that does not is erroneous, and must get an error
 * from us rather than a wrong answer, a hang or a write outside its buffers. Each
 * call's signature travels where a peer reads anyway (the board line's sequence
 * word, the stamp of a stream's first mailbox item of the call, the rank's call
 * record), in a folded form that fits beside a counter, and every reader compares
 * it with its own.
 *
 * Layout of the full signature (exact, so that a report can say what differs):
 *   bits  0..1   collective (ofl_coll_t)
 *   bits  2..7   op: 0 none, 1.. an intrinsic op's index + 1, 63 a user op
 *   bits  8..15  datatype: 0 none, 1.. a predefined type's id + 1, 255 derived
 *   bits 16..31  root + 1 (0: no root), modulo 2^16
 *   bits 32..63  payload bytes (folded above 4 GiB)
 */
#ifndef OFL_SIG_H
#define OFL_SIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nic/nic.h"

#define OFL_SIG_OP_USER 63u
#define OFL_SIG_TYPE_DERIVED 255u

static inline uint64_t ofl_sig_make(unsigned coll, unsigned op, unsigned type, int root,
                                    uint64_t bytes)
{
    uint64_t r = root >= 0 ? (uint64_t) (root + 1) & 0xffffu : 0;
    uint64_t b = (bytes ^ (bytes >> 32)) & 0xffffffffu;
    return ((uint64_t) coll & 3u) | ((uint64_t) (op & 63u) << 2)
           | ((uint64_t) (type & 255u) << 8) | (r << 16) | (b << 32);
}

/* The top `bits` bits of a multiplicative hash: any difference in the full
 * signature changes the folded value but with probability 2^-bits. */
static inline uint64_t ofl_sig_fold(uint64_t sig, unsigned bits)
{
    return (sig * 0x9e3779b97f4a7c15ull) >> (64 - bits);
}

/* Bits of a board line's sequence word that carry the folded signature (the
 * rest is the call's board number): the NIC's board format. */
#define OFL_SIG_BOARD_BITS OFL_BOARD_TAG_BITS

/* The word a program call stamps into its first mailbox item of every stream
 * (and a rank's call record holds): the communicator's call number, modulo 2^24,
 * and the folded signature. The number makes an item left over from an earlier
 * call, which a mismatch may leave behind, differ from this call's. */
static inline uint64_t ofl_sig_word(uint64_t callno, uint64_t sig)
{
    return ((callno & 0xffffffu) << 40) | ofl_sig_fold(sig, 40);
}

static inline uint64_t ofl_sig_word_callno(uint64_t word)
{
    return word >> 40;
}

/* Do two signatures name different collectives? */
static inline int ofl_sig_other_coll(uint64_t a, uint64_t b)
{
    return 0 != ((a ^ b) & 0x3ull);
}

/* Which fields of two full signatures differ, in words ("op, count"), into buf. */
static inline void ofl_sig_describe(uint64_t a, uint64_t b, char *buf, size_t len)
{
    static const char *const names[] = { "collective", "op", "datatype", "root", "size" };
    static const uint64_t masks[] = { 0x3ull, 0xfcull, 0xff00ull, 0xffff0000ull,
                                      0xffffffff00000000ull };
    size_t at = 0;
    buf[0] = '\0';
    for (int k = 0; k < 5 && at < len; ++k) {
        if ((a ^ b) & masks[k]) {
            int n = snprintf(buf + at, len - at, "%s%s", at ? ", " : "", names[k]);
            at += n > 0 ? (size_t) n : 0;
        }
    }
    if (0 == at) {
        snprintf(buf, len, "call order");
    }
}

#endif
