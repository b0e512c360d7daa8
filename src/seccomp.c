/* STUB: to be replaced by the real implementation. */
#include "seccomp.h"
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
struct tern_seccomp_filter { int unused; };

int tern_seccomp_compile(const oci_seccomp *seccomp, tern_seccomp_filter **out,
			 tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

int tern_seccomp_load(const tern_seccomp_filter *filter, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

void tern_seccomp_filter_free(tern_seccomp_filter *filter)
{
}
