/* STUB: to be replaced by the real implementation. */
#include "hooks.h"
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

int tern_hooks_run(const oci_hook_list *hooks, const char *stage, const char *state_json,
		   tern_error **err)
{
	(void)0;
	return -ENOSYS;
}
