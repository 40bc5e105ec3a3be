/*
 * coll/offload — reproducible floating-point sums (see repsum.h).
 *
 * Why the sum cannot depend on the order of the adds. An element stands for
 * the bins top, top-1, ..., top-K+1 of the inputs it sums, each bin summed as
 * an integer and never carried into its neighbour. Adding two elements takes
 * the larger top and shifts the other's components down, dropping those that
 * fall below top-K+1. Whatever the order, the final element's top is the
 * largest top of any input (max is associative and commutative), and every
 * bin of every input is either at or above final top-K+1, then it was never
 * dropped on the way (each partial top is at most the final one), or below it,
 * then it was dropped at some step or is dropped by the last one. So the
 * final components are the integer sums, per bin, of exactly the input bits at
 * or above final top-K+1: the same integers for every order. Integer adds do
 * not round; with at most OFL_REPSUM_MAX_TERMS terms they do not overflow. The
 * lowest nonzero input bin is kept as a min (again order-free), so whether
 * bits were dropped is known from the final element alone. The flags are ORs.
 */
#include "alu/repsum.h"

#include <math.h>
#include <string.h>

#define K OFL_REPSUM_K
#define W OFL_REPSUM_W
#define BIN_MASK ((INT64_C(1) << W) - 1)
#define LOW_NONE 0xffu
#define FLAGS_MASK (~(uint64_t) 0xffff)
#define RS_UNLIKELY(x) __builtin_expect(!!(x), 0)

typedef unsigned __int128 u128;

static inline unsigned meta_top(uint64_t meta)
{
    return (unsigned) (meta & 0xff);
}

static inline unsigned meta_low(uint64_t meta)
{
    return (unsigned) ((meta >> 8) & 0xff);
}

static inline uint64_t meta_make(unsigned top, unsigned low, uint64_t flags)
{
    return (uint64_t) top | ((uint64_t) low << 8) | flags;
}

/* Straight from the bits: frexp and ldexp cost more than the rest together. */
static inline void from_one(ofl_repsum_t *e, double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof(bits));
    unsigned field = (unsigned) (bits >> 52) & 0x7ff;
    uint64_t sig = bits & ((UINT64_C(1) << 52) - 1);
    int negative = (int) (bits >> 63);
    e->c[0] = e->c[1] = e->c[2] = 0;
    if (RS_UNLIKELY(0x7ff == field)) {
        uint64_t flag = 0 != sig ? OFL_REPSUM_NAN : negative ? OFL_REPSUM_NINF : OFL_REPSUM_PINF;
        e->meta = meta_make(0, LOW_NONE, flag | OFL_REPSUM_NOT_NEGZERO);
        return;
    }
    if (RS_UNLIKELY(0 == field && 0 == sig)) {
        e->meta = meta_make(0, LOW_NONE, negative ? 0 : OFL_REPSUM_NOT_NEGZERO);
        return;
    }
    /* |x| = sig * 2^(pos - 1074): pos is the bit position of sig's lsb */
    int pos = 0;
    if (0 != field) {
        sig |= UINT64_C(1) << 52;
        pos = (int) field - 1;
    }
    int tz = __builtin_ctzll(sig);
    sig >>= tz;
    pos += tz;
    int hi = pos + 63 - __builtin_clzll(sig);  /* position of the top bit */
    int top = hi / W;
    int base = (top - K + 1) * W;              /* lsb of the lowest kept bin; may be < 0 */
    u128 v;
    if (pos >= base) {
        v = (u128) sig << (pos - base);        /* < 2^(K W) */
    } else {
        v = (u128) (sig >> (base - pos));      /* the input's own bits below its bins */
    }
    uint64_t lo = (uint64_t) v, mid = (uint64_t) (v >> W), up = (uint64_t) (v >> (2 * W));
    int64_t c0 = (int64_t) (up & BIN_MASK), c1 = (int64_t) (mid & BIN_MASK);
    int64_t c2 = (int64_t) (lo & BIN_MASK);
    e->c[0] = negative ? -c0 : c0;
    e->c[1] = negative ? -c1 : c1;
    e->c[2] = negative ? -c2 : c2;
    e->meta = meta_make((unsigned) top, (unsigned) (pos / W), OFL_REPSUM_NOT_NEGZERO);
}

