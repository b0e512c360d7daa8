/* hugealloc N [hold]: map N huge pages (of the default size) and touch each, so
 * that they are charged to the hugetlb cgroup; print how far it got. A
 * hugetlb limit shows as a failed mmap (reservations are limited too) or a
 * SIGBUS on first touch (the limit on faulted pages). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile long touched;

static void on_sigbus(int sig)
{
	(void)sig;
	/* async-signal-safe: write, _exit */
	char msg[64];
	int n = snprintf(msg, sizeof(msg), "SIGBUS after %ld pages\n", touched);
	write(1, msg, (size_t)n);
	_exit(2);
}

int main(int argc, char **argv)
{
	long pages = argc > 1 ? atol(argv[1]) : 1;
	const size_t huge = 2UL << 20;

	signal(SIGBUS, on_sigbus);
	char *p = mmap(NULL, (size_t)pages * huge, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (p == MAP_FAILED) {
		printf("mmap of %ld huge pages failed: %s\n", pages, strerror(errno));
		return 1;
	}
	for (long i = 0; i < pages; i++) {
		p[(size_t)i * huge] = 1;
		touched = i + 1;
	}
	printf("touched %ld huge pages\n", pages);
	fflush(stdout);
	if (argc > 2) /* "hold": keep them, for tests that look from outside */
		pause();
	return 0;
}
