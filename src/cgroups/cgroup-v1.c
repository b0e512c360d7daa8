/* cgroup v1: linux.resources into controller files, freezer (stats and OOM
 * notification: cgroup-v1-stats.c).
 *
 * Each function works on one hierarchy's directory; which controllers it
 * carries comes from the mount's super options. Field names in messages are
 * the config.json names, so a user can find what to change. */
#include "cgroup-v1.h"
#include "cgroup-v1-internal.h"
#include "log.h"
#include "utils.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define F "linux.resources."

/* ---- small helpers ---- */

/* Is `name` one of the comma-separated words of the super options? (A
 * substring test would take "cpu" from "cpuset" or "cpuacct".) */
bool tern_cgv1_has_ctrl(const char *controllers, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = controllers; p && *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == n && strncmp(p, name, n) == 0)
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

bool tern_cgv1_file_exists(const char *dir, const char *file)
{
	cleanup_free char *path = tern_strdup_printf("%s/%s", dir, file);
	struct stat st;

	return stat(path, &st) == 0;
}

/* One value into one control file, in one write(2): the kernel parses each
 * write on its own, so a value must never be split. A missing file means
 * the kernel (or this hierarchy) lacks the feature: say so, with the field. */
int tern_cgv1_write_value(const char *dir, const char *file, const char *value, const char *field,
			  tern_error **err)
{
	cleanup_free char *path = tern_strdup_printf("%s/%s", dir, file);
	cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC);
	size_t len = strlen(value);
	ssize_t n;

	if (fd < 0 && errno == ENOENT)
		return tern_error_make(err, ENOENT, "%s: not supported by this kernel: open `%s`",
				       field, path);
	if (fd < 0)
		return tern_error_make(err, errno, "%s: open `%s`", field, path);
	do
		n = write(fd, value, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return tern_error_make(err, errno, "%s: write `%s` to `%s`", field, value, path);
	if ((size_t)n != len)
		return tern_error_make(err, EIO, "%s: short write to `%s`", field, path);
	return 0;
}

static int write_i64(const char *dir, const char *file, int64_t v, const char *field,
		     tern_error **err)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRId64, v);
	return tern_cgv1_write_value(dir, file, buf, field, err);
}

static int write_u64(const char *dir, const char *file, uint64_t v, const char *field,
		     tern_error **err)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return tern_cgv1_write_value(dir, file, buf, field, err);
}

/* A single number from a control file; "max" reads as UINT64_MAX. */
int tern_cgv1_read_u64(const char *dir, const char *file, uint64_t *out)
{
	cleanup_free char *path = tern_strdup_printf("%s/%s", dir, file);
	cleanup_free char *data = NULL;
	char *end;
	int ret = tern_read_file(path, &data, NULL, 4096, NULL);

	if (ret < 0)
		return ret;
	if (strncmp(data, "max", 3) == 0) {
		*out = UINT64_MAX;
		return 0;
	}
	errno = 0;
	*out = strtoull(data, &end, 10);
	if (errno || end == data)
		return -EINVAL;
	return 0;
}

/* ---- validation ---- */

static int validate_device_rule(const oci_device_cgroup_rule *d, size_t i, tern_error **err)
{
	const char *type = d->type ? d->type : "a";

	if (strcmp(type, "a") != 0 && strcmp(type, "b") != 0 && strcmp(type, "c") != 0)
		return tern_error_make_quiet(
		    err, EINVAL, F "devices[%zu].type `%s`: must be \"a\", \"b\" or \"c\"", i,
		    type);
	if (d->access) {
		if (*d->access == '\0' || strspn(d->access, "rwm") != strlen(d->access))
			return tern_error_make_quiet(
			    err, EINVAL, F "devices[%zu].access `%s`: must be letters of \"rwm\"",
			    i, d->access);
	}
	if ((d->major.set && d->major.value < -1) || (d->minor.set && d->minor.value < -1))
		return tern_error_make_quiet(err, EINVAL,
					     F "devices[%zu]: negative major or minor number", i);
	return 0;
}

