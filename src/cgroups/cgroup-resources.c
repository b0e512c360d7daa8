/* What the cgroup controls: linux.resources checked and written through
 * the v1 or v2 code (cgroup-v1.c, cgroup-v2.c), freeze and thaw, the usage
 * counters and the OOM watch. */
#include "cgroup-internal.h"
#include "cgroup-v1.h"
#include "cgroup-v2.h"
#include "log.h"
#include "utils.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

/* ---- resources ---- */

static int check_host_controllers(const oci_resources *r, tern_error **err);

int tern_cgroup_validate_resources(const oci_resources *r, tern_error **err)
{
	int ret;

	if (r == NULL)
		return 0;
	if (tern_cgroup_v2_has_controllers())
		ret = tern_cgroup_v2_validate(r, err);
	else
		ret = tern_cgroup_v1_validate(r, err);
	if (ret < 0)
		return ret;
	return check_host_controllers(r, err);
}

/* Hybrid host, hugetlb only on the unified hierarchy: the hugepage limits
 * go there (the rest stays with v1). */
static int apply_hybrid_hugetlb(const hierarchy *h, const char *path, const char *dir,
				const oci_resources *r, tern_error **err)
{
	oci_resources only = {.hugepage_limits = r->hugepage_limits,
			      .hugepage_limits_len = r->hugepage_limits_len};
	int ret = tern_cgroup_v2_prepare(h->mountpoint, path, err);
	if (ret == 0)
		ret = tern_cgroup_v2_apply(dir, &only, false, err);
	return ret;
}

/* A limit whose controller the host lacks cannot be applied: say so
 * before anything exists, naming the field (runtime-spec: a setting the
 * runtime cannot apply is an error; runc fails these too, once it has made
 * the cgroup). A network object with neither classID nor priorities asks
 * for nothing. */
static int check_host_controllers(const oci_resources *r, tern_error **err)
{
	const oci_network *net = r->network;

	tern_cg_load_hierarchies();
	if (r->hugepage_limits_len > 0 && !tern_cg_v2_host && !tern_cg_v1_has("hugetlb")) {
		bool unified = false;
		for (size_t i = 0; i < tern_cg_n_hierarchies; i++)
			unified =
			    unified || tern_cg_hybrid_hugetlb_on_unified(&tern_cg_hierarchies[i]);
		if (!unified)
			return tern_error_make_quiet(
			    err, ENOTSUP,
			    "linux.resources.hugepageLimits: this host has "
			    "no hugetlb cgroup controller (neither a v1 "
			    "hierarchy nor on the unified one)");
	}
	if (r->rdma_len > 0 && !tern_cg_v2_host && !tern_cg_v1_has("rdma"))
		return tern_error_make_quiet(err, ENOTSUP,
					     "linux.resources.rdma: this host has no rdma cgroup "
					     "controller (no v1 hierarchy carries it)");
	/* cgroup v2 has no network controller at all: traffic classes and
	 * priorities are set with eBPF or tc there */
	if (net && net->class_id.set && (tern_cg_v2_host || !tern_cg_v1_has("net_cls")))
		return tern_error_make_quiet(
		    err, ENOTSUP, "linux.resources.network.classID: this host has no net_cls %s",
		    tern_cg_v2_host ? "controller (cgroup v2 has none)"
				    : "cgroup controller (no v1 hierarchy carries it)");
	if (net && net->priorities_len > 0 && (tern_cg_v2_host || !tern_cg_v1_has("net_prio")))
		return tern_error_make_quiet(
		    err, ENOTSUP,
		    "linux.resources.network.priorities: this host has no net_prio %s",
		    tern_cg_v2_host ? "controller (cgroup v2 has none)"
				    : "cgroup controller (no v1 hierarchy carries it)");
	return 0;
}

int tern_cgroup_apply_resources(const oci_map *paths, const oci_resources *r, bool update,
				tern_error **err)
{
	tern_cg_load_hierarchies();
	/* checked at create already; restore comes here too */
	int missing = r ? check_host_controllers(r, err) : 0;
	if (missing < 0)
		return missing;
	for (size_t i = 0; i < paths->len; i++) {
		const hierarchy *h = tern_cg_hierarchy_at(paths->items[i].key);
		cleanup_free char *dir = tern_cg_dir_of(&paths->items[i]);
		int ret = 0;

		if (h == NULL)
			continue;
		if (h->v2) {
			if (!tern_cg_v2_active(h)) {
				if (r && r->hugepage_limits_len > 0 &&
				    tern_cg_hybrid_hugetlb_on_unified(h))
					ret = apply_hybrid_hugetlb(h, paths->items[i].value, dir, r,
								   err);
				if (ret < 0)
					return ret;
				continue;
			}
			ret = tern_cgroup_v2_prepare(h->mountpoint, paths->items[i].value, err);
			if (ret == 0 && r)
				ret = tern_cgroup_v2_apply(dir, r, update, err);
			/* devices: v2 has no files for them, an eBPF program does it;
			 * on create the defaults apply even with no rules */
			if (ret == 0 && (!update || (r && r->devices_len > 0))) {
				ret = tern_cgroup_v2_devices_apply(dir, r ? r->devices : NULL,
								   r ? r->devices_len : 0, err);
				if (ret < 0 && tern_cg_rootless_mode) {
					tern_debug("rootless: device rules not applied");
					ret = 0;
				}
			}
		} else {
			/* also without linux.resources: the device rules */
			ret = tern_cgroup_v1_apply(dir, h->controllers, r, update, err);
			if (ret < 0 && tern_cg_rootless_mode &&
			    tern_cg_has_controllers(h->controllers, "devices") &&
			    (ret == -EPERM || ret == -EACCES)) {
				tern_debug("rootless: device rules not applied in %s", dir);
				ret = 0;
			}
		}
		if (ret < 0)
			return ret;
	}
	return 0;
}

