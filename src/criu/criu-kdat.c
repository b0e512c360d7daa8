/* criu's kernel-probe cache on a host whose /run is not a tmpfs: see
 * criu-kdat.h. */
#include "criu-kdat.h"

#include "log.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

/* criu's RUNDIR as Debian builds it; a criu built with another one just
 * never reads what tern leaves here */
#define KDAT_DIR   "/run"
#define KDAT_NAME  "criu.kdat"
#define KDAT_XATTR "trusted.tern.boot_id"
#define BOOT_ID    "/proc/sys/kernel/random/boot_id"
#define KDAT_MAX   (1 << 20)

static int read_boot_id(char *buf, size_t size)
{
	cleanup_close int fd = open(BOOT_ID, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, size - 1);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return n > 0 ? 0 : -EIO;
}

static bool cache_is_current(int run_fd, const char *boot)
{
	cleanup_close int fd = openat(run_fd, KDAT_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	char seen[64];
	ssize_t n = fgetxattr(fd, KDAT_XATTR, seen, sizeof(seen));
	return n == (ssize_t)strlen(boot) && memcmp(seen, boot, n) == 0;
}

/* In the private namespace: `criu check`, which probes and, /run being a
 * tmpfs now, saves the cache there. Its exit status does not matter (a
 * missing feature fails it); only the file does. */
static int run_criu_check(const char *criu)
{
	pid_t self = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (!tern_die_with_parent(self))
			_exit(127);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
			_exit(127);
		tern_close_fds_from(3, NULL, 0);
		execl(criu, criu, "check", "--feature", "mnt_id", (char *)NULL);
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* Copy the cache criu saved in the private /run to the host's, stamped
 * with the boot id, through a name of our own and a rename: criu's own
 * temporary name may be left over from a run that found /run no tmpfs. */
static int install_cache(int run_fd, const char *boot)
{
	cleanup_free char *data = NULL;
	size_t len = 0;
	cleanup_close int src = open(KDAT_DIR "/" KDAT_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (src < 0)
		return -errno;
	int ret = tern_read_fd_all(src, &data, &len, KDAT_MAX);
	if (ret < 0)
		return ret;
	if (len == 0)
		return -ENODATA;

	char tmp[64];
	snprintf(tmp, sizeof(tmp), KDAT_NAME ".tern-%d", (int)getpid());
	cleanup_close int dst =
	    openat(run_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (dst < 0)
		return -errno;
	if (tern_write_all(dst, data, len) < 0 ||
	    fsetxattr(dst, KDAT_XATTR, boot, strlen(boot), 0) < 0 ||
	    renameat(run_fd, tmp, run_fd, KDAT_NAME) < 0) {
		ret = -errno;
		unlinkat(run_fd, tmp, 0);
		return ret ? ret : -EIO;
	}
	return 0;
}

static int make_cache_in_child(const char *criu, int run_fd, const char *boot, pid_t parent)
{
	if (!tern_die_with_parent(parent))
		return 1;
	/* private, so that neither the tmpfs nor anything criu mounts while it
	 * probes shows on the host */
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", KDAT_DIR, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=4m") < 0 ||
	    chdir(KDAT_DIR) < 0)
		return 2;
	if (run_criu_check(criu) < 0)
		return 3;
	return install_cache(run_fd, boot) < 0 ? 4 : 0;
}

void tern_criu_kdat_prepare(const char *criu)
{
	/* unprivileged, criu keeps its cache in $XDG_RUNTIME_DIR itself */
	if (geteuid() != 0)
		return;
	struct statfs fs;
	if (statfs(KDAT_DIR, &fs) < 0 || fs.f_type == TMPFS_MAGIC)
		return;
	char boot[64];
	if (read_boot_id(boot, sizeof(boot)) < 0)
		return;
	cleanup_close int run_fd = open(KDAT_DIR, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (run_fd < 0 || cache_is_current(run_fd, boot))
		return;

	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return;
	if (pid == 0)
		_exit(make_cache_in_child(criu, run_fd, boot, parent));
	int status = 0;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		tern_debug("criu's kernel probes cached in " KDAT_DIR "/" KDAT_NAME
			   " for this boot (" KDAT_DIR " is not a tmpfs)");
	else
		tern_debug("could not cache criu's kernel probes in " KDAT_DIR "/" KDAT_NAME
			   " (step %d): criu probes on every run",
			   WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}
