/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The container state in its three JSON shapes (see oci-state.h). */
#include "oci-state.h"
#include "oci-json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const ojson_field state_fields[] = {
    OJF_STR("ociVersion", oci_state, oci_version),
    OJF_STR("id", oci_state, id),
    OJF_STR("status", oci_state, status),
    {OJF("pid", OJ_INT, oci_state, pid), .min = 0, .max = INT32_MAX},
    OJF_STR("bundle", oci_state, bundle),
    OJF_MAP("annotations", oci_state, annotations),
    OJF_STR("rootfs", oci_state, rootfs),
    OJF_STR("created", oci_state, created),
    OJF_STR("owner", oci_state, owner),
    OJF_U64("pid_start_time", oci_state, pid_start_time),
    OJF_STR("cgroup_path", oci_state, cgroup_path),
    OJF_MAP("cgroup_paths", oci_state, cgroup_paths),
    OJF_BOOL("systemd_cgroup", oci_state, systemd_cgroup),
    OJF_BOOL("own_cgroup", oci_state, own_cgroup),
    OJF_STR("config_path", oci_state, config_path),
    OJF_BOOL("detached_stdio", oci_state, detached_stdio),
    OJF_U64("init_exe_dev", oci_state, init_exe_dev),
    OJF_U64("init_exe_ino", oci_state, init_exe_ino),
    OJF_STR("rdt_group", oci_state, rdt_group),
    OJF_BOOL("rdt_own_group", oci_state, rdt_own_group),
    OJF_STR("rdt_mon_group", oci_state, rdt_mon_group),
    /* (never written to disk: see oci-state.h) */
    OJF_STR("migratedTo", oci_state, migrated_to),
    OJF_STR("migratedAs", oci_state, migrated_as),
    OJF_END,
};

/* runtime-spec state.md: pid is REQUIRED when status is created or running
 * (on Linux), and there is no process to name once it is stopped. */
static bool hook_has_pid(const oci_state *state)
{
	if (state->pid > 0)
		return true;
	return state->status &&
	       (strcmp(state->status, "created") == 0 || strcmp(state->status, "running") == 0);
}

static void gen_hook(yajl_gen g, const oci_state *state)
{
	ojson_gen_kv_string(g, "ociVersion", state->oci_version);
	ojson_gen_kv_string(g, "id", state->id);
	ojson_gen_kv_string(g, "status", state->status);
	if (hook_has_pid(state))
		ojson_gen_kv_int(g, "pid", state->pid);
	ojson_gen_kv_string(g, "bundle", state->bundle);
	if (state->annotations.len > 0)
		ojson_gen_map(g, "annotations", &state->annotations);
}

/* Byte for byte what runc 1.1 prints for `runc state` (its Go structure
 * order): annotations, when there are any, come before owner, and pid is 0
 * for a stopped container. */
static void gen_cli(yajl_gen g, const oci_state *state)
{
	ojson_gen_kv_string(g, "ociVersion", state->oci_version);
	ojson_gen_kv_string(g, "id", state->id);
	ojson_gen_kv_int(g, "pid", state->pid);
	ojson_gen_kv_string(g, "status", state->status);
	ojson_gen_kv_string(g, "bundle", state->bundle);
	ojson_gen_kv_string(g, "rootfs", state->rootfs);
	ojson_gen_kv_string(g, "created", state->created);
	if (state->annotations.len > 0)
		ojson_gen_map(g, "annotations", &state->annotations);
	ojson_gen_kv_string(g, "owner", state->owner);
	/* tern's own, after runc's fields: only for a migrated container */
	if (state->migrated_to)
		ojson_gen_kv_string(g, "migratedTo", state->migrated_to);
	if (state->migrated_to && state->migrated_as)
		ojson_gen_kv_string(g, "migratedAs", state->migrated_as);
}

/* Absent strings are left out, so they read back as NULL. */
static void gen_opt_string(yajl_gen g, const char *key, const char *value)
{
	if (value)
		ojson_gen_kv_string(g, key, value);
}

static void gen_disk(yajl_gen g, const oci_state *state)
{
	gen_opt_string(g, "ociVersion", state->oci_version);
	gen_opt_string(g, "id", state->id);
	gen_opt_string(g, "status", state->status);
	ojson_gen_kv_int(g, "pid", state->pid);
	gen_opt_string(g, "bundle", state->bundle);
	ojson_gen_map(g, "annotations", &state->annotations);
	gen_opt_string(g, "rootfs", state->rootfs);
	gen_opt_string(g, "created", state->created);
	gen_opt_string(g, "owner", state->owner);
	ojson_gen_kv_uint(g, "pid_start_time", state->pid_start_time);
	gen_opt_string(g, "cgroup_path", state->cgroup_path);
	ojson_gen_map(g, "cgroup_paths", &state->cgroup_paths);
	ojson_gen_kv_bool(g, "systemd_cgroup", state->systemd_cgroup);
	ojson_gen_kv_bool(g, "own_cgroup", state->own_cgroup);
	gen_opt_string(g, "config_path", state->config_path);
	ojson_gen_kv_bool(g, "detached_stdio", state->detached_stdio);
	if (state->init_exe_ino) {
		ojson_gen_kv_uint(g, "init_exe_dev", state->init_exe_dev);
		ojson_gen_kv_uint(g, "init_exe_ino", state->init_exe_ino);
	}
	if (state->rdt_group) {
		ojson_gen_kv_string(g, "rdt_group", state->rdt_group);
		ojson_gen_kv_bool(g, "rdt_own_group", state->rdt_own_group);
		gen_opt_string(g, "rdt_mon_group", state->rdt_mon_group);
	}
}

int oci_state_to_json(const oci_state *state, oci_state_format format, char **out, size_t *len)
{
	yajl_gen g;

	if (state == NULL || out == NULL)
		return -EINVAL;
	g = ojson_gen_new(format == OCI_STATE_CLI ? "  " : NULL);
	yajl_gen_map_open(g);
	switch (format) {
	case OCI_STATE_HOOK:
		gen_hook(g, state);
		break;
	case OCI_STATE_CLI:
		gen_cli(g, state);
		break;
	case OCI_STATE_DISK:
		gen_disk(g, state);
		break;
	default:
		yajl_gen_free(g);
		return -EINVAL;
	}
	yajl_gen_map_close(g);
	return ojson_gen_finish(g, out, len);
}

int oci_state_parse_data(const char *data, size_t len, const char *name, oci_state **out,
			 char **err)
{
	ojson_path root = {NULL, NULL, 0};
	oci_state *state;
	yajl_val tree = NULL;
	ojson_ctx c;
	int ret;

	if (name == NULL)
		name = "state.json";
	c = (ojson_ctx){.name = name};
	ret = ojson_parse_tree(data, len, name, &tree, err);
	if (ret < 0)
		return ret;
	state = ojson_xmalloc0(sizeof(*state));
	ret = ojson_parse_object(&c, tree, &root, state_fields, state);
	yajl_tree_free(tree);
	if (ret < 0) {
		oci_state_free(state);
		*err = c.err;
		return ret;
	}
	*out = state;
	return 0;
}

void oci_state_free(oci_state *state)
{
	if (state == NULL)
		return;
	ojson_free_object(state_fields, state);
	free(state);
}
