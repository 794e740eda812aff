/* What the C harnesses share: the element types and operators, random inputs, the
 * sequential reference scan every result is compared with, array comparison, and
 * buffers guarded by sentinels. Include after check.h (its CHECK macros). */
#ifndef SCANRT_FFI_SCAN_REFERENCE_H
#define SCANRT_FFI_SCAN_REFERENCE_H

#include "scanrt.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------ */
/* Types, values and the reference scan                                                  */

/* NDTYPES: the element types scans take as built-in pairs (the first seven; f16 and bf16
 * accumulate in f32, test_arrays.c); NALL_DTYPES: every one. */
enum { NDTYPES = 7, NALL_DTYPES = 12, NOPS = 7 };
static __attribute__((unused)) const char *dtype_names[NALL_DTYPES] = {"u8", "i32", "u32", "i64", "u64", "f32", "f64", "i8", "u16", "i16", "f16", "bf16"};
static __attribute__((unused)) const char *op_names[NOPS] = {"sum", "product", "min", "max", "and", "or", "xor"};

static inline size_t dtype_size(int dt) {
    switch (dt) {
    case SCANRT_DTYPE_U8:
    case SCANRT_DTYPE_I8: return 1;
    case SCANRT_DTYPE_U16:
    case SCANRT_DTYPE_I16:
    case SCANRT_DTYPE_F16:
    case SCANRT_DTYPE_BF16: return 2;
    case SCANRT_DTYPE_I32:
    case SCANRT_DTYPE_U32:
    case SCANRT_DTYPE_F32: return 4;
    default: return 8;
    }
}
static inline int is_float(int dt) { return dt == SCANRT_DTYPE_F32 || dt == SCANRT_DTYPE_F64; }
static inline int is_bitwise(int op) { return op >= SCANRT_OP_BIT_AND && op <= SCANRT_OP_BIT_XOR; }

static inline int is_signed(int dt) { return dt == SCANRT_DTYPE_I32 || dt == SCANRT_DTYPE_I64; }

/* The rule for (input, output) pairs accumulated in their output type, not a copy of
 * the library's table: the output holds every input value (the same type, or a wider one
 * of the same kind, or a wider signed type for an unsigned one); 8- and 16-bit integers
 * accumulate in 32 bits instead (narrowed_supported). */
static inline int narrowed_supported(int in, int out) {
    return in == out && !is_float(out) && dtype_size(out) < 4;
}
static inline int pair_supported(int in, int out) {
    if (out == SCANRT_DTYPE_U8) return 0;
    if (in == out) return 1;
    if (is_float(in) != is_float(out)) return 0;
    if (!is_float(in) && is_signed(in) && !is_signed(out)) return 0;
    return dtype_size(out) > dtype_size(in);
}

/* Every supported pair, filled from the rule by main(). */
typedef struct {
    int in, out;
} pair_t;
static __attribute__((unused)) pair_t pairs[NDTYPES * NDTYPES];
static __attribute__((unused)) int NPAIRS;

static inline void list_pairs(void) {
    for (int in = 0; in < NDTYPES; in++)
        for (int out = 0; out < NDTYPES; out++)
            if (pair_supported(in, out)) pairs[NPAIRS++] = (pair_t){in, out};
}

static __attribute__((unused)) const uint64_t sizes[] = {0, 1, 2, 4095, 4096, 4097, 65537, 1000003};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };
#define MAX_N 1000003u

static inline uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Stores an abstract value into element i of an array of dtype dt: integers take the
 * low bits of `bits`, floats take `f`. */
