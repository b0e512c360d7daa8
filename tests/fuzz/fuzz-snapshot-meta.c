/* snapshot.txt, the record of a snapshot in tern's store ("key value"
 * lines: created, parent, the CRIU options it was taken with, mem-depth),
 * which list, rollback and clone read back: the file sits in a scratch
 * directory of this process (under $TMPDIR) and goes through
 * tern_snap_meta_read. */
#include "snapshot-store.h"
#include "snapshot.h"
#include "utils.h"

#include "fuzz-util.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static char dir[4096], file[4200];
static int dirfd_ = -1;

static void cleanup(void)
{
	unlink(file);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_scratch_dir(dir, sizeof(dir), "snapshot");
	snprintf(file, sizeof(file), "%s/snapshot.txt", dir);
	dirfd_ = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (dirfd_ < 0)
		abort();
	atexit(cleanup);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tern_snapshot_info info = {0};
	tern_snapshot_opts o = {0};

	/* a new file each time: ext4 flushes a file truncated and rewritten
	 * on close (auto_da_alloc), which is slow */
	unlink(file);
	int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || tern_write_all(fd, data, size) < 0)
		abort();
	close(fd);
	tern_snap_meta_read(dirfd_, &info, &o);
	tern_snapshot_info_clear(&info);
	return 0;
}
