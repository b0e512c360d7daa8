/* The rootfs sync of a migration (rootfs-sync.h), both directions of what
 * the peer sends. The first byte picks: odd, the rest is the target's
 * manifest (ROOTFS_MANIFEST), which the source parses and then walks a
 * small tree against; even, the rest is a change stream (ROOTFS_DATA) that
 * the target applies, in two chunks, to a scratch rootfs of this process
 * (under $TMPDIR; no device node may be created), emptied after each input.
 * Whatever the stream says, nothing beside that rootfs may change: that is
 * checked after each input.
 *
 * With TERN_FUZZ_WRITE_SEEDS=DIR it writes two seeds there and exits: the
 * manifest of the small tree, and the stream that makes that tree from an
 * empty one (tests/fuzz/make-seeds.py). */
#include "migrate.h"
#include "rootfs-sync.h"
#include "utils.h"

#include "fuzz-util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static char base[4096], root[4200], src[4200];

static void cleanup(void)
{
	tern_remove_tree(base);
}

static bool no_devices(void *data, const char *path, bool block, uint32_t major, uint32_t minor)
{
	return false;
}

static int discard(void *data, const void *buf, size_t len, tern_error **err)
{
	return 0;
}

static int collect(void *data, const void *buf, size_t len, tern_error **err)
{
	FILE *f = data;
	return fwrite(buf, 1, len, f) == len ? 0 : -EIO;
}

static void write_seeds(const char *out)
{
	int sfd = open(src, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	int rfd = open(root, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	char *manifest = NULL, *empty = NULL, p[4300];
	size_t mlen, elen;
	tern_rootfs_sender *s = NULL;
	FILE *f;

	if (sfd < 0 || rfd < 0 || tern_rootfs_manifest(sfd, &manifest, &mlen, NULL) < 0 ||
	    tern_rootfs_manifest(rfd, &empty, &elen, NULL) < 0)
		abort();
	snprintf(p, sizeof(p), "%s/manifest", out);
	if ((f = fopen(p, "w")) == NULL)
		abort();
	fputc(1, f);
	fwrite(manifest, 1, mlen, f);
	fclose(f);
	snprintf(p, sizeof(p), "%s/stream", out);
	if ((f = fopen(p, "w")) == NULL)
		abort();
	fputc(0, f);
	if (tern_rootfs_sender_new(sfd, empty, elen, &s, NULL) < 0 ||
	    tern_rootfs_sender_round(s, collect, f, NULL, NULL) < 0)
		abort();
	fclose(f);
	tern_rootfs_sender_free(s);
	free(manifest);
	free(empty);
	close(sfd);
	close(rfd);
	exit(0);
}

/* Whatever the stream said, nothing beside the rootfs changed: the scratch
 * directory still holds just root/ and src/, and src/ what it did. */
static void check_outside(void)
{
	char p[4300], *data = NULL;
	size_t len = 0;
	DIR *d = opendir(base);
	struct dirent *e;

	if (d == NULL)
		abort();
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
		    strcmp(e->d_name, "root") != 0 && strcmp(e->d_name, "src") != 0)
			abort();
	closedir(d);
	snprintf(p, sizeof(p), "%s/data", src);
	if (tern_read_file(p, &data, &len, 0, NULL) < 0 || len != 10 ||
	    memcmp(data, "0123456789", 10) != 0)
		abort();
	free(data);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_scratch_dir(base, sizeof(base), "rootfs");
	atexit(cleanup);
	snprintf(root, sizeof(root), "%s/root", base);
	snprintf(src, sizeof(src), "%s/src", base);
	/* the source's tree: a few entries of each kind */
	if (mkdir(src, 0755) < 0 || mkdir(root, 0755) < 0)
		abort();
	char p[4300];
	snprintf(p, sizeof(p), "%s/etc", src);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/etc/hostname", src);
	tern_write_file(p, "box\n", 4, 0644, NULL);
	snprintf(p, sizeof(p), "%s/etc/link", src);
	symlink("hostname", p);
	snprintf(p, sizeof(p), "%s/data", src);
	tern_write_file(p, "0123456789", 10, 0600, NULL);
	char q[4300];
	snprintf(q, sizeof(q), "%s/data-link", src);
	link(p, q); /* a hard link */
	snprintf(p, sizeof(p), "%s/fifo", src);
	mkfifo(p, 0600);
	if (getenv("TERN_FUZZ_WRITE_SEEDS"))
		write_seeds(getenv("TERN_FUZZ_WRITE_SEEDS"));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tern_error *err = NULL;

	if (size == 0)
		return 0;
	if (data[0] & 1) {
		int fd = open(src, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
		tern_rootfs_sender *s = NULL;
		if (fd < 0)
			abort();
		if (tern_rootfs_sender_new(fd, (const char *)data + 1, size - 1, &s, &err) == 0)
			tern_rootfs_sender_round(s, discard, NULL, NULL, &err);
		tern_rootfs_sender_free(s);
		tern_error_free(err);
		close(fd);
		return 0;
	}
	int fd = open(root, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	tern_rootfs_applier *a = NULL;
	if (fd < 0)
		abort();
	if (tern_rootfs_applier_new(fd, &a, &err) == 0) {
		size_t half = (size - 1) / 2;
		tern_rootfs_applier_set_device_filter(a, no_devices, NULL);
		if (tern_rootfs_applier_feed(a, data + 1, half, &err) == 0 &&
		    tern_rootfs_applier_feed(a, data + 1 + half, size - 1 - half, &err) == 0)
			tern_rootfs_applier_finish_round(a, &err);
	}
	tern_rootfs_applier_free(a);
	tern_error_free(err);
	close(fd);
	check_outside();
	tern_remove_tree(root);
	if (mkdir(root, 0755) < 0)
		abort();
	return 0;
}
