/* A line of /proc/PID/mountinfo as tern splits it (checkpoint, restore
 * and the rootfs checks read the container's mounts this way). */
#include "mountinfo.h"

#include "fuzz-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char **lines = fuzz_lines(data, size, 256);
	tern_mountinfo_line m;

	for (size_t i = 0; lines[i]; i++)
		tern_mountinfo_parse(lines[i], &m);
	fuzz_strv_free(lines);
	return 0;
}