static inline void store(void *arr, int dt, size_t i, uint64_t bits, double f) {
    switch (dt) {
    case SCANRT_DTYPE_U8: ((uint8_t *)arr)[i] = (uint8_t)bits; break;
    case SCANRT_DTYPE_I32: ((int32_t *)arr)[i] = (int32_t)(uint32_t)bits; break;
    case SCANRT_DTYPE_U32: ((uint32_t *)arr)[i] = (uint32_t)bits; break;
    case SCANRT_DTYPE_I64: ((int64_t *)arr)[i] = (int64_t)bits; break;
    case SCANRT_DTYPE_U64: ((uint64_t *)arr)[i] = bits; break;
    case SCANRT_DTYPE_F32: ((float *)arr)[i] = (float)f; break;
    case SCANRT_DTYPE_F64: ((double *)arr)[i] = f; break;
    }
}

/* Input data whose every scan is exact: wrapping integers, small-integer floats for
 * sums, powers of two (and -1) for float products, trends for min/max so that the
 * running extreme keeps changing, sparse bits for and/or. */
static inline void generate(void *arr, int dt, int op, size_t n, uint64_t seed) {
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = splitmix64(&s);
        uint64_t r2 = r >> 40;
        uint64_t bits = r;
        double f = 0;
        switch (op) {
        case SCANRT_OP_SUM:
            f = (double)((int)(r % 17) - 8);
            break;
        case SCANRT_OP_PRODUCT:
            bits = r | 1; /* odd: a wrapping product of odd numbers never reaches 0 */
            f = (i % 1024 == 0) ? 2.0 : (i % 1024 == 512) ? 0.5 : (i % 777 == 5) ? -1.0 : 1.0;
            break;
        case SCANRT_OP_MIN:
            bits = (uint64_t)(n - i) * 1000u + r % 1000u;
            if (dt == SCANRT_DTYPE_I32 || dt == SCANRT_DTYPE_I64) bits -= 500000000u;
            if (dt == SCANRT_DTYPE_U8) bits = r;
            f = (double)(n - i) - 500000.0 + (double)(r % 1000u) + (double)(r2 % 4u) * 0.25;
            break;
        case SCANRT_OP_MAX:
            bits = (uint64_t)i * 1000u + r % 1000u;
            if (dt == SCANRT_DTYPE_I32 || dt == SCANRT_DTYPE_I64) bits -= 500000000u;
            if (dt == SCANRT_DTYPE_U8) bits = r;
            f = (double)i - 500000.0 + (double)(r % 1000u) + (double)(r2 % 4u) * 0.25;
            break;
        case SCANRT_OP_BIT_AND:
            bits = (r % 2048u == 0) ? ~(1ull << (r2 % 64u)) : ~0ull;
            if (dt == SCANRT_DTYPE_U8) bits = (r % 64u == 0) ? ~(1ull << (r2 % 8u)) : ~0ull;
            break;
        case SCANRT_OP_BIT_OR:
            bits = (r % 2048u == 0) ? (1ull << (r2 % 64u)) : 0;
            if (dt == SCANRT_DTYPE_U8) bits = (r % 64u == 0) ? (1ull << (r2 % 8u)) : 0;
            break;
        default: /* xor */
            break;
        }
        store(arr, dt, i, bits, f);
    }
}

/* An initial value for (op, output type), as abstract bits / float and as the union. */
static inline scanrt_value make_init(int out_dt, int op, uint64_t seed) {
    uint64_t s = seed ^ 0xC0FFEEull;
    uint64_t r = splitmix64(&s);
    uint64_t bits = r;
    double f = 0;
    switch (op) {
    case SCANRT_OP_SUM: f = -3.0; break;
    case SCANRT_OP_PRODUCT: bits = r | 1; f = -2.0; break;
    case SCANRT_OP_MIN: bits = 700000u + r % 1000u; f = -499000.5; break;
    case SCANRT_OP_MAX: bits = 300000u + r % 1000u; f = -499500.75; break;
    case SCANRT_OP_BIT_OR: bits = r & 0x00F000F000F000F0ull; break;
    default: break;
    }
    scanrt_value v;
    memset(&v, 0, sizeof v);
    switch (out_dt) {
    case SCANRT_DTYPE_I32: v.i32 = (int32_t)(uint32_t)bits; break;
    case SCANRT_DTYPE_U32: v.u32 = (uint32_t)bits; break;
    case SCANRT_DTYPE_I64: v.i64 = (int64_t)bits; break;
    case SCANRT_DTYPE_U64: v.u64 = bits; break;
    case SCANRT_DTYPE_F32: v.f32 = (float)f; break;
    case SCANRT_DTYPE_F64: v.f64 = f; break;
    }
    return v;
}

