/* test_operators: user-defined operators and the recipes through the C ABI.
 *
 * Runs on any machine (SCANRT_BACKEND_AUTO; without a GPU the host backend runs them,
 * with the host functions given here). Every result is compared with a sequential loop
 * written below; every error path checks the status, the message and that nothing was
 * written. On a GPU machine the device-pointer entry points, caller workspaces and a
 * host context run too; compile errors are checked wherever NVRTC loads.
 *
 * Prints "test_operators: N checks passed (backend: gpu|host)"; exits nonzero on failure.
 */
#define _POSIX_C_SOURCE 200809L

#include "scanrt.h"

#define CHECK_FILE "test_operators.c"
#include "check.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------ */
/* Helpers                                                                               */

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* Uniform in [lo, hi]. */
static double uniform(uint64_t *rng, double lo, double hi) {
    return lo + (hi - lo) * (double)(splitmix64(rng) >> 11) / (double)(1ull << 53);
}

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "test_operators: out of host memory\n");
        exit(2);
    }
    return p;
}

static const uint8_t SENTINEL = 0xA5;

static scanrt_buffer *upload(scanrt_context *ctx, scanrt_stream *s, int dtype, const void *data, uint64_t n) {
    scanrt_buffer *b = NULL;
    if (!EXPECT_OK(scanrt_buffer_create(ctx, dtype, n, &b))) return NULL;
    EXPECT_OK(scanrt_buffer_upload(b, s, data, n));
    return b;
}
/* A buffer of `bytes` sentinel bytes viewed as `n` elements of `dtype`. */
static scanrt_buffer *sentinel_buffer(scanrt_context *ctx, scanrt_stream *s, int dtype, uint64_t n, size_t bytes) {
    void *fill = xmalloc(bytes);
    memset(fill, SENTINEL, bytes);
    scanrt_buffer *b = upload(ctx, s, dtype, fill, n);
    free(fill);
    return b;
}
static void download(scanrt_buffer *b, scanrt_stream *s, void *out, uint64_t n) {
    EXPECT_OK(scanrt_buffer_download(b, s, out, n));
}
static int untouched(scanrt_buffer *b, scanrt_stream *s, uint64_t n, size_t bytes) {
    uint8_t *host = xmalloc(bytes);
    download(b, s, host, n);
    int same = 1;
    for (size_t i = 0; i < bytes; i++) same &= host[i] == SENTINEL;
    free(host);
    return same;
}

/* The traversal position of step k (forward or backward). */
static size_t position(size_t k, size_t n, int backward) { return backward ? n - 1 - k : k; }
/* Whether position p starts a segment: flags (forward: flag at p; backward: flag at p+1),
 * rows of `row` elements, or neither. */
static int restarts(size_t p, size_t n, int backward, const uint8_t *flags, uint64_t row) {
    if (row) return backward ? (p + 1) % row == 0 || p == n - 1 : p % row == 0;
    if (!flags) return 0;
    return backward ? p == n - 1 || flags[p + 1] : p == 0 || flags[p];
}

/* ------------------------------------------------------------------------------------ */
/* Recipes                                                                               */

typedef struct {
    scanrt_context *ctx;
    scanrt_stream *s;
    int backend;
} env_t;

/* Segments of a case: none, head flags (one byte per element) or rows. */
enum { SEG_NONE, SEG_FLAGS, SEG_ROWS };

typedef struct {
    size_t n;
    int backward, segments;
    uint64_t row;
    uint8_t *flags; /* SEG_FLAGS */
} shape_t;

static shape_t make_shape(uint64_t *rng, size_t n, int backward, int segments) {
    shape_t sh = {n, backward, segments, 0, NULL};
    if (segments == SEG_ROWS) sh.row = 1 + splitmix64(rng) % (n < 3000 ? n : 3000);
    if (segments == SEG_FLAGS) {
        sh.flags = xmalloc(n);
        for (size_t i = 0; i < n; i++) sh.flags[i] = splitmix64(rng) % 97 == 0;
    }
    return sh;
}

/* The scan descriptor of a shape; the flags go in `flag_buffer`. */
static scanrt_scan_desc shape_desc(env_t *e, const shape_t *sh, scanrt_buffer **flag_buffer) {
    scanrt_scan_desc d;
    EXPECT_OK(scanrt_scan_desc_init(&d));
    d.direction = sh->backward ? SCANRT_DIRECTION_BACKWARD : SCANRT_DIRECTION_FORWARD;
    *flag_buffer = NULL;
    if (sh->segments == SEG_ROWS) {
        d.segments = SCANRT_SEGMENTS_ROWS;
        d.row_length = sh->row;
    } else if (sh->segments == SEG_FLAGS) {
        d.segments = SCANRT_SEGMENTS_BYTE_FLAGS;
        *flag_buffer = upload(e->ctx, e->s, SCANRT_DTYPE_U8, sh->flags, sh->n);
        if (*flag_buffer) EXPECT_OK(scanrt_buffer_pointer(*flag_buffer, (void **)&d.segment_data));
    }
    return d;
}

