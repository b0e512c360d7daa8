/* Linux security module labels: SELinux (process.selinuxLabel,
 * linux.mountLabel) through libselinux, and AppArmor
 * (process.apparmorProfile) through /proc/self/attr.
 *
 * A label the host cannot honour is an error, never silently dropped: a
 * container that asked for confinement must not run unconfined. The checks
 * run in the parent before anything is created (so a bad config leaves
 * nothing behind); the labels are applied in the child:
 *   - the mount label as a context="..." option of the config's mounts,
 *     before they are mounted (tern_lsm_mount_options);
 *   - the SELinux key-creation label before the session keyring is joined;
 *   - the exec labels right before the final execve, before no_new_privs
 *     and seccomp (AppArmor restricts profile changes under no_new_privs,
 *     and a seccomp filter may forbid the writes to /proc). */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stdbool.h>

/* SELinux: a selinuxfs is mounted (libselinux's is_selinux_enabled). */
bool tern_selinux_enabled(void);

/* AppArmor: the module is loaded and enabled
 * (/sys/module/apparmor/parameters/enabled says Y). */
bool tern_apparmor_enabled(void);

/* One label from `field` (a config.json field or a command-line flag, for
 * the message): NULL or "" is no label and always fine. Otherwise the LSM
 * must be enabled ("process.selinuxLabel `x`: SELinux is not enabled on
 * this host ..."), and an SELinux label must be a valid context. */
int tern_lsm_check_selinux(const char *field, const char *label, tern_error **err);
int tern_lsm_check_apparmor(const char *field, const char *profile, tern_error **err);

/* The labels of a container config: process.selinuxLabel,
 * process.apparmorProfile and linux.mountLabel. */
int tern_lsm_check_config(const oci_config *config, tern_error **err);

/* setkeycreatecon(label) so the session keyring the child joins next is
 * labelled like the process (runc does the same), written through a
 * verified procfs as the exec labels below. No-op without a label. */
int tern_lsm_set_keycreate_label(const char *selinux_label, tern_error **err);

/* The exec labels for the next execve: the SELinux label to
 * /proc/thread-self/attr/exec (setexeccon), AppArmor "exec PROFILE" to
 * /proc/thread-self/attr/apparmor/exec (or the older attr/exec). Every
 * write goes through a verified procfs (procfs.h), never through the
 * container's /proc, which its image and config control. No-op for
 * NULL/"".
 *
 * tern_lsm_apply_exec_labels_at writes through `procfd`, from
 * tern_lsm_exec_procfs_open: open it while the process still has
 * CAP_SYS_ADMIN (a private procfs needs it) and keep it until the write;
 * *procfd is -1 when there is no label. tern_lsm_apply_exec_labels opens
 * one itself: past the credential change that is the current /proc,
 * still refused unless it is the root of a real procfs with nothing
 * mounted on the files written. */
int tern_lsm_exec_procfs_open(const char *apparmor_profile, const char *selinux_label, int *procfd,
			      tern_error **err);
int tern_lsm_apply_exec_labels_at(int procfd, const char *apparmor_profile,
				  const char *selinux_label, tern_error **err);
int tern_lsm_apply_exec_labels(const char *apparmor_profile, const char *selinux_label,
			       tern_error **err);

/* Whether a mount of this kind gets the mount label as a context= option:
 * not binds (they keep the labels of their source), and not proc, sysfs,
 * cgroup, cgroup2 or mqueue (the kernel labels those itself or rejects
 * context=), like runc. */
bool tern_lsm_mount_takes_label(const oci_mount *m);

/* The options of `m` plus context="LABEL" (quoted: an MLS range has
 * commas), as a new NULL-terminated list; NULL when the mount takes no
 * label (no label, or see above). */
char **tern_lsm_mount_options(const oci_mount *m, const char *mount_label);

/* In the child, before the mounts: give each mount of the config that
 * takes one the mount label (the config is the child's own copy). No-op
 * without linux.mountLabel. */
void tern_lsm_label_mounts(oci_config *config);
