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
/* validation                                                             */

/* A file name of the cgroup directory, never a path out of it. */
static bool valid_file_key(const char *key)
{
	return key[0] != '\0' && strchr(key, '/') == NULL && strstr(key, "..") == NULL &&
	       strcmp(key, ".") != 0;
}

int tern_cgroup_v2_validate(const oci_resources *r, tern_error **err)
{
	if (r == NULL)
		return 0;
	if (r->memory) {
		const oci_memory *m = r->memory;
		int64_t out;
		if (m->limit.set && m->limit.value < -1)
			return tern_error_make_quiet(
			    err, EINVAL, "linux.resources.memory.limit: invalid value %" PRId64,
			    m->limit.value);
		if (m->reservation.set && m->reservation.value < -1)
			return tern_error_make_quiet(
			    err, EINVAL,
			    "linux.resources.memory.reservation: invalid value %" PRId64,
			    m->reservation.value);
		/* Without a limit in the same config, an update may still take
		 * it from the cgroup: only check the pair when both are here. */
		if (m->swap.set && m->limit.set &&
		    tern_cgroup_v2_swap_max(true, m->limit.value, m->swap.value, &out) < 0)
			return tern_error_make_quiet(
			    err, EINVAL,
			    "linux.resources.memory.swap: %" PRId64 " is not a valid memory+swap "
			    "limit for memory.limit %" PRId64 " (it must be -1 or >= the limit)",
			    m->swap.value, m->limit.value);
		if (m->swap.set && m->swap.value < -1)
			return tern_error_make_quiet(
			    err, EINVAL, "linux.resources.memory.swap: invalid value %" PRId64,
			    m->swap.value);
	}
	if (r->cpu) {
		const oci_cpu *c = r->cpu;
		if (c->shares.set && c->shares.value != 0 &&
		    (c->shares.value < 2 || c->shares.value > 262144))
			return tern_error_make_quiet(err, EINVAL,
						     "linux.resources.cpu.shares: %" PRIu64
						     " is outside 2..262144",
						     c->shares.value);
		if (c->period.set && c->period.value != 0 &&
		    (c->period.value < 1000 || c->period.value > 1000000))
			return tern_error_make_quiet(err, EINVAL,
						     "linux.resources.cpu.period: %" PRIu64
						     " is outside 1000..1000000",
						     c->period.value);
		if (c->cpus && !tern_valid_cpu_list(c->cpus))
			return tern_error_make_quiet(
			    err, EINVAL, "linux.resources.cpu.cpus: `%s` is not a cpu list",
			    c->cpus);
		if (c->mems && !tern_valid_cpu_list(c->mems))
			return tern_error_make_quiet(
			    err, EINVAL, "linux.resources.cpu.mems: `%s` is not a memory node list",
			    c->mems);
		if (c->idle.set && c->idle.value != 0 && c->idle.value != 1)
			return tern_error_make_quiet(
			    err, EINVAL, "linux.resources.cpu.idle: must be 0 or 1, not %" PRId64,
			    c->idle.value);
	}
	if (r->block_io) {
		const oci_blkio *b = r->block_io;
		if (b->weight.set && b->weight.value != 0 &&
		    (b->weight.value < 10 || b->weight.value > 1000))
			return tern_error_make_quiet(err, EINVAL,
						     "linux.resources.blockIO.weight: %" PRIu64
						     " is outside 10..1000",
						     b->weight.value);
		for (size_t i = 0; i < b->weight_device_len; i++) {
			const oci_blkio_weight_device *d = &b->weight_device[i];
			if (d->weight.set && (d->weight.value < 10 || d->weight.value > 1000))
				return tern_error_make_quiet(
				    err, EINVAL,
				    "linux.resources.blockIO.weightDevice[%zu].weight: %" PRIu64
				    " is outside 10..1000",
				    i, d->weight.value);
		}
	}
	for (size_t i = 0; i < r->hugepage_limits_len; i++) {
		const char *ps = r->hugepage_limits[i].page_size;
		if (ps == NULL || !valid_file_key(ps))
			return tern_error_make_quiet(
			    err, EINVAL,
			    "linux.resources.hugepageLimits[%zu].pageSize: `%s` is invalid", i,
			    ps ? ps : "");
	}
	for (size_t i = 0; i < r->rdma_len; i++) {
		const char *name = r->rdma[i].name;
		if (name == NULL || name[0] == '\0' || strpbrk(name, " \n\t") != NULL)
			return tern_error_make_quiet(
			    err, EINVAL, "linux.resources.rdma: invalid device name `%s`",
			    name ? name : "");
	}
	for (size_t i = 0; i < r->unified.len; i++) {
		const char *key = r->unified.items[i].key;
		if (!valid_file_key(key) || strchr(key, '.') == NULL)
			return tern_error_make_quiet(
			    err, EINVAL,
			    "linux.resources.unified: `%s` is not a cgroup v2 file name "
			    "(\"controller.file\", no \"/\" or \"..\")",
			    key);
		/* the files through which tern itself manages the cgroup: a raw
		 * write would move processes or undo pause and delegation */
		static const char *const reserved[] = {
		    "cgroup.procs", "cgroup.threads", "cgroup.subtree_control", "cgroup.freeze",
		    "cgroup.kill",  "cgroup.events",  "cgroup.controllers"};
		for (size_t j = 0; j < sizeof(reserved) / sizeof(reserved[0]); j++)
			if (strcmp(key, reserved[j]) == 0)
				return tern_error_make_quiet(
				    err, EINVAL,
				    "linux.resources.unified: `%s` is managed by the runtime and "
				    "cannot be set",
				    key);
	}
	for (size_t i = 0; i < r->devices_len; i++) {
		const oci_device_cgroup_rule *d = &r->devices[i];
		if (d->type && strcmp(d->type, "a") != 0 && strcmp(d->type, "b") != 0 &&
		    strcmp(d->type, "c") != 0)
			return tern_error_make_quiet(
			    err, EINVAL,
			    "linux.resources.devices[%zu].type: `%s` is not "
			    "a, b or c",
			    i, d->type);
		if ((d->major.set && (d->major.value < -1 || d->major.value > UINT32_MAX)) ||
		    (d->minor.set && (d->minor.value < -1 || d->minor.value > UINT32_MAX)))
			return tern_error_make_quiet(
			    err, EINVAL, "linux.resources.devices[%zu]: invalid major or minor", i);
		if (d->access && d->access[strspn(d->access, "rwm")] != '\0')
			return tern_error_make_quiet(err, EINVAL,
						     "linux.resources.devices[%zu].access: `%s` is "
						     "not made of r, w and m",
						     i, d->access);
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* file helpers                                                           */

/* Write `value` to DIR/FILE; the error names the config field. */
static int write_ctl(int dfd, const char *dir, const char *file, const char *value,
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

static int read_ctl(int dfd, const char *file, char **out)
{
	cleanup_close int fd = openat(dfd, file, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return tern_read_fd_all(fd, out, NULL, 0);
}

static bool has_file(int dfd, const char *file)
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
	int ret = read_ctl(dfd, file, &data);

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
	ret = read_ctl(dfd, "cgroup.controllers", &avail);
	if (ret < 0)
		return tern_error_make(err, -ret, "read `%s/cgroup.controllers`", dir);
	ret = read_ctl(dfd, "cgroup.subtree_control", &enabled);
	if (ret < 0)
		return tern_error_make(err, -ret, "read `%s/cgroup.subtree_control`", dir);
	/* a threaded subtree (or its domain root) hands down only the
	 * controllers that work per thread */
	cleanup_free char *type = NULL;
	bool threaded =
	    read_ctl(dfd, "cgroup.type", &type) == 0 &&
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
		ret = write_ctl(dfd, dir, "memory.max", v, "linux.resources.memory.limit", err);
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
			if (!has_file(dfd, "memory.swap.max") && out < 0)
				tern_debug("cgroup v2: no memory.swap.max (no swap accounting)");
			else if ((ret = write_ctl(dfd, dir, "memory.swap.max", v,
						  "linux.resources.memory.swap", err)) < 0)
				return ret;
		}
	}
	if (m->reservation.set) {
		cleanup_free char *v = int_or_max(m->reservation.value);
		ret =
		    write_ctl(dfd, dir, "memory.low", v, "linux.resources.memory.reservation", err);
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
		ret = write_ctl(dfd, dir, "cpu.weight", v, "linux.resources.cpu.shares", err);
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
		if (read_ctl(dfd, "cpu.max", &cur) == 0) {
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
		ret = write_ctl(
		    dfd, dir, "cpu.max", v,
		    quota_set ? "linux.resources.cpu.quota" : "linux.resources.cpu.period", err);
		if (ret < 0)
			return ret;
	}
	if (c->burst.set) {
		cleanup_free char *v = tern_strdup_printf("%" PRIu64, c->burst.value);
		ret = write_ctl(dfd, dir, "cpu.max.burst", v, "linux.resources.cpu.burst", err);
		if (ret < 0)
			return ret;
	}
	if ((c->realtime_runtime.set && c->realtime_runtime.value != 0) ||
	    (c->realtime_period.set && c->realtime_period.value != 0))
		return tern_error_make_quiet(err, ENOTSUP,
					     "linux.resources.cpu.realtimeRuntime/realtimePeriod: "
					     "cgroup v2 has no realtime cpu controller");
	if (c->cpus && *c->cpus) {
		ret = write_ctl(dfd, dir, "cpuset.cpus", c->cpus, "linux.resources.cpu.cpus", err);
		if (ret < 0)
			return ret;
	}
	if (c->mems && *c->mems) {
		ret = write_ctl(dfd, dir, "cpuset.mems", c->mems, "linux.resources.cpu.mems", err);
		if (ret < 0)
			return ret;
	}
	if (c->idle.set) {
		cleanup_free char *v = tern_strdup_printf("%" PRId64, c->idle.value);
		ret = write_ctl(dfd, dir, "cpu.idle", v, "linux.resources.cpu.idle", err);
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
	bool bfq = has_file(dfd, "io.bfq.weight");
	int ret;

	if (b->weight.set && b->weight.value != 0) {
		/* BFQ's weight has blkio's range; io.weight needs converting. */
		cleanup_free char *v = tern_strdup_printf(
		    "%" PRIu64,
		    bfq ? b->weight.value : tern_cgroup_v2_blkio_to_io_weight(b->weight.value));
		ret = write_ctl(dfd, dir, bfq ? "io.bfq.weight" : "io.weight", v,
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
		ret = write_ctl(dfd, dir, bfq ? "io.bfq.weight" : "io.weight", v,
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
		ret = write_ctl(dfd, dir, "io.max", line, "linux.resources.blockIO.throttle*", err);
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
		ret = write_ctl(dfd, dir, file, v, "linux.resources.hugepageLimits", err);
		if (ret < 0)
			return ret;
		/* Reservations count against .rsvd.max (kernel >= 5.7): limit
		 * them alike, or a mmap(MAP_NORESERVE)-less program could
		 * reserve more than the limit it may fault in. */
		if (has_file(dfd, rsvd) &&
		    (ret = write_ctl(dfd, dir, rsvd, v, "linux.resources.hugepageLimits", err)) < 0)
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
		ret = write_ctl(dfd, dir, "rdma.max", v, "linux.resources.rdma", err);
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
	ret = read_ctl(dfd, "cgroup.controllers", &controllers);
	if (ret < 0)
		return tern_error_make(err, -ret, "read `%s/cgroup.controllers`", dir);
	controllers[strcspn(controllers, "\n")] = '\0';
	for (size_t i = 0; i < u->len; i++) {
		const char *key = u->items[i].key;
		const char *dot = strchr(key, '.');
		if (!valid_file_key(key) || dot == NULL)
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
		ret = write_ctl(dfd, dir, key, u->items[i].value, field, err);
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
		ret = write_ctl(dfd, dir, "pids.max", v, "linux.resources.pids.limit", err);
		if (ret < 0)
			return ret;
	}
	if (r->block_io && (ret = apply_blkio(dfd, dir, r->block_io, err)) < 0)
		return ret;
	if ((ret = apply_hugetlb_rdma(dfd, dir, r, err)) < 0)
		return ret;
	return apply_unified(dfd, dir, &r->unified, err);
}

/* ---------------------------------------------------------------------- */
/* freezer                                                                */

/* The value of `key` in a flat-keyed file ("key value\n" lines). */
static bool keyed_value(const char *data, const char *key, uint64_t *out)
{
	size_t n = strlen(key);
	for (const char *p = data; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, key, n) == 0 && p[n] == ' ') {
			*out = strncmp(p + n + 1, "max", 3) == 0 ? UINT64_MAX
								 : strtoull(p + n + 1, NULL, 10);
			return true;
		}
	}
	return false;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int tern_cgroup_v2_freeze(const char *dir, bool freeze, tern_error **err)
{
	cleanup_close int dfd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	cleanup_close int efd = -1;
	int ret;

	if (dfd < 0)
		return tern_error_make(err, errno, "open cgroup `%s`", dir);
	/* Open cgroup.events first so no change between write and poll is
	 * lost: kernfs flags the open file on every change. */
	efd = openat(dfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
	if (efd < 0)
		return tern_error_make(err, errno, "open `%s/cgroup.events`", dir);
	ret = write_ctl(dfd, dir, "cgroup.freeze", freeze ? "1" : "0", freeze ? "pause" : "resume",
			err);
	if (ret < 0)
		return ret;

	int64_t deadline = now_ms() + 10000;
	for (;;) {
		char buf[512];
		ssize_t len = pread(efd, buf, sizeof(buf) - 1, 0);
		uint64_t frozen = 0;
		if (len < 0)
			return tern_error_make(err, errno, "read `%s/cgroup.events`", dir);
		buf[len] = '\0';
		if (keyed_value(buf, "frozen", &frozen) && (frozen == 1) == freeze)
			return 0;
		int64_t left = deadline - now_ms();
		if (left <= 0)
			break;
		/* kernfs signals POLLPRI|POLLERR on change; also wake every
		 * 100 ms in case a notification was coalesced away. */
		struct pollfd pfd = {.fd = efd, .events = POLLPRI};
		if (poll(&pfd, 1, left < 100 ? (int)left : 100) < 0 && errno != EINTR)
			return tern_error_make(err, errno, "poll `%s/cgroup.events`", dir);
	}
	/* Do not leave a half-frozen container behind a failed pause. */
	if (freeze)
		(void)write_ctl(dfd, dir, "cgroup.freeze", "0", "pause", NULL);
	return tern_error_make_quiet(err, ETIMEDOUT, "%s: `%s` did not become %s within 10 s",
				     freeze ? "pause" : "resume", dir,
				     freeze ? "frozen" : "thawed");
}

/* ---------------------------------------------------------------------- */
/* statistics                                                             */

static void read_single(int dfd, const char *file, uint64_t *out)
{
	cleanup_free char *data = NULL;
	if (read_ctl(dfd, file, &data) < 0)
		return;
	*out = strncmp(data, "max", 3) == 0 ? UINT64_MAX : strtoull(data, NULL, 10);
}

static void stats_cpu(int dfd, tern_cgroup_stats *s)
{
	cleanup_free char *data = NULL;
	uint64_t v;

	/* cpu.stat exists without the cpu controller too (usage only). v2
	 * counts microseconds, runc's stats nanoseconds. */
	if (read_ctl(dfd, "cpu.stat", &data) < 0)
		return;
	s->has_cpu = true;
	if (keyed_value(data, "usage_usec", &v))
		s->cpu_usage.total = v * 1000;
	if (keyed_value(data, "user_usec", &v))
		s->cpu_usage.user = v * 1000;
	if (keyed_value(data, "system_usec", &v))
		s->cpu_usage.kernel = v * 1000;
	keyed_value(data, "nr_periods", &s->cpu_throttling.periods);
	keyed_value(data, "nr_throttled", &s->cpu_throttling.throttled_periods);
	if (keyed_value(data, "throttled_usec", &v))
		s->cpu_throttling.throttled_time = v * 1000;
}

static void stats_memory(int dfd, tern_cgroup_stats *s)
{
	cleanup_free char *data = NULL;
	cleanup_free char *events = NULL;
	uint64_t swap_cur = 0, swap_max = 0;

	if (!has_file(dfd, "memory.current"))
		return;
	s->has_memory = true;
	read_single(dfd, "memory.current", &s->memory_usage.usage);
	read_single(dfd, "memory.max", &s->memory_usage.limit);
	read_single(dfd, "memory.peak", &s->memory_usage.max);
	if (read_ctl(dfd, "memory.events", &events) == 0)
		keyed_value(events, "max", &s->memory_usage.failcnt);
	/* v1 reports memory+swap; so does runc on v2, for its clients. */
	if (has_file(dfd, "memory.swap.current")) {
		read_single(dfd, "memory.swap.current", &swap_cur);
		read_single(dfd, "memory.swap.max", &swap_max);
		s->memory_swap.usage = s->memory_usage.usage + swap_cur;
		s->memory_swap.limit = swap_max == UINT64_MAX || s->memory_usage.limit == UINT64_MAX
					   ? UINT64_MAX
					   : swap_max + s->memory_usage.limit;
	}
	if (read_ctl(dfd, "memory.stat", &data) < 0)
		return;
	for (char *save = NULL, *line = strtok_r(data, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' ');
		if (sp == NULL)
			continue;
		*sp = '\0';
		uint64_t v = strtoull(sp + 1, NULL, 10);
		/* v1's "cache" is the page cache: v2 calls it "file". */
		if (strcmp(line, "file") == 0)
			s->memory_cache = v;
		s->memory_raw =
		    realloc(s->memory_raw, (s->memory_raw_len + 1) * sizeof(*s->memory_raw));
		if (s->memory_raw == NULL)
			abort();
		s->memory_raw[s->memory_raw_len++] =
		    (tern_cgroup_stat_kv){.key = tern_xstrdup(line), .value = v};
	}
}

static void stats_pids(int dfd, tern_cgroup_stats *s)
{
	if (!has_file(dfd, "pids.current"))
		return;
	s->has_pids = true;
	read_single(dfd, "pids.current", &s->pids_current);
	read_single(dfd, "pids.max", &s->pids_limit);
	if (s->pids_limit == UINT64_MAX)
		s->pids_limit = 0; /* "max", printed as 0 like runc */
}

static void blkio_add(tern_cgroup_blkio_list *l, uint64_t major, uint64_t minor, const char *op,
		      uint64_t value)
{
	l->items = realloc(l->items, (l->len + 1) * sizeof(*l->items));
	if (l->items == NULL)
		abort();
	l->items[l->len++] = (tern_cgroup_blkio_entry){
	    .major = major, .minor = minor, .op = tern_xstrdup(op), .value = value};
}

static void stats_io(int dfd, tern_cgroup_stats *s)
{
	cleanup_free char *data = NULL;

	if (read_ctl(dfd, "io.stat", &data) < 0)
		return;
	s->has_blkio = true;
	/* "8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0" per device,
	 * mapped onto v1's lists as runc does: bytes -> io_service_bytes,
	 * ios -> io_serviced. */
	for (char *save = NULL, *line = strtok_r(data, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long major, minor;
		if (sscanf(line, "%llu:%llu", &major, &minor) != 2)
			continue;
		for (char *s2 = NULL, *tok = strtok_r(line, " ", &s2); tok;
		     tok = strtok_r(NULL, " ", &s2)) {
			static const struct {
				const char *key, *op;
				bool bytes;
			} map[] = {{"rbytes", "Read", true},	{"wbytes", "Write", true},
				   {"dbytes", "Discard", true}, {"rios", "Read", false},
				   {"wios", "Write", false},	{"dios", "Discard", false}};
			char *eq = strchr(tok, '=');
			if (eq == NULL)
				continue;
			*eq = '\0';
			for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
				if (strcmp(tok, map[i].key) == 0)
					blkio_add(map[i].bytes ? &s->io_service_bytes_recursive
							       : &s->io_serviced_recursive,
						  major, minor, map[i].op,
						  strtoull(eq + 1, NULL, 10));
		}
	}
}

static void stats_hugetlb(int dfd, tern_cgroup_stats *s)
{
	DIR *d = opendir("/sys/kernel/mm/hugepages");
	struct dirent *de;

	if (d == NULL)
		return;
	/* The page sizes this kernel has, as "hugepages-2048kB" entries; the
	 * cgroup files use the kernel's short form: 2MB, 1GB, 64KB. */
	while ((de = readdir(d)) != NULL) {
		unsigned long kb;
		char name[32];
		if (sscanf(de->d_name, "hugepages-%lukB", &kb) != 1)
			continue;
		if (kb >= 1024 * 1024)
			snprintf(name, sizeof(name), "%luGB", kb / (1024 * 1024));
		else if (kb >= 1024)
			snprintf(name, sizeof(name), "%luMB", kb / 1024);
		else
			snprintf(name, sizeof(name), "%luKB", kb);
		cleanup_free char *cur = tern_strdup_printf("hugetlb.%s.current", name);
		if (!has_file(dfd, cur))
			continue;
		tern_cgroup_hugetlb_entry h = {.pagesize = tern_xstrdup(name)};
		read_single(dfd, cur, &h.usage);
		cleanup_free char *ev = tern_strdup_printf("hugetlb.%s.events", name);
		cleanup_free char *data = NULL;
		if (read_ctl(dfd, ev, &data) == 0)
			keyed_value(data, "max", &h.failcnt);
		s->hugetlb = realloc(s->hugetlb, (s->hugetlb_len + 1) * sizeof(*s->hugetlb));
		if (s->hugetlb == NULL)
			abort();
		s->hugetlb[s->hugetlb_len++] = h;
		s->has_hugetlb = true;
	}
	closedir(d);
}

int tern_cgroup_v2_hugetlb_stats(const char *dir, tern_cgroup_stats *s, tern_error **err)
{
	cleanup_close int dfd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);

	if (dfd < 0)
		return tern_error_make(err, errno, "stats of cgroup `%s`", dir);
	stats_hugetlb(dfd, s);
	return 0;
}

int tern_cgroup_v2_stats(const char *dir, tern_cgroup_stats *s, tern_error **err)
{
	cleanup_close int dfd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);

	if (dfd < 0)
		return tern_error_make(err, errno, "stats of cgroup `%s`", dir);
	stats_cpu(dfd, s);
	stats_memory(dfd, s);
	stats_pids(dfd, s);
	stats_io(dfd, s);
	stats_hugetlb(dfd, s);
	return 0;
}

int tern_cgroup_v2_oom_wait(const char *dir, uint64_t *oom_kill, int timeout_ms, tern_error **err)
{
	cleanup_free char *file = tern_strdup_printf("%s/memory.events", dir);
	cleanup_close int ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	int64_t deadline = timeout_ms < 0 ? INT64_MAX : now_ms() + timeout_ms;

	if (ifd < 0)
		return tern_error_make(err, errno, "inotify_init1");
	/* memory.events is a kernfs file that reports changes as IN_MODIFY;
	 * the watch is set before the first read so no event falls between. */
	if (inotify_add_watch(ifd, file, IN_MODIFY) < 0)
		return tern_error_make(err, errno, "watch `%s`", file);
	for (;;) {
		cleanup_free char *data = NULL;
		uint64_t n = 0;
		int ret = tern_read_file(file, &data, NULL, 0, NULL);
		if (ret == -ENOENT || ret == -ENODEV)
			return 0;
		if (ret < 0)
			return tern_error_make(err, -ret, "read `%s`", file);
		if (keyed_value(data, "oom_kill", &n) && n > *oom_kill) {
			*oom_kill = n;
			return 1;
		}
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return 0;
		struct pollfd pfd = {.fd = ifd, .events = POLLIN};
		ret = poll(&pfd, 1, left > INT_MAX ? -1 : (int)left);
		if (ret < 0 && errno != EINTR)
			return tern_error_make(err, errno, "poll inotify for `%s`", file);
		if (ret > 0) {
			char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
			ssize_t len = read(ifd, buf, sizeof(buf));
			for (char *p = buf; len > 0 && p < buf + len;) {
				const struct inotify_event *ev = (const struct inotify_event *)p;
				if (ev->mask & IN_IGNORED)
					return 0; /* the cgroup was removed */
				p += sizeof(*ev) + ev->len;
			}
		}
	}
}
