/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * Fuzz the board reader: rank 0 runs board allreduces (sums of uint8, 0..448
 * bytes, call after call) while the input writes rank 1's board lines, the
 * payload and the call number of each, near the right number or anywhere, as
 * a correct or a broken or hostile rank 1 might.
 *
 * Oracles: no out-of-bounds access or undefined behaviour; each board_read's
 * answer is the one nic.h gives for the lines in memory (the payload once
 * every line carries the call's number and signature, not yet while one
 * carries an older number, OFL_EMISMATCH when the first carries the number
 * with another signature, -EPROTO at the first that carries a later number);
 * a call that completes holds the sum of rank 0's payload and the bytes rank
 * 1's lines carried; a corrupt line fails the call, which says -EPROTO (a
 * differing signature: OFL_EMISMATCH), and so does its health check.
 */
#include "engine/board.h"
#include "fuzz.h"

#define N 2
#define LINES OFL_BOARD_MAX_LINES

static ofl_softnic_t nic[N];
static ofl_nic_ops_t wrapped;
static const ofl_nic_ops_t *soft;

/* Line `l` of rank's board for call `seq`'s slot (softnic.h: [rank][slot][4
 * lines], the payload then the call number in the last 8 bytes). */
static uint8_t *line_of(int rank, uint64_t seq, int l)
{
    uint64_t slot = (uint64_t) rank * OFL_BOARD_DEPTH + seq % OFL_BOARD_DEPTH;
    return nic[0].mem + nic[0].off_board + (slot * LINES + (uint64_t) l) * FZ_LINE;
}

static volatile uint64_t *seq_of(int rank, uint64_t seq, int l)
{
    return (volatile uint64_t *) (line_of(rank, seq, l) + OFL_BOARD_LINE_BYTES);
}

static int corrupt_seen;   /* a read said -EPROTO during this progress call */

static int checked_read(ofl_nic_t *b, int peer, uint64_t seq, uint64_t tag, uint64_t len,
                        void *tmp, const void **data)
{
    int lines = len ? (int) ((len + OFL_BOARD_LINE_BYTES - 1) / OFL_BOARD_LINE_BYTES) : 1;
    uint64_t word = (seq << OFL_SIG_BOARD_BITS) | tag;
    uint64_t first = *seq_of(peer, seq, 0);
    int expect = 1;
    if (first != word) {
        uint64_t at = first >> OFL_SIG_BOARD_BITS;
        expect = at < seq ? 0 : at > seq ? -EPROTO : OFL_EMISMATCH;
    }
    for (int l = 1; l < lines && 1 == expect; ++l) {
        uint64_t v = *seq_of(peer, seq, l);
        expect = v == word ? 1 : (v >> OFL_SIG_BOARD_BITS) < seq ? 0 : -EPROTO;
    }
    uint8_t copy[LINES * OFL_BOARD_LINE_BYTES];
    for (uint64_t i = 0; i < len; ++i) {
        copy[i] = line_of(peer, seq, (int) (i / OFL_BOARD_LINE_BYTES))[i % OFL_BOARD_LINE_BYTES];
    }
    const void *got = NULL;
    int rc = soft->board_read(b, peer, seq, tag, len, tmp, &got);
    FZ_ASSERT(rc == expect, "rank %d's board for call %llu: %d, rules say %d", peer,
              (unsigned long long) seq, rc, expect);
    if (1 == rc) {
        FZ_ASSERT(NULL != got && 0 == memcmp(got, copy, len), "payload not the lines'");
        *data = got;
    }
    if (rc < 0) {
        fz_count(0, "lines ahead caught");
        corrupt_seen = 1;
    }
    return rc;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void) argc;
    (void) argv;
    fz_stats_init();
    fz_world_open(nic, N, 2, 64);
    soft = nic[0].base.ops;
    wrapped = *soft;
    wrapped.board_read = checked_read;
    nic[0].base.ops = &wrapped;
    return 0;
}

