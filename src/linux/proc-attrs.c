/* Process attributes other than capabilities: rlimits, user and groups,
 * umask, no_new_privs, oom_score_adj, sysctls, personality, scheduler, I/O
 * priority and the final exec. (linux.intelRdt: intel-rdt.c.) */
#include "proc-attrs.h"
#include "log.h"
#include "procfs.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <linux/ioprio.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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

/* ---- what the process inherits: signals, stdio, fds ---- */

int tern_signals_reset(tern_error **err)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t none;

	/* Only an ignored signal and the blocked mask survive execve; reset
	 * every disposition anyway, so nothing depends on which is which.
	 * glibc refuses its two reserved realtime signals (EINVAL), which
	 * no caller can have set to anything but their default. */
	sigemptyset(&dfl.sa_mask);
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		if (sigaction(sig, &dfl, NULL) < 0 && errno != EINVAL)
			return tern_error_make(err, errno, "reset the action of signal %d", sig);
	}
	sigemptyset(&none);
	if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
		return tern_error_make(err, errno, "clear the blocked signal mask");
	return 0;
}

int tern_stdio_chown(uid_t uid, tern_error **err)
{
	for (int fd = 0; fd <= 2; fd++) {
		struct stat st;

		if (fstat(fd, &st) < 0) {
			if (errno == EBADF)
				continue; /* the caller closed it: nothing to own */
			return tern_error_make(err, errno, "stat stdio fd %d", fd);
		}
		/* The null device by its number (1:3, fixed by the kernel), not
		 * by the container's /dev/null: a container without one would
		 * otherwise chown the host's, which the caller passed as stdin
		 * (seen: the host's /dev/null owned by a user namespace's root). */
		if (st.st_uid == uid || (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)))
			continue;
		/* The gid as it is (a mount option may have chosen it). EINVAL:
		 * that gid is not mapped in our user namespace; EPERM: the
		 * owner is not; EROFS: a read-only /dev. Then leave it, as
		 * runc does. */
		if (fchown(fd, uid, st.st_gid) < 0 && errno != EINVAL && errno != EPERM &&
		    errno != EROFS)
			return tern_error_make(err, errno, "chown stdio fd %d to uid %u", fd, uid);
	}
	return 0;
}

static bool fd_in(int fd, const int *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == fd)
			return true;
	return false;
}

/* Where close_range is refused: every fd /proc/self/fd lists, in a
 * procfs the container's mounts cannot fake; without one, every number
 * up to the highest an fd can have. */
static int close_fds_slowly(int first, const int *keep, size_t nkeep, tern_error **err)
{
	cleanup_close int procfd = tern_procfs_open(NULL);
	int dirfd =
	    procfd < 0 ? -1
		       : tern_procfs_openat(procfd, "self/fd", O_RDONLY | O_DIRECTORY, false, NULL);
	DIR *dir = dirfd < 0 ? NULL : fdopendir(dirfd);

	if (dir == NULL) {
		struct rlimit rl = {0, 0};
		int max = 1 << 20; /* the kernel's default fs.nr_open */

		if (dirfd >= 0)
			close(dirfd);
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max < (rlim_t)max &&
		    rl.rlim_cur < (rlim_t)max)
			max = (int)(rl.rlim_max > rl.rlim_cur ? rl.rlim_max : rl.rlim_cur);
		for (int fd = first; fd < max; fd++)
			if (!fd_in(fd, keep, nkeep) && fd != procfd)
				close(fd);
		return 0;
	}
	for (struct dirent *de; (errno = 0, de = readdir(dir)) != NULL;) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);

		if (*end != '\0' || end == de->d_name || fd < first || fd == dirfd ||
		    fd == procfd || fd_in((int)fd, keep, nkeep))
			continue;
		close((int)fd);
	}
	int e = errno;
	closedir(dir);
	if (e != 0)
		return tern_error_make(err, e, "list /proc/self/fd");
	return 0;
}

