/* The record of mounts tern makes in the caller's mount namespace
 * (src/rootfs/host-mounts.c): what it writes, and what it refuses to act on. The
 * unmounting itself needs privileges: tests/integration/namespaces.bats. */
#include "tap.h"

#include "error.h"
#include "host-mounts.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *record_text(int dirfd)
{
	char *data = NULL;
	int fd = openat(dirfd, TERN_HOST_MOUNTS_FILE, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	tern_read_fd_all(fd, &data, NULL, 0);
	close(fd);
	return data;
}

static void put_record(int dirfd, const char *text)
{
	int fd =
	    openat(dirfd, TERN_HOST_MOUNTS_FILE, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	tern_write_all(fd, text, strlen(text));
	close(fd);
}

static unsigned long long own_mntns(void)
{
	struct stat st;
	return stat("/proc/self/ns/mnt", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

int main(void)
{
	char tmpl[] = "/tmp/tern-test-host-mounts.XXXXXX";
	char *dir = mkdtemp(tmpl);
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	tern_error *err = NULL;
	char *text;

	is_int(tern_host_mounts_undo(dirfd, &err), 0, "no record: nothing to undo");
	is_int(tern_host_mounts_commit(dirfd, &err), -ENOENT, "commit without begin fails");
	tern_error_free(err);
	err = NULL;

	/* a rootfs nothing is mounted under, with a space (escaped as in mountinfo) */
	is_int(tern_host_mounts_begin(dirfd, "/no/such/root dir", &err), 0, "begin");
	text = record_text(dirfd);
	ok(text && strstr(text, "rootfs /no/such/root\\040dir\npending\n") != NULL,
	   "the pending record names the escaped rootfs");
	free(text);
	is_int(tern_host_mounts_commit(dirfd, &err), 0, "commit");
	text = record_text(dirfd);
	ok(text && strlen(strstr(text, "made\n")) == 5, "nothing mounted there: an empty record");
	free(text);
	is_int(tern_host_mounts_undo(dirfd, &err), 0, "undo of an empty record");
	ok(faccessat(dirfd, TERN_HOST_MOUNTS_FILE, F_OK, 0) < 0, "undo removes the record");

	/* what is mounted already is not the container's */
	is_int(tern_host_mounts_begin(dirfd, "/proc", &err), 0, "begin under /proc");
	text = record_text(dirfd);
	ok(text && strstr(text, " /proc\n") != NULL, "the baseline lists /proc itself");
	free(text);
	is_int(tern_host_mounts_commit(dirfd, &err), 0, "commit under /proc");
	text = record_text(dirfd);
	ok(text && strstr(text, "made\n") && strstr(strstr(text, "made\n"), " /proc\n") == NULL,
	   "/proc is not in the container's record");
	free(text);
	is_int(tern_host_mounts_undo(dirfd, &err), 0, "undo touches nothing of the baseline");

	/* a mount id that is not (or no longer) at that mount point is not ours */
	char buf[256];
	snprintf(buf, sizeof(buf),
		 "tern-host-mounts 1\nmntns %llu\nrootfs /no/such\nmade\n999999 /no/such/proc\n",
		 own_mntns());
	put_record(dirfd, buf);
	is_int(tern_host_mounts_undo(dirfd, &err), 0, "a mount that is gone is skipped");

	/* another mount namespace: refused, record kept */
	put_record(dirfd, "tern-host-mounts 1\nmntns 1\nrootfs /no/such\nmade\n");
	is_int(tern_host_mounts_undo(dirfd, &err), -EXDEV, "another mount namespace is refused");
	ok(err && strstr(err->msg, "mount namespace 1") != NULL, "and named: %s",
	   err ? err->msg : "");
	tern_error_free(err);
	err = NULL;
	ok(faccessat(dirfd, TERN_HOST_MOUNTS_FILE, F_OK, 0) == 0, "the record stays");

	/* a damaged record is an error, never a guess */
	put_record(dirfd, "tern-host-mounts 1\nmntns x\n");
	is_int(tern_host_mounts_undo(dirfd, &err), -EINVAL, "a damaged record is refused");
	ok(err && strstr(err->msg, "host-mounts") != NULL, "naming the file: %s",
	   err ? err->msg : "");
	tern_error_free(err);
	err = NULL;
	snprintf(buf, sizeof(buf),
		 "tern-host-mounts 1\nmntns %llu\nrootfs /no/such\nmade\n12 /a\nbad line\n",
		 own_mntns());
	put_record(dirfd, buf);
	is_int(tern_host_mounts_undo(dirfd, &err), -EINVAL, "a bad line anywhere is refused");
	tern_error_free(err);

	unlinkat(dirfd, TERN_HOST_MOUNTS_FILE, 0);
	close(dirfd);
	rmdir(dir);
	return done_testing();
}
