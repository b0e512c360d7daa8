/* Process attributes other than capabilities: rlimits, user, groups and umask,
 * no_new_privs, what the process inherits (signals, stdio, fds),
 * oom_score_adj, personality, and tern_proc_attrs_check (the parent's
 * check of the scheduler, ioPriority and personality). The others have
 * files of their own: sysctls (proc-attrs-sysctl.c), scheduler and I/O
 * priority (proc-attrs-sched.c), the final exec (proc-attrs-exec.c).
 * (linux.intelRdt: intel-rdt.c.) */
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