static int validate_weight(uint64_t w, const char *field, tern_error **err)
{
	/* 0 means "not set" (runc); otherwise the kernel's range */
	if (w != 0 && (w < 10 || w > 1000))
		return tern_error_make_quiet(err, EINVAL, "%s %" PRIu64 ": must be 10..1000", field,
					     w);
	return 0;
}

static int validate_memory(const oci_memory *m, tern_error **err)
{
	const struct {
		const oci_opt_int64 *v;
		const char *name;
	} bytes[] = {{&m->limit, "limit"},
		     {&m->reservation, "reservation"},
		     {&m->kernel, "kernel"},
		     {&m->kernel_tcp, "kernelTCP"}};

	/* -1 is "unlimited" to the kernel; anything further below is noise */
	for (size_t i = 0; i < sizeof(bytes) / sizeof(bytes[0]); i++)
		if (bytes[i].v->set && bytes[i].v->value < -1)
			return tern_error_make_quiet(
			    err, EINVAL, F "memory.%s %" PRId64 ": must be -1 or positive",
			    bytes[i].name, bytes[i].v->value);
	/* v1 swap is memory+swap: it cannot be below the memory limit */
	if (m->swap.set && m->swap.value != -1 && m->swap.value != 0) {
		if (m->swap.value < 0)
			return tern_error_make_quiet(
			    err, EINVAL, F "memory.swap %" PRId64 ": must be -1 or positive",
			    m->swap.value);
		if (m->limit.set && m->limit.value > 0 && m->swap.value < m->limit.value)
			return tern_error_make_quiet(
			    err, EINVAL,
			    F "memory.swap %" PRId64 " is below memory.limit %" PRId64
			      ": on cgroup v1 swap is the limit of memory plus swap",
			    m->swap.value, m->limit.value);
		if (m->limit.set && m->limit.value == -1)
			return tern_error_make_quiet(err, EINVAL,
						     F "memory.swap %" PRId64
						       " with an unlimited memory.limit: "
						       "memory plus swap cannot be below memory",
						     m->swap.value);
	}
	if (m->swappiness.set && m->swappiness.value > 100)
		return tern_error_make_quiet(err, EINVAL,
					     F "memory.swappiness %" PRIu64 ": must be 0..100",
					     m->swappiness.value);
	return 0;
}

static bool valid_page_size(const char *s)
{
	size_t n = strspn(s, "0123456789");

	return n > 0 && (strcmp(s + n, "KB") == 0 || strcmp(s + n, "MB") == 0 ||
			 strcmp(s + n, "GB") == 0 || strcmp(s + n, "TB") == 0);
}

