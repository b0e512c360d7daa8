/* What a checkpoint and a restore both start from: which criu to run,
 * the libcriu session that drives it (the private image and work
 * directories it is handed, the log that explains its failures) and the
 * options both stages take from the command line (cmd-criu-opts.h). Kept
 * apart so that dump and restore open criu the same way. */
#include "checkpoint-internal.h"
#include "criu-rootless.h"
#include "failure-logs.h"
#include "utils.h"

#include <criu/criu.h>
#include <criu/rpc.pb-c.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void set_unprivileged(criu_session *s);

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

/* ---- the session ---- */

void tern_ckpt_session_clear(criu_session *s)
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
 * opening it. With `state_dir`, the logs are copied into its
 * last-failure/ first (the work directory may be about to go: a
 * snapshot's, a migration's) and the copy is the one named. */
char *tern_ckpt_log_tail(const criu_session *s, const char *state_dir, bool work_goes)
{
	cleanup_free char *path = tern_strdup_printf("%s/%s", s->work_dir, s->log_name);
	cleanup_free char *data = NULL;
	size_t len;
	char *out = NULL;
	size_t n = 0;

	if (tern_read_file(path, &data, &len, 64 << 20, NULL) < 0)
		return tern_strdup_printf("(criu left no log at %s)", path);
	char *kept = tern_failure_logs_keep(state_dir, s->work_dir, s->log_name);
	if (kept) {
		free(path);
		path = kept;
	} else if (work_goes) {
		/* no name of a file about to be removed */
		free(path);
		path = tern_strdup_printf("not kept: it was in %s, which goes with the failure",
					  s->work_dir);
	}
	const char *lines[2] = {0};
	for (char *save = NULL, *l = strtok_r(data, "\n", &save); l && n < 2;
	     l = strtok_r(NULL, "\n", &save)) {
		/* criu cannot raise its own RLIMIT_NOFILE without
		 * CAP_SYS_RESOURCE and says so, harmlessly, every time; the
		 * summary lines say nothing of the cause */
		if (strstr(l, "RLIMIT_NOFILE") || strstr(l, "FAILED") || strstr(l, "cgroupd"))
			continue;
		/* iproute2's own complaints while criu restores a network
		 * namespace's addresses (the kernel made lo's already) */
		if (strncmp(l, "Error: ipv4: Address already assigned", 37) == 0 ||
		    strncmp(l, "Error: ipv6: address already assigned", 37) == 0)
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

int tern_ckpt_session_open(criu_session *s, const char *criu, const char *images, const char *work,
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
	if (tern_criu_rootless())
		set_unprivileged(s);
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

/* ---- criu options ---- */

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

bool tern_ckpt_empty_netns(criu_opts *opts)
{
	CriuOpts *rpc = rpc_opts(opts);

	if (rpc == NULL)
		return false;
	rpc->has_empty_ns = true;
	rpc->empty_ns |= CLONE_NEWNET;
	return true;
}

/* Options of criu >= 3.18 that bookworm's libcriu (3.17) has neither a
 * setter nor a field for go as unknown fields of the options message,
 * which protobuf-c packs as they are: `data` is the field's encoding after
 * its tag. libcriu never frees a message's unknown fields: they live in
 * the session. A criu older than a field ignores it. */
static void add_unknown(criu_session *s, uint32_t tag, ProtobufCWireType type, const uint8_t *data,
			size_t len)
{
	CriuOpts *rpc = rpc_opts(s->opts);
	unsigned n;

	if (rpc == NULL)
		return;
	n = rpc->base.n_unknown_fields;
	if (n >= sizeof(s->unknown) / sizeof(s->unknown[0]))
		return;
	s->unknown[n] = (ProtobufCMessageUnknownField){
	    .tag = tag, .wire_type = type, .len = len, .data = (uint8_t *)data};
	rpc->base.unknown_fields = s->unknown;
	rpc->base.n_unknown_fields = n + 1;
}

/* criu's unprivileged mode (RPC field 67 `unprivileged`), which a criu
 * run by a non-root user must be asked for: it then does without what
 * needs more than CAP_CHECKPOINT_RESTORE, or refuses (criu-rootless.h). */
static void set_unprivileged(criu_session *s)
{
	static const uint8_t one = 1;

	add_unknown(s, 67, PROTOBUF_C_WIRE_TYPE_VARINT, &one, 1);
}

/* criu >= 3.19's "skip" network lock method (RPC value 3). bookworm's
 * libcriu refuses values it has no name for, so it is set in the message.
 * With the network namespace left out and no TCP connection kept there
 * is nothing to lock; criu would otherwise run iptables-restore to lock
 * and, on restore, to remove rules it never added. An older criu ignores
 * a value it does not know and locks as before. */
void tern_ckpt_network_lock_skip(criu_opts *opts)
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
		if (!tern_ckpt_empty_netns(opts))
			return tern_error_make_quiet(err, ENOTSUP,
						     "--empty-ns: this libcriu's options are not "
						     "laid out as tern expects");
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

/* ---- shared by dump and restore ---- */

int tern_ckpt_copy_file_into(int dirfd, const char *name, const char *src, tern_error **err)
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
