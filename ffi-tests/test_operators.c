/* test_operators: user-defined operators through the C ABI: CUDA source with host
 * functions (running on the host backend too), transforms, bad descriptions and calls,
 * compile errors citing the operator's lines (wherever NVRTC loads), device pointers and
 * caller workspaces on a GPU. Results are compared with
 * sequential loops written here. Prints "test_operators: N checks passed". */
#define _POSIX_C_SOURCE 200809L

#include "scanrt.h"

#define CHECK_FILE "test_operators.c"
#include "check.h"
#include "operator_support.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
    EXPECT(scanrt_operator_create_cumulative_extreme(e->ctx, 77, 1, &op), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_operator_create_logcumsumexp(e->ctx, SCANRT_DTYPE_I32, &op), SCANRT_STATUS_UNSUPPORTED_COMBINATION);
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

static void run_operators(scanrt_context *ctx, int backend) {
    env_t e = {ctx, NULL, backend};
    if (!EXPECT_OK(scanrt_stream_create(ctx, &e.s))) return;
    test_user_operators(&e);
    test_errors(&e);
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
    test_compile_errors();
    return run_on_every_backend("test_operators", run_operators);
}
