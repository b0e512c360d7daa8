/* Small helpers shared by every stage: cleanup attributes, ownership
 * transfer, whole-file I/O. */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

void tern_freep(void *p);
void tern_closep(int *fd);
void tern_close_pairp(int (*fds)[2]);
void tern_strv_freep(char ***strv);
/* A NULL-terminated list that grows by one entry (abort()s without memory). */
char **tern_strv_add(char **strv, const char *s);
/* Kill (SIGKILL) and reap a child whose pid is still owned by this scope. */
void tern_kill_childp(pid_t *pid);

#define cleanup_free	   __attribute__((cleanup(tern_freep)))
#define cleanup_close	   __attribute__((cleanup(tern_closep)))
#define cleanup_close_pair __attribute__((cleanup(tern_close_pairp)))
#define cleanup_strv	   __attribute__((cleanup(tern_strv_freep)))
#define cleanup_child	   __attribute__((cleanup(tern_kill_childp)))

/* Take ownership out of a cleanup-managed variable. */
#define steal_pointer(pp)                                                                          \
	({                                                                                         \
		__typeof__(*(pp)) _v = *(pp);                                                      \
		*(pp) = NULL;                                                                      \
		_v;                                                                                \
	})
#define steal_fd(pfd)                                                                              \
	({                                                                                         \
		int _fd = *(pfd);                                                                  \
		*(pfd) = -1;                                                                       \
		_fd;                                                                               \
	})

/* asprintf that aborts on out-of-memory: callers need not check. */
char *tern_strdup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *tern_xmalloc0(size_t size);
char *tern_xstrdup(const char *s);

/* Read a whole file (at most `max` bytes; 0 = 16 MiB). Returns 0 or -errno. */
int tern_read_file(const char *path, char **out, size_t *len, size_t max, tern_error **err);
int tern_read_fd_all(int fd, char **out, size_t *len, size_t max);
/* Write a file completely (O_CLOEXEC|O_TRUNC|O_CREAT). */
int tern_write_file(const char *path, const char *data, size_t len, mode_t mode, tern_error **err);
/* Write to an already-existing file, e.g. in /proc or /sys. */
int tern_write_file_at(int dirfd, const char *path, const char *data, size_t len, tern_error **err);
int tern_write_all(int fd, const void *buf, size_t len);
int tern_read_all(int fd, void *buf, size_t len); /* 0, -errno, or -EPIPE on EOF */

/* mkdir -p on the host (not for paths inside a container rootfs). */
int tern_mkdir_p(const char *path, mode_t mode, tern_error **err);

/* Absolute, cleaned path of `path` relative to the cwd (no symlink resolution). */
char *tern_absolute_path(const char *path);

/* Field 22 of /proc/PID/stat (start time in clock ticks); 0 when the process
 * does not exist. */
unsigned long long tern_process_start_time(pid_t pid);

/* rm -r PATH, best effort: a directory tree, or a single file. A symlink
 * at PATH or below it is removed itself, never followed. */
void tern_remove_tree(const char *path);

/* The device and inode of the file PID runs (/proc/PID/exe); false when
 * that cannot be seen (no such process, no permission). */
bool tern_process_exe_id(pid_t pid, uint64_t *dev, uint64_t *ino);

/* Dead, or dead and not yet reaped by its parent (state Z or X): a
 * container whose init is a zombie has stopped, as runc sees it. */
bool tern_process_is_zombie(pid_t pid);
/* Gone, a zombie, or on its way out (in do_exit). */
bool tern_process_is_exiting(pid_t pid);

/* Close every fd >= first except those in keep[] (nkeep entries). Uses
 * close_range where possible. */
int tern_close_fds_from(int first, const int *keep, size_t nkeep);

/* A background helper's stdio: stdin from /dev/null, stdout and stderr
 * appended to `log` (/dev/null when NULL or when it cannot be opened). */
void tern_stdio_to_log(const char *log);

/* In a child just forked from parent: be sent SIGKILL when the parent
 * dies. False if it died already (between the fork and this call the
 * death signal could not be armed): the child must exit. */
bool tern_die_with_parent(pid_t parent);

/* CLOCK_MONOTONIC in nanoseconds, for durations. */
uint64_t tern_now_ns(void);
/* Mark every fd >= first close-on-exec. */
int tern_cloexec_fds_from(int first);

/* Parse a signal given as "KILL", "SIGKILL" or "9" (or "0": no signal, the
 * liveness probe of kill(2)). Returns the number or -1. */
int tern_parse_signal(const char *s);

/* "0-3,5,7-8", as cpuset.cpus/mems take it (empty allowed). */
bool tern_valid_cpu_list(const char *s);
