/* test_ffi: exercises every function of scanrt.h through the C ABI.
 *
 * Runs on any machine: the context is created with SCANRT_BACKEND_AUTO, so without a
 * GPU the host backend runs the scans (buffers are then host memory). Every result is
 * compared with a plain sequential scan written below; every error path checks the
 * status, that the output was left untouched and that scanrt_last_error_message()
 * explains it. On a GPU machine the raw-device entry points run for real; on the host
 * backend they must fail with SCANRT_STATUS_WRONG_BACKEND. No CUDA header is needed.
 *
 * Prints "test_ffi: N checks passed (backend: gpu|host)" and exits nonzero on failure.
 *
 * Compile-time switch SCANRT_TEST_STRICT_HOST_RAW (CMake option
 * SCANRT_FFI_STRICT_HOST_RAW): also require WRONG_BACKEND from scanrt_buffer_pointer and
 * scanrt_scan_workspace_size on a host context. The library documents these two as
 * working there (a host address; 0 bytes), which is what is checked by default.
 */
#define _POSIX_C_SOURCE 200809L

#include "scanrt.h"

#define CHECK_FILE "test_ffi.c"
#include "check.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------ */
/* Types, values and the reference scan                                                  */

enum { NDTYPES = 7, NOPS = 7 };
static const char *dtype_names[NDTYPES] = {"u8", "i32", "u32", "i64", "u64", "f32", "f64"};
static const char *op_names[NOPS] = {"sum", "product", "min", "max", "and", "or", "xor"};

static size_t dtype_size(int dt) {
    switch (dt) {
    case SCANRT_DTYPE_U8: return 1;
    case SCANRT_DTYPE_I32:
    case SCANRT_DTYPE_U32:
    case SCANRT_DTYPE_F32: return 4;
    default: return 8;
    }
}
static int is_float(int dt) { return dt == SCANRT_DTYPE_F32 || dt == SCANRT_DTYPE_F64; }
static int is_bitwise(int op) { return op >= SCANRT_OP_BIT_AND && op <= SCANRT_OP_BIT_XOR; }

static int is_signed(int dt) { return dt == SCANRT_DTYPE_I32 || dt == SCANRT_DTYPE_I64; }

/* The rule for (input, output) pairs, not a copy of the library's table: the output
 * holds every input value (the same type, or a wider one of the same kind, or a wider
 * signed type for an unsigned one); u8 is an input type only. */
static int pair_supported(int in, int out) {
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
static pair_t pairs[NDTYPES * NDTYPES];
static int NPAIRS;

static void list_pairs(void) {
    for (int in = 0; in < NDTYPES; in++)
        for (int out = 0; out < NDTYPES; out++)
            if (pair_supported(in, out)) pairs[NPAIRS++] = (pair_t){in, out};
}

static const uint64_t sizes[] = {0, 1, 2, 4095, 4096, 4097, 65537, 1000003};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };
#define MAX_N 1000003u

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Stores an abstract value into element i of an array of dtype dt: integers take the
 * low bits of `bits`, floats take `f`. */
