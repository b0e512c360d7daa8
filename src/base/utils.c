#include "utils.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void tern_freep(void *p)
{
	free(*(void **)p);
}

void tern_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
		*fd = -1;
	}
}

void tern_close_pairp(int (*fds)[2])
{
	tern_closep(&(*fds)[0]);
	tern_closep(&(*fds)[1]);
}

void tern_strv_freep(char ***strv)
{
	if (*strv == NULL)
		return;
	for (char **s = *strv; *s; s++)
		free(*s);
	free(*strv);
	*strv = NULL;
}

void tern_kill_childp(pid_t *pid)
{
	if (*pid > 0) {
		int saved = errno;
		kill(*pid, SIGKILL);
		while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR)
			;
		errno = saved;
		*pid = -1;
	}
}

static void oom(void)
{
	static const char msg[] = "tern: out of memory\n";
	(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
	abort();
}

char *tern_strdup_printf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		oom();
	va_end(ap);
	return s;
}

void *tern_xmalloc0(size_t size)
{
	void *p = calloc(1, size ? size : 1);
	if (p == NULL)
		oom();
	return p;
}

char *tern_xstrdup(const char *s)
{
	char *d;
	if (s == NULL)
		return NULL;
	d = strdup(s);
	if (d == NULL)
		oom();
	return d;
}

int tern_read_fd_all(int fd, char **out, size_t *len, size_t max)
{
	size_t cap = 4096, used = 0;
	char *buf;

	if (max == 0)
		max = 16 << 20;
	buf = malloc(cap + 1);
	if (buf == NULL)
		return -ENOMEM;
	for (;;) {
		if (used == cap) {
			if (cap >= max) {
				free(buf);
				return -EFBIG;
			}
			cap *= 2;
			char *n = realloc(buf, cap + 1);
			if (n == NULL) {
				free(buf);
				return -ENOMEM;
			}
			buf = n;
		}
		ssize_t r = read(fd, buf + used, cap - used);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			return -e;
		}
		if (r == 0)
			break;
		used += (size_t)r;
	}
	buf[used] = '\0';
	*out = buf;
	if (len)
		*len = used;
	return 0;
}

int tern_read_file(const char *path, char **out, size_t *len, size_t max, tern_error **err)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return tern_error_make(err, errno, "open `%s`", path);
	ret = tern_read_fd_all(fd, out, len, max);
	if (ret < 0)
		return tern_error_make(err, -ret, "read `%s`", path);
	return 0;
}

