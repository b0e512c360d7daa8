/* linux.sysctl: each key checked in the parent (it must belong to a
 * namespace the container has of its own, runc's rules, and not fight the
 * hostname/domainname fields), then written under /proc/sys in the child. */
#include "proc-attrs.h"
#include "procfs.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- sysctl ---- */

/* The path of a sysctl key under /proc/sys. Like sysctl(8) and runc, dots
 * are separators unless the key already uses slashes: then dots stay (an
 * interface named "eth0.100" in net/ipv4/conf/eth0.100/forwarding). */
static char *sysctl_path(const char *key)
{
	char *path;

	if (key == NULL || key[0] == '\0' || key[0] == '/' || key[0] == '.')
		return NULL;
	path = tern_xstrdup(key);
	if (strchr(path, '/') == NULL)
		for (char *p = path; *p; p++)
			if (*p == '.')
				*p = '/';
	/* No empty, "." or ".." component: RESOLVE_BENEATH would catch an
	 * escape, but a key that names a different file than it seems to
	 * is a config error worth reporting as such. */
	for (const char *c = path; c != NULL;) {
		const char *end = strchr(c, '/');
		size_t l = end ? (size_t)(end - c) : strlen(c);
		if (l == 0 || (l == 1 && c[0] == '.') || (l == 2 && c[0] == '.' && c[1] == '.')) {
			free(path);
			return NULL;
		}
		c = end ? end + 1 : NULL;
	}
	return path;
}

/* Which namespace makes a sysctl the container's own (runc's rules, plus
 * kernel.ns_last_pid, which belongs to the pid namespace). */
static int sysctl_namespace(const char *key)
{
	static const char *const ipc[] = {
	    "kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.sem",
	    "kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced",
	};
	cleanup_free char *dotted = tern_xstrdup(key);

	/* "net/ipv4/ip_forward" and "net.ipv4.ip_forward" alike */
	for (char *p = dotted; *p; p++)
		if (*p == '/')
			*p = '.';
	for (size_t i = 0; i < sizeof(ipc) / sizeof(ipc[0]); i++)
		if (strcmp(dotted, ipc[i]) == 0)
			return OCI_NS_IPC;
	if (strncmp(dotted, "fs.mqueue.", 10) == 0)
		return OCI_NS_IPC;
	if (strncmp(dotted, "net.", 4) == 0)
		return OCI_NS_NETWORK;
	if (strcmp(dotted, "kernel.domainname") == 0 || strcmp(dotted, "kernel.hostname") == 0)
		return OCI_NS_UTS;
	if (strcmp(dotted, "kernel.ns_last_pid") == 0)
		return OCI_NS_PID;
	return -1;
}

/* A joined namespace that is in fact ours (the host's) does not count. */
static bool own_namespace(const oci_namespace *ns)
{
	static const char *const names[OCI_NS_COUNT] = {
	    [OCI_NS_PID] = "pid",
	    [OCI_NS_NETWORK] = "net",
	    [OCI_NS_IPC] = "ipc",
	    [OCI_NS_UTS] = "uts",
	};
	struct stat theirs, ours;
	char self[64];

	if (ns->path == NULL)
		return true;
	if (names[ns->type] == NULL)
		return true;
	snprintf(self, sizeof(self), "/proc/self/ns/%s", names[ns->type]);
	if (stat(ns->path, &theirs) < 0 || stat(self, &ours) < 0)
		return true; /* joining reports its own error later */
	return theirs.st_dev != ours.st_dev || theirs.st_ino != ours.st_ino;
}

/* kernel.hostname and kernel.domainname say what the `hostname` and
 * `domainname` fields say, and the sysctls are written after the fields:
 * one would silently win. kernel.hostname is always refused (runc and crun
 * both do: the field is the place for it); kernel.domainname only when the
 * field is set to something else (crun's rule; runc 1.1.5 has no
 * `domainname` field). */