static void store(void *arr, int dt, size_t i, uint64_t bits, double f) {
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
static void generate(void *arr, int dt, int op, size_t n, uint64_t seed) {
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
static scanrt_value make_init(int out_dt, int op, uint64_t seed) {
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
    static void NAME(const void *in, int idt, OT *out, size_t n, int op, int inclusive,  \
                     int has_init, OT init) {                                            \
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
    static void NAME(const void *in, int idt, OT *out, size_t n, int op, int inclusive,  \
                     int has_init, OT init) {                                            \
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

static void reference_scan(const void *in, int idt, void *out, int odt, size_t n,
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

static void format_elem(char *buf, size_t cap, const void *arr, int dt, size_t i) {
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
static long first_mismatch(const void *got, const void *want, int dt, size_t n) {
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

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "test_ffi: out of host memory (%zu bytes)\n", bytes);
        exit(2);
    }
    return p;
}

static const uint8_t SENTINEL = 0xA5;

static int all_sentinel(const void *p, size_t bytes) {
    for (size_t i = 0; i < bytes; i++)
        if (((const uint8_t *)p)[i] != SENTINEL) return 0;
    return 1;
}

/* ------------------------------------------------------------------------------------ */
/* Buffer helpers                                                                        */

static scanrt_buffer *make_buffer(scanrt_context *ctx, int dt, uint64_t len) {
    scanrt_buffer *b = NULL;
    if (!EXPECT_OK(scanrt_buffer_create(ctx, dt, len, &b))) return NULL;
    CHECK(b != NULL, "scanrt_buffer_create succeeded but wrote NULL");
    return b;
}

/* Fills the whole buffer with the sentinel byte (`dt` is ignored: the buffer's own
 * element type decides its size). */
static void fill_sentinel(scanrt_buffer *b, scanrt_stream *s, int dt) {
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
static void check_sentinel_at(int line, const char *what, scanrt_buffer *b, scanrt_stream *s, int dt) {
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

/* ------------------------------------------------------------------------------------ */
/* The global functions                                                                  */

static void test_version_and_strings(void) {
    g_phase = "version";
    uint32_t v = scanrt_version();
    CHECK(v == SCANRT_VERSION_MAJOR * 10000u + SCANRT_VERSION_MINOR * 100u + SCANRT_VERSION_PATCH,
          "scanrt_version() = %u but the header says %u.%u.%u", v, (unsigned)SCANRT_VERSION_MAJOR,
          (unsigned)SCANRT_VERSION_MINOR, (unsigned)SCANRT_VERSION_PATCH);

    g_phase = "status strings";
    const char *seen[SCANRT_STATUS_OUT_OF_MEMORY + 1];
    for (int s = SCANRT_STATUS_OK; s <= SCANRT_STATUS_OUT_OF_MEMORY; s++) {
        const char *str = scanrt_status_string((scanrt_status)s);
        CHECK(str != NULL, "scanrt_status_string(%d) is NULL", s);
        seen[s] = str ? str : "";
        CHECK(str && str[0] != '\0', "scanrt_status_string(%d) is empty", s);
        for (int t = 0; t < s; t++)
            CHECK(strcmp(seen[t], seen[s]) != 0, "statuses %d and %d share the string \"%s\"", t, s, seen[s]);
    }

    g_phase = "table names";
    for (int dt = 0; dt < NDTYPES; dt++)
        CHECK(strcmp(scanrt_dtype_string(dt), dtype_names[dt]) == 0, "scanrt_dtype_string(%d) = \"%s\"", dt,
              scanrt_dtype_string(dt));
    CHECK(strcmp(scanrt_dtype_string(NDTYPES), "unknown dtype") == 0, "scanrt_dtype_string(out of range)");
    for (int op = 0; op < NOPS; op++)
        CHECK(scanrt_op_string(op)[0] != '\0' && strcmp(scanrt_op_string(op), "unknown operator") != 0,
              "scanrt_op_string(%d)", op);
    CHECK(strcmp(scanrt_op_string(-1), "unknown operator") == 0, "scanrt_op_string(-1)");
    CHECK(strcmp(scanrt_algorithm_string(SCANRT_ALGORITHM_MATRIX), "matrix") == 0, "scanrt_algorithm_string(MATRIX)");

    g_phase = "last error message";
    CHECK(scanrt_last_error_message() != NULL, "scanrt_last_error_message() is NULL before any call");
    EXPECT(scanrt_scan_desc_init(NULL), SCANRT_STATUS_NULL_ARGUMENT);
    scanrt_scan_desc d;
    EXPECT_OK(scanrt_scan_desc_init(&d)); /* clears the message again */
}

static void test_desc_init(void) {
    g_phase = "scan_desc_init";
    scanrt_scan_desc d;
    memset(&d, 0x5A, sizeof d);
    EXPECT_OK(scanrt_scan_desc_init(&d));
    CHECK(d.op == SCANRT_OP_SUM, "default op %d", d.op);
    CHECK(d.inclusive != 0, "default is not inclusive");
    CHECK(d.has_init == 0, "default has_init %d", d.has_init);
    CHECK(d.algorithm == SCANRT_ALGORITHM_AUTO, "default algorithm %d", d.algorithm);
    CHECK(d.direction == SCANRT_DIRECTION_FORWARD, "default direction %d", d.direction);
    CHECK(d.deterministic == 0, "default deterministic %d", d.deterministic);
    CHECK(d.segments == SCANRT_SEGMENTS_NONE, "default segments %d", d.segments);
    CHECK(d.segment_data == NULL, "default segment_data is not NULL");
    EXPECT(scanrt_scan_desc_init(NULL), SCANRT_STATUS_NULL_ARGUMENT);
}

/* Context creation, including bad arguments; returns the AUTO context. */
static scanrt_context *test_context_create(void) {
    g_phase = "context_create";
    scanrt_context *c = (scanrt_context *)&c; /* failures must set it to NULL */
    EXPECT(scanrt_context_create(SCANRT_BACKEND_AUTO, 0, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_context_create(3, 0, &c), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_context_create(-1, 0, &c), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_context_create(1000, 0, &c), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_context_create(SCANRT_BACKEND_HOST, -1, &c), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_context_create(SCANRT_BACKEND_AUTO, -5, &c), SCANRT_STATUS_INVALID_ARGUMENT);
    CHECK(c == NULL, "a failed scanrt_context_create left its out parameter non-NULL");
    c = (scanrt_context *)&c;
    EXPECT(scanrt_context_create(1000, 0, &c), SCANRT_STATUS_INVALID_ARGUMENT);
    CHECK(c == NULL, "a failed scanrt_context_create left its out parameter non-NULL");
    CHECK(strlen(scanrt_context_backend_reason(NULL)) == 0, "the reason of a NULL context is not empty");

    scanrt_context *ctx = NULL;
    EXPECT_OK(scanrt_context_create(SCANRT_BACKEND_AUTO, 0, &ctx));
    CHECK(ctx != NULL, "scanrt_context_create(AUTO) gave NULL");
    if (!ctx) {
        fprintf(stderr, "test_ffi: no context; giving up\n");
        exit(1);
    }
    int32_t backend = -1;
    EXPECT(scanrt_context_backend(NULL, &backend), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_context_backend(ctx, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT_OK(scanrt_context_backend(ctx, &backend));
    CHECK(backend == SCANRT_BACKEND_GPU || backend == SCANRT_BACKEND_HOST,
          "scanrt_context_backend reported %d", backend);

    /* A GPU context: fails without a GPU exactly when AUTO fell back to the host. */
    scanrt_context *gpu = NULL;
    scanrt_status st = scanrt_context_create(SCANRT_BACKEND_GPU, 0, &gpu);
    if (backend == SCANRT_BACKEND_GPU) {
        expect_status_at(__LINE__, "scanrt_context_create(GPU, 0)", st, SCANRT_STATUS_OK);
        int32_t b2 = -1;
        EXPECT_OK(scanrt_context_backend(gpu, &b2));
        CHECK(b2 == SCANRT_BACKEND_GPU, "GPU context reports backend %d", b2);
        scanrt_context *none = NULL;
        EXPECT(scanrt_context_create(SCANRT_BACKEND_GPU, 4096, &none), SCANRT_STATUS_NO_DEVICE);
        CHECK(none == NULL, "failed context creation wrote its out parameter");
    } else {
        atomic_fetch_add(&g_checks, 1);
        if (st != SCANRT_STATUS_NO_DRIVER && st != SCANRT_STATUS_NO_DEVICE)
            fail_at(__LINE__, "scanrt_context_create(GPU) without a GPU returned %s, expected NO_DRIVER or NO_DEVICE",
                    scanrt_status_string(st));
        else
            expect_status_at(__LINE__, "scanrt_context_create(GPU) without a GPU", st, st);
    }
    scanrt_context_destroy(gpu);

    scanrt_context *host = NULL;
    EXPECT_OK(scanrt_context_create(SCANRT_BACKEND_HOST, 0, &host));
    int32_t b3 = -1;
    EXPECT_OK(scanrt_context_backend(host, &b3));
    CHECK(b3 == SCANRT_BACKEND_HOST, "host context reports backend %d", b3);
    /* The device ordinal is ignored by the host backend. */
    scanrt_context *host7 = NULL;
    EXPECT_OK(scanrt_context_create(SCANRT_BACKEND_HOST, 7, &host7));
    scanrt_context_destroy(host7);
    scanrt_context_destroy(host);
    scanrt_context_destroy(NULL); /* no-op */
    return ctx;
}

/* The log callback: what scanrt logs reaches the application, with its pointer, and
   stops when the callback is removed. */
static atomic_int g_log_lines, g_log_context_lines, g_log_kernel_lines, g_log_bad_calls;

static void count_log(void *user, int32_t level, const char *target, const char *message) {
    if (user == NULL || *(const int *)user != 42 || level < SCANRT_LOG_ERROR || level > SCANRT_LOG_DEBUG ||
        strncmp(target, "scanrt", 6) != 0 || message[0] == '\0')
        atomic_fetch_add(&g_log_bad_calls, 1);
    atomic_fetch_add(&g_log_lines, 1);
    if (strstr(message, "context: ")) atomic_fetch_add(&g_log_context_lines, 1);
    if (strstr(message, "compiled ") || strstr(message, "kernel cache hit") || strstr(message, "kernel pack hit"))
        atomic_fetch_add(&g_log_kernel_lines, 1);
}

static void test_log_callback(void) {
    g_phase = "log callback";
    static int tag = 42;
    EXPECT(scanrt_set_log_callback(count_log, &tag, 6), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_set_log_callback(count_log, &tag, -1), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT_OK(scanrt_set_log_callback(count_log, &tag, SCANRT_LOG_DEBUG));
    scanrt_context *ctx = NULL;
    EXPECT_OK(scanrt_context_create(SCANRT_BACKEND_AUTO, 0, &ctx));
    CHECK(atomic_load(&g_log_context_lines) == 1, "context creation logged %d lines", atomic_load(&g_log_context_lines));
    int32_t backend = -1;
    EXPECT_OK(scanrt_context_backend(ctx, &backend));
    if (backend == SCANRT_BACKEND_GPU) {
        EXPECT_OK(scanrt_context_prepare(ctx, SCANRT_DTYPE_U32, SCANRT_DTYPE_U32, SCANRT_OP_SUM));
        CHECK(atomic_load(&g_log_kernel_lines) >= 1, "no kernel compile, cache hit or pack hit was logged");
    }
    scanrt_context_destroy(ctx);
    CHECK(atomic_load(&g_log_bad_calls) == 0, "%d log calls had a wrong argument", atomic_load(&g_log_bad_calls));
    EXPECT_OK(scanrt_set_log_callback(NULL, NULL, SCANRT_LOG_OFF));
    int before = atomic_load(&g_log_lines);
    EXPECT_OK(scanrt_context_create(SCANRT_BACKEND_HOST, 0, &ctx));
    scanrt_context_destroy(ctx);
    CHECK(atomic_load(&g_log_lines) == before, "logging went on after the callback was removed");
    CHECK(strcmp(scanrt_log_level_string(SCANRT_LOG_INFO), "info") == 0, "log level name");
    CHECK(strcmp(scanrt_log_level_string(9), "unknown log level") == 0, "unknown log level name");
    printf("test_ffi: the log callback received %d lines\n", before);
}

static void test_prepare(scanrt_context *ctx) {
    g_phase = "context_prepare";
    EXPECT(scanrt_context_prepare(NULL, SCANRT_DTYPE_U32, SCANRT_DTYPE_U32, SCANRT_OP_SUM),
           SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_context_prepare(ctx, 7, SCANRT_DTYPE_U32, SCANRT_OP_SUM), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_context_prepare(ctx, SCANRT_DTYPE_U32, -1, SCANRT_OP_SUM), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_context_prepare(ctx, SCANRT_DTYPE_U32, SCANRT_DTYPE_U32, 7), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_context_prepare(ctx, SCANRT_DTYPE_U32, SCANRT_DTYPE_U32, -1), SCANRT_STATUS_INVALID_ARGUMENT);
    /* Every type pair and operator: OK exactly for the supported combinations. */
    for (int in = 0; in < NDTYPES; in++)
        for (int out = 0; out < NDTYPES; out++)
            for (int op = 0; op < NOPS; op++) {
                int ok = pair_supported(in, out) && !(is_bitwise(op) && is_float(out));
                scanrt_status want = ok ? SCANRT_STATUS_OK : SCANRT_STATUS_UNSUPPORTED_COMBINATION;
                char what[96];
                snprintf(what, sizeof what, "scanrt_context_prepare(%s -> %s, %s)", dtype_names[in],
                         dtype_names[out], op_names[op]);
                expect_status_at(__LINE__, what, scanrt_context_prepare(ctx, in, out, op), want);
            }
}

static void test_streams(scanrt_context *ctx, int backend) {
    g_phase = "streams";
    scanrt_stream *s = NULL;
    EXPECT(scanrt_stream_create(NULL, &s), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_stream_create(ctx, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT_OK(scanrt_stream_create(ctx, &s));
    CHECK(s != NULL, "scanrt_stream_create gave NULL");
    EXPECT_OK(scanrt_stream_synchronize(s));
    EXPECT(scanrt_stream_synchronize(NULL), SCANRT_STATUS_NULL_ARGUMENT);
    scanrt_stream_destroy(s);
    scanrt_stream_destroy(NULL); /* no-op */

    scanrt_stream *w = NULL;
    EXPECT(scanrt_stream_wrap(NULL, NULL, &w), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_stream_wrap(ctx, NULL, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    if (backend == SCANRT_BACKEND_GPU) {
        EXPECT_OK(scanrt_stream_wrap(ctx, NULL, &w)); /* the legacy default stream */
        EXPECT_OK(scanrt_stream_synchronize(w));
        scanrt_stream_destroy(w);
    } else {
        EXPECT(scanrt_stream_wrap(ctx, NULL, &w), SCANRT_STATUS_WRONG_BACKEND);
        CHECK(w == NULL, "failed scanrt_stream_wrap wrote its out parameter");
    }
}

static void test_buffers(scanrt_context *ctx, int backend) {
    g_phase = "buffers";
    scanrt_stream *s = NULL;
    EXPECT_OK(scanrt_stream_create(ctx, &s));
    scanrt_buffer *b = NULL;
    EXPECT(scanrt_buffer_create(NULL, SCANRT_DTYPE_U32, 4, &b), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_create(ctx, SCANRT_DTYPE_U32, 4, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_create(ctx, 7, 4, &b), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_buffer_create(ctx, -1, 4, &b), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_buffer_create(ctx, SCANRT_DTYPE_U64, UINT64_C(1) << 62, &b), SCANRT_STATUS_LENGTH_OVERFLOW);
    EXPECT(scanrt_buffer_create(ctx, SCANRT_DTYPE_U8, UINT64_MAX, &b), SCANRT_STATUS_LENGTH_OVERFLOW);
    CHECK(b == NULL, "a failed scanrt_buffer_create wrote its out parameter");

    /* Every dtype: create, length, upload, download round trip, pointer. */
    for (int dt = 0; dt < NDTYPES; dt++) {
        const uint64_t n = 1000;
        size_t bytes = (size_t)n * dtype_size(dt);
        scanrt_buffer *buf = make_buffer(ctx, dt, n);
        if (!buf) continue;
        uint64_t len = 0;
        EXPECT_OK(scanrt_buffer_length(buf, &len));
        CHECK(len == n, "%s buffer length %llu", dtype_names[dt], (unsigned long long)len);
        uint8_t *src = xmalloc(bytes), *dst = xmalloc(bytes);
        for (size_t i = 0; i < bytes; i++) src[i] = (uint8_t)(i * 7 + (size_t)dt);
        memset(dst, 0, bytes);
        EXPECT_OK(scanrt_buffer_upload(buf, s, src, n));
        EXPECT_OK(scanrt_buffer_download(buf, s, dst, n));
        CHECK(memcmp(src, dst, bytes) == 0, "%s buffer round trip differs", dtype_names[dt]);
        /* Partial copies touch only the first n elements. */
        memset(dst, 0, bytes);
        EXPECT_OK(scanrt_buffer_download(buf, s, dst, 10));
        CHECK(memcmp(src, dst, 10 * dtype_size(dt)) == 0 && dst[10 * dtype_size(dt)] == 0,
              "%s partial download", dtype_names[dt]);

        void *p = NULL;
        EXPECT_OK(scanrt_buffer_pointer(buf, &p));
        CHECK(p != NULL, "%s buffer pointer is NULL", dtype_names[dt]);
        if (backend == SCANRT_BACKEND_HOST && p != NULL)
            CHECK(memcmp(p, src, bytes) == 0, "host buffer pointer does not address the buffer's data");
        free(src);
        free(dst);
        scanrt_buffer_destroy(buf);
    }
    scanrt_buffer_destroy(NULL); /* no-op */

    /* Zero-length buffers. */
    scanrt_buffer *z = make_buffer(ctx, SCANRT_DTYPE_F64, 0);
    uint64_t zl = 99;
    EXPECT_OK(scanrt_buffer_length(z, &zl));
    CHECK(zl == 0, "empty buffer length %llu", (unsigned long long)zl);
    EXPECT_OK(scanrt_buffer_upload(z, s, NULL, 0));
    EXPECT_OK(scanrt_buffer_download(z, s, NULL, 0));
    scanrt_buffer_destroy(z);

    /* Bad copies. */
    scanrt_buffer *buf = make_buffer(ctx, SCANRT_DTYPE_I32, 16);
    int32_t host[32] = {0};
    uint64_t len = 0;
    void *ptr = NULL;
    EXPECT(scanrt_buffer_upload(NULL, s, host, 4), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_upload(buf, NULL, host, 4), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_upload(buf, s, NULL, 4), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_upload(buf, s, host, 17), SCANRT_STATUS_BUFFER_TOO_SMALL);
    EXPECT(scanrt_buffer_download(NULL, s, host, 4), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_download(buf, NULL, host, 4), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_download(buf, s, NULL, 4), SCANRT_STATUS_NULL_ARGUMENT);
    memset(host, 0x11, sizeof host);
    EXPECT(scanrt_buffer_download(buf, s, host, 32), SCANRT_STATUS_BUFFER_TOO_SMALL);
    CHECK(host[0] == 0x11111111 && host[31] == 0x11111111, "a failed download wrote to host memory");
    EXPECT(scanrt_buffer_length(NULL, &len), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_length(buf, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    int32_t dtype = -1;
    EXPECT(scanrt_buffer_dtype(NULL, &dtype), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_dtype(buf, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT_OK(scanrt_buffer_dtype(buf, &dtype));
    CHECK(dtype == SCANRT_DTYPE_I32, "scanrt_buffer_dtype reported %d for an i32 buffer", dtype);
    EXPECT(scanrt_buffer_pointer(NULL, &ptr), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_pointer(buf, NULL), SCANRT_STATUS_NULL_ARGUMENT);

    /* Buffers and streams outlive their context. */
    scanrt_context *c2 = NULL;
    EXPECT_OK(scanrt_context_create(backend, 0, &c2));
    scanrt_stream *s2 = NULL;
    EXPECT_OK(scanrt_stream_create(c2, &s2));
    scanrt_buffer *b2 = make_buffer(c2, SCANRT_DTYPE_U64, 64);
    scanrt_context_destroy(c2);
    uint64_t in64[64], out64[64];
    for (int i = 0; i < 64; i++) in64[i] = (uint64_t)i * 0x0101010101010101ull;
    memset(out64, 0, sizeof out64);
    EXPECT_OK(scanrt_buffer_upload(b2, s2, in64, 64));
    EXPECT_OK(scanrt_buffer_download(b2, s2, out64, 64));
    CHECK(memcmp(in64, out64, sizeof in64) == 0, "round trip after scanrt_context_destroy differs");
    EXPECT_OK(scanrt_stream_synchronize(s2));
    scanrt_buffer_destroy(b2);
    scanrt_stream_destroy(s2);

    scanrt_buffer_destroy(buf);
    scanrt_stream_destroy(s);
}

/* ------------------------------------------------------------------------------------ */
/* Scans through buffers                                                                 */

typedef struct {
    scanrt_context *ctx;
    int backend;
    scanrt_stream *stream;
    void *in_host, *want, *got;
} sweep_t;

static void check_info(int line, const char *what, const scanrt_scan_info *info, int backend, int algorithm) {
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

/* One buffer scan of `n` elements compared with the reference; also in place when the
 * types are the same. */
static void run_one(sweep_t *sw, int idt, int odt, uint64_t n, const scanrt_scan_desc *d, int in_place) {
    char what[160];
    snprintf(what, sizeof what, "%s %s->%s %s%s%s n=%llu alg=%d", in_place ? "in-place" : "scan",
             dtype_names[idt], dtype_names[odt], d->inclusive ? "inclusive " : "exclusive ", op_names[d->op],
             d->has_init ? " +init" : "", (unsigned long long)n, d->algorithm);
    size_t osz = dtype_size(odt);
    reference_scan(sw->in_host, idt, sw->want, odt, (size_t)n, d);
    scanrt_scan_info info = {sizeof(scanrt_scan_info), -1, -1, -1, 0};

    if (in_place) {
        scanrt_buffer *b = make_buffer(sw->ctx, idt, n);
        if (!b) return;
        EXPECT_OK(scanrt_buffer_upload(b, sw->stream, sw->in_host, n));
        if (expect_status_at(__LINE__, what, scanrt_scan(sw->ctx, sw->stream, b, b, d, &info), SCANRT_STATUS_OK)) {
            check_info(__LINE__, what, &info, sw->backend, d->algorithm);
            memset(sw->got, 0, (size_t)n * osz);
            EXPECT_OK(scanrt_buffer_download(b, sw->stream, sw->got, n));
            CHECK_ARRAY(sw->got, sw->want, odt, (size_t)n, "%s", what);
        }
        scanrt_buffer_destroy(b);
        return;
    }
    /* The output is 3 elements longer than the input: those must stay untouched. */
    scanrt_buffer *in = make_buffer(sw->ctx, idt, n);
    scanrt_buffer *out = make_buffer(sw->ctx, odt, n + 3);
    if (!in || !out) {
        scanrt_buffer_destroy(in);
        scanrt_buffer_destroy(out);
        return;
    }
    EXPECT_OK(scanrt_buffer_upload(in, sw->stream, sw->in_host, n));
    fill_sentinel(out, sw->stream, odt);
    if (expect_status_at(__LINE__, what, scanrt_scan(sw->ctx, sw->stream, in, out, d, &info), SCANRT_STATUS_OK)) {
        check_info(__LINE__, what, &info, sw->backend, d->algorithm);
        memset(sw->got, 0, (size_t)(n + 3) * osz);
        EXPECT_OK(scanrt_buffer_download(out, sw->stream, sw->got, n + 3));
        CHECK_ARRAY(sw->got, sw->want, odt, (size_t)n, "%s", what);
        CHECK(all_sentinel((char *)sw->got + n * osz, 3 * osz), "%s: wrote past the input length", what);
    }
    scanrt_buffer_destroy(in);
    scanrt_buffer_destroy(out);
}

static void sweep(scanrt_context *ctx, int backend, const char *label) {
    static char phase[64];
    snprintf(phase, sizeof phase, "sweep (%s)", label);
    g_phase = phase;
    sweep_t sw = {ctx, backend, NULL, xmalloc(MAX_N * 8), xmalloc((MAX_N + 3) * 8), xmalloc((MAX_N + 3) * 8)};
    EXPECT_OK(scanrt_stream_create(ctx, &sw.stream));
    long scans = 0;
    for (int p = 0; p < NPAIRS; p++) {
        int idt = pairs[p].in, odt = pairs[p].out;
        for (int op = 0; op < NOPS; op++) {
            if (is_bitwise(op) && is_float(odt)) continue; /* rejected below */
            for (int si = 0; si < NSIZES; si++) {
                uint64_t n = sizes[si];
                generate(sw.in_host, idt, op, (size_t)n, (uint64_t)(p * 131 + op * 17 + si));
                for (int inclusive = 0; inclusive <= 1; inclusive++)
                    for (int has_init = 0; has_init <= 1; has_init++) {
                        scanrt_scan_desc d;
                        EXPECT_OK(scanrt_scan_desc_init(&d));
                        d.op = op;
                        d.inclusive = inclusive;
                        d.has_init = has_init;
                        d.init = make_init(odt, op, (uint64_t)(p * 7 + op * 3 + si + inclusive));
                        run_one(&sw, idt, odt, n, &d, 0);
                        scans++;
                        if (idt == odt) {
                            run_one(&sw, idt, odt, n, &d, 1);
                            scans++;
                        }
                        /* Both explicit algorithms on sizes of several tiles. */
                        if (n == 4097 || n == 1000003) {
                            d.algorithm = SCANRT_ALGORITHM_SINGLE_PASS;
                            run_one(&sw, idt, odt, n, &d, 0);
                            d.algorithm = SCANRT_ALGORITHM_MATRIX;
                            run_one(&sw, idt, odt, n, &d, 0);
                            scans += 2;
                        }
                    }
            }
        }
    }
    printf("test_ffi: %s: %ld buffer scans compared with the reference\n", label, scans);
    scanrt_stream_destroy(sw.stream);
    free(sw.in_host);
    free(sw.want);
    free(sw.got);
}

/* A scan that must fail with `want`, leaving the output buffer as it was. */
/* The stream of the context that owns the output buffers, for filling and checking
 * sentinels when a case passes a stream of another context on purpose. */
static scanrt_stream *g_home_stream;

static void expect_scan_error_at(int line, const char *what, scanrt_context *ctx, scanrt_stream *s,
                                 scanrt_buffer *in, scanrt_buffer *out, int odt, const scanrt_scan_desc *d,
                                 scanrt_status want) {
    scanrt_stream *home = g_home_stream ? g_home_stream : s;
    fill_sentinel(out, home, odt);
    scanrt_scan_info info = {sizeof(scanrt_scan_info), -7, -7, -7, 0};
    expect_status_at(line, what, scanrt_scan(ctx, s, in, out, d, &info), want);
    CHECK(info.backend == -7 && info.algorithm == -7, "%s: a failed scan wrote its info", what);
    check_sentinel_at(line, what, out, home, odt);
}
#define EXPECT_SCAN_ERROR(what, ctx, s, in, out, odt, d, want)                          \
    expect_scan_error_at(__LINE__, (what), (ctx), (s), (in), (out), (odt), (d), (want))

static void test_scan_errors(scanrt_context *ctx, int backend) {
    g_phase = "scan errors";
    const uint64_t n = 4097;
    scanrt_stream *s = NULL;
    EXPECT_OK(scanrt_stream_create(ctx, &s));
    g_home_stream = s;
    scanrt_buffer *in = make_buffer(ctx, SCANRT_DTYPE_U32, n);
    scanrt_buffer *out = make_buffer(ctx, SCANRT_DTYPE_U32, n);
    scanrt_buffer *short_out = make_buffer(ctx, SCANRT_DTYPE_U32, n - 1);
    scanrt_buffer *f32in = make_buffer(ctx, SCANRT_DTYPE_F32, n);
    scanrt_buffer *f32out = make_buffer(ctx, SCANRT_DTYPE_F32, n);
    scanrt_buffer *f64in = make_buffer(ctx, SCANRT_DTYPE_F64, n);
    scanrt_buffer *f64out = make_buffer(ctx, SCANRT_DTYPE_F64, n);
    scanrt_buffer *i32out = make_buffer(ctx, SCANRT_DTYPE_I32, n);
    scanrt_buffer *i64in = make_buffer(ctx, SCANRT_DTYPE_I64, n);
    scanrt_buffer *u8in = make_buffer(ctx, SCANRT_DTYPE_U8, n);
    scanrt_buffer *u8out = make_buffer(ctx, SCANRT_DTYPE_U8, n);
    if (!in || !out || !short_out || !f32in || !f32out || !f64in || !f64out || !i32out || !i64in || !u8in ||
        !u8out)
        return;
    uint32_t *h = xmalloc(n * 4);
    for (uint64_t i = 0; i < n; i++) h[i] = (uint32_t)i;
    EXPECT_OK(scanrt_buffer_upload(in, s, h, n));
    free(h);

    scanrt_scan_desc d;
    EXPECT_OK(scanrt_scan_desc_init(&d));
    scanrt_scan_info info;
    EXPECT_OK(scanrt_scan_info_init(&info));

    /* NULL arguments. */
    fill_sentinel(out, s, SCANRT_DTYPE_U32);
    EXPECT(scanrt_scan(NULL, s, in, out, &d, &info), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_scan(ctx, NULL, in, out, &d, &info), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_scan(ctx, s, NULL, out, &d, &info), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_scan(ctx, s, in, NULL, &d, &info), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_scan(ctx, s, in, out, NULL, &info), SCANRT_STATUS_NULL_ARGUMENT);
    CHECK_SENTINEL("scan with NULL arguments", out, s, SCANRT_DTYPE_U32);

    /* Versioned structs: a size that was never set is refused before anything is written;
       a newer caller's longer struct is read and written only as far as this library's. */
    {
        scanrt_scan_desc b = d;
        b.struct_size = 0;
        EXPECT_SCAN_ERROR("desc without struct_size", ctx, s, in, out, SCANRT_DTYPE_U32, &b,
                          SCANRT_STATUS_INVALID_ARGUMENT);
        EXPECT(scanrt_scan_desc_init_sized(&b, 8), SCANRT_STATUS_INVALID_ARGUMENT);
        scanrt_scan_info unset = {0, -7, -7, -7, 0};
        EXPECT(scanrt_scan_info_init_sized(&unset, 4), SCANRT_STATUS_INVALID_ARGUMENT);
        fill_sentinel(out, s, SCANRT_DTYPE_U32);
        EXPECT(scanrt_scan(ctx, s, in, out, &d, &unset), SCANRT_STATUS_INVALID_ARGUMENT);
        CHECK_SENTINEL("scan with an info of struct_size 0", out, s, SCANRT_DTYPE_U32);
        CHECK(unset.backend == -7, "info of struct_size 0 was written");
        struct {
            scanrt_scan_desc desc;
            int appended;
        } newer_desc = {d, 12345};
        newer_desc.desc.struct_size = sizeof newer_desc;
        struct {
            scanrt_scan_info info;
            int appended;
        } newer_info = {{sizeof newer_info, -7, -7, -7, 0}, 12345};
        EXPECT_OK(scanrt_scan(ctx, s, in, out, &newer_desc.desc, &newer_info.info));
        CHECK(newer_info.info.backend == backend, "longer info: backend %d", newer_info.info.backend);
        CHECK(newer_info.info.struct_size == sizeof newer_info, "longer info: struct_size changed");
        CHECK(newer_info.appended == 12345, "the library wrote past its own scanrt_scan_info");
        EXPECT_OK(scanrt_stream_synchronize(s));
    }

    /* Unknown enum values. */
    int bad_ops[] = {7, -1, 100, INT32_MIN};
    for (unsigned i = 0; i < sizeof bad_ops / sizeof bad_ops[0]; i++) {
        scanrt_scan_desc b = d;
        b.op = bad_ops[i];
        EXPECT_SCAN_ERROR("unknown op", ctx, s, in, out, SCANRT_DTYPE_U32, &b, SCANRT_STATUS_INVALID_ARGUMENT);
    }
    int bad_algs[] = {SCANRT_ALGORITHM_HOST /* reported, never requested */, 5, -1, 1000};
    for (unsigned i = 0; i < sizeof bad_algs / sizeof bad_algs[0]; i++) {
        scanrt_scan_desc b = d;
        b.algorithm = bad_algs[i];
        EXPECT_SCAN_ERROR("unknown algorithm", ctx, s, in, out, SCANRT_DTYPE_U32, &b,
                          SCANRT_STATUS_INVALID_ARGUMENT);
    }
    int bad_dirs[] = {2, -1};
    for (unsigned i = 0; i < sizeof bad_dirs / sizeof bad_dirs[0]; i++) {
        scanrt_scan_desc b = d;
        b.direction = bad_dirs[i];
        EXPECT_SCAN_ERROR("bad direction", ctx, s, in, out, SCANRT_DTYPE_U32, &b, SCANRT_STATUS_INVALID_ARGUMENT);
    }
    {
        scanrt_scan_desc b = d;
        b.segments = SCANRT_SEGMENTS_BYTE_FLAGS; /* and no segment data */
        b.inclusive = 0;
        b.op = SCANRT_OP_MAX;
        /* In place: the input (= output) must be unchanged as well. */
        fill_sentinel(out, s, SCANRT_DTYPE_U32);
        EXPECT(scanrt_scan(ctx, s, out, out, &b, NULL), SCANRT_STATUS_NULL_ARGUMENT);
        CHECK_SENTINEL("in-place segmented scan without flags", out, s, SCANRT_DTYPE_U32);
    }

    /* Unsupported combinations. */
    for (int op = SCANRT_OP_BIT_AND; op <= SCANRT_OP_BIT_XOR; op++) {
        scanrt_scan_desc b = d;
        b.op = op;
        EXPECT_SCAN_ERROR("bitwise op on f32", ctx, s, f32in, f32out, SCANRT_DTYPE_F32, &b,
                          SCANRT_STATUS_UNSUPPORTED_COMBINATION);
        EXPECT_SCAN_ERROR("bitwise op on f32 -> f64", ctx, s, f32in, f64out, SCANRT_DTYPE_F64, &b,
                          SCANRT_STATUS_UNSUPPORTED_COMBINATION);
        EXPECT_SCAN_ERROR("bitwise op on f64", ctx, s, f64in, f64out, SCANRT_DTYPE_F64, &b,
                          SCANRT_STATUS_UNSUPPORTED_COMBINATION);
    }
    EXPECT_SCAN_ERROR("f64 into f32", ctx, s, f64in, f32out, SCANRT_DTYPE_F32, &d,
                      SCANRT_STATUS_UNSUPPORTED_COMBINATION);
    EXPECT_SCAN_ERROR("i64 into i32", ctx, s, i64in, i32out, SCANRT_DTYPE_I32, &d,
                      SCANRT_STATUS_UNSUPPORTED_COMBINATION);
    EXPECT_SCAN_ERROR("u32 into i32", ctx, s, in, i32out, SCANRT_DTYPE_I32, &d,
                      SCANRT_STATUS_UNSUPPORTED_COMBINATION);
    EXPECT_SCAN_ERROR("u32 into f32", ctx, s, in, f32out, SCANRT_DTYPE_F32, &d,
                      SCANRT_STATUS_UNSUPPORTED_COMBINATION);
    EXPECT_SCAN_ERROR("f32 into u32", ctx, s, f32in, out, SCANRT_DTYPE_U32, &d,
                      SCANRT_STATUS_UNSUPPORTED_COMBINATION);
    EXPECT_SCAN_ERROR("u8 into u8", ctx, s, u8in, u8out, SCANRT_DTYPE_U8, &d,
                      SCANRT_STATUS_UNSUPPORTED_COMBINATION);

    /* Output shorter than the input. */
    EXPECT_SCAN_ERROR("short output", ctx, s, in, short_out, SCANRT_DTYPE_U32, &d, SCANRT_STATUS_BUFFER_TOO_SMALL);

    /* Objects of another context. */
    scanrt_context *other = NULL;
    EXPECT_OK(scanrt_context_create(backend, 0, &other));
    scanrt_stream *os = NULL;
    EXPECT_OK(scanrt_stream_create(other, &os));
    scanrt_buffer *oin = make_buffer(other, SCANRT_DTYPE_U32, n);
    EXPECT_SCAN_ERROR("stream of another context", ctx, os, in, out, SCANRT_DTYPE_U32, &d,
                      SCANRT_STATUS_CONTEXT_MISMATCH);
    EXPECT_SCAN_ERROR("input of another context", ctx, s, oin, out, SCANRT_DTYPE_U32, &d,
                      SCANRT_STATUS_CONTEXT_MISMATCH);
    EXPECT_SCAN_ERROR("output of another context", other, os, oin, out, SCANRT_DTYPE_U32, &d,
                      SCANRT_STATUS_CONTEXT_MISMATCH);
    scanrt_buffer_destroy(oin);
    scanrt_stream_destroy(os);
    scanrt_context_destroy(other);

    /* A success clears the message; info may be NULL. */
    EXPECT_OK(scanrt_scan(ctx, s, in, out, &d, NULL));
    uint32_t first[4];
    EXPECT_OK(scanrt_buffer_download(out, s, first, 4));
    CHECK(first[0] == 0 && first[1] == 1 && first[2] == 3 && first[3] == 6, "inclusive sum of 0,1,2,3: %u %u %u %u",
          first[0], first[1], first[2], first[3]);

    scanrt_buffer *bufs[] = {in, out, short_out, f32in, f32out, f64in, f64out, i32out, i64in, u8in, u8out};
    for (unsigned i = 0; i < sizeof bufs / sizeof bufs[0]; i++) scanrt_buffer_destroy(bufs[i]);
    g_home_stream = NULL;
    scanrt_stream_destroy(s);
}

/* ------------------------------------------------------------------------------------ */
/* Raw-device entry points                                                               */

/* On a host context every raw-device entry point is refused. */
static void test_raw_on_host(scanrt_context *ctx) {
    g_phase = "raw entry points on the host backend";
    const uint64_t n = 1000;
    scanrt_stream *s = NULL;
    EXPECT_OK(scanrt_stream_create(ctx, &s));
    scanrt_buffer *in = make_buffer(ctx, SCANRT_DTYPE_U32, n);
    scanrt_buffer *out = make_buffer(ctx, SCANRT_DTYPE_U32, n);
    uint32_t *hin = xmalloc(n * 4), *hout = xmalloc(n * 4);
    for (uint64_t i = 0; i < n; i++) hin[i] = (uint32_t)i;
    memset(hout, SENTINEL, n * 4);
    EXPECT_OK(scanrt_buffer_upload(in, s, hin, n));
    fill_sentinel(out, s, SCANRT_DTYPE_U32);
    scanrt_scan_desc d;
    EXPECT_OK(scanrt_scan_desc_init(&d));
    scanrt_scan_info info = {sizeof(scanrt_scan_info), -7, -7, -7, 0};
    uint8_t ws[256];
    memset(ws, SENTINEL, sizeof ws);

    /* Host pointers are what scanrt_buffer_pointer gives on the host backend; the
     * raw entry points must refuse them (and everything else) with WRONG_BACKEND. */
    void *pin = hin, *pout = hout;
    EXPECT(scanrt_scan_device(ctx, NULL, pin, SCANRT_DTYPE_U32, pout, SCANRT_DTYPE_U32, n, &d, &info),
           SCANRT_STATUS_WRONG_BACKEND);
    EXPECT(scanrt_scan_device(ctx, NULL, pout, SCANRT_DTYPE_U32, pout, SCANRT_DTYPE_U32, n, &d, &info),
           SCANRT_STATUS_WRONG_BACKEND);
    EXPECT(scanrt_scan_device(ctx, NULL, pin, SCANRT_DTYPE_U32, pout, SCANRT_DTYPE_U32, 0, &d, &info),
           SCANRT_STATUS_WRONG_BACKEND);
    EXPECT(scanrt_scan_device_with_workspace(ctx, NULL, pin, SCANRT_DTYPE_U32, pout, SCANRT_DTYPE_U32, n, &d, ws,
                                             sizeof ws, &info),
           SCANRT_STATUS_WRONG_BACKEND);
    EXPECT(scanrt_scan_device_with_workspace(ctx, NULL, pin, SCANRT_DTYPE_U32, pout, SCANRT_DTYPE_U32, n, &d, NULL, 0,
                                             &info),
           SCANRT_STATUS_WRONG_BACKEND);
    EXPECT(scanrt_workspace_init(ctx, NULL, ws, sizeof ws), SCANRT_STATUS_WRONG_BACKEND);
    CHECK(all_sentinel(hout, n * 4), "a refused raw scan wrote its output");
    CHECK(all_sentinel(ws, sizeof ws), "a refused workspace call wrote the workspace");
    CHECK(info.backend == -7 && info.algorithm == -7, "a refused raw scan wrote its info");

    scanrt_stream *w = NULL;
    EXPECT(scanrt_stream_wrap(ctx, NULL, &w), SCANRT_STATUS_WRONG_BACKEND);
    int fake_stream = 0;
    EXPECT(scanrt_stream_wrap(ctx, &fake_stream, &w), SCANRT_STATUS_WRONG_BACKEND);
    CHECK(w == NULL, "refused scanrt_stream_wrap wrote its out parameter");

    scanrt_buffer *wb = NULL;
    EXPECT(scanrt_buffer_wrap_device(ctx, pout, SCANRT_DTYPE_U32, n, &wb), SCANRT_STATUS_WRONG_BACKEND);
    EXPECT(scanrt_buffer_wrap_device(ctx, NULL, SCANRT_DTYPE_U32, 0, &wb), SCANRT_STATUS_WRONG_BACKEND);
    CHECK(wb == NULL, "refused scanrt_buffer_wrap_device wrote its out parameter");

    size_t bytes = 12345;
#ifdef SCANRT_TEST_STRICT_HOST_RAW
    EXPECT(scanrt_scan_workspace_size(ctx, SCANRT_DTYPE_U32, SCANRT_DTYPE_U32, n, &d, &bytes),
           SCANRT_STATUS_WRONG_BACKEND);
    void *p = NULL;
    EXPECT(scanrt_buffer_pointer(out, &p), SCANRT_STATUS_WRONG_BACKEND);
#else
    /* Documented: no workspace is needed on the host (0 bytes), and a host buffer's
     * pointer is its host address (checked in test_buffers). */
    EXPECT_OK(scanrt_scan_workspace_size(ctx, SCANRT_DTYPE_U32, SCANRT_DTYPE_U32, n, &d, &bytes));
    CHECK(bytes == 0, "host workspace size %zu, expected 0", bytes);
#endif

    /* Argument checks still come first. */
    EXPECT(scanrt_scan_device(NULL, NULL, pin, SCANRT_DTYPE_U32, pout, SCANRT_DTYPE_U32, n, &d, &info),
           SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_scan_device(ctx, NULL, pin, SCANRT_DTYPE_U32, pout, SCANRT_DTYPE_U32, n, NULL, &info),
           SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_scan_workspace_size(NULL, SCANRT_DTYPE_U32, SCANRT_DTYPE_U32, n, &d, &bytes),
           SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_scan_workspace_size(ctx, SCANRT_DTYPE_U32, SCANRT_DTYPE_U32, n, NULL, &bytes),
           SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_workspace_init(NULL, NULL, ws, sizeof ws), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_workspace_init(ctx, NULL, NULL, 16), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_scan_device_with_workspace(NULL, NULL, pin, SCANRT_DTYPE_U32, pout, SCANRT_DTYPE_U32, n, &d, ws,
                                             sizeof ws, &info),
           SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_scan_device_with_workspace(ctx, NULL, pin, SCANRT_DTYPE_U32, pout, SCANRT_DTYPE_U32, n, &d, NULL,
                                             64, &info),
           SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_wrap_device(NULL, pout, SCANRT_DTYPE_U32, n, &wb), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_wrap_device(ctx, pout, SCANRT_DTYPE_U32, n, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    CHECK(all_sentinel(hout, n * 4), "a refused raw scan wrote its output");
    CHECK_SENTINEL("raw calls on the host backend", out, s, SCANRT_DTYPE_U32);

    free(hin);
    free(hout);
    scanrt_buffer_destroy(in);
    scanrt_buffer_destroy(out);
    scanrt_stream_destroy(s);
}

/* Raw scans shared by the GPU tests: the device pointers come from scanrt buffers. */
typedef struct {
    scanrt_context *ctx;
    scanrt_stream *s; /* wraps the legacy default stream */
} gpu_t;

static void *buffer_ptr(scanrt_buffer *b) {
    void *p = NULL;
    EXPECT_OK(scanrt_buffer_pointer(b, &p));
    CHECK(p != NULL, "device buffer pointer is NULL");
    return p;
}

/* A raw scan (with or without a caller workspace) of random input compared with the
 * reference. */
static void raw_scan_case(gpu_t *g, int idt, int odt, uint64_t n, const scanrt_scan_desc *d, int with_workspace,
                          int in_place) {
    char what[160];
    snprintf(what, sizeof what, "raw%s%s %s->%s %s %s%s n=%llu", with_workspace ? " +workspace" : "",
             in_place ? " in-place" : "", dtype_names[idt], dtype_names[odt],
             d->inclusive ? "inclusive" : "exclusive", op_names[d->op], d->has_init ? " +init" : "",
             (unsigned long long)n);
    size_t isz = dtype_size(idt), osz = dtype_size(odt);
    void *hin = xmalloc((size_t)n * isz), *want = xmalloc((size_t)n * osz), *got = xmalloc((size_t)n * osz);
    generate(hin, idt, d->op, (size_t)n, n * 31 + (uint64_t)d->op);
    reference_scan(hin, idt, want, odt, (size_t)n, d);
    scanrt_buffer *in = make_buffer(g->ctx, idt, n);
    scanrt_buffer *out = in_place ? in : make_buffer(g->ctx, odt, n);
    scanrt_buffer *ws = NULL;
    if (!in || !out) goto done;
    EXPECT_OK(scanrt_buffer_upload(in, g->s, hin, n));
    void *pin = buffer_ptr(in), *pout = buffer_ptr(out);
    scanrt_scan_info info = {sizeof(scanrt_scan_info), -1, -1, -1, 0};
    if (!with_workspace) {
        if (!expect_status_at(__LINE__, what,
                              scanrt_scan_device(g->ctx, NULL, pin, idt, pout, odt, n, d, &info), SCANRT_STATUS_OK))
            goto done;
    } else {
        size_t bytes = 1;
        EXPECT_OK(scanrt_scan_workspace_size(g->ctx, idt, odt, n, d, &bytes));
        void *pws = NULL;
        if (bytes > 0) {
            ws = make_buffer(g->ctx, SCANRT_DTYPE_U8, bytes);
            if (!ws) goto done;
            pws = buffer_ptr(ws);
            EXPECT_OK(scanrt_workspace_init(g->ctx, NULL, pws, bytes));
            /* One byte short is refused before anything is written. */
            expect_status_at(__LINE__, what,
                             scanrt_scan_device_with_workspace(g->ctx, NULL, pin, idt, pout, odt, n, d, pws,
                                                               bytes - 1, &info),
                             SCANRT_STATUS_BUFFER_TOO_SMALL);
        }
        if (!expect_status_at(__LINE__, what,
                              scanrt_scan_device_with_workspace(g->ctx, NULL, pin, idt, pout, odt, n, d, pws, bytes,
                                                                &info),
                              SCANRT_STATUS_OK))
            goto done;
        if (!in_place) {
            /* The workspace is reusable without another init. */
            EXPECT_OK(scanrt_stream_synchronize(g->s));
            memset(got, 0, (size_t)n * osz);
            EXPECT_OK(scanrt_buffer_download(out, g->s, got, n));
            CHECK_ARRAY(got, want, odt, (size_t)n, "%s (first use)", what);
            fill_sentinel(out, g->s, odt);
            if (!expect_status_at(__LINE__, what,
                                  scanrt_scan_device_with_workspace(g->ctx, NULL, pin, idt, pout, odt, n, d, pws,
                                                                    bytes, &info),
                                  SCANRT_STATUS_OK))
                goto done;
        }
    }
    check_info(__LINE__, what, &info, SCANRT_BACKEND_GPU, d->algorithm);
    EXPECT_OK(scanrt_stream_synchronize(g->s));
    memset(got, 0, (size_t)n * osz);
    EXPECT_OK(scanrt_buffer_download(out, g->s, got, n));
    CHECK_ARRAY(got, want, odt, (size_t)n, "%s", what);
done:
    scanrt_buffer_destroy(ws);
    if (out != in) scanrt_buffer_destroy(out);
    scanrt_buffer_destroy(in);
    free(hin);
    free(want);
    free(got);
}

/* A raw scan that must fail with `want` before writing anything to `out`. */
static void raw_error_at(int line, const char *what, gpu_t *g, const void *in, int idt, void *out_ptr, int odt,
                         uint64_t n, const scanrt_scan_desc *d, scanrt_status want, scanrt_buffer *out_buf) {
    if (out_buf) fill_sentinel(out_buf, g->s, SCANRT_DTYPE_U8);
    scanrt_scan_info info = {sizeof(scanrt_scan_info), -7, -7, -7, 0};
    expect_status_at(line, what, scanrt_scan_device(g->ctx, NULL, in, idt, out_ptr, odt, n, d, &info), want);
    if (want != SCANRT_STATUS_OK)
        CHECK(info.backend == -7 && info.algorithm == -7, "%s: a failed raw scan wrote its info", what);
    if (out_buf) {
        EXPECT_OK(scanrt_stream_synchronize(g->s));
        check_sentinel_at(line, what, out_buf, g->s, SCANRT_DTYPE_U8);
    }
}
#define RAW_ERROR(what, g, in, idt, out, odt, n, d, want, buf)                          \
    raw_error_at(__LINE__, (what), (g), (in), (idt), (out), (odt), (n), (d), (want), (buf))

static void test_raw_on_gpu(scanrt_context *ctx) {
    g_phase = "raw entry points on the GPU";
    gpu_t g = {ctx, NULL};
    EXPECT_OK(scanrt_stream_wrap(ctx, NULL, &g.s));
    if (!g.s) return;

    /* Real scans through scanrt_scan_device and scanrt_scan_device_with_workspace. */
    static const uint64_t raw_sizes[] = {1, 4097, 65537, 1000003};
    for (int p = 0; p < NPAIRS; p++)
        for (unsigned si = 0; si < sizeof raw_sizes / sizeof raw_sizes[0]; si++)
            for (int k = 0; k < 2; k++) {
                scanrt_scan_desc d;
                EXPECT_OK(scanrt_scan_desc_init(&d));
                /* inclusive sum, exclusive max with an initial value */
                d.op = k == 0 ? SCANRT_OP_SUM : SCANRT_OP_MAX;
                d.inclusive = k == 0;
                d.has_init = k;
                d.init = make_init(pairs[p].out, d.op, (uint64_t)p);
                raw_scan_case(&g, pairs[p].in, pairs[p].out, raw_sizes[si], &d, 0, 0);
                raw_scan_case(&g, pairs[p].in, pairs[p].out, raw_sizes[si], &d, 1, 0);
                if (pairs[p].in == pairs[p].out) {
                    raw_scan_case(&g, pairs[p].in, pairs[p].out, raw_sizes[si], &d, 0, 1);
                    raw_scan_case(&g, pairs[p].in, pairs[p].out, raw_sizes[si], &d, 1, 1);
                }
                d.algorithm = SCANRT_ALGORITHM_MATRIX;
                raw_scan_case(&g, pairs[p].in, pairs[p].out, raw_sizes[si], &d, 0, 0);
                raw_scan_case(&g, pairs[p].in, pairs[p].out, raw_sizes[si], &d, 1, 0);
            }

    /* Bad device inputs. Allocations of several MiB: the driver reports the extent of
     * small allocations rounded up, so a too-short one below ~2 MiB can go unnoticed. */
    const uint64_t n = (1u << 22) + 3;
    scanrt_scan_desc d;
    EXPECT_OK(scanrt_scan_desc_init(&d));
    scanrt_buffer *in = make_buffer(ctx, SCANRT_DTYPE_U32, n);
    scanrt_buffer *out = make_buffer(ctx, SCANRT_DTYPE_U32, n);
    scanrt_buffer *half = make_buffer(ctx, SCANRT_DTYPE_U32, n / 2);
    scanrt_buffer *big = make_buffer(ctx, SCANRT_DTYPE_U32, n + 1);
    if (!in || !out || !half || !big) return;
    uint32_t *host = xmalloc(n * 4);
    for (uint64_t i = 0; i < n; i++) host[i] = (uint32_t)(i % 5);
    EXPECT_OK(scanrt_buffer_upload(in, g.s, host, n));
    void *pin = buffer_ptr(in), *pout = buffer_ptr(out), *phalf = buffer_ptr(half), *pbig = buffer_ptr(big);
    uint32_t *malloced = xmalloc(n * 4);
    memset(malloced, SENTINEL, n * 4);

    RAW_ERROR("host (malloc) input", &g, malloced, SCANRT_DTYPE_U32, pout, SCANRT_DTYPE_U32, n, &d,
              SCANRT_STATUS_NOT_DEVICE_MEMORY, out);
    RAW_ERROR("host (malloc) output", &g, pin, SCANRT_DTYPE_U32, malloced, SCANRT_DTYPE_U32, n, &d,
              SCANRT_STATUS_NOT_DEVICE_MEMORY, NULL);
    CHECK(all_sentinel(malloced, n * 4), "a refused raw scan wrote host memory");
    RAW_ERROR("output of n/2 elements", &g, pin, SCANRT_DTYPE_U32, phalf, SCANRT_DTYPE_U32, n, &d,
              SCANRT_STATUS_BUFFER_TOO_SMALL, half);
    RAW_ERROR("input of n/2 elements", &g, phalf, SCANRT_DTYPE_U32, pout, SCANRT_DTYPE_U32, n, &d,
              SCANRT_STATUS_BUFFER_TOO_SMALL, out);
    RAW_ERROR("output = input + 1 element", &g, pbig, SCANRT_DTYPE_U32, (char *)pbig + 4, SCANRT_DTYPE_U32, n, &d,
              SCANRT_STATUS_PARTIAL_OVERLAP, big);
    RAW_ERROR("input = output + 1 element", &g, (char *)pbig + 4, SCANRT_DTYPE_U32, pbig, SCANRT_DTYPE_U32, n, &d,
              SCANRT_STATUS_PARTIAL_OVERLAP, big);
    RAW_ERROR("misaligned output", &g, pin, SCANRT_DTYPE_U32, (char *)pbig + 1, SCANRT_DTYPE_U32, n - 1, &d,
              SCANRT_STATUS_INVALID_ARGUMENT, big);
    RAW_ERROR("NULL input", &g, NULL, SCANRT_DTYPE_U32, pout, SCANRT_DTYPE_U32, n, &d, SCANRT_STATUS_NULL_ARGUMENT,
              out);
    RAW_ERROR("NULL output", &g, pin, SCANRT_DTYPE_U32, NULL, SCANRT_DTYPE_U32, n, &d, SCANRT_STATUS_NULL_ARGUMENT,
              NULL);
    RAW_ERROR("n = 0", &g, pin, SCANRT_DTYPE_U32, pout, SCANRT_DTYPE_U32, 0, &d, SCANRT_STATUS_OK, out);
    RAW_ERROR("n = 0, NULL pointers", &g, NULL, SCANRT_DTYPE_U32, NULL, SCANRT_DTYPE_U32, 0, &d, SCANRT_STATUS_OK,
              NULL);
    RAW_ERROR("u32 into i32", &g, pin, SCANRT_DTYPE_U32, pout, SCANRT_DTYPE_I32, n, &d,
              SCANRT_STATUS_UNSUPPORTED_COMBINATION, out);
    RAW_ERROR("unknown input dtype", &g, pin, 9, pout, SCANRT_DTYPE_U32, n, &d, SCANRT_STATUS_INVALID_ARGUMENT, out);
    RAW_ERROR("unknown output dtype", &g, pin, SCANRT_DTYPE_U32, pout, -2, n, &d, SCANRT_STATUS_INVALID_ARGUMENT, out);
    {
        scanrt_scan_desc b = d;
        b.op = SCANRT_OP_BIT_XOR;
        scanrt_buffer *f = make_buffer(ctx, SCANRT_DTYPE_F32, n);
        RAW_ERROR("xor on f32", &g, buffer_ptr(f), SCANRT_DTYPE_F32, buffer_ptr(f), SCANRT_DTYPE_F32, n, &b,
                  SCANRT_STATUS_UNSUPPORTED_COMBINATION, f);
        scanrt_buffer_destroy(f);
        b = d;
        b.direction = 7;
        RAW_ERROR("unknown direction", &g, pin, SCANRT_DTYPE_U32, pout, SCANRT_DTYPE_U32, n, &b,
                  SCANRT_STATUS_INVALID_ARGUMENT, out);
        b = d;
        b.op = 99;
        RAW_ERROR("unknown op", &g, pin, SCANRT_DTYPE_U32, pout, SCANRT_DTYPE_U32, n, &b,
                  SCANRT_STATUS_INVALID_ARGUMENT, out);
    }
    {
        /* Workspace errors. */
        size_t bytes = 0;
        EXPECT(scanrt_scan_workspace_size(ctx, SCANRT_DTYPE_U32, SCANRT_DTYPE_U32, n, &d, NULL),
               SCANRT_STATUS_NULL_ARGUMENT);
        EXPECT(scanrt_scan_workspace_size(ctx, 11, SCANRT_DTYPE_U32, n, &d, &bytes), SCANRT_STATUS_INVALID_ARGUMENT);
        EXPECT(scanrt_scan_workspace_size(ctx, SCANRT_DTYPE_F64, SCANRT_DTYPE_F32, n, &d, &bytes),
               SCANRT_STATUS_UNSUPPORTED_COMBINATION);
        EXPECT_OK(scanrt_scan_workspace_size(ctx, SCANRT_DTYPE_U32, SCANRT_DTYPE_U32, n, &d, &bytes));
        CHECK(bytes > 0, "a scan of %llu elements needs no workspace?", (unsigned long long)n);
        size_t one_tile = 99;
        EXPECT_OK(scanrt_scan_workspace_size(ctx, SCANRT_DTYPE_U32, SCANRT_DTYPE_U32, 1, &d, &one_tile));
        CHECK(one_tile == 0, "a scan of 1 element needs %zu workspace bytes", one_tile);
        EXPECT(scanrt_workspace_init(ctx, NULL, malloced, 64), SCANRT_STATUS_NOT_DEVICE_MEMORY);
        EXPECT(scanrt_workspace_init(ctx, NULL, phalf, (n / 2) * 4 + 1), SCANRT_STATUS_BUFFER_TOO_SMALL);
        CHECK(all_sentinel(malloced, n * 4), "a refused workspace init wrote host memory");
        fill_sentinel(out, g.s, SCANRT_DTYPE_U32);
        scanrt_scan_info info = {sizeof(scanrt_scan_info), -7, -7, -7, 0};
        EXPECT(scanrt_scan_device_with_workspace(ctx, NULL, pin, SCANRT_DTYPE_U32, pout, SCANRT_DTYPE_U32, n, &d,
                                                 NULL, 0, &info),
               SCANRT_STATUS_BUFFER_TOO_SMALL);
        EXPECT(scanrt_scan_device_with_workspace(ctx, NULL, pin, SCANRT_DTYPE_U32, pout, SCANRT_DTYPE_U32, n, &d,
                                                 malloced, bytes, &info),
               SCANRT_STATUS_NOT_DEVICE_MEMORY);
        EXPECT_OK(scanrt_stream_synchronize(g.s));
        CHECK_SENTINEL("refused workspace scans", out, g.s, SCANRT_DTYPE_U32);
        /* A one-tile scan needs no workspace. */
        EXPECT_OK(scanrt_scan_device_with_workspace(ctx, NULL, pin, SCANRT_DTYPE_U32, pout, SCANRT_DTYPE_U32, 1, &d,
                                                    NULL, 0, NULL));
    }
    {
        /* scanrt_buffer_wrap_device over scanrt-allocated device memory. */
        scanrt_buffer *w = NULL;
        EXPECT_OK(scanrt_buffer_wrap_device(ctx, pin, SCANRT_DTYPE_U32, n, &w));
        uint64_t len = 0;
        EXPECT_OK(scanrt_buffer_length(w, &len));
        CHECK(len == n, "wrapped buffer length %llu", (unsigned long long)len);
        void *wp = NULL;
        EXPECT_OK(scanrt_buffer_pointer(w, &wp));
        CHECK(wp == pin, "wrapped buffer pointer %p, expected %p", wp, pin);
        scanrt_buffer *wo = NULL;
        EXPECT_OK(scanrt_buffer_wrap_device(ctx, pout, SCANRT_DTYPE_U32, n, &wo));
        EXPECT_OK(scanrt_scan(ctx, g.s, w, wo, &d, NULL));
        uint32_t *res = xmalloc(n * 4), *want = xmalloc(n * 4);
        EXPECT_OK(scanrt_buffer_download(wo, g.s, res, n));
        reference_scan(host, SCANRT_DTYPE_U32, want, SCANRT_DTYPE_U32, n, &d);
        CHECK_ARRAY(res, want, SCANRT_DTYPE_U32, n, "scan of wrapped device buffers");
        free(res);
        free(want);
        scanrt_buffer_destroy(wo);
        scanrt_buffer_destroy(w); /* does not free the memory */
        uint32_t first = 99;
        EXPECT_OK(scanrt_buffer_download(in, g.s, &first, 1));
        CHECK(first == 0, "the wrapped memory changed after destroying the wrapper");

        scanrt_buffer *bad = NULL;
        EXPECT(scanrt_buffer_wrap_device(ctx, phalf, SCANRT_DTYPE_U32, n, &bad), SCANRT_STATUS_BUFFER_TOO_SMALL);
        EXPECT(scanrt_buffer_wrap_device(ctx, malloced, SCANRT_DTYPE_U32, n, &bad), SCANRT_STATUS_NOT_DEVICE_MEMORY);
        EXPECT(scanrt_buffer_wrap_device(ctx, NULL, SCANRT_DTYPE_U32, n, &bad), SCANRT_STATUS_NULL_ARGUMENT);
        EXPECT(scanrt_buffer_wrap_device(ctx, pin, 12, n, &bad), SCANRT_STATUS_INVALID_ARGUMENT);
        CHECK(bad == NULL, "a failed scanrt_buffer_wrap_device wrote its out parameter");
    }
    free(host);
    free(malloced);
    scanrt_buffer_destroy(in);
    scanrt_buffer_destroy(out);
    scanrt_buffer_destroy(half);
    scanrt_buffer_destroy(big);
    scanrt_stream_destroy(g.s);
}

/* ------------------------------------------------------------------------------------ */
/* Threads: one shared context, a stream per thread, thread-local error messages         */

typedef struct {
    scanrt_context *ctx;
    int index;
} thread_arg_t;

static void *thread_main(void *p) {
    thread_arg_t *a = p;
    const uint64_t n = 65537 + (uint64_t)a->index * 1000;
    scanrt_stream *s = NULL;
    EXPECT_OK(scanrt_stream_create(a->ctx, &s));
    scanrt_buffer *in = make_buffer(a->ctx, SCANRT_DTYPE_U32, n);
    scanrt_buffer *out = make_buffer(a->ctx, SCANRT_DTYPE_U64, n);
    uint32_t *h = xmalloc(n * 4);
    uint64_t *want = xmalloc(n * 8), *got = xmalloc(n * 8);
    for (int iter = 0; iter < 10; iter++) {
        generate(h, SCANRT_DTYPE_U32, SCANRT_OP_SUM, n, (uint64_t)(a->index * 100 + iter));
        scanrt_scan_desc d;
        EXPECT_OK(scanrt_scan_desc_init(&d));
        d.inclusive = iter % 2;
        reference_scan(h, SCANRT_DTYPE_U32, want, SCANRT_DTYPE_U64, n, &d);
        EXPECT_OK(scanrt_buffer_upload(in, s, h, n));
        EXPECT_OK(scanrt_scan(a->ctx, s, in, out, &d, NULL));
        EXPECT_OK(scanrt_buffer_download(out, s, got, n));
        CHECK_ARRAY(got, want, SCANRT_DTYPE_U64, n, "thread %d iteration %d", a->index, iter);
        /* An error here leaves a message on this thread only. */
        EXPECT(scanrt_scan(a->ctx, s, in, NULL, &d, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    }
    free(h);
    free(want);
    free(got);
    scanrt_buffer_destroy(in);
    scanrt_buffer_destroy(out);
    scanrt_stream_destroy(s);
    return NULL;
}

static void test_threads(scanrt_context *ctx) {
    g_phase = "threads";
    enum { T = 4 };
    pthread_t th[T];
    thread_arg_t args[T];
    scanrt_scan_desc d;
    EXPECT_OK(scanrt_scan_desc_init(&d)); /* this thread's message is now "" */
    int started = 0;
    for (int i = 0; i < T; i++) {
        args[i].ctx = ctx;
        args[i].index = i;
        if (pthread_create(&th[i], NULL, thread_main, &args[i]) == 0) started++;
        else break;
    }
    CHECK(started == T, "only %d of %d threads started", started, T);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    const char *msg = scanrt_last_error_message();
    CHECK(msg && msg[0] == '\0', "other threads' errors leaked into this thread's message: \"%s\"", msg ? msg : "");
}

/* ------------------------------------------------------------------------------------ */

/* ------------------------------------------------------------------------------------ */
/* Backward, segmented and deterministic scans through the buffer API                    */

/* Sequential reference of a segmented (or plain) i64 sum over i32 values: forward or
 * backward, inclusive or exclusive, every segment starting from `init`. `starts[p]`
 * (NULL = unsegmented) says element p starts a segment in memory order; a backward scan
 * restarts at p == n-1 or where starts[p+1] is set. */
static void reference_segmented(const int32_t *in, const uint8_t *starts, size_t n, int backward, int inclusive,
                                int32_t init, int32_t *out) {
    int32_t run = init;
    for (size_t i = 0; i < n; i++) {
        size_t p = backward ? n - 1 - i : i;
        if (starts && (backward ? (p == n - 1 || starts[p + 1]) : (p == 0 || starts[p]))) run = init;
        int32_t next = (int32_t)((uint32_t)run + (uint32_t)in[p]);
        out[p] = inclusive ? next : run;
        run = next;
    }
}

/* Runs one i32 sum through scanrt_scan; `data` is the segment buffer (or NULL). */
static void segmented_case(scanrt_context *ctx, scanrt_stream *s, int backend, const char *what, const int32_t *values,
                           size_t n, const uint8_t *starts, scanrt_buffer *data, int segments, int key_dtype,
                           int backward, int inclusive, int32_t init) {
    int32_t *want = xmalloc(n * 4), *got = xmalloc(n * 4);
    reference_segmented(values, segments == SCANRT_SEGMENTS_NONE ? NULL : starts, n, backward, inclusive, init, want);
    scanrt_buffer *in = make_buffer(ctx, SCANRT_DTYPE_I32, n), *out = make_buffer(ctx, SCANRT_DTYPE_I32, n);
    scanrt_scan_desc d;
    EXPECT_OK(scanrt_scan_desc_init(&d));
    d.inclusive = inclusive;
    d.has_init = 1;
    d.init.i32 = init;
    d.direction = backward ? SCANRT_DIRECTION_BACKWARD : SCANRT_DIRECTION_FORWARD;
    d.segments = segments;
    d.key_dtype = key_dtype;
    if (data) EXPECT_OK(scanrt_buffer_pointer(data, (void **)&d.segment_data));
    scanrt_scan_info info = {sizeof(scanrt_scan_info), -1, -1, -1, 0};
    EXPECT_OK(scanrt_buffer_upload(in, s, values, n));
    if (expect_status_at(__LINE__, what, scanrt_scan(ctx, s, in, out, &d, &info), SCANRT_STATUS_OK)) {
        check_info(__LINE__, what, &info, backend, SCANRT_ALGORITHM_AUTO);
        CHECK(info.reason == (backend == SCANRT_BACKEND_HOST ? SCANRT_CHOICE_REASON_HOST_BACKEND
                                                             : SCANRT_CHOICE_REASON_FASTEST),
              "%s: reason %d", what, info.reason);
        EXPECT_OK(scanrt_buffer_download(out, s, got, n));
        CHECK_ARRAY(got, want, SCANRT_DTYPE_I32, n, "%s", what);
    }
    scanrt_buffer_destroy(in);
    scanrt_buffer_destroy(out);
    free(want);
    free(got);
}

static void test_segmented_backward_deterministic(scanrt_context *ctx, int backend) {
    g_phase = "backward/segmented/deterministic";
    scanrt_stream *s = NULL;
    EXPECT_OK(scanrt_stream_create(ctx, &s));
    if (!s) return;

    /* Seed 004: A with head flags; its backward outputs are printed in traversal order. */
    const int32_t a[7] = {1, 7, -4, 2, 2, -1, 5};
    const uint8_t flags[7] = {1, 0, 1, 1, 0, 0, 0};
    const int32_t seg_fwd[7] = {0, 1, 0, 0, 2, 4, 3}, seg_bwd_traversal[7] = {0, 5, 4, 6, 0, 0, 7};
    const int32_t bwd_traversal[7] = {0, 5, 4, 6, 8, 4, 11};
    int32_t expect_seg_bwd[7], expect_bwd[7], want[7];
    for (int i = 0; i < 7; i++) expect_seg_bwd[i] = seg_bwd_traversal[6 - i], expect_bwd[i] = bwd_traversal[6 - i];
    reference_segmented(a, flags, 7, 0, 0, 0, want);
    CHECK(memcmp(want, seg_fwd, sizeof want) == 0, "reference differs from seed 004's segmented B");
    reference_segmented(a, flags, 7, 1, 0, 0, want);
    CHECK(memcmp(want, expect_seg_bwd, sizeof want) == 0, "reference differs from seed 004's segmented C");
    reference_segmented(a, NULL, 7, 1, 0, 0, want);
    CHECK(memcmp(want, expect_bwd, sizeof want) == 0, "reference differs from seed 004's C");

    /* Random values and segments in every form: byte flags, bit flags, u32 and i64 keys. */
    const size_t n = 100003;
    int32_t *values = xmalloc(n * 4);
    uint8_t *starts = xmalloc(n);
    uint32_t *bits = calloc((n + 31) / 32, 4);
    uint32_t *keys32 = xmalloc(n * 4);
    int64_t *keys64 = xmalloc(n * 8);
    uint64_t rng = 42;
    uint32_t key = 7;
    for (size_t i = 0; i < n; i++) {
        values[i] = (int32_t)(splitmix64(&rng) % 2001) - 1000;
        starts[i] = splitmix64(&rng) % 500 == 0 || i % 4096 == 1;
        if (starts[i]) bits[i / 32] |= 1u << (i % 32), key += 1 + (uint32_t)(splitmix64(&rng) % 3);
        keys32[i] = key;
        keys64[i] = -(int64_t)key * 1000003;
    }
    scanrt_buffer *byte_buf = make_buffer(ctx, SCANRT_DTYPE_U8, n), *bit_buf = make_buffer(ctx, SCANRT_DTYPE_U32, (n + 31) / 32);
    scanrt_buffer *k32 = make_buffer(ctx, SCANRT_DTYPE_U32, n), *k64 = make_buffer(ctx, SCANRT_DTYPE_I64, n);
    EXPECT_OK(scanrt_buffer_upload(byte_buf, s, starts, n));
    EXPECT_OK(scanrt_buffer_upload(bit_buf, s, bits, (n + 31) / 32));
    EXPECT_OK(scanrt_buffer_upload(k32, s, keys32, n));
    EXPECT_OK(scanrt_buffer_upload(k64, s, keys64, n));
    struct {
        const char *name;
        scanrt_buffer *data;
        int segments, key_dtype;
    } forms[] = {
        {"unsegmented", NULL, SCANRT_SEGMENTS_NONE, 0},
        {"byte flags", byte_buf, SCANRT_SEGMENTS_BYTE_FLAGS, 0},
        {"bit flags", bit_buf, SCANRT_SEGMENTS_BIT_FLAGS, 0},
        {"u32 keys", k32, SCANRT_SEGMENTS_KEYS, SCANRT_DTYPE_U32},
        {"i64 keys", k64, SCANRT_SEGMENTS_KEYS, SCANRT_DTYPE_I64},
    };
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++)
        for (int backward = 0; backward < 2; backward++)
            for (int inclusive = 0; inclusive < 2; inclusive++) {
                char what[96];
                snprintf(what, sizeof what, "%s %s %s", forms[f].name, backward ? "backward" : "forward",
                         inclusive ? "inclusive" : "exclusive");
                segmented_case(ctx, s, backend, what, values, n, starts, forms[f].data, forms[f].segments,
                               forms[f].key_dtype, backward, inclusive, 3);
            }
    scanrt_buffer *seed_flags = make_buffer(ctx, SCANRT_DTYPE_U8, 7);
    EXPECT_OK(scanrt_buffer_upload(seed_flags, s, flags, 7));
    segmented_case(ctx, s, backend, "seed 004 C", a, 7, flags, NULL, SCANRT_SEGMENTS_NONE, 0, 1, 0, 0);
    segmented_case(ctx, s, backend, "seed 004 segmented C", a, 7, flags, seed_flags, SCANRT_SEGMENTS_BYTE_FLAGS, 0, 1, 0, 0);
    scanrt_buffer_destroy(seed_flags);

    /* Bad segment descriptions: a specific status, nothing written. */
    scanrt_buffer *in = make_buffer(ctx, SCANRT_DTYPE_I32, n), *out = make_buffer(ctx, SCANRT_DTYPE_I32, n);
    EXPECT_OK(scanrt_buffer_upload(in, s, values, n));
    scanrt_scan_desc d;
    EXPECT_OK(scanrt_scan_desc_init(&d));
    d.segments = 7;
    EXPECT_SCAN_ERROR("unknown segments value", ctx, s, in, out, SCANRT_DTYPE_I32, &d, SCANRT_STATUS_INVALID_ARGUMENT);
    d.segments = SCANRT_SEGMENTS_BYTE_FLAGS;
    EXPECT_SCAN_ERROR("flags without data", ctx, s, in, out, SCANRT_DTYPE_I32, &d, SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT_OK(scanrt_buffer_pointer(k32, (void **)&d.segment_data));
    d.segments = SCANRT_SEGMENTS_KEYS;
    d.key_dtype = SCANRT_DTYPE_F32;
    EXPECT_SCAN_ERROR("float keys", ctx, s, in, out, SCANRT_DTYPE_I32, &d, SCANRT_STATUS_UNSUPPORTED_COMBINATION);
    d.key_dtype = 99;
    EXPECT_SCAN_ERROR("unknown key type", ctx, s, in, out, SCANRT_DTYPE_I32, &d, SCANRT_STATUS_INVALID_ARGUMENT);
    d.segments = SCANRT_SEGMENTS_NONE;
    EXPECT_SCAN_ERROR("data without segments", ctx, s, in, out, SCANRT_DTYPE_I32, &d, SCANRT_STATUS_INVALID_ARGUMENT);
    d.segments = SCANRT_SEGMENTS_BIT_FLAGS;
    d.segment_data = (const char *)d.segment_data + 2;
    EXPECT_SCAN_ERROR("misaligned bit words", ctx, s, in, out, SCANRT_DTYPE_I32, &d, SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT_OK(scanrt_buffer_pointer(out, (void **)&d.segment_data));
    EXPECT_SCAN_ERROR("flags overlapping the output", ctx, s, in, out, SCANRT_DTYPE_I32, &d,
                      SCANRT_STATUS_PARTIAL_OVERLAP);
    EXPECT_OK(scanrt_scan_desc_init(&d));
    d.direction = 2;
    EXPECT_SCAN_ERROR("unknown direction", ctx, s, in, out, SCANRT_DTYPE_I32, &d, SCANRT_STATUS_INVALID_ARGUMENT);

    /* Deterministic f32 sums: the algorithm and reason are reported, and two runs agree bit for bit. */
    float *fv = xmalloc(n * 4), *r1 = xmalloc(n * 4), *r2 = xmalloc(n * 4);
    for (size_t i = 0; i < n; i++) fv[i] = (float)((double)(splitmix64(&rng) % 2000001) / 1000.0 - 1000.0);
    scanrt_buffer *fin = make_buffer(ctx, SCANRT_DTYPE_F32, n), *fout = make_buffer(ctx, SCANRT_DTYPE_F32, n);
    EXPECT_OK(scanrt_buffer_upload(fin, s, fv, n));
    EXPECT_OK(scanrt_scan_desc_init(&d));
    d.deterministic = 1;
    for (int run = 0; run < 2; run++) {
        scanrt_scan_info info = {sizeof(scanrt_scan_info), -1, -1, -1, 0};
        EXPECT_OK(scanrt_scan(ctx, s, fin, fout, &d, &info));
        int want_alg = backend == SCANRT_BACKEND_HOST ? SCANRT_ALGORITHM_HOST : SCANRT_ALGORITHM_DETERMINISTIC_SINGLE_PASS;
        int want_reason = backend == SCANRT_BACKEND_HOST ? SCANRT_CHOICE_REASON_HOST_BACKEND : SCANRT_CHOICE_REASON_DETERMINISTIC;
        CHECK(info.algorithm == want_alg && info.reason == want_reason, "deterministic: ran %d for %d", info.algorithm,
              info.reason);
        EXPECT_OK(scanrt_buffer_download(fout, s, run ? r2 : r1, n));
    }
    CHECK(memcmp(r1, r2, n * 4) == 0, "deterministic f32 sums differ between runs");
    /* An integer sum is reproducible anyway: no fixed-order pass needed. */
    if (backend == SCANRT_BACKEND_GPU) {
        scanrt_scan_info info = {sizeof(scanrt_scan_info), -1, -1, -1, 0};
        EXPECT_OK(scanrt_scan(ctx, s, in, out, &d, &info));
        CHECK(info.algorithm == SCANRT_ALGORITHM_SINGLE_PASS && info.reason == SCANRT_CHOICE_REASON_ORDER_INDEPENDENT,
              "deterministic integer sum ran %d for %d", info.algorithm, info.reason);
    }
    for (int r = -1; r <= 5; r++) CHECK(scanrt_choice_reason_string(r)[0] != '\0', "empty reason string for %d", r);

    scanrt_buffer *all[] = {byte_buf, bit_buf, k32, k64, in, out, fin, fout};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) scanrt_buffer_destroy(all[i]);
    free(values), free(starts), free(bits), free(keys32), free(keys64), free(fv), free(r1), free(r2);
    scanrt_stream_destroy(s);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    list_pairs();
    test_version_and_strings();
    test_desc_init();
    test_log_callback();
    scanrt_context *ctx = test_context_create();
    int32_t backend = -1;
    EXPECT_OK(scanrt_context_backend(ctx, &backend));
    const char *bname = backend == SCANRT_BACKEND_GPU ? "gpu" : "host";
    printf("test_ffi: scanrt %u, SCANRT_BACKEND_AUTO gave the %s backend (%s)\n", scanrt_version(), bname,
           scanrt_context_backend_reason(ctx));

    test_prepare(ctx);
    test_streams(ctx, backend);
    test_buffers(ctx, backend);
    test_scan_errors(ctx, backend);
    sweep(ctx, backend, bname);
    test_segmented_backward_deterministic(ctx, backend);
    test_threads(ctx);

    if (backend == SCANRT_BACKEND_GPU) {
        test_raw_on_gpu(ctx);
        /* The host backend's contract holds on GPU machines too. */
        scanrt_context *host = NULL;
        EXPECT_OK(scanrt_context_create(SCANRT_BACKEND_HOST, 0, &host));
        if (host) {
            test_streams(host, SCANRT_BACKEND_HOST);
            test_buffers(host, SCANRT_BACKEND_HOST);
            test_scan_errors(host, SCANRT_BACKEND_HOST);
            test_raw_on_host(host);
            sweep(host, SCANRT_BACKEND_HOST, "host");
            test_segmented_backward_deterministic(host, SCANRT_BACKEND_HOST);
            scanrt_context_destroy(host);
        }
    } else {
        test_raw_on_host(ctx);
    }
    scanrt_context_destroy(ctx);

    return check_summary("test_ffi", bname);
}
