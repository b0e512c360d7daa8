/* tern-uffd-preload.so: loaded into criu (LD_PRELOAD, set by tern only
 * around a lazy restore of a container with a user namespace of its own,
 * criu-uffd.h) so that the restored processes get their userfaultfd
 * although they may not open one: criu opens it in each restored task
 * (uffd_open: syscall(SYS_userfaultfd)) after the task is in its new user
 * namespace, where the kernel wants CAP_SYS_PTRACE in the host's user
 * namespace or vm.unprivileged_userfaultfd=1, and tern does not flip that
 * knob for everyone.
 *
 * Linux 6.1 has /dev/userfaultfd: ioctl(USERFAULTFD_IOC_NEW) on an open fd
 * of it makes a userfaultfd for the caller's memory with no capability
 * check (opening the device, root's alone, is the permission). So, in
 * criu's own process (host root), before it forks anything:
 *   - the device is opened, close-on-exec, at a high fd number;
 *   - its close by criu's close_old_fds() in a restored task is refused
 *     (that task still needs it), and a dup onto its number first moves
 *     it higher, so that the container's own fds land where they were;
 *   - syscall(SYS_userfaultfd) in a restored task (any process but the one
 *     that opened the device) becomes the ioctl on it, checked to still be
 *     that device, and then the device fd is really closed: nothing of it
 *     reaches the container (whose memory, with its environment, criu
 *     replaces after that point, and with it this library).
 * criu's own process keeps the real syscall (it may: host root).
 *
 * It includes nothing of tern: it runs inside criu, and in the shell of a
 * criu wrapper script on the way there, where it does nothing. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif

/* where the device fd goes first: above what a small container uses,
 * below criu's service fds for it (which sit under 128); a clash only
 * moves it (move_up) */
#define DEVICE_FD_AT 70

typedef int (*close_fn)(int);
typedef int (*dup2_fn)(int, int);
typedef int (*dup3_fn)(int, int, int);
typedef int (*fcntl_fn)(int, int, ...);
typedef long (*syscall_fn)(long, ...);

static close_fn real_close;
static dup2_fn real_dup2;
static dup3_fn real_dup3;
static fcntl_fn real_fcntl;
static fcntl_fn real_fcntl64;
static syscall_fn real_syscall;

static int dev_fd = -1;
static dev_t dev_rdev;
static ino_t dev_ino;
static dev_t dev_dev;
/* a page wiped in every child (MADV_WIPEONFORK): 1 only in the process
 * that opened the device */
static volatile int *opener;

static bool is_ours(int fd)
{
	struct stat st;

	return dev_fd >= 0 && fd == dev_fd && fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) &&
	       st.st_rdev == dev_rdev && st.st_ino == dev_ino && st.st_dev == dev_dev;
}

static long fcntl_int(int fd, int cmd, long arg)
{
	return real_fcntl64 ? real_fcntl64(fd, cmd, arg) : real_fcntl(fd, cmd, arg);
}

/* The device fd moved off `fd`, which someone wants: to the first free
 * number above it. */
static void move_up(int fd)
{
	if (!is_ours(fd))
		return;
	int to = (int)fcntl_int(dev_fd, F_DUPFD_CLOEXEC, fd + 1);
	if (to < 0)
		return; /* (the caller's dup then fails and criu says so) */
	real_close(dev_fd);
	dev_fd = to;
}

static bool wants_criu(int argc, char **argv)
{
	const char *base;

	if (argc < 2 || argv == NULL || argv[0] == NULL)
		return false;
	base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	if (strcmp(base, "criu") != 0)
		return false;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "swrk") == 0 || strcmp(argv[i], "restore") == 0)
			return true;
	return false;
}