static int sysctl_uts_conflict(const oci_config *config, const char *key, const char *value,
			       tern_error **err)
{
	cleanup_free char *dotted = tern_xstrdup(key);

	for (char *p = dotted; *p; p++)
		if (*p == '/')
			*p = '.';
	if (strcmp(dotted, "kernel.hostname") == 0)
		return tern_error_make_quiet(
		    err, EINVAL,
		    "linux.sysctl: `%s` conflicts with the `hostname` field (set the hostname "
		    "there%s%s%s)",
		    key, config->hostname ? ", where it is `" : "",
		    config->hostname ? config->hostname : "", config->hostname ? "`" : "");
	if (strcmp(dotted, "kernel.domainname") == 0 && config->domainname && *config->domainname &&
	    strcmp(config->domainname, value) != 0)
		return tern_error_make_quiet(
		    err, EINVAL,
		    "linux.sysctl: `%s` = `%s` conflicts with the `domainname` field `%s`", key,
		    value, config->domainname);
	return 0;
}

int tern_sysctl_check(const oci_config *config, tern_error **err)
{
	static const char *const ns_names[OCI_NS_COUNT] = {
	    [OCI_NS_PID] = "pid",
	    [OCI_NS_NETWORK] = "network",
	    [OCI_NS_IPC] = "ipc",
	    [OCI_NS_UTS] = "uts",
	};
	const oci_linux *lx = config->linux_;

	if (lx == NULL)
		return 0;
	for (size_t i = 0; i < lx->sysctl.len; i++) {
		const char *key = lx->sysctl.items[i].key ? lx->sysctl.items[i].key : "";
		const char *value = lx->sysctl.items[i].value ? lx->sysctl.items[i].value : "";
		int type = sysctl_namespace(key);
		bool ok = false;
		int ret = sysctl_uts_conflict(config, key, value, err);

		if (ret < 0)
			return ret;

		/* Anything else is the host's own setting: a container config
		 * must not change it (kernel.core_pattern, vm.*, ...). */
		if (type < 0)
			return tern_error_make_quiet(
			    err, EPERM,
			    "linux.sysctl: `%s` is not in a separate kernel "
			    "namespace, refusing to set the host's value",
			    key);
		for (size_t j = 0; j < lx->namespaces_len; j++)
			if ((int)lx->namespaces[j].type == type &&
			    own_namespace(&lx->namespaces[j]))
				ok = true;
		if (!ok)
			return tern_error_make_quiet(
			    err, EPERM,
			    "linux.sysctl: `%s` needs a %s namespace of the container's own in "
			    "linux.namespaces",
			    key, ns_names[type]);
	}
	return 0;
}

int tern_sysctl_apply(const oci_map *sysctl, tern_error **err)
{
	cleanup_close int dirfd = -1;

	if (sysctl == NULL || sysctl->len == 0)
		return 0;
	/* A private, verified procfs, not the container's /proc: the config
	 * may have bound a file over the very sysctl it asks us to write
	 * (CVE-2025-52881). */
	dirfd = tern_procfs_open(err);
	if (dirfd < 0)
		return dirfd;
	for (size_t i = 0; i < sysctl->len; i++) {
		const char *key = sysctl->items[i].key;
		const char *value = sysctl->items[i].value ? sysctl->items[i].value : "";
		cleanup_free char *path = sysctl_path(key);
		cleanup_free char *sys_path = NULL;
		cleanup_close int fd = -1;
		int ret;

		if (path == NULL)
			return tern_error_make(err, 0, "invalid key `%s`", key ? key : "");
		/* Never leave /proc/sys, and never follow a link: a sysctl
		 * key is not a way to write an arbitrary file. */
		sys_path = tern_strdup_printf("sys/%s", path);
		fd = tern_procfs_openat(dirfd, sys_path, O_WRONLY, true, err);
		if (fd < 0)
			return tern_error_wrap(err, "`%s`", key);
		ret = tern_write_all(fd, value, strlen(value));
		if (ret < 0)
			return tern_error_make(err, -ret, "`%s`: writing `%s`", key, value);
	}
	return 0;
}
