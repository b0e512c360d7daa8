/* Kernel samepage merging for clones (memory-merge.h). */
#include "memory-merge.h"
#include "utils.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* (bookworm's headers predate Linux 6.4) */
#ifndef PR_SET_MEMORY_MERGE
#define PR_SET_MEMORY_MERGE 67
#define PR_GET_MEMORY_MERGE 68
#endif

#define KSM_RUN "/sys/kernel/mm/ksm/run"

int tern_memory_merge_check(tern_error **err)
{
	if (prctl(PR_GET_MEMORY_MERGE, 0, 0, 0, 0) < 0)
		return tern_error_make_quiet(
		    err, ENOTSUP,
		    "--share-memory: this kernel cannot mark a process's memory for merging "
		    "(PR_SET_MEMORY_MERGE needs Linux 6.4 or later built with CONFIG_KSM: %s)",
		    strerror(errno));
	if (access(KSM_RUN, R_OK) < 0)
		return tern_error_make(err, errno, "--share-memory: `%s`", KSM_RUN);
	return 0;
}

bool tern_memory_merge_ksmd_runs(void)
{
	cleanup_free char *run = NULL;
	size_t len;

	return tern_read_file(KSM_RUN, &run, &len, 16, NULL) == 0 && run[0] == '1';
}

int tern_memory_merge_mark_self(bool on, tern_error **err)
{
	if (prctl(PR_SET_MEMORY_MERGE, on ? 1 : 0, 0, 0, 0) < 0)
		return tern_error_make(err, errno, "--share-memory: prctl(PR_SET_MEMORY_MERGE, %d)",
				       on ? 1 : 0);
	return 0;
}

bool tern_memory_merge_is_marked(pid_t pid)
{
	cleanup_free char *path = tern_strdup_printf("/proc/%d/ksm_stat", (int)pid);
	cleanup_free char *stat = NULL;
	size_t len;

	if (pid <= 0 || tern_read_file(path, &stat, &len, 4096, NULL) < 0)
		return false;
	return strstr(stat, "ksm_merge_any: yes") != NULL;
}