__attribute__((constructor)) static void uffd_preload_init(int argc, char **argv, char **envp)
{
	struct stat st;
	struct rlimit rl;
	int fd;

	(void)envp;
	/* a shell or loader on the way to criu passes it on untouched */
	if (!wants_criu(argc, argv))
		return;
	/* nothing criu starts (scripts, iptables) gets it */
	unsetenv("LD_PRELOAD");
	real_close = (close_fn)dlsym(RTLD_NEXT, "close");
	real_dup2 = (dup2_fn)dlsym(RTLD_NEXT, "dup2");
	real_dup3 = (dup3_fn)dlsym(RTLD_NEXT, "dup3");
	real_fcntl = (fcntl_fn)dlsym(RTLD_NEXT, "fcntl");
	real_fcntl64 = (fcntl_fn)dlsym(RTLD_NEXT, "fcntl64");
	real_syscall = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
	if (!real_close || !real_dup2 || !real_dup3 || !real_fcntl || !real_syscall)
		return;
	void *page = mmap(NULL, (size_t)getpagesize(), PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return;
	if (madvise(page, (size_t)getpagesize(), MADV_WIPEONFORK) < 0) {
		munmap(page, (size_t)getpagesize());
		return;
	}
	fd = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return; /* criu's real syscall then fails, and says why */
	if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode)) {
		real_close(fd);
		return;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > DEVICE_FD_AT + 1 &&
	    fd < DEVICE_FD_AT) {
		int high = (int)fcntl_int(fd, F_DUPFD_CLOEXEC, DEVICE_FD_AT);
		if (high >= 0) {
			real_close(fd);
			fd = high;
		}
	}
	dev_rdev = st.st_rdev;
	dev_ino = st.st_ino;
	dev_dev = st.st_dev;
	dev_fd = fd;
	opener = page;
	*opener = 1;
}

int close(int fd)
{
	if (!real_close)
		real_close = (close_fn)dlsym(RTLD_NEXT, "close");
	/* a restored task still needs it (criu's close_old_fds): it goes
	 * once the task has its userfaultfd */
	if (dev_fd >= 0 && fd == dev_fd && is_ours(fd))
		return 0;
	return real_close(fd);
}

int dup2(int oldfd, int newfd)
{
	if (!real_dup2)
		real_dup2 = (dup2_fn)dlsym(RTLD_NEXT, "dup2");
	if (dev_fd >= 0 && newfd == dev_fd && oldfd != newfd)
		move_up(newfd);
	return real_dup2(oldfd, newfd);
}

int dup3(int oldfd, int newfd, int flags)
{
	if (!real_dup3)
		real_dup3 = (dup3_fn)dlsym(RTLD_NEXT, "dup3");
	if (dev_fd >= 0 && newfd == dev_fd && oldfd != newfd)
		move_up(newfd);
	return real_dup3(oldfd, newfd, flags);
}

static long fcntl_common(fcntl_fn real, const char *name, int fd, int cmd, va_list ap)
{
	/* every fcntl command takes at most one argument, an int or a pointer */
	long arg = va_arg(ap, long);

	if (!real)
		real = (fcntl_fn)dlsym(RTLD_NEXT, name);
	/* criu asks for exactly that number (reopen_fd_as, service fds) */
	if (dev_fd >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && arg == dev_fd &&
	    fd != dev_fd)
		move_up(dev_fd);
	return real(fd, cmd, arg);
}

int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	long r = fcntl_common(real_fcntl, "fcntl", fd, cmd, ap);
	va_end(ap);
	return (int)r;
}

int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	long r = fcntl_common(real_fcntl64, "fcntl64", fd, cmd, ap);
	va_end(ap);
	return (int)r;
}

long syscall(long number, ...)
{
	va_list ap;
	long a[6];

	va_start(ap, number);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real_syscall)
		real_syscall = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
	if (number == SYS_userfaultfd && opener && !*opener && dev_fd >= 0) {
		if (!is_ours(dev_fd)) {
			dev_fd = -1;
		} else {
			int fd = ioctl(dev_fd, USERFAULTFD_IOC_NEW, (int)a[0]);
			int en = errno;
			real_close(dev_fd);
			dev_fd = -1;
			errno = en;
			return fd;
		}
	}
	return real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