int tern_cgroup_v1_validate(const oci_resources *r, tern_error **err)
{
	int ret;

	if (r == NULL)
		return 0;
	if (r->unified.len > 0)
		return tern_error_make_quiet(err, EOPNOTSUPP,
					     F "unified (`%s`) needs cgroup v2, this host uses v1",
					     r->unified.items[0].key);
	if (r->memory && (ret = validate_memory(r->memory, err)) < 0)
		return ret;
	if (r->cpu) {
		const oci_cpu *c = r->cpu;
		if (c->cpus && !tern_valid_cpu_list(c->cpus))
			return tern_error_make_quiet(
			    err, EINVAL, F "cpu.cpus `%s`: not a cpu list like \"0-1,3\"", c->cpus);
		if (c->mems && !tern_valid_cpu_list(c->mems))
			return tern_error_make_quiet(
			    err, EINVAL, F "cpu.mems `%s`: not a node list like \"0-1,3\"",
			    c->mems);
		if (c->quota.set && c->quota.value < -1)
			return tern_error_make_quiet(
			    err, EINVAL, F "cpu.quota %" PRId64 ": must be -1 or positive",
			    c->quota.value);
		if (c->period.set && c->period.value != 0 &&
		    (c->period.value < 1000 || c->period.value > 1000000))
			return tern_error_make_quiet(
			    err, EINVAL, F "cpu.period %" PRIu64 ": must be 1000..1000000 (us)",
			    c->period.value);
		if (c->shares.set && c->shares.value > 262144)
			return tern_error_make_quiet(
			    err, EINVAL, F "cpu.shares %" PRIu64 ": must be at most 262144",
			    c->shares.value);
		if (c->idle.set && c->idle.value != 0 && c->idle.value != 1)
			return tern_error_make_quiet(
			    err, EINVAL, F "cpu.idle %" PRId64 ": must be 0 or 1", c->idle.value);
	}
	for (size_t i = 0; i < r->devices_len; i++)
		if ((ret = validate_device_rule(&r->devices[i], i, err)) < 0)
			return ret;
	if (r->block_io) {
		const oci_blkio *b = r->block_io;
		if (b->weight.set &&
		    (ret = validate_weight(b->weight.value, F "blockIO.weight", err)) < 0)
			return ret;
		if (b->leaf_weight.set &&
		    (ret = validate_weight(b->leaf_weight.value, F "blockIO.leafWeight", err)) < 0)
			return ret;
		for (size_t i = 0; i < b->weight_device_len; i++) {
			const oci_blkio_weight_device *wd = &b->weight_device[i];
			if (wd->weight.set &&
			    (ret = validate_weight(wd->weight.value,
						   F "blockIO.weightDevice.weight", err)) < 0)
				return ret;
			if (wd->leaf_weight.set &&
			    (ret = validate_weight(wd->leaf_weight.value,
						   F "blockIO.weightDevice.leafWeight", err)) < 0)
				return ret;
		}
	}
	for (size_t i = 0; i < r->hugepage_limits_len; i++) {
		const char *ps = r->hugepage_limits[i].page_size;
		if (ps == NULL || !valid_page_size(ps))
			return tern_error_make_quiet(
			    err, EINVAL, F "hugepageLimits[%zu].pageSize `%s`: not like \"2MB\"", i,
			    ps ? ps : "");
	}
	if (r->network) {
		for (size_t i = 0; i < r->network->priorities_len; i++) {
			const char *n = r->network->priorities[i].name;
			if (n == NULL || *n == '\0' || strpbrk(n, " \t\n/") != NULL)
				return tern_error_make_quiet(
				    err, EINVAL,
				    F "network.priorities[%zu].name `%s`: not an interface name", i,
				    n ? n : "");
		}
	}
	for (size_t i = 0; i < r->rdma_len; i++) {
		const char *n = r->rdma[i].name;
		if (n == NULL || *n == '\0' || strpbrk(n, " \t\n") != NULL)
			return tern_error_make_quiet(
			    err, EINVAL, F "rdma: `%s` is not a device name", n ? n : "");
	}
	return 0;
}

/* ---- memory ---- */

/* Kernel memory accounting limits are gone from recent kernels (writes are
 * refused or the files are missing); like runc, tern warns and goes on:
 * a config written for an older host must still start. */
static int write_kmem(const char *dir, const char *file, int64_t v, const char *field,
		      tern_error **err)
{
	cleanup_error tern_error *tmp = NULL;
	int ret = write_i64(dir, file, v, field, &tmp);

	if (ret == -ENOENT || ret == -EOPNOTSUPP || ret == -ENOTSUP || ret == -EINVAL) {
		tern_warn("%s: ignored, %s", field, tmp->msg);
		return 0;
	}
	if (ret < 0)
		return tern_error_make_literal(err, tmp->errnum, tmp->msg);
	return 0;
}

/* The kernel insists on limit <= memsw at every moment, so the order of the
 * two writes depends on where we come from: raise memsw first when the new
 * memsw is at least the current limit, else lower the limit first. */
