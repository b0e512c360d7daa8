/* tern restore -d, rollback and clone: tern_container_restore with the
 * memory filled through `criu lazy-pages` reading the images, which maps
 * it without a page fault per page (criu-lazy-daemon.h), where the kernel
 * and the restored processes can use userfaultfd and the images hold
 * enough memory for it to pay; criu's own restore otherwise. */
#include "checkpoint.h"
#include "criu-lazy-daemon.h"
#include "criu-lazy-filler.h"
#include "log.h"
#include "utils.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Below this much memory in the images, criu's own restore has filled it
 * before a `criu lazy-pages` has started and met the restore (25-30 ms,
 * bench/results/criu-phases-20261207.md). restore -d medians of 7 here,
 * lazy against criu's own: 1 MiB 103 against 90 ms, 4 MiB 122 against
 * 112, even at 8, 32 MiB 121 against 186, 128 MiB 139 against 450. */
#define LAZY_MIN_BYTES (8ULL << 20)

/* The bytes of the page images in `dirfd` and its parent/ (an
 * incremental snapshot's), a page counted once per image it is in. */
static uint64_t pages_bytes(int dirfd, int depth)
{
	int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	uint64_t total = 0;

	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		struct stat st;
		if (strncmp(e->d_name, "pages-", 6) == 0 &&
		    fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			total += (uint64_t)st.st_size;
		else if (strcmp(e->d_name, "parent") == 0 && depth < 64) {
			int sub = openat(dirfd, "parent", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
			if (sub >= 0) {
				total += pages_bytes(sub, depth + 1);
				close(sub);
			}
		}
	}
	closedir(d);
	return total;
}

static bool worth_lazy(const char *images)
{
	int fd = open(images, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	uint64_t bytes = fd >= 0 ? pages_bytes(fd, 0) : 0;

	if (fd >= 0)
		close(fd);
	if (bytes < LAZY_MIN_BYTES)
		tern_debug("restore from `%s`: %llu bytes of pages, criu fills them itself", images,
			   (unsigned long long)bytes);
	return bytes >= LAZY_MIN_BYTES;
}

int tern_restore_filled(const tern_runtime *rt, const char *criu, const char *id,
			const tern_create_opts *copts, tern_ckpt_opts *co, const char *images,
			const char *work, void (*kill_it)(void *), void *data, bool fill_behind,
			int *exit_status, uint64_t *criu_ns, uint64_t *fill_ns, tern_error **err)
{
	/* the memory through `criu lazy-pages` from the images, which maps
	 * it without a page fault per page (criu-lazy-daemon.h); the daemon
	 * meets the restore at lazy-pages.socket in the work directory */
	tern_lazy_daemon d = TERN_LAZY_DAEMON_INIT;
	tern_lazy_filler filler = TERN_LAZY_FILLER_INIT;
	cleanup_free char *sock = tern_strdup_printf("%s/lazy-pages.socket", work);
	tern_criu_features features = tern_criu_features_cached(rt->root, criu);
	tern_uffd_way way = features.lazy_pages ? tern_ckpt_uffd_way(images) : TERN_UFFD_NONE;
	bool lazy = way != TERN_UFFD_NONE && worth_lazy(images);
	char *extra[] = {"--work-dir", (char *)work, NULL};

	if (lazy) {
		tern_error *e = NULL;
		tern_lazy_filler_target t = {
		    .rt = rt, .id = id, .socket = sock, .delete_it = kill_it, .data = data};
		int r = fill_behind ? tern_lazy_filler_start(criu, images, extra, &t, &filler, &e)
				    : tern_lazy_daemon_start(criu, images, extra, &d, &e);
		if (r < 0) {
			tern_debug("restore of `%s` without lazy pages: %s", id, e->msg);
			tern_error_free(e);
			lazy = false;
		}
	}
	co->work_path = work;
	co->criu_checked = features.works;
	if (lazy) {
		co->lazy_pages = true;
		co->lazy_ready_fd = fill_behind ? filler.ready_fd : d.ready_fd;
		co->lazy_ready_wait = co->lazy_ready_fd >= 0;
	}
	uint64_t t = tern_now_ns();
	int ret = tern_container_restore(rt, criu, id, copts, co, exit_status, err);

	*criu_ns = tern_now_ns() - t;
	/* it runs; the daemon fills the rest behind it. Half-filled memory
	 * would read as zeros once the daemon is gone: return when every page
	 * is in, and kill the container if the fill fails. */
	if (fill_behind) {
		tern_lazy_filler_release(&filler, ret == 0);
	} else if (ret == 0 && lazy) {
		ret = tern_lazy_daemon_wait(&d, err);
		if (ret < 0) {
			kill_it(data);
			tern_error_wrap(err, "filling the memory from the images");
		}
		*fill_ns = tern_now_ns() - t - *criu_ns;
	}
	tern_lazy_daemon_stop(&d);
	/* (the filler removes it once done) */
	if (lazy && !(fill_behind && ret == 0))
		unlink(sock);
	return ret;
}