int tern_close_fds_except(int first, const int *keep, size_t nkeep, tern_error **err)
{
	/* close_range fails with ENOSYS before Linux 5.9, and with EPERM (or
	 * anything) under a seccomp profile of the environment tern itself
	 * runs in: an older container engine's default denies it. */
	if (tern_close_fds_from(first, keep, nkeep) == 0)
		return 0;
	return close_fds_slowly(first, keep, nkeep, err);
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

/* ---- personality ---- */

static const struct {
	const char *name;
	unsigned long value;
} personality_flags[] = {
    {"UNAME26", UNAME26},
    {"ADDR_NO_RANDOMIZE", ADDR_NO_RANDOMIZE},
    {"FDPIC_FUNCPTRS", FDPIC_FUNCPTRS},
    {"MMAP_PAGE_ZERO", MMAP_PAGE_ZERO},
    {"ADDR_COMPAT_LAYOUT", ADDR_COMPAT_LAYOUT},
    {"READ_IMPLIES_EXEC", READ_IMPLIES_EXEC},
    {"ADDR_LIMIT_32BIT", ADDR_LIMIT_32BIT},
    {"SHORT_INODE", SHORT_INODE},
    {"WHOLE_SECONDS", WHOLE_SECONDS},
    {"STICKY_TIMEOUTS", STICKY_TIMEOUTS},
    {"ADDR_LIMIT_3GB", ADDR_LIMIT_3GB},
};

int tern_personality_value(const oci_personality *p, unsigned long *out, tern_error **err)
{
	const char *domain = p->domain ? p->domain : "";
	unsigned long v;

	/* The spec knows these two domains; the others (SVR4, BSD, ...) are
	 * emulations Linux no longer has. */
	if (strcmp(domain, "LINUX") == 0)
		v = PER_LINUX;
	else if (strcmp(domain, "LINUX32") == 0)
		v = PER_LINUX32;
	else
		return tern_error_make_quiet(err, EINVAL,
					     "linux.personality.domain: unknown domain `%s` "
					     "(LINUX or LINUX32)",
					     domain);
	for (size_t i = 0; p->flags && p->flags[i]; i++) {
		size_t j = 0, n = sizeof(personality_flags) / sizeof(personality_flags[0]);
		while (j < n && strcmp(p->flags[i], personality_flags[j].name) != 0)
			j++;
		if (j == n)
			return tern_error_make_quiet(
			    err, EINVAL, "linux.personality.flags[%zu]: unknown flag `%s`", i,
			    p->flags[i]);
		v |= personality_flags[j].value;
	}
	*out = v;
	return 0;
}

int tern_personality_apply(const oci_personality *p, tern_error **err)
{
	unsigned long v;
	int ret = tern_personality_value(p, &v, err);

	if (ret < 0)
		return ret;
	if (personality(v) < 0)
		return tern_error_make(err, errno, "linux.personality: personality(0x%lx)", v);
	return 0;
}

/* ---- scheduler ---- */

/* sched_setattr(2)'s argument, first version (48 bytes; the kernel takes
 * any known size). Spelled out: <linux/sched/types.h> redefines glibc's
 * struct sched_param, and glibc 2.36 has no struct sched_attr. */
struct sched_attr_v0 {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime;
	uint64_t sched_deadline;
	uint64_t sched_period;
};

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif
/* sched_setattr(2) flags, as <linux/sched.h> numbers them (that header
 * clashes with glibc's <sched.h>). */
static const struct {
	const char *name;
	uint64_t value;
} sched_flags[] = {
    {"SCHED_FLAG_RESET_ON_FORK", 0x01},	 {"SCHED_FLAG_RECLAIM", 0x02},
    {"SCHED_FLAG_DL_OVERRUN", 0x04},	 {"SCHED_FLAG_KEEP_POLICY", 0x08},
    {"SCHED_FLAG_KEEP_PARAMS", 0x10},	 {"SCHED_FLAG_UTIL_CLAMP_MIN", 0x20},
    {"SCHED_FLAG_UTIL_CLAMP_MAX", 0x40},
};

static const struct {
	const char *name;
	int policy;
} sched_policies[] = {
    {"SCHED_OTHER", SCHED_OTHER}, {"SCHED_BATCH", SCHED_BATCH}, {"SCHED_IDLE", SCHED_IDLE},
    {"SCHED_FIFO", SCHED_FIFO},	  {"SCHED_RR", SCHED_RR},	{"SCHED_DEADLINE", SCHED_DEADLINE},
};

static int sched_policy(const char *name)
{
	for (size_t i = 0; name && i < sizeof(sched_policies) / sizeof(sched_policies[0]); i++)
		if (strcmp(name, sched_policies[i].name) == 0)
			return sched_policies[i].policy;
	return -1;
}

/* The kernel's deadline parameters must be at least 2^10 ns (its
 * resolution) and below 2^63. */
#define DL_MIN ((uint64_t)1 << 10)
#define DL_MAX ((uint64_t)1 << 63)

/* A kernel.sched_deadline_period_{min,max}_us sysctl (µs), or its default
 * when it cannot be read. */
static uint64_t dl_period_bound_us(const char *name, uint64_t dflt)
{
	cleanup_free char *path = tern_strdup_printf("/proc/sys/kernel/%s", name);
	cleanup_free char *text = NULL;
	size_t len = 0;
	char *end;
	unsigned long long v;

	if (tern_read_file(path, &text, &len, 64, NULL) < 0)
		return dflt;
	errno = 0;
	v = strtoull(text, &end, 10);
	return errno || end == text ? dflt : (uint64_t)v;
}

/* __checkparam_dl's rules (kernel/sched/syscalls.c), each named by its
 * field. `host`: also the period bounds of this host's sysctls (in the
 * parent; the child, whose /proc may be the container's, leaves them to
 * the kernel). */
static int check_deadline(const oci_scheduler *s, bool host, tern_error **err)
{
	uint64_t runtime = s->runtime.value, deadline = s->deadline.value;
	uint64_t period = s->period.value ? s->period.value : deadline;
	const char *pfield = s->period.value ? "period" : "deadline";

	if (!s->runtime.set)
		return tern_error_make_quiet(err, EINVAL,
					     "process.scheduler.runtime: is required for "
					     "SCHED_DEADLINE (nanoseconds)");
	if (!s->deadline.set)
		return tern_error_make_quiet(err, EINVAL,
					     "process.scheduler.deadline: is required for "
					     "SCHED_DEADLINE (nanoseconds; period defaults to it)");
	if (runtime < DL_MIN)
		return tern_error_make_quiet(err, EINVAL,
					     "process.scheduler.runtime: %" PRIu64
					     " ns is below the kernel's minimum of 1024 ns",
					     runtime);
	if (runtime > deadline)
		return tern_error_make_quiet(
		    err, EINVAL,
		    "process.scheduler.runtime: %" PRIu64 " ns is more than the deadline, %" PRIu64
		    " ns (SCHED_DEADLINE needs runtime <= deadline <= period)",
		    runtime, deadline);
	if (deadline > period)
		return tern_error_make_quiet(
		    err, EINVAL,
		    "process.scheduler.deadline: %" PRIu64 " ns is more than the period, %" PRIu64
		    " ns (SCHED_DEADLINE needs runtime <= deadline <= period)",
		    deadline, period);
	if (period >= DL_MAX)
		return tern_error_make_quiet(err, EINVAL,
					     "process.scheduler.%s: %" PRIu64
					     " ns is not below 2^63 ns, the kernel's limit",
					     pfield, period);
	if (host) {
		/* the kernel's defaults: 100 µs and 2^22 µs (about 4.2 s) */
		uint64_t lo = dl_period_bound_us("sched_deadline_period_min_us", 100);
		uint64_t hi = dl_period_bound_us("sched_deadline_period_max_us", 1 << 22);
		if (period < lo * 1000 || (hi < UINT64_MAX / 1000 && period > hi * 1000))
			return tern_error_make_quiet(
			    err, EINVAL,
			    "process.scheduler.%s: a period of %" PRIu64
			    " ns is outside what this kernel takes, %" PRIu64 " to %" PRIu64
			    " ns (kernel.sched_deadline_period_min_us and _max_us)%s",
			    pfield, period, lo * 1000, hi * 1000,
			    s->period.value ? ""
					    : " (without a period, the deadline is the period)");
	}
	return 0;
}

static const char *policy_name(int policy)
{
	for (size_t i = 0; i < sizeof(sched_policies) / sizeof(sched_policies[0]); i++)
		if (sched_policies[i].policy == policy)
			return sched_policies[i].name;
	return "an unknown policy";
}

/* The policy a process we create starts with: ours, but a realtime or
 * deadline one reset to SCHED_OTHER when we have reset-on-fork. */
static int inherited_policy(void)
{
	int p = sched_getscheduler(0);

	if (p < 0)
		return -1;
	if (p & SCHED_RESET_ON_FORK) {
		p &= ~SCHED_RESET_ON_FORK;
		if (p == SCHED_FIFO || p == SCHED_RR || p == SCHED_DEADLINE)
			p = SCHED_OTHER;
	}
	return p;
}

/* process.scheduler.flags[i]: known, and of use with this policy. */
static int check_sched_flag(const oci_scheduler *s, int policy, size_t i, bool host,
			    tern_error **err)
{
	const char *f = s->flags[i];
	size_t j = 0, n = sizeof(sched_flags) / sizeof(sched_flags[0]);

	while (j < n && strcmp(f, sched_flags[j].name) != 0)
		j++;
	if (j == n)
		return tern_error_make_quiet(
		    err, EINVAL, "process.scheduler.flags[%zu]: unknown flag `%s`", i, f);
	switch (sched_flags[j].value) {
	case 0x02: /* RECLAIM */
	case 0x04: /* DL_OVERRUN */
		/* the kernel takes them with any policy, and they mean
		 * nothing but with SCHED_DEADLINE */
		if (policy != SCHED_DEADLINE)
			return tern_error_make_quiet(err, EINVAL,
						     "process.scheduler.flags[%zu]: %s is for "
						     "SCHED_DEADLINE only, not %s",
						     i, f, s->policy);
		break;
	case 0x20: /* UTIL_CLAMP_MIN */
	case 0x40: /* UTIL_CLAMP_MAX */
		return tern_error_make_quiet(err, EINVAL,
					     "process.scheduler.flags[%zu]: %s needs a utilization "
					     "value (sched_attr's sched_util_min/max), which the "
					     "runtime-spec has no field for",
					     i, f);
	case 0x10: /* KEEP_PARAMS */
		/* sched_setattr then takes the parameters the process has,
		 * and changes neither them nor the policy: only utilization
		 * clamps, which config.json cannot give */
		return tern_error_make_quiet(
		    err, EINVAL,
		    "process.scheduler.flags[%zu]: with SCHED_FLAG_KEEP_PARAMS the kernel "
		    "changes neither the policy nor its parameters (only utilization clamps, "
		    "which the runtime-spec cannot set): process.scheduler would do nothing",
		    i);
	case 0x08: /* KEEP_POLICY */
		/* the policy field is then ignored: the process keeps the
		 * one it inherits from tern */
		if (host) {
			int have = inherited_policy();
			if (have >= 0 && have != policy)
				return tern_error_make_quiet(
				    err, EINVAL,
				    "process.scheduler.flags[%zu]: SCHED_FLAG_KEEP_POLICY keeps "
				    "the policy the process inherits from tern, %s, not "
				    "process.scheduler.policy %s",
				    i, policy_name(have), s->policy);
		}
		break;
	}
	return 0;
}

static int check_scheduler(const oci_scheduler *s, bool host, tern_error **err)
{
	int policy = sched_policy(s->policy);
	int64_t prio = s->priority.value, nice = s->nice.value;
	int ret;

	if (s->policy && strcmp(s->policy, "SCHED_ISO") == 0)
		return tern_error_make_quiet(err, ENOTSUP,
					     "process.scheduler.policy: SCHED_ISO is not "
					     "implemented by the Linux kernel");
	if (policy < 0)
		return tern_error_make_quiet(err, EINVAL,
					     "process.scheduler.policy: unknown policy `%s` "
					     "(SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, "
					     "SCHED_RR or SCHED_DEADLINE)",
					     s->policy ? s->policy : "");
	if (policy == SCHED_FIFO || policy == SCHED_RR) {
		int lo = sched_get_priority_min(policy), hi = sched_get_priority_max(policy);
		if (prio < lo || prio > hi)
			return tern_error_make_quiet(err, EINVAL,
						     "process.scheduler.priority: %" PRId64
						     " is out of range for %s (%d-%d)",
						     prio, s->policy, lo, hi);
	} else if (prio != 0) {
		return tern_error_make_quiet(err, EINVAL,
					     "process.scheduler.priority: %" PRId64
					     " is out of range for %s (only 0; priorities are for "
					     "SCHED_FIFO and SCHED_RR)",
					     prio, s->policy);
	}
	if (nice < -20 || nice > 19)
		return tern_error_make_quiet(
		    err, EINVAL, "process.scheduler.nice: %" PRId64 " is out of range (-20 to 19)",
		    nice);
	/* sched_setattr takes a nice value with any policy and uses it with
	 * SCHED_OTHER and SCHED_BATCH only: elsewhere it would be lost */
	if (nice != 0 && policy != SCHED_OTHER && policy != SCHED_BATCH)
		return tern_error_make_quiet(err, EINVAL,
					     "process.scheduler.nice: %" PRId64
					     " has no effect with %s (nice is for SCHED_OTHER and "
					     "SCHED_BATCH)",
					     nice, s->policy);
	for (size_t i = 0; s->flags && s->flags[i]; i++) {
		ret = check_sched_flag(s, policy, i, host, err);
		if (ret < 0)
			return ret;
	}
	if (policy == SCHED_DEADLINE)
		return check_deadline(s, host, err);
	if (s->runtime.value || s->deadline.value || s->period.value)
		return tern_error_make_quiet(
		    err, EINVAL,
		    "process.scheduler.%s: runtime, deadline and period are "
		    "for SCHED_DEADLINE only, not %s",
		    s->runtime.value	? "runtime"
		    : s->deadline.value ? "deadline"
					: "period",
		    s->policy);
	return 0;
}

int tern_scheduler_check(const oci_scheduler *s, tern_error **err)
{
	int ret = check_scheduler(s, true, err);
	bool reset_on_fork = false;

	if (ret < 0 || sched_policy(s->policy) != SCHED_DEADLINE)
		return ret;
	for (size_t i = 0; s->flags && s->flags[i]; i++)
		reset_on_fork |= strcmp(s->flags[i], "SCHED_FLAG_RESET_ON_FORK") == 0;
	/* valid, but a shell as the process would be of no use */
	if (!reset_on_fork)
		tern_warn("process.scheduler: a SCHED_DEADLINE process cannot fork (fork fails "
			  "with EAGAIN) unless flags has SCHED_FLAG_RESET_ON_FORK");
	return 0;
}

/* Whether we are in the host's user namespace (its uid map is the whole
 * range); assumed so when /proc cannot tell. Only for messages. */
static bool in_initial_user_ns(void)
{
	char buf[64] = {0};
	cleanup_close int fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);
	unsigned long inside, outside, count;

	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0)
		return true;
	if (sscanf(buf, "%lu %lu %lu", &inside, &outside, &count) != 3)
		return true;
	return inside == 0 && outside == 0 && count == 4294967295UL;
}

