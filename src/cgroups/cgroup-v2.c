/* cgroup v2: linux.resources as files of the unified hierarchy, controller
 * delegation, the freezer and statistics. The device program is in
 * cgroup-v2-devices.c.
 *
 * Conventions of the OCI config that v2 does not share with v1, and that
 * must be converted here exactly as runc and crun do, so that a config
 * means the same thing whichever runtime reads it:
 *  - cpu.shares (2..262144) becomes cpu.weight (1..10000);
 *  - memory.swap is memory+swap, memory.swap.max is swap alone;
 *  - blkio.weight (10..1000) becomes io.weight (1..10000) unless BFQ is
 *    there, whose io.bfq.weight takes the v1 range unchanged;
 *  - a value of 0 for limit, shares, quota, pids.limit means "unset" (the
 *    Go zero value runc cannot tell from absence), -1 means "max". */
#include "cgroup-v2.h"
#include "cgroup-v2-internal.h"

#include "log.h"
#include "utils.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

/* What a container may need delegated, in the order the kernel lists them. */
static const char *const wanted_controllers[] = {"cpuset",  "cpu",  "io",   "memory",
						 "hugetlb", "pids", "rdma", "misc"};

/* ---------------------------------------------------------------------- */
/* conversions                                                            */

uint64_t tern_cgroup_v2_shares_to_weight(uint64_t shares)
{
	if (shares == 0)
		return 0;
	/* The linear map runc and crun use: 2 -> 1, 262144 -> 10000, and the
	 * v1 default 1024 -> 39 (v2's default is 100; kept for compatibility
	 * with the other runtimes rather than for exactness). */
	return 1 + ((shares - 2) * 9999) / 262142;
}

uint64_t tern_cgroup_v2_blkio_to_io_weight(uint64_t weight)
{
	if (weight == 0)
		return 0;
	return 1 + (weight - 10) * 9999 / 990;
}

int tern_cgroup_v2_swap_max(bool limit_set, int64_t limit, int64_t swap, int64_t *out)
{
	/* runc's conversion: swap -1 stays unlimited; swap 0 is "unset". */
	if (swap == -1) {
		*out = -1;
		return 0;
	}
	if (swap == 0)
		return 1;
	if (swap < 0)
		return -EINVAL;
	/* A finite memory+swap needs the memory part to subtract. */
	if (!limit_set || limit <= 0)
		return -EINVAL;
	if (swap < limit)
		return -EINVAL;
	*out = swap - limit;
	return 0;
}

char *tern_cgroup_v2_io_max_line(int64_t major, int64_t minor, const bool set[4],
				 const uint64_t rate[4])
{
	static const char *const keys[4] = {"rbps", "wbps", "riops", "wiops"};
	char *line = tern_strdup_printf("%" PRId64 ":%" PRId64, major, minor);

	for (int i = 0; i < 4; i++) {
		if (!set[i])
			continue;
		char *next = rate[i] == 0
				 ? tern_strdup_printf("%s %s=max", line, keys[i])
				 : tern_strdup_printf("%s %s=%" PRIu64, line, keys[i], rate[i]);
		free(line);
		line = next;
	}
	return line;
}

char *tern_cgroup_v2_cpu_max_value(int64_t quota, uint64_t period)
{
	if (quota < 0)
		return tern_strdup_printf("max %" PRIu64, period);
	return tern_strdup_printf("%" PRId64 " %" PRIu64, quota, period);
}

/* ---------------------------------------------------------------------- */
/* file helpers                                                           */

