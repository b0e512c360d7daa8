/* Checkpoint and restore with CRIU (see checkpoint.h for the layout of a
 * checkpoint directory and how criu is found). */
#include "checkpoint.h"
#include "criu-deadline.h"
#include "fault.h"
#include "checkpoint-devbinds.h"
#include "checkpoint-masked.h"
#include "mountinfo.h"
#include "checkpoint-net.h"
#include "checkpoint-netns.h"
#include "criu-lazy-daemon.h"
#include "cgroup-systemd.h"
#include "cgroup.h"
#include "container-cgroup.h"
#include "hooks.h"
#include "log.h"
#include "memory-merge.h"
#include "netdev.h"
#include "restore-mountpoints.h"
#include "terminal.h"
#include "utils.h"

#include <criu/criu.h>
#include <criu/rpc.pb-c.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* CRIU's key for a network namespace the container joined from a path
 * (runc uses the same one, so images are interchangeable). */
#define NETNS_KEY "extRootNetNS"

/* ---- finding criu ---- */

static bool executable(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static char *search_path(const char *name)
{
	const char *p = getenv("PATH");
	cleanup_free char *copy = tern_xstrdup(p ? p : "/usr/sbin:/usr/bin:/sbin:/bin");
	char *save = NULL;

	for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		char *full = tern_strdup_printf("%s/%s", *d ? d : ".", name);
		if (executable(full))
			return full;
		free(full);
	}
	return NULL;
}

int tern_criu_find(const char *flag, char **path, tern_error **err)
{
	const char *env = getenv("TERN_CRIU");

	/* an explicit choice that is wrong is an error, not a fallback */
	if (flag) {
		if (!executable(flag))
			return tern_error_make(err, access(flag, X_OK) < 0 ? errno : EACCES,
					       "--criu `%s`", flag);
		*path = tern_xstrdup(flag);
		return 0;
	}
	if (env && *env) {
		if (!executable(env))
			return tern_error_make(err, access(env, X_OK) < 0 ? errno : EACCES,
					       "$TERN_CRIU `%s`", env);
		*path = tern_xstrdup(env);
		return 0;
	}
	if (executable(TERN_CRIU_PRIVATE)) {
		*path = tern_xstrdup(TERN_CRIU_PRIVATE);
		return 0;
	}
	*path = search_path("criu");
	if (*path)
		return 0;
	return tern_error_make_quiet(err, ENOENT,
				     "no criu found: tried --criu, $TERN_CRIU, " TERN_CRIU_PRIVATE
				     " and `criu` in PATH; run scripts/install-criu.sh to install "
				     "one that works on this kernel");
}

/* ---- criu options ---- */

typedef struct {
	criu_opts *opts;
	int images_fd;
	int work_fd;
	char *work_dir;
	const char *log_name;
} criu_session;

static void session_clear(criu_session *s)
{
	if (s->opts)
		criu_local_free_opts(s->opts);
	if (s->images_fd >= 0)
		close(s->images_fd);
	if (s->work_fd >= 0)
		close(s->work_fd);
	free(s->work_dir);
}

/* The first error lines of criu's log, so the user sees why without
 * opening it. With `keep_in`, the log is copied there first (the image
 * directory it was written to is about to be removed) and that copy is the
 * one named. */
static char *log_tail(const criu_session *s, const char *keep_in)
{
	cleanup_free char *path = tern_strdup_printf("%s/%s", s->work_dir, s->log_name);
	cleanup_free char *data = NULL;
	size_t len;
	char *out = NULL;
	size_t n = 0;

	if (tern_read_file(path, &data, &len, 64 << 20, NULL) < 0)
		return tern_strdup_printf("(see %s)", path);
	if (keep_in) {
		cleanup_free char *copy = tern_strdup_printf("%s/criu-%s", keep_in, s->log_name);
		if (tern_write_file(copy, data, len, 0600, NULL) == 0) {
			free(path);
			path = steal_pointer(&copy);
		}
	}
	const char *lines[2] = {0};
	for (char *save = NULL, *l = strtok_r(data, "\n", &save); l && n < 2;
	     l = strtok_r(NULL, "\n", &save)) {
		/* criu cannot raise its own RLIMIT_NOFILE without
		 * CAP_SYS_RESOURCE and says so, harmlessly, every time; the
		 * summary lines say nothing of the cause */
		if (strstr(l, "RLIMIT_NOFILE") || strstr(l, "FAILED") || strstr(l, "cgroupd"))
			continue;
		if (strstr(l, "Error") || strstr(l, "Unable") || strstr(l, "fail"))
			lines[n++] = l;
	}
	FILE *f = open_memstream(&out, &len);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%s", i ? "; " : "", lines[i]);
	fprintf(f, "%s(log: %s)", n ? " " : "", path);
	fclose(f);
	return out;
}

/* The images hold the container's memory, and a restore runs whatever
 * they say: a directory that others can write lets them swap the images
 * before a restore (or read what is left readable), and one that another
 * user owns is theirs to do so. runc (1.1) uses such a directory as it
 * is; tern refuses it. A path that does not exist yet tern makes 0700,
 * and criu writes into it under umask 077 (see dump_private). */
