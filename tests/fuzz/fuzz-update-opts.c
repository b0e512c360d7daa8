/* `tern update`'s values on the command line: sizes (--memory 512m,
 * --memory-swap 1g, ...: tern_update_parse_bytes) and cpu/memory-node lists
 * (--cpuset-cpus 0-3,5: tern_valid_cpu_list) and schemata lines
 * (--l3-cache-schema, --mem-bw-schema), one value per line. A size
 * that parses is -1 or at least 0. Nothing is updated. */
#include "cli.h"
#include "intel-rdt.h"
#include "utils.h"

#include "fuzz-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char **lines = fuzz_lines(data, size, 64);

	for (size_t i = 0; lines[i]; i++) {
		tern_error *err = NULL;
		int64_t v;
		if (tern_update_parse_bytes("memory", lines[i], &v, &err) == 0 && v < -1)
			abort();
		tern_error_freep(&err);
		tern_valid_cpu_list(lines[i]);
		/* --l3-cache-schema and --mem-bw-schema */
		tern_rdt_check_update(lines[i], lines[i], &err);
		tern_error_freep(&err);
	}
	fuzz_strv_free(lines);
	return 0;
}
