/* What every kind of mount in the rootfs shares, the config.json mounts
 * (mounts.c) and the cgroup filesystem (cgroup-mount.c) alike: the options
 * a mount takes, its destination resolved inside the rootfs and checked
 * against procfs, the bind remount with the flags the kernel locks. Kept
 * below both, so that mounts.c can hand a "cgroup" mount to cgroup-mount.c
 * without cgroup-mount.c calling back into mounts.c. */
#include "mount-common.h"
#include "path-resolve.h"
#include "utils.h"

#include <errno.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>

#ifndef MS_NOSYMFOLLOW
#define MS_NOSYMFOLLOW 256
#endif

/* ---- option parsing ---- */

enum opt_kind {
	OPT_FLAG,	 /* set `value` in flags (and drop it from clear_flags) */
	OPT_CLEAR,	 /* clear `value` */
	OPT_PROPAGATION, /* propagation = value */
	OPT_ATTR_SET,	 /* mount_setattr, recursive: set `value` */
	OPT_ATTR_CLR,	 /* mount_setattr, recursive: clear `value` */
	OPT_ATTR_ATIME,	 /* mount_setattr, recursive: atime mode `value` */
	OPT_BIND,
	OPT_RBIND,
	OPT_TMPCOPYUP,
	OPT_IDMAP,
	OPT_IGNORE,
};

struct mount_opt {
	const char *name;
	enum opt_kind kind;
	unsigned long value;
};

/* The options runc accepts. The atime family is one mode: choosing one
 * drops the others (MS_STRICTATIME wins over MS_RELATIME in the kernel, so
 * "relatime" after "strictatime" must clear it). */
#define ATIME_MASK (MS_NOATIME | MS_RELATIME | MS_STRICTATIME)
static const struct mount_opt mount_opts[] = {
    {"defaults", OPT_IGNORE, 0},
    {"ro", OPT_FLAG, MS_RDONLY},
    {"rw", OPT_CLEAR, MS_RDONLY},
    {"nosuid", OPT_FLAG, MS_NOSUID},
    {"suid", OPT_CLEAR, MS_NOSUID},
    {"nodev", OPT_FLAG, MS_NODEV},
    {"dev", OPT_CLEAR, MS_NODEV},
    {"noexec", OPT_FLAG, MS_NOEXEC},
    {"exec", OPT_CLEAR, MS_NOEXEC},
    {"sync", OPT_FLAG, MS_SYNCHRONOUS},
    {"async", OPT_CLEAR, MS_SYNCHRONOUS},
    {"dirsync", OPT_FLAG, MS_DIRSYNC},
    {"remount", OPT_FLAG, MS_REMOUNT},
    {"mand", OPT_FLAG, MS_MANDLOCK},
    {"nomand", OPT_CLEAR, MS_MANDLOCK},
    {"atime", OPT_CLEAR, MS_NOATIME},
    {"noatime", OPT_FLAG, MS_NOATIME},
    {"diratime", OPT_CLEAR, MS_NODIRATIME},
    {"nodiratime", OPT_FLAG, MS_NODIRATIME},
    {"relatime", OPT_FLAG, MS_RELATIME},
    {"norelatime", OPT_CLEAR, MS_RELATIME},
    {"strictatime", OPT_FLAG, MS_STRICTATIME},
    {"nostrictatime", OPT_CLEAR, MS_STRICTATIME},
    {"iversion", OPT_FLAG, MS_I_VERSION},
    {"noiversion", OPT_CLEAR, MS_I_VERSION},
    {"lazytime", OPT_FLAG, MS_LAZYTIME},
    {"nolazytime", OPT_CLEAR, MS_LAZYTIME},
    {"silent", OPT_FLAG, MS_SILENT},
    {"loud", OPT_CLEAR, MS_SILENT},
    {"nosymfollow", OPT_FLAG, MS_NOSYMFOLLOW},
    {"symfollow", OPT_CLEAR, MS_NOSYMFOLLOW},
    {"bind", OPT_BIND, 0},
    {"rbind", OPT_RBIND, 0},
    {"private", OPT_PROPAGATION, MS_PRIVATE},
    {"rprivate", OPT_PROPAGATION, MS_PRIVATE | MS_REC},
    {"shared", OPT_PROPAGATION, MS_SHARED},
    {"rshared", OPT_PROPAGATION, MS_SHARED | MS_REC},
    {"slave", OPT_PROPAGATION, MS_SLAVE},
    {"rslave", OPT_PROPAGATION, MS_SLAVE | MS_REC},
    {"unbindable", OPT_PROPAGATION, MS_UNBINDABLE},
    {"runbindable", OPT_PROPAGATION, MS_UNBINDABLE | MS_REC},
    {"tmpcopyup", OPT_TMPCOPYUP, 0},
    {"idmap", OPT_IDMAP, 0},
    {"ridmap", OPT_IDMAP, 1},
    /* Recursive attributes (mount_setattr with AT_RECURSIVE). */
    {"rro", OPT_ATTR_SET, MOUNT_ATTR_RDONLY},
    {"rrw", OPT_ATTR_CLR, MOUNT_ATTR_RDONLY},
    {"rnosuid", OPT_ATTR_SET, MOUNT_ATTR_NOSUID},
    {"rsuid", OPT_ATTR_CLR, MOUNT_ATTR_NOSUID},
    {"rnodev", OPT_ATTR_SET, MOUNT_ATTR_NODEV},
    {"rdev", OPT_ATTR_CLR, MOUNT_ATTR_NODEV},
    {"rnoexec", OPT_ATTR_SET, MOUNT_ATTR_NOEXEC},
    {"rexec", OPT_ATTR_CLR, MOUNT_ATTR_NOEXEC},
    {"rnodiratime", OPT_ATTR_SET, MOUNT_ATTR_NODIRATIME},
    {"rdiratime", OPT_ATTR_CLR, MOUNT_ATTR_NODIRATIME},
    {"rnosymfollow", OPT_ATTR_SET, MOUNT_ATTR_NOSYMFOLLOW},
    {"rsymfollow", OPT_ATTR_CLR, MOUNT_ATTR_NOSYMFOLLOW},
    {"rrelatime", OPT_ATTR_ATIME, MOUNT_ATTR_RELATIME},
    {"rnorelatime", OPT_ATTR_ATIME, MOUNT_ATTR_STRICTATIME},
    {"rnoatime", OPT_ATTR_ATIME, MOUNT_ATTR_NOATIME},
    {"ratime", OPT_ATTR_ATIME, MOUNT_ATTR_RELATIME},
    {"rstrictatime", OPT_ATTR_ATIME, MOUNT_ATTR_STRICTATIME},
    {"rnostrictatime", OPT_ATTR_ATIME, MOUNT_ATTR_RELATIME},
};

