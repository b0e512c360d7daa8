/* tern state ID */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>

static const char usage[] = "Usage: tern state CONTAINER-ID\n"
			    "\n"
			    "Print the container's state as JSON.\n";

int tern_cmd_state(tern_global_opts *g, int argc, char **argv)
{
	static const struct option longopts[] = {{"help", no_argument, NULL, 'h'},
						 {NULL, 0, NULL, 0}};
	cleanup_error tern_error *err = NULL;
	char *json = NULL;

	tern_cli_reset();
	while (tern_cli_next(argc, argv, "h", longopts, usage) != -1)
		;
	tern_cli_require_args(argc, argv, 1, true, "state", usage);
	if (tern_container_state_json(&g->rt, argv[optind], &json, &err) < 0)
		return tern_error_report(err);
	/* no trailing newline: byte for byte what runc prints */
	fputs(json, stdout);
	free(json);
	return 0;
}