void ofl_repsum_from_double(ofl_repsum_t *out, const double *in, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        from_one(&out[i], in[i]);
    }
}

void ofl_repsum_from_float(ofl_repsum_t *out, const float *in, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        from_one(&out[i], (double) in[i]);   /* exact */
    }
}

int ofl_repsum_inexact(const ofl_repsum_t *e)
{
    unsigned low = meta_low(e->meta);
    return LOW_NONE != low && (int) low < (int) meta_top(e->meta) - K + 1;
}

/* The finite value of an element rounded to nearest (ties to even) in a format
 * of prec significand bits whose smallest subnormal is 2^lsb_min: the result
 * is (-1)^*neg * mant * 2^scale with mant < 2^prec (0 for a zero). */
static void round_element(const ofl_repsum_t *e, int prec, int lsb_min, int *neg,
                          uint64_t *mant, int *scale)
{
    /* carry the bins into one number c0 * 2^2W + c1 * 2^W + c2, c1 and c2 in [0, 2^W) */
    int64_t c2 = e->c[2], c1 = e->c[1], c0 = e->c[0];
    c1 += c2 >> W;   /* arithmetic shift: floor division by 2^W */
    c2 &= BIN_MASK;
    c0 += c1 >> W;
    c1 &= BIN_MASK;
    u128 rest = ((u128) (uint64_t) c1 << W) | (uint64_t) c2;
    uint64_t hi;
    *neg = c0 < 0;
    if (*neg) {
        /* -(c0 2^2W + rest) = (-c0 - 1) 2^2W + (2^2W - rest), or -c0 2^2W if rest is 0 */
        if (0 != rest) {
            hi = (uint64_t) (-(c0 + 1));
            rest = ((u128) 1 << (2 * W)) - rest;
        } else {
            hi = (uint64_t) -c0;
        }
    } else {
        hi = (uint64_t) c0;
    }
    int x = ((int) meta_top(e->meta) - K + 1) * W - 1074;
    int sticky = 0;
    if (hi >> 46) {
        /* above 2^127: cut 16 bits (only the top prec + 1 matter, and a sticky bit) */
        sticky = 0 != (rest & 0xffff);
        rest >>= 16;
        x += 16;
        rest |= (u128) hi << (2 * W - 16);
    } else {
        rest |= (u128) hi << (2 * W);
    }
    u128 u = rest;
    if (0 == u) {
        *mant = 0;
        *scale = 0;
        return;
    }
    uint64_t uh = (uint64_t) (u >> 64);
    int t = uh ? 127 - __builtin_clzll(uh) : 63 - __builtin_clzll((uint64_t) u);
    int lsb = t + x - prec + 1;
    if (lsb < lsb_min) {
        lsb = lsb_min;
    }
    int sh = lsb - x;
    if (sh <= 0) {
        *mant = (uint64_t) (u << -sh);
        *scale = lsb;
        return;
    }
    if (sh >= 128) {
        *mant = 0;   /* below half the smallest subnormal: u < 2^127 <= half */
        *scale = lsb;
        return;
    }
    uint64_t m = (uint64_t) (u >> sh);
    u128 rem = u & (((u128) 1 << sh) - 1);
    u128 half = (u128) 1 << (sh - 1);
    if (rem > half || (rem == half && (sticky || (m & 1)))) {
        ++m;
        if (m >> prec) {
            m >>= 1;
            ++lsb;
        }
    }
    *mant = m;
    *scale = lsb;
}

/* mant * 2^scale (mant < 2^53, and below 2^52 only at the subnormal scale) as
 * a double's bits; infinity past the largest finite. */
static inline double bits_double(int neg, uint64_t mant, int scale)
{
    uint64_t bits;
    if (mant >> 52) {
        int field = scale + 52 + 1023;   /* biased exponent of mant's top bit */
        bits = field >= 0x7ff ? UINT64_C(0x7ff) << 52
                              : ((uint64_t) field << 52) | (mant & ((UINT64_C(1) << 52) - 1));
    } else {
        bits = mant;   /* subnormal: scale is -1074 */
    }
    bits |= (uint64_t) neg << 63;
    double v;
    memcpy(&v, &bits, sizeof(v));
    return v;
}