/* Reference scans, one per output type. Integer arithmetic runs in the unsigned type of
 * the same width (wrapping, no undefined overflow); min/max keep the earlier operand on
 * ties (b < a ? b : a), as scanrt defines them. */
#define LOAD_INPUT(OT, in, idt, i)                                                       \
    ((idt) == SCANRT_DTYPE_U8    ? (OT)((const uint8_t *)(in))[i]                        \
     : (idt) == SCANRT_DTYPE_I32 ? (OT)((const int32_t *)(in))[i]                        \
     : (idt) == SCANRT_DTYPE_U32 ? (OT)((const uint32_t *)(in))[i]                       \
     : (idt) == SCANRT_DTYPE_I64 ? (OT)((const int64_t *)(in))[i]                        \
     : (idt) == SCANRT_DTYPE_U64 ? (OT)((const uint64_t *)(in))[i]                       \
     : (idt) == SCANRT_DTYPE_F32 ? (OT)((const float *)(in))[i]                          \
                                 : (OT)((const double *)(in))[i])

#define DEFINE_INT_REF(NAME, OT, UT, OMIN, OMAX)                                         \
    static inline void NAME(const void *in, int idt, OT *out, size_t n, int op,          \
                            int inclusive, int has_init, OT init) {                      \
        OT run;                                                                          \
        switch (op) {                                                                    \
        case SCANRT_OP_PRODUCT: run = 1; break;                                          \
        case SCANRT_OP_MIN: run = OMAX; break;                                           \
        case SCANRT_OP_MAX: run = OMIN; break;                                           \
        case SCANRT_OP_BIT_AND: run = (OT)~(UT)0; break;                                 \
        default: run = 0; break;                                                         \
        }                                                                                \
        if (has_init) run = init;                                                        \
        for (size_t i = 0; i < n; i++) {                                                 \
            OT x = LOAD_INPUT(OT, in, idt, i), next;                                     \
            switch (op) {                                                                \
            case SCANRT_OP_SUM: next = (OT)((UT)run + (UT)x); break;                     \
            case SCANRT_OP_PRODUCT: next = (OT)((UT)run * (UT)x); break;                 \
            case SCANRT_OP_MIN: next = x < run ? x : run; break;                         \
            case SCANRT_OP_MAX: next = run < x ? x : run; break;                         \
            case SCANRT_OP_BIT_AND: next = (OT)((UT)run & (UT)x); break;                 \
            case SCANRT_OP_BIT_OR: next = (OT)((UT)run | (UT)x); break;                  \
            default: next = (OT)((UT)run ^ (UT)x); break;                                \
            }                                                                            \
            out[i] = inclusive ? next : run;                                             \
            run = next;                                                                  \
        }                                                                                \
    }
DEFINE_INT_REF(ref_i32, int32_t, uint32_t, INT32_MIN, INT32_MAX)
DEFINE_INT_REF(ref_u32, uint32_t, uint32_t, 0, UINT32_MAX)
DEFINE_INT_REF(ref_i64, int64_t, uint64_t, INT64_MIN, INT64_MAX)
DEFINE_INT_REF(ref_u64, uint64_t, uint64_t, 0, UINT64_MAX)

