/* tern delete [--force] ID */
#include "cli.h"

#include <errno.h>

static const char usage[] = "Usage: tern delete [options] CONTAINER-ID\n"
			    "\n"
			    "Delete a container: its state, its cgroup, and with --force its\n"
			    "processes.\n"
			    "\n"
			    "Options:\n"
			    "  -f, --force   kill the container first if it is running\n"
			    "  -h, --help    this help\n";

int tern_cmd_delete(tern_global_opts *g, int argc, char **argv)
{
	static const struct option longopts[] = {{"force", no_argument, NULL, 'f'},
						 {"help", no_argument, NULL, 'h'},
						 {NULL, 0, NULL, 0}};
	cleanup_error tern_error *err = NULL;
	bool force = false;
	int c;

	tern_cli_reset();
	while ((c = tern_cli_next(argc, argv, "+fh", longopts, usage)) != -1)
		if (c == 'f')
			force = true;
	tern_cli_require_args(argc, argv, 1, true, "delete", usage);
	if (tern_container_delete(&g->rt, argv[optind], force, &err) < 0) {
		/* runc: deleting what does not exist is fine with --force */
		if (force && err->errnum == ENOENT)
			return 0;
		return tern_error_report(err);
	}
	return 0;
}
