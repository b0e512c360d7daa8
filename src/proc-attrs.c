/* Process attributes other than capabilities: rlimits, user and groups,
 * umask, no_new_privs, oom_score_adj, sysctls and the final exec. */
#include "proc-attrs.h"
#include "log.h"
#include "procfs.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- rlimits ---- */

static const struct {
	const char *name;
	int resource;
} rlimit_names[] = {
    {"RLIMIT_AS", RLIMIT_AS},
    {"RLIMIT_CORE", RLIMIT_CORE},
    {"RLIMIT_CPU", RLIMIT_CPU},
    {"RLIMIT_DATA", RLIMIT_DATA},
    {"RLIMIT_FSIZE", RLIMIT_FSIZE},
    {"RLIMIT_LOCKS", RLIMIT_LOCKS},
    {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},
    {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
    {"RLIMIT_NICE", RLIMIT_NICE},
    {"RLIMIT_NOFILE", RLIMIT_NOFILE},
    {"RLIMIT_NPROC", RLIMIT_NPROC},
    {"RLIMIT_RSS", RLIMIT_RSS},
    {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},
    {"RLIMIT_RTTIME", RLIMIT_RTTIME},
    {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
    {"RLIMIT_STACK", RLIMIT_STACK},
};

static int rlimit_resource(const char *name)
{
	for (size_t i = 0; name != NULL && i < sizeof(rlimit_names) / sizeof(rlimit_names[0]); i++)
		if (strcmp(name, rlimit_names[i].name) == 0)
			return rlimit_names[i].resource;
	return -1;
}

/* "unlimited" reads better than 18446744073709551615. */
static void fmt_limit(char buf[32], uint64_t v)
{
	if (v == (uint64_t)RLIM_INFINITY)
		snprintf(buf, 32, "unlimited");
	else
		snprintf(buf, 32, "%" PRIu64, v);
}

int tern_rlimits_apply(const oci_rlimit *rlimits, size_t n, tern_error **err)
{
	for (size_t i = 0; i < n; i++) {
		int res = rlimit_resource(rlimits[i].type);
		struct rlimit rl = {.rlim_cur = rlimits[i].soft, .rlim_max = rlimits[i].hard};
		char soft[32], hard[32];

		if (res < 0)
			return tern_error_make(err, 0, "unknown rlimit `%s`",
					       rlimits[i].type ? rlimits[i].type : "");
		/* prlimit on ourselves is setrlimit without glibc's 32-bit
		 * compatibility layer in the way. */
		if (prlimit(0, (__rlimit_resource_t)res, &rl, NULL) < 0) {
			int e = errno;
			fmt_limit(soft, rlimits[i].soft);
			fmt_limit(hard, rlimits[i].hard);
			return tern_error_make(err, e, "setrlimit %s (soft %s, hard %s)",
					       rlimits[i].type, soft, hard);
		}
	}
	return 0;
}

static bool have_effective_cap(cap_value_t cap)
{
	cap_t c = cap_get_proc();
	cap_flag_value_t v = CAP_CLEAR;

	if (c == NULL)
		return false;
	if (cap_get_flag(c, cap, CAP_EFFECTIVE, &v) < 0)
		v = CAP_CLEAR;
	cap_free(c);
	return v == CAP_SET;
}

int tern_rlimits_check(const oci_rlimit *rlimits, size_t n, tern_error **err)
{
	int can_raise = -1; /* asked lazily: most configs never need it */

	for (size_t i = 0; i < n; i++) {
		int res = rlimit_resource(rlimits[i].type);
		struct rlimit cur;
		char want[32], have[32];

		if (res < 0)
			return tern_error_make(err, 0, "process.rlimits: unknown rlimit `%s`",
					       rlimits[i].type ? rlimits[i].type : "");
		if (getrlimit((__rlimit_resource_t)res, &cur) < 0)
			return tern_error_make(err, errno, "getrlimit %s", rlimits[i].type);
		if ((rlim_t)rlimits[i].hard <= cur.rlim_max)
			continue;
		/* Raising a hard limit needs CAP_SYS_RESOURCE. Failing here,
		 * before anything exists, is kinder than failing in the child
		 * after namespaces, cgroups and mounts have been set up. */
		if (can_raise < 0)
			can_raise = have_effective_cap(CAP_SYS_RESOURCE);
		if (can_raise)
			continue;
		fmt_limit(want, rlimits[i].hard);
		fmt_limit(have, cur.rlim_max);
		return tern_error_make(
		    err, 0,
		    "process.rlimits: %s hard limit %s is above the current hard "
		    "limit %s and tern cannot raise it (no CAP_SYS_RESOURCE)",
		    rlimits[i].type, want, have);
	}
	return 0;
}

/* ---- user ---- */

/* In a user namespace whose gid map was written by an unprivileged parent,
 * /proc/self/setgroups says "deny" and setgroups(2) fails with EPERM. */
static bool setgroups_denied(void)
{
	char buf[16] = {0};
	cleanup_close int procfd = tern_procfs_open(NULL);
	cleanup_close int fd =
	    procfd < 0 ? -1 : tern_procfs_openat(procfd, "self/setgroups", O_RDONLY, false, NULL);

	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0)
		return false;
	return strncmp(buf, "deny", 4) == 0;
}

int tern_user_apply(const oci_user *user, tern_error **err)
{
	uid_t uid = user->uid;
	gid_t gid = user->gid;

	/* Supplementary groups first: they are replaced, not added to, so
	 * nothing of tern's own groups leaks in; after setresgid we may no
	 * longer be allowed to change them. */
	if (user->additional_gids_len > 0 || !setgroups_denied()) {
		if (setgroups(user->additional_gids_len, (const gid_t *)user->additional_gids) <
		    0) {
			int e = errno;
			cleanup_free char *list = tern_xstrdup("");
			for (size_t i = 0; i < user->additional_gids_len; i++) {
				char *n = tern_strdup_printf("%s%s%" PRIu32, list, i ? "," : "",
							     user->additional_gids[i]);
				free(list);
				list = n;
			}
			return tern_error_make(err, e, "setgroups [%s]", list);
		}
	}
	if (setresgid(gid, gid, gid) < 0)
		return tern_error_make(err, errno, "setresgid %u", gid);

	/* Without KEEPCAPS, leaving uid 0 clears the permitted set too, and
	 * tern_caps_apply could no longer grant a non-root user anything. */
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		return tern_error_make(err, errno, "prctl PR_SET_KEEPCAPS");
	if (setresuid(uid, uid, uid) < 0)
		return tern_error_make(err, errno, "setresuid %u", uid);
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		return tern_error_make(err, errno, "prctl PR_SET_KEEPCAPS");

	umask(user->umask.set ? (mode_t)(user->umask.value & 07777) : 0022);
	return 0;
}

int tern_no_new_privs_apply(tern_error **err)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return tern_error_make(err, errno, "prctl PR_SET_NO_NEW_PRIVS");
	return 0;
}

