/* The image stream of a migration as the target receives it: IMAGE_FILE
 * (name, size, pre-copy directory, part), IMAGE_DATA chunks, IMAGES_DONE,
 * through tern_mig_images_recv into a scratch directory of this process
 * (under $TMPDIR), at most 1 MiB; then the lazy-page count over the
 * received pagemaps, as the target makes it. The directory is emptied
 * after each input. */
#include "migrate.h"
#include "utils.h"

#include "fuzz-migrate.h"
#include "fuzz-util.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

static char dir[4096];

static void cleanup(void)
{
	tern_remove_tree(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_scratch_dir(dir, sizeof(dir), "images");
	atexit(cleanup);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int peer, dirfd;
	tern_mchan *c = fuzz_mchan(data, size, &peer);
	tern_error *err = NULL;
	uint64_t bytes = 0, pages;
	int rounds = 0;

	dirfd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (dirfd < 0)
		abort();
	/* a first batch (pre-copy rounds), then the final one */
	if (tern_mig_images_recv(c, dirfd, dir, 1 << 20, &bytes, &rounds, false, &err) == 0)
		tern_mig_images_recv(c, dirfd, dir, 1 << 20, &bytes, &rounds, true, &err);
	tern_error_free(err);
	err = NULL;
	tern_mig_lazy_pages(dir, &pages, &err);
	tern_error_free(err);
	close(dirfd);
	tern_mchan_free(c);
	close(peer);
	/* empty it for the next input */
	tern_remove_tree(dir);
	if (mkdir(dir, 0700) < 0)
		abort();
	return 0;
}
