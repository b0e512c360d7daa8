/* STUB: to be replaced by the real implementation. */
#include "proc-attrs.h"
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

int tern_rlimits_apply(const oci_rlimit *rlimits, size_t n, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

int tern_rlimits_check(const oci_rlimit *rlimits, size_t n, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

int tern_user_apply(const oci_user *user, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

int tern_no_new_privs_apply(tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

int tern_oom_score_adj_apply(int value, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

int tern_sysctl_apply(const oci_map *sysctl, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

int tern_exec_process(const oci_process *process, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

char * tern_find_executable(const char *name, char *const *env)
{
	return NULL;
}
