/* The last failure's criu logs in ROOT/ID/last-failure/ (failure-logs.h
 * says why). Copies, never moves: a log in a directory the user gave
 * (--work-path) stays where the user looks for it too; and a copy, not a
 * link, since the next criu run in the same work directory (a rollback's,
 * in the state directory) rewrites its log. */
#include "failure-logs.h"
#include "log.h"
#include "state.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* the state directory whose last-failure/ this process has emptied */
static char *emptied_for;

static bool is_log(const char *name)
{
	size_t n = strlen(name);
	return n > 4 && strcmp(name + n - 4, ".log") == 0;
}

/* `name` of `from` copied to `to` (0600, replacing); a symlink or
 * anything but a regular file is not copied. */
static int copy_log(int from, int to, const char *name)
{
	cleanup_close int in = openat(from, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	char buf[65536];
	ssize_t n;

	if (in < 0 || fstat(in, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	unlinkat(to, name, 0);
	cleanup_close int out =
	    openat(to, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return -errno;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (tern_write_all(out, buf, (size_t)n) < 0)
			return -errno;
	return n < 0 ? -errno : 0;
}

/* STATE_DIR/last-failure, made if need be, emptied the first time in
 * this process: its fd, or -errno. */
static int open_kept(const char *state_dir, const char *kept)
{
	bool fresh = emptied_for == NULL || strcmp(emptied_for, state_dir) != 0;

	if (fresh) {
		tern_remove_tree(kept);
		free(emptied_for);
		emptied_for = tern_xstrdup(state_dir);
	}
	if (mkdir(kept, 0700) < 0 && errno != EEXIST)
		return -errno;
	int fd = open(kept, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

char *tern_failure_logs_keep(const char *state_dir, const char *work, const char *name)
{
	cleanup_free char *kept = NULL;
	bool have = false;
	struct stat st;

	/* a container that is no more (or not yet) has nowhere to keep them */
	if (state_dir == NULL || work == NULL || stat(state_dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return NULL;
	kept = tern_strdup_printf("%s/%s", state_dir, TERN_LAST_FAILURE_DIR);
	if (strcmp(work, kept) == 0)
		return NULL;
	cleanup_close int from = open(work, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (from < 0)
		return NULL;
	cleanup_close int to = open_kept(state_dir, kept);
	if (to < 0) {
		tern_debug("keep criu's logs in `%s`: %s", kept, strerror(-to));
		return NULL;
	}
	int fd = dup(from);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (!is_log(e->d_name))
			continue;
		int r = copy_log(from, to, e->d_name);
		/* a full file system (the very failure, often): a hard link
		 * takes no space, and outlives the work directory's removal */
		if (r < 0) {
			unlinkat(to, e->d_name, 0);
			if (linkat(from, e->d_name, to, e->d_name, 0) == 0)
				r = 0;
		}
		if (r < 0)
			tern_debug("keep `%s/%s` in `%s`: %s", work, e->d_name, kept, strerror(-r));
		else if (strcmp(e->d_name, name) == 0)
			have = true;
	}
	closedir(d);
	return have ? tern_strdup_printf("%s/%s", kept, name) : NULL;
}
