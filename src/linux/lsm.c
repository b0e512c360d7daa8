/* LSM labels: SELinux checked through libselinux; the labels of both
 * written to /proc/thread-self/attr of a verified procfs (procfs.h), what
 * setexeccon and libapparmor's aa_change_onexec do, without their open of
 * whatever is at /proc. */
#include "lsm.h"
#include "procfs.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <selinux/selinux.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define APPARMOR_ENABLED  "/sys/module/apparmor/parameters/enabled"
#define APPARMOR_PROFILES "/sys/kernel/security/apparmor/profiles"

bool tern_selinux_enabled(void)
{
	return is_selinux_enabled() > 0;
}

/* Why AppArmor is off, for the message; NULL when it is on. */
static const char *apparmor_off_reason(void)
{
	char buf[4] = {0};
	cleanup_close int fd = open(APPARMOR_ENABLED, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return "the apparmor module is not loaded: no " APPARMOR_ENABLED;
	if (read(fd, buf, sizeof(buf) - 1) <= 0 || buf[0] != 'Y')
		return "the apparmor module is loaded but disabled: " APPARMOR_ENABLED " is not Y";
	return NULL;
}

bool tern_apparmor_enabled(void)
{
	return apparmor_off_reason() == NULL;
}

int tern_lsm_check_selinux(const char *field, const char *label, tern_error **err)
{
	if (label == NULL || label[0] == '\0')
		return 0;
	if (!tern_selinux_enabled())
		return tern_error_make_quiet(
		    err, ENOTSUP,
		    "%s `%s`: SELinux is not enabled on this host (no "
		    "selinuxfs is mounted), so the label cannot be applied; "
		    "remove it or enable SELinux",
		    field, label);
	if (security_check_context(label) < 0)
		return tern_error_make_quiet(err, EINVAL,
					     "%s `%s`: not a valid SELinux context for the loaded "
					     "policy",
					     field, label);
	return 0;
}

/* With securityfs mounted, the loaded profiles are listed one a line as
 * "NAME (MODE)": a profile that is not there would make the exec fail only
 * after `create` returned, so check now. Without securityfs, trust it. */
static int apparmor_profile_loaded(const char *profile)
{
	FILE *f = fopen(APPARMOR_PROFILES, "re");
	char *line = NULL;
	size_t cap = 0, len = strlen(profile);
	int found = 0;

	if (f == NULL)
		return -1;
	while (!found && getline(&line, &cap, f) > 0)
		found = strncmp(line, profile, len) == 0 && strncmp(line + len, " (", 2) == 0;
	free(line);
	fclose(f);
	return found;
}

int tern_lsm_check_apparmor(const char *field, const char *profile, tern_error **err)
{
	const char *why;

	if (profile == NULL || profile[0] == '\0')
		return 0;
	why = apparmor_off_reason();
	if (why != NULL)
		return tern_error_make_quiet(
		    err, ENOTSUP,
		    "%s `%s`: AppArmor is not enabled on this host (%s), so "
		    "the profile cannot be applied; remove it or "
		    "enable AppArmor",
		    field, profile, why);
	/* "unconfined" is not listed but always exists */
	if (strcmp(profile, "unconfined") != 0 && apparmor_profile_loaded(profile) == 0)
		return tern_error_make_quiet(
		    err, ENOENT,
		    "%s `%s`: no such AppArmor profile is loaded (see " APPARMOR_PROFILES ")",
		    field, profile);
	return 0;
}

int tern_lsm_check_config(const oci_config *config, tern_error **err)
{
	const oci_process *p = config->process;
	int ret;

	if (p) {
		ret = tern_lsm_check_selinux("process.selinuxLabel", p->selinux_label, err);
		if (ret < 0)
			return ret;
		ret = tern_lsm_check_apparmor("process.apparmorProfile", p->apparmor_profile, err);
		if (ret < 0)
			return ret;
	}
	if (config->linux_)
		return tern_lsm_check_selinux("linux.mountLabel", config->linux_->mount_label, err);
	return 0;
}

/* The attributes are the calling thread's: thread-self, as libselinux and
 * runc say, not self (the thread group leader's). Always through a procfs
 * the container cannot redirect (procfs.h): its /proc, a symlink in the
 * image or whatever its config mounts there, would take the label and
 * leave the process unconfined. One write, as the kernel wants it. */
static int attr_write(int procfd, const char *attr, const char *data, tern_error **err)
{
	cleanup_close int fd = tern_procfs_openat(procfd, attr, O_WRONLY, false, err);
	ssize_t n;

	if (fd < 0)
		return fd;
	do
		n = write(fd, data, strlen(data));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return tern_error_make(err, errno, "write /proc/%s", attr);
	if ((size_t)n != strlen(data))
		return tern_error_make(err, EIO, "write /proc/%s: short write", attr);
	return 0;
}

int tern_lsm_set_keycreate_label(const char *selinux_label, tern_error **err)
{
	cleanup_close int procfd = -1;
	int ret;

	if (selinux_label == NULL || selinux_label[0] == '\0')
		return 0;
	procfd = tern_procfs_open(err);
	if (procfd < 0)
		return tern_error_wrap(err, "process.selinuxLabel `%s`: the key creation label",
				       selinux_label);
	ret = attr_write(procfd, "thread-self/attr/keycreate", selinux_label, err);
	if (ret < 0)
		return tern_error_wrap(err, "process.selinuxLabel `%s`: the key creation label",
				       selinux_label);
	return 0;
}

static int apparmor_change_onexec(int procfd, const char *profile, tern_error **err)
{
	cleanup_free char *cmd = tern_strdup_printf("exec %s", profile);
	/* The per-LSM directory first (kernels with LSM stacking); the shared
	 * attr/exec is AppArmor's only when it is the one major LSM. */
	const char *attr = "thread-self/attr/apparmor/exec";
	cleanup_close int probe = tern_procfs_openat(procfd, attr, O_WRONLY, false, NULL);
	int ret;

	if (probe == -ENOENT)
		attr = "thread-self/attr/exec";
	ret = attr_write(procfd, attr, cmd, err);
	if (ret < 0)
		return tern_error_wrap(err, "process.apparmorProfile `%s`: change on exec",
				       profile);
	return 0;
}

int tern_lsm_exec_procfs_open(const char *apparmor_profile, const char *selinux_label, int *procfd,
			      tern_error **err)
{
	*procfd = -1;
	if ((apparmor_profile == NULL || apparmor_profile[0] == '\0') &&
	    (selinux_label == NULL || selinux_label[0] == '\0'))
		return 0;
	*procfd = tern_procfs_open(err);
	if (*procfd < 0) {
		*procfd = -1;
		return tern_error_wrap(
		    err, "%s `%s`",
		    apparmor_profile && apparmor_profile[0] ? "process.apparmorProfile"
							    : "process.selinuxLabel",
		    apparmor_profile && apparmor_profile[0] ? apparmor_profile : selinux_label);
	}
	return 0;
}

int tern_lsm_apply_exec_labels_at(int procfd, const char *apparmor_profile,
				  const char *selinux_label, tern_error **err)
{
	int ret;

	if (apparmor_profile && apparmor_profile[0]) {
		ret = apparmor_change_onexec(procfd, apparmor_profile, err);
		if (ret < 0)
			return ret;
	}
	/* What setexeccon does, but not through the container's /proc */
	if (selinux_label && selinux_label[0]) {
		ret = attr_write(procfd, "thread-self/attr/exec", selinux_label, err);
		if (ret < 0)
			return tern_error_wrap(err, "process.selinuxLabel `%s`: the exec label",
					       selinux_label);
	}
	return 0;
}

int tern_lsm_apply_exec_labels(const char *apparmor_profile, const char *selinux_label,
			       tern_error **err)
{
	cleanup_close int procfd = -1;
	int ret;

	ret = tern_lsm_exec_procfs_open(apparmor_profile, selinux_label, &procfd, err);
	if (ret < 0)
		return ret;
	if (procfd < 0)
		return 0;
	return tern_lsm_apply_exec_labels_at(procfd, apparmor_profile, selinux_label, err);
}

bool tern_lsm_mount_takes_label(const oci_mount *m)
{
	static const char *const own_labels[] = {"proc", "sysfs", "cgroup", "cgroup2", "mqueue"};
	const char *type = m->type ? m->type : "";

	if (strcmp(type, "bind") == 0)
		return false;
	for (char *const *o = m->options; o && *o; o++)
		if (strcmp(*o, "bind") == 0 || strcmp(*o, "rbind") == 0)
			return false;
	for (size_t i = 0; i < sizeof(own_labels) / sizeof(own_labels[0]); i++)
		if (strcmp(type, own_labels[i]) == 0)
			return false;
	return true;
}

char **tern_lsm_mount_options(const oci_mount *m, const char *mount_label)
{
	size_t n = oci_strv_len(m->options);
	char **out;

	if (mount_label == NULL || mount_label[0] == '\0' || !tern_lsm_mount_takes_label(m))
		return NULL;
	out = tern_xmalloc0((n + 2) * sizeof(char *));
	for (size_t i = 0; i < n; i++)
		out[i] = tern_xstrdup(m->options[i]);
	out[n] = tern_strdup_printf("context=\"%s\"", mount_label);
	return out;
}

void tern_lsm_label_mounts(oci_config *config)
{
	const char *label = config->linux_ ? config->linux_->mount_label : NULL;

	for (size_t i = 0; label && label[0] && i < config->mounts_len; i++) {
		oci_mount *m = &config->mounts[i];
		char **opts = tern_lsm_mount_options(m, label);
		if (opts == NULL)
			continue;
		for (char **o = m->options; o && *o; o++)
			free(*o);
		free(m->options);
		m->options = opts;
	}
}
