/* test_scan_sweep: every type pair, operator, size, inclusive/exclusive, initial value and
 * in-place form of scanrt_scan against the sequential reference; backward, segmented and
 * deterministic scans; several threads on one context. On the AUTO backend and, on a GPU
 * machine, on the host too. */
#define _POSIX_C_SOURCE 200809L

#include "scanrt.h"

#define CHECK_FILE "test_scan_sweep.c"
#include "check.h"
#include "scan_reference.h"

#include <math.h>
#include <pthread.h>

typedef struct {
    scanrt_context *ctx;
    int backend;
    scanrt_stream *stream;
    void *in_host, *want, *got;
} sweep_t;

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
                           uint64_t num_offsets, int backward, int inclusive, int32_t init) {
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
    d.num_offsets = num_offsets;
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
    /* Offsets: 0, every start (twice now and then: an empty segment), n, and entries that
     * start nothing (past n; -1 as i64). */
    uint32_t *offsets32 = xmalloc((2 * n + 4) * 4);
    int64_t *offsets64 = xmalloc((2 * n + 4) * 8);
    size_t num_offsets = 0;
    offsets32[num_offsets++] = 0;
    uint64_t rng = 42;
    uint32_t key = 7;
    for (size_t i = 0; i < n; i++) {
        values[i] = (int32_t)(splitmix64(&rng) % 2001) - 1000;
        starts[i] = splitmix64(&rng) % 500 == 0 || i % 4096 == 1;
        if (starts[i]) bits[i / 32] |= 1u << (i % 32), key += 1 + (uint32_t)(splitmix64(&rng) % 3);
        keys32[i] = key;
        keys64[i] = -(int64_t)key * 1000003;
        if (starts[i] && i > 0) {
            offsets32[num_offsets++] = (uint32_t)i;
            if (splitmix64(&rng) % 8 == 0) offsets32[num_offsets++] = (uint32_t)i;
        }
    }
    offsets32[num_offsets++] = (uint32_t)n;
    offsets32[num_offsets++] = (uint32_t)n + 5;
    for (size_t i = 0; i < num_offsets; i++) offsets64[i] = offsets32[i];
    offsets64[num_offsets] = -1;
    scanrt_buffer *byte_buf = make_buffer(ctx, SCANRT_DTYPE_U8, n), *bit_buf = make_buffer(ctx, SCANRT_DTYPE_U32, (n + 31) / 32);
    scanrt_buffer *k32 = make_buffer(ctx, SCANRT_DTYPE_U32, n), *k64 = make_buffer(ctx, SCANRT_DTYPE_I64, n);
    EXPECT_OK(scanrt_buffer_upload(byte_buf, s, starts, n));
    EXPECT_OK(scanrt_buffer_upload(bit_buf, s, bits, (n + 31) / 32));
    EXPECT_OK(scanrt_buffer_upload(k32, s, keys32, n));
    EXPECT_OK(scanrt_buffer_upload(k64, s, keys64, n));
    scanrt_buffer *o32 = make_buffer(ctx, SCANRT_DTYPE_U32, num_offsets);
    scanrt_buffer *o64 = make_buffer(ctx, SCANRT_DTYPE_I64, num_offsets + 1);
    EXPECT_OK(scanrt_buffer_upload(o32, s, offsets32, num_offsets));
    EXPECT_OK(scanrt_buffer_upload(o64, s, offsets64, num_offsets + 1));
    struct {
        const char *name;
        scanrt_buffer *data;
        int segments, key_dtype;
        uint64_t num_offsets;
    } forms[] = {
        {"unsegmented", NULL, SCANRT_SEGMENTS_NONE, 0, 0},
        {"byte flags", byte_buf, SCANRT_SEGMENTS_BYTE_FLAGS, 0, 0},
        {"bit flags", bit_buf, SCANRT_SEGMENTS_BIT_FLAGS, 0, 0},
        {"u32 keys", k32, SCANRT_SEGMENTS_KEYS, SCANRT_DTYPE_U32, 0},
        {"i64 keys", k64, SCANRT_SEGMENTS_KEYS, SCANRT_DTYPE_I64, 0},
        {"u32 offsets", o32, SCANRT_SEGMENTS_OFFSETS, SCANRT_DTYPE_U32, num_offsets},
        {"i64 offsets", o64, SCANRT_SEGMENTS_OFFSETS, SCANRT_DTYPE_I64, num_offsets + 1},
    };
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++)
        for (int backward = 0; backward < 2; backward++)
            for (int inclusive = 0; inclusive < 2; inclusive++) {
                char what[96];
                snprintf(what, sizeof what, "%s %s %s", forms[f].name, backward ? "backward" : "forward",
                         inclusive ? "inclusive" : "exclusive");
                segmented_case(ctx, s, backend, what, values, n, starts, forms[f].data, forms[f].segments,
                               forms[f].key_dtype, forms[f].num_offsets, backward, inclusive, 3);
            }
    scanrt_buffer *seed_flags = make_buffer(ctx, SCANRT_DTYPE_U8, 7);
    EXPECT_OK(scanrt_buffer_upload(seed_flags, s, flags, 7));
    segmented_case(ctx, s, backend, "seed 004 C", a, 7, flags, NULL, SCANRT_SEGMENTS_NONE, 0, 0, 1, 0, 0);
    segmented_case(ctx, s, backend, "seed 004 segmented C", a, 7, flags, seed_flags, SCANRT_SEGMENTS_BYTE_FLAGS, 0, 0,
                   1, 0, 0);
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

    scanrt_buffer *all[] = {byte_buf, bit_buf, k32, k64, o32, o64, in, out, fin, fout};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) scanrt_buffer_destroy(all[i]);
    free(values), free(starts), free(bits), free(keys32), free(keys64), free(offsets32), free(offsets64);
    free(fv), free(r1), free(r2);
    scanrt_stream_destroy(s);
}