static int check_private_dir(int fd, const char *flag, const char *path, tern_error **err)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return tern_error_make(err, errno, "%s `%s`", flag, path);
	if (st.st_uid != geteuid())
		return tern_error_make_quiet(err, EPERM,
					     "%s `%s` is owned by uid %u, not by this user (uid "
					     "%u): its owner could read the checkpoint's memory or "
					     "swap its images; give a directory of your own, or a "
					     "path that does not exist yet (tern makes it 0700)",
					     flag, path, (unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return tern_error_make_quiet(err, EPERM,
					     "%s `%s` is writable by group or others (mode %04o): "
					     "they could swap the checkpoint's images before a "
					     "restore; remove those write bits (chmod go-w), or "
					     "give a path that does not exist yet (tern makes it "
					     "0700)",
					     flag, path, (unsigned)(st.st_mode & 07777));
	return 0;
}

static int session_open(criu_session *s, const char *criu, const char *images, const char *work,
			const char *log_name, bool criu_checked, tern_error **err)
{
	int ret;
	int v;

	s->log_name = log_name;
	if (criu_local_init_opts(&s->opts) < 0)
		return tern_error_make(err, ENOMEM, "libcriu options");
	criu_local_set_service_binary(s->opts, criu);
	s->images_fd = open(images, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (s->images_fd < 0)
		return tern_error_make(err, errno, "--image-path `%s`", images);
	/* (on the fd criu gets: what is checked is what it uses) */
	ret = check_private_dir(s->images_fd, "--image-path", images, err);
	if (ret < 0)
		return ret;
	s->work_dir = realpath(work ? work : images, NULL);
	if (s->work_dir == NULL)
		return tern_error_make(err, errno, "--work-path `%s`", work ? work : images);
	s->work_fd = open(s->work_dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (s->work_fd < 0)
		return tern_error_make(err, errno, "--work-path `%s`", s->work_dir);
	/* its logs tell what the memory held (addresses, file names) */
	ret = work ? check_private_dir(s->work_fd, "--work-path", work, err) : 0;
	if (ret < 0)
		return ret;
	/* libcriu hands these fds to criu, which must inherit them */
	fcntl(s->images_fd, F_SETFD, 0);
	fcntl(s->work_fd, F_SETFD, 0);
	criu_local_set_images_dir_fd(s->opts, s->images_fd);
	criu_local_set_work_dir_fd(s->opts, s->work_fd);
	criu_local_set_log_file(s->opts, (char *)log_name);
	criu_local_set_log_level(s->opts, 4);
	if (criu_checked)
		return 0;
	v = criu_local_get_version(s->opts);
	if (v <= 0)
		return tern_error_make_quiet(
		    err, ENOEXEC,
		    "criu `%s` does not work (it did not answer a version request); run "
		    "scripts/install-criu.sh, or pass a working one with --criu or $TERN_CRIU",
		    criu);
	if (v < 31100)
		return tern_error_make_quiet(
		    err, ENOTSUP, "criu `%s` is version %d; tern needs 3.11 or later", criu, v);
	return 0;
}

/* libcriu 3.17 has no setter for CRIU's empty_ns RPC option (runc's
 * --empty-ns). Its criu_opts begins with the CriuOpts message it sends, so
 * the field is set there, but only once the message's protobuf descriptor
 * proves that this is what the first member is. */
static CriuOpts *rpc_opts(criu_opts *opts)
{
	CriuOpts *rpc = *(CriuOpts **)opts;

	if (rpc == NULL || rpc->base.descriptor != &criu_opts__descriptor)
		return NULL;
	return rpc;
}

/* criu >= 3.19's "skip" network lock method (RPC value 3). bookworm's
 * libcriu refuses values it has no name for, so it is set in the message.
 * With the network namespace left out and no TCP connection kept there
 * is nothing to lock; criu would otherwise run iptables-restore to lock
 * and, on restore, to remove rules it never added. An older criu ignores
 * a value it does not know and locks as before. */
static void network_lock_skip(criu_opts *opts)
{
	CriuOpts *rpc = rpc_opts(opts);

	if (rpc == NULL)
		return;
	rpc->has_network_lock = true;
	rpc->network_lock = (CriuNetworkLockMethod)3;
}

int tern_ckpt_apply_common(criu_opts *opts, const tern_ckpt_opts *o, tern_error **err)
{
	criu_local_set_tcp_established(opts, o->tcp_established);
	criu_local_set_ext_unix_sk(opts, o->ext_unix_sk);
	criu_local_set_shell_job(opts, o->shell_job);
	criu_local_set_file_locks(opts, o->file_locks);
	criu_local_set_auto_dedup(opts, o->auto_dedup);
	criu_local_set_link_remap(opts, o->link_remap);
	if (o->manage_cgroups_mode) {
		static const struct {
			const char *name;
			enum criu_cg_mode mode;
		} modes[] = {{"soft", CRIU_CG_MODE_SOFT},
			     {"full", CRIU_CG_MODE_FULL},
			     {"strict", CRIU_CG_MODE_STRICT},
			     {"ignore", CRIU_CG_MODE_IGNORE}};
		size_t i;
		for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
			if (strcmp(modes[i].name, o->manage_cgroups_mode) == 0)
				break;
		if (i == sizeof(modes) / sizeof(modes[0]))
			return tern_error_make_quiet(
			    err, EINVAL,
			    "--manage-cgroups-mode `%s`: must be soft, full, strict or ignore",
			    o->manage_cgroups_mode);
		criu_local_set_manage_cgroups(opts, modes[i].mode != CRIU_CG_MODE_IGNORE);
		criu_local_set_manage_cgroups_mode(opts, modes[i].mode);
	} else {
		criu_local_set_manage_cgroups(opts, true);
		criu_local_set_manage_cgroups_mode(opts, CRIU_CG_MODE_SOFT);
	}
	for (char **ns = o->empty_ns; ns && *ns; ns++) {
		/* as runc: only the network namespace can be left empty */
		if (strcmp(*ns, "network") != 0 && strcmp(*ns, "net") != 0)
			return tern_error_make_quiet(
			    err, EINVAL, "--empty-ns `%s`: only `network` is supported", *ns);
		CriuOpts *rpc = rpc_opts(opts);
		if (rpc == NULL)
			return tern_error_make_quiet(err, ENOTSUP,
						     "--empty-ns: this libcriu's options are not "
						     "laid out as tern expects");
		rpc->has_empty_ns = true;
		rpc->empty_ns |= CLONE_NEWNET;
	}
	if (o->tls_cacert || o->tls_cert || o->tls_key) {
		/* libcriu 3.17 has no setters for criu's TLS options */
		CriuOpts *rpc = rpc_opts(opts);
		if (rpc == NULL)
			return tern_error_make_quiet(
			    err, ENOTSUP,
			    "criu TLS: this libcriu's options are not laid "
			    "out as tern expects");
		rpc->has_tls = true;
		rpc->tls = true;
		/* copies: libcriu may free its message's strings with it */
		rpc->tls_cacert = o->tls_cacert ? tern_xstrdup(o->tls_cacert) : NULL;
		rpc->tls_cert = o->tls_cert ? tern_xstrdup(o->tls_cert) : NULL;
		rpc->tls_key = o->tls_key ? tern_xstrdup(o->tls_key) : NULL;
		/* the peer's certificate is pinned as the only CA: its name
		 * says nothing more */
		rpc->has_tls_no_cn_verify = true;
		rpc->tls_no_cn_verify = true;
	}
	if (o->lazy_pages) {
		/* memory is left behind and fetched on demand through
		 * userfaultfd: ask criu whether this kernel can */
		struct criu_feature_check f = {.lazy_pages = true};
		if (!o->criu_checked &&
		    (criu_local_feature_check(opts, &f, sizeof(f)) < 0 || !f.lazy_pages))
			return tern_error_make_quiet(
			    err, ENOTSUP,
			    "--lazy-pages: criu says this kernel cannot restore memory lazily "
			    "(no usable userfaultfd)");
		/* libcriu 3.17 has no setter for lazy_pages either */
		CriuOpts *rpc = rpc_opts(opts);
		if (rpc == NULL)
			return tern_error_make_quiet(err, ENOTSUP,
						     "--lazy-pages: this libcriu's options are not "
						     "laid out as tern expects");
		rpc->has_lazy_pages = true;
		rpc->lazy_pages = true;
	}
	return 0;
}

/* ---- the descriptor ---- */

typedef struct {
	char *id;
	char **ext_mounts; /* bind mount points: destinations, symlinks resolved */
	char **cg_mounts;  /* "DESTINATION HOST-HIERARCHY-MOUNTPOINT" */
	char **masked;	   /* masked directories left out (checkpoint-masked.h) */
	char **tmpfs;	   /* config.json's empty tmpfs mounts left out (the same) */
	char **trees;	   /* cgroup v1 tmpfs trees: their descriptor lines (the same) */
	char **devbinds;   /* "MOUNTPOINT ROOT": host devices (checkpoint-devbinds.h) */
	char *stdio[3];	   /* CRIU's key of the init's fd 0-2 when it is outside */
	unsigned stdio_mode[3]; /* the st_mode of a file[] one (criu checks it) */
	char **veths;	   /* "INNER OUTER": veths whose peer was outside */
	bool netns_external;
	bool netns_fresh; /* not in the images: restore makes a new one */
	bool terminal;
} descriptor;

static bool strv_has(char *const *strv, const char *s)
{
	for (; strv && *strv; strv++)
		if (strcmp(*strv, s) == 0)
			return true;
	return false;
}

static void descriptor_clear(descriptor *d)
{
	free(d->id);
	tern_strv_freep(&d->ext_mounts);
	tern_strv_freep(&d->cg_mounts);
	tern_strv_freep(&d->masked);
	tern_strv_freep(&d->tmpfs);
	tern_strv_freep(&d->trees);
	tern_strv_freep(&d->devbinds);
	for (int i = 0; i < 3; i++)
		free(d->stdio[i]);
	tern_strv_freep(&d->veths);
}

static int descriptor_write(int dirfd, const descriptor *d, tern_error **err)
{
	cleanup_free char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	fprintf(f, "version 1\nid %s\n", d->id);
	for (char **m = d->ext_mounts; m && *m; m++)
		fprintf(f, "mount %s\n", *m);
	for (char **m = d->cg_mounts; m && *m; m++)
		fprintf(f, "cgroup %s\n", *m);
	for (char **m = d->masked; m && *m; m++)
		fprintf(f, "masked %s\n", *m);
	for (char **m = d->tmpfs; m && *m; m++)
		fprintf(f, "tmpfs %s\n", *m);
	for (char **m = d->trees; m && *m; m++)
		fprintf(f, "%s\n", *m);
	for (char **m = d->devbinds; m && *m; m++)
		fprintf(f, "devbind %s\n", *m);
	for (int i = 0; i < 3; i++)
		if (d->stdio[i])
			fprintf(f, "stdio%d %s\n", i, d->stdio[i]);
	for (int i = 0; i < 3; i++)
		if (d->stdio_mode[i])
			fprintf(f, "stdiomode%d %o\n", i, d->stdio_mode[i]);
	for (char **m = d->veths; m && *m; m++)
		fprintf(f, "veth %s\n", *m);
	fprintf(f, "netns-external %d\nnetns-fresh %d\nterminal %d\n", d->netns_external,
		d->netns_fresh, d->terminal);
	fclose(f);
	cleanup_close int fd =
	    openat(dirfd, TERN_CKPT_DESCRIPTOR, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || tern_write_all(fd, buf, len) < 0)
		return tern_error_make(err, errno, "write %s", TERN_CKPT_DESCRIPTOR);
	return 0;
}

static int descriptor_read(const char *images, descriptor *d, tern_error **err)
{
	cleanup_free char *path = tern_strdup_printf("%s/%s", images, TERN_CKPT_DESCRIPTOR);
	cleanup_free char *data = NULL;
	size_t len;
	int ret = tern_read_file(path, &data, &len, 1 << 20, err);

	if (ret < 0)
		return tern_error_wrap(err, "--image-path `%s` is not a tern checkpoint", images);
	for (char *save = NULL, *l = strtok_r(data, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		char *v = strchr(l, ' ');
		if (v == NULL)
			continue;
		*v++ = '\0';
		/* a key given twice: the last one counts (and the first is
		 * freed) */
		if (strcmp(l, "id") == 0) {
			free(d->id);
			d->id = tern_xstrdup(v);
		} else if (strcmp(l, "mount") == 0)
			d->ext_mounts = tern_strv_add(d->ext_mounts, tern_xstrdup(v));
		else if (strcmp(l, "cgroup") == 0 && strchr(v, ' '))
			d->cg_mounts = tern_strv_add(d->cg_mounts, tern_xstrdup(v));
		else if (strcmp(l, "masked") == 0 && v[0] == '/')
			d->masked = tern_strv_add(d->masked, tern_xstrdup(v));
		else if (strcmp(l, "tmpfs") == 0 && v[0] == '/')
			/* (restored only as the new config's mount there) */
			d->tmpfs = tern_strv_add(d->tmpfs, tern_xstrdup(v));
		else if (strncmp(l, "tmpfs-", 6) == 0 && v[0] == '/')
			/* (checked as they are used) */
			d->trees = tern_strv_add(d->trees, tern_strdup_printf("%s %s", l, v));
		else if (strcmp(l, "devbind") == 0)
			d->devbinds = tern_strv_add(d->devbinds, tern_xstrdup(v));
		else if (strncmp(l, "stdio", 5) == 0 && l[5] >= '0' && l[5] <= '2' && !l[6]) {
			free(d->stdio[l[5] - '0']);
			d->stdio[l[5] - '0'] = tern_xstrdup(v);
		} else if (strncmp(l, "stdiomode", 9) == 0 && l[9] >= '0' && l[9] <= '2' && !l[10])
			d->stdio_mode[l[9] - '0'] = (unsigned)strtoul(v, NULL, 8);
		else if (strcmp(l, "veth") == 0) {
			/* the names become a device on this node (through
			 * criu's veth[INNER]:OUTER): a migration's source
			 * wrote them, so nothing else passes */
			cleanup_free char *pair = tern_xstrdup(v);
			char *outer = strchr(pair, ' ');
			if (outer)
				*outer++ = '\0';
			if (outer == NULL || !tern_veth_name_ok(pair) || !tern_veth_name_ok(outer))
				return tern_error_make_quiet(
				    err, EINVAL,
				    "%s: corrupted (veth `%s` is not two device names)", path, v);
			d->veths = tern_strv_add(d->veths, tern_xstrdup(v));
		} else if (strcmp(l, "netns-external") == 0)
			d->netns_external = atoi(v) != 0;
		else if (strcmp(l, "netns-fresh") == 0)
			d->netns_fresh = atoi(v) != 0;
		else if (strcmp(l, "terminal") == 0)
			d->terminal = atoi(v) != 0;
	}
	if (d->id == NULL)
		return tern_error_make_quiet(err, EINVAL, "%s: corrupted (no id)", path);
	return 0;
}

void tern_ckpt_outside_stdio(const char *images, char kinds[3], unsigned modes[3])
{
	descriptor d = {0};
	tern_error *e = NULL;

	memset(kinds, 0, 3);
	memset(modes, 0, 3 * sizeof(*modes));
	if (descriptor_read(images, &d, &e) == 0) {
		for (int i = 0; i < 3; i++) {
			if (d.stdio[i] == NULL)
				continue;
			kinds[i] = strncmp(d.stdio[i], "pipe:", 5) == 0 ? 'p' : 'f';
			modes[i] = d.stdio_mode[i];
		}
	}
	tern_error_free(e);
	descriptor_clear(&d);
}

bool tern_ckpt_netns_left_out(const char *images)
{
	descriptor d = {0};
	tern_error *e = NULL;
	bool fresh = false;

	if (descriptor_read(images, &d, &e) == 0)
		fresh = d.netns_fresh;
	tern_error_free(e);
	descriptor_clear(&d);
	return fresh;
}

static const oci_namespace *config_ns(const oci_config *c, oci_namespace_type t)
{
	if (c->linux_ == NULL)
		return NULL;
	for (size_t i = 0; i < c->linux_->namespaces_len; i++)
		if (c->linux_->namespaces[i].type == t)
			return &c->linux_->namespaces[i];
	return NULL;
}

bool tern_ckpt_own_userns(const char *images)
{
	cleanup_free char *path = tern_strdup_printf("%s/" TERN_CKPT_CONFIG, images);
	cleanup_free char *msg = NULL;
	oci_config *c = NULL;

	if (oci_config_parse_file(path, &c, &msg) < 0)
		return false;
	const oci_namespace *ns = config_ns(c, OCI_NS_USER);
	bool own = ns && ns->path == NULL;
	oci_config_free(c);
	return own;
}

bool tern_ckpt_uffd_usable(const char *images)
{
	cleanup_free char *knob = NULL;
	size_t len;

	if (!tern_ckpt_own_userns(images))
		return true;
	return tern_read_file("/proc/sys/vm/unprivileged_userfaultfd", &knob, &len, 16, NULL) == 0 &&
	       knob[0] == '1';
}

static const char *freezer_dir(const oci_map *paths, char **out)
{
	for (size_t i = 0; i < paths->len; i++) {
		const char *k = paths->items[i].key;
		const char *b = strrchr(k, '/');
		if (b && strcmp(b + 1, "freezer") == 0) {
			*out = tern_strdup_printf("%s%s", k, paths->items[i].value);
			return *out;
		}
	}
	return NULL;
}

/* ---- cgroup mounts ---- */

static bool is_cgroupfs(const char *fstype)
{
	return strcmp(fstype, "cgroup") == 0 || strcmp(fstype, "cgroup2") == 0;
}

/* The host's mount point of the cgroup hierarchy on device `dev`. */
static char *host_hierarchy(const char *dev)
{
	cleanup_free char *data = NULL;
	size_t len;

	if (tern_read_file("/proc/self/mountinfo", &data, &len, 0, NULL) < 0)
		return NULL;
	for (char *save = NULL, *l = strtok_r(data, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		tern_mountinfo_line m;
		if (tern_mountinfo_parse(l, &m) && is_cgroupfs(m.fstype) &&
		    strcmp(m.dev, dev) == 0 && strcmp(m.root, "/") == 0)
			return tern_xstrdup(m.mountpoint);
	}
	return NULL;
}

/* The container's cgroup mounts (binds of its own cgroup directory, or
 * cgroupns mounts rooted there) cannot be dumped as such: CRIU wants the
 * root of a mount's filesystem to be visible. They become external
 * mounts, and restore binds the new cgroup's directory there. */
static int external_cgroup_mounts(criu_session *s, pid_t pid, descriptor *d, tern_error **err)
{
	cleanup_free char *path = tern_strdup_printf("/proc/%d/mountinfo", pid);
	cleanup_free char *data = NULL;
	size_t len;
	int ret = tern_read_file(path, &data, &len, 0, err);

	if (ret < 0)
		return ret;
	for (char *save = NULL, *l = strtok_r(data, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		tern_mountinfo_line m;
		if (!tern_mountinfo_parse(l, &m) || !is_cgroupfs(m.fstype))
			continue;
		cleanup_free char *host = host_hierarchy(m.dev);
		if (host == NULL)
			return tern_error_make_quiet(err, ENOENT,
						     "cgroup mount `%s` of the container: no host "
						     "hierarchy on device %s",
						     m.mountpoint, m.dev);
		criu_local_add_ext_mount(s->opts, m.mountpoint, m.mountpoint);
		d->cg_mounts = tern_strv_add(d->cg_mounts,
						 tern_strdup_printf("%s %s", m.mountpoint, host));
	}
	return 0;
}

/* ---- stdio ---- */

static int fd_mnt_id(pid_t pid, int fd)
{
	cleanup_free char *path = tern_strdup_printf("/proc/%d/fdinfo/%d", pid, fd);
	cleanup_free char *data = NULL;
	size_t len;
	char *p;

	if (tern_read_file(path, &data, &len, 0, NULL) < 0)
		return -1;
	p = strstr(data, "mnt_id:");
	return p ? atoi(p + 7) : -1;
}

/* criu's key for `fd` of `pid` as external_stdio records an outside one
 * (a pipe's, or a file's by mount and inode), or NULL. */
static char *stdio_key(pid_t pid, int fd)
{
	cleanup_free char *link = tern_strdup_printf("/proc/%d/fd/%d", pid, fd);
	char target[PATH_MAX];
	struct stat st;
	ssize_t n = readlink(link, target, sizeof(target) - 1);

	if (n < 0 || stat(link, &st) < 0)
		return NULL;
	target[n] = '\0';
	if (strncmp(target, "pipe:", 5) == 0)
		return tern_xstrdup(target);
	int mnt = target[0] == '/' ? fd_mnt_id(pid, fd) : -1;
	return mnt < 0 ? NULL
		       : tern_strdup_printf("file[%x:%lx]", (unsigned)mnt, (unsigned long)st.st_ino);
}

/* The fd of `pid` (through `pidfd`) that holds `want`: `fd` itself, or,
 * while it points elsewhere, the copy the process keeps (a shell keeps
 * its stdout above fd 9 while a builtin writes to a redirected file). */
static int take_matching(int pidfd, pid_t pid, int fd, const char *want)
{
	cleanup_free char *dir = tern_strdup_printf("/proc/%d/fd", pid);

	for (int attempt = 0; attempt < 20; attempt++) {
		int from = fd;
		cleanup_free char *now = stdio_key(pid, fd);
		if (now == NULL || strcmp(now, want) != 0) {
			from = -1;
			DIR *d = opendir(dir);
			for (struct dirent *e; d && from < 0 && (e = readdir(d)) != NULL;) {
				int n = atoi(e->d_name);
				cleanup_free char *k = e->d_name[0] == '.' ? NULL : stdio_key(pid, n);
				if (k && strcmp(k, want) == 0)
					from = n;
			}
			if (d)
				closedir(d);
		}
		if (from < 0)
			return -1;
		int got = (int)syscall(SYS_pidfd_getfd, pidfd, from, 0);
		if (got < 0)
			return -1;
		/* (it may have changed between the look and the take) */
		cleanup_free char *mine = stdio_key(getpid(), got);
		if (mine && strcmp(mine, want) == 0)
			return got;
		close(got);
	}
	return -1;
}

void tern_ckpt_take_stdio(const char *images, int pidfd, pid_t pid, int fds[3])
{
	descriptor d = {0};
	tern_error *e = NULL;

	if (descriptor_read(images, &d, &e) < 0)
		tern_error_free(e);
	for (int i = 0; i < 3; i++) {
		fds[i] = -1;
		if (pidfd < 0)
			continue;
		if (d.stdio[i])
			fds[i] = take_matching(pidfd, pid, i, d.stdio[i]);
		if (fds[i] < 0)
			fds[i] = (int)syscall(SYS_pidfd_getfd, pidfd, i, 0);
	}
	descriptor_clear(&d);
}

static bool mount_in(const char *mountinfo, int mnt_id)
{
	char want[32];
	size_t n = (size_t)snprintf(want, sizeof(want), "%d ", mnt_id);

	for (const char *l = mountinfo; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, want, n) == 0)
			return true;
	return false;
}

/* The init's stdin, stdout and stderr usually come from outside the
 * container (the pipes or files `tern run -d` was given). A pipe is dumped
 * by CRIU; a file on a mount the container does not have is declared
 * external. Either way restore hands the same slot its own fd 0-2, as runc
 * does. */
static int external_stdio(criu_session *s, pid_t pid, descriptor *d)
{
	cleanup_free char *mi_path = tern_strdup_printf("/proc/%d/mountinfo", pid);
	cleanup_free char *mountinfo = NULL;
	size_t len;

	if (tern_read_file(mi_path, &mountinfo, &len, 0, NULL) < 0)
		return 0;
	for (int fd = 0; fd < 3; fd++) {
		cleanup_free char *link = tern_strdup_printf("/proc/%d/fd/%d", pid, fd);
		char target[PATH_MAX];
		struct stat st;
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n < 0 || stat(link, &st) < 0)
			continue;
		target[n] = '\0';
		if (strncmp(target, "pipe:", 5) == 0) {
			d->stdio[fd] = tern_xstrdup(target);
			continue;
		}
		if (target[0] != '/')
			continue; /* sockets, anon inodes: --ext-unix-sk and friends */
		int mnt = fd_mnt_id(pid, fd);
		if (mnt < 0 || mount_in(mountinfo, mnt))
			continue;
		d->stdio[fd] =
		    tern_strdup_printf("file[%x:%lx]", (unsigned)mnt, (unsigned long)st.st_ino);
		d->stdio_mode[fd] = st.st_mode;
		bool seen = false;
		for (int j = 0; j < fd; j++)
			seen = seen || (d->stdio[j] && strcmp(d->stdio[j], d->stdio[fd]) == 0);
		if (!seen)
			criu_local_add_external(s->opts, d->stdio[fd]);
	}
	return 0;
}

/* ---- checkpoint ---- */

static int check_dirty_tracking(criu_session *s, tern_error **err)
{
	struct criu_feature_check f = {.mem_track = true};

	if (criu_local_feature_check(s->opts, &f, sizeof(f)) < 0 || !f.mem_track)
		return tern_error_make_quiet(
		    err, ENOTSUP,
		    "--pre-dump: this kernel lacks memory dirty tracking (soft-dirty page bits, "
		    "CONFIG_MEM_SOFT_DIRTY), which CRIU needs to pre-dump and to write "
		    "incremental images; checkpoint without --pre-dump");
	return 0;
}

/* criu creates its images (and logs) 0644 less its umask, which it has
 * from us: with 077 they are 0600 from the start, no window in which
 * another user reads the container's memory (a chmod after the dump would
 * leave one). The dump creates nothing in the container whose mode the
 * umask would change; a restore does (ghost files, sockets), so only the
 * dump runs so. */
static int dump_private(criu_session *s, bool pre_dump)
{
	mode_t old = umask(077);
	int ret = pre_dump ? criu_local_pre_dump(s->opts) : criu_local_dump(s->opts);

	umask(old);
	return ret;
}

static int make_image_dir(const char *path, bool *created, tern_error **err)
{
	struct stat st;

	*created = false;
	if (stat(path, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			return tern_error_make(err, ENOTDIR, "--image-path `%s`", path);
		return 0;
	}
	if (mkdir(path, 0700) < 0)
		return tern_error_make(err, errno, "--image-path `%s`", path);
	*created = true;
	return 0;
}

static int copy_file_into(int dirfd, const char *name, const char *src, tern_error **err)
{
	cleanup_free char *data = NULL;
	size_t len;
	int ret = tern_read_file(src, &data, &len, 0, err);

	if (ret < 0)
		return ret;
	cleanup_close int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || tern_write_all(fd, data, len) < 0)
		return tern_error_make(err, errno, "write %s", name);
	return 0;
}

static int prepare_dump(criu_session *s, const oci_state *st, const oci_config *config,
			const tern_ckpt_opts *o, tern_container_dir *dir, tern_error **err)
{
	descriptor d = {.id = tern_xstrdup(st->id)};
	cleanup_free char *freezer = NULL;
	int ret;

	criu_local_set_pid(s->opts, st->pid);
	criu_local_set_root(s->opts, st->rootfs);
	criu_local_set_leave_running(s->opts, o->leave_running || o->pre_dump);
	if (freezer_dir(&st->cgroup_paths, &freezer))
		criu_local_set_freeze_cgroup(s->opts, freezer);
	/* CRIU skips the pages unchanged since the parent only when it
	 * tracks memory (soft-dirty bits) in both dumps */
	if (o->pre_dump || o->parent_path || o->track_mem)
		criu_local_set_track_mem(s->opts, true);
	if (o->parent_path)
		criu_local_set_parent_images(s->opts, (char *)o->parent_path);
	if (o->page_server) {
		cleanup_free char *addr = tern_xstrdup(o->page_server);
		char *colon = strrchr(addr, ':');
		if (colon == NULL || colon == addr || !colon[1])
			return tern_error_make_quiet(
			    err, EINVAL, "--page-server `%s`: expected IP:PORT", o->page_server);
		*colon = '\0';
		char *end;
		errno = 0;
		long port = strtol(colon + 1, &end, 10);
		if (errno || *end || port < 1 || port > 65535)
			return tern_error_make_quiet(
			    err, EINVAL, "--page-server `%s`: the port is not 1-65535", o->page_server);
		criu_local_set_page_server_address_port(s->opts, addr, (int)port);
	}
	/* bind mounts from outside the rootfs are not the container's to
	 * dump: CRIU records them by mount point, restore binds the new
	 * config's source there. The mount point is the destination with
	 * the image's symlinks resolved, where create mounted it (runc
	 * resolves it the same way, securejoin); the destination as it is
	 * when the container has a mount there (a symlink the container
	 * made since cannot move the key) */
	for (size_t i = 0; i < config->mounts_len; i++) {
		const oci_mount *m = &config->mounts[i];
		if (!tern_mount_is_bind(m))
			continue;
		char *mp = tern_mount_at(st->pid, m->destination)
			       ? tern_xstrdup(m->destination)
			       : tern_mount_dest_resolved(st->rootfs, m->destination);
		criu_local_add_ext_mount(s->opts, mp, mp);
		d.ext_mounts = tern_strv_add(d.ext_mounts, mp);
	}
	const oci_namespace *net = config_ns(config, OCI_NS_NETWORK);
	if (net && net->path) {
		cleanup_free char *nspath = tern_strdup_printf("/proc/%d/ns/net", st->pid);
		struct stat nst;
		if (stat(nspath, &nst) < 0) {
			descriptor_clear(&d);
			return tern_error_make(err, errno, "%s", nspath);
		}
		cleanup_free char *ext =
		    tern_strdup_printf("net[%lu]:%s", (unsigned long)nst.st_ino, NETNS_KEY);
		criu_local_add_external(s->opts, ext);
		d.netns_external = true;
	} else if (net) {
		cleanup_free char *why = NULL;
		if (o->netns_out ||
		    (o->netns_fresh_if_plain && !o->tcp_established &&
		     tern_netns_is_plain(config, &st->cgroup_paths, st->pid, dir->dir, &why))) {
			cleanup_free char *nspath = tern_strdup_printf("/proc/%d/ns/net", st->pid);
			struct stat nst;
			if (stat(nspath, &nst) < 0) {
				descriptor_clear(&d);
				return tern_error_make(err, errno, "%s", nspath);
			}
			cleanup_free char *ext =
			    tern_strdup_printf("net[%lu]:%s", (unsigned long)nst.st_ino, NETNS_KEY);
			criu_local_add_external(s->opts, ext);
			network_lock_skip(s->opts);
			d.netns_fresh = true;
		} else {
			if (why)
				tern_debug("the network namespace goes into the images: %s", why);
			/* a veth from the container's own namespace to ours (the
			 * operator's plumbing): restore must be told its outer
			 * name. Not finding them is no reason to refuse a
			 * checkpoint that most likely has none: only such a
			 * restore would fail. */
			tern_error *e = NULL;
			if (tern_veth_pairs(st->pid, &d.veths, &e) < 0) {
				tern_warn("container `%s`: the veths of its network namespace: %s",
					  st->id, e->msg);
				tern_error_free(e);
			}
		}
	}
	ret = external_cgroup_mounts(s, st->pid, &d, err);
	if (ret < 0) {
		descriptor_clear(&d);
		return ret;
	}
	if (config->linux_)
		d.masked = tern_ckpt_masked_empty(st->pid, config->linux_->masked_paths);
	for (char **m = d.masked; m && *m; m++)
		criu_local_add_ext_mount(s->opts, *m, *m);
	for (size_t i = 0; i < config->mounts_len; i++) {
		const oci_mount *cm = &config->mounts[i];
		if (cm->type && strcmp(cm->type, "cgroup") == 0 && cm->destination &&
		    tern_ckpt_tmpfs_tree(st->pid, cm->destination, &d.trees))
			criu_local_add_ext_mount(s->opts, cm->destination, cm->destination);
	}
	cleanup_strv char **tmpfs =
	    tern_ckpt_tmpfs_empty(st->pid, config->mounts, config->mounts_len);
	for (char **m = tmpfs; m && *m; m++)
		if (!strv_has(d.masked, *m)) {
			d.tmpfs = tern_strv_add(d.tmpfs, tern_xstrdup(*m));
			criu_local_add_ext_mount(s->opts, *m, *m);
		}
	ret = tern_ckpt_devbinds_find(st->pid, (const char *const *)d.ext_mounts, &d.devbinds, err);
	if (ret < 0) {
		descriptor_clear(&d);
		return ret;
	}
	for (char **m = d.devbinds; m && *m; m++) {
		cleanup_free char *mp = tern_xstrdup(*m);
		*strchr(mp, ' ') = '\0';
		criu_local_add_ext_mount(s->opts, mp, mp);
	}
	external_stdio(s, st->pid, &d);
	d.terminal = config->process && config->process->terminal;
	if (d.terminal)
		/* the pty master is held outside the container (by whoever got
		 * it from --console-socket): the slave is restored as an
		 * orphan and a new master handed to restore's console socket */
		criu_local_set_orphan_pts_master(s->opts, true);
	ret = tern_ckpt_apply_common(s->opts, o, err);
	if (ret == 0)
		ret = descriptor_write(s->images_fd, &d, err);
	if (ret == 0) {
		cleanup_free char *cfg = tern_strdup_printf("%s/%s", dir->dir, TERN_CONFIG_COPY);
		ret = copy_file_into(s->images_fd, TERN_CKPT_CONFIG, cfg, err);
	}
	descriptor_clear(&d);
	return ret;
}

/* --status-fd (-1 once written; libcriu's notify callback has no user
 * argument) */
static int dump_status_fd = -1;

static void signal_status_fd(void)
{
	char zero = 0;

	if (dump_status_fd < 0)
		return;
	if (write(dump_status_fd, &zero, 1) < 0)
		tern_debug("--status-fd %d: %s", dump_status_fd, strerror(errno));
	close(dump_status_fd);
	dump_status_fd = -1;
}

/* A lazy dump does not return until the restoring side has fetched every
 * page; whoever waits on --status-fd learns when the images (all but the
 * memory) are written and the page server listens, so it can start the
 * restore. */
/* --leave-frozen: the cgroup to freeze while criu still holds the tasks
 * (NULL otherwise); whether that failed. */
static const oci_map *dump_freeze_paths;
static bool dump_freeze_failed;

/* While criu holds the dumped tasks (ptrace-stopped, which the cgroup v2
 * freezer counts as frozen), freeze their cgroup: when criu lets them go
 * they stay frozen, exactly as dumped. Done at "status-ready" for a lazy
 * dump (whose "post-dump" comes only after the last page), at "post-dump"
 * otherwise. */
static void freeze_dumped(void)
{
	tern_error *e = NULL;

	if (dump_freeze_paths == NULL)
		return;
	if (tern_cgroup_freeze(dump_freeze_paths, true, &e) < 0) {
		tern_warn("freeze after the dump: %s", e->msg);
		tern_error_free(e);
		dump_freeze_failed = true;
	}
	dump_freeze_paths = NULL;
}

/* keep_net_locked: the container's init (0 otherwise, or once done) */
static pid_t dump_lock_pid;

/* Before criu unlocks the network at the end of the dump, and at the same
 * points as freeze_dumped for the same reason. */
static void lock_dumped_net(void)
{
	tern_error *e = NULL;

	if (dump_lock_pid == 0)
		return;
	if (tern_netns_lock(dump_lock_pid, &e) < 0) {
		tern_warn("%s", e->msg);
		tern_error_free(e);
		dump_freeze_failed = true;
	}
	dump_lock_pid = 0;
}

static int dump_notify(char *action, criu_notify_arg_t na)
{
	(void)na;
	if (strcmp(action, "status-ready") == 0) {
		lock_dumped_net();
		freeze_dumped();
		signal_status_fd();
	} else if (strcmp(action, "post-dump") == 0) {
		lock_dumped_net();
		freeze_dumped();
	}
	/* a non-zero answer makes criu fail the dump and let the tasks run */
	return dump_freeze_failed ? -1 : 0;
}

/* criu 4.2's lazy page server sizes a pipe to 1024 pages (4 MiB) and does
 * not check that it got it: without CAP_SYS_RESOURCE the kernel caps
 * pipes at fs.pipe-max-size (1 MiB by default), and the dump then fails
 * only when the first page is asked for ("page-pipe: splice: Bad file
 * descriptor"), with the restore already under way. */
#define CRIU_LAZY_PIPE_BYTES (4L << 20)

static bool has_effective_cap(cap_value_t cap)
{
	cap_t caps = cap_get_proc();
	cap_flag_value_t v = CAP_CLEAR;

	if (caps == NULL)
		return false;
	cap_get_flag(caps, cap, CAP_EFFECTIVE, &v);
	cap_free(caps);
	return v == CAP_SET;
}

static int check_lazy_dump(const tern_ckpt_opts *o, tern_error **err)
{
	if (o->page_server == NULL)
		return tern_error_make_quiet(err, EINVAL,
					     "--lazy-pages needs --page-server IP:PORT: the "
					     "restoring side fetches the memory from there");
	if (o->pre_dump)
		return tern_error_make_quiet(err, EINVAL,
					     "--lazy-pages cannot be combined with --pre-dump");
	return tern_criu_lazy_pipes_check(err);
}

int tern_criu_lazy_pipes_check(tern_error **err)
{
	cleanup_free char *data = NULL;
	size_t len;

	if (has_effective_cap(CAP_SYS_RESOURCE))
		return 0;
	if (tern_read_file("/proc/sys/fs/pipe-max-size", &data, &len, 64, NULL) < 0)
		return 0; /* let criu try */
	long max = strtol(data, NULL, 10);
	if (max >= CRIU_LAZY_PIPE_BYTES)
		return 0;
	return tern_error_make_quiet(
	    err, EPERM,
	    "--lazy-pages: criu's page server needs 4 MiB pipes, but fs.pipe-max-size is "
	    "%ld bytes and tern runs without CAP_SYS_RESOURCE to exceed it; raise it "
	    "(sysctl fs.pipe-max-size=%ld) or run with CAP_SYS_RESOURCE",
	    max, CRIU_LAZY_PIPE_BYTES);
}

/* criu waits for a v1 freezer in 100 ms steps, and a cgroup is hardly
 * ever FROZEN at its first look, so every dump it freezes lasts 100 ms
 * longer than it needs. Frozen here first (tern's freeze looks every
 * millisecond), criu dumps the cgroup as it finds it and leaves it frozen:
 * *thaw says to thaw it after the dump. Not when it is frozen already (a
 * paused container, or tern snapshot's freeze: they stay as they were),
 * stays frozen (--leave-frozen), or the dump is lazy (criu holds the
 * tasks until the restore has every page; it freezes them itself). v2:
 * criu stops the tasks itself (see snapshot.c's take_frozen). */
static int freeze_before_dump(const oci_state *st, const tern_ckpt_opts *o, bool *thaw,
			      tern_error **err)
{
	cleanup_free char *freezer = NULL;

	*thaw = false;
	if (o->lazy_pages || o->leave_frozen || !freezer_dir(&st->cgroup_paths, &freezer) ||
	    tern_cgroup_is_frozen(&st->cgroup_paths))
		return 0;
	int ret = tern_cgroup_freeze(&st->cgroup_paths, true, err);
	if (ret < 0)
		return tern_error_wrap(err, "checkpoint: freeze `%s`", st->id);
	*thaw = true;
	return 0;
}

/* After a dump that stopped the container, criu has killed its frozen
 * tasks, which die when thawed: wait for the init to be gone, so that the
 * container reads stopped once checkpoint returns. */
static void thaw_after_dump(const oci_state *st, const tern_ckpt_opts *o, bool dumped)
{
	tern_error *e = NULL;

	if (tern_cgroup_freeze(&st->cgroup_paths, false, &e) < 0) {
		tern_warn("thaw `%s` after the dump: %s", st->id, e->msg);
		tern_error_free(e);
		return;
	}
	if (!dumped || o->leave_running || o->pre_dump)
		return;
	cleanup_close int pidfd = (int)syscall(SYS_pidfd_open, st->pid, 0);
	struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
	if (pidfd >= 0 && poll(&pfd, 1, 5000) == 0)
		tern_warn("container `%s`: its init %d is still there 5 s after the dump", st->id,
			  (int)st->pid);
}

int tern_container_checkpoint(const tern_runtime *rt, const char *criu, const char *id,
			      const tern_ckpt_opts *o, tern_error **err)
{
	cleanup_state_dir tern_container_dir *dir = NULL;
	tern_container_dir *dir_used;
	criu_session s = {.images_fd = -1, .work_fd = -1};
	const char *images = o->image_path ? o->image_path : "checkpoint";
	oci_state *st = NULL;
	oci_config *config = NULL;
	cleanup_free char *v1_freezer = NULL; /* (before the first goto out) */
	bool created_images = false, thaw_after = false;
	int ret;

	/* (tern snapshot holds the lock already) */
	ret = o->into_dir ? tern_container_read(o->into_dir, &st, &config, err)
			  : tern_container_load(rt, id, &dir, &st, &config, err);
	if (ret < 0)
		return ret;
	dir_used = o->into_dir ? o->into_dir : dir;
	tern_fault_point("checkpoint:state-loaded");
	if (strcmp(st->status, "running") != 0 && strcmp(st->status, "paused") != 0) {
		ret = tern_error_make_quiet(
		    err, EINVAL, "cannot checkpoint container `%s`: it is %s, not running", id,
		    st->status);
		goto out;
	}
	/* criu dumps the cgroups too: it must see them */
	if (tern_cgroup_require_mounts(&st->cgroup_paths, err) < 0) {
		ret = tern_error_wrap(err, "cannot checkpoint container `%s`", id);
		goto out;
	}
	/* criu dumps a v1 cgroup frozen as it is; without one it stops the
	 * tasks itself, and tasks the v2 freezer holds never stop for it (such
	 * a checkpoint had not returned after 5 minutes in the v2 guest) */
	if (strcmp(st->status, "paused") == 0 && !freezer_dir(&st->cgroup_paths, &v1_freezer)) {
		ret = tern_error_make_quiet(
		    err, EINVAL,
		    "cannot checkpoint container `%s`: it is paused, and criu cannot dump "
		    "processes the cgroup v2 freezer holds; resume it first",
		    id);
		goto out;
	}
	if (config == NULL) {
		ret = tern_error_make_quiet(err, EINVAL,
					    "cannot checkpoint container `%s`: its config copy in "
					    "`%s` is unreadable",
					    id, dir_used->dir);
		goto out;
	}
	/* CRIU would have to dump the moved devices with the namespace and
	 * make them anew (a veth, not a physical device), and the namespace
	 * the dump ends takes them along: virtual ones destroyed, physical
	 * ones back to the host under their container names. */
	if (tern_netdev_in_own_netns(config)) {
		ret = tern_error_make_quiet(
		    err, ENOTSUP,
		    "cannot checkpoint container `%s`: linux.netDevices moved host devices into "
		    "its own network namespace, which CRIU cannot carry them in; a container "
		    "keeps its devices across a checkpoint only in a network namespace joined "
		    "by path",
		    id);
		goto out;
	}
	if (o->lazy_pages) {
		ret = check_lazy_dump(o, err);
		if (ret < 0)
			goto out;
	}
	if (o->work_path && tern_mkdir_p(o->work_path, 0700, err) < 0) {
		ret = tern_error_wrap(err, "--work-path");
		goto out;
	}
	/* a checkpoint of this container killed half-way left its images */
	tern_state_remove_partial_images(dir_used);
	ret = make_image_dir(images, &created_images, err);
	if (ret < 0)
		goto out;
	if (created_images) {
		ret = tern_state_mark_partial_images(dir_used, images, err);
		if (ret < 0) {
			tern_remove_tree(images);
			goto out;
		}
	}
	tern_fault_point("checkpoint:image-dir-made");
	ret = session_open(&s, criu, images, o->work_path,
			   o->pre_dump ? "pre-dump.log" : "dump.log", o->criu_checked, err);
	if (ret < 0)
		goto out;
	if (o->pre_dump && !o->criu_checked) {
		ret = check_dirty_tracking(&s, err);
		if (ret < 0)
			goto out;
	}
	ret = prepare_dump(&s, st, config, o, dir_used, err);
	if (ret < 0)
		goto out;
	tern_fault_point("checkpoint:dump-prepared");
	dump_status_fd = o->status_fd;
	dump_freeze_paths = o->leave_frozen && !o->pre_dump ? &st->cgroup_paths : NULL;
	dump_freeze_failed = false;
	{
		const oci_namespace *net = config_ns(config, OCI_NS_NETWORK);
		dump_lock_pid =
		    o->keep_net_locked && o->leave_running && !o->pre_dump && net && !net->path
			? st->pid
			: 0;
	}
	if (o->lazy_pages || dump_freeze_paths || dump_lock_pid)
		criu_local_set_notify_cb(s.opts, dump_notify);
	ret = freeze_before_dump(st, o, &thaw_after, err);
	if (ret < 0)
		goto out;
	tern_fault_point("checkpoint:frozen");
	/* a hung criu must not hang tern; a lazy dump lasts as long as the
	 * restore takes its pages, which its caller bounds */
	tern_criu_deadline dl = {.pid = 0};
	int bound = o->criu_timeout_ms > 0 ? o->criu_timeout_ms : tern_criu_timeout_ms();
	if (!o->lazy_pages)
		tern_criu_deadline_start(&dl, bound);
	ret = dump_private(&s, o->pre_dump);
	bool killed = tern_criu_deadline_stop(&dl);
	if (thaw_after)
		thaw_after_dump(st, o, ret == 0);
	if (ret < 0 && killed) {
		ret =
		    tern_error_make_quiet(err, ETIMEDOUT,
					  "checkpoint of `%s`: criu %s did not finish within %d s: "
					  "killed it; `%s` %s",
					  id, o->pre_dump ? "pre-dump" : "dump", bound / 1000, id,
					  thaw_after ? "runs on" : "is left as it was");
		goto out;
	}
	if (ret < 0) {
		/* the image directory tern made goes; the log stays with the
		 * container's state (delete removes it) */
		cleanup_free char *why =
		    log_tail(&s, created_images && !o->work_path ? dir_used->dir : NULL);
		ret =
		    tern_error_make_quiet(err, ECANCELED, "checkpoint of `%s`: criu %s failed: %s",
					  id, o->pre_dump ? "pre-dump" : "dump", why);
		goto out;
	}
	/* whole: from now on they are the caller's */
	if (created_images)
		tern_state_unmark_partial_images(dir_used);
	tern_fault_point("checkpoint:dumped");
	/* runc writes a byte when the images are complete (with lazy pages
	 * it was written when the page server came up) */
	signal_status_fd();
out:
	if (ret < 0 && created_images) {
		tern_remove_tree(images);
		tern_state_unmark_partial_images(dir_used);
	}
	session_clear(&s);
	oci_state_free(st);
	oci_config_free(config);
	return ret;
}

/* ---- restore ---- */

/* libcriu's notify callback has no user argument */
static struct {
	const oci_config *config;
	oci_state *state;
	tern_error *hook_err;
	const oci_map *freeze_paths; /* freeze_at_resume: the cgroup to freeze */
	bool frozen;
	tern_container_dir *dir; /* where the state goes once the pid is known */
} notify_ctx;

/* Until the lazy-pages daemon says it listens (a byte on its status fd),
 * at most 10 s; false if it never does (it died: EOF). */
static bool lazy_daemon_ready(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char b;
	int r;

	do
		r = poll(&p, 1, 10000);
	while (r < 0 && errno == EINTR);
	return r > 0 && read(fd, &b, 1) == 1;
}

/* runc runs the prestart and createRuntime hooks when CRIU has set up the
 * namespaces of the restored tree, before its processes resume: we do
 * the same, with the new config's hooks. */
static int restore_notify(char *action, criu_notify_arg_t na)
{
	const oci_hooks *h = notify_ctx.config->hooks;

#ifdef TERN_FAULT_INJECTION
	/* restore dies while criu waits for the answer to a notification */
	char point[64];
	snprintf(point, sizeof(point), "restore:criu-%s", action);
	tern_fault_point(point);
#endif

	/* the tasks wait at their last sigreturn under criu's ptrace: frozen
	 * now, they leave criu frozen (criu's own pre-resume script slot) */
	if (strcmp(action, "pre-resume") == 0 && notify_ctx.freeze_paths) {
		if (tern_cgroup_freeze(notify_ctx.freeze_paths, true, &notify_ctx.hook_err) < 0)
			return -1;
		notify_ctx.frozen = true;
		return 0;
	}
	if (strcmp(action, "setup-namespaces") != 0)
		return 0;
	notify_ctx.state->pid = criu_notify_pid(na);
	notify_ctx.state->status = "creating";
	/* The tree exists from here on, and criu may resume it even if this
	 * tern dies: recorded now, `state` can tell it runs and `delete`
	 * finds it. */
	notify_ctx.state->pid_start_time = tern_process_start_time(notify_ctx.state->pid);
	if (tern_state_write(notify_ctx.dir, notify_ctx.state, &notify_ctx.hook_err) < 0)
		return -1;
	tern_fault_point("restore:state-pid-written");
	if (h == NULL)
		return 0;
	cleanup_free char *json = NULL;
	if (oci_state_to_json(notify_ctx.state, OCI_STATE_HOOK, &json, NULL) < 0)
		return -1;
	if (tern_hooks_run(&h->prestart, "prestart", json, &notify_ctx.hook_err) < 0 ||
	    tern_hooks_run(&h->create_runtime, "createRuntime", json, &notify_ctx.hook_err) < 0)
		return -1;
	return 0;
}

/* The config's bind at mount point `mp`: its destination, or the
 * destination resolved inside the new rootfs (a symlink in the image, see
 * prepare_dump) */
static const oci_mount *find_bind(const oci_config *c, const char *rootfs, const char *mp)
{
	for (size_t i = 0; i < c->mounts_len; i++)
		if (tern_mount_is_bind(&c->mounts[i]) && strcmp(c->mounts[i].destination, mp) == 0)
			return &c->mounts[i];
	for (size_t i = 0; i < c->mounts_len; i++) {
		if (!tern_mount_is_bind(&c->mounts[i]))
			continue;
		cleanup_free char *r = tern_mount_dest_resolved(rootfs, c->mounts[i].destination);
		if (strcmp(r, mp) == 0)
			return &c->mounts[i];
	}
	return NULL;
}

typedef struct {
	tern_container c;
	descriptor d;
	criu_session s;
	const tern_ckpt_opts *o;
	/* o->into_dir opened anew in restore's mount namespace (the lock
	 * stays with the caller's fd) */
	tern_container_dir *into;
	int netns_fd;
	bool in_scope; /* tern itself is in the container's systemd scope */
	/* the tmpfs made for criu in the state directory (in our namespace):
	 * their directories' names, unmounted and removed after the restore */
	char **made;
} restore_ctx;

static bool config_has_cgroup_mount(const oci_config *c, const char *dest)
{
	for (size_t i = 0; c && i < c->mounts_len; i++)
		if (c->mounts[i].type && strcmp(c->mounts[i].type, "cgroup") == 0 &&
		    c->mounts[i].destination && strcmp(c->mounts[i].destination, dest) == 0)
			return true;
	return false;
}

static int restore_mounts(restore_ctx *r, tern_error **err)
{
	for (char **m = r->d.ext_mounts; m && *m; m++) {
		const oci_mount *bind = find_bind(r->c.config, r->c.rootfs, *m);
		if (bind == NULL || bind->source == NULL)
			return tern_error_make_quiet(
			    err, EINVAL,
			    "mounts: the checkpoint has a bind mount at `%s`, the new "
			    "config.json has none there",
			    *m);
		cleanup_free char *src =
		    bind->source[0] == '/' ? tern_xstrdup(bind->source)
					   : tern_strdup_printf("%s/%s", r->c.bundle, bind->source);
		if (access(src, F_OK) < 0)
			return tern_error_make(err, errno, "mounts: bind source `%s` for `%s`", src,
					       *m);
		criu_local_add_ext_mount(r->s.opts, *m, src);
	}
	for (char **m = r->d.cg_mounts; m && *m; m++) {
		cleanup_free char *key = tern_xstrdup(*m);
		char *host = strchr(key, ' ');
		*host++ = '\0';
		const char *cg = NULL;
		for (size_t i = 0; i < r->c.cgroup_paths.len; i++)
			if (strcmp(r->c.cgroup_paths.items[i].key, host) == 0)
				cg = r->c.cgroup_paths.items[i].value;
		if (cg == NULL)
			return tern_error_make_quiet(
			    err, ENOENT,
			    "the checkpoint has a cgroup mount of the "
			    "hierarchy `%s`, which this host does not have",
			    host);
		cleanup_free char *src = tern_strdup_printf("%s%s", host, cg);
		criu_local_add_ext_mount(r->s.opts, key, src);
	}
	for (char **m = r->d.devbinds; m && *m; m++) {
		cleanup_free char *mp = NULL, *src = NULL;
		int ret = tern_ckpt_devbind_source(*m, r->c.config, &mp, &src, err);
		if (ret < 0)
			return ret;
		criu_local_add_ext_mount(r->s.opts, mp, src);
	}
	if (r->d.masked) {
		cleanup_free char *src = NULL;
		int ret = tern_ckpt_masked_source(r->c.dir->dirfd, r->c.dir->dir,
						  TERN_CKPT_MASKED_DIR, &src, err);
		if (ret < 0)
			return ret;
		r->made = tern_strv_add(r->made, tern_xstrdup(TERN_CKPT_MASKED_DIR));
		for (char **m = r->d.masked; *m; m++)
			criu_local_add_ext_mount(r->s.opts, *m, src);
	}
	for (char **l = r->d.trees; l && *l; l++) {
		char dest[4096];
		if (strncmp(*l, "tmpfs-tree ", 11) != 0 || sscanf(*l + 11, "%4095s", dest) != 1)
			continue;
		if (!config_has_cgroup_mount(r->c.config, dest))
			return tern_error_make_quiet(err, EINVAL,
						     "the checkpoint's cgroup tmpfs on `%s` has no "
						     "cgroup mount in config.json",
						     dest);
		cleanup_free char *name =
		    tern_strdup_printf(TERN_CKPT_TREE_PREFIX "%zu", (size_t)(l - r->d.trees));
		cleanup_free char *src = NULL;
		int ret = tern_ckpt_tmpfs_tree_source(r->c.dir->dirfd, r->c.dir->dir, name, dest,
						      r->d.trees, &src, err);
		if (ret < 0)
			return ret;
		r->made = tern_strv_add(r->made, tern_xstrdup(name));
		criu_local_add_ext_mount(r->s.opts, dest, src);
	}
	for (char **m = r->d.tmpfs; m && *m; m++) {
		cleanup_free char *name =
		    tern_strdup_printf(TERN_CKPT_TMPFS_PREFIX "%zu", (size_t)(m - r->d.tmpfs));
		cleanup_free char *src = NULL;
		int ret = tern_ckpt_tmpfs_source(r->c.dir->dirfd, r->c.dir->dir, name, r->c.config,
						 *m, &src, err);
		if (ret < 0)
			return ret;
		r->made = tern_strv_add(r->made, tern_xstrdup(name));
		criu_local_add_ext_mount(r->s.opts, *m, src);
	}
	/* CRIU mounts the restored tree below --root, which must be a mount
	 * point (we are in a mount namespace of our own, see
	 * tern_container_restore) */
	if (mount(r->c.rootfs, r->c.rootfs, NULL, MS_BIND | MS_REC, NULL) < 0)
		return tern_error_make(err, errno, "bind the rootfs `%s` onto itself", r->c.rootfs);
	criu_local_set_root(r->s.opts, r->c.rootfs);
	return 0;
}

/* `pid` and its descendants (read from /proc/PID/task/TID/children) into
 * the cgroup `paths`, best effort. */
static void enter_tree(const oci_map *paths, pid_t pid, int depth)
{
	cleanup_free char *tasks = tern_strdup_printf("/proc/%d/task", pid);
	DIR *d;

	tern_cgroup_enter(paths, pid, NULL);
	if (depth > 64 || (d = opendir(tasks)) == NULL)
		return;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (e->d_name[0] == '.')
			continue;
		cleanup_free char *f = tern_strdup_printf("%s/%s/children", tasks, e->d_name);
		cleanup_free char *kids = NULL;
		if (tern_read_file(f, &kids, NULL, 0, NULL) < 0)
			continue;
		char *save = NULL;
		for (char *t = strtok_r(kids, " \n", &save); t; t = strtok_r(NULL, " \n", &save))
			enter_tree(paths, (pid_t)atoi(t), depth + 1);
	}
	closedir(d);
}

static int restore_cgroup_roots(restore_ctx *r)
{
	const oci_map *p = &r->c.cgroup_paths;
	bool same = true;

	for (size_t i = 1; i < p->len; i++)
		if (strcmp(p->items[i].value, p->items[0].value) != 0)
			same = false;
	if (p->len && same)
		return criu_local_add_cg_root(r->s.opts, NULL, p->items[0].value);
	for (size_t i = 0; i < p->len; i++) {
		const char *b = strrchr(p->items[i].key, '/');
		b = b ? b + 1 : p->items[i].key;
		if (strcmp(b, "unified") == 0)
			continue;
		cleanup_free char *ctrl =
		    strcmp(b, "systemd") == 0 ? tern_xstrdup("name=systemd") : tern_xstrdup(b);
		criu_local_add_cg_root(r->s.opts, ctrl, p->items[i].value);
	}
	return 0;
}

static int load_new_bundle(restore_ctx *r, const char *images, tern_error **err)
{
	cleanup_free char *config_path = NULL;
	char *msg = NULL;
	int ret;

	r->c.bundle = tern_absolute_path(r->c.opts->bundle ? r->c.opts->bundle : ".");
	config_path = r->o->config_path ? tern_xstrdup(r->o->config_path)
					: tern_strdup_printf("%s/config.json", r->c.bundle);
	ret = oci_config_parse_file(config_path, &r->c.config, &msg);
	if (ret < 0) {
		tern_error_make_literal(err, -ret, msg ? msg : "config.json: invalid");
		free(msg);
		return ret;
	}
	/* criu knows nothing of resctrl, and tern does not yet put the
	 * restored tree in a group: refused rather than silently left out */
	if (r->c.config->linux_ && r->c.config->linux_->intel_rdt)
		return tern_error_make_quiet(err, ENOTSUP,
					     "linux.intelRdt: restore does not put the restored "
					     "processes in a resctrl group (not implemented); "
					     "remove linux.intelRdt from the config to restore");
	cleanup_free char *joined =
	    r->c.config->root->path[0] == '/'
		? tern_xstrdup(r->c.config->root->path)
		: tern_strdup_printf("%s/%s", r->c.bundle, r->c.config->root->path);
	r->c.rootfs = realpath(joined, NULL);
	if (r->c.rootfs == NULL)
		return tern_error_make(err, errno, "root.path: rootfs `%s`", joined);
	if (r->d.terminal && r->c.opts->console_socket == NULL)
		return tern_error_make_quiet(err, EINVAL,
					     "the checkpoint in `%s` has a terminal: restore needs "
					     "--console-socket to send the new pty master to",
					     images);
	/* The devices were in the checkpointed namespace, and went with it
	 * (see the dump's refusal); a namespace joined by path still has
	 * them, and nothing is moved. */
	if (tern_netdev_in_own_netns(r->c.config))
		return tern_error_make_quiet(
		    err, ENOTSUP,
		    "linux.netDevices: restore does not move host devices into a network "
		    "namespace of the container's own; a container keeps its devices across "
		    "a checkpoint only in a network namespace joined by path");
	if (r->o->join_netns && (r->d.netns_external || r->d.netns_fresh)) {
		r->netns_fd = fcntl(r->o->netns_fd, F_DUPFD_CLOEXEC, 3);
		if (r->netns_fd < 0)
			return tern_error_make(err, errno, "the network namespace to restore into");
	} else if (r->d.netns_external) {
		const oci_namespace *net = config_ns(r->c.config, OCI_NS_NETWORK);
		if (net == NULL || net->path == NULL)
			return tern_error_make_quiet(
			    err, EINVAL,
			    "linux.namespaces: the checkpointed container joined a network "
			    "namespace by path; the new config.json must name one too");
		r->netns_fd = open(net->path, O_RDONLY | O_CLOEXEC);
		if (r->netns_fd < 0)
			return tern_error_make(err, errno, "linux.namespaces: network path `%s`",
					       net->path);
	} else if (r->d.netns_fresh) {
		/* left out of the images as it was as good as new: a new one,
		 * or the one the new config joins */
		const oci_namespace *net = config_ns(r->c.config, OCI_NS_NETWORK);
		if (net == NULL)
			return tern_error_make_quiet(
			    err, EINVAL,
			    "linux.namespaces: the checkpointed container had a network "
			    "namespace of its own; the new config.json has none");
		if (net->path) {
			r->netns_fd = open(net->path, O_RDONLY | O_CLOEXEC);
			if (r->netns_fd < 0)
				return tern_error_make(
				    err, errno, "linux.namespaces: network path `%s`", net->path);
		} else {
			int ret = tern_netns_new(r->c.config, &r->netns_fd, err);
			if (ret < 0)
				return tern_error_wrap(err, "linux.namespaces: network");
		}
	}
	if (r->c.rt->systemd_cgroup && !tern_systemd_booted())
		return tern_error_make_quiet(
		    err, ENOTSUP,
		    "--systemd-cgroup: systemd is not running as PID 1 on this host, so there "
		    "is no systemd to create the restored container's scope");
	return 0;
}

static int check_images(const char *images, tern_error **err)
{
	struct stat st;
	cleanup_free char *inv = tern_strdup_printf("%s/inventory.img", images);

	if (stat(images, &st) < 0)
		return tern_error_make(err, errno, "--image-path `%s`", images);
	if (!S_ISDIR(st.st_mode))
		return tern_error_make(err, ENOTDIR, "--image-path `%s`", images);
	if (stat(inv, &st) < 0)
		return tern_error_make_quiet(err, ENOENT,
					     "--image-path `%s` holds no checkpoint (no "
					     "inventory.img): No such file or directory",
					     images);
	return 0;
}

static void fill_restored_state(oci_state *s, const restore_ctx *r)
{
	memset(s, 0, sizeof(*s));
	s->oci_version = r->c.config->oci_version;
	s->id = (char *)r->c.id;
	s->status = "running";
	s->pid = r->c.pid;
	s->bundle = r->c.bundle;
	s->annotations = r->c.config->annotations;
	s->rootfs = r->c.rootfs;
	s->created = r->c.created;
	s->owner = "";
	s->cgroup_path = r->c.cgroup_path;
	s->cgroup_paths = r->c.cgroup_paths;
	s->own_cgroup = r->c.own_cgroup;
	s->systemd_cgroup = r->c.rt->systemd_cgroup;
	s->config_path = TERN_CONFIG_COPY;
}

static int send_pty_master(restore_ctx *r, tern_error **err)
{
	int master = criu_get_orphan_pts_master_fd();

	if (master < 0)
		return tern_error_make_quiet(err, EIO, "criu sent no pty master for the terminal");
	fcntl(master, F_SETFD, FD_CLOEXEC);
	int ret = tern_console_send_fd(r->c.console_sock, master, "console", err);
	close(master);
	return ret < 0 ? tern_error_wrap(err, "--console-socket `%s`", r->c.opts->console_socket)
		       : 0;
}

static int reuse_cgroup(restore_ctx *r, tern_error **err)
{
	oci_state *old = NULL;
	int ret = tern_state_read(r->into, &old, err);

	if (ret < 0)
		return ret;
	r->c.cgroup_path = old->cgroup_path ? tern_xstrdup(old->cgroup_path) : NULL;
	ret = oci_map_copy(&r->c.cgroup_paths, &old->cgroup_paths);
	/* (removed by the container's delete, not by a failed restore) */
	r->c.own_cgroup = false;
	oci_state_free(old);
	return ret < 0 ? tern_error_make(err, -ret, "the cgroup of `%s`", r->c.id) : 0;
}

static int do_restore(restore_ctx *r, const char *criu, const char *images, const tern_ckpt_opts *o,
		      tern_error **err)
{
	oci_state s;
	int ret;

	ret = check_images(images, err);
	if (ret < 0)
		return ret;
	ret = descriptor_read(images, &r->d, err);
	if (ret < 0)
		return ret;
	tern_fault_point("restore:images-read");
	ret = load_new_bundle(r, images, err);
	if (ret < 0)
		return ret;
	tern_fault_point("restore:bundle-loaded");
	if (r->c.opts->console_socket) {
		r->c.console_sock = tern_console_socket_connect(r->c.opts->console_socket, err);
		if (r->c.console_sock < 0)
			return tern_error_wrap(err, "--console-socket `%s`",
					       r->c.opts->console_socket);
	}
	if (o->work_path && tern_mkdir_p(o->work_path, 0700, err) < 0)
		return tern_error_wrap(err, "--work-path");
	ret = session_open(&r->s, criu, images, o->work_path, "restore.log", o->criu_checked, err);
	if (ret < 0)
		return ret;
	ret = tern_ckpt_apply_common(r->s.opts, o, err);
	if (ret < 0)
		return ret;
	/* a daemon started just before us may not have made its socket yet */
	if (o->lazy_pages && !o->lazy_ready_wait) {
		ret = tern_lazy_socket_wait(r->s.work_fd, r->s.work_dir, images, err);
		if (ret < 0)
			return ret;
	}
	criu_local_set_tcp_close(r->s.opts, o->tcp_close);
	if (o->parent_path)
		criu_local_set_parent_images(r->s.opts, (char *)o->parent_path);
	if (o->lsm_profile)
		criu_local_set_lsm_profile(r->s.opts, (char *)o->lsm_profile);
	if (o->lsm_mount_context)
		criu_local_set_lsm_mount_context(r->s.opts, (char *)o->lsm_mount_context);
	if (r->d.terminal)
		criu_local_set_orphan_pts_master(r->s.opts, true);
	for (int fd = 0; fd < 3; fd++) {
		bool seen = false;
		if (r->d.stdio[fd] == NULL)
			continue;
		for (int j = 0; j < fd; j++)
			seen =
			    seen || (r->d.stdio[j] && strcmp(r->d.stdio[j], r->d.stdio[fd]) == 0);
		if (seen)
			continue;
		if (o->stdio_given && o->stdio_fds[fd] >= 0) {
			fcntl(o->stdio_fds[fd], F_SETFD, 0);
			criu_local_add_inherit_fd(r->s.opts, o->stdio_fds[fd], r->d.stdio[fd]);
		} else {
			criu_local_add_inherit_fd(r->s.opts, fd, r->d.stdio[fd]);
		}
	}
	if (r->netns_fd >= 0) {
		fcntl(r->netns_fd, F_SETFD, 0);
		criu_local_add_inherit_fd(r->s.opts, r->netns_fd, NETNS_KEY);
	}
	if (r->d.netns_fresh && !o->tcp_established)
		network_lock_skip(r->s.opts);
	/* the outer end comes back in this (the restoring tern's) network
	 * namespace under its old name, with no address: see
	 * checkpoint-net.h */
	for (char **m = r->d.veths; m && *m; m++) {
		cleanup_free char *inner = tern_xstrdup(*m);
		char *outer = strchr(inner, ' ');
		*outer++ = '\0';
		cleanup_free char *ext = tern_strdup_printf("veth[%s]:%s", inner, outer);
		criu_local_add_external(r->s.opts, ext);
	}

	if (r->into) {
		r->c.dir = r->into;
	} else {
		ret = tern_state_dir_create(r->c.rt->root, r->c.id, &r->c.dir, err);
		if (ret < 0)
			return ret;
	}
	tern_fault_point("restore:state-dir-made");
	r->c.created = o->created ? tern_xstrdup(o->created) : tern_state_now_rfc3339();
	{
		cleanup_free char *src = o->config_path
					     ? tern_xstrdup(o->config_path)
					     : tern_strdup_printf("%s/config.json", r->c.bundle);
		ret = copy_file_into(r->c.dir->dirfd, TERN_CONFIG_COPY, src, err);
		if (ret < 0)
			return ret;
	}
	tern_fault_point("restore:config-copied");
	/* the cgroup of the *new* config, with its limits, before any
	 * restored process runs; CRIU puts the tree there (cgroup root).
	 * Into a container's own state directory (rollback): its cgroup as
	 * it is, limits changed by `update` included. */
	if (r->into) {
		ret = reuse_cgroup(r, err);
		if (ret < 0)
			return ret;
	} else {
		ret = tern_container_cgroup_resolve(&r->c, err);
		if (ret < 0)
			return ret;
		/* recorded before the cgroup exists, as create does: a
		 * restore killed from here on leaves it to `delete` */
		if (!r->c.rt->systemd_cgroup)
			r->c.own_cgroup = tern_cgroup_missing(&r->c.cgroup_paths);
		fill_restored_state(&s, r);
		s.status = "creating";
		ret = tern_state_write(r->c.dir, &s, err);
		if (ret < 0)
			return ret;
		tern_fault_point("restore:state-creating-written");
		r->c.own_cgroup = false; /* what make creates is ours */
		ret = tern_container_cgroup_make(&r->c, err);
		if (ret < 0)
			return ret;
	}
	tern_fault_point("restore:cgroup-made");
	if (r->c.rt->systemd_cgroup) {
		/* systemd starts a scope only around a process, and the
		 * restored ones do not exist yet: tern stands in for them
		 * (runc hands it criu's pid), criu starts as its child inside
		 * the scope and puts the tree there; tern then leaves */
		r->in_scope = true;
		ret = tern_container_cgroup_join(&r->c, getpid(), err);
		if (ret < 0)
			return ret;
	}
	fill_restored_state(&s, r);
	s.status = "creating";
	ret = tern_state_write(r->c.dir, &s, err);
	if (ret < 0)
		return ret;
	tern_fault_point("restore:state-cgroup-written");
	restore_cgroup_roots(r);
	/* a rootfs that never saw a create (podman's restore --import makes
	 * a fresh one) lacks the mount points CRIU needs */
	ret = tern_restore_make_mountpoints(r->c.rootfs, r->c.bundle, r->c.config, err);
	if (ret < 0)
		return tern_error_wrap(err, "restore of `%s`", r->c.id);
	ret = restore_mounts(r, err);
	if (ret < 0)
		return ret;
	tern_fault_point("restore:mounts-made");

	notify_ctx.config = r->c.config;
	notify_ctx.state = &s;
	notify_ctx.freeze_paths = o->freeze_at_resume ? &r->c.cgroup_paths : NULL;
	notify_ctx.frozen = false;
	notify_ctx.dir = r->c.dir;
	criu_local_set_notify_cb(r->s.opts, restore_notify);
	/* criu connects to the daemon early, before any notification this
	 * side could wait in: wait here, after tern's own preparations */
	if (o->lazy_pages && o->lazy_ready_wait && !lazy_daemon_ready(o->lazy_ready_fd))
		return tern_error_make_quiet(
		    err, EIO,
		    "restore of `%s`: criu lazy-pages did not get ready (it "
		    "exited, or not within 10 s; log: %s/lazy-pages.log)",
		    r->c.id, images);
	/* criu forks the restored processes from its own: they inherit */
	if (o->merge_memory && tern_memory_merge_mark_self(true, err) < 0)
		return tern_error_wrap(err, "restore of `%s`", r->c.id);
	/* a hung criu must not hang tern: past the bound criu and the tree it
	 * was restoring are killed, and the failure below removes the rest */
	tern_criu_deadline dl = {.pid = 0};
	int bound = o->criu_timeout_ms > 0 ? o->criu_timeout_ms : tern_criu_timeout_ms();
	tern_criu_deadline_start(&dl, bound);
	ret = criu_local_restore_child(r->s.opts);
	bool killed = tern_criu_deadline_stop(&dl);
	if (o->merge_memory) {
		tern_error *e = NULL;
		if (tern_memory_merge_mark_self(false, &e) < 0) {
			tern_debug("%s", e->msg);
			tern_error_free(e);
		}
	}
	if (r->in_scope) {
		tern_cgroup_return_self();
		r->in_scope = false;
	}
	s.pid = 0;
	if (killed) {
		/* (it may have returned just as the bound passed: the tree
		 * is killed all the same) */
		if (ret > 0)
			waitpid(ret, NULL, 0);
		return tern_error_make_quiet(err, ETIMEDOUT,
					     "restore of `%s`: criu restore did not finish within %d s: "
					     "killed it and what it had restored",
					     r->c.id, bound / 1000);
	}
	if (ret <= 0) {
		if (notify_ctx.hook_err) {
			tern_error_free(*err);
			*err = steal_pointer(&notify_ctx.hook_err);
			return tern_error_wrap(err, "restore of `%s`", r->c.id);
		}
		cleanup_free char *why = log_tail(&r->s, NULL);
		return tern_error_make_quiet(
		    err, ECANCELED, "restore of `%s`: criu restore failed: %s", r->c.id, why);
	}
	r->c.pid = ret;
	tern_fault_point("restore:criu-restored");
	/* criu only logs a failed pre-resume: the tree may run unfrozen */
	if (o->freeze_at_resume && !notify_ctx.frozen) {
		if (notify_ctx.hook_err) {
			tern_error_free(*err);
			*err = steal_pointer(&notify_ctx.hook_err);
			return tern_error_wrap(err, "restore of `%s`: freezing it", r->c.id);
		}
		return tern_error_make_quiet(err, EIO,
					     "restore of `%s`: criu never said it was about to "
					     "resume the tasks, so they were not frozen",
					     r->c.id);
	}
	/* with --manage-cgroups-mode ignore CRIU leaves the tree where it
	 * was; on a hybrid host it has no cgroup root for the unified
	 * hierarchy and puts the tree in the cgroup the images name there
	 * (the source container's, for a clone): the whole tree goes into the
	 * container's cgroup in every hierarchy */
	enter_tree(&r->c.cgroup_paths, r->c.pid, 0);
	if (r->d.terminal) {
		ret = send_pty_master(r, err);
		if (ret < 0)
			return ret;
	}
	fill_restored_state(&s, r);
	s.pid_start_time = tern_process_start_time(r->c.pid);
	ret = tern_state_write(r->c.dir, &s, err);
	if (ret < 0)
		return ret;
	tern_fault_point("restore:state-running-written");
	if (r->c.opts->pid_file) {
		char buf[32];
		int len = snprintf(buf, sizeof(buf), "%d", r->c.pid);
		ret = tern_write_file(r->c.opts->pid_file, buf, (size_t)len, 0644, err);
		if (ret < 0)
			return tern_error_wrap(err, "--pid-file");
	}
	return 0;
}

static void rollback_restore(restore_ctx *r)
{
	if (r->c.pid > 0) {
		kill(r->c.pid, SIGKILL);
		waitpid(r->c.pid, NULL, 0);
		r->c.pid = 0;
	}
	if (r->in_scope)
		tern_cgroup_return_self();
	if (r->c.own_cgroup)
		tern_cgroup_remove(
		    &r->c.cgroup_paths,
		    r->c.rt->systemd_cgroup ? tern_systemd_state_unit(r->c.cgroup_path) : NULL,
		    NULL);
	if (r->c.dir && r->c.dir != r->into) {
		tern_state_dir_remove(r->c.dir, NULL);
		tern_state_dir_freep(&r->c.dir);
	}
}

int tern_container_restore(const tern_runtime *rt, const char *criu, const char *id,
			   const tern_create_opts *copts, const tern_ckpt_opts *o, int *exit_status,
			   tern_error **err)
{
	restore_ctx r = {
	    .c = {.rt = rt, .opts = copts, .id = id, .console_sock = -1, .console_recv = -1},
	    .s = {.images_fd = -1, .work_fd = -1},
	    .o = o,
	    .netns_fd = -1};
	const char *images = o->image_path ? o->image_path : "checkpoint";
	int ret;

	*exit_status = 0;
	ret = tern_state_check_id(id, err);
	if (ret < 0)
		return ret;
	if (!copts->detach && !copts->no_subreaper)
		prctl(PR_SET_CHILD_SUBREAPER, 1);
	/* Everything restore mounts (the rootfs bind CRIU wants as --root)
	 * goes in a mount namespace of our own, so nothing is left on the host
	 * whatever happens. First of all: a directory opened before would
	 * belong to the old namespace, and CRIU's mounts below it (the cgroup
	 * yard in its work dir) would fail with EINVAL. */
	if (unshare(CLONE_NEWNS) < 0)
		return tern_error_make(err, errno, "unshare the mount namespace for restore");
	/* slave, not private: nothing goes back to the host, yet CRIU can
	 * still copy a shared mount's peer group onto the restored mounts */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return tern_error_make(err, errno, "make / a slave mount for restore");
	if (o->into_dir) {
		r.into = tern_xmalloc0(sizeof(*r.into));
		r.into->root = tern_xstrdup(o->into_dir->root);
		r.into->id = tern_xstrdup(o->into_dir->id);
		r.into->dir = tern_xstrdup(o->into_dir->dir);
		r.into->dirfd = open(r.into->dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
		if (r.into->dirfd < 0) {
			ret = tern_error_make(err, errno, "state directory `%s`", r.into->dir);
			tern_state_dir_free(r.into);
			return ret;
		}
	}
	ret = do_restore(&r, criu, images, o, err);
	/* criu has bound the masked paths' tmpfs and the config's empty ones
	 * into the container (or failed): our mounts of them go, or the state
	 * directory could not be removed */
	for (char **m = r.made; m && *m; m++) {
		cleanup_free char *path = tern_strdup_printf("%s/%s", r.c.dir->dir, *m);
		umount2(path, MNT_DETACH);
		unlinkat(r.c.dir->dirfd, *m, AT_REMOVEDIR);
	}
	tern_strv_freep(&r.made);
	if (ret < 0)
		rollback_restore(&r);
	pid_t pid = r.c.pid;
	session_clear(&r.s);
	descriptor_clear(&r.d);
	if (r.netns_fd >= 0)
		close(r.netns_fd);
	if (r.c.console_sock >= 0)
		close(r.c.console_sock);
	oci_config_free(r.c.config);
	tern_state_dir_free(r.c.dir != r.into ? r.c.dir : NULL);
	tern_state_dir_free(r.into);
	free(r.c.bundle);
	free(r.c.rootfs);
	free(r.c.cgroup_path);
	oci_map_clear(&r.c.cgroup_paths);
	free(r.c.created);
	if (ret < 0 || copts->detach)
		return ret;
	/* foreground: wait as `run` does, then delete */
	tern_forward_signals(pid);
	*exit_status = tern_wait_exit_status(pid);
	tern_forward_signals(0);
	tern_error *derr = NULL;
	if (tern_container_delete(rt, id, true, &derr) < 0) {
		tern_warn("%s", derr->msg);
		tern_error_free(derr);
	}
	return 0;
}
