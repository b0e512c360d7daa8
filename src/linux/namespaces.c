#include "namespaces.h"
#include "procfs.h"
#include "log.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PROC_SUPER_MAGIC
#define PROC_SUPER_MAGIC 0x9fa0
#endif

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

int tern_ns_clone_flag(oci_namespace_type type)
{
	switch (type) {
	case OCI_NS_PID:
		return CLONE_NEWPID;
	case OCI_NS_NETWORK:
		return CLONE_NEWNET;
	case OCI_NS_MOUNT:
		return CLONE_NEWNS;
	case OCI_NS_IPC:
		return CLONE_NEWIPC;
	case OCI_NS_UTS:
		return CLONE_NEWUTS;
	case OCI_NS_USER:
		return CLONE_NEWUSER;
	case OCI_NS_CGROUP:
		return CLONE_NEWCGROUP;
	case OCI_NS_TIME:
		return CLONE_NEWTIME;
	default:
		return 0;
	}
}

void tern_ns_plan_init(tern_ns_plan *plan)
{
	memset(plan, 0, sizeof(*plan));
	for (int i = 0; i < OCI_NS_COUNT; i++)
		plan->join_fd[i] = -1;
}

void tern_ns_plan_close(tern_ns_plan *plan)
{
	for (int i = 0; i < OCI_NS_COUNT; i++)
		if (plan->join_fd[i] >= 0) {
			close(plan->join_fd[i]);
			plan->join_fd[i] = -1;
		}
}

static bool is_own_mount_ns(int fd)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 && stat("/proc/self/ns/mnt", &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* The file to join is a namespace of the listed type: setns(2) in the
 * child would only say EINVAL, and not which path. 0, -ENOTTY (not a
 * namespace file at all) or -EINVAL (another type of namespace). */
static int check_ns_type(int fd, oci_namespace_type type)
{
	int got = ioctl(fd, NS_GET_NSTYPE);

	if (got < 0)
		return errno == ENOTTY || errno == EINVAL ? -ENOTTY : 0;
	return got == tern_ns_clone_flag(type) ? 0 : -EINVAL;
}

static const char *ns_type_problem(int e, oci_namespace_type type)
{
	static char buf[64];

	if (e == ENOTTY)
		return "not a namespace file";
	snprintf(buf, sizeof(buf), "not a %s namespace", oci_namespace_type_name(type));
	return buf;
}

int tern_ns_plan_make(const oci_config *config, tern_ns_plan *plan, tern_error **err)
{
	const oci_linux *lx = config->linux_;
	int ret;

	tern_ns_plan_init(plan);
	for (size_t i = 0; lx && i < lx->namespaces_len; i++) {
		const oci_namespace *ns = &lx->namespaces[i];
		plan->has[ns->type] = true;
		if (ns->path && *ns->path) {
			int fd = open(ns->path, O_RDONLY | O_CLOEXEC);
			if (fd < 0) {
				int e = errno;
				tern_ns_plan_close(plan);
				return tern_error_make(err, e, "linux.namespaces[%zu].path `%s`", i,
						       ns->path);
			}
			plan->join_fd[ns->type] = fd;
			ret = check_ns_type(fd, ns->type);
			if (ret < 0) {
				tern_ns_plan_close(plan);
				return tern_error_make(err, -ret,
						       "linux.namespaces[%zu].path `%s`: %s", i,
						       ns->path, ns_type_problem(-ret, ns->type));
			}
			plan->two_stage = true;
			/* Our own mount namespace by path is no namespace of the
			 * container's: pivot_root there would move the root of
			 * every process of the host. */
			if (ns->type == OCI_NS_MOUNT && is_own_mount_ns(fd)) {
				close(fd);
				plan->join_fd[ns->type] = -1;
				plan->has[ns->type] = false;
			}
		} else if (ns->type == OCI_NS_CGROUP) {
			plan->new_cgroup = true;
		} else if (ns->type == OCI_NS_TIME) {
			plan->new_time = true;
			plan->two_stage = true;
		} else {
			plan->clone_flags |= tern_ns_clone_flag(ns->type);
			if (ns->type == OCI_NS_USER)
				plan->new_user = true;
		}
	}
	/* Without a mount namespace the container shares the caller's (the
	 * spec says an unlisted namespace is inherited) and tern mounts there,
	 * which a new user namespace does not own: every mount would fail. */
	if (!plan->has[OCI_NS_MOUNT] && plan->new_user) {
		tern_ns_plan_close(plan);
		return tern_error_make(err, EINVAL,
				       "linux.namespaces: a new user namespace needs a mount "
				       "namespace too: without one the rootfs is mounted in the "
				       "caller's mount namespace, which the new user namespace "
				       "does not own");
	}
	if ((config->hostname && *config->hostname) && !(plan->has[OCI_NS_UTS])) {
		tern_ns_plan_close(plan);
		return tern_error_make(err, EINVAL,
				       "hostname: setting it needs a UTS namespace in "
				       "linux.namespaces");
	}
	if ((config->domainname && *config->domainname) && !(plan->has[OCI_NS_UTS])) {
		tern_ns_plan_close(plan);
		return tern_error_make(err, EINVAL,
				       "domainname: setting it needs a UTS namespace in "
				       "linux.namespaces");
	}
	return 0;
}

int tern_ns_join(const tern_ns_plan *plan, bool only_user, tern_error **err)
{
	/* The user namespace first: joining it gives the capabilities needed to
	 * join the namespaces it owns. The mount namespace last among the rest,
	 * so the other paths were resolved (they are fds already anyway). */
	static const oci_namespace_type order[] = {OCI_NS_IPC,	OCI_NS_UTS,    OCI_NS_NETWORK,
						   OCI_NS_PID,	OCI_NS_CGROUP, OCI_NS_TIME,
						   OCI_NS_MOUNT};
	if (only_user) {
		if (plan->join_fd[OCI_NS_USER] >= 0 &&
		    setns(plan->join_fd[OCI_NS_USER], CLONE_NEWUSER) < 0)
			return tern_error_make(err, errno, "join the user namespace");
		return 0;
	}
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		oci_namespace_type t = order[i];
		if (plan->join_fd[t] < 0)
			continue;
		if (setns(plan->join_fd[t], tern_ns_clone_flag(t)) < 0)
			return tern_error_make(err, errno, "join the %s namespace",
					       oci_namespace_type_name(t));
	}
	return 0;
}

