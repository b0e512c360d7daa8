/* tern pause ID, tern resume ID: the freezer. */
#include "cli.h"
#include "container-cgroup.h"

static const char pause_usage[] = "Usage: tern pause CONTAINER-ID\n"
				  "\n"
				  "Freeze every process of a running container.\n";
static const char resume_usage[] = "Usage: tern resume CONTAINER-ID\n"
				   "\n"
				   "Thaw the processes of a paused container.\n";

static int pause_or_resume(tern_global_opts *g, int argc, char **argv, bool pause)
{
	static const struct option longopts[] = {{"help", no_argument, NULL, 'h'},
						 {NULL, 0, NULL, 0}};
	const char *usage = pause ? pause_usage : resume_usage;
	cleanup_error tern_error *err = NULL;

	tern_cli_reset();
	while (tern_cli_next(argc, argv, "h", longopts, usage) != -1)
		;
	tern_cli_require_args(argc, argv, 1, true, pause ? "pause" : "resume", usage);
	int ret = pause ? tern_container_pause(&g->rt, argv[optind], &err)
			: tern_container_resume(&g->rt, argv[optind], &err);
	return ret < 0 ? tern_error_report(err) : 0;
}

int tern_cmd_pause(tern_global_opts *g, int argc, char **argv)
{
	return pause_or_resume(g, argc, argv, true);
}

int tern_cmd_resume(tern_global_opts *g, int argc, char **argv)
{
	return pause_or_resume(g, argc, argv, false);
}
