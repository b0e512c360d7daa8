/* OCI hooks.
 *
 * Each hook runs as a plain child process: the state JSON on its stdin (a
 * pipe that tern writes), its stdout and stderr captured (runc does the same
 * and puts both in the error), argv from args and envp from env exactly as
 * given (no PATH lookup: path is absolute); without env, tern's own
 * environment, as runc and crun give (an empty list is an empty
 * environment). With a timeout the hook is SIGKILLed when it expires. Hooks
 * of one stage run in order. For the stages whose failure fails the
 * operation (prestart, createRuntime, createContainer, startContainer) the
 * first failure stops the stage; poststart and poststop hooks all run, each
 * failure a warning (runtime-spec: the lifecycle goes on as if the hook had
 * succeeded; crun does the same, runc 1.1.5 stops at the first).
 */
#include "hooks.h"
#include "log.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How much of a hook's stdout and stderr goes into an error message. */
#define OUTPUT_MAX 4096

typedef struct {
	char data[OUTPUT_MAX + 1];
	size_t len;
} capture;

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Read what is there; returns false at EOF or error (the fd is done). */
static bool drain(int fd, capture *c)
{
	char buf[4096];

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN;
		if (n == 0)
			return false;
		/* Keep the beginning; the rest is read and dropped so the
		 * hook never blocks on a full pipe. */
		size_t room = OUTPUT_MAX - c->len;
		size_t take = (size_t)n < room ? (size_t)n : room;
		memcpy(c->data + c->len, buf, take);
		c->len += take;
		c->data[c->len] = '\0';
	}
}

/* Child side, between fork and execve: async-signal-safe calls only. */
static void __attribute__((noreturn)) exec_hook(const oci_hook *h, char **argv, char **envp, int in,
						int out, int errfd, const sigset_t *mask,
						pid_t parent)
{
	static const char msg[] = "tern: cannot execute the hook\n";

	/* A hook dies with the tern that runs it: a create killed mid-way must
	 * not leave its hooks running. */
	if (!tern_die_with_parent(parent))
		_exit(127);

	/* Move the pipe ends out of the way of 0-2 before dup2 so that one
	 * dup2 cannot close another's source. */
	if ((in = fcntl(in, F_DUPFD_CLOEXEC, 3)) < 0 ||
	    (out = fcntl(out, F_DUPFD_CLOEXEC, 3)) < 0 ||
	    (errfd = fcntl(errfd, F_DUPFD_CLOEXEC, 3)) < 0)
		_exit(127);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0)
		_exit(127);
	/* Nothing of tern's beyond stdio reaches the hook, even an fd that
	 * someone left without O_CLOEXEC. */
	syscall(SYS_close_range, 3, ~0U, 0);
	/* tern blocks SIGPIPE around the hook; the hook gets the defaults. */
	signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	execve(h->path, argv, envp);
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(127);
}

static char *describe_output(const capture *out, const capture *errc)
{
	return tern_strdup_printf("%s%.*s%s%.*s", out->len ? ", stdout: " : "", (int)out->len,
				  out->data, errc->len ? ", stderr: " : "", (int)errc->len,
				  errc->data);
}

/* Swallow a SIGPIPE our own write to a hook's stdin raised while it was
 * blocked (unless it was already blocked and pending before), then put
 * the caller's mask back. */
static void restore_sigpipe(const sigset_t *old)
{
	sigset_t pending, pipe_only;
	struct timespec zero = {0, 0};

	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) &&
	    !sigismember(old, SIGPIPE))
		sigtimedwait(&pipe_only, NULL, &zero);
	sigprocmask(SIG_SETMASK, old, NULL);
}

/* A running hook, as the poll loop of run_hook sees it. */
typedef struct {
	const oci_hook *h;
	const char *stage;
	int *in;	    /* our end of its stdin, closed once all is written */
	int out_fd, err_fd; /* our ends of its stdout and stderr */
	int pidfd;	    /* -1: waitpid is polled */
	pid_t *pid;
	const char *json;
	size_t json_len, written;
	long long deadline; /* now_ms() at which it is killed, -1: none */
	capture *out, *errc;
	int status;
	bool exited, out_open, err_open;
} running_hook;

/* Feed stdin, collect stdout/stderr, and watch for the exit (pidfd) and
 * the deadline, all in one poll loop. Returns with r->exited false when
 * the deadline passed. An error puts `old` back as the signal mask. */
