/* numamap [MIB]: map MIB mebibytes (default 4) of anonymous memory, touch
 * every page so that the kernel allocates it under this process's memory
 * policy, and print the mapping's line of /proc/self/numa_maps: its
 * policy and how many pages each node holds ("7f.. bind:1 anon=1024
 * dirty=1024 N1=1024 kernelpagesize_kB=4"). Used to check
 * linux.memoryPolicy where the pages really went. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
	size_t len = (size_t)(argc > 1 ? atol(argv[1]) : 4) << 20;
	char want[32], line[1024];
	FILE *f;

	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memset(p, 0x5a, len);
	snprintf(want, sizeof(want), "%lx ", (unsigned long)p);
	f = fopen("/proc/self/numa_maps", "r");
	if (f == NULL) {
		perror("/proc/self/numa_maps");
		return 1;
	}
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, want, strlen(want)) == 0) {
			fputs(line, stdout);
			return 0;
		}
	fprintf(stderr, "numamap: no line for %s in /proc/self/numa_maps\n", want);
	return 1;
}