/* The kernel takes a map in one write(2): a short write would be an error,
 * and a second write to uid_map always fails with EPERM. */
static int write_map(int procfd, pid_t pid, const char *file, const char *field,
		     const oci_id_mapping *maps, size_t n, tern_error **err)
{
	char path[64];
	size_t cap = n * 40 + 1, used = 0;
	cleanup_free char *buf = tern_xmalloc0(cap);
	cleanup_close int fd = -1;
	ssize_t w;

	for (size_t i = 0; i < n; i++)
		used += (size_t)snprintf(buf + used, cap - used, "%u %u %u\n", maps[i].container_id,
					 maps[i].host_id, maps[i].size);
	snprintf(path, sizeof(path), "%d/%s", pid, file);
	fd = tern_procfs_openat(procfd, path, O_WRONLY, true, err);
	if (fd < 0)
		return tern_error_wrap(err, "%s", field);
	w = write(fd, buf, used);
	if (w < 0)
		return tern_error_make(err, errno, "%s: write /proc/%s", field, path);
	if ((size_t)w != used)
		return tern_error_make(err, EIO, "%s: short write to /proc/%s", field, path);
	return 0;
}

/* Rootless: the one mapping an unprivileged user may write itself is its
 * own id, once, to one id inside (user_namespaces(7)). */
static bool own_id_only(const oci_id_mapping *maps, size_t n, unsigned own)
{
	return n == 1 && maps[0].size == 1 && maps[0].host_id == own;
}

/* Run newuidmap/newgidmap (shadow's setuid helpers, Debian package
 * uidmap) with the ranges: they check them against /etc/subuid and
 * /etc/subgid and write the map for us. Its stderr ends up in the error. */
