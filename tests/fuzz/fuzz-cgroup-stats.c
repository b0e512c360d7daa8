/* Cgroup values read back from the kernel's files, as `tern events
 * --stats` does: the counter files of a fake cgroup directory (a scratch
 * directory of this process under $TMPDIR) hold the input, split at NUL
 * bytes, one part per file in the order of `files` (a missing part: no such
 * file); then the v1 and the v2 readers parse them. */
#include "cgroup-stats.h"
#include "cgroup-v1.h"
#include "cgroup-v2.h"
#include "utils.h"

#include "fuzz-util.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static const char *const files[] = {
    "memory.stat",
    "memory.current",
    "memory.max",
    "memory.peak",
    "memory.events",
    "memory.swap.current",
    "memory.swap.max",
    "cpu.stat",
    "io.stat",
    "pids.current",
    "pids.max",
    "cpuacct.usage",
    "cpuacct.usage_percpu",
    "cpuacct.usage_all",
    "cpuacct.stat",
    "memory.limit_in_bytes",
    "memory.usage_in_bytes",
    "memory.max_usage_in_bytes",
    "memory.failcnt",
    "memory.memsw.usage_in_bytes",
    "memory.kmem.usage_in_bytes",
    "blkio.throttle.io_service_bytes_recursive",
    "blkio.throttle.io_serviced_recursive",
    "blkio.io_service_bytes_recursive",
    "blkio.io_serviced_recursive",
    "blkio.io_queued_recursive",
    "blkio.sectors_recursive",
    "hugetlb.2MB.limit_in_bytes",
    "hugetlb.2MB.usage_in_bytes",
    "hugetlb.2MB.max_usage_in_bytes",
    "hugetlb.2MB.failcnt",
};
#define NFILES (sizeof(files) / sizeof(files[0]))

static char dir[4096];
static int dirfd_ = -1;

static void cleanup(void)
{
	for (size_t i = 0; i < NFILES; i++)
		unlinkat(dirfd_, files[i], 0);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_scratch_dir(dir, sizeof(dir), "cgroup");
	dirfd_ = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (dirfd_ < 0)
		abort();
	atexit(cleanup);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t start = 0, i = 0;
	tern_cgroup_stats s1 = {0}, s2 = {0};
	tern_error *err = NULL;

	for (; i < NFILES && start <= size; i++) {
		const uint8_t *end = memchr(data + start, '\0', size - start);
		size_t n = end ? (size_t)(end - (data + start)) : size - start;
		/* a new file each time: ext4 flushes a file truncated and
		 * rewritten on close (auto_da_alloc), which is slow */
		unlinkat(dirfd_, files[i], 0);
		int fd = openat(dirfd_, files[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 || tern_write_all(fd, data + start, n) < 0)
			abort();
		close(fd);
		start += n + 1;
	}
	for (; i < NFILES; i++)
		unlinkat(dirfd_, files[i], 0);

	tern_cgroup_v1_stats(dir, "cpu,cpuacct,memory,pids,blkio,hugetlb", &s1, &err);
	tern_error_free(err);
	err = NULL;
	tern_cgroup_v2_stats(dir, &s2, &err);
	tern_error_free(err);
	tern_cgroup_stats_free(&s1);
	tern_cgroup_stats_free(&s2);
	return 0;
}
