#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>

static int log_fd = -1;
static bool log_json;
static bool log_debug;

int tern_log_init(const char *path, const char *format, bool debug)
{
	log_debug = debug;
	if (format != NULL) {
		if (strcmp(format, "json") == 0)
			log_json = true;
		else if (strcmp(format, "text") == 0)
			log_json = false;
		else
			return -EINVAL;
	}
	if (path != NULL && *path != '\0') {
		int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return -errno;
		log_fd = fd;
	}
	return 0;
}

int tern_log_fd(void)
{
	return log_fd;
}

void tern_log_close(void)
{
	if (log_fd < 0)
		return;
	close(log_fd);
	log_fd = -1;
	/* debug and info went to the file: they are not to turn up on stderr
	 * (the container's, in the init) now */
	log_debug = false;
}

static const char *level_name(tern_log_level level)
{
	switch (level) {
	case TERN_LOG_DEBUG:
		return "debug";
	case TERN_LOG_INFO:
		return "info";
	case TERN_LOG_WARNING:
		return "warning";
	default:
		return "error";
	}
}

static void timestamp(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;
	char base[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, size, "%s.%09ldZ", base, ts.tv_nsec);
}

static void write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

static void write_json_line(int fd, const char *level, const char *msg)
{
	yajl_gen g = yajl_gen_alloc(NULL);
	const unsigned char *buf;
	size_t len;
	char ts[64];

	if (g == NULL)
		return;
	timestamp(ts, sizeof(ts));
	yajl_gen_map_open(g);
	yajl_gen_string(g, (const unsigned char *)"level", 5);
	yajl_gen_string(g, (const unsigned char *)level, strlen(level));
	yajl_gen_string(g, (const unsigned char *)"msg", 3);
	yajl_gen_string(g, (const unsigned char *)msg, strlen(msg));
	yajl_gen_string(g, (const unsigned char *)"time", 4);
	yajl_gen_string(g, (const unsigned char *)ts, strlen(ts));
	yajl_gen_map_close(g);
	if (yajl_gen_get_buf(g, &buf, &len) == yajl_gen_status_ok) {
		char *line = malloc(len + 1);
		if (line != NULL) {
			memcpy(line, buf, len);
			line[len] = '\n';
			write_all(fd, line, len + 1);
			free(line);
		}
	}
	yajl_gen_free(g);
}

static void emit(tern_log_level level, const char *msg, bool to_stderr)
{
	const char *name = level_name(level);

	if (log_fd >= 0) {
		if (log_json) {
			write_json_line(log_fd, name, msg);
		} else {
			char ts[64];
			char *line = NULL;
			timestamp(ts, sizeof(ts));
			int n = asprintf(&line, "time=\"%s\" level=%s msg=\"%s\"\n", ts, name, msg);
			if (n > 0)
				write_all(log_fd, line, (size_t)n);
			free(line);
		}
	}
	if (to_stderr) {
		char *line = NULL;
		int n;
		if (level == TERN_LOG_ERROR)
			n = asprintf(&line, "tern: %s\n", msg);
		else
			n = asprintf(&line, "tern: %s: %s\n", name, msg);
		if (n > 0)
			write_all(STDERR_FILENO, line, (size_t)n);
		free(line);
	}
}

void tern_log(tern_log_level level, const char *fmt, ...)
{
	va_list ap;
	char *msg = NULL;
	int saved = errno;

	if (level == TERN_LOG_DEBUG && !log_debug)
		return;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	if (msg == NULL)
		return;
	/* Warnings and errors reach the user even without a log file; debug and
	 * info only go to stderr when there is no log file and --debug is on. */
	bool to_stderr = level >= TERN_LOG_WARNING || (log_fd < 0 && log_debug);
	emit(level, msg, to_stderr);
	free(msg);
	errno = saved;
}

void tern_log_error_message(const char *msg)
{
	emit(TERN_LOG_ERROR, msg, true);
}