int tern_scheduler_apply(const oci_scheduler *s, tern_error **err)
{
	struct sched_attr_v0 attr = {.size = sizeof(attr)};
	int ret = check_scheduler(s, false, err);

	if (ret < 0)
		return ret;
	attr.sched_policy = (uint32_t)sched_policy(s->policy);
	attr.sched_nice = (int32_t)s->nice.value;
	attr.sched_priority = (uint32_t)s->priority.value;
	attr.sched_runtime = s->runtime.value;
	attr.sched_deadline = s->deadline.value;
	attr.sched_period = s->period.value;
	for (size_t i = 0; s->flags && s->flags[i]; i++)
		for (size_t j = 0; j < sizeof(sched_flags) / sizeof(sched_flags[0]); j++)
			if (strcmp(s->flags[i], sched_flags[j].name) == 0)
				attr.sched_flags |= sched_flags[j].value;
	if (syscall(SYS_sched_setattr, 0, &attr, 0) == 0)
		return 0;
	int e = errno;
	bool rt = attr.sched_policy == SCHED_FIFO || attr.sched_policy == SCHED_RR;
	if (e == EPERM && !in_initial_user_ns())
		return tern_error_make(err, e,
				       "process.scheduler: sched_setattr %s (a realtime policy or "
				       "a nice value below the current one needs CAP_SYS_NICE in "
				       "the host's user namespace, which a container with its own "
				       "user namespace does not have)",
				       s->policy);
	if (e == EPERM && rt && access("/sys/fs/cgroup/cpu/cpu.rt_runtime_us", F_OK) == 0)
		/* CONFIG_RT_GROUP_SCHED on cgroup v1: a new cgroup starts with
		 * no realtime budget, and the kernel then refuses RT policies
		 * even to root. */
		return tern_error_make(err, e,
				       "process.scheduler: sched_setattr %s priority %u (the "
				       "container's cpu cgroup may have no realtime budget: set "
				       "linux.resources.cpu.realtimeRuntime)",
				       s->policy, attr.sched_priority);
	if (e == EPERM && attr.sched_policy == SCHED_DEADLINE)
		/* __sched_setscheduler: a deadline task must be allowed to
		 * run on every CPU of its root domain */
		return tern_error_make(err, e,
				       "process.scheduler: sched_setattr SCHED_DEADLINE (the "
				       "process's CPUs must cover its whole root domain: a "
				       "linux.resources.cpu.cpus with fewer CPUs than the host "
				       "is refused by the kernel)");
	if (e == EBUSY && attr.sched_policy == SCHED_DEADLINE)
		return tern_error_make(err, e,
				       "process.scheduler: sched_setattr SCHED_DEADLINE (runtime "
				       "%" PRIu64 " / period %" PRIu64
				       " is more bandwidth than the root domain admits)",
				       attr.sched_runtime,
				       attr.sched_period ? attr.sched_period : attr.sched_deadline);
	return tern_error_make(err, e, "process.scheduler: sched_setattr %s", s->policy);
}

