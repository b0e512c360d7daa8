/* Capabilities with libcap. The bounding set is dropped while the process
 * still has CAP_SETPCAP (before the uid changes); the other sets are applied
 * after the uid change, with ambient last (it needs permitted and
 * inheritable). Unknown names are an error naming the set and the name. */
#pragma once

#include "error.h"
#include "oci-config.h"

int tern_caps_drop_bounding(const oci_capabilities *caps, tern_error **err);
int tern_caps_apply(const oci_capabilities *caps, tern_error **err);

/* "CAP_SYS_ADMIN" -> 21, -1 when unknown. */
int tern_cap_from_name(const char *name);