int tern_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int tern_read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len > 0) {
		ssize_t n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int tern_write_file(const char *path, const char *data, size_t len, mode_t mode, tern_error **err)
{
	cleanup_close int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	int ret;

	if (fd < 0)
		return tern_error_make(err, errno, "open `%s`", path);
	ret = tern_write_all(fd, data, len);
	if (ret < 0)
		return tern_error_make(err, -ret, "write `%s`", path);
	return 0;
}

int tern_write_file_at(int dirfd, const char *path, const char *data, size_t len, tern_error **err)
{
	cleanup_close int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return tern_error_make(err, errno, "open `%s`", path);
	ret = tern_write_all(fd, data, len);
	if (ret < 0)
		return tern_error_make(err, -ret, "write `%s`", path);
	return 0;
}

int tern_mkdir_p(const char *path, mode_t mode, tern_error **err)
{
	/* most often only the last component is missing: one mkdir */
	if (mkdir(path, mode) == 0 || errno == EEXIST)
		return 0;
	if (errno != ENOENT)
		return tern_error_make(err, errno, "mkdir `%s`", path);

	cleanup_free char *copy = tern_xstrdup(path);
	size_t len = strlen(copy);

	for (size_t i = 1; i <= len; i++) {
		if (copy[i] != '/' && copy[i] != '\0')
			continue;
		char saved = copy[i];
		copy[i] = '\0';
		if (mkdir(copy, mode) < 0 && errno != EEXIST)
			return tern_error_make(err, errno, "mkdir `%s`", copy);
		copy[i] = saved;
	}
	return 0;
}

char *tern_absolute_path(const char *path)
{
	cleanup_free char *joined = NULL;
	char cwd[4096];
	char *out, *w;
	const char *r;

	if (path[0] == '/') {
		joined = tern_xstrdup(path);
	} else {
		if (getcwd(cwd, sizeof(cwd)) == NULL)
			return NULL;
		joined = tern_strdup_printf("%s/%s", cwd, path);
	}
	/* Lexically clean: collapse //, drop ".", resolve ".." */
	out = tern_xmalloc0(strlen(joined) + 2);
	w = out;
	r = joined;
	while (*r) {
		while (*r == '/')
			r++;
		if (*r == '\0')
			break;
		const char *end = strchrnul(r, '/');
		size_t n = (size_t)(end - r);
		if (n == 1 && r[0] == '.') {
			/* skip */
		} else if (n == 2 && r[0] == '.' && r[1] == '.') {
			while (w > out && *(w - 1) != '/')
				w--;
			if (w > out)
				w--;
			*w = '\0';
		} else {
			*w++ = '/';
			memcpy(w, r, n);
			w += n;
			*w = '\0';
		}
		r = end;
	}
	if (w == out) {
		out[0] = '/';
		out[1] = '\0';
	}
	return out;
}

/* /proc/PID/stat from field 3 (the state) on: comm, field 2, may hold
 * spaces and parentheses, so the fields restart after the last ')'. NULL
 * when the process does not exist. */
static char *proc_stat_fields(pid_t pid, char *buf, size_t size)
{
	char path[64];
	cleanup_close int fd = -1;
	ssize_t n;
	char *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, size - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ' || p[2] == '\0')
		return NULL;
	return p + 2;
}

bool tern_process_is_zombie(pid_t pid)
{
	char buf[1024];
	const char *p = proc_stat_fields(pid, buf, sizeof(buf));
	return p == NULL || *p == 'Z' || *p == 'X';
}

void tern_remove_tree(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *e;

	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		else if (errno == ENOTDIR || errno == ELOOP)
			unlink(path); /* a file or a symlink: itself */
		return;
	}
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) < 0 && errno == EISDIR) {
			cleanup_free char *sub = tern_strdup_printf("%s/%s", path, e->d_name);
			tern_remove_tree(sub);
		}
	}
	closedir(d);
	rmdir(path);
}

bool tern_process_exe_id(pid_t pid, uint64_t *dev, uint64_t *ino)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &st) < 0)
		return false;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return true;
}

bool tern_process_is_exiting(pid_t pid)
{
	/* PF_EXITING (include/linux/sched.h): set as do_exit() begins. An
	 * init killed while a child of its pid namespace is still to be
	 * reaped stays there, neither alive nor yet a zombie. */
	const unsigned long pf_exiting = 0x4;
	char buf[1024];
	char *p = proc_stat_fields(pid, buf, sizeof(buf));

	if (p == NULL || *p == 'Z' || *p == 'X')
		return true;
	/* flags is field 9 */
	for (int field = 3; p; field++) {
		while (*p == ' ')
			p++;
		if (field == 9)
			return (strtoul(p, NULL, 10) & pf_exiting) != 0;
		p = strchr(p, ' ');
	}
	return false;
}

unsigned long long tern_process_start_time(pid_t pid)
{
	char buf[1024];
	char *p = proc_stat_fields(pid, buf, sizeof(buf));

	/* starttime is field 22; a zombie still has one, as callers want */
	for (int field = 3; p; field++) {
		while (*p == ' ')
			p++;
		if (field == 22)
			return strtoull(p, NULL, 10);
		p = strchr(p, ' ');
	}
	return 0;
}

bool tern_die_with_parent(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		return false;
	return getppid() == parent;
}

int tern_close_fds_from(int first, const int *keep, size_t nkeep)
{
	int from = first;
	/* Close the gaps between kept fds; keep[] need not be sorted. */
	for (;;) {
		int next_keep = -1;
		for (size_t i = 0; i < nkeep; i++)
			if (keep[i] >= from && (next_keep < 0 || keep[i] < next_keep))
				next_keep = keep[i];
		if (next_keep < 0) {
			if (syscall(SYS_close_range, from, ~0U, 0) < 0)
				return -errno;
			return 0;
		}
		if (next_keep > from && syscall(SYS_close_range, from, next_keep - 1, 0) < 0)
			return -errno;
		from = next_keep + 1;
	}
}

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