#define DEFINE_FLOAT_REF(NAME, OT)                                                       \
    static inline void NAME(const void *in, int idt, OT *out, size_t n, int op,          \
                            int inclusive, int has_init, OT init) {                      \
        OT run;                                                                          \
        switch (op) {                                                                    \
        case SCANRT_OP_PRODUCT: run = 1; break;                                          \
        case SCANRT_OP_MIN: run = (OT)INFINITY; break;                                   \
        case SCANRT_OP_MAX: run = (OT)-INFINITY; break;                                  \
        default: run = 0; break;                                                         \
        }                                                                                \
        if (has_init) run = init;                                                        \
        for (size_t i = 0; i < n; i++) {                                                 \
            OT x = LOAD_INPUT(OT, in, idt, i), next;                                     \
            switch (op) {                                                                \
            case SCANRT_OP_SUM: next = run + x; break;                                   \
            case SCANRT_OP_PRODUCT: next = run * x; break;                               \
            case SCANRT_OP_MIN: next = x < run ? x : run; break;                         \
            default: next = run < x ? x : run; break;                                    \
            }                                                                            \
            out[i] = inclusive ? next : run;                                             \
            run = next;                                                                  \
        }                                                                                \
    }
DEFINE_FLOAT_REF(ref_f32, float)
DEFINE_FLOAT_REF(ref_f64, double)

static inline void reference_scan(const void *in, int idt, void *out, int odt, size_t n,
                           const scanrt_scan_desc *d) {
    switch (odt) {
    case SCANRT_DTYPE_I32: ref_i32(in, idt, out, n, d->op, d->inclusive, d->has_init, d->init.i32); break;
    case SCANRT_DTYPE_U32: ref_u32(in, idt, out, n, d->op, d->inclusive, d->has_init, d->init.u32); break;
    case SCANRT_DTYPE_I64: ref_i64(in, idt, out, n, d->op, d->inclusive, d->has_init, d->init.i64); break;
    case SCANRT_DTYPE_U64: ref_u64(in, idt, out, n, d->op, d->inclusive, d->has_init, d->init.u64); break;
    case SCANRT_DTYPE_F32: ref_f32(in, idt, out, n, d->op, d->inclusive, d->has_init, d->init.f32); break;
    case SCANRT_DTYPE_F64: ref_f64(in, idt, out, n, d->op, d->inclusive, d->has_init, d->init.f64); break;
    }
}

static inline void format_elem(char *buf, size_t cap, const void *arr, int dt, size_t i) {
    switch (dt) {
    case SCANRT_DTYPE_U8: snprintf(buf, cap, "%u", (unsigned)((const uint8_t *)arr)[i]); break;
    case SCANRT_DTYPE_I32: snprintf(buf, cap, "%ld", (long)((const int32_t *)arr)[i]); break;
    case SCANRT_DTYPE_U32: snprintf(buf, cap, "%lu", (unsigned long)((const uint32_t *)arr)[i]); break;
    case SCANRT_DTYPE_I64: snprintf(buf, cap, "%lld", (long long)((const int64_t *)arr)[i]); break;
    case SCANRT_DTYPE_U64: snprintf(buf, cap, "%llu", (unsigned long long)((const uint64_t *)arr)[i]); break;
    case SCANRT_DTYPE_F32: snprintf(buf, cap, "%.9g", (double)((const float *)arr)[i]); break;
    default: snprintf(buf, cap, "%.17g", ((const double *)arr)[i]); break;
    }
}

/* Index of the first element where `got` differs from `want` (floats: relative
 * tolerance), or -1. */
static inline long first_mismatch(const void *got, const void *want, int dt, size_t n) {
    if (!is_float(dt)) {
        size_t sz = dtype_size(dt);
        if (n == 0 || memcmp(got, want, n * sz) == 0) return -1;
        for (size_t i = 0; i < n; i++)
            if (memcmp((const char *)got + i * sz, (const char *)want + i * sz, sz) != 0) return (long)i;
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        double g = dt == SCANRT_DTYPE_F32 ? (double)((const float *)got)[i] : ((const double *)got)[i];
        double w = dt == SCANRT_DTYPE_F32 ? (double)((const float *)want)[i] : ((const double *)want)[i];
        double tol = (dt == SCANRT_DTYPE_F32 ? 1e-5 : 1e-12) * fmax(1.0, fabs(w));
        if (g == w) continue; /* also infinities of the same sign */
        if (!(fabs(g - w) <= tol)) return (long)i;
    }
    return -1;
}

