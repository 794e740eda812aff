/* test_plans: the one call shape, scanrt_plan_create + scanrt_plan_execute, for every
 * primitive (a scan along an axis with a carry out, a summed-area table, a selection with
 * an int64 count, a run-length encoding with a uint32 count, a sort with its workspace query and the caller's
 * workspace) against sequential loops; the stream named by a scanrt handle, by the
 * application's raw stream (NULL: the legacy default stream) and by SCANRT_DEFAULT_STREAM;
 * and the refusals (unknown primitive, missing description, wrong array counts, bad
 * struct sizes) with nothing written. Runs on the AUTO backend and on the host. */
#define _POSIX_C_SOURCE 200809L

#include "scanrt.h"

#define CHECK_FILE "test_plans.c"
#include "check.h"
#include "scan_reference.h"

static scanrt_plan *plan_of(scanrt_context *ctx, const scanrt_plan_desc *d) {
    scanrt_plan *p = NULL;
    EXPECT_OK(scanrt_plan_create(ctx, d, &p));
    CHECK(p != NULL, "scanrt_plan_create succeeded but wrote NULL");
    return p;
}

/* Runs `plan` on `arrays`, on the handle or (raw) on the legacy default stream, which
 * `legacy` (a wrapper of it) then waits for. */
static scanrt_status execute(scanrt_plan *plan, scanrt_stream *s, scanrt_stream *legacy, int raw,
                             const scanrt_array *arrays, size_t count, void *workspace, size_t bytes) {
    scanrt_args a;
    EXPECT_OK(scanrt_args_init(&a));
    CHECK(a.stream == SCANRT_DEFAULT_STREAM, "scanrt_args_init sets SCANRT_DEFAULT_STREAM");
    if (!raw) a.stream_handle = s;
    a.arrays = arrays;
    a.num_arrays = count;
    a.workspace = workspace;
    a.workspace_bytes = bytes;
    scanrt_status status = scanrt_plan_execute(plan, &a);
    if (status == SCANRT_STATUS_OK) EXPECT_OK(scanrt_stream_synchronize(raw ? legacy : s));
    return status;
}