/* ---- oom_score_adj ---- */

int tern_oom_score_adj_apply(int value, tern_error **err)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%d", value);
	cleanup_close int procfd = -1, fd = -1;
	int e;

	/* Through a verified procfs: a file bound over /proc/self/... by the
	 * config must not receive it (CVE-2025-52881). */
	procfd = tern_procfs_open(err);
	if (procfd < 0)
		return procfd;
	/* Not dumpable, our /proc/self files belong to the host's root, which
	 * a user namespace's root may not open: dumpable just for the open
	 * (we still hold every capability, so no container process can use
	 * the moment). */
	int dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
	if (dumpable == 0)
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	fd = tern_procfs_openat(procfd, "self/oom_score_adj", O_RDWR, false, err);
	if (dumpable == 0)
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (fd < 0)
		return fd;
	e = -tern_write_all(fd, buf, (size_t)len);
	if (e == 0)
		return 0;
	if (e == EACCES || e == EPERM) {
		char cur[16] = {0};
		if (pread(fd, cur, sizeof(cur) - 1, 0) > 0 && atoi(cur) > value) {
			cur[strcspn(cur, "\n")] = '\0';
			return tern_error_make(
			    err, e,
			    "writing %d to "
			    "/proc/self/oom_score_adj (lowering it from %s needs "
			    "CAP_SYS_RESOURCE)",
			    value, cur);
		}
	}
	return tern_error_make(err, e, "writing %d to /proc/self/oom_score_adj", value);
}

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