/* ---- I/O priority ---- */

static int io_class(const char *name)
{
	if (name == NULL)
		return -1;
	if (strcmp(name, "IOPRIO_CLASS_RT") == 0)
		return IOPRIO_CLASS_RT;
	if (strcmp(name, "IOPRIO_CLASS_BE") == 0)
		return IOPRIO_CLASS_BE;
	if (strcmp(name, "IOPRIO_CLASS_IDLE") == 0)
		return IOPRIO_CLASS_IDLE;
	return -1;
}

int tern_io_priority_check(const oci_io_priority *io, tern_error **err)
{
	int cl = io_class(io->class_);

	/* The kernel's class 0, "none", is what a process has when nobody
	 * set one: leaving ioPriority out is how to ask for it. */
	if (io->class_ && strcmp(io->class_, "IOPRIO_CLASS_NONE") == 0)
		return tern_error_make_quiet(
		    err, EINVAL,
		    "process.ioPriority.class: IOPRIO_CLASS_NONE is not a class of the "
		    "runtime-spec (IOPRIO_CLASS_RT, IOPRIO_CLASS_BE or IOPRIO_CLASS_IDLE); leave "
		    "process.ioPriority out for the kernel's default");
	if (cl < 0)
		return tern_error_make_quiet(
		    err, EINVAL,
		    "process.ioPriority.class: unknown class `%s` "
		    "(IOPRIO_CLASS_RT, IOPRIO_CLASS_BE or IOPRIO_CLASS_IDLE)",
		    io->class_ ? io->class_ : "");
	/* eight levels; above 7 the kernel reads the bits as a hint (6.x) */
	if (io->priority < 0 || io->priority > 7)
		return tern_error_make_quiet(
		    err, EINVAL, "process.ioPriority.priority: %" PRId64 " is out of range (0-7)",
		    io->priority);
	/* ioprio_set(2): "the idle class has no class data"; the kernel
	 * keeps a level given with it and the I/O schedulers ignore it */
	if (cl == IOPRIO_CLASS_IDLE && io->priority != 0)
		return tern_error_make_quiet(
		    err, EINVAL,
		    "process.ioPriority.priority: IOPRIO_CLASS_IDLE has no "
		    "levels, %" PRId64 " would be ignored (give 0)",
		    io->priority);
	return 0;
}

