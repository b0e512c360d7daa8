/* privprobe FILE: write the privileges this process runs with to FILE:
 * "uid=R euid=E" and the CapEff and CapBnd lines of /proc/self/status.
 * Made setuid root by a test, it shows whether an exec of a setuid binary
 * gained anything (it must not under no_new_privs). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char line[256];
	FILE *out, *status;

	if (argc != 2) {
		fprintf(stderr, "usage: privprobe FILE\n");
		return 2;
	}
	out = fopen(argv[1], "w");
	if (out == NULL) {
		perror(argv[1]);
		return 1;
	}
	fprintf(out, "uid=%d euid=%d\n", (int)getuid(), (int)geteuid());
	status = fopen("/proc/self/status", "r");
	if (status == NULL) {
		perror("/proc/self/status");
		return 1;
	}
	while (fgets(line, sizeof(line), status))
		if (strncmp(line, "CapEff:", 7) == 0 || strncmp(line, "CapBnd:", 7) == 0)
			fputs(line, out);
	fclose(status);
	return fclose(out) == 0 ? 0 : 1;
}
