/* tern create [options] ID */
#include "cli.h"
#include "create-opts.h"

#include <stdio.h>

static const char usage[] =
    "Usage: tern create [options] CONTAINER-ID\n"
    "\n"
    "Create a container from the bundle; its process waits for `tern start`.\n"
    "\n"
    "Options:\n"
    "  -b, --bundle DIR          the bundle (default: the current directory)\n"
    "  --console-socket PATH     unix socket that receives the pty master\n"
    "  --pid-file PATH           write the container process's pid there\n"
    "  --no-pivot                do not use pivot_root (MS_MOVE + chroot)\n"
    "  --no-new-keyring          keep the caller's session keyring\n"
    "  --preserve-fds N          pass N extra fds (3 ... 3+N-1) to the container\n"
    "  -h, --help                this help\n";

int tern_cmd_create(tern_global_opts *g, int argc, char **argv)
{
	tern_create_opts opts = {0};
	cleanup_error tern_error *err = NULL;

	tern_cli_parse_create_opts(argc, argv, &opts, false, usage);
	tern_cli_require_args(argc, argv, 1, true, "create", usage);
	if (tern_container_create(&g->rt, argv[optind], &opts, &err) < 0)
		return tern_error_report(err);
	return 0;
}