int tern_sysctl_check(const oci_linux *lx, tern_error **err)
{
	static const char *const ns_names[OCI_NS_COUNT] = {
	    [OCI_NS_PID] = "pid",
	    [OCI_NS_NETWORK] = "network",
	    [OCI_NS_IPC] = "ipc",
	    [OCI_NS_UTS] = "uts",
	};

	if (lx == NULL)
		return 0;
	for (size_t i = 0; i < lx->sysctl.len; i++) {
		const char *key = lx->sysctl.items[i].key ? lx->sysctl.items[i].key : "";
		int type = sysctl_namespace(key);
		bool ok = false;

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

/* ---- exec ---- */

/* execvp's search path when PATH is not set (glibc's confstr(_CS_PATH)). */
#define DEFAULT_PATH "/bin:/usr/bin"

static const char *env_path(char *const *env)
{
	for (size_t i = 0; env != NULL && env[i] != NULL; i++)
		if (strncmp(env[i], "PATH=", 5) == 0)
			return env[i] + 5;
	return DEFAULT_PATH;
}

/* The next candidate "dir/name" from the PATH list at *cursor, or NULL at
 * the end. An empty element means the current directory, as for execvp. */
static char *next_candidate(const char **cursor, const char *name)
{
	const char *dir = *cursor, *end;
	size_t l;

	if (dir == NULL)
		return NULL;
	end = strchr(dir, ':');
	l = end ? (size_t)(end - dir) : strlen(dir);
	*cursor = end ? end + 1 : NULL;
	if (l == 0)
		return tern_strdup_printf("./%s", name);
	return tern_strdup_printf("%.*s/%s", (int)l, dir, name);
}

char *tern_find_executable(const char *name, char *const *env)
{
	const char *cursor;
	char *cand;

	if (name == NULL || name[0] == '\0')
		return NULL;
	if (strchr(name, '/') != NULL)
		return access(name, X_OK) == 0 ? tern_xstrdup(name) : NULL;
	cursor = env_path(env);
	while ((cand = next_candidate(&cursor, name)) != NULL) {
		struct stat st;
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
			return cand;
		free(cand);
	}
	return NULL;
}

int tern_exec_process(const oci_process *process, tern_error **err)
{
	static char *const empty_env[] = {NULL};
	char *const *env = process->env ? process->env : empty_env;
	const char *name = process->args ? process->args[0] : NULL;
	const char *cursor;
	char *cand;
	int e = ENOENT;
	bool eacces = false;

	if (name == NULL || name[0] == '\0')
		return tern_error_make(err, 0, "process.args: empty");
	if (strchr(name, '/') != NULL) {
		execve(name, process->args, env);
		return tern_error_make(err, errno, "exec `%s`", name);
	}
	/* execvp's rules, but with the container's PATH rather than ours:
	 * keep looking after ENOENT/ENOTDIR/EACCES, stop at anything else,
	 * and report EACCES if any candidate existed but was not runnable. */
	cursor = env_path(env);
	while ((cand = next_candidate(&cursor, name)) != NULL) {
		execve(cand, process->args, env);
		e = errno;
		free(cand);
		if (e == EACCES)
			eacces = true;
		else if (e != ENOENT && e != ENOTDIR && e != ESTALE && e != ENODEV &&
			 e != ETIMEDOUT)
			return tern_error_make(err, e, "exec `%s`", name);
	}
	return tern_error_make(err, eacces ? EACCES : ENOENT, "exec `%s`", name);
}

static char *home_from_passwd(uint32_t uid)
{
	FILE *f = fopen("/etc/passwd", "re");
	char *line = NULL, *home = NULL;
	size_t cap = 0;

	if (f == NULL)
		return NULL;
	while (home == NULL && getline(&line, &cap, f) > 0) {
		/* name:passwd:uid:gid:gecos:home:shell */
		char *fields[7] = {0};
		char *p = line;
		int n = 0;
		while (n < 7 && p) {
			fields[n++] = p;
			p = strchr(p, ':');
			if (p)
				*p++ = '\0';
		}
		if (n < 6 || fields[2] == NULL || strtoul(fields[2], NULL, 10) != uid)
			continue;
		home = strdup(fields[5]);
	}
	free(line);
	fclose(f);
	return home;
}

void tern_env_ensure_home(oci_process *process)
{
	size_t n = 0;

	for (char **e = process->env; e && *e; e++, n++)
		if (strncmp(*e, "HOME=", 5) == 0)
			return;
	char *home = home_from_passwd(process->user.uid);
	char *entry = tern_strdup_printf("HOME=%s", home && *home ? home : "/");
	free(home);
	char **env = realloc(process->env, (n + 2) * sizeof(char *));
	if (env == NULL) {
		free(entry);
		return;
	}
	env[n] = entry;
	env[n + 1] = NULL;
	process->env = env;
}