static int write_limit_and_swap(const char *dir, int64_t limit, int64_t swap, tern_error **err)
{
	uint64_t cur = 0;
	int ret;

	if (limit != 0 && swap != 0) {
		if (tern_cgv1_read_u64(dir, "memory.limit_in_bytes", &cur) < 0)
			cur = UINT64_MAX;
		bool swap_first = swap == -1 || (uint64_t)swap >= cur;
		if (swap_first) {
			ret = write_i64(dir, "memory.memsw.limit_in_bytes", swap, F "memory.swap",
					err);
			if (ret == 0)
				ret = write_i64(dir, "memory.limit_in_bytes", limit,
						F "memory.limit", err);
		} else {
			ret = write_i64(dir, "memory.limit_in_bytes", limit, F "memory.limit", err);
			if (ret == 0)
				ret = write_i64(dir, "memory.memsw.limit_in_bytes", swap,
						F "memory.swap", err);
		}
		return ret;
	}
	if (limit != 0 &&
	    (ret = write_i64(dir, "memory.limit_in_bytes", limit, F "memory.limit", err)) < 0)
		return ret;
	if (swap != 0 &&
	    (ret = write_i64(dir, "memory.memsw.limit_in_bytes", swap, F "memory.swap", err)) < 0)
		return ret;
	return 0;
}

static int apply_memory(const char *dir, const oci_memory *m, bool update, tern_error **err)
{
	/* 0 is "not set" for these, as in runc: a limit of 0 bytes would kill
	 * the container at once, and the JSON of some clients carries zeros */
	int64_t limit = m->limit.set ? m->limit.value : 0;
	int64_t swap = m->swap.set ? m->swap.value : 0;
	bool has_memsw = tern_cgv1_file_exists(dir, "memory.memsw.limit_in_bytes");
	int ret;

	/* Lifting the limit must lift memsw too, or the kernel refuses the
	 * limit (it would exceed memsw). */
	if (limit == -1 && swap == 0 && has_memsw)
		swap = -1;
	if (swap != 0 && !has_memsw)
		return tern_error_make_quiet(err, EOPNOTSUPP,
					     F "memory.swap: the kernel has no swap accounting "
					       "(`%s/memory.memsw.limit_in_bytes` is missing)",
					     dir);
	if (update && m->check_before_update.set && m->check_before_update.value && limit > 0) {
		uint64_t usage;
		if (tern_cgv1_read_u64(dir, "memory.usage_in_bytes", &usage) == 0 &&
		    (uint64_t)limit < usage)
			return tern_error_make_quiet(err, EBUSY,
						     F "memory.limit %" PRId64
						       " is below the current usage %" PRIu64
						       " (memory.checkBeforeUpdate)",
						     limit, usage);
	}
	if ((ret = write_limit_and_swap(dir, limit, swap, err)) < 0)
		return ret;
	if (m->reservation.set && m->reservation.value != 0 &&
	    (ret = write_i64(dir, "memory.soft_limit_in_bytes", m->reservation.value,
			     F "memory.reservation", err)) < 0)
		return ret;
	if (m->kernel.set && m->kernel.value != 0 &&
	    (ret = write_kmem(dir, "memory.kmem.limit_in_bytes", m->kernel.value, F "memory.kernel",
			      err)) < 0)
		return ret;
	if (m->kernel_tcp.set && m->kernel_tcp.value != 0 &&
	    (ret = write_kmem(dir, "memory.kmem.tcp.limit_in_bytes", m->kernel_tcp.value,
			      F "memory.kernelTCP", err)) < 0)
		return ret;
	if (m->swappiness.set && (ret = write_u64(dir, "memory.swappiness", m->swappiness.value,
						  F "memory.swappiness", err)) < 0)
		return ret;
	if (m->disable_oom_killer.set &&
	    (ret = tern_cgv1_write_value(dir, "memory.oom_control",
					 m->disable_oom_killer.value ? "1" : "0",
					 F "memory.disableOOMKiller", err)) < 0)
		return ret;
	if (m->use_hierarchy.set) {
		cleanup_error tern_error *tmp = NULL;
		ret = tern_cgv1_write_value(dir, "memory.use_hierarchy",
					    m->use_hierarchy.value ? "1" : "0",
					    F "memory.useHierarchy", &tmp);
		/* Since Linux 6.1 v1 memory is always hierarchical and refuses 0. */
		if (ret == -EINVAL && !m->use_hierarchy.value)
			tern_warn("%s (the kernel is always hierarchical)", tmp->msg);
		else if (ret < 0)
			return tern_error_make_literal(err, tmp->errnum, tmp->msg);
	}
	return 0;
}

