/* tern rollback [--console-socket PATH] ID NAME (snapshot.h) */
#include "checkpoint.h"
#include "cli.h"
#include "criu-kdat.h"
#include "snapshot.h"
#include "utils.h"

#include <stdio.h>
#include <string.h>

static const char usage[] =
    "Usage: tern rollback [options] CONTAINER-ID NAME\n"
    "\n"
    "Put a running container back to its snapshot NAME: its processes, their\n"
    "memory and open files, and its root filesystem become what they were\n"
    "then. It keeps its id, cgroup and limits, network namespace and stdio;\n"
    "a container with a terminal gets a new one, whose pty master goes to\n"
    "--console-socket. Where a warm spare of NAME is ready (--keep-warm), it\n"
    "is swapped in instead of a restore.\n"
    "\n"
    "Options:\n"
    "  --console-socket PATH   where to send the new pty master (terminal)\n"
    "  -f, --format FORMAT     text (default: prints nothing) or json (what\n"
    "                          it took)\n"
    "  --keep-warm             then make a warm spare of NAME in the background,\n"
    "                          for the next rollback to it (see tern snapshot)\n"
    "  -h, --help              this help\n";

int tern_cmd_rollback(tern_global_opts *g, int argc, char **argv)
{
	enum { OPT_CONSOLE = 256, OPT_WARM };
	static const struct option longopts[] = {
	    {"console-socket", required_argument, NULL, OPT_CONSOLE},
	    {"format", required_argument, NULL, 'f'},
	    {"keep-warm", no_argument, NULL, OPT_WARM},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	cleanup_error tern_error *err = NULL;
	cleanup_free char *criu = NULL;
	tern_rollback_opts o = {0};
	tern_snapshot_stats stats;
	const char *format = "text";
	int c, ret;

	tern_cli_reset();
	while ((c = tern_cli_next(argc, argv, "f:h", longopts, usage)) != -1) {
		if (c == OPT_CONSOLE)
			o.console_socket = optarg;
		else if (c == 'f')
			format = optarg;
		else if (c == OPT_WARM)
			o.keep_warm = true;
	}
	if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0) {
		fprintf(stderr, "tern rollback: --format `%s`: want text or json\n", format);
		return 1;
	}
	tern_cli_require_args(argc, argv, 2, true, "rollback", usage);
	ret = tern_criu_find(g->criu, &criu, &err);
	if (ret == 0)
		tern_criu_kdat_prepare(criu);
	if (ret == 0)
		ret = tern_snapshot_rollback(&g->rt, criu, argv[optind], argv[optind + 1], &o,
					     &stats, &err);
	if (ret < 0)
		return tern_error_report(err);
	if (strcmp(format, "json") == 0)
		tern_snapshot_stats_json(argv[optind], argv[optind + 1], &stats);
	return 0;
}