static int run_map_helper(const char *tool, pid_t pid, const char *field_base,
			  const oci_id_mapping *maps, size_t n, unsigned own, tern_error **err)
{
	/* Name the first mapping that is not the caller's own id: that is the
	 * one the helper has to vouch for. */
	size_t bad = 0;
	while (bad + 1 < n && maps[bad].host_id == own && maps[bad].size == 1)
		bad++;
	cleanup_free char *field =
	    tern_strdup_printf("%s[%zu] (containerID %u, hostID %u, size %u)", field_base, bad,
			       maps[bad].container_id, maps[bad].host_id, maps[bad].size);
	cleanup_close_pair int pipefd[2] = {-1, -1};
	cleanup_free char **argv = tern_xmalloc0((3 * n + 3) * sizeof(char *));
	char **strs = tern_xmalloc0((3 * n + 1) * sizeof(char *));
	cleanup_free char *out = NULL;
	size_t len = 0, k = 0;
	int status = 0, ret = 0;
	pid_t child;

	argv[k++] = (char *)tool;
	strs[0] = tern_strdup_printf("%d", pid);
	argv[k++] = strs[0];
	for (size_t i = 0; i < n; i++) {
		strs[3 * i + 1] = tern_strdup_printf("%u", maps[i].container_id);
		strs[3 * i + 2] = tern_strdup_printf("%u", maps[i].host_id);
		strs[3 * i + 3] = tern_strdup_printf("%u", maps[i].size);
		argv[k++] = strs[3 * i + 1];
		argv[k++] = strs[3 * i + 2];
		argv[k++] = strs[3 * i + 3];
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		ret = tern_error_make(err, errno, "%s: pipe for %s", field, tool);
		goto out;
	}
	child = fork();
	if (child < 0) {
		ret = tern_error_make(err, errno, "%s: fork %s", field, tool);
		goto out;
	}
	if (child == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0)
			dup2(null, STDIN_FILENO);
		dup2(pipefd[1], STDOUT_FILENO);
		dup2(pipefd[1], STDERR_FILENO);
		execvp(tool, argv);
		dprintf(STDERR_FILENO, "%s", strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(pipefd[1]);
	pipefd[1] = -1;
	tern_read_fd_all(pipefd[0], &out, &len, 4096);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		goto out;
	if (out)
		out[strcspn(out, "\n")] = '\0';
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		ret = tern_error_make_quiet(
		    err, ENOENT,
		    "%s: running rootless, a mapping other than your own id alone needs %s "
		    "(Debian package uidmap) and ranges in /etc/sub%cid, but %s is not in "
		    "PATH: No such file or directory",
		    field, tool, tool[3] == 'u' ? 'u' : 'g', tool);
	else
		ret = tern_error_make_quiet(
		    err, EPERM,
		    "%s: running rootless, %s refused the mapping (are the ranges in "
		    "/etc/sub%cid for this user?): %s: Operation not permitted",
		    field, tool, tool[3] == 'u' ? 'u' : 'g', out && *out ? out : "no message");
out:
	for (size_t i = 0; i < 3 * n + 1; i++)
		free(strs[i]);
	free(strs);
	return ret;
}

/* An unprivileged writer: gid_map only after "deny" in setgroups, which
 * the kernel demands so that dropping a group with setgroups(2) stays
 * impossible; the container then cannot call setgroups (proc-attrs.c). */
static int deny_setgroups(int procfd, pid_t pid, const char *field, tern_error **err)
{
	char path[64];
	cleanup_close int fd = -1;

	snprintf(path, sizeof(path), "%d/setgroups", pid);
	fd = tern_procfs_openat(procfd, path, O_WRONLY, true, err);
	if (fd < 0)
		return tern_error_wrap(err, "%s", field);
	if (write(fd, "deny", 4) != 4)
		return tern_error_make(err, errno, "%s: write /proc/%s", field, path);
	return 0;
}

int tern_ns_write_maps(pid_t pid, const oci_id_mapping *uids, size_t n_uids,
		       const oci_id_mapping *gids, size_t n_gids, const char *field_prefix,
		       tern_error **err)
{
	cleanup_close int procfd = tern_procfs_open(err);
	cleanup_free char *ufield = tern_strdup_printf("%suidMappings", field_prefix);
	cleanup_free char *gfield = tern_strdup_printf("%sgidMappings", field_prefix);
	bool root = geteuid() == 0;
	int ret;

	if (procfd < 0)
		return procfd;
	/* As root, tern writes these in the parent user namespace, where it
	 * has CAP_SETGID: gid_map needs no "deny" in setgroups, and the
	 * container keeps setgroups(2) (process.user.additionalGids need it).
	 * Rootless, only the caller's own id can be written directly; any
	 * other range goes through newuidmap/newgidmap. */
	if (n_uids > 0) {
		if (root || own_id_only(uids, n_uids, geteuid()))
			ret = write_map(procfd, pid, "uid_map", ufield, uids, n_uids, err);
		else
			ret =
			    run_map_helper("newuidmap", pid, ufield, uids, n_uids, geteuid(), err);
		if (ret < 0)
			return ret;
	}
	if (n_gids > 0) {
		if (root) {
			ret = write_map(procfd, pid, "gid_map", gfield, gids, n_gids, err);
		} else if (own_id_only(gids, n_gids, getegid())) {
			ret = deny_setgroups(procfd, pid, gfield, err);
			if (ret == 0)
				ret = write_map(procfd, pid, "gid_map", gfield, gids, n_gids, err);
		} else {
			ret =
			    run_map_helper("newgidmap", pid, gfield, gids, n_gids, getegid(), err);
		}
		if (ret < 0)
			return ret;
	}
	return 0;
}

int tern_ns_write_id_maps(pid_t pid, const oci_config *config, tern_error **err)
{
	const oci_linux *lx = config->linux_;

	if (lx == NULL)
		return 0;
	return tern_ns_write_maps(pid, lx->uid_mappings, lx->uid_mappings_len, lx->gid_mappings,
				  lx->gid_mappings_len, "linux.", err);
}

int tern_ns_write_time_offsets(const oci_config *config, tern_error **err)
{
	const oci_linux *lx = config->linux_;
	char buf[160];
	int len = 0;

	if (lx == NULL)
		return 0;
	if (lx->time_offset_monotonic.secs.set || lx->time_offset_monotonic.nanosecs.set)
		len += snprintf(buf + len, sizeof(buf) - (size_t)len, "monotonic %lld %llu\n",
				(long long)lx->time_offset_monotonic.secs.value,
				(unsigned long long)lx->time_offset_monotonic.nanosecs.value);
	if (lx->time_offset_boottime.secs.set || lx->time_offset_boottime.nanosecs.set)
		len += snprintf(buf + len, sizeof(buf) - (size_t)len, "boottime %lld %llu\n",
				(long long)lx->time_offset_boottime.secs.value,
				(unsigned long long)lx->time_offset_boottime.nanosecs.value);
	if (len == 0)
		return 0;
	/* The kernel takes one clock per write. */
	char *line = buf;
	while (*line) {
		char *nl = strchr(line, '\n');
		int ret = tern_write_file_at(AT_FDCWD, "/proc/self/timens_offsets", line,
					     (size_t)(nl - line + 1), err);
		if (ret < 0)
			return tern_error_wrap(err, "linux.timeOffsets");
		line = nl + 1;
	}
	return 0;
}

int tern_ns_set_uts(const oci_config *config, tern_error **err)
{
	if (config->hostname && *config->hostname &&
	    sethostname(config->hostname, strlen(config->hostname)) < 0)
		return tern_error_make(err, errno, "hostname `%s`", config->hostname);
	if (config->domainname && *config->domainname &&
	    setdomainname(config->domainname, strlen(config->domainname)) < 0)
		return tern_error_make(err, errno, "domainname `%s`", config->domainname);
	return 0;
}

int tern_ns_setup_loopback(const tern_ns_plan *plan, tern_error **err)
{
	struct ifreq ifr = {0};
	cleanup_close int fd = -1;

	/* Only a namespace we create: a joined one is its owner's to set up
	 * (runc and crun leave it alone too). */
	if (!(plan->clone_flags & CLONE_NEWNET))
		return 0;
	/* The device ioctls work on any socket of the namespace; AF_UNIX is
	 * there even in a kernel built without IPv4. */
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 && errno == EAFNOSUPPORT)
		fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return tern_error_make(err, errno, "network namespace: bring up `lo`: socket");
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return tern_error_make(err, errno, "network namespace: flags of `lo`");
	if (ifr.ifr_flags & IFF_UP)
		return 0;
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		return tern_error_make(err, errno, "network namespace: bring up `lo`");
	return 0;
}