/* ---- cpu, cpuset ---- */

static int apply_cpu(const char *dir, const oci_cpu *c, tern_error **err)
{
	uint64_t period = c->period.set ? c->period.value : 0;
	int64_t quota = c->quota.set ? c->quota.value : 0;
	bool quota_done = false;
	int ret;

	if (c->shares.set && c->shares.value != 0 &&
	    (ret = write_u64(dir, "cpu.shares", c->shares.value, F "cpu.shares", err)) < 0)
		return ret;
	if (period != 0) {
		cleanup_error tern_error *tmp = NULL;
		ret = write_u64(dir, "cpu.cfs_period_us", period, F "cpu.period", &tmp);
		/* A shorter period can make the current quota invalid (quota is
		 * checked against it): then quota first, period second. */
		if (ret == -EINVAL && quota != 0) {
			if ((ret = write_i64(dir, "cpu.cfs_quota_us", quota, F "cpu.quota", err)) <
			    0)
				return ret;
			quota_done = true;
			ret = write_u64(dir, "cpu.cfs_period_us", period, F "cpu.period", err);
			if (ret < 0)
				return ret;
		} else if (ret < 0) {
			return tern_error_make_literal(err, tmp->errnum, tmp->msg);
		}
	}
	if (quota != 0 && !quota_done &&
	    (ret = write_i64(dir, "cpu.cfs_quota_us", quota, F "cpu.quota", err)) < 0)
		return ret;
	/* burst and idle are newer than most v1 hosts: 0 on a kernel without
	 * the file asks for nothing, anything else is an error */
	if (c->burst.set &&
	    (c->burst.value != 0 || tern_cgv1_file_exists(dir, "cpu.cfs_burst_us")) &&
	    (ret = write_u64(dir, "cpu.cfs_burst_us", c->burst.value, F "cpu.burst", err)) < 0)
		return ret;
	/* the realtime period bounds the runtime: period first */
	if (c->realtime_period.set && c->realtime_period.value != 0 &&
	    (ret = write_u64(dir, "cpu.rt_period_us", c->realtime_period.value,
			     F "cpu.realtimePeriod", err)) < 0)
		return ret;
	if (c->realtime_runtime.set && c->realtime_runtime.value != 0 &&
	    (ret = write_i64(dir, "cpu.rt_runtime_us", c->realtime_runtime.value,
			     F "cpu.realtimeRuntime", err)) < 0)
		return ret;
	if (c->idle.set && (c->idle.value != 0 || tern_cgv1_file_exists(dir, "cpu.idle")) &&
	    (ret = write_i64(dir, "cpu.idle", c->idle.value, F "cpu.idle", err)) < 0)
		return ret;
	return 0;
}

static int apply_cpuset(const char *dir, const oci_cpu *c, tern_error **err)
{
	int ret;

	if (c->cpus && *c->cpus &&
	    (ret = tern_cgv1_write_value(dir, "cpuset.cpus", c->cpus, F "cpu.cpus", err)) < 0)
		return ret;
	if (c->mems && *c->mems &&
	    (ret = tern_cgv1_write_value(dir, "cpuset.mems", c->mems, F "cpu.mems", err)) < 0)
		return ret;
	return 0;
}

/* ---- devices ---- */

/* What every container may use whatever its config says, appended after the
 * config's own rules exactly as runc does (so, as in runc, a config rule
 * cannot take these away): mknod of any device node (using it is another
 * matter), /dev/null, zero, full, random, urandom, tty, ptmx, net/tun and
 * the pty slaves. Seen in devices.list of a runc 1.1 container. */
