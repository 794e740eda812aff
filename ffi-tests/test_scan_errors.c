/* test_scan_errors: bad input to scanrt_scan gets its status and message, writes nothing
 * and leaves the context usable. On the AUTO backend and, on a GPU machine, the host. */
#define _POSIX_C_SOURCE 200809L

#include "scanrt.h"

#define CHECK_FILE "test_scan_errors.c"
#include "check.h"
#include "scan_reference.h"

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
        /* Initialising a newer caller's struct clears the fields this library does not know. */
        EXPECT_OK(scanrt_scan_info_init_sized(&newer_info.info, sizeof newer_info));
        CHECK(newer_info.appended == 0, "init left a newer header's field at %d", newer_info.appended);
        /* Sizes no compiler gives: one that cuts a field in two, and one never set. */
        const size_t odd_sizes[] = {sizeof d - 4, (size_t)1 << 20};
        for (int k = 0; k < 2; k++) {
            b = d;
            b.struct_size = odd_sizes[k];
            EXPECT_SCAN_ERROR("desc with an odd struct_size", ctx, s, in, out, SCANRT_DTYPE_U32, &b,
                              SCANRT_STATUS_INVALID_ARGUMENT);
        }
        /* A handle is NULL after a failure. */
        scanrt_multi_gpu *group = (scanrt_multi_gpu *)&b;
        EXPECT(scanrt_multi_gpu_create(NULL, 2, &group), SCANRT_STATUS_NULL_ARGUMENT);
        CHECK(group == NULL, "scanrt_multi_gpu_create left its handle set on error");
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
    EXPECT_SCAN_ERROR("u8 into f32", ctx, s, u8in, f32out, SCANRT_DTYPE_F32, &d,
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

int main(void) {
    int32_t backend;
    scanrt_context *ctx = open_auto_context("test_scan_errors", &backend);
    test_scan_errors(ctx, backend);
    also_on_the_host(backend, test_scan_errors);
    scanrt_context_destroy(ctx);
    return check_summary("test_scan_errors", backend_name(backend));
}
