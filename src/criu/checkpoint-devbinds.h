/* Devices bound from the host, in a checkpoint.
 *
 * In a user namespace a container cannot mknod, so tern binds /dev/null,
 * /dev/zero and the rest from the host's /dev (devtmpfs), and the masked
 * files from that /dev/null (devices.c, rootfs.c). criu cannot dump such a
 * bind: the root of its filesystem is not in the container. A dump names
 * each to criu as an external mount (key: its mount point) and lists it in
 * the checkpoint's descriptor as "devbind MOUNTPOINT ROOT", ROOT being the
 * device's path within the host's devtmpfs ("/null").
 *
 * The restore binds the target host's /dev/ROOT there, but only a device
 * node that the new config lets the container have (a default device or
 * one of linux.devices, by type and major:minor): a migration's
 * descriptor comes from its peer, which must not get the container any
 * other device of the target. */
#pragma once

#include "error.h"

#include "oci-config.h"
#include <sys/types.h>

/* The container's binds of the host's devices: "MOUNTPOINT ROOT" strings
 * (NULL-terminated list, NULL for none). Mount points in `config_binds`
 * (config.json's bind mounts, external already, with their own source at
 * restore) are not among them. */
int tern_ckpt_devbinds_find(pid_t pid, const char *const *config_binds, char ***out,
			    tern_error **err);

/* For a restore: the host path to bind at the mount point of `entry` (a
 * "MOUNTPOINT ROOT" of the descriptor), checked against `config`. */
int tern_ckpt_devbind_source(const char *entry, const oci_config *config, char **mountpoint,
			     char **source, tern_error **err);