static void sum_u8(void *out, const void *a, const void *b, size_t n)
{
    uint8_t *o = out;
    const uint8_t *x = a, *y = b;
    for (size_t i = 0; i < n; ++i) {
        o[i] = (uint8_t) (x[i] + y[i]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in_t in = { data, size };
    fz_world_reset(nic, N);
    size_t count = fz_u8(&in) % (nic[0].base.board_bytes + 1);
    uint8_t send[LINES * OFL_BOARD_LINE_BYTES], recv[LINES * OFL_BOARD_LINE_BYTES];
    uint8_t *out = malloc(count ? count : 1);   /* exactly the call's bytes */
    ofl_board_call_t c;
    uint64_t seq = 0;
    int running = 0;
    for (int step = 0; step < 300 && in.n > 0; ++step) {
        uint8_t op = fz_u8(&in);
        int l = (op >> 3) % LINES;
        switch (op & 3) {
        case 0: {   /* rank 0 makes progress; done: the next call */
            if (!running) {
                seq++;
                for (size_t i = 0; i < count; ++i) {
                    send[i] = (uint8_t) (seq * 31 + i);
                }
                ofl_board_prepare(&c, &nic[0].base, seq, send, out, count, 1, sum_u8);
                running = 1;
            }
            corrupt_seen = 0;
            int rc = ofl_board_progress(&c);
            FZ_ASSERT(rc >= -1 && rc <= 1, "progress %d", rc);
            FZ_ASSERT(!corrupt_seen || -1 == rc, "a corrupt line did not fail the call");
            if (rc < 0) {
                FZ_ASSERT(-EPROTO == c.error || OFL_EMISMATCH == c.error, "failed call: %d",
                          c.error);
                int peer = -7;
                ofl_wait_status_t st = ofl_board_check(&c, 0.0, 0.0, &peer);
                FZ_ASSERT(OFL_EMISMATCH == c.error ? OFL_WAIT_MISMATCH == st
                                                   : OFL_WAIT_FAILED == st,
                          "the check of a failed call says otherwise: %d", (int) st);
                goto done;
            }
            if (rc > 0) {
                /* the sum of mine and what rank 1's lines of this call carry */
                for (size_t i = 0; i < count; ++i) {
                    uint8_t theirs = line_of(1, seq, (int) (i / OFL_BOARD_LINE_BYTES))
                        [i % OFL_BOARD_LINE_BYTES];
                    recv[i] = (uint8_t) (send[i] + theirs);
                }
                FZ_ASSERT(0 == memcmp(out, recv, count), "call %llu: wrong sum",
                          (unsigned long long) seq);
                fz_count(1, "calls done, sums checked");
                running = 0;
            }
            break;
        }
        case 1: {   /* rank 1 posts a line of any slot: the number of the call that
                     * would write it next, or near, with the signature of rank 0's
                     * calls (0) or another */
            uint64_t slot = fz_u8(&in) % OFL_BOARD_DEPTH;
            uint64_t next = seq + (slot + OFL_BOARD_DEPTH - seq % OFL_BOARD_DEPTH)
                                      % OFL_BOARD_DEPTH;
            *seq_of(1, slot, l) = (fz_near(&in, next) << OFL_SIG_BOARD_BITS)
                                  | (uint64_t) (fz_u8(&in) & 1);
            break;
        }
        case 2: {   /* rank 1 writes payload bytes */
            uint64_t slot = fz_u8(&in) % OFL_BOARD_DEPTH;
            line_of(1, slot, l)[fz_u8(&in) % OFL_BOARD_LINE_BYTES] = fz_u8(&in);
            break;
        }
        default: {  /* rank 1 posts its whole payload for the current call, honestly */
            uint8_t mine[LINES * OFL_BOARD_LINE_BYTES];
            for (size_t i = 0; i < count; ++i) {
                mine[i] = fz_u8(&in);
            }
            soft->board_post(&nic[1].base, seq, 0, mine, count);
            break;
        }
        }
    }
done:
    free(out);
    return 0;
}