static void recurrence_case(env_t *e, scanrt_operator *op, int dtype, uint64_t *rng, shape_t sh) {
    const size_t n = sh.n, size = dtype == SCANRT_DTYPE_F32 ? 4 : 8;
    double *a = xmalloc(n * 8), *b = xmalloc(n * 8), *want = xmalloc(n * 8), *got = xmalloc(n * 8);
    void *ah = xmalloc(n * size), *bh = xmalloc(n * size), *hh = xmalloc(n * size);
    for (size_t i = 0; i < n; i++) {
        a[i] = uniform(rng, -1, 1), b[i] = uniform(rng, -2, 2);
        if (dtype == SCANRT_DTYPE_F32) {
            ((float *)ah)[i] = (float)a[i], ((float *)bh)[i] = (float)b[i];
            a[i] = ((float *)ah)[i], b[i] = ((float *)bh)[i];
        } else {
            ((double *)ah)[i] = a[i], ((double *)bh)[i] = b[i];
        }
    }
    const double h0 = uniform(rng, -5, 5);
    double h = h0;
    for (size_t k = 0; k < n; k++) {
        size_t p = position(k, n, sh.backward);
        if (restarts(p, n, sh.backward, sh.flags, sh.row)) h = h0;
        want[p] = h = a[p] * h + b[p];
    }
    uint8_t init[16];
    EXPECT_OK(scanrt_linear_recurrence_init(dtype, h0, init, 2 * size));

    scanrt_buffer *flags, *in[2] = {upload(e->ctx, e->s, dtype, ah, n), upload(e->ctx, e->s, dtype, bh, n)};
    scanrt_buffer *out = sentinel_buffer(e->ctx, e->s, dtype, n, n * size);
    scanrt_scan_desc d = shape_desc(e, &sh, &flags);
    scanrt_scan_info info;
    EXPECT_OK(scanrt_scan_info_init(&info));
    char what[128];
    snprintf(what, sizeof what, "recurrence %s n=%zu backward=%d segments=%d", scanrt_dtype_string(dtype), n,
             sh.backward, sh.segments);
    const scanrt_buffer *inputs[2] = {in[0], in[1]}, *outputs[1] = {out};
    if (expect_status_at(__LINE__, what, scanrt_operator_scan(op, e->s, inputs, 2, outputs, 1, &d, init, &info),
                         SCANRT_STATUS_OK)) {
        CHECK(info.backend == e->backend, "%s: backend %d", what, info.backend);
        download(out, e->s, hh, n);
        const double tolerance = dtype == SCANRT_DTYPE_F32 ? 2e-3 : 1e-10;
        for (size_t p = 0; p < n; p++) {
            got[p] = dtype == SCANRT_DTYPE_F32 ? ((float *)hh)[p] : ((double *)hh)[p];
            if (!(fabs(got[p] - want[p]) <= tolerance * (1 + fabs(want[p])))) {
                CHECK(0, "%s: h[%zu] = %.9g, expected %.9g", what, p, got[p], want[p]);
                break;
            }
        }
    }
    scanrt_buffer_destroy(in[0]), scanrt_buffer_destroy(in[1]), scanrt_buffer_destroy(out);
    scanrt_buffer_destroy(flags);
    free(a), free(b), free(want), free(got), free(ah), free(bh), free(hh), free(sh.flags);
}

static void extreme_case(env_t *e, scanrt_operator *op, int max, uint64_t *rng, shape_t sh) {
    const size_t n = sh.n;
    uint32_t *x = xmalloc(n * 4), *value = xmalloc(n * 4), *index = xmalloc(n * 4);
    uint32_t *want_value = xmalloc(n * 4), *want_index = xmalloc(n * 4);
    for (size_t i = 0; i < n; i++) x[i] = (uint32_t)(splitmix64(rng) % 500); /* many ties */
    uint32_t best = 0, best_index = 0;
    for (size_t k = 0; k < n; k++) {
        size_t p = position(k, n, sh.backward);
        if (k == 0 || restarts(p, n, sh.backward, sh.flags, sh.row) || (max ? x[p] > best : x[p] < best))
            best = x[p], best_index = (uint32_t)p;
        want_value[p] = best, want_index[p] = best_index;
    }
    scanrt_buffer *flags, *in = upload(e->ctx, e->s, SCANRT_DTYPE_U32, x, n);
    scanrt_buffer *values = sentinel_buffer(e->ctx, e->s, SCANRT_DTYPE_U32, n, n * 4);
    scanrt_buffer *indices = sentinel_buffer(e->ctx, e->s, SCANRT_DTYPE_U32, n, n * 4);
    scanrt_scan_desc d = shape_desc(e, &sh, &flags);
    char what[128];
    snprintf(what, sizeof what, "cum%s n=%zu backward=%d segments=%d", max ? "max" : "min", n, sh.backward,
             sh.segments);
    const scanrt_buffer *inputs[1] = {in}, *outputs[2] = {values, indices};
    if (expect_status_at(__LINE__, what, scanrt_operator_scan(op, e->s, inputs, 1, outputs, 2, &d, NULL, NULL),
                         SCANRT_STATUS_OK)) {
        download(values, e->s, value, n);
        download(indices, e->s, index, n);
        for (size_t p = 0; p < n; p++) {
            if (value[p] != want_value[p] || index[p] != want_index[p]) {
                CHECK(0, "%s: element %zu = (%u, %u), expected (%u, %u)", what, p, value[p], index[p],
                      want_value[p], want_index[p]);
                break;
            }
        }
    }
    scanrt_buffer_destroy(in), scanrt_buffer_destroy(values), scanrt_buffer_destroy(indices);
    scanrt_buffer_destroy(flags);
    free(x), free(value), free(index), free(want_value), free(want_index), free(sh.flags);
}

/* logcumsumexp f32 against a sequential log-add in double; values near FLT_MAX in half
 * of the cases (a naive sum of exponentials overflows there). */
static void logcumsumexp_case(env_t *e, scanrt_operator *op, uint64_t *rng, shape_t sh, int huge) {
    const size_t n = sh.n;
    float *x = xmalloc(n * 4), *y = xmalloc(n * 4);
    double *want = xmalloc(n * 8);
    for (size_t i = 0; i < n; i++) x[i] = (float)(huge ? FLT_MAX / 2 * uniform(rng, 0.5, 1) : uniform(rng, -20, 20));
    double m = -INFINITY, sum = 0; /* the running log-sum is m + log(sum) */
    for (size_t k = 0; k < n; k++) {
        size_t p = position(k, n, sh.backward);
        if (k == 0 || restarts(p, n, sh.backward, sh.flags, sh.row)) m = -INFINITY, sum = 0;
        double v = x[p];
        if (v > m) sum = sum * exp(m - v) + 1, m = v;
        else sum += exp(v - m);
        want[p] = m + log(sum);
    }
    scanrt_buffer *flags, *in = upload(e->ctx, e->s, SCANRT_DTYPE_F32, x, n);
    scanrt_buffer *out = sentinel_buffer(e->ctx, e->s, SCANRT_DTYPE_F32, n, n * 4);
    scanrt_scan_desc d = shape_desc(e, &sh, &flags);
    char what[128];
    snprintf(what, sizeof what, "logcumsumexp n=%zu backward=%d segments=%d huge=%d", n, sh.backward, sh.segments,
             huge);
    const scanrt_buffer *inputs[1] = {in}, *outputs[1] = {out};
    if (expect_status_at(__LINE__, what, scanrt_operator_scan(op, e->s, inputs, 1, outputs, 1, &d, NULL, NULL),
                         SCANRT_STATUS_OK)) {
        download(out, e->s, y, n);
        for (size_t p = 0; p < n; p++) {
            if (!isfinite(y[p]) || !(fabs(y[p] - want[p]) <= 1e-5 * fabs(want[p]) + 1e-4)) {
                CHECK(0, "%s: y[%zu] = %.9g, expected %.9g", what, p, y[p], want[p]);
                break;
            }
        }
    }
    scanrt_buffer_destroy(in), scanrt_buffer_destroy(out), scanrt_buffer_destroy(flags);
    free(x), free(y), free(want), free(sh.flags);
}

