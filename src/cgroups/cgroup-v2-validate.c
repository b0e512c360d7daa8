/* cgroup v2: linux.resources checked before anything is created, one
 * step per family of fields, so that a bad config fails naming the field
 * before any cgroup file is written. */
#include "cgroup-v2.h"
#include "cgroup-v2-internal.h"
#include "utils.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* validation                                                             */

/* A file name of the cgroup directory, never a path out of it. */
bool tern_cgv2_valid_file_key(const char *key)
{
	return key[0] != '\0' && strchr(key, '/') == NULL && strstr(key, "..") == NULL &&
	       strcmp(key, ".") != 0;
}

/* linux.resources.memory */
static int validate_memory(const oci_memory *m, tern_error **err)
{
	int64_t out;
	if (m->limit.set && m->limit.value < -1)
		return tern_error_make_quiet(err, EINVAL,
					     "linux.resources.memory.limit: invalid value %" PRId64,
					     m->limit.value);
	if (m->reservation.set && m->reservation.value < -1)
		return tern_error_make_quiet(
		    err, EINVAL, "linux.resources.memory.reservation: invalid value %" PRId64,
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
		return tern_error_make_quiet(err, EINVAL,
					     "linux.resources.memory.swap: invalid value %" PRId64,
					     m->swap.value);
	return 0;
}

/* linux.resources.cpu */
static int validate_cpu(const oci_cpu *c, tern_error **err)
{
	if (c->shares.set && c->shares.value != 0 &&
	    (c->shares.value < 2 || c->shares.value > 262144))
		return tern_error_make_quiet(
		    err, EINVAL, "linux.resources.cpu.shares: %" PRIu64 " is outside 2..262144",
		    c->shares.value);
	if (c->period.set && c->period.value != 0 &&
	    (c->period.value < 1000 || c->period.value > 1000000))
		return tern_error_make_quiet(
		    err, EINVAL, "linux.resources.cpu.period: %" PRIu64 " is outside 1000..1000000",
		    c->period.value);
	if (c->cpus && !tern_valid_cpu_list(c->cpus))
		return tern_error_make_quiet(
		    err, EINVAL, "linux.resources.cpu.cpus: `%s` is not a cpu list", c->cpus);
	if (c->mems && !tern_valid_cpu_list(c->mems))
		return tern_error_make_quiet(
		    err, EINVAL, "linux.resources.cpu.mems: `%s` is not a memory node list",
		    c->mems);
	if (c->idle.set && c->idle.value != 0 && c->idle.value != 1)
		return tern_error_make_quiet(
		    err, EINVAL, "linux.resources.cpu.idle: must be 0 or 1, not %" PRId64,
		    c->idle.value);
	return 0;
}

/* linux.resources.blockIO */
static int validate_blkio(const oci_blkio *b, tern_error **err)
{
	if (b->weight.set && b->weight.value != 0 &&
	    (b->weight.value < 10 || b->weight.value > 1000))
		return tern_error_make_quiet(
		    err, EINVAL, "linux.resources.blockIO.weight: %" PRIu64 " is outside 10..1000",
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
	return 0;
}

/* linux.resources.hugepageLimits and rdma: names that become file names or
 * keys of a v2 file. */
static int validate_hugetlb_rdma(const oci_resources *r, tern_error **err)
{
	for (size_t i = 0; i < r->hugepage_limits_len; i++) {
		const char *ps = r->hugepage_limits[i].page_size;
		if (ps == NULL || !tern_cgv2_valid_file_key(ps))
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
	return 0;
}

/* linux.resources.unified: cgroup v2 files, never ones tern manages. */
static int validate_unified(const oci_resources *r, tern_error **err)
{
	for (size_t i = 0; i < r->unified.len; i++) {
		const char *key = r->unified.items[i].key;
		if (!tern_cgv2_valid_file_key(key) || strchr(key, '.') == NULL)
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
	return 0;
}

/* linux.resources.devices: the rules the device program is built from. */
static int validate_devices(const oci_resources *r, tern_error **err)
{
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

int tern_cgroup_v2_validate(const oci_resources *r, tern_error **err)
{
	int ret;

	if (r == NULL)
		return 0;
	if (r->memory) {
		ret = validate_memory(r->memory, err);
		if (ret < 0)
			return ret;
	}
	if (r->cpu) {
		ret = validate_cpu(r->cpu, err);
		if (ret < 0)
			return ret;
	}
	if (r->block_io) {
		ret = validate_blkio(r->block_io, err);
		if (ret < 0)
			return ret;
	}
	ret = validate_hugetlb_rdma(r, err);
	if (ret < 0)
		return ret;
	ret = validate_unified(r, err);
	if (ret < 0)
		return ret;
	return validate_devices(r, err);
}
