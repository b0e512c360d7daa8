/* tern migrate-receive, the OFFER: everything the source asks for is
 * checked here before this node changes (its config, the mode, the id,
 * the space the images need), and the ACCEPT says what the target will
 * do. A stage of migrate-target.c's run. */
#include "checkpoint.h"
#include "criu-kdat.h"
#include "criu-lazy-daemon.h"
#include "tcp-sockets.h"
#include "log.h"
#include "migrate.h"
#include "migrate-target-internal.h"
#include "oci-config.h"
#include "rootfs-sync.h"
#include "state.h"
#include "utils.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* what a lazy dump's images need at most besides memory, roughly */
#define LAZY_IMAGE_ALLOWANCE (64ULL << 20)

/* ---- the offer ---- */

/* The source's config is only a convenience for a bundle that has none:
 * a token holder must not be able to run commands on this node or reach
 * its files through it. So it may not bring hooks (they run here, as
 * root), bind mounts of host paths outside the bundle, or namespaces
 * joined by path; a config.json that the node's operator put in the bundle
 * may. */
static bool mount_is_bind(const oci_mount *m)
{
	if (m->type && (strcmp(m->type, "bind") == 0 || strcmp(m->type, "rbind") == 0))
		return true;
	for (char **o = m->options; o && *o; o++)
		if (strcmp(*o, "bind") == 0 || strcmp(*o, "rbind") == 0)
			return true;
	return false;
}

static int check_offered_config(const target *t, const oci_config *c, tern_error **err)
{
	static const char hint[] = "the source's config may not bring it here; put a config.json "
				   "in the bundle to accept it";
	const oci_hooks *h = c->hooks;
	size_t bl = strlen(t->bundle);

	if (h && (h->prestart.len || h->create_runtime.len || h->create_container.len ||
		  h->start_container.len || h->poststart.len || h->poststop.len))
		return tern_error_make_quiet(err, EPERM, "OFFER: config.json: hooks: %s", hint);
	for (size_t i = 0; i < c->mounts_len; i++) {
		const oci_mount *m = &c->mounts[i];
		const char *src = m->source;
		if (!mount_is_bind(m) || src == NULL || src[0] != '/')
			continue;
		if (strncmp(src, t->bundle, bl) == 0 && (src[bl] == '/' || src[bl] == '\0') &&
		    strstr(src + bl, "/..") == NULL)
			continue;
		return tern_error_make_quiet(
		    err, EPERM, "OFFER: config.json: mounts[%zu]: bind of the host's `%s`: %s", i,
		    src, hint);
	}
	for (size_t i = 0; c->linux_ && i < c->linux_->namespaces_len; i++)
		if (c->linux_->namespaces[i].path)
			return tern_error_make_quiet(
			    err, EPERM, "OFFER: config.json: linux.namespaces[%zu]: path `%s`: %s",
			    i, c->linux_->namespaces[i].path, hint);
	return 0;
}

/* t->rootfs: root.path, which must be inside the bundle. */
static int locate_rootfs(target *t, const char *path, const oci_config *config, tern_error **err)
{
	const char *root = config->root && config->root->path ? config->root->path : "rootfs";
	cleanup_free char *joined = NULL;

	if (root[0] == '/' || strstr(root, ".."))
		return tern_error_make_quiet(
		    err, EINVAL,
		    "%s: root.path `%s`: the rootfs must be inside the bundle "
		    "(relative, no `..`)",
		    path, root);
	joined = tern_strdup_printf("%s/%s", t->bundle, root);
	t->rootfs = realpath(joined, NULL);
	if (t->rootfs == NULL)
		return tern_error_make(err, errno, "root.path: rootfs `%s`", joined);
	return 0;
}

static int use_config(target *t, const char *src_config, tern_error **err)
{
	cleanup_free char *path = tern_strdup_printf("%s/config.json", t->bundle);
	oci_config *config = NULL;
	char *msg = NULL;
	int ret;

	if (access(path, F_OK) < 0) {
		/* the source's config (its bind sources may not exist here:
		 * restore says which) */
		ret = tern_write_file(path, src_config, strlen(src_config), 0644, err);
		if (ret < 0)
			return tern_error_wrap(err, "--bundle");
		t->wrote_config = true;
	}
	ret = oci_config_parse_file(path, &config, &msg);
	if (ret < 0) {
		tern_error_make_literal(err, -ret, msg ? msg : "config.json: invalid");
		free(msg);
		return ret;
	}
	/* (a refused config.json is removed with the rest at the end) */
	if (t->wrote_config)
		ret = check_offered_config(t, config, err);
	if (ret == 0)
		ret = locate_rootfs(t, path, config, err);
	oci_config_free(config);
	return ret;
}

static int choose_mode(target *t, const char *asked, bool src_post, bool src_pre, tern_error **err)
{
	tern_mig_mode want;
	const tern_criu_features f = t->features;

	if (asked == NULL || tern_mig_mode_parse(asked, &want) < 0)
		return tern_error_make_quiet(err, EPROTO, "OFFER: unknown mode `%s`",
					     asked ? asked : "");
	switch (want) {
	case TERN_MIG_PRE_COPY:
		/* the source tracks the dirty pages; restoring them needs
		 * nothing of this kernel */
		if (!src_pre)
			return tern_error_make_quiet(
			    err, ENOTSUP,
			    "--mode pre-copy: the source cannot track dirty "
			    "pages");
		t->mode = TERN_MIG_PRE_COPY;
		return 0;
	case TERN_MIG_POST_COPY:
		if (!f.lazy_pages)
			return tern_error_make_quiet(
			    err, ENOTSUP,
			    "--mode post-copy: criu on the target says this kernel cannot restore "
			    "memory lazily (no usable userfaultfd)");
		if (!src_post)
			return tern_error_make_quiet(err, ENOTSUP,
						     "--mode post-copy: the source cannot serve "
						     "memory lazily");
		t->mode = TERN_MIG_POST_COPY;
		return 0;
	case TERN_MIG_AUTO:
		if (src_pre) {
			t->mode = TERN_MIG_PRE_COPY;
		} else if (f.lazy_pages && src_post) {
			t->mode = TERN_MIG_POST_COPY;
		} else {
			t->mode = TERN_MIG_STOP_AND_COPY;
			/* said on both sides: the source has its own words for
			 * its half and prints this one only for ours */
			t->not_post_copy = !src_post
					       ? "the source cannot serve memory lazily"
					       : "criu on the target says this kernel cannot "
						 "restore memory lazily (no usable userfaultfd)";
		}
		return 0;
	case TERN_MIG_STOP_AND_COPY:
		t->mode = TERN_MIG_STOP_AND_COPY;
		return 0;
	}
	return -EINVAL;
}

