/* test_sort: scanrt_sort (keys, key-value pairs, argsorts, descending, a bit range, in
 * place, caller temporary memory, float keys with NaN and signed zeros) against a
 * sequential stable sort, and the refusals (short outputs, mismatched types, overlaps, bad
 * bit ranges and descriptors) with nothing written. Arrays live in scanrt buffers, so the
 * program runs on the AUTO backend and on the host. */
#define _POSIX_C_SOURCE 200809L

#include "scanrt.h"

#define CHECK_FILE "test_sort.c"
#include "check.h"
#include "scan_reference.h"


/* The reference: a stable insertion of each index by key (a sequential merge sort would be
 * faster; n is small). `key_less(a, b)` is the order; ties keep input order. */
typedef int (*key_less)(const void *keys, size_t a, size_t b);
static int i32_less(const void *k, size_t a, size_t b) { return ((const int32_t *)k)[a] < ((const int32_t *)k)[b]; }
static int i32_greater(const void *k, size_t a, size_t b) { return ((const int32_t *)k)[a] > ((const int32_t *)k)[b]; }
/* Floats: by value with -0 before +0; NaNs last (positive, then negative, by payload). */
static uint64_t f32_rank(float x) {
    uint32_t b;
    memcpy(&b, &x, 4);
    if (x != x) return (1ull << 33) + ((uint64_t)(b >> 31) << 32) + b;
    return (b >> 31) ? (uint64_t)(0xffffffffu - b) : (1ull << 32) + b;
}
static int f32_less(const void *k, size_t a, size_t b) {
    return f32_rank(((const float *)k)[a]) < f32_rank(((const float *)k)[b]);
}
/* Bits 4..12 of u32 keys. */
static int bits_less(const void *k, size_t a, size_t b) {
    return ((((const uint32_t *)k)[a] >> 4) & 0xff) < ((((const uint32_t *)k)[b] >> 4) & 0xff);
}

static void stable_order(const void *keys, size_t n, key_less less, uint32_t *order) {
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        while (j > 0 && less(keys, i, order[j - 1])) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = (uint32_t)i;
    }
}

