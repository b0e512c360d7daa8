/* /dev inside the container: default devices, linux.devices, the standard
 * symlinks. Used by rootfs.c before pivot_root. */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stdbool.h>

int tern_devices_setup(int rootfd, const oci_config *config, bool in_user_ns, tern_error **err);
