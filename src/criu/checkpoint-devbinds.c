/* Devices bound from the host, in a checkpoint: see checkpoint-devbinds.h. */
#include "checkpoint-devbinds.h"

#include "mountinfo.h"
#include "utils.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* The runtime-spec's default devices (see devices.c), by major:minor. */
static const struct {
	unsigned major, minor;
} default_devices[] = {{1, 3}, {1, 5}, {1, 7}, {1, 8}, {1, 9}, {5, 0}};

static bool listed(const char *const *list, const char *s)
{
	for (; list && *list; list++)
		if (strcmp(*list, s) == 0)
			return true;
	return false;
}

int tern_ckpt_devbinds_find(pid_t pid, const char *const *config_binds, char ***out,
			    tern_error **err)
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
		if (!tern_mountinfo_parse(l, &m) || strcmp(m.fstype, "devtmpfs") != 0)
			continue;
		/* a mount point or root with a space would be escaped (\040):
		 * such a name is not one of ours, and criu is left to refuse it */
		if (m.root[0] != '/' || strcmp(m.root, "/") == 0 || listed(config_binds, m.mountpoint))
			continue;
		*out = tern_strv_add(*out, tern_strdup_printf("%s %s", m.mountpoint, m.root));
	}
	return 0;
}

static bool has_dotdot(const char *p)
{
	while (*p) {
		while (*p == '/')
			p++;
		if (p[0] == '.' && p[1] == '.' && (p[2] == '/' || p[2] == '\0'))
			return true;
		while (*p && *p != '/')
			p++;
	}
	return false;
}

static bool allowed(const oci_config *config, const struct stat *st)
{
	unsigned major = major(st->st_rdev), minor = minor(st->st_rdev);

	if (S_ISCHR(st->st_mode))
		for (size_t i = 0; i < sizeof(default_devices) / sizeof(default_devices[0]); i++)
			if (default_devices[i].major == major && default_devices[i].minor == minor)
				return true;
	const oci_linux *lx = config->linux_;
	for (size_t i = 0; lx && i < lx->devices_len; i++) {
		const oci_device *d = &lx->devices[i];
		bool chr = d->type && (strcmp(d->type, "c") == 0 || strcmp(d->type, "u") == 0);
		bool blk = d->type && strcmp(d->type, "b") == 0;
		if (((chr && S_ISCHR(st->st_mode)) || (blk && S_ISBLK(st->st_mode))) &&
		    d->major.set && d->minor.set && (unsigned)d->major.value == major &&
		    (unsigned)d->minor.value == minor)
			return true;
	}
	return false;
}

int tern_ckpt_devbind_source(const char *entry, const oci_config *config, char **mountpoint,
			     char **source, tern_error **err)
{
	cleanup_free char *copy = tern_xstrdup(entry);
	char *root = strchr(copy, ' ');
	struct stat st;

	if (root)
		*root++ = '\0';
	if (root == NULL || copy[0] != '/' || root[0] != '/' || has_dotdot(root))
		return tern_error_make_quiet(err, EINVAL,
					     "the checkpoint's device bind `%s` is not a mount point "
					     "and a device path",
					     entry);
	cleanup_free char *host = tern_strdup_printf("/dev%s", root);
	if (lstat(host, &st) < 0)
		return tern_error_make(err, errno, "device `%s` for `%s`", host, copy);
	if ((!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)) || !allowed(config, &st))
		return tern_error_make_quiet(err, EPERM,
					     "the checkpoint binds `%s` at `%s`: not a device the "
					     "new config.json gives the container",
					     host, copy);
	*mountpoint = tern_xstrdup(copy);
	*source = steal_pointer(&host);
	return 0;
}
