/* test_select: scanrt_select (compaction by flags and comparisons, indices, capacity,
 * both partitions, unique, a user predicate on the GPU, half elements against an f32 operand) and
 * scanrt_run_length_encode against sequential loops, and the
 * refusals (missing flags, short outputs, overlaps, bad descriptors) with nothing written.
 * Arrays and the count live in scanrt buffers, so the program runs on the AUTO backend and
 * on the host. */
#define _POSIX_C_SOURCE 200809L

#include "scanrt.h"

#define CHECK_FILE "test_select.c"
#include "check.h"
#include "scan_reference.h"


static uint64_t count_of(scanrt_buffer *count, scanrt_stream *s) {
    uint64_t c = 0;
    EXPECT_OK(scanrt_buffer_download(count, s, &c, 1));
    return c;
}

static void run(scanrt_context *ctx, int32_t backend) {
    g_phase = backend == SCANRT_BACKEND_GPU ? "select (GPU)" : "select (host)";
    const size_t n = 100003;
    const int64_t len = (int64_t)n;
    scanrt_stream *s = NULL;
    EXPECT_OK(scanrt_stream_create(ctx, &s));
    int32_t *x = malloc(n * 4), *got = malloc(n * 4), *want = malloc(n * 4);
    uint8_t *flags = malloc(n);
    uint64_t state = 7;
    for (size_t i = 0; i < n; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (int32_t)((state >> 40) % 7) - 3;
        flags[i] = (state >> 20) & 1;
    }
    scanrt_buffer *in = make_buffer(ctx, SCANRT_DTYPE_I32, n), *out = make_buffer(ctx, SCANRT_DTYPE_I32, n);
    scanrt_buffer *rej = make_buffer(ctx, SCANRT_DTYPE_I32, n), *fb = make_buffer(ctx, SCANRT_DTYPE_U8, n);
    scanrt_buffer *idx = make_buffer(ctx, SCANRT_DTYPE_U64, n), *cnt = make_buffer(ctx, SCANRT_DTYPE_U64, 1);
    EXPECT_OK(scanrt_buffer_upload(in, s, x, n));
    EXPECT_OK(scanrt_buffer_upload(fb, s, flags, n));
    scanrt_array a = buffer_array(in, SCANRT_DTYPE_I32, &len), f = buffer_array(fb, SCANRT_DTYPE_U8, &len);
    scanrt_array o = buffer_array(out, SCANRT_DTYPE_I32, &len), r = buffer_array(rej, SCANRT_DTYPE_I32, &len);
    scanrt_array ix = buffer_array(idx, SCANRT_DTYPE_U64, &len);
    uint64_t *d_count = NULL;
    EXPECT_OK(scanrt_buffer_pointer(cnt, (void **)&d_count));

    /* By byte flags. */
    scanrt_select_desc d;
    EXPECT_OK(scanrt_select_desc_init(&d));
    EXPECT_OK(scanrt_select(ctx, s, &a, &f, &o, NULL, d_count, &d));
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (flags[i]) want[k++] = x[i];
    CHECK(count_of(cnt, s) == k, "flagged count %llu, want %zu", (unsigned long long)count_of(cnt, s), k);
    EXPECT_OK(scanrt_buffer_download(out, s, got, n));
    CHECK(memcmp(got, want, k * 4) == 0, "flagged values differ");

    /* x > 0 as indices, with a capacity of 1000. */
    d.rule = SCANRT_SELECT_GREATER;
    d.operand.i32 = 0;
    d.output = SCANRT_SELECT_OUTPUT_INDICES;
    d.has_capacity = 1;
    d.capacity = 1000;
    EXPECT_OK(scanrt_select(ctx, s, &a, NULL, &ix, NULL, d_count, &d));
    uint64_t *gi = malloc(n * 8);
    EXPECT_OK(scanrt_buffer_download(idx, s, gi, 1000));
    k = 0;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (x[i] > 0) {
            if (k < 1000 && gi[k] != i) bad++;
            k++;
        }
    CHECK(count_of(cnt, s) == k && bad == 0, "indices of x > 0: count %llu want %zu, %zu wrong",
          (unsigned long long)count_of(cnt, s), k, bad);

    /* Partition into two arrays, then reversed into one. */
    scanrt_select_desc_init(&d);
    d.output = SCANRT_SELECT_OUTPUT_PARTITION_TWO;
    EXPECT_OK(scanrt_select(ctx, s, &a, &f, &o, &r, d_count, &d));
    int32_t *gr = malloc(n * 4);
    EXPECT_OK(scanrt_buffer_download(out, s, got, n));
    EXPECT_OK(scanrt_buffer_download(rej, s, gr, n));
    size_t ks = 0, kr = 0;
    bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (flags[i]) bad += got[ks++] != x[i];
        else bad += gr[kr++] != x[i];
    }
    CHECK(bad == 0 && count_of(cnt, s) == ks, "two-array partition: %zu wrong", bad);
    d.output = SCANRT_SELECT_OUTPUT_PARTITION_REVERSED;
    EXPECT_OK(scanrt_select(ctx, s, &a, &f, &o, NULL, d_count, &d));
    EXPECT_OK(scanrt_buffer_download(out, s, got, n));
    ks = 0, kr = 0, bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (flags[i]) bad += got[ks++] != x[i];
        else bad += got[n - 1 - kr++] != x[i];
    }
    CHECK(bad == 0, "reversed partition: %zu wrong", bad);

    /* Unique, in place. */
    scanrt_select_desc_init(&d);
    d.rule = SCANRT_SELECT_RUN_HEADS;
    EXPECT_OK(scanrt_buffer_upload(out, s, x, n));
    EXPECT_OK(scanrt_select(ctx, s, &o, NULL, &o, NULL, d_count, &d));
    k = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || x[i] != x[i - 1]) want[k++] = x[i];
    EXPECT_OK(scanrt_buffer_download(out, s, got, n));
    CHECK(count_of(cnt, s) == k && memcmp(got, want, k * 4) == 0, "unique in place");

    /* Run-length encoding of x: each run's value and U32 length. */
    scanrt_buffer *lens = make_buffer(ctx, SCANRT_DTYPE_U32, n);
    scanrt_array l = buffer_array(lens, SCANRT_DTYPE_U32, &len);
    EXPECT_OK(scanrt_run_length_encode(ctx, s, &a, &o, &l, d_count));
    uint32_t *gl = malloc(n * 4);
    EXPECT_OK(scanrt_buffer_download(out, s, got, n));
    EXPECT_OK(scanrt_buffer_download(lens, s, gl, n));
    size_t runs = 0;
    bad = 0;
    for (size_t i = 0, start = 0; i < n; i++)
        if (i + 1 == n || x[i + 1] != x[i]) {
            bad += got[runs] != x[start] || gl[runs] != (uint32_t)(i + 1 - start);
            runs++;
            start = i + 1;
        }
    CHECK(count_of(cnt, s) == runs && bad == 0, "run-length encoding: %llu runs (want %zu), %zu wrong",
          (unsigned long long)count_of(cnt, s), runs, bad);
    scanrt_array l8 = buffer_array(lens, SCANRT_DTYPE_I32, &len);
    EXPECT(scanrt_run_length_encode(ctx, s, &a, &o, &l8, d_count), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_run_length_encode(ctx, s, &a, &a, &l, d_count), SCANRT_STATUS_PARTIAL_OVERLAP);
    scanrt_buffer_destroy(lens);
    free(gl);

    /* A user predicate: GPU contexts compile it; the host backend has no host function. */
    d.rule = SCANRT_SELECT_PREDICATE;
    d.predicate_source = "__device__ bool odd(int x) { return x & 1; }";
    d.predicate_function = "odd";
    if (backend == SCANRT_BACKEND_GPU) {
        EXPECT_OK(scanrt_select(ctx, s, &a, NULL, &o, NULL, d_count, &d));
        k = 0;
        for (size_t i = 0; i < n; i++)
            if (x[i] & 1) want[k++] = x[i];
        EXPECT_OK(scanrt_buffer_download(out, s, got, n));
        CHECK(count_of(cnt, s) == k && memcmp(got, want, k * 4) == 0, "odd elements");
    } else {
        EXPECT(scanrt_select(ctx, s, &a, NULL, &o, NULL, d_count, &d), SCANRT_STATUS_UNSUPPORTED_COMBINATION);
    }

    /* Refusals, with nothing written. */
    g_phase = "select refusals";
    int32_t poison = -99;
    for (size_t i = 0; i < n; i++) got[i] = poison;
    EXPECT_OK(scanrt_buffer_upload(out, s, got, n));
    scanrt_select_desc_init(&d);
    EXPECT(scanrt_select(ctx, s, &a, NULL, &o, NULL, d_count, &d), SCANRT_STATUS_INVALID_ARGUMENT); /* no flags */
    const int64_t short_len = len - 1;
    scanrt_array o_short = buffer_array(out, SCANRT_DTYPE_I32, &short_len);
    EXPECT(scanrt_select(ctx, s, &a, &f, &o_short, NULL, d_count, &d), SCANRT_STATUS_BUFFER_TOO_SMALL);
    scanrt_array f_short = buffer_array(fb, SCANRT_DTYPE_U8, &short_len);
    EXPECT(scanrt_select(ctx, s, &a, &f_short, &o, NULL, d_count, &d), SCANRT_STATUS_BUFFER_TOO_SMALL);
    scanrt_array shifted = a;
    shifted.data = (char *)a.data + 4;
    shifted.shape = &short_len;
    d.output = SCANRT_SELECT_OUTPUT_PARTITION_REVERSED;
    EXPECT(scanrt_select(ctx, s, &shifted, &f_short, &a, NULL, d_count, &d), SCANRT_STATUS_PARTIAL_OVERLAP);
    d.output = 9;
    EXPECT(scanrt_select(ctx, s, &a, &f, &o, NULL, d_count, &d), SCANRT_STATUS_INVALID_ARGUMENT);
    d.output = SCANRT_SELECT_OUTPUT_VALUES;
    d.rule = 42;
    EXPECT(scanrt_select(ctx, s, &a, &f, &o, NULL, d_count, &d), SCANRT_STATUS_INVALID_ARGUMENT);
    scanrt_select_desc_init(&d);
    EXPECT(scanrt_select(ctx, s, &a, &f, &o, NULL, NULL, &d), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_select(ctx, s, &a, &f, &o, &r, d_count, &d), SCANRT_STATUS_INVALID_ARGUMENT); /* rejected */
    EXPECT_OK(scanrt_buffer_download(out, s, got, n));
    bad = 0;
    for (size_t i = 0; i < n; i++) bad += got[i] != poison;
    CHECK(bad == 0, "a refused selection wrote %zu output elements", bad);

    /* Half elements compared with an operand given as f32 (rounded to the element type):
     * x > 1 keeps 1.5 and 2 of {0.5, 1, 1.5, 2, -3}, in f16 and in bf16. */
    g_phase = "select half operands";
    const uint16_t halves[2][5] = {{0x3800, 0x3C00, 0x3E00, 0x4000, 0xC200},
                                   {0x3F00, 0x3F80, 0x3FC0, 0x4000, 0xC040}};
    const int32_t half_types[2] = {SCANRT_DTYPE_F16, SCANRT_DTYPE_BF16};
    const int64_t five = 5;
    for (int t = 0; t < 2; t++) {
        scanrt_buffer *hb = make_buffer(ctx, half_types[t], 5), *ho = make_buffer(ctx, half_types[t], 5);
        EXPECT_OK(scanrt_buffer_upload(hb, s, halves[t], 5));
        scanrt_array h = buffer_array(hb, half_types[t], &five), hout = buffer_array(ho, half_types[t], &five);
        scanrt_select_desc_init(&d);
        d.rule = SCANRT_SELECT_GREATER;
        d.operand.f32 = 1.0f;
        EXPECT_OK(scanrt_select(ctx, s, &h, NULL, &hout, NULL, d_count, &d));
        uint16_t kept[5] = {0};
        EXPECT_OK(scanrt_buffer_download(ho, s, kept, 5));
        CHECK(count_of(cnt, s) == 2 && kept[0] == halves[t][2] && kept[1] == halves[t][3],
              "%s x > 1: %llu kept (%#x %#x), want 1.5 and 2", t ? "bf16" : "f16",
              (unsigned long long)count_of(cnt, s), kept[0], kept[1]);
        scanrt_buffer_destroy(hb);
        scanrt_buffer_destroy(ho);
    }

    scanrt_buffer *all[] = {in, out, rej, fb, idx, cnt};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) scanrt_buffer_destroy(all[i]);
    free(x), free(got), free(want), free(flags), free(gi), free(gr);
    scanrt_stream_destroy(s);
}

int main(void) {
    int32_t backend;
    scanrt_context *ctx = open_auto_context("test_select", &backend);
    run(ctx, backend);
    also_on_the_host(backend, run);
    scanrt_context_destroy(ctx);
    return check_summary("test_select", backend_name(backend));
}
