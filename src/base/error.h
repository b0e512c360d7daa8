/* Error chains.
 *
 * A function that can fail returns a negative errno and, as its last
 * argument, fills a tern_error that carries that errno and a message. A
 * caller that knows more prefixes context ("creating cgroup `/x`: ..."), so
 * the user reads the whole chain. Only the command layer prints. The
 * strerror text is always kept: podman maps "No such file or directory" and
 * "Permission denied" to exit codes 127 and 126.
 */
#pragma once

#include <stdarg.h>

typedef struct tern_error {
	int errnum; /* positive errno, 0 when there is none */
	char *msg;
} tern_error;

/* Set *err (if err is non-NULL) to a new error; with errnum != 0 the message
 * ends in ": strerror(errnum)". Returns -errnum, or -EINVAL when errnum is 0.
 * Any error already in *err is freed first. */
int tern_error_make(tern_error **err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like tern_error_make, but without the strerror suffix: for conditions
 * that are not a failed syscall ("container `x` does not exist") yet should
 * still carry an errno for callers to test. */
int tern_error_make_quiet(tern_error **err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like tern_error_make, but the message is taken as is. */
int tern_error_make_literal(tern_error **err, int errnum, const char *msg);

/* Prefix context to an existing error: "context: old message". Returns the
 * error's negative errno (-EINVAL if it had none). Safe when *err is NULL:
 * then it creates an error with just the context. */
int tern_error_wrap(tern_error **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void tern_error_free(tern_error *err);
void tern_error_freep(tern_error **err);
#define cleanup_error __attribute__((cleanup(tern_error_freep)))

/* Print "tern: message" (and log it). Returns a process exit code (1). */
int tern_error_report(tern_error *err);
