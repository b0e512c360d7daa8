#include "container-cgroup.h"
#include "cgroup-systemd.h"
#include "cgroup.h"
#include "utils.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const oci_resources *config_resources(const tern_container *c)
{
	return c->config->linux_ ? c->config->linux_->resources : NULL;
}

int tern_container_cgroup_prepare(tern_container *c, tern_error **err)
{
	const char *configured = c->config->linux_ ? c->config->linux_->cgroups_path : NULL;
	int ret;

	if (c->rt->systemd_cgroup) {
		tern_systemd_unit u;
		ret = tern_systemd_unit_parse(configured, c->id, &u, err);
		if (ret < 0)
			return ret;
		cleanup_free char *display = NULL;
		ret = tern_cgroup_resolve(u.cgroup, c->id, &c->cgroup_paths, &display, err);
		/* the state keeps the systemd form: delete finds the unit by it */
		if (ret == 0)
			c->cgroup_path = tern_strdup_printf("%s:%s", u.slice, u.unit);
		tern_systemd_unit_clear(&u);
		/* ours only once systemd has started it (join): a unit of that
		 * name that is already there belongs to somebody else */
		c->own_cgroup = false;
		return ret;
	}
	ret = tern_cgroup_resolve(configured, c->id, &c->cgroup_paths, &c->cgroup_path, err);
	if (ret < 0)
		return ret;
	ret = tern_cgroup_create(&c->cgroup_paths, &c->own_cgroup, err);
	if (ret < 0)
		return ret;
	return tern_cgroup_apply_resources(&c->cgroup_paths, config_resources(c), false, err);
}

int tern_container_cgroup_join(tern_container *c, pid_t pid, tern_error **err)
{
	if (!c->rt->systemd_cgroup)
		return tern_cgroup_enter(&c->cgroup_paths, pid, err);

	tern_systemd_unit u = {0};
	cleanup_free char *slice = tern_xstrdup(c->cgroup_path);
	*strrchr(slice, ':') = '\0';
	u.slice = slice;
	u.unit = (char *)tern_systemd_state_unit(c->cgroup_path);
	int ret = tern_systemd_start_scope(&u, pid, config_resources(c),
					   tern_cgroup_v2_has_controllers(), err);
	if (ret < 0)
		return tern_error_wrap(err, "--systemd-cgroup");
	c->own_cgroup = true;
	/* systemd placed the process in the hierarchies it manages; the other
	 * v1 controllers (cpuset, freezer, ...) get the same path from us */
	bool created;
	ret = tern_cgroup_create(&c->cgroup_paths, &created, err);
	if (ret == 0)
		ret = tern_cgroup_enter(&c->cgroup_paths, pid, err);
	if (ret == 0)
		ret =
		    tern_cgroup_apply_resources(&c->cgroup_paths, config_resources(c), false, err);
	return ret;
}

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
	/* and tell systemd, or its next daemon-reload puts the old values back */
	if (ret == 0 && st->systemd_cgroup)
		ret = tern_systemd_update_scope(tern_systemd_state_unit(st->cgroup_path), r,
						tern_cgroup_v2_has_controllers(), err);
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