static int supervise(running_hook *r, const sigset_t *old, tern_error **err)
{
	while (!r->exited) {
		struct pollfd fds[4];
		nfds_t n = 0;
		int wait_ms = -1, idx_in = -1, idx_out = -1, idx_err = -1;

		if (*r->in >= 0) {
			idx_in = (int)n;
			fds[n++] = (struct pollfd){.fd = *r->in, .events = POLLOUT};
		}
		if (r->out_open) {
			idx_out = (int)n;
			fds[n++] = (struct pollfd){.fd = r->out_fd, .events = POLLIN};
		}
		if (r->err_open) {
			idx_err = (int)n;
			fds[n++] = (struct pollfd){.fd = r->err_fd, .events = POLLIN};
		}
		if (r->pidfd >= 0)
			fds[n++] = (struct pollfd){.fd = r->pidfd, .events = POLLIN};
		else
			wait_ms = 20; /* no pidfd (old kernel, valgrind): poll waitpid */
		if (r->deadline >= 0) {
			long long left = r->deadline - now_ms();
			if (left <= 0)
				break;
			if (left > INT_MAX)
				left = INT_MAX;
			if (wait_ms < 0 || left < wait_ms)
				wait_ms = (int)left;
		}
		if (poll(fds, n, wait_ms) < 0 && errno != EINTR) {
			int e = errno;
			restore_sigpipe(old);
			return tern_error_make(err, e, "%s hook `%s`: poll", r->stage, r->h->path);
		}
		if (idx_in >= 0 && fds[idx_in].revents) {
			ssize_t w = write(*r->in, r->json + r->written, r->json_len - r->written);
			if (w > 0)
				r->written += (size_t)w;
			/* EPIPE: the hook does not want its stdin. Fine. */
			if ((w < 0 && errno != EAGAIN && errno != EINTR) ||
			    r->written == r->json_len)
				tern_closep(r->in);
		}
		if (idx_out >= 0 && fds[idx_out].revents)
			r->out_open = drain(r->out_fd, r->out);
		if (idx_err >= 0 && fds[idx_err].revents)
			r->err_open = drain(r->err_fd, r->errc);
		pid_t w = waitpid(*r->pid, &r->status, WNOHANG);
		if (w == *r->pid) {
			r->exited = true;
		} else if (w < 0 && errno != EINTR) {
			/* ECHILD: SIGCHLD is ignored and the kernel reaped it;
			 * its status is lost. */
			int e = errno;
			*r->pid = -1;
			restore_sigpipe(old);
			return tern_error_make(err, e, "%s hook `%s`: waitpid", r->stage,
					       r->h->path);
		}
	}
	return 0;
}

/* How the hook ended, as an error (with its output) or 0. */
static int hook_result(const running_hook *r, tern_error **err)
{
	const oci_hook *h = r->h;
	const char *stage = r->stage;
	int status = r->status;
	cleanup_free char *output = describe_output(r->out, r->errc);

	if (!r->exited)
		return tern_error_make(err, 0, "%s hook `%s` timed out after %lld s%s", stage,
				       h->path, (long long)h->timeout.value, output);
	if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
		return tern_error_make(err, 0, "%s hook `%s` exited with status %d%s", stage,
				       h->path, WEXITSTATUS(status), output);
	if (WIFSIGNALED(status)) {
		const char *abbrev = sigabbrev_np(WTERMSIG(status));
		return tern_error_make(err, 0, "%s hook `%s` was killed by signal %d (SIG%s)%s",
				       stage, h->path, WTERMSIG(status), abbrev ? abbrev : "?",
				       output);
	}
	if (r->out->len || r->errc->len)
		tern_debug("%s hook `%s`%s", stage, h->path, output);
	return 0;
}

