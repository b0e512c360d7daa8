/* A mount's options list (config.json mounts[].options, one per line
 * here): flags, propagation, recursive attributes, idmap, tmpcopyup and
 * the data passed to the filesystem. Nothing is mounted. */
#include "mounts.h"

#include "fuzz-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char **opts = fuzz_lines(data, size, 256);
	tern_mount_options o = {0};
	tern_error *err = NULL;

	tern_mount_options_parse(opts, &o, &err);
	tern_error_free(err);
	tern_mount_options_clear(&o);
	fuzz_strv_free(opts);
	return 0;
}