#define CHECK_ARRAY(got, want, dt, n, ...)                                               \
    do {                                                                                 \
        long bad_ = first_mismatch((got), (want), (dt), (n));                            \
        atomic_fetch_add(&g_checks, 1);                                                  \
        if (bad_ >= 0) {                                                                 \
            char g_[64], w_[64], ctx_[256];                                              \
            format_elem(g_, sizeof g_, (got), (dt), (size_t)bad_);                       \
            format_elem(w_, sizeof w_, (want), (dt), (size_t)bad_);                      \
            snprintf(ctx_, sizeof ctx_, __VA_ARGS__);                                    \
            fail_at(__LINE__, "%s: element %ld of %llu is %s, expected %s", ctx_, bad_,  \
                    (unsigned long long)(n), g_, w_);                                    \
        }                                                                                \
    } while (0)

static inline void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "test_ffi: out of host memory (%zu bytes)\n", bytes);
        exit(2);
    }
    return p;
}

static __attribute__((unused)) const uint8_t SENTINEL = 0xA5;

static inline int all_sentinel(const void *p, size_t bytes) {
    for (size_t i = 0; i < bytes; i++)
        if (((const uint8_t *)p)[i] != SENTINEL) return 0;
    return 1;
}

/* ------------------------------------------------------------------------------------ */
/* Buffer helpers                                                                        */

/* A 1-D scanrt_array of `*len` elements of `dtype` over a buffer. */
static inline scanrt_array buffer_array(scanrt_buffer *b, int32_t dtype, const int64_t *len) {
    scanrt_array a;
    EXPECT_OK(scanrt_array_init(&a));
    EXPECT_OK(scanrt_buffer_pointer(b, &a.data));
    a.dtype = dtype;
    a.ndim = 1;
    a.shape = len;
    return a;
}

static inline scanrt_buffer *make_buffer(scanrt_context *ctx, int dt, uint64_t len) {
    scanrt_buffer *b = NULL;
    if (!EXPECT_OK(scanrt_buffer_create(ctx, dt, len, &b))) return NULL;
    CHECK(b != NULL, "scanrt_buffer_create succeeded but wrote NULL");
    return b;
}

/* Fills the whole buffer with the sentinel byte (`dt` is ignored: the buffer's own
 * element type decides its size). */
static inline void fill_sentinel(scanrt_buffer *b, scanrt_stream *s, int dt) {
    uint64_t len = 0;
    EXPECT_OK(scanrt_buffer_length(b, &len));
    EXPECT_OK(scanrt_buffer_dtype(b, &dt));
    size_t bytes = (size_t)len * dtype_size(dt);
    void *host = xmalloc(bytes);
    memset(host, SENTINEL, bytes);
    EXPECT_OK(scanrt_buffer_upload(b, s, host, len));
    free(host);
}

/* Checks that the whole buffer still holds the sentinel. */
static inline void check_sentinel_at(int line, const char *what, scanrt_buffer *b, scanrt_stream *s, int dt) {
    uint64_t len = 0;
    EXPECT_OK(scanrt_buffer_length(b, &len));
    EXPECT_OK(scanrt_buffer_dtype(b, &dt));
    size_t bytes = (size_t)len * dtype_size(dt);
    void *host = xmalloc(bytes);
    memset(host, 0, bytes);
    EXPECT_OK(scanrt_buffer_download(b, s, host, len));
    atomic_fetch_add(&g_checks, 1);
    if (!all_sentinel(host, bytes)) fail_at(line, "%s: the output buffer was written by a failed call", what);
    free(host);
}
#define CHECK_SENTINEL(what, b, s, dt) check_sentinel_at(__LINE__, (what), (b), (s), (dt))