int tern_cgroup_freeze(const oci_map *paths, bool freeze, tern_error **err)
{
	tern_cg_load_hierarchies();
	for (size_t i = 0; i < paths->len; i++) {
		const hierarchy *h = tern_cg_hierarchy_at(paths->items[i].key);
		if (h == NULL || !h->freezer || (h->v2 && !tern_cg_v2_active(h)))
			continue;
		cleanup_free char *dir = tern_cg_dir_of(&paths->items[i]);
		return h->v2 ? tern_cgroup_v2_freeze(dir, freeze, err)
			     : tern_cgroup_v1_freeze(dir, freeze, err);
	}
	return tern_error_make(err, ENOTSUP, "%s: no freezer cgroup for this container",
			       freeze ? "pause" : "resume");
}

int tern_cgroup_stats_read(const oci_map *paths, tern_cgroup_stats *stats, tern_error **err)
{
	tern_cg_load_hierarchies();
	for (size_t i = 0; i < paths->len; i++) {
		const hierarchy *h = tern_cg_hierarchy_at(paths->items[i].key);
		cleanup_free char *dir = tern_cg_dir_of(&paths->items[i]);
		int ret = 0;
		if (h == NULL)
			continue;
		if (h->v2) {
			if (tern_cg_v2_active(h))
				ret = tern_cgroup_v2_stats(dir, stats, err);
			else if (tern_cg_hybrid_hugetlb_on_unified(h))
				ret = tern_cgroup_v2_hugetlb_stats(dir, stats, err);
		} else {
			ret = tern_cgroup_v1_stats(dir, h->controllers, stats, err);
		}
		if (ret < 0)
			return ret;
	}
	return 0;
}

void tern_cgroup_oom_watch_close(tern_cgroup_oom_watch *w)
{
	if (w->started && w->v1_eventfd >= 0)
		close(w->v1_eventfd);
	w->v1_eventfd = -1;
}

int tern_cgroup_oom_wait(const oci_map *paths, tern_cgroup_oom_watch *w, int timeout_ms,
			 tern_error **err)
{
	tern_cg_load_hierarchies();
	for (size_t i = 0; i < paths->len; i++) {
		const hierarchy *h = tern_cg_hierarchy_at(paths->items[i].key);
		if (h == NULL)
			continue;
		cleanup_free char *dir = tern_cg_dir_of(&paths->items[i]);
		if (h->v2 && tern_cg_v2_active(h)) {
			if (!w->started) {
				/* count only the kills from now on */
				w->started = true;
				w->v1_eventfd = -1;
				tern_cgroup_v2_oom_wait(dir, &w->v2_oom_kills, 0, NULL);
			}
			return tern_cgroup_v2_oom_wait(dir, &w->v2_oom_kills, timeout_ms, err);
		}
		if (!h->v2 && tern_cg_has_controllers(h->controllers, "memory")) {
			if (!w->started) {
				w->started = true;
				w->v1_eventfd = tern_cgroup_v1_oom_eventfd(dir, err);
				if (w->v1_eventfd < 0)
					return w->v1_eventfd;
			}
			struct pollfd pfd = {.fd = w->v1_eventfd, .events = POLLIN};
			int n = poll(&pfd, 1, timeout_ms);
			if (n <= 0)
				return 0;
			uint64_t count;
			if (read(w->v1_eventfd, &count, sizeof(count)) != sizeof(count))
				return 0;
			/* the kernel also signals removal of the cgroup */
			cleanup_free char *ctl = tern_strdup_printf("%s/cgroup.event_control", dir);
			return access(ctl, F_OK) == 0 ? 1 : 0;
		}
	}
	/* no memory controller: nothing to watch, just wait */
	if (timeout_ms > 0)
		poll(NULL, 0, timeout_ms);
	return 0;
}