int tern_io_priority_apply(const oci_io_priority *io, tern_error **err)
{
	int ret = tern_io_priority_check(io, err);

	if (ret < 0)
		return ret;
	int value = IOPRIO_PRIO_VALUE(io_class(io->class_), io->priority);
	if (syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, value) < 0) {
		int e = errno;
		if (e == EPERM && io_class(io->class_) == IOPRIO_CLASS_RT)
			return tern_error_make(err, e,
					       "process.ioPriority: ioprio_set %s %" PRId64
					       " (the realtime class needs CAP_SYS_ADMIN or "
					       "CAP_SYS_NICE in the host's user namespace)",
					       io->class_, io->priority);
		return tern_error_make(err, e, "process.ioPriority: ioprio_set %s %" PRId64,
				       io->class_, io->priority);
	}
	return 0;
}

int tern_proc_attrs_check(const oci_config *config, tern_error **err)
{
	const oci_process *p = config->process;
	const oci_linux *l = config->linux_;
	int ret;

	if (p && p->scheduler) {
		ret = tern_scheduler_check(p->scheduler, err);
		if (ret < 0)
			return ret;
	}
	if (p && p->io_priority) {
		ret = tern_io_priority_check(p->io_priority, err);
		if (ret < 0)
			return ret;
	}
	if (l && l->personality) {
		unsigned long v;
		ret = tern_personality_value(l->personality, &v, err);
		if (ret < 0)
			return ret;
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

/* execve's verdict on one candidate, without running it: a regular file
 * that the current credentials (effective ids, groups and capabilities,
 * as execve checks them) may execute, on a mount without noexec. A
 * directory or a device is EACCES, as execve says. */
static int exec_access(const char *path)
{
	struct stat st;

	if (faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) < 0)
		return -errno;
	if (stat(path, &st) < 0)
		return -errno;
	return S_ISREG(st.st_mode) ? 0 : -EACCES;
}

/* The errors after which execvp goes on to the next PATH entry. */
static bool try_next_candidate(int e)
{
	return e == EACCES || e == ENOENT || e == ENOTDIR || e == ESTALE || e == ENODEV ||
	       e == ETIMEDOUT;
}

int tern_find_executable(const char *name, char *const *env, char **path)
{
	const char *cursor;
	char *cand;
	bool eacces = false;
	int ret;

	*path = NULL;
	if (name == NULL || name[0] == '\0')
		return -ENOENT;
	if (strchr(name, '/') != NULL) {
		ret = exec_access(name);
		if (ret == 0)
			*path = tern_xstrdup(name);
		return ret;
	}
	cursor = env_path(env);
	while ((cand = next_candidate(&cursor, name)) != NULL) {
		ret = exec_access(cand);
		if (ret == 0) {
			*path = cand;
			return 0;
		}
		free(cand);
		if (!try_next_candidate(-ret))
			return ret;
		if (ret == -EACCES)
			eacces = true;
	}
	return eacces ? -EACCES : -ENOENT;
}

int tern_exec_check(const oci_process *process, tern_error **err)
{
	const char *name = process->args ? process->args[0] : NULL;
	cleanup_free char *path = NULL;
	int ret = tern_find_executable(name, process->env, &path);

	if (ret < 0)
		return tern_error_make(err, -ret, "exec `%s`", name ? name : "");
	return 0;
}

bool tern_exec_check_possible(void)
{
	struct stat st;

	return faccessat(AT_FDCWD, "/", X_OK, AT_EACCESS) == 0 && stat("/", &st) == 0;
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
		else if (!try_next_candidate(e))
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
