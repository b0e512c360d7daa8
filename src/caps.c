/* STUB: to be replaced by the real implementation. */
#include "caps.h"
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

int tern_caps_drop_bounding(const oci_capabilities *caps, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

int tern_caps_apply(const oci_capabilities *caps, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

int tern_cap_from_name(const char *name)
{
	return -ENOSYS;
}
