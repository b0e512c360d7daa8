/* listfds: print every file descriptor open in this process, one per line as
 * "FD TARGET", leaving out the directory fd used to read /proc/self/fd.
 * `ls /proc/self/fd` cannot do this job: ls opens its own directory fd, so
 * its output always shows one fd the container did not inherit. */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (d == NULL) {
		perror("listfds: opendir /proc/self/fd");
		return 1;
	}
	int self = dirfd(d);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		int fd = atoi(e->d_name);
		if (fd == self)
			continue;
		char link[64], target[PATH_MAX];
		snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
		ssize_t n = readlink(link, target, sizeof target - 1);
		if (n < 0)
			n = 0;
		target[n] = '\0';
		printf("%d %s\n", fd, target);
	}
	closedir(d);
	return 0;
}
