/* test_recipes: the recipes (linear recurrence, cumulative extreme with index,
 * logcumsumexp, the recurrence's adjoint) through the C ABI against sequential loops written here, in every
 * direction and segment form, with NaN, infinities and ties; and the failures users
 * reported (wide states at a million elements and more, NaN at segment starts); a
 * recurrence along the columns of a pitched matrix with carries per column; threads
 * sharing one operator. On the
 * AUTO backend and, on a GPU machine, the host. Prints "test_recipes: N checks passed". */
#define _POSIX_C_SOURCE 200809L

#include "scanrt.h"

#define CHECK_FILE "test_recipes.c"
#include "check.h"
#include "operator_support.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The recurrence h = a h_prev + b, or with `adjoint` its adjoint lam = g + a_prev lam_prev
 * (b standing for g, a_prev the element before's a): from h0 (passing h0). */
static void recurrence_case(env_t *e, scanrt_operator *op, int dtype, int adjoint, uint64_t *rng, shape_t sh) {
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
    double h = h0, coefficient = 1;
    for (size_t k = 0; k < n; k++) {
        size_t p = position(k, n, sh.backward);
        if (restarts(p, n, sh.backward, sh.flags, sh.row)) h = h0, coefficient = 1;
        if (adjoint)
            want[p] = h = coefficient * h + b[p], coefficient = a[p];
        else
            want[p] = h = a[p] * h + b[p];
    }
    uint8_t init[32];
    if (adjoint)
        EXPECT_OK(scanrt_linear_recurrence_adjoint_init(dtype, h0, init, 4 * size));
    else
        EXPECT_OK(scanrt_linear_recurrence_init(dtype, h0, init, 2 * size));

    scanrt_buffer *flags, *in[2] = {upload(e->ctx, e->s, dtype, ah, n), upload(e->ctx, e->s, dtype, bh, n)};
    scanrt_buffer *out = sentinel_buffer(e->ctx, e->s, dtype, n, n * size);
    scanrt_scan_desc d = shape_desc(e, &sh, &flags);
    scanrt_scan_info info;
    EXPECT_OK(scanrt_scan_info_init(&info));
    char what[128];
    snprintf(what, sizeof what, "recurrence%s %s n=%zu backward=%d segments=%d", adjoint ? " adjoint" : "",
             scanrt_dtype_string(dtype), n, sh.backward, sh.segments);
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

/* Running max or min of u32 with its index; with `initial`, every segment starts from
 * a value of the state scanrt_cumulative_extreme_init writes, which wins ties and reads
 * index SCANRT_EXTREME_INITIAL_INDEX. */
static void extreme_case(env_t *e, scanrt_operator *op, int max, uint64_t *rng, shape_t sh, int initial) {
    const size_t n = sh.n;
    uint32_t *x = xmalloc(n * 4), *value = xmalloc(n * 4), *index = xmalloc(n * 4);
    uint32_t *want_value = xmalloc(n * 4), *want_index = xmalloc(n * 4);
    for (size_t i = 0; i < n; i++) x[i] = (uint32_t)(splitmix64(rng) % 500); /* many ties */
    const uint32_t start = (uint32_t)(splitmix64(rng) % 500);
    unsigned char state[8];
    if (initial) EXPECT_OK(scanrt_cumulative_extreme_init(SCANRT_DTYPE_U32, &start, state, sizeof state));
    uint32_t best = 0, best_index = 0;
    for (size_t k = 0; k < n; k++) {
        size_t p = position(k, n, sh.backward);
        const int restart = k == 0 || restarts(p, n, sh.backward, sh.flags, sh.row);
        if (restart && initial) best = start, best_index = SCANRT_EXTREME_INITIAL_INDEX;
        if ((restart && !initial) || (max ? x[p] > best : x[p] < best)) best = x[p], best_index = (uint32_t)p;
        want_value[p] = best, want_index[p] = best_index;
    }
    scanrt_buffer *flags, *in = upload(e->ctx, e->s, SCANRT_DTYPE_U32, x, n);
    scanrt_buffer *values = sentinel_buffer(e->ctx, e->s, SCANRT_DTYPE_U32, n, n * 4);
    scanrt_buffer *indices = sentinel_buffer(e->ctx, e->s, SCANRT_DTYPE_U32, n, n * 4);
    scanrt_scan_desc d = shape_desc(e, &sh, &flags);
    char what[128];
    snprintf(what, sizeof what, "cum%s n=%zu backward=%d segments=%d initial=%d", max ? "max" : "min", n,
             sh.backward, sh.segments, initial);
    const scanrt_buffer *inputs[1] = {in}, *outputs[2] = {values, indices};
    if (expect_status_at(__LINE__, what,
                         scanrt_operator_scan(op, e->s, inputs, 1, outputs, 2, &d, initial ? state : NULL, NULL),
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
 * of the cases (a naive sum of exponentials overflows there); with `initial`, one more
 * term before every segment (scanrt_logcumsumexp_init). */
static void logcumsumexp_case(env_t *e, scanrt_operator *op, uint64_t *rng, shape_t sh, int huge, int initial) {
    const size_t n = sh.n;
    float *x = xmalloc(n * 4), *y = xmalloc(n * 4);
    double *want = xmalloc(n * 8);
    for (size_t i = 0; i < n; i++) x[i] = (float)(huge ? FLT_MAX / 2 * uniform(rng, 0.5, 1) : uniform(rng, -20, 20));
    const double start = (double)(splitmix64(rng) % 2001) / 64.0 - 15.625; /* exact in float */
    unsigned char state[8];
    if (initial) EXPECT_OK(scanrt_logcumsumexp_init(SCANRT_DTYPE_F32, start, state, sizeof state));
    double m = -INFINITY, sum = 0; /* the running log-sum is m + log(sum) */
    for (size_t k = 0; k < n; k++) {
        size_t p = position(k, n, sh.backward);
        if (k == 0 || restarts(p, n, sh.backward, sh.flags, sh.row)) m = initial ? start : -INFINITY, sum = initial;
        double v = x[p];
        if (v > m) sum = sum * exp(m - v) + 1, m = v;
        else sum += exp(v - m);
        want[p] = m + log(sum);
    }
    scanrt_buffer *flags, *in = upload(e->ctx, e->s, SCANRT_DTYPE_F32, x, n);
    scanrt_buffer *out = sentinel_buffer(e->ctx, e->s, SCANRT_DTYPE_F32, n, n * 4);
    scanrt_scan_desc d = shape_desc(e, &sh, &flags);
    char what[128];
    snprintf(what, sizeof what, "logcumsumexp n=%zu backward=%d segments=%d huge=%d initial=%d", n, sh.backward,
             sh.segments, huge, initial);
    const scanrt_buffer *inputs[1] = {in}, *outputs[1] = {out};
    if (expect_status_at(__LINE__, what,
                         scanrt_operator_scan(op, e->s, inputs, 1, outputs, 1, &d, initial ? state : NULL, NULL),
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
    for (int dt = SCANRT_DTYPE_F32; dt <= SCANRT_DTYPE_F64; dt++)
        for (int adjoint = 0; adjoint < 2; adjoint++) {
            const int created = adjoint ? scanrt_operator_create_linear_recurrence_adjoint(e->ctx, dt, &op)
                                        : scanrt_operator_create_linear_recurrence(e->ctx, dt, &op);
            if (!EXPECT_OK(created)) continue;
            size_t state = 0;
            EXPECT_OK(scanrt_operator_state_size(op, &state));
            const size_t want = (adjoint ? 4u : 2u) * (dt == SCANRT_DTYPE_F32 ? 4u : 8u);
            CHECK(state == want, "recurrence state size %zu", state);
            for (size_t i = 0; i < NSIZES; i++)
                for (int backward = 0; backward < 2; backward++)
                    recurrence_case(e, op, dt, adjoint, &rng,
                                    make_shape(&rng, sizes[i], backward, (int)(i + backward + adjoint) % 3));
            scanrt_operator_destroy(op);
        }
    for (int max = 0; max < 2; max++) {
        if (!EXPECT_OK(scanrt_operator_create_cumulative_extreme(e->ctx, SCANRT_DTYPE_U32, max, &op))) continue;
        for (size_t i = 0; i < NSIZES; i++)
            for (int backward = 0; backward < 2; backward++)
                extreme_case(e, op, max, &rng, make_shape(&rng, sizes[i], backward, (int)(i + max) % 3),
                             (int)(i + backward) % 2);
        scanrt_operator_destroy(op);
    }
    /* Initial states: the wrong size, no value, or a type logcumsumexp does not take. */
    unsigned char state[16];
    const uint32_t value = 7;
    EXPECT(scanrt_cumulative_extreme_init(SCANRT_DTYPE_U32, &value, state, 16), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_cumulative_extreme_init(SCANRT_DTYPE_U32, NULL, state, 8), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_logcumsumexp_init(SCANRT_DTYPE_U32, 1.0, state, 8), SCANRT_STATUS_UNSUPPORTED_COMBINATION);
    if (EXPECT_OK(scanrt_operator_create_logcumsumexp(e->ctx, SCANRT_DTYPE_F32, &op))) {
        for (size_t i = 0; i < NSIZES; i++)
            for (int backward = 0; backward < 2; backward++)
                logcumsumexp_case(e, op, &rng, make_shape(&rng, sizes[i], backward, (int)i % 3), (int)(i + backward) % 2,
                                  (int)(i / 2 + backward) % 2);
        scanrt_operator_destroy(op);
    }
}

/* A double recurrence along axis 0 of a [300, 7] matrix with a row pitch of 9 into a
 * contiguous one (scanrt_operator_scan_arrays): every column its own sequence, each from
 * its own state (carry in) and its total state written (carry out), both directions;
 * steps of +-1 and small integers, so the loops agree exactly. The input list comes
 * twice: as this header lays it out, and as a caller built against a newer header would,
 * each struct larger than this library's. */
static void test_recurrence_along_columns(env_t *e) {
    g_phase = "recurrence along columns";
    enum { ROWS = 300, COLS = 7, PITCH = 9 };
    scanrt_operator *op = NULL;
    if (!EXPECT_OK(scanrt_operator_create_linear_recurrence(e->ctx, SCANRT_DTYPE_F64, &op))) return;
    static double a[ROWS * PITCH], b[ROWS * PITCH], h[ROWS * COLS], states[COLS][2], totals[COLS][2];
    uint64_t rng = 77;
    for (int i = 0; i < ROWS * PITCH; i++) {
        a[i] = splitmix64(&rng) % 2 ? 1.0 : -1.0;
        b[i] = (double)(splitmix64(&rng) % 17) - 8.0;
    }
    for (int c = 0; c < COLS; c++) states[c][0] = 1.0, states[c][1] = (double)c;
    scanrt_buffer *ab = upload(e->ctx, e->s, SCANRT_DTYPE_F64, a, ROWS * PITCH);
    scanrt_buffer *bb = upload(e->ctx, e->s, SCANRT_DTYPE_F64, b, ROWS * PITCH);
    scanrt_buffer *hb = upload(e->ctx, e->s, SCANRT_DTYPE_F64, h, ROWS * COLS);
    scanrt_buffer *cin = upload(e->ctx, e->s, SCANRT_DTYPE_U8, states, sizeof states);
    scanrt_buffer *cout = upload(e->ctx, e->s, SCANRT_DTYPE_U8, totals, sizeof totals);
    if (!ab || !bb || !hb || !cin || !cout) return;
    const int64_t shape[2] = {ROWS, COLS}, pitched[2] = {PITCH, 1}, state_bytes[1] = {(int64_t)sizeof states};
    scanrt_array in[2], out[1], ci, co;
    scanrt_buffer *arrays[5] = {ab, bb, hb, cin, cout};
    scanrt_array *views[5] = {&in[0], &in[1], &out[0], &ci, &co};
    for (int k = 0; k < 5; k++) {
        EXPECT_OK(scanrt_array_init(views[k]));
        EXPECT_OK(scanrt_buffer_pointer(arrays[k], &views[k]->data));
        views[k]->dtype = k < 3 ? SCANRT_DTYPE_F64 : SCANRT_DTYPE_U8;
        views[k]->ndim = k < 3 ? 2 : 1;
        views[k]->shape = k < 3 ? shape : state_bytes;
        views[k]->strides = k < 2 ? pitched : NULL;
    }
    typedef struct {
        scanrt_array array;
        int64_t added_later[3];
    } newer_array;
    newer_array newer_in[2];
    for (int k = 0; k < 2; k++) {
        memset(&newer_in[k], 0xEE, sizeof newer_in[k]);
        newer_in[k].array = in[k];
        newer_in[k].array.struct_size = sizeof(newer_array);
    }
    /* A list holds structs of one size. */
    scanrt_scan_desc forward;
    scanrt_scan_desc_init(&forward);
    newer_in[1].array.struct_size = sizeof(scanrt_array);
    EXPECT(scanrt_operator_scan_arrays(op, e->s, &newer_in[0].array, 2, out, 1, 0, &forward, NULL, &ci, &co, NULL),
           SCANRT_STATUS_INVALID_ARGUMENT);
    newer_in[1].array.struct_size = sizeof(newer_array);
    for (int call = 0; call < 4; call++) {
        const int backward = call % 2;
        const scanrt_array *inputs = call < 2 ? in : &newer_in[0].array;
        memset(h, 0, sizeof h);  /* no earlier call's results pass for this one's */
        EXPECT_OK(scanrt_buffer_upload(hb, e->s, h, ROWS * COLS));
        scanrt_scan_desc d;
        scanrt_scan_desc_init(&d);
        d.direction = backward;
        EXPECT_OK(scanrt_operator_scan_arrays(op, e->s, inputs, 2, out, 1, 0, &d, NULL, &ci, &co, NULL));
        EXPECT_OK(scanrt_buffer_download(hb, e->s, h, ROWS * COLS));
        EXPECT_OK(scanrt_buffer_download(cout, e->s, totals, sizeof totals));
        size_t wrong = 0;
        for (int c = 0; c < COLS; c++) {
            double big_a = states[c][0], big_b = states[c][1];
            for (int j = 0; j < ROWS; j++) {
                const int r = backward ? ROWS - 1 - j : j;
                big_a *= a[r * PITCH + c];
                big_b = a[r * PITCH + c] * big_b + b[r * PITCH + c];
                wrong += h[r * COLS + c] != big_b;
            }
            wrong += totals[c][0] != big_a || totals[c][1] != big_b;
        }
        CHECK(wrong == 0, "%s recurrence along pitched columns (%s header): %zu wrong values or totals",
              backward ? "backward" : "forward", call < 2 ? "this" : "a newer", wrong);
    }
    for (int k = 0; k < 5; k++) scanrt_buffer_destroy(arrays[k]);
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
        extreme_case(&e, t->op, 1, &rng, make_shape(&rng, 1 + splitmix64(&rng) % 200000, i & 1, i % 3), i % 2);
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

static void run_recipes(scanrt_context *ctx, int backend) {
    env_t e = {ctx, NULL, backend};
    if (!EXPECT_OK(scanrt_stream_create(ctx, &e.s))) return;
    test_recipes(&e);
    test_recurrence_along_columns(&e);
    test_wide_states(&e);
    test_extreme_with_nan(&e);
    test_threads(&e);
    scanrt_stream_destroy(e.s);
}

int main(void) { return run_on_every_backend("test_recipes", run_recipes); }
