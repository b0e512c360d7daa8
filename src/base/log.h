/* Logging: one entry point. With --log FILE --log-format json every line is
 * {"level":"...","msg":"...","time":"..."} (containerd and podman read it);
 * errors also go to stderr as "tern: msg". */
#pragma once

#include <stdbool.h>

typedef enum { TERN_LOG_DEBUG = 0, TERN_LOG_INFO, TERN_LOG_WARNING, TERN_LOG_ERROR } tern_log_level;

/* path may be NULL (no log file). format is "text" or "json".
 * Returns 0 or a negative errno. */
int tern_log_init(const char *path, const char *format, bool debug);

void tern_log(tern_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An error for the user: stderr (always) and the log file (if any). */
void tern_log_error_message(const char *msg);

/* The log file descriptor, or -1: children that must log after fork use it. */
int tern_log_fd(void);

/* Close the --log file: from then on warnings and errors go to stderr
 * only, debug and info nowhere. */
void tern_log_close(void);

#define tern_debug(...) tern_log(TERN_LOG_DEBUG, __VA_ARGS__)
#define tern_info(...)	tern_log(TERN_LOG_INFO, __VA_ARGS__)
#define tern_warn(...)	tern_log(TERN_LOG_WARNING, __VA_ARGS__)
