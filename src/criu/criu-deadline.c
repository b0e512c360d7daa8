/* A bound on a call into libcriu (see criu-deadline.h). */
#include "criu-deadline.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int tern_criu_timeout_ms(void)
{
	const char *v = getenv("TERN_CRIU_TIMEOUT");
	char *end = NULL;
	long s;

	if (v == NULL || *v == '\0')
		return TERN_CRIU_TIMEOUT_DEFAULT_S * 1000;
	errno = 0;
	s = strtol(v, &end, 10);
	/* (tern migrate refuses a bad value before it gets here) */
	if (errno != 0 || end == v || *end != '\0' || s < 1 || s > INT_MAX / 1000)
		return TERN_CRIU_TIMEOUT_DEFAULT_S * 1000;
	return (int)s * 1000;
}

/* The children of `pid` (from each of its threads: libcriu may fork from
 * any), at most `max`, into `out`; their count. */
static size_t list_children(pid_t pid, pid_t *out, size_t max)
{
	char path[64];
	DIR *tasks;
	struct dirent *t;
	size_t n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	tasks = opendir(path);
	if (tasks == NULL)
		return 0;
	while ((t = readdir(tasks)) != NULL && n < max) {
		char cpath[PATH_MAX];
		FILE *f;
		int child;

		if (t->d_name[0] == '.')
			continue;
		snprintf(cpath, sizeof(cpath), "/proc/%d/task/%s/children", (int)pid, t->d_name);
		f = fopen(cpath, "re");
		if (f == NULL)
			continue;
		while (n < max && fscanf(f, "%d", &child) == 1)
			out[n++] = child;
		fclose(f);
	}
	closedir(tasks);
	return n;
}

static bool listed(pid_t pid, const pid_t *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == pid)
			return true;
	return false;
}

/* SIGKILL every descendant of `pid` but `self` and the children in `keep`
 * (what it had before the call: earlier clones, a lazy-pages daemon), each
 * stopped first so it forks no more while its own children are listed.
 * Depth-bounded: a criu tree is shallow. */
static void kill_tree(pid_t pid, pid_t self, const pid_t *keep, size_t nkeep, int depth)
{
	pid_t children[TERN_CRIU_DEADLINE_MAX_CHILDREN];
	size_t n;

	if (depth > 8)
		return;
	n = list_children(pid, children, TERN_CRIU_DEADLINE_MAX_CHILDREN);
	for (size_t i = 0; i < n; i++) {
		if (children[i] == self || listed(children[i], keep, nkeep))
			continue;
		kill(children[i], SIGSTOP);
		kill_tree(children[i], self, NULL, 0, depth + 1);
		kill(children[i], SIGKILL);
	}
}

void tern_criu_deadline_start(tern_criu_deadline *d, int timeout_ms)
{
	int p[2];
	pid_t parent = getpid();

	d->pid = 0;
	d->fd = -1;
	d->timeout_ms = timeout_ms;
	/* before the call: a restore's tree comes as tern's children
	 * (libcriu's rst_sibling), beside those tern already has */
	d->nkeep = list_children(parent, d->keep, TERN_CRIU_DEADLINE_MAX_CHILDREN);
	for (size_t i = 0; d->also > 0 && i < d->nkeep; i++)
		if (d->keep[i] == d->also)
			d->keep[i--] = d->keep[--d->nkeep];
	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	fflush(stdout);
	fflush(stderr);
	d->pid = fork();
	if (d->pid < 0) {
		d->pid = 0;
		close(p[0]);
		close(p[1]);
		return;
	}
	if (d->pid == 0) {
		struct pollfd pfd = {.fd = p[0], .events = POLLIN};
		int r;

		close(p[1]);
		/* end of file: the call returned (or tern died) */
		while ((r = poll(&pfd, 1, timeout_ms)) < 0 && errno == EINTR)
			;
		if (r != 0 || getppid() != parent)
			_exit(0);
		kill_tree(parent, getpid(), d->keep, d->nkeep, 0);
		_exit(1);
	}
	close(p[0]);
	d->fd = p[1];
}

bool tern_criu_deadline_stop(tern_criu_deadline *d)
{
	int status;

	if (d->pid <= 0)
		return false;
	close(d->fd);
	d->fd = -1;
	while (waitpid(d->pid, &status, 0) < 0)
		if (errno != EINTR)
			return false;
	d->pid = 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 1;
}