static int check_id(target *t, tern_error **err)
{
	cleanup_free char *dir = NULL;
	int ret = tern_state_check_id(t->id, err);

	if (ret < 0)
		return tern_error_wrap(err, "the container id");
	dir = tern_strdup_printf("%s/%s", t->env->rt->root, t->id);
	if (access(dir, F_OK) == 0)
		return tern_error_make_quiet(err, EEXIST,
					     "container `%s` already exists under --root `%s`",
					     t->id, t->env->rt->root);
	return 0;
}

static int check_space(target *t, tern_error **err)
{
	uint64_t have, need;
	int ret = tern_mig_free_bytes(t->bundle, &have, err);

	if (ret < 0)
		return ret;
	need = t->mode == TERN_MIG_POST_COPY ? LAZY_IMAGE_ALLOWANCE
					     : t->memory_bytes + LAZY_IMAGE_ALLOWANCE;
	if (need > have)
		return tern_error_make_quiet(
		    err, ENOSPC, "no space on %s: need %llu MiB, have %llu MiB", t->bundle,
		    (unsigned long long)(need >> 20), (unsigned long long)(have >> 20));
	return 0;
}

int target_handle_offer(target *t, tern_error **err)
{
	cleanup_free char *payload = NULL;
	size_t len;
	yajl_val v = NULL;
	int ret = tern_mchan_recv(t->c, TERN_MSG_OFFER, NULL, &payload, &len,
				  TERN_MIG_STEP_TIMEOUT_MS, err);

	if (ret < 0)
		return ret;
	ret = tern_mig_json_parse(payload, "OFFER", &v, err);
	if (ret < 0)
		return ret;
	const char *id = tern_mig_json_str(v, "id");
	const char *config = tern_mig_json_str(v, "config");
	if (id == NULL || config == NULL) {
		ret = tern_error_make_quiet(err, EPROTO, "OFFER: want an \"id\" and a \"config\"");
		goto out;
	}
	t->src_id = tern_xstrdup(id);
	t->id = tern_xstrdup(t->o->new_id ? t->o->new_id : id);
	t->tcp_established = tern_mig_json_bool(v, "tcp_established");
	tern_mig_json_u64(v, "memory_bytes", &t->memory_bytes);
	tern_mig_json_u64(v, "snapshots", &t->snapshots);
	ret = check_id(t, err);
	if (ret == 0)
		ret = target_snapshots_check(t, err);
	if (ret == 0)
		ret =
		    choose_mode(t, tern_mig_json_str(v, "mode"), tern_mig_json_bool(v, "post_copy"),
				tern_mig_json_bool(v, "pre_copy"), err);
	if (ret == 0)
		ret = check_space(t, err);
	if (ret == 0)
		ret = use_config(t, config, err);
out:
	yajl_tree_free(v);
	return ret;
}

int target_accept_offer(target *t, tern_error **err)
{
	cleanup_free char *msg = NULL;
	tern_jw w;
	int ret;

	if (t->mode == TERN_MIG_POST_COPY) {
		cleanup_free char *tls = tern_strdup_printf("%s/tls", t->work);
		if (mkdir(tls, 0700) < 0)
			return tern_error_make(err, errno, "`%s`", tls);
		ret = tern_mchan_ephemeral_cert(tls, tern_mchan_local_ip(t->c), &t->cert, err);
		if (ret < 0)
			return tern_error_wrap(err, "criu TLS certificate");
	}
	tern_jw_begin(&w);
	tern_jw_str(&w, "id", t->id);
	tern_jw_str(&w, "mode", tern_mig_mode_name(t->mode));
	if (t->cert)
		tern_jw_str(&w, "cert", t->cert);
	/* it keeps snapshots sent along (migrate-snapshots.c) */
	tern_jw_bool(&w, "snapshots", true);
	if (t->not_post_copy)
		tern_jw_str(&w, "not_post_copy", t->not_post_copy);
	msg = tern_jw_end(&w);
	ret = tern_mchan_send(t->c, TERN_MSG_ACCEPT, msg, strlen(msg), err);
	if (ret < 0)
		return ret;
	tern_jw_begin(&w);
	tern_jw_str(&w, "id", t->id);
	tern_jw_str(&w, "mode", tern_mig_mode_name(t->mode));
	if (t->not_post_copy)
		tern_jw_str(&w, "not_post_copy", t->not_post_copy);
	else
		tern_jw_null(&w, "not_post_copy");
	tern_mig_event(&t->p, "accepted", &w, "accepted `%s` as `%s`, mode %s%s%s", t->src_id,
		       t->id, tern_mig_mode_name(t->mode),
		       t->not_post_copy ? ", not post-copy: " : "",
		       t->not_post_copy ? t->not_post_copy : "");
	return target_snapshots_receive(t, err);
}
