/* test_arrays: scanrt_array views and scanrt_scan_array: 1-D arrays, rows of row-major
 * matrices along the last axis (and axis -1), segment data, strided arrays (columns with a
 * row pitch along axis 0, pitched rows, one carry per column), and the refusals (outputs
 * that reach an element twice, axes that nest into no one stride, bad shapes, axes,
 * dimensions, struct sizes) with nothing written; carries in memory chaining chunks; carries per segment of
 * scans by offsets; f16 and bf16 arrays; host arrays
 * scanned through the GPU in chunks. Arrays live in scanrt buffers
 * (scanrt_buffer_pointer), so the same program runs on the AUTO backend and on the host. */
#define _POSIX_C_SOURCE 200809L

#include "scanrt.h"

#define CHECK_FILE "test_arrays.c"
#include "check.h"
#include "scan_reference.h"

static scanrt_array array_of(scanrt_buffer *b, int32_t dtype, int32_t ndim, const int64_t *shape,
                             const int64_t *strides) {
    scanrt_array a;
    EXPECT_OK(scanrt_array_init(&a));
    EXPECT_OK(scanrt_buffer_pointer(b, &a.data));
    a.dtype = dtype;
    a.ndim = ndim;
    a.shape = shape;
    a.strides = strides;
    return a;
}

static void test_rows(scanrt_context *ctx, scanrt_stream *s) {
    g_phase = "rows along the last axis";
    const int64_t shapes[][2] = {{1, 1}, {1, 5000}, {3, 1}, {17, 33}, {1000, 1000}, {2, 70000}};
    uint64_t state = 0xA77A;
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        const int64_t rows = shapes[k][0], len = shapes[k][1];
        const size_t n = (size_t)(rows * len);
        uint32_t *x = malloc(n * 4), *got = malloc(n * 8);
        uint64_t *want = malloc(n * 8);
        for (size_t i = 0; i < n; i++) x[i] = (uint32_t)((state = state * 6364136223846793005ull + 1) >> 54);
        scanrt_buffer *in = make_buffer(ctx, SCANRT_DTYPE_U32, n), *out = make_buffer(ctx, SCANRT_DTYPE_U64, n);
        EXPECT_OK(scanrt_buffer_upload(in, s, x, n));
        for (int backward = 0; backward < 2; backward++) {
            scanrt_scan_desc d;
            scanrt_scan_desc_init(&d);
            d.inclusive = 0;
            d.direction = backward;
            scanrt_array a = array_of(in, SCANRT_DTYPE_U32, 2, shapes[k], NULL);
            scanrt_array b = array_of(out, SCANRT_DTYPE_U64, 2, shapes[k], NULL);
            EXPECT_OK(scanrt_scan_array(ctx, s, &a, &b, backward ? -1 : 1, &d, NULL));
            EXPECT_OK(scanrt_buffer_download(out, s, got, n));
            for (int64_t r = 0; r < rows; r++) {
                uint64_t running = 0;
                for (int64_t j = 0; j < len; j++) {
                    int64_t c = backward ? len - 1 - j : j;
                    want[r * len + c] = running;
                    running += x[r * len + c];
                }
            }
            CHECK(memcmp(got, want, n * 8) == 0, "exclusive %s sums of %lld rows of %lld",
                  backward ? "backward" : "forward", (long long)rows, (long long)len);
        }
        scanrt_buffer_destroy(in), scanrt_buffer_destroy(out);
        free(x), free(got), free(want);
    }
}

