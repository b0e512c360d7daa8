#include "checkpoint-netns.h"
#include "cgroup.h"
#include "namespaces.h"
#include "proc-attrs.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const oci_namespace *find_ns(const oci_config *c, oci_namespace_type t)
{
	if (c->linux_ == NULL)
		return NULL;
	for (size_t i = 0; i < c->linux_->namespaces_len; i++)
		if (c->linux_->namespaces[i].type == t)
			return &c->linux_->namespaces[i];
	return NULL;
}

/* Only `lo` in /proc/PID/net/dev (two header lines, then one per device). */
static bool only_loopback(pid_t pid, char **why)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/net/dev", (int)pid);
	FILE *f = fopen(path, "re");
	if (f == NULL) {
		*why = tern_strdup_printf("%s: %s", path, strerror(errno));
		return false;
	}
	char line[512];
	int n = 0;
	bool ok = true;
	while (ok && fgets(line, sizeof(line), f)) {
		if (++n <= 2)
			continue;
		char *name = line + strspn(line, " ");
		char *colon = strchr(name, ':');
		if (colon == NULL)
			continue;
		*colon = '\0';
		if (strcmp(name, "lo") != 0) {
			*why = tern_strdup_printf("it has the device `%s`", name);
			ok = false;
		}
	}
	fclose(f);
	return ok;
}

/* One process: *changes_net if its bounding set lets it (or a child)
 * change the namespace; *root if any of its uids is 0. */
static bool process_caps(pid_t pid, bool *changes_net, bool *root)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return errno == ENOENT || errno == ESRCH; /* gone: nothing to fear */
	char line[256];
	bool seen = false;
	while (fgets(line, sizeof(line), f)) {
		uint64_t bnd;
		unsigned r, e, s, fs;
		const uint64_t mask = (1ULL << CAP_NET_ADMIN) | (1ULL << CAP_SYS_ADMIN);
		/* the bounding set limits what an exec can gain; the
		 * permitted set may still hold what the bounding set lost */
		if (sscanf(line, "CapBnd: %" SCNx64, &bnd) == 1 ||
		    sscanf(line, "CapPrm: %" SCNx64, &bnd) == 1) {
			seen = seen || strncmp(line, "CapBnd", 6) == 0;
			if (bnd & mask)
				*changes_net = true;
		} else if (sscanf(line, "Uid: %u %u %u %u", &r, &e, &s, &fs) == 4) {
			if (r == 0 || e == 0 || s == 0 || fs == 0)
				*root = true;
		}
	}
	fclose(f);
	return seen;
}

static bool names_net_cap(char **set)
{
	for (char **c = set; c && *c; c++)
		if (strcasecmp(*c, "CAP_NET_ADMIN") == 0 || strcasecmp(*c, "CAP_SYS_ADMIN") == 0)
			return true;
	return false;
}

bool tern_caps_may_change_netns(const oci_capabilities *c)
{
	return c && (names_net_cap(c->bounding) || names_net_cap(c->permitted) ||
		     names_net_cap(c->effective) || names_net_cap(c->ambient));
}

/* The config's process may have had them at any time since it started,
 * and changed the namespace then, even if no process holds them now. */
static bool config_grants_net_cap(const oci_config *config)
{
	return tern_caps_may_change_netns(config->process ? config->process->capabilities
							  : NULL);
}

static bool proc_sys_readonly(const oci_config *config)
{
	if (config->linux_ == NULL)
		return false;
	for (char **p = config->linux_->readonly_paths; p && *p; p++)
		if (strcmp(*p, "/proc/sys") == 0)
			return true;
	return false;
}

bool tern_netns_is_plain(const oci_config *config, const oci_map *cgroup_paths, pid_t pid,
			 const char *state_dir, char **why)
{
	const oci_namespace *net = find_ns(config, OCI_NS_NETWORK);

	*why = NULL;
	if (net == NULL || net->path) {
		*why = tern_xstrdup("not a network namespace of its own");
		return false;
	}
	if (find_ns(config, OCI_NS_USER)) {
		*why = tern_xstrdup("it has a user namespace");
		return false;
	}
	if (config_grants_net_cap(config)) {
		*why = tern_xstrdup("process.capabilities holds CAP_NET_ADMIN or CAP_SYS_ADMIN");
		return false;
	}
	cleanup_free char *mark = tern_strdup_printf("%s/%s", state_dir, TERN_NETNS_EXEC_MARK);
	if (access(mark, F_OK) == 0 || errno != ENOENT) {
		*why = tern_xstrdup("a process was exec'd with CAP_NET_ADMIN or CAP_SYS_ADMIN");
		return false;
	}
	if (!only_loopback(pid, why))
		return false;

	pid_t *pids = NULL;
	size_t n = 0;
	tern_error *e = NULL;
	if (tern_cgroup_pids(cgroup_paths, &pids, &n, &e) < 0) {
		*why = tern_strdup_printf("its processes: %s", e->msg);
		tern_error_free(e);
		return false;
	}
	bool changes_net = false, root = false, ok = true;
	for (size_t i = 0; ok && i < n; i++)
		ok = process_caps(pids[i], &changes_net, &root);
	free(pids);
	if (!ok || n == 0)
		*why = tern_xstrdup("a process's capabilities could not be read");
	else if (changes_net)
		*why = tern_xstrdup("a process may hold CAP_NET_ADMIN or CAP_SYS_ADMIN");
	else if (root && !proc_sys_readonly(config))
		*why = tern_xstrdup("a process runs as uid 0 with /proc/sys writable");
	return *why == NULL;
}

/* The config's net.* sysctls only: the others belong to namespaces the
 * restored container gets from criu. */
static int net_sysctls(const oci_config *config, tern_error **err)
{
	if (config->linux_ == NULL || config->linux_->sysctl.len == 0)
		return 0;
	const oci_map *all = &config->linux_->sysctl;
	oci_kv *items = tern_xmalloc0(all->len * sizeof(*items));
	oci_map net = {.items = items};
	for (size_t i = 0; i < all->len; i++)
		if (all->items[i].key && strncmp(all->items[i].key, "net.", 4) == 0)
			items[net.len++] = all->items[i];
	int ret = tern_sysctl_apply(&net, err);
	free(items);
	return ret;
}

int tern_netns_new(const oci_config *config, int *fd, tern_error **err)
{
	tern_ns_plan plan = {.clone_flags = CLONE_NEWNET};
	int ret;

	*fd = -1;
	cleanup_close int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return tern_error_make(err, errno, "/proc/thread-self/ns/net");
	if (unshare(CLONE_NEWNET) < 0)
		return tern_error_make(err, errno, "a new network namespace");
	*fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	ret = *fd < 0 ? tern_error_make(err, errno, "the new network namespace") : 0;
	if (ret == 0)
		ret = tern_ns_setup_loopback(&plan, err);
	if (ret == 0 && net_sysctls(config, err) < 0)
		ret = tern_error_wrap(err, "linux.sysctl");
	if (setns(self, CLONE_NEWNET) < 0) {
		/* this thread cannot go back, and everything it would do next
		 * (criu, state, cgroups) would be in the wrong namespace */
		perror("tern: back to this process's network namespace");
		abort();
	}
	if (ret < 0 && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	return ret;
}
