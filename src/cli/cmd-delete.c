/* tern delete [--force] ID */
#include "cli.h"
#include "snapshot.h"

#include <errno.h>

static const char usage[] = "Usage: tern delete [options] CONTAINER-ID\n"
			    "\n"
			    "Delete a container: its state, its cgroup, its snapshots, and\n"
			    "with --force its processes.\n"
			    "\n"
			    "Options:\n"
			    "  -f, --force         kill the container first if it is running\n"
			    "  --keep-snapshots    keep its snapshots (`tern snapshot --list ID`\n"
			    "                      still lists them; --delete removes them)\n"
			    "  -h, --help          this help\n";

int tern_cmd_delete(tern_global_opts *g, int argc, char **argv)
{
	enum { OPT_KEEP = 256 };
	static const struct option longopts[] = {{"force", no_argument, NULL, 'f'},
						 {"keep-snapshots", no_argument, NULL, OPT_KEEP},
						 {"help", no_argument, NULL, 'h'},
						 {NULL, 0, NULL, 0}};
	cleanup_error tern_error *err = NULL;
	bool force = false, keep = false;
	int c;

	tern_cli_reset();
	while ((c = tern_cli_next(argc, argv, "fh", longopts, usage)) != -1) {
		if (c == 'f')
			force = true;
		else if (c == OPT_KEEP)
			keep = true;
	}
	tern_cli_require_args(argc, argv, 1, true, "delete", usage);
	if (tern_snapshot_container_delete(&g->rt, argv[optind], force, keep, &err) < 0) {
		/* runc: deleting what does not exist is fine with --force */
		if (force && err->errnum == ENOENT)
			return 0;
		return tern_error_report(err);
	}
	return 0;
}
