/* Cgroup paths given as text: linux.cgroupsPath in the systemd driver's
 * "slice:prefix:name" form (first line; also as a slice name), and
 * `tern exec --cgroup [CTRL[,CTRL]:]PATH` (each further line one
 * --cgroup) against a container whose cgroups are this host's hierarchies
 * at a path that does not exist. Only parses and stats. */
#include "cgroup-systemd.h"
#include "cgroup.h"
#include "oci-state.h"

#include "fuzz-util.h"

static const char *const mountpoints[] = {
    "/sys/fs/cgroup/memory",	  "/sys/fs/cgroup/cpu",	    "/sys/fs/cgroup/cpuacct",
    "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/pids",    "/sys/fs/cgroup",
    "/sys/fs/cgroup/unified",	  "/sys/fs/cgroup/systemd",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char **lines = fuzz_lines(data, size, 64);
	oci_kv items[sizeof(mountpoints) / sizeof(mountpoints[0])];
	oci_map paths = {.items = items, .len = sizeof(items) / sizeof(items[0])};
	oci_map out = {0};
	tern_systemd_unit u = {0};
	tern_error *err = NULL;

	tern_systemd_unit_parse(lines[0], "fuzz-id", &u, &err);
	tern_error_free(err);
	err = NULL;
	tern_systemd_unit_clear(&u);
	free(tern_systemd_slice_path(lines[0]));

	for (size_t i = 0; i < paths.len; i++) {
		items[i].key = (char *)mountpoints[i];
		items[i].value = (char *)"/tern-fuzz-no-such-cgroup";
	}
	if (lines[1] && tern_cgroup_sub_paths(&paths, lines + 1, &out, &err) == 0)
		oci_map_clear(&out);
	tern_error_free(err);
	fuzz_strv_free(lines);
	return 0;
}