/* Write `value` to DIR/FILE; the error names the config field. */
int tern_cgv2_write_ctl(int dfd, const char *dir, const char *file, const char *value,
			const char *field, tern_error **err)
{
	cleanup_close int fd = openat(dfd, file, O_WRONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return tern_error_make(err, errno, "%s: open `%s/%s`%s", field, dir, file,
				       errno == ENOENT ? " (is its controller enabled?)" : "");
	ret = tern_write_all(fd, value, strlen(value));
	if (ret < 0)
		return tern_error_make(err, -ret, "%s: write `%s` to `%s/%s`", field, value, dir,
				       file);
	tern_debug("cgroup v2: %s/%s <- %s", dir, file, value);
	return 0;
}

int tern_cgv2_read_ctl(int dfd, const char *file, char **out)
{
	cleanup_close int fd = openat(dfd, file, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return tern_read_fd_all(fd, out, NULL, 0);
}

bool tern_cgv2_has_file(int dfd, const char *file)
{
	return faccessat(dfd, file, F_OK, 0) == 0;
}

/* Is the word `w` in the space-separated list `list`? */
static bool word_in(const char *list, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = list; (p = strstr(p, w)) != NULL; p += n) {
		bool start = p == list || isspace((unsigned char)p[-1]);
		bool end = p[n] == '\0' || isspace((unsigned char)p[n]);
		if (start && end)
			return true;
	}
	return false;
}

static char *int_or_max(int64_t v)
{
	return v < 0 ? tern_xstrdup("max") : tern_strdup_printf("%" PRId64, v);
}

/* A "max" or a number from a one-value file; -1 for "max". */
static int read_limit(int dfd, const char *file, int64_t *out)
{
	cleanup_free char *data = NULL;
	int ret = tern_cgv2_read_ctl(dfd, file, &data);

	if (ret < 0)
		return ret;
	if (strncmp(data, "max", 3) == 0) {
		*out = -1;
		return 0;
	}
	errno = 0;
	char *end;
	long long v = strtoll(data, &end, 10);
	if (errno || end == data)
		return -EINVAL;
	*out = v;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* delegation                                                             */

static bool v2_rootless;

void tern_cgroup_v2_set_rootless(bool on)
{
	v2_rootless = on;
}

static int enable_controllers(const char *dir, tern_error **err)
{
	cleanup_close int dfd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	cleanup_free char *avail = NULL;
	cleanup_free char *enabled = NULL;
	cleanup_free char *todo = tern_xstrdup("");
	int ret;

	if (dfd < 0)
		return tern_error_make(err, errno, "open cgroup `%s`", dir);
	ret = tern_cgv2_read_ctl(dfd, "cgroup.controllers", &avail);
	if (ret < 0)
		return tern_error_make(err, -ret, "read `%s/cgroup.controllers`", dir);
	ret = tern_cgv2_read_ctl(dfd, "cgroup.subtree_control", &enabled);
	if (ret < 0)
		return tern_error_make(err, -ret, "read `%s/cgroup.subtree_control`", dir);
	/* a threaded subtree (or its domain root) hands down only the
	 * controllers that work per thread */
	cleanup_free char *type = NULL;
	bool threaded =
	    tern_cgv2_read_ctl(dfd, "cgroup.type", &type) == 0 &&
	    (strncmp(type, "threaded", 8) == 0 || strncmp(type, "domain threaded", 15) == 0);

	for (size_t i = 0; i < sizeof(wanted_controllers) / sizeof(wanted_controllers[0]); i++) {
		const char *c = wanted_controllers[i];
		if (!word_in(avail, c) || word_in(enabled, c))
			continue;
		if (threaded && strcmp(c, "cpu") != 0 && strcmp(c, "cpuset") != 0 &&
		    strcmp(c, "pids") != 0)
			continue;
		char *next = tern_strdup_printf("%s%s+%s", todo, *todo ? " " : "", c);
		free(todo);
		todo = next;
	}
	if (*todo == '\0')
		return 0;

	cleanup_close int fd = openat(dfd, "cgroup.subtree_control", O_WRONLY | O_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM) && v2_rootless) {
		/* an ancestor above the delegated cgroup: what it hands down
		 * is what the user gets */
		tern_debug("rootless: cannot enable `%s` in `%s`", todo, dir);
		return 0;
	}
	if (fd < 0)
		return tern_error_make(err, errno, "open `%s/cgroup.subtree_control`", dir);
	ret = tern_write_all(fd, todo, strlen(todo));
	if (ret == -EBUSY)
		goto busy;
	if (ret == 0)
		return 0;

	/* The kernel takes the list all or nothing: retry one by one so that
	 * one refused controller (say cpuset with an odd parent) does not
	 * cost the others, and say which one failed. */
	for (char *save = NULL, *tok = strtok_r(todo, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save)) {
		ret = tern_write_all(fd, tok, strlen(tok));
		if (ret == -EBUSY)
			goto busy;
		if (ret < 0)
			tern_warn("cgroup v2: cannot enable controller `%s` in `%s`: %s", tok + 1,
				  dir, strerror(-ret));
	}
	return 0;

busy:
	return tern_error_make(err, EBUSY,
			       "enable controllers `%s` in `%s/cgroup.subtree_control`: the cgroup "
			       "has processes of its own, and cgroup v2 lets only a cgroup without "
			       "processes (or the root) hand controllers to its children",
			       todo, dir);
}

int tern_cgroup_v2_prepare(const char *root, const char *path, tern_error **err)
{
	cleanup_free char *rel = tern_xstrdup(path);
	cleanup_free char *cur = tern_xstrdup(root);
	char *p = rel;
	int ret;

	while (*p == '/')
		p++;
	/* Every level from the root to the parent of the container's cgroup:
	 * the container's own directory gets its controllers from its
	 * parent's subtree_control, and must not enable any itself (it will
	 * have processes). */
	for (;;) {
		char *slash = strchr(p, '/');
		ret = enable_controllers(cur, err);
		if (ret < 0)
			return tern_error_wrap(err, "cgroup v2 delegation for `%s`", path);
		if (slash == NULL)
			return 0;
		*slash = '\0';
		if (*p == '\0' || strcmp(p, ".") == 0 || strcmp(p, "..") == 0)
			return tern_error_make_quiet(err, EINVAL, "cgroup path `%s` is not clean",
						     path);
		char *next = tern_strdup_printf("%s/%s", cur, p);
		free(cur);
		cur = next;
		p = slash + 1;
		while (*p == '/')
			p++;
		if (*p == '\0')
			return 0;
	}
}

/* ---------------------------------------------------------------------- */
/* resources                                                              */

static int apply_memory(int dfd, const char *dir, const oci_memory *m, bool update,
			tern_error **err)
{
	int ret;
	bool limit_set = m->limit.set && m->limit.value != 0;

	if (limit_set) {
		/* memory.checkBeforeUpdate: v2 would OOM-kill to get under a
		 * lower limit; the spec asks to refuse instead. */
		if (update && m->check_before_update.set && m->check_before_update.value &&
		    m->limit.value > 0) {
			int64_t current;
			if (read_limit(dfd, "memory.current", &current) == 0 &&
			    current >= m->limit.value)
				return tern_error_make_quiet(
				    err, EBUSY,
				    "linux.resources.memory.limit: %" PRId64
				    " is not above the current usage %" PRId64
				    " (checkBeforeUpdate)",
				    m->limit.value, current);
		}
		cleanup_free char *v = int_or_max(m->limit.value);
		ret = tern_cgv2_write_ctl(dfd, dir, "memory.max", v, "linux.resources.memory.limit",
					  err);
		if (ret < 0)
			return ret;
	}
	if (m->swap.set) {
		int64_t limit = m->limit.value, out = 0;
		bool have_limit = limit_set;
		/* An update may change swap alone: the memory part is then the
		 * limit the cgroup has now. */
		if (!have_limit && read_limit(dfd, "memory.max", &limit) == 0)
			have_limit = true;
		ret = tern_cgroup_v2_swap_max(have_limit, limit, m->swap.value, &out);
		if (ret < 0)
			return tern_error_make_quiet(
			    err, EINVAL,
			    "linux.resources.memory.swap: %" PRId64
			    " cannot be set with memory limit "
			    "%s (memory+swap must be -1 or >= a finite memory limit)",
			    m->swap.value, have_limit && limit >= 0 ? "below it" : "unlimited");
		if (ret == 0) {
			cleanup_free char *v = int_or_max(out);
			if (!tern_cgv2_has_file(dfd, "memory.swap.max") && out < 0)
				tern_debug("cgroup v2: no memory.swap.max (no swap accounting)");
			else if ((ret = tern_cgv2_write_ctl(dfd, dir, "memory.swap.max", v,
							    "linux.resources.memory.swap", err)) <
				 0)
				return ret;
		}
	}
	if (m->reservation.set) {
		cleanup_free char *v = int_or_max(m->reservation.value);
		ret = tern_cgv2_write_ctl(dfd, dir, "memory.low", v,
					  "linux.resources.memory.reservation", err);
		if (ret < 0)
			return ret;
	}
	if (m->kernel.set && m->kernel.value != 0)
		tern_warn("linux.resources.memory.kernel: not supported by cgroup v2, ignored");
	if (m->kernel_tcp.set && m->kernel_tcp.value != 0)
		tern_warn("linux.resources.memory.kernelTCP: not supported by cgroup v2, ignored");
	if (m->swappiness.set)
		tern_warn("linux.resources.memory.swappiness: not supported by cgroup v2, ignored");
	if (m->disable_oom_killer.set && m->disable_oom_killer.value)
		tern_warn("linux.resources.memory.disableOOMKiller: not supported by cgroup v2, "
			  "ignored");
	return 0;
}

static int apply_cpu(int dfd, const char *dir, const oci_cpu *c, tern_error **err)
{
	int ret;

	if (c->shares.set && c->shares.value != 0) {
		cleanup_free char *v = tern_strdup_printf(
		    "%" PRIu64, tern_cgroup_v2_shares_to_weight(c->shares.value));
		ret = tern_cgv2_write_ctl(dfd, dir, "cpu.weight", v, "linux.resources.cpu.shares",
					  err);
		if (ret < 0)
			return ret;
	}
	bool quota_set = c->quota.set && c->quota.value != 0;
	bool period_set = c->period.set && c->period.value != 0;
	if (quota_set || period_set) {
		int64_t quota = -1;
		uint64_t period = 100000;
		cleanup_free char *cur = NULL;
		/* cpu.max holds both: keep the half that is not being set. */
		if (tern_cgv2_read_ctl(dfd, "cpu.max", &cur) == 0) {
			char q[32] = "";
			unsigned long long per = 0;
			if (sscanf(cur, "%31s %llu", q, &per) == 2) {
				quota = strcmp(q, "max") == 0 ? -1 : strtoll(q, NULL, 10);
				period = per;
			}
		}
		if (quota_set)
			quota = c->quota.value;
		if (period_set)
			period = c->period.value;
		cleanup_free char *v = tern_cgroup_v2_cpu_max_value(quota, period);
		ret = tern_cgv2_write_ctl(
		    dfd, dir, "cpu.max", v,
		    quota_set ? "linux.resources.cpu.quota" : "linux.resources.cpu.period", err);
		if (ret < 0)
			return ret;
	}
	if (c->burst.set) {
		cleanup_free char *v = tern_strdup_printf("%" PRIu64, c->burst.value);
		ret = tern_cgv2_write_ctl(dfd, dir, "cpu.max.burst", v, "linux.resources.cpu.burst",
					  err);
		if (ret < 0)
			return ret;
	}
	if ((c->realtime_runtime.set && c->realtime_runtime.value != 0) ||
	    (c->realtime_period.set && c->realtime_period.value != 0))
		return tern_error_make_quiet(err, ENOTSUP,
					     "linux.resources.cpu.realtimeRuntime/realtimePeriod: "
					     "cgroup v2 has no realtime cpu controller");
	if (c->cpus && *c->cpus) {
		ret = tern_cgv2_write_ctl(dfd, dir, "cpuset.cpus", c->cpus,
					  "linux.resources.cpu.cpus", err);
		if (ret < 0)
			return ret;
	}
	if (c->mems && *c->mems) {
		ret = tern_cgv2_write_ctl(dfd, dir, "cpuset.mems", c->mems,
					  "linux.resources.cpu.mems", err);
		if (ret < 0)
			return ret;
	}
	if (c->idle.set) {
		cleanup_free char *v = tern_strdup_printf("%" PRId64, c->idle.value);
		ret = tern_cgv2_write_ctl(dfd, dir, "cpu.idle", v, "linux.resources.cpu.idle", err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

typedef struct {
	int64_t major, minor;
	bool set[4];
	uint64_t rate[4];
} io_max_entry;

static void io_max_add(io_max_entry **list, size_t *n, const oci_blkio_throttle_device *d,
		       size_t len, int which)
{
	for (size_t i = 0; i < len; i++) {
		size_t j;
		for (j = 0; j < *n; j++)
			if ((*list)[j].major == d[i].major && (*list)[j].minor == d[i].minor)
				break;
		if (j == *n) {
			*list = realloc(*list, (*n + 1) * sizeof(**list));
			if (*list == NULL)
				abort();
			memset(&(*list)[j], 0, sizeof(**list));
			(*list)[j].major = d[i].major;
			(*list)[j].minor = d[i].minor;
			(*n)++;
		}
		(*list)[j].set[which] = true;
		(*list)[j].rate[which] = d[i].rate;
	}
}

static int apply_blkio(int dfd, const char *dir, const oci_blkio *b, tern_error **err)
{
	bool bfq = tern_cgv2_has_file(dfd, "io.bfq.weight");
	int ret;

	if (b->weight.set && b->weight.value != 0) {
		/* BFQ's weight has blkio's range; io.weight needs converting. */
		cleanup_free char *v = tern_strdup_printf(
		    "%" PRIu64,
		    bfq ? b->weight.value : tern_cgroup_v2_blkio_to_io_weight(b->weight.value));
		ret = tern_cgv2_write_ctl(dfd, dir, bfq ? "io.bfq.weight" : "io.weight", v,
					  "linux.resources.blockIO.weight", err);
		if (ret < 0)
			return ret;
	}
	if (b->leaf_weight.set)
		tern_warn(
		    "linux.resources.blockIO.leafWeight: not supported by cgroup v2, ignored");
	for (size_t i = 0; i < b->weight_device_len; i++) {
		const oci_blkio_weight_device *d = &b->weight_device[i];
		if (d->leaf_weight.set)
			tern_warn("linux.resources.blockIO.weightDevice[%zu].leafWeight: not "
				  "supported by cgroup v2, ignored",
				  i);
		if (!d->weight.set)
			continue;
		cleanup_free char *v = tern_strdup_printf(
		    "%" PRId64 ":%" PRId64 " %" PRIu64, d->major, d->minor,
		    bfq ? d->weight.value : tern_cgroup_v2_blkio_to_io_weight(d->weight.value));
		ret = tern_cgv2_write_ctl(dfd, dir, bfq ? "io.bfq.weight" : "io.weight", v,
					  "linux.resources.blockIO.weightDevice", err);
		if (ret < 0)
			return ret;
	}

	cleanup_free io_max_entry *list = NULL;
	size_t n = 0;
	io_max_add(&list, &n, b->throttle_read_bps_device, b->throttle_read_bps_device_len, 0);
	io_max_add(&list, &n, b->throttle_write_bps_device, b->throttle_write_bps_device_len, 1);
	io_max_add(&list, &n, b->throttle_read_iops_device, b->throttle_read_iops_device_len, 2);
	io_max_add(&list, &n, b->throttle_write_iops_device, b->throttle_write_iops_device_len, 3);
	for (size_t i = 0; i < n; i++) {
		cleanup_free char *line = tern_cgroup_v2_io_max_line(list[i].major, list[i].minor,
								     list[i].set, list[i].rate);
		ret = tern_cgv2_write_ctl(dfd, dir, "io.max", line,
					  "linux.resources.blockIO.throttle*", err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int apply_hugetlb_rdma(int dfd, const char *dir, const oci_resources *r, tern_error **err)
{
	int ret;

	for (size_t i = 0; i < r->hugepage_limits_len; i++) {
		const oci_hugepage_limit *h = &r->hugepage_limits[i];
		cleanup_free char *file = tern_strdup_printf("hugetlb.%s.max", h->page_size);
		cleanup_free char *rsvd = tern_strdup_printf("hugetlb.%s.rsvd.max", h->page_size);
		cleanup_free char *v = tern_strdup_printf("%" PRIu64, h->limit);
		ret = tern_cgv2_write_ctl(dfd, dir, file, v, "linux.resources.hugepageLimits", err);
		if (ret < 0)
			return ret;
		/* Reservations count against .rsvd.max (kernel >= 5.7): limit
		 * them alike, or a mmap(MAP_NORESERVE)-less program could
		 * reserve more than the limit it may fault in. */
		if (tern_cgv2_has_file(dfd, rsvd) &&
		    (ret = tern_cgv2_write_ctl(dfd, dir, rsvd, v, "linux.resources.hugepageLimits",
					       err)) < 0)
			return ret;
	}
	for (size_t i = 0; i < r->rdma_len; i++) {
		const oci_rdma *d = &r->rdma[i];
		cleanup_free char *v = tern_xstrdup(d->name);
		if (d->hca_handles.set) {
			char *n =
			    tern_strdup_printf("%s hca_handle=%" PRIu64, v, d->hca_handles.value);
			free(v);
			v = n;
		}
		if (d->hca_objects.set) {
			char *n =
			    tern_strdup_printf("%s hca_object=%" PRIu64, v, d->hca_objects.value);
			free(v);
			v = n;
		}
		if (!d->hca_handles.set && !d->hca_objects.set)
			continue;
		ret = tern_cgv2_write_ctl(dfd, dir, "rdma.max", v, "linux.resources.rdma", err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* linux.resources.unified: raw files. Applied last so that they override
 * the typed fields, as the spec's example of memory.high next to
 * memory.limit expects. */
static int apply_unified(int dfd, const char *dir, const oci_map *u, tern_error **err)
{
	cleanup_free char *controllers = NULL;
	int ret;

	if (u->len == 0)
		return 0;
	ret = tern_cgv2_read_ctl(dfd, "cgroup.controllers", &controllers);
	if (ret < 0)
		return tern_error_make(err, -ret, "read `%s/cgroup.controllers`", dir);
	controllers[strcspn(controllers, "\n")] = '\0';
	for (size_t i = 0; i < u->len; i++) {
		const char *key = u->items[i].key;
		const char *dot = strchr(key, '.');
		if (!tern_cgv2_valid_file_key(key) || dot == NULL)
			return tern_error_make_quiet(
			    err, EINVAL,
			    "linux.resources.unified: `%s` is not a cgroup v2 file name", key);
		cleanup_free char *ctrl = strndup(key, (size_t)(dot - key));
		if (ctrl == NULL)
			abort();
		if (strcmp(ctrl, "cgroup") != 0 && !word_in(controllers, ctrl))
			return tern_error_make_quiet(
			    err, EINVAL,
			    "linux.resources.unified: `%s`: controller `%s` is not enabled "
			    "for `%s` (its cgroup.controllers: %s)",
			    key, ctrl, dir, *controllers ? controllers : "none");
		cleanup_free char *field = tern_strdup_printf("linux.resources.unified.%s", key);
		ret = tern_cgv2_write_ctl(dfd, dir, key, u->items[i].value, field, err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int tern_cgroup_v2_apply(const char *dir, const oci_resources *r, bool update, tern_error **err)
{
	cleanup_close int dfd = -1;
	int ret;

	if (r == NULL)
		return 0;
	dfd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (dfd < 0)
		return tern_error_make(err, errno, "open cgroup `%s`", dir);

	if (r->memory && (ret = apply_memory(dfd, dir, r->memory, update, err)) < 0)
		return ret;
	if (r->cpu && (ret = apply_cpu(dfd, dir, r->cpu, err)) < 0)
		return ret;
	if (r->pids_limit.set && r->pids_limit.value != 0) {
		cleanup_free char *v = int_or_max(r->pids_limit.value);
		ret =
		    tern_cgv2_write_ctl(dfd, dir, "pids.max", v, "linux.resources.pids.limit", err);
		if (ret < 0)
			return ret;
	}
	if (r->block_io && (ret = apply_blkio(dfd, dir, r->block_io, err)) < 0)
		return ret;
	if ((ret = apply_hugetlb_rdma(dfd, dir, r, err)) < 0)
		return ret;
	return apply_unified(dfd, dir, &r->unified, err);
}
