/* test_api: the global functions (version, strings, descriptor init, the log callback),
 * contexts (bad arguments included), preparing kernels, streams and buffers, through the
 * C ABI on the AUTO backend (the GPU where there is one, else the host) and on the host. */
#define _POSIX_C_SOURCE 200809L

#include "scanrt.h"

#define CHECK_FILE "test_api.c"
#include "check.h"
#include "scan_reference.h"

#include <stdatomic.h>

/* ------------------------------------------------------------------------------------ */
/* The global functions                                                                  */

static void test_version_and_strings(void) {
    g_phase = "version";
    uint32_t v = scanrt_version();
    CHECK(v == SCANRT_VERSION_MAJOR * 10000u + SCANRT_VERSION_MINOR * 100u + SCANRT_VERSION_PATCH,
          "scanrt_version() = %u but the header says %u.%u.%u", v, (unsigned)SCANRT_VERSION_MAJOR,
          (unsigned)SCANRT_VERSION_MINOR, (unsigned)SCANRT_VERSION_PATCH);

    g_phase = "status strings";
    const char *seen[SCANRT_STATUS_OUT_OF_MEMORY + 1];
    for (int s = SCANRT_STATUS_OK; s <= SCANRT_STATUS_OUT_OF_MEMORY; s++) {
        const char *str = scanrt_status_string((scanrt_status)s);
        CHECK(str != NULL, "scanrt_status_string(%d) is NULL", s);
        seen[s] = str ? str : "";
        CHECK(str && str[0] != '\0', "scanrt_status_string(%d) is empty", s);
        for (int t = 0; t < s; t++)
            CHECK(strcmp(seen[t], seen[s]) != 0, "statuses %d and %d share the string \"%s\"", t, s, seen[s]);
    }

    g_phase = "table names";
    for (int dt = 0; dt < NALL_DTYPES; dt++)
        CHECK(strcmp(scanrt_dtype_string(dt), dtype_names[dt]) == 0, "scanrt_dtype_string(%d) = \"%s\"", dt,
              scanrt_dtype_string(dt));
    CHECK(strcmp(scanrt_dtype_string(NALL_DTYPES), "unknown dtype") == 0, "scanrt_dtype_string(out of range)");
    for (int op = 0; op < NOPS; op++)
        CHECK(scanrt_op_string(op)[0] != '\0' && strcmp(scanrt_op_string(op), "unknown operator") != 0,
              "scanrt_op_string(%d)", op);
    CHECK(strcmp(scanrt_op_string(-1), "unknown operator") == 0, "scanrt_op_string(-1)");
    CHECK(strcmp(scanrt_algorithm_string(SCANRT_ALGORITHM_MATRIX), "matrix") == 0, "scanrt_algorithm_string(MATRIX)");

    g_phase = "last error message";
    CHECK(scanrt_last_error_message() != NULL, "scanrt_last_error_message() is NULL before any call");
    EXPECT(scanrt_scan_desc_init(NULL), SCANRT_STATUS_NULL_ARGUMENT);
    scanrt_scan_desc d;
    EXPECT_OK(scanrt_scan_desc_init(&d)); /* clears the message again */
}

static void test_desc_init(void) {
    g_phase = "scan_desc_init";
    scanrt_scan_desc d;
    memset(&d, 0x5A, sizeof d);
    EXPECT_OK(scanrt_scan_desc_init(&d));
    CHECK(d.op == SCANRT_OP_SUM, "default op %d", d.op);
    CHECK(d.inclusive != 0, "default is not inclusive");
    CHECK(d.has_init == 0, "default has_init %d", d.has_init);
    CHECK(d.algorithm == SCANRT_ALGORITHM_AUTO, "default algorithm %d", d.algorithm);
    CHECK(d.direction == SCANRT_DIRECTION_FORWARD, "default direction %d", d.direction);
    CHECK(d.deterministic == 0, "default deterministic %d", d.deterministic);
    CHECK(d.segments == SCANRT_SEGMENTS_NONE, "default segments %d", d.segments);
    CHECK(d.segment_data == NULL, "default segment_data is not NULL");
    EXPECT(scanrt_scan_desc_init(NULL), SCANRT_STATUS_NULL_ARGUMENT);
}