int tern_cloexec_fds_from(int first)
{
	if (syscall(SYS_close_range, first, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		return -errno;
	return 0;
}

/* The N of RTMIN+N or RTMAX-N: digits only, at most the number of real-time
 * signals less one (a larger N must not overflow the sum); -1 otherwise. */
static long rt_offset(const char *s)
{
	char *end;
	long n;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	n = strtol(s, &end, 10);
	if (errno || *end || n > SIGRTMAX - SIGRTMIN)
		return -1;
	return n;
}

int tern_parse_signal(const char *s)
{
	static const struct {
		const char *name;
		int sig;
	} table[] = {
	    {"HUP", SIGHUP},	   {"INT", SIGINT},   {"QUIT", SIGQUIT},     {"ILL", SIGILL},
	    {"TRAP", SIGTRAP},	   {"ABRT", SIGABRT}, {"IOT", SIGIOT},	     {"BUS", SIGBUS},
	    {"FPE", SIGFPE},	   {"KILL", SIGKILL}, {"USR1", SIGUSR1},     {"SEGV", SIGSEGV},
	    {"USR2", SIGUSR2},	   {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},     {"TERM", SIGTERM},
	    {"STKFLT", SIGSTKFLT}, {"CHLD", SIGCHLD}, {"CONT", SIGCONT},     {"STOP", SIGSTOP},
	    {"TSTP", SIGTSTP},	   {"TTIN", SIGTTIN}, {"TTOU", SIGTTOU},     {"URG", SIGURG},
	    {"XCPU", SIGXCPU},	   {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF},
	    {"WINCH", SIGWINCH},   {"IO", SIGIO},     {"POLL", SIGPOLL},     {"PWR", SIGPWR},
	    {"SYS", SIGSYS},
	};
	char *end;
	long n;

	if (s == NULL || *s == '\0')
		return -1;
	if (isdigit((unsigned char)s[0])) {
		errno = 0;
		n = strtol(s, &end, 10);
		/* 0 is kill(2)'s "is it alive?" probe: runc takes it too (but
		 * not "SIG0", nor does runc) */
		if (errno || *end || n < 0 || n > SIGRTMAX)
			return -1;
		return (int)n;
	}
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strcasecmp(s, table[i].name) == 0)
			return table[i].sig;
	/* RTMIN, RTMIN+N, RTMAX-N */
	if (strncasecmp(s, "RTMIN", 5) == 0) {
		if (s[5] == '\0')
			return SIGRTMIN;
		if (s[5] == '+' && (n = rt_offset(s + 6)) >= 0)
			return SIGRTMIN + (int)n;
	}
	if (strncasecmp(s, "RTMAX", 5) == 0) {
		if (s[5] == '\0')
			return SIGRTMAX;
		if (s[5] == '-' && (n = rt_offset(s + 6)) >= 0)
			return SIGRTMAX - (int)n;
	}
	return -1;
}

/* A kernel cpu/node list as cpuset.cpus and cpuset.mems take it: "0-3,5,7-8".
 * Empty is allowed (= not set). */
bool tern_valid_cpu_list(const char *s)
{
	const char *p = s;

	if (*p == '\0')
		return true;
	for (;;) {
		char *end;
		if (!isdigit((unsigned char)*p))
			return false;
		unsigned long a = strtoul(p, &end, 10);
		p = end;
		if (*p == '-') {
			p++;
			if (!isdigit((unsigned char)*p))
				return false;
			unsigned long b = strtoul(p, &end, 10);
			p = end;
			if (b < a)
				return false;
		}
		if (*p == '\0')
			return true;
		if (*p != ',')
			return false;
		p++;
	}
}

uint64_t tern_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void tern_stdio_to_log(const char *log)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	int logfd = log ? open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600) : -1;

	if (null >= 0)
		dup2(null, 0);
	if (logfd >= 0 || null >= 0) {
		dup2(logfd >= 0 ? logfd : null, 1);
		dup2(logfd >= 0 ? logfd : null, 2);
	}
	if (null > 2)
		close(null);
	if (logfd > 2)
		close(logfd);
}

char **tern_strv_add(char **strv, const char *s)
{
	size_t n = 0;
	char **out;

	while (strv && strv[n])
		n++;
	out = realloc(strv, (n + 2) * sizeof(char *));
	if (out == NULL)
		abort();
	out[n] = (char *)s;
	out[n + 1] = NULL;
	return out;
}