static void run(scanrt_context *ctx, int32_t backend) {
    g_phase = backend == SCANRT_BACKEND_GPU ? "sort (GPU)" : "sort (host)";
    const size_t n = 20011;
    const int64_t len = (int64_t)n;
    scanrt_stream *s = NULL;
    EXPECT_OK(scanrt_stream_create(ctx, &s));
    int32_t *x = malloc(n * 4), *got = malloc(n * 4);
    uint32_t *order = malloc(n * 4), *idx_got = malloc(n * 4), *vals = malloc(n * 4);
    float *fx = malloc(n * 4), *fgot = malloc(n * 4);
    uint64_t state = 11;
    const float specials[] = {0.0f, -0.0f, 1.0f / 0.0f, -1.0f / 0.0f, 0.0f / 0.0f, 2.5f, -2.5f};
    for (size_t i = 0; i < n; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (int32_t)((state >> 33) % 2001) - 1000;
        vals[i] = (uint32_t)(state >> 7);
        fx[i] = specials[(state >> 40) % 7];
        if (fx[i] != fx[i] && (state >> 50) & 1) fx[i] = -fx[i];
    }
    scanrt_buffer *kin = make_buffer(ctx, SCANRT_DTYPE_I32, n), *kout = make_buffer(ctx, SCANRT_DTYPE_I32, n);
    scanrt_buffer *vin = make_buffer(ctx, SCANRT_DTYPE_U32, n), *vout = make_buffer(ctx, SCANRT_DTYPE_U32, n);
    scanrt_buffer *fin = make_buffer(ctx, SCANRT_DTYPE_F32, n), *fout = make_buffer(ctx, SCANRT_DTYPE_F32, n);
    EXPECT_OK(scanrt_buffer_upload(kin, s, x, n));
    EXPECT_OK(scanrt_buffer_upload(vin, s, vals, n));
    EXPECT_OK(scanrt_buffer_upload(fin, s, fx, n));
    scanrt_array ki = buffer_array(kin, SCANRT_DTYPE_I32, &len), ko = buffer_array(kout, SCANRT_DTYPE_I32, &len);
    scanrt_array vi = buffer_array(vin, SCANRT_DTYPE_U32, &len), vo = buffer_array(vout, SCANRT_DTYPE_U32, &len);
    scanrt_array fi = buffer_array(fin, SCANRT_DTYPE_F32, &len), fo = buffer_array(fout, SCANRT_DTYPE_F32, &len);
    scanrt_sort_desc d;
    size_t bad = 0;

    /* Key-value pairs, ascending, then descending. */
    for (int desc = 0; desc < 2; desc++) {
        EXPECT_OK(scanrt_sort_desc_init(&d));
        d.order = desc ? SCANRT_SORT_DESCENDING : SCANRT_SORT_ASCENDING;
        EXPECT_OK(scanrt_sort(ctx, s, &ki, &ko, &vi, &vo, NULL, 0, &d));
        stable_order(x, n, desc ? i32_greater : i32_less, order);
        EXPECT_OK(scanrt_buffer_download(kout, s, got, n));
        EXPECT_OK(scanrt_buffer_download(vout, s, idx_got, n));
        bad = 0;
        for (size_t i = 0; i < n; i++) bad += got[i] != x[order[i]] || idx_got[i] != vals[order[i]];
        CHECK(bad == 0, "i32 pairs (%s): %zu wrong", desc ? "descending" : "ascending", bad);
    }

    /* An argsort of float keys with NaNs and signed zeros, into caller temporary memory. */
    uint64_t temp_bytes = 0;
    EXPECT_OK(scanrt_sort_temp_bytes(ctx, n, SCANRT_DTYPE_F32, SCANRT_DTYPE_U32, &temp_bytes));
    scanrt_buffer *tmp = make_buffer(ctx, SCANRT_DTYPE_U8, temp_bytes);
    void *tmp_ptr = NULL;
    EXPECT_OK(scanrt_buffer_pointer(tmp, &tmp_ptr));
    scanrt_sort_desc_init(&d);
    EXPECT_OK(scanrt_sort(ctx, s, &fi, &fo, NULL, &vo, tmp_ptr, temp_bytes, &d));
    stable_order(fx, n, f32_less, order);
    EXPECT_OK(scanrt_buffer_download(fout, s, fgot, n));
    EXPECT_OK(scanrt_buffer_download(vout, s, idx_got, n));
    bad = 0;
    for (size_t i = 0; i < n; i++) bad += memcmp(&fgot[i], &fx[order[i]], 4) != 0 || idx_got[i] != order[i];
    CHECK(bad == 0, "f32 argsort: %zu wrong", bad);

    /* Bits 4..12 of u32 keys, in place. */
    scanrt_array ui = buffer_array(vin, SCANRT_DTYPE_U32, &len);
    scanrt_sort_desc_init(&d);
    d.begin_bit = 4;
    d.end_bit = 12;
    EXPECT_OK(scanrt_sort(ctx, s, &ui, &ui, NULL, NULL, NULL, 0, &d));
    stable_order(vals, n, bits_less, order);
    EXPECT_OK(scanrt_buffer_download(vin, s, idx_got, n));
    bad = 0;
    for (size_t i = 0; i < n; i++) bad += idx_got[i] != vals[order[i]];
    CHECK(bad == 0, "u32 bits 4..12 in place: %zu wrong", bad);

    /* Refusals, with nothing written. */
    g_phase = "sort refusals";
    int32_t poison = -99;
    for (size_t i = 0; i < n; i++) got[i] = poison;
    EXPECT_OK(scanrt_buffer_upload(kout, s, got, n));
    scanrt_sort_desc_init(&d);
    const int64_t short_len = len - 1;
    scanrt_array ko_short = buffer_array(kout, SCANRT_DTYPE_I32, &short_len);
    EXPECT(scanrt_sort(ctx, s, &ki, &ko_short, NULL, NULL, NULL, 0, &d), SCANRT_STATUS_BUFFER_TOO_SMALL);
    EXPECT(scanrt_sort(ctx, s, &ki, &fo, NULL, NULL, NULL, 0, &d), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_sort(ctx, s, &ki, &ko, &vi, NULL, NULL, 0, &d), SCANRT_STATUS_INVALID_ARGUMENT);
    scanrt_array shifted = ki;
    shifted.data = (char *)ki.data + 4;
    shifted.shape = &short_len;
    scanrt_array ki_short = ki;
    ki_short.shape = &short_len;
    EXPECT(scanrt_sort(ctx, s, &ki_short, &shifted, NULL, NULL, NULL, 0, &d), SCANRT_STATUS_PARTIAL_OVERLAP);
    d.end_bit = 33;
    EXPECT(scanrt_sort(ctx, s, &ki, &ko, NULL, NULL, NULL, 0, &d), SCANRT_STATUS_INVALID_ARGUMENT);
    scanrt_sort_desc_init(&d);
    d.order = 7;
    EXPECT(scanrt_sort(ctx, s, &ki, &ko, NULL, NULL, NULL, 0, &d), SCANRT_STATUS_INVALID_ARGUMENT);
    scanrt_sort_desc_init(&d);
    EXPECT(scanrt_sort(ctx, s, &ki, &ko, NULL, NULL, NULL, 0, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_sort(ctx, s, &ki, &ko, NULL, NULL, tmp_ptr, 16, &d), SCANRT_STATUS_BUFFER_TOO_SMALL);
    EXPECT_OK(scanrt_buffer_download(kout, s, got, n));
    bad = 0;
    for (size_t i = 0; i < n; i++) bad += got[i] != poison;
    CHECK(bad == 0, "a refused sort wrote %zu output elements", bad);

    scanrt_buffer *all[] = {kin, kout, vin, vout, fin, fout, tmp};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) scanrt_buffer_destroy(all[i]);
    free(x), free(got), free(order), free(idx_got), free(vals), free(fx), free(fgot);
    scanrt_stream_destroy(s);
}

int main(void) {
    int32_t backend;
    scanrt_context *ctx = open_auto_context("test_sort", &backend);
    run(ctx, backend);
    also_on_the_host(backend, run);
    scanrt_context_destroy(ctx);
    return check_summary("test_sort", backend_name(backend));
}