static const size_t sizes[] = {1, 2, 31, 1000, 4096, 4097, 70001, (1u << 20) + 3};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };

static void test_recipes(env_t *e) {
    g_phase = "recipes";
    uint64_t rng = 21;
    scanrt_operator *op = NULL;
    for (int dt = SCANRT_DTYPE_F32; dt <= SCANRT_DTYPE_F64; dt++) {
        if (!EXPECT_OK(scanrt_operator_create_linear_recurrence(e->ctx, dt, &op))) continue;
        size_t state = 0;
        EXPECT_OK(scanrt_operator_state_size(op, &state));
        CHECK(state == (dt == SCANRT_DTYPE_F32 ? 8u : 16u), "recurrence state size %zu", state);
        for (size_t i = 0; i < NSIZES; i++)
            for (int backward = 0; backward < 2; backward++)
                recurrence_case(e, op, dt, &rng, make_shape(&rng, sizes[i], backward, (int)(i + backward) % 3));
        scanrt_operator_destroy(op);
    }
    for (int max = 0; max < 2; max++) {
        if (!EXPECT_OK(scanrt_operator_create_cumulative_extreme(e->ctx, SCANRT_DTYPE_U32, max, &op))) continue;
        for (size_t i = 0; i < NSIZES; i++)
            for (int backward = 0; backward < 2; backward++)
                extreme_case(e, op, max, &rng, make_shape(&rng, sizes[i], backward, (int)(i + max) % 3));
        scanrt_operator_destroy(op);
    }
    if (EXPECT_OK(scanrt_operator_create_logcumsumexp(e->ctx, SCANRT_DTYPE_F32, &op))) {
        for (size_t i = 0; i < NSIZES; i++)
            for (int backward = 0; backward < 2; backward++)
                logcumsumexp_case(e, op, &rng, make_shape(&rng, sizes[i], backward, (int)i % 3), (int)(i + backward) % 2);
        scanrt_operator_destroy(op);
    }
}

/* ------------------------------------------------------------------------------------ */
/* User operators written here                                                           */

/* 2x2 matrices of u32 mod 2^32, multiplied in sequence order: not commutative. */
typedef struct {
    uint32_t m[4];
} mat2;

static const char *MAT2_SOURCE = "struct Mat2 { uint32_t m[4]; };\n"
                                 "__device__ Mat2 mat_mul(Mat2 x, Mat2 y) {\n"
                                 "    Mat2 r;\n"
                                 "    r.m[0] = x.m[0] * y.m[0] + x.m[1] * y.m[2];\n"
                                 "    r.m[1] = x.m[0] * y.m[1] + x.m[1] * y.m[3];\n"
                                 "    r.m[2] = x.m[2] * y.m[0] + x.m[3] * y.m[2];\n"
                                 "    r.m[3] = x.m[2] * y.m[1] + x.m[3] * y.m[3];\n"
                                 "    return r;\n"
                                 "}\n";

static mat2 mat_mul(mat2 x, mat2 y) {
    mat2 r = {{x.m[0] * y.m[0] + x.m[1] * y.m[2], x.m[0] * y.m[1] + x.m[1] * y.m[3],
               x.m[2] * y.m[0] + x.m[3] * y.m[2], x.m[2] * y.m[1] + x.m[3] * y.m[3]}};
    return r;
}

/* Host calls counted through user_data. */
static atomic_long g_host_calls;

static void host_mat_mul(const void *a, const void *b, void *out, void *user) {
    atomic_fetch_add((atomic_long *)user, 1);
    mat2 x, y;
    memcpy(&x, a, sizeof x), memcpy(&y, b, sizeof y);
    mat2 r = mat_mul(x, y);
    memcpy(out, &r, sizeof r);
}

static scanrt_operator_desc mat2_desc(void) {
    static const mat2 identity = {{1, 0, 0, 1}};
    scanrt_operator_desc d;
    EXPECT_OK(scanrt_operator_desc_init(&d));
    d.name = "mat2";
    d.source = MAT2_SOURCE;
    d.state_type = "Mat2";
    d.state_size = sizeof(mat2);
    d.state_align = _Alignof(mat2);
    d.combine = "mat_mul";
    d.identity = &identity;
    d.host_combine = host_mat_mul;
    d.host_user_data = (void *)&g_host_calls;
    return d;
}

/* Running mean: load builds {x, 1} from f32 x, store writes the mean (f32) and count (u32). */
static const char *MEAN_SOURCE = "struct Mean { float sum; uint32_t count; };\n"
                                 "__device__ Mean add(Mean a, Mean b) { return Mean{a.sum + b.sum, a.count + b.count}; }\n"
                                 "__device__ Mean one(int64_t, float x) { return Mean{x, 1}; }\n"
                                 "__device__ void put(const Mean& m, float& mean, uint32_t& count) {\n"
                                 "    mean = m.sum / m.count; count = m.count;\n"
                                 "}\n";
typedef struct {
    float sum;
    uint32_t count;
} mean_t;
static void host_add(const void *a, const void *b, void *out, void *user) {
    (void)user;
    mean_t x, y;
    memcpy(&x, a, sizeof x), memcpy(&y, b, sizeof y);
    x.sum += y.sum, x.count += y.count;
    memcpy(out, &x, sizeof x);
}
static void host_one(uint64_t i, const void *const *inputs, void *state, void *user) {
    (void)i, (void)user;
    mean_t m = {*(const float *)inputs[0], 1};
    memcpy(state, &m, sizeof m);
}
static void host_put(const void *state, void *const *outputs, void *user) {
    (void)user;
    mean_t m;
    memcpy(&m, state, sizeof m);
    *(float *)outputs[0] = m.sum / (float)m.count;
    *(uint32_t *)outputs[1] = m.count;
}
static const int32_t MEAN_INPUTS[1] = {SCANRT_DTYPE_F32}, MEAN_OUTPUTS[2] = {SCANRT_DTYPE_F32, SCANRT_DTYPE_U32};