static inline float bits_float(int neg, uint64_t mant, int scale)
{
    uint32_t bits;
    if (mant >> 23) {
        int field = scale + 23 + 127;
        bits = field >= 0xff ? UINT32_C(0xff) << 23
                             : ((uint32_t) field << 23) | (uint32_t) (mant & ((1u << 23) - 1));
    } else {
        bits = (uint32_t) mant;   /* subnormal: scale is -149 */
    }
    bits |= (uint32_t) neg << 31;
    float v;
    memcpy(&v, &bits, sizeof(v));
    return v;
}

/* NaN, infinities and signed zero first, as IEEE addition would give them. */
static int special(const ofl_repsum_t *e, double *v)
{
    uint64_t f = e->meta;
    if ((f & OFL_REPSUM_NAN) || ((f & OFL_REPSUM_PINF) && (f & OFL_REPSUM_NINF))) {
        *v = NAN;
        return 1;
    }
    if (f & OFL_REPSUM_PINF) {
        *v = INFINITY;
        return 1;
    }
    if (f & OFL_REPSUM_NINF) {
        *v = -INFINITY;
        return 1;
    }
    return 0;
}

void ofl_repsum_to_double(double *out, const ofl_repsum_t *in, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        double v;
        if (special(&in[i], &v)) {
            out[i] = v;
            continue;
        }
        int neg, scale;
        uint64_t mant;
        round_element(&in[i], 53, -1074, &neg, &mant, &scale);
        if (0 == mant) {
            /* an exact zero is -0.0 only when every input was */
            int negzero = neg || !(in[i].meta & OFL_REPSUM_NOT_NEGZERO);
            out[i] = negzero ? -0.0 : 0.0;
            continue;
        }
        out[i] = bits_double(neg, mant, scale);
    }
}

void ofl_repsum_to_float(float *out, const ofl_repsum_t *in, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        double s;
        if (special(&in[i], &s)) {
            out[i] = (float) s;
            continue;
        }
        int neg, scale;
        uint64_t mant;
        round_element(&in[i], 24, -149, &neg, &mant, &scale);
        if (0 == mant) {
            int negzero = neg || !(in[i].meta & OFL_REPSUM_NOT_NEGZERO);
            out[i] = negzero ? -0.0f : 0.0f;
            continue;
        }
        out[i] = bits_float(neg, mant, scale);
    }
}

/* p's components re-expressed under a larger top: shifted down by d bins,
 * those falling below the K kept bins dropped. */
static inline void shift_down(int64_t r[K], const int64_t c[K], unsigned d)
{
    for (int i = 0; i < K; ++i) {
        r[i] = i >= (int) d ? c[i - (int) d] : 0;
    }
}

void ofl_repsum_add(void *out, const void *a, const void *b, size_t count)
{
    ofl_repsum_t *o = out;
    const ofl_repsum_t *p = a, *q = b;
    for (size_t i = 0; i < count; ++i) {
        uint64_t ma = p[i].meta, mb = q[i].meta;
        unsigned ta = meta_top(ma), tb = meta_top(mb);
        unsigned la = meta_low(ma), lb = meta_low(mb);
        uint64_t flags = (ma | mb) & FLAGS_MASK;
        unsigned low = la < lb ? la : lb;
        if (__builtin_expect(ta == tb, 1)) {
            /* unsigned adds: the components never overflow (MAX_TERMS), and
             * this way the compiler owes no signed-overflow assumptions */
            for (int k = 0; k < K; ++k) {
                o[i].c[k] = (int64_t) ((uint64_t) p[i].c[k] + (uint64_t) q[i].c[k]);
            }
            o[i].meta = meta_make(ta, low, flags);
            continue;
        }
        int64_t x[K], y[K];
        unsigned top;
        if (ta > tb) {
            memcpy(x, p[i].c, sizeof(x));
            shift_down(y, q[i].c, ta - tb);
            top = ta;
        } else {
            shift_down(x, p[i].c, tb - ta);
            memcpy(y, q[i].c, sizeof(y));
            top = tb;
        }
        for (int k = 0; k < K; ++k) {
            o[i].c[k] = (int64_t) ((uint64_t) x[k] + (uint64_t) y[k]);
        }
        o[i].meta = meta_make(top, low, flags);
    }
}