static void run(scanrt_context *ctx, int32_t backend) {
    g_phase = backend == SCANRT_BACKEND_GPU ? "plans (GPU)" : "plans (host)";
    const int64_t rows = 37, cols = 1001, n = rows * cols;
    const int64_t shape[2] = {rows, cols}, flat[1] = {n}, one[1] = {1}, carry_shape[1] = {rows};
    scanrt_stream *s = NULL, *legacy = NULL;
    EXPECT_OK(scanrt_stream_create(ctx, &s));
    if (backend == SCANRT_BACKEND_GPU)
        EXPECT_OK(scanrt_stream_wrap(ctx, NULL, &legacy));
    else
        legacy = s; /* the host backend has no streams: a raw one is ignored */
    uint32_t *x = malloc(n * 4), *got = malloc(n * 4), *want = malloc(n * 4), *idx = malloc(n * 4);
    uint8_t *flags = malloc(n);
    uint64_t state = 0x9A4;
    for (int64_t i = 0; i < n; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (uint32_t)(state >> 58); /* 0..63: runs and ties */
        flags[i] = (state >> 20) & 1;
    }
    scanrt_buffer *in = make_buffer(ctx, SCANRT_DTYPE_U32, n), *out = make_buffer(ctx, SCANRT_DTYPE_U32, n);
    scanrt_buffer *aux = make_buffer(ctx, SCANRT_DTYPE_U32, n), *fb = make_buffer(ctx, SCANRT_DTYPE_U8, n);
    scanrt_buffer *cnt = make_buffer(ctx, SCANRT_DTYPE_I64, 1), *tot = make_buffer(ctx, SCANRT_DTYPE_U32, rows);
    scanrt_buffer *cnt32 = make_buffer(ctx, SCANRT_DTYPE_U32, 1);
    EXPECT_OK(scanrt_buffer_upload(in, s, x, n));
    EXPECT_OK(scanrt_buffer_upload(fb, s, flags, n));

    for (int raw = 0; raw < 2; raw++) {
        /* A scan of each row, with each row's total as the carry out. */
        scanrt_scan_desc sd;
        EXPECT_OK(scanrt_scan_desc_init(&sd));
        scanrt_plan_desc pd;
        EXPECT_OK(scanrt_plan_desc_init(&pd));
        CHECK(pd.primitive == SCANRT_PRIMITIVE_SCAN && pd.axis == -1, "plan defaults: a scan along the last axis");
        pd.scan = &sd;
        scanrt_plan *scan = plan_of(ctx, &pd);
        scanrt_array arrays[5];
        arrays[0] = buffer_array(in, SCANRT_DTYPE_U32, flat);
        arrays[0].ndim = 2, arrays[0].shape = shape;
        arrays[1] = buffer_array(out, SCANRT_DTYPE_U32, flat);
        arrays[1].ndim = 2, arrays[1].shape = shape;
        scanrt_array_init(&arrays[2]); /* no carry in (NULL data) */
        arrays[3] = buffer_array(tot, SCANRT_DTYPE_U32, carry_shape);
        EXPECT_OK(execute(scan, s, legacy, raw, arrays, 4, NULL, 0));
        uint32_t totals[37];
        EXPECT_OK(scanrt_buffer_download(out, s, got, n));
        EXPECT_OK(scanrt_buffer_download(tot, s, totals, rows));
        int64_t bad = 0;
        for (int64_t r = 0; r < rows; r++) {
            uint32_t running = 0;
            for (int64_t c = 0; c < cols; c++) bad += got[r * cols + c] != (running += x[r * cols + c]);
            bad += totals[r] != running;
        }
        CHECK(bad == 0, "plan scan of %lld rows (%s stream): %lld wrong", (long long)rows, raw ? "raw" : "handle",
              (long long)bad);

        /* Refusals write nothing: three arrays are not a scan's two to four plus one. */
        fill_sentinel(out, s, SCANRT_DTYPE_U32);
        EXPECT(execute(scan, s, legacy, raw, arrays, 5, NULL, 0), SCANRT_STATUS_INVALID_ARGUMENT);
        EXPECT(execute(scan, s, legacy, raw, arrays, 1, NULL, 0), SCANRT_STATUS_INVALID_ARGUMENT);
        CHECK_SENTINEL("a refused plan execution", out, s, SCANRT_DTYPE_U32);
        scanrt_plan_destroy(scan);

        /* A summed-area table of the same matrix. */
        pd.primitive = SCANRT_PRIMITIVE_SUMMED_AREA_TABLE;
        scanrt_plan *sat = plan_of(ctx, &pd);
        EXPECT_OK(execute(sat, s, legacy, raw, arrays, 2, NULL, 0));
        EXPECT_OK(scanrt_buffer_download(out, s, got, n));
        bad = 0;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) {
                uint32_t w = x[r * cols + c] + (r ? want[(r - 1) * cols + c] : 0) + (c ? want[r * cols + c - 1] : 0) -
                             (r && c ? want[(r - 1) * cols + c - 1] : 0);
                want[r * cols + c] = w;
                bad += got[r * cols + c] != w;
            }
        CHECK(bad == 0, "plan summed-area table (%s stream): %lld wrong", raw ? "raw" : "handle", (long long)bad);
        scanrt_plan_destroy(sat);

        /* A selection by byte flags, its count in int64. */
        scanrt_select_desc sel;
        EXPECT_OK(scanrt_select_desc_init(&sel));
        pd.primitive = SCANRT_PRIMITIVE_SELECT;
        pd.select = &sel;
        scanrt_plan *select = plan_of(ctx, &pd);
        scanrt_array sa[5] = {buffer_array(in, SCANRT_DTYPE_U32, flat), buffer_array(fb, SCANRT_DTYPE_U8, flat),
                              buffer_array(out, SCANRT_DTYPE_U32, flat), arrays[2],
                              buffer_array(cnt, SCANRT_DTYPE_I64, one)};
        EXPECT_OK(execute(select, s, legacy, raw, sa, 5, NULL, 0));
        int64_t kept = -1, k = 0;
        EXPECT_OK(scanrt_buffer_download(cnt, s, &kept, 1));
        EXPECT_OK(scanrt_buffer_download(out, s, got, n));
        bad = 0;
        for (int64_t i = 0; i < n; i++)
            if (flags[i]) bad += k < kept && got[k] != x[i], k++;
        CHECK(kept == k && bad == 0, "plan selection (%s stream): %lld kept of %lld, %lld wrong",
              raw ? "raw" : "handle", (long long)kept, (long long)k, (long long)bad);
        scanrt_plan_destroy(select);

        /* A run-length encoding: values and U32 lengths, the count in uint32. */
        pd.primitive = SCANRT_PRIMITIVE_RUN_LENGTH_ENCODE;
        scanrt_plan *rle = plan_of(ctx, &pd);
        scanrt_array ra[4] = {sa[0], sa[2], buffer_array(aux, SCANRT_DTYPE_U32, flat),
                              buffer_array(cnt32, SCANRT_DTYPE_U32, one)};
        EXPECT_OK(execute(rle, s, legacy, raw, ra, 4, NULL, 0));
        uint32_t kept32 = 0;
        EXPECT_OK(scanrt_buffer_download(cnt32, s, &kept32, 1));
        kept = kept32;
        EXPECT_OK(scanrt_buffer_download(out, s, got, n));
        EXPECT_OK(scanrt_buffer_download(aux, s, idx, n));
        int64_t runs = 0;
        bad = 0;
        for (int64_t i = 0, start = 0; i < n; i++)
            if (i + 1 == n || x[i + 1] != x[i]) {
                bad += runs >= kept || got[runs] != x[start] || idx[runs] != (uint32_t)(i + 1 - start);
                runs++, start = i + 1;
            }
        CHECK(kept == runs && bad == 0, "plan run-length encoding (%s stream): %lld runs of %lld, %lld wrong",
              raw ? "raw" : "handle", (long long)kept, (long long)runs, (long long)bad);
        scanrt_plan_destroy(rle);

        /* A descending sort with indices as values, in the caller's workspace. */
        scanrt_sort_desc so;
        EXPECT_OK(scanrt_sort_desc_init(&so));
        so.order = SCANRT_SORT_DESCENDING;
        pd.primitive = SCANRT_PRIMITIVE_SORT;
        pd.sort = &so;
        scanrt_plan *sort = plan_of(ctx, &pd);
        for (int64_t i = 0; i < n; i++) idx[i] = (uint32_t)i;
        EXPECT_OK(scanrt_buffer_upload(aux, s, idx, n));
        scanrt_buffer *values_out = make_buffer(ctx, SCANRT_DTYPE_U32, n);
        scanrt_array so_arrays[4] = {sa[0], sa[2], buffer_array(aux, SCANRT_DTYPE_U32, flat),
                                     buffer_array(values_out, SCANRT_DTYPE_U32, flat)};
        scanrt_args query;
        EXPECT_OK(scanrt_args_init(&query));
        query.arrays = so_arrays;
        query.num_arrays = 4;
        size_t bytes = 0;
        EXPECT_OK(scanrt_plan_workspace_size(sort, &query, &bytes));
        CHECK(bytes > 0, "a sort's workspace is not empty");
        scanrt_buffer *temp = make_buffer(ctx, SCANRT_DTYPE_U8, bytes);
        void *temp_ptr = NULL;
        EXPECT_OK(scanrt_buffer_pointer(temp, &temp_ptr));
        EXPECT_OK(execute(sort, s, legacy, raw, so_arrays, 4, raw ? temp_ptr : NULL, raw ? bytes : 0));
        EXPECT_OK(scanrt_buffer_download(out, s, got, n));
        EXPECT_OK(scanrt_buffer_download(values_out, s, idx, n));
        bad = 0;
        for (int64_t i = 0; i < n; i++) {
            bad += got[i] != x[idx[i]];
            /* Descending and stable: equal keys keep their input order. */
            if (i) bad += got[i] > got[i - 1] || (got[i] == got[i - 1] && idx[i] < idx[i - 1]);
        }
        CHECK(bad == 0, "plan sort (%s stream, %s workspace): %lld wrong", raw ? "raw" : "handle",
              raw ? "the caller's" : "pooled", (long long)bad);
        scanrt_plan_destroy(sort);
        scanrt_buffer_destroy(temp);
        scanrt_buffer_destroy(values_out);
        pd.select = NULL, pd.sort = NULL;
    }

    /* Plans refused at creation: NULL arguments, an unknown primitive, no description,
     * a struct size from no header. */
    g_phase = "plan refusals";
    scanrt_plan_desc pd;
    EXPECT_OK(scanrt_plan_desc_init(&pd));
    scanrt_plan *p = (scanrt_plan *)0x1;
    EXPECT(scanrt_plan_create(ctx, NULL, &p), SCANRT_STATUS_NULL_ARGUMENT);
    CHECK(p == NULL, "a refused plan_create leaves *out NULL");
    EXPECT(scanrt_plan_create(NULL, &pd, &p), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_plan_create(ctx, &pd, &p), SCANRT_STATUS_NULL_ARGUMENT); /* a scan without its desc */
    pd.primitive = 99;
    EXPECT(scanrt_plan_create(ctx, &pd, &p), SCANRT_STATUS_INVALID_ARGUMENT);
    pd.primitive = SCANRT_PRIMITIVE_SELECT;
    scanrt_select_desc bad_select;
    EXPECT_OK(scanrt_select_desc_init(&bad_select));
    bad_select.rule = 77;
    pd.select = &bad_select;
    EXPECT(scanrt_plan_create(ctx, &pd, &p), SCANRT_STATUS_INVALID_ARGUMENT);
    pd.struct_size = 3;
    EXPECT(scanrt_plan_create(ctx, &pd, &p), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_plan_execute(NULL, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    scanrt_plan_destroy(NULL);

    scanrt_buffer_destroy(in), scanrt_buffer_destroy(out), scanrt_buffer_destroy(aux);
    scanrt_buffer_destroy(fb), scanrt_buffer_destroy(cnt), scanrt_buffer_destroy(tot), scanrt_buffer_destroy(cnt32);
    if (legacy != s) scanrt_stream_destroy(legacy);
    scanrt_stream_destroy(s);
    free(x), free(got), free(want), free(idx), free(flags);
}

int main(void) {
    int32_t backend;
    scanrt_context *ctx = open_auto_context("test_plans", &backend);
    run(ctx, backend);
    also_on_the_host(backend, run);
    scanrt_context_destroy(ctx);
    return check_summary("test_plans", backend_name(backend));
}
