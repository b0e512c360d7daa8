/* tern kill [--all] ID [SIGNAL] */
#include "cli.h"
#include "utils.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>

static const char usage[] = "Usage: tern kill [options] CONTAINER-ID [SIGNAL]\n"
			    "\n"
			    "Send SIGNAL (default SIGTERM; a name with or without SIG, or a\n"
			    "number) to the container's init process. Signal 0 sends\n"
			    "nothing: it only checks that the init still runs.\n"
			    "\n"
			    "Options:\n"
			    "  -a, --all    signal every process of the container\n"
			    "  -h, --help   this help\n";

int tern_cmd_kill(tern_global_opts *g, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"all", no_argument, NULL, 'a'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
	cleanup_error tern_error *err = NULL;
	bool all = false;
	int c, sig = SIGTERM;

	tern_cli_reset();
	while ((c = tern_cli_next(argc, argv, "ah", longopts, usage)) != -1)
		if (c == 'a')
			all = true;
	if (argc - optind == 2) {
		sig = tern_parse_signal(argv[optind + 1]);
		if (sig < 0) {
			tern_error_make(&err, EINVAL, "unknown signal `%s`", argv[optind + 1]);
			return tern_error_report(err);
		}
	} else {
		tern_cli_require_args(argc, argv, 1, true, "kill", usage);
	}
	if (tern_container_kill(&g->rt, argv[optind], sig, all, &err) < 0)
		return tern_error_report(err);
	return 0;
}