static void test_refusals(scanrt_context *ctx, scanrt_stream *s) {
    g_phase = "refused arrays";
    const size_t n = 64;
    scanrt_buffer *in = make_buffer(ctx, SCANRT_DTYPE_F32, n), *out = make_buffer(ctx, SCANRT_DTYPE_F32, n);
    float ones[64], got[64], poison[64];
    for (size_t i = 0; i < n; i++) ones[i] = 1.0f, poison[i] = -7.0f;
    EXPECT_OK(scanrt_buffer_upload(in, s, ones, n));
    EXPECT_OK(scanrt_buffer_upload(out, s, poison, n));
    scanrt_scan_desc d;
    scanrt_scan_desc_init(&d);
    const int64_t square[2] = {8, 8}, flat[1] = {64}, twice[2] = {1, 1}, cube[4] = {2, 2, 2, 4}, unnested[4] = {4, 9, 20, 1},
                  negative[1] = {-1};
    scanrt_array a = array_of(in, SCANRT_DTYPE_F32, 2, square, NULL), b = array_of(out, SCANRT_DTYPE_F32, 2, square, NULL);
    /* An output that reaches elements twice; batch axes that nest into no one stride. */
    scanrt_array overlapping = array_of(out, SCANRT_DTYPE_F32, 2, square, twice);
    EXPECT(scanrt_scan_array(ctx, s, &a, &overlapping, 0, &d, NULL), SCANRT_STATUS_INVALID_ARGUMENT);
    CHECK(strstr(scanrt_last_error_message(), "twice") != NULL, "message: %s", scanrt_last_error_message());
    scanrt_array p = array_of(in, SCANRT_DTYPE_F32, 4, cube, unnested), q = array_of(out, SCANRT_DTYPE_F32, 4, cube, NULL);
    EXPECT(scanrt_scan_array(ctx, s, &p, &q, 3, &d, NULL), SCANRT_STATUS_UNSUPPORTED_COMBINATION);
    EXPECT(scanrt_scan_array(ctx, s, &a, &b, 2, &d, NULL), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_scan_array(ctx, s, &a, &b, -3, &d, NULL), SCANRT_STATUS_INVALID_ARGUMENT);
    scanrt_array c = array_of(out, SCANRT_DTYPE_F32, 1, flat, NULL);
    EXPECT(scanrt_scan_array(ctx, s, &a, &c, -1, &d, NULL), SCANRT_STATUS_INVALID_ARGUMENT);
    scanrt_array neg = array_of(in, SCANRT_DTYPE_F32, 1, negative, NULL);
    EXPECT(scanrt_scan_array(ctx, s, &neg, &c, 0, &d, NULL), SCANRT_STATUS_INVALID_ARGUMENT);
    scanrt_array nine = a;
    nine.ndim = 9;
    EXPECT(scanrt_scan_array(ctx, s, &nine, &b, 0, &d, NULL), SCANRT_STATUS_INVALID_ARGUMENT);
    scanrt_array no_shape = a;
    no_shape.shape = NULL;
    EXPECT(scanrt_scan_array(ctx, s, &no_shape, &b, 0, &d, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    scanrt_array old = a;
    old.struct_size = 8;
    EXPECT(scanrt_scan_array(ctx, s, &old, &b, 0, &d, NULL), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_scan_array(ctx, s, NULL, &b, 0, &d, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    scanrt_array i64_out = array_of(out, SCANRT_DTYPE_I64, 2, square, NULL);
    EXPECT(scanrt_scan_array(ctx, s, &a, &i64_out, -1, &d, NULL), SCANRT_STATUS_UNSUPPORTED_COMBINATION);
    EXPECT_OK(scanrt_buffer_download(out, s, got, n));
    CHECK(memcmp(got, poison, sizeof got) == 0, "a refused scan wrote its output");

    /* Segment data from the descriptor, on a 1-D array. */
    g_phase = "segmented 1-D array";
    uint8_t flags[64] = {0};
    flags[10] = flags[40] = 1;
    scanrt_buffer *fb = make_buffer(ctx, SCANRT_DTYPE_U8, n);
    EXPECT_OK(scanrt_buffer_upload(fb, s, flags, n));
    d.segments = SCANRT_SEGMENTS_BYTE_FLAGS;
    EXPECT_OK(scanrt_buffer_pointer(fb, (void **)&d.segment_data));
    scanrt_array x1 = array_of(in, SCANRT_DTYPE_F32, 1, flat, NULL), y1 = array_of(out, SCANRT_DTYPE_F32, 1, flat, NULL);
    EXPECT_OK(scanrt_scan_array(ctx, s, &x1, &y1, 0, &d, NULL));
    EXPECT_OK(scanrt_buffer_download(out, s, got, n));
    for (size_t i = 0; i < n; i++) {
        float want = (float)(i < 10 ? i + 1 : i < 40 ? i - 9 : i - 39);
        CHECK(got[i] == want, "segmented element %zu: %g, want %g", i, got[i], want);
    }
    scanrt_buffer_destroy(in), scanrt_buffer_destroy(out), scanrt_buffer_destroy(fb);
}

/* Strided arrays: columns of a matrix with a row pitch (a scan along axis 0) into a
 * contiguous u64 matrix, forward and backward, exclusive; rows with a pitch along the last
 * axis; one carry in and one total per column (scanrt_scan_array_carried). */
static void test_strided(scanrt_context *ctx, scanrt_stream *s) {
    g_phase = "strided arrays";
    const int64_t rows = 300, cols = 37, pitch = 40;
    const int64_t shape[2] = {rows, cols}, in_strides[2] = {pitch, 1}, one_per_column[1] = {cols};
    const size_t span = (size_t)(rows * pitch), n = (size_t)(rows * cols);
    uint32_t *x = malloc(span * 4);
    uint64_t *got = malloc(n * 8), *want = malloc(n * 8), carries[37], totals[37];
    uint64_t state = 0x57A1DE;
    for (size_t i = 0; i < span; i++) x[i] = (uint32_t)((state = state * 6364136223846793005ull + 1) >> 52);
    for (int64_t c = 0; c < cols; c++) carries[c] = (uint64_t)(c * 1000);
    scanrt_buffer *in = make_buffer(ctx, SCANRT_DTYPE_U32, span), *out = make_buffer(ctx, SCANRT_DTYPE_U64, n);
    scanrt_buffer *cin = make_buffer(ctx, SCANRT_DTYPE_U64, (size_t)cols), *cout = make_buffer(ctx, SCANRT_DTYPE_U64, (size_t)cols);
    EXPECT_OK(scanrt_buffer_upload(in, s, x, span));
    EXPECT_OK(scanrt_buffer_upload(cin, s, carries, (size_t)cols));
    scanrt_array a = array_of(in, SCANRT_DTYPE_U32, 2, shape, in_strides), b = array_of(out, SCANRT_DTYPE_U64, 2, shape, NULL);
    scanrt_array ci = array_of(cin, SCANRT_DTYPE_U64, 1, one_per_column, NULL);
    scanrt_array co = array_of(cout, SCANRT_DTYPE_U64, 1, one_per_column, NULL);
    for (int backward = 0; backward < 2; backward++) {
        scanrt_scan_desc d;
        scanrt_scan_desc_init(&d);
        d.inclusive = 0;
        d.direction = backward;
        EXPECT_OK(scanrt_scan_array_carried(ctx, s, &a, &b, 0, &ci, &co, &d, NULL));
        EXPECT_OK(scanrt_buffer_download(out, s, got, n));
        EXPECT_OK(scanrt_buffer_download(cout, s, totals, (size_t)cols));
        for (int64_t c = 0; c < cols; c++) {
            uint64_t running = carries[c];
            for (int64_t j = 0; j < rows; j++) {
                int64_t r = backward ? rows - 1 - j : j;
                want[r * cols + c] = running;
                running += x[r * pitch + c];
            }
            CHECK(totals[c] == running, "column %lld total %llu, want %llu", (long long)c,
                  (unsigned long long)totals[c], (unsigned long long)running);
        }
        CHECK(memcmp(got, want, n * 8) == 0, "exclusive %s column sums of %lldx%lld (pitch %lld)",
              backward ? "backward" : "forward", (long long)rows, (long long)cols, (long long)pitch);
    }
    /* The same memory as rows of 37 with a pitch of 40: an inclusive scan along axis 1. */
    const int64_t row_shape[2] = {rows, cols};
    scanrt_array r_in = array_of(in, SCANRT_DTYPE_U32, 2, row_shape, in_strides);
    scanrt_scan_desc d;
    scanrt_scan_desc_init(&d);
    EXPECT_OK(scanrt_scan_array(ctx, s, &r_in, &b, -1, &d, NULL));
    EXPECT_OK(scanrt_buffer_download(out, s, got, n));
    for (int64_t r = 0; r < rows; r++) {
        uint64_t running = 0;
        for (int64_t c = 0; c < cols; c++) want[r * cols + c] = running += x[r * pitch + c];
    }
    CHECK(memcmp(got, want, n * 8) == 0, "inclusive sums of %lld pitched rows", (long long)rows);
    /* The summed-area table of the same view: the row sums above, summed down each column. */
    EXPECT_OK(scanrt_summed_area_table(ctx, s, &r_in, &b, &d, NULL));
    EXPECT_OK(scanrt_buffer_download(out, s, got, n));
    for (int64_t r = 1; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) want[r * cols + c] += want[(r - 1) * cols + c];
    CHECK(memcmp(got, want, n * 8) == 0, "summed-area table of %lldx%lld (pitch %lld)", (long long)rows,
          (long long)cols, (long long)pitch);
    const int64_t flat_shape[1] = {cols};
    scanrt_array one_d = array_of(in, SCANRT_DTYPE_U32, 1, flat_shape, NULL);
    EXPECT(scanrt_summed_area_table(ctx, s, &one_d, &b, &d, NULL), SCANRT_STATUS_INVALID_ARGUMENT);
    scanrt_buffer_destroy(in), scanrt_buffer_destroy(out), scanrt_buffer_destroy(cin), scanrt_buffer_destroy(cout);
    free(x), free(got), free(want);
}

/* A u64 sum scanned in chunks of random lengths that chain through one carry element
 * (carry in = carry out), forward and backward, against one sequential scan; then the
 * refusal of carries on a segmented scan, with nothing written. */
static void test_carries(scanrt_context *ctx, scanrt_stream *s) {
    g_phase = "carries in memory";
    const size_t n = 300001;
    uint64_t *x = malloc(n * 8), *got = malloc(n * 8), *want = malloc(n * 8);
    uint64_t state = 0xCA77;
    for (size_t i = 0; i < n; i++) x[i] = (state = state * 6364136223846793005ull + 1) >> 30;
    scanrt_buffer *in = make_buffer(ctx, SCANRT_DTYPE_U64, n), *out = make_buffer(ctx, SCANRT_DTYPE_U64, n);
    scanrt_buffer *carry = make_buffer(ctx, SCANRT_DTYPE_U64, 1);
    EXPECT_OK(scanrt_buffer_upload(in, s, x, n));
    char *in_base, *out_base;
    EXPECT_OK(scanrt_buffer_pointer(in, (void **)&in_base));
    EXPECT_OK(scanrt_buffer_pointer(out, (void **)&out_base));
    const int64_t one = 1;
    scanrt_array c = array_of(carry, SCANRT_DTYPE_U64, 1, &one, NULL);
    for (int backward = 0; backward < 2; backward++) {
        const uint64_t init = 1000 + (uint64_t)backward;
        EXPECT_OK(scanrt_buffer_upload(carry, s, &init, 1));
        scanrt_scan_desc d;
        scanrt_scan_desc_init(&d);
        d.inclusive = 0;
        d.direction = backward;
        for (size_t done = 0; done < n;) {
            size_t len = 1 + (size_t)((state = state * 6364136223846793005ull + 1) >> 33) % 70000;
            if (len > n - done) len = n - done;
            const size_t start = backward ? n - done - len : done;
            const int64_t shape = (int64_t)len;
            scanrt_array a = array_of(in, SCANRT_DTYPE_U64, 1, &shape, NULL);
            scanrt_array b = array_of(out, SCANRT_DTYPE_U64, 1, &shape, NULL);
            a.data = in_base + 8 * start, b.data = out_base + 8 * start;
            EXPECT_OK(scanrt_scan_array_carried(ctx, s, &a, &b, 0, &c, &c, &d, NULL));
            done += len;
        }
        uint64_t running = init;
        for (size_t j = 0; j < n; j++) {
            const size_t i = backward ? n - 1 - j : j;
            want[i] = running;
            running += x[i];
        }
        uint64_t total = 0;
        EXPECT_OK(scanrt_buffer_download(out, s, got, n));
        EXPECT_OK(scanrt_buffer_download(carry, s, &total, 1));
        CHECK(memcmp(got, want, n * 8) == 0, "chained exclusive %s sums", backward ? "backward" : "forward");
        CHECK(total == running, "chained total %llu, want %llu", (unsigned long long)total,
              (unsigned long long)running);
    }
    /* Rows of a 2-D array take one total per row: one element for 3 rows is refused, nothing
     * written. */
    const int64_t rows[2] = {3, 5};
    scanrt_array a = array_of(in, SCANRT_DTYPE_U64, 2, rows, NULL), b = array_of(out, SCANRT_DTYPE_U64, 2, rows, NULL);
    scanrt_scan_desc d;
    scanrt_scan_desc_init(&d);
    EXPECT(scanrt_scan_array_carried(ctx, s, &a, &b, 1, &c, &c, &d, NULL), SCANRT_STATUS_BUFFER_TOO_SMALL);
    EXPECT_OK(scanrt_buffer_download(out, s, got, 15));
    CHECK(memcmp(got, want, 15 * 8) == 0, "a refused carried scan wrote nothing");
    scanrt_buffer_destroy(in), scanrt_buffer_destroy(out), scanrt_buffer_destroy(carry);
    free(x), free(got), free(want);
}

/* Carries per segment: u64 sums by int64 offsets (an empty segment, elements before the
 * first offset and after the last) through scanrt_scan_array_carried, each segment from
 * its own initial value and its total written to its own element, both directions; carry
 * arrays that overlap are refused with nothing written. */
static void test_segment_carries(scanrt_context *ctx, scanrt_stream *s) {
    g_phase = "carries per segment";
    const size_t n = 100003, segments = 4;
    const int64_t offsets[5] = {5, 40000, 40000, 70001, 99999}, len = (int64_t)n, count = (int64_t)segments;
    const uint64_t init[4] = {1000, 2000, 3000, 4000};
    uint64_t *x = malloc(n * 8), *got = malloc(n * 8), *want = malloc(n * 8), totals[5], want_totals[4];
    for (size_t i = 0; i < n; i++) x[i] = (i * 2654435761u) >> 20;
    scanrt_buffer *in = make_buffer(ctx, SCANRT_DTYPE_U64, n), *out = make_buffer(ctx, SCANRT_DTYPE_U64, n);
    /* The carry in holds one spare element: an overlapping carry out below stays inside it. */
    scanrt_buffer *off = make_buffer(ctx, SCANRT_DTYPE_I64, 5), *cin = make_buffer(ctx, SCANRT_DTYPE_U64, 5);
    scanrt_buffer *cout = make_buffer(ctx, SCANRT_DTYPE_U64, 5);
    EXPECT_OK(scanrt_buffer_upload(in, s, x, n));
    EXPECT_OK(scanrt_buffer_upload(off, s, offsets, 5));
    EXPECT_OK(scanrt_buffer_upload(cin, s, init, 4));
    scanrt_array a = array_of(in, SCANRT_DTYPE_U64, 1, &len, NULL), b = array_of(out, SCANRT_DTYPE_U64, 1, &len, NULL);
    scanrt_array ci = array_of(cin, SCANRT_DTYPE_U64, 1, &count, NULL), co = array_of(cout, SCANRT_DTYPE_U64, 1, &count, NULL);
    scanrt_scan_desc d;
    scanrt_scan_desc_init(&d);
    d.segments = SCANRT_SEGMENTS_OFFSETS;
    d.key_dtype = SCANRT_DTYPE_I64;
    d.num_offsets = 5;
    EXPECT_OK(scanrt_buffer_pointer(off, (void **)&d.segment_data));
    for (int backward = 0; backward < 2; backward++) {
        d.direction = backward;
        for (int k = 0; k < 5; k++) totals[k] = 7;
        EXPECT_OK(scanrt_buffer_upload(cout, s, totals, 5));
        EXPECT_OK(scanrt_scan_array_carried(ctx, s, &a, &b, 0, &ci, &co, &d, NULL));
        EXPECT_OK(scanrt_buffer_download(out, s, got, n));
        EXPECT_OK(scanrt_buffer_download(cout, s, totals, 5));
        /* Sequence k is [offsets[k], offsets[k + 1]); the elements outside start from 0. */
        const size_t los[6] = {5, 40000, 40000, 70001, 0, 99999}, his[6] = {40000, 40000, 70001, 99999, 5, n};
        for (int k = 0; k < 6; k++) {
            uint64_t running = k < 4 ? init[k] : 0;
            for (size_t j = los[k]; j < his[k]; j++) {
                const size_t i = backward ? his[k] - 1 - (j - los[k]) : j;
                want[i] = running += x[i];
            }
            if (k < 4) want_totals[k] = running;
        }
        CHECK(memcmp(got, want, n * 8) == 0, "%s sums by offsets with carries", backward ? "backward" : "forward");
        CHECK(memcmp(totals, want_totals, 4 * 8) == 0 && totals[4] == 7, "%s totals per segment %llu %llu %llu %llu",
              backward ? "backward" : "forward", (unsigned long long)totals[0], (unsigned long long)totals[1],
              (unsigned long long)totals[2], (unsigned long long)totals[3]);
    }
    /* The carry out one element into the carry in. */
    scanrt_array overlapping = ci;
    overlapping.data = (char *)ci.data + 8;
    memset(got, 0, n * 8);
    EXPECT_OK(scanrt_buffer_upload(out, s, got, n));
    EXPECT(scanrt_scan_array_carried(ctx, s, &a, &b, 0, &ci, &overlapping, &d, NULL), SCANRT_STATUS_PARTIAL_OVERLAP);
    EXPECT_OK(scanrt_buffer_download(out, s, want, n));
    CHECK(memcmp(got, want, n * 8) == 0, "a refused scan by offsets wrote nothing");
    scanrt_buffer_destroy(in), scanrt_buffer_destroy(out), scanrt_buffer_destroy(off);
    scanrt_buffer_destroy(cin), scanrt_buffer_destroy(cout);
    free(x), free(got), free(want);
}

/* A host array scanned through the GPU in chunks (scanrt_scan_host), u32 into u64,
 * backward and exclusive, with a progress callback; on a GPU, the same array from device
 * memory into host memory. */
static void count_progress(uint64_t done, uint64_t total, void *user) {
    uint64_t *last = user;
    CHECK(done >= last[0] && done <= total, "progress %llu of %llu after %llu", (unsigned long long)done,
          (unsigned long long)total, (unsigned long long)last[0]);
    last[0] = done;
    last[1]++;
}

static void test_out_of_core(scanrt_context *ctx) {
    g_phase = "host arrays through the GPU";
    const size_t n = 3000001;
    uint32_t *x = malloc(n * 4);
    uint64_t *got = malloc(n * 8);
    for (size_t i = 0; i < n; i++) x[i] = (uint32_t)(i * 2654435761u >> 12);
    scanrt_scan_desc d;
    scanrt_scan_desc_init(&d);
    d.inclusive = 0;
    d.direction = SCANRT_DIRECTION_BACKWARD;
    uint64_t progress[2] = {0, 0};
    EXPECT_OK(scanrt_scan_host(ctx, x, SCANRT_DTYPE_U32, got, SCANRT_DTYPE_U64, n, &d, 1000000, count_progress,
                               progress, NULL));
    uint64_t running = 0, wrong = 0;
    for (size_t j = 0; j < n; j++) {
        const size_t i = n - 1 - j;
        wrong += got[i] != running;
        running += x[i];
    }
    CHECK(wrong == 0, "%llu wrong elements", (unsigned long long)wrong);
    CHECK(progress[0] == n && progress[1] >= 1, "progress ended at %llu after %llu calls",
          (unsigned long long)progress[0], (unsigned long long)progress[1]);

    int32_t backend = SCANRT_BACKEND_HOST;
    scanrt_buffer *on_device = NULL;
    void *device_x = NULL;
    scanrt_stream *s = NULL;
    EXPECT_OK(scanrt_context_backend(ctx, &backend));
    if (backend == SCANRT_BACKEND_GPU && EXPECT_OK(scanrt_stream_create(ctx, &s)) &&
        EXPECT_OK(scanrt_buffer_create(ctx, SCANRT_DTYPE_U32, n, &on_device)) &&
        EXPECT_OK(scanrt_buffer_upload(on_device, s, x, n)) && EXPECT_OK(scanrt_buffer_pointer(on_device, &device_x))) {
        memset(got, 0, n * 8);
        EXPECT_OK(scanrt_scan_host(ctx, device_x, SCANRT_DTYPE_U32, got, SCANRT_DTYPE_U64, n, &d, 1000000, NULL, NULL,
                                   NULL));
        running = 0, wrong = 0;
        for (size_t j = 0; j < n; j++) {
            const size_t i = n - 1 - j;
            wrong += got[i] != running;
            running += x[i];
        }
        CHECK(wrong == 0, "device into host: %llu wrong elements", (unsigned long long)wrong);
    }
    scanrt_buffer_destroy(on_device);
    scanrt_stream_destroy(s);
    free(x), free(got);
}

/* bf16 is the high half of a binary32; rounding keeps the nearest (ties to even) of the
 * finite values these tests make. */
static uint16_t bf16_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static float f32_of_bf16(uint16_t h) {
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
/* f16 bits of a normal value exactly representable (the multiples of 1/8 used here). */
static uint16_t f16_of_exact(float f) {
    if (f == 0.0f) return 0;
    int e;
    const float m = frexpf(fabsf(f), &e); /* |f| = m * 2^e, m in [0.5, 1) */
    const uint16_t mantissa = (uint16_t)((m * 2.0f - 1.0f) * 1024.0f);
    return (uint16_t)((f < 0 ? 0x8000u : 0u) | (uint16_t)(e - 1 + 15) << 10 | mantissa);
}

/* The half types: bf16 read into f32 and written as bf16, and f16 written as f32, both
 * directions, from an initial value (an f32: the accumulator's type). */
static void test_half_types(scanrt_context *ctx, scanrt_stream *s) {
    g_phase = "half types";
    const size_t n = 100003;
    uint16_t *bf = malloc(n * 2), *hf = malloc(n * 2), *got16 = malloc(n * 2);
    float *x = malloc(n * 4), *got32 = malloc(n * 4);
    uint64_t state = 0xBF16;
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)((int)((state = state * 6364136223846793005ull + 1) >> 57) - 64) / 8.0f;
        bf[i] = bf16_of(x[i]);
        hf[i] = f16_of_exact(x[i]);
    }
    scanrt_buffer *in_bf = make_buffer(ctx, SCANRT_DTYPE_BF16, n), *in_hf = make_buffer(ctx, SCANRT_DTYPE_F16, n);
    scanrt_buffer *out_bf = make_buffer(ctx, SCANRT_DTYPE_BF16, n), *out_f32 = make_buffer(ctx, SCANRT_DTYPE_F32, n);
    EXPECT_OK(scanrt_buffer_upload(in_bf, s, bf, n));
    EXPECT_OK(scanrt_buffer_upload(in_hf, s, hf, n));
    const int64_t shape[1] = {(int64_t)n};
    for (int backward = 0; backward < 2; backward++) {
        scanrt_scan_desc d;
        scanrt_scan_desc_init(&d);
        d.direction = backward;
        d.has_init = 1;
        d.init.f32 = 0.375f;
        scanrt_array a = array_of(in_bf, SCANRT_DTYPE_BF16, 1, shape, NULL);
        scanrt_array b = array_of(out_bf, SCANRT_DTYPE_BF16, 1, shape, NULL);
        EXPECT_OK(scanrt_scan_array(ctx, s, &a, &b, 0, &d, NULL));
        a = array_of(in_hf, SCANRT_DTYPE_F16, 1, shape, NULL);
        b = array_of(out_f32, SCANRT_DTYPE_F32, 1, shape, NULL);
        EXPECT_OK(scanrt_scan_array(ctx, s, &a, &b, 0, &d, NULL));
        EXPECT_OK(scanrt_buffer_download(out_bf, s, got16, n));
        EXPECT_OK(scanrt_buffer_download(out_f32, s, got32, n));
        /* Sums of eighths below 2^20 are exact in f32: one rounding, as each is written. */
        float running = 0.375f;
        size_t wrong16 = 0, wrong32 = 0;
        for (size_t j = 0; j < n; j++) {
            const size_t i = backward ? n - 1 - j : j;
            running += x[i];
            wrong16 += got16[i] != bf16_of(running);
            wrong32 += got32[i] != running;
        }
        CHECK(wrong16 == 0 && wrong32 == 0, "%s: %zu wrong bf16 sums, %zu wrong f16 -> f32 sums (first %g, want %g)",
              backward ? "backward" : "forward", wrong16, wrong32, (double)f32_of_bf16(got16[0]),
              (double)f32_of_bf16(bf16_of(backward ? running : 0.375f + x[0])));
    }
    scanrt_buffer_destroy(in_bf), scanrt_buffer_destroy(in_hf);
    scanrt_buffer_destroy(out_bf), scanrt_buffer_destroy(out_f32);
    free(bf), free(hf), free(got16), free(x), free(got32);
}

static void run(scanrt_context *ctx, int32_t backend) {
    (void)backend;
    scanrt_stream *s = NULL;
    EXPECT_OK(scanrt_stream_create(ctx, &s));
    test_rows(ctx, s);
    test_refusals(ctx, s);
    test_strided(ctx, s);
    test_carries(ctx, s);
    test_segment_carries(ctx, s);
    test_half_types(ctx, s);
    test_out_of_core(ctx);
    scanrt_stream_destroy(s);
}

int main(void) {
    int32_t backend;
    scanrt_context *ctx = open_auto_context("test_arrays", &backend);
    run(ctx, backend);
    also_on_the_host(backend, run);
    scanrt_context_destroy(ctx);
    return check_summary("test_arrays", backend_name(backend));
}