/* Context creation, including bad arguments; returns the AUTO context. */
static scanrt_context *test_context_create(void) {
    g_phase = "context_create";
    scanrt_context *c = (scanrt_context *)&c; /* failures must set it to NULL */
    EXPECT(scanrt_context_create(SCANRT_BACKEND_AUTO, 0, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_context_create(3, 0, &c), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_context_create(-1, 0, &c), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_context_create(1000, 0, &c), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_context_create(SCANRT_BACKEND_HOST, -1, &c), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_context_create(SCANRT_BACKEND_AUTO, -5, &c), SCANRT_STATUS_INVALID_ARGUMENT);
    CHECK(c == NULL, "a failed scanrt_context_create left its out parameter non-NULL");
    c = (scanrt_context *)&c;
    EXPECT(scanrt_context_create(1000, 0, &c), SCANRT_STATUS_INVALID_ARGUMENT);
    CHECK(c == NULL, "a failed scanrt_context_create left its out parameter non-NULL");
    CHECK(strlen(scanrt_context_backend_reason(NULL)) == 0, "the reason of a NULL context is not empty");

    scanrt_context *ctx = NULL;
    EXPECT_OK(scanrt_context_create(SCANRT_BACKEND_AUTO, 0, &ctx));
    CHECK(ctx != NULL, "scanrt_context_create(AUTO) gave NULL");
    if (!ctx) {
        fprintf(stderr, "test_ffi: no context; giving up\n");
        exit(1);
    }
    int32_t backend = -1;
    EXPECT(scanrt_context_backend(NULL, &backend), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_context_backend(ctx, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT_OK(scanrt_context_backend(ctx, &backend));
    CHECK(backend == SCANRT_BACKEND_GPU || backend == SCANRT_BACKEND_HOST,
          "scanrt_context_backend reported %d", backend);

    /* A GPU context: fails without a GPU exactly when AUTO fell back to the host. */
    scanrt_context *gpu = NULL;
    scanrt_status st = scanrt_context_create(SCANRT_BACKEND_GPU, 0, &gpu);
    if (backend == SCANRT_BACKEND_GPU) {
        expect_status_at(__LINE__, "scanrt_context_create(GPU, 0)", st, SCANRT_STATUS_OK);
        int32_t b2 = -1;
        EXPECT_OK(scanrt_context_backend(gpu, &b2));
        CHECK(b2 == SCANRT_BACKEND_GPU, "GPU context reports backend %d", b2);
        scanrt_context *none = NULL;
        EXPECT(scanrt_context_create(SCANRT_BACKEND_GPU, 4096, &none), SCANRT_STATUS_NO_DEVICE);
        CHECK(none == NULL, "failed context creation wrote its out parameter");
    } else {
        atomic_fetch_add(&g_checks, 1);
        if (st != SCANRT_STATUS_NO_DRIVER && st != SCANRT_STATUS_NO_DEVICE)
            fail_at(__LINE__, "scanrt_context_create(GPU) without a GPU returned %s, expected NO_DRIVER or NO_DEVICE",
                    scanrt_status_string(st));
        else
            expect_status_at(__LINE__, "scanrt_context_create(GPU) without a GPU", st, st);
    }
    scanrt_context_destroy(gpu);

    scanrt_context *host = NULL;
    EXPECT_OK(scanrt_context_create(SCANRT_BACKEND_HOST, 0, &host));
    int32_t b3 = -1;
    EXPECT_OK(scanrt_context_backend(host, &b3));
    CHECK(b3 == SCANRT_BACKEND_HOST, "host context reports backend %d", b3);
    /* The device ordinal is ignored by the host backend. */
    scanrt_context *host7 = NULL;
    EXPECT_OK(scanrt_context_create(SCANRT_BACKEND_HOST, 7, &host7));
    scanrt_context_destroy(host7);
    scanrt_context_destroy(host);
    scanrt_context_destroy(NULL); /* no-op */
    return ctx;
}

/* The log callback: what scanrt logs reaches the application, with its pointer, and
   stops when the callback is removed. */
static atomic_int g_log_lines, g_log_context_lines, g_log_kernel_lines, g_log_bad_calls;

static void count_log(void *user, int32_t level, const char *target, const char *message) {
    if (user == NULL || *(const int *)user != 42 || level < SCANRT_LOG_ERROR || level > SCANRT_LOG_DEBUG ||
        strncmp(target, "scanrt", 6) != 0 || message[0] == '\0')
        atomic_fetch_add(&g_log_bad_calls, 1);
    atomic_fetch_add(&g_log_lines, 1);
    if (strstr(message, "context: ")) atomic_fetch_add(&g_log_context_lines, 1);
    if (strstr(message, "compiled ") || strstr(message, "kernel cache hit") || strstr(message, "kernel pack hit"))
        atomic_fetch_add(&g_log_kernel_lines, 1);
}

static void test_log_callback(void) {
    g_phase = "log callback";
    static int tag = 42;
    EXPECT(scanrt_set_log_callback(count_log, &tag, 6), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_set_log_callback(count_log, &tag, -1), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT_OK(scanrt_set_log_callback(count_log, &tag, SCANRT_LOG_DEBUG));
    scanrt_context *ctx = NULL;
    EXPECT_OK(scanrt_context_create(SCANRT_BACKEND_AUTO, 0, &ctx));
    CHECK(atomic_load(&g_log_context_lines) == 1, "context creation logged %d lines", atomic_load(&g_log_context_lines));
    int32_t backend = -1;
    EXPECT_OK(scanrt_context_backend(ctx, &backend));
    if (backend == SCANRT_BACKEND_GPU) {
        EXPECT_OK(scanrt_context_prepare(ctx, SCANRT_DTYPE_U32, SCANRT_DTYPE_U32, SCANRT_OP_SUM));
        CHECK(atomic_load(&g_log_kernel_lines) >= 1, "no kernel compile, cache hit or pack hit was logged");
    }
    scanrt_context_destroy(ctx);
    CHECK(atomic_load(&g_log_bad_calls) == 0, "%d log calls had a wrong argument", atomic_load(&g_log_bad_calls));
    EXPECT_OK(scanrt_set_log_callback(NULL, NULL, SCANRT_LOG_OFF));
    int before = atomic_load(&g_log_lines);
    EXPECT_OK(scanrt_context_create(SCANRT_BACKEND_HOST, 0, &ctx));
    scanrt_context_destroy(ctx);
    CHECK(atomic_load(&g_log_lines) == before, "logging went on after the callback was removed");
    CHECK(strcmp(scanrt_log_level_string(SCANRT_LOG_INFO), "info") == 0, "log level name");
    CHECK(strcmp(scanrt_log_level_string(9), "unknown log level") == 0, "unknown log level name");
    printf("test_ffi: the log callback received %d lines\n", before);
}

static void test_prepare(scanrt_context *ctx) {
    g_phase = "context_prepare";
    EXPECT(scanrt_context_prepare(NULL, SCANRT_DTYPE_U32, SCANRT_DTYPE_U32, SCANRT_OP_SUM),
           SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_context_prepare(ctx, NALL_DTYPES, SCANRT_DTYPE_U32, SCANRT_OP_SUM), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT_OK(scanrt_context_prepare(ctx, SCANRT_DTYPE_I16, SCANRT_DTYPE_I64, SCANRT_OP_SUM));
    EXPECT_OK(scanrt_context_prepare(ctx, SCANRT_DTYPE_I8, SCANRT_DTYPE_I8, SCANRT_OP_MAX)); /* in 32 bits, narrowed */
    EXPECT(scanrt_context_prepare(ctx, SCANRT_DTYPE_I16, SCANRT_DTYPE_U32, SCANRT_OP_SUM), SCANRT_STATUS_UNSUPPORTED_COMBINATION);
    EXPECT(scanrt_context_prepare(ctx, SCANRT_DTYPE_U32, -1, SCANRT_OP_SUM), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_context_prepare(ctx, SCANRT_DTYPE_U32, SCANRT_DTYPE_U32, 7), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_context_prepare(ctx, SCANRT_DTYPE_U32, SCANRT_DTYPE_U32, -1), SCANRT_STATUS_INVALID_ARGUMENT);
    /* Every type pair and operator: OK exactly for the supported combinations. */
    for (int in = 0; in < NDTYPES; in++)
        for (int out = 0; out < NDTYPES; out++)
            for (int op = 0; op < NOPS; op++) {
                int ok = (pair_supported(in, out) || narrowed_supported(in, out)) && !(is_bitwise(op) && is_float(out));
                scanrt_status want = ok ? SCANRT_STATUS_OK : SCANRT_STATUS_UNSUPPORTED_COMBINATION;
                char what[96];
                snprintf(what, sizeof what, "scanrt_context_prepare(%s -> %s, %s)", dtype_names[in],
                         dtype_names[out], op_names[op]);
                expect_status_at(__LINE__, what, scanrt_context_prepare(ctx, in, out, op), want);
            }
}

static void test_streams(scanrt_context *ctx, int backend) {
    g_phase = "streams";
    scanrt_stream *s = NULL;
    EXPECT(scanrt_stream_create(NULL, &s), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_stream_create(ctx, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT_OK(scanrt_stream_create(ctx, &s));
    CHECK(s != NULL, "scanrt_stream_create gave NULL");
    EXPECT_OK(scanrt_stream_synchronize(s));
    EXPECT(scanrt_stream_synchronize(NULL), SCANRT_STATUS_NULL_ARGUMENT);
    scanrt_stream_destroy(s);
    scanrt_stream_destroy(NULL); /* no-op */

    scanrt_stream *w = NULL;
    EXPECT(scanrt_stream_wrap(NULL, NULL, &w), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_stream_wrap(ctx, NULL, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    if (backend == SCANRT_BACKEND_GPU) {
        EXPECT_OK(scanrt_stream_wrap(ctx, NULL, &w)); /* the legacy default stream */
        EXPECT_OK(scanrt_stream_synchronize(w));
        scanrt_stream_destroy(w);
    } else {
        EXPECT(scanrt_stream_wrap(ctx, NULL, &w), SCANRT_STATUS_WRONG_BACKEND);
        CHECK(w == NULL, "failed scanrt_stream_wrap wrote its out parameter");
    }
}

static void test_buffers(scanrt_context *ctx, int backend) {
    g_phase = "buffers";
    scanrt_stream *s = NULL;
    EXPECT_OK(scanrt_stream_create(ctx, &s));
    scanrt_buffer *b = NULL;
    EXPECT(scanrt_buffer_create(NULL, SCANRT_DTYPE_U32, 4, &b), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_create(ctx, SCANRT_DTYPE_U32, 4, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_create(ctx, NALL_DTYPES, 4, &b), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_buffer_create(ctx, -1, 4, &b), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT(scanrt_buffer_create(ctx, SCANRT_DTYPE_U64, UINT64_C(1) << 62, &b), SCANRT_STATUS_LENGTH_OVERFLOW);
    EXPECT(scanrt_buffer_create(ctx, SCANRT_DTYPE_U8, UINT64_MAX, &b), SCANRT_STATUS_LENGTH_OVERFLOW);
    CHECK(b == NULL, "a failed scanrt_buffer_create wrote its out parameter");

    /* Every dtype: create, length, upload, download round trip, pointer. */
    for (int dt = 0; dt < NALL_DTYPES; dt++) {
        const uint64_t n = 1000;
        size_t bytes = (size_t)n * dtype_size(dt);
        scanrt_buffer *buf = make_buffer(ctx, dt, n);
        if (!buf) continue;
        uint64_t len = 0;
        EXPECT_OK(scanrt_buffer_length(buf, &len));
        CHECK(len == n, "%s buffer length %llu", dtype_names[dt], (unsigned long long)len);
        uint8_t *src = xmalloc(bytes), *dst = xmalloc(bytes);
        for (size_t i = 0; i < bytes; i++) src[i] = (uint8_t)(i * 7 + (size_t)dt);
        memset(dst, 0, bytes);
        EXPECT_OK(scanrt_buffer_upload(buf, s, src, n));
        EXPECT_OK(scanrt_buffer_download(buf, s, dst, n));
        CHECK(memcmp(src, dst, bytes) == 0, "%s buffer round trip differs", dtype_names[dt]);
        /* Partial copies touch only the first n elements. */
        memset(dst, 0, bytes);
        EXPECT_OK(scanrt_buffer_download(buf, s, dst, 10));
        CHECK(memcmp(src, dst, 10 * dtype_size(dt)) == 0 && dst[10 * dtype_size(dt)] == 0,
              "%s partial download", dtype_names[dt]);

        void *p = NULL;
        EXPECT_OK(scanrt_buffer_pointer(buf, &p));
        CHECK(p != NULL, "%s buffer pointer is NULL", dtype_names[dt]);
        if (backend == SCANRT_BACKEND_HOST && p != NULL)
            CHECK(memcmp(p, src, bytes) == 0, "host buffer pointer does not address the buffer's data");
        free(src);
        free(dst);
        scanrt_buffer_destroy(buf);
    }
    scanrt_buffer_destroy(NULL); /* no-op */

    /* Zero-length buffers. */
    scanrt_buffer *z = make_buffer(ctx, SCANRT_DTYPE_F64, 0);
    uint64_t zl = 99;
    EXPECT_OK(scanrt_buffer_length(z, &zl));
    CHECK(zl == 0, "empty buffer length %llu", (unsigned long long)zl);
    EXPECT_OK(scanrt_buffer_upload(z, s, NULL, 0));
    EXPECT_OK(scanrt_buffer_download(z, s, NULL, 0));
    scanrt_buffer_destroy(z);

    /* Bad copies. */
    scanrt_buffer *buf = make_buffer(ctx, SCANRT_DTYPE_I32, 16);
    int32_t host[32] = {0};
    uint64_t len = 0;
    void *ptr = NULL;
    EXPECT(scanrt_buffer_upload(NULL, s, host, 4), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_upload(buf, NULL, host, 4), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_upload(buf, s, NULL, 4), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_upload(buf, s, host, 17), SCANRT_STATUS_BUFFER_TOO_SMALL);
    EXPECT(scanrt_buffer_download(NULL, s, host, 4), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_download(buf, NULL, host, 4), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_download(buf, s, NULL, 4), SCANRT_STATUS_NULL_ARGUMENT);
    memset(host, 0x11, sizeof host);
    EXPECT(scanrt_buffer_download(buf, s, host, 32), SCANRT_STATUS_BUFFER_TOO_SMALL);
    CHECK(host[0] == 0x11111111 && host[31] == 0x11111111, "a failed download wrote to host memory");
    EXPECT(scanrt_buffer_length(NULL, &len), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_length(buf, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    int32_t dtype = -1;
    EXPECT(scanrt_buffer_dtype(NULL, &dtype), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_dtype(buf, NULL), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT_OK(scanrt_buffer_dtype(buf, &dtype));
    CHECK(dtype == SCANRT_DTYPE_I32, "scanrt_buffer_dtype reported %d for an i32 buffer", dtype);
    EXPECT(scanrt_buffer_pointer(NULL, &ptr), SCANRT_STATUS_NULL_ARGUMENT);
    EXPECT(scanrt_buffer_pointer(buf, NULL), SCANRT_STATUS_NULL_ARGUMENT);

    /* Buffers and streams outlive their context. */
    scanrt_context *c2 = NULL;
    EXPECT_OK(scanrt_context_create(backend, 0, &c2));
    scanrt_stream *s2 = NULL;
    EXPECT_OK(scanrt_stream_create(c2, &s2));
    scanrt_buffer *b2 = make_buffer(c2, SCANRT_DTYPE_U64, 64);
    scanrt_context_destroy(c2);
    uint64_t in64[64], out64[64];
    for (int i = 0; i < 64; i++) in64[i] = (uint64_t)i * 0x0101010101010101ull;
    memset(out64, 0, sizeof out64);
    EXPECT_OK(scanrt_buffer_upload(b2, s2, in64, 64));
    EXPECT_OK(scanrt_buffer_download(b2, s2, out64, 64));
    CHECK(memcmp(in64, out64, sizeof in64) == 0, "round trip after scanrt_context_destroy differs");
    EXPECT_OK(scanrt_stream_synchronize(s2));
    scanrt_buffer_destroy(b2);
    scanrt_stream_destroy(s2);

    scanrt_buffer_destroy(buf);
    scanrt_stream_destroy(s);
}

/* ------------------------------------------------------------------------------------ */
/* Scans through buffers                                                                 */

static void host_api(scanrt_context *ctx, int32_t backend) {
    test_streams(ctx, backend);
    test_buffers(ctx, backend);
}

/* Pack directories: NULL and "" refused with their statuses, a directory taken. */
static void test_kernel_pack_dirs(void) {
    EXPECT(scanrt_add_kernel_pack_dir(NULL), SCANRT_STATUS_NULL_ARGUMENT);
    CHECK(strstr(scanrt_last_error_message(), "path") != NULL, "the NULL path's message: \"%s\"",
          scanrt_last_error_message());
    EXPECT(scanrt_add_kernel_pack_dir(""), SCANRT_STATUS_INVALID_ARGUMENT);
    EXPECT_OK(scanrt_add_kernel_pack_dir("."));
    EXPECT_OK(scanrt_add_kernel_pack_dir("."));
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    test_version_and_strings();
    test_kernel_pack_dirs();
    test_desc_init();
    test_log_callback();
    scanrt_context *ctx = test_context_create();
    int32_t backend = -1;
    EXPECT_OK(scanrt_context_backend(ctx, &backend));
    printf("test_api: SCANRT_BACKEND_AUTO gave the %s backend (%s)\n", backend_name(backend),
           scanrt_context_backend_reason(ctx));
    test_prepare(ctx);
    test_streams(ctx, backend);
    test_buffers(ctx, backend);
    also_on_the_host(backend, host_api);
    scanrt_context_destroy(ctx);
    return check_summary("test_api", backend_name(backend));
}