static scanrt_operator_desc mean_desc(void) {
    static const mean_t identity = {0, 0};
    scanrt_operator_desc d;
    EXPECT_OK(scanrt_operator_desc_init(&d));
    d.name = "running_mean";
    d.source = MEAN_SOURCE;
    d.state_type = "Mean";
    d.state_size = sizeof(mean_t);
    d.state_align = _Alignof(mean_t);
    d.combine = "add";
    d.identity = &identity;
    d.load = "one";
    d.input_dtypes = MEAN_INPUTS;
    d.num_inputs = 1;
    d.store = "put";
    d.output_dtypes = MEAN_OUTPUTS;
    d.num_outputs = 2;
    d.host_combine = host_add;
    d.host_load = host_one;
    d.host_store = host_put;
    return d;
}

static void test_user_operators(env_t *e) {
    g_phase = "user operators";
    uint64_t rng = 7;
    scanrt_operator *op = NULL;
    scanrt_operator_desc desc = mat2_desc();
    if (EXPECT_OK(scanrt_operator_create(e->ctx, &desc, &op))) {
        const size_t counts[] = {1, 5000, 300001};
        for (int c = 0; c < 3; c++)
            for (int variant = 0; variant < 4; variant++) {
                size_t n = counts[c];
                int backward = variant & 1, exclusive = variant >> 1;
                mat2 *x = xmalloc(n * sizeof(mat2)), *want = xmalloc(n * sizeof(mat2)), *got = xmalloc(n * sizeof(mat2));
                for (size_t i = 0; i < n; i++)
                    for (int k = 0; k < 4; k++) x[i].m[k] = (uint32_t)splitmix64(&rng);
                const mat2 start = {{3, 1, 4, 1}};
                mat2 run = start;
                for (size_t k = 0; k < n; k++) {
                    size_t p = position(k, n, backward);
                    mat2 next = mat_mul(run, x[p]);
                    want[p] = exclusive ? run : next;
                    run = next;
                }
                scanrt_buffer *buf = upload(e->ctx, e->s, SCANRT_DTYPE_U8, x, n * sizeof(mat2));
                scanrt_scan_desc d;
                EXPECT_OK(scanrt_scan_desc_init(&d));
                d.inclusive = !exclusive;
                d.direction = backward ? SCANRT_DIRECTION_BACKWARD : SCANRT_DIRECTION_FORWARD;
                d.deterministic = c == 1;
                const scanrt_buffer *io[1] = {buf};
                atomic_store(&g_host_calls, 0);
                if (EXPECT_OK(scanrt_operator_scan(op, e->s, io, 1, io, 1, &d, &start, NULL))) { /* in place */
                    download(buf, e->s, got, n * sizeof(mat2));
                    CHECK(memcmp(got, want, n * sizeof(mat2)) == 0, "mat2 n=%zu backward=%d exclusive=%d differs", n,
                          backward, exclusive);
                    CHECK((e->backend == SCANRT_BACKEND_HOST) == (atomic_load(&g_host_calls) > 0),
                          "mat2: %ld host calls on backend %d", atomic_load(&g_host_calls), e->backend);
                }
                scanrt_buffer_destroy(buf);
                free(x), free(want), free(got);
            }
        scanrt_operator_destroy(op);
    }

    desc = mean_desc();
    if (EXPECT_OK(scanrt_operator_create(e->ctx, &desc, &op))) {
        size_t n = 100003;
        float *x = xmalloc(n * 4), *mean = xmalloc(n * 4);
        uint32_t *count = xmalloc(n * 4);
        for (size_t i = 0; i < n; i++) x[i] = (float)(splitmix64(&rng) % 16); /* exact sums */
        scanrt_buffer *in = upload(e->ctx, e->s, SCANRT_DTYPE_F32, x, n);
        scanrt_buffer *means = sentinel_buffer(e->ctx, e->s, SCANRT_DTYPE_F32, n, n * 4);
        scanrt_buffer *counts = sentinel_buffer(e->ctx, e->s, SCANRT_DTYPE_U32, n, n * 4);
        scanrt_scan_desc d;
        EXPECT_OK(scanrt_scan_desc_init(&d));
        const scanrt_buffer *inputs[1] = {in}, *outputs[2] = {means, counts};
        if (EXPECT_OK(scanrt_operator_scan(op, e->s, inputs, 1, outputs, 2, &d, NULL, NULL))) {
            download(means, e->s, mean, n), download(counts, e->s, count, n);
            double sum = 0;
            for (size_t i = 0; i < n; i++) {
                sum += x[i];
                if (count[i] != i + 1 || mean[i] != (float)(sum / (double)(i + 1))) {
                    CHECK(0, "running mean %zu = (%g, %u), expected (%g, %zu)", i, mean[i], count[i], sum / (i + 1),
                          i + 1);
                    break;
                }
            }
        }
        /* Wrong arrays: a count, a type, nothing written. */
        const scanrt_buffer *swapped[2] = {counts, means};
        EXPECT(scanrt_operator_scan(op, e->s, inputs, 1, outputs, 1, &d, NULL, NULL), SCANRT_STATUS_INVALID_ARGUMENT);
        EXPECT(scanrt_operator_scan(op, e->s, inputs, 1, swapped, 2, &d, NULL, NULL), SCANRT_STATUS_INVALID_ARGUMENT);
        scanrt_buffer_destroy(in), scanrt_buffer_destroy(means), scanrt_buffer_destroy(counts);
        free(x), free(mean), free(count);
        scanrt_operator_destroy(op);
    }
}

/* ------------------------------------------------------------------------------------ */
/* Errors                                                                                */