/* f32 data summed in an f64 accumulator (`has_accumulator`): every result is the f64
 * running sum rounded once to f32, which an f32 accumulator would miss by far more than
 * the rounding of a reordered f64 sum; forward and backward, both algorithms. A wrong
 * accumulator type is refused with a message. */
static void test_wide_accumulator(scanrt_context *ctx, int backend) {
    g_phase = "wide accumulator";
    const size_t n = 300001;
    scanrt_stream *s = NULL;
    EXPECT_OK(scanrt_stream_create(ctx, &s));
    float *x = malloc(n * sizeof *x), *got = malloc(n * sizeof *got);
    uint64_t state = 0xACC;
    for (size_t i = 0; i < n; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        double m = (double)(state >> 40) / (double)(1ull << 24) + 0.5;
        x[i] = (float)((state >> 13 & 1) ? m * 1000.0 : -m * 0.001);
    }
    scanrt_buffer *in = make_buffer(ctx, SCANRT_DTYPE_F32, n), *out = make_buffer(ctx, SCANRT_DTYPE_F32, n);
    EXPECT_OK(scanrt_buffer_upload(in, s, x, n));
    for (int backward = 0; backward < 2; backward++) {
        for (int alg = 0; alg < 2; alg++) {
            scanrt_scan_desc d;
            scanrt_scan_desc_init(&d);
            d.has_accumulator = 1;
            d.accumulator = SCANRT_DTYPE_F64;
            d.has_init = 1;
            d.init.f64 = 0.25;
            d.direction = backward ? SCANRT_DIRECTION_BACKWARD : SCANRT_DIRECTION_FORWARD;
            if (backend == SCANRT_BACKEND_GPU && alg) d.algorithm = SCANRT_ALGORITHM_MATRIX;
            if (!expect_status_at(__LINE__, "wide accumulator", scanrt_scan(ctx, s, in, out, &d, NULL), SCANRT_STATUS_OK))
                continue;
            EXPECT_OK(scanrt_buffer_download(out, s, got, n));
            double running = 0.25, abs_sum = 0.25;
            size_t bad = 0;
            for (size_t k = 0; k < n; k++) {
                size_t i = backward ? n - 1 - k : k;
                running += x[i];
                abs_sum += fabs(x[i]);
                double want = (double)(float)running;
                double ulp = fabs(want) * 1.2e-7 + 1e-30;
                if (fabs((double)got[i] - want) > ulp + (double)n * 2.3e-16 * abs_sum) bad++;
            }
            CHECK(bad == 0, "f32 via f64 %s alg=%d: %zu of %zu results are not the f64 sum rounded once",
                  backward ? "backward" : "forward", d.algorithm, bad, n);
        }
    }
    scanrt_scan_desc d;
    scanrt_scan_desc_init(&d);
    d.has_accumulator = 1;
    d.accumulator = SCANRT_DTYPE_I64;
    EXPECT(scanrt_scan(ctx, s, in, out, &d, NULL), SCANRT_STATUS_UNSUPPORTED_COMBINATION);
    CHECK(strstr(scanrt_last_error_message(), "accumulated in") != NULL, "message: %s", scanrt_last_error_message());
    scanrt_buffer_destroy(in), scanrt_buffer_destroy(out);
    free(x), free(got);
    scanrt_stream_destroy(s);
}

static void host_sweep(scanrt_context *ctx, int32_t backend) {
    sweep(ctx, backend, "host");
    test_segmented_backward_deterministic(ctx, backend);
    test_wide_accumulator(ctx, backend);
}

int main(void) {
    int32_t backend;
    scanrt_context *ctx = open_auto_context("test_scan_sweep", &backend);
    sweep(ctx, backend, backend_name(backend));
    test_segmented_backward_deterministic(ctx, backend);
    test_wide_accumulator(ctx, backend);
    test_threads(ctx);
    also_on_the_host(backend, host_sweep);
    scanrt_context_destroy(ctx);
    return check_summary("test_scan_sweep", backend_name(backend));
}