/* Checks what a scan reported: its backend, and the algorithm asked for (any for AUTO). */
static inline void check_info(int line, const char *what, const scanrt_scan_info *info, int backend,
                              int algorithm) {
    atomic_fetch_add(&g_checks, 1);
    if (info->backend != backend) {
        fail_at(line, "%s: info.backend %d, expected %d", what, info->backend, backend);
        return;
    }
    int ok;
    if (backend == SCANRT_BACKEND_HOST)
        ok = info->algorithm == SCANRT_ALGORITHM_HOST;
    else if (algorithm == SCANRT_ALGORITHM_AUTO)
        ok = info->algorithm == SCANRT_ALGORITHM_SINGLE_PASS || info->algorithm == SCANRT_ALGORITHM_MATRIX;
    else
        ok = info->algorithm == algorithm;
    if (!ok) fail_at(line, "%s: info.algorithm %d (requested %d)", what, info->algorithm, algorithm);
}

/* The stream whose order fill_sentinel and the check follow, when not the scan's own. */
static __attribute__((unused)) scanrt_stream *g_home_stream;

/* A scanrt_scan that must fail with `want`, leave its output and info untouched. */
static inline void expect_scan_error_at(int line, const char *what, scanrt_context *ctx, scanrt_stream *s,
                                        scanrt_buffer *in, scanrt_buffer *out, int odt,
                                        const scanrt_scan_desc *d, scanrt_status want) {
    scanrt_stream *home = g_home_stream ? g_home_stream : s;
    fill_sentinel(out, home, odt);
    scanrt_scan_info info = {sizeof(scanrt_scan_info), -7, -7, -7, 0};
    expect_status_at(line, what, scanrt_scan(ctx, s, in, out, d, &info), want);
    CHECK(info.backend == -7 && info.algorithm == -7, "%s: a failed scan wrote its info", what);
    check_sentinel_at(line, what, out, home, odt);
}
#define EXPECT_SCAN_ERROR(what, ctx, s, in, out, odt, d, want)                          \
    expect_scan_error_at(__LINE__, (what), (ctx), (s), (in), (out), (odt), (d), (want))

static inline const char *backend_name(int32_t backend) { return backend == SCANRT_BACKEND_GPU ? "gpu" : "host"; }

/* Opens the AUTO context (the GPU where there is one), says which backend it gave, and
 * lists the supported type pairs. */
static inline scanrt_context *open_auto_context(const char *program, int32_t *backend) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    list_pairs();
    scanrt_context *ctx = NULL;
    EXPECT_OK(scanrt_context_create(SCANRT_BACKEND_AUTO, 0, &ctx));
    if (!ctx) {
        fprintf(stderr, "%s: no context\n", program);
        exit(1);
    }
    *backend = -1;
    EXPECT_OK(scanrt_context_backend(ctx, backend));
    printf("%s: scanrt %u, SCANRT_BACKEND_AUTO gave the %s backend (%s)\n", program, scanrt_version(),
           backend_name(*backend), scanrt_context_backend_reason(ctx));
    return ctx;
}

/* Where AUTO gave the GPU, runs `run` again on a host context: the host backend's contract
 * holds on GPU machines too. */
static inline void also_on_the_host(int32_t backend, void (*run)(scanrt_context *ctx, int32_t backend)) {
    if (backend != SCANRT_BACKEND_GPU) return;
    scanrt_context *host = NULL;
    EXPECT_OK(scanrt_context_create(SCANRT_BACKEND_HOST, 0, &host));
    if (host) {
        run(host, SCANRT_BACKEND_HOST);
        scanrt_context_destroy(host);
    }
}

#endif
