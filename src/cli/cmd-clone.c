/* tern clone [--bundle DIR] ID NAME NEW-ID (snapshot-clone.c) */
#include "checkpoint.h"
#include "cli.h"
#include "criu-kdat.h"
#include "snapshot.h"
#include "utils.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: tern clone [options] CONTAINER-ID NAME NEW-ID\n"
    "       tern clone --spares N CONTAINER-ID NAME\n"
    "\n"
    "Start NEW-ID, a new container, from snapshot NAME of CONTAINER-ID: its\n"
    "processes and memory as they were then, a copy-on-write rootfs of its\n"
    "own (an overlay on the snapshot's files), its own cgroup and a new\n"
    "network namespace. CONTAINER-ID may have been deleted with\n"
    "--keep-snapshots. `tern delete NEW-ID` removes the clone's bundle.\n"
    "It returns once NEW-ID runs; where the kernel has userfaultfd, its\n"
    "memory is still coming in from the snapshot then (what it touches\n"
    "first), filled by a background `tern-filler` process, which deletes\n"
    "NEW-ID should the fill fail.\n"
    "\n"
    "With --spares N, keep N clones of NAME restored ahead of time in the\n"
    "background, frozen (each a full copy of the snapshot's memory); a clone\n"
    "then takes one when one is ready, in milliseconds, and the next is made\n"
    "behind it. A clone from a spare has /dev/null for stdio; one with\n"
    "--bundle, --console-socket or --share-memory is never from a spare.\n"
    "--spares 0 removes them; so does deleting the snapshot. Not for a\n"
    "snapshot with a terminal or hooks, nor with --systemd-cgroup.\n"
    "\n"
    "Options:\n"
    "  -b, --bundle DIR        the clone's bundle, which clone makes (it must\n"
    "                          not exist; default ROOT/@clones/NEW-ID.bundle)\n"
    "  --console-socket PATH   where to send the pty master (terminal)\n"
    "  -f, --format FORMAT     text (default: prints nothing) or json\n"
    "  --spares N              keep N spares of NAME (no NEW-ID; see above)\n"
    "  --share-memory          mark the clone's memory for the kernel's samepage\n"
    "                          merging (KSM): ksmd, where it runs, maps the pages\n"
    "                          clones still have in common once, copy-on-write.\n"
    "                          Opt-in: merged pages let one container time\n"
    "                          another's writes\n"
    "  --wait-fill             return only once all of the memory is in\n"
    "  -h, --help              this help\n";

int tern_cmd_clone(tern_global_opts *g, int argc, char **argv)
{
	enum { OPT_CONSOLE = 256, OPT_SHARE_MEMORY, OPT_WAIT_FILL, OPT_SPARES };
	static const struct option longopts[] = {
	    {"bundle", required_argument, NULL, 'b'},
	    {"console-socket", required_argument, NULL, OPT_CONSOLE},
	    {"format", required_argument, NULL, 'f'},
	    {"share-memory", no_argument, NULL, OPT_SHARE_MEMORY},
	    {"wait-fill", no_argument, NULL, OPT_WAIT_FILL},
	    {"spares", required_argument, NULL, OPT_SPARES},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	cleanup_error tern_error *err = NULL;
	cleanup_free char *criu = NULL;
	tern_clone_opts o = {0};
	tern_snapshot_stats stats;
	const char *format = "text";
	const char *spares = NULL;
	int c, ret;

	tern_cli_reset();
	while ((c = tern_cli_next(argc, argv, "b:f:h", longopts, usage)) != -1) {
		if (c == 'b')
			o.bundle = optarg;
		else if (c == OPT_CONSOLE)
			o.console_socket = optarg;
		else if (c == 'f')
			format = optarg;
		else if (c == OPT_SHARE_MEMORY)
			o.share_memory = true;
		else if (c == OPT_WAIT_FILL)
			o.wait_fill = true;
		else if (c == OPT_SPARES)
			spares = optarg;
	}
	if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0) {
		fprintf(stderr, "tern clone: --format `%s`: want text or json\n", format);
		return 1;
	}
	if (spares) {
		char *end;
		errno = 0;
		unsigned long n = strtoul(spares, &end, 10);
		if (*spares == '\0' || *end != '\0' || errno || n > 1000 || *spares == '-') {
			fprintf(stderr, "tern clone: --spares `%s`: want a number from 0 to 1000\n",
				spares);
			return 1;
		}
		tern_cli_require_args(argc, argv, 2, true, "clone --spares", usage);
		ret = tern_criu_find(g->criu, &criu, &err);
		if (ret == 0)
			tern_criu_kdat_prepare(criu);
		if (ret == 0)
			ret = tern_snapshot_clone_spares(&g->rt, criu, argv[optind],
							 argv[optind + 1], (unsigned)n, &err);
		return ret < 0 ? tern_error_report(err) : 0;
	}
	tern_cli_require_args(argc, argv, 3, true, "clone", usage);
	ret = tern_criu_find(g->criu, &criu, &err);
	if (ret == 0)
		tern_criu_kdat_prepare(criu);
	if (ret == 0)
		ret = tern_snapshot_clone(&g->rt, criu, argv[optind], argv[optind + 1],
					  argv[optind + 2], &o, &stats, &err);
	if (ret < 0)
		return tern_error_report(err);
	if (strcmp(format, "json") == 0)
		tern_snapshot_stats_json(argv[optind + 2], argv[optind + 1], &stats);
	return 0;
}
