/* tern start ID */
#include "cli.h"

static const char usage[] = "Usage: tern start CONTAINER-ID\n"
			    "\n"
			    "Start a created container: its process runs process.args.\n";

int tern_cmd_start(tern_global_opts *g, int argc, char **argv)
{
	static const struct option longopts[] = {{"help", no_argument, NULL, 'h'},
						 {NULL, 0, NULL, 0}};
	cleanup_error tern_error *err = NULL;

	tern_cli_reset();
	while (tern_cli_next(argc, argv, "h", longopts, usage) != -1)
		;
	tern_cli_require_args(argc, argv, 1, true, "start", usage);
	if (tern_container_start(&g->rt, argv[optind], &err) < 0)
		return tern_error_report(err);
	return 0;
}
