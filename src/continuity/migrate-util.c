/* tern-migrate's small shared pieces: modes, progress events, the JSON of
 * messages. */
#include "migrate.h"
#include "log.h"
#include "utils.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const mode_names[] = {
    [TERN_MIG_AUTO] = "auto",
    [TERN_MIG_PRE_COPY] = "pre-copy",
    [TERN_MIG_POST_COPY] = "post-copy",
    [TERN_MIG_STOP_AND_COPY] = "stop-and-copy",
};

const char *tern_mig_mode_name(tern_mig_mode m)
{
	return mode_names[m];
}

int tern_mig_mode_parse(const char *s, tern_mig_mode *m)
{
	for (size_t i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
		if (s && strcmp(s, mode_names[i]) == 0) {
			*m = (tern_mig_mode)i;
			return 0;
		}
	return -EINVAL;
}

uint64_t tern_mig_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void tern_mig_progress_init(tern_mig_progress *p, const char *side, bool json)
{
	p->json = json;
	p->side = side;
	p->t0_ns = tern_mig_now_ns();
}

/* ---- JSON writer ---- */

static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(f, "\\%c", *c);
		else if (*c == '\n')
			fputs("\\n", f);
		else if (*c < 0x20)
			fprintf(f, "\\u%04x", *c);
		else
			fputc(*c, f);
	}
	fputc('"', f);
}

void tern_jw_begin(tern_jw *w)
{
	w->buf = NULL;
	w->len = 0;
	w->f = open_memstream(&w->buf, &w->len);
	if (w->f == NULL)
		abort();
	w->first = true;
	fputc('{', w->f);
}

static void key(tern_jw *w, const char *k)
{
	if (!w->first)
		fputc(',', w->f);
	w->first = false;
	put_string(w->f, k);
	fputc(':', w->f);
}

void tern_jw_str(tern_jw *w, const char *k, const char *value)
{
	key(w, k);
	put_string(w->f, value ? value : "");
}

void tern_jw_u64(tern_jw *w, const char *k, uint64_t value)
{
	key(w, k);
	fprintf(w->f, "%llu", (unsigned long long)value);
}

void tern_jw_bool(tern_jw *w, const char *k, bool value)
{
	key(w, k);
	fputs(value ? "true" : "false", w->f);
}

void tern_jw_strv(tern_jw *w, const char *k, char *const *values, size_t n)
{
	key(w, k);
	fputc('[', w->f);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', w->f);
		put_string(w->f, values[i]);
	}
	fputc(']', w->f);
}

void tern_jw_null(tern_jw *w, const char *k)
{
	key(w, k);
	fputs("null", w->f);
}

char *tern_jw_end(tern_jw *w)
{
	fputc('}', w->f);
	fclose(w->f);
	w->f = NULL;
	return w->buf;
}

void tern_mig_event(tern_mig_progress *p, const char *event, tern_jw *w, const char *fmt, ...)
{
	uint64_t ms = (tern_mig_now_ns() - p->t0_ns) / 1000000;
	tern_jw ev;

	if (p->json) {
		cleanup_free char *rest = w ? tern_jw_end(w) : NULL;
		tern_jw_begin(&ev);
		tern_jw_str(&ev, "event", event);
		tern_jw_str(&ev, "side", p->side);
		tern_jw_u64(&ev, "t_ms", ms);
		cleanup_free char *head = tern_jw_end(&ev);
		/* splice the event's own fields after the common ones */
		head[strlen(head) - 1] = '\0';
		if (rest && strcmp(rest, "{}") != 0)
			printf("%s,%s\n", head, rest + 1);
		else
			printf("%s}\n", head);
		fflush(stdout);
		return;
	}
	if (w)
		free(tern_jw_end(w));
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s [%4llu.%03llus] ", p->side, (unsigned long long)(ms / 1000),
		(unsigned long long)(ms % 1000));
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ---- JSON reader ---- */

