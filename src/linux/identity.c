/* See identity.h. */
#include "identity.h"
#include "caps.h"
#include "proc-attrs.h"

#include <errno.h>

/* Before a filter that may deny the syscalls of the lookup: a missing
 * executable fails now. A permission root lacks, any user lacks (bar a
 * root-squashing NFS), but another user may have one root has not; so
 * EACCES fails here only for uid 0, the others are judged after. */
static int exec_check_as_root(const oci_process *p, tern_error **err)
{
	int ret = tern_exec_check(p, err);

	if (ret < 0 && (ret != -EACCES || p->user.uid == 0))
		return ret;
	tern_error_freep(err);
	return 0;
}

static int check_ids(const oci_user *u, tern_error **err)
{
	if (u->uid > OCI_ID_MAX)
		return tern_error_make(err, EINVAL, "process.user.uid: %u is out of range (0-%u)",
				       u->uid, OCI_ID_MAX);
	if (u->gid > OCI_ID_MAX)
		return tern_error_make(err, EINVAL, "process.user.gid: %u is out of range (0-%u)",
				       u->gid, OCI_ID_MAX);
	for (size_t i = 0; i < u->additional_gids_len; i++)
		if (u->additional_gids[i] > OCI_ID_MAX)
			return tern_error_make(
			    err, EINVAL,
			    "process.user.additionalGids[%zu]: %u is out of range "
			    "(0-%u)",
			    i, u->additional_gids[i], OCI_ID_MAX);
	return 0;
}

int tern_become_process(const oci_process *p, tern_early_filter_fn early_filter, void *data,
			tern_error **err)
{
	int ret;

	/* Checked when the config or the command line was read; again here,
	 * where it matters: (uid_t)-1 to setresuid means "unchanged", and the
	 * process would keep our root. */
	ret = check_ids(&p->user, err);
	if (ret < 0)
		return ret;
	ret = tern_stdio_chown(p->user.uid, err);
	if (ret < 0)
		return ret;
	if (early_filter) {
		ret = exec_check_as_root(p, err);
		if (ret < 0)
			return ret;
	}
	ret = tern_caps_drop_bounding(p->capabilities, err);
	if (ret < 0)
		return tern_error_wrap(err, "process.capabilities.bounding");
	if (early_filter) {
		ret = early_filter(data, err);
		if (ret < 0)
			return ret;
	}
	ret = tern_user_apply(&p->user, err);
	if (ret < 0)
		return tern_error_wrap(err, "process.user");
	ret = tern_caps_apply(p->capabilities, err);
	if (ret < 0)
		return tern_error_wrap(err, "process.capabilities");
	if (!early_filter || tern_exec_check_possible())
		return tern_exec_check(p, err);
	return 0;
}
