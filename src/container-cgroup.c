#include "container-cgroup.h"
#include "cgroup.h"
#include "utils.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int load(const tern_runtime *rt, const char *id, tern_container_dir **dir, oci_state **st,
		tern_error **err)
{
	return tern_container_load(rt, id, dir, st, NULL, err);
}

static int set_frozen(const tern_runtime *rt, const char *id, bool freeze, tern_error **err)
{
	cleanup_state_dir tern_container_dir *dir = NULL;
	oci_state *st = NULL;
	int ret = load(rt, id, &dir, &st, err);

	if (ret < 0)
		return ret;
	const char *want = freeze ? "running" : "paused";
	if (strcmp(st->status, want) != 0)
		ret = tern_error_make_quiet(err, EINVAL, "cannot %s container `%s`: it is %s",
					    freeze ? "pause" : "resume", id, st->status);
	else
		ret = tern_cgroup_freeze(&st->cgroup_paths, freeze, err);
	oci_state_free(st);
	return ret;
}

int tern_container_pause(const tern_runtime *rt, const char *id, tern_error **err)
{
	return set_frozen(rt, id, true, err);
}

int tern_container_resume(const tern_runtime *rt, const char *id, tern_error **err)
{
	return set_frozen(rt, id, false, err);
}

int tern_container_update(const tern_runtime *rt, const char *id, const oci_resources *r,
			  tern_error **err)
{
	cleanup_state_dir tern_container_dir *dir = NULL;
	oci_state *st = NULL;
	int ret = load(rt, id, &dir, &st, err);

	if (ret < 0)
		return ret;
	if (strcmp(st->status, "stopped") == 0)
		ret = tern_error_make_quiet(err, EINVAL,
					    "cannot update container `%s`: it is stopped", id);
	else
		ret = tern_cgroup_validate_resources(r, err);
	if (ret == 0)
		ret = tern_cgroup_apply_resources(&st->cgroup_paths, r, true, err);
	oci_state_free(st);
	return ret;
}

int tern_container_pids(const tern_runtime *rt, const char *id, pid_t **pids, size_t *n,
			tern_error **err)
{
	cleanup_state_dir tern_container_dir *dir = NULL;
	oci_state *st = NULL;
	int ret = load(rt, id, &dir, &st, err);

	if (ret < 0)
		return ret;
	*pids = NULL;
	*n = 0;
	if (strcmp(st->status, "stopped") != 0)
		ret = tern_cgroup_pids(&st->cgroup_paths, pids, n, err);
	oci_state_free(st);
	return ret;
}
