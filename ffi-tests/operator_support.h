/* What the operator harnesses share: random numbers, buffers guarded by sentinels, the
 * traversal and segment heads of a sequential loop, and the shapes (direction, segment
 * form) of a case. Include after check.h (its CHECK macros). */
#ifndef SCANRT_FFI_OPERATOR_SUPPORT_H
#define SCANRT_FFI_OPERATOR_SUPPORT_H

#include "scanrt.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------ */
/* Helpers                                                                               */

static inline uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* Uniform in [lo, hi]. */
static inline double uniform(uint64_t *rng, double lo, double hi) {
    return lo + (hi - lo) * (double)(splitmix64(rng) >> 11) / (double)(1ull << 53);
}

static inline void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "test_operators: out of host memory\n");
        exit(2);
    }
    return p;
}

static __attribute__((unused)) const uint8_t SENTINEL = 0xA5;

static inline scanrt_buffer *upload(scanrt_context *ctx, scanrt_stream *s, int dtype, const void *data, uint64_t n) {
    scanrt_buffer *b = NULL;
    if (!EXPECT_OK(scanrt_buffer_create(ctx, dtype, n, &b))) return NULL;
    EXPECT_OK(scanrt_buffer_upload(b, s, data, n));
    return b;
}
/* A buffer of `bytes` sentinel bytes viewed as `n` elements of `dtype`. */
static inline scanrt_buffer *sentinel_buffer(scanrt_context *ctx, scanrt_stream *s, int dtype, uint64_t n, size_t bytes) {
    void *fill = xmalloc(bytes);
    memset(fill, SENTINEL, bytes);
    scanrt_buffer *b = upload(ctx, s, dtype, fill, n);
    free(fill);
    return b;
}
static inline void download(scanrt_buffer *b, scanrt_stream *s, void *out, uint64_t n) {
    EXPECT_OK(scanrt_buffer_download(b, s, out, n));
}
static inline int untouched(scanrt_buffer *b, scanrt_stream *s, uint64_t n, size_t bytes) {
    uint8_t *host = xmalloc(bytes);
    download(b, s, host, n);
    int same = 1;
    for (size_t i = 0; i < bytes; i++) same &= host[i] == SENTINEL;
    free(host);
    return same;
}

/* The traversal position of step k (forward or backward). */
static inline size_t position(size_t k, size_t n, int backward) { return backward ? n - 1 - k : k; }
/* Whether position p starts a segment: flags (forward: flag at p; backward: flag at p+1),
 * rows of `row` elements, or neither. */
static inline int restarts(size_t p, size_t n, int backward, const uint8_t *flags, uint64_t row) {
    if (row) return backward ? (p + 1) % row == 0 || p == n - 1 : p % row == 0;
    if (!flags) return 0;
    return backward ? p == n - 1 || flags[p + 1] : p == 0 || flags[p];
}

/* ------------------------------------------------------------------------------------ */
/* Recipes                                                                               */

typedef struct {
    scanrt_context *ctx;
    scanrt_stream *s;
    int backend;
} env_t;

/* Segments of a case: none, head flags (one byte per element) or rows. */
enum { SEG_NONE, SEG_FLAGS, SEG_ROWS };

typedef struct {
    size_t n;
    int backward, segments;
    uint64_t row;
    uint8_t *flags; /* SEG_FLAGS */
} shape_t;

static inline shape_t make_shape(uint64_t *rng, size_t n, int backward, int segments) {
    shape_t sh = {n, backward, segments, 0, NULL};
    if (segments == SEG_ROWS) sh.row = 1 + splitmix64(rng) % (n < 3000 ? n : 3000);
    if (segments == SEG_FLAGS) {
        sh.flags = xmalloc(n);
        for (size_t i = 0; i < n; i++) sh.flags[i] = splitmix64(rng) % 97 == 0;
    }
    return sh;
}

/* The scan descriptor of a shape; the flags go in `flag_buffer`. */
static inline scanrt_scan_desc shape_desc(env_t *e, const shape_t *sh, scanrt_buffer **flag_buffer) {
    scanrt_scan_desc d;
    EXPECT_OK(scanrt_scan_desc_init(&d));
    d.direction = sh->backward ? SCANRT_DIRECTION_BACKWARD : SCANRT_DIRECTION_FORWARD;
    *flag_buffer = NULL;
    if (sh->segments == SEG_ROWS) {
        d.segments = SCANRT_SEGMENTS_ROWS;
        d.row_length = sh->row;
    } else if (sh->segments == SEG_FLAGS) {
        d.segments = SCANRT_SEGMENTS_BYTE_FLAGS;
        *flag_buffer = upload(e->ctx, e->s, SCANRT_DTYPE_U8, sh->flags, sh->n);
        if (*flag_buffer) EXPECT_OK(scanrt_buffer_pointer(*flag_buffer, (void **)&d.segment_data));
    }
    return d;
}


/* Runs `run` on the AUTO context and, on a GPU machine, on a host context too; returns
 * the summary's exit status. */
static inline int run_on_every_backend(const char *program, void (*run)(scanrt_context *, int)) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    scanrt_context *ctx = NULL;
    if (!EXPECT_OK(scanrt_context_create(SCANRT_BACKEND_AUTO, 0, &ctx))) return 1;
    int32_t backend = -1;
    EXPECT_OK(scanrt_context_backend(ctx, &backend));
    const char *name = backend == SCANRT_BACKEND_GPU ? "gpu" : "host";
    run(ctx, backend);
    if (backend == SCANRT_BACKEND_GPU) {
        scanrt_context *host = NULL;
        if (EXPECT_OK(scanrt_context_create(SCANRT_BACKEND_HOST, 0, &host))) run(host, SCANRT_BACKEND_HOST);
        scanrt_context_destroy(host);
    }
    scanrt_context_destroy(ctx);
    return check_summary(program, name);
}

#endif
