/* The background filler of a lazy restore (criu-lazy-filler.h). */
#include "criu-lazy-filler.h"
#include "criu-lazy-daemon.h"
#include "fault.h"
#include "log.h"
#include "state.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static bool read_all(int fd, char *buf, size_t size)
{
	size_t n = 0;
	ssize_t r;

	while (n + 1 < size && (r = read(fd, buf + n, size - 1 - n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return false;
		n += (size_t)r;
	}
	buf[n] = '\0';
	return true;
}

/* The container's init and its start time as the state has them now. */
static bool init_of(const tern_lazy_filler_target *t, pid_t *pid, unsigned long long *start)
{
	tern_container_dir *dir = NULL;
	oci_state *st = NULL;
	tern_error *e = NULL;

	if (tern_container_peek(t->rt, t->id, &dir, &st, &e) < 0) {
		tern_error_free(e);
		return false;
	}
	*pid = st->pid;
	*start = st->pid_start_time;
	oci_state_free(st);
	tern_state_dir_free(dir);
	return *pid > 0;
}

static void filler_main(const char *criu, const char *images, char *const extra[],
			const tern_lazy_filler_target *t, int ready_out, int verdict_in)
{
	tern_lazy_daemon d = TERN_LAZY_DAEMON_INIT;
	tern_error *e = NULL;
	char verdict[16] = "", b;

	if (tern_lazy_daemon_start(criu, images, extra, &d, &e) < 0) {
		tern_log(TERN_LOG_ERROR, "%s", e->msg);
		_exit(1);
	}
	/* the daemon's "listening" byte, passed on (EOF, it died, as EOF);
	 * unless tern's word comes first: it gave up waiting, or died */
	struct pollfd p[2] = {{.fd = d.ready_fd, .events = POLLIN},
			      {.fd = verdict_in, .events = POLLIN}};
	while (poll(p, 2, -1) < 0)
		if (errno != EINTR)
			_exit(1);
	if (p[0].revents && !p[1].revents) {
		ssize_t r;
		while ((r = read(d.ready_fd, &b, 1)) < 0 && errno == EINTR)
			;
		if (r == 1 && write(ready_out, &b, 1) != 1)
			tern_debug("the memory filler: %s", strerror(errno));
	}
	close(ready_out);
	if (!read_all(verdict_in, verdict, sizeof(verdict)) || strcmp(verdict, "ok") != 0) {
		tern_lazy_daemon_stop(&d);
		unlink(t->socket);
		/* tern died before its word: what its restore made is half */
		if (verdict[0] == '\0')
			t->delete_it(t->data);
		_exit(0);
	}
	pid_t pid = 0;
	unsigned long long start = 0;
	bool known = init_of(t, &pid, &start);
	int ret = tern_lazy_daemon_wait(&d, &e);
	unlink(t->socket);
	/* (the tests' stand-in for a daemon that fails half-way: whether a
	 * real one is still filling when a test kills it is a matter of
	 * timing; fault.h) */
	if (ret == 0 && tern_fault_fails("lazy-fill"))
		ret = tern_error_make_quiet(&e, EIO,
					    "criu lazy-pages failed (TERN_FAULT_FAIL=lazy-fill)");
	if (ret == 0)
		_exit(0);
	tern_log(TERN_LOG_ERROR, "container `%s`: %s", t->id, e->msg);
	tern_error_free(e);
	pid_t now_pid;
	unsigned long long now_start;
	if (known && init_of(t, &now_pid, &now_start) && now_pid == pid && now_start == start)
		t->delete_it(t->data);
	_exit(1);
}

int tern_lazy_filler_start(const char *criu, const char *images, char *const extra[],
			   const tern_lazy_filler_target *t, tern_lazy_filler *f,
			   tern_error **err)
{
	int ready[2], verdict[2];

	if (pipe2(ready, O_CLOEXEC) < 0)
		return tern_error_make(err, errno, "pipe for the memory filler");
	if (pipe2(verdict, O_CLOEXEC) < 0) {
		int en = errno;
		close(ready[0]);
		close(ready[1]);
		return tern_error_make(err, en, "pipe for the memory filler");
	}
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		int en = errno;
		close(ready[0]);
		close(ready[1]);
		close(verdict[0]);
		close(verdict[1]);
		return tern_error_make(err, en, "fork for the memory filler");
	}
	if (pid == 0) {
		/* outlives the command: nothing of the caller's (its session,
		 * its terminal, its pipes, its cwd's mount) stays held */
		setsid();
		signal(SIGPIPE, SIG_IGN);
		prctl(PR_SET_NAME, "tern-filler", 0, 0, 0);
		/* background work: the next clone's restore comes first (the
		 * pages a clone faults on are still served at once, only the
		 * rest waits for idle CPU) */
		if (setpriority(PRIO_PROCESS, 0, 10) < 0)
			tern_debug("the memory filler: nice 10: %s", strerror(errno));
		if (chdir("/") < 0)
			_exit(1);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null < 0)
			_exit(1);
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		int keep[] = {ready[1], verdict[0]};
		tern_close_fds_from(3, keep, 2);
		filler_main(criu, images, extra, t, ready[1], verdict[0]);
		_exit(1);
	}
	close(ready[1]);
	close(verdict[0]);
	f->pid = pid;
	f->ready_fd = ready[0];
	f->verdict_fd = verdict[1];
	return 0;
}

void tern_lazy_filler_release(tern_lazy_filler *f, bool ok)
{
	if (f->verdict_fd >= 0) {
		const char *w = ok ? "ok" : "abort";
		if (write(f->verdict_fd, w, strlen(w)) < 0)
			tern_debug("the memory filler: %s", strerror(errno));
		close(f->verdict_fd);
		f->verdict_fd = -1;
	}
	if (f->ready_fd >= 0) {
		close(f->ready_fd);
		f->ready_fd = -1;
	}
	/* after a failure, no daemon is left behind; after success the
	 * filler is on its own (its parent, once tern exits, reaps it) */
	if (!ok && f->pid > 0)
		while (waitpid(f->pid, NULL, 0) < 0 && errno == EINTR)
			;
	f->pid = 0;
}