int tern_mig_json_parse(const char *text, const char *what, yajl_val *out, tern_error **err)
{
	char why[256] = "";

	*out = yajl_tree_parse(text, why, sizeof(why));
	if (*out == NULL || !YAJL_IS_OBJECT(*out)) {
		if (*out)
			yajl_tree_free(*out);
		*out = NULL;
		return tern_error_make_quiet(err, EPROTO,
					     "the peer's %s message is not a JSON object%s%s", what,
					     *why ? ": " : "", why);
	}
	return 0;
}

static yajl_val field(yajl_val v, const char *k)
{
	const char *path[] = {k, NULL};
	return v ? yajl_tree_get(v, path, yajl_t_any) : NULL;
}

const char *tern_mig_json_str(yajl_val v, const char *k)
{
	yajl_val f = field(v, k);
	return f && YAJL_IS_STRING(f) ? YAJL_GET_STRING(f) : NULL;
}

bool tern_mig_json_u64(yajl_val v, const char *k, uint64_t *out)
{
	yajl_val f = field(v, k);

	if (f == NULL || !YAJL_IS_INTEGER(f) || YAJL_GET_INTEGER(f) < 0)
		return false;
	*out = (uint64_t)YAJL_GET_INTEGER(f);
	return true;
}

bool tern_mig_json_bool(yajl_val v, const char *k)
{
	yajl_val f = field(v, k);
	return f && YAJL_IS_TRUE(f);
}

void tern_mig_peer_reason(tern_mchan *c, tern_error **err)
{
	tern_error *peer = NULL;
	cleanup_free char *payload = NULL;
	uint32_t type;
	size_t len;

	if (c == NULL)
		return;
	/* what the peer still had to say: only its ERROR counts */
	for (int i = 0; i < 64; i++) {
		free(payload);
		payload = NULL;
		if (tern_mchan_recv(c, 0, &type, &payload, &len, 1000, &peer) < 0)
			break;
	}
	if (peer && peer->errnum == ECONNABORTED) {
		tern_error_free(*err);
		*err = peer;
		return;
	}
	tern_error_free(peer);
}

/* ---- children ---- */

int tern_mig_child_start(tern_mig_child_fn fn, void *arg, const int *close_in_child, size_t n,
			 pid_t *pid, int *errfd, tern_error **err)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return tern_error_make(err, errno, "pipe");
	fflush(stdout);
	fflush(stderr);
	*pid = fork();
	if (*pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return tern_error_make(err, e, "fork");
	}
	if (*pid == 0) {
		tern_error *cerr = NULL;
		close(p[0]);
		for (size_t i = 0; i < n; i++)
			if (close_in_child[i] >= 0)
				close(close_in_child[i]);
		int ret = fn(arg, &cerr);
		if (ret < 0 && cerr && cerr->msg)
			tern_write_all(p[1], cerr->msg, strlen(cerr->msg));
		_exit(ret < 0 ? 1 : 0);
	}
	close(p[1]);
	*errfd = p[0];
	return 0;
}