size_t tern_mount_option_names(const char **names, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < sizeof(mount_opts) / sizeof(mount_opts[0]); i++) {
		if (mount_opts[i].name == NULL)
			break;
		if (n < max)
			names[n] = mount_opts[i].name;
		n++;
	}
	return n;
}

void tern_mount_data_append(char **data, const char *opt)
{
	char *n;
	if (*data == NULL) {
		*data = tern_xstrdup(opt);
		return;
	}
	n = tern_strdup_printf("%s,%s", *data, opt);
	free(*data);
	*data = n;
}

int tern_mount_options_parse(char *const *options, tern_mount_options *out, tern_error **err)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; options != NULL && options[i] != NULL; i++) {
		const char *o = options[i];
		const struct mount_opt *found = NULL;

		for (size_t j = 0; j < sizeof(mount_opts) / sizeof(mount_opts[0]); j++) {
			if (strcmp(o, mount_opts[j].name) == 0) {
				found = &mount_opts[j];
				break;
			}
		}
		if (found == NULL) {
			/* Not a mount(2) flag: the filesystem's own option. */
			if (*o != '\0')
				tern_mount_data_append(&out->data, o);
			continue;
		}
		switch (found->kind) {
		case OPT_FLAG:
			if (found->value & ATIME_MASK) {
				out->flags &= ~ATIME_MASK;
				out->clear_flags |= ATIME_MASK & ~found->value;
			}
			out->flags |= found->value;
			out->clear_flags &= ~found->value;
			break;
		case OPT_CLEAR:
			out->flags &= ~found->value;
			out->clear_flags |= found->value;
			break;
		case OPT_PROPAGATION:
			out->propagation = found->value;
			break;
		case OPT_ATTR_SET:
			out->attr_set |= found->value;
			out->attr_clr &= ~found->value;
			break;
		case OPT_ATTR_CLR:
			out->attr_clr |= found->value;
			out->attr_set &= ~found->value;
			break;
		case OPT_ATTR_ATIME:
			out->attr_set = (out->attr_set & ~MOUNT_ATTR__ATIME) | found->value;
			out->attr_clr |= MOUNT_ATTR__ATIME;
			break;
		case OPT_BIND:
			out->bind = true;
			break;
		case OPT_RBIND:
			out->bind = true;
			out->recursive_bind = true;
			break;
		case OPT_TMPCOPYUP:
			out->tmpcopyup = true;
			break;
		case OPT_IDMAP:
			out->idmap = true;
			out->idmap_recursive = out->idmap_recursive || found->value != 0;
			break;
		case OPT_IGNORE:
			break;
		}
	}
	return 0;
}

void tern_mount_options_clear(tern_mount_options *opts)
{
	free(opts->data);
	opts->data = NULL;
}

