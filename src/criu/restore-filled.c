/* tern restore -d, rollback and clone: tern_container_restore with the
 * memory filled through `criu lazy-pages` reading the images, which maps
 * it without a page fault per page (criu-lazy-daemon.h), where the kernel
 * and the restored processes can use userfaultfd; criu's own restore
 * otherwise. */
#include "checkpoint.h"
#include "criu-lazy-daemon.h"
#include "criu-lazy-filler.h"
#include "log.h"
#include "utils.h"

#include <unistd.h>

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
	bool lazy = way != TERN_UFFD_NONE;
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