static void test_errors(env_t *e) {
    g_phase = "operator errors";
    scanrt_operator *op = (scanrt_operator *)&op;
    EXPECT(scanrt_operator_create(e->ctx, NULL, &op), SCANRT_STATUS_NULL_ARGUMENT);
    CHECK(op == NULL, "*out is not NULL after a failed create");
    scanrt_operator_desc d;
    memset(&d, 0, sizeof d);
    EXPECT(scanrt_operator_create(e->ctx, &d, &op), SCANRT_STATUS_INVALID_ARGUMENT); /* struct_size 0 */
    d = mat2_desc();
    d.source = NULL;
    EXPECT(scanrt_operator_create(e->ctx, &d, &op), SCANRT_STATUS_NULL_ARGUMENT);
    d = mat2_desc();
    d.identity = NULL;
    EXPECT(scanrt_operator_create(e->ctx, &d, &op), SCANRT_STATUS_NULL_ARGUMENT);
    d = mat2_desc();
    d.state_size = 6;
    EXPECT(scanrt_operator_create(e->ctx, &d, &op), SCANRT_STATUS_INVALID_ARGUMENT);
    d = mat2_desc();
    d.combine = "mat mul";
    EXPECT(scanrt_operator_create(e->ctx, &d, &op), SCANRT_STATUS_INVALID_ARGUMENT);
    d = mat2_desc();
    d.host_load = host_one; /* without a load */
    EXPECT(scanrt_operator_create(e->ctx, &d, &op), SCANRT_STATUS_INVALID_ARGUMENT);
    d = mean_desc();
    d.host_store = NULL; /* a store without its host function */
    EXPECT(scanrt_operator_create(e->ctx, &d, &op), SCANRT_STATUS_INVALID_ARGUMENT);
    d = mean_desc();
    d.num_inputs = 5;
    EXPECT(scanrt_operator_create(e->ctx, &d, &op), SCANRT_STATUS_INVALID_ARGUMENT);
    int32_t bad_dtype = 99;
    d.num_inputs = 1;
    d.input_dtypes = &bad_dtype;
    EXPECT(scanrt_operator_create(e->ctx, &d, &op), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_operator_create_linear_recurrence(e->ctx, SCANRT_DTYPE_U32, &op), SCANRT_STATUS_UNSUPPORTED_COMBINATION);
    EXPECT(scanrt_operator_create_cumulative_extreme(e->ctx, SCANRT_DTYPE_U8, 1, &op),
           SCANRT_STATUS_UNSUPPORTED_COMBINATION);
    EXPECT(scanrt_operator_create_logcumsumexp(e->ctx, 42, &op), SCANRT_STATUS_INVALID_ARGUMENT);
    uint8_t init[16];
    EXPECT(scanrt_linear_recurrence_init(SCANRT_DTYPE_F32, 1.0, init, 16), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_linear_recurrence_init(SCANRT_DTYPE_F32, 1.0, NULL, 8), SCANRT_STATUS_NULL_ARGUMENT);
    CHECK(op == NULL, "*out is not NULL after failed creates");

    /* Scan arguments: nothing is written on error. */
    d = mat2_desc();
    if (!EXPECT_OK(scanrt_operator_create(e->ctx, &d, &op))) return;
    const size_t n = 1000, bytes = n * sizeof(mat2);
    scanrt_buffer *in = sentinel_buffer(e->ctx, e->s, SCANRT_DTYPE_U8, bytes, bytes);
    scanrt_buffer *out = sentinel_buffer(e->ctx, e->s, SCANRT_DTYPE_U8, bytes, bytes);
    scanrt_buffer *f32 = sentinel_buffer(e->ctx, e->s, SCANRT_DTYPE_F32, n, n * 4);
    const scanrt_buffer *inputs[1] = {in}, *outputs[1] = {out}, *wrong[1] = {f32};
    scanrt_scan_desc sd;
    EXPECT_OK(scanrt_scan_desc_init(&sd));
    sd.has_init = 1;
    EXPECT(scanrt_operator_scan(op, e->s, inputs, 1, outputs, 1, &sd, NULL, NULL), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT_OK(scanrt_scan_desc_init(&sd));
    EXPECT(scanrt_operator_scan(op, e->s, inputs, 1, wrong, 1, &sd, NULL, NULL), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_operator_scan(op, e->s, NULL, 1, outputs, 1, &sd, NULL, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    const scanrt_buffer *two_inputs[2] = {in, in};
    EXPECT(scanrt_operator_scan(op, e->s, two_inputs, 2, outputs, 1, &sd, NULL, NULL), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_operator_scan(NULL, e->s, inputs, 1, outputs, 1, &sd, NULL, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    sd.segments = SCANRT_SEGMENTS_BYTE_FLAGS; /* no segment data */
    EXPECT(scanrt_operator_scan(op, e->s, inputs, 1, outputs, 1, &sd, NULL, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    sd.segments = 77;
    EXPECT(scanrt_operator_scan(op, e->s, inputs, 1, outputs, 1, &sd, NULL, NULL), SCANRT_STATUS_INVALID_ARGUMENT);
    CHECK(untouched(out, e->s, bytes, bytes), "a failed operator scan wrote its output");
    scanrt_buffer_destroy(in), scanrt_buffer_destroy(out), scanrt_buffer_destroy(f32);
    scanrt_operator_destroy(op);

    /* No host functions: the host backend refuses with a status. */
    if (e->backend == SCANRT_BACKEND_HOST) {
        d = mat2_desc();
        d.host_combine = NULL;
        if (EXPECT_OK(scanrt_operator_create(e->ctx, &d, &op))) {
            scanrt_buffer *b = sentinel_buffer(e->ctx, e->s, SCANRT_DTYPE_U8, 64, 64);
            const scanrt_buffer *io[1] = {b};
            EXPECT_OK(scanrt_scan_desc_init(&sd));
            EXPECT(scanrt_operator_scan(op, e->s, io, 1, io, 1, &sd, NULL, NULL), SCANRT_STATUS_UNSUPPORTED_COMBINATION);
            CHECK(untouched(b, e->s, 64, 64), "a refused operator scan wrote its output");
            scanrt_buffer_destroy(b);
            scanrt_operator_destroy(op);
        }
    }
}

/* Compile errors come back with the log citing the operator's lines. Needs NVRTC (not a
 * GPU): skipped when the good source cannot be compiled either. */
static void test_compile_errors(void) {
    g_phase = "compile errors";
    scanrt_operator_desc d = mean_desc();
    size_t bytes = 0;
    if (scanrt_operator_compile(&d, 90, &bytes) != SCANRT_STATUS_OK) {
        printf("test_operators: compile errors skipped (NVRTC: %s)\n", scanrt_last_error_message());
        return;
    }
    CHECK(bytes > 0, "scanrt_operator_compile wrote %zu bytes", bytes);
    d.name = "broken_mean";
    d.source = "struct Mean { float sum; uint32_t count; };\n"
               "__device__ Mean add(Mean a, Mean b) { return Mean{a.sum + b.sum, a.count + b.count}; }\n"
               "__device__ Mean one(int64_t, float x) { return Mean{x, 1} }\n" /* line 3: missing ';' */
               "__device__ void put(const Mean& m, float& mean, uint32_t& count) { mean = m.sum; count = m.count; }\n";
    if (EXPECT(scanrt_operator_compile(&d, 90, NULL), SCANRT_STATUS_COMPILE_ERROR))
        CHECK(strstr(scanrt_last_error_message(), "broken_mean(3)") != NULL, "the log does not cite broken_mean(3): %s",
              scanrt_last_error_message());
    d = mean_desc();
    d.state_size = 16; /* the source's Mean has 8 bytes */
    d.state_align = 4;
    static const uint8_t zeros[16] = {0};
    d.identity = zeros;
    if (EXPECT(scanrt_operator_compile(&d, 90, NULL), SCANRT_STATUS_COMPILE_ERROR))
        CHECK(strstr(scanrt_last_error_message(), "sizeof(Mean)") != NULL, "the log does not name sizeof(Mean): %s",
              scanrt_last_error_message());
}

/* ------------------------------------------------------------------------------------ */
/* GPU only: device pointers, caller workspaces, threads                                 */

static void test_device_pointers(scanrt_context *ctx) {
    g_phase = "device pointers";
    /* Everything runs on the legacy default stream (NULL), which `e.s` wraps. */
    env_t env = {ctx, NULL, SCANRT_BACKEND_GPU}, *e = &env;
    if (!EXPECT_OK(scanrt_stream_wrap(ctx, NULL, &env.s))) return;
    scanrt_operator *op = NULL;
    if (!EXPECT_OK(scanrt_operator_create_linear_recurrence(e->ctx, SCANRT_DTYPE_F32, &op))) return;
    const size_t n = (1u << 22) + 17;
    float *a = xmalloc(n * 4), *b = xmalloc(n * 4), *h = xmalloc(n * 4);
    uint64_t rng = 3;
    for (size_t i = 0; i < n; i++) a[i] = (float)uniform(&rng, -1, 1), b[i] = (float)uniform(&rng, -1, 1);
    scanrt_buffer *ab = upload(e->ctx, e->s, SCANRT_DTYPE_F32, a, n), *bb = upload(e->ctx, e->s, SCANRT_DTYPE_F32, b, n);
    scanrt_buffer *hb = sentinel_buffer(e->ctx, e->s, SCANRT_DTYPE_F32, n, n * 4);
    void *pa = NULL, *pb = NULL, *ph = NULL, *stream = NULL;
    EXPECT_OK(scanrt_buffer_pointer(ab, &pa)), EXPECT_OK(scanrt_buffer_pointer(bb, &pb));
    EXPECT_OK(scanrt_buffer_pointer(hb, &ph));
    const void *inputs[2] = {pa, pb};
    void *outputs[1] = {ph};
    scanrt_scan_desc d;
    EXPECT_OK(scanrt_scan_desc_init(&d));
    uint8_t init[8];
    EXPECT_OK(scanrt_linear_recurrence_init(SCANRT_DTYPE_F32, 0.5, init, 8));
    /* A host pointer is refused before anything is written. */
    const void *host_inputs[2] = {a, pb};
    EXPECT(scanrt_operator_scan_device(op, stream, host_inputs, 2, outputs, 1, n, &d, init, NULL),
           SCANRT_STATUS_NOT_DEVICE_MEMORY);
    EXPECT(scanrt_operator_scan_device(op, stream, inputs, 2, outputs, 1, n + 1, &d, init, NULL),
           SCANRT_STATUS_BUFFER_TOO_SMALL);
    CHECK(untouched(hb, e->s, n, n * 4), "a refused device scan wrote its output");

    size_t ws_bytes = 0;
    EXPECT_OK(scanrt_operator_workspace_size(op, n, &d, &ws_bytes));
    CHECK(ws_bytes > 0, "workspace size 0 for %zu elements", n);
    scanrt_buffer *ws = NULL;
    void *pws = NULL;
    EXPECT_OK(scanrt_buffer_create(e->ctx, SCANRT_DTYPE_U8, ws_bytes, &ws));
    EXPECT_OK(scanrt_buffer_pointer(ws, &pws));
    EXPECT_OK(scanrt_workspace_init(e->ctx, stream, pws, ws_bytes));
    for (int with_workspace = 0; with_workspace < 2; with_workspace++) {
        scanrt_status st = with_workspace ? scanrt_operator_scan_device_with_workspace(op, stream, inputs, 2, outputs, 1, n,
                                                                                       &d, init, pws, ws_bytes, NULL)
                                          : scanrt_operator_scan_device(op, stream, inputs, 2, outputs, 1, n, &d, init, NULL);
        if (!expect_status_at(__LINE__, with_workspace ? "with workspace" : "pooled workspace", st, SCANRT_STATUS_OK))
            continue;
        download(hb, e->s, h, n);
        double run = 0.5;
        for (size_t i = 0; i < n; i++) {
            run = (double)a[i] * run + b[i];
            if (!(fabs(h[i] - run) <= 2e-3 * (1 + fabs(run)))) {
                CHECK(0, "device recurrence (workspace=%d): h[%zu] = %g, expected %g", with_workspace, i, h[i], run);
                break;
            }
        }
    }
    EXPECT(scanrt_operator_scan_device_with_workspace(op, stream, inputs, 2, outputs, 1, n, &d, init, pws, 64, NULL),
           SCANRT_STATUS_BUFFER_TOO_SMALL);
    scanrt_buffer_destroy(ws), scanrt_buffer_destroy(ab), scanrt_buffer_destroy(bb), scanrt_buffer_destroy(hb);
    free(a), free(b), free(h);
    scanrt_operator_destroy(op);
    scanrt_stream_destroy(env.s);
}

typedef struct {
    scanrt_context *ctx;
    scanrt_operator *op;
    int backend;
    uint64_t seed;
} thread_arg;

/* Each thread scans with the shared operator on its own stream. */
static void *thread_main(void *p) {
    thread_arg *t = p;
    env_t e = {t->ctx, NULL, t->backend};
    if (!EXPECT_OK(scanrt_stream_create(t->ctx, &e.s))) return NULL;
    uint64_t rng = t->seed;
    for (int i = 0; i < 12; i++)
        extreme_case(&e, t->op, 1, &rng, make_shape(&rng, 1 + splitmix64(&rng) % 200000, i & 1, i % 3));
    scanrt_stream_destroy(e.s);
    return NULL;
}

static void test_threads(env_t *e) {
    g_phase = "threads";
    scanrt_operator *op = NULL;
    if (!EXPECT_OK(scanrt_operator_create_cumulative_extreme(e->ctx, SCANRT_DTYPE_U32, 1, &op))) return;
    enum { T = 4 };
    pthread_t threads[T];
    thread_arg args[T];
    for (int i = 0; i < T; i++) {
        args[i] = (thread_arg){e->ctx, op, e->backend, 100 + (uint64_t)i};
        pthread_create(&threads[i], NULL, thread_main, &args[i]);
    }
    for (int i = 0; i < T; i++) pthread_join(threads[i], NULL);
    scanrt_operator_destroy(op);
}

/* ------------------------------------------------------------------------------------ */
/* Reported failures, as a new user met them                                             */

/* States of K u32 lanes (40 to 64 bytes), each lane a running sum of x + lane, loaded
 * from one u32 array and stored to two (the first and last lanes); forward, inclusive,
 * automatic. These failed from about 2^20 elements with a workspace fault reported by
 * the next call; the next call must now succeed too. */
#define WIDE_SOURCE_FORMAT                                                                        \
    "struct Wide { uint32_t v[%d]; };\n"                                                         \
    "__device__ Wide add(Wide a, Wide b) { for (int j = 0; j < %d; ++j) a.v[j] += b.v[j]; return a; }\n" \
    "__device__ Wide lanes(int64_t, uint32_t x) { Wide w; for (int j = 0; j < %d; ++j) w.v[j] = x + j; return w; }\n" \
    "__device__ void ends(const Wide& w, uint32_t& first, uint32_t& last) { first = w.v[0]; last = w.v[%d - 1]; }\n"
static void host_wide_add(const void *a, const void *b, void *out, void *user) {
    const int k = *(const int *)user;
    for (int j = 0; j < k; j++) ((uint32_t *)out)[j] = ((const uint32_t *)a)[j] + ((const uint32_t *)b)[j];
}
static void host_wide_lanes(uint64_t i, const void *const *inputs, void *state, void *user) {
    (void)i;
    const int k = *(const int *)user;
    for (int j = 0; j < k; j++) ((uint32_t *)state)[j] = *(const uint32_t *)inputs[0] + (uint32_t)j;
}
static void host_wide_ends(const void *state, void *const *outputs, void *user) {
    const int k = *(const int *)user;
    *(uint32_t *)outputs[0] = ((const uint32_t *)state)[0];
    *(uint32_t *)outputs[1] = ((const uint32_t *)state)[k - 1];
}

static void test_wide_states(env_t *e) {
    g_phase = "wide states";
    static const int lanes[] = {10, 12, 14, 16};
    static const uint32_t zeros[16] = {0};
    static const int32_t in_types[1] = {SCANRT_DTYPE_U32}, out_types[2] = {SCANRT_DTYPE_U32, SCANRT_DTYPE_U32};
    const size_t counts[] = {(1u << 20) - 1, 1u << 20, (1u << 22) + 3};
    uint64_t rng = 40;
    for (size_t l = 0; l < sizeof lanes / sizeof lanes[0]; l++) {
        const int k = lanes[l];
        char source[1024];
        snprintf(source, sizeof source, WIDE_SOURCE_FORMAT, k, k, k, k);
        scanrt_operator_desc d;
        EXPECT_OK(scanrt_operator_desc_init(&d));
        d.name = "wide", d.source = source, d.state_type = "Wide";
        d.state_size = 4 * (size_t)k, d.state_align = 4, d.combine = "add", d.identity = zeros;
        d.load = "lanes", d.input_dtypes = in_types, d.num_inputs = 1;
        d.store = "ends", d.output_dtypes = out_types, d.num_outputs = 2;
        d.host_combine = host_wide_add, d.host_load = host_wide_lanes, d.host_store = host_wide_ends;
        d.host_user_data = (void *)&lanes[l];
        scanrt_operator *op = NULL;
        if (!EXPECT_OK(scanrt_operator_create(e->ctx, &d, &op))) continue;
        /* The host backend takes the smallest length only (its host functions are slow). */
        for (size_t c = 0; c < (e->backend == SCANRT_BACKEND_GPU ? 3u : 1u); c++) {
            const size_t n = counts[c];
            uint32_t *x = xmalloc(n * 4), *first = xmalloc(n * 4), *last = xmalloc(n * 4);
            for (size_t i = 0; i < n; i++) x[i] = (uint32_t)splitmix64(&rng);
            scanrt_buffer *in = upload(e->ctx, e->s, SCANRT_DTYPE_U32, x, n);
            scanrt_buffer *out[2] = {sentinel_buffer(e->ctx, e->s, SCANRT_DTYPE_U32, n, n * 4),
                                     sentinel_buffer(e->ctx, e->s, SCANRT_DTYPE_U32, n, n * 4)};
            scanrt_scan_desc desc;
            EXPECT_OK(scanrt_scan_desc_init(&desc));
            char what[96];
            snprintf(what, sizeof what, "%d-byte state, n = %zu", 4 * k, n);
            const scanrt_buffer *inputs[1] = {in}, *outputs[2] = {out[0], out[1]};
            if (expect_status_at(__LINE__, what, scanrt_operator_scan(op, e->s, inputs, 1, outputs, 2, &desc, NULL, NULL),
                                 SCANRT_STATUS_OK)) {
                download(out[0], e->s, first, n);
                download(out[1], e->s, last, n);
                uint32_t sum = 0;
                for (size_t i = 0; i < n; i++) {
                    sum += x[i];
                    if (first[i] != sum || last[i] != sum + (uint32_t)((i + 1) * (size_t)(k - 1))) {
                        CHECK(0, "%s: element %zu = (%u, %u), expected (%u, %u)", what, i, first[i], last[i], sum,
                              sum + (uint32_t)((i + 1) * (size_t)(k - 1)));
                        break;
                    }
                }
                /* The next call on the stream, a built-in scan, sees no fault of this one. */
                scanrt_scan_desc sum_desc;
                EXPECT_OK(scanrt_scan_desc_init(&sum_desc));
                expect_status_at(__LINE__, what, scanrt_scan(e->ctx, e->s, in, out[0], &sum_desc, NULL),
                                 SCANRT_STATUS_OK);
            }
            scanrt_buffer_destroy(in), scanrt_buffer_destroy(out[0]), scanrt_buffer_destroy(out[1]);
            free(x), free(first), free(last);
        }
        scanrt_operator_destroy(op);
    }
}

/* Cumulative max and min of f32 with byte-flag segments and NaN inputs (one in 50, a
 * segment start in 97), every algorithm: NaN propagates from the first NaN of a segment
 * on, with that NaN's index; ties keep the first index. */
static void test_extreme_with_nan(env_t *e) {
    g_phase = "cumulative extreme with NaN";
    static const int32_t algorithms[] = {SCANRT_ALGORITHM_AUTO, SCANRT_ALGORITHM_MATRIX,
                                         SCANRT_ALGORITHM_DETERMINISTIC_SINGLE_PASS};
    const size_t counts[] = {4095, 70001, 1u << 20};
    uint64_t rng = 50;
    for (int max = 0; max < 2; max++) {
        scanrt_operator *op = NULL;
        if (!EXPECT_OK(scanrt_operator_create_cumulative_extreme(e->ctx, SCANRT_DTYPE_F32, max, &op))) continue;
        for (size_t c = 0; c < 3; c++)
            for (int a = 0; a < 3; a++)
                for (int backward = 0; backward < 2; backward++) {
                    const size_t n = counts[c];
                    float *x = xmalloc(n * 4), *value = xmalloc(n * 4), *want_value = xmalloc(n * 4);
                    uint32_t *index = xmalloc(n * 4), *want_index = xmalloc(n * 4);
                    for (size_t i = 0; i < n; i++)
                        x[i] = splitmix64(&rng) % 50 == 0 ? NAN : (float)(splitmix64(&rng) % 200) - 100.0f;
                    shape_t sh = make_shape(&rng, n, backward, SEG_FLAGS);
                    float best = 0;
                    uint32_t best_index = 0;
                    for (size_t k = 0; k < n; k++) {
                        const size_t p = position(k, n, backward);
                        const int restart = k == 0 || restarts(p, n, backward, sh.flags, sh.row);
                        const int better = !isnan(best) && (isnan(x[p]) || (max ? x[p] > best : x[p] < best));
                        if (restart || better) best = x[p], best_index = (uint32_t)p;
                        want_value[p] = best, want_index[p] = best_index;
                    }
                    scanrt_buffer *flags, *in = upload(e->ctx, e->s, SCANRT_DTYPE_F32, x, n);
                    scanrt_buffer *values = sentinel_buffer(e->ctx, e->s, SCANRT_DTYPE_F32, n, n * 4);
                    scanrt_buffer *indices = sentinel_buffer(e->ctx, e->s, SCANRT_DTYPE_U32, n, n * 4);
                    scanrt_scan_desc d = shape_desc(e, &sh, &flags);
                    d.algorithm = algorithms[a];
                    char what[128];
                    snprintf(what, sizeof what, "f32 cum%s with NaN, n=%zu algorithm=%d backward=%d",
                             max ? "max" : "min", n, algorithms[a], backward);
                    const scanrt_buffer *inputs[1] = {in}, *outputs[2] = {values, indices};
                    if (expect_status_at(__LINE__, what,
                                         scanrt_operator_scan(op, e->s, inputs, 1, outputs, 2, &d, NULL, NULL),
                                         SCANRT_STATUS_OK)) {
                        download(values, e->s, value, n);
                        download(indices, e->s, index, n);
                        size_t wrong = 0, first = n;
                        for (size_t p = 0; p < n; p++) {
                            const int same = isnan(want_value[p]) ? isnan(value[p]) : value[p] == want_value[p];
                            if (!same || index[p] != want_index[p]) {
                                if (!wrong++) first = p;
                            }
                        }
                        CHECK(wrong == 0, "%s: %zu wrong pairs, first at %zu: (%g, %u), expected (%g, %u)", what, wrong,
                              first, wrong ? value[first] : 0.0, wrong ? index[first] : 0,
                              wrong ? want_value[first] : 0.0, wrong ? want_index[first] : 0);
                    }
                    scanrt_buffer_destroy(in), scanrt_buffer_destroy(values), scanrt_buffer_destroy(indices);
                    scanrt_buffer_destroy(flags);
                    free(x), free(value), free(want_value), free(index), free(want_index), free(sh.flags);
                }
        scanrt_operator_destroy(op);
    }
}

static void run_all(scanrt_context *ctx, int backend) {
    env_t e = {ctx, NULL, backend};
    if (!EXPECT_OK(scanrt_stream_create(ctx, &e.s))) return;
    test_recipes(&e);
    test_wide_states(&e);
    test_extreme_with_nan(&e);
    test_user_operators(&e);
    test_errors(&e);
    test_threads(&e);
    if (backend == SCANRT_BACKEND_GPU) {
        test_device_pointers(ctx);
    } else {
        scanrt_operator *op = NULL;
        if (EXPECT_OK(scanrt_operator_create_linear_recurrence(ctx, SCANRT_DTYPE_F32, &op))) {
            scanrt_scan_desc d;
            EXPECT_OK(scanrt_scan_desc_init(&d));
            float x[4] = {0};
            const void *in[2] = {x, x};
            void *out[1] = {x};
            EXPECT(scanrt_operator_scan_device(op, NULL, in, 2, out, 1, 4, &d, NULL, NULL), SCANRT_STATUS_WRONG_BACKEND);
            scanrt_operator_destroy(op);
        }
    }
    scanrt_stream_destroy(e.s);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    scanrt_context *ctx = NULL;
    if (!EXPECT_OK(scanrt_context_create(SCANRT_BACKEND_AUTO, 0, &ctx))) return 1;
    int32_t backend = -1;
    EXPECT_OK(scanrt_context_backend(ctx, &backend));
    const char *name = backend == SCANRT_BACKEND_GPU ? "gpu" : "host";
    run_all(ctx, backend);
    if (backend == SCANRT_BACKEND_GPU) {
        scanrt_context *host = NULL;
        if (EXPECT_OK(scanrt_context_create(SCANRT_BACKEND_HOST, 0, &host))) run_all(host, SCANRT_BACKEND_HOST);
        scanrt_context_destroy(host);
    }
    test_compile_errors();
    scanrt_context_destroy(ctx);
    return check_summary("test_operators", name);
}
