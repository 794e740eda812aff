/* test_raw_scans: the device-pointer entry points (scanrt_scan_device, with a caller's
 * workspace, the workspace query and initialisation) on a GPU, against the reference and
 * with bad pointers; on a host context they fail with SCANRT_STATUS_WRONG_BACKEND.
 *
 * Compile-time switch SCANRT_TEST_STRICT_HOST_RAW (-DSCANRT_TEST_STRICT_HOST_RAW): also
 * require WRONG_BACKEND from scanrt_buffer_pointer and
 * scanrt_scan_workspace_size on a host context. The library documents these two as
 * working there (a host address; 0 bytes), which is what is checked by default. */
#define _POSIX_C_SOURCE 200809L

#include "scanrt.h"

#define CHECK_FILE "test_raw_scans.c"
#include "check.h"
#include "scan_reference.h"

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
    RAW_ERROR("unknown input dtype", &g, pin, NALL_DTYPES, pout, SCANRT_DTYPE_U32, n, &d, SCANRT_STATUS_INVALID_ARGUMENT,
              out);
    RAW_ERROR("i16 input into u32 (signed into unsigned)", &g, pin, SCANRT_DTYPE_I16, pout, SCANRT_DTYPE_U32, n, &d,
              SCANRT_STATUS_UNSUPPORTED_COMBINATION, out);
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
        EXPECT(scanrt_scan_workspace_size(ctx, NALL_DTYPES, SCANRT_DTYPE_U32, n, &d, &bytes), SCANRT_STATUS_INVALID_ARGUMENT);
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


int main(void) {
    int32_t backend;
    scanrt_context *ctx = open_auto_context("test_raw_scans", &backend);
    if (backend == SCANRT_BACKEND_GPU) {
        test_raw_on_gpu(ctx);
        scanrt_context *host = NULL;
        EXPECT_OK(scanrt_context_create(SCANRT_BACKEND_HOST, 0, &host));
        if (host) {
            test_raw_on_host(host);
            scanrt_context_destroy(host);
        }
    } else {
        test_raw_on_host(ctx);
    }
    scanrt_context_destroy(ctx);
    return check_summary("test_raw_scans", backend_name(backend));
}