int tern_mig_child_wait(pid_t pid, int errfd, int timeout_ms, tern_error **err)
{
	cleanup_free char *msg = NULL;
	size_t len = 0;
	int status;

	if (timeout_ms >= 0) {
		struct pollfd pfd = {.fd = errfd, .events = POLLIN};
		uint64_t end = tern_mig_now_ns() + (uint64_t)timeout_ms * 1000000ULL;
		/* the pipe closes when the child exits (criu, its child, does
		 * not hold it: O_CLOEXEC) */
		for (;;) {
			uint64_t now = tern_mig_now_ns();
			if (now >= end)
				return -ETIMEDOUT;
			int r = poll(&pfd, 1, (int)((end - now) / 1000000ULL) + 1);
			if (r > 0)
				break;
			if (r < 0 && errno != EINTR)
				return tern_error_make(err, errno, "poll");
		}
	}
	tern_read_fd_all(errfd, &msg, &len, 1 << 20);
	close(errfd);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return tern_error_make(err, errno, "waitpid %d", pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (msg && len)
		return tern_error_make_literal(err, EIO, msg);
	return tern_error_make_quiet(err, EIO, "child %d %s %d", pid,
				     WIFSIGNALED(status) ? "killed by signal" : "exited with",
				     WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

int tern_mig_child_wait_or_kill(pid_t pid, int errfd, int left_ms, int bound_ms, const char *what,
				tern_error **err)
{
	tern_error *ignored = NULL;
	int ret = tern_mig_child_wait(pid, errfd, left_ms < 0 ? 0 : left_ms, err);

	if (ret != -ETIMEDOUT)
		return ret;
	/* criu is in the child's group, and so are its action scripts */
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	tern_mig_child_wait(pid, errfd, -1, &ignored);
	tern_error_free(ignored);
	return tern_error_make_quiet(err, ETIMEDOUT, "%s did not finish within %d s: killed it",
				     what, bound_ms / 1000);
}

int tern_mig_criu_timeout_env(int *timeout_ms, tern_error **err)
{
	const char *v = getenv("TERN_CRIU_TIMEOUT");
	char *end = NULL;
	long s;

	*timeout_ms = TERN_MIG_CRIU_TIMEOUT_S * 1000;
	if (v == NULL || *v == '\0')
		return 0;
	errno = 0;
	s = strtol(v, &end, 10);
	if (errno != 0 || end == v || *end != '\0' || s < 1 || s > INT_MAX / 1000)
		return tern_error_make_quiet(err, EINVAL,
					     "TERN_CRIU_TIMEOUT `%s`: want a number of seconds, at "
					     "least 1",
					     v);
	*timeout_ms = (int)s * 1000;
	return 0;
}

int tern_mig_watchdog_start(tern_mig_watchdog_fn fn, void *arg, pid_t *pid, int *fd,
			    tern_error **err)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return tern_error_make(err, errno, "pipe");
	fflush(stdout);
	fflush(stderr);
	*pid = fork();
	if (*pid < 0) {
		close(p[0]);
		close(p[1]);
		return tern_error_make(err, errno, "fork");
	}
	if (*pid == 0) {
		close(p[1]);
		fn(arg, p[0]);
		_exit(0);
	}
	close(p[0]);
	*fd = p[1];
	return 0;
}

void tern_mig_watchdog_stop(pid_t *pid, int *fd, char what)
{
	if (*fd >= 0) {
		if (write(*fd, &what, 1) < 0)
			tern_debug("watchdog: %s", strerror(errno));
		close(*fd);
		*fd = -1;
	}
	if (*pid > 0) {
		while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR)
			;
		*pid = 0;
	}
}

void tern_mig_watchdog_group(int fd, pid_t pgid)
{
	unsigned char msg[1 + sizeof(pid_t)] = {'P'};

	if (fd < 0)
		return;
	memcpy(msg + 1, &pgid, sizeof(pgid));
	if (tern_write_all(fd, msg, sizeof(msg)) < 0)
		tern_debug("watchdog: %s", strerror(errno));
}

bool tern_mig_watchdog_read(int fd, pid_t *groups, size_t *ngroups)
{
	unsigned char buf[64];
	unsigned char pidbuf[sizeof(pid_t)];
	size_t want = 0;
	bool handled = false;
	ssize_t n;

	*ngroups = 0;
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		/* a pid's bytes are binary: they are never read as a letter */
		for (ssize_t i = 0; i < n; i++) {
			if (want > 0) {
				pidbuf[sizeof(pidbuf) - want--] = buf[i];
				if (want == 0 && *ngroups < TERN_MIG_WATCH_GROUPS)
					memcpy(&groups[(*ngroups)++], pidbuf, sizeof(pidbuf));
			} else if (buf[i] == 'P') {
				want = sizeof(pidbuf);
			} else if (buf[i] == 'C' || buf[i] == 'R') {
				handled = true;
			}
		}
	}
	return handled;
}

void tern_mig_groups_gone(const pid_t *groups, size_t n, bool kill_first, int timeout_ms)
{
	uint64_t end = tern_mig_now_ns() + (uint64_t)timeout_ms * 1000000ULL;

	for (size_t g = 0; kill_first && g < n; g++)
		kill(-groups[g], SIGKILL);
	for (size_t g = 0; g < n; g++)
		while (kill(-groups[g], 0) == 0 && tern_mig_now_ns() < end)
			usleep(10000);
}