static const char *const default_device_rules[] = {
    "c *:* m",	 "b *:* m",   "c 1:3 rwm", "c 1:5 rwm",	   "c 1:7 rwm",	  "c 1:8 rwm",
    "c 1:9 rwm", "c 5:0 rwm", "c 5:2 rwm", "c 10:200 rwm", "c 136:* rwm",
};

static void format_rule(const oci_device_cgroup_rule *d, char *buf, size_t size)
{
	const char *type = d->type ? d->type : "a";
	char maj[24] = "*", min[24] = "*";

	if (strcmp(type, "a") == 0) {
		/* "a" alone: the kernel ignores anything after it */
		snprintf(buf, size, "a");
		return;
	}
	if (d->major.set && d->major.value >= 0)
		snprintf(maj, sizeof(maj), "%" PRId64, d->major.value);
	if (d->minor.set && d->minor.value >= 0)
		snprintf(min, sizeof(min), "%" PRId64, d->minor.value);
	snprintf(buf, size, "%s %s:%s %s", type, maj, min,
		 d->access && *d->access ? d->access : "rwm");
}

/* Deny everything, then the config's rules in order, then the defaults. The
 * kernel refuses "a" in a cgroup with children, which a fresh container
 * cgroup never has. */
static int apply_devices(const char *dir, const oci_resources *r, tern_error **err)
{
	char field[64], rule[96];
	int ret;

	ret = tern_cgv1_write_value(dir, "devices.deny", "a", F "devices", err);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < r->devices_len; i++) {
		const oci_device_cgroup_rule *d = &r->devices[i];
		format_rule(d, rule, sizeof(rule));
		snprintf(field, sizeof(field), F "devices[%zu]", i);
		ret = tern_cgv1_write_value(dir, d->allow ? "devices.allow" : "devices.deny", rule,
					    field, err);
		if (ret < 0)
			return ret;
	}
	for (size_t i = 0; i < sizeof(default_device_rules) / sizeof(default_device_rules[0]);
	     i++) {
		ret = tern_cgv1_write_value(dir, "devices.allow", default_device_rules[i],
					    "the default device rules", err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* ---- blkio ---- */

/* CFQ's blkio.weight is gone from modern kernels; BFQ has its own file
 * (runc does the same lookup). With neither, the error names blkio.weight. */
static const char *weight_file(const char *dir, const char *cfq, const char *bfq)
{
	if (!tern_cgv1_file_exists(dir, cfq) && tern_cgv1_file_exists(dir, bfq))
		return bfq;
	return cfq;
}

static int write_throttle(const char *dir, const char *file, const oci_blkio_throttle_device *d,
			  size_t n, const char *name, tern_error **err)
{
	char buf[96], field[96];

	for (size_t i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "%" PRId64 ":%" PRId64 " %" PRIu64, d[i].major,
			 d[i].minor, d[i].rate);
		snprintf(field, sizeof(field), F "blockIO.%s[%zu]", name, i);
		int ret = tern_cgv1_write_value(dir, file, buf, field, err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int apply_blkio(const char *dir, const oci_blkio *b, tern_error **err)
{
	char buf[96], field[96];
	int ret;

	if (b->weight.set && b->weight.value != 0 &&
	    (ret = write_u64(dir, weight_file(dir, "blkio.weight", "blkio.bfq.weight"),
			     b->weight.value, F "blockIO.weight", err)) < 0)
		return ret;
	if (b->leaf_weight.set && b->leaf_weight.value != 0 &&
	    (ret = write_u64(dir, "blkio.leaf_weight", b->leaf_weight.value, F "blockIO.leafWeight",
			     err)) < 0)
		return ret;
	for (size_t i = 0; i < b->weight_device_len; i++) {
		const oci_blkio_weight_device *wd = &b->weight_device[i];
		if (wd->weight.set) {
			snprintf(buf, sizeof(buf), "%" PRId64 ":%" PRId64 " %" PRIu64, wd->major,
				 wd->minor, wd->weight.value);
			snprintf(field, sizeof(field), F "blockIO.weightDevice[%zu].weight", i);
			ret = tern_cgv1_write_value(
			    dir, weight_file(dir, "blkio.weight_device", "blkio.bfq.weight_device"),
			    buf, field, err);
			if (ret < 0)
				return ret;
		}
		if (wd->leaf_weight.set) {
			snprintf(buf, sizeof(buf), "%" PRId64 ":%" PRId64 " %" PRIu64, wd->major,
				 wd->minor, wd->leaf_weight.value);
			snprintf(field, sizeof(field), F "blockIO.weightDevice[%zu].leafWeight", i);
			ret =
			    tern_cgv1_write_value(dir, "blkio.leaf_weight_device", buf, field, err);
			if (ret < 0)
				return ret;
		}
	}
	if ((ret =
		 write_throttle(dir, "blkio.throttle.read_bps_device", b->throttle_read_bps_device,
				b->throttle_read_bps_device_len, "throttleReadBpsDevice", err)) < 0)
		return ret;
	if ((ret = write_throttle(dir, "blkio.throttle.write_bps_device",
				  b->throttle_write_bps_device, b->throttle_write_bps_device_len,
				  "throttleWriteBpsDevice", err)) < 0)
		return ret;
	if ((ret = write_throttle(dir, "blkio.throttle.read_iops_device",
				  b->throttle_read_iops_device, b->throttle_read_iops_device_len,
				  "throttleReadIOPSDevice", err)) < 0)
		return ret;
	return write_throttle(dir, "blkio.throttle.write_iops_device",
			      b->throttle_write_iops_device, b->throttle_write_iops_device_len,
			      "throttleWriteIOPSDevice", err);
}

/* ---- hugetlb, network, rdma, pids ---- */

static int apply_hugetlb(const char *dir, const oci_resources *r, tern_error **err)
{
	char field[96];

	for (size_t i = 0; i < r->hugepage_limits_len; i++) {
		const oci_hugepage_limit *h = &r->hugepage_limits[i];
		cleanup_free char *file =
		    tern_strdup_printf("hugetlb.%s.limit_in_bytes", h->page_size);
		cleanup_free char *rsvd =
		    tern_strdup_printf("hugetlb.%s.rsvd.limit_in_bytes", h->page_size);
		snprintf(field, sizeof(field), F "hugepageLimits[%zu] (%s)", i, h->page_size);
		int ret = write_u64(dir, file, h->limit, field, err);
		/* reservations count too where the kernel has them (5.7+), so a
		 * mapping cannot reserve past the limit and fault later */
		if (ret == 0 && tern_cgv1_file_exists(dir, rsvd))
			ret = write_u64(dir, rsvd, h->limit, field, err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int apply_net_prio(const char *dir, const oci_network *n, tern_error **err)
{
	char buf[128], field[96];

	for (size_t i = 0; i < n->priorities_len; i++) {
		snprintf(buf, sizeof(buf), "%s %" PRIu32, n->priorities[i].name,
			 n->priorities[i].priority);
		snprintf(field, sizeof(field), F "network.priorities[%zu]", i);
		int ret = tern_cgv1_write_value(dir, "net_prio.ifpriomap", buf, field, err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int apply_rdma(const char *dir, const oci_resources *r, tern_error **err)
{
	for (size_t i = 0; i < r->rdma_len; i++) {
		const oci_rdma *d = &r->rdma[i];
		cleanup_free char *line = NULL;
		char handles[48] = "", objects[48] = "";

		if (!d->hca_handles.set && !d->hca_objects.set)
			continue;
		if (d->hca_handles.set)
			snprintf(handles, sizeof(handles), " hca_handle=%" PRIu64,
				 d->hca_handles.value);
		if (d->hca_objects.set)
			snprintf(objects, sizeof(objects), " hca_object=%" PRIu64,
				 d->hca_objects.value);
		line = tern_strdup_printf("%s%s%s", d->name, handles, objects);
		cleanup_free char *field = tern_strdup_printf(F "rdma.%s", d->name);
		int ret = tern_cgv1_write_value(dir, "rdma.max", line, field, err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int tern_cgroup_v1_apply(const char *dir, const char *controllers, const oci_resources *r,
			 bool update, tern_error **err)
{
	static const oci_resources none;
	int ret = 0;

	/* No linux.resources still means a device policy on create: without
	 * it the container could open every device node it can make. */
	if (r == NULL)
		r = &none;
	if (r->unified.len > 0)
		return tern_error_make_quiet(err, EOPNOTSUPP,
					     F "unified (`%s`) needs cgroup v2, this host uses v1",
					     r->unified.items[0].key);
	if (tern_cgv1_has_ctrl(controllers, "memory") && r->memory)
		ret = apply_memory(dir, r->memory, update, err);
	if (ret == 0 && tern_cgv1_has_ctrl(controllers, "cpu") && r->cpu)
		ret = apply_cpu(dir, r->cpu, err);
	if (ret == 0 && tern_cgv1_has_ctrl(controllers, "cpuset") && r->cpu)
		ret = apply_cpuset(dir, r->cpu, err);
	if (ret == 0 && tern_cgv1_has_ctrl(controllers, "pids") && r->pids_limit.set)
		/* runtime-spec: 0 or -1 (any value <= 0) is "no limit" */
		ret = r->pids_limit.value > 0
			  ? write_i64(dir, "pids.max", r->pids_limit.value, F "pids.limit", err)
			  : tern_cgv1_write_value(dir, "pids.max", "max", F "pids.limit", err);
	if (ret == 0 && tern_cgv1_has_ctrl(controllers, "blkio") && r->block_io)
		ret = apply_blkio(dir, r->block_io, err);
	if (ret == 0 && tern_cgv1_has_ctrl(controllers, "hugetlb"))
		ret = apply_hugetlb(dir, r, err);
	if (ret == 0 && tern_cgv1_has_ctrl(controllers, "net_cls") && r->network &&
	    r->network->class_id.set)
		ret = write_u64(dir, "net_cls.classid", r->network->class_id.value,
				F "network.classID", err);
	if (ret == 0 && tern_cgv1_has_ctrl(controllers, "net_prio") && r->network)
		ret = apply_net_prio(dir, r->network, err);
	if (ret == 0 && tern_cgv1_has_ctrl(controllers, "rdma"))
		ret = apply_rdma(dir, r, err);
	/* On update the rules are rewritten only when some are given: a
	 * plain `tern update --memory` must not touch device access. */
	if (ret == 0 && tern_cgv1_has_ctrl(controllers, "devices") &&
	    (!update || r->devices_len > 0))
		ret = apply_devices(dir, r, err);
	return ret;
}

/* ---- freezer ---- */

static int read_state(const char *path, char *buf, size_t size)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int tern_cgroup_v1_freeze(const char *dir, bool freeze, tern_error **err)
{
	cleanup_free char *path = tern_strdup_printf("%s/freezer.state", dir);
	const char *want = freeze ? "FROZEN" : "THAWED";
	const char *field = freeze ? "pause" : "resume";
	char state[32] = "";
	int ret;

	/* Up to about 5 s: 10 quick tries (the usual case), then 5 ms steps.
	 * FROZEN is written again each round: a task forked while the
	 * cgroup was FREEZING can leave it stuck there until asked again. */
	for (int i = 0; i < 1010; i++) {
		ret = tern_cgv1_write_value(dir, "freezer.state", want, field, err);
		if (ret < 0)
			return ret;
		ret = read_state(path, state, sizeof(state));
		if (ret < 0)
			return tern_error_make(err, -ret, "%s: read `%s`", field, path);
		if (strcmp(state, want) == 0)
			return 0;
		struct timespec ts = {0, (i < 10 ? 1 : 5) * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (freeze) {
		/* do not leave it half frozen */
		tern_cgv1_write_value(dir, "freezer.state", "THAWED", field, NULL);
	}
	return tern_error_make_quiet(err, EBUSY, "%s: `%s` still reads %s after 5 s", field, path,
				     state);
}
