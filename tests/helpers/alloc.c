/* alloc MIB: allocate MIB mebibytes and touch every page, so that the
 * memory is really charged to the cgroup; print how far it got. Used to
 * check that a memory limit kills a process that exceeds it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long mib = argc > 1 ? atol(argv[1]) : 64;

	for (long i = 0; i < mib; i++) {
		char *p = malloc(1 << 20);
		if (p == NULL) {
			printf("malloc failed after %ld MiB\n", i);
			return 1;
		}
		memset(p, 0x5a, 1 << 20);
	}
	printf("allocated %ld MiB\n", mib);
	fflush(stdout);
	if (argc > 2) /* "hold": keep it, for tests that look from outside */
		pause();
	return 0;
}
