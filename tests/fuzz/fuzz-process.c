/* `tern exec --process FILE`: the process object's parser (with its
 * validation), then the checks exec makes before it starts anything:
 * rlimits (type names and values), scheduler, ioPriority and
 * execCPUAffinity (against this machine's CPUs). Nothing is
 * applied. The input is handed over as a file (a memfd), as exec reads
 * it. */
#include "numa.h"
#include "oci-config.h"
#include "proc-attrs.h"
#include "utils.h"

#include "fuzz-util.h"

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	oci_process *p = NULL;
	tern_error *err = NULL;
	char *msg = NULL, path[64];
	int fd = memfd_create("process.json", MFD_CLOEXEC);

	if (fd < 0 || tern_write_all(fd, data, size) < 0)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (oci_process_parse_file(path, &p, &msg) < 0) {
		if (msg == NULL)
			abort();
		free(msg);
		close(fd);
		return 0;
	}
	close(fd);
	tern_rlimits_check(p->rlimits, p->rlimits_len, &err);
	tern_error_free(err);
	err = NULL;
	if (p->scheduler) {
		tern_scheduler_check(p->scheduler, &err);
		tern_error_free(err);
		err = NULL;
	}
	if (p->io_priority) {
		tern_io_priority_check(p->io_priority, &err);
		tern_error_free(err);
		err = NULL;
	}
	tern_cpu_affinity aff;
	tern_cpu_affinity_prepare(p->exec_cpu_affinity, NULL, &aff, &err);
	tern_error_free(err);
	tern_cpu_affinity_clear(&aff);
	oci_process_free(p);
	return 0;
}
