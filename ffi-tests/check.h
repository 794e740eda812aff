/* Check bookkeeping shared by the C harnesses: counted checks, failures printed with the
 * line, and status checks that also require scanrt_last_error_message() to be "" after a
 * success and an explanation after a failure. Define CHECK_FILE (the file name printed)
 * before including it. */
#ifndef SCANRT_FFI_CHECK_H
#define SCANRT_FFI_CHECK_H

#include "scanrt.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

static atomic_long g_checks;
static atomic_long g_failures;
static const char *g_phase = "setup";

static void fail_at(int line, const char *fmt, ...) {
    long f = atomic_fetch_add(&g_failures, 1) + 1;
    if (f <= 200) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "FAIL [%s] " CHECK_FILE ":%d: ", g_phase, line);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    } else if (f == 201) {
        fprintf(stderr, "(further failures not printed)\n");
    }
}

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        atomic_fetch_add(&g_checks, 1);                                                  \
        if (!(cond)) fail_at(__LINE__, __VA_ARGS__);                                     \
    } while (0)

/* Checks a status and the thread's last error message: "" after success, a non-empty
 * explanation after a failure. */
static int expect_status_at(int line, const char *what, scanrt_status got, scanrt_status want) {
    const char *msg = scanrt_last_error_message();
    atomic_fetch_add(&g_checks, 1);
    if (got != want) {
        fail_at(line, "%s returned %s (%d), expected %s; message: \"%s\"", what, scanrt_status_string(got),
                (int)got, scanrt_status_string(want), msg ? msg : "(NULL)");
        return 0;
    }
    atomic_fetch_add(&g_checks, 1);
    if (msg == NULL) {
        fail_at(line, "%s: scanrt_last_error_message() returned NULL", what);
        return 0;
    }
    if (want == SCANRT_STATUS_OK && msg[0] != '\0') {
        fail_at(line, "%s succeeded but the last error message is \"%s\", expected \"\"", what, msg);
        return 0;
    }
    if (want != SCANRT_STATUS_OK && msg[0] == '\0') {
        fail_at(line, "%s failed with %s but the last error message is empty", what, scanrt_status_string(got));
        return 0;
    }
    return 1;
}
#define EXPECT(call, want) expect_status_at(__LINE__, #call, (call), (want))
#define EXPECT_OK(call) EXPECT(call, SCANRT_STATUS_OK)

/* Prints the summary line; the exit status of the program. */
static int check_summary(const char *program, const char *backend) {
    long checks = atomic_load(&g_checks), failures = atomic_load(&g_failures);
    if (failures) {
        printf("%s: %ld of %ld checks FAILED (backend: %s)\n", program, failures, checks, backend);
        return 1;
    }
    printf("%s: %ld checks passed (backend: %s)\n", program, checks, backend);
    return 0;
}

#endif