/* ---- helpers ---- */

/* The per-mount flags of the mount at `fd` that an unprivileged user
 * namespace may not change (the kernel locks them when the mount came from
 * a more privileged namespace), as MS_* flags for a MS_REMOUNT|MS_BIND. A
 * bind remount replaces all per-mount flags, so these must be repeated or
 * the remount fails with EPERM (and, as real root, would silently drop
 * nosuid/nodev/noexec from the source). Options the user asked to clear are
 * left out: then the remount fails as it should. */
unsigned long tern_mount_locked_flags(int fd, const tern_mount_options *opts)
{
	static const tern_mount_options none;

	if (opts == NULL)
		opts = &none;
	struct statvfs sv;
	unsigned long keep = 0;

	if (fstatvfs(fd, &sv) < 0)
		return 0;
	if (sv.f_flag & ST_RDONLY)
		keep |= MS_RDONLY;
	if (sv.f_flag & ST_NOSUID)
		keep |= MS_NOSUID;
	if (sv.f_flag & ST_NODEV)
		keep |= MS_NODEV;
	if (sv.f_flag & ST_NOEXEC)
		keep |= MS_NOEXEC;
	if (sv.f_flag & ST_NODIRATIME)
		keep |= MS_NODIRATIME;
	/* The atime mode is locked as a whole; mount(2) defaults to relatime
	 * when none is given, so strictatime must be said explicitly. */
	if (!((opts->flags | opts->clear_flags) & ATIME_MASK)) {
		if (sv.f_flag & ST_NOATIME)
			keep |= MS_NOATIME;
		else if (sv.f_flag & ST_RELATIME)
			keep |= MS_RELATIME;
		else
			keep |= MS_STRICTATIME;
	}
	return keep & ~opts->clear_flags;
}

/* Remount the bind mount at `dest` (re-resolved: see the top of the file)
 * with the requested per-mount flags. */
int tern_mount_bind_remount(int rootfd, const char *dest, const tern_mount_options *opts,
			    tern_error **err)
{
	cleanup_close int fd = tern_open_in_root(rootfd, dest, O_PATH, 0, err);
	unsigned long flags;
	char path[32];

	if (fd < 0)
		return fd;
	flags = MS_REMOUNT | MS_BIND | (opts->flags & ~(MS_REMOUNT | MS_BIND | MS_REC)) |
		tern_mount_locked_flags(fd, opts);
	if (mount(NULL, tern_fd_path(fd, path, sizeof(path)), NULL, flags, NULL) < 0)
		return tern_error_make(err, errno, "remount with the requested flags");
	return 0;
}

/* "/proc", "proc/", "//proc/." all name /proc: compare cleaned paths. */
char *tern_mount_clean_dest(const char *dest)
{
	char *out = tern_xmalloc0(strlen(dest) + 2);
	const char *p = dest;
	size_t n = 0;

	while (*p) {
		while (*p == '/')
			p++;
		const char *s = p;
		while (*p && *p != '/')
			p++;
		size_t len = (size_t)(p - s);
		if (len == 0 || (len == 1 && s[0] == '.'))
			continue;
		if (len == 2 && s[0] == '.' && s[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
			continue;
		}
		out[n++] = '/';
		memcpy(out + n, s, len);
		n += len;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	return out;
}

int tern_mount_target(int rootfd, const char *dest, bool last_is_file, tern_error **err)
{
	cleanup_free char *clean = tern_mount_clean_dest(dest);
	cleanup_close int fd = tern_mkdir_in_root(rootfd, dest, last_is_file, err);
	struct statfs sf;

	if (fd < 0)
		return tern_error_wrap(err, "create the destination");
	/* A destination under /proc was vetted by name (check_proc_dest).
	 * Any other must not reach procfs, through a symlink in the image
	 * ("/pp/sys/kernel/x" with pp -> /proc) or one swapped in by a
	 * container sharing a volume with this rootfs while we resolve it:
	 * the check is on this fd, the very one the caller mounts on
	 * (through /proc/self/fd/N or move_mount's MOVE_MOUNT_T_EMPTY_PATH),
	 * never on a path looked up again. (The runtime's own /proc writes
	 * do not trust the container's /proc anyway: see procfs.h.) */
	if (strncmp(clean, "/proc", 5) == 0 && (clean[5] == '\0' || clean[5] == '/'))
		return steal_fd(&fd);
	if (fstatfs(fd, &sf) < 0)
		return tern_error_make(err, errno, "statfs the destination `%s`", dest);
	if (sf.f_type == PROC_SUPER_MAGIC)
		return tern_error_make(err, EPERM,
				       "the destination `%s` is inside /proc through a symlink in "
				       "the rootfs, refusing to mount there",
				       dest);
	return steal_fd(&fd);
}
