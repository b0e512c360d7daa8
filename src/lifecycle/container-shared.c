/* The OCI state of a container being created, for the hooks that run
 * while it is made: by the parent (spawn.c) and by the child's init
 * (init.c) alike (see container-shared.h). */
#include "container-shared.h"
#include "utils.h"

#include <string.h>

void tern_container_fill_state(oci_state *s, const tern_container *c, const char *status)
{
	memset(s, 0, sizeof(*s));
	s->oci_version = c->config->oci_version;
	s->id = (char *)c->id;
	s->status = (char *)status;
	s->pid = c->pid;
	s->bundle = c->bundle;
	s->annotations = c->config->annotations;
	s->rootfs = c->rootfs;
	s->created = c->created;
	s->owner = "";
	s->cgroup_path = c->cgroup_path;
	s->cgroup_paths = c->cgroup_paths;
	s->systemd_cgroup = c->rt->systemd_cgroup;
	s->own_cgroup = c->own_cgroup;
	s->config_path = TERN_CONFIG_COPY;
	s->rdt_group = c->rdt.group;
	s->rdt_own_group = c->rdt.own_group;
	s->rdt_mon_group = c->rdt.mon_group;
}

char *tern_container_hook_state(const tern_container *c, const char *status)
{
	oci_state s;
	char *json = NULL;

	tern_container_fill_state(&s, c, status);
	if (oci_state_to_json(&s, OCI_STATE_HOOK, &json, NULL) < 0)
		return tern_xstrdup("{}");
	return json;
}