/* Runs one hook to completion. Returns 0 or a negative errno with *err. */
static int run_hook(const oci_hook *h, const char *stage, const char *state_json, tern_error **err)
{
	cleanup_close_pair int pin[2] = {-1, -1};
	cleanup_close_pair int pout[2] = {-1, -1};
	cleanup_close_pair int perr[2] = {-1, -1};
	cleanup_close int pidfd = -1;
	cleanup_child pid_t pid = -1;
	char *default_argv[] = {h->path, NULL};
	char **argv = h->args ? h->args : default_argv;
	char **envp = h->env ? h->env : environ;
	const char *json = state_json ? state_json : "";
	long long deadline = h->timeout.set ? now_ms() + h->timeout.value * 1000 : -1;
	cleanup_free capture *outbuf = tern_xmalloc0(sizeof(capture));
	cleanup_free capture *errbuf = tern_xmalloc0(sizeof(capture));
	sigset_t block, old;
	int ret;

	if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0)
		return tern_error_make(err, errno, "%s hook `%s`: pipe", stage, h->path);

	/* A hook that exits without reading its stdin must not kill tern
	 * with SIGPIPE: block it for the duration and swallow it after. */
	sigemptyset(&block);
	sigaddset(&block, SIGPIPE);
	sigprocmask(SIG_BLOCK, &block, &old);

	pid_t self = getpid();
	pid = fork();
	if (pid < 0) {
		int e = errno;
		restore_sigpipe(&old);
		return tern_error_make(err, e, "%s hook `%s`: fork", stage, h->path);
	}
	if (pid == 0)
		exec_hook(h, argv, envp, pin[0], pout[1], perr[1], &old, self);

	tern_closep(&pin[0]);
	tern_closep(&pout[1]);
	tern_closep(&perr[1]);
	fcntl(pin[1], F_SETFL, O_NONBLOCK);
	fcntl(pout[0], F_SETFL, O_NONBLOCK);
	fcntl(perr[0], F_SETFL, O_NONBLOCK);
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	running_hook r = {
	    .h = h,
	    .stage = stage,
	    .in = &pin[1],
	    .out_fd = pout[0],
	    .err_fd = perr[0],
	    .pidfd = pidfd,
	    .pid = &pid,
	    .json = json,
	    .json_len = strlen(json),
	    .deadline = deadline,
	    .out = outbuf,
	    .errc = errbuf,
	    .out_open = true,
	    .err_open = true,
	};
	if (r.json_len == 0)
		tern_closep(&pin[1]);

	ret = supervise(&r, &old, err);
	if (ret < 0)
		return ret;

	if (!r.exited) {
		/* The deadline passed: kill, reap, and say so. */
		kill(pid, SIGKILL);
		while (waitpid(pid, &r.status, 0) < 0 && errno == EINTR)
			;
		pid = -1;
	} else {
		pid = -1;
		/* Pick up what the hook wrote just before exiting. A
		 * grandchild that keeps the pipes open does not hold us. */
		if (r.out_open)
			drain(pout[0], r.out);
		if (r.err_open)
			drain(perr[0], r.errc);
	}

	restore_sigpipe(&old);
	return hook_result(&r, err);
}

int tern_hooks_run(const oci_hook_list *hooks, const char *stage, const char *state_json,
		   tern_error **err)
{
	if (hooks == NULL)
		return 0;
	for (size_t i = 0; i < hooks->len; i++) {
		int ret;
		tern_debug("running %s hook #%zu `%s`", stage, i, hooks->items[i].path);
		ret = run_hook(&hooks->items[i], stage, state_json, err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int tern_hooks_run_all(const oci_hook_list *hooks, const char *stage, const char *state_json)
{
	int failed = 0;

	for (size_t i = 0; hooks != NULL && i < hooks->len; i++) {
		tern_error *e = NULL;

		tern_debug("running %s hook #%zu `%s`", stage, i, hooks->items[i].path);
		if (run_hook(&hooks->items[i], stage, state_json, &e) < 0) {
			tern_warn("%s (hook #%zu; going on)", e->msg, i);
			tern_error_free(e);
			failed++;
		}
	}
	return failed;
}

/* Into `dir` for a stage's hooks; *back is where to return (-1: stayed,
 * `dir` is NULL or gone, as a bundle removed before `delete` is). */
static void enter_hook_dir(const char *dir, const char *stage, int *back)
{
	*back = -1;
	if (dir == NULL)
		return;
	*back = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*back < 0)
		return;
	if (chdir(dir) < 0) {
		tern_debug("%s hooks run in tern's working directory: chdir to `%s`: %s", stage,
			   dir, strerror(errno));
		tern_closep(back);
	}
}

static void leave_hook_dir(int *back)
{
	if (*back < 0)
		return;
	if (fchdir(*back) < 0)
		tern_debug("back to the working directory after the hooks: %s", strerror(errno));
	tern_closep(back);
}

int tern_hooks_run_in(const char *dir, const oci_hook_list *hooks, const char *stage,
		      const char *state_json, tern_error **err)
{
	int back, ret;

	if (hooks == NULL || hooks->len == 0)
		return 0;
	enter_hook_dir(dir, stage, &back);
	ret = tern_hooks_run(hooks, stage, state_json, err);
	leave_hook_dir(&back);
	return ret;
}

int tern_hooks_run_all_in(const char *dir, const oci_hook_list *hooks, const char *stage,
			  const char *state_json)
{
	int back, ret;

	if (hooks == NULL || hooks->len == 0)
		return 0;
	enter_hook_dir(dir, stage, &back);
	ret = tern_hooks_run_all(hooks, stage, state_json);
	leave_hook_dir(&back);
	return ret;
}
