/* tern pause ID, tern resume [--force] ID: the freezer. */
#include "checkpoint-net.h"
#include "cli.h"
#include "container-cgroup.h"
#include "container-load.h"
#include "log.h"

#include <string.h>

static const char pause_usage[] = "Usage: tern pause CONTAINER-ID\n"
				  "\n"
				  "Freeze every process of a running container.\n";
static const char resume_usage[] =
    "Usage: tern resume [--force] CONTAINER-ID\n"
    "\n"
    "Thaw the processes of a paused container.\n"
    "\n"
    "  -f, --force   also a migrated container (tern migrate handed it over to a\n"
    "                target, which runs it): only once the copy there is gone\n";

/* resume --force of a migrated container: the network lock of a migration
 * with --tcp-established goes, as a failed migration's roll back takes it
 * away (nothing to remove otherwise). */
static void unlock_migrated_net(const tern_runtime *rt, const char *id)
{
	cleanup_state_dir tern_container_dir *dir = NULL;
	oci_state *st = NULL;
	tern_error *e = NULL;

	if (tern_container_peek(rt, id, &dir, &st, NULL) < 0)
		return;
	if (strcmp(st->status, "migrated") == 0 && st->pid > 0 &&
	    tern_netns_unlock(st->pid, &e) < 0)
		tern_debug("`%s`: no network lock of a migration to remove: %s", id,
			   e ? e->msg : "");
	tern_error_free(e);
	oci_state_free(st);
}

static int pause_or_resume(tern_global_opts *g, int argc, char **argv, bool pause)
{
	static const struct option pause_longopts[] = {{"help", no_argument, NULL, 'h'},
						       {NULL, 0, NULL, 0}};
	static const struct option resume_longopts[] = {{"force", no_argument, NULL, 'f'},
							{"help", no_argument, NULL, 'h'},
							{NULL, 0, NULL, 0}};
	const char *usage = pause ? pause_usage : resume_usage;
	cleanup_error tern_error *err = NULL;
	bool force = false;
	int c;

	tern_cli_reset();
	while ((c = tern_cli_next(argc, argv, pause ? "h" : "fh",
				  pause ? pause_longopts : resume_longopts, usage)) != -1)
		if (c == 'f')
			force = true;
	tern_cli_require_args(argc, argv, 1, true, pause ? "pause" : "resume", usage);
	int ret;
	if (pause) {
		ret = tern_container_pause(&g->rt, argv[optind], &err);
	} else if (force) {
		unlock_migrated_net(&g->rt, argv[optind]);
		ret = tern_container_resume_forced(&g->rt, argv[optind], &err);
	} else {
		ret = tern_container_resume(&g->rt, argv[optind], &err);
	}
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
