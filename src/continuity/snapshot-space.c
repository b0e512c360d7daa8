/* Whether a snapshot fits in its store, before the freeze
 * (snapshot-space.h). Estimates, not a reservation: the file system may
 * fill meanwhile, and the record and the dump still stop cleanly on
 * ENOSPC; this only spares the freeze when it clearly cannot fit. */
#include "snapshot-space.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* criu's other images, files.index, the directories of tree/ */
#define SPACE_MARGIN   (1ULL << 20)
#define WALK_DEPTH_MAX 256

/* `key` of a memory.stat, or -1 */
static int64_t stat_value(const char *data, const char *key)
{
	size_t n = strlen(key);

	for (const char *l = data; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, key, n) == 0 && l[n] == ' ')
			return strtoll(l + n + 1, NULL, 10);
	return -1;
}

/* What criu dumps of the container's memory, about: the anonymous and
 * shared (tmpfs, shm) pages of its memory cgroup, and with cgroup v1 its
 * swapped-out ones. Its page cache is not dumped (the files are in the
 * rootfs). Without a memory controller: the RssAnon and RssShmem of its
 * processes. */
static uint64_t memory_estimate(const oci_state *st)
{
	for (size_t i = 0; i < st->cgroup_paths.len; i++) {
		cleanup_free char *path =
		    tern_strdup_printf("%s%s/memory.stat", st->cgroup_paths.items[i].key,
				       st->cgroup_paths.items[i].value);
		cleanup_free char *data = NULL;
		size_t len;
		if (tern_read_file(path, &data, &len, 1 << 20, NULL) < 0)
			continue;
		int64_t v1 = stat_value(data, "total_rss");
		int64_t a = v1 >= 0 ? v1 : stat_value(data, "anon");
		int64_t s = stat_value(data, v1 >= 0 ? "total_shmem" : "shmem");
		int64_t w = v1 >= 0 ? stat_value(data, "total_swap") : -1;
		if (a >= 0)
			return (uint64_t)a + (s > 0 ? (uint64_t)s : 0) + (w > 0 ? (uint64_t)w : 0);
	}
	uint64_t total = 0;
	for (size_t i = 0; i < st->cgroup_paths.len && total == 0; i++) {
		cleanup_free char *procs =
		    tern_strdup_printf("%s%s/cgroup.procs", st->cgroup_paths.items[i].key,
				       st->cgroup_paths.items[i].value);
		cleanup_free char *data = NULL;
		size_t len;
		if (tern_read_file(procs, &data, &len, 0, NULL) < 0)
			continue;
		char *save = NULL;
		for (char *l = strtok_r(data, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			cleanup_free char *status = tern_strdup_printf("/proc/%s/status", l);
			cleanup_free char *sdata = NULL;
			size_t slen;
			char *v;
			if (tern_read_file(status, &sdata, &slen, 0, NULL) < 0)
				continue;
			if ((v = strstr(sdata, "RssAnon:")) != NULL)
				total += strtoull(v + 8, NULL, 10) << 10;
			if ((v = strstr(sdata, "RssShmem:")) != NULL)
				total += strtoull(v + 9, NULL, 10) << 10;
		}
	}
	return total;
}

static bool newer(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec >= b->tv_nsec);
}

/* The blocks of the regular files under `fd` (on its file system, no
 * symlink followed) that changed at or after `since` (NULL: all): what
 * the record copies rather than links, about. */
static uint64_t changed_bytes(int fd, dev_t dev, const struct timespec *since, int depth)
{
	int dfd = dup(fd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	uint64_t total = 0;

	if (d == NULL) {
		if (dfd >= 0)
			close(dfd);
		return 0;
	}
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		struct stat st;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != dev)
			continue;
		if (S_ISREG(st.st_mode) && (since == NULL || newer(&st.st_ctim, since))) {
			total += (uint64_t)st.st_blocks * 512;
		} else if (S_ISDIR(st.st_mode) && depth < WALK_DEPTH_MAX) {
			cleanup_close int sub =
			    openat(fd, e->d_name, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				total += changed_bytes(sub, dev, since, depth + 1);
		}
	}
	closedir(d);
	return total;
}

/* A file whose identity is in the previous snapshot's files.index is
 * linked: changed since that index was written (at its record, or at the
 * rollback to it), it is copied. */
static uint64_t rootfs_estimate(const oci_state *st, int prevfd)
{
	cleanup_close int root = open(st->rootfs, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	struct stat rs, is;
	bool have_index = prevfd >= 0 && fstatat(prevfd, "files.index", &is, 0) == 0;

	if (root < 0 || fstat(root, &rs) < 0)
		return 0;
	return changed_bytes(root, rs.st_dev, have_index ? &is.st_mtim : NULL, 0);
}

int tern_snap_space_check(const oci_state *st, const char *store, int prevfd,
			  tern_snap_space *space, tern_error **err)
{
	struct statvfs sv;

	memset(space, 0, sizeof(*space));
	if (statvfs(store, &sv) < 0)
		return tern_error_make(err, errno, "statvfs `%s`", store);
	space->free = (uint64_t)sv.f_bavail * sv.f_frsize;
	space->memory = memory_estimate(st);
	space->rootfs = rootfs_estimate(st, prevfd);
	space->need = space->memory + space->rootfs + SPACE_MARGIN;
	if (space->need <= space->free)
		return 0;
	return tern_error_make_quiet(
	    err, ENOSPC,
	    "not enough free space in the snapshot store `%s`: it needs about %llu bytes "
	    "(%llu of memory, %llu of rootfs changes), %llu are free; the container was not "
	    "frozen",
	    store, (unsigned long long)space->need, (unsigned long long)space->memory,
	    (unsigned long long)space->rootfs, (unsigned long long)space->free);
}
